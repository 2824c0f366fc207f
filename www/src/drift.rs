//! The seed's "Fleet drift page": who applied last and when, the applied planHash, when the
//! fleet was last checked, the drifted changes by kind, and the recent drift events.

use crate::api::{Event, Status};
use crate::changes::ChangeList;
use crate::format::{summary_line, utc};
use crate::state::Console;
use leptos::prelude::*;

/// The drift view.
#[component]
pub fn DriftView() -> impl IntoView {
    let console = expect_context::<Console>();
    let loading = move || console.status.with(|s| s.loading);
    view! {
        <section class="card" aria-labelledby="drift-title" aria-busy=move || loading().to_string()>
            <div class="card-head">
                <h2 id="drift-title">"Fleet drift"</h2>
                <div class="actions">
                    <Show when=move || console.check_available.get()>
                        <button
                            id="check-now"
                            type="button"
                            disabled=loading
                            on:click=move |_| console.check_now()
                        >
                            {move || if loading() { "Checking…" } else { "Check now" }}
                        </button>
                    </Show>
                </div>
            </div>
            {move || {
                console
                    .status
                    .with(|load| match (&load.value, &load.error) {
                        (_, Some(error)) => {
                            view! {
                                <p id="status-error" class="alert error" role="alert">
                                    <code>{error.code.clone()}</code>
                                    " "
                                    {error.message.clone()}
                                </p>
                            }
                                .into_any()
                        }
                        (Some(status), None) => status_view(status.clone()).into_any(),
                        (None, None) => {
                            view! {
                                <div class="skeleton" role="status">
                                    "Loading the fleet status…"
                                </div>
                            }
                                .into_any()
                        }
                    })
            }}
        </section>
        <Show when=move || console.events_available.get()>
            <Timeline />
        </Show>
    }
}

fn status_view(status: Status) -> impl IntoView {
    let Some(applied) = status.applied else {
        return view! {
            <div id="never-applied" class="empty">
                <p>
                    <strong>"Tenant " {status.tenant_id} " has never applied a document."</strong>
                </p>
                <p class="muted">
                    "Drift is measured against the last applied document. Plan one in the Plan and apply view and apply it to start tracking drift."
                </p>
            </div>
        }
            .into_any();
    };
    let checked = match applied.checked_at {
        Some(at) => utc(at),
        None => "not yet".to_owned(),
    };
    let state = match (&status.drift, applied.checked_at) {
        (Some(drift), _) => {
            let badge = if drift.blocked { "Drifted · blocked" } else { "Drifted" };
            view! {
                <div id="drift" class="drift">
                    <p class="state drifted">
                        <span class="badge warn">{badge}</span>
                        " The fleet no longer matches the applied document."
                    </p>
                    <p id="drift-summary" class="summary">{summary_line(&drift.summary)}</p>
                    <ChangeList changes=drift.changes.clone() id="drift-changes" />
                </div>
            }
                .into_any()
        }
        (None, Some(_)) => view! {
            <p id="in-sync" class="state ok">
                <span class="badge ok">"In sync"</span>
                " The fleet matches the applied document as of the last check."
            </p>
        }
        .into_any(),
        (None, None) => view! {
            <p id="not-checked" class="state muted">
                "Not checked since the last apply. The drift check runs on a schedule; Check now runs it at once."
            </p>
        }
        .into_any(),
    };
    view! {
        <dl class="facts" id="applied">
            <div>
                <dt>"Applied by"</dt>
                <dd id="applied-by"><code>{applied.applied_by}</code></dd>
            </div>
            <div>
                <dt>"Applied at"</dt>
                <dd id="applied-at">{utc(applied.applied_at)}</dd>
            </div>
            <div>
                <dt>"Prune"</dt>
                <dd>{if applied.prune { "yes" } else { "no" }}</dd>
            </div>
            <div>
                <dt>"Last checked"</dt>
                <dd id="checked-at">{checked}</dd>
            </div>
            <div class="wide">
                <dt>"Applied planHash"</dt>
                <dd><code id="applied-plan-hash" class="hash">{applied.plan_hash}</code></dd>
            </div>
        </dl>
        {status.error.map(|e| {
            view! {
                <p id="check-error" class="alert error" role="alert">
                    "The last drift check failed"
                    {e.at.map(|at| format!(" at {}", utc(at)))}
                    ": "
                    {e.message}
                </p>
            }
        })}
        {state}
    }
    .into_any()
}

/// Recent `fleet.drifted` and `fleet.converged` events, newest first.
#[component]
fn Timeline() -> impl IntoView {
    let console = expect_context::<Console>();
    view! {
        <section class="card" aria-labelledby="timeline-title">
            <div class="card-head">
                <h2 id="timeline-title">"Recent drift events"</h2>
                <div class="actions">
                    <button
                        id="refresh-events"
                        type="button"
                        class="secondary"
                        disabled=move || console.events.with(|e| e.loading)
                        on:click=move |_| console.refresh_events()
                    >
                        "Refresh"
                    </button>
                </div>
            </div>
            {move || {
                console
                    .events
                    .with(|load| match (&load.value, &load.error) {
                        (_, Some(error)) => view! {
                            <p class="alert error" role="alert">
                                <code>{error.code.clone()}</code> " " {error.message.clone()}
                            </p>
                        }
                        .into_any(),
                        (Some(events), None) if events.is_empty() => view! {
                            <p id="no-events" class="muted">"No drift events yet."</p>
                        }
                        .into_any(),
                        (Some(events), None) => view! {
                            <ol id="timeline" class="timeline">
                                {events.iter().cloned().map(event_item).collect_view()}
                            </ol>
                        }
                        .into_any(),
                        (None, None) => view! {
                            <div class="skeleton short" role="status">"Loading events…"</div>
                        }
                        .into_any(),
                    })
            }}
        </section>
    }
}

fn event_item(event: Event) -> impl IntoView {
    let drifted = event.kind == "fleet.drifted";
    let detail = if drifted {
        let summary = event
            .data
            .get("summary")
            .map(|s| {
                let count = |key| s.get(key).and_then(|n| n.as_u64()).unwrap_or(0) as usize;
                summary_line(&planner::Summary {
                    create: count("create"),
                    update: count("update"),
                    delete: count("delete"),
                    unchanged: count("unchanged"),
                    blocked: false,
                })
            })
            .unwrap_or_default();
        let blocked = event.data.get("blocked").and_then(|b| b.as_bool()) == Some(true);
        format!("{summary}{}", if blocked { " Blocked." } else { "" })
    } else {
        "The fleet matches the applied document again.".to_owned()
    };
    view! {
        <li class=if drifted { "event drifted" } else { "event converged" } data-testid="event">
            <time>{utc(event.created_at)}</time>
            <span class=if drifted { "badge warn" } else { "badge ok" }>{event.kind}</span>
            <span class="detail">{detail}</span>
        </li>
    }
}
