//! Drift and deliveries when things go wrong, with real processes, real time made short and
//! a real receiver on loopback: a receiver down at first, a server killed between an event and
//! its delivery, a key held by a killed process (its lease runs out), a tenant whose check
//! fails, an endpoint that keeps failing, and two server processes sharing one PostgreSQL.

mod common;
mod drift_support;
mod server_support;

use common::TempDir;
use drift_support::{
    Receiver, apply, document, edit_pool, event_types, events, status, two_more_checks, until,
    verify, webhook,
};
use serde_json::{Value, json};
use server_support::{Db, Fleet, fresh_postgres};
use std::collections::BTreeMap;

const FAST: &[&str] = &["--drift-every", "300ms", "--webhook-allow-private"];

/// The server's database URL as seen from the test (a relative SQLite path lives in the
/// server's working folder).
fn database_url(fleet: &Fleet) -> String {
    match fleet.database.strip_prefix("sqlite://") {
        Some(path) if !path.starts_with('/') => {
            format!("sqlite://{}", fleet.server.workdir().join(path).display())
        }
        _ => fleet.database.clone(),
    }
}

async fn reconciler_status(fleet: &Fleet) -> Value {
    fleet.ok("reconciler.status", json!({ "runs": true })).await
}

/// A loopback port nothing listens on (yet).
fn closed_port() -> u16 {
    common::free_port()
}

async fn deliveries(fleet: &Fleet, id: &str) -> Vec<Value> {
    fleet
        .ok(
            "webhook.deliveries",
            json!({ "tenantId": "root", "id": id }),
        )
        .await["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// An endpoint at `url` for `events`, then root's fleet applied, edited by hand and checked:
/// one `fleet.drifted` published. The endpoint's id and secret, and the check.
async fn endpoint_then_drift(fleet: &Fleet, url: &str, events: &[&str]) -> (String, String, Value) {
    let (id, secret) = webhook(fleet, url, events).await;
    apply(fleet, "root", &document(0.1)).await;
    edit_pool(fleet, "root", 0.5).await;
    let checked = fleet.ok("fleet.check", json!({ "tenantId": "root" })).await;
    (id, secret, checked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_down_across_a_server_restart_still_gets_the_event() {
    let dir = TempDir::new("drift-restart");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/ok");
    // A short lease, so a key the killed process held is soon free again.
    let env = [("BETTER_COMPUTE_RECONCILER_LEASE_MS", "1000")];

    let first = Fleet::start_on(&database, FAST, &env);
    let key = first.key.clone();
    let (id, secret, checked) = endpoint_then_drift(&first, &url, &["fleet.drifted"]).await;
    assert!(checked["drift"].is_object(), "{checked}");
    let event = events(&first, "root").await[0].clone();
    assert_eq!(event["type"], "fleet.drifted");

    // The receiver is down: attempts fail and are recorded; the delivery stays pending.
    let failed = until("a failed attempt", || async {
        let d = deliveries(&first, &id).await;
        let answered = d.len() == 1
            && d[0]["log"][0]["error"]
                .as_str()
                .is_some_and(|e| e.contains("onnect"));
        answered.then(|| d[0].clone())
    })
    .await;
    assert_eq!(failed["status"], "pending", "{failed}");
    assert!(
        failed["log"][0]["error"]
            .as_str()
            .unwrap()
            .contains("onnect"),
        "{failed}"
    );
    assert!(failed["log"][0].get("status").is_none());

    // The server dies before delivering; the receiver comes up; a new server starts.
    drop(first);
    let receiver = Receiver::start_on(port).await;
    let mut second = Fleet::start_on(&database, FAST, &env);
    second.key = key;

    let got = receiver.wait_for("ok", 1).await;
    assert_eq!(got[0].header("webhook-id"), event["id"].as_str().unwrap());
    let payload = verify(&secret, &got[0]).expect("the signature verifies");
    assert_eq!(payload["data"], event["data"]);
    let done = until("the delivery succeeded", || async {
        let d = deliveries(&second, &id).await;
        (d[0]["status"] == "succeeded").then(|| d[0].clone())
    })
    .await;
    let log = done["log"].as_array().unwrap();
    assert!(log.len() >= 2, "{done}");
    assert_eq!(log.last().unwrap()["status"], 200);
    assert!(
        log[..log.len() - 1]
            .iter()
            .all(|a| a.get("error").is_some())
    );
    // Exactly one event, delivered once (give a late duplicate a chance to show).
    two_more_checks(&second, "root").await;
    assert_eq!(receiver.got("ok").len(), 1);
    assert_eq!(event_types(&second, "root").await, ["fleet.drifted"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_cut_off_by_a_crash_is_in_the_log() {
    let dir = TempDir::new("drift-cut");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    let receiver = Receiver::start().await;
    let env = [("BETTER_COMPUTE_RECONCILER_LEASE_MS", "1000")];
    let first = Fleet::start_on(&database, FAST, &env);
    let key = first.key.clone();
    let (id, _, _) =
        endpoint_then_drift(&first, &receiver.url("hang-once"), &["fleet.drifted"]).await;

    // The server dies while its POST waits for an answer.
    let sent = receiver.wait_for("hang-once", 1).await;
    let in_flight = deliveries(&first, &id).await;
    assert_eq!(in_flight[0]["attempts"], 1, "{in_flight:?}");
    drop(first);

    let mut second = Fleet::start_on(&database, FAST, &env);
    second.key = key;
    let done = until("the delivery succeeded", || async {
        let d = deliveries(&second, &id).await;
        (d[0]["status"] == "succeeded").then(|| d[0].clone())
    })
    .await;
    // Both attempts are in the log: the cut one says so, with no status.
    assert_eq!(done["attempts"], 2, "{done}");
    let log = done["log"].as_array().unwrap();
    assert_eq!(log.len(), 2, "{done}");
    assert_eq!(log[0]["attempt"], 1);
    assert_eq!(
        log[0]["error"],
        "no answer recorded: the attempt is in flight, or was cut off before its answer was written"
    );
    assert!(log[0].get("status").is_none(), "{done}");
    assert_eq!(
        (&log[1]["attempt"], &log[1]["status"]),
        (&json!(2), &json!(200))
    );
    assert!(log[1].get("error").is_none(), "{done}");
    assert!(done.get("lastError").is_none(), "{done}");
    // The same event both times (the receiver's idempotency key).
    let got = receiver.got("hang-once");
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].header("webhook-id"), sent[0].header("webhook-id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_held_by_a_killed_process_is_worked_after_its_lease() {
    let dir = TempDir::new("drift-lease");
    let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
    // Every run of the first process pauses a minute, holding its key.
    let first = Fleet::start_on(
        &database,
        FAST,
        &[
            ("BETTER_COMPUTE_RECONCILER_LEASE_MS", "1000"),
            ("BETTER_COMPUTE_RECONCILER_DELAY_MS", "60000"),
        ],
    );
    let key = first.key.clone();
    apply(&first, "root", &document(0.1)).await;
    let worker = reconciler_status(&first).await["workerId"]
        .as_str()
        .unwrap()
        .to_string();
    // fleet.check claims tenant:root and hangs in the pause: send it and let it hang.
    let url = first.server.url("/api/fleet.check");
    let client = first.client().clone();
    let bearer = key.clone();
    let hanging = tokio::spawn(async move {
        client
            .post(url)
            .bearer_auth(bearer)
            .json(&json!({ "tenantId": "root" }))
            .send()
            .await
    });
    until("tenant:root held by the first process", || async {
        let s = reconciler_status(&first).await;
        s["queue"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["key"] == "tenant:root" && k["claimedBy"] == worker.as_str())
            .then_some(())
    })
    .await;
    assert!(
        status(&first, "root").await["applied"]
            .get("checkedAt")
            .is_none()
    );

    // It dies mid-key; another process takes the key once the lease runs out.
    drop(first);
    assert!(
        hanging.await.unwrap().is_err(),
        "the hanging call died with its server"
    );
    let mut second = Fleet::start_on(&database, FAST, &[]);
    second.key = key;
    let s = until("tenant:root checked by the second process", || async {
        let s = status(&second, "root").await;
        s["applied"].get("checkedAt").is_some().then_some(s)
    })
    .await;
    assert!(s.get("drift").is_none(), "{s}");
    let rs = reconciler_status(&second).await;
    assert!(
        rs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["key"] == "tenant:root" && r["outcome"] == "done"),
        "{rs}"
    );
    assert!(
        rs["queue"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["claimedBy"] != worker.as_str()),
        "{rs}"
    );
}

async fn a_failing_tenant_does_not_stop_another(db: Db) {
    let fleet = Fleet::start(db, FAST).await;
    for tenant in ["acme", "globex"] {
        fleet.ok("tenant.create", json!({ "id": tenant })).await;
    }
    for tenant in ["root", "acme", "globex"] {
        apply(&fleet, tenant, &document(0.1)).await;
    }
    // root's stored document no longer validates (as after an incompatible upgrade).
    drift_support::sql(
        &database_url(&fleet),
        r#"UPDATE fleet_applied SET document = '{"version": 2}' WHERE tenant_id = 'root'"#,
    )
    .await;
    let s = until("root's check failure in its status", || async {
        let s = status(&fleet, "root").await;
        s.get("error").is_some().then_some(s)
    })
    .await;
    let message = s["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the applied document no longer validates"),
        "{s}"
    );
    assert!(s["error"]["at"].is_i64());
    // The error is on its key too.
    let key = until("the error on tenant:root's key", || async {
        let rs = reconciler_status(&fleet).await;
        rs["queue"].as_array().unwrap().iter().find_map(|k| {
            (k["key"] == "tenant:root" && k["lastError"].is_string()).then(|| k.clone())
        })
    })
    .await;
    assert!(
        key["lastError"]
            .as_str()
            .unwrap()
            .contains("no longer validates"),
        "{key}"
    );

    // The other tenants go on: acme drifts and is reported, globex keeps being checked.
    edit_pool(&fleet, "acme", 0.9).await;
    until("acme's drift published", || async {
        (event_types(&fleet, "acme").await == ["fleet.drifted"]).then_some(())
    })
    .await;
    assert!(status(&fleet, "acme").await["drift"].is_object());
    two_more_checks(&fleet, "globex").await;
    assert!(events(&fleet, "root").await.is_empty());

    // fleet.check answers the status with the error, through the same path.
    let checked = fleet.ok("fleet.check", json!({ "tenantId": "root" })).await;
    assert!(
        checked["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no longer validates")
    );
    // An apply records a valid document again: the error is gone.
    apply(&fleet, "root", &document(0.1)).await;
    let s = two_more_checks(&fleet, "root").await;
    assert!(s.get("error").is_none() && s.get("drift").is_none(), "{s}");
}

both!(
    a_failing_tenant_does_not_stop_another,
    a_failing_tenant_does_not_stop_another
);

/// An endpoint's URL may carry credentials (`http://user:password@host/`, a token in its
/// query); a failed attempt's record (and the log line that repeats it) says what failed
/// without the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempt_does_not_repeat_the_credentials_of_its_url() {
    let fleet = Fleet::start(Db::Sqlite, FAST).await;
    let url = format!(
        "http://hook:hunter1@127.0.0.1:{}/ok?token=hunter2",
        closed_port()
    );
    let (id, _, _) = endpoint_then_drift(&fleet, &url, &["fleet.drifted"]).await;
    let error = until("a failed attempt", || async {
        let d = deliveries(&fleet, &id).await;
        d.first()
            .and_then(|d| d["log"][0]["error"].as_str().map(str::to_owned))
            .filter(|e| !e.starts_with("no answer recorded"))
    })
    .await;
    assert!(error.contains("onnect"), "it says what failed: {error}");
    assert!(
        !error.contains("hunter") && !error.contains("127.0.0.1"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_keeps_failing_is_disabled() {
    let receiver = Receiver::start().await;
    // Failing for 3 seconds is "long enough" here (three days by default).
    let fleet = Fleet::start_env(
        Db::Sqlite,
        FAST,
        &[("BETTER_COMPUTE_WEBHOOK_GIVE_UP_SECONDS", "3")],
    )
    .await;
    let (id, _, _) = endpoint_then_drift(&fleet, &receiver.url("fail"), &["*"]).await;
    let disabled = until("the endpoint disabled", || async {
        let list = fleet
            .ok("webhook.list", json!({ "tenantId": "root" }))
            .await;
        let w = list["items"][0].clone();
        (w["enabled"] == false).then_some(w)
    })
    .await;
    let reason = disabled["disabledReason"].as_str().unwrap();
    assert!(
        reason.starts_with("every attempt failed for 3 second(s)"),
        "{reason}"
    );
    let d = deliveries(&fleet, &id).await;
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["status"], "failed");
    let statuses: Vec<&Value> = d[0]["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["status"])
        .collect();
    assert!(statuses.len() >= 2, "{statuses:?}");
    assert!(statuses.iter().all(|s| **s == json!(500)), "{statuses:?}");
    // Retries kept the webhook-id.
    let got = receiver.got("fail");
    assert_eq!(got.len(), statuses.len());
    assert!(
        got.iter()
            .all(|r| r.header("webhook-id") == got[0].header("webhook-id"))
    );
    // A new event is not delivered to a disabled endpoint.
    edit_pool(&fleet, "root", 0.1).await;
    until("fleet.converged", || async {
        (event_types(&fleet, "root").await.len() == 2).then_some(())
    })
    .await;
    assert_eq!(deliveries(&fleet, &id).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_the_keys_without_doing_one_twice() {
    let database = fresh_postgres().await;
    // Slow runs, two at a time per process, so the processes must share the keys.
    let env = [
        ("BETTER_COMPUTE_RECONCILER_DELAY_MS", "40"),
        ("BETTER_COMPUTE_RECONCILER_CONCURRENCY", "2"),
    ];
    let a = Fleet::start_on(&database, FAST, &env);
    let mut b = Fleet::start_on(&database, FAST, &env);
    b.key = a.key.clone();
    let tenants: Vec<String> = (1..=6).map(|i| format!("t{i}")).collect();
    for t in &tenants {
        a.ok("tenant.create", json!({ "id": t })).await;
        apply(&a, t, &document(0.1)).await;
    }
    let runs = until(
        "every tenant checked three times, by both processes",
        || async {
            let mut all = Vec::new();
            let mut workers = BTreeMap::new();
            for fleet in [&a, &b] {
                let s = reconciler_status(fleet).await;
                let worker = s["workerId"].as_str().unwrap().to_string();
                for r in s["runs"].as_array().unwrap() {
                    if r["key"].as_str().unwrap().starts_with("tenant:t") {
                        *workers.entry(worker.clone()).or_insert(0) += 1;
                    }
                    all.push((worker.clone(), r.clone()));
                }
            }
            let per_key = |t: &str| {
                all.iter()
                    .filter(|(_, r)| r["key"] == format!("tenant:{t}").as_str())
                    .count()
            };
            (workers.len() == 2 && tenants.iter().all(|t| per_key(t) >= 3)).then_some(all)
        },
    )
    .await;
    // No key was ever worked by both at once: per reconciler and key, the runs never overlap.
    let mut by_key: BTreeMap<String, Vec<(i64, i64, String)>> = BTreeMap::new();
    for (worker, r) in &runs {
        by_key
            .entry(format!("{}/{}", r["reconciler"], r["key"]))
            .or_default()
            .push((
                r["startedAt"].as_i64().unwrap(),
                r["endedAt"].as_i64().unwrap(),
                worker.clone(),
            ));
    }
    for (key, mut spans) in by_key {
        spans.sort();
        for pair in spans.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0,
                "{key} was worked twice at once: {:?} and {:?}",
                pair[0],
                pair[1]
            );
        }
    }
    // And the checks found every tenant in line, with nothing published.
    for t in &tenants {
        assert!(events(&a, t).await.is_empty());
        assert!(status(&b, t).await.get("drift").is_none());
    }
}

/// Events older than the retention window (30 days by default) are deleted at start and every
/// hour, with their deliveries and attempts; an old event whose delivery is still pending
/// stays, and so do recent ones.
async fn old_events_are_deleted_with_their_deliveries(db: Db) {
    let receiver = Receiver::start().await;
    // The database outlives the first server (whose own folder goes with it).
    let dir = TempDir::new("events-retention");
    let database = match db {
        Db::Sqlite => format!("sqlite://{}", dir.path().join("fleet.db").display()),
        Db::Postgres => fresh_postgres().await,
    };
    let first = Fleet::start_on(&database, FAST, &[]);
    let hook = first
        .ok(
            "webhook.create",
            json!({ "tenantId": "root", "url": receiver.url("ok"), "events": ["*"] }),
        )
        .await;
    let hook = hook["id"].as_str().unwrap().to_string();
    apply(&first, "root", &document(0.1)).await;
    // Drifted, then converged by a hand edit back: two events, both delivered.
    edit_pool(&first, "root", 0.5).await;
    until("fleet.drifted", || async {
        (event_types(&first, "root").await == ["fleet.drifted"]).then_some(())
    })
    .await;
    edit_pool(&first, "root", 0.1).await;
    let old = until("fleet.converged", || async {
        let all = events(&first, "root").await;
        (all.len() == 2).then_some(all)
    })
    .await;
    until("both delivered", || async {
        let d = deliveries(&first, &hook).await;
        (d.len() == 2 && d.iter().all(|d| d["status"] == "succeeded")).then_some(())
    })
    .await;
    // Newest first: [converged, drifted]. Both made 40 days old; the converged one's
    // delivery pending again (an endpoint still being retried).
    let (converged, drifted) = (old[0]["id"].clone(), old[1]["id"].clone());
    let forty_days = 40 * 86_400_000_i64;
    drift_support::sql(
        &database,
        &format!("UPDATE events SET created_at = created_at - {forty_days}"),
    )
    .await;
    drift_support::sql(
        &database,
        &format!(
            "UPDATE webhook_deliveries SET status = 'pending' WHERE event_id = '{}'",
            converged.as_str().unwrap()
        ),
    )
    .await;
    // A recent event.
    edit_pool(&first, "root", 0.7).await;
    let recent = until("a recent fleet.drifted", || async {
        let all = events(&first, "root").await;
        (all.len() == 3).then(|| all[0]["id"].clone())
    })
    .await;

    // A restart runs the retention at once.
    let key = first.key.clone();
    drop(first);
    let mut second = Fleet::start_on(&database, FAST, &[]);
    second.key = key;
    let kept = until("the old delivered event deleted", || async {
        let ids: Vec<Value> = events(&second, "root")
            .await
            .iter()
            .map(|e| e["id"].clone())
            .collect();
        (!ids.contains(&drifted)).then_some(ids)
    })
    .await;
    assert!(
        kept.contains(&converged),
        "a pending delivery keeps its event: {kept:?}"
    );
    assert!(kept.contains(&recent), "{kept:?}");
    let left = deliveries(&second, &hook).await;
    assert!(
        left.iter().all(|d| d["eventId"] != drifted),
        "its deliveries went too: {left:?}"
    );
}

both!(
    old_events_are_deleted_with_their_deliveries,
    old_events_are_deleted_with_their_deliveries
);

/// A receiver that is down for a while loses nothing, however many attempts fail meanwhile:
/// a dozen events failing until they have made over 50 failed attempts (which once disabled the
/// endpoint, dropping them all), and every one is delivered once the receiver is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_is_down_for_a_while_loses_nothing() {
    let port = common::free_port();
    let fleet = Fleet::start(Db::Sqlite, FAST).await;
    let hook = fleet
        .ok(
            "webhook.create",
            json!({ "tenantId": "root", "url": format!("http://127.0.0.1:{port}/ok"), "events": ["*"] }),
        )
        .await;
    let id = hook["id"].as_str().unwrap().to_string();
    apply(&fleet, "root", &document(0.1)).await;
    // Twelve distinct drifts, one after another, while nothing listens on the port.
    for i in 0..12 {
        edit_pool(&fleet, "root", 0.2 + f64::from(i) * 0.05).await;
        fleet.ok("fleet.check", json!({ "tenantId": "root" })).await;
    }
    let events = until("twelve drifts recorded", || async {
        let types = event_types(&fleet, "root").await;
        (types.len() >= 12).then_some(types)
    })
    .await;
    // Over 50 failed attempts in a row (the old rule's limit), polled, not slept for.
    until("over 50 failed attempts", || async {
        let failed: u64 = deliveries(&fleet, &id)
            .await
            .iter()
            .map(|d| d["attempts"].as_u64().unwrap_or(0))
            .sum();
        (failed > 50).then_some(())
    })
    .await;
    let receiver = Receiver::start_on(port).await;
    let got = receiver.wait_for("ok", events.len()).await;
    let mut ids: Vec<&str> = got.iter().map(|r| r.header("webhook-id")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), events.len(), "every event, once");
    let list = fleet
        .ok("webhook.list", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(list["items"][0]["enabled"], true, "{list}");
}
