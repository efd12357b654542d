//! A bounded channel from a generation thread to an async [`DeltaStream`].

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::mpsc;
use walkrag_core::{ChatError, Delta, DeltaStream};

type Item = Result<Delta, ChatError>;

/// The sending half, used from a plain (non-async) thread.
pub struct Sender(mpsc::Sender<Item>);

impl Sender {
    /// Blocks while the channel is full; false once the stream has been dropped.
    pub fn send(&self, item: Item) -> bool {
        self.0.blocking_send(item).is_ok()
    }
}

struct Receiver(mpsc::Receiver<Item>);

impl Stream for Receiver {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.0.poll_recv(cx)
    }
}

/// A channel holding at most `capacity` undelivered deltas.
pub fn bounded(capacity: usize) -> (Sender, DeltaStream) {
    let (tx, rx) = mpsc::channel(capacity);
    (Sender(tx), Box::pin(Receiver(rx)))
}
