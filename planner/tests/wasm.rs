//! RFC 8785 and planHash vectors that must hold wherever the planner runs: natively (`cargo
//! test`) and as WebAssembly in headless Chromium (`scripts/test` runs this file with
//! `--target wasm32-unknown-unknown` through wasm-bindgen-test-runner).

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use planner::{PlanHash, canonicalize};
use serde_json::Value;

fn check(input: &str, expect: &str) {
    let value: Value = serde_json::from_str(input).unwrap();
    assert_eq!(canonicalize(&value), expect, "canonical form of {input}");
}

#[test]
fn numbers_print_as_ecmascript_prints_them() {
    // RFC 8785, section 3.2.2.3 and appendix B.
    check(
        "[1e21, 1e-7, 0.000001, -0, 333333333.33333329]",
        "[1e+21,1e-7,0.000001,0,333333333.3333333]",
    );
    check(
        "[1E+30, 4.50, 2e-3, 0.000001e-1, 100, -1.5]",
        "[1e+30,4.5,0.002,1e-7,100,-1.5]",
    );
}

#[test]
fn strings_are_escaped_minimally() {
    check(
        r#""\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/""#,
        r#""€$\u000f\nA'B\"\\\\\"/""#,
    );
}

#[test]
fn members_sort_by_utf16_code_units() {
    // RFC 8785, section 3.2.3: U+1F600 (a surrogate pair) sorts before U+FB33.
    let input = r#"{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}"#;
    check(
        input,
        "{\"\\r\":2,\"1\":4,\"\u{80}\":6,\"ö\":7,\"€\":1,\"😀\":5,\"\u{fb33}\":3}",
    );
}

#[test]
fn plan_hash_is_the_sha256_of_the_canonical_calls() {
    // Expectations computed independently of this crate (Python's json and hashlib).
    let empty: Value = serde_json::from_str("[]").unwrap();
    assert_eq!(
        PlanHash::of(&empty).to_string(),
        "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
    );
    let calls: Value = serde_json::from_str(
        r#"[
          {"method": "site.create", "input": {"tenantId": "root",
            "idempotencyKey": "fleet:root:site:fra", "kind": "shared", "region": "eu-central"}},
          {"method": "pool.update", "input": {"tenantId": "root",
            "id": "pool_01jb8r7v6k2m4n5p6q7r8s9t0w", "ifRevision": 3,
            "policy": {"disruptionBudget": 0.1}}}
        ]"#,
    )
    .unwrap();
    assert_eq!(
        PlanHash::of(&calls).to_string(),
        "4cc0ce661b8d4044009fc527f40fff9c4da109e28ea4bfb4e1ac0a4b245a2373"
    );
}
