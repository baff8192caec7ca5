//! `aiperf profile` against an HTTPS endpoint whose certificate no public CA signed: a
//! TLS front (rustls, a certificate made on the spot with rcgen) forwards to the
//! in-process mock server. Trusted with `--tls-ca-file`, refused with a certificate error
//! without it, accepted with a warning under `--tls-insecure-skip-verify`; HTTP/2 offered
//! only with `--http2`; the connections each reuse strategy opens.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, stat};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// A TLS endpoint on 127.0.0.1 that forwards every connection to `backend`, noting the
/// ALPN protocol each agreed on.
struct TlsFront {
    url: String,
    ca_pem: String,
    connections: Arc<AtomicUsize>,
    protocols: Arc<Mutex<Vec<Option<String>>>>,
}

async fn tls_front(backend: std::net::SocketAddr) -> TlsFront {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = CertificateDer::from(certified.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let protocols = Arc::new(Mutex::new(Vec::new()));
    let agreed = Arc::clone(&protocols);
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&connections);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            let agreed = Arc::clone(&agreed);
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return; // the client refused our certificate
                };
                let protocol = tls.get_ref().1.alpn_protocol();
                agreed
                    .lock()
                    .unwrap()
                    .push(protocol.map(|p| String::from_utf8_lossy(p).into_owned()));
                let Ok(mut plain) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    TlsFront {
        url,
        ca_pem: certified.cert.pem(),
        connections,
        protocols,
    }
}

fn run_args(front: &TlsFront, dir: &Path, extra: &str) -> Vec<String> {
    args(&format!(
        "-m mock-model --url {} --request-count 6 --concurrency 2 --isl 16 --osl 4 --artifact-dir {} {extra}",
        front.url,
        dir.display()
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_ca_is_trusted_only_when_given() {
    let server = MockServer::start(MockConfig::with_timing(0.0, 0.0))
        .await
        .unwrap();
    let front = tls_front(server.addr()).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &front.ca_pem).unwrap();

    let trusted = dir.path().join("trusted");
    let output = profile(run_args(
        &front,
        &trusted,
        &format!("--tls-ca-file {}", ca.display()),
    ))
    .await;
    assert_exit(&output, 0);
    let summary = read_json(&trusted.join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 6.0);

    let refused = dir.path().join("refused");
    let output = profile(run_args(&front, &refused, "")).await;
    assert_exit(&output, 1);
    let summary = read_json(&refused.join("profile_export_aiperf.json"));
    let error = &summary["error_summary"][0]["error_details"];
    assert_eq!(error["type"], "ClientConnectorCertificateError");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("TLS") && message.to_lowercase().contains("certificate"),
        "{message}"
    );

    let insecure = dir.path().join("insecure");
    let output = profile(run_args(&front, &insecure, "--tls-insecure-skip-verify")).await;
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("TLS certificate verification is off"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_is_negotiated_only_when_asked_for() {
    let server = MockServer::start(MockConfig::with_timing(0.0, 0.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut agreed = Vec::new();
    for (name, flag) in [("http1", ""), ("http2", "--http2")] {
        let front = tls_front(server.addr()).await;
        let ca = dir.path().join(format!("{name}.pem"));
        std::fs::write(&ca, &front.ca_pem).unwrap();
        let argv = run_args(
            &front,
            &dir.path().join(name),
            &format!("--tls-ca-file {} {flag}", ca.display()),
        );
        // The mock behind the front speaks HTTP/1.1 only, so the h2 run's requests fail
        // after the handshake; what matters here is the protocol agreed.
        profile(argv).await;
        agreed.push(front.protocols.lock().unwrap().first().cloned().flatten());
    }
    assert_eq!(agreed, [None, Some("h2".to_string())]);
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_strategies_open_the_connections_they_promise() {
    let server = MockServer::start(MockConfig::with_timing(0.0, 0.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for strategy in ["pooled", "never", "sticky-user-sessions"] {
        let front = tls_front(server.addr()).await;
        let ca = dir.path().join(format!("{strategy}.pem"));
        std::fs::write(&ca, &front.ca_pem).unwrap();
        let argv = args(&format!(
            "-m mock-model --url {} --num-sessions 4 --session-turns-mean 3 --concurrency 1 --isl 16 --osl 2 --tls-ca-file {} --connection-reuse-strategy {strategy} --no-server-metrics --artifact-dir {}",
            front.url,
            ca.display(),
            dir.path().join(strategy).display()
        ));
        let output = profile(argv).await;
        assert_exit(&output, 0);
        seen.push(front.connections.load(Ordering::SeqCst));
    }
    // 4 sessions of 3 turns, one at a time: pooled reuses one connection, never opens
    // one per request, sticky one per session.
    assert_eq!(seen, [1, 12, 4]);
}
