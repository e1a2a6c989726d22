//! Where and how to connect: a `--database` string in either of libpq's two
//! forms, `postgres://USER[:PASS]@HOST[:PORT]/DB[?k=v&…]` or key-value
//! (`host=/run/postgresql dbname=quayside user=quayside`; a host starting
//! with `/` is a Unix socket directory).
//!
//! `tokio_postgres::Config` parses both forms, but knows `sslmode` only up to
//! `require`: this module takes `sslmode` (also `verify-full`) and
//! `sslrootcert` out of the string first and hands the rest to it.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::error::{Error, Result};

/// libpq's `sslmode`, the values this layer implements. As in libpq,
/// `prefer` and `require` encrypt without checking who answers; only
/// `verify-full` checks the certificate chain and the host name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// TLS if the server offers it, else plain (libpq's default).
    Prefer,
    /// TLS or no connection; the certificate is not checked.
    Require,
    /// TLS, a certificate chain to a trusted root, for the host connected to.
    VerifyFull,
}

impl SslMode {
    pub fn parse(value: &str) -> Result<SslMode> {
        match value {
            "disable" => Ok(SslMode::Disable),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-full" => Ok(SslMode::VerifyFull),
            "allow" | "verify-ca" => Err(Error::config(format!(
                "sslmode={value} is not supported: use disable, prefer, require or verify-full"
            ))),
            other => Err(Error::config(format!(
                "sslmode={other:?} is not an sslmode: use disable, prefer, require or verify-full"
            ))),
        }
    }

    /// What the driver is told: it only decides whether to ask for TLS; the
    /// checking is ours ([`super::tls`]).
    fn driver(self) -> tokio_postgres::config::SslMode {
        match self {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyFull => tokio_postgres::config::SslMode::Require,
        }
    }
}

/// How long a connection attempt may take when the string does not say
/// (`connect_timeout`); the driver's own default is to wait for ever.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed connection string.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    pub(super) config: tokio_postgres::Config,
    pub ssl_mode: SslMode,
    /// `sslrootcert`: the CA certificates (PEM) that `verify-full` trusts,
    /// instead of the system's.
    pub root_cert: Option<PathBuf>,
}

/// libpq's connection parameter keywords: a string starting with `KEYWORD=`
/// is a key-value connection string.
const KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "options",
    "application_name",
    "connect_timeout",
    "sslmode",
    "sslrootcert",
    "target_session_attrs",
    "keepalives",
    "keepalives_idle",
];

/// Whether a `--database` value names a PostgreSQL database rather than an
/// SQLite file: a `postgres://` or `postgresql://` URL, or a key-value string
/// whose first word is one of libpq's keywords (`host=…`, `dbname=…`).
pub fn is_postgres(database: &str) -> bool {
    let text = database.trim_start();
    let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        return true;
    }
    text.split_once('=').is_some_and(|(key, _)| {
        let key = key.trim_end();
        KEYWORDS.contains(&key)
    })
}

impl ConnectOptions {
    /// Parses a connection string in either form. Refuses one that names no
    /// user or no host (the driver would guess the user from the system), and
    /// sslmodes this layer does not implement.
    pub fn parse(database: &str) -> Result<ConnectOptions> {
        if !is_postgres(database) {
            return Err(Error::config(
                "not a PostgreSQL connection string: expected postgres://USER@HOST/DB or \
                 host=... dbname=... user=...",
            ));
        }
        let (rest, ssl_mode, root_cert) = take_ssl_settings(database)?;
        let mut config =
            tokio_postgres::Config::from_str(&rest).map_err(|source| Error::Config {
                what: "invalid PostgreSQL connection string".into(),
                source: Some(Box::new(source)),
            })?;
        if config.get_user().is_none() {
            return Err(Error::config(
                "the PostgreSQL connection string names no user: add USER@ before the host, \
                 or user=...",
            ));
        }
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            return Err(Error::config(
                "the PostgreSQL connection string names no host: postgres://USER@HOST/DB, or \
                 host=/path/to/socket/directory",
            ));
        }
        if config.get_dbname().is_none() {
            return Err(Error::config(
                "the PostgreSQL connection string names no database: add /DB after the host, \
                 or dbname=...",
            ));
        }
        if ssl_mode == SslMode::VerifyFull && !config.get_hostaddrs().is_empty() {
            // The name checked must be the one the administrator wrote.
            return Err(Error::config(
                "sslmode=verify-full checks the server's name: give host=NAME, not hostaddr",
            ));
        }
        config.ssl_mode(ssl_mode.driver());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("quayside");
        }
        // A partial index on `kind = 'job'` is usable with `kind = $1` only in
        // a plan made for the value (docs/design/postgresql.md, 1.1). The
        // writer's and the CLI's connections set `auto` after connecting
        // (`pg::KEEP_PLANS`): they find rows by key.
        let options = match config.get_options() {
            Some(given) => format!("{given} -c plan_cache_mode=force_custom_plan"),
            None => "-c plan_cache_mode=force_custom_plan".to_owned(),
        };
        config.options(&options);
        Ok(ConnectOptions {
            config,
            ssl_mode,
            root_cert,
        })
    }

    /// The database as a log names it: `postgresql://user@host:port/db`,
    /// never the password.
    pub fn describe(&self) -> String {
        let host = match self.config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(name)) => name.clone(),
            #[cfg(unix)]
            Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => String::new(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        format!(
            "postgresql://{}@{host}:{port}/{}",
            self.user(),
            self.dbname()
        )
    }

    pub fn user(&self) -> &str {
        self.config.get_user().unwrap_or_default()
    }

    pub fn dbname(&self) -> &str {
        self.config.get_dbname().unwrap_or_default()
    }

    /// A copy that connects to another database of the same server (tests,
    /// and `CREATE DATABASE` run from the maintenance database).
    pub fn with_dbname(&self, dbname: &str) -> ConnectOptions {
        let mut other = self.clone();
        other.config.dbname(dbname);
        other
    }
}

/// Takes `sslmode` and `sslrootcert` out of a connection string: the rest of
/// the string, the mode (libpq's default `prefer` when absent), the root file.
fn take_ssl_settings(database: &str) -> Result<(String, SslMode, Option<PathBuf>)> {
    let mut ssl_mode = SslMode::Prefer;
    let mut root_cert = None;
    let mut take = |key: &str, value: &str| -> Result<bool> {
        match key {
            "sslmode" => ssl_mode = SslMode::parse(value)?,
            "sslrootcert" => root_cert = Some(PathBuf::from(value)),
            _ => return Ok(false),
        }
        Ok(true)
    };
    let text = database.trim();
    let rest = if text.contains("://") {
        match text.split_once('?') {
            None => text.to_owned(),
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(key, &percent_decode(value)?)? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        let mut rest = String::with_capacity(text.len());
        for (key, value, span) in key_values(text)? {
            if !take(key, &value)? {
                rest.push_str(&text[span]);
                rest.push(' ');
            }
        }
        rest
    };
    Ok((rest, ssl_mode, root_cert))
}

/// The `key = value` pairs of a key-value connection string, each with its
/// text's span. A value is a word or a single-quoted string in which `\'` and
/// `\\` stand for `'` and `\`.
fn key_values(text: &str) -> Result<Vec<(&str, String, std::ops::Range<usize>)>> {
    let bytes = text.as_bytes();
    let mut pairs = Vec::new();
    let mut i = 0;
    let skip_spaces = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_spaces(i);
        if i == bytes.len() {
            return Ok(pairs);
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &text[start..i];
        i = skip_spaces(i);
        if bytes.get(i) != Some(&b'=') {
            return Err(Error::config(format!(
                "invalid PostgreSQL connection string: {key:?} is not followed by ="
            )));
        }
        i = skip_spaces(i + 1);
        let mut value = String::new();
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => {
                        return Err(Error::config(format!(
                            "invalid PostgreSQL connection string: the quoted value of {key} \
                             never ends"
                        )));
                    }
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < bytes.len() => {
                        value.push(char::from(bytes[i + 1]));
                        i += 2;
                    }
                    Some(_) => {
                        let c = text[i..].chars().next().unwrap_or_default();
                        value.push(c);
                        i += c.len_utf8();
                    }
                }
            }
        } else {
            let from = i;
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            value.push_str(&text[from..i]);
        }
        pairs.push((key, value, start..i));
    }
}

fn percent_decode(text: &str) -> Result<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let byte = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| {
                    Error::config(format!(
                        "invalid PostgreSQL URL: bad percent escape in {text:?}"
                    ))
                })?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| Error::config(format!("invalid PostgreSQL URL: {text:?} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_postgres::config::Host;

    #[test]
    fn postgres_strings_are_told_from_file_paths() {
        for yes in [
            "postgres://u@h/d",
            "postgresql://u@h/d",
            "POSTGRES://u@h/d",
            "host=/run/postgresql dbname=q user=q",
            "  dbname = q host=h user=u",
            "user=q host=h dbname=q",
        ] {
            assert!(is_postgres(yes), "{yes}");
        }
        for no in [
            "data.db",
            "/var/lib/quayside/data.db",
            "./postgres/data.db",
            "weird=name.db",
            "",
            "postgres:/u@h/d",
        ] {
            assert!(!is_postgres(no), "{no}");
        }
    }

    #[test]
    fn a_url_gives_user_password_host_port_and_database() {
        let o = ConnectOptions::parse("postgres://alice:s%40cret@db.example:6432/quay").unwrap();
        assert_eq!(o.user(), "alice");
        assert_eq!(o.config.get_password(), Some(&b"s@cret"[..]));
        assert_eq!(o.config.get_hosts(), [Host::Tcp("db.example".into())]);
        assert_eq!(o.config.get_ports(), [6432]);
        assert_eq!(o.dbname(), "quay");
        assert_eq!(o.ssl_mode, SslMode::Prefer);
        assert_eq!(o.config.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
        assert_eq!(
            o.config.get_options(),
            Some("-c plan_cache_mode=force_custom_plan")
        );
    }

    #[test]
    fn a_key_value_string_with_a_socket_directory_parses() {
        let o = ConnectOptions::parse(
            "host=/run/postgresql dbname=quay user=quay sslmode=disable options='-c x=1'",
        )
        .unwrap();
        assert_eq!(o.config.get_hosts(), [Host::Unix("/run/postgresql".into())]);
        assert_eq!(o.dbname(), "quay");
        assert_eq!(o.ssl_mode, SslMode::Disable);
        assert_eq!(
            o.config.get_options(),
            Some("-c x=1 -c plan_cache_mode=force_custom_plan")
        );
    }

    #[test]
    fn sslmode_and_sslrootcert_are_taken_in_both_forms() {
        let o = ConnectOptions::parse(
            "postgres://u@h/d?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
        )
        .unwrap();
        assert_eq!(o.ssl_mode, SslMode::VerifyFull);
        assert_eq!(o.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(o.config.get_application_name(), Some("x"));
        assert_eq!(
            o.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        let o = ConnectOptions::parse(
            "host=h user=u dbname=d sslmode = verify-full sslrootcert='/a b/ca.pem'",
        )
        .unwrap();
        assert_eq!(o.ssl_mode, SslMode::VerifyFull);
        assert_eq!(o.root_cert, Some(PathBuf::from("/a b/ca.pem")));
        for (mode, expected, driver) in [
            (
                "disable",
                SslMode::Disable,
                tokio_postgres::config::SslMode::Disable,
            ),
            (
                "prefer",
                SslMode::Prefer,
                tokio_postgres::config::SslMode::Prefer,
            ),
            (
                "require",
                SslMode::Require,
                tokio_postgres::config::SslMode::Require,
            ),
        ] {
            let o = ConnectOptions::parse(&format!("postgres://u@h/d?sslmode={mode}")).unwrap();
            assert_eq!(o.ssl_mode, expected);
            assert_eq!(o.config.get_ssl_mode(), driver);
        }
    }

    #[test]
    fn sslmode_values_parse_or_are_refused_with_the_choices() {
        assert_eq!(SslMode::parse("disable").unwrap(), SslMode::Disable);
        assert_eq!(SslMode::parse("prefer").unwrap(), SslMode::Prefer);
        assert_eq!(SslMode::parse("require").unwrap(), SslMode::Require);
        assert_eq!(SslMode::parse("verify-full").unwrap(), SslMode::VerifyFull);
        for bad in ["verify-ca", "allow", "on", "", "Require"] {
            let message = SslMode::parse(bad).unwrap_err().to_string();
            assert!(
                message.contains("disable, prefer, require or verify-full"),
                "{bad}: {message}"
            );
        }
    }

    #[test]
    fn malformed_strings_are_refused_with_a_reason() {
        let refused = |text: &str, expected: &str| {
            let message = ConnectOptions::parse(text).unwrap_err().to_string();
            assert!(message.contains(expected), "{text}: {message}");
        };
        refused("data.db", "not a PostgreSQL connection string");
        refused("postgres://h/d", "names no user");
        refused("host=/tmp dbname=d", "names no user");
        refused("postgres://u@/d", "names no host");
        refused("user=u dbname=d", "names no host");
        refused("postgres://u@h", "names no database");
        refused(
            "postgres://u@h:notaport/d",
            "invalid PostgreSQL connection string",
        );
        refused("postgres://u@h/d?sslmode=verify-ca", "not supported");
        refused("postgres://u@h/d?sslmode=%zz", "bad percent escape");
        refused("host=h user=u dbname", "not followed by =");
        refused("host=h user='u dbname=d", "never ends");
        refused(
            "host=h user=u dbname=d bogus=1",
            "invalid PostgreSQL connection string",
        );
        refused(
            "hostaddr=127.0.0.1 user=u dbname=d sslmode=verify-full",
            "give host=NAME",
        );
    }
}
