//! `docs/performance.md` from the rows of one `scripts/bench` run.
//!
//! A row is a JSON object with a `section`; measures carry `name` and `ms` (or `value` and
//! `unit`), optionally `ratio`, `peer` and `goal`; `text` rows are printed verbatim; `scaling`
//! rows are points of a curve; the `meta` row says where and when the run happened.

use crate::svg::{Series, chart};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// The sections in report order, with their headings and what they compare.
const SECTIONS: [(&str, &str, &str); 9] = [
    (
        "planner-native",
        "Planner, native",
        "The maximal pair (1000 items per list, pools with 3 offers and 4 owner quota keys) against the export of a fleet differing in about one item in ten. Peer: two typed `serde_json` parses of the same bytes, into structs of `String`s as a serde user writes them (`planner/benches/common/peer.rs`). The planner's own types borrow their strings from the input (`planner::text`); the last two rows compare the pipeline with two parses into those types too, so the share of the ratio that borrowing earns is in plain sight.",
    ),
    (
        "planner-node",
        "Planner, WebAssembly in Node",
        "Bytes in, the whole pipeline (validate, plan, planHash), against `JSON.parse` + ajv validation of the desired document alone with the generated schema (`planner/fleet.schema.json`), a plain JS implementation of the same plan (parse, ajv validate, keyed diff, canonical JSON, SHA-256 with `node:crypto`), and microdiff of the two documents.",
    ),
    (
        "planner-chromium",
        "Planner, WebAssembly in headless Chromium",
        "The same pipeline and peers in a page served on loopback, driven by chromedriver.",
    ),
    (
        "terraform",
        "Sanity row: Terraform",
        "`terraform plan -refresh=false` over the same items as `terraform_data` resources, against a state applied from the changed document.",
    ),
    ("scaling", "Scaling", ""),
    (
        "server",
        "Server",
        "Release builds, loopback HTTP, SQLite and PostgreSQL (a throwaway cluster) side by side (`tests/server_bench.rs`, `tests/drift_bench.rs`). The drift pass runs in a real server over real rows: one tenant's document is applied over HTTP, the other tenants are copies of its rows made in SQL (applying 200 items per tenant over HTTP would take hours at 10,000 tenants); the pass checks every tenant and finds no drift, which proves the copies whole.",
    ),
    (
        "console",
        "Console",
        "Release wasm + JS, gzip -9, against a Leptos counter built in the same run with the same profile; timings in headless Chromium, the console served by the release server on loopback. In the page: the server holds the maximal pair's fleet (11,800 objects), the console fetches its export, and the maximal document is pasted into the editor; the page's own performance measures and the time until the planHash shows.",
    ),
    (
        "callgrind",
        "Profile (callgrind instruction counts)",
        "`valgrind --tool=callgrind` on three runs of the native pipeline over the maximal pair; inclusive instruction counts of the top functions.",
    ),
    ("notes", "Notes", ""),
];

fn str_of<'a>(row: &'a Value, key: &str) -> Option<&'a str> {
    row.get(key).and_then(Value::as_str)
}

fn num_of(row: &Value, key: &str) -> Option<f64> {
    row.get(key).and_then(Value::as_f64)
}

fn value_cell(row: &Value) -> String {
    if let Some(ms) = num_of(row, "ms") {
        if ms >= 100.0 {
            format!("{ms:.0} ms")
        } else {
            format!("{ms:.2} ms")
        }
    } else if let Some(v) = row.get("value") {
        let unit = str_of(row, "unit").unwrap_or("");
        match v {
            Value::Number(n) => {
                let f = n.as_f64().unwrap_or_default();
                if f.fract() == 0.0 {
                    format!("{f:.0} {unit}")
                } else {
                    format!("{f:.2} {unit}")
                }
            }
            Value::String(s) => format!("{s} {unit}"),
            other => format!("{other} {unit}"),
        }
        .trim_end()
        .to_string()
    } else {
        String::new()
    }
}

/// Whether a ratio meets a goal written `<= 1.3 x`, `< 0.25 x` or `>= 2 x`.
fn meets(ratio: f64, goal: &str) -> Option<bool> {
    let goal = goal.trim().trim_end_matches('x').trim();
    let (op, rest) = goal.split_at(goal.find(|c: char| c.is_ascii_digit())?);
    let target: f64 = rest.trim().parse().ok()?;
    match op.trim() {
        "<=" => Some(ratio <= target),
        "<" => Some(ratio < target),
        ">=" => Some(ratio >= target),
        ">" => Some(ratio > target),
        _ => None,
    }
}

/// The growth exponent between the first and last points at or above `from` objects: 1 is
/// linear, 2 quadratic.
fn exponent(points: &[(f64, f64)], from: f64) -> Option<f64> {
    let big: Vec<&(f64, f64)> = points.iter().filter(|p| p.0 >= from).collect();
    let (a, b) = (big.first()?, big.last()?);
    (b.0 > a.0).then(|| (b.1 / a.1).ln() / (b.0 / a.0).ln())
}

/// The growth exponent over a curve's last step, between its two largest points: where a
/// quadratic lookup shows first, and past the sizes whose working set the CPU's caches hold
/// (which make the step from 1,000 to 3,500 objects look steeper than the curve is).
fn last_step_exponent(points: &[(f64, f64)]) -> Option<f64> {
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let [.., a, b] = sorted.as_slice() else {
        return None;
    };
    (b.0 > a.0).then(|| (b.1 / a.1).ln() / (b.0 / a.0).ln())
}

/// Writes the report to `out` and the plots into `svg_dir`.
pub fn write(rows: &[Value], out: &Path, svg_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(svg_dir)?;
    let mut md = String::new();
    let meta = rows.iter().find(|r| str_of(r, "section") == Some("meta"));
    md.push_str("# Performance\n\n");
    md.push_str(
        "Generated by `scripts/bench` (do not edit by hand): every figure below comes from one run \
         on one machine, and every ratio compares two measures taken in that run, interleaved, \
         so that a busy machine slows both alike. Times are medians unless a row says otherwise.\n\n",
    );
    if let Some(meta) = meta {
        let get = |k| str_of(meta, k).unwrap_or("?");
        let _ = writeln!(md, "- Date: {}", get("date"));
        let _ = writeln!(
            md,
            "- Machine: {} ({} cores, {})",
            get("cpu"),
            get("cores"),
            get("memory")
        );
        let _ = writeln!(md, "- System: {}", get("os"));
        let _ = writeln!(
            md,
            "- Toolchain: {}; {}; {}",
            get("rustc"),
            get("node"),
            get("chromium")
        );
        let _ = writeln!(md, "- Commit: {}", get("commit"));
        let _ = writeln!(md, "- Command: `{}`", get("command"));
        let _ = writeln!(md, "- Load during the run: {}", get("load"));
        md.push('\n');
    }
    if let Some(f) = rows
        .iter()
        .find(|r| str_of(r, "section") == Some("fixture"))
    {
        let _ = writeln!(
            md,
            "The maximal pair: document {} KiB, export {} KiB ({} objects); the plan has {} calls ({}).\n",
            num_of(f, "documentBytes").unwrap_or_default() as u64 / 1024,
            num_of(f, "exportBytes").unwrap_or_default() as u64 / 1024,
            num_of(f, "objects").unwrap_or_default(),
            num_of(f, "calls").unwrap_or_default(),
            f.get("summary").map(Value::to_string).unwrap_or_default()
        );
    }

    for (section, title, about) in SECTIONS {
        let ours: Vec<&Value> = rows
            .iter()
            .filter(|r| str_of(r, "section") == Some(section))
            .collect();
        if ours.is_empty() {
            if section == "notes" {
                md.push_str(
                    "## Notes\n\nEvery part of `scripts/bench` ran to the end in this run.\n\n",
                );
            }
            continue;
        }
        let _ = writeln!(md, "## {title}\n");
        if !about.is_empty() {
            let _ = writeln!(md, "{about}\n");
        }
        if section == "scaling" {
            let instructions: Vec<&Value> = rows
                .iter()
                .filter(|r| str_of(r, "section") == Some("scaling-instructions"))
                .collect();
            scaling(&mut md, &ours, &instructions, svg_dir, out)?;
            continue;
        }
        let measures: Vec<&&Value> = ours.iter().filter(|r| r.get("name").is_some()).collect();
        if !measures.is_empty() {
            md.push_str("| Measure | Value | Ratio | Goal |\n|---|---:|---:|---|\n");
            for r in measures {
                let ratio = num_of(r, "ratio").map_or(String::new(), |x| match str_of(r, "peer") {
                    Some(p) => format!("{x:.2} x {p}"),
                    None => format!("{x:.2} x"),
                });
                let goal = match (str_of(r, "goal"), num_of(r, "ratio")) {
                    (Some(g), Some(x)) => match meets(x, g) {
                        Some(true) => format!("{g}: met"),
                        Some(false) => format!("{g}: **not met**"),
                        None => g.to_string(),
                    },
                    (Some(g), None) => g.to_string(),
                    _ => String::new(),
                };
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} |",
                    str_of(r, "name").unwrap_or(""),
                    value_cell(r),
                    ratio,
                    goal
                );
            }
            md.push('\n');
        }
        side_by_side(&mut md, &ours);
        if section == "server" {
            drift_plot(&mut md, &ours, svg_dir, out)?;
        }
        let texts: Vec<&str> = ours.iter().filter_map(|r| str_of(r, "text")).collect();
        if !texts.is_empty() {
            md.push_str("```text\n");
            for t in texts {
                md.push_str(t.trim_end());
                md.push('\n');
            }
            md.push_str("```\n\n");
        }
    }
    hot_spots(&mut md, rows);
    std::fs::write(out, md)
}

fn scaling(
    md: &mut String,
    rows: &[&Value],
    instructions: &[&Value],
    svg_dir: &Path,
    out: &Path,
) -> std::io::Result<()> {
    let mut curves: Vec<(String, Vec<&Value>)> = Vec::new();
    for r in rows {
        let name = str_of(r, "curve").unwrap_or("?").to_string();
        match curves.iter_mut().find(|c| c.0 == name) {
            Some(c) => c.1.push(r),
            None => curves.push((name, vec![r])),
        }
    }
    let mut series = Vec::new();
    md.push_str(
        "Plan time against the objects in the state (the export). Each curve is swept three \
         times; a point is the median of its three medians (its rounds run back to back, warm). \
         The exponent is the slope on log-log axes from 1,000 objects up, and over the last step \
         (the two largest points: where a quadratic lookup shows first, past the sizes the CPU's \
         caches hold): 1 is linear; above 1.2 on the last step is flagged super-linear. Under \
         each curve, when the run had valgrind, its points in instructions (callgrind, one \
         pipeline run per point): a count that no cache bends, so its growth is the \
         algorithm's.\n\n",
    );
    for (name, points) in &curves {
        let _ = writeln!(md, "**{name}**\n");
        let (plan_pts, pipe_pts) = curve_table(md, points, ["planMs", "pipelineMs"], "", |ms| {
            format!("{ms:.3} ms")
        });
        md.push('\n');
        curve_instructions(md, name, instructions);
        series.push(Series {
            name: format!("plan: {name}"),
            points: plan_pts,
        });
        series.push(Series {
            name: format!("pipeline: {name}"),
            points: pipe_pts,
        });
    }
    let file = svg_dir.join("scaling.svg");
    std::fs::write(
        &file,
        chart(
            "Plan time against state size (log-log; dashed: linear)",
            "objects in the state",
            "milliseconds",
            &series,
        ),
    )?;
    let rel = relative(&file, out);
    let _ = writeln!(md, "![Scaling curves]({rel})\n");
    Ok(())
}

/// The curve's points in instructions (callgrind), when the run counted them: unlike time,
/// a count does not depend on what the CPU's caches hold, so its growth is the algorithm's.
fn curve_instructions(md: &mut String, curve: &str, instructions: &[&Value]) {
    let points: Vec<&Value> = instructions
        .iter()
        .copied()
        .filter(|r| str_of(r, "curve") == Some(curve))
        .collect();
    if points.is_empty() {
        return;
    }
    md.push_str("In instructions (callgrind, one run per point):\n\n");
    curve_table(
        md,
        &points,
        ["planIr", "pipelineIr"],
        " instructions",
        thousands,
    );
    md.push('\n');
}

/// A curve's points: (objects, value).
type Points = Vec<(f64, f64)>;

/// One curve's table (a row per point: items, objects, then the plan's and the pipeline's
/// values under `keys`, written by `cell`) and its growth lines (`plan{what}: growth exponent
/// ...`). Answers the plan's and the pipeline's points.
fn curve_table(
    md: &mut String,
    points: &[&Value],
    keys: [&str; 2],
    what: &str,
    cell: fn(f64) -> String,
) -> (Points, Points) {
    md.push_str("| Items per list | Objects in the state | Plan | Validate + read export + plan + planHash |\n|---:|---:|---:|---:|\n");
    let mut plan_pts = Vec::new();
    let mut pipe_pts = Vec::new();
    for p in points {
        let objects = num_of(p, "objects").unwrap_or_default();
        let plan = num_of(p, keys[0]).unwrap_or_default();
        let pipe = num_of(p, keys[1]).unwrap_or_default();
        plan_pts.push((objects, plan));
        pipe_pts.push((objects, pipe));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            num_of(p, "items").unwrap_or_default(),
            objects,
            cell(plan),
            cell(pipe)
        );
    }
    for (stage, pts) in [("plan", &plan_pts), ("pipeline", &pipe_pts)] {
        if let (Some(e), Some(last)) = (exponent(pts, 1000.0), last_step_exponent(pts)) {
            let flag = if last > 1.2 {
                "**super-linear**"
            } else {
                "near-linear"
            };
            let _ = writeln!(
                md,
                "\n{stage}{what}: growth exponent {e:.2} from 1,000 objects up, {last:.2} over the last step, {flag}."
            );
        }
    }
    (plan_pts, pipe_pts)
}

/// The last-step growth exponent of a curve's instruction counts (`what`: `plan` or
/// `pipeline`), when the run counted them.
fn instruction_step(rows: &[Value], curve: &str, what: &str) -> Option<f64> {
    let key = if what == "plan" {
        "planIr"
    } else {
        "pipelineIr"
    };
    let points: Points = rows
        .iter()
        .filter(|r| {
            str_of(r, "section") == Some("scaling-instructions")
                && str_of(r, "curve") == Some(curve)
        })
        .filter_map(|r| Some((num_of(r, "objects")?, num_of(r, key)?)))
        .collect();
    last_step_exponent(&points)
}

/// `file`'s path from the folder of `from`, for a Markdown link (both under one root).
fn relative(file: &Path, from: &Path) -> String {
    let base = from.parent().unwrap_or(Path::new(""));
    match file.strip_prefix(base) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => file.display().to_string(),
    }
}

/// The columns of the side-by-side tables, in this order when present.
const DATABASES: [&str; 2] = ["SQLite", "PostgreSQL"];

/// Rows carrying `table`, `measure`, `db` and `cell` as one table per caption: a line per
/// measure, a column per database.
fn side_by_side(md: &mut String, rows: &[&Value]) {
    let mut tables: Vec<(&str, Vec<&Value>)> = Vec::new();
    for r in rows {
        let Some(table) = str_of(r, "table") else {
            continue;
        };
        match tables.iter_mut().find(|t| t.0 == table) {
            Some(t) => t.1.push(r),
            None => tables.push((table, vec![r])),
        }
    }
    for (table, rows) in tables {
        let mut columns: Vec<&str> = Vec::new();
        let mut measures: Vec<&str> = Vec::new();
        for r in &rows {
            let db = str_of(r, "db").unwrap_or("?");
            if !columns.contains(&db) {
                columns.push(db);
            }
            let m = str_of(r, "measure").unwrap_or("?");
            if !measures.contains(&m) {
                measures.push(m);
            }
        }
        columns.sort_by_key(|c| {
            DATABASES
                .iter()
                .position(|d| d == c)
                .unwrap_or(DATABASES.len())
        });
        let _ = writeln!(md, "**{table}**\n");
        let _ = writeln!(md, "| Measure | {} |", columns.join(" | "));
        let _ = writeln!(md, "|---|{}", "---:|".repeat(columns.len()));
        for m in measures {
            let cells: Vec<&str> = columns
                .iter()
                .map(|c| {
                    rows.iter()
                        .rev()
                        .find(|r| str_of(r, "measure") == Some(m) && str_of(r, "db") == Some(*c))
                        .and_then(|r| str_of(r, "cell"))
                        .unwrap_or("not measured")
                })
                .collect();
            let _ = writeln!(md, "| {m} | {} |", cells.join(" | "));
        }
        md.push('\n');
    }
}

/// The drift pass's time against the number of tenants, a curve per database (rows with
/// `tenants` and `passMs`), as `drift.svg`, with its growth exponent.
fn drift_plot(md: &mut String, rows: &[&Value], svg_dir: &Path, out: &Path) -> std::io::Result<()> {
    let mut series: Vec<Series> = Vec::new();
    for r in rows {
        let (Some(db), Some(n), Some(ms)) =
            (str_of(r, "db"), num_of(r, "tenants"), num_of(r, "passMs"))
        else {
            continue;
        };
        let name = format!("drift pass, {db}");
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((n, ms.max(1.0))),
            None => series.push(Series {
                name,
                points: vec![(n, ms.max(1.0))],
            }),
        }
    }
    if series.is_empty() {
        return Ok(());
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some(e) = exponent(&s.points, 1000.0) {
            let flag = if e > 1.2 {
                "**super-linear**"
            } else {
                "near-linear"
            };
            let _ = writeln!(
                md,
                "{}: growth exponent {e:.2} from 1,000 tenants up, {flag}.\n",
                s.name
            );
        }
    }
    let file = svg_dir.join("drift.svg");
    std::fs::write(
        &file,
        chart(
            "Drift pass time against tenants (log-log; dashed: linear)",
            "tenants",
            "milliseconds",
            &series,
        ),
    )?;
    let _ = writeln!(
        md,
        "![Drift pass against tenants]({})\n",
        relative(&file, out)
    );
    Ok(())
}

/// The part of the pipeline a function of the profile belongs to, by its name.
fn area(function: &str) -> &'static str {
    let has = |needles: &[&str]| needles.iter().any(|n| function.contains(n));
    if has(&[
        "planner::canonical",
        "plan_hash",
        "sha2::",
        "Sha256",
        "compress256",
    ]) {
        "planHash (canonical JSON, SHA-256)"
    } else if has(&["serde", "Deserializ", "Serializ"]) {
        "JSON reading and writing (serde_json, derived visitors)"
    } else if has(&["planner::validate", "planner::schema"]) {
        "validation rules (planner::validate)"
    } else if has(&["planner::plan", "planner::diff"]) {
        "planning (planner::plan)"
    } else if has(&["alloc", "free", "drop_in_place", "RawVec"]) {
        "allocation, freeing, drops"
    } else if has(&["core::slice::sort"]) {
        "sorting"
    } else if has(&["hashbrown", "Hasher", "hash::", "BuildHasher"]) {
        "hash maps"
    } else if has(&["mem", "str", "utf8"]) {
        "memory copies, string and UTF-8 checks"
    } else {
        "other"
    }
}

/// Whether a measure row met its goal, when it has one.
fn goal_status(r: &Value) -> Option<(bool, f64, &str)> {
    let goal = str_of(r, "goal")?;
    let ratio = num_of(r, "ratio")?;
    Some((meets(ratio, goal)?, ratio, goal))
}

/// The `Hot spots` section, computed from this run's rows: where the profiled pipeline's
/// instructions go (self cost by area and by function), the goals and where they stand, the
/// curves flagged super-linear, and the wasm pipeline against the native one.
fn hot_spots(md: &mut String, rows: &[Value]) {
    md.push_str("## Hot spots\n\n");
    md.push_str("Computed from this run's rows (nothing here is written by hand).\n\n");
    let total = rows
        .iter()
        .find(|r| str_of(r, "section") == Some("hotspot-total"))
        .and_then(|r| num_of(r, "ir"));
    let functions: Vec<(&str, f64)> = rows
        .iter()
        .filter(|r| str_of(r, "section") == Some("hotspot"))
        .filter_map(|r| Some((str_of(r, "function")?, num_of(r, "ir")?)))
        .collect();
    match total {
        Some(total) if total > 0.0 && !functions.is_empty() => {
            let _ = writeln!(
                md,
                "**Where the native pipeline's instructions go** (callgrind, three runs over the maximal pair: {} instructions; the self costs by area below count the top functions, {:.0}% of them):\n",
                thousands(total),
                functions.iter().map(|f| f.1).sum::<f64>() / total * 100.0
            );
            let stages: Vec<(&str, f64)> = rows
                .iter()
                .filter(|r| str_of(r, "section") == Some("hotspot-stage"))
                .filter_map(|r| Some((str_of(r, "stage")?, num_of(r, "ir")?)))
                .collect();
            if !stages.is_empty() {
                md.push_str("| Stage (inclusive) | Instructions | Share |\n|---|---:|---:|\n");
                let counted: f64 = stages
                    .iter()
                    .filter(|s| !s.0.starts_with("of which"))
                    .map(|s| s.1)
                    .sum();
                let rest = ("the rest: read the export (typed parse)", total - counted);
                for (stage, ir) in stages.iter().chain(std::iter::once(&rest)) {
                    let _ = writeln!(
                        md,
                        "| {stage} | {} | {:.1}% |",
                        thousands(*ir),
                        ir / total * 100.0
                    );
                }
                md.push('\n');
            }
            let mut areas: Vec<(&str, f64)> = Vec::new();
            for &(f, ir) in &functions {
                let a = area(f);
                match areas.iter_mut().find(|x| x.0 == a) {
                    Some(x) => x.1 += ir,
                    None => areas.push((a, ir)),
                }
            }
            areas.sort_by(|a, b| b.1.total_cmp(&a.1));
            md.push_str("| Area | Instructions | Share |\n|---|---:|---:|\n");
            for (a, ir) in &areas {
                let _ = writeln!(
                    md,
                    "| {a} | {} | {:.1}% |",
                    thousands(*ir),
                    ir / total * 100.0
                );
            }
            md.push_str("\n**The heaviest functions** (self cost):\n\n| Function | Area | Share |\n|---|---|---:|\n");
            for &(f, ir) in functions.iter().take(12) {
                let _ = writeln!(
                    md,
                    "| `{}` | {} | {:.1}% |",
                    f.replace('|', "\\|"),
                    area(f),
                    ir / total * 100.0
                );
            }
            md.push('\n');
        }
        _ => md.push_str(
            "No callgrind profile in this run (`--no-callgrind`, or valgrind is missing).\n\n",
        ),
    }

    let mut findings: Vec<String> = Vec::new();
    let measures = rows.iter().filter(|r| r.get("name").is_some());
    for r in measures {
        if let Some((met, ratio, goal)) = goal_status(r) {
            let peer = str_of(r, "peer").map_or(String::new(), |p| format!(" {p}"));
            findings.push(format!(
                "Goal {}: {} ({}): {ratio:.2} x{peer}, goal {goal}.",
                if met { "met" } else { "**not met**" },
                str_of(r, "name").unwrap_or("?"),
                section_title(str_of(r, "section").unwrap_or(""))
            ));
        }
    }
    // Per curve: its name, then its plan and pipeline points.
    type Curve<'a> = (&'a str, Points, Points);
    let mut curves: Vec<Curve> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| str_of(r, "section") == Some("scaling"))
    {
        let name = str_of(r, "curve").unwrap_or("?");
        let x = num_of(r, "objects").unwrap_or_default();
        let point = |k| (x, num_of(r, k).unwrap_or_default());
        match curves.iter_mut().find(|c| c.0 == name) {
            Some(c) => {
                c.1.push(point("planMs"));
                c.2.push(point("pipelineMs"));
            }
            None => curves.push((name, vec![point("planMs")], vec![point("pipelineMs")])),
        }
    }
    for (name, plan, pipeline) in &curves {
        for (what, pts) in [("plan", plan), ("pipeline", pipeline)] {
            if let Some(e) = last_step_exponent(pts).filter(|e| *e > 1.2) {
                let counted = match instruction_step(rows, name, what) {
                    Some(c) if c <= 1.2 => format!(
                        " Its instruction count grows with exponent {c:.2} over the same step: the work is linear; the time's steeper step is the memory hierarchy (the larger working set no longer fits the CPU's caches)."
                    ),
                    Some(c) => format!(" Its instruction count grows with exponent {c:.2} too."),
                    None => String::new(),
                };
                findings.push(format!(
                    "Super-linear: {what} time on the curve \"{name}\" grows with exponent {e:.2} over its last step (1 is linear).{counted}"
                ));
            }
        }
    }
    let find = |section: &str, prefix: &str| {
        rows.iter()
            .find(|r| {
                str_of(r, "section") == Some(section)
                    && str_of(r, "name").is_some_and(|n| n.starts_with(prefix))
            })
            .and_then(|r| num_of(r, "ms"))
    };
    if let (Some(wasm), Some(native)) = (
        find("planner-node", "wasm validate + plan + hash (bytes in)"),
        find("planner-native", "validate + read export + plan + planHash"),
    ) {
        findings.push(format!(
            "The wasm pipeline in Node takes {wasm:.1} ms, {:.2} x the native pipeline's {native:.1} ms.",
            wasm / native
        ));
    }
    if !findings.is_empty() {
        md.push_str("**What this run shows**\n\n");
        for f in findings {
            let _ = writeln!(md, "- {f}");
        }
        md.push('\n');
    }
}

/// A section's heading.
fn section_title(section: &str) -> &str {
    SECTIONS
        .iter()
        .find(|s| s.0 == section)
        .map_or(section, |s| s.1)
}

/// 1234567 as `1,234,567`.
fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The self-cost lines of `callgrind_annotate`'s report as rows: the program's total
/// (`hotspot-total`) and the top `limit` functions (`hotspot`), their file prefixes and
/// binary suffixes removed.
pub fn hotspot_rows(annotated: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let count = |line: &str| -> Option<(f64, String)> {
        let line = line.trim_start();
        let (n, rest) = line.split_once(' ')?;
        let n: f64 = n.replace(',', "").parse().ok()?;
        let rest = rest.trim_start();
        let rest = rest.strip_prefix('(')?.split_once(')')?.1.trim();
        Some((n, rest.to_string()))
    };
    for line in annotated.lines() {
        let Some((n, what)) = count(line) else {
            continue;
        };
        if what.starts_with("PROGRAM TOTALS") {
            out.push(serde_json::json!({ "section": "hotspot-total", "ir": n }));
            continue;
        }
        if out
            .iter()
            .filter(|r| str_of(r, "section") == Some("hotspot"))
            .count()
            >= limit
        {
            continue;
        }
        // `file:function [binary]`: the function alone.
        let what = what.rsplit_once(" [").map_or(what.as_str(), |w| w.0);
        let function = what.split_once(':').map_or(what, |w| w.1);
        out.push(serde_json::json!({ "section": "hotspot", "function": function, "ir": n }));
    }
    out
}

/// The pipeline's stages in `callgrind_annotate --inclusive=yes` terms: a stage and the
/// function whose inclusive cost it is.
const STAGES: [(&str, &str); 6] = [
    (
        "validate the document (its parse included)",
        "planner::validate::validate",
    ),
    ("plan (planHash included)", "planner::plan::plan"),
    ("of which planHash", "planner::plan::plan_hash"),
    (
        "drop the document",
        "core::ptr::drop_in_place<planner::document::Document>",
    ),
    (
        "drop the export",
        "core::ptr::drop_in_place<planner::export::Export>",
    ),
    (
        "drop the plan",
        "core::ptr::drop_in_place<planner::plan::Plan>",
    ),
];

/// The stages of the pipeline found in an inclusive `callgrind_annotate` report, as
/// `hotspot-stage` rows (a stage whose function was inlined away is left out).
pub fn stage_rows(inclusive: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for (stage, function) in STAGES {
        let found = hotspot_rows(inclusive, usize::MAX)
            .into_iter()
            .find(|r| str_of(r, "function") == Some(function));
        if let Some(ir) = found.as_ref().and_then(|r| num_of(r, "ir")) {
            out.push(serde_json::json!({ "section": "hotspot-stage", "stage": stage, "ir": ir }));
        }
    }
    out
}

/// One point of a scaling curve in instructions (section `scaling-instructions`), from
/// callgrind_annotate's inclusive counts of one pipeline run collected alone (its program
/// total is the pipeline's; `planner::plan::plan` is the plan's).
pub fn instruction_row(
    curve: &str,
    items: usize,
    objects: usize,
    inclusive: &str,
) -> Option<Value> {
    let rows = hotspot_rows(inclusive, usize::MAX);
    let pipeline = rows
        .iter()
        .find(|r| str_of(r, "section") == Some("hotspot-total"))
        .and_then(|r| num_of(r, "ir"))?;
    let plan = rows
        .iter()
        .find(|r| str_of(r, "function") == Some("planner::plan::plan"))
        .and_then(|r| num_of(r, "ir"))?;
    Some(
        serde_json::json!({ "section": "scaling-instructions", "curve": curve, "items": items,
                             "objects": objects, "planIr": plan, "pipelineIr": pipeline }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_scaling_point_in_instructions() {
        let text = "--------\n142,871,160 (100.0%)  PROGRAM TOTALS\n\n--------\nIr  file:function\n\
            142,871,160 (100.0%)  ???:fleet_bench::pipeline [/x/fleet-bench]\n\
             35,002,745 (24.50%)  ???:planner::plan::plan [/x/fleet-bench]\n";
        let row = instruction_row("c", 1000, 11800, text).unwrap();
        assert_eq!(
            row,
            json!({ "section": "scaling-instructions", "curve": "c", "items": 1000, "objects": 11800,
                    "planIr": 35_002_745.0, "pipelineIr": 142_871_160.0 })
        );
        assert_eq!(instruction_row("c", 1, 1, "nothing counted"), None);
        let mut md = String::new();
        let far = json!({ "section": "scaling-instructions", "curve": "c", "items": 1000, "objects": 1_000_000,
                          "planIr": 4e10, "pipelineIr": 9e10 });
        curve_instructions(&mut md, "c", &[&row, &far]);
        assert!(
            md.contains("| 1000 | 11800 | 35,002,745 | 142,871,160 |"),
            "{md}"
        );
        assert!(md.contains("plan instructions: growth exponent 1.59 from 1,000 objects up, 1.59 over the last step, **super-linear**."), "{md}");
    }

    #[test]
    fn reads_callgrind_annotate() {
        let text = "--------\n702,895,647 (100.0%)  PROGRAM TOTALS\n\n--------\nIr  file:function\n\
            132,492,999 (18.85%)  ???:<serde_json::read::SliceRead as serde_json::read::Read>::parse_str [/x/fleet-bench]\n\
             75,797,376 (10.78%)  ???:__rustc::__rust_alloc [/x/fleet-bench]\n\
             35,535,486 ( 5.06%)  ???:planner::canonical::PlanHash::of [/x/fleet-bench]\n";
        let rows = hotspot_rows(text, 2);
        assert_eq!(
            rows[0],
            json!({ "section": "hotspot-total", "ir": 702_895_647.0 })
        );
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[1]["function"],
            "<serde_json::read::SliceRead as serde_json::read::Read>::parse_str"
        );
        assert_eq!(
            area(rows[1]["function"].as_str().unwrap()),
            "JSON reading and writing (serde_json, derived visitors)"
        );
        assert_eq!(area("__rustc::__rust_alloc"), "allocation, freeing, drops");
        assert_eq!(
            area("planner::canonical::PlanHash::of"),
            "planHash (canonical JSON, SHA-256)"
        );
        assert_eq!(thousands(702_895_647.0), "702,895,647");
    }

    #[test]
    fn puts_databases_side_by_side() {
        let rows = [
            json!({ "section": "server", "table": "T", "measure": "p99", "db": "PostgreSQL", "cell": "9 ms" }),
            json!({ "section": "server", "table": "T", "measure": "p99", "db": "SQLite", "cell": "7 ms" }),
            json!({ "section": "server", "table": "T", "measure": "p50", "db": "SQLite", "cell": "5 ms" }),
        ];
        let refs: Vec<&Value> = rows.iter().collect();
        let mut md = String::new();
        side_by_side(&mut md, &refs);
        assert_eq!(
            md,
            "**T**\n\n| Measure | SQLite | PostgreSQL |\n|---|---:|---:|\n| p99 | 7 ms | 9 ms |\n| p50 | 5 ms | not measured |\n\n"
        );
    }

    #[test]
    fn hot_spots_come_from_the_rows() {
        let rows = [
            json!({ "section": "hotspot-total", "ir": 1000.0 }),
            json!({ "section": "hotspot", "function": "planner::plan::diff::plan", "ir": 600.0 }),
            json!({ "section": "hotspot", "function": "serde_json::de::from_trait", "ir": 300.0 }),
            json!({ "section": "planner-native", "name": "pipeline", "ms": 10.0, "ratio": 2.0, "peer": "two parses", "goal": "<= 1.3 x" }),
        ];
        let mut md = String::new();
        hot_spots(&mut md, &rows);
        assert!(
            md.contains("| planning (planner::plan) | 600 | 60.0% |"),
            "{md}"
        );
        assert!(
            md.contains(
                "Goal **not met**: pipeline (Planner, native): 2.00 x two parses, goal <= 1.3 x."
            ),
            "{md}"
        );
        assert!(!md.contains("serde-wasm-bindgen"));
    }
}
