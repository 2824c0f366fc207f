//! Every request the console makes: `POST /api/<method>` on the server that served the page,
//! with the session's API key as a bearer token. Nothing else in the console touches HTTP.

use planner::validate::MAX_ITEMS;
use planner::{Document, Invalid};
use serde_json::{Map, Value, json};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// An error answer of the server (`{"error": {code, message, details}}`), or a failure to
/// reach it (code `NETWORK`) or to read its answer (code `BAD_ANSWER`).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// `CONFIG_DRIFT`, `FORBIDDEN`, ...
    pub code: String,
    /// One sentence for a person.
    pub message: String,
    /// Machine-readable details (`path`, `problems`, `planHash`, ...).
    pub details: Value,
}

impl ApiError {
    fn local(code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            code: code.to_owned(),
            message: message.into(),
            details: Value::Null,
        }
    }

    fn bad_answer(method: &str) -> ApiError {
        ApiError::local("BAD_ANSWER", format!("unexpected answer to {method}"))
    }

    /// The key is unknown, or not a platform administrator's.
    pub fn is_refusal(&self) -> bool {
        self.code == "UNAUTHENTICATED" || self.code == "FORBIDDEN"
    }

    /// The server does not have this method (an older server): the feature is left out.
    pub fn is_unknown_method(&self) -> bool {
        self.code == "NOT_FOUND" && self.message.starts_with("unknown method")
    }
}

// Answers are read as a `serde_json::Value` and picked apart by hand: one JSON reader in the
// .wasm for every answer instead of a derived deserializer per type (a third of the console's
// size once).

/// `v[key]` as a string.
fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_owned)
}

/// `v[key]` as an integer; absent or null is `None`.
fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key)?.as_i64()
}

/// `v[key]` as a bool; absent is false.
fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// `v[key]` as a list of `item`s; absent is empty, any bad item makes it `None`.
fn list<T>(v: &Value, key: &str, item: impl Fn(&Value) -> Option<T>) -> Option<Vec<T>> {
    match v.get(key) {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(item).collect(),
        Some(_) => None,
    }
}

/// `v[key]` as an object, when present.
fn object(v: &Value, key: &str) -> Option<Map<String, Value>> {
    v.get(key)?.as_object().cloned()
}

/// Calls `method` with `input` as `key`: the answer's JSON.
pub async fn call(key: &str, method: &str, input: &Value) -> Result<Value, ApiError> {
    send(key, method, input.to_string()).await
}

/// The request header that asks the server for errors with status 200 (docs/contracts.md,
/// HTTP): the browser logs every answer of 400 and up as an error in its console, however the
/// page handles it (a refused sign-in, a CONFIG_DRIFT the page explains).
const ERRORS_IN_BODY: &str = "X-Better-Compute-Errors";

/// The answer's header holding the real status of an error answered with 200.
const ERROR_STATUS: &str = "X-Better-Compute-Status";

/// `fetch` of `POST /api/<method>`: the answer's status (the real one of an error answered
/// in the body), status text and body. The browser's fetch directly (no HTTP crate in the
/// .wasm).
async fn post(key: &str, method: &str, body: &str) -> Result<(u16, String, String), String> {
    let headers = web_sys::Headers::new().map_err(js_text)?;
    headers
        .set("Authorization", &format!("Bearer {key}"))
        .map_err(js_text)?;
    headers
        .set("Content-Type", "application/json")
        .map_err(js_text)?;
    headers.set(ERRORS_IN_BODY, "in-body").map_err(js_text)?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_headers(&headers);
    init.set_body(&JsValue::from_str(body));
    let window = web_sys::window().ok_or("no window")?;
    let response: web_sys::Response =
        JsFuture::from(window.fetch_with_str_and_init(&format!("/api/{method}"), &init))
            .await
            .map_err(js_text)?
            .unchecked_into();
    let text = JsFuture::from(response.text().map_err(js_text)?)
        .await
        .map_err(js_text)?
        .as_string()
        .unwrap_or_default();
    // An error answered with 200: its status is the header's, and the status text ("OK")
    // is not its.
    let real = response
        .headers()
        .get(ERROR_STATUS)
        .ok()
        .flatten()
        .and_then(|s| s.trim().parse::<u16>().ok());
    Ok(match real {
        Some(status) => (status, String::new(), text),
        None => (response.status(), response.status_text(), text),
    })
}

/// What a JavaScript error says.
fn js_text(error: JsValue) -> String {
    error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| "unknown error".to_owned())
}

/// Calls `method` with the JSON text `body` as `key`: the answer's JSON, or the error it is.
async fn send(key: &str, method: &str, body: String) -> Result<Value, ApiError> {
    let (status, status_text, text) = post(key, method, &body)
        .await
        .map_err(|e| ApiError::local("NETWORK", format!("the server did not answer: {e}")))?;
    let answer = serde_json::from_str::<Value>(&text);
    let error = answer.as_ref().ok().and_then(envelope);
    if (200..300).contains(&status) && error.is_none() {
        return answer.map_err(|e| {
            ApiError::local("BAD_ANSWER", format!("unexpected answer to {method}: {e}"))
        });
    }
    Err(error.unwrap_or_else(|| {
        let status = format!("{status} {status_text}");
        ApiError::local(
            "HTTP",
            format!("{method} answered HTTP {}", status.trim_end()),
        )
    }))
}

/// The error of an error envelope (`{"error": {code, message, details}}`, alone: a
/// `fleet.status` has an `error` of its own, next to `tenantId`, without a code).
pub fn envelope(body: &Value) -> Option<ApiError> {
    let body = body.as_object().filter(|b| b.len() == 1)?;
    let error = body.get("error")?;
    Some(ApiError {
        code: text(error, "code")?,
        message: text(error, "message")?,
        details: error.get("details").cloned().unwrap_or(Value::Null),
    })
}

/// One tenant of `tenant.list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    /// Its id (`acme`).
    pub id: String,
    /// Its display name.
    pub name: String,
}

/// `tenant.list`.
pub async fn tenant_list(key: &str) -> Result<Vec<Tenant>, ApiError> {
    let answer = call(key, "tenant.list", &json!({})).await?;
    list(&answer, "tenants", |t| {
        Some(Tenant {
            id: text(t, "id")?,
            name: text(t, "name").unwrap_or_default(),
        })
    })
    .ok_or_else(|| ApiError::bad_answer("tenant.list"))
}

/// The applied document's record in `fleet.status`.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The planHash of the apply.
    pub plan_hash: String,
    /// The principal that applied it.
    pub applied_by: String,
    /// Unix ms.
    pub applied_at: i64,
    /// Whether it was applied with prune.
    pub prune: bool,
    /// Unix ms of the last drift check, absent before the first.
    pub checked_at: Option<i64>,
}

/// One change of a plan or of a drift (a drift's changes may come without before/after).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `pool`, `ownerQuota`, ...
    pub kind: String,
    /// Its plan name.
    pub name: String,
    /// `create`, `update`, `delete` or `unchanged`.
    pub action: String,
    /// The differing fields of an update.
    pub fields: Vec<String>,
    /// The fields' applied values, when the server sends them.
    pub before: Option<Map<String, Value>>,
    /// The fields' current values, when the server sends them.
    pub after: Option<Map<String, Value>>,
    /// The change cannot be applied.
    pub blocked: bool,
    /// Why it is blocked.
    pub note: Option<String>,
}

impl Change {
    fn read(v: &Value) -> Option<Change> {
        Some(Change {
            kind: text(v, "kind")?,
            name: text(v, "name")?,
            action: text(v, "action")?,
            fields: list(v, "fields", |f| f.as_str().map(str::to_owned))?,
            before: object(v, "before"),
            after: object(v, "after"),
            blocked: flag(v, "blocked"),
            note: text(v, "note"),
        })
    }
}

impl From<&planner::Change> for Change {
    fn from(change: &planner::Change) -> Change {
        let action = match change.action {
            planner::Action::Create => "create",
            planner::Action::Update => "update",
            planner::Action::Delete => "delete",
            planner::Action::Unchanged => "unchanged",
        }
        .to_owned();
        Change {
            kind: change.kind.as_str().to_owned(),
            name: change.name.clone(),
            action,
            fields: change.fields.clone(),
            before: change.before.as_deref().cloned(),
            after: change.after.as_deref().cloned(),
            blocked: change.blocked,
            note: change.note.clone(),
        }
    }
}

/// A plan's or a drift's counts (`{create, update, delete, unchanged}`).
pub fn summary(v: &Value) -> planner::Summary {
    let count = |key| int(v, key).unwrap_or(0).max(0) as usize;
    planner::Summary {
        create: count("create"),
        update: count("update"),
        delete: count("delete"),
        unchanged: count("unchanged"),
        blocked: flag(v, "blocked"),
    }
}

/// The drift as of the last check.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// Up to 50 changes.
    pub changes: Vec<Change>,
    /// The counts.
    pub summary: planner::Summary,
    /// Some change is blocked.
    pub blocked: bool,
    /// The hash of the calls that would undo the drift.
    pub plan_hash: String,
}

/// Why the last drift check failed.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckError {
    /// What went wrong.
    pub message: String,
    /// Unix ms.
    pub at: Option<i64>,
}

/// `fleet.status` (and `fleet.check`): the seed's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The tenant.
    pub tenant_id: String,
    /// Absent when the tenant never applied a document.
    pub applied: Option<Applied>,
    /// Absent when the last check found no drift, or before the first check.
    pub drift: Option<Drift>,
    /// Why the last check failed, until one succeeds.
    pub error: Option<CheckError>,
}

impl Status {
    fn read(v: &Value) -> Option<Status> {
        let applied = match v.get("applied") {
            None | Some(Value::Null) => None,
            Some(a) => Some(Applied {
                plan_hash: text(a, "planHash")?,
                applied_by: text(a, "appliedBy")?,
                applied_at: int(a, "appliedAt")?,
                prune: flag(a, "prune"),
                checked_at: int(a, "checkedAt"),
            }),
        };
        let drift = match v.get("drift") {
            None | Some(Value::Null) => None,
            Some(d) => Some(Drift {
                changes: list(d, "changes", Change::read)?,
                summary: summary(d.get("summary")?),
                blocked: flag(d, "blocked"),
                plan_hash: text(d, "planHash").unwrap_or_default(),
            }),
        };
        let error = match v.get("error") {
            None | Some(Value::Null) => None,
            Some(e) => Some(CheckError {
                message: text(e, "message")?,
                at: int(e, "at"),
            }),
        };
        Some(Status {
            tenant_id: text(v, "tenantId")?,
            applied,
            drift,
            error,
        })
    }
}

async fn status_call(key: &str, method: &str, tenant: &str) -> Result<Status, ApiError> {
    let answer = call(key, method, &json!({ "tenantId": tenant })).await?;
    Status::read(&answer).ok_or_else(|| ApiError::bad_answer(method))
}

/// `fleet.status {tenantId}`.
pub async fn fleet_status(key: &str, tenant: &str) -> Result<Status, ApiError> {
    status_call(key, "fleet.status", tenant).await
}

/// `fleet.check {tenantId}`: checks for drift now; the new status.
pub async fn fleet_check(key: &str, tenant: &str) -> Result<Status, ApiError> {
    status_call(key, "fleet.check", tenant).await
}

/// A `fleet.export` answer: what the planner needs, and the config as the server wrote it
/// (for the download).
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The planner's state.
    pub export: planner::Export<'static>,
    /// `config`, exactly as answered.
    pub config: Value,
    /// Unix ms when it was fetched.
    pub fetched_at: f64,
}

fn section(v: &Value) -> Option<planner::Section> {
    use planner::Section;
    Some(match v.as_str()? {
        "sites" => Section::Sites,
        "providerAccounts" => Section::ProviderAccounts,
        "pools" => Section::Pools,
        "flavors" => Section::Flavors,
        "sandboxTemplates" => Section::SandboxTemplates,
        _ => return None,
    })
}

fn kind(v: &Value) -> Option<planner::Kind> {
    let kind = text(v, "kind")?;
    planner::Kind::ALL.into_iter().find(|k| k.as_str() == kind)
}

fn object_ref(v: &Value) -> Option<planner::export::ObjectRef<'static>> {
    Some(planner::export::ObjectRef {
        kind: kind(v)?,
        name: text(v, "name")?.into(),
        id: text(v, "id").map(Into::into),
        revision: v.get("revision")?.as_u64()?,
        used_by: v.get("usedBy").and_then(|u| {
            Some(Box::new(planner::export::ExternalUser {
                tenant_id: text(u, "tenantId")?.into(),
                kind: kind(u)?,
                name: text(u, "name")?.into(),
            }))
        }),
    })
}

fn offered_pool(v: &Value) -> Option<planner::export::OfferedPool<'static>> {
    Some(planner::export::OfferedPool {
        id: text(v, "id")?.into(),
        flavors: list(v, "flavors", |f| {
            Some(planner::export::OfferedFlavor {
                name: text(f, "name")?.into(),
                id: text(f, "id")?.into(),
            })
        })?,
    })
}

/// `fleet.export {tenantId}`. The config is read by `planner::validate`, the very reader
/// the server uses for documents (and one reader in the .wasm instead of two).
pub async fn fleet_export(key: &str, tenant: &str) -> Result<Exported, ApiError> {
    let answer = call(key, "fleet.export", &json!({ "tenantId": tenant })).await?;
    let (export, config) = read_export(answer)?;
    Ok(Exported {
        export,
        config,
        fetched_at: js_sys::Date::now(),
    })
}

/// Reads `fleet.export`'s answer into the planner's `Export` (what serde's derive would read,
/// without its code in the .wasm), and answers the config as received too.
pub fn read_export(mut answer: Value) -> Result<(planner::Export<'static>, Value), ApiError> {
    let bad = || ApiError::bad_answer("fleet.export");
    let config = answer.get_mut("config").map(Value::take).ok_or_else(bad)?;
    let document = read_config(&config).map_err(|invalid| {
        ApiError::local(
            "BAD_ANSWER",
            format!("the export's config is not a valid document: {invalid}"),
        )
    })?;
    let export = (|| {
        Some(planner::Export {
            tenant_id: text(&answer, "tenantId")?.into(),
            caller: text(&answer, "caller")?.into(),
            config: document,
            missing: list(&answer, "missing", section)?,
            objects: list(&answer, "objects", object_ref)?,
            tenants: list(&answer, "tenants", |t| Some(t.as_str()?.to_owned().into()))?,
            offered_pools: list(&answer, "offeredPools", offered_pool)?,
        })
    })()
    .ok_or_else(bad)?;
    Ok((export, config))
}

/// The export's lists, as a document names them.
const LISTS: [&str; 5] = [
    "sites",
    "providerAccounts",
    "pools",
    "flavors",
    "sandboxTemplates",
];

/// The export's config as the planner's `Document`, read by `planner::validate` (one JSON
/// reader in the .wasm). The export is the state, not a document: its lists may hold more
/// than a document's 1000 items (as the server's fleet.plan and the CLI's `--state` read
/// it), so a longer list is read in parts of at most 1000, put back together in order.
fn read_config(config: &Value) -> Result<Document<'static>, Invalid> {
    let longest = LISTS
        .iter()
        .filter_map(|list| Some(config.get(*list)?.as_array()?.len()))
        .max()
        .unwrap_or(0);
    let parts = longest.div_ceil(MAX_ITEMS);
    if parts < 2 {
        // Written by Value's Display, the JSON writer the console already has (to_vec would
        // be a second copy of it for another output type).
        return planner::validate(config.to_string().as_bytes()).map(Document::into_owned);
    }
    let mut whole = Document::default();
    for part in 0..parts {
        let mut piece = config.clone();
        for list in LISTS {
            if let Some(Value::Array(items)) = piece.get_mut(list) {
                items.drain(..items.len().min(part * MAX_ITEMS));
                items.truncate(MAX_ITEMS);
            }
        }
        let piece = piece.to_string();
        let document = planner::validate(piece.as_bytes())?.into_owned();
        whole.version = document.version;
        extend(&mut whole.sites, document.sites);
        extend(&mut whole.provider_accounts, document.provider_accounts);
        extend(&mut whole.pools, document.pools);
        extend(&mut whole.flavors, document.flavors);
        extend(&mut whole.sandbox_templates, document.sandbox_templates);
    }
    Ok(whole)
}

fn extend<T>(list: &mut Option<Vec<T>>, more: Option<Vec<T>>) {
    if let Some(more) = more {
        list.get_or_insert_with(Vec::new).extend(more);
    }
}

/// What `fleet.apply` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyResult {
    /// The number of calls that ran.
    pub applied: u64,
}

/// `fleet.apply {tenantId, config, prune, planHash}`. `document` is the text the page
/// validated and planned, sent as is, so the server reads the very same bytes.
pub async fn fleet_apply(
    key: &str,
    tenant: &str,
    document: &str,
    prune: bool,
    plan_hash: &str,
) -> Result<ApplyResult, ApiError> {
    let body = format!(
        r#"{{"tenantId":{},"config":{document},"prune":{prune},"planHash":{}}}"#,
        Value::from(tenant),
        Value::from(plan_hash)
    );
    let answer = send(key, "fleet.apply", body).await?;
    let applied = answer.get("applied").and_then(Value::as_u64);
    applied
        .map(|applied| ApplyResult { applied })
        .ok_or_else(|| ApiError::bad_answer("fleet.apply"))
}

/// One stored event of `event.list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `evt_...`.
    pub id: String,
    /// `fleet.drifted` or `fleet.converged`.
    pub kind: String,
    /// The event's data.
    pub data: Value,
    /// Unix ms.
    pub created_at: i64,
}

/// The tenant's recent fleet events, newest first.
pub async fn fleet_events(key: &str, tenant: &str) -> Result<Vec<Event>, ApiError> {
    let answer = call(
        key,
        "event.list",
        &json!({ "tenantId": tenant, "limit": 20 }),
    )
    .await?;
    let events = list(&answer, "items", |e| {
        Some(Event {
            id: text(e, "id")?,
            kind: text(e, "type")?,
            data: e.get("data").cloned().unwrap_or(Value::Null),
            created_at: int(e, "createdAt")?,
        })
    })
    .ok_or_else(|| ApiError::bad_answer("event.list"))?;
    Ok(events
        .into_iter()
        .filter(|e| e.kind.starts_with("fleet."))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{ApiError, envelope};
    use serde_json::json;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// An error answered with status 200 is the same error as one answered with its status;
    /// a `fleet.status` whose last check failed (an `error` without a code, next to the
    /// tenant) is no error.
    #[wasm_bindgen_test]
    fn only_the_error_envelope_is_an_error() {
        let body = json!({ "error": { "code": "CONFIG_DRIFT", "message": "the fleet moved",
                                      "details": { "planHash": "abc" } } });
        assert_eq!(
            envelope(&body),
            Some(ApiError {
                code: "CONFIG_DRIFT".to_owned(),
                message: "the fleet moved".to_owned(),
                details: json!({ "planHash": "abc" }),
            })
        );
        let status = json!({ "tenantId": "root", "error": { "message": "timeout", "at": 1 } });
        assert_eq!(envelope(&status), None);
        assert_eq!(
            envelope(&json!({ "error": { "message": "no code" } })),
            None
        );
        assert_eq!(envelope(&json!({ "applied": 1 })), None);
    }
}
