//! A list of changes grouped by kind, in the CLI's `+ ~ -` words, with the differing fields
//! as before -> after and blocked changes standing out with their note. Shared by the drift
//! and plan views; written as HTML text (see [`crate::markup`]), as a plan can hold 11,800.

use crate::api::Change;
use crate::format::{change_line, kind_title, value};
use crate::markup::Markup;
use leptos::prelude::*;
use serde_json::{Map, Value};

/// A change as the list needs it, borrowed from a drift's [`Change`] or a plan's
/// [`planner::Change`] (no copy of a large plan).
#[derive(Clone, Copy)]
pub struct ChangeRef<'a> {
    /// `pool`, `ownerQuota`, ...
    pub kind: &'a str,
    /// Its plan name.
    pub name: &'a str,
    /// `create`, `update`, `delete` or `unchanged`.
    pub action: &'a str,
    /// The differing fields of an update.
    pub fields: &'a [String],
    /// The fields' values before.
    pub before: Option<&'a Map<String, Value>>,
    /// The fields' values after.
    pub after: Option<&'a Map<String, Value>>,
    /// The change cannot be applied.
    pub blocked: bool,
    /// Why it is blocked.
    pub note: Option<&'a str>,
}

impl<'a> From<&'a Change> for ChangeRef<'a> {
    fn from(c: &'a Change) -> ChangeRef<'a> {
        ChangeRef {
            kind: &c.kind,
            name: &c.name,
            action: &c.action,
            fields: &c.fields,
            before: c.before.as_ref(),
            after: c.after.as_ref(),
            blocked: c.blocked,
            note: c.note.as_deref(),
        }
    }
}

impl<'a> From<&'a planner::Change> for ChangeRef<'a> {
    fn from(c: &'a planner::Change) -> ChangeRef<'a> {
        ChangeRef {
            kind: c.kind.as_str(),
            name: &c.name,
            action: match c.action {
                planner::Action::Create => "create",
                planner::Action::Update => "update",
                planner::Action::Delete => "delete",
                planner::Action::Unchanged => "unchanged",
            },
            fields: &c.fields,
            before: c.before.as_deref(),
            after: c.after.as_deref(),
            blocked: c.blocked,
            note: c.note.as_deref(),
        }
    }
}

/// The changes that do something (and blocked ones), grouped by kind in plan order.
#[component]
pub fn ChangeList(
    /// The changes, in plan order (by kind, then name).
    changes: Vec<Change>,
    /// The id of the list's wrapper (`drift-changes`, `plan-changes`).
    id: &'static str,
) -> impl IntoView {
    let html = changes_html(changes.iter().map(ChangeRef::from), usize::MAX);
    view! { <div id=id class="changes" inner_html=html></div> }
}

/// The inside of a [`ChangeList`], as HTML: unchanged items are left out (the summary counts
/// them), the others grouped by kind, at most `limit` of each kind; a longer group ends with
/// a "Show all" button (`data-show-all`) for the page to handle.
pub fn changes_html<'a>(changes: impl Iterator<Item = ChangeRef<'a>>, limit: usize) -> String {
    let shown: Vec<ChangeRef> = changes
        .filter(|c| c.action != "unchanged" || c.blocked)
        .collect();
    let mut m = Markup::default();
    if shown.is_empty() {
        m.element("p", &[("class", "muted")], "No changes.");
    }
    for group in shown.chunk_by(|a, b| a.kind == b.kind) {
        let kind = group[0].kind;
        m.open("section", &[("class", "kind-group"), ("data-kind", kind)])
            .open("h3", &[])
            .text(kind_title(kind))
            .text(" ")
            .element("span", &[("class", "count")], &group.len().to_string())
            .close("h3")
            .open("ul", &[]);
        for change in group.iter().take(limit) {
            change_item(&mut m, change);
        }
        m.close("ul");
        if group.len() > limit {
            m.open("p", &[("class", "more")])
                .text(&format!("{} more. ", group.len() - limit))
                .element(
                    "button",
                    &[
                        ("type", "button"),
                        ("class", "secondary"),
                        ("data-show-all", ""),
                    ],
                    &format!("Show all {}", group.len()),
                )
                .close("p");
        }
        m.close("section");
    }
    m.finish()
}

fn change_item(m: &mut Markup, change: &ChangeRef) {
    let class = if change.blocked {
        "change blocked".to_owned()
    } else {
        format!("change {}", change.action)
    };
    m.open("li", &[("class", &class), ("data-testid", "change")])
        .element("code", &[("class", "line")], &change_line(change));
    if change.blocked {
        m.open("p", &[("class", "note"), ("data-testid", "blocked-note")])
            .element("strong", &[], "Blocked: ")
            .text(change.note.unwrap_or("cannot be applied"))
            .close("p");
    }
    if change.before.is_some() || change.after.is_some() {
        m.open("table", &[("class", "fields")]).open("tbody", &[]);
        for field in change.fields {
            let was = value(change.before.and_then(|b| b.get(field)));
            let now = value(change.after.and_then(|a| a.get(field)));
            m.open("tr", &[])
                .element("th", &[("scope", "row")], field)
                .open("td", &[("class", "before")])
                .element("code", &[], &was)
                .close("td")
                .element("td", &[("class", "arrow"), ("aria-label", "becomes")], "→")
                .open("td", &[("class", "after")])
                .element("code", &[], &now)
                .close("td")
                .close("tr");
        }
        m.close("tbody").close("table");
    }
    m.close("li");
}
