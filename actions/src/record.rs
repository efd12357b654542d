//! Actions as index records: JSON Lines that `walkrag index` indexes like any corpus, so the
//! engine knows nothing of OpenAPI; the `actions` strategy finds them by their `kind`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::action::{one_line, Action};
use crate::spec::Catalog;

/// The `kind` of an action record: what the `actions` strategy searches for.
pub const ACTION_KIND: &str = "action";

/// The `kind` of an example request's record ([`Action::examples`]): one per example, so
/// that a request is matched against each phrasing alone, not against their average.
pub const EXAMPLE_KIND: &str = "action-example";

/// One operation as an index record (`{"id", "title", "text", ...metadata}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The operation id: the document id in the index.
    pub id: String,
    /// `METHOD /path — summary`.
    pub title: String,
    /// What is embedded: [`Action::embed_text`].
    pub text: String,
    /// Always [`ACTION_KIND`].
    pub kind: String,
    pub operation_id: String,
    pub method: String,
    pub path: String,
    /// The spec file the operation comes from (absolute), for the executor to read.
    pub spec: String,
}

impl ActionRecord {
    pub fn of(action: &Action, spec: &Path) -> Self {
        let mut title = format!("{} {}", action.method, action.path);
        if let Some(summary) = &action.summary {
            let summary = one_line(summary);
            if !summary.is_empty() {
                title.push_str(" — ");
                title.push_str(&summary);
            }
        }
        Self {
            id: action.operation_id.clone(),
            title,
            text: action.embed_text(),
            kind: ACTION_KIND.to_string(),
            operation_id: action.operation_id.clone(),
            method: action.method.as_str().to_string(),
            path: action.path.clone(),
            spec: spec.to_string_lossy().into_owned(),
        }
    }

    /// One record per example request of `action` ([`EXAMPLE_KIND`], with the operation's
    /// id and the example as their text), none when it has none.
    pub fn examples_of(action: &Action, spec: &Path) -> Vec<Self> {
        let operation = Self::of(action, spec);
        action
            .examples
            .iter()
            .enumerate()
            .map(|(n, example)| Self {
                id: example_id(&action.operation_id, n + 1),
                title: example.clone(),
                text: example.clone(),
                kind: EXAMPLE_KIND.to_string(),
                ..operation.clone()
            })
            .collect()
    }
}

/// The record id of the `n`th example request (from 1) of the operation `operation_id`.
pub(crate) fn example_id(operation_id: &str, n: usize) -> String {
    format!("{operation_id}#example-{n}")
}

impl Catalog {
    /// One record per operation, in catalogue order, each followed by the records of its
    /// example requests; `spec` is recorded as the file to read the operations back from.
    pub fn records(&self, spec: &Path) -> Vec<ActionRecord> {
        self.actions
            .iter()
            .flat_map(|action| {
                std::iter::once(ActionRecord::of(action, spec))
                    .chain(ActionRecord::examples_of(action, spec))
            })
            .collect()
    }

    /// The records as JSON Lines, one per line, each line ending with a newline.
    pub fn records_jsonl(&self, spec: &Path) -> String {
        self.records(spec)
            .iter()
            .map(|record| serde_json::to_string(record).expect("a record serialises") + "\n")
            .collect()
    }
}
