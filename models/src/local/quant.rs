//! Quantized weights and activations and the integer matrix products on them: weights in
//! 32-value blocks (8-, 5- or 4-bit, a scale and an offset each) with rows interleaved four at
//! a time so that one pass over the weights serves several tokens, or repacked into 16-row
//! [`Panel`]s (every matrix for the VNNI kernels, 4- and 5-bit ones for AVX2); activations in
//! Q8_0. One kernel per instruction set ([`Cpu`]): AVX-512 VNNI (`avx512.rs`), AVX-VNNI
//! (`avxvnni.rs`), AVX2 (`avx2.rs`), and a scalar twin of the same arithmetic that the others
//! are tested against.

pub use super::cpu::Cpu;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod avxvnni;

/// Values per block, as in GGUF's Q8_0.
pub const QK: usize = 32;
/// Weight rows interleaved together: the kernels produce four outputs per token at a time.
pub const GROUP: usize = 4;
/// Bytes of a GGUF Q8_0 block (f16 scale, 32 signed bytes).
pub const Q8_0_BYTES: usize = 34;
/// Bytes of a GGUF Q5_0 block (f16 scale, 32 high bits, 32 low nibbles).
pub const Q5_0_BYTES: usize = 22;
/// Bytes of a GGUF Q4_1 block (f16 scale, f16 minimum, 32 nibbles).
pub const Q4_1_BYTES: usize = 20;
/// Values of a GGUF K-quant super-block.
pub const QK_K: usize = 256;
/// Bytes of a GGUF Q4_K super-block (f16 scale and minimum, 8 × 6-bit sub-scales and
/// sub-minima, 256 nibbles).
pub const Q4_K_BYTES: usize = 144;
/// Bytes of one 32-value block of [`q4_k_blocks`]' output (f32 scale, f32 offset, nibbles).
const Q4F_BYTES: usize = 24;

/// How a matrix stores its blocks. Within one block of one group of rows:
/// - `Q8`: four f16 scales, then four rows of 32 signed bytes; value `d * q`.
/// - `Q4`: four f16 scales, four f16 offsets, four rows of 16 bytes of nibbles (values
///   0..16 first, then 16..32, as in GGUF); value `d * q + m`. From Q4_1, exactly.
/// - `Q5`: as `Q4` with a fifth bit per value, four u32 after the offsets. From Q5_0
///   (offset `-16 d`), exactly.
/// - `Q4F`: as `Q4` with f32 scales and offsets. From Q4_K (`d · sc`, `-dmin · m` per 32
///   values: an f16 times a 6-bit integer, exact in f32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Q8,
    Q4,
    Q5,
    Q4F,
}

impl Kind {
    fn group_block(self) -> usize {
        match self {
            Kind::Q8 => 2 * GROUP + GROUP * QK,
            Kind::Q4 => 4 * GROUP + GROUP * QK / 2,
            Kind::Q5 | Kind::Q4F => 8 * GROUP + GROUP * QK / 2,
        }
    }

    /// Whether `cpu`'s kernels read matrices of this kind from [`Panel`]s: the VNNI ones
    /// read every kind so; the AVX2 one the 4- and 5-bit kinds, whose products fit its 16-bit
    /// sums.
    pub fn in_panels(self, cpu: Cpu) -> bool {
        cpu.panels() || (cpu == Cpu::Avx2 && self != Kind::Q8)
    }

    /// Where the rows' values start in a group block.
    fn quants(self) -> usize {
        match self {
            Kind::Q8 => 2 * GROUP,
            Kind::Q4 => 4 * GROUP,
            Kind::Q5 | Kind::Q4F => 8 * GROUP,
        }
    }
}

/// A weight matrix `rows × cols` (outputs × inputs) in blocks of 32 values, rows
/// interleaved by [`GROUP`] (the last group padded with zero rows).
#[derive(Clone)]
pub struct QMatrix {
    pub rows: usize,
    pub cols: usize,
    pub kind: Kind,
    /// Group blocks, group after group; empty once repacked into `panel` without
    /// [`QMatrix::row`] access kept.
    data: Vec<u8>,
    /// The same weights for the VNNI kernels, when the chosen [`Cpu`] has them.
    panel: Option<Panel>,
}

impl QMatrix {
    /// Lays out GGUF blocks of `block_bytes` each, row after row: `fill(src, dst, lane)`
    /// copies one source block into its place in a group block.
    fn build(
        rows: usize,
        cols: usize,
        kind: Kind,
        raw: &[u8],
        block_bytes: usize,
        fill: impl Fn(&[u8], &mut [u8], usize),
    ) -> Self {
        assert_eq!(cols % QK, 0, "rows of {cols} values are not whole blocks");
        let nb = cols / QK;
        assert_eq!(raw.len(), rows * nb * block_bytes);
        let gb = kind.group_block();
        let mut data = vec![0u8; rows.div_ceil(GROUP) * nb * gb];
        for r in 0..rows {
            let (g, lane) = (r / GROUP, r % GROUP);
            for b in 0..nb {
                let src = &raw[(r * nb + b) * block_bytes..][..block_bytes];
                fill(src, &mut data[(g * nb + b) * gb..][..gb], lane);
            }
        }
        Self {
            rows,
            cols,
            kind,
            data,
            panel: None,
        }
    }

    /// The matrix as `cpu`'s kernels read it: repacked into panels where they read its kind
    /// so ([`Kind::in_panels`]), the group blocks kept only with `keep_rows` (for
    /// [`QMatrix::row`], the embeddings).
    pub fn prepared(mut self, cpu: Cpu, keep_rows: bool) -> Self {
        if self.kind.in_panels(cpu) {
            self.panel = Some(Panel::new(&self));
            if !keep_rows {
                self.data = Vec::new();
            }
        }
        self
    }

    /// From GGUF Q8_0 blocks, row after row.
    pub fn from_q8_0(rows: usize, cols: usize, raw: &[u8]) -> Self {
        Self::build(rows, cols, Kind::Q8, raw, Q8_0_BYTES, |src, dst, lane| {
            dst[2 * lane..2 * lane + 2].copy_from_slice(&src[..2]);
            dst[2 * GROUP + lane * QK..][..QK].copy_from_slice(&src[2..]);
        })
    }

    /// From GGUF Q4_1 blocks, row after row. Exact, but unused by the loader for now: see
    /// `Tensors::stacked`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn from_q4_1(rows: usize, cols: usize, raw: &[u8]) -> Self {
        Self::build(rows, cols, Kind::Q4, raw, Q4_1_BYTES, |src, dst, lane| {
            dst[2 * lane..2 * lane + 2].copy_from_slice(&src[..2]);
            dst[2 * GROUP + 2 * lane..][..2].copy_from_slice(&src[2..4]);
            dst[4 * GROUP + lane * QK / 2..][..QK / 2].copy_from_slice(&src[4..]);
        })
    }

    /// From GGUF Q5_0 blocks, row after row.
    pub fn from_q5_0(rows: usize, cols: usize, raw: &[u8]) -> Self {
        Self::build(rows, cols, Kind::Q5, raw, Q5_0_BYTES, |src, dst, lane| {
            let d = f16_to_f32(u16::from_le_bytes([src[0], src[1]]));
            dst[2 * lane..2 * lane + 2].copy_from_slice(&src[..2]);
            // -16 d is exact in f16: a power-of-two multiple.
            dst[2 * GROUP + 2 * lane..][..2].copy_from_slice(&f32_to_f16(-16.0 * d).to_le_bytes());
            dst[4 * GROUP + 4 * lane..][..4].copy_from_slice(&src[2..6]);
            dst[8 * GROUP + lane * QK / 2..][..QK / 2].copy_from_slice(&src[6..]);
        })
    }

    /// From GGUF Q4_K super-blocks, row after row, exactly.
    pub fn from_q4_k(rows: usize, cols: usize, raw: &[u8]) -> Self {
        let blocks = q4_k_blocks(raw);
        Self::build(
            rows,
            cols,
            Kind::Q4F,
            &blocks,
            Q4F_BYTES,
            |src, dst, lane| {
                dst[4 * lane..][..4].copy_from_slice(&src[..4]);
                dst[4 * GROUP + 4 * lane..][..4].copy_from_slice(&src[4..8]);
                dst[8 * GROUP + lane * QK / 2..][..QK / 2].copy_from_slice(&src[8..]);
            },
        )
    }

    /// From f32 values, row after row, rounded as GGUF's Q8_0 quantizer does.
    #[cfg(test)]
    pub fn from_f32(rows: usize, cols: usize, values: &[f32]) -> Self {
        assert_eq!(values.len(), rows * cols);
        Self::from_q8_0(rows, cols, &quantize_q8_0(values))
    }

    fn blocks(&self) -> usize {
        self.cols / QK
    }

    fn groups(&self) -> usize {
        self.rows.div_ceil(GROUP)
    }

    /// Units of work that threads split: 16-row panels when repacked, else 4-row groups.
    pub fn units(&self) -> usize {
        match self.panel {
            Some(_) => self.rows.div_ceil(PANEL),
            None => self.groups(),
        }
    }

    fn group_bytes(&self) -> usize {
        self.blocks() * self.kind.group_block()
    }

    /// Row `r` as f32 values (an embedding lookup).
    pub fn row(&self, r: usize, out: &mut [f32]) {
        assert!(
            !self.data.is_empty(),
            "rows of a matrix prepared without them"
        );
        let (g, lane, nb) = (r / GROUP, r % GROUP, self.blocks());
        let gb = self.kind.group_block();
        let mut q = [0i32; QK];
        for (b, out) in out.chunks_exact_mut(QK).enumerate() {
            let blk = &self.data[(g * nb + b) * gb..][..gb];
            let (d, m) = self.block(blk, lane, &mut q);
            for (o, &q) in out.iter_mut().zip(&q) {
                *o = d * q as f32 + m;
            }
        }
    }

    /// The scale, offset and values of row `lane` in a group block.
    fn block(&self, blk: &[u8], lane: usize, q: &mut [i32; QK]) -> (f32, f32) {
        let f16 = |i: usize| f16_to_f32(u16::from_le_bytes([blk[i], blk[i + 1]]));
        let f32_at = |i: usize| f32::from_le_bytes([blk[i], blk[i + 1], blk[i + 2], blk[i + 3]]);
        let d = f16(2 * lane);
        let start = self.kind.quants();
        match self.kind {
            Kind::Q4F => {
                let nibbles = &blk[start + lane * QK / 2..][..QK / 2];
                for j in 0..QK / 2 {
                    q[j] = (nibbles[j] & 0xf) as i32;
                    q[j + 16] = (nibbles[j] >> 4) as i32;
                }
                (f32_at(4 * lane), f32_at(4 * GROUP + 4 * lane))
            }
            Kind::Q8 => {
                for (q, &v) in q.iter_mut().zip(&blk[start + lane * QK..][..QK]) {
                    *q = v as i8 as i32;
                }
                (d, 0.0)
            }
            Kind::Q4 | Kind::Q5 => {
                let nibbles = &blk[start + lane * QK / 2..][..QK / 2];
                let high = if self.kind == Kind::Q5 {
                    let h = &blk[4 * GROUP + 4 * lane..][..4];
                    u32::from_le_bytes([h[0], h[1], h[2], h[3]])
                } else {
                    0
                };
                for j in 0..QK / 2 {
                    q[j] = (nibbles[j] & 0xf) as i32 | (((high >> j) & 1) << 4) as i32;
                    q[j + 16] = (nibbles[j] >> 4) as i32 | (((high >> (j + 16)) & 1) << 4) as i32;
                }
                (d, f16(2 * GROUP + 2 * lane))
            }
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len() + self.panel.as_ref().map_or(0, Panel::bytes)
    }
}

/// Rows per [`Panel`]: one 32-bit lane per row in a 512-bit register.
pub const PANEL: usize = 16;

/// 64 bytes aligned to a cache line: one register of a panel's values.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// A matrix repacked for the VNNI kernels: rows in panels of [`PANEL`] (the last padded with
/// zero rows), each 32-value block of a panel stored as lines of 64 bytes in which bytes
/// `4r..4r + 4` are four consecutive values of row `r`, so one `vpdpbusd` advances all 16
/// rows by four values with no horizontal sums. Values are unsigned (`vpdpbusd`'s unsigned
/// side), each row's value `d * (q - offset)` (`U8`) or `d * q + m` (`U4`).
#[derive(Clone)]
struct Panel {
    /// With `Some(offset)`: 8 lines per block of unsigned bytes, line `c` holding values
    /// `4c..4c + 4`; Q8_0 as `q + 128` (offset 128), Q5_0 as is (offset 16). With `None`:
    /// 4 lines per block of nibbles, line `c`'s low nibbles holding values `4c..4c + 4`, its
    /// high nibbles values `16 + 4c..`.
    offset: Option<i32>,
    lines: Vec<Line>,
    /// Per block, 16 scales: f16 (`U8`, as in the file) or f32 `d` then f32 `m` (`U4`).
    scales_f16: Vec<u16>,
    scales_f32: Vec<f32>,
}

impl Panel {
    fn new(w: &QMatrix) -> Self {
        let (nb, panels) = (w.blocks(), w.rows.div_ceil(PANEL));
        let offset = match w.kind {
            Kind::Q8 => Some(128),
            Kind::Q5 => Some(16),
            Kind::Q4 | Kind::Q4F => None,
        };
        let per_block = if offset.is_some() { 8 } else { 4 };
        let mut lines = vec![Line([0; 64]); panels * nb * per_block];
        let mut scales_f16 = Vec::new();
        let mut scales_f32 = Vec::new();
        if offset.is_some() {
            scales_f16.resize(panels * nb * PANEL, 0);
        } else {
            scales_f32.resize(panels * nb * 2 * PANEL, 0.0);
        }
        let gb = w.kind.group_block();
        let mut q = [0i32; QK];
        for r in 0..w.rows {
            let (p, lane) = (r / PANEL, r % PANEL);
            let (g, glane) = (r / GROUP, r % GROUP);
            for b in 0..nb {
                let blk = &w.data[(g * nb + b) * gb..][..gb];
                let (d, m) = w.block(blk, glane, &mut q);
                let i = p * nb + b;
                let at = &mut lines[i * per_block..][..per_block];
                match offset {
                    Some(offset) => {
                        // The f16 scale as stored (Q8 and Q5 keep theirs at the same place).
                        scales_f16[i * PANEL + lane] =
                            u16::from_le_bytes([blk[2 * glane], blk[2 * glane + 1]]);
                        debug_assert!(w.kind != Kind::Q5 || m == -16.0 * d);
                        for (k, &q) in q.iter().enumerate() {
                            // Q8: -128..128 to 0..256; Q5: 0..32 already.
                            let u = if w.kind == Kind::Q8 { q + offset } else { q };
                            at[k / 4].0[4 * lane + k % 4] = u as u8;
                        }
                    }
                    None => {
                        scales_f32[i * 2 * PANEL + lane] = d;
                        scales_f32[i * 2 * PANEL + PANEL + lane] = m;
                        for k in 0..QK / 2 {
                            let byte = (q[k] | (q[k + QK / 2] << 4)) as u8;
                            at[k / 4].0[4 * lane + k % 4] = byte;
                        }
                    }
                }
            }
        }
        Self {
            offset,
            lines,
            scales_f16,
            scales_f32,
        }
    }

    fn bytes(&self) -> usize {
        64 * self.lines.len() + 2 * self.scales_f16.len() + 4 * self.scales_f32.len()
    }
}

/// Bytes of panels walked together: the chunk stays in L2 while every token passes over it.
const PANEL_CHUNK_BYTES: usize = 256 * 1024;

/// The tiles of a product over panels `p0..p1` of `w` (repacked as `p`), in the order the
/// panel kernels compute them: chunks of [`PANEL_CHUNK_BYTES`], within a chunk up to `tile`
/// tokens at a time, and `per_panel` units of each panel (1, or 2 half-panels of 8 rows for
/// 256-bit registers). Calls `f(unit, t0, n)` for tokens `t0..t0 + n`.
fn for_panel_tiles(
    w: &QMatrix,
    p: &Panel,
    tokens: usize,
    (p0, p1): (usize, usize),
    (tile, per_panel): (usize, usize),
    mut f: impl FnMut(usize, usize, usize),
) {
    let panel_bytes = p.bytes() / w.rows.div_ceil(PANEL);
    let chunk = (PANEL_CHUNK_BYTES / panel_bytes).max(1);
    let mut c0 = p0;
    while c0 < p1 {
        let c1 = (c0 + chunk).min(p1);
        let mut t0 = 0;
        while t0 < tokens {
            let n = (tokens - t0).min(tile);
            for unit in per_panel * c0..per_panel * c1 {
                f(unit, t0, n);
            }
            t0 += n;
        }
        c0 = c1;
    }
}

/// GGUF Q8_0 blocks of `values` (a whole number of blocks), rounded as GGUF's quantizer does.
pub fn quantize_q8_0(values: &[f32]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(values.len() / QK * Q8_0_BYTES);
    for block in values.chunks_exact(QK) {
        let amax = block.iter().fold(0f32, |m, x| m.max(x.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        raw.extend_from_slice(&f32_to_f16(d).to_le_bytes());
        raw.extend(block.iter().map(|x| (x * id).round() as i8 as u8));
    }
    raw
}

/// Q4_K super-blocks as 32-value blocks of f32 scale `d · sc`, f32 offset `-dmin · m` and
/// 16 bytes of nibbles (values 0..16 low, 16..32 high), exactly.
pub fn q4_k_blocks(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len() / Q4_K_BYTES * (QK_K / QK) * Q4F_BYTES);
    for sb in src.chunks_exact(Q4_K_BYTES) {
        let d = f16_to_f32(u16::from_le_bytes([sb[0], sb[1]]));
        let dmin = f16_to_f32(u16::from_le_bytes([sb[2], sb[3]]));
        let (scales, qs) = (&sb[4..16], &sb[16..]);
        let (sc, m) = super::kquant::q4_k_scales(scales);
        // 32 bytes of qs hold two sub-blocks: the low nibbles, then the high ones.
        for (pair, bytes) in qs.chunks_exact(32).enumerate() {
            for high in [false, true] {
                let j = 2 * pair + high as usize;
                let (sc, m) = (sc[j], m[j]);
                out.extend_from_slice(&(d * sc as f32).to_le_bytes());
                out.extend_from_slice(&(-(dmin * m as f32)).to_le_bytes());
                let v = |i: usize| if high { bytes[i] >> 4 } else { bytes[i] & 0xf };
                out.extend((0..QK / 2).map(|i| v(i) | (v(i + QK / 2) << 4)));
            }
        }
    }
    out
}

/// Q5_0 blocks to Q8_0 blocks with the same f16 scale: value `j` is `d * (q - 16)` in both,
/// so the conversion is exact.
pub fn q5_0_to_q8_0(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len() / Q5_0_BYTES * Q8_0_BYTES);
    for block in src.chunks_exact(Q5_0_BYTES) {
        let (d, rest) = block.split_at(2);
        let (qh, qs) = rest.split_at(4);
        let qh = u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]]);
        out.extend_from_slice(d);
        let mut values = [0u8; 32];
        for j in 0..16 {
            let high_lo = (((qh >> j) << 4) & 0x10) as u8;
            let high_hi = ((qh >> (j + 12)) & 0x10) as u8;
            values[j] = (((qs[j] & 0x0f) | high_lo) as i8 - 16) as u8;
            values[j + 16] = (((qs[j] >> 4) | high_hi) as i8 - 16) as u8;
        }
        out.extend_from_slice(&values);
    }
    out
}

/// Activations of `tokens` tokens quantized to Q8_0 (scales as f32), ready for [`matmul`].
#[derive(Default)]
pub struct Q8Acts {
    pub tokens: usize,
    pub cols: usize,
    scales: Vec<f32>,
    /// Per block, `scale * Σ values`: what a weight offset multiplies.
    sums: Vec<f32>,
    /// Per block, `Σ values`: what the panels' integer offsets multiply.
    isums: Vec<i32>,
    quants: Vec<i8>,
}

impl Q8Acts {
    /// Makes room for `tokens × cols` values (no allocation once large enough).
    pub fn reset(&mut self, tokens: usize, cols: usize) {
        assert_eq!(cols % QK, 0);
        self.tokens = tokens;
        self.cols = cols;
        self.scales.resize(tokens * cols / QK, 0.0);
        self.sums.resize(tokens * cols / QK, 0.0);
        self.isums.resize(tokens * cols / QK, 0);
        self.quants.resize(tokens * cols, 0);
    }

    /// A handle through which threads quantize distinct tokens at once.
    pub fn writer(&mut self) -> ActsWriter {
        ActsWriter {
            cols: self.cols,
            scales: self.scales.as_mut_ptr(),
            sums: self.sums.as_mut_ptr(),
            isums: self.isums.as_mut_ptr(),
            quants: self.quants.as_mut_ptr(),
        }
    }

    /// Quantizes all of `x` on the calling thread.
    pub fn quantize(&mut self, x: &[f32]) {
        let out = (
            &mut self.scales[..],
            &mut self.sums[..],
            &mut self.isums[..],
        );
        quantize_row(x, out, &mut self.quants);
    }
}

/// Raw access to a [`Q8Acts`] for quantizing token ranges from several threads.
pub struct ActsWriter {
    cols: usize,
    scales: *mut f32,
    sums: *mut f32,
    isums: *mut i32,
    quants: *mut i8,
}

// SAFETY: threads write disjoint token ranges (the contract of `quantize`).
unsafe impl Send for ActsWriter {}
unsafe impl Sync for ActsWriter {}

impl ActsWriter {
    /// Quantizes `x`, whole tokens (`cols` values each), into tokens `t0..`.
    ///
    /// # Safety
    /// The tokens must lie within the [`Q8Acts`] this came from, which must outlive the call
    /// and not be otherwise used meanwhile; no other thread may quantize the same tokens.
    pub unsafe fn quantize(&self, x: &[f32], t0: usize) {
        let nb = self.cols / QK;
        let n = x.len() / self.cols;
        // SAFETY: by the contract, these ranges are ours alone.
        let (scales, sums, isums, quants) = unsafe {
            (
                std::slice::from_raw_parts_mut(self.scales.add(t0 * nb), n * nb),
                std::slice::from_raw_parts_mut(self.sums.add(t0 * nb), n * nb),
                std::slice::from_raw_parts_mut(self.isums.add(t0 * nb), n * nb),
                std::slice::from_raw_parts_mut(self.quants.add(t0 * self.cols), n * self.cols),
            )
        };
        quantize_row(x, (scales, sums, isums), quants);
    }
}

/// `x` (within ±127.5) rounded to the nearest integer, ties to even, without a libm call:
/// adding 1.5 · 2^23 leaves the integer in the low mantissa bits.
#[inline]
pub fn nearest(x: f32) -> i8 {
    let r = x + 12_582_912.0;
    (r.to_bits() as i32 - 0x4b40_0000) as i8
}

/// Q8_0 quantization of activations as llama.cpp does it: scale `amax / 127` rounded to f16,
/// values `x * 127 / amax` rounded to nearest.
fn quantize_row(
    x: &[f32],
    (scales, sums, isums): (&mut [f32], &mut [f32], &mut [i32]),
    quants: &mut [i8],
) {
    for ((((block, d_out), sum_out), isum_out), q) in x
        .chunks_exact(QK)
        .zip(scales.iter_mut())
        .zip(sums.iter_mut())
        .zip(isums.iter_mut())
        .zip(quants.chunks_exact_mut(QK))
    {
        let amax = block.iter().fold(0f32, |m, x| m.max(x.abs()));
        let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
        *d_out = f16_to_f32(f32_to_f16(amax / 127.0));
        for (q, &x) in q.iter_mut().zip(block) {
            *q = nearest(x * id);
        }
        *isum_out = q.iter().map(|&q| q as i32).sum::<i32>();
        *sum_out = *d_out * *isum_out as f32;
    }
}

/// `out[t * ldo + r] = Σ_k w[r, k] · a[t, k]` for the rows of units `u0..u1` (see
/// [`QMatrix::units`]) and every token of `a`, on `cpu`'s kernel (which `w` must be
/// [prepared](QMatrix::prepared) for). Threads may compute disjoint unit ranges of one
/// product into one buffer.
///
/// # Safety
/// `out` must hold `a.tokens` rows of `ldo >= w.rows` values, and no other thread may touch
/// the entries written here.
pub unsafe fn matmul(
    cpu: Cpu,
    w: &QMatrix,
    a: &Q8Acts,
    u0: usize,
    u1: usize,
    out: *mut f32,
    ldo: usize,
) {
    assert_eq!(w.cols, a.cols);
    assert!(u1 <= w.units() && ldo >= w.rows);
    assert!(
        cpu.supported(),
        "{} kernels on a CPU without them",
        cpu.name()
    );
    match (&w.panel, cpu) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has the features (checked above); bounds as checked above.
        (Some(p), Cpu::Avx512) => unsafe { avx512::matmul(w, p, a, u0, u1, out, ldo) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (Some(p), Cpu::AvxVnni) => unsafe { avxvnni::matmul(w, p, a, u0, u1, out, ldo) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (Some(p), Cpu::Avx2) => unsafe { avx2::matmul_panels(w, p, a, u0, u1, out, ldo) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (None, Cpu::Avx2) => unsafe { avx2::matmul(w, a, u0, u1, out, ldo) },
        // SAFETY: as above.
        (None, Cpu::Scalar) => unsafe { matmul_scalar(w, a, u0, u1, out, ldo) },
        _ => panic!("a matrix not prepared for the {} kernels", cpu.name()),
    }
}

/// The scalar kernel: the same sums as the SIMD one, in another order.
///
/// # Safety
/// As [`matmul`].
pub unsafe fn matmul_scalar(
    w: &QMatrix,
    a: &Q8Acts,
    g0: usize,
    g1: usize,
    out: *mut f32,
    ldo: usize,
) {
    let nb = w.blocks();
    let gb = w.kind.group_block();
    let mut q = [0i32; QK];
    for t in 0..a.tokens {
        let aq = &a.quants[t * a.cols..][..a.cols];
        let ad = &a.scales[t * nb..][..nb];
        let asum = &a.sums[t * nb..][..nb];
        for g in g0..g1 {
            let mut acc = [0f32; GROUP];
            for b in 0..nb {
                let blk = &w.data[(g * nb + b) * gb..][..gb];
                let x = &aq[b * QK..][..QK];
                for (lane, acc) in acc.iter_mut().enumerate() {
                    let (d, m) = w.block(blk, lane, &mut q);
                    let sum: i32 = q.iter().zip(x).map(|(&w, &x)| w * x as i32).sum();
                    *acc += d * ad[b] * sum as f32 + m * asum[b];
                }
            }
            for (lane, acc) in acc.into_iter().enumerate() {
                let r = g * GROUP + lane;
                if r < w.rows {
                    // SAFETY: within the caller's buffer, by the contract.
                    unsafe { *out.add(t * ldo + r) = acc };
                }
            }
        }
    }
}

/// IEEE half to single precision.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise.
            let shift = m.leading_zeros() - 21;
            let m = (m << shift) & 0x3ff;
            sign | ((113 - shift) << 23) | (m << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// Single to half precision, rounding to nearest even.
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = mant | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut h = m >> shift;
        if rest > half || (rest == half && h & 1 == 1) {
            h += 1;
        }
        return sign | h as u16;
    }
    let mut h = ((e as u32) << 10) | (mant >> 13);
    let rest = mant & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1; // may carry into the exponent, which is right
    }
    sign | h as u16
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `n` pseudo-random values in [-1, 1], the same for the same seed (xorshift).
    pub(crate) fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 20001) as f32 / 10000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn f16_conversions_round_trip() {
        for h in 0..=u16::MAX {
            let x = f16_to_f32(h);
            if x.is_nan() {
                continue;
            }
            assert_eq!(f32_to_f16(x), h, "{h:#x} -> {x}");
        }
        assert_eq!(f32_to_f16(1.0 + 1.0 / 4096.0), 0x3c00); // tie to even
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
    }

    #[test]
    fn quantized_rows_dequantize_within_half_a_step() {
        let (rows, cols) = (6, 64);
        let v = values(rows * cols, 1);
        let m = QMatrix::from_f32(rows, cols, &v);
        let mut row = vec![0f32; cols];
        for r in 0..rows {
            m.row(r, &mut row);
            for (b, block) in v[r * cols..(r + 1) * cols].chunks(QK).enumerate() {
                let amax = block.iter().fold(0f32, |m, x| m.max(x.abs()));
                for (j, x) in block.iter().enumerate() {
                    let got = row[b * QK + j];
                    assert!((got - x).abs() <= amax / 127.0 * 0.51, "{got} vs {x}");
                }
            }
        }
    }

    /// Against candle's reading of the same blocks.
    #[test]
    fn q5_0_blocks_read_as_candle_reads_them() {
        use candle_core::quantized::{GgmlDType, QTensor};
        use candle_core::{Device, Tensor};
        let device = Device::Cpu;
        let values: Vec<f32> = (0..256)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013)
            .collect();
        let source = Tensor::new(values.as_slice(), &device)
            .and_then(|t| t.reshape((4, 64)))
            .unwrap();
        let q5 = QTensor::quantize(&source, GgmlDType::Q5_0).unwrap();
        let raw = q5.data().unwrap();
        let want: Vec<f32> = q5
            .dequantize(&device)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1())
            .unwrap();
        let as_q8 = QMatrix::from_q8_0(4, 64, &q5_0_to_q8_0(&raw));
        let as_q5 = QMatrix::from_q5_0(4, 64, &raw);
        let mut row = vec![0f32; 64];
        for m in [as_q8, as_q5] {
            for r in 0..4 {
                m.row(r, &mut row);
                assert_eq!(row, want[r * 64..(r + 1) * 64], "{:?}", m.kind);
            }
        }
    }

    /// Q4_K kept at 4 bits reads as candle reads it, and every kernel agrees on it.
    #[test]
    fn q4_k_blocks_read_as_candle_reads_them() {
        use candle_core::quantized::{GgmlDType, QTensor};
        use candle_core::{Device, Tensor};
        let device = Device::Cpu;
        let (rows, cols) = (19, 512);
        let v = values(rows * cols, 13);
        let source = Tensor::new(v.as_slice(), &device)
            .and_then(|t| t.reshape((rows, cols)))
            .unwrap();
        let q4k = QTensor::quantize(&source, GgmlDType::Q4K).unwrap();
        let raw = q4k.data().unwrap();
        assert_eq!(raw.len(), rows * cols / QK_K * Q4_K_BYTES);
        let want: Vec<f32> = q4k
            .dequantize(&device)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1())
            .unwrap();
        let m = QMatrix::from_q4_k(rows, cols, &raw);
        let mut row = vec![0f32; cols];
        for r in 0..rows {
            m.row(r, &mut row);
            assert_eq!(row, want[r * cols..(r + 1) * cols]);
        }
        for tokens in [1, 5, 11] {
            let mut a = Q8Acts::default();
            a.reset(tokens, cols);
            a.quantize(&values(tokens * cols, 17));
            assert_kernels_agree(&m, &a);
        }
    }

    /// The largest values every block kind holds, against activations of the largest size
    /// of either sign: where a kernel sums products in 16 bits (AVX2), they must not overflow.
    #[test]
    fn largest_values_agree_on_every_kernel() {
        let (rows, cols, tokens) = (16, 64, 3);
        let n = rows * cols / QK;
        // Every byte `fill` but the f16 scale (and Q4_1's f16 minimum) at `scales`.
        let block = |bytes: usize, fill: u8, scales: &[usize]| {
            let mut b = vec![fill; bytes];
            for &at in scales {
                b[at..at + 2].copy_from_slice(&f32_to_f16(0.01).to_le_bytes());
            }
            b.repeat(n)
        };
        let q4 = QMatrix::from_q4_1(rows, cols, &block(Q4_1_BYTES, 0xff, &[0, 2]));
        let q5 = QMatrix::from_q5_0(rows, cols, &block(Q5_0_BYTES, 0xff, &[0]));
        let q8 = QMatrix::from_q8_0(rows, cols, &block(Q8_0_BYTES, 0x81, &[0]));
        for sign in [1.0, -1.0] {
            let x = vec![sign * 3.0; tokens * cols];
            let mut a = Q8Acts::default();
            a.reset(tokens, cols);
            a.quantize(&x);
            assert!(a.quants.iter().all(|&q| q as f32 == sign * 127.0));
            for w in [&q4, &q5, &q8] {
                assert_kernels_agree(w, &a);
            }
        }
    }

    #[test]
    fn q5_0_blocks_convert_to_q8_0_exactly() {
        // A Q5_0 block with every 5-bit value once: q_j = j.
        let mut block = vec![0u8; Q5_0_BYTES];
        block[..2].copy_from_slice(&f32_to_f16(0.5).to_le_bytes());
        let mut qh = 0u32;
        for j in 0..16 {
            let (lo, hi) = (j as u8, (j + 16) as u8);
            block[6 + j] = (lo & 0xf) | ((hi & 0xf) << 4);
            qh |= ((lo as u32 >> 4) & 1) << j;
            qh |= ((hi as u32 >> 4) & 1) << (j + 16);
        }
        block[2..6].copy_from_slice(&qh.to_le_bytes());
        let q8 = q5_0_to_q8_0(&block);
        let m = QMatrix::from_q8_0(1, 32, &q8);
        let mut row = vec![0f32; 32];
        m.row(0, &mut row);
        let want: Vec<f32> = (0..32).map(|j| 0.5 * (j as f32 - 16.0)).collect();
        assert_eq!(row, want);
    }

    fn reference(w: &QMatrix, x: &[f32], tokens: usize) -> Vec<f32> {
        let mut row = vec![0f32; w.cols];
        let mut out = vec![0f32; tokens * w.rows];
        for r in 0..w.rows {
            w.row(r, &mut row);
            for t in 0..tokens {
                out[t * w.rows + r] = row.iter().zip(&x[t * w.cols..]).map(|(a, b)| a * b).sum();
            }
        }
        out
    }

    /// `w · a` on `cpu`'s kernel (`w` prepared for it), in two halves as two threads would.
    fn product(cpu: Cpu, w: &QMatrix, a: &Q8Acts) -> Vec<f32> {
        let w = w.clone().prepared(cpu, false);
        let mut out = vec![f32::NAN; a.tokens * w.rows];
        let u = w.units();
        for (u0, u1) in [(0, u / 2), (u / 2, u)] {
            unsafe { matmul(cpu, &w, a, u0, u1, out.as_mut_ptr(), w.rows) }
        }
        out
    }

    /// The kernels this CPU can run, the scalar one included.
    fn kernels() -> Vec<Cpu> {
        Cpu::ALL.into_iter().filter(|c| c.supported()).collect()
    }

    /// Rows, columns, tokens: one and many tokens, tile remainders, rows that fill neither
    /// a 4-row group nor a 16-row panel.
    const SHAPES: [(usize, usize, usize); 8] = [
        (8, 32, 1),
        (12, 96, 3),
        (10, 64, 7),
        (64, 256, 9),
        (37, 160, 19),
        (100, 64, 1),
        (16, 32, 8),
        (33, 96, 17),
    ];

    /// Every kernel the CPU has against the scalar one, within float rounding.
    fn assert_kernels_agree(w: &QMatrix, a: &Q8Acts) {
        let scalar = product(Cpu::Scalar, w, a);
        for cpu in kernels() {
            let fast = product(cpu, w, a);
            for (s, f) in scalar.iter().zip(&fast) {
                assert!(
                    (s - f).abs() <= 1e-4 * (1.0 + s.abs()),
                    "{} {:?} {}x{}: {s} vs {f}",
                    cpu.name(),
                    w.kind,
                    w.rows,
                    w.cols
                );
            }
        }
    }

    #[test]
    fn matmul_matches_f32_and_every_kernel_matches_scalar() {
        for (rows, cols, tokens) in SHAPES {
            let w = QMatrix::from_f32(rows, cols, &values(rows * cols, 7));
            let x = values(tokens * cols, 9);
            let mut a = Q8Acts::default();
            a.reset(tokens, cols);
            a.quantize(&x);
            let scalar = product(Cpu::Scalar, &w, &a);
            let want = reference(&w, &x, tokens);
            for (s, r) in scalar.iter().zip(&want) {
                // Activations are rounded to 1/254 of each block's largest value.
                assert!((s - r).abs() <= 0.02 * (cols as f32).sqrt(), "{s} vs {r}");
            }
            assert_kernels_agree(&w, &a);
            // Bytes over their whole range through the same kernels.
            let raw = random_blocks(rows * cols / QK, Q8_0_BYTES, &[0], 3);
            assert_kernels_agree(&QMatrix::from_q8_0(rows, cols, &raw), &a);
        }
    }

    #[test]
    fn prepared_matrices_keep_their_rows_when_asked() {
        let (rows, cols) = (21, 64);
        let w = QMatrix::from_f32(rows, cols, &values(rows * cols, 2));
        for cpu in kernels() {
            let p = w.clone().prepared(cpu, true);
            let (mut a, mut b) = (vec![0f32; cols], vec![0f32; cols]);
            for r in 0..rows {
                w.row(r, &mut a);
                p.row(r, &mut b);
                assert_eq!(a, b);
            }
            assert_eq!(p.units(), if w.kind.in_panels(cpu) { 2 } else { 6 });
        }
    }

    /// Random GGUF blocks of `bytes` each, with sane f16 scales (and offsets) at `scales`.
    fn random_blocks(n: usize, bytes: usize, scales: &[usize], seed: u32) -> Vec<u8> {
        let v = values(n * bytes, seed);
        let mut raw: Vec<u8> = v.iter().map(|x| (x * 127.0) as i8 as u8).collect();
        for (i, block) in raw.chunks_exact_mut(bytes).enumerate() {
            for (k, &at) in scales.iter().enumerate() {
                let d = v[i * bytes + k] * 0.01;
                block[at..at + 2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
            }
        }
        raw
    }

    #[test]
    fn four_and_five_bit_matrices_match_f32_and_every_kernel_matches_scalar() {
        for (rows, cols, tokens) in SHAPES {
            let n = rows * cols / QK;
            let q4 = QMatrix::from_q4_1(rows, cols, &random_blocks(n, Q4_1_BYTES, &[0, 2], 5));
            let q5 = QMatrix::from_q5_0(rows, cols, &random_blocks(n, Q5_0_BYTES, &[0], 6));
            // Q5_0 values as Q8_0: the same matrix through the 8-bit kernel.
            let raw5 = random_blocks(n, Q5_0_BYTES, &[0], 6);
            let q8 = QMatrix::from_q8_0(rows, cols, &q5_0_to_q8_0(&raw5));
            let mut r5 = vec![0f32; cols];
            let mut r8 = vec![0f32; cols];
            for r in 0..rows {
                q5.row(r, &mut r5);
                q8.row(r, &mut r8);
                assert_eq!(r5, r8);
            }
            let x = values(tokens * cols, 11);
            let mut a = Q8Acts::default();
            a.reset(tokens, cols);
            a.quantize(&x);
            for w in [&q4, &q5] {
                let scalar = product(Cpu::Scalar, w, &a);
                let want = reference(w, &x, tokens);
                for (s, r) in scalar.iter().zip(&want) {
                    assert!((s - r).abs() <= 0.02 * (cols as f32).sqrt(), "{s} vs {r}");
                }
                assert_kernels_agree(w, &a);
            }
            for cpu in kernels() {
                let (p5, p8) = (product(cpu, &q5, &a), product(cpu, &q8, &a));
                for (a, b) in p5.iter().zip(&p8) {
                    assert!((a - b).abs() <= 1e-4 * (1.0 + a.abs()), "{a} vs {b}");
                }
            }
        }
    }
}
