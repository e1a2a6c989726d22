//! TLS for PostgreSQL connections: the driver's `MakeTlsConnect` written over
//! the `tokio-rustls`/`rustls` (*ring*) the webhook client uses
//! ([`crate::tls`]), so no OpenSSL and no aws-lc-rs enter the binary.
//!
//! `sslmode` ([`SslMode`]) decides what is checked, as in libpq: `prefer` and
//! `require` encrypt but accept any certificate (the handshake's signatures
//! are still verified, so the session key belongs to the certificate shown);
//! `verify-full` needs a chain to a trusted root (the system's, or
//! `sslrootcert`'s) for the host name connected to. `disable` never starts a
//! handshake. Over a Unix socket the driver never asks for TLS.
//!
//! Channel binding (SCRAM-SHA-256-PLUS) is not offered: the connection
//! reports no binding data, and the driver then authenticates with plain
//! SCRAM-SHA-256, which the server accepts unless it demands binding.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

use super::config::{ConnectOptions, SslMode};
use super::error::{Error, Result};

/// PostgreSQL's ALPN protocol name (required by servers for direct TLS,
/// harmless for the classic negotiation).
const ALPN: &[u8] = b"postgresql";

/// Makes one TLS connector per connection attempt, for the host attempted.
#[derive(Clone)]
pub struct MakeRustlsConnect {
    config: Arc<rustls::ClientConfig>,
}

impl MakeRustlsConnect {
    /// The connector for these options' `sslmode` and `sslrootcert`.
    pub fn new(options: &ConnectOptions) -> Result<MakeRustlsConnect> {
        let roots = || -> Result<rustls::RootCertStore> {
            match &options.root_cert {
                Some(path) => crate::tls::file_roots(path).map_err(|what| Error::Config {
                    what: format!("sslrootcert: {what}"),
                    source: None,
                }),
                None => Ok(crate::tls::platform_roots(
                    "PostgreSQL connections with sslmode=verify-full will fail (install \
                     ca-certificates or give sslrootcert=FILE)",
                )),
            }
        };
        let config = match options.ssl_mode {
            SslMode::VerifyFull => {
                crate::tls::client_config(roots()?, ALPN).map_err(Error::config)?
            }
            SslMode::Disable | SslMode::Prefer | SslMode::Require => {
                let mut config = crate::tls::builder()
                    .map_err(Error::config)?
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyCertificate(
                        crate::tls::provider(),
                    )))
                    .with_no_client_auth();
                config.alpn_protocols = vec![ALPN.to_vec()];
                config
            }
        };
        Ok(MakeRustlsConnect {
            config: Arc::new(config),
        })
    }
}

impl<S> MakeTlsConnect<S> for MakeRustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    /// Called for every host, a Unix socket's directory too (over which the
    /// driver never starts TLS): a name that is not a DNS name or an address
    /// fails the handshake, not the connection attempt.
    fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnect> {
        Ok(RustlsConnect {
            connector: tokio_rustls::TlsConnector::from(self.config.clone()),
            name: ServerName::try_from(domain.to_owned())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e)),
        })
    }
}

/// One handshake with one host.
pub struct RustlsConnect {
    connector: tokio_rustls::TlsConnector,
    name: io::Result<ServerName<'static>>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let stream = self.connector.connect(self.name?, stream).await?;
            Ok(RustlsStream(stream))
        })
    }
}

/// A TLS session over the driver's socket.
pub struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// `prefer` and `require`: any certificate is accepted (libpq's meaning of
/// those modes); the handshake signatures are verified with the provider's
/// algorithms all the same.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
