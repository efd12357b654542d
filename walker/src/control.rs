//! Steering a walk from outside while it runs: stop it (it then answers from what it has),
//! or give it a hint of where to look.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A handle shared between a running strategy and its caller. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Control {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    stop: AtomicBool,
    hints: Mutex<Vec<String>>,
    pause: Mutex<Option<PauseFn>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("stop", &self.stop)
            .field("hints", &self.hints)
            .finish_non_exhaustive()
    }
}

/// Called after each cycle with what the cycle found; says how to go on.
pub type PauseFn = Box<dyn FnMut(&CycleReport<'_>) -> Steer + Send>;

/// What a cycle found, for a pause.
pub struct CycleReport<'a> {
    pub cycle: usize,
    pub facts: &'a [crate::trace::Fact],
    pub descriptors: &'a [crate::trace::Descriptor],
}

/// How to go on after a pause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Steer {
    Continue,
    /// Search for this too, and show it to the model, in the next cycle.
    Hint(String),
    /// Stop looking and answer from what was found.
    Stop,
}

impl Control {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the walk to stop looking: the generation under way is cancelled and the answer
    /// is written from the facts gathered so far.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::SeqCst);
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stop.load(Ordering::SeqCst)
    }

    /// Adds a hint (where to look, what matters): searched for and shown to the model in the
    /// next cycle.
    pub fn hint(&self, text: impl Into<String>) {
        self.inner
            .hints
            .lock()
            .expect("hints lock")
            .push(text.into());
    }

    /// Pauses the walk after each cycle (`walkrag ask --interactive`): `pause` sees what the
    /// cycle found and steers.
    pub fn pause_with(&self, pause: PauseFn) {
        *self.inner.pause.lock().expect("pause lock") = Some(pause);
    }

    /// Runs the pause, if one is set, and applies its steer.
    pub(crate) fn pause(&self, report: &CycleReport<'_>) {
        let steer = match self.inner.pause.lock().expect("pause lock").as_mut() {
            Some(pause) => pause(report),
            None => return,
        };
        match steer {
            Steer::Continue => {}
            Steer::Hint(text) => self.hint(text),
            Steer::Stop => self.stop(),
        }
    }

    /// The hints given since the last call.
    pub fn take_hints(&self) -> Vec<String> {
        std::mem::take(&mut *self.inner.hints.lock().expect("hints lock"))
    }
}
