//! The better-compute web console: a Leptos (client-side) app that Trunk builds from the
//! root `index.html`. The planner crate runs here, in the browser, as WebAssembly.

mod plan_hash;

use leptos::prelude::*;

fn main() {
    console_error_panic_hook::set_once();
    mount_to_body(App);
}

/// The whole console.
#[component]
fn App() -> impl IntoView {
    view! {
        <header>
            <h1>"better-compute"</h1>
            <p>"FleetConfig console"</p>
        </header>
        <main>
            <plan_hash::PlanHashView />
        </main>
    }
}
