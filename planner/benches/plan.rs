//! Benchmarks of the planner on a maximal document pair: 1000 items in every list, every pool
//! with 3 offers and 4 owner quota keys, against the export of a fleet that differs in about
//! one item in ten (changed fields, missing items, extra items to prune).
//!
//! `cargo bench -p planner --bench plan` runs criterion on validate, plan and hash and on the
//! peer, two typed `serde_json` parses of the same bytes (the document and the export), then
//! prints each pipeline next to its peer as a ratio measured in the same run.
//!
//! `PLANNER_BENCH_FIXTURE=<dir> cargo bench -p planner --bench plan` only writes the pair
//! (`document.json`, `export.json`) for the Node benchmark (`planner/js/bench.mjs`).

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use criterion::Criterion;
    use planner::document::{
        Flavor, Network, Offer, Policy, Pool, PoolClass, ProviderAccount, SandboxTemplate, Site,
        SiteKind, Warm,
    };
    use planner::fleet::Modules;
    use planner::{Document, Export, Fleet, PlanOptions, plan, plan_hash, validate};
    use std::collections::BTreeMap;
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    const N: usize = 1000;

    /// The desired document (`changed == false`) or the one the current fleet was made from:
    /// one item in ten of every list changed, one in fifty missing, and 20 extra templates.
    fn document(changed: bool) -> Document {
        let differs = |i: usize| changed && i.is_multiple_of(10);
        let kept = |i: usize| !changed || i % 50 != 1;
        let sites = (0..N)
            .map(|i| Site {
                name: format!("site-{i}"),
                kind: SiteKind::Shared,
                region: "eu-central".into(),
            })
            .collect();
        let accounts = (0..N)
            .filter(|&i| kept(i))
            .map(|i| ProviderAccount {
                name: format!("acct-{i}"),
                provider: "hetzner-cloud".into(),
                config: BTreeMap::from([
                    ("token".into(), format!("secret://hetzner/{i}")),
                    (
                        "location".into(),
                        if differs(i) { "nbg1" } else { "fsn1" }.into(),
                    ),
                ]),
            })
            .collect();
        let pools = (0..N)
            .filter(|&i| kept(i))
            .map(|i| {
                let provider = i % 10 == 5;
                Pool {
                    name: format!("pool-{i}"),
                    site: format!("site-{i}"),
                    class: if provider {
                        PoolClass::Provider
                    } else {
                        PoolClass::VpsHost
                    },
                    gpu_model: Some("L40S".into()),
                    provider_account: provider.then(|| format!("acct-{i}")),
                    policy: Some(Policy {
                        disruption_budget: if differs(i) { 0.2 } else { 0.1 },
                    }),
                    owner_quota: Some(BTreeMap::from([
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
                                quota: BTreeMap::from([
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
        let flavors = (0..N)
            .filter(|&i| kept(i))
            .map(|i| Flavor {
                pool: format!("pool-{i}"),
                name: "g1.small".into(),
                vcpu: if differs(i) { 4 } else { 2 },
                memory_gib: 4,
                disk_gib: 40,
                gpu: None,
            })
            .collect();
        let template = |name: String, i: usize, image: &str| SandboxTemplate {
            name,
            pool: format!("pool-{i}"),
            flavor: "g1.small".into(),
            image_id: image.into(),
            env: Some(BTreeMap::from([(
                "PIP_INDEX_URL".into(),
                "secret://root/pip".into(),
            )])),
            network: Network::Private,
            warm: Some(Warm { min: 1, max: 2 }),
        };
        let mut templates: Vec<SandboxTemplate> = (0..N)
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
            templates.extend((0..20).map(|i| template(format!("old-{i}"), i * 10 + 2, "x")));
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

    /// The pair as JSON bytes: the desired document, and the export of the fleet that differs.
    pub fn fixture() -> (Vec<u8>, Vec<u8>) {
        let tenants = ["acme", "globex", "initech"].map(String::from);
        let fleet = Fleet::from_document(
            "root",
            "usr_ops",
            Modules::default(),
            tenants,
            &document(true),
        )
        .expect("the changed document builds a fleet");
        let desired = serde_json::to_vec_pretty(&document(false)).expect("serializes");
        let export = serde_json::to_vec(&fleet.export()).expect("serializes");
        (desired, export)
    }

    /// The whole native pipeline from bytes: validate the document, read the export, plan,
    /// hash. Answers the number of calls.
    fn pipeline(desired: &[u8], export: &[u8]) -> usize {
        let document = validate(desired).expect("the desired document is valid");
        let export: Export = serde_json::from_slice(export).expect("the export parses");
        let planned = plan(&document, &export, PlanOptions { prune: true });
        black_box(plan_hash(&planned.calls));
        planned.calls.len()
    }

    /// The peer: two typed serde_json parses of the same bytes.
    fn peer(desired: &[u8], export: &[u8]) -> usize {
        let document: Document = serde_json::from_slice(desired).expect("parses");
        let export: Export = serde_json::from_slice(export).expect("parses");
        black_box(&document);
        export.objects.len()
    }

    fn median(mut f: impl FnMut(), runs: usize) -> Duration {
        f();
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect();
        times.sort();
        times[runs / 2]
    }

    pub fn run() {
        if let Some(dir) = std::env::var_os("PLANNER_BENCH_FIXTURE") {
            let dir = std::path::PathBuf::from(dir);
            let (desired, export) = fixture();
            std::fs::create_dir_all(&dir).expect("creates the fixture folder");
            std::fs::write(dir.join("document.json"), desired).expect("writes document.json");
            std::fs::write(dir.join("export.json"), export).expect("writes export.json");
            println!("wrote {}", dir.display());
            return;
        }

        let (desired, export_bytes) = fixture();
        let document = validate(&desired).expect("valid");
        let export: Export = serde_json::from_slice(&export_bytes).expect("parses");
        let options = PlanOptions { prune: true };
        let planned = plan(&document, &export, options);
        assert!(!planned.is_blocked(), "the benchmark plan is not blocked");
        println!(
            "maximal pair: document {} KiB, export {} KiB; plan: {:?}, {} calls",
            desired.len() / 1024,
            export_bytes.len() / 1024,
            planned.summary,
            planned.calls.len()
        );

        let mut c = Criterion::default()
            .configure_from_args()
            .sample_size(20)
            .measurement_time(Duration::from_secs(4));
        c.bench_function("validate (document bytes)", |b| {
            b.iter(|| validate(black_box(&desired)))
        });
        c.bench_function("plan (typed inputs)", |b| {
            b.iter(|| plan(black_box(&document), black_box(&export), options))
        });
        c.bench_function("hash (call list)", |b| {
            b.iter(|| plan_hash(black_box(&planned.calls)))
        });
        c.bench_function("pipeline: validate + read export + plan + hash", |b| {
            b.iter(|| pipeline(black_box(&desired), black_box(&export_bytes)))
        });
        c.bench_function("peer: two typed serde_json parses", |b| {
            b.iter(|| peer(black_box(&desired), black_box(&export_bytes)))
        });

        // The ratios, from medians measured here, one after the other in this run.
        let runs = 31;
        let t = |f: &mut dyn FnMut()| median(f, runs);
        let parse_doc = t(&mut || {
            black_box(serde_json::from_slice::<Document>(&desired).unwrap());
        });
        let parse_both = t(&mut || {
            black_box(peer(&desired, &export_bytes));
        });
        let validate_t = t(&mut || {
            black_box(validate(&desired).unwrap());
        });
        let plan_t = t(&mut || {
            black_box(plan(&document, &export, options));
        });
        let hash_t = t(&mut || {
            black_box(plan_hash(&planned.calls));
        });
        let whole = t(&mut || {
            black_box(pipeline(&desired, &export_bytes));
        });
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!("\nmedians of {runs} runs:");
        println!(
            "  {:<52}{:>9.2} ms",
            "peer: typed parse of the document",
            ms(parse_doc)
        );
        println!(
            "  {:<52}{:>9.2} ms",
            "peer: two typed parses (document + export)",
            ms(parse_both)
        );
        println!(
            "  {:<52}{:>9.2} ms  {:>5.2} x the document's parse",
            "validate",
            ms(validate_t),
            ratio(validate_t, parse_doc)
        );
        println!("  {:<52}{:>9.2} ms", "plan", ms(plan_t));
        println!("  {:<52}{:>9.2} ms", "hash", ms(hash_t));
        println!(
            "  {:<52}{:>9.2} ms  {:>5.2} x the two parses (target <= 1.3)",
            "validate + read export + plan + hash",
            ms(whole),
            ratio(whole, parse_both)
        );
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    native::run();
}

#[cfg(target_arch = "wasm32")]
fn main() {}
