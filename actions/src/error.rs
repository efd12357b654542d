//! The errors of reading a catalogue and of setting up an executor. Request problems are not
//! errors but outcomes (`Invalid`, `Outcome`): the model reads them and acts.

use thiserror::Error;

/// Why a document could not be read as an OpenAPI catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// Neither JSON nor YAML; holds the parser's message for the format the text looked like.
    #[error("not JSON or YAML: {0}")]
    Syntax(String),
    #[error("the document's top level is not a mapping of fields")]
    NotAMapping,
    #[error("not an OpenAPI document: no top-level `openapi` field")]
    NotOpenApi,
    #[error(
        "unsupported OpenAPI version {0}: only 3.0 and 3.1 are read \
         (convert Swagger 2.0 documents to 3.x first)"
    )]
    UnsupportedVersion(String),
    #[error("$ref {reference} (at {at}) points at nothing in the document")]
    DanglingRef { reference: String, at: String },
    #[error(
        "$ref {reference} (at {at}) points outside the document; only `#/...` references are read"
    )]
    ExternalRef { reference: String, at: String },
    /// A field the catalogue cannot do without has the wrong shape.
    #[error("{at}: {message}")]
    Malformed { at: String, message: String },
}

/// Why an executor or its credentials could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error(
        "no base URL: the catalogue names no absolute http(s) server{0}; \
         give one in the configuration"
    )]
    NoBaseUrl(String),
    #[error("base URL {0:?} is not an absolute http:// or https:// URL")]
    BadBaseUrl(String),
    /// A credential header line that is not `Name: value`. The value is never quoted.
    #[error(
        "credential header {0}: expected `Name: value` with a token name and a one-line value"
    )]
    BadHeader(String),
    /// A credential input that is not `NAME=VALUE`. The value is never quoted.
    #[error(
        "credential input {0}: expected `NAME=VALUE` with the input's name and a one-line value"
    )]
    BadCredential(String),
    #[error("HTTP client: {0}")]
    Client(String),
}
