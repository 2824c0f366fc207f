//! The page: the sign-in form until a key is accepted, then the header (tenant, sign out)
//! and the two views, Drift and Plan.

use crate::api::{ApiError, Tenant};
use crate::drift::DriftView;
use crate::markup::Markup;
use crate::plan::PlanView;
use crate::signin::{Refusal, SignIn};
use crate::state::Console;
use leptos::html;
use leptos::mount::mount_to;
use leptos::prelude::*;
use std::any::Any;
use wasm_bindgen::JsCast;

/// Which view is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// The drift of the applied document.
    Drift,
    /// Validate, plan and apply a document.
    Plan,
}

/// Which page the console shows.
#[derive(Debug, Clone, PartialEq)]
enum Page {
    /// The sign-in form (no key).
    SignIn,
    /// The server refused the key.
    Refused(ApiError),
    /// The tabs and views.
    Views,
}

/// The whole console.
#[component]
pub fn App() -> impl IntoView {
    let console = Console::restore();
    provide_context(console);
    console.poll();
    let tab = RwSignal::new(Tab::Drift);
    provide_context(tab);

    // Everything about the tenant is fetched again whenever the session or tenant changes.
    Effect::new(move |_| {
        let signed_in = console.key.with(Option::is_some);
        console.tenant.track();
        if signed_in {
            console.refresh_all();
        }
    });

    let page = Memo::new(move |_| {
        if console.key.with(Option::is_none) {
            Page::SignIn
        } else if let Some(error) = console.refused.get() {
            Page::Refused(error)
        } else {
            Page::Views
        }
    });
    // Each page is built and mounted when it is chosen, and unmounted (its handle dropped)
    // when another is: never rebuilt in place, so the .wasm carries no rebuild code for the
    // pages' views (a reactive `EitherOf3` did, for every element of every view).
    let main = NodeRef::<html::Main>::new();
    Effect::new(move |shown: Option<Option<Box<dyn Any>>>| {
        let main = main.get()?;
        drop(shown);
        let page = page.get();
        // Only the page is tracked here, not what building its view reads.
        Some(untrack(move || -> Box<dyn Any> {
            match page {
                Page::SignIn => Box::new(mount_to(main, SignIn)),
                Page::Refused(error) => {
                    Box::new(mount_to(main, move || view! { <Refusal error /> }))
                }
                Page::Views => {
                    let views = mount_to(main, Views);
                    focus_tab_if_lost(tab);
                    Box::new(views)
                }
            }
        }))
    });

    view! {
        <header class="topbar">
            <div class="brand">
                <span class="logo" aria-hidden="true">"◆"</span>
                <div>
                    <h1>"better-compute"</h1>
                    <p>"FleetConfig · Fleet drift"</p>
                </div>
            </div>
            // Always mounted (hidden when signed out, or refused: no tenant to pick then): a
            // `Show` costs more code than it saves.
            <div hidden=move || console.key.with(Option::is_none) || console.refused.with(Option::is_some)>
                <SessionBar />
            </div>
        </header>
        <main node_ref=main></main>
    }
}

/// Gives the focus to the selected tab when nothing has it: the sign-in form that had it is
/// gone once the views mount (and nothing has it on a load with a session kept in the tab).
/// The keyboard's way into the views, not the page's top.
fn focus_tab_if_lost(tab: RwSignal<Tab>) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if document
        .active_element()
        .is_some_and(|e| e.tag_name() != "BODY")
    {
        return;
    }
    let selected = tab.get_untracked();
    let id = TABS
        .iter()
        .find(|t| t.0 == selected)
        .map_or("tab-drift", |t| t.1);
    if let Some(button) = document
        .get_element_by_id(id)
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    {
        let _ = button.focus();
    }
}

/// The tenant picker and the sign-out button.
#[component]
fn SessionBar() -> impl IntoView {
    let console = expect_context::<Console>();
    // The options as HTML (one element instead of a Leptos view per option).
    let options = move || {
        let current = console.tenant.get();
        console.tenants.with(|t| {
            let mut html = tenant_options_html(&current, t.value.as_deref().unwrap_or_default());
            match &t.error {
                None if t.value.is_none() => {
                    html.push_str("<option disabled>Loading tenants…</option>")
                }
                // The fleet pages work without the list: this tenant only, and why.
                Some(e) if e.code == "FORBIDDEN" => html.push_str(
                    "<option id=\"tenants-forbidden\" disabled>Other tenants: this key cannot list them (iam:tenant:read)</option>",
                ),
                _ => {}
            }
            html
        })
    };
    // Busy until the first list (or its error) arrives; a refresh keeps the list shown.
    let busy = move || {
        console
            .tenants
            .with(|t| t.value.is_none() && t.error.is_none())
    };
    view! {
        <div class="session">
            <label class="inline" for="tenant">"Tenant"</label>
            <select
                id="tenant"
                inner_html=options
                aria-busy=move || busy().to_string()
                prop:value=move || console.tenant.get()
                on:change=move |ev| console.choose_tenant(event_target_value(&ev))
            ></select>
            <button id="sign-out" type="button" class="secondary" on:click=move |_| console.sign_out()>
                "Sign out"
            </button>
        </div>
    }
}

/// The tenant picker's options: the listed tenants, `current` selected (and first when the
/// list does not have it, as before the list arrives).
fn tenant_options_html(current: &str, tenants: &[Tenant]) -> String {
    let mut m = Markup::default();
    // Named as "Acme Corp (acme)": people know the name, the CLI and the API the id.
    let mut option = |id: &str, name: &str| {
        if id == current {
            m.open("option", &[("value", id), ("selected", "")]);
        } else {
            m.open("option", &[("value", id)]);
        }
        if name.is_empty() || name == id {
            m.text(id);
        } else {
            m.text(name).text(" (").text(id).text(")");
        }
        m.close("option");
    };
    if !tenants.iter().any(|t| t.id == current) {
        option(current, "");
    }
    for tenant in tenants {
        option(&tenant.id, &tenant.name);
    }
    m.finish()
}

/// The tabs, in order: the tab, its button's id, its panel's id, its label.
const TABS: [(Tab, &str, &str, &str); 2] = [
    (Tab::Drift, "tab-drift", "drift-view", "Drift"),
    (Tab::Plan, "tab-plan", "plan-view", "Plan and apply"),
];

/// The tab that `key` moves to from `current` (WAI-ARIA tabs: Left and Right wrap around,
/// Home and End go to the ends), or `None` for another key.
pub fn tab_after_key(current: Tab, key: &str) -> Option<Tab> {
    let n = TABS.len();
    let i = TABS.iter().position(|t| t.0 == current).unwrap_or(0);
    let next = match key {
        "ArrowRight" => (i + 1) % n,
        "ArrowLeft" => (i + n - 1) % n,
        "Home" => 0,
        "End" => n - 1,
        _ => return None,
    };
    Some(TABS[next].0)
}

/// The tabs and the chosen view: the WAI-ARIA tabs pattern (one tab in the Tab order, the
/// selected one; arrow keys, Home and End move between tabs and select them).
#[component]
fn Views() -> impl IntoView {
    let tab = expect_context::<RwSignal<Tab>>();
    let buttons = TABS.map(|_| NodeRef::<html::Button>::new());
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        let Some(next) = tab_after_key(tab.get_untracked(), &ev.key()) else {
            return;
        };
        ev.prevent_default();
        tab.set(next);
        let index = TABS.iter().position(|t| t.0 == next).unwrap_or(0);
        if let Some(button) = buttons[index].get_untracked() {
            let _ = button.focus();
        }
    };
    let tab_buttons = TABS
        .iter()
        .zip(buttons)
        .map(|(&(which, id, panel, label), node_ref)| {
            view! {
                <button
                    id=id
                    type="button"
                    role="tab"
                    node_ref=node_ref
                    aria-controls=panel
                    aria-selected=move || (tab.get() == which).to_string()
                    tabindex=move || if tab.get() == which { "0" } else { "-1" }
                    class:active=move || tab.get() == which
                    on:click=move |_| tab.set(which)
                >
                    {label}
                </button>
            }
        })
        .collect_view();
    view! {
        <div class="tabs" role="tablist" aria-label="Views" on:keydown=on_keydown>
            {tab_buttons}
        </div>
        // Both views stay mounted, so an edited document survives a look at the drift.
        <div id="drift-view" role="tabpanel" tabindex="0" aria-labelledby="tab-drift" hidden=move || tab.get() != Tab::Drift>
            <DriftView />
        </div>
        <div id="plan-view" role="tabpanel" tabindex="0" aria-labelledby="tab-plan" hidden=move || tab.get() != Tab::Plan>
            <PlanView />
        </div>
    }
}
