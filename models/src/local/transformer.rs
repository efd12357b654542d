//! The decoder-only transformer shared by the Qwen2 and Llama families: pre-norm blocks of
//! grouped-query attention with rotary positions and a SiLU-gated feed-forward, on 8-bit
//! weights ([`super::quant`]), split across a [`Pool`] of threads.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::GgmlDType;
use candle_core::Device;

use super::attention::{self, Heads};
use super::kquant::{KActs, KKind, KMatrix, Q6_K_BYTES};
use super::pool::{share, Pool, SyncPtr};
use super::quant::{
    self, Cpu, Kind, Q8Acts, QMatrix, Q4_K_BYTES, Q5_0_BYTES, Q8_0_BYTES, QK, QK_K,
};
use crate::LoadError;

/// How rotary embeddings pair the values of a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rope {
    /// Value `i` with value `i + head_dim / 2` (GPT-NeoX; Qwen2).
    Halves,
    /// Value `2i` with value `2i + 1` (Llama as stored in GGUF).
    Interleaved,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub layers: usize,
    pub dim: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn_dim: usize,
    pub norm_eps: f32,
    pub rope_base: f32,
    pub rope: Rope,
}

impl Config {
    /// Reads `{arch}.*` hyperparameters.
    pub fn from_gguf(content: &Content, arch: &str, rope: Rope) -> Result<Self, LoadError> {
        let u = |key: &str| -> Result<usize, LoadError> {
            content
                .metadata
                .get(&format!("{arch}.{key}"))
                .and_then(|v| v.to_u32().ok())
                .map(|v| v as usize)
                .ok_or_else(|| LoadError::Format(format!("the GGUF has no `{arch}.{key}`")))
        };
        let f = |key: &str, default: f32| -> f32 {
            content
                .metadata
                .get(&format!("{arch}.{key}"))
                .and_then(|v| v.to_f32().ok())
                .unwrap_or(default)
        };
        let (dim, heads) = (u("embedding_length")?, u("attention.head_count")?);
        let kv_heads = u("attention.head_count_kv").unwrap_or(heads);
        let head_dim = dim / heads;
        let config = Self {
            layers: u("block_count")?,
            dim,
            heads,
            kv_heads,
            head_dim,
            ffn_dim: u("feed_forward_length")?,
            norm_eps: f("attention.layer_norm_rms_epsilon", 1e-5),
            rope_base: f("rope.freq_base", 10_000.0),
            rope,
        };
        let rope_dim = u("rope.dimension_count").unwrap_or(head_dim);
        if rope_dim != head_dim || heads % kv_heads != 0 || head_dim % 2 != 0 {
            return Err(LoadError::Unsupported(format!(
                "attention layout (heads {heads}, kv heads {kv_heads}, head size {head_dim}, \
                 rope size {rope_dim})"
            )));
        }
        Ok(config)
    }

    fn q_dim(&self) -> usize {
        self.heads * self.head_dim
    }

    fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}

struct Layer {
    attn_norm: Vec<f32>,
    /// Query, key and value projections stacked: `q_dim + 2 kv_dim` rows.
    qkv: Linear,
    qkv_bias: Option<Vec<f32>>,
    out: Linear,
    ffn_norm: Vec<f32>,
    /// Gate and up projections stacked: `2 ffn_dim` rows.
    gate_up: Linear,
    down: Linear,
}

/// A projection's weights in the layouts its passes read. Prompts and scoring run many tokens
/// through each weight they load, so on the VNNI kernels they read Q8_0 (their fastest integer
/// product); a generated token reads every weight once for itself, so its pass is bound by the
/// bytes read, and reads Q4_K and Q6_K at the file's widths where the projection is made of
/// them ([`KMatrix`]). The roundings differ slightly, so a token's logits alone and in
/// a batch differ by about what the kernels' orders do. On AVX2 the 4-bit kernel is the faster
/// one for prompts too, and prompts read a Q4_K projection at 4 bits; a Q5_0 one is held twice,
/// in panels of bytes for prompts and at 5 bits for one token.
struct Linear {
    many: QMatrix,
    one: Option<One>,
}

/// What a one-token pass reads instead of [`Linear::many`].
enum One {
    /// 5-bit groups (AVX2).
    Groups(QMatrix),
    /// K-quant rows as the file stores them.
    Rows(KMatrix),
}

impl Linear {
    /// Whether a pass of `tokens` tokens reads the activations quantized in 32-value blocks
    /// ([`Q8Acts`]): all but a one-token pass over K-quant rows, which quantizes its own.
    fn reads_q8(&self, tokens: usize) -> bool {
        tokens != 1 || !matches!(self.one, Some(One::Rows(_)))
    }

    fn bytes(&self) -> usize {
        self.many.bytes()
            + match &self.one {
                None => 0,
                Some(One::Groups(m)) => m.bytes(),
                Some(One::Rows(m)) => m.bytes(),
            }
    }
}

pub struct Model {
    pub config: Config,
    /// The kernels the weights were prepared for.
    cpu: Cpu,
    embed: QMatrix,
    layers: Vec<Layer>,
    out_norm: Vec<f32>,
    /// `None`: the output projection is the embedding table (tied).
    lm_head: Option<Linear>,
}

/// Reads tensors from a GGUF file.
pub struct Tensors<'a> {
    pub content: &'a Content,
    pub file: &'a mut File,
    /// The kernels the matrices are prepared for.
    pub cpu: Cpu,
}

fn format_err(e: impl std::fmt::Display) -> LoadError {
    LoadError::Format(format!("cannot load the weights: {e}"))
}

impl Tensors<'_> {
    pub fn has(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// `(rows, cols)` of a matrix; a vector is one row.
    fn shape(&self, name: &str) -> Result<(usize, usize), LoadError> {
        let info = self
            .content
            .tensor_infos
            .get(name)
            .ok_or_else(|| LoadError::Format(format!("the GGUF has no tensor `{name}`")))?;
        match *info.shape.dims() {
            [n] => Ok((1, n)),
            [rows, cols] => Ok((rows, cols)),
            ref other => Err(LoadError::Format(format!("`{name}` has shape {other:?}"))),
        }
    }

    /// f32 values, row after row.
    pub fn f32(&mut self, name: &str) -> Result<Vec<f32>, LoadError> {
        let cpu = Device::Cpu;
        self.content
            .tensor(self.file, name, &cpu)
            .and_then(|t| t.dequantize(&cpu))
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(format_err)
    }

    /// The tensor's bytes as stored, blocks of `block_values` values in `block_bytes` each.
    fn raw(
        &mut self,
        name: &str,
        block_values: usize,
        block_bytes: usize,
    ) -> Result<Vec<u8>, LoadError> {
        let info = &self.content.tensor_infos[name];
        let start = self.content.tensor_data_offset + info.offset;
        let mut raw = vec![0u8; info.shape.elem_count() / block_values * block_bytes];
        let io = |e: std::io::Error| LoadError::Io(e.to_string());
        self.file.seek(SeekFrom::Start(start)).map_err(io)?;
        self.file.read_exact(&mut raw).map_err(io)?;
        Ok(raw)
    }

    /// A matrix as GGUF Q8_0 blocks: Q8_0 as stored, Q5_0 converted exactly, anything else
    /// dequantized and quantized again (within a fraction of its own step).
    fn q8_0(&mut self, name: &str) -> Result<(usize, usize, Vec<u8>), LoadError> {
        let (rows, cols) = self.shape(name)?;
        let raw = match self.content.tensor_infos[name].ggml_dtype {
            GgmlDType::Q8_0 => self.raw(name, QK, Q8_0_BYTES)?,
            GgmlDType::Q5_0 => quant::q5_0_to_q8_0(&self.raw(name, QK, Q5_0_BYTES)?),
            _ => quant::quantize_q8_0(&self.f32(name)?),
        };
        Ok((rows, cols, raw))
    }

    /// Matrices with the same columns, their rows stacked in order: Q5_0 kept as it is when
    /// all share that type, anything else as Q8_0. (Q4_1 kept exactly follows llama.cpp's
    /// greedy choices less closely than Q4_1 through Q8_0: SmolLM2's golden "g3" diverges.)
    fn stacked(&mut self, names: &[&str]) -> Result<QMatrix, LoadError> {
        Ok(self.unprepared(names)?.prepared(self.cpu, false))
    }

    /// The block types of `names`, which must all exist.
    fn dtypes(&self, names: &[&str]) -> Result<Vec<GgmlDType>, LoadError> {
        names
            .iter()
            .map(|n| {
                self.shape(n)
                    .map(|_| self.content.tensor_infos[*n].ggml_dtype)
            })
            .collect()
    }

    /// As [`Tensors::stacked`], in 4-row groups whatever the kernels.
    fn unprepared(&mut self, names: &[&str]) -> Result<QMatrix, LoadError> {
        let dtypes = self.dtypes(names)?;
        let q5 = dtypes.iter().all(|d| *d == GgmlDType::Q5_0);
        let (rows, cols, raw) = self.stacked_raw(names, |t, name| {
            if q5 {
                t.raw(name, QK, Q5_0_BYTES)
            } else {
                Ok(t.q8_0(name)?.2)
            }
        })?;
        Ok(if q5 {
            QMatrix::from_q5_0(rows, cols, &raw)
        } else {
            QMatrix::from_q8_0(rows, cols, &raw)
        })
    }

    /// The blocks `part` reads of each of `names`, stacked in order, with the rows they make
    /// and their columns; matrices of different widths, or rows that are not whole 32-value
    /// blocks, are errors.
    fn stacked_raw(
        &mut self,
        names: &[&str],
        mut part: impl FnMut(&mut Self, &str) -> Result<Vec<u8>, LoadError>,
    ) -> Result<(usize, usize, Vec<u8>), LoadError> {
        let (mut rows, mut cols, mut raw) = (0, 0, Vec::new());
        for name in names {
            let (r, c) = self.shape(name)?;
            if rows > 0 && c != cols {
                return Err(LoadError::Format(format!("`{name}` has {c} columns")));
            }
            if c % QK != 0 {
                return Err(LoadError::Unsupported(format!(
                    "rows of {c} values in `{name}`"
                )));
            }
            raw.extend(part(self, name)?);
            rows += r;
            cols = c;
        }
        Ok((rows, cols, raw))
    }

    /// Matrices stacked as [`Tensors::stacked`] for passes of several tokens and, where the
    /// file holds them all as Q4_K or Q6_K, also kept at its widths for one-token passes. On AVX2,
    /// whose 4-bit kernel is faster than its 8-bit one for prompts too, prompts read a
    /// projection wholly of Q4_K at 4 bits; AVX2 reads 5-bit matrices from panels of bytes in
    /// prompts, and one token's pass, bound by the bytes it reads, from the 5-bit groups.
    fn linear(&mut self, names: &[&str]) -> Result<Linear, LoadError> {
        let dtypes = self.dtypes(names)?;
        let k_kind = |d: &GgmlDType| match d {
            GgmlDType::Q4K => Some(KKind::Q4K),
            GgmlDType::Q6K => Some(KKind::Q6K),
            _ => None,
        };
        let kinds: Option<Vec<KKind>> = dtypes.iter().map(k_kind).collect();
        let Some(kinds) = kinds else {
            let groups = self.unprepared(names)?;
            let one = (self.cpu == Cpu::Avx2 && groups.kind == Kind::Q5)
                .then(|| One::Groups(groups.clone()));
            let many = groups.prepared(self.cpu, false);
            return Ok(Linear { many, one });
        };
        let mut rows = None;
        for (name, kind) in names.iter().zip(&kinds) {
            let (_, cols) = self.shape(name)?;
            if cols % QK_K != 0 {
                return Err(LoadError::Format(format!(
                    "rows of {cols} values in the K-quant `{name}`"
                )));
            }
            let rows = rows.get_or_insert_with(|| KMatrix::new(cols));
            if cols != rows.cols {
                return Err(LoadError::Format(format!("`{name}` has {cols} columns")));
            }
            let raw = match kind {
                KKind::Q4K => self.raw(name, QK_K, Q4_K_BYTES)?,
                KKind::Q6K => self.raw(name, QK_K, Q6_K_BYTES)?,
            };
            rows.push(*kind, raw);
        }
        let one = rows.map(One::Rows);
        let many = if self.cpu == Cpu::Avx2 && kinds.iter().all(|k| *k == KKind::Q4K) {
            let (rows, cols, raw) =
                self.stacked_raw(names, |t, name| t.raw(name, QK_K, Q4_K_BYTES))?;
            QMatrix::from_q4_k(rows, cols, &raw).prepared(self.cpu, false)
        } else {
            self.stacked(names)?
        };
        Ok(Linear { many, one })
    }

    /// A matrix whose rows are also read one at a time (the embeddings).
    fn rows_matrix(&mut self, name: &str) -> Result<QMatrix, LoadError> {
        Ok(self.unprepared(&[name])?.prepared(self.cpu, true))
    }
}

impl Model {
    /// Loads the standard GGUF tensor names (`blk.N.attn_q.weight`, …); query, key and value
    /// biases when present, the output projection tied to the embeddings when absent.
    pub fn load(config: Config, t: &mut Tensors<'_>) -> Result<Self, LoadError> {
        let embed = t.rows_matrix("token_embd.weight")?;
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let n = |s: &str| format!("blk.{i}.{s}");
            let qkv_bias = if t.has(&n("attn_q.bias")) {
                let mut bias = t.f32(&n("attn_q.bias"))?;
                bias.extend(t.f32(&n("attn_k.bias"))?);
                bias.extend(t.f32(&n("attn_v.bias"))?);
                Some(bias)
            } else {
                None
            };
            layers.push(Layer {
                attn_norm: t.f32(&n("attn_norm.weight"))?,
                qkv: t.linear(&[
                    &n("attn_q.weight"),
                    &n("attn_k.weight"),
                    &n("attn_v.weight"),
                ])?,
                qkv_bias,
                out: t.linear(&[&n("attn_output.weight")])?,
                ffn_norm: t.f32(&n("ffn_norm.weight"))?,
                gate_up: t.linear(&[&n("ffn_gate.weight"), &n("ffn_up.weight")])?,
                down: t.linear(&[&n("ffn_down.weight")])?,
            });
        }
        let lm_head = if t.has("output.weight") {
            Some(t.linear(&["output.weight"])?)
        } else {
            None
        };
        let model = Self {
            cpu: t.cpu,
            out_norm: t.f32("output_norm.weight")?,
            config,
            embed,
            layers,
            lm_head,
        };
        model.check()?;
        Ok(model)
    }

    fn check(&self) -> Result<(), LoadError> {
        let c = &self.config;
        let bad = |what: &str| Err(LoadError::Format(format!("unexpected shape of {what}")));
        if self.embed.cols != c.dim || self.out_norm.len() != c.dim {
            return bad("the embeddings");
        }
        for l in &self.layers {
            // A 4-bit copy is built with its 8-bit twin's shape (`Tensors::linear`).
            let (qkv, out, gate_up, down) =
                (&l.qkv.many, &l.out.many, &l.gate_up.many, &l.down.many);
            let qkv_rows = c.q_dim() + 2 * c.kv_dim();
            if qkv.rows != qkv_rows
                || qkv.cols != c.dim
                || l.qkv_bias.as_ref().is_some_and(|b| b.len() != qkv_rows)
                || (out.rows, out.cols) != (c.dim, c.q_dim())
                || (gate_up.rows, gate_up.cols) != (2 * c.ffn_dim, c.dim)
                || (down.rows, down.cols) != (c.dim, c.ffn_dim)
                || l.attn_norm.len() != c.dim
                || l.ffn_norm.len() != c.dim
            {
                return bad("a block");
            }
        }
        if self.lm_head.as_ref().is_some_and(|h| h.many.cols != c.dim) {
            return bad("the output projection");
        }
        Ok(())
    }

    /// Token ids run from `0..vocab()`.
    pub fn vocab(&self) -> usize {
        self.embed.rows
    }

    /// Bytes of weights held.
    pub fn bytes(&self) -> usize {
        let layers: usize = self
            .layers
            .iter()
            .map(|l| l.qkv.bytes() + l.out.bytes() + l.gate_up.bytes() + l.down.bytes())
            .sum();
        layers + self.embed.bytes() + self.lm_head.as_ref().map_or(0, Linear::bytes)
    }
}

/// The per-sequence state: KV cache and scratch buffers, reused from call to call.
#[derive(Default)]
pub struct State {
    /// Tokens in the cache.
    len: usize,
    /// Positions the cache has room for.
    capacity: usize,
    /// Per layer, `capacity × kv_dim` keys and values.
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
    /// Per layer where attention is tiled, the keys again, transposed: position `j`'s value
    /// `d` at `[d * capacity + j]` (`capacity` a multiple of [`attention::KEY_BLOCK`]).
    keys_t: Vec<Vec<f32>>,
    x: Vec<f32>,
    xn: Vec<f32>,
    tmp: Vec<f32>,
    qkv: Vec<f32>,
    att: Vec<f32>,
    gate_up: Vec<f32>,
    acts: Q8Acts,
    /// One token's activations for the projections that keep K-quant rows.
    kacts: KActs,
    /// Attention scores, `capacity` per thread and query head of a key/value group.
    scores: Vec<f32>,
    /// Each thread's scores in tiled attention.
    tile_scores: Vec<f32>,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

/// The keys and values of a sequence's first positions, copied out of a [`State`] to be put
/// back later ([`Model::save`], [`Model::restore`]).
pub struct Saved {
    len: usize,
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
}

impl State {
    /// Tokens in the KV cache.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Room for `positions`; with `transposed`, the transposed keys too (their first `len`
    /// positions written again at the new stride).
    fn reserve(&mut self, c: &Config, positions: usize, threads: usize, transposed: bool) {
        let kv_dim = c.kv_dim();
        let missing = transposed && self.keys_t.len() != c.layers;
        if positions <= self.capacity && self.keys.len() == c.layers && !missing {
            return;
        }
        let capacity = if positions <= self.capacity {
            self.capacity
        } else {
            positions.max(2 * self.capacity).max(256)
        }
        .next_multiple_of(attention::KEY_BLOCK);
        self.keys.resize_with(c.layers, Vec::new);
        self.values.resize_with(c.layers, Vec::new);
        for cache in self.keys.iter_mut().chain(self.values.iter_mut()) {
            cache.resize(capacity * kv_dim, 0.0);
        }
        self.scores
            .resize(capacity * threads * (c.heads / c.kv_heads), 0.0);
        self.capacity = capacity;
        if transposed {
            // At the new stride, written again from the keys of the positions held.
            self.keys_t.resize_with(c.layers, Vec::new);
            for li in 0..c.layers {
                self.keys_t[li] = vec![0.0; kv_dim * capacity];
                self.transpose_keys(li, kv_dim, 0, self.len);
            }
        }
    }

    /// Layer `li`'s transposed keys of positions `from..to`, from its keys.
    fn transpose_keys(&mut self, li: usize, kv_dim: usize, from: usize, to: usize) {
        let (keys, keys_t, cap) = (&self.keys[li], &mut self.keys_t[li], self.capacity);
        for (d, row) in keys_t.chunks_exact_mut(cap).enumerate() {
            for (j, v) in row[from..to].iter_mut().enumerate() {
                *v = keys[(from + j) * kv_dim + d];
            }
        }
    }
}

/// Layer `li`'s attention for the `t_n` tokens from `pos` in tiles, each (token block,
/// key/value head) one, dealt round-robin, against the transposed keys. Every token's
/// attention is computed alike whether it comes alone or among others, so a prompt gives
/// the same logits whatever part of it the cache already held.
fn attend_tiles(
    s: &mut State,
    li: usize,
    pool: &Pool,
    c: &Config,
    pos: usize,
    t_n: usize,
    cpu: Cpu,
) {
    use attention::{Tile, KEY_BLOCK, TOKEN_BLOCK};
    let (hd, q_dim, kv_dim) = (c.head_dim, c.q_dim(), c.kv_dim());
    let (qkv_dim, group) = (q_dim + 2 * kv_dim, c.heads / c.kv_heads);
    let (cap, n) = (s.capacity, pool.threads());
    let per_thread = TOKEN_BLOCK * group * (pos + t_n).next_multiple_of(KEY_BLOCK);
    s.tile_scores.resize(per_thread * n, 0.0);
    let (values, qkv, keys_t) = (&s.values[li], &s.qkv, &s.keys_t[li]);
    let att = SyncPtr(s.att.as_mut_ptr());
    let scores = SyncPtr(s.tile_scores.as_mut_ptr());
    let blocks = t_n.div_ceil(TOKEN_BLOCK);
    let scale = 1.0 / (hd as f32).sqrt();
    pool.run(&|i| {
        // SAFETY: each thread has its own `per_thread` scores.
        let scores =
            unsafe { std::slice::from_raw_parts_mut(scores.get().add(i * per_thread), per_thread) };
        for item in (i..blocks * c.kv_heads).step_by(n) {
            let (b, g) = (item / c.kv_heads, item % c.kv_heads);
            let t0 = b * TOKEN_BLOCK;
            let tile = Tile {
                q: &qkv[t0 * qkv_dim + g * group * hd..],
                q_stride: qkv_dim,
                tokens: TOKEN_BLOCK.min(t_n - t0),
                first: pos + t0,
                kt: &keys_t[g * hd * cap..(g + 1) * hd * cap],
                kt_stride: cap,
                values,
                stride: kv_dim,
                offset: g * hd,
                head_dim: hd,
                group,
                scale,
            };
            // SAFETY: the kernels tile (checked by the caller); block b's heads of group g are
            // this thread's item alone.
            unsafe {
                let out = att.get().add(t0 * q_dim + g * group * hd);
                attention::attend_tile(cpu, &tile, scores, out, q_dim);
            }
        }
    });
}

/// `out = x / rms(x) * weight`.
fn rms_norm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let scale = 1.0 / (ms + eps).sqrt();
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = v * scale * w;
    }
}

fn rope(v: &mut [f32], cos: &[f32], sin: &[f32], style: Rope) {
    let half = cos.len();
    match style {
        Rope::Halves => {
            let (a, b) = v.split_at_mut(half);
            for i in 0..half {
                let (x0, x1) = (a[i], b[i]);
                a[i] = x0 * cos[i] - x1 * sin[i];
                b[i] = x0 * sin[i] + x1 * cos[i];
            }
        }
        Rope::Interleaved => {
            for (i, pair) in v.chunks_exact_mut(2).enumerate() {
                let (x0, x1) = (pair[0], pair[1]);
                pair[0] = x0 * cos[i] - x1 * sin[i];
                pair[1] = x0 * sin[i] + x1 * cos[i];
            }
        }
    }
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// `out[t][..rows] = w · acts[t]` for every token, split across the pool by row groups.
fn matmul(cpu: Cpu, pool: &Pool, w: &QMatrix, acts: &Q8Acts, out: &mut [f32]) {
    assert!(out.len() >= acts.tokens * w.rows);
    let units = w.units();
    let ptr = SyncPtr(out.as_mut_ptr());
    let n = pool.threads();
    pool.run(&|i| {
        let r = share(units, i, n);
        // SAFETY: each thread writes its own rows of `out`, which holds every token's rows.
        unsafe { quant::matmul(cpu, w, acts, r.start, r.end, ptr.get(), w.rows) };
    });
}

/// `out = w · x` for the pass's tokens: from `acts` (`x` quantized in 32-value blocks), or,
/// for one token where `w` keeps other weights for it, from those ([`Linear`]), the K-quant
/// rows with `x` quantized again into `kacts`.
fn project(
    cpu: Cpu,
    pool: &Pool,
    w: &Linear,
    (acts, kacts): (&Q8Acts, &mut KActs),
    x: &[f32],
    out: &mut [f32],
) {
    match &w.one {
        Some(One::Rows(k)) if acts.tokens == 1 => {
            kacts.quantize(&x[..k.cols]);
            let kacts = &*kacts;
            let ptr = SyncPtr(out.as_mut_ptr());
            assert!(out.len() >= k.rows);
            let n = pool.threads();
            pool.run(&|i| {
                let r = k.share(i, n);
                // SAFETY: each thread writes its own rows of `out`, which holds them all.
                unsafe { k.matvec(cpu, kacts, r.start, r.end, ptr.get()) };
            });
        }
        Some(One::Groups(g)) if acts.tokens == 1 => matmul(cpu, pool, g, acts, out),
        _ => matmul(cpu, pool, &w.many, acts, out),
    }
}

/// Quantizes `f(t, row)`'s output rows for every token into `acts`, split by tokens: `f`
/// fills the `cols` values of token `t` (and may update that token's other buffers). Where
/// the projection that reads them is `w` and it will not read `acts` ([`Linear::reads_q8`]),
/// only `f` runs.
fn quantize_with(
    pool: &Pool,
    (acts, w): (&mut Q8Acts, &Linear),
    buf: &mut [f32],
    tokens: usize,
    cols: usize,
    f: &(dyn Fn(usize, &mut [f32]) + Sync),
) {
    acts.reset(tokens, cols);
    let q8 = w.reads_q8(tokens);
    let writer = acts.writer();
    let ptr = SyncPtr(buf.as_mut_ptr());
    let n = pool.threads();
    pool.run(&|i| {
        for t in share(tokens, i, n) {
            // SAFETY: token t's row of `buf` belongs to this thread alone.
            let row = unsafe { std::slice::from_raw_parts_mut(ptr.get().add(t * cols), cols) };
            f(t, row);
            if q8 {
                // SAFETY: token t's quantized values are ours alone.
                unsafe { writer.quantize(row, t) };
            }
        }
    });
}

impl Model {
    /// Bytes of keys and values one position takes in the cache.
    pub fn position_bytes(&self) -> usize {
        2 * self.config.layers * self.config.kv_dim() * std::mem::size_of::<f32>()
    }

    /// A copy of the keys and values of `state`'s first `len` positions (at most its length).
    pub fn save(&self, state: &State, len: usize) -> Saved {
        let len = len.min(state.len);
        let n = len * self.config.kv_dim();
        let copy = |caches: &[Vec<f32>]| caches.iter().map(|c| c[..n].to_vec()).collect();
        Saved {
            len,
            keys: copy(&state.keys),
            values: copy(&state.values),
        }
    }

    /// Makes `state` hold `saved` and nothing after it: the next pass may start at
    /// `saved.len()`.
    pub fn restore(&self, state: &mut State, saved: &Saved, threads: usize) {
        let transposed = attention::tiles(self.cpu, self.config.head_dim);
        state.reserve(&self.config, saved.len, threads, transposed);
        let n = saved.len * self.config.kv_dim();
        for (cache, part) in state
            .keys
            .iter_mut()
            .zip(&saved.keys)
            .chain(state.values.iter_mut().zip(&saved.values))
        {
            cache[..n].copy_from_slice(part);
        }
        if transposed {
            for li in 0..self.config.layers {
                state.transpose_keys(li, self.config.kv_dim(), 0, saved.len);
            }
        }
        state.len = saved.len;
    }

    /// Runs `ids` at positions `pos..` (the cache is cut to `pos` first) and returns the logits after each of the last `tail` of them
    /// (at least one, at most all), `tail × vocab` values, one row per token in order.
    pub fn forward_tail(
        &self,
        state: &mut State,
        pool: &Pool,
        ids: &[u32],
        pos: usize,
        tail: usize,
    ) -> Vec<f32> {
        let c = &self.config;
        let (t_n, dim, hd) = (ids.len(), c.dim, c.head_dim);
        let (q_dim, kv_dim) = (c.q_dim(), c.kv_dim());
        let qkv_dim = q_dim + 2 * kv_dim;
        assert!(pos <= state.len, "position {pos} is past the cache");
        state.len = pos;
        let tiled = attention::tiles(self.cpu, hd);
        state.reserve(c, pos + t_n, pool.threads(), tiled);
        let s = state;
        s.x.resize(t_n * dim, 0.0);
        s.xn.resize(t_n * dim.max(c.ffn_dim), 0.0);
        s.tmp.resize(t_n * dim.max(c.ffn_dim), 0.0);
        s.qkv.resize(t_n * qkv_dim, 0.0);
        s.att.resize(t_n * q_dim, 0.0);
        s.gate_up.resize(t_n * 2 * c.ffn_dim, 0.0);
        for (t, &id) in ids.iter().enumerate() {
            self.embed
                .row(id as usize, &mut s.x[t * dim..(t + 1) * dim]);
        }
        // Rotation angles of every position of this call.
        let half = hd / 2;
        s.cos.resize(t_n * half, 0.0);
        s.sin.resize(t_n * half, 0.0);
        for t in 0..t_n {
            for i in 0..half {
                let freq = (c.rope_base as f64).powf(-2.0 * i as f64 / hd as f64);
                let angle = (pos + t) as f64 * freq;
                s.cos[t * half + i] = angle.cos() as f32;
                s.sin[t * half + i] = angle.sin() as f32;
            }
        }
        let scale = 1.0 / (hd as f32).sqrt();
        let group = c.heads / c.kv_heads;
        let capacity = s.capacity;
        let cpu = self.cpu;
        for (li, layer) in self.layers.iter().enumerate() {
            // x += previous block's output (kept in tmp); normalise; quantize.
            let first = li == 0;
            let x = SyncPtr(s.x.as_mut_ptr());
            let tmp = &s.tmp;
            let acts = (&mut s.acts, &layer.qkv);
            quantize_with(pool, acts, &mut s.xn, t_n, dim, &|t, row| {
                // SAFETY: token t's row of x belongs to the thread handling t.
                let xr = unsafe { std::slice::from_raw_parts_mut(x.get().add(t * dim), dim) };
                if !first {
                    for (x, d) in xr.iter_mut().zip(&tmp[t * dim..(t + 1) * dim]) {
                        *x += d;
                    }
                }
                rms_norm(xr, &layer.attn_norm, c.norm_eps, row);
            });
            let acts = (&s.acts, &mut s.kacts);
            project(cpu, pool, &layer.qkv, acts, &s.xn, &mut s.qkv);
            // Biases, rotations, and the new keys and values into the cache.
            let (keys, values) = (&mut s.keys[li], &mut s.values[li]);
            for t in 0..t_n {
                let row = &mut s.qkv[t * qkv_dim..(t + 1) * qkv_dim];
                if let Some(bias) = &layer.qkv_bias {
                    for (v, b) in row.iter_mut().zip(bias) {
                        *v += b;
                    }
                }
                let (cos, sin) = (
                    &s.cos[t * half..(t + 1) * half],
                    &s.sin[t * half..(t + 1) * half],
                );
                for head in row[..q_dim + kv_dim].chunks_exact_mut(hd) {
                    rope(head, cos, sin, c.rope);
                }
                let p = pos + t;
                keys[p * kv_dim..(p + 1) * kv_dim].copy_from_slice(&row[q_dim..q_dim + kv_dim]);
                values[p * kv_dim..(p + 1) * kv_dim].copy_from_slice(&row[q_dim + kv_dim..]);
            }
            if tiled {
                s.transpose_keys(li, kv_dim, pos, pos + t_n);
                attend_tiles(s, li, pool, c, pos, t_n, cpu);
            } else {
                // Attention, one (token, key/value head) at a time, dealt round-robin to
                // balance the causal mask's uneven work.
                let (keys, values, qkv) = (&s.keys[li], &s.values[li], &s.qkv);
                let att = SyncPtr(s.att.as_mut_ptr());
                let scores = SyncPtr(s.scores.as_mut_ptr());
                let n = pool.threads();
                let per_thread = capacity * group;
                pool.run(&|i| {
                    // SAFETY: each thread has its own `capacity × group` scores.
                    let scores = unsafe {
                        std::slice::from_raw_parts_mut(scores.get().add(i * per_thread), per_thread)
                    };
                    for item in (i..t_n * c.kv_heads).step_by(n) {
                        let (t, g) = (item / c.kv_heads, item % c.kv_heads);
                        let heads = Heads {
                            q: &qkv[t * qkv_dim + g * group * hd..][..group * hd],
                            keys,
                            values,
                            stride: kv_dim,
                            offset: g * hd,
                            head_dim: hd,
                            seen: pos + t + 1,
                            scale,
                        };
                        // SAFETY: (t, g)'s heads are this thread's item alone.
                        let out = unsafe {
                            std::slice::from_raw_parts_mut(
                                att.get().add(t * q_dim + g * group * hd),
                                group * hd,
                            )
                        };
                        attention::attend(cpu, &heads, scores, out);
                    }
                });
            }
            s.acts.reset(t_n, q_dim);
            if layer.out.reads_q8(t_n) {
                let writer = s.acts.writer();
                let att = &s.att;
                let n = pool.threads();
                pool.run(&|i| {
                    let r = share(t_n, i, n);
                    // SAFETY: distinct threads quantize distinct tokens.
                    unsafe { writer.quantize(&att[r.start * q_dim..r.end * q_dim], r.start) };
                });
            }
            let acts = (&s.acts, &mut s.kacts);
            project(cpu, pool, &layer.out, acts, &s.att, &mut s.tmp);
            // x += attention output; normalise; quantize.
            let x = SyncPtr(s.x.as_mut_ptr());
            let tmp = &s.tmp;
            let acts = (&mut s.acts, &layer.gate_up);
            quantize_with(pool, acts, &mut s.xn, t_n, dim, &|t, row| {
                // SAFETY: token t's row of x belongs to the thread handling t.
                let xr = unsafe { std::slice::from_raw_parts_mut(x.get().add(t * dim), dim) };
                for (x, d) in xr.iter_mut().zip(&tmp[t * dim..(t + 1) * dim]) {
                    *x += d;
                }
                rms_norm(xr, &layer.ffn_norm, c.norm_eps, row);
            });
            let acts = (&s.acts, &mut s.kacts);
            project(cpu, pool, &layer.gate_up, acts, &s.xn, &mut s.gate_up);
            let ff = c.ffn_dim;
            let gate_up = &s.gate_up;
            let acts = (&mut s.acts, &layer.down);
            quantize_with(pool, acts, &mut s.xn, t_n, ff, &|t, row| {
                let gu = &gate_up[t * 2 * ff..(t + 1) * 2 * ff];
                let (gate, up) = gu.split_at(ff);
                for ((h, g), u) in row.iter_mut().zip(gate).zip(up) {
                    *h = silu(*g) * u;
                }
            });
            let acts = (&s.acts, &mut s.kacts);
            project(cpu, pool, &layer.down, acts, &s.xn, &mut s.tmp);
        }
        s.len = pos + t_n;
        // The last `tail` tokens only: final residual, norm, output projection.
        let tail = tail.clamp(1, t_n);
        let mut xn = vec![0f32; tail * dim];
        for (t, xn) in (t_n - tail..t_n).zip(xn.chunks_exact_mut(dim)) {
            let row = t * dim..(t + 1) * dim;
            for (x, d) in s.x[row.clone()].iter_mut().zip(&s.tmp[row.clone()]) {
                *x += d;
            }
            rms_norm(&s.x[row], &self.out_norm, c.norm_eps, xn);
        }
        s.acts.reset(tail, dim);
        if self.lm_head.as_ref().is_none_or(|h| h.reads_q8(tail)) {
            s.acts.quantize(&xn);
        }
        match &self.lm_head {
            Some(head) => {
                let mut logits = vec![0f32; tail * head.many.rows];
                project(cpu, pool, head, (&s.acts, &mut s.kacts), &xn, &mut logits);
                logits
            }
            None => {
                let mut logits = vec![0f32; tail * self.embed.rows];
                matmul(cpu, pool, &self.embed, &s.acts, &mut logits);
                logits
            }
        }
    }
}
