//! The AVX-VNNI kernel: [`super::avx512`]'s arithmetic on 256-bit registers (VEX-encoded
//! `vpdpbusd`), one half-panel of 8 rows × up to [`TILE`] tokens per tile. Tested against
//! the scalar kernel only where the CPU has AVX-VNNI (Intel since Alder Lake and Sapphire
//! Rapids, AMD since Zen 5).

use super::{for_panel_tiles, Panel, Q8Acts, QMatrix, PANEL, QK};
use std::arch::x86_64::*;

/// Tokens per tile: 16 registers hold 2 × 4 accumulators, the weights and the constants.
const TILE: usize = 4;
/// Rows per half-panel: one 32-bit lane each in a 256-bit register.
const HALF: usize = PANEL / 2;

/// [`super::matmul`] over panels `p0..p1`.
///
/// # Safety
/// The CPU must have AVX-VNNI, AVX2, FMA and F16C; `p1` at most the panels of `w`, `p` built
/// from `w`; `out` as in [`super::matmul`].
#[target_feature(enable = "avxvnni,avx2,fma,f16c")]
pub(super) unsafe fn matmul(
    w: &QMatrix,
    p: &Panel,
    a: &Q8Acts,
    p0: usize,
    p1: usize,
    out: *mut f32,
    ldo: usize,
) {
    for_panel_tiles(w, p, a.tokens, (p0, p1), (TILE, 2), |half, t0, n| {
        // SAFETY: half / 2 < panels and t0 + n <= tokens; the caller owns the outputs.
        unsafe {
            match (p.offset.is_some(), n) {
                (true, 4) => tile::<4, false>(w, p, a, half, t0, out, ldo),
                (true, 3) => tile::<3, false>(w, p, a, half, t0, out, ldo),
                (true, 2) => tile::<2, false>(w, p, a, half, t0, out, ldo),
                (true, _) => tile::<1, false>(w, p, a, half, t0, out, ldo),
                (false, 4) => tile::<4, true>(w, p, a, half, t0, out, ldo),
                (false, 3) => tile::<3, true>(w, p, a, half, t0, out, ldo),
                (false, 2) => tile::<2, true>(w, p, a, half, t0, out, ldo),
                (false, _) => tile::<1, true>(w, p, a, half, t0, out, ldo),
            }
        }
    });
}

/// Half-panel `half` (rows `8 half..`) times `N` tokens from `t0`, as the AVX-512 tile.
#[target_feature(enable = "avxvnni,avx2,fma,f16c")]
#[inline]
unsafe fn tile<const N: usize, const U4: bool>(
    w: &QMatrix,
    p: &Panel,
    a: &Q8Acts,
    half: usize,
    t0: usize,
    out: *mut f32,
    ldo: usize,
) {
    let nb = w.cols / QK;
    let per_block = if U4 { 4 } else { 8 };
    let offset = p.offset.unwrap_or(0);
    let (pi, side) = (half / 2, half % 2);
    let low = _mm256_set1_epi8(0x0f);
    let mut acc = [_mm256_setzero_ps(); N];
    // SAFETY (all pointer arithmetic and loads below): as in the AVX-512 tile; this half's
    // bytes are the 32 at `32 side` of each 64-byte line, its scales the 8 at `8 side`.
    unsafe {
        let lines = (p.lines.as_ptr().add(pi * nb * per_block) as *const u8).add(32 * side);
        let aq = a.quants.as_ptr().add(t0 * a.cols);
        let ad = a.scales.as_ptr().add(t0 * nb);
        let asum = a.sums.as_ptr().add(t0 * nb);
        let isum = a.isums.as_ptr().add(t0 * nb);
        let x4 = |t: usize, b: usize, k: usize| {
            _mm256_set1_epi32((aq.add(t * a.cols + b * QK + k) as *const i32).read_unaligned())
        };
        let line = |b: usize, c: usize| {
            _mm256_load_si256(lines.add((b * per_block + c) * 64) as *const __m256i)
        };
        for b in 0..nb {
            let mut dot = [_mm256_setzero_si256(); N];
            if U4 {
                for c in 0..4 {
                    let v = line(b, c);
                    let lo = _mm256_and_si256(v, low);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
                    for (t, dot) in dot.iter_mut().enumerate() {
                        *dot = _mm256_dpbusd_avx_epi32(*dot, lo, x4(t, b, 4 * c));
                        *dot = _mm256_dpbusd_avx_epi32(*dot, hi, x4(t, b, QK / 2 + 4 * c));
                    }
                }
            } else {
                for (t, dot) in dot.iter_mut().enumerate() {
                    *dot = _mm256_set1_epi32(-offset * *isum.add(t * nb + b));
                }
                for c in 0..8 {
                    let v = line(b, c);
                    for (t, dot) in dot.iter_mut().enumerate() {
                        *dot = _mm256_dpbusd_avx_epi32(*dot, v, x4(t, b, 4 * c));
                    }
                }
            }
            let i = pi * nb + b;
            let d = if U4 {
                _mm256_loadu_ps(p.scales_f32.as_ptr().add(i * 2 * PANEL + HALF * side))
            } else {
                _mm256_cvtph_ps(_mm_loadu_si128(
                    p.scales_f16.as_ptr().add(i * PANEL + HALF * side) as *const __m128i,
                ))
            };
            for (t, acc) in acc.iter_mut().enumerate() {
                let scale = _mm256_mul_ps(d, _mm256_set1_ps(*ad.add(t * nb + b)));
                *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[t]), scale, *acc);
            }
            if U4 {
                let m = _mm256_loadu_ps(
                    p.scales_f32
                        .as_ptr()
                        .add(i * 2 * PANEL + PANEL + HALF * side),
                );
                for (t, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm256_fmadd_ps(m, _mm256_set1_ps(*asum.add(t * nb + b)), *acc);
                }
            }
        }
        let r0 = pi * PANEL + HALF * side;
        super::avx2::store_half(&acc, w.rows, r0, t0, out, ldo);
    }
}
