//! Steering a walk from outside while it runs: stop it (it then answers from what it has),
//! or give it a hint of where to look.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A handle shared between a running strategy and its caller. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Control {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    stop: AtomicBool,
    hints: Mutex<Vec<String>>,
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

    /// The hints given since the last call.
    pub fn take_hints(&self) -> Vec<String> {
        std::mem::take(&mut *self.inner.hints.lock().expect("hints lock"))
    }
}
