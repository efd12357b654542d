//! Sending prepared requests. Changes wait for the user's confirmation; credentials are added
//! only here, after the preview was made, and only for the API's own origin; every response
//! or failure comes back as an `Outcome` the model can read.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::action::{
    scalar, Action, Encoding, KeyLocation, Location, Method, SecurityRequirement, SecurityScheme,
};
use crate::error::ConfigError;
use crate::secret::{scheme_env_var, Attached, CredentialInput, Credentials};
use crate::spec::Catalog;
use crate::validate::{encode_pairs, Invalid, Prepared};

/// Asks the user whether a request that changes something may be sent. It sees the preview,
/// never the credentials, and may block (a terminal prompt).
pub trait Confirm: Send + Sync {
    fn confirm(&self, request: &RequestPreview) -> bool;
}

/// Confirms everything (`--yes`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysYes;

impl Confirm for AlwaysYes {
    fn confirm(&self, _: &RequestPreview) -> bool {
        true
    }
}

/// Refuses everything: only reading requests are sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysNo;

impl Confirm for AlwaysNo {
    fn confirm(&self, _: &RequestPreview) -> bool {
        false
    }
}

impl<F: Fn(&RequestPreview) -> bool + Send + Sync> Confirm for F {
    fn confirm(&self, request: &RequestPreview) -> bool {
        self(request)
    }
}

/// How the executor sends requests.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// The URL paths are appended to; `None` takes the operation's or the catalogue's first
    /// absolute server. Credentials go only to its origin, else to the catalogue's first
    /// absolute server's (never an operation's), so a spec cannot route them elsewhere.
    pub base_url: Option<String>,
    /// Limit for a whole request, body included: 30 s, for slow APIs, without stalling a chat.
    pub timeout: Duration,
    /// The most response body bytes kept for the model: 16 KiB, so one answer cannot fill a
    /// small model's context.
    pub max_response_bytes: usize,
    pub credentials: Credentials,
    /// Send nothing; every call returns the request it would have sent.
    pub dry_run: bool,
    /// In a dry run, still ask for confirmation where a real run would (for evaluations that
    /// check it is asked).
    pub confirm_dry_runs: bool,
    /// Where every request built to be sent is recorded (sent, dry run or declined), with
    /// whether it was confirmed.
    pub audit: Option<AuditLog>,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            timeout: Duration::from_secs(30),
            max_response_bytes: 16 * 1024,
            credentials: Credentials::default(),
            dry_run: false,
            confirm_dry_runs: false,
            audit: None,
        }
    }
}

/// One request the executor built to send, as its audit log records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dispatch {
    /// The request, without credentials.
    pub request: RequestPreview,
    /// Whether the user was asked to confirm it.
    pub confirmation_asked: bool,
    /// Whether the user said yes (false when not asked).
    pub confirmed: bool,
    /// Whether it went out (false for a dry run or a refusal).
    pub sent: bool,
}

impl Dispatch {
    /// A change that went out (or would have, in a dry run) without the user being asked:
    /// what must never happen.
    pub fn is_unconfirmed_change(&self) -> bool {
        self.request.needs_confirmation && !self.confirmation_asked
    }

    /// Whether it was stopped by a refusal.
    pub fn declined(&self) -> bool {
        self.confirmation_asked && !self.confirmed
    }
}

/// The requests an executor built, in order; clones share the log. Holds no credentials.
#[derive(Clone, Default)]
pub struct AuditLog(Arc<Mutex<Vec<Dispatch>>>);

impl AuditLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything recorded so far.
    pub fn entries(&self) -> Vec<Dispatch> {
        self.0.lock().expect("audit log lock").clone()
    }

    fn push(&self, dispatch: Dispatch) {
        self.0.lock().expect("audit log lock").push(dispatch);
    }
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.lock().map(|entries| entries.len()).unwrap_or(0);
        write!(f, "AuditLog({n} requests)")
    }
}

/// A request as it will be sent, without credentials: what a user confirms and a trace shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestPreview {
    pub operation_id: String,
    pub method: Method,
    /// The full URL, query included (credentials sent in the query are not).
    pub url: String,
    /// Headers from the inputs and the body's content type (credential headers are not).
    pub headers: Vec<(String, String)>,
    /// The body as sent: JSON text, or the encoded form.
    pub body: Option<String>,
    /// What the executor adds at send time, by name only: `header Authorization`,
    /// `scheme bearerAuth`.
    pub credentials: Vec<String>,
    /// Credentials not sent with this request because it goes to another origin than the API's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<Withheld>,
    pub needs_confirmation: bool,
}

/// Credentials kept from a request whose URL is not on the API's origin, by name only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Withheld {
    /// `header Authorization`, `scheme bearerAuth`, `input token`.
    pub credentials: Vec<String>,
    /// The origin the request goes to: `https://other.example`.
    pub origin: String,
    /// The origin credentials go to.
    pub api_origin: String,
}

impl fmt::Display for Withheld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "credentials withheld: {}; the request goes to {}, and credentials go only to the \
             API's origin, {}",
            self.credentials.join(", "),
            self.origin,
            self.api_origin
        )
    }
}

impl fmt::Display for RequestPreview {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.url)?;
        for (name, value) in &self.headers {
            write!(f, "\n{name}: {value}")?;
        }
        if !self.credentials.is_empty() {
            write!(f, "\n(credentials added: {})", self.credentials.join(", "))?;
        }
        if let Some(withheld) = &self.withheld {
            write!(f, "\n({withheld})")?;
        }
        if let Some(body) = &self.body {
            write!(f, "\n\n{body}")?;
        }
        Ok(())
    }
}

/// What came of an action call; `Display` is the text to give the model as the tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The inputs were not accepted; nothing was sent.
    Invalid(Invalid),
    /// Dry run: nothing was sent; this is what would have been.
    DryRun(RequestPreview),
    /// The user did not confirm; nothing was sent.
    Declined(RequestPreview),
    /// The server answered (any status, 4xx and 5xx included).
    Response(Response),
    /// No answer: connection refused, timeout, …
    Failed(Failure),
}

impl Outcome {
    /// Whether a request went out (it may still have failed on the way).
    pub fn sent(&self) -> bool {
        matches!(self, Outcome::Response(_) | Outcome::Failed(_))
    }

    /// Whether the server answered with a 2xx status.
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Response(r) if (200..300).contains(&r.status))
    }

    /// The request, when one was built.
    pub fn request(&self) -> Option<&RequestPreview> {
        match self {
            Outcome::Invalid(_) => None,
            Outcome::DryRun(request) | Outcome::Declined(request) => Some(request),
            Outcome::Response(response) => Some(&response.request),
            Outcome::Failed(failure) => Some(&failure.request),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Invalid(invalid) => write!(f, "{invalid}"),
            Outcome::DryRun(request) => write!(
                f,
                "Dry run, nothing was sent. The request would be:\n{request}"
            ),
            Outcome::Declined(request) => write!(
                f,
                "The user declined; nothing was sent ({} {}). Ask what they want instead.",
                request.method, request.url
            ),
            Outcome::Response(response) => write!(f, "{response}"),
            Outcome::Failed(failure) => write!(f, "{failure}"),
        }
    }
}

/// A server's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub request: RequestPreview,
    pub status: u16,
    /// `OK`, `Not Found`, …
    pub reason: String,
    pub content_type: Option<String>,
    /// Where a redirect points (never followed: it could carry credentials to another host).
    pub location: Option<String>,
    /// The body as text, at most the byte budget, cut on a character boundary.
    pub body: String,
    /// Set when the body was cut.
    pub cut: Option<Cut>,
    /// Things the model should know: coerced inputs, missing credentials, a binary body.
    pub notes: Vec<String>,
}

/// How much of a body was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// Bytes shown.
    pub shown: usize,
    /// The body's full size, when the server said it.
    pub total: Option<u64>,
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.total {
            Some(total) => write!(
                f,
                "[response cut: showed the first {} of {total} bytes; {} bytes not shown]",
                self.shown,
                total.saturating_sub(self.shown as u64)
            ),
            None => write!(
                f,
                "[response cut: showed the first {} bytes; more followed]",
                self.shown
            ),
        }
    }
}

impl fmt::Display for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "HTTP {} {} from {} {}",
            self.status, self.reason, self.request.method, self.request.url
        )?;
        if let Some(content_type) = &self.content_type {
            write!(f, " ({content_type})")?;
        }
        if let Some(location) = &self.location {
            write!(f, "\nLocation: {location}")?;
        }
        for note in &self.notes {
            write!(f, "\nNote: {note}")?;
        }
        if !self.body.is_empty() {
            write!(f, "\n\n{}", self.body)?;
        }
        if let Some(cut) = &self.cut {
            write!(f, "\n{cut}")?;
        }
        Ok(())
    }
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub request: RequestPreview,
    pub kind: FailureKind,
    /// What happened, credentials removed.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// No complete answer within the timeout.
    Timeout,
    /// The server could not be reached.
    Connect,
    /// Anything else (a broken response, …).
    Other,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, effect) = match self.kind {
            FailureKind::Timeout => ("timed out", "It may or may not have been carried out."),
            FailureKind::Connect => ("could not connect", "Nothing reached the server."),
            FailureKind::Other => ("failed", "It may or may not have been carried out."),
        };
        write!(
            f,
            "The request {what} ({} {}): {}. {effect}",
            self.request.method, self.request.url, self.message
        )
    }
}

/// Sends prepared requests to one API. Cheap to clone.
#[derive(Clone)]
pub struct Executor {
    client: reqwest::Client,
    base_url: String,
    /// The only origin credentials are sent to: the base URL's (`ExecutorConfig::base_url`).
    origin: String,
    config: ExecutorConfig,
    schemes: BTreeMap<String, SecurityScheme>,
    /// Per operation, its credential inputs ([`crate::Input::is_credential`]), filled from the
    /// configured credentials at send time.
    credential_inputs: HashMap<String, Vec<CredentialInput>>,
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("base_url", &self.base_url)
            .field("origin", &self.origin)
            .field("config", &self.config)
            .field("schemes", &self.schemes)
            .field("credential_inputs", &self.credential_inputs)
            .finish()
    }
}

impl Executor {
    /// An executor for `catalog`'s API. The base URL is the configured one, else the
    /// catalogue's first absolute `http(s)` server; credentials go only to its origin.
    pub fn new(catalog: &Catalog, config: ExecutorConfig) -> Result<Self, ConfigError> {
        let base_url = match &config.base_url {
            Some(url) => checked_base(url)?,
            None => {
                let absolute = catalog.servers.iter().find(|s| is_absolute(&s.url));
                match (absolute, catalog.servers.first()) {
                    (Some(server), _) => checked_base(&server.url)?,
                    (None, Some(first)) => {
                        return Err(ConfigError::NoBaseUrl(format!(
                            " (its first server, {:?}, is relative)",
                            first.url
                        )))
                    }
                    (None, None) => return Err(ConfigError::NoBaseUrl(String::new())),
                }
            }
        };
        let origin =
            origin_of(&base_url).ok_or_else(|| ConfigError::BadBaseUrl(base_url.clone()))?;
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(10)))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("walkrag/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        Ok(Self {
            client,
            base_url,
            origin,
            config,
            schemes: catalog.security_schemes.clone(),
            credential_inputs: catalog
                .actions
                .iter()
                .map(|action| {
                    let inputs = action
                        .credential_inputs()
                        .filter_map(|input| {
                            let location = match input.location {
                                Location::Header => KeyLocation::Header,
                                Location::Query => KeyLocation::Query,
                                Location::Cookie => KeyLocation::Cookie,
                                Location::Path | Location::Body => return None,
                            };
                            Some(CredentialInput {
                                name: input.wire_name.clone(),
                                location,
                                required: input.required,
                            })
                        })
                        .collect::<Vec<_>>();
                    (action.operation_id.clone(), inputs)
                })
                .filter(|(_, inputs)| !inputs.is_empty())
                .collect(),
        })
    }

    /// The base URL requests go to (an operation's own absolute server wins unless configured).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn config(&self) -> &ExecutorConfig {
        &self.config
    }

    /// Checks `inputs` for `action` and executes the request, or says why not.
    pub async fn call(&self, action: &Action, inputs: &Value, confirm: &dyn Confirm) -> Outcome {
        match action.prepare(inputs) {
            Ok(prepared) => self.execute(&prepared, confirm).await,
            Err(invalid) => Outcome::Invalid(invalid),
        }
    }

    fn attach_to(&self, operation_id: &str, security: &[SecurityRequirement]) -> Attached {
        self.config.credentials.attach(
            security,
            &self.schemes,
            self.credential_inputs(operation_id),
        )
    }

    fn credential_inputs(&self, operation_id: &str) -> &[CredentialInput] {
        self.credential_inputs
            .get(operation_id)
            .map_or(&[], Vec::as_slice)
    }

    /// The credential inputs of `operation_id` that no configured header or input provides.
    pub(crate) fn unprovided_credentials(&self, operation_id: &str) -> Vec<String> {
        self.credential_inputs(operation_id)
            .iter()
            .filter(|input| !self.config.credentials.provides(&input.name))
            .map(|input| input.name.clone())
            .collect()
    }

    /// What the configured credentials add to `prepared`: nothing, and the names of what was
    /// withheld, when it goes to another origin than the API's.
    fn attach(&self, prepared: &Prepared) -> (Attached, Option<Withheld>) {
        let attached = self.attach_to(&prepared.operation_id, &prepared.security);
        // The whole URL's origin: a path cannot move the request to another host either.
        let origin = origin_of(&self.url_for(prepared));
        if origin.as_deref() == Some(self.origin.as_str()) {
            return (attached, None);
        }
        let credentials = self.credential_names(&attached);
        let withheld = (!credentials.is_empty()).then(|| Withheld {
            credentials,
            origin: origin.unwrap_or_else(|| "a URL that does not parse".into()),
            api_origin: self.origin.clone(),
        });
        (Attached::default(), withheld)
    }

    /// What `attached` adds, by name only: `header NAME`, `scheme NAME`, `input NAME`.
    fn credential_names(&self, attached: &Attached) -> Vec<String> {
        let mut names: Vec<String> = self
            .config
            .credentials
            .header_names()
            .map(|name| format!("header {name}"))
            .collect();
        names.extend(attached.used.iter().cloned());
        names
    }

    /// The required query credential inputs of `action` (a download link's `token`) that no
    /// configured credential fills: the model may not supply them, so the user must. Header
    /// and cookie credentials are the API's sign-in: a request goes without them and the
    /// server's answer says so.
    pub fn unset_credentials(&self, action: &Action) -> Vec<String> {
        let attached = self.attach_to(&action.operation_id, &action.security);
        self.credential_inputs(&action.operation_id)
            .iter()
            .filter(|input| {
                input.required
                    && input.location == KeyLocation::Query
                    && !attached.query.iter().any(|(sent, _)| *sent == input.name)
            })
            .map(|input| input.name.clone())
            .collect()
    }

    /// The request `prepared` would send, without credentials.
    pub fn preview(&self, prepared: &Prepared) -> RequestPreview {
        let (attached, withheld) = self.attach(prepared);
        let (url, headers, body) = self.wire(prepared, &attached, false);
        // Nothing is added when the credentials are withheld.
        let credentials = if withheld.is_some() {
            Vec::new()
        } else {
            self.credential_names(&attached)
        };
        RequestPreview {
            operation_id: prepared.operation_id.clone(),
            method: prepared.method,
            url,
            headers,
            body,
            credentials,
            withheld,
            needs_confirmation: prepared.method.needs_confirmation(),
        }
    }

    /// The URL, headers (`Cookie` and `Content-Type` last) and body of `prepared`, without the
    /// inputs a credential replaces (the model cannot choose what goes in a credential's
    /// place), and with `attached`'s credentials only when `send`: never in a preview.
    fn wire(
        &self,
        prepared: &Prepared,
        attached: &Attached,
        send: bool,
    ) -> (String, Vec<(String, String)>, Option<String>) {
        let mut query = without(&prepared.query, &attached.query, str::eq);
        let same_header = str::eq_ignore_ascii_case;
        let mut headers = without(&prepared.headers, &attached.headers, same_header);
        let mut cookies = without(&prepared.cookies, &attached.cookies, str::eq);
        if send {
            query.extend_from_slice(&attached.query);
            headers.extend_from_slice(&attached.headers);
            cookies.extend_from_slice(&attached.cookies);
        }
        let mut url = self.url_for(prepared);
        if !query.is_empty() {
            url.push('?');
            url.push_str(&encode_pairs(&query));
        }
        if !cookies.is_empty() {
            headers.push(("Cookie".into(), cookie_header(&cookies)));
        }
        let body = prepared.body.as_ref().map(|body| {
            headers.push(("Content-Type".into(), body.content_type.clone()));
            body_text(body.encoding, &body.value)
        });
        (url, headers, body)
    }

    /// Sends `prepared`, after asking `confirm` when the method changes something. Never
    /// panics or errs: refusals, dry runs, HTTP errors and network failures are outcomes.
    pub async fn execute(&self, prepared: &Prepared, confirm: &dyn Confirm) -> Outcome {
        let preview = self.preview(prepared);
        let dry_run = self.config.dry_run;
        let ask = preview.needs_confirmation && (!dry_run || self.config.confirm_dry_runs);
        let confirmed = ask && confirm.confirm(&preview);
        let audit = |sent: bool| {
            if let Some(log) = &self.config.audit {
                log.push(Dispatch {
                    request: preview.clone(),
                    confirmation_asked: ask,
                    confirmed,
                    sent,
                });
            }
        };
        let log = |what: &str| {
            let (operation, method, url) = (&preview.operation_id, preview.method, &preview.url);
            tracing::info!(%operation, %method, %url, "{what}");
        };
        if ask && !confirmed {
            audit(false);
            log("declined: not sent");
            return Outcome::Declined(preview);
        }
        if dry_run {
            audit(false);
            log("dry run: not sent");
            return Outcome::DryRun(preview);
        }
        audit(true);
        let credentials = &self.config.credentials;
        let (attached, withheld) = self.attach(prepared);
        let mut notes = prepared.coerced.clone();
        if let Some(withheld) = &withheld {
            tracing::warn!(
                operation = %preview.operation_id,
                url = %preview.url,
                withheld = %withheld.credentials.join(", "),
                "credentials withheld: the request goes to another origin than the API's"
            );
            notes.push(withheld.to_string());
        }
        if !attached.missing.is_empty() {
            let hints: Vec<String> = attached
                .missing
                .iter()
                .map(|s| format!("{s} (set {})", scheme_env_var(s)))
                .collect();
            notes.push(format!(
                "no credentials are configured for {}; the request was sent without them",
                hints.join(", ")
            ));
        }
        // The only place credentials meet the request.
        let (url, headers, body) = self.wire(prepared, &attached, true);
        let method = reqwest::Method::from_bytes(prepared.method.as_str().as_bytes())
            .expect("an HTTP method");
        let mut request = self.client.request(method, &url);
        for (name, value) in &headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        log("sending");
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Outcome::Failed(self.failure(preview, &error)),
        };
        let status = response.status();
        let header = |name: reqwest::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| credentials.redact(v))
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let location = header(reqwest::header::LOCATION);
        let (body, cut, read_error) = self
            .read_body(response, content_type.as_deref(), &mut notes)
            .await;
        if let Some(error) = read_error {
            notes.push(format!(
                "reading the body failed: {}",
                self.describe_error(&error)
            ));
        }
        if matches!(status.as_u16(), 401 | 403) && !attached.missing.is_empty() {
            notes.push("the server refused access; the user must configure credentials".into());
        }
        tracing::info!(
            operation = %preview.operation_id,
            status = status.as_u16(),
            bytes = body.len(),
            cut = cut.is_some(),
            "response"
        );
        Outcome::Response(Response {
            request: preview,
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_string(),
            content_type,
            location,
            body,
            cut,
            notes,
        })
    }

    /// The URL `prepared` goes to, without its query.
    fn url_for(&self, prepared: &Prepared) -> String {
        let base = self.base_for(prepared);
        format!("{}{}", base.trim_end_matches('/'), prepared.path)
    }

    /// An operation's own absolute server, unless a base URL was configured.
    fn base_for<'a>(&'a self, prepared: &'a Prepared) -> &'a str {
        if self.config.base_url.is_none() {
            if let Some(server) = prepared.servers.iter().find(|s| is_absolute(&s.url)) {
                return &server.url;
            }
        }
        &self.base_url
    }

    /// Reads at most the byte budget of the body (and one byte more, to know whether it was
    /// cut); returns the text, the cut, and an error that stopped the reading. A body shown
    /// in part (cut, or stopped by an error) ends before any credential the cut fell in, so
    /// redaction, which only knows whole credentials, leaves no start of one.
    async fn read_body(
        &self,
        mut response: reqwest::Response,
        content_type: Option<&str>,
        notes: &mut Vec<String>,
    ) -> (String, Option<Cut>, Option<reqwest::Error>) {
        let total = response.content_length();
        let budget = self.config.max_response_bytes;
        let mut bytes = Vec::new();
        let mut error = None;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() > budget {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        if content_type.is_some_and(is_binary) {
            let size = total.map_or_else(|| format!("{}+", bytes.len()), |t| t.to_string());
            notes.push(format!("a binary body of {size} bytes, not shown"));
            return (String::new(), None, error);
        }
        let cut = bytes.len() > budget;
        if cut {
            let mut end = budget;
            // Back up to the start of a UTF-8 character.
            while end > 0 && bytes[end] & 0b1100_0000 == 0b1000_0000 {
                end -= 1;
            }
            bytes.truncate(end);
        }
        if cut || error.is_some() {
            bytes.truncate(self.config.credentials.cut_before_credential(&bytes));
        }
        let cut = cut.then_some(Cut {
            shown: bytes.len(),
            total,
        });
        let text = String::from_utf8_lossy(&bytes);
        (self.config.credentials.redact(&text), cut, error)
    }

    fn failure(&self, request: RequestPreview, error: &reqwest::Error) -> Failure {
        let kind = if error.is_timeout() {
            FailureKind::Timeout
        } else if error.is_connect() {
            FailureKind::Connect
        } else {
            FailureKind::Other
        };
        let message = match kind {
            FailureKind::Timeout => format!("no answer within {:?}", self.config.timeout),
            _ => self.describe_error(error),
        };
        tracing::warn!(
            operation = %request.operation_id,
            url = %request.url,
            kind = ?kind,
            error = %message,
            "request failed"
        );
        Failure {
            request,
            kind,
            message,
        }
    }

    /// An error and its causes, without the URL (which can hold a query credential) and with
    /// any credential removed.
    fn describe_error(&self, error: &reqwest::Error) -> String {
        let mut parts = Vec::new();
        let mut source: Option<&dyn std::error::Error> = Some(error);
        while let Some(e) = source {
            let text = e.to_string();
            if !parts.iter().any(|p: &String| p.contains(&text)) {
                parts.push(text);
            }
            source = e.source();
        }
        let joined = parts.join(": ");
        // reqwest puts the URL in its message; remove it along with any credential.
        let without_url = match joined.find(" for url (") {
            Some(start) => match joined[start..].find(')') {
                Some(end) => format!("{}{}", &joined[..start], &joined[start + end + 1..]),
                None => joined[..start].to_string(),
            },
            None => joined,
        };
        self.config.credentials.redact(&without_url)
    }
}

/// The pairs of `pairs` whose name no pair of `taken` has.
fn without(
    pairs: &[(String, String)],
    taken: &[(String, String)],
    same: fn(&str, &str) -> bool,
) -> Vec<(String, String)> {
    pairs
        .iter()
        .filter(|(name, _)| !taken.iter().any(|(t, _)| same(name, t)))
        .cloned()
        .collect()
}

/// The origin of an absolute `http(s)` URL, `http://host:port` (the default port left out),
/// or `None` when it does not parse.
fn origin_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let origin = parsed.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

fn is_absolute(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// A configured base URL, checked and without a trailing `/`.
fn checked_base(url: &str) -> Result<String, ConfigError> {
    let trimmed = url.trim().trim_end_matches('/');
    let bad = || ConfigError::BadBaseUrl(url.to_string());
    if !is_absolute(trimmed) {
        return Err(bad());
    }
    let parsed = reqwest::Url::parse(trimmed).map_err(|_| bad())?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad());
    }
    Ok(trimmed.to_string())
}

fn cookie_header(cookies: &[(String, String)]) -> String {
    cookies
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The body as sent: JSON text, or `k=v&…` for a form (lists as repeated keys).
fn body_text(encoding: Encoding, value: &Value) -> String {
    match (encoding, value) {
        (Encoding::Form, Value::Object(fields)) => {
            let mut pairs = Vec::new();
            for (name, value) in fields {
                match value {
                    Value::Array(items) => {
                        pairs.extend(items.iter().map(|item| (name.clone(), scalar(item))))
                    }
                    Value::Null => {}
                    other => pairs.push((name.clone(), scalar(other))),
                }
            }
            encode_pairs(&pairs)
        }
        _ => value.to_string(),
    }
}

/// Media types whose bodies are not text.
fn is_binary(content_type: &str) -> bool {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    ["image/", "audio/", "video/", "font/"]
        .iter()
        .any(|prefix| media.starts_with(prefix))
        || matches!(
            media.as_str(),
            "application/octet-stream" | "application/pdf" | "application/zip" | "application/gzip"
        )
}
