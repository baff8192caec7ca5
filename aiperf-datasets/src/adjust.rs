//! Changes made to a dataset after it is loaded, whatever its source: the verbatim system
//! prompt (`--system-prompt`) and the trace options that decide how a dataset file is
//! replayed (`--ignore-trace-delays`, `--replay-speedup`, `--trace-session-sample-ratio`,
//! `--inter-turn-delay-cap-seconds`). Each reaches the sessions a conversation starts
//! (its branches) too.
//!
//! ```
//! use aiperf_core::{Conversation, Turn};
//! use aiperf_datasets::adjust::{prepend_system_prompt, speed_up_replay};
//!
//! let mut conversations = vec![Conversation {
//!     turns: vec![Turn { timestamp_ms: Some(1000.0), ..Turn::text("hi") }],
//!     ..Conversation::default()
//! }];
//! prepend_system_prompt(&mut conversations, "Be brief.");
//! speed_up_replay(&mut conversations, 2.0);
//! assert_eq!(conversations[0].system_message.as_deref(), Some("Be brief."));
//! assert_eq!(conversations[0].turns[0].timestamp_ms, Some(500.0));
//! ```

use aiperf_core::Conversation;
use rand::RngExt;

use crate::seed::derive_rng;

/// Separates the verbatim system prompt from a dataset's own system message.
pub const SYSTEM_PROMPT_SEPARATOR: &str = "\n\n";

/// The random stream that picks the sessions [`sample_sessions`] keeps.
const SESSION_SAMPLE_STREAM: &str = "dataset.trace.session_sample";

/// Makes `prompt` the system message of every conversation; a conversation that has its
/// own keeps it after `prompt` and [`SYSTEM_PROMPT_SEPARATOR`].
/// Sessions a conversation starts (branches) get it too.
pub fn prepend_system_prompt(conversations: &mut [Conversation], prompt: &str) {
    for conversation in conversations {
        conversation.for_each_session_mut(&mut |session| {
            session.system_message = Some(match session.system_message.take() {
                Some(own) => format!("{prompt}{SYSTEM_PROMPT_SEPARATOR}{own}"),
                None => prompt.to_owned(),
            });
        });
    }
}

/// Removes every turn's timestamp and think time, so turns are sent back to back.
pub fn strip_trace_timing(conversations: &mut [Conversation]) {
    for conversation in conversations {
        conversation.for_each_turn_mut(&mut |turn| {
            turn.timestamp_ms = None;
            turn.delay_ms = None;
        });
    }
}

/// Divides every timestamp and think time by `speedup` (2 replays twice as fast).
pub fn speed_up_replay(conversations: &mut [Conversation], speedup: f64) {
    for conversation in conversations {
        conversation.for_each_turn_mut(&mut |turn| {
            turn.timestamp_ms = turn.timestamp_ms.map(|t| t / speedup);
            turn.delay_ms = turn.delay_ms.map(|d| d / speedup);
        });
    }
}

/// Shortens every think time longer than `cap_ms` to `cap_ms`
/// (`--inter-turn-delay-cap-seconds`); timestamps are left alone. Returns how many
/// think times were shortened.
pub fn cap_turn_delays(conversations: &mut [Conversation], cap_ms: f64) -> usize {
    let mut capped = 0;
    for conversation in conversations {
        conversation.for_each_turn_mut(&mut |turn| {
            if turn.delay_ms.is_some_and(|delay| delay > cap_ms) {
                turn.delay_ms = Some(cap_ms);
                capped += 1;
            }
        });
    }
    capped
}

/// Think times longer than this are most likely a unit mistake; without a cap, the run
/// warns about them (as the Python AIPerf 0.13 does).
pub const LONG_DELAY_MS: f64 = 60_000.0;

/// How many think times are longer than [`LONG_DELAY_MS`], and the longest.
pub fn long_turn_delays(conversations: &[Conversation]) -> (usize, f64) {
    let long: Vec<f64> = conversations
        .iter()
        .flat_map(Conversation::with_descendants)
        .flat_map(|session| session.turns.iter().filter_map(|turn| turn.delay_ms))
        .filter(|delay| *delay > LONG_DELAY_MS)
        .collect();
    (long.len(), long.iter().copied().fold(0.0, f64::max))
}

/// Keeps each whole conversation with probability `ratio`, in dataset order, drawing from
/// a stream of `seed` (the same seed keeps the same conversations). When the draw keeps
/// none, one conversation chosen at random is kept, so a small trace is never emptied.
pub fn sample_sessions(
    conversations: Vec<Conversation>,
    ratio: f64,
    seed: u64,
) -> Vec<Conversation> {
    if ratio >= 1.0 || conversations.is_empty() {
        return conversations;
    }
    let mut rng = derive_rng(seed, SESSION_SAMPLE_STREAM);
    let keep: Vec<bool> = conversations
        .iter()
        .map(|_| rng.random::<f64>() < ratio)
        .collect();
    if !keep.contains(&true) {
        let chosen = rng.random_range(0..conversations.len());
        return conversations.into_iter().nth(chosen).into_iter().collect();
    }
    conversations
        .into_iter()
        .zip(keep)
        .filter_map(|(conversation, kept)| kept.then_some(conversation))
        .collect()
}

#[cfg(test)]
mod tests {
    use aiperf_core::Turn;

    use super::*;

    fn sessions(n: usize) -> Vec<Conversation> {
        (0..n)
            .map(|i| Conversation {
                session_id: format!("s{i}"),
                turns: vec![
                    Turn {
                        timestamp_ms: Some(1000.0 * i as f64),
                        ..Turn::text("a")
                    },
                    Turn {
                        delay_ms: Some(300.0),
                        ..Turn::text("b")
                    },
                ],
                ..Conversation::default()
            })
            .collect()
    }

    fn ids(conversations: &[Conversation]) -> Vec<&str> {
        conversations
            .iter()
            .map(|c| c.session_id.as_str())
            .collect()
    }

    #[test]
    fn the_system_prompt_leads_the_dataset_s_own() {
        let mut conversations = sessions(2);
        conversations[1].system_message = Some("own".into());
        prepend_system_prompt(&mut conversations, "verbatim");
        assert_eq!(conversations[0].system_message.as_deref(), Some("verbatim"));
        assert_eq!(
            conversations[1].system_message.as_deref(),
            Some("verbatim\n\nown")
        );
    }

    #[test]
    fn speedup_divides_timestamps_and_think_times() {
        let mut conversations = sessions(3);
        speed_up_replay(&mut conversations, 4.0);
        let times: Vec<Option<f64>> = conversations
            .iter()
            .flat_map(|c| c.turns.iter().map(|t| t.timestamp_ms.or(t.delay_ms)))
            .collect();
        assert_eq!(
            times,
            [
                Some(0.0),
                Some(75.0),
                Some(250.0),
                Some(75.0),
                Some(500.0),
                Some(75.0)
            ]
        );
    }

    #[test]
    fn stripping_leaves_no_timing() {
        let mut conversations = sessions(2);
        strip_trace_timing(&mut conversations);
        assert!(conversations
            .iter()
            .flat_map(|c| &c.turns)
            .all(|t| t.timestamp_ms.is_none() && t.delay_ms.is_none()));
    }

    #[test]
    fn sampling_keeps_whole_sessions_the_same_for_the_same_seed() {
        let first = sample_sessions(sessions(1000), 0.25, 7);
        assert_eq!(ids(&first), ids(&sample_sessions(sessions(1000), 0.25, 7)));
        assert_ne!(ids(&first), ids(&sample_sessions(sessions(1000), 0.25, 8)));
        assert!(
            (200..300).contains(&first.len()),
            "kept {} of 1000",
            first.len()
        );
        assert!(first.iter().all(|c| c.turns.len() == 2));
        let order: Vec<usize> = first
            .iter()
            .map(|c| c.session_id[1..].parse().unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "dataset order kept");
    }

    #[test]
    fn sampling_never_empties_a_trace_and_ratio_one_keeps_all() {
        assert_eq!(sample_sessions(sessions(3), 1e-9, 1).len(), 1);
        assert_eq!(
            ids(&sample_sessions(sessions(3), 1.0, 1)),
            ["s0", "s1", "s2"]
        );
    }
}
