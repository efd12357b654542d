//! What code computes from values the reader extracted: which of two sides is larger,
//! smaller, earlier or later, and how far apart they are. The model copies each side's value
//! from a passage and names what is wanted; it never does the comparison or the arithmetic.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A value read from a passage: a date, or a number with its unit (possibly none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Value {
    /// A calendar date; a year alone is its first day, a month and year the month's first.
    Date {
        year: i32,
        month: Option<u8>,
        day: Option<u8>,
    },
    /// A number, scaled by any multiplier word (`2.5 million` is 2,500,000), and the word after
    /// it (`km`, `days`), lower case; empty when there is none.
    Number { value: f64, unit: String },
}

impl Value {
    /// Days since year 0 (a proleptic calendar of 365.25-day years, good for ordering and for
    /// whole-year differences), or the number itself.
    fn magnitude(&self) -> f64 {
        match *self {
            Value::Date { year, month, day } => {
                let month = f64::from(month.unwrap_or(1) - 1);
                let day = f64::from(day.unwrap_or(1) - 1);
                f64::from(year) * 365.25 + month * 30.44 + day
            }
            Value::Number { value, .. } => value,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Date { year, month, day } => match (month, day) {
                (Some(m), Some(d)) => write!(f, "{year:04}-{m:02}-{d:02}"),
                (Some(m), None) => write!(f, "{year:04}-{m:02}"),
                _ => write!(f, "{year}"),
            },
            Value::Number { value, unit } if unit.is_empty() => write!(f, "{}", number(*value)),
            Value::Number { value, unit } => write!(f, "{} {unit}", number(*value)),
        }
    }
}

/// A number as written in an answer: whole numbers without a fraction, others to at most
/// three decimals.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// What a comparison asks for, as the reader names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wanted {
    Larger,
    Smaller,
    Earlier,
    Later,
    /// How far apart the two values are.
    Difference,
}

impl Wanted {
    /// The words the reader may write, in the grammar's order.
    pub const WORDS: [&'static str; 5] = ["larger", "smaller", "earlier", "later", "difference"];

    pub fn parse(word: &str) -> Option<Self> {
        Some(match word.trim().to_ascii_lowercase().as_str() {
            "larger" => Wanted::Larger,
            "smaller" => Wanted::Smaller,
            "earlier" => Wanted::Earlier,
            "later" => Wanted::Later,
            "difference" => Wanted::Difference,
            _ => return None,
        })
    }
}

/// What was computed from two values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Side `side` (0 or 1) is the one wanted.
    Pick { side: usize },
    /// The two values are this far apart (`8 years`, `3 days`, `1200 km`).
    Difference { text: String },
}

/// Why nothing could be computed: the model's own answer stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A side's value is not a date or a number.
    NotAValue(usize),
    /// One is a date and the other a number, or their units differ.
    Unlike,
    /// The values are equal: neither is larger.
    Equal,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotAValue(side) => {
                write!(
                    f,
                    "the value of side {} is not a date or a number",
                    side + 1
                )
            }
            Refusal::Unlike => f.write_str("the values are of different kinds or units"),
            Refusal::Equal => f.write_str("the values are equal"),
        }
    }
}

/// Compares or subtracts two values.
pub fn compute(values: [Option<&Value>; 2], wanted: Wanted) -> Result<Outcome, Refusal> {
    let a = values[0].ok_or(Refusal::NotAValue(0))?;
    let b = values[1].ok_or(Refusal::NotAValue(1))?;
    let unit = match (a, b) {
        (Value::Date { .. }, Value::Date { .. }) => None,
        (Value::Number { unit: ua, .. }, Value::Number { unit: ub, .. }) => {
            // A unit on one side only is the same unit left unsaid ("1,200" and "900 km").
            if !ua.is_empty() && !ub.is_empty() && ua != ub {
                return Err(Refusal::Unlike);
            }
            Some(if ua.is_empty() { ub } else { ua })
        }
        _ => return Err(Refusal::Unlike),
    };
    let (x, y) = (a.magnitude(), b.magnitude());
    match wanted {
        Wanted::Difference => {
            let text = match (a, b, unit) {
                (Value::Date { year: ya, .. }, Value::Date { year: yb, .. }, _)
                    if is_year_only(a) || is_year_only(b) =>
                {
                    years((ya - yb).abs())
                }
                (Value::Date { .. }, _, _) => {
                    let days = (x - y).abs().round() as i64;
                    if days >= 365 {
                        years((days as f64 / 365.25).floor() as i32)
                    } else {
                        format!("{days} days")
                    }
                }
                (_, _, Some(unit)) if !unit.is_empty() => {
                    format!("{} {unit}", number((x - y).abs()))
                }
                _ => number((x - y).abs()),
            };
            Ok(Outcome::Difference { text })
        }
        _ if x == y => Err(Refusal::Equal),
        Wanted::Larger | Wanted::Later => Ok(Outcome::Pick {
            side: usize::from(y > x),
        }),
        Wanted::Smaller | Wanted::Earlier => Ok(Outcome::Pick {
            side: usize::from(y < x),
        }),
    }
}

fn is_year_only(v: &Value) -> bool {
    matches!(v, Value::Date { month: None, .. })
}

fn years(n: i32) -> String {
    if n == 1 {
        "1 year".into()
    } else {
        format!("{n} years")
    }
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The month a word names, in full or as its first three letters (`Sept.` too).
fn month(word: &str) -> Option<u8> {
    let w = word.trim_end_matches('.').to_ascii_lowercase();
    if w.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| *m == w || (w.len() <= 4 && m.starts_with(&w)))
        .map(|i| i as u8 + 1)
}

/// A year as written: four digits from 1000 to 2999 (optionally with a trailing `s`, as
/// in `1990s`, read as its first year).
fn year(word: &str) -> Option<i32> {
    let w = word.strip_suffix('s').unwrap_or(word);
    (w.len() == 4 && w.bytes().all(|b| b.is_ascii_digit()))
        .then(|| w.parse().ok())
        .flatten()
        .filter(|y| (1000..3000).contains(y))
}

/// The words of `text`: runs of letters, digits, `.` and `,` inside numbers, split on
/// anything else.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '.' || c == ',' || c == '²' || c == '³'))
        .map(|w| w.trim_matches(|c| c == '.' || c == ','))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Reads a date or a number from text copied out of a passage: `12 March 1990`,
/// `March 12, 1990`, `1990-03-12`, `March 1990`, `1990`, `(1851–1920)` (the first date),
/// `2.5 million`, `1,234 km²`, `10 days`. The first value found counts.
pub fn parse(text: &str) -> Option<Value> {
    if let Some(date) = iso_date(text) {
        return Some(date);
    }
    let words = words(text);
    // Dates with a month name are looked for first: `31 March 1996` is not the number 31.
    for (i, w) in words.iter().enumerate() {
        if let Some(m) = month(w) {
            // `12 March 1990` / `March 12, 1990` / `March 1990`.
            let before = i.checked_sub(1).and_then(|j| day(words[j]));
            let after = words.get(i + 1).copied();
            let (day, year_word) = match (before, after.and_then(day)) {
                (Some(d), _) => (Some(d), after),
                (None, Some(d)) if after.and_then(year).is_none() => {
                    (Some(d), words.get(i + 2).copied())
                }
                _ => (None, after),
            };
            if let Some(y) = year_word.and_then(year) {
                return Some(Value::Date {
                    year: y,
                    month: Some(m),
                    day,
                });
            }
        }
    }
    for (i, w) in words.iter().enumerate() {
        if let Some(y) = year(w) {
            // A year alone, unless a unit follows (`2000 metres` is a length).
            let next = words.get(i + 1).copied().unwrap_or("");
            if next.is_empty() || !is_unit(next) {
                return Some(Value::Date {
                    year: y,
                    month: None,
                    day: None,
                });
            }
        }
        if let Some(value) = plain_number(w) {
            let mut value = value;
            let mut next = i + 1;
            if let Some(scale) = words.get(next).and_then(|w| multiplier(w)) {
                value *= scale;
                next += 1;
            }
            let unit = words
                .get(next)
                .filter(|w| is_unit(w))
                .map(|w| w.to_lowercase())
                .unwrap_or_default();
            return Some(Value::Number { value, unit });
        }
    }
    None
}

/// The most values [`values_in`] lists.
const VALUES_MAX: usize = 300;

/// The phrases of `text` that [`parse`] reads as a date or a number, each as written (one to
/// three words around a word with a digit, punctuation at the ends trimmed), first seen
/// first, each once: what a comparison may copy as a side's value.
pub fn values_in(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !w.bytes().any(|b| b.is_ascii_digit()) {
            continue;
        }
        for (start, end) in [
            (i, i + 1),
            (i, i + 2),
            (i, i + 3),
            (i.saturating_sub(1), i + 1),
            (i.saturating_sub(2), i + 1),
        ] {
            let Some(span) = words.get(start..end.min(words.len())) else {
                continue;
            };
            let phrase = span
                .join(" ")
                .trim_matches(|c: char| !c.is_alphanumeric() && c != '²' && c != '³')
                .to_string();
            if !phrase.is_empty() && parse(&phrase).is_some() && !out.contains(&phrase) {
                out.push(phrase);
                if out.len() == VALUES_MAX {
                    return out;
                }
            }
        }
    }
    out
}

/// `1990-03-12` anywhere in the text.
fn iso_date(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(9)).find_map(|i| {
        let s = text.get(i..i + 10)?;
        let b = s.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        if !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)) {
            return None;
        }
        let month: u8 = s[5..7].parse().ok()?;
        let day: u8 = s[8..10].parse().ok()?;
        let year: i32 = s[..4].parse().ok()?;
        ((1..=12).contains(&month) && (1..=31).contains(&day)).then_some(Value::Date {
            year,
            month: Some(month),
            day: Some(day),
        })
    })
}

/// A day of the month: 1 to 31, with or without an ordinal suffix.
fn day(word: &str) -> Option<u8> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !(suffix.is_empty() || ["st", "nd", "rd", "th"].contains(&suffix)) || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// `1,234.5` as 1234.5 (commas between groups of three digits only).
fn plain_number(word: &str) -> Option<f64> {
    if !word.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut groups = word.split(',');
    let first = groups.next()?;
    let mut digits = first.to_string();
    for group in groups {
        let whole = group.split('.').next().unwrap_or("");
        if whole.len() != 3 {
            return None;
        }
        digits.push_str(group);
    }
    digits.parse().ok()
}

fn multiplier(word: &str) -> Option<f64> {
    Some(match word.to_ascii_lowercase().as_str() {
        "thousand" => 1e3,
        "million" => 1e6,
        "billion" | "bn" => 1e9,
        "trillion" => 1e12,
        _ => return None,
    })
}

/// Whether a word after a number names what it counts or measures (a word with letters that is
/// not a month or a joining word).
fn is_unit(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_alphabetic)
        && month(word).is_none()
        && ![
            "and", "or", "to", "in", "on", "of", "the", "a", "an", "at", "by", "bc", "ad", "ce",
        ]
        .contains(&word.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(year: i32, month: Option<u8>, day: Option<u8>) -> Value {
        Value::Date { year, month, day }
    }

    fn num(value: f64, unit: &str) -> Value {
        Value::Number {
            value,
            unit: unit.into(),
        }
    }

    #[test]
    fn reads_dates_as_passages_write_them() {
        assert_eq!(parse("12 March 1990"), Some(date(1990, Some(3), Some(12))));
        assert_eq!(parse("March 12, 1990"), Some(date(1990, Some(3), Some(12))));
        assert_eq!(
            parse("born on 1st Sept. 1901"),
            Some(date(1901, Some(9), Some(1)))
        );
        assert_eq!(parse("1990-03-12"), Some(date(1990, Some(3), Some(12))));
        assert_eq!(parse("in March 1990"), Some(date(1990, Some(3), None)));
        assert_eq!(parse("formed in 1997"), Some(date(1997, None, None)));
        assert_eq!(parse("(1851–1920)"), Some(date(1851, None, None)));
        assert_eq!(parse("31 March 1996"), Some(date(1996, Some(3), Some(31))));
        assert_eq!(parse("the 1990s"), Some(date(1990, None, None)));
    }

    #[test]
    fn reads_numbers_with_units_and_multipliers() {
        assert_eq!(parse("1,234 km²"), Some(num(1234.0, "km²")));
        assert_eq!(
            parse("2.5 million people"),
            Some(num(2_500_000.0, "people"))
        );
        assert_eq!(parse("10 days"), Some(num(10.0, "days")));
        assert_eq!(parse("2000 metres"), Some(num(2000.0, "metres")));
        assert_eq!(parse("64"), Some(num(64.0, "")));
        assert_eq!(parse("up to 30 m tall"), Some(num(30.0, "m")));
        assert_eq!(parse("an American singer"), None);
    }

    #[test]
    fn lists_the_values_a_text_holds() {
        let values =
            values_in("Mara Quill (1851–1920) was born on 3 May 1851 in Dundee, 12 km away.");
        for v in ["1851–1920", "3 May 1851", "12 km", "May 1851"] {
            assert!(values.contains(&v.to_string()), "{v}: {values:?}");
        }
        assert!(values.iter().all(|v| parse(v).is_some()));
        assert!(values_in("no numbers here").is_empty());
    }

    #[test]
    fn picks_the_wanted_side() {
        let (a, b) = (date(1939, Some(7), Some(14)), date(1976, Some(1), Some(16)));
        let pick = |w| compute([Some(&a), Some(&b)], w);
        assert_eq!(pick(Wanted::Earlier), Ok(Outcome::Pick { side: 0 }));
        assert_eq!(pick(Wanted::Later), Ok(Outcome::Pick { side: 1 }));
        let (x, y) = (num(10.0, "days"), num(7.0, "days"));
        assert_eq!(
            compute([Some(&x), Some(&y)], Wanted::Larger),
            Ok(Outcome::Pick { side: 0 })
        );
        assert_eq!(
            compute([Some(&x), Some(&y)], Wanted::Smaller),
            Ok(Outcome::Pick { side: 1 })
        );
    }

    #[test]
    fn subtracts() {
        let (a, b) = (date(1884, None, None), date(1920, Some(5), Some(2)));
        assert_eq!(
            compute([Some(&a), Some(&b)], Wanted::Difference),
            Ok(Outcome::Difference {
                text: "36 years".into()
            })
        );
        let (x, y) = (num(64.0, "bits"), num(20.0, ""));
        assert_eq!(
            compute([Some(&x), Some(&y)], Wanted::Difference),
            Ok(Outcome::Difference {
                text: "44 bits".into()
            })
        );
    }

    #[test]
    fn refuses_what_it_cannot_compare() {
        let (d, n) = (date(1990, None, None), num(3.0, "km"));
        assert_eq!(
            compute([Some(&d), Some(&n)], Wanted::Larger),
            Err(Refusal::Unlike)
        );
        let m = num(3.0, "miles");
        assert_eq!(
            compute([Some(&m), Some(&n)], Wanted::Larger),
            Err(Refusal::Unlike)
        );
        assert_eq!(
            compute([None, Some(&n)], Wanted::Larger),
            Err(Refusal::NotAValue(0))
        );
        assert_eq!(
            compute([Some(&n), Some(&n)], Wanted::Larger),
            Err(Refusal::Equal)
        );
    }
}
