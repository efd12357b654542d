//! `$ref` resolution and schema flattening: schemas are copied out with references expanded
//! and `allOf` merged, so the rest of the crate never looks one up. A reference too deep or
//! met inside itself twice is cut: a stub keeps the target's type and names the reference.

use serde_json::{Map, Value};

use crate::error::SpecError;

/// The key a cut reference leaves behind, naming the reference it stands for.
pub const CUT: &str = "x-walkrag-cut";

/// How many references deep a schema is expanded. Real APIs nest a few levels; the cap keeps
/// catalogues whose schemas share many references from expanding without bound.
const MAX_REF_DEPTH: usize = 6;

/// How many times a reference may be open inside itself: a recursive schema (a folder of
/// folders) is unrolled once, so the first level of nesting is still checked, then cut.
const RECURSION_UNROLLED: usize = 2;

/// Keys whose values are data, not schemas: never searched for references.
const DATA_KEYS: [&str; 6] = [
    "example",
    "examples",
    "enum",
    "default",
    "const",
    "x-example",
];

/// Looks references up in one document.
pub struct Resolver<'a> {
    doc: &'a Value,
}

impl<'a> Resolver<'a> {
    pub fn new(doc: &'a Value) -> Self {
        Self { doc }
    }

    /// What a `#/...` reference names; `at` says where it was met, for the error.
    pub fn lookup(&self, reference: &str, at: &str) -> Result<&'a Value, SpecError> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(SpecError::ExternalRef {
                reference: reference.to_string(),
                at: at.to_string(),
            });
        };
        let pointer = percent_encoding::percent_decode_str(fragment).decode_utf8_lossy();
        let found = if pointer.is_empty() {
            Some(self.doc)
        } else {
            self.doc.pointer(&pointer)
        };
        found.ok_or_else(|| SpecError::DanglingRef {
            reference: reference.to_string(),
            at: at.to_string(),
        })
    }

    /// Follows a chain of references (a parameter, request body or path item that is itself a
    /// `$ref`) to the object it ends at, without expanding anything inside it.
    pub fn follow(&self, mut value: &'a Value, at: &str) -> Result<&'a Value, SpecError> {
        let mut seen = Vec::new();
        while let Some(reference) = ref_of(value) {
            if seen.contains(&reference) {
                return Err(SpecError::Malformed {
                    at: at.to_string(),
                    message: format!("$ref {reference} refers to itself"),
                });
            }
            seen.push(reference);
            value = self.lookup(reference, at)?;
        }
        Ok(value)
    }

    /// A self-contained copy of the schema `value`: references expanded (cycles and the
    /// deepest levels cut) and `allOf` merged.
    pub fn expand(&self, value: &Value, at: &str) -> Result<Value, SpecError> {
        self.expand_in(value, at, &mut Vec::new())
    }

    fn expand_in(
        &self,
        value: &Value,
        at: &str,
        stack: &mut Vec<String>,
    ) -> Result<Value, SpecError> {
        match value {
            Value::Object(map) => {
                if let Some(reference) = ref_of(value) {
                    return self.expand_ref(reference, map, at, stack);
                }
                let mut out = Map::new();
                for (key, child) in map {
                    let child = match (key.as_str(), child) {
                        // Property names are names, whatever they spell ("default", "enum").
                        ("properties", Value::Object(properties)) => {
                            let mut out = Map::new();
                            for (name, property) in properties {
                                out.insert(name.clone(), self.expand_in(property, at, stack)?);
                            }
                            Value::Object(out)
                        }
                        (key, child) if DATA_KEYS.contains(&key) => child.clone(),
                        (_, child) => self.expand_in(child, at, stack)?,
                    };
                    out.insert(key.clone(), child);
                }
                Ok(merge_all_of(out))
            }
            Value::Array(items) => items
                .iter()
                .map(|item| self.expand_in(item, at, stack))
                .collect::<Result<_, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }

    fn expand_ref(
        &self,
        reference: &str,
        map: &Map<String, Value>,
        at: &str,
        stack: &mut Vec<String>,
    ) -> Result<Value, SpecError> {
        let target = self.lookup(reference, at)?;
        let open = stack.iter().filter(|r| *r == reference).count();
        let mut expanded = if open >= RECURSION_UNROLLED || stack.len() >= MAX_REF_DEPTH {
            cut(reference, target)
        } else {
            stack.push(reference.to_string());
            let expanded = self.expand_in(target, at, stack);
            stack.pop();
            expanded?
        };
        // OpenAPI 3.1 lets a reference carry its own description, summary and so on; they
        // win over the target's.
        if let Value::Object(out) = &mut expanded {
            for (key, sibling) in map {
                if key != "$ref" {
                    out.insert(key.clone(), self.expand_in(sibling, at, stack)?);
                }
            }
        }
        Ok(expanded)
    }
}

/// The `$ref` of an object, if it is a reference.
pub fn ref_of(value: &Value) -> Option<&str> {
    value.get("$ref").and_then(Value::as_str)
}

/// The stub left where a reference is cut: the target's type and title, and the reference.
fn cut(reference: &str, target: &Value) -> Value {
    let mut stub = Map::new();
    for key in ["type", "title"] {
        if let Some(value) = target.get(key) {
            stub.insert(key.to_string(), value.clone());
        }
    }
    if !stub.contains_key("type") && target.get("properties").is_some() {
        stub.insert("type".into(), "object".into());
    }
    stub.insert(CUT.into(), reference.into());
    Value::Object(stub)
}

/// Folds the members of `allOf` into the schema: properties and required names are united,
/// other keys taken from the first member that has them (the schema's own keys first).
fn merge_all_of(mut schema: Map<String, Value>) -> Value {
    let Some(Value::Array(members)) = schema.remove("allOf") else {
        return Value::Object(schema);
    };
    for member in members {
        let Value::Object(member) = member else {
            continue;
        };
        for (key, value) in member {
            match (key.as_str(), schema.get_mut(&key), value) {
                ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                    for (name, property) in theirs {
                        mine.entry(name).or_insert(property);
                    }
                }
                ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                    for name in theirs {
                        if !mine.contains(&name) {
                            mine.push(name);
                        }
                    }
                }
                (_, Some(_), _) => {}
                (_, None, value) => {
                    schema.insert(key, value);
                }
            }
        }
    }
    if !schema.contains_key("type") && schema.contains_key("properties") {
        schema.insert("type".into(), "object".into());
    }
    Value::Object(schema)
}

/// A schema's main type: `type` (the first non-null one when 3.1 gives a list), else what its
/// shape implies; `None` when it accepts anything.
pub fn main_type(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(name)) => Some(name),
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .find(|n| *n != "null"),
        _ if schema.get("properties").is_some() => Some("object"),
        _ if schema.get("items").is_some() => Some("array"),
        _ => None,
    }
}

/// The names an object schema lists as `required`.
pub fn required(schema: &Value) -> Vec<&str> {
    let names = schema.get("required").and_then(Value::as_array);
    names.map_or_else(Vec::new, |names| {
        names.iter().filter_map(Value::as_str).collect()
    })
}

/// Whether a schema accepts `null` (3.0's `nullable`, 3.1's `"null"` in a type list).
pub fn nullable(schema: &Value) -> bool {
    let null_in_types = |names: &Vec<Value>| names.iter().any(|n| n == "null");
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
        || matches!(schema.get("type"), Some(Value::Array(names)) if null_in_types(names))
}
