//! JSON Lines files kept beside an index or a run (example requests, tables of contents, eval
//! results, memory), read back one record per line. Each such file is appended to or
//! rewritten as work goes, so a crash can leave its last line cut short; what a line that
//! does not read means is the caller's to say ([`JsonLines::bad`], [`BadLine::is_cut_tail`]).

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

use serde::de::DeserializeOwned;

/// What a JSON Lines file held.
#[derive(Debug)]
pub struct JsonLines<T> {
    /// The lines that read, in file order.
    pub records: Vec<T>,
    /// The lines that did not read, in file order.
    pub bad: Vec<BadLine>,
    /// Whether the file ends in a line with no newline: a write cut short ends there, and the
    /// next [`append`] cuts it off before writing.
    pub cut: bool,
}

impl<T> JsonLines<T> {
    /// Warns of each line of `path` that did not read as `what` ("a table of contents"),
    /// for files whose bad lines are passed over: what they held is made again when asked.
    pub fn pass_over_bad(&self, path: &Path, what: &str) {
        for bad in &self.bad {
            tracing::warn!(
                "{} line {}: not {what} ({}); passed over",
                path.display(),
                bad.line,
                bad.error
            );
        }
    }
}

/// A line that did not read as a record.
#[derive(Debug)]
pub struct BadLine {
    /// 1-based.
    pub line: usize,
    pub error: serde_json::Error,
    /// Whether no non-blank line follows it.
    pub last: bool,
}

impl BadLine {
    /// Whether this is the file's last line and has no newline: a write cut short, not a
    /// corrupt file.
    pub fn is_cut_tail<T>(&self, file: &JsonLines<T>) -> bool {
        self.last && file.cut
    }
}

/// Reads `path` as JSON Lines: a missing file holds nothing, blank lines are passed over.
pub fn read<T: DeserializeOwned>(path: &Path) -> io::Result<JsonLines<T>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .collect();
    let mut records = Vec::with_capacity(lines.len());
    let mut bad = Vec::new();
    for (i, &(n, line)) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(record) => records.push(record),
            Err(error) => bad.push(BadLine {
                line: n + 1,
                error,
                last: i + 1 == lines.len(),
            }),
        }
    }
    Ok(JsonLines {
        records,
        bad,
        cut: !text.is_empty() && !text.ends_with('\n'),
    })
}

/// Appends `lines` (whole lines, each ending in a newline) to `path`, creating it, and syncs
/// them. Where the file ends in a line cut short (`*cut`, from [`read`]), that unreadable
/// tail is cut off first rather than joined to the first new line, which would turn a crash's
/// harmless cut tail into a corrupt line in the middle of the file.
pub fn append(path: &Path, lines: &str, cut: &mut bool) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    if *cut {
        let mut text = Vec::new();
        file.read_to_end(&mut text)?;
        let whole = text
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |at| at + 1);
        file.set_len(whole as u64)?;
    }
    file.write_all(lines.as_bytes())?;
    file.sync_data()?;
    *cut = false;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> JsonLines<u32> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        fs::write(&path, text).unwrap();
        read(&path).unwrap()
    }

    #[test]
    fn a_missing_file_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = read::<u32>(&dir.path().join("none.jsonl")).unwrap();
        assert!(file.records.is_empty() && file.bad.is_empty() && !file.cut);
    }

    #[test]
    fn bad_lines_are_numbered_and_a_cut_tail_is_told_from_a_corrupt_line() {
        let file = read_text("1\n\nx\n2\n3");
        assert_eq!(file.records, [1, 2, 3]);
        assert!(file.cut);
        assert_eq!(file.bad.len(), 1);
        assert_eq!((file.bad[0].line, file.bad[0].last), (3, false));
        assert!(!file.bad[0].is_cut_tail(&file));

        let file = read_text("1\n{\"a\"");
        assert_eq!(file.records, [1]);
        assert_eq!(file.bad[0].line, 2);
        assert!(file.bad[0].is_cut_tail(&file));

        // A bad last line that was written out in full is not a cut.
        let file = read_text("1\n{\"a\"\n");
        assert!(!file.cut && !file.bad[0].is_cut_tail(&file));
    }

    #[test]
    fn an_append_cuts_off_a_cut_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        fs::write(&path, "1\n{\"a").unwrap();
        let mut cut = read::<u32>(&path).unwrap().cut;
        append(&path, "3\n", &mut cut).unwrap();
        assert!(!cut);
        append(&path, "4\n", &mut cut).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "1\n3\n4\n");
        let mut cut = true;
        fs::write(&path, "{\"a").unwrap();
        append(&path, "5\n", &mut cut).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "5\n");
    }
}
