//! The pool's workers kept awake while a plan runs.
//!
//! A rayon worker that finds no work goes to sleep within microseconds, and waking it costs far
//! more: on this 2-core virtual machine, a split of two 7 µs jobs took a median 38 µs (15 µs on one
//! thread), of two 30 µs jobs 70 µs (60 on one thread), with other work between the splits as
//! between a plan's nodes. So while a plan runs, [`keep_awake`] keeps `n - 1` of the pool's workers
//! (the thread running the plan being the `n`-th) looking for work instead of sleeping, as
//! onnxruntime's pool spins between the nodes of a run: the same splits then took 7.4 and 28 µs.
//! They look for any of the pool's work, so tract's kernels on the same pool start at once too. The
//! plan's turn handler starts them ([`super::plan_ordered`]) and every split of our kernels
//! (`kernel::spread`) extends them; they stop [`AWAKE`] after the last: a plan that ends, or fails,
//! leaves at most that much spinning behind.

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
/// as it, [`super::executor`]).
fn awake_of(pool: &ThreadPool) -> Arc<Awake> {
    static STATES: OnceLock<Mutex<HashMap<usize, Arc<Awake>>>> = OnceLock::new();
    let mut states = STATES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    states.entry(pool as *const ThreadPool as usize).or_default().clone()
}

/// Keeps all but one of `pool`'s workers (no more than this machine's cores less one) looking for
/// work for the next [`AWAKE`], starting them if they are not: see the module docs.
pub(crate) fn keep_awake(pool: &ThreadPool) {
    let want = pool.current_num_threads().min(super::physical_cores()).saturating_sub(1);
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

/// How many of `pool`'s workers spin now (for tests).
#[cfg(test)]
pub(crate) fn spinners(pool: &ThreadPool) -> usize {
    awake_of(pool).spinners.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `keep_awake` starts all the pool's workers but one (at most the machine's cores less one),
    /// work given to the pool still runs, each job once, while they spin, and they stop by
    /// themselves once [`AWAKE`] has passed. (The count is per pool address: a pool another test
    /// dropped may have left spinners counted there for up to [`AWAKE`], never more than `want`.)
    #[test]
    fn spinners_start_and_stop_by_themselves() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let want = 3usize.min(super::super::physical_cores()) - 1;
        let mut seen = 0;
        for round in 0..20 {
            keep_awake(&pool);
            let out: Vec<u32> = pool.install(|| {
                use rayon::prelude::*;
                (0..64u32).into_par_iter().map(|i| i + round).collect()
            });
            assert_eq!(out, (round..round + 64).collect::<Vec<_>>());
            let spinning = spinners(&pool);
            assert!(spinning <= want, "{spinning} spinners for {want}");
            seen = seen.max(spinning);
        }
        assert_eq!(seen, want);
        let start = Instant::now();
        while spinners(&pool) > 0 {
            assert!(start.elapsed() < Duration::from_secs(10), "spinners still running");
            std::thread::sleep(AWAKE);
        }
        // A one-thread pool has no worker to spare.
        let single = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        keep_awake(&single);
        assert_eq!(spinners(&single), 0);
    }
}
