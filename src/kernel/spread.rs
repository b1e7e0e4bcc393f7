//! Work split over a thread pool with the calling thread taking a share.
//!
//! A plan runs its nodes on the calling thread. `ThreadPool::scope` called from there hands the whole
//! split to the pool's workers and puts the caller to sleep until they finish: every split node pays
//! a wake-up of the workers and one of the caller, and the caller's core sits idle meanwhile. With
//! [`spread`] the caller runs the last job itself while the workers run the others, so a split over
//! `n` threads keeps the caller busy and wakes `n - 1` workers (none more). Which thread runs which
//! job never changes what a job computes: results are the same bits however they are spread.
//!
//! Every split first keeps the pool's other workers awake for a while (`crate::threads::keep_awake`):
//! waking a sleeping one costs more than most splits gain.

use rayon::ThreadPool;

/// Runs every job of `jobs`, the last one on the calling thread and the others on `pool`, and returns
/// when all have finished. The jobs are made (the iterator advanced) on the calling thread, in order.
pub(crate) fn spread<'s, F>(pool: &ThreadPool, jobs: impl IntoIterator<Item = F>)
where
    F: FnOnce() + Send + 's,
{
    crate::threads::keep_awake(pool);
    pool.in_place_scope(|scope| {
        let mut jobs = jobs.into_iter().peekable();
        while let Some(job) = jobs.next() {
            if jobs.peek().is_none() {
                job();
            } else {
                scope.spawn(move |_| job());
            }
        }
    });
}

/// How many of `pool`'s threads to split `work` over: at least `least` of it to a thread, at most one
/// thread per unit of `units`, and 1 without a pool (the caller's thread alone).
pub(crate) fn threads_for(pool: Option<&ThreadPool>, work: usize, least: usize, units: usize) -> usize {
    pool.map_or(1, |p| p.current_num_threads().min(work / least.max(1))).min(units).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A split keeps the pool's other workers awake (`threads::keep_awake`): all but the caller's
    /// share, at most the machine's cores less one, and none on a one-thread pool.
    #[test]
    fn a_split_keeps_the_workers_awake() {
        for threads in [1, 2, 8] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let want = threads.min(crate::threads::physical_cores()) - 1;
            let mut seen = 0;
            for _ in 0..20 {
                let mut out = vec![0u8; threads];
                spread(&pool, out.chunks_mut(1).map(|slot| move || slot[0] = 1));
                assert!(out.iter().all(|&v| v == 1));
                let spinning = crate::threads::spinners(&pool);
                assert!(spinning <= want, "{threads} threads: {spinning} spinners for {want}");
                seen = seen.max(spinning);
            }
            assert_eq!(seen, want, "{threads} threads");
        }
    }

    #[test]
    fn every_job_runs_once_and_the_last_on_the_caller() {
        for threads in [1, 2, 8] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for jobs in [0usize, 1, 2, 3, 9] {
                let mut out = vec![0usize; jobs];
                let ran_on = Mutex::new(vec![None; jobs]);
                let caller = std::thread::current().id();
                spread(
                    &pool,
                    out.chunks_mut(1).enumerate().map(|(i, slot)| {
                        let ran_on = &ran_on;
                        move || {
                            slot[0] += i + 1;
                            ran_on.lock().unwrap()[i] = Some(std::thread::current().id() == caller);
                        }
                    }),
                );
                assert_eq!(out, (1..=jobs).collect::<Vec<_>>(), "{threads} threads, {jobs} jobs");
                let ran_on = ran_on.into_inner().unwrap();
                if let Some(last) = ran_on.last() {
                    assert_eq!(*last, Some(true), "the last job runs on the caller");
                }
                // The others ran on the pool's workers, never on the caller.
                assert!(ran_on.iter().rev().skip(1).all(|r| *r == Some(false)), "{ran_on:?}");
            }
        }
    }
}
