//! Concurrency (docs/guarantees.md, "No lost update", "Stale plans refused", "No deadlock"):
//! applies with reviewed planHashes, plans, hand edits and `fleet.check` runs, all at once,
//! against one tenant and across three, on SQLite and PostgreSQL.
//!
//! Every write that succeeds produces a revision of the object it wrote; two successes never
//! produce the same revision of one object, and each pool's final revision counts exactly the
//! successful writes of it: no write was lost or applied twice. Every request is answered
//! within a deadline with a success or an expected refusal (CONFIG_DRIFT, CONFLICT), never
//! INTERNAL. `GUARANTEES_ROUNDS` (default 3) sets the iterations per worker (times 4).

mod common;
mod guarantees_support;
mod server_support;

use guarantees_support::{Rng, figure};
use serde_json::{Value, json};
use server_support::{Db, Failure, Fleet, calls};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TENANTS: [&str; 3] = ["root", "acme", "globex"];
/// Pools per tenant document.
const POOLS: usize = 4;

/// A tenant's document: `POOLS` pools on one site each, offered to the next tenant, with
/// values drawn from `v`.
fn document(tenant: &str, v: u64) -> Value {
    let next = TENANTS[(TENANTS.iter().position(|t| *t == tenant).unwrap() + 1) % 3];
    let sites: Vec<Value> = (0..POOLS)
        .map(|i| json!({ "name": format!("{tenant}-s{i}"), "kind": "shared", "region": "eu" }))
        .collect();
    let pools: Vec<Value> = (0..POOLS)
        .map(|i| {
            let x = (v >> (i * 4)) % 9;
            json!({
                "name": format!("{tenant}-p{i}"), "site": format!("{tenant}-s{i}"),
                "class": "vps-host", "policy": { "disruptionBudget": (x + 1) as f64 / 10.0 },
                "ownerQuota": { "gpu": x },
                "offers": [{ "tenant": next, "quota": { "vcpu": 8 + x } }]
            })
        })
        .collect();
    json!({ "version": 1, "sites": sites, "pools": pools })
}

/// What the workers saw.
#[derive(Default)]
struct Log {
    /// (pool id, revision) produced by each successful write whose revision is known.
    writes: Vec<(String, u64)>,
    /// Successful writes of a pool whose revision the writer cannot know (an apply's owner
    /// quota or offer calls on a pool it did not update: a pool's revision moves with them).
    unnumbered: Vec<String>,
    /// Outcome counts by method and code ("OK" for success).
    outcomes: BTreeMap<String, usize>,
    /// Requests sent (reads and plans included).
    requests: usize,
}

impl Log {
    fn outcome(&mut self, method: &str, result: &Result<Value, Failure>) {
        self.requests += 1;
        let code = match result {
            Ok(_) => "OK",
            Err(f) => f.code.as_str(),
        };
        *self.outcomes.entry(format!("{method} {code}")).or_default() += 1;
    }
}

/// Fails on anything but success or one of `allowed`.
fn expect(method: &str, result: &Result<Value, Failure>, allowed: &[&str]) {
    if let Err(f) = result {
        assert!(
            allowed.contains(&f.code.as_str()),
            "{method}: unexpected {} {}: {}",
            f.status,
            f.code,
            f.message
        );
    }
}

/// `fleet.call` with a deadline: a request that is not answered in time is a deadlock.
async fn call(fleet: &Fleet, method: &str, input: Value) -> Result<Value, Failure> {
    match tokio::time::timeout(Duration::from_secs(60), fleet.call(method, input)).await {
        Ok(answer) => answer,
        Err(_) => panic!("{method} was not answered within 60 s"),
    }
}

async fn pools_of(fleet: &Fleet, tenant: &str) -> Vec<Value> {
    fleet.ok("pool.list", json!({ "tenantId": tenant })).await["items"]
        .as_array()
        .unwrap()
        .clone()
}

async fn applier(fleet: Arc<Fleet>, log: Arc<Mutex<Log>>, tenant: &'static str, seed: u64) {
    let mut rng = Rng::seeded(seed);
    for _ in 0..iterations() {
        let doc = document(tenant, rng.next());
        let plan = call(
            &fleet,
            "fleet.plan",
            json!({ "tenantId": tenant, "config": doc }),
        )
        .await;
        expect("fleet.plan", &plan, &[]);
        let plan = plan.unwrap();
        let result = call(
            &fleet,
            "fleet.apply",
            json!({ "tenantId": tenant, "config": doc, "planHash": plan["planHash"] }),
        )
        .await;
        // CONFIG_DRIFT: another writer moved the fleet since this plan (the point of planHash).
        expect("fleet.apply", &result, &["CONFIG_DRIFT"]);
        let mut log = log.lock().unwrap();
        log.outcome("fleet.apply", &result);
        log.requests += 1; // the plan
        if let Ok(answer) = &result {
            assert_eq!(
                answer["plan"]["planHash"], plan["planHash"],
                "an apply runs exactly the reviewed plan"
            );
            // Every call on a pool writes it: its update (first, by the call order), then its
            // owner quota and offer calls, each moving its revision by one.
            let mut next: HashMap<String, u64> = HashMap::new();
            for c in calls(&answer["plan"]) {
                let input = &c["input"];
                match c["method"].as_str().unwrap() {
                    "pool.update" => {
                        let id = input["id"].as_str().unwrap().to_string();
                        let revision = input["ifRevision"].as_u64().unwrap() + 1;
                        next.insert(id.clone(), revision);
                        log.writes.push((id, revision));
                    }
                    "pool.setOwnerQuota" | "pool.offer" | "pool.unoffer" => {
                        let id = input["poolId"].as_str().unwrap().to_string();
                        match next.get_mut(&id) {
                            Some(revision) => {
                                *revision += 1;
                                log.writes.push((id, *revision));
                            }
                            None => log.unnumbered.push(id),
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

async fn hand_editor(fleet: Arc<Fleet>, log: Arc<Mutex<Log>>, tenant: &'static str, seed: u64) {
    let mut rng = Rng::seeded(seed);
    for _ in 0..iterations() {
        let pools = pools_of(&fleet, tenant).await;
        let pool = &pools[rng.below(pools.len() as u64) as usize];
        // Another value than the one read: a write of the same one changes nothing (no
        // revision moves), and every write that succeeds is against what was read.
        let now = pool["policy"]["disruptionBudget"].as_f64();
        let mut budget = (rng.below(9) + 1) as f64 / 10.0;
        if now == Some(budget) {
            budget = if budget < 0.5 {
                budget + 0.1
            } else {
                budget - 0.1
            };
        }
        let result = call(
            &fleet,
            "pool.update",
            json!({
                "tenantId": tenant, "id": pool["id"], "ifRevision": pool["revision"],
                "policy": { "disruptionBudget": budget }
            }),
        )
        .await;
        // CONFLICT: the pool moved between the read and the write.
        expect("pool.update", &result, &["CONFLICT"]);
        let mut log = log.lock().unwrap();
        log.outcome("pool.update", &result);
        log.requests += 1; // the list
        if let Ok(pool) = &result {
            let revision = pool["revision"].as_u64().unwrap();
            log.writes
                .push((pool["id"].as_str().unwrap().to_string(), revision));
        }
    }
}

async fn reader(fleet: Arc<Fleet>, log: Arc<Mutex<Log>>, tenant: &'static str, seed: u64) {
    let mut rng = Rng::seeded(seed);
    for i in 0..iterations() {
        let (method, input) = match i % 3 {
            0 => ("fleet.check", json!({ "tenantId": tenant })),
            1 => (
                "fleet.plan",
                json!({ "tenantId": tenant, "config": document(tenant, rng.next()) }),
            ),
            _ => ("fleet.export", json!({ "tenantId": tenant })),
        };
        let result = call(&fleet, method, input).await;
        expect(method, &result, &[]);
        log.lock().unwrap().outcome(method, &result);
    }
}

fn iterations() -> usize {
    guarantees_support::rounds(3) * 4
}

async fn concurrent_writers_lose_nothing(db: Db) {
    // Its own database, dropped at the end (after the server, declared later, is killed).
    let database = guarantees_support::Database::fresh(db).await;
    let fleet = Arc::new(Fleet::start_on(
        &database.url,
        &["--drift-every", "1s"],
        &[],
    ));
    for t in ["acme", "globex"] {
        fleet.ok("tenant.create", json!({ "id": t })).await;
    }
    for t in TENANTS {
        fleet
            .ok(
                "fleet.apply",
                json!({ "tenantId": t, "config": document(t, 0) }),
            )
            .await;
    }
    let mut initial = BTreeMap::new();
    for t in TENANTS {
        for p in pools_of(&fleet, t).await {
            initial.insert(
                p["id"].as_str().unwrap().to_string(),
                p["revision"].as_u64().unwrap(),
            );
        }
    }

    // A stale planHash is refused, deterministically: plan, hand edit, apply the plan.
    let doc = document("root", 0x5555_5555);
    let plan = fleet
        .ok("fleet.plan", json!({ "tenantId": "root", "config": doc }))
        .await;
    let pool = &pools_of(&fleet, "root").await[0];
    let edited = fleet
        .ok(
            "pool.update",
            json!({ "tenantId": "root", "id": pool["id"], "ifRevision": pool["revision"], "policy": null }),
        )
        .await;
    let log = Arc::new(Mutex::new(Log::default()));
    log.lock().unwrap().writes.push((
        edited["id"].as_str().unwrap().to_string(),
        edited["revision"].as_u64().unwrap(),
    ));
    let export_before = fleet
        .ok("fleet.export", json!({ "tenantId": "root" }))
        .await;
    let stale = fleet
        .fails(
            "fleet.apply",
            json!({ "tenantId": "root", "config": doc, "planHash": plan["planHash"] }),
            "CONFIG_DRIFT",
        )
        .await;
    assert_eq!(stale.status, 409);
    assert_eq!(stale.details["expected"], plan["planHash"]);
    assert_eq!(
        fleet
            .ok("fleet.export", json!({ "tenantId": "root" }))
            .await,
        export_before,
        "a refused apply changes nothing"
    );

    let mut rng = Rng::new("concurrency");
    let mut tasks = tokio::task::JoinSet::new();
    for t in TENANTS {
        for _ in 0..2 {
            tasks.spawn(applier(fleet.clone(), log.clone(), t, rng.next()));
        }
        tasks.spawn(hand_editor(fleet.clone(), log.clone(), t, rng.next()));
        tasks.spawn(reader(fleet.clone(), log.clone(), t, rng.next()));
    }
    tasks.spawn(hand_editor(fleet.clone(), log.clone(), "root", rng.next()));
    let all = async {
        while let Some(done) = tasks.join_next().await {
            done.expect("a worker failed");
        }
    };
    tokio::time::timeout(Duration::from_secs(300), all)
        .await
        .expect("every worker finished within 300 s (no deadlock)");

    // Every worker is done: take what they saw.
    let log = std::mem::take(&mut *log.lock().unwrap());
    eprintln!("outcomes: {:?}", log.outcomes);
    // Two successful writes never produced the same revision of one pool...
    let mut seen = HashSet::new();
    for w in &log.writes {
        assert!(
            seen.insert(w.clone()),
            "two writes produced {w:?}: a lost update"
        );
    }
    // ...and each pool's revision counts exactly the successful writes of it.
    for t in TENANTS {
        for p in pools_of(&fleet, t).await {
            let id = p["id"].as_str().unwrap();
            let writes = log.writes.iter().filter(|(w, _)| w == id).count() as u64
                + log.unnumbered.iter().filter(|w| *w == id).count() as u64;
            assert_eq!(
                p["revision"].as_u64().unwrap(),
                initial[id] + writes,
                "pool {id}: every successful write counted once"
            );
            // And the last write is the state: its revision is the highest one produced.
            let last = log
                .writes
                .iter()
                .filter(|(w, _)| w == id)
                .map(|w| w.1)
                .max();
            let unnumbered = log.unnumbered.iter().any(|w| w == id);
            let (last, now) = (last.unwrap_or(initial[id]), p["revision"].as_u64().unwrap());
            assert!(
                last == now || (unnumbered && last < now),
                "pool {id}: the last numbered write {last}, the pool at {now}"
            );
        }
    }
    // Tenants stay apart: each tenant's export names only its own objects.
    for t in TENANTS {
        let export = fleet.ok("fleet.export", json!({ "tenantId": t })).await;
        for o in export["objects"].as_array().unwrap() {
            let name = o["name"].as_str().unwrap();
            assert!(
                name.starts_with(&format!("{t}-")),
                "{t}'s export has {name}"
            );
        }
    }
    let applied = log.outcomes.get("fleet.apply OK").copied().unwrap_or(0);
    assert!(applied > 0, "some applies succeeded: {:?}", log.outcomes);
    let label = format!("{db:?}").to_lowercase();
    figure(&format!("concurrency.{label}.requests"), log.requests);
    figure(&format!("concurrency.{label}.applies"), applied);
    figure(
        &format!("concurrency.{label}.drift_refused"),
        log.outcomes
            .get("fleet.apply CONFIG_DRIFT")
            .copied()
            .unwrap_or(0),
    );
    figure(
        &format!("concurrency.{label}.conflicts"),
        log.outcomes
            .get("pool.update CONFLICT")
            .copied()
            .unwrap_or(0),
    );
    figure(&format!("concurrency.{label}.writes"), log.writes.len());
}
both!(concurrency, concurrent_writers_lose_nothing);

/// A template of one tenant on another's pool, while the owner unoffers the pool: one of
/// the two wins, and the fleet stays whole (a template only on a pool offered to its tenant).
/// On PostgreSQL, before the row locks (docs/server.md, "Across tenants"), both answered 200
/// and the template was left on the unoffered pool.
async fn a_template_racing_an_unoffer_never_outlives_the_offer(db: Db) {
    let fleet = Arc::new(Fleet::start(db, &[]).await);
    for tenant in ["owner", "acme"] {
        fleet.ok("tenant.create", json!({ "id": tenant })).await;
    }
    // Many pools after P: the owner's apply is long, and the template arrives in the middle.
    let doc = |offered: bool, extra: usize| {
        let offers = if offered {
            json!([{ "tenant": "acme", "quota": { "vcpu": 1 } }])
        } else {
            json!([])
        };
        let mut pools =
            vec![json!({ "name": "p", "site": "s", "class": "vps-host", "offers": offers })];
        pools.extend(
            (0..extra)
                .map(|i| json!({ "name": format!("e{i}"), "site": "s", "class": "vps-host" })),
        );
        json!({
            "version": 1,
            "sites": [{ "name": "s", "kind": "shared", "region": "eu" }],
            "pools": pools,
            "flavors": [{ "pool": "p", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }],
        })
    };
    fleet
        .ok(
            "fleet.apply",
            json!({ "tenantId": "owner", "config": doc(true, 999), "prune": true }),
        )
        .await;
    let export = fleet
        .ok("fleet.export", json!({ "tenantId": "owner" }))
        .await;
    let pool = server_support::exported(&export, "pool", "p")["id"].clone();
    let unoffer = {
        let fleet = fleet.clone();
        let doc = doc(false, 0);
        tokio::spawn(async move {
            call(
                &fleet,
                "fleet.apply",
                json!({ "tenantId": "owner", "config": doc, "prune": true }),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let template = call(
        &fleet,
        "fleet.apply",
        json!({ "tenantId": "acme", "config": { "version": 1, "sandboxTemplates": [{
            "name": "racer", "pool": pool, "flavor": "f", "imageId": "i", "network": "none" }] } }),
    )
    .await;
    let unoffer = unoffer.await.unwrap();
    expect(
        "fleet.apply (template)",
        &template,
        &["NOT_FOUND", "PLAN_BLOCKED"],
    );
    expect("fleet.apply (unoffer)", &unoffer, &["CONFLICT"]);
    assert!(
        !(template.is_ok() && unoffer.is_ok()),
        "both applies answered 200: the template and the unoffer"
    );
    let offers = fleet
        .ok("pool.get", json!({ "tenantId": "owner", "id": pool }))
        .await["offers"]
        .as_array()
        .unwrap()
        .len();
    let templates = fleet
        .ok("sandboxTemplate.list", json!({ "tenantId": "acme" }))
        .await["items"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        templates == 0 || offers == 1,
        "a template on an unoffered pool"
    );
}
both!(
    cross_tenant_race,
    a_template_racing_an_unoffer_never_outlives_the_offer
);
