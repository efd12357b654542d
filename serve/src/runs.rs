//! Finished runs, kept in memory for `GET /v1/trace/{run}`: the last few only, oldest
//! forgotten first.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use walkrag_engine::Index;
use walkrag_walker::graph::Graph;
use walkrag_walker::Answer;

/// A run's name: 16 hex digits, unguessable enough that runs are not enumerated by counting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunId(String);

impl RunId {
    pub fn new() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // RandomState is seeded from the OS once per process and differs per instance.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        Self(format!("{:016x}", hasher.finish()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for RunId {
    fn default() -> Self {
        Self::new()
    }
}

/// A finished run: its answer (with the trace) and knowledge graph.
pub struct Finished {
    pub answer: Answer,
    pub graph: Graph,
}

/// The last `capacity` finished runs.
pub struct Runs {
    capacity: usize,
    runs: Mutex<VecDeque<(RunId, Arc<Finished>)>>,
}

impl Runs {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            runs: Mutex::new(VecDeque::new()),
        }
    }

    /// Keeps `answer` (its graph drawn from `index`), forgetting the oldest run past capacity.
    pub fn keep(&self, run: RunId, answer: Answer, index: &Index) {
        if self.capacity == 0 {
            return;
        }
        let graph = Graph::of(&answer, index);
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        while runs.len() >= self.capacity {
            runs.pop_front();
        }
        runs.push_back((run, Arc::new(Finished { answer, graph })));
    }

    pub fn get(&self, run: &str) -> Option<Arc<Finished>> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.iter()
            .find(|(id, _)| id.as_str() == run)
            .map(|(_, f)| f.clone())
    }
}
