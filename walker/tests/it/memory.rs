//! `--memory`: facts of one walk are stored beside the index and recalled by a later question.

use std::fs;
use std::sync::Arc;

use walkrag_walker::memory::{Memory, MemoryError, MEMORY_FILE};
use walkrag_walker::testing::{
    block_on, chunk_of, collect, env, test_index, FakeWordEmbedder, ScriptedChatModel, Turn,
};
use walkrag_walker::{Event, Origin, Step, Strategy, Walk};

fn walk_with(memory: &Arc<Memory>) -> Walk {
    Walk {
        k: 3,
        max_cycles: 2,
        memory: Some(memory.clone()),
        ..Walk::default()
    }
}

#[test]
fn a_follow_up_question_starts_from_the_facts_of_an_earlier_one() {
    let t = test_index();
    let dir = tempfile::tempdir().unwrap();
    let d1 = chunk_of(&t.index, "d1");
    let d2 = chunk_of(&t.index, "d2");
    let memory = Arc::new(Memory::of_index(dir.path()).unwrap());
    assert!(memory.is_empty());

    // First question: one fact from d1, then the answer.
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!(
            "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"names the mayor\", \"source\": \"{d1}\"}}\n\
             {{\"fact\": \"Invented.\", \"relevance\": \"none\", \"source\": \"ffffffff.9\"}}\n\
             {{\"sufficient\": true}}"
        )),
        Turn::Reply(format!("Answer: Ilsa Brandt\nSources: [{d1}]")),
    ]);
    let first = block_on(walk_with(&memory).run(
        "Who is the mayor of Velmora?",
        env(&t.index, &model),
        &mut |_| {},
    ))
    .unwrap();
    assert_eq!(first.answer, "Ilsa Brandt");
    assert_eq!(memory.len(), 1, "only the trusted fact is remembered");
    assert!(first.trace.config["memory"]
        .as_str()
        .unwrap()
        .ends_with(MEMORY_FILE));

    // A follow-up, with the memory read back from disk as a new process would.
    let memory = Arc::new(Memory::of_index(dir.path()).unwrap());
    assert_eq!(memory.len(), 1);
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!(
            "{{\"fact\": \"Ilsa Brandt was born in Kessel.\", \"relevance\": \"birthplace\", \"source\": \"{d2}\"}}\n{{\"sufficient\": true}}"
        )),
        Turn::Reply(format!("Answer: Kessel\nSources: [{d2}], [{d1}]")),
    ]);
    let mut events = Vec::new();
    let second = block_on(walk_with(&memory).run(
        "Where was Ilsa Brandt, the mayor of Velmora, born?",
        env(&t.index, &model),
        &mut collect(&mut events),
    ))
    .unwrap();
    assert_eq!(second.answer, "Kessel");

    // The remembered fact is shown in the first read, marked in the trace and the events,
    // and its chunk is not retrieved again as new material.
    let requests = model.requests.lock().unwrap();
    let first_read = &requests[0].messages.last().unwrap().content;
    assert!(
        first_read.contains(&format!("- The mayor of Velmora is Ilsa Brandt. [{d1}]")),
        "{first_read}"
    );
    let remembered: Vec<_> = second
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Fact(f) if f.remembered => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(remembered.len(), 1);
    assert_eq!(remembered[0].chunk_id, Some(d1));
    assert!(remembered[0]
        .relevance
        .contains("Who is the mayor of Velmora?"));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Fact(f) if f.remembered)));
    let retrieved = walkrag_walker::testing::searches(&second);
    // The remembered chunk is recorded as memory's find; the question's search passes it over.
    assert_eq!(retrieved[0].origin, Origin::Memory);
    assert_eq!(retrieved[0].hits[0].chunk_id, d1);
    assert_eq!(retrieved[1].origin, Origin::Question);
    assert!(retrieved[1].hits.iter().all(|h| h.chunk_id != d1));
    assert!(
        second.ranked.contains(&d1),
        "the remembered chunk is evidence"
    );

    // The new fact is stored; the old one is not stored twice.
    assert_eq!(memory.len(), 2);
    let lines = fs::read_to_string(dir.path().join(MEMORY_FILE)).unwrap();
    assert_eq!(lines.lines().count(), 2);
}

#[test]
fn recall_skips_stale_chunks_other_embedders_and_distant_facts() {
    let t = test_index();
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::of_index(dir.path()).unwrap();
    let d1 = chunk_of(&t.index, "d1");
    let gone = walkrag_engine::ChunkId::parse("0badc0de.0").unwrap();
    let stored = memory
        .remember(
            "q",
            &[
                ("The mayor of Velmora is Ilsa Brandt.", d1),
                ("The mayor of Velmora is Ilsa Brandt.", d1),
                ("The mayor of Velmora was Otto Brandt.", gone),
            ],
            &FakeWordEmbedder,
        )
        .unwrap();
    assert_eq!(stored, 2, "a repeated fact is stored once");
    let query = {
        use walkrag_core::Embedder;
        FakeWordEmbedder.embed_one("Velmora mayor").unwrap()
    };
    let recalled = memory.recall(&query, "test:words", &t.index, 5, 0.3);
    assert_eq!(
        recalled.len(),
        1,
        "the fact of a chunk no longer indexed is stale"
    );
    assert_eq!(recalled[0].fact.chunk_id, d1);
    assert!(memory
        .recall(&query, "other:embedder", &t.index, 5, 0.3)
        .is_empty());
    let far = {
        use walkrag_core::Embedder;
        FakeWordEmbedder.embed_one("orbital mechanics").unwrap()
    };
    assert!(memory
        .recall(&far, "test:words", &t.index, 5, 0.3)
        .is_empty());
}

#[test]
fn a_cut_off_last_line_is_ignored_a_broken_middle_line_is_an_error() {
    let t = test_index();
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::of_index(dir.path()).unwrap();
    let d1 = chunk_of(&t.index, "d1");
    memory
        .remember(
            "q",
            &[("The mayor of Velmora is Ilsa Brandt.", d1)],
            &FakeWordEmbedder,
        )
        .unwrap();
    let path = dir.path().join(MEMORY_FILE);
    let good = fs::read_to_string(&path).unwrap();

    fs::write(&path, format!("{good}{{\"question\": \"q\", \"fa")).unwrap();
    let reopened = Memory::of_index(dir.path()).unwrap();
    assert_eq!(reopened.len(), 1);
    // A fact remembered after the crash cuts the broken tail off instead of joining it, so
    // the file still opens.
    reopened
        .remember(
            "q2",
            &[("Velmora lies on the river Tam.", d1)],
            &FakeWordEmbedder,
        )
        .unwrap();
    assert_eq!(Memory::of_index(dir.path()).unwrap().len(), 2);

    fs::write(&path, format!("not json\n{good}")).unwrap();
    let err = Memory::of_index(dir.path()).unwrap_err();
    assert!(matches!(err, MemoryError::Corrupt { line: 1, .. }), "{err}");
    assert!(err.to_string().contains(MEMORY_FILE), "{err}");
}
