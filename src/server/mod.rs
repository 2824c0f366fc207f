//! The server: HTTP API (axum), storage (sqlx over SQLite or PostgreSQL), IAM and audit,
//! the platform objects' methods, the fleet methods, and the console's static files.
//!
//! - [`db`]: the pool, the migrations (named as modules name them), transactions and locks.
//! - [`error`]: the one error type and its envelope.
//! - [`iam`]: tenants, principals, API keys, grants, the permission decision, audit rows.
//! - [`objects`]: provider accounts, sites, pools, flavors, sandbox templates; every write
//!   runs through `objects::execute` inside a transaction it is given.
//! - [`fleet`]: `fleet.export|plan|apply|status`, on the planner crate.
//! - [`api`]: the dispatch table, the HTTP handler and the generated OpenAPI document.
//! - [`demo`]: `--demo`'s seed.
//! - [`drift`]: the `fleet.drift` reconciler's check of one tenant, `fleet.check`, the drift
//!   state and its events.
//! - [`reconciler`]: the reconcilers' queue (keys, due times, leases shared by processes).
//! - [`events`]: the event outbox and `event.list`.
//! - [`webhooks`]: webhook subscriptions and their Standard Webhooks deliveries.
//! - [`ratelimit`]: the per-key request limit.
//! - [`numbers`]: JSON Schema's integers (an integral float is an integer) for inputs.

pub mod api;
pub mod db;
pub mod demo;
pub mod drift;
pub mod error;
pub mod events;
pub mod fleet;
pub mod iam;
pub mod numbers;
pub mod objects;
pub mod ratelimit;
pub mod reconciler;
pub mod webhooks;

use anyhow::Context as _;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::routing::{any, get};
use axum::{Json, Router};
use clap::builder::BoolishValueParser;
use db::{Db, Modules};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

/// The largest request body accepted (a maximal document fits with room to spare).
pub const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Flags of `better-compute serve`; each overrides the `--config` file and falls back on a
/// `BETTER_COMPUTE_*` variable (an empty one counts as unset; the switches take true/false,
/// 1/0, yes/no, on/off).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT with an IP address or a host name such as localhost
    /// [default: 127.0.0.1:8080] (port 0 picks a free port, printed at start).
    #[arg(long, env = "BETTER_COMPUTE_LISTEN", value_parser = listen_address)]
    pub listen: Option<String>,
    /// Database URL: sqlite://PATH (created if missing) or postgres://...
    /// [default: sqlite://data/fleet.db]
    #[arg(long, env = "BETTER_COMPUTE_DATABASE")]
    pub database: Option<String>,
    /// TOML configuration file (listen, database, driftEvery, consoleDir, [modules] vps,
    /// sandboxes).
    #[arg(long, env = "BETTER_COMPUTE_SERVER_CONFIG")]
    pub config: Option<PathBuf>,
    /// How often the drift check runs, such as 15m or 2s [default: 15m].
    #[arg(long, env = "BETTER_COMPUTE_DRIFT_EVERY")]
    pub drift_every: Option<String>,
    /// Folder of the console's Trunk build, served at `/` [default: dist].
    #[arg(long, env = "BETTER_COMPUTE_CONSOLE_DIR")]
    pub console_dir: Option<PathBuf>,
    /// Run the vps module (provider accounts, flavors) [default: true].
    #[arg(long, env = "BETTER_COMPUTE_VPS", value_parser = BoolishValueParser::new())]
    pub vps: Option<bool>,
    /// Run sandboxes (the vps module's v0.5 migrations: sandbox templates) [default: true].
    #[arg(long, env = "BETTER_COMPUTE_SANDBOXES", value_parser = BoolishValueParser::new())]
    pub sandboxes: Option<bool>,
    /// Seed a small demo fleet and the tenants acme and globex.
    #[arg(long, env = "BETTER_COMPUTE_DEMO", value_parser = BoolishValueParser::new())]
    pub demo: bool,
    /// Write the first administrator's API key here (mode 0600) instead of printing it.
    #[arg(long, env = "BETTER_COMPUTE_ADMIN_KEY_FILE")]
    pub admin_key_file: Option<PathBuf>,
    /// Let webhooks target loopback and private addresses (tests, local development).
    #[arg(
        long,
        env = "BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE",
        value_parser = BoolishValueParser::new()
    )]
    pub webhook_allow_private: bool,
    /// The ids of the flags whose values came from their `BETTER_COMPUTE_*` variable (filled
    /// by the CLI from clap's matches), so that a bad value is told where it was written.
    #[arg(skip)]
    pub from_variables: Vec<String>,
}

impl ServeArgs {
    /// How a person wrote the setting `id`, given on the command line or by a variable:
    /// `--drift-every` or `BETTER_COMPUTE_DRIFT_EVERY`.
    fn written(&self, id: &str, flag: &str, variable: &str) -> String {
        match self.from_variables.iter().any(|v| v == id) {
            true => variable.to_owned(),
            false => flag.to_owned(),
        }
    }
}

/// The `--config` file.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    database: Option<String>,
    #[serde(alias = "drift_every", alias = "drift-every")]
    drift_every: Option<String>,
    #[serde(alias = "console_dir", alias = "console-dir")]
    console_dir: Option<PathBuf>,
    #[serde(default)]
    modules: FileModules,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModules {
    vps: Option<bool>,
    sandboxes: Option<bool>,
}

/// The server's configuration, resolved once: flags, then variables, then the file, then
/// defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// Listen address: `HOST:PORT`, the host an IP address or a name (resolved at bind).
    pub listen: String,
    /// Database URL.
    pub database: String,
    /// Modules served.
    pub modules: Modules,
    /// How often the drift check runs.
    pub drift_every: Duration,
    /// Console files.
    pub console_dir: PathBuf,
    /// Seed the demo fleet.
    pub demo: bool,
    /// Where to write the first administrator's key.
    pub admin_key_file: Option<PathBuf>,
    /// Webhooks may target private addresses.
    pub webhook_allow_private: bool,
    /// How long events are kept (`None`: forever); from
    /// `BETTER_COMPUTE_EVENT_RETENTION_DAYS`, default 30 days.
    pub event_retention: Option<Duration>,
}

impl Config {
    /// Resolves flags over the `--config` file over defaults.
    pub fn resolve(args: ServeArgs) -> anyhow::Result<Config> {
        let file = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                toml::from_str::<FileConfig>(&text)
                    .with_context(|| format!("parsing {}", path.display()))?
            }
            None => FileConfig::default(),
        };
        // A bad value is told as it was written: `--drift-every "abc"`,
        // `BETTER_COMPUTE_DRIFT_EVERY "abc"`, `driftEvery "abc" in server.toml`.
        let in_file = |key: &str, value: &str| match &args.config {
            Some(path) => format!("{key} {value:?} in {}", path.display()),
            None => format!("{key} {value:?}"),
        };
        let (drift, drift_written) = match (&args.drift_every, file.drift_every) {
            (Some(given), _) => {
                let name =
                    args.written("drift_every", "--drift-every", "BETTER_COMPUTE_DRIFT_EVERY");
                (given.clone(), format!("{name} {given:?}"))
            }
            (None, Some(filed)) => {
                let written = in_file("driftEvery", &filed);
                (filed, written)
            }
            (None, None) => ("15m".into(), "driftEvery \"15m\"".into()),
        };
        let drift_every = humantime::parse_duration(&drift)
            .with_context(|| format!("{drift_written} is not a duration such as 15m or 2s"))?;
        anyhow::ensure!(
            !drift_every.is_zero(),
            "{drift_written} must be more than 0"
        );
        let vps = args.vps.or(file.modules.vps).unwrap_or(true);
        let listen = match (args.listen, file.listen) {
            (Some(flag), _) => flag,
            (None, Some(listen)) => listen_address(&listen)
                .map_err(|why| anyhow::anyhow!("{} is {why}", in_file("listen", &listen)))?,
            (None, None) => "127.0.0.1:8080".into(),
        };
        Ok(Config {
            listen,
            database: args
                .database
                .or(file.database)
                .unwrap_or_else(|| "sqlite://data/fleet.db".into()),
            modules: Modules {
                vps,
                sandboxes: vps && args.sandboxes.or(file.modules.sandboxes).unwrap_or(true),
            },
            drift_every,
            console_dir: args
                .console_dir
                .or(file.console_dir)
                .unwrap_or_else(|| "dist".into()),
            demo: args.demo,
            admin_key_file: args.admin_key_file,
            webhook_allow_private: args.webhook_allow_private,
            event_retention: events::retention_from_env(),
        })
    }
}

/// `HOST:PORT` checked (the host an IP address, `[v6]`, or a name); resolved when bound.
fn listen_address(text: &str) -> Result<String, String> {
    let text = text.trim();
    let well_formed = text.parse::<SocketAddr>().is_ok()
        || text.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && !host.contains(':') && port.parse::<u16>().is_ok()
        });
    if well_formed {
        Ok(text.to_owned())
    } else {
        Err("not HOST:PORT, such as 127.0.0.1:8080, [::1]:8080 or localhost:8080".into())
    }
}

/// A fault injected for tests of atomicity, once per process, at the N-th call (from 0) of
/// the next apply: `BETTER_COMPUTE_FAULT=apply-stale:N` runs that call with a stale
/// `ifRevision` (CONFLICT); `apply-dberror:N` makes the database fail there (INTERNAL).
#[derive(Debug, Default)]
pub struct Fault {
    kind: Option<(FaultKind, usize)>,
    fired: AtomicBool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FaultKind {
    Stale,
    DbError,
}

/// What the fault does to a call.
#[derive(Debug)]
pub enum FaultAction {
    /// Run this call instead (its `ifRevision` is stale).
    Replace(planner::Call),
    /// Fail in the database before the call.
    DbError,
}

impl Fault {
    fn from_env() -> Fault {
        let spec = std::env::var("BETTER_COMPUTE_FAULT").unwrap_or_default();
        let parse = |prefix: &str| spec.strip_prefix(prefix).and_then(|n| n.parse().ok());
        let kind = parse("apply-stale:")
            .map(|n| (FaultKind::Stale, n))
            .or_else(|| parse("apply-dberror:").map(|n| (FaultKind::DbError, n)));
        Fault {
            kind,
            fired: AtomicBool::new(false),
        }
    }

    /// What happens at call `index` of an apply, when the fault fires there.
    pub fn before_call(&self, index: usize, call: &planner::Call) -> Option<FaultAction> {
        use planner::Call::*;
        let (kind, at) = self.kind?;
        if at != index || self.fired.swap(true, Ordering::SeqCst) {
            return None;
        }
        if kind == FaultKind::DbError {
            return Some(FaultAction::DbError);
        }
        let mut call = call.clone();
        match &mut call {
            ProviderAccountUpdate(i) => i.if_revision += 1,
            PoolUpdate(i) => i.if_revision += 1,
            FlavorUpdate(i) => i.if_revision += 1,
            SandboxTemplateUpdate(i) => i.if_revision += 1,
            PoolUnoffer(i) => i.if_revision += 1,
            ProviderAccountDelete(i)
            | PoolArchive(i)
            | FlavorDelete(i)
            | SandboxTemplateDelete(i) => i.if_revision += 1,
            PoolSetOwnerQuota(i) => i.if_revision = Some(i.if_revision.unwrap_or(0) + 1),
            PoolOffer(i) => i.if_revision = Some(i.if_revision.unwrap_or(0) + 1),
            _ => return None,
        }
        Some(FaultAction::Replace(call))
    }
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub db: Db,
    /// Modules served.
    pub modules: Modules,
    /// The resolved configuration.
    pub config: Arc<Config>,
    /// The API's methods.
    pub methods: Arc<Vec<api::Method>>,
    /// Test fault injection.
    pub fault: Arc<Fault>,
    /// The reconcilers (drift checks, webhook deliveries) and their queue's workers.
    pub reconcilers: Arc<reconciler::Runtime>,
}

/// Runs the server until interrupted.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    // Colours only for a terminal: a log file or collector gets plain text (and `NO_COLOR`
    // turns them off anywhere, as tracing-subscriber reads it).
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
        .with_writer(std::io::stderr);
    // Structured logs: one JSON object per line for log collectors, text for people.
    if std::env::var("BETTER_COMPUTE_LOG_FORMAT").as_deref() == Ok("json") {
        logs.json().init();
    } else {
        logs.init();
    }
    tracing::info!(version = crate::cli::version(), "better-compute starting");
    let config = Config::resolve(args)?;
    tokio::runtime::Runtime::new()?.block_on(serve(config))
}

/// Runs CPU-bound work (validating or planning a document, writing a big answer) while the
/// runtime moves this worker's other tasks to another thread: a plan of a 1000-item document
/// takes tens of milliseconds, and on a two-core machine two of them would otherwise hold
/// every request, a health check's too, until they end. Inline on a current-thread runtime,
/// where there is no other worker (and `block_in_place` may not run).
pub fn cpu<R>(work: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// Opens the database (migrating it), bootstraps IAM, and returns the shared state and the
/// first administrator's key to print: made by this start and not written to
/// `--admin-key-file`.
pub async fn open(config: Config) -> anyhow::Result<(AppState, Option<String>)> {
    let db = Db::open(&config.database, config.modules)
        .await
        .with_context(|| format!("opening the database {}", db::redact(&config.database)))?;
    // The key is shown once: a key file that cannot be written stops the start before the
    // administrator and its key exist, not after (a later start finds root and shows nothing).
    let mut conn = db.pool.acquire().await?;
    let bootstrapped = db::exists(
        &mut conn,
        "SELECT id FROM tenants WHERE id = $1",
        &[iam::ROOT],
    )
    .await?;
    drop(conn);
    let key_file = match &config.admin_key_file {
        Some(path) if !bootstrapped => Some(KeyFile::open(path)?),
        _ => None,
    };
    let admin_key = match iam::bootstrap(&db).await {
        Ok(key) => key,
        Err(err) => {
            if let Some(file) = key_file {
                file.discard();
            }
            return Err(err).context("creating the root tenant");
        }
    };
    let admin_key = match (admin_key, key_file) {
        (Some(key), Some(file)) => match file.write(&key) {
            Ok(()) => None,
            Err(err) => {
                // Committed already: printed rather than lost.
                println!("admin api key: {key}");
                return Err(err);
            }
        },
        // Another process bootstrapped in between. The file stays (empty, if this start made
        // it): that process may be writing its key to the same path, and removing the path
        // would lose it.
        (None, Some(_)) => None,
        (key, None) => key,
    };
    let state = AppState {
        db,
        modules: config.modules,
        config: Arc::new(config),
        methods: Arc::new(api::methods()),
        fault: Arc::new(Fault::from_env()),
        reconcilers: Arc::new(reconciler::Runtime::new(vec![
            Arc::new(drift::FleetDrift),
            Arc::new(webhooks::Deliver),
            Arc::new(events::Retention),
        ])),
    };
    Ok((state, admin_key))
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let (state, admin_key) = open(config).await?;
    let config = state.config.clone();
    if let Some(key) = admin_key {
        println!("admin api key: {key}");
    }
    if config.demo {
        demo::seed(&state).await.context("seeding the demo fleet")?;
    }
    // A host name is resolved here; the first of its addresses that binds is used.
    let listener = tokio::net::TcpListener::bind(config.listen.as_str())
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let addr = listener.local_addr()?;
    // Scripts and tests read this line to learn the port.
    println!("listening on http://{addr}");
    // The reconcilers' workers run beside the HTTP server and stop with it.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    drift::start(&state)
        .await
        .context("queuing the drift check")?;
    events::start(&state)
        .await
        .context("queuing the event retention")?;
    let workers = tokio::spawn(state.reconcilers.clone().run(state.clone(), stopped));
    let pool = state.db.pool.clone();
    let served = axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown())
        .await
        .context("serving HTTP");
    let _ = stop.send(true);
    let _ = workers.await;
    // Closing every connection lets SQLite fold its write-ahead log back into the database
    // file: a stopped server's file is then the whole database, and a copy of it a backup.
    pool.close().await;
    served
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// `--admin-key-file`, opened for writing before the key exists.
struct KeyFile {
    path: PathBuf,
    file: std::fs::File,
    /// Made by this start (an existing file is left as it was when no key comes).
    created: bool,
}

impl KeyFile {
    /// Creates the file (mode 0600), or opens an existing one without truncating it.
    fn open(path: &std::path::Path) -> anyhow::Result<KeyFile> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let opened = match options.open(path) {
            Ok(file) => Ok((file, true)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map(|file| (file, false))
            }
            Err(err) => Err(err),
        };
        let (file, created) = opened.with_context(|| {
            format!(
                "--admin-key-file {}: cannot write it, so no administrator was created",
                path.display()
            )
        })?;
        Ok(KeyFile {
            path: path.to_path_buf(),
            file,
            created,
        })
    }

    /// Replaces the file's content with the key, at mode 0600 whatever the file's mode was
    /// (`OpenOptionsExt::mode` applies only when the file is created).
    fn write(mut self, key: &str) -> anyhow::Result<()> {
        use std::io::Write as _;
        #[cfg(unix)]
        let private = {
            use std::os::unix::fs::PermissionsExt as _;
            self.file
                .set_permissions(std::fs::Permissions::from_mode(0o600))
        };
        #[cfg(not(unix))]
        let private = Ok(());
        private
            .and_then(|()| self.file.set_len(0))
            .and_then(|()| writeln!(self.file, "{key}"))
            .and_then(|()| self.file.sync_all())
            .with_context(|| format!("writing --admin-key-file {}", self.path.display()))
    }

    /// The bootstrap failed: a file this start made goes again, unless something was
    /// written to it meanwhile.
    fn discard(self) {
        let empty = self.file.metadata().is_ok_and(|m| m.len() == 0);
        if self.created && empty {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The HTTP routes: the API, its OpenAPI document, health, and the console.
pub fn router(state: AppState) -> Router {
    let index = state.config.console_dir.join("index.html");
    let openapi = Arc::new(api::openapi(&state.methods));
    Router::new()
        .route(
            "/api/openapi.json",
            get(move || {
                let doc = openapi.clone();
                async move { Json((*doc).clone()) }
            }),
        )
        .route(
            "/api/{method}",
            get(api::handle).post(api::handle).fallback(api::wrong_verb),
        )
        // Any other path under /api is an API mistake (a URL with a path of its own, say),
        // answered in the API's envelope rather than by the console's files.
        .route("/api", any(api::unknown_path))
        .route("/api/", any(api::unknown_path))
        // The catch-all below needs something after the slash: a method's path with a
        // trailing slash has a route of its own, or it would reach the console's files.
        .route("/api/{method}/", any(api::unknown_path))
        .route("/api/{method}/{*rest}", any(api::unknown_path))
        .layer(axum::middleware::from_fn_with_state(
            ratelimit::Limiter::from_env(),
            ratelimit::limit,
        ))
        // After the rate limit's layer, which wraps only the routes before it: the health check
        // answers a rollout's probe even with a key that is out of requests (a load balancer
        // may send the same header to every path).
        .route("/api/health", get(health))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(TraceLayer::new_for_http())
        .layer(axum::middleware::from_fn(api::errors_in_body))
        .with_state(state.clone())
        .fallback_service(ServeDir::new(&state.config.console_dir).fallback(ServeFile::new(index)))
        // The console's policy, as a header too: `frame-ancestors` works only there.
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
}

/// Sent with every response: the console's meta policy plus what only a header can say.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Liveness, with the build's version (`--version`'s text), so that a rollout can be checked
/// without a key.
async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok", "version": crate::cli::version() }))
}

#[cfg(test)]
mod tests {
    use super::cpu;
    use std::time::Duration;

    /// With one worker, a task in `cpu` waits for a message only another task sends: that
    /// task runs only if `cpu` handed the worker over (else the wait times out).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn cpu_work_leaves_the_worker_to_other_tasks() {
        let (send, receive) = std::sync::mpsc::channel();
        let (started, holding) = tokio::sync::oneshot::channel();
        let holder = tokio::spawn(async move {
            started.send(()).unwrap();
            cpu(|| receive.recv_timeout(Duration::from_secs(20)))
        });
        holding.await.unwrap();
        tokio::spawn(async move { send.send(()).unwrap() });
        assert_eq!(holder.await.unwrap(), Ok(()));
    }

    #[test]
    fn cpu_work_runs_inline_without_a_runtime_or_on_a_current_thread_one() {
        assert_eq!(cpu(|| 7), 7);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(async { cpu(|| 8) }), 8);
    }
}
