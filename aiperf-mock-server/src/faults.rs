//! Per-request fault decisions: reproducible from `(seed, request sequence number)`.

use crate::config::FaultConfig;

/// A fault injected into one inference request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// HTTP 500.
    Error,
    /// HTTP 429.
    RateLimit,
    /// HTTP 503.
    Unavailable,
    /// Connection closed mid-stream.
    Drop,
    /// One SSE event with invalid JSON (or a truncated JSON body).
    Malformed,
    /// An `event: error` SSE event ends the stream.
    SseError,
    /// The stream pauses for `stall_ms`.
    Stall,
    /// The response head is delayed by `slow_headers_ms`.
    SlowHeaders,
    /// The response carries `oversized_bytes` of padding: an SSE comment mid-stream, or
    /// whitespace before a JSON body (valid, only huge).
    Oversized,
}

impl FaultKind {
    /// Every kind, in decision order.
    pub const ALL: [FaultKind; 9] = [
        FaultKind::Error,
        FaultKind::RateLimit,
        FaultKind::Unavailable,
        FaultKind::Drop,
        FaultKind::Malformed,
        FaultKind::SseError,
        FaultKind::Stall,
        FaultKind::SlowHeaders,
        FaultKind::Oversized,
    ];

    /// Label used in `/metrics` (`kind="…"`).
    pub fn label(self) -> &'static str {
        match self {
            FaultKind::Error => "error",
            FaultKind::RateLimit => "rate_limit",
            FaultKind::Unavailable => "unavailable",
            FaultKind::Drop => "drop",
            FaultKind::Malformed => "malformed_chunk",
            FaultKind::SseError => "sse_error",
            FaultKind::Stall => "stall",
            FaultKind::SlowHeaders => "slow_headers",
            FaultKind::Oversized => "oversized",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// SplitMix64 finaliser: a fast, well-mixed 64-bit hash step.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A value derived from `(seed, seq, stream)`, for independent per-request random streams.
pub(crate) fn derive(seed: u64, seq: u64, stream: u64) -> u64 {
    mix64(mix64(seed ^ mix64(seq)) ^ stream)
}

/// The fault (if any) for request number `seq` under `seed`.
///
/// One uniform draw `u` in `[0, 100)` is compared with the cumulative rates in
/// [`FaultKind::ALL`] order, so each fault occurs at exactly its rate and at most one applies.
pub fn decide(cfg: &FaultConfig, seed: u64, seq: u64) -> Option<FaultKind> {
    let rates = cfg.rates();
    if rates.iter().all(|(_, r)| *r <= 0.0) {
        return None;
    }
    let u = (derive(seed, seq, 0xFA17) >> 11) as f64 / (1u64 << 53) as f64 * 100.0;
    let mut acc = 0.0;
    for (kind, (_, rate)) in FaultKind::ALL.iter().zip(rates) {
        acc += rate;
        if u < acc {
            return Some(*kind);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_hold_and_are_exclusive() {
        let cfg = FaultConfig {
            error_rate: 10.0,
            drop_rate: 20.0,
            stall_rate: 5.0,
            ..FaultConfig::default()
        };
        let n = 100_000;
        let mut counts = [0u32; 8];
        for seq in 0..n {
            if let Some(k) = decide(&cfg, 42, seq) {
                counts[k.index()] += 1;
            }
        }
        let pct = |c: u32| f64::from(c) * 100.0 / n as f64;
        assert!((pct(counts[0]) - 10.0).abs() < 0.5);
        assert!((pct(counts[3]) - 20.0).abs() < 0.5);
        assert!((pct(counts[6]) - 5.0).abs() < 0.5);
        assert_eq!(counts[1] + counts[2] + counts[4] + counts[5] + counts[7], 0);
    }

    #[test]
    fn same_seed_same_faults() {
        let cfg = FaultConfig {
            error_rate: 25.0,
            ..FaultConfig::default()
        };
        let a: Vec<_> = (0..200).map(|s| decide(&cfg, 7, s)).collect();
        let b: Vec<_> = (0..200).map(|s| decide(&cfg, 7, s)).collect();
        let c: Vec<_> = (0..200).map(|s| decide(&cfg, 8, s)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(decide(&FaultConfig::default(), 1, 1), None);
    }
}
