//! Benchmark of the drift pass, printed, not asserted (`cargo test --release --test
//! drift_bench -- --ignored --nocapture`; PostgreSQL too when `BETTER_COMPUTE_TEST_POSTGRES`
//! is set): the time of one pass of `fleet.drift` over 100, 300 and 1000 tenants, each with an
//! applied document of 200 items, so how it grows with the number of tenants shows.
//!
//! A pass is timed from the start of the `all` run to the end of the last tenant run, as the
//! server's own `reconciler.status` records them, in a server started on the prepared
//! database (every process queues `all` at start).

mod common;
mod drift_support;
mod server_support;

use common::TempDir;
use serde_json::{Value, json};
use server_support::{Fleet, fresh_postgres};
use std::time::Instant;

/// 200 items: a site, 19 pools with 9 owner quota entries each, and 9 flavors.
fn document() -> Value {
    let pools: Vec<Value> = (0..19)
        .map(|i| {
            let quota: serde_json::Map<String, Value> =
                (0..9).map(|r| (format!("r{r}"), json!(r * 8))).collect();
            json!({ "name": format!("p{i}"), "site": "fra", "class": "vps-host",
                    "policy": { "disruptionBudget": 0.1 }, "ownerQuota": quota })
        })
        .collect();
    let flavors: Vec<Value> = (0..9)
        .map(|i| json!({ "pool": "p0", "name": format!("f{i}"), "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }))
        .collect();
    json!({
        "version": 1,
        "sites": [{ "name": "fra", "kind": "shared", "region": "eu" }],
        "pools": pools,
        "flavors": flavors,
    })
}

/// Starts a server on `database`, waits for its first pass over `tenants` tenants, and
/// answers the pass's milliseconds.
async fn pass(database: &str, key: &str, tenants: usize) -> i64 {
    let mut fleet = Fleet::start_on(database, &["--drift-every", "1h"], &[]);
    fleet.key = key.to_string();
    let limit = std::time::Duration::from_secs(1800);
    let runs = drift_support::until_within(limit, "a whole drift pass", || async {
        // Polled slowly: answering the status costs the server what the pass needs.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let s = fleet.ok("reconciler.status", json!({ "runs": true })).await;
        let runs = s["runs"].as_array().unwrap().clone();
        let done = runs
            .iter()
            .filter(|r| r["key"].as_str().unwrap().starts_with("tenant:"))
            .count();
        (done >= tenants).then_some(runs)
    })
    .await;
    let start = runs
        .iter()
        .find(|r| r["key"] == "all")
        .map(|r| r["startedAt"].as_i64().unwrap())
        .unwrap();
    let end = runs
        .iter()
        .map(|r| r["endedAt"].as_i64().unwrap())
        .max()
        .unwrap();
    end - start
}

async fn bench(label: &str, database: &str) {
    let doc = document();
    let setup = Fleet::start_on(database, &["--drift-every", "1h"], &[]);
    let key = setup.key.clone();
    let mut made = 0;
    let mut setup = Some(setup);
    for n in [100usize, 300, 1000] {
        let fleet = match setup.take() {
            Some(f) => f,
            None => {
                let mut f = Fleet::start_on(database, &["--drift-every", "1h"], &[]);
                f.key = key.clone();
                f
            }
        };
        let started = Instant::now();
        while made < n {
            let tenant = format!("t{made:04}");
            fleet.ok("tenant.create", json!({ "id": tenant })).await;
            drift_support::apply(&fleet, &tenant, &doc).await;
            made += 1;
        }
        let setup_time = started.elapsed();
        drop(fleet);
        let ms = pass(database, &key, n).await;
        println!(
            "drift pass, {label}: {n} tenants x 200 items: {ms} ms ({:.2} ms per tenant; setup {:.1} s)",
            ms as f64 / n as f64,
            setup_time.as_secs_f64()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --ignored --nocapture"]
async fn drift_pass_sqlite() {
    let dir = TempDir::new("drift-bench");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    bench("SQLite", &database).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --ignored --nocapture"]
async fn drift_pass_postgres() {
    if std::env::var("BETTER_COMPUTE_TEST_POSTGRES").is_err() {
        println!("drift pass, PostgreSQL: skipped (BETTER_COMPUTE_TEST_POSTGRES is not set)");
        return;
    }
    bench("PostgreSQL", &fresh_postgres().await).await;
}
