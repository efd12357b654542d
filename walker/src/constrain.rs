//! The constraints of the strategies' model calls, built from what each call may say: the
//! ids it may name are enums of the ids it was shown, so a reply can only cite what exists.
//! Local models enforce them while generating ([`walkrag_core::Constraint`]); servers that
//! cannot are read tolerantly, as before.

use serde_json::{json, Value};
use walkrag_core::Constraint;

use crate::filters::{self, Field, Kind};

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

/// Longest `fact` of the read step, in characters: one sentence.
pub const FACT_CHARS: usize = 160;
/// Longest `relevance`.
pub const RELEVANCE_CHARS: usize = 80;
/// Longest `nextSource`: a name, title or topic.
pub const NEXT_SOURCE_CHARS: usize = 60;
/// Longest `expectedInfo`.
pub const EXPECTED_INFO_CHARS: usize = 100;

/// walk's read step: JSON Lines of up to `max_facts` facts whose `source` is one of the
/// `shown` chunk ids, then either `{"sufficient": true}` (only where `may_suffice`, and after
/// at least one fact: nothing found cannot suffice), or 1 to `max_searches` search objects
/// (`nextSource`, `expectedInfo`) and `{"sufficient": false}`: a reply that does not end the
/// walk always says where to look next. A `nextSource` is never one of `not_next` (the titles
/// of what was read: searching them finds nothing new) nor starts with a chunk id.
///
/// Every line is written out in Lark, strings without quotes or backslashes in them, so that
/// a lexeme can say what a next source may not be (`%json` cannot).
pub fn read_step(
    shown: &[String],
    max_facts: usize,
    max_searches: usize,
    may_suffice: bool,
    not_next: &[String],
) -> Constraint {
    // A next source that starts as one of our chunk ids (8 hex digits, a dot, a number), and
    // the read titles whole. Not an id anywhere in it: the complement of a pattern that may
    // start at every character ran llguidance out of lexer fuel once the model had typed an
    // id's dot, and the call failed.
    let mut excluded = vec![r"[0-9a-f]{8}\.[0-9]+(?s:.*)".to_string()];
    excluded.extend(
        not_next
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| escape_regex(t)),
    );
    let next = format!(
        "/{next}/ & ~/(?:{excluded})/",
        next = json_text(NEXT_SOURCE_CHARS),
        excluded = excluded.join("|"),
    );
    read_grammar(shown, max_facts, max_searches, may_suffice, &next)
}

/// [`read_step`] whose `nextSource` is one of `names` (see [`crate::names`]): the model
/// chooses where to look among what its passages name, rather than writing it. With no names
/// to choose from it is [`read_step`] with nothing excluded but chunk ids.
pub fn read_step_naming(
    shown: &[String],
    max_facts: usize,
    max_searches: usize,
    may_suffice: bool,
    names: &[String],
) -> Constraint {
    let literals: Vec<String> = names
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| {
            let json = serde_json::to_string(n).expect("a string serialises");
            // The name as written inside a JSON string, as a Lark literal.
            serde_json::to_string(&json[1..json.len() - 1]).expect("a string serialises")
        })
        .collect();
    if literals.is_empty() {
        return read_step(shown, max_facts, max_searches, may_suffice, &[]);
    }
    read_grammar(
        shown,
        max_facts,
        max_searches,
        may_suffice,
        &literals.join(" | "),
    )
}

/// The read step's grammar, its `nextSource` lexeme given (`NEXT: {next}`).
fn read_grammar(
    shown: &[String],
    max_facts: usize,
    max_searches: usize,
    may_suffice: bool,
    next: &str,
) -> Constraint {
    let searching =
        format!(r#"(fact "\n"){{0,{max_facts}}} (search "\n"){{1,{max_searches}}} not_yet"#);
    let start = if may_suffice {
        format!(r#"(fact "\n"){{1,{max_facts}}} done | {searching}"#)
    } else {
        searching
    };
    let sources: Vec<String> = shown
        .iter()
        .map(|id| serde_json::to_string(id).expect("a string serialises"))
        .collect();
    Constraint::Lark(format!(
        r#"start: {start}
fact: "{{\"fact\": \"" FACT "\", \"relevance\": \"" RELEVANCE "\", \"source\": \"" SOURCE "\"}}"
search: "{{\"nextSource\": \"" NEXT "\", \"expectedInfo\": \"" INFO "\"}}"
done: "{{\"sufficient\": true}}"
not_yet: "{{\"sufficient\": false}}"
SOURCE: {sources}
FACT: /{fact}/
RELEVANCE: /{relevance}/
NEXT: {next}
INFO: /{info}/
"#,
        sources = sources.join(" | "),
        fact = json_text(FACT_CHARS),
        relevance = json_text(RELEVANCE_CHARS),
        info = json_text(EXPECTED_INFO_CHARS),
    ))
}

/// A regex for 1 to `max` characters of a JSON string with nothing to escape in it.
fn json_text(max: usize) -> String {
    format!(r#"[^"\\\x00-\x1f]{{1,{max}}}"#)
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

/// The answer line and the note line of [`answer`]: the answer is at most 120 characters with
/// no citation in it (no `[`, no "Sources:": the ids go on their own line) and the note at
/// most 300.
const ANSWER_TERMINALS: &str = "ANSWER: /[^\\n\\[]{1,120}/ & ~/(?s:.*)[Ss]ources:(?s:.*)/\n\
                                NOTE: /[^\\n]{1,300}/ & ~/[Ss]ources:(?s:.*)/\n";

/// The answer step: `Answer: ` and a short answer on one line, `Sources:` and the ids of
/// the shown passages it used in square brackets, then at most one line more (what the
/// passages do say, when they do not answer).
pub fn answer(shown: &[String]) -> Constraint {
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
    grammar.push_str(ANSWER_TERMINALS);
    Constraint::Lark(grammar)
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
    fn the_read_step_names_the_shown_ids_and_demands_a_search_unless_sufficient() {
        let shown = ["3fa9c2d1.0".to_string(), "77b1e4d0.2".to_string()];
        let read = ["Velmora (town)".to_string(), "A/B".to_string()];
        let Constraint::Lark(grammar) = read_step(&shown, 5, 3, true, &read) else {
            panic!("a Lark grammar");
        };
        assert_eq!(
            grammar,
            r#"start: (fact "\n"){1,5} done | (fact "\n"){0,5} (search "\n"){1,3} not_yet
fact: "{\"fact\": \"" FACT "\", \"relevance\": \"" RELEVANCE "\", \"source\": \"" SOURCE "\"}"
search: "{\"nextSource\": \"" NEXT "\", \"expectedInfo\": \"" INFO "\"}"
done: "{\"sufficient\": true}"
not_yet: "{\"sufficient\": false}"
SOURCE: "3fa9c2d1.0" | "77b1e4d0.2"
FACT: /[^"\\\x00-\x1f]{1,160}/
RELEVANCE: /[^"\\\x00-\x1f]{1,80}/
NEXT: /[^"\\\x00-\x1f]{1,60}/ & ~/(?:[0-9a-f]{8}\.[0-9]+(?s:.*)|Velmora \(town\)|A\/B)/
INFO: /[^"\\\x00-\x1f]{1,100}/
"#
        );
    }

    #[test]
    fn chosen_next_sources_are_the_names_offered_as_json_writes_them() {
        let names = ["Hank Snow".to_string(), r#"The "Rock""#.to_string()];
        let Constraint::Lark(grammar) =
            read_step_naming(&["3fa9c2d1.0".into()], 5, 3, true, &names)
        else {
            panic!("a Lark grammar");
        };
        assert!(
            grammar.contains(r#"NEXT: "Hank Snow" | "The \\\"Rock\\\"""#),
            "{grammar}"
        );
        // With no names it is the free read step.
        assert_eq!(
            read_step_naming(&["3fa9c2d1.0".into()], 5, 3, true, &[]),
            read_step(&["3fa9c2d1.0".into()], 5, 3, true, &[])
        );
    }

    #[test]
    fn a_first_read_must_say_where_to_look_next() {
        let Constraint::Lark(grammar) = read_step(&["3fa9c2d1.0".into()], 5, 3, false, &[]) else {
            panic!("a Lark grammar");
        };
        assert!(
            grammar.starts_with(
                r#"start: (fact "\n"){0,5} (search "\n"){1,3} not_yet
fact: "#
            ),
            "{grammar}"
        );
    }

    #[test]
    fn the_answer_cites_only_shown_ids() {
        let Constraint::Lark(grammar) = answer(&["3fa9c2d1.0".into(), "77b1e4d0.2".into()]) else {
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
    fn one_shown_passage_is_one_source_at_most() {
        // `{0,0}` (no further source) does not compile in llguidance: `walkrag ask -k 1` failed.
        let Constraint::Lark(grammar) = answer(&["3fa9c2d1.0".into()]) else {
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
