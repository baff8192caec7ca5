//! How far this machine's wall clock is from a reference time server, measured with
//! SNTP (RFC 4330) over UDP: the shards of one benchmark ([`crate::shard`]) measure
//! against the same server, wait for the shared start instant in its time and stamp their
//! records in its time, so shards on machines whose clocks disagree still start together
//! and merge on one time axis.
//!
//! Each query gives the offset `((t2 − t1) + (t3 − t4)) / 2` and the round trip
//! `(t4 − t1) − (t3 − t2)`, where `t1`/`t4` are this machine's send and receive times and
//! `t2`/`t3` the server's; the estimate is off by at most half the round trip, so the
//! query with the shortest round trip is kept.
//!
//! ```no_run
//! use aiperf_runner::clock_reference::measure;
//!
//! # async fn run() -> Result<(), aiperf_runner::clock_reference::ClockReferenceError> {
//! let offset = measure("time.google.com").await?;
//! println!("{:+.3} ms (± {:.3} ms)", offset.offset_ms(), offset.round_trip_ms() / 2.0);
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::net::UdpSocket;

/// The NTP port, used when the reference names none.
pub const NTP_PORT: u16 = 123;

/// Queries per measurement; the one with the shortest round trip is kept.
const QUERIES: u32 = 4;

/// How long one query waits for its answer.
const QUERY_TIMEOUT: Duration = Duration::from_secs(1);

/// Seconds from the NTP era (1900) to the Unix epoch.
const NTP_TO_UNIX_SECS: i128 = 2_208_988_800;

/// This machine's clock against a reference, as `shard.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// The reference as given (`host` or `host:port`).
    pub reference: String,
    /// Reference time minus local time, ns: add it to a local wall-clock time to get the
    /// reference's.
    pub offset_ns: i64,
    /// The round trip of the query the offset comes from, ns; the offset is within half
    /// of it.
    pub round_trip_ns: u64,
}

impl ClockOffset {
    /// [`offset_ns`](Self::offset_ns) in ms.
    pub fn offset_ms(&self) -> f64 {
        self.offset_ns as f64 / 1e6
    }

    /// [`round_trip_ns`](Self::round_trip_ns) in ms.
    pub fn round_trip_ms(&self) -> f64 {
        self.round_trip_ns as f64 / 1e6
    }

    /// `local` in the reference's time.
    pub fn to_reference(&self, local: SystemTime) -> SystemTime {
        shift(local, self.offset_ns)
    }

    /// The local wall-clock time at which the reference reads `reference`.
    pub fn to_local(&self, reference: SystemTime) -> SystemTime {
        shift(reference, self.offset_ns.saturating_neg())
    }
}

fn shift(at: SystemTime, ns: i64) -> SystemTime {
    let by = Duration::from_nanos(ns.unsigned_abs());
    let shifted = if ns >= 0 {
        at.checked_add(by)
    } else {
        at.checked_sub(by)
    };
    shifted.unwrap_or(at)
}

/// Why the offset could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum ClockReferenceError {
    /// The name did not resolve to an address.
    #[error("clock reference {reference}: cannot resolve it: {source}")]
    Resolve {
        /// The reference as given.
        reference: String,
        /// What the resolver said.
        #[source]
        source: std::io::Error,
    },
    /// Sending or receiving failed.
    #[error("clock reference {reference}: {source}")]
    Io {
        /// The reference as given.
        reference: String,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// No query was answered with a usable time.
    #[error(
        "clock reference {reference}: no usable answer to {QUERIES} SNTP queries \
         ({QUERY_TIMEOUT:?} each): {why}"
    )]
    NoAnswer {
        /// The reference as given.
        reference: String,
        /// What the last query came to.
        why: String,
    },
}

/// Measures this machine's clock against the SNTP server `reference` (`host`,
/// `host:port` or `[v6]:port`; port 123 when none is given).
pub async fn measure(reference: &str) -> Result<ClockOffset, ClockReferenceError> {
    let addr = resolve(reference).await?;
    let io = |source| ClockReferenceError::Io {
        reference: reference.to_owned(),
        source,
    };
    let local: SocketAddr = if addr.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local).await.map_err(io)?;
    socket.connect(addr).await.map_err(io)?;
    let mut best: Option<(i128, i128)> = None;
    let mut why = String::new();
    for _ in 0..QUERIES {
        match query(&socket).await {
            Ok(Ok((offset, round_trip))) => {
                if best.is_none_or(|(_, shortest)| round_trip < shortest) {
                    best = Some((offset, round_trip));
                }
            }
            Ok(Err(refused)) => why = refused.to_owned(),
            Err(error) => why = error.to_string(),
        }
    }
    let Some((offset, round_trip)) = best else {
        return Err(ClockReferenceError::NoAnswer {
            reference: reference.to_owned(),
            why,
        });
    };
    Ok(ClockOffset {
        reference: reference.to_owned(),
        offset_ns: i64::try_from(offset).unwrap_or(i64::MAX),
        round_trip_ns: u64::try_from(round_trip.max(0)).unwrap_or(u64::MAX),
    })
}

async fn resolve(reference: &str) -> Result<SocketAddr, ClockReferenceError> {
    let failed = |source| ClockReferenceError::Resolve {
        reference: reference.to_owned(),
        source,
    };
    if let Ok(addr) = reference.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let with_port = match reference.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.parse::<u16>().is_ok() => {
            reference.to_owned()
        }
        _ => format!("{}:{NTP_PORT}", reference.trim_matches(['[', ']'])),
    };
    let mut addrs = tokio::net::lookup_host(&with_port).await.map_err(failed)?;
    addrs
        .next()
        .ok_or_else(|| failed(std::io::Error::other("no address")))
}

/// One query: `Ok(Ok((offset, round trip)))` in ns, `Ok(Err(why))` for an answer that
/// cannot be used, `Err` for a socket error or no answer in time.
async fn query(socket: &UdpSocket) -> std::io::Result<Result<(i128, i128), &'static str>> {
    let mut request = [0u8; 48];
    request[0] = 0x23; // no leap warning, version 4, mode 3 (client)
    let sent = unix_ns(SystemTime::now());
    request[40..48].copy_from_slice(&to_ntp(sent));
    socket.send(&request).await?;
    let mut reply = [0u8; 68];
    let len = tokio::time::timeout(QUERY_TIMEOUT, socket.recv(&mut reply))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let received = unix_ns(SystemTime::now());
    if len < 48 {
        return Ok(Err("the answer is shorter than an SNTP packet"));
    }
    if reply[0] & 0x07 != 4 {
        return Ok(Err("the answer is not from an SNTP server (mode 4)"));
    }
    if reply[1] == 0 || reply[0] >> 6 == 3 {
        return Ok(Err("the server is not synchronised (stratum 0 or alarm)"));
    }
    if reply[24..32] != request[40..48] {
        return Ok(Err("the answer is to another query"));
    }
    let (Some(server_received), Some(server_sent)) =
        (from_ntp(&reply[32..40]), from_ntp(&reply[40..48]))
    else {
        return Ok(Err("the answer holds no time"));
    };
    let offset = ((server_received - sent) + (server_sent - received)) / 2;
    let round_trip = (received - sent) - (server_sent - server_received);
    Ok(Ok((offset, round_trip)))
}

fn unix_ns(at: SystemTime) -> i128 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(after) => i128::try_from(after.as_nanos()).unwrap_or(i128::MAX),
        Err(before) => -i128::try_from(before.duration().as_nanos()).unwrap_or(i128::MAX),
    }
}

/// Unix ns as an NTP timestamp: seconds since 1900 and a 32-bit fraction, big-endian.
fn to_ntp(unix_ns: i128) -> [u8; 8] {
    let ntp_ns = unix_ns + NTP_TO_UNIX_SECS * 1_000_000_000;
    let seconds = (ntp_ns / 1_000_000_000) as u32;
    let fraction = (((ntp_ns % 1_000_000_000) << 32) / 1_000_000_000) as u32;
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&seconds.to_be_bytes());
    bytes[4..].copy_from_slice(&fraction.to_be_bytes());
    bytes
}

/// An NTP timestamp as Unix ns; `None` for the zero timestamp ("unknown").
fn from_ntp(bytes: &[u8]) -> Option<i128> {
    let seconds = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?);
    let fraction = u32::from_be_bytes(bytes.get(4..8)?.try_into().ok()?);
    if seconds == 0 && fraction == 0 {
        return None;
    }
    let fraction_ns = (i128::from(fraction) * 1_000_000_000) >> 32;
    Some((i128::from(seconds) - NTP_TO_UNIX_SECS) * 1_000_000_000 + fraction_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_mock_server::SntpServer;

    #[test]
    fn ntp_timestamps_round_trip_to_the_nanosecond_resolution_of_their_fraction() {
        let unix_ns = 1_795_687_200_123_456_789_i128;
        let back = from_ntp(&to_ntp(unix_ns)).unwrap();
        // A fraction step is 2^-32 s ≈ 0.23 ns; truncation twice loses under 2 ns.
        assert!((unix_ns - back).abs() <= 2, "{back}");
        assert_eq!(from_ntp(&[0; 8]), None);
    }

    #[tokio::test]
    async fn the_offset_of_a_server_a_quarter_second_ahead_is_measured() {
        for offset_ns in [250_000_000_i64, -1_500_000_000] {
            let server = SntpServer::start(offset_ns).await.unwrap();
            let measured = measure(&server.addr().to_string()).await.unwrap();
            // Within half the round trip, plus the server's own time between its stamps.
            let error = (measured.offset_ns - offset_ns).unsigned_abs();
            assert!(
                error <= measured.round_trip_ns / 2 + 1_000_000,
                "{measured:?} against {offset_ns}"
            );
            assert_eq!(measured.reference, server.addr().to_string());
            let now = SystemTime::now();
            assert_eq!(measured.to_local(measured.to_reference(now)), now);
        }
    }

    #[tokio::test]
    async fn a_silent_reference_is_an_error_naming_it() {
        // A bound socket that never answers.
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let reference = silent.local_addr().unwrap().to_string();
        let error = measure(&reference).await.unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("clock reference {reference}: no usable answer")),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_name_without_a_port_uses_the_ntp_port() {
        assert_eq!(
            resolve("127.0.0.1").await.unwrap(),
            "127.0.0.1:123".parse().unwrap()
        );
        assert_eq!(resolve("localhost:4123").await.unwrap().port(), 4123);
    }
}
