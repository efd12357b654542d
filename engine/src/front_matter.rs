//! A Markdown file's front matter: the `key: value` block between two `---` lines that
//! static-site generators and note tools put first (title, date, author, type...). Its fields
//! become the document's metadata, for strategies that choose documents by them (`docs`).
//!
//! Only flat fields are read: `key: value` with a string (quoted or not), number, boolean or
//! `[a, b]` list. Indented lines (nested YAML) and comments are passed over; a block that
//! never closes is not front matter and stays text.

use serde_json::{Map, Number, Value};

/// The fields of `text`'s front matter and the text after it, or `None` when it has none.
pub fn split(text: &str) -> Option<(Map<String, Value>, &str)> {
    let mut lines = text.split_inclusive('\n');
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let mut fields = Map::new();
    let mut at = text.find('\n')? + 1;
    for line in lines {
        at += line.len();
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return Some((fields, &text[at..]));
        }
        if trimmed.starts_with([' ', '\t', '#', '-']) || trimmed.is_empty() {
            continue;
        }
        if let Some((key, value)) = trimmed.split_once(':') {
            let key = key.trim();
            if !key.is_empty() && !value.trim().is_empty() {
                fields.insert(key.to_string(), value_of(value.trim()));
            }
        }
    }
    None
}

fn value_of(text: &str) -> Value {
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let items = inner
            .split(',')
            .map(|item| unquote(item.trim()))
            .filter(|item| !item.is_empty())
            .map(|item| Value::String(item.to_string()))
            .collect();
        return Value::Array(items);
    }
    let quoted = text.len() >= 2
        && ((text.starts_with('"') && text.ends_with('"'))
            || (text.starts_with('\'') && text.ends_with('\'')));
    if quoted {
        return Value::String(unquote(text).to_string());
    }
    match text {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(n) = text.parse::<i64>() {
        return Value::Number(n.into());
    }
    if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
        return Value::Number(n);
    }
    Value::String(text.to_string())
}

fn unquote(text: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return inner;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn flat_fields_are_read_and_the_text_after_is_kept() {
        let text = "---\ntitle: \"Annual report: 2023\"\ncompany: Northwind Traders\nyear: 2023\n\
                    draft: false\ntags: [finance, 'annual']\nnested:\n  ignored: yes\n# comment\n\
                    ---\n# Report\nBody\n";
        let (fields, rest) = split(text).unwrap();
        assert_eq!(
            Value::Object(fields),
            json!({"title": "Annual report: 2023", "company": "Northwind Traders", "year": 2023,
                   "draft": false, "tags": ["finance", "annual"]})
        );
        assert_eq!(rest, "# Report\nBody\n");
    }

    #[test]
    fn no_block_or_an_unclosed_one_is_not_front_matter() {
        assert!(split("# Title\n---\nkey: value\n---\n").is_none());
        assert!(split("---\nkey: value\nno end\n").is_none());
        let (fields, rest) = split("---\r\ndate: 2024-03-01\r\n...\r\ntext").unwrap();
        assert_eq!(fields["date"], "2024-03-01");
        assert_eq!(rest, "text");
    }
}
