//! The constraints of the strategies' model calls, built from what each call may say: the
//! ids it may name are enums of the ids it was shown, so a reply can only cite what exists.
//! Local models enforce them while generating ([`walkrag_core::Constraint`]); servers that
//! cannot are read tolerantly, as before.

use serde_json::{json, Value};
use walkrag_core::Constraint;

use crate::search::filters::{self, Field, Kind};

/// A string of at most `max` characters.
fn text(max: usize) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// An object with exactly these properties, all required, in this order.
pub fn object(properties: &[(&str, Value)]) -> Value {
    let names: Vec<&str> = properties.iter().map(|(name, _)| *name).collect();
    let map: serde_json::Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| (name.to_string(), schema.clone()))
        .collect();
    json!({
        "type": "object",
        "properties": map,
        "required": names,
        "additionalProperties": false
    })
}

/// `text` as a regex matching itself (every ASCII character that is not a letter, digit or
/// space escaped, which the regex syntax allows), with `/` escaped for Lark's delimiters.
pub fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// toc's pick: `count` of the listed section ids (as many as there are, where fewer), or an
/// empty pick, or a direct reply to a message that needs no documents. (A JSON Schema cannot
/// keep the ids distinct here: llguidance does not enforce `uniqueItems`.)
pub fn toc_pick(ids: &[String], count: usize) -> Constraint {
    let count = count.min(ids.len());
    Constraint::JsonSchema(json!({
        "anyOf": [
            object(&[(
                "sections",
                json!({"type": "array", "items": {"enum": ids}, "minItems": count, "maxItems": count}),
            )]),
            object(&[("sections", json!({"type": "array", "maxItems": 0}))]),
            object(&[("reply", text(300))]),
        ]
    }))
}

/// A navigation turn of roam: open 1 to `max` of the `closed` sections, or answer.
pub fn roam_move(closed: &[String], max: usize) -> Constraint {
    let answer = object(&[("action", json!({"const": "answer"}))]);
    if closed.is_empty() {
        return Constraint::JsonSchema(answer);
    }
    let expand = object(&[
        ("action", json!({"const": "expand_sections"})),
        (
            "ids",
            json!({"type": "array", "items": {"enum": closed}, "minItems": 1, "maxItems": max}),
        ),
    ]);
    Constraint::JsonSchema(json!({ "anyOf": [expand, answer] }))
}

/// The answer line: at most 120 characters with no citation in it (no `[`, no "Sources:":
/// the ids go on their own line).
const ANSWER_LINE: &str = "/[^\\n\\[]{1,120}/ & ~/(?s:.*)[Ss]ources:(?s:.*)/";

/// The note line after the sources: at most 300 characters, not a second sources line.
const NOTE_TERMINAL: &str = "NOTE: /[^\\n]{1,300}/ & ~/[Ss]ources:(?s:.*)/\n";

/// The answer step: `Answer: ` and a short answer on one line, `Sources:` and the ids of
/// the shown passages it used in square brackets, then at most one line more (what the
/// passages do say, when they do not answer).
///
/// With `copy` (the text of the shown passages and the question), the answer is `yes`, `no`,
/// `not found`, or words copied from that text in their order, whole words only: a worked
/// example's content cannot become an answer, nor can a word no passage holds. Without it
/// (an answer in another language than the passages'), any short line.
pub fn answer(shown: &[String], copy: Option<&str>) -> Constraint {
    let mut grammar = String::from(r#"start: "Answer: " ANSWER "\nSources:""#);
    let ids: Vec<String> = shown
        .iter()
        .map(|id| serde_json::to_string(id).expect("a string serialises"))
        .collect();
    match ids.len().saturating_sub(1).min(4) {
        _ if ids.is_empty() => {}
        // llguidance refuses a `{0,0}` range: one passage shown is one source at most.
        0 => grammar.push_str(r#" (" " source)?"#),
        more => grammar.push_str(&format!(r#" (" " source (", " source){{0,{more}}})?"#)),
    }
    grammar.push_str(r#" ("\n" NOTE)?"#);
    grammar.push('\n');
    if !ids.is_empty() {
        grammar.push_str(&format!(
            "source: \"[\" ID \"]\"\nID: {}\n",
            ids.join(" | ")
        ));
    }
    match copy {
        Some(copy) => {
            let copy = serde_json::to_string(&one_line(copy)).expect("a string serialises");
            grammar.push_str("ANSWER: \"yes\" | \"no\" | \"not found\" | COPY\n");
            grammar.push_str(&format!(
                "COPY: %regex {{ \"substring_words\": {copy} }} & {ANSWER_LINE}\n"
            ));
        }
        None => grammar.push_str(&format!("ANSWER: {ANSWER_LINE}\n")),
    }
    grammar.push_str(NOTE_TERMINAL);
    Constraint::Lark(grammar)
}

/// `text` on one line, single-spaced: a copied answer then never holds the line break that
/// ends it.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An entry of a generated table of contents: a heading of a few words and one sentence.
pub fn contents_entry() -> Constraint {
    Constraint::JsonSchema(object(&[("heading", text(60)), ("summary", text(200))]))
}

/// docs' plan: `query_documents` with filters on the fields the plan is told of (each
/// optional, typed by its kind: a date may be a `from`/`to` range; `name` matches titles and
/// file names), or `search_passages`.
pub fn docs_plan(fields: &[Field]) -> Constraint {
    let mut filters: serde_json::Map<String, Value> = filters::shown(fields)
        .map(|field| {
            let value = match field.kind {
                Kind::Text => text(80),
                Kind::Number => json!({"type": "number"}),
                Kind::Flag => json!({"type": "boolean"}),
                Kind::Date => json!({"anyOf": [
                    text(10),
                    object(&[("from", text(10)), ("to", text(10))]),
                ]}),
            };
            (field.name.clone(), value)
        })
        .collect();
    filters.entry("name").or_insert_with(|| text(80));
    let query = object(&[
        ("action", json!({"const": "query_documents"})),
        ("query", text(120)),
        (
            "filters",
            json!({"type": "object", "properties": filters, "additionalProperties": false}),
        ),
    ]);
    let search = object(&[
        ("action", json!({"const": "search_passages"})),
        ("query", text(120)),
    ]);
    Constraint::JsonSchema(json!({ "anyOf": [query, search] }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_cites_only_shown_ids() {
        let Constraint::Lark(grammar) = answer(&["3fa9c2d1.0".into(), "77b1e4d0.2".into()], None)
        else {
            panic!("a Lark grammar");
        };
        assert_eq!(
            grammar,
            "start: \"Answer: \" ANSWER \"\\nSources:\" (\" \" source (\", \" source){0,1})? (\"\\n\" NOTE)?\n\
             source: \"[\" ID \"]\"\n\
             ID: \"3fa9c2d1.0\" | \"77b1e4d0.2\"\n\
             ANSWER: /[^\\n\\[]{1,120}/ & ~/(?s:.*)[Ss]ources:(?s:.*)/\n\
             NOTE: /[^\\n]{1,300}/ & ~/[Ss]ources:(?s:.*)/\n"
        );
    }

    #[test]
    fn a_copied_answer_is_held_to_the_text_on_one_line() {
        let Constraint::Lark(grammar) = answer(
            &["3fa9c2d1.0".into()],
            Some("Harlow Footbridge\nopened in \"1884\"."),
        ) else {
            panic!("a Lark grammar");
        };
        assert!(
            grammar.contains("ANSWER: \"yes\" | \"no\" | \"not found\" | COPY\n"),
            "{grammar}"
        );
        assert!(
            grammar.contains(
                "COPY: %regex { \"substring_words\": \"Harlow Footbridge opened in \\\"1884\\\".\" } \
                 & /[^\\n\\[]{1,120}/ & ~/(?s:.*)[Ss]ources:(?s:.*)/\n"
            ),
            "{grammar}"
        );
    }

    #[test]
    fn one_shown_passage_is_one_source_at_most() {
        // `{0,0}` (no further source) does not compile in llguidance: `walkrag ask -k 1` failed.
        let Constraint::Lark(grammar) = answer(&["3fa9c2d1.0".into()], None) else {
            panic!("a Lark grammar");
        };
        assert!(grammar.starts_with(
            "start: \"Answer: \" ANSWER \"\\nSources:\" (\" \" source)? (\"\\n\" NOTE)?\n"
        ));
        assert!(!grammar.contains("{0,0}"));
    }

    #[test]
    fn picks_and_moves_list_only_given_ids() {
        let Constraint::JsonSchema(schema) = toc_pick(&["0a1b2c3d".into()], 3) else {
            panic!("a JSON Schema");
        };
        assert_eq!(
            schema["anyOf"][0]["properties"]["sections"]["items"]["enum"],
            json!(["0a1b2c3d"])
        );
        assert_eq!(schema["anyOf"][0]["required"], json!(["sections"]));
        // As many ids as asked for, where there are that many; or none.
        assert_eq!(schema["anyOf"][0]["properties"]["sections"]["minItems"], 1);
        assert_eq!(schema["anyOf"][1]["properties"]["sections"]["maxItems"], 0);
        let Constraint::JsonSchema(schema) = roam_move(&[], 3) else {
            panic!("a JSON Schema");
        };
        assert_eq!(schema["properties"]["action"]["const"], "answer");
        let Constraint::JsonSchema(schema) = roam_move(&["0a1b2c3d".into()], 2) else {
            panic!("a JSON Schema");
        };
        assert_eq!(schema["anyOf"][0]["properties"]["ids"]["maxItems"], 2);
    }

    #[test]
    fn the_docs_plan_filters_only_on_the_index_fields() {
        let field = |name: &str, kind| Field {
            name: name.into(),
            kind,
            documents: 3,
            examples: Vec::new(),
        };
        let Constraint::JsonSchema(schema) =
            docs_plan(&[field("type", Kind::Text), field("date", Kind::Date)])
        else {
            panic!("a JSON Schema");
        };
        let filters = &schema["anyOf"][0]["properties"]["filters"];
        assert_eq!(filters["additionalProperties"], false);
        assert_eq!(filters["properties"]["type"]["type"], "string");
        assert_eq!(
            filters["properties"]["date"]["anyOf"][1]["required"],
            json!(["from", "to"])
        );
        assert_eq!(
            schema["anyOf"][1]["properties"]["action"]["const"],
            "search_passages"
        );
    }
}
