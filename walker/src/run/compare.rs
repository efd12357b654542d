//! The answer step's computed comparison: where a question compares two named sides and the
//! answer model can weigh continuations, the model weighs how the sides are compared (earlier
//! or later date, larger or smaller number, or neither) and which of the values each side's
//! passage states is the one compared; walkrag compares the two values. The model never writes
//! a value, so it cannot copy a name back in place of one.

use walkrag_core::ChatModel;
use walkrag_engine::ChunkId;

use super::{Answered, Run};
use crate::reader::compare::{self, Stated, Wanted};
use crate::reader::prompt;
use crate::reader::reply::Reply;
use crate::search::passages;
use crate::trace::Origin;

/// A comparison being computed: the question, its two sides, and what is wanted of them.
struct Asked<'q> {
    question: &'q str,
    sides: &'q [String; 2],
    wanted: Wanted,
}

impl Run<'_> {
    /// `answered`, or what code finds from one value per side where a question compares two
    /// named sides and the model weighs a comparison of dates or numbers likelier than none:
    /// - a question offering two sides (`which was formed first, A or B?`), written answer
    ///   naming one of them or "not found": the side whose value is the one wanted;
    /// - a yes/no question about two names (`was A founded before B?`): "yes" where the first
    ///   has the value wanted, else "no".
    ///
    /// Each side's value is read from a shown passage about it, or, where none was shown, from
    /// the passage its name finds. Every search, weighing and value goes into the trace.
    pub(super) async fn compare_sides(
        &mut self,
        cycle: usize,
        question: &str,
        answered: Answered,
    ) -> Answered {
        let answer = &answered.reply.answer;
        let yes_no = ["yes", "no"].iter().any(|w| answer.eq_ignore_ascii_case(w));
        let sides = if yes_no {
            compare::two_names(question)
        } else {
            compare::sides(question).filter(|sides| {
                !answered.reply.found || sides.iter().any(|s| compare::names(answer, s))
            })
        };
        let Some(sides) = sides else {
            return answered;
        };
        let answer_model = self.answer_model.clone();
        let model = answer_model.as_deref().unwrap_or(self.env.model);
        if !model.can_score() {
            return answered;
        }
        let index = self.env.index;
        let mut shown = answered.shown.clone();
        let mut found = [None, None];
        for (side, found) in sides.iter().zip(&mut found) {
            *found = match compare::passage_of(index, &shown, side) {
                Some(id) => Some(id),
                None => self.search_side(cycle, side),
            };
            if let Some(id) = found.filter(|id| !shown.contains(id)) {
                shown.push(id);
            }
        }
        let [Some(first), Some(second)] = found else {
            let missing = &sides[usize::from(found[0].is_some())];
            self.note(
                cycle,
                format!("no passage is about {missing}: the written answer stands"),
            );
            return answered;
        };
        if first == second {
            return answered;
        }
        let Some(wanted) = self
            .weigh_kind(cycle, model, question, &sides, yes_no)
            .await
        else {
            return answered;
        };
        let asked = Asked {
            question,
            sides: &sides,
            wanted,
        };
        let mut values: Vec<Stated> = Vec::with_capacity(2);
        for (which, passage) in [first, second].into_iter().enumerate() {
            match self.weigh_value(cycle, model, &asked, which, passage).await {
                Some(value) => values.push(value),
                None => return answered,
            }
        }
        let values_text = format!(
            "{} states {} for {}, {} states {} for {}",
            first, values[0], sides[0], second, values[1], sides[1]
        );
        let picked = match compare::pick([&values[0].value, &values[1].value], wanted) {
            Ok(side) => side,
            Err(refusal) => {
                self.note(
                    cycle,
                    format!(
                        "{} ({}) and {} ({}) cannot be compared: {refusal}; the written \
                         answer stands",
                        sides[0], values[0], sides[1], values[1]
                    ),
                );
                return answered;
            }
        };
        let (reply, why) = if yes_no {
            let yes = if picked == 0 { "yes" } else { "no" };
            let why = format!("{values_text}: {} has the {wanted}", sides[picked]);
            (yes.to_string(), why)
        } else {
            let name = &sides[picked];
            (
                name.clone(),
                format!("{values_text}: the {wanted} is {name}'s"),
            )
        };
        let agrees = if yes_no {
            answer.eq_ignore_ascii_case(&reply)
        } else {
            answered.reply.found && compare::names(answer, &reply)
        };
        if agrees {
            self.note(cycle, format!("computed: {why}, as written"));
            return answered;
        }
        self.note(
            cycle,
            format!("computed: {why}; answered {reply} (written: \"{answer}\")"),
        );
        Answered {
            text: format!("Answer: {reply}\nSources: [{first}], [{second}]\nExplanation: {why}."),
            reply: Reply {
                answer: reply,
                found: true,
            },
            citations: vec![first, second],
            shown,
        }
    }

    /// A passage about `side` where none was shown: the side's name searched, the first of
    /// the three nearest passages that is about it (its title, else its text, naming it).
    fn search_side(&mut self, cycle: usize, side: &str) -> Option<ChunkId> {
        let hits = match self.retrieve(cycle, Origin::Name, side, 3, false) {
            Ok(hits) => hits,
            Err(e) => {
                self.note(cycle, format!("{side} could not be searched: {e}"));
                return None;
            }
        };
        let ids: Vec<ChunkId> = hits.iter().map(|h| h.chunk_id).collect();
        let id = compare::passage_of(self.env.index, &ids, side)?;
        self.mark_read(&[id]);
        Some(id)
    }

    /// How the question compares its sides: the choice of [`Wanted::CHOICES`] the model
    /// weighs likeliest after the question, each choice's weight less its weight after a
    /// question that says nothing ("which is it, A or B?"), so the model's leaning to a word
    /// whatever the question is taken out. A yes/no question is asked whether it asks if the
    /// first side has the value wanted. `None` where "neither" wins or the model cannot
    /// weigh.
    async fn weigh_kind(
        &mut self,
        cycle: usize,
        model: &dyn ChatModel,
        question: &str,
        sides: &[String; 2],
        yes_no: bool,
    ) -> Option<Wanted> {
        let (template, neutral) = if yes_no {
            (
                prompt::COMPARE_KIND_YESNO_USER,
                format!("Is it true of {} and {}?", sides[0], sides[1]),
            )
        } else {
            (
                prompt::COMPARE_KIND_USER,
                format!("Which is it, {} or {}?", sides[0], sides[1]),
            )
        };
        let choices: Vec<String> = Wanted::CHOICES.iter().map(|c| c.1.to_string()).collect();
        let mut weights = Vec::with_capacity(2);
        for (purpose, question) in [
            ("compare: how", question),
            ("compare: how, unasked", &neutral),
        ] {
            let user = prompt::render(
                template,
                &[
                    ("question", question),
                    ("first", &sides[0]),
                    ("second", &sides[1]),
                ],
            );
            weights.push(
                self.weigh_compare(cycle, model, purpose, user, choices.clone())
                    .await?,
            );
        }
        let best = (0..choices.len())
            .max_by(|&a, &b| {
                let gain = |i: usize| weights[0][i] - weights[1][i];
                gain(a).total_cmp(&gain(b))
            })
            .expect("choices are listed");
        Wanted::CHOICES[best].0
    }

    /// The value of `passage` that the model weighs likeliest as side `which`'s in the
    /// comparison; `None` where the passage states no value of the kind compared.
    async fn weigh_value(
        &mut self,
        cycle: usize,
        model: &dyn ChatModel,
        asked: &Asked<'_>,
        which: usize,
        passage: ChunkId,
    ) -> Option<Stated> {
        let (side, wanted) = (asked.sides[which].as_str(), asked.wanted);
        let index = self.env.index;
        let chunk = index.chunk(index.row_of(passage)?);
        let mut stated = compare::values_in(chunk.text(), wanted);
        let (what, unit) = if wanted.of_dates() {
            ("dates", "year")
        } else {
            ("numbers", "number")
        };
        if stated.is_empty() {
            self.note(
                cycle,
                format!("{passage} states no {unit} for {side}: the written answer stands"),
            );
            return None;
        }
        if stated.len() == 1 {
            return stated.pop();
        }
        let rendered = passages::render_one(&chunk);
        let user = prompt::render(
            prompt::COMPARE_VALUE_USER,
            &[
                ("passage", rendered.as_str()),
                ("question", asked.question),
                ("what", what),
                ("first", &asked.sides[0]),
                ("second", &asked.sides[1]),
                ("unit", unit),
                ("side", side),
            ],
        );
        let texts = stated.iter().map(|s| s.text.clone()).collect();
        let purpose = format!("compare: the value of {side}");
        let weights = self
            .weigh_compare(cycle, model, &purpose, user, texts)
            .await?;
        let best = (0..weights.len()).max_by(|&a, &b| weights[a].total_cmp(&weights[b]))?;
        Some(stated.swap_remove(best))
    }

    /// The weight of each continuation after the comparison's instructions and `user`;
    /// `None` (noted) where the model cannot weigh.
    async fn weigh_compare(
        &mut self,
        cycle: usize,
        model: &dyn ChatModel,
        purpose: &str,
        user: String,
        continuations: Vec<String>,
    ) -> Option<Vec<f32>> {
        let messages = prompt::request(prompt::COMPARE_SYSTEM, user, 0).messages;
        self.weigh(
            cycle,
            model,
            purpose,
            messages,
            continuations,
            "the comparison",
        )
        .await
    }
}
