//! Dense layers `y = x·W + b` with `W` packed once, at load.
//!
//! The packed encoder multiplies every token row by the same few weight matrices, thousands of
//! times. A general GEMM re-packs its operands on every call; here `W` is laid out at load in
//! panels of 16 output columns (`[n/16][k][16]`), and an AVX2+FMA kernel computes 6 rows x 16
//! columns at a time in twelve registers, adding the bias as it stores. Rows are processed in
//! blocks that stay in cache while every panel passes over them. CPUs without AVX2+FMA use
//! the `gemm` crate on the row-major weights instead.

/// Output columns per panel: two AVX2 registers of eight f32.
const PANEL: usize = 16;
/// Rows per register tile: 6 rows x 2 registers = 12 accumulators, plus 2 for the weights and
/// 1 for the broadcast input, of the 16 AVX2 registers.
const TILE_ROWS: usize = 6;
/// Rows per cache block: 96 rows of up to 1536 inputs (576 KiB) stay in L2 while all panels
/// pass over them.
const BLOCK_ROWS: usize = 96;
/// Inputs per pass of the kernel: 6 input rows and a 16-column panel slice of 256 inputs
/// (6 + 16 KiB) fit in L1; longer sums are accumulated in the output across passes.
const BLOCK_INPUTS: usize = 256;

enum Layout {
    /// `[n/16][k][16]` panels, for the AVX2 kernel.
    Panels(Vec<f32>),
    /// `[k][n]` row-major, for the `gemm` crate.
    RowMajor(Vec<f32>),
}

/// What is applied to a dense layer's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    None,
    /// Exact (erf) GELU, applied to each block of rows while it is still in cache.
    Gelu,
}

/// A dense layer with its weights laid out for the fastest kernel this CPU runs.
pub struct Dense {
    layout: Layout,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Dense {
    /// Takes `weight` as `[inputs, outputs]` row-major.
    pub fn new(weight: Vec<f32>, bias: Vec<f32>, inputs: usize, outputs: usize) -> Self {
        assert_eq!(weight.len(), inputs * outputs, "weight shape");
        assert_eq!(bias.len(), outputs, "bias shape");
        let layout = if has_avx2_fma() && outputs.is_multiple_of(PANEL) {
            let mut panels = Vec::with_capacity(weight.len());
            for p in 0..outputs / PANEL {
                for row in weight.chunks_exact(outputs) {
                    panels.extend_from_slice(&row[p * PANEL..(p + 1) * PANEL]);
                }
            }
            Layout::Panels(panels)
        } else {
            Layout::RowMajor(weight)
        };
        Self {
            layout,
            bias,
            inputs,
            outputs,
        }
    }

    /// `out[rows, outputs] = act(input[rows, inputs] · W + b)`, on up to `threads` threads.
    pub fn forward(
        &self,
        input: &[f32],
        rows: usize,
        out: &mut [f32],
        act: Activation,
        threads: usize,
    ) {
        let (k, n) = (self.inputs, self.outputs);
        let input = &input[..rows * k];
        let out = &mut out[..rows * n];
        match &self.layout {
            Layout::Panels(panels) => {
                let run = |(block, dst): (usize, &mut [f32])| {
                    let start = block * BLOCK_ROWS;
                    let count = dst.len() / n;
                    // SAFETY: `Panels` exists only when the CPU has AVX2 and FMA.
                    unsafe {
                        avx2::block(
                            &input[start * k..(start + count) * k],
                            count,
                            k,
                            panels,
                            &self.bias,
                            dst,
                        )
                    }
                    if act == Activation::Gelu {
                        crate::kernels::gelu(dst);
                    }
                };
                if threads > 1 && rows > BLOCK_ROWS {
                    use rayon::prelude::*;
                    out.par_chunks_mut(BLOCK_ROWS * n).enumerate().for_each(run);
                } else {
                    out.chunks_mut(BLOCK_ROWS * n).enumerate().for_each(run);
                }
            }
            Layout::RowMajor(weight) => {
                for row in out.chunks_exact_mut(n) {
                    row.copy_from_slice(&self.bias);
                }
                let parallelism = if threads > 1 {
                    gemm::Parallelism::Rayon(threads)
                } else {
                    gemm::Parallelism::None
                };
                // SAFETY: `input` holds rows x k values, `weight` k x n, `out` rows x n, all
                // row-major with the strides given; `out` aliases neither operand.
                unsafe {
                    gemm::gemm(
                        rows,
                        n,
                        k,
                        out.as_mut_ptr(),
                        1,
                        n as isize,
                        true,
                        input.as_ptr(),
                        1,
                        k as isize,
                        weight.as_ptr(),
                        1,
                        n as isize,
                        1.0,
                        1.0,
                        false,
                        false,
                        false,
                        parallelism,
                    );
                }
                if act == Activation::Gelu {
                    crate::kernels::gelu(out);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{BLOCK_INPUTS, PANEL, TILE_ROWS};

    /// One cache block: `rows` rows of `x` (`[rows, k]`) through every panel into `out`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA; `panels` holds `[n/16][k][16]`, `bias` n values,
    /// `out` rows x n values.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn block(
        x: &[f32],
        rows: usize,
        k: usize,
        panels: &[f32],
        bias: &[f32],
        out: &mut [f32],
    ) {
        let n = bias.len();
        debug_assert_eq!(x.len(), rows * k);
        debug_assert_eq!(out.len(), rows * n);
        debug_assert_eq!(panels.len(), k * n);
        for k0 in (0..k).step_by(BLOCK_INPUTS) {
            let ks = k0..(k0 + BLOCK_INPUTS).min(k);
            for (p, panel) in panels.chunks_exact(k * PANEL).enumerate() {
                let t = Tile {
                    x,
                    k,
                    ks: ks.clone(),
                    panel,
                    bias,
                    col: p * PANEL,
                    n,
                };
                let mut r = 0;
                while r + TILE_ROWS <= rows {
                    t.run::<TILE_ROWS>(r, out);
                    r += TILE_ROWS;
                }
                match rows - r {
                    0 => {}
                    1 => t.run::<1>(r, out),
                    2 => t.run::<2>(r, out),
                    3 => t.run::<3>(r, out),
                    4 => t.run::<4>(r, out),
                    _ => t.run::<5>(r, out),
                }
            }
        }
    }

    /// One panel over one range of inputs.
    struct Tile<'a> {
        x: &'a [f32],
        k: usize,
        ks: std::ops::Range<usize>,
        panel: &'a [f32],
        bias: &'a [f32],
        col: usize,
        n: usize,
    }

    impl Tile<'_> {
        /// Rows `r..r+R` of `x`, inputs `ks`, times the panel, into columns `col..col+16` of
        /// `out`: starting from the bias on the first input range, else from what `out` holds.
        #[target_feature(enable = "avx2,fma")]
        #[inline]
        unsafe fn run<const R: usize>(&self, r: usize, out: &mut [f32]) {
            let Self {
                x,
                k,
                ref ks,
                panel,
                bias,
                col,
                n,
            } = *self;
            assert!((r + R) * k <= x.len() && panel.len() == k * 16 && ks.end <= k);
            assert!(col + 16 <= n && (r + R) * n <= out.len());
            // SAFETY (whole body): every pointer below stays inside the slices bounded by the
            // assertions above: x rows r..r+R (k values each), the panel (k x 16), bias and
            // out columns col..col+16 of rows r..r+R.
            let xp = x.as_ptr().add(r * k);
            let wp = panel.as_ptr();
            let mut lo = [_mm256_setzero_ps(); R];
            let mut hi = [_mm256_setzero_ps(); R];
            for i in 0..R {
                let src = if ks.start == 0 {
                    bias.as_ptr().add(col)
                } else {
                    out.as_ptr().add((r + i) * n + col)
                };
                lo[i] = _mm256_loadu_ps(src);
                hi[i] = _mm256_loadu_ps(src.add(8));
            }
            for kk in ks.clone() {
                let w0 = _mm256_loadu_ps(wp.add(kk * 16));
                let w1 = _mm256_loadu_ps(wp.add(kk * 16 + 8));
                for i in 0..R {
                    let xv = _mm256_broadcast_ss(&*xp.add(i * k + kk));
                    lo[i] = _mm256_fmadd_ps(xv, w0, lo[i]);
                    hi[i] = _mm256_fmadd_ps(xv, w1, hi[i]);
                }
            }
            for i in 0..R {
                let dst = out.as_mut_ptr().add((r + i) * n + col);
                _mm256_storeu_ps(dst, lo[i]);
                _mm256_storeu_ps(dst.add(8), hi[i]);
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod avx2 {
    pub unsafe fn block(_: &[f32], _: usize, _: usize, _: &[f32], _: &[f32], _: &mut [f32]) {
        unreachable!("panels are only built on x86-64 with AVX2")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random matrix.
    fn matrix(len: usize, seed: u32) -> Vec<f32> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn matches_a_naive_product_for_every_row_remainder_and_thread_count() {
        // k spans two input blocks, so partial sums carry over through the output.
        let (k, n) = (BLOCK_INPUTS + 40, 48);
        let w = matrix(k * n, 1);
        let b = matrix(n, 2);
        let dense = Dense::new(w.clone(), b.clone(), k, n);
        for rows in [1, 5, 6, 7, 13, 96, 97, 200] {
            let x = matrix(rows * k, rows as u32);
            for threads in [1, 2] {
                let mut out = vec![0.0; rows * n];
                dense.forward(&x, rows, &mut out, Activation::None, threads);
                for i in 0..rows {
                    for j in 0..n {
                        let want: f32 =
                            b[j] + (0..k).map(|t| x[i * k + t] * w[t * n + j]).sum::<f32>();
                        let got = out[i * n + j];
                        assert!(
                            (got - want).abs() < 1e-4,
                            "rows {rows} threads {threads} [{i},{j}]: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn widths_that_are_not_whole_panels_use_the_general_path() {
        let (k, n) = (3, 5);
        let dense = Dense::new(matrix(k * n, 3), vec![1.0; n], k, n);
        let mut out = vec![0.0; 2 * n];
        dense.forward(&[0.0; 6], 2, &mut out, Activation::Gelu, 1);
        // GELU(1) = 0.5 * (1 + erf(1/sqrt 2)).
        assert!(
            out.iter().all(|v| (v - 0.841_344_7).abs() < 1e-6),
            "{out:?}"
        );
    }
}
