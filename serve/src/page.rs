//! The page at `/`: ask a question and watch the run's events arrive. One self-contained
//! file compiled into the binary: no build step, nothing fetched from elsewhere.

use axum::http::header;
use axum::response::IntoResponse;

const PAGE: &str = include_str!("page.html");

pub(crate) async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            // Nothing but this page's own inline script and style, and calls to this server.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src data:",
            ),
        ],
        PAGE,
    )
}
