//! The command line: `serve` and the `user` commands.

use std::io::{BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use log::LevelFilter;

use crate::app::{App, Settings};
use crate::auth::{accounts, password};
use crate::error::BoxError;
use crate::http::client::{Client, ClientOptions};
use crate::{clock, db};

/// Connections served at once, by default (`--max-connections`).
const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// Descriptors kept for everything but connections: the data file's
/// connections (three files each), the logs, the runtime's own.
const DESCRIPTOR_RESERVE: usize = 128;

/// What a command answers: an error is printed with its whole source chain
/// (`cannot open x.db: unable to open database file: ...`) and exits 1.
type CliResult = Result<(), BoxError>;

#[derive(Parser, Debug)]
#[command(
    name = "quayside",
    version,
    about = "Cargo-inspection data exchange server in one SQLite file"
)]
struct Cli {
    /// The data file; created on first use.
    #[arg(
        long,
        global = true,
        env = "QUAYSIDE_DATA",
        default_value = "quayside.db"
    )]
    data: PathBuf,
    /// A PostgreSQL database instead of the data file:
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...]`, or the
    /// key-value form (`host=/run/postgresql dbname=quayside user=quayside`).
    /// Its collation must be C.
    #[arg(long, global = true, env = "QUAYSIDE_DATABASE")]
    database: Option<String>,
    /// Log level: error, warn, info, debug or trace.
    #[arg(
        long,
        global = true,
        env = "QUAYSIDE_LOG_LEVEL",
        default_value = "info"
    )]
    log_level: LevelFilter,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve both services on one listener.
    Serve(Box<ServeArgs>),
    /// Manage web service accounts.
    #[command(subcommand)]
    User(UserCommand),
    /// Copy the data file consistently while the server runs (SQLite online backup).
    Backup {
        /// Where to write the copy; must not exist yet.
        out: PathBuf,
    },
    /// Run SQLite's integrity and foreign-key checks (and Quayside's own); exit 1 on a problem.
    Check,
    /// Load a UN/LOCODE code list (code-list.csv) into the ports and inland facilities catalogs.
    ImportUnlocode {
        /// The code list CSV.
        file: PathBuf,
        /// Username recorded as creator/modifier of what the import writes.
        #[arg(long, default_value = "unlocode-import")]
        user: String,
    },
    /// Copy a data file into an empty PostgreSQL database (every record, file,
    /// account and the change log), check the copy, and commit it; the data
    /// file is only read and keeps working.
    Migrate {
        /// The data file to copy.
        #[arg(long)]
        from: PathBuf,
        /// The PostgreSQL database to copy it into (a connection string, as
        /// `--database` takes); it must hold no records.
        #[arg(long)]
        to: String,
    },
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "QUAYSIDE_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Seconds a session may go unused before it expires (sliding).
    #[arg(long, default_value_t = 8 * 3600)]
    session_idle_secs: u64,
    /// Seconds a session lives at most, used or not.
    #[arg(long, default_value_t = 7 * 24 * 3600)]
    session_max_secs: u64,
    /// Seconds to let requests in flight finish on SIGINT/SIGTERM.
    #[arg(long, default_value_t = 10)]
    shutdown_grace_secs: u64,
    /// Largest upload, in MiB.
    #[arg(long, default_value_t = 256)]
    max_upload_mb: u64,
    /// Uploads in progress at once; one more is answered 503 with Retry-After
    /// before its body is read.
    #[arg(long, default_value_t = crate::app::DEFAULT_MAX_UPLOADS)]
    max_uploads: usize,
    /// Connections served at once. Beyond them a new connection takes the
    /// place of the one idle the longest; when none is idle, it is answered
    /// 503 with Retry-After (`/healthz` still answers). Lowered to fit the
    /// process's descriptor limit.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Milliseconds between looks at the data file's free pages (given back
    /// to the file system in the background when there are many).
    #[arg(long, hide = true, default_value_t = 10_000)]
    vacuum_every_ms: u64,
    /// Read connections in the pool.
    #[arg(long, default_value_t = 8)]
    readers: u32,
    /// Where the access log (one line per request, at log level info) goes:
    /// `stderr`, `off`, or a file (appended to; reopened on SIGHUP).
    #[arg(long, env = "QUAYSIDE_ACCESS_LOG", default_value = "stderr")]
    access_log: crate::http::access_log::Target,
    /// Access lines held for the writer before new ones are dropped (counted).
    #[arg(long, hide = true, default_value_t = crate::http::access_log::Options::default().capacity)]
    access_log_queue_lines: usize,
    /// Milliseconds between the access log writer's drains of its queue.
    #[arg(long, hide = true, default_value_t = 100)]
    access_log_flush_ms: u64,
    /// Seconds a client may take to send its request headers.
    #[arg(long, hide = true, default_value_t = 15)]
    header_timeout_secs: u64,
    /// Seconds to wait for the next piece of a request body before answering 408.
    #[arg(long, hide = true, default_value_t = 30)]
    body_timeout_secs: u64,
    /// Cap on the data file's pages (SQLite max_page_count), to test a full disk.
    #[arg(long, hide = true)]
    max_page_count: Option<u64>,
    /// Days the change log keeps an entry; older ones are removed in the
    /// background, and a feed cursor from before them answers 410.
    #[arg(long, default_value_t = 30)]
    changes_retention_days: u64,
    /// Seconds the change log keeps an entry, instead of days (tests).
    #[arg(long, hide = true)]
    changes_retention_secs: Option<u64>,
    /// Milliseconds between heartbeats of an idle live change stream.
    #[arg(long, hide = true, default_value_t = 15_000)]
    changes_heartbeat_ms: u64,
    /// How often retention runs, in milliseconds.
    #[arg(long, hide = true, default_value_t = 3_600_000)]
    changes_trim_every_ms: u64,
    /// PBKDF2 iterations for new hashes (lowered only to make tests fast).
    #[arg(long, hide = true, env = "QUAYSIDE_PBKDF2_ITERATIONS", default_value_t = password::DEFAULT_ITERATIONS)]
    pbkdf2_iterations: u32,
    /// Let webhooks target loopback, private, link-local, unique-local and CGNAT
    /// addresses (refused by default: server-side request forgery).
    #[arg(long)]
    webhook_allow_private: bool,
    /// For https webhooks, trust only the CA certificates in this PEM file
    /// instead of the system's.
    #[arg(long)]
    webhook_ca_file: Option<PathBuf>,
    /// The one web origin (scheme://host[:port]) whose pages may call the API
    /// from a browser: preflights from it are answered, and answers to it carry
    /// the CORS headers. Without it, no CORS at all.
    #[arg(long, value_name = "ORIGIN")]
    cors_origin: Option<String>,
    /// Serve downloads of active content (HTML, SVG, JavaScript, XML, CSS) with
    /// their own media type instead of application/octet-stream; they stay
    /// sandboxed by their Content-Security-Policy.
    #[arg(long)]
    serve_active_content: bool,
    /// Password checks (PBKDF2) that may run at once; default: half the cores,
    /// at least one.
    #[arg(long, default_value_t = crate::auth::checks::default_checks())]
    login_checks: usize,
    /// Logins that may wait for a password check; more are answered 503 with
    /// Retry-After.
    #[arg(long, default_value_t = crate::auth::checks::DEFAULT_QUEUE)]
    login_queue: usize,
    /// Failed logins one client address (an IPv6 /64) may make per minute, over
    /// all usernames, before it is answered 429 with Retry-After; 0: no limit.
    #[arg(long, default_value_t = crate::auth::lockout::DEFAULT_FAILURES_PER_MINUTE)]
    login_failures_per_minute: u32,
    /// Wait after a webhook's first failed attempt, in ms; doubled after each further one.
    #[arg(long, hide = true, default_value_t = 30_000)]
    webhook_retry_base_ms: u64,
    /// Seconds a change may keep failing before its webhook is disabled.
    #[arg(long, hide = true, default_value_t = 3 * 24 * 3600)]
    webhook_retry_max_secs: u64,
    /// Milliseconds one webhook delivery may take in all (resolve, connect, answer).
    #[arg(long, hide = true, default_value_t = 10_000)]
    webhook_timeout_ms: u64,
}

impl ServeArgs {
    /// How long the change log keeps an entry.
    fn changes_retention(&self) -> Duration {
        Duration::from_secs(
            self.changes_retention_secs
                .unwrap_or(self.changes_retention_days.saturating_mul(24 * 3600)),
        )
    }
}

#[derive(Subcommand, Debug)]
enum UserCommand {
    /// Add an account; the password is read from stdin or QUAYSIDE_PASSWORD.
    Add {
        name: String,
        /// Administrators see every workspace.
        #[arg(long)]
        admin: bool,
        /// Share the tenant of this existing account (same company).
        #[arg(long)]
        tenant_of: Option<String>,
        #[arg(long, hide = true, env = "QUAYSIDE_PBKDF2_ITERATIONS", default_value_t = password::DEFAULT_ITERATIONS)]
        pbkdf2_iterations: u32,
    },
    /// Set a new password (read from stdin or QUAYSIDE_PASSWORD); ends its sessions.
    Passwd {
        name: String,
        #[arg(long, hide = true, env = "QUAYSIDE_PBKDF2_ITERATIONS", default_value_t = password::DEFAULT_ITERATIONS)]
        pbkdf2_iterations: u32,
    },
    /// List accounts with their tenants.
    List,
    /// Remove an account; its sessions stop working at once.
    Remove { name: String },
    /// Forget the account's failed logins, from every address, in the running server.
    Unlock { name: String },
}

/// Runs the command line; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    init_logging(cli.log_level);
    let location = match &cli.database {
        Some(database) => db::Location::parse(database),
        None => Ok(db::Location::File(cli.data.clone())),
    };
    let result = location
        .map_err(Into::into)
        .and_then(|at| match cli.command {
            Command::Serve(args) => serve(&at, cli.log_level, *args),
            Command::User(command) => user(&at, command),
            Command::Backup { out } => backup(&at, &out),
            Command::Check => check(&at),
            Command::ImportUnlocode { file, user } => import_unlocode(&at, &file, &user),
            Command::Migrate { from, to } => migrate(&from, &to),
        });
    match result {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("quayside: error: {}", crate::error::chain(&*err));
            1
        }
    }
}

fn init_logging(level: LevelFilter) {
    let config = simplelog::ConfigBuilder::new()
        .set_time_format_rfc3339()
        .set_target_level(LevelFilter::Error)
        .set_thread_level(LevelFilter::Off)
        .build();
    let _ = simplelog::WriteLogger::init(level, config, WholeLines::default());
}

/// Stderr for the log, written a whole line per `write` (simplelog writes a
/// line in pieces), so that lines stay whole beside the access log's writes
/// to the same pipe or file.
#[derive(Default)]
struct WholeLines(Vec<u8>);

impl Write for WholeLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        if let Some(end) = self.0.iter().rposition(|&b| b == b'\n') {
            let result = std::io::stderr().lock().write_all(&self.0[..=end]);
            self.0.drain(..=end);
            result?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = std::io::stderr().lock().write_all(&self.0);
        self.0.clear();
        result
    }
}

fn serve(at: &db::Location, log_level: LevelFilter, args: ServeArgs) -> CliResult {
    let settings = Settings {
        session_idle: Duration::from_secs(args.session_idle_secs.max(1)),
        session_max: Duration::from_secs(args.session_max_secs.max(1)),
        pbkdf2_iterations: args.pbkdf2_iterations,
        max_upload_bytes: args.max_upload_mb.max(1) * 1024 * 1024,
        max_uploads: args.max_uploads.max(1),
        changes_heartbeat: Duration::from_millis(args.changes_heartbeat_ms.max(1)),
        webhook_allow_private: args.webhook_allow_private,
        cors: args
            .cors_origin
            .as_deref()
            .map(crate::http::cors::Cors::new)
            .transpose()?,
        serve_active_content: args.serve_active_content,
        // Access lines are info lines: `--log-level warn` turns them off too.
        access_log: log_level >= LevelFilter::Info
            && args.access_log != crate::http::access_log::Target::Off,
        login_checks: args.login_checks.max(1),
        login_queue: args.login_queue,
        login_failures_per_minute: args.login_failures_per_minute,
        // The lockout is the server's memory; on a data file, `user unlock`
        // reaches it through a file beside it.
        unlock_requests: at.file().map(crate::auth::lockout::unlock_requests_path),
    };
    let access_on = settings.access_log;
    ensure_first_admin(at, settings.pbkdf2_iterations)?;
    crate::memory::limit_arenas();
    let max_connections = fit_descriptors(args.max_connections.max(1));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("quayside-worker")
        // SQLite calls are short; a bounded pool keeps memory (thread stacks,
        // allocator arenas) from growing with a burst of concurrent requests.
        .max_blocking_threads(32)
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        // Read the CA file (or the system's roots) before accepting anything.
        let webhooks = crate::webhooks::deliver::Config {
            client: Client::new(&ClientOptions {
                allow_private: args.webhook_allow_private,
                ca_file: args.webhook_ca_file.clone(),
                timeout: Duration::from_millis(args.webhook_timeout_ms.max(1)),
            })
            .map_err(|e| format!("webhooks: {e}"))?,
            retry_base: Duration::from_millis(args.webhook_retry_base_ms.max(1)),
            retry_max: Duration::from_secs(args.webhook_retry_max_secs),
            persist_skips_every: crate::webhooks::deliver::persist_skips_every(
                args.changes_retention(),
            ),
        };
        // Off the executor: PostgreSQL's client blocks on a runtime of its own.
        let database = tokio::task::block_in_place(|| {
            db::Db::open_at(
                at,
                args.readers.max(1),
                args.max_page_count,
                Arc::new(crate::changes::Capture::default()),
            )
        })?;
        let listener = crate::http::server::bind(args.listen)
            .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        let signals = Signals::register();
        // Tests and scripts read this line to learn the port when --listen ends in :0.
        println!("quayside listening on http://{address}");
        let _ = std::io::stdout().flush();
        log::info!("serving {} on http://{address}", at.describe());
        let app = App::new(database.clone(), settings, crate::routes::table());
        // Retention and webhook deliveries: in this process on a data file;
        // on PostgreSQL in the one process that holds the lease.
        let retention_keep = args.changes_retention();
        let trim_every = Duration::from_millis(args.changes_trim_every_ms.max(1));
        let webhooks = Arc::new(webhooks);
        let background_db = database.clone();
        let background = tokio::spawn(db::lease::run(
            database.clone(),
            db::lease::BACKGROUND,
            app.closing(),
            move |closing| {
                let (db, webhooks) = (background_db.clone(), webhooks.clone());
                async move {
                    let retention = tokio::spawn(crate::changes::retention::run(
                        db.clone(),
                        retention_keep,
                        trim_every,
                        closing.clone(),
                    ));
                    let deliveries =
                        tokio::spawn(crate::webhooks::deliver::run(db, webhooks, closing));
                    let _ = retention.await;
                    if let Err(err) = deliveries.await {
                        log::error!("the webhook worker ended abnormally: {err}");
                    }
                }
            },
        ));
        // The data file's own upkeep; PostgreSQL's autovacuum and
        // autoanalyze do this there.
        let file = at.file().is_some();
        let vacuum = file.then(|| {
            tokio::spawn(db::vacuum::run(
                database.clone(),
                Duration::from_millis(args.vacuum_every_ms.max(1)),
                app.closing(),
            ))
        });
        let statistics = file.then(|| {
            tokio::spawn(db::statistics::run(
                database.clone(),
                db::statistics::FIRST_AFTER,
                db::statistics::EVERY,
                app.closing(),
            ))
        });
        let trimming = tokio::spawn(crate::memory::run(app.closing()));
        let stopping = app.clone();
        #[cfg(unix)]
        let Signals {
            terminate,
            interrupt,
            hangup,
        } = signals;
        #[cfg(not(unix))]
        let Signals {} = signals;
        let shutdown = async move {
            shutdown_signal(
                #[cfg(unix)]
                terminate,
                #[cfg(unix)]
                interrupt,
            )
            .await;
            // Live streams and long-polls end now, so that the grace period
            // is for requests that are still working.
            stopping.shut_down();
        };
        let access = if access_on {
            crate::http::access_log::AccessLog::start(
                &args.access_log,
                &crate::http::access_log::Options {
                    capacity: args.access_log_queue_lines.max(1),
                    flush_every: Duration::from_millis(args.access_log_flush_ms.max(1)),
                },
            )
            .map_err(|e| format!("cannot open the access log: {e}"))?
        } else {
            crate::http::access_log::AccessLog::off()
        };
        let reopening = tokio::spawn(reopen_on_hangup(
            #[cfg(unix)]
            hangup,
            access.clone(),
        ));
        let serving = app.clone();
        crate::http::server::serve(
            listener,
            move |req| {
                let app = serving.clone();
                async move { app.handle(req).await }
            },
            shutdown,
            crate::http::server::Limits {
                header_timeout: Duration::from_secs(args.header_timeout_secs.max(1)),
                grace: Duration::from_secs(args.shutdown_grace_secs),
                body_timeout: Duration::from_secs(args.body_timeout_secs.max(1)),
                max_connections,
            },
            access.clone(),
        )
        .await;
        reopening.abort();
        access.finish();
        app.shut_down();
        let _ = background.await;
        for task in [vacuum, statistics].into_iter().flatten() {
            let _ = task.await;
        }
        let _ = trimming.await;
        let closing = database.clone();
        tokio::task::spawn_blocking(move || closing.close())
            .await
            .map_err(|e| e.to_string())??;
        match at.file() {
            Some(data) => log::info!("stopped cleanly; {} is complete", data.display()),
            None => log::info!("stopped cleanly"),
        }
        Ok(())
    })
}

/// The connection cap that fits the descriptor limit: the soft limit is
/// raised to the hard one first (systemd's default soft limit is 1,024), and
/// the cap lowered, with a warning, when it would leave too few descriptors
/// for the data file, the logs and the shedder's reserve.
fn fit_descriptors(wanted: usize) -> usize {
    let Some(limit) = raise_descriptor_limit() else {
        return wanted;
    };
    let room = limit
        .saturating_sub((DESCRIPTOR_RESERVE + crate::http::server::SHED_RESERVE) as u64)
        .max(16) as usize;
    if wanted > room {
        log::warn!(
            "--max-connections {wanted} lowered to {room}: the descriptor limit is {limit} \
             (raise it, e.g. LimitNOFILE= in the systemd unit, to serve more)"
        );
        return room;
    }
    wanted
}

/// Raises the soft limit of open descriptors to the hard limit; answers the
/// soft limit in force (None where it cannot be read).
fn raise_descriptor_limit() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Rlimit {
            current: u64,
            max: u64,
        }
        const RLIMIT_NOFILE: i32 = 7;
        unsafe extern "C" {
            fn getrlimit(resource: i32, limit: *mut Rlimit) -> i32;
            fn setrlimit(resource: i32, limit: *const Rlimit) -> i32;
        }
        let mut limit = Rlimit { current: 0, max: 0 };
        // SAFETY: both calls only read or write the struct passed, which
        // has the kernel's layout (two 64-bit values on Linux).
        unsafe {
            if getrlimit(RLIMIT_NOFILE, &mut limit) != 0 {
                return None;
            }
            if limit.current < limit.max {
                let raised = Rlimit {
                    current: limit.max,
                    max: limit.max,
                };
                // Refused under a seccomp filter (the unit denies @resources):
                // the soft limit stays, and so does the unit's LimitNOFILE.
                if setrlimit(RLIMIT_NOFILE, &raised) == 0 {
                    limit.current = limit.max;
                }
            }
        }
        Some(limit.current)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// The signals the server answers, registered before it says it listens:
/// a SIGTERM or SIGHUP sent as soon as the port is known (as tests and
/// service managers do) finds its handler, instead of the default action
/// that would kill the process.
struct Signals {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn register() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals {
                terminate: signal(SignalKind::terminate()).ok(),
                interrupt: signal(SignalKind::interrupt()).ok(),
                hangup: signal(SignalKind::hangup()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }
}

/// SIGHUP: the access log reopens its file (after logrotate moved it).
async fn reopen_on_hangup(
    #[cfg(unix)] hangup: Option<tokio::signal::unix::Signal>,
    access: crate::http::access_log::AccessLog,
) {
    #[cfg(unix)]
    {
        let Some(mut hangups) = hangup else {
            return;
        };
        while hangups.recv().await.is_some() {
            access.reopen();
            log::info!("SIGHUP: reopening the access log");
        }
    }
    #[cfg(not(unix))]
    {
        let _ = access;
        std::future::pending::<()>().await;
    }
}

/// SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_signal(
    #[cfg(unix)] terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)] interrupt: Option<tokio::signal::unix::Signal>,
) {
    #[cfg(unix)]
    {
        async fn next(signal: Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(mut signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = next(terminate) => {},
            () = next(interrupt) => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    log::info!("shutdown requested");
}

/// On an empty file, creates `admin` with a random password printed once (or
/// the one in QUAYSIDE_ADMIN_PASSWORD).
fn ensure_first_admin(at: &db::Location, iterations: u32) -> CliResult {
    let conn = db::Conn::open_at(at)?;
    // On PostgreSQL other processes may be receiving uploads right now.
    let swept = match at {
        db::Location::File(_) => db::blobs::sweep_incomplete(&conn),
        db::Location::Postgres(_) => db::blobs::sweep_incomplete_before(
            &conn,
            clock::now_ms() - db::blobs::INCOMPLETE_AFTER_MS,
        ),
    }
    .map_err(|e| e.to_string())?;
    if swept > 0 {
        log::info!("removed {swept} upload(s) left incomplete by the last run");
    }
    if accounts::count(&conn).map_err(|e| e.to_string())? > 0 {
        return Ok(());
    }
    let (secret, generated) = match std::env::var("QUAYSIDE_ADMIN_PASSWORD") {
        Ok(p) if !p.is_empty() => (p, false),
        _ => (password::random_password(), true),
    };
    let hash = password::hash(&secret, iterations);
    let tenant = crate::ids::new_id();
    if let Err(e) = accounts::insert(&conn, "admin", &tenant, true, &hash, clock::now_ms()) {
        // Another server process starting on the same empty database made it first.
        if accounts::count(&conn).map_err(|e| e.to_string())? > 0 {
            return Ok(());
        }
        return Err(format!("cannot create the admin account: {e}").into());
    }
    if generated {
        eprintln!(
            "quayside: created the first account `admin` with password: {secret}\n\
             quayside: this password is shown only once; change it with `quayside user passwd admin`"
        );
    } else {
        eprintln!(
            "quayside: created the first account `admin` with the password from QUAYSIDE_ADMIN_PASSWORD"
        );
    }
    Ok(())
}

fn user(at: &db::Location, command: UserCommand) -> CliResult {
    let conn = db::Conn::open_at(at)?;
    let sql = |e: db::Error| e.to_string();
    match command {
        UserCommand::Add {
            name,
            admin,
            tenant_of,
            pbkdf2_iterations,
        } => {
            accounts::check_username(&name).map_err(|e| e.message())?;
            if accounts::find(&conn, &name).map_err(sql)?.is_some() {
                return Err(format!("an account named `{name}` already exists").into());
            }
            let tenant = match tenant_of {
                Some(other) => {
                    accounts::find(&conn, &other)
                        .map_err(sql)?
                        .ok_or_else(|| {
                            format!("no account named `{other}` to share a tenant with")
                        })?
                        .tenant
                }
                None => crate::ids::new_id(),
            };
            let secret = read_password()?;
            let hash = password::hash(&secret, pbkdf2_iterations);
            accounts::insert(&conn, &name, &tenant, admin, &hash, clock::now_ms()).map_err(sql)?;
            println!(
                "added {name} (tenant {tenant}{})",
                if admin { ", admin" } else { "" }
            );
        }
        UserCommand::Passwd {
            name,
            pbkdf2_iterations,
        } => {
            if accounts::find(&conn, &name).map_err(sql)?.is_none() {
                return Err(format!("no account named `{name}`").into());
            }
            let secret = read_password()?;
            let hash = password::hash(&secret, pbkdf2_iterations);
            accounts::set_password(&conn, &name, &hash).map_err(sql)?;
            println!("password of {name} changed; its sessions were ended");
        }
        UserCommand::List => {
            println!("{:<24} {:<36} {:<5} created", "username", "tenant", "admin");
            for account in accounts::list(&conn).map_err(sql)? {
                println!(
                    "{:<24} {:<36} {:<5} {}",
                    account.username,
                    account.tenant,
                    if account.is_admin { "yes" } else { "no" },
                    clock::format_ms(account.created_at)
                );
            }
        }
        UserCommand::Remove { name } => {
            if !accounts::remove(&conn, &name).map_err(sql)? {
                return Err(format!("no account named `{name}`").into());
            }
            println!("removed {name}; its sessions no longer work");
        }
        UserCommand::Unlock { name } => {
            if accounts::find(&conn, &name).map_err(sql)?.is_none() {
                return Err(format!("no account named `{name}`").into());
            }
            // On PostgreSQL every server counts the failures in the store.
            let Some(data) = at.file() else {
                crate::auth::lockout::shared::unlock(&conn, &name).map_err(sql)?;
                println!("unlocked {name}: its failed logins from every address are forgotten");
                return Ok(());
            };
            // The lockout lives in the server's memory: the request goes in a
            // file beside the data file, which the server reads before it
            // refuses or slows down a login (one appended line, one write).
            let requests = crate::auth::lockout::unlock_requests_path(data);
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&requests)
                .and_then(|mut file| file.write_all(format!("{name}\n").as_bytes()))
                .map_err(|e| format!("cannot write {}: {e}", requests.display()))?;
            println!(
                "unlocked {name}: a running server forgets its failed logins from every address \
                 (a stopped one has none)"
            );
        }
    }
    Ok(())
}

/// The password for `user add` and `user passwd`: QUAYSIDE_PASSWORD, else the
/// first line of stdin. Never an argument, so it stays out of `ps` and shell history.
fn read_password() -> Result<String, String> {
    let secret = match std::env::var("QUAYSIDE_PASSWORD") {
        Ok(p) => p,
        Err(_) => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                eprint!("Password: ");
                let _ = std::io::stderr().flush();
            }
            let mut line = String::new();
            stdin
                .lock()
                .read_line(&mut line)
                .map_err(|e| format!("cannot read the password from stdin: {e}"))?;
            line.trim_end_matches(['\r', '\n']).to_string()
        }
    };
    if secret.chars().count() < password::MIN_PASSWORD_CHARS {
        return Err(format!(
            "the password must have at least {} characters",
            password::MIN_PASSWORD_CHARS
        ));
    }
    Ok(secret)
}

/// `quayside backup OUT` (see [`db::maintenance::backup`]).
fn backup(at: &db::Location, out: &Path) -> CliResult {
    let Some(data) = at.file() else {
        return Err(format!(
            "`backup` copies a data file; {} is a PostgreSQL database: back it up with \
             PostgreSQL's own tools, `pg_dump` (a logical copy) or `pg_basebackup` (the \
             whole cluster, for point-in-time recovery)",
            at.describe()
        )
        .into());
    };
    let pages = db::maintenance::backup(data, out)?;
    println!(
        "backed up {} ({pages} pages) to {}",
        data.display(),
        out.display()
    );
    Ok(())
}

/// `quayside check`: reports every problem found; any makes the exit code 1.
fn check(at: &db::Location) -> CliResult {
    let (version, problems) = db::maintenance::check(at)?;
    let data = at.describe();
    if problems.is_empty() {
        let checked = match at {
            db::Location::File(_) => "integrity and foreign keys checked",
            // The server keeps its pages and references whole itself.
            db::Location::Postgres(_) => "every file's size checked",
        };
        println!("{data}: ok (schema version {version}, {checked})");
        Ok(())
    } else {
        for problem in &problems {
            println!("{problem}");
        }
        Err(format!("{} problem(s) found in {data}", problems.len()).into())
    }
}

/// `quayside migrate --from FILE --to DATABASE` (see [`db::transfer`]).
fn migrate(from: &Path, to: &str) -> CliResult {
    let db::Location::Postgres(options) = db::Location::parse(to)? else {
        return Err(format!(
            "--to must be a PostgreSQL database (postgres://... or host=... dbname=...), not {to}"
        )
        .into());
    };
    db::transfer::migrate(from, &options, &mut std::io::stderr())?;
    Ok(())
}

/// `quayside import-unlocode FILE.csv`.
fn import_unlocode(at: &db::Location, file: &Path, username: &str) -> CliResult {
    let input =
        std::fs::File::open(file).map_err(|e| format!("cannot open {}: {e}", file.display()))?;
    let conn = db::Conn::open_at(at)?;
    crate::locations::import::import(
        &conn,
        std::io::BufReader::new(input),
        username,
        &mut std::io::stderr(),
        &crate::changes::Capture::default(),
    )?;
    Ok(())
}
