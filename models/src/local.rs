//! Local GGUF chat models on candle: Qwen2 (`qwen2`) and Llama-family (`llama`, SmolLM2)
//! architectures, quantized, on the CPU.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use std::io::{Cursor, Read, Seek, SeekFrom};

use candle_core::quantized::ggml_file::qtensor_from_ggml;
use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::generation::LogitsProcessor;
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use walkrag_core::chat::StopCheck;
use walkrag_core::{
    ChatError, ChatModel, ChatRequest, Delta, DeltaStream, FinishReason, Message, Role,
    StopMatcher, Usage,
};

use crate::channel::{self, Sender};
use crate::template::ChatMl;
use crate::tokenizer::GgufTokenizer;
use crate::LoadError;

enum Weights {
    Llama(quantized_llama::ModelWeights),
    Qwen2(quantized_qwen2::ModelWeights),
}

impl Weights {
    fn forward(&mut self, input: &Tensor, pos: usize) -> candle_core::Result<Tensor> {
        match self {
            Weights::Llama(m) => m.forward(input, pos),
            Weights::Qwen2(m) => m.forward(input, pos),
        }
    }
}

struct Inner {
    /// One generation at a time per loaded model; the KV cache lives in the weights.
    weights: Mutex<Weights>,
    tokenizer: GgufTokenizer,
    template: ChatMl,
    context_length: usize,
    device: Device,
}

/// A GGUF model loaded in memory. Cheap to clone (shared weights).
#[derive(Clone)]
pub struct LocalModel {
    id: String,
    arch: String,
    inner: Arc<Inner>,
}

/// What the model's chat turn asks for when `json` is set: local models have no constrained
/// decoding, so JSON mode is an instruction appended to the system prompt.
const JSON_INSTRUCTION: &str = "Answer with a single JSON object and nothing else.";

impl LocalModel {
    /// Loads `path` (a `.gguf` file); `name` becomes the id `local:NAME`.
    pub fn load(path: &Path, name: &str) -> Result<Self, LoadError> {
        let io = |e: std::io::Error| LoadError::Io(format!("{}: {e}", path.display()));
        let mut file = std::fs::File::open(path).map_err(io)?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| {
            LoadError::Format(format!(
                "{} is not a readable GGUF file: {e}",
                path.display()
            ))
        })?;
        let get_str = |key: &str| -> Result<String, LoadError> {
            content
                .metadata
                .get(key)
                .and_then(|v| v.to_string().ok().cloned())
                .ok_or_else(|| LoadError::Format(format!("the GGUF has no `{key}`")))
        };
        let arch = get_str("general.architecture")?;
        let context_length = content
            .metadata
            .get(&format!("{arch}.context_length"))
            .and_then(|v| v.to_u32().ok())
            .ok_or_else(|| LoadError::Format(format!("the GGUF has no `{arch}.context_length`")))?
            as usize;
        let template = ChatMl::from_template(&get_str("tokenizer.chat_template")?)?;
        let tokenizer = GgufTokenizer::from_gguf(&content)?;
        let device = Device::Cpu;
        let weights_err =
            |e: candle_core::Error| LoadError::Format(format!("cannot load the weights: {e}"));
        let (content, mut reader) =
            with_fast_blocks(content, &mut file, &device).map_err(weights_err)?;
        let weights = match arch.as_str() {
            "qwen2" => Weights::Qwen2(
                quantized_qwen2::ModelWeights::from_gguf(content, &mut reader, &device)
                    .map_err(weights_err)?,
            ),
            "llama" => Weights::Llama(
                quantized_llama::ModelWeights::from_gguf(content, &mut reader, &device)
                    .map_err(weights_err)?,
            ),
            other => {
                return Err(LoadError::Unsupported(format!(
                    "architecture `{other}` (supported: qwen2, llama)"
                )))
            }
        };
        tracing::debug!(
            "loaded {} ({arch}, context {context_length})",
            path.display()
        );
        Ok(Self {
            id: format!("local:{name}"),
            arch,
            inner: Arc::new(Inner {
                weights: Mutex::new(weights),
                tokenizer,
                template,
                context_length,
                device,
            }),
        })
    }

    /// `qwen2` or `llama`.
    pub fn architecture(&self) -> &str {
        &self.arch
    }

    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.inner.tokenizer
    }

    /// The prompt text for `messages` (ChatML, ending with the assistant's turn).
    pub fn render(&self, messages: &[Message]) -> String {
        self.inner.template.render(messages)
    }

    /// Exclusive use of the model for running token ids through it directly (benchmarks,
    /// tests that compare logits). Generation waits until the session is dropped.
    pub fn session(&self) -> Result<Session<'_>, ChatError> {
        let weights = self.inner.weights.lock().map_err(|_| poisoned())?;
        Ok(Session {
            inner: &self.inner,
            weights,
        })
    }

    /// Generates on the calling thread, handing each delta to `emit`; stops early (without
    /// error) when `emit` returns false.
    pub fn generate(
        &self,
        request: &ChatRequest,
        emit: &mut dyn FnMut(Delta) -> bool,
    ) -> Result<(), ChatError> {
        self.inner.generate(request, emit)
    }
}

/// A model held for direct forward passes; see [`LocalModel::session`].
pub struct Session<'a> {
    inner: &'a Inner,
    weights: MutexGuard<'a, Weights>,
}

impl Session<'_> {
    /// Runs `ids` through the model starting at position `pos` (0 starts a new sequence and
    /// drops the KV cache) and returns the logits after the last one.
    pub fn forward(&mut self, ids: &[u32], pos: usize) -> Result<Vec<f32>, ChatError> {
        let logits = self.inner.forward(&mut self.weights, ids, pos)?;
        logits.to_vec1::<f32>().map_err(compute)
    }
}

/// Block types candle multiplies with scalar code only (no AVX2 kernel): Q4_1 (SmolLM2's
/// file) and Q5_0/Q5_1 (the tensors of Qwen2.5-0.5B whose rows are not a multiple of 256, so
/// `Q4_K_M` falls back to them). They take 85% of the time when left as they are.
const SLOW_BLOCKS: [GgmlDType; 3] = [GgmlDType::Q4_1, GgmlDType::Q5_0, GgmlDType::Q5_1];

/// Where a model's tensors are read from: the file itself, or a re-encoded copy in memory.
enum Source<'a> {
    File(&'a mut std::fs::File),
    Memory(Cursor<Vec<u8>>),
}

impl Read for Source<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::File(f) => f.read(buf),
            Source::Memory(m) => m.read(buf),
        }
    }
}

impl Seek for Source<'_> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match self {
            Source::File(f) => f.seek(pos),
            Source::Memory(m) => m.seek(pos),
        }
    }
}

/// Re-encodes tensors of [`SLOW_BLOCKS`] types as Q8_0 (same 32-value blocks, 8-bit values:
/// Q5_0 converts exactly, Q4_1 within a fraction of its own step), which candle multiplies
/// with AVX2. Files without such tensors are read as they are.
fn with_fast_blocks<'a>(
    content: gguf_file::Content,
    file: &'a mut std::fs::File,
    device: &Device,
) -> candle_core::Result<(gguf_file::Content, Source<'a>)> {
    let slow = content
        .tensor_infos
        .values()
        .filter(|t| SLOW_BLOCKS.contains(&t.ggml_dtype))
        .count();
    if slow == 0 {
        return Ok((content, Source::File(file)));
    }
    let started = std::time::Instant::now();
    let mut tensors = Vec::with_capacity(content.tensor_infos.len());
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    for name in names {
        let info = &content.tensor_infos[name];
        let tensor = match info.ggml_dtype {
            // Exact, and fast: a byte shuffle per block.
            GgmlDType::Q5_0 => {
                let start = content.tensor_data_offset + info.offset;
                let size = info.shape.elem_count() / 32 * Q5_0_BYTES;
                let mut raw = vec![0u8; size];
                file.seek(SeekFrom::Start(start))?;
                file.read_exact(&mut raw)?;
                let converted = q5_0_to_q8_0(&raw);
                qtensor_from_ggml(
                    GgmlDType::Q8_0,
                    &converted,
                    info.shape.dims().to_vec(),
                    device,
                )?
            }
            dtype if SLOW_BLOCKS.contains(&dtype) => {
                let tensor = content.tensor(file, name, device)?;
                QTensor::quantize(&tensor.dequantize(device)?, GgmlDType::Q8_0)?
            }
            _ => content.tensor(file, name, device)?,
        };
        tensors.push((name.clone(), tensor));
    }
    let metadata: Vec<(&str, &gguf_file::Value)> = content
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let tensor_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut buffer = Cursor::new(Vec::new());
    gguf_file::write(&mut buffer, &metadata, &tensor_refs)?;
    buffer.set_position(0);
    let content = gguf_file::Content::read(&mut buffer)?;
    tracing::debug!(
        "re-encoded {slow} tensors as Q8_0 in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Ok((content, Source::Memory(buffer)))
}

const Q5_0_BYTES: usize = 22;
const Q8_0_BYTES: usize = 34;

/// Q5_0 blocks (f16 scale, 32 high bits, 32 low nibbles) to Q8_0 blocks (the same f16 scale,
/// 32 signed bytes): value `j` is `d * (q - 16)` in both, so the conversion is exact.
fn q5_0_to_q8_0(src: &[u8]) -> Vec<u8> {
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

fn compute(e: candle_core::Error) -> ChatError {
    ChatError::Permanent(format!("local model failed: {e}"))
}

fn poisoned() -> ChatError {
    ChatError::Permanent("the local model crashed in an earlier generation".into())
}

impl Inner {
    fn forward(&self, weights: &mut Weights, ids: &[u32], pos: usize) -> Result<Tensor, ChatError> {
        let input = Tensor::new(ids, &self.device)
            .and_then(|t| t.unsqueeze(0))
            .map_err(compute)?;
        weights
            .forward(&input, pos)
            .and_then(|l| l.squeeze(0))
            .map_err(compute)
    }

    fn prompt_ids(&self, request: &ChatRequest) -> Result<Vec<u32>, ChatError> {
        let mut messages = request.messages.clone();
        if request.json {
            match messages.first_mut() {
                Some(first) if first.role == Role::System => {
                    first.content = format!("{}\n\n{JSON_INSTRUCTION}", first.content);
                }
                _ => messages.insert(0, Message::system(JSON_INSTRUCTION)),
            }
        }
        let prompt = self.template.render(&messages);
        self.tokenizer
            .encode(&prompt)
            .map_err(|e| ChatError::Permanent(format!("tokenizer failed: {e}")))
    }

    fn generate(
        &self,
        request: &ChatRequest,
        emit: &mut dyn FnMut(Delta) -> bool,
    ) -> Result<(), ChatError> {
        if !request.tools.is_empty() {
            return Err(ChatError::Permanent(
                "local models take no tool definitions; use a strategy's JSON action protocol"
                    .into(),
            ));
        }
        let ids = self.prompt_ids(request)?;
        if ids.len() >= self.context_length {
            return Err(ChatError::ContextTooLong {
                needed: ids.len() + 1,
                limit: self.context_length,
            });
        }
        let budget = request
            .sampling
            .max_tokens
            .min(self.context_length - ids.len());
        let s = &request.sampling;
        let temperature = (s.temperature > 0.0).then_some(s.temperature as f64);
        let top_p = (s.top_p > 0.0 && s.top_p < 1.0).then_some(s.top_p as f64);
        let mut sampler = LogitsProcessor::new(s.seed, temperature, top_p);
        let mut stops = StopMatcher::new(&s.stop);

        let mut weights = self.weights.lock().map_err(|_| poisoned())?;
        let mut logits = self.forward(&mut weights, &ids, 0)?;
        let mut generated: Vec<u32> = Vec::new();
        let mut shown = 0; // bytes of the decoded completion already emitted
        let mut finish = FinishReason::Length;
        while generated.len() < budget {
            let next = sampler.sample(&logits).map_err(compute)?;
            if self.tokenizer.stop_ids.contains(&next) {
                finish = FinishReason::Stop;
                break;
            }
            generated.push(next);
            let text = self
                .tokenizer
                .decode(&generated)
                .map_err(ChatError::Permanent)?;
            // A character split across tokens decodes as U+FFFD until its last byte arrives.
            if !text.ends_with('\u{FFFD}') && text.len() > shown {
                let piece = text[shown..].to_string();
                shown = text.len();
                let (out, reached_stop) = match stops.push(&piece) {
                    StopCheck::Continue(out) => (out, false),
                    StopCheck::Stop(out) => (out, true),
                };
                if !out.is_empty() && !emit(Delta::Text { text: out }) {
                    return Ok(());
                }
                if reached_stop {
                    finish = FinishReason::Stop;
                    break;
                }
            }
            if generated.len() == budget {
                break;
            }
            logits = self.forward(&mut weights, &[next], ids.len() + generated.len() - 1)?;
        }
        drop(weights);
        // Text held back as a possible start of a stop string is real text when the turn ended
        // otherwise (after a stop string the matcher holds nothing).
        let rest = stops.finish();
        if !rest.is_empty() && !emit(Delta::Text { text: rest }) {
            return Ok(());
        }
        let usage = Usage {
            prompt_tokens: ids.len(),
            completion_tokens: generated.len(),
        };
        emit(Delta::Done { usage, finish });
        Ok(())
    }
}

impl ChatModel for LocalModel {
    fn id(&self) -> &str {
        &self.id
    }

    fn context_length(&self) -> Option<usize> {
        Some(self.inner.context_length)
    }

    fn supports_tools(&self) -> bool {
        false
    }

    /// Generation runs on a thread of its own, off the async runtime; the stream is fed
    /// through a bounded channel, and dropping the stream stops generation at the next token.
    fn stream(&self, request: ChatRequest) -> DeltaStream {
        let (tx, stream) = channel::bounded(64);
        let model = self.clone();
        std::thread::Builder::new()
            .name("walkrag-generate".into())
            .spawn(move || run(model, request, tx))
            .expect("spawn a generation thread");
        stream
    }
}

fn run(model: LocalModel, request: ChatRequest, tx: Sender) {
    let result = model.generate(&request, &mut |delta| tx.send(Ok(delta)));
    if let Err(e) = result {
        tx.send(Err(e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q5_0_blocks_convert_to_q8_0_exactly() {
        let device = Device::Cpu;
        let values: Vec<f32> = (0..256)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013)
            .collect();
        let source = Tensor::new(values.as_slice(), &device)
            .unwrap()
            .reshape((4, 64))
            .unwrap();
        let q5 = QTensor::quantize(&source, GgmlDType::Q5_0).unwrap();
        let raw = q5.data().unwrap();
        let q8 =
            qtensor_from_ggml(GgmlDType::Q8_0, &q5_0_to_q8_0(&raw), vec![4, 64], &device).unwrap();
        let values = |q: &QTensor| -> Vec<f32> {
            q.dequantize(&device)
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1())
                .unwrap()
        };
        let (a, b) = (values(&q5), values(&q8));
        assert_eq!(a, b);
    }
}
