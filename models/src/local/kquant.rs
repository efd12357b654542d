//! K-quant matrices at the file's widths, for one-token passes. A generated token reads every
//! weight once for itself, so its pass is bound by the bytes it reads: here a Q4_K matrix costs
//! 4.6 bits a weight and a Q6_K one 6.56 (the file's 4.5 and 6.56), where the 32-value blocks
//! of [`super::quant`] cost 6 (Q4_K) or 8.5 (Q6_K read as Q8_0). Rows of super-blocks are kept
//! one after another: Q6_K's as stored, Q4_K's with their scales unpacked and their nibbles
//! reordered once at load ([`q4_k_kept`]). Each row is one dot product with the token's
//! activations quantized to 8 bits per 256 values ([`KActs`]), integer sums within a
//! super-block and one float multiply after it. One kernel per instruction set: AVX2
//! (`kquant/avx2.rs`, which every x86 set here includes: the pass is bound by memory, and a
//! 512-bit VNNI kernel measured no faster) and a scalar twin of the same integer arithmetic.

use super::cpu::Cpu;
use super::quant::{f16_to_f32, nearest, Q4_K_BYTES, QK_K};

#[cfg(target_arch = "x86_64")]
mod avx2;

/// Bytes of a GGUF Q6_K super-block (128 bytes of low nibbles, 64 of high bit pairs, 16
/// signed 8-bit scales, an f16 scale).
pub const Q6_K_BYTES: usize = 210;
/// Bytes of a Q4_K super-block as kept ([`q4_k_kept`]).
pub const Q4_K_KEPT: usize = 148;
/// Values per sum of activations kept (Q6_K's sub-block).
const SUM_VALUES: usize = 16;

/// The block types kept as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KKind {
    Q4K,
    Q6K,
}

impl KKind {
    /// Bytes of a super-block as kept.
    fn bytes(self) -> usize {
        match self {
            KKind::Q4K => Q4_K_KEPT,
            KKind::Q6K => Q6_K_BYTES,
        }
    }
}

/// One token's activations, 8 bits per value with one scale per 256 values, and the sums of
/// every 16 and every 32 quantized values (what the weights' offsets multiply: Q6_K's per 16,
/// Q4_K's per 32).
#[derive(Default)]
pub struct KActs {
    cols: usize,
    scales: Vec<f32>,
    quants: Vec<i8>,
    /// The same values in the order of the nibbles of Q4_K super-blocks as kept.
    quants_q4k: Vec<i8>,
    sums: Vec<i16>,
    sums32: Vec<i16>,
}

impl KActs {
    /// Quantizes `x` (a whole number of super-blocks): scale `amax / 127`, values rounded to
    /// nearest.
    pub fn quantize(&mut self, x: &[f32]) {
        assert_eq!(
            x.len() % QK_K,
            0,
            "{} values are not whole super-blocks",
            x.len()
        );
        self.cols = x.len();
        self.scales.resize(x.len() / QK_K, 0.0);
        self.quants.resize(x.len(), 0);
        self.sums.resize(x.len() / SUM_VALUES, 0);
        self.sums32.resize(x.len() / (2 * SUM_VALUES), 0);
        for ((block, d), q) in x
            .chunks_exact(QK_K)
            .zip(&mut self.scales)
            .zip(self.quants.chunks_exact_mut(QK_K))
        {
            let amax = block.iter().fold(0f32, |m, x| m.max(x.abs()));
            let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
            *d = amax / 127.0;
            for (q, &x) in q.iter_mut().zip(block) {
                *q = nearest(x * id);
            }
        }
        for (s, q) in self
            .sums
            .iter_mut()
            .zip(self.quants.chunks_exact(SUM_VALUES))
        {
            *s = q.iter().map(|&q| q as i16).sum();
        }
        for (s, pair) in self.sums32.iter_mut().zip(self.sums.chunks_exact(2)) {
            *s = pair[0] + pair[1];
        }
        self.quants_q4k.resize(x.len(), 0);
        for (out, q) in self
            .quants_q4k
            .chunks_exact_mut(QK_K)
            .zip(self.quants.chunks_exact(QK_K))
        {
            for (o, &v) in out.iter_mut().zip(&Q4_K_ORDER) {
                *o = q[v as usize];
            }
        }
    }

    /// Super-block `s`'s scale, 256 values and 16 sums.
    #[inline]
    fn block(&self, s: usize) -> (f32, &[i8], &[i16]) {
        (
            self.scales[s],
            &self.quants[s * QK_K..][..QK_K],
            &self.sums[s * QK_K / SUM_VALUES..][..QK_K / SUM_VALUES],
        )
    }
}

/// The 6-bit scales and minima of a Q4_K super-block's eight 32-value sub-blocks, from the
/// 12 bytes GGUF packs them in.
pub fn q4_k_scales(packed: &[u8]) -> ([u8; 8], [u8; 8]) {
    let (mut sc, mut m) = ([0u8; 8], [0u8; 8]);
    for j in 0..4 {
        sc[j] = packed[j] & 63;
        m[j] = packed[j + 4] & 63;
        sc[j + 4] = (packed[j + 8] & 0xf) | ((packed[j] >> 6) << 4);
        m[j + 4] = (packed[j + 8] >> 4) | ((packed[j + 4] >> 6) << 4);
    }
    (sc, m)
}

/// Which of a super-block's 256 values the low (`high` 0) or high nibble of byte `b` of the
/// 32-byte group `g` of a kept Q4_K super-block holds: values `8g + b % 4` (low) and
/// `8g + 4 + b % 4` (high) of sub-block `b / 4`. So one 32-bit lane of a register holds values
/// of one sub-block only, and one vector of scales serves every register of a super-block.
const fn q4_k_value(g: usize, high: usize, b: usize) -> usize {
    32 * (b / 4) + 8 * g + 4 * high + b % 4
}

/// Where the activation that nibble multiplies sits among [`KActs`]' reordered values: for
/// each group, the low nibbles' 32 activations, then the high ones'.
const fn q4_k_at(g: usize, high: usize, b: usize) -> usize {
    64 * g + 32 * high + b
}

/// [`q4_k_value`] at each [`q4_k_at`].
const Q4_K_ORDER: [u8; QK_K] = {
    let mut order = [0u8; QK_K];
    let mut at = 0;
    while at < QK_K {
        let (g, high, b) = (at / 64, (at / 32) % 2, at % 32);
        order[q4_k_at(g, high, b)] = q4_k_value(g, high, b) as u8;
        at += 1;
    }
    order
};

/// A GGUF Q4_K super-block as kept: its f16 scale and minimum as stored, its eight 6-bit
/// scales and eight minima a byte each, then its nibbles in the order of [`q4_k_value`].
fn q4_k_kept(sb: &[u8], out: &mut [u8]) {
    let (sc, m) = q4_k_scales(&sb[4..16]);
    out[..4].copy_from_slice(&sb[..4]);
    out[4..12].copy_from_slice(&sc);
    out[12..20].copy_from_slice(&m);
    // GGUF's order: 32 bytes hold 64 values, the low nibbles the first 32.
    let value = |v: usize| {
        let byte = sb[16 + 32 * (v / 64) + v % 32];
        if v % 64 < 32 {
            byte & 0xf
        } else {
            byte >> 4
        }
    };
    for (b, o) in out[20..].iter_mut().enumerate() {
        let (group, byte) = (b / 32, b % 32);
        let lo = value(q4_k_value(group, 0, byte));
        let hi = value(q4_k_value(group, 1, byte));
        *o = lo | (hi << 4);
    }
}

fn f16_at(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Matrices of K-quant rows stacked in order (a projection's parts may differ in type).
#[derive(Clone)]
pub struct KMatrix {
    pub rows: usize,
    pub cols: usize,
    parts: Vec<Part>,
}

#[derive(Clone)]
struct Part {
    kind: KKind,
    rows: usize,
    /// Super-blocks as stored, row after row.
    data: Vec<u8>,
}

impl KMatrix {
    /// An empty stack of rows of `cols` values (a whole number of super-blocks).
    pub fn new(cols: usize) -> Self {
        assert_eq!(
            cols % QK_K,
            0,
            "rows of {cols} values are not whole super-blocks"
        );
        Self {
            rows: 0,
            cols,
            parts: Vec::new(),
        }
    }

    /// Stacks `raw`'s rows (`kind`'s GGUF super-blocks, row after row) under the others.
    pub fn push(&mut self, kind: KKind, raw: Vec<u8>) {
        let raw = match kind {
            KKind::Q6K => raw,
            KKind::Q4K => {
                let mut kept = vec![0u8; raw.len() / Q4_K_BYTES * Q4_K_KEPT];
                for (sb, out) in raw
                    .chunks_exact(Q4_K_BYTES)
                    .zip(kept.chunks_exact_mut(Q4_K_KEPT))
                {
                    q4_k_kept(sb, out);
                }
                kept
            }
        };
        let row_bytes = self.cols / QK_K * kind.bytes();
        assert_eq!(raw.len() % row_bytes, 0, "not whole rows of {kind:?}");
        let rows = raw.len() / row_bytes;
        self.rows += rows;
        self.parts.push(Part {
            kind,
            rows,
            data: raw,
        });
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.parts.iter().map(|p| p.data.len()).sum()
    }

    /// The rows share `i` of `n` threads reads: contiguous, with as many bytes as the others
    /// within a row (parts of different types cost different bytes a row).
    pub fn share(&self, i: usize, n: usize) -> std::ops::Range<usize> {
        let total = self.bytes();
        let row_at = |target: usize| {
            let (mut base, mut bytes) = (0, 0);
            for part in &self.parts {
                if bytes + part.data.len() >= target {
                    let row_bytes = part.data.len() / part.rows.max(1);
                    return base + (target - bytes).div_ceil(row_bytes.max(1)).min(part.rows);
                }
                base += part.rows;
                bytes += part.data.len();
            }
            self.rows
        };
        row_at(total * i / n)..row_at(total * (i + 1) / n)
    }

    /// `out[r] = row r · a` for rows `r0..r1`.
    ///
    /// # Safety
    /// `out` must hold `r1` values, and no other thread may write `out[r0..r1]` meanwhile.
    pub unsafe fn matvec(&self, cpu: Cpu, a: &KActs, r0: usize, r1: usize, out: *mut f32) {
        assert_eq!(a.cols, self.cols);
        assert!(r0 <= r1 && r1 <= self.rows);
        assert!(
            cpu.supported(),
            "{} kernels on a CPU without them",
            cpu.name()
        );
        let mut base = 0;
        for part in &self.parts {
            let row_bytes = self.cols / QK_K * part.kind.bytes();
            for r in r0.max(base)..r1.min(base + part.rows) {
                let row = &part.data[(r - base) * row_bytes..][..row_bytes];
                // SAFETY: the CPU has the features (checked above).
                let dot = unsafe { dot(cpu, part.kind, row, a) };
                // SAFETY: r < r1, within `out` by the contract.
                unsafe { *out.add(r) = dot };
            }
            base += part.rows;
        }
    }
}

/// One row's dot product on `cpu`'s kernel.
///
/// # Safety
/// `cpu` must be supported.
unsafe fn dot(cpu: Cpu, kind: KKind, row: &[u8], a: &KActs) -> f32 {
    match (cpu, kind) {
        (Cpu::Scalar, KKind::Q4K) => dot_q4_k(row, a),
        (Cpu::Scalar, KKind::Q6K) => dot_q6_k(row, a),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: every set but the scalar one has AVX2, FMA and F16C (`Cpu::supported`).
        (_, KKind::Q4K) => unsafe { avx2::dot_q4_k(row, a) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (_, KKind::Q6K) => unsafe { avx2::dot_q6_k(row, a) },
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("only the scalar kernels off x86"),
    }
}

/// A Q4_K row (kept) against `a`: sub-block `j`'s value `i` is `d · sc_j · q - dmin · m_j`.
fn dot_q4_k(row: &[u8], a: &KActs) -> f32 {
    let mut sum = 0f32;
    for (s, sb) in row.chunks_exact(Q4_K_KEPT).enumerate() {
        let (ad, _, sums) = a.block(s);
        let aq = &a.quants_q4k[s * QK_K..][..QK_K];
        let (sc, m) = (&sb[4..12], &sb[12..20]);
        let mut dots = 0i32;
        // Each 4 bytes hold 8 values of one sub-block.
        for (b, &q) in sb[20..].iter().enumerate() {
            let (group, byte) = (b / 32, b % 32);
            let lo = (q & 0xf) as i32 * aq[q4_k_at(group, 0, byte)] as i32;
            let hi = (q >> 4) as i32 * aq[q4_k_at(group, 1, byte)] as i32;
            dots += sc[byte / 4] as i32 * (lo + hi);
        }
        let mins: i32 = (0..8)
            .map(|j| m[j] as i32 * (sums[2 * j] as i32 + sums[2 * j + 1] as i32))
            .sum();
        sum += ad * (f16_at(sb, 0) * dots as f32 - f16_at(sb, 2) * mins as f32);
    }
    sum
}

/// The 6-bit values of a Q6_K super-block, 0..64, in order (value `d · sc · (q - 32)`).
fn q6_k_values(sb: &[u8]) -> [u8; QK_K] {
    let mut q = [0u8; QK_K];
    for half in 0..2 {
        let ql = &sb[64 * half..][..64];
        let qh = &sb[128 + 32 * half..][..32];
        let q = &mut q[128 * half..][..128];
        for l in 0..32 {
            q[l] = (ql[l] & 0xf) | ((qh[l] & 3) << 4);
            q[l + 32] = (ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4);
            q[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
            q[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
    }
    q
}

/// A Q6_K row against `a`: 16-value sub-block `k`'s values are `d · sc_k · (q - 32)`.
fn dot_q6_k(row: &[u8], a: &KActs) -> f32 {
    let mut sum = 0f32;
    for (s, sb) in row.chunks_exact(Q6_K_BYTES).enumerate() {
        let (ad, aq, sums) = a.block(s);
        let q = q6_k_values(sb);
        let mut dots = 0i32;
        for k in 0..QK_K / SUM_VALUES {
            let sc = sb[192 + k] as i8 as i32;
            let part: i32 = (k * 16..k * 16 + 16)
                .map(|i| q[i] as i32 * aq[i] as i32)
                .sum();
            dots += sc * (part - 32 * sums[k] as i32);
        }
        sum += ad * f16_at(sb, 208) * dots as f32;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::quant::tests::values;
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    /// `rows × cols` pseudo-random values quantized by candle to `dtype`: the blocks and
    /// candle's dequantized values.
    fn quantized(dtype: GgmlDType, rows: usize, cols: usize, seed: u32) -> (Vec<u8>, Vec<f32>) {
        let device = Device::Cpu;
        let v = values(rows * cols, seed);
        let source = Tensor::new(v.as_slice(), &device)
            .and_then(|t| t.reshape((rows, cols)))
            .unwrap();
        let q = QTensor::quantize(&source, dtype).unwrap();
        let want = q
            .dequantize(&device)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1())
            .unwrap();
        (q.data().unwrap().into_owned(), want)
    }

    fn kernels() -> Vec<Cpu> {
        Cpu::ALL.into_iter().filter(|c| c.supported()).collect()
    }

    /// Every kernel the CPU has against the scalar one's `scalar`, within float rounding.
    fn assert_kernels_agree(w: &KMatrix, a: &KActs, scalar: &[f32]) {
        for cpu in kernels() {
            let fast = product(cpu, w, a);
            for (s, f) in scalar.iter().zip(&fast) {
                let close = (s - f).abs() <= 1e-5 * (1.0 + s.abs());
                assert!(close, "{}: {s} vs {f}", cpu.name());
            }
        }
    }

    fn product(cpu: Cpu, w: &KMatrix, a: &KActs) -> Vec<f32> {
        let mut out = vec![f32::NAN; w.rows];
        let half = w.rows / 2;
        for (r0, r1) in [(0, half), (half, w.rows)] {
            unsafe { w.matvec(cpu, a, r0, r1, out.as_mut_ptr()) };
        }
        out
    }

    /// A stack of a Q4_K and a Q6_K part: every kernel against f32 products with candle's
    /// dequantized weights and the dequantized activations, and against the scalar kernel.
    #[test]
    fn rows_match_candle_and_every_kernel_matches_scalar() {
        for (rows4, rows6, cols) in [(3, 5, 256), (17, 2, 512), (1, 9, 1536)] {
            let (raw4, want4) = quantized(GgmlDType::Q4K, rows4, cols, 3);
            let (raw6, want6) = quantized(GgmlDType::Q6K, rows6, cols, 4);
            let mut w = KMatrix::new(cols);
            w.push(KKind::Q4K, raw4);
            w.push(KKind::Q6K, raw6);
            assert_eq!(w.rows, rows4 + rows6);
            let weights: Vec<f32> = want4.into_iter().chain(want6).collect();
            let mut a = KActs::default();
            a.quantize(&values(cols, 5));
            let x: Vec<f32> = (0..cols)
                .map(|i| a.scales[i / QK_K] * a.quants[i] as f32)
                .collect();
            let scalar = product(Cpu::Scalar, &w, &a);
            for (r, s) in scalar.iter().enumerate() {
                let want: f32 = weights[r * cols..][..cols]
                    .iter()
                    .zip(&x)
                    .map(|(w, x)| w * x)
                    .sum();
                assert!(
                    (s - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "row {r}: {s} vs {want}"
                );
            }
            assert_kernels_agree(&w, &a, &scalar);
        }
    }

    #[test]
    fn shares_cover_the_rows_and_balance_bytes() {
        let cols = 256;
        let mut w = KMatrix::new(cols);
        w.push(KKind::Q4K, vec![0; 30 * Q4_K_BYTES]);
        w.push(KKind::Q6K, vec![0; 10 * Q6_K_BYTES]);
        for n in 1..5 {
            let shares: Vec<_> = (0..n).map(|i| w.share(i, n)).collect();
            assert_eq!(shares[0].start, 0);
            assert_eq!(shares[n - 1].end, 40);
            for pair in shares.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
            }
        }
        // 30 rows of 148 bytes and 10 of 210: half the bytes (3,270) end in row 23.
        assert_eq!(w.share(0, 2), 0..23);
        assert_eq!(w.share(1, 2), 23..40);
    }

    /// The largest values and scales of both types against activations of the largest size
    /// of either sign: the kernels' 16- and 32-bit sums must not overflow.
    #[test]
    fn largest_values_agree_on_every_kernel() {
        let cols = 512;
        let mut q4 = [0xffu8; Q4_K_BYTES];
        q4[..2].copy_from_slice(&crate::local::quant::f32_to_f16(0.01).to_le_bytes());
        q4[2..4].copy_from_slice(&crate::local::quant::f32_to_f16(0.02).to_le_bytes());
        let mut q6 = [0xffu8; Q6_K_BYTES];
        q6[192..208].fill(0x80); // scale -128
        q6[208..].copy_from_slice(&crate::local::quant::f32_to_f16(0.01).to_le_bytes());
        let mut q6_low = [0u8; Q6_K_BYTES]; // every value 0, i.e. -32
        q6_low[192..208].fill(0x7f);
        q6_low[208..].copy_from_slice(&crate::local::quant::f32_to_f16(0.01).to_le_bytes());
        let mut w = KMatrix::new(cols);
        w.push(KKind::Q4K, q4.repeat(2 * cols / QK_K));
        w.push(KKind::Q6K, q6.repeat(cols / QK_K));
        w.push(KKind::Q6K, q6_low.repeat(cols / QK_K));
        for sign in [1.0, -1.0] {
            let mut a = KActs::default();
            a.quantize(&vec![sign * 3.0; cols]);
            assert!(a.quants.iter().all(|&q| q as f32 == sign * 127.0));
            let scalar = product(Cpu::Scalar, &w, &a);
            // Q4_K: 63 · 15 · 127 · 256 · 0.01 · d_a per super-block, less 63 · 0.02 · 127 · 256 · d_a.
            let ad = 3.0 / 127.0;
            let q4_want = 2.0 * ad * sign * 127.0 * 256.0 * (0.01 * 63.0 * 15.0 - 0.02 * 63.0);
            assert!((scalar[0] - q4_want).abs() <= 1e-3 * q4_want.abs());
            assert_kernels_agree(&w, &a, &scalar);
        }
    }
}
