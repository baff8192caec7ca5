//! Trace re-synthesis (`--synthesis-*`, `aiperf synthesize trace`;
//! docs/datasets.md#trace-synthesis): reshapes a `hash_ids` trace while keeping its
//! prefix-sharing structure.
//!
//! A prefix tree over the requests' `hash_ids` paths tells which leading blocks of each
//! request are shared with another request (its *prefix*); the rest is its unique
//! *prompt*. Then, per request:
//!
//! * `prefix_len_multiplier` stretches (each block becomes ⌊m⌋ blocks, plus blocks for
//!   the fraction, shared by every request with the same prefix) or cuts the prefix;
//! * `prompt_len_multiplier` scales the unique prompt, which gets fresh block ids;
//! * `prefix_root_multiplier` k moves each request into one of k independent copies of
//!   the tree (drawn with the seed), so the trace has k times as many distinct roots;
//! * `speedup_ratio` divides the timestamp (whole milliseconds, rounded down);
//! * `output_len_multiplier` scales the output length (rounded, at least 1), then
//!   `max_osl` caps it; `max_isl` drops requests whose recorded input length is longer.
//!
//! Same trace, options and seed: the same result.
//!
//! ```
//! use aiperf_core::config::TraceSynthesis;
//! use aiperf_datasets::synthesis::{TraceRequest, TraceSynthesizer};
//!
//! let request = |ids: &[u64], ts: f64| TraceRequest {
//!     input_length: Some(ids.len() as u64 * 4),
//!     hash_ids: ids.to_vec(),
//!     timestamp_ms: Some(ts),
//!     output_length: Some(10),
//! };
//! let options = TraceSynthesis { speedup_ratio: 2.0, prompt_len_multiplier: 2.0, ..Default::default() };
//! let synthesizer = TraceSynthesizer::new(options, 4, 42);
//! let (out, _summary) = synthesizer.apply(vec![(request(&[1, 2], 0.0), ()), (request(&[1, 3], 100.0), ())]);
//! assert_eq!(out[1].0.timestamp_ms, Some(50.0));
//! assert_eq!(out[1].0.hash_ids[0], 1); // the shared block stays shared
//! assert_eq!(out[1].0.input_length, Some(4 + 8)); // prefix 4 + unique 4 × 2
//! ```

use std::collections::HashMap;

use aiperf_core::config::TraceSynthesis;
use rand::RngExt;

use crate::seed::derive_rng;

/// One request of a trace, as synthesis sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Prompt tokens; `None` for a request with a literal prompt (text, messages or a
    /// payload), whose prompt synthesis leaves alone.
    pub input_length: Option<u64>,
    /// The prompt's KV-cache block ids (may be empty).
    pub hash_ids: Vec<u64>,
    /// When the request is sent, in milliseconds from the trace start.
    pub timestamp_ms: Option<f64>,
    /// Tokens to generate.
    pub output_length: Option<u32>,
}

/// What synthesis dropped or changed beyond the multipliers, for the log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SynthesisSummary {
    /// Requests dropped because their recorded input length exceeded `max_isl`.
    pub skipped_over_max_isl: usize,
    /// Requests whose output length was capped to `max_osl`.
    pub capped_to_max_osl: usize,
}

/// Applies [`TraceSynthesis`] options to the requests of a trace.
#[derive(Debug, Clone)]
pub struct TraceSynthesizer {
    options: TraceSynthesis,
    block_size: u64,
    seed: u64,
}

impl TraceSynthesizer {
    /// A synthesizer for traces of `block_size`-token blocks (at least 1), drawing the
    /// prefix-root assignment from `seed`.
    pub fn new(options: TraceSynthesis, block_size: u32, seed: u64) -> Self {
        Self {
            options,
            block_size: u64::from(block_size.max(1)),
            seed,
        }
    }

    /// The synthesized requests, each still paired with its caller data `T` (a line
    /// number, a session id), in the given order minus those over `max_isl`; and a
    /// summary, also logged at info level when anything was skipped or capped.
    pub fn apply<T>(
        &self,
        requests: Vec<(TraceRequest, T)>,
    ) -> (Vec<(TraceRequest, T)>, SynthesisSummary) {
        let mut summary = SynthesisSummary::default();
        let mut kept: Vec<(TraceRequest, T)> = requests
            .into_iter()
            .filter(|(request, _)| {
                let over = matches!(
                    (self.options.max_isl, request.input_length),
                    (Some(max), Some(length)) if length > max
                );
                summary.skipped_over_max_isl += usize::from(over);
                !over
            })
            .collect();
        if self.options.reshapes() {
            self.reshape_prompts(&mut kept);
        }
        for (request, _) in &mut kept {
            if let Some(timestamp) = &mut request.timestamp_ms {
                *timestamp = (*timestamp / self.options.speedup_ratio).floor();
            }
            if let Some(length) = &mut request.output_length {
                let scaled = (f64::from(*length) * self.options.output_len_multiplier).round();
                // `as` saturates: a huge multiplier caps at u32::MAX.
                let mut scaled = scaled as u32;
                if let Some(max) = self.options.max_osl {
                    if scaled > max {
                        scaled = max;
                        summary.capped_to_max_osl += 1;
                    }
                }
                *length = scaled.max(1);
            }
        }
        if summary != SynthesisSummary::default() {
            tracing::info!(
                skipped = summary.skipped_over_max_isl,
                max_isl = self.options.max_isl,
                capped = summary.capped_to_max_osl,
                max_osl = self.options.max_osl,
                "trace synthesis: skipped requests over max_isl, capped output lengths over \
                 max_osl"
            );
        }
        (kept, summary)
    }

    /// New `hash_ids` and input lengths for the requests with synthesized prompts.
    fn reshape_prompts<T>(&self, requests: &mut [(TraceRequest, T)]) {
        let tree = PrefixTree::of(requests.iter().map(|(r, _)| r.hash_ids.as_slice()));
        let block = self.block_size;
        let stretch = self.options.prefix_len_multiplier;
        let whole_stretch = if stretch > 1.0 { stretch as u64 } else { 1 };
        // Fresh ids start above every stretched shared id.
        let mut next_id = tree
            .max_shared_id()
            .map_or(0, |max| (max + 1) * whole_stretch);
        let mut fraction_blocks: HashMap<Vec<u64>, Vec<u64>> = HashMap::new();
        let mut fresh = |count: u64| {
            let ids: Vec<u64> = (next_id..next_id + count).collect();
            next_id += count;
            ids
        };
        for (request, _) in requests.iter_mut() {
            let Some(length) = request.input_length else {
                continue;
            };
            if request.hash_ids.is_empty() {
                let scaled = (length as f64 * self.options.prompt_len_multiplier) as u64;
                request.input_length = Some(scaled.max(1));
                continue;
            }
            let shared = tree.shared_prefix_len(&request.hash_ids);
            let prefix = &request.hash_ids[..shared];
            let prefix_len = (shared as u64 * block).min(length);
            // Non-zero only when the whole prompt is shared and its last block is short.
            let short_tail = shared as u64 * block - prefix_len;
            let prompt_len = length - prefix_len;

            let mut ids: Vec<u64> = if stretch > 1.0 {
                let mut ids: Vec<u64> = prefix
                    .iter()
                    .flat_map(|id| (0..whole_stretch).map(move |j| id * whole_stretch + j))
                    .collect();
                let target = (shared as f64 * stretch).ceil() as usize;
                if target > ids.len() {
                    let extra = (target - ids.len()) as u64;
                    // Requests with the same prefix share its added blocks too.
                    let added = fraction_blocks
                        .entry(prefix.to_vec())
                        .or_insert_with(|| fresh(extra));
                    ids.extend_from_slice(added);
                }
                ids
            } else if stretch < 1.0 && shared > 0 {
                let kept = ((shared as f64 * stretch) as usize).max(1);
                prefix[..kept].to_vec()
            } else {
                prefix.to_vec()
            };
            let new_prefix_len = (ids.len() as u64 * block).saturating_sub(short_tail);
            let mut new_prompt_len =
                (prompt_len as f64 * self.options.prompt_len_multiplier) as u64;
            if new_prefix_len == 0 {
                new_prompt_len = new_prompt_len.max(1);
            }
            ids.extend(fresh(new_prompt_len.div_ceil(block)));
            request.hash_ids = ids;
            request.input_length = Some(new_prefix_len + new_prompt_len);
        }
        let roots = u64::from(self.options.prefix_root_multiplier);
        if roots > 1 {
            let tree_span = next_id;
            let mut rng = derive_rng(self.seed, "dataset.synthesis.synthesizer");
            for (request, _) in requests.iter_mut() {
                if request.hash_ids.is_empty() {
                    continue;
                }
                let copy = rng.random_range(0..roots);
                for id in &mut request.hash_ids {
                    *id += copy * tree_span;
                }
            }
        }
    }
}

/// A trie over `hash_ids` paths counting how many requests pass through each node.
#[derive(Debug, Default)]
struct PrefixTree {
    /// (parent node, hash id) → node; node 0 is the root.
    children: HashMap<(usize, u64), usize>,
    /// Requests through each node.
    visits: Vec<usize>,
    max_shared_id: Option<u64>,
}

impl PrefixTree {
    fn of<'a>(paths: impl Iterator<Item = &'a [u64]>) -> Self {
        let mut tree = Self {
            visits: vec![0],
            ..Self::default()
        };
        for path in paths {
            let mut node = 0;
            for id in path {
                let next = tree.visits.len();
                node = *tree.children.entry((node, *id)).or_insert(next);
                if node == next {
                    tree.visits.push(0);
                }
                tree.visits[node] += 1;
                if tree.visits[node] == 2 {
                    tree.max_shared_id = tree.max_shared_id.max(Some(*id));
                }
            }
        }
        tree
    }

    /// How many leading blocks of `path` another request also starts with.
    fn shared_prefix_len(&self, path: &[u64]) -> usize {
        let mut node = 0;
        for (depth, id) in path.iter().enumerate() {
            match self.children.get(&(node, *id)) {
                Some(&next) if self.visits[next] >= 2 => node = next,
                _ => return depth,
            }
        }
        path.len()
    }

    fn max_shared_id(&self) -> Option<u64> {
        self.max_shared_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(ids: &[u64], input_length: u64) -> TraceRequest {
        TraceRequest {
            input_length: Some(input_length),
            hash_ids: ids.to_vec(),
            timestamp_ms: Some(1001.0),
            output_length: Some(7),
        }
    }

    fn run(options: TraceSynthesis, requests: Vec<TraceRequest>) -> Vec<TraceRequest> {
        let paired = requests.into_iter().map(|r| (r, ())).collect();
        let (out, _) = TraceSynthesizer::new(options, 4, 1).apply(paired);
        out.into_iter().map(|(r, ())| r).collect()
    }

    #[test]
    fn defaults_change_nothing() {
        let input = vec![request(&[1, 2], 6), request(&[1, 3, 4], 10)];
        assert_eq!(run(TraceSynthesis::default(), input.clone()), input);
    }

    #[test]
    fn whole_prefix_stretch_interleaves_shared_blocks() {
        let options = TraceSynthesis {
            prefix_len_multiplier: 2.0,
            ..Default::default()
        };
        let out = run(options, vec![request(&[1, 2], 6), request(&[1, 3], 6)]);
        // Shared block 1 → 2, 3; max shared id 1, so fresh ids start at (1 + 1) × 2 = 4.
        assert_eq!(out[0].hash_ids, vec![2, 3, 4]);
        assert_eq!(out[1].hash_ids, vec![2, 3, 5]);
        assert_eq!(out[0].input_length, Some(8 + 2));
    }

    #[test]
    fn fractional_stretch_blocks_are_shared_by_the_same_prefix() {
        let options = TraceSynthesis {
            prefix_len_multiplier: 1.5,
            ..Default::default()
        };
        let out = run(
            options,
            vec![request(&[1, 2, 9], 10), request(&[1, 2, 8], 10)],
        );
        assert_eq!(out[0].hash_ids[..3], out[1].hash_ids[..3]);
        assert_eq!(out[0].input_length, Some(12 + 2));
        assert_ne!(out[0].hash_ids[3], out[1].hash_ids[3]);
    }

    #[test]
    fn a_fully_shared_prompt_keeps_its_short_last_block() {
        let options = TraceSynthesis {
            prompt_len_multiplier: 3.0,
            ..Default::default()
        };
        let out = run(options, vec![request(&[1, 2], 6), request(&[1, 2], 6)]);
        assert_eq!(out[0].hash_ids, vec![1, 2]);
        assert_eq!(out[0].input_length, Some(6));
    }

    #[test]
    fn squeeze_keeps_at_least_one_shared_block() {
        let options = TraceSynthesis {
            prefix_len_multiplier: 0.1,
            ..Default::default()
        };
        let out = run(
            options,
            vec![request(&[1, 2, 5], 10), request(&[1, 2, 6], 10)],
        );
        assert_eq!(out[0].hash_ids, vec![1, 3]);
        assert_eq!(out[1].hash_ids, vec![1, 4]);
        assert_eq!(out[0].input_length, Some(4 + 2));
    }

    #[test]
    fn max_isl_skips_and_max_osl_caps_with_counts() {
        let options = TraceSynthesis {
            max_isl: Some(8),
            max_osl: Some(5),
            output_len_multiplier: 2.0,
            ..Default::default()
        };
        let input = vec![(request(&[1, 2, 3], 10), 1), (request(&[4, 5], 6), 2)];
        let (out, summary) = TraceSynthesizer::new(options, 4, 1).apply(input);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1, 2);
        assert_eq!(out[0].0.output_length, Some(5));
        assert_eq!(
            summary,
            SynthesisSummary {
                skipped_over_max_isl: 1,
                capped_to_max_osl: 1
            }
        );
    }

    #[test]
    fn root_copies_are_disjoint_and_deterministic() {
        let options = TraceSynthesis {
            prefix_root_multiplier: 3,
            ..Default::default()
        };
        let input: Vec<TraceRequest> = (0..30).map(|i| request(&[1, 100 + i], 6)).collect();
        let first = run(options.clone(), input.clone());
        assert_eq!(first, run(options, input));
        let mut roots: Vec<u64> = first.iter().map(|r| r.hash_ids[0]).collect();
        roots.sort_unstable();
        roots.dedup();
        assert_eq!(roots.len(), 3);
    }

    #[test]
    fn speedup_floors_timestamps_and_literal_prompts_keep_their_length() {
        let options = TraceSynthesis {
            speedup_ratio: 2.0,
            prompt_len_multiplier: 2.0,
            ..Default::default()
        };
        let literal = TraceRequest {
            input_length: None,
            hash_ids: Vec::new(),
            timestamp_ms: Some(1001.0),
            output_length: None,
        };
        let out = run(options, vec![literal.clone()]);
        assert_eq!(out[0].timestamp_ms, Some(500.0));
        assert_eq!(out[0].input_length, None);
    }
}
