//! Benchmarks of the server, printed, not asserted (`cargo test --release --test server_bench
//! -- --ignored --nocapture`): a maximal document applied in one transaction against the same
//! calls made one HTTP request each, and `fleet.plan` requests per second on loopback with
//! `wrk` (from apt) when it is installed.

mod common;
mod server_support;

use serde_json::{Value, json};
use server_support::{Db, Fleet, calls};
use std::time::Instant;

/// 1000 items in every list (pools with an owner quota and an offer each): 7000 calls.
fn maximal_document(n: usize) -> Value {
    let sites: Vec<Value> = (0..n)
        .map(|i| json!({ "name": format!("s{i}"), "kind": "shared", "region": "eu" }))
        .collect();
    let accounts: Vec<Value> = (0..n)
        .map(|i| json!({ "name": format!("a{i}"), "provider": "hetzner-cloud", "config": { "token": format!("secret://t{i}") } }))
        .collect();
    let pools: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "name": format!("p{i}"), "site": format!("s{i}"), "class": "vps-host",
                "policy": { "disruptionBudget": 0.1 }, "ownerQuota": { "gpu": i },
                "offers": [{ "tenant": "acme", "quota": { "vcpu": 8 } }]
            })
        })
        .collect();
    let flavors: Vec<Value> = (0..n)
        .map(|i| json!({ "pool": format!("p{i}"), "name": "small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }))
        .collect();
    let templates: Vec<Value> = (0..n)
        .map(|i| json!({ "name": format!("t{i}"), "pool": format!("p{i}"), "flavor": "small", "imageId": "ubuntu", "network": "private" }))
        .collect();
    json!({ "version": 1, "sites": sites, "providerAccounts": accounts, "pools": pools, "flavors": flavors, "sandboxTemplates": templates })
}

async fn bench(db: Db) {
    let doc = maximal_document(1000);

    let one = Fleet::start(db, &[]).await;
    one.ok("tenant.create", json!({ "id": "acme" })).await;
    let started = Instant::now();
    let applied = one
        .ok("fleet.apply", json!({ "tenantId": "root", "config": doc }))
        .await;
    let apply_time = started.elapsed();
    let n = applied["applied"].as_u64().unwrap();

    let each = Fleet::start(db, &[]).await;
    each.ok("tenant.create", json!({ "id": "acme" })).await;
    let plan = each
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    let started = Instant::now();
    for call in calls(&plan) {
        each.ok(call["method"].as_str().unwrap(), call["input"].clone())
            .await;
    }
    let each_time = started.elapsed();
    let after = each
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    assert!(calls(&after).is_empty());

    println!(
        "{db:?}: apply of {n} calls in one transaction: {:.2?}; the same calls one HTTP request each: {:.2?} ({:.1}x)",
        apply_time,
        each_time,
        each_time.as_secs_f64() / apply_time.as_secs_f64()
    );

    // fleet.plan on a 1000-pool document, against the applied fleet.
    let pools_only = json!({ "version": 1, "sites": doc["sites"], "pools": doc["pools"] });
    let body = json!({ "tenantId": "root", "config": pools_only }).to_string();
    let started = Instant::now();
    let rounds = 20;
    for _ in 0..rounds {
        let p = one
            .ok("fleet.plan", serde_json::from_str(&body).unwrap())
            .await;
        assert!(calls(&p).is_empty());
    }
    let plan_rps = rounds as f64 / started.elapsed().as_secs_f64();
    println!("{db:?}: fleet.plan (1000 pools, sequential): {plan_rps:.1} requests/s");
    let started = Instant::now();
    for _ in 0..rounds {
        one.ok("fleet.export", json!({ "tenantId": "root" })).await;
    }
    let export_rps = rounds as f64 / started.elapsed().as_secs_f64();
    println!(
        "{db:?}: fleet.export of the 7000-item fleet (sequential): {export_rps:.1} requests/s"
    );
    if std::process::Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok()
    {
        let dir = common::TempDir::new("wrk");
        let body_path = dir.path().join("body.json");
        std::fs::write(&body_path, &body).unwrap();
        let script = dir.path().join("plan.lua");
        std::fs::write(
            &script,
            format!(
                "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Authorization\"] = \"Bearer {}\"\nlocal f = io.open(\"{}\")\nwrk.body = f:read(\"*a\")\nf:close()\n",
                one.key,
                body_path.display()
            ),
        )
        .unwrap();
        let out = std::process::Command::new("wrk")
            .args([
                "-t2",
                "-c8",
                "-d5s",
                "-s",
                script.to_str().unwrap(),
                &one.server.url("/api/fleet.plan"),
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let rps = text
            .lines()
            .find(|l| l.starts_with("Requests/sec"))
            .unwrap_or("Requests/sec: ?");
        let non2xx = text.lines().find(|l| l.contains("Non-2xx")).unwrap_or("");
        println!("{db:?}: fleet.plan (1000 pools) with wrk -t2 -c8 -d5s: {rps} {non2xx}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --ignored --nocapture"]
async fn bench_sqlite() {
    bench(Db::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --ignored --nocapture"]
async fn bench_postgres() {
    bench(Db::Postgres).await
}
