//! The better-compute web console: a Leptos (client-side) app that Trunk builds from the
//! root `index.html`. The planner crate runs here, in the browser, as WebAssembly: documents
//! are validated and planned in the page, and only `fleet.apply` sends one to the server.
//!
//! `main.rs` only mounts [`app::App`]; all HTTP is in [`api`]; one module per view.

#![warn(missing_docs)]

pub mod api;
pub mod app;
pub mod changes;
pub mod drift;
pub mod format;
pub mod markup;
pub mod plan;
pub mod signin;
pub mod state;

// The unit tests run as wasm in headless Chromium, as the component tests do (`scripts/test`);
// a plain `#[test]` is never run by wasm-bindgen's test runner.
#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
