//! The prompts of one weka trace, made all together when the first is needed.
//!
//! Each weka trace has prompts of its own seed, so its own prompt corpus: building that
//! corpus (tokenizing a quarter of a million tokens of generated code) is most of the
//! cost of making a trace's prompts, tens of milliseconds, and a folder or hub corpus
//! holds hundreds of traces. Loading therefore lays out each trace's prompts without
//! building anything ([`TracePrompts::recipe`]); the first recipe of a trace that a run
//! makes builds the corpus and makes every prompt of the trace, in the order a loader
//! making them at once would (so fresh parts are drawn in the same order and the texts
//! are the same), and the made texts are freed once each has been taken: a run then
//! holds one trace's corpus at a time, not one per trace.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
use aiperf_core::DeferredText;

use super::hash_prompts::{check_blocks, HashIdPrompts};
use crate::Tokenizer;

/// What a trace's [`HashIdPrompts`] are made with.
#[derive(Debug, Clone)]
pub(super) struct PromptSource {
    pub(super) tokenizer: Tokenizer,
    pub(super) seed: u64,
    pub(super) block_size: u32,
    pub(super) corpus: PromptCorpus,
    pub(super) style: RandomCorpusStyle,
}

impl PromptSource {
    /// The trace's prompt maker (its corpus built now). `Err` is the reason.
    pub(super) fn prompts(&self) -> Result<HashIdPrompts, String> {
        HashIdPrompts::new(
            self.tokenizer.clone(),
            self.seed,
            self.block_size,
            self.corpus,
            self.style,
        )
        .map_err(|e| e.to_string())
    }
}

/// One trace's prompts being laid out while it loads.
pub(super) struct TracePrompts {
    source: PromptSource,
    /// Each prompt's input length and hash ids, in the order they are made.
    requests: Vec<(u64, Vec<u64>)>,
    /// Filled by [`TracePrompts::finish`]: the recipes read it.
    batch: Arc<OnceLock<Batch>>,
}

impl TracePrompts {
    pub(super) fn new(source: PromptSource) -> Self {
        Self {
            source,
            requests: Vec::new(),
            batch: Arc::new(OnceLock::new()),
        }
    }

    /// The next prompt of the trace: `input_length` tokens of `hash_ids` (see
    /// [`HashIdPrompts::prompt`]), checked now, made once the trace is finished and a
    /// run needs it. `Err` is the reason, for an error naming the request.
    pub(super) fn recipe(
        &mut self,
        input_length: u64,
        hash_ids: Vec<u64>,
    ) -> Result<DeferredText, String> {
        check_blocks(u64::from(self.source.block_size), input_length, &hash_ids)?;
        let index = self.requests.len();
        self.requests.push((input_length, hash_ids));
        let batch = Arc::clone(&self.batch);
        // A recipe is only handed out with its trace finished: the batch is there.
        Ok(DeferredText::new(move || {
            batch.get().map(|b| b.text(index)).unwrap_or_default()
        }))
    }

    /// Ends the trace: its recipes can be made. `ready` is its prompt maker when one
    /// was built already (it is used for the first batch instead of building another).
    pub(super) fn finish(self, ready: Option<HashIdPrompts>) {
        let batch = Batch {
            source: self.source,
            requests: self.requests,
            made: Mutex::new(Made {
                texts: None,
                taken: 0,
                ready,
            }),
        };
        // Only this call fills the cell.
        let _ = self.batch.set(batch);
    }
}

/// A finished trace's prompts.
struct Batch {
    source: PromptSource,
    requests: Vec<(u64, Vec<u64>)>,
    made: Mutex<Made>,
}

struct Made {
    /// Every prompt of the trace, while some are still to be taken.
    texts: Option<Arc<Vec<String>>>,
    /// Texts taken so far: every `requests.len()` takes, the texts are freed.
    taken: usize,
    /// A prompt maker built while loading, not used yet.
    ready: Option<HashIdPrompts>,
}

impl Batch {
    /// The text of prompt `index`, making every prompt of the trace if they are not
    /// held (the first take, or a take after all were taken: `inputs.json` makes them
    /// again after the run).
    fn text(&self, index: usize) -> String {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        let texts = if let Some(texts) = &made.texts {
            Arc::clone(texts)
        } else {
            let texts = Arc::new(self.make_all(made.ready.take()));
            made.texts = Some(Arc::clone(&texts));
            texts
        };
        made.taken += 1;
        if made.taken % self.requests.len() == 0 {
            made.texts = None;
        }
        texts.get(index).cloned().unwrap_or_default()
    }

    /// Every prompt, in order. Loading checked each one and built one prompt maker
    /// with the same tokenizer, corpus and block size, so neither step can fail here.
    fn make_all(&self, ready: Option<HashIdPrompts>) -> Vec<String> {
        let made = ready
            .map_or_else(|| self.source.prompts(), Ok)
            .and_then(|mut prompts| {
                self.requests
                    .iter()
                    .map(|(input_length, hash_ids)| prompts.prompt(*input_length, hash_ids))
                    .collect::<Result<Vec<String>, String>>()
            });
        made.unwrap_or_else(|reason| {
            tracing::error!(reason, "cannot make a weka trace's prompts");
            Vec::new()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> PromptSource {
        PromptSource {
            tokenizer: Tokenizer::builtin(),
            seed: 11,
            block_size: 16,
            corpus: PromptCorpus::Coding,
            style: RandomCorpusStyle::Vllm,
        }
    }

    #[test]
    fn recipes_made_in_any_order_and_twice_give_the_prompts_made_in_order() {
        // Shared blocks, a prefix-only prompt (fresh tail) and one without hash ids:
        // both fresh parts come from one stream, drawn in request order.
        let requests: [(u64, &[u64]); 4] =
            [(40, &[1, 2, 3]), (60, &[1, 2]), (12, &[]), (20, &[1, 9])];
        let mut direct = source().prompts().unwrap();
        let expected: Vec<String> = requests
            .iter()
            .map(|(length, ids)| direct.prompt(*length, ids).unwrap())
            .collect();
        let mut trace = TracePrompts::new(source());
        let recipes: Vec<DeferredText> = requests
            .iter()
            .map(|(length, ids)| trace.recipe(*length, ids.to_vec()).unwrap())
            .collect();
        trace.finish(None);
        // A run's pass (the last first), then inputs.json's pass: the texts are freed
        // after the first and made again.
        for _ in 0..2 {
            let made: Vec<String> = recipes.iter().rev().map(DeferredText::make).collect();
            let expected_reversed: Vec<String> = expected.iter().rev().cloned().collect();
            assert_eq!(made, expected_reversed);
        }
        assert_eq!(Tokenizer::builtin().count(&expected[2]), 12);
    }

    #[test]
    fn a_prompt_that_cannot_be_made_is_refused_when_laid_out() {
        let mut trace = TracePrompts::new(source());
        assert_eq!(
            trace.recipe(20, vec![1, 2, 3]).unwrap_err(),
            "input_length 20 is too short for 3 hash ids of 16-token blocks: the final \
             block would hold -12 tokens (must be at least 1); check --isl-block-size"
        );
    }
}
