//! Mounts the console (see the `www` library) on the page's body.

// The planner's allocator for wasm (planner/js/README.md): faster plans, 0.7 KB less gzip.
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(www::app::App);
}
