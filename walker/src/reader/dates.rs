//! The dates a question names, and whether a source holds them: an answer whose cited
//! sources hold none of the days or months the question names is about another document
//! (last year's report, another invoice), and the answer step says "not found" instead. One
//! date held is enough: a question about two reports may be answered in part from one.
//!
//! Only days and months of a year count: a bare year in a question often qualifies an earlier
//! hop ("the 1988 film whose composer…"), not the passage that answers. Read forms:
//! `2024-06-12`, `2024-06`, `12 June 2024`, `June 12, 2024`, `June 2024`, `June of 2024`,
//! with month names in full or as three-letter abbreviations (`Sept.` too). A month name
//! counts only capitalised ("may" is a verb).

use std::fmt;

/// A day or a month of a year.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Date {
    Day { year: u16, month: u8, day: u8 },
    Month { year: u16, month: u8 },
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Date::Day { year, month, day } => {
                write!(f, "{day} {} {year}", MONTHS[usize::from(month) - 1])
            }
            Date::Month { year, month } => write!(f, "{} {year}", MONTHS[usize::from(month) - 1]),
        }
    }
}

impl Date {
    fn month_of(self) -> (u16, u8) {
        match self {
            Date::Day { year, month, .. } | Date::Month { year, month } => (year, month),
        }
    }
}

/// The month a word names (1–12): a capitalised full name or three-letter abbreviation, with
/// or without a full stop (`Sept` too).
pub(super) fn month(word: &str) -> Option<u8> {
    let word = word.strip_suffix('.').unwrap_or(word);
    if !word.starts_with(|c: char| c.is_ascii_uppercase()) || word.len() < 3 {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| {
            let m = m.to_ascii_lowercase();
            m == lower
                || (lower.len() == 3 && m.starts_with(&lower))
                || (m == "september" && lower == "sept")
        })
        .map(|i| i as u8 + 1)
}

pub(super) fn year(word: &str) -> Option<u16> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| (1000..=2999).contains(y))
}

/// A day of the month: `12`, `12th`, `1st`.
pub(super) fn day(word: &str) -> Option<u8> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    (1..=2)
        .contains(&digits.len())
        .then(|| digits.parse().ok())
        .flatten()
        .filter(|d| (1..=31).contains(d))
}

/// `2024-06-12` or `2024-06`.
fn iso(word: &str) -> Option<Date> {
    let mut parts = word.split('-');
    let year = year(parts.next()?)?;
    let month_part = parts.next()?;
    if month_part.len() != 2 {
        return None;
    }
    let month: u8 = month_part.parse().ok().filter(|m| (1..=12).contains(m))?;
    match parts.next() {
        None => Some(Date::Month { year, month }),
        Some(d) if d.len() == 2 && parts.next().is_none() => {
            let day: u8 = d.parse().ok().filter(|d| (1..=31).contains(d))?;
            Some(Date::Day { year, month, day })
        }
        Some(_) => None,
    }
}

/// The words of `text`: runs of letters, digits, full stops inside abbreviations and hyphens
/// inside ISO dates; other punctuation separates.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '.'))
        .map(|w| w.trim_matches(|c: char| c == '-' || c == '.'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Every day and month `text` names, in order, each once.
pub fn named(text: &str) -> Vec<Date> {
    // A word ending a sentence keeps no full stop, so `June.` and `June` read alike.
    let words = words(text);
    let mut found: Vec<Date> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let next = |k: usize| words.get(i + k).copied().unwrap_or("");
        let (date, used) = if let Some(d) = iso(w) {
            (Some(d), 1)
        } else if let (Some(day), Some(month), Some(year)) = (day(w), month(next(1)), year(next(2)))
        {
            (Some(Date::Day { year, month, day }), 3)
        } else if let Some(month) = month(w) {
            if let (Some(day), Some(year)) = (day(next(1)), year(next(2))) {
                (Some(Date::Day { year, month, day }), 3)
            } else if let Some(year) = year(next(1)) {
                (Some(Date::Month { year, month }), 2)
            } else if let ("of", Some(year)) = (next(1), year(next(2))) {
                (Some(Date::Month { year, month }), 3)
            } else {
                (None, 1)
            }
        } else {
            (None, 1)
        };
        if let Some(date) = date {
            if !found.contains(&date) {
                found.push(date);
            }
        }
        i += used;
    }
    found
}

/// Whether `text` holds `date`: the same day, or for a month any day of it or the month.
pub fn holds(text_dates: &[Date], date: Date) -> bool {
    match date {
        Date::Day { .. } => text_dates.contains(&date),
        Date::Month { .. } => text_dates.iter().any(|d| d.month_of() == date.month_of()),
    }
}

/// The days and months `question` names, where `sources` hold none of them; `None` where
/// it names none (then `sources` are not read) or a source holds one.
pub fn unheld<S: AsRef<str>>(
    question: &str,
    sources: impl IntoIterator<Item = S>,
) -> Option<Vec<Date>> {
    let asked = named(question);
    if asked.is_empty() {
        return None;
    }
    let held: Vec<Date> = sources
        .into_iter()
        .flat_map(|source| named(source.as_ref()))
        .collect();
    let any_held = asked.iter().any(|&date| holds(&held, date));
    (!any_held).then_some(asked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(year: u16, month: u8, day: u8) -> Date {
        Date::Day { year, month, day }
    }

    fn month(year: u16, month: u8) -> Date {
        Date::Month { year, month }
    }

    #[test]
    fn reads_each_form_once() {
        let text = "Dated 2024-06-12, revised 12 June 2024 and June 14, 2024; see the \
                    March 2024 report, the minutes of December of 2023, Sept. 2022 and 2021-07.";
        assert_eq!(
            named(text),
            vec![
                day(2024, 6, 12),
                day(2024, 6, 14),
                month(2024, 3),
                month(2023, 12),
                month(2022, 9),
                month(2021, 7),
            ]
        );
        assert_eq!(named("On the 3rd Feb 1999."), vec![day(1999, 2, 3)]);
    }

    #[test]
    fn bare_years_verbs_and_numbers_are_not_dates() {
        for text in [
            "Which 1988 film may 2024 viewers like?",
            "It rose 12 percent in 2024, costing 2024-13-01 units.",
            "Pumps 12 and 14 were marched 2024 metres.",
        ] {
            assert_eq!(named(text), vec![], "{text}");
        }
    }

    #[test]
    fn a_month_is_held_by_any_of_its_days() {
        let source = named("date: 2024-03-19\nAnnual inspection.");
        assert!(holds(&source, month(2024, 3)));
        assert!(holds(&source, day(2024, 3, 19)));
        assert!(!holds(&source, day(2024, 3, 18)));
        assert!(!holds(&source, month(2024, 4)));
    }

    #[test]
    fn unheld_where_the_sources_hold_none_of_the_dates_named() {
        let question = "What did the March 2024 report and the invoice of 2023-11-02 say?";
        let report = "Annual inspection, 19 March 2024.";
        let invoice = "Invoice date: 2 November 2023.";
        let other = "Invoice date: 3 November 2023.";
        assert_eq!(unheld(question, [report, invoice]), None);
        assert_eq!(
            unheld(question, [report]),
            None,
            "one date held answers in part"
        );
        assert_eq!(
            unheld(question, [other]),
            Some(vec![month(2024, 3), day(2023, 11, 2)])
        );
        assert_eq!(
            unheld(question, [""; 0]),
            Some(vec![month(2024, 3), day(2023, 11, 2)])
        );
        assert_eq!(unheld("Who founded it in 1999?", [invoice]), None);
        assert_eq!(month(2024, 3).to_string(), "March 2024");
        assert_eq!(day(2023, 11, 2).to_string(), "2 November 2023");
    }
}
