//! The order a document's schemas list their properties in. A parsed `Value` sorts its maps,
//! but what an operation returns is shown by its first fields, which should be those the
//! spec's authors put first (`id`, `name`), not the first in the alphabet.

use std::collections::HashMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::spec::read_document;

/// For every `properties` map of a document, its names in the order written, found by the
/// same names sorted (how a parsed map lists them).
#[derive(Debug, Default)]
pub(crate) struct PropertyOrder(HashMap<Vec<String>, Vec<String>>);

impl PropertyOrder {
    /// Reads `text` (JSON or YAML) once more for the order of its properties; a document that
    /// does not read so gives none, and every map keeps its sorted order.
    pub(crate) fn of(text: &str) -> Self {
        let mut orders = HashMap::new();
        if let Ok(written) = read_document::<Written>(text) {
            written.collect(&mut orders);
        }
        Self(orders)
    }

    /// The entries of `properties` in the order the document writes them, where it writes a
    /// map of exactly these names; else in the map's own (sorted) order. A schema merged from
    /// `allOf` members is written nowhere as a whole, and keeps the sorted order.
    pub(crate) fn arrange<'a>(
        &self,
        properties: &'a Map<String, Value>,
    ) -> Vec<(&'a String, &'a Value)> {
        let sorted: Vec<String> = properties.keys().cloned().collect();
        match self.0.get(&sorted) {
            Some(order) => order
                .iter()
                .filter_map(|name| properties.get_key_value(name))
                .collect(),
            None => properties.iter().collect(),
        }
    }
}

/// A document read for the order of its maps' keys alone.
enum Written {
    Map(Vec<(String, Written)>),
    List(Vec<Written>),
    Leaf,
}

impl Written {
    fn collect(&self, orders: &mut HashMap<Vec<String>, Vec<String>>) {
        match self {
            Written::Map(entries) => {
                for (key, value) in entries {
                    if let (Written::Map(properties), "properties") = (value, key.as_str()) {
                        let order: Vec<String> =
                            properties.iter().map(|(name, _)| name.clone()).collect();
                        let mut sorted = order.clone();
                        sorted.sort();
                        orders.entry(sorted).or_insert(order);
                    }
                    value.collect(orders);
                }
            }
            Written::List(items) => items.iter().for_each(|item| item.collect(orders)),
            Written::Leaf => {}
        }
    }
}

impl<'de> Deserialize<'de> for Written {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WrittenVisitor)
    }
}

struct WrittenVisitor;

/// Visitor methods that read a scalar as a leaf.
macro_rules! leaves {
    ($($visit:ident: $ty:ty),*) => {$(
        fn $visit<E>(self, _: $ty) -> Result<Written, E> {
            Ok(Written::Leaf)
        }
    )*};
}

/// Visitor methods that read a scalar key as its text.
macro_rules! keys {
    ($($visit:ident: $ty:ty),*) => {$(
        fn $visit<E>(self, key: $ty) -> Result<Key, E> {
            Ok(Key(key.to_string()))
        }
    )*};
}

impl<'de> Visitor<'de> for WrittenVisitor {
    type Value = Written;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON or YAML value")
    }

    leaves!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);

    fn visit_unit<E>(self) -> Result<Written, E> {
        Ok(Written::Leaf)
    }

    fn visit_none<E>(self) -> Result<Written, E> {
        Ok(Written::Leaf)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Written, D::Error> {
        Written::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Written, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Written::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Written, A::Error> {
        let mut entries = Vec::new();
        while let Some(Key(key)) = map.next_key()? {
            entries.push((key, map.next_value()?));
        }
        Ok(Written::Map(entries))
    }
}

/// A map's key as text (YAML allows numbers and booleans as keys).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map key")
            }

            keys!(visit_str: &str, visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
        }
        deserializer.deserialize_any(KeyVisitor)
    }
}
