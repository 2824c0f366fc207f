//! Validation: every problem of a document, each with its path, in document order.

use crate::document::Document;
use serde::{Deserialize, Serialize};

/// One problem: where (`pools[0].offers[1].quota.vcpu`) and what, in a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// Path from the document's root; empty for the root itself.
    pub path: String,
    /// What is wrong, for a person.
    pub message: String,
}

/// A document that does not validate: every problem found, in document order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{} problem(s), first at {}: {}", problems.len(), first_path(problems), problems.first().map(|p| p.message.as_str()).unwrap_or(""))]
pub struct Invalid {
    /// At least one problem.
    pub problems: Vec<Problem>,
}

fn first_path(problems: &[Problem]) -> &str {
    problems.first().map(|p| p.path.as_str()).unwrap_or("")
}

/// Parses and validates a document given as JSON bytes (duplicate keys are problems too).
pub fn validate(bytes: &[u8]) -> Result<Document, Invalid> {
    let _ = bytes;
    todo!("planner engineer: implement per docs/contracts.md")
}
