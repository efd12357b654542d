//! Accuracy benchmarking: datasets, metrics, reports (issue: eval). Empty until then.
