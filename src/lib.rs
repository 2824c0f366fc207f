//! better-compute: a small compute-platform server with FleetConfig, and its CLI.
//!
//! Code map:
//! - [`cli`]: the command line (`serve`, `fleet ...`): raw flags, resolved once, then thin
//!   calls into the operations below; exit codes decided in one place.
//! - [`server`]: the HTTP API (axum), storage (sqlx over SQLite or PostgreSQL), IAM, audit,
//!   the platform objects' methods, the fleet methods, drift and webhooks, the console.
//!   Its decisions are in `docs/server.md`.
//!
//! Server invariants: every write runs in one transaction given to the method (a call made
//! by hand and the same call inside `fleet.apply` run the same code); permissions are decided
//! before any transaction opens; `compute-fleet/global` is passed only by root principals.
//!
//! The planner crate holds everything the browser and the server must agree on.

#![warn(missing_docs)]

pub mod cli;
pub mod server;
