//! What a model may write as an operation's inputs: a JSON Schema its decoding is held to,
//! so that "nothing invented" is a property of what can be generated rather than a rule
//! applied to what was.
//!
//! A value that the user supplies can only be copied. A string is a span of whole words of
//! what the user said, or a string value of an API response; an integer or number is one
//! that appears there; a date (an input whose `format` says so, or whose spec `example` is
//! one) is a date written there as a date. Enums are the spec's own; booleans are free (a
//! flag is a choice the request makes, not a value it gives). A required input may be `null`,
//! which asks the user for it; an optional one the user did not give is left out. What the
//! user said once fills one input: a value repeated in a later input is dropped there.
//!
//! Local models enforce the schema token by token. A backend that cannot (a server that
//! ignores `response_format`, a tool call, a scripted test model) gets the same rule
//! checked afterwards by [`keep`]: a value outside it is dropped, and a required one is then
//! asked for.

use serde_json::{json, Map, Number, Value};
use walkrag_walker::constrain::{escape_regex, object};

use crate::action::{one_line, Action, Location};
use crate::schema::main_type;

/// The longest span, in words, that a string input may copy.
const SPAN_WORDS: usize = 60;
/// The most string values of API responses that may be copied.
const RETURNED_VALUES: usize = 200;
/// The longest string value of a response that may be copied, in characters.
const RETURNED_CHARS: usize = 120;
/// How deep objects inside an input are followed.
const OBJECT_DEPTH: usize = 3;
/// Where the shared span pattern is defined in a schema.
const SPAN_REF: &str = "#/$defs/span";
/// Where the shared one-word pattern is defined: a path parameter's value is one segment
/// of the URL, which names a thing by one word of what was said (`sam`, `5127`), never by a
/// phrase.
const WORD_REF: &str = "#/$defs/word";

/// Longest `query` of a search, `question` to the user and `text` of a reply.
const QUERY_CHARS: usize = 200;
const QUESTION_CHARS: usize = 300;
const REPLY_CHARS: usize = 600;

/// What values may be copied from: the user's messages and the API's responses.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sources {
    said: Vec<String>,
    returned: Vec<String>,
    numbers: Vec<Number>,
    /// ISO 8601 dates and date-times written as words of what was said.
    dates: Vec<String>,
}

impl Sources {
    /// Adds a message of the user's.
    pub fn said(&mut self, text: &str) {
        for number in numbers_in(text) {
            self.add_number(number);
        }
        for (start, end) in word_cores(text) {
            let word = &text[start..end];
            if date_kind(word).is_some() && !self.dates.iter().any(|d| d == word) {
                self.dates.push(word.to_string());
            }
        }
        self.said.push(text.to_string());
    }

    /// Adds the scalar values of a JSON response body (a body that is not JSON adds nothing:
    /// its words are the server's prose, not values).
    pub fn returned(&mut self, body: &str) {
        if let Ok(value) = serde_json::from_str::<Value>(body) {
            self.add_values(&value);
        }
    }

    fn add_values(&mut self, value: &Value) {
        match value {
            Value::String(text) => {
                let text = text.trim();
                let fits = !text.is_empty()
                    && text.chars().count() <= RETURNED_CHARS
                    && !text.contains(['\n', '\r']);
                if fits
                    && self.returned.len() < RETURNED_VALUES
                    && !self.returned.iter().any(|r| r == text)
                {
                    self.returned.push(text.to_string());
                }
            }
            Value::Number(number) => self.add_number(number.clone()),
            Value::Array(items) => items.iter().for_each(|v| self.add_values(v)),
            Value::Object(map) => map.values().for_each(|v| self.add_values(v)),
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn add_number(&mut self, number: Number) {
        if !self.numbers.iter().any(|n| same_number(n, &number)) {
            self.numbers.push(number);
        }
    }

    /// The numbers that may be copied: integers only, or all.
    fn numbers(&self, integers: bool) -> Vec<Value> {
        self.numbers
            .iter()
            .filter(|n| !integers || n.is_i64() || n.is_u64())
            .map(|n| Value::Number(n.clone()))
            .collect()
    }

    /// A regex of every string that may be copied; `None` when there is none.
    pub fn pattern(&self) -> Option<String> {
        let mut alternatives: Vec<String> = Vec::new();
        for text in &self.said {
            for alternative in span_alternatives(text) {
                if !alternatives.contains(&alternative) {
                    alternatives.push(alternative);
                }
            }
        }
        alternatives.extend(self.returned.iter().map(|text| literal(text)));
        (!alternatives.is_empty()).then(|| format!("^(?:{})$", alternatives.join("|")))
    }

    /// A regex of every single word that may be copied (a response's values without spaces
    /// among them); `None` when there is none.
    fn word_pattern(&self) -> Option<String> {
        let mut alternatives: Vec<String> = Vec::new();
        let words = self
            .said
            .iter()
            .flat_map(|text| word_cores(text).into_iter().map(move |(a, b)| &text[a..b]));
        let returned = self.returned.iter().map(String::as_str);
        for word in words
            .chain(returned)
            .filter(|w| !w.contains(char::is_whitespace))
        {
            let alternative = literal(word);
            if !alternatives.contains(&alternative) {
                alternatives.push(alternative);
            }
        }
        (!alternatives.is_empty()).then(|| format!("^(?:{})$", alternatives.join("|")))
    }

    /// Whether `text` may be copied: it occurs in a message (spaces compared loosely) or is a
    /// value of a response.
    fn holds_text(&self, text: &str) -> bool {
        let text = one_line(text);
        !text.is_empty() && (self.said_holds(&text) || self.returned_holds(&text))
    }

    /// Whether a message holds `text` (already [`one_line`]).
    fn said_holds(&self, text: &str) -> bool {
        self.said.iter().any(|said| one_line(said).contains(text))
    }

    /// Whether a response returned `text` (already [`one_line`]).
    fn returned_holds(&self, text: &str) -> bool {
        self.returned.iter().any(|r| one_line(r) == text)
    }

    /// The user's messages, in order.
    pub fn messages(&self) -> &[String] {
        &self.said
    }

    /// Whether the user wrote `value` (a string as words of a message, a number as a number
    /// in one) and no response returned it.
    pub fn user_wrote(&self, value: &Value) -> bool {
        match value {
            Value::String(text) => {
                let text = one_line(text);
                !text.is_empty() && self.said_holds(&text) && !self.returned_holds(&text)
            }
            Value::Number(number) => self
                .said
                .iter()
                .any(|said| numbers_in(said).iter().any(|n| same_number(n, number))),
            _ => false,
        }
    }

    fn holds_number(&self, number: &Number) -> bool {
        self.numbers.iter().any(|n| same_number(n, number))
    }
}

/// Whether `text` is an ISO 8601 date (`2025-03-01`: `"date"`) or date-time
/// (`2025-03-01T10:00`, seconds, fraction and zone optional: `"date-time"`).
fn date_kind(text: &str) -> Option<&'static str> {
    let digits = |part: &str, n: usize| part.len() == n && part.bytes().all(|b| b.is_ascii_digit());
    let (date, time) = match text.split_once(['T', 't', ' ']) {
        Some((date, time)) => (date, Some(time)),
        None => (text, None),
    };
    let parts: Vec<&str> = date.split('-').collect();
    let is_date =
        matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2));
    if !is_date {
        return None;
    }
    let Some(time) = time else {
        return Some("date");
    };
    let clock = time.trim_end_matches(['Z', 'z']);
    let clock = clock
        .rfind(['+', '-'])
        .filter(|&at| at >= 5)
        .map_or(clock, |at| &clock[..at]);
    let clock = clock.split('.').next().unwrap_or(clock);
    let parts: Vec<&str> = clock.split(':').collect();
    let is_time = matches!(parts.as_slice(), [h, m] | [h, m, _] if digits(h, 2) && digits(m, 2))
        && parts.get(2).is_none_or(|s| digits(s, 2));
    is_time.then_some("date-time")
}

/// The date kind of a string schema: its `format`, else what its `example` is.
fn date_format(schema: &Value) -> Option<&'static str> {
    match schema.get("format").and_then(Value::as_str) {
        Some("date") => Some("date"),
        Some("date-time") => Some("date-time"),
        Some(_) => None,
        None => schema
            .get("example")
            .or_else(|| schema.get("examples").and_then(|e| e.get(0)))
            .and_then(Value::as_str)
            .and_then(date_kind),
    }
}

fn same_number(a: &Number, b: &Number) -> bool {
    a.as_f64() == b.as_f64()
}

/// The numbers written in `text` as numbers: digits (with a decimal part) not joined to a
/// letter or digit on either side, so the `3` of `3rd` or of an id like `9f3a` is none.
fn numbers_in(text: &str) -> Vec<Number> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && chars[i - 1].is_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
        }
        if i < chars.len() && chars[i].is_alphanumeric() {
            continue;
        }
        let written: String = chars[start..i].iter().collect();
        let number = match written.parse::<u64>() {
            Ok(n) => Some(Number::from(n)),
            Err(_) => written.parse::<f64>().ok().and_then(Number::from_f64),
        };
        out.extend(number);
    }
    out
}

/// The byte ranges of the words of `text` without the punctuation around them (`"Spring`
/// is `Spring`, `#3318,` is `3318`); a token of punctuation alone is no word.
fn word_cores(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
        let token_start = offset + start;
        let token_len = rest[start..]
            .find(char::is_whitespace)
            .unwrap_or(rest.len() - start);
        let token = &text[token_start..token_start + token_len];
        let core = token.trim_matches(|c: char| !c.is_alphanumeric());
        if !core.is_empty() {
            let at = token_start + token.find(core).expect("a core is part of its token");
            out.push((at, at + core.len()));
        }
        offset = token_start + token_len;
        rest = &text[offset..];
    }
    out
}

/// One regex per word of `text`: every span of 1 to [`SPAN_WORDS`] words starting there, as
/// nested optional groups (`a(?: b(?: c)?)?`).
fn span_alternatives(text: &str) -> Vec<String> {
    let words = word_cores(text);
    let mut out = Vec::with_capacity(words.len());
    for (i, &(start, end)) in words.iter().enumerate() {
        let mut regex = literal(&text[start..end]);
        let mut open = 0;
        let mut last_end = end;
        for &(_, next_end) in words.iter().skip(i + 1).take(SPAN_WORDS - 1) {
            regex.push_str("(?:");
            regex.push_str(&literal(&text[last_end..next_end]));
            open += 1;
            last_end = next_end;
        }
        regex.push_str(&")?".repeat(open));
        out.push(regex);
    }
    out
}

/// `text` as a regex matching itself, any run of white space matching any other.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push_str(r"\s+");
            }
            in_space = true;
            continue;
        }
        in_space = false;
        if c.is_control() {
            continue;
        }
        out.push_str(&escape_regex(&c.to_string()));
    }
    out
}

/// What may be written for one value under `schema`; `None` when nothing may (an integer
/// when no number was given, a string when nothing was said).
fn value_schema(schema: &Value, allowed: &Allowed, depth: usize) -> Option<Value> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
        return (!values.is_empty()).then(|| json!({ "enum": values }));
    }
    if let Some(value) = schema.get("const") {
        return Some(json!({ "const": value }));
    }
    let one_of = |values: &Vec<Value>| (!values.is_empty()).then(|| json!({ "enum": values }));
    match main_type(schema) {
        Some("boolean") => Some(json!({"type": "boolean"})),
        Some("integer") => one_of(&allowed.integers),
        Some("number") => one_of(&allowed.numbers),
        Some("string") => match date_format(schema) {
            Some(format) => one_of(&allowed.dates(format)),
            None => allowed.spans.then(|| json!({ "$ref": SPAN_REF })),
        },
        Some("array") => {
            let items = value_schema(schema.get("items")?, allowed, depth)?;
            Some(json!({"type": "array", "items": items, "minItems": 1}))
        }
        Some("object") if depth < OBJECT_DEPTH => {
            let properties = schema.get("properties").and_then(Value::as_object)?;
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            for (name, property) in properties {
                match value_schema(property, allowed, depth + 1) {
                    Some(value) => {
                        out.insert(name.clone(), value);
                    }
                    // The object cannot be given without this part.
                    None if required.contains(&name.as_str()) => return None,
                    None => {}
                }
            }
            (!out.is_empty()).then(|| {
                json!({
                    "type": "object",
                    "properties": out,
                    "required": required,
                    "additionalProperties": false,
                })
            })
        }
        Some(_) => None,
        // No type: a copied string or number.
        None => {
            let mut any: Vec<Value> = Vec::new();
            if allowed.spans {
                any.push(json!({ "$ref": SPAN_REF }));
            }
            any.extend(one_of(&allowed.numbers));
            match any.len() {
                0 => None,
                1 => any.pop(),
                _ => Some(json!({ "anyOf": any })),
            }
        }
    }
}

/// What the sources allow, computed once per schema.
struct Allowed {
    spans: bool,
    words: bool,
    integers: Vec<Value>,
    numbers: Vec<Value>,
    dates: Vec<String>,
}

impl Allowed {
    /// The dates said that a `format` input takes (a date-time input takes a date too).
    fn dates(&self, format: &str) -> Vec<Value> {
        self.dates
            .iter()
            .filter(|d| format == "date-time" || date_kind(d) == Some("date"))
            .map(|d| Value::from(d.as_str()))
            .collect()
    }
}

/// The inputs object of `action`: every required input (a value, or `null` to ask for
/// it), then the optional ones that can be given, in the spec's order; credentials are not
/// the model's and are not there.
fn inputs_schema(action: &Action, allowed: &Allowed) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let inputs = action.inputs.iter().filter(|input| !input.is_credential());
    let (needed, optional): (Vec<_>, Vec<_>) = inputs.partition(|input| input.required);
    let value_of = |input: &crate::action::Input| {
        let value = value_schema(&input.schema, allowed, 0);
        match value {
            Some(span) if input.location == Location::Path && span["$ref"] == SPAN_REF => {
                allowed.words.then(|| json!({ "$ref": WORD_REF }))
            }
            other => other,
        }
    };
    for input in needed {
        let value = value_of(input);
        let schema = match value {
            Some(value) => json!({"anyOf": [value, {"type": "null"}]}),
            None => json!({"type": "null"}),
        };
        properties.insert(input.name.clone(), schema);
        required.push(input.name.clone());
    }
    for input in optional {
        if let Some(value) = value_of(input) {
            properties.insert(input.name.clone(), value);
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// One turn of the JSON-lines protocol: a call of one of `operations`, its inputs held to
/// `sources`, or, where `built_ins`, a search, a question for the user or a reply.
pub(crate) fn turn_schema(operations: &[&Action], sources: &Sources, built_ins: bool) -> Value {
    let pattern = sources.pattern();
    let words = sources.word_pattern();
    let allowed = Allowed {
        spans: pattern.is_some(),
        words: words.is_some(),
        integers: sources.numbers(true),
        numbers: sources.numbers(false),
        dates: sources.dates.clone(),
    };
    // A built-in action, with its one text of at most `max` characters.
    let built_in = |action: &str, field: &str, max: usize| {
        let text = json!({"type": "string", "minLength": 1, "maxLength": max});
        object(&[("action", json!({ "const": action })), (field, text)])
    };
    let mut branches: Vec<Value> = operations
        .iter()
        .map(|action| {
            object(&[
                ("action", json!({"const": "execute_action"})),
                ("operation_id", json!({"const": action.operation_id})),
                ("params", inputs_schema(action, &allowed)),
            ])
        })
        .collect();
    if built_ins {
        branches.extend([
            built_in("find_actions", "query", QUERY_CHARS),
            built_in("ask_user", "question", QUESTION_CHARS),
            built_in("respond", "text", REPLY_CHARS),
        ]);
    }
    let mut schema = match branches.len() {
        1 => branches.pop().expect("one branch"),
        _ => json!({ "anyOf": branches }),
    };
    let mut defs = Map::new();
    if let Some(pattern) = pattern {
        defs.insert("span".into(), json!({"type": "string", "pattern": pattern}));
    }
    if let Some(words) = words {
        defs.insert("word".into(), json!({"type": "string", "pattern": words}));
    }
    if let (false, Value::Object(map)) = (defs.is_empty(), &mut schema) {
        map.insert("$defs".into(), Value::Object(defs));
    }
    schema
}

/// `params` held to what [`turn_schema`] allows, for replies no decoder held to it: unknown
/// names, credentials and `null`s (asked for) left out, and each value that the sources do not
/// hold dropped with a note saying so.
pub(crate) fn keep(action: &Action, params: &Value, sources: &Sources) -> (Value, Vec<String>) {
    let mut kept = Map::new();
    let mut notes = Vec::new();
    let Value::Object(given) = params else {
        if !params.is_null() {
            notes.push(format!(
                "the inputs were not an object ({params}); none were kept"
            ));
        }
        return (Value::Object(kept), notes);
    };
    // Inputs in the order the schema writes them: required first.
    let mut names: Vec<&String> = given.keys().collect();
    names.sort_by_key(|name| !action.input(name).is_some_and(|input| input.required));
    let mut used: Vec<(String, &str)> = Vec::new();
    for name in names {
        let value = &given[name.as_str()];
        if value.is_null() {
            continue;
        }
        if let Some(text) = value.as_str().map(one_line) {
            if let Some((_, earlier)) = used.iter().find(|(t, _)| *t == text) {
                notes.push(format!(
                    "{name}: the same words as {earlier}; what the user said once fills one \
                     input, so it is left out"
                ));
                continue;
            }
            used.push((text, name));
        }
        let Some(input) = action.input(name).filter(|input| !input.is_credential()) else {
            notes.push(format!("{name}: not an input of {}", action.operation_id));
            continue;
        };
        let lacking = lacking_parts(&input.schema, value);
        if !lacking.is_empty() {
            notes.push(format!(
                "{name}: given without its required parts ({}); left out",
                lacking.join(", ")
            ));
        } else if input.location == Location::Path
            && value
                .as_str()
                .is_some_and(|v| v.trim().contains(char::is_whitespace))
        {
            notes.push(format!(
                "{name}: {value} is several words, where a path takes one; left out"
            ));
        } else if allows(&input.schema, value, sources, 0) {
            kept.insert(name.clone(), value.clone());
        } else {
            notes.push(format!(
                "{name}: {value} is not a value the user gave; left out"
            ));
        }
    }
    (Value::Object(kept), notes)
}

/// The required properties of an object `schema` that `value` lacks.
fn lacking_parts(schema: &Value, value: &Value) -> Vec<String> {
    let (Some(required), Value::Object(map)) =
        (schema.get("required").and_then(Value::as_array), value)
    else {
        return Vec::new();
    };
    required
        .iter()
        .filter_map(Value::as_str)
        .filter(|name| map.get(*name).is_none_or(Value::is_null))
        .map(str::to_string)
        .collect()
}

/// Whether [`value_schema`] of `schema` allows `value`.
fn allows(schema: &Value, value: &Value, sources: &Sources, depth: usize) -> bool {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.contains(value);
    }
    if let Some(constant) = schema.get("const") {
        return constant == value;
    }
    let copied = |value: &Value| match value {
        Value::String(text) => sources.holds_text(text),
        Value::Number(number) => sources.holds_number(number),
        _ => false,
    };
    match (main_type(schema), value) {
        (Some("boolean"), Value::Bool(_)) => true,
        (Some("integer" | "number"), _) => copied(value),
        (Some("string"), Value::String(text)) => match date_format(schema) {
            Some(format) => {
                sources.dates.contains(text)
                    && (format == "date-time" || date_kind(text) == Some("date"))
            }
            None => copied(value),
        },
        (Some("array"), Value::Array(items)) => {
            let schema = schema.get("items").unwrap_or(&Value::Null);
            !items.is_empty() && items.iter().all(|v| allows(schema, v, sources, depth))
        }
        (Some("object"), Value::Object(map)) if depth < OBJECT_DEPTH => {
            let properties = schema.get("properties").and_then(Value::as_object);
            lacking_parts(schema, value).is_empty()
                && map.iter().all(|(name, v)| {
                    properties
                        .and_then(|p| p.get(name))
                        .is_some_and(|p| allows(p, v, sources, depth + 1))
                })
        }
        (None, Value::String(_) | Value::Number(_)) => copied(value),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Catalog;

    fn catalog() -> Catalog {
        Catalog::from_value(&json!({
            "openapi": "3.1.0",
            "info": {"title": "Shelves", "version": "1"},
            "servers": [{"url": "https://shelves.example"}],
            "paths": {"/shelves/{shelf_id}/books": {"post": {
                "operationId": "addBook",
                "parameters": [
                    {"name": "shelf_id", "in": "path", "required": true,
                     "schema": {"type": "integer"}},
                    {"name": "Api-Key", "in": "header", "required": true,
                     "schema": {"type": "string"}}
                ],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                    "type": "object",
                    "required": ["title"],
                    "properties": {
                        "title": {"type": "string"},
                        "format": {"type": "string", "enum": ["paper", "ebook"]},
                        "signed": {"type": "boolean"},
                        "published": {"type": "string", "format": "date"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "price": {"type": "number"}
                    }
                }}}}
            }}}
        }))
        .unwrap()
    }

    fn sources(said: &[&str]) -> Sources {
        let mut sources = Sources::default();
        for text in said {
            sources.said(text);
        }
        sources
    }

    #[test]
    fn numbers_are_those_written_as_numbers() {
        let found: Vec<String> = numbers_in("Shelf #12, part 3.5; the 3rd of id 9f3a, v2 and 40.")
            .iter()
            .map(Number::to_string)
            .collect();
        assert_eq!(found, ["12", "3.5", "40"]);
    }

    #[test]
    fn spans_are_whole_words_without_the_punctuation_around_them() {
        let said = r#"Add "The Long Walk" to shelf 12, please."#;
        let cores: Vec<&str> = word_cores(said).iter().map(|&(a, b)| &said[a..b]).collect();
        assert_eq!(
            cores,
            ["Add", "The", "Long", "Walk", "to", "shelf", "12", "please"]
        );
        // The pattern as a regex of the `regex` syntax llguidance reads too.
        let pattern = regex::Regex::new(&sources(&[said]).pattern().unwrap()).unwrap();
        for span in ["The Long Walk", "The Long", "12, please", "Add \"The"] {
            assert!(pattern.is_match(span), "{span}");
        }
        for not_a_span in ["Walk\"", "ong Walk", "The Short Walk", ""] {
            assert!(!pattern.is_match(not_a_span), "{not_a_span}");
        }
    }

    #[test]
    fn the_schema_holds_each_input_to_what_it_may_be() {
        let catalog = catalog();
        let action = &catalog.actions[0];
        let schema = turn_schema(&[action], &sources(&["Add Dune to shelf 12"]), false);
        let params = &schema["properties"]["params"];
        let properties = params["properties"].as_object().unwrap();
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        // Required first, credentials never; a date with no date said cannot be given.
        assert_eq!(
            names,
            ["shelf_id", "title", "format", "signed", "tags", "price"]
        );
        assert_eq!(params["required"], json!(["shelf_id", "title"]));
        assert_eq!(
            properties["shelf_id"],
            json!({"anyOf": [{"enum": [12]}, {"type": "null"}]})
        );
        assert_eq!(
            properties["title"],
            json!({"anyOf": [{"$ref": SPAN_REF}, {"type": "null"}]})
        );
        assert_eq!(properties["format"], json!({"enum": ["paper", "ebook"]}));
        assert_eq!(properties["signed"], json!({"type": "boolean"}));
        assert_eq!(properties["price"], json!({"enum": [12]}));
        assert!(schema["$defs"]["span"]["pattern"].is_string());

        let nothing_said = turn_schema(&[action], &Sources::default(), true);
        let first = &nothing_said["anyOf"][0]["properties"]["params"]["properties"];
        assert_eq!(first["shelf_id"], json!({"type": "null"}));
        assert!(first.get("tags").is_none());
        assert!(nothing_said.get("$defs").is_none());
        assert_eq!(nothing_said["anyOf"].as_array().unwrap().len(), 4);
    }

    #[test]
    fn dates_are_those_written_as_dates() {
        for (text, kind) in [
            ("2025-03-01", Some("date")),
            ("2025-03-01T10:00", Some("date-time")),
            ("2025-03-01T10:00:30.5+02:00", Some("date-time")),
            ("2025-03-01T10:00:00Z", Some("date-time")),
            ("2025-3-1", None),
            ("20250301", None),
            ("2025-03-01T10", None),
        ] {
            assert_eq!(date_kind(text), kind, "{text}");
        }
        // A date by its example where no format says so.
        assert_eq!(
            date_format(&json!({"type": "string", "example": "2121-02-22"})),
            Some("date")
        );
        let catalog = catalog();
        let said = sources(&["Add Dune (2025-03-01, 2025-03-02T09:30) to shelf 12"]);
        let schema = turn_schema(&[&catalog.actions[0]], &said, false);
        assert_eq!(
            schema["properties"]["params"]["properties"]["published"],
            json!({"enum": ["2025-03-01"]})
        );
    }

    #[test]
    fn a_path_parameter_is_one_word_of_what_was_said() {
        let catalog = Catalog::from_value(&json!({
            "openapi": "3.1.0",
            "info": {"title": "Posts", "version": "1"},
            "servers": [{"url": "https://posts.example"}],
            "paths": {"/posts/{id}": {"get": {
                "operationId": "getPost",
                "parameters": [{"name": "id", "in": "path", "required": true,
                                "schema": {"type": "string"}}]
            }}}
        }))
        .unwrap();
        let action = &catalog.actions[0];
        let said = sources(&["Show the open day post, number 40566."]);
        let schema = turn_schema(&[action], &said, false);
        assert_eq!(
            schema["properties"]["params"]["properties"]["id"],
            json!({"anyOf": [{"$ref": WORD_REF}, {"type": "null"}]})
        );
        let words =
            regex::Regex::new(schema["$defs"]["word"]["pattern"].as_str().unwrap()).unwrap();
        assert!(words.is_match("40566") && words.is_match("open"));
        assert!(!words.is_match("open day") && !words.is_match("40566."));
        let (kept, notes) = keep(action, &json!({"id": "open day post"}), &said);
        assert_eq!(kept, json!({}));
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn what_was_said_once_fills_one_input() {
        let catalog = catalog();
        let said = sources(&["Add Dune to shelf 12"]);
        let keep = |params: Value| keep(&catalog.actions[0], &params, &said);
        let (kept, notes) = keep(json!({"tags": ["Dune"], "title": "Dune", "format": "paper"}));
        assert_eq!(
            kept,
            json!({"title": "Dune", "format": "paper", "tags": ["Dune"]})
        );
        assert!(notes.is_empty(), "a list is not the same value: {notes:?}");
        let (kept, notes) =
            keep(json!({"title": "Dune", "message": "x", "price": 12, "shelf_id": 12}));
        assert_eq!(kept, json!({"shelf_id": 12, "title": "Dune", "price": 12}));
        assert_eq!(notes.len(), 1, "numbers may repeat: {notes:?}");
        let (kept, notes) = keep(json!({"tags": "Dune", "title": "Dune"}));
        assert_eq!(kept, json!({"title": "Dune"}));
        assert!(
            notes[0].starts_with("tags: the same words as title"),
            "{notes:?}"
        );
    }

    #[test]
    fn values_no_decoder_held_are_kept_only_where_the_sources_hold_them() {
        let catalog = catalog();
        let action = &catalog.actions[0];
        let mut sources = sources(&["Add Dune to shelf 12, paperback"]);
        sources.returned(r#"{"shelves": [{"id": 7, "name": "Science fiction"}]}"#);
        let (kept, notes) = keep(
            action,
            &json!({
                "shelf_id": 7, "title": "Dune", "format": "paper", "signed": true,
                "tags": ["Science fiction", "classic"], "price": 9.99,
                "Api-Key": "k", "colour": "red", "published": null
            }),
            &sources,
        );
        assert_eq!(
            kept,
            json!({"shelf_id": 7, "title": "Dune", "format": "paper", "signed": true})
        );
        assert_eq!(notes.len(), 4, "{notes:?}");
    }
}
