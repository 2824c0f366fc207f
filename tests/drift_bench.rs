//! Benchmark of the drift pass, printed, not asserted (`cargo test --release --test
//! drift_bench -- --ignored --nocapture`; PostgreSQL too when `BETTER_COMPUTE_TEST_POSTGRES`
//! is set): the time of one pass of `fleet.drift` over 100, 1,000 and 10,000 tenants
//! (`BENCH_DRIFT_TENANTS=100,1000,10000`), each with an applied document of 200 items, so how
//! it grows with the number of tenants shows.
//!
//! Setup: one tenant is created and its document applied through the HTTP API of the real
//! server; the other tenants are copies of its rows (tenant, sites, pools, quotas, flavors,
//! names, applied document), made by `INSERT ... SELECT` in one transaction, with ids of their
//! own. Applying 200 items one tenant at a time would take hours at 10,000 tenants. The pass
//! then proves the copies whole: every tenant is checked, with no drift and no error.
//!
//! A pass is timed in a server started on the prepared database (every process queues `all`
//! at start), from the start of the `all` run, as the server's `reconciler.status` records it,
//! to the last tenant's `checked_at` in the database.

mod common;
mod drift_support;
mod server_support;

use common::TempDir;
use serde_json::{Value, json};
use server_support::{Fleet, fresh_postgres};
use sqlx::{AnyConnection, Connection as _, Row as _};
use std::time::{Duration, Instant};

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

/// The tenant counts of `BENCH_DRIFT_TENANTS` (comma-separated), ascending.
fn sizes() -> Vec<usize> {
    let text = std::env::var("BENCH_DRIFT_TENANTS").unwrap_or_else(|_| "100,1000,10000".into());
    let mut sizes: Vec<usize> = text
        .split(',')
        .map(|s| s.trim().parse().expect("BENCH_DRIFT_TENANTS: numbers"))
        .collect();
    sizes.sort_unstable();
    sizes
}

/// The id of tenant `i`: fixed width, so ids sort as numbers do.
fn tenant(i: usize) -> String {
    format!("b{}", 100_000 + i)
}

async fn connect(database: &str) -> AnyConnection {
    sqlx::any::install_default_drivers();
    let url = if database.starts_with("sqlite:") {
        format!("{database}?mode=rw")
    } else {
        database.to_string()
    };
    AnyConnection::connect(&url)
        .await
        .expect("connecting to the server's database")
}

/// The tables of a tenant's fleet, parents first, with how to find the template's rows.
const TABLES: [(&str, &str); 8] = [
    ("sites", "x.tenant_id = $1"),
    ("provider_accounts", "x.tenant_id = $1"),
    ("pools", "x.tenant_id = $1"),
    (
        "pool_owner_quotas",
        "x.pool_id IN (SELECT id FROM pools WHERE tenant_id = $1)",
    ),
    ("flavors", "x.tenant_id = $1"),
    ("sandbox_templates", "x.tenant_id = $1"),
    ("fleet_names", "x.tenant_id = $1"),
    ("fleet_applied", "x.tenant_id = $1"),
];

/// Columns holding an object's id or a reference to one: a copy gets ids of its own.
const ID_COLUMNS: [&str; 6] = [
    "id",
    "object_id",
    "site_id",
    "pool_id",
    "provider_account_id",
    "flavor_id",
];

/// Copies the fleet of tenant `template` (its rows, as the server wrote them) to the tenants
/// `from..to`, in one transaction; answers how many rows it wrote. Columns are read from the
/// tables themselves, so a column added later is copied too.
async fn copy_tenants(database: &str, template: &str, from: usize, to: usize) -> u64 {
    let mut conn = connect(database).await;
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("CREATE TEMPORARY TABLE bench_copies (id TEXT PRIMARY KEY)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let ids: Vec<String> = (from..to).map(tenant).collect();
    for chunk in ids.chunks(500) {
        let values: Vec<String> = chunk.iter().map(|id| format!("('{id}')")).collect();
        sqlx::query(&format!(
            "INSERT INTO bench_copies (id) VALUES {}",
            values.join(",")
        ))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    let mut written = 0;
    let tenants = std::iter::once(("tenants", "x.id = $1"));
    for (table, filter) in tenants.chain(TABLES) {
        let sample = sqlx::query(&format!("SELECT * FROM {table} x WHERE {filter} LIMIT 1"))
            .bind(template)
            .fetch_optional(&mut *tx)
            .await
            .unwrap_or_else(|e| panic!("reading {table}: {e}"));
        let Some(sample) = sample else { continue };
        let columns: Vec<String> = sample
            .columns()
            .iter()
            .map(|c| sqlx::Column::name(c).to_string())
            .collect();
        let values: Vec<String> = columns
            .iter()
            .map(|c| match c.as_str() {
                "id" if table == "tenants" => "c.id".to_string(),
                "name" if table == "tenants" => "c.id".to_string(),
                "tenant_id" => "c.id".to_string(),
                // Never checked: the pass below is the first.
                "checked_at" | "drift" | "check_error" => "NULL".to_string(),
                c if ID_COLUMNS.contains(&c) => format!("x.{c} || '-' || c.id"),
                c => format!("x.{c}"),
            })
            .collect();
        let statement = format!(
            "INSERT INTO {table} ({}) SELECT {} FROM {table} x, bench_copies c WHERE {filter}",
            columns.join(", "),
            values.join(", ")
        );
        written += sqlx::query(&statement)
            .bind(template)
            .execute(&mut *tx)
            .await
            .unwrap_or_else(|e| panic!("copying {table}: {e}"))
            .rows_affected();
    }
    sqlx::query("DROP TABLE bench_copies")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    // Fresh statistics after a bulk load, as autovacuum would gather in time: without them
    // PostgreSQL may plan the pass's queries for the one-tenant tables it saw before.
    if database.starts_with("postgres") {
        sqlx::query("ANALYZE").execute(&mut conn).await.unwrap();
    }
    conn.close().await.ok();
    written
}

/// The count of checked tenants and the last `checked_at`; with `clean`, only those checked
/// with no drift and no error.
async fn checked(conn: &mut AnyConnection, clean: bool) -> (i64, Option<i64>) {
    let filter = if clean {
        " AND drift IS NULL AND check_error IS NULL"
    } else {
        ""
    };
    let row = sqlx::query(&format!(
        "SELECT COUNT(*), MAX(checked_at) FROM fleet_applied WHERE checked_at IS NOT NULL{filter}"
    ))
    .fetch_one(&mut *conn)
    .await
    .expect("reading fleet_applied");
    (row.try_get(0).unwrap(), row.try_get(1).unwrap())
}

/// Starts a server on `database`, waits for its first pass over `tenants` tenants, and
/// answers the pass's milliseconds.
async fn pass(database: &str, key: &str, tenants: usize) -> i64 {
    let mut conn = connect(database).await;
    sqlx::query("UPDATE fleet_applied SET checked_at = NULL, drift = NULL, check_error = NULL")
        .execute(&mut conn)
        .await
        .unwrap();
    let mut fleet = Fleet::start_on(database, &["--drift-every", "1h"], &[]);
    fleet.key = key.to_string();
    // The `all` run is this process's first: read it while the list of runs is short.
    let start = drift_support::until_within(Duration::from_secs(120), "the all run", || async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let s = fleet.ok("reconciler.status", json!({ "runs": true })).await;
        s["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == "all")
            .map(|r| r["startedAt"].as_i64().unwrap())
    })
    .await;
    // Polled slowly: a poll costs the database what the pass needs.
    let deadline = Instant::now() + Duration::from_secs(1800);
    let end = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let (n, Some(last)) = checked(&mut conn, false).await
            && n as usize >= tenants
        {
            break last;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for a whole drift pass"
        );
    };
    drop(fleet);
    let (clean, _) = checked(&mut conn, true).await;
    assert_eq!(
        clean as usize, tenants,
        "every tenant checked in line, with no error"
    );
    conn.close().await.ok();
    end - start
}

/// `n` with thousands separators.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Prints a row of the report's side-by-side tables (scripts/bench collects `BENCH` lines);
/// `point` (tenants, pass ms) is a point of the report's drift plot.
fn bench_row(measure: &str, db: &str, cell: &str, point: Option<(usize, i64)>) {
    let table = "Drift pass (`fleet.drift` over every tenant, each with an applied 200-item document, nothing drifted)";
    let mut row =
        json!({ "section": "server", "table": table, "measure": measure, "db": db, "cell": cell });
    if let Some((tenants, ms)) = point {
        row["tenants"] = json!(tenants);
        row["passMs"] = json!(ms);
    }
    println!("BENCH {row}");
}

async fn bench(label: &str, database: &str) {
    let started = Instant::now();
    let setup = Fleet::start_on(database, &["--drift-every", "1h"], &[]);
    let key = setup.key.clone();
    let template = tenant(0);
    setup.ok("tenant.create", json!({ "id": template })).await;
    drift_support::apply(&setup, &template, &document()).await;
    drop(setup);
    println!(
        "drift pass, {label}: tenant {template} applied over HTTP in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut made = 1;
    for n in sizes() {
        let started = Instant::now();
        let rows = copy_tenants(database, &template, made, n).await;
        let copy_time = started.elapsed();
        made = made.max(n);
        let ms = pass(database, &key, n).await;
        println!(
            "drift pass, {label}: {n} tenants x 200 items: {ms} ms ({:.2} ms per tenant; setup: {rows} rows copied in {:.1} s)",
            ms as f64 / n as f64,
            copy_time.as_secs_f64()
        );
        let count = format!("{} tenants", thousands(n as u64));
        bench_row(
            &format!("{count}: the pass"),
            label,
            &format!("{:.1} s", ms as f64 / 1e3),
            Some((n, ms)),
        );
        bench_row(
            &format!("{count}: per tenant"),
            label,
            &format!("{:.2} ms", ms as f64 / n as f64),
            None,
        );
        bench_row(
            &format!("{count}: setup, rows copied in SQL"),
            label,
            &format!("{} in {:.1} s", thousands(rows), copy_time.as_secs_f64()),
            None,
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
