//! The console's components in a real browser (wasm-bindgen-test in headless Chromium):
//! mounted on a fresh element, read back from the DOM.
//!
//! Run: `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
//! WASM_BINDGEN_TEST_WEBDRIVER_JSON=planner/webdriver.json cargo test -p www --target
//! wasm32-unknown-unknown --tests` (as `scripts/test` runs the planner's).
#![cfg(target_arch = "wasm32")]

use leptos::prelude::*;
use serde_json::json;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
use www::api::Change;
use www::app::{Tab, tab_after_key};
use www::changes::ChangeList;
use www::format::{count, pretty, pretty_text, utc};

wasm_bindgen_test_configure!(run_in_browser);

/// Mounts `view` on a new element of the page and returns that element.
fn mount<V: IntoView + 'static>(view: impl FnOnce() -> V + 'static) -> web_sys::HtmlElement {
    let document = web_sys::window().unwrap().document().unwrap();
    let host: web_sys::HtmlElement = document.create_element("div").unwrap().unchecked_into();
    document.body().unwrap().append_child(&host).unwrap();
    leptos::mount::mount_to(host.clone(), view).forget();
    host
}

fn change(kind: &str, name: &str, action: &str) -> Change {
    Change {
        kind: kind.to_owned(),
        name: name.to_owned(),
        action: action.to_owned(),
        fields: Vec::new(),
        before: None,
        after: None,
        blocked: false,
        note: None,
    }
}

fn texts(host: &web_sys::HtmlElement, css: &str) -> Vec<String> {
    let list = host.query_selector_all(css).unwrap();
    (0..list.length())
        .filter_map(|i| list.item(i))
        .map(|node| node.text_content().unwrap_or_default())
        .collect()
}

#[wasm_bindgen_test]
fn changes_are_grouped_by_kind_in_the_clis_words() {
    let mut policy = change("pool", "vps-fra", "update");
    policy.fields = vec!["policy".to_owned()];
    policy.before = json!({ "policy": { "disruptionBudget": 0.2 } })
        .as_object()
        .cloned();
    policy.after = json!({ "policy": { "disruptionBudget": 0.1 } })
        .as_object()
        .cloned();
    let mut site = change("site", "ber", "delete");
    site.blocked = true;
    site.note = Some("sites are never deleted".to_owned());
    let changes = vec![
        change("site", "fra", "unchanged"),
        site,
        policy,
        change("offer", "vps-fra -> globex", "create"),
    ];
    let host = mount(move || view! { <ChangeList changes id="under-test" /> });

    assert_eq!(texts(&host, "h3").len(), 3, "{}", host.inner_html());
    assert!(texts(&host, "h3")[0].starts_with("Sites"));
    assert_eq!(
        texts(&host, ".line"),
        [
            "- site ber",
            "~ pool vps-fra (policy)",
            "+ offer vps-fra -> globex"
        ]
    );
    // Blocked changes stand out, with their note.
    assert_eq!(
        texts(&host, ".change.blocked .note"),
        ["Blocked: sites are never deleted"]
    );
    // Differing fields as before -> after.
    assert_eq!(texts(&host, ".fields th"), ["policy"]);
    assert_eq!(
        texts(&host, ".fields .before"),
        [r#"{"disruptionBudget":0.2}"#]
    );
    assert_eq!(
        texts(&host, ".fields .after"),
        [r#"{"disruptionBudget":0.1}"#]
    );
}

#[wasm_bindgen_test]
fn no_changes_says_so() {
    let host = mount(
        || view! { <ChangeList changes=vec![change("site", "fra", "unchanged")] id="none" /> },
    );
    assert_eq!(texts(&host, "p"), ["No changes."]);
}

#[wasm_bindgen_test]
fn text_is_escaped() {
    let host = mount(|| {
        view! { <ChangeList changes=vec![change("site", "<img src=x onerror=alert(1)>", "create")] id="esc" /> }
    });
    assert!(host.query_selector("img").unwrap().is_none());
    assert_eq!(
        texts(&host, ".line"),
        ["+ site <img src=x onerror=alert(1)>"]
    );
}

#[wasm_bindgen_test]
fn dates_are_utc() {
    assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
    assert_eq!(utc(1_790_251_200_000), "2026-09-24 12:00:00 UTC");
    assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    assert_eq!(utc(-1), "1969-12-31 23:59:59 UTC");
}

/// A count of one takes the noun's singular ("1 objects" was written for acme's export).
#[wasm_bindgen_test]
fn a_count_of_one_is_singular() {
    assert_eq!(count(1, "object", "objects"), "1 object");
    assert_eq!(count(0, "object", "objects"), "0 objects");
    assert_eq!(count(2, "call ran", "calls ran"), "2 calls ran");
    assert_eq!(count(1_000, "line", "lines"), "1000 lines");
}

#[wasm_bindgen_test]
fn pretty_json_is_serde_jsons() {
    let value = json!({
        "version": 1,
        "sites": [{ "name": "fra", "tags": [], "meta": {} }],
        "budget": 0.1,
        "text": "a \"quoted\" line\n",
        "none": null
    });
    assert_eq!(
        pretty(&value),
        serde_json::to_string_pretty(&value).unwrap()
    );
    assert_eq!(pretty(&json!([])), "[]");
}

#[wasm_bindgen_test]
fn pretty_text_indents_compact_json_as_pretty_does() {
    let value = json!([{
        "input": { "name": "a,b:{c}[d]", "tags": [], "meta": {}, "list": [[1, [2]], {}] },
        "method": "pool.create",
        "text": "\\\"}]\u{1f},\n",
        "n": -1.5e-7,
        "ok": true,
        "none": null
    }, [], {}]);
    assert_eq!(pretty_text(&value.to_string()), pretty(&value));
    assert_eq!(pretty_text("[]"), "[]");
    assert_eq!(pretty_text("\"}\""), "\"}\"");
}

#[wasm_bindgen_test]
fn arrow_keys_move_between_tabs() {
    assert_eq!(tab_after_key(Tab::Drift, "ArrowRight"), Some(Tab::Plan));
    assert_eq!(tab_after_key(Tab::Plan, "ArrowRight"), Some(Tab::Drift));
    assert_eq!(tab_after_key(Tab::Drift, "ArrowLeft"), Some(Tab::Plan));
    assert_eq!(tab_after_key(Tab::Plan, "Home"), Some(Tab::Drift));
    assert_eq!(tab_after_key(Tab::Drift, "End"), Some(Tab::Plan));
    assert_eq!(tab_after_key(Tab::Drift, "Enter"), None);
}

/// The console reads `fleet.export`'s answer by hand (no derived `Deserialize` in the .wasm):
/// every field the planner's `Export` has, optional ones included, must come through, or the
/// page would plan differently from the server.
#[wasm_bindgen_test]
fn an_export_reads_as_the_planner_reads_it() {
    let answer = json!({
        "tenantId": "root",
        "caller": "usr_ops",
        "config": {
            "version": 1,
            "sites": [{ "name": "fra", "kind": "shared", "region": "eu" }],
            "pools": [{ "name": "vps-fra", "site": "fra", "class": "vps-host",
                        "ownerQuota": { "gpu": 8 }, "offers": [{ "tenant": "acme", "quota": { "vcpu": 4 } }] }],
            "flavors": [{ "pool": "vps-fra", "name": "g1", "vcpu": 1, "memoryGiB": 1, "diskGiB": 1 }]
        },
        "missing": ["sandboxTemplates"],
        "objects": [
            { "kind": "site", "name": "fra", "id": "site_1", "revision": 2 },
            { "kind": "pool", "name": "vps-fra", "id": "pool_1", "revision": 3,
              "usedBy": { "tenantId": "acme", "kind": "sandboxTemplate", "name": "acme-py" } },
            { "kind": "ownerQuota", "name": "vps-fra:gpu", "revision": 1 },
            { "kind": "flavor", "name": "vps-fra/g1", "id": "flv_1", "revision": 1,
              "usedBy": { "tenantId": "acme", "kind": "sandboxTemplate", "name": "acme-py" } }
        ],
        "tenants": ["acme", "root"],
        "offeredPools": [{ "id": "pool_9", "flavors": [{ "name": "g9", "id": "flv_9" }] }]
    });
    let expected = planner::Export::from_value(&answer).unwrap();
    assert!(expected.objects[1].used_by.is_some());
    let (read, config) = www::api::read_export(answer.clone()).unwrap();
    assert_eq!(read, expected);
    assert_eq!(config, answer["config"]);
}

/// The export is the state, not a document: a list over a document's 1000 items (the server
/// serves such a tenant) reads whole and in order, as the planner's own reader reads it.
#[wasm_bindgen_test]
fn an_export_over_a_thousand_items_reads_whole() {
    let sites: Vec<_> = (0..2500)
        .map(|i| json!({ "name": format!("s{i}"), "kind": "shared", "region": "eu" }))
        .collect();
    let pools: Vec<_> = (0..1001)
        .map(|i| json!({ "name": format!("p{i}"), "site": "s0", "class": "vps-host" }))
        .collect();
    let answer = json!({
        "tenantId": "root",
        "caller": "usr_ops",
        "config": { "version": 1, "sites": sites, "pools": pools, "flavors": [] },
    });
    let expected = planner::Export::from_value(&answer).unwrap();
    assert_eq!(expected.config.sites.as_ref().map(Vec::len), Some(2500));
    let (read, config) = www::api::read_export(answer.clone()).unwrap();
    assert_eq!(read, expected);
    assert_eq!(config, answer["config"]);
}
