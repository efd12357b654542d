//! Connection strings as they may be printed: the password replaced by `***`, in well-formed
//! strings and in mistyped ones alike (a message about a bad URL must not show its password).

/// `url` with its password hidden. A URL, well-formed or not (`postgres://user:secret@host/db`,
/// `postgres:/user:secret@host`, `postgress://…`, no scheme at all): everything between the
/// first `:` of the user part and the last `@` becomes `***`, and a `password=` query value
/// too. Key/value pairs (`host=h password=secret`): the value after `password`.
pub fn redact(url: &str) -> String {
    let url = url.trim();
    let (scheme, mut rest) = split_scheme(url);
    if scheme.is_empty() && url.contains('=') && !url.contains('@') {
        return redact_pairs(url);
    }
    // `user:secret@host` looks like a scheme `user:`: without slashes after it and without a
    // `:` in what would be the user part, the `:` was the password's.
    let user_part = rest.rfind('@').map(|at| &rest[..at]);
    let scheme = if !scheme.ends_with('/') && user_part.is_some_and(|u| !u.contains(':')) {
        rest = url;
        ""
    } else {
        scheme
    };
    redact_pairs(&format!("{scheme}{}", redact_url_rest(rest)))
}

/// `scheme:` and the slashes after it (any number, as typed), and the rest.
fn split_scheme(url: &str) -> (&str, &str) {
    let name_end = url
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .unwrap_or(url.len());
    let starts_with_letter = url.starts_with(|c: char| c.is_ascii_alphabetic());
    if !starts_with_letter || !url[name_end..].starts_with(':') {
        return ("", url);
    }
    let after_colon = name_end + 1;
    let slashes = url[after_colon..].len() - url[after_colon..].trim_start_matches('/').len();
    url.split_at(after_colon + slashes)
}

/// What follows the scheme: `user:***@host…`, with `password=` query values hidden.
fn redact_url_rest(rest: &str) -> String {
    // The user part ends at the last `@`: a password may hold `@`, `/` or `?` typed as is,
    // and hiding too much is better than showing any of it.
    let (authority, tail) = match rest.rfind('@') {
        Some(at) => {
            let (userinfo, hosts) = rest.split_at(at);
            let user = match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***"),
                None => userinfo.to_string(),
            };
            (user, hosts)
        }
        None => (String::new(), rest),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => pair.to_string(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{authority}{tail}")
}

/// Key/value pairs: the value after `password` (quoted or not) becomes `***`.
fn redact_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("password") {
        let before_ok = at == 0 || rest[..at].ends_with(char::is_whitespace);
        out.push_str(&rest[..at + "password".len()]);
        rest = &rest[at + "password".len()..];
        let trimmed = rest.trim_start();
        if !before_ok || !trimmed.starts_with('=') {
            continue;
        }
        let value = trimmed[1..].trim_start();
        out.push_str("=***");
        rest = if let Some(quoted) = value.strip_prefix('\'') {
            // A quoted value ends at the first quote not escaped by a backslash.
            let mut escaped = false;
            let end = quoted
                .char_indices()
                .find(|&(_, c)| {
                    let stop = c == '\'' && !escaped;
                    escaped = c == '\\' && !escaped;
                    stop
                })
                .map(|(i, _)| i + 1)
                .unwrap_or(quoted.len());
            &quoted[end..]
        } else {
            let end = value.find(char::is_whitespace).unwrap_or(value.len());
            &value[end..]
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_are_hidden_in_every_form() {
        for (given, shown) in [
            (
                "postgres://walkrag:s3cret@127.0.0.1:5432/walkrag",
                "postgres://walkrag:***@127.0.0.1:5432/walkrag",
            ),
            (
                "postgresql://u:p%40ss@db.example.com/x?sslmode=disable&password=other",
                "postgresql://u:***@db.example.com/x?sslmode=disable&password=***",
            ),
            (
                "postgres://u@host/db?options=-csearch_path%3Dt",
                "postgres://u@host/db?options=-csearch_path%3Dt",
            ),
            ("postgres://host", "postgres://host"),
            ("postgres://host:5432/db", "postgres://host:5432/db"),
            // Mistyped: the scheme, its slashes, or no scheme at all.
            ("postgres:/u:s3cret@h/db", "postgres:/u:***@h/db"),
            ("postgress://u:s3cret@h/db", "postgress://u:***@h/db"),
            ("postgresql:u:s3cret@h/db", "postgresql:u:***@h/db"),
            ("postgres:///u:s3cret@h/db", "postgres:///u:***@h/db"),
            ("postgres//u:s3cret@h/db", "postgres//u:***@h/db"),
            ("http://u:s3cret@h/db", "http://u:***@h/db"),
            ("u:s3cret@h/db", "u:***@h/db"),
            (
                "walkrag:s3cret@127.0.0.1:5432/db",
                "walkrag:***@127.0.0.1:5432/db",
            ),
            ("  postgres://u:s3cret@h/db \n", "postgres://u:***@h/db"),
            // A password with the URL's own separators, typed unencoded.
            ("postgres://u:s3@cr/et?x@h/db", "postgres://u:***@h/db"),
            ("postgres://u:s3:cret@h/db", "postgres://u:***@h/db"),
            ("postgres://u:@h/db", "postgres://u:***@h/db"),
            (
                "postgres://h/db?PASSWORD=s3cret",
                "postgres://h/db?PASSWORD=***",
            ),
            // Key/value pairs.
            (
                "host=localhost password=s3cret dbname=w",
                "host=localhost password=*** dbname=w",
            ),
            ("password = 'a b\\' c' user=x", "password=*** user=x"),
            ("host=h user=passworder", "host=h user=passworder"),
            ("host=h password=s3@cret", "host=h password=***"),
        ] {
            let redacted = redact(given);
            assert_eq!(redacted, shown, "{given:?}");
            for secret in ["s3cret", "s3@cr", "cret", "a b"] {
                assert!(!redacted.contains(secret), "{given:?} → {redacted:?}");
            }
        }
    }
}
