//! Test harness: runs the real `quayside` binary on `127.0.0.1:0` with a data
//! file in a fresh temporary directory, and talks to it with a real HTTP client.
//!
//! With `QUAYSIDE_TEST_DATABASE=postgres` the same tests run the server on
//! PostgreSQL: each data file path stands for a database of the test
//! binary's own cluster (`pg::cluster`), made on its first use and given to
//! the server and the CLI as `--database`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Polls `probe` every 20 ms until it answers, or fails naming `what`.
#[track_caller]
pub fn wait_for<T>(what: &str, seconds: u64, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub const ADMIN_PASSWORD: &str = "admin-password-1";
/// Low work factor so that tests do not spend their time in PBKDF2.
pub const TEST_ITERATIONS: &str = "1000";

/// The ports catalog of the location service.
pub const PORTS: &str = "/api/rest/1.0/ports";

/// UN/LOCODE files in the shared data beside the repository: a 200-row sample
/// and the full code list.
pub const UNLOCODE_SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/data/unlocode/sample-200.csv"
);
pub const UNLOCODE_CODE_LIST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/data/unlocode/code-list.csv"
);

/// Whether the tests run the server on PostgreSQL (`QUAYSIDE_TEST_DATABASE=postgres`).
pub fn on_postgres() -> bool {
    std::env::var("QUAYSIDE_TEST_DATABASE").is_ok_and(|engine| engine == "postgres")
}

/// The `--database` that stands for `data` on PostgreSQL (made on its first
/// use), or `None` on SQLite.
pub fn database_for(data: &Path) -> Option<String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static DATABASES: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);
    if !on_postgres() {
        return None;
    }
    let mut databases = DATABASES.lock().unwrap_or_else(|p| p.into_inner());
    let databases = databases.get_or_insert_with(HashMap::new);
    Some(
        databases
            .entry(data.to_path_buf())
            .or_insert_with(|| crate::pg::cluster::cluster().database_string())
            .clone(),
    )
}

/// `--data FILE`, or on PostgreSQL `--database` with the database standing for it.
pub fn store_args(data: &Path) -> Vec<std::ffi::OsString> {
    match database_for(data) {
        Some(database) => vec!["--database".into(), database.into()],
        None => vec!["--data".into(), data.as_os_str().to_owned()],
    }
}

/// One statement run directly on the store behind `data` (as another
/// program would), whatever the engine: its text parameters bound in order.
pub fn store_execute(data: &Path, sql: &str, params: &[&str]) {
    match database_for(data) {
        Some(database) => {
            use quayside::db::pg::{Client, ConnectOptions};
            use quayside::db::value::Value;
            let client = Client::connect(&ConnectOptions::parse(&database).unwrap())
                .expect("connect to the test database");
            let values: Vec<Value> = params.iter().map(|p| Value::from(*p)).collect();
            client.execute(sql, &values).expect("statement");
        }
        None => {
            let conn = rusqlite::Connection::open(data).expect("open the data file");
            conn.busy_timeout(Duration::from_secs(10))
                .expect("busy timeout");
            conn.execute(sql, rusqlite::params_from_iter(params))
                .expect("statement");
        }
    }
}

/// The one integer a query on the store behind `data` answers, whatever the engine.
pub fn store_count(data: &Path, sql: &str) -> i64 {
    match database_for(data) {
        Some(database) => {
            use quayside::db::pg::{Client, ConnectOptions};
            let client = Client::connect(&ConnectOptions::parse(&database).unwrap())
                .expect("connect to the test database");
            client
                .query_row(sql, &[])
                .expect("query")
                .and_then(|row| row[0].as_i64())
                .expect("an integer")
        }
        None => {
            let conn = rusqlite::Connection::open_with_flags(
                data,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .expect("open the data file");
            conn.query_row(sql, [], |row| row.get(0)).expect("query")
        }
    }
}

/// The binary under test: `QUAYSIDE_BIN` when set (bench/ runs the release
/// build through the same tests), else the one cargo built for this run.
pub fn binary() -> String {
    std::env::var("QUAYSIDE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_quayside").to_string())
}

/// A running server and the directory that holds its data file and log.
pub struct Server {
    child: Option<Child>,
    pub base: String,
    pub data: PathBuf,
    /// How the server and the CLI name the store (`--data` or `--database`).
    store: Vec<std::ffi::OsString>,
    pub log: PathBuf,
    dir: Option<tempfile::TempDir>,
    agent: ureq::Agent,
}

/// An HTTP answer: status, headers and body.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {} body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts the contract's error body with this status and code.
    pub fn assert_error(&self, status: u16, code: &str) -> &Reply {
        assert_eq!(self.status, status, "body: {}", self.text());
        let body = self.json();
        assert_eq!(body["error"]["status"], status, "{body}");
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        self
    }

    pub fn error_field(&self) -> Option<String> {
        self.json()["error"]["field"].as_str().map(String::from)
    }
}

impl Server {
    /// A new server on a new, empty data file.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    pub fn start_with(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("quayside.db");
        let mut server = Server::spawn(&data, extra);
        server.dir = Some(dir);
        server
    }

    /// A server on a new data file, SQLite whatever the tests' engine (a
    /// file to migrate, ...).
    pub fn start_on_file() -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("quayside.db");
        let mut server = Server::spawn_on_file(&data, &[]);
        server.dir = Some(dir);
        server
    }

    /// A server on the data file `data` itself, whatever the tests' engine.
    pub fn spawn_on_file(data: &Path, extra: &[&str]) -> Server {
        Server::spawn_with(data, vec!["--data".into(), data.into()], extra)
    }

    /// A server on the PostgreSQL database `database` (a connection string),
    /// whatever the tests' engine; its log in a directory of its own.
    pub fn start_on_database(database: &str) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("postgres.db");
        let mut server = Server::spawn_with(&data, vec!["--database".into(), database.into()], &[]);
        server.dir = Some(dir);
        server
    }

    /// A server on an existing data file (for restarts); the caller keeps the directory.
    pub fn spawn(data: &Path, extra: &[&str]) -> Server {
        Server::spawn_with(data, store_args(data), extra)
    }

    /// A server on the store `--database DATABASE` names, its log beside
    /// `data` (several servers on one PostgreSQL database: tests/it/pg/processes.rs).
    pub fn spawn_on_database(data: &Path, database: &str, extra: &[&str]) -> Server {
        Server::spawn_with(data, vec!["--database".into(), database.into()], extra)
    }

    fn spawn_with(data: &Path, store: Vec<std::ffi::OsString>, extra: &[&str]) -> Server {
        let log = data.with_extension("log");
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("log file");
        let mut child = Command::new(binary())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(&store)
            .args(extra)
            .env("QUAYSIDE_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("QUAYSIDE_PBKDF2_ITERATIONS", TEST_ITERATIONS)
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .expect("start quayside");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let base = line
            .trim()
            .strip_prefix("quayside listening on ")
            .unwrap_or_else(|| {
                panic!(
                    "unexpected first line {line:?}; log: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })
            .to_string();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .allow_non_standard_methods(true)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Server {
            child: Some(child),
            base,
            data: data.to_path_buf(),
            store,
            log,
            dir: None,
            agent,
        }
    }

    /// `host:port`, for tests that talk over a raw socket.
    pub fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    pub fn dir(&self) -> &Path {
        self.data.parent().expect("data dir")
    }

    /// Takes ownership of the temp directory so a restart can reuse the file.
    pub fn take_dir(&mut self) -> tempfile::TempDir {
        self.dir.take().expect("server owns its directory")
    }

    /// Stops the server with SIGTERM and waits for a clean exit.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The log once `done` holds for it (the access log is written in the
    /// background, at most a tenth of a second late); panics after 10 s.
    pub fn log_when(&self, done: impl Fn(&str) -> bool) -> String {
        wait_for_file(&self.log, done)
    }

    /// Sends a request. `key` goes in `Authorization: Bearer`.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Reply {
        self.try_request(method, path, key, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path} failed: {e}"))
    }

    /// Like [`Server::request`], but a failed exchange (the server died, the
    /// connection was cut) is an `Err` instead of a panic.
    pub fn try_request(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Reply, String> {
        let mut builder = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path));
        if let Some(key) = key {
            builder = builder.header("Authorization", format!("Bearer {key}"));
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let result = match body {
            Some(bytes) => self
                .agent
                .run(builder.body(bytes.to_vec()).expect("request")),
            None => self.agent.run(builder.body(()).expect("request")),
        };
        let response = result.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let body = response
            .into_body()
            .with_config()
            .limit(512 * 1024 * 1024)
            .read_to_vec()
            .map_err(|e| e.to_string())?;
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    /// Kills the server with SIGKILL (no shutdown, no checkpoint), even while
    /// other threads still hold this handle.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn kill_by_pid(&self) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .args(["-KILL", &child.id().to_string()])
                .status();
        }
    }

    /// Opens a Server-Sent Events stream; the answer's status, and its events
    /// as they arrive (dropping the stream closes the connection).
    pub fn events(&self, path: &str, key: &str, last_event_id: Option<u64>) -> (u16, Events) {
        let mut builder = ureq::http::Request::builder()
            .method("GET")
            .uri(format!("{}{}", self.base, path))
            .header("Authorization", format!("Bearer {key}"))
            .header("Accept", "text/event-stream");
        if let Some(id) = last_event_id {
            builder = builder.header("Last-Event-ID", id.to_string());
        }
        let response = self
            .agent
            .run(builder.body(()).expect("request"))
            .unwrap_or_else(|e| panic!("GET {path} (events) failed: {e}"));
        let status = response.status().as_u16();
        let reader = response.into_body().into_reader();
        (
            status,
            Events {
                lines: BufReader::new(Box::new(reader)),
            },
        )
    }

    pub fn get(&self, path: &str, key: &str) -> Reply {
        self.request("GET", path, Some(key), &[], None)
    }

    pub fn delete(&self, path: &str, key: &str) -> Reply {
        self.request("DELETE", path, Some(key), &[], None)
    }

    pub fn send_json(&self, method: &str, path: &str, key: &str, body: &Value) -> Reply {
        self.request(
            method,
            path,
            Some(key),
            &[("Content-Type", "application/json")],
            Some(body.to_string().as_bytes()),
        )
    }

    pub fn put(&self, path: &str, key: &str, body: &Value) -> Reply {
        self.send_json("PUT", path, key, body)
    }

    pub fn post(&self, path: &str, key: &str, body: &Value) -> Reply {
        self.send_json("POST", path, key, body)
    }

    pub fn patch(&self, path: &str, key: &str, body: &Value) -> Reply {
        self.send_json("PATCH", path, key, body)
    }

    /// POSTs a `multipart/form-data` body made with `boundary` (see [`multipart`]).
    pub fn post_multipart(
        &self,
        path: &str,
        key: Option<&str>,
        boundary: &str,
        body: &[u8],
    ) -> Reply {
        let content_type = format!("multipart/form-data; boundary={boundary}");
        self.request(
            "POST",
            path,
            key,
            &[("Content-Type", &content_type)],
            Some(body),
        )
    }

    /// Sends `request` (any bytes) on a connection of its own, from another
    /// thread while the answer is read: an answer the server gives before the
    /// request has all arrived (a part refused as it comes in, a head refused
    /// while it is read) is read as soon as it is sent, whatever pace this
    /// side writes at. (A client that first sends everything may find the
    /// connection closed under it when it is slower than the server's
    /// lingering close.) The answer must carry a `Content-Length`.
    pub fn exchange_raw(&self, request: &[u8]) -> Reply {
        use std::io::Read;
        let mut stream = std::net::TcpStream::connect(self.address()).expect("connect");
        let mut sender = stream.try_clone().expect("clone the stream");
        let request = request.to_vec();
        // The server may close before it has read everything: a failed write
        // is expected then, and the answer is what the test looks at.
        let sending = std::thread::spawn(move || {
            let _ = sender.write_all(&request);
        });
        let mut answer = Vec::new();
        let mut buffer = [0u8; 16 * 1024];
        let (status, headers, body_start, length) = loop {
            let read = stream.read(&mut buffer).expect("read the answer");
            assert!(
                read > 0,
                "the connection closed before an answer: {answer:?}"
            );
            answer.extend_from_slice(&buffer[..read]);
            let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let text = String::from_utf8_lossy(&answer[..end]).into_owned();
            let mut lines = text.split("\r\n");
            let status: u16 = lines
                .next()
                .and_then(|line| line.split(' ').nth(1))
                .and_then(|code| code.parse().ok())
                .expect("a status line");
            let headers: Vec<(String, String)> = lines
                .filter_map(|line| line.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            let length = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse::<usize>().ok())
                .expect("the answer has a Content-Length");
            break (status, headers, end + 4, length);
        };
        while answer.len() < body_start + length {
            let read = stream.read(&mut buffer).expect("read the answer's body");
            assert!(read > 0, "the connection closed inside the answer's body");
            answer.extend_from_slice(&buffer[..read]);
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
        let _ = sending.join();
        Reply {
            status,
            headers,
            body: answer[body_start..body_start + length].to_vec(),
        }
    }

    /// Logs in; returns the raw reply.
    pub fn login_reply(&self, username: &str, password: &str) -> Reply {
        let form = format!("password={}", urlencode(password));
        self.request(
            "POST",
            &format!("/api/rest/1.0/sessions/{username}"),
            None,
            &[("Content-Type", "application/x-www-form-urlencoded")],
            Some(form.as_bytes()),
        )
    }

    /// Logs in and returns the session key.
    pub fn login(&self, username: &str, password: &str) -> String {
        let reply = self.login_reply(username, password);
        assert_eq!(reply.status, 200, "login failed: {}", reply.text());
        reply.json()["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string()
    }

    /// Logs in from `local`, a loopback address of the test's choosing
    /// (`127.0.0.2`, ...: all of 127/8 is loopback on Linux), so the server
    /// sees the login come from another client address.
    pub fn login_from(&self, local: &str, username: &str, password: &str) -> Reply {
        let form = format!("password={}", urlencode(password));
        let request = format!(
            "POST /api/rest/1.0/sessions/{username} HTTP/1.1\r\nHost: {}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{form}",
            self.address(),
            form.len()
        );
        let server: std::net::SocketAddr = self.address().parse().expect("server address");
        let local: std::net::IpAddr = local.parse().expect("local address");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .expect("runtime");
        let mut stream = runtime
            .block_on(async {
                let socket = tokio::net::TcpSocket::new_v4()?;
                socket.bind((local, 0).into())?;
                socket.connect(server).await?.into_std()
            })
            .unwrap_or_else(|e| panic!("connect from {local}: {e}"));
        stream.set_nonblocking(false).expect("blocking");
        stream.write_all(request.as_bytes()).expect("send");
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut stream, &mut raw).expect("answer");
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("end of head");
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|code| code.parse().ok())
            .expect("status line");
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.to_string(), value.trim().to_string()))
            .collect();
        Reply {
            status,
            headers,
            body: raw[split + 4..].to_vec(),
        }
    }

    pub fn admin_key(&self) -> String {
        self.login("admin", ADMIN_PASSWORD)
    }

    /// Runs `quayside ARGS --data FILE` against this server's file.
    pub fn cli(&self, args: &[&str], password: Option<&str>) -> std::process::Output {
        run_cli_with(&self.store, args, password)
    }

    /// Adds an account through the CLI and logs it in.
    pub fn add_user(&self, name: &str, extra: &[&str]) -> String {
        let password = format!("{name}-password");
        let mut args = vec!["user", "add", name];
        args.extend_from_slice(extra);
        let out = self.cli(&args, Some(&password));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.login(name, &password)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs the CLI on a data file, with the password on stdin when given.
pub fn run_cli(data: &Path, args: &[&str], password: Option<&str>) -> std::process::Output {
    run_cli_with(&store_args(data), args, password)
}

/// Runs the CLI on the store `store` names (`--data FILE` or `--database ...`).
pub fn run_cli_with(
    store: &[std::ffi::OsString],
    args: &[&str],
    password: Option<&str>,
) -> std::process::Output {
    let mut child = Command::new(binary())
        .args(args)
        .args(store)
        .env("QUAYSIDE_PBKDF2_ITERATIONS", TEST_ITERATIONS)
        .env_remove("QUAYSIDE_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run quayside");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        if let Some(password) = password {
            let _ = writeln!(stdin, "{password}");
        }
    }
    child.wait_with_output().expect("cli output")
}

pub fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The `id` of an answer that must be a success.
pub fn id(reply: &Reply) -> String {
    assert!(
        reply.status < 300,
        "fixture request failed: {} {}",
        reply.status,
        reply.text()
    );
    reply.json()["id"].as_str().expect("id").to_string()
}

/// Creates an organization named `org` in the caller's tenant, a workspace with
/// it as the client party (and `description`, when given), and one job in that
/// workspace; returns the workspace and job ids.
pub fn workspace_with_job(
    server: &Server,
    key: &str,
    org: &str,
    description: Option<&str>,
) -> (String, String) {
    let org = server.post("/v2/organizations", key, &json!({"body": {"name": org}}));
    assert_eq!(org.status, 201, "{}", org.text());
    let org = org.json()["id"].as_str().unwrap().to_string();
    let mut body = json!({});
    if let Some(description) = description {
        body["description"] = json!(description);
    }
    body["parties"] = json!({"client": {"id": org}});
    let ws = server.post("/workspaces", key, &body);
    assert_eq!(ws.status, 201, "{}", ws.text());
    let workspace = ws.json()["id"].as_str().unwrap().to_string();
    let job = server.post(&format!("/workspaces/{workspace}/jobs"), key, &json!({}));
    assert_eq!(job.status, 201, "{}", job.text());
    let job = job.json()["id"].as_str().unwrap().to_string();
    (workspace, job)
}

/// A long-poll on `waiting` answers a port created through `writing` (the
/// same server or another process on the same database) within 100 ms of the
/// write's acknowledgement, the median of five rounds (woken by the commit,
/// not by a look every 500 ms, and with room for a loaded machine's
/// scheduling): each a long-poll from
/// the head, then, 100 ms later so that it waits (if it does not yet, it
/// finds the change at once, which is no slower), the write. Each answer
/// must be that port's `port.created`.
#[track_caller]
pub fn assert_long_poll_answers_within_100_ms(waiting: &Server, writing: &Server, key: &str) {
    let mut delays = Vec::new();
    for n in 0..5 {
        let head = waiting.get("/api/rest/1.0/changes?since=now", key);
        assert_eq!(head.status, 200, "{}", head.text());
        let cursor = head.json()["next"].as_u64().expect("next");
        let code = format!("LP{n}");
        let (acknowledged, answered, reply) = std::thread::scope(|scope| {
            let poll = scope.spawn(|| {
                let reply = waiting.get(
                    &format!("/api/rest/1.0/changes?since={cursor}&wait=30"),
                    key,
                );
                (Instant::now(), reply)
            });
            std::thread::sleep(Duration::from_millis(100));
            let put = writing.put(
                &format!("{PORTS}/{code}"),
                key,
                &json!({"name": "Long-poll"}),
            );
            let acknowledged = Instant::now();
            assert_eq!(put.status, 201, "{}", put.text());
            let (answered, reply) = poll.join().expect("the long-poll");
            (acknowledged, answered, reply)
        });
        assert_eq!(reply.status, 200, "{}", reply.text());
        let body = reply.json();
        assert_eq!(body["changes"][0]["entity_id"], code.as_str(), "{body}");
        assert_eq!(body["changes"][0]["type"], "port.created", "{body}");
        delays.push(answered.saturating_duration_since(acknowledged));
    }
    delays.sort();
    let median = delays[delays.len() / 2];
    assert!(
        median <= Duration::from_millis(100),
        "the long-poll answered {median:?} after the acknowledged write (all: {delays:?})"
    );
}

/// One part: name, file name, content type, bytes.
pub type PartSpec<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// Builds a multipart/form-data body with this boundary.
pub fn multipart(boundary: &str, parts: &[PartSpec<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file_name, content_type, bytes) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let mut disposition = format!("Content-Disposition: form-data; name=\"{name}\"");
        if let Some(file_name) = file_name {
            disposition.push_str(&format!("; filename=\"{file_name}\""));
        }
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(content_type) = content_type {
            body.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

/// One Server-Sent Event: its `id:`, `event:` and `data:` lines.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("event data is JSON")
    }
}

/// The events of a stream, read as they arrive.
pub struct Events {
    lines: BufReader<Box<dyn std::io::Read + Send>>,
}

impl Events {
    /// The next event (comments skipped); `None` when the stream ended.
    pub fn next_event(&mut self) -> Option<Event> {
        let mut event = Event {
            id: None,
            event: None,
            data: String::new(),
        };
        let mut fields = 0;
        loop {
            let mut line = String::new();
            match self.lines.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if fields > 0 && (event.id.is_some() || !event.data.is_empty()) {
                    return Some(event);
                }
                fields = 0;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            fields += 1;
            match name {
                "id" => event.id = Some(value.to_string()),
                "event" => event.event = Some(value.to_string()),
                "data" => {
                    if !event.data.is_empty() {
                        event.data.push('\n');
                    }
                    event.data.push_str(value);
                }
                _ => {}
            }
        }
    }

    /// Reads raw lines until one satisfies `wanted` (comments included);
    /// false when the stream ended first.
    pub fn read_until_line(&mut self, wanted: impl Fn(&str) -> bool) -> bool {
        loop {
            let mut line = String::new();
            match self.lines.read_line(&mut line) {
                Ok(0) | Err(_) => return false,
                Ok(_) if wanted(line.trim_end()) => return true,
                Ok(_) => {}
            }
        }
    }
}

/// The text of `path` once `done` holds for it; panics after 10 s.
pub fn wait_for_file(path: &Path, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if done(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} never reached the expected state:\n{text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
