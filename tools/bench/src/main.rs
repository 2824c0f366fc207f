//! The driver of `scripts/bench` (not a library, not part of the test command):
//!
//! - `fleet-bench fixture DIR [DESIRED [STATE]]` writes `document.json` and `export.json`, the
//!   pair of the planner benchmarks (`planner/benches/common/fixture.rs`), for Node, Chromium
//!   and Terraform;
//! - `fleet-bench native [--quick]` prints result rows (JSON lines): validate, plan and hash of
//!   the maximal pair against two typed `serde_json` parses, and the scaling curves;
//! - `fleet-bench profile [ROUNDS]` runs the pipeline for `valgrind --tool=callgrind`;
//! - `fleet-bench hotspots SELF INCLUSIVE` prints, as rows for the report's `Hot spots`, the
//!   program total and the top 40 functions of a `callgrind_annotate` self-cost report, and
//!   the pipeline's stages from an inclusive one;
//! - `fleet-bench report ROWS OUT.md SVG_DIR` renders the rows of one run as
//!   `docs/performance.md` with SVG plots of the curves.

#[path = "../../../planner/benches/common/fixture.rs"]
mod fixture;
#[path = "../../../planner/benches/common/peer.rs"]
mod peer;
mod report;
mod svg;

use planner::{Document, Export, PlanOptions, plan, plan_hash, validate};
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let number =
        |i: usize, default: usize| arg(i).map_or(default, |s| s.parse().expect("a number"));
    match arg(0) {
        Some("fixture") => {
            let dir = std::path::PathBuf::from(arg(1).expect("fixture DIR"));
            let desired = number(2, fixture::N);
            let state = number(3, desired);
            let (doc, export) = fixture::pair(desired, state);
            std::fs::create_dir_all(&dir).expect("creates the folder");
            std::fs::write(dir.join("document.json"), doc).expect("writes document.json");
            std::fs::write(dir.join("export.json"), export).expect("writes export.json");
        }
        Some("native") => native(args.iter().any(|a| a == "--quick")),
        Some("profile") => {
            // RUNS [DIR PRUNE]: the maximal pair with prune, or the pair `fixture` wrote into
            // DIR (made natively first: under valgrind the fixture would take longer than the
            // pipeline it feeds).
            let (desired, export) = match arg(2) {
                Some(dir) => {
                    let read = |name: &str| {
                        std::fs::read(std::path::Path::new(dir).join(name)).expect("reads the pair")
                    };
                    (read("document.json"), read("export.json"))
                }
                None => fixture::pair(fixture::N, fixture::N),
            };
            let prune = number(3, 1) == 1;
            for _ in 0..number(1, 3) {
                black_box(pipeline(&desired, &export, PlanOptions { prune }));
            }
        }
        Some("instructions") => {
            // CURVE ITEMS DIR INCLUSIVE: one point of a scaling curve in instructions, from
            // callgrind_annotate's inclusive counts of one `profile 1 DIR PRUNE`.
            let usage = "instructions CURVE ITEMS DIR INCLUSIVE";
            let curve = arg(1).expect(usage);
            let items = number(2, fixture::N);
            let read = |path: std::path::PathBuf| std::fs::read(path).expect("reads the file");
            let export = read(std::path::Path::new(arg(3).expect(usage)).join("export.json"));
            let objects = Export::from_json(&export).expect("parses").objects.len();
            let inclusive = String::from_utf8(read(arg(4).expect(usage).into())).expect("text");
            // No row is a failure: the script notes the point as not counted.
            match report::instruction_row(curve, items, objects, &inclusive) {
                Some(row) => println!("{row}"),
                None => {
                    eprintln!("no count of the pipeline and planner::plan::plan in the file");
                    std::process::exit(1);
                }
            }
        }
        Some("report") => {
            let rows = std::fs::read_to_string(arg(1).expect("report ROWS")).expect("reads ROWS");
            let rows: Vec<Value> = rows
                .lines()
                .filter(|l| l.starts_with('{'))
                .map(|l| serde_json::from_str(l).expect("a JSON row"))
                .collect();
            let out = std::path::Path::new(arg(2).expect("report OUT.md"));
            let svg_dir = std::path::Path::new(arg(3).expect("report SVG_DIR"));
            report::write(&rows, out, svg_dir).expect("writes the report");
        }
        Some("hotspots") => {
            let read = |i| {
                std::fs::read_to_string(arg(i).expect("hotspots SELF INCLUSIVE"))
                    .expect("reads the file")
            };
            let rows = report::hotspot_rows(&read(1), 40)
                .into_iter()
                .chain(report::stage_rows(&read(2)));
            for row in rows {
                println!("{row}");
            }
        }
        _ => {
            eprintln!("usage: fleet-bench fixture|native|profile|instructions|hotspots|report ...");
            std::process::exit(2);
        }
    }
}

/// The whole native pipeline from bytes: validate the document, read the export, plan (the
/// plan carries its planHash), as the server and the wasm build run it.
fn pipeline(desired: &[u8], export: &[u8], options: PlanOptions) -> usize {
    let document = validate(desired).expect("the desired document is valid");
    let export = Export::from_json(export).expect("the export parses");
    let planned = plan(&document, &export, options);
    black_box(&planned.plan_hash);
    planned.calls.len()
}

/// Runs every candidate once per round, in turn, so that a busy machine slows them alike;
/// stops after `rounds` rounds or once `budget` is spent (at least 5 rounds). Answers each
/// candidate's median.
fn interleaved(
    candidates: &mut [&mut dyn FnMut()],
    rounds: usize,
    budget: Duration,
) -> Vec<Duration> {
    let mut times = vec![Vec::new(); candidates.len()];
    for c in candidates.iter_mut() {
        c();
    }
    let started = Instant::now();
    for round in 0..rounds {
        for (c, t) in candidates.iter_mut().zip(&mut times) {
            let start = Instant::now();
            c();
            t.push(start.elapsed());
        }
        if round >= 4 && started.elapsed() > budget {
            break;
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort();
            t[t.len() / 2]
        })
        .collect()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn row(name: &str, time: Duration, peer: Option<(&str, Duration)>, goal: Option<&str>) {
    let (peer_name, ratio) = match peer {
        Some((p, t)) => (Some(p), Some(time.as_secs_f64() / t.as_secs_f64())),
        None => (None, None),
    };
    println!(
        "{}",
        json!({ "section": "planner-native", "name": name, "ms": ms(time), "peer": peer_name, "ratio": ratio, "goal": goal })
    );
}

fn native(quick: bool) {
    let rounds = if quick { 9 } else { 31 };
    let budget = Duration::from_secs(if quick { 3 } else { 15 });
    let (desired, export_bytes) = fixture::pair(fixture::N, fixture::N);
    let document = validate(&desired).expect("valid");
    let export: Export = serde_json::from_slice(&export_bytes).expect("parses");
    let options = PlanOptions { prune: true };
    let planned = plan(&document, &export, options);
    assert!(!planned.is_blocked(), "the benchmark plan is not blocked");
    println!(
        "{}",
        json!({ "section": "fixture", "documentBytes": desired.len(), "exportBytes": export_bytes.len(),
                "objects": export.objects.len(), "calls": planned.calls.len(), "summary": planned.summary })
    );

    let t = interleaved(
        &mut [
            &mut || {
                black_box(serde_json::from_slice::<peer::Document>(&desired).unwrap());
            },
            &mut || {
                black_box(peer::two_parses(&desired, &export_bytes));
            },
            &mut || {
                black_box(peer::two_borrowing_parses(&desired, &export_bytes));
            },
            &mut || {
                black_box(validate(&desired).unwrap());
            },
            &mut || {
                black_box(Export::from_json(&export_bytes).unwrap());
            },
            &mut || {
                black_box(plan(&document, &export, options));
            },
            &mut || {
                black_box(plan_hash(&planned.calls));
            },
            &mut || {
                black_box(pipeline(&desired, &export_bytes, options));
            },
        ],
        rounds,
        budget,
    );
    let (parse_doc, parse_both, borrowed) = (t[0], t[1], t[2]);
    row(
        "peer: typed serde_json parse of the document",
        parse_doc,
        None,
        None,
    );
    row(
        "peer: two typed serde_json parses (document + export)",
        parse_both,
        None,
        None,
    );
    row(
        "validate (document bytes)",
        t[3],
        Some(("the document's parse", parse_doc)),
        None,
    );
    row("read the export (typed parse)", t[4], None, None);
    row("plan, planHash included (typed inputs)", t[5], None, None);
    row("of which planHash (call list)", t[6], None, None);
    row(
        "validate + read export + plan + planHash",
        t[7],
        Some(("two typed parses", parse_both)),
        Some("<= 1.3 x"),
    );
    row(
        "two parses into the planner's borrowing types (document + export)",
        borrowed,
        None,
        None,
    );
    row(
        "the same pipeline, against the borrowing parses",
        t[7],
        Some(("two borrowing parses", borrowed)),
        None,
    );

    scaling(quick);
}

/// Plan time against size: documents and states growing together up to the maximal document
/// (a list holds at most 1000 items), then the maximal document against a state growing to
/// 100,000 objects (no prune: the rest of the state is left alone, only looked up).
fn scaling(quick: bool) {
    let together: &[usize] = &[10, 100, 300, 1000];
    let state_only: &[usize] = if quick {
        &[1000, 3000]
    } else {
        &[1000, 2000, 4000, 8500]
    };
    let curves: [(&str, usize, &[usize], bool); 2] = [
        (
            "document and state grow together (prune)",
            0,
            together,
            true,
        ),
        (
            "1000-item document, growing state (no prune)",
            fixture::N,
            state_only,
            false,
        ),
    ];
    for (curve, fixed, sizes, prune) in curves {
        // The curve is swept three times and each point keeps the median of its three
        // medians: a point measured once, in its own two seconds, took whatever the machine
        // was doing then (a busy spell once made the 1000-item point 40% slower and the curve
        // "super-linear"). Within a sweep a point's rounds run back to back, warm, as before:
        // interleaving the points would measure the small ones with caches the large ones
        // just emptied.
        let pairs: Vec<(usize, Vec<u8>, Vec<u8>)> = sizes
            .iter()
            .map(|&n| {
                let desired_n = if fixed == 0 { n } else { fixed };
                let (desired, export_bytes) = fixture::pair(desired_n, n);
                (desired_n, desired, export_bytes)
            })
            .collect();
        let read: Vec<(Document, Export)> = pairs
            .iter()
            .map(|(_, desired, export_bytes)| {
                let document = validate(desired).expect("valid");
                let export: Export = serde_json::from_slice(export_bytes).expect("parses");
                (document, export)
            })
            .collect();
        let options = PlanOptions { prune };
        const SWEEPS: usize = 3;
        let mut sweeps = vec![Vec::new(); pairs.len()];
        for _ in 0..SWEEPS {
            for (point, ((_, desired, export_bytes), (document, export))) in
                pairs.iter().zip(&read).enumerate()
            {
                // Enough rounds for about a second per point and sweep, 3 at the least.
                let once = {
                    let start = Instant::now();
                    black_box(plan(document, export, options));
                    start.elapsed()
                };
                let seconds = if quick { 0.3 } else { 1.0 };
                let rounds = ((seconds / once.as_secs_f64().max(1e-6)) as usize).clamp(3, 201);
                let t = interleaved(
                    &mut [
                        &mut || {
                            black_box(plan(document, export, options));
                        },
                        &mut || {
                            black_box(pipeline(desired, export_bytes, options));
                        },
                    ],
                    rounds,
                    Duration::from_secs(3),
                );
                sweeps[point].push((t[0], t[1]));
            }
        }
        let t: Vec<Duration> = sweeps
            .into_iter()
            .flat_map(|mut medians| {
                medians.sort_by_key(|m| m.0);
                let plan = medians[SWEEPS / 2].0;
                medians.sort_by_key(|m| m.1);
                [plan, medians[SWEEPS / 2].1]
            })
            .collect();
        for (i, ((desired_n, _, _), (_, export))) in pairs.iter().zip(&read).enumerate() {
            println!(
                "{}",
                json!({ "section": "scaling", "curve": curve, "items": desired_n, "objects": export.objects.len(),
                        "planMs": ms(t[2 * i]), "pipelineMs": ms(t[2 * i + 1]) })
            );
        }
    }
}
