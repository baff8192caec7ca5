//! Reading `multipart/form-data` request bodies (RFC 7578): enough for the upload routes
//! (`/v1/audio/transcriptions`, `/v1/images/edits`), which need each part's name, file
//! name and bytes.

use crate::routes::ApiError;

/// One part of a form.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct FormPart<'a> {
    /// The `name` of its `Content-Disposition`.
    pub name: String,
    /// The `filename`, for a file.
    pub filename: Option<String>,
    /// Its bytes.
    pub data: &'a [u8],
}

impl FormPart<'_> {
    /// The part as text (lossy).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(self.data).into_owned()
    }
}

/// The parts of `body`, sent with `content_type` (which names the boundary).
pub(crate) fn parse_form<'a>(
    content_type: Option<&str>,
    body: &'a [u8],
) -> Result<Vec<FormPart<'a>>, ApiError> {
    let boundary = content_type
        .filter(|ct| {
            ct.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
        .and_then(|ct| {
            ct.split(';')
                .filter_map(|param| param.trim().split_once('='))
                .find(|(key, _)| key.eq_ignore_ascii_case("boundary"))
                .map(|(_, value)| value.trim_matches('"').to_owned())
        })
        .ok_or_else(|| {
            ApiError::bad_request("expected a multipart/form-data body with a boundary")
        })?;
    let delimiter = format!("--{boundary}");
    let malformed = || ApiError::bad_request("malformed multipart/form-data body");
    let mut rest = body
        .strip_prefix(delimiter.as_bytes())
        .ok_or_else(malformed)?;
    let next_delimiter = format!("\r\n{delimiter}");
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        rest = rest.strip_prefix(b"\r\n").ok_or_else(malformed)?;
        let head_end = find(rest, b"\r\n\r\n").ok_or_else(malformed)?;
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        rest = &rest[head_end + 4..];
        let data_end = find(rest, next_delimiter.as_bytes()).ok_or_else(malformed)?;
        let (name, filename) = disposition(&head).ok_or_else(malformed)?;
        parts.push(FormPart {
            name,
            filename,
            data: &rest[..data_end],
        });
        rest = &rest[data_end + next_delimiter.len()..];
    }
}

/// The `name` and `filename` of a part's `Content-Disposition: form-data` header.
fn disposition(head: &str) -> Option<(String, Option<String>)> {
    let line = head.lines().find(|line| {
        line.to_ascii_lowercase()
            .starts_with("content-disposition:")
    })?;
    let param = |key: &str| {
        line.split(';').skip(1).find_map(|param| {
            let (k, v) = param.trim().split_once('=')?;
            k.eq_ignore_ascii_case(key)
                .then(|| v.trim_matches('"').to_owned())
        })
    };
    Some((param("name")?, param("filename")))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/form-data; boundary=XyZ";

    #[test]
    fn fields_and_files_are_read() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n\
Content-Type: audio/wav\r\n\r\nRI\r\nFF\r\n--XyZ--\r\n";
        let parts = parse_form(Some(CT), body).unwrap();
        assert_eq!(
            parts,
            [
                FormPart {
                    name: "model".into(),
                    filename: None,
                    data: b"m"
                },
                FormPart {
                    name: "file".into(),
                    filename: Some("audio.wav".into()),
                    data: b"RI\r\nFF"
                },
            ]
        );
    }

    #[test]
    fn json_or_a_broken_form_is_refused() {
        let error = parse_form(Some("application/json"), b"{}").unwrap_err();
        assert_eq!(
            error.message,
            "expected a multipart/form-data body with a boundary"
        );
        let error = parse_form(
            Some(CT),
            b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end",
        )
        .unwrap_err();
        assert_eq!(error.message, "malformed multipart/form-data body");
    }
}
