//! Chat models for walkrag: local GGUF models on our own CPU kernels ([`LocalModel`]) and,
//! through `walkrag-openai`, any OpenAI-compatible server. Both implement
//! [`walkrag_core::ChatModel`] and stream.

mod channel;
pub mod grammar;
pub mod local;
mod sample;
pub mod template;
pub mod tokenizer;

use std::path::PathBuf;

use walkrag_core::Catalog;

pub use local::{GenerationStats, LocalModel};

/// The chat model used when none is named.
pub const DEFAULT_MODEL: &str = "local:qwen2.5-coder-0.5b";

/// The model that writes the answer from the passages found when the chat model is
/// [`DEFAULT_MODEL`] and no other is named: the 0.5B walks, picks and reads, the 1.5B
/// answers (docs/results/reader-copy: HotpotQA dev F1 0.383 -> 0.574 with links).
pub const DEFAULT_ANSWER_MODEL: &str = "local:qwen2.5-coder-1.5b";

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Spec(String),
    #[error("cannot read the model: {0}")]
    Io(String),
    #[error("bad model file: {0}")]
    Format(String),
    #[error("unsupported {0}")]
    Unsupported(String),
}

/// A chat model as the user names it (`--model`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// `local:NAME`: a GGUF model of the catalog, from the models directory.
    Catalog(String),
    /// `local:PATH.gguf`: a GGUF file.
    File(PathBuf),
    /// `openai:MODEL`: a model of an OpenAI-compatible server.
    OpenAi(String),
}

impl ModelSpec {
    pub fn parse(spec: &str) -> Result<Self, LoadError> {
        let usage =
            "expected local:NAME (see `walkrag models list`), local:PATH.gguf or openai:MODEL";
        let (kind, rest) = spec
            .split_once(':')
            .ok_or_else(|| LoadError::Spec(format!("model {spec:?}: {usage}")))?;
        if rest.is_empty() {
            return Err(LoadError::Spec(format!(
                "model {spec:?} names nothing: {usage}"
            )));
        }
        match kind {
            "openai" => Ok(Self::OpenAi(rest.to_string())),
            "local" if rest.ends_with(".gguf") || rest.contains(['/', '\\']) => {
                Ok(Self::File(PathBuf::from(rest)))
            }
            "local" => {
                let catalog = Catalog::builtin();
                match catalog.get(rest) {
                    Some(m) if m.kind == walkrag_core::ModelKind::Gguf => {
                        Ok(Self::Catalog(rest.to_string()))
                    }
                    _ => {
                        let names: Vec<&str> = catalog
                            .models
                            .iter()
                            .filter(|m| m.kind == walkrag_core::ModelKind::Gguf)
                            .map(|m| m.name.as_str())
                            .collect();
                        Err(LoadError::Spec(format!(
                            "no local chat model {rest:?}: known are {}, or give a path to a .gguf file",
                            names.join(", ")
                        )))
                    }
                }
            }
            other => Err(LoadError::Spec(format!(
                "model kind {other:?} in {spec:?}: {usage}"
            ))),
        }
    }
}

/// Loads a local model (`local:NAME` or `local:PATH.gguf`).
pub fn load_local(spec: &ModelSpec) -> Result<LocalModel, LoadError> {
    match spec {
        ModelSpec::Catalog(name) => {
            let model = Catalog::builtin()
                .get(name)
                .cloned()
                .expect("parse checked the name");
            let path = model.main_path();
            if !path.is_file() {
                return Err(LoadError::Io(format!(
                    "{name} is not installed ({} is missing): run scripts/fetch-models.sh {name}",
                    path.display()
                )));
            }
            LocalModel::load(&path, name)
        }
        ModelSpec::File(path) => {
            if !path.is_file() {
                return Err(LoadError::Io(format!("no such file: {}", path.display())));
            }
            LocalModel::load(path, &path.display().to_string())
        }
        ModelSpec::OpenAi(_) => Err(LoadError::Spec("not a local model".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_helpful_errors() {
        assert_eq!(
            ModelSpec::parse("local:smollm2-135m").unwrap(),
            ModelSpec::Catalog("smollm2-135m".into())
        );
        assert_eq!(
            ModelSpec::parse("local:/m/x.gguf").unwrap(),
            ModelSpec::File("/m/x.gguf".into())
        );
        assert_eq!(
            ModelSpec::parse("openai:gpt-4o-mini").unwrap(),
            ModelSpec::OpenAi("gpt-4o-mini".into())
        );
        let err = ModelSpec::parse("local:minilm").unwrap_err().to_string();
        assert!(err.contains("qwen2.5-coder-0.5b"), "{err}");
        assert!(ModelSpec::parse("gpt-4")
            .unwrap_err()
            .to_string()
            .contains("openai:MODEL"));
        assert!(ModelSpec::parse("hf:x").is_err());
    }
}
