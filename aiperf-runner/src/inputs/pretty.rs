//! Pretty JSON straight from compact JSON. `inputs.json` lays out every request body as
//! serde_json's pretty printer lays out the value the body parses to. Parsing a body into
//! a `serde_json::Value` (a string and a map allocated per field) only to print it again
//! cost the file's writer about 13 µs a request at ISL 550, on a thread that shares the
//! cores with the run; a body written by serde_json needs only its line breaks and
//! indents put in. A body serde_json would not have written so (whitespace, a float, an
//! escape it writes otherwise, a repeated key, a number it parses as a float, not JSON at
//! all) is left to the caller's parse-and-print path, which normalises it.

/// Appends `compact` laid out as `serde_json::to_vec_pretty` lays out the value it parses
/// to, every line after the first starting with `margin`. `None`, with `out` as it was,
/// when only parsing `compact` tells what the printer would make of it.
pub(super) fn reindent(compact: &[u8], margin: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let start = out.len();
    let laid_out = Reindent {
        compact,
        margin,
        out,
        at: 0,
        open: Vec::new(),
    }
    .value_list();
    if laid_out.is_none() {
        out.truncate(start);
    }
    laid_out
}

struct Reindent<'a, 'o> {
    compact: &'a [u8],
    margin: &'a [u8],
    out: &'o mut Vec<u8>,
    at: usize,
    /// The containers open around `at`, innermost last.
    open: Vec<Open<'a>>,
}

/// An open object (with the keys it has had: serde_json keeps one value per key) or array.
struct Open<'a> {
    close: u8,
    keys: Vec<&'a [u8]>,
}

impl<'a> Reindent<'a, '_> {
    /// The whole input: one value, then its end.
    fn value_list(mut self) -> Option<()> {
        std::str::from_utf8(self.compact).ok()?;
        self.value()?;
        loop {
            let Some(open) = self.open.last() else {
                return (self.at == self.compact.len()).then_some(());
            };
            let close = open.close;
            match self.next()? {
                b',' => {
                    self.out.push(b',');
                    self.line_break();
                    if close == b'}' {
                        self.key()?;
                    }
                    self.value()?;
                }
                byte if byte == close => {
                    self.open.pop();
                    self.line_break();
                    self.out.push(close);
                }
                _ => return None,
            }
        }
    }

    fn next(&mut self) -> Option<u8> {
        let byte = *self.compact.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    /// A new line at the depth of the containers open.
    fn line_break(&mut self) {
        self.out.push(b'\n');
        self.out.extend_from_slice(self.margin);
        for _ in 0..self.open.len() {
            self.out.extend_from_slice(b"  ");
        }
    }

    /// A key and its colon, in the innermost (object) container.
    fn key(&mut self) -> Option<()> {
        if self.next()? != b'"' {
            return None;
        }
        let key = self.string()?;
        let keys = &mut self.open.last_mut()?.keys;
        if keys.contains(&key) {
            return None;
        }
        keys.push(key);
        if self.next()? != b':' {
            return None;
        }
        self.out.extend_from_slice(b": ");
        Some(())
    }

    /// One value: a scalar written whole, or a container opened (its first key or
    /// element follows on the next line) or written whole when empty.
    fn value(&mut self) -> Option<()> {
        match self.next()? {
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.out.push(open);
                if self.compact.get(self.at) == Some(&close) {
                    self.at += 1;
                    self.out.push(close);
                    return Some(());
                }
                self.open.push(Open {
                    close,
                    keys: Vec::new(),
                });
                self.line_break();
                if open == b'{' {
                    self.key()?;
                }
                self.value()
            }
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.integer(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }

    /// A string whose opening quote was taken, written as it is when serde_json writes
    /// its escapes so: the characters between the quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        let from = self.at;
        loop {
            let found = memchr::memchr3(b'"', b'\\', b'\n', &self.compact[self.at..])?;
            // Control characters are escaped; every byte before the one found is checked.
            if self.compact[self.at..self.at + found]
                .iter()
                .any(|byte| *byte < 0x20)
            {
                return None;
            }
            self.at += found;
            match self.next()? {
                b'"' => break,
                b'\\' => self.escape()?,
                _ => return None,
            }
        }
        let inner = &self.compact[from..self.at - 1];
        self.out.push(b'"');
        self.out.extend_from_slice(inner);
        self.out.push(b'"');
        Some(inner)
    }

    /// An escape whose backslash was taken, if serde_json writes that character so: the
    /// short forms, and `\u00XX` (lower-case hex) for other control characters.
    fn escape(&mut self) -> Option<()> {
        match self.next()? {
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Some(()),
            b'u' => {
                let digits = self.compact.get(self.at..self.at + 4)?;
                self.at += 4;
                let lower_hex = |byte: &u8| byte.is_ascii_digit() || (b'a'..=b'f').contains(byte);
                let code = match digits {
                    [b'0', b'0', high @ (b'0' | b'1'), low] if lower_hex(low) => {
                        (high - b'0') * 16 + (*low as char).to_digit(16)? as u8
                    }
                    _ => return None,
                };
                // Those have short forms.
                (!matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)).then_some(())
            }
            _ => None,
        }
    }

    /// An integer whose first byte was taken, when serde_json parses and prints it back
    /// the same: no fraction or exponent (printed as a float), no leading zero, no `-0`,
    /// within `i64` / `u64`.
    fn integer(&mut self) -> Option<()> {
        let from = self.at - 1;
        while self.compact.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        if matches!(self.compact.get(self.at), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let digits = std::str::from_utf8(&self.compact[from..self.at]).ok()?;
        let canonical = match digits.strip_prefix('-') {
            Some(magnitude) => {
                magnitude != "0" && !magnitude.starts_with('0') && digits.parse::<i64>().is_ok()
            }
            None => (digits == "0" || !digits.starts_with('0')) && digits.parse::<u64>().is_ok(),
        };
        if !canonical {
            return None;
        }
        self.out.extend_from_slice(digits.as_bytes());
        Some(())
    }

    /// `word`, whose first byte was taken.
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let rest = self.compact.get(self.at..self.at + word.len() - 1)?;
        if rest != &word[1..] {
            return None;
        }
        self.at += word.len() - 1;
        self.out.extend_from_slice(word);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde_json::{json, Map, Value};

    use super::*;

    /// What the parse-and-print path makes of `compact`, with `margin` after each line
    /// break; `None` when it is not JSON.
    fn printed(compact: &[u8], margin: &[u8]) -> Option<Vec<u8>> {
        let value: Value = serde_json::from_slice(compact).ok()?;
        let pretty = serde_json::to_vec_pretty(&value).unwrap();
        let mut out = Vec::new();
        for (index, line) in pretty.split(|b| *b == b'\n').enumerate() {
            if index > 0 {
                out.push(b'\n');
                out.extend_from_slice(margin);
            }
            out.extend_from_slice(line);
        }
        Some(out)
    }

    fn reindented(compact: &[u8], margin: &[u8]) -> Option<Vec<u8>> {
        let mut out = b"before".to_vec();
        let done = reindent(compact, margin, &mut out);
        let (before, laid_out) = out.split_at(6);
        assert_eq!(before, b"before");
        if done.is_none() {
            assert!(laid_out.is_empty(), "a refused input leaves nothing");
        }
        done.map(|()| laid_out.to_vec())
    }

    fn random_string(rng: &mut ChaCha8Rng) -> String {
        let pieces = [
            "a", "é", "\"", "\\", "\n", "\t", "\u{1}", "\u{1f}", "\u{7f}", "/", "日本", " ", "{",
            "]", ",", ":", "\u{8}", "\u{c}", "\r", "𝄞",
        ];
        (0..rng.random_range(0..8))
            .map(|_| pieces[rng.random_range(0..pieces.len())])
            .collect()
    }

    fn random_value(rng: &mut ChaCha8Rng, depth: u32) -> Value {
        match rng.random_range(0..if depth > 3 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.random()),
            2 => json!(rng.random::<i64>() >> rng.random_range(0..64)),
            3 => json!(rng.random::<u64>() >> rng.random_range(0..64)),
            4 => Value::String(random_string(rng)),
            5 => Value::Array(
                (0..rng.random_range(0..4))
                    .map(|_| random_value(rng, depth + 1))
                    .collect(),
            ),
            _ => {
                let mut map = Map::new();
                for _ in 0..rng.random_range(0..4) {
                    map.insert(random_string(rng), random_value(rng, depth + 1));
                }
                Value::Object(map)
            }
        }
    }

    #[test]
    fn what_serde_json_writes_is_laid_out_as_its_pretty_printer_lays_it_out() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..5_000 {
            let compact = serde_json::to_vec(&random_value(&mut rng, 0)).unwrap();
            for margin in [&b""[..], b"        "] {
                assert_eq!(
                    reindented(&compact, margin),
                    printed(&compact, margin),
                    "{}",
                    String::from_utf8_lossy(&compact)
                );
            }
        }
    }

    #[test]
    fn a_chat_body_is_laid_out_as_before() {
        let body = br#"{"messages":[{"role":"user","content":"Hi \"there\"\n"}],"model":"m","stream":true,"max_tokens":8,"extra":{},"list":[]}"#;
        let expected = printed(body, b"    ").unwrap();
        assert_eq!(reindented(body, b"    ").unwrap(), expected);
        assert!(String::from_utf8(expected)
            .unwrap()
            .contains("\n      \"messages\": [\n        {"));
    }

    #[test]
    fn what_parsing_would_change_is_left_to_parsing() {
        for compact in [
            &br#"{"a": 1}"#[..],       // whitespace
            br#"{"t":0.5}"#,           // a float
            b"[1e5]",                  // an exponent
            b"[-0]",                   // minus zero
            b"[007]",                  // not JSON
            b"[18446744073709551616]", // past u64: parsed as a float
            b"[-9223372036854775809]", // past i64
            br#"["\u00e9"]"#,          // printed raw
            br#"["\/"]"#,              // printed as /
            br#"["\u000A"]"#,          // printed as \n
            br#"["\u001F"]"#,          // upper-case hex
            br#"{"a":1,"a":2}"#,       // a repeated key
            br#"{"a":1"#,              // cut short
            br#"{"a":1}x"#,            // followed by more
            b"[\"\x01\"]",             // a raw control character
            b"[\"\xff\"]",             // not UTF-8
            b"",
            b"tru",
        ] {
            assert_eq!(
                reindented(compact, b"  "),
                None,
                "{}",
                String::from_utf8_lossy(compact)
            );
        }
        // Still what serde_json would have written: kept.
        for compact in [
            &br#"["\u001f",-1,0,18446744073709551615]"#[..],
            br#"{"a":{"a":1}}"#,
        ] {
            assert_eq!(reindented(compact, b""), printed(compact, b""));
        }
    }
}
