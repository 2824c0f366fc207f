//! One stage of the native pipeline over a document pair on disk, for profilers:
//!
//! ```text
//! cargo run --release -p fleet-bench -- fixture /tmp/pair
//! cargo build --release -p planner --example stages
//! valgrind --tool=callgrind target/release/examples/stages pipeline /tmp/pair
//! target/release/examples/stages all /tmp/pair 50     # median wall time of every stage
//! ```
//!
//! Stages: `peer` (two typed parses into `String`s, the benchmarks' peer), `borrowing` (the
//! same two parses into the planner's types), `parse` (the peer's parse of the document), `validate`,
//! `export` (`Export::from_json`), `plan` (typed inputs, planHash included), `hash`,
//! `pipeline` (validate + read export + plan), `all`.

#[path = "../benches/common/peer.rs"]
mod peer;

use planner::{Document, Export, PlanOptions, plan, plan_hash, validate};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stage = args.first().map_or("all", String::as_str);
    let dir = std::path::PathBuf::from(args.get(1).map_or("/tmp/pair", String::as_str));
    let rounds: usize = args
        .get(2)
        .map_or(1, |s| s.parse().expect("a number of rounds"));
    let doc = std::fs::read(dir.join("document.json")).expect("reads document.json");
    let ex = std::fs::read(dir.join("export.json")).expect("reads export.json");
    let options = PlanOptions { prune: true };
    let typed_doc: Document = serde_json::from_slice(&doc).expect("the document parses");
    let typed_ex: Export = serde_json::from_slice(&ex).expect("the export parses");
    let calls = plan(&typed_doc, &typed_ex, options).calls;

    type Stage<'a> = (&'static str, Box<dyn Fn() + 'a>);
    let stages: Vec<Stage> = vec![
        (
            "peer",
            Box::new(|| {
                black_box(peer::two_parses(&doc, &ex));
            }),
        ),
        (
            "borrowing",
            Box::new(|| {
                black_box(peer::two_borrowing_parses(&doc, &ex));
            }),
        ),
        (
            "parse",
            Box::new(|| {
                black_box(serde_json::from_slice::<peer::Document>(&doc).expect("parses"));
            }),
        ),
        (
            "validate",
            Box::new(|| {
                black_box(validate(&doc).expect("valid"));
            }),
        ),
        (
            "export",
            Box::new(|| {
                black_box(Export::from_json(&ex).expect("parses"));
            }),
        ),
        (
            "plan",
            Box::new(|| {
                black_box(plan(&typed_doc, &typed_ex, options));
            }),
        ),
        (
            "hash",
            Box::new(|| {
                black_box(plan_hash(&calls));
            }),
        ),
        (
            "pipeline",
            Box::new(|| {
                let document = validate(&doc).expect("valid");
                let export = Export::from_json(&ex).expect("parses");
                black_box(plan(&document, &export, options));
            }),
        ),
    ];
    let mut times: Vec<(&str, Vec<Duration>)> = Vec::new();
    for _ in 0..rounds {
        for (name, run) in &stages {
            if stage != "all" && stage != *name {
                continue;
            }
            let start = Instant::now();
            run();
            let took = start.elapsed();
            match times.iter_mut().find(|(n, _)| n == name) {
                Some((_, list)) => list.push(took),
                None => times.push((name, vec![took])),
            }
        }
    }
    let median = |list: &mut Vec<Duration>| {
        list.sort();
        list[list.len() / 2].as_secs_f64() * 1e3
    };
    let mut medians: Vec<(&str, f64)> = times.iter_mut().map(|(n, l)| (*n, median(l))).collect();
    let peer = medians.iter().find(|(n, _)| *n == "peer").map(|m| m.1);
    for (name, ms) in &mut medians {
        match peer {
            Some(peer) => println!("{name:>9}: {ms:8.3} ms  {:5.2} x peer", *ms / peer),
            None => println!("{name:>9}: {ms:8.3} ms"),
        }
    }
}
