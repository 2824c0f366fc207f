//! Benchmarks of the planner on a maximal document pair: 1000 items in every list, every pool
//! with 3 offers and 4 owner quota keys, against the export of a fleet that differs in about
//! one item in ten (changed fields, missing items, extra items to prune).
//!
//! `cargo bench -p planner --bench plan` runs criterion on validate, plan and hash and on the
//! peer, two typed `serde_json` parses of the same bytes (the document and the export), then
//! prints each pipeline next to its peer as a ratio measured in the same run.
//!
//! `PLANNER_BENCH_FIXTURE=<dir> cargo bench -p planner --bench plan` only writes the pair
//! (`document.json`, `export.json`) for the Node benchmark (`planner/js/bench.mjs`).

#[cfg(not(target_arch = "wasm32"))]
#[path = "common/fixture.rs"]
mod fixture;
#[cfg(not(target_arch = "wasm32"))]
#[path = "common/peer.rs"]
mod peer;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use super::fixture::{N, pair};
    use criterion::Criterion;
    use planner::{Export, PlanOptions, plan, plan_hash, validate};
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    /// The maximal pair.
    fn fixture() -> (Vec<u8>, Vec<u8>) {
        pair(N, N)
    }

    /// The whole native pipeline from bytes: validate the document, read the export, plan,
    /// hash. Answers the number of calls.
    fn pipeline(desired: &[u8], export: &[u8]) -> usize {
        let document = validate(desired).expect("the desired document is valid");
        let export = Export::from_json(export).expect("the export parses");
        let planned = plan(&document, &export, PlanOptions { prune: true });
        black_box(plan_hash(&planned.calls));
        planned.calls.len()
    }

    /// Medians over `rounds` rounds in which every candidate runs once, in turn, so that a
    /// busy machine slows all of them alike and their ratios stay meaningful.
    fn interleaved<const N: usize>(
        rounds: usize,
        mut candidates: [&mut dyn FnMut(); N],
    ) -> [Duration; N] {
        let mut times = vec![Vec::with_capacity(rounds); N];
        for round in 0..rounds + 2 {
            for (i, f) in candidates.iter_mut().enumerate() {
                let start = Instant::now();
                f();
                if round >= 2 {
                    times[i].push(start.elapsed());
                }
            }
        }
        std::array::from_fn(|i| {
            times[i].sort();
            times[i][rounds / 2]
        })
    }

    pub fn run() {
        if let Some(dir) = std::env::var_os("PLANNER_BENCH_FIXTURE") {
            let dir = std::path::PathBuf::from(dir);
            let (desired, export) = fixture();
            std::fs::create_dir_all(&dir).expect("creates the fixture folder");
            std::fs::write(dir.join("document.json"), desired).expect("writes document.json");
            std::fs::write(dir.join("export.json"), export).expect("writes export.json");
            println!("wrote {}", dir.display());
            return;
        }

        let (desired, export_bytes) = fixture();
        let document = validate(&desired).expect("valid");
        let export: Export = serde_json::from_slice(&export_bytes).expect("parses");
        let options = PlanOptions { prune: true };
        let planned = plan(&document, &export, options);
        assert!(!planned.is_blocked(), "the benchmark plan is not blocked");
        println!(
            "maximal pair: document {} KiB, export {} KiB; plan: {:?}, {} calls",
            desired.len() / 1024,
            export_bytes.len() / 1024,
            planned.summary,
            planned.calls.len()
        );

        let mut c = Criterion::default()
            .configure_from_args()
            .sample_size(20)
            .measurement_time(Duration::from_secs(4));
        c.bench_function("validate (document bytes)", |b| {
            b.iter(|| validate(black_box(&desired)))
        });
        c.bench_function("plan (typed inputs)", |b| {
            b.iter(|| plan(black_box(&document), black_box(&export), options))
        });
        c.bench_function("hash (call list)", |b| {
            b.iter(|| plan_hash(black_box(&planned.calls)))
        });
        c.bench_function("pipeline: validate + read export + plan + hash", |b| {
            b.iter(|| pipeline(black_box(&desired), black_box(&export_bytes)))
        });
        c.bench_function("peer: two typed serde_json parses", |b| {
            b.iter(|| super::peer::two_parses(black_box(&desired), black_box(&export_bytes)))
        });

        // The ratios, from medians of interleaved rounds in this run.
        let runs = 31;
        let [
            parse_doc,
            parse_both,
            borrowed,
            validate_t,
            plan_t,
            hash_t,
            whole,
        ] = interleaved(
            runs,
            [
                &mut || {
                    black_box(serde_json::from_slice::<super::peer::Document>(&desired).unwrap());
                },
                &mut || {
                    black_box(super::peer::two_parses(&desired, &export_bytes));
                },
                &mut || {
                    black_box(super::peer::two_borrowing_parses(&desired, &export_bytes));
                },
                &mut || {
                    black_box(validate(&desired).unwrap());
                },
                &mut || {
                    black_box(plan(&document, &export, options));
                },
                &mut || {
                    black_box(plan_hash(&planned.calls));
                },
                &mut || {
                    black_box(pipeline(&desired, &export_bytes));
                },
            ],
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!("\nmedians of {runs} interleaved rounds:");
        println!(
            "  {:<52}{:>9.2} ms",
            "peer: typed parse of the document",
            ms(parse_doc)
        );
        println!(
            "  {:<52}{:>9.2} ms",
            "peer: two typed parses (document + export)",
            ms(parse_both)
        );
        println!(
            "  {:<52}{:>9.2} ms",
            "two parses into the planner's borrowing types",
            ms(borrowed)
        );
        println!(
            "  {:<52}{:>9.2} ms  {:>5.2} x the document's parse",
            "validate",
            ms(validate_t),
            ratio(validate_t, parse_doc)
        );
        println!("  {:<52}{:>9.2} ms", "plan", ms(plan_t));
        println!("  {:<52}{:>9.2} ms", "hash", ms(hash_t));
        println!(
            "  {:<52}{:>9.2} ms  {:>5.2} x the two parses (target <= 1.3)",
            "validate + read export + plan + hash",
            ms(whole),
            ratio(whole, parse_both)
        );
        println!(
            "  {:<52}{:>9.2} ms  {:>5.2} x the borrowing parses",
            "validate + read export + plan + hash",
            ms(whole),
            ratio(whole, borrowed)
        );
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    native::run();
}

#[cfg(target_arch = "wasm32")]
fn main() {}
