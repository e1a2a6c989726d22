//! A real PostgreSQL server for the tests: one cluster per test binary,
//! started on first use, and a fresh database per test.
//!
//! The cluster is made by `initdb --no-locale -E UTF8 -A trust` (collation C,
//! as Quayside requires) in a temporary directory, and listens only on a Unix
//! socket in that directory (`listen_addresses=''`). The server binaries come
//! from `QUAYSIDE_PG_BIN` if set, else the newest `/usr/lib/postgresql/*/bin`
//! (Debian's `postgresql` package). initdb refuses to run as root: as root,
//! every server command runs as the `postgres` user through
//! `runuser -u postgres --`, in a directory that user made.
//!
//! No server outlives the test process:
//! - on a normal exit, an `atexit` hook stops the cluster (`pg_ctl stop -m
//!   immediate`, waiting) and removes its directory before the process ends
//!   (statics are never dropped, so `Drop` cannot do it);
//! - if the process dies any other way (a panic that aborts, SIGKILL), a
//!   watchdog does the same: a shell in a session of its own, blocked reading
//!   a pipe whose only writer is this process. The kernel closes that pipe
//!   when the process ends, however it ends, and the read returns.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Once, OnceLock};

use quayside::db::pg::{Client, ConnectOptions};

pub struct Cluster {
    bin: PathBuf,
    /// The cluster's directory: `data/` (the cluster), the socket, the log.
    dir: PathBuf,
    as_postgres: bool,
    next_database: AtomicU32,
    /// The watchdog, with its stdin held open until this process ends (it
    /// outlives this process on purpose, and is never waited for).
    _watchdog: Child,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The stop hook is registered once, by the first cluster started.
static STOP_AT_EXIT: Once = Once::new();

/// The test binary's cluster, started on first use.
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| Cluster::start(|_| String::new()))
}

/// A second cluster that also listens on 127.0.0.1 with TLS on, for the TLS
/// tests: its certificate, for `localhost` only, is signed by a CA made for
/// this run (`ca`, a PEM file).
pub struct TlsCluster {
    pub cluster: Cluster,
    pub port: u16,
    pub ca: PathBuf,
}

static TLS_CLUSTER: OnceLock<TlsCluster> = OnceLock::new();

pub fn tls_cluster() -> &'static TlsCluster {
    TLS_CLUSTER.get_or_init(|| {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "Quayside test CA");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let mut port = 0;
        let cluster = Cluster::start(|cluster| {
            cluster.write_file("server.crt", cert.pem().as_bytes(), 0o644);
            cluster.write_file("server.key", key.serialize_pem().as_bytes(), 0o600);
            port = free_port();
            format!(
                "-c listen_addresses=127.0.0.1 -c port={port} -c ssl=on \
                 -c ssl_cert_file={dir}/server.crt -c ssl_key_file={dir}/server.key",
                dir = cluster.dir.display()
            )
        });
        let ca = cluster.dir.join("ca.pem");
        cluster.write_file("ca.pem", ca_cert.pem().as_bytes(), 0o644);
        TlsCluster { cluster, port, ca }
    })
}

/// A TCP port free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Where the server binaries are, or a panic that says how to install them:
/// a missing PostgreSQL fails the tests, never skips them.
fn server_binaries() -> PathBuf {
    if let Some(dir) = std::env::var_os("QUAYSIDE_PG_BIN") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("initdb").is_file(),
            "QUAYSIDE_PG_BIN={} holds no initdb",
            dir.display()
        );
        return dir;
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "the PostgreSQL tests need a PostgreSQL server's binaries (initdb, pg_ctl, \
             postgres) and found none under /usr/lib/postgresql/*/bin: install them with \
             `apt-get install -y postgresql` (Debian; .ci/run does this), or set \
             QUAYSIDE_PG_BIN to the directory that holds initdb"
        ),
    }
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

impl Cluster {
    /// Makes and starts a cluster. `extra` gives more server settings (`-c
    /// name=value …`) once the cluster exists and before it starts; it may
    /// write files into the cluster's directory ([`Cluster::write_file`]).
    fn start(mut extra: impl FnMut(&Cluster) -> String) -> Cluster {
        let bin = server_binaries();
        let as_postgres = running_as_root();
        let mut mktemp = Self::command_as(as_postgres, Path::new("mktemp"));
        let made = mktemp
            .args(["-d", "/tmp/quayside-pg.XXXXXX"])
            .output()
            .expect("mktemp");
        assert!(
            made.status.success(),
            "cannot make the cluster's directory{}: {}",
            if as_postgres {
                " as the postgres user (runuser -u postgres)"
            } else {
                ""
            },
            String::from_utf8_lossy(&made.stderr)
        );
        let dir = PathBuf::from(String::from_utf8(made.stdout).unwrap().trim());
        let watchdog = Self::watchdog(&bin, &dir, as_postgres);
        let cluster = Cluster {
            bin,
            dir,
            as_postgres,
            next_database: AtomicU32::new(0),
            _watchdog: watchdog,
        };
        cluster
            .run(
                "initdb",
                &[
                    "-D",
                    cluster.data().to_str().unwrap(),
                    "--no-locale",
                    "-E",
                    "UTF8",
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "--no-sync",
                ],
            )
            .unwrap_or_else(|failure| panic!("{failure}"));
        let log = cluster.dir.join("server.log");
        // A setting of `extra` may be refused (a port taken meanwhile by
        // another process): a new one is tried, three times in all.
        let mut attempts = 0;
        loop {
            let server_options = format!(
                "-c listen_addresses='' -k {} -c fsync=off -c full_page_writes=off \
                 -c synchronous_commit=off -c max_connections=200 {}",
                cluster.dir.display(),
                extra(&cluster)
            );
            let started = cluster.run(
                "pg_ctl",
                &[
                    "start",
                    "-w",
                    "-t",
                    "120",
                    "-D",
                    cluster.data().to_str().unwrap(),
                    "-l",
                    log.to_str().unwrap(),
                    "-o",
                    &server_options,
                ],
            );
            attempts += 1;
            match started {
                Ok(()) => break,
                Err(failure) if attempts == 3 => panic!("{failure}"),
                Err(_) => {}
            }
        }
        STOP_AT_EXIT.call_once(register_stop_at_exit);
        cluster
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A command as the `postgres` user when running as root.
    fn command_as(as_postgres: bool, program: &Path) -> Command {
        if as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    /// Writes a file into the cluster's directory, owned by the cluster's
    /// user (the server reads its key only if it owns it).
    pub fn write_file(&self, name: &str, contents: &[u8], mode: u32) {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let path = self.dir.join(name);
        std::fs::write(&path, contents).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let owner = std::fs::metadata(&self.dir).unwrap();
        std::os::unix::fs::chown(&path, Some(owner.uid()), Some(owner.gid())).unwrap();
    }

    /// Runs one of the server binaries to completion, its output to a file
    /// in the cluster's directory (a pipe would be inherited by the server
    /// that `pg_ctl start` leaves running, and never close); if it fails, an
    /// error with that output and the server's log.
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let out_path = self.dir.join(format!("{program}.out"));
        let out = File::create(&out_path).expect("create the command's output file");
        let status = Self::command_as(self.as_postgres, &self.bin.join(program))
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        if !status.success() {
            let output = std::fs::read_to_string(&out_path).unwrap_or_default();
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            return Err(format!(
                "{program} failed ({status}):\n{output}\nserver log:\n{log}"
            ));
        }
        Ok(())
    }

    /// Starts the watchdog that stops the cluster and removes its directory
    /// once this process has ended (see the module documentation).
    fn watchdog(bin: &Path, dir: &Path, as_postgres: bool) -> Child {
        let runuser = if as_postgres {
            "runuser -u postgres -- "
        } else {
            ""
        };
        // A process killed while initdb or the server's start was still under
        // way leaves them running a moment longer: the stop and the removal
        // are tried again until the directory is gone (a server whose data
        // directory vanishes while it starts fails to start).
        let script = format!(
            "trap '' INT TERM HUP; read _ignored; \
             for attempt in 1 2 3 4 5 6 7 8 9 10; do \
                 {runuser}'{pg_ctl}' stop -m immediate -w -D '{dir}/data' >/dev/null 2>&1; \
                 rm -rf '{dir}' 2>/dev/null; \
                 [ -e '{dir}' ] || break; \
                 sleep 1; \
             done",
            pg_ctl = bin.join("pg_ctl").display(),
            dir = dir.display(),
        );
        Command::new("setsid")
            .args(["sh", "-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the cluster's watchdog (setsid sh)")
    }

    /// Connection options for the maintenance database `postgres`.
    pub fn admin(&self) -> ConnectOptions {
        ConnectOptions::parse(&format!(
            "host={} user=postgres dbname=postgres sslmode=disable",
            self.dir.display()
        ))
        .unwrap()
    }

    /// Creates a new, empty database (`t_<n>`, collation C from template1);
    /// answers its name.
    fn create_database(&self) -> String {
        let n = self.next_database.fetch_add(1, Ordering::Relaxed);
        let name = format!("t_{n}");
        let admin = Client::connect(&self.admin()).expect("connect to the test cluster");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create a test database");
        name
    }

    /// A new, empty database.
    pub fn database(&self) -> ConnectOptions {
        self.admin().with_dbname(&self.create_database())
    }

    /// A new, empty database as a `--database` connection string.
    pub fn database_string(&self) -> String {
        let name = self.create_database();
        format!(
            "host={} user=postgres dbname={name} sslmode=disable",
            self.dir.display()
        )
    }

    /// A database with the given collation (from template0, which allows it).
    pub fn database_with_collation(&self, collation: &str) -> ConnectOptions {
        let n = self.next_database.fetch_add(1, Ordering::Relaxed);
        let name = format!("t_{n}");
        let admin = Client::connect(&self.admin()).expect("connect to the test cluster");
        admin
            .batch_execute(&format!(
                "CREATE DATABASE {name} TEMPLATE template0 LC_COLLATE '{collation}' \
                 LC_CTYPE 'C'"
            ))
            .expect("create a test database");
        self.admin().with_dbname(&name)
    }

    fn stop(&self) {
        let _ = Self::command_as(self.as_postgres, &self.bin.join("pg_ctl"))
            .args(["stop", "-m", "immediate", "-w", "-D"])
            .arg(self.data())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Registers [`stop_at_exit`] with the C library's `atexit`, which runs it
/// when the test binary's `main` returns or calls `exit`.
fn register_stop_at_exit() {
    unsafe extern "C" {
        fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
    }
    // SAFETY: `atexit` is the C standard library's; the callback is a plain
    // `extern "C" fn` with no arguments, valid for the life of the process.
    let registered = unsafe { atexit(stop_at_exit) };
    assert_eq!(registered, 0, "atexit refused the cluster's stop hook");
}

extern "C" fn stop_at_exit() {
    if let Some(cluster) = CLUSTER.get() {
        cluster.stop();
    }
    if let Some(tls) = TLS_CLUSTER.get() {
        tls.cluster.stop();
    }
}
