//! What a request says not to do: "Just show me, don't clear anything", "the section's
//! settings, not the threads inside it", "flag it rather than removing it", "I don't need the
//! member list", "suspending won't do", "leave the rest of the thread alone". Such a clause
//! names the operation the user does not want, in words an embedding and a small model's
//! reading both take for what is asked; in the labelled sets it is where the near neighbour
//! set as a trap is named. [`affirmed`] is the request without them, for finding and picking
//! the operation (the calls still read the whole request).

use crate::review::LIST_JOINS;

/// Words that open a negated clause at its start ("…, don't clear anything").
const NEGATIONS: [&str; 4] = ["dont", "don't", "don’t", "never"];

/// What the user says they can do without, after "I don't" ("I don't need the member list").
const DO_WITHOUT: [&str; 2] = ["need", "want"];

/// How a clause that ends by saying its thing falls short ends ("suspending won't do",
/// "switching it off is not enough").
const FALLS_SHORT: [[&str; 2]; 6] = [
    ["won't", "do"],
    ["won’t", "do"],
    ["not", "do"],
    ["not", "enough"],
    ["isn't", "enough"],
    ["isn’t", "enough"],
];

/// How a clause ends that says its thing stays as it is ("keep her handle as it is", "the
/// name stays unchanged").
const AS_IT_IS: [&[&str]; 5] = [
    &["as", "it", "is"],
    &["as", "they", "are"],
    &["as", "is"],
    &["unchanged"],
    &["the", "same"],
];

/// Verbs of a clause that says its thing stays as it is.
const STAYS: [&str; 4] = ["stays", "stay", "remains", "remain"];

/// The most words of a list's last part after a comma that a negation before it reaches
/// ("…, groups or settings.").
const LIST_TAIL: usize = 4;

/// How a clause that opens with "no" ends when it says its thing is not wanted ("no password
/// reset needed").
const NOT_NEEDED: [&str; 4] = ["needed", "necessary", "required", "wanted"];

/// Words a clause-opening negation may follow and that go with it ("so don't…").
const JOINERS: [&str; 6] = ["and", "but", "so", "just", "please", "then"];

/// Words after "not" that make it negate a thing named next ("not the threads", "not just
/// the people in it") rather than a verb ("is not working").
const NOT_BEFORE: [&str; 13] = [
    "the", "a", "an", "just", "only", "his", "her", "their", "its", "my", "our", "any", "every",
];

/// Words after a "not" that opens a clause that make it negate what is named next (", not
/// everything in his inbox", ", not what landed there", ", not anything she received", ",
/// not whatever landed in her inbox"); after a verb they do not ("renaming it is not what I
/// want").
const NOT_OPENING: [&str; 6] = [
    "everything",
    "anything",
    "whatever",
    "what",
    "what's",
    "what’s",
];

/// Marks that end the clause a negation is about.
fn ends_clause(c: char) -> bool {
    matches!(c, ',' | '.' | ';' | ':' | '!' | '?')
}

/// One word of the text and where it is.
struct Word {
    lower: String,
    start: usize,
    end: usize,
    /// A clause-ending mark comes just before it (or it opens the text).
    opens_clause: bool,
    /// It stands inside double quotes (what the user wants written: never cut).
    quoted: bool,
}

/// Whether the mark at byte `at` of `text` ends a clause: one of [`ends_clause`] with a space,
/// a closing quote or the end after it (not the dots of `.ics` or `site.tar.gz`).
fn ends_clause_at(text: &str, at: usize, c: char) -> bool {
    ends_clause(c)
        && text[at + c.len_utf8()..]
            .chars()
            .next()
            .is_none_or(|next| next.is_whitespace() || matches!(next, '"' | '”' | ')'))
}

fn words_of(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut opens = true;
    let mut quoted = false;
    let mut start = None;
    for (at, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        let in_word = c.is_alphanumeric() || matches!(c, '\'' | '’' | '-' | '_');
        match (in_word, start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                let word = &text[from..at];
                out.push(Word {
                    lower: word.to_lowercase(),
                    start: from,
                    end: at,
                    opens_clause: opens,
                    quoted,
                });
                opens = false;
                start = None;
            }
            _ => {}
        }
        if !in_word {
            if at < text.len() && ends_clause_at(text, at, c) {
                opens = true;
            }
            if matches!(c, '"' | '“' | '”') {
                quoted = !quoted;
            }
        }
    }
    out
}

/// `request` without the clauses that say what not to do: from a clause-opening "don't",
/// "never", "I don't need/want", "no need to" or "leave … alone" (with an "and", "but",
/// "so" or "just" before it), a "not" before a thing ("not the threads"), "rather than" or
/// "instead of", up to the next clause-ending mark; and a clause that ends saying its thing
/// "won't do" or "is not enough". Quoted text is kept whole, and so is a request that would
/// keep fewer than three words.
pub(crate) fn affirmed(request: &str) -> String {
    let words = words_of(request);
    // Where the clause of the word at `at` ends: before the next word that opens a clause.
    let clause_end = |at: usize| {
        let mut to = at + 1;
        while to < words.len() && !words[to].opens_clause && !words[to].quoted {
            to += 1;
        }
        to
    };
    let lower = |at: usize| words.get(at).map_or("", |w: &Word| w.lower.as_str());
    // Whether the clause ending before `to` ends saying its thing stays as it is.
    let ends_as_it_is = |to: usize| {
        AS_IT_IS.iter().any(|ending| {
            to >= ending.len()
                && ending
                    .iter()
                    .enumerate()
                    .all(|(k, w)| lower(to - ending.len() + k) == *w)
        })
    };
    let mut cut: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let word = &words[at];
        let to = clause_end(at);
        // Where a clause-opening negation starting at `at` starts the cut: at it, or at the
        // joiner before it ("so don't…").
        let at_opening = || {
            if word.opens_clause {
                Some(at)
            } else if at > 0 && JOINERS.contains(&lower(at - 1)) {
                Some(at - 1)
            } else {
                None
            }
        };
        let negation =
            |k: usize| NEGATIONS.contains(&lower(k)) || (lower(k) == "do" && lower(k + 1) == "not");
        // "don't…", "I don't need…", "no need to…", "leave … alone": where a clause opens.
        let opens_at_a_clause = negation(at)
            || (word.lower == "i"
                && negation(at + 1)
                && DO_WITHOUT.contains(&lower(at + if lower(at + 1) == "do" { 3 } else { 2 })))
            || (word.lower == "no" && lower(at + 1) == "need" && lower(at + 2) == "to")
            // "there's no need to email me": from "there".
            || (word.lower == "there's" || word.lower == "there’s" || (word.lower == "there" && lower(at + 1) == "is"))
                && (at + 1..(at + 3).min(to)).any(|k| lower(k) == "no" && lower(k + 1) == "need")
            // "…; no password reset needed."
            || (word.lower == "no" && to >= at + 2 && NOT_NEEDED.contains(&lower(to - 1)))
            || (word.lower == "leave" && (at + 1..to).any(|k| lower(k) == "alone"))
            // "so none of the sections, groups or settings"
            || (word.lower == "none" && lower(at + 1) == "of")
            // "keep his handle exactly as it is"
            || (matches!(word.lower.as_str(), "keep" | "leave") && ends_as_it_is(to));
        // "not the…", "rather than…", "instead of…": anywhere; "… won't do": a whole clause.
        let opens_here = (word.lower == "not"
            && (NOT_BEFORE.contains(&lower(at + 1))
                || (word.opens_clause && NOT_OPENING.contains(&lower(at + 1)))))
            || (word.lower == "rather" && lower(at + 1) == "than")
            || (word.lower == "instead" && lower(at + 1) == "of")
            || (word.opens_clause
                && to >= at + 2
                && FALLS_SHORT.contains(&[lower(to - 2), lower(to - 1)]))
            // "Her login name stays exactly as it is": a whole clause, or its part from
            // the last "and" or "but" before the verb ("his username is kev_covers and that
            // should stay as it is").
            || ((word.opens_clause || matches!(word.lower.as_str(), "and" | "but"))
                && (at + 1..to)
                    .find(|&k| STAYS.contains(&lower(k)))
                    .is_some_and(|verb| {
                        !(at + 1..verb).any(|k| matches!(lower(k), "and" | "but"))
                    })
                && ends_as_it_is(to));
        let opens_negation = if word.quoted {
            None
        } else if opens_at_a_clause {
            at_opening()
        } else {
            opens_here.then_some(at)
        };
        let Some(from) = opens_negation else {
            at += 1;
            continue;
        };
        // A list of things negated ("not the categories", "none of the sections") goes on
        // past its comma: ", groups or settings."
        let negates_things = matches!(word.lower.as_str(), "not" | "none" | "rather" | "instead");
        let mut to = to;
        while negates_things && to < words.len() {
            let tail = clause_end(to);
            let after_comma = request[words[to - 1].end..words[to].start].contains(',');
            let ends_sentence = request[words[tail - 1].end..]
                .trim_start()
                .chars()
                .next()
                .is_none_or(|c| matches!(c, '.' | '!' | '?'));
            let listed = tail - to <= LIST_TAIL
                && !JOINERS.contains(&lower(to))
                && (to..tail).any(|k| LIST_JOINS.contains(&lower(k)));
            if !(after_comma && ends_sentence && listed) || words[to].quoted {
                break;
            }
            to = tail;
        }
        cut.push((words[from].start, words[to - 1].end));
        at = to;
    }
    if cut.is_empty() {
        return request.to_string();
    }
    let mut out = String::with_capacity(request.len());
    let mut from = 0;
    for (start, end) in cut {
        out.push_str(&request[from..start]);
        from = end;
    }
    out.push_str(&request[from..]);
    let kept = words_of(&out).len();
    if kept < 3 {
        return request.to_string();
    }
    tidy(&out)
}

/// What cuts leave, tidied: single spaces, and of marks with nothing between them the one
/// that ends a sentence, the first if both do (", ." is "."; "? ," is "?"); none before
/// the first word, and none but a sentence's end after the last.
fn tidy(text: &str) -> String {
    let ends_sentence = |c: char| matches!(c, '.' | '?' | '!');
    let mut out = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        if ends_clause_at(text, at, c) {
            let trimmed = out.trim_end().len();
            out.truncate(trimmed);
            match out.chars().last() {
                None => {}
                Some(last) if ends_clause(last) && ends_sentence(c) && !ends_sentence(last) => {
                    out.pop();
                    out.push(c);
                }
                Some(last) if ends_clause(last) => {}
                Some(_) => out.push(c),
            }
        } else if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    // A cut at the end leaves no comma, semicolon or colon behind it.
    out.trim_end()
        .trim_end_matches([',', ';', ':'])
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::affirmed;

    #[test]
    fn what_not_to_do_is_left_out() {
        for (request, kept) in [
            (
                "Just show me what came in, don't clear anything.",
                "Just show me what came in.",
            ),
            (
                "The old thread is still up; don't retitle it. Start a fresh one.",
                "The old thread is still up. Start a fresh one.",
            ),
            (
                "I'm at the boathouse, so don't start a download here. Email me the link.",
                "I'm at the boathouse. Email me the link.",
            ),
            (
                "Show me the settings of the Repairs section, not the threads inside it.",
                "Show me the settings of the Repairs section.",
            ),
            (
                "Flag post 9 as spam rather than removing it; it is an advert.",
                "Flag post 9 as spam; it is an advert.",
            ),
            (
                "Get rid of the group itself, not just the people in it.",
                "Get rid of the group itself.",
            ),
            (
                "Show the messages she sent, not what's landed in her inbox.",
                "Show the messages she sent.",
            ),
            (
                "Only the ones he wrote, not everything in his inbox.",
                "Only the ones he wrote.",
            ),
            (
                "Only the ones she wrote, not anything she received.",
                "Only the ones she wrote.",
            ),
            (
                "Only the ones she wrote herself, not whatever landed in her inbox.",
                "Only the ones she wrote herself.",
            ),
            (
                "Sign him out everywhere; no password reset needed. I don't have his number.",
                "Sign him out everywhere. I don't have his number.",
            ),
            (
                "Just the forum's name and logo. It's for a poster, so none of the sections, groups or settings.",
                "Just the forum's name and logo. It's for a poster.",
            ),
            (
                "Show me the site's name, not the categories, groups or trust levels.",
                "Show me the site's name.",
            ),
            (
                "Change the name on jsmith's profile to John Smith. His login name stays exactly as it is.",
                "Change the name on jsmith's profile to John Smith.",
            ),
            (
                "Show Kim Adeyemi as her full name, keep her handle as it is, please.",
                "Show Kim Adeyemi as her full name, please.",
            ),
            (
                "Change it to Kevin; his username is kev_c and that should stay as it is.",
                "Change it to Kevin; his username is kev_c.",
            ),
            (
                "Download backup b1.tar.gz for me, and there's no need to email me about it.",
                "Download backup b1.tar.gz for me.",
            ),
            // A clause after one that says not to do something is not a list of its things.
            (
                "Don't delete topic 7, archive or close it.",
                "archive or close it.",
            ),
            (
                "Don't create anything yet. Show me every badge we have.",
                "Show me every badge we have.",
            ),
            (
                "Which messages has helena_v sent? Not the ones she received, only hers.",
                "Which messages has helena_v sent? only hers.",
            ),
            (
                "List the events as regular data, not an .ics export.",
                "List the events as regular data.",
            ),
            (
                "Show me the choir group's page. I don't need the member list.",
                "Show me the choir group's page.",
            ),
            (
                "The account is a spammer, so a suspension won't do: delete it.",
                "The account is a spammer, delete it.",
            ),
            (
                "Remove post 12; hiding it is not enough.",
                "Remove post 12.",
            ),
            (
                "Take down reply 40 - only that one, leave the thread alone",
                "Take down reply 40 - only that one",
            ),
            (
                "Retitle topic 8 to Spring Fair and leave the first post alone.",
                "Retitle topic 8 to Spring Fair.",
            ),
            (
                "I have the reset token abc123, so set the new password; no need to email her.",
                "I have the reset token abc123, so set the new password.",
            ),
        ] {
            assert_eq!(affirmed(request), kept, "{request}");
        }
    }

    #[test]
    fn negations_inside_a_clause_quotes_and_whole_requests_are_kept() {
        for request in [
            // What the user lacks is not what they ask not to do.
            "Delete group 31. I don't know why it is still there.",
            // What the users can do without is the thing to change.
            "We don't need the litter-pickers group any more, delete it.",
            // Left where it is, not left alone.
            "Leave a reply on topic 5 saying thanks.",
            "It is not working since the upgrade, restart the backup.",
            "Delete badge 31 for good, renaming it is not what I want.",
            "Post a reply saying \"don't forget the oars, not the old ones\" in topic 5.",
            "Don't send anything.",
        ] {
            assert_eq!(affirmed(request), request, "{request}");
        }
    }
}

#[cfg(test)]
mod request_sets {
    //! [`affirmed`] over the labelled request sets of `docs/data/actions`: what it cuts never
    //! holds a value the request gives for a required input.

    use serde_json::Value;

    use super::affirmed;
    use crate::labelled;

    #[test]
    fn what_is_cut_never_holds_a_value_the_request_gives() {
        let (mut cut, mut lost) = (0, Vec::new());
        for (file, request) in labelled::requests() {
            let text = request["request"].as_str().unwrap();
            let kept = affirmed(text);
            if kept == text {
                continue;
            }
            cut += 1;
            let values = request["required_params"].as_object().unwrap().values();
            for value in values {
                let value = match value {
                    Value::String(text) => text.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => continue,
                };
                if text.contains(&value) && !kept.contains(&value) {
                    lost.push(format!("{file} {}: {value}", request["id"]));
                }
            }
            println!("{text}\n  → {kept}");
        }
        println!("{cut} requests cut");
        assert!(cut > 20, "only {cut} cut");
        assert!(lost.is_empty(), "{lost:#?}");
    }
}
