//! Where an embedding model comes from: `minilm`, a local folder, or a hub id.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use walkrag_core::{Catalog, EmbedError};

/// The embedder used when none is named.
pub const DEFAULT_EMBEDDER: &str = "minilm";

/// Files a sentence-transformers folder must provide for us.
const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// Files we read when present.
const OPTIONAL_FILES: [&str; 3] = [
    "sentence_bert_config.json",
    "modules.json",
    "1_Pooling/config.json",
];

/// How long to wait for the hub to answer before calling it unreachable. Downloads themselves
/// are not cut off; only a hub that never answers is.
const HUB_PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// A parsed `--embedder` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// A model of the walkrag catalog, in the models directory (`minilm`).
    Catalog(String),
    /// A local folder in sentence-transformers layout.
    Dir(PathBuf),
    /// A Hugging Face hub id (`sentence-transformers/all-MiniLM-L6-v2`).
    Hub(String),
}

impl ModelSpec {
    /// Reads a spec: a catalog name, else an existing path, else a hub id (`owner/name`).
    pub fn parse(spec: &str) -> Result<Self, EmbedError> {
        let catalog = Catalog::builtin();
        if let Some(model) = catalog.get(spec) {
            if model.kind != walkrag_core::ModelKind::Dir {
                return Err(EmbedError::Load(format!(
                    "'{spec}' is a chat model, not an embedding model"
                )));
            }
            return Ok(Self::Catalog(spec.to_string()));
        }
        let path = Path::new(spec);
        if path.exists() {
            return Ok(Self::Dir(path.to_path_buf()));
        }
        let looks_like_hub_id = spec.split('/').count() == 2
            && !spec.starts_with('.')
            && !spec.starts_with('/')
            && spec.split('/').all(|p| !p.is_empty());
        if looks_like_hub_id {
            return Ok(Self::Hub(spec.to_string()));
        }
        Err(EmbedError::Load(format!(
            "unknown embedder '{spec}': expected 'minilm', a sentence-transformers folder, or a hub id like \
             'sentence-transformers/all-MiniLM-L6-v2' (no such file or folder '{spec}')"
        )))
    }

    /// The local folder holding the model files, downloading them first for a hub id.
    pub fn resolve(&self) -> Result<PathBuf, EmbedError> {
        let dir = match self {
            Self::Catalog(name) => {
                let model = Catalog::builtin()
                    .get(name)
                    .cloned()
                    .expect("parse checked the name");
                let dir = model.dir();
                if !dir.is_dir() {
                    return Err(EmbedError::Load(format!(
                        "model '{name}' is not installed in {}: run scripts/fetch-models.sh {name} \
                         (or set WALKRAG_MODELS to where it is)",
                        dir.display()
                    )));
                }
                dir
            }
            Self::Dir(dir) => dir.clone(),
            Self::Hub(id) => return fetch_from_hub(id),
        };
        check_layout(&dir)?;
        Ok(dir)
    }
}

fn check_layout(dir: &Path) -> Result<(), EmbedError> {
    if !dir.is_dir() {
        return Err(EmbedError::Load(format!(
            "{} is not a folder",
            dir.display()
        )));
    }
    let missing: Vec<_> = REQUIRED_FILES
        .iter()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(EmbedError::Load(format!(
            "{} is not a sentence-transformers model folder: missing {}",
            dir.display(),
            missing
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

/// Gets the model files of a hub id: from the local hub cache when all are there, else by
/// download, after checking that the hub answers at all.
fn fetch_from_hub(id: &str) -> Result<PathBuf, EmbedError> {
    use hf_hub::{Cache, Repo};

    let repo = Repo::model(id.to_string());
    let cache = Cache::from_env().repo(repo.clone());
    if let Some(cfg) = cache.get("config.json") {
        if REQUIRED_FILES.iter().all(|f| cache.get(f).is_some()) {
            let dir = cfg
                .parent()
                .expect("a cached file has a folder")
                .to_path_buf();
            return Ok(dir);
        }
    }
    if std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| v == "1") {
        return Err(EmbedError::Load(format!(
            "'{id}' is not in the local hub cache and HF_HUB_OFFLINE=1: download it elsewhere, or use a local folder"
        )));
    }
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(false)
        .build()
        .map_err(|e| EmbedError::Load(format!("cannot set up the hub client: {e}")))?;
    let api_repo = api.repo(repo.clone());

    // Probe in a thread: a hub behind a black-holed network would otherwise hang here.
    let (tx, rx) = mpsc::channel();
    let probe = api.repo(repo);
    std::thread::spawn(move || {
        let _ = tx.send(probe.info().map_err(|e| e.to_string()));
    });
    match rx.recv_timeout(HUB_PROBE_TIMEOUT) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            return Err(EmbedError::Load(format!(
                "cannot reach the Hugging Face hub for '{id}': {e}. Without network access, use \
                 'minilm' (scripts/fetch-models.sh) or a local sentence-transformers folder"
            )))
        }
        Err(_) => {
            return Err(EmbedError::Load(format!(
                "the Hugging Face hub did not answer within {}s for '{id}': use 'minilm' \
                 (scripts/fetch-models.sh) or a local sentence-transformers folder",
                HUB_PROBE_TIMEOUT.as_secs()
            )))
        }
    }
    let mut dir = None;
    for file in REQUIRED_FILES.iter().chain(OPTIONAL_FILES.iter()) {
        match api_repo.get(file) {
            Ok(path) => {
                if *file == "config.json" {
                    dir = path.parent().map(Path::to_path_buf);
                }
            }
            Err(e) if REQUIRED_FILES.contains(file) => {
                return Err(EmbedError::Load(format!(
                    "cannot download {file} of '{id}': {e}"
                )))
            }
            Err(_) => {}
        }
    }
    Ok(dir.expect("config.json is required"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_by_shape() {
        assert_eq!(
            ModelSpec::parse("minilm").unwrap(),
            ModelSpec::Catalog("minilm".into())
        );
        assert_eq!(
            ModelSpec::parse("sentence-transformers/all-MiniLM-L6-v2").unwrap(),
            ModelSpec::Hub("sentence-transformers/all-MiniLM-L6-v2".into())
        );
        let tmp = std::env::temp_dir();
        assert_eq!(
            ModelSpec::parse(tmp.to_str().unwrap()).unwrap(),
            ModelSpec::Dir(tmp)
        );
        let err = ModelSpec::parse("./no/such/folder")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown embedder"), "{err}");
        let err = ModelSpec::parse("smollm2-135m").unwrap_err().to_string();
        assert!(err.contains("chat model"), "{err}");
    }

    #[test]
    fn a_folder_without_model_files_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("walkrag-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = ModelSpec::Dir(dir.clone())
            .resolve()
            .unwrap_err()
            .to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            err.contains("missing config.json, tokenizer.json, model.safetensors"),
            "{err}"
        );
    }
}
