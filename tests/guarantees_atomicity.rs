//! Atomic apply under faults (docs/guarantees.md, "Atomic apply"): the server process is
//! SIGKILLed at a random moment of a large apply (hundreds of calls), and a database error is
//! injected at a random call of one; after either, the fleet is exactly the old one or exactly
//! the new one, the audit rows match it, and the retried apply converges with no duplicate.
//!
//! `GUARANTEES_ROUNDS` (default 3) sets the rounds per database; `GUARANTEES_SEED` replays one.

mod common;
mod guarantees_support;
mod server_support;

use guarantees_support::{Database, Rng, figure, grouped_document, rounds};
use serde_json::{Value, json};
use server_support::{Db, Fleet, calls};
use std::time::Instant;

/// Items per group: every group adds 7 calls per item (210), every earlier group 6 (180).
const N: usize = 30;

/// How many rows each table must hold after `groups` groups were applied: one per item, so
/// a duplicate created by a retry shows here.
async fn assert_no_duplicates(database: &Database, groups: usize) {
    let n = (groups * N) as i64;
    for (table, expected) in [
        ("sites", n),
        ("pools", n),
        ("provider_accounts", n),
        ("flavors", n),
        ("sandbox_templates", n),
        ("pool_owner_quotas", n),
        ("pool_offers", n),
    ] {
        assert_eq!(
            database
                .count(&format!("SELECT COUNT(*) FROM {table}"))
                .await,
            expected,
            "{table}: one row per item of the document"
        );
    }
}

async fn export(fleet: &Fleet) -> Value {
    fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await
}

/// `doc` planned with prune against the fleet: no call and nothing blocked means the fleet is
/// exactly the document (prune makes every listed kind the whole truth).
async fn assert_exactly(fleet: &Fleet, doc: &Value) {
    let plan = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": doc, "prune": true }),
        )
        .await;
    assert!(
        calls(&plan).is_empty() && plan["summary"].get("blocked").is_none(),
        "the fleet is exactly the document: {}",
        plan["summary"]
    );
}

async fn audit_rows(database: &Database) -> i64 {
    database.count("SELECT COUNT(*) FROM audit").await
}

async fn sigkill_during_large_applies(db: Db) {
    let database = Database::fresh(db).await;
    let mut rng = Rng::new("sigkill");
    let mut fleet = Fleet::start_on(&database.url, &[], &[]);
    let key = fleet.key.clone();
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    let doc = grouped_document(1, N, 0);
    let started = Instant::now();
    let first = fleet
        .ok("fleet.apply", json!({ "tenantId": "root", "config": doc }))
        .await;
    // The time per call, so that kills spread over the whole of the next apply.
    let mut per_call = started.elapsed() / first["applied"].as_u64().unwrap() as u32;

    let (mut kept_old, mut got_new, mut calls_killed) = (0, 0, 0);
    let total = rounds(3);
    for round in 1..=total {
        let doc = grouped_document(round + 1, N, round);
        let old = export(&fleet).await;
        let audit_old = audit_rows(&database).await;
        let plan = fleet
            .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
            .await;
        let n = calls(&plan).len();
        assert_eq!(n, 7 * N + 6 * N * round, "round {round} plans every call");
        calls_killed += n;

        // The apply runs in a task of its own; the process is killed under it.
        let client = reqwest::Client::new();
        let url = fleet.server.url("/api/fleet.apply");
        let body = json!({ "tenantId": "root", "config": doc });
        let bearer = key.clone();
        let request = tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(bearer)
                .json(&body)
                .send()
                .await
                .map(|r| r.status().as_u16())
        });
        // Mostly inside the transaction, sometimes before it or after the commit.
        let delay = (per_call * n as u32).mul_f64(0.05 + rng.unit() * 0.9);
        tokio::time::sleep(delay).await;
        drop(fleet); // SIGKILL, and waits for the process to end
        let answered = request.await.unwrap();
        eprintln!("round {round}: {n} calls, killed after {delay:?}, answer {answered:?}");

        fleet = Fleet::start_on(&database.url, &[], &[]);
        fleet.key = key.clone();
        let after = export(&fleet).await;
        let audit_after = audit_rows(&database).await;
        let was_old = after == old;
        if was_old {
            kept_old += 1;
            assert!(
                !matches!(answered, Ok(200)),
                "an acknowledged apply was lost"
            );
            assert_eq!(audit_after, audit_old, "no audit row of the lost apply");
            assert_no_duplicates(&database, round).await;
        } else {
            got_new += 1;
            assert_exactly(&fleet, &doc).await;
            assert_eq!(
                audit_after,
                audit_old + n as i64 + 1,
                "one audit row per call and one for the apply"
            );
        }

        // The retry converges: all calls when the kill won, none when the apply had committed.
        let started = Instant::now();
        let retried = fleet
            .ok("fleet.apply", json!({ "tenantId": "root", "config": doc }))
            .await;
        let expected = if was_old { n } else { 0 };
        assert_eq!(retried["applied"], expected, "round {round}");
        if was_old {
            per_call = started.elapsed() / n as u32;
        } else {
            assert_eq!(export(&fleet).await, after);
        }
        assert_exactly(&fleet, &doc).await;
        assert_no_duplicates(&database, round + 1).await;
    }
    let label = format!("{db:?}").to_lowercase();
    figure(&format!("sigkill.{label}.kills"), total);
    figure(&format!("sigkill.{label}.survived"), total);
    figure(&format!("sigkill.{label}.old"), kept_old);
    figure(&format!("sigkill.{label}.new"), got_new);
    figure(&format!("sigkill.{label}.calls"), calls_killed);
}
both!(sigkill, sigkill_during_large_applies);

async fn database_error_at_random_calls(db: Db) {
    let database = Database::fresh(db).await;
    let mut rng = Rng::new("dberror");
    let key = {
        let fleet = Fleet::start_on(&database.url, &[], &[]);
        fleet.ok("tenant.create", json!({ "id": "acme" })).await;
        fleet
            .ok(
                "fleet.apply",
                json!({ "tenantId": "root", "config": grouped_document(1, N, 0) }),
            )
            .await;
        fleet.key.clone()
    };
    let total = rounds(3);
    let mut indices = Vec::new();
    for round in 1..=total {
        let doc = grouped_document(2, N, round);
        // The fault fires once per process, at call `index` of its next apply.
        let probe = {
            let mut f = Fleet::start_on(&database.url, &[], &[]);
            f.key = key.clone();
            f.ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
                .await
        };
        let n = calls(&probe).len();
        // The first and the last call always, then anywhere.
        let index = match round {
            1 => 0,
            2 => n - 1,
            _ => rng.below(n as u64) as usize,
        };
        indices.push(index);
        let mut fleet = Fleet::start_on(
            &database.url,
            &[],
            &[("BETTER_COMPUTE_FAULT", &format!("apply-dberror:{index}"))],
        );
        fleet.key = key.clone();
        let before = export(&fleet).await;
        let audit_before = audit_rows(&database).await;
        let failed = fleet
            .call("fleet.apply", json!({ "tenantId": "root", "config": doc }))
            .await
            .unwrap_err();
        assert_eq!((failed.status, failed.code.as_str()), (500, "INTERNAL"));
        assert_eq!(failed.details["call"]["index"], index, "{failed:?}");
        assert_eq!(export(&fleet).await, before, "call {index} of {n}");
        assert_eq!(audit_rows(&database).await, audit_before);
        let applied = fleet
            .ok("fleet.apply", json!({ "tenantId": "root", "config": doc }))
            .await;
        assert_eq!(applied["applied"], n);
        assert_exactly(&fleet, &doc).await;
        assert_no_duplicates(&database, 2).await;
        assert_eq!(
            audit_rows(&database).await,
            audit_before + n as i64 + 1,
            "the retry's audit rows only"
        );
    }
    let label = format!("{db:?}").to_lowercase();
    figure(&format!("dberror.{label}.injected"), total);
    figure(&format!("dberror.{label}.survived"), total);
    eprintln!("database errors injected at calls {indices:?}");
}
both!(dberror, database_error_at_random_calls);

/// A database error at every call of an apply in turn (the updates of a small fleet, each
/// index its own process, since the fault fires once per process).
async fn database_error_at_every_call(db: Db) {
    let database = Database::fresh(db).await;
    let (items, key) = (2, {
        let fleet = Fleet::start_on(&database.url, &[], &[]);
        fleet.ok("tenant.create", json!({ "id": "acme" })).await;
        fleet
            .ok(
                "fleet.apply",
                json!({ "tenantId": "root", "config": grouped_document(1, 2, 0) }),
            )
            .await;
        fleet.key.clone()
    });
    let n = 6 * items;
    for index in 0..n {
        let doc = grouped_document(1, items, index + 1);
        let mut fleet = Fleet::start_on(
            &database.url,
            &[],
            &[("BETTER_COMPUTE_FAULT", &format!("apply-dberror:{index}"))],
        );
        fleet.key = key.clone();
        let before = export(&fleet).await;
        let audit_before = audit_rows(&database).await;
        let failed = fleet
            .call("fleet.apply", json!({ "tenantId": "root", "config": doc }))
            .await
            .unwrap_err();
        assert_eq!(failed.code, "INTERNAL", "call {index}");
        assert_eq!(export(&fleet).await, before, "call {index}");
        assert_eq!(audit_rows(&database).await, audit_before, "call {index}");
        let applied = fleet
            .ok("fleet.apply", json!({ "tenantId": "root", "config": doc }))
            .await;
        assert_eq!(applied["applied"], n, "every call of the plan");
        assert_exactly(&fleet, &doc).await;
    }
    let label = format!("{db:?}").to_lowercase();
    figure(&format!("dberror_each.{label}.injected"), n);
}
both!(dberror_each, database_error_at_every_call);
