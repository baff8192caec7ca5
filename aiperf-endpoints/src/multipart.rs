//! `multipart/form-data` bodies (RFC 7578) for the formats that send forms
//! (`audio_transcription`, `image_edit`, `video_generation`).
//!
//! A format builds its payload as a JSON object, as the Python AIPerf 0.13 does: a file
//! is `{"b64_data": <base64>, "filename": …, "content_type": …}` ([`file_field`]), any
//! other field a plain value. [`form_request`] turns that object into the form sent on
//! the wire and keeps the object as the request's
//! [`json_view`](aiperf_core::BuiltRequest::json_view), which `inputs.json` and the raw
//! export record: a form's binary parts would be unreadable there.

use std::sync::atomic::{AtomicBool, Ordering};

use aiperf_core::BuiltRequest;
use base64::Engine;
use serde_json::{json, Map, Value};

/// The form boundary. Fixed, so the same payload is the same bytes (payload snapshots,
/// reproducible runs); lengthened in the rare case a part contains it.
pub(crate) const BOUNDARY: &str = "aiperf-form-boundary-5f0c2e7a";

/// A file field of a payload: the bytes as base64, the name and type the server sees.
pub(crate) fn file_field(b64_data: &str, filename: &str, content_type: &str) -> Value {
    json!({"b64_data": b64_data, "filename": filename, "content_type": content_type})
}

/// The form for `payload`, one part per field in order: a [`file_field`] becomes a file
/// part with its bytes decoded, a string is sent as it is, `true`/`false` and numbers as
/// their JSON text, other arrays and objects as compact JSON; `null` fields are left out.
/// A file whose `b64_data` is not base64 is an error naming the field.
pub(crate) fn form_request(payload: Map<String, Value>) -> Result<BuiltRequest, String> {
    let parts = payload
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(name, value)| Part::of(name, value))
        .collect::<Result<Vec<_>, _>>()?;
    let boundary = boundary_for(&parts);
    let mut body = Vec::with_capacity(parts.iter().map(|p| p.data.len() + 160).sum());
    for part in &parts {
        part.write(&mut body, &boundary);
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok(BuiltRequest {
        body: body.into(),
        headers: vec![
            (
                "Content-Type".into(),
                format!("multipart/form-data; boundary={boundary}"),
            ),
            ("Accept".into(), "application/json".into()),
        ],
        json_view: Some(Value::Object(payload).to_string().into()),
    })
}

/// Merges `extra` over `payload` like [`crate::payload::merge`], except for the `reserved`
/// fields the format fills itself (the uploaded file, the prompt), which are dropped with
/// one warning per endpoint value (`warned`), as the Python AIPerf drops them.
pub(crate) fn merge_unreserved(
    payload: &mut Map<String, Value>,
    extra: &Map<String, Value>,
    reserved: &[&str],
    endpoint: &'static str,
    warned: &AtomicBool,
) {
    for (key, value) in extra {
        if reserved.contains(&key.as_str()) {
            if !warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    endpoint,
                    field = key.as_str(),
                    "the {endpoint} endpoint fills the form field {key:?} itself; the extra \
                     input of that name is ignored"
                );
            }
            continue;
        }
        payload.insert(key.clone(), value.clone());
    }
}

/// One part of a form.
struct Part {
    name: String,
    /// The file name and content type of a file part.
    file: Option<(String, String)>,
    data: Vec<u8>,
}

impl Part {
    fn of(name: &str, value: &Value) -> Result<Self, String> {
        let (file, data) = match value {
            Value::Object(fields) if fields.get("b64_data").is_some_and(Value::is_string) => {
                let b64 = fields["b64_data"].as_str().unwrap_or_default();
                let data = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|error| format!("the form field {name:?} is not base64: {error}"))?;
                let text = |key: &str, default: &str| {
                    fields
                        .get(key)
                        .and_then(Value::as_str)
                        .filter(|text| !text.is_empty())
                        .unwrap_or(default)
                        .to_owned()
                };
                let file = (
                    text("filename", name),
                    text("content_type", "application/octet-stream"),
                );
                (Some(file), data)
            }
            Value::String(text) => (None, text.clone().into_bytes()),
            other => (None, other.to_string().into_bytes()),
        };
        Ok(Self {
            name: name.to_owned(),
            file,
            data,
        })
    }

    fn write(&self, out: &mut Vec<u8>, boundary: &str) {
        let mut head = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"",
            quoted(&self.name)
        );
        if let Some((filename, content_type)) = &self.file {
            head.push_str(&format!(
                "; filename=\"{}\"\r\nContent-Type: {content_type}",
                quoted(filename)
            ));
        }
        head.push_str("\r\n\r\n");
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(&self.data);
        out.extend_from_slice(b"\r\n");
    }
}

/// A name or file name inside the quotes of `Content-Disposition`, escaped as browsers do
/// (HTML's form encoding): `"` as `%22`, CR as `%0D`, LF as `%0A`.
fn quoted(text: &str) -> String {
    text.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// [`BOUNDARY`], with a counter appended while some part contains it.
fn boundary_for(parts: &[Part]) -> String {
    let mut boundary = BOUNDARY.to_owned();
    let mut attempt = 0;
    // Names cannot end a part: their line breaks are escaped.
    while parts
        .iter()
        .any(|part| memchr::memmem::find(&part.data, boundary.as_bytes()).is_some())
    {
        attempt += 1;
        boundary = format!("{BOUNDARY}-{attempt}");
    }
    boundary
}

#[cfg(test)]
mod tests;
