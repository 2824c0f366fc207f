//! Signing in with an API key, and the refusal shown for a key that is not a platform
//! administrator's.

use crate::api::{self, ApiError};
use crate::markup::Markup;
use crate::state::Console;
use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// What a refusal means, in words for the person holding the key.
fn refusal_text(error: &ApiError) -> &'static str {
    if error.code == "UNAUTHENTICATED" {
        "The server does not accept this API key. Check that you copied all of it and that it \
         has not been revoked."
    } else {
        "This API key is valid, but it is not a platform administrator's. The Fleet drift page \
         needs compute:fleet:admin in the root tenant: ask a platform administrator for a key \
         that holds it."
    }
}

/// The sign-in form. The key is checked with `fleet.status` of the root tenant before the
/// session starts, so a refused key never reaches an empty page.
#[component]
pub fn SignIn() -> impl IntoView {
    let console = expect_context::<Console>();
    let key = RwSignal::new(String::new());
    let pending = RwSignal::new(false);
    let error = RwSignal::new(None::<ApiError>);
    let input = NodeRef::<html::Input>::new();
    // The key's field takes the focus once it is in the page: on load, and after a sign-out
    // or a refusal (`autofocus` would do it once per page load only).
    Effect::new(move |_| {
        if let Some(input) = input.get() {
            let _ = input.focus();
        }
    });
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let candidate = key.get_untracked().trim().to_owned();
        if candidate.is_empty() || pending.get_untracked() {
            return;
        }
        pending.set(true);
        error.set(None);
        if let Some(input) = input.get_untracked() {
            let _ = input.remove_attribute("aria-invalid");
        }
        spawn_local(async move {
            let answer = api::fleet_status(&candidate, "root").await;
            pending.set(false);
            match answer {
                Ok(_) => console.sign_in(candidate),
                Err(e) => {
                    error.set(Some(e));
                    // The button had the focus and was disabled while checking: give it
                    // to the key, selected, to type or paste another.
                    if let Some(input) = input.get_untracked() {
                        let _ = input.set_attribute("aria-invalid", "true");
                        let _ = input.focus();
                        input.select();
                    }
                }
            }
        });
    };
    view! {
        <section class="card signin" aria-labelledby="signin-title">
            <h2 id="signin-title">"Sign in"</h2>
            <p class="muted">
                "Use a platform administrator's API key. It is kept in this tab only, until you sign out or close it."
            </p>
            <form on:submit=submit>
                <label for="api-key">"API key"</label>
                <input
                    id="api-key"
                    node_ref=input
                    type="password"
                    // Names the refusal once there is one (an absent id describes nothing).
                    aria-describedby="signin-error"
                    autocomplete="off"
                    spellcheck="false"
                    placeholder="bc_…"
                    required
                    on:input=move |ev| key.set(event_target_value(&ev))
                />
                <button id="sign-in" class="steady" type="submit" disabled=move || pending.get()>
                    <span>{move || if pending.get() { "Checking…" } else { "Sign in" }}</span>
                    // Both labels, hidden: the button keeps the longer one's width.
                    <span class="reserve" aria-hidden="true">"Sign in"</span>
                    <span class="reserve" aria-hidden="true">"Checking…"</span>
                </button>
            </form>
            <div inner_html=move || error.with(|e| e.as_ref().map(error_html).unwrap_or_default())></div>
        </section>
    }
}

/// Why the sign-in failed, as HTML.
fn error_html(e: &ApiError) -> String {
    let text = if e.is_refusal() {
        refusal_text(e).to_owned()
    } else {
        format!("Could not sign in: {}", e.message)
    };
    let mut m = Markup::default();
    m.open(
        "div",
        &[
            ("id", "signin-error"),
            ("class", "alert error"),
            ("role", "alert"),
        ],
    )
    .element("p", &[], &text)
    .open("p", &[("class", "small")])
    .element("code", &[], &e.code)
    .text(" ")
    .text(&e.message)
    .close("p")
    .close("div");
    m.finish()
}

/// Shown instead of the views when the server refuses the session's key.
#[component]
pub fn Refusal(
    /// What the server answered the session's key.
    error: ApiError,
) -> impl IntoView {
    let console = expect_context::<Console>();
    // The button takes the focus once it is in the page. Not `autofocus`: a browser honours
    // that once per page load, and the sign-in form's key may have had it already.
    let button = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(button) = button.get() {
            let _ = button.focus();
        }
    });
    view! {
        <section id="refusal" class="card alert error" role="alert" aria-labelledby="refusal-title">
            <h2 id="refusal-title">"Access refused"</h2>
            <p>{refusal_text(&error)}</p>
            <p class="small"><code>{error.code.clone()}</code> " " {error.message.clone()}</p>
            <button id="use-another-key" type="button" node_ref=button on:click=move |_| console.sign_out()>"Use another key"</button>
        </section>
    }
}
