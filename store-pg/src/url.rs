//! Connection strings as they may be printed: the password replaced by `***`.

/// `url` with its password hidden, in both forms PostgreSQL accepts: a URL
/// (`postgres://user:secret@host/db` → `postgres://user:***@host/db`, and a `password=`
/// query parameter) and key/value pairs (`host=h password=secret` → `host=h password=***`).
pub fn redact(url: &str) -> String {
    let url = url.trim();
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            return format!("{scheme}{}", redact_url_rest(rest));
        }
    }
    redact_pairs(url)
}

fn redact_url_rest(rest: &str) -> String {
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (userinfo, hosts) = authority.split_at(at);
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***{hosts}"),
                None => authority.to_string(),
            }
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key == "password" => format!("{key}=***"),
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
        assert_eq!(
            redact("postgres://walkrag:s3cret@127.0.0.1:5432/walkrag"),
            "postgres://walkrag:***@127.0.0.1:5432/walkrag"
        );
        assert_eq!(
            redact("postgresql://u:p%40ss@db.example.com/x?sslmode=disable&password=other"),
            "postgresql://u:***@db.example.com/x?sslmode=disable&password=***"
        );
        assert_eq!(
            redact("postgres://u@host/db?options=-csearch_path%3Dt"),
            "postgres://u@host/db?options=-csearch_path%3Dt"
        );
        assert_eq!(redact("postgres://host"), "postgres://host");
        assert_eq!(
            redact("host=localhost password=hunter2 dbname=w"),
            "host=localhost password=*** dbname=w"
        );
        assert_eq!(
            redact("password = 'a b\\' c' user=x"),
            "password=*** user=x"
        );
        assert_eq!(redact("host=h user=passworder"), "host=h user=passworder");
    }
}
