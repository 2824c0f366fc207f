//! The better-compute web console: a Leptos (client-side) app that Trunk builds from the
//! root `index.html`. The planner crate runs here, in the browser, as WebAssembly: documents
//! are validated and planned in the page, and only `fleet.apply` sends one to the server.

mod api;
mod app;
mod changes;
mod drift;
mod format;
mod plan;
mod signin;
mod state;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
