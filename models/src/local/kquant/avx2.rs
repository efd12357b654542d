//! The AVX2 kernels of [`super`]: one row against one token, 32 values a register.
//! `vpmaddubsw` multiplies the unsigned weights by the signed activations into 16-bit pairs
//! (at most 2 · 63 · 127), `vpmaddwd` weighs the pairs by their sub-block's scale into 32-bit
//! sums, and a super-block ends with one float multiply-add by its scales.

use std::arch::x86_64::*;

use super::{q4_k_at, KActs, Q4_K_KEPT, Q6_K_BYTES};
use crate::local::quant::QK_K;

/// How far ahead of the super-block being read the kernels ask for the next ones.
const AHEAD: usize = 4096;

/// The sum of the eight lanes.
#[target_feature(enable = "avx2,fma,f16c")]
fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// 32 bytes at `p`.
///
/// # Safety
/// `p..p + 32` must be readable.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load(p: *const u8) -> __m256i {
    // SAFETY: by the contract.
    unsafe { _mm256_loadu_si256(p as *const __m256i) }
}

/// The two f16 values in `bits` as f32, in lanes 0 and 1.
#[target_feature(enable = "avx2,fma,f16c")]
fn f16s(bits: u32) -> __m128 {
    _mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32))
}

/// As `super::dot_q4_k`.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `row` holds whole super-blocks, as many as `a`.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn dot_q4_k(row: &[u8], a: &KActs) -> f32 {
    assert_eq!(row.len() / Q4_K_KEPT * QK_K, a.cols);
    let nibble = _mm256_set1_epi8(0x0f);
    let mut acc = _mm256_setzero_ps();
    let mut acc_min = _mm_setzero_ps();
    for (s, sb) in row.chunks_exact(Q4_K_KEPT).enumerate() {
        let p = sb.as_ptr();
        // SAFETY: super-block s of the activations (256 values, 8 sums of 32), and within
        // the kept super-block (scales at 4..12, minima at 12..20, nibbles at 20..148).
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(AHEAD) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(AHEAD + 64) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(AHEAD + 128) as *const i8);
            let aq = a.quants_q4k.as_ptr().add(s * QK_K) as *const u8;
            let sums = _mm_loadu_si128(a.sums32.as_ptr().add(s * 8) as *const __m128i);
            let ad = _mm_set1_ps(*a.scales.get_unchecked(s));
            // 32-bit lane j: sub-block j's scale in both 16-bit halves.
            let sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64(p.add(4) as *const __m128i));
            let sc = _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));
            let mut dots = _mm256_setzero_si256();
            for group in 0..4 {
                let q = load(p.add(20 + 32 * group));
                let lo = _mm256_and_si256(q, nibble);
                let hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nibble);
                let lo = _mm256_maddubs_epi16(lo, load(aq.add(q4_k_at(group, 0, 0))));
                let hi = _mm256_maddubs_epi16(hi, load(aq.add(q4_k_at(group, 1, 0))));
                dots = _mm256_add_epi32(dots, _mm256_madd_epi16(_mm256_add_epi16(lo, hi), sc));
            }
            // (d, dmin) times the activations' scale.
            let d = _mm_mul_ps(f16s(u32::from_le_bytes([sb[0], sb[1], sb[2], sb[3]])), ad);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_broadcastss_ps(d), acc);
            let m = _mm_cvtepu8_epi16(_mm_loadl_epi64(p.add(12) as *const __m128i));
            let mins = _mm_madd_epi16(m, sums);
            let dmin = _mm_permute_ps(d, 0b01_01_01_01);
            acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(mins), dmin, acc_min);
        }
    }
    hsum(_mm256_sub_ps(
        acc,
        _mm256_set_m128(_mm_setzero_ps(), acc_min),
    ))
}

/// As `super::dot_q6_k`.
///
/// # Safety
/// As [`dot_q4_k`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn dot_q6_k(row: &[u8], a: &KActs) -> f32 {
    assert_eq!(row.len() / Q6_K_BYTES * QK_K, a.cols);
    let nibble = _mm256_set1_epi8(0x0f);
    let pair = _mm256_set1_epi8(0x30);
    let low16 = _mm256_set1_epi32(0xffff);
    // Which two of a half's eight scales each 32 values take: the first 16 values one, the
    // next 16 the other.
    let pick = [
        _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1),
        _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3),
        _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5),
        _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7),
    ];
    let mut acc = _mm256_setzero_ps();
    for (s, sb) in row.chunks_exact(Q6_K_BYTES).enumerate() {
        // SAFETY: super-block s of the activations (256 values, 16 sums).
        let (ad, aq, sums) = unsafe {
            (
                *a.scales.get_unchecked(s),
                a.quants.as_ptr().add(s * QK_K) as *const u8,
                a.sums.as_ptr().add(s * 16),
            )
        };
        let scales = sb[192..208].as_ptr();
        let p = sb.as_ptr();
        for line in 0..4 {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(AHEAD + 64 * line) as *const i8);
        }
        let mut dots = _mm256_setzero_si256();
        for half in 0..2 {
            // SAFETY: within the super-block (64 of its 128 bytes of nibbles, 32 of its 64 of
            // high bits, 8 of its 16 scales) and the activations' 256 values.
            let (ql0, ql1, qh, sc) = unsafe {
                (
                    load(sb.as_ptr().add(64 * half)),
                    load(sb.as_ptr().add(64 * half + 32)),
                    load(sb.as_ptr().add(128 + 32 * half)),
                    _mm256_cvtepi8_epi32(_mm_loadl_epi64(scales.add(8 * half) as *const __m128i)),
                )
            };
            // Each scale in both 16-bit halves of its 32-bit lane.
            let sc = _mm256_or_si256(_mm256_and_si256(sc, low16), _mm256_slli_epi32(sc, 16));
            let q = [
                _mm256_or_si256(
                    _mm256_and_si256(ql0, nibble),
                    _mm256_and_si256(_mm256_slli_epi16(qh, 4), pair),
                ),
                _mm256_or_si256(
                    _mm256_and_si256(ql1, nibble),
                    _mm256_and_si256(_mm256_slli_epi16(qh, 2), pair),
                ),
                _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16(ql0, 4), nibble),
                    _mm256_and_si256(qh, pair),
                ),
                _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16(ql1, 4), nibble),
                    _mm256_and_si256(_mm256_srli_epi16(qh, 2), pair),
                ),
            ];
            for (k, q) in q.into_iter().enumerate() {
                // SAFETY: 32 of the super-block's 256 activations.
                let x = unsafe { load(aq.add(128 * half + 32 * k)) };
                let p = _mm256_maddubs_epi16(q, x);
                let w = _mm256_permutevar8x32_epi32(sc, pick[k]);
                dots = _mm256_add_epi32(dots, _mm256_madd_epi16(p, w));
            }
        }
        // The values are stored 32 above their signed selves: less 32 · Σ sc_k · sum_k.
        // SAFETY: the super-block's 16 scales and the activations' 16 sums.
        let (sc, sums) = unsafe {
            (
                _mm256_cvtepi8_epi16(_mm_loadu_si128(scales as *const __m128i)),
                _mm256_loadu_si256(sums as *const __m256i),
            )
        };
        dots = _mm256_sub_epi32(dots, _mm256_slli_epi32(_mm256_madd_epi16(sc, sums), 5));
        let d = _mm_mul_ss(
            f16s(u16::from_le_bytes([sb[208], sb[209]]) as u32),
            _mm_set_ss(ad),
        );
        let d = _mm256_broadcastss_ps(d);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), d, acc);
    }
    hsum(acc)
}
