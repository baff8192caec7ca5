//! [`Bpe`]: the embedded tiktoken encodings in a compact form.
//!
//! tiktoken-rs keeps each encoding as two hash maps of individually allocated byte
//! strings, a sorted copy of them and 256 regex clones: about 74 MB resident for
//! `o200k_base`, in every run that counts a token. Here an encoding is its table as
//! embedded in the binary (`assets/tiktoken/*.bpe`: the length of each rank's bytes,
//! then all the bytes), one array of offsets into it and one open-addressing table of
//! ranks keyed by those bytes: about 3 MB for `o200k_base`, built in a few milliseconds
//! the first time the encoding is used.
//!
//! Encoding is tiktoken's: the encoding's regex splits the text into pieces; a piece that
//! is a token is that token, any other is merged from its bytes, always joining the
//! adjacent pair of lowest rank (the leftmost of equals) while the pair is a token. The
//! tests check every table and many texts against tiktoken-rs itself. For `o200k` (the
//! builtin), ASCII text is split by hand rather than by the regex engine, which cost more
//! than the rest of encoding a prompt; a test checks that split against the regex.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fancy_regex::Regex;

/// What an embedded encoding is made of.
pub(crate) struct Spec {
    /// The embedded table (see the module documentation); [`write_table`] makes it.
    pub(crate) table: &'static [u8],
    /// The regex that splits text into pieces.
    pub(crate) pattern: &'static str,
    /// The same split of ASCII text, by hand: where the piece that starts at a byte
    /// ends. The regex engine costs more than the rest of encoding prose.
    pub(crate) ascii_split: Option<fn(&[u8], usize) -> usize>,
    /// The special tokens and their ids.
    pub(crate) special: fn() -> Vec<(String, u32)>,
}

/// Marks a part of a piece that was merged into the part before it.
const GONE: usize = usize::MAX;

/// One encoding, loaded. `Send + Sync`; every method takes `&self`.
pub(crate) struct Bpe {
    table: &'static [u8],
    /// `offsets[r]..offsets[r + 1]` are the bytes of rank `r` within `table` (empty
    /// where no token has that rank).
    offsets: Vec<u32>,
    /// Open addressing over the ranks' bytes: `rank + 1`, 0 for an empty slot.
    slots: Vec<u32>,
    /// `64 − log2(slots.len())`: a hash's top bits pick the first slot.
    shift: u32,
    special: Vec<(String, u32)>,
    pattern: Regex,
    ascii_split: Option<fn(&[u8], usize) -> usize>,
}

impl Bpe {
    /// Loads `spec`: one pass over its table.
    pub(crate) fn load(spec: &Spec) -> Self {
        let table = spec.table;
        let ranks = read_count(table);
        let mut offsets = Vec::with_capacity(ranks + 1);
        let mut at = 4 + ranks;
        offsets.push(at as u32);
        for &length in &table[4..4 + ranks] {
            at += usize::from(length);
            offsets.push(at as u32);
        }
        let bits = (ranks * 2).next_power_of_two().trailing_zeros().max(1);
        let mut bpe = Self {
            table,
            offsets,
            slots: vec![0; 1 << bits],
            shift: 64 - bits,
            special: (spec.special)(),
            // The patterns are constants of this module, checked by its tests.
            pattern: Regex::new(spec.pattern).expect("an embedded encoding's pattern compiles"),
            ascii_split: spec.ascii_split,
        };
        for rank in 0..ranks as u32 {
            let bytes = bpe.bytes(rank);
            if !bytes.is_empty() {
                let slot = bpe.free_slot(bytes);
                bpe.slots[slot] = rank + 1;
            }
        }
        bpe
    }

    /// The special tokens and their ids.
    pub(crate) fn special_tokens(&self) -> &[(String, u32)] {
        &self.special
    }

    /// The ids of ordinary tokens (those with bytes), ascending.
    pub(crate) fn ordinary_ids(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.offsets.len() as u32 - 1).filter(|rank| !self.bytes(*rank).is_empty())
    }

    /// The tokens of `text`, special-token text encoded as ordinary text.
    pub(crate) fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 4 + 1);
        self.each_token(text, |id| ids.push(id));
        ids
    }

    /// How many tokens [`Bpe::encode`] makes of `text`.
    pub(crate) fn count(&self, text: &str) -> usize {
        let mut count = 0;
        self.each_token(text, |_| count += 1);
        count
    }

    /// The bytes of `ids` (special tokens as their text); `Err` is the first unknown id.
    pub(crate) fn decode(&self, ids: &[u32]) -> Result<Vec<u8>, u32> {
        let mut bytes = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let ordinary = self.bytes(id);
            if !ordinary.is_empty() {
                bytes.extend_from_slice(ordinary);
            } else if let Some((text, _)) = self.special.iter().find(|(_, s)| *s == id) {
                bytes.extend_from_slice(text.as_bytes());
            } else {
                return Err(id);
            }
        }
        Ok(bytes)
    }

    fn each_token(&self, text: &str, mut emit: impl FnMut(u32)) {
        if let Some(piece_end) = self.ascii_split.filter(|_| text.is_ascii()) {
            let bytes = text.as_bytes();
            let mut start = 0;
            while start < bytes.len() {
                let end = piece_end(bytes, start);
                self.merge(&bytes[start..end], &mut emit);
                start = end;
            }
            return;
        }
        for piece in self.pattern.find_iter(text) {
            match piece {
                Ok(piece) => self.merge(piece.as_str().as_bytes(), &mut emit),
                Err(error) => {
                    // Only a backtracking limit of the lookahead can fail; tiktoken panics.
                    tracing::warn!(%error, "tokenizer could not split the rest of a text");
                    return;
                }
            }
        }
    }

    /// Emits the tokens of one piece.
    fn merge(&self, piece: &[u8], emit: &mut impl FnMut(u32)) {
        if piece.is_empty() {
            return;
        }
        if let Some(rank) = self.rank(piece) {
            emit(rank);
            return;
        }
        // Parts as a linked list over byte positions: part `i` is `piece[i..next[i]]`;
        // `next[i] == GONE` once it has been merged into the part before it.
        let n = piece.len();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        // Candidate merges, lowest rank then leftmost first: (rank, start, end of pair).
        let mut heap = BinaryHeap::with_capacity(n);
        for start in 0..n - 1 {
            if let Some(rank) = self.rank(&piece[start..start + 2]) {
                heap.push(Reverse((rank, start, start + 2)));
            }
        }
        while let Some(Reverse((_, start, end))) = heap.pop() {
            let middle = next[start];
            // Stale: `start` was merged away, or the pair no longer ends at `end`.
            if middle == GONE || middle >= n || next[middle] != end {
                continue;
            }
            next[start] = end;
            next[middle] = GONE;
            if end < n {
                prev[end] = start;
                if let Some(rank) = next.get(end).and_then(|&e| self.rank(&piece[start..e])) {
                    heap.push(Reverse((rank, start, next[end])));
                }
            }
            let before = prev[start];
            if before != usize::MAX {
                if let Some(rank) = self.rank(&piece[before..end]) {
                    heap.push(Reverse((rank, before, end)));
                }
            }
        }
        let mut start = 0;
        while start < n {
            // Every part is a token: single bytes are, and only tokens are merged.
            if let Some(rank) = self.rank(&piece[start..next[start]]) {
                emit(rank);
            }
            start = next[start];
        }
    }

    /// The bytes of `rank`; empty for an id outside the table or without a token.
    fn bytes(&self, rank: u32) -> &[u8] {
        let rank = rank as usize;
        match (self.offsets.get(rank), self.offsets.get(rank + 1)) {
            (Some(&start), Some(&end)) => &self.table[start as usize..end as usize],
            _ => &[],
        }
    }

    /// The rank of the token with these bytes.
    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut slot = (hash(bytes) >> self.shift) as usize;
        loop {
            match self.slots[slot] {
                0 => return None,
                entry if self.bytes(entry - 1) == bytes => return Some(entry - 1),
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    fn free_slot(&self, bytes: &[u8]) -> usize {
        let mask = self.slots.len() - 1;
        let mut slot = (hash(bytes) >> self.shift) as usize;
        while self.slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        slot
    }
}

/// Where the piece of ASCII `text` that starts at `start` ends, as `o200k`'s pattern
/// splits it (tiktoken's regex, alternative by alternative, for the ASCII characters of
/// its classes: letters `A-Z` (upper) and `a-z` (lower), digits `0-9`, whitespace
/// `\t \n \x0B \x0C \r` and space; `other` is anything else):
/// 1. `[^\r\n\p{L}\p{N}]?[upper]*[lower]+('s|'t|'re|'ve|'m|'ll|'d)?` (contractions in any case)
/// 2. `[^\r\n\p{L}\p{N}]?[upper]+[lower]*('s|…)?`
/// 3. `\p{N}{1,3}`
/// 4. ` ?[other]+[\r\n/]*`
/// 5. `\s*[\r\n]+`
/// 6. `\s+(?!\S)`
/// 7. `\s+`
///
/// The first alternative that matches at `start` wins, each greedy with backtracking.
pub(crate) fn o200k_ascii_piece_end(text: &[u8], start: usize) -> usize {
    let at = |i: usize| text.get(i).copied();
    let is = |i: usize, class: fn(u8) -> bool| at(i).is_some_and(class);
    let run = |mut i: usize, class: fn(u8) -> bool| {
        while is(i, class) {
            i += 1;
        }
        i
    };
    let prefixed = |i: usize| {
        is(i, |c| {
            !matches!(c, b'\r' | b'\n') && !c.is_ascii_alphanumeric()
        })
    };
    // 1 and 2: an optional prefix, then letters. Without the prefix the first character
    // would have to be a letter, which a prefix is not: only one way can match.
    let letters = if prefixed(start) { start + 1 } else { start };
    let uppers_end = run(letters, |c| c.is_ascii_uppercase());
    let lowers_end = run(uppers_end, |c| c.is_ascii_lowercase());
    if lowers_end > uppers_end || uppers_end > letters {
        return contraction_end(text, lowers_end);
    }
    // 3.
    if is(start, |c| c.is_ascii_digit()) {
        return run(start, |c| c.is_ascii_digit()).min(start + 3);
    }
    // 4.
    let symbols = if at(start) == Some(b' ') && is(start + 1, other) {
        start + 1
    } else {
        start
    };
    if is(symbols, other) {
        let symbols_end = run(symbols, other);
        return run(symbols_end, |c| matches!(c, b'\r' | b'\n' | b'/'));
    }
    // 5, 6 and 7: `start` is whitespace.
    let spaces_end = run(start, space);
    if let Some(last) = text[start..spaces_end]
        .iter()
        .rposition(|c| matches!(c, b'\r' | b'\n'))
    {
        return start + last + 1;
    }
    if spaces_end < text.len() && spaces_end - start > 1 {
        return spaces_end - 1;
    }
    spaces_end
}

/// `\s` of the regex, in ASCII.
fn space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// `[^\s\p{L}\p{N}]`, in ASCII.
fn other(c: u8) -> bool {
    !space(c) && !c.is_ascii_alphanumeric()
}

/// Where an optional contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, in any
/// case) starting at `at` ends.
fn contraction_end(text: &[u8], at: usize) -> usize {
    if text.get(at) != Some(&b'\'') {
        return at;
    }
    let next = |i: usize| text.get(at + i).map(u8::to_ascii_lowercase);
    match (next(1), next(2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => at + 2,
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => at + 3,
        _ => at,
    }
}

/// The number of ranks a table holds (its first four bytes, little-endian).
fn read_count(table: &[u8]) -> usize {
    let mut count = [0; 4];
    count.copy_from_slice(&table[..4]);
    u32::from_le_bytes(count) as usize
}

/// A multiplicative hash of a byte string (FxHash's constant), eight bytes at a time;
/// the top bits are the well-mixed ones.
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let mut hash = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut le = [0; 8];
        le.copy_from_slice(word);
        hash = (hash.rotate_left(26) ^ u64::from_le_bytes(le)).wrapping_mul(K);
    }
    let mut tail = [0; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    (hash.rotate_left(26) ^ u64::from_le_bytes(tail)).wrapping_mul(K)
}

/// The table format of `assets/tiktoken/*.bpe` for the byte strings of ranks
/// `0..tokens.len()` (an empty one where no token has that rank): the rank count as a
/// little-endian `u32`, one length byte per rank, then the bytes of every rank in order.
#[cfg(test)]
pub(crate) fn write_table(tokens: &[Vec<u8>]) -> Vec<u8> {
    let mut table = (tokens.len() as u32).to_le_bytes().to_vec();
    for token in tokens {
        table.push(u8::try_from(token.len()).expect("tokens are shorter than 256 bytes"));
    }
    for token in tokens {
        table.extend_from_slice(token);
    }
    table
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use tiktoken_rs::CoreBPE;

    use crate::tokenizer::TiktokenEncoding;

    use super::*;

    /// tiktoken-rs' instance of `encoding`: the reference.
    fn reference(encoding: TiktokenEncoding) -> &'static CoreBPE {
        match encoding {
            TiktokenEncoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            TiktokenEncoding::O200kHarmony => tiktoken_rs::o200k_harmony_singleton(),
            TiktokenEncoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            TiktokenEncoding::P50kBase => tiktoken_rs::p50k_base_singleton(),
            TiktokenEncoding::P50kEdit => tiktoken_rs::p50k_edit_singleton(),
            TiktokenEncoding::R50kBase => tiktoken_rs::r50k_base_singleton(),
        }
    }

    /// Each embedded table is the ranks of tiktoken-rs, byte for byte.
    /// `AIPERF_UPDATE_TABLES=1` rewrites them from it (after a tiktoken-rs upgrade).
    #[test]
    fn embedded_tables_are_tiktokens_ranks() {
        let tables = [
            (TiktokenEncoding::O200kBase, "o200k_base", 199_998),
            (TiktokenEncoding::Cl100kBase, "cl100k_base", 100_256),
            (TiktokenEncoding::P50kBase, "p50k_base", 50_281),
            (TiktokenEncoding::R50kBase, "r50k_base", 50_256),
        ];
        for (encoding, file, ranks) in tables {
            let bpe = reference(encoding);
            let special: Vec<u32> = bpe
                .special_tokens()
                .into_iter()
                .map(|text| bpe.encode_with_special_tokens(text)[0])
                .collect();
            let tokens: Vec<Vec<u8>> = (0..ranks)
                .map(|rank| {
                    if special.contains(&rank) {
                        Vec::new()
                    } else {
                        bpe.decode_bytes(&[rank]).unwrap_or_default()
                    }
                })
                .collect();
            let expected = write_table(&tokens);
            let path = format!("{}/assets/tiktoken/{file}.bpe", env!("CARGO_MANIFEST_DIR"));
            if std::env::var_os("AIPERF_UPDATE_TABLES").is_some() {
                std::fs::write(&path, &expected).unwrap();
            }
            let embedded = encoding.spec().table;
            assert!(
                embedded == expected,
                "{path} differs from tiktoken-rs' {file}"
            );
        }
    }

    /// Texts that reach every branch of the patterns and of merging: prose, code, digits,
    /// contractions in any case, runs of spaces and newlines, non-Latin scripts, emoji,
    /// long unbroken runs, and random characters.
    fn texts() -> Vec<String> {
        let mut texts: Vec<String> = [
            crate::corpus::SENTENCES,
            "fn main() {\n    let x = 12345678;\n\n\n    println!(\"{x}\");\n}\n",
            "It's THEY'RE we'll I'D you've   spaced    out \t\ttabs\r\n\r\nend  ",
            "Ünïcödé façade — naïve café; 日本語のテキスト, Ελληνικά, русский текст, עברית",
            "emoji 👩‍👩‍👧‍👦🚀🔥 mixed123abc 3.14159 1,000,000 http://example.com/a/b?c=d",
            "<|endoftext|> <|endofprompt|> <|fim_prefix|>",
            "",
            " ",
            "\n\n\n",
        ]
        .map(String::from)
        .to_vec();
        texts.push("x".repeat(3000));
        texts.push("ab".repeat(700) + &" ".repeat(300) + "tail");
        texts.push("🚀".repeat(200));
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let alphabet: Vec<char> = "aeiou xyzXYZ01'\n\t.,!é日🚀ß".chars().collect();
        for _ in 0..300 {
            let length = rng.random_range(1..200);
            texts.push(
                (0..length)
                    .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                    .collect(),
            );
        }
        for _ in 0..100 {
            let length = rng.random_range(1..60);
            texts.push(
                (0..length)
                    .filter_map(|_| char::from_u32(rng.random_range(0..0x3_0000)))
                    .collect(),
            );
        }
        texts
    }

    #[test]
    fn encodes_counts_and_decodes_like_tiktoken() {
        let texts = texts();
        for encoding in TiktokenEncoding::ALL {
            let ours = Bpe::load(&encoding.spec());
            let theirs = reference(encoding);
            for text in &texts {
                let ids = ours.encode(text);
                assert_eq!(ids, theirs.encode_ordinary(text), "{encoding}: {text:?}");
                assert_eq!(ours.count(text), ids.len());
                assert_eq!(ours.decode(&ids).unwrap(), text.as_bytes());
            }
        }
    }

    /// The hand-written split of ASCII text is the regex's, piece for piece: on the
    /// texts above and on 30,000 random ones weighted towards the characters the
    /// pattern treats specially (apostrophes and contraction letters in both cases,
    /// every kind of whitespace, digits, slashes, control characters).
    #[test]
    fn the_o200k_split_of_ascii_text_is_the_regexs() {
        let regex = Regex::new(TiktokenEncoding::O200kBase.spec().pattern).unwrap();
        let mut texts: Vec<String> = texts().into_iter().filter(|t| t.is_ascii()).collect();
        let special = b"aAbZsStTrReEvVmMlLdD'''0123456789  \t\n\r\x0b\x0c//.,!-(\x00\x1c\x7f";
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..30_000 {
            let length = rng.random_range(1..40);
            texts.push(
                (0..length)
                    .map(|_| match rng.random_range(0..3) {
                        0 => char::from(rng.random_range(0..128u8)),
                        _ => char::from(special[rng.random_range(0..special.len())]),
                    })
                    .collect(),
            );
        }
        for text in &texts {
            let by_regex: Vec<usize> = regex.find_iter(text).map(|m| m.unwrap().end()).collect();
            let mut by_hand = Vec::new();
            let mut start = 0;
            while start < text.len() {
                start = o200k_ascii_piece_end(text.as_bytes(), start);
                by_hand.push(start);
            }
            assert_eq!(by_hand, by_regex, "{text:?}");
        }
    }

    #[test]
    fn special_tokens_are_tiktokens() {
        for encoding in TiktokenEncoding::ALL {
            let ours = Bpe::load(&encoding.spec());
            let theirs = reference(encoding);
            let mut expected: Vec<(String, u32)> = theirs
                .special_tokens()
                .into_iter()
                .map(|text| (text.to_owned(), theirs.encode_with_special_tokens(text)[0]))
                .collect();
            expected.sort();
            let mut special = ours.special_tokens().to_vec();
            special.sort();
            assert_eq!(special, expected, "{encoding}");
            for (text, id) in &special {
                assert_eq!(ours.decode(&[*id]).unwrap(), text.as_bytes());
            }
        }
    }

    #[test]
    fn unknown_ids_do_not_decode() {
        let bpe = Bpe::load(&TiktokenEncoding::P50kBase.spec());
        assert_eq!(bpe.decode(&[50_256]).unwrap(), b"<|endoftext|>");
        assert_eq!(bpe.decode(&[1, 50_299]), Err(50_299));
        assert_eq!(
            bpe.ordinary_ids().count(),
            50_280,
            "50256 is special, not ordinary"
        );
    }
}
