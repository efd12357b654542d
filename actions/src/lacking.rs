//! Inputs the user said they do not have: "Sorry, I don't know its number", "I've lost the
//! upload identifier", "I'm not sure how big the file is". A small model asked for a call
//! fills such an input anyway, with a number or word of the request (`"id": 2019` of "the
//! Wind Sectional 2019 group", `"external_id": "volunteer"`); whatever it put there is not
//! the user's value, so it is dropped and a required input is asked for. A value the user
//! gave in a later message (answering the question) is theirs and stays.

use serde_json::Value;

use crate::action::{Action, Type};
use crate::review::{
    identifier_tokens, possessive_owner, same_word, squash, text_words, token, value_words,
    Reviewed, LIST_JOINS,
};

/// Words that say on their own that the user lacks what follows ("lost the identifier").
const LACK: [&str; 6] = [
    "lost",
    "forgot",
    "forgotten",
    "without",
    "missing",
    "unknown",
];

/// Negations, which say it together with one of [`HAVING`] just after ("don't know its
/// number", "no idea of the size", "not sure how big").
const NOT: [&str; 12] = [
    "not", "no", "never", "dont", "doesnt", "didnt", "cant", "cannot", "couldnt", "havent",
    "hasnt", "wont",
];

/// Words of having, knowing, having noted or having settled on a value, lacked when a word of [`NOT`]
/// stands at most two words before ("haven't decided on the new name yet").
const HAVING: [&str; 29] = [
    "have", "know", "remember", "recall", "sure", "tell", "find", "say", "got", "idea", "given",
    "sent", "hand", "decided", "settled", "agreed", "chosen", "picked", "note", "noted", "jotted",
    "recorded", "kept", "saved", "write", "wrote", "written", "made", "said",
];

/// Words that end the clause a lack is about: what comes after is another matter ("I don't
/// know the topic's number, but the post is 88").
const CLAUSE_ENDS: [&str; 7] = ["but", "and", "though", "although", "so", "because", "which"];

/// Plural words for ids, which name an input that takes a list of them ("I didn't note their
/// numbers": `post_ids[]`, not the thread's `id`).
const PLURAL_NAMES: [&str; 3] = ["numbers", "ids", "identifiers"];

/// How many words may stand between a word that joins listed choices and the next choice
/// ("and the whole year").
const JOIN_REACH: usize = 2;

/// How many words after "whether" a lacked yes or no is named in ([`undecided_switch`]).
const WHETHER_REACH: usize = 10;

/// How many words after a lack it may name the input by.
const REACH: usize = 8;

/// One word of the user's text: lower case, apostrophes dropped (`don't` is `dont`), and
/// whether punctuation that ends a clause follows it.
struct Word {
    text: String,
    /// The word without a possessive "'s" where it has one ("post" of "post's").
    owner: Option<String>,
    clause_ends: bool,
    /// Whether a `.`, `!` or `?` follows it.
    sentence_ends: bool,
}

fn words_of(text: &str) -> Vec<Word> {
    let holds = |after: &str, marks: &[char]| after.contains(marks);
    text_words(text)
        .into_iter()
        .map(|word| {
            // The last word ends its clause and sentence.
            let last = word.after.is_empty();
            Word {
                owner: possessive_owner(&word.text).map(str::to_string),
                text: word.text.replace('\'', ""),
                clause_ends: last || holds(&word.after, &CLAUSE_MARKS),
                sentence_ends: last || holds(&word.after, &SENTENCE_MARKS),
            }
        })
        .collect()
}

/// Punctuation that ends a clause.
const CLAUSE_MARKS: [char; 8] = ['.', ',', ';', ':', '!', '?', '(', ')'];

/// Punctuation that ends a sentence.
const SENTENCE_MARKS: [char; 3] = ['.', '!', '?'];

/// The words a user may name an input by whose name ends in `head`: the word itself and its
/// plural, and for ids, sizes and logins the words people use for them.
fn names_for(head: &str) -> Vec<String> {
    let mut names = vec![head.to_string(), format!("{head}s")];
    match head {
        "id" | "ids" => {
            names.extend(["id", "ids", "number", "numbers", "identifier"].map(String::from))
        }
        "identifier" => names.extend(["id", "number"].map(String::from)),
        "size" => names.extend(["big", "large"].map(String::from)),
        // A login is a username or an e-mail address.
        "login" => names.extend(["username", "email", "address"].map(String::from)),
        // What a thing is called is its name ("can't remember what the group is called").
        "name" => names.extend(["called", "named"].map(String::from)),
        "title" => names.extend(["called", "titled"].map(String::from)),
        _ => {}
    }
    names
}

/// The inputs of `action` that `message` (the user's) says they do not have. Only inputs
/// that take a value (not an object) are named; a word that names several inputs names the
/// one with the most words of its name in the clause, or none where that is a tie.
pub(crate) fn lacking(action: &Action, message: &str) -> Vec<String> {
    let words = words_of(message);
    // Each input that can be named, with the words of its name.
    let inputs: Vec<(&str, Vec<String>)> = action
        .inputs
        .iter()
        .filter(|input| input.ty != Type::Object && !input.is_credential())
        .map(|input| (input.name.as_str(), identifier_tokens(&input.name)))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (at, word) in words.iter().enumerate() {
        let negated = || {
            HAVING.contains(&word.text.as_str())
                && words[at.saturating_sub(2)..at]
                    .iter()
                    .any(|w| NOT.contains(&w.text.as_str()))
        };
        if !LACK.contains(&word.text.as_str()) && !negated() {
            continue;
        }
        if let Some(name) = named_by_lack(action, &inputs, &words, at)
            .filter(|name| !out.iter().any(|seen| seen == name))
        {
            out.push(name.to_string());
        }
    }
    out
}

/// The input the lack at `at` of `words` names: by a word for it in the clause that follows
/// ([`names_for`]; of several, the one with most words of its name there, a plural naming the
/// one that takes a list), else by its values listed as open choices ([`listed_choices`]) or,
/// for a yes or no, by a "whether" clause in the sentence ([`undecided_switch`]).
fn named_by_lack<'a>(
    action: &'a Action,
    inputs: &[(&'a str, Vec<String>)],
    words: &[Word],
    at: usize,
) -> Option<&'a str> {
    let word = &words[at];
    // The clause after the lack, up to punctuation or a word that starts another.
    let mut clause: Vec<&Word> = Vec::new();
    if !word.clause_ends {
        for next in words[at + 1..].iter().take(REACH) {
            if CLAUSE_ENDS.contains(&next.text.as_str()) {
                break;
            }
            clause.push(next);
            if next.clause_ends {
                break;
            }
        }
    }
    let which = words.get(at + 1).is_some_and(|w| w.text == "which");
    if clause.is_empty() || which {
        // "…, the tech lead still hasn't said.": nothing follows but a whether clause
        // before it may name what is lacked; "It has to be gold, silver or bronze, and I
        // can't remember which": the choices listed before it may.
        let before = &words[sentence_start(words, at)..at];
        return listed_choices(action, inputs, before, before.len())
            .or_else(|| undecided_switch(action, words, at));
    }
    let has = |name: &str| clause.iter().any(|w| w.text == name);
    let named: Vec<&(&str, Vec<String>)> = inputs
        .iter()
        .filter(|(_, tokens)| {
            tokens.last().is_some_and(|head| {
                names_for(head).iter().any(|name| has(name)) || compound_named(head, &clause)
            })
        })
        .collect();
    // Of several, the one with the most words of its name in the clause, if only one has
    // that many: "action type number" names `post_action_type_id`, not `id`.
    let in_clause = |tokens: &[String]| {
        tokens
            .iter()
            .filter(|t| names_for(t).iter().any(|n| has(n)))
            .count()
    };
    let most = named.iter().map(|(_, t)| in_clause(t)).max().unwrap_or(0);
    let mut best: Vec<&str> = named
        .iter()
        .filter(|(_, t)| in_clause(t) == most)
        .map(|(name, _)| *name)
        .collect();
    // Of those, a plural ("their numbers") names the one that takes a list: an array,
    // or an input named as one (`post_ids[]`, `ids`).
    if best.len() > 1 && PLURAL_NAMES.iter().any(|name| has(name)) {
        best.retain(|name| {
            name.ends_with("[]")
                || name.ends_with('s')
                || action
                    .input(name)
                    .is_some_and(|input| matches!(input.ty, Type::Array(_)))
        });
    }
    // "the post's number": the number of a post is its id, `post_id` or else `id`, not
    // another input that has "post" in its name (`post_action_type_id`).
    let owned = clause.windows(2).find_map(|pair| {
        let owner = pair[0].owner.as_deref()?;
        names_for("id").contains(&pair[1].text).then_some(owner)
    });
    if let Some(owner) = owned {
        let named_by = |wanted: &[String]| {
            named
                .iter()
                .find(|(_, tokens)| tokens == wanted)
                .map(|(name, _)| *name)
        };
        let own_id = named_by(&[token(owner), "id".to_string()]);
        if let Some(name) = own_id.or_else(|| named_by(&["id".to_string()])) {
            best = vec![name];
        }
    }
    let chosen = match best.as_slice() {
        [one] => Some(*one),
        _ => None,
    };
    chosen.or_else(|| {
        named
            .is_empty()
            .then(|| {
                let after = &words[at + 1..];
                let opening = after
                    .iter()
                    .take(REACH)
                    .take_while(|w| !CLAUSE_ENDS.contains(&w.text.as_str()))
                    .count();
                listed_choices(action, inputs, after, opening)
                    .or_else(|| undecided_switch(action, words, at))
            })
            .flatten()
    })
}

/// Whether `clause` names the one-word input name `head` that joins a word and "name"
/// (`filename`) by those two words apart: "the file name", "the file's name".
fn compound_named(head: &str, clause: &[&Word]) -> bool {
    let Some(first) = head.strip_suffix("name").filter(|first| !first.is_empty()) else {
        return false;
    };
    clause.windows(2).any(|pair| {
        (pair[0].text == first || pair[0].owner.as_deref() == Some(first)) && pair[1].text == "name"
    })
}

/// The one input of `inputs` (of `action`) whose values `words` list as choices still open
/// ("hasn't settled on gold, silver or bronze yet", "between gold, silver and bronze"): two
/// or more of its value words ([`value_words`]) joined by commas or [`LIST_JOINS`], the
/// first among the first `opening` words.
fn listed_choices<'a>(
    action: &Action,
    inputs: &[(&'a str, Vec<String>)],
    words: &[Word],
    opening: usize,
) -> Option<&'a str> {
    let listing = inputs.iter().filter(|(name, _)| {
        let values = value_words(action, name);
        // The value a word writes, in any form ("month" of `monthly`).
        let value_of = |w: &Word| {
            let word = token(&w.text);
            values.iter().find(|v| same_word(v, &word)).cloned()
        };
        let Some(first) = words[..opening].iter().position(|w| value_of(w).is_some()) else {
            return false;
        };
        // The values from the first on, joined by commas or a word of joining, which may
        // stand a few words before its value ("the past month and the whole year").
        let mut listed: Vec<String> = Vec::new();
        let mut since_join: Option<usize> = None;
        for w in &words[first..] {
            if let Some(value) = value_of(w) {
                listed.push(value);
                since_join = None;
            } else if LIST_JOINS.contains(&w.text.as_str()) {
                since_join = Some(0);
            } else if let Some(gap) = since_join.filter(|gap| *gap < JOIN_REACH) {
                since_join = Some(gap + 1);
            } else {
                break;
            }
        }
        listed.sort_unstable();
        listed.dedup();
        listed.len() >= 2
    });
    match listing.collect::<Vec<_>>().as_slice() {
        [(name, _)] => Some(name),
        _ => None,
    }
}

/// The one yes-or-no input of `action` that a "whether" clause in the sentence of the lack at
/// `at` names by a form of the last word of its name: "I haven't made up my mind whether it
/// should include the uploaded photos", "Whether the uploaded photos go in too, the tech lead
/// hasn't said" (`with_uploads`).
fn undecided_switch<'a>(action: &'a Action, words: &[Word], at: usize) -> Option<&'a str> {
    let start = sentence_start(words, at);
    let end = words[at..]
        .iter()
        .position(|w| w.sentence_ends)
        .map_or(words.len(), |end| at + end + 1);
    let sentence = &words[start..end];
    let whether = sentence.iter().position(|w| w.text == "whether")?;
    let asked: Vec<&Word> = sentence[whether + 1..].iter().take(WHETHER_REACH).collect();
    let switches: Vec<&str> = action
        .inputs
        .iter()
        .filter(|input| input.ty == Type::Boolean && !input.is_credential())
        .filter(|input| {
            identifier_tokens(&input.name)
                .last()
                .is_some_and(|head| asked.iter().any(|w| same_word(head, &token(&w.text))))
        })
        .map(|input| input.name.as_str())
        .collect();
    match switches.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// Where the sentence holding the word at `at` of `words` starts.
fn sentence_start(words: &[Word], at: usize) -> usize {
    words[..at]
        .iter()
        .rposition(|w| w.sentence_ends)
        .map_or(0, |end| end + 1)
}

/// Drops from `reviewed` each value of an input the user said they do not have
/// ([`lacking`]) in one of `messages` (theirs, oldest first), unless a later message of
/// theirs holds it (the answer to the question that followed). Words later in the same
/// message do not count: "I don't know her username, only that she's called Edith" says
/// that Edith is not it; a code of letters and digits written in the message does ("this
/// one is OUT-2025-0418 … I don't know its thread number": what is lacked is something
/// else).
pub(crate) fn drop_lacking(action: &Action, messages: &[String], reviewed: &mut Reviewed) {
    for (at, message) in messages.iter().enumerate() {
        for name in lacking(action, message) {
            // The model's key, written as the input's name or loosely (`post_ids` for
            // `post_ids[]`), as the validator reads it.
            let Some((key, value)) = reviewed
                .params
                .iter()
                .find(|(key, _)| squash(key) == squash(&name))
            else {
                continue;
            };
            let key = key.clone();
            let text = match value {
                Value::String(text) => text.to_lowercase(),
                other => other.to_string().to_lowercase(),
            };
            let answered = messages[at + 1..]
                .iter()
                .any(|later| !text.is_empty() && later.to_lowercase().contains(&text));
            if answered
                || (mixes_letters_and_digits(&text) && message.to_lowercase().contains(&text))
            {
                continue;
            }
            reviewed.repairs.push(format!(
                "{key}: dropped {value}: the user said they do not have it"
            ));
            reviewed.params.remove(&key);
        }
    }
}

/// Whether `text` mixes letters and digits, as codes and identifiers do (`OUT-2025-0418`),
/// unlike a bare number that may be part of a name ("the Wind Sectional 2019 group").
fn mixes_letters_and_digits(text: &str) -> bool {
    text.chars().any(char::is_alphabetic) && text.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::spec::Catalog;

    fn action(spec: &str, id: &str) -> Action {
        Catalog::parse(spec)
            .unwrap()
            .actions
            .into_iter()
            .find(|a| a.operation_id == id)
            .unwrap()
    }

    /// Asserts that each of `wrote` lacks `name` alone.
    fn lacks(action: &Action, name: &str, wrote: &[&str]) {
        for wrote in wrote {
            assert_eq!(lacking(action, wrote), [name], "{wrote}");
        }
    }

    /// Asserts that none of `wrote` lacks anything.
    fn lacks_nothing(action: &Action, wrote: &[&str]) {
        for wrote in wrote {
            assert!(lacking(action, wrote).is_empty(), "{wrote}");
        }
    }

    const SPEC: &str = r#"
openapi: 3.0.0
info: {title: Forum, version: "1"}
paths:
  /groups/{id}.json:
    delete:
      operationId: deleteGroup
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses: {"200": {description: ok}}
  /groups/{name}/members.json:
    get:
      operationId: groupMembers
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
      responses: {"200": {description: ok}}
  /directory_items.json:
    get:
      operationId: directory
      parameters:
        - {name: period, in: query, required: true, schema: {type: string, enum: [daily, weekly, monthly, quarterly, yearly, all]}}
      responses: {"200": {description: ok}}
  /uploads/presign.json:
    post:
      operationId: presign
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [file_name, file_size]
              properties:
                file_name: {type: string}
                file_size: {type: integer}
      responses: {"200": {description: ok}}
  /t/{topic_id}/posts/{post_id}.json:
    put:
      operationId: editPost
      parameters:
        - {name: topic_id, in: path, required: true, schema: {type: integer}}
        - {name: post_id, in: path, required: true, schema: {type: integer}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                post: {type: object, properties: {raw: {type: string}}}
      responses: {"200": {description: ok}}
  /posts/{id}/actions.json:
    post:
      operationId: flagPost
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [post_action_type_id]
              properties:
                post_action_type_id: {type: integer}
      responses: {"200": {description: ok}}
  /t/{id}/posts.json:
    get:
      operationId: somePosts
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
        - {name: "post_ids[]", in: query, required: true, schema: {type: integer}}
      responses: {"200": {description: ok}}
  /admin/backups/{filename}:
    get:
      operationId: downloadBackup
      parameters:
        - {name: filename, in: path, required: true, schema: {type: string}}
        - {name: token, in: query, required: true, schema: {type: string}}
      responses: {"200": {description: ok}}
  /admin/backups.json:
    post:
      operationId: backUp
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [with_uploads]
              properties:
                with_uploads: {type: boolean}
      responses: {"200": {description: ok}}
  /admin/badges.json:
    post:
      operationId: createBadge
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [name, badge_type_id]
              properties:
                name: {type: string}
                badge_type_id: {type: integer, description: "1 for Gold, 2 for Silver, 3 for Bronze."}
      responses: {"200": {description: ok}}
"#;

    #[test]
    fn a_yes_or_no_left_open_by_whether_is_lacked() {
        let backup = action(SPEC, "backUp");
        lacks(
            &backup,
            "with_uploads",
            &[
                "Take a fresh backup. I haven't made up my mind whether it should include all the uploaded photos.",
                "Take a backup first. Whether the uploaded jingles go in too, the tech lead still hasn't said.",
            ],
        );
        lacks_nothing(
            &backup,
            &[
                // Said and settled.
                "Take a backup with the uploaded photos. I don't know whether it will be quick.",
                // The whether clause is in another sentence.
                "Check whether the uploads are big. I haven't said anything to the committee.",
            ],
        );
    }

    #[test]
    fn a_lack_listing_the_values_of_an_input_or_of_which_after_them_names_it() {
        let badge = action(SPEC, "createBadge");
        lacks(
            &badge,
            "badge_type_id",
            &[
                "Make a badge called Shed Hero. We haven't agreed yet whether it's gold, silver or bronze.",
                "Make a badge called First Outing. The committee hasn't decided between gold, silver and bronze.",
                "Set up a badge called Graduate; we haven't settled on gold or bronze yet.",
                // Listed before a lack of "which".
                "Make a badge called Lock Keeper. It has to be gold, silver or bronze, and I can't remember which.",
                "Make a badge called Lock Keeper, gold or silver, but I'm not sure which one.",
            ],
        );
        lacks_nothing(
            &badge,
            &[
                // One value is no list of choices.
                "Make a gold badge called Shed Hero; I'm not sure gold is right, but go ahead.",
                "Make it a bronze badge called Shed Hero. I don't know if silver would be better.",
                // Choices far past the lack are another matter.
                "I don't know who will earn it first, but make a badge called Shed Hero, gold, silver or bronze.",
                // One value of a run broken by other words is no list.
                "Make a badge called Shed Hero, gold. I don't know if it should be silver later on or not.",
                // Choices in an earlier sentence are settled there.
                "Gold or silver were both talked about. Make it a gold badge called Shed Hero; I can't remember which member asked.",
            ],
        );
    }

    #[test]
    fn choices_are_listed_by_any_form_of_their_values_a_few_words_from_the_join() {
        lacks(
            &action(SPEC, "directory"),
            "period",
            &["Thank whoever got the most likes. I haven't decided between the past month and the whole year."],
        );
    }

    #[test]
    fn what_the_user_says_they_lack_is_read_by_the_words_for_it() {
        let delete = action(SPEC, "deleteGroup");
        lacks(
            &delete,
            "id",
            &[
                "Delete the Wind Sectional 2019 group. Sorry, I don't know its number.",
                "Get rid of the old wind group; I've lost its ID.",
                "Delete the wind group, I have no idea of its number",
                "Delete the wind group. We haven't agreed on its number yet.",
                "Delete the wind group, though I didn't note its number.",
                "Delete the wind group; I never wrote down its ID.",
            ],
        );
        lacks_nothing(
            &delete,
            &[
                "Delete group 2019, I don't know why it is still there.",
                "Delete group 31. I'm not sure anyone uses it, but the number is right.",
                "Delete the group I lost track of: 31",
            ],
        );
        let presign = action(SPEC, "presign");
        assert_eq!(
            lacking(
                &presign,
                "Presign perseids.mov. I'm not sure how big the file is, though."
            ),
            ["file_size"]
        );
        assert_eq!(
            lacking(
                &presign,
                "Presign the talk video; I haven't decided on its file name yet."
            ),
            ["file_name"]
        );
    }

    #[test]
    fn a_one_word_name_is_lacked_by_its_two_words() {
        let download = action(SPEC, "downloadBackup");
        lacks(
            &download,
            "filename",
            &[
                "I have the token b41d7e93c0. Trouble is, I don't have the file's name.",
                "Fetch the backup with token b41d7e93c0; I can't remember the file name.",
            ],
        );
        lacks_nothing(
            &download,
            &["Download forum-2025.tar.gz, token b41d7e93c0. I don't have a name for it yet."],
        );
    }

    #[test]
    fn what_a_thing_is_called_is_its_name() {
        let members = action(SPEC, "groupMembers");
        lacks(
            &members,
            "name",
            &[
                "Who is in the group for our course builders? I can't remember what the group is called.",
                "Show the pruning team's members; I don't know what it's named.",
            ],
        );
        lacks_nothing(
            &members,
            &["Show who is in the group called pruners, I don't know how many there are."],
        );
    }

    #[test]
    fn a_login_is_lacked_by_its_username_or_address() {
        let spec = r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/session/forgot_password": {"post": {
            "operationId": "sendReset",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": ["login"], "properties": {"login": {"type": "string"}}}}}}}}}}"#;
        let reset = Catalog::parse(spec).unwrap().actions.remove(0);
        for wrote in [
            "Send Margaret a reset link. I don't have her username or address handy.",
            "Send Margaret a reset link; I've lost her email.",
        ] {
            assert_eq!(lacking(&reset, wrote), ["login"], "{wrote}");
        }
        assert!(lacking(&reset, "Send margaret_w a reset link, I don't know why").is_empty());
    }

    #[test]
    fn a_word_naming_several_inputs_names_the_one_with_most_words_of_its_name_there() {
        let edit = action(SPEC, "editPost");
        assert_eq!(
            lacking(&edit, "Fix the typo in topic 42; I don't know the post id."),
            ["post_id"]
        );
        // "number" names both ids as much: none; the post object is no value.
        assert!(lacking(&edit, "Fix my post in topic 42. I don't know its number.").is_empty());
        let flag = action(SPEC, "flagPost");
        assert_eq!(
            lacking(
                &flag,
                "Flag post 66 as spam; I don't know spam's action type number."
            ),
            ["post_action_type_id"]
        );
        // A thing's number is its id, whatever other input has the thing's word.
        assert_eq!(
            lacking(
                &flag,
                "Give Dave's post a like from me. I don't know the post's number though."
            ),
            ["id"]
        );
    }

    #[test]
    fn a_lacked_value_is_dropped_unless_a_later_message_gives_it() {
        let delete = action(SPEC, "deleteGroup");
        let reviewed = |params: serde_json::Value| Reviewed {
            params: params.as_object().unwrap().clone(),
            ..Reviewed::default()
        };
        let wrote = "Delete the Wind Sectional 2019 group. Sorry, I don't know its number.";
        let mut made_up = reviewed(json!({"id": 2019}));
        drop_lacking(&delete, &[wrote.into()], &mut made_up);
        assert!(made_up.params.is_empty());
        assert_eq!(
            made_up.repairs,
            ["id: dropped 2019: the user said they do not have it"]
        );
        // Later in the same message it is still not the value they lack.
        let mut named_after = reviewed(json!({"id": 57}));
        let one = "Delete the old wind group. I don't know its number, only that 57 is not it.";
        drop_lacking(&delete, &[one.into()], &mut named_after);
        assert!(named_after.params.is_empty());
        // A code written in the message is theirs: what they lack is something else.
        let mut code = reviewed(json!({"id": "OUT-2025-0418"}));
        let thread = "The outing is OUT-2025-0418. Delete its group; I don't know its number.";
        drop_lacking(&delete, &[thread.into()], &mut code);
        assert_eq!(code.params["id"], "OUT-2025-0418");
        // Given in an answer afterwards, it is theirs.
        let mut given = reviewed(json!({"id": 57}));
        drop_lacking(&delete, &[wrote.into(), "It is 57.".into()], &mut given);
        assert_eq!(given.params["id"], 57);
        assert!(given.repairs.is_empty());
        // The model's key written loosely (`post_ids` for `post_ids[]`) is the input's.
        let posts = action(SPEC, "somePosts");
        let wrote = "In thread 8615 fetch just the posts with Friday's scores; I didn't note their numbers.";
        let mut loose = reviewed(json!({"id": 8615, "post_ids": ["Friday's scores"]}));
        drop_lacking(&posts, &[wrote.into()], &mut loose);
        assert_eq!(loose.params, *json!({"id": 8615}).as_object().unwrap());
    }
}

#[cfg(test)]
mod request_sets {
    //! [`lacking`] over the labelled request sets of `docs/data/actions`: what it names is
    //! among the inputs a request leaves out, or [`drop_lacking`] keeps the value the request
    //! gives for it.

    use super::{drop_lacking, lacking};
    use crate::labelled;
    use crate::review::Reviewed;
    use crate::spec::Catalog;

    #[test]
    fn what_the_labelled_requests_say_they_lack_is_what_they_leave_out() {
        let spec = labelled::data_dir().join("discourse-full.openapi.json");
        let catalog = Catalog::parse(&std::fs::read_to_string(spec).unwrap()).unwrap();
        let (mut named, mut kept) = (0, 0);
        let mut wrong = Vec::new();
        for (file, request) in labelled::requests() {
            let Some(action) = catalog
                .actions
                .iter()
                .find(|a| a.operation_id == request["operation_id"])
            else {
                continue;
            };
            let text = request["request"].as_str().unwrap();
            let left_out = request["missing_required"].as_array().unwrap();
            for name in lacking(action, text) {
                named += 1;
                if left_out.iter().any(|n| *n == name.as_str()) {
                    continue;
                }
                // Given after all: the value the request gives must be kept.
                let given = request["required_params"][&name].clone();
                let mut reviewed = Reviewed::default();
                reviewed.params.insert(name.clone(), given);
                drop_lacking(action, &[text.to_string()], &mut reviewed);
                if reviewed.params.contains_key(&name) {
                    kept += 1;
                } else {
                    wrong.push(format!("{file} {}: {name}", request["id"]));
                }
            }
        }
        println!("{named} inputs named as lacked, {kept} of them given and kept");
        assert!(named > 10, "only {named} named");
        assert!(wrong.is_empty(), "{wrong:?}");
    }
}
