//! The catalog of models walkrag knows how to fetch, and where they live on disk.
//!
//! The catalog is `models.tsv` beside this file; `scripts/fetch-models.sh` reads the same file,
//! so names, files and checksums have one source.

use std::path::PathBuf;

const CATALOG_TSV: &str = include_str!("models.tsv");

/// How a model is laid out in its folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// A sentence-transformers folder (config, safetensors, tokenizer).
    Dir,
    /// One GGUF file.
    Gguf,
}

/// A file of a catalog model, with the checksum it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogFile {
    /// Path inside the model's folder.
    pub path: String,
    /// Expected size in bytes, when the catalog records it.
    pub bytes: Option<u64>,
    pub sha256: String,
}

/// One model of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogModel {
    pub name: String,
    pub kind: ModelKind,
    /// Fetched when `fetch-models.sh` is run without names.
    pub default: bool,
    pub license: String,
    pub description: String,
    pub files: Vec<CatalogFile>,
}

impl CatalogModel {
    /// The model's folder under the models directory.
    pub fn dir(&self) -> PathBuf {
        models_dir().join(&self.name)
    }

    /// The file a loader opens: the GGUF for chat models, the folder for embedders.
    pub fn main_path(&self) -> PathBuf {
        match self.kind {
            ModelKind::Dir => self.dir(),
            ModelKind::Gguf => self.dir().join(&self.files[0].path),
        }
    }
}

/// All models walkrag can fetch.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub models: Vec<CatalogModel>,
}

impl Catalog {
    /// The catalog compiled into this build.
    pub fn builtin() -> Self {
        Self::parse(CATALOG_TSV).expect("the built-in models.tsv is well formed (tested)")
    }

    pub fn get(&self, name: &str) -> Option<&CatalogModel> {
        self.models.iter().find(|m| m.name == name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.models.iter().map(|m| m.name.as_str())
    }

    fn parse(tsv: &str) -> Result<Self, String> {
        let mut models: Vec<CatalogModel> = Vec::new();
        for (n, line) in tsv.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let cols: Vec<&str> = line.split('\t').collect();
            let bad = || format!("models.tsv line {}: malformed: {line:?}", n + 1);
            match cols.as_slice() {
                ["model", name, kind, default, license, description] => models.push(CatalogModel {
                    name: name.to_string(),
                    kind: match *kind {
                        "dir" => ModelKind::Dir,
                        "gguf" => ModelKind::Gguf,
                        _ => return Err(bad()),
                    },
                    default: *default == "yes",
                    license: license.to_string(),
                    description: description.to_string(),
                    files: Vec::new(),
                }),
                ["file", name, path, bytes, sha256] => {
                    let model = models
                        .iter_mut()
                        .find(|m| m.name == *name)
                        .ok_or_else(bad)?;
                    model.files.push(CatalogFile {
                        path: path.to_string(),
                        bytes: if *bytes == "-" {
                            None
                        } else {
                            Some(bytes.parse().map_err(|_| bad())?)
                        },
                        sha256: sha256.to_string(),
                    });
                }
                ["wheel", ..] => {}
                _ => return Err(bad()),
            }
        }
        Ok(Self { models })
    }
}

/// The models directory: `$WALKRAG_MODELS`, else `~/.cache/walkrag/models`.
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WALKRAG_MODELS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("walkrag").join("models")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_has_the_documented_models() {
        let catalog = Catalog::builtin();
        let names: Vec<_> = catalog.names().collect();
        assert_eq!(
            names,
            [
                "minilm",
                "smollm2-135m",
                "qwen2.5-coder-0.5b",
                "qwen2.5-coder-1.5b"
            ]
        );
        let defaults: Vec<_> = catalog
            .models
            .iter()
            .filter(|m| m.default)
            .map(|m| m.name.as_str())
            .collect();
        // The contract (INTERFACE.md): no name fetches the first three.
        assert_eq!(defaults, ["minilm", "smollm2-135m", "qwen2.5-coder-0.5b"]);
        for m in &catalog.models {
            assert!(!m.files.is_empty(), "{} has no checked files", m.name);
            for f in &m.files {
                assert_eq!(f.sha256.len(), 64, "{}: {}", m.name, f.path);
            }
        }
        let qwen = catalog.get("qwen2.5-coder-0.5b").unwrap();
        assert_eq!(qwen.kind, ModelKind::Gguf);
        assert_eq!(qwen.files[0].bytes, Some(491_400_064));
    }

    #[test]
    fn malformed_rows_are_rejected_with_their_line() {
        let err = Catalog::parse("model\tx\tweird\tyes\tMIT\tdesc\n").unwrap_err();
        assert!(err.contains("line 1"), "{err}");
        let err = Catalog::parse("file\tnobody\ta\t-\tabc\n").unwrap_err();
        assert!(err.contains("line 1"), "{err}");
    }
}
