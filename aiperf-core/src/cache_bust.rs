//! `--cache-bust`: a marker put into each played session so that a server's prefix cache
//! cannot serve one play of a conversation from another's work.
//!
//! The `rid` targets give every played session its own marker, `[rid:<12 hex digits>]`,
//! the first 12 hex digits of the SHA-256 of the session's correlation id (unique per
//! play, so a conversation drawn twice is two cache-cold sessions). The warmup-isolation
//! targets put the constant `[warmup]` marker into warmup sessions only, so profiling
//! never reuses what warmup cached. A system target with no system message marks the
//! first turn instead.
//!
//! ```
//! use aiperf_core::cache_bust::{mark, CacheBust};
//! use aiperf_core::{Conversation, Phase, Turn};
//!
//! let conversation = Conversation { turns: vec![Turn::text("hi")], ..Conversation::default() };
//! let marked = mark(&conversation, CacheBust::FirstTurnPrefix, "corr-1", Phase::Profiling)
//!     .unwrap();
//! assert!(marked.turns[0].texts[0].starts_with("[rid:"));
//! assert!(marked.turns[0].texts[0].ends_with("]\n\nhi"));
//! ```

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::conversation::Conversation;
use crate::record::Phase;

/// Where the cache-bust marker goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheBust {
    /// No marker.
    #[default]
    None,
    /// A per-session marker before the system message.
    SystemPrefix,
    /// A per-session marker after the system message.
    SystemSuffix,
    /// A per-session marker before the first turn's text.
    FirstTurnPrefix,
    /// A per-session marker after the first turn's text.
    FirstTurnSuffix,
    /// `[warmup]` before the system message of warmup sessions.
    WarmupIsolationSystem,
    /// `[warmup]` before the first turn's text of warmup sessions.
    WarmupIsolationFirstTurn,
}

/// The marker of the warmup-isolation targets.
pub const WARMUP_MARKER: &str = "[warmup]\n\n";

/// Hex digits of the digest in a per-session marker.
const DIGEST_HEX_DIGITS: usize = 12;

/// `conversation` as the session with `correlation_id` in `phase` sends it, or `None`
/// when `target` puts no marker into it (no target, or warmup isolation outside warmup).
pub fn mark(
    conversation: &Conversation,
    target: CacheBust,
    correlation_id: &str,
    phase: Phase,
) -> Option<Conversation> {
    let marker = match target {
        CacheBust::None => return None,
        CacheBust::WarmupIsolationSystem | CacheBust::WarmupIsolationFirstTurn => {
            if phase != Phase::Warmup {
                return None;
            }
            WARMUP_MARKER.to_owned()
        }
        _ => {
            let digest = hex(&Sha256::digest(correlation_id.as_bytes()));
            let rid = format!("[rid:{}]", &digest[..DIGEST_HEX_DIGITS]);
            if matches!(target, CacheBust::SystemPrefix | CacheBust::FirstTurnPrefix) {
                format!("{rid}\n\n")
            } else {
                format!("\n\n{rid}")
            }
        }
    };
    let prefix = matches!(
        target,
        CacheBust::SystemPrefix
            | CacheBust::FirstTurnPrefix
            | CacheBust::WarmupIsolationSystem
            | CacheBust::WarmupIsolationFirstTurn
    );
    let on_system = matches!(
        target,
        CacheBust::SystemPrefix | CacheBust::SystemSuffix | CacheBust::WarmupIsolationSystem
    );
    let attach = |text: &str| {
        if prefix {
            format!("{marker}{text}")
        } else {
            format!("{text}{marker}")
        }
    };
    let mut marked = conversation.clone();
    match &mut marked.system_message {
        Some(system) if on_system => *system = attach(system),
        _ => {
            let first = marked.turns.first_mut()?;
            let text = if prefix {
                first.texts.first_mut()
            } else {
                first.texts.last_mut()
            }?;
            *text = attach(text);
        }
    }
    Some(marked)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Turn;

    fn conversation(system: Option<&str>) -> Conversation {
        Conversation {
            system_message: system.map(str::to_owned),
            turns: vec![Turn::text("one"), Turn::text("two")],
            ..Conversation::default()
        }
    }

    #[test]
    fn rid_markers_digest_the_correlation_id() {
        // python3 -c 'import hashlib;print(hashlib.sha256(b"abc").hexdigest()[:12])'
        let marked = mark(
            &conversation(Some("sys")),
            CacheBust::SystemSuffix,
            "abc",
            Phase::Profiling,
        )
        .unwrap();
        assert_eq!(
            marked.system_message.as_deref(),
            Some("sys\n\n[rid:ba7816bf8f01]")
        );
        assert_eq!(marked.turns, conversation(None).turns);
        let other = mark(
            &conversation(Some("sys")),
            CacheBust::SystemSuffix,
            "abd",
            Phase::Profiling,
        )
        .unwrap();
        assert_ne!(other.system_message, marked.system_message);
    }

    #[test]
    fn system_targets_without_a_system_message_mark_the_first_turn() {
        let marked = mark(
            &conversation(None),
            CacheBust::SystemPrefix,
            "abc",
            Phase::Profiling,
        )
        .unwrap();
        assert_eq!(marked.system_message, None);
        assert_eq!(marked.turns[0].texts, ["[rid:ba7816bf8f01]\n\none"]);
        assert_eq!(marked.turns[1].texts, ["two"]);
        let suffix = mark(
            &conversation(Some("sys")),
            CacheBust::FirstTurnSuffix,
            "abc",
            Phase::Warmup,
        )
        .unwrap();
        assert_eq!(suffix.system_message.as_deref(), Some("sys"));
        assert_eq!(suffix.turns[0].texts, ["one\n\n[rid:ba7816bf8f01]"]);
    }

    #[test]
    fn warmup_isolation_marks_warmup_sessions_only() {
        let c = conversation(Some("sys"));
        let warm = mark(&c, CacheBust::WarmupIsolationSystem, "x", Phase::Warmup).unwrap();
        assert_eq!(warm.system_message.as_deref(), Some("[warmup]\n\nsys"));
        let first = mark(&c, CacheBust::WarmupIsolationFirstTurn, "x", Phase::Warmup).unwrap();
        assert_eq!(first.turns[0].texts, ["[warmup]\n\none"]);
        assert_eq!(
            mark(&c, CacheBust::WarmupIsolationSystem, "x", Phase::Profiling),
            None
        );
        assert_eq!(mark(&c, CacheBust::None, "x", Phase::Warmup), None);
    }
}
