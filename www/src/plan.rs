//! Plan and apply: a document uploaded, dropped or pasted is validated and planned here, in
//! the browser, by the planner crate against the tenant's export (fetched once, refreshable).
//! Only `fleet.apply` sends it to the server, with the planHash shown on the page.

use crate::api::{self, ApiError};
use crate::app::Tab;
use crate::changes::{ChangeRef, changes_html};
use crate::format::{count, pretty, pretty_text, summary_line, utc};
use crate::markup::Markup;
use crate::state::Console;
use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use planner::{Document, Invalid, Plan, PlanOptions};
use wasm_bindgen::{JsCast, JsValue};

/// Above this size a document from a file, the export or a paste is not written into the
/// editor: Chromium takes over a second to lay out a textarea holding a megabyte. It is
/// validated and planned as it is, and "Edit here" puts it in the editor when asked.
const EDIT_LIMIT: usize = 256 * 1024;

/// Where the apply stands.
#[derive(Debug, Clone, PartialEq)]
enum Applying {
    /// Nothing asked.
    Idle,
    /// The confirmation (with the counts) is shown.
    Confirming,
    /// `fleet.apply` is in flight.
    Sending,
    /// It applied: the number of calls that ran, and the planHash.
    Done(u64, String),
    /// It failed.
    Failed(ApiError),
    /// The answer of an apply to a tenant other than the one now shown (chosen while it was
    /// sent): that tenant, and the number of calls that ran or the error.
    Elsewhere(String, Result<u64, ApiError>),
}

/// The problem of an edited text that came from a file that was not UTF-8 and still holds
/// the replacement character the browser read a bad byte as, at byte `at`: placed as the
/// planner places the errors of text that is not JSON (the line, and the column in
/// characters).
fn replaced_bytes(text: &str, at: usize) -> planner::Invalid {
    // Byte loops, not `str` searches: the .wasm stays smaller.
    let before = &text.as_bytes()[..at];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    planner::Invalid {
        problems: vec![planner::Problem {
            path: String::new(),
            message: format!(
                "the file was not UTF-8: the editor shows each byte it could not read as \u{FFFD}; \
                 replace them before planning at line {} column {}",
                before.iter().filter(|&&b| b == b'\n').count() + 1,
                text[line_start..at].chars().count() + 1
            ),
        }],
    }
}

/// Where `text` first holds U+FFFD, in bytes.
fn replacement_at(text: &str) -> Option<usize> {
    text.as_bytes()
        .windows(3)
        .position(|w| w == "\u{FFFD}".as_bytes())
}

fn performance() -> Option<web_sys::Performance> {
    web_sys::window()?.performance()
}

fn now_ms() -> f64 {
    performance().map_or_else(js_sys::Date::now, |p| p.now())
}

/// Records the performance measure `name` from the mark `start` until now (for scripts and
/// the browser's profiler: `performance.getEntriesByName("plan")`), and returns its length.
fn measure(name: &str, start: &str, since: f64) -> f64 {
    if let Some(p) = performance() {
        let _ = p.measure_with_start_mark(name, start);
    }
    now_ms() - since
}

fn mark(name: &str) -> f64 {
    if let Some(p) = performance() {
        let _ = p.mark(name);
    }
    now_ms()
}

/// How long the page took for the last document: validation, planning (planHash included),
/// and writing the plan into the page, in ms.
#[derive(Clone, Copy, Default)]
struct Timing {
    validate: f64,
    plan: f64,
    show: f64,
}

/// The plan view.
#[component]
pub fn PlanView() -> impl IntoView {
    let console = expect_context::<Console>();
    let text = RwSignal::new(String::new());
    let file_name = RwSignal::new(None::<String>);
    // A file's bytes when they are not UTF-8: validated as they are (the editor holds them
    // with replacement characters, which are not the file), until the text is edited.
    // Stored, not a signal: it changes only with `text`, which the validation tracks.
    let raw = StoredValue::new(None::<Vec<u8>>);
    // The editor's text came from a file that was not UTF-8: once edited, it is validated as
    // text, where the browser made each bad byte a U+FFFD; those stay a problem until they
    // are gone or another text replaces them (the plan would write "eu-\u{FFFD}").
    let not_utf8 = StoredValue::new(false);
    let prune = RwSignal::new(false);
    let applying = RwSignal::new(Applying::Idle);
    // How long the last validation, plan and display took (shown under the plan, and
    // recorded as the performance measures "validate", "plan" and "plan-view").
    let timing = StoredValue::new(Timing::default());
    let shown_timing = RwSignal::new(None::<Timing>);

    // Validation as you type; `None` for an empty editor (an empty file is a document that
    // is not JSON, as the CLI says).
    let validated = Memo::new(move |_| {
        let start = mark("validate-start");
        let from_file = file_name.with(Option::is_some);
        text.track();
        let validated = raw.with_value(|raw| match raw {
            Some(bytes) => Some(planner::validate(bytes).map(Document::into_owned)),
            None => text.with(|t| match replacement_at(t) {
                Some(at) if not_utf8.get_value() => Some(Err(replaced_bytes(t, at))),
                _ => (from_file || !t.trim().is_empty())
                    .then(|| planner::validate(t.as_bytes()).map(Document::into_owned)),
            }),
        });
        let ms = measure("validate", "validate-start", start);
        timing.update_value(|t| t.validate = ms);
        validated
    });
    let planned = Memo::new(move |_| {
        // Validation first, so the time below is the plan's alone.
        validated.with(|_| ());
        let start = mark("plan-start");
        let plan = validated.with(|v| match v {
            Some(Ok(document)) => console.export.with(|e| {
                e.value.as_ref().map(|exported| {
                    planner::plan(
                        document,
                        &exported.export,
                        PlanOptions { prune: prune.get() },
                    )
                })
            }),
            _ => None,
        });
        if plan.is_some() {
            let ms = measure("plan", "plan-start", start);
            timing.update_value(|t| t.plan = ms);
        }
        plan
    });
    // The plan is written as HTML (see crate::markup) into this element; a long list of
    // changes shows its first items per kind until "Show all" is pressed.
    let plan_box = NodeRef::<html::Div>::new();
    let show_all = RwSignal::new(false);
    // The kind whose "Show all" was pressed: its first newly shown item takes the focus, as
    // the button that had it is gone.
    let focus_after = StoredValue::new(None::<String>);
    // Whether the reader left the list of calls open: a re-plan (Prune, an edit) writes the
    // plan again, and the list keeps that state (kept while there is no plan, too).
    let calls_open = StoredValue::new(false);
    Effect::new(move |_| {
        let Some(element) = plan_box.get() else {
            return;
        };
        if let Ok(Some(details)) = element.query_selector("details.calls") {
            // `get_attribute`, a binding the page has already (`has_attribute` would be one more).
            calls_open.set_value(details.get_attribute("open").is_some());
        }
        let open = calls_open.get_value();
        // The plan first (memos compute when read), so "plan-view" is the display alone.
        planned.with(|_| ());
        let start = mark("plan-view-start");
        let limit = if show_all.get() {
            usize::MAX
        } else {
            SHOWN_PER_KIND
        };
        let html = planned.with(|plan| plan.as_ref().map(|plan| plan_html(plan, limit, open)));
        let has_plan = html.is_some();
        let html = html.unwrap_or_else(|| {
            let why = if console.export.with(|e| e.value.is_none()) {
                "The plan appears once the export is fetched and the document is valid."
            } else {
                "The plan appears here once the document is valid."
            };
            let mut m = Markup::default();
            m.element(
                "p",
                &[("id", "no-plan"), ("class", "muted placeholder")],
                why,
            );
            m.finish()
        });
        // While another tenant's export loads, the plan's card keeps its height: the cards
        // below do not jump up and back (CSSOM, as the CSP refuses style attributes).
        let waiting = !has_plan
            && console
                .export
                .with(|e| e.value.is_none() && e.error.is_none());
        if let Some(card) = element
            .parent_element()
            .and_then(|card| card.dyn_into::<web_sys::HtmlElement>().ok())
        {
            let style = card.style();
            if waiting {
                let height = format!("{}px", card.offset_height());
                let _ = style.set_property("min-height", &height);
            } else {
                let _ = style.remove_property("min-height");
            }
        }
        element.set_inner_html(&html);
        if has_plan && open {
            fill_calls(planned);
        }
        if let Some(kind) = focus_after.try_update_value(Option::take).flatten() {
            let first_new = format!(
                "section[data-kind=\"{kind}\"] li:nth-child({})",
                SHOWN_PER_KIND + 1
            );
            if let Ok(Some(item)) = element.query_selector(&first_new) {
                let _ = item.set_attribute("tabindex", "-1");
                if let Some(item) = item.dyn_ref::<web_sys::HtmlElement>() {
                    let _ = item.focus();
                }
            }
        }
        if has_plan {
            let ms = measure("plan-view", "plan-view-start", start);
            timing.update_value(|t| t.show = ms);
            shown_timing.set(Some(timing.get_value()));
        } else {
            shown_timing.set(None);
        }
    });
    // An apply's outcome belongs to the tenant it was for: another tenant's plan shows none.
    Effect::new(move |previous: Option<String>| {
        let tenant = console.tenant.get();
        if previous.is_some_and(|t| t != tenant) {
            applying.update(|a| {
                if !matches!(a, Applying::Sending) {
                    *a = Applying::Idle;
                }
            });
        }
        tenant
    });
    // A confirmation or an error belongs to the plan it was about.
    Effect::new(move |previous: Option<Option<String>>| {
        let hash = planned.with(|p| p.as_ref().map(|p| p.plan_hash.to_string()));
        if previous.is_some_and(|h| h != hash) {
            applying.update(|a| {
                if matches!(a, Applying::Confirming | Applying::Failed(_)) {
                    *a = Applying::Idle;
                }
            });
        }
        hash
    });

    let set_text = move |value: String| {
        show_all.set(false);
        text.set(value);
        applying.update(|a| {
            if matches!(a, Applying::Done(..) | Applying::Elsewhere(..)) {
                *a = Applying::Idle;
            }
        });
    };
    // The editor's text is written only when it comes from elsewhere (a file, the export):
    // echoing typed or pasted text back into a textarea costs as much as the paste.
    let editor = NodeRef::<html::Textarea>::new();
    // True while the document is held outside the editor (see EDIT_LIMIT).
    let held = RwSignal::new(false);
    // The held document came from a paste (the page names the file, or else the export).
    let pasted = StoredValue::new(false);
    // A new text: in the editor, or held outside it when it is long.
    let show_text = move |value: String| {
        let hold = value.len() > EDIT_LIMIT;
        if let Some(editor) = editor.get_untracked() {
            editor.set_value(if hold { "" } else { &value });
        }
        held.set(hold);
        set_text(value);
    };
    // `raw`: the file's bytes, when they are not UTF-8 (`value` is the browser's reading).
    let load_text = move |value: String, bytes: Option<Vec<u8>>| {
        not_utf8.set_value(bytes.is_some());
        raw.set_value(bytes);
        pasted.set_value(false);
        show_text(value);
    };
    // Typed or pasted text: no longer the uploaded file. A file's U+FFFD stays a problem
    // until it is gone (see `not_utf8`).
    let edited = move |value: &str| {
        file_name.set(None);
        raw.set_value(None);
        if replacement_at(value).is_none() {
            not_utf8.set_value(false);
        }
    };
    // A paste the editor would take a second or more to lay out is held instead, as a long
    // file is: the text the paste would have made (the pasted text in place of the
    // selection). Over a held document, any paste replaces it (the focus is then on "Edit
    // here"). Shorter pastes into the editor are left to the browser.
    let paste = move |ev: leptos::ev::ClipboardEvent| {
        let Some(pasted_text) = ev.clipboard_data().and_then(|d| d.get_data("text").ok()) else {
            return;
        };
        let into_editor = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlTextAreaElement>().ok());
        let value = match into_editor {
            Some(_) if held.get_untracked() => return,
            Some(_) if pasted_text.len() <= EDIT_LIMIT => return,
            Some(editor) => {
                let value = editor.value();
                let start = byte_offset(&value, editor.selection_start().ok().flatten());
                let end = byte_offset(&value, editor.selection_end().ok().flatten()).max(start);
                [&value[..start], pasted_text.as_str(), &value[end..]].concat()
            }
            None if held.get_untracked() => pasted_text,
            None => return,
        };
        ev.prevent_default();
        edited(&value);
        pasted.set_value(true);
        show_text(value);
    };
    // A held document into the editor, shown now, not when the attribute's effect runs: a
    // hidden element takes no focus.
    let unhold = move |editor: &web_sys::HtmlTextAreaElement| {
        text.with_untracked(|t| editor.set_value(t));
        held.set(false);
        editor.set_hidden(false);
    };
    let edit_here = move || {
        if let Some(editor) = editor.get_untracked() {
            unhold(&editor);
            let _ = editor.focus();
        }
    };
    // A problem's path, clicked: its place in the text selected in the editor (a held
    // document is put in the editor first, as "Edit here" does).
    let show_problem = move |index: usize| {
        let Some(editor) = editor.get_untracked() else {
            return;
        };
        let found = validated.with_untracked(|v| {
            let Some(Err(invalid)) = v else {
                return None;
            };
            let problem = invalid.problems.get(index)?;
            text.with_untracked(|t| {
                let lines = t.bytes().filter(|&b| b == b'\n').count() + 1;
                // Among the others: a repeated key's problems are each at their own repeat.
                let at = planner::locate::locate_problem_in(t, &invalid.problems, index);
                let (start, end, line) = match at {
                    Some(at) => (at.start, at.end, at.line),
                    // A problem of the whole document the planner cannot place (text that
                    // is not JSON, its message without a place): its first character.
                    None if problem.path.is_empty() => {
                        let start = t.len() - t.trim_start().len();
                        let line = t[..start].bytes().filter(|&b| b == b'\n').count() + 1;
                        (start, start, line)
                    }
                    None => return None,
                };
                Some((
                    editor_offset(t, start)?,
                    editor_offset(t, end)?,
                    line,
                    lines,
                ))
            })
        });
        let Some((start, end, line, lines)) = found else {
            return;
        };
        if held.get_untracked() {
            unhold(&editor);
        }
        let _ = editor.set_selection_range(start, end);
        let _ = editor.focus();
        // Chromium scrolls a textarea to a selection a script sets only at times (not when
        // it is laid out already), so the line is put a third of the way down the box. The
        // lines do not wrap (`wrap="off"`): each is the text's height over their number.
        let line_height = f64::from(editor.scroll_height()) / lines as f64;
        let top = (line - 1) as f64 * line_height - f64::from(editor.client_height()) / 3.0;
        editor.set_scroll_top(top.max(0.0) as i32);
    };
    let read_file = move |file: web_sys::File| {
        spawn_local(async move {
            // The bytes, not `text()`: that replaces invalid UTF-8 with U+FFFD, and the page
            // would call a file valid that the CLI and the server refuse.
            let bytes = match wasm_bindgen_futures::JsFuture::from(file.array_buffer()).await {
                Ok(buffer) => js_sys::Uint8Array::new(&buffer).to_vec(),
                Err(_) => Vec::new(),
            };
            // Named once it is read: the name makes an empty text a document to validate.
            file_name.set(Some(file.name()));
            match String::from_utf8(bytes) {
                Ok(content) => load_text(content, None),
                // Shown as the browser reads it (U+FFFD for each bad byte), validated as is.
                Err(e) => {
                    let shown = wasm_bindgen_futures::JsFuture::from(file.text()).await;
                    let shown = shown.ok().and_then(|t| t.as_string()).unwrap_or_default();
                    load_text(shown, Some(e.into_bytes()));
                }
            }
        });
    };
    let dragging = RwSignal::new(false);

    view! {
        <section class="card" aria-labelledby="export-title">
            <div class="card-head">
                <h2 id="export-title">"Current export"</h2>
                <div class="actions">
                    <button
                        id="refresh-export"
                        type="button"
                        class="secondary steady"
                        // Not `disabled`: the button keeps the focus while it works.
                        aria-disabled=move || console.export.with(|e| e.loading).to_string()
                        on:click=move |_| {
                            if !console.export.with_untracked(|e| e.loading) {
                                console.refresh_export()
                            }
                        }
                    >
                        <span>{move || if console.export.with(|e| e.loading) { "Fetching…" } else { "Refresh export" }}</span>
                        // Both labels, hidden: the button keeps the longer one's width.
                        <span class="reserve" aria-hidden="true">"Refresh export"</span>
                        <span class="reserve" aria-hidden="true">"Fetching…"</span>
                    </button>
                    <button
                        id="download-export"
                        type="button"
                        class="secondary"
                        disabled=move || console.export.with(|e| e.value.is_none())
                        on:click=move |_| download_export(console)
                    >
                        "Download fleet.json"
                    </button>
                </div>
            </div>
            <ExportLine />
        </section>

        <section class="card" aria-labelledby="document-title">
            <div class="card-head">
                <h2 id="document-title">"Document"</h2>
                <div class="actions">
                    <input
                        id="document-file"
                        class="visually-hidden"
                        type="file"
                        accept=".json,application/json"
                        on:change=move |ev| {
                            let input: web_sys::HtmlInputElement = event_target(&ev);
                            if let Some(file) = input.files().and_then(|files| files.get(0)) {
                                read_file(file);
                            }
                            input.set_value("");
                        }
                    />
                    // After the input, so its keyboard focus can show on this label (style.css).
                    <label class="button secondary" for="document-file">"Upload a file…"</label>
                    <button
                        id="start-from-export"
                        type="button"
                        class="secondary"
                        disabled=move || console.export.with(|e| e.value.is_none())
                        on:click=move |_| {
                            file_name.set(None);
                            let config = console.export.with_untracked(|e| {
                                e.value.as_ref().map(|x| x.config.clone())
                            });
                            if let Some(config) = config {
                                load_text(pretty(&config), None);
                            }
                        }
                    >
                        "Start from the export"
                    </button>
                </div>
            </div>
            <div
                class="dropzone"
                class:dragging=move || dragging.get()
                on:dragover=move |ev: leptos::ev::DragEvent| {
                    ev.prevent_default();
                    dragging.set(true);
                }
                on:dragleave=move |_| dragging.set(false)
                on:paste=paste
                on:drop=move |ev: leptos::ev::DragEvent| {
                    ev.prevent_default();
                    dragging.set(false);
                    if let Some(file) = ev.data_transfer().and_then(|d| d.files()).and_then(|f| f.get(0)) {
                        read_file(file);
                    }
                }
            >
                <label for="document">
                    "FleetConfig document (JSON): paste it, or drop a file here"
                    <span class="muted">{move || file_name.get().map(|n| format!(" · {n}"))}</span>
                </label>
                <div id="held" class="held" hidden=move || !held.get()>
                    <p role="status">
                        {move || {
                            held.get().then(|| {
                                let from = file_name.get();
                                let from = match from.as_deref() {
                                    Some(name) => name,
                                    None if pasted.get_value() => "The pasted text",
                                    None => "The export",
                                };
                                text.with(|t| held_line(from, t))
                            })
                        }}
                    </p>
                    <button id="edit-here" type="button" class="secondary" on:click=move |_| edit_here()>
                        "Edit here"
                    </button>
                </div>
                <textarea
                    id="document"
                    hidden=move || held.get()
                    spellcheck="false"
                    // No soft wrapping: a long document lays out in about half the time.
                    wrap="off"
                    placeholder="{\"version\": 1, \"sites\": [...], \"pools\": [...]}"
                    aria-describedby="validation"
                    node_ref=editor
                    on:input=move |ev| {
                        let value = event_target_value(&ev);
                        edited(&value);
                        set_text(value);
                    }
                />
            </div>
            // Written as HTML; a problem's path is a button, handled here by its index.
            <div
                id="validation"
                aria-live="polite"
                inner_html=move || validated.with(|v| validation_html(v.as_ref()))
                on:click=move |ev| {
                    let index = ev
                        .target()
                        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                        .and_then(|t| t.closest("button.path").ok().flatten())
                        .and_then(|b| b.get_attribute("data-index"))
                        .and_then(|i| i.parse().ok());
                    if let Some(index) = index {
                        show_problem(index);
                    }
                }
            ></div>
        </section>

        <section class="card" aria-labelledby="plan-title">
            <div class="card-head">
                <h2 id="plan-title">"Plan"</h2>
                <div class="actions">
                    <label class="toggle" for="prune">
                        <input
                            id="prune"
                            type="checkbox"
                            prop:checked=move || prune.get()
                            on:change=move |ev| prune.set(event_target_checked(&ev))
                        />
                        " Prune (delete what the document's lists leave out)"
                    </label>
                </div>
            </div>
            <div
                id="plan-result"
                node_ref=plan_box
                on:click=move |ev| {
                    let Some(target) = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                    else {
                        return;
                    };
                    if let Ok(Some(button)) = target.closest("[data-show-all]") {
                        let kind = button
                            .closest("section[data-kind]")
                            .ok()
                            .flatten()
                            .and_then(|section| section.get_attribute("data-kind"));
                        focus_after.set_value(kind);
                        show_all.set(true);
                    } else if matches!(target.closest("details.calls > summary"), Ok(Some(_))) {
                        fill_calls(planned);
                    }
                }
            ></div>
            <p class="muted small" id="plan-time" hidden=move || shown_timing.with(Option::is_none)>
                {move || {
                    shown_timing
                        .get()
                        .map(|t| {
                            format!(
                                "Validated in {} ms, planned in {} ms and shown in {} ms, in your browser.",
                                ms(t.validate),
                                ms(t.plan),
                                ms(t.show),
                            )
                        })
                }}
            </p>
        </section>

        <ApplyPanel text planned validated prune applying />
    }
}

/// What the page says of a document it holds outside the editor: where it came from (a
/// file's name, the export, a paste), its size and lines.
fn held_line(from: &str, text: &str) -> String {
    let lines = text.lines().count();
    let kib = text.len().div_ceil(1024);
    let size = match kib {
        0..1024 => format!("{kib} KiB"),
        _ => format!("{:.1} MiB", kib as f64 / 1024.0),
    };
    // A document of one line (JSON without line breaks) is "1 line".
    let lines = count(lines, "line", "lines");
    format!(
        "{from}: {size}, {lines}, validated and planned as it is. It is not shown in the \
         editor, where a document this long takes the browser a second or more to lay out."
    )
}

/// Which export the plan is made against, and when it was fetched.
#[component]
fn ExportLine() -> impl IntoView {
    let console = expect_context::<Console>();
    view! { <div class="export-line" inner_html=move || console.export.with(export_html)></div> }
}

fn export_html(load: &crate::state::Load<api::Exported>) -> String {
    let mut m = Markup::default();
    if let Some(error) = &load.error {
        m.open(
            "p",
            &[
                ("id", "export-error"),
                ("class", "alert error"),
                ("role", "alert"),
            ],
        );
        // A failed refresh: the plan and Apply still use the export fetched before.
        match &load.value {
            Some(exported) => m
                .text("Refreshing the export failed; the plan is against the export fetched at ")
                .text(&utc(exported.fetched_at as i64))
                .text(": "),
            None => m.text("The export could not be fetched: "),
        }
        .element("code", &[], &error.code)
        .text(" ")
        .text(&error.message)
        .close("p");
    }
    match (&load.value, &load.error) {
        (None, Some(_)) => {}
        (Some(exported), _) => {
            let missing = exported
                .export
                .missing
                .iter()
                .map(|section| match section {
                    planner::Section::Sites => "sites",
                    planner::Section::ProviderAccounts => "providerAccounts",
                    planner::Section::Pools => "pools",
                    planner::Section::Flavors => "flavors",
                    planner::Section::SandboxTemplates => "sandboxTemplates",
                })
                .collect::<Vec<_>>();
            m.open("p", &[("id", "export-info")])
                .text("Plans are made in your browser against the export of ")
                .element("strong", &[], &exported.export.tenant_id)
                .text(", fetched at ")
                .element(
                    "span",
                    &[("id", "export-fetched")],
                    &utc(exported.fetched_at as i64),
                )
                .text(" (")
                .text(&count(exported.export.objects.len(), "object", "objects"))
                .text(").")
                .close("p");
            if !missing.is_empty() {
                m.element(
                    "p",
                    &[("class", "muted small")],
                    &format!("This deployment does not serve: {}.", missing.join(", ")),
                );
            }
        }
        (None, None) => {
            m.element(
                "p",
                &[("class", "skeleton line"), ("role", "status")],
                "Fetching the export…",
            );
        }
    }
    m.finish()
}

/// What validation found, as HTML: each problem with its path.
fn validation_html(validated: Option<&Result<Document<'_>, Invalid>>) -> String {
    let mut m = Markup::default();
    match validated {
        None => {
            m.element(
                "p",
                &[("class", "muted small")],
                "Validated in your browser as you type.",
            );
        }
        Some(Ok(_)) => {
            m.element(
                "p",
                &[("id", "valid"), ("class", "ok small")],
                "✓ Valid document.",
            );
        }
        Some(Err(invalid)) => {
            m.open(
                "div",
                &[("id", "problems"), ("class", "problems"), ("role", "alert")],
            )
            .open("p", &[])
            .element(
                "strong",
                &[],
                &count(invalid.problems.len(), "problem", "problems"),
            )
            .text(", found in your browser (nothing was sent to the server):")
            .close("p")
            .open("ul", &[]);
            for (index, p) in invalid.problems.iter().enumerate() {
                let (path, label) = if p.path.is_empty() {
                    ("(document)", "Show where in the document".to_owned())
                } else {
                    (p.path.as_str(), format!("Show {} in the document", p.path))
                };
                m.open("li", &[("data-testid", "problem")])
                    .element(
                        "button",
                        &[
                            ("type", "button"),
                            ("class", "path"),
                            ("data-index", &index.to_string()),
                            ("aria-label", &label),
                        ],
                        path,
                    )
                    .text(" ")
                    .element("span", &[], &p.message)
                    .close("li");
            }
            m.close("ul").close("div");
        }
    }
    m.finish()
}

/// Where the byte offset `at` of `text` is in the editor's value: in UTF-16 code units, the
/// unit of a textarea's selection, and with each "\r\n" counted as one, as the value has a
/// "\n" for it. `None` if `at` is not on a character's boundary.
fn editor_offset(text: &str, at: usize) -> Option<u32> {
    let mut units = 0u32;
    let mut previous = 0;
    // By bytes, not chars: a char's first byte is one unit, a four-byte char's is two.
    for &byte in text.get(..at)?.as_bytes() {
        units += match byte {
            0x80..=0xBF => 0,
            0xF0.. => 2,
            b'\n' if previous == b'\r' => 0,
            _ => 1,
        };
        previous = byte;
    }
    Some(units)
}

/// The byte offset in `text` of a textarea's offset `units` (UTF-16 units of the text as the
/// textarea holds it); the end for none or past the end.
fn byte_offset(text: &str, units: Option<u32>) -> usize {
    let Some(units) = units else {
        return text.len();
    };
    let mut seen = 0;
    for (at, c) in text.char_indices() {
        if seen >= units {
            return at;
        }
        seen += c.len_utf16() as u32;
    }
    text.len()
}

/// How many changes of each kind the plan shows before "Show all".
const SHOWN_PER_KIND: usize = 100;

/// Writes the calls into the plan's (closed) list of calls, when it is opened the first
/// time: a maximal plan's calls are a megabyte of JSON that nobody reads unasked.
fn fill_calls(planned: Memo<Option<Plan>>) {
    let Some(pre) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("plan-calls"))
    else {
        return;
    };
    if pre.child_nodes().length() > 0 {
        return;
    }
    // The calls' canonical JSON, the very text the planHash is over, by the planner's own
    // writer: the calls' serializer is in the .wasm once (a `serde_json::Value` of them
    // would be a second instance of it). Its keys are sorted, as the hash has them.
    let calls = planned.with_untracked(|p| {
        p.as_ref()
            .and_then(|p| planner::canonical::to_canonical(&p.calls).ok())
            .map(|calls| pretty_text(&calls))
    });
    pre.set_text_content(calls.as_deref());
}

/// The plan as HTML: the counts, the changes by kind (at most `limit` of each), the calls'
/// count (the calls themselves are written on demand, see [`fill_calls`]; their list open
/// when `calls_open`) and the planHash.
fn plan_html(plan: &Plan, limit: usize, calls_open: bool) -> String {
    let summary = plan.summary;
    let mut m = Markup::default();
    m.open("div", &[("class", "tiles"), ("aria-hidden", "true")]);
    for (label, n, class) in [
        ("to create", summary.create, "tile create"),
        ("to update", summary.update, "tile update"),
        ("to delete", summary.delete, "tile delete"),
        ("unchanged", summary.unchanged, "tile unchanged"),
    ] {
        m.open("div", &[("class", class)])
            .element("span", &[("class", "n")], &n.to_string())
            .element("span", &[("class", "label")], label)
            .close("div");
    }
    m.close("div")
        .open("p", &[("id", "plan-summary"), ("class", "summary")])
        .text(&summary_line(&summary));
    if summary.blocked {
        m.text(" ").element(
            "span",
            &[("id", "plan-blocked"), ("class", "badge error")],
            "Blocked: fix the document before applying",
        );
    }
    m.close("p");
    if summary.update > 0 {
        m.element(
            "p",
            &[("class", "legend muted small")],
            "A field shows its value now → after the apply.",
        );
    }
    m.open("div", &[("id", "plan-changes"), ("class", "changes")]);
    let changes = changes_html(plan.changes.iter().map(ChangeRef::from), limit);
    let mut html = m.finish();
    html.push_str(&changes);
    let mut m = Markup::default();
    m.close("div");
    let calls = count(plan.calls.len(), "call", "calls");
    // Open when the reader left it open (a re-plan writes the plan again).
    let details: &[(&str, &str)] = if calls_open {
        &[("class", "calls"), ("open", "")]
    } else {
        &[("class", "calls")]
    };
    m.open("details", details)
        .element(
            "summary",
            &[],
            &[&calls, " that fleet.apply would make, in order"].concat(),
        )
        // Scrolls: in the Tab order, so the keyboard can scroll it, and named.
        .element(
            "pre",
            &[
                ("id", "plan-calls"),
                ("tabindex", "0"),
                ("role", "region"),
                ("aria-label", "The calls, in order"),
            ],
            "",
        )
        .close("details")
        .open("p", &[("class", "hashline")])
        .text("planHash ")
        .element(
            "code",
            &[("id", "plan-hash"), ("class", "hash")],
            &plan.plan_hash.to_string(),
        )
        .close("p");
    html.push_str(&m.finish());
    html
}

/// Milliseconds with one decimal (`12.3`), without the float formatting machinery.
fn ms(value: f64) -> String {
    let tenths = (value * 10.0).round() as u64;
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// The apply button, its confirmation, and what the server answered.
#[component]
fn ApplyPanel(
    text: RwSignal<String>,
    planned: Memo<Option<Plan>>,
    validated: Memo<Option<Result<Document<'static>, Invalid>>>,
    prune: RwSignal<bool>,
    applying: RwSignal<Applying>,
) -> impl IntoView {
    let console = expect_context::<Console>();
    let tab = expect_context::<RwSignal<Tab>>();
    // What the panel says (a confirmation, the answer) is HTML written into `message`; the
    // confirmation takes the focus, so Enter applies and Escape cancels.
    let message = NodeRef::<html::Div>::new();
    let apply_button = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        let Some(element) = message.get() else {
            return;
        };
        let tenant = console.tenant.get_untracked();
        applying.with(|a| element.set_inner_html(&apply_message_html(a, planned, &tenant)));
        // Not `disabled` while it sends (set here, not by an attribute of the view: less
        // code): the button keeps the focus. Otherwise no `aria-disabled` at all: `disabled`
        // alone says whether it can be pressed (a `false` beside it contradicted it).
        let sending = matches!(applying.get_untracked(), Applying::Sending);
        if let Some(apply) = apply_button.get_untracked() {
            let _ = if sending {
                apply.set_attribute("aria-disabled", "true")
            } else {
                apply.remove_attribute("aria-disabled")
            };
        }
        // The confirmation takes the focus. Otherwise, when the focused button went away
        // (Apply now, Cancel, the disabled Apply while sending), the answer's button, the
        // error or another tenant's answer (focusable for this: Apply is still disabled when
        // this runs) or the Apply button takes it, so the keyboard is not sent back to the
        // page's top.
        // While it sends, Apply (aria-disabled, "Applying…") keeps the focus; then the
        // answer's button or error takes it from Apply.
        let confirming = matches!(applying.get_untracked(), Applying::Confirming);
        let lost = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.active_element())
            .is_none_or(|e| e.tag_name() == "BODY" || e.id() == "apply");
        if !(confirming || lost) {
            return;
        }
        let target = element
            .query_selector("button, #apply-error, #apply-elsewhere")
            .ok()
            .flatten()
            .and_then(|b| b.dyn_into::<web_sys::HtmlElement>().ok())
            .or_else(|| apply_button.get_untracked().map(Into::into));
        if let Some(target) = target {
            let _ = target.focus();
        }
    });
    // Why Apply cannot be pressed, said next to it (and describing it); empty when it can.
    let reason = move || {
        planned.with(|p| match p {
            Some(p) if p.is_blocked() => "Blocked: fix the document before applying.",
            Some(_) => "",
            // A valid document without a plan: the export is not there (yet).
            None if validated.with(|v| matches!(v, Some(Ok(_)))) => {
                "No export to plan against yet."
            }
            None => "Enter a valid document to plan first.",
        })
    };
    let sending = move || matches!(applying.get(), Applying::Sending);
    let send = move || {
        // One request per confirmation: a second click on "Apply now" before the page
        // re-renders (the confirmation is still there) finds the apply sending, at once (the
        // signal is set synchronously; the message is written by an effect, later).
        if !matches!(applying.get_untracked(), Applying::Confirming) {
            return;
        }
        let Some(key) = console.key.get_untracked() else {
            return;
        };
        let tenant = console.tenant.get_untracked();
        // The text that was validated and planned (a plan exists only for a valid one).
        if !validated.with_untracked(|v| matches!(v, Some(Ok(_)))) {
            return;
        }
        let document = text.get_untracked();
        let Some(hash) = planned.with_untracked(|p| p.as_ref().map(|p| p.plan_hash.to_string()))
        else {
            return;
        };
        let prune = prune.get_untracked();
        applying.set(Applying::Sending);
        spawn_local(async move {
            let answer = api::fleet_apply(&key, &tenant, &document, prune, &hash).await;
            // Another tenant was chosen meanwhile: the answer is told as that tenant's, and
            // the views (now the other tenant's) are left as they are.
            if console.tenant.get_untracked() != tenant {
                applying.set(Applying::Elsewhere(tenant, answer.map(|r| r.applied)));
                return;
            }
            match answer {
                Ok(result) => {
                    applying.set(Applying::Done(result.applied, hash));
                    console.refresh_status();
                    console.refresh_export();
                    console.refresh_events();
                }
                Err(error) => applying.set(Applying::Failed(error)),
            }
        });
    };
    view! {
        <section class="card apply" aria-labelledby="apply-title">
            <div class="card-head">
                <h2 id="apply-title">"Apply"</h2>
                <div class="actions">
                    <span id="apply-reason" class="muted small">{reason}</span>
                    <button
                        id="apply"
                        class="steady"
                        node_ref=apply_button
                        type="button"
                        aria-describedby="apply-reason"
                        disabled=move || !reason().is_empty()
                        on:click=move |_| {
                            if !matches!(applying.get_untracked(), Applying::Sending) {
                                applying.set(Applying::Confirming)
                            }
                        }
                    >
                        <span>{move || if sending() { "Applying…" } else { "Apply…" }}</span>
                        // Both labels, hidden: the button keeps the longer one's width.
                        <span class="reserve" aria-hidden="true">"Apply…"</span>
                        <span class="reserve" aria-hidden="true">"Applying…"</span>
                    </button>
                </div>
            </div>
            <p class="muted small">
                "Sends the document and the planHash shown to fleet.apply. The server refuses if the fleet moved since the export."
            </p>
            // Written as HTML; its buttons are handled here, by their id.
            <div
                class="apply-message"
                node_ref=message
                on:click=move |ev| {
                    let id = ev
                        .target()
                        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                        .and_then(|t| t.closest("button").ok().flatten())
                        .map(|b| b.id());
                    match id.as_deref() {
                        Some("confirm-apply") => send(),
                        Some("cancel-apply") => applying.set(Applying::Idle),
                        Some("show-drift") => {
                            tab.set(Tab::Drift);
                            // The pressed button is in the panel being hidden: the drift
                            // tab takes the focus, as after choosing it by the keyboard.
                            if let Some(drift_tab) = web_sys::window()
                                .and_then(|w| w.document())
                                .and_then(|d| d.get_element_by_id("tab-drift"))
                                .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
                            {
                                let _ = drift_tab.focus();
                            }
                        }
                        Some("refresh-replan") => {
                            applying.set(Applying::Idle);
                            console.refresh_export();
                        }
                        _ => {}
                    }
                }
                on:keydown=move |ev| {
                    if !matches!(applying.get_untracked(), Applying::Confirming) {
                        return;
                    }
                    match ev.key().as_str() {
                        "Escape" => applying.set(Applying::Idle),
                        // The confirmation (an alertdialog) keeps the keyboard until it is
                        // answered: Tab past Cancel comes back to Apply now, Shift+Tab the
                        // other way round.
                        "Tab" => {
                            let document = web_sys::window().and_then(|w| w.document());
                            let focused = document
                                .as_ref()
                                .and_then(|d| d.active_element())
                                .map(|e| e.id());
                            let to = match (ev.shift_key(), focused.as_deref()) {
                                (false, Some("cancel-apply")) => "confirm-apply",
                                (true, Some("confirm-apply")) => "cancel-apply",
                                _ => return,
                            };
                            if let Some(button) = document
                                .and_then(|d| d.get_element_by_id(to))
                                .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
                            {
                                ev.prevent_default();
                                let _ = button.focus();
                            }
                        }
                        _ => {}
                    }
                }
            ></div>
        </section>
    }
}

/// What the apply panel says for `applying`, as HTML.
fn apply_message_html(applying: &Applying, planned: Memo<Option<Plan>>, tenant: &str) -> String {
    let mut m = Markup::default();
    match applying {
        Applying::Idle => {}
        Applying::Sending => {
            m.element(
                "p",
                &[("id", "applying"), ("class", "muted"), ("role", "status")],
                "Applying… The server runs the calls in one transaction.",
            );
        }
        Applying::Confirming => {
            let (summary, calls) = planned
                .with_untracked(|p| p.as_ref().map(|p| (p.summary, p.calls.len())))
                .unwrap_or_default();
            m.open(
                "div",
                &[
                    ("id", "confirm"),
                    ("class", "confirm"),
                    ("role", "alertdialog"),
                    ("aria-labelledby", "confirm-text"),
                ],
            )
            .open("p", &[("id", "confirm-text")])
            .text("Apply to tenant ")
            .element("strong", &[], tenant)
            .text(": ")
            .element(
                "span",
                &[("id", "confirm-summary")],
                &summary_line(&summary),
            )
            .text(" ")
            .text(&count(calls, "call runs", "calls run"))
            .text(", in one transaction; the document becomes the drift baseline.")
            .close("p")
            .open("div", &[("class", "actions")])
            .element(
                "button",
                &[("id", "confirm-apply"), ("type", "button")],
                "Apply now",
            )
            .element(
                "button",
                &[
                    ("id", "cancel-apply"),
                    ("type", "button"),
                    ("class", "secondary"),
                ],
                "Cancel",
            )
            .close("div")
            .close("div");
        }
        Applying::Done(ran, hash) => {
            m.open(
                "div",
                &[
                    ("id", "apply-result"),
                    ("class", "alert ok"),
                    ("role", "status"),
                ],
            )
            .open("p", &[])
            .text("Applied: ")
            .text(&count(*ran as usize, "call ran", "calls ran"))
            .text(". The drift baseline is now planHash ")
            .element("code", &[("class", "hash")], hash)
            .text(".")
            .close("p")
            .element(
                "button",
                &[
                    ("id", "show-drift"),
                    ("type", "button"),
                    ("class", "secondary"),
                ],
                "Show the drift view",
            )
            .close("div");
        }
        Applying::Elsewhere(other, answer) => {
            let (class, role) = match answer {
                Ok(_) => ("alert ok", "status"),
                Err(_) => ("alert error", "alert"),
            };
            m.open(
                "div",
                &[
                    ("id", "apply-elsewhere"),
                    ("class", class),
                    ("role", role),
                    // Takes the focus when Apply, disabled for the tenant now shown, lost it.
                    ("tabindex", "-1"),
                ],
            )
            .open("p", &[])
            .text("The apply to tenant ")
            .element("strong", &[], other);
            match answer {
                Ok(ran) => {
                    m.text(" finished: ")
                        .text(&count(*ran as usize, "call ran", "calls ran"))
                        .text(". Choose that tenant to see its drift.")
                        .close("p");
                }
                Err(error) => {
                    m.text(" failed: ")
                        .element("code", &[], &error.code)
                        .close("p")
                        .element("p", &[], &error.message);
                }
            }
            m.close("div");
        }
        Applying::Failed(error) if error.code == "CONFIG_DRIFT" => {
            m.open("div", &[("id", "config-drift"), ("class", "alert warn"), ("role", "alert")])
                .open("p", &[])
                .element("strong", &[], "The fleet moved since the export.")
                .close("p")
                .element(
                    "p",
                    &[],
                    "Someone changed the fleet (by hand, or with another apply) after the export this plan was made against, so the server would now make different calls than the ones you reviewed. Nothing was applied. Refresh the export and review the new plan.",
                )
                .open("p", &[("class", "small")])
                .element("code", &[], &error.code)
                .text(" ")
                .text(&error.message)
                .close("p")
                .element(
                    "button",
                    &[("id", "refresh-replan"), ("type", "button")],
                    "Refresh the export and re-plan",
                )
                .close("div");
        }
        Applying::Failed(error) => {
            m.open(
                "div",
                &[
                    ("id", "apply-error"),
                    ("class", "alert error"),
                    ("role", "alert"),
                    // Takes the focus when the apply fails (not in the Tab order).
                    ("tabindex", "-1"),
                ],
            )
            .open("p", &[])
            .element("strong", &[], "The apply failed: ")
            .element("code", &[], &error.code)
            .close("p")
            .element("p", &[], &error.message);
            if let Some(path) = error.details.get("path").and_then(|p| p.as_str()) {
                m.open("p", &[("class", "small")])
                    .text("At ")
                    .element("code", &[("class", "path")], path)
                    .close("p");
            }
            m.close("div");
        }
    }
    m.finish()
}

/// Saves the current export's config as `fleet.json` (a blob URL, revoked at once).
fn download_export(console: Console) {
    let Some(config) = console
        .export
        .with_untracked(|e| e.value.as_ref().map(|x| x.config.clone()))
    else {
        return;
    };
    let mut text = pretty(&config);
    text.push('\n');
    let parts = js_sys::Array::of1(&JsValue::from_str(&text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/json");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Some(anchor) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        anchor.set_href(&url);
        anchor.set_download("fleet.json");
        anchor.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

#[cfg(test)]
mod tests {
    use super::{byte_offset, editor_offset};
    use wasm_bindgen_test::wasm_bindgen_test;

    /// At every character boundary, the offset is the UTF-16 length of the text before it as
    /// a textarea holds it ("\r\n" as "\n"); inside a character there is none.
    #[wasm_bindgen_test]
    fn editor_offsets_are_utf16_units_of_the_text_a_textarea_holds() {
        let text = "{\r\n  \"region\": \"Zürich 🏔\",\r\n  \"x\": 1.5\n}\r";
        for at in 0..=text.len() {
            let expected = text
                .get(..at)
                .map(|before| before.replace("\r\n", "\n").encode_utf16().count() as u32);
            assert_eq!(editor_offset(text, at), expected, "at byte {at}");
        }
        assert_eq!(editor_offset(text, text.find("1.5").unwrap()), Some(34));
    }

    /// The inverse, for a textarea's text (no "\r"): every UTF-16 offset of a character
    /// boundary is its byte; one inside a surrogate pair is the character's end.
    #[wasm_bindgen_test]
    fn byte_offsets_of_a_textareas_utf16_offsets() {
        let text = "{\n  \"region\": \"Zürich 🏔\"\n}";
        for (at, _) in text.char_indices() {
            assert_eq!(
                byte_offset(text, editor_offset(text, at)),
                at,
                "at byte {at}"
            );
        }
        let mountain = text.find('🏔').unwrap();
        let units = editor_offset(text, mountain).unwrap();
        assert_eq!(
            byte_offset(text, Some(units + 1)),
            mountain + '🏔'.len_utf8()
        );
        assert_eq!(byte_offset(text, Some(10_000)), text.len());
        assert_eq!(byte_offset(text, None), text.len());
    }
}
