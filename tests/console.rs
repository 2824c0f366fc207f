//! The console in real headless Chromium, served by the real binary (`--demo`, a fresh SQLite
//! file): sign in, see drift after a hand edit, validate and plan a document in the page (its
//! planHash equals the server's `fleet.plan`), get CONFIG_DRIFT explained for a stale plan,
//! apply, and see the drift cleared. Screenshots of every view, at a laptop's width (1366), a
//! tablet's (768) and a phone's (390), land in `target/console-screenshots/`.

mod common;

use common::{Browser, Server, TempDir};
use fantoccini::Locator;
use fantoccini::key::Key;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

/// `POST /api/<method>` as `key`: the status and the JSON answer.
async fn call(server: &Server, key: &str, method: &str, input: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(server.url(&format!("/api/{method}")))
        .bearer_auth(key)
        .json(&input)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method}: {e}"));
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Like [`call`], and the call must succeed.
async fn ok(server: &Server, key: &str, method: &str, input: Value) -> Value {
    let (status, body) = call(server, key, method, input).await;
    assert_eq!(status, 200, "{method} answered {status}: {body}");
    body
}

/// The text of the element `css`, once `accept` holds for it.
/// The key of a new service account `name` in acme: no platform administrator.
async fn outsider_key(server: &Server, admin: &str, name: &str) -> String {
    let sa = ok(
        server,
        admin,
        "serviceAccount.create",
        json!({ "tenantId": "acme", "name": name }),
    )
    .await;
    let key = ok(
        server,
        admin,
        "apiKey.create",
        json!({ "tenantId": "acme", "principalId": sa["id"] }),
    )
    .await;
    key["key"].as_str().unwrap().to_owned()
}

async fn wait_text(browser: &Browser, css: &str, accept: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + WAIT;
    let mut last = String::new();
    loop {
        if let Ok(element) = browser.find(Locator::Css(css)).await {
            // Hidden elements have no rendered text; read textContent instead.
            if let Ok(Some(text)) = element.prop("textContent").await {
                if accept(&text) {
                    return text;
                }
                last = text;
            }
        }
        if Instant::now() >= deadline {
            let errors = console_errors(browser).await;
            panic!("{css} never matched; last text: {last:?}; the page's errors: {errors:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `css` exists, and returns it.
async fn wait_for(browser: &Browser, css: &str) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} never appeared: {e}"))
}

async fn click(browser: &Browser, css: &str) {
    wait_for(browser, css).await.click().await.unwrap();
}

/// Replaces the editor's text as a paste does (one input event).
async fn paste(browser: &Browser, text: &str) {
    wait_for(browser, "#document").await;
    browser
        .execute(
            "const t = document.querySelector('#document'); t.value = arguments[0]; \
             t.dispatchEvent(new Event('input', { bubbles: true }));",
            vec![json!(text)],
        )
        .await
        .unwrap();
}

/// Where the screenshots go (printed, so a person can look). Emptied once per run, by the
/// first test to ask, so that only this run's are there: the tests run in parallel, and one
/// that emptied it when it started wiped what the others had saved.
fn screenshot_dir() -> PathBuf {
    static EMPTIED: std::sync::Once = std::sync::Once::new();
    let dir = common::workspace_root().join("target/console-screenshots");
    EMPTIED.call_once(|| {
        let _ = std::fs::remove_dir_all(&dir);
    });
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The planHash the page shows, once it shows one: the server's `fleet.plan` of `document`
/// (root, without prune) must have the same.
async fn page_hash_is_the_servers(
    browser: &Browser,
    server: &Server,
    admin: &str,
    document: &Value,
) -> String {
    let page_hash = wait_text(browser, "#plan-hash", |t| t.len() == 64).await;
    let server_plan = ok(
        server,
        admin,
        "fleet.plan",
        json!({ "tenantId": "root", "config": document, "prune": false }),
    )
    .await;
    assert_eq!(page_hash, server_plan["planHash"].as_str().unwrap());
    page_hash
}

/// Screenshots of the whole page at a laptop's width, a tablet's and a phone's
/// (`NAME-laptop.png`, `NAME-tablet.png`, `NAME-phone.png`); at each, nothing may be wider
/// than the window.
async fn screenshots(browser: &Browser, name: &str) {
    for (suffix, width) in [("laptop", 1366), ("tablet", 768), ("phone", 390)] {
        screenshot(browser, &format!("{name}-{suffix}"), width).await;
    }
}

/// A screenshot of the whole page at `width` (the window grows to the page's height). The page
/// must fit the width: no sideways scrolling, and no fact of the drift view running into the
/// next (a long principal id did).
async fn screenshot(browser: &Browser, name: &str, width: u32) {
    browser.set_window_size(width, 900).await.unwrap();
    let height = browser
        .execute("return document.documentElement.scrollHeight;", vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap_or(900)
        .clamp(600, 4000) as u32;
    // The window's frame takes some of its height; add a margin so nothing is cut.
    browser.set_window_size(width, height + 140).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let overflow = browser
        .execute(
            "const page = document.documentElement; const out = []; \
             if (page.scrollWidth > page.clientWidth) { out.push('the page: ' + page.scrollWidth); \
               for (const e of document.querySelectorAll('body *')) \
                 if (e.getBoundingClientRect().right > page.clientWidth + 0.5 && out.length < 6) \
                   out.push(e.tagName + '#' + e.id + '.' + e.className + ': ' + e.getBoundingClientRect().right); } \
             for (const dd of document.querySelectorAll('#applied dd')) \
               if (dd.scrollWidth > dd.clientWidth) out.push(dd.id + ': ' + dd.scrollWidth + ' > ' + dd.clientWidth); \
             return out;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(overflow, json!([]), "{name}: wider than its box at {width}");
    let png = browser.screenshot().await.unwrap();
    let path = screenshot_dir().join(format!("{name}.png"));
    std::fs::write(&path, png).unwrap();
    browser.set_window_size(1280, 900).await.unwrap();
}

/// The errors the page logged since [`watch_console`] (panics go to console.error), and the
/// errors and warnings in Chromium's own log since the session started: what its developer
/// console shows, such as "Failed to load resource: the server responded with a status of
/// 401", which no script of the page sees.
async fn console_errors(browser: &Browser) -> Vec<String> {
    let errors = browser
        .execute("return window.__consoleErrors || [];", vec![])
        .await
        .unwrap();
    let mut errors: Vec<String> = serde_json::from_value(errors).unwrap_or_default();
    errors.extend(
        browser
            .log()
            .await
            .into_iter()
            .filter(|entry| entry.level == "SEVERE" || entry.level == "WARNING")
            .map(|entry| format!("{}: {}", entry.level, entry.message)),
    );
    errors
}

/// The editor's selection: its start and end (UTF-16 units) and the text selected.
async fn selection(browser: &Browser) -> Value {
    browser
        .execute(
            "const t = document.querySelector('#document'); \
             return { start: t.selectionStart, end: t.selectionEnd, \
               text: t.value.slice(t.selectionStart, t.selectionEnd) };",
            vec![],
        )
        .await
        .unwrap()
}

/// The id of the focused element (`BODY` when nothing has the focus).
async fn focused(browser: &Browser) -> String {
    browser
        .execute(
            "const e = document.activeElement; return e ? (e.id || e.tagName) : 'BODY';",
            vec![],
        )
        .await
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits (a few seconds at most) until the element `id` has the focus: the page moves the
/// focus after it renders what it moves it to, a frame or a task later.
async fn expect_focus(browser: &Browser, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = focused(browser).await;
        if now == id {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the focus is on {now}, not on #{id}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn watch_console(browser: &Browser) {
    browser
        .execute(
            "window.__consoleErrors = []; const error = console.error; \
             console.error = (...args) => { window.__consoleErrors.push(args.join(' ')); error(...args); }; \
             window.addEventListener('error', (e) => window.__consoleErrors.push(String(e.message))); \
             document.addEventListener('securitypolicyviolation', \
               (e) => window.__consoleErrors.push('CSP: ' + e.violatedDirective + ' ' + e.blockedURI));",
            vec![],
        )
        .await
        .unwrap();
}

/// Records every position the events card takes while it is shown (`window.__timelineTops`,
/// one entry per change), frame by frame.
async fn watch_timeline(browser: &Browser) {
    browser
        .execute(
            "window.__timelineTops = []; \
             const sample = () => { \
               const card = document.querySelector('section[aria-labelledby=\"timeline-title\"]'); \
               if (card && card.offsetParent !== null) { \
                 const top = Math.round(card.getBoundingClientRect().top + window.scrollY); \
                 const tops = window.__timelineTops; \
                 if (tops[tops.length - 1] !== top) tops.push(top); \
               } \
               requestAnimationFrame(sample); \
             }; \
             sample();",
            vec![],
        )
        .await
        .unwrap();
}

/// Records every box (left, top, width, height, in page pixels) the tenant picker takes while
/// it is shown (`window.__tenantBoxes`, one entry per change), frame by frame.
async fn watch_tenant_box(browser: &Browser) {
    browser
        .execute(
            "window.__tenantBoxes = []; \
             const sample = () => { \
               const select = document.querySelector('#tenant'); \
               if (select && select.offsetParent !== null) { \
                 const r = select.getBoundingClientRect(); \
                 const box = [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height] \
                   .map(Math.round).join(' '); \
                 const boxes = window.__tenantBoxes; \
                 if (boxes[boxes.length - 1] !== box) boxes.push(box); \
               } \
               requestAnimationFrame(sample); \
             }; \
             sample();",
            vec![],
        )
        .await
        .unwrap();
}

/// The tenant picker's `aria-busy` and its options' texts, disabled ones marked `(disabled)`.
async fn tenant_picker(browser: &Browser) -> Value {
    browser
        .execute(
            "const s = document.querySelector('#tenant'); \
             return { busy: s.getAttribute('aria-busy'), \
               options: [...s.options].map((o) => o.text + (o.disabled ? ' (disabled)' : '')) };",
            vec![],
        )
        .await
        .unwrap()
}

fn pool_ref<'a>(export: &'a Value, name: &str) -> &'a Value {
    export["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "pool" && o["name"] == name)
        .unwrap_or_else(|| panic!("no pool {name} in {export}"))
}

/// A hand edit through the API, as an operator makes one outside FleetConfig: `vps-fra`'s
/// disruption budget set to `budget`, at the pool's current revision.
async fn hand_edit_policy(server: &Server, admin: &str, budget: f64) {
    let now = ok(server, admin, "fleet.export", json!({ "tenantId": "root" })).await;
    let pool = pool_ref(&now, "vps-fra");
    ok(
        server,
        admin,
        "pool.update",
        json!({ "tenantId": "root", "id": pool["id"], "ifRevision": pool["revision"],
                "policy": { "disruptionBudget": budget } }),
    )
    .await;
}

/// Root's `fleet.status`, as the server answers it.
async fn root_status(server: &Server, admin: &str) -> Value {
    ok(server, admin, "fleet.status", json!({ "tenantId": "root" })).await
}

/// Applies root's export as is (the demo's fleet becomes the applied document) and returns
/// the applied config.
async fn apply_export_as_is(server: &Server, admin: &str) -> Value {
    let export = ok(server, admin, "fleet.export", json!({ "tenantId": "root" })).await;
    let baseline = export["config"].clone();
    ok(
        server,
        admin,
        "fleet.apply",
        json!({ "tenantId": "root", "config": baseline, "prune": false }),
    )
    .await;
    baseline
}

/// Presses "Download fleet.json": the file's JSON (its name checked).
async fn download_fleet_json(browser: &Browser) -> Value {
    browser
        .execute(
            "window.__download = {}; const create = URL.createObjectURL; \
             URL.createObjectURL = (blob) => { window.__download.blob = blob; return create(blob); }; \
             HTMLAnchorElement.prototype.click = function () { window.__download.name = this.download; };",
            vec![],
        )
        .await
        .unwrap();
    click(browser, "#download-export").await;
    let downloaded = browser
        .execute_async(
            "const done = arguments[arguments.length - 1]; const d = window.__download; \
             d.blob.text().then((text) => done({ name: d.name, text }));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(downloaded["name"], "fleet.json");
    serde_json::from_str(downloaded["text"].as_str().unwrap()).unwrap()
}

/// A browser on the console's page (its console log watched), not signed in.
async fn open_console(server: &Server) -> Browser {
    let browser = Browser::start().await;
    browser.goto(&server.url("/")).await.unwrap();
    watch_console(&browser).await;
    browser
}

/// A browser on the console, signed in with `key` through the page's own form (its console
/// log watched).
async fn signed_in(server: &Server, key: &str) -> Browser {
    let browser = open_console(server).await;
    wait_for(&browser, "#api-key")
        .await
        .send_keys(key)
        .await
        .unwrap();
    click(&browser, "#sign-in").await;
    browser
}

/// A `--demo` server with the console, and its admin key (the folder holding the key file
/// lives as long as the returned guard).
fn demo_server(name: &str) -> (Server, String, TempDir) {
    let dist = common::console_dist();
    let keys = TempDir::new(name);
    let key_file = keys.path().join("admin.key");
    let server = Server::start([
        OsStr::new("--demo"),
        OsStr::new("--console-dir"),
        dist.as_os_str(),
        OsStr::new("--admin-key-file"),
        key_file.as_os_str(),
    ]);
    let admin = std::fs::read_to_string(&key_file)
        .unwrap()
        .trim()
        .to_owned();
    (server, admin, keys)
}

#[tokio::test]
async fn the_console_shows_drift_plans_in_the_browser_and_applies() {
    let (server, admin, keys) = demo_server("console-key");

    // The baseline: the export applied as is; then a hand edit of a pool's policy.
    let baseline = apply_export_as_is(&server, &admin).await;
    hand_edit_policy(&server, &admin, 0.35).await;
    let (status, _) = call(
        &server,
        &admin,
        "fleet.check",
        json!({ "tenantId": "root" }),
    )
    .await;
    let has_check = status == 200;

    // A key of a service account in acme, which is no platform administrator.
    let outsider = outsider_key(&server, &admin, "ci").await;

    // The page forbids inline scripts, and has none: a strict CSP holds.
    let index = reqwest::get(server.url("/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(index.contains("Content-Security-Policy"), "{index}");
    assert!(!index.contains("<script type=\"module\">"), "{index}");
    assert!(!index.contains("unsafe-inline"), "{index}");
    // No integrity on the .wasm's fetch preload: browsers ignore it there and warn in the
    // console on every load.
    let preload = index
        .split('<')
        .find(|tag| tag.contains("as=\"fetch\""))
        .unwrap_or_else(|| panic!("no fetch preload in {index}"));
    assert!(!preload.contains("integrity"), "{preload}");

    let browser = Browser::start().await;
    browser.goto(&server.url("/")).await.unwrap();
    wait_for(&browser, "#api-key").await;
    watch_console(&browser).await;
    assert_eq!(
        browser.title().await.unwrap(),
        "Fleet drift · better-compute"
    );
    screenshots(&browser, "01-sign-in").await;

    // Refusals say why, and the key never lands in the URL.
    for (key, expected) in [
        ("bc_not_a_real_key", "does not accept this API key"),
        (outsider.as_str(), "not a platform administrator"),
    ] {
        let input = wait_for(&browser, "#api-key").await;
        input.clear().await.unwrap();
        input.send_keys(key).await.unwrap();
        click(&browser, "#sign-in").await;
        wait_text(&browser, "#signin-error", |t| t.contains(expected)).await;
        assert!(!browser.current_url().await.unwrap().as_str().contains(key));
        // The key takes the focus back (the button had it, disabled while checking), marked
        // invalid and described by the refusal.
        expect_focus(&browser, "api-key").await;
        let input = wait_for(&browser, "#api-key").await;
        assert_eq!(
            input.attr("aria-invalid").await.unwrap().as_deref(),
            Some("true")
        );
        assert_eq!(
            input.attr("aria-describedby").await.unwrap().as_deref(),
            Some("signin-error")
        );
    }
    screenshots(&browser, "02-refused").await;

    // The administrator sees the hand edit as drift.
    let input = wait_for(&browser, "#api-key").await;
    input.clear().await.unwrap();
    input.send_keys(&admin).await.unwrap();
    watch_timeline(&browser).await;
    watch_tenant_box(&browser).await;
    // Until tenant.list answers, the picker says it is loading.
    assert_eq!(
        tenant_picker(&browser).await,
        json!({ "busy": "true", "options": ["root", "Loading tenants… (disabled)"] })
    );
    click(&browser, "#sign-in").await;
    wait_for(&browser, "#applied-plan-hash").await;
    // The events card shows once, where it stays: nothing loading above it pushes it down.
    wait_for(&browser, "#timeline, #no-events").await;
    let tops = browser
        .execute("return window.__timelineTops;", vec![])
        .await
        .unwrap();
    assert_eq!(
        tops.as_array().map(Vec::len),
        Some(1),
        "the events card moved while the view loaded (its tops, in page pixels): {tops}"
    );
    assert!(
        !browser
            .current_url()
            .await
            .unwrap()
            .as_str()
            .contains(&admin)
    );
    if !has_check {
        // An older server without fleet.check: the drift shows after the scheduled check.
        eprintln!("fleet.check is not served; skipping the drift assertions");
    } else {
        let changes = wait_text(&browser, "#drift-changes", |t| t.contains("~ pool vps-fra")).await;
        assert!(changes.contains("policy"), "{changes}");
        // Which side of the arrow is which: a drift is the plan back to the document.
        let legend = wait_text(&browser, "#drift-legend", |_| true).await;
        assert!(legend.contains("live value → the document's"), "{legend}");
        let applied_at = wait_text(&browser, "#applied-at", |t| t.ends_with("UTC")).await;
        assert!(applied_at.starts_with("20"), "{applied_at}");
        let status = root_status(&server, &admin).await;
        let shown = wait_text(&browser, "#applied-plan-hash", |t| !t.is_empty()).await;
        assert_eq!(shown, status["applied"]["planHash"].as_str().unwrap());
        // The drift shows before -> after when the server sends them, else the fields.
        let fields = browser
            .find_all(Locator::Css("#drift-changes .fields"))
            .await
            .unwrap();
        if !fields.is_empty() {
            let text = fields[0].text().await.unwrap();
            assert!(text.contains("0.35"), "{text}");
        }
    }
    // The tenants by name and id.
    let options = wait_text(&browser, "#tenant", |t| t.contains("(globex)")).await;
    assert!(
        options.contains("Root (root)") && options.contains("Globex (globex)"),
        "{options}"
    );
    let picker = tenant_picker(&browser).await;
    assert_eq!(picker["busy"], "false", "{picker}");
    assert!(
        !picker.to_string().contains("Loading"),
        "the loading option is gone: {picker}"
    );
    // The picker kept its box when the list arrived: the header did not move.
    let boxes = browser
        .execute("return window.__tenantBoxes;", vec![])
        .await
        .unwrap();
    assert_eq!(
        boxes.as_array().map(Vec::len),
        Some(1),
        "the tenant picker moved or resized when the tenants arrived (left top width height): \
         {boxes}"
    );
    screenshots(&browser, "03-drift").await;

    // The plan view: a document with a mistake shows its path; fixed, it plans in the page.
    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    // Refreshing the export keeps the focus on its button while it fetches and after.
    click(&browser, "#refresh-export").await;
    wait_text(&browser, "#refresh-export", |t| {
        t.starts_with("Refresh export")
    })
    .await;
    wait_for(&browser, "#export-info").await;
    expect_focus(&browser, "refresh-export").await;

    let file = download_fleet_json(&browser).await;
    let current = ok(
        &server,
        &admin,
        "fleet.export",
        json!({ "tenantId": "root" }),
    )
    .await;
    assert_eq!(file, current["config"]);
    let mut wrong = baseline.clone();
    let index = wrong["pools"]
        .as_array()
        .unwrap()
        .iter()
        .position(|p| p["name"] == "vps-fra")
        .unwrap();
    wrong["pools"][index]["policy"] = json!({ "disruptionBudget": 1.5 });
    // Characters of two bytes and of four (two UTF-16 units) before the mistake: the editor's
    // selection counts UTF-16 units, the planner bytes.
    wrong["sites"][0]["region"] = json!("Zürich 🏔");
    // Uploaded through the file picker (WebDriver types the file's path into the input).
    let upload = keys.path().join("fleet-with-a-mistake.json");
    std::fs::write(&upload, serde_json::to_string_pretty(&wrong).unwrap()).unwrap();
    wait_for(&browser, "#document-file")
        .await
        .send_keys(upload.to_str().unwrap())
        .await
        .unwrap();
    wait_text(&browser, "label[for=document]", |t| {
        t.contains("fleet-with-a-mistake.json")
    })
    .await;
    let problems = wait_text(&browser, "#problems", |t| t.contains("problem")).await;
    let path = format!("pools[{index}].policy.disruptionBudget");
    assert!(problems.contains(&path), "{problems}");
    // The path is a button that selects the value (`1.5`) in the editor and focuses it.
    let uploaded = std::fs::read_to_string(&upload).unwrap();
    let key = "\"disruptionBudget\": ";
    let value_at = uploaded.find(&format!("{key}1.5")).unwrap() + key.len();
    let start = uploaded[..value_at].encode_utf16().count();
    assert!(
        start < value_at,
        "the region's characters count less in UTF-16"
    );
    click(
        &browser,
        &format!("#problems li button.path[aria-label='Show {path} in the document']"),
    )
    .await;
    expect_focus(&browser, "document").await;
    assert_eq!(
        selection(&browser).await,
        json!({ "start": start, "end": start + 3, "text": "1.5" })
    );
    assert!(browser.find(Locator::Css("#plan-hash")).await.is_err());
    assert!(
        !wait_for(&browser, "#apply")
            .await
            .is_enabled()
            .await
            .unwrap()
    );
    screenshots(&browser, "04-plan-invalid").await;

    // Fixed (the baseline again): one update, the pool's policy back to the document's.
    let document = serde_json::to_string_pretty(&baseline).unwrap();
    paste(&browser, &document).await;
    wait_for(&browser, "#valid").await;
    let summary = wait_text(&browser, "#plan-summary", |t| t.contains("to create")).await;
    assert!(summary.contains("1 to update"), "{summary}");
    let lines = wait_text(&browser, "#plan-changes", |_| true).await;
    assert!(lines.contains("~ pool vps-fra (policy)"), "{lines}");
    let page_hash = wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    let server_plan = ok(
        &server,
        &admin,
        "fleet.plan",
        json!({ "tenantId": "root", "config": baseline, "prune": false }),
    )
    .await;
    assert_eq!(page_hash, server_plan["planHash"].as_str().unwrap());
    // The calls are written when their list is opened.
    click(&browser, "#plan-view details.calls summary").await;
    let calls = wait_text(&browser, "#plan-calls", |t| t.contains("pool.update")).await;
    let calls: Value = serde_json::from_str(&calls).unwrap();
    assert_eq!(calls, server_plan["calls"]);
    screenshots(&browser, "05-plan").await;

    // The fleet moves after the export: the reviewed plan is stale, and the page says so.
    hand_edit_policy(&server, &admin, 0.5).await;
    // The confirmation takes the focus and keeps it (Tab and Shift+Tab go round its two
    // buttons); Escape cancels it and gives the focus back to Apply.
    click(&browser, "#apply").await;
    wait_for(&browser, "#confirm").await;
    expect_focus(&browser, "confirm-apply").await;
    let press = async |keys: String| {
        browser
            .active_element()
            .await
            .unwrap()
            .send_keys(&keys)
            .await
            .unwrap();
    };
    let shift_tab = format!("{}{}", Key::Shift, Key::Tab);
    for (keys, to) in [
        (Key::Tab.to_string(), "cancel-apply"),
        (Key::Tab.to_string(), "confirm-apply"),
        (shift_tab.clone(), "cancel-apply"),
        (shift_tab, "confirm-apply"),
    ] {
        press(keys).await;
        expect_focus(&browser, to).await;
    }
    press(Key::Escape.to_string()).await;
    let deadline = Instant::now() + WAIT;
    while browser.find(Locator::Css("#confirm")).await.is_ok() {
        assert!(Instant::now() < deadline, "Escape did not cancel");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    expect_focus(&browser, "apply").await;
    click(&browser, "#apply").await;
    let confirm = wait_text(&browser, "#confirm-summary", |_| true).await;
    assert_eq!(confirm, summary.trim());
    screenshots(&browser, "06-confirm").await;
    click(&browser, "#confirm-apply").await;
    let explained = wait_text(&browser, "#config-drift", |_| true).await;
    assert!(
        explained.contains("The fleet moved since the export"),
        "{explained}"
    );
    assert!(explained.contains("CONFIG_DRIFT"), "{explained}");
    // The keyboard lands on what to do next, not on the page's top.
    expect_focus(&browser, "refresh-replan").await;
    screenshots(&browser, "07-config-drift").await;

    // Refresh and re-plan: the page's new planHash is the server's again; apply it.
    click(&browser, "#refresh-replan").await;
    let fresh = ok(
        &server,
        &admin,
        "fleet.plan",
        json!({ "tenantId": "root", "config": baseline, "prune": false }),
    )
    .await;
    let fresh_hash = fresh["planHash"].as_str().unwrap();
    assert_ne!(fresh_hash, page_hash);
    wait_text(&browser, "#plan-hash", |t| t == fresh_hash).await;
    assert!(browser.find(Locator::Css("#config-drift")).await.is_err());
    // The explanation and its button are gone: Apply, the next step, has the focus.
    expect_focus(&browser, "apply").await;
    click(&browser, "#apply").await;
    click(&browser, "#confirm-apply").await;
    let result = wait_text(&browser, "#apply-result", |_| true).await;
    assert!(result.contains("1 call ran"), "{result}");
    assert!(result.contains(fresh_hash), "{result}");
    expect_focus(&browser, "show-drift").await;
    screenshots(&browser, "08-applied").await;

    // The drift view shows the new baseline, and no drift; its tab has the focus (the pressed
    // button went away with the plan view).
    click(&browser, "#show-drift").await;
    expect_focus(&browser, "tab-drift").await;
    assert_eq!(
        tab_state(&browser).await,
        json!({ "focused": "tab-drift", "selected": ["tab-drift"], "tabbable": ["tab-drift"],
                "shown": ["tab-drift"] })
    );
    wait_text(&browser, "#applied-plan-hash", |t| t == fresh_hash).await;
    if has_check {
        click(&browser, "#check-now").await;
        wait_for(&browser, "#in-sync").await;
        // The button keeps the focus through its check (a keyboard user can press it again).
        expect_focus(&browser, "check-now").await;
        assert!(browser.find(Locator::Css("#drift-changes")).await.is_err());
        let status = root_status(&server, &admin).await;
        assert!(status.get("drift").is_none(), "{status}");
        // The timeline (when the server keeps events) has the drift that was seen.
        // (The timeline is hidden, not absent, on a server without events.)
        let timeline = browser.find(Locator::Css("#refresh-events")).await;
        if let Ok(refresh) = timeline
            && refresh.is_displayed().await.unwrap_or(false)
        {
            click(&browser, "#refresh-events").await;
            wait_text(&browser, "#timeline", |t| t.contains("fleet.drifted")).await;
            expect_focus(&browser, "refresh-events").await;
        }
    }
    screenshots(&browser, "09-drift-cleared").await;
    if has_check {
        // A check made elsewhere (the reconciler, the CLI, the API) after a hand edit: Refresh
        // shows its drift, not only its events.
        hand_edit_policy(&server, &admin, 0.7).await;
        ok(
            &server,
            &admin,
            "fleet.check",
            json!({ "tenantId": "root" }),
        )
        .await;
        assert!(browser.find(Locator::Css("#drift-changes")).await.is_err());
        click(&browser, "#refresh-events").await;
        let drift = wait_text(&browser, "#drift-changes", |t| t.contains("vps-fra")).await;
        assert!(drift.contains("policy"), "{drift}");
        expect_focus(&browser, "refresh-events").await;
    }

    // Another tenant that never applied says so.
    choose_tenant(&browser, "globex").await;
    wait_text(&browser, "#never-applied", |t| t.contains("globex")).await;
    // Nothing to check against: no Check now.
    assert!(
        !wait_for(&browser, "#check-now")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    screenshots(&browser, "10-never-applied").await;

    // Planning the maximal document (1000 items per list) in the page: the time the page
    // reports is printed, not asserted (a debug build of the console is many times slower).
    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    // Root's "Applied" is not globex's.
    assert!(browser.find(Locator::Css("#apply-result")).await.is_err());
    paste(&browser, &maximal_document().to_string()).await;
    let time = wait_text(&browser, "#plan-time", |t| t.contains("ms")).await;
    let summary = wait_text(&browser, "#plan-summary", |t| t.contains("to create")).await;
    println!("maximal document: {summary} {time}");
    // A long list shows its first 100 items of a kind, and all of them on request.
    let sites = "#plan-changes section[data-kind=site] li";
    let count = |css: &'static str| {
        let browser = &browser;
        async move {
            browser
                .execute(
                    "return document.querySelectorAll(arguments[0]).length;",
                    vec![json!(css)],
                )
                .await
                .unwrap()
                .as_u64()
                .unwrap()
        }
    };
    assert_eq!(count(sites).await, 100);
    let more = wait_text(
        &browser,
        "#plan-changes section[data-kind=site] .more",
        |_| true,
    )
    .await;
    assert!(
        more.contains("900 more") && more.contains("Show all 1000"),
        "{more}"
    );
    click(
        &browser,
        "#plan-changes section[data-kind=site] [data-show-all]",
    )
    .await;
    let deadline = Instant::now() + WAIT;
    while count(sites).await != 1000 {
        assert!(
            Instant::now() < deadline,
            "Show all never showed the 1000 sites"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count("#plan-changes [data-show-all]").await, 0);
    // The pressed button is gone: the first item it showed has the focus, so the keyboard
    // goes on from there.
    expect_focus(&browser, "LI").await;
    let first_new = browser
        .execute(
            "return document.activeElement === \
               document.querySelector('#plan-changes section[data-kind=site] li:nth-child(101)');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(first_new, json!(true));

    // The page records its times as performance measures (scripts/bench reads them too).
    let measures = browser
        .execute(
            "return ['validate', 'plan', 'plan-view'].map((name) => { \
               const all = performance.getEntriesByName(name, 'measure'); \
               return all.length ? all[all.length - 1].duration : null; });",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        measures
            .as_array()
            .is_some_and(|m| m.len() == 3 && m.iter().all(Value::is_number)),
        "performance measures validate, plan, plan-view: {measures}"
    );
    println!("maximal document: measures validate, plan, plan-view (ms): {measures}");

    // Signing out forgets the key and gives the focus to the key's field, ready for another.
    click(&browser, "#sign-out").await;
    wait_for(&browser, "#api-key").await;
    expect_focus(&browser, "api-key").await;
    let stored = browser
        .execute(
            "return sessionStorage.getItem('better-compute.apiKey');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(stored, Value::Null);

    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    println!("screenshots: {}", screenshot_dir().display());
    browser.close().await;
}

/// A valid document with 1000 items in every list.
fn maximal_document() -> Value {
    let n = 0..1000;
    json!({
        "version": 1,
        "sites": n.clone().map(|i| json!({ "name": format!("s{i}"), "kind": "shared", "region": "eu" })).collect::<Vec<_>>(),
        "providerAccounts": n.clone().map(|i| json!({ "name": format!("a{i}"), "provider": "hetzner-cloud", "config": { "token": "env://TOKEN" } })).collect::<Vec<_>>(),
        "pools": n.clone().map(|i| json!({ "name": format!("p{i}"), "site": format!("s{i}"), "class": "vps-host", "ownerQuota": { "gpu": i } })).collect::<Vec<_>>(),
        "flavors": n.clone().map(|i| json!({ "pool": format!("p{i}"), "name": "f", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 })).collect::<Vec<_>>(),
        "sandboxTemplates": n.map(|i| json!({ "name": format!("t{i}"), "pool": format!("p{i}"), "flavor": "f", "imageId": "ubuntu-24.04", "network": "private" })).collect::<Vec<_>>(),
    })
}

/// The id of the focused element, the selected tab, and which panels are shown.
async fn tab_state(browser: &Browser) -> Value {
    browser
        .execute(
            "const tabs = [...document.querySelectorAll('[role=tablist] [role=tab]')]; \
             return { focused: document.activeElement && document.activeElement.id, \
               selected: tabs.filter((t) => t.getAttribute('aria-selected') === 'true').map((t) => t.id), \
               tabbable: tabs.filter((t) => t.tabIndex === 0).map((t) => t.id), \
               shown: [...document.querySelectorAll('[role=tabpanel]')].filter((p) => !p.hidden) \
                 .map((p) => p.getAttribute('aria-labelledby')) };",
            vec![],
        )
        .await
        .unwrap()
}

/// The WAI-ARIA tabs pattern: one tab in the Tab order (the selected one), arrow keys move
/// between the tabs (wrapping around), Home and End go to the ends, and the focused tab's
/// panel is shown.
#[tokio::test]
async fn the_tabs_follow_the_arrow_keys() {
    let (server, admin, _keys) = demo_server("console-tabs-key");
    let browser = signed_in(&server, &admin).await;
    wait_for(&browser, "[role=tablist]").await;
    let state = |focused: &str, selected: &str| {
        let panel = selected.to_owned();
        json!({ "focused": focused, "selected": [selected], "tabbable": [selected], "shown": [panel] })
    };
    assert_eq!(
        tab_state(&browser).await["tabbable"],
        json!(["tab-drift"]),
        "only the selected tab is in the Tab order"
    );

    click(&browser, "#tab-drift").await;
    assert_eq!(tab_state(&browser).await, state("tab-drift", "tab-drift"));
    let steps = [
        (Key::Right, "tab-plan"),
        (Key::Right, "tab-drift"),
        (Key::Left, "tab-plan"),
        (Key::Home, "tab-drift"),
        (Key::End, "tab-plan"),
        (Key::Left, "tab-drift"),
    ];
    for (key, expected) in steps {
        browser
            .active_element()
            .await
            .unwrap()
            .send_keys(&key)
            .await
            .unwrap();
        assert_eq!(
            tab_state(&browser).await,
            state(expected, expected),
            "after {key:?}"
        );
    }
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// A page left open follows the drift: a check made elsewhere (the reconciler's, the CLI's)
/// shows in it without a click, its events too, and the focus stays where it was.
#[tokio::test]
async fn a_page_left_open_follows_the_drift() {
    let (server, admin, _keys) = demo_server("console-poll-key");
    apply_export_as_is(&server, &admin).await;
    ok(
        &server,
        &admin,
        "fleet.check",
        json!({ "tenantId": "root" }),
    )
    .await;

    let browser = Browser::start().await;
    browser.goto(&server.url("/")).await.unwrap();
    wait_for(&browser, "#api-key").await;
    // This tab re-reads every half second (30 s by default), from its next load on.
    browser
        .execute(
            "sessionStorage.setItem('better-compute.statusEveryMs', '500');",
            vec![],
        )
        .await
        .unwrap();
    browser.refresh().await.unwrap();
    watch_console(&browser).await;
    let input = wait_for(&browser, "#api-key").await;
    input.send_keys(&admin).await.unwrap();
    click(&browser, "#sign-in").await;
    wait_for(&browser, "#in-sync").await;
    browser
        .execute("document.getElementById('refresh-events').focus();", vec![])
        .await
        .unwrap();

    hand_edit_policy(&server, &admin, 0.42).await;
    ok(
        &server,
        &admin,
        "fleet.check",
        json!({ "tenantId": "root" }),
    )
    .await;
    let drift = wait_text(&browser, "#drift-changes", |t| t.contains("vps-fra")).await;
    assert!(drift.contains("policy"), "{drift}");
    wait_text(&browser, "#timeline", |t| t.contains("fleet.drifted")).await;
    expect_focus(&browser, "refresh-events").await;
    // A quiet re-read shows no loading state: the card is never busy, nor "Checking…".
    let busy = attribute(&browser, "[aria-labelledby=drift-title]", "aria-busy").await;
    assert_eq!(busy, json!("false"));
    // The events unreachable for the quiet re-reads: the timeline stays, with a note.
    hold_requests(&browser, "event.list", json!("fail")).await;
    let note = wait_text(&browser, "#events-stale", |_| true).await;
    assert!(
        note.contains(": NETWORK ") && note.contains("; showing the events read at "),
        "{note}"
    );
    wait_text(&browser, "#timeline", |t| t.contains("fleet.drifted")).await;
    expect_focus(&browser, "refresh-events").await;

    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// A session whose key the server refuses (kept in the tab from before) gets the refusal page:
/// its button has the focus, and there is no tenant to pick; the button leads back to sign-in.
#[tokio::test]
async fn a_refused_session_says_why_and_offers_another_key() {
    let (server, admin, _keys) = demo_server("console-refused-key");
    let outsider = outsider_key(&server, &admin, "viewer").await;
    let browser = Browser::start().await;
    browser.goto(&server.url("/")).await.unwrap();
    // The sign-in form starts with the focus on the key.
    wait_for(&browser, "#api-key").await;
    expect_focus(&browser, "api-key").await;
    browser
        .execute(
            "sessionStorage.setItem('better-compute.apiKey', arguments[0]);",
            vec![json!(outsider)],
        )
        .await
        .unwrap();
    browser.refresh().await.unwrap();
    watch_console(&browser).await;
    let refusal = wait_text(&browser, "#refusal", |_| true).await;
    assert!(
        refusal.contains("not a platform administrator"),
        "{refusal}"
    );
    expect_focus(&browser, "use-another-key").await;
    assert!(
        !wait_for(&browser, "#tenant")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    click(&browser, "#use-another-key").await;
    wait_for(&browser, "#api-key").await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");

    // What the console avoids, and what the check above would have seen: the same refusal
    // answered with its status (no X-Better-Compute-Errors) is an error in Chromium's log,
    // though the page handles it; asked in the body, it is not.
    let refused = |in_body: bool| {
        let browser = &browser;
        let outsider = outsider.clone();
        async move {
            browser
                .execute_async(
                    "const [key, inBody, done] = arguments; \
                     const headers = { 'Authorization': 'Bearer ' + key }; \
                     if (inBody) headers['X-Better-Compute-Errors'] = 'in-body'; \
                     fetch('/api/tenant.list', { method: 'POST', headers, body: '{}' }) \
                       .then(async (r) => done({ status: r.status, \
                         real: r.headers.get('X-Better-Compute-Status'), \
                         code: (await r.json()).error.code }));",
                    vec![json!(outsider), json!(in_body)],
                )
                .await
                .unwrap()
        }
    };
    assert_eq!(
        refused(true).await,
        json!({ "status": 200, "real": "403", "code": "FORBIDDEN" })
    );
    let errors = console_errors(&browser).await;
    assert!(
        errors.is_empty(),
        "an error answered in the body: {errors:?}"
    );
    assert_eq!(
        refused(false).await,
        json!({ "status": 403, "real": null, "code": "FORBIDDEN" })
    );
    let errors = console_errors(&browser).await;
    assert!(
        errors.iter().any(|e| e.starts_with("SEVERE")
            && e.contains("/api/tenant.list")
            && e.contains("status of 403")),
        "Chromium's log has the refusal: {errors:?}"
    );
    browser.close().await;
}

/// An apply refused for another reason than CONFIG_DRIFT (here the key, revoked after the
/// plan was made: UNAUTHENTICATED) shows its code and message, and the error takes the focus
/// (Apply is disabled while the apply is sent, so the focus had nowhere else to go but the
/// page's top); the refusal is no error in the browser's console.
#[tokio::test]
async fn a_failed_apply_shows_its_error_and_holds_the_focus() {
    let (server, admin, _keys) = demo_server("console-failed-apply-key");
    // A second administrator: a service account of root with the bootstrap admin's grants.
    let sa = ok(
        &server,
        &admin,
        "serviceAccount.create",
        json!({ "tenantId": "root", "name": "ops" }),
    )
    .await;
    for (permission, scope) in [
        ("*", "tenants/root"),
        ("compute:fleet:admin", "compute-fleet/global"),
    ] {
        ok(
            &server,
            &admin,
            "grant.create",
            json!({ "tenantId": "root", "principalId": sa["id"], "permission": permission, "scope": scope }),
        )
        .await;
    }
    let created = ok(
        &server,
        &admin,
        "apiKey.create",
        json!({ "tenantId": "root", "principalId": sa["id"] }),
    )
    .await;
    let ops = created["key"].as_str().unwrap().to_owned();
    let export = ok(&server, &ops, "fleet.export", json!({ "tenantId": "root" })).await;

    let browser = signed_in(&server, &ops).await;
    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    paste(
        &browser,
        &serde_json::to_string_pretty(&export["config"]).unwrap(),
    )
    .await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;

    ok(
        &server,
        &admin,
        "apiKey.revoke",
        json!({ "tenantId": "root", "id": created["id"] }),
    )
    .await;
    click(&browser, "#apply").await;
    click(&browser, "#confirm-apply").await;
    let error = wait_text(&browser, "#apply-error", |_| true).await;
    assert!(error.contains("UNAUTHENTICATED"), "{error}");
    expect_focus(&browser, "apply-error").await;
    // Focused by the page, not in the Tab order.
    assert_eq!(
        wait_for(&browser, "#apply-error")
            .await
            .attr("tabindex")
            .await
            .unwrap()
            .as_deref(),
        Some("-1")
    );
    screenshots(&browser, "11-apply-failed").await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// A thousand sites (in `region`), pools and flavors: about 400 KB written out, more than the
/// editor holds (256 KiB).
fn long_document(region: &str) -> Value {
    let sites: Vec<Value> = (0..1000)
        .map(|i| json!({ "name": format!("long-site-{i:04}"), "kind": "shared", "region": region }))
        .collect();
    let pools: Vec<Value> = (0..1000)
        .map(|i| json!({ "name": format!("long-pool-{i:04}"), "site": format!("long-site-{i:04}"), "class": "vps-host" }))
        .collect();
    let flavors: Vec<Value> = (0..1000)
        .map(|i| json!({ "pool": format!("long-pool-{i:04}"), "name": "g1.small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }))
        .collect();
    json!({ "version": 1, "sites": sites, "pools": pools, "flavors": flavors })
}

/// A browser signed in as `admin` on the plan view, with `file` chosen in its file picker.
async fn upload_in_plan_view(server: &Server, admin: &str, file: &std::path::Path) -> Browser {
    let browser = signed_in(server, admin).await;
    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    wait_for(&browser, "#document-file")
        .await
        .send_keys(file.to_str().unwrap())
        .await
        .unwrap();
    browser
}

/// A document too long for the editor (over 256 KiB) is held outside it: the page says so,
/// plans it (the planHash equals the server's), and "Edit here" puts it in the editor, which
/// takes the focus.
#[tokio::test]
async fn a_long_document_is_planned_outside_the_editor() {
    let (server, admin, keys) = demo_server("console-long-key");
    let document = long_document("eu-central");
    let text = serde_json::to_string_pretty(&document).unwrap();
    assert!(text.len() > 256 * 1024, "{} bytes", text.len());
    let upload = keys.path().join("long-fleet.json");
    std::fs::write(&upload, &text).unwrap();

    let browser = upload_in_plan_view(&server, &admin, &upload).await;
    let held = wait_text(&browser, "#held", |t| t.contains("long-fleet.json")).await;
    assert!(held.contains("validated and planned as it is"), "{held}");
    let lines = text.lines().count();
    assert!(held.contains(&format!("{lines} lines")), "{held}");
    let editor = wait_for(&browser, "#document").await;
    assert!(
        !editor.is_displayed().await.unwrap(),
        "the editor is hidden"
    );
    let summary = wait_text(&browser, "#plan-summary", |t| t.contains("to create")).await;
    assert!(summary.contains("3000 to create"), "{summary}");
    let page_hash = page_hash_is_the_servers(&browser, &server, &admin, &document).await;
    screenshots(&browser, "14-plan-long-document").await;

    click(&browser, "#edit-here").await;
    expect_focus(&browser, "document").await;
    assert!(
        !wait_for(&browser, "#held")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    let length = browser
        .execute(
            "return document.querySelector('#document').value.length;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(length, json!(text.encode_utf16().count()));
    // The plan stays what it was: the text is the same.
    let again = wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    assert_eq!(again, page_hash);
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Pastes `text` as a person's paste does: a `paste` event with the text on its clipboard,
/// dispatched on the focused element (`css`). Answers whether the page took it (a browser
/// inserts the text of a paste the page did not prevent; a script's event inserts nothing).
async fn paste_event(browser: &Browser, css: &str, text: &str) -> bool {
    let taken = browser
        .execute(
            "const [css, text] = arguments; const target = document.querySelector(css); \
             target.focus(); const data = new DataTransfer(); data.setData('text/plain', text); \
             const paste = new ClipboardEvent('paste', \
               { clipboardData: data, bubbles: true, cancelable: true }); \
             target.dispatchEvent(paste); return paste.defaultPrevented;",
            vec![json!(css), json!(text)],
        )
        .await
        .unwrap();
    taken.as_bool().unwrap()
}

/// The attribute `name` of the element `css` (null when it has none), read in one script: a
/// page that writes the element anew between a find and a read cannot make the reference
/// stale.
async fn attribute(browser: &Browser, css: &str, name: &str) -> Value {
    browser
        .execute(
            "const [css, name] = arguments; \
             return document.querySelector(css).getAttribute(name);",
            vec![json!(css), json!(name)],
        )
        .await
        .unwrap()
}

/// The editor's text.
async fn editor_value(browser: &Browser) -> String {
    let value = browser
        .execute("return document.querySelector('#document').value;", vec![])
        .await
        .unwrap();
    value.as_str().unwrap().to_owned()
}

/// A paste too long for the editor is held outside it, as a long file is: the text is what
/// the paste would have made (the pasted text in place of the selection, counted in UTF-16
/// units past a non-ASCII character), it is planned (the planHash equals the server's), a
/// paste over the held document replaces it, and a short paste is left to the browser.
#[tokio::test]
async fn a_long_paste_is_held_outside_the_editor() {
    let (server, admin, _keys) = demo_server("console-long-paste-key");
    let document = long_document("eu-west");
    let text = serde_json::to_string_pretty(&document).unwrap();
    assert!(text.len() > 256 * 1024, "{} bytes", text.len());
    let browser = signed_in(&server, &admin).await;
    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;

    // Into a selection: "é[X]!" with X selected.
    paste(&browser, "éX!").await;
    browser
        .execute(
            "document.querySelector('#document').setSelectionRange(1, 2);",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        paste_event(&browser, "#document", &text).await,
        "the page takes a long paste"
    );
    let held = wait_text(&browser, "#held", |t| t.contains("The pasted text")).await;
    let lines = text.lines().count();
    assert!(held.contains(&format!("{lines} lines")), "{held}");
    assert!(
        !wait_for(&browser, "#document")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    assert_eq!(
        editor_value(&browser).await,
        "",
        "the editor lays out nothing"
    );
    // "é" + the document + "!" is no JSON: the problem is shown, nothing is planned.
    wait_text(&browser, "#validation", |t| !t.trim().is_empty()).await;
    click(&browser, "#edit-here").await;
    assert_eq!(editor_value(&browser).await, format!("é{text}!"));

    // Over everything, selected: the document alone, planned as the server plans it.
    browser
        .execute("document.querySelector('#document').select();", vec![])
        .await
        .unwrap();
    assert!(paste_event(&browser, "#document", &text).await);
    wait_text(&browser, "#held", |t| t.contains("The pasted text")).await;
    page_hash_is_the_servers(&browser, &server, &admin, &document).await;

    // A paste over the held document (the focus on "Edit here") replaces it, short or long.
    assert!(paste_event(&browser, "#edit-here", "{\"version\": 1}").await);
    let editor = wait_for(&browser, "#document").await;
    for _ in 0..100 {
        if editor.is_displayed().await.unwrap() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        editor.is_displayed().await.unwrap(),
        "a short text is in the editor"
    );
    assert_eq!(editor_value(&browser).await, "{\"version\": 1}");
    wait_text(&browser, "#plan-summary", |t| t.starts_with("0 to create")).await;

    // A short paste into the editor is the browser's to insert.
    assert!(!paste_event(&browser, "#document", "{}").await);
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Presses `key` on the focused element.
async fn press(browser: &Browser, key: Key) {
    browser
        .active_element()
        .await
        .unwrap()
        .send_keys(&key)
        .await
        .unwrap();
}

/// Whether the editor is scrolled down (`scrollTop` > 0) and the first line of its selection
/// is within its visible part. A line's height is measured from the text's (a computed
/// `line-height` is rounded differently than Chromium lays lines out).
async fn selection_in_view(browser: &Browser) -> Value {
    browser
        .execute(
            "const t = document.querySelector('#document'); const style = getComputedStyle(t); \
             const padding = parseFloat(style.paddingTop); \
             const lines = t.value.split('\\n').length; \
             const height = (t.scrollHeight - padding - parseFloat(style.paddingBottom)) / lines; \
             const line = t.value.slice(0, t.selectionStart).split('\\n').length - 1; \
             const top = padding + line * height; \
             return { scrolled: t.scrollTop > 0, \
               visible: top >= t.scrollTop && top + height <= t.scrollTop + t.clientHeight + 0.5 };",
            vec![],
        )
        .await
        .unwrap()
}

/// A problem near the end of a document held outside the editor: its path (reached with Tab,
/// pressed with Enter, then with Space) puts the text in the editor, selects the value and
/// scrolls the editor to it, and the editor has the focus.
#[tokio::test]
async fn a_problem_in_a_held_document_is_shown_in_the_editor() {
    let (server, admin, keys) = demo_server("console-held-problem-key");
    // Regions with characters of two and four bytes (one and two UTF-16 units) before the
    // mistake, in the last flavor.
    let mut document = long_document("Zürich 🏔");
    document["flavors"][999]["vcpu"] = json!(0);
    let text = serde_json::to_string_pretty(&document).unwrap();
    assert!(text.len() > 256 * 1024, "{} bytes", text.len());
    let value_at = text.rfind("\"vcpu\": 0").unwrap() + "\"vcpu\": ".len();
    let start = text[..value_at].encode_utf16().count();
    let upload = keys.path().join("long-fleet-with-a-mistake.json");
    std::fs::write(&upload, &text).unwrap();

    let browser = upload_in_plan_view(&server, &admin, &upload).await;
    wait_text(&browser, "#held", |t| {
        t.contains("long-fleet-with-a-mistake.json")
    })
    .await;
    let problems = wait_text(&browser, "#problems", |t| t.contains("problem")).await;
    assert!(problems.contains("flavors[999].vcpu"), "{problems}");
    let editor = wait_for(&browser, "#document").await;
    assert!(
        !editor.is_displayed().await.unwrap(),
        "the editor is hidden"
    );

    // Tab from "Edit here" reaches the path (the hidden editor is skipped); Enter presses it.
    browser
        .execute("document.querySelector('#edit-here').focus();", vec![])
        .await
        .unwrap();
    press(&browser, Key::Tab).await;
    let label = browser
        .execute(
            "return document.activeElement.getAttribute('aria-label');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(label, json!("Show flavors[999].vcpu in the document"));
    press(&browser, Key::Enter).await;
    expect_focus(&browser, "document").await;
    assert!(editor.is_displayed().await.unwrap(), "the editor is shown");
    assert!(
        !wait_for(&browser, "#held")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    let length = browser
        .execute(
            "return document.querySelector('#document').value.length;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(length, json!(text.encode_utf16().count()));
    let expected = json!({ "start": start, "end": start + 1, "text": "0" });
    assert_eq!(selection(&browser).await, expected);
    assert_eq!(
        selection_in_view(&browser).await,
        json!({ "scrolled": true, "visible": true })
    );

    // Back to the top with the caret at the start; Tab (from the editor) and Space jump again.
    browser
        .execute(
            "const t = document.querySelector('#document'); t.setSelectionRange(0, 0); t.scrollTop = 0;",
            vec![],
        )
        .await
        .unwrap();
    press(&browser, Key::Tab).await;
    press(&browser, Key::Space).await;
    expect_focus(&browser, "document").await;
    assert_eq!(selection(&browser).await, expected);
    assert_eq!(
        selection_in_view(&browser).await,
        json!({ "scrolled": true, "visible": true })
    );
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// A pipeline's key, as the seed advises: a service account of root holding
/// `compute:fleet:admin` on `compute-fleet/global` and the permission of the calls its plans
/// make (here `compute:pool:update`), and nothing else: no `events:event:read`, no
/// `iam:tenant:read`.
async fn pipeline_key(server: &Server, admin: &str) -> String {
    let sa = ok(
        server,
        admin,
        "serviceAccount.create",
        json!({ "tenantId": "root", "name": "pipeline" }),
    )
    .await;
    for (permission, scope) in [
        ("compute:fleet:admin", "compute-fleet/global"),
        ("compute:pool:update", "tenants/root"),
    ] {
        ok(
            server,
            admin,
            "grant.create",
            json!({ "tenantId": "root", "principalId": sa["id"], "permission": permission, "scope": scope }),
        )
        .await;
    }
    let created = ok(
        server,
        admin,
        "apiKey.create",
        json!({ "tenantId": "root", "principalId": sa["id"] }),
    )
    .await;
    created["key"].as_str().unwrap().to_owned()
}

/// A pipeline's key, which may run the fleet methods but not read events
/// (`events:event:read`) nor list tenants (`iam:tenant:read`), is no refused key: the drift, plan and apply work, the events
/// card says the key cannot read them, and the tenant picker holds the tenant shown and why.
#[tokio::test]
async fn a_pipeline_key_gets_the_fleet_pages() {
    let (server, admin, _keys) = demo_server("console-fleet-only-key");
    let baseline = apply_export_as_is(&server, &admin).await;
    hand_edit_policy(&server, &admin, 0.35).await;
    let key = pipeline_key(&server, &admin).await;
    let (status, body) = call(&server, &key, "event.list", json!({ "tenantId": "root" })).await;
    assert_eq!(status, 403, "{body}");

    let browser = signed_in(&server, &key).await;
    wait_for(&browser, "#applied-plan-hash").await;
    let events = wait_text(&browser, "#events-forbidden", |_| true).await;
    assert!(events.contains("events:event:read"), "{events}");
    wait_for(&browser, "#tenants-forbidden").await;
    let picker = tenant_picker(&browser).await;
    assert_eq!(
        picker["options"],
        json!([
            "root",
            "Other tenants: this key cannot list them (iam:tenant:read) (disabled)"
        ]),
        "{picker}"
    );
    assert!(browser.find(Locator::Css("#refusal")).await.is_err());

    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    paste(&browser, &serde_json::to_string_pretty(&baseline).unwrap()).await;
    let summary = wait_text(&browser, "#plan-summary", |t| t.contains("to update")).await;
    assert!(summary.contains("1 to update"), "{summary}");
    click(&browser, "#apply").await;
    click(&browser, "#confirm-apply").await;
    wait_text(&browser, "#apply-result", |t| t.contains("Applied")).await;
    assert!(browser.find(Locator::Css("#refusal")).await.is_err());
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// The export is the state, not a document: a tenant with more than 1000 sites (two applies of
/// 600 without prune) is planned against in the page (its planHash the server's), and its
/// export downloads; only a document is held to 1000 items a list.
#[tokio::test]
async fn an_export_over_a_thousand_items_is_planned_against() {
    let (server, admin, _keys) = demo_server("console-big-export-key");
    for batch in ["a", "b"] {
        let sites: Vec<Value> = (0..600)
            .map(|i| json!({ "name": format!("{batch}-site-{i:03}"), "kind": "shared", "region": "eu" }))
            .collect();
        ok(
            &server,
            &admin,
            "fleet.apply",
            json!({ "tenantId": "root", "config": { "version": 1, "sites": sites }, "prune": false }),
        )
        .await;
    }
    let export = ok(
        &server,
        &admin,
        "fleet.export",
        json!({ "tenantId": "root" }),
    )
    .await;
    let sites = export["config"]["sites"].as_array().unwrap().len();
    assert!(sites > 1200, "{sites} sites");

    let browser = signed_in(&server, &admin).await;
    click(&browser, "#tab-plan").await;
    let info = wait_text(&browser, "#export-info, #export-error", |_| true).await;
    assert!(info.starts_with("Plans are made"), "{info}");
    let document = json!({ "version": 1, "sites": [
        { "name": "small-site", "kind": "shared", "region": "eu" } ] });
    paste(&browser, &document.to_string()).await;
    let summary = wait_text(&browser, "#plan-summary", |t| t.contains("to create")).await;
    assert!(summary.contains("1 to create"), "{summary}");
    page_hash_is_the_servers(&browser, &server, &admin, &document).await;
    let file = download_fleet_json(&browser).await;
    assert_eq!(file, export["config"]);
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// A browser signed in as `key` (by the keyboard: the key typed, then Enter) on the plan
/// view, the export fetched.
async fn signed_in_plan_view(server: &Server, key: &str) -> Browser {
    let browser = open_console(server).await;
    let input = wait_for(&browser, "#api-key").await;
    input.send_keys(key).await.unwrap();
    input.send_keys(&Key::Enter.to_string()).await.unwrap();
    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    browser
}

/// Holds the page's requests of `method` for `ms` milliseconds (`"fail"`: they fail as an
/// unreachable server's do), from now on.
async fn hold_requests(browser: &Browser, method: &str, ms: Value) {
    browser
        .execute(
            "if (!window.__hold) { window.__hold = {}; const f = window.fetch; \
               window.fetch = (url, init) => { const hold = window.__hold[String(url).split('/api/')[1]]; \
                 if (hold === 'fail') return Promise.reject(new TypeError('Failed to fetch')); \
                 if (hold) return new Promise((r) => setTimeout(r, hold)).then(() => f(url, init)); \
                 return f(url, init); }; } \
             window.__hold[arguments[0]] = arguments[1];",
            vec![json!(method), ms],
        )
        .await
        .unwrap();
}

/// Chooses `bytes`, written to a file `name`, in the plan view's file picker.
async fn upload(browser: &Browser, keys: &TempDir, name: &str, bytes: &[u8]) {
    let path = keys.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    wait_for(browser, "#document-file")
        .await
        .send_keys(path.to_str().unwrap())
        .await
        .unwrap();
}

/// Whether the Apply button is disabled.
async fn apply_disabled(browser: &Browser) -> bool {
    wait_for(browser, "#apply")
        .await
        .attr("disabled")
        .await
        .unwrap()
        .is_some()
}

/// A file that is not UTF-8 is validated as its bytes, as the CLI and the server read it: a
/// problem at the bad byte, no plan, Apply disabled (the browser's `text()` replaced the byte
/// with U+FFFD, and the page called the file valid); one keystroke later the U+FFFD it shows
/// is still a problem, until it is replaced.
#[tokio::test]
async fn a_file_that_is_not_utf8_is_a_problem() {
    let (server, admin, keys) = demo_server("console-not-utf8-key");
    let browser = signed_in_plan_view(&server, &admin).await;
    let bytes = b"{\"version\":1,\"sites\":[{\"name\":\"fra2\",\"kind\":\"shared\",\"region\":\"eu-\xff\"}]}";
    let column = bytes.iter().position(|&b| b == 0xff).unwrap() + 1;
    upload(&browser, &keys, "not-utf8.json", bytes).await;
    let problems = wait_text(&browser, "#problems", |_| true).await;
    assert!(
        problems.contains(&format!(
            "the document is not valid JSON: invalid unicode code point at line 1 column {column}"
        )),
        "{problems}"
    );
    assert!(browser.find(Locator::Css("#valid")).await.is_err());
    wait_for(&browser, "#no-plan").await;
    assert!(apply_disabled(&browser).await);

    // A keystroke makes it the editor's text, where the browser read the byte as U+FFFD:
    // still a problem, at the same place, until the U+FFFD is gone.
    click(&browser, "#document").await;
    browser
        .execute(
            "const t = document.querySelector('#document'); t.setSelectionRange(0, 0);",
            vec![],
        )
        .await
        .unwrap();
    wait_for(&browser, "#document")
        .await
        .send_keys(" ")
        .await
        .unwrap();
    let problems = wait_text(&browser, "#problems", |t| t.contains("not UTF-8")).await;
    assert!(
        problems.contains(&format!(
            "the file was not UTF-8: the editor shows each byte it could not read as \u{FFFD}; \
             replace them before planning at line 1 column {}",
            column + 1
        )),
        "{problems}"
    );
    assert!(browser.find(Locator::Css("#valid")).await.is_err());
    wait_for(&browser, "#no-plan").await;
    assert!(apply_disabled(&browser).await);
    let text = String::from_utf8_lossy(bytes).replace('\u{FFFD}', "west");
    paste(&browser, &format!(" {text}")).await;
    wait_for(&browser, "#valid").await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// An empty file, or one of whitespace only, is a document that is not JSON, as the CLI says;
/// an emptied editor is nothing entered yet.
#[tokio::test]
async fn an_empty_file_is_a_problem() {
    let (server, admin, keys) = demo_server("console-empty-file-key");
    let browser = signed_in_plan_view(&server, &admin).await;
    for (name, bytes) in [("empty.json", &b""[..]), ("blank.json", &b" \n\t\n"[..])] {
        paste(&browser, "{\"version\": 1}").await;
        wait_for(&browser, "#valid").await;
        upload(&browser, &keys, name, bytes).await;
        let problems = wait_text(&browser, "#problems", |_| true).await;
        assert!(
            problems.contains("the document is not valid JSON: EOF while parsing a value"),
            "{name}: {problems}"
        );
        assert!(apply_disabled(&browser).await);
    }
    paste(&browser, "").await;
    wait_text(&browser, "#validation", |t| t.contains("as you type")).await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// The path button of a problem of the whole document (path "") puts the caret at the
/// document's first character.
#[tokio::test]
async fn a_problem_of_the_whole_document_shows_its_start() {
    let (server, admin, _keys) = demo_server("console-root-problem-key");
    let browser = signed_in_plan_view(&server, &admin).await;
    paste(&browser, "\n  [1, 2]\n").await;
    let problems = wait_text(&browser, "#problems", |_| true).await;
    assert!(
        problems.contains("a document must be an object, not a list"),
        "{problems}"
    );
    click(&browser, "#problems button.path").await;
    expect_focus(&browser, "document").await;
    assert_eq!(
        selection(&browser).await,
        json!({ "start": 3, "end": 3, "text": "" })
    );
    browser.close().await;
}

/// After a sign-in (Enter in the key's field) the selected tab has the focus, not the page's
/// top; while an apply is sent Apply keeps it (aria-disabled, "Applying…") and a status says
/// so; then the answer's button takes it.
#[tokio::test]
async fn the_focus_follows_the_sign_in_and_the_apply() {
    let (server, admin, _keys) = demo_server("console-focus-key");
    let baseline = apply_export_as_is(&server, &admin).await;
    hand_edit_policy(&server, &admin, 0.35).await;
    let browser = open_console(&server).await;
    let input = wait_for(&browser, "#api-key").await;
    input.send_keys(&admin).await.unwrap();
    input.send_keys(&Key::Enter.to_string()).await.unwrap();
    expect_focus(&browser, "tab-drift").await;

    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    paste(&browser, &serde_json::to_string_pretty(&baseline).unwrap()).await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    hold_requests(&browser, "fleet.apply", json!(1000)).await;
    // What the page is like the moment "Applying…" shows.
    browser
        .execute(
            "new MutationObserver((_, observer) => { const status = document.querySelector('#applying'); \
               if (!status) return; observer.disconnect(); const apply = document.querySelector('#apply'); \
               window.__sending = { focus: document.activeElement.id || document.activeElement.tagName, \
                 role: status.getAttribute('role'), status: status.textContent, label: apply.textContent, \
                 ariaDisabled: apply.getAttribute('aria-disabled'), disabled: apply.disabled }; \
             }).observe(document.body, { childList: true, subtree: true });",
            vec![],
        )
        .await
        .unwrap();
    click(&browser, "#apply").await;
    click(&browser, "#confirm-apply").await;
    wait_text(&browser, "#apply-result", |t| t.contains("Applied")).await;
    let sending = browser
        .execute("return window.__sending;", vec![])
        .await
        .unwrap();
    assert_eq!(sending["focus"], "apply", "{sending}");
    assert_eq!(sending["role"], "status", "{sending}");
    assert!(
        sending["status"].as_str().unwrap().starts_with("Applying…"),
        "{sending}"
    );
    assert!(
        sending["label"].as_str().unwrap().contains("Applying…"),
        "{sending}"
    );
    assert_eq!(sending["ariaDisabled"], "true", "{sending}");
    assert_eq!(sending["disabled"], false, "{sending}");
    expect_focus(&browser, "show-drift").await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// An apply answered after another tenant was chosen is told as its own tenant's (the count
/// of calls that ran, or its error), not as the shown tenant's "Applied" or CONFIG_DRIFT, and
/// takes the focus Apply lost; choosing another tenant again clears it.
#[tokio::test]
async fn an_apply_answered_under_another_tenant_names_its_own() {
    let (server, admin, _keys) = demo_server("console-apply-elsewhere-key");
    let baseline = apply_export_as_is(&server, &admin).await;
    hand_edit_policy(&server, &admin, 0.35).await;
    let browser = signed_in_plan_view(&server, &admin).await;
    paste(&browser, &serde_json::to_string_pretty(&baseline).unwrap()).await;
    let hash = wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    hold_requests(&browser, "fleet.apply", json!(1500)).await;
    click(&browser, "#apply").await;
    click(&browser, "#confirm-apply").await;
    wait_for(&browser, "#applying").await;
    choose_tenant(&browser, "globex").await;
    wait_text(&browser, "#export-info", |t| t.contains("globex")).await;

    let told = wait_text(&browser, "#apply-elsewhere", |t| !t.is_empty()).await;
    assert_eq!(
        told,
        "The apply to tenant root finished: 1 call ran. Choose that tenant to see its drift."
    );
    assert_eq!(
        attribute(&browser, "#apply-elsewhere", "role").await,
        "status"
    );
    assert!(browser.find(Locator::Css("#apply-result")).await.is_err());
    assert!(browser.find(Locator::Css("#show-drift")).await.is_err());
    // Apply is disabled for globex's blocked plan: the answer has the keyboard.
    expect_focus(&browser, "apply-elsewhere").await;
    // It did apply, to root, with the planHash reviewed.
    let status = root_status(&server, &admin).await;
    assert_eq!(status["applied"]["planHash"], hash.as_str(), "{status}");
    screenshots(&browser, "15-applied-elsewhere").await;

    choose_tenant(&browser, "acme").await;
    wait_text(&browser, "#export-info", |t| t.contains("acme")).await;
    assert!(
        browser
            .find(Locator::Css("#apply-elsewhere"))
            .await
            .is_err()
    );

    // A failure is told alike: root's fleet moves by hand after the page's export, and the
    // stale apply's CONFIG_DRIFT comes back while globex is shown.
    choose_tenant(&browser, "root").await;
    wait_text(&browser, "#export-info", |t| t.contains("root")).await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64 && t != hash).await;
    hand_edit_policy(&server, &admin, 0.45).await;
    click(&browser, "#apply").await;
    click(&browser, "#confirm-apply").await;
    wait_for(&browser, "#applying").await;
    choose_tenant(&browser, "globex").await;
    let told = wait_text(&browser, "#apply-elsewhere", |t| !t.is_empty()).await;
    assert!(
        told.starts_with("The apply to tenant root failed: CONFIG_DRIFT"),
        "{told}"
    );
    assert_eq!(
        attribute(&browser, "#apply-elsewhere", "role").await,
        "alert"
    );
    assert!(browser.find(Locator::Css("#config-drift")).await.is_err());
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Chooses `tenant` in the tenant picker, as a person does.
async fn choose_tenant(browser: &Browser, tenant: &str) {
    browser
        .execute(
            "const s = document.querySelector('#tenant'); s.value = arguments[0]; \
             s.dispatchEvent(new Event('change', { bubbles: true }));",
            vec![json!(tenant)],
        )
        .await
        .unwrap();
}

/// The element `css`'s box, in CSS pixels: its `width`, or its `top` from the page's top.
async fn measure(browser: &Browser, css: &str, what: &str) -> f64 {
    browser
        .execute(
            "const box = document.querySelector(arguments[0]).getBoundingClientRect(); \
             return arguments[1] === 'top' ? box.top + window.scrollY : box[arguments[1]];",
            vec![json!(css), json!(what)],
        )
        .await
        .unwrap()
        .as_f64()
        .unwrap()
}

/// The width of the element `css`, in CSS pixels.
async fn width(browser: &Browser, css: &str) -> f64 {
    measure(browser, css, "width").await
}

/// Another tenant chosen with a document in the editor: while its export loads, the plan's
/// place keeps its height, so the Apply card below does not move up and back.
#[tokio::test]
async fn the_plan_keeps_its_place_while_another_export_loads() {
    let (server, admin, _keys) = demo_server("console-plan-place-key");
    let browser = signed_in_plan_view(&server, &admin).await;
    let export = ok(
        &server,
        &admin,
        "fleet.export",
        json!({ "tenantId": "root" }),
    )
    .await;
    paste(&browser, &export["config"].to_string()).await;
    wait_text(&browser, "#plan-summary", |t| t.contains("unchanged")).await;
    let before = measure(&browser, "#apply", "top").await;
    hold_requests(&browser, "fleet.export", json!(2000)).await;
    choose_tenant(&browser, "acme").await;
    wait_for(&browser, "#no-plan").await;
    // Within a pixel: the height is held in whole pixels (`offsetHeight`).
    let during = measure(&browser, "#apply", "top").await;
    assert!((during - before).abs() <= 1.0, "{before} -> {during}");
    hold_requests(&browser, "fleet.export", json!(0)).await;
    wait_text(&browser, "#plan-summary", |_| true).await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "{errors:?}");
    browser.close().await;
}

/// Axe's findings: kind headings are h3 under the cards' h2 (no h4 anywhere), the scrolling
/// list of calls is focusable and named; Check now and Refresh export keep their width while
/// they work; a failed refresh of the export says the plan is against the export fetched
/// before.
#[tokio::test]
async fn headings_scrolling_calls_steady_buttons_and_a_failed_refresh() {
    let (server, admin, _keys) = demo_server("console-minor-key");
    let baseline = apply_export_as_is(&server, &admin).await;
    hand_edit_policy(&server, &admin, 0.35).await;
    let browser = signed_in(&server, &admin).await;
    wait_for(&browser, "#applied-plan-hash").await;

    // Check now, held in flight.
    let before = width(&browser, "#check-now").await;
    hold_requests(&browser, "fleet.check", json!(1500)).await;
    click(&browser, "#check-now").await;
    wait_text(&browser, "#check-now", |t| t.starts_with("Checking…")).await;
    assert_eq!(width(&browser, "#check-now").await, before);
    wait_text(&browser, "#check-now", |t| t.starts_with("Check now")).await;
    // Refresh reloads the status too, but checks nothing: Check now does not say "Checking…".
    hold_requests(&browser, "fleet.status", json!(1500)).await;
    click(&browser, "#refresh-events").await;
    let busy = || attribute(&browser, "[aria-labelledby=drift-title]", "aria-busy");
    for _ in 0..100 {
        if busy().await == json!("true") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        busy().await,
        json!("true"),
        "the status reload is in flight"
    );
    let label = wait_text(&browser, "#check-now", |_| true).await;
    assert!(label.starts_with("Check now"), "{label}");
    hold_requests(&browser, "fleet.status", json!(0)).await;
    let changes = wait_text(&browser, "#drift-changes", |t| t.contains("vps-fra")).await;
    assert!(!changes.is_empty());
    let headings = browser
        .execute(
            "return [document.querySelectorAll('h4').length, \
                     document.querySelectorAll('#drift-changes h3').length];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(headings, json!([0, 1]));

    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    paste(&browser, &serde_json::to_string_pretty(&baseline).unwrap()).await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    let calls = browser
        .execute(
            "const pre = document.querySelector('#plan-calls'); \
             return [pre.getAttribute('tabindex'), pre.getAttribute('role'), pre.getAttribute('aria-label'), \
                     document.querySelectorAll('h4').length, \
                     document.querySelectorAll('#plan-changes h3').length];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(calls, json!(["0", "region", "The calls, in order", 0, 1]));

    // Refresh export, held in flight; then one that fails.
    let fetched = wait_text(&browser, "#export-fetched", |_| true).await;
    let before = width(&browser, "#refresh-export").await;
    hold_requests(&browser, "fleet.export", json!(1500)).await;
    click(&browser, "#refresh-export").await;
    wait_text(&browser, "#refresh-export", |t| t.starts_with("Fetching…")).await;
    assert_eq!(width(&browser, "#refresh-export").await, before);
    wait_text(&browser, "#refresh-export", |t| {
        t.starts_with("Refresh export")
    })
    .await;
    let fetched = wait_text(&browser, "#export-fetched", |t| t != fetched).await;
    hold_requests(&browser, "fleet.export", json!("fail")).await;
    click(&browser, "#refresh-export").await;
    let error = wait_text(&browser, "#export-error", |_| true).await;
    assert!(
        error.starts_with(&format!(
            "Refreshing the export failed; the plan is against the export fetched at {fetched}: NETWORK"
        )),
        "{error}"
    );
    assert_eq!(
        wait_text(&browser, "#export-fetched", |_| true).await,
        fetched
    );
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    assert!(!apply_disabled(&browser).await);
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// A browser on the console that re-reads the status every `every_ms` (sessionStorage
/// `better-compute.statusEveryMs`, read when the page loads), signed in with `key`.
async fn signed_in_polling(server: &Server, key: &str, every_ms: u32) -> Browser {
    let browser = Browser::start().await;
    browser.goto(&server.url("/")).await.unwrap();
    wait_for(&browser, "#api-key").await;
    browser
        .execute(
            "sessionStorage.setItem('better-compute.statusEveryMs', arguments[0]);",
            vec![json!(every_ms.to_string())],
        )
        .await
        .unwrap();
    browser.refresh().await.unwrap();
    watch_console(&browser).await;
    wait_for(&browser, "#api-key")
        .await
        .send_keys(key)
        .await
        .unwrap();
    click(&browser, "#sign-in").await;
    browser
}

/// The text of the element `id`, hidden or not (`None`: no such element).
async fn text_of(browser: &Browser, id: &str) -> Option<String> {
    browser
        .execute(
            "const e = document.getElementById(arguments[0]); return e ? e.textContent : null;",
            vec![json!(id)],
        )
        .await
        .unwrap()
        .as_str()
        .map(str::to_owned)
}

/// Waits until the element `id` (hidden or not) exists and its text satisfies `accept`.
async fn wait_text_of(browser: &Browser, id: &str, accept: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = text_of(browser, id).await;
        if let Some(text) = text.filter(|t| accept(t)) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "#{id} never showed what was expected"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A quiet re-read that moves "Last checked" alone keeps a selection in the drift card. One
/// that fails keeps what the card shows, with a note (no alert); one the user asked for shows
/// the alert and keeps it too. A key revoked while the page is open is
/// said in the drift card: the page stays, with the document being typed and the focus in it.
#[tokio::test]
async fn a_failed_or_refused_re_read_keeps_the_page() {
    let (server, admin, _keys) = demo_server("console-quiet-refusal-key");
    apply_export_as_is(&server, &admin).await;
    ok(
        &server,
        &admin,
        "fleet.check",
        json!({ "tenantId": "root" }),
    )
    .await;
    let sa = ok(
        &server,
        &admin,
        "serviceAccount.create",
        json!({ "tenantId": "root", "name": "ops" }),
    )
    .await;
    ok(
        &server,
        &admin,
        "grant.create",
        json!({ "tenantId": "root", "principalId": sa["id"], "permission": "compute:fleet:admin", "scope": "compute-fleet/global" }),
    )
    .await;
    let created = ok(
        &server,
        &admin,
        "apiKey.create",
        json!({ "tenantId": "root", "principalId": sa["id"] }),
    )
    .await;
    let ops = created["key"].as_str().unwrap().to_owned();

    let browser = signed_in_polling(&server, &ops, 300).await;
    wait_for(&browser, "#in-sync").await;
    // A check of the unchanged fleet moves "Last checked" alone: a text selected in the card
    // stays selected (the card's HTML was written again, and the selection lost).
    let checked = wait_text(&browser, "#checked-at", |_| true).await;
    browser
        .execute(
            "getSelection().selectAllChildren(document.getElementById('applied-plan-hash'));",
            vec![],
        )
        .await
        .unwrap();
    ok(
        &server,
        &admin,
        "fleet.check",
        json!({ "tenantId": "root" }),
    )
    .await;
    wait_text(&browser, "#checked-at", |t| t != checked).await;
    let selected = browser
        .execute(
            "return [getSelection().toString(), document.getElementById('applied-plan-hash').textContent];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(selected[0], selected[1], "{selected}");
    // The server unreachable for the quiet re-reads: the status stays, with a note.
    hold_requests(&browser, "fleet.status", json!("fail")).await;
    let note = wait_text(&browser, "#status-stale", |_| true).await;
    assert!(
        note.starts_with("Could not refresh at ")
            && note.contains(": NETWORK ")
            && note.contains("; showing the status read at "),
        "{note}"
    );
    screenshots(&browser, "12-refresh-failed").await;
    // Read in one script: the next failed re-read may write the note anew (a find, then a
    // read of its attribute, failed a full run once with a stale element reference).
    let role = attribute(&browser, "#status-stale", "role").await;
    assert_eq!(role, json!("status"));
    wait_for(&browser, "#in-sync").await;
    wait_for(&browser, "#applied-plan-hash").await;
    assert!(browser.find(Locator::Css("#status-error")).await.is_err());
    // Asked by the user, the failure is an alert, and the status stays too.
    click(&browser, "#refresh-events").await;
    let error = wait_text(&browser, "#status-error", |_| true).await;
    assert!(error.starts_with("NETWORK"), "{error}");
    wait_for(&browser, "#applied-plan-hash").await;
    // Reachable again: the next quiet read clears both.
    hold_requests(&browser, "fleet.status", json!(0)).await;
    let deadline = Instant::now() + WAIT;
    while text_of(&browser, "status-error").await.is_some()
        || text_of(&browser, "status-stale").await.is_some()
    {
        assert!(Instant::now() < deadline, "the failure note stayed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A document being typed when the key is revoked.
    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    click(&browser, "#document").await;
    wait_for(&browser, "#document")
        .await
        .send_keys("{\"version\": 1")
        .await
        .unwrap();
    ok(
        &server,
        &admin,
        "apiKey.revoke",
        json!({ "tenantId": "root", "id": created["id"] }),
    )
    .await;
    let refused = wait_text_of(&browser, "status-refused", |_| true).await;
    assert!(
        refused.starts_with("This key was refused (UNAUTHENTICATED")
            && refused.ends_with("Sign in again to continue."),
        "{refused}"
    );
    // A few more periods: nothing moves.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(browser.find(Locator::Css("#refusal")).await.is_err());
    expect_focus(&browser, "document").await;
    let value = browser
        .execute("return document.querySelector('#document').value;", vec![])
        .await
        .unwrap();
    assert_eq!(value, json!("{\"version\": 1"));
    click(&browser, "#tab-drift").await;
    wait_for(&browser, "#status-refused").await;
    wait_for(&browser, "#applied-plan-hash").await;
    screenshots(&browser, "13-key-refused-while-open").await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// A drift of more changes than the server keeps (50) says the list is cut, with the count
/// the summary has.
#[tokio::test]
async fn a_drift_past_fifty_changes_says_the_list_is_cut() {
    let (server, admin, _keys) = demo_server("console-long-drift-key");
    let export = ok(
        &server,
        &admin,
        "fleet.export",
        json!({ "tenantId": "root" }),
    )
    .await;
    ok(
        &server,
        &admin,
        "fleet.apply",
        json!({ "tenantId": "root", "config": export["config"], "prune": true }),
    )
    .await;
    for _ in 0..60 {
        ok(
            &server,
            &admin,
            "site.create",
            json!({ "tenantId": "root", "kind": "shared", "region": "eu" }),
        )
        .await;
    }
    let checked = ok(
        &server,
        &admin,
        "fleet.check",
        json!({ "tenantId": "root" }),
    )
    .await;
    let summary = &checked["drift"]["summary"];
    assert_eq!(summary["delete"], json!(60), "{checked}");

    let browser = signed_in(&server, &admin).await;
    wait_text(&browser, "#drift-summary", |t| t.contains("60 to delete")).await;
    let cut = wait_text(&browser, "#drift-cut", |_| true).await;
    assert_eq!(
        cut,
        "The first 50 of 60 changes are listed; plan the document to see them all."
    );
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Sign in and Apply keep their width while they work ("Checking…", "Applying…"), as Check
/// now and Refresh export do: the right-aligned Apply's left edge jumped by 10 pixels.
#[tokio::test]
async fn sign_in_and_apply_keep_their_width() {
    let (server, admin, _keys) = demo_server("console-steady-apply-key");
    let baseline = apply_export_as_is(&server, &admin).await;
    hand_edit_policy(&server, &admin, 0.35).await;
    let browser = open_console(&server).await;
    let input = wait_for(&browser, "#api-key").await;
    input.send_keys(&admin).await.unwrap();
    let before = width(&browser, "#sign-in").await;
    hold_requests(&browser, "fleet.status", json!(1500)).await;
    click(&browser, "#sign-in").await;
    wait_text(&browser, "#sign-in", |t| t.starts_with("Checking…")).await;
    assert_eq!(width(&browser, "#sign-in").await, before);
    hold_requests(&browser, "fleet.status", json!(0)).await;

    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    paste(&browser, &serde_json::to_string_pretty(&baseline).unwrap()).await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    let before = width(&browser, "#apply").await;
    hold_requests(&browser, "fleet.apply", json!(1500)).await;
    click(&browser, "#apply").await;
    click(&browser, "#confirm-apply").await;
    wait_text(&browser, "#apply", |t| t.starts_with("Applying…")).await;
    assert_eq!(width(&browser, "#apply").await, before);
    wait_text(&browser, "#apply-result", |t| t.contains("Applied")).await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Counts the page's requests by method from now on (`window.__requests`).
async fn count_requests(browser: &Browser) {
    browser
        .execute(
            "window.__requests = {}; const f = window.fetch; \
             window.fetch = (url, init) => { const m = String(url).split('/api/')[1]; \
               window.__requests[m] = (window.__requests[m] || 0) + 1; return f(url, init); };",
            vec![],
        )
        .await
        .unwrap();
}

/// A key that may not read events is not sent event.list again by Check now or Refresh
/// (each would be an audited FORBIDDEN).
#[tokio::test]
async fn a_key_without_events_is_not_sent_event_list_again() {
    let (server, admin, _keys) = demo_server("console-no-events-key");
    apply_export_as_is(&server, &admin).await;
    let key = pipeline_key(&server, &admin).await;
    let browser = signed_in(&server, &key).await;
    wait_for(&browser, "#events-forbidden").await;
    count_requests(&browser).await;
    click(&browser, "#check-now").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    click(&browser, "#refresh-events").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let requests = browser
        .execute("return window.__requests;", vec![])
        .await
        .unwrap();
    assert_eq!(requests, json!({ "fleet.check": 1, "fleet.status": 1 }));
    wait_for(&browser, "#events-forbidden").await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Two clicks on "Apply now" before the page re-renders (a script's `click(); click()`) send
/// one `fleet.apply`: the second found the apply sending. The card shows the apply's answer
/// (the second request's CONFIG_DRIFT, then the re-plan, had left it empty), and the server
/// audited no refused apply.
#[tokio::test]
async fn two_clicks_on_apply_now_apply_once() {
    let (server, admin, _keys) = demo_server("console-double-apply-key");
    let baseline = apply_export_as_is(&server, &admin).await;
    hand_edit_policy(&server, &admin, 0.35).await;
    let browser = signed_in_plan_view(&server, &admin).await;
    paste(&browser, &serde_json::to_string_pretty(&baseline).unwrap()).await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    count_requests(&browser).await;
    click(&browser, "#apply").await;
    wait_for(&browser, "#confirm-apply").await;
    browser
        .execute(
            "const apply = document.querySelector('#confirm-apply'); apply.click(); apply.click();",
            vec![],
        )
        .await
        .unwrap();
    let result = wait_text(&browser, "#apply-result", |_| true).await;
    assert!(result.contains("Applied: 1 call ran."), "{result}");
    // The refreshes after the apply have answered (the export's re-plan among them), and
    // the answer is still shown.
    wait_text(&browser, "#plan-summary", |t| t.contains("0 to update")).await;
    wait_for(&browser, "#apply-result").await;
    let applies = browser
        .execute("return window.__requests['fleet.apply'];", vec![])
        .await
        .unwrap();
    assert_eq!(applies, json!(1));
    let audit = ok(
        &server,
        &admin,
        "audit.list",
        json!({ "tenantId": "root", "limit": 1000 }),
    )
    .await;
    let refused = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "fleet.apply" && r["outcome"] == "config_drift")
        .count();
    assert_eq!(refused, 0, "{audit}");
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// After an apply the page reads the status, the export and the events once each: the
/// poll's next tick, here half a second after the apply's answer, does not read the status
/// and the events a second time (it did: twice each).
#[tokio::test]
async fn an_apply_reads_the_status_and_the_events_once() {
    let (server, admin, _keys) = demo_server("console-apply-reads-key");
    let baseline = apply_export_as_is(&server, &admin).await;
    hand_edit_policy(&server, &admin, 0.35).await;
    let browser = signed_in_polling(&server, &admin, 3000).await;
    click(&browser, "#tab-plan").await;
    wait_for(&browser, "#export-info").await;
    paste(&browser, &serde_json::to_string_pretty(&baseline).unwrap()).await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    // The apply's answer is held until 500 ms before a tick of the poll (the page's
    // fleet.status reads until then are the ticks'); the requests the page starts in the
    // 2.5 s after it are counted, by the page's clock: the tick 500 ms after the answer falls
    // inside, the one after it (at 3.5 s) does not, however slowly this test looks.
    browser
        .execute(
            "const every = 3000; const f = window.fetch; window.__sent = []; \
             window.fetch = (url, init) => { const m = String(url).split('/api/')[1]; \
               window.__sent.push([m, performance.now()]); \
               if (window.__answered === undefined && m === 'fleet.status') window.__tick = performance.now(); \
               const answer = f(url, init); \
               if (m !== 'fleet.apply') return answer; \
               return answer.then((r) => new Promise((done) => { \
                 const now = performance.now(); \
                 const next = window.__tick + every * Math.ceil((now + 500 - window.__tick) / every); \
                 setTimeout(() => { window.__answered = performance.now(); done(r); }, next - 500 - now); })); };",
            vec![],
        )
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while browser
        .execute("return window.__tick === undefined;", vec![])
        .await
        .unwrap()
        == json!(true)
    {
        assert!(Instant::now() < deadline, "the poll never read the status");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    click(&browser, "#apply").await;
    click(&browser, "#confirm-apply").await;
    wait_text(&browser, "#apply-result", |t| t.contains("Applied")).await;
    let counted = "if (window.__answered === undefined || performance.now() < window.__answered + 2600) return null; \
         const after = {}; \
         for (const [m, t] of window.__sent) \
           if (t >= window.__answered && t < window.__answered + 2500) after[m] = (after[m] || 0) + 1; \
         return after;";
    let after = loop {
        let after = browser.execute(counted, vec![]).await.unwrap();
        if !after.is_null() {
            break after;
        }
        assert!(Instant::now() < deadline, "the apply never answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        after,
        json!({ "fleet.status": 1, "fleet.export": 1, "event.list": 1 })
    );
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Counts of one are singular: acme's export of one object, a held document of one line.
#[tokio::test]
async fn a_count_of_one_is_singular() {
    let (server, admin, keys) = demo_server("console-singular-key");
    let browser = signed_in_plan_view(&server, &admin).await;
    choose_tenant(&browser, "acme").await;
    let line = wait_text(&browser, "#export-info", |t| t.contains("acme")).await;
    let objects = ok(
        &server,
        &admin,
        "fleet.export",
        json!({ "tenantId": "acme" }),
    )
    .await["objects"]
        .as_array()
        .map(Vec::len);
    assert_eq!(objects, Some(1));
    assert!(line.ends_with(" (1 object)."), "{line}");
    // A long document without line breaks, held outside the editor.
    let text = maximal_document().to_string();
    assert!(text.len() > 256 * 1024 && !text.contains('\n'));
    upload(&browser, &keys, "one-line.json", text.as_bytes()).await;
    let held = wait_text(&browser, "#held p", |t| t.contains("one-line.json")).await;
    assert!(held.contains(" KiB, 1 line, "), "{held}");
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Marks the plan's list of calls, runs `change`, and waits until the plan is written again
/// (the marked list replaced): whether the new list is open, and its calls' text.
async fn replanned<F: std::future::Future<Output = ()>>(browser: &Browser, change: F) -> Value {
    browser
        .execute(
            "document.querySelector('#plan-result details.calls').dataset.before = '';",
            vec![],
        )
        .await
        .unwrap();
    change.await;
    wait_for(browser, "#plan-result details.calls:not([data-before])").await;
    browser
        .execute(
            "return { open: document.querySelector('#plan-result details.calls').open, \
               calls: document.querySelector('#plan-calls').textContent };",
            vec![],
        )
        .await
        .unwrap()
}

/// The list of calls keeps the state the reader gave it when the plan is made again (Prune
/// ticked, the document edited): open, with the new plan's calls in it; closed, closed.
#[tokio::test]
async fn the_list_of_calls_stays_as_the_reader_left_it() {
    let (server, admin, _keys) = demo_server("console-calls-open-key");
    let export = ok(
        &server,
        &admin,
        "fleet.export",
        json!({ "tenantId": "root" }),
    )
    .await;
    // The export with vps-fra's policy changed (a pool.update) and a pool nothing names left
    // out (Prune deletes it: another plan).
    let mut document = export["config"].clone();
    let named: Vec<Value> = ["flavors", "sandboxTemplates"]
        .iter()
        .flat_map(|list| document[*list].as_array().cloned().unwrap_or_default())
        .map(|item| item["pool"].clone())
        .collect();
    let pools = document["pools"].as_array_mut().unwrap();
    let unnamed = pools
        .iter()
        .position(|p| p["name"] != "vps-fra" && !named.contains(&p["name"]))
        .unwrap_or_else(|| panic!("every pool is named: {export}"));
    pools.remove(unnamed);
    let fra = pools.iter().position(|p| p["name"] == "vps-fra").unwrap();
    let policy = |budget: f64| {
        let mut d = document.clone();
        d["pools"][fra]["policy"] = json!({ "disruptionBudget": budget });
        serde_json::to_string_pretty(&d).unwrap()
    };

    let browser = signed_in_plan_view(&server, &admin).await;
    paste(&browser, &policy(0.35)).await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    click(&browser, "#plan-view details.calls summary").await;
    wait_text(&browser, "#plan-calls", |t| t.contains("0.35")).await;

    let ticked = replanned(&browser, click(&browser, "#prune")).await;
    assert_eq!(ticked["open"], true, "{ticked}");
    let calls = ticked["calls"].as_str().unwrap();
    assert!(
        calls.contains("pool.update") && calls.contains("0.35"),
        "{calls}"
    );

    let edited = replanned(&browser, paste(&browser, &policy(0.45))).await;
    assert_eq!(edited["open"], true, "{edited}");
    assert!(
        edited["calls"].as_str().unwrap().contains("0.45"),
        "{edited}"
    );
    screenshots(&browser, "16-calls-open").await;

    // Closed by the reader, it stays closed.
    click(&browser, "#plan-view details.calls summary").await;
    let closed = replanned(&browser, click(&browser, "#prune")).await;
    assert_eq!(closed["open"], false, "{closed}");
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}

/// Apply's state for assistive tech and the reason shown next to it (the text of what its
/// `aria-describedby` names).
async fn apply_state(browser: &Browser) -> Value {
    browser
        .execute(
            "const b = document.querySelector('#apply'); \
             const by = b.getAttribute('aria-describedby'); \
             const reason = by && document.getElementById(by); \
             return { disabled: b.disabled, ariaDisabled: b.getAttribute('aria-disabled'), \
               reason: reason ? reason.textContent : null };",
            vec![],
        )
        .await
        .unwrap()
}

/// Waits (a few seconds at most) until Apply's state is `expected`.
async fn expect_apply_state(browser: &Browser, expected: Value) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state = apply_state(browser).await;
        if state == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Apply is {state}, not {expected}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A disabled Apply is `disabled` alone (it was also `aria-disabled="false"`), and the card
/// says why next to it, in the text that describes it: no document or an invalid one, no
/// export yet, a blocked plan. An Apply that can be pressed has no reason.
#[tokio::test]
async fn apply_says_why_it_is_disabled() {
    let (server, admin, _keys) = demo_server("console-apply-reason-key");
    let export = ok(
        &server,
        &admin,
        "fleet.export",
        json!({ "tenantId": "root" }),
    )
    .await;
    let browser = signed_in_plan_view(&server, &admin).await;
    let disabled =
        |reason: &str| json!({ "disabled": true, "ariaDisabled": null, "reason": reason });
    let enter = disabled("Enter a valid document to plan first.");
    expect_apply_state(&browser, enter.clone()).await;
    paste(&browser, "{\"version\": 1, \"sites\": 3}").await;
    wait_for(&browser, "#problems").await;
    expect_apply_state(&browser, enter.clone()).await;
    screenshots(&browser, "17-apply-reason").await;

    paste(&browser, &export["config"].to_string()).await;
    wait_text(&browser, "#plan-hash", |t| t.len() == 64).await;
    expect_apply_state(
        &browser,
        json!({ "disabled": false, "ariaDisabled": null, "reason": "" }),
    )
    .await;

    // Root's document against globex's export, once it is fetched: blocked.
    hold_requests(&browser, "fleet.export", json!(1500)).await;
    choose_tenant(&browser, "globex").await;
    expect_apply_state(&browser, disabled("No export to plan against yet.")).await;
    wait_for(&browser, "#plan-blocked").await;
    expect_apply_state(
        &browser,
        disabled("Blocked: fix the document before applying."),
    )
    .await;
    let errors = console_errors(&browser).await;
    assert!(errors.is_empty(), "the page logged errors: {errors:?}");
    browser.close().await;
}
