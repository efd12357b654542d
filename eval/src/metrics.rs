//! Retrieval metrics.

use std::collections::HashSet;
use std::hash::Hash;

/// The first `k` distinct items of `ranked`, in order.
pub fn distinct_prefix<T: Eq + Hash + Clone>(ranked: &[T], k: usize) -> Vec<T> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(k);
    for item in ranked {
        if out.len() == k {
            break;
        }
        if seen.insert(item) {
            out.push(item.clone());
        }
    }
    out
}

/// Recall@k: the share of `relevant` items among the first `k` distinct items of `ranked`
/// (several chunks of one document count once). 1.0 when nothing is relevant.
pub fn recall_at<T: Eq + Hash + Clone>(ranked: &[T], relevant: &[T], k: usize) -> f64 {
    let relevant: HashSet<&T> = relevant.iter().collect();
    if relevant.is_empty() {
        return 1.0;
    }
    let top = distinct_prefix(ranked, k);
    let hits = top.iter().filter(|d| relevant.contains(d)).count();
    hits as f64 / relevant.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_count_once_and_do_not_use_up_k() {
        // Chunks of documents a, a, b, a, c: the first two distinct documents are a and b.
        let ranked = ["a", "a", "b", "a", "c"];
        assert_eq!(distinct_prefix(&ranked, 2), ["a", "b"]);
        assert_eq!(recall_at(&ranked, &["b", "c"], 2), 0.5);
        assert_eq!(recall_at(&ranked, &["b", "c"], 3), 1.0);
        assert_eq!(recall_at(&ranked, &["x"], 10), 0.0);
    }

    #[test]
    fn relevant_duplicates_and_empty_sets() {
        assert_eq!(recall_at(&["a"], &["a", "a"], 1), 1.0);
        assert_eq!(recall_at::<&str>(&[], &[], 5), 1.0);
        assert_eq!(recall_at::<&str>(&[], &["a"], 5), 0.0);
    }
}
