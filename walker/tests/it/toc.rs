//! The `toc` strategy, with the scripted chat model, over a small Markdown report.

use expect_test::expect_file;
use walkrag_core::Constraint;
use walkrag_walker::testing::{
    block_on, collect, env, markdown_index, redact_section_ids, render_request,
    report_index as report, section_of, ScriptedChatModel, TestIndex, Turn, REPORT,
};
use walkrag_walker::{Answer, Event, SectionChooser, Step, Strategy, Termination, Toc};

/// Runs `toc` on `question`, dropping the events.
fn ask(toc: &Toc, t: &TestIndex, model: &ScriptedChatModel, question: &str) -> Answer {
    block_on(toc.run(
        question,
        env(&t.index, model),
        &mut collect(&mut Vec::new()),
    ))
    .unwrap()
}

#[test]
fn the_picked_sections_are_read_in_the_order_picked() {
    let t = report();
    let (fleet, _) = section_of(&t.index, "Fleet");
    let vessels = section_of(&t.index, "Vessels").1.unwrap();
    let crew = section_of(&t.index, "Crew").1.unwrap();
    let (revenue_section, revenue) = section_of(&t.index, "Revenue");
    let revenue = revenue.unwrap();
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!(
            "{{\"sections\": [\"{revenue_section}\", \"{fleet}\"]}}"
        )),
        Turn::Reply(format!(
            "Answer: nine [{vessels}]\nSources: [{vessels}]\nExplanation: the fleet has nine vessels."
        )),
    ]);
    let mut events = Vec::new();
    let question = "How many vessels does the cooperative operate?";
    let answer =
        block_on(Toc::default().run(question, env(&t.index, &model), &mut collect(&mut events)))
            .unwrap();

    assert_eq!(answer.answer, "nine");
    assert_eq!(answer.citations, [vessels]);
    // Cited first, then the picked sections' passages in pick order: Revenue, then the
    // Fleet section with everything under it.
    assert_eq!(answer.ranked, [vessels, revenue, crew]);
    assert_eq!(answer.termination, Termination::SinglePass);
    assert_eq!(answer.usage.llm_calls, 2);

    let requests = model.requests.lock().unwrap();
    // The pick sees every heading with its id; nothing was searched (the headings fit).
    let toc = &requests[0].messages.last().unwrap().content;
    for heading in [
        "Finances", "Revenue", "Costs", "Fleet", "Vessels", "Crew", "Outlook",
    ] {
        let (id, _) = section_of(&t.index, heading);
        assert!(
            toc.contains(&format!("[{id}] {heading}")),
            "{heading} listed"
        );
    }
    // The headings fit, so the one search is the leads': the sections of the question's
    // nearest passages, each with its passage's line that shares most with the question.
    let searches = walkrag_walker::testing::searches(&answer);
    assert_eq!(searches.len(), 1);
    assert_eq!(searches[0].k, Toc::default().leads);
    let (vessels_section, _) = section_of(&t.index, "Vessels");
    let leads = toc
        .split_once("each after the id of the section that holds it:\n")
        .expect("leads listed")
        .1;
    assert!(
        leads.starts_with(&format!(
            "[{vessels_section}] Vessels: The cooperative operates nine vessels"
        )),
        "{leads}"
    );
    // Section ids hash the document's path, a temporary directory here: redacted.
    let prompt = redact_section_ids(&t.index, &render_request(&requests[0]));
    expect_file!["snapshots/toc_prompt.txt"].assert_eq(&prompt);
    // The answer step is shown the passages in the order picked.
    let shown = &requests[1].messages.last().unwrap().content;
    let at = |id: &walkrag_engine::ChunkId| shown.find(&format!("[{id}]")).unwrap();
    assert!(at(&revenue) < at(&vessels) && at(&vessels) < at(&crew));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Note { message } if message.contains("sections picked"))));
}

#[test]
fn a_lead_may_be_picked_and_without_leads_nothing_is_searched() {
    let t = report();
    let (vessels_section, vessels) = section_of(&t.index, "Vessels");
    let vessels = vessels.unwrap();
    let question = "How many vessels does the cooperative operate?";
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!("{{\"sections\": [\"{vessels_section}\"]}}")),
        Turn::Reply(format!("Answer: nine [{vessels}]")),
    ]);
    let answer = ask(&Toc::default(), &t, &model, question);
    assert_eq!(answer.ranked, [vessels]);
    // The pick is held to the table's ids, where every lead's section is listed: five of
    // them (a ranking, like single's), or none.
    let requests = model.requests.lock().unwrap();
    let Some(Constraint::JsonSchema(schema)) = &requests[0].constraint else {
        panic!("a JSON Schema: {:?}", requests[0].constraint);
    };
    let pick = &schema["anyOf"][0]["properties"]["sections"];
    assert!(pick["items"]["enum"]
        .as_array()
        .unwrap()
        .contains(&vessels_section.to_string().into()));
    assert_eq!(
        (&pick["minItems"], &pick["maxItems"]),
        (&5.into(), &5.into())
    );
    assert_eq!(schema["anyOf"][1]["properties"]["sections"]["maxItems"], 0);
    let system = &requests[0].messages[0].content;
    assert!(system.contains("with 5 section ids"), "{system}");
    drop(requests);

    let model = ScriptedChatModel::new(vec![Turn::Reply("{\"sections\": []}".into())]);
    let toc = Toc {
        leads: 0,
        ..Toc::default()
    };
    let answer = ask(&toc, &t, &model, question);
    assert!(!answer
        .trace
        .steps
        .iter()
        .any(|s| matches!(s, Step::Retrieve(_))));
    let prompt = &model.requests.lock().unwrap()[0];
    assert!(!prompt.messages.last().unwrap().content.contains("nearest"));
}

#[test]
fn sections_reads_the_leads_in_the_search_order_without_a_pick() {
    let t = report();
    let vessels = section_of(&t.index, "Vessels").1.unwrap();
    let model = ScriptedChatModel::new(vec![Turn::Reply(format!("Answer: nine [{vessels}]"))]);
    let sections = Toc {
        chooser: SectionChooser::Search,
        ..Toc::default()
    };
    assert_eq!(sections.name(), "sections");
    let answer = ask(
        &sections,
        &t,
        &model,
        "How many vessels does the cooperative operate?",
    );
    assert_eq!(answer.answer, "nine");
    // One model call, the answer's, after the search whose sections are read.
    assert_eq!(model.requests.lock().unwrap().len(), 1);
    let searches = walkrag_walker::testing::searches(&answer);
    let mut leads = Vec::new();
    for hit in &searches[0].hits {
        if !leads.contains(&hit.chunk_id.section) {
            leads.push(hit.chunk_id.section);
        }
    }
    leads.truncate(5);
    let picked = answer.trace.steps.iter().find_map(|s| match s {
        Step::Note { message, .. } => message.strip_prefix("sections picked: "),
        _ => None,
    });
    let picked: Vec<String> = picked
        .expect("a note of the sections read")
        .split("; ")
        .map(|p| p.split(' ').next().unwrap().to_string())
        .collect();
    let leads: Vec<String> = leads.iter().map(ToString::to_string).collect();
    assert_eq!(picked, leads);
}

#[test]
fn unknown_ids_are_noted_and_a_pick_of_none_is_not_found() {
    let t = report();
    let (outlook, outlook_chunk) = section_of(&t.index, "Outlook");
    let outlook_chunk = outlook_chunk.unwrap();
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!("[\"deadbeef\", \"{outlook}\"]")),
        Turn::Reply(format!("Answer: 2025 [{outlook_chunk}]")),
    ]);
    let answer = ask(
        &Toc::default(),
        &t,
        &model,
        "When does the southern route open?",
    );
    assert_eq!(answer.answer, "2025");
    assert_eq!(answer.ranked, [outlook_chunk]);
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("deadbeef") && message.contains("not in the table of contents")
    )));

    // Only unknown ids, or an empty pick: not found, without an answer call.
    for pick in ["{\"sections\": [\"0badc0de\"]}", "{\"sections\": []}"] {
        let model = ScriptedChatModel::new(vec![Turn::Reply(pick.into())]);
        let answer = ask(&Toc::default(), &t, &model, "Who founded the cooperative?");
        assert!(!answer.found, "{pick}");
        assert_eq!(answer.answer, "not found");
        assert!(answer.ranked.is_empty());
        assert_eq!(answer.termination, Termination::NothingRetrieved);
        assert_eq!(answer.usage.llm_calls, 1);
    }
}

#[test]
fn a_section_over_the_budget_shows_its_passages_nearest_the_question() {
    let t = report();
    let (finances, _) = section_of(&t.index, "Finances");
    let revenue = section_of(&t.index, "Revenue").1.unwrap();
    let costs = section_of(&t.index, "Costs").1.unwrap();
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!("{{\"sections\": [\"{finances}\"]}}")),
        Turn::Reply("Answer: not found".into()),
    ]);
    let toc = Toc {
        budget_tokens: 5,
        ..Toc::default()
    };
    let answer = ask(&toc, &t, &model, "What happened to fuel costs?");
    // A section over the budget shows its passages nearest the question first: Costs, over
    // budget but the first shown; Revenue no longer fits. Shown passages rank first.
    let requests = model.requests.lock().unwrap();
    let shown = &requests[1].messages.last().unwrap().content;
    assert!(shown.contains(&format!("[{costs}]")));
    assert!(!shown.contains(&format!("[{revenue}]")));
    assert_eq!(answer.ranked, [costs, revenue]);
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("1 of the picked sections' 2 passages")
    )));
}

#[test]
fn a_greeting_is_answered_without_the_documents() {
    let t = report();
    let model = ScriptedChatModel::new(vec![Turn::Reply(
        "{\"reply\": \"Hello! Ask me about the annual report.\"}".into(),
    )]);
    let mut events = Vec::new();
    let answer =
        block_on(Toc::default().run("hi there", env(&t.index, &model), &mut collect(&mut events)))
            .unwrap();
    assert_eq!(answer.answer, "Hello! Ask me about the annual report.");
    assert_eq!(answer.termination, Termination::NoRetrieval);
    assert!(answer.ranked.is_empty() && answer.citations.is_empty());
    assert_eq!(answer.usage.llm_calls, 1);
    assert!(events.iter().any(
        |e| matches!(e, Event::Token { text } if text == "Hello! Ask me about the annual report.")
    ));
}

#[test]
fn too_many_headings_are_cut_by_depth_then_by_search() {
    let t = markdown_index(&[
        ("report.md", REPORT),
        (
            "minutes.md",
            "# Board Minutes\n\n## March\n\nThe board approved the southern route study.\n",
        ),
    ]);
    let (vessels, _) = section_of(&t.index, "Vessels");
    let (fleet, _) = section_of(&t.index, "Fleet");

    // 10 headings in all, 6 down to level 2: the third level is left out.
    let model = ScriptedChatModel::new(vec![Turn::Reply("{\"sections\": []}".into())]);
    let toc = Toc {
        max_entries: 6,
        ..Toc::default()
    };
    ask(&toc, &t, &model, "How many vessels?");
    let shown = model.requests.lock().unwrap()[0]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(shown.contains(&format!("[{fleet}]")));
    assert!(!shown.contains(&format!("[{vessels}]")));

    // Even the top headings too many: the documents of the question's best passages only.
    let model = ScriptedChatModel::new(vec![Turn::Reply("{\"sections\": []}".into())]);
    let toc = Toc {
        max_entries: 1,
        k: 1,
        ..Toc::default()
    };
    let answer = ask(&toc, &t, &model, "What did the board approve in March?");
    assert!(matches!(&answer.trace.steps[0], Step::Retrieve(r) if r.k == 1));
    let shown = model.requests.lock().unwrap()[0]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(shown.contains("] Board Minutes"), "{shown}");
    assert!(!shown.contains("Harbor Cooperative"), "{shown}");
}

#[test]
fn a_document_without_headings_is_listed_by_its_generated_contents() {
    use walkrag_walker::contents::{needs_contents, Contents, ContentsFile, Generator};
    let text = "The ferry sails to Kessel twice a day. ".repeat(12)
        + &"A crossing costs four euros and children ride free. ".repeat(12);
    let t = markdown_index(&[("ferry.txt", text.as_str())]);
    let doc = &t.index.documents()[0];
    assert!(needs_contents(&doc.doc));
    let generator = Generator {
        group_tokens: 100,
        ..Generator::default()
    };
    let groups = generator.groups(&walkrag_walker::testing::FakeWordEmbedder, doc);
    assert!(groups.len() >= 2, "{groups:?}");
    let writer = ScriptedChatModel::new(
        (0..groups.len())
            .map(|i| {
                Turn::Reply(format!(
                    r#"{{"heading": "Part {i}", "summary": "What part {i} says."}}"#
                ))
            })
            .collect(),
    );
    let mut progress = Vec::new();
    let contents: Contents = block_on(generator.generate(
        &t.index,
        &walkrag_walker::testing::FakeWordEmbedder,
        &writer,
        doc,
        &mut |done, of| progress.push((done, of)),
    ))
    .unwrap();
    assert_eq!(contents.entries.len(), groups.len());
    assert_eq!(progress.last(), Some(&(groups.len(), groups.len())));
    // Each entry's prompt is the document's title and the run's text, held to a heading.
    let asked = writer.requests.lock().unwrap();
    assert!(asked[0]
        .messages
        .last()
        .unwrap()
        .content
        .starts_with("Document: ferry"));
    let Some(Constraint::JsonSchema(schema)) = &asked[0].constraint else {
        panic!("a JSON Schema: {:?}", asked[0].constraint);
    };
    assert_eq!(
        schema["required"],
        serde_json::json!(["heading", "summary"])
    );
    let mut file = ContentsFile::of_index(t.index.dir()).unwrap();
    file.put(contents.clone(), &t.index).unwrap();
    // Read back from disk, it is what was written.
    let file = ContentsFile::of_index(t.index.dir()).unwrap();
    assert_eq!(file.get(&doc.doc), Some(&contents));
    assert!(file.missing(&t.index).is_empty());

    let second = contents.entries[1].clone();
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!("{{\"sections\": [\"{}\"]}}", second.id)),
        Turn::Reply("Answer: four euros\nExplanation: read.".into()),
    ]);
    let answer = ask(&Toc::default(), &t, &model, "How much is a crossing?");
    let shown = model.requests.lock().unwrap()[0]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(
        shown.contains(&format!("[{}] Part 1 — What part 1 says.", second.id)),
        "{shown}"
    );
    // The entry picked reads exactly its run of chunks.
    let mut ranked = answer.ranked.clone();
    ranked.sort();
    let mut expected = second.chunks.clone();
    expected.sort();
    assert_eq!(ranked, expected);

    // Contents written for other text are stale: not used, and the document is missing them.
    let stale = Contents {
        hash: "another text".into(),
        ..contents
    };
    let mut file = ContentsFile::of_index(t.index.dir()).unwrap();
    file.put(stale, &t.index).unwrap();
    let file = ContentsFile::of_index(t.index.dir()).unwrap();
    assert!(file.get(&doc.doc).is_none());
    assert_eq!(file.missing(&t.index).len(), 1);
}

#[test]
fn a_question_in_another_language_asks_for_the_answer_in_it() {
    let t = report();
    let (fleet, _) = section_of(&t.index, "Fleet");
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!("{{\"sections\": [\"{fleet}\"]}}")),
        Turn::Reply("Answer: neun\nExplanation: die Flotte hat neun Schiffe.".into()),
        Turn::Reply(format!("{{\"sections\": [\"{fleet}\"]}}")),
        Turn::Reply("Answer: nine\nExplanation: the fleet has nine vessels.".into()),
    ]);
    let german = ask(
        &Toc::default(),
        &t,
        &model,
        "Wie viele Schiffe hat die Genossenschaft?",
    );
    assert_eq!(german.answer, "neun");
    ask(
        &Toc::default(),
        &t,
        &model,
        "How many vessels does the cooperative have?",
    );
    let requests = model.requests.lock().unwrap();
    assert!(requests[1].messages.last().unwrap()
        .content
        .ends_with("The question is in German: write the answer and the explanation in German (keep the words \"Answer:\" and \"Sources:\")."));
    // An English question's prompt is unchanged.
    assert!(!requests[3]
        .messages
        .last()
        .unwrap()
        .content
        .contains("The question is in"));
}

/// With an answer model, toc's pick stays with the chat model and the answer step goes to the
/// answer model (as for every strategy but actions), and the trace and config name it.
#[test]
fn an_answer_model_writes_toc_answer() {
    let t = report();
    let (fleet, _) = section_of(&t.index, "Fleet");
    let vessels = section_of(&t.index, "Vessels").1.unwrap();
    let chat = ScriptedChatModel::new(vec![Turn::Reply(format!(
        "{{\"sections\": [\"{fleet}\"]}}"
    ))]);
    let answerer = std::sync::Arc::new(ScriptedChatModel::new(vec![Turn::Reply(format!(
        "Answer: nine\nSources: [{vessels}]"
    ))]));
    let toc = Toc {
        answer_model: Some(walkrag_walker::AnswerModel(answerer.clone())),
        ..Toc::default()
    };
    let answer = ask(
        &toc,
        &t,
        &chat,
        "How many vessels does the cooperative operate?",
    );
    assert_eq!(answer.answer, "nine");
    assert_eq!(chat.requests.lock().unwrap().len(), 1);
    assert_eq!(answerer.requests.lock().unwrap().len(), 1);
    assert!(answer.trace.steps.iter().any(
        |s| matches!(s, Step::Llm(c) if c.purpose == "answer" && c.model.as_deref() == Some("test:scripted"))
    ));
    assert_eq!(answer.trace.config["answer_model"], "test:scripted");
}
