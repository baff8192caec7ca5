//! End-to-end tests of aiperf-rs live in `tests/tests/`: the built `aiperf` binary and the
//! library API, each against the in-process mock server. `tests/examples/` shows how
//! another Rust program embeds the engine.

/// The README's code, compiled as doc tests so its embedding example cannot drift from
/// the API.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
