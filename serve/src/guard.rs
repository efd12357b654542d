//! What every request passes before a route sees it: a `Host` this server answers to (DNS
//! rebinding), no `Origin` but its own or the `--cors` one (other sites' pages), `POST` bodies
//! only as JSON (a form or `text/plain` post needs no preflight), and the token.

use std::net::{IpAddr, SocketAddr};

use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;

use crate::error::ApiError;
use crate::Shared;

/// The address a connection arrived at (this machine's side), so a server listening on every
/// address answers to the one a client used.
#[derive(Debug, Clone, Copy)]
pub struct LocalAddr(pub Option<SocketAddr>);

impl Connected<IncomingStream<'_, tokio::net::TcpListener>> for LocalAddr {
    fn connect_info(stream: IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        Self(stream.io().local_addr().ok())
    }
}

/// The host part of a `Host` value: `example.org:8080` → `example.org`, `[::1]:80` → `::1`.
fn host_name(host: &str) -> &str {
    if let Some(v6) = host.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether this server answers to `host` (a `Host` header value): loopback names and
/// addresses, the address the connection arrived at, and the `--allow-host` names.
pub(crate) fn host_allowed(host: &str, local: Option<IpAddr>, allowed: &[String]) -> bool {
    let name = host_name(host.trim()).trim_end_matches('.');
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Ok(ip) = name.parse::<IpAddr>() {
        if ip.is_loopback() || Some(ip) == local {
            return true;
        }
    }
    allowed.iter().any(|a| {
        let a = a.trim().trim_end_matches('.');
        a.eq_ignore_ascii_case(name) || a.eq_ignore_ascii_case(host.trim())
    })
}

/// Host, Origin and Content-Type: refused before anything else runs (outermost).
pub(crate) async fn origin(State(state): State<Shared>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = request
        .uri()
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| {
            headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        });
    let local = request
        .extensions()
        .get::<ConnectInfo<LocalAddr>>()
        .and_then(|c| c.0 .0)
        .map(|a| a.ip());
    let Some(host) = host.filter(|h| host_allowed(h, local, &state.config.allow_hosts)) else {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "this server does not answer to that Host name; start it with --allow-host NAME \
             to add one",
        )
        .into_response();
    };
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let own = ["http://", "https://"]
            .iter()
            .any(|scheme| origin.eq_ignore_ascii_case(&format!("{scheme}{host}")));
        let listed = state.config.cors.as_deref() == Some(origin);
        if !own && !listed {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                "pages from other sites may not call this server; start it with --cors ORIGIN \
                 to let one",
            )
            .into_response();
        }
    }
    if request.method() == Method::POST && !is_json(&request) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "request bodies are JSON: send `Content-Type: application/json`",
        )
        .into_response();
    }
    next.run(request).await
}

/// `Content-Type: application/json` (parameters such as `charset` allowed).
fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// With a token configured, every request but the page itself (which holds no data and asks
/// for the token) must carry `Authorization: Bearer TOKEN`.
pub(crate) async fn authorize(
    State(state): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let page =
        request.uri().path() == "/" && matches!(*request.method(), Method::GET | Method::HEAD);
    if let (Some(token), false) = (&state.config.token, page) {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer);
        if !given.is_some_and(|given| same(given.as_bytes(), token.as_bytes())) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this server needs `Authorization: Bearer TOKEN` (the --token it was started with)",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// The credentials of an `Authorization: Bearer …` value; the scheme is case-insensitive.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.trim().split_once(char::is_whitespace)?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim())
}

/// Compares in time that depends on the length of `given` only: not on where it differs from
/// `token`, nor on how long `token` is.
fn same(given: &[u8], token: &[u8]) -> bool {
    let mut differ = u8::from(given.len() != token.len());
    for (i, &g) in given.iter().enumerate() {
        let t = token.get(i).copied().unwrap_or(!g);
        differ |= g ^ t;
    }
    std::hint::black_box(differ) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_loopback_the_arrival_address_and_the_allowed_ones() {
        let none: &[String] = &[];
        let lan: IpAddr = "192.168.1.20".parse().unwrap();
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "localhost.",
            "127.0.0.1:8080",
            "127.0.0.2",
            "[::1]:8080",
        ] {
            assert!(host_allowed(ok, None, none), "{ok}");
        }
        for refused in [
            "attacker.example",
            "attacker.example:8080",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "192.168.1.20:8080",
            "",
        ] {
            assert!(!host_allowed(refused, None, none), "{refused}");
        }
        assert!(host_allowed("192.168.1.20:8080", Some(lan), none));
        let allowed = ["walkrag.lan".to_string()];
        assert!(host_allowed("Walkrag.LAN:8080", None, &allowed));
        assert!(!host_allowed("other.lan", None, &allowed));
    }

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer abc"), Some("abc"));
        assert_eq!(bearer("BEARER   abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearerabc"), None);
    }

    #[test]
    fn same_compares_whole_tokens() {
        assert!(same(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcdeF", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcde", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcdef0", b"0123456789abcdef"));
        assert!(!same(b"", b"0123456789abcdef"));
    }
}
