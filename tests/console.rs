//! The console in real headless Chromium, served by the real binary: the planner runs in the
//! page as WebAssembly and must compute exactly the planHash the native planner computes.

mod common;

use common::{Browser, Server};
use fantoccini::Locator;
use std::ffi::OsStr;
use std::time::{Duration, Instant};

#[tokio::test]
async fn the_console_computes_the_native_plan_hash_in_the_browser() {
    let dist = common::console_dist();
    let server = Server::start([OsStr::new("--console-dir"), dist.as_os_str()]);
    let browser = Browser::start().await;
    browser.goto(&server.url("/")).await.unwrap();

    // The example call list the page starts with, and the hash it shows for it.
    let shown = browser
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css("#plan-hash"))
        .await
        .expect("the console rendered no #plan-hash")
        .text()
        .await
        .unwrap();
    let calls = browser.find(Locator::Css("#calls")).await.unwrap();
    let text = calls
        .prop("value")
        .await
        .unwrap()
        .expect("#calls has a value");
    let example: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        example.as_array().is_some_and(|calls| !calls.is_empty()),
        "{text}"
    );
    assert_eq!(shown, planner::PlanHash::of(&example).to_string());

    // An edit is hashed again in the page; non-ASCII text and an exponent number exercise
    // the canonical form (RFC 8785 prints 1e21 as 1e+21).
    let edited = r#"[{"method":"site.create","input":{"tenantId":"acme","region":"zürich","kind":"dedicated","n":1e21}}]"#;
    calls.clear().await.unwrap();
    calls.send_keys(edited).await.unwrap();
    let expected = planner::PlanHash::of(&serde_json::from_str(edited).unwrap()).to_string();
    assert_ne!(expected, shown);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // Between keystrokes the text is not JSON and the page shows an error instead.
        let now = match browser.find(Locator::Css("#plan-hash")).await {
            Ok(hash) => hash.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if now == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the page shows {now}, the planner computes {expected}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    browser.close().await;
}
