//! Credentials, kept away from the model: `Secret` never prints its value, `Credentials` are
//! configured by the user (header lines, environment variables per security scheme) and only
//! the executor reads them, when it sends a request.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use crate::action::{KeyLocation, SecurityRequirement, SecurityScheme};
use crate::error::ConfigError;
use crate::spec::Catalog;

/// A value that must never be shown: Debug and Display print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// The prefix of the environment variable that holds a security scheme's credential.
pub const ENV_PREFIX: &str = "WALKRAG_AUTH_";

/// The environment variable `Credentials::from_env` reads for a scheme, other characters as
/// `_`: `bearerAuth` → `WALKRAG_AUTH_BEARERAUTH`.
pub fn scheme_env_var(scheme: &str) -> String {
    let name: String = scheme
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{ENV_PREFIX}{name}")
}

/// What the executor adds to requests: headers, a credential per security scheme, and values
/// for credential inputs by name ([`crate::Input::is_credential`]). Debug shows names only
/// (a [`Secret`] prints as `***`).
#[derive(Clone, Default, Debug)]
pub struct Credentials {
    headers: Vec<(String, Secret)>,
    schemes: BTreeMap<String, Secret>,
    inputs: Vec<(String, Secret)>,
}

impl Credentials {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a header sent with every request: an HTTP token name and a one-line value.
    pub fn with_header(mut self, name: &str, value: Secret) -> Result<Self, ConfigError> {
        let name = name.trim();
        if !is_token(name) {
            return Err(ConfigError::BadHeader(
                "(a name that is not an HTTP token)".into(),
            ));
        }
        if value.expose().chars().any(|c| c.is_control()) {
            return Err(ConfigError::BadHeader(format!(
                "{name} (its value has a line break or control character)"
            )));
        }
        self.headers.push((name.to_string(), value));
        Ok(self)
    }

    /// Adds a header from a `Name: value` line, e.g. `Authorization: Bearer …`.
    pub fn with_header_line(self, line: &str) -> Result<Self, ConfigError> {
        let Some((name, value)) = line.split_once(':') else {
            return Err(ConfigError::BadHeader("(a line without `Name:`)".into()));
        };
        self.with_header(name, Secret::new(value.trim()))
    }

    /// Sets the one-line value of every credential input named `name` in any case, e.g. the
    /// `token` a download link needs in its query.
    pub fn with_input(mut self, name: &str, value: Secret) -> Result<Self, ConfigError> {
        let name = name.trim();
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ConfigError::BadCredential(
                "(a name that is empty or holds spaces)".into(),
            ));
        }
        if value.expose().chars().any(|c| c.is_control()) {
            return Err(ConfigError::BadCredential(format!(
                "{name} (its value has a line break or control character)"
            )));
        }
        put(&mut self.inputs, name.to_string(), value);
        Ok(self)
    }

    /// Adds a credential input from `NAME=VALUE`, e.g. `token=…`.
    pub fn with_input_pair(self, pair: &str) -> Result<Self, ConfigError> {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(ConfigError::BadCredential("(no `=` in it)".into()));
        };
        self.with_input(name, Secret::new(value))
    }

    /// Whether an input or header value is configured for the credential input `name`.
    pub fn provides(&self, name: &str) -> bool {
        self.inputs
            .iter()
            .chain(&self.headers)
            .any(|(mine, _)| mine.eq_ignore_ascii_case(name))
    }

    /// Sets the credential for a security scheme of the catalogue: the key for `apiKey`, the
    /// token for `http` bearer and OAuth 2, `user:password` for `http` basic.
    pub fn with_scheme(mut self, scheme: &str, value: Secret) -> Self {
        self.schemes.insert(scheme.to_string(), value);
        self
    }

    /// Credentials for the catalogue's security schemes from the environment
    /// (`scheme_env_var` names the variables); schemes without a variable get none.
    pub fn from_env(catalog: &Catalog) -> Self {
        Self::from_lookup(catalog, |var| std::env::var(var).ok())
    }

    /// As `from_env`, reading variables through `lookup`.
    pub fn from_lookup(catalog: &Catalog, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut credentials = Self::new();
        for scheme in catalog.security_schemes.keys() {
            if let Some(value) = lookup(&scheme_env_var(scheme)).filter(|v| !v.is_empty()) {
                credentials = credentials.with_scheme(scheme, Secret::new(value));
            }
        }
        credentials
    }

    /// Adds every header and scheme of `other`, whose entries win.
    pub fn merge(mut self, other: Credentials) -> Self {
        for (name, value) in other.headers {
            put(&mut self.headers, name, value);
        }
        self.schemes.extend(other.schemes);
        for (name, value) in other.inputs {
            put(&mut self.inputs, name, value);
        }
        self
    }

    /// The names of the configured headers.
    pub fn header_names(&self) -> impl Iterator<Item = &str> {
        self.headers.iter().map(|(name, _)| name.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.schemes.is_empty() && self.inputs.is_empty()
    }

    /// What to add to a request: the first security alternative whose every scheme has a
    /// credential, the configured values of `inputs`, and the configured headers.
    pub(crate) fn attach(
        &self,
        security: &[SecurityRequirement],
        schemes: &BTreeMap<String, SecurityScheme>,
        inputs: &[CredentialInput],
    ) -> Attached {
        let mut attached = Attached::default();
        let usable = |name: &String| {
            self.schemes.contains_key(name)
                && schemes
                    .get(name)
                    .is_some_and(|s| *s != SecurityScheme::MutualTls)
        };
        let chosen = security
            .iter()
            .find(|alternative| alternative.keys().all(usable));
        match chosen {
            Some(alternative) => {
                for name in alternative.keys() {
                    let secret = self.schemes[name].expose();
                    attached.used.push(format!("scheme {name}"));
                    let authorization = match &schemes[name] {
                        SecurityScheme::ApiKey { name, location } => {
                            let key = (name.clone(), secret.to_string());
                            attached.slot(*location).push(key);
                            continue;
                        }
                        SecurityScheme::Http { scheme, .. } if scheme == "basic" => {
                            format!("Basic {}", base64(secret.as_bytes()))
                        }
                        SecurityScheme::Http { scheme, .. } if scheme != "bearer" => {
                            format!("{} {secret}", capitalised(scheme))
                        }
                        SecurityScheme::Http { .. } | SecurityScheme::OAuth2 => {
                            format!("Bearer {secret}")
                        }
                        SecurityScheme::MutualTls => continue,
                    };
                    attached
                        .headers
                        .push(("Authorization".into(), authorization));
                }
            }
            None if self.headers.is_empty() && !security.iter().any(|a| a.is_empty()) => {
                if let Some(first) = security.first() {
                    attached.missing = first.keys().cloned().collect();
                }
            }
            None => {}
        }
        for CredentialInput { name, location, .. } in inputs {
            let Some((_, secret)) = self
                .inputs
                .iter()
                .find(|(mine, _)| mine.eq_ignore_ascii_case(name))
            else {
                continue;
            };
            let value = secret.expose().to_string();
            attached.slot(*location).push((name.clone(), value));
            attached.used.push(format!("input {name}"));
        }
        for (name, value) in &self.headers {
            let value = value.expose().to_string();
            put(&mut attached.headers, name.clone(), value);
        }
        attached
    }

    /// `text` with every credential (and the forms it is sent in: base64 for basic auth,
    /// percent-encoded for a query, the token of `Bearer TOKEN`) replaced by `***`; where
    /// they overlap, one `***` covers them all. Values shorter than 4 characters are left
    /// alone: replacing them would garble the text.
    pub fn redact(&self, text: &str) -> String {
        let spans = merged(occurrences(&self.needles(), text.as_bytes()));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for span in spans {
            // A match of a whole UTF-8 string starts and ends on character boundaries.
            out.push_str(&text[at..span.start]);
            out.push_str("***");
            at = span.end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// Where to cut `bytes`, a text shown only in part, so that no credential (in any form
    /// `redact` replaces) is cut in two: before a credential's first bytes at its end, or
    /// before any credential overlapping them. What is left is redacted whole.
    pub(crate) fn cut_before_credential(&self, bytes: &[u8]) -> usize {
        let needles = self.needles();
        // Where the earliest form cut off at the end starts (its longest proper prefix).
        let open = needles
            .iter()
            .filter_map(|needle| {
                let needle = needle.as_bytes();
                (1..needle.len())
                    .rev()
                    .find(|&k| bytes.ends_with(&needle[..k]))
                    .map(|k| bytes.len() - k)
            })
            .min();
        let Some(open) = open else {
            return bytes.len();
        };
        let mut spans = occurrences(&needles, bytes);
        // Inside a whole credential that reaches the end, it is redacted with it.
        if merged(spans.clone())
            .last()
            .is_some_and(|last| last.start <= open && last.end == bytes.len())
        {
            return bytes.len();
        }
        spans.push(open..bytes.len());
        merged(spans)
            .into_iter()
            .find(|span| span.contains(&open))
            .map_or(open, |span| span.start)
    }

    /// Every form a credential is sent in, at least 4 characters long.
    fn needles(&self) -> Vec<String> {
        let mut needles: Vec<String> = Vec::new();
        let values = self
            .headers
            .iter()
            .chain(&self.inputs)
            .map(|(_, v)| v)
            .chain(self.schemes.values());
        for secret in values {
            let value = secret.expose();
            needles.push(value.to_string());
            needles.push(base64(value.as_bytes()));
            needles.push(crate::validate::encode_component(value));
            if let Some((_, token)) = value.split_once(' ') {
                needles.push(token.trim().to_string());
            }
        }
        needles.retain(|n| n.chars().count() >= 4);
        needles.sort();
        needles.dedup();
        needles
    }
}

/// Where each of `needles` occurs in `text`, overlapping occurrences included.
fn occurrences(needles: &[String], text: &[u8]) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    for needle in needles.iter().map(String::as_bytes) {
        let mut from = 0;
        while let Some(at) = text[from..]
            .windows(needle.len())
            .position(|window| window == needle)
        {
            found.push(from + at..from + at + needle.len());
            from += at + 1;
        }
    }
    found
}

/// `spans` in order, those that overlap joined.
fn merged(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.sort_by_key(|span| span.start);
    let mut out: Vec<Range<usize>> = Vec::new();
    for span in spans {
        match out.last_mut() {
            Some(last) if span.start < last.end => last.end = last.end.max(span.end),
            _ => out.push(span),
        }
    }
    out
}

/// Sets `name` to `value` in `list`, replacing an entry of the same name in any case.
fn put<T>(list: &mut Vec<(String, T)>, name: String, value: T) {
    list.retain(|(mine, _)| !mine.eq_ignore_ascii_case(&name));
    list.push((name, value));
}

/// A credential input of an operation ([`crate::Input::is_credential`]).
#[derive(Debug, Clone)]
pub(crate) struct CredentialInput {
    pub name: String,
    pub location: KeyLocation,
    pub required: bool,
}

/// What the credentials add to one request. Holds secret values: never logged or shown.
#[derive(Default)]
pub(crate) struct Attached {
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    pub cookies: Vec<(String, String)>,
    /// What was used: `scheme NAME` and `input NAME`.
    pub used: Vec<String>,
    /// The schemes of the operation's first security alternative, when none could be
    /// satisfied and no header was configured either.
    pub missing: Vec<String>,
}

impl Attached {
    fn slot(&mut self, location: KeyLocation) -> &mut Vec<(String, String)> {
        match location {
            KeyLocation::Header => &mut self.headers,
            KeyLocation::Query => &mut self.query,
            KeyLocation::Cookie => &mut self.cookies,
        }
    }
}

/// Whether `name` is an HTTP header name (an RFC 9110 token).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Standard base64 with padding (for basic auth).
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in cases {
            assert_eq!(base64(input.as_bytes()), expected);
        }
    }

    #[test]
    fn a_cut_never_ends_inside_a_credential() {
        // A token that ends with its own first letters, and a second one that overlaps it.
        let credentials = Credentials::new()
            .with_scheme("a", Secret::new("sk-abc-sk"))
            .with_scheme("b", Secret::new("-sk-xyz1"));
        let cut =
            |text: &str| text[..credentials.cut_before_credential(text.as_bytes())].to_string();
        assert_eq!(cut("see sk-ab"), "see ");
        assert_eq!(
            cut("see sk-abc-sk"),
            "see sk-abc-sk",
            "whole: redacted, not cut"
        );
        assert_eq!(
            cut("see sk-abc-sk-"),
            "see ",
            "overlapping the start of another"
        );
        assert_eq!(
            cut("see sk-abc-sk-sk"),
            "see sk-abc-sk",
            "after a whole one"
        );
        assert_eq!(cut("see sk-abc-skip"), "see sk-abc-skip");
        assert_eq!(cut("sees"), "see", "a letter that may start one goes too");
        assert_eq!(
            credentials.redact("sk-abc-sk-xyz1 and sk-abc-sk"),
            "*** and ***"
        );
    }

    #[test]
    fn env_var_names_are_shouted_and_safe() {
        assert_eq!(scheme_env_var("bearerAuth"), "WALKRAG_AUTH_BEARERAUTH");
        assert_eq!(scheme_env_var("api-key.v2"), "WALKRAG_AUTH_API_KEY_V2");
    }
}
