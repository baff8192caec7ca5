//! aiperf-datasets (placeholder)
