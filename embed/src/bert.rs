//! A sentence-transformers BERT model (Transformer -> mean Pooling -> Normalize) on candle.

use std::ops::Range;
use std::path::Path;

#[cfg(feature = "candle-bert")]
use candle_core::Tensor;
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
#[cfg(feature = "candle-bert")]
use candle_transformers::models::bert::BertModel;
use serde::Deserialize;
use tokenizers::{Encoding, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use walkrag_core::{EmbedError, Embedder, Embeddings};

use crate::config::BertConfig;
use crate::packed::PackedBert;
use crate::source::ModelSpec;

/// Which implementation runs the transformer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// The packed encoder when the model's config allows it (GELU, absolute positions), else
    /// candle-transformers' BERT (with the `candle-bert` feature; an error without).
    #[default]
    Auto,
    /// Unpadded batches through fused kernels: several times faster (see README).
    Packed,
    /// candle-transformers' `BertModel` on padded batches: the reference implementation.
    /// Only with the `candle-bert` feature (its crate costs minutes to compile); loading it
    /// without the feature is an error that says so.
    Candle,
}

/// Host buffers of the candle backend, reused from batch to batch.
#[cfg(feature = "candle-bert")]
#[derive(Default)]
struct PaddedBuffers {
    ids: Vec<u32>,
    mask: Vec<u32>,
    pooled: Vec<f32>,
}

enum Encoder {
    Packed(PackedBert),
    #[cfg(feature = "candle-bert")]
    Candle(BertModel),
}

/// How texts are grouped into forward passes.
///
/// Texts are sorted by token count first. The candle backend pads each batch to its longest
/// text, so a batch costs count x longest tokens; the packed backend costs its real tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPolicy {
    /// Most texts in one forward pass.
    pub max_batch: usize,
    /// Most padded tokens (texts x longest text) in one forward pass; keeps activations in cache.
    pub max_batch_tokens: usize,
}

impl Default for BatchPolicy {
    /// Measured with `walkrag bench embed --batch N --batch-tokens T` on hotpotqa-100, 2 cores:
    /// 2048 tokens lost to per-batch overhead, 8192 and 16384 to cache misses and an uneven
    /// last round of batches between the cores.
    fn default() -> Self {
        Self {
            max_batch: 32,
            max_batch_tokens: 4096,
        }
    }
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
}

/// A loaded sentence-transformers BERT model.
pub struct SentenceEmbedder {
    id: String,
    encoder: Encoder,
    /// Truncates at `max_tokens`, pads nothing (batches are padded by hand).
    tokenizer: Tokenizer,
    /// The same tokenizer without truncation, for counting tokens.
    counter: Tokenizer,
    #[cfg(feature = "candle-bert")]
    device: Device,
    dim: usize,
    max_tokens: usize,
    policy: BatchPolicy,
}

fn load_err(what: impl std::fmt::Display) -> EmbedError {
    EmbedError::Load(what.to_string())
}

#[cfg(feature = "candle-bert")]
fn compute_err(e: candle_core::Error) -> EmbedError {
    EmbedError::Compute(e.to_string())
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, EmbedError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| load_err(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| load_err(format!("{} is not valid: {e}", path.display())))
}

impl SentenceEmbedder {
    /// Loads the model named by an `--embedder` spec (`minilm`, a folder, or a hub id).
    pub fn load(spec: &str) -> Result<Self, EmbedError> {
        Self::load_with(spec, Backend::Auto)
    }

    /// Loads a model with a chosen backend.
    pub fn load_with(spec: &str, backend: Backend) -> Result<Self, EmbedError> {
        let parsed = ModelSpec::parse(spec)?;
        let dir = parsed.resolve()?;
        let name = match &parsed {
            ModelSpec::Catalog(name) | ModelSpec::Hub(name) => name.clone(),
            ModelSpec::Dir(dir) => dir
                .canonicalize()
                .unwrap_or_else(|_| dir.clone())
                .display()
                .to_string(),
        };
        Self::load_dir(&dir, &name, backend)
    }

    /// Loads a sentence-transformers folder; `name` goes into [`Embedder::id`].
    pub fn load_dir(dir: &Path, name: &str, backend: Backend) -> Result<Self, EmbedError> {
        let config_path = dir.join("config.json");
        let config: BertConfig = read_json(&config_path)?;

        let pooling_path = dir.join("1_Pooling/config.json");
        if pooling_path.is_file() {
            let pooling: PoolingConfig = read_json(&pooling_path)?;
            if !pooling.pooling_mode_mean_tokens
                || pooling.pooling_mode_cls_token
                || pooling.pooling_mode_max_tokens
            {
                return Err(load_err(format!(
                    "{}: only mean pooling is supported",
                    pooling_path.display()
                )));
            }
        }
        let (counter, tokenizer, max_tokens) = load_tokenizers(dir, &config)?;

        let weights = dir.join("model.safetensors");
        let checksum = sha256_prefix(&weights)?;
        let device = Device::Cpu;
        // Safety: the weights file is memory-mapped read-only; walkrag never writes model files
        // while a model is loaded, and fetch-models.sh replaces a model folder by renaming.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device) }
            .map_err(|e| load_err(format!("cannot read {}: {e}", weights.display())))?;
        let not_bert = |e: &dyn std::fmt::Display| {
            load_err(format!(
                "{} does not hold a BERT model: {e}",
                weights.display()
            ))
        };
        let encoder = match backend {
            Backend::Auto | Backend::Packed if PackedBert::supports(&config) => {
                Encoder::Packed(PackedBert::load(vb, &config).map_err(|e| not_bert(&e))?)
            }
            Backend::Packed => {
                return Err(load_err(format!(
                    "the packed backend does not support {}",
                    unsupported(&config_path, &config)
                )))
            }
            Backend::Auto | Backend::Candle => {
                candle_encoder(&config_path, &config, backend, vb, &weights)?
            }
        };

        Ok(Self {
            id: format!("{name}@{checksum}"),
            encoder,
            tokenizer,
            counter,
            #[cfg(feature = "candle-bert")]
            device,
            dim: config.hidden_size,
            max_tokens,
            policy: BatchPolicy::default(),
        })
    }

    /// The backend that runs the transformer.
    pub fn backend(&self) -> Backend {
        match self.encoder {
            Encoder::Packed(_) => Backend::Packed,
            #[cfg(feature = "candle-bert")]
            Encoder::Candle(_) => Backend::Candle,
        }
    }

    /// Changes how texts are batched.
    pub fn with_batch_policy(mut self, policy: BatchPolicy) -> Self {
        assert!(
            policy.max_batch > 0 && policy.max_batch_tokens > 0,
            "batch limits must be positive"
        );
        self.policy = policy;
        self
    }

    /// Token ids as the model sees them (truncated, special tokens included).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        Ok(self.encode(&[text])?.remove(0).get_ids().to_vec())
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Encoding>, EmbedError> {
        self.tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))
    }

    /// Runs one padded batch of encodings (longest first) through candle-transformers' BERT and
    /// writes each pooled, normalised vector into `out` at the row given by `rows`.
    #[cfg(feature = "candle-bert")]
    fn run_candle_batch(
        &self,
        model: &BertModel,
        batch: &[&Encoding],
        rows: &[usize],
        buffers: &mut PaddedBuffers,
        out: &mut Embeddings,
    ) -> Result<(), EmbedError> {
        let PaddedBuffers { ids, mask, pooled } = buffers;
        let seq = batch.iter().map(|e| e.len()).max().unwrap_or(0);
        ids.clear();
        mask.clear();
        for enc in batch {
            ids.extend_from_slice(enc.get_ids());
            ids.resize(ids.len() + seq - enc.len(), 0);
            mask.extend(std::iter::repeat_n(1u32, enc.len()));
            mask.resize(mask.len() + seq - enc.len(), 0);
        }
        let shape = (batch.len(), seq);
        let input = Tensor::from_slice(ids, shape, &self.device).map_err(compute_err)?;
        let mask_t = Tensor::from_slice(mask, shape, &self.device).map_err(compute_err)?;
        let types = input.zeros_like().map_err(compute_err)?;
        let hidden = model
            .forward(&input, &types, Some(&mask_t))
            .map_err(compute_err)?;

        // Mean over real tokens: padding is multiplied out, then divide by each text's length.
        let weights = mask_t
            .to_dtype(DType::F32)
            .and_then(|m| m.unsqueeze(2))
            .map_err(compute_err)?;
        let summed = hidden
            .broadcast_mul(&weights)
            .and_then(|h| h.sum(1))
            .map_err(compute_err)?;
        pooled.clear();
        pooled.extend(
            summed
                .flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(compute_err)?,
        );

        // The masked sum points where the mean does: normalising it gives the embedding.
        for (vector, &row) in pooled.chunks_exact(self.dim).zip(rows) {
            let dst = out.row_mut(row);
            dst.copy_from_slice(vector);
            crate::kernels::normalise(dst);
        }
        Ok(())
    }
}

/// Why the packed encoder cannot run a config, for errors.
fn unsupported(path: &Path, config: &BertConfig) -> String {
    format!(
        "{} (activation {:?}, positions {:?}, hidden size {} over {} heads; it runs \"gelu\", \"absolute\" and whole heads)",
        path.display(),
        config.hidden_act,
        config.position_embedding_type,
        config.hidden_size,
        config.num_attention_heads
    )
}

/// candle-transformers' BERT for `Backend::Candle`, or for `Backend::Auto` when the packed
/// encoder cannot run the config.
#[cfg(feature = "candle-bert")]
fn candle_encoder(
    config_path: &Path,
    _config: &BertConfig,
    _backend: Backend,
    vb: VarBuilder,
    weights: &Path,
) -> Result<Encoder, EmbedError> {
    let config: candle_transformers::models::bert::Config = read_json(config_path)?;
    BertModel::load(vb, &config)
        .map(Encoder::Candle)
        .map_err(|e| {
            load_err(format!(
                "{} does not hold a BERT model: {e}",
                weights.display()
            ))
        })
}

/// Without the `candle-bert` feature there is no reference BERT: the error says how to get it.
#[cfg(not(feature = "candle-bert"))]
fn candle_encoder(
    config_path: &Path,
    config: &BertConfig,
    backend: Backend,
    _vb: VarBuilder,
    _weights: &Path,
) -> Result<Encoder, EmbedError> {
    const BUILD: &str = "build walkrag with `--features walkrag-embed/candle-bert`";
    Err(load_err(match backend {
        Backend::Candle => format!("the candle backend is not built in: {BUILD}"),
        _ => format!(
            "the packed encoder does not support {}; candle-transformers' BERT may: {BUILD}",
            unsupported(config_path, config)
        ),
    }))
}

/// The first 12 hex digits of a file's sha256: enough to tell model files apart in a manifest.
/// The model's tokenizer twice (without truncation, for counting; and truncating at the model's
/// `max_seq_length`, for encoding) and that length.
fn load_tokenizers(
    dir: &Path,
    config: &BertConfig,
) -> Result<(Tokenizer, Tokenizer, usize), EmbedError> {
    let st_config = dir.join("sentence_bert_config.json");
    let max_tokens = if st_config.is_file() {
        read_json::<SentenceBertConfig>(&st_config)?.max_seq_length
    } else {
        None
    }
    .unwrap_or(config.max_position_embeddings)
    .min(config.max_position_embeddings);

    let tokenizer_path = dir.join("tokenizer.json");
    let mut counter = Tokenizer::from_file(&tokenizer_path)
        .map_err(|e| load_err(format!("cannot load {}: {e}", tokenizer_path.display())))?;
    // tokenizer.json may ship fixed padding and a shorter truncation (MiniLM's does: 128);
    // sentence-transformers overrides both, and so do we.
    counter.with_padding(None);
    counter
        .with_truncation(None)
        .map_err(|e| load_err(format!("cannot configure the tokenizer: {e}")))?;
    let mut tokenizer = counter.clone();
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }))
        .map_err(|e| load_err(format!("cannot configure the tokenizer: {e}")))?;
    Ok((counter, tokenizer, max_tokens))
}

/// A sentence-transformers model's tokenizer without its weights: what a remote embedder
/// chunks by, so its chunks are cut exactly as the local model's would be.
pub(crate) struct TokenCounter {
    counter: Tokenizer,
    max_tokens: usize,
}

impl TokenCounter {
    /// The tokenizer and token limit of the model an `--embedder` spec names.
    pub(crate) fn load(spec: &str) -> Result<Self, EmbedError> {
        let dir = ModelSpec::parse(spec)?.resolve()?;
        let config: BertConfig = read_json(&dir.join("config.json"))?;
        let (counter, _, max_tokens) = load_tokenizers(&dir, &config)?;
        Ok(Self {
            counter,
            max_tokens,
        })
    }

    pub(crate) fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    pub(crate) fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        count_tokens(&self.counter, text)
    }

    pub(crate) fn token_spans(&self, text: &str) -> Result<Vec<Range<usize>>, EmbedError> {
        token_spans(&self.counter, text)
    }
}

fn count_tokens(counter: &Tokenizer, text: &str) -> Result<usize, EmbedError> {
    counter
        .encode(text, true)
        .map(|e| e.len())
        .map_err(|e| EmbedError::Tokenize(e.to_string()))
}

fn token_spans(counter: &Tokenizer, text: &str) -> Result<Vec<Range<usize>>, EmbedError> {
    let encoding = counter
        .encode(text, false)
        .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
    Ok(encoding
        .get_offsets()
        .iter()
        .map(|&(start, end)| start..end)
        .collect())
}

fn sha256_prefix(path: &Path) -> Result<String, EmbedError> {
    let mut sum = walkrag_core::sha256_file(path)
        .map_err(|e| load_err(format!("cannot read {}: {e}", path.display())))?;
    sum.truncate(12);
    Ok(sum)
}

/// Splits `order` (indices sorted longest first) into batches within `policy`. With `padded`,
/// a batch costs count x its first (longest) text; without, the sum of its texts.
fn plan_batches(
    order: &[usize],
    len_of: impl Fn(usize) -> usize,
    policy: BatchPolicy,
    padded: bool,
) -> Vec<std::ops::Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let longest = len_of(order[start]).max(1);
        let mut end = start + 1;
        let mut cost = longest;
        while end < order.len() && end - start < policy.max_batch {
            let next = if padded {
                longest
            } else {
                len_of(order[end]).max(1)
            };
            if cost + next > policy.max_batch_tokens {
                break;
            }
            cost += next;
            end += 1;
        }
        batches.push(start..end);
        start = end;
    }
    batches
}

impl Embedder for SentenceEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        count_tokens(&self.counter, text)
    }

    fn token_spans(&self, text: &str) -> Result<Vec<Range<usize>>, EmbedError> {
        token_spans(&self.counter, text)
    }

    fn embed(&self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
        let mut out = Embeddings::zeros(texts.len(), self.dim);
        if texts.is_empty() {
            return Ok(out);
        }
        let encodings = self.encode(texts)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));

        let len_of = |i: usize| encodings[i].len();
        match &self.encoder {
            Encoder::Packed(model) => {
                let batches = plan_batches(&order, len_of, self.policy, false);
                let threads = crate::compute_threads();
                // With several batches, each core runs whole batches on its own (no per-GEMM
                // synchronisation); a single batch (a query) is split across cores instead.
                let workers = threads.min(batches.len()).max(1);
                let per_batch_threads = if workers > 1 { 1 } else { threads };
                let most = batches
                    .iter()
                    .map(|b| order[b.clone()].iter().map(|&i| len_of(i)).sum())
                    .max()
                    .unwrap_or(0);
                let next = std::sync::atomic::AtomicUsize::new(0);
                let shared_out = std::sync::Mutex::new(&mut out);
                std::thread::scope(|scope| {
                    for _ in 0..workers {
                        scope.spawn(|| {
                            let mut scratch = model.scratch(most);
                            let mut pooled = vec![0.0f32; self.policy.max_batch * self.dim];
                            let mut ids: Vec<&[u32]> = Vec::with_capacity(self.policy.max_batch);
                            loop {
                                let b = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let Some(range) = batches.get(b) else { break };
                                let rows = &order[range.clone()];
                                ids.clear();
                                ids.extend(rows.iter().map(|&i| encodings[i].get_ids()));
                                let pooled = &mut pooled[..rows.len() * self.dim];
                                model.embed_batch(&ids, &mut scratch, pooled, per_batch_threads);
                                let mut out = shared_out.lock().unwrap_or_else(|e| e.into_inner());
                                for (&row, vector) in rows.iter().zip(pooled.chunks_exact(self.dim))
                                {
                                    out.row_mut(row).copy_from_slice(vector);
                                }
                            }
                        });
                    }
                });
            }
            #[cfg(feature = "candle-bert")]
            Encoder::Candle(model) => {
                let mut buffers = PaddedBuffers::default();
                let mut batch: Vec<&Encoding> = Vec::with_capacity(self.policy.max_batch);
                for range in plan_batches(&order, len_of, self.policy, true) {
                    let rows = &order[range];
                    batch.clear();
                    batch.extend(rows.iter().map(|&i| &encodings[i]));
                    self.run_candle_batch(model, &batch, rows, &mut buffers, &mut out)?;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_both_limits() {
        let lens = [256, 200, 120, 120, 60, 10, 10, 2];
        let order: Vec<usize> = (0..lens.len()).collect();
        let policy = BatchPolicy {
            max_batch: 3,
            max_batch_tokens: 400,
        };
        let padded = plan_batches(&order, |i| lens[i], policy, true);
        assert_eq!(padded, vec![0..1, 1..3, 3..6, 6..8]);
        for b in &padded {
            assert!(b.len() <= 3);
            assert!(b.len() * lens[b.start] <= 400 || b.len() == 1);
        }
        let packed = plan_batches(&order, |i| lens[i], policy, false);
        assert_eq!(packed, vec![0..1, 1..3, 3..6, 6..8]);
        let packed = plan_batches(
            &order,
            |i| lens[i],
            BatchPolicy {
                max_batch: 8,
                max_batch_tokens: 400,
            },
            false,
        );
        assert_eq!(packed, vec![0..1, 1..3, 3..8]);
    }

    #[test]
    fn an_overlong_text_still_gets_a_batch_of_its_own() {
        let policy = BatchPolicy {
            max_batch: 8,
            max_batch_tokens: 100,
        };
        for padded in [true, false] {
            assert_eq!(plan_batches(&[0], |_| 10_000, policy, padded), vec![0..1]);
        }
    }
}
