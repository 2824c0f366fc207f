//! Helpers of the server tests: the real binary (through `common::Server`) on SQLite or on
//! its own database of the test PostgreSQL, and a small JSON-over-HTTP client.
#![allow(dead_code)]

use crate::common::{Server, postgres_url};
use serde_json::{Value, json};
use sqlx::Connection as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Which database the server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    /// A fresh SQLite file in the server's working folder.
    Sqlite,
    /// A fresh database of the PostgreSQL of `BETTER_COMPUTE_TEST_POSTGRES`.
    Postgres,
}

/// An error answer: HTTP status, `error.code`, and the whole envelope.
#[derive(Debug, Clone)]
pub struct Failure {
    /// HTTP status.
    pub status: u16,
    /// `error.code`.
    pub code: String,
    /// `error.message`.
    pub message: String,
    /// `error.details`.
    pub details: Value,
}

/// A running server with its administrator's key.
pub struct Fleet {
    /// The process.
    pub server: Server,
    /// The first administrator's key, as printed.
    pub key: String,
    /// The database URL it runs on.
    pub database: String,
    client: reqwest::Client,
}

/// Creates a fresh database on the test PostgreSQL and returns its URL.
pub async fn fresh_postgres() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let base = postgres_url();
    let name = format!(
        "bc_test_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let mut conn = sqlx::postgres::PgConnection::connect(&base)
        .await
        .expect("connecting to the test PostgreSQL");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("creating a test database");
    let (prefix, _) = base.rsplit_once('/').expect("a database URL");
    format!("{prefix}/{name}")
}

impl Fleet {
    /// Starts a server on `db` with extra flags.
    pub async fn start(db: Db, args: &[&str]) -> Fleet {
        Fleet::start_env(db, args, &[]).await
    }

    /// Starts a server on `db` with extra flags and environment variables.
    pub async fn start_env(db: Db, args: &[&str], env: &[(&str, &str)]) -> Fleet {
        let database = match db {
            Db::Sqlite => "sqlite://data/fleet.db".to_string(),
            Db::Postgres => fresh_postgres().await,
        };
        Fleet::start_on(&database, args, env)
    }

    /// Starts a server on the database at `database` (which another server may share).
    pub fn start_on(database: &str, args: &[&str], env: &[(&str, &str)]) -> Fleet {
        let database = database.to_string();
        let mut all = vec!["--database".to_string(), database.clone()];
        all.extend(args.iter().map(|a| a.to_string()));
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let server = Server::start_with(all, |cmd| {
            cmd.env_remove("BETTER_COMPUTE_FAULT");
            for (k, v) in &env {
                cmd.env(k, v);
            }
        });
        let key = server
            .stdout()
            .iter()
            .find_map(|l| l.strip_prefix("admin api key: ").map(str::to_string))
            .unwrap_or_default();
        Fleet {
            server,
            key,
            database,
            client: reqwest::Client::new(),
        }
    }

    /// Calls `method` as `key`.
    pub async fn call_as(&self, key: &str, method: &str, input: Value) -> Result<Value, Failure> {
        let response = self
            .client
            .post(self.server.url(&format!("/api/{method}")))
            .bearer_auth(key)
            .json(&input)
            .send()
            .await
            .expect("the server answers");
        answer(response).await
    }

    /// Calls `method` as the administrator.
    pub async fn call(&self, method: &str, input: Value) -> Result<Value, Failure> {
        self.call_as(&self.key, method, input).await
    }

    /// Calls `method` as the administrator and expects success.
    pub async fn ok(&self, method: &str, input: Value) -> Value {
        match self.call(method, input).await {
            Ok(v) => v,
            Err(f) => panic!("{method} failed: {f:?}"),
        }
    }

    /// Calls `method` as the administrator and expects the error `code`.
    pub async fn fails(&self, method: &str, input: Value, code: &str) -> Failure {
        self.fails_as(&self.key.clone(), method, input, code).await
    }

    /// Calls `method` as `key` and expects the error `code`.
    pub async fn fails_as(&self, key: &str, method: &str, input: Value, code: &str) -> Failure {
        match self.call_as(key, method, input).await {
            Ok(v) => panic!("{method} succeeded, expected {code}: {v}"),
            Err(f) => {
                assert_eq!(f.code, code, "{method}: {f:?}");
                f
            }
        }
    }

    /// A raw POST with any body and headers.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Creates a service account in `tenant` with `grants` (permission, scope) and returns
    /// its id and key.
    pub async fn service_account(
        &self,
        tenant: &str,
        name: &str,
        grants: &[(&str, &str)],
    ) -> (String, String) {
        let sa = self
            .ok(
                "serviceAccount.create",
                json!({ "tenantId": tenant, "name": name }),
            )
            .await;
        let id = sa["id"].as_str().unwrap().to_string();
        for (permission, scope) in grants {
            self.ok(
                "grant.create",
                json!({ "tenantId": tenant, "principalId": id, "permission": permission, "scope": scope }),
            )
            .await;
        }
        let key = self
            .ok(
                "apiKey.create",
                json!({ "tenantId": tenant, "principalId": id }),
            )
            .await;
        (id, key["key"].as_str().unwrap().to_string())
    }
}

/// Decodes an answer: the output, or the error envelope.
pub async fn answer(response: reqwest::Response) -> Result<Value, Failure> {
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("a JSON answer");
    if status == 200 {
        return Ok(body);
    }
    let error = &body["error"];
    assert!(
        error["details"].is_object(),
        "the envelope has details: {body}"
    );
    Err(Failure {
        status,
        code: error["code"].as_str().unwrap_or_default().to_string(),
        message: error["message"].as_str().unwrap_or_default().to_string(),
        details: error["details"].clone(),
    })
}

/// The calls of a plan answer.
pub fn calls(plan: &Value) -> &Vec<Value> {
    plan["calls"].as_array().expect("calls")
}

/// Objects of an export, without revisions: what exists, by kind, name and id.
pub fn identities(export: &Value) -> Vec<(String, String, Option<String>)> {
    export["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_string(),
                o["name"].as_str().unwrap().to_string(),
                o["id"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// Runs an async test body on SQLite, and on PostgreSQL in its `_postgres` twin.
#[macro_export]
macro_rules! both {
    ($name:ident, $body:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$body($crate::server_support::Db::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$body($crate::server_support::Db::Postgres).await
            }
        }
    };
}

/// The entry of an export's `objects` for `kind` and plan `name` (its id, revision, ...).
pub fn exported<'a>(export: &'a Value, kind: &str, name: &str) -> &'a Value {
    export["objects"]
        .as_array()
        .expect("an export's objects")
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == name)
        .unwrap_or_else(|| panic!("the export has no {kind} {name}"))
}
