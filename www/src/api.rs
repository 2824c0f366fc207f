//! Every request the console makes: `POST /api/<method>` on the server that served the page,
//! with the session's API key as a bearer token. Nothing else in the console touches HTTP.

use gloo_net::http::Request;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// An error answer of the server (`{"error": {code, message, details}}`), or a failure to
/// reach it (code `NETWORK`) or to read its answer (code `BAD_ANSWER`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ApiError {
    /// `CONFIG_DRIFT`, `FORBIDDEN`, ...
    pub code: String,
    /// One sentence for a person.
    pub message: String,
    /// Machine-readable details (`path`, `problems`, `planHash`, ...).
    #[serde(default)]
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

    /// The key is unknown, or not a platform administrator's.
    pub fn is_refusal(&self) -> bool {
        self.code == "UNAUTHENTICATED" || self.code == "FORBIDDEN"
    }

    /// The server does not have this method (an older server): the feature is left out.
    pub fn is_unknown_method(&self) -> bool {
        self.code == "NOT_FOUND" && self.message.starts_with("unknown method")
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ApiError,
}

/// Calls `method` with `input` as `key`, and reads the answer as `T`.
pub async fn call<T: DeserializeOwned>(
    key: &str,
    method: &str,
    input: &Value,
) -> Result<T, ApiError> {
    send(key, method, input.to_string()).await
}

/// Calls `method` with the JSON text `body` as `key`, and reads the answer as `T`.
async fn send<T: DeserializeOwned>(key: &str, method: &str, body: String) -> Result<T, ApiError> {
    // Answers are read with from_slice, the reader the planner uses: one copy of the JSON
    // reader's generic code in the .wasm, not two.
    let response = Request::post(&format!("/api/{method}"))
        .header("Authorization", &format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .body(body)
        .map_err(|e| ApiError::local("BAD_REQUEST", e.to_string()))?
        .send()
        .await
        .map_err(|e| ApiError::local("NETWORK", format!("the server did not answer: {e}")))?;
    let text = response
        .text()
        .await
        .map_err(|e| ApiError::local("NETWORK", format!("the answer was cut: {e}")))?;
    if response.ok() {
        serde_json::from_slice(text.as_bytes()).map_err(|e| {
            ApiError::local("BAD_ANSWER", format!("unexpected answer to {method}: {e}"))
        })
    } else {
        Err(serde_json::from_slice::<ErrorBody>(text.as_bytes())
            .map(|body| body.error)
            .unwrap_or_else(|_| {
                ApiError::local(
                    "HTTP",
                    format!(
                        "{method} answered HTTP {} {}",
                        response.status(),
                        response.status_text()
                    ),
                )
            }))
    }
}

/// One tenant of `tenant.list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Tenant {
    /// Its id (`acme`).
    pub id: String,
    /// Its display name.
    #[serde(default)]
    pub name: String,
}

#[derive(Deserialize)]
struct Tenants {
    tenants: Vec<Tenant>,
}

/// `tenant.list`.
pub async fn tenant_list(key: &str) -> Result<Vec<Tenant>, ApiError> {
    call::<Tenants>(key, "tenant.list", &json!({}))
        .await
        .map(|t| t.tenants)
}

/// The applied document's record in `fleet.status`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    /// The planHash of the apply.
    pub plan_hash: String,
    /// The principal that applied it.
    pub applied_by: String,
    /// Unix ms.
    pub applied_at: i64,
    /// Whether it was applied with prune.
    #[serde(default)]
    pub prune: bool,
    /// Unix ms of the last drift check, absent before the first.
    #[serde(default)]
    pub checked_at: Option<i64>,
}

/// One change of a plan or of a drift (a drift's changes may come without before/after).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Change {
    /// `pool`, `ownerQuota`, ...
    pub kind: String,
    /// Its plan name.
    pub name: String,
    /// `create`, `update`, `delete` or `unchanged`.
    pub action: String,
    /// The differing fields of an update.
    #[serde(default)]
    pub fields: Vec<String>,
    /// The fields' applied values, when the server sends them.
    #[serde(default)]
    pub before: Option<serde_json::Map<String, Value>>,
    /// The fields' current values, when the server sends them.
    #[serde(default)]
    pub after: Option<serde_json::Map<String, Value>>,
    /// The change cannot be applied.
    #[serde(default)]
    pub blocked: bool,
    /// Why it is blocked.
    #[serde(default)]
    pub note: Option<String>,
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
            before: change.before.clone(),
            after: change.after.clone(),
            blocked: change.blocked,
            note: change.note.clone(),
        }
    }
}

/// The drift as of the last check.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// Up to 50 changes.
    #[serde(default)]
    pub changes: Vec<Change>,
    /// The counts.
    pub summary: planner::Summary,
    /// Some change is blocked.
    #[serde(default)]
    pub blocked: bool,
    /// The hash of the calls that would undo the drift.
    #[serde(default)]
    pub plan_hash: String,
}

/// Why the last drift check failed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CheckError {
    /// What went wrong.
    pub message: String,
    /// Unix ms.
    #[serde(default)]
    pub at: Option<i64>,
}

/// `fleet.status` (and `fleet.check`): the seed's shape.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The tenant.
    pub tenant_id: String,
    /// Absent when the tenant never applied a document.
    #[serde(default)]
    pub applied: Option<Applied>,
    /// Absent when the last check found no drift, or before the first check.
    #[serde(default)]
    pub drift: Option<Drift>,
    /// Why the last check failed, until one succeeds.
    #[serde(default)]
    pub error: Option<CheckError>,
}

/// `fleet.status {tenantId}`.
pub async fn fleet_status(key: &str, tenant: &str) -> Result<Status, ApiError> {
    call(key, "fleet.status", &json!({ "tenantId": tenant })).await
}

/// `fleet.check {tenantId}`: checks for drift now; the new status.
pub async fn fleet_check(key: &str, tenant: &str) -> Result<Status, ApiError> {
    call(key, "fleet.check", &json!({ "tenantId": tenant })).await
}

/// A `fleet.export` answer: what the planner needs, and the config as the server wrote it
/// (for the download).
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The planner's state.
    pub export: planner::Export,
    /// `config`, exactly as answered.
    pub config: Value,
    /// Unix ms when it was fetched.
    pub fetched_at: f64,
}

/// The parts of a `fleet.export` answer besides `config`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExportParts {
    tenant_id: String,
    caller: String,
    config: Value,
    #[serde(default)]
    missing: Vec<planner::Section>,
    #[serde(default)]
    objects: Vec<planner::export::ObjectRef>,
    #[serde(default)]
    tenants: Vec<String>,
    #[serde(default)]
    offered_pools: Vec<planner::export::OfferedPool>,
}

/// `fleet.export {tenantId}`. The config is read by `planner::validate`, the very reader
/// the server uses for documents (and one reader in the .wasm instead of two).
pub async fn fleet_export(key: &str, tenant: &str) -> Result<Exported, ApiError> {
    let parts: ExportParts = call(key, "fleet.export", &json!({ "tenantId": tenant })).await?;
    let bytes = serde_json::to_vec(&parts.config).unwrap_or_default();
    let document = planner::validate(&bytes).map_err(|invalid| {
        ApiError::local(
            "BAD_ANSWER",
            format!("the export's config is not a valid document: {invalid}"),
        )
    })?;
    Ok(Exported {
        export: planner::Export {
            tenant_id: parts.tenant_id,
            caller: parts.caller,
            config: document,
            missing: parts.missing,
            objects: parts.objects,
            tenants: parts.tenants,
            offered_pools: parts.offered_pools,
        },
        config: parts.config,
        fetched_at: js_sys::Date::now(),
    })
}

/// What `fleet.apply` answers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    send(key, "fleet.apply", body).await
}

/// One stored event of `event.list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `evt_...`.
    pub id: String,
    /// `fleet.drifted` or `fleet.converged`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's data.
    #[serde(default)]
    pub data: Value,
    /// Unix ms.
    pub created_at: i64,
}

#[derive(Deserialize)]
struct Events {
    items: Vec<Event>,
}

/// The tenant's recent fleet events, newest first.
pub async fn fleet_events(key: &str, tenant: &str) -> Result<Vec<Event>, ApiError> {
    let events: Events = call(
        key,
        "event.list",
        &json!({ "tenantId": tenant, "limit": 20 }),
    )
    .await?;
    Ok(events
        .items
        .into_iter()
        .filter(|e| e.kind.starts_with("fleet."))
        .collect())
}
