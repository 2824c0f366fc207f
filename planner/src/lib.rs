//! FleetConfig's planner: the pure core shared by the server, the CLI and the browser.
//!
//! Invariant: this crate does no I/O, reads no clock, draws no randomness and has no async.
//! Everything that must agree between browser and server lives here, once.
//!
//! - [`document`]: the document model (version 1), the one place that knows its wire shape.
//! - [`validate()`]: bytes to a [`Document`] or every [`Problem`] with its path.
//! - [`export`]: what `fleet.export` answers, the state a plan diffs against.
//! - [`plan()`]: changes, ordered [`Call`]s and the planHash.
//! - [`calls`]: each API call's input type, shared by the apply and direct calls.
//! - [`fleet`]: an in-memory fleet that executes calls as the server does, for tests.
//! - [`schema`]: the document's JSON Schema, derived from the model.
//! - [`ids`]: idempotency keys and deterministic ids.
//! - [`text`]: the model's strings, borrowed from the JSON they were read from.
//! - [`map`]: the model's small maps, one sorted vector each.
//! - [`canonical`]: RFC 8785 canonical JSON and SHA-256.
//! - [`wire`]: serde's reads held to JSON's shapes, and its messages in JSON's words.

#![warn(missing_docs)]

pub mod calls;
pub mod canonical;
pub mod document;
pub mod export;
pub mod fleet;
mod hash;
pub mod ids;
pub mod locate;
pub mod map;
pub mod plan;
pub mod schema;
pub mod text;
pub mod validate;
#[cfg(feature = "wasm")]
mod wasm;
pub mod wire;

// A plan allocates per item it reads and per change it writes: on wasm32, talc is faster
// than the default dlmalloc there (6-9% of a maximal plan in Node) and smaller
// (planner/js/README.md, "Allocator"). A feature, so that one program has one allocator.
#[cfg(all(feature = "allocator", target_arch = "wasm32"))]
mod allocator;

pub use calls::Call;
pub use canonical::{PlanHash, canonicalize, sha256_hex};
pub use document::Document;
pub use export::{Export, ExportError, Kind, Section};
pub use fleet::{Fleet, FleetError};
pub use map::Map;
pub use plan::{Action, Change, Plan, PlanOptions, Summary, plan, plan_hash};
pub use text::Text;
pub use validate::{Invalid, Problem, validate};
