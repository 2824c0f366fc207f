//! Benchmarks of the server, printed, not asserted (`cargo test --release --test server_bench
//! -- --ignored --nocapture`): a maximal document applied in one transaction against the same
//! calls made one HTTP request each, and `fleet.plan` under load on loopback with `wrk --latency`
//! (from apt; `scripts/setup --test` installs it): requests per second, p50 and p99. Besides the
//! lines for people, `BENCH {json}` lines carry the figures to `scripts/bench`'s report.

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

    // The default per-key limit (1000 requests/s) is what the one-request-each loop would
    // measure once a call takes under a millisecond: off, so the server's own work is timed.
    let no_limit = [("BETTER_COMPUTE_RATE_LIMIT", "off")];
    let one = Fleet::start_env(db, &[], &no_limit).await;
    one.ok("tenant.create", json!({ "id": "acme" })).await;
    let started = Instant::now();
    let applied = one
        .ok("fleet.apply", json!({ "tenantId": "root", "config": doc }))
        .await;
    let apply_time = started.elapsed();
    let n = applied["applied"].as_u64().unwrap();

    let each = Fleet::start_env(db, &[], &no_limit).await;
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
    match wrk(&one, &body) {
        Ok(load) => {
            let table = format!(
                "fleet.plan of a 1000-pool document under `wrk --latency -t2 -c{WRK_CONNECTIONS} -d{}s` on loopback",
                wrk_seconds()
            );
            println!(
                "{db:?}: fleet.plan (1000 pools) with wrk: {:.1} requests/s, p50 {:.0} ms, p99 {:.0} ms, {} requests, {} non-2xx",
                load.rps, load.p50_ms, load.p99_ms, load.requests, load.non_2xx
            );
            assert_eq!(load.non_2xx, 0, "every fleet.plan under load answers 200");
            bench_row(
                &table,
                "throughput",
                db,
                &format!("{:.1} requests/s", load.rps),
            );
            bench_row(&table, "latency p50", db, &format!("{:.0} ms", load.p50_ms));
            bench_row(&table, "latency p99", db, &format!("{:.0} ms", load.p99_ms));
            bench_row(
                &table,
                "requests answered (all 200)",
                db,
                &load.requests.to_string(),
            );
        }
        Err(why) => println!("{db:?}: fleet.plan with wrk: not measured: {why}"),
    }

    let table = "fleet.apply of the maximal document, and fleet.plan and fleet.export one request at a time";
    bench_row(
        table,
        &format!("fleet.apply: {n} calls in one transaction"),
        db,
        &format!("{:.2} s", apply_time.as_secs_f64()),
    );
    bench_row(
        table,
        "the same calls, one HTTP request each",
        db,
        &format!("{:.2} s", each_time.as_secs_f64()),
    );
    bench_row(
        table,
        "one transaction is faster by",
        db,
        &format!(
            "{:.1} x",
            each_time.as_secs_f64() / apply_time.as_secs_f64()
        ),
    );
    bench_row(
        table,
        "fleet.plan (1000 pools), sequential",
        db,
        &format!("{plan_rps:.1} requests/s"),
    );
    bench_row(
        table,
        "fleet.export (7000 objects), sequential",
        db,
        &format!("{export_rps:.1} requests/s"),
    );
}

/// Connections `wrk` keeps open (over its 2 threads).
const WRK_CONNECTIONS: usize = 8;

/// How long `wrk` runs: `BENCH_WRK_SECONDS`, 15 by default (about 150 requests at the
/// planner's speed: enough for a p99).
fn wrk_seconds() -> u64 {
    std::env::var("BENCH_WRK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15)
}

/// What `wrk --latency` reported.
#[derive(Debug)]
struct Load {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    requests: u64,
    non_2xx: u64,
}

/// Runs `wrk --latency` against `fleet.plan` with `body` (a Lua script sets the POST body and
/// the key), and reads its report.
fn wrk(fleet: &Fleet, body: &str) -> Result<Load, String> {
    let dir = common::TempDir::new("wrk");
    let body_path = dir.path().join("body.json");
    std::fs::write(&body_path, body).map_err(|e| e.to_string())?;
    let script = dir.path().join("plan.lua");
    std::fs::write(
        &script,
        format!(
            "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Authorization\"] = \"Bearer {}\"\nlocal f = io.open(\"{}\")\nwrk.body = f:read(\"*a\")\nf:close()\n",
            fleet.key,
            body_path.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let out = std::process::Command::new("wrk")
        .args([
            "--latency".to_string(),
            "-t2".to_string(),
            format!("-c{WRK_CONNECTIONS}"),
            format!("-d{}s", wrk_seconds()),
            // A plan answers in about a second under load: wrk's 2 s default would drop some.
            "--timeout".to_string(),
            "30s".to_string(),
            "-s".to_string(),
            script.display().to_string(),
            fleet.server.url("/api/fleet.plan"),
        ])
        .output()
        .map_err(|e| format!("wrk did not run ({e}); scripts/setup --test installs it"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_wrk(&text).ok_or_else(|| format!("unexpected wrk output: {text}"))
}

/// Reads `wrk --latency`'s report: requests/s, the 50% and 99% lines of the latency
/// distribution, the request count and any non-2xx answers or socket errors.
fn parse_wrk(text: &str) -> Option<Load> {
    let field = |prefix: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(prefix))
            .map(str::trim)
    };
    let rps = field("Requests/sec:")?.parse().ok()?;
    let p50_ms = duration_ms(field("50%")?)?;
    let p99_ms = duration_ms(field("99%")?)?;
    let requests = text
        .lines()
        .find(|l| l.contains("requests in"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let non_2xx = field("Non-2xx or 3xx responses:").map_or(Some(0), |n| n.parse().ok())?;
    let errors: u64 = field("Socket errors:").map_or(0, |l| {
        l.split(',')
            .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
            .sum()
    });
    Some(Load {
        rps,
        p50_ms,
        p99_ms,
        requests,
        non_2xx: non_2xx + errors,
    })
}

/// A wrk duration (`812.35ms`, `1.20s`, `950.00us`, `1.02m`) in milliseconds.
fn duration_ms(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    Some(match unit {
        "us" => n / 1e3,
        "ms" => n,
        "s" => n * 1e3,
        "m" => n * 60e3,
        "h" => n * 3600e3,
        _ => return None,
    })
}

/// Prints a row of the report's side-by-side tables (scripts/bench collects `BENCH` lines):
/// `table` is the caption, `measure` the line, `db` the column.
fn bench_row(table: &str, measure: &str, db: Db, cell: &str) {
    let db = match db {
        Db::Sqlite => "SQLite",
        Db::Postgres => "PostgreSQL",
    };
    println!(
        "BENCH {}",
        json!({ "section": "server", "table": table, "measure": measure, "db": db, "cell": cell })
    );
}

#[test]
fn reads_wrk_reports() {
    let report = "Running 5s test @ http://127.0.0.1:4000/api/fleet.plan
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   655.12ms  120.50ms   1.20s    70.00%
    Req/Sec     6.10      3.00    10.00     60.00%
  Latency Distribution
     50%  640.00ms
     75%  700.00ms
     90%  800.00ms
     99%    1.10s
  58 requests in 5.01s, 1.20MB read
  Socket errors: connect 0, read 0, write 0, timeout 2
Requests/sec:     11.58
Transfer/sec:    245.00KB
";
    let load = parse_wrk(report).unwrap();
    assert_eq!(load.rps, 11.58);
    assert_eq!(load.p50_ms, 640.0);
    assert_eq!(load.p99_ms, 1100.0);
    assert_eq!(load.requests, 58);
    assert_eq!(load.non_2xx, 2);
    assert!(parse_wrk("wrk: command failed").is_none());
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
