//! Synthetic conversations end to end: prompt shape options, sessions, model selection,
//! seq-dist and determinism, measured with the builtin tokenizer.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashSet};

use aiperf_core::config::{InputConfig, ModelSelectionStrategy, SequenceDistribution};
use aiperf_core::Conversation;
use aiperf_datasets::{SyntheticDataset, Tokenizer};

fn base() -> InputConfig {
    InputConfig {
        isl_mean: 40,
        num_dataset_entries: Some(12),
        random_seed: Some(11),
        ..InputConfig::default()
    }
}

fn generate(input: &InputConfig, models: &[&str]) -> Vec<Conversation> {
    let models: Vec<String> = models
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    SyntheticDataset::new(input, &models, Tokenizer::builtin())
        .unwrap()
        .generate()
        .unwrap()
}

#[test]
fn prefix_is_prepended_to_the_first_turn_only() {
    let t = Tokenizer::builtin();
    let mut input = base();
    input.prompt.prefix_pool_size = 3;
    input.prompt.prefix_length = 25;
    input.session.turns_mean = 3;
    let conversations = generate(&input, &[]);
    let mut prefixes = HashSet::new();
    let without_prefix = generate(
        &InputConfig {
            prompt: aiperf_core::config::PromptOptions::default(),
            ..input.clone()
        },
        &[],
    );
    for (c, plain) in conversations.iter().zip(&without_prefix) {
        assert_eq!(c.turns.len(), 3);
        let first = &c.turns[0].texts[0];
        // The main prompts do not move when a prefix pool is added: same stream.
        let (prefix, rest) = first.split_at(first.len() - plain.turns[0].texts[0].len());
        assert_eq!(rest, plain.turns[0].texts[0]);
        let prefix = prefix.strip_suffix(' ').unwrap();
        assert_eq!(t.count(prefix), 25, "{prefix:?}");
        prefixes.insert(prefix.to_owned());
        for (later, plain_later) in c.turns[1..].iter().zip(&plain.turns[1..]) {
            assert_eq!(
                later.texts, plain_later.texts,
                "no prefix after the first turn"
            );
            assert_eq!(t.count(&later.texts[0]), 40);
        }
    }
    assert!(
        prefixes.len() > 1 && prefixes.len() <= 3,
        "{}",
        prefixes.len()
    );
}

#[test]
fn system_prompt_is_shared_and_user_context_is_per_conversation() {
    let t = Tokenizer::builtin();
    let mut input = base();
    input.prompt.shared_system_length = Some(30);
    input.prompt.user_context_length = Some(20);
    let conversations = generate(&input, &[]);
    let system = conversations[0].system_message.clone().unwrap();
    assert_eq!(t.count(&system), 30);
    let mut contexts = HashSet::new();
    for c in &conversations {
        assert_eq!(c.system_message.as_deref(), Some(system.as_str()));
        let context = c.user_context_message.clone().unwrap();
        assert_eq!(t.count(&context), 20);
        contexts.insert(context);
        assert_eq!(t.count(&c.turns[0].texts[0]), 40);
    }
    assert_eq!(contexts.len(), conversations.len());
}

#[test]
fn batch_size_gives_several_exact_texts() {
    let t = Tokenizer::builtin();
    let mut input = base();
    input.prompt.batch_size = 3;
    for c in generate(&input, &[]) {
        assert_eq!(c.turns[0].texts.len(), 3);
        assert!(c.turns[0].texts.iter().all(|text| t.count(text) == 40));
    }
}

#[test]
fn sessions_have_exact_turn_counts_and_delays_after_the_first_turn() {
    let t = Tokenizer::builtin();
    let mut input = base();
    input.osl_mean = Some(20);
    input.session.turns_mean = 4;
    input.session.delay_mean_ms = 200.0;
    input.session.delay_ratio = 0.5;
    for c in generate(&input, &[]) {
        assert_eq!(c.turns.len(), 4);
        assert_eq!(c.turns[0].delay_ms, None);
        for turn in &c.turns[1..] {
            assert_eq!(turn.delay_ms, Some(100.0));
        }
        let texts: HashSet<_> = c.turns.iter().map(|turn| turn.texts[0].clone()).collect();
        assert_eq!(texts.len(), 4, "every turn has its own prompt");
        assert!(c.turns.iter().all(|turn| t.count(&turn.texts[0]) == 40));
        assert!(c.turns.iter().all(|turn| turn.max_tokens == Some(20)));
    }
}

#[test]
fn turn_counts_and_delays_vary_with_stddev() {
    let mut input = base();
    input.num_dataset_entries = Some(40);
    input.isl_mean = 5;
    input.session.turns_mean = 3;
    input.session.turns_stddev = 2;
    input.session.delay_mean_ms = 100.0;
    input.session.delay_stddev_ms = 30.0;
    let conversations = generate(&input, &[]);
    let counts: HashSet<_> = conversations.iter().map(|c| c.turns.len()).collect();
    assert!(
        counts.len() > 2 && counts.iter().all(|n| *n >= 1),
        "{counts:?}"
    );
    let delays: HashSet<_> = conversations
        .iter()
        .flat_map(|c| c.turns[1..].iter().map(|t| t.delay_ms.unwrap() as u64))
        .collect();
    assert!(delays.len() > 5 && delays.iter().all(|d| *d >= 1));
}

#[test]
fn round_robin_cycles_the_models_across_all_turns() {
    let mut input = base();
    input.num_dataset_entries = Some(3);
    input.isl_mean = 5;
    input.session.turns_mean = 2;
    let models: Vec<String> = generate(&input, &["a", "b", "c", "d"])
        .iter()
        .flat_map(|c| c.turns.iter().map(|t| t.model.clone().unwrap()))
        .collect();
    assert_eq!(models, ["a", "b", "c", "d", "a", "b"]);
}

#[test]
fn random_model_selection_is_seeded_and_uses_every_model() {
    let mut input = base();
    input.num_dataset_entries = Some(40);
    input.isl_mean = 5;
    input.model_selection = ModelSelectionStrategy::Random;
    let models = |input: &InputConfig| -> Vec<String> {
        generate(input, &["a", "b", "c"])
            .iter()
            .map(|c| c.turns[0].model.clone().unwrap())
            .collect()
    };
    let first = models(&input);
    assert_eq!(first, models(&input));
    assert_ne!(
        first,
        models(&InputConfig {
            random_seed: Some(12),
            ..input.clone()
        })
    );
    let used: HashSet<_> = first.iter().collect();
    assert_eq!(used.len(), 3);
    assert_ne!(first[..3], ["a", "b", "c"], "not round robin");
}

#[test]
fn weighted_model_selection_follows_the_weights_and_never_picks_a_zero_weight() {
    let mut input = base();
    input.num_dataset_entries = Some(2000);
    input.isl_mean = 1;
    input.model_selection = ModelSelectionStrategy::Weighted(vec![0.7, 0.0, 0.3]);
    let mut counts = BTreeMap::new();
    for c in generate(&input, &["a", "b", "c"]) {
        *counts.entry(c.turns[0].model.clone().unwrap()).or_insert(0) += 1;
    }
    assert_eq!(counts.get("b"), None, "{counts:?}");
    // 2000 draws at p = 0.7: the standard deviation of the share is about 0.01.
    let share_a = f64::from(counts["a"]) / 2000.0;
    assert!((share_a - 0.7).abs() < 0.05, "{counts:?}");
}

#[test]
fn seq_dist_sets_each_turns_isl_and_max_tokens() {
    let t = Tokenizer::builtin();
    let mut input = base();
    input.num_dataset_entries = Some(200);
    input.osl_mean = Some(999);
    input.sequence_distribution = Some(SequenceDistribution::parse("10,3:25;30,7:75").unwrap());
    let mut seen = BTreeMap::new();
    for c in generate(&input, &[]) {
        let turn = &c.turns[0];
        let pair = (t.count(&turn.texts[0]), turn.max_tokens.unwrap());
        assert!(pair == (10, 3) || pair == (30, 7), "{pair:?}");
        *seen.entry(pair).or_insert(0) += 1;
    }
    let share = f64::from(seen[&(10, 3)]) / 200.0;
    assert!((share - 0.25).abs() < 0.08, "{seen:?}");
}

#[test]
fn same_seed_same_dataset_other_seed_other_dataset() {
    let mut input = base();
    input.session.turns_mean = 2;
    input.session.turns_stddev = 1;
    input.session.delay_mean_ms = 50.0;
    input.session.delay_stddev_ms = 10.0;
    input.osl_mean = Some(10);
    input.osl_stddev = 3.0;
    input.isl_stddev = 5.0;
    input.prompt.shared_system_length = Some(8);
    input.prompt.user_context_length = Some(8);
    if cfg!(feature = "media") {
        input.image.width_mean = 8.0;
        input.image.height_mean = 8.0;
        input.audio.length_mean = 0.02;
    }
    let json = |input: &InputConfig| serde_json::to_string(&generate(input, &["a", "b"])).unwrap();
    assert_eq!(json(&input), json(&input));
    assert_ne!(
        json(&input),
        json(&InputConfig {
            random_seed: Some(12),
            ..input.clone()
        })
    );
}

#[test]
fn random_range_ratio_draws_lengths_across_the_whole_window() {
    let t = Tokenizer::builtin();
    let mut input = base();
    input.isl_mean = 100;
    input.osl_mean = Some(20);
    input.num_dataset_entries = Some(300);
    input.random_range_ratio = Some(aiperf_core::config::RangeRatio {
        input: 0.25,
        output: 0.5,
    });
    let conversations = generate(&input, &[]);
    let isls: Vec<usize> = conversations
        .iter()
        .map(|c| t.count(&c.turns[0].texts[0]))
        .collect();
    let osls: Vec<u32> = conversations
        .iter()
        .map(|c| c.turns[0].max_tokens.unwrap())
        .collect();
    // Windows [floor(100·0.75), ceil(100·1.25)] and [floor(20·0.5), ceil(20·1.5)], both
    // ends reached over 300 uniform draws.
    assert_eq!(isls.iter().min(), Some(&75));
    assert_eq!(isls.iter().max(), Some(&125));
    assert_eq!(osls.iter().min(), Some(&10));
    assert_eq!(osls.iter().max(), Some(&30));
    let mean = isls.iter().sum::<usize>() as f64 / isls.len() as f64;
    assert!((95.0..105.0).contains(&mean), "mean ISL {mean}");
}
