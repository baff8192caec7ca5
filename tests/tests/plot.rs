//! `aiperf plot`, the built binary, on runs the binary made against the in-process mock:
//! every chart file of a single run (PNG size, well-formed SVG), the report holding the
//! run's numbers with nothing fetched from the network, and a two-run comparison.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aiperf_mock_server::{MockConfig, MockServer};
use common::{aiperf_binary, args, assert_exit, profile, read_json, read_jsonl, stat};

/// The charts of a streaming run with timeslices, in report order.
const SINGLE_RUN_CHARTS: [&str; 11] = [
    "ttft_distribution",
    "itl_distribution",
    "latency_distribution",
    "ttft_vs_isl",
    "ttft_over_time",
    "latency_over_time",
    "itl_by_position",
    "isl_vs_osl",
    "throughput_over_time",
    "timeslices_ttft",
    "timeslices_itl",
];

const COMPARISON_CHARTS: [&str; 6] = [
    "pareto_throughput_vs_latency",
    "pareto_throughput_per_gpu_vs_interactivity",
    "ttft_by_run",
    "itl_by_run",
    "latency_by_run",
    "throughput_by_run",
];

/// A streaming run against `server` with varied lengths and 0.2 s time slices.
async fn fixture_run(server: &MockServer, dir: &Path, concurrency: u32) {
    let mut argv = args(&format!(
        "-m mock-model --url {url} --streaming --concurrency {concurrency} --request-count 40 \
         --isl 64 --isl-stddev 16 --osl 24 --osl-stddev 8 --slice-duration 0.2 --random-seed 3 \
         --no-server-metrics --no-gpu-telemetry",
        url = server.url()
    ));
    argv.extend(["--artifact-dir".into(), dir.to_str().unwrap().into()]);
    assert_exit(&profile(argv).await, 0);
}

fn plot(arguments: &[&str]) -> Output {
    Command::new(aiperf_binary())
        .arg("plot")
        .args(arguments)
        .output()
        .expect("aiperf runs")
}

/// Width and height from a PNG's IHDR chunk, which follows the 8-byte signature.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is a PNG",
        path.display()
    );
    assert_eq!(&bytes[12..16], b"IHDR");
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

/// Checks that `text` is one well-formed XML element tree rooted at `<svg>`: every tag
/// closes in order (a tiny parser: enough for plotters' output, no CDATA or comments).
fn assert_well_formed_svg(text: &str, name: &str) {
    let body = text.trim_start();
    let body = match body.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").unwrap().1.trim_start(),
        None => body,
    };
    assert!(body.starts_with("<svg"), "{name} starts with <svg");
    let mut open: Vec<&str> = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find('<') {
        let end = rest[start..]
            .find('>')
            .unwrap_or_else(|| panic!("{name}: unclosed tag"))
            + start;
        let tag = &rest[start + 1..end];
        if let Some(closing) = tag.strip_prefix('/') {
            assert_eq!(
                open.pop(),
                Some(closing.trim()),
                "{name}: mismatched </{closing}>"
            );
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().unwrap());
        }
        rest = &rest[end + 1..];
        if open.is_empty() {
            assert!(rest.trim().is_empty(), "{name}: content after </svg>");
        }
    }
    assert!(open.is_empty(), "{name}: unclosed {open:?}");
}

/// No reference a browser would fetch: the SVG namespace is a name, not a download.
fn assert_self_contained(report: &str) {
    let without_namespace = report.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !without_namespace.contains("http://"),
        "report references http://"
    );
    assert!(
        !without_namespace.contains("https://"),
        "report references https://"
    );
    assert!(!report.contains("<script src"), "report loads a script");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_gets_every_chart_as_png_and_svg_and_a_report_with_its_numbers() {
    let server = MockServer::start(MockConfig::with_timing(20.0, 2.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    fixture_run(&server, &run, 4).await;

    let output = plot(&[run.to_str().unwrap()]);
    assert_exit(&output, 0);
    let plots = run.join("plots");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("11 charts (PNG and SVG) in {}", plots.display())),
        "{stdout}"
    );
    for name in SINGLE_RUN_CHARTS {
        assert_eq!(
            png_size(&plots.join(format!("{name}.png"))),
            (1200, 700),
            "{name}"
        );
        let svg = std::fs::read_to_string(plots.join(format!("{name}.svg"))).unwrap();
        assert_well_formed_svg(&svg, name);
    }

    let report = std::fs::read_to_string(plots.join("report.html")).unwrap();
    assert_self_contained(&report);
    assert_eq!(report.matches("<figure id=").count(), 11);
    assert_eq!(report.matches("<svg ").count(), 11);
    // The summary table shows the run's request count.
    let summary = read_json(&run.join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 40.0);
    assert!(report.contains("<td>request_count</td><td>requests</td><td>40</td>"));
    // Every request's (ISL, TTFT) is in the data of the TTFT-vs-ISL chart, exactly.
    for record in read_jsonl(&run.join("profile_export.jsonl")) {
        let isl = record["metrics"]["input_sequence_length"]["value"]
            .as_f64()
            .unwrap();
        let ttft = &record["metrics"]["time_to_first_token"]["value"];
        let point = format!("[{isl:?},{ttft}]");
        assert!(report.contains(&point), "report lacks {point}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_in_subfolders_are_compared_in_natural_order() {
    let server = MockServer::start(MockConfig::with_timing(20.0, 2.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("sweep");
    for concurrency in [8, 2] {
        fixture_run(
            &server,
            &sweep.join(format!("concurrency_{concurrency}")),
            concurrency,
        )
        .await;
    }
    let out: PathBuf = dir.path().join("charts");

    let output = plot(&[
        sweep.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--theme",
        "dark",
    ]);
    assert_exit(&output, 0);
    assert!(String::from_utf8_lossy(&output.stdout)
        .starts_with("Compared 2 runs:\n  concurrency_2\n  concurrency_8\n"));
    for name in COMPARISON_CHARTS {
        assert_eq!(png_size(&out.join(format!("{name}.png"))).0, 1200, "{name}");
        assert_well_formed_svg(
            &std::fs::read_to_string(out.join(format!("{name}.svg"))).unwrap(),
            name,
        );
    }
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_self_contained(&report);
    assert!(report.contains("background: #181a1f"), "dark theme");
    // The Pareto chart's data holds each run's (latency avg, throughput avg) exactly.
    for concurrency in [2, 8] {
        let summary = read_json(&sweep.join(format!(
            "concurrency_{concurrency}/profile_export_aiperf.json"
        )));
        let point = format!(
            "[{},{}]",
            summary["request_latency"]["avg"], summary["output_token_throughput"]["avg"]
        );
        assert!(report.contains(&point), "report lacks {point}");
        assert!(report.contains(&format!("<td>concurrency_{concurrency}</td>")));
    }
}

#[test]
fn a_folder_without_runs_is_an_error_that_says_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let output = plot(&[dir.path().to_str().unwrap()]);
    assert_exit(&output, 1);
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: no aiperf run found in {}: expected profile_export_aiperf.json there or in \
             its subfolders (a run's artifact directory, a sweep or a multi-run folder)\n",
            dir.path().display()
        )
    );
    assert!(!dir.path().join("plots").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_with_gpu_telemetry_is_compared_per_gpu() {
    let server = MockServer::start(MockConfig::with_timing(10.0, 2.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("sweep");
    // The mock's first fake DCGM exporter serves 2 GPUs.
    let mut argv = args(&format!(
        "-m mock-model --url {url} --streaming --concurrency 2,8 --request-count 60 \
         --isl 32 --osl 24 --random-seed 3 --no-server-metrics \
         --gpu-telemetry {url}/dcgm1/metrics",
        url = server.url()
    ));
    argv.extend(["--artifact-dir".into(), sweep.to_str().unwrap().into()]);
    assert_exit(&profile(argv).await, 0);

    let output = plot(&[sweep.to_str().unwrap()]);
    assert_exit(&output, 0);
    // The sweep's own summary folder is not a run.
    assert!(String::from_utf8_lossy(&output.stdout)
        .starts_with("Compared 2 runs:\n  concurrency_2\n  concurrency_8\n"));
    let out = sweep.join("plots");
    let svg = std::fs::read_to_string(out.join("pareto_throughput_per_gpu_vs_interactivity.svg"))
        .unwrap();
    assert!(
        svg.contains("output token throughput per GPU (tokens/s/GPU)"),
        "the y axis is per GPU"
    );
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    for concurrency in [2, 8] {
        let summary = read_json(&sweep.join(format!(
            "concurrency_{concurrency}/profile_export_aiperf.json"
        )));
        let per_user = &summary["output_token_throughput_per_user"]["avg"];
        let per_gpu = summary["output_token_throughput"]["avg"].as_f64().unwrap() / 2.0;
        let point = format!("[{per_user},{}]", serde_json::json!(per_gpu));
        assert!(report.contains(&point), "report lacks {point}");
    }

    // One point on its own gets the GPU charts.
    let single = sweep.join("concurrency_8");
    assert_exit(&plot(&[single.to_str().unwrap()]), 0);
    for name in ["gpu_utilization_over_time", "gpu_power_over_time"] {
        assert_eq!(
            png_size(&single.join(format!("plots/{name}.png"))).0,
            1200,
            "{name}"
        );
    }
}

fn analyze(arguments: &[&str]) -> Output {
    Command::new(aiperf_binary())
        .arg("analyze")
        .args(arguments)
        .output()
        .expect("aiperf runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_draws_swim_lanes_and_turn_messages_and_skips_a_run_without_records() {
    let server = MockServer::start(MockConfig::with_timing(5.0, 1.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (lanes, summary_only) = (dir.path().join("lanes"), dir.path().join("summary"));
    for (run, level) in [(&lanes, "raw"), (&summary_only, "summary")] {
        let mut argv = args(&format!(
            "-m mock-model --url {} --concurrency 2 --request-count 8 \
             --session-turns-mean 2 --random-seed 3 --export-level {level} \
             --no-server-metrics --no-gpu-telemetry",
            server.url()
        ));
        argv.extend(["--artifact-dir".into(), run.to_str().unwrap().into()]);
        assert_exit(&profile(argv).await, 0);
    }

    let drawn = analyze(&["swim-lane", lanes.to_str().unwrap(), "-c", "2"]);
    assert_exit(&drawn, 0);
    let png = lanes.join("swim_lane.png");
    assert_eq!(
        String::from_utf8_lossy(&drawn.stdout),
        format!("saved {}\n", png.display())
    );
    // aiperf_plot::swim_lane::SIZE.
    assert_eq!(png_size(&png), (1400, 900));

    let custom = dir.path().join("custom.png");
    let with_viewer = analyze(&[
        "swim-lane",
        lanes.to_str().unwrap(),
        "--html",
        "-o",
        custom.to_str().unwrap(),
    ]);
    assert_exit(&with_viewer, 0);
    let viewer = dir.path().join("custom.html");
    assert_eq!(
        String::from_utf8_lossy(&with_viewer.stdout),
        format!("saved {}\nsaved {}\n", custom.display(), viewer.display())
    );
    let viewer = std::fs::read_to_string(&viewer).unwrap();
    // 8 requests in 4 sessions of 2 turns, each with its stamps and metrics.
    let start = viewer.find(r#"id="data">"#).unwrap() + r#"id="data">"#.len();
    let end = start + viewer[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&viewer[start..end]).unwrap();
    assert_eq!(data["requests"], 8);
    assert_eq!(data["lanes"].as_array().unwrap().len(), 4);
    let first = &data["lanes"][0]["r"][0];
    // Not streamed: no TTFT; latency and input length are there.
    assert!(first[3].is_null(), "{first}");
    assert!(
        first[4].as_f64().unwrap() > 0.0 && first[5].as_f64().unwrap() > 0.0,
        "{first}"
    );
    assert!(!viewer.contains("http:") && !viewer.contains("https:"));

    let mixed = analyze(&[
        "swim-lane",
        summary_only.to_str().unwrap(),
        lanes.to_str().unwrap(),
    ]);
    assert_exit(&mixed, 1);
    assert_eq!(
        String::from_utf8_lossy(&mixed.stdout),
        format!("saved {}\n", png.display())
    );
    let stderr = String::from_utf8_lossy(&mixed.stderr);
    assert!(
        stderr.starts_with(&format!("skip {}: ", summary_only.display()))
            && stderr.contains("has no timed records"),
        "{stderr}"
    );

    let page = analyze(&["turn-messages", lanes.to_str().unwrap(), "-n", "3"]);
    assert_exit(&page, 0);
    let html_path = lanes.join("turn_messages.html");
    let stdout = String::from_utf8_lossy(&page.stdout);
    assert!(
        stdout.starts_with(&format!("saved {} (", html_path.display()))
            && stdout.ends_with(" KB)\n"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    // 8 requests in sessions of 2 turns: 4 conversations, 3 shown, each with 2 turns.
    assert!(html.contains("<p>4 conversations, 8 requests; showing 3 (earliest first).</p>"));
    assert_eq!(html.matches("· 2 turn(s)</summary>").count(), 3, "{html}");
    assert_eq!(
        html.matches("<div class=\"role\">user</div>").count(),
        3 * (1 + 2)
    );
    assert!(!html.contains("http") && !html.contains("<script"));
    let no_raw = analyze(&["turn-messages", summary_only.to_str().unwrap()]);
    assert_exit(&no_raw, 1);
    assert!(String::from_utf8_lossy(&no_raw.stderr).contains("--export-level raw"));

    let two_outs = analyze(&[
        "swim-lane",
        lanes.to_str().unwrap(),
        summary_only.to_str().unwrap(),
        "-o",
        "x.png",
    ]);
    assert_exit(&two_outs, 2);
}
