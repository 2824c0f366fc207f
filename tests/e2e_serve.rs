//! The real binary, started as a user would, answering real HTTP on a loopback port.

mod common;
mod server_support;

use common::{Server, TempDir, binary};
use server_support::Fleet;
use sqlx::Connection as _;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a start that must fail ended.
struct Exit {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `serve --listen 127.0.0.1:0` (unless `args` say `--listen`) with `args` in `dir` until it exits, which it must do
/// within a minute (a start that fails never listens).
fn serve_exits(dir: &Path, args: &[&str]) -> Exit {
    serve_exits_env(dir, args, &[])
}

/// [`serve_exits`] with environment variables.
fn serve_exits_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Exit {
    let (out, err) = (dir.join("serve.out"), dir.join("serve.err"));
    let started = Instant::now();
    let mut child = Command::new(binary())
        .arg("serve")
        .args(
            ["--listen", "127.0.0.1:0"]
                .iter()
                .filter(|_| !args.contains(&"--listen")),
        )
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!(
                "serve {args:?} still runs after a minute; stderr:\n{}",
                std::fs::read_to_string(&err).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Exit {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
        took: started.elapsed(),
    }
}

/// `principal.list` of root as `key`: the key works.
async fn key_works(server: &Server, key: &str) -> bool {
    reqwest::Client::new()
        .post(server.url("/api/principal.list"))
        .bearer_auth(key)
        .json(&serde_json::json!({ "tenantId": "root" }))
        .send()
        .await
        .unwrap()
        .status()
        == reqwest::StatusCode::OK
}

#[tokio::test]
async fn serve_answers_health_and_serves_the_console() {
    let console = TempDir::new("console");
    let page = "<!DOCTYPE html><title>console</title><p>better-compute console</p>";
    std::fs::write(console.path().join("index.html"), page).unwrap();
    let server = Server::start([OsStr::new("--console-dir"), console.path().as_os_str()]);
    let http = reqwest::Client::new();

    let health = http.get(server.url("/api/health")).send().await.unwrap();
    assert_eq!(health.status(), reqwest::StatusCode::OK);
    let body: serde_json::Value = health.json().await.unwrap();
    assert_eq!(body["status"], "ok");
    assert!(
        body["version"]
            .as_str()
            .is_some_and(|v| v.starts_with(env!("CARGO_PKG_VERSION"))),
        "{body}"
    );

    let index = http.get(server.url("/")).send().await.unwrap();
    assert_eq!(index.status(), reqwest::StatusCode::OK);
    let content_type = index.headers()[reqwest::header::CONTENT_TYPE]
        .to_str()
        .unwrap();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    // The console's strict policy also comes as a header, where frame-ancestors works.
    let policy = index.headers()[reqwest::header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    assert_eq!(index.headers()["x-content-type-options"], "nosniff");
    assert_eq!(index.text().await.unwrap(), page);

    // Logs to a pipe or a file are plain text: no colour codes for a log collector.
    let logs = server.logs();
    assert!(logs.contains("running migration"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "colour codes in {logs:?}");
}

#[test]
fn an_unsupported_database_url_never_shows_its_password() {
    let dir = TempDir::new("mysql");
    let exit = serve_exits(
        dir.path(),
        &["--database", "mysql://u:secretpw@db.example/fleet"],
    );
    assert_eq!(exit.code, Some(1), "{}", exit.stderr);
    assert!(
        exit.stderr.contains("unsupported database URL"),
        "{}",
        exit.stderr
    );
    assert!(!exit.stderr.contains("secretpw"), "{}", exit.stderr);
}

#[test]
fn an_in_memory_sqlite_database_is_refused() {
    let dir = TempDir::new("memory");
    for url in ["sqlite::memory:", "sqlite://:memory:"] {
        let exit = serve_exits(dir.path(), &["--database", url]);
        assert_eq!(exit.code, Some(1), "{url}: {}", exit.stderr);
        assert!(
            exit.stderr
                .contains("in-memory SQLite database is not supported"),
            "{url}: {}",
            exit.stderr
        );
    }
}

#[test]
fn a_postgresql_that_is_down_fails_the_start_at_once_with_the_cause() {
    let dir = TempDir::new("pgdown");
    // A port nothing listens on.
    let port = common::free_port();
    let url = format!("postgres://u:pw@127.0.0.1:{port}/fleet");
    let exit = serve_exits(dir.path(), &["--database", &url]);
    assert_eq!(exit.code, Some(1), "{}", exit.stderr);
    assert!(
        exit.stderr.to_lowercase().contains("connection refused"),
        "{}",
        exit.stderr
    );
    assert!(exit.took < Duration::from_secs(10), "{:?}", exit.took);
}

#[tokio::test]
async fn a_key_file_that_cannot_be_written_stops_the_start_before_the_key_exists() {
    let dir = TempDir::new("keyfile");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    let missing = dir.path().join("missing").join("admin.key");
    let folder = dir.path().to_str().unwrap();
    for path in [missing.to_str().unwrap(), folder] {
        let exit = serve_exits(
            dir.path(),
            &["--database", &database, "--admin-key-file", path],
        );
        assert_eq!(exit.code, Some(1), "{}", exit.stderr);
        assert!(
            exit.stderr.contains("--admin-key-file") && exit.stderr.contains(path),
            "{}",
            exit.stderr
        );
        assert!(!exit.stdout.contains("admin api key"), "{}", exit.stdout);
    }
    assert!(!missing.parent().unwrap().exists());

    // Nothing was created: the next start, with a path it can write, makes the key there.
    let key_file = dir.path().join("admin.key");
    let server = Server::start([
        "--database",
        &database,
        "--admin-key-file",
        key_file.to_str().unwrap(),
    ]);
    let key = std::fs::read_to_string(&key_file).expect("the key file is written");
    assert!(key.starts_with("bc_"), "{key:?}");
    assert!(key_works(&server, key.trim()).await);
    assert!(!server.stdout().iter().any(|l| l.contains("admin api key")));
}

#[cfg(unix)]
#[tokio::test]
async fn an_existing_key_file_gets_the_key_at_mode_0600_and_later_starts_leave_it() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new("keymode");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    let key_file = dir.path().join("admin.key");
    std::fs::write(
        &key_file,
        "stale content, longer than any key would ever be .......................\n",
    )
    .unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let args = [
        "--database",
        &database,
        "--admin-key-file",
        key_file.to_str().unwrap(),
    ];
    let server = Server::start(args);
    let key = std::fs::read_to_string(&key_file).unwrap();
    assert!(
        key.starts_with("bc_") && key.ends_with('\n') && key.lines().count() == 1,
        "{key:?}"
    );
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    assert!(key_works(&server, key.trim()).await);
    drop(server);

    // A later start (root exists) leaves the file as it is.
    let _again = Server::start(args);
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), key);
}

/// What the demo made: root's pools, the `demo.seed` audit rows, and the tenants.
async fn demo_counts(database: &str) -> (i64, i64, Vec<String>) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(database).await.unwrap();
    let pools: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pools WHERE tenant_id = 'root'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let seeds: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM audit WHERE method = 'demo.seed'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let tenants: Vec<String> = sqlx::query_scalar("SELECT id FROM tenants ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    (pools, seeds, tenants)
}

#[tokio::test]
async fn a_demo_seed_that_failed_half_way_is_finished_by_the_next_start() {
    let dir = TempDir::new("demo-resume");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    // The tenants are committed, then root's apply fails in the database.
    let exit = serve_exits_env(
        dir.path(),
        &["--database", &database, "--demo"],
        &[("BETTER_COMPUTE_FAULT", "apply-dberror:0")],
    );
    assert_eq!(exit.code, Some(1), "{}", exit.stderr);
    assert!(
        exit.stderr.contains("seeding the demo fleet"),
        "{}",
        exit.stderr
    );
    let (pools, seeds, _) = demo_counts(&database).await;
    assert_eq!((pools, seeds), (0, 0));

    let fleet = Fleet::start_on(&database, &["--demo"], &[]);
    let (pools, seeds, tenants) = demo_counts(&database).await;
    // vps-fra and burst from the example, and the pool made by hand.
    assert_eq!((pools, seeds), (3, 1));
    assert_eq!(tenants, ["acme", "globex", "root"]);
    drop(fleet);
    // Seeded: a later start adds nothing.
    let _again = Fleet::start_on(&database, &["--demo"], &[]);
    assert_eq!(demo_counts(&database).await.0, 3);
    assert_eq!(demo_counts(&database).await.1, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_started_at_once_with_demo_on_one_postgresql_all_start_and_seed_it_once() {
    for _ in 0..3 {
        let database = server_support::fresh_postgres().await;
        let starts: Vec<_> = (0..2)
            .map(|_| {
                let database = database.clone();
                std::thread::spawn(move || Fleet::start_on(&database, &["--demo"], &[]))
            })
            .collect();
        let fleets: Vec<Fleet> = starts.into_iter().map(|s| s.join().unwrap()).collect();
        let keys = fleets.iter().filter(|f| !f.key.is_empty()).count();
        assert_eq!(keys, 1, "one start made the administrator");
        let (pools, seeds, tenants) = demo_counts(&database).await;
        assert_eq!((pools, seeds), (3, 1));
        assert_eq!(tenants, ["acme", "globex", "root"]);
    }
}

#[tokio::test]
async fn empty_variables_count_as_unset_and_switches_take_1_and_0() {
    let blank = [
        "BETTER_COMPUTE_LISTEN",
        "BETTER_COMPUTE_DATABASE",
        "BETTER_COMPUTE_SERVER_CONFIG",
        "BETTER_COMPUTE_DRIFT_EVERY",
        "BETTER_COMPUTE_CONSOLE_DIR",
        "BETTER_COMPUTE_VPS",
        "BETTER_COMPUTE_SANDBOXES",
        "BETTER_COMPUTE_DEMO",
        "BETTER_COMPUTE_ADMIN_KEY_FILE",
        "BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE",
    ];
    let server = Server::start_with(Vec::<&str>::new(), |cmd| {
        for name in blank {
            cmd.env(name, "");
        }
    });
    // The defaults: the key printed, data/fleet.db, no demo.
    assert!(
        server
            .stdout()
            .iter()
            .any(|l| l.starts_with("admin api key: bc_"))
    );
    let database = format!(
        "sqlite://{}",
        server.workdir().join("data/fleet.db").display()
    );
    assert_eq!(demo_counts(&database).await.0, 0);

    let server = Server::start_with(Vec::<&str>::new(), |cmd| {
        cmd.env("BETTER_COMPUTE_DEMO", "1")
            .env("BETTER_COMPUTE_VPS", "0")
            .env("BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE", "0");
    });
    let database = format!(
        "sqlite://{}",
        server.workdir().join("data/fleet.db").display()
    );
    // The demo without the vps module: vps-fra and the pool made by hand, no provider pool.
    assert_eq!(
        demo_counts(&database).await,
        (2, 1, vec!["acme".into(), "globex".into(), "root".into()])
    );
}

/// Starts `serve` with exactly `args` (no `--listen` of its own) in `dir` and answers the
/// address it prints once listening; the process is killed when the guard drops.
fn start_listening(dir: &Path, args: &[&str]) -> (KillOnDrop, String) {
    use std::io::BufRead as _;
    let mut child = Command::new(binary())
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sent, listening) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(addr) = line.strip_prefix("listening on http://") {
                let _ = sent.send(addr.to_owned());
            }
        }
    });
    let guard = KillOnDrop(child);
    let addr = listening
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("serve {args:?} did not listen"));
    (guard, addr)
}

/// A child process killed when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn listen_takes_a_host_name_as_a_flag_and_in_the_configuration_file() {
    let dir = TempDir::new("listen");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    let config = dir.path().join("server.toml");
    std::fs::write(&config, "listen = \"localhost:0\"\n").unwrap();
    let flag = ["--listen", "localhost:0", "--database", &database];
    let file = [
        "--config",
        config.to_str().unwrap(),
        "--database",
        &database,
    ];
    for args in [&flag[..], &file[..]] {
        let (_server, addr) = start_listening(dir.path(), args);
        let ip: std::net::SocketAddr = addr.parse().unwrap();
        assert!(ip.ip().is_loopback(), "{addr}");
        let health = reqwest::get(format!("http://{addr}/api/health"))
            .await
            .unwrap();
        assert_eq!(health.status(), reqwest::StatusCode::OK, "{args:?}");
    }
    // Not HOST:PORT: a usage error that says the form.
    let exit = serve_exits(
        dir.path(),
        &["--listen", "localhost", "--database", &database],
    );
    assert_eq!(exit.code, Some(2), "{}", exit.stderr);
    assert!(exit.stderr.contains("HOST:PORT"), "{}", exit.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_started_at_once_with_one_key_file_on_one_postgresql_keep_the_key() {
    let dir = TempDir::new("keyrace");
    for round in 0..3 {
        let database = server_support::fresh_postgres().await;
        let key_file = dir.path().join(format!("admin-{round}.key"));
        let starts: Vec<_> = (0..2)
            .map(|_| {
                let database = database.clone();
                let key_file = key_file.to_str().unwrap().to_owned();
                std::thread::spawn(move || {
                    Fleet::start_on(&database, &["--admin-key-file", &key_file], &[])
                })
            })
            .collect();
        let fleets: Vec<Fleet> = starts.into_iter().map(|s| s.join().unwrap()).collect();
        let key = std::fs::read_to_string(&key_file).expect("the key file stays");
        assert!(key_works(&fleets[0].server, key.trim()).await, "{key:?}");
    }
}

/// A rollback to an older build after a newer one migrated the database: the older one refuses
/// to start, naming the migrations it does not know, rather than run its queries against
/// tables a later migration changed.
#[tokio::test]
async fn a_database_migrated_by_a_newer_build_is_refused() {
    let dir = TempDir::new("newer-db");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    drop(Server::start(["--database", database.as_str()]));
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&database).await.unwrap();
    sqlx::query(
        "INSERT INTO migrations (name, applied_at) VALUES ('fleet/9999_from_a_newer_build', 0)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let exit = serve_exits(dir.path(), &["--database", &database]);
    assert_eq!(exit.code, Some(1), "{}", exit.stderr);
    assert!(
        exit.stderr
            .contains("the database was migrated by a newer better-compute")
            && exit.stderr.contains("fleet/9999_from_a_newer_build"),
        "{}",
        exit.stderr
    );
}

/// A server stopped by SIGTERM leaves the whole database in its SQLite file (no write-ahead
/// log left to fold in), so a copy of the file, as docs/server.md says to back up, is whole.
#[tokio::test]
async fn a_stopped_server_leaves_its_whole_database_in_the_file() {
    use std::io::BufRead as _;
    let dir = TempDir::new("backup");
    let file = dir.path().join("fleet.db");
    let database = format!("sqlite://{}", file.display());
    let mut child = Command::new(binary())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--demo",
            "--database",
            &database,
        ])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut address = String::new();
    for line in stdout.lines() {
        if let Some(at) = line.unwrap().strip_prefix("listening on ") {
            address = at.to_owned();
            break;
        }
    }
    // Serving (and so listening for SIGTERM) once it answers.
    let health = format!("{address}/api/health");
    while reqwest::get(&health).await.is_err() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its reconcilers at work for a while (the demo's drift check writes), as in a real run.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(child.wait().unwrap().success());
    let wal = dir.path().join("fleet.db-wal");
    assert!(
        std::fs::metadata(&wal).map_or(true, |m| m.len() == 0),
        "a write-ahead log of {:?} bytes was left",
        std::fs::metadata(&wal).map(|m| m.len())
    );
    // The file alone, copied, holds the demo's fleet.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&file, &copy).unwrap();
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&format!("sqlite://{}", copy.display()))
        .await
        .unwrap();
    let pools: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pools WHERE tenant_id = 'root'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!(pools > 0, "the copy has no pools");
    conn.close().await.unwrap();
}

/// Builds are told apart: `--version` and the server's first log line name the commit the build
/// was given (`BETTER_COMPUTE_COMMIT`, which scripts/test and scripts/run set from git).
#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let version = Command::new(binary()).arg("--version").output().unwrap();
    let version = String::from_utf8(version.stdout).unwrap();
    let expected = match option_env!("BETTER_COMPUTE_COMMIT").filter(|c| !c.is_empty()) {
        Some(commit) => format!("better-compute {} ({commit})\n", env!("CARGO_PKG_VERSION")),
        None => format!("better-compute {}\n", env!("CARGO_PKG_VERSION")),
    };
    assert_eq!(version, expected);
    let server = Server::start(Vec::<&str>::new());
    let logs = server.logs();
    let first = logs.lines().next().unwrap_or_default();
    assert!(
        first.contains("better-compute starting")
            && first.contains(expected.trim_start_matches("better-compute ").trim_end()),
        "{logs}"
    );
}
