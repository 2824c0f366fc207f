//! Drift end to end with real time made short and a real HTTP receiver on loopback: apply,
//! edit a pool by hand, exactly one signed `fleet.drifted` (verified by the independent
//! `standardwebhooks` package), nothing for the same drift seen again, `fleet.converged` when
//! the edit is undone, an apply resets the drift; 410 disables an endpoint, secret rotation
//! signs twice, redelivery keeps the `webhook-id`. On SQLite and on PostgreSQL.

mod common;
mod drift_support;
mod server_support;

use drift_support::{
    Receiver, apply, document, edit_pool, event_types, events, status, two_more_checks, until,
    verify, webhook,
};
use serde_json::{Value, json};
use server_support::{Db, Fleet};

const FAST: &[&str] = &["--drift-every", "300ms", "--webhook-allow-private"];

async fn webhooks(fleet: &Fleet) -> Vec<Value> {
    fleet
        .ok("webhook.list", json!({ "tenantId": "root" }))
        .await["items"]
        .as_array()
        .unwrap()
        .clone()
}

async fn drift_is_published_once_and_converges(db: Db) {
    let receiver = Receiver::start().await;
    let fleet = Fleet::start(db, FAST).await;
    let (ok_id, secret) = webhook(
        &fleet,
        &receiver.url("ok"),
        &["fleet.drifted", "fleet.converged"],
    )
    .await;
    let (gone_id, _) = webhook(&fleet, &receiver.url("gone"), &["*"]).await;

    // A tenant that never applied has just its id, also after a check.
    assert_eq!(status(&fleet, "root").await, json!({ "tenantId": "root" }));
    let checked = fleet.ok("fleet.check", json!({ "tenantId": "root" })).await;
    assert_eq!(checked, json!({ "tenantId": "root" }));

    let applied_hash = apply(&fleet, "root", &document(0.1)).await;
    // Checked, in line: no drift, no event.
    let s = two_more_checks(&fleet, "root").await;
    assert_eq!(s["applied"]["planHash"], applied_hash.as_str());
    assert!(s.get("drift").is_none(), "{s}");
    assert!(events(&fleet, "root").await.is_empty());

    // Someone edits the pool by hand: exactly one fleet.drifted, signed.
    edit_pool(&fleet, "root", 0.5).await;
    let got = receiver.wait_for("ok", 1).await;
    let drifted = &got[0];
    let payload = verify(&secret, drifted).expect("the signature verifies");
    assert_eq!(payload, drifted.json());
    assert_eq!(payload["type"], "fleet.drifted");
    assert_eq!(payload["subject"], "fleet/root");
    let data = &payload["data"];
    assert_eq!(data["tenantId"], "root");
    assert_eq!(data["appliedPlanHash"], applied_hash.as_str());
    assert_eq!(
        data["changes"],
        json!([{
            "kind": "pool", "name": "vps-fra", "action": "update", "fields": ["policy"],
            "before": { "policy": { "disruptionBudget": 0.5 } },
            "after": { "policy": { "disruptionBudget": 0.1 } }
        }])
    );
    assert_eq!(
        data["summary"],
        json!({ "create": 0, "update": 1, "delete": 0, "unchanged": 1 })
    );
    assert_eq!(data["blocked"], false);
    let listed = events(&fleet, "root").await;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        drifted.header("webhook-id"),
        listed[0]["id"].as_str().unwrap()
    );
    assert_eq!(payload["id"], listed[0]["id"]);
    assert_eq!(listed[0]["data"], *data);
    assert!(verify("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", drifted).is_err());

    // The status shows the drift in the seed's shape.
    let s = status(&fleet, "root").await;
    assert_eq!(s["drift"]["changes"], data["changes"]);
    assert_eq!(s["drift"]["summary"], data["summary"]);
    assert_eq!(s["drift"]["planHash"], data["planHash"]);
    assert_eq!(s["drift"]["blocked"], false);
    assert!(
        s["applied"]["checkedAt"].as_i64().unwrap() >= s["applied"]["appliedAt"].as_i64().unwrap()
    );
    // The plan of the applied document now is the drift's plan.
    let plan = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": document(0.1) }),
        )
        .await;
    assert_eq!(plan["planHash"], data["planHash"]);

    // The endpoint that answers 410 is disabled after its one attempt.
    let gone = until("the 410 endpoint disabled", || async {
        webhooks(&fleet)
            .await
            .into_iter()
            .find(|w| w["id"] == gone_id.as_str() && w["enabled"] == false)
    })
    .await;
    assert_eq!(gone["disabledReason"], "the endpoint answered 410 Gone");
    assert_eq!(receiver.got("gone").len(), 1);
    let log = fleet
        .ok(
            "webhook.deliveries",
            json!({ "tenantId": "root", "id": gone_id }),
        )
        .await;
    assert_eq!(log["items"][0]["status"], "failed");
    assert_eq!(log["items"][0]["log"][0]["status"], 410);

    // The same drift seen again publishes nothing.
    two_more_checks(&fleet, "root").await;
    assert_eq!(event_types(&fleet, "root").await, ["fleet.drifted"]);
    assert_eq!(receiver.got("ok").len(), 1);
    // Nor does an edit the document does not speak of (it lists no offers, so an offer is
    // left alone), though it moves the pool's revision and so the drift's planHash.
    fleet
        .ok("tenant.create", json!({ "id": "bystander" }))
        .await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let pool = server_support::exported(&export, "pool", "vps-fra")["id"].clone();
    fleet
        .ok(
            "pool.offer",
            json!({ "tenantId": "root", "poolId": pool, "tenant": "bystander", "quota": { "vcpu": 1 } }),
        )
        .await;
    let moved = two_more_checks(&fleet, "root").await["drift"].clone();
    assert_ne!(moved["planHash"], data["planHash"], "the revision moved");
    assert_eq!(moved["changes"], data["changes"]);
    assert_eq!(event_types(&fleet, "root").await, ["fleet.drifted"]);

    // Rotate the secret: the next delivery carries both signatures.
    let rotated = fleet
        .ok(
            "webhook.rotateSecret",
            json!({ "tenantId": "root", "id": ok_id }),
        )
        .await;
    let new_secret = rotated["secret"].as_str().unwrap().to_string();
    assert_ne!(new_secret, secret);

    // Undo the edit by hand: fleet.converged.
    edit_pool(&fleet, "root", 0.1).await;
    let got = receiver.wait_for("ok", 2).await;
    let converged = &got[1];
    assert_eq!(converged.json()["type"], "fleet.converged");
    assert_eq!(converged.header("webhook-signature").split(' ').count(), 2);
    verify(&secret, converged).expect("the old secret still verifies");
    let payload = verify(&new_secret, converged).expect("the new secret verifies");
    assert_eq!(payload["data"]["appliedPlanHash"], applied_hash.as_str());
    // The drift as last recorded (its planHash moved with the offer's revision).
    assert_eq!(payload["data"]["previousPlanHash"], moved["planHash"]);
    assert!(status(&fleet, "root").await.get("drift").is_none());
    assert_eq!(
        event_types(&fleet, "root").await,
        ["fleet.drifted", "fleet.converged"]
    );
    // The disabled endpoint got nothing more.
    assert_eq!(receiver.got("gone").len(), 1);

    // Drift again, then apply: the apply resets it, and no converged follows.
    edit_pool(&fleet, "root", 0.7).await;
    receiver.wait_for("ok", 3).await;
    assert!(status(&fleet, "root").await.get("drift").is_some());
    let reapplied = apply(&fleet, "root", &document(0.1)).await;
    let s = status(&fleet, "root").await;
    assert!(s.get("drift").is_none(), "{s}");
    assert_eq!(s["applied"]["planHash"], reapplied.as_str());
    two_more_checks(&fleet, "root").await;
    assert_eq!(
        event_types(&fleet, "root").await,
        ["fleet.drifted", "fleet.converged", "fleet.drifted"]
    );

    // Redelivery of one event: the same webhook-id, a new delivery in the log.
    let first = events(&fleet, "root").await.last().unwrap().clone();
    let again = fleet
        .ok(
            "webhook.redeliver",
            json!({ "tenantId": "root", "id": ok_id, "eventId": first["id"] }),
        )
        .await;
    // A redelivery never widens a subscription.
    let (converged_only, _) = webhook(&fleet, &receiver.url("other"), &["fleet.converged"]).await;
    let refused = fleet
        .fails(
            "webhook.redeliver",
            json!({ "tenantId": "root", "id": converged_only, "eventId": first["id"] }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(refused.details["path"], "eventId");
    let got = receiver.wait_for("ok", 4).await;
    assert_eq!(got[3].header("webhook-id"), first["id"].as_str().unwrap());
    assert_eq!(got[3].body, got[0].body);
    verify(&new_secret, &got[3]).expect("the redelivery verifies");
    let log = until("the redelivery succeeded", || async {
        let log = fleet
            .ok(
                "webhook.deliveries",
                json!({ "tenantId": "root", "id": ok_id }),
            )
            .await;
        let items = log["items"].as_array().unwrap().clone();
        items
            .iter()
            .any(|d| d["id"] == again["deliveryId"] && d["status"] == "succeeded")
            .then_some(items)
    })
    .await;
    assert_eq!(log.len(), 4);
    for d in &log {
        assert_eq!(d["status"], "succeeded", "{d}");
        assert_eq!(d["attempts"], 1);
        assert_eq!(d["log"][0]["status"], 200);
    }
    // `limit: 0` asks for nothing, as audit.list reads it (there are events and deliveries).
    for (method, input) in [
        ("event.list", json!({ "tenantId": "root", "limit": 0 })),
        (
            "webhook.deliveries",
            json!({ "tenantId": "root", "id": ok_id, "limit": 0 }),
        ),
        ("audit.list", json!({ "tenantId": "root", "limit": 0 })),
    ] {
        assert_eq!(
            fleet.ok(method, input).await["items"],
            json!([]),
            "{method}"
        );
    }
}

both!(
    drift_is_published_once_and_converges,
    drift_is_published_once_and_converges
);

async fn webhook_targets_and_inputs_are_checked(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    for (url, path) in [
        ("http://127.0.0.1:9/hook", "url"),
        ("http://localhost:9/hook", "url"),
        ("http://10.0.0.1/hook", "url"),
        ("http://169.254.169.254/latest/meta-data", "url"),
        ("http://[fe80::1]/hook", "url"),
        ("ftp://example.com/hook", "url"),
        ("not a url", "url"),
        // The URL parser takes `http:host`; the schema's pattern does not.
        ("http:example.com/hook", "url"),
        // IPv4 inside IPv6, and a documentation range (found by an audit).
        ("http://[::169.254.169.254]/", "url"),
        ("http://[2002:a9fe:a9fe::]/", "url"),
        ("http://192.0.2.10/hook", "url"),
    ] {
        let f = fleet
            .fails(
                "webhook.create",
                json!({ "tenantId": "root", "url": url, "events": ["fleet.drifted"] }),
                "INVALID_INPUT",
            )
            .await;
        assert_eq!(f.details["path"], path, "{url}: {f:?}");
    }
    let f = fleet
        .fails(
            "webhook.create",
            json!({ "tenantId": "root", "url": "http://127.0.0.1:9/", "events": ["pool.updated"] }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(f.details["path"], "events[0]");
    // A name is refused without naming what it resolves to.
    let named = fleet
        .fails(
            "webhook.create",
            json!({ "tenantId": "root", "url": "http://localhost:9/hook", "events": ["*"] }),
            "INVALID_INPUT",
        )
        .await;
    assert!(!named.message.contains("127.0.0.1"), "{named:?}");
    fleet
        .fails(
            "webhook.delete",
            json!({ "tenantId": "root", "id": "wh_missing" }),
            "NOT_FOUND",
        )
        .await;
    // Only the fleet administrator checks drift; a tenant's key never passes.
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    let (_, key) = fleet
        .service_account("acme", "ops", &[("*", "tenants/acme")])
        .await;
    fleet
        .fails_as(
            &key,
            "fleet.check",
            json!({ "tenantId": "acme" }),
            "FORBIDDEN",
        )
        .await;
    fleet
        .fails_as(
            &key,
            "event.list",
            json!({ "tenantId": "root" }),
            "FORBIDDEN",
        )
        .await;
    // Its own events and webhooks it may read.
    fleet
        .call_as(&key, "event.list", json!({ "tenantId": "acme" }))
        .await
        .expect("acme reads its events");
    let openapi: Value = fleet
        .client()
        .get(fleet.server.url("/api/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for method in [
        "fleet.check",
        "event.list",
        "webhook.create",
        "webhook.list",
        "webhook.delete",
        "webhook.deliveries",
        "webhook.redeliver",
        "webhook.rotateSecret",
        "reconciler.status",
    ] {
        assert!(
            openapi["paths"][format!("/api/{method}")].is_object(),
            "{method} in the OpenAPI document"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_targets_and_inputs_are_checked_sqlite() {
    webhook_targets_and_inputs_are_checked(Db::Sqlite).await
}

/// A drift of more changes than the 50 it lists is still one drift: an edit that only moves
/// revisions publishes nothing (the planHash moves, the changes do not), and a change past the
/// listed 50 is a new drift.
async fn a_long_drift_is_published_once(db: Db) {
    let fleet = Fleet::start(db, &["--drift-every", "1h"]).await;
    let mut doc = document(0.1);
    doc["flavors"] = json!([]);
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "prune": true }),
        )
        .await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let pool = server_support::exported(&export, "pool", "vps-fra")["id"].clone();
    let create = |name: String| json!({ "tenantId": "root", "poolId": pool, "name": name, "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 });
    let mut flavors = Vec::new();
    for i in 0..55 {
        let created = fleet.ok("flavor.create", create(format!("x{i:03}"))).await;
        flavors.push(created);
    }
    let check =
        || async { fleet.ok("fleet.check", json!({ "tenantId": "root" })).await["drift"].clone() };
    let drift = check().await;
    assert_eq!(drift["changes"].as_array().unwrap().len(), 50);
    assert_eq!(drift["summary"]["delete"], 55);
    assert_eq!(event_types(&fleet, "root").await, ["fleet.drifted"]);

    // An edit of a flavor the plan deletes anyway: its revision, and so the planHash, moves;
    // the drift not (a delete lists no fields).
    let first = &flavors[0];
    fleet
        .ok(
            "flavor.update",
            json!({ "tenantId": "root", "id": first["id"], "ifRevision": first["revision"],
                    "vcpu": 2, "memoryGiB": 1, "diskGiB": 1 }),
        )
        .await;
    let moved = check().await;
    assert_ne!(moved["planHash"], drift["planHash"]);
    assert_eq!(moved["changes"], drift["changes"]);
    assert_eq!(event_types(&fleet, "root").await, ["fleet.drifted"]);

    // Past the 50 listed: x054 gone, x099 made; the list and the counts look the same.
    let last = &flavors[54];
    fleet
        .ok(
            "flavor.delete",
            json!({ "tenantId": "root", "id": last["id"], "ifRevision": last["revision"] }),
        )
        .await;
    fleet.ok("flavor.create", create("x099".into())).await;
    let other = check().await;
    assert_eq!(other["changes"], drift["changes"]);
    assert_eq!(other["summary"], drift["summary"]);
    assert_eq!(
        event_types(&fleet, "root").await,
        ["fleet.drifted", "fleet.drifted"]
    );
    // `fleet.status` shows the drift in the seed's shape, nothing more.
    let shown = status(&fleet, "root").await["drift"].clone();
    let mut keys: Vec<&str> = shown
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["blocked", "changes", "planHash", "summary"]);
}

both!(
    a_long_drift_is_published_once,
    a_long_drift_is_published_once
);
