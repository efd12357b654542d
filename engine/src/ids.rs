//! Identifiers of documents, sections and chunks.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A document's id: the record id of a `.jsonl` corpus, else its path relative to the indexed root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DocId(pub String);

impl fmt::Display for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A section's id: 8 hex digits a person or an LLM can type.
///
/// It hashes the document id and the heading path only, so it survives edits to the text of
/// this or any other section, and changes only when the section's heading path does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SectionId(pub u32);

impl SectionId {
    /// The id of the section at `path` (headings from the top down) in document `doc`.
    pub fn new(doc: &DocId, path: &[String]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(doc.0.as_bytes());
        for heading in path {
            // Separators that cannot occur in a heading line keep ("a", "bc") apart from ("ab", "c").
            hasher.update([0u8]);
            hasher.update(heading.as_bytes());
        }
        let digest = hasher.finalize();
        Self(u32::from_be_bytes([
            digest[0], digest[1], digest[2], digest[3],
        ]))
    }

    /// The id used instead of [`SectionId::new`] when that one is already taken in the index by
    /// another section (a 32-bit hash collides now and then in indexes of many sections).
    pub fn salted(doc: &DocId, path: &[String], salt: u32) -> Self {
        let mut salted = path.to_vec();
        salted.push(format!("\u{0}#{salt}"));
        Self::new(doc, &salted)
    }

    /// Reads the 8-hex-digit form (any case).
    pub fn parse(text: &str) -> Option<Self> {
        (text.len() == 8 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(text, 16).ok().map(Self))
            .flatten()
    }
}

impl fmt::Display for SectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

/// A chunk's id: its section and its position within the section (`1a2b3c4d.0`). Serialized
/// in that text form, the way users, LLM prompts and traces see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChunkId {
    pub section: SectionId,
    pub index: u32,
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.section, self.index)
    }
}

impl ChunkId {
    /// Reads the `SECTION.INDEX` form.
    pub fn parse(text: &str) -> Option<Self> {
        let (section, index) = text.split_once('.')?;
        Some(Self {
            section: SectionId::parse(section)?,
            index: index.parse().ok()?,
        })
    }
}

impl Serialize for ChunkId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ChunkId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a chunk id: {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn section_ids_depend_on_document_and_path_only() {
        let doc = DocId("report.md".into());
        let a = SectionId::new(&doc, &path(&["Results", "Revenue"]));
        assert_eq!(a, SectionId::new(&doc, &path(&["Results", "Revenue"])));
        assert_ne!(a, SectionId::new(&doc, &path(&["Results", "Costs"])));
        assert_ne!(
            a,
            SectionId::new(&DocId("other.md".into()), &path(&["Results", "Revenue"]))
        );
        assert_ne!(
            SectionId::new(&doc, &path(&["ab", "c"])),
            SectionId::new(&doc, &path(&["a", "bc"]))
        );
    }

    #[test]
    fn ids_print_and_parse_back() {
        let id = SectionId::new(&DocId("d".into()), &path(&["x"]));
        let text = id.to_string();
        assert_eq!(text.len(), 8);
        assert_eq!(SectionId::parse(&text), Some(id));
        assert_eq!(SectionId::parse(&text.to_uppercase()), Some(id));
        assert_eq!(SectionId::parse("xyz"), None);
        assert_eq!(SectionId::parse("+1234567"), None);
        let chunk = ChunkId {
            section: id,
            index: 3,
        };
        assert_eq!(ChunkId::parse(&chunk.to_string()), Some(chunk));
        assert_eq!(ChunkId::parse("nothing"), None);
        let json = serde_json::to_string(&chunk).unwrap();
        assert_eq!(json, format!("\"{chunk}\""));
        assert_eq!(serde_json::from_str::<ChunkId>(&json).unwrap(), chunk);
        assert!(serde_json::from_str::<ChunkId>("\"12.x\"").is_err());
    }
}
