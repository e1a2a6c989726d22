//! TLS client settings shared by the webhook client ([`crate::http::client`])
//! and the PostgreSQL connections ([`crate::db::pg`]): rustls with the *ring*
//! provider (no aws-lc-rs: the binary stays static), trusting either the
//! platform's roots (`rustls-native-certs` reads the system's CA bundle, so the
//! administrator's trust store applies and follows the distribution's
//! updates) or only the certificates of a PEM file.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The platform's CA certificates. Unreadable entries and an empty store
/// are logged, with `consequence` saying what then fails and how to fix it.
pub fn platform_roots(consequence: &str) -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for error in &native.errors {
        log::warn!("reading the platform's CA certificates: {error}");
    }
    let (added, _) = roots.add_parsable_certificates(native.certs);
    if added == 0 {
        log::warn!("no CA certificates found on this system: {consequence}");
    }
    roots
}

/// The CA certificates of a PEM file; an error if it holds none.
pub fn file_roots(path: &Path) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(read_pem_certificates(path)?);
    if added == 0 {
        return Err(format!("{} holds no usable CA certificate", path.display()));
    }
    Ok(roots)
}

/// The *ring* provider, shared by every configuration made here.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client configuration on the *ring* provider with rustls' safe default
/// protocol versions, waiting for its certificate verifier.
pub fn builder()
-> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>, String> {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS settings: {e}"))
}

/// A client configuration that trusts `roots`, offering `alpn`.
pub fn client_config(
    roots: rustls::RootCertStore,
    alpn: &[u8],
) -> Result<rustls::ClientConfig, String> {
    let mut config = builder()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(config)
}

fn read_pem_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{} is not a PEM certificate file: {e}", path.display()))
}
