//! The records a catalogue is made of: one `Action` per operation, with its inputs, body,
//! servers and security, the text it is retrieved by and a hash of its content.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// An HTTP method an operation can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Put,
    Post,
    Delete,
    Options,
    Head,
    Patch,
    Trace,
}

impl Method {
    /// Every method, in the order a path item lists them in the OpenAPI specification.
    pub const ALL: [Method; 8] = [
        Method::Get,
        Method::Put,
        Method::Post,
        Method::Delete,
        Method::Options,
        Method::Head,
        Method::Patch,
        Method::Trace,
    ];

    /// `GET`, `POST`, … (indexed by the variants' order, that of [`Method::ALL`]).
    pub fn as_str(self) -> &'static str {
        [
            "GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE",
        ][self as usize]
    }

    /// The key of the operation in a path item: `get`, `post`, …
    pub fn key(self) -> &'static str {
        [
            "get", "put", "post", "delete", "options", "head", "patch", "trace",
        ][self as usize]
    }

    /// Whether a request must be confirmed before it is sent: everything but the methods that
    /// only read (GET, HEAD, OPTIONS). TRACE is included: it is rare and echoes what it is sent.
    pub fn needs_confirmation(self) -> bool {
        !matches!(self, Method::Get | Method::Head | Method::Options)
    }

    /// Words a user might use for what the method does, for retrieval.
    fn verbs(self, on_item: bool) -> &'static str {
        match self {
            Method::Get if on_item => "get read show",
            Method::Get => "list get search",
            Method::Put => "replace update set",
            Method::Post => "create add submit",
            Method::Delete => "delete remove",
            Method::Patch => "update modify change",
            Method::Head => "check exists",
            Method::Options => "options",
            Method::Trace => "trace",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an input goes in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    Path,
    Query,
    Header,
    Cookie,
    /// A field of the JSON (or form) body, or the whole body.
    Body,
}

impl Location {
    pub fn as_str(self) -> &'static str {
        ["path", "query", "header", "cookie", "body"][self as usize]
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An input's type, as far as checking and showing it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Type {
    String,
    Integer,
    Number,
    Boolean,
    Array(Box<Type>),
    Object,
    /// No type given: anything goes.
    Any,
}

impl Type {
    /// The type a schema declares (its first non-null type).
    pub fn of(schema: &Value) -> Type {
        match crate::schema::main_type(schema) {
            Some("string") => Type::String,
            Some("integer") => Type::Integer,
            Some("number") => Type::Number,
            Some("boolean") => Type::Boolean,
            Some("object") => Type::Object,
            Some("array") => Type::Array(Box::new(schema.get("items").map_or(Type::Any, Type::of))),
            _ => Type::Any,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::String => f.write_str("string"),
            Type::Integer => f.write_str("integer"),
            Type::Number => f.write_str("number"),
            Type::Boolean => f.write_str("boolean"),
            Type::Array(item) => write!(f, "array of {item}"),
            Type::Object => f.write_str("object"),
            Type::Any => f.write_str("any"),
        }
    }
}

/// How a parameter's value is written into the URL or a header (OpenAPI `style`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Style {
    /// `a,b` (path and header default).
    Simple,
    /// `.a.b` in a path.
    Label,
    /// `;id=a,b` in a path.
    Matrix,
    /// `id=a&id=b` or `id=a,b` (query and cookie default).
    Form,
    /// `id=a%20b`.
    SpaceDelimited,
    /// `id=a|b`.
    PipeDelimited,
    /// `filter[status]=open`.
    DeepObject,
}

/// One thing the caller supplies: a parameter, or a field of the request body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Input {
    /// The key in the inputs object given to `Action::prepare`. Usually the name in the spec;
    /// a body field whose name a parameter already has is `body.NAME`, a body that is not an
    /// object of fields is one input named `body`.
    pub name: String,
    /// The name sent on the wire (the field or parameter name; empty for a whole body).
    pub wire_name: String,
    pub location: Location,
    pub ty: Type,
    /// The schema's `format` (`date-time`, `int64`, `uuid`, …).
    pub format: Option<String>,
    pub required: bool,
    pub nullable: bool,
    /// Allowed values (the items' for an array); empty when any value of the type goes.
    pub enum_values: Vec<Value>,
    pub description: Option<String>,
    /// What the server assumes when the input is left out; never filled in by walkrag.
    pub default: Option<Value>,
    pub deprecated: bool,
    /// How a parameter is serialised; `Simple` for body fields (unused there).
    pub style: Style,
    pub explode: bool,
    /// The full schema, references expanded and cycles cut; values are checked against it.
    pub schema: Value,
}

impl Input {
    /// Whether this header, query or cookie parameter carries a credential (an API key, token,
    /// password, …): the model never sees it; the executor sends the configured one in its
    /// place. Body fields and path parameters (a new user's password, a reset token in the path)
    /// are what a request is about, never credentials.
    pub fn is_credential(&self) -> bool {
        !matches!(self.location, Location::Body | Location::Path)
            && is_credential_name(&self.wire_name)
    }
}

/// Whether a parameter of this name carries a credential (see [`Input::is_credential`]).
pub(crate) fn is_credential_name(name: &str) -> bool {
    const EXACT: [&str; 8] = [
        "authorization",
        "proxyauthorization",
        "cookie",
        "key",
        "apiusername",
        "apiuser",
        "session",
        "sessionid",
    ];
    const PARTS: [&str; 6] = [
        "apikey",
        "token",
        "secret",
        "password",
        "credential",
        "signature",
    ];
    let name: String = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    EXACT.contains(&name.as_str()) || PARTS.iter().any(|part| name.contains(part))
}

/// How the request body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    Json,
    /// `application/x-www-form-urlencoded`.
    Form,
    /// A media type walkrag cannot build (multipart, binary, XML, …): the action is listed but
    /// refuses to prepare.
    Unsupported,
}

/// The request body an operation takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// The media type sent, e.g. `application/json`.
    pub content_type: String,
    pub encoding: Encoding,
    pub required: bool,
    /// Whether the body is an object whose fields are inputs (`Location::Body`); otherwise it
    /// is one input named `body`.
    pub fields: bool,
    /// Whether the object takes names it does not list (`additionalProperties`): such names
    /// given to `prepare` go into the body instead of being refused.
    pub open: bool,
}

/// One alternative of an operation's security: every named scheme, with its scopes, applies.
pub type SecurityRequirement = BTreeMap<String, Vec<String>>;

/// A server an operation can be sent to, its variables replaced by their defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Server {
    pub url: String,
    pub description: Option<String>,
}

/// Where an API key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyLocation {
    Header,
    Query,
    Cookie,
}

/// How a catalogue says requests are authenticated (`components.securitySchemes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SecurityScheme {
    /// A key sent as the header, query parameter or cookie `name`.
    ApiKey { name: String, location: KeyLocation },
    /// `Authorization: <scheme> <credential>`; `bearer` and `basic` (`user:password`) are the
    /// usual schemes.
    Http {
        scheme: String,
        bearer_format: Option<String>,
    },
    /// OAuth 2 or OpenID Connect: the credential is an access token sent as a bearer token
    /// (walkrag never runs the flows itself).
    OAuth2,
    /// Client certificates: not supported; such requirements are never satisfied.
    MutualTls,
}

/// One operation of a catalogue: everything needed to find it, show it, check inputs for it
/// and send it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// The spec's `operationId`, or `METHOD_PATH` (`get_/pets/{id}`) when it has none.
    pub operation_id: String,
    /// Whether `operation_id` was made up because the spec gave none.
    pub synthesized_id: bool,
    pub method: Method,
    /// The path template, e.g. `/pets/{petId}`.
    pub path: String,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub deprecated: bool,
    /// Parameters (path-level ones merged with the operation's) and body fields.
    pub inputs: Vec<Input>,
    pub body: Option<Body>,
    /// Alternatives, any one of which authenticates the request; empty when none is needed.
    pub security: Vec<SecurityRequirement>,
    /// Servers of the operation or its path, which override the catalogue's.
    pub servers: Vec<Server>,
    /// A hash of everything above: equal hashes mean an unchanged operation.
    pub hash: ActionHash,
    /// What a successful response holds, by field name (the first 2xx JSON response's
    /// schema); empty where the spec says nothing of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub returns: Vec<Returned>,
    /// Example requests for it (`examples.rs`); not part of the hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Whether [`Action::examples`] were given in a file rather than written by a model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub examples_given: bool,
}

/// One field of an operation's successful response ([`Action::returns`]), or the whole
/// response where that is a list: what someone asking to see something names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Returned {
    /// The field's name; empty for a response that is itself a list.
    pub name: String,
    /// Whether it is an array.
    pub list: bool,
    /// The names of its own fields (of its items', for a list) in the spec's order, at most
    /// [`RETURNED_FIELDS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
}

/// How many fields of a response, and of each of its fields, an action keeps.
pub const RETURNED_FIELDS: usize = 24;

/// Field names of the response in an operation's embedded text, and on its line.
const EMBED_RETURNED: usize = 40;
const LINE_RETURNED: usize = 10;

/// A short hex hash of an action's content.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActionHash(pub String);

impl fmt::Display for ActionHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Action {
    /// The input named `name` (the key `prepare` takes).
    pub fn input(&self, name: &str) -> Option<&Input> {
        self.inputs.iter().find(|input| input.name == name)
    }

    /// The parameters (path, query, header, cookie).
    pub fn params(&self) -> impl Iterator<Item = &Input> {
        self.inputs.iter().filter(|i| i.location != Location::Body)
    }

    /// The body's inputs (its fields, or the one whole-body input).
    pub fn body_fields(&self) -> impl Iterator<Item = &Input> {
        self.inputs.iter().filter(|i| i.location == Location::Body)
    }

    /// This action without its credential inputs (see [`Input::is_credential`]): what a
    /// model may see and fill in.
    pub fn without_credentials(&self) -> Action {
        let mut action = self.clone();
        action.inputs.retain(|input| !input.is_credential());
        action
    }

    /// The names of its credential inputs.
    pub fn credential_inputs(&self) -> impl Iterator<Item = &Input> {
        self.inputs.iter().filter(|input| input.is_credential())
    }

    /// Whether sending this action needs the user's confirmation.
    pub fn needs_confirmation(&self) -> bool {
        self.method.needs_confirmation()
    }

    /// Whether the action takes no input a caller could fill: no parameter, no body field
    /// and no open body (credentials are not inputs).
    pub fn takes_no_inputs(&self) -> bool {
        self.inputs.is_empty() && !self.body.as_ref().is_some_and(|body| body.open)
    }

    /// The words a request is likely to share with this action, for BM25: what it does and its
    /// example requests, without the inputs (names like `id` recur across a whole API).
    pub fn keyword_text(&self) -> String {
        let mut lines = self.what_it_does(300);
        lines.extend(self.examples_line());
        lines.join("\n")
    }

    fn examples_line(&self) -> Option<String> {
        (!self.examples.is_empty()).then(|| format!("requests: {}", self.examples.join(" / ")))
    }

    /// Summary, id words, method and path with verbs and the path's words, tags, and the
    /// description cut at `description_chars`: one line each.
    fn what_it_does(&self, description_chars: usize) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(summary) = &self.summary {
            lines.push(one_line(summary));
        }
        if !self.synthesized_id {
            lines.push(words(&self.operation_id).join(" "));
        }
        let on_item = self.path.trim_end_matches('/').ends_with('}');
        lines.push(format!(
            "{} {}: {} {}",
            self.method,
            self.path,
            self.method.verbs(on_item),
            words(&self.path).join(" ")
        ));
        if !self.tags.is_empty() {
            lines.push(format!("tags: {}", self.tags.join(", ")));
        }
        if let Some(description) = &self.description {
            lines.push(cap(&one_line(description), description_chars));
        }
        lines
    }

    /// The text this action is embedded as: what it does in plain words, then its inputs and
    /// what it returns (its examples are records of their own).
    pub fn embed_text(&self) -> String {
        let mut lines = self.what_it_does(800);
        let inputs: Vec<String> = self
            .inputs
            .iter()
            .map(|input| {
                let mut text = words(&input.name).join(" ");
                if let Some(description) = &input.description {
                    text.push_str(": ");
                    text.push_str(&cap(&one_line(description), 160));
                }
                if !input.enum_values.is_empty() {
                    text.push_str(&format!(" ({})", joined(&input.enum_values, ", ")));
                }
                text
            })
            .collect();
        if !inputs.is_empty() {
            lines.push(format!("inputs: {}", inputs.join("; ")));
        }
        lines.extend(self.returns_text(EMBED_RETURNED, |name| words(name).join(" ")));
        lines.join("\n")
    }

    /// `returns: category (id, name, color, …)`: a read's response fields named through
    /// `name`, at most `max` in all and `max / 2` in one field (so it hides none of the rest);
    /// `None` for changes (what they return is a by-product) and unknown responses.
    fn returns_text(&self, max: usize, name: impl Fn(&str) -> String) -> Option<String> {
        if self.needs_confirmation() || self.returns.is_empty() {
            return None;
        }
        let mut left = max;
        let mut parts = Vec::new();
        let mut cut = false;
        for returned in &self.returns {
            if left == 0 {
                cut = true;
                break;
            }
            let mut part = match (returned.name.as_str(), returned.list) {
                ("", _) => "a list".to_string(),
                (field, true) => format!("list of {}", name(field)),
                (field, false) => name(field),
            };
            left -= 1;
            if !returned.fields.is_empty() && left > 0 {
                let shown = returned.fields.len().min(left).min(max / 2);
                left -= shown;
                let fields: Vec<String> =
                    returned.fields[..shown].iter().map(|f| name(f)).collect();
                let cut = shown < returned.fields.len();
                let more = if cut { ", …" } else { "" };
                part.push_str(&format!(" ({}{more})", fields.join(", ")));
            }
            parts.push(part);
        }
        let more = if cut { ", …" } else { "" };
        Some(format!("returns: {}{more}", parts.join(", ")))
    }

    /// One line for the model to choose by: [`Action::line_without_returns`] and, for a read,
    /// what it returns, which tells one item's reads from a list's.
    pub fn line(&self) -> String {
        let mut out = self.line_without_returns();
        if let Some(returns) = self.returns_text(LINE_RETURNED, str::to_string) {
            out.push_str("; ");
            out.push_str(&returns);
        }
        out
    }

    /// `id: METHOD /path — summary`, then up to 6 inputs, required first, with up to 6 allowed
    /// values each. Response fields are left out: their words would draw unrelated requests.
    pub fn line_without_returns(&self) -> String {
        let mut out = format!("{}: {} {}", self.operation_id, self.method, self.path);
        if self.deprecated {
            out.push_str(" (deprecated)");
        }
        let what = match (&self.summary, &self.description) {
            (Some(summary), _) => one_line(summary),
            (None, Some(description)) => cap(&one_line(description), 120),
            (None, None) => String::new(),
        };
        if !what.is_empty() {
            out.push_str(" — ");
            out.push_str(&what);
        }
        let mut inputs: Vec<&Input> = self.inputs.iter().collect();
        inputs.sort_by_key(|input| !input.required);
        let named: Vec<String> = inputs
            .iter()
            .take(LINE_INPUTS)
            .map(|input| {
                let name = input.name.as_str();
                if input.enum_values.is_empty() {
                    name.to_string()
                } else {
                    let shown = &input.enum_values[..input.enum_values.len().min(LINE_INPUTS)];
                    let values = joined(shown, ", ");
                    let cut = input.enum_values.len() > LINE_INPUTS;
                    let more = if cut { ", ..." } else { "" };
                    format!("{name} (one of {values}{more})")
                }
            })
            .collect();
        if !named.is_empty() {
            let cut = inputs.len() > LINE_INPUTS;
            let more = if cut { ", ..." } else { "" };
            out.push_str(&format!("; inputs: {}{more}", named.join(", ")));
        }
        out
    }

    /// A card for the model: how to call this action, every input with its place, type,
    /// whether it is required, allowed values and meaning.
    pub fn describe(&self) -> String {
        let mut out = format!("{} — {} {}", self.operation_id, self.method, self.path);
        if self.deprecated {
            out.push_str(" (deprecated)");
        }
        if let Some(summary) = &self.summary {
            out.push_str(&format!("\n{}", one_line(summary)));
        }
        if let Some(description) = &self.description {
            out.push_str(&format!("\n{}", cap(&one_line(description), 400)));
        }
        out.push_str("\ninputs:");
        if self.inputs.is_empty() {
            out.push_str(" none");
        }
        for input in &self.inputs {
            out.push_str(&format!(
                "\n- {} ({}, {}",
                input.name, input.location, input.ty
            ));
            if let Some(format) = &input.format {
                out.push_str(&format!(" {format}"));
            }
            out.push_str(if input.required {
                ", required"
            } else {
                ", optional"
            });
            if !input.enum_values.is_empty() {
                out.push_str(&format!(", one of {}", joined(&input.enum_values, ", ")));
            }
            if let Some(default) = &input.default {
                out.push_str(&format!(", default {default}"));
            }
            out.push(')');
            if let Some(description) = &input.description {
                out.push_str(&format!(": {}", cap(&one_line(description), 200)));
            }
        }
        if let Some(body) = &self.body {
            if body.encoding == Encoding::Unsupported {
                out.push_str(&format!(
                    "\n(takes a {} body, which cannot be sent from here)",
                    body.content_type
                ));
            }
        }
        if self.needs_confirmation() {
            out.push_str("\nThe user confirms this request before it is sent.");
        }
        out
    }

    /// A JSON Schema of the inputs object, for models that call tools with schemas.
    pub fn input_schema(&self) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for input in &self.inputs {
            let mut schema = input.schema.clone();
            if let (Value::Object(map), Some(description)) = (&mut schema, &input.description) {
                map.insert("description".into(), description.clone().into());
            }
            properties.insert(input.name.clone(), schema);
            if input.required {
                required.push(Value::from(input.name.clone()));
            }
        }
        let open = self.body.as_ref().is_some_and(|body| body.open);
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": open,
        })
    }

    /// The hash of this action's content (everything but `hash`), over a canonical rendering
    /// so that key order in the spec does not matter.
    pub(crate) fn content_hash(&self) -> ActionHash {
        let mut value = serde_json::to_value(self).expect("an action serialises");
        if let Value::Object(map) = &mut value {
            map.remove("hash");
            map.remove("examples");
        }
        let mut canonical = String::new();
        write_canonical(&value, &mut canonical);
        let digest = Sha256::digest(canonical.as_bytes());
        ActionHash(digest[..8].iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// JSON with object keys sorted at every level.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// An identifier or path split into lower-case words: `createPet` → `create pet`,
/// `/pets/{pet_id}` → `pets pet id`, `getHTTPStatus2` → `get http status2`.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut out);
            continue;
        }
        if c.is_uppercase() && !word.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            // camelCase boundary, or the last capital of an acronym before a new word.
            if prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower) {
                flush(&mut word, &mut out);
            }
        }
        word.extend(c.to_lowercase());
    }
    flush(&mut word, &mut out);
    out
}

fn flush(word: &mut String, out: &mut Vec<String>) {
    if !word.is_empty() {
        out.push(std::mem::take(word));
    }
}

/// Whitespace (newlines included) collapsed to single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters, with `…` when cut.
pub(crate) fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Inputs named on an operation's line, and allowed values named per input.
const LINE_INPUTS: usize = 6;

/// Values as the model should write them (strings bare, others as JSON), joined by `sep`.
pub(crate) fn joined(values: &[Value], sep: &str) -> String {
    values.iter().map(scalar).collect::<Vec<_>>().join(sep)
}

/// A scalar as text: strings bare, others as JSON.
pub(crate) fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
