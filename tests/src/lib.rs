//! End-to-end tests of aiperf-rs live in `tests/tests/`: the built `aiperf` binary and the
//! library API, each against the in-process mock server. `tests/examples/` shows how
//! another Rust program embeds the engine.
