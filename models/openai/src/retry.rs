//! When to try again: exponential backoff with jitter, and the wait a server asks for. Shared
//! with the embeddings client (`walkrag-embed`'s `openai:` embedder).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// The delay before retry number `attempt + 1`: `base * 2^attempt`, capped at `cap`, of which
/// a random half is dropped ("equal jitter") so that clients that failed together do not
/// come back together.
pub fn backoff(attempt: u32, base: Duration, cap: Duration) -> Duration {
    let full = base.saturating_mul(2u32.saturating_pow(attempt)).min(cap);
    let half = full / 2;
    half + half.mul_f64(unit_random())
}

/// A number in `[0, 1)`, from std's randomly keyed hasher (no RNG crate needed for jitter).
fn unit_random() -> f64 {
    let bits = RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// The wait the server asks for: `retry-after-ms` (Azure, some proxies) or `Retry-After` in
/// seconds (fractions allowed) or as an HTTP date (IMF-fixdate only; the obsolete RFC 850 and
/// asctime forms are ignored).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(seconds) {
        return Some(ms / 1000);
    }
    let value = header(RETRY_AFTER.as_str())?;
    seconds(value).or_else(|| {
        let when = http_date(value)?;
        Some(
            when.duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO),
        )
    })
}

/// A non-negative decimal number as a duration in seconds.
fn seconds(value: &str) -> Option<Duration> {
    let secs: f64 = value.parse().ok()?;
    Duration::try_from_secs_f64(secs).ok()
}

/// Parses an IMF-fixdate such as `Sun, 06 Nov 1994 08:49:37 GMT`.
fn http_date(value: &str) -> Option<SystemTime> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (_weekday, rest) = value.split_once(", ")?;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let month = MONTHS.iter().position(|m| m == month)? as u32 + 1;
    let year: i64 = year.parse().ok().filter(|y| *y >= 1970)?;
    let clock: Vec<u64> = time
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let [hour, minute, second] = clock.as_slice() else {
        return None;
    };
    if *hour > 23 || *minute > 59 || *second > 60 {
        return None;
    }
    let days = u64::try_from(days_since_epoch(year, month, day)).ok()?;
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar, counting in 400-year
/// eras that start on March 1st (so the leap day is the last day of a year).
fn days_since_epoch(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 719_468 days separate 0000-03-01 from 1970-01-01.
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let base = Duration::from_millis(500);
        let cap = Duration::from_secs(20);
        for attempt in 0..4 {
            let full = base * 2u32.pow(attempt);
            let delay = backoff(attempt, base, cap);
            assert!(
                delay >= full / 2 && delay <= full,
                "attempt {attempt}: {delay:?}"
            );
        }
        assert!(backoff(30, base, cap) <= cap);
        assert!(backoff(30, base, cap) >= cap / 2);
    }

    #[test]
    fn dates_convert_to_unix_time() {
        assert_eq!(days_since_epoch(1970, 1, 1), 0);
        assert_eq!(days_since_epoch(2000, 3, 1), 11_017);
        assert_eq!(days_since_epoch(2024, 2, 29), 19_782);
        let when = http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(when, UNIX_EPOCH + Duration::from_secs(784_111_777));
        assert_eq!(http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(http_date("Sun, 06 Nov 1994 25:49:37 GMT"), None);
        assert_eq!(http_date("Sun, 06 Foo 1994 08:49:37 GMT"), None);
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_or_a_date() {
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            map
        };
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.5")])),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "9"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Sun, 06 Nov 1994 08:49:37 GMT"
            )])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[])), None);
    }
}
