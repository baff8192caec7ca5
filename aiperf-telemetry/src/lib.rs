//! GPU and server telemetry for aiperf-rs: scraping Prometheus endpoints (DCGM exporter,
//! vLLM, SGLang, TensorRT-LLM, Dynamo) beside a benchmark and summarising them over the
//! profiling window.
//!
//! This crate is empty for now: scraping arrives with the telemetry work (issue 7). Until
//! then `aiperf profile` collects no telemetry and accepts `--no-gpu-telemetry` and
//! `--no-server-metrics` only for command-line compatibility.
