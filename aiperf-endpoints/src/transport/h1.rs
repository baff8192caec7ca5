//! HTTP/1.1 on the transport's own connections: the task that sends a request writes it
//! and reads its response itself.
//!
//! hyper keeps, for as long as a connection is open, a task of its own, a channel between
//! that task and the request (a block of 32 request slots), an 8 KiB read buffer and an
//! 8 KiB write buffer: about 26 KB per open stream, and a hand-over between two tasks for
//! every frame. A benchmark client sends one request at a time on a connection and never
//! pipelines, so it needs none of that. Here a request is written with one vectored write
//! (head and body), the response is read into a buffer on the stack of the poll that reads
//! it, and each body chunk is stamped with its read's arrival and copied into the exchange
//! at once. A waiting stream holds its future, its [`Connection`] and the state of a
//! half-read chunk size or head, nothing else.
//!
//! Framing follows RFC 9112: `Transfer-Encoding: chunked`, else `Content-Length`, else
//! the body ends with the connection. A connection goes back to the pool only when its
//! response ended exactly where the framing says and neither side asked to close.

use std::future::poll_fn;
use std::io::{self, Write as _};
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use aiperf_core::{HttpMethod, HttpRequest, TransportError};
use hyper::rt::{Read, ReadBuf, Write};
use hyper_util::client::legacy::connect::Connection as _;
use tower_service::Service;

use super::boxed_tls::Stream;
use super::traced::{ConnectTiming, Timed};
use super::wire::{Arrivals, WireClock};
use super::{connect_error, Connector, Target};

/// The most one read takes, and so the largest body chunk: a buffer on the stack of the
/// poll that reads, never kept between reads.
pub(crate) const READ_BUFFER_BYTES: usize = 8 * 1024;

/// The largest response head accepted (status line and headers). Servers send a few
/// hundred bytes; hyper's limit for the same buffer was 8 KiB.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The most headers one response head may have.
const MAX_HEADERS: usize = 128;

/// One open connection: the stream and what is known about it since it opened.
#[derive(Debug)]
pub(crate) struct Connection {
    io: Timed<Stream>,
    /// The stamps of its reads and writes, when the stream keeps them.
    wire: Option<WireClock>,
    timing: ConnectTiming,
}

impl Connection {
    /// Opens a connection to the target's host (TCP, and TLS for `https://`).
    pub(crate) async fn open(
        connector: &Connector,
        target: &Target,
    ) -> Result<Self, TransportError> {
        let mut connector = connector.clone();
        let opened = async {
            poll_fn(|cx| connector.poll_ready(cx)).await?;
            connector.call(target.uri.clone()).await
        };
        let io = opened.await.map_err(|error| connect_error(&*error))?;
        let mut extras = http::Extensions::new();
        io.connected().get_extras(&mut extras);
        Ok(Self {
            wire: extras.remove::<WireClock>(),
            timing: io.timing(),
            io,
        })
    }

    /// When the connection was opened.
    pub(crate) fn timing(&self) -> ConnectTiming {
        self.timing
    }

    /// The stamps of its reads and writes, if the stream keeps them.
    pub(crate) fn wire(&self) -> Option<&WireClock> {
        self.wire.as_ref()
    }

    /// False when the server closed the connection while it was idle, or sent bytes no
    /// request asked for: either way it cannot carry a request. Never waits.
    pub(crate) fn is_usable(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        let mut byte = [MaybeUninit::uninit(); 1];
        let mut buf = ReadBuf::uninit(&mut byte);
        Pin::new(&mut self.io)
            .poll_read(&mut cx, buf.unfilled())
            .is_pending()
    }

    /// Writes the request head and body.
    pub(crate) async fn write_request(&mut self, head: &[u8], body: &[u8]) -> io::Result<()> {
        let (mut head_at, mut body_at) = (0, 0);
        poll_fn(|cx| {
            while head_at < head.len() || body_at < body.len() {
                let parts = [
                    io::IoSlice::new(&head[head_at..]),
                    io::IoSlice::new(&body[body_at..]),
                ];
                let written =
                    std::task::ready!(Pin::new(&mut self.io).poll_write_vectored(cx, &parts))?;
                if written == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                let into_head = written.min(head.len() - head_at);
                head_at += into_head;
                body_at += written - into_head;
            }
            // TLS may hold the last records back until asked (plain TCP holds nothing).
            Pin::new(&mut self.io).poll_flush(cx)
        })
        .await
    }

    /// Reads one response, handing its head and each body chunk, stamped with the arrival
    /// of the read that brought it, to `on`. Ends with whether the connection can carry
    /// another request.
    pub(crate) async fn read_response(
        &mut self,
        started_at: Instant,
        mut on: impl FnMut(Event<'_>) -> Result<(), TransportError>,
    ) -> Result<Reuse, ReadFailure> {
        let mut response = ResponseReader::new(Arrivals::new(self.wire.clone(), started_at));
        poll_fn(|cx| self.poll_response(cx, &mut response, &mut on)).await
    }

    fn poll_response(
        &mut self,
        cx: &mut Context<'_>,
        response: &mut ResponseReader,
        on: &mut impl FnMut(Event<'_>) -> Result<(), TransportError>,
    ) -> Poll<Result<Reuse, ReadFailure>> {
        let mut buffer = [MaybeUninit::uninit(); READ_BUFFER_BYTES];
        loop {
            let mut read = ReadBuf::uninit(&mut buffer);
            if let Err(error) =
                std::task::ready!(Pin::new(&mut self.io).poll_read(cx, read.unfilled()))
            {
                return Poll::Ready(Err(ReadFailure::Io {
                    error,
                    before_response: response.nothing_read(),
                }));
            }
            let at = response.arrivals.next();
            let bytes = read.filled();
            let step = if bytes.is_empty() {
                response.at_end()
            } else {
                response.take(at, bytes, on)
            };
            match step {
                Ok(None) => {}
                Ok(Some(reuse)) => return Poll::Ready(Ok(reuse)),
                Err(failure) => return Poll::Ready(Err(failure)),
            }
        }
    }
}

/// What a response delivers as it is read.
#[derive(Debug)]
pub(crate) enum Event<'a> {
    /// The head, complete.
    Head(Head<'a>),
    /// Body bytes (decoded from chunks), and when the read that brought them arrived.
    Data(Instant, &'a [u8]),
}

/// A response head as parsed.
#[derive(Debug)]
pub(crate) struct Head<'a> {
    /// When the read that completed it arrived.
    pub(crate) at: Instant,
    pub(crate) status: u16,
    pub(crate) headers: &'a [httparse::Header<'a>],
    /// Its size on the wire: status line, headers and the blank line.
    pub(crate) bytes: usize,
}

/// Whether a connection whose response was read whole can carry another request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reuse {
    Yes,
    /// The server asked to close, the body ran to the connection's end, or bytes followed
    /// the response.
    No,
}

/// Why a response could not be read whole.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The connection failed or closed; `before_response`: before any byte of a response.
    Io {
        error: io::Error,
        before_response: bool,
    },
    /// What the server sent is not an HTTP/1 response, or what `on` refused.
    Invalid(TransportError),
}

impl ReadFailure {
    /// The connection failed or closed before any byte of a response arrived.
    pub(crate) fn before_response(&self) -> bool {
        matches!(
            self,
            ReadFailure::Io {
                before_response: true,
                ..
            }
        )
    }

    /// The error the exchange reports.
    pub(crate) fn into_error(self) -> TransportError {
        match self {
            ReadFailure::Io { error, .. } => TransportError::Disconnected(super::chain(&error)),
            ReadFailure::Invalid(error) => error,
        }
    }
}

fn invalid(message: impl Into<String>) -> ReadFailure {
    ReadFailure::Invalid(TransportError::Disconnected(format!(
        "invalid HTTP response: {}",
        message.into()
    )))
}

/// The state of one response being read: the head (while it is split over reads), then
/// the body's framing.
#[derive(Debug)]
struct ResponseReader {
    arrivals: Arrivals,
    /// A head split over reads, until it is complete.
    partial_head: Vec<u8>,
    /// Any byte read yet.
    started: bool,
    body: Option<Body>,
}

/// How the body is delimited, and how much of it is left.
#[derive(Debug)]
struct Body {
    framing: Framing,
    /// The connection may carry another request once the body ended where it should.
    keep_alive: bool,
}

#[derive(Debug)]
enum Framing {
    /// `Content-Length`: this many bytes left.
    Length(u64),
    Chunked(Chunked),
    /// Until the server closes the connection.
    UntilClose,
}

impl ResponseReader {
    fn new(arrivals: Arrivals) -> Self {
        Self {
            arrivals,
            partial_head: Vec::new(),
            started: false,
            body: None,
        }
    }

    fn nothing_read(&self) -> bool {
        !self.started
    }

    /// The connection ended.
    fn at_end(&mut self) -> Result<Option<Reuse>, ReadFailure> {
        match &self.body {
            Some(Body {
                framing: Framing::UntilClose,
                ..
            }) => Ok(Some(Reuse::No)),
            _ => Err(ReadFailure::Io {
                error: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    if self.started {
                        "connection closed before message completed"
                    } else {
                        "connection closed before any response byte"
                    },
                ),
                before_response: !self.started,
            }),
        }
    }

    /// Takes one read's bytes; `Some` once the response is complete.
    fn take(
        &mut self,
        at: Instant,
        bytes: &[u8],
        on: &mut impl FnMut(Event<'_>) -> Result<(), TransportError>,
    ) -> Result<Option<Reuse>, ReadFailure> {
        self.started = true;
        if self.body.is_some() {
            return self.take_body(at, bytes, on);
        }
        if self.partial_head.is_empty() {
            if let Some(used) = self.take_head(at, bytes, on)? {
                return self.take_body(at, &bytes[used..], on);
            }
            self.partial_head.extend_from_slice(bytes);
            Ok(None)
        } else {
            let mut head = std::mem::take(&mut self.partial_head);
            head.extend_from_slice(bytes);
            match self.take_head(at, &head, on)? {
                Some(used) => self.take_body(at, &head[used..], on),
                None if head.len() > MAX_HEAD_BYTES => Err(invalid(format!(
                    "the response head exceeds {MAX_HEAD_BYTES} bytes"
                ))),
                None => {
                    self.partial_head = head;
                    Ok(None)
                }
            }
        }
    }

    /// Parses a head at the start of `bytes`, skipping interim (1xx) responses; the bytes
    /// it took, or `None` when it is not complete yet.
    fn take_head(
        &mut self,
        at: Instant,
        bytes: &[u8],
        on: &mut impl FnMut(Event<'_>) -> Result<(), TransportError>,
    ) -> Result<Option<usize>, ReadFailure> {
        let mut from = 0;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut response = httparse::Response::new(&mut headers);
            let size = match response.parse(&bytes[from..]) {
                Ok(httparse::Status::Complete(size)) => size,
                Ok(httparse::Status::Partial) => {
                    return if from == 0 {
                        Ok(None)
                    } else {
                        // Only after an interim response: keep the rest for the next read.
                        self.partial_head.extend_from_slice(&bytes[from..]);
                        Ok(Some(bytes.len()))
                    };
                }
                Err(error) => return Err(invalid(error.to_string())),
            };
            let status = response.code.unwrap_or(0);
            if (100..200).contains(&status) && status != 101 {
                from += size;
                continue;
            }
            let headers = response.headers;
            let body = framing(status, response.version == Some(1), headers)?;
            on(Event::Head(Head {
                at,
                status,
                headers,
                bytes: size,
            }))
            .map_err(ReadFailure::Invalid)?;
            self.body = Some(body);
            return Ok(Some(from + size));
        }
    }

    /// Takes body bytes; `Some` once the body is complete.
    fn take_body(
        &mut self,
        at: Instant,
        bytes: &[u8],
        on: &mut impl FnMut(Event<'_>) -> Result<(), TransportError>,
    ) -> Result<Option<Reuse>, ReadFailure> {
        let Some(body) = &mut self.body else {
            return Ok(None);
        };
        let mut deliver = |data: &[u8]| on(Event::Data(at, data)).map_err(ReadFailure::Invalid);
        let used = match &mut body.framing {
            Framing::UntilClose => {
                if !bytes.is_empty() {
                    deliver(bytes)?;
                }
                return Ok(None);
            }
            Framing::Length(left) => {
                let take = bytes
                    .len()
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                if take > 0 {
                    deliver(&bytes[..take])?;
                }
                *left -= take as u64;
                if *left > 0 {
                    return Ok(None);
                }
                take
            }
            Framing::Chunked(chunked) => {
                let mut failed = None;
                let done = chunked
                    .feed(bytes, |data| {
                        if failed.is_none() {
                            failed = deliver(data).err();
                        }
                    })
                    .map_err(invalid)?;
                if let Some(failure) = failed {
                    return Err(failure);
                }
                match done {
                    Some(used) => used,
                    None => return Ok(None),
                }
            }
        };
        // Bytes after the response: the server answered something not asked for.
        Ok(Some(if body.keep_alive && used == bytes.len() {
            Reuse::Yes
        } else {
            Reuse::No
        }))
    }
}

/// How the body of a response with this status and these headers is delimited, and
/// whether the connection stays open after it (RFC 9112, 6.3 and 9.3).
fn framing(
    status: u16,
    http11: bool,
    headers: &[httparse::Header<'_>],
) -> Result<Body, ReadFailure> {
    let mut length: Option<u64> = None;
    let mut chunked = None;
    let (mut close, mut keep_alive) = (false, false);
    for header in headers {
        let name = header.name;
        if name.eq_ignore_ascii_case("transfer-encoding") {
            // The last coding decides: chunked, or the body runs to the close.
            let last = last_token(header.value);
            chunked = Some(last.is_some_and(|coding| coding.eq_ignore_ascii_case(b"chunked")));
        } else if name.eq_ignore_ascii_case("content-length") {
            let value = std::str::from_utf8(header.value)
                .ok()
                .and_then(|value| value.trim().parse::<u64>().ok())
                .ok_or_else(|| invalid("a Content-Length that is not a number"))?;
            if length.is_some_and(|seen| seen != value) {
                return Err(invalid("two different Content-Length values"));
            }
            length = Some(value);
        } else if name.eq_ignore_ascii_case("connection") {
            for option in header.value.split(|b| *b == b',') {
                let option = option.trim_ascii();
                close |= option.eq_ignore_ascii_case(b"close");
                keep_alive |= option.eq_ignore_ascii_case(b"keep-alive");
            }
        }
    }
    let keep_alive = !close && (http11 || keep_alive);
    let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::Length(0)
    } else {
        match (chunked, length) {
            (Some(true), _) => Framing::Chunked(Chunked::default()),
            (None, Some(length)) => Framing::Length(length),
            // Another coding last, or no length at all.
            (Some(false), _) | (None, None) => Framing::UntilClose,
        }
    };
    let keep_alive = keep_alive && !matches!(framing, Framing::UntilClose);
    Ok(Body {
        framing,
        keep_alive,
    })
}

fn last_token(value: &[u8]) -> Option<&[u8]> {
    value.rsplit(|b| *b == b',').next().map(<[u8]>::trim_ascii)
}

/// Decodes a chunked body as it arrives, without buffering: the data of each chunk is
/// handed on from the read that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunked {
    /// Reading a chunk's size (hex digits so far).
    Size {
        size: u64,
        digits: u8,
    },
    /// Past the size: an extension or whitespace, until the line ends.
    Extension {
        size: u64,
    },
    /// The size line's CR seen.
    SizeLf {
        size: u64,
    },
    Data {
        left: u64,
    },
    DataCr,
    DataLf,
    /// After the last chunk: trailer lines until an empty one. `empty`: nothing on this
    /// line yet.
    Trailer {
        empty: bool,
    },
    TrailerLf {
        empty: bool,
    },
    Done,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked::Size { size: 0, digits: 0 }
    }
}

impl Chunked {
    /// Takes `input`, handing each chunk's data (or the part of it here) to `data`;
    /// `Some(bytes used)` once the body ended.
    fn feed(&mut self, input: &[u8], mut data: impl FnMut(&[u8])) -> Result<Option<usize>, String> {
        let mut at = 0;
        while at < input.len() {
            let byte = input[at];
            *self = match *self {
                Chunked::Size { size, digits } => match (byte as char).to_digit(16) {
                    Some(digit) if digits < 16 => Chunked::Size {
                        size: (size << 4) | u64::from(digit),
                        digits: digits + 1,
                    },
                    Some(_) => return Err("a chunk size over 16 hex digits".into()),
                    None if digits == 0 => {
                        return Err(format!("a chunk size starting with {:?}", byte as char))
                    }
                    None if byte == b'\r' => Chunked::SizeLf { size },
                    None if byte == b';' || byte == b' ' || byte == b'\t' => {
                        Chunked::Extension { size }
                    }
                    None => return Err(format!("{:?} in a chunk size", byte as char)),
                },
                Chunked::Extension { size } => {
                    let Some(offset) = memchr::memchr(b'\r', &input[at..]) else {
                        at = input.len();
                        continue;
                    };
                    at += offset;
                    Chunked::SizeLf { size }
                }
                Chunked::SizeLf { size } => match (byte, size) {
                    (b'\n', 0) => Chunked::Trailer { empty: true },
                    (b'\n', left) => Chunked::Data { left },
                    _ => return Err("no line feed after a chunk size".into()),
                },
                Chunked::Data { left } => {
                    let take = (input.len() - at).min(usize::try_from(left).unwrap_or(usize::MAX));
                    data(&input[at..at + take]);
                    at += take;
                    let left = left - take as u64;
                    *self = if left == 0 {
                        Chunked::DataCr
                    } else {
                        Chunked::Data { left }
                    };
                    continue;
                }
                Chunked::DataCr if byte == b'\r' => Chunked::DataLf,
                Chunked::DataLf if byte == b'\n' => Chunked::default(),
                Chunked::DataCr | Chunked::DataLf => {
                    return Err("a chunk longer than its size".into())
                }
                Chunked::Trailer { empty } if byte == b'\r' => Chunked::TrailerLf { empty },
                Chunked::Trailer { .. } => Chunked::Trailer { empty: false },
                Chunked::TrailerLf { empty } if byte == b'\n' => {
                    if empty {
                        *self = Chunked::Done;
                        return Ok(Some(at + 1));
                    }
                    Chunked::Trailer { empty: true }
                }
                Chunked::TrailerLf { .. } => return Err("no line feed in the trailer".into()),
                Chunked::Done => return Ok(Some(at)),
            };
            at += 1;
        }
        Ok((*self == Chunked::Done).then_some(at))
    }
}

/// The request head as written: the request line, the request's headers (names in lower
/// case, as hyper wrote them), `host` unless the request has one, and `content-length`
/// (left out for a `GET` without a body). A header that is not valid fails with its
/// name only: values may be secrets.
pub(crate) fn request_head(
    request: &HttpRequest,
    target: &Target,
) -> Result<Vec<u8>, TransportError> {
    let method: &[u8] = match request.method {
        HttpMethod::Get => b"GET ",
        HttpMethod::Post => b"POST ",
    };
    let path = target
        .uri
        .path_and_query()
        .map_or("/", |path| path.as_str());
    let headers_len: usize = request
        .headers
        .iter()
        .map(|(name, value)| name.len() + value.len() + 4)
        .sum();
    let mut head = Vec::with_capacity(64 + path.len() + headers_len + target.host.len());
    head.extend_from_slice(method);
    head.extend_from_slice(path.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    let mut has_host = false;
    for (name, value) in &request.headers {
        if !is_token(name) {
            return Err(TransportError::InvalidRequest(format!(
                "invalid header name `{}`",
                name.escape_debug()
            )));
        }
        if !value
            .bytes()
            .all(|b| b == b'\t' || (b >= b' ' && b != 0x7f))
        {
            return Err(TransportError::InvalidRequest(format!(
                "invalid value for header `{name}`"
            )));
        }
        // The transport frames the body itself.
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            continue;
        }
        has_host |= name.eq_ignore_ascii_case("host");
        head.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    if !has_host {
        head.extend_from_slice(b"host: ");
        head.extend_from_slice(target.host.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    if request.method == HttpMethod::Post || !request.body.is_empty() {
        // Writing to a `Vec` cannot fail.
        let _ = write!(head, "content-length: {}\r\n", request.body.len());
    }
    head.extend_from_slice(b"\r\n");
    Ok(head)
}

/// An HTTP token (RFC 9110, 5.6.2): what a header name may be.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests;
