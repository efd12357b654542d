//! Elementwise kernels of the packed encoder: GELU, softmax, LayerNorm and pooling on f32 slices.
//!
//! Each is plain Rust written so that LLVM vectorises it; on x86-64 with AVX2 and FMA (checked
//! at run time) the same code is compiled a second time with those features enabled.
//! `exp` and `erf` are branch-free approximations accurate to about 1e-7, far below what
//! changes an embedding (the goldens are checked to cosine 0.999, and match to 0.9999+).

/// Picks the AVX2+FMA build of a kernel when the CPU has it, else the portable one.
macro_rules! dispatch {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) => $generic:ident) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn fast($($arg: $ty),*) {
                    $generic($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU supports the features `fast` was compiled for.
                    return unsafe { fast($($arg),*) };
                }
            }
            $generic($($arg),*)
        }
    };
}

/// e^x for x in [-87, 88] (clamped outside), relative error below 3e-7.
///
/// Writes x = n·ln 2 + y with integer n and |y| <= ln(2)/2 (ln 2 split in two constants so
/// that n·ln 2 is exact), builds 2^n in the exponent bits, and e^y by its Taylor series to
/// degree 7 (remainder < 5e-9).
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E).round_ties_even();
    let y = (x - n * LN2_HI) - n * LN2_LO;
    let mut p = 1.0 / 5040.0;
    p = p * y + 1.0 / 720.0;
    p = p * y + 1.0 / 120.0;
    p = p * y + 1.0 / 24.0;
    p = p * y + 1.0 / 6.0;
    p = p * y + 0.5;
    p = p * y + 1.0;
    p = p * y + 1.0;
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

/// erf(x), absolute error below 2e-7: Abramowitz & Stegun 7.1.26 with the sign restored.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152 + t * 1.061_405_4))));
    let r = 1.0 - poly * exp(-a * a);
    r.copysign(x)
}

#[inline(always)]
fn gelu_generic(xs: &mut [f32]) {
    for x in xs.iter_mut() {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

dispatch! {
    /// Exact (erf) GELU in place, as BERT's `gelu` activation.
    pub fn gelu(xs: &mut [f32]) => gelu_generic
}

/// Lanes of the reductions below: eight f32 accumulators fill one AVX2 register. A plain
/// running sum would not vectorise, since float addition may not be reordered.
const LANES: usize = 8;

/// The sum of `f(x)` over `xs`, in [`LANES`] independent accumulators.
#[inline(always)]
fn sum_by(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder().iter().map(|&x| f(x)).sum::<f32>();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a += f(x);
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The largest value of `xs` (NaN-free input), in [`LANES`] independent accumulators.
#[inline(always)]
fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks
        .remainder()
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = if x > *a { x } else { *a };
        }
    }
    acc.into_iter().fold(tail, f32::max)
}

#[inline(always)]
fn softmax_rows_generic(xs: &mut [f32], width: usize) {
    for row in xs.chunks_exact_mut(width) {
        let max = max(row);
        row.iter_mut().for_each(|x| *x = exp(*x - max));
        let inv = 1.0 / sum_by(row, |x| x);
        row.iter_mut().for_each(|x| *x *= inv);
    }
}

dispatch! {
    /// Softmax of each row of a row-major matrix `width` wide, in place.
    pub fn softmax_rows(xs: &mut [f32], width: usize) => softmax_rows_generic
}

/// LayerNorm of one row in place.
#[inline(always)]
fn layer_norm_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = row.len() as f32;
    let mean = sum_by(row, |x| x) / width;
    let var = sum_by(row, |x| (x - mean) * (x - mean)) / width;
    let inv = 1.0 / (var + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = (*x - mean) * inv * g + b;
    }
}

#[inline(always)]
fn add_layer_norm_generic(xs: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    for (row, res) in xs.chunks_exact_mut(width).zip(residual.chunks_exact(width)) {
        row.iter_mut().zip(res).for_each(|(x, r)| *x += r);
        layer_norm_row(row, gamma, beta, eps);
    }
}

dispatch! {
    /// `xs = LayerNorm(xs + residual)` row by row (rows as wide as `gamma`).
    pub fn add_layer_norm(xs: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) => add_layer_norm_generic
}

#[inline(always)]
fn layer_norm_generic(xs: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    for row in xs.chunks_exact_mut(gamma.len()) {
        layer_norm_row(row, gamma, beta, eps);
    }
}

dispatch! {
    /// `xs = LayerNorm(xs)` row by row (rows as wide as `gamma`).
    pub fn layer_norm(xs: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) => layer_norm_generic
}

/// Scales `v` to unit L2 norm (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

/// Writes the L2-normalised mean of `rows` (row-major, `out.len()` wide) into `out`.
pub fn mean_pool_normalised(rows: &[f32], out: &mut [f32]) {
    out.fill(0.0);
    for row in rows.chunks_exact(out.len()) {
        out.iter_mut().zip(row).for_each(|(o, x)| *o += x);
    }
    // The mean's direction is the sum's: normalising the sum is enough.
    normalise(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate_over_its_range() {
        let mut x = -87.0f32;
        while x < 88.0 {
            let (got, want) = (exp(x), (x as f64).exp());
            assert!(
                ((got as f64 - want) / want).abs() < 3e-7,
                "exp({x}) = {got}, want {want}"
            );
            x += 0.037;
        }
        assert!(exp(-1000.0) >= 0.0 && exp(-1000.0) < 1e-37);
    }

    #[test]
    fn erf_is_accurate() {
        // Reference values of erf to 10 digits.
        for (x, want) in [
            // (x, erf(x)) as f64 pairs
            (0.0f32, 0.0f64),
            (0.1f32, 0.1124629160f64),
            (0.5f32, 0.5204998778f64),
            (1.0f32, 0.8427007929f64),
            (2.0f32, 0.9953222650f64),
            (-1.5f32, -0.9661051465f64),
            (4.0f32, 0.9999999846f64),
        ] {
            assert!(
                (erf(x) as f64 - want).abs() < 2e-7,
                "erf({x}) = {}, want {want}",
                erf(x)
            );
        }
    }

    #[test]
    fn gelu_matches_its_definition() {
        let mut xs = [-3.0f32, -1.0, -0.2, 0.0, 0.3, 1.0, 2.5];
        let want: Vec<f32> = xs
            .iter()
            .map(|&x| 0.5 * x * (1.0 + libm_erf(x / 2f32.sqrt())))
            .collect();
        gelu(&mut xs);
        for (g, w) in xs.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{g} vs {w}");
        }
    }

    /// erf by its Maclaurin series, slow but exact enough for |x| < 3.
    fn libm_erf(x: f32) -> f32 {
        let x = x as f64;
        let (mut term, mut sum, mut n) = (x, x, 0.0);
        while term.abs() > 1e-17 {
            n += 1.0;
            term *= -x * x / n;
            sum += term / (2.0 * n + 1.0);
        }
        (sum * 2.0 / std::f64::consts::PI.sqrt()) as f32
    }

    #[test]
    fn lane_reductions_cover_every_element() {
        let xs: Vec<f32> = (0..21).map(|i| i as f32 - 5.0).collect();
        assert_eq!(sum_by(&xs, |x| x), xs.iter().sum::<f32>());
        assert_eq!(
            sum_by(&xs, |x| x * x),
            xs.iter().map(|x| x * x).sum::<f32>()
        );
        assert_eq!(max(&xs), 15.0);
        assert_eq!(max(&xs[..3]), -3.0);
    }

    #[test]
    fn softmax_rows_sum_to_one() {
        let mut xs = [1.0f32, 2.0, 3.0, -50.0, 0.0, 50.0];
        softmax_rows(&mut xs, 3);
        assert!((xs[..3].iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((xs[3..].iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((xs[2] - 0.665_240_9).abs() < 1e-6);
    }

    #[test]
    fn layer_norm_centres_and_scales() {
        let mut xs = [1.0f32, 2.0, 3.0, 4.0];
        add_layer_norm(&mut xs, &[1.0, 1.0, 1.0, 1.0], &[1.0; 4], &[0.5; 4], 1e-12);
        let mean: f32 = xs.iter().sum::<f32>() / 4.0;
        assert!((mean - 0.5).abs() < 1e-6);
        assert!((xs[3] - (0.5 + 1.5 / 1.25f32.sqrt())).abs() < 1e-5);
    }

    #[test]
    fn layer_norm_is_add_layer_norm_without_a_residual() {
        let (gamma, beta) = ([0.5f32, 2.0, 1.0], [0.1f32, -0.1, 0.0]);
        let mut plain = [3.0f32, -1.0, 0.5, 7.0, 7.0, 8.0];
        let mut added = plain;
        layer_norm(&mut plain, &gamma, &beta, 1e-12);
        add_layer_norm(&mut added, &[0.0; 6], &gamma, &beta, 1e-12);
        assert_eq!(plain, added);
    }

    #[test]
    fn pooling_normalises_the_mean() {
        let mut out = [0.0f32; 2];
        mean_pool_normalised(&[3.0, 0.0, 1.0, 4.0], &mut out);
        // Rows (3, 0) and (1, 4) sum to (4, 4): the unit vector along the diagonal.
        assert!(
            out.iter()
                .all(|o| (o - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6),
            "{out:?}"
        );
    }
}
