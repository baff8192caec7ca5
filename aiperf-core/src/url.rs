//! The one URL normalisation every part applies to a user's URL, and the request URL
//! built from a base URL and an endpoint path.

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

/// `url` with any credentials (`user:password@`) replaced by `***@`, for every place a URL
/// is written or logged: a password in a URL is a secret like an API key.
///
/// ```
/// use aiperf_core::url::redact_credentials;
///
/// assert_eq!(redact_credentials("http://u:pw@h:8000/v1"), "http://***@h:8000/v1");
/// assert_eq!(redact_credentials("h:8000/a@b"), "h:8000/a@b");
/// ```
pub fn redact_credentials(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let host_and_path = &rest[at + 1..];
    match scheme {
        Some(scheme) => format!("{scheme}://***@{host_and_path}"),
        None => format!("***@{host_and_path}"),
    }
}

/// Joins a base URL and an endpoint path the way the Python AIPerf does.
///
/// - `http://` is prepended when `base` has no scheme;
/// - trailing `/` of the base path are removed;
/// - `path_override` (e.g. `--endpoint`) replaces `default_path`; an empty override appends
///   nothing;
/// - nothing is appended when the base path already ends with the sub-path, and a
///   duplicate `v1/` is dropped when the base ends with `/v1`;
/// - the base's query string and fragment are kept at the end.
///
/// ```
/// use aiperf_core::url::build_url;
///
/// let chat = "/v1/chat/completions";
/// assert_eq!(build_url("localhost:8000", None, chat), "http://localhost:8000/v1/chat/completions");
/// assert_eq!(build_url("http://h:8000/v1/", None, chat), "http://h:8000/v1/chat/completions");
/// assert_eq!(build_url("https://h/x?k=1", Some("generate"), chat), "https://h/x/generate?k=1");
/// ```
pub fn build_url(base: &str, path_override: Option<&str>, default_path: &str) -> String {
    let base = with_default_scheme(base);
    let (main, suffix) = base.split_at(base.find(['?', '#']).unwrap_or(base.len()));
    let authority_start = main.find("://").map_or(0, |i| i + 3);
    let path_start = main[authority_start..]
        .find('/')
        .map_or(main.len(), |i| authority_start + i);
    let (origin, path) = main.split_at(path_start);
    let path = path.trim_end_matches('/');
    let sub = path_override
        .unwrap_or(default_path)
        .trim_start_matches('/');
    let path = if sub.is_empty() || path.ends_with(&format!("/{sub}")) {
        path.to_owned()
    } else if let Some(rest) = sub.strip_prefix("v1/").filter(|_| path.ends_with("/v1")) {
        format!("{path}/{rest}")
    } else {
        format!("{path}/{sub}")
    };
    format!("{origin}{path}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::build_url;

    const CHAT: &str = "/v1/chat/completions";

    #[test]
    fn scheme_is_added_when_missing() {
        assert_eq!(
            build_url("localhost:8000", None, CHAT),
            "http://localhost:8000/v1/chat/completions"
        );
        assert_eq!(
            build_url(" h ", None, "v1/completions"),
            "http://h/v1/completions"
        );
    }

    #[test]
    fn trailing_slashes_are_removed_before_joining() {
        assert_eq!(
            build_url("http://h:8000//", None, CHAT),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(
            build_url("https://h/api/", None, CHAT),
            "https://h/api/v1/chat/completions"
        );
    }

    #[test]
    fn a_base_ending_in_v1_does_not_get_a_second_v1() {
        assert_eq!(
            build_url("http://h:8000/v1", None, CHAT),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(
            build_url("http://h/x/v1/", None, "/v1/completions"),
            "http://h/x/v1/completions"
        );
    }

    #[test]
    fn a_base_that_already_ends_with_the_path_is_kept() {
        let full = "http://h:8000/v1/chat/completions";
        assert_eq!(build_url(full, None, CHAT), full);
        assert_eq!(
            build_url("http://h/v1/chat/completions/", None, CHAT),
            full.replace(":8000", "")
        );
        // Only whole path segments match.
        assert_eq!(
            build_url("http://h/xv1/chat/completions", None, CHAT),
            "http://h/xv1/chat/completions/v1/chat/completions"
        );
    }

    #[test]
    fn the_override_replaces_the_default_and_empty_appends_nothing() {
        assert_eq!(
            build_url("http://h", Some("/generate"), CHAT),
            "http://h/generate"
        );
        assert_eq!(
            build_url("http://h", Some("v1/custom"), CHAT),
            "http://h/v1/custom"
        );
        assert_eq!(
            build_url("http://h/v1", Some("v1/custom"), CHAT),
            "http://h/v1/custom"
        );
        assert_eq!(build_url("http://h/base/", Some(""), CHAT), "http://h/base");
    }

    #[test]
    fn query_and_fragment_stay_at_the_end() {
        assert_eq!(
            build_url("http://h:1/v1?api-version=2&x=y", None, CHAT),
            "http://h:1/v1/chat/completions?api-version=2&x=y"
        );
        assert_eq!(
            build_url("h/#frag", None, CHAT),
            "http://h/v1/chat/completions#frag"
        );
        assert_eq!(
            build_url("http://h?q=/v1/", None, CHAT),
            "http://h/v1/chat/completions?q=/v1/"
        );
    }
}
