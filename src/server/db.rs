//! Storage: one sqlx `Any` pool over embedded SQLite or PostgreSQL, the migrations, and the
//! helpers every module's queries share.
//!
//! The SQL is written once for both databases: `$N` placeholders (SQLite accepts them too),
//! `TEXT` for ids and JSON, `BIGINT` for integers, booleans and Unix-millisecond times. The
//! one exception is [`fetch`], whose JSON aggregate each database spells its own way.

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyConnection, AnyPool, Connection as _, Executor as _, Row as _, Transaction};
use std::str::FromStr as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// A transaction on either database.
pub type Tx = Transaction<'static, Any>;

/// Failure to open or migrate the database.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The URL is neither `sqlite:` nor `postgres:` (held redacted: it may carry a password).
    #[error("unsupported database URL {0:?} (use sqlite://PATH or postgres://...)")]
    UnsupportedUrl(String),
    /// An in-memory SQLite database: each pooled connection would open its own empty one,
    /// and the data would end with the process.
    #[error(
        "an in-memory SQLite database is not supported: each of the server's connections would \
         see its own empty database, and the data would end with the process (use sqlite://PATH)"
    )]
    InMemory,
    /// The database did not answer the first connection in time.
    #[error("connecting: no answer within {0:?}")]
    ConnectTimeout(std::time::Duration),
    /// Creating the SQLite file's folder failed.
    #[error("creating {path}: {source}")]
    CreateDir {
        /// The folder.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The database holds migrations this build does not know: a newer build migrated it.
    #[error(
        "the database was migrated by a newer better-compute (migrations this build does not \
         know: {}); run that version or newer, or restore the backup taken before the upgrade",
        .0.join(", ")
    )]
    NewerDatabase(Vec<String>),
    /// A migration failed.
    #[error("migration {name}: {source}")]
    Migration {
        /// The migration's name (`fleet/0001_names`).
        name: &'static str,
        /// Why.
        source: sqlx::Error,
    },
    /// Any other database error.
    #[error(transparent)]
    Sqlx(#[from] sqlx::Error),
}

/// Which database the pool talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite (one writer at a time).
    Sqlite,
    /// PostgreSQL (row locks).
    Postgres,
}

impl Backend {
    /// The database `conn` talks to.
    pub fn of(conn: &AnyConnection) -> Backend {
        match conn.backend_name() {
            "PostgreSQL" => Backend::Postgres,
            _ => Backend::Sqlite,
        }
    }
}

/// The modules a deployment runs; they decide which migrations run and which methods answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modules {
    /// The vps module: provider accounts and flavors.
    pub vps: bool,
    /// The vps module's v0.5 migrations: sandbox templates (needs `vps`).
    pub sandboxes: bool,
}

/// One migration, named as its module names it.
pub struct Migration {
    /// `module/NNNN_name`.
    pub name: &'static str,
    /// SQL both databases accept.
    pub sql: &'static str,
    /// Whether the deployment's modules include it.
    pub wanted: fn(Modules) -> bool,
}

/// Every migration, in the order they run. Never edit one that has shipped; add a new one.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "iam/0001_core",
        sql: include_str!("../../migrations/iam/0001_core.sql"),
        wanted: |_| true,
    },
    Migration {
        name: "compute/0001_core",
        sql: include_str!("../../migrations/compute/0001_core.sql"),
        wanted: |_| true,
    },
    Migration {
        name: VPS_TABLES,
        sql: include_str!("../../migrations/vps/0001_core.sql"),
        wanted: |m| m.vps,
    },
    Migration {
        name: SANDBOX_TABLES,
        sql: include_str!("../../migrations/vps/0005_sandbox_templates.sql"),
        wanted: |m| m.vps && m.sandboxes,
    },
    Migration {
        name: "fleet/0001_names",
        sql: include_str!("../../migrations/fleet/0001_names.sql"),
        wanted: |_| true,
    },
    Migration {
        name: "fleet/0002_applied",
        sql: include_str!("../../migrations/fleet/0002_applied.sql"),
        wanted: |_| true,
    },
    Migration {
        name: "fleet/0003_check_error",
        sql: include_str!("../../migrations/fleet/0003_check_error.sql"),
        wanted: |_| true,
    },
    Migration {
        name: "fleet/0004_sites_by_tenant",
        sql: include_str!("../../migrations/fleet/0004_sites_by_tenant.sql"),
        wanted: |_| true,
    },
    Migration {
        name: "fleet/0005_flavors_by_tenant",
        sql: include_str!("../../migrations/fleet/0005_flavors_by_tenant.sql"),
        wanted: |m| m.vps,
    },
    Migration {
        name: "reconciler/0001_queue",
        sql: include_str!("../../migrations/reconciler/0001_queue.sql"),
        wanted: |_| true,
    },
    Migration {
        name: "events/0001_events",
        sql: include_str!("../../migrations/events/0001_events.sql"),
        wanted: |_| true,
    },
    Migration {
        name: "webhooks/0001_webhooks",
        sql: include_str!("../../migrations/webhooks/0001_webhooks.sql"),
        wanted: |_| true,
    },
    Migration {
        name: "webhooks/0002_deliveries_by_event",
        sql: include_str!("../../migrations/webhooks/0002_deliveries_by_event.sql"),
        wanted: |_| true,
    },
];

/// The database: a pool and what it is.
#[derive(Clone, Debug)]
pub struct Db {
    /// The pool.
    pub pool: AnyPool,
    /// Its kind.
    pub backend: Backend,
}

impl Db {
    /// Opens (creating an SQLite file and its folder if missing) and migrates the database.
    pub async fn open(url: &str, modules: Modules) -> Result<Db, DbError> {
        sqlx::any::install_default_drivers();
        let (backend, url) = if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            let file = path.split('?').next().unwrap_or(path);
            if file.is_empty() || file == ":memory:" || path.contains("mode=memory") {
                return Err(DbError::InMemory);
            }
            if let Some(dir) = std::path::Path::new(file).parent()
                && !dir.as_os_str().is_empty()
            {
                std::fs::create_dir_all(dir).map_err(|source| DbError::CreateDir {
                    path: dir.display().to_string(),
                    source,
                })?;
            }
            let sep = if path.contains('?') { '&' } else { '?' };
            let url = if path.contains("mode=") {
                format!("sqlite://{path}")
            } else {
                format!("sqlite://{path}{sep}mode=rwc")
            };
            (Backend::Sqlite, url)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            (Backend::Postgres, url.to_string())
        } else {
            return Err(DbError::UnsupportedUrl(redact(url)));
        };
        let options = AnyConnectOptions::from_str(&url)?;
        // The pool retries a failed connection until its acquire timeout (30 s) and then
        // reports only the timeout; one connection first fails at once with the cause
        // ("connection refused", a wrong password, a missing database).
        let first = tokio::time::timeout(CONNECT_TIMEOUT, AnyConnection::connect_with(&options))
            .await
            .map_err(|_| DbError::ConnectTimeout(CONNECT_TIMEOUT))??;
        first.close().await?;
        let pool = AnyPoolOptions::new()
            .max_connections(if backend == Backend::Sqlite { 8 } else { 16 })
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // WAL lets readers run beside the one writer; writers queue on the
                        // busy timeout instead of failing at once.
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA busy_timeout = 60000").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await?;
        let db = Db { pool, backend };
        db.migrate(modules).await?;
        Ok(db)
    }

    async fn migrate(&self, modules: Modules) -> Result<(), DbError> {
        let mut conn = self.pool.acquire().await?;
        // Several processes may start at once on one PostgreSQL: one migrates, the others
        // wait and then find every migration done. (SQLite's BEGIN IMMEDIATE serializes.)
        if self.backend == Backend::Postgres {
            conn.execute("SELECT pg_advisory_lock(7245092315)").await?;
        }
        let result = self.run_migrations(&mut conn, modules).await;
        if self.backend == Backend::Postgres {
            conn.execute("SELECT pg_advisory_unlock(7245092315)")
                .await?;
        }
        result
    }

    async fn run_migrations(
        &self,
        conn: &mut AnyConnection,
        modules: Modules,
    ) -> Result<(), DbError> {
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)",
        )
        .await?;
        // A rollback to an older build: its queries would run against tables a later
        // migration changed, so it refuses to start rather than guess.
        let known: Vec<String> = sqlx::query_scalar("SELECT name FROM migrations ORDER BY name")
            .fetch_all(&mut *conn)
            .await?;
        let unknown: Vec<String> = known
            .into_iter()
            .filter(|name| !MIGRATIONS.iter().any(|m| m.name == name))
            .collect();
        if !unknown.is_empty() {
            return Err(DbError::NewerDatabase(unknown));
        }
        for migration in MIGRATIONS.iter().filter(|m| (m.wanted)(modules)) {
            let err = |source| DbError::Migration {
                name: migration.name,
                source,
            };
            let mut tx = self.begin_write(conn).await.map_err(err)?;
            let done = sqlx::query("SELECT name FROM migrations WHERE name = $1")
                .bind(migration.name)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
            if done.is_some() {
                continue;
            }
            tracing::info!(migration = migration.name, "running migration");
            sqlx::raw_sql(migration.sql)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
            sqlx::query("INSERT INTO migrations (name, applied_at) VALUES ($1, $2)")
                .bind(migration.name)
                .bind(now_ms())
                .execute(&mut *tx)
                .await
                .map_err(err)?;
            tx.commit().await.map_err(err)?;
        }
        Ok(())
    }

    /// Begins a transaction that will write: on SQLite it takes the database's write lock at
    /// once (`BEGIN IMMEDIATE`), so it never fails later upgrading a read lock.
    pub async fn begin_write<'c>(
        &self,
        conn: &'c mut AnyConnection,
    ) -> Result<Transaction<'c, Any>, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => conn.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => conn.begin().await,
        }
    }

    /// Begins a writing transaction on a pooled connection.
    pub async fn write_tx(&self) -> Result<Tx, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.pool.begin().await,
        }
    }

    /// Begins a read-only transaction: one consistent snapshot for an export and its plan
    /// (SQLite's read transactions are snapshots; PostgreSQL needs REPEATABLE READ, since
    /// under READ COMMITTED each statement would see a newer fleet).
    pub async fn read_tx(&self) -> Result<Tx, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.pool.begin().await,
            Backend::Postgres => {
                self.pool
                    .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .await
            }
        }
    }

    /// Serializes writers of one tenant's fleet inside `tx`: a row lock on the tenant on
    /// PostgreSQL (`FOR NO KEY UPDATE`: writers of the tenant queue, while other tenants'
    /// foreign-key checks on the row, which take `KEY SHARE`, do not); on SQLite the
    /// transaction already holds the database's write lock.
    pub async fn lock_tenant(&self, tx: &mut Tx, tenant_id: &str) -> Result<(), sqlx::Error> {
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT id FROM tenants WHERE id = $1 FOR NO KEY UPDATE")
                .bind(tenant_id)
                .fetch_optional(&mut **tx)
                .await?;
        }
        Ok(())
    }
}

/// The migration that makes the vps module's tables (provider accounts, flavors).
pub const VPS_TABLES: &str = "vps/0001_core";
/// The migration that makes the sandbox templates' table.
pub const SANDBOX_TABLES: &str = "vps/0005_sandbox_templates";

/// Whether the database holds the tables `migration` makes. A module switched off keeps its
/// tables and rows: what they reference must stay (a pool a template uses is not archived),
/// served or not.
pub async fn holds(conn: &mut AnyConnection, migration: &str) -> Result<bool, sqlx::Error> {
    exists(
        conn,
        "SELECT name FROM migrations WHERE name = $1",
        &[migration],
    )
    .await
}

/// How long the first connection may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// `url` fit to print: the user and password before `@` hidden (`postgres://***@host/db`),
/// and a `password=` parameter's value.
pub fn redact(url: &str) -> String {
    let start = url.find("://").map_or(0, |s| s + 3);
    let mut out = match url.rfind('@') {
        Some(at) if at >= start => format!("{}***{}", &url[..start], &url[at..]),
        _ => url.to_string(),
    };
    if let Some((head, query)) = out.split_once('?') {
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out = format!("{head}?{}", query.join("&"));
    }
    out
}

/// `columns` (text columns, comma-separated) ordered byte by byte, as SQLite orders text:
/// PostgreSQL orders by the database's collation (an ICU `en-US` database put `a_b` before
/// `a-b`, SQLite after), so listings and exports differed between the two.
pub fn byte_order(backend: Backend, columns: &str) -> String {
    match backend {
        Backend::Sqlite => columns.to_owned(),
        Backend::Postgres => columns
            .split(',')
            .map(|c| format!("{} COLLATE \"C\"", c.trim()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Whether the row exists; a small helper for `SELECT 1` checks.
pub async fn exists(
    conn: &mut AnyConnection,
    sql: &str,
    args: &[&str],
) -> Result<bool, sqlx::Error> {
    let mut q = sqlx::query(sql);
    for a in args {
        q = q.bind(*a);
    }
    Ok(q.fetch_optional(conn).await?.is_some())
}

/// The rows of `SELECT {columns} FROM {from} ORDER BY {order}`, as tuples of the columns.
///
/// The database writes the rows as one JSON array (one array per row) and answers it as one
/// value: an export reads tens of thousands of rows, and row by row the drivers spend more on
/// each row (a hand-off between threads with SQLite, a conversion to `AnyRow`) than the
/// database does. Both databases write TEXT as strings, BIGINT as numbers and NULL as null.
pub async fn fetch<T: serde::de::DeserializeOwned>(
    conn: &mut AnyConnection,
    columns: &str,
    from: &str,
    order: Option<&str>,
    args: &[&str],
) -> Result<Vec<T>, sqlx::Error> {
    let backend = Backend::of(conn);
    let order = order
        .map(|o| format!(" ORDER BY {}", byte_order(backend, o)))
        .unwrap_or_default();
    let sql = match backend {
        Backend::Postgres => format!(
            "SELECT COALESCE(json_agg(json_build_array({columns}){order}), '[]')::text FROM {from}"
        ),
        Backend::Sqlite => {
            format!("SELECT json_group_array(json_array({columns}){order}) FROM {from}")
        }
    };
    let mut q = sqlx::query_scalar::<_, String>(&sql);
    for a in args {
        q = q.bind(*a);
    }
    let rows = q.fetch_one(conn).await?;
    serde_json::from_str(&rows).map_err(|err| sqlx::Error::Decode(Box::new(err)))
}

/// Whether the rows of a `load_*` function come in its documented order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// In order (a listing, an answer, anything that shows them as they come).
    Ordered,
    /// As the database finds them, for a reader that orders or indexes them itself. Sorting
    /// in the database is not free: an export's thousands of rows, sorted there, were an
    /// eighth of a `fleet.plan` (docs/server.md).
    Unordered,
}

impl Rows {
    /// `order` when the rows are to be ordered.
    pub fn by(self, order: &str) -> Option<&str> {
        (self == Rows::Ordered).then_some(order)
    }
}

/// Reads an optional text column.
pub fn opt_text(row: &sqlx::any::AnyRow, col: &str) -> Result<Option<String>, sqlx::Error> {
    row.try_get::<Option<String>, _>(col)
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A new random id of the deterministic ids' shape: `<prefix>_` and 26 lowercase Crockford
/// base32 characters; the first ten encode the time, so ids sort by creation.
///
/// Within one process they sort strictly: an id made in the same millisecond as the one
/// before (or after the clock stepped back) takes that one's time and random part plus one,
/// as ULIDs' monotonic mode does, so rows written in one millisecond (an apply's audit rows,
/// a pass's events) list in the order they were made.
pub fn new_id(prefix: &str) -> String {
    /// The random part: 88 bits, of which the 26 characters keep the top 82.
    const RANDOM_BITS: u32 = 88;
    const STEP: u128 = 1 << 6;
    static LAST: std::sync::Mutex<(u64, u128)> = std::sync::Mutex::new((0, 0));
    let mut fresh = [0u8; 16];
    getrandom::fill(&mut fresh[16 - 11..]).expect("the operating system's random source");
    let fresh = u128::from_be_bytes(fresh);
    let now = now_ms() as u64;
    let (ms, random) = {
        let mut last = LAST
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *last = match *last {
            (ms, random) if now <= ms && random + STEP < 1 << RANDOM_BITS => (ms, random + STEP),
            (ms, _) if now <= ms => (ms + 1, fresh),
            _ => (now, fresh),
        };
        *last
    };
    let mut bytes = [0u8; 17];
    bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    bytes[6..].copy_from_slice(&random.to_be_bytes()[16 - 11..]);
    format!("{prefix}_{}", base32(&bytes, 26))
}

/// `n` random lowercase Crockford base32 characters (for secrets).
pub fn random_token(n: usize) -> String {
    let mut bytes = vec![0u8; n * 5 / 8 + 1];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    base32(&bytes, n)
}

fn base32(bytes: &[u8], n: usize) -> String {
    let mut out = String::with_capacity(n);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &b in bytes {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 && out.len() < n {
            bits -= 5;
            out.push(CROCKFORD[((acc >> bits) & 31) as usize] as char);
        }
        acc &= (1 << bits) - 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::new_id;

    #[test]
    fn ids_made_in_one_process_sort_strictly_by_creation() {
        // Thousands of ids fall in the same millisecond.
        let ids: Vec<String> = (0..20_000).map(|_| new_id("aud")).collect();
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
        }
        assert!(ids.iter().all(|id| id.len() == "aud_".len() + 26));
    }
}
