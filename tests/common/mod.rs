//! Shared helpers of the end-to-end tests, all with real parts: the real `better-compute`
//! binary on a free loopback port ([`Server`]), real headless Chromium through ChromeDriver
//! ([`Browser`]), throwaway folders ([`TempDir`]) and the test PostgreSQL ([`postgres_url`]).
//!
//! A test file says `mod common;`. Not every file uses every helper, hence the allowance.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a process may take to start listening (first runs create databases).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Chromium's flags: headless, and none of the background traffic a test machine cannot
/// reach. `--no-sandbox` because tests run as root in CI.
pub const CHROMIUM_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,900",
];

/// The seed's example document, verbatim (its `…` included).
pub fn seed_document() -> serde_json::Value {
    serde_json::json!({
        "version": 1,
        "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
        "providerAccounts": [{
            "name": "cloud", "provider": "hetzner-cloud",
            "config": { "token": "secret://hetzner", "location": "fsn1" }
        }],
        "pools": [
            {
                "name": "vps-fra", "site": "fra", "class": "vps-host", "gpuModel": "L40S",
                "policy": { "disruptionBudget": 0.1 },
                "ownerQuota": { "gpu": 8 },
                "offers": [{ "tenant": "acme", "quota": { "vcpu": 64, "gpu": 2 }, "priority": 5 }]
            },
            { "name": "burst", "site": "fra", "class": "provider", "providerAccount": "cloud" }
        ],
        "flavors": [{ "pool": "vps-fra", "name": "g1.small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }],
        "sandboxTemplates": [{
            "name": "py-small", "pool": "vps-fra", "flavor": "g1.small", "imageId": "ubuntu-24.04",
            "env": { "PIP_INDEX_URL": "secret://root/sec_01k…" }, "network": "private",
            "warm": { "min": 2, "max": 4 }
        }]
    })
}

/// The fleet before the seed's plan example is reviewed: its example document without the
/// template, with a looser policy and a smaller owner quota.
pub fn seed_before_review() -> serde_json::Value {
    let mut doc = seed_document();
    doc.as_object_mut()
        .expect("an object")
        .remove("sandboxTemplates");
    let pool = &mut doc["pools"][0];
    pool["policy"] = serde_json::json!({ "disruptionBudget": 0.2 });
    pool["ownerQuota"] = serde_json::json!({ "gpu": 4 });
    doc
}

/// The reviewed document of the seed's plan example (policy, owner quota, a new offer to
/// globex, a new flavor) over [`seed_before_review`].
pub fn seed_reviewed() -> serde_json::Value {
    let mut doc = seed_before_review();
    let pool = &mut doc["pools"][0];
    pool["policy"] = serde_json::json!({ "disruptionBudget": 0.1 });
    pool["ownerQuota"] = serde_json::json!({ "gpu": 8 });
    pool["offers"]
        .as_array_mut()
        .expect("offers")
        .push(serde_json::json!({ "tenant": "globex", "quota": { "vcpu": 16 } }));
    doc["flavors"]
        .as_array_mut()
        .expect("flavors")
        .push(serde_json::json!({ "pool": "vps-fra", "name": "g1.large", "vcpu": 8, "memoryGiB": 32, "diskGiB": 200 }));
    doc
}

/// The `better-compute` binary Cargo built for these tests.
pub fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_better-compute"))
}

/// The workspace root (where `Cargo.toml` and the console's `dist/` are).
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The console's Trunk build, or a panic that says how to make it.
pub fn console_dist() -> PathBuf {
    let dist = workspace_root().join("dist");
    assert!(
        dist.join("index.html").is_file(),
        "{} has no index.html: build the console first with `trunk build --release` \
         (scripts/test does it)",
        dist.display()
    );
    dist
}

/// The URL of the throwaway PostgreSQL that `scripts/test` starts, from
/// `BETTER_COMPUTE_TEST_POSTGRES`. Panics when unset: a PostgreSQL test never passes silently.
pub fn postgres_url() -> String {
    std::env::var("BETTER_COMPUTE_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "BETTER_COMPUTE_TEST_POSTGRES is not set: run the tests with scripts/test, which \
             starts a throwaway PostgreSQL and sets it"
        )
    })
}

/// A free TCP port on 127.0.0.1, for programs that cannot listen on port 0 and report it.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("binding 127.0.0.1:0")
        .port()
}

/// A fresh folder under the system's temporary folder, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `<tmp>/better-compute-<label>-<pid>-<n>`.
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("better-compute-{label}-{}-{n}", std::process::id()));
        // A folder left by an earlier process with the same pid is stale.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        TempDir(path)
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `better-compute serve --listen 127.0.0.1:0`, killed when dropped.
///
/// It runs in its own fresh working folder, so relative defaults (such as the SQLite file)
/// land there and every server starts empty. Its stderr is kept and printed if the test fails.
pub struct Server {
    child: Child,
    addr: SocketAddr,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    workdir: TempDir,
}

impl Server {
    /// Starts `serve` with `args` added and waits until it listens.
    pub fn start<I, S>(args: I) -> Server
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Server::start_with(args, |_| {})
    }

    /// Like [`Server::start`], letting `configure` add to the command (environment, ...).
    pub fn start_with<I, S>(args: I, configure: impl FnOnce(&mut Command)) -> Server
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let workdir = TempDir::new("server");
        let mut command = Command::new(binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .current_dir(workdir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        configure(&mut command);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary().display()));
        let stderr = keep_stderr(child.stderr.take().expect("piped stderr"));

        // Keep reading stdout for the server's whole life, so it never blocks on a full pipe.
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let lines = child.stdout.take().expect("piped stdout");
        let sink = Arc::clone(&stdout);
        std::thread::spawn(move || {
            for line in BufReader::new(lines).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });

        let deadline = Instant::now() + START_TIMEOUT;
        let addr = loop {
            let listening = stdout.lock().unwrap().iter().find_map(|line: &String| {
                line.strip_prefix("listening on http://")
                    .and_then(|addr| addr.trim().parse::<SocketAddr>().ok())
            });
            if let Some(addr) = listening {
                break addr;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the server exited ({status}) before listening; stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "the server did not print `listening on http://ADDR` within {START_TIMEOUT:?}; \
                     stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Server {
            child,
            addr,
            stdout,
            stderr,
            workdir,
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every line it printed on stdout so far (the administrator's key among them).
    pub fn stdout(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// What it logged on stderr so far.
    pub fn logs(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Its working folder.
    pub fn workdir(&self) -> &Path {
        self.workdir.path()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- server stderr ---\n{}", self.stderr.lock().unwrap());
        }
    }
}

fn keep_stderr(mut stderr: ChildStderr) -> Arc<Mutex<String>> {
    let kept = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&kept);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    kept
}

/// A running ChromeDriver on a free loopback port, killed when dropped.
pub struct ChromeDriver {
    child: Child,
    port: u16,
}

impl ChromeDriver {
    /// Starts `$CHROMEDRIVER`, else `chromedriver` from `PATH`, and waits until it answers.
    pub fn start() -> ChromeDriver {
        let program = std::env::var_os("CHROMEDRIVER")
            .map(PathBuf::from)
            .or_else(|| find_in_path("chromedriver"))
            .expect("chromedriver not found: run `scripts/setup --test` (or set CHROMEDRIVER)");
        let port = free_port();
        let mut child = Command::new(&program)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("{} exited ({status}) before listening", program.display());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{} did not listen on port {port}", program.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        ChromeDriver { child, port }
    }

    /// Its WebDriver URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Ends a WebDriver session without an async runtime (used when a test fails).
    fn delete_session(&self, session: &str) {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let request = format!(
            "DELETE /session/{session} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        );
        if stream.write_all(request.as_bytes()).is_ok() {
            let _ = stream.read_to_end(&mut Vec::new());
        }
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Headless Chromium driven over WebDriver (fantoccini), with its own ChromeDriver and a
/// fresh profile. Dereferences to the [`fantoccini::Client`].
///
/// Call [`Browser::close`] at the end of a test. If a test panics first, dropping the browser
/// still ends the WebDriver session, so Chromium never outlives the test.
pub struct Browser {
    client: Option<fantoccini::Client>,
    session: Option<String>,
    driver: ChromeDriver,
    _profile: TempDir,
    /// Chromium's log entries read so far (ChromeDriver hands each out once).
    log: Mutex<Vec<LogEntry>>,
}

/// One entry of Chromium's own log (`goog:loggingPrefs`): what its developer console shows,
/// network failures ("Failed to load resource: ... 401") included, which never pass through
/// the page's `console.error`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct LogEntry {
    /// `SEVERE`, `WARNING`, `INFO`, ...
    pub level: String,
    /// What it says (the URL first).
    pub message: String,
    /// Unix ms.
    pub timestamp: i64,
}

/// ChromeDriver's `POST /session/{id}/se/log {"type": "browser"}`: the browser log's entries
/// since the last such request (not a W3C command, so fantoccini has no method for it).
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    // reqwest's `Url` and `Method` are the `url` and `http` crates' types that fantoccini uses.
    fn endpoint(
        &self,
        base_url: &reqwest::Url,
        session_id: Option<&str>,
    ) -> Result<reqwest::Url, <reqwest::Url as std::str::FromStr>::Err> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &reqwest::Url) -> (reqwest::Method, Option<String>) {
        (
            reqwest::Method::POST,
            Some(r#"{"type":"browser"}"#.to_owned()),
        )
    }
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium session (`$CHROMIUM` picks the binary).
    pub async fn start() -> Browser {
        let driver = ChromeDriver::start();
        let profile = TempDir::new("chromium");
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|arg| arg.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let mut options = serde_json::json!({ "args": args });
        if let Some(binary) = std::env::var_os("CHROMIUM") {
            options["binary"] = binary.to_string_lossy().into_owned().into();
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".to_owned(), options);
        // Chromium's own log, read by `Browser::log`.
        capabilities.insert(
            "goog:loggingPrefs".to_owned(),
            serde_json::json!({ "browser": "ALL" }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = fantoccini::ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&driver.url())
            .await
            .expect("starting a headless Chromium session through chromedriver");
        let session = client.session_id().await.ok().flatten();
        Browser {
            client: Some(client),
            session,
            driver,
            _profile: profile,
            log: Mutex::new(Vec::new()),
        }
    }

    /// Every entry of Chromium's log since the session started (or since
    /// [`Browser::clear_log`]): console messages and the browser's own, such as a failed
    /// request's "Failed to load resource: the server responded with a status of 401".
    pub async fn log(&self) -> Vec<LogEntry> {
        let answer = self
            .issue_cmd(BrowserLog)
            .await
            .expect("reading the browser log (POST /session/{id}/se/log)");
        let entries: Vec<LogEntry> = serde_json::from_value(answer)
            .unwrap_or_else(|e| panic!("the browser log is a list of entries: {e}"));
        let mut log = self.log.lock().unwrap();
        log.extend(entries);
        log.clone()
    }

    /// Forgets the log's entries so far.
    pub async fn clear_log(&self) {
        self.log().await;
        self.log.lock().unwrap().clear();
    }

    /// Ends the WebDriver session (Chromium exits) and stops ChromeDriver.
    pub async fn close(mut self) {
        if let Some(client) = self.client.take() {
            client.close().await.expect("closing the WebDriver session");
        }
        self.session = None;
    }
}

impl Deref for Browser {
    type Target = fantoccini::Client;

    fn deref(&self) -> &fantoccini::Client {
        self.client.as_ref().expect("the browser is open")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            self.driver.delete_session(&session);
        }
    }
}

/// Reads one HTTP message (headers, then `content-length` bytes) whole, for the stand-in
/// servers and proxies of the tests; `None` when the stream ends first.
pub fn read_http_message(stream: &mut impl Read) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    while data.len() < end + length {
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        data.extend_from_slice(&buf[..n]);
    }
    Some(data)
}
