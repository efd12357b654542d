//! Nearest-neighbour search over normalised vectors: exact (a scan) or an HNSW graph.

use std::path::Path;

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::prelude::{AnnT, Hnsw, HnswIo};
use serde::{Deserialize, Serialize};

/// HNSW parameters, and when to skip the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnParams {
    /// Neighbours kept per node and layer (`M`).
    pub m: usize,
    /// Candidate list length while building.
    pub ef_construction: usize,
    /// Candidate list length while searching (raised to `k` when smaller).
    pub ef_search: usize,
    /// Indexes with fewer chunks than this are searched exactly, without a graph.
    pub exact_below: usize,
}

impl Default for AnnParams {
    /// Chosen with `walkrag bench search` on hotpotqa-100 + wiki-distractors (7,861 chunks, see
    /// README): M 16 / ef_construction 200 / ef_search 64 is the cheapest setting measured with
    /// recall@10 >= 0.98 against exact search (0.988, p50 0.6-0.7 ms). A scan costs 0.10-0.12 µs
    /// per chunk there, so below about 5,000 chunks exact search is as fast, and exact.
    fn default() -> Self {
        Self {
            m: 16,
            ef_construction: 200,
            ef_search: 64,
            exact_below: 5000,
        }
    }
}

/// Cosine distance for unit vectors, `1 - dot`, clamped at 0 so rounding on (near-)identical
/// vectors cannot go negative.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnitCosine;

impl Distance<f32> for UnitCosine {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

/// Dot product with eight independent sums, so the compiler can keep them in SIMD lanes.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, ar) = a.split_at(a.len() - a.len() % 8);
    let (bc, br) = b.split_at(ac.len());
    for (x, y) in ac.chunks_exact(8).zip(bc.chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let tail: f32 = ar.iter().zip(br).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// The `k` rows of `vectors` (row-major, `dim` wide) most similar to `query`, best first, among
/// rows `keep` accepts.
pub fn exact(
    vectors: &[f32],
    dim: usize,
    query: &[f32],
    k: usize,
    keep: &dyn Fn(usize) -> bool,
) -> Vec<(usize, f32)> {
    let mut scored: Vec<(usize, f32)> = vectors
        .chunks_exact(dim)
        .enumerate()
        .filter(|(i, _)| keep(*i))
        .map(|(i, row)| (i, dot(row, query)))
        .collect();
    let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if scored.len() > k {
        scored.select_nth_unstable_by(k, by_score);
        scored.truncate(k);
    }
    scored.sort_by(by_score);
    scored
}

/// An HNSW graph over the rows of a vector matrix; data ids are row numbers.
pub struct Graph {
    hnsw: Hnsw<'static, f32, UnitCosine>,
}

impl Graph {
    /// Builds the graph over every row, inserting in parallel.
    pub fn build(vectors: &[f32], dim: usize, params: &AnnParams) -> Self {
        let rows = vectors.len() / dim;
        // hnsw_rs only saves graphs built with its full 16 layers; unused layers cost nothing.
        let hnsw = Hnsw::new(
            params.m,
            rows.max(1),
            16,
            params.ef_construction,
            UnitCosine,
        );
        let data: Vec<(&[f32], usize)> = vectors
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, r)| (r, i))
            .collect();
        hnsw.parallel_insert_slice(&data);
        let mut graph = Self { hnsw };
        graph.hnsw.set_searching_mode(true);
        graph
    }

    /// Writes `BASENAME.hnsw.graph` and `BASENAME.hnsw.data` into `dir`; returns the basename
    /// actually used.
    pub fn save(&self, dir: &Path, basename: &str) -> Result<String, String> {
        self.hnsw
            .file_dump(dir, basename)
            .map_err(|e| e.to_string())
    }

    /// Reads a graph written by [`Graph::save`].
    pub fn load(dir: &Path, basename: &str) -> Result<Self, String> {
        // hnsw_rs ties the loaded graph's lifetime to its loader even when (as here, without
        // memory mapping) the graph owns all its data. The loader is a few hundred bytes;
        // leaking it once per opened index is the safe way to own the graph.
        let loader: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
        let mut hnsw = loader
            .load_hnsw::<f32, UnitCosine>()
            .map_err(|e| format!("cannot load the HNSW graph: {e}"))?;
        hnsw.set_searching_mode(true);
        Ok(Self { hnsw })
    }

    pub fn len(&self) -> usize {
        self.hnsw.get_nb_point()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate `k` nearest rows among those `keep` accepts, best first, with cosine scores.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        keep: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec<(usize, f32)> {
        let ef = ef.max(k);
        let found = match keep {
            Some(keep) => {
                let filter = |id: &usize| keep(*id);
                self.hnsw.search_filter(query, k, ef, Some(&filter))
            }
            None => self.hnsw.search(query, k, ef),
        };
        found
            .into_iter()
            .map(|n| (n.d_id, 1.0 - n.distance))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let mut v: Vec<f32> = (0..n * dim).map(|_| next()).collect();
        for row in v.chunks_exact_mut(dim) {
            let norm = dot(row, row).sqrt();
            row.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }

    #[test]
    fn dot_matches_the_plain_sum_for_odd_lengths() {
        let a: Vec<f32> = (0..21).map(|i| i as f32 * 0.1).collect();
        let b: Vec<f32> = (0..21).map(|i| 1.0 - i as f32 * 0.05).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-4);
    }

    #[test]
    fn exact_search_ranks_by_cosine_and_filters() {
        let v = unit_vectors(50, 8, 1);
        let q = v[8 * 7..8 * 8].to_vec();
        let hits = exact(&v, 8, &q, 5, &|_| true);
        assert_eq!(hits[0].0, 7);
        assert!((hits[0].1 - 1.0).abs() < 1e-5);
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        let hits = exact(&v, 8, &q, 5, &|i| i != 7);
        assert!(hits.iter().all(|h| h.0 != 7));
        assert_eq!(hits.len(), 5);
    }

    #[test]
    fn the_graph_finds_what_exact_search_finds_and_survives_a_round_trip() {
        let dim = 16;
        let v = unit_vectors(600, dim, 2);
        let graph = Graph::build(&v, dim, &AnnParams::default());
        assert_eq!(graph.len(), 600);
        let dir = tempfile::tempdir().unwrap();
        let name = graph.save(dir.path(), "graph").unwrap();
        let loaded = Graph::load(dir.path(), &name).unwrap();
        let mut agree = 0;
        for q in 0..50 {
            let query = &v[q * dim..(q + 1) * dim];
            let truth: Vec<usize> = exact(&v, dim, query, 10, &|_| true)
                .iter()
                .map(|h| h.0)
                .collect();
            let got: Vec<usize> = loaded
                .search(query, 10, 64, None)
                .iter()
                .map(|h| h.0)
                .collect();
            assert_eq!(got[0], q, "a stored vector is its own nearest neighbour");
            agree += got.iter().filter(|i| truth.contains(i)).count();
        }
        assert!(
            agree as f64 / 500.0 >= 0.95,
            "recall@10 {}",
            agree as f64 / 500.0
        );
        let odd = loaded.search(&v[..dim], 5, 64, Some(&|i| i % 2 == 1));
        assert!(odd.iter().all(|h| h.0 % 2 == 1) && odd.len() == 5);
    }
}
