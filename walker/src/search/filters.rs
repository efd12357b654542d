//! Choosing documents by their metadata (`docs`): the fields the documents of an index have,
//! described for the model, and the filters it writes on them.
//!
//! A filter is a JSON object of field → test, as a small model writes it:
//! - a string is a fuzzy match (`"company": "nortwind"` matches "Northwind Traders": every
//!   word of the filter close to a word of the value);
//! - `{"from": ..., "to": ...}` (also `after`/`before`, `min`/`max`), or keys `date_from` /
//!   `date_to`, is an inclusive range; dates compare as text, so `"2023"` covers every date in
//!   2023 (values are cut to the bound's length);
//! - a number or boolean is equality (a number also matches a date that starts with it:
//!   `"year": 2023` matches `2023-03-31`);
//! - a list matches when any of its items does.
//!
//! Besides the metadata (`.jsonl` fields, Markdown front matter) every document has `title`,
//! `source` (its file) and `format`; `name` matches a `name` field where there is one, else
//! the title and the file name. Every condition must hold.

use serde_json::{Map, Value};
use walkrag_engine::{Document, IndexedDoc};

use crate::reader::jsonl::squash;

/// The score a fuzzy match needs: half the filter's words close to the value's.
const LIKE_THRESHOLD: f32 = 0.5;

/// Fields every document has.
const BUILT_IN: [&str; 3] = ["title", "source", "format"];

/// A field the documents have, as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub kind: Kind,
    /// How many documents have it.
    pub documents: usize,
    /// A few of its values, most frequent first.
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// Every value looks like a date (`2023`, `2023-04`, `2023-04-30...`).
    Date,
    Number,
    Flag,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Date => "date",
            Kind::Number => "number",
            Kind::Flag => "true/false",
        }
    }
}

/// The fields of `docs`: the built-in ones, then the metadata fields, most common first.
/// `source` (a path the model would copy wrongly) is described as `name` instead; `format`
/// only where the documents' formats differ.
pub fn fields(docs: &[IndexedDoc]) -> Vec<Field> {
    let mut names: Vec<String> = BUILT_IN.iter().map(|s| s.to_string()).collect();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for d in docs {
        for key in d.doc.metadata.keys() {
            match counts.iter_mut().find(|(name, _)| name == key) {
                Some((_, n)) => *n += 1,
                None => counts.push((key.clone(), 1)),
            }
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (name, _) in counts {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let values: Vec<Value> = docs.iter().filter_map(|d| value(&d.doc, &name)).collect();
            Field {
                kind: kind_of(&values),
                documents: values.len(),
                examples: examples(&values, 4),
                name,
            }
        })
        .collect()
}

/// The fields as the model reads them: one line each.
pub fn describe(fields: &[Field]) -> String {
    let name = "- name (text): the title or the file name".to_string();
    shown(fields)
        .map(|f| {
            format!(
                "- {} ({}, {} documents): {}",
                f.name,
                f.kind.name(),
                f.documents,
                f.examples.join("; ")
            )
        })
        .chain([name])
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fields a plan is told of (and may filter on, with `name`): the source path is left
/// out, and the format where all documents share it.
pub fn shown(fields: &[Field]) -> impl Iterator<Item = &Field> {
    fields
        .iter()
        .filter(|f| f.name != "source")
        .filter(|f| f.name != "format" || f.examples.len() > 1)
}

/// A document's value of `field`: a built-in field or its metadata (field names compared
/// without case or punctuation).
fn value(doc: &Document, field: &str) -> Option<Value> {
    match field {
        "title" => Some(Value::String(doc.title.clone())),
        "source" => Some(Value::String(doc.source.clone())),
        "format" => Some(Value::String(doc.format.name().to_string())),
        _ => {
            let wanted = squash(field);
            doc.metadata
                .iter()
                .find(|(key, _)| squash(key) == wanted)
                .map(|(_, v)| v.clone())
        }
    }
}

fn kind_of(values: &[Value]) -> Kind {
    if values.is_empty() {
        return Kind::Text;
    }
    if values.iter().all(Value::is_boolean) {
        Kind::Flag
    } else if values.iter().all(|v| v.as_str().is_some_and(is_date)) {
        Kind::Date
    } else if values.iter().all(Value::is_number) {
        Kind::Number
    } else {
        Kind::Text
    }
}

/// `2023`, `2023-04`, `2023-04-30` and longer (a time after the date).
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    match b.len() {
        4 => digits(0..4),
        7 => digits(0..4) && b[4] == b'-' && digits(5..7),
        n if n >= 10 => {
            digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)
        }
        _ => false,
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// Up to `n` distinct values, most frequent first, each cut to 40 characters.
fn examples(values: &[Value], n: usize) -> Vec<String> {
    let mut counted: Vec<(String, usize)> = Vec::new();
    for v in values {
        let text: String = text_of(v).chars().take(40).collect();
        match counted.iter_mut().find(|(seen, _)| *seen == text) {
            Some((_, count)) => *count += 1,
            None => counted.push((text, 1)),
        }
    }
    counted.sort_by_key(|c| std::cmp::Reverse(c.1));
    counted.into_iter().take(n).map(|(text, _)| text).collect()
}

/// One condition of a filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub field: String,
    test: Test,
}

#[derive(Debug, Clone, PartialEq)]
enum Test {
    Like(String),
    Range {
        from: Option<String>,
        to: Option<String>,
    },
    Equals(Value),
    Any(Vec<Test>),
}

/// The conditions of a filter object (anything else: none).
pub fn conditions(filters: &Value) -> Vec<Condition> {
    let Some(object) = filters.as_object() else {
        return Vec::new();
    };
    let mut out: Vec<Condition> = Vec::new();
    for (key, value) in object {
        if value.is_null() || value.as_str().is_some_and(|s| s.trim().is_empty()) {
            continue;
        }
        // `date_from` / `date_to` and the like: one bound of a range on `date`.
        if let Some((field, lower)) = bound_key(key) {
            let bound = text_of(value);
            match out.iter_mut().find(|c| c.field == field) {
                Some(Condition {
                    test: Test::Range { from, to },
                    ..
                }) => *(if lower { from } else { to }) = Some(bound),
                _ => out.push(Condition {
                    field: field.to_string(),
                    test: if lower {
                        Test::Range {
                            from: Some(bound),
                            to: None,
                        }
                    } else {
                        Test::Range {
                            from: None,
                            to: Some(bound),
                        }
                    },
                }),
            }
            continue;
        }
        out.push(Condition {
            field: key.clone(),
            test: test_of(value),
        });
    }
    out
}

const LOWER: [&str; 5] = ["from", "after", "since", "start", "min"];
const UPPER: [&str; 5] = ["to", "before", "until", "end", "max"];

/// `date_from` → (`date`, lower bound); `year_max` → (`year`, upper bound).
fn bound_key(key: &str) -> Option<(&str, bool)> {
    let (field, bound) = key.rsplit_once(['_', '-', ' '])?;
    if field.is_empty() {
        return None;
    }
    let bound = bound.to_lowercase();
    if LOWER.contains(&bound.as_str()) {
        Some((field, true))
    } else if UPPER.contains(&bound.as_str()) {
        Some((field, false))
    } else {
        None
    }
}

fn test_of(value: &Value) -> Test {
    match value {
        Value::String(s) => Test::Like(s.clone()),
        Value::Array(items) => Test::Any(items.iter().map(test_of).collect()),
        Value::Object(range) => {
            let bound = |names: &[&str]| {
                range
                    .iter()
                    .find(|(k, _)| names.contains(&k.to_lowercase().as_str()))
                    .map(|(_, v)| text_of(v))
            };
            Test::Range {
                from: bound(&LOWER),
                to: bound(&UPPER),
            }
        }
        other => Test::Equals(other.clone()),
    }
}

/// How well `doc` meets every condition (1.0 for exact tests, the fuzzy score for text), or
/// `None` when one fails. `known` says which fields exist: a condition on another field is
/// left out (see [`unknown_fields`]).
pub fn score(doc: &Document, conditions: &[Condition], known: &[Field]) -> Option<f32> {
    let mut total = 0.0;
    let mut counted = 0;
    for condition in conditions {
        if !is_known(&condition.field, known) {
            continue;
        }
        let values: Vec<Value> =
            if squash(&condition.field) == "name" && value(doc, &condition.field).is_none() {
                let file = doc.source.rsplit('/').next().unwrap_or(&doc.source);
                vec![Value::String(doc.title.clone()), Value::String(file.into())]
            } else {
                vec![value(doc, &condition.field)?]
            };
        let best = values
            .iter()
            .map(|v| test_score(&condition.test, v))
            .fold(0.0f32, f32::max);
        if best <= 0.0 {
            return None;
        }
        total += best;
        counted += 1;
    }
    Some(if counted == 0 {
        1.0
    } else {
        total / counted as f32
    })
}

/// The fields conditions name that no document has (`name` always exists).
pub fn unknown_fields(conditions: &[Condition], known: &[Field]) -> Vec<String> {
    conditions
        .iter()
        .filter(|c| !is_known(&c.field, known))
        .map(|c| c.field.clone())
        .collect()
}

fn is_known(field: &str, known: &[Field]) -> bool {
    let wanted = squash(field);
    wanted == "name"
        || known
            .iter()
            .any(|f| f.documents > 0 && squash(&f.name) == wanted)
}

/// A test's score on one value: above 0 is a match.
fn test_score(test: &Test, value: &Value) -> f32 {
    match test {
        Test::Like(wanted) => {
            let score = like(wanted, &text_of(value));
            if score >= LIKE_THRESHOLD {
                score
            } else {
                0.0
            }
        }
        Test::Range { from, to } => {
            let text = text_of(value);
            let within = |bound: &Option<String>, lower: bool| match bound {
                None => true,
                Some(bound) => match (text.trim().parse::<f64>(), bound.trim().parse::<f64>()) {
                    (Ok(v), Ok(b)) if !is_date(text.trim()) => {
                        if lower {
                            v >= b
                        } else {
                            v <= b
                        }
                    }
                    _ => {
                        let cut: String = text.chars().take(bound.chars().count()).collect();
                        if lower {
                            cut.as_str() >= bound.as_str()
                        } else {
                            cut.as_str() <= bound.as_str()
                        }
                    }
                },
            };
            if within(from, true) && within(to, false) {
                1.0
            } else {
                0.0
            }
        }
        Test::Equals(wanted) => {
            let equal = match (wanted, value) {
                (Value::Number(w), Value::Number(v)) => w.as_f64() == v.as_f64(),
                (Value::Number(w), Value::String(v)) => {
                    v.trim() == w.to_string() || (is_date(v) && v.starts_with(&w.to_string()))
                }
                (Value::Bool(w), Value::String(v)) => v.trim().eq_ignore_ascii_case(&w.to_string()),
                (w, v) => w == v,
            };
            if equal {
                1.0
            } else {
                0.0
            }
        }
        Test::Any(tests) => tests
            .iter()
            .map(|t| test_score(t, value))
            .fold(0.0, f32::max),
    }
}

/// Words that say nothing about which document is meant.
const STOP_WORDS: [&str; 6] = ["the", "a", "an", "of", "and", "for"];

/// How close `wanted` is to `text`, 0 to 1: the mean over `wanted`'s words of the best match
/// among `text`'s (1 equal, 0.9 a prefix of 3 letters or more, 0.8 one edit away for words of
/// 4 letters or more, two for 8 or more; numbers match only when equal).
pub fn like(wanted: &str, text: &str) -> f32 {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let targets = words(text);
    let wanted: Vec<String> = words(wanted)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    if wanted.is_empty() {
        return 0.0;
    }
    let word_score = |w: &str, t: &str| -> f32 {
        if w == t {
            1.0
        } else if is_number(w) || is_number(t) {
            // 2023 is not "close to" 2024, nor 14 to 15.
            0.0
        } else if w.len() >= 3 && t.len() >= 3 && (t.starts_with(w) || w.starts_with(t)) {
            0.9
        } else {
            let allowed = match w.chars().count() {
                0..=3 => 0,
                4..=7 => 1,
                _ => 2,
            };
            if allowed > 0 && edits(w, t) <= allowed {
                0.8
            } else {
                0.0
            }
        }
    };
    let total: f32 = wanted
        .iter()
        .map(|w| targets.iter().map(|t| word_score(w, t)).fold(0.0, f32::max))
        .sum();
    total / wanted.len() as f32
}

fn is_number(word: &str) -> bool {
    word.chars().all(|c| c.is_ascii_digit())
}

/// Levenshtein distance.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// A document's metadata on one line, for the reader (`company: Northwind; date: 2023-03-31`).
pub fn metadata_line(metadata: &Map<String, Value>) -> String {
    metadata
        .iter()
        .map(|(k, v)| format!("{k}: {}", text_of(v)))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use walkrag_engine::{DocId, Format};

    use super::*;

    fn doc(title: &str, metadata: Value) -> IndexedDoc {
        let id = DocId(format!("{title}.md"));
        let text = format!("# {title}\n\nText.\n");
        let doc = Document::markdown(
            id,
            format!("reports/{title}.md"),
            Format::Markdown,
            text,
            title,
        )
        .with_metadata(metadata.as_object().unwrap().clone());
        IndexedDoc {
            doc,
            chunks: Vec::new(),
        }
    }

    fn docs() -> Vec<IndexedDoc> {
        vec![
            doc(
                "Northwind 2022",
                json!({"company": "Northwind Traders", "date": "2023-03-31", "type": "annual report"}),
            ),
            doc(
                "Northwind 2023",
                json!({"company": "Northwind Traders", "date": "2024-03-29", "type": "annual report"}),
            ),
            doc(
                "Contoso Q1",
                json!({"company": "Contoso", "date": "2024-04-30", "type": "quarterly report", "audited": false}),
            ),
        ]
    }

    fn matching(filter: Value) -> Vec<String> {
        let docs = docs();
        let fields = fields(&docs);
        let conditions = conditions(&filter);
        docs.iter()
            .filter(|d| score(&d.doc, &conditions, &fields).is_some())
            .map(|d| d.doc.title.clone())
            .collect()
    }

    #[test]
    fn fields_are_described_with_kinds_counts_and_examples() {
        let fields = fields(&docs());
        let text = describe(&fields);
        assert!(
            text.contains("- company (text, 3 documents): Northwind Traders; Contoso"),
            "{text}"
        );
        assert!(text.contains("- date (date, 3 documents)"), "{text}");
        assert!(
            text.contains("- audited (true/false, 1 documents): false"),
            "{text}"
        );
        assert!(text.starts_with("- title (text, 3 documents)"), "{text}");
        assert!(
            text.ends_with("- name (text): the title or the file name"),
            "{text}"
        );
        assert!(
            !text.contains("source") && !text.contains("format"),
            "{text}"
        );
    }

    #[test]
    fn text_matches_fuzzily_and_names_match_titles() {
        assert_eq!(
            matching(json!({"company": "nortwind"})),
            ["Northwind 2022", "Northwind 2023"]
        );
        assert_eq!(matching(json!({"Company": "contoso ltd"})), ["Contoso Q1"]);
        assert_eq!(matching(json!({"name": "Contoso"})), ["Contoso Q1"]);
        assert_eq!(matching(json!({"type": "quarterly"})), ["Contoso Q1"]);
        assert!(matching(json!({"company": "Fabrikam"})).is_empty());
    }

    #[test]
    fn ranges_years_and_lists_select_by_date() {
        let both = ["Northwind 2023", "Contoso Q1"];
        assert_eq!(matching(json!({"date": {"from": "2024-01-01"}})), both);
        assert_eq!(
            matching(json!({"date_from": "2024", "date_to": "2024-03"})),
            ["Northwind 2023"]
        );
        assert_eq!(matching(json!({"date": 2023})), ["Northwind 2022"]);
        assert_eq!(
            matching(json!({"company": ["Contoso", "Northwind"], "date": {"after": "2024"}})),
            both
        );
        // A field no document has is left out, not failed.
        assert_eq!(
            matching(json!({"region": "EMEA", "company": "contoso"})),
            ["Contoso Q1"]
        );
        let docs = docs();
        assert_eq!(
            unknown_fields(&conditions(&json!({"region": "EMEA"})), &fields(&docs)),
            ["region"]
        );
    }

    #[test]
    fn like_scores_words_close_to_the_value() {
        assert_eq!(like("Northwind", "Northwind Traders"), 1.0);
        assert!(like("nortwind traders", "Northwind Traders") > 0.85);
        assert_eq!(like("the", "The Company"), 0.0);
        assert_eq!(like("ab", "abc"), 0.0);
        // Numbers are equal or not: a year or a day is never a near miss.
        assert_eq!(like("2024", "2023"), 0.0);
        assert!(like("2024-03-15", "2025-03-14") < LIKE_THRESHOLD);
        assert_eq!(like("2024-03-15", "2024-03-15"), 1.0);
        assert_eq!(edits("kitten", "sitting"), 3);
    }
}
