//! How the console writes dates, counts, values and change lines (the CLI's words).

use crate::changes::ChangeRef;
use serde_json::Value;

/// Unix milliseconds as `2026-11-29 18:42:50 UTC` (always UTC, so every reader agrees).
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The seed's counts line: `2 to create, 2 to update, 0 to delete, 5 unchanged.`
pub fn summary_line(summary: &planner::Summary) -> String {
    format!(
        "{} to create, {} to update, {} to delete, {} unchanged.",
        summary.create, summary.update, summary.delete, summary.unchanged
    )
}

/// `n` and the noun counted, singular for one: `1 object`, `2 objects` (`one` and `many` are
/// the noun's two forms). One function for every count the console writes: no `format!` each.
pub fn count(n: usize, one: &str, many: &str) -> String {
    let mut out = n.to_string();
    out.push(' ');
    out.push_str(if n == 1 { one } else { many });
    out
}

/// The CLI's line of a change: `~ pool vps-fra (policy)`, `+ offer vps-fra -> globex`.
pub fn change_line(change: &ChangeRef) -> String {
    let symbol = match (change.action, change.blocked) {
        ("create", _) => "+",
        ("update", _) => "~",
        ("delete", _) => "-",
        (_, true) => "!",
        _ => "=",
    };
    let mut line = format!("{symbol} {} {}", change.kind, change.name);
    if change.action == "update" && !change.fields.is_empty() {
        line.push_str(&format!(" ({})", change.fields.join(", ")));
    }
    line
}

/// A heading for the changes of one kind.
pub fn kind_title(kind: &str) -> &'static str {
    match kind {
        "site" => "Sites",
        "providerAccount" => "Provider accounts",
        "pool" => "Pools",
        "ownerQuota" => "Owner quotas",
        "offer" => "Offers",
        "flavor" => "Flavors",
        "sandboxTemplate" => "Sandbox templates",
        _ => "Other",
    }
}

/// A field's value, compact; `none` when the side does not have it.
pub fn value(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "none".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// `value` as `serde_json::to_string_pretty` writes it (two-space indent): its compact text
/// (the writer already in the .wasm) indented by [`pretty_text`], instead of a second,
/// pretty, instance of serde's JSON writer.
pub fn pretty(value: &Value) -> String {
    pretty_text(&value.to_string())
}

/// Compact JSON text (no white space outside strings, as canonical JSON is) indented as
/// [`pretty`] writes it, without building a `Value` of it first.
pub fn pretty_text(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let mut chars = json.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '{' | '[' => {
                out.push(c);
                // An empty object or array stays on its line.
                if let Some(close) = chars.next_if(|&n| n == '}' || n == ']') {
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            '"' => {
                in_string = true;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}
