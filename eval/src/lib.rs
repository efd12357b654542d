//! Accuracy benchmarking of walkrag's strategies: question sets ([`dataset`]), scores
//! ([`metrics`], [`results`]), the resumable eval loop ([`runner`]), and what it writes
//! (`results.jsonl`, [`summary`], [`report`] with its SVG chart), and the `actions`
//! strategy's own harness over API requests ([`actions`]).

pub mod actions;
pub mod dataset;
pub mod metrics;
pub mod report;
pub mod results;
pub mod runner;
pub mod summary;

pub use dataset::{load_questions, DatasetError, Question};
pub use results::{Metrics, ResultLine};
pub use runner::{run, EvalError, EvalProgress, NoProgress, RunRecord, Settings};
pub use summary::{StrategySummary, Summary};
