//! The one URL normalisation every part applies to a user's URL.

/// `url` trimmed, with `http://` prepended when it has no scheme, as the Python AIPerf
/// reads `--url`, `--server-metrics` and `--gpu-telemetry` values.
///
/// ```
/// use aiperf_core::url::with_default_scheme;
///
/// assert_eq!(with_default_scheme(" localhost:8000 "), "http://localhost:8000");
/// assert_eq!(with_default_scheme("https://h/v1"), "https://h/v1");
/// ```
pub fn with_default_scheme(url: &str) -> String {
    let url = url.trim();
    if url.contains("://") {
        url.to_owned()
    } else {
        format!("http://{url}")
    }
}
