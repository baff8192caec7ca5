//! The listening socket: an accept queue that a burst of hundreds of new connections fits
//! in, as a real server's does.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use aiperf_mock_server::{MockConfig, MockServer};

/// More connections than the 128 `TcpListener::bind` queues.
const BURST: usize = 300;

#[test]
fn the_accept_queue_holds_a_burst_of_new_connections() {
    // The kernel caps every queue at net.core.somaxconn (4096 since Linux 5.4).
    let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let burst = BURST.min(somaxconn);
    let (address_tx, address_rx) = mpsc::channel();
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let server = MockServer::start(MockConfig::fast()).await.unwrap();
            address_tx.send(server.addr()).unwrap();
            // The accept loop runs on this thread, which waits here: until the gate opens,
            // every new connection has to wait in the kernel's accept queue.
            let _ = gate_rx.recv();
        });
    });
    let address = address_rx.recv().unwrap();
    // A connection the queue has no room for gets no answer to its SYN: it times out
    // (and with a 1-s retransmission, a client waits a second).
    let connections: Vec<TcpStream> = (0..burst)
        .map_while(|_| TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok())
        .collect();
    gate_tx.send(()).unwrap();
    server.join().unwrap();
    assert_eq!(connections.len(), burst);
}
