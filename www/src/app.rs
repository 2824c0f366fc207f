//! The page: the sign-in form until a key is accepted, then the header (tenant, sign out)
//! and the two views, Drift and Plan.

use crate::drift::DriftView;
use crate::plan::PlanView;
use crate::signin::{Refusal, SignIn};
use crate::state::Console;
use leptos::prelude::*;

/// Which view is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// The drift of the applied document.
    Drift,
    /// Validate, plan and apply a document.
    Plan,
}

/// The whole console.
#[component]
pub fn App() -> impl IntoView {
    let console = Console::restore();
    provide_context(console);
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

    view! {
        <header class="topbar">
            <div class="brand">
                <span class="logo" aria-hidden="true">"◆"</span>
                <div>
                    <h1>"better-compute"</h1>
                    <p>"FleetConfig · Fleet drift"</p>
                </div>
            </div>
            <Show when=move || console.key.with(Option::is_some)>
                <SessionBar />
            </Show>
        </header>
        <main>
            {move || {
                if console.key.with(Option::is_none) {
                    view! { <SignIn /> }.into_any()
                } else if let Some(error) = console.refused.get() {
                    view! { <Refusal error /> }.into_any()
                } else {
                    view! { <Views /> }.into_any()
                }
            }}
        </main>
    }
}

/// The tenant picker and the sign-out button.
#[component]
fn SessionBar() -> impl IntoView {
    let console = expect_context::<Console>();
    let options = move || {
        let current = console.tenant.get();
        let mut ids: Vec<String> = console.tenants.with(|t| {
            t.value
                .as_ref()
                .map(|list| list.iter().map(|t| t.id.clone()).collect())
                .unwrap_or_default()
        });
        if !ids.contains(&current) {
            ids.insert(0, current.clone());
        }
        ids.into_iter()
            .map(|id| {
                let selected = id == current;
                view! { <option value=id.clone() selected=selected>{id.clone()}</option> }
            })
            .collect_view()
    };
    view! {
        <div class="session">
            <label class="inline" for="tenant">"Tenant"</label>
            <select
                id="tenant"
                prop:value=move || console.tenant.get()
                on:change=move |ev| console.choose_tenant(event_target_value(&ev))
            >
                {options}
            </select>
            <button id="sign-out" type="button" class="secondary" on:click=move |_| console.sign_out()>
                "Sign out"
            </button>
        </div>
    }
}

/// The tabs and the chosen view.
#[component]
fn Views() -> impl IntoView {
    let tab = expect_context::<RwSignal<Tab>>();
    let tab_button =
        move |which: Tab, id: &'static str, panel: &'static str, label: &'static str| {
            view! {
                <button
                    id=id
                    type="button"
                    role="tab"
                    aria-controls=panel
                    aria-selected=move || (tab.get() == which).to_string()
                    class:active=move || tab.get() == which
                    on:click=move |_| tab.set(which)
                >
                    {label}
                </button>
            }
        };
    view! {
        <nav class="tabs" role="tablist" aria-label="Views">
            {tab_button(Tab::Drift, "tab-drift", "drift-view", "Drift")}
            {tab_button(Tab::Plan, "tab-plan", "plan-view", "Plan and apply")}
        </nav>
        // Both views stay mounted, so an edited document survives a look at the drift.
        <div id="drift-view" role="tabpanel" aria-labelledby="tab-drift" hidden=move || tab.get() != Tab::Drift>
            <DriftView />
        </div>
        <div id="plan-view" role="tabpanel" aria-labelledby="tab-plan" hidden=move || tab.get() != Tab::Plan>
            <PlanView />
        </div>
    }
}
