//! Helpers of the drift and webhook tests: a real HTTP receiver on loopback (axum), the
//! independent Standard Webhooks verifier (the `standardwebhooks` npm package, run by node),
//! polling with deadlines, and direct SQL on the server's database.
#![allow(dead_code)]

use crate::server_support::Fleet;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for anything before failing.
pub const DEADLINE: Duration = Duration::from_secs(45);

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// The path's last segment (`ok`, `gone`, `fail`, `hang-once`).
    pub path: String,
    /// Headers, lowercase names.
    pub headers: BTreeMap<String, String>,
    /// The raw body.
    pub body: String,
}

impl Received {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    /// A header.
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or("")
    }
}

#[derive(Clone, Default)]
struct Shared {
    got: Arc<Mutex<Vec<Received>>>,
}

/// A webhook receiver on 127.0.0.1: `POST /ok` answers 200, `/gone` 410, `/fail` 500,
/// `/hang-once` never answers its first request and 200 to the others; every request is kept.
pub struct Receiver {
    /// Its address.
    pub addr: SocketAddr,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

async fn receive(
    State(shared): State<Shared>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let headers = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                v.to_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let seen = {
        let mut got = shared.got.lock().unwrap();
        got.push(Received {
            path: path.clone(),
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        got.iter().filter(|r| r.path == path).count()
    };
    match path.as_str() {
        "ok" => StatusCode::OK,
        "hang-once" if seen == 1 => std::future::pending().await,
        "hang-once" => StatusCode::OK,
        "gone" => StatusCode::GONE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl Receiver {
    /// Starts on a free port.
    pub async fn start() -> Receiver {
        Receiver::start_on(0).await
    }

    /// Starts on `port` (0: a free one).
    pub async fn start_on(port: u16) -> Receiver {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("binding the receiver");
        let addr = listener.local_addr().unwrap();
        let shared = Shared::default();
        let app = Router::new()
            .route("/{path}", post(receive))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("the receiver runs");
        });
        Receiver { addr, shared, task }
    }

    /// The URL of `path` (`ok`, `gone`, `fail`, `hang-once`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// Every request so far to `path`.
    pub fn got(&self, path: &str) -> Vec<Received> {
        self.shared
            .got
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// Waits until `path` got at least `n` requests; answers them all.
    pub async fn wait_for(&self, path: &str, n: usize) -> Vec<Received> {
        until(&format!("{n} request(s) on /{path}"), || async {
            let got = self.got(path);
            (got.len() >= n).then_some(got)
        })
        .await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Creates root's endpoint at `url` for `events`: its id and its secret (`whsec_...`).
pub async fn webhook(fleet: &Fleet, url: &str, events: &[&str]) -> (String, String) {
    let hook = fleet
        .ok(
            "webhook.create",
            json!({ "tenantId": "root", "url": url, "events": events }),
        )
        .await;
    let secret = hook["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{secret}");
    (hook["id"].as_str().unwrap().to_string(), secret)
}

/// Polls `f` every 50 ms until it answers `Some`, or panics after [`DEADLINE`].
pub async fn until<T, F, Fut>(what: &str, f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    until_within(DEADLINE, what, f).await
}

/// Polls `f` every 50 ms until it answers `Some`, or panics after `limit`.
pub async fn until_within<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Verifies a delivery with the `standardwebhooks` npm package (an implementation of the
/// specification independent of the server's) and answers the payload it returns.
pub fn verify(secret: &str, received: &Received) -> Result<Value, String> {
    const SCRIPT: &str = r#"
const { Webhook } = require('standardwebhooks');
let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  const { secret, headers, body } = JSON.parse(input);
  try {
    process.stdout.write(JSON.stringify(new Webhook(secret).verify(body, headers)));
  } catch (e) {
    process.stderr.write(String(e));
    process.exit(1);
  }
});
"#;
    let tools = std::env::var("BETTER_COMPUTE_TOOLS").unwrap_or_else(|_| {
        format!(
            "{}/.cache/better-compute",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    let modules = format!("{tools}/node_modules");
    assert!(
        std::path::Path::new(&modules)
            .join("standardwebhooks")
            .is_dir(),
        "the standardwebhooks npm package is not in {modules}: run scripts/setup --test"
    );
    let mut child = Command::new("node")
        .args(["-e", SCRIPT])
        .env("NODE_PATH", &modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running node");
    let input = json!({ "secret": secret, "headers": received.headers, "body": received.body });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("node runs");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("the verified payload"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Runs one SQL statement on the server's database (SQLite or PostgreSQL).
pub async fn sql(database: &str, statement: &str) {
    use sqlx::Connection as _;
    sqlx::any::install_default_drivers();
    let url = if database.starts_with("sqlite:") {
        format!("{database}?mode=rw")
    } else {
        database.to_string()
    };
    let mut conn = sqlx::AnyConnection::connect(&url)
        .await
        .expect("connecting to the server's database");
    sqlx::query(statement)
        .execute(&mut conn)
        .await
        .expect("running SQL");
    conn.close().await.ok();
}

/// A small document: a site and a pool with a policy.
pub fn document(budget: f64) -> Value {
    json!({
        "version": 1,
        "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
        "pools": [{ "name": "vps-fra", "site": "fra", "class": "vps-host",
                    "policy": { "disruptionBudget": budget } }]
    })
}

/// Applies `doc` to `tenant`; answers the applied planHash.
pub async fn apply(fleet: &Fleet, tenant: &str, doc: &Value) -> String {
    let applied = fleet
        .ok("fleet.apply", json!({ "tenantId": tenant, "config": doc }))
        .await;
    applied["plan"]["planHash"].as_str().unwrap().to_string()
}

/// Sets the policy of pool `vps-fra` of `tenant` by hand (`pool.update`), as drift happens.
pub async fn edit_pool(fleet: &Fleet, tenant: &str, budget: f64) {
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": tenant }))
        .await;
    let pool = crate::server_support::exported(&export, "pool", "vps-fra").clone();
    fleet
        .ok(
            "pool.update",
            json!({ "tenantId": tenant, "id": pool["id"], "ifRevision": pool["revision"],
                    "policy": { "disruptionBudget": budget } }),
        )
        .await;
}

/// The tenant's `fleet.status`.
pub async fn status(fleet: &Fleet, tenant: &str) -> Value {
    fleet
        .ok("fleet.status", json!({ "tenantId": tenant }))
        .await
}

/// Waits until the tenant has been checked twice more after now (so anything those checks
/// would publish is in the events table); answers the last status.
pub async fn two_more_checks(fleet: &Fleet, tenant: &str) -> Value {
    let mut last = status(fleet, tenant).await["applied"]["checkedAt"]
        .as_i64()
        .unwrap_or(0);
    let mut answer = Value::Null;
    for _ in 0..2 {
        answer = until("another drift check", || async {
            let s = status(fleet, tenant).await;
            let at = s["applied"]["checkedAt"].as_i64().unwrap_or(0);
            (at > last).then_some(s)
        })
        .await;
        last = answer["applied"]["checkedAt"].as_i64().unwrap();
    }
    answer
}

/// The tenant's events, newest first.
pub async fn events(fleet: &Fleet, tenant: &str) -> Vec<Value> {
    fleet.ok("event.list", json!({ "tenantId": tenant })).await["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// The types of the tenant's events, oldest first.
pub async fn event_types(fleet: &Fleet, tenant: &str) -> Vec<String> {
    let mut types: Vec<String> = events(fleet, tenant)
        .await
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    types.reverse();
    types
}
