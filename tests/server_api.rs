//! The server's HTTP API without planning: bootstrap, IAM, object methods, revisions, audit,
//! error envelopes, modules, the body limit and the OpenAPI document. Each test runs on
//! SQLite and, as its `postgres` twin, on the test PostgreSQL.

mod common;
mod server_support;

use serde_json::{Value, json};
use server_support::{Db, Failure, Fleet, answer};

async fn site_and_pool(fleet: &Fleet, tenant: &str) -> (String, String) {
    let site = fleet
        .ok(
            "site.create",
            json!({ "tenantId": tenant, "kind": "shared", "region": "eu" }),
        )
        .await;
    let site = site["id"].as_str().unwrap().to_string();
    let pool = fleet
        .ok(
            "pool.create",
            json!({ "tenantId": tenant, "siteId": site, "class": "vps-host" }),
        )
        .await;
    (site, pool["id"].as_str().unwrap().to_string())
}

async fn objects_have_revisions_and_audit(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    assert!(
        fleet.key.starts_with("bc_"),
        "the admin key is printed once: {:?}",
        fleet.server.stdout()
    );
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    let (_, pool) = site_and_pool(&fleet, "root").await;

    // ifRevision: a stale revision is CONFLICT naming the object; a fresh one bumps it.
    let stale = fleet
        .fails(
            "pool.update",
            json!({ "tenantId": "root", "id": pool, "ifRevision": 7, "policy": null }),
            "CONFLICT",
        )
        .await;
    assert_eq!(stale.status, 409);
    assert_eq!(stale.details["object"], format!("pool {pool}"));
    let updated = fleet
        .ok("pool.update", json!({ "tenantId": "root", "id": pool, "ifRevision": 1, "policy": { "disruptionBudget": 0.5 } }))
        .await;
    assert_eq!(updated["revision"], 2);
    assert_eq!(updated["policy"]["disruptionBudget"], 0.5);

    // Owner quotas and offers have revisions of their own.
    let q = fleet
        .ok(
            "pool.setOwnerQuota",
            json!({ "tenantId": "root", "poolId": pool, "resource": "gpu", "max": 4 }),
        )
        .await;
    assert_eq!(
        q["ownerQuota"][0],
        json!({ "resource": "gpu", "max": 4, "revision": 1 })
    );
    fleet
        .fails("pool.setOwnerQuota", json!({ "tenantId": "root", "poolId": pool, "resource": "gpu", "max": 5, "ifRevision": 3 }), "CONFLICT")
        .await;
    let o = fleet.ok("pool.offer", json!({ "tenantId": "root", "poolId": pool, "tenant": "acme", "quota": { "vcpu": 8 }, "priority": 2 })).await;
    assert_eq!(o["offers"][0]["revision"], 1);
    let own = fleet
        .fails(
            "pool.offer",
            json!({ "tenantId": "root", "poolId": pool, "tenant": "root", "quota": {} }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(own.details["path"], "tenant");
    fleet
        .ok(
            "pool.unoffer",
            json!({ "tenantId": "root", "poolId": pool, "tenant": "acme", "ifRevision": 1 }),
        )
        .await;
    fleet
        .fails(
            "pool.unoffer",
            json!({ "tenantId": "root", "poolId": pool, "tenant": "acme", "ifRevision": 1 }),
            "CONFLICT",
        )
        .await;

    // Idempotent create: the same key gives the same object, once.
    let input = json!({ "tenantId": "root", "idempotencyKey": "k-1", "poolId": pool, "name": "g1.small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 });
    let a = fleet.ok("flavor.create", input.clone()).await;
    let b = fleet.ok("flavor.create", input).await;
    assert_eq!(a["id"], b["id"]);
    assert!(a["id"].as_str().unwrap().starts_with("flv_"));
    let list = fleet.ok("flavor.list", json!({ "tenantId": "root" })).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let got = fleet
        .ok("flavor.get", json!({ "tenantId": "root", "id": a["id"] }))
        .await;
    assert_eq!(got["name"], "g1.small");

    // Secrets are references only.
    let secret = fleet
        .fails("providerAccount.create", json!({ "tenantId": "root", "name": "cloud", "provider": "hetzner-cloud", "config": { "token": "plain" } }), "INVALID_INPUT")
        .await;
    assert_eq!(secret.details["path"], "config.token");
    // The document's rule, to the letter: an env:// name starts with a letter or `_`, and a key
    // with a dot is one step of the path.
    let secret = fleet
        .fails("providerAccount.create", json!({ "tenantId": "root", "name": "cloud", "provider": "hetzner-cloud", "config": { "api.key": "env://1TOKEN" } }), "INVALID_INPUT")
        .await;
    assert_eq!(secret.details["path"], r#"config["api.key"]"#);

    // The pool's revision moved with each owner quota and offer write: an archive (which
    // removes them) planned before one of them changed does not match.
    let current = fleet
        .ok("pool.get", json!({ "tenantId": "root", "id": pool }))
        .await;
    assert_eq!(current["revision"], 5, "{current}");
    // Archive refuses a pool a flavor uses (the flavor would come back with the pool).
    let used = fleet
        .fails(
            "pool.archive",
            json!({ "tenantId": "root", "id": pool, "ifRevision": current["revision"] }),
            "CONFLICT",
        )
        .await;
    assert_eq!(used.details["usedBy"], a["id"], "{used:?}");
    fleet
        .ok(
            "flavor.delete",
            json!({ "tenantId": "root", "id": a["id"], "ifRevision": 1 }),
        )
        .await;
    // Archive removes quotas and offers; the pool is gone from lists.
    fleet
        .ok(
            "pool.archive",
            json!({ "tenantId": "root", "id": pool, "ifRevision": current["revision"] }),
        )
        .await;
    fleet
        .fails(
            "pool.get",
            json!({ "tenantId": "root", "id": pool }),
            "NOT_FOUND",
        )
        .await;

    // Every write left an audit row, newest first.
    let audit = fleet
        .ok("audit.list", json!({ "tenantId": "root", "limit": 100 }))
        .await;
    let methods: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods[0], "pool.archive");
    assert!(methods.contains(&"pool.update") && methods.contains(&"site.create"));
    // A row has the shape docs/server.md gives it, its tenant included.
    let row = audit["items"][0].as_object().unwrap();
    let keys: Vec<&str> = row.keys().map(String::as_str).collect();
    for key in [
        "id",
        "tenantId",
        "principalId",
        "method",
        "outcome",
        "objectId",
        "details",
        "at",
    ] {
        assert!(keys.contains(&key), "audit row without {key}: {row:?}");
    }
    assert_eq!(row["tenantId"], "root");
    // GET works for reads.
    let response = fleet
        .client()
        .get(fleet.server.url("/api/audit.list?tenantId=root&limit=1"))
        .bearer_auth(&fleet.key)
        .send()
        .await
        .unwrap();
    assert_eq!(
        answer(response).await.unwrap()["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
both!(objects, objects_have_revisions_and_audit);

async fn iam_keys_grants_and_refusals(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    // A service account of acme with every permission on acme's scope.
    let (sa, key) = fleet
        .service_account("acme", "ci", &[("*", "tenants/acme")])
        .await;
    let site = fleet
        .call_as(
            &key,
            "site.create",
            json!({ "tenantId": "acme", "kind": "dedicated", "region": "us" }),
        )
        .await
        .unwrap();
    assert!(site["id"].as_str().unwrap().starts_with("site_"));
    // ... but nothing in another tenant, and never the fleet methods.
    let other = fleet
        .fails_as(
            &key,
            "site.create",
            json!({ "tenantId": "root", "kind": "shared", "region": "eu" }),
            "FORBIDDEN",
        )
        .await;
    assert_eq!(other.status, 403);
    for method in ["fleet.export", "fleet.status"] {
        let refused = fleet
            .fails_as(&key, method, json!({ "tenantId": "acme" }), "FORBIDDEN")
            .await;
        assert_eq!(refused.details["scope"], "compute-fleet/global");
    }
    fleet
        .fails_as(
            &key,
            "fleet.plan",
            json!({ "tenantId": "acme", "config": { "version": 1 } }),
            "FORBIDDEN",
        )
        .await;
    // compute-fleet/global exists only in root: no grant can put it in acme.
    let grant = fleet
        .fails(
            "grant.create",
            json!({ "tenantId": "acme", "principalId": sa, "permission": "compute:fleet:admin", "scope": "compute-fleet/global" }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(grant.details["path"], "scope");
    // A root grant on a tenant's scope names a tenant that exists, by a valid id.
    let (ops, _) = fleet.service_account("root", "ops", &[]).await;
    let grant = |scope: &str| json!({ "tenantId": "root", "principalId": ops, "permission": "compute:pool:read", "scope": scope });
    let ghost = fleet
        .fails("grant.create", grant("tenants/ghost"), "NOT_FOUND")
        .await;
    assert_eq!(ghost.details["id"], "ghost", "{ghost:?}");
    for scope in ["tenants/", "tenants/Not A Name", "tenants/acme/pools"] {
        let bad = fleet
            .fails("grant.create", grant(scope), "INVALID_INPUT")
            .await;
        assert_eq!(bad.details["path"], "scope", "{scope}: {bad:?}");
    }
    fleet.ok("grant.create", grant("tenants/acme")).await;
    // A permission the checks could never match is refused, not stored as a dead grant.
    for permission in [
        "compute:po*",
        "compute",
        "compute::update",
        "*:pool",
        "a:b:",
    ] {
        let bad = fleet
            .fails(
                "grant.create",
                json!({ "tenantId": "acme", "principalId": sa, "permission": permission }),
                "INVALID_INPUT",
            )
            .await;
        assert_eq!(bad.details["path"], "permission", "{permission}");
    }
    // Refused attempts are audited.
    let audit = fleet
        .ok(
            "audit.list",
            json!({ "tenantId": "acme", "method": "fleet.export" }),
        )
        .await;
    assert_eq!(audit["items"][0]["outcome"], "forbidden");
    assert_eq!(audit["items"][0]["principalId"], sa.as_str());

    // Keys: unknown, malformed and revoked keys are UNAUTHENTICATED.
    let keys = fleet
        .ok(
            "apiKey.create",
            json!({ "tenantId": "acme", "principalId": sa }),
        )
        .await;
    let second = keys["key"].as_str().unwrap();
    fleet
        .call_as(second, "site.list", json!({ "tenantId": "acme" }))
        .await
        .unwrap();
    // The scheme is case-insensitive (RFC 9110): `bearer` names the same key.
    let lowercase = reqwest::Client::new()
        .post(fleet.server.url("/api/site.list"))
        .header("authorization", format!("bearer {second}"))
        .json(&json!({ "tenantId": "acme" }))
        .send()
        .await
        .unwrap();
    assert_eq!(lowercase.status(), 200);
    fleet
        .ok(
            "apiKey.revoke",
            json!({ "tenantId": "acme", "id": keys["id"] }),
        )
        .await;
    let revoked = fleet
        .fails_as(
            second,
            "site.list",
            json!({ "tenantId": "acme" }),
            "UNAUTHENTICATED",
        )
        .await;
    assert_eq!(revoked.status, 401);
    let forged = format!("{}x", &second[..second.len() - 1]);
    fleet
        .fails_as(
            &forged,
            "site.list",
            json!({ "tenantId": "acme" }),
            "UNAUTHENTICATED",
        )
        .await;
    fleet
        .fails_as(
            "nonsense",
            "site.list",
            json!({ "tenantId": "acme" }),
            "UNAUTHENTICATED",
        )
        .await;
    let response = fleet
        .client()
        .post(fleet.server.url("/api/site.list"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer(response).await.unwrap_err().code, "UNAUTHENTICATED");
}
both!(iam, iam_keys_grants_and_refusals);

/// Methods of one object of a tenant named by its id (`x`, which no object has).
const ONE_OBJECT_METHODS: [&str; 6] = [
    "webhook.delete",
    "webhook.rotateSecret",
    "webhook.deliveries",
    "webhook.redeliver",
    "grant.delete",
    "apiKey.revoke",
];

/// The input of `method` for the object `x` of `tenant` (and the event `x` to redeliver).
fn one_object(method: &str, tenant: &str) -> Value {
    let mut input = json!({ "tenantId": tenant, "id": "x" });
    if method == "webhook.redeliver" {
        input["eventId"] = json!("x");
    }
    input
}

/// A refusal's audit row goes where someone can read it, and holds no text of any size: a
/// malformed tenant id is INVALID_INPUT (no row), and a refusal naming a tenant that does not
/// exist is logged in the caller's own tenant, naming the tenant asked for.
async fn refusals_are_audited_where_they_can_be_read(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    fleet.ok("tenant.create", json!({ "id": "globex" })).await;
    let (sa, nothing) = fleet.service_account("globex", "nothing", &[]).await;
    let rows = |tenant: &str| {
        let (fleet, sa) = (&fleet, sa.clone());
        let tenant = tenant.to_owned();
        async move {
            let audit = fleet
                .ok("audit.list", json!({ "tenantId": tenant, "limit": 1000 }))
                .await;
            audit["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["principalId"] == sa.as_str() && r["outcome"] == "forbidden")
                .cloned()
                .collect::<Vec<Value>>()
        }
    };

    let long = "x".repeat(100_000);
    let bad = fleet
        .fails_as(
            &nothing,
            "site.list",
            json!({ "tenantId": long }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(bad.details["path"], "tenantId");
    assert!(rows("globex").await.is_empty());
    // The same for a caller that holds everything: the input's mistake, not "not found".
    for method in ONE_OBJECT_METHODS.iter().chain(&["site.get"]) {
        for tenant in ["NOPE!", "", long.as_str()] {
            let input = one_object(method, tenant);
            let bad = fleet.fails(method, input, "INVALID_INPUT").await;
            assert_eq!(bad.details["path"], "tenantId", "{method}: {bad:?}");
        }
    }

    fleet
        .fails_as(
            &nothing,
            "site.list",
            json!({ "tenantId": "nosuch" }),
            "FORBIDDEN",
        )
        .await;
    let logged = rows("globex").await;
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["details"]["tenantId"], "nosuch");
    assert_eq!(logged[0]["method"], "site.list");

    // A tenant that exists keeps its refusals in its own log.
    fleet
        .fails_as(
            &nothing,
            "site.list",
            json!({ "tenantId": "acme" }),
            "FORBIDDEN",
        )
        .await;
    assert_eq!(rows("acme").await.len(), 1);
    assert_eq!(rows("globex").await.len(), 1);
}

both!(refusal_audit, refusals_are_audited_where_they_can_be_read);

async fn error_envelopes(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let bad = fleet
        .fails(
            "site.create",
            json!({ "tenantId": "root", "kind": "huge", "region": "eu" }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(
        (bad.status, bad.details["path"].as_str()),
        (400, Some("kind"))
    );
    let unknown = fleet
        .fails(
            "site.create",
            json!({ "tenantId": "root", "kind": "shared", "region": "eu", "x": 1 }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(unknown.details["path"], "x");
    let missing = fleet
        .fails("fleet.plan", json!({ "tenantId": "root" }), "INVALID_INPUT")
        .await;
    assert_eq!(missing.details["path"], "config");
    // A repeated key is pointed at like a missing one: the key itself, not its object.
    for (method, body, path) in [
        (
            "fleet.plan",
            r#"{"tenantId":"root","tenantId":"acme","config":{"version":1}}"#,
            "tenantId",
        ),
        (
            "pool.offer",
            r#"{"tenantId":"root","poolId":"pool_x","tenant":"acme","quota":{"vcpu":1,"vcpu":2}}"#,
            "quota.vcpu",
        ),
        (
            "pool.offer",
            r#"{"tenantId":"root","poolId":"pool_x","tenant":"acme","quota":{"nvidia.com/gpu":1,"nvidia.com/gpu":2}}"#,
            r#"quota["nvidia.com/gpu"]"#,
        ),
    ] {
        let response = fleet
            .client()
            .post(fleet.server.url(&format!("/api/{method}")))
            .bearer_auth(&fleet.key)
            .body(body)
            .send()
            .await
            .unwrap();
        let repeated = answer(response).await.unwrap_err();
        assert_eq!(repeated.code, "INVALID_INPUT", "{body}");
        assert_eq!(repeated.details["path"], path, "{body}");
    }
    let method = fleet.fails("pool.explode", json!({}), "NOT_FOUND").await;
    assert_eq!(method.status, 404);
    fleet
        .fails("fleet.export", json!({ "tenantId": "nobody" }), "NOT_FOUND")
        .await;
    fleet
        .fails(
            "pool.get",
            json!({ "tenantId": "root", "id": "pool_nope" }),
            "NOT_FOUND",
        )
        .await;
    // Malformed JSON.
    let response = fleet
        .client()
        .post(fleet.server.url("/api/site.list"))
        .bearer_auth(&fleet.key)
        .body("{\"tenantId\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(answer(response).await.unwrap_err().code, "INVALID_INPUT");
    // The body limit.
    let huge = format!(
        "{{\"tenantId\":\"root\",\"pad\":\"{}\"}}",
        "x".repeat(17 * 1024 * 1024)
    );
    let response = fleet
        .client()
        .post(fleet.server.url("/api/site.list"))
        .bearer_auth(&fleet.key)
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    let too_large = answer(response).await.unwrap_err();
    assert_eq!(
        (too_large.status, too_large.code.as_str()),
        (413, "PAYLOAD_TOO_LARGE")
    );
}
both!(errors, error_envelopes);

/// JSON Schema's integers: an integral float (`2.0`, `1e2`) is an integer, in calls and in
/// the server's own inputs; a fraction or a value past the field's type is not.
async fn integral_floats_are_integers(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let (_, pool) = site_and_pool(&fleet, "root").await;
    let flavor = fleet
        .ok(
            "flavor.create",
            json!({ "tenantId": "root", "poolId": pool, "name": "f", "vcpu": 2.0, "memoryGiB": 4e0, "diskGiB": 10 }),
        )
        .await;
    assert_eq!(
        (&flavor["vcpu"], &flavor["memoryGiB"]),
        (&json!(2), &json!(4)),
        "{flavor}"
    );
    let updated = fleet
        .ok(
            "flavor.update",
            json!({ "tenantId": "root", "id": flavor["id"], "ifRevision": 1.0, "vcpu": 3, "memoryGiB": 4, "diskGiB": 1e1 }),
        )
        .await;
    assert_eq!(
        (&updated["revision"], &updated["diskGiB"]),
        (&json!(2), &json!(10))
    );
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    let offered = fleet
        .ok(
            "pool.offer",
            json!({ "tenantId": "root", "poolId": pool, "tenant": "acme", "quota": { "gpu": 8.0 }, "priority": -1.0 }),
        )
        .await;
    assert_eq!(
        (
            &offered["offers"][0]["quota"],
            &offered["offers"][0]["priority"]
        ),
        (&json!({ "gpu": 8 }), &json!(-1)),
        "{offered}"
    );
    let audit = fleet
        .ok("audit.list", json!({ "tenantId": "root", "limit": 2.0 }))
        .await;
    assert_eq!(audit["items"].as_array().unwrap().len(), 2);
    for (field, value) in [
        ("vcpu", json!(2.5)),
        ("vcpu", json!(4294967296.0)),
        ("diskGiB", json!(-1.0)),
    ] {
        let mut input = json!({ "tenantId": "root", "id": flavor["id"], "ifRevision": 2, "vcpu": 3, "memoryGiB": 4, "diskGiB": 1 });
        input[field] = value.clone();
        let refused = fleet.fails("flavor.update", input, "INVALID_INPUT").await;
        assert_eq!(refused.details["path"], field, "{field} {value}");
    }
    // A quota maximum is at most 2^53 - 1, as the schema states.
    let refused = fleet
        .fails(
            "pool.offer",
            json!({ "tenantId": "root", "poolId": pool, "tenant": "acme", "quota": { "gpu": u64::MAX } }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(refused.details["path"], "quota.gpu", "{refused:?}");
    let refused = fleet
        .fails(
            "audit.list",
            json!({ "tenantId": "root", "limit": 0.5 }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(refused.details["path"], "limit");

    // Below i64::MIN a literal is read as a float that rounds to exactly -2^63: refused, in a
    // call and in a document.
    let offer = |priority: &str| {
        format!(
            r#"{{"tenantId":"root","poolId":"{pool}","tenant":"acme","quota":{{}},"priority":{priority}}}"#
        )
    };
    for priority in [
        "-9223372036854775810",
        "-9223372036854775809",
        "-9.223372036854775808e18",
    ] {
        let refused = raw(&fleet, "pool.offer", offer(priority))
            .await
            .unwrap_err();
        assert_eq!(
            (refused.code.as_str(), refused.details["path"].as_str()),
            ("INVALID_INPUT", Some("priority")),
            "{priority}: {refused:?}"
        );
        let document = format!(
            r#"{{"tenantId":"root","config":{{"version":1,"sites":[{{"name":"fra","kind":"shared","region":"eu"}}],
            "pools":[{{"name":"p","site":"fra","class":"vps-host","offers":[{{"tenant":"acme","quota":{{}},"priority":{priority}}}]}}]}}}}"#
        );
        let refused = raw(&fleet, "fleet.plan", document).await.unwrap_err();
        assert_eq!(
            (refused.code.as_str(), refused.details["path"].as_str()),
            ("INVALID_INPUT", Some("pools[0].offers[0].priority")),
            "{priority}: {refused:?}"
        );
    }
    // i64::MIN itself is past the document's bound, 2^53 - 1, which is the lowest priority.
    let refused = raw(&fleet, "pool.offer", offer("-9223372036854775808"))
        .await
        .unwrap_err();
    assert_eq!(refused.details["path"], "priority", "{refused:?}");
    let lowest = raw(&fleet, "pool.offer", offer("-9007199254740991.0"))
        .await
        .unwrap();
    assert_eq!(
        lowest["offers"][0]["priority"],
        json!(-9_007_199_254_740_991_i64),
        "{lowest}"
    );
}
both!(integral_floats, integral_floats_are_integers);

/// Quota maxima and priorities stay within 2^53 - 1, as the document's do: past it the
/// planHash (RFC 8785, numbers as doubles) could not tell two plans apart.
async fn integers_stay_within_i_json(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    let (_, pool) = site_and_pool(&fleet, "root").await;
    let (exact, past) = (9_007_199_254_740_991_u64, 9_007_199_254_740_992_u64);
    let quota =
        |max: u64| json!({ "tenantId": "root", "poolId": pool, "resource": "ram", "max": max });
    let bad = fleet
        .fails("pool.setOwnerQuota", quota(past), "INVALID_INPUT")
        .await;
    assert_eq!(bad.details["path"], "max");
    assert!(
        bad.message.contains("from 0 to 9007199254740991"),
        "{}",
        bad.message
    );
    fleet.ok("pool.setOwnerQuota", quota(exact)).await;

    let offer = |quota: u64, priority: i64| {
        json!({ "tenantId": "root", "poolId": pool, "tenant": "acme",
                "quota": { "vcpu": quota }, "priority": priority })
    };
    let bad = fleet
        .fails("pool.offer", offer(past, 1), "INVALID_INPUT")
        .await;
    assert_eq!(bad.details["path"], "quota.vcpu");
    for priority in [exact as i64 + 1, -(exact as i64) - 1] {
        let bad = fleet
            .fails("pool.offer", offer(1, priority), "INVALID_INPUT")
            .await;
        assert_eq!(bad.details["path"], "priority", "{priority}");
    }
    fleet.ok("pool.offer", offer(exact, -(exact as i64))).await;
}

both!(i_json_integers, integers_stay_within_i_json);

/// A call made by hand that breaks one of the document's rules is told what a document that
/// breaks it is told, word for word (contracts.md: one rule, checked by the same functions).
async fn calls_and_documents_say_one_thing_of_a_rule(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let (_, pool) = site_and_pool(&fleet, "root").await;
    let flavor = fleet
        .ok(
            "flavor.create",
            json!({ "tenantId": "root", "poolId": pool, "name": "small", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }),
        )
        .await["id"]
        .clone();
    let site = json!({ "name": "fra", "kind": "shared", "region": "eu" });
    let vps = |extra: Value| {
        let mut p = json!({ "name": "p", "site": "fra", "class": "vps-host" });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "version": 1, "sites": [site], "pools": [p] })
    };
    let with_flavor = |f: Value| {
        let mut d = vps(json!({}));
        d["flavors"] = json!([f]);
        d
    };
    let template = |extra: Value| {
        let mut t = json!({ "name": "t", "pool": "p", "flavor": "small", "imageId": "i", "network": "private" });
        t.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let mut d = with_flavor(
            json!({ "pool": "p", "name": "small", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }),
        );
        d["sandboxTemplates"] = json!([t]);
        d
    };
    let account = |name: &str, config: Value| json!({ "version": 1, "providerAccounts": [{ "name": name, "provider": "x", "config": config }] });
    let cases = [
        (
            "providerAccount.create",
            json!({ "tenantId": "root", "name": "Bad!", "provider": "x", "config": {} }),
            (
                "name",
                account("Bad!", json!({})),
                "providerAccounts[0].name",
            ),
        ),
        (
            "providerAccount.create",
            json!({ "tenantId": "root", "name": "a", "provider": "x", "config": { "api.key": "plain" } }),
            (
                r#"config["api.key"]"#,
                account("a", json!({ "api.key": "plain" })),
                r#"providerAccounts[0].config["api.key"]"#,
            ),
        ),
        (
            "pool.setOwnerQuota",
            json!({ "tenantId": "root", "poolId": pool, "resource": "nvidia.com/gpu", "max": 1 }),
            (
                "resource",
                vps(json!({ "ownerQuota": { "nvidia.com/gpu": 1 } })),
                r#"pools[0].ownerQuota["nvidia.com/gpu"]"#,
            ),
        ),
        (
            "pool.update",
            json!({ "tenantId": "root", "id": pool, "ifRevision": 1, "policy": { "disruptionBudget": 2 } }),
            (
                "policy.disruptionBudget",
                vps(json!({ "policy": { "disruptionBudget": 2 } })),
                "pools[0].policy.disruptionBudget",
            ),
        ),
        (
            "flavor.create",
            json!({ "tenantId": "root", "poolId": pool, "name": "big", "vcpu": 0, "memoryGiB": 1, "diskGiB": 1 }),
            (
                "vcpu",
                with_flavor(
                    json!({ "pool": "p", "name": "big", "vcpu": 0, "memoryGiB": 1, "diskGiB": 1 }),
                ),
                "flavors[0].vcpu",
            ),
        ),
        (
            "sandboxTemplate.create",
            json!({ "tenantId": "root", "poolId": pool, "name": "t", "flavorId": flavor, "imageId": "i",
                    "network": "private", "warm": { "min": 3, "max": 2 } }),
            (
                "warm",
                template(json!({ "warm": { "min": 3, "max": 2 } })),
                "sandboxTemplates[0].warm",
            ),
        ),
    ];
    for (method, input, (path, document, document_path)) in cases {
        let call = fleet.fails(method, input, "INVALID_INPUT").await;
        let plan = fleet
            .fails(
                "fleet.plan",
                json!({ "tenantId": "root", "config": document }),
                "INVALID_INPUT",
            )
            .await;
        assert_eq!(
            (call.details["path"].as_str(), call.message.as_str()),
            (Some(path), plan.message.as_str()),
            "{method}: the call's problem, then the document's: {call:?} {plan:?}"
        );
        assert_eq!(plan.details["path"], document_path, "{plan:?}");
    }
}
both!(
    one_rule_one_message,
    calls_and_documents_say_one_thing_of_a_rule
);

/// `POST /api/<method>` with `body` as it is, as the administrator.
async fn raw(fleet: &Fleet, method: &str, body: String) -> Result<Value, Failure> {
    let response = fleet
        .client()
        .post(fleet.server.url(&format!("/api/{method}")))
        .bearer_auth(&fleet.key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    answer(response).await
}

async fn modules_switch_kinds_off(db: Db) {
    let fleet = Fleet::start(db, &["--sandboxes", "false"]).await;
    let nope = fleet
        .fails(
            "sandboxTemplate.list",
            json!({ "tenantId": "root" }),
            "UNSUPPORTED",
        )
        .await;
    assert_eq!(nope.status, 501);
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(export["missing"], json!(["sandboxTemplates"]));
    assert!(export["config"].get("sandboxTemplates").is_none());
    assert_eq!(export["config"]["flavors"], json!([]));

    let fleet = Fleet::start(db, &["--vps", "false"]).await;
    fleet
        .fails("flavor.list", json!({ "tenantId": "root" }), "UNSUPPORTED")
        .await;
    fleet
        .fails(
            "providerAccount.create",
            json!({ "tenantId": "root", "name": "c", "provider": "p", "config": {} }),
            "UNSUPPORTED",
        )
        .await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    assert_eq!(
        export["missing"],
        json!(["providerAccounts", "flavors", "sandboxTemplates"])
    );
}
both!(modules, modules_switch_kinds_off);

#[tokio::test]
async fn openapi_is_generated_from_the_method_table() {
    let fleet = Fleet::start(Db::Sqlite, &[]).await;
    let doc: Value = reqwest::get(fleet.server.url("/api/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    for method in [
        "fleet.export",
        "fleet.plan",
        "fleet.apply",
        "fleet.status",
        "pool.update",
        "grant.create",
        "audit.list",
    ] {
        assert!(
            doc["paths"][format!("/api/{method}")]["post"].is_object(),
            "{method} is documented"
        );
    }
    assert!(
        doc["paths"]["/api/fleet.export"]["get"].is_object(),
        "reads are also GET"
    );
    // Descriptions speak of the wire, not of the Rust behind it (they come from doc comments).
    fn descriptions<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(text)) = map.get("description") {
                    out.push(text);
                }
                map.values().for_each(|v| descriptions(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| descriptions(v, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    descriptions(&doc, &mut texts);
    assert!(texts.len() > 100, "{}", texts.len());
    for text in texts {
        for rust in [
            "None", "Some(", "[`", "Option<", "Vec<", "::", "HashMap", "BTreeMap",
        ] {
            assert!(!text.contains(rust), "{rust} in {text:?}");
        }
    }
    // What the API serves beside its methods is listed too, and needs no key.
    for (path, id) in [("/api/openapi.json", "openapi"), ("/api/health", "health")] {
        let get = &doc["paths"][path]["get"];
        assert_eq!(get["operationId"], id, "{path}: {get}");
        assert_eq!(get["security"], json!([]), "{path}: {get}");
        assert!(
            get["responses"]["200"]["content"]["application/json"]["schema"].is_object(),
            "{path}: {get}"
        );
    }
    assert_eq!(
        doc["paths"]["/api/fleet.apply"]["post"]["x-permission"],
        "compute:fleet:admin"
    );
    let plan = &doc["paths"]["/api/fleet.plan"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    assert!(
        plan["required"]
            .as_array()
            .unwrap()
            .contains(&json!("config")),
        "{plan}"
    );
    let update = &doc["paths"]["/api/pool.update"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    assert!(update["properties"]["ifRevision"].is_object(), "{update}");
    // The schemas say what validation enforces: names, resources, the document.
    let pattern = planner::schema::NAME_PATTERN;
    assert_eq!(update["properties"]["tenantId"]["pattern"], pattern);
    assert_eq!(
        plan["properties"]["config"]["$ref"],
        "#/components/schemas/FleetConfig"
    );
    let document = &doc["components"]["schemas"]["FleetConfig"];
    assert_eq!(document["properties"]["version"]["const"], 1, "{document}");
    let quota = &doc["paths"]["/api/pool.setOwnerQuota"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    assert_eq!(
        quota["properties"]["resource"]["pattern"],
        planner::schema::RESOURCE_PATTERN
    );
    // Integers state their range (a client may otherwise send 10^30), and the rules a schema
    // can state are there: a provider pool's account, grant scopes, webhook event types.
    assert_eq!(
        (
            &update["properties"]["ifRevision"]["minimum"],
            &update["properties"]["ifRevision"]["maximum"]
        ),
        (&json!(0), &json!(u64::MAX))
    );
    let offer = &doc["paths"]["/api/pool.offer"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    // Integers within I-JSON's exact range: the planHash could not tell larger ones apart.
    let exact = json!(planner::validate::MAX_INTEGER);
    assert_eq!(offer["properties"]["priority"]["maximum"], exact);
    assert_eq!(
        offer["properties"]["priority"]["minimum"],
        json!(planner::validate::MIN_INTEGER)
    );
    let input = |method: &str| {
        doc["paths"][format!("/api/{method}")]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]
            .clone()
    };
    let pool_create = input("pool.create");
    assert_eq!(
        pool_create["if"]["properties"]["class"]["const"],
        "provider"
    );
    assert_eq!(
        pool_create["then"]["required"],
        json!(["providerAccountId"])
    );
    let grant = input("grant.create");
    assert_eq!(grant["properties"]["permission"]["minLength"], 1);
    assert_eq!(
        offer["properties"]["quota"]["additionalProperties"]["maximum"], exact,
        "quota maxima are within 2^53 - 1"
    );
    assert_eq!(
        input("pool.setOwnerQuota")["properties"]["max"]["maximum"],
        exact
    );
    // And wherever the calls appear (a plan's, an apply's).
    for owner in ["Plan", "Apply"] {
        let call = &doc["components"]["schemas"][format!("{owner}.PoolSetOwnerQuota")];
        assert_eq!(
            call["properties"]["max"]["maximum"], exact,
            "{owner}: {call}"
        );
    }
    assert_eq!(
        input("site.create")["properties"]["idempotencyKey"]["maxLength"],
        300
    );
    assert_eq!(grant["if"]["properties"]["tenantId"]["const"], "root");
    let webhook = input("webhook.create");
    assert_eq!(
        webhook["properties"]["events"]["items"]["enum"],
        json!(["fleet.drifted", "fleet.converged", "*"])
    );
    // The answers of planner types are stated: the plan and the export.
    let answer = |method: &str| {
        doc["paths"][format!("/api/{method}")]["post"]["responses"]["200"]["content"]["application/json"]
            ["schema"]
            .clone()
    };
    // The fleet methods' answers are typed: the seed's status shape, the apply's {plan, applied}.
    for method in ["fleet.status", "fleet.check"] {
        let status = answer(method);
        assert_eq!(
            status["required"],
            json!(["tenantId"]),
            "{method}: {status}"
        );
        for field in ["applied", "drift", "error"] {
            assert!(
                status["properties"][field].is_object(),
                "{method}: {status}"
            );
        }
    }
    let apply = answer("fleet.apply");
    assert_eq!(apply["required"], json!(["plan", "applied"]), "{apply}");
    let plan_answer = answer("fleet.plan");
    for field in ["changes", "calls", "summary", "planHash"] {
        assert!(
            plan_answer["required"]
                .as_array()
                .unwrap()
                .contains(&json!(field)),
            "{plan_answer}"
        );
    }
    let change = plan_answer["properties"]["changes"]["items"]["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .expect("changes refer to a component");
    let change = &doc["components"]["schemas"][change];
    assert!(change["properties"]["before"].is_object(), "{change}");
    let export_answer = answer("fleet.export");
    for field in ["config", "objects", "tenants", "offeredPools", "caller"] {
        assert!(
            export_answer["properties"][field].is_object(),
            "{export_answer}"
        );
    }
    // A GET read names its query parameters, booleans and integers too.
    let status = &doc["paths"]["/api/reconciler.status"]["get"]["parameters"];
    assert_eq!(
        (&status[0]["name"], &status[0]["schema"]["type"]),
        (&json!("runs"), &json!("boolean")),
        "{status}"
    );
    let parameters = &doc["paths"]["/api/pool.get"]["get"]["parameters"];
    let tenant = parameters
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "tenantId")
        .unwrap_or_else(|| panic!("{parameters}"));
    assert_eq!(
        (
            &tenant["in"],
            &tenant["required"],
            &tenant["schema"]["pattern"]
        ),
        (&json!("query"), &json!(true), &json!(pattern))
    );
    // Every reference resolves inside the document.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r}"));
        assert!(
            doc["components"]["schemas"][name].is_object(),
            "{r} resolves"
        );
    }
    let health: Value = reqwest::get(fleet.server.url("/api/health"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The version `--version` prints, so that a rollout can be checked without a key.
    let version = std::process::Command::new(env!("CARGO_BIN_EXE_better-compute"))
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8(version.stdout).unwrap();
    let version = version.trim().strip_prefix("better-compute ").unwrap();
    assert_eq!(health, json!({ "status": "ok", "version": version }));
}

#[tokio::test]
async fn admin_key_file_is_private_and_the_key_is_not_printed() {
    let dir = common::TempDir::new("keyfile");
    let path = dir.path().join("admin.key");
    let fleet = Fleet::start(Db::Sqlite, &["--admin-key-file", path.to_str().unwrap()]).await;
    assert!(
        fleet.key.is_empty(),
        "not printed: {:?}",
        fleet.server.stdout()
    );
    let key = std::fs::read_to_string(&path).unwrap().trim().to_string();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    fleet.call_as(&key, "tenant.list", json!({})).await.unwrap();
}

#[tokio::test]
async fn config_file_flags_and_variables() {
    let dir = common::TempDir::new("config");
    let path = dir.path().join("server.toml");
    std::fs::write(
        &path,
        "driftEvery = \"2s\"\ndatabase = \"sqlite://elsewhere/never.db\"\n[modules]\nvps = false\n",
    )
    .unwrap();
    // The file turns vps off; --database (from the helper) wins over the file's database.
    let fleet = Fleet::start(Db::Sqlite, &["--config", path.to_str().unwrap()]).await;
    fleet
        .fails("flavor.list", json!({ "tenantId": "root" }), "UNSUPPORTED")
        .await;
    assert!(fleet.server.workdir().join("data/fleet.db").exists());
    assert!(!fleet.server.workdir().join("elsewhere").exists());
    // A variable wins over the file.
    let fleet = Fleet::start_env(
        Db::Sqlite,
        &["--config", path.to_str().unwrap()],
        &[("BETTER_COMPUTE_VPS", "true")],
    )
    .await;
    fleet.ok("flavor.list", json!({ "tenantId": "root" })).await;
}

async fn processes_sharing_a_database_start_together(db: Db) {
    let first = Fleet::start(db, &[]).await;
    let database = match db {
        Db::Sqlite => format!(
            "sqlite://{}",
            first.server.workdir().join("data/fleet.db").display()
        ),
        Db::Postgres => server_support::fresh_postgres().await,
    };
    // Three processes on one fresh database at once: one migrates and bootstraps, and
    // exactly one administrator key is printed among them.
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let database = database.clone();
            std::thread::spawn(move || Fleet::start_on(&database, &[], &[]))
        })
        .collect();
    let fleets: Vec<Fleet> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let keys: Vec<&Fleet> = fleets.iter().filter(|f| !f.key.is_empty()).collect();
    match db {
        Db::Postgres => assert_eq!(keys.len(), 1, "one bootstrap"),
        Db::Sqlite => assert!(keys.is_empty(), "the first server bootstrapped already"),
    }
    let key = keys
        .first()
        .map(|f| f.key.clone())
        .unwrap_or_else(|| first.key.clone());
    for fleet in &fleets {
        fleet.call_as(&key, "tenant.list", json!({})).await.unwrap();
    }
}
both!(shared_database, processes_sharing_a_database_start_together);

async fn deletes_refuse_what_is_still_used(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let id = |v: &Value| v["id"].as_str().unwrap().to_string();
    let account = fleet
        .ok("providerAccount.create", json!({ "tenantId": "root", "name": "cloud", "provider": "hetzner-cloud", "config": { "token": "secret://h" } }))
        .await;
    let site = fleet
        .ok(
            "site.create",
            json!({ "tenantId": "root", "kind": "shared", "region": "eu" }),
        )
        .await;
    let pool = fleet
        .ok("pool.create", json!({ "tenantId": "root", "siteId": id(&site), "class": "provider", "providerAccountId": id(&account) }))
        .await;
    let flavor = fleet
        .ok("flavor.create", json!({ "tenantId": "root", "poolId": id(&pool), "name": "small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }))
        .await;
    let template = fleet
        .ok("sandboxTemplate.create", json!({ "tenantId": "root", "name": "py", "poolId": id(&pool), "flavorId": id(&flavor), "imageId": "ubuntu", "network": "none" }))
        .await;

    // A provider account a pool uses, and a flavor a template uses: CONFLICT naming both.
    let used = fleet
        .fails(
            "providerAccount.delete",
            json!({ "tenantId": "root", "id": id(&account), "ifRevision": 1 }),
            "CONFLICT",
        )
        .await;
    assert_eq!(used.status, 409);
    assert_eq!(
        used.details["object"],
        format!("providerAccount {}", id(&account))
    );
    assert_eq!(used.details["usedBy"], id(&pool));
    let used = fleet
        .fails(
            "flavor.delete",
            json!({ "tenantId": "root", "id": id(&flavor), "ifRevision": 1 }),
            "CONFLICT",
        )
        .await;
    assert_eq!(used.details["object"], format!("flavor {}", id(&flavor)));
    assert_eq!(used.details["usedBy"], id(&template));
    assert!(
        used.message.contains("is used by sandbox template py"),
        "{}",
        used.message
    );

    // Users first, then what they used: each delete answers {id, deleted} and the object is gone.
    for (method, object) in [
        ("sandboxTemplate", &template),
        ("flavor", &flavor),
        ("pool", &pool),
        ("providerAccount", &account),
    ] {
        let delete = if method == "pool" {
            "pool.archive".to_string()
        } else {
            format!("{method}.delete")
        };
        let answer = fleet
            .ok(
                &delete,
                json!({ "tenantId": "root", "id": id(object), "ifRevision": 1 }),
            )
            .await;
        if method != "pool" {
            assert_eq!(answer, json!({ "id": id(object), "deleted": true }));
            fleet
                .fails(
                    &format!("{method}.get"),
                    json!({ "tenantId": "root", "id": id(object) }),
                    "NOT_FOUND",
                )
                .await;
        }
    }
}
both!(in_use, deletes_refuse_what_is_still_used);

/// The seed calls `fleet.plan` a read: GET serves it, the document as JSON text in `config`,
/// planned from its exact bytes as a POST's body is.
async fn fleet_plan_is_a_read(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let document = common::seed_document();
    let posted = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": document, "prune": true }),
        )
        .await;
    let get = |query: Vec<(&'static str, String)>| {
        fleet
            .client()
            .get(fleet.server.url("/api/fleet.plan"))
            .query(&query)
            .bearer_auth(&fleet.key)
            .send()
    };
    let text = serde_json::to_string(&document).unwrap();
    let query = vec![
        ("tenantId", "root".to_owned()),
        ("config", text.clone()),
        ("prune", "true".to_owned()),
    ];
    let got = answer(get(query).await.unwrap()).await.unwrap();
    assert_eq!(got, posted, "GET and POST plan alike");
    assert!(!server_support::calls(&got).is_empty());
    // Without prune (absent is false): a different plan, as by POST.
    let query = vec![("tenantId", "root".to_owned()), ("config", text)];
    let unpruned = answer(get(query).await.unwrap()).await.unwrap();
    let posted = fleet
        .ok(
            "fleet.plan",
            json!({ "tenantId": "root", "config": document }),
        )
        .await;
    assert_eq!(unpruned, posted);
    // Not JSON: INVALID_INPUT at the parameter.
    let query = vec![
        ("tenantId", "root".to_owned()),
        ("config", "{\"version\": 1,".to_owned()),
    ];
    let failure = answer(get(query).await.unwrap()).await.unwrap_err();
    assert_eq!(
        (failure.status, failure.code.as_str()),
        (400, "INVALID_INPUT")
    );
    assert_eq!(failure.details["path"], "config", "{failure:?}");
    // The document's own bytes reach the planner: a repeated key is its problem to name.
    let query = vec![
        ("tenantId", "root".to_owned()),
        (
            "config",
            r#"{"version": 1, "sites": [], "sites": []}"#.to_owned(),
        ),
    ];
    let failure = answer(get(query).await.unwrap()).await.unwrap_err();
    assert_eq!(failure.code, "INVALID_INPUT");
    assert_eq!(failure.details["path"], "sites", "{failure:?}");
    // The OpenAPI document lists the GET, the document as a JSON parameter.
    let doc: Value = reqwest::get(fleet.server.url("/api/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let parameters = doc["paths"]["/api/fleet.plan"]["get"]["parameters"]
        .as_array()
        .unwrap_or_else(|| panic!("fleet.plan has a GET"));
    let config = parameters.iter().find(|p| p["name"] == "config").unwrap();
    assert_eq!(
        config["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/FleetConfig"
    );
    assert_eq!(config["required"], true);
}
both!(plan_by_get, fleet_plan_is_a_read);

/// A browser client may ask for API errors with status 200 (`X-Better-Compute-Errors:
/// in-body`; browsers log every 4xx answer as a console error): the envelope is the same, the
/// real status is in `X-Better-Compute-Status`. Without the header, the statuses are
/// PRODUCT.md's.
async fn errors_in_body_for_browsers(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let send = |method: reqwest::Method, path: &str, key: &str, in_body: bool| {
        let mut request = fleet
            .client()
            .request(method, fleet.server.url(path))
            .bearer_auth(key)
            .json(&json!({ "tenantId": "root" }));
        if in_body {
            request = request.header("X-Better-Compute-Errors", "in-body");
        }
        request.send()
    };
    for (method, path, key, status, code) in [
        (
            reqwest::Method::POST,
            "/api/fleet.status",
            "bc_wrong",
            401,
            "UNAUTHENTICATED",
        ),
        (
            reqwest::Method::PUT,
            "/api/fleet.status",
            fleet.key.as_str(),
            405,
            "INVALID_INPUT",
        ),
        (
            reqwest::Method::POST,
            "/api/v1/fleet.status",
            fleet.key.as_str(),
            404,
            "NOT_FOUND",
        ),
        (
            reqwest::Method::POST,
            "/api/pool.get",
            fleet.key.as_str(),
            400,
            "INVALID_INPUT",
        ),
    ] {
        let plain = send(method.clone(), path, key, false).await.unwrap();
        assert_eq!(plain.status(), status, "{method} {path}");
        assert!(plain.headers().get("x-better-compute-status").is_none());
        let plain: Value = plain.json().await.unwrap();
        let asked = send(method.clone(), path, key, true).await.unwrap();
        assert_eq!(asked.status(), 200, "{method} {path}");
        assert_eq!(
            asked.headers()["x-better-compute-status"],
            status.to_string().as_str()
        );
        let asked: Value = asked.json().await.unwrap();
        assert_eq!(asked, plain, "the same envelope");
        assert_eq!(asked["error"]["code"], code);
    }
    // A success is a success either way.
    let ok = send(reqwest::Method::POST, "/api/fleet.status", &fleet.key, true)
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert!(ok.headers().get("x-better-compute-status").is_none());
    assert_eq!(ok.json::<Value>().await.unwrap()["tenantId"], "root");
}
both!(errors_in_body, errors_in_body_for_browsers);

/// A request of any verb to `path` as the administrator, answered with its status and
/// headers; `in_body` asks for errors with status 200.
async fn send(
    fleet: &Fleet,
    verb: reqwest::Method,
    path: &str,
    in_body: bool,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = fleet
        .client()
        .request(verb, fleet.server.url(path))
        .bearer_auth(&fleet.key);
    if in_body {
        request = request.header("X-Better-Compute-Errors", "in-body");
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("{status}: not JSON: {text:?} ({headers:?})"));
    (status, headers, body)
}

/// Every error under /api/ is in the envelope, also those axum answers by itself: a name
/// that is no UTF-8, a verb that the health check and the OpenAPI document lack.
async fn every_api_error_is_in_the_envelope(db: Db) {
    use reqwest::Method;
    let fleet = Fleet::start(db, &[]).await;
    for verb in [Method::GET, Method::POST] {
        let (status, _, body) = send(&fleet, verb.clone(), "/api/%FF", false).await;
        assert_eq!(status, 404, "{verb}: {body}");
        assert_eq!(body["error"]["code"], "NOT_FOUND", "{verb}: {body}");
        assert_eq!(body["error"]["details"]["method"], "%FF", "{verb}: {body}");
    }
    for path in ["/api/health", "/api/openapi.json"] {
        for verb in [Method::POST, Method::PUT, Method::DELETE] {
            let (status, headers, body) = send(&fleet, verb.clone(), path, false).await;
            assert_eq!(status, 405, "{verb} {path}: {body}");
            let allow = headers["allow"].to_str().unwrap();
            assert!(allow.contains("GET"), "{verb} {path}: {allow}");
            assert_eq!(body["error"]["code"], "INVALID_INPUT", "{verb} {path}");
            assert_eq!(body["error"]["details"]["path"], "", "{verb} {path}");
            assert!(
                body["error"]["details"]["allow"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("GET")),
                "{verb} {path}: {body}"
            );
            assert!(
                body["error"]["message"].as_str().unwrap().contains("GET"),
                "{body}"
            );
            // Asked for in the body: the same envelope, with status 200.
            let (status, headers, asked) = send(&fleet, verb.clone(), path, true).await;
            assert_eq!(status, 200, "{verb} {path}");
            assert_eq!(headers["x-better-compute-status"], "405");
            assert_eq!(asked, body);
        }
    }
    let (status, headers, _) = send(&fleet, Method::GET, "/api/%FF", true).await;
    assert_eq!(
        (status, &headers["x-better-compute-status"]),
        (200, &"404".parse().unwrap())
    );
}
both!(api_errors_in_envelope, every_api_error_is_in_the_envelope);

/// A name that is no method's is NOT_FOUND whatever the verb; a method's wrong verb is 405.
async fn unknown_methods_are_not_found(db: Db) {
    use reqwest::Method;
    let fleet = Fleet::start(db, &[]).await;
    for verb in [
        Method::GET,
        Method::POST,
        Method::PATCH,
        Method::PUT,
        Method::DELETE,
    ] {
        let (status, _, body) = send(&fleet, verb.clone(), "/api/nope", false).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (404, &json!("NOT_FOUND")),
            "{verb}: {body}"
        );
        assert_eq!(body["error"]["details"]["method"], "nope", "{verb}: {body}");
    }
    let (status, headers, body) = send(&fleet, Method::PATCH, "/api/pool.update", false).await;
    assert_eq!(
        (status, &headers["allow"]),
        (405, &"POST".parse().unwrap()),
        "{body}"
    );
    assert_eq!(body["error"]["code"], "INVALID_INPUT");
}
both!(unknown_methods, unknown_methods_are_not_found);

/// A repeated query parameter is refused at its name, as a body's repeated key is.
async fn repeated_query_parameters_are_refused(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    for query in [
        "tenantId=root&tenantId=acme",
        "tenantId=root&tenantId=root",
        "tenantId=root&limit=1&limit=2",
    ] {
        let path = format!("/api/site.list?{query}");
        let (status, _, body) = send(&fleet, reqwest::Method::GET, &path, false).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &json!("INVALID_INPUT")),
            "{query}: {body}"
        );
        let field = query.rsplit('&').next().unwrap().split('=').next().unwrap();
        assert_eq!(body["error"]["details"]["path"], field, "{query}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("duplicate"),
            "{body}"
        );
    }
    let (status, _, body) = send(
        &fleet,
        reqwest::Method::GET,
        "/api/site.list?tenantId=acme",
        false,
    )
    .await;
    assert_eq!(status, 200, "{body}");
}
both!(repeated_query, repeated_query_parameters_are_refused);

/// A 401 names its scheme (RFC 9110, section 15.5.2); an error asked for in the body is no
/// 401 and names none.
async fn unauthenticated_answers_name_the_scheme(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    for key in [None, Some("bc_nosuchkey_secret"), Some("")] {
        for in_body in [false, true] {
            let mut request = fleet
                .client()
                .post(fleet.server.url("/api/fleet.status"))
                .json(&json!({ "tenantId": "root" }));
            if let Some(key) = key {
                request = request.bearer_auth(key);
            }
            if in_body {
                request = request.header("X-Better-Compute-Errors", "in-body");
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let scheme = response.headers().get("www-authenticate").cloned();
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["error"]["code"], "UNAUTHENTICATED", "{key:?}");
            if in_body {
                assert_eq!((status, scheme), (200, None), "{key:?}");
            } else {
                assert_eq!(status, 401, "{key:?}");
                assert_eq!(scheme.unwrap(), "Bearer", "{key:?}");
            }
        }
    }
    // Other errors name no scheme.
    let (status, headers, _) = send(&fleet, reqwest::Method::POST, "/api/pool.get", false).await;
    assert_eq!(status, 400);
    assert!(headers.get("www-authenticate").is_none());
}
both!(www_authenticate, unauthenticated_answers_name_the_scheme);

/// The administrator's principal id, from the audit row of a call it made.
async fn admin_id(fleet: &Fleet) -> String {
    let rows = fleet
        .ok("audit.list", json!({ "tenantId": "root", "limit": 1000 }))
        .await;
    let rows = rows["items"].as_array().unwrap();
    let row = rows.last().expect("the admin's calls are audited");
    row["principalId"].as_str().unwrap().to_string()
}

/// `n` identical calls as the administrator, sent at once.
async fn at_once(
    fleet: &Fleet,
    method: &str,
    input: &Value,
    n: usize,
) -> Vec<Result<Value, server_support::Failure>> {
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..n {
        let request = fleet
            .client()
            .post(fleet.server.url(&format!("/api/{method}")))
            .bearer_auth(&fleet.key)
            .json(input);
        calls.spawn(async move { answer(request.send().await.unwrap()).await });
    }
    calls.join_all().await
}

async fn iam_gives_no_more_than_it_holds(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    fleet.ok("tenant.create", json!({ "id": "acme" })).await;
    let admin = admin_id(&fleet).await;
    // Holds the IAM methods only: neither may reach beyond what it holds itself.
    let (smith, smith_key) = fleet
        .service_account(
            "root",
            "keysmith",
            &[
                ("iam:apiKey:create", "tenants/root"),
                ("iam:grant:create", "tenants/root"),
                ("compute:site:read", "tenants/root"),
            ],
        )
        .await;
    let to_admin = fleet
        .fails_as(
            &smith_key,
            "apiKey.create",
            json!({ "tenantId": "root", "principalId": admin }),
            "FORBIDDEN",
        )
        .await;
    assert!(
        to_admin
            .message
            .contains("makes keys only for principals whose every grant it holds"),
        "{to_admin:?}"
    );
    let to_self = fleet
        .fails_as(
            &smith_key,
            "grant.create",
            json!({ "tenantId": "root", "principalId": smith, "permission": "compute:fleet:admin", "scope": "compute-fleet/global" }),
            "FORBIDDEN",
        )
        .await;
    assert_eq!(to_self.details["permission"], "compute:fleet:admin");
    assert!(to_self.message.contains("grants only what it holds"));
    // What it holds, it may hand on: a grant, and a key of a principal holding no more.
    let (reader, _) = fleet.service_account("root", "reader", &[]).await;
    fleet
        .call_as(
            &smith_key,
            "grant.create",
            json!({ "tenantId": "root", "principalId": reader, "permission": "compute:site:read" }),
        )
        .await
        .unwrap();
    let key = fleet
        .call_as(
            &smith_key,
            "apiKey.create",
            json!({ "tenantId": "root", "principalId": reader }),
        )
        .await
        .unwrap();
    fleet
        .call_as(
            key["key"].as_str().unwrap(),
            "site.list",
            json!({ "tenantId": "root" }),
        )
        .await
        .unwrap();
    // A principal of another tenant is unknown here, whatever it holds.
    let (acme_sa, _) = fleet
        .service_account("acme", "ci", &[("*", "tenants/acme")])
        .await;
    fleet
        .fails_as(
            &smith_key,
            "apiKey.create",
            json!({ "tenantId": "root", "principalId": acme_sa }),
            "NOT_FOUND",
        )
        .await;

    // Eight identical grants at once: one is made, the others are told it exists (on
    // PostgreSQL a read before the insert let two through to the unique key: a 500).
    let (target, _) = fleet.service_account("root", "target", &[]).await;
    let input =
        json!({ "tenantId": "root", "principalId": target, "permission": "compute:pool:read" });
    let answers = at_once(&fleet, "grant.create", &input, 8).await;
    let made = answers.iter().filter(|a| a.is_ok()).count();
    let codes: Vec<&str> = answers
        .iter()
        .filter_map(|a| a.as_ref().err().map(|f| f.code.as_str()))
        .collect();
    assert_eq!(made, 1, "{codes:?}");
    assert!(codes.iter().all(|c| *c == "CONFLICT"), "{codes:?}");
    // Likewise tenants.
    let answers = at_once(&fleet, "tenant.create", &json!({ "id": "twice" }), 8).await;
    assert_eq!(answers.iter().filter(|a| a.is_ok()).count(), 1);
    // One service account per name in a tenant.
    fleet
        .fails(
            "serviceAccount.create",
            json!({ "tenantId": "root", "name": "target" }),
            "CONFLICT",
        )
        .await;

    // A NUL (which PostgreSQL's text cannot hold) is refused where it is, on both databases;
    // string maps stored as JSON keep it, as a document's may.
    for (method, input, path) in [
        (
            "site.get",
            json!({ "tenantId": "root", "id": "site_a\u{0}b" }),
            "id",
        ),
        (
            "tenant.create",
            json!({ "id": "nul", "name": "a\u{0}b" }),
            "name",
        ),
        (
            "grant.create",
            json!({ "tenantId": "root", "principalId": format!("{target}\u{0}") , "permission": "compute:pool:read" }),
            "principalId",
        ),
        (
            "event.list",
            json!({ "tenantId": "root", "type": "fleet.\u{0}" }),
            "type",
        ),
    ] {
        let nul = fleet.fails(method, input, "INVALID_INPUT").await;
        assert_eq!(nul.details["path"], path, "{method}: {nul:?}");
    }
    fleet
        .ok(
            "providerAccount.create",
            json!({ "tenantId": "root", "name": "cloud", "provider": "p", "config": { "note": "a\u{0}b" } }),
        )
        .await;

    // An unknown event type is refused at its path, as webhook.create refuses it, not
    // answered with an empty list.
    let typo = fleet
        .fails(
            "event.list",
            json!({ "tenantId": "root", "type": "fleet.drift" }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(typo.details["path"], "type", "{typo:?}");
    assert!(
        typo.message
            .contains("unknown event type \"fleet.drift\" (known: fleet.drifted, fleet.converged)"),
        "{typo:?}"
    );
    // Nor is an empty one read as every type.
    let empty = fleet
        .fails(
            "event.list",
            json!({ "tenantId": "root", "type": "" }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(empty.details["path"], "type", "{empty:?}");
    fleet
        .ok(
            "event.list",
            json!({ "tenantId": "root", "type": "fleet.converged" }),
        )
        .await;

    // An unknown tenant is NOT_FOUND for reads as for writes, never an empty list; a method
    // of one object of it names the tenant too, not the object.
    for method in ["site.list", "audit.list", "event.list", "webhook.list"] {
        let unknown = fleet
            .fails(method, json!({ "tenantId": "nope" }), "NOT_FOUND")
            .await;
        assert_eq!(unknown.details["id"], "nope", "{method}: {unknown:?}");
    }
    for method in ONE_OBJECT_METHODS {
        let unknown = fleet
            .fails(method, one_object(method, "nope"), "NOT_FOUND")
            .await;
        assert_eq!(
            (&unknown.details["kind"], &unknown.details["id"]),
            (&json!("tenant"), &json!("nope")),
            "{method}: {unknown:?}"
        );
        // In a tenant that exists, the object is what is not found.
        let missing = fleet
            .fails(method, one_object(method, "root"), "NOT_FOUND")
            .await;
        assert_eq!(missing.details["id"], "x", "{method}: {missing:?}");
    }
    let unknown = fleet
        .fails(
            "grant.create",
            json!({ "tenantId": "nope", "principalId": target, "permission": "compute:pool:read" }),
            "NOT_FOUND",
        )
        .await;
    assert_eq!(unknown.details["id"], "nope", "{unknown:?}");
    let long = "compute:".to_string() + &"a".repeat(300);
    let long = fleet
        .fails(
            "grant.create",
            json!({ "tenantId": "root", "principalId": target, "permission": long }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(long.details["path"], "permission");

    // Who holds what, readable: principals, their grants, their keys (never a key's secret).
    let principals = fleet
        .ok("principal.list", json!({ "tenantId": "root" }))
        .await;
    let names: Vec<&str> = principals["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in ["admin", "keysmith", "reader", "target"] {
        assert!(names.contains(&name), "{name}: {names:?}");
    }
    let grants = fleet
        .ok(
            "grant.list",
            json!({ "tenantId": "root", "principalId": smith }),
        )
        .await;
    let held: Vec<(&str, &str)> = grants["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["permission"].as_str().unwrap(),
                g["scope"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        held,
        [
            ("compute:site:read", "tenants/root"),
            ("iam:apiKey:create", "tenants/root"),
            ("iam:grant:create", "tenants/root"),
        ]
    );
    let keys = fleet
        .ok(
            "apiKey.list",
            json!({ "tenantId": "root", "principalId": reader }),
        )
        .await;
    let keys = keys["items"].as_array().unwrap();
    // The one made with the account (`service_account`) and keysmith's.
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.iter().any(|k| k["id"] == key["id"]), "{keys:?}");
    let text = serde_json::to_string(keys).unwrap();
    assert!(!text.contains("bc_") && !text.contains("hash"), "{text}");
    // A reader of sites only reads no IAM.
    fleet
        .fails_as(
            key["key"].as_str().unwrap(),
            "grant.list",
            json!({ "tenantId": "root" }),
            "FORBIDDEN",
        )
        .await;

    // The audit reads page by page: `before` the last id of a page gives the next one.
    let all = fleet
        .ok("audit.list", json!({ "tenantId": "root", "limit": 1000 }))
        .await["items"]
        .as_array()
        .unwrap()
        .clone();
    assert!(all.len() > 10, "{}", all.len());
    let mut paged = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut input = json!({ "tenantId": "root", "limit": 4 });
        if let Some(before) = &before {
            input["before"] = json!(before);
        }
        let page = fleet.ok("audit.list", input).await["items"]
            .as_array()
            .unwrap()
            .clone();
        let Some(last) = page.last() else { break };
        before = Some(last["id"].as_str().unwrap().to_string());
        paged.extend(page);
    }
    assert_eq!(paged, all);
}
both!(iam_escalation, iam_gives_no_more_than_it_holds);
