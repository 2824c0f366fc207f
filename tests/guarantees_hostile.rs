//! Hostile input and security over HTTP (docs/guarantees.md, "Hostile input", "Every method
//! authenticates and authorizes", "Secrets never stored or logged", "Rate limits"): each
//! refusal is a clear error envelope and changes nothing.

mod common;
mod guarantees_support;
mod server_support;

use common::seed_document;
use guarantees_support::{Database, LoggedServer, contains, count_at, figure, texts_at};
use serde_json::{Value, json};
use server_support::{Db, Fleet};
use std::time::Duration;

/// Rows of every table but the audit (which records refusals), to show nothing changed.
async fn snapshot(database: &Database) -> Vec<(String, i64)> {
    let (db, url) = (database.kind(), database.url.clone());
    let mut out = Vec::new();
    for table in [
        "tenants",
        "principals",
        "api_keys",
        "grants",
        "sites",
        "pools",
        "pool_owner_quotas",
        "pool_offers",
        "provider_accounts",
        "flavors",
        "sandbox_templates",
        "fleet_names",
        "fleet_applied",
        "webhooks",
    ] {
        let n = count_at(db, &url, &format!("SELECT COUNT(*) FROM {table}")).await;
        // Revisions too: an update changes no count.
        let revisions = if ["fleet_names", "fleet_applied"].contains(&table) {
            0
        } else {
            count_at(
                db,
                &url,
                &format!("SELECT CAST(COALESCE(SUM(revision), 0) AS BIGINT) FROM {table}"),
            )
            .await
        };
        out.push((table.to_string(), n * 1_000_000 + revisions));
    }
    out
}

/// A server on a fresh database (dropped with it) with acme, globex and the seed document.
async fn fleet_with_seed(db: Db) -> (Database, Fleet) {
    let database = Database::fresh(db).await;
    let fleet = Fleet::start_on(&database.url, &[], &[]);
    for t in ["acme", "globex"] {
        fleet.ok("tenant.create", json!({ "id": t })).await;
    }
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "root", "config": seed_document() }),
        )
        .await;
    (database, fleet)
}

/// Sends `body` with `content_type` as `verb` to `path`, and checks the answer is the error
/// envelope with `status` and `code`.
async fn refused(
    fleet: &Fleet,
    label: &str,
    verb: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
    (status, code): (u16, &str),
) {
    let verb = reqwest::Method::from_bytes(verb.as_bytes()).unwrap();
    // A connection of its own: after a 413 the server closes the connection it answered on,
    // and a pooled client could send the next case on it. No retry: the server reads (and
    // drops) an oversized body before it answers, so the client always gets the 413.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let response = client
        .request(verb, fleet.server.url(path))
        .bearer_auth(&fleet.key)
        .header("content-type", content_type)
        .body(body)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{label}: no answer: {e}"));
    let got = response.status().as_u16();
    let text = response.text().await.unwrap();
    let envelope: Value = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("{label}: not a JSON envelope ({got}): {text:.300}"));
    let error = &envelope["error"];
    assert_eq!(
        (got, error["code"].as_str().unwrap_or_default()),
        (status, code),
        "{label}: {text:.500}"
    );
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()) && error["details"].is_object(),
        "{label}: a clear envelope: {text:.500}"
    );
    if let Some(path) = error["details"]["path"].as_str() {
        assert!(
            document_shaped(path),
            "{label}: a path as the document's: {text:.500}"
        );
    }
}

/// True when `path` is written as the document's paths are (contracts.md, Validation): the
/// root ``; plain keys (letters, digits, `_`, `-`) joined by `.`; `[i]` for an item; any other
/// key as `["key"]`, quoted as JSON. Not serde_path_to_error's `.`, `?` or `quota.nvidia.gpu`.
fn document_shaped(path: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut rest = path;
    let mut first = true;
    while !rest.is_empty() {
        if let Some(inside) = rest.strip_prefix('[') {
            let after = if inside.starts_with('"') {
                let mut keys = serde_json::Deserializer::from_str(inside).into_iter::<String>();
                match keys.next() {
                    // A plain key is written with a dot, never quoted.
                    Some(Ok(key)) if !key.is_empty() && key.chars().all(plain) => return false,
                    Some(Ok(_)) => &inside[keys.byte_offset()..],
                    _ => return false,
                }
            } else {
                let digits = inside.len()
                    - inside
                        .trim_start_matches(|c: char| c.is_ascii_digit())
                        .len();
                if digits == 0 {
                    return false;
                }
                &inside[digits..]
            };
            match after.strip_prefix(']') {
                Some(r) => rest = r,
                None => return false,
            }
        } else {
            let key = match rest.strip_prefix('.') {
                Some(r) if !first => r,
                None if first => rest,
                _ => return false,
            };
            let len = key.len() - key.trim_start_matches(plain).len();
            if len == 0 {
                return false;
            }
            rest = &key[len..];
        }
        first = false;
    }
    true
}

/// One hostile request: label, HTTP verb, path, content type, body, expected status and code.
type Case<'a> = (String, &'a str, String, &'a str, Vec<u8>, (u16, &'a str));

fn plan_body(config: &str) -> Vec<u8> {
    format!(r#"{{"tenantId":"root","config":{config}}}"#).into_bytes()
}

async fn hostile_inputs_are_refused_and_change_nothing(db: Db) {
    let (database, fleet) = fleet_with_seed(db).await;
    let before = snapshot(&database).await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let pool = fleet.ok("pool.list", json!({ "tenantId": "root" })).await["items"][0].clone();
    let json = "application/json";
    let bad = (400, "INVALID_INPUT");
    let pool_with = |field: &str| {
        format!(
            r#"{{"version":1,"pools":[{{"name":"vps-fra","site":"fra","class":"vps-host",{field}}}]}}"#
        )
    };
    let deep_list = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_object = format!("{}1{}", r#"{"a":"#.repeat(50_000), "}".repeat(50_000));
    let mut cases: Vec<Case> = vec![
        (
            "a body over 16 MiB".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            {
                let mut b = plan_body(r#"{"version":1,"sites":[]}"#);
                b.extend(std::iter::repeat_n(b' ', 17 * 1024 * 1024));
                b
            },
            (413, "PAYLOAD_TOO_LARGE"),
        ),
        (
            "a list nested 100000 deep".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            plan_body(&deep_list),
            bad,
        ),
        (
            "an object nested 50000 deep".into(),
            "POST",
            "/api/fleet.plan".into(),
            json,
            plan_body(&deep_object),
            bad,
        ),
        (
            "an input nested 50000 deep".into(),
            "POST",
            "/api/pool.update".into(),
            json,
            deep_object.clone().into_bytes(),
            bad,
        ),
        (
            "invalid UTF-8".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            {
                let mut b = plan_body(r#"{"version":1,"sites":[{"name":"x"#);
                b.extend([0xff, 0xfe, 0xc0, 0x80]);
                b.extend(br#"","kind":"shared","region":"eu"}]}}"#);
                b
            },
            bad,
        ),
        (
            "a lone surrogate".into(),
            "POST",
            "/api/tenant.create".into(),
            json,
            br#"{"id":"\ud800"}"#.to_vec(),
            bad,
        ),
        (
            "a NUL in a name".into(),
            "POST",
            "/api/tenant.create".into(),
            json,
            br#"{"id":"a\u0000b"}"#.to_vec(),
            bad,
        ),
        (
            "a name of 100000 characters".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            plan_body(&format!(
                r#"{{"version":1,"sites":[{{"name":"{}","kind":"shared","region":"eu"}}]}}"#,
                "a".repeat(100_000)
            )),
            bad,
        ),
        (
            "1001 sites".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            plan_body(
                &json!({ "version": 1, "sites": (0..1001).map(|i| json!({ "name": format!("s{i}"), "kind": "shared", "region": "eu" })).collect::<Vec<_>>() })
                    .to_string(),
            ),
            bad,
        ),
        (
            "duplicate input keys".into(),
            "POST",
            "/api/tenant.create".into(),
            json,
            br#"{"id":"dupa","id":"dupb"}"#.to_vec(),
            bad,
        ),
        (
            "duplicate call input keys".into(),
            "POST",
            "/api/site.create".into(),
            json,
            br#"{"tenantId":"root","kind":"shared","region":"eu","region":"us"}"#.to_vec(),
            bad,
        ),
        (
            "duplicate keys nested in a call input".into(),
            "POST",
            "/api/pool.offer".into(),
            json,
            format!(
                r#"{{"tenantId":"root","poolId":"{}","tenant":"acme","quota":{{"gpu":1,"gpu":2}}}}"#,
                pool["id"].as_str().unwrap()
            )
            .into_bytes(),
            bad,
        ),
        (
            "duplicate document keys".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            plan_body(
                r#"{"version":1,"sites":[{"name":"x","kind":"shared","region":"eu","region":"us"}]}"#,
            ),
            bad,
        ),
        (
            "duplicate tenantId".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            br#"{"tenantId":"root","tenantId":"acme","config":{"version":1}}"#.to_vec(),
            bad,
        ),
        (
            "an unknown field".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            plan_body(r#"{"version":1,"sitez":[]}"#),
            bad,
        ),
        (
            "trailing bytes after the JSON".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            br#"{"tenantId":"root","config":{"version":1}} {"#.to_vec(),
            bad,
        ),
        (
            "JSON that is not an object".into(),
            "POST",
            "/api/fleet.apply".into(),
            json,
            b"[1,2,3]".to_vec(),
            bad,
        ),
        (
            "a form body".into(),
            "POST",
            "/api/tenant.create".into(),
            "application/x-www-form-urlencoded",
            b"id=formed".to_vec(),
            bad,
        ),
        (
            "a multipart body".into(),
            "POST",
            "/api/tenant.create".into(),
            "multipart/form-data; boundary=x",
            b"--x\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\nmulti\r\n--x--\r\n".to_vec(),
            bad,
        ),
        (
            "XML".into(),
            "POST",
            "/api/tenant.create".into(),
            "application/xml",
            b"<tenant><id>xml</id></tenant>".to_vec(),
            bad,
        ),
        (
            "an unknown API method".into(),
            "POST",
            "/api/fleet.destroy".into(),
            json,
            b"{}".to_vec(),
            (404, "NOT_FOUND"),
        ),
        (
            "an encoded path".into(),
            "POST",
            "/api/..%2F..%2Fetc%2Fpasswd".into(),
            json,
            b"{}".to_vec(),
            (404, "NOT_FOUND"),
        ),
        (
            "a path under /api that is no method's".into(),
            "POST",
            "/api/api/fleet.export".into(),
            json,
            b"{}".to_vec(),
            (404, "NOT_FOUND"),
        ),
        (
            "a versioned path".into(),
            "GET",
            "/api/v1/fleet.export?tenantId=root".into(),
            json,
            vec![],
            (404, "NOT_FOUND"),
        ),
        (
            "no method at all".into(),
            "POST",
            "/api/".into(),
            json,
            b"{}".to_vec(),
            (404, "NOT_FOUND"),
        ),
        (
            "a method's path with a trailing slash".into(),
            "GET",
            "/api/fleet.status/?tenantId=root".into(),
            json,
            vec![],
            (404, "NOT_FOUND"),
        ),
        (
            "a POST to a method's path with a trailing slash".into(),
            "POST",
            "/api/fleet.export/".into(),
            json,
            b"{}".to_vec(),
            (404, "NOT_FOUND"),
        ),
        (
            "an empty method name".into(),
            "GET",
            "/api//".into(),
            json,
            vec![],
            (404, "NOT_FOUND"),
        ),
        (
            "the API's root without its slash".into(),
            "GET",
            "/api".into(),
            json,
            vec![],
            (404, "NOT_FOUND"),
        ),
        (
            "GET of a write".into(),
            "GET",
            "/api/fleet.apply?tenantId=root".into(),
            json,
            vec![],
            (405, "INVALID_INPUT"),
        ),
    ];
    for verb in ["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"] {
        cases.push((
            format!("the HTTP method {verb}"),
            verb,
            "/api/fleet.apply".into(),
            json,
            plan_body(&serde_json::to_string(&seed_document()).unwrap()),
            (405, "INVALID_INPUT"),
        ));
    }
    // Numbers: too big for any integer, negative, fractional, non-finite spellings.
    for number in [
        "1e400",
        "-1e400",
        "18446744073709551616",
        "340282366920938463463374607431768211456",
        "-1",
        "1.5",
        "1e2",
        "NaN",
        "Infinity",
        "0x10",
        "01",
    ] {
        // JSON Schema counts 1e2 as the integer 100; a document may write it.
        if number != "1e2" {
            cases.push((
                format!("the quota {number}"),
                "POST",
                "/api/fleet.apply".into(),
                json,
                plan_body(&pool_with(&format!(r#""ownerQuota":{{"gpu":{number}}}"#))),
                bad,
            ));
        }
        // ...and so does a call: revision 100, which the pool (at 1) is not.
        let expected = if number == "1e2" {
            (409, "CONFLICT")
        } else {
            bad
        };
        cases.push((
            format!("ifRevision {number}"),
            "POST",
            "/api/pool.update".into(),
            json,
            format!(
                r#"{{"tenantId":"root","id":"{}","ifRevision":{number},"policy":null}}"#,
                pool["id"].as_str().unwrap()
            )
            .into_bytes(),
            expected,
        ));
    }
    for (budget, label) in [
        ("1.0000001", "over 1"),
        ("-0.5", "negative"),
        ("1e308", "huge"),
    ] {
        cases.push((
            format!("a disruption budget {label}"),
            "POST",
            "/api/fleet.apply".into(),
            json,
            plan_body(&pool_with(&format!(
                r#""policy":{{"disruptionBudget":{budget}}}"#
            ))),
            bad,
        ));
    }
    let tried = cases.len();
    for (label, verb, path, content_type, body, expected) in cases {
        refused(&fleet, &label, verb, &path, content_type, body, expected).await;
    }
    // 405 names the method's own verbs.
    for (verb, method, allow) in [
        ("PUT", "fleet.apply", "POST"),
        ("OPTIONS", "fleet.export", "GET, POST"),
    ] {
        let response = fleet
            .client()
            .request(
                reqwest::Method::from_bytes(verb.as_bytes()).unwrap(),
                fleet.server.url(&format!("/api/{method}")),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405);
        assert_eq!(response.headers()["allow"], allow, "{verb} {method}");
    }
    assert_eq!(snapshot(&database).await, before, "nothing changed");
    assert_eq!(
        fleet
            .ok("fleet.export", json!({ "tenantId": "root" }))
            .await,
        export
    );
    let health: Value = fleet
        .client()
        .get(fleet.server.url("/api/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "ok", "the server still answers");
    figure(
        &format!("hostile.{}.inputs", format!("{db:?}").to_lowercase()),
        tried,
    );
}
both!(
    hostile_inputs,
    hostile_inputs_are_refused_and_change_nothing
);

/// One valid input per method of the API, so a refusal is the key's, not the input's.
fn valid_inputs(tenant: &str, ids: &Value) -> Vec<(String, Value)> {
    let id = |k: &str| ids[k].as_str().unwrap_or("x_0").to_string();
    let t = tenant;
    let doc = seed_document();
    let mut out: Vec<(&str, Value)> = vec![
        ("fleet.export", json!({ "tenantId": t })),
        ("fleet.plan", json!({ "tenantId": t, "config": doc })),
        ("fleet.apply", json!({ "tenantId": t, "config": doc })),
        ("fleet.status", json!({ "tenantId": t })),
        ("fleet.check", json!({ "tenantId": t })),
        ("reconciler.status", json!({})),
        ("event.list", json!({ "tenantId": t })),
        (
            "webhook.create",
            json!({ "tenantId": t, "url": "https://example.com/hook", "events": ["*"] }),
        ),
        ("webhook.list", json!({ "tenantId": t })),
        ("webhook.delete", json!({ "tenantId": t, "id": "wh_0" })),
        ("webhook.deliveries", json!({ "tenantId": t, "id": "wh_0" })),
        (
            "webhook.redeliver",
            json!({ "tenantId": t, "id": "wh_0", "eventId": "evt_0" }),
        ),
        (
            "webhook.rotateSecret",
            json!({ "tenantId": t, "id": "wh_0" }),
        ),
        ("tenant.create", json!({ "id": "intruder" })),
        ("tenant.list", json!({})),
        (
            "serviceAccount.create",
            json!({ "tenantId": t, "name": "intruder" }),
        ),
        (
            "apiKey.create",
            json!({ "tenantId": t, "principalId": id("principal") }),
        ),
        ("apiKey.revoke", json!({ "tenantId": t, "id": id("key") })),
        (
            "grant.create",
            json!({ "tenantId": t, "principalId": id("principal"), "permission": "*" }),
        ),
        ("grant.delete", json!({ "tenantId": t, "id": id("grant") })),
        ("audit.list", json!({ "tenantId": t })),
        ("principal.list", json!({ "tenantId": t })),
        ("grant.list", json!({ "tenantId": t })),
        ("apiKey.list", json!({ "tenantId": t })),
        (
            "providerAccount.create",
            json!({ "tenantId": t, "name": "intruder", "provider": "hetzner-cloud", "config": {} }),
        ),
        (
            "providerAccount.update",
            json!({ "tenantId": t, "id": id("providerAccount"), "ifRevision": 1, "config": {} }),
        ),
        (
            "providerAccount.delete",
            json!({ "tenantId": t, "id": id("providerAccount"), "ifRevision": 1 }),
        ),
        (
            "site.create",
            json!({ "tenantId": t, "kind": "shared", "region": "eu" }),
        ),
        (
            "pool.create",
            json!({ "tenantId": t, "siteId": id("site"), "class": "vps-host" }),
        ),
        (
            "pool.update",
            json!({ "tenantId": t, "id": id("pool"), "ifRevision": 1, "policy": null }),
        ),
        (
            "pool.setOwnerQuota",
            json!({ "tenantId": t, "poolId": id("pool"), "resource": "gpu", "max": null }),
        ),
        (
            "pool.offer",
            json!({ "tenantId": t, "poolId": id("pool"), "tenant": "globex", "quota": {} }),
        ),
        (
            "pool.unoffer",
            json!({ "tenantId": t, "poolId": id("pool"), "tenant": "acme", "ifRevision": 1 }),
        ),
        (
            "pool.archive",
            json!({ "tenantId": t, "id": id("pool"), "ifRevision": 1 }),
        ),
        (
            "flavor.create",
            json!({ "tenantId": t, "poolId": id("pool"), "name": "x", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }),
        ),
        (
            "flavor.update",
            json!({ "tenantId": t, "id": id("flavor"), "ifRevision": 1, "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }),
        ),
        (
            "flavor.delete",
            json!({ "tenantId": t, "id": id("flavor"), "ifRevision": 1 }),
        ),
        (
            "sandboxTemplate.create",
            json!({ "tenantId": t, "name": "x", "poolId": id("pool"), "flavorId": id("flavor"), "imageId": "x", "network": "none" }),
        ),
        (
            "sandboxTemplate.update",
            json!({ "tenantId": t, "id": id("sandboxTemplate"), "ifRevision": 1, "flavorId": id("flavor"), "imageId": "x", "network": "none" }),
        ),
        (
            "sandboxTemplate.delete",
            json!({ "tenantId": t, "id": id("sandboxTemplate"), "ifRevision": 1 }),
        ),
    ];
    for kind in [
        "site",
        "pool",
        "providerAccount",
        "flavor",
        "sandboxTemplate",
    ] {
        out.push((
            Box::leak(format!("{kind}.list").into_boxed_str()),
            json!({ "tenantId": t }),
        ));
        out.push((
            Box::leak(format!("{kind}.get").into_boxed_str()),
            json!({ "tenantId": t, "id": id(kind) }),
        ));
    }
    out.into_iter().map(|(m, v)| (m.to_string(), v)).collect()
}

async fn status_of(fleet: &Fleet, key: Option<&str>, method: &str, input: &Value) -> (u16, Value) {
    let mut request = fleet
        .client()
        .post(fleet.server.url(&format!("/api/{method}")))
        .json(input);
    if let Some(key) = key {
        request = request.header("authorization", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// The key with its last character replaced by another one.
fn with_last_char_changed(key: &str) -> String {
    let (head, last) = key.split_at(key.len() - 1);
    format!("{head}{}", if last == "x" { "y" } else { "x" })
}

async fn every_method_refuses_bad_keys_and_missing_permissions(db: Db) {
    let (database, fleet) = fleet_with_seed(db).await;
    let url = database.url.clone();
    // Real ids, so inputs are valid.
    let (principal, _) = fleet.service_account("root", "victim", &[]).await;
    let key = fleet
        .ok(
            "apiKey.create",
            json!({ "tenantId": "root", "principalId": principal }),
        )
        .await;
    let grant = fleet
        .ok(
            "grant.create",
            json!({ "tenantId": "root", "principalId": principal, "permission": "compute:site:read" }),
        )
        .await;
    let first = |kind: &str| {
        let fleet = &fleet;
        let kind = kind.to_string();
        async move {
            fleet
                .ok(&format!("{kind}.list"), json!({ "tenantId": "root" }))
                .await["items"][0]["id"]
                .clone()
        }
    };
    let ids = json!({
        "principal": principal, "key": key["id"], "grant": grant["id"],
        "site": first("site").await, "pool": first("pool").await,
        "providerAccount": first("providerAccount").await, "flavor": first("flavor").await,
        "sandboxTemplate": first("sandboxTemplate").await,
    });
    let inputs = valid_inputs("root", &ids);

    // The table covers every method the OpenAPI document lists.
    let openapi: Value = fleet
        .client()
        .get(fleet.server.url("/api/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut listed: Vec<String> = openapi["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter_map(|p| p.strip_prefix("/api/"))
        .filter(|m| *m != "health" && *m != "openapi.json")
        .map(str::to_string)
        .collect();
    listed.sort();
    let mut covered: Vec<String> = inputs.iter().map(|(m, _)| m.clone()).collect();
    covered.sort();
    assert_eq!(covered, listed, "one case per method of the API");

    // Keys that are not keys.
    let (_, revoked) = fleet
        .service_account("root", "revoked", &[("*", "tenants/root")])
        .await;
    // bc_<id>_<secret> is the key of id key_<id>.
    let revoked_id = format!("key_{}", revoked.split('_').nth(1).unwrap());
    fleet
        .ok(
            "apiKey.revoke",
            json!({ "tenantId": "root", "id": revoked_id }),
        )
        .await;
    let admin = fleet.key.clone();
    let wrong_secret = with_last_char_changed(&admin);
    let bad_keys: Vec<Option<String>> = vec![
        None,
        Some(String::new()),
        Some("Bearer".into()),
        Some("Bearer ".into()),
        Some(format!("Basic {admin}")),
        Some(format!("bearer{admin}")),
        Some("Bearer bc_nosuchkey_secret".into()),
        Some("Bearer bc_".into()),
        Some("Bearer ' OR 1=1 --".into()),
        Some(format!("Bearer {wrong_secret}")),
        Some(format!("Bearer {revoked}")),
    ];
    // A root key with no permission but compute:site:read: 403 everywhere else.
    let (_, weak) = fleet
        .service_account("root", "weak", &[("compute:site:read", "tenants/root")])
        .await;
    // A key of another tenant holding everything there: 403 for every fleet method.
    let (_, acme) = fleet
        .service_account("acme", "acme-admin", &[("*", "tenants/acme")])
        .await;
    let before = snapshot(&database).await;
    let forbidden_before = count_at(
        db,
        &url,
        "SELECT COUNT(*) FROM audit WHERE outcome = 'forbidden'",
    )
    .await;
    let mut refusals = 0;
    for (method, input) in &inputs {
        for key in &bad_keys {
            let (status, body) = status_of(&fleet, key.as_deref(), method, input).await;
            assert_eq!(
                (status, body["error"]["code"].as_str()),
                (401, Some("UNAUTHENTICATED")),
                "{method} with {key:?}: {body}"
            );
            refusals += 1;
        }
    }

    let mut forbidden = 0;
    for (method, input) in &inputs {
        let weak_answer = status_of(&fleet, Some(&format!("Bearer {weak}")), method, input).await;
        if method.starts_with("site.list") || method.starts_with("site.get") {
            assert_eq!(weak_answer.0, 200, "{method}: {}", weak_answer.1);
        } else {
            assert_eq!(
                (weak_answer.0, weak_answer.1["error"]["code"].as_str()),
                (403, Some("FORBIDDEN")),
                "{method} without its permission: {}",
                weak_answer.1
            );
            forbidden += 1;
        }
        if method.starts_with("fleet.") || method.starts_with("reconciler.") {
            for tenant in ["root", "acme"] {
                let mut input = input.clone();
                if input.get("tenantId").is_some() {
                    input["tenantId"] = json!(tenant);
                }
                let (status, body) =
                    status_of(&fleet, Some(&format!("Bearer {acme}")), method, &input).await;
                assert_eq!(
                    (status, body["error"]["code"].as_str()),
                    (403, Some("FORBIDDEN")),
                    "{method} for {tenant} with acme's key: {body}"
                );
                forbidden += 1;
            }
        }
    }
    assert_eq!(
        snapshot(&database).await,
        before,
        "no refusal changed anything"
    );
    let forbidden_after = count_at(
        db,
        &url,
        "SELECT COUNT(*) FROM audit WHERE outcome = 'forbidden'",
    )
    .await;
    assert_eq!(
        forbidden_after - forbidden_before,
        forbidden,
        "one audit row per refused attempt"
    );
    let label = format!("{db:?}").to_lowercase();
    figure(&format!("security.{label}.unauthenticated"), refusals);
    figure(&format!("security.{label}.forbidden"), forbidden);
}
both!(
    keys_and_permissions,
    every_method_refuses_bad_keys_and_missing_permissions
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_never_stored_or_logged() {
    let server = LoggedServer::start(&[]);
    let http = reqwest::Client::new();
    let post = |method: &str, key: &str, body: Value| {
        http.post(server.url(&format!("/api/{method}")))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    let admin = server.key.clone();
    assert!(admin.starts_with("bc_"), "the admin key was printed");
    post("tenant.create", &admin, json!({ "id": "acme" }))
        .await
        .unwrap();
    let sa: Value = post(
        "serviceAccount.create",
        &admin,
        json!({ "tenantId": "root", "name": "ci" }),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let key: Value = post(
        "apiKey.create",
        &admin,
        json!({ "tenantId": "root", "principalId": sa["id"] }),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let sa_key = key["key"].as_str().unwrap().to_string();

    // Literal secrets, where a document or a hand call holds secret-looking keys.
    let literal = "hunter2-LITERAL-s3cr3t-7f1c";
    let mut with_token = seed_document();
    with_token["providerAccounts"][0]["config"]["token"] = json!(literal);
    let mut with_env = seed_document();
    with_env["sandboxTemplates"][0]["env"] = json!({ "API_PASSWORD": literal });
    let mut with_credential = seed_document();
    with_credential["providerAccounts"][0]["config"]["Credential"] = json!(literal);
    let attempts = [
        (
            "fleet.plan",
            json!({ "tenantId": "root", "config": with_token }),
        ),
        (
            "fleet.apply",
            json!({ "tenantId": "root", "config": with_token }),
        ),
        (
            "fleet.apply",
            json!({ "tenantId": "root", "config": with_env }),
        ),
        (
            "fleet.plan",
            json!({ "tenantId": "root", "config": with_credential }),
        ),
        (
            "providerAccount.create",
            json!({ "tenantId": "root", "name": "cloud", "provider": "hetzner-cloud", "config": { "token": literal } }),
        ),
    ];
    for (method, body) in &attempts {
        let response = post(method, &admin, body.clone()).await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 400, "{method} with a literal secret: {text}");
        assert!(text.contains("INVALID_INPUT"), "{text}");
        assert!(
            !text.contains(literal),
            "the answer does not echo it: {text}"
        );
    }
    // A request with a key that is not one, and requests with the service account's key.
    let guess = format!("bc_{}_{}", "0".repeat(26), literal);
    assert_eq!(
        post("tenant.list", &guess, json!({}))
            .await
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        post("tenant.list", &sa_key, json!({}))
            .await
            .unwrap()
            .status(),
        403
    );

    // Neither the logs (every level) nor the database file hold a key or the literal.
    let log = server.log();
    assert!(log.contains("api call"), "the log was captured: {log:.300}");
    let secret_of = |key: &str| key.rsplit('_').next().unwrap().to_string();
    for needle in [
        literal.to_string(),
        admin.clone(),
        sa_key.clone(),
        secret_of(&admin),
        secret_of(&sa_key),
    ] {
        assert!(!log.contains(&needle), "the log holds {needle}");
        assert!(
            !contains(&server.database_bytes(), needle.as_bytes()),
            "the database file holds {needle}"
        );
    }
    // The stored key is its SHA-256, not the key.
    let url = format!("sqlite://{}", server.database.display());
    let stored = texts_at(Db::Sqlite, &url, "api_keys").await;
    let digest = |k: &str| planner::sha256_hex(k.as_bytes());
    assert!(stored.contains(&digest(&admin)) && stored.contains(&digest(&sa_key)));
    assert!(!stored.iter().any(|s| s.contains(&secret_of(&admin))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_targets_never_reach_link_local_or_metadata_addresses() {
    // Even when private targets are allowed (tests, development).
    let fleet = Fleet::start(Db::Sqlite, &["--webhook-allow-private"]).await;
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.170.2/v2/credentials",
        "http://[fe80::1]/hook",
        "http://[fd00:ec2::254]/latest",
        "http://100.100.100.200/latest",
        "http://168.63.129.16/machine",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://metadata/computeMetadata/v1/",
        "http://0.0.0.0/hook",
        "http://[::ffff:169.254.169.254]/latest",
        "http://224.0.0.1/hook",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_",
    ] {
        let refused = fleet
            .fails(
                "webhook.create",
                json!({ "tenantId": "root", "url": url, "events": ["*"] }),
                "INVALID_INPUT",
            )
            .await;
        assert_eq!(refused.status, 400, "{url}");
    }
    assert_eq!(
        fleet
            .ok("webhook.list", json!({ "tenantId": "root" }))
            .await["items"],
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_per_key() {
    // A burst of 8, then one request per 2 s: slow enough that a busy machine cannot refill
    // the bucket between two requests of the test.
    let fleet = Fleet::start_env(Db::Sqlite, &[], &[("BETTER_COMPUTE_RATE_LIMIT", "0.5:8")]).await;
    let admin = fleet.key.clone();
    let (_, other) = fleet
        .service_account("root", "other", &[("iam:tenant:read", "tenants/root")])
        .await;
    let list = |key: String| {
        let fleet = &fleet;
        async move {
            status_of(
                fleet,
                Some(&format!("Bearer {key}")),
                "tenant.list",
                &json!({}),
            )
            .await
        }
    };
    // The three calls above took 3 of the administrator's 8.
    let mut passed = 0;
    let (status, body) = loop {
        let (status, body) = list(admin.clone()).await;
        if status != 200 || passed > 20 {
            break (status, body);
        }
        passed += 1;
    };
    assert!(
        (5..=7).contains(&passed),
        "the burst passes: {passed} passed"
    );
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("RATE_LIMITED")),
        "{body}"
    );
    assert!(body["error"]["details"]["retryAfterMs"].as_u64().unwrap() > 0);
    // Another key has its own bucket.
    assert_eq!(list(other).await.0, 200);
    // Guesses at the same key's secret share its bucket.
    let guess = with_last_char_changed(&admin);
    assert_eq!(list(guess).await.0, 429);
    // The health check is never limited, not even with the spent key (a probe may carry one).
    for key in [None, Some(&admin)] {
        let mut probe = fleet.client().get(fleet.server.url("/api/health"));
        if let Some(key) = key {
            probe = probe.bearer_auth(key);
        }
        assert_eq!(probe.send().await.unwrap().status(), 200, "{key:?}");
    }
    // The bucket refills (one token in 2 s).
    let refilled = guarantees_support::eventually(Duration::from_secs(10), async || {
        list(admin.clone()).await.0 == 200
    })
    .await;
    assert!(refilled, "the bucket refills");
}

/// Sends `head` (the request line and headers, without the blank line), then `body` in
/// `chunk`-sized writes, over a fresh TCP connection, and reads until the server closes
/// it. Answers the status, the lowercase headers and the body. A reset or a write error
/// fails: the client must get the whole answer, then the end of the connection.
fn raw_exchange(addr: std::net::SocketAddr, head: &str, body: &[u8], chunk: usize) -> RawAnswer {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream
        .write_all(format!("{head}\r\n\r\n").as_bytes())
        .unwrap();
    for part in body.chunks(chunk.max(1)) {
        stream
            .write_all(part)
            .unwrap_or_else(|e| panic!("writing the body: {e}"));
    }
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .unwrap_or_else(|e| panic!("reading the answer until the connection ends: {e}"));
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("an HTTP answer: {:?}", String::from_utf8_lossy(&answer)));
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    RawAnswer {
        status,
        headers,
        body: answer[split + 4..].to_vec(),
    }
}

struct RawAnswer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawAnswer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Checks the answer is the PAYLOAD_TOO_LARGE envelope, and says the connection ends.
    fn assert_too_large(&self, label: &str) {
        let text = String::from_utf8_lossy(&self.body);
        assert_eq!(self.status, 413, "{label}: {text:.300}");
        let envelope: Value = serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| panic!("{label}: not a JSON envelope: {text:.300}"));
        assert_eq!(envelope["error"]["code"], "PAYLOAD_TOO_LARGE", "{label}");
        assert!(
            envelope["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("16777216 bytes")),
            "{label}: {envelope}"
        );
        assert!(envelope["error"]["details"].is_object(), "{label}");
        assert_eq!(self.header("connection"), Some("close"), "{label}");
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{label}"
        );
    }
}

/// A request whose body HTTP/1.1 cannot frame is refused by hyper before any route, as
/// contracts.md says: 400, an empty body, and the connection closed (the one case besides 414
/// and 431 without the envelope). Nothing runs, so nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unframable_requests_are_refused_before_any_route() {
    let (database, fleet) = fleet_with_seed(Db::Sqlite).await;
    let before = snapshot(&database).await;
    let addr = fleet.server.addr();
    let auth = format!("Authorization: Bearer {}", fleet.key);
    for framing in [
        "Content-Length: abc",
        "Content-Length: 2\r\nContent-Length: 3",
        "Transfer-Encoding: gzip",
    ] {
        let head = format!("POST /api/site.create HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\n{framing}");
        let body = br#"{"tenantId":"root","kind":"shared","region":"eu"}"#;
        let answer = tokio::task::spawn_blocking(move || raw_exchange(addr, &head, body, 1 << 16))
            .await
            .unwrap();
        assert_eq!(answer.status, 400, "{framing}");
        assert!(answer.body.is_empty(), "{framing}");
        assert_eq!(answer.header("connection"), Some("close"), "{framing}");
    }
    assert_eq!(snapshot(&database).await, before);
}

/// A body over 16 MiB is answered 413 with the error envelope, and only then is the
/// connection closed: declared with Content-Length (sent whole, in small or large writes),
/// sent chunked with no length, or declared far too large and never sent. The body is no
/// database's concern: SQLite only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_answered_413_before_the_connection_closes() {
    let (database, fleet) = fleet_with_seed(Db::Sqlite).await;
    let before = snapshot(&database).await;
    let addr = fleet.server.addr();
    let auth = format!("Authorization: Bearer {}", fleet.key);
    let mut body = plan_body(r#"{"version":1,"sites":[]}"#);
    body.resize(17 * 1024 * 1024, b' ');
    let length = body.len();
    let mut tried = 0;
    for (label, chunk) in [
        ("17 MiB, 1 MiB writes", 1 << 20),
        ("17 MiB, 4 KiB writes", 4096),
    ] {
        let head = format!(
            "POST /api/fleet.apply HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\nContent-Type: application/json\r\nContent-Length: {length}"
        );
        let (head, body) = (head.clone(), body.clone());
        let answer = tokio::task::spawn_blocking(move || raw_exchange(addr, &head, &body, chunk))
            .await
            .unwrap();
        answer.assert_too_large(label);
        tried += 1;
    }
    // Chunked: the server learns the size only by reading past the limit.
    let mut chunked = Vec::new();
    for part in body.chunks(1 << 20) {
        chunked.extend(format!("{:x}\r\n", part.len()).as_bytes());
        chunked.extend(part);
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\n\r\n");
    let head = format!(
        "POST /api/fleet.plan HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"
    );
    let answer = tokio::task::spawn_blocking(move || raw_exchange(addr, &head, &chunked, 1 << 16))
        .await
        .unwrap();
    answer.assert_too_large("17 MiB chunked");
    tried += 1;
    // Declared at 1 TiB and never sent: answered at once (nothing is read), then closed.
    let head = format!(
        "POST /api/pool.update HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\nContent-Type: application/json\r\nContent-Length: {}",
        1u64 << 40
    );
    let answer = tokio::task::spawn_blocking(move || raw_exchange(addr, &head, &[], 1))
        .await
        .unwrap();
    answer.assert_too_large("declared 1 TiB");
    tried += 1;
    // An ordinary client, many times in a row: always the answer, never a reset.
    for round in 0..5 {
        let response = reqwest::Client::new()
            .post(fleet.server.url("/api/fleet.apply"))
            .bearer_auth(&fleet.key)
            .header("content-type", "application/json")
            .body(body.clone())
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap_or_else(|e| panic!("round {round}: no answer: {e}"));
        assert_eq!(response.status(), 413, "round {round}");
        assert_eq!(response.headers()["connection"], "close");
        let envelope: Value = response.json().await.unwrap();
        assert_eq!(envelope["error"]["code"], "PAYLOAD_TOO_LARGE");
        tried += 1;
    }
    assert_eq!(snapshot(&database).await, before, "nothing changed");
    // A body at the limit is still read (and refused for what it is, not its size).
    let mut at_limit = plan_body(r#"{"version":1,"sites":[]}"#);
    at_limit.resize(16 * 1024 * 1024, b' ');
    let response = fleet
        .client()
        .post(fleet.server.url("/api/fleet.plan"))
        .bearer_auth(&fleet.key)
        .body(at_limit)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "a 16 MiB body is within the limit");
    figure("hostile.oversized.inputs", tried);
}

/// GET reads take booleans and integers from the query string: `true`/`false` only, else
/// INVALID_INPUT naming the parameter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_query_booleans_and_integers_are_typed() {
    let fleet = Fleet::start(Db::Sqlite, &[]).await;
    let get = |query: &'static str| {
        let fleet = &fleet;
        async move {
            let response = fleet
                .client()
                .get(fleet.server.url(&format!("/api/{query}")))
                .bearer_auth(&fleet.key)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let (status, with_runs) = get("reconciler.status?runs=true").await;
    assert_eq!(status, 200, "{with_runs}");
    assert!(
        with_runs["runs"].is_array(),
        "runs=true answers the runs: {with_runs}"
    );
    let (status, without) = get("reconciler.status?runs=false").await;
    assert_eq!(status, 200, "{without}");
    assert!(without.get("runs").is_none(), "runs=false: {without}");
    for bad in ["yes", "1", "TRUE", ""] {
        let query: &'static str =
            Box::leak(format!("reconciler.status?runs={bad}").into_boxed_str());
        let (status, body) = get(query).await;
        assert_eq!(
            (
                status,
                body["error"]["code"].as_str(),
                body["error"]["details"]["path"].as_str()
            ),
            (400, Some("INVALID_INPUT"), Some("runs")),
            "runs={bad}: {body}"
        );
    }
    // Integers: `2`, and `2.0` (an integer to JSON Schema); text is refused at its path.
    for limit in ["2", "2.0"] {
        let query: &'static str =
            Box::leak(format!("audit.list?tenantId=root&limit={limit}").into_boxed_str());
        let (status, body) = get(query).await;
        assert_eq!(status, 200, "limit={limit}: {body}");
    }
    let (status, body) = get("audit.list?tenantId=root&limit=two").await;
    assert_eq!(
        (status, body["error"]["details"]["path"].as_str()),
        (400, Some("limit")),
        "{body}"
    );
    // A parameter the input does not have: its name is the place, not a column of the JSON
    // text the parameters were written as (which the client never sent).
    let (status, body) = get("fleet.status?tenantId=root&x=1").await;
    assert_eq!(
        (
            status,
            body["error"]["details"]["path"].as_str(),
            body["error"]["message"].as_str()
        ),
        (
            400,
            Some("x"),
            Some("unknown field `x`, expected `tenantId`")
        ),
        "{body}"
    );
}

/// The INVALID_INPUT error of `POST /api/<method>` with `body` sent as it is.
async fn input_error(fleet: &Fleet, method: &str, body: &[u8]) -> Value {
    let response = fleet
        .client()
        .post(fleet.server.url(&format!("/api/{method}")))
        .bearer_auth(&fleet.key)
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let envelope: Value = response.json().await.unwrap();
    let error = envelope["error"].clone();
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("INVALID_INPUT")),
        "{method} {}: {envelope}",
        String::from_utf8_lossy(body)
    );
    let path = &error["details"]["path"];
    assert!(
        path.as_str().is_some_and(document_shaped),
        "{method}: a path as the document's: {envelope}"
    );
    assert_eq!(
        error["details"]["problems"],
        json!([{ "path": path, "message": error["message"] }]),
        "{method}: the one problem is the error's"
    );
    error
}

/// Input errors as contracts.md writes them: the value of a secret-looking key is never
/// repeated, a map key that is not plain is written `["key"]`, and the root is ``.
async fn input_errors_are_written_as_the_documents_are(db: Db) {
    let (database, fleet) = fleet_with_seed(db).await;
    let before = snapshot(&database).await;
    let pool = fleet.ok("pool.list", json!({ "tenantId": "root" })).await["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let at = |error: &Value| {
        (
            error["details"]["path"].as_str().unwrap().to_string(),
            error["message"].as_str().unwrap().to_string(),
        )
    };

    // 1. Secret-looking keys: serde's message without the value, at the key.
    let secret_cases: Vec<(&str, Value, &str, &str, &str)> = vec![
        (
            "providerAccount.create",
            json!({ "tenantId": "globex", "name": "pp", "provider": "x", "config": { "password": 12345678 } }),
            "12345678",
            "config.password",
            "invalid type: integer, expected a string",
        ),
        (
            "providerAccount.create",
            json!({ "tenantId": "root", "name": "pp", "provider": "x", "config": { "api.key": 98765.5 } }),
            "98765.5",
            r#"config["api.key"]"#,
            "invalid type: number, expected a string",
        ),
        (
            "providerAccount.update",
            json!({ "tenantId": "root", "id": "pa_x", "ifRevision": 1, "config": { "TOKEN": 4815162342_u64 } }),
            "4815162342",
            "config.TOKEN",
            "invalid type: integer, expected a string",
        ),
        (
            "sandboxTemplate.create",
            json!({ "tenantId": "root", "env": { "DB_PASSWORD": true } }),
            "true",
            "env.DB_PASSWORD",
            "invalid type: boolean, expected a string",
        ),
        (
            // A string where a quota's integer is due, holding quotes and serde's own words.
            "pool.offer",
            json!({ "tenantId": "root", "poolId": pool, "tenant": "acme", "quota": { "gpu.token": "s3cr3t \"x\", expected \\ y" } }),
            "s3cr3t",
            r#"quota["gpu.token"]"#,
            "invalid type: string, expected a non-negative integer",
        ),
        (
            "site.create",
            json!({ "tenantId": "root", "idempotencyKey": 31337, "kind": "shared", "region": "eu" }),
            "31337",
            "idempotencyKey",
            "invalid type: integer, expected a string",
        ),
    ];
    for (method, body, value, path, message) in &secret_cases {
        let error = input_error(&fleet, method, body.to_string().as_bytes()).await;
        assert!(
            !error.to_string().contains(value),
            "{method}: the value of a secret-looking key is not repeated: {error}"
        );
        assert_eq!(
            at(&error),
            (path.to_string(), message.to_string()),
            "{method}"
        );
    }
    // A key that does not look secret keeps serde's whole message: only secrets are hidden.
    let error = input_error(
        &fleet,
        "providerAccount.create",
        json!({ "tenantId": "root", "name": "pp", "provider": "x", "config": { "region": 12345678 } })
            .to_string()
            .as_bytes(),
    )
    .await;
    assert_eq!(
        at(&error),
        (
            "config.region".into(),
            "invalid type: integer `12345678`, expected a string".into()
        )
    );
    // Valid JSON nested past serde_json's 127 levels: what is not read, at its path, with no
    // place in the text (which is JSON).
    let deep = format!(
        r#"{{"tenantId": "root", "name": "pp", "provider": "x", "config": {{"a": {}{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let (path, message) = at(&input_error(&fleet, "providerAccount.create", deep.as_bytes()).await);
    assert!(path.starts_with("config.a[0]"), "{path}");
    assert_eq!(
        message,
        "nests lists and objects deeper than the 127 levels the server reads"
    );
    // The document's validator says the same without the value.
    let mut document = seed_document();
    document["providerAccounts"][0]["config"]["password"] = json!(12345678);
    let failure = fleet
        .fails(
            "fleet.plan",
            json!({ "tenantId": "root", "config": document }),
            "INVALID_INPUT",
        )
        .await;
    assert!(
        !failure.message.contains("12345678") && !failure.details.to_string().contains("12345678"),
        "{failure:?}"
    );

    // 2. Map keys that are not plain are written in brackets, as the validator writes them.
    let offer = |quota: Value| {
        json!({ "tenantId": "root", "poolId": pool, "tenant": "acme", "quota": quota }).to_string()
    };
    let error = input_error(
        &fleet,
        "pool.offer",
        offer(json!({ "nvidia.gpu": -1 })).as_bytes(),
    )
    .await;
    assert_eq!(
        at(&error),
        (
            r#"quota["nvidia.gpu"]"#.into(),
            "invalid value: integer `-1`, expected a non-negative integer".into()
        )
    );
    let error = input_error(
        &fleet,
        "pool.offer",
        offer(json!({ "a b": 1.5 })).as_bytes(),
    )
    .await;
    assert_eq!(error["details"]["path"], r#"quota["a b"]"#, "{error}");
    let error = input_error(
        &fleet,
        "pool.offer",
        offer(json!({ "vcpu": "x" })).as_bytes(),
    )
    .await;
    assert_eq!(error["details"]["path"], "quota.vcpu", "{error}");
    let mut document = seed_document();
    document["pools"][0]["ownerQuota"] = json!({ "nvidia.gpu": -1 });
    let failure = fleet
        .fails(
            "fleet.plan",
            json!({ "tenantId": "root", "config": document }),
            "INVALID_INPUT",
        )
        .await;
    assert_eq!(
        failure.details["path"], r#"pools[0].ownerQuota["nvidia.gpu"]"#,
        "the document's path of the same key: {failure:?}"
    );
    // An item of a list is `[i]`, with no dot before it (an input read from bytes).
    let error = input_error(
        &fleet,
        "webhook.create",
        br#"{"tenantId":"root","url":"https://example.com/hook","events":["fleet.drifted",5]}"#,
    )
    .await;
    assert_eq!(
        at(&error),
        (
            "events[1]".into(),
            "invalid type: integer `5`, expected a string".into()
        )
    );

    // 3. A truncated body: the root is `` (a key that could not be read is its object's).
    for (method, body, path) in [
        ("site.list", &b"{"[..], ""),
        ("tenant.create", b"{", ""),
        ("pool.offer", b"{", ""),
        ("fleet.plan", br#"{"tenantId":"root""#, ""),
        (
            "providerAccount.create",
            br#"{"tenantId":"root","config":{"#,
            "config",
        ),
        (
            "providerAccount.create",
            br#"{"tenantId":"root","config":{"pass"#,
            "config",
        ),
    ] {
        let error = input_error(&fleet, method, body).await;
        assert_eq!(error["details"]["path"], path, "{method}: {error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with("EOF while parsing"),
            "{method}: serde_json's own words: {error}"
        );
    }
    assert_eq!(snapshot(&database).await, before, "nothing changed");
}
both!(input_errors, input_errors_are_written_as_the_documents_are);

/// Input errors speak JSON, never Rust: every method's input, its root and each field (and
/// the fields of an object field) given a value of each JSON kind, answers messages that
/// name no Rust type (`struct TenantInput`, `u64`, `i64`, `f64`, `map`, `sequence`).
async fn input_errors_name_no_rust_type(db: Db) {
    let fleet = Fleet::start(db, &[]).await;
    let rust_words = [
        "struct",
        "enum",
        "identifier",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "isize",
        "f32",
        "f64",
        "Option",
        "Some",
        "None",
        "Vec",
        "String",
        "HashMap",
        "BTreeMap",
        "map",
        "sequence",
        "floating",
        "unit",
    ];
    let speaks_rust = |text: &str| {
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| rust_words.contains(&word))
    };
    let kinds = [
        json!(null),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(1e30),
        json!(true),
        json!("x"),
        json!([]),
        json!([1]),
        json!({}),
        json!({ "a": 1, "b": 2 }),
    ];
    let mut seen = 0;
    let mut check = async |method: &str, body: Value| {
        let response = fleet
            .client()
            .post(fleet.server.url(&format!("/api/{method}")))
            .bearer_auth(&fleet.key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let answer: Value = response.json().await.unwrap();
        if answer["error"]["code"] == "INVALID_INPUT" {
            let message = answer["error"]["message"].as_str().unwrap();
            // The input's own words (field names, the document's) are not serde's.
            let words = message.split(", expected one of").next().unwrap();
            assert!(
                !speaks_rust(words),
                "{method} {body}: a Rust word in {message:?}"
            );
            seen += 1;
        }
    };
    for (method, input) in valid_inputs("root", &json!({})) {
        for kind in &kinds {
            check(&method, kind.clone()).await;
        }
        let Some(fields) = input.as_object() else {
            continue;
        };
        for (field, value) in fields {
            for kind in &kinds {
                let mut body = input.clone();
                body[field] = kind.clone();
                check(&method, body).await;
            }
            // One level down: a policy's, a quota's, a document's fields.
            if let Some(inner) = value.as_object() {
                let mut keys: Vec<&str> = inner.keys().map(String::as_str).collect();
                keys.push("added");
                for key in keys {
                    for kind in &kinds {
                        let mut body = input.clone();
                        body[field][key] = kind.clone();
                        check(&method, body).await;
                    }
                }
            }
        }
    }
    assert!(seen > 500, "{seen} refusals read");

    // What the messages say instead, for each kind of field.
    let mut wrong = Vec::new();
    let said = async |method: &str, body: &str| {
        input_error(&fleet, method, body.as_bytes()).await["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for (method, body, message) in [
        (
            "tenant.list",
            "null",
            "invalid type: null, expected a JSON object",
        ),
        (
            "fleet.status",
            r#"{"tenantId":5}"#,
            "invalid type: integer `5`, expected a string",
        ),
        (
            "pool.get",
            r#"{"tenantId":"root","id":"p","x":1}"#,
            "unknown field `x`, expected `tenantId` or `id`",
        ),
        (
            "flavor.delete",
            r#"{"tenantId":"root","id":"f","ifRevision":-1}"#,
            "invalid value: integer `-1`, expected a non-negative integer",
        ),
        (
            "flavor.create",
            r#"{"tenantId":"root","poolId":"p","name":"f","vcpu":1.5,"memoryGiB":1,"diskGiB":1}"#,
            "invalid type: number `1.5`, expected an integer from 0 to 4294967295",
        ),
        (
            "pool.offer",
            r#"{"tenantId":"root","poolId":"p","tenant":"acme","quota":{},"priority":"x"}"#,
            r#"invalid type: string "x", expected an integer from -9223372036854775808 to 9223372036854775807"#,
        ),
        (
            "pool.update",
            r#"{"tenantId":"root","id":"p","ifRevision":1,"policy":{"disruptionBudget":"x"}}"#,
            r#"invalid type: string "x", expected a number"#,
        ),
        (
            "pool.update",
            r#"{"tenantId":"root","id":"p","ifRevision":1,"policy":[]}"#,
            "invalid type: array, expected a JSON object",
        ),
        // serde reads a struct from an array of its fields too: an object is an object.
        (
            "pool.update",
            r#"{"tenantId":"root","id":"p","ifRevision":1,"policy":[0.5]}"#,
            "invalid type: array, expected a JSON object",
        ),
        (
            "sandboxTemplate.create",
            r#"{"tenantId":"root","poolId":"p","name":"t","imageId":"i","flavorId":"f","network":"private","warm":[1,2]}"#,
            "invalid type: array, expected a JSON object",
        ),
        (
            "pool.create",
            r#"{"tenantId":"root","siteId":"s","class":{"a":1,"b":2}}"#,
            "invalid type: object, expected a string",
        ),
        (
            "pool.create",
            r#"{"tenantId":"root","siteId":"s","class":7}"#,
            "invalid type: integer `7`, expected a string",
        ),
        // serde_json reads an enum from `{"name": null}` too: a name is a string, and a null
        // is a null, not a place that holds no value.
        (
            "site.create",
            r#"{"tenantId":"root","kind":{"shared":null},"region":"eu"}"#,
            "invalid type: object, expected a string",
        ),
        (
            "sandboxTemplate.create",
            r#"{"tenantId":"root","poolId":"p","name":"t","imageId":"i","flavorId":"f","network":null}"#,
            "invalid type: null, expected a string",
        ),
        (
            "webhook.create",
            r#"{"tenantId":"root","url":"https://example.com/hook","events":{}}"#,
            "invalid type: object, expected an array",
        ),
        // A number past a double's range is said as a document's is (contracts.md).
        (
            "pool.setOwnerQuota",
            r#"{"tenantId":"root","poolId":"p","resource":"ram","max":1e309}"#,
            "is a number out of range: a double holds at most about 1.8e308",
        ),
        // Text that is not JSON keeps serde_json's place: there it is the only one.
        (
            "fleet.status",
            r#"{"tenantId":"root",}"#,
            "trailing comma at line 1 column 20",
        ),
    ] {
        wrong.extend(
            Some(said(method, body).await)
                .filter(|said| said != message)
                .map(|said| format!("{method} {body}: {said:?}, not {message:?}")),
        );
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
both!(input_errors_in_json_words, input_errors_name_no_rust_type);
