//! Events: the outbox. An event is written in the transaction that makes the change it
//! describes, together with one pending delivery per subscribed webhook (and that delivery's
//! reconciler key), so an event is never lost nor published for a change that rolled back.
//! `event.list` reads them back, newest first.

use super::AppState;
use super::api::Items;
use super::db::{new_id, now_ms};
use super::error::ApiError;
use super::iam::{Caller, parse};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{AnyConnection, Row as _};

/// Published when a tenant's fleet no longer matches its applied document.
pub const FLEET_DRIFTED: &str = "fleet.drifted";
/// Published when a drift clears on its own.
pub const FLEET_CONVERGED: &str = "fleet.converged";
/// Every event type, which webhooks may subscribe to.
pub const TYPES: &[&str] = &[FLEET_DRIFTED, FLEET_CONVERGED];
/// The permission `event.list` decides on the tenant's scope.
pub const READ: &str = "events:event:read";

/// One stored event, as `event.list` answers it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `evt_...`; also the `webhook-id` of its deliveries.
    pub id: String,
    /// The tenant it belongs to.
    pub tenant_id: String,
    /// `fleet.drifted` or `fleet.converged`.
    #[serde(rename = "type")]
    #[schemars(extend("enum" = TYPES))]
    pub kind: String,
    /// `fleet/<tenant>`.
    pub subject: String,
    /// The event's data, by its type.
    #[schemars(with = "EventData")]
    pub data: Value,
    /// Unix ms.
    pub created_at: i64,
}

impl Event {
    /// The webhook body: `{id, type, subject, timestamp, data}` (the Standard Webhooks
    /// payload shape, with `timestamp` in RFC 3339). The same bytes on every attempt.
    pub fn body(&self) -> String {
        let at = std::time::UNIX_EPOCH
            + std::time::Duration::from_millis(u64::try_from(self.created_at).unwrap_or(0));
        json!({
            "id": self.id,
            "type": self.kind,
            "subject": self.subject,
            "timestamp": humantime::format_rfc3339_millis(at).to_string(),
            "data": self.data,
        })
        .to_string()
    }
}

/// The data of an event, as the drift check writes it (stored as JSON, and answered as
/// stored: this states its shape; a test checks real events against it).
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum EventData {
    Drifted(DriftedData),
    Converged(ConvergedData),
}

/// `fleet.drifted`: the drift as `fleet.status` has it.
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct DriftedData {
    /// The tenant.
    tenant_id: String,
    /// The plan hash of the document applied.
    applied_plan_hash: String,
    /// The drift's plan hash: what applying the document now would run.
    plan_hash: String,
    /// The plan's counts.
    summary: planner::Summary,
    /// Whether some change is blocked.
    blocked: bool,
    /// The changes (up to 50), as the plan has them.
    changes: Vec<planner::Change>,
}

/// `fleet.converged`: the fleet matches the applied document again.
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct ConvergedData {
    /// The tenant.
    tenant_id: String,
    /// The plan hash of the document applied.
    applied_plan_hash: String,
    /// The plan hash of the drift that cleared.
    previous_plan_hash: String,
}

/// Writes an event and its deliveries on `conn` (inside the caller's transaction); returns
/// its id. After the commit, call `state.reconcilers.notify()` to deliver it at once.
pub async fn publish(
    conn: &mut AnyConnection,
    tenant: &str,
    kind: &str,
    subject: &str,
    data: &Value,
) -> Result<String, sqlx::Error> {
    let id = new_id("evt");
    sqlx::query(
        "INSERT INTO events (id, tenant_id, type, subject, payload, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id)
    .bind(tenant)
    .bind(kind)
    .bind(subject)
    .bind(data.to_string())
    .bind(now_ms())
    .execute(&mut *conn)
    .await?;
    tracing::info!(event = %id, tenant, r#type = kind, subject, "event published");
    super::webhooks::fan_out(conn, tenant, &id, kind).await?;
    Ok(id)
}

/// Reads one event.
pub async fn load(conn: &mut AnyConnection, id: &str) -> Result<Option<Event>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT id, tenant_id, type, subject, payload, created_at FROM events WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?;
    row.map(|r| from_row(&r)).transpose()
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<Event, sqlx::Error> {
    let payload: String = r.try_get(4)?;
    Ok(Event {
        id: r.try_get(0)?,
        tenant_id: r.try_get(1)?,
        kind: r.try_get(2)?,
        subject: r.try_get(3)?,
        data: serde_json::from_str(&payload).unwrap_or(Value::Null),
        created_at: r.try_get(5)?,
    })
}

/// Input of `event.list`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventList {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// Only events of this type: `fleet.drifted` or `fleet.converged` (another is
    /// INVALID_INPUT, as in `webhook.create`).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// At most this many, newest first (default 100, at most 1000).
    #[serde(default, deserialize_with = "super::numbers::optional_u32")]
    #[schemars(with = "Option<u32>")]
    pub limit: Option<u32>,
    /// Only events older than this one: the last `id` of the page read before (ids sort as
    /// the events were written).
    #[serde(default)]
    pub before: Option<String>,
}

/// `event.list`: decides `events:event:read` on the tenant's scope; newest first.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Items<Event>, ApiError> {
    let input: EventList = parse(input)?;
    caller
        .check_tenant(state, "event.list", &input.tenant_id, READ)
        .await?;
    super::iam::require_tenant(&mut *state.db.pool.acquire().await?, &input.tenant_id).await?;
    let limit = i64::from(input.limit.unwrap_or(100).min(1000));
    // An empty type is no type either (`?type=` must not read as "every type").
    let kind = match input.kind {
        None => String::new(),
        Some(kind) if TYPES.contains(&kind.as_str()) => kind,
        Some(kind) => {
            return Err(ApiError::invalid(
                "type",
                format!("unknown event type {kind:?} (known: {})", TYPES.join(", ")),
            ));
        }
    };
    let before = input.before.unwrap_or_default();
    let rows = sqlx::query(
        "SELECT id, tenant_id, type, subject, payload, created_at FROM events \
         WHERE tenant_id = $1 AND ($2 = '' OR type = $2) AND ($4 = '' OR id < $4) \
         ORDER BY id DESC LIMIT $3",
    )
    .bind(&input.tenant_id)
    .bind(&kind)
    .bind(limit)
    .bind(&before)
    .fetch_all(&state.db.pool)
    .await?;
    let items = rows.iter().map(from_row).collect::<Result<Vec<_>, _>>()?;
    Ok(Items { items })
}

/// The reconciler that deletes old events: one key, [`RETENTION_KEY`], queued at start and
/// run again every hour.
pub const RETENTION: &str = "events.retention";
/// The retention reconciler's one key.
pub const RETENTION_KEY: &str = "sweep";
/// How long an event is kept when `BETTER_COMPUTE_EVENT_RETENTION_DAYS` is not set.
pub const DEFAULT_RETENTION_DAYS: u64 = 30;

/// How long events are kept: `BETTER_COMPUTE_EVENT_RETENTION_DAYS` (whole days; `off` keeps
/// them forever). An unreadable value keeps the default and says so in the log.
pub fn retention_from_env() -> Option<std::time::Duration> {
    retention(
        std::env::var("BETTER_COMPUTE_EVENT_RETENTION_DAYS")
            .ok()
            .as_deref(),
    )
}

/// [`retention_from_env`] of the variable's value.
fn retention(value: Option<&str>) -> Option<std::time::Duration> {
    let days = match value.map(str::trim) {
        None => DEFAULT_RETENTION_DAYS,
        Some("off") => return None,
        Some(v) => v.parse().unwrap_or_else(|_| {
            tracing::warn!(value = %v, "BETTER_COMPUTE_EVENT_RETENTION_DAYS is not a number of days or off; keeping {DEFAULT_RETENTION_DAYS}");
            DEFAULT_RETENTION_DAYS
        }),
    };
    // Saturating: a huge count of days wrapped around to minutes, and the sweep deleted
    // recent events; saturated, it keeps them (about) forever, as asked.
    Some(std::time::Duration::from_secs(days.saturating_mul(86_400)))
}

/// The events [`prune`] deletes (created before `$1`, no delivery pending), named once for
/// its three deletes.
const OLD: &str = "SELECT e.id FROM events e WHERE e.created_at < $1 AND NOT EXISTS \
     (SELECT 1 FROM webhook_deliveries p WHERE p.event_id = e.id AND p.status = 'pending')";

/// Deletes the events created before `before` (unix ms) whose deliveries are all settled,
/// with those deliveries and their attempts, in one transaction; returns how many events
/// went. An event with a pending delivery stays until that delivery settles.
pub async fn prune(state: &AppState, before: i64) -> Result<u64, sqlx::Error> {
    // It writes: SQLite's write lock at once, as every writer takes it.
    let mut tx = state.db.write_tx().await?;
    for table in ["webhook_attempts", "webhook_deliveries"] {
        sqlx::query(&format!("DELETE FROM {table} WHERE event_id IN ({OLD})"))
            .bind(before)
            .execute(&mut *tx)
            .await?;
    }
    let gone = sqlx::query(&format!("DELETE FROM events WHERE id IN ({OLD})"))
        .bind(before)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(gone)
}

/// The [`RETENTION`] reconciler.
#[derive(Debug, Default)]
pub struct Retention;

impl super::reconciler::Reconciler for Retention {
    fn name(&self) -> &'static str {
        RETENTION
    }

    fn reconcile<'a>(
        &'a self,
        state: &'a AppState,
        _key: &'a str,
        _attempt: u32,
        _lease: &'a super::reconciler::Lease,
    ) -> super::reconciler::BoxFut<'a, super::reconciler::Outcome> {
        use super::reconciler::Outcome;
        const EVERY: std::time::Duration = std::time::Duration::from_secs(3600);
        Box::pin(async move {
            let Some(keep) = state.config.event_retention else {
                return Outcome::RequeueAfter(EVERY);
            };
            let before = now_ms() - i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
            match prune(state, before).await {
                Ok(gone) => {
                    if gone > 0 {
                        tracing::info!(events = gone, "old events deleted");
                    }
                    Outcome::RequeueAfter(EVERY)
                }
                Err(err) => Outcome::Retry(err.to_string()),
            }
        })
    }
}

/// Queues the retention key (at start; merging with a key already queued).
pub async fn start(state: &AppState) -> Result<(), sqlx::Error> {
    let mut conn = state.db.pool.acquire().await?;
    super::reconciler::enqueue(&mut conn, RETENTION, RETENTION_KEY, now_ms()).await?;
    state.reconcilers.notify();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{DEFAULT_RETENTION_DAYS, OLD, retention};
    use std::time::Duration;

    #[test]
    fn retention_reads_days_off_and_huge_counts() {
        let days = |d: u64| Some(Duration::from_secs(d * 86_400));
        assert_eq!(retention(None), days(DEFAULT_RETENTION_DAYS));
        assert_eq!(retention(Some(" 7 ")), days(7));
        assert_eq!(retention(Some("off")), None);
        assert_eq!(retention(Some("soon")), days(DEFAULT_RETENTION_DAYS));
        // 94368760191893771 days times 86,400 seconds wraps to 128 seconds in u64.
        let huge = retention(Some("94368760191893771")).unwrap();
        assert!(huge > Duration::from_secs(1 << 60), "{huge:?}");
    }
    use crate::server::db::{Db, Modules};
    use sqlx::Row as _;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_retention_sweep_finds_deliveries_by_event() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("e.db").display());
        let modules = Modules {
            vps: true,
            sandboxes: true,
        };
        let db = Db::open(&url, modules).await.unwrap();
        for table in ["events", "webhook_deliveries", "webhook_attempts"] {
            let sql = format!("EXPLAIN QUERY PLAN DELETE FROM {table} WHERE event_id IN ({OLD})");
            let sql = sql.replace("FROM events WHERE event_id", "FROM events WHERE id");
            let plan: Vec<String> = sqlx::query(&sql)
                .bind(0_i64)
                .fetch_all(&db.pool)
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(3))
                .collect();
            // Per old event, its pending deliveries are looked up, not every delivery read.
            assert!(
                plan.iter()
                    .any(|d| d == "SEARCH p USING INDEX webhook_deliveries_by_event (event_id=?)"),
                "{table}: {plan:?}"
            );
            assert!(
                !plan.iter().any(|d| d.starts_with("SCAN p")),
                "{table}: {plan:?}"
            );
        }
    }
}
