//! The rustls client configuration: ring provider, webpki + native roots, an optional
//! extra CA file, and an opt-in "accept any certificate" mode.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Why an [`HttpTransport`](crate::HttpTransport) could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TransportBuildError {
    /// The CA file could not be read or holds no PEM certificate.
    #[error("cannot use CA file {path}: {reason}")]
    CaFile {
        /// The file given.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// rustls rejected the configuration (e.g. no usable protocol version).
    #[error("invalid TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// What the TLS layer trusts.
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsOptions {
    /// A PEM file with extra trusted CA certificates.
    pub ca_file: Option<PathBuf>,
    /// Accept any server certificate (testing only).
    pub insecure_skip_verify: bool,
}

/// Builds the client configuration (without ALPN) with the ring provider, independent of any process
/// default provider.
pub(crate) fn client_config(options: &TlsOptions) -> Result<ClientConfig, TransportBuildError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let config = if options.insecure_skip_verify {
        tracing::warn!("TLS certificate verification is disabled");
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate {
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(root_store(options.ca_file.as_deref())?)
            .with_no_client_auth()
    };
    // ALPN is left to hyper-rustls, which sets it from the enabled HTTP versions.
    Ok(config)
}

/// webpki roots, the platform's roots (load errors only logged) and the CA file.
fn root_store(ca_file: Option<&Path>) -> Result<RootCertStore, TransportBuildError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    if !native.errors.is_empty() {
        tracing::debug!(errors = ?native.errors, "some platform certificates could not be loaded");
    }
    let (added, ignored) = roots.add_parsable_certificates(native.certs);
    tracing::debug!(added, ignored, "platform root certificates");
    if let Some(path) = ca_file {
        let ca_error = |reason: String| TransportBuildError::CaFile {
            path: path.to_path_buf(),
            reason,
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| ca_error(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ca_error(e.to_string()))?;
        if certs.is_empty() {
            return Err(ca_error("no PEM certificate in the file".into()));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| ca_error(e.to_string()))?;
        }
    }
    Ok(roots)
}

/// Accepts every certificate but still checks handshake signatures.
#[derive(Debug)]
struct AcceptAnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_insecure_configs_build() {
        assert!(client_config(&TlsOptions::default()).is_ok());
        let insecure = TlsOptions {
            insecure_skip_verify: true,
            ..TlsOptions::default()
        };
        assert!(client_config(&insecure).is_ok());
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_a_clear_error() {
        let missing = client_config(&TlsOptions {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        })
        .unwrap_err();
        assert!(
            matches!(missing, TransportBuildError::CaFile { .. }),
            "{missing}"
        );
        let dir = std::env::temp_dir().join(format!("aiperf-endpoints-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let error = client_config(&TlsOptions {
            ca_file: Some(empty),
            ..TlsOptions::default()
        })
        .unwrap_err();
        assert!(error.to_string().contains("no PEM certificate"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
