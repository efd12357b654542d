//! Checking the inputs a model gives for an action against its schema, and turning them into
//! a request: path parameters substituted and percent-encoded, query pairs, headers, cookies,
//! and the body. Nothing is ever invented: a missing required input is reported, not filled.

use std::fmt;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::action::{
    cap, joined, scalar, Action, Encoding, Input, Location, Method, SecurityRequirement, Server,
    Style,
};
use crate::schema::{self, CUT};
use walkrag_walker::jsonl::squash;

/// Everything but RFC 3986's unreserved characters is percent-encoded, in paths (so a `/` in
/// a value stays inside its segment) and in queries alike.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A value percent-encoded for a path segment or a query key or value.
pub(crate) fn encode_component(value: &str) -> String {
    utf8_percent_encode(value, COMPONENT).to_string()
}

/// Why inputs were not accepted. Nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invalid {
    /// Only required inputs are missing (nested fields as `parent.field`): ask the user for
    /// them; never guess.
    Missing(Vec<String>),
    /// Inputs that are wrong, each with what to do about it, and any missing ones.
    Bad {
        problems: Vec<Problem>,
        missing: Vec<String>,
    },
}

impl Invalid {
    /// The required inputs that were not given.
    pub fn missing(&self) -> &[String] {
        match self {
            Invalid::Missing(missing) | Invalid::Bad { missing, .. } => missing,
        }
    }

    /// The problems with given inputs (none for `Missing`).
    pub fn problems(&self) -> &[Problem] {
        match self {
            Invalid::Missing(_) => &[],
            Invalid::Bad { problems, .. } => problems,
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problems = self.problems();
        if !problems.is_empty() {
            f.write_str("The inputs were not accepted; nothing was sent:")?;
            for problem in problems {
                write!(f, "\n- {problem}")?;
            }
        }
        let missing = self.missing();
        if !missing.is_empty() {
            if !problems.is_empty() {
                f.write_str("\n")?;
            }
            write!(
                f,
                "Missing required inputs: {}. Ask the user for them; do not guess.",
                missing.join(", ")
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Invalid {}

/// One thing wrong with one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The input (`name`, `name.field`, `name[2]`); empty for the inputs as a whole.
    pub input: String,
    /// What is wrong and what is expected, for the model to act on.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.input.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.input, self.message)
        }
    }
}

/// The body of a prepared request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreparedBody {
    pub content_type: String,
    pub encoding: Encoding,
    /// The JSON value sent (as JSON, or as form pairs for a form body).
    pub value: Value,
}

/// A checked request for one action, ready for the executor; holds no credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prepared {
    pub operation_id: String,
    pub method: Method,
    /// The path with its parameters substituted and percent-encoded.
    pub path: String,
    /// Query pairs, not yet encoded.
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub cookies: Vec<(String, String)>,
    pub body: Option<PreparedBody>,
    /// Values that were read as something else (`limit: "3" read as 3`).
    pub coerced: Vec<String>,
    pub security: Vec<SecurityRequirement>,
    pub servers: Vec<Server>,
}

impl Prepared {
    /// The encoded query string, without `?`.
    pub fn query_string(&self) -> String {
        encode_pairs(&self.query)
    }

    /// The path and, when there are query pairs, `?` and the query string.
    pub fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, self.query_string())
        }
    }
}

/// `k=v&k2=v2`, each part percent-encoded.
pub(crate) fn encode_pairs(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

impl Action {
    /// Checks `inputs` (a JSON object of input name → value, `null` for "not given") and
    /// builds the request. Obvious coercions (`"3"` for an integer, an enum value in the wrong
    /// case) are made and recorded in `Prepared::coerced`.
    pub fn prepare(&self, inputs: &Value) -> Result<Prepared, Invalid> {
        let empty = Map::new();
        let mut check = Checker::default();
        let given = match inputs {
            Value::Object(map) => map,
            Value::Null => &empty,
            other => {
                let not = kind(other);
                check.problem(
                    "",
                    &format!("inputs must be a JSON object of input name to value, not {not}"),
                );
                return Err(check.finish().expect_err("a problem"));
            }
        };
        let (values, extra) = self.match_names(given, &mut check);

        let mut path = self.path.clone();
        let mut query = Vec::new();
        let mut headers = Vec::new();
        let mut cookies = Vec::new();
        let mut body_fields = Map::new();
        let mut whole_body = None;
        for (input, value) in self.inputs.iter().zip(values) {
            let value = match value {
                Some(Value::Null) if input.location == Location::Body && input.nullable => {
                    Value::Null
                }
                Some(Value::Null) | None => {
                    if input.required {
                        check.missing.push(input.name.clone());
                    }
                    continue;
                }
                Some(value) => {
                    let mut value = value.clone();
                    check.check(&input.schema, &mut value, &input.name);
                    value
                }
            };
            match input.location {
                Location::Path => {
                    let text = path_value(input, &value);
                    if text.is_empty() {
                        check.problem(&input.name, "must not be empty: it is part of the path");
                    }
                    path = path.replace(&format!("{{{}}}", input.wire_name), &text);
                }
                Location::Query => query.extend(query_pairs(input, &value)),
                Location::Header => {
                    let text = simple(&value, input.explode);
                    if text.chars().any(char::is_control) {
                        check.problem(&input.name, "a header value must be one line");
                    }
                    headers.push((input.wire_name.clone(), text));
                }
                Location::Cookie => {
                    let text = simple(&value, false);
                    if text.chars().any(|c| c.is_control() || c == ';') {
                        check.problem(
                            &input.name,
                            "a cookie value cannot hold `;` or a line break",
                        );
                    }
                    cookies.push((input.wire_name.clone(), text));
                }
                Location::Body if input.wire_name.is_empty() => whole_body = Some(value),
                Location::Body => {
                    body_fields.insert(input.wire_name.clone(), value);
                }
            }
        }
        body_fields.extend(extra);

        let body = match &self.body {
            Some(body) if body.encoding == Encoding::Unsupported => {
                check.problem(
                    "",
                    &format!(
                        "this action takes a {} body, which cannot be sent from here",
                        body.content_type
                    ),
                );
                None
            }
            Some(body) => {
                let value = match whole_body {
                    Some(value) => Some(value),
                    None if body.fields && (body.required || !body_fields.is_empty()) => {
                        Some(Value::Object(body_fields))
                    }
                    None => None,
                };
                value.map(|value| PreparedBody {
                    content_type: body.content_type.clone(),
                    encoding: body.encoding,
                    value,
                })
            }
            None => None,
        };
        if let Some(PreparedBody {
            encoding: Encoding::Form,
            value: Value::Object(fields),
            ..
        }) = &body
        {
            for (name, value) in fields {
                if value.is_object() {
                    check.problem(name, "a form body cannot hold an object");
                }
            }
        }

        check.finish()?;
        Ok(Prepared {
            operation_id: self.operation_id.clone(),
            method: self.method,
            path,
            query,
            headers,
            cookies,
            body,
            coerced: check.coerced,
            security: self.security.clone(),
            servers: self.servers.clone(),
        })
    }

    /// Pairs each input with the value given for it: by exact name, else by a name equal up
    /// to case and punctuation (`note_id` for `noteId`, `post_ids` for `post_ids[]`) when
    /// that picks one input. Names matching nothing go to an open body, or are reported.
    fn match_names<'a>(
        &self,
        given: &'a Map<String, Value>,
        check: &mut Checker,
    ) -> (Vec<Option<&'a Value>>, Map<String, Value>) {
        let mut values: Vec<Option<&Value>> = self
            .inputs
            .iter()
            .map(|input| given.get(&input.name))
            .collect();
        let mut extra = Map::new();
        let mut unknown = Vec::new();
        for (name, value) in given {
            if self.inputs.iter().any(|input| input.name == *name) {
                continue;
            }
            let loose = squash(name);
            let candidates: Vec<usize> = (0..self.inputs.len())
                .filter(|&i| squash(&self.inputs[i].name) == loose)
                .collect();
            match candidates[..] {
                [i] if values[i].is_none() => {
                    check
                        .coerced
                        .push(format!("{name}: read as {}", self.inputs[i].name));
                    values[i] = Some(value);
                }
                [i] => check.problem(
                    name,
                    &format!("given twice, also as {}; give it once", self.inputs[i].name),
                ),
                _ if self.body.as_ref().is_some_and(|b| b.open && b.fields) => {
                    extra.insert(name.clone(), value.clone());
                }
                _ => unknown.push(name.clone()),
            }
        }
        if !unknown.is_empty() {
            let known: Vec<&str> = self.inputs.iter().map(|i| i.name.as_str()).collect();
            let takes = if known.is_empty() {
                "this action takes no inputs".to_string()
            } else {
                format!("this action takes: {}", known.join(", "))
            };
            for name in unknown {
                check.problem(&name, &format!("no such input; {takes}"));
            }
        }
        (values, extra)
    }
}

/// The problems, missing inputs and coercions found while checking.
#[derive(Default)]
struct Checker {
    problems: Vec<Problem>,
    missing: Vec<String>,
    coerced: Vec<String>,
}

impl Checker {
    fn problem(&mut self, input: &str, message: &str) {
        self.problems.push(Problem {
            input: input.to_string(),
            message: message.to_string(),
        });
    }

    fn finish(&mut self) -> Result<(), Invalid> {
        match (self.problems.is_empty(), self.missing.is_empty()) {
            (true, true) => Ok(()),
            (true, false) => Err(Invalid::Missing(std::mem::take(&mut self.missing))),
            (false, _) => Err(Invalid::Bad {
                problems: std::mem::take(&mut self.problems),
                missing: std::mem::take(&mut self.missing),
            }),
        }
    }

    fn coerce(&mut self, at: &str, value: &mut Value, new: Value) {
        self.coerced
            .push(format!("{at}: {} read as {new}", short(value)));
        *value = new;
    }

    /// Checks `value` against `schema`, coercing it where the intent is plain.
    fn check(&mut self, schema: &Value, value: &mut Value, at: &str) {
        if schema.get(CUT).is_some() && schema.get("properties").is_none() {
            // A cut reference: its shape is not known here; the server checks it.
            return;
        }
        if value.is_null() {
            if !schema::nullable(schema) && schema::main_type(schema).is_some() {
                self.problem(at, "must not be null");
            }
            return;
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = schema.get(key) {
                self.check_branches(branches, value, at);
                return;
            }
        }
        if !self.check_type(schema, value, at) {
            return;
        }
        self.check_enum(schema, value, at);
        self.check_bounds(schema, value, at);
    }

    /// Accepts the first branch the value fits (with that branch's coercions).
    fn check_branches(&mut self, branches: &[Value], value: &mut Value, at: &str) {
        for branch in branches {
            let mut attempt = Checker::default();
            let mut candidate = value.clone();
            attempt.check(branch, &mut candidate, at);
            if attempt.problems.is_empty() && attempt.missing.is_empty() {
                *value = candidate;
                self.coerced.extend(attempt.coerced);
                return;
            }
        }
        let shapes: Vec<String> = branches
            .iter()
            .map(|b| crate::action::Type::of(b).to_string())
            .collect();
        self.problem(
            at,
            &format!(
                "{} fits none of the allowed forms ({})",
                short(value),
                shapes.join(", ")
            ),
        );
    }

    /// Checks (and coerces) the type; false when the value is of the wrong type.
    fn check_type(&mut self, schema: &Value, value: &mut Value, at: &str) -> bool {
        let Some(ty) = schema::main_type(schema) else {
            return true;
        };
        // A list of one where one value goes (`"post_ids[]": ["884213"]`): that value.
        if matches!(ty, "integer" | "number" | "boolean" | "string") {
            if let Value::Array(items) = &*value {
                if let [one] = items.as_slice() {
                    let one = one.clone();
                    self.coerce(at, value, one);
                }
            }
        }
        match ty {
            "integer" | "number" | "boolean" => {
                let (read, expected) = match ty {
                    "integer" if value.is_i64() || value.is_u64() => return true,
                    "number" if value.is_number() => return true,
                    "boolean" if value.is_boolean() => return true,
                    "integer" => {
                        let whole = match &*value {
                            Value::Number(n) => {
                                n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                            }
                            Value::String(s) => s.trim().parse::<i64>().ok().map(|i| i as f64),
                            _ => None,
                        };
                        (whole.map(|f| Value::from(f as i64)), "an integer")
                    }
                    "number" => {
                        let parsed = value.as_str().and_then(|s| s.trim().parse::<f64>().ok());
                        (
                            parsed.and_then(Number::from_f64).map(Value::Number),
                            "a number",
                        )
                    }
                    _ => {
                        let parsed = match value.as_str().map(|s| s.trim().to_ascii_lowercase()) {
                            Some(s) if s == "true" || s == "yes" => Some(true),
                            Some(s) if s == "false" || s == "no" => Some(false),
                            _ => None,
                        };
                        (parsed.map(Value::Bool), "true or false")
                    }
                };
                match read {
                    Some(read) => self.coerce(at, value, read),
                    None => {
                        self.problem(at, &format!("expected {expected}, got {}", short(value)));
                        return false;
                    }
                }
            }
            "string" => match &*value {
                Value::String(_) => {}
                Value::Number(_) | Value::Bool(_) => {
                    let text = value.to_string();
                    self.coerce(at, value, Value::String(text));
                }
                _ => {
                    self.problem(at, &format!("expected a string, got {}", kind(value)));
                    return false;
                }
            },
            "array" => {
                if !value.is_array() {
                    let one = value.take();
                    self.coerced
                        .push(format!("{at}: {} read as a list of one", short(&one)));
                    *value = Value::Array(vec![one]);
                }
                let items = schema.get("items").cloned().unwrap_or(Value::Null);
                if let Value::Array(elements) = value {
                    for (i, element) in elements.iter_mut().enumerate() {
                        self.check(&items, element, &format!("{at}[{i}]"));
                    }
                }
            }
            "object" => {
                let Value::Object(map) = value else {
                    self.problem(at, &format!("expected an object, got {}", kind(value)));
                    return false;
                };
                self.check_object(schema, map, at);
            }
            _ => {}
        }
        true
    }

    /// Required fields, field types, and names the schema does not allow.
    fn check_object(&mut self, schema: &Value, map: &mut Map<String, Value>, at: &str) {
        let empty = Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required = schema::required(schema);
        for (name, property) in properties {
            let field_at = format!("{at}.{name}");
            let is_required = required.contains(&name.as_str());
            match map.get_mut(name) {
                Some(Value::Null) if !is_required && !schema::nullable(property) => {
                    map.remove(name);
                    self.coerced.push(format!("{field_at}: null left out"));
                }
                Some(Value::Null) if is_required && !schema::nullable(property) => {
                    self.missing.push(field_at);
                }
                Some(value) => self.check(property, value, &field_at),
                None if is_required => self.missing.push(field_at),
                None => {}
            }
        }
        let additional = schema.get("additionalProperties");
        for (name, value) in map.iter_mut() {
            if properties.contains_key(name) {
                continue;
            }
            match additional {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = properties.keys().map(String::as_str).collect();
                    self.problem(
                        &format!("{at}.{name}"),
                        &format!("no such field; allowed: {}", known.join(", ")),
                    );
                }
                Some(extra @ Value::Object(_)) => self.check(extra, value, &format!("{at}.{name}")),
                _ => {}
            }
        }
    }

    /// Enum membership; a string equal to exactly one allowed value up to case is read as it.
    fn check_enum(&mut self, schema: &Value, value: &mut Value, at: &str) {
        let Some(Value::Array(allowed)) = schema.get("enum") else {
            return;
        };
        if allowed.contains(value) {
            return;
        }
        if let Value::String(given) = &*value {
            let close: Vec<&Value> = allowed
                .iter()
                .filter(|a| a.as_str().is_some_and(|a| a.eq_ignore_ascii_case(given)))
                .collect();
            if let [only] = close[..] {
                let only = only.clone();
                self.coerce(at, value, only);
                return;
            }
        }
        self.problem(
            at,
            &format!("{} is not one of: {}", short(value), joined(allowed, ", ")),
        );
    }

    /// Numeric ranges, string lengths and list sizes.
    fn check_bounds(&mut self, schema: &Value, value: &Value, at: &str) {
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        if let Some(n) = value.as_f64() {
            let exclusive = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
            if let Some(min) = bound("minimum") {
                if n < min || (exclusive("exclusiveMinimum") && n == min) {
                    self.problem(at, &format!("{n} is below the minimum {min}"));
                }
            }
            if let Some(max) = bound("maximum") {
                if n > max || (exclusive("exclusiveMaximum") && n == max) {
                    self.problem(at, &format!("{n} is above the maximum {max}"));
                }
            }
            // OpenAPI 3.1 gives exclusive bounds as numbers.
            if let Some(min) = bound("exclusiveMinimum").filter(|&m| n <= m) {
                self.problem(at, &format!("{n} must be greater than {min}"));
            }
            if let Some(max) = bound("exclusiveMaximum").filter(|&m| n >= m) {
                self.problem(at, &format!("{n} must be less than {max}"));
            }
        }
        let size = match value {
            Value::String(s) => Some((
                s.chars().count() as f64,
                "minLength",
                "maxLength",
                "characters",
            )),
            Value::Array(a) => Some((a.len() as f64, "minItems", "maxItems", "items")),
            _ => None,
        };
        if let Some((len, min_key, max_key, unit)) = size {
            if let Some(min) = bound(min_key).filter(|&m| len < m) {
                self.problem(at, &format!("needs at least {min} {unit}, has {len}"));
            }
            if let Some(max) = bound(max_key).filter(|&m| len > m) {
                self.problem(at, &format!("allows at most {max} {unit}, has {len}"));
            }
        }
    }
}

/// What kind of JSON value this is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A value as JSON, cut to 60 characters, for messages.
fn short(value: &Value) -> String {
    cap(&value.to_string(), 60)
}

/// OpenAPI's `simple` style: lists as `a,b`, objects as `k,v,k2,v2` (`k=v,k2=v2` exploded).
fn simple(value: &Value, explode: bool) -> String {
    match value {
        Value::Array(items) => joined(items, ","),
        Value::Object(map) => {
            let separator = if explode { '=' } else { ',' };
            let pairs = map
                .iter()
                .map(|(k, v)| format!("{k}{separator}{}", scalar(v)));
            pairs.collect::<Vec<_>>().join(",")
        }
        other => scalar(other),
    }
}

/// A path parameter's value, serialised by its style and percent-encoded.
fn path_value(input: &Input, value: &Value) -> String {
    let encoded = |v: &Value| encode_component(&simple(v, input.explode));
    match input.style {
        Style::Label => format!(".{}", encoded(value)),
        Style::Matrix => format!(";{}={}", encode_component(&input.wire_name), encoded(value)),
        _ => match value {
            // Each element encoded on its own, the separators kept.
            Value::Array(items) => items
                .iter()
                .map(|v| encode_component(&scalar(v)))
                .collect::<Vec<_>>()
                .join(","),
            _ => encoded(value),
        },
    }
}

/// A query parameter's pairs, by its style (form, exploded by default).
fn query_pairs(input: &Input, value: &Value) -> Vec<(String, String)> {
    let name = &input.wire_name;
    match (value, input.style) {
        (Value::Array(items), Style::SpaceDelimited) => vec![(name.clone(), joined(items, " "))],
        (Value::Array(items), Style::PipeDelimited) => vec![(name.clone(), joined(items, "|"))],
        (Value::Array(items), _) if input.explode => {
            items.iter().map(|v| (name.clone(), scalar(v))).collect()
        }
        (Value::Array(items), _) => vec![(name.clone(), joined(items, ","))],
        (Value::Object(map), Style::DeepObject) => map
            .iter()
            .map(|(k, v)| (format!("{name}[{k}]"), scalar(v)))
            .collect(),
        (Value::Object(map), _) if input.explode => {
            map.iter().map(|(k, v)| (k.clone(), scalar(v))).collect()
        }
        (value, _) => vec![(name.clone(), simple(value, false))],
    }
}
