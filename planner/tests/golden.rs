//! Data-driven golden cases, one folder each under `tests/golden/`:
//! - a plan case: `document.json`, `export.json`, optional `options.json` -> `plan.json`;
//! - a validation case (no `export.json`): `document.json` -> `problems.json`.
//!
//! `UPDATE_EXPECT=1 cargo test -p planner --test golden` rewrites the expectations; review the
//! diff like any other change.
#![cfg(not(target_arch = "wasm32"))]

use planner::{Export, PlanOptions, Problem, plan, validate};
use std::fs;
use std::path::{Path, PathBuf};

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases: Vec<PathBuf> = fs::read_dir(&root)
        .expect("tests/golden exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.join("document.json").is_file())
        .collect();
    cases.sort();
    cases
}

/// What a case produces, as pretty JSON with a final newline, and the file it is compared to.
fn run(case: &Path) -> (String, PathBuf) {
    let document = fs::read(case.join("document.json")).expect("document.json");
    let export_path = case.join("export.json");
    if !export_path.is_file() {
        let problems: Vec<Problem> = match validate(&document) {
            Ok(_) => Vec::new(),
            Err(invalid) => invalid.problems,
        };
        return (pretty(&problems), case.join("problems.json"));
    }
    let document = validate(&document)
        .unwrap_or_else(|invalid| panic!("{}: document.json: {invalid:#?}", case.display()));
    let export_bytes = fs::read(&export_path).expect("export.json");
    let export = Export::from_json(&export_bytes)
        .unwrap_or_else(|e| panic!("{}: export.json: {e}", case.display()));
    let options: PlanOptions = match fs::read(case.join("options.json")) {
        Ok(bytes) => serde_json::from_slice(&bytes).expect("options.json"),
        Err(_) => PlanOptions::default(),
    };
    let planned = plan(&document, &export, options);
    // The plan is deterministic: a second run gives the same bytes.
    assert_eq!(planned, plan(&document, &export, options));
    (pretty(&planned), case.join("plan.json"))
}

fn pretty<T: serde::Serialize>(value: &T) -> String {
    let mut out = serde_json::to_string_pretty(value).expect("serializes");
    out.push('\n');
    out
}

#[test]
fn golden_cases() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let cases = cases();
    assert!(cases.len() >= 10, "golden cases are missing");
    let mut failed = Vec::new();
    for case in &cases {
        let (actual, expect_path) = run(case);
        let expected = fs::read_to_string(&expect_path).unwrap_or_default();
        if actual == expected {
            continue;
        }
        if update {
            fs::write(&expect_path, &actual).expect("writes the expectation");
        } else {
            failed.push(format!(
                "{}:\n--- expected\n{expected}\n--- actual\n{actual}",
                expect_path.display()
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} golden case(s) differ (UPDATE_EXPECT=1 rewrites them):\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// The seed's example document validates clean.
#[test]
fn seed_example_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/seed-create-all");
    let bytes = fs::read(root.join("document.json")).unwrap();
    let document = validate(&bytes).expect("the seed's example is valid");
    assert_eq!(document.version, 1);
}
