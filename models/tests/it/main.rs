//! Local GGUF models against llama.cpp's reference outputs (`../shared/golden/gguf`, or
//! `$WALKRAG_GOLDEN/gguf`). The models come from the models directory
//! (`scripts/fetch-models.sh smollm2-135m qwen2.5-coder-0.5b`).

mod constrain;
mod generate;
mod score;
mod tokenizer;

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;
use walkrag_models::{load_local, LocalModel, ModelSpec};

pub const MODELS: [&str; 2] = ["smollm2-135m", "qwen2.5-coder-0.5b"];

pub fn golden(name: &str) -> Vec<Value> {
    let root = std::env::var_os("WALKRAG_GOLDEN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/golden"));
    let path = root.join("gguf").join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| {
            panic!(
                "cannot read {} ({e}): set WALKRAG_GOLDEN to the shared/golden folder",
                path.display()
            )
        })
        .lines()
        .map(|l| serde_json::from_str(l).expect("golden line is JSON"))
        .collect()
}

/// A loaded model, once per test binary.
pub fn model(name: &str) -> &'static LocalModel {
    static SMOL: OnceLock<LocalModel> = OnceLock::new();
    static QWEN: OnceLock<LocalModel> = OnceLock::new();
    let cell = if name == MODELS[0] { &SMOL } else { &QWEN };
    cell.get_or_init(|| {
        let spec = ModelSpec::parse(&format!("local:{name}")).unwrap();
        load_local(&spec).unwrap_or_else(|e| panic!("{e}"))
    })
}

pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}
