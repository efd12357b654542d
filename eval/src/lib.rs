//! Accuracy benchmarking: datasets, metrics and reports.
//!
//! So far the retrieval metric ([`metrics::recall_at`]) that `walkrag bench search` reports;
//! the eval harness (strategies, EM/F1, reports) comes with the eval issue.

pub mod metrics;
