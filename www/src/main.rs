//! Mounts the console (see the `www` library) on the page's body.

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(www::app::App);
}
