//! Secrets never reach an artifact, the log or the console: a password in a URL is one,
//! like an API key.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, profile};

/// Every file below `dir`, as text (binary files lossily).
fn every_file(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(every_file(&path));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            files.push((path, text));
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_in_a_url_is_never_written() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let host = server.url().replace("http://", "");
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(
        "-m mock-model --request-count 4 --isl 16 --osl 4 --no-gpu-telemetry \
         --export-level raw -v",
    );
    argv.extend([
        "--url".into(),
        format!("http://bench:url-pw-4711@{host}"),
        format!("--server-metrics=http://scrape:metrics-pw-0815@{host}/metrics"),
        "--artifact-dir".into(),
        dir.path().to_str().unwrap().into(),
    ]);
    let output = profile(argv).await;
    let console = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let files = every_file(dir.path());
    assert!(
        files
            .iter()
            .any(|(path, _)| path.ends_with("profile_export_aiperf.json")),
        "the run wrote its summary: {console}"
    );
    for secret in ["url-pw-4711", "metrics-pw-0815"] {
        assert!(
            !console.contains(secret),
            "{secret} on the console:\n{console}"
        );
        for (path, text) in &files {
            assert!(!text.contains(secret), "{secret} in {}", path.display());
        }
    }
    // The URLs are still there, without their credentials.
    let summary = std::fs::read_to_string(dir.path().join("profile_export_aiperf.json")).unwrap();
    assert!(summary.contains(&format!("http://***@{host}")), "{summary}");
}
