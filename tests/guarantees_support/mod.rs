//! Helpers of the guarantees tests (`tests/guarantees_*.rs`): the database a server runs on,
//! opened directly to inspect what was stored, a seeded random source, the number of rounds,
//! the large documents, and the figures that `scripts/guarantees` writes into
//! `docs/guarantees.md`.
#![allow(dead_code)]

use crate::server_support::{Db, fresh_postgres};
use serde_json::{Value, json};
use sqlx::Connection as _;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

/// A database outside any server's working folder, so it outlives the processes that a test
/// kills and restarts on it. A PostgreSQL database is dropped when this is dropped.
pub struct Database {
    /// The URL servers are started with.
    pub url: String,
    db: Db,
    _dir: crate::common::TempDir,
}

impl Database {
    /// A fresh, empty database.
    pub async fn fresh(db: Db) -> Database {
        let dir = crate::common::TempDir::new("guarantees-db");
        let url = match db {
            Db::Sqlite => format!("sqlite://{}", dir.path().join("fleet.db").display()),
            Db::Postgres => fresh_postgres().await,
        };
        Database { url, db, _dir: dir }
    }

    /// Which backend.
    pub fn kind(&self) -> Db {
        self.db
    }

    /// The SQLite file (None on PostgreSQL).
    pub fn sqlite_file(&self) -> Option<std::path::PathBuf> {
        self.url.strip_prefix("sqlite://").map(Into::into)
    }

    /// Runs `sql` (one scalar integer answer) directly against the database.
    pub async fn count(&self, sql: &str) -> i64 {
        count_at(self.db, &self.url, sql).await
    }

    /// Every text value of every column of `table`, as stored.
    pub async fn texts(&self, table: &str) -> Vec<String> {
        texts_at(self.db, &self.url, table).await
    }
}

/// Runs `sql` (one scalar integer answer) directly against the database at `url`.
pub async fn count_at(db: Db, url: &str, sql: &str) -> i64 {
    match db {
        Db::Sqlite => {
            let mut conn = sqlx::sqlite::SqliteConnection::connect(url)
                .await
                .expect("opening the SQLite file");
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
        Db::Postgres => {
            let mut conn = sqlx::postgres::PgConnection::connect(url)
                .await
                .expect("connecting to the test database");
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
    }
}

/// Every text value of every column of `table` at `url`, as stored.
pub async fn texts_at(db: Db, url: &str, table: &str) -> Vec<String> {
    let sql = format!("SELECT * FROM {table}");
    let mut out = Vec::new();
    match db {
        Db::Sqlite => {
            use sqlx::{Column as _, Row as _};
            let mut conn = sqlx::sqlite::SqliteConnection::connect(url).await.unwrap();
            for row in sqlx::query(&sql).fetch_all(&mut conn).await.unwrap() {
                for c in row.columns() {
                    if let Ok(Some(s)) = row.try_get::<Option<String>, _>(c.ordinal()) {
                        out.push(s);
                    }
                }
            }
        }
        Db::Postgres => {
            use sqlx::{Column as _, Row as _};
            let mut conn = sqlx::postgres::PgConnection::connect(url).await.unwrap();
            for row in sqlx::query(&sql).fetch_all(&mut conn).await.unwrap() {
                for c in row.columns() {
                    if let Ok(Some(s)) = row.try_get::<Option<String>, _>(c.ordinal()) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out
}

impl Drop for Database {
    fn drop(&mut self) {
        if self.db != Db::Postgres {
            return;
        }
        let Some((_, name)) = self.url.rsplit_once('/') else {
            return;
        };
        let base = crate::common::postgres_url();
        let name = name.to_string();
        // Drop runs inside the test's runtime: a thread of its own with a small runtime.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(mut conn) = sqlx::postgres::PgConnection::connect(&base).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut conn)
                        .await;
                }
            });
        })
        .join();
    }
}

/// xorshift64*: reproducible from the seed each test prints (`GUARANTEES_SEED` replays it).
pub struct Rng(u64);

impl Rng {
    /// Seeded from `GUARANTEES_SEED`, else the clock; prints the seed.
    pub fn new(label: &str) -> Rng {
        let seed = std::env::var("GUARANTEES_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{label}: GUARANTEES_SEED={seed}");
        Rng(seed | 1)
    }

    /// Seeded with `seed` (a worker's own stream, drawn from a printed one).
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `GUARANTEES_ROUNDS` (default `default`): how many rounds the fault tests run.
pub fn rounds(default: usize) -> usize {
    std::env::var("GUARANTEES_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Appends `name value` to `$GUARANTEES_FIGURES` (when set) and prints it: the figures of
/// `docs/guarantees.md`, collected by `scripts/guarantees`.
pub fn figure(name: &str, value: impl std::fmt::Display) {
    let line = format!("{name} {value}");
    eprintln!("figure: {line}");
    if let Ok(path) = std::env::var("GUARANTEES_FIGURES") {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(Path::new(&path))
            .expect("opening GUARANTEES_FIGURES");
        writeln!(file, "{line}").unwrap();
    }
}

/// A document of `groups` groups of `n` items each (every list, and an owner quota and an
/// offer to acme per pool): group `j` creates 7 calls per item; the mutable values follow
/// `parity`, so the document of the other parity updates every earlier item (6 calls each).
pub fn grouped_document(groups: usize, n: usize, parity: usize) -> Value {
    let (mut sites, mut accounts, mut pools, mut flavors, mut templates) =
        (vec![], vec![], vec![], vec![], vec![]);
    let p = parity % 2;
    let (location, budget, image) = [("fsn1", 0.1, "ubuntu-a"), ("nbg1", 0.2, "ubuntu-b")][p];
    for j in 0..groups {
        for i in 0..n {
            sites.push(json!({ "name": format!("s{j}-{i}"), "kind": "shared", "region": "eu" }));
            accounts.push(json!({
                "name": format!("a{j}-{i}"), "provider": "hetzner-cloud",
                "config": { "token": format!("secret://t{j}-{i}"), "location": location }
            }));
            pools.push(json!({
                "name": format!("p{j}-{i}"), "site": format!("s{j}-{i}"), "class": "vps-host",
                "policy": { "disruptionBudget": budget },
                "ownerQuota": { "gpu": i + p },
                "offers": [{ "tenant": "acme", "quota": { "vcpu": 8 + p } }]
            }));
            flavors.push(json!({
                "pool": format!("p{j}-{i}"), "name": "small",
                "vcpu": 2 + p, "memoryGiB": 4, "diskGiB": 40
            }));
            templates.push(json!({
                "name": format!("t{j}-{i}"), "pool": format!("p{j}-{i}"), "flavor": "small",
                "imageId": image, "network": "private"
            }));
        }
    }
    json!({
        "version": 1, "sites": sites, "providerAccounts": accounts, "pools": pools,
        "flavors": flavors, "sandboxTemplates": templates
    })
}

/// Polls `f` every 20 ms until it is true or `within` has passed.
pub async fn eventually(within: Duration, mut f: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if f().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A `better-compute serve` on a fresh SQLite file whose stderr (every log line, at
/// `RUST_LOG=trace`) goes to a file the test reads. Killed when dropped.
pub struct LoggedServer {
    child: std::process::Child,
    /// `http://ADDR`.
    pub base: String,
    /// The administrator's key.
    pub key: String,
    /// The SQLite file.
    pub database: std::path::PathBuf,
    dir: crate::common::TempDir,
}

impl LoggedServer {
    /// Starts it with `env` added and waits until it listens.
    pub fn start(env: &[(&str, &str)]) -> LoggedServer {
        use std::io::BufRead as _;
        let dir = crate::common::TempDir::new("logged");
        let database = dir.path().join("fleet.db");
        let stderr = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
        let mut command = std::process::Command::new(crate::common::binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--database"])
            .arg(format!("sqlite://{}", database.display()))
            .current_dir(dir.path())
            .env("RUST_LOG", "trace")
            .env_remove("BETTER_COMPUTE_FAULT")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("starting the server");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut key, mut base) = (String::new(), String::new());
        for line in lines.by_ref() {
            let line = line.expect("reading the server's stdout");
            if let Some(k) = line.strip_prefix("admin api key: ") {
                key = k.to_string();
            }
            if let Some(addr) = line.strip_prefix("listening on ") {
                base = addr.trim().to_string();
                break;
            }
        }
        assert!(!base.is_empty(), "the server did not start");
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        LoggedServer {
            child,
            base,
            key,
            database,
            dir,
        }
    }

    /// The process id (for /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory in KiB, from /proc (Linux).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("reading /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The bytes of the database file and its WAL and journal, as on disk.
    pub fn database_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for suffix in ["", "-wal", "-journal", "-shm"] {
            let path = format!("{}{suffix}", self.database.display());
            if let Ok(b) = std::fs::read(path) {
                bytes.extend(b);
            }
        }
        bytes
    }
}

impl Drop for LoggedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log();
            let bytes = log.as_bytes();
            let tail = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(20_000)..]);
            eprintln!("--- server stderr (tail) ---\n{tail}");
        }
    }
}

/// Whether `needle` occurs in `haystack` (bytes).
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
