//! FleetConfig's planner: the pure core shared by the server, the CLI and the browser.
//!
//! Invariant: this crate does no I/O, reads no clock, draws no randomness and has no async.
//! Everything that must agree between browser and server lives here, once.

pub mod canonical;
#[cfg(feature = "wasm")]
mod wasm;

pub use canonical::{PlanHash, canonicalize, sha256_hex};
