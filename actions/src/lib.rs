//! walkrag's actions: the operations of an OpenAPI catalogue as records a model can find,
//! fill in and have sent over HTTP.
//!
//! The flow has three steps, one module each:
//!
//! 1. **Ingest** (`spec.rs`, `schema.rs`, `action.rs`): `Catalog::parse` reads an OpenAPI
//!    3.0 or 3.1 document, JSON or YAML, into one `Action` per operation (method, path, texts,
//!    inputs, security, servers), `$ref`s expanded once, cycles cut. `Action::embed_text` is
//!    what to embed, `Action::describe` the card for the model; `Action::hash` changes
//!    exactly when the operation does.
//! 2. **Validate** (`validate.rs`): `Action::prepare` checks the model's inputs against the
//!    schemas and builds a `Prepared` request, or says what is wrong: `Invalid::Missing` (ask
//!    the user) or `Invalid::Bad` (each problem, phrased for the model).
//! 3. **Execute** (`exec.rs`, `secret.rs`): an `Executor` sends a `Prepared` request to the
//!    configured base URL (or the spec's first absolute server) and returns an `Outcome`
//!    whose `Display` is the tool result for the model.
//!
//! # Safety invariants
//!
//! - **Nothing that changes state is sent unconfirmed.** Every method but GET, HEAD and
//!   OPTIONS goes through `Confirm::confirm` with a `RequestPreview` first; a refusal sends
//!   nothing (`Outcome::Declined`). A dry run sends nothing at all (`Outcome::DryRun`).
//! - **Nothing is invented.** The `actions` strategy holds the model's inputs to values copied
//!   from the user's messages and the API's responses (`fill.rs`); a missing required input
//!   is reported by name and no request is sent; defaults are left to the server.
//! - **Credentials never pass through the model.** They are configured by the user
//!   (`Credentials`: header lines, or per security scheme from `WALKRAG_AUTH_*` variables),
//!   held as `Secret`s whose Debug and Display print `***`, and added to the request only
//!   inside `Executor::execute`, after the preview was made. They appear in no preview,
//!   outcome, error, Debug output or log line; a response that echoes one has it replaced by
//!   `***`.
//! - **Redirects are not followed** (a redirect could carry credentials to another host):
//!   a 3xx comes back as an outcome with its `Location`.
//! - **Every result is an outcome.** HTTP errors, timeouts and connection failures are
//!   `Outcome`s the model reads; a response body is cut to the byte budget on a character
//!   boundary, with a note saying how much was left out.
//!
//! The `actions` strategy (`strategy.rs`, with `fill.rs`, `given.rs`, `probe.rs` and
//! `examples.rs`) finds operations by their `embed_text`, shows the model their `describe`
//! cards, and sends what it fills in through the `Executor`.

#![forbid(unsafe_code)]

mod action;
mod error;
mod examples;
mod exec;
mod fill;
mod given;
mod probe;
mod record;
mod schema;
mod secret;
mod spec;
mod strategy;
mod validate;

pub use action::{
    words, Action, ActionHash, Body, Encoding, Input, KeyLocation, Location, Method, Returned,
    SecurityRequirement, SecurityScheme, Server, Style, Type, RETURNED_FIELDS,
};
pub use error::{ConfigError, SpecError};
pub use examples::{
    example_lines, write_examples, ActionExamples, ExamplesError, ExamplesFile, GivenExamples,
    EXAMPLES_FILE, EXAMPLES_PER_ACTION, EXAMPLES_SYSTEM,
};
pub use exec::{
    AlwaysNo, AlwaysYes, AuditLog, Confirm, Cut, Dispatch, Executor, ExecutorConfig, Failure,
    FailureKind, Outcome, RequestPreview, Response, Withheld,
};
pub use record::{ActionRecord, ACTION_KIND, EXAMPLE_KIND};
pub use secret::{scheme_env_var, Credentials, Secret, ENV_PREFIX};
pub use spec::{is_openapi, parse_document, Catalog};
pub use strategy::{
    credential_question, missing_question, Actions, Api, Conversation, Probes, SYSTEM_PROMPT,
    TOOLS_PROMPT, VALUE_MARGIN,
};
pub use validate::{Invalid, Prepared, PreparedBody, Problem};
