//! Per-component random streams derived from one root seed.
//!
//! Each component that draws random numbers gets its own generator, seeded from the root
//! seed and the component's name, so adding draws in one component never changes what
//! another produces. The child seed is the first 8 bytes (big-endian) of SHA-256 of
//! `"<root>:<identifier>"`, the rule the Python AIPerf uses.

use sha2::{Digest, Sha256};

/// The child seed of `identifier` (e.g. `timing.request.poisson_interval`) under `root`.
///
/// ```
/// use aiperf_core::derive_seed;
///
/// assert_eq!(derive_seed(42, "dataset.prompt.length"), derive_seed(42, "dataset.prompt.length"));
/// assert_ne!(derive_seed(42, "dataset.prompt.length"), derive_seed(42, "dataset.prompt.corpus"));
/// ```
pub fn derive_seed(root: u64, identifier: &str) -> u64 {
    let digest = Sha256::digest(format!("{root}:{identifier}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_sha256_definition() {
        // python3 -c 'import hashlib;print(int(hashlib.sha256(b"42:x").hexdigest()[:16],16))'
        assert_eq!(derive_seed(42, "x"), 14_133_931_150_097_690_562);
        assert_ne!(derive_seed(42, "x"), derive_seed(43, "x"));
    }
}
