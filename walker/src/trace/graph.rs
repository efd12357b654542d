//! The query-time knowledge graph of one answer: the question, the chunks read, the facts they
//! yielded, the descriptors that led to more chunks, and the answer, linked. Exported as JSON
//! nodes and edges, and drawn by the HTML trace.

use std::collections::HashMap;

use serde::Serialize;
use walkrag_engine::{ChunkId, Index};

use crate::answer::Answer;
use crate::search::passages;
use crate::trace::Step;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Question,
    Chunk,
    Fact,
    Descriptor,
    Answer,
}

#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub id: String,
    pub kind: NodeKind,
    /// The cycle it belongs to (0 for the question, cycles + 1 for the answer).
    pub cycle: usize,
    /// A short label.
    pub label: String,
    /// The whole text (a chunk's text, a fact with its relevance, ...).
    pub text: String,
    /// Facts only: whether the source was a chunk the model was shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// The question's search returned the chunk.
    Retrieved,
    /// The chunk's text yielded the fact.
    Yielded,
    /// The facts of a cycle led the model to the descriptor.
    Asked,
    /// The descriptor's search returned the chunk.
    Found,
    /// The first chunk's text names the second's document or section.
    Linked,
    /// The answer cites the chunk, or rests on the fact.
    Supports,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

fn chunk_node(id: ChunkId) -> String {
    format!("chunk:{id}")
}

impl Graph {
    /// The graph of `answer`; chunk texts come from `index` (the one the answer was made with).
    pub fn of(answer: &Answer, index: &Index) -> Self {
        let trace = &answer.trace;
        let mut graph = Graph::default();
        graph.nodes.push(Node {
            id: "question".into(),
            kind: NodeKind::Question,
            cycle: 0,
            label: trace.question.clone(),
            text: trace.question.clone(),
            trusted: None,
        });
        let read: std::collections::HashSet<ChunkId> = answer.ranked.iter().copied().collect();
        // Descriptor node ids by the query they were searched with.
        let mut descriptor_by_query: HashMap<String, String> = HashMap::new();
        let mut facts_of_cycle: HashMap<usize, Vec<String>> = HashMap::new();
        let mut chunks_of_cycle: HashMap<usize, Vec<String>> = HashMap::new();
        let mut placed: std::collections::HashSet<ChunkId> = std::collections::HashSet::new();
        let (mut facts, mut descriptors) = (0, 0);
        for step in &trace.steps {
            match step {
                Step::Retrieve(r) => {
                    let from = descriptor_by_query
                        .get(&r.query)
                        .cloned()
                        .unwrap_or_else(|| "question".into());
                    let kind = if from == "question" {
                        EdgeKind::Retrieved
                    } else {
                        EdgeKind::Found
                    };
                    for hit in &r.hits {
                        if !read.contains(&hit.chunk_id) {
                            continue;
                        }
                        let id = chunk_node(hit.chunk_id);
                        // Every way a read chunk was found is an edge; its node is placed once.
                        let edge = match hit.linked_from {
                            Some(source) => Edge {
                                from: chunk_node(source),
                                to: id.clone(),
                                kind: EdgeKind::Linked,
                            },
                            None => Edge {
                                from: from.clone(),
                                to: id.clone(),
                                kind,
                            },
                        };
                        if !graph.edges.contains(&edge) {
                            graph.edges.push(edge);
                        }
                        if !placed.insert(hit.chunk_id) {
                            continue;
                        }
                        let text = index
                            .row_of(hit.chunk_id)
                            .map(|row| index.chunk(row).text().trim().to_string())
                            .unwrap_or_default();
                        graph.nodes.push(Node {
                            id: id.clone(),
                            kind: NodeKind::Chunk,
                            cycle: r.cycle,
                            label: format!(
                                "[{}] {}",
                                hit.chunk_id,
                                passages::describe(&hit.title, &hit.section_path, hit.page)
                            ),
                            text,
                            trusted: None,
                        });
                        chunks_of_cycle.entry(r.cycle).or_default().push(id);
                    }
                }
                Step::Fact(f) => {
                    facts += 1;
                    let id = format!("fact:{facts}");
                    graph.nodes.push(Node {
                        id: id.clone(),
                        kind: NodeKind::Fact,
                        cycle: f.cycle,
                        label: f.fact.clone(),
                        text: format!(
                            "{}\n\nRelevance: {}\nSource: {}",
                            f.fact, f.relevance, f.source
                        ),
                        trusted: Some(f.trusted),
                    });
                    if let (true, Some(chunk)) = (f.trusted, f.chunk_id) {
                        graph.edges.push(Edge {
                            from: chunk_node(chunk),
                            to: id.clone(),
                            kind: EdgeKind::Yielded,
                        });
                    }
                    facts_of_cycle.entry(f.cycle).or_default().push(id);
                }
                Step::Descriptor(d) => {
                    descriptors += 1;
                    let id = format!("descriptor:{descriptors}");
                    graph.nodes.push(Node {
                        id: id.clone(),
                        kind: NodeKind::Descriptor,
                        cycle: d.cycle,
                        label: d.next_source.clone(),
                        text: format!("Look for: {}\nExpected: {}", d.next_source, d.expected_info),
                        trusted: None,
                    });
                    let sources = facts_of_cycle
                        .get(&d.cycle)
                        .filter(|f| !f.is_empty())
                        .or_else(|| chunks_of_cycle.get(&d.cycle))
                        .cloned()
                        .unwrap_or_default();
                    for from in sources {
                        graph.edges.push(Edge {
                            from,
                            to: id.clone(),
                            kind: EdgeKind::Asked,
                        });
                    }
                    descriptor_by_query.entry(d.query()).or_insert(id);
                }
                _ => {}
            }
        }
        graph.nodes.push(Node {
            id: "answer".into(),
            kind: NodeKind::Answer,
            cycle: answer.cycles + 1,
            label: answer.answer.clone(),
            text: answer.text.clone(),
            trusted: None,
        });
        for id in &answer.citations {
            graph.edges.push(Edge {
                from: chunk_node(*id),
                to: "answer".into(),
                kind: EdgeKind::Supports,
            });
        }
        for node in &graph.nodes {
            if node.kind == NodeKind::Fact && node.trusted == Some(true) {
                graph.edges.push(Edge {
                    from: node.id.clone(),
                    to: "answer".into(),
                    kind: EdgeKind::Supports,
                });
            }
        }
        graph
    }
}
