//! The random streams of the dataset components, derived from one root seed by
//! [`aiperf_core::derive_seed`].

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Stream for synthetic input lengths.
pub const PROMPT_LENGTH: &str = "dataset.prompt.length";
/// Stream for the prompt corpus (corpus order and window positions).
pub const PROMPT_CORPUS: &str = "dataset.prompt.corpus";
/// Stream for where hash-id blocks start in the prompt corpus.
pub const HASH_BLOCKS: &str = "dataset.prompt.hash_blocks";
/// Stream for requested output lengths.
pub const MAX_TOKENS: &str = "composer.turn.max_tokens";
/// Stream for the number of passages of ranking requests.
pub const RANKING_PASSAGES: &str = "dataset.rankings.passages";

pub use aiperf_core::derive_seed;

/// A ChaCha8 generator for `identifier` under `root`.
pub fn derive_rng(root: u64, identifier: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(derive_seed(root, identifier))
}
