//! aiperf-endpoints (placeholder)
