//! What a build provides, described for people: each crate lists its endpoint types,
//! dataset formats, public datasets or chart kinds as [`Capability`] entries, and
//! `aiperf plugins` prints them. An entry whose Cargo feature was left out of the build
//! is still listed, marked as not compiled in, so the listing says how to get it.
//!
//! ```
//! use aiperf_core::capability::Capability;
//!
//! let entry = Capability::always("chat", "OpenAI chat completions");
//! assert!(entry.compiled_in);
//! assert_eq!(entry.feature, None);
//! ```

/// One thing a build can do, under its user-facing name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capability {
    /// The name a user passes (`chat`, `mooncake_trace`, …).
    pub name: &'static str,
    /// One line on what it is.
    pub summary: &'static str,
    /// The Cargo feature (`crate/feature`) it needs, when it is optional.
    pub feature: Option<&'static str>,
    /// Whether this build has it.
    pub compiled_in: bool,
}

impl Capability {
    /// An entry every build has.
    pub const fn always(name: &'static str, summary: &'static str) -> Self {
        Self {
            name,
            summary,
            feature: None,
            compiled_in: true,
        }
    }

    /// An entry that needs `feature`; `compiled_in` says whether this build has it.
    pub const fn optional(
        name: &'static str,
        summary: &'static str,
        feature: &'static str,
        compiled_in: bool,
    ) -> Self {
        Self {
            name,
            summary,
            feature: Some(feature),
            compiled_in,
        }
    }
}
