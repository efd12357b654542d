//! The AVX2 kernels, on `vpmaddubsw` (unsigned bytes times signed bytes, pairs summed into
//! 16 bits) and `vpmaddwd`. Matrices of 4- and 5-bit values are read from the VNNI kernels'
//! [`Panel`]s, 8 rows per register: their products are small enough that 16-bit sums
//! accumulate across a block before one `vpmaddwd` widens them, with no horizontal sums.
//! 8-bit values (signed, so each product needs the sign trick, and too large for 16-bit sums)
//! are read from the 4-row groups.

use super::*;
use std::arch::x86_64::*;

/// Tokens per tile: each loaded weight block is used this many times.
const TILE: usize = 4;
/// Groups per cache chunk: the chunk of weights stays in L2 while all tokens pass.
const CHUNK_BYTES: usize = 192 * 1024;

#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn matmul(
    w: &QMatrix,
    a: &Q8Acts,
    g0: usize,
    g1: usize,
    out: *mut f32,
    ldo: usize,
) {
    let chunk = (CHUNK_BYTES / w.group_bytes()).max(1);
    let mut c0 = g0;
    while c0 < g1 {
        let c1 = (c0 + chunk).min(g1);
        let mut t0 = 0;
        while t0 < a.tokens {
            let n = (a.tokens - t0).min(TILE);
            for g in c0..c1 {
                // SAFETY: g < groups and t0 + n <= tokens; the caller owns the outputs.
                unsafe {
                    match (w.kind, n) {
                        (Kind::Q8, 4) => tile::<4>(w, a, g, t0, out, ldo),
                        (Kind::Q8, 3) => tile::<3>(w, a, g, t0, out, ldo),
                        (Kind::Q8, 2) => tile::<2>(w, a, g, t0, out, ldo),
                        (Kind::Q8, _) => tile::<1>(w, a, g, t0, out, ldo),
                        (Kind::Q4, 4) => tile_u::<4, false>(w, a, g, t0, out, ldo),
                        (Kind::Q4, 3) => tile_u::<3, false>(w, a, g, t0, out, ldo),
                        (Kind::Q4, 2) => tile_u::<2, false>(w, a, g, t0, out, ldo),
                        (Kind::Q4, _) => tile_u::<1, false>(w, a, g, t0, out, ldo),
                        (Kind::Q5, 4) => tile_u::<4, true>(w, a, g, t0, out, ldo),
                        (Kind::Q5, 3) => tile_u::<3, true>(w, a, g, t0, out, ldo),
                        (Kind::Q5, 2) => tile_u::<2, true>(w, a, g, t0, out, ldo),
                        (Kind::Q5, _) => tile_u::<1, true>(w, a, g, t0, out, ldo),
                        (Kind::Q4F, 4) => tile_u::<4, false>(w, a, g, t0, out, ldo),
                        (Kind::Q4F, 3) => tile_u::<3, false>(w, a, g, t0, out, ldo),
                        (Kind::Q4F, 2) => tile_u::<2, false>(w, a, g, t0, out, ldo),
                        (Kind::Q4F, _) => tile_u::<1, false>(w, a, g, t0, out, ldo),
                    }
                }
            }
            t0 += n;
        }
        c0 = c1;
    }
}

/// Four rows (group `g`) times `N` tokens from `t0`.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn tile<const N: usize>(
    w: &QMatrix,
    a: &Q8Acts,
    g: usize,
    t0: usize,
    out: *mut f32,
    ldo: usize,
) {
    let nb = w.blocks();
    let ones = _mm256_set1_epi16(1);
    let mut acc = [_mm256_setzero_ps(); N];
    const GB: usize = 2 * GROUP + GROUP * QK;
    let wp = unsafe { w.data.as_ptr().add(g * nb * GB) };
    let aq = unsafe { a.quants.as_ptr().add(t0 * a.cols) };
    let ad = unsafe { a.scales.as_ptr().add(t0 * nb) };
    for b in 0..nb {
        // SAFETY: block b of group g lies in `data`; tokens t0..t0+N in `a`.
        unsafe {
            let blk = wp.add(b * GB);
            let d = _mm_cvtph_ps(_mm_loadl_epi64(blk as *const __m128i));
            let d = _mm256_set_m128(d, d);
            let q = blk.add(2 * GROUP);
            let w0 = _mm256_loadu_si256(q as *const __m256i);
            let w1 = _mm256_loadu_si256(q.add(QK) as *const __m256i);
            let w2 = _mm256_loadu_si256(q.add(2 * QK) as *const __m256i);
            let w3 = _mm256_loadu_si256(q.add(3 * QK) as *const __m256i);
            let u0 = _mm256_sign_epi8(w0, w0);
            let u1 = _mm256_sign_epi8(w1, w1);
            let u2 = _mm256_sign_epi8(w2, w2);
            let u3 = _mm256_sign_epi8(w3, w3);
            for (t, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_loadu_si256(aq.add(t * a.cols + b * QK) as *const __m256i);
                let p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(u0, _mm256_sign_epi8(x, w0)), ones);
                let p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(u1, _mm256_sign_epi8(x, w1)), ones);
                let p2 = _mm256_madd_epi16(_mm256_maddubs_epi16(u2, _mm256_sign_epi8(x, w2)), ones);
                let p3 = _mm256_madd_epi16(_mm256_maddubs_epi16(u3, _mm256_sign_epi8(x, w3)), ones);
                // Lanes: rows 0..4 of the first half of the sums, then of the second.
                let s = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
                let scale = _mm256_mul_ps(d, _mm256_broadcast_ss(&*ad.add(t * nb + b)));
                *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, *acc);
            }
        }
    }
    // SAFETY: as for this function.
    unsafe { store(w, &acc, g, t0, out, ldo) };
}

/// Adds the two halves of each token's sums and stores the group's four outputs.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn store(w: &QMatrix, acc: &[__m256], g: usize, t0: usize, out: *mut f32, ldo: usize) {
    for (t, acc) in acc.iter().enumerate() {
        let sum = _mm_add_ps(_mm256_castps256_ps128(*acc), _mm256_extractf128_ps(*acc, 1));
        let r = g * GROUP;
        // SAFETY: the caller owns these outputs; the padding rows are not stored.
        unsafe {
            let dst = out.add((t0 + t) * ldo + r);
            if r + GROUP <= w.rows {
                _mm_storeu_ps(dst, sum);
            } else {
                let mut v = [0f32; 4];
                _mm_storeu_ps(v.as_mut_ptr(), sum);
                for (lane, v) in v.iter().enumerate().take(w.rows - r) {
                    *dst.add(lane) = *v;
                }
            }
        }
    }
}

/// Unsigned 4-bit values (5-bit with `HIGH`), each row's `d * q + m`: the products need
/// no sign trick, and the offsets multiply the activations' block sums.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn tile_u<const N: usize, const HIGH: bool>(
    w: &QMatrix,
    a: &Q8Acts,
    g: usize,
    t0: usize,
    out: *mut f32,
    ldo: usize,
) {
    let nb = w.blocks();
    let gb = w.kind.group_block();
    let start = w.kind.quants();
    let ones = _mm256_set1_epi16(1);
    let low = _mm256_set1_epi8(0x0f);
    let fifth = _mm256_set1_epi8(0x10);
    // Byte i of a broadcast u32 -> byte 8i..8i+8; then one bit per byte.
    let spread = _mm256_set_epi64x(
        0x0303_0303_0303_0303,
        0x0202_0202_0202_0202,
        0x0101_0101_0101_0101,
        0,
    );
    let bit = _mm256_set1_epi64x(0x7fbf_dfef_f7fb_fdfe);
    let all = _mm256_set1_epi8(-1);
    let half = _mm256_set1_ps(0.5);
    let mut acc = [_mm256_setzero_ps(); N];
    let wp = unsafe { w.data.as_ptr().add(g * nb * gb) };
    let aq = unsafe { a.quants.as_ptr().add(t0 * a.cols) };
    let ad = unsafe { a.scales.as_ptr().add(t0 * nb) };
    let asum = unsafe { a.sums.as_ptr().add(t0 * nb) };
    for b in 0..nb {
        // SAFETY: block b of group g lies in `data`; tokens t0..t0+N in `a`.
        unsafe {
            let blk = wp.add(b * gb);
            let (d, m) = if w.kind == Kind::Q4F {
                let d = _mm_loadu_ps(blk as *const f32);
                (d, _mm_loadu_ps(blk.add(4 * GROUP) as *const f32))
            } else {
                let d = _mm_cvtph_ps(_mm_loadl_epi64(blk as *const __m128i));
                (
                    d,
                    _mm_cvtph_ps(_mm_loadl_epi64(blk.add(2 * GROUP) as *const __m128i)),
                )
            };
            let d = _mm256_set_m128(d, d);
            // Each offset is added in both halves of the sums: half each.
            let m = _mm256_mul_ps(_mm256_set_m128(m, m), half);
            let mut u = [_mm256_setzero_si256(); GROUP];
            for (lane, u) in u.iter_mut().enumerate() {
                let qs = _mm_loadu_si128(blk.add(start + lane * QK / 2) as *const __m128i);
                let v = _mm256_set_m128i(_mm_srli_epi16(qs, 4), qs);
                *u = _mm256_and_si256(v, low);
                if HIGH {
                    let h = (blk.add(4 * GROUP + 4 * lane) as *const i32).read_unaligned();
                    let h = _mm256_shuffle_epi8(_mm256_set1_epi32(h), spread);
                    let h = _mm256_cmpeq_epi8(_mm256_or_si256(h, bit), all);
                    *u = _mm256_or_si256(*u, _mm256_and_si256(h, fifth));
                }
            }
            for (t, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_loadu_si256(aq.add(t * a.cols + b * QK) as *const __m256i);
                let p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(u[0], x), ones);
                let p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(u[1], x), ones);
                let p2 = _mm256_madd_epi16(_mm256_maddubs_epi16(u[2], x), ones);
                let p3 = _mm256_madd_epi16(_mm256_maddubs_epi16(u[3], x), ones);
                let s = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
                let scale = _mm256_mul_ps(d, _mm256_broadcast_ss(&*ad.add(t * nb + b)));
                *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, *acc);
                *acc = _mm256_fmadd_ps(m, _mm256_broadcast_ss(&*asum.add(t * nb + b)), *acc);
            }
        }
    }
    // SAFETY: as for this function.
    unsafe { store(w, &acc, g, t0, out, ldo) };
}

/// Tokens per panel tile: 4 × 16-bit sums and 4 accumulators, the weights and the constants
/// fill the 16 registers.
const PANEL_TILE: usize = 4;
/// Rows per half-panel: one 32-bit lane each in a 256-bit register.
const HALF: usize = PANEL / 2;

/// [`super::matmul`] over panels `p0..p1` of 4-bit values (`U4`) or of 5-bit ones (`Q5`,
/// stored as bytes with offset 16).
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `p1` at most the panels of `w`, `p` built from `w`
/// with values below 32; `out` as in [`super::matmul`].
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn matmul_panels(
    w: &QMatrix,
    p: &Panel,
    a: &Q8Acts,
    p0: usize,
    p1: usize,
    out: *mut f32,
    ldo: usize,
) {
    assert!(
        p.offset.is_none_or(|o| o == 16),
        "8-bit panels overflow the AVX2 kernel's 16-bit sums"
    );
    for_panel_tiles(w, p, a.tokens, (p0, p1), (PANEL_TILE, 2), |half, t0, n| {
        // SAFETY: half / 2 < panels and t0 + n <= tokens; the caller owns the outputs.
        unsafe {
            match (p.offset.is_none(), n) {
                (true, 4) => panel_tile::<4, true>(w, p, a, half, t0, out, ldo),
                (true, 3) => panel_tile::<3, true>(w, p, a, half, t0, out, ldo),
                (true, 2) => panel_tile::<2, true>(w, p, a, half, t0, out, ldo),
                (true, _) => panel_tile::<1, true>(w, p, a, half, t0, out, ldo),
                (false, 4) => panel_tile::<4, false>(w, p, a, half, t0, out, ldo),
                (false, 3) => panel_tile::<3, false>(w, p, a, half, t0, out, ldo),
                (false, 2) => panel_tile::<2, false>(w, p, a, half, t0, out, ldo),
                (false, _) => panel_tile::<1, false>(w, p, a, half, t0, out, ldo),
            }
        }
    });
}

/// Half-panel `half` (rows `8 half..`) times `N` tokens from `t0`. Each `vpmaddubsw` puts two
/// products of one row into a 16-bit lane. Activations are at most 127 in size, so a 4-bit
/// product is at most 1,905 and a lane's eight steps over a 4-bit block (16 products) at most
/// 30,480; a 5-bit product is at most 3,937, so 5-bit sums are widened after four steps
/// (31,496), before they could overflow.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn panel_tile<const N: usize, const U4: bool>(
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
    let ones = _mm256_set1_epi16(1);
    let mut acc = [_mm256_setzero_ps(); N];
    // SAFETY (all pointer arithmetic and loads below): as in the AVX-VNNI tile.
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
                let mut sum16 = [_mm256_setzero_si256(); N];
                for c in 0..4 {
                    let v = line(b, c);
                    let lo = _mm256_and_si256(v, low);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
                    for (t, s) in sum16.iter_mut().enumerate() {
                        *s = _mm256_add_epi16(*s, _mm256_maddubs_epi16(lo, x4(t, b, 4 * c)));
                        *s = _mm256_add_epi16(
                            *s,
                            _mm256_maddubs_epi16(hi, x4(t, b, QK / 2 + 4 * c)),
                        );
                    }
                }
                for (dot, s) in dot.iter_mut().zip(sum16) {
                    *dot = _mm256_madd_epi16(s, ones);
                }
            } else {
                for (t, dot) in dot.iter_mut().enumerate() {
                    *dot = _mm256_set1_epi32(-offset * *isum.add(t * nb + b));
                }
                for c0 in [0, 4] {
                    let mut sum16 = [_mm256_setzero_si256(); N];
                    for c in c0..c0 + 4 {
                        let v = line(b, c);
                        for (t, s) in sum16.iter_mut().enumerate() {
                            *s = _mm256_add_epi16(*s, _mm256_maddubs_epi16(v, x4(t, b, 4 * c)));
                        }
                    }
                    for (dot, s) in dot.iter_mut().zip(sum16) {
                        *dot = _mm256_add_epi32(*dot, _mm256_madd_epi16(s, ones));
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
        store_half(&acc, w.rows, r0, t0, out, ldo);
    }
}

/// Stores a half-panel tile: token `t0 + t`'s sums `acc[t]` at rows `r0..r0 + 8`, those at
/// or past `rows` (the last panel's padding) left out.
///
/// # Safety
/// The CPU must have AVX2; the caller owns these outputs (`out` as in [`super::matmul`]).
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn store_half(
    acc: &[__m256],
    rows: usize,
    r0: usize,
    t0: usize,
    out: *mut f32,
    ldo: usize,
) {
    let rows = rows.saturating_sub(r0).min(HALF);
    for (t, acc) in acc.iter().enumerate() {
        // SAFETY: the caller owns these outputs: token t0 + t, rows r0.. below `rows`.
        unsafe {
            let dst = out.add((t0 + t) * ldo + r0);
            if rows == HALF {
                _mm256_storeu_ps(dst, *acc);
            } else {
                let mut v = [0f32; HALF];
                _mm256_storeu_ps(v.as_mut_ptr(), *acc);
                for (r, v) in v.iter().enumerate().take(rows) {
                    *dst.add(r) = *v;
                }
            }
        }
    }
}
