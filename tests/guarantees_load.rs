//! Load (docs/guarantees.md, "Under load"): `fleet.plan`, `fleet.export` and `fleet.status`
//! from concurrent clients on loopback against a server with a large fleet, bounded in count
//! and time. Every request is answered 200, the health check answers meanwhile, and the
//! server's resident memory stays bounded; the numbers are printed.
//!
//! `GUARANTEES_LOAD_ITEMS` (items per list, default 100: 700 objects) and
//! `GUARANTEES_LOAD_REQUESTS` (default 240) make it heavier (`scripts/guarantees --heavy`).

mod common;
mod guarantees_support;
mod server_support;

use guarantees_support::{LoggedServer, figure, grouped_document};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_export_and_status_under_load() {
    let items = env("GUARANTEES_LOAD_ITEMS", 100);
    let total = env("GUARANTEES_LOAD_REQUESTS", 240);
    let clients = 8;
    let server = Arc::new(LoggedServer::start(&[
        ("BETTER_COMPUTE_RATE_LIMIT", "off"),
        ("RUST_LOG", "warn"),
    ]));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let post = |method: &str, body: &Value| {
        http.post(server.url(&format!("/api/{method}")))
            .bearer_auth(&server.key)
            .json(body)
            .send()
    };
    assert!(
        post("tenant.create", &json!({ "id": "acme" }))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    let doc = grouped_document(1, items, 0);
    let applied: Value = post("fleet.apply", &json!({ "tenantId": "root", "config": doc }))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(applied["applied"], 7 * items, "{applied:.300}");
    // A document that changes every pool: the plans have work to do.
    let changed = grouped_document(1, items, 1);
    let bodies = Arc::new([
        (
            "fleet.plan",
            json!({ "tenantId": "root", "config": changed, "prune": true }),
        ),
        ("fleet.export", json!({ "tenantId": "root" })),
        ("fleet.status", json!({ "tenantId": "root" })),
    ]);

    // Warm up, then measure memory under load.
    for (method, body) in bodies.iter() {
        assert_eq!(post(method, body).await.unwrap().status(), 200);
    }
    let rss_start = server.rss_kib();
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(120);
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (http, server, bodies, next) =
            (http.clone(), server.clone(), bodies.clone(), next.clone());
        workers.spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total || Instant::now() > deadline {
                    break;
                }
                let (method, body) = &bodies[i % bodies.len()];
                let sent = Instant::now();
                let response = http
                    .post(server.url(&format!("/api/{method}")))
                    .bearer_auth(&server.key)
                    .json(body)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{method}: no answer: {e}"));
                let status = response.status().as_u16();
                let bytes = response.bytes().await.unwrap();
                assert_eq!(
                    status,
                    200,
                    "{method}: {:.300}",
                    String::from_utf8_lossy(&bytes)
                );
                latencies.push(sent.elapsed());
            }
            latencies
        });
    }
    // Meanwhile the server answers its health check, and its memory is sampled.
    let mut rss_peak = rss_start;
    let mut health_worst = Duration::ZERO;
    while !workers.is_empty() && next.load(Ordering::Relaxed) < total {
        let sent = Instant::now();
        let health = http.get(server.url("/api/health")).send().await.unwrap();
        assert_eq!(health.status(), 200);
        health_worst = health_worst.max(sent.elapsed());
        rss_peak = rss_peak.max(server.rss_kib());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut latencies = Vec::new();
    while let Some(done) = workers.join_next().await {
        latencies.extend(done.expect("a client failed"));
    }
    let elapsed = started.elapsed();
    let rss_end = server.rss_kib();
    rss_peak = rss_peak.max(rss_end);
    latencies.sort();
    let n = latencies.len();
    assert!(n > 0);
    let pct = |p: f64| latencies[((n as f64 * p) as usize).min(n - 1)];
    eprintln!(
        "load: {n} requests ({items} items per list) from {clients} clients in {elapsed:.1?}: \
         {:.1} req/s, p50 {:?}, p99 {:?}, max {:?}; health worst {health_worst:?}; \
         RSS {} MiB at start, {} MiB peak, {} MiB at end",
        n as f64 / elapsed.as_secs_f64(),
        pct(0.5),
        pct(0.99),
        latencies[n - 1],
        rss_start / 1024,
        rss_peak / 1024,
        rss_end / 1024,
    );
    assert_eq!(
        n, total,
        "every request was sent and answered before the deadline"
    );
    // Bounded: no growth with the number of requests (each plan body is hundreds of KiB).
    let bound = rss_start * 2 + 256 * 1024;
    assert!(
        rss_peak < bound,
        "RSS grew from {rss_start} KiB to {rss_peak} KiB (bound {bound} KiB)"
    );
    figure("load.requests", n);
    figure("load.items", items * 7);
    figure("load.clients", clients);
    figure(
        "load.rps",
        format!("{:.1}", n as f64 / elapsed.as_secs_f64()),
    );
    figure("load.p50_ms", pct(0.5).as_millis());
    figure("load.p99_ms", pct(0.99).as_millis());
    figure("load.rss_start_mib", rss_start / 1024);
    figure("load.rss_peak_mib", rss_peak / 1024);
}
