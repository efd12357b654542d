//! Example requests: short messages a user might type to have an operation carried out,
//! written by a chat model at indexing (`--examples`) or given in a file (`--examples-from`),
//! and kept beside the index, so that a request in the user's words can meet an operation
//! described in the API's.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;
use walkrag_core::chat::complete;
use walkrag_core::{ChatError, ChatModel, ChatRequest, Message, Sampling};
use walkrag_engine::jsonl_file;

use crate::action::{one_line, Action, ActionHash};
use crate::spec::Catalog;

/// The file of an index's directory that holds every example written for it.
pub const EXAMPLES_FILE: &str = "action-examples.jsonl";

/// How many examples one operation gets: enough to cover a few phrasings, few enough that
/// they do not outweigh the operation's own words in its embedding.
pub const EXAMPLES_PER_ACTION: usize = 5;

/// The most tokens one operation's examples may take (five lines of under 15 words).
const EXAMPLES_MAX_TOKENS: usize = 120;

/// How [`ActionExamples::model`] starts for requests given in a file, before the file's path.
const GIVEN_PREFIX: &str = "file:";

/// The examples of one operation: one line of [`EXAMPLES_FILE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionExamples {
    pub operation_id: String,
    /// The operation's [`Action::hash`] when they were written: a changed one gets new ones.
    pub hash: ActionHash,
    /// Who wrote them: the model's id, or `file:PATH` for requests given in a file
    /// ([`GivenExamples`]).
    pub model: String,
    pub examples: Vec<String>,
}

/// Why examples could not be read, written or saved.
#[derive(Debug, Error)]
pub enum ExamplesError {
    #[error("cannot read or write {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}, line {line}: {message}")]
    Given {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path} holds no request labelled with its operation (lines of {{\"request\", \"operation_id\"}})")]
    NoneGiven { path: PathBuf },
    #[error("the model could not write examples for {operation_id}: {source}")]
    Chat {
        operation_id: String,
        source: ChatError,
    },
}

/// The examples kept for an index, by operation hash.
#[derive(Debug, Default)]
pub struct ExamplesFile {
    path: PathBuf,
    by_hash: HashMap<ActionHash, ActionExamples>,
    /// Whether the file ends in a line cut short, which the next put cuts off first.
    cut: bool,
}

impl ExamplesFile {
    /// Reads [`EXAMPLES_FILE`] of the index `dir`; a missing file holds none, and a line that
    /// does not read is passed over with a warning, so its operation is written again.
    pub fn open(dir: &Path) -> Result<Self, ExamplesError> {
        let path = dir.join(EXAMPLES_FILE);
        let file = jsonl_file::read::<ActionExamples>(&path).map_err(io_error(&path))?;
        file.pass_over_bad(&path, "an operation's examples");
        let cut = file.cut;
        // A later line for the same operation wins: it was written last.
        let by_hash = file
            .records
            .into_iter()
            .map(|examples| (examples.hash.clone(), examples))
            .collect();
        Ok(Self { path, by_hash, cut })
    }

    /// The examples of `action` as it is now, if any were written.
    pub fn get(&self, action: &Action) -> Option<&ActionExamples> {
        self.by_hash.get(&action.hash)
    }

    /// The actions of `catalog` that have no examples for their current content.
    pub fn missing<'c>(&self, catalog: &'c Catalog) -> Vec<&'c Action> {
        catalog
            .actions
            .iter()
            .filter(|action| self.get(action).is_none())
            .collect()
    }

    /// Keeps `examples`, appending them to the file at once so that an interrupted run loses
    /// at most the operation it was writing.
    pub fn put(&mut self, examples: ActionExamples) -> Result<(), ExamplesError> {
        let io_error = io_error(&self.path);
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(&io_error)?;
        }
        let mut line = serde_json::to_string(&examples).expect("examples serialise");
        line.push('\n');
        jsonl_file::append(&self.path, &line, &mut self.cut).map_err(io_error)?;
        self.by_hash.insert(examples.hash.clone(), examples);
        Ok(())
    }

    /// Keeps the requests `given` for each action of `catalog` as its examples, in place of
    /// any written or given before (unless they are the same); returns how many actions
    /// have given examples.
    pub fn give(
        &mut self,
        catalog: &Catalog,
        given: &GivenExamples,
    ) -> Result<usize, ExamplesError> {
        let mut count = 0;
        for action in &catalog.actions {
            let Some(requests) = given.by_operation.get(&action.operation_id) else {
                continue;
            };
            count += 1;
            let examples = ActionExamples {
                operation_id: action.operation_id.clone(),
                hash: action.hash.clone(),
                model: given.source.clone(),
                examples: requests.clone(),
            };
            if self.get(action) != Some(&examples) {
                self.put(examples)?;
            }
        }
        Ok(count)
    }

    /// Gives each action of `catalog` its kept examples (none where there are none), and
    /// marks those given in a file ([`Action::examples_given`]).
    pub fn attach(&self, catalog: &mut Catalog) {
        for action in &mut catalog.actions {
            let kept = self.get(action);
            action.examples = kept.map(|k| k.examples.clone()).unwrap_or_default();
            action.examples_given = kept.is_some_and(|k| k.model.starts_with(GIVEN_PREFIX));
        }
    }
}

/// Requests labelled with their operations, read from a JSON Lines file (`--examples-from`)
/// of objects with `request` and `operation_id`, as in a request set of `walkrag eval --spec`.
#[derive(Debug, Clone, Default)]
pub struct GivenExamples {
    /// `file:PATH`, comma-separated for several files: the examples' writer.
    source: String,
    /// Each operation's requests in the file's order, each kept once.
    by_operation: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
struct LabelledRequest {
    request: String,
    operation_id: String,
}

/// How an I/O error on `path` is reported.
fn io_error(path: &Path) -> impl Fn(io::Error) -> ExamplesError + '_ {
    move |source| ExamplesError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl GivenExamples {
    /// Reads the labelled requests of `path`; blank lines are passed over, a line that is not
    /// such an object is an error naming it, and so is a file without any.
    pub fn read(path: &Path) -> Result<Self, ExamplesError> {
        let text = fs::read_to_string(path).map_err(io_error(path))?;
        let mut given = Self {
            source: format!("{GIVEN_PREFIX}{}", path.display()),
            by_operation: BTreeMap::new(),
        };
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad_line = |message: String| ExamplesError::Given {
                path: path.to_path_buf(),
                line: n + 1,
                message,
            };
            let labelled: LabelledRequest = serde_json::from_str(line).map_err(|e| {
                bad_line(format!(
                    "not a request labelled with its operation ({{\"request\", \"operation_id\"}}): {e}"
                ))
            })?;
            let request = one_line(&labelled.request);
            if request.is_empty() || labelled.operation_id.trim().is_empty() {
                return Err(bad_line("an empty request or operation_id".into()));
            }
            given.add(labelled.operation_id, request);
        }
        if given.is_empty() {
            return Err(ExamplesError::NoneGiven {
                path: path.to_path_buf(),
            });
        }
        Ok(given)
    }

    /// Adds `request` to `operation`'s, unless it is there already (in any case).
    fn add(&mut self, operation: String, request: String) {
        let requests = self.by_operation.entry(operation).or_default();
        if !requests
            .iter()
            .any(|seen| seen.eq_ignore_ascii_case(&request))
        {
            requests.push(request);
        }
    }

    /// The requests of `other` joined to these (for several files, each named in the
    /// source).
    pub fn join(&mut self, other: GivenExamples) {
        self.source = if self.source.is_empty() {
            other.source
        } else {
            format!("{}, {}", self.source, other.source)
        };
        for (operation, requests) in other.by_operation {
            for request in requests {
                self.add(operation.clone(), request);
            }
        }
    }

    /// The operations named, and how many requests each has.
    pub fn operations(&self) -> impl Iterator<Item = (&str, usize)> {
        self.by_operation
            .iter()
            .map(|(operation, requests)| (operation.as_str(), requests.len()))
    }

    /// How many requests are given, over all operations.
    pub fn len(&self) -> usize {
        self.by_operation.values().map(Vec::len).sum()
    }

    /// Whether none is given.
    pub fn is_empty(&self) -> bool {
        self.by_operation.is_empty()
    }
}

/// The system prompt of [`write_examples`].
pub const EXAMPLES_SYSTEM: &str =
    "You write the messages that people type to an assistant that uses a web API for them.";

/// The request of [`write_examples`]: the API's title and the operation's line. The worked
/// example comes from an API no catalogue here has, so it teaches the form, not the words.
fn examples_prompt(api: &str, action: &Action) -> String {
    format!(
        "API: {api}\nOperation: {}\n\nWrite {EXAMPLES_PER_ACTION} different short messages \
         (under 15 words each) that users of this API might type to have this done, one per \
         line. Write the way people talk: in everyday words, which are rarely the API's own. \
         No URLs, no code.\nExample for 'getPet: GET /pets/{{petId}} — Info for a specific \
         pet': What do we know about pet 7?",
        action.without_credentials().line()
    )
}

/// Has `model` write the examples of `action` of the API titled `api` (greedy, so the same
/// model writes the same examples).
pub async fn write_examples(
    model: &dyn ChatModel,
    api: &str,
    action: &Action,
) -> Result<ActionExamples, ExamplesError> {
    let request = ChatRequest {
        messages: vec![
            Message::system(EXAMPLES_SYSTEM),
            Message::user(examples_prompt(api, action)),
        ],
        sampling: Sampling {
            max_tokens: EXAMPLES_MAX_TOKENS,
            stop: vec![format!("\n{}.", EXAMPLES_PER_ACTION + 1)],
            ..Sampling::default()
        },
        // A numbered list from the first token: left to itself a model may open a made-up
        // conversation instead ("Hey there! ... Sure, I can do that.").
        openings: vec!["1.".into()],
        ..ChatRequest::default()
    };
    let completion = complete(model, request)
        .await
        .map_err(|source| ExamplesError::Chat {
            operation_id: action.operation_id.clone(),
            source,
        })?;
    Ok(ActionExamples {
        operation_id: action.operation_id.clone(),
        hash: action.hash.clone(),
        model: model.id().to_string(),
        examples: example_lines(&completion.text),
    })
}

/// The examples in a model's answer: one per line, list marks and quotes taken off; lines
/// that are empty, repeat an earlier one, or look like a URL or code are dropped.
pub fn example_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let unmarked = line
            .strip_prefix(['-', '*', '•'])
            .unwrap_or_else(|| strip_number(line))
            .trim();
        let example = unquoted(unmarked);
        let code_like = example.contains("://")
            || example.starts_with('{')
            || example.starts_with('/')
            || example.split_whitespace().next().is_some_and(|word| {
                matches!(word, "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD")
            });
        if example.split_whitespace().count() < 2
            || code_like
            || out.iter().any(|seen| seen.eq_ignore_ascii_case(example))
        {
            continue;
        }
        out.push(example.to_string());
        if out.len() == EXAMPLES_PER_ACTION {
            break;
        }
    }
    out
}

/// `text` without the quotes around it, where it has a pair; a quote inside stays.
fn unquoted(text: &str) -> &str {
    let quote = |c: char| matches!(c, '"' | '\'' | '“' | '”' | '`');
    let mut chars = text.chars();
    match (chars.next(), chars.next_back()) {
        (Some(first), Some(last)) if quote(first) && quote(last) => {
            text[first.len_utf8()..text.len() - last.len_utf8()].trim()
        }
        _ => text,
    }
}

/// `line` without a leading `1.` or `1)`.
fn strip_number(line: &str) -> &str {
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return line;
    }
    line[digits..].strip_prefix(['.', ')']).unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_are_read_off_numbered_bulleted_and_quoted_lines() {
        let text = "1. \"Ban user 88 for a week\"\n2) Suspend Kim until Friday\n- ban user 88 \
                    for a week\n* GET /admin/users/88\n\nSure!\n• Lock out account 12, spam\n\
                    5. Send backup.zip to 'ops'";
        assert_eq!(
            example_lines(text),
            [
                "Ban user 88 for a week",
                "Suspend Kim until Friday",
                "Lock out account 12, spam",
                "Send backup.zip to 'ops'"
            ]
        );
    }

    #[test]
    fn at_most_five_examples_are_kept() {
        let text = (1..=8)
            .map(|n| format!("{n}. show me pet {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(example_lines(&text).len(), EXAMPLES_PER_ACTION);
    }
}
