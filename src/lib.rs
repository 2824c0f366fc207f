//! better-compute: a small compute-platform server with FleetConfig, and its CLI.
//!
//! Code map:
//! - [`cli`]: the command line (`serve`, `fleet ...`): raw flags, resolved once, then thin
//!   calls into the operations below; exit codes decided in one place.
//! - [`server`]: the HTTP API (axum), storage, IAM, audit, the fleet methods, the console.
//!
//! The planner crate holds everything the browser and the server must agree on.

pub mod cli;
pub mod server;
