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
/// assert_eq!(with_default_scheme("  "), "");
/// ```
///
/// An empty `url` stays empty, so that [`check_url`] reports it as empty rather than as
/// `http://` without a host.
pub fn with_default_scheme(url: &str) -> String {
    let url = url.trim();
    if url.is_empty() || url.contains("://") {
        url.to_owned()
    } else {
        format!("http://{url}")
    }
}

/// Why a URL cannot be sent to. The variants never quote the URL: the caller does, with
/// [`redact_credentials`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    /// Nothing but whitespace.
    #[error("the URL is empty")]
    Empty,
    /// A character no URL holds (whitespace or a control character).
    #[error("it contains {0:?}, which a URL cannot hold")]
    Character(char),
    /// A scheme other than `http` or `https`.
    #[error("the scheme must be http or https, got `{0}`")]
    Scheme(String),
    /// No host between the scheme and the path.
    #[error("there is no host")]
    NoHost,
    /// A bracketed IPv6 host without its closing bracket, or text after it.
    #[error("the IPv6 host must be written `[address]` or `[address]:port`")]
    Ipv6Host,
    /// A port that is not a number from 1 to 65535 (what follows the host's `:`).
    #[error("the port must be a number from 1 to 65535, got `{0}`")]
    Port(String),
}

/// Checks that `url` (read as [`with_default_scheme`] reads it) can be sent to: not
/// empty, no whitespace or control character, an `http` or `https` scheme, a host, and a
/// port from 1 to 65535 when one is given.
///
/// ```
/// use aiperf_core::url::{check_url, UrlProblem};
///
/// assert_eq!(check_url("localhost:8000"), Ok(()));
/// assert_eq!(check_url("https://u:pw@[::1]:443/v1?x=1"), Ok(()));
/// assert_eq!(check_url("ftp://h"), Err(UrlProblem::Scheme("ftp".into())));
/// assert_eq!(check_url("http://h:99999"), Err(UrlProblem::Port("99999".into())));
/// ```
pub fn check_url(url: &str) -> Result<(), UrlProblem> {
    let url = url.trim();
    if url.is_empty() {
        return Err(UrlProblem::Empty);
    }
    if let Some(c) = url.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlProblem::Character(c));
    }
    let full = with_default_scheme(url);
    let (scheme, rest) = full.split_once("://").unwrap_or(("http", &full));
    if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
        return Err(UrlProblem::Scheme(scheme.to_owned()));
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_and_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, after)| after);
    let (host, port) = match host_and_port.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) = bracketed.split_once(']').ok_or(UrlProblem::Ipv6Host)?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or(UrlProblem::Ipv6Host)?),
            };
            (host, port)
        }
        None => match host_and_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_and_port, None),
        },
    };
    if host.is_empty() {
        return Err(UrlProblem::NoHost);
    }
    if let Some(port) = port {
        let in_range = port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| (1..=65_535).contains(&p));
        if !in_range {
            return Err(UrlProblem::Port(port.to_owned()));
        }
    }
    Ok(())
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
    use super::{build_url, check_url, UrlProblem};

    #[test]
    fn urls_that_cannot_be_sent_to_are_rejected_with_the_reason() {
        for good in [
            "http://localhost:8000",
            "HTTPS://h/v1/",
            "localhost:8000",
            "mock",
            "http://u:p@h:1/x?y=z#f",
            "http://[::1]:65535",
            "http://[::1]",
            "http://h/a:b@c",
        ] {
            assert_eq!(check_url(good), Ok(()), "{good}");
        }
        let cases = [
            ("", UrlProblem::Empty),
            ("  ", UrlProblem::Empty),
            ("ftp://h", UrlProblem::Scheme("ftp".into())),
            ("http://", UrlProblem::NoHost),
            ("http:///v1", UrlProblem::NoHost),
            ("http://u:p@:80", UrlProblem::NoHost),
            ("http://h:99999", UrlProblem::Port("99999".into())),
            ("h:0", UrlProblem::Port("0".into())),
            ("http://h:", UrlProblem::Port(String::new())),
            ("http://h:+80", UrlProblem::Port("+80".into())),
            ("http://h:8o", UrlProblem::Port("8o".into())),
            ("http://[::1", UrlProblem::Ipv6Host),
            ("http://[::1]x", UrlProblem::Ipv6Host),
            ("http://my host", UrlProblem::Character(' ')),
            ("http://h/a\r\nb", UrlProblem::Character('\r')),
        ];
        for (url, problem) in cases {
            assert_eq!(check_url(url), Err(problem), "{url:?}");
        }
        assert_eq!(
            UrlProblem::Port("99999".into()).to_string(),
            "the port must be a number from 1 to 65535, got `99999`"
        );
    }

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
