//! The AVX-512 VNNI kernel: one 16-row panel × up to [`TILE`] tokens per tile, `vpdpbusd`
//! on 512-bit registers with one row per 32-bit lane, so a block's integer sums need no
//! horizontal adds; each block's sums then meet their scales in f32.

use super::{for_panel_tiles, Panel, Q8Acts, QMatrix, PANEL, QK};
use std::arch::x86_64::*;

/// Tokens per tile: each line of weights loaded serves this many tokens (16 accumulators).
const TILE: usize = 8;

/// [`super::matmul`] over panels `p0..p1`.
///
/// # Safety
/// The CPU must have AVX-512 F/BW/VNNI; `p1` at most the panels of `w`, `p` built from `w`;
/// `out` as in [`super::matmul`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
pub(super) unsafe fn matmul(
    w: &QMatrix,
    p: &Panel,
    a: &Q8Acts,
    p0: usize,
    p1: usize,
    out: *mut f32,
    ldo: usize,
) {
    for_panel_tiles(w, p, a.tokens, (p0, p1), (TILE, 1), |pi, t0, n| {
        // SAFETY: pi < panels and t0 + n <= tokens; the caller owns the outputs.
        unsafe {
            match (p.offset.is_some(), n) {
                (true, 8) => tile::<8, false>(w, p, a, pi, t0, out, ldo),
                (true, 7) => tile::<7, false>(w, p, a, pi, t0, out, ldo),
                (true, 6) => tile::<6, false>(w, p, a, pi, t0, out, ldo),
                (true, 5) => tile::<5, false>(w, p, a, pi, t0, out, ldo),
                (true, 4) => tile::<4, false>(w, p, a, pi, t0, out, ldo),
                (true, 3) => tile::<3, false>(w, p, a, pi, t0, out, ldo),
                (true, 2) => tile::<2, false>(w, p, a, pi, t0, out, ldo),
                (true, _) => tile::<1, false>(w, p, a, pi, t0, out, ldo),
                (false, 8) => tile::<8, true>(w, p, a, pi, t0, out, ldo),
                (false, 7) => tile::<7, true>(w, p, a, pi, t0, out, ldo),
                (false, 6) => tile::<6, true>(w, p, a, pi, t0, out, ldo),
                (false, 5) => tile::<5, true>(w, p, a, pi, t0, out, ldo),
                (false, 4) => tile::<4, true>(w, p, a, pi, t0, out, ldo),
                (false, 3) => tile::<3, true>(w, p, a, pi, t0, out, ldo),
                (false, 2) => tile::<2, true>(w, p, a, pi, t0, out, ldo),
                (false, _) => tile::<1, true>(w, p, a, pi, t0, out, ldo),
            }
        }
    });
}

/// Panel `pi` (16 rows) times `N` tokens from `t0`; `U4`: nibbles with f32 scales and
/// offsets, else bytes with f16 scales and the panel's integer offset.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
#[inline]
unsafe fn tile<const N: usize, const U4: bool>(
    w: &QMatrix,
    p: &Panel,
    a: &Q8Acts,
    pi: usize,
    t0: usize,
    out: *mut f32,
    ldo: usize,
) {
    let nb = w.cols / QK;
    let per_block = if U4 { 4 } else { 8 };
    let offset = p.offset.unwrap_or(0);
    let low = _mm512_set1_epi8(0x0f);
    let mut acc = [_mm512_setzero_ps(); N];
    // SAFETY (all pointer arithmetic and loads below): block b < nb of panel pi lies in
    // `p.lines` and its scales; tokens t0..t0 + N lie in `a` (checked by the caller), whose
    // rows hold nb blocks of QK values.
    unsafe {
        let lines = p.lines.as_ptr().add(pi * nb * per_block) as *const __m512i;
        let aq = a.quants.as_ptr().add(t0 * a.cols);
        let ad = a.scales.as_ptr().add(t0 * nb);
        let asum = a.sums.as_ptr().add(t0 * nb);
        let isum = a.isums.as_ptr().add(t0 * nb);
        // Four activations of token t from value k of block b, in every lane.
        let x4 = |t: usize, b: usize, k: usize| {
            _mm512_set1_epi32((aq.add(t * a.cols + b * QK + k) as *const i32).read_unaligned())
        };
        for b in 0..nb {
            let blk = lines.add(b * per_block);
            // With few tokens, two chains of sums: `vpdpbusd`'s latency is several cycles.
            let mut dot = [_mm512_setzero_si512(); N];
            let mut dot2 = [_mm512_setzero_si512(); N];
            if U4 {
                for c in 0..4 {
                    let v = _mm512_load_si512(blk.add(c));
                    let lo = _mm512_and_si512(v, low);
                    let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(v), low);
                    for t in 0..N {
                        dot[t] = _mm512_dpbusd_epi32(dot[t], lo, x4(t, b, 4 * c));
                        let second = if N <= 2 { &mut dot2[t] } else { &mut dot[t] };
                        *second = _mm512_dpbusd_epi32(*second, hi, x4(t, b, QK / 2 + 4 * c));
                    }
                }
            } else {
                // Start from -offset · Σx: the sums come out exactly Σ (q - offset) x.
                for (t, dot) in dot.iter_mut().enumerate() {
                    *dot = _mm512_set1_epi32(-offset * *isum.add(t * nb + b));
                }
                for c in 0..8 {
                    let v = _mm512_load_si512(blk.add(c));
                    for t in 0..N {
                        let chain = if N <= 2 && c % 2 == 1 {
                            &mut dot2[t]
                        } else {
                            &mut dot[t]
                        };
                        *chain = _mm512_dpbusd_epi32(*chain, v, x4(t, b, 4 * c));
                    }
                }
            }
            if N <= 2 {
                for t in 0..N {
                    dot[t] = _mm512_add_epi32(dot[t], dot2[t]);
                }
            }
            let i = pi * nb + b;
            let d = if U4 {
                _mm512_loadu_ps(p.scales_f32.as_ptr().add(i * 2 * PANEL))
            } else {
                _mm512_cvtph_ps(_mm256_loadu_si256(
                    p.scales_f16.as_ptr().add(i * PANEL) as *const __m256i
                ))
            };
            for (t, acc) in acc.iter_mut().enumerate() {
                let scale = _mm512_mul_ps(d, _mm512_set1_ps(*ad.add(t * nb + b)));
                *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[t]), scale, *acc);
            }
            if U4 {
                let m = _mm512_loadu_ps(p.scales_f32.as_ptr().add(i * 2 * PANEL + PANEL));
                for (t, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm512_fmadd_ps(m, _mm512_set1_ps(*asum.add(t * nb + b)), *acc);
                }
            }
        }
        // The padding rows of the last panel are not stored.
        let r0 = pi * PANEL;
        let mask: __mmask16 = if r0 + PANEL <= w.rows {
            0xffff
        } else {
            (1u16 << (w.rows - r0)) - 1
        };
        for (t, acc) in acc.iter().enumerate() {
            // SAFETY: the caller owns these outputs: token t0 + t, rows r0.. below w.rows.
            _mm512_mask_storeu_ps(out.add((t0 + t) * ldo + r0), mask, *acc);
        }
    }
}
