//! Causal attention of one token's query heads that share a key/value head: scores against
//! every position seen, softmax, the weighted sum of values. The AVX2 path reads each key
//! once for all the heads of its group, takes `exp` eight scores at a time and keeps each
//! head's output in registers while the values stream past; the scalar path is its twin.
//!
//! A prompt's tokens can also be taken a [`Tile`] at a time on AVX-512: every query head of
//! the group for [`TOKEN_BLOCK`] tokens against keys transposed once per layer, sixteen keys
//! to a register, so each key value loaded serves eight query rows and no score needs a
//! horizontal sum; then each value row loaded serves several rows' outputs.

use super::quant::Cpu;

/// One token's heads of one key/value group.
pub struct Heads<'a> {
    /// `group × head_dim` queries, head after head.
    pub q: &'a [f32],
    /// The cache: position `j`'s key at `keys[j * stride + offset..][..head_dim]`.
    pub keys: &'a [f32],
    pub values: &'a [f32],
    pub stride: usize,
    pub offset: usize,
    pub head_dim: usize,
    /// Positions attended to: `0..seen`.
    pub seen: usize,
    pub scale: f32,
}

/// `out` (`group × head_dim`) = each head's attention over positions `0..seen`; `scores`
/// holds at least `group × seen` values of scratch.
pub fn attend(cpu: Cpu, h: &Heads<'_>, scores: &mut [f32], out: &mut [f32]) {
    let hd = h.head_dim;
    let group = h.q.len() / hd;
    assert!(out.len() >= group * hd && scores.len() >= group * h.seen);
    assert!(h.seen == 0 || h.keys.len() >= (h.seen - 1) * h.stride + h.offset + hd);
    assert!(h.seen == 0 || h.values.len() >= (h.seen - 1) * h.stride + h.offset + hd);
    #[cfg(target_arch = "x86_64")]
    if cpu != Cpu::Scalar && Cpu::Avx2.supported() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above); bounds as asserted; heads
        // of 8 × L floats.
        match hd {
            32 => return unsafe { avx2::attend::<4>(h, group, scores, out) },
            64 => return unsafe { avx2::attend::<8>(h, group, scores, out) },
            128 => return unsafe { avx2::attend::<16>(h, group, scores, out) },
            _ => {}
        }
    }
    attend_scalar(h, group, scores, out);
}

fn attend_scalar(h: &Heads<'_>, group: usize, scores: &mut [f32], out: &mut [f32]) {
    let (hd, seen) = (h.head_dim, h.seen);
    for i in 0..group {
        let q = &h.q[i * hd..][..hd];
        let s = &mut scores[i * seen..][..seen];
        let mut max = f32::NEG_INFINITY;
        for (j, sc) in s.iter_mut().enumerate() {
            let k = &h.keys[j * h.stride + h.offset..][..hd];
            *sc = q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * h.scale;
            max = max.max(*sc);
        }
        let mut sum = 0.0;
        for sc in s.iter_mut() {
            *sc = (*sc - max).exp();
            sum += *sc;
        }
        let o = &mut out[i * hd..][..hd];
        o.fill(0.0);
        for (j, sc) in s.iter().enumerate() {
            let v = &h.values[j * h.stride + h.offset..][..hd];
            for (o, v) in o.iter_mut().zip(v) {
                *o += sc / sum * v;
            }
        }
    }
}

/// Tokens per [`Tile`].
pub const TOKEN_BLOCK: usize = 16;
/// Keys per register of scores; transposed keys are padded to a multiple of it.
pub const KEY_BLOCK: usize = 16;

/// Consecutive tokens of a prompt, all the query heads of one key/value group, for
/// [`attend_tile`].
pub struct Tile<'a> {
    /// Token `t`'s heads of the group at `q[t * q_stride..][..group * head_dim]`.
    pub q: &'a [f32],
    pub q_stride: usize,
    pub tokens: usize,
    /// The first token's position: token `t` attends to positions `0..=first + t`.
    pub first: usize,
    /// The group's keys transposed: position `j`'s value `d` at `kt[d * kt_stride + j]`;
    /// `kt_stride` a multiple of [`KEY_BLOCK`] and at least `first + tokens`, the values past
    /// the last position up to the next key block finite (their scores are computed, then
    /// dropped).
    pub kt: &'a [f32],
    pub kt_stride: usize,
    /// The cache's values: position `j`'s at `values[j * stride + offset..][..head_dim]`.
    pub values: &'a [f32],
    pub stride: usize,
    pub offset: usize,
    pub head_dim: usize,
    pub group: usize,
    pub scale: f32,
}

impl Tile<'_> {
    /// Scores per row of scratch: the positions seen, rounded up to whole key blocks.
    fn row(&self) -> usize {
        (self.first + self.tokens).next_multiple_of(KEY_BLOCK)
    }

    /// Scratch [`attend_tile`] needs: `tokens × group` rows of scores.
    pub fn scratch(&self) -> usize {
        self.tokens * self.group * self.row()
    }
}

/// Whether [`attend_tile`] runs on `cpu` for heads of `head_dim` values.
pub fn tiles(cpu: Cpu, head_dim: usize) -> bool {
    cfg!(target_arch = "x86_64") && cpu == Cpu::Avx512 && [32, 64, 128].contains(&head_dim)
}

/// The tile's attention: token `t`'s heads of the group into
/// `out[t * out_stride..][..group * head_dim]`; `scores` holds [`Tile::scratch`] values.
///
/// # Safety
/// [`tiles`] must hold for `cpu` and the head size; the outputs must be the caller's alone
/// (other threads may write between the rows).
pub unsafe fn attend_tile(
    cpu: Cpu,
    tile: &Tile<'_>,
    scores: &mut [f32],
    out: *mut f32,
    out_stride: usize,
) {
    let (hd, seen) = (tile.head_dim, tile.first + tile.tokens);
    assert!(tiles(cpu, hd) && cpu.supported());
    assert!(tile.kt_stride.is_multiple_of(KEY_BLOCK) && tile.kt_stride >= seen);
    assert!(tile.kt.len() >= hd * tile.kt_stride && scores.len() >= tile.scratch());
    assert!(tile.q.len() >= (tile.tokens - 1) * tile.q_stride + tile.group * hd);
    assert!(tile.values.len() >= (seen - 1) * tile.stride + tile.offset + hd);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX-512 F (checked above, with AVX2 and FMA); bounds as asserted;
    // the outputs as the caller promises.
    unsafe {
        match hd {
            32 => avx512::attend_tile::<2, 8>(tile, scores, out, out_stride),
            64 => avx512::attend_tile::<4, 6>(tile, scores, out, out_stride),
            _ => avx512::attend_tile::<8, 3>(tile, scores, out, out_stride),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::*;
    use std::arch::x86_64::*;

    /// Query rows per pass over the transposed keys.
    const ROWS: usize = 8;

    /// `L` registers of 16 floats a head; `R` rows' outputs held in registers while the
    /// values stream past.
    ///
    /// # Safety
    /// AVX-512 F, AVX2 and FMA; bounds as [`attend_tile`](super::attend_tile) asserts.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn attend_tile<const L: usize, const R: usize>(
        t: &Tile<'_>,
        scores: &mut [f32],
        out: *mut f32,
        out_stride: usize,
    ) {
        let (hd, group, nk, kts) = (t.head_dim, t.group, t.row(), t.kt_stride);
        let rows = t.tokens * group;
        // Row r is token r / group's head r % group; it sees `first + token + 1` positions.
        let query = |r: usize| {
            t.q.as_ptr()
                .add((r / group) * t.q_stride + (r % group) * hd)
        };
        let seen = |r: usize| t.first + r / group + 1;
        let sp = scores.as_mut_ptr();
        // SAFETY (pointer reads and writes below): rows < `rows` (clamped), keys below the
        // padded `nk`, values below the last row's `seen`, as asserted by the caller.
        unsafe {
            // Scores, ROWS rows by sixteen keys at a time, up to the last row's positions.
            for r0 in (0..rows).step_by(ROWS) {
                let n = (rows - r0).min(ROWS);
                let q: [*const f32; ROWS] = std::array::from_fn(|i| query(r0 + i.min(n - 1)));
                let end = seen(r0 + n - 1).next_multiple_of(KEY_BLOCK);
                for j0 in (0..end).step_by(KEY_BLOCK) {
                    let mut acc = [_mm512_setzero_ps(); ROWS];
                    for d in 0..hd {
                        let k = _mm512_loadu_ps(t.kt.as_ptr().add(d * kts + j0));
                        for (acc, q) in acc.iter_mut().zip(&q) {
                            *acc = _mm512_fmadd_ps(_mm512_set1_ps(*q.add(d)), k, *acc);
                        }
                    }
                    let scale = _mm512_set1_ps(t.scale);
                    for (i, acc) in acc.iter().enumerate().take(n) {
                        _mm512_storeu_ps(sp.add((r0 + i) * nk + j0), _mm512_mul_ps(*acc, scale));
                    }
                }
            }
            // Each row's softmax over what it sees, normalised; zero past it.
            for r in 0..rows {
                let row = std::slice::from_raw_parts_mut(sp.add(r * nk), nk);
                let (seen_r, all) = (seen(r), t.first + t.tokens);
                let inv = 1.0 / super::avx2::softmax(&mut row[..seen_r]);
                for p in &mut row[..seen_r] {
                    *p *= inv;
                }
                row[seen_r..all].fill(0.0);
            }
            // Outputs, R rows at a time, each value row loaded once for them.
            let vp = t.values.as_ptr().add(t.offset);
            for r0 in (0..rows).step_by(R) {
                let n = (rows - r0).min(R);
                let p: [*const f32; R] =
                    std::array::from_fn(|i| sp.add((r0 + i.min(n - 1)) * nk).cast_const());
                let mut acc = [[_mm512_setzero_ps(); L]; R];
                for j in 0..seen(r0 + n - 1) {
                    let v = vp.add(j * t.stride);
                    let v: [__m512; L] = std::array::from_fn(|l| _mm512_loadu_ps(v.add(16 * l)));
                    for (acc, p) in acc.iter_mut().zip(&p) {
                        let w = _mm512_set1_ps(*p.add(j));
                        for (acc, v) in acc.iter_mut().zip(&v) {
                            *acc = _mm512_fmadd_ps(w, *v, *acc);
                        }
                    }
                }
                for (i, acc) in acc.iter().enumerate().take(n) {
                    let r = r0 + i;
                    let o = out.add((r / group) * out_stride + (r % group) * hd);
                    for (l, acc) in acc.iter().enumerate() {
                        _mm512_storeu_ps(o.add(16 * l), *acc);
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX2 and FMA; `h.head_dim == 8 * L`; buffers as `attend` asserts.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn attend<const L: usize>(
        h: &Heads<'_>,
        group: usize,
        scores: &mut [f32],
        out: &mut [f32],
    ) {
        let (hd, seen) = (h.head_dim, h.seen);
        // SAFETY (pointer reads below): position j < seen's key and value lie within the
        // cache slices, head i < group's query and output within theirs (asserted by the
        // caller), and every head is `lanes` registers of 8 floats.
        unsafe {
            let kp = h.keys.as_ptr().add(h.offset);
            let vp = h.values.as_ptr().add(h.offset);
            // Scores: each key read once for every head of the group, four heads at a time.
            for i0 in (0..group).step_by(4) {
                let n = (group - i0).min(4);
                for j in 0..seen {
                    let k = kp.add(j * h.stride);
                    let mut acc = [_mm256_setzero_ps(); 4];
                    for l in 0..L {
                        let kv = _mm256_loadu_ps(k.add(8 * l));
                        for (i, acc) in acc.iter_mut().enumerate().take(n) {
                            let q = _mm256_loadu_ps(h.q.as_ptr().add((i0 + i) * hd + 8 * l));
                            *acc = _mm256_fmadd_ps(q, kv, *acc);
                        }
                    }
                    // Four horizontal sums at once: lane i of the result is head i0 + i's.
                    let s01 = _mm256_hadd_ps(acc[0], acc[1]);
                    let s23 = _mm256_hadd_ps(acc[2], acc[3]);
                    let s = _mm256_hadd_ps(s01, s23);
                    let s = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
                    let mut v = [0f32; 4];
                    _mm_storeu_ps(v.as_mut_ptr(), s);
                    for (i, v) in v.iter().enumerate().take(n) {
                        scores[(i0 + i) * seen + j] = v * h.scale;
                    }
                }
            }
            for i in 0..group {
                let s = &mut scores[i * seen..][..seen];
                let inv = _mm256_set1_ps(1.0 / softmax(s));
                // The weighted values, up to 64 of the head's outputs held in registers.
                for l0 in (0..L).step_by(8) {
                    let mut acc = [_mm256_setzero_ps(); 8];
                    let w = (L - l0).min(8);
                    for (j, &p) in s.iter().enumerate() {
                        let v = vp.add(j * h.stride + 8 * l0);
                        let p = _mm256_set1_ps(p);
                        for (l, acc) in acc.iter_mut().enumerate().take(w) {
                            *acc = _mm256_fmadd_ps(p, _mm256_loadu_ps(v.add(8 * l)), *acc);
                        }
                    }
                    for (l, acc) in acc.iter().enumerate().take(w) {
                        let o = out.as_mut_ptr().add(i * hd + 8 * (l0 + l));
                        _mm256_storeu_ps(o, _mm256_mul_ps(*acc, inv));
                    }
                }
            }
        }
    }

    /// `s = exp(s - max s)` in place; returns the sum.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn softmax(s: &mut [f32]) -> f32 {
        let max = s.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        let n8 = s.len() / 8 * 8;
        let vmax = _mm256_set1_ps(max);
        let mut sum = _mm256_setzero_ps();
        // SAFETY: i + 8 <= n8 <= s.len() on every access.
        unsafe {
            for i in (0..n8).step_by(8) {
                let p = s.as_mut_ptr().add(i);
                let e = exp(_mm256_sub_ps(_mm256_loadu_ps(p), vmax));
                _mm256_storeu_ps(p, e);
                sum = _mm256_add_ps(sum, e);
            }
        }
        let mut v = [0f32; 8];
        // SAFETY: eight floats into eight.
        unsafe { _mm256_storeu_ps(v.as_mut_ptr(), sum) };
        let mut total: f32 = v.iter().sum();
        for x in &mut s[n8..] {
            *x = (*x - max).exp();
            total += *x;
        }
        total
    }

    /// `e^x` for `x <= 0`, within 2 ulp: `2^n · e^r` with `n = round(x / ln 2)`, `|r| <= ln 2 / 2`
    /// (ln 2 split in two for an exact reduction) and a degree-7 polynomial for `e^r`; under
    /// -87, 0.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn exp(x0: __m256) -> __m256 {
        let x = _mm256_max_ps(x0, _mm256_set1_ps(-87.0));
        let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)),
        );
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_145_75), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428_606_8e-6), r);
        let mut p = _mm256_set1_ps(1.0 / 5040.0);
        for c in [
            1.0 / 720.0,
            1.0 / 120.0,
            1.0 / 24.0,
            1.0 / 6.0,
            0.5,
            1.0,
            1.0,
        ] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let scale = _mm256_slli_epi32::<23>(_mm256_add_epi32(
            _mm256_cvtps_epi32(n),
            _mm256_set1_epi32(127),
        ));
        let e = _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
        // Under -87 (clamped above, 2^n near the smallest normal): exactly 0.
        let tiny = _mm256_cmp_ps::<_CMP_LT_OQ>(x0, _mm256_set1_ps(-87.0));
        _mm256_andnot_ps(tiny, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::quant::tests::values;

    #[test]
    fn every_path_matches_scalar_attention() {
        // Qwen2.5-0.5B's shape (7 heads a group), a group of 1, a 4-lane head, long caches.
        for (group, hd, seen, kv_heads) in [
            (7, 64, 1, 2),
            (7, 64, 300, 2),
            (1, 32, 13, 3),
            (5, 128, 77, 1),
        ] {
            let stride = kv_heads * hd;
            let keys = values(seen * stride, 1);
            let vals = values(seen * stride, 2);
            let q: Vec<f32> = values(group * hd, 3).iter().map(|x| 4.0 * x).collect();
            let heads = Heads {
                q: &q,
                keys: &keys,
                values: &vals,
                stride,
                offset: (kv_heads - 1) * hd,
                head_dim: hd,
                seen,
                scale: 1.0 / (hd as f32).sqrt(),
            };
            let mut scores = vec![0f32; group * seen];
            let mut want = vec![0f32; group * hd];
            attend(Cpu::Scalar, &heads, &mut scores, &mut want);
            for cpu in Cpu::ALL.into_iter().filter(|c| c.supported()) {
                let mut got = vec![f32::NAN; group * hd];
                attend(cpu, &heads, &mut scores, &mut got);
                for (a, b) in want.iter().zip(&got) {
                    assert!(
                        (a - b).abs() <= 1e-5 * (1.0 + a.abs()),
                        "{}: {a} vs {b}",
                        cpu.name()
                    );
                }
            }
        }
    }

    #[test]
    fn tiles_match_the_scalar_attention_token_by_token() {
        if !tiles(Cpu::Avx512, 64) || !Cpu::Avx512.supported() {
            return;
        }
        // (group, head size, first position, tokens, key/value heads): Qwen2.5's two shapes,
        // whole and partial tiles, row counts that fill no pass, a first tile.
        for (group, hd, first, tokens, kv_heads) in [
            (7, 64, 0, 16, 2),
            (7, 64, 37, 5, 2),
            (6, 128, 3, 16, 2),
            (6, 128, 200, 9, 2),
            (1, 32, 0, 1, 3),
            (5, 32, 100, 11, 1),
            (3, 64, 16, 14, 3),
        ] {
            for g in 0..kv_heads {
                let seen = first + tokens;
                let stride = kv_heads * hd;
                let q_stride = kv_heads * group * hd + 3;
                let keys = values(seen * stride, 1);
                let vals = values(seen * stride, 2);
                let q: Vec<f32> = values(tokens * q_stride, 3)
                    .iter()
                    .map(|x| 4.0 * x)
                    .collect();
                // The group's keys transposed, padded past a multiple of the key block.
                let nk = seen.next_multiple_of(KEY_BLOCK) + KEY_BLOCK;
                let mut kt = vec![0f32; hd * nk];
                for d in 0..hd {
                    for j in 0..seen {
                        kt[d * nk + j] = keys[j * stride + g * hd + d];
                    }
                }
                let tile = Tile {
                    q: &q[g * group * hd..],
                    q_stride,
                    tokens,
                    first,
                    kt: &kt,
                    kt_stride: nk,
                    values: &vals,
                    stride,
                    offset: g * hd,
                    head_dim: hd,
                    group,
                    scale: 1.0 / (hd as f32).sqrt(),
                };
                let out_stride = group * hd + 5;
                let mut got = vec![f32::NAN; tokens * out_stride];
                let mut scores = vec![f32::NAN; tile.scratch()];
                // SAFETY: the CPU tiles (checked above); `got` is this test's alone.
                unsafe {
                    attend_tile(
                        Cpu::Avx512,
                        &tile,
                        &mut scores,
                        got.as_mut_ptr(),
                        out_stride,
                    )
                };
                let mut scratch = vec![0f32; group * seen];
                for t in 0..tokens {
                    let heads = Heads {
                        q: &q[t * q_stride + g * group * hd..][..group * hd],
                        keys: &keys,
                        values: &vals,
                        stride,
                        offset: g * hd,
                        head_dim: hd,
                        seen: first + t + 1,
                        scale: tile.scale,
                    };
                    let mut want = vec![0f32; group * hd];
                    attend(Cpu::Scalar, &heads, &mut scratch, &mut want);
                    let (row, gap) = got[t * out_stride..][..out_stride].split_at(group * hd);
                    for (a, b) in want.iter().zip(row) {
                        assert!(
                            (a - b).abs() <= 1e-5 * (1.0 + a.abs()),
                            "group {group}, hd {hd}, token {t}: {a} vs {b}"
                        );
                    }
                    assert!(gap.iter().all(|x| x.is_nan()), "only the heads are written");
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vector_exp_is_within_two_ulp() {
        if !Cpu::Avx2.supported() {
            return;
        }
        let mut x = -100.0f32;
        while x <= 0.0 {
            let xs = [
                x,
                x * 0.5,
                x * 0.25,
                x * 0.125,
                x * 0.01,
                x * 0.001,
                x - 0.3,
                -0.0,
            ];
            let mut got = [0f32; 8];
            // SAFETY: the CPU has AVX2 and FMA.
            unsafe {
                use std::arch::x86_64::*;
                let e = avx2::exp(_mm256_loadu_ps(xs.as_ptr()));
                _mm256_storeu_ps(got.as_mut_ptr(), e);
            }
            for (x, g) in xs.iter().zip(got) {
                let want = if *x < -87.0 { 0.0 } else { x.exp() };
                let ulp = f32::EPSILON * want.max(f32::MIN_POSITIVE);
                assert!((g - want).abs() <= 2.0 * ulp, "exp({x}) = {g}, not {want}");
            }
            x += 0.37;
        }
    }
}
