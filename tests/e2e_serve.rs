//! The real binary, started as a user would, answering real HTTP on a loopback port.

mod common;

use common::{Server, TempDir};
use std::ffi::OsStr;

#[tokio::test]
async fn serve_answers_health_and_serves_the_console() {
    let console = TempDir::new("console");
    let page = "<!DOCTYPE html><title>console</title><p>better-compute console</p>";
    std::fs::write(console.path().join("index.html"), page).unwrap();
    let server = Server::start([OsStr::new("--console-dir"), console.path().as_os_str()]);
    let http = reqwest::Client::new();

    let health = http.get(server.url("/api/health")).send().await.unwrap();
    assert_eq!(health.status(), reqwest::StatusCode::OK);
    let body: serde_json::Value = health.json().await.unwrap();
    assert_eq!(body, serde_json::json!({ "status": "ok" }));

    let index = http.get(server.url("/")).send().await.unwrap();
    assert_eq!(index.status(), reqwest::StatusCode::OK);
    let content_type = index.headers()[reqwest::header::CONTENT_TYPE]
        .to_str()
        .unwrap();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    // The console's strict policy also comes as a header, where frame-ancestors works.
    let policy = index.headers()[reqwest::header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    assert_eq!(index.headers()["x-content-type-options"], "nosniff");
    assert_eq!(index.text().await.unwrap(), page);
}
