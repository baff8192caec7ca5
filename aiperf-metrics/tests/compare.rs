#![allow(clippy::unwrap_used)]
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test says on the terminal which optional input it skipped
//! `aiperf compare` from the library: the statistics against hand-computed values, the
//! fixture runs (a known +30 % TTFT shift, a rerun with noise only, identical runs), the
//! Python AIPerf's summaries, the regression gates and the error messages.

use std::path::{Path, PathBuf};

use aiperf_metrics::artifacts::{ArtifactError, RunArtifacts};
use aiperf_metrics::compare::significance::{
    bootstrap_percentile_diffs, mann_whitney_u, welch_t, Interval,
};
use aiperf_metrics::compare::{
    compare, direction_of, parse_gates, render, Change, CompareOptions, CompareStat, Direction,
};

fn close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} differs from {expected} by more than {tolerance}"
    );
}

// ---- statistics, by hand ----

/// x = [1, 2, 2, 3], y = [2, 3, 4, 5]. Pooled ranks: 1→1, the three 2s share (2+3+4)/3 = 3,
/// the two 3s share 5.5, 4→7, 5→8. R_x = 1 + 3 + 3 + 5.5 = 12.5, U_x = 12.5 − 4·5/2 = 2.5.
/// μ = 4·4/2 = 8; ties Σ(t³ − t) = 24 + 6 = 30, σ² = 16/12 · (9 − 30/56) = 11.285714…;
/// z = (|2.5 − 8| − 0.5)/σ = 5/3.3594… = 1.48835139…, p = erfc(z/√2) = 0.1366582477…
#[test]
fn mann_whitney_u_with_ties_matches_the_hand_computation() {
    let x = [1.0, 2.0, 2.0, 3.0];
    let y = [2.0, 3.0, 4.0, 5.0];
    let test = mann_whitney_u(&x, &y).unwrap();
    assert_eq!(test.u, 2.5);
    close(test.z, 1.488_351_394_468_968, 1e-12);
    // statrs' erfc agrees with the C library's to 5e-11 relative.
    close(test.p_value, 0.136_658_247_738_147_5, 1e-10);
    // The other way round: U_y = 16 − 2.5, same z and p.
    let reverse = mann_whitney_u(&y, &x).unwrap();
    assert_eq!(reverse.u, 13.5);
    close(reverse.p_value, test.p_value, 1e-15);
    // All values tied: no evidence at all.
    let tied = mann_whitney_u(&[4.0, 4.0], &[4.0, 4.0, 4.0]).unwrap();
    assert_eq!((tied.u, tied.p_value), (3.0, 1.0));
    assert!(mann_whitney_u(&[], &y).is_none());
}

/// a = 1..=5 (mean 3, s² = 2.5), b = 2, 4, …, 12 (mean 7, s² = 14).
/// se² = 2.5/5 + 14/6 = 2.8333…, t = 4/√2.8333… = 2.37635410…,
/// df = se⁴ / ((0.5)²/4 + (2.3333…)²/5) = 6.97225573…; the two-sided p-value of Student's
/// t with that df, by numerical integration of its density: 0.0492843382…
#[test]
fn welch_t_and_df_match_the_hand_computation() {
    let a = [1.0, 2.0, 3.0, 4.0, 5.0];
    let b = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0];
    let test = welch_t(&a, &b).unwrap();
    close(test.t, 2.376_354_103_144_018, 1e-12);
    close(test.df, 6.972_255_729_794_934, 1e-12);
    close(test.p_value, 0.049_284_338_206_729, 1e-9);
    let reverse = welch_t(&b, &a).unwrap();
    close(reverse.t, -test.t, 1e-12);
    close(reverse.p_value, test.p_value, 1e-12);
    // No spread anywhere: undefined.
    assert!(welch_t(&[3.0, 3.0], &[5.0, 5.0, 5.0]).is_none());
    assert!(welch_t(&[3.0], &b).is_none());
}

#[test]
fn bootstrap_is_deterministic_for_a_seed() {
    let a: Vec<f64> = (0..40).map(|i| f64::from(i * 37 % 41)).collect();
    let b: Vec<f64> = a.iter().map(|v| v * 1.5 + 3.0).collect();
    let first = bootstrap_percentile_diffs(&a, &b, 0.05, 200, 42).unwrap();
    let again = bootstrap_percentile_diffs(&a, &b, 0.05, 200, 42).unwrap();
    let other = bootstrap_percentile_diffs(&a, &b, 0.05, 200, 43).unwrap();
    assert_eq!(first, again);
    assert_ne!(first, other);
    // The values for seed 42 (ChaCha8 + rand_distr 0.6's binomial): a change here
    // changes every user's intervals, so it must be deliberate.
    let pinned = [
        (3.743_750_000_000_000_4, 23.006_25),
        (13.598_75, 27.302_5),
        (18.243_125, 25.805),
    ];
    for (interval, (low, high)) in first.iter().zip(pinned) {
        assert_eq!((interval.low, interval.high), (low, high));
    }
    // Samples without spread: every resample gives the same difference.
    let constant = bootstrap_percentile_diffs(&[1.0; 5], &[3.0; 7], 0.05, 50, 1).unwrap();
    assert_eq!(
        constant,
        [Interval {
            low: 2.0,
            high: 2.0
        }; 3]
    );
    assert!(constant[0].excludes_zero());
    assert!(bootstrap_percentile_diffs(&a, &b, 0.05, 0, 42).is_none());
}

// ---- fixture runs ----

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compare")
        .join(name)
}

fn read(name: &str) -> RunArtifacts {
    RunArtifacts::read(&fixture(name)).unwrap()
}

#[test]
fn a_run_reads_its_summary_and_records() {
    let run = read("baseline");
    let ttft = &run.summary.metrics["time_to_first_token"];
    assert_eq!(ttft.unit, "ms");
    assert_eq!(ttft.stat("avg"), Some(100.246_303_550_000_02));
    assert_eq!(ttft.stat("p50"), Some(103.594_818));
    assert_eq!(ttft.stat("p90"), Some(124.898_598_8));
    assert_eq!(ttft.stat("p99"), Some(138.610_880_45));
    assert_eq!(run.summary.metrics["request_throughput"].stat("p50"), None);
    assert!(!run.summary.metrics.contains_key("input_config"));
    let records = run.records.as_ref().unwrap();
    assert_eq!(records["time_to_first_token"].len(), 60);
    // A list metric contributes every element.
    assert_eq!(records["inter_chunk_latency"].len(), 120);
    let mean = records["time_to_first_token"].iter().sum::<f64>() / 60.0;
    close(mean, 100.246_303_55, 1e-9);
}

/// Candidate TTFT is the baseline's distribution × 1.3 (other draws): every TTFT
/// statistic that can be tested is significantly worse, the unchanged inter-token latency
/// is not, and run-level metrics stay untested.
#[test]
fn a_thirty_percent_ttft_shift_is_significant_and_worse() {
    let comparison = compare(
        &read("baseline"),
        &read("ttft_plus_30pct"),
        &CompareOptions::default(),
    );
    assert!(comparison.per_request_data);
    let ttft = comparison.metric("time_to_first_token").unwrap();
    assert_eq!(ttft.direction, Some(Direction::SmallerIsBetter));
    assert_eq!(
        ttft.samples.map(|s| (s.baseline, s.candidate)),
        Some((60, 60))
    );
    assert!(ttft.mann_whitney.unwrap().p_value < 1e-6);
    assert!(ttft.welch.unwrap().t > 5.0);
    let avg = ttft.stat(CompareStat::Avg).unwrap();
    assert_eq!(avg.baseline, 100.246_303_550_000_02);
    assert_eq!(avg.candidate, 127.011_797_016_666_66);
    close(avg.difference, 26.765_493_466_666_64, 1e-9);
    close(avg.percent.unwrap(), 26.699_731_081_173_25, 1e-9);
    for stat in [CompareStat::Avg, CompareStat::P50, CompareStat::P90] {
        let s = ttft.stat(stat).unwrap();
        assert_eq!(
            (s.change, s.significant),
            (Some(Change::Worse), Some(true)),
            "{stat:?}"
        );
    }
    let p50 = ttft.stat(CompareStat::P50).unwrap().interval.unwrap();
    assert!(p50.low > 0.0 && p50.low < 26.5 && p50.high > 26.5);
    // 60 requests are too few to bootstrap a p99 (it needs 500): Mann-Whitney decides.
    let p99 = ttft.stat(CompareStat::P99).unwrap();
    assert_eq!((p99.interval, p99.significant), (None, Some(true)));

    let itl = comparison.metric("inter_token_latency").unwrap();
    assert!(itl.stats.iter().all(|s| s.significant == Some(false)));
    assert!(itl.welch.unwrap().p_value > 0.5);

    let throughput = comparison
        .metric("output_token_throughput_per_user")
        .unwrap();
    assert_eq!(throughput.direction, Some(Direction::LargerIsBetter));
    let rate = comparison.metric("request_throughput").unwrap();
    assert_eq!(rate.samples, None);
    let rate_avg = rate.stat(CompareStat::Avg).unwrap();
    assert_eq!(
        (rate_avg.change, rate_avg.significant),
        (Some(Change::Worse), None)
    );
    // Inter-chunk latency values are not independent samples: untested.
    assert_eq!(
        comparison.metric("inter_chunk_latency").unwrap().samples,
        None
    );
    // Catalogue order: TTFT first, request count last.
    assert_eq!(comparison.metrics[0].tag, "time_to_first_token");
    assert_eq!(comparison.metrics.last().unwrap().tag, "request_count");
}

#[test]
fn metrics_in_other_units_are_not_compared() {
    let baseline = read("baseline");
    let mut candidate = baseline.clone();
    candidate
        .summary
        .metrics
        .get_mut("request_latency")
        .unwrap()
        .unit = "sec".into();
    let comparison = compare(&baseline, &candidate, &CompareOptions::default());
    assert!(comparison.metric("request_latency").is_none());
    assert_eq!(comparison.unit_mismatches, ["request_latency (ms vs sec)"]);
    assert!(comparison.only_in_baseline.is_empty() && comparison.only_in_candidate.is_empty());
}

#[test]
fn identical_runs_show_no_difference() {
    let run = read("baseline");
    let comparison = compare(&run, &run, &CompareOptions::default());
    for metric in &comparison.metrics {
        for s in &metric.stats {
            assert_eq!(s.difference, 0.0, "{} {:?}", metric.tag, s.stat);
            assert_ne!(s.significant, Some(true), "{} {:?}", metric.tag, s.stat);
            assert!(s.change.is_none() || s.change == Some(Change::Same));
        }
        if let Some(mw) = metric.mann_whitney {
            assert_eq!(mw.p_value, 1.0, "{}", metric.tag);
        }
        if let Some(welch) = metric.welch {
            assert_eq!((welch.t, welch.p_value), (0.0, 1.0), "{}", metric.tag);
        }
    }
}

/// Same distributions, other draws: noise, and nothing that matters is significant.
#[test]
fn a_rerun_with_noise_only_is_not_significant() {
    let comparison = compare(
        &read("baseline"),
        &read("rerun"),
        &CompareOptions::default(),
    );
    for tag in [
        "time_to_first_token",
        "request_latency",
        "inter_token_latency",
    ] {
        let metric = comparison.metric(tag).unwrap();
        assert!(metric.mann_whitney.unwrap().p_value > 0.05, "{tag}");
        assert!(
            metric.stats.iter().all(|s| s.significant == Some(false)),
            "{tag}: {:?}",
            metric.stats
        );
    }
}

#[test]
fn gates_fail_only_on_a_significant_regression_beyond_the_limit() {
    let comparison = compare(
        &read("baseline"),
        &read("ttft_plus_30pct"),
        &CompareOptions::default(),
    );
    let gates = parse_gates(
        "time_to_first_token:p50:10 time_to_first_token:p50:30 inter_token_latency:avg:0.01 \
         time_to_first_token:p99:5 request_throughput:avg:1",
    )
    .unwrap();
    let outcomes = comparison.check_gates(&gates);
    let regressed: Vec<bool> = outcomes.iter().map(|o| o.regressed).collect();
    // +25.6 % > 10 %: regressed; 25.6 % < 30 %: held; ITL +0.10 % but not significant;
    // p99 +35.6 %, too few requests for its bootstrap but Mann-Whitney p < 1e-6;
    // throughput −4.4 % with no per-request data, where the percentage alone decides.
    assert_eq!(regressed, [true, false, false, true, true]);
    close(
        outcomes[0].worse_by_percent.unwrap(),
        25.585_909_133_022_454,
        1e-9,
    );
    assert_eq!(outcomes[0].significant, Some(true));
    assert_eq!(outcomes[2].significant, Some(false));
    assert_eq!(outcomes[4].significant, None);
    // (6.697477245372965 − 6.404953881006284) / 6.697477245372965, from the summaries.
    close(
        outcomes[4].worse_by_percent.unwrap(),
        4.367_664_922_919_66,
        1e-9,
    );

    let missing = comparison.check_gates(&parse_gates("goodput:avg:1").unwrap());
    assert!(missing[0].missing() && !missing[0].regressed);
}

#[test]
fn bad_gates_say_why() {
    let err = |text: &str| parse_gates(text).unwrap_err().to_string();
    assert_eq!(
        err("ttft:p99:10"),
        "invalid --fail-on-regression \"ttft:p99:10\": unknown metric tag \"ttft\""
    );
    assert!(err("time_to_first_token:p75:10").contains("unknown statistic \"p75\""));
    assert!(err("time_to_first_token:p99").contains("expected METRIC:STAT:PCT"));
    assert!(err("time_to_first_token:p99:-3").contains("is not a percentage"));
    assert!(err("total_isl:avg:1").contains("no better or worse direction"));
    let gate = &parse_gates("request_throughput:avg:2.5%").unwrap()[0];
    assert_eq!((gate.stat, gate.percent), (CompareStat::Avg, 2.5));
}

#[test]
fn directions_follow_the_catalogue() {
    assert_eq!(
        direction_of("request_latency"),
        Some(Direction::SmallerIsBetter)
    );
    assert_eq!(
        direction_of("request_throughput"),
        Some(Direction::LargerIsBetter)
    );
    assert_eq!(
        direction_of("effective_decode_throughput"),
        Some(Direction::LargerIsBetter)
    );
    assert_eq!(
        direction_of("request_error_rate"),
        Some(Direction::SmallerIsBetter)
    );
    assert_eq!(direction_of("effective_concurrency"), None);
    assert_eq!(direction_of("not_a_metric"), None);
}

// ---- the Python AIPerf's artifacts ----

/// A folder of `../shared/examples`, or `None` (skip) when absent and `CI` is not `true`.
fn example(name: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/examples")
        .join(name);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is missing and CI=true",
        path.display()
    );
    eprintln!("skipping: {} not found", path.display());
    None
}

#[test]
fn python_aiperf_summaries_compare_without_significance() {
    let (Some(streaming), Some(nonstreaming)) = (
        example("streaming-chat-c64-ttft20-itl5"),
        example("nonstreaming-chat-c256"),
    ) else {
        return;
    };
    let baseline = RunArtifacts::read(&streaming).unwrap();
    let candidate = RunArtifacts::read(&nonstreaming).unwrap();
    // Their records are kept as `profile_export.head3.jsonl`: summaries only.
    assert!(baseline.records.is_none() && candidate.records.is_none());
    assert_eq!(
        baseline.summary.metrics["time_to_first_token"].stat("p99"),
        Some(253.563_198_559_999_96)
    );
    assert_eq!(
        baseline.summary.metrics["request_count"].stat("avg"),
        Some(1000.0)
    );
    assert!(!baseline.summary.metrics.contains_key("run_info"));

    let comparison = compare(&baseline, &candidate, &CompareOptions::default());
    assert!(!comparison.per_request_data);
    // TTFT is a streaming metric: only in the baseline; usage fields only in the candidate.
    assert!(comparison.metric("time_to_first_token").is_none());
    assert!(comparison
        .only_in_baseline
        .contains(&"time_to_first_token".to_owned()));
    assert!(comparison
        .only_in_candidate
        .contains(&"usage_prompt_tokens".to_owned()));
    assert!(comparison.unit_mismatches.is_empty());
    let latency = comparison.metric("request_latency").unwrap();
    let p50 = latency.stat(CompareStat::P50).unwrap();
    assert_eq!((p50.baseline, p50.candidate), (715.359_618, 349.806_192));
    assert_eq!((p50.change, p50.significant), (Some(Change::Better), None));
    let p99 = latency.stat(CompareStat::P99).unwrap();
    assert_eq!(
        (p99.baseline, p99.candidate),
        (979.308_856_369_999_6, 19_671.880_343_4)
    );
    assert_eq!(p99.change, Some(Change::Worse));
    // Time-weighted metrics carry p50 but no p1/p5.
    let concurrency = comparison.metric("effective_concurrency").unwrap();
    assert_eq!(concurrency.stats.len(), 4);
    assert_eq!(concurrency.stats[0].change, None);

    let markdown = render::markdown(&comparison, &[]);
    assert!(markdown.contains("Only in the baseline: decode_duration, inter_chunk_latency,"));
    assert!(markdown.contains("compared on their summaries only (no significance tests)"));
    assert!(markdown.contains("| Request Latency (ms) | avg | 732.61 | 961.54 | +228.93 | +31.25 % | — | worse (untested) |"));
}

// ---- errors name the file ----

/// A fresh scratch folder removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("aiperf-compare-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn unreadable_runs_say_which_file_and_line() {
    let missing = fixture("no_such_run");
    let error = RunArtifacts::read(&missing).unwrap_err();
    assert!(matches!(error, ArtifactError::NotADirectory(_)));
    assert_eq!(
        error.to_string(),
        format!(
            "{} is not a directory (expected an aiperf artifact directory)",
            missing.display()
        )
    );

    let scratch = Scratch::new("errors");
    let dir = &scratch.0;
    let error = RunArtifacts::read(dir).unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "{} not found: is this the artifact directory of an aiperf run?",
            dir.join("profile_export_aiperf.json").display()
        )
    );

    std::fs::write(
        dir.join("profile_export_aiperf.json"),
        "{\n  \"request_latency\": {\"unit\": \"ms\", \"avg\": 1.0},\n  oops\n}\n",
    )
    .unwrap();
    let error = RunArtifacts::read(dir).unwrap_err().to_string();
    let summary = dir.join("profile_export_aiperf.json");
    assert!(
        error.starts_with(&format!(
            "{}:3: invalid JSON: key must be a string",
            summary.display()
        )),
        "{error}"
    );

    std::fs::write(&summary, "[1, 2]").unwrap();
    assert!(RunArtifacts::read(dir)
        .unwrap_err()
        .to_string()
        .contains("not an aiperf summary"));

    std::fs::write(
        &summary,
        "{\"request_latency\": {\"unit\": \"ms\", \"avg\": 1.0}}",
    )
    .unwrap();
    let records = dir.join("profile_export.jsonl");
    std::fs::write(
        &records,
        "{\"metrics\": {\"request_latency\": {\"value\": 1.0, \"unit\": \"ms\"}}}\n{\"metrics\": \n",
    )
    .unwrap();
    let error = RunArtifacts::read(dir).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("{}:2: invalid JSON:", records.display())),
        "{error}"
    );
}
