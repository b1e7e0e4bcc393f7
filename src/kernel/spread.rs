//! Work split over a thread pool with the calling thread taking a share.
//!
//! A plan runs its nodes on the calling thread. `ThreadPool::scope` called from there hands the whole
//! split to the pool's workers and puts the caller to sleep until they finish: every split node pays
//! a wake-up of the workers and one of the caller, and the caller's core sits idle meanwhile. With
//! [`spread`] the caller runs the last job itself while the workers run the others, so a split over
//! `n` threads keeps the caller busy and wakes `n - 1` workers (none more). Which thread runs which
//! job never changes what a job computes: results are the same bits however they are spread.
//!
//! A worker that finds no work goes to sleep within microseconds, and waking it costs far more: on
//! this 2-core virtual machine, a split of two 7 µs jobs took a median 38 µs (15 µs on one thread),
//! of two 30 µs jobs 70 µs (60 on one thread), with other work between the splits as between a
//! plan's nodes. So while a plan runs, [`keep_awake`] keeps `n - 1` of the pool's workers (the
//! caller being the `n`-th thread) looking for work instead of sleeping, as onnxruntime's pool
//! spins between the nodes of a run: the same splits then took 7.4 and 28 µs. They look for any of
//! the pool's work, so tract's kernels on the same pool start at once too. They stop
//! [`AWAKE`] after the last split or run that asked for them: a plan that ends, or fails, leaves at
//! most that much spinning behind.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rayon::ThreadPool;

/// How long a pool's workers keep looking for work after the last [`keep_awake`]: a few nodes'
/// worth of a small model's run, short enough that the spinning after a run costs little.
pub(crate) const AWAKE: Duration = Duration::from_millis(1);

/// The workers kept awake on one pool: until when, and how many spin now.
#[derive(Debug, Default)]
struct Awake {
    /// Nanoseconds from [`epoch`] after which the spinners stop.
    until: AtomicU64,
    /// Spinners running.
    spinners: AtomicUsize,
}

/// The instant the deadlines of [`Awake`] count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since [`epoch`].
fn now() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The state of `pool`'s spinners (one per pool, by its address: the pools of a process live as long
/// as it, `crate::threads::executor`).
fn awake_of(pool: &ThreadPool) -> Arc<Awake> {
    static STATES: OnceLock<Mutex<HashMap<usize, Arc<Awake>>>> = OnceLock::new();
    let mut states = STATES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    states.entry(pool as *const ThreadPool as usize).or_default().clone()
}

/// Keeps all but one of `pool`'s workers (no more than this machine's cores less one) looking for
/// work for the next [`AWAKE`], starting them if they are not: see the module docs.
pub(crate) fn keep_awake(pool: &ThreadPool) {
    let want = pool.current_num_threads().min(crate::threads::physical_cores()).saturating_sub(1);
    if want == 0 {
        return;
    }
    let state = awake_of(pool);
    let until = now().saturating_add(AWAKE.as_nanos() as u64);
    state.until.fetch_max(until, Ordering::Relaxed);
    let Ok(running) = state.spinners.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < want).then_some(want))
    else {
        return;
    };
    for _ in running..want {
        let state = state.clone();
        pool.spawn(move || {
            while now() < state.until.load(Ordering::Relaxed) {
                // Any of the pool's work (a split's job, a kernel of tract's), else a short pause.
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::hint::spin_loop();
                }
            }
            state.spinners.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Runs every job of `jobs`, the last one on the calling thread and the others on `pool`, and returns
/// when all have finished. The jobs are made (the iterator advanced) on the calling thread, in order.
pub(crate) fn spread<'s, F>(pool: &ThreadPool, jobs: impl IntoIterator<Item = F>)
where
    F: FnOnce() + Send + 's,
{
    keep_awake(pool);
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

    /// A split starts the pool's spinners (all its workers but one, at most the machine's cores
    /// less one), jobs still run once each while they spin, and they stop by themselves once
    /// [`AWAKE`] has passed without a split. (The count is per pool address: a pool another test
    /// dropped may have left spinners counted there for up to [`AWAKE`], never more than `want`.)
    #[test]
    fn spinners_start_with_a_split_and_stop_by_themselves() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let state = awake_of(&pool);
        let want = 3usize.min(crate::threads::physical_cores()) - 1;
        let mut seen = 0;
        for round in 0..20 {
            let mut out = [0u32; 3];
            spread(&pool, out.iter_mut().map(|slot| move || *slot += 1));
            assert_eq!(out, [1; 3], "round {round}");
            let spinning = state.spinners.load(Ordering::Acquire);
            assert!(spinning <= want, "{spinning} spinners for {want}");
            seen = seen.max(spinning);
        }
        assert_eq!(seen, want);
        let start = Instant::now();
        while state.spinners.load(Ordering::Acquire) > 0 {
            assert!(start.elapsed() < Duration::from_secs(10), "spinners still running");
            std::thread::sleep(AWAKE);
        }
        // A one-thread pool has no worker to spare.
        let single = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        keep_awake(&single);
        assert_eq!(awake_of(&single).spinners.load(Ordering::Acquire), 0);
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
