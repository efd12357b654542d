//! Example requests: written by a (scripted) model per operation, kept in the index's
//! examples file across runs, and searched with the operation: by their words, and embedded
//! as records of their own.

use std::fs;
use std::path::Path;

use walkrag_actions::{
    write_examples, Catalog, ExamplesError, ExamplesFile, GivenExamples, ACTION_KIND,
    EXAMPLES_FILE, EXAMPLE_KIND,
};
use walkrag_walker::testing::{ScriptedChatModel, Turn};

use crate::{notes, notes_yaml};

fn reply(text: &str) -> Turn {
    Turn::Reply(text.to_string())
}

/// Has `model` write the examples of every operation of `catalog` into `file`.
async fn write_all(file: &mut ExamplesFile, model: &ScriptedChatModel, catalog: &Catalog) {
    for action in &catalog.actions {
        let examples = write_examples(model, &catalog.title, action).await.unwrap();
        file.put(examples).unwrap();
    }
}

#[tokio::test]
async fn examples_are_written_per_operation_kept_and_searched_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = notes();
    let model = ScriptedChatModel::new(
        catalog
            .actions
            .iter()
            .map(|a| {
                reply(&format!(
                    "1. Please do {} now\n2. \"Could you {0} for me\"",
                    a.operation_id
                ))
            })
            .collect(),
    );
    let mut file = ExamplesFile::open(dir.path()).unwrap();
    assert_eq!(file.missing(&catalog).len(), catalog.actions.len());
    for action in file.missing(&catalog) {
        let examples = write_examples(&model, &catalog.title, action)
            .await
            .unwrap();
        assert_eq!(examples.model, "test:scripted");
        file.put(examples).unwrap();
    }

    // The prompt names the API and the operation's line, never a credential input.
    let requests = model.requests.lock().unwrap();
    let prompt = &requests[0].messages[1].content;
    assert!(
        prompt.contains(&format!("API: {}", catalog.title)),
        "{prompt}"
    );
    assert!(prompt.contains(&catalog.actions[0].line()), "{prompt}");

    let mut reread = notes();
    let kept = ExamplesFile::open(dir.path()).unwrap();
    assert!(kept.missing(&reread).is_empty());
    kept.attach(&mut reread);
    let create = reread.get("createNote").unwrap();
    assert_eq!(
        create.examples,
        ["Please do createNote now", "Could you createNote for me"]
    );
    // Searched by their words with the operation's, and embedded one record each.
    let joined = "requests: Please do createNote now / Could you createNote for me";
    assert!(
        create.keyword_text().ends_with(joined),
        "{}",
        create.keyword_text()
    );
    assert!(!create.embed_text().contains("createNote now"));
    let records = reread.records(Path::new("/specs/notes.yaml"));
    assert_eq!(records.len(), 3 * reread.actions.len());
    let at = records.iter().position(|r| r.id == "createNote").unwrap();
    let (record, examples) = (&records[at], &records[at + 1..at + 3]);
    assert_eq!(record.kind, ACTION_KIND);
    assert_eq!(record.text, create.embed_text());
    assert_eq!(
        examples
            .iter()
            .map(|r| (
                r.id.as_str(),
                r.kind.as_str(),
                r.text.as_str(),
                r.operation_id.as_str()
            ))
            .collect::<Vec<_>>(),
        [
            (
                "createNote#example-1",
                EXAMPLE_KIND,
                "Please do createNote now",
                "createNote"
            ),
            (
                "createNote#example-2",
                EXAMPLE_KIND,
                "Could you createNote for me",
                "createNote"
            ),
        ]
    );
    // Examples are not part of what an operation is: its hash stays.
    assert_eq!(create.hash, notes().get("createNote").unwrap().hash);
}

#[tokio::test]
async fn a_changed_operation_is_written_again_and_a_cut_line_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = notes();
    let model = ScriptedChatModel::new(
        (0..catalog.actions.len() + 1)
            .map(|n| reply(&format!("show me note {n} please")))
            .collect(),
    );
    let mut file = ExamplesFile::open(dir.path()).unwrap();
    write_all(&mut file, &model, &catalog).await;
    // A run killed while writing leaves half a line behind.
    let path = dir.path().join(EXAMPLES_FILE);
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str("{\"operation_id\": \"deleteNo");
    fs::write(&path, text).unwrap();

    let changed =
        Catalog::parse(&notes_yaml().replace("summary: Delete a note", "summary: Bin a note"))
            .unwrap();
    let mut file = ExamplesFile::open(dir.path()).unwrap();
    let missing: Vec<&str> = file
        .missing(&changed)
        .iter()
        .map(|a| a.operation_id.as_str())
        .collect();
    assert_eq!(missing, ["deleteNote"]);
    let delete = changed.get("deleteNote").unwrap();
    file.put(
        write_examples(&model, &changed.title, delete)
            .await
            .unwrap(),
    )
    .unwrap();

    let reread = ExamplesFile::open(dir.path()).unwrap();
    assert!(reread.missing(&changed).is_empty());
    assert_eq!(
        reread.get(delete).unwrap().examples,
        [format!("show me note {} please", catalog.actions.len())]
    );
}

#[tokio::test]
async fn labelled_requests_given_in_a_file_replace_written_examples_of_the_operations_they_name() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = notes();
    let mut file = ExamplesFile::open(dir.path()).unwrap();
    let model = ScriptedChatModel::new(
        (0..catalog.actions.len())
            .map(|n| reply(&format!("1. do thing {n} now")))
            .collect(),
    );
    write_all(&mut file, &model, &catalog).await;

    // A request set of `walkrag eval --spec`: other fields are passed over, blank lines too,
    // a request given twice is kept once, white space is made single spaces.
    let given_path = dir.path().join("past.jsonl");
    fs::write(
        &given_path,
        "{\"id\": \"a1\", \"request\": \"Bin note 12,\\n it is stale\", \"operation_id\": \"deleteNote\", \"mutating\": true}\n\
         \n\
         {\"request\": \"bin note 12, it is STALE\", \"operation_id\": \"deleteNote\"}\n\
         {\"request\": \"Throw away note 3\", \"operation_id\": \"deleteNote\"}\n\
         {\"request\": \"Feed the cat\", \"operation_id\": \"feedCat\"}\n",
    )
    .unwrap();
    let given = GivenExamples::read(&given_path).unwrap();
    assert_eq!(given.len(), 3);
    assert_eq!(
        given.operations().collect::<Vec<_>>(),
        [("deleteNote", 2), ("feedCat", 1)]
    );
    // A second file joins the first; each is named as the examples' source.
    let more_path = dir.path().join("more.jsonl");
    fs::write(
        &more_path,
        "{\"request\": \"THROW AWAY NOTE 3\", \"operation_id\": \"deleteNote\"}\n\
         {\"request\": \"Show note 9\", \"operation_id\": \"getNote\"}\n",
    )
    .unwrap();
    let mut joined = given.clone();
    joined.join(GivenExamples::read(&more_path).unwrap());
    assert_eq!(
        joined.operations().collect::<Vec<_>>(),
        [("deleteNote", 2), ("feedCat", 1), ("getNote", 1)]
    );
    let mut other = ExamplesFile::open(&dir.path().join("other")).unwrap();
    assert_eq!(other.give(&catalog, &joined).unwrap(), 2);
    let source = &other.get(catalog.get("getNote").unwrap()).unwrap().model;
    assert!(
        source.contains("past.jsonl") && source.contains("more.jsonl"),
        "{source}"
    );

    assert_eq!(file.give(&catalog, &given).unwrap(), 1);
    let lines = fs::read_to_string(dir.path().join(EXAMPLES_FILE))
        .unwrap()
        .lines()
        .count();
    // The same requests given again change nothing, and write nothing.
    assert_eq!(file.give(&catalog, &given).unwrap(), 1);
    let reread = ExamplesFile::open(dir.path()).unwrap();
    assert_eq!(
        fs::read_to_string(dir.path().join(EXAMPLES_FILE))
            .unwrap()
            .lines()
            .count(),
        lines
    );
    let delete = catalog.get("deleteNote").unwrap();
    let kept = reread.get(delete).unwrap();
    assert_eq!(
        kept.examples,
        ["Bin note 12, it is stale", "Throw away note 3"]
    );
    assert_eq!(kept.model, format!("file:{}", given_path.display()));
    // The operations not named keep what the model wrote.
    let create = catalog.get("createNote").unwrap();
    assert_eq!(reread.get(create).unwrap().model, "test:scripted");
    // Attached, the given ones are marked as given, the written ones not.
    let mut attached = notes();
    reread.attach(&mut attached);
    let given_flag = |id: &str| attached.get(id).unwrap().examples_given;
    assert!(given_flag("deleteNote"));
    assert!(!given_flag("createNote"));

    // A line that is not a labelled request is an error naming the file and the line; a
    // file without any, and a file that cannot be read, are errors too.
    fs::write(
        &given_path,
        "{\"request\": \"Bin note 12\", \"operation_id\": \"deleteNote\"}\n{\"request\": \"no label\"}\n",
    )
    .unwrap();
    let error = GivenExamples::read(&given_path).unwrap_err();
    assert!(
        matches!(error, ExamplesError::Given { line: 2, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("past.jsonl, line 2"), "{error}");
    fs::write(&given_path, "\n\n").unwrap();
    let error = GivenExamples::read(&given_path).unwrap_err();
    assert!(
        matches!(error, ExamplesError::NoneGiven { .. }),
        "{error:?}"
    );
    let error = GivenExamples::read(&dir.path().join("absent.jsonl")).unwrap_err();
    assert!(matches!(error, ExamplesError::Io { .. }), "{error:?}");
}
