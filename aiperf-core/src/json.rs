//! JSON strings written straight into a byte buffer, for the request bodies and the
//! per-record exports that write their JSON by hand.
//!
//! serde_json escapes a string byte by byte through a lookup table: ~0.5 ns a byte, so
//! a 600-byte prompt cost ~0.3 µs of the sending thread per request. Most strings a
//! benchmark writes (prompts, ids, model names) need no escaping at all; checking that
//! in one pass the compiler vectorises and then copying is ~8× faster, and strings that
//! do need escaping still go through serde_json, so the bytes are always serde_json's.
//!
//! ```
//! let mut out = Vec::new();
//! aiperf_core::json::write_str(&mut out, "plain text");
//! out.push(b',');
//! aiperf_core::json::write_str(&mut out, "a \"quoted\"\nline");
//! assert_eq!(out, br#""plain text","a \"quoted\"\nline""#);
//! ```

/// Appends `text` as a JSON string (quotes included), byte for byte as
/// `serde_json::to_writer` writes it.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    if needs_escaping(text) {
        // Writing a string into a vector cannot fail.
        let _ = serde_json::to_writer(&mut *out, text);
        return;
    }
    out.reserve(text.len() + 2);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// True when `text` has a byte JSON escapes: a quote, a backslash or a control
/// character below 0x20 (serde_json leaves DEL and non-ASCII as they are). A fold of
/// bytes without early exit or lazy operators, so the loop compiles to vector compares.
fn needs_escaping(text: &str) -> bool {
    let found = text.bytes().fold(0u8, |found, b| {
        found | u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\')
    });
    found != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> Vec<u8> {
        let mut out = b"x".to_vec();
        write_str(&mut out, text);
        out
    }

    #[test]
    fn every_single_byte_and_some_longer_texts_are_written_as_serde_json_writes_them() {
        let mut texts: Vec<String> = (0u8..=127).map(|b| char::from(b).to_string()).collect();
        texts.extend(
            [
                "",
                "é and 漢字 and 🦀",
                "\u{7f}",
                "a long prompt without anything to escape, long enough for vector compares",
                "a long prompt with one quote at the very end, past the first vector chunk\"",
                "tab\there, newline\nthere, backslash \\ and a bell \u{7}",
            ]
            .map(String::from),
        );
        for text in texts {
            let mut expected = b"x".to_vec();
            serde_json::to_writer(&mut expected, &text).unwrap();
            assert_eq!(written(&text), expected, "{text:?}");
        }
    }

    #[test]
    fn only_quotes_backslashes_and_control_characters_need_escaping() {
        let escaped: Vec<u8> = (0u8..=127)
            .filter(|&b| needs_escaping(&char::from(b).to_string()))
            .collect();
        let mut expected: Vec<u8> = (0..0x20).collect();
        expected.extend([b'"', b'\\']);
        assert_eq!(escaped, expected);
    }
}
