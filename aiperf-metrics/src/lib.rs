//! aiperf-metrics (placeholder)
