//! The order a document's schemas list their properties in: what an operation returns is
//! shown by its first fields, which should be those the spec's authors put first (`id`,
//! `name`), not the first in the alphabet.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// For every `properties` map of a document, its names in the order written (the first
/// such map's, where several have the same names), found by the same names sorted (how a
/// parsed map was taken to list them).
#[derive(Debug, Default)]
pub(crate) struct PropertyOrder(HashMap<Vec<String>, Vec<String>>);

impl PropertyOrder {
    /// The orders of `doc`'s `properties` maps, its maps parsed in the order written.
    pub(crate) fn of(doc: &Value) -> Self {
        let mut orders = HashMap::new();
        collect(doc, &mut orders);
        Self(orders)
    }

    /// The entries of `properties` in the order the document writes them, where it writes a
    /// map of exactly these names; else in the map's own order. A schema merged from `allOf`
    /// members is written nowhere as a whole, and keeps its own order.
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

/// Adds the order of every `properties` map in `value` to `orders`, the first for its names.
fn collect(value: &Value, orders: &mut HashMap<Vec<String>, Vec<String>>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                if let (Value::Object(properties), "properties") = (value, key.as_str()) {
                    let order: Vec<String> = properties.keys().cloned().collect();
                    let mut sorted = order.clone();
                    sorted.sort();
                    orders.entry(sorted).or_insert(order);
                }
                collect(value, orders);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, orders)),
        _ => {}
    }
}
