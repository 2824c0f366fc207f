//! What the fleet commands print: pure functions from plans and statuses to text, so the
//! output is tested as expected text.

use planner::{Action, Call, Change, Kind, Plan, Summary};
use serde::Deserialize;
use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

/// How to print: colours, and how much of each change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// Emit ANSI colours.
    pub colour: bool,
    /// Under each update, its differing values: now, then in the document (`--diff`).
    pub values: bool,
}

impl Style {
    /// Colour when `terminal` is true, unless `NO_COLOR` is set to anything non-empty;
    /// `CLICOLOR_FORCE` (non-empty, not `0`) forces colour off a terminal.
    pub fn detect(terminal: bool, var: impl Fn(&str) -> Option<String>) -> Style {
        let set = |name: &str| var(name).is_some_and(|value| !value.is_empty());
        let forced = var("CLICOLOR_FORCE").is_some_and(|value| !value.is_empty() && value != "0");
        Style {
            colour: !set("NO_COLOR") && (terminal || forced),
            values: false,
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

/// The line of a change that does something, or `None` for an unchanged, unblocked one:
/// `+ offer vps-fra -> globex`, `~ pool vps-fra (policy)`, `- flavor vps-fra/g1.small`; a
/// blocked change starts with `! ` and ends with `(blocked: <note>)`.
pub fn change_line(change: &Change, style: Style) -> Option<String> {
    let symbol = match change.action {
        Action::Create => "+",
        Action::Update => "~",
        Action::Delete => "-",
        Action::Unchanged if change.blocked => "=",
        Action::Unchanged => return None,
    };
    let mut line = format!("{symbol} {} {}", change.kind, change.name);
    if change.action == Action::Update && !change.fields.is_empty() {
        let _ = write!(line, " ({})", change.fields.join(", "));
    }
    if change.blocked {
        let note = change.note.as_deref().unwrap_or("cannot be applied");
        return Some(style.paint("1;31", &format!("! {line} (blocked: {note})")));
    }
    let colour = match change.action {
        Action::Create => "32",
        Action::Update => "33",
        _ => "31",
    };
    Some(style.paint(colour, &line))
}

/// The counts line, in the seed's words: `2 to create, 2 to update, 0 to delete, 5 unchanged.`
pub fn summary_line(summary: &Summary) -> String {
    format!(
        "{} to create, {} to update, {} to delete, {} unchanged.",
        summary.create, summary.update, summary.delete, summary.unchanged
    )
}

/// The lines under an update with `--diff`: `    <field>: <now> -> <in the document>`, each
/// value as compact JSON (`(none)` when absent), the now red and the document's green.
pub fn value_lines(change: &Change, style: Style) -> Vec<String> {
    if change.action != Action::Update {
        return Vec::new();
    }
    let value = |side: &Option<Box<serde_json::Map<String, serde_json::Value>>>, field: &str| {
        side.as_ref()
            .and_then(|map| map.get(field))
            .filter(|v| !v.is_null())
            .map_or_else(|| "(none)".to_owned(), |v| v.to_string())
    };
    change
        .fields
        .iter()
        .map(|field| {
            let before = style.paint("31", &value(&change.before, field));
            let after = style.paint("32", &value(&change.after, field));
            format!("    {field}: {before} -> {after}")
        })
        .collect()
}

/// One line per change that does something (with `style.values`, an update's values under
/// it), then the counts line.
pub fn changes(changes: &[Change], summary: &Summary, style: Style) -> String {
    let mut out = String::new();
    for change in changes {
        let Some(line) = change_line(change, style) else {
            continue;
        };
        out.push_str(&line);
        out.push('\n');
        if style.values {
            for line in value_lines(change, style) {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out.push_str(&summary_line(summary));
    out.push('\n');
    out
}

/// `Calls:` then one line per call, `  <method> <canonical input>`, in the order they run.
pub fn calls(calls: &[Call]) -> String {
    let mut out = format!("Calls ({}):\n", calls.len());
    for call in calls {
        let value = serde_json::to_value(call).expect("calls always serialize");
        let input = value.get("input").cloned().unwrap_or_default();
        let _ = writeln!(out, "  {} {}", call.method(), planner::canonicalize(&input));
    }
    out
}

/// What `fleet plan` prints: the changes, the counts, the calls when asked, and the
/// `planHash:` line last.
pub fn plan(plan: &Plan, show_calls: bool, style: Style) -> String {
    let mut out = changes(&plan.changes, &plan.summary, style);
    if show_calls {
        out.push_str(&calls(&plan.calls));
    }
    let _ = writeln!(out, "planHash: {}", plan.plan_hash);
    out
}

/// `fleet.status`'s answer, the seed's shape.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The tenant.
    pub tenant_id: String,
    /// The last applied document; absent when the tenant never applied one.
    #[serde(default)]
    pub applied: Option<Applied>,
    /// The drift as of the last check; absent until the first check.
    #[serde(default)]
    pub drift: Option<Drift>,
    /// Why the last drift check failed, until a check succeeds.
    #[serde(default)]
    pub error: Option<CheckError>,
}

/// A failed drift check, as `fleet.status` reports it.
#[derive(Debug, Clone, Deserialize)]
pub struct CheckError {
    /// What went wrong.
    pub message: String,
    /// When, in milliseconds since the epoch.
    pub at: u64,
}

/// The last apply.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    /// The applied plan's hash.
    pub plan_hash: String,
    /// Who applied it.
    pub applied_by: String,
    /// When, in milliseconds since the epoch.
    pub applied_at: u64,
    /// Whether it was applied with prune.
    #[serde(default)]
    pub prune: bool,
    /// When drift was last checked, in milliseconds since the epoch.
    #[serde(default)]
    pub checked_at: Option<u64>,
}

/// The drift found by the last check.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// The drifted changes.
    #[serde(default)]
    pub changes: Vec<Change>,
    /// Counts per action.
    pub summary: Summary,
    /// Whether the re-plan is blocked.
    #[serde(default)]
    pub blocked: bool,
    /// The re-plan's hash.
    #[serde(default)]
    pub plan_hash: Option<String>,
}

impl Drift {
    /// True when the check found the fleet different from the applied document.
    pub fn is_set(&self) -> bool {
        self.blocked
            || self.summary.blocked
            || self.summary.create + self.summary.update + self.summary.delete > 0
            || self
                .changes
                .iter()
                .any(|change| change.blocked || change.action != Action::Unchanged)
    }

    /// How much has drifted, as `--fail-on-drift` says it: `2 changes`, `2 changes,
    /// blocked`, or, when the only drift is an unchanged object the re-plan blocks, `its
    /// re-plan is blocked` (not `0 changes`).
    pub fn extent(&self) -> String {
        let changes = self.summary.create + self.summary.update + self.summary.delete;
        let blocked = self.blocked
            || self.summary.blocked
            || self.changes.iter().any(|change| change.blocked);
        match (changes, blocked) {
            (0, _) => "its re-plan is blocked".to_owned(),
            (n, false) => count(n, "change"),
            (n, true) => format!("{}, blocked", count(n, "change")),
        }
    }
}

/// `1 call`, `2 calls`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

impl Status {
    /// The drift, when the last check found some.
    pub fn drift_set(&self) -> Option<&Drift> {
        self.drift.as_ref().filter(|drift| drift.is_set())
    }
}

/// Milliseconds since the epoch as ISO-8601 UTC, `2026-09-24T12:00:00Z`.
pub fn timestamp(millis: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(millis)).to_string()
}

/// What `fleet status` prints: who applied and when, when it was checked, and the drift by
/// kind with the same lines as `fleet plan`.
pub fn status(status: &Status, style: Style) -> String {
    let mut out = String::new();
    let Some(applied) = &status.applied else {
        let _ = writeln!(
            out,
            "Tenant {} has never applied a document: there is nothing to check drift against.",
            status.tenant_id
        );
        return out;
    };
    let _ = writeln!(out, "Tenant: {}", status.tenant_id);
    let _ = writeln!(
        out,
        "Applied: by {} at {}{}",
        applied.applied_by,
        timestamp(applied.applied_at),
        if applied.prune { ", with prune" } else { "" }
    );
    let _ = writeln!(out, "planHash: {}", applied.plan_hash);
    if let Some(error) = &status.error {
        let _ = writeln!(
            out,
            "Last check failed at {}: {}",
            timestamp(error.at),
            error.message
        );
    }
    let Some(checked_at) = applied.checked_at else {
        out.push_str("Checked: not yet\n");
        return out;
    };
    let _ = writeln!(out, "Checked: {}", timestamp(checked_at));
    let Some(drift) = status.drift_set() else {
        out.push_str("Drift: none, the fleet matches the applied document.\n");
        return out;
    };
    let _ = writeln!(
        out,
        "Drift: the fleet has drifted from the applied document{}:",
        if drift.blocked || drift.summary.blocked {
            " (blocked)"
        } else {
            ""
        }
    );
    for kind in Kind::ALL {
        let lines: Vec<String> = drift
            .changes
            .iter()
            .filter(|change| change.kind == kind)
            .filter_map(|change| {
                let line = change_line(change, style)?;
                let values = style.values.then(|| value_lines(change, style));
                Some(std::iter::once(line).chain(values.into_iter().flatten()))
            })
            .flatten()
            .collect();
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(out, "  {kind}:");
        for line in lines {
            let _ = writeln!(out, "    {line}");
        }
    }
    // A drift records its first 50 changes: say when more were cut, and where they all are.
    let shown = drift
        .changes
        .iter()
        .filter(|c| c.action != Action::Unchanged)
        .count();
    let total = drift.summary.create + drift.summary.update + drift.summary.delete;
    if shown < total {
        let _ = writeln!(
            out,
            "  ({shown} of {total} changes shown: a drift records at most 50; `fleet plan` of \
             the applied document lists them all)"
        );
    }
    let _ = writeln!(out, "  {}", summary_line(&drift.summary));
    if let Some(hash) = &drift.plan_hash {
        let _ = writeln!(out, "  planHash: {hash}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(value: serde_json::Value) -> Change {
        serde_json::from_value(value).unwrap()
    }

    fn seed_changes() -> Vec<Change> {
        vec![
            change(json!({"kind": "site", "name": "fra", "action": "unchanged"})),
            change(
                json!({"kind": "pool", "name": "vps-fra", "action": "update", "fields": ["policy"]}),
            ),
            change(
                json!({"kind": "ownerQuota", "name": "vps-fra:gpu", "action": "update", "fields": ["max"]}),
            ),
            change(json!({"kind": "offer", "name": "vps-fra -> globex", "action": "create"})),
            change(json!({"kind": "flavor", "name": "vps-fra/g1.large", "action": "create"})),
        ]
    }

    #[test]
    fn a_drifts_extent_names_its_changes_or_its_block() {
        let drift = |changes: Vec<Change>, create, blocked| Drift {
            changes,
            summary: Summary {
                create,
                update: 0,
                delete: 0,
                unchanged: 3,
                blocked: false,
            },
            blocked,
            plan_hash: None,
        };
        assert_eq!(drift(vec![], 1, false).extent(), "1 change");
        assert_eq!(drift(vec![], 2, false).extent(), "2 changes");
        assert_eq!(drift(vec![], 2, true).extent(), "2 changes, blocked");
        let held = change(
            json!({"kind": "sandboxTemplate", "name": "t", "action": "unchanged", "blocked": true}),
        );
        assert!(drift(vec![held.clone()], 0, false).is_set());
        assert_eq!(
            drift(vec![held], 0, false).extent(),
            "its re-plan is blocked"
        );
    }

    #[test]
    fn diff_lines_show_each_fields_values() {
        let update = change(json!({
            "kind": "pool", "name": "vps-fra", "action": "update",
            "fields": ["policy", "gpuModel"],
            "before": { "policy": { "disruptionBudget": 0.2 }, "gpuModel": null },
            "after": { "policy": { "disruptionBudget": 0.1 }, "gpuModel": "L40S" }
        }));
        assert_eq!(
            value_lines(&update, Style::default()),
            [
                r#"    policy: {"disruptionBudget":0.2} -> {"disruptionBudget":0.1}"#,
                r#"    gpuModel: (none) -> "L40S""#,
            ]
        );
        let create = change(json!({"kind": "site", "name": "fra", "action": "create"}));
        assert!(value_lines(&create, Style::default()).is_empty());
    }

    #[test]
    fn the_seeds_plan_lines() {
        let summary = Summary {
            create: 2,
            update: 2,
            delete: 0,
            unchanged: 5,
            blocked: false,
        };
        assert_eq!(
            changes(&seed_changes(), &summary, Style::default()),
            "~ pool vps-fra (policy)\n\
             ~ ownerQuota vps-fra:gpu (max)\n\
             + offer vps-fra -> globex\n\
             + flavor vps-fra/g1.large\n\
             2 to create, 2 to update, 0 to delete, 5 unchanged.\n"
        );
    }

    #[test]
    fn deletes_blocked_changes_and_colour() {
        let delete =
            change(json!({"kind": "flavor", "name": "vps-fra/g1.small", "action": "delete"}));
        assert_eq!(
            change_line(&delete, Style::default()).unwrap(),
            "- flavor vps-fra/g1.small"
        );
        let blocked = change(json!({
            "kind": "pool", "name": "vps-fra", "action": "update", "fields": ["site", "policy"],
            "blocked": true, "note": "site cannot change; create a new pool instead"
        }));
        assert_eq!(
            change_line(&blocked, Style::default()).unwrap(),
            "! ~ pool vps-fra (site, policy) (blocked: site cannot change; create a new pool instead)"
        );
        // An unchanged item can still be blocked (docs/cli.md: `! = ...`).
        let unchanged = change(json!({
            "kind": "pool", "name": "burst", "action": "unchanged",
            "blocked": true, "note": "unknown provider account \"cloud\""
        }));
        assert_eq!(
            change_line(&unchanged, Style::default()).unwrap(),
            "! = pool burst (blocked: unknown provider account \"cloud\")"
        );
        let coloured = change_line(
            &delete,
            Style {
                colour: true,
                ..Style::default()
            },
        )
        .unwrap();
        assert_eq!(coloured, "\x1b[31m- flavor vps-fra/g1.small\x1b[0m");
    }

    #[test]
    fn colour_only_on_a_terminal_and_never_with_no_color() {
        let none = |_: &str| None;
        assert!(Style::detect(true, none).colour);
        assert!(!Style::detect(false, none).colour);
        let no_color = |name: &str| (name == "NO_COLOR").then(|| "1".to_owned());
        assert!(!Style::detect(true, no_color).colour);
        let forced = |name: &str| (name == "CLICOLOR_FORCE").then(|| "1".to_owned());
        assert!(Style::detect(false, forced).colour);
    }

    #[test]
    fn status_shows_a_failed_check() {
        let status: Status = serde_json::from_value(json!({
            "tenantId": "root",
            "applied": {
                "planHash": "3f1c", "appliedBy": "usr_ops", "appliedAt": 1790251200000u64,
                "prune": false
            },
            "error": { "message": "the applied document no longer validates", "at": 1790252100000u64 }
        }))
        .unwrap();
        assert_eq!(
            super::status(&status, Style::default()),
            "Tenant: root\n\
             Applied: by usr_ops at 2026-09-24T12:00:00Z\n\
             planHash: 3f1c\n\
             Last check failed at 2026-09-24T12:15:00Z: the applied document no longer validates\n\
             Checked: not yet\n"
        );
    }

    #[test]
    fn status_by_kind() {
        let status: Status = serde_json::from_value(json!({
            "tenantId": "root",
            "applied": {
                "planHash": "3f1c", "appliedBy": "usr_ops", "appliedAt": 1790251200000u64,
                "prune": true, "checkedAt": 1790252100000u64
            },
            "drift": {
                "changes": [{ "kind": "pool", "name": "vps-fra", "action": "update", "fields": ["policy"] }],
                "summary": { "create": 0, "update": 1, "delete": 0, "unchanged": 5 },
                "blocked": false,
                "planHash": "9ab0"
            }
        }))
        .unwrap();
        assert_eq!(
            super::status(&status, Style::default()),
            "Tenant: root\n\
             Applied: by usr_ops at 2026-09-24T12:00:00Z, with prune\n\
             planHash: 3f1c\n\
             Checked: 2026-09-24T12:15:00Z\n\
             Drift: the fleet has drifted from the applied document:\n  \
             pool:\n    \
             ~ pool vps-fra (policy)\n  \
             0 to create, 1 to update, 0 to delete, 5 unchanged.\n  \
             planHash: 9ab0\n"
        );
        // A drift cut at its first changes says so.
        let mut cut = status.clone();
        if let Some(drift) = cut.drift.as_mut() {
            drift.summary.update = 60;
        }
        assert!(super::status(&cut, Style::default()).contains(
            "  (1 of 60 changes shown: a drift records at most 50; `fleet plan` of the \
                 applied document lists them all)\n  0 to create, 60 to update"
        ));
        let never: Status = serde_json::from_value(json!({ "tenantId": "acme" })).unwrap();
        assert_eq!(
            super::status(&never, Style::default()),
            "Tenant acme has never applied a document: there is nothing to check drift against.\n"
        );
    }
}
