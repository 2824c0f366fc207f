//! A quick timing of validate and plan on a maximal document against two typed serde_json
//! parses of the same bytes (the criterion benches are the reference; this is a smoke check).
//! `cargo test --release -p planner --test speed -- --ignored --nocapture`
#![cfg(not(target_arch = "wasm32"))]

use planner::{Document, Export, PlanOptions, plan, validate};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A document with 1000 items in every list, every pool with 3 offers and 4 quota keys; `salt`
/// changes about one item in ten.
fn maximal(salt: u64) -> Value {
    let n = 1000;
    let changed = |i: u64| salt != 0 && i.is_multiple_of(10);
    let sites: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("site-{i}"), "kind": "shared", "region": "eu-central"}))
        .collect();
    let accounts: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("acct-{i}"), "provider": "hetzner-cloud",
            "config": {"token": "secret://hetzner", "location": if changed(i) { "nbg1" } else { "fsn1" }}}))
        .collect();
    let pools: Vec<Value> = (0..n)
        .map(|i| {
            json!({"name": format!("pool-{i}"), "site": format!("site-{i}"), "class": "vps-host",
            "gpuModel": "L40S", "policy": {"disruptionBudget": if changed(i) { 0.2 } else { 0.1 }},
            "ownerQuota": {"gpu": 8, "vcpu": 128, "memory": 512, "disk": 4096},
            "offers": [
                {"tenant": "acme", "quota": {"vcpu": 64, "gpu": 2}, "priority": 5},
                {"tenant": "globex", "quota": {"vcpu": 32}},
                {"tenant": "initech", "quota": {"vcpu": if changed(i) { 9 } else { 8 }}}]})
        })
        .collect();
    let flavors: Vec<Value> = (0..n)
        .map(|i| {
            json!({"pool": format!("pool-{i}"), "name": "g1.small",
            "vcpu": if changed(i) { 4 } else { 2 }, "memoryGiB": 4, "diskGiB": 40})
        })
        .collect();
    let templates: Vec<Value> = (0..n)
        .map(|i| {
            json!({"name": format!("tpl-{i}"), "pool": format!("pool-{i}"), "flavor": "g1.small",
            "imageId": "ubuntu-24.04", "env": {"PIP_INDEX_URL": "secret://root/pip"},
            "network": "private", "warm": {"min": 2, "max": 4}})
        })
        .collect();
    json!({"version": 1, "sites": sites, "providerAccounts": accounts, "pools": pools,
        "flavors": flavors, "sandboxTemplates": templates})
}

fn best(mut f: impl FnMut()) -> Duration {
    (0..15)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap()
}

#[test]
#[ignore = "timing; run in release"]
fn validate_and_plan_against_two_parses() {
    let desired = serde_json::to_vec(&maximal(1)).unwrap();
    let current_value = maximal(0);
    let current = Document::from_value(&current_value).unwrap();
    let mut objects = Vec::new();
    for i in 0..1000 {
        for (kind, name, id) in [
            ("site", format!("site-{i}"), Some(format!("site_{i}"))),
            (
                "providerAccount",
                format!("acct-{i}"),
                Some(format!("pa_{i}")),
            ),
            ("pool", format!("pool-{i}"), Some(format!("pool_{i}"))),
            (
                "flavor",
                format!("pool-{i}/g1.small"),
                Some(format!("flv_{i}")),
            ),
            (
                "sandboxTemplate",
                format!("tpl-{i}"),
                Some(format!("tpl_{i}")),
            ),
            ("offer", format!("pool-{i} -> acme"), None),
            ("ownerQuota", format!("pool-{i}:gpu"), None),
        ] {
            objects.push(json!({"kind": kind, "name": name, "id": id, "revision": 3}));
        }
    }
    let objects: Vec<Value> = objects
        .into_iter()
        .map(|mut o| {
            if o["id"].is_null() {
                o.as_object_mut().unwrap().remove("id");
            }
            o
        })
        .collect();
    let export_value = json!({
        "tenantId": "root", "caller": "usr_ops", "config": current, "objects": objects,
        "tenants": ["acme", "globex", "initech", "root"]});
    let export = Export::from_value(&export_value).unwrap();
    // For a profiler: `SPEED_ONLY=plan`, `validate`, `parse` (one typed parse) or `none` loops on that alone.
    if let Ok(only) = std::env::var("SPEED_ONLY") {
        let document = validate(&desired).expect("valid");
        for _ in 0..200 {
            match only.as_str() {
                "plan" => drop(std::hint::black_box(plan(
                    &document,
                    &export,
                    PlanOptions { prune: true },
                ))),
                "parse" => drop(std::hint::black_box(serde_json::from_slice::<Document>(
                    &desired,
                ))),
                "none" => {}
                _ => drop(std::hint::black_box(validate(&desired))),
            }
        }
        return;
    }
    let parses = best(|| {
        for _ in 0..2 {
            std::hint::black_box(serde_json::from_slice::<Document>(&desired).unwrap());
        }
    });
    let document = validate(&desired).expect("valid");
    let v = best(|| {
        std::hint::black_box(validate(&desired).unwrap());
    });
    let options = PlanOptions { prune: true };
    let p = best(|| {
        std::hint::black_box(plan(&document, &export, options));
    });
    let planned = plan(&document, &export, options);
    println!(
        "{} KB: two typed parses {parses:?}; validate {v:?}; plan+hash {p:?} ({} calls, {:?}); ratio {:.2}",
        desired.len() / 1024,
        planned.calls.len(),
        planned.summary,
        (v + p).as_secs_f64() / parses.as_secs_f64()
    );
}
