//! Properties of the planner over generated valid documents and fleets (proptest):
//! - applying a plan's calls to the fleet converges: the export then holds the document and a
//!   re-plan has no calls and nothing to create, update or delete;
//! - planning is deterministic;
//! - a fleet that already matches plans to no calls and the planHash of the empty list;
//! - a plan made before a hand edit of an object it touches conflicts and changes nothing;
//! - validate never panics, whatever the bytes, and accepts what a valid document serializes to;
//! - every path of a JSON text locates the value it names (`planner::locate`).
#![cfg(not(target_arch = "wasm32"))]

use planner::calls::{Call, PoolUpdate};
use planner::document::{
    Flavor, Network, Offer, Policy, Pool, PoolClass, ProviderAccount, SandboxTemplate, Site,
    SiteKind, Warm,
};
use planner::fleet::{FleetError, Modules};
use planner::{Document, Export, Fleet, Kind, Plan, PlanOptions, Text, plan, plan_hash, validate};
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;

const TENANT: &str = "root";
const CALLER: &str = "usr_ops";
const TENANTS: [&str; 2] = ["acme", "globex"];
const SITES: [&str; 3] = ["ams", "ber", "fra"];
const ACCOUNTS: [&str; 2] = ["cloud", "metal"];
const POOLS: [&str; 4] = ["burst", "gpu-a", "vps-ber", "vps-fra"];
const FLAVORS: [&str; 3] = ["c2.xl", "g1.large", "g1.small"];
const TEMPLATES: [&str; 3] = ["go", "node", "py-small"];
const RESOURCES: [&str; 3] = ["gpu", "memory", "vcpu"];

/// Random choices read one at a time, so a document is built by plain code and still shrinks
/// (proptest shrinks each number toward 0, the first option).
struct Tape<'a> {
    values: &'a [u32],
    at: usize,
}

impl Tape<'_> {
    fn next(&mut self, n: u32) -> u32 {
        let v = self.values.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v % n
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.next(100) < percent
    }
    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[self.next(from.len() as u32) as usize]
    }
    /// A subset of `from`, in its order.
    fn subset<'s>(&mut self, from: &[&'s str], percent: u32) -> Vec<&'s str> {
        from.iter()
            .copied()
            .filter(|_| self.chance(percent))
            .collect()
    }
}

/// The fixed fields of a pool follow from its name, so that two generated documents never
/// disagree about them (that would be a blocked plan, tested elsewhere).
fn pool_fixed(
    name: &str,
) -> (
    &'static str,
    PoolClass,
    Option<&'static str>,
    Option<&'static str>,
) {
    match name {
        "burst" => ("fra", PoolClass::Provider, None, Some("cloud")),
        "gpu-a" => ("ams", PoolClass::VpsHost, Some("L40S"), None),
        "vps-ber" => ("ber", PoolClass::SandboxHost, None, None),
        _ => ("fra", PoolClass::VpsHost, None, None),
    }
}

fn quota(tape: &mut Tape) -> planner::Map<Text<'static>, u64> {
    tape.subset(&RESOURCES, 50)
        .into_iter()
        .map(|r| (Text::from(r.to_string()), u64::from(tape.next(5)) * 8))
        .collect()
}

/// A valid, self-contained document: every reference names an item of the same document.
fn document(tape: &mut Tape) -> Document<'static> {
    let listed = |tape: &mut Tape| tape.chance(85);
    let sites = all_sites();

    let accounts: Option<Vec<ProviderAccount>> = listed(tape).then(|| {
        tape.subset(&ACCOUNTS, 70)
            .into_iter()
            .map(|name| {
                let mut config = planner::Map::new();
                config.insert(
                    "token".into(),
                    ["secret://hetzner", "vault://kv/cloud", "env://CLOUD_TOKEN"]
                        [tape.next(3) as usize]
                        .into(),
                );
                if tape.chance(50) {
                    config.insert("location".into(), tape.pick(&["fsn1", "nbg1"]).into());
                }
                ProviderAccount {
                    name: name.into(),
                    provider: format!("{name}-provider").into(),
                    config,
                }
            })
            .collect()
    });
    let has_account = |name: &str| accounts.iter().flatten().any(|a| a.name == name);

    let pools: Option<Vec<Pool>> = listed(tape).then(|| {
        tape.subset(&POOLS, 70)
            .into_iter()
            .filter(|name| pool_fixed(name).3.is_none_or(has_account))
            .map(|name| {
                let (site, class, gpu_model, account) = pool_fixed(name);
                Pool {
                    name: name.into(),
                    site: site.into(),
                    class,
                    gpu_model: gpu_model.map(Into::into),
                    provider_account: account.map(Into::into),
                    policy: tape.chance(60).then(|| Policy {
                        disruption_budget: [0.0, 0.1, 0.25, 1.0][tape.next(4) as usize],
                    }),
                    owner_quota: tape.chance(70).then(|| quota(tape)),
                    offers: tape.chance(70).then(|| {
                        tape.subset(&TENANTS, 50)
                            .into_iter()
                            .map(|tenant| Offer {
                                tenant: tenant.into(),
                                quota: quota(tape),
                                priority: tape.chance(50).then(|| i64::from(tape.next(11)) - 5),
                            })
                            .collect()
                    }),
                }
            })
            .collect()
    });
    let pool_names: Vec<&str> = pools.iter().flatten().map(|p| p.name.as_str()).collect();

    let flavors: Option<Vec<Flavor>> = (pools.is_some() && listed(tape)).then(|| {
        let mut out = Vec::new();
        for pool in &pool_names {
            for name in tape.subset(&FLAVORS, 50) {
                out.push(Flavor {
                    pool: pool.to_string().into(),
                    name: name.into(),
                    vcpu: 1 + tape.next(8),
                    memory_gib: 1 + tape.next(16),
                    disk_gib: tape.next(3) * 40,
                    gpu: tape.chance(30).then(|| tape.next(3)),
                });
            }
        }
        out
    });

    let templates: Option<Vec<SandboxTemplate>> = (flavors.is_some() && listed(tape)).then(|| {
        let mut out = Vec::new();
        for (i, name) in TEMPLATES.iter().enumerate() {
            // A template's pool is fixed: it follows from its name.
            let pool = ["vps-fra", "gpu-a", "vps-ber"][i];
            let of_pool: Vec<&str> = flavors
                .iter()
                .flatten()
                .filter(|f| f.pool == pool)
                .map(|f| f.name.as_str())
                .collect();
            if of_pool.is_empty() || !tape.chance(70) {
                continue;
            }
            out.push(SandboxTemplate {
                name: (*name).into(),
                pool: pool.into(),
                flavor: tape.pick(&of_pool).to_string().into(),
                image_id: tape.pick(&["ubuntu-24.04", "debian-13"]).into(),
                env: tape.chance(50).then(|| {
                    let mut env = planner::Map::new();
                    env.insert("PIP_INDEX_URL".into(), "secret://root/pip".into());
                    if tape.chance(50) {
                        env.insert("MODE".into(), tape.pick(&["fast", "safe"]).into());
                    }
                    env
                }),
                network: [Network::Private, Network::Public, Network::None][tape.next(3) as usize],
                warm: tape.chance(50).then(|| {
                    let min = tape.next(3);
                    Warm {
                        min,
                        max: min + tape.next(3),
                    }
                }),
            });
        }
        out
    });

    Document {
        version: 1,
        sites: listed(tape).then_some(sites),
        provider_accounts: accounts,
        pools,
        flavors,
        sandbox_templates: templates,
    }
}

/// Every site, with fixed fields that depend on its name only.
fn all_sites() -> Vec<Site<'static>> {
    SITES
        .iter()
        .map(|&name| Site {
            name: name.into(),
            kind: if name == "ber" {
                SiteKind::Dedicated
            } else {
                SiteKind::Shared
            },
            region: format!("eu-{name}").into(),
        })
        .collect()
}

/// The fleet another document describes, as fleet would have created it. It always has every
/// site, so a document without `sites` may name them as objects fleet already manages.
fn fleet_of(document: &Document) -> Fleet {
    let tenants = TENANTS.iter().map(|t| t.to_string());
    let mut document = document.clone();
    document.sites = Some(all_sites());
    Fleet::from_document(TENANT, CALLER, Modules::default(), tenants, &document)
        .expect("a generated document builds a fleet")
}

fn tape() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(any::<u32>(), 160)
}

fn assert_converged(again: &Plan) {
    assert!(
        again.calls.is_empty(),
        "re-plan still has calls: {:#?}",
        again.calls
    );
    let s = again.summary;
    assert_eq!(
        (s.create, s.update, s.delete),
        (0, 0, 0),
        "{:#?}",
        again.changes
    );
    assert_eq!(again.plan_hash, plan_hash(&[]));
}

/// Plan names of a kind's items, as a sorted map to the item's JSON.
fn by_name<T: serde::Serialize>(
    items: &[T],
    name: impl Fn(&T) -> String,
) -> BTreeMap<String, Value> {
    items
        .iter()
        .map(|i| (name(i), serde_json::to_value(i).unwrap()))
        .collect()
}

/// The export holds every item of the document as the document says; with prune, nothing
/// else of the kinds the document lists. Absent owner quotas and offers are left alone.
fn assert_export_holds(export: &Export, document: &Document, prune: bool) {
    let config = &export.config;
    let check = |kind: &str, want: BTreeMap<String, Value>, have: BTreeMap<String, Value>| {
        if prune {
            assert_eq!(want, have, "{kind} after apply");
        } else {
            for (name, item) in &want {
                assert_eq!(Some(item), have.get(name), "{kind} {name} after apply");
            }
        }
    };
    if let Some(sites) = &document.sites {
        let have = config.sites.as_deref().unwrap_or_default();
        check(
            "site",
            by_name(sites, |s| s.name.to_string()),
            by_name(have, |s| s.name.to_string()),
        );
    }
    if let Some(accounts) = &document.provider_accounts {
        let have = config.provider_accounts.as_deref().unwrap_or_default();
        check(
            "providerAccount",
            by_name(accounts, |a| a.name.to_string()),
            by_name(have, |a| a.name.to_string()),
        );
    }
    if let Some(pools) = &document.pools {
        let have = config.pools.as_deref().unwrap_or_default();
        let mut want = pools.clone();
        for pool in &mut want {
            let current = have.iter().find(|p| p.name == pool.name);
            match (&pool.owner_quota, current) {
                (None, Some(c)) => pool.owner_quota = c.owner_quota.clone(),
                (Some(q), Some(c)) if !prune => {
                    // Without prune, entries the document leaves out stay.
                    let mut all = c.owner_quota.clone().unwrap_or_default();
                    all.extend(q.clone());
                    pool.owner_quota = Some(all);
                }
                _ => {}
            }
            match (&pool.offers, current) {
                (None, Some(c)) => pool.offers = c.offers.clone(),
                (Some(offers), Some(c)) if !prune => {
                    let mut all: BTreeMap<Text, Offer> = c
                        .offers
                        .iter()
                        .flatten()
                        .map(|o| (o.tenant.clone(), o.clone()))
                        .collect();
                    all.extend(offers.iter().map(|o| (o.tenant.clone(), o.clone())));
                    pool.offers = Some(all.into_values().collect());
                }
                _ => {}
            }
            if let Some(offers) = &mut pool.offers {
                offers.sort_by(|a, b| a.tenant.cmp(&b.tenant));
            }
            pool.owner_quota.get_or_insert_default();
            pool.offers.get_or_insert_default();
        }
        check(
            "pool",
            by_name(&want, |p| p.name.to_string()),
            by_name(have, |p| p.name.to_string()),
        );
    }
    if let Some(flavors) = &document.flavors {
        let have = config.flavors.as_deref().unwrap_or_default();
        let name = |f: &Flavor| format!("{}/{}", f.pool, f.name);
        check("flavor", by_name(flavors, name), by_name(have, name));
    }
    if let Some(templates) = &document.sandbox_templates {
        let have = config.sandbox_templates.as_deref().unwrap_or_default();
        check(
            "sandboxTemplate",
            by_name(templates, |t| t.name.to_string()),
            by_name(have, |t| t.name.to_string()),
        );
    }
}

/// A JSON scalar of any kind.
fn leaf() -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ]
}

/// Arbitrary JSON, up to a few levels deep, with keys the document uses among random ones.
fn json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("version".to_string()),
        Just("pools".to_string()),
        Just("name".to_string()),
        Just("offers".to_string()),
        Just("quota".to_string()),
        "[a-zA-Z]{0,8}",
    ];
    leaf().prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Arbitrary JSON whose objects keep their members in generated order (any unicode keys,
/// repeats dropped), so canonical ordering has work to do.
fn unordered_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((".{0,4}", inner), 0..8)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// `document` with some of its references, and some of its items' names, replaced by the ids
/// of the objects they name in `export` (a document may name any existing object by its id).
fn by_ids(document: &mut Document<'_>, export: &Export, tape: &mut Tape) {
    let id = |kind: Kind, name: &str| {
        export
            .objects
            .iter()
            .find(|o| o.kind == kind && o.name == name)
            .and_then(|o| o.id.clone())
    };
    let swap = |tape: &mut Tape, kind: Kind, name: &mut Text<'_>, percent: u32| {
        if tape.chance(percent)
            && let Some(id) = id(kind, name)
        {
            *name = id.to_string().into();
        }
    };
    for s in document.sites.iter_mut().flatten() {
        swap(tape, Kind::Site, &mut s.name, 20);
    }
    for a in document.provider_accounts.iter_mut().flatten() {
        swap(tape, Kind::ProviderAccount, &mut a.name, 20);
    }
    for p in document.pools.iter_mut().flatten() {
        swap(tape, Kind::Site, &mut p.site, 50);
        if let Some(account) = &mut p.provider_account {
            swap(tape, Kind::ProviderAccount, account, 50);
        }
    }
    for f in document.flavors.iter_mut().flatten() {
        swap(tape, Kind::Pool, &mut f.pool, 50);
    }
    for t in document.sandbox_templates.iter_mut().flatten() {
        swap(tape, Kind::Pool, &mut t.pool, 50);
        swap(tape, Kind::SandboxTemplate, &mut t.name, 20);
    }
    // Pools last: the references above name them by their names.
    for p in document.pools.iter_mut().flatten() {
        swap(tape, Kind::Pool, &mut p.name, 20);
    }
    // Now and then an item listed twice, by its name and by its id: a plan must not change
    // one object twice (such a plan is blocked).
    if tape.chance(30)
        && let Some(sites) = &mut document.sites
        && let Some(mut copy) = sites.first().cloned()
    {
        swap(tape, Kind::Site, &mut copy.name, 100);
        sites.push(copy);
    }
    if tape.chance(30)
        && let Some(flavors) = &mut document.flavors
        && let Some(mut copy) = flavors.first().cloned()
    {
        swap(tape, Kind::Pool, &mut copy.pool, 100);
        flavors.push(copy);
    }
}

/// Every node of `value` with its path, written as problems' paths are.
fn paths(value: &Value, path: &mut String, out: &mut Vec<(String, Value)>) {
    out.push((path.clone(), value.clone()));
    let len = path.len();
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                planner::validate::push_key(path, key);
                paths(member, path, out);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push_str(&format!("[{index}]"));
                paths(item, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

proptest! {
    // Failures print their minimal case; generated seeds are not kept in files.
    #![proptest_config(ProptestConfig {
        cases: 256,
        max_global_rejects: 4096,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_path_locates_its_value(value in unordered_json(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&value)
        } else {
            serde_json::to_string(&value)
        }
        .expect("JSON values serialize");
        let mut all = Vec::new();
        paths(&value, &mut String::new(), &mut all);
        for (path, node) in all {
            let at = planner::locate::locate(&text, &path);
            prop_assert!(at.is_some(), "{} not found in {}", path, text);
            let at = at.expect("checked");
            let found: Value = serde_json::from_str(&text[at.start..at.end]).expect("a value");
            prop_assert_eq!(found, node, "{}", path);
            let before = &text[..at.start];
            prop_assert_eq!(at.line, before.matches('\n').count() + 1);
        }
    }

    #[test]
    fn canonical_json_from_serialize_equals_it_from_a_value(value in unordered_json()) {
        let direct = planner::canonical::to_canonical(&value).expect("JSON values serialize");
        prop_assert_eq!(direct, planner::canonicalize(&value));
    }

    #[test]
    fn applying_a_plan_converges(desired in tape(), current in tape(), prune in any::<bool>()) {
        let desired = document(&mut Tape { values: &desired, at: 0 });
        let mut fleet = fleet_of(&document(&mut Tape { values: &current, at: 0 }));
        let options = PlanOptions { prune };
        let first = plan(&desired, &fleet.export(), options);
        prop_assume!(!first.is_blocked());
        if let Err((i, error)) = fleet.apply_all(&first.calls) {
            panic!("call {i} ({:?}) failed: {error}", first.calls[i]);
        }
        let export = fleet.export();
        assert_export_holds(&export, &desired, prune);
        assert_converged(&plan(&desired, &export, options));
    }

    /// Naming existing objects by their ids, in references and as items' own names, plans
    /// calls that all succeed (or a blocked plan) and converges.
    #[test]
    fn documents_naming_objects_by_id_converge(
        desired in tape(),
        current in tape(),
        swaps in tape(),
        prune in any::<bool>(),
    ) {
        let mut desired = document(&mut Tape { values: &desired, at: 0 });
        let mut fleet = fleet_of(&document(&mut Tape { values: &current, at: 0 }));
        by_ids(&mut desired, &fleet.export(), &mut Tape { values: &swaps, at: 0 });
        let options = PlanOptions { prune };
        let first = plan(&desired, &fleet.export(), options);
        prop_assume!(!first.is_blocked());
        if let Err((i, error)) = fleet.apply_all(&first.calls) {
            panic!("call {i} ({:?}) failed: {error}", first.calls[i]);
        }
        assert_converged(&plan(&desired, &fleet.export(), options));
    }

    #[test]
    fn planning_is_deterministic(desired in tape(), current in tape(), prune in any::<bool>()) {
        let desired = document(&mut Tape { values: &desired, at: 0 });
        let export = fleet_of(&document(&mut Tape { values: &current, at: 0 })).export();
        let options = PlanOptions { prune };
        let first = plan(&desired, &export, options);
        // The same inputs again, and through their JSON, as the browser receives them.
        let export_json = serde_json::to_vec(&export).unwrap();
        let export_again = Export::from_json(&export_json).unwrap();
        let desired_json = serde_json::to_vec(&desired).unwrap();
        let desired_again = validate(&desired_json).unwrap();
        let second = plan(&desired_again, &export_again, options);
        prop_assert_eq!(&first, &second);
        prop_assert_eq!(&first.plan_hash, &plan_hash(&first.calls));
        prop_assert_eq!(
            serde_json::to_string(&first).unwrap(),
            serde_json::to_string(&second).unwrap()
        );
    }

    #[test]
    fn an_unchanged_fleet_plans_no_calls(tape in tape(), prune in any::<bool>()) {
        let document = document(&mut Tape { values: &tape, at: 0 });
        let export = fleet_of(&document).export();
        let planned = plan(&document, &export, PlanOptions { prune });
        prop_assert!(!planned.is_blocked(), "{:#?}", planned.changes);
        assert_converged(&planned);
        // Exporting and planning the export with prune changes nothing either.
        assert_converged(&plan(&export.config, &export, PlanOptions { prune: true }));
    }

    #[test]
    fn a_valid_document_validates_to_itself(tape in tape()) {
        let document = document(&mut Tape { values: &tape, at: 0 });
        let bytes = serde_json::to_vec_pretty(&document).unwrap();
        prop_assert_eq!(validate(&bytes), Ok(document));
    }

    #[test]
    fn a_plan_made_before_a_hand_edit_conflicts_then_a_new_plan_converges(
        desired in tape(),
        current in tape(),
    ) {
        let desired = document(&mut Tape { values: &desired, at: 0 });
        let mut fleet = fleet_of(&document(&mut Tape { values: &current, at: 0 }));
        let options = PlanOptions { prune: true };
        let export = fleet.export();
        let stale = plan(&desired, &export, options);
        prop_assume!(!stale.is_blocked());
        // A pool the plan updates or archives, edited by hand meanwhile (another policy: a
        // write of the same one moves nothing, as on the server).
        let target = stale.calls.iter().find_map(|call| match call {
            Call::PoolUpdate(i) => Some(i.id.clone()),
            Call::PoolArchive(i) => Some(i.id.clone()),
            _ => None,
        });
        prop_assume!(target.is_some());
        let id = target.unwrap();
        let object = export.objects.iter().find(|o| o.id.as_deref() == Some(&id)).unwrap();
        let now = export.config.pools.iter().flatten().find(|p| p.name == object.name)
            .and_then(|p| p.policy.as_ref().map(|p| p.disruption_budget));
        let policy = Some(Policy { disruption_budget: if now == Some(0.5) { 0.25 } else { 0.5 } });
        let hand_edit = Call::PoolUpdate(PoolUpdate {
            tenant_id: TENANT.into(),
            id: id.clone(),
            if_revision: object.revision,
            policy,
        });
        fleet.apply(&hand_edit).unwrap();

        let before = fleet.clone();
        match fleet.apply_all(&stale.calls) {
            Err((_, FleetError::Conflict { object, .. })) => {
                prop_assert_eq!(object, format!("pool {id}"));
            }
            other => panic!("a stale plan must conflict, got {other:?}"),
        }
        prop_assert_eq!(&fleet, &before, "a failed apply changes nothing");

        let fresh = plan(&desired, &fleet.export(), options);
        prop_assert_ne!(&fresh.plan_hash, &stale.plan_hash, "the planHash moved with the fleet");
        fleet.apply_all(&fresh.calls).unwrap();
        assert_converged(&plan(&desired, &fleet.export(), options));
    }

    #[test]
    fn validate_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Err(invalid) = validate(&bytes) {
            prop_assert!(!invalid.problems.is_empty());
        }
    }

    #[test]
    fn validate_never_panics_on_json(value in json()) {
        if let Err(invalid) = validate(&serde_json::to_vec(&value).unwrap()) {
            prop_assert!(!invalid.problems.is_empty());
        }
    }

    #[test]
    fn planning_never_panics_on_damaged_exports(
        desired in tape(),
        current in tape(),
        damage in prop::collection::vec(any::<u32>(), 1..12),
        prune in any::<bool>(),
    ) {
        // An export no server writes (hand-edited, truncated, from another tenant): objects
        // lost, renamed or retyped, ids dropped or swapped, config items gone. The plan must
        // still come out (it may well be blocked), never a panic.
        let mut desired = document(&mut Tape { values: &desired, at: 0 });
        let mut export = fleet_of(&document(&mut Tape { values: &current, at: 0 })).export();
        for d in damage {
            let n = export.objects.len();
            let at = (d >> 4) as usize % n.max(1);
            let other = (d >> 12) as usize % n.max(1);
            // Some document items name exported objects by id (what `fleet` allows).
            let id = export.objects.get(other).and_then(|o| o.id.clone());
            match d % 14 {
                10 | 11 if id.is_some() => {
                    if let Some(site) = desired.sites.as_mut().and_then(|s| s.last_mut()) {
                        site.name = id.unwrap_or_default();
                    }
                }
                12 | 13 if id.is_some() => {
                    if let Some(pool) = desired.pools.as_mut().and_then(|p| p.last_mut()) {
                        pool.name = id.unwrap_or_default();
                    }
                }
                0 if n > 0 => { export.objects.remove(at); }
                1 if n > 0 => export.objects[at].id = None,
                2 if n > 0 => export.objects[at].kind = planner::Kind::ALL[(d >> 20) as usize % 7],
                3 if n > 0 => export.objects[at].name = export.objects[other].name.clone(),
                4 if n > 0 => export.objects[at].id = export.objects[other].id.clone(),
                5 if n > 0 => {
                    let id = export.objects[other].id.clone().unwrap_or_default();
                    export.objects[at].name = id;
                }
                6 | 10 => { export.config.pools.get_or_insert_default().pop(); }
                7 | 11 => { export.config.sites.get_or_insert_default().pop(); }
                8 | 12 => { export.config.flavors.get_or_insert_default().pop(); }
                _ => { export.config.provider_accounts.get_or_insert_default().pop(); }
            }
        }
        let planned = plan(&desired, &export, PlanOptions { prune });
        prop_assert_eq!(&planned.plan_hash, &plan_hash(&planned.calls));
    }

    #[test]
    fn validate_never_panics_on_damaged_documents(
        tape in tape(),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        // A valid document with a few bytes changed: near misses reach the deepest rules.
        let document = document(&mut Tape { values: &tape, at: 0 });
        let mut bytes = serde_json::to_vec(&document).unwrap();
        for (at, byte) in cuts {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if let Err(invalid) = validate(&bytes) {
            prop_assert!(!invalid.problems.is_empty());
        }
    }
}

#[test]
fn the_empty_call_list_has_the_known_hash() {
    assert_eq!(
        plan_hash(&[]).to_string(),
        "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
    );
}

/// The convergence property is only as good as the plans it sees: most generated pairs must
/// plan unblocked with calls to make, including deletes with prune.
#[test]
fn the_generator_makes_plans_worth_testing() {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut tape = || -> Vec<u32> {
        (0..160)
            .map(|_| {
                // xorshift64*: a fixed sequence, the same on every run.
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
            })
            .collect()
    };
    let (mut useful, mut deletes, runs) = (0, 0, 200);
    for i in 0..runs {
        let desired = document(&mut Tape {
            values: &tape(),
            at: 0,
        });
        let export = fleet_of(&document(&mut Tape {
            values: &tape(),
            at: 0,
        }))
        .export();
        let prune = i % 2 == 0;
        let planned = plan(&desired, &export, PlanOptions { prune });
        if !planned.is_blocked() && !planned.calls.is_empty() {
            useful += 1;
            deletes += usize::from(planned.summary.delete > 0);
        }
    }
    assert!(
        useful * 2 > runs,
        "only {useful} of {runs} plans are unblocked with calls"
    );
    assert!(
        deletes * 5 > runs,
        "only {deletes} of {runs} plans delete something"
    );
}
