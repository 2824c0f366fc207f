//! The server: HTTP API and the console's static files.

use anyhow::Context as _;
use axum::{Json, Router, routing::get};
use std::net::SocketAddr;
use std::path::PathBuf;
use tower_http::services::{ServeDir, ServeFile};

/// Flags of `better-compute serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port, printed at start).
    #[arg(long, env = "BETTER_COMPUTE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Folder of the console's Trunk build, served at `/`.
    #[arg(long, env = "BETTER_COMPUTE_CONSOLE_DIR", default_value = "dist")]
    pub console_dir: PathBuf,
}

/// Runs the server until interrupted.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    tokio::runtime::Runtime::new()?.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let addr = listener.local_addr()?;
    // Scripts and tests read this line to learn the port.
    println!("listening on http://{addr}");
    axum::serve(listener, router(&args))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("serving HTTP")
}

fn router(args: &ServeArgs) -> Router {
    let index = args.console_dir.join("index.html");
    Router::new()
        .route("/api/health", get(health))
        .fallback_service(ServeDir::new(&args.console_dir).fallback(ServeFile::new(index)))
}

async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}
