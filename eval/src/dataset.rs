//! Question sets in the format of walkrag's benchmark data (JSON Lines).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One question. Document questions carry `supporting_ids`; questions over structured
/// (Markdown) material carry `sections` instead.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    pub id: String,
    pub question: String,
    pub answer: String,
    #[serde(default)]
    pub answer_aliases: Vec<String>,
    /// Documents that together hold the evidence.
    #[serde(default)]
    pub supporting_ids: Vec<String>,
    /// Sections (heading paths, top heading first) that hold the evidence.
    #[serde(default)]
    pub sections: Vec<Vec<String>>,
    /// `bridge`, `comparison`, `single`, `multi`, `absent`, ...
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub evidence: Vec<String>,
}

impl Question {
    /// A structured-document question: scored by sections, `contains` and `abstain`.
    pub fn is_structured(&self) -> bool {
        !self.sections.is_empty() || self.kind.as_deref() == Some("absent")
    }

    /// The material does not hold the answer.
    pub fn is_absent(&self) -> bool {
        self.kind.as_deref() == Some("absent")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a question ({message}); each line must be a JSON object with at least \"id\", \"question\" and \"answer\"")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}:{line}: question id {id:?} appears twice")]
    Duplicate {
        path: PathBuf,
        line: usize,
        id: String,
    },
    #[error("{path} holds no questions")]
    Empty { path: PathBuf },
}

/// Reads the questions of `path`, the first `limit` of them when set. Blank lines are skipped.
pub fn load_questions(path: &Path, limit: Option<usize>) -> Result<Vec<Question>, DatasetError> {
    let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut questions = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        if limit.is_some_and(|n| questions.len() >= n) {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let question: Question = serde_json::from_str(line).map_err(|e| DatasetError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        if !seen.insert(question.id.clone()) {
            return Err(DatasetError::Duplicate {
                path: path.to_path_buf(),
                line: i + 1,
                id: question.id,
            });
        }
        questions.push(question);
    }
    if questions.is_empty() {
        return Err(DatasetError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(questions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.jsonl");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn reads_questions_and_limits() {
        let (_d, path) = write(
            "{\"id\": \"q1\", \"question\": \"Who?\", \"answer\": \"Ann\", \"supporting_ids\": [\"a\", \"b\"], \"kind\": \"bridge\", \"level\": \"easy\"}\n\n\
             {\"id\": \"q2\", \"question\": \"Where?\", \"answer\": \"here\", \"sections\": [[\"Doc\", \"Part\"]], \"kind\": \"absent\"}\n",
        );
        let all = load_questions(&path, None).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].supporting_ids, ["a", "b"]);
        assert!(!all[0].is_structured());
        assert!(all[1].is_structured() && all[1].is_absent());
        assert_eq!(load_questions(&path, Some(1)).unwrap().len(), 1);
    }

    #[test]
    fn bad_lines_duplicates_and_empty_files_are_clear_errors() {
        let (_d, path) = write(
            "{\"id\": \"q1\", \"question\": \"Who?\", \"answer\": \"x\"}\n{\"id\": \"q2\"}\n",
        );
        let err = load_questions(&path, None).unwrap_err().to_string();
        assert!(
            err.contains("q.jsonl:2") && err.contains("question"),
            "{err}"
        );
        let (_d, path) = write("{\"id\": \"q1\", \"question\": \"a\", \"answer\": \"x\"}\n{\"id\": \"q1\", \"question\": \"b\", \"answer\": \"y\"}\n");
        let err = load_questions(&path, None).unwrap_err().to_string();
        assert!(err.contains("appears twice"), "{err}");
        let (_d, path) = write("\n");
        assert!(matches!(
            load_questions(&path, None),
            Err(DatasetError::Empty { .. })
        ));
        let missing = load_questions(Path::new("/nonexistent/q.jsonl"), None).unwrap_err();
        assert!(missing.to_string().contains("cannot read"));
    }
}
