//! A fixed set of helper threads that run one closure together with the caller, many times a
//! token: a run costs a few atomic operations, not a thread spawn. Helpers spin briefly
//! between runs, then sleep until the next one.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// A job: called once on every thread with the thread's index (0 is the caller).
type Job<'a> = &'a (dyn Fn(usize) + Sync);

/// Busy-wait iterations before a waiting thread starts yielding its core (a few µs: the
/// gap between two runs of one token).
const SPINS: usize = 1 << 12;
/// How long a helper keeps checking for work before it sleeps.
const AWAKE: std::time::Duration = std::time::Duration::from_millis(2);

/// Waits until `ready()`: spinning first, then yielding so that a thread it waits for, or
/// anything else on a busy machine, gets the core.
fn wait_until(ready: impl Fn() -> bool, give_up: Option<std::time::Duration>) -> bool {
    let mut spins = 0usize;
    let mut since: Option<std::time::Instant> = None;
    loop {
        if ready() {
            return true;
        }
        spins += 1;
        if spins < SPINS {
            std::hint::spin_loop();
            continue;
        }
        std::thread::yield_now();
        if let Some(limit) = give_up {
            if spins.is_multiple_of(64) {
                let start = *since.get_or_insert_with(std::time::Instant::now);
                if start.elapsed() > limit {
                    return false;
                }
            }
        }
    }
}

struct Shared {
    /// Incremented to start a run.
    epoch: AtomicUsize,
    /// Helpers done with the current run.
    done: AtomicUsize,
    /// The current job, valid while a run is in progress.
    job: UnsafeCell<Option<Job<'static>>>,
    sleeping: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    stop: AtomicBool,
    panicked: AtomicBool,
}

// SAFETY: `job` is written by the caller only while no run is in progress, and read by
// helpers only during a run (ordered by `epoch` and `done`).
unsafe impl Sync for Shared {}

pub struct Pool {
    threads: usize,
    shared: Arc<Shared>,
    helpers: Vec<JoinHandle<()>>,
    /// Runs are not reentrant: one caller at a time.
    busy: Mutex<()>,
}

impl Pool {
    /// A pool of `threads` threads in all, the caller included.
    pub fn new(threads: usize) -> Self {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            epoch: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
            sleeping: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
        });
        let helpers = (1..threads)
            .map(|index| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("walkrag-compute-{index}"))
                    .spawn(move || helper(&shared, index))
                    .expect("spawn a compute thread")
            })
            .collect();
        Self {
            threads,
            shared,
            helpers,
            busy: Mutex::new(()),
        }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Calls `job(i)` for every thread index `i` at once and returns when all have returned.
    pub fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        if self.threads == 1 {
            job(0);
            return;
        }
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let s = &*self.shared;
        // SAFETY: no run is in progress (we hold `busy` and the last run finished), so no
        // helper reads `job`; the reference outlives the run, which ends before we return.
        unsafe {
            *s.job.get() = Some(std::mem::transmute::<Job<'_>, Job<'static>>(job));
        }
        s.done.store(0, Ordering::Relaxed);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        if s.sleeping.load(Ordering::SeqCst) > 0 {
            let _guard = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(0)));
        wait_until(|| s.done.load(Ordering::Acquire) >= self.threads - 1, None);
        // SAFETY: every helper is done with the job.
        unsafe { *s.job.get() = None };
        if let Err(panic) = mine {
            std::panic::resume_unwind(panic);
        }
        if s.panicked.swap(false, Ordering::Relaxed) {
            panic!("a compute thread panicked");
        }
    }
}

fn helper(s: &Shared, index: usize) {
    let mut seen = 0;
    loop {
        let started = || s.epoch.load(Ordering::Acquire) != seen || s.stop.load(Ordering::Relaxed);
        if !wait_until(started, Some(AWAKE)) {
            let mut guard = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.sleeping.fetch_add(1, Ordering::SeqCst);
            while s.epoch.load(Ordering::SeqCst) == seen && !s.stop.load(Ordering::SeqCst) {
                guard = s.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
            }
            s.sleeping.fetch_sub(1, Ordering::SeqCst);
        }
        let epoch = s.epoch.load(Ordering::Acquire);
        if s.stop.load(Ordering::Acquire) {
            return;
        }
        seen = epoch;
        // SAFETY: the caller set the job before bumping the epoch and clears it only after
        // every helper has counted itself done.
        let job = unsafe { *s.job.get() };
        if let Some(job) = job {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(index))).is_err() {
                s.panicked.store(true, Ordering::Relaxed);
            }
        }
        s.done.fetch_add(1, Ordering::Release);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let _guard = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for h in self.helpers.drain(..) {
            let _ = h.join();
        }
    }
}

/// The share `i` of `n` threads gets of `0..len`, in contiguous ranges.
pub fn share(len: usize, i: usize, n: usize) -> std::ops::Range<usize> {
    (len * i / n)..(len * (i + 1) / n)
}

/// A pointer that threads writing disjoint parts of one buffer may share.
#[derive(Clone, Copy)]
pub struct SyncPtr(pub *mut f32);

// SAFETY: users write disjoint ranges, as each use documents.
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}

impl SyncPtr {
    /// The pointer (a method, so that closures capture the whole `Sync` wrapper).
    pub fn get(self) -> *mut f32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_runs_each_job_once() {
        let pool = Pool::new(3);
        for round in 0..1000 {
            let hits: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
            pool.run(&|i| {
                hits[i].fetch_add(round + 1, Ordering::Relaxed);
            });
            for h in &hits {
                assert_eq!(h.load(Ordering::Relaxed), round + 1);
            }
        }
        // After the helpers fell asleep, a run wakes them.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let hits = AtomicUsize::new(0);
        pool.run(&|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn shares_cover_the_range() {
        let parts: Vec<_> = (0..3).map(|i| share(10, i, 3)).collect();
        assert_eq!(parts, vec![0..3, 3..6, 6..10]);
    }
}
