//! Reading an OpenAPI 3.0/3.1 document (JSON or YAML) into a `Catalog` of `Action`s.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::action::{
    scalar, Action, ActionHash, Body, Encoding, Input, KeyLocation, Location, Method, Returned,
    SecurityRequirement, SecurityScheme, Server, Style, Type, RETURNED_FIELDS,
};
use crate::error::SpecError;
use crate::schema::{self, Resolver};

/// Every operation of one OpenAPI document, with what is needed to send them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    /// The document's `openapi` version, e.g. `3.1.0`.
    pub openapi: String,
    pub title: String,
    /// The API's own version (`info.version`).
    pub version: String,
    pub description: Option<String>,
    /// The document's servers, variables replaced by their defaults.
    pub servers: Vec<Server>,
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// One per operation, in path order then method order.
    pub actions: Vec<Action>,
}

/// Whether `text` is an OpenAPI document: JSON or YAML with a top-level `openapi` field.
/// Swagger 2.0 documents (`swagger: "2.0"`) are not.
pub fn is_openapi(text: &str) -> bool {
    parse_document(text).is_ok_and(|doc| doc.get("openapi").is_some())
}

/// Parses JSON or YAML, told apart by content: text starting with `{` is read as JSON first
/// (falling back to YAML, of which JSON is nearly a subset), anything else as YAML.
pub fn parse_document(text: &str) -> Result<Value, SpecError> {
    let text = text.trim_start_matches('\u{feff}');
    let doc: Value = if text.trim_start().starts_with('{') {
        match serde_json::from_str(text) {
            Ok(doc) => doc,
            Err(json_error) => serde_yaml_ng::from_str(text)
                .map_err(|_| SpecError::Syntax(format!("JSON: {json_error}")))?,
        }
    } else {
        serde_yaml_ng::from_str(text).map_err(|e| SpecError::Syntax(format!("YAML: {e}")))?
    };
    if doc.is_object() {
        Ok(doc)
    } else {
        Err(SpecError::NotAMapping)
    }
}

impl Catalog {
    /// Reads an OpenAPI 3.0 or 3.1 document, JSON or YAML.
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        Self::from_value(&parse_document(text)?)
    }

    /// Reads an OpenAPI document already parsed into JSON values (their maps keep the
    /// document's order: what an operation returns lists its fields as written).
    pub fn from_value(doc: &Value) -> Result<Self, SpecError> {
        let Value::Object(top) = doc else {
            return Err(SpecError::NotAMapping);
        };
        let openapi = match top.get("openapi") {
            Some(Value::String(v)) => v.clone(),
            Some(Value::Number(v)) => v.to_string(),
            Some(_) => return Err(malformed("openapi", "expected a version string")),
            None => {
                return Err(match top.get("swagger") {
                    Some(v) => SpecError::UnsupportedVersion(format!("swagger {}", scalar(v))),
                    None => SpecError::NotOpenApi,
                })
            }
        };
        if !(openapi.starts_with("3.0") || openapi.starts_with("3.1")) {
            return Err(SpecError::UnsupportedVersion(openapi));
        }
        let resolver = Resolver::new(doc);
        let info = top.get("info").unwrap_or(&Value::Null);
        let security_schemes = read_security_schemes(&resolver, doc)?;
        let default_security = read_security(top.get("security"));
        let mut actions = Vec::new();
        let mut ids = HashSet::new();
        if let Some(paths) = top.get("paths") {
            let Value::Object(paths) = paths else {
                return Err(malformed("paths", "expected a mapping of paths"));
            };
            for (path, item) in paths {
                let item = resolver.follow(item, path)?;
                for method in Method::ALL {
                    let Some(operation) = item.get(method.key()) else {
                        continue;
                    };
                    let mut action = read_operation(
                        &resolver,
                        path,
                        item,
                        method,
                        operation,
                        &default_security,
                    )?;
                    unique_id(&mut action.operation_id, &mut ids);
                    action.hash = action.content_hash();
                    actions.push(action);
                }
            }
        }
        Ok(Catalog {
            openapi,
            title: text_of(info, "title").unwrap_or_default(),
            version: info.get("version").map(scalar).unwrap_or_default(),
            description: text_of(info, "description"),
            servers: read_servers(top.get("servers")),
            security_schemes,
            actions,
        })
    }

    /// The action whose operation id is `id`.
    pub fn get(&self, id: &str) -> Option<&Action> {
        self.actions.iter().find(|action| action.operation_id == id)
    }
}

fn malformed(at: &str, message: &str) -> SpecError {
    SpecError::Malformed {
        at: at.to_string(),
        message: message.to_string(),
    }
}

/// Whether `key` is `true`.
fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool) == Some(true)
}

/// The strings of a list; none for anything else.
fn strings(list: Option<&Value>) -> Vec<String> {
    let items = list
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str));
    items.map_or_else(Vec::new, |items| items.map(String::from).collect())
}

/// A non-empty string field.
fn text_of(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Makes an operation id unique in its catalogue (specs that repeat one get `_2`, `_3`, …).
fn unique_id(id: &mut String, seen: &mut HashSet<String>) {
    if !seen.insert(id.clone()) {
        let base = id.clone();
        let mut n = 2;
        while !seen.insert(format!("{base}_{n}")) {
            n += 1;
        }
        *id = format!("{base}_{n}");
    }
}

fn read_operation(
    resolver: &Resolver,
    path: &str,
    item: &Value,
    method: Method,
    operation: &Value,
    default_security: &[SecurityRequirement],
) -> Result<Action, SpecError> {
    let at = format!("{method} {path}");
    let operation = resolver.follow(operation, &at)?;
    let (operation_id, synthesized_id) = match text_of(operation, "operationId") {
        Some(id) => (id, false),
        None => (format!("{}_{}", method.key(), path), true),
    };

    let mut inputs = read_parameters(resolver, path, item, operation, &at)?;
    let body = match operation.get("requestBody") {
        Some(body) => read_body(resolver, body, &mut inputs, &at)?,
        None => None,
    };

    let security = match operation.get("security") {
        Some(list) => read_security(Some(list)),
        None => default_security.to_vec(),
    };
    let mut servers = read_servers(operation.get("servers"));
    if servers.is_empty() {
        servers = read_servers(item.get("servers"));
    }
    Ok(Action {
        operation_id,
        synthesized_id,
        method,
        path: path.to_string(),
        summary: text_of(operation, "summary"),
        description: text_of(operation, "description"),
        tags: strings(operation.get("tags")),
        deprecated: flag(operation, "deprecated"),
        inputs,
        body,
        security,
        servers,
        returns: read_returns(resolver, operation, &at),
        hash: ActionHash(String::new()),
        examples: Vec::new(),
        examples_given: false,
    })
}

/// The fields of the operation's first 2xx JSON response (or of its items, for a list), each
/// with its own fields, in the document's order. Nothing is sent from it, so a bad `$ref`
/// there costs only this, with a warning.
fn read_returns(resolver: &Resolver, operation: &Value, at: &str) -> Vec<Returned> {
    let Some(Value::Object(responses)) = operation.get("responses") else {
        return Vec::new();
    };
    // "200" before "201" before "2XX".
    let Some((_, response)) = responses
        .iter()
        .filter(|(status, _)| status.starts_with('2'))
        .min_by_key(|(status, _)| status.as_str())
    else {
        return Vec::new();
    };
    let at = format!("{at} response");
    let schema = resolver.follow(response, &at).and_then(|response| {
        let Some(Value::Object(content)) = response.get("content") else {
            return Ok(Value::Null);
        };
        let Some(media) = content.keys().find(|media| is_json(media)) else {
            return Ok(Value::Null);
        };
        match content[media].get("schema") {
            Some(raw) => resolver.expand(raw, &at),
            None => Ok(Value::Null),
        }
    });
    let schema = match schema {
        Ok(schema) => schema,
        Err(error) => {
            tracing::warn!("{error}: what it returns is left out of its description");
            return Vec::new();
        }
    };
    // A field's own fields, or its items' for a list.
    let field_names = |schema: &Value| -> Vec<String> {
        let schema = match schema::main_type(schema) {
            Some("array") => schema.get("items").unwrap_or(&Value::Null),
            _ => schema,
        };
        first_properties(schema)
            .into_iter()
            .map(|(name, _)| name.clone())
            .collect()
    };
    match schema::main_type(&schema) {
        Some("array") => vec![Returned {
            name: String::new(),
            list: true,
            fields: field_names(&schema),
        }],
        _ => first_properties(&schema)
            .into_iter()
            .map(|(name, property)| Returned {
                name: name.clone(),
                list: schema::main_type(property) == Some("array"),
                fields: field_names(property),
            })
            .collect(),
    }
}

/// A schema's first [`RETURNED_FIELDS`] properties, as the document writes them.
fn first_properties(schema: &Value) -> Vec<(&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.iter().take(RETURNED_FIELDS).collect())
        .unwrap_or_default()
}

/// Whether a media type carries JSON (`application/json`, `…+json`, or anything: `*/*`).
fn is_json(media: &str) -> bool {
    let media = media.split(';').next().unwrap_or("").trim();
    media == "application/json" || media.ends_with("+json") || media == "*/*"
}

/// Path-level parameters merged with the operation's (the operation's win for the same name
/// and place), plus a string parameter for any `{name}` in the path that none declares.
fn read_parameters(
    resolver: &Resolver,
    path: &str,
    item: &Value,
    operation: &Value,
    at: &str,
) -> Result<Vec<Input>, SpecError> {
    let mut inputs: Vec<Input> = Vec::new();
    for list in [item.get("parameters"), operation.get("parameters")] {
        let Some(list) = list else { continue };
        let Value::Array(list) = list else {
            return Err(malformed(at, "`parameters` is not a list"));
        };
        for param in list {
            let param = resolver.follow(param, at)?;
            let Some(input) = read_parameter(resolver, param, at)? else {
                continue;
            };
            match inputs
                .iter_mut()
                .find(|i| i.wire_name == input.wire_name && i.location == input.location)
            {
                Some(existing) => *existing = input,
                None => inputs.push(input),
            }
        }
    }
    for name in path_variables(path) {
        let declared = inputs
            .iter()
            .any(|i| i.location == Location::Path && i.wire_name == name);
        if !declared {
            let schema = serde_json::json!({ "type": "string" });
            inputs.push(input(&name, &name, Location::Path, true, None, &schema));
        }
    }
    // A path parameter no `{name}` in the path uses could never be sent.
    inputs
        .retain(|i| i.location != Location::Path || path.contains(&format!("{{{}}}", i.wire_name)));
    Ok(inputs)
}

/// One parameter; `None` for those OpenAPI says to ignore (the `Accept`, `Content-Type` and
/// `Authorization` headers) and for unknown places.
fn read_parameter(
    resolver: &Resolver,
    param: &Value,
    at: &str,
) -> Result<Option<Input>, SpecError> {
    let Some(name) = param.get("name").and_then(Value::as_str) else {
        return Err(malformed(at, "a parameter without a name"));
    };
    // The places a parameter goes by their serde names; not the body (Swagger 2.0's `in`).
    let location = param.get("in").and_then(|l| Location::deserialize(l).ok());
    let Some(location) = location.filter(|l| *l != Location::Body) else {
        return Ok(None);
    };
    if location == Location::Header
        && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str())
    {
        return Ok(None);
    }
    let raw_schema = match (param.get("schema"), param.get("content")) {
        (Some(schema), _) => schema.clone(),
        (None, Some(Value::Object(content))) => content
            .values()
            .find_map(|media| media.get("schema"))
            .cloned()
            .unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let schema = match raw_schema {
        Value::Null => Value::Object(Map::new()),
        raw => resolver.expand(&raw, &format!("{at} parameter {name}"))?,
    };
    let required = location == Location::Path || flag(param, "required");
    let description = text_of(param, "description");
    let mut input = input(name, name, location, required, description, &schema);
    input.deprecated |= flag(param, "deprecated");
    // `style` as OpenAPI spells it (serde's names are the same), else the place's default.
    let style = param.get("style").and_then(|s| Style::deserialize(s).ok());
    let form = matches!(location, Location::Query | Location::Cookie);
    input.style = style.unwrap_or(if form { Style::Form } else { Style::Simple });
    input.explode = param
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(input.style == Style::Form);
    Ok(Some(input))
}

/// An input from its expanded schema; the description falls back to the schema's.
fn input(
    name: &str,
    wire_name: &str,
    location: Location,
    required: bool,
    description: Option<String>,
    schema: &Value,
) -> Input {
    let ty = Type::of(schema);
    let enum_source = match ty {
        Type::Array(_) => schema.get("items").unwrap_or(&Value::Null),
        _ => schema,
    };
    Input {
        name: name.to_string(),
        wire_name: wire_name.to_string(),
        location,
        ty,
        format: text_of(schema, "format"),
        required,
        nullable: schema::nullable(schema),
        enum_values: enum_source
            .get("enum")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        description: description.or_else(|| text_of(schema, "description")),
        default: schema.get("default").cloned(),
        deprecated: flag(schema, "deprecated"),
        style: Style::Simple,
        explode: false,
        schema: schema.clone(),
    }
}

/// The request body: JSON preferred, then form-encoded; its object fields become inputs.
fn read_body(
    resolver: &Resolver,
    body: &Value,
    inputs: &mut Vec<Input>,
    at: &str,
) -> Result<Option<Body>, SpecError> {
    let body = resolver.follow(body, at)?;
    let required = flag(body, "required");
    let Some(Value::Object(content)) = body.get("content") else {
        return Ok(None);
    };
    let chosen = content
        .keys()
        .find(|m| is_json(m))
        .map(|m| (m, Encoding::Json))
        .or_else(|| {
            content
                .keys()
                .find(|m| m.starts_with("application/x-www-form-urlencoded"))
                .map(|m| (m, Encoding::Form))
        })
        .or_else(|| content.keys().next().map(|m| (m, Encoding::Unsupported)));
    let Some((media, encoding)) = chosen else {
        return Ok(None);
    };
    let content_type = if media == "*/*" {
        "application/json".to_string()
    } else {
        media.clone()
    };
    let mut out = Body {
        content_type,
        encoding,
        required,
        fields: false,
        open: false,
    };
    if encoding == Encoding::Unsupported {
        return Ok(Some(out));
    }
    let schema = match content[media].get("schema") {
        Some(raw) => resolver.expand(raw, &format!("{at} request body"))?,
        None => Value::Object(Map::new()),
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    let is_object = schema::main_type(&schema) == Some("object");
    match properties {
        Some(properties) if is_object => {
            out.fields = true;
            out.open = match schema.get("additionalProperties") {
                Some(Value::Bool(open)) => *open,
                Some(Value::Object(_)) => true,
                _ => false,
            };
            let required_names = schema::required(&schema);
            for (field, property) in properties {
                // Fields the server fills in (ids, timestamps) are not sent.
                if flag(property, "readOnly") {
                    continue;
                }
                let name = if inputs.iter().any(|i| i.name == *field) {
                    format!("body.{field}")
                } else {
                    field.clone()
                };
                let required = required_names.contains(&field.as_str());
                let field = input(&name, field, Location::Body, required, None, property);
                inputs.push(field);
            }
        }
        _ => {
            let description = text_of(body, "description");
            let whole = input("body", "", Location::Body, required, description, &schema);
            inputs.push(whole);
        }
    }
    Ok(Some(out))
}

/// The `{name}`s of a path template, in order.
fn path_variables(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + close];
        if !name.is_empty() && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
        rest = &rest[open + close + 1..];
    }
    out
}

fn read_servers(servers: Option<&Value>) -> Vec<Server> {
    let Some(Value::Array(servers)) = servers else {
        return Vec::new();
    };
    servers
        .iter()
        .filter_map(|server| {
            let mut url = server.get("url")?.as_str()?.to_string();
            if let Some(Value::Object(variables)) = server.get("variables") {
                for (name, variable) in variables {
                    if let Some(default) = variable.get("default") {
                        url = url.replace(&format!("{{{name}}}"), &scalar(default));
                    }
                }
            }
            Some(Server {
                url,
                description: text_of(server, "description"),
            })
        })
        .collect()
}

/// A `security` list: alternatives, each a mapping of scheme name to scopes.
fn read_security(security: Option<&Value>) -> Vec<SecurityRequirement> {
    let Some(Value::Array(list)) = security else {
        return Vec::new();
    };
    list.iter()
        .filter_map(Value::as_object)
        .map(|requirement| {
            requirement
                .iter()
                .map(|(scheme, scopes)| (scheme.clone(), strings(Some(scopes))))
                .collect()
        })
        .collect()
}

fn read_security_schemes(
    resolver: &Resolver,
    doc: &Value,
) -> Result<BTreeMap<String, SecurityScheme>, SpecError> {
    let mut out = BTreeMap::new();
    let Some(Value::Object(schemes)) = doc.pointer("/components/securitySchemes") else {
        return Ok(out);
    };
    for (name, scheme) in schemes {
        let at = format!("components.securitySchemes.{name}");
        let scheme = resolver.follow(scheme, &at)?;
        let read = match scheme.get("type").and_then(Value::as_str) {
            Some("apiKey") => {
                let location = scheme.get("in").map(KeyLocation::deserialize);
                let Some(Ok(location)) = location else {
                    let message = "an apiKey scheme needs `in`: header, query or cookie";
                    return Err(malformed(&at, message));
                };
                let Some(key_name) = text_of(scheme, "name") else {
                    return Err(malformed(&at, "an apiKey scheme needs a `name`"));
                };
                SecurityScheme::ApiKey {
                    name: key_name,
                    location,
                }
            }
            Some("http") => SecurityScheme::Http {
                scheme: text_of(scheme, "scheme")
                    .unwrap_or_else(|| "bearer".into())
                    .to_ascii_lowercase(),
                bearer_format: text_of(scheme, "bearerFormat"),
            },
            Some("oauth2" | "openIdConnect") => SecurityScheme::OAuth2,
            Some("mutualTLS") => SecurityScheme::MutualTls,
            _ => continue,
        };
        out.insert(name.clone(), read);
    }
    Ok(out)
}
