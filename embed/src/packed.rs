//! The packed BERT encoder: the same weights and arithmetic as Hugging Face's (and
//! candle-transformers') BERT, without padding.
//!
//! A batch is the token rows of several texts laid end to end (`[tokens, hidden]`). Every dense
//! layer is then one large GEMM over real tokens only, with the bias folded into the GEMM's
//! accumulator; attention runs per text and head on strided views of the fused QKV matrix, in
//! parallel. Dense layers use [`Dense`] (weights packed at load). All activations live in a [`Scratch`] allocated once per `embed` call.

use candle_core::Tensor;
use candle_nn::VarBuilder;
use rayon::prelude::*;
use walkrag_core::EmbedError;

use crate::config::BertConfig;
use crate::kernels;
use crate::matmul::{Activation, Dense};

fn load_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Load(e.to_string())
}

/// PyTorch `Linear` weights as read, transposed to `[in, out]` row-major.
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Linear {
    fn load(vb: &VarBuilder, inputs: usize, outputs: usize) -> Result<Self, EmbedError> {
        let w = vb.get((outputs, inputs), "weight").map_err(load_err)?;
        let bias = vb
            .get(outputs, "bias")
            .and_then(|b| b.to_vec1())
            .map_err(load_err)?;
        Ok(Self {
            weight: transposed(&w)?,
            bias,
            inputs,
            outputs,
        })
    }

    /// Several layers over the same input, side by side (Q, K and V as one `[in, 3·out]`).
    fn fuse(parts: &[Linear]) -> Self {
        let inputs = parts[0].inputs;
        let outputs = parts.iter().map(|p| p.outputs).sum();
        let mut weight = Vec::with_capacity(inputs * outputs);
        for row in 0..inputs {
            for p in parts {
                weight.extend_from_slice(&p.weight[row * p.outputs..(row + 1) * p.outputs]);
            }
        }
        let bias = parts.iter().flat_map(|p| p.bias.iter().copied()).collect();
        Self {
            weight,
            bias,
            inputs,
            outputs,
        }
    }

    fn packed(self) -> Dense {
        Dense::new(self.weight, self.bias, self.inputs, self.outputs)
    }
}

fn transposed(w: &Tensor) -> Result<Vec<f32>, EmbedError> {
    w.t()
        .and_then(|t| t.contiguous())
        .and_then(|t| t.flatten_all())
        .and_then(|t| t.to_vec1())
        .map_err(load_err)
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl Norm {
    fn load(vb: &VarBuilder, width: usize) -> Result<Self, EmbedError> {
        let get = |name: &str| {
            vb.get(width, name)
                .and_then(|t| t.to_vec1())
                .map_err(load_err)
        };
        Ok(Self {
            gamma: get("weight")?,
            beta: get("bias")?,
        })
    }
}

struct Layer {
    qkv: Dense,
    attn_out: Dense,
    attn_norm: Norm,
    up: Dense,
    down: Dense,
    out_norm: Norm,
}

/// Activations of one batch, reused across batches.
pub struct Scratch {
    hidden: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    projected: Vec<f32>,
    up: Vec<f32>,
}

/// BERT weights laid out for packed inference.
pub struct PackedBert {
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    intermediate: usize,
    max_positions: usize,
    eps: f32,
}

impl PackedBert {
    /// Whether the packed encoder computes exactly what this config asks for.
    pub fn supports(config: &BertConfig) -> bool {
        config.hidden_act == "gelu"
            && config.position_embedding_type == "absolute"
            && config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
    }

    pub fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self, EmbedError> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let (h, inter) = (config.hidden_size, config.intermediate_size);
        let table = |name: &str, rows: usize| {
            vb.get((rows, h), name)
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1())
                .map_err(load_err)
        };
        let word = table("embeddings.word_embeddings.weight", config.vocab_size)?;
        let position = table(
            "embeddings.position_embeddings.weight",
            config.max_position_embeddings,
        )?;
        // Every input is one segment (token type 0), as in sentence-transformers.
        let mut token_type = table(
            "embeddings.token_type_embeddings.weight",
            config.type_vocab_size,
        )?;
        token_type.truncate(h);
        let embed_norm = Norm::load(&vb.pp("embeddings.LayerNorm"), h)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("encoder.layer.{i}"));
                let a = l.pp("attention");
                let qkv = Linear::fuse(&[
                    Linear::load(&a.pp("self.query"), h, h)?,
                    Linear::load(&a.pp("self.key"), h, h)?,
                    Linear::load(&a.pp("self.value"), h, h)?,
                ]);
                Ok(Layer {
                    qkv: qkv.packed(),
                    attn_out: Linear::load(&a.pp("output.dense"), h, h)?.packed(),
                    attn_norm: Norm::load(&a.pp("output.LayerNorm"), h)?,
                    up: Linear::load(&l.pp("intermediate.dense"), h, inter)?.packed(),
                    down: Linear::load(&l.pp("output.dense"), inter, h)?.packed(),
                    out_norm: Norm::load(&l.pp("output.LayerNorm"), h)?,
                })
            })
            .collect::<Result<_, EmbedError>>()?;
        Ok(Self {
            word,
            position,
            token_type,
            embed_norm,
            layers,
            hidden: h,
            heads: config.num_attention_heads,
            intermediate: inter,
            max_positions: config.max_position_embeddings,
            eps: config.layer_norm_eps as f32,
        })
    }

    /// Buffers for batches of up to `tokens` tokens.
    pub fn scratch(&self, tokens: usize) -> Scratch {
        let h = self.hidden;
        Scratch {
            hidden: vec![0.0; tokens * h],
            qkv: vec![0.0; tokens * 3 * h],
            context: vec![0.0; tokens * h],
            projected: vec![0.0; tokens * h],
            up: vec![0.0; tokens * self.intermediate],
        }
    }

    /// Encodes `texts` (token ids, each within the model's positions) and writes the
    /// L2-normalised mean of each text's last hidden states into row `i` of `out`
    /// (`texts.len()` rows of `hidden` values).
    pub fn embed_batch(
        &self,
        texts: &[&[u32]],
        scratch: &mut Scratch,
        out: &mut [f32],
        threads: usize,
    ) {
        let h = self.hidden;
        let rows: usize = texts.iter().map(|t| t.len()).sum();
        assert!(
            scratch.hidden.len() >= rows * h,
            "scratch sized for fewer tokens than the batch holds"
        );
        let hidden = &mut scratch.hidden[..rows * h];

        // Embeddings: word + position + token type, then LayerNorm.
        let mut dst = hidden.chunks_exact_mut(h);
        for ids in texts {
            assert!(
                ids.len() <= self.max_positions,
                "text longer than the model's positions"
            );
            for (pos, &id) in ids.iter().enumerate() {
                let row = dst.next().expect("rows counted above");
                let word = &self.word[id as usize * h..][..h];
                let position = &self.position[pos * h..][..h];
                for (((r, w), p), t) in row.iter_mut().zip(word).zip(position).zip(&self.token_type)
                {
                    *r = w + p + t;
                }
            }
        }
        kernels::layer_norm(
            hidden,
            &self.embed_norm.gamma,
            &self.embed_norm.beta,
            self.eps,
        );

        let spans: Vec<(usize, usize)> = texts
            .iter()
            .scan(0, |start, t| {
                let span = (*start, t.len());
                *start += t.len();
                Some(span)
            })
            .collect();
        for layer in &self.layers {
            layer
                .qkv
                .forward(hidden, rows, &mut scratch.qkv, Activation::None, threads);
            self.attention(
                &scratch.qkv[..rows * 3 * h],
                &spans,
                &mut scratch.context[..rows * h],
                threads,
            );
            layer.attn_out.forward(
                &scratch.context,
                rows,
                &mut scratch.projected,
                Activation::None,
                threads,
            );
            kernels::add_layer_norm(
                &mut scratch.projected[..rows * h],
                hidden,
                &layer.attn_norm.gamma,
                &layer.attn_norm.beta,
                self.eps,
            );

            layer.up.forward(
                &scratch.projected,
                rows,
                &mut scratch.up,
                Activation::Gelu,
                threads,
            );
            layer
                .down
                .forward(&scratch.up, rows, hidden, Activation::None, threads);
            kernels::add_layer_norm(
                hidden,
                &scratch.projected[..rows * h],
                &layer.out_norm.gamma,
                &layer.out_norm.beta,
                self.eps,
            );
        }

        for ((start, len), slot) in spans.iter().zip(out.chunks_exact_mut(h)) {
            kernels::mean_pool_normalised(&hidden[start * h..(start + len) * h], slot);
        }
    }

    /// Multi-head self-attention of every text over itself: `context = softmax(QKᵀ/√d)·V`,
    /// one task per (text, head), each writing its own columns of its own rows of `context`.
    fn attention(
        &self,
        qkv: &[f32],
        spans: &[(usize, usize)],
        context: &mut [f32],
        threads: usize,
    ) {
        let (h, heads) = (self.hidden, self.heads);
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let longest = spans.iter().map(|s| s.1).max().unwrap_or(0);
        let tasks: Vec<(usize, usize, usize)> = spans
            .iter()
            .flat_map(|&(start, len)| (0..heads).map(move |head| (start, len, head)))
            .collect();
        let ctx = SharedMut(context.as_mut_ptr());
        let run = |scores: &mut Vec<f32>, &(start, len, head): &(usize, usize, usize)| {
            let ctx = &ctx;
            let scores = &mut scores[..len * len];
            let q = qkv[start * 3 * h + head * d..].as_ptr();
            // SAFETY: Q, K and V of this text and head lie inside `qkv` (rows start..start+len,
            // stride 3h; columns head·d.., +h for K, +2h for V). `scores` is this task's own.
            // The destination block (rows start..start+len, columns head·d..head·d+d of
            // `context`) belongs to this task alone: tasks differ in text or in head.
            unsafe {
                let k = q.add(h);
                let v = q.add(2 * h);
                gemm::gemm(
                    len,
                    len,
                    d,
                    scores.as_mut_ptr(),
                    1,
                    len as isize,
                    false,
                    q,
                    1,
                    3 * h as isize,
                    k,
                    3 * h as isize,
                    1,
                    0.0,
                    scale,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
                kernels::softmax_rows(scores, len);
                let dst = ctx.0.add(start * h + head * d);
                gemm::gemm(
                    len,
                    d,
                    len,
                    dst,
                    1,
                    h as isize,
                    false,
                    scores.as_ptr(),
                    1,
                    len as isize,
                    v,
                    1,
                    3 * h as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
        };
        if threads > 1 {
            tasks
                .par_iter()
                .for_each_init(|| vec![0.0f32; longest * longest], run);
        } else {
            let mut scores = vec![0.0f32; longest * longest];
            tasks.iter().for_each(|task| run(&mut scores, task));
        }
    }
}

/// A pointer into a buffer whose disjoint blocks are written by parallel tasks.
struct SharedMut(*mut f32);
// SAFETY: only used in `attention`, where each task writes a block no other task touches.
unsafe impl Sync for SharedMut {}
unsafe impl Send for SharedMut {}
