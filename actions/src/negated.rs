//! What a request says not to do: "Just show me, don't clear anything", "the section's
//! settings, not the threads inside it", "flag it rather than removing it". Such a clause
//! names the operation the user does not want, in words an embedding and a small model's
//! reading both take for what is asked; in the labelled sets it is where the near neighbour
//! set as a trap is named. [`affirmed`] is the request without them, for finding and picking
//! the operation (the calls still read the whole request).

/// Words that open a negated clause at its start ("…, don't clear anything").
const NEGATIONS: [&str; 4] = ["dont", "don't", "don’t", "never"];

/// Words a clause-opening negation may follow and that go with it ("so don't…").
const JOINERS: [&str; 6] = ["and", "but", "so", "just", "please", "then"];

/// Words after "not" that make it negate a thing named next ("not the threads", "not just
/// the people in it") rather than a verb ("is not working").
const NOT_BEFORE: [&str; 13] = [
    "the", "a", "an", "just", "only", "his", "her", "their", "its", "my", "our", "any", "every",
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

/// `request` without the clauses that say what not to do: from a clause-opening "don't" or
/// "never" (with an "and", "but", "so" or "just" before it), a "not" before a thing ("not
/// the threads"), "rather than" or "instead of", up to the next clause-ending mark. Quoted
/// text is kept whole, and so is a request that would keep fewer than three words.
pub(crate) fn affirmed(request: &str) -> String {
    let words = words_of(request);
    let mut cut: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let word = &words[at];
        let next = words.get(at + 1).map(|w| w.lower.as_str());
        let opens_negation = if word.quoted {
            None
        } else if NEGATIONS.contains(&word.lower.as_str())
            || (word.lower == "do" && next == Some("not"))
        {
            let joined = at > 0
                && JOINERS.contains(&words[at - 1].lower.as_str())
                && !words[at].opens_clause;
            if word.opens_clause {
                Some(at)
            } else if joined {
                Some(at - 1)
            } else {
                None
            }
        } else if (word.lower == "not" && next.is_some_and(|n| NOT_BEFORE.contains(&n)))
            || (word.lower == "rather" && next == Some("than"))
            || (word.lower == "instead" && next == Some("of"))
        {
            Some(at)
        } else {
            None
        };
        let Some(from) = opens_negation else {
            at += 1;
            continue;
        };
        // The clause runs to the word before the next one that opens a clause.
        let mut to = at + 1;
        while to < words.len() && !words[to].opens_clause && !words[to].quoted {
            to += 1;
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
/// the first word.
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
    out.trim_end().to_string()
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
        ] {
            assert_eq!(affirmed(request), kept, "{request}");
        }
    }

    #[test]
    fn negations_inside_a_clause_quotes_and_whole_requests_are_kept() {
        for request in [
            // What the user lacks is not what they ask not to do.
            "Delete group 31. I don't know why it is still there.",
            "It is not working since the upgrade, restart the backup.",
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
