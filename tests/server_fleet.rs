//! FleetConfig over HTTP against the real server: export, plan, apply, re-plan, hand edits,
//! permissions of every call, atomicity under an injected failure, concurrent applies, and
//! the planHash the planner computes offline from the export. Each test runs on SQLite and,
//! as its `postgres` twin, on the test PostgreSQL.

mod common;
mod server_support;

use common::seed_document;
use serde_json::{Value, json};
use server_support::{Db, Fleet, calls, identities};

async fn fleet_with_acme(db: Db, args: &[&str]) -> Fleet {
    let fleet = Fleet::start(db, args).await;
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    fleet.ok("tenant.create", json!({ "id": "globex" })).await;
    fleet
}

/// The planner's plan of `document` against `export`, computed here, offline.
fn offline_plan(document: &Value, export: &Value, prune: bool) -> planner::Plan {
    let document = document.to_string();
    let document = planner::validate(document.as_bytes()).expect("a valid document");
    let export = planner::Export::from_value(export).expect("an Export");
    planner::plan(&document, &export, planner::PlanOptions { prune })
}

async fn seed_document_round_trip(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let doc = seed_document();
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let plan = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    assert_eq!(plan["summary"]["create"], 8, "{}", plan["summary"]);
    assert!(plan["summary"].get("blocked").is_none());
    // The server's planHash is the planner's over the export, for the same caller.
    let offline = offline_plan(&doc, &export, false);
    assert_eq!(plan["planHash"], offline.plan_hash.0);
    assert_eq!(plan, serde_json::to_value(&offline).unwrap());

    let applied = fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "planHash": plan["planHash"] }),
        )
        .await;
    assert_eq!(applied["applied"], calls(&plan).len());
    assert_eq!(applied["plan"]["planHash"], plan["planHash"]);

    // Re-planned: nothing to do, with or without prune against the export.
    let again = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    assert!(calls(&again).is_empty(), "{again}");
    assert_eq!(again["summary"]["unchanged"], 8);
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let round = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": export["config"], "prune": true }),
        )
        .await;
    assert!(calls(&round).is_empty(), "{round}");
    let names: Vec<&str> = export["config"]["pools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["burst", "vps-fra"],
        "pools keep the names fleet gave them"
    );

    // The applied document is recorded; fleet.status shows it.
    let status = fleet
        .ok("fleet.status", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(status["tenantId"], "root");
    assert_eq!(status["applied"]["planHash"], plan["planHash"]);
    assert_eq!(status["applied"]["appliedBy"], export["caller"]);
    assert_eq!(status["applied"]["prune"], false);
    assert!(status["applied"]["appliedAt"].as_i64().unwrap() > 1_700_000_000_000);
    assert_eq!(
        fleet
            .ok("fleet.status", json!({ "tenantId": "acme" }))
            .await,
        json!({ "tenantId": "acme" })
    );

    // One audit row per call, and one for the apply.
    let audit = fleet
        .ok("audit.list", json!({ "tenantId": "root", "limit": 1000 }))
        .await;
    let rows = audit["items"].as_array().unwrap();
    assert_eq!(
        rows.iter().filter(|r| r["method"] == "fleet.apply").count(),
        1
    );
    assert_eq!(
        rows.iter()
            .filter(|r| r["details"]["via"] == "fleet.apply")
            .count(),
        calls(&plan).len()
    );
}
both!(round_trip, seed_document_round_trip);

async fn hand_edits_show_in_the_next_plan(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let doc = seed_document();
    fleet
        .ok("fleet.apply", json!({ "tenantId": "root", "config": doc }))
        .await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let pool = export["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "vps-fra")
        .unwrap()
        .clone();
    // Someone edits the pool by hand during an incident.
    fleet
        .ok("pool.update", json!({ "tenantId": "root", "id": pool["id"], "ifRevision": pool["revision"], "policy": { "disruptionBudget": 0.3 } }))
        .await;
    let plan = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    let changed: Vec<&Value> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] != "unchanged")
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(
        (changed[0]["kind"].as_str(), changed[0]["name"].as_str()),
        (Some("pool"), Some("vps-fra"))
    );
    assert_eq!(changed[0]["fields"], json!(["policy"]));
    assert_eq!(calls(&plan)[0]["method"], "pool.update");
    assert_eq!(
        calls(&plan)[0]["input"]["ifRevision"],
        pool["revision"].as_u64().unwrap() + 1
    );
    // A stale reviewed planHash is CONFIG_DRIFT with what the plan has become.
    let drift = fleet
        .fails(
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "planHash": "0".repeat(64) }),
            "CONFIG_DRIFT",
        )
        .await;
    assert_eq!(drift.status, 409);
    assert_eq!(drift.details["planHash"], plan["planHash"]);
    assert_eq!(drift.details["expected"], "0".repeat(64));
    assert!(drift.details["changes"].is_array() && drift.details["summary"].is_object());
    // A planHash that is no planHash at all is a mistake in the input, not a moved fleet.
    for bad in [
        "00".to_owned(),
        plan["planHash"].as_str().unwrap().to_uppercase(),
    ] {
        let malformed = fleet
            .fails(
                "fleet.apply",
                json!({ "tenantId": "root", "config": doc, "planHash": bad }),
                "INVALID_INPUT",
            )
            .await;
        assert_eq!(malformed.details["path"], "planHash", "{malformed:?}");
    }
    // The refusal is audited, and nothing else was written.
    let audit = fleet
        .ok("audit.list", json!({ "tenantId": "root", "limit": 1000 }))
        .await;
    let refusals: Vec<_> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "fleet.apply" && r["outcome"] == "config_drift")
        .collect();
    assert_eq!(refusals.len(), 1, "{audit}");
    assert_eq!(refusals[0]["details"]["expected"], "0".repeat(64));
    // Hand calls that write what is there move nothing: the reviewed plan still applies.
    let revision = &calls(&plan)[0]["input"]["ifRevision"];
    let same = json!({ "tenantId": "root", "id": pool["id"], "ifRevision": revision, "policy": { "disruptionBudget": 0.3 } });
    fleet.ok("pool.update", same).await;
    let absent =
        json!({ "tenantId": "root", "poolId": pool["id"], "resource": "absent", "max": null });
    fleet.ok("pool.setOwnerQuota", absent).await;
    // Applying puts it back.
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "planHash": plan["planHash"] }),
        )
        .await;
    let after = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    assert!(calls(&after).is_empty());
}
both!(hand_edits, hand_edits_show_in_the_next_plan);

async fn invalid_and_blocked_documents(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    // Duplicate keys reach the planner as bytes.
    let response = fleet
        .client()
        .post(fleet.server.url("/api/fleet.plan"))
        .bearer_auth(&fleet.key)
        .header("content-type", "application/json")
        .body(r#"{"tenantId":"root","config":{"version":1,"version":1}}"#)
        .send()
        .await
        .unwrap();
    let dup = server_support::answer(response).await.unwrap_err();
    assert_eq!((dup.status, dup.code.as_str()), (400, "INVALID_INPUT"));
    assert!(dup.details["problems"].is_array());
    // A number no double holds is the planner's problem too, at its path.
    let response = fleet
        .client()
        .post(fleet.server.url("/api/fleet.plan"))
        .bearer_auth(&fleet.key)
        .header("content-type", "application/json")
        .body(r#"{"tenantId":"root","config":{"version":1,"flavors":[{"pool":"p","name":"f","vcpu":1e309,"memoryGiB":1,"diskGiB":0}]}}"#)
        .send()
        .await
        .unwrap();
    let huge = server_support::answer(response).await.unwrap_err();
    assert_eq!((huge.status, huge.code.as_str()), (400, "INVALID_INPUT"));
    assert_eq!(huge.details["path"], "flavors[0].vcpu", "{huge:?}");
    let bad = fleet
        .fails(
            "fleet.plan",
            json!({ "tenantId": "root", "config": { "version": 2 } }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(bad.details["path"], "version");

    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await;
    let mut moved = seed_document();
    moved["sites"][0]["region"] = json!("us-east");
    let blocked = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": moved }))
        .await;
    assert_eq!(blocked["summary"]["blocked"], true);
    let refused = fleet
        .fails(
            "fleet.apply",
            json!({ "tenantId": "root", "config": moved }),
            "PLAN_BLOCKED",
        )
        .await;
    assert_eq!(refused.status, 409);
}
both!(invalid_and_blocked, invalid_and_blocked_documents);

async fn withheld_call_permission_is_forbidden_and_changes_nothing(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let grants: Vec<(&str, &str)> = vec![
        ("compute:fleet:admin", "compute-fleet/global"),
        ("compute:site:create", "tenants/root"),
        ("compute:pool:create", "tenants/root"),
        ("compute:pool:quota", "tenants/root"),
        ("vps:*", "tenants/root"),
        // compute:pool:offer withheld
    ];
    let (_, key) = fleet.service_account("root", "ci", &grants).await;
    let before = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let refused = fleet
        .fails_as(
            &key,
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
            "FORBIDDEN",
        )
        .await;
    assert_eq!(refused.details["method"], "pool.offer");
    assert_eq!(refused.details["permission"], "compute:pool:offer");
    assert!(
        refused.message.contains("pool.offer"),
        "{}",
        refused.message
    );
    let after = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(before, after, "nothing ran");
    assert_eq!(
        fleet
            .ok("fleet.status", json!({ "tenantId": "root" }))
            .await,
        json!({ "tenantId": "root" })
    );
    let audit = fleet
        .ok(
            "audit.list",
            json!({ "tenantId": "root", "method": "fleet.apply" }),
        )
        .await;
    assert_eq!(audit["items"][0]["outcome"], "forbidden");
    // With the permission, the same key applies.
    let sa = fleet
        .ok(
            "audit.list",
            json!({ "tenantId": "root", "method": "serviceAccount.create" }),
        )
        .await;
    let sa = sa["items"][0]["objectId"].clone();
    fleet
        .ok(
            "grant.create",
            json!({ "tenantId": "root", "principalId": sa, "permission": "compute:pool:offer" }),
        )
        .await;
    fleet
        .call_as(
            &key,
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await
        .unwrap();
}
both!(
    withheld_permission,
    withheld_call_permission_is_forbidden_and_changes_nothing
);

async fn non_root_keys_never_pass_the_fleet_check(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let (_, key) = fleet
        .service_account("acme", "ops", &[("*", "tenants/acme")])
        .await;
    for (method, input) in [
        ("fleet.export", json!({ "tenantId": "acme" })),
        (
            "fleet.plan",
            json!({ "tenantId": "acme", "config": { "version": 1 } }),
        ),
        (
            "fleet.apply",
            json!({ "tenantId": "acme", "config": { "version": 1 } }),
        ),
        ("fleet.status", json!({ "tenantId": "acme" })),
        ("fleet.export", json!({ "tenantId": "root" })),
    ] {
        fleet.fails_as(&key, method, input, "FORBIDDEN").await;
    }
}
both!(non_root_refused, non_root_keys_never_pass_the_fleet_check);

/// A document that creates a site and a pool, then updates vps-fra (call 2).
fn second_document() -> Value {
    let mut doc = seed_document();
    doc["sites"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "name": "ber", "kind": "dedicated", "region": "eu-north" }));
    doc["pools"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "name": "vps-ber", "site": "ber", "class": "vps-host" }));
    doc["pools"][0]["policy"]["disruptionBudget"] = json!(0.4);
    doc["pools"][0]["offers"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "tenant": "globex", "quota": { "vcpu": 8 } }));
    doc
}

async fn failure_mid_apply_leaves_the_fleet_as_before(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    // A second server on the same database, with the fault armed (it fires once).
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await;
    let database = match db {
        Db::Sqlite => format!(
            "sqlite://{}",
            fleet.server.workdir().join("data/fleet.db").display()
        ),
        Db::Postgres => fleet.database.clone(),
    };
    let faulty = Fleet::start_on(&database, &[], &[("BETTER_COMPUTE_FAULT", "apply-stale:2")]);
    let doc = second_document();
    let plan = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    assert_eq!(
        calls(&plan)
            .iter()
            .map(|c| c["method"].as_str().unwrap())
            .collect::<Vec<_>>()[..3],
        ["site.create", "pool.create", "pool.update"]
    );
    let before = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let audit_before = fleet
        .ok("audit.list", json!({ "tenantId": "root", "limit": 1000 }))
        .await["items"]
        .as_array()
        .unwrap()
        .len();
    let failed = faulty
        .call_as(
            &fleet.key,
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc }),
        )
        .await
        .unwrap_err();
    assert_eq!(failed.code, "CONFLICT", "{failed:?}");
    assert!(
        failed.details["object"]
            .as_str()
            .unwrap()
            .starts_with("pool pool_"),
        "{failed:?}"
    );
    assert_eq!(failed.details["call"]["index"], 2);
    // The site and pool created before the failure are gone with the transaction.
    assert_eq!(
        fleet
            .ok("fleet.export", json!({ "tenantId": "root" }))
            .await,
        before
    );
    let audit_after = fleet
        .ok("audit.list", json!({ "tenantId": "root", "limit": 1000 }))
        .await["items"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        audit_before, audit_after,
        "no audit rows of the rolled-back calls"
    );
    // The retry (the fault fires once) converges: one of each, and nothing left to do.
    let applied = faulty
        .call_as(
            &fleet.key,
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc }),
        )
        .await
        .unwrap();
    assert_eq!(applied["applied"], calls(&plan).len());
    let again = faulty
        .call_as(
            &fleet.key,
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc }),
        )
        .await
        .unwrap();
    assert_eq!(again["applied"], 0);
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let ids = identities(&export);
    assert_eq!(
        ids.iter()
            .filter(|(k, n, _)| k == "site" && n == "ber")
            .count(),
        1
    );
    assert_eq!(
        ids.iter()
            .filter(|(k, n, _)| k == "pool" && n == "vps-ber")
            .count(),
        1
    );
    assert_eq!(
        fleet.ok("site.list", json!({ "tenantId": "root" })).await["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
both!(
    mid_apply_failure,
    failure_mid_apply_leaves_the_fleet_as_before
);

async fn concurrent_applies_never_interleave(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let doc = seed_document();
    let plan = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    let input = json!({ "tenantId": "root", "config": doc });
    let (a, b) = tokio::join!(
        fleet.call("fleet.apply", input.clone()),
        fleet.call("fleet.apply", input.clone())
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut counts = [
        a["applied"].as_u64().unwrap(),
        b["applied"].as_u64().unwrap(),
    ];
    counts.sort();
    assert_eq!(
        counts,
        [0, calls(&plan).len() as u64],
        "one ran every call, the other found nothing to do"
    );
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(
        identities(&export).len(),
        identities(&offline_after(&fleet).await).len()
    );
    assert_eq!(
        fleet.ok("site.list", json!({ "tenantId": "root" })).await["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        fleet.ok("pool.list", json!({ "tenantId": "root" })).await["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // With the same reviewed planHash, the second of two applies is CONFIG_DRIFT.
    let mut doc2 = doc.clone();
    doc2["pools"][0]["policy"]["disruptionBudget"] = json!(0.7);
    let plan2 = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc2 }))
        .await;
    let input = json!({ "tenantId": "root", "config": doc2, "planHash": plan2["planHash"] });
    let (a, b) = tokio::join!(
        fleet.call("fleet.apply", input.clone()),
        fleet.call("fleet.apply", input)
    );
    let codes: Vec<String> = [a, b]
        .into_iter()
        .map(|r| r.map(|_| "OK".to_string()).unwrap_or_else(|f| f.code))
        .collect();
    assert!(
        codes.contains(&"OK".to_string()) && codes.contains(&"CONFIG_DRIFT".to_string()),
        "{codes:?}"
    );
}
both!(concurrent, concurrent_applies_never_interleave);

async fn offline_after(fleet: &Fleet) -> Value {
    fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await
}

async fn demo_can_be_planned_and_shows_hand_edits(db: Db) {
    let fleet = Fleet::start(db, &["--demo"]).await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(export["tenants"], json!(["acme", "globex", "root"]));
    let names: Vec<&str> = export["config"]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"fra"));
    assert!(
        names.iter().any(|n| n.starts_with("site_")),
        "a site made outside FleetConfig exports under its id: {names:?}"
    );
    let status = fleet
        .ok("fleet.status", json!({ "tenantId": "root" }))
        .await;
    assert!(status["applied"]["planHash"].is_string());
    // The demo's hand edits are audited as a hand edit's are: the call, with its input.
    for method in ["site.create", "pool.create", "pool.offer", "pool.update"] {
        let rows = fleet
            .ok(
                "audit.list",
                json!({ "tenantId": "root", "method": method }),
            )
            .await;
        let by_hand = rows["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["details"]["input"].is_object() && r["details"]["via"].is_null())
            .count();
        assert_eq!(by_hand, 1, "{method}: {rows}");
    }
    let acme = fleet
        .ok("fleet.export", json!({ "tenantId": "acme" }))
        .await;
    let pool = acme["offeredPools"][0]["id"].clone();
    assert_eq!(acme["config"]["sandboxTemplates"][0]["name"], "acme-py");
    assert_eq!(
        acme["config"]["sandboxTemplates"][0]["pool"], pool,
        "an offered pool is named by id"
    );
    let plan = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await;
    assert_eq!(
        calls(&plan).len(),
        1,
        "the hand edit of vps-fra's policy: {plan}"
    );
}
both!(demo, demo_can_be_planned_and_shows_hand_edits);

async fn database_error_mid_apply_is_internal_and_rolls_back(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await;
    let database = match db {
        Db::Sqlite => format!(
            "sqlite://{}",
            fleet.server.workdir().join("data/fleet.db").display()
        ),
        Db::Postgres => fleet.database.clone(),
    };
    let faulty = Fleet::start_on(
        &database,
        &[],
        &[("BETTER_COMPUTE_FAULT", "apply-dberror:1")],
    );
    let before = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let response = faulty
        .client()
        .post(faulty.server.url("/api/fleet.apply"))
        .bearer_auth(&fleet.key)
        .json(&json!({ "tenantId": "root", "config": second_document() }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 500);
    let body = response.text().await.unwrap();
    assert!(body.contains("\"INTERNAL\""), "{body}");
    assert!(
        !body.contains("no_such_table") && !body.contains("injected"),
        "nothing leaked: {body}"
    );
    assert_eq!(
        fleet
            .ok("fleet.export", json!({ "tenantId": "root" }))
            .await,
        before
    );
    let applied = faulty
        .call_as(
            &fleet.key,
            "fleet.apply",
            json!({ "tenantId": "root", "config": second_document() }),
        )
        .await
        .unwrap();
    assert!(applied["applied"].as_u64().unwrap() > 0);
    let again = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": second_document() }),
        )
        .await;
    assert!(calls(&again).is_empty());
}
both!(
    database_error,
    database_error_mid_apply_is_internal_and_rolls_back
);

async fn deployments_without_a_module_block_its_kinds(db: Db) {
    let fleet = fleet_with_acme(db, &["--sandboxes", "false"]).await;
    let plan = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await;
    assert_eq!(plan["summary"]["blocked"], true);
    let template = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "sandboxTemplate")
        .unwrap();
    assert_eq!(template["blocked"], true);
    assert_eq!(
        template["note"],
        "this deployment does not run sandboxes (vps v0.5)"
    );
    let refused = fleet
        .fails(
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
            "PLAN_BLOCKED",
        )
        .await;
    // The details carry the whole plan, as CONFIG_DRIFT's do; the template is the blocked one.
    let changes = refused.details["changes"].as_array().unwrap();
    assert_eq!(changes.len(), plan["changes"].as_array().unwrap().len());
    let blocked: Vec<&Value> = changes.iter().filter(|c| c["blocked"] == true).collect();
    assert!(!blocked.is_empty());
    assert!(
        blocked.iter().all(|c| c["kind"] == "sandboxTemplate"),
        "{blocked:?}"
    );
    assert_eq!(refused.details["summary"], plan["summary"]);
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(export["missing"], json!(["sandboxTemplates"]));

    let fleet = fleet_with_acme(db, &["--vps", "false"]).await;
    let plan = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await;
    let flavor = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "flavor")
        .unwrap();
    assert_eq!(
        flavor["note"],
        "this deployment does not serve flavors (vps module)"
    );
    fleet
        .fails(
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
            "PLAN_BLOCKED",
        )
        .await;
}
both!(modules_block, deployments_without_a_module_block_its_kinds);

/// Text with quotes, backslashes, control characters and non-ASCII survives the database and
/// the loaders, which have the database write the rows as one JSON array; an absent optional
/// field (a NULL column) stays absent. The export is answered as JSON written from its type.
async fn text_survives_the_database(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let odd = "eu \"central\" \\ tab\t line\n \u{0001} ünïcødé ✓ 🚀 </script>";
    let mut doc = seed_document();
    doc["sites"][0]["region"] = json!(odd);
    doc["providerAccounts"][0]["config"]["location"] = json!(odd);
    doc["sandboxTemplates"][0]["imageId"] = json!(odd);
    doc["sandboxTemplates"][0]["env"]["GREETING"] = json!(odd);
    let plan = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "planHash": plan["planHash"] }),
        )
        .await;

    let response = reqwest::Client::new()
        .post(fleet.server.url("/api/fleet.export"))
        .bearer_auth(&fleet.key)
        .json(&json!({ "tenantId": "root" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/json",
        "{:?}",
        response.headers()
    );
    let export: Value = response.json().await.expect("JSON");
    let config = &export["config"];
    assert_eq!(config["sites"][0]["region"], odd);
    assert_eq!(config["providerAccounts"][0]["config"]["location"], odd);
    assert_eq!(config["sandboxTemplates"][0]["imageId"], odd);
    assert_eq!(config["sandboxTemplates"][0]["env"]["GREETING"], odd);
    let burst = config["pools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "burst")
        .expect("the pool burst");
    assert!(burst.get("gpuModel").is_none(), "{burst}");
    assert!(burst.get("policy").is_none(), "{burst}");

    let again = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    assert!(calls(&again).is_empty(), "{again}");
}

both!(odd_text, text_survives_the_database);

/// An apply of more calls than one audit INSERT holds: every call has its row, naming the
/// object the call made, and the rows list in call order (ids sort strictly by creation
/// within a process, even within one millisecond).
async fn long_applies_audit_every_call_in_order(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let sites: Vec<Value> = (0..250)
        .map(|i| json!({ "name": format!("s{i:03}"), "kind": "shared", "region": "eu" }))
        .collect();
    let doc = json!({ "version": 1, "sites": sites });
    let plan = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    assert_eq!(calls(&plan).len(), 250);
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "planHash": plan["planHash"] }),
        )
        .await;
    let audit = fleet
        .ok(
            "audit.list",
            json!({ "tenantId": "root", "method": "site.create", "limit": 1000 }),
        )
        .await;
    // Newest first: reversed, the rows follow the calls.
    let mut rows: Vec<&Value> = audit["items"].as_array().unwrap().iter().collect();
    rows.reverse();
    assert_eq!(rows.len(), 250);
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let id_of = |name: &str| {
        export["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == "site" && o["name"] == name)
            .map(|o| o["id"].clone())
            .expect("an exported site")
    };
    for (row, call) in rows.iter().zip(calls(&plan)) {
        assert_eq!(row["details"]["via"], "fleet.apply");
        assert_eq!(row["details"]["input"], call["input"], "{row}");
        let key = call["input"]["idempotencyKey"].as_str().unwrap();
        let name = key.rsplit(':').next().unwrap();
        assert_eq!(row["objectId"], id_of(name), "{row}");
    }
}

both!(long_apply_audit, long_applies_audit_every_call_in_order);

/// Items made one apply after another, each later one named to sort before the earlier ones
/// (so the database's rows come in the opposite of name order): the export still lists every
/// kind by plan name, and its objects by kind then plan name.
async fn exports_list_items_by_name_whatever_their_age(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let mut document = json!({ "version": 1, "sites": [], "providerAccounts": [], "pools": [], "flavors": [], "sandboxTemplates": [] });
    for name in ["zz", "mm", "aa"] {
        let list = |key: &str, item: Value| {
            let mut items = document[key].as_array().unwrap().clone();
            items.push(item);
            items
        };
        let sites = list(
            "sites",
            json!({ "name": format!("s-{name}"), "kind": "shared", "region": "eu" }),
        );
        let accounts = list(
            "providerAccounts",
            json!({ "name": format!("a-{name}"), "provider": "hetzner-cloud", "config": {} }),
        );
        let pools = list(
            "pools",
            json!({ "name": format!("p-{name}"), "site": format!("s-{name}"), "class": "vps-host",
            "ownerQuota": { format!("r{name}"): 1 }, "offers": [{ "tenant": "acme", "quota": { "vcpu": 1 } }] }),
        );
        let flavors = list(
            "flavors",
            json!({ "pool": format!("p-{name}"), "name": format!("f-{name}"), "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }),
        );
        let templates = list(
            "sandboxTemplates",
            json!({ "name": format!("t-{name}"), "pool": format!("p-{name}"),
            "flavor": format!("f-{name}"), "imageId": "ubuntu", "network": "none" }),
        );
        document["sites"] = sites.into();
        document["providerAccounts"] = accounts.into();
        document["pools"] = pools.into();
        document["flavors"] = flavors.into();
        document["sandboxTemplates"] = templates.into();
        fleet
            .ok(
                "fleet.apply",
                json!({ "tenantId": "root", "config": document }),
            )
            .await;
    }
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let names = |key: &str, name: &dyn Fn(&Value) -> String| -> Vec<String> {
        export["config"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(name)
            .collect()
    };
    let field = |f: &'static str| move |v: &Value| v[f].as_str().unwrap().to_string();
    assert_eq!(names("sites", &field("name")), ["s-aa", "s-mm", "s-zz"]);
    assert_eq!(
        names("providerAccounts", &field("name")),
        ["a-aa", "a-mm", "a-zz"]
    );
    assert_eq!(names("pools", &field("name")), ["p-aa", "p-mm", "p-zz"]);
    let flavor = |v: &Value| {
        format!(
            "{}/{}",
            v["pool"].as_str().unwrap(),
            v["name"].as_str().unwrap()
        )
    };
    assert_eq!(
        names("flavors", &flavor),
        ["p-aa/f-aa", "p-mm/f-mm", "p-zz/f-zz"]
    );
    assert_eq!(
        names("sandboxTemplates", &field("name")),
        ["t-aa", "t-mm", "t-zz"]
    );
    // Objects: by kind (the order of `Kind`), then plan name.
    let kinds = [
        "site",
        "providerAccount",
        "pool",
        "ownerQuota",
        "offer",
        "flavor",
        "sandboxTemplate",
    ];
    let objects: Vec<(usize, String)> = export["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let kind = kinds.iter().position(|k| o["kind"] == *k).unwrap();
            (kind, o["name"].as_str().unwrap().to_string())
        })
        .collect();
    let mut sorted = objects.clone();
    sorted.sort();
    assert_eq!(objects, sorted);
    assert_eq!(objects.len(), 3 * kinds.len());
}
both!(export_order, exports_list_items_by_name_whatever_their_age);

/// A whole budget comes back as the document wrote it: `1`, not serde_json's `1.0`, in the
/// plan's calls and in the export's text (a committed export would churn otherwise).
async fn whole_budgets_are_exported_as_written(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let pool = |name: &str, budget: Value| json!({ "name": name, "site": "fra", "class": "vps-host", "policy": { "disruptionBudget": budget } });
    let document = json!({
        "version": 1,
        "sites": [{ "name": "fra", "kind": "shared", "region": "eu" }],
        "pools": [pool("all", json!(1)), pool("none", json!(0)), pool("some", json!(0.5))],
    });
    let raw = |method: &'static str, input: Value| {
        let request = fleet
            .client()
            .post(fleet.server.url(&format!("/api/{method}")))
            .bearer_auth(&fleet.key)
            .json(&input);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let budgets = |text: &str| -> Vec<String> {
        text.split("\"disruptionBudget\":")
            .skip(1)
            .map(|rest| rest[..rest.find('}').unwrap()].to_string())
            .collect()
    };
    let input = json!({ "tenantId": "root", "config": document });
    let plan = raw("fleet.plan", input.clone()).await;
    // In the pool.create calls (a create's change lists no fields).
    assert_eq!(budgets(&plan), ["1", "0", "0.5"], "{plan}");
    fleet.ok("fleet.apply", input).await;
    let export = raw("fleet.export", json!({ "tenantId": "root" })).await;
    assert_eq!(budgets(&export), ["1", "0", "0.5"], "{export}");
}
both!(whole_budgets, whole_budgets_are_exported_as_written);

/// The export's object of plan name `name`.
fn object<'e>(export: &'e Value, name: &str) -> &'e Value {
    export["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("no object {name}"))
}

/// acme's sandbox template `acme-py` on root's pool `vps-fra` (offered to acme), with root's
/// flavor `g1.small`; `export` is root's.
async fn acme_template_on_roots_pool(fleet: &Fleet, export: &Value) {
    let id = |name: &str| object(export, name)["id"].clone();
    fleet
        .ok(
            "sandboxTemplate.create",
            json!({ "tenantId": "acme", "name": "acme-py", "poolId": id("vps-fra"),
                    "flavorId": id("vps-fra/g1.small"), "imageId": "ubuntu-24.04",
                    "network": "private" }),
        )
        .await;
}

/// What another tenant uses cannot be pruned: the export names that user (no document of this
/// tenant can), the plan blocks the delete, the apply refuses the plan as a whole instead of
/// failing at a call, and the console's and the CLI's offline plans agree.
async fn prune_keeps_what_another_tenant_uses(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    // acme's template on root's pool (offered to acme) with root's flavor.
    acme_template_on_roots_pool(&fleet, &export).await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let user = json!({ "tenantId": "acme", "kind": "sandboxTemplate", "name": "acme-py" });
    for name in ["vps-fra", "vps-fra/g1.small", "vps-fra -> acme"] {
        assert_eq!(object(&export, name)["usedBy"], user, "{name}");
    }
    // Root's own template goes; the flavor acme uses stays, blocked.
    let mut doc = seed_document();
    doc["flavors"] = json!([]);
    doc["sandboxTemplates"] = json!([]);
    let input = json!({ "tenantId": "root", "config": doc, "prune": true });
    let plan = fleet.ok("fleet.plan", input.clone()).await;
    let flavor = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "flavor")
        .unwrap();
    assert_eq!(
        (&flavor["action"], &flavor["blocked"], &flavor["note"]),
        (
            &json!("delete"),
            &json!(true),
            &json!("flavor is used by sandbox template \"acme-py\" of tenant acme")
        )
    );
    let offline = offline_plan(&doc, &export, true);
    assert_eq!(json!(offline.plan_hash), plan["planHash"]);
    assert!(offline.summary.blocked);
    fleet.fails("fleet.apply", input, "PLAN_BLOCKED").await;
    let after = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(after, export, "nothing changed");
}
both!(used_elsewhere, prune_keeps_what_another_tenant_uses);

/// Hand edits that a reviewed plan would silently undo, or that would break the fleet's names,
/// are caught: an offer added after the review of an archive moves the pool (CONFIG_DRIFT at
/// apply, nothing archived); a create under a fleet name another object has is CONFLICT; an
/// unoffer while the tenant's template runs on the pool is CONFLICT.
async fn hand_edits_are_not_lost_or_duplicated(db: Db) {
    let fleet = fleet_with_acme(db, &[]).await;
    let mut doc = seed_document();
    doc["sandboxTemplates"] = json!([]);
    fleet
        .ok("fleet.apply", json!({ "tenantId": "root", "config": doc }))
        .await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let id = |name: &str| object(&export, name)["id"].as_str().unwrap().to_owned();
    // Review: prune `burst` (an archive).
    let mut without_burst = doc.clone();
    without_burst["pools"].as_array_mut().unwrap().pop();
    let input = json!({ "tenantId": "root", "config": without_burst, "prune": true });
    let reviewed = fleet.ok("fleet.plan", input.clone()).await;
    assert_eq!(calls(&reviewed)[0]["method"], "pool.archive");
    // By hand, after the review: an offer of burst to acme.
    fleet
        .ok(
            "pool.offer",
            json!({ "tenantId": "root", "poolId": id("burst"), "tenant": "acme", "quota": { "vcpu": 4 } }),
        )
        .await;
    let now = fleet.ok("fleet.plan", input.clone()).await;
    assert_ne!(now["planHash"], reviewed["planHash"], "the plan moved");
    let mut apply = input.clone();
    apply["planHash"] = reviewed["planHash"].clone();
    fleet.fails("fleet.apply", apply, "CONFIG_DRIFT").await;
    let pool = fleet
        .ok("pool.get", json!({ "tenantId": "root", "id": id("burst") }))
        .await;
    assert_eq!(
        pool["offers"][0]["tenant"], "acme",
        "the offer is still there"
    );

    // Another caller's create under fleet's key for `fra`: its id differs, the name is taken.
    let (_, other) = fleet
        .service_account("root", "ci", &[("*", "tenants/root")])
        .await;
    let taken = fleet
        .fails_as(
            &other,
            "site.create",
            json!({ "tenantId": "root", "idempotencyKey": "fleet:root:site:fra",
                    "kind": "dedicated", "region": "elsewhere" }),
            "CONFLICT",
        )
        .await;
    assert_eq!(taken.details["usedBy"], id("fra"), "{taken:?}");
    let sites = fleet.ok("site.list", json!({ "tenantId": "root" })).await;
    assert_eq!(
        sites["items"].as_array().unwrap().len(),
        1,
        "nothing created"
    );

    // acme runs a template on vps-fra: root cannot take the offer away under it.
    acme_template_on_roots_pool(&fleet, &export).await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let offer = object(&export, "vps-fra -> acme");
    let refused = fleet
        .fails(
            "pool.unoffer",
            json!({ "tenantId": "root", "poolId": id("vps-fra"), "tenant": "acme",
                    "ifRevision": offer["revision"] }),
            "CONFLICT",
        )
        .await;
    assert!(
        refused
            .message
            .contains("sandbox template acme-py of tenant acme"),
        "{refused:?}"
    );
    // And a plan that would do it is blocked, saying why.
    let mut no_offers = seed_document();
    no_offers["sandboxTemplates"] = json!([]);
    no_offers["pools"][0]["offers"] = json!([]);
    let plan = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": no_offers, "prune": true }),
        )
        .await;
    let change = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "offer")
        .unwrap();
    assert_eq!(
        change["note"],
        "offer is used by sandbox template \"acme-py\" of tenant acme"
    );
}
both!(hand_edits_kept, hand_edits_are_not_lost_or_duplicated);

/// The database of a test that restarts its server: a fresh SQLite file or PostgreSQL
/// database, and the folder that holds the file.
async fn restartable(db: Db) -> (String, Option<common::TempDir>) {
    match db {
        Db::Sqlite => {
            let dir = common::TempDir::new("modules-off");
            let url = format!("sqlite://{}", dir.path().join("fleet.db").display());
            (url, Some(dir))
        }
        Db::Postgres => (server_support::fresh_postgres().await, None),
    }
}

/// The blocked changes of a plan of `doc` with prune, as (kind, name, note).
async fn blocked(fleet: &Fleet, key: &str, doc: &Value) -> Vec<(String, String, String)> {
    let plan = fleet
        .call_as(
            key,
            "fleet.plan",
            json!({ "tenantId": "root", "config": doc, "prune": true }),
        )
        .await
        .unwrap();
    plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["blocked"] == true)
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (text("kind"), text("name"), text("note"))
        })
        .collect()
}

async fn modules_switched_off_keep_what_their_rows_use(db: Db) {
    let (database, _dir) = restartable(db).await;
    // The demo: pool vps-fra with flavor g1.small, root's template py-small and acme's
    // acme-py on it (offered to acme).
    let key = Fleet::start_on(&database, &["--demo"], &[]).key.clone();

    // Sandboxes off: the templates are left out of the export, yet they stay.
    let fleet = Fleet::start_on(&database, &["--sandboxes", "false"], &[]);
    let export = fleet
        .call_as(&key, "fleet.export", json!({ "tenantId": "root" }))
        .await
        .unwrap();
    let mut doc = export["config"].clone();
    let pools = doc["pools"].as_array_mut().unwrap();
    let vps_fra = pools.iter_mut().find(|p| p["name"] == "vps-fra").unwrap();
    vps_fra["offers"] = json!([]);
    doc["flavors"] = json!([]);
    let notes = blocked(&fleet, &key, &doc).await;
    let note = |kind: &str| {
        notes
            .iter()
            .find(|(k, _, _)| k == kind)
            .map(|(_, _, note)| note.clone())
            .unwrap_or_else(|| panic!("no blocked {kind}: {notes:?}"))
    };
    assert_eq!(
        note("offer"),
        "offer is used by sandbox template \"acme-py\" of tenant acme"
    );
    // Both templates use it; the note names the first by tenant and name.
    assert_eq!(
        note("flavor"),
        "flavor is used by sandbox template \"acme-py\" of tenant acme"
    );
    // The apply is refused as blocked: before, the unoffer went through and the flavor delete
    // failed on its foreign key (a 500).
    let refused = fleet
        .call_as(
            &key,
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "prune": true }),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, "PLAN_BLOCKED", "{refused:?}");
    drop(fleet);

    // The vps module off: flavors and provider accounts left out, templates too.
    let fleet = Fleet::start_on(&database, &["--vps", "false"], &[]);
    let export = fleet
        .call_as(&key, "fleet.export", json!({ "tenantId": "root" }))
        .await
        .unwrap();
    let mut doc = export["config"].clone();
    doc["pools"]
        .as_array_mut()
        .unwrap()
        .retain(|p| p["name"] != "vps-fra");
    let notes = blocked(&fleet, &key, &doc).await;
    let (_, _, pool) = notes
        .iter()
        .find(|(k, n, _)| k == "pool" && n == "vps-fra")
        .unwrap_or_else(|| panic!("the archive is blocked: {notes:?}"));
    assert!(pool.starts_with("pool is used by "), "{pool}");
    let refused = fleet
        .call_as(
            &key,
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "prune": true }),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, "PLAN_BLOCKED", "{refused:?}");
    // Archived by hand, the pool is refused too (the check no longer depends on the module).
    let pool = server_support::exported(&export, "pool", "vps-fra").clone();
    let by_hand = fleet
        .call_as(
            &key,
            "pool.archive",
            json!({ "tenantId": "root", "id": pool["id"], "ifRevision": pool["revision"] }),
        )
        .await
        .unwrap_err();
    assert_eq!(by_hand.code, "CONFLICT", "{by_hand:?}");
}
both!(modules_off, modules_switched_off_keep_what_their_rows_use);

async fn a_stale_review_is_config_drift_even_when_blocked_now(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let site = |name: &str| json!({ "name": name, "kind": "shared", "region": "eu" });
    let one = json!({ "version": 1, "sites": [site("a")] });
    let two = json!({ "version": 1, "sites": [site("a"), site("b")] });
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": one, "prune": true }),
        )
        .await;
    let reviewed = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": two, "prune": true }),
        )
        .await;
    // After the review, someone adds a site by hand under a fleet name: planned now, the
    // document would delete it, which is blocked (sites are never deleted).
    fleet
        .ok(
            "site.create",
            json!({ "tenantId": "root", "idempotencyKey": "fleet:root:site:c", "kind": "shared", "region": "eu" }),
        )
        .await;
    // Its delete makes no call, so the reviewed calls and planHash still hold: the apply is
    // refused as blocked, which says why.
    let apply = json!({ "tenantId": "root", "config": two, "prune": true, "planHash": reviewed["planHash"] });
    fleet
        .fails("fleet.apply", apply.clone(), "PLAN_BLOCKED")
        .await;
    // Then someone creates `b` by hand too: the reviewed create is gone from the calls. The
    // fleet moved under the review: CONFIG_DRIFT (it was PLAN_BLOCKED, the blocked check
    // first), audited.
    fleet
        .ok(
            "site.create",
            json!({ "tenantId": "root", "idempotencyKey": "fleet:root:site:b", "kind": "shared", "region": "eu" }),
        )
        .await;
    let drift = fleet.fails("fleet.apply", apply, "CONFIG_DRIFT").await;
    assert_eq!(drift.details["summary"]["blocked"], true, "{drift:?}");
    let audit = fleet
        .ok(
            "audit.list",
            json!({ "tenantId": "root", "method": "fleet.apply" }),
        )
        .await;
    assert_eq!(audit["items"][0]["outcome"], "config_drift");
}
both!(
    stale_review_blocked,
    a_stale_review_is_config_drift_even_when_blocked_now
);

/// Listings and exports order text byte by byte on PostgreSQL too, whatever the database's
/// collation (an ICU `en-US` database, a common default, sorted `a_b` before `a-b`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_orders_as_sqlite_under_any_collation() {
    use sqlx::Connection as _;
    let base = common::postgres_url();
    let name = format!("bc_test_icu_{}", std::process::id());
    let mut conn = sqlx::postgres::PgConnection::connect(&base).await.unwrap();
    sqlx::query(&format!(
        "CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
    ))
    .execute(&mut conn)
    .await
    .expect("an ICU database (PostgreSQL 15 with ICU)");
    let (prefix, _) = base.rsplit_once('/').unwrap();
    let fleet = Fleet::start_on(&format!("{prefix}/{name}"), &[], &[]);
    let ids = ["ab", "a_b", "a1", "a.b", "a-b"];
    for id in ids {
        fleet.ok("tenant.create", json!({ "id": id })).await;
    }
    let mut sorted: Vec<&str> = ids.into_iter().chain(["root"]).collect();
    sorted.sort();
    let listed = fleet.ok("tenant.list", json!({})).await;
    let listed: Vec<&str> = listed["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, sorted);
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(export["tenants"], json!(sorted));
    // A pool's owner quota and offers, as pool.get answers them.
    let site = fleet
        .ok(
            "site.create",
            json!({ "tenantId": "root", "kind": "shared", "region": "eu" }),
        )
        .await;
    let pool = fleet
        .ok(
            "pool.create",
            json!({ "tenantId": "root", "siteId": site["id"], "class": "vps-host" }),
        )
        .await;
    let resources = ["cpu", "a_b", "GPU", "a-b", "a1"];
    for resource in resources {
        fleet
            .ok(
                "pool.setOwnerQuota",
                json!({ "tenantId": "root", "poolId": pool["id"], "resource": resource, "max": 1 }),
            )
            .await;
    }
    for tenant in ["a-b", "a_b", "ab"] {
        fleet
            .ok(
                "pool.offer",
                json!({ "tenantId": "root", "poolId": pool["id"], "tenant": tenant, "quota": {} }),
            )
            .await;
    }
    let got = fleet
        .ok("pool.get", json!({ "tenantId": "root", "id": pool["id"] }))
        .await;
    let column = |list: &str, key: &str| -> Vec<String> {
        got[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e[key].as_str().unwrap().to_string())
            .collect()
    };
    let mut by_bytes: Vec<String> = resources.iter().map(|r| r.to_string()).collect();
    by_bytes.sort();
    assert_eq!(column("ownerQuota", "resource"), by_bytes);
    assert_eq!(column("offers", "tenant"), ["a-b", "a_b", "ab"]);
}

/// A fleet name may not be the id an unnamed object exports under: the export would hold it
/// twice, and no document could be that export (found by a fuzzing audit).
async fn a_fleet_name_is_not_an_unnamed_objects_id(db: Db) {
    let fleet = Fleet::start(db, &["--demo"]).await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let unnamed = |kind: &str| -> String {
        export["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == kind && o["name"] == o["id"])
            .unwrap_or_else(|| panic!("the demo has a {kind} made by hand"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let site = unnamed("site");
    let taken = fleet
        .fails(
            "site.create",
            json!({ "tenantId": "root", "kind": "dedicated", "region": "y", "idempotencyKey": format!("fleet:root:site:{site}") }),
            "CONFLICT",
        )
        .await;
    assert_eq!(taken.details["usedBy"], site.as_str(), "{taken:?}");
    let pool = unnamed("pool");
    let fra = server_support::exported(&export, "site", "fra")["id"].clone();
    fleet
        .fails(
            "pool.create",
            json!({ "tenantId": "root", "siteId": fra, "class": "vps-host", "idempotencyKey": format!("fleet:root:pool:{pool}") }),
            "CONFLICT",
        )
        .await;
    // Nor the id of an object fleet did name (documents name objects by id too), nor, for
    // acme, the id of root's pool offered to it (acme's templates name that pool by it).
    let vps_fra = server_support::exported(&export, "pool", "vps-fra")["id"]
        .as_str()
        .unwrap()
        .to_string();
    fleet
        .fails(
            "pool.create",
            json!({ "tenantId": "root", "siteId": fra, "class": "vps-host", "idempotencyKey": format!("fleet:root:pool:{vps_fra}") }),
            "CONFLICT",
        )
        .await;
    let acme_site = fleet
        .ok(
            "site.create",
            json!({ "tenantId": "acme", "kind": "shared", "region": "eu" }),
        )
        .await;
    fleet
        .fails(
            "pool.create",
            json!({ "tenantId": "acme", "siteId": acme_site["id"], "class": "vps-host", "idempotencyKey": format!("fleet:acme:pool:{vps_fra}") }),
            "CONFLICT",
        )
        .await;
    // And the other order: a fleet name given first, then a create whose key derives that id.
    let caller = export["caller"].as_str().unwrap();
    let future = planner::ids::derive_id(planner::Kind::Site, caller, "plain-key-1");
    fleet
        .ok(
            "site.create",
            json!({ "tenantId": "root", "kind": "shared", "region": "eu", "idempotencyKey": format!("fleet:root:site:{future}") }),
        )
        .await;
    fleet
        .fails(
            "site.create",
            json!({ "tenantId": "root", "kind": "shared", "region": "eu", "idempotencyKey": "plain-key-1" }),
            "CONFLICT",
        )
        .await;
    // Provider accounts and templates carry their names themselves: a name that is another's
    // id is refused too (a document's reference by id would move to the newcomer), and a
    // create whose key derives an id that is another's name.
    let account = server_support::exported(&export, "providerAccount", "cloud")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let account_in = |name: &str, key: &str| json!({ "tenantId": "root", "name": name, "provider": "hetzner-cloud", "config": {}, "idempotencyKey": key });
    let taken = fleet
        .fails(
            "providerAccount.create",
            account_in(&account, "k-a"),
            "CONFLICT",
        )
        .await;
    assert_eq!(taken.details["usedBy"], account.as_str(), "{taken:?}");
    let future = planner::ids::derive_id(planner::Kind::ProviderAccount, caller, "k-b");
    fleet
        .ok("providerAccount.create", account_in(&future, "k-c"))
        .await;
    fleet
        .fails(
            "providerAccount.create",
            account_in("other", "k-b"),
            "CONFLICT",
        )
        .await;
    let template = export["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "sandboxTemplate")
        .expect("the demo has a template")
        .clone();
    let current = fleet
        .ok(
            "sandboxTemplate.get",
            json!({ "tenantId": "root", "id": template["id"] }),
        )
        .await;
    let mut copy = json!({ "tenantId": "root", "name": template["id"], "poolId": current["poolId"],
        "flavorId": current["flavorId"], "imageId": "img", "network": current["network"] });
    let taken = fleet
        .fails("sandboxTemplate.create", copy.clone(), "CONFLICT")
        .await;
    assert_eq!(taken.details["usedBy"], template["id"], "{taken:?}");
    copy["name"] = json!("fresh");
    fleet.ok("sandboxTemplate.create", copy).await;

    // The export still plans back clean.
    let again = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let plan = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": again["config"], "prune": true }),
        )
        .await;
    assert_eq!(plan["calls"], json!([]));
}
both!(
    fleet_name_not_an_id,
    a_fleet_name_is_not_an_unnamed_objects_id
);

/// A pool archived, then a pool named by its old id: the plan blocks that name (a pool id's
/// shape names no pool), and so does the same create by hand, so the first pool can come back
/// under its id without one reference meaning two pools (found by a fuzzing audit).
async fn a_revived_pool_cannot_take_a_name_as_its_id(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let site = json!({ "name": "s", "kind": "shared", "region": "r" });
    let apply = |pools: Value, prune: bool| {
        json!({ "tenantId": "root", "prune": prune,
                "config": { "version": 1, "sites": [site.clone()], "pools": pools } })
    };
    let n = json!([{ "name": "n", "site": "s", "class": "vps-host" }]);
    fleet.ok("fleet.apply", apply(n.clone(), false)).await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let old_id = server_support::exported(&export, "pool", "n")["id"]
        .as_str()
        .unwrap()
        .to_string();
    fleet.ok("fleet.apply", apply(json!([]), true)).await;
    let named_by_id = json!([{ "name": old_id, "site": "s", "class": "vps-host" }]);
    let blocked = fleet
        .fails("fleet.apply", apply(named_by_id, false), "PLAN_BLOCKED")
        .await;
    assert!(
        blocked
            .message
            .contains("has the shape of a pool id and names no pool of this tenant"),
        "{blocked:?}"
    );
    let site_id = server_support::exported(&export, "site", "s")["id"].clone();
    let by_hand = fleet
        .fails(
            "pool.create",
            json!({ "tenantId": "root", "siteId": site_id, "class": "vps-host",
                    "idempotencyKey": format!("fleet:root:pool:{old_id}") }),
            "CONFLICT",
        )
        .await;
    assert!(
        by_hand.message.contains("has the shape of a pool id"),
        "{by_hand:?}"
    );
    // The first pool comes back under its id, and the export plans back clean.
    fleet.ok("fleet.apply", apply(n, false)).await;
    let again = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(
        server_support::exported(&again, "pool", "n")["id"],
        old_id.as_str()
    );
    let plan = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": again["config"], "prune": true }),
        )
        .await;
    assert_eq!(plan["calls"], json!([]), "{plan}");
}
both!(revived_pool, a_revived_pool_cannot_take_a_name_as_its_id);

/// A key of fleet's form names the call's own tenant, kind and object (found by a fuzzing
/// audit: a name no document can have, another tenant's key, or a key naming another object
/// each made a plan that never converged).
async fn a_fleet_key_names_the_object_it_creates(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    let site = |tenant: &str, key: &str| json!({ "tenantId": tenant, "kind": "shared", "region": "eu", "idempotencyKey": key });
    for (tenant, key) in [
        ("root", "fleet:root:site:BAD NAME"),
        ("root", "fleet:root:site:"),
        ("root", "fleet:root:pool:fra"),
        ("acme", "fleet:root:site:squat"),
        ("root", "fleet:root"),
    ] {
        let refused = fleet
            .fails("site.create", site(tenant, key), "INVALID_INPUT")
            .await;
        assert_eq!(
            refused.details["path"], "idempotencyKey",
            "{key}: {refused:?}"
        );
    }
    // Keys of any other form are the caller's own business.
    fleet.ok("site.create", site("root", "my-own-key")).await;
    let made = fleet
        .ok("site.create", site("root", "fleet:root:site:fra"))
        .await;
    let account = |name: &str, key: &str| json!({ "tenantId": "root", "name": name, "provider": "p", "config": {}, "idempotencyKey": key });
    fleet
        .fails(
            "providerAccount.create",
            account("x1", "fleet:root:providerAccount:y1"),
            "INVALID_INPUT",
        )
        .await;
    fleet
        .ok(
            "providerAccount.create",
            account("x1", "fleet:root:providerAccount:x1"),
        )
        .await;
    let pool = fleet
        .ok(
            "pool.create",
            json!({ "tenantId": "root", "siteId": made["id"], "class": "vps-host", "idempotencyKey": "fleet:root:pool:vps-fra" }),
        )
        .await;
    let flavor = |key: &str| json!({ "tenantId": "root", "poolId": pool["id"], "name": "g1", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1, "idempotencyKey": key });
    fleet
        .fails(
            "flavor.create",
            flavor("fleet:root:flavor:vps-fra/g2"),
            "INVALID_INPUT",
        )
        .await;
    fleet
        .ok("flavor.create", flavor("fleet:root:flavor:vps-fra/g1"))
        .await;
}
both!(fleet_keys, a_fleet_key_names_the_object_it_creates);
