//! What is sent on the wire must be sendable: URLs, header names and header values are
//! checked with the configuration, so a bad one is a configuration error before the first
//! request rather than a failure of every request. Header values and API keys are
//! secrets: errors name the header, never its value.

use crate::url::{check_url, redact_credentials};

use super::{ConfigError, EndpointConfig};

/// Why a header cannot be sent. Never holds the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderProblem {
    /// The name is empty.
    #[error("the name is empty")]
    EmptyName,
    /// The name has a character outside the HTTP token set.
    #[error(
        "the name contains {0:?}; a header name is letters, digits and \
         !#$%&'*+-.^_`|~ only"
    )]
    NameCharacter(char),
    /// The value holds a CR or LF (it would end the header).
    #[error("its value contains a line break (CR or LF)")]
    LineBreak,
    /// The value holds a NUL character.
    #[error("its value contains a NUL character")]
    Nul,
    /// The value holds another control character (not a tab).
    #[error("its value contains the control character {0:?}")]
    Control(char),
}

/// The checks of the endpoint's URLs, headers and API key.
pub(super) fn check_endpoint(endpoint: &EndpointConfig) -> Result<(), ConfigError> {
    check_urls("endpoint.urls", &endpoint.urls)?;
    for (name, value) in &endpoint.headers {
        check_header(name, value).map_err(|problem| ConfigError::InvalidHeader {
            field: "endpoint.headers",
            name: name.clone(),
            problem,
        })?;
    }
    if let Some(name) = &endpoint.session_header {
        check_header(name, "").map_err(|problem| ConfigError::InvalidHeader {
            field: "endpoint.session_header",
            name: name.clone(),
            problem,
        })?;
    }
    if let Some(key) = &endpoint.api_key {
        // Sent as a header value (`Authorization: Bearer <key>`).
        check_header_value(key).map_err(|problem| ConfigError::InvalidSecret {
            field: "endpoint.api_key",
            problem,
        })?;
    }
    Ok(())
}

/// Every URL of `urls` can be sent to; the error names `field` and the URL (without
/// credentials).
pub fn check_urls(field: &'static str, urls: &[String]) -> Result<(), ConfigError> {
    for url in urls {
        check_url(url).map_err(|problem| ConfigError::InvalidUrl {
            field,
            url: redact_credentials(url.trim()),
            problem,
        })?;
    }
    Ok(())
}

/// A header `name: value` can be sent: the name is an HTTP token (RFC 9110), the value
/// has no control character but tab.
pub fn check_header(name: &str, value: &str) -> Result<(), HeaderProblem> {
    if name.is_empty() {
        return Err(HeaderProblem::EmptyName);
    }
    if let Some(c) = name.chars().find(|&c| !is_token_char(c)) {
        return Err(HeaderProblem::NameCharacter(c));
    }
    check_header_value(value)
}

fn check_header_value(value: &str) -> Result<(), HeaderProblem> {
    match value
        .chars()
        .find(|&c| (c < ' ' && c != '\t') || c == '\u{7f}')
    {
        None => Ok(()),
        Some('\r' | '\n') => Err(HeaderProblem::LineBreak),
        Some('\0') => Err(HeaderProblem::Nul),
        Some(c) => Err(HeaderProblem::Control(c)),
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use crate::BenchmarkConfig;

    fn error_of(change: impl FnOnce(&mut BenchmarkConfig)) -> String {
        let mut config = BenchmarkConfig::default();
        config.endpoint.models = vec!["m".into()];
        change(&mut config);
        config.validate().unwrap_err().to_string()
    }

    fn with_url(url: &str) -> String {
        error_of(|c| c.endpoint.urls = vec!["http://ok:1".into(), url.into()])
    }

    #[test]
    fn urls_that_cannot_be_sent_to_are_configuration_errors() {
        assert_eq!(
            with_url("ftp://h:21"),
            "invalid endpoint.urls \"ftp://h:21\": the scheme must be http or https, got `ftp`"
        );
        assert_eq!(with_url(""), "invalid endpoint.urls \"\": the URL is empty");
        assert_eq!(
            with_url("http://h:99999"),
            "invalid endpoint.urls \"http://h:99999\": the port must be a number from 1 to \
             65535, got `99999`"
        );
        assert_eq!(
            with_url("http:///v1"),
            "invalid endpoint.urls \"http:///v1\": there is no host"
        );
        assert_eq!(
            with_url("http://my host"),
            "invalid endpoint.urls \"http://my host\": it contains ' ', which a URL cannot hold"
        );
    }

    #[test]
    fn a_password_in_a_bad_url_is_not_quoted() {
        assert_eq!(
            with_url("ftp://me:hunter2@h"),
            "invalid endpoint.urls \"ftp://***@h\": the scheme must be http or https, got `ftp`"
        );
    }

    #[test]
    fn header_names_must_be_tokens_and_values_one_line_and_values_are_never_quoted() {
        let with_header = |name: &str, value: &str| {
            error_of(|c| {
                c.endpoint.headers = vec![
                    ("X-Ok".into(), "fine\tvalue".into()),
                    (name.into(), value.into()),
                ];
            })
        };
        assert_eq!(
            with_header("Bad Name", "v"),
            "invalid endpoint.headers \"Bad Name\": the name contains ' '; a header name is \
             letters, digits and !#$%&'*+-.^_`|~ only"
        );
        assert_eq!(
            with_header("X:Y", "v"),
            "invalid endpoint.headers \"X:Y\": the name contains ':'; a header name is \
             letters, digits and !#$%&'*+-.^_`|~ only"
        );
        assert_eq!(
            with_header("", "v"),
            "invalid endpoint.headers \"\": the name is empty"
        );
        let secret = "s3cr3t";
        for (value, problem) in [
            (
                format!("{secret}\r\nX-Evil: 1"),
                "contains a line break (CR or LF)",
            ),
            (format!("{secret}\n"), "contains a line break (CR or LF)"),
            (format!("{secret}\0"), "contains a NUL character"),
            (
                format!("{secret}\u{7}"),
                "contains the control character '\\u{7}'",
            ),
        ] {
            let message = with_header("Authorization", &value);
            assert_eq!(
                message,
                format!("invalid endpoint.headers \"Authorization\": its value {problem}")
            );
            assert!(!message.contains(secret));
        }
    }

    #[test]
    fn an_api_key_that_cannot_be_a_header_value_is_rejected_without_quoting_it() {
        let message = error_of(|c| c.endpoint.api_key = Some("sk-123\r\n".into()));
        assert_eq!(
            message,
            "invalid endpoint.api_key: its value contains a line break (CR or LF)"
        );
    }
}
