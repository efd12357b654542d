//! The probe: a softmax regression from a request's embedding to the operation it asks for,
//! fit on the example requests an index holds (`walkrag index SPEC --examples-from FILE`).
//! Unlike the pick's other terms, which read the request against one operation at a time, it
//! learns which directions of the embedding tell near neighbours apart.
//!
//! The fit is full-batch Adam on the mean cross-entropy with a small L2 penalty, a fixed
//! number of steps from zero weights: deterministic, and a second or two per index.

use std::collections::BTreeMap;

use Layout::{Columns, Rows};

/// Steps of the fit: more than 400 picked no better.
const STEPS: usize = 400;

/// Adam's step size, decay rates of the mean gradient and of its square, and guard against
/// dividing by zero.
const RATE: f32 = 0.05;
const BETAS: (f32, f32) = (0.9, 0.999);
const EPSILON: f32 = 1e-8;

/// The L2 penalty on the weights (not the biases); more or none picked worse.
const L2: f32 = 1e-5;

/// What a probability is floored at before its logarithm is taken, so that an operation with
/// no example requests reads low, not minus infinity: ln 1e-4 ≈ -9.2.
const FLOOR: f32 = 1e-4;

/// A fitted probe: for each operation with example requests, a weight per embedding
/// dimension and a bias.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Probe {
    /// The operations, sorted.
    ids: Vec<String>,
    dim: usize,
    /// `[dim][ids]`, row-major.
    weights: Vec<f32>,
    bias: Vec<f32>,
}

impl Probe {
    /// The probe of `examples` (an embedding and the operation it is an example of, each);
    /// `None` where they name fewer than two operations, or their embeddings differ in length.
    pub(crate) fn fit<'a>(examples: &[(&'a [f32], &'a str)]) -> Option<Self> {
        let dim = examples.first()?.0.len();
        if dim == 0 || examples.iter().any(|(v, _)| v.len() != dim) {
            return None;
        }
        let classes: BTreeMap<&str, usize> = {
            let mut ids: Vec<&str> = examples.iter().map(|(_, id)| *id).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.into_iter().enumerate().map(|(k, id)| (id, k)).collect()
        };
        if classes.len() < 2 {
            return None;
        }
        let (n, k) = (examples.len(), classes.len());
        let inputs: Vec<f32> = examples
            .iter()
            .flat_map(|(v, _)| v.iter().copied())
            .collect();
        let labels: Vec<usize> = examples.iter().map(|(_, id)| classes[id]).collect();

        let mut weights = Adam::new(dim * k);
        let mut bias = Adam::new(k);
        let mut logits = vec![0.0; n * k];
        let mut grad_weights = vec![0.0; dim * k];
        let mut grad_bias = vec![0.0; k];
        for step in 1..=STEPS {
            // The gradient of the mean cross-entropy by the logits: softmax less one-hot, / n.
            for row in logits.chunks_exact_mut(k) {
                row.copy_from_slice(&bias.value);
            }
            matmul(&inputs, Rows, n, dim, &weights.value, k, &mut logits);
            for (row, &label) in logits.chunks_exact_mut(k).zip(&labels) {
                softmax(row);
                row[label] -= 1.0;
                row.iter_mut().for_each(|g| *g /= n as f32);
            }
            for (g, w) in grad_weights.iter_mut().zip(&weights.value) {
                *g = L2 * w;
            }
            matmul(&inputs, Columns, dim, n, &logits, k, &mut grad_weights);
            grad_bias.fill(0.0);
            for row in logits.chunks_exact(k) {
                grad_bias.iter_mut().zip(row).for_each(|(g, r)| *g += r);
            }
            weights.step(&grad_weights, step);
            bias.step(&grad_bias, step);
        }
        Some(Self {
            ids: classes.into_keys().map(str::to_string).collect(),
            dim,
            weights: weights.value,
            bias: bias.value,
        })
    }

    /// The operations the probe knows, sorted.
    pub(crate) fn ids(&self) -> &[String] {
        &self.ids
    }

    /// The probability of each known operation ([`Probe::ids`]) for the embedding `vector`;
    /// all zero where its length is not the probe's.
    pub(crate) fn probabilities(&self, vector: &[f32]) -> Vec<f32> {
        let k = self.ids.len();
        if vector.len() != self.dim {
            return vec![0.0; k];
        }
        let mut row = self.bias.clone();
        for (x, weights) in vector.iter().zip(self.weights.chunks_exact(k)) {
            row.iter_mut().zip(weights).for_each(|(z, w)| *z += x * w);
        }
        softmax(&mut row);
        row
    }

    /// The log-probability of `id` in `probabilities` (of [`Probe::probabilities`]), floored
    /// at [`FLOOR`]: an operation the probe does not know reads ln 1e-4.
    pub(crate) fn log_probability(&self, probabilities: &[f32], id: &str) -> f32 {
        let p = self
            .ids
            .binary_search_by(|known| known.as_str().cmp(id))
            .map_or(0.0, |k| probabilities[k]);
        (p + FLOOR).ln()
    }
}

/// One tensor Adam updates, with its moments.
struct Adam {
    value: Vec<f32>,
    mean: Vec<f32>,
    square: Vec<f32>,
}

impl Adam {
    fn new(len: usize) -> Self {
        Self {
            value: vec![0.0; len],
            mean: vec![0.0; len],
            square: vec![0.0; len],
        }
    }

    /// Step `t` (from 1) along `grad`.
    fn step(&mut self, grad: &[f32], t: usize) {
        let (b1, b2) = BETAS;
        let unbias1 = 1.0 - b1.powi(t as i32);
        let unbias2 = 1.0 - b2.powi(t as i32);
        for (((v, m), s), g) in self
            .value
            .iter_mut()
            .zip(&mut self.mean)
            .zip(&mut self.square)
            .zip(grad)
        {
            *m = b1 * *m + (1.0 - b1) * g;
            *s = b2 * *s + (1.0 - b2) * g * g;
            *v -= RATE * (*m / unbias1) / ((*s / unbias2).sqrt() + EPSILON);
        }
    }
}

/// Softmax of `row` in place, shifted by its largest value so nothing overflows.
fn softmax(row: &mut [f32]) {
    let top = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for z in row.iter_mut() {
        *z = (*z - top).exp();
        sum += *z;
    }
    row.iter_mut().for_each(|z| *z /= sum);
}

/// How the left operand of [`matmul`] is laid out.
#[derive(Clone, Copy)]
enum Layout {
    /// As written: `m` rows of `inner` values.
    Rows,
    /// Transposed: stored as `inner` rows of `m` values, read as its transpose.
    Columns,
}

/// `out[m][n] += left[m][inner] · right[inner][n]`, row-major (`left` as `layout` says), by
/// scaled rows of `right` (which vectorise), the rows of `out` shared among threads.
fn matmul(
    left: &[f32],
    layout: Layout,
    m: usize,
    inner: usize,
    right: &[f32],
    n: usize,
    out: &mut [f32],
) {
    let right = &right[..inner * n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per_thread = m.div_ceil(threads).max(1);
    // Rows `first..` of `out`, held in `out`.
    let part = |first: usize, out: &mut [f32]| match layout {
        Layout::Rows => {
            let rows = left[first * inner..].chunks_exact(inner);
            for (row, out) in rows.zip(out.chunks_exact_mut(n)) {
                for (&x, right) in row.iter().zip(right.chunks_exact(n)) {
                    out.iter_mut().zip(right).for_each(|(o, r)| *o += x * r);
                }
            }
        }
        Layout::Columns => {
            let count = out.len() / n;
            for (column, right) in left.chunks_exact(m).zip(right.chunks_exact(n)).take(inner) {
                let column = &column[first..first + count];
                for (&x, out) in column.iter().zip(out.chunks_exact_mut(n)) {
                    out.iter_mut().zip(right).for_each(|(o, r)| *o += x * r);
                }
            }
        }
    };
    std::thread::scope(|scope| {
        for (t, out) in out[..m * n].chunks_mut(per_thread * n).enumerate() {
            let part = &part;
            scope.spawn(move || part(t * per_thread, out));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` points near each of three corners of the unit square, labelled by corner.
    fn corners(n: usize) -> Vec<(Vec<f32>, String)> {
        let centres = [
            ([1.0, 0.0, 0.2], "east"),
            ([0.0, 1.0, 0.2], "north"),
            ([-1.0, 0.0, 0.2], "west"),
        ];
        let mut out = Vec::new();
        for i in 0..n {
            // A spread of small offsets, the same for every class.
            let dx = (i as f32 * 0.37).sin() * 0.3;
            let dy = (i as f32 * 0.71).cos() * 0.3;
            for (c, id) in centres {
                out.push((vec![c[0] + dx, c[1] + dy, c[2]], id.to_string()));
            }
        }
        out
    }

    fn fit(examples: &[(Vec<f32>, String)]) -> Option<Probe> {
        let borrowed: Vec<(&[f32], &str)> = examples
            .iter()
            .map(|(v, id)| (v.as_slice(), id.as_str()))
            .collect();
        Probe::fit(&borrowed)
    }

    #[test]
    fn the_probe_tells_apart_what_its_examples_tell_apart() {
        let probe = fit(&corners(12)).expect("three operations");
        assert_eq!(probe.ids(), ["east", "north", "west"]);
        for (point, want) in [
            ([0.9, 0.1, 0.2], "east"),
            ([0.1, 0.8, 0.2], "north"),
            ([-0.7, -0.2, 0.2], "west"),
        ] {
            let p = probe.probabilities(&point);
            assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-4, "{p:?}");
            let best = (0..3).max_by(|&i, &j| p[i].total_cmp(&p[j])).unwrap();
            assert_eq!(probe.ids()[best], want, "{point:?}: {p:?}");
            assert!(p[best] > 0.8, "{point:?}: {p:?}");
            let logp = probe.log_probability(&p, want);
            assert!((logp - (p[best] + FLOOR).ln()).abs() < 1e-6);
        }
    }

    #[test]
    fn an_operation_without_examples_reads_the_floor() {
        let probe = fit(&corners(4)).unwrap();
        let p = probe.probabilities(&[1.0, 0.0, 0.2]);
        assert_eq!(probe.log_probability(&p, "south"), FLOOR.ln());
        // A vector of another length reads nothing.
        assert_eq!(probe.probabilities(&[1.0, 0.0]), vec![0.0; 3]);
    }

    #[test]
    fn the_fit_is_the_same_every_time() {
        let examples = corners(6);
        assert_eq!(fit(&examples), fit(&examples));
    }

    #[test]
    fn no_probe_for_fewer_than_two_operations_or_mixed_lengths() {
        let one: Vec<(Vec<f32>, String)> = corners(3)
            .into_iter()
            .filter(|(_, id)| id == "east")
            .collect();
        assert_eq!(fit(&one), None);
        assert_eq!(fit(&[]), None);
        let mut mixed = corners(2);
        mixed[1].0.push(0.0);
        assert_eq!(fit(&mixed), None);
    }

    #[test]
    fn both_layouts_multiply_as_written() {
        // [[1, 2], [3, 4], [5, 6]] · [[1, 0, 2], [0, 1, 3]], added to ones.
        let left = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let right = [1.0, 0.0, 2.0, 0.0, 1.0, 3.0];
        let want = [2.0, 3.0, 9.0, 4.0, 5.0, 19.0, 6.0, 7.0, 29.0];
        let mut out = [1.0; 9];
        matmul(&left, Layout::Rows, 3, 2, &right, 3, &mut out);
        assert_eq!(out, want);
        // The same left operand stored transposed.
        let columns = [1.0, 3.0, 5.0, 2.0, 4.0, 6.0];
        let mut out = [1.0; 9];
        matmul(&columns, Layout::Columns, 3, 2, &right, 3, &mut out);
        assert_eq!(out, want);
    }
}
