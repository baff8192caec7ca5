//! A time server for tests of clock-offset measurement: it answers SNTP (RFC 4330)
//! requests on a loopback UDP port with its own clock moved by a fixed offset, so a test
//! knows the offset a client must measure.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

/// Seconds from the NTP era (1900) to the Unix epoch.
const NTP_TO_UNIX_SECS: u64 = 2_208_988_800;

/// An SNTP server on `127.0.0.1` whose clock reads `offset` ahead of (or, negative,
/// behind) this machine's. Stops when dropped.
#[derive(Debug)]
pub struct SntpServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl SntpServer {
    /// Binds a free port and answers until dropped. `offset_ns` is added to the local
    /// wall clock in every timestamp it sends.
    pub async fn start(offset_ns: i64) -> std::io::Result<Self> {
        let socket = UdpSocket::bind("127.0.0.1:0").await?;
        let addr = socket.local_addr()?;
        let task = tokio::spawn(async move {
            let mut request = [0u8; 68];
            while let Ok((len, from)) = socket.recv_from(&mut request).await {
                if len < 48 {
                    continue;
                }
                let received = shifted_now(offset_ns);
                let mut reply = [0u8; 48];
                reply[0] = 0x24; // no leap warning, version 4, mode 4 (server)
                reply[1] = 2; // stratum 2: synchronised to a stratum-1 server
                reply[24..32].copy_from_slice(&request[40..48]); // originate = client's transmit
                reply[32..40].copy_from_slice(&received);
                reply[40..48].copy_from_slice(&shifted_now(offset_ns));
                let _ = socket.send_to(&reply, from).await;
            }
        });
        Ok(Self { addr, task })
    }

    /// Where it listens, as `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for SntpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The local wall clock plus `offset_ns`, as an NTP timestamp (seconds since 1900 and a
/// 32-bit fraction, big-endian).
fn shifted_now(offset_ns: i64) -> [u8; 8] {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let ns = i128::try_from(unix.as_nanos()).unwrap_or(0) + i128::from(offset_ns);
    let at = Duration::from_nanos(u64::try_from(ns.max(0)).unwrap_or(u64::MAX));
    let seconds = (at.as_secs() + NTP_TO_UNIX_SECS) as u32;
    let fraction = ((u64::from(at.subsec_nanos()) << 32) / 1_000_000_000) as u32;
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&seconds.to_be_bytes());
    bytes[4..].copy_from_slice(&fraction.to_be_bytes());
    bytes
}
