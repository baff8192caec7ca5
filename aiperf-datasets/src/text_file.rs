//! Opening text dataset files: a UTF-8 byte-order mark at the start (as Windows editors
//! and Excel's "CSV UTF-8" write it) is skipped, so it never reaches a JSON or CSV parser.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// The UTF-8 encoding of U+FEFF.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// `path` opened for buffered reading (`capacity` bytes), past a leading byte-order mark.
pub(crate) fn open(path: &Path, capacity: usize) -> io::Result<BufReader<File>> {
    let mut reader = BufReader::with_capacity(capacity, File::open(path)?);
    skip_bom(&mut reader)?;
    Ok(reader)
}

/// Consumes a byte-order mark at the reader's position, if there is one.
pub(crate) fn skip_bom(reader: &mut impl BufRead) -> io::Result<()> {
    if reader.fill_buf()?.starts_with(UTF8_BOM) {
        reader.consume(UTF8_BOM.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn a_leading_bom_is_skipped_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        for (bytes, expected) in [
            (&b"\xEF\xBB\xBF{\"a\":1}\n"[..], "{\"a\":1}\n"),
            (b"{\"a\":1}\n", "{\"a\":1}\n"),
            (b"x\xEF\xBB\xBF", "x\u{feff}"),
            (b"", ""),
        ] {
            let path = dir.path().join("f.jsonl");
            std::fs::write(&path, bytes).unwrap();
            let mut text = String::new();
            open(&path, 8192)
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, expected);
        }
    }
}
