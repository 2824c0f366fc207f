//! The reconciler framework: named reconcilers, string keys, one durable queue.
//!
//! Work is a row of `reconciler_queue (reconciler, key)`: queuing a key that is already queued
//! merges into that row (the earlier due time wins), so a key is never queued twice. Workers
//! claim due keys by writing a lease (`claimed_by`, `claimed_until`) and extend it while they
//! work; on PostgreSQL the claim takes its rows with `FOR UPDATE SKIP LOCKED`, so several
//! server processes share the keys without ever taking the same one; on SQLite the one process
//! claims in one write transaction. A key whose lease runs out (its process died mid-key) is
//! claimable again. A claim needs no live lease, so a worker paused past its lease (a frozen VM)
//! may still be running when the next one claims the key: each claim therefore holds a token of
//! its own ([`Lease`]), and a run whose effects must not land twice commits them only while its
//! token is still the key's ([`Lease::hold`], the fence), so of two overlapping runs at most the
//! current holder's writes commit (docs/drift.md).
//!
//! A run ends in an [`Outcome`]: done (the row goes), requeue after a delay, retry after an
//! error (exponential backoff with a jitter derived from the key and attempt, so it spreads
//! keys yet is reproducible), or terminal (kept with its error, never claimed until queued
//! again). A panic is caught (each run is its own task), counted, and retried like an error.
//! Queuing takes any connection, so a key can be queued in the transaction that makes the work
//! (an outbox); [`Runtime::notify`] wakes this process's dispatcher after such a commit.

use super::AppState;
use super::db::{Backend, now_ms};
use sha2::{Digest as _, Sha256};
use sqlx::{AnyConnection, Row as _};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tracing::Instrument as _;

/// The future a reconciler returns.
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The due time of a claimed key: far in the future, so that queuing the key while it is being
/// worked (which keeps the earlier due time) records the new request's due time instead.
const CLAIMED_DUE: i64 = 9_000_000_000_000_000;

/// How one run of a key ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing left to do: the key leaves the queue (unless it was queued again meanwhile).
    Done,
    /// Run the key again after this long (a periodic key).
    RequeueAfter(Duration),
    /// It failed; retry after the reconciler's backoff. The error stays on the key.
    Retry(String),
    /// It failed for good: kept with its error, not claimed again until queued again.
    Terminal(String),
}

/// Retry timing of a reconciler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The delay after the first failure.
    pub base: Duration,
    /// The longest delay.
    pub max: Duration,
    /// After this many failed attempts in a row the key becomes terminal (`None`: never).
    pub max_attempts: Option<u32>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(300),
            max_attempts: Some(25),
        }
    }
}

impl Backoff {
    /// The delay before attempt `attempts + 1` of `key`: `base * 2^(attempts-1)` capped at
    /// `max`, times a factor in [0.5, 1) taken from a hash of the reconciler, key and attempt
    /// (keys failing together spread out, and the same failure waits the same).
    pub fn delay(&self, reconciler: &str, key: &str, attempts: u32) -> Duration {
        let exp = attempts.saturating_sub(1).min(30);
        let raw = self.base.saturating_mul(1u32 << exp.min(31)).min(self.max);
        let digest = Sha256::digest(format!("{reconciler}\n{key}\n{attempts}").as_bytes());
        let mut eight = [0u8; 8];
        eight.copy_from_slice(&digest[..8]);
        let unit = (u64::from_be_bytes(eight) >> 11) as f64 / (1u64 << 53) as f64;
        raw.mul_f64(0.5 + unit / 2.0)
    }
}

/// A named reconciler: it brings the world in line for one key at a time.
pub trait Reconciler: Send + Sync + 'static {
    /// Its name, the queue's `reconciler` column (`fleet.drift`).
    fn name(&self) -> &'static str;
    /// Works one key. `attempt` counts from 1 and grows while runs fail. `lease` is this run's
    /// claim of the key: a run fences its writes with [`Lease::hold`] when running them twice
    /// would matter.
    fn reconcile<'a>(
        &'a self,
        state: &'a AppState,
        key: &'a str,
        attempt: u32,
        lease: &'a Lease,
    ) -> BoxFut<'a, Outcome>;
    /// Its retry timing.
    fn backoff(&self, _state: &AppState) -> Backoff {
        Backoff::default()
    }
}

/// Counters of this process's runs (for logs and tests).
#[derive(Debug, Default)]
pub struct Stats {
    /// Runs that ended done.
    pub done: AtomicU64,
    /// Runs that requeued themselves.
    pub requeued: AtomicU64,
    /// Runs that failed and will be retried.
    pub retried: AtomicU64,
    /// Runs that failed for good.
    pub terminal: AtomicU64,
    /// Runs that panicked (also counted as retried or terminal).
    pub panics: AtomicU64,
}

/// Failure of [`Runtime::run_now`].
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No reconciler of that name.
    #[error("no reconciler named {0:?}")]
    Unknown(String),
    /// Another worker kept the key past the deadline.
    #[error("the key {key:?} of {reconciler} is being worked elsewhere; try again")]
    Busy {
        /// The reconciler.
        reconciler: String,
        /// The key.
        key: String,
    },
    /// The database failed.
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl From<RunError> for super::error::ApiError {
    fn from(err: RunError) -> Self {
        match err {
            RunError::Busy { .. } => {
                super::error::ApiError::new(super::error::Code::Conflict, err.to_string())
            }
            other => super::error::ApiError::internal(&other),
        }
    }
}

/// One run of a key by this process (kept for `reconciler.status`).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ReconcilerRun")]
pub struct Run {
    /// The reconciler.
    pub reconciler: String,
    /// The key.
    pub key: String,
    /// The attempt.
    pub attempt: u32,
    /// When the run started (Unix ms, after the claim).
    pub started_at: i64,
    /// When it ended (before its outcome is recorded).
    pub ended_at: i64,
    /// `done`, `requeue`, `retry` or `terminal`.
    #[schemars(extend("enum" = ["done", "requeue", "retry", "terminal"]))]
    pub outcome: &'static str,
}

/// How many runs [`Runtime::runs`] keeps.
const KEPT_RUNS: usize = 10_000;

/// A key this process holds.
#[derive(Debug, Clone)]
struct Claim {
    lease: Lease,
    attempts: u32,
    generation: i64,
}

/// One claim of one key: the token written in `claimed_by` (the worker's id and a number of
/// its own, so two claims of a key are told apart even within one process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The reconciler.
    pub reconciler: String,
    /// The key.
    pub key: String,
    /// The claim's token (`claimed_by`).
    pub holder: String,
}

impl Lease {
    /// Whether this claim still holds its key, asked inside the transaction of the run's
    /// writes just before it commits: the fence. On PostgreSQL the queue row stays locked
    /// until that commit, so no claim can take the key between the answer and the commit; on
    /// SQLite the write transaction already excludes every other writer.
    pub async fn hold(
        &self,
        conn: &mut AnyConnection,
        backend: Backend,
    ) -> Result<bool, sqlx::Error> {
        let lock = match backend {
            Backend::Postgres => " FOR UPDATE",
            Backend::Sqlite => "",
        };
        let row = sqlx::query(&format!(
            "SELECT 1 FROM reconciler_queue WHERE reconciler = $1 AND key = $2 AND claimed_by = $3{lock}"
        ))
        .bind(&self.reconciler)
        .bind(&self.key)
        .bind(&self.holder)
        .fetch_optional(conn)
        .await?;
        Ok(row.is_some())
    }
}

/// The reconcilers of a process and what their workers share.
pub struct Runtime {
    worker_id: String,
    /// Claims made by this process, numbering their tokens.
    claims: AtomicU64,
    reconcilers: Vec<Arc<dyn Reconciler>>,
    notify: Notify,
    /// This process's counters.
    pub stats: Stats,
    lease: Duration,
    concurrency: usize,
    delay: Duration,
    runs: std::sync::Mutex<std::collections::VecDeque<Run>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("worker_id", &self.worker_id)
            .field(
                "reconcilers",
                &self
                    .reconcilers
                    .iter()
                    .map(|r| r.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Queues `key` of `reconciler`, due at `due_at` (Unix ms), on `conn` (which may be inside a
/// transaction). An existing row keeps the earlier due time; a terminal one starts over.
pub async fn enqueue(
    conn: &mut AnyConnection,
    reconciler: &str,
    key: &str,
    due_at: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO reconciler_queue (reconciler, key, due_at, attempts, generation, terminal, updated_at) \
         VALUES ($1, $2, $3, 0, 0, 0, $4) \
         ON CONFLICT (reconciler, key) DO UPDATE SET \
         due_at = CASE WHEN reconciler_queue.terminal = 1 OR excluded.due_at < reconciler_queue.due_at \
                  THEN excluded.due_at ELSE reconciler_queue.due_at END, \
         attempts = CASE WHEN reconciler_queue.terminal = 1 THEN 0 ELSE reconciler_queue.attempts END, \
         terminal = 0, generation = reconciler_queue.generation + 1, updated_at = excluded.updated_at",
    )
    .bind(reconciler)
    .bind(key)
    .bind(due_at)
    .bind(now_ms())
    .execute(conn)
    .await?;
    Ok(())
}

/// When a key of a reconciler this process does not run is due again (see [`Runtime::work`]).
const FOREIGN_KEY_BACK: Duration = Duration::from_secs(60);

/// The claim of [`Runtime::claim`]: `$1` worker, `$2` lease end, `$3` now, `$4` how many.
/// It claims keys of every reconciler: filtering by this process's (an A/B in one sitting:
/// PostgreSQL's drift pass over 10,000 tenants 20-24 s against 15-17 s without) cost more
/// than a key of another version's reconciler, which [`Runtime::work`] hands back.
fn claim_sql(backend: Backend) -> String {
    let lock = match backend {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    let due = "((claimed_until IS NULL AND due_at <= $3) OR claimed_until < $3)";
    // The outer check's `+terminal` (a no-op on the value) keeps SQLite from driving the
    // update off `reconciler_queue_due`, which meant visiting every queued key on every claim
    // (a drift pass queues one per tenant: 2 ms a claim at 10,000); the keys come from the
    // subquery and are found by primary key.
    format!(
        "UPDATE reconciler_queue SET claimed_by = $1, claimed_until = $2, due_at = {CLAIMED_DUE}, \
         attempts = attempts + 1, updated_at = $3 \
         WHERE +terminal = 0 AND {due} AND (reconciler, key) IN \
         (SELECT reconciler, key FROM reconciler_queue WHERE terminal = 0 AND {due} \
         ORDER BY due_at LIMIT $4{lock}) \
         RETURNING reconciler, key, attempts, generation"
    )
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

impl Runtime {
    /// A runtime for `reconcilers`, with a fresh worker id. Variables for tests of the queue
    /// itself: `BETTER_COMPUTE_RECONCILER_LEASE_MS` (the lease, 30 s by default),
    /// `BETTER_COMPUTE_RECONCILER_DELAY_MS` (a pause inside every run, holding the key) and
    /// `BETTER_COMPUTE_RECONCILER_CONCURRENCY` (keys worked at once, 8 by default).
    pub fn new(reconcilers: Vec<Arc<dyn Reconciler>>) -> Runtime {
        let ms = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .map(Duration::from_millis)
        };
        Runtime {
            worker_id: super::db::new_id("wrk"),
            claims: AtomicU64::new(0),
            reconcilers,
            notify: Notify::new(),
            stats: Stats::default(),
            lease: ms("BETTER_COMPUTE_RECONCILER_LEASE_MS")
                .filter(|d| *d >= Duration::from_millis(30))
                .unwrap_or(Duration::from_secs(30)),
            concurrency: std::env::var("BETTER_COMPUTE_RECONCILER_CONCURRENCY")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|n| *n > 0)
                .unwrap_or(8),
            delay: ms("BETTER_COMPUTE_RECONCILER_DELAY_MS").unwrap_or_default(),
            runs: std::sync::Mutex::new(std::collections::VecDeque::new()),
        }
    }

    /// The last runs of this process, oldest first.
    pub fn runs(&self) -> Vec<Run> {
        self.runs
            .lock()
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn record_run(&self, run: Run) {
        if let Ok(mut runs) = self.runs.lock() {
            if runs.len() == KEPT_RUNS {
                runs.pop_front();
            }
            runs.push_back(run);
        }
    }

    /// This process's worker id (written in `claimed_by`).
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// Wakes this process's dispatcher: call after committing a transaction that queued keys.
    pub fn notify(&self) {
        self.notify.notify_one();
    }

    fn find(&self, name: &str) -> Option<Arc<dyn Reconciler>> {
        self.reconcilers.iter().find(|r| r.name() == name).cloned()
    }

    /// A token for the next claim: the worker's id and the claim's number. One token serves
    /// every key of one claim: two claims of a key are always two claims.
    fn next_holder(&self) -> String {
        let n = self.claims.fetch_add(1, Ordering::Relaxed);
        format!("{}.{n}", self.worker_id)
    }

    /// Claims up to `limit` due keys (and keys whose lease ran out).
    async fn claim(&self, state: &AppState, limit: usize) -> Result<Vec<Claim>, sqlx::Error> {
        let now = now_ms();
        let sql = claim_sql(state.db.backend);
        let holder = self.next_holder();
        let mut tx = state.db.write_tx().await?;
        let rows = sqlx::query(&sql)
            .bind(&holder)
            .bind(now + millis(self.lease))
            .bind(now)
            .bind(i64::try_from(limit).unwrap_or(1))
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        rows.iter()
            .map(|r| {
                Ok(Claim {
                    lease: Lease {
                        reconciler: r.try_get(0)?,
                        key: r.try_get(1)?,
                        holder: holder.clone(),
                    },
                    attempts: u32::try_from(r.try_get::<i64, _>(2)?).unwrap_or(u32::MAX),
                    generation: r.try_get(3)?,
                })
            })
            .collect()
    }

    /// Claims one key now, queuing it if needed; `None` while another worker holds it.
    async fn claim_key(
        &self,
        state: &AppState,
        reconciler: &str,
        key: &str,
    ) -> Result<Option<Claim>, sqlx::Error> {
        let now = now_ms();
        let holder = self.next_holder();
        let mut tx = state.db.write_tx().await?;
        let row = sqlx::query(&format!(
            "INSERT INTO reconciler_queue (reconciler, key, due_at, attempts, claimed_by, claimed_until, generation, terminal, updated_at) \
             VALUES ($1, $2, {CLAIMED_DUE}, 1, $3, $4, 0, 0, $5) \
             ON CONFLICT (reconciler, key) DO UPDATE SET claimed_by = excluded.claimed_by, \
             claimed_until = excluded.claimed_until, due_at = {CLAIMED_DUE}, \
             attempts = CASE WHEN reconciler_queue.terminal = 1 THEN 1 ELSE reconciler_queue.attempts + 1 END, \
             terminal = 0, updated_at = excluded.updated_at \
             WHERE reconciler_queue.claimed_until IS NULL OR reconciler_queue.claimed_until < $5 \
             RETURNING attempts, generation"
        ))
        .bind(reconciler)
        .bind(key)
        .bind(&holder)
        .bind(now + millis(self.lease))
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        row.map(|r| {
            Ok(Claim {
                lease: Lease {
                    reconciler: reconciler.to_string(),
                    key: key.to_string(),
                    holder,
                },
                attempts: u32::try_from(r.try_get::<i64, _>(0)?).unwrap_or(u32::MAX),
                generation: r.try_get(1)?,
            })
        })
        .transpose()
    }

    /// Extends the lease of a key this worker holds.
    async fn heartbeat(&self, state: &AppState, claim: &Claim) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE reconciler_queue SET claimed_until = $1 \
             WHERE reconciler = $2 AND key = $3 AND claimed_by = $4",
        )
        .bind(now_ms() + millis(self.lease))
        .bind(&claim.lease.reconciler)
        .bind(&claim.lease.key)
        .bind(&claim.lease.holder)
        .execute(&state.db.pool)
        .await?;
        Ok(())
    }

    /// Records a run's outcome on its key, if this worker still holds it.
    async fn finish(
        &self,
        state: &AppState,
        claim: &Claim,
        backoff: Backoff,
        outcome: &Outcome,
    ) -> Result<(), sqlx::Error> {
        let now = now_ms();
        let mut tx = state.db.write_tx().await?;
        let Lease {
            reconciler,
            key,
            holder: me,
        } = &claim.lease;
        let release = "claimed_by = NULL, claimed_until = NULL";
        let terminal = match outcome {
            Outcome::Retry(_) => backoff.max_attempts.is_some_and(|m| claim.attempts >= m),
            Outcome::Terminal(_) => true,
            _ => false,
        };
        match outcome {
            Outcome::Done => {
                let gone = sqlx::query(
                    "DELETE FROM reconciler_queue WHERE reconciler = $1 AND key = $2 \
                     AND claimed_by = $3 AND generation = $4",
                )
                .bind(reconciler)
                .bind(key)
                .bind(me)
                .bind(claim.generation)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if gone == 0 {
                    // Queued again while it ran: it stays, due when that request said.
                    sqlx::query(&format!(
                        "UPDATE reconciler_queue SET {release}, attempts = 0, last_error = NULL, updated_at = $4 \
                         WHERE reconciler = $1 AND key = $2 AND claimed_by = $3"
                    ))
                    .bind(reconciler)
                    .bind(key)
                    .bind(me)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
            }
            Outcome::RequeueAfter(_) | Outcome::Retry(_) if !terminal => {
                let (due, attempts, error) = match outcome {
                    Outcome::RequeueAfter(d) => (now + millis(*d), Some(0), None),
                    Outcome::Retry(e) => (
                        now + millis(backoff.delay(reconciler, key, claim.attempts)),
                        None,
                        Some(e.as_str()),
                    ),
                    _ => unreachable!("matched above"),
                };
                sqlx::query(&format!(
                    "UPDATE reconciler_queue SET {release}, \
                     due_at = CASE WHEN due_at < $1 THEN due_at ELSE $1 END, \
                     attempts = COALESCE($2, attempts), last_error = $3, updated_at = $4 \
                     WHERE reconciler = $5 AND key = $6 AND claimed_by = $7"
                ))
                .bind(due)
                .bind(attempts)
                .bind(error)
                .bind(now)
                .bind(reconciler)
                .bind(key)
                .bind(me)
                .execute(&mut *tx)
                .await?;
            }
            Outcome::RequeueAfter(_) | Outcome::Retry(_) | Outcome::Terminal(_) => {
                let error = match outcome {
                    Outcome::Retry(e) | Outcome::Terminal(e) => e.clone(),
                    _ => String::new(),
                };
                // Terminal, unless it was queued again while it ran: then it starts over.
                sqlx::query(&format!(
                    "UPDATE reconciler_queue SET {release}, last_error = $1, updated_at = $2, \
                     terminal = CASE WHEN generation = $3 THEN 1 ELSE 0 END, \
                     attempts = CASE WHEN generation = $3 THEN attempts ELSE 0 END, \
                     due_at = CASE WHEN generation = $3 THEN $2 ELSE due_at END \
                     WHERE reconciler = $4 AND key = $5 AND claimed_by = $6"
                ))
                .bind(error)
                .bind(now)
                .bind(claim.generation)
                .bind(reconciler)
                .bind(key)
                .bind(me)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        let counter = match outcome {
            Outcome::Done => &self.stats.done,
            Outcome::RequeueAfter(_) => &self.stats.requeued,
            _ if terminal => &self.stats.terminal,
            _ => &self.stats.retried,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Runs a claimed key to its outcome: in its own task (a panic becomes a retry), with the
    /// lease extended while it runs, and records the outcome.
    async fn work(self: &Arc<Self>, state: &AppState, claim: Claim) -> Outcome {
        let Some(reconciler) = self.find(&claim.lease.reconciler) else {
            // Another version's reconciler (a rolling upgrade): its key goes back, due again
            // in a minute, for the process that runs it; ending it as terminal stopped a newer
            // process's events retention (found by an upgrade audit).
            tracing::debug!(reconciler = %claim.lease.reconciler, key = %claim.lease.key, "a key of a reconciler this process does not run, handed back");
            let outcome = Outcome::RequeueAfter(FOREIGN_KEY_BACK);
            if let Err(err) = self
                .finish(state, &claim, Backoff::default(), &outcome)
                .await
            {
                tracing::error!(error = %err, "recording a reconciler outcome");
            }
            return outcome;
        };
        let span = tracing::info_span!("reconcile", reconciler = %claim.lease.reconciler, key = %claim.lease.key, attempt = claim.attempts);
        let backoff = reconciler.backoff(state);
        let started_at = now_ms();
        let mut task = {
            let (state, lease, attempt) = (state.clone(), claim.lease.clone(), claim.attempts);
            let (reconciler, delay) = (reconciler.clone(), self.delay);
            tokio::spawn(
                async move {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    reconciler
                        .reconcile(&state, &lease.key, attempt, &lease)
                        .await
                }
                .instrument(span.clone()),
            )
        };
        let mut beat = tokio::time::interval(self.lease / 3);
        beat.tick().await;
        let joined = loop {
            tokio::select! {
                joined = &mut task => break joined,
                _ = beat.tick() => {
                    if let Err(err) = self.heartbeat(state, &claim).await {
                        tracing::warn!(parent: &span, error = %err, "extending a lease");
                    }
                }
            }
        };
        let outcome = match joined {
            Ok(outcome) => outcome,
            Err(err) if err.is_panic() => {
                self.stats.panics.fetch_add(1, Ordering::Relaxed);
                let panic = err.into_panic();
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                tracing::error!(parent: &span, panic = %message, "reconciler panicked");
                Outcome::Retry(format!("panicked: {message}"))
            }
            Err(err) => Outcome::Retry(format!("cancelled: {err}")),
        };
        self.record_run(Run {
            reconciler: claim.lease.reconciler.clone(),
            key: claim.lease.key.clone(),
            attempt: claim.attempts,
            started_at,
            ended_at: now_ms(),
            outcome: match outcome {
                Outcome::Done => "done",
                Outcome::RequeueAfter(_) => "requeue",
                Outcome::Retry(_) => "retry",
                Outcome::Terminal(_) => "terminal",
            },
        });
        match &outcome {
            Outcome::Retry(e) | Outcome::Terminal(e) => {
                tracing::warn!(parent: &span, error = %e, "reconcile failed")
            }
            _ => tracing::debug!(parent: &span, outcome = ?outcome, "reconciled"),
        }
        if let Err(err) = self.finish(state, &claim, backoff, &outcome).await {
            tracing::error!(parent: &span, error = %err, "recording a reconciler outcome");
        }
        outcome
    }

    /// Runs `key` of `reconciler` now, in this task, through the same claim and outcome as
    /// the workers; waits (up to a minute) while another worker holds the key.
    pub async fn run_now(
        self: &Arc<Self>,
        state: &AppState,
        reconciler: &str,
        key: &str,
    ) -> Result<Outcome, RunError> {
        if self.find(reconciler).is_none() {
            return Err(RunError::Unknown(reconciler.to_string()));
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(claim) = self.claim_key(state, reconciler, key).await? {
                return Ok(self.work(state, claim).await);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(RunError::Busy {
                    reconciler: reconciler.to_string(),
                    key: key.to_string(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// When the next unclaimed key is due (Unix ms), if any.
    async fn next_due(&self, state: &AppState) -> Result<Option<i64>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT MIN(due_at) FROM reconciler_queue WHERE terminal = 0 AND claimed_until IS NULL",
        )
        .fetch_one(&state.db.pool)
        .await?;
        row.try_get::<Option<i64>, _>(0)
    }

    /// The dispatcher: claims due keys while it has free slots and works them, until
    /// `shutdown` turns true; then waits for the runs in flight.
    pub async fn run(self: Arc<Self>, state: AppState, mut shutdown: watch::Receiver<bool>) {
        // Other processes' keys and expired leases are only seen by polling.
        const POLL: Duration = Duration::from_secs(1);
        let mut inflight = JoinSet::new();
        tracing::info!(worker = %self.worker_id, reconcilers = ?self.reconcilers.iter().map(|r| r.name()).collect::<Vec<_>>(), "reconcilers started");
        loop {
            if *shutdown.borrow() {
                break;
            }
            let free = self.concurrency.saturating_sub(inflight.len());
            let mut wait = POLL;
            if free > 0 {
                match self.claim(&state, free).await {
                    Ok(claims) => {
                        let full = claims.len() == free;
                        for claim in claims {
                            let (me, state) = (self.clone(), state.clone());
                            inflight.spawn(async move { me.work(&state, claim).await });
                        }
                        if !full {
                            match self.next_due(&state).await {
                                Ok(Some(due)) => {
                                    let ms = (due - now_ms()).clamp(10, millis(POLL));
                                    wait = Duration::from_millis(ms as u64);
                                }
                                Ok(None) => {}
                                Err(err) => tracing::warn!(error = %err, "reading the queue"),
                            }
                        } else {
                            wait = Duration::ZERO;
                        }
                    }
                    Err(err) => tracing::warn!(error = %err, "claiming reconciler keys"),
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.notify.notified() => {}
                Some(_) = inflight.join_next(), if !inflight.is_empty() => {}
                _ = shutdown.changed() => {}
            }
        }
        while inflight.join_next().await.is_some() {}
        tracing::info!(worker = %self.worker_id, "reconcilers stopped");
    }
}

/// Input of `reconciler.status`.
#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusInput {
    /// Also answer this process's last runs.
    #[serde(default)]
    pub runs: bool,
}

/// `reconciler.status`: decides `compute:fleet:admin` on `compute-fleet/global`; the queue
/// (every key with its due time, attempts, last error and holder) and this process's worker
/// id, counters and, when asked, last runs.
pub async fn status(
    state: &AppState,
    caller: &super::iam::Caller,
    input: &[u8],
) -> Result<ReconcilerStatus, super::error::ApiError> {
    let input: StatusInput = super::iam::parse(input)?;
    caller
        .check(
            state,
            "reconciler.status",
            super::iam::ROOT,
            super::iam::FLEET_ADMIN,
            super::iam::FLEET_SCOPE,
        )
        .await?;
    let rows = sqlx::query(
        "SELECT reconciler, key, due_at, attempts, last_error, claimed_by, claimed_until, terminal          FROM reconciler_queue ORDER BY reconciler, key LIMIT 10000",
    )
    .fetch_all(&state.db.pool)
    .await?;
    let mut queue = Vec::with_capacity(rows.len());
    for r in &rows {
        let due: i64 = r.try_get(2)?;
        let holder: Option<String> = r.try_get(5)?;
        // The worker: the token less the claim's number (`Runtime::next_holder`).
        let worker = holder
            .as_deref()
            .map(|h| h.rsplit_once('.').map_or(h, |(w, _)| w).to_owned());
        queue.push(QueueEntry {
            reconciler: r.try_get(0)?,
            key: r.try_get(1)?,
            attempts: r.try_get(3)?,
            terminal: r.try_get::<i64, _>(7)? != 0,
            due_at: (due != CLAIMED_DUE).then_some(due),
            last_error: r.try_get(4)?,
            // A claim writes its holder and its end together, and a release clears both.
            claimed_until: match worker {
                Some(_) => r.try_get(6)?,
                None => None,
            },
            claimed_by: worker,
        });
    }
    let rt = &state.reconcilers;
    let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
    Ok(ReconcilerStatus {
        worker_id: rt.worker_id.clone(),
        stats: ReconcilerStats {
            done: n(&rt.stats.done),
            requeued: n(&rt.stats.requeued),
            retried: n(&rt.stats.retried),
            terminal: n(&rt.stats.terminal),
            panics: n(&rt.stats.panics),
        },
        queue,
        runs: input.runs.then(|| rt.runs()),
    })
}

/// `reconciler.status`'s answer.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconcilerStatus {
    /// This process's worker id.
    pub worker_id: String,
    /// This process's counters since it started.
    pub stats: ReconcilerStats,
    /// Every queued key (at most 10,000), by reconciler and key.
    pub queue: Vec<QueueEntry>,
    /// This process's last runs, oldest first; only when asked (`runs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<Run>>,
}

/// The counters of `reconciler.status`: runs by outcome, and panics.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct ReconcilerStats {
    /// Runs done.
    pub done: u64,
    /// Runs that queued their key again.
    pub requeued: u64,
    /// Runs that failed and will be retried.
    pub retried: u64,
    /// Runs that failed for good.
    pub terminal: u64,
    /// Runs that panicked.
    pub panics: u64,
}

/// One queued key.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueEntry {
    /// The reconciler.
    pub reconciler: String,
    /// The key.
    pub key: String,
    /// Attempts so far.
    pub attempts: i64,
    /// Failed for good: never run again unless queued anew.
    pub terminal: bool,
    /// When it runs next (Unix milliseconds); left out while claimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_at: Option<i64>,
    /// The last run's error; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The holding worker's `workerId`; left out when unclaimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// Until when the claim holds (Unix milliseconds); left out when unclaimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_until: Option<i64>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::server::{Config, Fault, ServeArgs, api, db::Db};

    /// A test reconciler: `panic` panics on attempt 1, `flaky` fails twice, `always` always
    /// fails, `again` queues itself again while it runs (once).
    struct Probe {
        requeued: std::sync::atomic::AtomicBool,
    }

    impl Reconciler for Probe {
        fn name(&self) -> &'static str {
            "probe"
        }

        fn reconcile<'a>(
            &'a self,
            state: &'a AppState,
            key: &'a str,
            attempt: u32,
            _lease: &'a Lease,
        ) -> BoxFut<'a, Outcome> {
            Box::pin(async move {
                match key {
                    "panic" if attempt == 1 => panic!("probe panicked"),
                    "flaky" if attempt <= 2 => Outcome::Retry(format!("failure {attempt}")),
                    "always" => Outcome::Retry("still failing".into()),
                    "again" if !self.requeued.swap(true, Ordering::SeqCst) => {
                        let mut conn = state.db.pool.acquire().await.unwrap();
                        enqueue(&mut conn, "probe", "again", now_ms())
                            .await
                            .unwrap();
                        Outcome::Done
                    }
                    _ => Outcome::Done,
                }
            })
        }

        fn backoff(&self, _state: &AppState) -> Backoff {
            Backoff {
                base: Duration::from_millis(20),
                max: Duration::from_millis(100),
                max_attempts: Some(3),
            }
        }
    }

    /// A server's state on a fresh SQLite file in `dir`, with `reconcilers` (none running).
    pub(crate) async fn test_state(
        dir: &std::path::Path,
        reconcilers: Vec<Arc<dyn Reconciler>>,
    ) -> AppState {
        let config = Config::resolve(ServeArgs {
            database: Some(format!("sqlite://{}", dir.join("q.db").display())),
            ..ServeArgs::default()
        })
        .unwrap();
        let db = Db::open(&config.database, config.modules).await.unwrap();
        AppState {
            db,
            modules: config.modules,
            config: Arc::new(config),
            methods: Arc::new(api::methods()),
            fault: Arc::new(Fault::default()),
            reconcilers: Arc::new(Runtime::new(reconcilers)),
        }
    }

    async fn state(dir: &std::path::Path) -> AppState {
        let probe = Probe {
            requeued: false.into(),
        };
        test_state(dir, vec![Arc::new(probe)]).await
    }

    async fn row(state: &AppState, key: &str) -> Option<(i64, i64, Option<String>)> {
        sqlx::query("SELECT attempts, terminal, last_error FROM reconciler_queue WHERE key = $1")
            .bind(key)
            .fetch_optional(&state.db.pool)
            .await
            .unwrap()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
    }

    async fn settled(state: &AppState, keys: &[&str]) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut pending = false;
            for key in keys {
                if let Some((_, terminal, _)) = row(state, key).await {
                    pending |= terminal == 0;
                }
            }
            let runs = state.reconcilers.runs();
            let again_twice = runs.iter().filter(|r| r.key == "again").count() >= 2;
            if !pending && (!keys.contains(&"again") || again_twice) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the queue did not settle"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn outcomes_panics_retries_terminal_and_merging() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(dir.path()).await;
        let keys = ["done", "panic", "flaky", "always", "again"];
        {
            let mut conn = state.db.pool.acquire().await.unwrap();
            for key in keys {
                // Queued twice: merged into one row.
                enqueue(&mut conn, "probe", key, now_ms()).await.unwrap();
                enqueue(&mut conn, "probe", key, now_ms() + 60_000)
                    .await
                    .unwrap();
            }
        }
        let n: i64 = sqlx::query("SELECT COUNT(*) FROM reconciler_queue")
            .fetch_one(&state.db.pool)
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 5);
        let (stop, stopped) = watch::channel(false);
        let worker = tokio::spawn(state.reconcilers.clone().run(state.clone(), stopped));
        settled(&state, &keys).await;
        stop.send(true).unwrap();
        worker.await.unwrap();

        for key in ["done", "panic", "flaky", "again"] {
            assert_eq!(row(&state, key).await, None, "{key} is done");
        }
        // Given up after max_attempts, with its error; queuing it again starts it over.
        assert_eq!(
            row(&state, "always").await,
            Some((3, 1, Some("still failing".into())))
        );
        let stats = &state.reconcilers.stats;
        assert_eq!(stats.panics.load(Ordering::Relaxed), 1);
        assert_eq!(stats.terminal.load(Ordering::Relaxed), 1);
        // panic once, flaky twice, always twice before its terminal third.
        assert_eq!(stats.retried.load(Ordering::Relaxed), 5);
        let runs = state.reconcilers.runs();
        let attempts = |key: &str| -> Vec<u32> {
            runs.iter()
                .filter(|r| r.key == key)
                .map(|r| r.attempt)
                .collect()
        };
        assert_eq!(attempts("flaky"), [1, 2, 3]);
        assert_eq!(attempts("panic"), [1, 2]);
        // Queued again while it ran: it ran again, afresh.
        assert_eq!(attempts("again"), [1, 1]);
        let mut conn = state.db.pool.acquire().await.unwrap();
        enqueue(&mut conn, "probe", "always", now_ms())
            .await
            .unwrap();
        assert_eq!(
            row(&state, "always").await.map(|r| (r.0, r.1)),
            Some((0, 0))
        );
        // run_now claims and runs a key through the same path.
        let outcome = state
            .reconcilers
            .run_now(&state, "probe", "done")
            .await
            .unwrap();
        assert_eq!(outcome, Outcome::Done);
        assert!(matches!(
            state.reconcilers.run_now(&state, "nope", "x").await,
            Err(RunError::Unknown(_))
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_key_of_another_versions_reconciler_is_handed_back_alive() {
        // A newer version's reconciler (during a rolling upgrade): this process hands its key
        // back, due again later and never terminal, for the process that runs it.
        let dir = tempfile::tempdir().unwrap();
        let state = state(dir.path()).await;
        let mut conn = state.db.pool.acquire().await.unwrap();
        enqueue(&mut conn, "newer.reconciler", "k", 0)
            .await
            .unwrap();
        drop(conn);
        let claimed = state.reconcilers.claim(&state, 10).await.unwrap();
        assert_eq!(claimed.len(), 1);
        let claim = claimed.into_iter().next().unwrap();
        let runtime = state.reconcilers.clone();
        let outcome = runtime.work(&state, claim).await;
        assert_eq!(outcome, Outcome::RequeueAfter(FOREIGN_KEY_BACK));
        let (claimed_by, terminal, due_at): (Option<String>, i64, i64) = sqlx::query_as(
            "SELECT claimed_by, terminal, due_at FROM reconciler_queue WHERE reconciler = 'newer.reconciler'",
        )
        .fetch_one(&state.db.pool)
        .await
        .unwrap();
        assert_eq!((claimed_by, terminal), (None, 0));
        assert!(due_at > now_ms() + 30_000, "due again at {due_at}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claim_reads_the_queue_by_primary_key_not_every_key() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(dir.path()).await;
        let sql = format!("EXPLAIN QUERY PLAN {}", claim_sql(Backend::Sqlite));
        let plan = sqlx::query(&sql)
            .bind("w")
            .bind(1_i64)
            .bind(0_i64)
            .bind(1_i64)
            .fetch_all(&state.db.pool)
            .await
            .unwrap();
        // The update's own step (parent 0): a primary-key search per claimed key, never a
        // walk of `reconciler_queue_due`, which holds every queued key.
        let outer: Vec<String> = plan
            .iter()
            .filter(|r| {
                r.get::<i64, _>(1) == 0 && r.get::<String, _>(3).contains("reconciler_queue ")
            })
            .map(|r| r.get(3))
            .collect();
        assert_eq!(outer.len(), 1, "{outer:?}");
        assert!(
            outer[0].contains("(reconciler=? AND key=?)"),
            "the claim finds its keys by primary key: {outer:?}"
        );
    }

    #[test]
    fn backoff_grows_caps_and_is_reproducible() {
        let b = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(60),
            max_attempts: None,
        };
        for attempts in 1..12u32 {
            let d = b.delay("r", "k", attempts);
            let raw = Duration::from_secs(1u64 << (attempts - 1)).min(Duration::from_secs(60));
            assert!(
                d >= raw / 2 && d < raw,
                "attempt {attempts}: {d:?} vs {raw:?}"
            );
            assert_eq!(d, b.delay("r", "k", attempts));
        }
        // Different keys spread out.
        let spread: std::collections::BTreeSet<_> =
            (0..20).map(|i| b.delay("r", &format!("k{i}"), 3)).collect();
        assert!(spread.len() > 10);
        // Huge attempt counts neither overflow nor pass the cap.
        assert!(b.delay("r", "k", u32::MAX) < Duration::from_secs(60));
    }
}
