//! Which model a turn names when its dataset does not say: the `--model` values chosen
//! by `--model-selection-strategy` (or a configuration file's weighted `models`), as the
//! Python AIPerf does for every generated or loaded turn without a `model` of its own.

use aiperf_core::config::ModelSelectionStrategy;
use aiperf_core::Conversation;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::seed::derive_rng;

/// The random stream of the random and weighted strategies.
const MODEL_SELECTION_STREAM: &str = "composer.turn.model_selection";

/// Hands out model names turn by turn under one strategy.
pub(crate) struct ModelPicker {
    models: Vec<String>,
    strategy: ModelSelectionStrategy,
    rng: ChaCha8Rng,
    turns: usize,
}

impl ModelPicker {
    /// A picker over `models`, drawing from a stream of `root_seed`.
    pub(crate) fn new(
        models: &[String],
        strategy: &ModelSelectionStrategy,
        root_seed: u64,
    ) -> Self {
        Self {
            models: models.to_vec(),
            strategy: strategy.clone(),
            rng: derive_rng(root_seed, MODEL_SELECTION_STREAM),
            turns: 0,
        }
    }

    /// The next turn's model: round robin names model n mod k for the n-th turn, random
    /// draws uniformly, weighted draws with the configured probabilities. `None` without
    /// models (the endpoint's primary model is used).
    pub(crate) fn next(&mut self) -> Option<String> {
        if self.models.is_empty() {
            return None;
        }
        let index = match &self.strategy {
            ModelSelectionStrategy::RoundRobin => self.turns % self.models.len(),
            ModelSelectionStrategy::Random => self.rng.random_range(0..self.models.len()),
            ModelSelectionStrategy::Weighted(weights) => {
                weighted_index(weights, self.rng.random::<f64>())
            }
        };
        self.turns += 1;
        self.models.get(index).cloned()
    }
}

/// Names a model on every turn that has none, in dataset order (see [`ModelPicker`]), so
/// a dataset file spreads over several `--model` values as a synthetic one does: each
/// conversation's turns, then those of the sessions it starts (subagents, `dag_jsonl`
/// children). Turns that name their own model keep it. `root_seed` is the run's seed.
pub fn assign_models(
    conversations: &mut [Conversation],
    models: &[String],
    strategy: &ModelSelectionStrategy,
    root_seed: u64,
) {
    let mut picker = ModelPicker::new(models, strategy, root_seed);
    for conversation in conversations {
        conversation.for_each_turn_mut(&mut |turn| {
            if turn.model.is_none() {
                turn.model = picker.next();
            }
        });
    }
}

/// The index whose cumulative-weight interval holds `draw` (uniform in [0, 1)), scaled
/// to the weights' sum so a sum within validation's 1 ± 0.01 never runs off the end.
fn weighted_index(weights: &[f64], draw: f64) -> usize {
    let mut remaining = draw * weights.iter().sum::<f64>();
    for (index, weight) in weights.iter().enumerate() {
        if remaining < *weight {
            return index;
        }
        remaining -= weight;
    }
    // Rounding can leave a sliver past the last interval; it belongs to the last
    // model with any weight.
    weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use aiperf_core::{Branch, BranchMode, Turn};

    use super::*;

    #[test]
    fn a_weighted_draw_lands_in_its_cumulative_interval() {
        let weights = [0.25, 0.0, 0.75];
        assert_eq!(weighted_index(&weights, 0.0), 0);
        assert_eq!(weighted_index(&weights, 0.2499), 0);
        assert_eq!(weighted_index(&weights, 0.25), 2);
        assert_eq!(weighted_index(&weights, 0.9999), 2);
        // Weights summing to 0.99 still cover the whole draw range.
        assert_eq!(weighted_index(&[0.5, 0.49, 0.0], 0.9999), 1);
    }

    #[test]
    fn loaded_turns_without_a_model_get_one_in_round_robin_order() {
        let mut conversations = vec![
            Conversation {
                turns: vec![Turn::text("1"), Turn::text("2")],
                ..Conversation::default()
            },
            Conversation {
                turns: vec![
                    Turn {
                        model: Some("own".into()),
                        ..Turn::text("3")
                    },
                    Turn::text("4"),
                ],
                ..Conversation::default()
            },
        ];
        let models = ["a".to_owned(), "b".to_owned()];
        assign_models(
            &mut conversations,
            &models,
            &ModelSelectionStrategy::RoundRobin,
            7,
        );
        let named: Vec<_> = conversations
            .iter()
            .flat_map(|c| c.turns.iter().map(|t| t.model.as_deref().unwrap()))
            .collect();
        assert_eq!(named, ["a", "b", "own", "a"]);
    }

    #[test]
    fn the_sessions_a_conversation_starts_get_models_after_its_own_turns() {
        let child = |id: &str, turns: Vec<Turn>| {
            std::sync::Arc::new(Conversation {
                session_id: id.into(),
                turns,
                ..Conversation::default()
            })
        };
        let mut first = Turn::text("1");
        first.branches.push(Branch {
            mode: BranchMode::Spawn,
            children: vec![child("c", vec![Turn::text("c1"), Turn::text("c2")])],
            join_at: Some(1),
            on_send: false,
        });
        let mut conversations = vec![Conversation {
            turns: vec![first, Turn::text("2")],
            pre_session_spawns: vec![child("p", vec![Turn::text("p1")])],
            ..Conversation::default()
        }];
        let models = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        assign_models(
            &mut conversations,
            &models,
            &ModelSelectionStrategy::RoundRobin,
            7,
        );
        let named: Vec<(String, String)> = conversations[0]
            .with_descendants()
            .iter()
            .flat_map(|c| {
                c.turns
                    .iter()
                    .map(|t| (t.joined_text(), t.model.clone().unwrap()))
            })
            .collect();
        let expected = [
            ("1", "a"),
            ("2", "b"),
            ("p1", "c"),
            ("c1", "a"),
            ("c2", "b"),
        ];
        assert_eq!(
            named,
            expected.map(|(text, model)| (text.to_owned(), model.to_owned()))
        );
    }
}
