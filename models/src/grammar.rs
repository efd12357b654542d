//! Constrained decoding for local models: a [`Constraint`] (JSON Schema, Lark grammar or
//! regex) compiled by llguidance against the model's vocabulary, giving at each step the
//! tokens that keep the completion inside the constraint, and the tokens it forces.
//!
//! The vocabulary becomes llguidance's token trie once per model ([`Grammars::new`], on first
//! use): each ordinary token by the raw bytes it writes (byte-level BPE symbols mapped back),
//! each special token as `0xFF` followed by its name, which is how llguidance tells special
//! tokens from text. The model's stop tokens end a completion where the grammar accepts.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{SimpleVob, TokEnv, TokRxInfo, TokTrie, TokenizerEnv};
use llguidance::{Matcher, ParserFactory};
use walkrag_core::{ChatError, Constraint};

use crate::tokenizer::GgufTokenizer;

/// How JSON is laid out under a JSON Schema unless the schema's own `x-guidance` says
/// otherwise: one line, with the spaces models see in their training data (`{"a": 1, "b": 2}`).
/// Whitespace is fixed, so the grammar forces it and the model never spends a token on it.
const JSON_LAYOUT: &str =
    r#"{"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "}"#;

/// A model's vocabulary as llguidance needs it; built once per model, shared by every
/// constrained generation.
pub struct Grammars {
    factory: ParserFactory,
}

impl Grammars {
    pub fn new(tokenizer: Arc<GgufTokenizer>) -> Result<Self, String> {
        let words = trie_words(&tokenizer);
        let stop = *tokenizer
            .stop_ids
            .first()
            .ok_or("the model names no end-of-turn token")?;
        let info = TokRxInfo::new(words.len() as u32, stop);
        let trie = TokTrie::from(&info, &words).with_eos_tokens(&tokenizer.stop_ids);
        let env: TokEnv = Arc::new(TrieEnv { trie, tokenizer });
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| e.to_string())?;
        factory.quiet();
        Ok(Self { factory })
    }

    /// A fresh matcher for one completion; a constraint that does not compile is refused
    /// here, before any work.
    pub fn matcher(&self, constraint: &Constraint) -> Result<Matcher, ChatError> {
        let grammar = match constraint {
            Constraint::JsonSchema(schema) => TopLevelGrammar::from_json_schema(laid_out(schema)),
            Constraint::Lark(lark) => TopLevelGrammar::from_lark(lark.clone()),
            Constraint::Regex(regex) => TopLevelGrammar::from_regex(regex),
        };
        let parser = self.factory.create_parser(grammar).map_err(|e| {
            ChatError::Permanent(format!(
                "the {} constraint does not compile: {e}",
                constraint.kind()
            ))
        })?;
        Ok(Matcher::new(Ok(parser)))
    }

    pub fn trie(&self) -> &TokTrie {
        self.factory.tok_env().tok_trie()
    }
}

/// `schema` with walkrag's JSON layout unless it sets its own.
fn laid_out(schema: &serde_json::Value) -> serde_json::Value {
    let mut schema = schema.clone();
    if let Some(object) = schema.as_object_mut() {
        if !object.contains_key("x-guidance") {
            let layout = serde_json::from_str(JSON_LAYOUT).expect("the layout is JSON");
            object.insert("x-guidance".into(), layout);
        }
    }
    schema
}

/// What each token id writes, as llguidance's trie takes it: raw bytes, or `0xFF` and the
/// name for special tokens (and for the rare token that writes nothing).
pub fn trie_words(tokenizer: &GgufTokenizer) -> Vec<Vec<u8>> {
    tokenizer
        .token_bytes
        .iter()
        .enumerate()
        .map(|(id, bytes)| {
            if bytes.is_empty() {
                let name = tokenizer
                    .tokenizer
                    .id_to_token(id as u32)
                    .unwrap_or_else(|| format!("<|unnamed_{id}|>"));
                let mut word = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                word.extend_from_slice(name.as_bytes());
                word
            } else {
                bytes.clone()
            }
        })
        .collect()
}

/// `logits` with every token the mask does not allow ruled out (ids past the mask's
/// vocabulary included: a model may have more output rows than its tokenizer has tokens).
pub fn mask_logits(logits: &mut [f32], mask: &SimpleVob) {
    let known = mask.len();
    for (id, logit) in logits.iter_mut().enumerate() {
        if id >= known || !mask.is_allowed(id as u32) {
            *logit = f32::NEG_INFINITY;
        }
    }
}

/// The trie with the model's own tokenizer, for the text llguidance forces.
struct TrieEnv {
    trie: TokTrie,
    tokenizer: Arc<GgufTokenizer>,
}

impl TokenizerEnv for TrieEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    /// Forced text is tokenized the way the model's tokenizer would write it (canonical
    /// BPE); bytes that are not UTF-8 on their own fall back to the trie's longest matches.
    fn tokenize_bytes(&self, s: &[u8]) -> Vec<u32> {
        match std::str::from_utf8(s) {
            Ok(text) => self
                .tokenizer
                .encode(text)
                .unwrap_or_else(|_| self.trie.greedy_tokenize(s)),
            Err(_) => self.trie.greedy_tokenize(s),
        }
    }
}
