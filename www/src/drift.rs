//! The seed's "Fleet drift page": who applied last and when, the applied planHash, when the
//! fleet was last checked, the drifted changes by kind, and the recent drift events.

use crate::api::{ApiError, Event, Status};
use crate::changes::{ChangeRef, changes_html};
use crate::format::{summary_line, utc};
use crate::markup::Markup;
use crate::state::{Console, Load};
use leptos::prelude::*;

/// The drift view.
#[component]
pub fn DriftView() -> impl IntoView {
    let console = expect_context::<Console>();
    let loading = move || console.status.with(|s| s.loading);
    // Nothing to check for a tenant that never applied a document.
    let never_applied = move || {
        console
            .status
            .with(|s| s.value.as_ref().is_some_and(|v| v.applied.is_none()))
    };
    // "Checking…" for Check now's check of a shown status: not while the first status loads,
    // nor for a reload (Refresh, after an apply) that checks nothing.
    let checking =
        move || console.checking.get() && console.status.with(|s| s.loading && s.value.is_some());
    // The status's HTML is written again only when more than "Last checked" changed (each
    // check of an unchanged fleet moves it): a text selected in the card stays selected.
    let status_box = NodeRef::<leptos::html::Div>::new();
    let frame = StoredValue::new(String::new());
    Effect::new(move |_| {
        let Some(element) = status_box.get() else {
            return;
        };
        console.status.with(|load| {
            let without = status_load_html(load, false);
            if frame.with_value(|f| *f != without) {
                element.set_inner_html(&status_load_html(load, true));
                frame.set_value(without);
            } else if let Ok(Some(dd)) = element.query_selector("#checked-at") {
                dd.set_text_content(load.value.as_ref().map(checked_text).as_deref());
            }
        });
    });
    view! {
        <section class="card" aria-labelledby="drift-title" aria-busy=move || loading().to_string()>
            <div class="card-head">
                <h2 id="drift-title">"Fleet drift"</h2>
                <div class="actions">
                    <button
                            id="check-now"
                            class="steady"
                            hidden=move || !console.check_available.get() || never_applied()
                            type="button"
                            // Not `disabled`: the button keeps the focus while it works.
                            aria-disabled=move || loading().to_string()
                            on:click=move |_| {
                                if !console.status.with_untracked(|s| s.loading) {
                                    console.check_now()
                                }
                            }
                        >
                            <span>{move || if checking() { "Checking…" } else { "Check now" }}</span>
                            // Both labels, hidden: the button keeps the longer one's width.
                            <span class="reserve" aria-hidden="true">"Check now"</span>
                            <span class="reserve" aria-hidden="true">"Checking…"</span>
                        </button>
                </div>
            </div>
            <div class="status" node_ref=status_box></div>
        </section>
        <Timeline />
    }
}

/// A failed quiet re-read, under the card's heading: what is shown stays, with when it was
/// read; a refused key stops the re-reads and says so (the page is left as it is, and so is
/// a document being edited in the plan view).
fn stale_note(m: &mut Markup, stale: Option<&(ApiError, i64)>, read_at: i64, what: &str) {
    let Some((error, at)) = stale else {
        return;
    };
    // Plain text pieces, no `format!`: the .wasm stays smaller.
    let refused = error.is_refusal();
    let id = if refused { "-refused" } else { "-stale" };
    m.open(
        "p",
        &[
            ("id", &[what, id].concat()),
            ("class", if refused { "alert warn" } else { "muted small" }),
            ("role", "status"),
        ],
    );
    if refused {
        m.text("This key was refused (")
            .element("code", &[], &error.code)
            .text(" ")
            .text(&error.message)
            .text("), so the page stopped refreshing. Sign in again to continue.");
    } else {
        m.text("Could not refresh at ")
            .text(&utc(*at)[11..])
            .text(": ")
            .element("code", &[], &error.code)
            .text(" ")
            .text(&error.message)
            .text("; showing the ")
            .text(what)
            .text(" read at ")
            .text(&utc(read_at)[11..])
            .text(".");
    }
    m.close("p");
}

/// The status, its loading state or its error, as HTML. A failed refresh keeps the status
/// shown.
fn status_load_html(load: &Load<Status>, checked: bool) -> String {
    let mut m = Markup::default();
    stale_note(&mut m, load.stale.as_ref(), load.read_at, "status");
    if let Some(error) = &load.error {
        m.open(
            "p",
            &[
                ("id", "status-error"),
                ("class", "alert error"),
                ("role", "alert"),
            ],
        )
        .element("code", &[], &error.code)
        .text(" ")
        .text(&error.message)
        .close("p");
    }
    let mut html = m.finish();
    match &load.value {
        Some(status) => html.push_str(&status_html(status, checked)),
        None if load.error.is_none() && load.stale.is_none() => {
            html.push_str(
                "<div class=\"skeleton\" role=\"status\">Loading the fleet status…</div>",
            );
        }
        None => {}
    }
    html
}

/// The events, their loading state or their error, as HTML. A failed refresh keeps the
/// events shown.
fn events_load_html(load: &Load<Vec<Event>>) -> String {
    let mut m = Markup::default();
    // A key with compute:fleet:admin alone sees the drift, without its history.
    let forbidden = [load.error.as_ref(), load.stale.as_ref().map(|s| &s.0)]
        .into_iter()
        .flatten()
        .any(|e| e.code == "FORBIDDEN");
    if forbidden {
        m.element(
            "p",
            &[("id", "events-forbidden"), ("class", "muted")],
            "This key cannot read events (events:event:read), so the drift's history is not shown.",
        );
        return m.finish();
    }
    stale_note(&mut m, load.stale.as_ref(), load.read_at, "events");
    if let Some(error) = &load.error {
        m.open("p", &[("class", "alert error"), ("role", "alert")])
            .element("code", &[], &error.code)
            .text(" ")
            .text(&error.message)
            .close("p");
    }
    match &load.value {
        Some(events) if events.is_empty() => {
            m.element(
                "p",
                &[("id", "no-events"), ("class", "muted")],
                "No drift events yet.",
            );
        }
        Some(events) => {
            let mut html = m.finish();
            html.push_str("<ol id=\"timeline\" class=\"timeline\">");
            html.push_str(&events_html(events));
            html.push_str("</ol>");
            return html;
        }
        None if load.error.is_none() && load.stale.is_none() => {
            m.element(
                "div",
                &[("class", "skeleton short"), ("role", "status")],
                "Loading events…",
            );
        }
        None => {}
    }
    m.finish()
}

/// The status as HTML: the applied document's facts, the last check's error, and the drift.
fn status_html(status: &Status, checked: bool) -> String {
    let mut m = Markup::default();
    let Some(applied) = &status.applied else {
        m.open("div", &[("id", "never-applied"), ("class", "empty")])
            .open("p", &[])
            .element(
                "strong",
                &[],
                &format!("Tenant {} has never applied a document.", status.tenant_id),
            )
            .close("p")
            .element(
                "p",
                &[("class", "muted")],
                "Drift is measured against the last applied document. Plan one in the Plan and apply view and apply it to start tracking drift.",
            )
            .close("div");
        return m.finish();
    };
    // Left empty for the comparison in DriftView.
    let checked = if checked {
        checked_text(status)
    } else {
        String::new()
    };
    let fact = |m: &mut Markup, class: &str, term: &str| {
        m.open("div", &[("class", class)]).element("dt", &[], term);
    };
    m.open("dl", &[("class", "facts"), ("id", "applied")]);
    fact(&mut m, "", "Applied by");
    m.open("dd", &[("id", "applied-by")])
        .element("code", &[], &applied.applied_by)
        .close("dd")
        .close("div");
    fact(&mut m, "", "Applied at");
    m.element("dd", &[("id", "applied-at")], &utc(applied.applied_at))
        .close("div");
    fact(&mut m, "", "Last checked");
    m.element("dd", &[("id", "checked-at")], &checked)
        .close("div");
    fact(&mut m, "", "Prune");
    m.element("dd", &[], if applied.prune { "yes" } else { "no" })
        .close("div");
    fact(&mut m, "wide", "Applied planHash");
    m.open("dd", &[])
        .element(
            "code",
            &[("id", "applied-plan-hash"), ("class", "hash")],
            &applied.plan_hash,
        )
        .close("dd")
        .close("div")
        .close("dl");
    if let Some(e) = &status.error {
        let at =
            e.at.map(|at| format!(" at {}", utc(at)))
                .unwrap_or_default();
        m.element(
            "p",
            &[
                ("id", "check-error"),
                ("class", "alert error"),
                ("role", "alert"),
            ],
            &format!("The last drift check failed{at}: {}", e.message),
        );
    }
    match (&status.drift, applied.checked_at) {
        (Some(drift), _) => {
            let badge = if drift.blocked {
                "Drifted · blocked"
            } else {
                "Drifted"
            };
            m.open("div", &[("id", "drift"), ("class", "drift")])
                .open("p", &[("class", "state drifted")])
                .element("span", &[("class", "badge warn")], badge)
                .text(" The fleet no longer matches the applied document.")
                .close("p")
                .element(
                    "p",
                    &[("id", "drift-summary"), ("class", "summary")],
                    &summary_line(&drift.summary),
                );
            // The server keeps the first 50 changes of a drift; its summary counts all.
            let total = drift.summary.create + drift.summary.update + drift.summary.delete;
            let listed = drift
                .changes
                .iter()
                .filter(|c| c.action != "unchanged")
                .count();
            if total > listed {
                m.element(
                    "p",
                    &[("id", "drift-cut"), ("class", "muted")],
                    &format!(
                        "The first {} of {} changes are listed; plan the document to see them all.",
                        thousands(listed),
                        thousands(total)
                    ),
                );
            }
            // A drift is the plan back to the document: say which side is which.
            m.element(
                    "p",
                    &[("id", "drift-legend"), ("class", "legend muted small")],
                    "Each change is what applying the document again would do; a field shows its live value → the document's.",
                )
                .open("div", &[("id", "drift-changes"), ("class", "changes")]);
            let mut html = m.finish();
            html.push_str(&changes_html(
                drift.changes.iter().map(ChangeRef::from),
                usize::MAX,
            ));
            html.push_str("</div></div>");
            return html;
        }
        (None, Some(_)) => {
            m.open("p", &[("id", "in-sync"), ("class", "state ok")])
                .element("span", &[("class", "badge ok")], "In sync")
                .text(" The fleet matches the applied document as of the last check.")
                .close("p");
        }
        (None, None) => {
            m.element(
                "p",
                &[("id", "not-checked"), ("class", "state muted")],
                "Not checked since the last apply. The drift check runs on a schedule; Check now runs it at once.",
            );
        }
    }
    m.finish()
}

/// "Last checked": when, or "not yet".
fn checked_text(status: &Status) -> String {
    match status.applied.as_ref().and_then(|a| a.checked_at) {
        Some(at) => utc(at),
        None => "not yet".to_owned(),
    }
}

/// `1100` as `1,100`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Recent `fleet.drifted` and `fleet.converged` events, newest first.
#[component]
fn Timeline() -> impl IntoView {
    let console = expect_context::<Console>();
    // Shown once the status above has its first answer: the status grows from a one-line
    // placeholder to its facts and changes, and would push a card already shown down.
    let status_pending = move || {
        console
            .status
            .with(|s| s.value.is_none() && s.error.is_none())
    };
    view! {
        <section
            class="card"
            aria-labelledby="timeline-title"
            hidden=move || !console.events_available.get() || status_pending()
        >
            <div class="card-head">
                <h2 id="timeline-title">"Recent drift events"</h2>
                <div class="actions">
                    <button
                        id="refresh-events"
                        type="button"
                        class="secondary"
                        // The status too: the reconciler (or anyone) may have checked since the
                        // page read it, and new events with an old status would disagree.
                        aria-label="Refresh the drift and its events"
                        aria-disabled=move || console.events.with(|e| e.loading).to_string()
                        on:click=move |_| {
                            if !console.events.with_untracked(|e| e.loading) {
                                console.refresh_events();
                                console.refresh_status();
                            }
                        }
                    >
                        "Refresh"
                    </button>
                </div>
            </div>
            <div class="events" inner_html=move || console.events.with(events_load_html)></div>
        </section>
    }
}

/// The events as HTML list items.
fn events_html(events: &[Event]) -> String {
    let mut m = Markup::default();
    for event in events {
        let drifted = event.kind == "fleet.drifted";
        let detail = if drifted {
            let summary = event
                .data
                .get("summary")
                .map(|s| summary_line(&crate::api::summary(s)))
                .unwrap_or_default();
            let blocked = event.data.get("blocked").and_then(|b| b.as_bool()) == Some(true);
            format!("{summary}{}", if blocked { " Blocked." } else { "" })
        } else {
            "The fleet matches the applied document again.".to_owned()
        };
        let (class, badge) = if drifted {
            ("event drifted", "badge warn")
        } else {
            ("event converged", "badge ok")
        };
        m.open("li", &[("class", class), ("data-testid", "event")])
            .element("time", &[], &utc(event.created_at))
            .element("span", &[("class", badge)], &event.kind)
            .element("span", &[("class", "detail")], &detail)
            .close("li");
    }
    m.finish()
}
