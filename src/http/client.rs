//! The outbound client of webhook deliveries: one POST over http or https,
//! bounded by a total timeout, to a target that must be a public address.
//!
//! Server-side request forgery is refused after resolving the name: every
//! address the name resolves to is classified ([`refused_range`]); loopback,
//! private, link-local, unique-local, CGNAT, multicast, unspecified and
//! reserved addresses (and the IPv4-mapped, IPv4-compatible, NAT64 and 6to4
//! forms of them) are refused unless the server runs with
//! `--webhook-allow-private`. The connection then goes to an address that was
//! checked, never through a second lookup, so a name that answers a public
//! address to the check and a private one to the connect (DNS rebinding)
//! gets nowhere.
//!
//! TLS is [`crate::tls`]'s: rustls with the *ring* provider and the
//! platform's roots, or only the CA certificates of `--webhook-ca-file`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Uri;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// How much of a failed answer's body is kept for the delivery log.
const ANSWER_EXCERPT_BYTES: usize = 256;

/// Where a URL points: scheme, host, port and the request target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// The host without brackets (`::1`, not `[::1]`).
    pub host: String,
    pub port: u16,
    /// `host[:port]` as the `Host` header carries it.
    pub authority: String,
    /// `/path?query`.
    pub path_and_query: String,
}

impl Target {
    /// An absolute `http` or `https` URL without user information or fragment.
    pub fn parse(url: &str) -> Result<Target, String> {
        if url.contains('#') {
            return Err("a webhook URL has no fragment (`#...`)".into());
        }
        let uri: Uri = url.parse().map_err(|_| format!("\"{url}\" is not a URL"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            Some(other) => return Err(format!("the scheme must be http or https, not {other}")),
            None => return Err("the URL must be absolute: http://... or https://...".into()),
        };
        let authority = uri
            .authority()
            .ok_or("the URL has no host")?
            .as_str()
            .to_string();
        if authority.contains('@') {
            return Err("a webhook URL carries no user name or password".into());
        }
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or("the URL has no host")?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        if port == 0 {
            return Err("port 0 cannot be connected to".into());
        }
        let path_and_query = uri
            .path_and_query()
            .map_or("/", |pq| pq.as_str())
            .to_string();
        Ok(Target {
            https,
            host: host.to_ascii_lowercase(),
            port,
            authority,
            path_and_query: if path_and_query.is_empty() {
                "/".into()
            } else {
                path_and_query
            },
        })
    }
}

/// Why an address may not be a webhook target, or `None` for a public one.
pub fn refused_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, _, _] = ip.octets();
    let reason = match (a, b) {
        (0, _) => "unspecified (0.0.0.0/8)",
        (127, _) => "loopback (127.0.0.0/8)",
        (10, _) => "private (10.0.0.0/8)",
        (172, 16..=31) => "private (172.16.0.0/12)",
        (192, 168) => "private (192.168.0.0/16)",
        (169, 254) => "link-local (169.254.0.0/16)",
        (100, 64..=127) => "shared address space, CGNAT (100.64.0.0/10)",
        (224..=239, _) => "multicast (224.0.0.0/4)",
        (240..=255, _) => "reserved or broadcast (240.0.0.0/4)",
        _ => return None,
    };
    Some(reason)
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    if ip.is_unspecified() {
        return Some("unspecified (::)");
    }
    if ip.is_loopback() {
        return Some("loopback (::1)");
    }
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated) reach
    // the IPv4 address they carry.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refused_v4(v4);
    }
    if s[..6] == [0; 6] {
        return refused_v4(embedded(s[6], s[7]));
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) also carry one.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return refused_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return refused_v4(embedded(s[1], s[2]));
    }
    match s[0] {
        x if x & 0xffc0 == 0xfe80 => Some("link-local (fe80::/10)"),
        x if x & 0xffc0 == 0xfec0 => Some("site-local, deprecated (fec0::/10)"),
        x if x & 0xfe00 == 0xfc00 => Some("unique-local (fc00::/7)"),
        x if x & 0xff00 == 0xff00 => Some("multicast (ff00::/8)"),
        _ => None,
    }
}

/// The addresses `target` may be connected to: its host resolved once, each
/// address checked. With `allow_private` every address is allowed.
pub async fn resolve(target: &Target, allow_private: bool) -> Result<Vec<SocketAddr>, String> {
    let found: Vec<SocketAddr> = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("cannot resolve {}: {e}", target.host))?
        .collect();
    if found.is_empty() {
        return Err(format!("{} resolves to no address", target.host));
    }
    if allow_private {
        return Ok(found);
    }
    match found
        .iter()
        .find_map(|a| refused_range(a.ip()).map(|why| (a.ip(), why)))
    {
        Some((ip, why)) => Err(format!(
            "{} resolves to {ip}, a {why} address; webhooks go to public addresses only \
             (the server allows others only with --webhook-allow-private)",
            target.host
        )),
        None => Ok(found),
    }
}

/// [`Target::parse`] and [`resolve`]: what creating or changing a webhook checks.
pub async fn check_url(url: &str, allow_private: bool) -> Result<Target, String> {
    let target = Target::parse(url)?;
    resolve(&target, allow_private).await?;
    Ok(target)
}

/// How the client behaves; `serve`'s options fill it.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub allow_private: bool,
    /// Trust only the CA certificates in this PEM file instead of the platform's roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// The whole exchange: resolve, connect, TLS, request, answer.
    pub timeout: Duration,
}

/// What one POST came to.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The answer's status, when one came.
    pub status: Option<u16>,
    /// Why it failed: no answer, or a status other than 2xx (with the start
    /// of the answer's body). `None` on success.
    pub error: Option<String>,
    pub duration: Duration,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        self.error.is_none()
    }
}

/// The webhook client. A `--webhook-ca-file` is read at startup (a wrong
/// one stops the start); the platform's CA certificates only when the first
/// https delivery needs them: reading and parsing the 145 files of a Debian
/// system took 6-9 ms, a third of the server's start to listening, for a
/// feature most servers never use.
#[derive(Clone)]
pub struct Client {
    tls: Arc<tokio::sync::OnceCell<tokio_rustls::TlsConnector>>,
    allow_private: bool,
    timeout: Duration,
}

/// A TLS connector trusting `roots`.
fn connector(roots: rustls::RootCertStore) -> Result<tokio_rustls::TlsConnector, String> {
    let config = crate::tls::client_config(roots, b"http/1.1")?;
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

impl Client {
    pub fn new(options: &ClientOptions) -> Result<Client, String> {
        let tls = tokio::sync::OnceCell::new();
        if let Some(path) = &options.ca_file {
            let made = connector(crate::tls::file_roots(path)?)?;
            tls.set(made)
                .map_err(|_| "the TLS settings were set twice".to_string())?;
        }
        Ok(Client {
            tls: Arc::new(tls),
            allow_private: options.allow_private,
            timeout: options.timeout,
        })
    }

    /// The TLS connector: the platform's roots are read by the first caller
    /// (off the runtime's workers); a failure is that delivery's, and the
    /// next one tries again.
    async fn tls(&self) -> Result<&tokio_rustls::TlsConnector, String> {
        self.tls
            .get_or_try_init(|| async {
                tokio::task::spawn_blocking(|| {
                    connector(crate::tls::platform_roots(
                        "https webhooks will fail (install ca-certificates or pass \
                         --webhook-ca-file)",
                    ))
                })
                .await
                .map_err(|e| format!("reading the platform's CA certificates failed: {e}"))?
            })
            .await
    }

    /// POSTs `body` to `url` with these headers (beside `Host`,
    /// `Content-Length` and `Connection: close`), within the timeout.
    pub async fn post(&self, url: &str, headers: &[(&str, &str)], body: Bytes) -> Outcome {
        let started = Instant::now();
        let exchange = self.exchange(url, headers, body);
        let (status, error) = match tokio::time::timeout(self.timeout, exchange).await {
            Err(_) => (
                None,
                Some(format!(
                    "timed out: no complete answer within {} ms",
                    self.timeout.as_millis()
                )),
            ),
            Ok(Err(error)) => (None, Some(error)),
            Ok(Ok((status, _))) if (200..300).contains(&status) => (Some(status), None),
            Ok(Ok((status, excerpt))) => {
                let mut error = format!("answered HTTP {status}");
                if !excerpt.is_empty() {
                    error.push_str(": ");
                    error.push_str(&excerpt);
                }
                (Some(status), Some(error))
            }
        };
        Outcome {
            status,
            error,
            duration: started.elapsed(),
        }
    }

    async fn exchange(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<(u16, String), String> {
        let target = Target::parse(url)?;
        let addresses = resolve(&target, self.allow_private).await?;
        let mut last_error = String::new();
        let mut stream = None;
        for address in &addresses {
            match TcpStream::connect(address).await {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last_error = format!("cannot connect to {address}: {e}"),
            }
        }
        let stream = stream.ok_or(last_error)?;
        let _ = stream.set_nodelay(true);
        let mut request = hyper::Request::post(target.path_and_query.as_str())
            .header(hyper::header::HOST, target.authority.as_str())
            .header(hyper::header::CONNECTION, "close");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(body))
            .map_err(|e| format!("cannot build the request: {e}"))?;
        if target.https {
            let name = ServerName::try_from(target.host.clone())
                .map_err(|e| format!("{} is not a TLS server name: {e}", target.host))?;
            let tls = self
                .tls()
                .await?
                .connect(name, stream)
                .await
                .map_err(|e| format!("TLS with {}: {e}", target.host))?;
            send(tls, request).await
        } else {
            send(stream, request).await
        }
    }
}

/// One request over one connection; the status and the start of the body.
async fn send<IO>(io: IO, request: hyper::Request<Full<Bytes>>) -> Result<(u16, String), String>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    let driver = AbortOnDrop(tokio::spawn(connection));
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("no answer: {}", crate::error::chain(&e)))?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut excerpt = Vec::new();
    if !(200..300).contains(&status) {
        while excerpt.len() < ANSWER_EXCERPT_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        excerpt.extend_from_slice(data);
                    }
                }
                _ => break,
            }
        }
        excerpt.truncate(ANSWER_EXCERPT_BYTES);
    }
    drop(driver);
    Ok((status, String::from_utf8_lossy(&excerpt).trim().to_string()))
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> bool {
        refused_range(text.parse().unwrap()).is_some()
    }

    #[test]
    fn private_and_special_addresses_are_refused() {
        for address in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.254",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "febf::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:c0a8:101::1",
        ] {
            assert!(refused(address), "{address} must be refused");
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "192.167.1.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "93.184.216.34",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(!refused(address), "{address} must be allowed");
        }
    }

    #[test]
    fn urls_parse_into_their_targets() {
        let t = Target::parse("https://Hooks.Example.com/in?x=1").unwrap();
        assert_eq!(
            t,
            Target {
                https: true,
                host: "hooks.example.com".into(),
                port: 443,
                authority: "Hooks.Example.com".into(),
                path_and_query: "/in?x=1".into(),
            }
        );
        let t = Target::parse("http://[::1]:8080").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 8080));
        assert_eq!(t.path_and_query, "/");
        for bad in [
            "ftp://example.com/",
            "/relative",
            "example.com/x",
            "http://user:pw@example.com/",
            "http://example.com/#frag",
            "http://example.com:0/",
            "not a url",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_loopback_target_is_refused_unless_allowed() {
        let err = check_url("http://127.0.0.1:9/x", false).await.unwrap_err();
        assert!(err.contains("loopback"), "{err}");
        let err = check_url("http://[::ffff:192.168.0.1]/", false)
            .await
            .unwrap_err();
        assert!(err.contains("private"), "{err}");
        assert!(check_url("http://127.0.0.1:9/x", true).await.is_ok());
    }

    #[tokio::test]
    async fn a_delivery_to_a_refused_address_fails_without_connecting() {
        let client = Client::new(&ClientOptions {
            allow_private: false,
            ca_file: None,
            timeout: Duration::from_secs(2),
        })
        .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!(
            "http://localhost:{}/",
            listener.local_addr().unwrap().port()
        );
        let outcome = client.post(&url, &[], Bytes::from_static(b"{}")).await;
        let error = outcome.error.unwrap();
        assert!(error.contains("loopback"), "{error}");
        assert_eq!(outcome.status, None);
        assert!(
            listener.accept().is_err(),
            "the refused address was connected to"
        );
    }

    #[tokio::test]
    async fn a_refused_connection_and_a_timeout_are_failed_outcomes() {
        let client = Client::new(&ClientOptions {
            allow_private: true,
            ca_file: None,
            timeout: Duration::from_millis(300),
        })
        .unwrap();
        // A port held bound but not listening: connections are refused,
        // and no other process can take it meanwhile.
        let held =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        let port = held.local_addr().unwrap().as_socket().unwrap().port();
        let outcome = client
            .post(&format!("http://127.0.0.1:{port}/"), &[], Bytes::new())
            .await;
        assert!(!outcome.succeeded());
        assert!(outcome.error.unwrap().contains("cannot connect"));
        // A listener that never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", silent.local_addr().unwrap());
        let outcome = client.post(&url, &[], Bytes::new()).await;
        assert!(outcome.error.unwrap().contains("timed out"));
        assert!(outcome.duration >= Duration::from_millis(300));
    }
}
