//! A byte-level BPE tokenizer built from a GGUF file's metadata, so a single `.gguf` is all a
//! local model needs.

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior, Tokenizer};

use crate::LoadError;

/// How Qwen2 splits text before BPE: contractions, letter runs with one leading non-letter,
/// single digits, punctuation runs, newlines, spaces (llama.cpp's `qwen2` pre-tokenizer).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// GGUF token types (llama.cpp's `llama_token_type`) that name special tokens, matched whole
/// in text: control tokens (`<|im_start|>`) and user-defined ones (`<tool_call>`).
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// The tokenizer and the ids generation needs.
pub struct GgufTokenizer {
    pub tokenizer: Tokenizer,
    /// Tokens that end a turn: the file's end-of-sequence token, and ChatML's `<|im_end|>`.
    pub stop_ids: Vec<u32>,
    /// The bytes each token writes, by id; empty for special tokens (they write no text).
    pub token_bytes: Vec<Vec<u8>>,
}

/// Whether byte `b` is written as the character of the same code in byte-level BPE.
fn printable(b: u32) -> bool {
    (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174
}

/// The byte each character of the byte-level BPE alphabet stands for, by character code:
/// GPT-2 writes printable Latin-1 bytes as themselves and the rest as U+0100 onwards, in
/// byte order.
fn byte_level_alphabet() -> Vec<Option<u8>> {
    let mut bytes = vec![None; 512];
    let mut shifted = 256;
    for b in 0..=255u32 {
        if printable(b) {
            bytes[b as usize] = Some(b as u8);
        } else {
            bytes[shifted] = Some(b as u8);
            shifted += 1;
        }
    }
    bytes
}

/// The bytes a byte-level BPE token stands for; `None` for a character outside the
/// alphabet.
fn byte_level_bytes(token: &str, alphabet: &[Option<u8>]) -> Option<Vec<u8>> {
    token
        .chars()
        .map(|c| alphabet.get(c as usize).copied().flatten())
        .collect()
}

fn meta<'a>(content: &'a Content, key: &str) -> Result<&'a Value, LoadError> {
    content
        .metadata
        .get(key)
        .ok_or_else(|| LoadError::Format(format!("the GGUF has no `{key}` metadata")))
}

fn strings<'a>(content: &'a Content, key: &str) -> Result<Vec<&'a str>, LoadError> {
    let bad = |e: candle_core::Error| LoadError::Format(format!("`{key}`: {e}"));
    meta(content, key)?
        .to_vec()
        .map_err(bad)?
        .iter()
        .map(|v| v.to_string().map(String::as_str).map_err(bad))
        .collect()
}

impl GgufTokenizer {
    /// Builds the tokenizer described by `tokenizer.ggml.*` metadata (model `gpt2`, i.e.
    /// byte-level BPE, with the `qwen2` or `smollm` pre-tokenizer).
    pub fn from_gguf(content: &Content) -> Result<Self, LoadError> {
        let model = meta(content, "tokenizer.ggml.model")?
            .to_string()
            .map_err(|e| LoadError::Format(e.to_string()))?;
        if model != "gpt2" {
            return Err(LoadError::Unsupported(format!(
                "tokenizer model `{model}` (walkrag builds byte-level BPE tokenizers, GGUF model `gpt2`)"
            )));
        }
        let pre = match content.metadata.get("tokenizer.ggml.pre") {
            Some(v) => v
                .to_string()
                .map_err(|e| LoadError::Format(e.to_string()))?
                .clone(),
            None => "default".to_string(),
        };
        let tokens = strings(content, "tokenizer.ggml.tokens")?;
        let merges = strings(content, "tokenizer.ggml.merges")?;
        let types: Vec<i32> = match content.metadata.get("tokenizer.ggml.token_type") {
            Some(v) => v
                .to_vec()
                .and_then(|vs| vs.iter().map(Value::to_i32).collect())
                .map_err(|e| LoadError::Format(format!("`tokenizer.ggml.token_type`: {e}")))?,
            None => Vec::new(),
        };

        let vocab: Vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        let merges: Vec<(String, String)> = merges
            .iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| LoadError::Format(format!("bad merge {m:?}")))
            })
            .collect::<Result<_, _>>()?;
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| LoadError::Format(format!("cannot build the BPE model: {e}")))?;

        let mut tokenizer = Tokenizer::new(bpe);
        tokenizer.with_pre_tokenizer(Some(pre_tokenizer(&pre)?));
        tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
        let special: Vec<AddedToken> = types
            .iter()
            .enumerate()
            .filter(|(_, &t)| t == CONTROL || t == USER_DEFINED)
            .map(|(i, _)| AddedToken::from(tokens[i].to_string(), true))
            .collect();
        tokenizer
            .add_special_tokens(special)
            .map_err(|e| LoadError::Format(format!("cannot add special tokens: {e}")))?;

        let mut stop_ids = Vec::new();
        if let Some(eos) = content.metadata.get("tokenizer.ggml.eos_token_id") {
            stop_ids.push(eos.to_u32().map_err(|e| LoadError::Format(e.to_string()))?);
        }
        if let Some(id) = tokenizer.token_to_id("<|im_end|>") {
            stop_ids.push(id);
        }
        stop_ids.sort_unstable();
        stop_ids.dedup();
        let alphabet = byte_level_alphabet();
        let token_bytes = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| match types.get(i) {
                Some(&CONTROL | &USER_DEFINED) => Vec::new(),
                _ => byte_level_bytes(t, &alphabet).unwrap_or_default(),
            })
            .collect();
        Ok(Self {
            tokenizer,
            stop_ids,
            token_bytes,
        })
    }

    /// Token ids of `text`, special tokens in it matched whole, no BOS added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| e.to_string())
    }

    /// Text of `ids`, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String, String> {
        self.tokenizer.decode(ids, false).map_err(|e| e.to_string())
    }
}

fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper, LoadError> {
    let parts: Vec<PreTokenizerWrapper> = match pre {
        "qwen2" => vec![
            Split::new(
                SplitPattern::Regex(QWEN2_SPLIT.into()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| LoadError::Format(e.to_string()))?
            .into(),
            ByteLevel::new(false, false, false).into(),
        ],
        // GPT-2's split with every digit on its own.
        "smollm" => vec![
            Digits::new(true).into(),
            ByteLevel::new(false, false, true).into(),
        ],
        "gpt-2" | "default" => vec![ByteLevel::new(false, false, true).into()],
        other => {
            return Err(LoadError::Unsupported(format!(
                "pre-tokenizer `{other}` (supported: qwen2, smollm, gpt-2)"
            )))
        }
    };
    Ok(Sequence::new(parts).into())
}
