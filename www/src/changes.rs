//! A list of changes grouped by kind, in the CLI's `+ ~ -` words, with the differing fields
//! as before -> after and blocked changes standing out with their note. Shared by the drift
//! and plan views.

use crate::api::Change;
use crate::format::{change_line, kind_title, value};
use leptos::prelude::*;

/// The changes that do something (and blocked ones), grouped by kind in plan order.
#[component]
pub fn ChangeList(
    /// The changes, in plan order (by kind, then name).
    changes: Vec<Change>,
    /// The id of the list's wrapper (`drift-changes`, `plan-changes`).
    id: &'static str,
) -> impl IntoView {
    let shown: Vec<Change> = changes
        .into_iter()
        .filter(|c| c.action != "unchanged" || c.blocked)
        .collect();
    let mut groups: Vec<(String, Vec<Change>)> = Vec::new();
    for change in shown {
        match groups.last_mut() {
            Some((kind, list)) if *kind == change.kind => list.push(change),
            _ => groups.push((change.kind.clone(), vec![change])),
        }
    }
    let empty = groups.is_empty();
    view! {
        <div id=id class="changes">
            {empty.then(|| view! { <p class="muted">"No changes."</p> })}
            {groups
                .into_iter()
                .map(|(kind, list)| {
                    view! {
                        <section class="kind-group" data-kind=kind.clone()>
                            <h4>{kind_title(&kind)} " " <span class="count">{list.len()}</span></h4>
                            <ul>{list.into_iter().map(change_item).collect_view()}</ul>
                        </section>
                    }
                })
                .collect_view()}
        </div>
    }
}

fn change_item(change: Change) -> impl IntoView {
    let class = if change.blocked {
        "change blocked".to_owned()
    } else {
        format!("change {}", change.action)
    };
    let fields = match (&change.before, &change.after) {
        (None, None) => None,
        (before, after) => Some(
            change
                .fields
                .iter()
                .map(|field| {
                    let was = value(before.as_ref().and_then(|b| b.get(field)));
                    let now = value(after.as_ref().and_then(|a| a.get(field)));
                    view! {
                        <tr>
                            <th scope="row">{field.clone()}</th>
                            <td class="before"><code>{was}</code></td>
                            <td class="arrow" aria-label="becomes">"→"</td>
                            <td class="after"><code>{now}</code></td>
                        </tr>
                    }
                })
                .collect_view(),
        ),
    };
    view! {
        <li class=class data-testid="change">
            <code class="line">{change_line(&change)}</code>
            {change.blocked.then(|| {
                let note = change.note.clone().unwrap_or_else(|| "cannot be applied".to_owned());
                view! {
                    <p class="note" data-testid="blocked-note">
                        <strong>"Blocked: "</strong>
                        {note}
                    </p>
                }
            })}
            {fields.map(|rows| view! { <table class="fields"><tbody>{rows}</tbody></table> })}
        </li>
    }
}
