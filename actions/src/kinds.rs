//! Lists and the things in them. A request that names one thing of a kind ("the Methods tag
//! group", "tag group 4", "the group called moderators") asks to read that thing, not the
//! list of its kind; a small model reading "What tags are in the Methods tag group?" often
//! picks the list of tag groups all the same. Where an operation that reads one thing of the
//! kind was found beside the list, the pick is that one ([`names_one_listed`]).
//!
//! The kind comes from the list's path (`/tag_groups.json` lists tag groups), and an
//! operation reads one of them when its path goes on from the list's with an input
//! (`/tag_groups/{id}.json`, `/tag/{name}.json`, `/groups/{name}/members.json`).

use crate::action::{Action, Location, Type};
use crate::review::{gives_a_number, identifier_tokens, possessive_owner, text_words};

/// Words that can follow a noun phrase that has ended: "the varroa tag is…", "the group our
/// crew uses", "post 512 for me", "the arbiters group set up". A kind's word followed by another word ("the backup
/// files", "the nightly backup job", "user accounts") is part of a longer name of something
/// else.
const PHRASE_FOLLOWERS: [&str; 61] = [
    "is", "was", "in", "on", "at", "to", "for", "we", "i", "you", "they", "our", "my", "that",
    "which", "who", "and", "or", "but", "so", "with", "has", "had", "it", "its", "being", "from",
    "of", "as", "by", "he", "she", "please", "now", "right", "here", "there", "been", "gets",
    "got", "uses", "holds", "are", "were", "set", "look", "looks", "work", "works", "does", "do",
    "should", "can", "could", "will", "would", "might", "needs", "seems", "still", "actually",
];

/// Words that point at one known thing ("the", "our", "that").
const DEFINITE: [&str; 10] = [
    "the", "our", "this", "that", "his", "her", "their", "my", "your", "its",
];

/// Words that make a phrase about any, every or a new one of a kind ("every tag", "which
/// group", "a group"), not one known thing.
const NOT_ONE: [&str; 13] = [
    "each", "every", "any", "all", "which", "what", "a", "an", "some", "other", "new", "no",
    "whatever",
];

/// Words ending in 's that are not possessives ("what's the group…").
const CONTRACTIONS: [&str; 11] = [
    "what's", "that's", "it's", "there's", "here's", "who's", "let's", "he's", "she's", "where's",
    "how's",
];

/// How many words before a kind's word the word that makes it definite may stand ("the
/// ride leaders' group").
const DEFINITE_REACH: usize = 4;

/// The kind of thing `action` lists, as words: a read that takes no path input and whose
/// path ends in a plural ("/tag_groups.json" lists `["tag", "group"]`); `None` for any
/// other operation.
pub(crate) fn listed_kind(action: &Action) -> Option<Vec<String>> {
    if action.needs_confirmation() || action.path.contains('{') {
        return None;
    }
    let last = stem(&action.path).rsplit('/').next()?;
    let singular = singular(last)?;
    Some(
        singular
            .split(['_', '-'])
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect(),
    )
}

/// Whether `item` reads one thing of what `list` lists: a read with a path input whose path
/// goes on from the list's, the kind written plural or singular ("/tag_groups/{id}.json" and
/// "/tag/{name}.json" of "/tag_groups.json" and "/tags.json").
pub(crate) fn reads_one_of(item: &Action, list: &Action) -> bool {
    if item.needs_confirmation() || !item.inputs.iter().any(|i| i.location == Location::Path) {
        return false;
    }
    let plural = stem(&list.path);
    let Some((parent, last)) = plural.rsplit_once('/') else {
        return false;
    };
    let Some(singular) = singular(last) else {
        return false;
    };
    [plural.to_string(), format!("{parent}/{singular}")]
        .iter()
        .any(|base| item.path.starts_with(&format!("{base}/{{")))
}

/// The singular of a plural path segment (`tag_groups` → `tag_group`, `categories` →
/// `category`); `None` where it is not a plural.
fn singular(segment: &str) -> Option<String> {
    if let Some(stem) = segment.strip_suffix("ies").filter(|s| !s.is_empty()) {
        return Some(format!("{stem}y"));
    }
    segment
        .strip_suffix('s')
        .filter(|s| !s.is_empty() && !s.ends_with('s'))
        .map(String::from)
}

/// A path without its `.json` ending.
fn stem(path: &str) -> &str {
    path.strip_suffix(".json").unwrap_or(path)
}

/// Whether `request` names one thing of `kind` (its words, singular): the kind followed by
/// a number ("tag group 4", "post 512") or by "called"/"named", or a definite phrase that
/// ends with the kind ("the Methods tag group?", "our show-genres tag group", "the ride
/// leaders' group at…"). A plural ("which tags"), a phrase about any or every one ("every
/// group", "a tag") and a kind's word inside a longer name ("the backup files") name none.
pub(crate) fn names_one(request: &str, kind: &[String]) -> bool {
    let words = text_words(request);
    let n = kind.len();
    if n == 0 || words.len() < n {
        return false;
    }
    (0..=words.len() - n).any(|at| {
        if !words[at..at + n]
            .iter()
            .zip(kind)
            .all(|(w, k)| &w.text == k)
        {
            return false;
        }
        let last = &words[at + n - 1];
        let next = words.get(at + n).map(|w| w.text.as_str());
        if next.is_some_and(|w| w.chars().all(|c| c.is_ascii_digit()))
            || matches!(next, Some("called" | "named"))
        {
            return true;
        }
        // The phrase ends at the kind: punctuation or the end follows, or a word that
        // follows a noun phrase.
        let ends = next.is_none()
            || last
                .after
                .chars()
                .next()
                .is_some_and(|c| c != ' ' && !c.is_alphanumeric())
            || next.is_some_and(|w| PHRASE_FOLLOWERS.contains(&w));
        // Back from the kind to the word that makes it definite, unless one that makes it
        // any comes first or just before it ("whatever the topic").
        let from = at.saturating_sub(DEFINITE_REACH);
        let not_one = |k: usize| NOT_ONE.contains(&words[k].text.as_str());
        ends && (from..at).rev().take_while(|&k| !not_one(k)).any(|k| {
            let w = &words[k];
            let definite = DEFINITE.contains(&w.text.as_str())
                || (possessive_owner(&w.text).is_some()
                    && !CONTRACTIONS.contains(&w.text.as_str()));
            definite && !(k > 0 && not_one(k - 1))
        })
    })
}

/// Whether `picked` lists a kind of thing ([`listed_kind`]) and `request` names one thing of
/// that kind ([`names_one`]): then a read of one such thing ([`reads_one_of`]) is picked
/// instead, where one was found.
pub(crate) fn names_one_listed(request: &str, picked: &Action) -> bool {
    listed_kind(picked).is_some_and(|kind| names_one(request, &kind))
}

/// The kind of thing `action` reads across, as words: a summary that says "across" a plural
/// ("List latest posts across topics" reads across `["topic"]`); `None` where it says none.
pub(crate) fn across_kind(action: &Action) -> Option<Vec<String>> {
    let summary = action.summary.as_deref()?.to_lowercase();
    let mut words = summary.split(|c: char| !c.is_alphanumeric() && c != '_');
    words.find(|w| *w == "across")?;
    let plural = words.find(|w| !w.is_empty())?;
    singular(plural).map(|one| vec![one])
}

/// Whether `action` reads across every thing of a kind of which `request` names one ("From
/// topic 3318, the replies with the counts" against "List latest posts across topics"): the
/// request asks about that one thing, not all of them.
pub(crate) fn across_one_named(request: &str, action: &Action) -> bool {
    across_kind(action).is_some_and(|kind| names_one(request, &kind))
}

/// Names of inputs that page or size a list, whose numbers are no thing's.
const PAGING: [&str; 4] = ["page", "limit", "offset", "per_page"];

/// Whether `action` is a read that takes no input a thing's number could go in (no path
/// input, no input named for an id, no whole number but for paging) and `request` gives a
/// thing's number ("Pull up member 2981's record", "the section, number 14"): the number
/// would go unused, so the request asks for some other read.
pub(crate) fn leaves_a_number_unused(request: &str, action: &Action) -> bool {
    if action.needs_confirmation() {
        return false;
    }
    let takes_a_number = action.inputs.iter().any(|input| {
        let is_id = identifier_tokens(&input.name)
            .last()
            .is_some_and(|w| matches!(w.as_str(), "id" | "ids"));
        let counts = matches!(input.ty, Type::Integer | Type::Number)
            && !PAGING.contains(&input.name.as_str());
        input.location == Location::Path || is_id || counts
    });
    !takes_a_number && gives_a_number(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labelled;
    use crate::negated::affirmed;
    use crate::spec::Catalog;

    fn kind(words: &str) -> Vec<String> {
        words.split(' ').map(String::from).collect()
    }

    fn discourse() -> Catalog {
        let spec = labelled::data_dir().join("discourse-full.openapi.json");
        Catalog::parse(&std::fs::read_to_string(spec).unwrap()).unwrap()
    }

    #[test]
    fn a_list_lists_the_kind_its_path_ends_in_and_an_item_read_goes_on_from_it() {
        let catalog = discourse();
        let get = |id| catalog.get(id).unwrap();
        assert_eq!(listed_kind(get("listTagGroups")), Some(kind("tag group")));
        assert_eq!(listed_kind(get("listTags")), Some(kind("tag")));
        assert_eq!(listed_kind(get("adminListUsers")), Some(kind("user")));
        // A read of one thing, and a change, list nothing.
        assert_eq!(listed_kind(get("getTagGroup")), None);
        assert_eq!(listed_kind(get("createTagGroup")), None);
        assert!(reads_one_of(get("getTagGroup"), get("listTagGroups")));
        assert!(reads_one_of(get("getTag"), get("listTags")));
        assert!(reads_one_of(get("listGroupMembers"), get("listGroups")));
        assert!(!reads_one_of(get("getTag"), get("listTagGroups")));
        assert!(!reads_one_of(get("getGroupById"), get("listGroups")));
        // A change of one thing is not a read of it.
        assert!(!reads_one_of(get("updateTagGroup"), get("listTagGroups")));
    }

    #[test]
    fn one_thing_is_named_by_a_definite_phrase_a_number_or_a_name() {
        let named = [
            ("What tags are in the Methods tag group?", "tag group"),
            (
                "Which tags sit in our show-genres tag group? I don't know its number.",
                "tag group",
            ),
            ("Just show me which tags sit in tag group 4.", "tag group"),
            ("How is the auditions tag being used at the moment?", "tag"),
            ("Who's in the ride leaders' group at the moment?", "group"),
            ("Get the group named moderators", "group"),
            ("How many likes has post #51200 got so far?", "post"),
        ];
        for (request, words) in named {
            assert!(names_one(request, &kind(words)), "{request}");
        }
        let not_named = [
            ("Which tags are members putting on their threads?", "tag"),
            ("Show every tag group and the tags in each.", "tag group"),
            (
                "List the backup files on the server with their sizes.",
                "backup",
            ),
            (
                "Check whether the nightly backup job is still running.",
                "backup",
            ),
            (
                "Can I get the full list of user accounts on the site?",
                "user",
            ),
            ("Is there a group for the juniors?", "group"),
            // "tag" as the first word of a tag group is not a tag.
            ("What tags are in the Methods tag group?", "tag"),
        ];
        for (request, words) in not_named {
            assert!(!names_one(request, &kind(words)), "{request}");
        }
    }

    #[test]
    fn a_list_picked_for_one_named_thing_gives_way_to_the_read_of_one() {
        let catalog = discourse();
        let get = |id| catalog.get(id).unwrap();
        let found = [get("listTagGroups"), get("getTagGroup"), get("getTag")];
        // The found reads of one thing that a request's pick gives way to.
        let ones_for = |request, picked: &Action| {
            found
                .iter()
                .filter(|item| names_one_listed(request, picked) && reads_one_of(item, picked))
                .map(|a| a.operation_id.as_str())
                .collect::<Vec<_>>()
        };
        let ones = |request| ones_for(request, get("listTagGroups"));
        assert_eq!(
            ones("What tags are in the Methods tag group?"),
            ["getTagGroup"]
        );
        assert!(ones("Show me all the tag groups.").is_empty());
        // A read of one thing picked stays.
        assert!(ones_for("the Methods tag group", get("getTagGroup")).is_empty());
    }

    #[test]
    fn an_operation_across_a_kind_is_not_for_one_thing_of_it() {
        let catalog = discourse();
        let posts = catalog.get("listPosts").unwrap();
        assert_eq!(across_kind(posts), Some(kind("topic")));
        assert!(across_one_named(
            "From topic 3318 I only want the few replies with the mite counts",
            posts
        ));
        for wrote in [
            "Show me the latest posts across every topic",
            "What has been posted lately? I haven't looked at any topic this week.",
        ] {
            assert!(!across_one_named(wrote, posts), "{wrote}");
        }
        assert_eq!(across_kind(catalog.get("getPost").unwrap()), None);
    }

    #[test]
    fn a_read_that_takes_no_number_is_not_for_a_numbered_thing() {
        let catalog = discourse();
        let get = |id| catalog.get(id).unwrap();
        let wrote = "Member number 2981 can't sign up. Pull up her record as staff see it.";
        assert!(leaves_a_number_unused(wrote, get("adminListUsers")));
        assert!(leaves_a_number_unused(
            "What's going on in the Tree Adoption section, number 14?",
            get("listCategories")
        ));
        // A read that takes the number, or a request that gives none.
        assert!(!leaves_a_number_unused(wrote, get("adminGetUser")));
        assert!(!leaves_a_number_unused(
            "Which meetups are on the calendar in category 12?",
            get("listEvents")
        ));
        assert!(!leaves_a_number_unused(
            "Show me every account, newest first.",
            get("adminListUsers")
        ));
    }

    #[test]
    fn no_labelled_request_for_a_list_names_one_thing_of_its_kind() {
        // Over every request of `docs/data/actions` for an operation that lists: none names
        // one thing of the kind listed. Requests for a read of one such thing mostly do.
        // Each is read as the pick reads it, without what it says not to want ("…, not the
        // details of the one bird-box tag").
        let catalog = discourse();
        let (mut items, mut named_items) = (0, 0);
        let mut wrong = Vec::new();
        for (file, request) in labelled::requests() {
            let Some(action) = catalog.get(request["operation_id"].as_str().unwrap()) else {
                continue;
            };
            let text = &affirmed(request["request"].as_str().unwrap());
            if let Some(kind) = listed_kind(action) {
                let has_items = catalog.actions.iter().any(|a| reads_one_of(a, action));
                if has_items && names_one(text, &kind) {
                    wrong.push(format!("{file} {}: {text}", request["id"]));
                }
            }
            let lists = catalog
                .actions
                .iter()
                .filter(|list| reads_one_of(action, list));
            for kind in lists.filter_map(listed_kind) {
                items += 1;
                named_items += usize::from(names_one(text, &kind));
            }
        }
        // Nor does any request for an operation that reads across a kind.
        for (file, request) in labelled::requests() {
            let Some(action) = catalog.get(request["operation_id"].as_str().unwrap()) else {
                continue;
            };
            let text = &affirmed(request["request"].as_str().unwrap());
            if across_one_named(text, action) {
                wrong.push(format!("{file} {}: across", request["id"]));
            }
            if leaves_a_number_unused(text, action) {
                wrong.push(format!("{file} {}: a number unused: {text}", request["id"]));
            }
        }
        println!("{named_items} of {items} requests for one thing of a listed kind name it");
        assert!(named_items * 2 > items, "{named_items} of {items}");
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
