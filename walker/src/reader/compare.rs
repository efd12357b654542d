//! Comparisons computed by code: a question that offers two sides ("which was formed first,
//! A or B?") is answered from one value per side — a year, or a number with its unit — that
//! the answer model picks by likelihood among the values its side's passage states, never by
//! writing; walkrag then compares the two. This module holds what code does: finding the two
//! sides, each side's passage, the values a passage states, and the comparison. The model
//! calls are `Run::compare_sides` (`run/compare.rs`).

use std::fmt;

use walkrag_engine::{ChunkId, Index};

use super::dates::{day, month, year};

/// The most values of one passage weighed as a side's value.
pub const MAX_CANDIDATES: usize = 16;

/// The two sides a question offers, as it names them: the two names joined by its last
/// "or" (`…, Harbor Notes or Kessel Review?`, `… first The Vellows or Orla Dene?`, `… the
/// forming of The Vellows or the birth of Ilsa Brandt?`), else by its first "and" (`Orla
/// Dene and Mira Holt toured … Which formed first?`). A side is the run
/// of capitalised words next to the joining word (the text after a comma where there is one),
/// so lower case words that describe a side are left out. `None` where either side is
/// missing.
pub fn sides(question: &str) -> Option<[String; 2]> {
    let q = question.trim().trim_end_matches('?').trim_end();
    let joined = |at: usize, width: usize| -> Option<[String; 2]> {
        let (left, right) = (&q[..at], &q[at + width..]);
        let second = leading_name(right)?;
        let first = match left.rfind(',') {
            Some(comma) if !left[comma + 1..].trim().is_empty() => {
                leading_name(&left[comma + 1..])?
            }
            _ => trailing_name(left)?,
        };
        (!first.eq_ignore_ascii_case(&second)).then_some([first, second])
    };
    match q.rfind(" or ") {
        Some(at) => joined(at, 4),
        None => joined(q.find(" and ")?, 5),
    }
}

/// The two names a yes/no question asks about (`Was Orla Dene formed before Mira Holt?`): its runs of capitalised words, where there are exactly two (the question's own
/// first word is not one). `None` otherwise.
pub fn two_names(question: &str) -> Option<[String; 2]> {
    let words: Vec<&str> = question
        .trim()
        .trim_end_matches('?')
        .split_whitespace()
        .collect();
    let skip = usize::from(words.first().is_some_and(|w| QUESTION_WORDS.contains(w)));
    let mut runs = Vec::new();
    let mut i = skip;
    while i < words.len() {
        if !is_name_word(words[i]) {
            i += 1;
            continue;
        }
        let name = leading_name(&words[i..].join(" "))?;
        i += name.split_whitespace().count().max(1);
        runs.push(name.trim_end_matches("'s").to_string());
    }
    let [first, second]: [String; 2] = runs.try_into().ok()?;
    (!first.eq_ignore_ascii_case(&second)).then_some([first, second])
}

/// The words a question starts with that are not names though capitalised.
const QUESTION_WORDS: [&str; 17] = [
    "Which", "Who", "Whom", "Whose", "What", "When", "Where", "Why", "How", "Is", "Are", "Was",
    "Were", "Did", "Does", "Do", "Has",
];

/// Whether a word starts a name: a capital letter or a digit, after any punctuation
/// (`"Throb"`, `...And`).
fn is_name_word(word: &str) -> bool {
    word.trim_start_matches(|c: char| c.is_ascii_punctuation())
        .starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit())
}

/// Lower case words that may join the words of one name (`Bank of America`, `Géza von Cziffra`).
fn is_joining(word: &str) -> bool {
    ["of", "the", "and", "de", "von", "van", "du", "la", "&"].contains(&word)
}

/// The name `text` starts with, once any lower case words before it are left out (`the
/// birth of Ilsa Brandt` → `Ilsa Brandt`). Joining words inside it are kept.
fn leading_name(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let start = words.iter().position(|w| is_name_word(w))?;
    let mut end = start + 1;
    while end < words.len() && !ends_clause(words[end - 1]) {
        if is_name_word(words[end]) {
            end += 1;
        } else if is_joining(words[end]) && words.get(end + 1).is_some_and(|w| is_name_word(w)) {
            end += 2;
        } else {
            break;
        }
    }
    clean(&words[start..end])
}

/// Whether a word ends a clause, and so a name: a comma, semicolon or colon after it, or a
/// full stop after a word of three letters or more (`Brewer.`, not `E.`, `St.` or `U.S.`).
fn ends_clause(word: &str) -> bool {
    word.ends_with([',', ';', ':'])
        || word
            .strip_suffix('.')
            .is_some_and(|stem| stem.chars().count() > 2 && !stem.contains('.'))
}

/// The name `text` ends with: its last run of capitalised words (`Which band was formed first
/// The Exies` → `The Exies`).
fn trailing_name(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut start = words.len();
    while start > 0 {
        let w = words[start - 1];
        if is_name_word(w) {
            start -= 1;
        } else if is_joining(w) && start >= 2 && is_name_word(words[start - 2]) {
            start -= 2;
        } else {
            break;
        }
    }
    // A question's own first word ("Which") is not a name.
    if start == 0 && words.first().is_some_and(|w| QUESTION_WORDS.contains(w)) {
        start = 1;
    }
    clean(words.get(start..)?)
}

fn clean(words: &[&str]) -> Option<String> {
    let name = words
        .join(" ")
        .trim_matches(|c: char| c.is_ascii_punctuation() && c != '.' && c != '"' && c != '\'')
        .to_string();
    (!name.is_empty() && words.len() <= 8).then_some(name)
}

/// Lower case letters and digits, single-spaced: how names are matched.
fn folded(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `answer` names `side` (one holds the other, as whole words).
pub fn names(answer: &str, side: &str) -> bool {
    let (a, s) = (
        format!(" {} ", folded(answer)),
        format!(" {} ", folded(side)),
    );
    s.trim().len() > 1 && (a.contains(&s) || s.contains(&a) && a.trim().len() > 1)
}

/// The shown passage about `side`: the first whose document title and the side's name hold
/// one another, else the first whose text names the side. `None` where no shown passage names
/// it.
pub fn passage_of(index: &Index, shown: &[ChunkId], side: &str) -> Option<ChunkId> {
    let chunks: Vec<_> = shown
        .iter()
        .filter_map(|&id| index.row_of(id))
        .map(|row| index.chunk(row))
        .collect();
    let side = folded(side);
    let titled = chunks.iter().find(|c| {
        let title = folded(&c.doc.title);
        title.len() > 2 && (title.contains(&side) || side.contains(&title))
    });
    titled
        .or_else(|| {
            chunks
                .iter()
                .find(|c| format!(" {} ", folded(c.text())).contains(&format!(" {side} ")))
        })
        .map(|c| c.id())
}

/// A value a passage states: a year, with the month and day written before it where they
/// are (`August 3, 1963`, `3 August 1963`), or a number with the word after it (its unit,
/// lower case; empty where there is none).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Date {
        year: i32,
        month: Option<u8>,
        day: Option<u8>,
    },
    Number {
        value: f64,
        unit: String,
    },
}

/// One value of a passage and the words it is written with there (`1997`, `2.5 million`,
/// `1,234 km²`): the model weighs the written form (a date's year alone).
#[derive(Debug, Clone, PartialEq)]
pub struct Stated {
    pub value: Value,
    pub text: String,
}

impl fmt::Display for Stated {
    /// The written form, and a date's month and day where the passage gives them
    /// (`1963 (1963-08-03)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)?;
        match self.value {
            Value::Date {
                year,
                month: Some(month),
                day,
            } => match day {
                Some(day) => write!(f, " ({year:04}-{month:02}-{day:02})"),
                None => write!(f, " ({year:04}-{month:02})"),
            },
            _ => Ok(()),
        }
    }
}

/// What a comparison looks for, as the answer model weighs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    Earlier,
    Later,
    Larger,
    Smaller,
}

impl Wanted {
    /// Each kind with the word the model's choice among them is weighed as; the last choice,
    /// that no date or number decides, has no kind.
    pub const CHOICES: [(Option<Wanted>, &'static str); 5] = [
        (Some(Wanted::Earlier), "earlier"),
        (Some(Wanted::Later), "later"),
        (Some(Wanted::Larger), "larger"),
        (Some(Wanted::Smaller), "smaller"),
        (None, "neither"),
    ];

    pub fn of_dates(self) -> bool {
        matches!(self, Wanted::Earlier | Wanted::Later)
    }
}

impl fmt::Display for Wanted {
    /// The word the model weighs it as.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (_, word) = Wanted::CHOICES
            .iter()
            .find(|(kind, _)| *kind == Some(*self))
            .expect("every kind is a choice");
        f.write_str(word)
    }
}

/// The values `text` states that `wanted` compares (years for dates, other numbers for
/// numbers), each once, in order, at most [`MAX_CANDIDATES`]. Every four-digit number from
/// 1000 to 2999 is a year: among dates it counts, among numbers it does not.
pub fn values_in(text: &str, wanted: Wanted) -> Vec<Stated> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '.' || c == ',' || c == '²' || c == '³'))
        .map(|w| w.trim_matches(|c| c == '.' || c == ','))
        .filter(|w| !w.is_empty())
        .collect();
    let mut found: Vec<Stated> = Vec::new();
    let mut i = 0;
    while i < words.len() && found.len() < MAX_CANDIDATES {
        let word = words[i];
        let next = words.get(i + 1).copied().unwrap_or("");
        // A day beside a month's name is part of a date, not a number (`17 April`, `April 17`).
        let dated = is_month(next) || i > 0 && is_month(words[i - 1]);
        i += 1;
        let stated = match year(word).map(i32::from) {
            Some(year) if wanted.of_dates() => {
                let before = |back: usize| (i - 1).checked_sub(back).map(|j| words[j]);
                let (month, day) = match (before(2), before(1)) {
                    (Some(m), Some(d)) if is_month(m) && day(d).is_some() => (month(m), day(d)),
                    (Some(d), Some(m)) if is_month(m) && day(d).is_some() => (month(m), day(d)),
                    (_, Some(m)) if is_month(m) => (month(m), None),
                    _ => (None, None),
                };
                Stated {
                    value: Value::Date { year, month, day },
                    text: word.to_string(),
                }
            }
            // Among numbers a year is left out, with or without a word after it (`the 2010
            // census`, `in 1981`): a quantity from 1,000 to 2,999 is mostly written with its
            // comma, and one without it is lost.
            Some(_) => continue,
            _ if dated => continue,
            _ if wanted.of_dates() => continue,
            _ => {
                let Some(mut value) = plain_number(word) else {
                    continue;
                };
                let mut text = word.to_string();
                let mut after = next;
                if let Some(scale) = multiplier(after) {
                    value *= scale;
                    text = format!("{text} {after}");
                    i += 1;
                    after = words.get(i).copied().unwrap_or("");
                }
                let unit = if is_unit(after) {
                    text = format!("{text} {after}");
                    after.to_lowercase()
                } else {
                    String::new()
                };
                Stated {
                    value: Value::Number { value, unit },
                    text,
                }
            }
        };
        if !found.iter().any(|f| f.text == stated.text) {
            found.push(stated);
        }
    }
    found
}

/// `1,234.5` as 1234.5 (commas between groups of three digits only).
fn plain_number(word: &str) -> Option<f64> {
    if !word.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut groups = word.split(',');
    let mut digits = groups.next()?.to_string();
    for group in groups {
        if group.split('.').next().unwrap_or("").len() != 3 {
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
        "billion" => 1e9,
        "trillion" => 1e12,
        _ => return None,
    })
}

fn is_month(word: &str) -> bool {
    month(word).is_some()
}

/// Whether the word after a number names what it counts or measures: a word of letters that
/// is not a joining word.
fn is_unit(word: &str) -> bool {
    word.starts_with(char::is_alphabetic)
        && ![
            "and", "or", "to", "in", "on", "of", "the", "a", "an", "at", "by", "for", "as", "bc",
            "ad", "ce", "with", "from", "when", "was", "is",
        ]
        .contains(&word.to_ascii_lowercase().as_str())
}

/// Why two values give no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Numbers of different units.
    Unlike(String, String),
    /// Equal values: neither side is wanted.
    Equal,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Unlike(a, b) => write!(f, "their units differ ({a} against {b})"),
            Refusal::Equal => f.write_str("they are equal"),
        }
    }
}

/// The side (0 or 1) whose value is the one wanted. A number with no unit takes the other's
/// unit (`1,200` and `900 km`). Dates of one year compare by month and day only where both
/// give them.
pub fn pick(values: [&Value; 2], wanted: Wanted) -> Result<usize, Refusal> {
    let both_dated = values.iter().all(|v| {
        matches!(
            v,
            Value::Date {
                month: Some(_),
                day: Some(_),
                ..
            }
        )
    });
    let magnitude = |v: &Value| match *v {
        Value::Date { year, month, day } if both_dated => {
            f64::from(year)
                + f64::from(month.unwrap_or(0)) / 13.0
                + f64::from(day.unwrap_or(0)) / 13.0 / 32.0
        }
        Value::Date { year, .. } => f64::from(year),
        Value::Number { value, .. } => value,
    };
    if let [Value::Number { unit: a, .. }, Value::Number { unit: b, .. }] = values {
        if !a.is_empty() && !b.is_empty() && a != b {
            return Err(Refusal::Unlike(a.clone(), b.clone()));
        }
    }
    let (x, y) = (magnitude(values[0]), magnitude(values[1]));
    if x == y {
        return Err(Refusal::Equal);
    }
    let second_larger = y > x;
    Ok(usize::from(match wanted {
        Wanted::Later | Wanted::Larger => second_larger,
        Wanted::Earlier | Wanted::Smaller => !second_larger,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Value {
        fn year(year: i32) -> Self {
            Value::Date {
                year,
                month: None,
                day: None,
            }
        }
    }

    fn sides_of(q: &str) -> Option<[String; 2]> {
        sides(q)
    }

    #[test]
    fn finds_the_two_sides_a_question_offers() {
        let both = |a: &str, b: &str| Some([a.to_string(), b.to_string()]);
        assert_eq!(
            sides_of("Which journal was published first, Harbor Notes or Kessel Review?"),
            both("Harbor Notes", "Kessel Review")
        );
        assert_eq!(
            sides_of("Which band was formed first The Vellows or Orla Dene ?"),
            both("The Vellows", "Orla Dene")
        );
        assert_eq!(
            sides_of("Which came first the forming of The Vellows or the birth of Ilsa Brandt?"),
            both("The Vellows", "Ilsa Brandt")
        );
        assert_eq!(
            sides_of("Which tree is taller, the Velmora Oak or the Kessel Pine?"),
            both("Velmora Oak", "Kessel Pine")
        );
        assert_eq!(
            sides_of("Who was born later, Géza von Cziffra or Bank of America's founder?"),
            both("Géza von Cziffra", "Bank of America's")
        );
        assert_eq!(
            sides_of("Which came out first, ...And Justice or The Vellows?"),
            both("...And Justice", "The Vellows")
        );
        assert_eq!(
            sides_of("Orla Dene and Mira Holt toured in the 1990s. Which formed first?"),
            both("Orla Dene", "Mira Holt")
        );
        assert_eq!(
            sides_of("Which club came first, SV Kessel St. Marta or Velmora F.C.?"),
            both("SV Kessel St. Marta", "Velmora F.C.")
        );
        assert_eq!(sides_of("Who wrote the novel?"), None);
        assert_eq!(
            two_names("Was Orla Dene formed before Mira Holt?"),
            both("Orla Dene", "Mira Holt")
        );
        assert_eq!(
            two_names("Is Ilsa Brandt's band older than the band Orla Dene?"),
            both("Ilsa Brandt", "Orla Dene")
        );
        assert_eq!(
            two_names("Was The Harbor by Ilsa Brandt published before Kessel?"),
            None
        );
        // Two names joined by "and" read as one: "are A and B both …" compares no values.
        assert_eq!(
            two_names("Are Ilsa Brandt and Mira Holt from the same town?"),
            None
        );
        assert_eq!(sides_of("Is it red or blue?"), None);
    }

    #[test]
    fn an_answer_names_a_side_by_whole_words() {
        assert!(names("The Exies", "The Exies"));
        assert!(names("Nicholas Lofton \"Nick\" Hexum", "Hexum"));
        assert!(names("Exies", "The Exies"));
        assert!(!names("Exi", "The Exies"));
        assert!(!names("not found", "The Exies"));
    }

    fn texts(values: &[Stated]) -> Vec<&str> {
        values.iter().map(|v| v.text.as_str()).collect()
    }

    #[test]
    fn lists_the_years_or_the_numbers_a_passage_states() {
        let text = "The band formed in 1997 in Los Angeles, played 2,000 shows (March 3, 2004) \
                    and sold 2.5 million records; again in 1997. The tower is 330 m tall.";
        assert_eq!(
            texts(&values_in(text, Wanted::Earlier)),
            vec!["1997", "2004"]
        );
        assert_eq!(
            texts(&values_in(
                "It opened in 1997 with 2000 seats.",
                Wanted::Later
            )),
            vec!["1997", "2000"]
        );
        assert!(values_in("It opened in 1997 with 2000 seats.", Wanted::Larger).is_empty());
        let numbers = values_in(text, Wanted::Larger);
        assert_eq!(
            texts(&numbers),
            vec!["2,000 shows", "2.5 million records", "330 m"]
        );
        assert_eq!(
            numbers[1].value,
            Value::Number {
                value: 2_500_000.0,
                unit: "records".into()
            }
        );
        assert_eq!(
            texts(&values_in(
                "At the 2010 census it had 2,614 people, 2500 trees.",
                Wanted::Larger
            )),
            vec!["2,614 people"]
        );
        // Days of dates and years are not numbers.
        assert_eq!(
            texts(&values_in(
                "Born 17 April 1967 (and on April 18), in 1981 Mercyful Fate had 5 members.",
                Wanted::Larger
            )),
            vec!["5 members"]
        );
    }

    #[test]
    fn picks_the_wanted_side() {
        let (a, b) = (Value::year(1939), Value::year(1976));
        assert_eq!(pick([&a, &b], Wanted::Earlier), Ok(0));
        assert_eq!(pick([&a, &b], Wanted::Later), Ok(1));
        let num = |value: f64, unit: &str| Value::Number {
            value,
            unit: unit.into(),
        };
        let (x, y) = (num(1200.0, ""), num(900.0, "km"));
        assert_eq!(pick([&x, &y], Wanted::Larger), Ok(0));
        assert_eq!(pick([&x, &y], Wanted::Smaller), Ok(1));
        assert_eq!(
            pick([&num(3.0, "km"), &num(5.0, "miles")], Wanted::Larger),
            Err(Refusal::Unlike("km".into(), "miles".into()))
        );
        assert_eq!(pick([&a, &a], Wanted::Later), Err(Refusal::Equal));
        // One year: the month and day decide where both sides give them.
        let date = |month, day| Value::Date {
            year: 1963,
            month: Some(month),
            day: Some(day),
        };
        assert_eq!(pick([&date(12, 26), &date(8, 3)], Wanted::Earlier), Ok(1));
        let (year_only, dated) = (Value::year(1963), date(8, 3));
        assert_eq!(
            pick([&year_only, &dated], Wanted::Earlier),
            Err(Refusal::Equal)
        );
    }
}
