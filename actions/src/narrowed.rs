//! Operations that read a part of what a neighbour reads. "Get a list of private messages
//! sent for a user" is a part of "Get a list of private messages for a user"; a small model
//! picks the part for "all the private messages in her forum inbox, both what she received and
//! what she sent", reading "sent" and past "inbox". Likewise "List users by flag", whose path
//! takes one of `active`, `new`, `staff`…, for "every account ordered by days visited". A
//! request that, read without what it says not to want ([`crate::negated::affirmed`]), names
//! the rest of the whole, or none of the values that choose the part, does not pick the part
//! ([`narrower_than_asked`]).

use crate::action::{Action, Location};
use crate::review::{token, tokens};

/// Words of an operation's summary that narrow it to a part, each with the words that name
/// what the part leaves out: messages sent leave out those received, that an inbox holds.
const PARTS: [(&str, &[&str]); 2] = [
    ("sent", &["inbox", "inboxes", "received", "incoming"]),
    // A site's basic info leaves out its categories, groups and the rest of its setup.
    ("basic", BEYOND_BASICS),
];

/// Words that ask for more than a site's basics (its title, description and logo).
const BEYOND_BASICS: &[&str] = &[
    "category",
    "categories",
    "subcategories",
    "section",
    "sections",
    "groups",
    "trust",
    "everything",
    "whole",
    "full",
    "complete",
    "entire",
];

/// Whether `action` reads a part of what the request `sought` (read without its negated
/// clauses) asks for: its summary narrows it to a part ([`PARTS`]) and the request names what
/// the part leaves out, or a value the request never writes chooses the part
/// ([`chosen_by_a_value_not_written`]).
pub(crate) fn narrower_than_asked(action: &Action, sought: &str) -> bool {
    let summary = action.summary.as_deref().unwrap_or_default();
    let words_of = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let summary = words_of(summary);
    let asked = words_of(sought);
    let names_the_rest = PARTS.iter().any(|(part, rest)| {
        summary.iter().any(|w| w == part) && asked.iter().any(|w| rest.contains(&w.as_str()))
    });
    names_the_rest || chosen_by_a_value_not_written(action, &asked)
}

/// Whether a required path input of `action` takes one of a list of values (`flag`: `active`,
/// `new`, `staff`…) of which the words `asked` (lower case) write none, in any form
/// ([`token`]: "suspended accounts" writes `suspended`).
fn chosen_by_a_value_not_written(action: &Action, asked: &[String]) -> bool {
    let asked: Vec<String> = asked.iter().map(|w| token(w)).collect();
    action
        .inputs
        .iter()
        .filter(|input| input.location == Location::Path && input.required)
        .filter(|input| !input.enum_values.is_empty())
        .any(|input| {
            !input.enum_values.iter().any(|value| {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string);
                tokens(&text).iter().any(|w| asked.contains(w))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::negated::affirmed;
    use crate::spec::Catalog;

    fn catalog(path: &str) -> Catalog {
        Catalog::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn small() -> Catalog {
        Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
                "/pm/{u}.json": {"get": {"operationId": "all", "summary": "Get a list of private messages for a user"}},
                "/pm-sent/{u}.json": {"get": {"operationId": "sent", "summary": "Get a list of private messages sent for a user"}}}}"#,
        )
        .unwrap()
    }

    #[test]
    fn messages_sent_are_narrower_than_an_inbox_or_what_was_received() {
        let catalog = small();
        let sent = catalog.get("sent").unwrap();
        for wrote in [
            "Show me all the private messages in her forum inbox, both what she received and what she sent.",
            "Pull up felix_b's personal messages, the ones he received as well as the ones he sent.",
        ] {
            assert!(narrower_than_asked(sent, &affirmed(wrote)), "{wrote}");
        }
        for wrote in [
            "Which private messages has rita sent out?",
            "Show me the private messages she sent, not what's landed in her inbox.",
            "Only the messages he sent; I don't want his inbox.",
        ] {
            assert!(!narrower_than_asked(sent, &affirmed(wrote)), "{wrote}");
        }
        // The whole is not narrowed.
        let all = catalog.get("all").unwrap();
        assert!(!narrower_than_asked(all, "everything in her inbox"));
    }

    #[test]
    fn a_part_chosen_by_a_value_is_narrower_than_a_request_writing_none() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
                "/admin/users/list/{flag}.json": {"get": {"operationId": "byFlag", "summary": "List users by flag",
                    "parameters": [{"name": "flag", "in": "path", "required": true,
                        "schema": {"type": "string", "enum": ["active", "new", "staff", "suspended"]}}]}}}}"#,
        )
        .unwrap();
        let by_flag = catalog.get("byFlag").unwrap();
        assert!(narrower_than_asked(
            by_flag,
            "As an admin I need every account on the forum ordered by days visited."
        ));
        for wrote in [
            "Which accounts are suspended right now?",
            "List the staff accounts",
            "Show me the new members",
        ] {
            assert!(!narrower_than_asked(by_flag, wrote), "{wrote}");
        }
    }

    #[test]
    fn a_sites_basics_are_narrower_than_its_categories_or_whole_setup() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
                "/site/basic-info.json": {"get": {"operationId": "basic", "summary": "Get site basic info"}}}}"#,
        )
        .unwrap();
        let basic = catalog.get("basic").unwrap();
        let beyond = |wrote: &str| narrower_than_asked(basic, &affirmed(wrote));
        assert!(beyond(
            "Pull the full site info, every category and the trust levels."
        ));
        assert!(!beyond(
            "Just the forum's title and logo, not every category and group."
        ));
        assert!(!beyond(
            "What are our forum's title and logo? I don't need the whole setup."
        ));
    }

    #[test]
    fn no_labelled_request_asks_beyond_the_part_it_labels() {
        let data = crate::labelled::data_dir();
        let catalog = catalog(data.join("discourse-full.openapi.json").to_str().unwrap());
        let (mut beyond, mut wrong) = (0, Vec::new());
        for (file, request) in crate::labelled::requests() {
            let text = affirmed(request["request"].as_str().unwrap());
            let Some(action) = catalog.get(request["operation_id"].as_str().unwrap()) else {
                continue;
            };
            // Every operation of the catalog that the request asks beyond.
            let narrowed = catalog
                .actions
                .iter()
                .filter(|a| narrower_than_asked(a, &text))
                .count();
            beyond += usize::from(narrowed > 0);
            if narrower_than_asked(action, &text) {
                wrong.push(format!("{file} {}: {text}", request["id"]));
            }
        }
        println!("{beyond} labelled requests ask beyond a part");
        assert!(beyond > 5, "only {beyond}");
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
