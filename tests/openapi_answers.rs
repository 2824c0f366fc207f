//! Every method's answer is stated in the OpenAPI document, and stated right: every method is
//! called with a valid input against a real server (a fleet applied, drifted and converged,
//! webhooks delivered to a real receiver on loopback), and each real answer is validated
//! against the answer schema of the served `/api/openapi.json` (its `$ref`s resolved into the
//! document's components) by an independent JSON Schema 2020-12 validator. A method whose
//! answer is untyped (`{}`, or an object with no fields stated), or that the test does not
//! call, fails it. On SQLite and on PostgreSQL.

mod common;
mod drift_support;
mod server_support;

use common::seed_document;
use drift_support::{Receiver, until};
use serde_json::{Value, json};
use server_support::{Db, Fleet};
use std::collections::BTreeSet;

/// The answers got, by method.
struct Answers<'f> {
    fleet: &'f Fleet,
    got: Vec<(String, Value)>,
}

impl<'f> Answers<'f> {
    /// Calls `method` as the administrator, expects success and keeps the answer.
    async fn call(&mut self, method: &str, input: Value) -> Value {
        let answer = self.fleet.ok(method, input).await;
        self.got.push((method.to_string(), answer.clone()));
        answer
    }

    /// Calls `method` and answers its `id`.
    async fn id(&mut self, method: &str, input: Value) -> String {
        let answer = self.call(method, input).await;
        answer["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} answers an id: {answer}"))
            .to_string()
    }
}

/// `schema` with its `$ref` (to a component) followed.
fn resolve<'d>(doc: &'d Value, schema: &'d Value) -> &'d Value {
    match schema["$ref"].as_str() {
        Some(r) => {
            let pointer = r.strip_prefix('#').expect("a local reference");
            resolve(
                doc,
                doc.pointer(pointer)
                    .unwrap_or_else(|| panic!("{r} resolves")),
            )
        }
        None => schema,
    }
}

/// A validator of `schema` (a part of `doc`), its references resolving into `doc`'s
/// components.
fn validator(doc: &Value, schema: &Value) -> jsonschema::Validator {
    let mut root = schema.clone();
    root["components"] = doc["components"].clone();
    jsonschema::draft202012::new(&root)
        .unwrap_or_else(|e| panic!("the schema compiles: {e}: {schema}"))
}

async fn every_answer_matches_its_schema(db: Db) {
    let fleet = Fleet::start(db, &["--webhook-allow-private"]).await;
    let receiver = Receiver::start().await;
    let mut a = Answers {
        fleet: &fleet,
        got: Vec::new(),
    };

    // IAM, in tenant root.
    a.call("tenant.create", json!({ "id": "acme" })).await;
    a.call("tenant.create", json!({ "id": "globex", "name": "Globex" }))
        .await;
    a.call("tenant.list", json!({})).await;
    let sa = a
        .id(
            "serviceAccount.create",
            json!({ "tenantId": "root", "name": "ci" }),
        )
        .await;
    let grant = a
        .id(
            "grant.create",
            json!({ "tenantId": "root", "principalId": sa, "permission": "compute:pool:read" }),
        )
        .await;
    a.call(
        "grant.create",
        json!({ "tenantId": "root", "principalId": sa, "permission": "compute:site:read", "scope": "tenants/acme" }),
    )
    .await;
    a.call("grant.list", json!({ "tenantId": "root" })).await;
    a.call(
        "grant.list",
        json!({ "tenantId": "root", "principalId": sa }),
    )
    .await;
    a.call("grant.delete", json!({ "tenantId": "root", "id": grant }))
        .await;
    let key = a
        .id(
            "apiKey.create",
            json!({ "tenantId": "root", "principalId": sa, "name": "ci key" }),
        )
        .await;
    a.call("apiKey.list", json!({ "tenantId": "root" })).await;
    a.call("apiKey.revoke", json!({ "tenantId": "root", "id": key }))
        .await;
    let keys = a.call("apiKey.list", json!({ "tenantId": "root" })).await;
    assert!(
        keys["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["revokedAt"].is_i64()),
        "{keys}"
    );
    a.call("principal.list", json!({ "tenantId": "root" }))
        .await;

    // The objects, every optional field given somewhere.
    let root = |fields: Value| {
        let mut input = json!({ "tenantId": "root" });
        input
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        input
    };
    let account = a
        .id(
            "providerAccount.create",
            root(json!({ "name": "cloud", "provider": "hetzner-cloud",
                         "config": { "token": "secret://hetzner", "location": "fsn1" } })),
        )
        .await;
    a.call(
        "providerAccount.update",
        root(json!({ "id": account, "ifRevision": 1, "config": { "token": "secret://other" } })),
    )
    .await;
    let site = a
        .id(
            "site.create",
            root(json!({ "kind": "shared", "region": "eu-central" })),
        )
        .await;
    let pool = a
        .id(
            "pool.create",
            root(
                json!({ "siteId": site, "class": "vps-host", "gpuModel": "L40S",
                         "policy": { "disruptionBudget": 0.1 } }),
            ),
        )
        .await;
    let burst = a
        .id(
            "pool.create",
            root(
                json!({ "idempotencyKey": "burst", "siteId": site, "class": "provider",
                         "providerAccountId": account }),
            ),
        )
        .await;
    a.call(
        "pool.update",
        root(json!({ "id": pool, "ifRevision": 1, "policy": { "disruptionBudget": 0.2 } })),
    )
    .await;
    a.call(
        "pool.setOwnerQuota",
        root(json!({ "poolId": pool, "resource": "gpu", "max": 8 })),
    )
    .await;
    a.call(
        "pool.offer",
        root(json!({ "poolId": pool, "tenant": "acme", "quota": { "vcpu": 64, "gpu": 2 }, "priority": 5 })),
    )
    .await;
    let offered = a
        .call(
            "pool.offer",
            root(json!({ "poolId": pool, "tenant": "globex", "quota": { "vcpu": 8 } })),
        )
        .await;
    assert_eq!(offered["offers"].as_array().unwrap().len(), 2, "{offered}");
    let flavor = a
        .id(
            "flavor.create",
            root(
                json!({ "poolId": pool, "name": "g1.small", "vcpu": 2, "memoryGiB": 4,
                         "diskGiB": 40, "gpu": 1 }),
            ),
        )
        .await;
    a.call(
        "flavor.update",
        root(json!({ "id": flavor, "ifRevision": 1, "vcpu": 4, "memoryGiB": 8, "diskGiB": 80 })),
    )
    .await;
    let template = a
        .id(
            "sandboxTemplate.create",
            root(json!({ "name": "py-small", "poolId": pool, "flavorId": flavor,
                         "imageId": "ubuntu-24.04", "env": { "PIP_INDEX_URL": "secret://root/sec_01k…" },
                         "network": "private", "warm": { "min": 2, "max": 4 } })),
        )
        .await;
    a.call(
        "sandboxTemplate.update",
        root(json!({ "id": template, "ifRevision": 1, "flavorId": flavor,
                     "imageId": "ubuntu-24.10", "network": "public" })),
    )
    .await;
    for (kind, id) in [
        ("site", &site),
        ("pool", &pool),
        ("providerAccount", &account),
        ("flavor", &flavor),
        ("sandboxTemplate", &template),
    ] {
        let list = a.call(&format!("{kind}.list"), root(json!({}))).await;
        assert!(!list["items"].as_array().unwrap().is_empty(), "{list}");
        a.call(&format!("{kind}.get"), root(json!({ "id": id })))
            .await;
    }
    a.call(
        "sandboxTemplate.delete",
        root(json!({ "id": template, "ifRevision": 2 })),
    )
    .await;
    a.call(
        "flavor.delete",
        root(json!({ "id": flavor, "ifRevision": 2 })),
    )
    .await;
    a.call(
        "pool.unoffer",
        root(json!({ "poolId": pool, "tenant": "globex", "ifRevision": 1 })),
    )
    .await;
    a.call(
        "pool.archive",
        root(json!({ "id": burst, "ifRevision": 1 })),
    )
    .await;
    a.call(
        "providerAccount.delete",
        root(json!({ "id": account, "ifRevision": 2 })),
    )
    .await;

    // The fleet of globex, with two webhooks: it drifts, then converges.
    let globex = json!({ "tenantId": "globex" });
    let hook = a
        .id(
            "webhook.create",
            json!({ "tenantId": "globex", "url": receiver.url("ok"), "events": ["*"] }),
        )
        .await;
    let gone = a
        .id(
            "webhook.create",
            json!({ "tenantId": "globex", "url": receiver.url("gone"), "events": ["fleet.drifted"] }),
        )
        .await;
    let doc = seed_document();
    a.call("fleet.export", globex.clone()).await;
    a.call(
        "fleet.plan",
        json!({ "tenantId": "globex", "config": doc, "prune": true }),
    )
    .await;
    a.call(
        "fleet.apply",
        json!({ "tenantId": "globex", "config": doc }),
    )
    .await;
    a.call("fleet.status", globex.clone()).await;
    a.call("fleet.check", globex.clone()).await;
    let export = a.call("fleet.export", globex.clone()).await;
    let vps = server_support::exported(&export, "pool", "vps-fra").clone();
    let edited = a
        .call(
            "pool.update",
            json!({ "tenantId": "globex", "id": vps["id"], "ifRevision": vps["revision"],
                    "policy": { "disruptionBudget": 0.3 } }),
        )
        .await;
    let drifted = a.call("fleet.check", globex.clone()).await;
    assert!(drifted["drift"].is_object(), "{drifted}");
    a.call("fleet.status", globex.clone()).await;
    a.call(
        "pool.update",
        json!({ "tenantId": "globex", "id": vps["id"], "ifRevision": edited["revision"],
                "policy": { "disruptionBudget": 0.1 } }),
    )
    .await;
    let converged = a.call("fleet.check", globex.clone()).await;
    assert!(converged["drift"].is_null(), "{converged}");
    let events = a.call("event.list", globex.clone()).await;
    let types: Vec<&str> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["fleet.converged", "fleet.drifted"], "{events}");
    let event = events["items"][1]["id"].as_str().unwrap().to_string();
    a.call(
        "event.list",
        json!({ "tenantId": "globex", "type": "fleet.drifted", "limit": 1 }),
    )
    .await;

    // Deliveries made (the receiver's 410 disables its endpoint), then the webhook methods.
    receiver.wait_for("ok", 2).await;
    receiver.wait_for("gone", 1).await;
    let deliveries = json!({ "tenantId": "globex", "id": hook });
    until("both deliveries logged", || async {
        let answer = fleet.ok("webhook.deliveries", deliveries.clone()).await;
        let items = answer["items"].as_array().unwrap();
        let done = items.len() == 2
            && items
                .iter()
                .all(|d| d["status"] == "succeeded" && !d["log"].as_array().unwrap().is_empty());
        done.then_some(())
    })
    .await;
    a.call("webhook.deliveries", deliveries).await;
    until("the 410 endpoint disabled", || async {
        let answer = fleet.ok("webhook.list", globex.clone()).await;
        let disabled = answer["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["id"] == gone.as_str() && w["disabledAt"].is_i64());
        disabled.then_some(())
    })
    .await;
    a.call("webhook.list", globex.clone()).await;
    a.call(
        "webhook.deliveries",
        json!({ "tenantId": "globex", "id": gone, "limit": 10 }),
    )
    .await;
    a.call(
        "webhook.redeliver",
        json!({ "tenantId": "globex", "id": hook, "eventId": event }),
    )
    .await;
    a.call(
        "webhook.rotateSecret",
        json!({ "tenantId": "globex", "id": hook }),
    )
    .await;
    a.call(
        "webhook.delete",
        json!({ "tenantId": "globex", "id": gone }),
    )
    .await;

    // What the server did, recorded.
    let status = a.call("reconciler.status", json!({ "runs": true })).await;
    assert!(!status["runs"].as_array().unwrap().is_empty(), "{status}");
    a.call("reconciler.status", json!({})).await;
    a.call("audit.list", json!({ "tenantId": "root" })).await;
    a.call(
        "audit.list",
        json!({ "tenantId": "globex", "method": "fleet.apply", "limit": 5 }),
    )
    .await;

    let doc: Value = reqwest::get(fleet.server.url("/api/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let method = path.strip_prefix("/api/").unwrap();
        if ["health", "openapi.json"].contains(&method) {
            continue;
        }
        documented.insert(method.to_string());
        let schema = &item["post"]["responses"]["200"]["content"]["application/json"]["schema"];
        if item.get("get").is_some() {
            assert_eq!(
                &item["get"]["responses"]["200"]["content"]["application/json"]["schema"], schema,
                "{method}: GET answers as POST does"
            );
        }
        // Typed: an object whose fields are stated, some of them required.
        let stated = resolve(&doc, schema);
        let required: Vec<&str> = stated["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(
            stated["properties"]
                .as_object()
                .is_some_and(|p| !p.is_empty())
                && !required.is_empty(),
            "{method}: its answer is untyped: {schema}"
        );
        let validator = validator(&doc, schema);
        let answers: Vec<&Value> = a
            .got
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, v)| v)
            .collect();
        assert!(!answers.is_empty(), "{method} was not called");
        for answer in answers {
            let errors: Vec<String> = validator
                .iter_errors(answer)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{method}: the answer does not match its schema: {errors:?}\n{answer}"
            );
            // The schema has teeth: the answer without a required field is refused.
            let mut short = answer.clone();
            short.as_object_mut().unwrap().remove(required[0]);
            assert!(
                !validator.is_valid(&short),
                "{method}: an answer without {} passes",
                required[0]
            );
        }
    }
    let called: BTreeSet<String> = a.got.iter().map(|(m, _)| m.clone()).collect();
    assert_eq!(called, documented, "every method is called, and only those");
    assert!(documented.len() >= 50, "{}", documented.len());
}
both!(answers, every_answer_matches_its_schema);
