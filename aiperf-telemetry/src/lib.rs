//! aiperf-telemetry (placeholder)
