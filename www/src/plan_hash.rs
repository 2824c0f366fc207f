//! A call list and its planHash, computed in the browser by the planner crate: the same code
//! the server runs, so the hash shown here is the one the server checks at apply.

use leptos::prelude::*;

/// A small call list to start from (the shapes of `docs/contracts.md`).
const EXAMPLE_CALLS: &str = r#"[
  {
    "method": "site.create",
    "input": {
      "tenantId": "root",
      "idempotencyKey": "fleet:root:site:fra",
      "kind": "shared",
      "region": "eu-central"
    }
  },
  {
    "method": "pool.update",
    "input": {
      "tenantId": "root",
      "id": "pool_01jb8r7v6k2m4n5p6q7r8s9t0w",
      "ifRevision": 3,
      "policy": { "disruptionBudget": 0.1 }
    }
  }
]"#;

/// An editable call list (`#calls`) and its planHash (`#plan-hash`), recomputed on every edit.
#[component]
pub fn PlanHashView() -> impl IntoView {
    let (calls, set_calls) = signal(EXAMPLE_CALLS.to_owned());
    let hash = Memo::new(move |_| {
        calls.with(|text| {
            serde_json::from_str::<serde_json::Value>(text)
                .map(|value| planner::PlanHash::of(&value).to_string())
                .map_err(|err| format!("Not valid JSON: {err}"))
        })
    });

    view! {
        <section aria-labelledby="plan-hash-title">
            <h2 id="plan-hash-title">"planHash, computed in your browser"</h2>
            <label for="calls">"Calls (JSON)"</label>
            <textarea
                id="calls"
                spellcheck="false"
                prop:value=calls
                on:input=move |ev| set_calls.set(event_target_value(&ev))
            />
            <p>
                "planHash: "
                {move || match hash.get() {
                    Ok(hash) => view! { <code id="plan-hash" class="hash">{hash}</code> }.into_any(),
                    Err(message) => {
                        view! { <span id="plan-hash-error" class="error" role="alert">{message}</span> }
                            .into_any()
                    }
                }}
            </p>
        </section>
    }
}
