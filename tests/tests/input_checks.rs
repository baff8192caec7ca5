//! Inputs that can never work are configuration errors: `aiperf profile` exits 2 with the
//! reason, naming the flag, before anything is sent (issue 15, defects 11 and 13).
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::process::Output;

use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The last `error: ` line of stderr.
fn error_line(output: &Output) -> String {
    let stderr = stderr(output);
    let line = stderr.lines().rfind(|line| line.starts_with("error: "));
    line.unwrap_or_else(|| panic!("no error line in:\n{stderr}"))
        .to_owned()
}

/// Runs `aiperf profile` against a fresh mock with `extra` (each an argument as is) and
/// returns the output once the process ended, asserting that the mock saw no connection.
async fn refused_before_sending(extra: &[&str]) -> Output {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args("-m mock-model --request-count 2 --isl 8 --osl 2 --no-gpu-telemetry");
    argv.extend([
        "--url".into(),
        server.url(),
        "--artifact-dir".into(),
        dir.path().to_str().unwrap().into(),
    ]);
    argv.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let output = profile(argv).await;
    assert_exit(&output, 2);
    let stats = server.stats();
    assert_eq!(
        (stats.connections_accepted, stats.requests_total),
        (0, 0),
        "the mock was contacted; stderr:\n{}",
        stderr(&output)
    );
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_name_with_a_space_exits_2_before_sending() {
    let output = refused_before_sending(&["-H", "Bad Name:value"]).await;
    assert_eq!(
        error_line(&output),
        "error: invalid --header \"Bad Name\": the name contains ' '; a header name is \
         letters, digits and !#$%&'*+-.^_`|~ only"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_break_in_a_header_value_exits_2_and_the_value_is_not_shown() {
    let output = refused_before_sending(&["-H", "Authorization:Bearer sk-4711\r\nX-Evil: 1"]).await;
    assert_eq!(
        error_line(&output),
        "error: invalid --header \"Authorization\": its value contains a line break (CR or LF)"
    );
    assert!(!stderr(&output).contains("sk-4711"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_server_metrics_url_exits_2_before_sending() {
    let output = refused_before_sending(&["--server-metrics", "ftp://h:21/metrics"]).await;
    assert_eq!(
        error_line(&output),
        "error: invalid --server-metrics \"ftp://h:21/metrics\": the scheme must be http or \
         https, got `ftp`"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_tokenizer_path_exits_2_before_sending() {
    let output = refused_before_sending(&["--tokenizer", "/nonexistent/dir/tokenizer.json"]).await;
    assert_eq!(
        error_line(&output),
        "error: tokenizer file /nonexistent/dir/tokenizer.json does not exist; pass \
         --tokenizer with the path of a tokenizer.json (or a folder holding one), a Hugging \
         Face id like org/name, or `builtin`"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_a_tokenizer_exits_2_before_sending() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokenizer.json");
    std::fs::write(&file, "{\"not\": \"a tokenizer\"}").unwrap();
    let output = refused_before_sending(&["--tokenizer", file.to_str().unwrap()]).await;
    let line = error_line(&output);
    assert!(
        line.starts_with(&format!(
            "error: could not load tokenizer from {}: ",
            file.display()
        )),
        "{line}"
    );
}

/// Flags that are refused while assembling the configuration, with no server at all.
async fn usage_error(flags: &[&str]) -> String {
    let mut argv = args("-m mock-model --request-count 1 --no-gpu-telemetry --no-server-metrics");
    argv.extend(flags.iter().map(|arg| (*arg).to_owned()));
    let output = profile(argv).await;
    assert_exit(&output, 2);
    error_line(&output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_that_cannot_be_sent_to_exit_2_with_the_reason() {
    assert_eq!(
        usage_error(&["--url", "ftp://h:21"]).await,
        "error: invalid --url \"ftp://h:21\": the scheme must be http or https, got `ftp`"
    );
    assert_eq!(
        usage_error(&["--url", ""]).await,
        "error: invalid --url \"\": the URL is empty"
    );
    assert_eq!(
        usage_error(&["-u", "http://127.0.0.1:99999"]).await,
        "error: invalid --url \"http://127.0.0.1:99999\": the port must be a number from 1 \
         to 65535, got `99999`"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_negative_count_is_refused_by_its_own_rule() {
    let line = usage_error(&["--concurrency", "-1"]).await;
    assert_eq!(
        line,
        "error: invalid value '-1' for '--concurrency <CONCURRENCY>': must be at least 1"
    );
    let line = usage_error(&["--random-seed", "-3"]).await;
    assert_eq!(
        line,
        "error: invalid value '-3' for '--random-seed <RANDOM_SEED>': must be 0 or more"
    );
    // A negative rate reaches the configuration's rule.
    let line = usage_error(&["--request-rate", "-5"]).await;
    assert_eq!(line, "error: --request-rate must be greater than 0, got -5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_inputs_that_are_a_json_array_say_what_is_accepted() {
    assert_eq!(
        usage_error(&["--extra-inputs", "[1,2]"]).await,
        "error: --extra-inputs takes a JSON object ({\"key\": value, …}) or comma-separated \
         key:value pairs, got \"[1,2]\": a JSON array is not an object"
    );
}

/// A server that answers every request with a 200 HTML page, as a proxy's error page.
async fn html_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                // Read the head and the body it announces, then answer and close.
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                loop {
                    let Ok(n) = socket.read(&mut buffer).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buffer[..n]);
                    let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let length = text[..head_end]
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .and_then(|value| value.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if request.len() >= head_end + 4 + length {
                            break;
                        }
                    }
                }
                let body = "<html>\n<body>\n  <h1>Gateway   error</h1>\n</body>\n</html>\n";
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_with_status_200_is_reported_by_its_content_type() {
    let url = html_server().await;
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(
        "-m mock-model --request-count 2 --isl 8 --osl 2 --no-gpu-telemetry \
         --no-server-metrics --tokenizer builtin",
    );
    argv.extend([
        "--url".into(),
        url,
        "--artifact-dir".into(),
        dir.path().to_str().unwrap().into(),
    ]);
    let output = profile(argv).await;
    assert_exit(&output, 1);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let errors = summary["error_summary"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["count"], 2);
    assert_eq!(
        errors[0]["error_details"],
        serde_json::json!({
            "code": null,
            "type": "UnexpectedContentTypeError",
            "message": "the server answered with content type text/html, not JSON or an \
                        event stream: <html> <body> <h1>Gateway error</h1> </body> </html>",
        })
    );
}
