//! [`BodyChunks`]: a response body as it arrived, held compactly while it streams.

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One body chunk as it came off the wire: a view into [`BodyChunks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// When its bytes reached the socket (the kernel's receive stamp, where the transport
    /// has it), else when they were read; before anything looked at them.
    pub at: Instant,
    /// The bytes.
    pub bytes: &'a [u8],
}

/// A response body as it arrived: every body frame's bytes and when it was read.
///
/// A streamed response is kept whole until the stream ends (parsing happens afterwards,
/// off the hot path), and with thousands of streams in flight what each one holds is
/// most of the client's memory. So [`push`](Self::push) stores each piece of a chunk
/// (a server-sent event: the bytes up to and including a blank line `\n\n`) as its
/// difference from the piece before: how many bytes it shares with it at the start and
/// at the end, and the bytes in between. Consecutive events of a stream differ in a few
/// bytes (the token), so a 128-event chat stream holds 2-3 KB instead of ~30 KB. Finding
/// the shared ends is two memory comparisons; nothing is parsed, and any bytes (binary
/// too) come back exactly. Stamps are held as nanoseconds since the stamp before.
///
/// The readers ([`bytes`](Self::bytes), [`iter`](Self::iter), [`get`](Self::get), …)
/// borrow from the plain body, rebuilt once on the first read and kept. A body in which
/// no piece shared enough with the one before (a non-streamed response, binary data) is
/// stored as it came and read without rebuilding.
///
/// ```
/// use std::time::{Duration, Instant};
/// use aiperf_core::BodyChunks;
///
/// let hello = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\n\n";
/// let world = b"data: {\"choices\":[{\"delta\":{\"content\":\" world\"}}]}\n\n";
/// let start = Instant::now();
/// let mut body = BodyChunks::new();
/// body.push(start, hello);
/// body.push(start + Duration::from_millis(5), world);
/// assert_eq!((body.len(), body.byte_len()), (2, 103));
/// assert_eq!(body.bytes(), [&hello[..], &world[..]].concat());
/// let gaps: Vec<Duration> = body.iter().map(|chunk| chunk.at - start).collect();
/// assert_eq!(gaps, [Duration::ZERO, Duration::from_millis(5)]);
/// assert_eq!(body.last().map(|chunk| chunk.bytes), Some(&world[..]));
/// ```
#[derive(Clone, Default)]
pub struct BodyChunks {
    /// Each piece's bytes not shared with the piece before, in arrival order: the whole
    /// body when no piece shared enough.
    middles: Vec<u8>,
    /// Per chunk, as LEB128 numbers: nanoseconds since the chunk before (zigzag, signed)
    /// and its length; then per piece until that length is reached: bytes shared with the
    /// piece before at its start, at its end, and the length of its middle.
    marks: Vec<u8>,
    /// A copy of the last piece, to compare the next chunk's first piece with, when that
    /// piece is not stored whole at the end of `middles`.
    previous: Vec<u8>,
    /// Where the last piece starts in `middles`, when it was stored whole.
    previous_whole_at: Option<usize>,
    /// Some piece was stored as a difference: `middles` is not the body.
    differences: bool,
    first_at: Option<Instant>,
    last_at: Option<Instant>,
    len: usize,
    byte_len: usize,
    /// The plain body and stamps, rebuilt on the first read.
    plain: OnceLock<Box<Plain>>,
}

/// Fewest bytes a piece must share with the one before to be stored as a difference:
/// below this, storing it whole costs about the same and keeps the body readable as is.
const MIN_SHARED: usize = 16;

/// The least `middles` grows by, in bytes: a first chunk and a few more.
const MIN_BODY_GROWTH: usize = 1024;

/// The least `marks` grows by, in bytes: a few chunks' marks.
const MIN_MARKS_GROWTH: usize = 32;

/// The most bytes one LEB128 number takes (a `u64`).
const MAX_NUMBER_BYTES: usize = 10;

/// The body as it came, and where each chunk ends in it.
#[derive(Debug, Clone)]
struct Plain {
    /// `None` when the body is `middles` itself.
    bytes: Option<Vec<u8>>,
    stamps: Vec<Stamp>,
}

/// When one chunk was read and where it ends in the plain body.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    at: Instant,
    end: usize,
}

impl BodyChunks {
    /// No chunks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a chunk read at `at`: two comparisons and a copy of what differs per
    /// piece, nothing parsed.
    pub fn push(&mut self, at: Instant, bytes: &[u8]) {
        self.plain.take();
        let since_last = self.last_at.map_or(0, |last| signed_nanos(last, at));
        grow(&mut self.marks, 2 * MAX_NUMBER_BYTES, MIN_MARKS_GROWTH);
        put_number(&mut self.marks, zigzag(since_last));
        put_number(&mut self.marks, bytes.len() as u64);
        let mut before: Option<&[u8]> = None;
        let mut last_whole_at = None;
        for piece in pieces(bytes) {
            let (prefix, suffix) = match before {
                Some(before) => shared_ends(before, piece),
                None => shared_ends(self.previous_piece(), piece),
            };
            last_whole_at = self.store(piece, prefix, suffix);
            before = Some(piece);
        }
        if let Some(last) = before {
            self.previous_whole_at = last_whole_at;
            if last_whole_at.is_none() {
                self.previous.clear();
                self.previous.extend_from_slice(last);
            }
        }
        self.first_at.get_or_insert(at);
        self.last_at = Some(at);
        self.len += 1;
        self.byte_len += bytes.len();
    }

    /// Drops every chunk and frees the memory they held.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// How many chunks arrived.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no chunk arrived.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many body bytes arrived (what [`Self::bytes`] would return the length of),
    /// without rebuilding the body.
    pub fn byte_len(&self) -> usize {
        self.byte_len
    }

    /// The whole body, every chunk's bytes in arrival order.
    pub fn bytes(&self) -> &[u8] {
        if self.differences {
            self.plain().bytes.as_deref().unwrap_or_default()
        } else {
            &self.middles
        }
    }

    /// The chunk at `index` (in arrival order), if there is one.
    pub fn get(&self, index: usize) -> Option<Chunk<'_>> {
        (index < self.len()).then(|| self.chunk(index))
    }

    /// The first chunk, if any.
    pub fn first(&self) -> Option<Chunk<'_>> {
        self.get(0)
    }

    /// The last chunk, if any.
    pub fn last(&self) -> Option<Chunk<'_>> {
        self.get(self.len().checked_sub(1)?)
    }

    /// The chunks in arrival order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Chunk<'_>> + DoubleEndedIterator + '_ {
        (0..self.len()).map(|index| self.chunk(index))
    }

    /// The chunk at `index`, which is below [`Self::len`].
    fn chunk(&self, index: usize) -> Chunk<'_> {
        let stamps = &self.plain().stamps;
        let start = index.checked_sub(1).map_or(0, |before| stamps[before].end);
        let stamp = stamps[index];
        Chunk {
            at: stamp.at,
            bytes: &self.bytes()[start..stamp.end],
        }
    }

    /// The last piece pushed, as it came.
    fn previous_piece(&self) -> &[u8] {
        match self.previous_whole_at {
            Some(start) => &self.middles[start..],
            None => &self.previous,
        }
    }

    /// Appends one piece's marks and middle; returns where it starts in `middles` when
    /// it is stored whole.
    fn store(&mut self, piece: &[u8], prefix: usize, suffix: usize) -> Option<usize> {
        let (prefix, suffix) = if prefix + suffix >= MIN_SHARED {
            self.differences = true;
            (prefix, suffix)
        } else {
            (0, 0)
        };
        let middle = &piece[prefix..piece.len() - suffix];
        grow(&mut self.marks, 3 * MAX_NUMBER_BYTES, MIN_MARKS_GROWTH);
        put_number(&mut self.marks, prefix as u64);
        put_number(&mut self.marks, suffix as u64);
        put_number(&mut self.marks, middle.len() as u64);
        let start = self.middles.len();
        grow(&mut self.middles, middle.len(), MIN_BODY_GROWTH);
        self.middles.extend_from_slice(middle);
        (prefix + suffix == 0).then_some(start)
    }

    /// The plain body and stamps, rebuilt on the first call.
    fn plain(&self) -> &Plain {
        self.plain.get_or_init(|| Box::new(self.rebuild()))
    }

    /// Replays the marks: each piece is the piece before's first `prefix` bytes, its
    /// middle and the piece before's last `suffix` bytes.
    fn rebuild(&self) -> Plain {
        let mut bytes = self.differences.then(|| Vec::with_capacity(self.byte_len));
        let mut stamps = Vec::with_capacity(self.len);
        let Some(mut at) = self.first_at else {
            return Plain { bytes, stamps };
        };
        let mut marks = Marks(&self.marks);
        let mut middles_at = 0;
        let mut before: Range<usize> = 0..0;
        let mut end = 0;
        for _ in 0..self.len {
            at = step(at, unzigzag(marks.next()));
            let chunk_end = end + marks.next() as usize;
            while end < chunk_end {
                let prefix = marks.next() as usize;
                let suffix = marks.next() as usize;
                let middle = middles_at..middles_at + marks.next() as usize;
                if let Some(bytes) = &mut bytes {
                    let start = bytes.len();
                    bytes.extend_from_within(before.start..before.start + prefix);
                    bytes.extend_from_slice(&self.middles[middle.clone()]);
                    bytes.extend_from_within(before.end - suffix..before.end);
                    before = start..bytes.len();
                }
                end += prefix + middle.len() + suffix;
                middles_at = middle.end;
            }
            stamps.push(Stamp { at, end });
        }
        Plain { bytes, stamps }
    }
}

impl fmt::Debug for BodyChunks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Equal when the same chunks arrived at the same instants.
impl PartialEq for BodyChunks {
    fn eq(&self, other: &Self) -> bool {
        // The marks and middles are a function of the chunks and their stamps, and the
        // stamps are held relative to the first.
        (&self.first_at, &self.marks, &self.middles)
            == (&other.first_at, &other.marks, &other.middles)
    }
}

impl Eq for BodyChunks {}

impl<'a> FromIterator<Chunk<'a>> for BodyChunks {
    fn from_iter<I: IntoIterator<Item = Chunk<'a>>>(chunks: I) -> Self {
        let mut body = BodyChunks::new();
        for chunk in chunks {
            body.push(chunk.at, chunk.bytes);
        }
        body
    }
}

/// Splits `bytes` after each blank line (`\n\n`, the end of a server-sent event) that
/// ends a piece of at least [`MIN_SHARED`] bytes: a shorter piece could not be stored as a
/// difference, and its marks would outweigh it (a body of blank lines would hold more than
/// it sent). A split rule, not a parser: any bytes split and join back exactly, and bytes
/// without a blank line are one piece.
fn pieces(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut newlines = memchr::memchr_iter(b'\n', bytes);
    std::iter::from_fn(move || {
        if start == bytes.len() {
            return None;
        }
        let end = newlines
            .by_ref()
            .map(|at| at + 2)
            .find(|&end| end >= start + MIN_SHARED && bytes.get(end - 1) == Some(&b'\n'))
            .unwrap_or(bytes.len());
        let piece = &bytes[start..end];
        start = end;
        Some(piece)
    })
}

/// How many bytes `piece` shares with `before` at its start, and then at its end (the
/// two never overlap in either).
fn shared_ends(before: &[u8], piece: &[u8]) -> (usize, usize) {
    let prefix = shared_prefix(before, piece);
    let suffix = shared_prefix_by(before[prefix..].iter().rev(), piece[prefix..].iter().rev());
    (prefix, suffix)
}

/// The length of the common start of `a` and `b`, compared 16 bytes at a time first.
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 16;
    let blocks = a
        .chunks_exact(BLOCK)
        .zip(b.chunks_exact(BLOCK))
        .take_while(|(a, b)| a == b)
        .count();
    let start = blocks * BLOCK;
    start + shared_prefix_by(a[start..].iter(), b[start..].iter())
}

fn shared_prefix_by<'a>(a: impl Iterator<Item = &'a u8>, b: impl Iterator<Item = &'a u8>) -> usize {
    a.zip(b).take_while(|(a, b)| a == b).count()
}

/// Reserves room for `additional` more bytes, growing by a quarter (at least `least`)
/// rather than doubling: a stream's buffers live until the stream ends, and a doubling
/// buffer is a quarter empty on average, with thousands of streams in flight. Copying a
/// few tens of KB more over a stream's life costs less than a microsecond per chunk.
fn grow(buffer: &mut Vec<u8>, additional: usize, least: usize) {
    if buffer.capacity() - buffer.len() < additional {
        let growth = (buffer.len() / 4).max(least);
        buffer.reserve_exact(additional.max(growth));
    }
}

/// Appends `value` as LEB128: seven bits a byte, low bits first.
fn put_number(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads back what [`put_number`] wrote.
struct Marks<'a>(&'a [u8]);

impl Marks<'_> {
    fn next(&mut self) -> u64 {
        let mut value = 0;
        let mut shift = 0;
        loop {
            let byte = self.0[0];
            self.0 = &self.0[1..];
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return value;
            }
            shift += 7;
        }
    }
}

/// Nanoseconds from `from` to `to`, negative when `to` is earlier (a kernel receive
/// stamp may precede the stamp of a chunk read before it).
fn signed_nanos(from: Instant, to: Instant) -> i64 {
    match to.checked_duration_since(from) {
        Some(later) => i64::try_from(later.as_nanos()).unwrap_or(i64::MAX),
        None => i64::try_from((from - to).as_nanos()).map_or(i64::MIN, |earlier| -earlier),
    }
}

/// `at` moved by `nanos` (back when negative).
fn step(at: Instant, nanos: i64) -> Instant {
    let distance = Duration::from_nanos(nanos.unsigned_abs());
    let moved = if nanos < 0 {
        at.checked_sub(distance)
    } else {
        at.checked_add(distance)
    };
    moved.unwrap_or(at)
}

/// Signed to unsigned with small magnitudes small: 0, -1, 1, -2, … → 0, 1, 2, 3, …
fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    (value >> 1) as i64 ^ -((value & 1) as i64)
}

#[cfg(test)]
mod tests;
