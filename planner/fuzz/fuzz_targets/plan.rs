//! `planner::plan` of a valid document against every golden export, with and without prune:
//! never panics, is deterministic, and its planHash is the hash of its calls; a blocked
//! change never has a call.
#![no_main]

use libfuzzer_sys::fuzz_target;
use planner::{Export, PlanOptions};
use std::sync::OnceLock;

/// The golden cases' exports (the states the planner is tested against).
const EXPORTS: &[&str] = &[
    include_str!("../../tests/golden/fixed-fields/export.json"),
    include_str!("../../tests/golden/missing-sections/export.json"),
    include_str!("../../tests/golden/no-prune-leaves-alone/export.json"),
    include_str!("../../tests/golden/offered-pool-template/export.json"),
    include_str!("../../tests/golden/prune-blocked/export.json"),
    include_str!("../../tests/golden/prune-deletes/export.json"),
    include_str!("../../tests/golden/prune-pool-in-use/export.json"),
    include_str!("../../tests/golden/references-by-id/export.json"),
    include_str!("../../tests/golden/seed-cli-example/export.json"),
    include_str!("../../tests/golden/seed-create-all/export.json"),
    include_str!("../../tests/golden/seed-unchanged/export.json"),
    include_str!("../../tests/golden/unknown-references/export.json"),
    include_str!("../../tests/golden/updates/export.json"),
];

fn exports() -> &'static [Export<'static>] {
    static PARSED: OnceLock<Vec<Export<'static>>> = OnceLock::new();
    PARSED.get_or_init(|| {
        EXPORTS
            .iter()
            .map(|text| serde_json::from_str(text).expect("a golden export parses"))
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(document) = planner::validate(data) else {
        return;
    };
    for export in exports() {
        for prune in [false, true] {
            let options = PlanOptions { prune };
            let plan = planner::plan(&document, export, options);
            assert_eq!(plan, planner::plan(&document, export, options), "deterministic");
            assert_eq!(plan.plan_hash, planner::plan_hash(&plan.calls), "planHash of the calls");
            let blocked = plan.changes.iter().any(|c| c.blocked);
            assert_eq!(plan.is_blocked(), blocked, "summary.blocked says so");
        }
    }
});
