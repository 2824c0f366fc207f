//! One test per plan rule: `check(document, export, options, expect)` where `expect` lists
//! every change that does something as `kind name action[ blocked: note]`.

use super::*;
use crate::export::{ObjectRef, Section};
use crate::ids;
use crate::validate::validate;

const FLEET: &str = r#"{
  "version": 1,
  "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
  "providerAccounts": [{ "name": "cloud", "provider": "hetzner-cloud", "config": { "token": "secret://h" } }],
  "pools": [
    { "name": "vps-fra", "site": "fra", "class": "vps-host", "gpuModel": "L40S",
      "policy": { "disruptionBudget": 0.1 }, "ownerQuota": { "gpu": 8 },
      "offers": [{ "tenant": "acme", "quota": { "vcpu": 64 } }] },
    { "name": "burst", "site": "fra", "class": "provider", "providerAccount": "cloud",
      "ownerQuota": {}, "offers": [] }
  ],
  "flavors": [{ "pool": "vps-fra", "name": "g1.small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }],
  "sandboxTemplates": [{ "name": "py-small", "pool": "vps-fra", "flavor": "g1.small",
      "imageId": "ubuntu-24.04", "network": "private" }]
}"#;

fn doc(json: &str) -> Document<'_> {
    validate(json.as_bytes()).unwrap_or_else(|e| panic!("{e:#?}"))
}

/// An export of `config`, every item with id `<prefix>x<name>` (sites and pools named by
/// fleet) and revision 7.
fn export<'a>(config: &'a str, missing: &[Section]) -> Export<'a> {
    let config = doc(config);
    let mut objects = Vec::new();
    let mut add = |kind: Kind, name: String| {
        let id = ids::prefix(kind).map(|p| format!("{p}x{}", name.replace(['/', ':'], "")));
        objects.push(ObjectRef {
            kind,
            name: name.into(),
            id: id.map(Into::into),
            revision: 7,
            used_by: None,
        });
    };
    for s in config.sites.iter().flatten() {
        add(Kind::Site, s.name.to_string());
    }
    for a in config.provider_accounts.iter().flatten() {
        add(Kind::ProviderAccount, a.name.to_string());
    }
    for p in config.pools.iter().flatten() {
        add(Kind::Pool, p.name.to_string());
        for r in p.owner_quota.iter().flatten() {
            add(Kind::OwnerQuota, format!("{}:{}", p.name, r.0));
        }
        for o in p.offers.iter().flatten() {
            add(Kind::Offer, format!("{} -> {}", p.name, o.tenant));
        }
    }
    for f in config.flavors.iter().flatten() {
        add(Kind::Flavor, format!("{}/{}", f.pool, f.name));
    }
    for t in config.sandbox_templates.iter().flatten() {
        add(Kind::SandboxTemplate, t.name.to_string());
    }
    Export {
        tenant_id: "root".into(),
        caller: "usr_ops".into(),
        config,
        missing: missing.to_vec(),
        objects,
        tenants: vec!["acme".into(), "globex".into(), "root".into()],
        offered_pools: Vec::new(),
    }
}

/// FLEET with `from` replaced by `to` (which must occur).
fn edit(from: &str, to: &str) -> String {
    assert!(FLEET.contains(from), "{from}");
    FLEET.replacen(from, to, 1)
}

const PRUNE: PlanOptions = PlanOptions { prune: true };
const KEEP: PlanOptions = PlanOptions { prune: false };

#[track_caller]
fn check(document: &str, export: &Export, options: PlanOptions, expect: &str) -> Plan {
    let plan = plan(&doc(document), export, options);
    let got: Vec<String> = plan
        .changes
        .iter()
        .filter(|c| c.action != Action::Unchanged || c.blocked)
        .map(|c| {
            let action = serde_json::to_value(c.action).unwrap();
            let mut line = format!("{} {} {}", c.kind, c.name, action.as_str().unwrap());
            if let Some(note) = &c.note {
                line.push_str(&format!(" blocked: {note}"));
            }
            line
        })
        .collect();
    let expect: Vec<&str> = expect
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(got, expect, "changes differ");
    // A blocked change never has a call, and the summary says so.
    assert_eq!(plan.summary.blocked, plan.changes.iter().any(|c| c.blocked));
    assert_eq!(plan.plan_hash, plan_hash(&plan.calls));
    plan
}

fn methods(plan: &Plan) -> Vec<&'static str> {
    plan.calls.iter().map(Call::method).collect()
}

#[test]
fn own_export_plans_nothing() {
    let p = check(FLEET, &export(FLEET, &[]), PRUNE, "");
    assert!(p.calls.is_empty());
    assert_eq!(p.summary.unchanged, 8);
    assert_eq!(p.plan_hash, plan_hash(&[]));
}

#[test]
fn floats_compare_as_parsed() {
    // 0.1 in both: the same f64, so no update.
    let p = check(FLEET, &export(FLEET, &[]), KEEP, "");
    assert_eq!(p.summary.update, 0);
    let changed = edit("0.1", "0.30000000000000004");
    check(&changed, &export(FLEET, &[]), KEEP, "pool vps-fra update");
}

#[test]
fn creates_chain_by_deterministic_ids() {
    let empty = export(r#"{"version": 1}"#, &[]);
    let p = check(
        FLEET,
        &empty,
        KEEP,
        "site fra create
         providerAccount cloud create
         pool burst create
         pool vps-fra create
         ownerQuota vps-fra:gpu create
         offer vps-fra -> acme create
         flavor vps-fra/g1.small create
         sandboxTemplate py-small create",
    );
    assert_eq!(
        methods(&p),
        [
            "providerAccount.create",
            "site.create",
            "pool.create",
            "pool.create",
            "pool.setOwnerQuota",
            "pool.offer",
            "flavor.create",
            "sandboxTemplate.create"
        ]
    );
    let id =
        |kind, name| ids::derive_id(kind, "usr_ops", &ids::idempotency_key("root", kind, name));
    let Call::PoolCreate(pool) = &p.calls[3] else {
        panic!()
    };
    assert_eq!(pool.site_id, id(Kind::Site, "fra"));
    assert_eq!(
        pool.idempotency_key.as_deref(),
        Some("fleet:root:pool:vps-fra")
    );
    let Call::SandboxTemplateCreate(t) = &p.calls[7] else {
        panic!()
    };
    assert_eq!(t.pool_id, id(Kind::Pool, "vps-fra"));
    assert_eq!(t.flavor_id, id(Kind::Flavor, "vps-fra/g1.small"));
    let Call::PoolSetOwnerQuota(q) = &p.calls[4] else {
        panic!()
    };
    assert_eq!(q.if_revision, None, "a new entry has no revision");
}

#[test]
fn calls_follow_the_dependency_order() {
    // Everything at once: creates and updates of every kind, and prune deletes of every kind.
    let current = r#"{"version": 1,
      "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
      "providerAccounts": [{ "name": "cloud", "provider": "p", "config": {} },
                           { "name": "old", "provider": "p", "config": {} }],
      "pools": [{ "name": "a", "site": "fra", "class": "vps-host", "ownerQuota": {"gpu": 1},
                  "offers": [{"tenant": "acme", "quota": {}}, {"tenant": "globex", "quota": {}}] },
                { "name": "z-old", "site": "fra", "class": "vps-host" }],
      "flavors": [{ "pool": "a", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 },
                  { "pool": "a", "name": "old", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }],
      "sandboxTemplates": [{ "name": "t", "pool": "a", "flavor": "f", "imageId": "i", "network": "none" },
                           { "name": "old", "pool": "a", "flavor": "f", "imageId": "i", "network": "none" }]}"#;
    let desired = r#"{"version": 1,
      "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" },
                { "name": "ams", "kind": "shared", "region": "eu-west" }],
      "providerAccounts": [{ "name": "cloud", "provider": "p", "config": {"x": "y"} },
                           { "name": "new", "provider": "p", "config": {} }],
      "pools": [{ "name": "a", "site": "fra", "class": "vps-host", "policy": {"disruptionBudget": 1},
                  "ownerQuota": {"gpu": 2}, "offers": [{"tenant": "acme", "quota": {"vcpu": 1}}] },
                { "name": "b", "site": "ams", "class": "vps-host" }],
      "flavors": [{ "pool": "a", "name": "f", "vcpu": 2, "memoryGiB": 1, "diskGiB": 1 },
                  { "pool": "b", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }],
      "sandboxTemplates": [{ "name": "t", "pool": "a", "flavor": "f", "imageId": "j", "network": "none" },
                           { "name": "u", "pool": "b", "flavor": "f", "imageId": "i", "network": "none" }]}"#;
    let p = check(
        desired,
        &export(current, &[]),
        PRUNE,
        "site ams create
         providerAccount cloud update
         providerAccount new create
         providerAccount old delete
         pool a update
         pool b create
         pool z-old delete
         ownerQuota a:gpu update
         offer a -> acme update
         offer a -> globex delete
         flavor a/f update
         flavor a/old delete
         flavor b/f create
         sandboxTemplate old delete
         sandboxTemplate t update
         sandboxTemplate u create",
    );
    assert_eq!(
        methods(&p),
        [
            "providerAccount.update",
            "providerAccount.create",
            "site.create",
            "pool.create",
            "pool.update",
            "pool.setOwnerQuota",
            "pool.offer",
            "flavor.update",
            "flavor.create",
            "sandboxTemplate.update",
            "sandboxTemplate.create",
            "sandboxTemplate.delete",
            "flavor.delete",
            "pool.unoffer",
            "pool.archive",
            "providerAccount.delete",
        ]
    );
    // Updates and deletes carry the revision they were planned against.
    for call in &p.calls {
        let input = serde_json::to_value(call).unwrap()["input"].clone();
        if !call.method().ends_with(".create") {
            assert_eq!(input["ifRevision"], 7, "{}", call.method());
        }
    }
}

#[test]
fn updates_list_only_differing_fields() {
    let changed = edit(r#""vcpu": 2"#, r#""vcpu": 3"#);
    let p = check(
        &changed,
        &export(FLEET, &[]),
        KEEP,
        "flavor vps-fra/g1.small update",
    );
    let c = p.changes.iter().find(|c| c.kind == Kind::Flavor).unwrap();
    assert_eq!(c.fields, ["vcpu"]);
    assert_eq!(
        serde_json::Value::Object(*c.before.clone().unwrap()),
        serde_json::json!({"vcpu": 2})
    );
    assert_eq!(
        serde_json::Value::Object(*c.after.clone().unwrap()),
        serde_json::json!({"vcpu": 3})
    );
    let Call::FlavorUpdate(u) = &p.calls[0] else {
        panic!()
    };
    assert_eq!(
        (u.id.as_str(), u.if_revision, u.vcpu),
        ("flv_xvps-frag1.small", 7, 3)
    );
}

#[test]
fn fixed_site_fields() {
    let ex = export(FLEET, &[]);
    check(
        &edit("shared", "dedicated"),
        &ex,
        KEEP,
        "site fra update blocked: kind cannot change; create a new site instead",
    );
    check(
        &edit("eu-central", "eu-west"),
        &ex,
        KEEP,
        "site fra update blocked: region cannot change; create a new site instead",
    );
}

#[test]
fn fixed_provider() {
    check(
        &edit("hetzner-cloud", "aws"),
        &export(FLEET, &[]),
        KEEP,
        "providerAccount cloud update blocked: provider cannot change; create a new provider account instead",
    );
}

#[test]
fn fixed_pool_fields() {
    let with_ber = edit(
        r#""sites": ["#,
        r#""sites": [{ "name": "ber", "kind": "shared", "region": "r" }, "#,
    );
    let ex = export(&with_ber, &[]);
    check(
        &with_ber.replacen(
            r#""site": "fra", "class": "vps-host""#,
            r#""site": "ber", "class": "vps-host""#,
            1,
        ),
        &ex,
        KEEP,
        "pool vps-fra update blocked: site cannot change; create a new pool instead",
    );
    check(
        &with_ber.replacen("vps-host", "sandbox-host", 1),
        &ex,
        KEEP,
        "pool vps-fra update blocked: class cannot change; create a new pool instead",
    );
    check(
        &with_ber.replacen("L40S", "H100", 1),
        &ex,
        KEEP,
        "pool vps-fra update blocked: gpuModel cannot change; create a new pool instead",
    );
    let two_accounts = with_ber.replacen(
        r#""providerAccounts": ["#,
        r#""providerAccounts": [{ "name": "metal", "provider": "x", "config": {} }, "#,
        1,
    );
    check(
        &two_accounts.replacen(
            r#""providerAccount": "cloud""#,
            r#""providerAccount": "metal""#,
            1,
        ),
        &export(&two_accounts, &[]),
        KEEP,
        "pool burst update blocked: providerAccount cannot change; create a new pool instead",
    );
}

#[test]
fn fixed_template_pool() {
    let current = edit(r#""pool": "vps-fra", "flavor""#, r#""pool": "burst", "flavor""#)
        .replacen(
            r#""flavors": ["#,
            r#""flavors": [{ "pool": "burst", "name": "g1.small", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }, "#,
            1,
        );
    let desired = current.replacen(
        r#""pool": "burst", "flavor""#,
        r#""pool": "vps-fra", "flavor""#,
        1,
    );
    check(
        &desired,
        &export(&current, &[]),
        KEEP,
        "sandboxTemplate py-small update blocked: pool cannot change; create a new sandbox template instead",
    );
}

#[test]
fn unknown_references() {
    let ex = export(FLEET, &[]);
    check(
        r#"{"version": 1, "pools": [{"name": "p", "site": "ams", "class": "vps-host"}]}"#,
        &ex,
        KEEP,
        r#"pool p create blocked: unknown site "ams""#,
    );
    check(
        r#"{"version": 1, "pools": [{"name": "p", "site": "fra", "class": "provider", "providerAccount": "metal"}]}"#,
        &ex,
        KEEP,
        r#"pool p create blocked: unknown provider account "metal""#,
    );
    check(
        r#"{"version": 1, "flavors": [{"pool": "nope", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1}]}"#,
        &ex,
        KEEP,
        r#"flavor nope/f create blocked: unknown pool "nope""#,
    );
    check(
        r#"{"version": 1, "sandboxTemplates": [{"name": "t", "pool": "vps-fra", "flavor": "g9", "imageId": "i", "network": "none"}]}"#,
        &ex,
        KEEP,
        r#"sandboxTemplate t create blocked: unknown flavor "vps-fra/g9""#,
    );
    check(
        r#"{"version": 1, "sandboxTemplates": [{"name": "t", "pool": "nope", "flavor": "g1.small", "imageId": "i", "network": "none"}]}"#,
        &ex,
        KEEP,
        r#"sandboxTemplate t create blocked: unknown pool "nope""#,
    );
    let p = check(
        &edit(r#""tenant": "acme""#, r#""tenant": "initech""#),
        &ex,
        KEEP,
        r#"offer vps-fra -> initech create blocked: unknown tenant "initech""#,
    );
    assert!(p.calls.is_empty() && p.summary.blocked);
}

#[test]
fn offer_to_own_owner() {
    check(
        &edit(r#""tenant": "acme""#, r#""tenant": "root""#),
        &export(FLEET, &[]),
        KEEP,
        "offer vps-fra -> root create blocked: a pool cannot be offered to its own owner",
    );
}

#[test]
fn references_by_id_and_by_existing_name() {
    let ex = export(FLEET, &[]);
    // A new pool on the existing site named by its id; a flavor on an existing pool by id.
    check(
        r#"{"version": 1,
            "pools": [{"name": "p", "site": "site_xfra", "class": "vps-host"}],
            "flavors": [{"pool": "pool_xvps-fra", "name": "g2", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1}]}"#,
        &ex,
        KEEP,
        "pool p create
         flavor pool_xvps-fra/g2 create",
    );
    // A document naming an existing site by its id matches that site.
    let p = check(
        r#"{"version": 1, "sites": [{ "name": "site_xfra", "kind": "shared", "region": "eu-central" }]}"#,
        &ex,
        PRUNE,
        "",
    );
    assert_eq!(p.summary.unchanged, 1);
    // Naming the same pool by id in the document keeps the fixed site unchanged.
    check(
        &edit(
            r#""name": "vps-fra", "site": "fra""#,
            r#""name": "vps-fra", "site": "site_xfra""#,
        ),
        &ex,
        KEEP,
        "",
    );
}

#[test]
fn template_on_an_offered_pool() {
    let mut ex = export(r#"{"version": 1}"#, &[]);
    ex.offered_pools = vec![crate::export::OfferedPool {
        id: "pool_g".into(),
        flavors: vec![crate::export::OfferedFlavor {
            name: "g1".into(),
            id: "flv_g1".into(),
        }],
    }];
    let p = check(
        r#"{"version": 1, "sandboxTemplates": [{"name": "t", "pool": "pool_g", "flavor": "g1", "imageId": "i", "network": "none"}]}"#,
        &ex,
        KEEP,
        "sandboxTemplate t create",
    );
    let Call::SandboxTemplateCreate(t) = &p.calls[0] else {
        panic!()
    };
    assert_eq!(
        (t.pool_id.as_str(), t.flavor_id.as_str()),
        ("pool_g", "flv_g1")
    );
}

#[test]
fn prune_never_deletes_sites() {
    check(
        r#"{"version": 1, "sites": []}"#,
        &export(FLEET, &[]),
        PRUNE,
        "site fra delete blocked: sites are never deleted",
    );
}

#[test]
fn prune_keeps_provider_accounts_in_use() {
    check(
        r#"{"version": 1, "providerAccounts": []}"#,
        &export(FLEET, &[]),
        PRUNE,
        r#"providerAccount cloud delete blocked: provider account is used by pool "burst""#,
    );
    // Once the pool goes too, the account may go.
    let p = check(
        &edit(r#""providerAccounts": [{ "name": "cloud", "provider": "hetzner-cloud", "config": { "token": "secret://h" } }]"#, r#""providerAccounts": []"#)
            .replacen(
                r#",
    { "name": "burst", "site": "fra", "class": "provider", "providerAccount": "cloud",
      "ownerQuota": {}, "offers": [] }"#,
                "",
                1,
            ),
        &export(FLEET, &[]),
        PRUNE,
        "providerAccount cloud delete
         pool burst delete",
    );
    assert_eq!(methods(&p), ["pool.archive", "providerAccount.delete"]);
}

#[test]
fn prune_keeps_pools_in_use() {
    check(
        r#"{"version": 1, "pools": [], "sandboxTemplates": []}"#,
        &export(FLEET, &[]),
        PRUNE,
        r#"pool burst delete
           pool vps-fra delete blocked: pool is used by flavor "vps-fra/g1.small"
           sandboxTemplate py-small delete"#,
    );
    check(
        r#"{"version": 1, "pools": [], "flavors": []}"#,
        &export(FLEET, &[]),
        PRUNE,
        r#"pool burst delete
           pool vps-fra delete blocked: pool is used by sandbox template "py-small"
           flavor vps-fra/g1.small delete blocked: flavor is used by sandbox template "py-small""#,
    );
}

#[test]
fn prune_keeps_flavors_in_use() {
    check(
        r#"{"version": 1, "flavors": []}"#,
        &export(FLEET, &[]),
        PRUNE,
        r#"flavor vps-fra/g1.small delete blocked: flavor is used by sandbox template "py-small""#,
    );
    check(
        r#"{"version": 1, "flavors": [], "sandboxTemplates": []}"#,
        &export(FLEET, &[]),
        PRUNE,
        "flavor vps-fra/g1.small delete
         sandboxTemplate py-small delete",
    );
}

#[test]
fn archived_pools_take_their_quotas_and_offers() {
    let p = check(
        r#"{"version": 1, "pools": [], "flavors": [], "sandboxTemplates": []}"#,
        &export(FLEET, &[]),
        PRUNE,
        "pool burst delete
         pool vps-fra delete
         flavor vps-fra/g1.small delete
         sandboxTemplate py-small delete",
    );
    assert_eq!(
        methods(&p),
        [
            "sandboxTemplate.delete",
            "flavor.delete",
            "pool.archive",
            "pool.archive"
        ]
    );
}

#[test]
fn absent_keys_leave_kinds_alone_and_empty_lists_delete() {
    let ex = export(FLEET, &[]);
    let no_offers = r#"{"version": 1, "pools": [
        { "name": "vps-fra", "site": "fra", "class": "vps-host", "gpuModel": "L40S", "policy": { "disruptionBudget": 0.1 } },
        { "name": "burst", "site": "fra", "class": "provider", "providerAccount": "cloud" }]}"#;
    check(no_offers, &ex, PRUNE, "");
    let empty = no_offers.replacen(r#"0.1 }"#, r#"0.1 }, "offers": [], "ownerQuota": {}"#, 1);
    let p = check(
        &empty,
        &ex,
        PRUNE,
        "ownerQuota vps-fra:gpu delete
         offer vps-fra -> acme delete",
    );
    let Call::PoolSetOwnerQuota(q) = &p.calls[0] else {
        panic!()
    };
    assert_eq!((q.max, q.if_revision), (None, Some(7)));
    // Without prune, nothing is deleted.
    check(&empty, &ex, KEEP, "");
    check(r#"{"version": 1}"#, &ex, PRUNE, "");
}

#[test]
fn missing_sections_block_their_items() {
    let current = r#"{"version": 1,
      "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
      "pools": [{ "name": "vps-fra", "site": "fra", "class": "vps-host", "gpuModel": "L40S",
        "policy": { "disruptionBudget": 0.1 }, "ownerQuota": { "gpu": 8 },
        "offers": [{ "tenant": "acme", "quota": { "vcpu": 64 } }] }]}"#;
    let ex = export(
        current,
        &[
            Section::ProviderAccounts,
            Section::Flavors,
            Section::SandboxTemplates,
        ],
    );
    check(
        FLEET,
        &ex,
        PRUNE,
        r#"providerAccount cloud create blocked: this deployment does not serve provider accounts (vps module)
           pool burst create blocked: unknown provider account "cloud"
           flavor vps-fra/g1.small create blocked: this deployment does not serve flavors (vps module)
           sandboxTemplate py-small create blocked: this deployment does not run sandboxes (vps v0.5)"#,
    );
}

#[test]
fn an_unchanged_reference_to_an_unserved_account_blocks_nothing() {
    // A deployment that stopped serving provider accounts exports a provider pool with its
    // account's id; planning that export back changes nothing and blocks nothing.
    let current = r#"{"version": 1,
      "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
      "pools": [{ "name": "burst", "site": "fra", "class": "provider",
        "providerAccount": "pa_xcloud", "ownerQuota": {}, "offers": [] }]}"#;
    let ex = export(current, &[Section::ProviderAccounts]);
    check(current, &ex, PRUNE, "");
    // Naming another unknown account blocks the pool, as unknown: whether it is another
    // account than now cannot be told, so no field is said to change.
    let other = current.replace("pa_xcloud", "pa_xother");
    check(
        &other,
        &ex,
        PRUNE,
        r#"pool burst unchanged blocked: unknown provider account "pa_xother""#,
    );
    // So is the account named by name, as a document applied while the deployment served
    // accounts names it (its drift check found "providerAccount cannot change").
    let by_name = current.replace("pa_xcloud", "cloud");
    check(
        &by_name,
        &ex,
        PRUNE,
        r#"pool burst unchanged blocked: unknown provider account "cloud""#,
    );
}

#[test]
fn a_reference_to_nothing_the_export_lists_is_a_differing_field() {
    // Sites and provider accounts served: the export lists every one, so a name it lacks is
    // another object than now. The pool is an update of a fixed field, not "unchanged".
    let ex = export(FLEET, &[]);
    // The pool's one change (blocked, with no call), as `check` says it, and its fields.
    let pool_change = |document: &str, pool: &str, expect: &str| {
        let p = check(document, &ex, KEEP, expect);
        assert!(p.summary.blocked && p.calls.is_empty());
        p.changes.into_iter().find(|c| c.name == pool).unwrap()
    };
    let site = edit(
        r#""name": "vps-fra", "site": "fra""#,
        r#""name": "vps-fra", "site": "ber""#,
    );
    let moved = r#"pool vps-fra update blocked: site cannot change; create a new pool instead; unknown site "ber""#;
    let change = pool_change(&site, "vps-fra", moved);
    assert_eq!(change.fields, ["site"]);
    assert_eq!(
        serde_json::to_value((&change.before, &change.after)).unwrap(),
        serde_json::json!([{ "site": "fra" }, { "site": "ber" }])
    );
    let account = edit(
        r#""providerAccount": "cloud""#,
        r#""providerAccount": "nopa""#,
    );
    let change = pool_change(
        &account,
        "burst",
        r#"pool burst update blocked: providerAccount cannot change; create a new pool instead; unknown provider account "nopa""#,
    );
    assert_eq!(change.fields, ["providerAccount"]);
    // With the policy changed too, both fields are said.
    let both = site.replace(r#""disruptionBudget": 0.1"#, r#""disruptionBudget": 0.2"#);
    assert_eq!(
        pool_change(&both, "vps-fra", moved).fields,
        ["site", "policy"]
    );
}

#[test]
fn set_owner_quota_and_offer_carry_revisions_of_existing_entries() {
    let desired = edit(r#""gpu": 8"#, r#""gpu": 9, "vcpu": 1"#).replacen(
        r#""quota": { "vcpu": 64 }"#,
        r#""quota": { "vcpu": 65 }"#,
        1,
    );
    let p = check(
        &desired,
        &export(FLEET, &[]),
        KEEP,
        "ownerQuota vps-fra:gpu update
         ownerQuota vps-fra:vcpu create
         offer vps-fra -> acme update",
    );
    let revisions: Vec<Option<u64>> = p
        .calls
        .iter()
        .map(|c| match c {
            Call::PoolSetOwnerQuota(q) => q.if_revision,
            Call::PoolOffer(o) => o.if_revision,
            _ => panic!(),
        })
        .collect();
    assert_eq!(revisions, [Some(7), None, Some(7)]);
}

#[test]
fn revisions_found_in_an_export_in_any_order() {
    // A hand-made state: objects in reverse order, each with its own revision.
    let mut state = export(FLEET, &[]);
    state.objects.reverse();
    for (i, object) in state.objects.iter_mut().enumerate() {
        object.revision = 100 + i as u64;
    }
    let revision = |kind: Kind, name: &str| {
        let found = state
            .objects
            .iter()
            .find(|o| o.kind == kind && o.name == name);
        found.map(|o| o.revision).expect("in the export")
    };
    let document = edit(
        r#""ownerQuota": { "gpu": 8 }"#,
        r#""ownerQuota": { "gpu": 4 }"#,
    )
    .replacen(
        r#""quota": { "vcpu": 64 }"#,
        r#""quota": { "vcpu": 32 }"#,
        1,
    );
    let plan = check(
        &document,
        &state,
        KEEP,
        "ownerQuota vps-fra:gpu update
         offer vps-fra -> acme update",
    );
    let inputs: Vec<serde_json::Value> = plan
        .calls
        .iter()
        .map(|c| serde_json::to_value(c).unwrap()["input"].clone())
        .collect();
    assert_eq!(
        inputs[0]["ifRevision"],
        revision(Kind::OwnerQuota, "vps-fra:gpu")
    );
    assert_eq!(
        inputs[1]["ifRevision"],
        revision(Kind::Offer, "vps-fra -> acme")
    );
}

#[test]
fn an_id_of_an_object_without_a_config_item_names_nothing_existing() {
    // An inconsistent export: an object whose item is not in its config. A document naming
    // it by id is planned as new, not matched (and nothing panics).
    let mut ex = export(r#"{"version": 1}"#, &[]);
    ex.objects.push(ObjectRef {
        kind: Kind::Site,
        name: "gone".into(),
        id: Some("site_gone".into()),
        revision: 3,
        used_by: None,
    });
    let document =
        r#"{"version": 1, "sites": [{ "name": "site_gone", "kind": "shared", "region": "eu" }]}"#;
    check(document, &ex, KEEP, "site site_gone create");
}

/// An export whose tenant has the pool `pool_g` of another tenant offered to it, with its
/// flavor `g1` (`flv_g1`).
fn with_offered_pool(mut ex: Export) -> Export {
    ex.offered_pools = vec![crate::export::OfferedPool {
        id: "pool_g".into(),
        flavors: vec![crate::export::OfferedFlavor {
            name: "g1".into(),
            id: "flv_g1".into(),
        }],
    }];
    ex
}

#[test]
fn what_goes_on_a_blocked_create_is_blocked_too() {
    // Its calls would name a pool or flavor that will not exist: the review must not show
    // them as clean creates (found by a fuzzing audit).
    let ex = export(r#"{"version": 1}"#, &[]);
    let p = check(
        r#"{"version": 1,
            "pools": [{"name": "newp", "site": "nosuchsite", "class": "vps-host",
                       "ownerQuota": {"gpu": 1}, "offers": [{"tenant": "acme", "quota": {}}]}],
            "flavors": [{"pool": "newp", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 0}],
            "sandboxTemplates": [{"name": "newt", "pool": "newp", "flavor": "f", "imageId": "i", "network": "none"}]}"#,
        &ex,
        KEEP,
        r#"pool newp create blocked: unknown site "nosuchsite"
           ownerQuota newp:gpu create blocked: pool "newp" is blocked
           offer newp -> acme create blocked: pool "newp" is blocked
           flavor newp/f create blocked: pool "newp" is blocked
           sandboxTemplate newt create blocked: pool "newp" is blocked"#,
    );
    assert!(p.calls.is_empty(), "{:?}", p.calls);
    // A flavor whose create is blocked on a pool that exists: a template using it is blocked.
    let ex = with_offered_pool(export(r#"{"version": 1}"#, &[]));
    let p = check(
        r#"{"version": 1,
            "flavors": [{"pool": "pool_g", "name": "mine", "vcpu": 1, "memoryGiB": 1, "diskGiB": 0}],
            "sandboxTemplates": [{"name": "t", "pool": "pool_g", "flavor": "mine", "imageId": "i", "network": "none"}]}"#,
        &ex,
        KEEP,
        r#"flavor pool_g/mine create blocked: pool "pool_g" is another tenant's, offered to this one: only its owner adds flavors to it
           sandboxTemplate t create blocked: flavor "pool_g/mine" is blocked"#,
    );
    assert!(p.calls.is_empty(), "{:?}", p.calls);
}

#[test]
fn flavors_on_an_offered_pool_are_blocked() {
    // The pool is another tenant's: flavor.create would not find it among this tenant's.
    let ex = with_offered_pool(export(r#"{"version": 1}"#, &[]));
    check(
        r#"{"version": 1, "flavors": [{"pool": "pool_g", "name": "mine", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1}]}"#,
        &ex,
        KEEP,
        r#"flavor pool_g/mine create blocked: pool "pool_g" is another tenant's, offered to this one: only its owner adds flavors to it"#,
    );
}

#[test]
fn a_pool_whose_create_takes_another_pools_name_as_its_id_is_blocked() {
    // Pool "n" archived, then a pool named by n's old id, then "n" again: its create derives
    // (and revives) that id, and one reference would mean two pools (a fuzzing audit).
    let id = crate::ids::derive_id(
        Kind::Pool,
        "usr_ops",
        &crate::ids::idempotency_key("root", Kind::Pool, "n"),
    );
    let named = format!(
        r#"{{"version": 1, "sites": [{{"name": "fra", "kind": "shared", "region": "eu"}}],
            "pools": [{{"name": "{id}", "site": "fra", "class": "vps-host"}}]}}"#
    );
    let ex = export(&named, &[]);
    let doc = r#"{"version": 1, "pools": [{"name": "n", "site": "fra", "class": "vps-host"}]}"#;
    let p = check(
        doc,
        &ex,
        KEEP,
        &format!(
            r#"pool n create blocked: its create would give it the id {id}, which pool "{id}" has as its name"#
        ),
    );
    assert!(p.calls.is_empty(), "{:?}", p.calls);
    // Both in one document, both new: the same.
    let both = format!(
        r#"{{"version": 1, "sites": [{{"name": "fra", "kind": "shared", "region": "eu"}}],
            "pools": [{{"name": "n", "site": "fra", "class": "vps-host"}}, {{"name": "{id}", "site": "fra", "class": "vps-host"}}]}}"#
    );
    let p = plan(
        &validate(both.as_bytes()).unwrap(),
        &export(r#"{"version": 1}"#, &[]),
        KEEP,
    );
    let n = p.changes.iter().find(|c| c.name == "n").unwrap();
    assert!(n.blocked, "{n:?}");
}

#[test]
fn a_create_whose_id_is_another_items_name_is_blocked_for_every_named_kind() {
    // As for pools: a site, a provider account or a template named by the id that another's
    // create derives. The server refuses that create (CONFLICT), so a plan that showed it as
    // fine could not be applied (an audit applied one and got the CONFLICT).
    let derived = |kind: Kind, name: &str| {
        crate::ids::derive_id(
            kind,
            "usr_ops",
            &crate::ids::idempotency_key("root", kind, name),
        )
    };
    let site = derived(Kind::Site, "zz");
    let account = derived(Kind::ProviderAccount, "zz");
    let template = derived(Kind::SandboxTemplate, "zz");
    let base = format!(
        r#"{{"version": 1, "sites": [{{"name": "fra", "kind": "shared", "region": "eu"}}, {{"name": "{site}", "kind": "shared", "region": "eu"}}],
            "providerAccounts": [{{"name": "{account}", "provider": "x", "config": {{}}}}],
            "pools": [{{"name": "p", "site": "fra", "class": "vps-host"}}],
            "flavors": [{{"pool": "p", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1}}],
            "sandboxTemplates": [{{"name": "{template}", "pool": "p", "flavor": "f", "imageId": "i", "network": "none"}}]}}"#
    );
    let ex = export(&base, &[]);
    let doc = r#"{"version": 1,
        "sites": [{"name": "zz", "kind": "shared", "region": "eu"}],
        "providerAccounts": [{"name": "zz", "provider": "x", "config": {}}],
        "sandboxTemplates": [{"name": "zz", "pool": "p", "flavor": "f", "imageId": "i", "network": "none"}]}"#;
    let p = check(
        doc,
        &ex,
        KEEP,
        &format!(
            r#"site zz create blocked: its create would give it the id {site}, which site "{site}" has as its name
               providerAccount zz create blocked: its create would give it the id {account}, which provider account "{account}" has as its name
               sandboxTemplate zz create blocked: its create would give it the id {template}, which sandbox template "{template}" has as its name"#
        ),
    );
    assert!(p.calls.is_empty(), "{:?}", p.calls);
    // Another name derives another id: nothing in the way.
    let fine = doc.replace("\"zz\"", "\"yy\"");
    let p = plan(&validate(fine.as_bytes()).unwrap(), &ex, KEEP);
    assert!(!p.summary.blocked, "{:?}", p.changes);
    assert_eq!(p.calls.len(), 3);
}

#[test]
fn a_new_pool_cannot_take_a_pool_ids_shape_as_its_name() {
    // An id-shaped name that names no pool of the tenant (a pool gone since, another
    // tenant's): a pool offered to this tenant later under that id would make the name mean
    // two pools (a fuzzing audit), so no new pool takes one.
    let id = format!("pool_{}", "0123456789abcdefghjkmnpqrs");
    let ex = export(FLEET, &[]);
    let doc = format!(
        r#"{{"version": 1, "pools": [{{"name": "{id}", "site": "fra", "class": "vps-host"}}]}}"#
    );
    let p = check(
        &doc,
        &ex,
        KEEP,
        &format!(
            r#"pool {id} create blocked: "{id}" has the shape of a pool id and names no pool of this tenant: a new pool cannot take an id as its name"#
        ),
    );
    assert!(p.calls.is_empty(), "{:?}", p.calls);
    // Not the shape (25 characters, a letter Crockford leaves out): an ordinary name.
    for name in [
        "pool_0123456789abcdefghjkmnpqr",
        "pool_0123456789abcdefghjkmnpqrl",
    ] {
        let doc = format!(
            r#"{{"version": 1, "pools": [{{"name": "{name}", "site": "fra", "class": "vps-host"}}]}}"#
        );
        let p = plan(&validate(doc.as_bytes()).unwrap(), &ex, KEEP);
        assert!(!p.is_blocked(), "{name}: {:?}", p.changes);
    }
}

#[test]
fn a_pool_named_like_an_offered_pools_id_is_blocked() {
    // The tenant's templates name the offered pool by that id, and its export writes it so: a
    // pool of its own by that name would make both mean two pools (a fuzzing audit found plans
    // that never converged, and a template update naming the wrong pool's flavor).
    let ex = with_offered_pool(export(FLEET, &[]));
    let p = check(
        r#"{"version": 1,
            "pools": [{"name": "pool_g", "site": "fra", "class": "vps-host", "ownerQuota": {"vcpu": 4}}],
            "flavors": [{"pool": "pool_g", "name": "g1", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1}],
            "sandboxTemplates": [{"name": "t", "pool": "pool_g", "flavor": "g1", "imageId": "i", "network": "none"}]}"#,
        &ex,
        KEEP,
        r#"pool pool_g create blocked: "pool_g" is the id of another tenant's pool offered to this one: a pool of this tenant cannot have it as its name
           ownerQuota pool_g:vcpu create blocked: pool "pool_g" is blocked
           flavor pool_g/g1 create blocked: pool "pool_g" is blocked
           sandboxTemplate t create blocked: pool "pool_g" is blocked"#,
    );
    assert!(p.calls.is_empty(), "{:?}", p.calls);
}

#[test]
fn an_object_named_twice_is_blocked() {
    let ex = export(FLEET, &[]);
    // The same pool by its name and by its id: two updates of one pool at one revision.
    let twice = edit(
        r#"{ "name": "burst","#,
        r#"{ "name": "pool_xvps-fra", "site": "fra", "class": "vps-host", "gpuModel": "L40S",
      "policy": { "disruptionBudget": 0.4 } },
    { "name": "burst","#,
    );
    check(
        &twice,
        &ex,
        KEEP,
        r#"pool pool_xvps-fra update blocked: the same pool as "vps-fra" (named twice, by name and by id)"#,
    );
    // A site, a provider account and a template likewise, whatever the order.
    check(
        r#"{"version": 1, "sites": [
            { "name": "site_xfra", "kind": "shared", "region": "eu-central" },
            { "name": "fra", "kind": "shared", "region": "eu-central" }]}"#,
        &ex,
        KEEP,
        r#"site fra unchanged blocked: the same site as "site_xfra" (named twice, by name and by id)"#,
    );
    check(
        &edit(
            r#"[{ "name": "cloud", "provider": "hetzner-cloud", "config": { "token": "secret://h" } }]"#,
            r#"[{ "name": "cloud", "provider": "hetzner-cloud", "config": { "token": "secret://h" } },
                { "name": "pa_xcloud", "provider": "hetzner-cloud", "config": { "token": "secret://h" } }]"#,
        ),
        &ex,
        KEEP,
        r#"providerAccount pa_xcloud unchanged blocked: the same provider account as "cloud" (named twice, by name and by id)"#,
    );
    check(
        &edit(
            r#""imageId": "ubuntu-24.04", "network": "private" }]"#,
            r#""imageId": "ubuntu-24.04", "network": "private" },
               { "name": "tpl_xpy-small", "pool": "vps-fra", "flavor": "g1.small",
                 "imageId": "ubuntu-24.04", "network": "private" }]"#,
        ),
        &ex,
        KEEP,
        r#"sandboxTemplate tpl_xpy-small unchanged blocked: the same sandbox template as "py-small" (named twice, by name and by id)"#,
    );
    // A flavor listed under its pool's name and its pool's id: new or existing.
    check(
        r#"{"version": 1, "flavors": [
            {"pool": "vps-fra", "name": "g9", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1},
            {"pool": "pool_xvps-fra", "name": "g9", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1}]}"#,
        &ex,
        KEEP,
        r#"flavor pool_xvps-fra/g9 create blocked: the same flavor as "vps-fra/g9" (named twice, by name and by id)
           flavor vps-fra/g9 create"#,
    );
}

#[test]
fn flavors_whose_keys_collide_are_told_apart() {
    // The plan remembers (pool id, flavor name) pairs by a 64-bit FxHash, which anyone can
    // collide: two such flavors are two flavors, and a repeat of either by the pool's id is
    // still the same flavor named twice.
    use std::hash::Hash as _;
    let ex = export(FLEET, &[]);
    let mut state = crate::hash::FxHasher::default();
    "pool_xvps-fra".hash(&mut state);
    let (a, b) = crate::hash::colliding_names(state);
    let flavor = |pool: &str, name: &str| {
        format!(
            r#"{{"pool": "{pool}", "name": "{name}", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1}}"#
        )
    };
    let mut created = [
        format!("flavor vps-fra/{a} create"),
        format!("flavor vps-fra/{b} create"),
    ];
    created.sort();
    let p = check(
        &format!(
            r#"{{"version": 1, "flavors": [{}, {}]}}"#,
            flavor("vps-fra", &a),
            flavor("vps-fra", &b)
        ),
        &ex,
        KEEP,
        &created.join("\n"),
    );
    assert_eq!(methods(&p), ["flavor.create", "flavor.create"]);
    check(
        &format!(
            r#"{{"version": 1, "flavors": [{}, {}, {}]}}"#,
            flavor("vps-fra", &a),
            flavor("vps-fra", &b),
            flavor("pool_xvps-fra", &b)
        ),
        &ex,
        KEEP,
        &format!(
            "flavor pool_xvps-fra/{b} create blocked: the same flavor as \"vps-fra/{b}\" (named twice, by name and by id)\n{}",
            created.join("\n")
        ),
    );
}

#[test]
fn prune_keeps_what_another_tenant_uses() {
    // Another tenant's template runs on this tenant's pool (offered to it) with its flavor:
    // the export says so, as the document cannot.
    let mut ex = export(FLEET, &[]);
    let user = crate::export::ExternalUser {
        tenant_id: "acme".into(),
        kind: Kind::SandboxTemplate,
        name: "acme-py".into(),
    };
    for o in &mut ex.objects {
        if ["vps-fra/g1.small", "vps-fra", "vps-fra -> acme"].contains(&o.name.as_str()) {
            o.used_by = Some(Box::new(user.clone()));
        }
    }
    // The offer that lets acme use the pool stays too.
    check(
        &edit(
            r#""offers": [{ "tenant": "acme", "quota": { "vcpu": 64 } }]"#,
            r#""offers": []"#,
        ),
        &ex,
        PRUNE,
        r#"offer vps-fra -> acme delete blocked: offer is used by sandbox template "acme-py" of tenant acme"#,
    );
    check(
        r#"{"version": 1, "pools": [], "flavors": [], "sandboxTemplates": []}"#,
        &ex,
        PRUNE,
        r#"pool burst delete
           pool vps-fra delete blocked: pool is used by sandbox template "acme-py" of tenant acme
           flavor vps-fra/g1.small delete blocked: flavor is used by sandbox template "acme-py" of tenant acme
           sandboxTemplate py-small delete"#,
    );
    // The tenant's own users are named first.
    check(
        r#"{"version": 1, "flavors": []}"#,
        &ex,
        PRUNE,
        r#"flavor vps-fra/g1.small delete blocked: flavor is used by sandbox template "py-small""#,
    );
}

#[test]
fn a_prune_keeps_what_a_blocked_move_leaves_in_use() {
    let ex = export(FLEET, &[]);
    // The pool cannot move to the new account, so it stays on the old one: deleting it is
    // blocked too, and said in the same plan.
    let account = FLEET
        .replace(r#""name": "cloud""#, r#""name": "cloud2""#)
        .replace(
            r#""providerAccount": "cloud""#,
            r#""providerAccount": "cloud2""#,
        );
    check(
        &account,
        &ex,
        PRUNE,
        r#"providerAccount cloud delete blocked: provider account is used by pool "burst"
           providerAccount cloud2 create
           pool burst update blocked: providerAccount cannot change; create a new pool instead"#,
    );
    // The template cannot move to the renamed pool, so it stays on the old pool and its
    // flavor: neither may go.
    let pool = FLEET.replace("vps-fra", "vps-ber");
    check(
        &pool,
        &ex,
        PRUNE,
        r#"pool vps-ber create
           pool vps-fra delete blocked: pool is used by sandbox template "py-small"
           ownerQuota vps-ber:gpu create
           offer vps-ber -> acme create
           flavor vps-ber/g1.small create
           flavor vps-fra/g1.small delete blocked: flavor is used by sandbox template "py-small"
           sandboxTemplate py-small update blocked: pool cannot change; create a new sandbox template instead"#,
    );
    // A move the plan allows frees what it leaves: the template on another flavor of its
    // pool lets the old flavor go.
    let flavor = FLEET
        .replace(r#""name": "g1.small""#, r#""name": "g1.large""#)
        .replace(r#""flavor": "g1.small""#, r#""flavor": "g1.large""#);
    check(
        &flavor,
        &ex,
        PRUNE,
        "flavor vps-fra/g1.large create
         flavor vps-fra/g1.small delete
         sandboxTemplate py-small update",
    );
}

#[test]
fn a_prune_keeps_what_any_blocked_change_or_delete_leaves_in_use() {
    let ex = export(FLEET, &[]);
    // A template update blocked for another reason than a move (an unknown flavor) leaves the
    // template on its flavor: that flavor's delete is blocked too (an audit found it planned).
    let unknown = r#"{"version": 1, "flavors": [],
        "sandboxTemplates": [{ "name": "py-small", "pool": "vps-fra", "flavor": "nope",
            "imageId": "ubuntu-24.04", "network": "private" }]}"#;
    check(
        unknown,
        &ex,
        PRUNE,
        r#"flavor vps-fra/g1.small delete blocked: flavor is used by sandbox template "py-small"
           sandboxTemplate py-small update blocked: unknown flavor "vps-fra/nope""#,
    );
    // A pool whose archive is blocked (a flavor listed on it) stays, and so does the
    // provider account it uses; and a flavor kept only by its own blocked delete keeps its
    // pool, named last, after what keeps the pool in the first place.
    let kept_pool = r#"{"version": 1, "providerAccounts": [], "pools": [],
        "flavors": [{ "pool": "burst", "name": "b1", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }]}"#;
    check(
        kept_pool,
        &ex,
        PRUNE,
        r#"providerAccount cloud delete blocked: provider account is used by pool "burst"
           pool burst delete blocked: pool is used by flavor "burst/b1"
           pool vps-fra delete blocked: pool is used by sandbox template "py-small"
           flavor burst/b1 create
           flavor vps-fra/g1.small delete blocked: flavor is used by sandbox template "py-small""#,
    );
}
