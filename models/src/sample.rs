//! Choosing the next token from logits: greedy, or temperature and nucleus (top-p) sampling
//! with a small seeded generator, so a seed gives the same completion on every machine.
//!
//! Tokens a grammar or an opening ruled out carry `-inf` logits: they get no probability and
//! are never chosen.

use walkrag_core::SplitMix64;

/// Temperatures below this are greedy (a softmax at 1e-7 is an argmax in f32 anyway).
const MIN_TEMPERATURE: f32 = 1e-7;

/// Picks one token per step from the model's logits.
pub struct Sampler {
    mode: Mode,
    rng: SplitMix64,
    /// The eligible tokens and their unnormalised probabilities, reused from step to step.
    candidates: Vec<(u32, f32)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Greedy,
    /// `top_p` is `None` when every token stays a candidate (p outside `(0, 1)`).
    Sample {
        temperature: f32,
        top_p: Option<f32>,
    },
}

impl Sampler {
    /// Greedy at temperature 0 (or below 1e-7); otherwise samples from the softmax at
    /// `temperature`, restricted to the nucleus of mass `top_p` when `0 < top_p < 1`.
    pub fn new(seed: u64, temperature: f32, top_p: f32) -> Self {
        let mode = if temperature >= MIN_TEMPERATURE {
            Mode::Sample {
                temperature,
                top_p: (top_p > 0.0 && top_p < 1.0).then_some(top_p),
            }
        } else {
            Mode::Greedy
        };
        Self {
            mode,
            rng: SplitMix64(seed),
            candidates: Vec::new(),
        }
    }

    /// The next token, or `None` when every logit is `-inf` (or NaN): nothing may be chosen.
    pub fn sample(&mut self, logits: &[f32]) -> Option<u32> {
        let (best, max) = argmax(logits)?;
        let Mode::Sample { temperature, top_p } = self.mode else {
            return Some(best);
        };
        // exp((l - max) / t): the softmax's numerators, 1 for the best token, 0 for -inf.
        self.candidates.clear();
        for (id, &logit) in logits.iter().enumerate() {
            let w = ((logit - max) / temperature).exp();
            if w > 0.0 {
                self.candidates.push((id as u32, w));
            }
        }
        let mut total: f32 = self.candidates.iter().map(|&(_, w)| w).sum();
        if let Some(p) = top_p {
            total = self.keep_nucleus(total, p);
        }
        let target = self.rng.next_f32() * total;
        let mut acc = 0.0;
        for &(id, w) in &self.candidates {
            acc += w;
            if target < acc {
                return Some(id);
            }
        }
        // Rounding left the target at the very end: the last candidate takes it.
        Some(self.candidates.last().map_or(best, |&(id, _)| id))
    }

    /// Keeps the most likely candidates whose mass first reaches `p` of `total` (the one that
    /// crosses `p` included), most likely first; returns their mass.
    fn keep_nucleus(&mut self, total: f32, p: f32) -> f32 {
        // Equal weights in id order, so the nucleus does not depend on the sort.
        self.candidates
            .sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let threshold = p * total;
        let mut kept = 0.0;
        let mut len = 0;
        for &(_, w) in &self.candidates {
            if kept >= threshold {
                break;
            }
            kept += w;
            len += 1;
        }
        self.candidates.truncate(len);
        kept
    }
}

/// The first index holding the largest logit (candle's argmax keeps the first of equal maxima
/// too), ignoring NaN; `None` when no logit is above `-inf`.
fn argmax(logits: &[f32]) -> Option<(u32, f32)> {
    let mut best: Option<(u32, f32)> = None;
    for (id, &logit) in logits.iter().enumerate() {
        if logit > f32::NEG_INFINITY && best.is_none_or(|(_, max)| logit > max) {
            best = Some((id as u32, logit));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEG: f32 = f32::NEG_INFINITY;

    fn draws(sampler: &mut Sampler, logits: &[f32], n: usize) -> Vec<u32> {
        (0..n).map(|_| sampler.sample(logits).unwrap()).collect()
    }

    #[test]
    fn greedy_picks_the_max_and_the_first_of_equal_maxima() {
        let mut s = Sampler::new(7, 0.0, 1.0);
        assert_eq!(s.sample(&[0.1, 2.0, -3.0, 1.9]), Some(1));
        assert_eq!(s.sample(&[NEG, -5.0, NEG]), Some(1));
        assert_eq!(s.sample(&[1.0, 4.0, 4.0, 2.0]), Some(1));
        assert_eq!(s.sample(&[f32::NAN, 0.5, 0.7]), Some(2));
        // Temperatures too small to sample at are greedy too.
        let mut tiny = Sampler::new(7, 1e-9, 0.9);
        assert_eq!(draws(&mut tiny, &[0.0, 3.0, 2.9], 20), vec![1; 20]);
    }

    #[test]
    fn nothing_to_sample_when_every_token_is_masked() {
        for temperature in [0.0, 1.0] {
            let mut s = Sampler::new(1, temperature, 0.9);
            assert_eq!(s.sample(&[NEG, NEG]), None);
            assert_eq!(s.sample(&[]), None);
        }
    }

    #[test]
    fn masked_tokens_are_never_sampled() {
        // Allowed tokens far less likely than the masked ones would have been.
        let logits: Vec<f32> = (0..64)
            .map(|i| {
                if i % 3 == 0 {
                    -8.0 + i as f32 * 0.01
                } else {
                    NEG
                }
            })
            .collect();
        for (temperature, top_p) in [(1.0, 1.0), (2.5, 1.0), (0.7, 0.5), (1.0, 0.99)] {
            let mut s = Sampler::new(3, temperature, top_p);
            for id in draws(&mut s, &logits, 2000) {
                assert_eq!(
                    id % 3,
                    0,
                    "masked token {id} sampled at t={temperature} p={top_p}"
                );
            }
        }
    }

    #[test]
    fn sampling_follows_the_softmax() {
        // Probabilities 0.5, 0.25, 0.25 at temperature 1.
        let logits = [2f32.ln(), 0.0, 0.0];
        let mut s = Sampler::new(11, 1.0, 1.0);
        let mut counts = [0usize; 3];
        for id in draws(&mut s, &logits, 20_000) {
            counts[id as usize] += 1;
        }
        let share = |c: usize| c as f32 / 20_000.0;
        assert!((share(counts[0]) - 0.5).abs() < 0.02, "{counts:?}");
        assert!((share(counts[1]) - 0.25).abs() < 0.02, "{counts:?}");
        assert!((share(counts[2]) - 0.25).abs() < 0.02, "{counts:?}");
    }

    #[test]
    fn the_same_seed_samples_the_same_sequence() {
        let logits: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin()).collect();
        for top_p in [1.0, 0.8] {
            let a = draws(&mut Sampler::new(42, 1.3, top_p), &logits, 200);
            let b = draws(&mut Sampler::new(42, 1.3, top_p), &logits, 200);
            let c = draws(&mut Sampler::new(43, 1.3, top_p), &logits, 200);
            assert_eq!(a, b);
            assert_ne!(a, c);
            // Not stuck on one token.
            assert!(a.iter().any(|&id| id != a[0]));
        }
    }

    #[test]
    fn top_p_samples_only_the_nucleus() {
        // Probabilities 0.4, 0.3, 0.2, 0.1 (in shuffled order by id).
        let probs = [0.2f32, 0.4, 0.1, 0.3];
        let logits: Vec<f32> = probs.iter().map(|p| p.ln()).collect();
        // (p, the ids the nucleus holds): the token that crosses p is kept.
        let cases: [(f32, &[u32]); 4] = [
            (0.1, &[1]),
            (0.35, &[1]),
            (0.5, &[1, 3]),
            (0.85, &[1, 3, 0]),
        ];
        for (p, nucleus) in cases {
            let mut s = Sampler::new(5, 1.0, p);
            let seen = draws(&mut s, &logits, 3000);
            for id in &seen {
                assert!(nucleus.contains(id), "p={p}: {id} is outside {nucleus:?}");
            }
            for id in nucleus {
                assert!(seen.contains(id), "p={p}: {id} never sampled");
            }
        }
        // p of 1 (or 0) keeps every token.
        for p in [1.0, 0.0] {
            let seen = draws(&mut Sampler::new(5, 1.0, p), &logits, 3000);
            assert!((0..4).all(|id| seen.contains(&id)), "p={p}");
        }
    }
}
