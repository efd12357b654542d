//! Finding files and turning them into [`Document`]s, with one clear warning per bad input.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Once;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::document::{Document, Format};
use crate::ids::DocId;

/// Why a file, or one line of a `.jsonl` corpus, was not indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// A path given on the command line does not exist.
    Missing,
    /// The file could not be read (permissions, I/O error).
    Unreadable,
    /// The file holds binary data (a NUL byte) where text was expected.
    Binary,
    /// The file (or the record's text) is empty or only whitespace.
    Empty,
    /// The file is not valid UTF-8.
    NotUtf8,
    /// The content is not what its name says: bad JSON, a broken PDF, a record without text.
    Malformed,
    /// A file named on the command line whose kind walkrag does not index.
    Unsupported,
    /// A `.jsonl` record whose id another record already took.
    DuplicateId,
}

impl SkipReason {
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::Missing => "missing",
            SkipReason::Unreadable => "unreadable",
            SkipReason::Binary => "binary",
            SkipReason::Empty => "empty",
            SkipReason::NotUtf8 => "not UTF-8",
            SkipReason::Malformed => "malformed",
            SkipReason::Unsupported => "unsupported type",
            SkipReason::DuplicateId => "duplicate id",
        }
    }
}

/// One input that was left out, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: String,
    /// 1-based line, for `.jsonl` records and text that is not UTF-8.
    pub line: Option<usize>,
    pub reason: SkipReason,
    pub detail: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": skipped ({}): {}", self.reason.describe(), self.detail)
    }
}

/// The kind of document a file name announces, if walkrag indexes it.
pub fn format_of(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    if name == "llms.txt" || name == "llms-full.txt" {
        return Some(Format::LlmsTxt);
    }
    match name.rsplit_once('.')?.1 {
        "md" | "markdown" => Some(Format::Markdown),
        "txt" => Some(Format::Text),
        "pdf" => Some(Format::Pdf),
        "jsonl" => Some(Format::Jsonl),
        _ => None,
    }
}

/// The files to index under `paths`.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Indexable files, in a stable order, each with the id prefix it is known by.
    pub files: Vec<PathBuf>,
    /// Paths that could not be walked, or were named explicitly but cannot be indexed.
    pub skipped: Vec<Skipped>,
    /// Files found while walking directories that are of no indexed kind (not warned about).
    pub other_files: usize,
}

/// Walks `paths`: files are taken as they are, directories recursively, honouring
/// `.gitignore`, `.ignore` and `.git/info/exclude` (inside a Git checkout or not) and skipping
/// hidden entries (so an index directory such as `.walkrag` is never indexed).
pub fn discover(paths: &[PathBuf]) -> Discovery {
    let mut out = Discovery::default();
    for root in paths {
        let meta = match std::fs::metadata(root) {
            Ok(meta) => meta,
            Err(e) => {
                let reason = if e.kind() == std::io::ErrorKind::NotFound {
                    SkipReason::Missing
                } else {
                    SkipReason::Unreadable
                };
                out.skipped.push(skipped(root, None, reason, e.to_string()));
                continue;
            }
        };
        if meta.is_file() {
            if format_of(root).is_some() {
                out.files.push(root.clone());
            } else {
                out.skipped.push(skipped(
                    root,
                    None,
                    SkipReason::Unsupported,
                    "index .md, .markdown, .txt, llms.txt, .pdf or .jsonl files".into(),
                ));
            }
            continue;
        }
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .ignore(true)
            .require_git(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for entry in walker {
            match entry {
                // A symlink is taken as the file it names; a dangling one gets a warning.
                Ok(entry)
                    if entry
                        .file_type()
                        .is_some_and(|t| t.is_file() || t.is_symlink()) =>
                {
                    if format_of(entry.path()).is_some() {
                        out.files.push(entry.into_path());
                    } else {
                        out.other_files += 1;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    let path = match &e {
                        ignore::Error::WithPath { path, .. } => path.clone(),
                        _ => root.clone(),
                    };
                    out.skipped
                        .push(skipped(&path, None, SkipReason::Unreadable, e.to_string()));
                }
            }
        }
    }
    out.files.sort();
    out.files.dedup();
    out
}

/// What one file yielded.
#[derive(Debug, Default)]
pub struct FileRead {
    pub documents: Vec<Document>,
    /// Problems with the file or with some of its records.
    pub skipped: Vec<Skipped>,
    /// The file as a whole could not be read (rather than some of its records).
    pub failed: bool,
}

impl FileRead {
    fn failed(path: &Path, line: Option<usize>, reason: SkipReason, detail: String) -> Self {
        Self {
            documents: Vec::new(),
            skipped: vec![skipped(path, line, reason, detail)],
            failed: true,
        }
    }
}

/// The id and source name of a file: its path as reached, with `/` separators and no `./`.
pub fn path_name(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let mut name = text.as_str();
    while let Some(rest) = name.strip_prefix("./") {
        name = rest;
    }
    name.to_string()
}

/// Reads one file into documents.
pub fn read_file(path: &Path) -> FileRead {
    let Some(format) = format_of(path) else {
        return FileRead::failed(
            path,
            None,
            SkipReason::Unsupported,
            "unknown file type".into(),
        );
    };
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => return FileRead::failed(path, None, SkipReason::Unreadable, e.to_string()),
    };
    let name = path_name(path);
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.clone());
    if format == Format::Pdf {
        return read_pdf(path, &name, stem, &bytes);
    }
    let text = match text_of(&bytes) {
        Ok(text) => text,
        Err((reason, line, detail)) => return FileRead::failed(path, line, reason, detail),
    };
    let id = DocId(name.clone());
    let document = match format {
        Format::Markdown | Format::LlmsTxt => match crate::front_matter::split(text) {
            Some((fields, rest)) => {
                let fallback = fields.get("title").and_then(Value::as_str).unwrap_or(&stem);
                Document::markdown(id, name, format, rest.to_string(), fallback)
                    .with_metadata(fields)
            }
            None => Document::markdown(id, name, format, text.to_string(), &stem),
        },
        Format::Text => Document::single(id, stem, name, format, text.to_string(), Map::new()),
        Format::Jsonl => return read_jsonl(path, &name, text),
        Format::Pdf => unreachable!("handled above"),
    };
    FileRead {
        documents: vec![document],
        ..FileRead::default()
    }
}

/// UTF-8 text (without a byte-order mark), or why not.
fn text_of(bytes: &[u8]) -> Result<&str, (SkipReason, Option<usize>, String)> {
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err((
            SkipReason::Binary,
            None,
            "contains NUL bytes; not a text file".into(),
        ));
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        (
            SkipReason::NotUtf8,
            Some(line),
            format!("invalid UTF-8 at byte {at}; convert the file to UTF-8"),
        )
    })?;
    if text.trim().is_empty() {
        return Err((SkipReason::Empty, None, "no text".into()));
    }
    Ok(text)
}

fn read_jsonl(path: &Path, name: &str, text: &str) -> FileRead {
    let mut out = FileRead::default();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut warn = |reason, detail: String| {
            out.skipped.push(skipped(path, Some(i + 1), reason, detail));
        };
        let mut record = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(record)) => record,
            Ok(_) => {
                warn(SkipReason::Malformed, "expected a JSON object".into());
                continue;
            }
            Err(e) => {
                warn(SkipReason::Malformed, format!("bad JSON: {e}"));
                continue;
            }
        };
        let id = match record.remove("id") {
            Some(Value::String(id)) if !id.trim().is_empty() => id,
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                warn(
                    SkipReason::Malformed,
                    "no \"id\" (a non-empty string)".into(),
                );
                continue;
            }
        };
        let body = match record.remove("text") {
            Some(Value::String(body)) => body,
            _ => {
                warn(
                    SkipReason::Malformed,
                    format!("record {id:?} has no \"text\" string"),
                );
                continue;
            }
        };
        if body.trim().is_empty() {
            warn(SkipReason::Empty, format!("record {id:?} has empty text"));
            continue;
        }
        let title = match record.remove("title") {
            Some(Value::String(title)) => title,
            _ => id.clone(),
        };
        if !seen.insert(id.clone()) {
            warn(
                SkipReason::DuplicateId,
                format!("id {id:?} appears on an earlier line"),
            );
            continue;
        }
        out.documents.push(Document::single(
            DocId(id),
            title,
            name.to_string(),
            Format::Jsonl,
            body,
            record,
        ));
    }
    if out.documents.is_empty() && out.skipped.is_empty() {
        return FileRead::failed(path, None, SkipReason::Empty, "no records".into());
    }
    out
}

fn read_pdf(path: &Path, name: &str, title: String, bytes: &[u8]) -> FileRead {
    if !bytes.starts_with(b"%PDF-") {
        return FileRead::failed(
            path,
            None,
            SkipReason::Malformed,
            "not a PDF (no %PDF- header)".into(),
        );
    }
    let pages = match extract_pdf_pages(bytes) {
        Ok(pages) => pages,
        Err(detail) => return FileRead::failed(path, None, SkipReason::Malformed, detail),
    };
    if pages.iter().all(|p| p.trim().is_empty()) {
        return FileRead::failed(
            path,
            None,
            SkipReason::Empty,
            "no extractable text (a scanned PDF needs OCR first)".into(),
        );
    }
    let doc = Document::pdf(DocId(name.to_string()), title, name.to_string(), pages);
    FileRead {
        documents: vec![doc],
        ..FileRead::default()
    }
}

thread_local! {
    static QUIET_PANICS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Text per page. The PDF parser panics on some malformed files; that becomes an error here,
/// without the panic message on stderr.
fn extract_pdf_pages(bytes: &[u8]) -> Result<Vec<String>, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(|q| q.get()) {
                previous(info);
            }
        }));
    });
    QUIET_PANICS.with(|q| q.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        pdf_extract::extract_text_from_mem_by_pages(bytes)
    }));
    QUIET_PANICS.with(|q| q.set(false));
    match result {
        Ok(Ok(pages)) => Ok(pages),
        Ok(Err(e)) => Err(format!("cannot read PDF: {e}")),
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("parser failure");
            Err(format!("cannot read PDF: {why}"))
        }
    }
}

fn skipped(path: &Path, line: Option<usize>, reason: SkipReason, detail: String) -> Skipped {
    Skipped {
        path: path_name(path),
        line,
        reason,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_kinds_come_from_names() {
        assert_eq!(format_of(Path::new("a/README.md")), Some(Format::Markdown));
        assert_eq!(format_of(Path::new("x.MARKDOWN")), Some(Format::Markdown));
        assert_eq!(
            format_of(Path::new("site/llms-full.txt")),
            Some(Format::LlmsTxt)
        );
        assert_eq!(format_of(Path::new("notes.txt")), Some(Format::Text));
        assert_eq!(format_of(Path::new("r.pdf")), Some(Format::Pdf));
        assert_eq!(format_of(Path::new("c.jsonl")), Some(Format::Jsonl));
        assert_eq!(format_of(Path::new("img.png")), None);
        assert_eq!(format_of(Path::new("Makefile")), None);
    }

    #[test]
    fn text_checks_name_the_problem() {
        assert_eq!(text_of(b"a\0b").unwrap_err().0, SkipReason::Binary);
        assert_eq!(text_of(b"  \n\t").unwrap_err().0, SkipReason::Empty);
        let (reason, line, _) = text_of(b"one\ntwo \xff\n").unwrap_err();
        assert_eq!((reason, line), (SkipReason::NotUtf8, Some(2)));
        assert_eq!(text_of(b"\xEF\xBB\xBFhi").unwrap(), "hi");
    }

    #[test]
    fn path_names_drop_dot_slash() {
        assert_eq!(path_name(Path::new("./docs/a.md")), "docs/a.md");
        assert_eq!(path_name(Path::new("docs/a.md")), "docs/a.md");
    }
}
