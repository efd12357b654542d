//! What the `actions` strategy checks in a model's inputs before the executor sees them:
//! inputs grouped the way the model imagined (`{"body": {...}}`), names near an input's
//! (`id` for `noteId`), fields a closed object does not take, placeholders (`"<noteId>"`,
//! `""`, `[]`), values the user never gave (a name or code of theirs with characters added
//! among them), and a value the user gave once copied into several inputs. A dropped value
//! is replaced only by one the user wrote (their code inside it, the one enum value they
//! wrote), never by a new one: a required input dropped here is asked for.

use serde_json::{Map, Value};

pub(crate) use walkrag_walker::jsonl::squash;

use crate::action::{is_credential_name, words, Action, Input, Type};

/// Keys a model groups inputs under (`{"path": {...}, "body": {...}}`); their fields are
/// read as inputs when the action has no input of that name.
const GROUPS: [&str; 10] = [
    "body",
    "requestbody",
    "path",
    "query",
    "params",
    "parameters",
    "data",
    "json",
    "inputs",
    "payload",
];

/// The inputs to check, and what was changed on the way.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Reviewed {
    pub params: Map<String, Value>,
    /// One line per change, for the trace and the model.
    pub repairs: Vec<String>,
    /// Inputs whose text was dropped though some of its words are the user's: reworded
    /// rather than made up (`"reason": "Spamming is a serious offense."` for "for spamming").
    pub reworded: Vec<String>,
}

/// Reviews `params` for `action`. With `grounded`, a value whose words are not in `said` (what
/// the user wrote, and what the API answered) is dropped.
pub(crate) fn review(action: &Action, params: &Value, said: &str, grounded: bool) -> Reviewed {
    let mut out = Reviewed::default();
    let given = match params {
        Value::Object(map) => flatten(action, map, &mut out.repairs),
        Value::Null => Map::new(),
        // Not an object: left for `prepare` to explain.
        other => {
            out.params.insert("params".into(), other.clone());
            return out;
        }
    };
    // What the user asked for, without what they said not to want ("instead of her
    // Gravatar"): where an enum value is read from their words.
    let asked = Words::of(&crate::negated::affirmed(said));
    let said = Words::of(said);
    let open = action.body.as_ref().is_some_and(|b| b.open && b.fields);
    for (name, mut value) in given {
        let name = rename(action, &name, &out.params, &mut out.repairs);
        if value.is_null() {
            continue;
        }
        let input = action
            .inputs
            .iter()
            .find(|input| squash(&input.name) == squash(&name));
        if input.is_none() && is_credential_name(&name) {
            out.repairs.push(format!(
                "{name}: dropped, a credential is never taken from the model"
            ));
            continue;
        }
        if input.is_none() && !open {
            out.repairs.push(format!(
                "{name}: dropped, {} takes no such input",
                action.operation_id
            ));
            continue;
        }
        if let Some(input) = input {
            drop_unknown_fields(&input.schema, &mut value, &name, &mut out.repairs);
        }
        if is_placeholder(&value, &name) {
            out.repairs.push(format!(
                "{name}: dropped {value}, a placeholder, not a value"
            ));
            continue;
        }
        // A value outside the input's enum, where the user wrote exactly one of its values
        // (`"upload_type": "video"` for "a video for a post in the composer"): theirs, rather
        // than a tool error that sends the model back to choose.
        let outside = input.filter(|input| is_outside_enum(input, &value));
        if let Some(written) = outside
            .filter(|_| grounded)
            .and_then(|input| written_enum_value(input, &asked))
        {
            out.repairs.push(format!(
                "{name}: {value} is none of its values, read as {written}, the one value the \
                 user wrote"
            ));
            out.params.insert(name, written);
            continue;
        }
        // A name or code the user wrote, with characters added by the model.
        if let (true, Some(_), Value::String(text)) = (grounded, input, &value) {
            let code = said.code_within(text);
            if let Some(code) = code.filter(|_| !documented(action, &name, &value, &said)) {
                match code {
                    Code::Dressed(word) => {
                        out.repairs.push(format!(
                            "{name}: kept {word:?} of {value}: the user wrote only that"
                        ));
                        out.params.insert(name, Value::String(word));
                    }
                    Code::Extended => out.repairs.push(format!(
                        "{name}: dropped {value}: the user did not give it, only its start"
                    )),
                }
                continue;
            }
        }
        // A name where a required input takes a number, or words where it takes an id, a
        // username or a file name: the user named the thing another way, and no value of
        // theirs fits; dropped, so it is asked for rather than sent back to a model that has
        // nothing to put there. Words around one name or code the user wrote keep that
        // (`backup forum-2025-03-14.tar.gz`). (An optional input goes back to the model as a
        // tool error, which it corrects by leaving the input out.)
        let required = input.filter(|input| grounded && input.required);
        if let Some(why) = required.and_then(|input| not_its_kind(input, &value)) {
            match value.as_str().and_then(|text| said.one_code_among(text)) {
                Some(code) => {
                    out.repairs.push(format!(
                        "{name}: kept {code:?} of {value}: the user wrote only that"
                    ));
                    out.params.insert(name, Value::String(code));
                }
                None => out.repairs.push(format!(
                    "{name}: dropped {value}: {why}, the user gave none"
                )),
            }
            continue;
        }
        // One word the model joined from the user's words (`volunteer_milestones_dan` of
        // "volunteer milestones … drivetime_dan", `fundraising_drive` for a thread's id):
        // a name the user never wrote, where a required input takes an id, a username or a
        // file name. For an id, the one number the user wrote is theirs ("thread … number
        // 8034"); for a name, the one name or code they wrote that shares a word with it (the
        // model dressed it up). Else it is dropped, so it is asked for.
        if let Some(what) = required.and_then(|input| joined_from_words(input, &value, &said)) {
            let theirs = if what == Named::Id {
                said.one_number()
                    .map(|n| (n, "the one number the user wrote"))
            } else {
                value
                    .as_str()
                    .and_then(|text| said.one_code_sharing_a_part(text))
                    .map(|code| {
                        (
                            code,
                            "the one name the user wrote that shares a word with it",
                        )
                    })
            };
            match theirs {
                Some((theirs, why)) => {
                    out.repairs
                        .push(format!("{name}: {value} read as {theirs:?}, {why}"));
                    out.params.insert(name, Value::String(theirs));
                }
                None => out.repairs.push(format!(
                    "{name}: dropped {value}: words joined into {} the user never wrote",
                    what.noun()
                )),
            }
            continue;
        }
        let given = match (input, flag(&value)) {
            // An optional switch the user never named (`delete_posts: true`) is a guess; a
            // required one has no words of its own (`enabled` of "close the topic").
            (Some(input), true) => input.required || said.names(&input.name),
            _ => said.grounds(&value) || documented(action, &name, &value, &said),
        };
        if grounded && !given {
            // A required object the user gave in part (a group's new name, beside members
            // the model made up) keeps the part they gave, rather than asking for what they
            // said. An optional one goes whole, as before: given in part it is more often a
            // misreading (a topic's old title, a handle the user said to keep).
            let required = input.is_some_and(|input| input.required);
            if let Some(kept) = required.then(|| said.given_part(&value)).flatten() {
                out.repairs.push(format!(
                    "{name}: kept {kept} of {value}: the user did not give the rest"
                ));
                out.params.insert(name, kept);
                continue;
            }
            // A value of the input's enum the user did not write, where they wrote exactly one
            // other ("a new profile background" for `custom_emoji`): the model chose among
            // the values, and the user had said which.
            let written = input
                .filter(|_| value.is_string())
                .and_then(|input| written_enum_value(input, &asked));
            if let Some(written) = written {
                out.repairs.push(format!(
                    "{name}: {value} read as {written}, the one value the user wrote"
                ));
                out.params.insert(name, written);
                continue;
            }
            // Likewise a number its description states for a word the user did not write,
            // where they wrote the word of exactly one other ("1 for Gold … 3 for Bronze", for
            // "a bronze badge").
            let stated = input
                .filter(|_| value.is_number())
                .and_then(|_| written_stated_number(action, &name, &said));
            if let Some(stated) = stated {
                out.repairs.push(format!(
                    "{name}: {value} read as {stated}, the number stated for the user's word"
                ));
                out.params.insert(name, stated);
                continue;
            }
            out.repairs
                .push(format!("{name}: dropped {value}: the user did not give it"));
            if said.shares_a_word(&value) {
                out.reworded.push(input.map_or(name, |i| i.name.clone()));
            }
            continue;
        }
        out.params.insert(name, value);
    }
    if grounded {
        whole_codes(action, &said, &mut out);
        one_input_per_value(action, &said, &mut out);
    }
    out
}

/// A required username or file name given as one word of a name or code the user wrote
/// (`sue` of "Sue … her forum account, sue_stacks"): the model cut the user's value short.
/// It becomes the one name or code of theirs holding that word, where no other input has
/// it already.
fn whole_codes(action: &Action, said: &Words, out: &mut Reviewed) {
    let cut: Vec<(String, String)> = out
        .params
        .iter()
        .filter_map(|(name, value)| {
            let input = action.input(name).filter(|input| input.required)?;
            let named = Named::by(input)
                .filter(|named| matches!(named, Named::Username | Named::FileName))?;
            let word = value.as_str()?.trim();
            if word.chars().count() < 3 || !word.chars().all(char::is_alphanumeric) {
                return None;
            }
            let code = said.one_code_holding(word, |code| named.fits(code))?;
            let taken = out.params.values().any(|other| {
                other
                    .as_str()
                    .is_some_and(|text| text.trim().eq_ignore_ascii_case(&code))
            });
            (!taken).then(|| (name.clone(), code))
        })
        .collect();
    for (name, code) in cut {
        if let Some(value) = out.params.insert(name.clone(), Value::String(code.clone())) {
            out.repairs.push(format!(
                "{name}: {value} read as {code:?}, the one name the user wrote that holds it"
            ));
        }
    }
}

/// The one required id of `action` that `reviewed` lacks, taken from the numbers the user
/// wrote in `messages` (theirs) by [`number_for_id`]: "the drivers' group, number 18",
/// "account #3318", "thread 5120". Nothing is taken where the action lacks several ids.
pub(crate) fn numbered_id(action: &Action, messages: &[String], reviewed: &mut Reviewed) {
    let lacking: Vec<&Input> = action
        .inputs
        .iter()
        .filter(|input| input.required && Named::by(input) == Some(Named::Id))
        .filter(|input| !reviewed.params.contains_key(&input.name))
        .collect();
    let [input] = lacking[..] else {
        return;
    };
    let held: Vec<&Value> = reviewed.params.values().collect();
    let Some((number, why)) = number_for_id(messages, &held) else {
        return;
    };
    reviewed
        .repairs
        .push(format!("{}: {number:?}, {why}", input.name));
    reviewed
        .params
        .insert(input.name.clone(), Value::String(number));
}

/// The number an id the model left out takes from `messages` (the user's): the one they
/// marked as a number ("number 18", "no. 7", "#3318"), else, where they marked none, the one
/// they wrote after a name for a thing ([`named_numbers`]: "thread 5120"; a year, 1900–2099,
/// is none: "the 2019 panto"). A number
/// that a value in `held` (the other inputs') holds is not the id's: "timestamp 1698865200",
/// "PostgreSQL 16" in a title. `None` where several remain, or none; with the reason, for the
/// repair.
fn number_for_id(messages: &[String], held: &[&Value]) -> Option<(String, &'static str)> {
    let held: Vec<String> = held
        .iter()
        .flat_map(|value| {
            value
                .to_string()
                .split(|c: char| !c.is_ascii_digit())
                .filter(|digits| !digits.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let the_one = |numbers: Vec<String>| -> Option<String> {
        let mut free = numbers.into_iter().filter(|n| !held.contains(n));
        let one = free.next()?;
        free.all(|other| other == one).then_some(one)
    };
    let marked: Vec<String> = messages.iter().flat_map(|m| marked_numbers(m)).collect();
    if !marked.is_empty() {
        return the_one(marked).map(|n| {
            (
                n,
                "the one number the user wrote after \"number\", \"no.\" or \"#\"",
            )
        });
    }
    let written: Vec<String> = messages.iter().flat_map(|m| named_numbers(m)).collect();
    the_one(written).map(|n| (n, "the one number the user wrote after a name for a thing"))
}

/// Whether `text` (the user's) gives a thing's number: one marked as a number ("number 14",
/// "#14") or written after a name for a thing ("topic 3318"), as [`number_for_id`] reads them.
pub(crate) fn gives_a_number(text: &str) -> bool {
    !marked_numbers(text).is_empty() || !named_numbers(text).is_empty()
}

/// The numbers of [`plain_numbers`] that `text` writes right after a word of letters that
/// names a thing ("thread 5120", "user 4471", "thread, 5120"), not after one that comes before a count ("with
/// 18 members", "within 24 hours", "the top 10"): a number that names a thing follows its
/// name, one that counts comes before what it counts.
fn named_numbers(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut named = Vec::new();
    for (at, pair) in words.windows(2).enumerate() {
        // "the panto thread, 5120, …": a comma may set the number apart from its name.
        let before = pair[0]
            .trim_end_matches(',')
            .to_lowercase()
            .replace('\u{2019}', "'");
        let names = before.chars().all(|c| c.is_alphabetic() || c == '\'')
            && !BEFORE_COUNTS.contains(&before.as_str())
            && !DATE_WORDS.contains(&before.as_str());
        // "Friday 4 October", "on 4 October": a day of the month, no thing's number ("May"
        // only as a name: "topic 88 may be closed" names topic 88).
        let day_of_month = !pair[1].ends_with(['.', '!', '?'])
            && words.get(at + 2).is_some_and(|after| {
                let month = after.trim_end_matches([',', '.', ';', ':', '!', '?']);
                DATE_WORDS.contains(&month.to_lowercase().as_str()) && month != "may"
            });
        if names && !day_of_month {
            named.extend(plain_numbers(pair[1]));
        }
    }
    named
}

/// Days and months, which a day of the month is written beside ("Friday 4 October",
/// "October 4"): a number next to one is a date.
const DATE_WORDS: [&str; 19] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
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

/// Words that come before a number that counts or measures, rather than names, a thing ("an
/// age": "turned 12", "aged 9").
const BEFORE_COUNTS: [&str; 41] = [
    "a", "an", "the", "to", "of", "in", "on", "at", "by", "for", "from", "with", "within", "after",
    "before", "since", "than", "over", "under", "about", "around", "and", "or", "top", "first",
    "last", "next", "every", "each", "only", "just", "me", "us", "nearly", "almost", "barely",
    "some", "turned", "turning", "aged", "age",
];

/// The numbers `text` holds as words of their own, years (1900 to 2099) left out: "the 2019
/// badge" names a thing, it is not its number.
fn plain_numbers(text: &str) -> impl Iterator<Item = String> + '_ {
    let year = |n: &str| n.len() == 4 && matches!(&n[..2], "19" | "20");
    bare_words(text)
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()))
        .filter(move |w| !year(w))
        .map(str::to_string)
}

/// The numbers `text` marks as numbers of a thing: after "number" or "no.", or after `#`.
fn marked_numbers(text: &str) -> Vec<String> {
    let digits = |word: &str| -> Option<String> {
        let word = word.trim_end_matches(|c: char| !c.is_alphanumeric());
        (!word.is_empty() && word.chars().all(|c| c.is_ascii_digit())).then(|| word.to_string())
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut marked = Vec::new();
    for (at, word) in words.iter().enumerate() {
        let lower = word.to_lowercase();
        if let Some(rest) = lower.strip_prefix('#') {
            marked.extend(digits(rest));
        } else if matches!(lower.as_str(), "number" | "no.") {
            marked.extend(words.get(at + 1).and_then(|next| digits(next)));
        }
    }
    marked
}

/// Why a string the model gave cannot be `input`'s value whatever the user meant: a name
/// for a number (`"id": "dvoss_88"` for an integer user id: no word of it is a number), or
/// several words for an id, a username or a file name (`"id": "Community Guidelines"` for a
/// topic's, `"filename": "last night's backup"`), or a number for a username (`"4471"` of
/// "user 4471"). `None` where it may be (a number written as a string is the validator's
/// to convert).
fn not_its_kind(input: &Input, value: &Value) -> Option<&'static str> {
    let name = squash(&input.name);
    let digits = |text: &str| !text.is_empty() && text.chars().all(|c| c.is_ascii_digit());
    let number = value.is_number() || value.as_str().is_some_and(|t| digits(t.trim()));
    if number && name.ends_with("username") {
        // "user 4471": the user's number, where the input takes their name.
        return Some("a number where it takes a username");
    }
    let Value::String(text) = value else {
        return None;
    };
    let numeric = matches!(input.ty, Type::Integer | Type::Number);
    if numeric && !text.split_whitespace().any(|w| w.parse::<f64>().is_ok()) {
        return Some("a name where it takes a number");
    }
    if !text.trim().contains(char::is_whitespace) {
        return None;
    }
    // An upload's `unique_identifier` is a code, never words ("Priya's laptop" of "Its
    // identifier is on Priya's laptop"); it is no [`Named::Id`], which a number the user
    // marks ("part 4") would fill.
    if name.ends_with("identifier") {
        return Some("words where it takes an identifier");
    }
    Some(match Named::by(input)? {
        Named::Id => "words where it takes an id",
        Named::Username => "words where it takes a username",
        Named::FileName => "words where it takes a file name",
    })
}

/// What an input that names one thing takes, by its name.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Named {
    /// `id`, `topic_id`, `postId`.
    Id,
    /// `username`, `target_username`, and `login` (a username or an e-mail address: as a
    /// name, the user's username).
    Username,
    /// `filename`, `file_name`.
    FileName,
}

impl Named {
    /// What `input` takes where it names one thing; `None` for any other input.
    fn by(input: &Input) -> Option<Self> {
        let name = squash(&input.name);
        if identifier_tokens(&input.name)
            .last()
            .is_some_and(|w| w == "id")
        {
            Some(Self::Id)
        } else if name.ends_with("username") || name == "login" {
            Some(Self::Username)
        } else if name.ends_with("filename") {
            Some(Self::FileName)
        } else {
            None
        }
    }

    /// Whether a name or code the user wrote can be this input's value: a file name has an
    /// extension, a username has none (`dana_notes.pdf` is a file, `dana_k` a user). Any
    /// number may be an id.
    fn fits(self, code: &str) -> bool {
        let extension = code
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && ext.chars().any(char::is_alphabetic));
        match self {
            Self::Id => true,
            Self::Username => {
                !extension
                    && code
                        .chars()
                        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
            }
            Self::FileName => extension,
        }
    }

    /// The thing, as a repair names it.
    fn noun(self) -> &'static str {
        match self {
            Self::Id => "an id",
            Self::Username => "a username",
            Self::FileName => "a file name",
        }
    }
}

/// Where `value` is one word the model joined with `_` or `-` from two or more words
/// (`fundraising_drive`), which the user did not write as it is, for an input that names one
/// thing ([`Named`]): what the input takes. For an id, words and the user's number joined count
/// too (`panto_thread_5120` of "the panto thread, 5120"), unless the user wrote the same code
/// with other marks (`SUP_4471` of `SUP-4471`). `None` otherwise: other codes with digits
/// and single words are read by the other checks.
fn joined_from_words(input: &Input, value: &Value, said: &Words) -> Option<Named> {
    let named = Named::by(input)?;
    let text = value.as_str()?.trim();
    let parts: Vec<&str> = text.split(['_', '-']).collect();
    let word = |part: &&str| part.chars().all(char::is_alphabetic);
    let joined = parts.len() >= 2
        && parts
            .iter()
            .all(|part| !part.is_empty() && part.chars().all(char::is_alphanumeric))
        && (parts.iter().all(word) || (named == Named::Id && parts.iter().any(word)));
    let written = said.lower.contains(&text.to_lowercase())
        || said.codes.iter().any(|code| squash(code) == squash(text));
    (joined && !written).then_some(named)
}

/// Whether `value` is a string that `input`'s enum does not hold.
fn is_outside_enum(input: &Input, value: &Value) -> bool {
    value.is_string() && !input.enum_values.is_empty() && !input.enum_values.contains(value)
}

/// The one value of `input`'s enum whose every word the user wrote (`profile_background` in
/// "a new profile background"); `None` where they wrote none or several. `said` is what they
/// asked for, without what they said not to want: "Make it her picture instead of her
/// Gravatar" writes `uploaded`'s word, not `gravatar`'s.
fn written_enum_value(input: &Input, said: &Words) -> Option<Value> {
    let mut written = input.enum_values.iter().filter(|value| {
        value.as_str().is_some_and(|text| {
            let words = tokens(text);
            !words.is_empty() && words.iter().all(|word| said.has(word))
        })
    });
    let one = written.next()?;
    written.next().is_none().then(|| one.clone())
}

/// A value the user wrote once and the model put into several inputs (`"Help Desk"` as a
/// category's name, color and icon; an upload's identifier as its list of parts too) stays in
/// one of them: the input the user named beside the value, else the one required input among
/// them. It is dropped from the others, so a required one is asked for. Where neither tells
/// them apart, the one of those required that the user named anywhere; else all keep it.
fn one_input_per_value(action: &Action, said: &Words, out: &mut Reviewed) {
    let mut copies: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (name, value) in &out.params {
        let Some(text) = literal(value) else {
            continue;
        };
        let words = tokens(&text);
        if words.is_empty() {
            continue;
        }
        match copies.iter_mut().find(|(seen, _)| *seen == words) {
            Some((_, names)) => names.push(name.clone()),
            None => copies.push((words, vec![name.clone()])),
        }
    }
    for (value, names) in copies.into_iter().filter(|(_, names)| names.len() > 1) {
        let Some(near) = said.around_only(&value) else {
            continue;
        };
        // The share of each input's name words written beside the value.
        let named: Vec<f32> = names
            .iter()
            .map(|name| {
                let mine = identifier_tokens(name);
                let found = mine
                    .iter()
                    .filter(|w| near.iter().any(|n| same_word(n, w)))
                    .count();
                found as f32 / mine.len().max(1) as f32
            })
            .collect();
        let best = named.iter().copied().fold(0.0, f32::max);
        let mut keep: Vec<&String> = names
            .iter()
            .zip(&named)
            .filter(|(_, share)| **share == best)
            .map(|(name, _)| name)
            .collect();
        if best == 0.0 || keep.len() > 1 {
            keep = names
                .iter()
                .filter(|n| action.input(n).is_some_and(|input| input.required))
                .collect();
        }
        if keep.len() > 1 {
            // Several required ones: the one the user named anywhere ("set the password for
            // username jlindqvist to Fjord-Lantern-82" gives the password, not the reset
            // token).
            let named: Vec<&String> = keep.iter().copied().filter(|n| said.names(n)).collect();
            if let [one] = named[..] {
                keep = vec![one];
            }
        }
        let [kept] = keep[..] else {
            continue;
        };
        let kept = kept.clone();
        for name in names.iter().filter(|n| **n != kept) {
            if let Some(dropped) = out.params.remove(name) {
                out.repairs.push(format!(
                    "{name}: dropped {dropped}, the user gave it once, for {kept}"
                ));
            }
        }
    }
}

/// The text of a value the user could have written: a string, a number, or a list of one.
fn literal(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !matches!(s.trim(), "true" | "false") => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(items) if items.len() == 1 => literal(&items[0]),
        _ => None,
    }
}

/// A boolean, or one written as a string.
fn flag(value: &Value) -> bool {
    match value {
        Value::Bool(_) => true,
        Value::String(s) => matches!(s.trim(), "true" | "false"),
        _ => false,
    }
}

/// Whether the input's own description states the value for the user's words: `2` for a post
/// action type described as "2 for like" when the user wrote "like", not when they wrote
/// "flag", and not `200` from "(default: 200)" or `1` from "between 1-100". A number counts
/// only with a word that follows it in the description (past "for", "is", …; up to the next
/// number) and that the user wrote. A one-word text value stated in the description counts
/// as it is. Enum values are not: picking one the user never named is a guess.
fn documented(action: &Action, name: &str, value: &Value, said: &Words) -> bool {
    let Some(description) = description_of(action, name) else {
        return false;
    };
    match value {
        Value::Number(number) => {
            let number = number.to_string();
            stated_numbers(&description)
                .any(|(stated, words)| stated == number && words.iter().any(|w| said.has(w)))
        }
        // Only short values: a description does not hold a title or a text.
        Value::String(s) if s.split_whitespace().count() == 1 => description.grounds(value),
        _ => false,
    }
}

/// The words of the description of `action`'s input `name`, where it has one.
fn description_of(action: &Action, name: &str) -> Option<Words> {
    let description = action.input(name)?.description.as_deref()?;
    Some(Words::of(description))
}

/// The numbers a description states, each with the (up to two) words that follow it, past
/// [`LINKS`] and up to the next number: ("1", [gold]), ("2", [silver]) of "1 for Gold, 2 for
/// Silver".
fn stated_numbers(description: &Words) -> impl Iterator<Item = (&str, Vec<&str>)> {
    let words = &description.words;
    words.iter().enumerate().filter_map(|(at, word)| {
        word.parse::<u64>().ok()?;
        let meaning = words[at + 1..]
            .iter()
            .take_while(|word| !word.chars().any(|c| c.is_ascii_digit()))
            .filter(|word| !LINKS.contains(&word.as_str()))
            .take(2)
            .map(String::as_str)
            .collect();
        Some((word.as_str(), meaning))
    })
}

/// The words for the values `action`'s input `name` takes, as [`tokens`] writes them: its
/// one-word enum values and the first word its description states each number for (`gold`,
/// `silver`, `bronze` of "1 for Gold, 2 for Silver, 3 for Bronze").
pub(crate) fn value_words(action: &Action, name: &str) -> Vec<String> {
    let Some(input) = action.input(name) else {
        return Vec::new();
    };
    let enumerated = input
        .enum_values
        .iter()
        .filter_map(Value::as_str)
        .filter(|value| value.chars().all(char::is_alphabetic))
        .map(token);
    let stated: Vec<String> = description_of(action, name)
        .map(|description| {
            stated_numbers(&description)
                .filter_map(|(_, words)| words.first().map(|w| w.to_string()))
                .collect()
        })
        .unwrap_or_default();
    let mut out: Vec<String> = enumerated.chain(stated).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The one number the description of `action`'s input `name` states for a word the user
/// wrote (3 of "3 for Bronze" for "a bronze badge"); `None` where they wrote the word of no
/// stated number, or of several.
fn written_stated_number(action: &Action, name: &str, said: &Words) -> Option<Value> {
    let description = description_of(action, name)?;
    let mut written: Vec<&str> = stated_numbers(&description)
        .filter(|(_, words)| words.iter().any(|word| said.has(word)))
        .map(|(number, _)| number)
        .collect();
    written.sort_unstable();
    written.dedup();
    match written.as_slice() {
        [one] => Some(Value::from(one.parse::<u64>().ok()?)),
        _ => None,
    }
}

/// Words of four letters or more that carry no meaning of their own, as [`tokens`] writes
/// them (a plural `s` dropped): a made-up text sharing only these with the user's is not
/// theirs reworded ([`Words::shares_a_word`]).
const FUNCTION_WORDS: [&str; 28] = [
    "with", "that", "these", "those", "from", "have", "been", "were", "will", "would", "could",
    "should", "what", "which", "when", "where", "there", "their", "them", "they", "then", "than",
    "into", "about", "also", "just", "only", "your",
];

/// Words between a documented number and what it stands for ("2 for like", "3 is bronze").
const LINKS: [&str; 8] = ["for", "is", "means", "a", "an", "the", "to", "as"];

/// Drops the fields of an object `value` (at `at`) that its `schema` does not list and does
/// not allow (`additionalProperties: false`), nested objects too: made-up fields (a group's
/// `members` where the API takes `usernames`) would only get the call refused, like an input
/// the action does not have.
fn drop_unknown_fields(schema: &Value, value: &mut Value, at: &str, repairs: &mut Vec<String>) {
    let (Value::Object(fields), Some(Value::Object(properties))) =
        (value, schema.get("properties"))
    else {
        return;
    };
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        fields.retain(|name, _| {
            let known = properties.contains_key(name);
            if !known {
                repairs.push(format!("{at}.{name}: dropped, no such field"));
            }
            known
        });
    }
    for (name, field) in fields.iter_mut() {
        if let Some(schema) = properties.get(name) {
            drop_unknown_fields(schema, field, &format!("{at}.{name}"), repairs);
        }
    }
}

/// Fields of groups (`body`, `path`, …) the action does not have as inputs, lifted to the top.
fn flatten(
    action: &Action,
    map: &Map<String, Value>,
    repairs: &mut Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in map {
        let group = GROUPS.contains(&squash(key).as_str()) && action.input(key).is_none();
        match value {
            Value::Object(fields) if group => {
                repairs.push(format!("{key}: its fields read as inputs"));
                for (name, field) in fields {
                    out.entry(name.clone()).or_insert_with(|| field.clone());
                }
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// The input a name given by the model means: itself when the action has it (or one equal
/// up to case, `_` and `-`, which `prepare` reads), else the one input not given yet whose
/// words contain all of the name's (`id` → `noteId`), else the name as given.
fn rename(
    action: &Action,
    name: &str,
    taken: &Map<String, Value>,
    repairs: &mut Vec<String>,
) -> String {
    let loose = squash(name);
    if action.inputs.iter().any(|i| squash(&i.name) == loose) {
        return name.to_string();
    }
    let mine = words(name);
    if mine.is_empty() {
        return name.to_string();
    }
    let open: Vec<&crate::Input> = action
        .inputs
        .iter()
        .filter(|input| !taken.contains_key(&input.name))
        .collect();
    let mut candidates: Vec<&str> = open
        .iter()
        .filter(|input| {
            let theirs = words(&input.name);
            mine.iter().all(|w| theirs.contains(w))
        })
        .map(|input| input.name.as_str())
        .collect();
    if candidates.is_empty() {
        // The other way round: a required input whose words are all in the name (`userId`
        // for `id`).
        candidates = open
            .iter()
            .filter(|input| input.required)
            .filter(|input| words(&input.name).iter().all(|w| mine.contains(w)))
            .map(|input| input.name.as_str())
            .collect();
    }
    match candidates[..] {
        [one] => {
            repairs.push(format!("{name}: read as {one}"));
            one.to_string()
        }
        _ => name.to_string(),
    }
}

/// `""`, `"<id>"`, `"{id}"`, `"string"`, the input's own name, `[]`, …: what a model writes
/// when it has no value.
fn is_placeholder(value: &Value, name: &str) -> bool {
    let text = match value {
        Value::String(text) => text.trim(),
        // An empty list or object the user never asked for (`"permissions": {}` would clear
        // a category's permissions).
        Value::Array(items) => return items.is_empty(),
        Value::Object(fields) => return fields.is_empty(),
        _ => return false,
    };
    let lower = text.to_lowercase();
    let wrapped = |open: char, close: char| text.starts_with(open) && text.ends_with(close);
    text.is_empty()
        || wrapped('<', '>')
        || wrapped('{', '}')
        || wrapped('[', ']')
        || squash(text) == squash(name)
        || echoes_name(text, name)
        || matches!(
            lower.as_str(),
            "string"
                | "integer"
                | "number"
                | "value"
                | "unknown"
                | "null"
                | "none"
                | "n/a"
                | "?"
                | "..."
                | "tbd"
                | "todo"
                | "xxx"
        )
}

/// Words a model puts around an input's name when it has no value for it.
const FILLERS: [&str; 14] = [
    "new",
    "old",
    "your",
    "my",
    "the",
    "a",
    "some",
    "here",
    "example",
    "sample",
    "value",
    "placeholder",
    "desired",
    "actual",
];

/// Whether `text` is the input's name dressed up (`new_password` for `password`,
/// `your_unique_identifier_here` for `unique_identifier`): every word one of the name's or a
/// filler, at least one of each.
fn echoes_name(text: &str, name: &str) -> bool {
    let named = identifier_tokens(name);
    let mine = identifier_tokens(text);
    let is_named = |w: &String| named.contains(w);
    let is_filler = |w: &String| FILLERS.contains(&w.as_str());
    mine.iter().all(|w| is_named(w) || is_filler(w))
        && mine.iter().any(is_named)
        && mine.iter().any(is_filler)
}

/// The optional inputs of `action` that names in `missing` (as the validator reports them:
/// `category_localizations[0].locale`) lie inside, where the user never named the input
/// (every word of its name) in `said`. A model fills optional objects and lists the request
/// is not about; asking the user for their parts would ask about something they never
/// raised. Missing names at the top level, or inside a required input or one the user named,
/// are left to be asked for.
pub(crate) fn unmentioned_parents(action: &Action, missing: &[String], said: &str) -> Vec<String> {
    let said = Words::of(said);
    let mut parents: Vec<String> = Vec::new();
    for name in missing {
        let Some(at) = name.find(['.', '[']) else {
            continue;
        };
        let parent = &name[..at];
        let unmentioned = action.input(parent).is_some_and(|input| {
            !input.required && !identifier_tokens(parent).iter().all(|w| said.has(w))
        });
        if unmentioned && !parents.iter().any(|p| p == parent) {
            parents.push(parent.to_string());
        }
    }
    parents
}

/// The words of a text, for telling whether a value was given in it.
pub(crate) struct Words {
    lower: String,
    words: Vec<String>,
    /// The names and codes the user wrote, as written ([`is_code`]).
    codes: Vec<String>,
}

/// What a model made of a name or code the user wrote ([`Words::code_within`]).
#[derive(Debug, PartialEq)]
pub(crate) enum Code {
    /// Written after words of the model's (`backup` + `forum-2025-03-14.tar.gz`, a URL
    /// ending in an external id): the user's code dressed up; the user's own is kept.
    Dressed(String),
    /// Written with characters after it (`oliver_t2` from `oliver_t`, `hugo_r@mail.com`
    /// from `hugo_r`): a new value built on the user's, which they never gave.
    Extended,
}

impl Words {
    pub fn of(text: &str) -> Self {
        Self {
            lower: text.to_lowercase(),
            words: without_wishes(tokens(text)),
            // A code takes no apostrophe: "jumping_jill's profile" writes `jumping_jill`.
            codes: bare_words(text)
                .map(|word| possessive_owner(word).unwrap_or(word))
                .filter(|word| is_code(word))
                .map(str::to_string)
                .collect(),
        }
    }

    /// Where `value`, one word that the user did not write as it is, holds exactly one of
    /// the names or codes they wrote (`forum-2025-03-14.tar.gz`, `kwame_o`) with characters
    /// added: [`Code::Dressed`] where the additions come before it, [`Code::Extended`] where
    /// any follow it. `None` otherwise: the loose reading of [`Words::grounds`] decides.
    pub fn code_within(&self, value: &str) -> Option<Code> {
        let value = value.trim();
        let lower = value.to_lowercase();
        if value.is_empty() || value.contains(char::is_whitespace) || self.lower.contains(&lower) {
            return None;
        }
        let mut within = self
            .codes
            .iter()
            .filter(|code| lower.contains(&code.to_lowercase()));
        let code = within.next()?;
        if within.any(|other| !other.eq_ignore_ascii_case(code)) {
            return None;
        }
        Some(if lower.ends_with(&code.to_lowercase()) {
            Code::Dressed(code.clone())
        } else {
            Code::Extended
        })
    }

    /// The one word of `text`, a text of several words, that is a name or code the user
    /// wrote ([`is_code`]); `None` where there is none or more than one, and for a text of
    /// one word.
    pub fn one_code_among(&self, text: &str) -> Option<String> {
        if !text.trim().contains(char::is_whitespace) {
            return None;
        }
        let mut written = bare_words(text).filter(|word| {
            self.codes
                .iter()
                .any(|code| code.eq_ignore_ascii_case(word))
        });
        let one = written.next()?;
        written.next().is_none().then(|| one.to_string())
    }

    /// The one number the user wrote as a word of its own, where it is not a year (1900 to
    /// 2099: "the 2019 badge" names a thing, it is not its number); `None` where they wrote
    /// none or several.
    pub fn one_number(&self) -> Option<String> {
        let mut numbers = plain_numbers(&self.lower);
        let one = numbers.next()?;
        numbers.all(|other| other == one).then_some(one)
    }

    /// The one name or code the user wrote that shares a part ([`code_parts`]) of three
    /// letters or more with `value` (`drivetime_dan` for `volunteer_milestones_dan`); `None`
    /// where none or several do.
    pub fn one_code_sharing_a_part(&self, value: &str) -> Option<String> {
        let long = |text: &str| -> Vec<String> {
            let mut parts = code_parts(text);
            parts.retain(|part| part.chars().count() >= 3);
            parts
        };
        let mine = long(value);
        self.one_code(|code| long(code).iter().any(|part| mine.contains(part)))
    }

    /// The one name or code the user wrote, of those that `fits` accepts, that has `word`
    /// as one of its parts ([`code_parts`]) and is more than it (`sue_stacks` for `sue`);
    /// `None` where none or several do.
    pub fn one_code_holding(&self, word: &str, fits: impl Fn(&str) -> bool) -> Option<String> {
        let word = word.to_lowercase();
        self.one_code(|code| {
            code.to_lowercase() != word && fits(code) && code_parts(code).contains(&word)
        })
    }

    /// The one name or code the user wrote (up to case) that `keep` accepts; `None` where
    /// none or several do.
    fn one_code(&self, keep: impl Fn(&str) -> bool) -> Option<String> {
        let mut kept = self.codes.iter().filter(|code| keep(code));
        let one = kept.next()?;
        kept.all(|other| other.eq_ignore_ascii_case(one))
            .then(|| one.clone())
    }

    /// Whether `value` was given: a string appears whole, or at least half its words do; a
    /// number appears as a word; every item of a list and every field of an object is given;
    /// booleans need no words.
    pub fn grounds(&self, value: &Value) -> bool {
        match value {
            Value::Null | Value::Bool(_) => true,
            // Booleans written as strings (`"enabled": "true"`) need no words either.
            Value::String(s) if matches!(s.trim(), "true" | "false") => true,
            Value::Number(n) => {
                let text = n.to_string();
                self.lower.contains(&text) && tokens(&text).iter().all(|t| self.has(t))
            }
            Value::String(s) => {
                let s = s.trim().to_lowercase();
                if s.is_empty() {
                    return false;
                }
                if s.len() >= 3 && self.lower.contains(&s) {
                    return true;
                }
                // An e-mail address is written as it is or not given: one made of the user's
                // words ("the new work address" → `new_work_address@example.com`) is made up.
                if is_email_address(&s) {
                    return false;
                }
                let mine = tokens(&s);
                if mine.is_empty() {
                    return false;
                }
                let found = mine.iter().filter(|w| self.has(w)).count();
                found * 2 >= mine.len()
            }
            Value::Array(items) => items.iter().all(|item| self.grounds(item)),
            Value::Object(fields) => fields.values().all(|field| self.grounds(field)),
        }
    }

    /// The fields of an object that were given, nested objects pruned the same way; `None`
    /// where none was, or where `value` is not an object. A switch counts only where the user
    /// named its field (a made-up `"allow_badges": true` goes), and an empty list or object
    /// is no value.
    pub fn given_part(&self, value: &Value) -> Option<Value> {
        let Value::Object(fields) = value else {
            return None;
        };
        let kept: Map<String, Value> = fields
            .iter()
            .filter_map(|(name, field)| {
                let kept = match field {
                    Value::Null => return None,
                    Value::Object(_) => self.given_part(field)?,
                    _ if is_placeholder(field, name) => return None,
                    _ if flag(field) => self.names(name).then(|| field.clone())?,
                    _ => self.grounds(field).then(|| field.clone())?,
                };
                Some((name.clone(), kept))
            })
            .collect();
        (!kept.is_empty()).then_some(Value::Object(kept))
    }

    /// Whether a text of several words (a reason, a message) has a word of four letters or
    /// more in common with the user's, one that carries meaning ("with" and "that" do not):
    /// reworded, not made up. One word (an e-mail address, a file name, a username) the user
    /// either wrote or did not.
    pub fn shares_a_word(&self, value: &Value) -> bool {
        let Value::String(text) = value else {
            return false;
        };
        if !text.trim().contains(char::is_whitespace) {
            return false;
        }
        tokens(text)
            .iter()
            .any(|w| w.chars().count() >= 4 && !FUNCTION_WORDS.contains(&w.as_str()) && self.has(w))
    }

    /// Whether the user named an input: at least half the words of its name.
    pub fn names(&self, name: &str) -> bool {
        let mine = identifier_tokens(name);
        !mine.is_empty() && mine.iter().filter(|w| self.has(w)).count() * 2 >= mine.len()
    }

    /// The words beside `value` (four before it, two after) where the user wrote it exactly
    /// once; `None` where they wrote it never or more than once.
    fn around_only(&self, value: &[String]) -> Option<Vec<String>> {
        let n = value.len();
        let mut at = (0..(self.words.len() + 1).saturating_sub(n))
            .filter(|&i| self.words[i..i + n] == *value);
        let start = at.next()?;
        if at.next().is_some() {
            return None;
        }
        let before = &self.words[start.saturating_sub(4)..start];
        let after = self.words[start + n..].iter().take(2);
        Some(before.iter().chain(after).cloned().collect())
    }

    fn has(&self, word: &str) -> bool {
        self.words.iter().any(|w| same_word(w, word))
    }
}

/// `words` without "like" where it says what the user wants ("I'd like", "would like to"):
/// that gives no like, so it grounds no `likes_received`.
fn without_wishes(mut words: Vec<String>) -> Vec<String> {
    let wish = |at: usize| {
        let before = at.checked_sub(1).map(|i| words[i].as_str());
        let after = words.get(at + 1).map(String::as_str);
        words[at] == "like"
            && (matches!(before, Some("d" | "would" | "should")) || after == Some("to"))
    };
    let wishes: Vec<usize> = (0..words.len()).filter(|&at| wish(at)).collect();
    for at in wishes.into_iter().rev() {
        words.remove(at);
    }
    words
}

/// The word a possessive "'s" (or "’s") ends, without it ("post" of "post's"); `None` where
/// `word` has none.
pub(crate) fn possessive_owner(word: &str) -> Option<&str> {
    word.strip_suffix("'s")
        .or_else(|| word.strip_suffix("\u{2019}s"))
}

/// Words that join the things of a list ("gold, silver or bronze", "groups or settings").
pub(crate) const LIST_JOINS: [&str; 3] = ["or", "and", "nor"];

/// The whitespace-separated words of `text` without the punctuation around them.
pub(crate) fn bare_words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric()))
}

/// One word of a user's text, lower case (an apostrophe inside it, `'` or `’`, written `'`),
/// with the characters between it and the next word (empty after the last).
pub(crate) struct TextWord {
    pub text: String,
    pub after: String,
}

/// The words of `text` ([`TextWord`]): runs of letters and digits, an apostrophe between a
/// letter or digit and a letter kept inside ("don't", "post's").
pub(crate) fn text_words(text: &str) -> Vec<TextWord> {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<TextWord> = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        if !chars[at].is_alphanumeric() {
            if let Some(last) = out.last_mut() {
                last.after.push(chars[at]);
            }
            at += 1;
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.get(at) {
            let inner_apostrophe = matches!(c, '\'' | '’')
                && !word.is_empty()
                && chars.get(at + 1).is_some_and(|n| n.is_alphabetic());
            if c.is_alphanumeric() {
                word.extend(c.to_lowercase());
            } else if inner_apostrophe {
                word.push('\'');
            } else {
                break;
            }
            at += 1;
        }
        out.push(TextWord {
            text: word,
            after: String::new(),
        });
    }
    out
}

/// The parts of a name or code, lower case, split at `_`, `-` and `.` (`sue`, `stacks` of
/// `sue_stacks`).
fn code_parts(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(['_', '-', '.'])
        .map(str::to_string)
        .collect()
}

/// Whether `text` reads as one e-mail address: a name, `@`, and a domain with a dot (not a
/// handle such as `@kwame_o`).
fn is_email_address(text: &str) -> bool {
    !text.contains(char::is_whitespace)
        && text
            .split_once('@')
            .is_some_and(|(name, domain)| !name.is_empty() && domain.contains('.'))
}

/// Whether a word the user wrote is a name or code that a value holds whole: five
/// characters or more, a letter among them, and a digit or one of `_ . @ /` (not a hyphen
/// alone: `self-hosting` is words, and a slug made of them is not a new value).
fn is_code(word: &str) -> bool {
    word.chars().count() >= 5
        && word.chars().any(char::is_alphabetic)
        && word
            .chars()
            .any(|c| c.is_ascii_digit() || matches!(c, '_' | '.' | '@' | '/'))
}

/// Lower-case alphanumeric words, a plural `s` dropped.
pub(crate) fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(token)
        .collect()
}

/// One word as [`tokens`] writes it: lower case, a plural `s` dropped.
pub(crate) fn token(word: &str) -> String {
    let word = word.to_lowercase();
    match word.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_string(),
        _ => word,
    }
}

/// [`tokens`] of a name split at its camelCase and snake_case joins (`yourUploadId` → `your`,
/// `upload`, `id`).
pub(crate) fn identifier_tokens(name: &str) -> Vec<String> {
    tokens(&words(name).join(" "))
}

/// Equal, or forms of one word (`archive`/`archived`, `publish`/`published`): the shorter
/// has four letters or more, the longer starts with all but at most its last two and goes on
/// by at most four letters past what they share (an ending, not a word of its own nor digits:
/// `local`/`localizations` are two words, and so are `password`/`password123`); a word of
/// three letters only with a regular ending
/// (`pin`/`pinned`, `ban`/`banning`, `tag`/`tags`).
pub(crate) fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.chars().any(|c| c.is_ascii_digit()) {
        return false;
    }
    if short.len() == 3 {
        return inflected(short, long);
    }
    if short.len() < 4 {
        return false;
    }
    let common = short
        .chars()
        .zip(long.chars())
        .take_while(|(x, y)| x == y)
        .count();
    // An ending is letters: `password123` is a new word made of `password`, not a form of it.
    let ending_is_letters = long.chars().skip(common).all(char::is_alphabetic);
    common + 2 >= short.chars().count()
        && common >= 4
        && long.chars().count() <= common + 4
        && ending_is_letters
}

/// Whether `long` is `short` with a regular English ending: `-s`, `-ed`, `-ing`, the last
/// consonant doubled before `-ed` or `-ing` (`pinned`).
fn inflected(short: &str, long: &str) -> bool {
    let Some(rest) = long.strip_prefix(short) else {
        return false;
    };
    let doubled = short
        .chars()
        .last()
        .and_then(|last| rest.strip_prefix(last));
    matches!(rest, "s" | "es" | "ed" | "ing") || matches!(doubled, Some("ed" | "ing"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Catalog;

    const SPEC: &str = r#"
openapi: 3.0.3
info: {title: T, version: "1"}
paths:
  /notes/{noteId}:
    put:
      operationId: replaceNote
      parameters:
        - {name: noteId, in: path, required: true, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [title]
              properties:
                title: {type: string}
                status: {type: string, enum: [draft, published, archived]}
                priority: {type: integer}
"#;

    fn action() -> Action {
        Catalog::parse(SPEC).unwrap().actions.remove(0)
    }

    /// A catalog of operations (method, path, id, and the type of the one input its path
    /// names), each with that input required.
    fn one_path_input_each(operations: &[(&str, &str, &str, &str)]) -> Catalog {
        let mut paths = serde_json::Map::new();
        for (method, path, id, ty) in operations {
            let input = &path[path.find('{').unwrap() + 1..path.find('}').unwrap()];
            paths.insert(
                path.to_string(),
                json!({ *method: {"operationId": id, "parameters": [
                    {"name": input, "in": "path", "required": true, "schema": {"type": ty}}
                ]}}),
            );
        }
        let spec =
            json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": paths});
        Catalog::parse(&spec.to_string()).unwrap()
    }

    #[test]
    fn values_the_user_gave_are_kept_others_dropped() {
        let said = "Rename note 17 to Weekly groceries and archive it";
        let reviewed = review(
            &action(),
            &json!({"noteId": "17", "title": "Weekly Groceries", "status": "archived", "priority": 3}),
            said,
            true,
        );
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"noteId": "17", "title": "Weekly Groceries", "status": "archived"})
        );
        assert_eq!(
            reviewed.repairs,
            ["priority: dropped 3: the user did not give it"]
        );
        // Without grounding, only placeholders go.
        let reviewed = review(
            &action(),
            &json!({"noteId": "<noteId>", "priority": 3}),
            said,
            false,
        );
        assert_eq!(Value::Object(reviewed.params), json!({"priority": 3}));
    }

    #[test]
    fn an_enum_value_the_user_did_not_write_becomes_the_one_they_did() {
        // A value the user did not write, or one outside the enum even where they wrote it
        // ("ready": the validator would send the model back to choose among the values).
        for (given, said, repair) in [
            (
                "draft",
                "Note 17 is done: mark it published",
                r#"status: "draft" read as "published", the one value the user wrote"#,
            ),
            (
                "ready",
                "Note 17 is ready: mark it published",
                r#"status: "ready" is none of its values, read as "published", the one value the user wrote"#,
            ),
            // A value the user said not to want is not one they wrote.
            (
                "ready",
                "Note 17 is ready: mark it published rather than archived",
                r#"status: "ready" is none of its values, read as "published", the one value the user wrote"#,
            ),
            (
                "draft",
                "Note 17 is done, so don't leave it archived. Mark it published.",
                r#"status: "draft" read as "published", the one value the user wrote"#,
            ),
        ] {
            let params = json!({"noteId": "17", "status": given});
            let reviewed = review(&action(), &params, said, true);
            assert_eq!(
                Value::Object(reviewed.params),
                json!({"noteId": "17", "status": "published"})
            );
            assert_eq!(reviewed.repairs, [repair]);
        }
        // Two written, or none: the model's value goes, nothing is chosen for it.
        for said in ["Is note 17 published or archived?", "Tidy up note 17"] {
            let reviewed = review(
                &action(),
                &json!({"noteId": "17", "status": "draft"}),
                said,
                true,
            );
            assert_eq!(Value::Object(reviewed.params), json!({"noteId": "17"}));
        }
    }

    #[test]
    fn a_code_dressed_up_is_the_users_and_one_built_on_is_not_given() {
        let said = Words::of(
            "Mail me backup forum-2025-03-14.tar.gz, rename oliver_t and write to hugo_r; \
             the Self-Hosting category moved.",
        );
        let dressed = |code: &str| Some(Code::Dressed(code.into()));
        assert_eq!(
            said.code_within("backupForum-2025-03-14.tar.gz"),
            dressed("forum-2025-03-14.tar.gz")
        );
        assert_eq!(
            said.code_within("https://example.com/forum-2025-03-14.tar.gz"),
            dressed("forum-2025-03-14.tar.gz")
        );
        assert_eq!(said.code_within("oliver_t2"), Some(Code::Extended));
        assert_eq!(said.code_within("hugo_r@example.com"), Some(Code::Extended));
        assert_eq!(said.code_within("OLIVER_T"), None, "as the user wrote it");
        assert_eq!(said.code_within("oliver_t,hugo_r"), None, "two of them");
        assert_eq!(
            said.code_within("self-hosting-help"),
            None,
            "words, not a code"
        );
        assert_eq!(said.code_within("2025-03-15"), None);

        let said = "Copy note draft_17 over";
        let reviewed = review(&action(), &json!({"noteId": "notes/draft_17"}), said, true);
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"noteId": "draft_17"})
        );
        assert_eq!(
            reviewed.repairs,
            [r#"noteId: kept "draft_17" of "notes/draft_17": the user wrote only that"#]
        );
        let reviewed = review(&action(), &json!({"noteId": "draft_17b"}), said, true);
        assert!(reviewed.params.is_empty());
        assert!(reviewed.reworded.is_empty(), "asked for, not written again");
    }

    #[test]
    fn a_made_up_text_sharing_only_function_words_is_not_reworded() {
        let said = Words::of("Suspend user 6120. I'll fill in the reason once I've talked it over with the moderators");
        assert!(!said.shares_a_word(&json!("I'm sorry, but I can't assist with that request.")));
        assert!(said.shares_a_word(&json!("talked over with moderators")));
    }

    #[test]
    fn a_wish_is_no_like() {
        for said in [
            "Show me the directory. I'd like to see who's been the most active",
            "We would like the newest users first",
            "Sort them however you like to",
        ] {
            assert!(!Words::of(said).grounds(&json!("likes_received")), "{said}");
        }
        for said in ["Who has the most likes?", "I like post 12, like it for me"] {
            assert!(Words::of(said).grounds(&json!("likes_received")), "{said}");
        }
    }

    #[test]
    fn short_verbs_ground_their_inflected_forms_only() {
        let said = Words::of("Pin topic 3021 and ban the spammer");
        assert!(said.grounds(&json!("pinned")));
        assert!(said.grounds(&json!("banned")));
        assert!(!said.grounds(&json!("pine")), "not a form of pin");
        assert!(!said.grounds(&json!("band")), "not a form of ban");
        assert!(!said.grounds(&json!("pinnacle")));
        assert!(same_word("tag", "tagging") && same_word("tags", "tag"));
        assert!(!same_word("cat", "category"));
        assert!(same_word("organise", "organising") && same_word("suspend", "suspended"));
        assert!(
            !same_word("local", "localizations"),
            "a word of its own, not an ending"
        );
        // Digits are no ending: a password made of the word "password" is made up (l29).
        assert!(!same_word("password", "password123"));
        let said = Words::of("She'll tell me which password she wants tomorrow");
        assert!(!said.grounds(&json!("password123")));
        assert!(!said.grounds(&json!("Password2024")));
    }

    #[test]
    fn a_name_cut_short_is_the_users_whole_code() {
        let catalog = one_path_input_each(&[
            (
                "post",
                "/user_avatar/{username}/refresh",
                "refreshGravatar",
                "string",
            ),
            ("put", "/backups/{filename}", "mailBackup", "string"),
            (
                "post",
                "/session/{login}/forgot",
                "sendPasswordResetEmail",
                "string",
            ),
        ]);
        let check = |id: &str, params: Value, said: &str| {
            review(catalog.get(id).unwrap(), &params, said, true)
        };
        let said = "Sue changed her picture, but her account, sue_stacks, still shows the old one";
        let reviewed = check("refreshGravatar", json!({"username": "sue"}), said);
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"username": "sue_stacks"})
        );
        assert_eq!(
            reviewed.repairs,
            [r#"username: "sue" read as "sue_stacks", the one name the user wrote that holds it"#]
        );
        // A login is a username.
        let said = "Pete can't get in. Could you send winch_pete a link for a new password?";
        let reviewed = check("sendPasswordResetEmail", json!({"login": "pete"}), said);
        assert_eq!(kept_with(&reviewed), json!({"login": "winch_pete"}));
        // A file name and a username each take the code of their kind.
        let said = "Send dana_k the notes, dana_notes.pdf, from the backup";
        let kept = |id: &str, params: Value| Value::Object(check(id, params, said).params);
        assert_eq!(
            kept("refreshGravatar", json!({"username": "dana"})),
            json!({"username": "dana_k"})
        );
        assert_eq!(
            kept("mailBackup", json!({"filename": "dana"})),
            json!({"filename": "dana_notes.pdf"})
        );
        // Two codes hold it, or the word is too short to say: the value stays as it is.
        let said = "Sue has two accounts, sue_stacks and sue_vans; and jo_b";
        for value in ["sue", "jo"] {
            assert_eq!(
                kept_with(&check("refreshGravatar", json!({"username": value}), said)),
                json!({"username": value})
            );
        }
    }

    fn kept_with(reviewed: &Reviewed) -> Value {
        Value::Object(reviewed.params.clone())
    }

    #[test]
    fn an_id_left_out_is_the_number_the_user_wrote_for_it() {
        let catalog = one_path_input_each(&[
            ("put", "/groups/{id}", "updateGroup", "integer"),
            ("put", "/backups/{filename}", "mailBackup", "string"),
        ]);
        let group = catalog.get("updateGroup").unwrap();
        let filled = |messages: &[&str], params: Value| {
            let messages: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
            let mut reviewed = review(group, &params, &messages.join("\n"), true);
            numbered_id(group, &messages, &mut reviewed);
            reviewed
        };
        let reviewed = filled(
            &["The drivers' group, number 18, needs renaming to van-drivers, please."],
            json!({}),
        );
        assert_eq!(kept_with(&reviewed), json!({"id": "18"}));
        assert_eq!(
            reviewed.repairs,
            [r##"id: "18", the one number the user wrote after "number", "no." or "#""##]
        );
        assert_eq!(
            kept_with(&filled(&["Rename group #31 for me"], json!({}))),
            json!({"id": "31"})
        );
        // Unmarked, the one number written after a name for a thing, where no other input
        // holds it.
        for message in [
            "Archive thread 5120, please",
            "Last year's thread, 5120, is done",
            "Thread 5120 may be closed on 4 May",
        ] {
            assert_eq!(
                kept_with(&filled(&[message], json!({}))),
                json!({"id": "5120"})
            );
        }
        let mut reviewed = Reviewed::default();
        reviewed
            .params
            .insert("timestamp".into(), json!("1698865200"));
        let messages = ["Backdate thread 4471 to timestamp 1698865200".to_string()];
        numbered_id(group, &messages, &mut reviewed);
        assert_eq!(reviewed.params["id"], json!("4471"));
        // Several marked, one given already, or none after a name (a count): nothing is
        // taken.
        for (messages, params, kept) in [
            (
                &["Merge group number 18 into number 19"][..],
                json!({}),
                json!({}),
            ),
            (
                &["Rename group number 18"],
                json!({"id": 18}),
                json!({"id": 18}),
            ),
            (&["Rename the group with 18 members"], json!({}), json!({})),
            // A day of the month is no thing's number.
            (
                &["Close the sign-up thread on Friday 4 October"],
                json!({}),
                json!({}),
            ),
            (
                &["Close the sign-up thread on October 4"],
                json!({}),
                json!({}),
            ),
        ] {
            assert_eq!(kept_with(&filled(messages, params)), kept);
        }
        // An action with no id to fill takes nothing.
        let backup = catalog.get("mailBackup").unwrap();
        let mut reviewed = review(backup, &json!({}), "Mail backup number 4", true);
        numbered_id(backup, &["Mail backup number 4".into()], &mut reviewed);
        assert!(reviewed.params.is_empty());
    }

    /// Over every labelled request: the one enum value [`written_enum_value`] reads from what
    /// the request asks for is the value it gives, wherever it reads one.
    #[test]
    fn the_enum_value_read_is_the_one_given_in_the_labelled_sets() {
        let spec = crate::labelled::data_dir().join("discourse-full.openapi.json");
        let catalog = Catalog::parse(&std::fs::read_to_string(spec).unwrap()).unwrap();
        let (mut read, mut wrong) = (0, Vec::new());
        for (file, request) in crate::labelled::requests() {
            let Some(action) = catalog.get(request["operation_id"].as_str().unwrap()) else {
                continue;
            };
            let text = request["request"].as_str().unwrap();
            let asked = Words::of(&crate::negated::affirmed(text));
            for (name, given) in request["required_params"].as_object().unwrap() {
                let Some(input) = action.input(name).filter(|i| !i.enum_values.is_empty()) else {
                    continue;
                };
                let Some(value) = written_enum_value(input, &asked) else {
                    continue;
                };
                read += 1;
                if value != *given {
                    wrong.push(format!("{file} {}: {value} for {given}", request["id"]));
                }
            }
        }
        println!("an enum value read for {read} inputs");
        assert!(read >= 20, "only {read}");
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// Over every labelled request whose operation takes one required id: the number
    /// [`number_for_id`] reads from the request, beside the other values the request gives,
    /// is the id wherever it reads one, and it reads none where the id is left out on purpose.
    #[test]
    fn the_number_read_for_an_id_is_the_id_in_the_labelled_sets() {
        let (mut read, mut wrong) = (0, Vec::new());
        for (file, request) in crate::labelled::requests() {
            let text = request["request"].as_str().unwrap().to_string();
            let required = request["required_params"].as_object().unwrap();
            let is_id = |name: &String| identifier_tokens(name).last().is_some_and(|w| w == "id");
            let [(_, id)] = required
                .iter()
                .filter(|(name, _)| is_id(name))
                .collect::<Vec<_>>()[..]
            else {
                continue;
            };
            let optional = request["optional_params"].as_object().into_iter().flatten();
            let held: Vec<&Value> = required
                .iter()
                .chain(optional)
                .filter(|(name, value)| !is_id(name) && !value.is_null())
                .map(|(_, value)| value)
                .collect();
            let Some((number, _)) = number_for_id(&[text], &held) else {
                continue;
            };
            read += 1;
            if literal(id).as_deref() != Some(number.as_str()) {
                wrong.push(format!("{file} {}: {number} for {id}", request["id"]));
            }
        }
        println!("an id read for {read} requests");
        assert!(read >= 300, "only {read}");
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn a_name_is_no_number_and_words_are_no_id() {
        let catalog = one_path_input_each(&[
            ("put", "/users/{id}/anonymize", "anonymizeUser", "integer"),
            ("put", "/t/{topic_id}/status", "pinTopic", "string"),
            ("put", "/backups/{filename}", "mailBackup", "string"),
            ("get", "/u/{username}", "getUser", "string"),
        ]);
        let said = "Anonymize member dvoss_88, pin the Community Guidelines topic (or topic 41), \
                    mail me last night's backup or backup forum-2025-03-14.tar.gz, and show \
                    Dana Linden's profile and user 4471's";
        let check = |id: &str, params: Value, grounded: bool| {
            review(catalog.get(id).unwrap(), &params, said, grounded)
        };
        let kept = |id: &str, params: Value| Value::Object(check(id, params, true).params);
        let reviewed = check("anonymizeUser", json!({"id": "dvoss_88"}), true);
        assert!(reviewed.params.is_empty());
        assert_eq!(
            reviewed.repairs,
            [r#"id: dropped "dvoss_88": a name where it takes a number, the user gave none"#]
        );
        // A number written as a string is the validator's to convert.
        assert_eq!(
            kept("anonymizeUser", json!({"id": "41"})),
            json!({"id": "41"})
        );
        let topic = json!({"topic_id": "Community Guidelines"});
        assert_eq!(kept("pinTopic", topic), json!({}));
        let topic = json!({"topic_id": "41"});
        assert_eq!(kept("pinTopic", topic.clone()), topic);
        // Several words for a username or a file name; a file name the model dressed up keeps
        // the user's.
        let backup = json!({"filename": "last night's backup"});
        assert_eq!(kept("mailBackup", backup), json!({}));
        let backup = json!({"filename": "backup forum-2025-03-14.tar.gz"});
        assert_eq!(
            kept("mailBackup", backup),
            json!({"filename": "forum-2025-03-14.tar.gz"})
        );
        let reviewed = check("getUser", json!({"username": "Dana Linden"}), true);
        assert_eq!(
            reviewed.repairs,
            [
                r#"username: dropped "Dana Linden": words where it takes a username, the user gave none"#
            ]
        );
        // A number for a username, as a string or not.
        for username in [json!("4471"), json!(4471)] {
            let reviewed = check("getUser", json!({ "username": username }), true);
            assert!(reviewed.params.is_empty(), "{username}");
            assert!(
                reviewed.repairs[0]
                    .ends_with("a number where it takes a username, the user gave none"),
                "{:?}",
                reviewed.repairs
            );
        }
        // Without grounding the validator and the model deal with it.
        let reviewed = check("anonymizeUser", json!({"id": "dvoss_88"}), false);
        assert_eq!(Value::Object(reviewed.params), json!({"id": "dvoss_88"}));
    }

    #[test]
    fn words_are_no_identifier() {
        let catalog = one_path_input_each(&[(
            "post",
            "/uploads/{unique_identifier}/abort",
            "abortUpload",
            "string",
        )]);
        let abort = catalog.get("abortUpload").unwrap();
        let said = "Cancel the upload. Its identifier is on Priya's laptop, or it was 9f2c-77ab.";
        let reviewed = review(
            abort,
            &json!({"unique_identifier": "Priya's laptop"}),
            said,
            true,
        );
        assert!(reviewed.params.is_empty());
        assert_eq!(
            reviewed.repairs,
            [
                r#"unique_identifier: dropped "Priya's laptop": words where it takes an identifier, the user gave none"#
            ]
        );
        let code = json!({"unique_identifier": "9f2c-77ab"});
        assert_eq!(Value::Object(review(abort, &code, said, true).params), code);
    }

    #[test]
    fn text_words_keep_inner_apostrophes_and_what_follows_each() {
        let words = text_words("Don’t drop the leaders' group (post #512)?");
        let read: Vec<(&str, &str)> = words
            .iter()
            .map(|w| (w.text.as_str(), w.after.as_str()))
            .collect();
        assert_eq!(
            read,
            [
                ("don't", " "),
                ("drop", " "),
                ("the", " "),
                ("leaders", "' "),
                ("group", " ("),
                ("post", " #"),
                ("512", ")?"),
            ]
        );
    }

    #[test]
    fn words_joined_into_a_name_the_user_never_wrote_are_not_theirs() {
        let catalog = one_path_input_each(&[
            ("post", "/t/{id}/timer", "closeLater", "string"),
            ("get", "/u/{username}/badges", "listBadges", "string"),
            ("get", "/c/{slug}", "getSection", "string"),
        ]);
        let said = "Which badges has drivetime_dan picked up? We read volunteer milestones on \
                    air. The phone bank thread for the fundraising drive should close on \
                    Friday; the section is late-night-jazz.";
        let check_said = |id: &str, params: Value, said: &str| {
            review(catalog.get(id).unwrap(), &params, said, true)
        };
        let check = |id: &str, params: Value| check_said(id, params, said);
        let reviewed = check("closeLater", json!({"id": "fundraising_drive"}));
        assert!(reviewed.params.is_empty());
        assert_eq!(
            reviewed.repairs,
            [r#"id: dropped "fundraising_drive": words joined into an id the user never wrote"#]
        );
        // The one number the user wrote is the id they mean; a year is not a number of theirs.
        for (said, id) in [
            (
                "The phone bank thread, number 8034, should close on Friday.",
                Some("8034"),
            ),
            ("The 2024 phone bank thread should close on Friday.", None),
            ("Threads 8034 and 8035 should close on Friday.", None),
        ] {
            let reviewed = check_said("closeLater", json!({"id": "phone_bank"}), said);
            assert_eq!(
                reviewed.params.get("id"),
                id.map(|id| json!(id)).as_ref(),
                "{said}"
            );
        }
        // For an id, the user's number joined with words is read the same way; their own
        // code written with other marks is theirs.
        let said = "Last year's panto thread, 5120, can close, and so can the one of SUP-4471";
        let reviewed = check_said("closeLater", json!({"id": "panto_thread_5120"}), said);
        assert_eq!(Value::Object(reviewed.params), json!({"id": "5120"}));
        let reviewed = check_said("closeLater", json!({"id": "SUP_4471"}), said);
        assert_eq!(Value::Object(reviewed.params), json!({"id": "SUP_4471"}));
        let reviewed = check(
            "listBadges",
            json!({"username": "volunteer_milestones_dan"}),
        );
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"username": "drivetime_dan"})
        );
        // Written with a possessive, the code is the same.
        let said = "What does jumping_jill's profile look like to members?";
        let reviewed = check_said("listBadges", json!({"username": "jump_jill"}), said);
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"username": "jumping_jill"})
        );
        // What the user wrote as it is stays; so does a name the input does not take as an
        // id, a username or a file name.
        let kept = |id: &str, params: Value| Value::Object(check(id, params).params);
        let user = json!({"username": "drivetime_dan"});
        assert_eq!(kept("listBadges", user.clone()), user);
        let slug = json!({"slug": "late-night-jazz"});
        assert_eq!(kept("getSection", slug.clone()), slug);
        let slug = json!({"slug": "phone-bank"});
        assert_eq!(kept("getSection", slug.clone()), slug);
    }

    #[test]
    fn switches_need_the_users_words_unless_required_and_unknown_inputs_go() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/users/{id}": {"delete": {
                "operationId": "deleteUser",
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                    "required": ["confirm"],
                    "properties": {"delete_posts": {"type": "boolean"}, "block_ip": {"type": "boolean"},
                                   "confirm": {"type": "string", "enum": ["true", "false"]}}}}}}}}}}"#,
        )
        .unwrap();
        let action = &catalog.actions[0];
        let reviewed = review(
            action,
            &json!({"userId": 5, "delete_posts": true, "block_ip": true, "confirm": "true", "reason": "spam"}),
            "delete user 5 and their posts",
            true,
        );
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"id": 5, "delete_posts": true, "confirm": "true"})
        );
        assert_eq!(
            reviewed.repairs,
            [
                "userId: read as id",
                "block_ip: dropped true: the user did not give it",
                "reason: dropped, deleteUser takes no such input",
            ]
        );
    }

    #[test]
    fn grouped_and_near_names_are_read_as_inputs() {
        let said = "set the title of note 4 to Plans";
        let reviewed = review(
            &action(),
            &json!({"path": {"id": 4}, "body": {"title": "Plans"}}),
            said,
            true,
        );
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"noteId": 4, "title": "Plans"})
        );
        assert_eq!(reviewed.repairs.len(), 3, "{:?}", reviewed.repairs);
    }

    #[test]
    fn missing_parts_of_an_optional_input_the_user_never_named_are_not_asked_for() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/c/{id}": {"put": {
                "operationId": "updateCategory",
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"},
                    "post": {"type": "object", "required": ["raw"], "properties": {"raw": {"type": "string"}}},
                    "category_localizations": {"type": "array", "items": {"type": "object", "required": ["locale", "name"],
                        "properties": {"locale": {"type": "string"}, "name": {"type": "string"}}}}}}}}},
                "responses": {"200": {"description": "ok"}}}}}}"#,
        )
        .unwrap();
        let action = &catalog.actions[0];
        let missing: Vec<String> = [
            "category_localizations[0].locale",
            "category_localizations[0].name",
            "post.raw",
            "name",
        ]
        .map(String::from)
        .to_vec();
        // "post" is named, so its text is asked for; the localizations are not, nor is a
        // top-level input ever dropped this way.
        assert_eq!(
            unmentioned_parents(
                action,
                &missing,
                "Rename category 23 to Trade and fix the post"
            ),
            ["category_localizations"]
        );
        assert_eq!(
            unmentioned_parents(
                action,
                &missing,
                "Add a category localization for category 23"
            ),
            ["post"]
        );
    }

    #[test]
    fn fields_a_closed_object_does_not_take_are_dropped() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
              "/groups.json": {"post": {"operationId": "createGroup",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                  "type": "object", "required": ["group"], "additionalProperties": false,
                  "properties": {"group": {"type": "object", "required": ["name"],
                    "additionalProperties": false,
                    "properties": {"name": {"type": "string"}, "usernames": {"type": "string"},
                                   "flair": {"type": "object",
                                     "properties": {"icon": {"type": "string"}}}}}}}}}}}}}}"#,
        )
        .unwrap();
        let action = catalog.get("createGroup").unwrap();
        let said = "Set up a group called event_hosts for the people who run our meetups, \
                    flair icon calendar and color blue";
        let params = json!({"group": {"name": "event_hosts",
                                      "members": ["people who run our meetups"],
                                      "flair": {"icon": "calendar", "color": "blue"}}});
        let reviewed = review(action, &params, said, true);
        // Only a closed object loses fields it does not list: `flair` takes any.
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"group": {"name": "event_hosts",
                             "flair": {"icon": "calendar", "color": "blue"}}})
        );
        assert_eq!(reviewed.repairs, ["group.members: dropped, no such field"]);
    }

    #[test]
    fn an_object_given_in_part_keeps_that_part() {
        let said = Words::of("Rename group 318 to support_volunteers, keep everything else");
        let group = json!({"name": "support_volunteers", "members": ["new_member1"],
                           "allow_badges": true, "mentionable": {"level": 2, "note": ""},
                           "tags": [], "parent_id": null});
        assert_eq!(
            said.given_part(&group),
            Some(json!({"name": "support_volunteers"}))
        );
        // Nothing given: nothing kept; a switch the user named stays.
        assert_eq!(said.given_part(&json!({"members": ["x1"]})), None);
        assert_eq!(said.given_part(&json!("support_volunteers")), None);
        let said = Words::of("make group 318 visible, name it helpers");
        assert_eq!(
            said.given_part(&json!({"name": "helpers", "visible": true, "public": true})),
            Some(json!({"name": "helpers", "visible": true}))
        );
        // Nested objects are pruned the same way.
        assert_eq!(
            said.given_part(&json!({"group": {"name": "helpers", "bio": "A team of volunteers."}})),
            Some(json!({"group": {"name": "helpers"}}))
        );

        // In a review, a required object given in part is sent, not asked for.
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
              "/groups/{id}.json": {"put": {"operationId": "updateGroup",
                "parameters": [{"name": "id", "in": "path", "required": true,
                                "schema": {"type": "integer"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                  "type": "object", "required": ["group"],
                  "properties": {"group": {"type": "object"}}}}}}}}}}"#,
        )
        .unwrap();
        let action = catalog.get("updateGroup").unwrap();
        let params = json!({"id": 318, "group": {"name": "support_volunteers",
                                                  "members": ["new_member1", "new_member2"]}});
        let reviewed = review(
            action,
            &params,
            "Rename group 318 to support_volunteers, the old name confused people.",
            true,
        );
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"id": 318, "group": {"name": "support_volunteers"}})
        );
        assert_eq!(reviewed.repairs.len(), 1, "{:?}", reviewed.repairs);

        // An optional object given in part goes whole (here the user's old title).
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
              "/t/{id}.json": {"put": {"operationId": "updateTopic",
                "parameters": [{"name": "id", "in": "path", "required": true,
                                "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/json": {"schema": {
                  "type": "object", "properties": {"topic": {"type": "object"}}}}}}}}}}"#,
        )
        .unwrap();
        let action = catalog.get("updateTopic").unwrap();
        let params = json!({"id": "30918", "topic": {"title": "HELP!!!",
                                                     "description": "A test topic."}});
        let said = "Topic 30918 is titled 'HELP!!!'. Give it the heading 'Login fails' instead.";
        let reviewed = review(action, &params, said, true);
        assert_eq!(Value::Object(reviewed.params), json!({"id": "30918"}));
    }

    #[test]
    fn placeholders_and_invented_numbers_are_not_values() {
        let said = "delete my note";
        for value in [
            json!(""),
            json!("<noteId>"),
            json!("{noteId}"),
            json!("noteId"),
            json!("string"),
        ] {
            assert!(is_placeholder(&value, "noteId"), "{value}");
        }
        assert!(!Words::of(said).grounds(&json!(1)));
        assert!(!Words::of("note 12").grounds(&json!(1)));
        assert!(Words::of("note 12").grounds(&json!(12)));
        assert!(Words::of("list dogs").grounds(&json!("dog")));
        assert!(Words::of("email me at a.b@example.org").grounds(&json!("a.b@example.org")));
        assert!(!Words::of("switch it to the new work address")
            .grounds(&json!("new_work_address@example.com")));
        assert!(!Words::of("write to kim at x.org").grounds(&json!("kim@x.org")));
        assert!(Words::of("mention kwame_o").grounds(&json!("@kwame_o")));
        assert!(Words::of("publish it").grounds(&json!("published")));
        assert!(!Words::of("publish it").grounds(&json!("draft")));
        assert!(Words::of("close it").grounds(&json!("true")));
    }

    #[test]
    fn a_value_given_once_stays_in_one_input() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
              "/uploads/complete": {"post": {"operationId": "completeUpload",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                  "required": ["unique_identifier", "parts"],
                  "properties": {"unique_identifier": {"type": "string"}, "parts": {"type": "array"}}}}}}}},
              "/categories/{id}": {"put": {"operationId": "updateCategory",
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                  "required": ["name"],
                  "properties": {"name": {"type": "string"}, "color": {"type": "string"},
                                 "icon": {"type": "string"}, "permissions": {"type": "object"}}}}}}}},
              "/users": {"post": {"operationId": "createUser",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                  "required": ["username", "email", "password"],
                  "properties": {"username": {"type": "string"}, "email": {"type": "string"},
                                 "password": {"type": "string"}}}}}}}},
              "/users/password-reset/{token}": {"put": {"operationId": "changePassword",
                "parameters": [{"name": "token", "in": "path", "required": true, "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                  "required": ["username", "password"],
                  "properties": {"username": {"type": "string"},
                                 "password": {"type": "string"}}}}}}}}}}"#,
        )
        .unwrap();
        let reviewed = |id: &str, params: Value, said: &str| {
            let action = catalog.get(id).unwrap();
            Value::Object(review(action, &params, said, true).params)
        };
        for (id, params, said, kept) in [
            // The input named beside the value keeps it.
            (
                "completeUpload",
                json!({"unique_identifier": "a91f33c2", "parts": ["a91f33c2"]}),
                "finish the transfer with identifier a91f33c2",
                json!({"unique_identifier": "a91f33c2"}),
            ),
            (
                "createUser",
                json!({"username": "lena", "email": "Tr4il-Mix", "password": "Tr4il-Mix"}),
                "make an account lena with the password Tr4il-Mix",
                json!({"username": "lena", "password": "Tr4il-Mix"}),
            ),
            // None named: the one required input keeps it; an empty object is no value.
            (
                "updateCategory",
                json!({"id": 8, "name": "Help Desk", "color": "Help Desk", "icon": "Help Desk", "permissions": {}}),
                "category 8 should be called Help Desk from now on",
                json!({"id": 8, "name": "Help Desk"}),
            ),
            // Several required ones, one named away from the value: that one keeps it.
            (
                "changePassword",
                json!({"token": "Fjord-Lantern-82", "username": "jl", "password": "Fjord-Lantern-82"}),
                "set the password for username jl to Fjord-Lantern-82; I lost the email",
                json!({"username": "jl", "password": "Fjord-Lantern-82"}),
            ),
            // Written twice, or for inputs the user named equally: nothing is dropped.
            (
                "createUser",
                json!({"username": "kim", "email": "kim@x.org", "password": "kim"}),
                "new user kim, email kim@x.org, and use kim as the password too",
                json!({"username": "kim", "email": "kim@x.org", "password": "kim"}),
            ),
        ] {
            assert_eq!(reviewed(id, params, said), kept, "{said}");
        }
    }

    #[test]
    fn an_input_name_dressed_up_is_a_placeholder() {
        for (value, name) in [
            ("new_password", "password"),
            ("your_unique_identifier_here", "unique_identifier"),
            ("yourUploadId", "upload_id"),
            ("the desired title", "title"),
        ] {
            assert!(is_placeholder(&json!(value), name), "{value} for {name}");
        }
        for (value, name) in [
            ("new", "status"),
            ("Weekly groceries", "title"),
            ("my-old-laptop", "name"),
            ("password", "new_password"),
        ] {
            assert!(!is_placeholder(&json!(value), name), "{value} for {name}");
        }
    }

    #[test]
    fn a_value_the_input_documents_is_not_made_up() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/actions": {"post": {
                "operationId": "act",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object",
                    "required": ["id", "type_id"],
                    "properties": {"id": {"type": "integer"}, "type_id": {"type": "integer", "description": "2 for like, 3 for flag"}}}}}}}}}}"#,
        )
        .unwrap();
        let action = &catalog.actions[0];
        let reviewed = review(
            action,
            &json!({"id": 812, "type_id": 2}),
            "like post 812",
            true,
        );
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"id": 812, "type_id": 2})
        );
        let reviewed = review(action, &json!({"id": 2, "type_id": 2}), "like a post", true);
        assert_eq!(
            Value::Object(reviewed.params),
            json!({"type_id": 2}),
            "an id is not documented"
        );
    }

    #[test]
    fn a_documented_number_needs_the_users_word_for_it() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/badges": {"post": {
                "operationId": "createBadge",
                "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"},
                    "description": "Most badges to return (default: 200), between 1-500"}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object",
                    "required": ["name", "badge_type_id"],
                    "properties": {"name": {"type": "string"}, "badge_type_id": {"type": "integer",
                        "description": "The ID for the badge type. 1 for Gold, 2 for Silver,\n3 for Bronze."}}}}}}}}}}"#,
        )
        .unwrap();
        let action = &catalog.actions[0];
        let read =
            |params: Value, said: &str| Value::Object(review(action, &params, said, true).params);
        // 3 is Bronze; 1 is Gold, which the user did not write, nor any other type; 2 is
        // Silver, not the Gold before it, which the user wrote: 1 then. Of two types written,
        // neither is the user's.
        for (badge_type_id, said, read_as) in [
            (3, "a bronze-tier badge Helper", Some(3)),
            (1, "rename badge 14 to Helper", None),
            (2, "a gold badge Helper", Some(1)),
            (1, "a bronze badge Helper", Some(3)),
            (1, "a bronze or silver badge Helper", None),
        ] {
            let expected = match read_as {
                Some(read_as) => json!({"name": "Helper", "badge_type_id": read_as}),
                None => json!({"name": "Helper"}),
            };
            assert_eq!(
                read(
                    json!({"name": "Helper", "badge_type_id": badge_type_id}),
                    said
                ),
                expected,
                "{badge_type_id} for {said:?}"
            );
        }
        for limit in [200, 1, 500] {
            assert_eq!(
                read(json!({"name": "Helper", "limit": limit}), "badge Helper"),
                json!({"name": "Helper"}),
                "{limit} is a default or a bound, not a value the user gave"
            );
        }
    }
}
