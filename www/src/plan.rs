//! Plan and apply: a document uploaded, dropped or pasted is validated and planned here, in
//! the browser, by the planner crate against the tenant's export (fetched once, refreshable).
//! Only `fleet.apply` sends it to the server, with the planHash shown on the page.

use crate::api::{self, ApiError, Change};
use crate::app::Tab;
use crate::changes::ChangeList;
use crate::format::{summary_line, utc};
use crate::state::Console;
use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use planner::{Document, Invalid, Plan, PlanOptions};
use wasm_bindgen::{JsCast, JsValue};

/// Where the apply stands.
#[derive(Debug, Clone, PartialEq)]
enum Applying {
    /// Nothing asked.
    Idle,
    /// The confirmation (with the counts) is shown.
    Confirming,
    /// `fleet.apply` is in flight.
    Sending,
    /// It applied: the number of calls that ran, and the planHash.
    Done(u64, String),
    /// It failed.
    Failed(ApiError),
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or_else(js_sys::Date::now)
}

/// The plan view.
#[component]
pub fn PlanView() -> impl IntoView {
    let console = expect_context::<Console>();
    let text = RwSignal::new(String::new());
    let file_name = RwSignal::new(None::<String>);
    let prune = RwSignal::new(false);
    let applying = RwSignal::new(Applying::Idle);
    // How long the last validation and plan took, in ms (shown under the plan).
    let validate_ms = RwSignal::new(0.0);
    let elapsed = RwSignal::new(None::<f64>);

    // Validation as you type; `None` for an empty editor.
    let validated = Memo::new(move |_| {
        let start = now_ms();
        let validated =
            text.with(|t| (!t.trim().is_empty()).then(|| planner::validate(t.as_bytes())));
        validate_ms.set(now_ms() - start);
        validated
    });
    let planned = Memo::new(move |_| {
        // Validation first, so the time below is the plan's alone.
        validated.track();
        let start = now_ms();
        let plan = validated.with(|v| match v {
            Some(Ok(document)) => console.export.with(|e| {
                e.value.as_ref().map(|exported| {
                    planner::plan(
                        document,
                        &exported.export,
                        PlanOptions { prune: prune.get() },
                    )
                })
            }),
            _ => None,
        });
        elapsed.set(Some(now_ms() - start));
        plan
    });
    // A confirmation or an error belongs to the plan it was about.
    Effect::new(move |previous: Option<Option<String>>| {
        let hash = planned.with(|p| p.as_ref().map(|p| p.plan_hash.to_string()));
        if previous.is_some_and(|h| h != hash) {
            applying.update(|a| {
                if matches!(a, Applying::Confirming | Applying::Failed(_)) {
                    *a = Applying::Idle;
                }
            });
        }
        hash
    });

    let set_text = move |value: String| {
        text.set(value);
        applying.update(|a| {
            if matches!(a, Applying::Done(..)) {
                *a = Applying::Idle;
            }
        });
    };
    let read_file = move |file: web_sys::File| {
        file_name.set(Some(file.name()));
        spawn_local(async move {
            match wasm_bindgen_futures::JsFuture::from(file.text()).await {
                Ok(content) => set_text(content.as_string().unwrap_or_default()),
                Err(_) => set_text(String::new()),
            }
        });
    };
    let dragging = RwSignal::new(false);

    view! {
        <section class="card" aria-labelledby="export-title">
            <div class="card-head">
                <h2 id="export-title">"Current export"</h2>
                <div class="actions">
                    <button
                        id="refresh-export"
                        type="button"
                        class="secondary"
                        disabled=move || console.export.with(|e| e.loading)
                        on:click=move |_| console.refresh_export()
                    >
                        {move || if console.export.with(|e| e.loading) { "Fetching…" } else { "Refresh export" }}
                    </button>
                    <button
                        id="download-export"
                        type="button"
                        class="secondary"
                        disabled=move || console.export.with(|e| e.value.is_none())
                        on:click=move |_| download_export(console)
                    >
                        "Download fleet.json"
                    </button>
                </div>
            </div>
            <ExportLine />
        </section>

        <section class="card" aria-labelledby="document-title">
            <div class="card-head">
                <h2 id="document-title">"Document"</h2>
                <div class="actions">
                    <input
                        id="document-file"
                        class="visually-hidden"
                        type="file"
                        accept=".json,application/json"
                        on:change=move |ev| {
                            let input: web_sys::HtmlInputElement = event_target(&ev);
                            if let Some(file) = input.files().and_then(|files| files.get(0)) {
                                read_file(file);
                            }
                            input.set_value("");
                        }
                    />
                    // After the input, so its keyboard focus can show on this label (style.css).
                    <label class="button secondary" for="document-file">"Upload a file…"</label>
                    <button
                        id="start-from-export"
                        type="button"
                        class="secondary"
                        disabled=move || console.export.with(|e| e.value.is_none())
                        on:click=move |_| {
                            file_name.set(None);
                            let config = console.export.with_untracked(|e| {
                                e.value.as_ref().map(|x| x.config.clone())
                            });
                            if let Some(config) = config {
                                set_text(serde_json::to_string_pretty(&config).unwrap_or_default());
                            }
                        }
                    >
                        "Start from the export"
                    </button>
                </div>
            </div>
            <div
                class="dropzone"
                class:dragging=move || dragging.get()
                on:dragover=move |ev: leptos::ev::DragEvent| {
                    ev.prevent_default();
                    dragging.set(true);
                }
                on:dragleave=move |_| dragging.set(false)
                on:drop=move |ev: leptos::ev::DragEvent| {
                    ev.prevent_default();
                    dragging.set(false);
                    if let Some(file) = ev.data_transfer().and_then(|d| d.files()).and_then(|f| f.get(0)) {
                        read_file(file);
                    }
                }
            >
                <label for="document">
                    "FleetConfig document (JSON): paste it, or drop a file here"
                    {move || file_name.get().map(|n| view! { <span class="muted">" · " {n}</span> })}
                </label>
                <textarea
                    id="document"
                    spellcheck="false"
                    placeholder="{\"version\": 1, \"sites\": [...], \"pools\": [...]}"
                    aria-describedby="validation"
                    prop:value=move || text.get()
                    on:input=move |ev| {
                        // Typed or pasted text is no longer the uploaded file.
                        file_name.set(None);
                        set_text(event_target_value(&ev));
                    }
                />
            </div>
            <div id="validation" aria-live="polite">
                {move || validated.with(|v| validation_view(v.as_ref()))}
            </div>
        </section>

        <section class="card" aria-labelledby="plan-title">
            <div class="card-head">
                <h2 id="plan-title">"Plan"</h2>
                <div class="actions">
                    <label class="toggle" for="prune">
                        <input
                            id="prune"
                            type="checkbox"
                            prop:checked=move || prune.get()
                            on:change=move |ev| prune.set(event_target_checked(&ev))
                        />
                        " Prune (delete what the document's lists leave out)"
                    </label>
                </div>
            </div>
            {move || {
                planned
                    .with(|plan| match plan {
                        Some(plan) => {
                            plan_view(plan, validate_ms.get_untracked(), elapsed.get_untracked()).into_any()
                        }
                        None => {
                            let why = if console.export.with(|e| e.value.is_none()) {
                                "The plan appears once the export is fetched and the document is valid."
                            } else {
                                "The plan appears here once the document is valid."
                            };
                            view! { <p id="no-plan" class="muted placeholder">{why}</p> }.into_any()
                        }
                    })
            }}
        </section>

        <ApplyPanel text planned validated prune applying />
    }
}

/// Which export the plan is made against, and when it was fetched.
#[component]
fn ExportLine() -> impl IntoView {
    let console = expect_context::<Console>();
    move || {
        console.export.with(|load| match (&load.value, &load.error) {
            (_, Some(error)) => view! {
                <p id="export-error" class="alert error" role="alert">
                    "The export could not be fetched: " <code>{error.code.clone()}</code> " "
                    {error.message.clone()}
                </p>
            }
            .into_any(),
            (Some(exported), None) => {
                let missing = exported
                    .export
                    .missing
                    .iter()
                    .map(|section| match section {
                        planner::Section::Sites => "sites",
                        planner::Section::ProviderAccounts => "providerAccounts",
                        planner::Section::Pools => "pools",
                        planner::Section::Flavors => "flavors",
                        planner::Section::SandboxTemplates => "sandboxTemplates",
                    })
                    .collect::<Vec<_>>();
                view! {
                    <p id="export-info">
                        "Plans are made in your browser against the export of "
                        <strong>{exported.export.tenant_id.clone()}</strong>
                        ", fetched at " <span id="export-fetched">{utc(exported.fetched_at as i64)}</span>
                        " (" {exported.export.objects.len()} " objects)."
                    </p>
                    {(!missing.is_empty()).then(|| view! {
                        <p class="muted small">"This deployment does not serve: " {missing.join(", ")} "."</p>
                    })}
                }
                .into_any()
            }
            (None, None) => view! {
                <p class="skeleton line" role="status">"Fetching the export…"</p>
            }
            .into_any(),
        })
    }
}

fn validation_view(validated: Option<&Result<Document, Invalid>>) -> AnyView {
    match validated {
        None => {
            view! { <p class="muted small">"Validated in your browser as you type."</p> }.into_any()
        }
        Some(Ok(_)) => view! { <p id="valid" class="ok small">"✓ Valid document."</p> }.into_any(),
        Some(Err(invalid)) => {
            let count = invalid.problems.len();
            view! {
                <div id="problems" class="problems" role="alert">
                    <p>
                        <strong>
                            {count} {if count == 1 { " problem" } else { " problems" }}
                        </strong>
                        " (nothing is sent to the server until the document is valid):"
                    </p>
                    <ul>
                        {invalid
                            .problems
                            .iter()
                            .map(|p| {
                                let path = if p.path.is_empty() { "(document)".to_owned() } else { p.path.clone() };
                                view! {
                                    <li data-testid="problem">
                                        <code class="path">{path}</code>
                                        " "
                                        <span>{p.message.clone()}</span>
                                    </li>
                                }
                            })
                            .collect_view()}
                    </ul>
                </div>
            }
            .into_any()
        }
    }
}

fn plan_view(plan: &Plan, validate_ms: f64, elapsed: Option<f64>) -> impl IntoView {
    let summary = plan.summary;
    let changes: Vec<Change> = plan.changes.iter().map(Change::from).collect();
    // Through a Value, as the planHash does: the calls' serializer is in the .wasm once.
    let calls = serde_json::to_value(&plan.calls)
        .and_then(|calls| serde_json::to_string_pretty(&calls))
        .unwrap_or_default();
    let count = plan.calls.len();
    let tile = |label: &'static str, n: usize, class: &'static str| {
        view! {
            <div class=format!("tile {class}")>
                <span class="n">{n}</span>
                <span class="label">{label}</span>
            </div>
        }
    };
    view! {
        <div class="tiles" aria-hidden="true">
            {tile("to create", summary.create, "create")}
            {tile("to update", summary.update, "update")}
            {tile("to delete", summary.delete, "delete")}
            {tile("unchanged", summary.unchanged, "unchanged")}
        </div>
        <p id="plan-summary" class="summary">
            {summary_line(&summary)}
            {summary.blocked.then(|| view! {
                " " <span id="plan-blocked" class="badge error">"Blocked: fix the document before applying"</span>
            })}
        </p>
        <ChangeList changes id="plan-changes" />
        <details class="calls">
            <summary>{count} {if count == 1 { " call" } else { " calls" }} " that fleet.apply would make, in order"</summary>
            <pre id="plan-calls">{calls}</pre>
        </details>
        <p class="hashline">
            "planHash " <code id="plan-hash" class="hash">{plan.plan_hash.to_string()}</code>
        </p>
        {elapsed.map(|ms| view! {
            <p class="muted small" id="plan-time">{format!("Validated in {validate_ms:.1} ms and planned in {ms:.1} ms, in your browser.")}</p>
        })}
    }
}

/// The apply button, its confirmation, and what the server answered.
#[component]
fn ApplyPanel(
    text: RwSignal<String>,
    planned: Memo<Option<Plan>>,
    validated: Memo<Option<Result<Document, Invalid>>>,
    prune: RwSignal<bool>,
    applying: RwSignal<Applying>,
) -> impl IntoView {
    let console = expect_context::<Console>();
    let tab = expect_context::<RwSignal<Tab>>();
    let confirm_ref = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(button) = confirm_ref.get() {
            let _ = button.focus();
        }
    });
    let can_apply = move || {
        planned.with(|p| p.as_ref().is_some_and(|p| !p.is_blocked()))
            && !matches!(applying.get(), Applying::Sending)
    };
    let send = move || {
        let Some(key) = console.key.get_untracked() else {
            return;
        };
        let tenant = console.tenant.get_untracked();
        // The text that was validated and planned (a plan exists only for a valid one).
        if !validated.with_untracked(|v| matches!(v, Some(Ok(_)))) {
            return;
        }
        let document = text.get_untracked();
        let Some(hash) = planned.with_untracked(|p| p.as_ref().map(|p| p.plan_hash.to_string()))
        else {
            return;
        };
        let prune = prune.get_untracked();
        applying.set(Applying::Sending);
        spawn_local(async move {
            match api::fleet_apply(&key, &tenant, &document, prune, &hash).await {
                Ok(result) => {
                    applying.set(Applying::Done(result.applied, hash));
                    console.refresh_status();
                    console.refresh_export();
                    console.refresh_events();
                }
                Err(error) => applying.set(Applying::Failed(error)),
            }
        });
    };
    view! {
        <section class="card apply" aria-labelledby="apply-title">
            <div class="card-head">
                <h2 id="apply-title">"Apply"</h2>
                <div class="actions">
                    <button
                        id="apply"
                        type="button"
                        disabled=move || !can_apply()
                        on:click=move |_| applying.set(Applying::Confirming)
                    >
                        {move || if matches!(applying.get(), Applying::Sending) { "Applying…" } else { "Apply…" }}
                    </button>
                </div>
            </div>
            <p class="muted small">
                "Sends the document and the planHash shown to fleet.apply. The server refuses if the fleet moved since the export."
            </p>
            {move || match applying.get() {
                Applying::Idle | Applying::Sending => None,
                Applying::Confirming => {
                    let (summary, calls) = planned
                        .with(|p| p.as_ref().map(|p| (p.summary, p.calls.len())))
                        .unwrap_or_default();
                    let tenant = console.tenant.get_untracked();
                    Some(view! {
                        <div
                            id="confirm"
                            class="confirm"
                            role="alertdialog"
                            aria-labelledby="confirm-text"
                            on:keydown=move |ev| {
                                if ev.key() == "Escape" {
                                    applying.set(Applying::Idle);
                                }
                            }
                        >
                            <p id="confirm-text">
                                "Apply to tenant " <strong>{tenant}</strong> ": "
                                <span id="confirm-summary">{summary_line(&summary)}</span>
                                " " {calls} {if calls == 1 { " call runs" } else { " calls run" }}
                                ", in one transaction; the document becomes the drift baseline."
                            </p>
                            <div class="actions">
                                <button id="confirm-apply" type="button" node_ref=confirm_ref on:click=move |_| send()>
                                    "Apply now"
                                </button>
                                <button id="cancel-apply" type="button" class="secondary" on:click=move |_| applying.set(Applying::Idle)>
                                    "Cancel"
                                </button>
                            </div>
                        </div>
                    }.into_any())
                }
                Applying::Done(count, hash) => Some(view! {
                    <div id="apply-result" class="alert ok" role="status">
                        <p>
                            "Applied: " {count} {if count == 1 { " call ran" } else { " calls ran" }}
                            ". The drift baseline is now planHash " <code class="hash">{hash}</code> "."
                        </p>
                        <button id="show-drift" type="button" class="secondary" on:click=move |_| tab.set(Tab::Drift)>
                            "Show the drift view"
                        </button>
                    </div>
                }.into_any()),
                Applying::Failed(error) if error.code == "CONFIG_DRIFT" => Some(view! {
                    <div id="config-drift" class="alert warn" role="alert">
                        <p><strong>"The fleet moved since the export."</strong></p>
                        <p>
                            "Someone changed the fleet (by hand, or with another apply) after the export this plan was made against, so the server would now make different calls than the ones you reviewed. Nothing was applied. Refresh the export and review the new plan."
                        </p>
                        <p class="small"><code>{error.code.clone()}</code> " " {error.message.clone()}</p>
                        <button
                            id="refresh-replan"
                            type="button"
                            on:click=move |_| {
                                applying.set(Applying::Idle);
                                console.refresh_export();
                            }
                        >
                            "Refresh the export and re-plan"
                        </button>
                    </div>
                }.into_any()),
                Applying::Failed(error) => {
                    let path = error.details.get("path").and_then(|p| p.as_str()).map(str::to_owned);
                    Some(view! {
                        <div id="apply-error" class="alert error" role="alert">
                            <p><strong>"The apply failed: "</strong><code>{error.code.clone()}</code></p>
                            <p>{error.message.clone()}</p>
                            {path.map(|p| view! { <p class="small">"At " <code class="path">{p}</code></p> })}
                        </div>
                    }.into_any())
                }
            }}
        </section>
    }
}

/// Saves the current export's config as `fleet.json` (a blob URL, revoked at once).
fn download_export(console: Console) {
    let Some(config) = console
        .export
        .with_untracked(|e| e.value.as_ref().map(|x| x.config.clone()))
    else {
        return;
    };
    let mut text = serde_json::to_string_pretty(&config).unwrap_or_default();
    text.push('\n');
    let parts = js_sys::Array::of1(&JsValue::from_str(&text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/json");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Some(anchor) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        anchor.set_href(&url);
        anchor.set_download("fleet.json");
        anchor.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}
