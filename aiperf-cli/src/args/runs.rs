//! The multi-run and sweep flags: repeat the benchmark for confidence intervals, and
//! how the points of a parameter sweep (comma lists on the load and length flags) combine.

use clap::{Args, ValueEnum};

/// Repeated runs and parameter sweeps.
#[derive(Debug, Args)]
#[command(next_help_heading = "Multi-run confidence and sweeps")]
pub(crate) struct RunsArgs {
    /// Run the benchmark this many times (1–10) and aggregate the runs: mean, sample std
    /// and a Student-t confidence interval per metric in aggregate/.
    #[arg(long = "num-profile-runs", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=10))]
    pub num_profile_runs: u32,

    /// Seconds to wait between profile runs.
    #[arg(long = "profile-run-cooldown-seconds", default_value_t = 0.0,
          value_parser = non_negative_seconds)]
    pub profile_run_cooldown_seconds: f64,

    /// Confidence level of the aggregate's intervals (0 < x < 1).
    #[arg(long = "confidence-level", default_value_t = 0.95, value_parser = confidence_level)]
    pub confidence_level: f64,

    /// Warm up before the first profile run only (the default).
    #[arg(
        long = "profile-run-disable-warmup-after-first",
        overrides_with = "no_profile_run_disable_warmup_after_first"
    )]
    pub profile_run_disable_warmup_after_first: bool,

    /// Warm up before every profile run.
    #[arg(
        long = "no-profile-run-disable-warmup-after-first",
        overrides_with = "profile_run_disable_warmup_after_first"
    )]
    pub no_profile_run_disable_warmup_after_first: bool,

    /// Give every profile run the same dataset seed: --random-seed, or 42 without one
    /// (the default).
    #[arg(
        long = "set-consistent-seed",
        overrides_with = "no_set_consistent_seed"
    )]
    pub set_consistent_seed: bool,

    /// Without --random-seed, let every profile run draw its own seed.
    #[arg(
        long = "no-set-consistent-seed",
        overrides_with = "set_consistent_seed"
    )]
    pub no_set_consistent_seed: bool,

    /// Seconds to wait between the points of a parameter sweep.
    #[arg(long = "parameter-sweep-cooldown-seconds", default_value_t = 0.0,
          value_parser = non_negative_seconds)]
    pub parameter_sweep_cooldown_seconds: f64,

    /// How several comma lists combine: grid (every combination) or zip (the i-th value
    /// of each list together; the lists must be equally long).
    #[arg(long = "sweep-type", value_enum, default_value = "grid")]
    pub sweep_type: SweepType,

    /// Do not print the sweep summary table at the end.
    #[arg(long = "no-sweep-table")]
    pub no_sweep_table: bool,
}

/// How the lists of a sweep combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SweepType {
    /// Every combination (cartesian product).
    Grid,
    /// The i-th value of every list together.
    Zip,
}

impl RunsArgs {
    /// True unless `--no-profile-run-disable-warmup-after-first`.
    pub(crate) fn warmup_only_before_first_run(&self) -> bool {
        !self.no_profile_run_disable_warmup_after_first
    }

    /// True unless `--no-set-consistent-seed`.
    pub(crate) fn consistent_seed(&self) -> bool {
        !self.no_set_consistent_seed
    }
}

fn non_negative_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("expected seconds >= 0, got {text:?}")),
    }
}

fn confidence_level(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "expected a level between 0 and 1 (exclusive), e.g. 0.95, got {text:?}"
        )),
    }
}
