//! The plan golden cases (`tests/golden/<case>/`), embedded at compile time so they also run
//! as WebAssembly in headless Chromium: the browser must plan exactly what the server plans,
//! planHash included. `tests/golden.rs` runs the same cases natively and owns the expectations.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use planner::{Export, Plan, PlanOptions, plan, validate};

/// `(case, document, export, options or "")`, one line per folder with a `plan.json`.
macro_rules! cases {
    ($($case:literal $(, $options:literal)?;)*) => {
        [$((
            $case,
            include_str!(concat!("golden/", $case, "/document.json")),
            include_str!(concat!("golden/", $case, "/export.json")),
            include_str!(concat!("golden/", $case, "/plan.json")),
            cases!(@options $case $(, $options)?),
        ),)*]
    };
    (@options $case:literal, $options:literal) => {
        include_str!(concat!("golden/", $case, "/options.json"))
    };
    (@options $case:literal) => { "" };
}

#[test]
fn every_plan_golden_case_plans_the_same() {
    let cases = cases! {
        "fixed-fields";
        "missing-sections", "options";
        "no-prune-leaves-alone";
        "offered-pool-template";
        "prune-blocked", "options";
        "prune-deletes", "options";
        "prune-pool-in-use", "options";
        "references-by-id", "options";
        "seed-cli-example";
        "seed-create-all";
        "seed-unchanged", "options";
        "unknown-references";
        "updates";
    };
    for (case, document, export, expected, options) in cases {
        let document = validate(document.as_bytes()).unwrap_or_else(|e| panic!("{case}: {e}"));
        let export: Export = serde_json::from_str(export).expect("export.json parses");
        let options: PlanOptions = match options {
            "" => PlanOptions::default(),
            json => serde_json::from_str(json).expect("options.json parses"),
        };
        let expected: Plan = serde_json::from_str(expected).expect("plan.json parses");
        let planned = plan(&document, &export, options);
        assert_eq!(planned.plan_hash, expected.plan_hash, "{case}: planHash");
        assert_eq!(planned, expected, "{case}: plan");
    }
}

#[test]
fn the_case_list_names_every_folder() {
    // Natively only (the browser has no file system): a new golden case must be listed above.
    #[cfg(not(target_arch = "wasm32"))]
    {
        let source = include_str!("wasm_golden.rs");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.join("plan.json").is_file() {
                let name = path.file_name().unwrap().to_str().unwrap().to_owned();
                assert!(
                    source.contains(&format!("\"{name}\"")),
                    "list {name} in cases!"
                );
            }
        }
    }
}
