//! Admission of runs: at most `slots` generate at once (one for a local model, which works
//! one generation at a time anyway), the others wait in a bounded first-come queue, and past
//! it a request is refused at once with an estimate of when to come back.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// The slots and the line of waiting runs. Shared by every request.
pub struct Queue {
    slots: usize,
    limit: usize,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    running: usize,
    waiting: VecDeque<u64>,
    next_ticket: u64,
    /// Mean seconds of the last runs (exponentially weighted), for `Retry-After`.
    mean_run_s: Option<f64>,
}

/// The queue is full: come back in `retry_after` seconds.
#[derive(Debug, Clone, Copy)]
pub struct Full {
    pub retry_after: u64,
    pub waiting: usize,
}

/// A place in the line. Dropping it (the client left) gives the place up.
pub struct Ticket {
    queue: Arc<Queue>,
    id: u64,
    admitted: bool,
}

/// A generation slot, held while the run works; dropping it lets the next run in.
pub struct Slot {
    queue: Arc<Queue>,
}

/// How busy the queue is now.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Load {
    pub running: usize,
    pub waiting: usize,
    pub slots: usize,
    pub queue_limit: usize,
}

impl Queue {
    /// `slots` runs at once (at least one), `limit` more waiting.
    pub fn new(slots: usize, limit: usize) -> Arc<Self> {
        Arc::new(Self {
            slots: slots.max(1),
            limit,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a place in the line, or says the line is full.
    pub fn enter(self: &Arc<Self>) -> Result<Ticket, Full> {
        let mut state = self.lock();
        if state.running + state.waiting.len() >= self.slots + self.limit {
            let waiting = state.waiting.len();
            let mean = state.mean_run_s.unwrap_or(10.0);
            // Every run ahead, shared among the slots, plus this one's own turn.
            let runs_ahead = (state.running + waiting) as f64 / self.slots as f64;
            let retry_after = (mean * runs_ahead).ceil().clamp(1.0, 3600.0) as u64;
            return Err(Full {
                retry_after,
                waiting,
            });
        }
        let id = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push_back(id);
        Ok(Ticket {
            queue: self.clone(),
            id,
            admitted: false,
        })
    }

    /// Records how long a run held its slot.
    pub fn record(&self, took: Duration) {
        let mut state = self.lock();
        let s = took.as_secs_f64();
        state.mean_run_s = Some(match state.mean_run_s {
            Some(mean) => 0.7 * mean + 0.3 * s,
            None => s,
        });
    }

    pub fn load(&self) -> Load {
        let state = self.lock();
        Load {
            running: state.running,
            waiting: state.waiting.len(),
            slots: self.slots,
            queue_limit: self.limit,
        }
    }
}

impl Ticket {
    /// Waits for a slot; `on_position` hears this run's place in the line (1: next) each time
    /// it changes, and never when a slot is free at once.
    pub async fn wait(mut self, mut on_position: impl FnMut(usize)) -> Slot {
        let mut told = None;
        loop {
            let notified = self.queue.changed.notified();
            tokio::pin!(notified);
            // Registered before looking, so a change between the look and the wait wakes it.
            notified.as_mut().enable();
            {
                let mut state = self.queue.lock();
                let place = state
                    .waiting
                    .iter()
                    .position(|&t| t == self.id)
                    .expect("a ticket stays in line until admitted or dropped");
                if place == 0 && state.running < self.queue.slots {
                    state.waiting.pop_front();
                    state.running += 1;
                    self.admitted = true;
                    drop(state);
                    self.queue.changed.notify_waiters();
                    return Slot {
                        queue: self.queue.clone(),
                    };
                }
                if told != Some(place + 1) {
                    told = Some(place + 1);
                    on_position(place + 1);
                }
            }
            notified.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.admitted {
            return;
        }
        let mut state = self.queue.lock();
        state.waiting.retain(|&t| t != self.id);
        drop(state);
        self.queue.changed.notify_waiters();
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.queue.lock();
        state.running -= 1;
        drop(state);
        self.queue.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_wait_their_turn_and_the_full_line_is_refused() {
        let queue = Queue::new(1, 2);
        let first = queue.enter().unwrap().wait(|_| panic!("a free slot")).await;
        let second = queue.enter().unwrap();
        let third = queue.enter().unwrap();
        let refused = queue
            .enter()
            .err()
            .expect("one running and two waiting is full");
        assert_eq!(refused.waiting, 2);
        assert!(refused.retry_after >= 1);

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tx3 = tx.clone();
        let second = tokio::spawn(second.wait(move |p| tx.send((2, p)).unwrap()));
        let third = tokio::spawn(third.wait(move |p| tx3.send((3, p)).unwrap()));
        let mut heard = vec![rx.recv().await.unwrap(), rx.recv().await.unwrap()];
        heard.sort();
        assert_eq!(heard, [(2, 1), (3, 2)]);

        drop(first);
        let second = second.await.unwrap();
        assert_eq!(rx.recv().await.unwrap(), (3, 1), "third moves up");
        assert_eq!(queue.load().running, 1);
        drop(second);
        drop(third.await.unwrap());
        assert_eq!(queue.load().running, 0);
        assert_eq!(queue.load().waiting, 0);
    }

    #[tokio::test]
    async fn a_ticket_dropped_while_waiting_leaves_the_line() {
        let queue = Queue::new(1, 1);
        let first = queue.enter().unwrap().wait(|_| {}).await;
        let waiting = tokio::spawn(queue.enter().unwrap().wait(|_| {}));
        tokio::task::yield_now().await;
        waiting.abort();
        let _ = waiting.await;
        assert_eq!(queue.load().waiting, 0);
        drop(first);
        assert!(queue.enter().is_ok());
    }
}
