//! The maximal document pair of the planner benchmarks, shared by `benches/plan.rs` and the
//! `scripts/bench` driver (`tools/bench`, which includes this file by path): a desired
//! document, and the export of a fleet that differs from it in about one item in ten.

use planner::Map;
use planner::document::{
    Flavor, Network, Offer, Policy, Pool, PoolClass, ProviderAccount, SandboxTemplate, Site,
    SiteKind, Warm,
};
use planner::fleet::Modules;
use planner::{Document, Fleet};

/// Items per list of the maximal document.
pub const N: usize = 1000;

/// The desired document of `n` items per list (`changed == false`), or the one the current
/// fleet was made from: one item in ten of every list changed, one in fifty missing, and 20
/// extra templates (fewer below 200 items).
pub fn document(n: usize, changed: bool) -> Document<'static> {
    let differs = |i: usize| changed && i.is_multiple_of(10);
    let kept = |i: usize| !changed || i % 50 != 1;
    let sites = (0..n)
        .map(|i| Site {
            name: format!("site-{i}").into(),
            kind: SiteKind::Shared,
            region: "eu-central".into(),
        })
        .collect();
    let accounts = (0..n)
        .filter(|&i| kept(i))
        .map(|i| ProviderAccount {
            name: format!("acct-{i}").into(),
            provider: "hetzner-cloud".into(),
            config: Map::from([
                ("token".into(), format!("secret://hetzner/{i}").into()),
                (
                    "location".into(),
                    if differs(i) { "nbg1" } else { "fsn1" }.into(),
                ),
            ]),
        })
        .collect();
    let pools = (0..n)
        .filter(|&i| kept(i))
        .map(|i| {
            let provider = i % 10 == 5;
            Pool {
                name: format!("pool-{i}").into(),
                site: format!("site-{i}").into(),
                class: if provider {
                    PoolClass::Provider
                } else {
                    PoolClass::VpsHost
                },
                gpu_model: Some("L40S".into()),
                provider_account: provider.then(|| format!("acct-{i}").into()),
                policy: Some(Policy {
                    disruption_budget: if differs(i) { 0.2 } else { 0.1 },
                }),
                owner_quota: Some(Map::from([
                    ("gpu".into(), if differs(i) { 4 } else { 8 }),
                    ("vcpu".into(), 128),
                    ("memory".into(), 512),
                    ("disk".into(), 4096),
                ])),
                offers: Some(
                    ["acme", "globex", "initech"]
                        .iter()
                        .enumerate()
                        .map(|(k, tenant)| Offer {
                            tenant: (*tenant).into(),
                            quota: Map::from([
                                ("vcpu".into(), if differs(i) && k == 2 { 9 } else { 8 }),
                                ("gpu".into(), 2),
                            ]),
                            priority: (k == 0).then_some(5),
                        })
                        .collect(),
                ),
            }
        })
        .collect();
    let flavors = (0..n)
        .filter(|&i| kept(i))
        .map(|i| Flavor {
            pool: format!("pool-{i}").into(),
            name: "g1.small".into(),
            vcpu: if differs(i) { 4 } else { 2 },
            memory_gib: 4,
            disk_gib: 40,
            gpu: None,
        })
        .collect();
    let template = |name: String, i: usize, image: &'static str| SandboxTemplate {
        name: name.into(),
        pool: format!("pool-{i}").into(),
        flavor: "g1.small".into(),
        image_id: image.into(),
        env: Some(Map::from([(
            "PIP_INDEX_URL".into(),
            "secret://root/pip".into(),
        )])),
        network: Network::Private,
        warm: Some(Warm { min: 1, max: 2 }),
    };
    let mut templates: Vec<SandboxTemplate> = (0..n)
        .filter(|&i| kept(i))
        .map(|i| {
            let image = if differs(i) {
                "debian-13"
            } else {
                "ubuntu-24.04"
            };
            template(format!("tpl-{i}"), i, image)
        })
        .collect();
    if changed {
        // Extra templates in the fleet, on pools that stay: prune deletes them.
        let extra = (n / 10).min(20);
        templates.extend((0..extra).map(|i| template(format!("old-{i}"), i * 10 + 2, "x")));
    }
    Document {
        version: 1,
        sites: Some(sites),
        provider_accounts: Some(accounts),
        pools: Some(pools),
        flavors: Some(flavors),
        sandbox_templates: Some(templates),
    }
}

/// The pair as JSON bytes: the desired document of `desired` items per list, and the export of
/// the fleet made from the changed document of `state` items per list.
pub fn pair(desired: usize, state: usize) -> (Vec<u8>, Vec<u8>) {
    let tenants = ["acme", "globex", "initech"].map(String::from);
    let fleet = Fleet::from_document(
        "root",
        "usr_ops",
        Modules::default(),
        tenants,
        &document(state, true),
    )
    .expect("the changed document builds a fleet");
    let desired = serde_json::to_vec_pretty(&document(desired, false)).expect("serializes");
    let export = serde_json::to_vec(&fleet.export()).expect("serializes");
    (desired, export)
}
