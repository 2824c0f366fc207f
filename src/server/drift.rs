//! The `fleet.drift` reconciler and `fleet.check`.
//!
//! Key `all` runs every `driftEvery`: it queues one `tenant:<id>` key per tenant with an
//! applied document, and requeues itself. A tenant key re-plans that tenant's applied document
//! (with its recorded prune, as the principal who applied it, through the server's own export
//! and `planner::plan`) in its own transaction holding the tenant's fleet lock. A non-empty call
//! list or a blocked plan is drift: the drift is recorded on `fleet_applied` and, in the same
//! transaction, `fleet.drifted` is published when this drift differs from the one recorded
//! (other changes, counted whole, whatever the planHash), `fleet.converged` when a recorded
//! drift cleared on its own. A failing tenant (a stored document that no longer validates, ...)
//! records its error on its key and in `fleet_applied.check_error` (shown by `fleet.status`),
//! and blocks no other.
//! `fleet.check` runs one tenant key now through the same reconciler path.

use super::AppState;
use super::db::Tx;
use super::db::now_ms;
use super::error::ApiError;
use super::events::{self, FLEET_CONVERGED, FLEET_DRIFTED};
use super::fleet::{self, TenantInput};
use super::iam::{Caller, FLEET_ADMIN, FLEET_SCOPE, check_name, parse};
use super::reconciler::{self, Backoff, BoxFut, Lease, Outcome, Reconciler};
use planner::{Action, Change, Plan, PlanOptions, Summary};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::Row as _;
use std::time::Duration;

/// The reconciler's name.
pub const NAME: &str = "fleet.drift";
/// The periodic key that queues every tenant.
pub const ALL: &str = "all";
/// At most this many changes are recorded and published per drift.
pub const MAX_CHANGES: usize = 50;

/// The key of one tenant's check.
pub fn tenant_key(tenant: &str) -> String {
    format!("tenant:{tenant}")
}

/// The drift as recorded in `fleet_applied.drift` and shown by `fleet.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// The changes that do something or are blocked (up to 50), as the plan has
    /// them: kind, name, action, fields with before and after, and blocked and note when
    /// blocked.
    pub changes: Vec<Change>,
    /// The plan's counts.
    pub summary: Summary,
    /// Whether some change is blocked.
    pub blocked: bool,
    /// The drift's plan hash: what applying the document now would run.
    pub plan_hash: String,
}

/// Whether a drift lists `change`: those that do something, and blocked ones even when they
/// change nothing (they are why the drift is blocked).
fn listed(change: &&Change) -> bool {
    change.action != Action::Unchanged || change.blocked
}

/// What `fleet_applied.drift` holds: the drift as `fleet.status` shows it, and the SHA-256 of
/// the JSON of every change of it, where the list shown stops at [`MAX_CHANGES`]: so that a
/// long drift seen again is known for the same one (`fleet.status` reads the drift and passes
/// over the hash).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    /// The drift.
    #[serde(flatten)]
    pub drift: Drift,
    /// Absent from what builds before it recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_hash: Option<String>,
}

impl Recorded {
    /// The drift of a plan with the hash of all its changes, `None` when the fleet matches
    /// the document.
    pub fn of(plan: &Plan) -> Option<Recorded> {
        let drift = Drift::of(plan)?;
        let all: Vec<&Change> = plan.changes.iter().filter(listed).collect();
        let json =
            serde_json::to_vec(&all).expect("changes serialize: their maps have string keys");
        Some(Recorded {
            drift,
            changes_hash: Some(planner::sha256_hex(&json)),
        })
    }

    /// Whether `self`, the drift recorded, and `now` are the same drift: the same changes, all
    /// of them (their hash), counts and blocked, whatever the planHash, whose calls carry
    /// revisions that edits the document does not speak of move. Against a drift recorded
    /// without the hash, [`Drift::same`].
    pub fn same(&self, now: &Recorded) -> bool {
        match (&self.changes_hash, &now.changes_hash) {
            (Some(before), Some(after)) => {
                before == after
                    && self.drift.summary == now.drift.summary
                    && self.drift.blocked == now.drift.blocked
            }
            _ => self.drift.same(&now.drift),
        }
    }
}

impl Drift {
    /// The drift of a plan, `None` when the fleet matches the document.
    pub fn of(plan: &Plan) -> Option<Drift> {
        if plan.calls.is_empty() && !plan.is_blocked() {
            return None;
        }
        let changes = plan
            .changes
            .iter()
            .filter(listed)
            .take(MAX_CHANGES)
            .cloned()
            .collect();
        Some(Drift {
            changes,
            summary: plan.summary,
            blocked: plan.is_blocked(),
            plan_hash: plan.plan_hash.0.clone(),
        })
    }

    /// Whether two drifts are the same one, so that `fleet.drifted` is published once per
    /// distinct drift: the same changes (fields, before and after), counts and blocked. The
    /// planHash alone is not the drift: its calls carry revisions, which an edit the document
    /// does not speak of moves (an offer to an unlisted tenant, an update to the same values),
    /// and each such edit re-published the same drift. A list of [`MAX_CHANGES`] may have been
    /// cut: then the planHash must match too. (For drifts recorded without the hash of all
    /// their changes; [`Recorded::same`] tells long drifts apart without the planHash.)
    ///
    /// A drift recorded by an older build lists its updates without their values (`before`,
    /// `after`): its changes are compared without them, and the planHash, which covers the
    /// values, must match (an upgrade re-published every tenant's unchanged drift).
    pub fn same(&self, other: &Drift) -> bool {
        let complete = self.changes.len() < MAX_CHANGES && other.changes.len() < MAX_CHANGES;
        let without_values = |d: &Drift| {
            d.changes
                .iter()
                .any(|c| c.action == Action::Update && c.before.is_none())
        };
        let same_changes = if without_values(self) || without_values(other) {
            fn bare(c: &Change) -> impl PartialEq + '_ {
                let Change {
                    kind,
                    name,
                    action,
                    fields,
                    before: _,
                    after: _,
                    blocked,
                    note,
                    reason,
                } = c;
                (*kind, name, *action, fields, *blocked, note, reason)
            }
            self.plan_hash == other.plan_hash
                && self
                    .changes
                    .iter()
                    .map(bare)
                    .eq(other.changes.iter().map(bare))
        } else {
            self.changes == other.changes
        };
        self.blocked == other.blocked
            && self.summary == other.summary
            && same_changes
            && (complete || self.plan_hash == other.plan_hash)
    }
}

/// Why one tenant's check failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The stored document is no longer valid.
    #[error("the applied document no longer validates: {0}")]
    Invalid(String),
    /// The database failed.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// Building the fleet's export failed.
    #[error("reading the fleet: {0}")]
    Export(ApiError),
    /// The run's claim of the tenant's key ran out and another worker took it (this process
    /// was paused past its lease): nothing was written.
    #[error("the check's lease ran out and another worker holds the key; nothing was written")]
    LeaseLost,
}

/// What a check found.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// The tenant has no applied document.
    NotApplied,
    /// The drift now (`None`: in line), and the event it published, if any.
    Checked {
        /// The drift.
        drift: Option<Drift>,
        /// `fleet.drifted`, `fleet.converged` or nothing.
        published: Option<&'static str>,
    },
}

/// The `fleet.drift` reconciler.
#[derive(Debug, Default)]
pub struct FleetDrift;

impl Reconciler for FleetDrift {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reconcile<'a>(
        &'a self,
        state: &'a AppState,
        key: &'a str,
        _attempt: u32,
        lease: &'a Lease,
    ) -> BoxFut<'a, Outcome> {
        Box::pin(async move {
            if key == ALL {
                return match queue_tenants(state).await {
                    Ok(n) => {
                        tracing::debug!(tenants = n, "drift pass queued");
                        Outcome::RequeueAfter(state.config.drift_every)
                    }
                    Err(err) => Outcome::Retry(err.to_string()),
                };
            }
            let Some(tenant) = key.strip_prefix("tenant:") else {
                return Outcome::Terminal(format!("unknown key {key:?}"));
            };
            match check(state, tenant, lease).await {
                Ok(_) => Outcome::Done,
                // Another worker holds the key now and checks it itself.
                Err(CheckError::LeaseLost) => Outcome::Done,
                Err(err) => {
                    tracing::warn!(tenant, error = %err, "drift check failed");
                    // Other failures were recorded in the check's own transaction.
                    if matches!(err, CheckError::Db(_))
                        && let Err(e) = record_failure(state, tenant, &err).await
                    {
                        tracing::error!(tenant, error = %e, "recording a failed drift check");
                    }
                    Outcome::Retry(err.to_string())
                }
            }
        })
    }

    fn backoff(&self, state: &AppState) -> Backoff {
        // Every pass queues every tenant again anyway; never give up on one.
        Backoff {
            base: Duration::from_secs(1),
            max: state.config.drift_every.max(Duration::from_secs(1)),
            max_attempts: None,
        }
    }
}

/// Queues the periodic key (at start; merging with a key already queued).
pub async fn start(state: &AppState) -> Result<(), sqlx::Error> {
    let mut conn = state.db.pool.acquire().await?;
    reconciler::enqueue(&mut conn, NAME, ALL, now_ms()).await?;
    state.reconcilers.notify();
    Ok(())
}

/// Queues one key per tenant with an applied document; returns how many.
async fn queue_tenants(state: &AppState) -> Result<usize, sqlx::Error> {
    let mut tx = state.db.write_tx().await?;
    let tenants = sqlx::query("SELECT tenant_id FROM fleet_applied ORDER BY tenant_id")
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| r.try_get::<String, _>(0))
        .collect::<Result<Vec<_>, _>>()?;
    let now = now_ms();
    for tenant in &tenants {
        reconciler::enqueue(&mut tx, NAME, &tenant_key(tenant), now).await?;
    }
    tx.commit().await?;
    state.reconcilers.notify();
    Ok(tenants.len())
}

/// Commits a check's writes if `lease` still holds the tenant's key (the fence): a check that
/// outlived its lease must not record a drift or publish an event beside the next holder's.
async fn commit_fenced(state: &AppState, mut tx: Tx, lease: &Lease) -> Result<(), CheckError> {
    if !lease.hold(&mut tx, state.db.backend).await? {
        tx.rollback().await?;
        return Err(CheckError::LeaseLost);
    }
    tx.commit().await?;
    Ok(())
}

/// Checks one tenant: re-plans its applied document, records the drift and publishes what
/// changed, all in one transaction, committed only while `lease` holds the tenant's key.
pub async fn check(state: &AppState, tenant: &str, lease: &Lease) -> Result<Checked, CheckError> {
    let mut tx = state.db.write_tx().await?;
    state.db.lock_tenant(&mut tx, tenant).await?;
    let Some(row) = sqlx::query(
        "SELECT document, prune, plan_hash, applied_by, drift FROM fleet_applied WHERE tenant_id = $1",
    )
    .bind(tenant)
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(Checked::NotApplied);
    };
    let document: String = row.try_get(0)?;
    let prune = row.try_get::<i64, _>(1)? != 0;
    let applied_hash: String = row.try_get(2)?;
    let applied_by: String = row.try_get(3)?;
    let previous: Option<Recorded> = row
        .try_get::<Option<String>, _>(4)?
        .and_then(|d| serde_json::from_str(&d).ok());

    let planned = match super::cpu(|| planner::validate(document.as_bytes())) {
        Ok(document) => fleet::build_export(
            &mut tx,
            state.modules,
            tenant,
            &applied_by,
            fleet::TenantScope::NamedBy(&document),
        )
        .await
        .map(|export| super::cpu(|| planner::plan(&document, &export, PlanOptions { prune })))
        .map_err(CheckError::Export),
        Err(invalid) => Err(CheckError::Invalid(
            invalid
                .problems
                .iter()
                .map(|p| format!("{}: {}", p.path, p.message))
                .collect::<Vec<_>>()
                .join("; "),
        )),
    };
    let plan = match planned {
        Ok(plan) => plan,
        Err(err) => {
            // Recorded under the lock, so it can never land on a document applied since.
            let error = json!({ "message": err.to_string(), "at": now_ms() });
            sqlx::query("UPDATE fleet_applied SET check_error = $1 WHERE tenant_id = $2")
                .bind(error.to_string())
                .bind(tenant)
                .execute(&mut *tx)
                .await?;
            commit_fenced(state, tx, lease).await?;
            return Err(err);
        }
    };
    let drift = Recorded::of(&plan);

    let subject = format!("fleet/{tenant}");
    let published = match (&previous, &drift) {
        (previous, Some(now)) if previous.as_ref().is_none_or(|p| !p.same(now)) => {
            let now = &now.drift;
            let data = json!({
                "tenantId": tenant,
                "appliedPlanHash": applied_hash,
                "planHash": now.plan_hash,
                "summary": now.summary,
                "blocked": now.blocked,
                "changes": now.changes,
            });
            events::publish(&mut tx, tenant, FLEET_DRIFTED, &subject, &data).await?;
            Some(FLEET_DRIFTED)
        }
        (Some(before), None) => {
            let data = json!({
                "tenantId": tenant,
                "appliedPlanHash": applied_hash,
                "previousPlanHash": before.drift.plan_hash,
            });
            events::publish(&mut tx, tenant, FLEET_CONVERGED, &subject, &data).await?;
            Some(FLEET_CONVERGED)
        }
        _ => None,
    };
    let drift_json = drift
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| CheckError::Export(ApiError::internal(&e)))?;
    sqlx::query(
        "UPDATE fleet_applied SET checked_at = $1, drift = $2, check_error = NULL WHERE tenant_id = $3",
    )
    .bind(now_ms())
    .bind(drift_json)
    .bind(tenant)
    .execute(&mut *tx)
    .await?;
    commit_fenced(state, tx, lease).await?;
    if published.is_some() {
        state.reconcilers.notify();
    }
    Ok(Checked::Checked {
        drift: drift.map(|recorded| recorded.drift),
        published,
    })
}

/// Records why a tenant's check failed, for `fleet.status`.
async fn record_failure(
    state: &AppState,
    tenant: &str,
    err: &CheckError,
) -> Result<(), sqlx::Error> {
    let error = json!({ "message": err.to_string(), "at": now_ms() });
    sqlx::query("UPDATE fleet_applied SET check_error = $1 WHERE tenant_id = $2")
        .bind(error.to_string())
        .bind(tenant)
        .execute(&state.db.pool)
        .await?;
    Ok(())
}

/// `fleet.check {tenantId}`: runs the tenant's drift check now (through the reconciler, as
/// its key) and answers the new `fleet.status`.
pub async fn check_http(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Value, ApiError> {
    let input: TenantInput = parse(input)?;
    let tenant = &input.tenant_id;
    caller
        .check(state, "fleet.check", tenant, FLEET_ADMIN, FLEET_SCOPE)
        .await?;
    check_name("tenantId", tenant)?;
    let mut conn = state.db.pool.acquire().await?;
    if !super::db::exists(&mut conn, "SELECT id FROM tenants WHERE id = $1", &[tenant]).await? {
        return Err(ApiError::not_found("tenant", tenant));
    }
    drop(conn);
    state
        .reconcilers
        .run_now(state, NAME, &tenant_key(tenant))
        .await?;
    let mut conn = state.db.pool.acquire().await?;
    fleet::status_of(&mut conn, tenant).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{demo, iam, reconciler::tests::test_state};
    use planner::{Change, Kind, PlanHash, Summary};
    use std::sync::Arc;

    /// What a check writes: the root tenant's recorded check and drift, and the events.
    async fn written(state: &AppState) -> (Option<i64>, Option<String>, i64) {
        let row =
            sqlx::query("SELECT checked_at, drift FROM fleet_applied WHERE tenant_id = 'root'")
                .fetch_one(&state.db.pool)
                .await
                .unwrap();
        let events: i64 = sqlx::query("SELECT COUNT(*) FROM events")
            .fetch_one(&state.db.pool)
            .await
            .unwrap()
            .get(0);
        (row.get(0), row.get(1), events)
    }

    #[test]
    fn a_drift_is_its_changes_not_its_revisions() {
        let drift = |changes: Vec<Change>, hash: &str| Drift {
            summary: Summary {
                update: changes.len(),
                ..Summary::default()
            },
            changes,
            blocked: false,
            plan_hash: hash.into(),
        };
        let one = || vec![change("a -> acme", Action::Update, None)];
        // An edit the document does not speak of moved a revision: the same drift.
        assert!(drift(one(), "h1").same(&drift(one(), "h2")));
        let other = vec![change("b -> acme", Action::Update, None)];
        assert!(!drift(one(), "h1").same(&drift(other, "h1")));
        // A list cut at MAX_CHANGES hides changes: only the planHash tells.
        let many = || {
            (0..MAX_CHANGES)
                .map(|i| change(&format!("p{i} -> acme"), Action::Update, None))
                .collect::<Vec<_>>()
        };
        assert!(drift(many(), "h1").same(&drift(many(), "h1")));
        assert!(!drift(many(), "h1").same(&drift(many(), "h2")));
        // Recorded by an older build, without the values: the same drift when the planHash,
        // which covers them, is the same.
        let old = || {
            let mut changes = one();
            changes[0].before = None;
            changes[0].after = None;
            changes
        };
        assert!(drift(old(), "h1").same(&drift(one(), "h1")));
        assert!(drift(one(), "h1").same(&drift(old(), "h1")));
        assert!(!drift(old(), "h1").same(&drift(one(), "h2")));
    }

    #[test]
    fn a_long_drift_is_all_its_changes_not_its_revisions() {
        // A plan of `n` offer updates, the last one's values `last`, with planHash `hash`.
        let plan = |n: usize, last: i64, hash: &str| {
            let mut changes: Vec<Change> = (0..n)
                .map(|i| change(&format!("p{i:02} -> acme"), Action::Update, None))
                .collect();
            changes[n - 1].after.as_mut().unwrap()["quota"]["vcpu"] = last.into();
            Plan {
                changes,
                calls: vec![planner::Call::SiteCreate(planner::calls::SiteCreate {
                    tenant_id: "root".into(),
                    idempotency_key: None,
                    kind: planner::document::SiteKind::Shared,
                    region: "r".into(),
                })],
                summary: Summary {
                    update: n,
                    ..Summary::default()
                },
                plan_hash: planner::PlanHash(hash.into()),
            }
        };
        for n in [MAX_CHANGES, MAX_CHANGES + 5] {
            let recorded = Recorded::of(&plan(n, 2, "h1")).unwrap();
            assert_eq!(recorded.drift.changes.len(), MAX_CHANGES);
            // Revisions moved (another planHash), the changes did not: the same drift.
            assert!(
                recorded.same(&Recorded::of(&plan(n, 2, "h2")).unwrap()),
                "{n}"
            );
            // A change past what the list shows differs: another drift.
            assert!(
                !recorded.same(&Recorded::of(&plan(n, 3, "h1")).unwrap()),
                "{n}"
            );
            // Stored and read back as `fleet.status` reads it, the hash passed over.
            let stored = serde_json::to_string(&recorded).unwrap();
            assert!(stored.contains("\"changesHash\""));
            let shown: Drift = serde_json::from_str(&stored).unwrap();
            assert_eq!(shown, recorded.drift);
            assert!(
                !serde_json::to_string(&shown)
                    .unwrap()
                    .contains("changesHash")
            );
            // Recorded by an older build, without the hash: the planHash decides.
            let old = Recorded {
                changes_hash: None,
                ..recorded.clone()
            };
            assert!(old.same(&Recorded::of(&plan(n, 2, "h1")).unwrap()));
            assert!(!old.same(&Recorded::of(&plan(n, 2, "h2")).unwrap()));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_check_that_outlived_its_lease_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let state = test_state(dir.path(), vec![Arc::new(FleetDrift)]).await;
        iam::bootstrap(&state.db).await.unwrap();
        // The demo applies root's document, then edits a pool by hand: a drift to find.
        demo::seed(&state).await.unwrap();
        let key = tenant_key("root");
        // A worker paused past its lease; the key has been claimed by another one since.
        sqlx::query(
            "INSERT INTO reconciler_queue (reconciler, key, due_at, attempts, claimed_by, claimed_until, generation, terminal, updated_at) \
             VALUES ($1, $2, 0, 1, 'wrk_next.0', $3, 0, 0, 0)",
        )
        .bind(NAME)
        .bind(&key)
        .bind(now_ms() + 30_000)
        .execute(&state.db.pool)
        .await
        .unwrap();
        let lease = |holder: &str| Lease {
            reconciler: NAME.into(),
            key: key.clone(),
            holder: holder.into(),
        };
        let before = written(&state).await;
        let late = check(&state, "root", &lease("wrk_paused.0")).await;
        assert!(matches!(late, Err(CheckError::LeaseLost)), "{late:?}");
        assert_eq!(written(&state).await, before, "the late check wrote");

        // The holder's check records the drift and publishes it, once.
        let checked = check(&state, "root", &lease("wrk_next.0")).await.unwrap();
        let Checked::Checked { drift, published } = checked else {
            panic!("root applied a document");
        };
        assert!(drift.is_some());
        assert_eq!(published, Some(FLEET_DRIFTED));
        let after = written(&state).await;
        assert!(after.1.is_some());
        assert_eq!(after.2, before.2 + 1);
    }

    fn change(name: &str, action: Action, note: Option<&str>) -> Change {
        // An update says what differs, as a plan's does.
        let values = |v: i64| {
            (action == Action::Update).then(|| {
                let mut map = serde_json::Map::new();
                map.insert("quota".into(), serde_json::json!({ "vcpu": v }));
                Box::new(map)
            })
        };
        Change {
            kind: Kind::Offer,
            name: name.into(),
            action,
            fields: match action {
                Action::Update => vec!["quota".into()],
                _ => Vec::new(),
            },
            before: values(1),
            after: values(2),
            blocked: note.is_some(),
            note: note.map(str::to_owned),
            reason: None,
        }
    }

    #[test]
    fn a_drift_lists_its_blocked_changes_even_unchanged_ones() {
        let plan = Plan {
            changes: vec![
                change(
                    "a -> gone",
                    Action::Unchanged,
                    Some("unknown tenant \"gone\""),
                ),
                change("b -> acme", Action::Unchanged, None),
            ],
            calls: Vec::new(),
            summary: Summary {
                unchanged: 2,
                blocked: true,
                ..Summary::default()
            },
            plan_hash: PlanHash(String::new()),
        };
        let drift = Drift::of(&plan).expect("a blocked plan is a drift");
        assert!(drift.blocked);
        let names: Vec<&str> = drift.changes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a -> gone"]);
    }
}
