//! The plan: what applying a document would change, the exact calls, and their hash.

use crate::calls::Call;
use crate::canonical::PlanHash;
use crate::document::Document;
use crate::export::{Export, Kind};
use serde::{Deserialize, Serialize};

mod diff;
#[cfg(test)]
mod tests;
pub use diff::PRUNE_REASON;

/// How to plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanOptions {
    /// Delete what the listed kinds leave out (sites excepted: that is blocked).
    #[serde(default)]
    pub prune: bool,
}

/// What a change does to one item. A closed set: the apply acts on calls, never on these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// The item does not exist yet.
    Create,
    /// Some fields differ.
    Update,
    /// The item is gone from the document (prune only).
    Delete,
    /// Nothing to do.
    Unchanged,
}

/// One item's change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// Its kind.
    pub kind: Kind,
    /// Its plan name.
    pub name: String,
    /// What happens to it.
    pub action: Action,
    /// The fields that differ (updates only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// The differing fields' current values (updates only). Boxed, as are `after`'s: most
    /// changes are `unchanged`, and a plan holds one change per item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Box<serde_json::Map<String, serde_json::Value>>>,
    /// The differing fields' values in the document (updates only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Box<serde_json::Map<String, serde_json::Value>>>,
    /// Set when the change cannot be applied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
    /// Why it is blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A short descriptive phrase, such as "not in the document (prune)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Change {
    /// True when the change says no more than its kind, name and action (an unchanged item,
    /// a plain create).
    pub fn is_bare(&self) -> bool {
        // Destructured so that a new field must be considered here.
        let Change {
            kind: _,
            name: _,
            action: _,
            fields,
            before,
            after,
            blocked,
            note,
            reason,
        } = self;
        fields.is_empty()
            && before.is_none()
            && after.is_none()
            && !blocked
            && note.is_none()
            && reason.is_none()
    }
}

/// Counts per action.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Items to create.
    pub create: usize,
    /// Items to update.
    pub update: usize,
    /// Items to delete.
    pub delete: usize,
    /// Items already as the document says.
    pub unchanged: usize,
    /// Present (true) when any change is blocked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
}

/// A plan: the changes, the calls that make them, counts, and the hash of the calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// One entry per item, ordered by kind then plan name.
    pub changes: Vec<Change>,
    /// The calls `fleet.apply` makes, in dependency order.
    pub calls: Vec<Call>,
    /// Counts per action.
    pub summary: Summary,
    /// SHA-256 over the canonical call list.
    pub plan_hash: PlanHash,
}

impl Plan {
    /// True when some change cannot be applied.
    pub fn is_blocked(&self) -> bool {
        self.summary.blocked
    }
}

/// The planHash of a call list: lowercase hex SHA-256 of its RFC 8785 serialization.
pub fn plan_hash(calls: &[Call]) -> PlanHash {
    PlanHash::of_serialize(calls).expect("calls always serialize")
}

/// Diffs `document` against `export` and returns the plan. Pure: the same inputs give the
/// same plan, byte for byte, natively and in wasm.
pub fn plan(document: &Document, export: &Export, options: PlanOptions) -> Plan {
    diff::plan(document, export, options)
}
