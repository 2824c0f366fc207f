//! What `fleet.export` answers, and all the planner needs to plan: planning a document against
//! an export in the browser gives exactly the plan the server gives, while the fleet is
//! unchanged.

use crate::document::Document;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The kinds of item a plan speaks of.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// A site (`fra`).
    Site,
    /// A provider account (`cloud`).
    ProviderAccount,
    /// A pool (`vps-fra`).
    Pool,
    /// One entry of a pool's owner quota (`vps-fra:gpu`).
    OwnerQuota,
    /// A pool offered to a tenant (`vps-fra -> acme`).
    Offer,
    /// A flavor (`vps-fra/g1.small`).
    Flavor,
    /// A sandbox template (`py-small`).
    SandboxTemplate,
}

impl Kind {
    /// Every kind, in the order changes are listed.
    pub const ALL: [Kind; 7] = [
        Kind::Site,
        Kind::ProviderAccount,
        Kind::Pool,
        Kind::OwnerQuota,
        Kind::Offer,
        Kind::Flavor,
        Kind::SandboxTemplate,
    ];

    /// The name used in JSON, idempotency keys and CLI output (`ownerQuota`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Site => "site",
            Kind::ProviderAccount => "providerAccount",
            Kind::Pool => "pool",
            Kind::OwnerQuota => "ownerQuota",
            Kind::Offer => "offer",
            Kind::Flavor => "flavor",
            Kind::SandboxTemplate => "sandboxTemplate",
        }
    }
}

impl Kind {
    /// The kind in a sentence (`sandbox template`).
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Site => "site",
            Kind::ProviderAccount => "provider account",
            Kind::Pool => "pool",
            Kind::OwnerQuota => "owner quota",
            Kind::Offer => "offer",
            Kind::Flavor => "flavor",
            Kind::SandboxTemplate => "sandbox template",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A top-level list of the document, as named there; what `missing` reports.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Section {
    /// `sites`
    Sites,
    /// `providerAccounts`
    ProviderAccounts,
    /// `pools`
    Pools,
    /// `flavors`
    Flavors,
    /// `sandboxTemplates`
    SandboxTemplates,
}

impl Export {
    /// Reads an export from JSON bytes. The same as `serde_json::from_slice`, a fifth faster:
    /// the text is checked as UTF-8 once, not string by string.
    pub fn from_json(bytes: &[u8]) -> Result<Export, serde_json::Error> {
        serde_json::from_str(utf8(bytes)?)
    }
}

/// `bytes` as text, or the error serde_json gives for them, in its words and at its place
/// (written here: asking serde_json would put a second JSON reader in the console's wasm).
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, serde_json::Error> {
    std::str::from_utf8(bytes).map_err(|err| {
        let before = &bytes[..err.valid_up_to()];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = before.len() - start + 1;
        serde::de::Error::custom(format_args!(
            "invalid unicode code point at line {line} column {column}"
        ))
    })
}

/// The answer of `fleet.export`: the tenant's fleet as a document, plus what planning needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Export {
    /// The tenant whose fleet this is.
    pub tenant_id: String,
    /// The principal that exported; created ids derive from it.
    pub caller: String,
    /// The fleet, every served key written, so export then apply with prune changes nothing.
    pub config: Document,
    /// Lists this deployment does not serve; a document listing them plans as blocked.
    #[serde(default)]
    pub missing: Vec<Section>,
    /// One entry per item of `config`: its id (not for owner quotas and offers) and revision.
    #[serde(default)]
    pub objects: Vec<ObjectRef>,
    /// Every tenant id an offer may name.
    #[serde(default)]
    pub tenants: Vec<String>,
    /// Pools of other tenants offered to this one; templates name them by id.
    #[serde(default)]
    pub offered_pools: Vec<OfferedPool>,
}

/// The identity and revision of one exported item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRef {
    /// Its kind.
    pub kind: Kind,
    /// Its plan name (`vps-fra:gpu`).
    pub name: String,
    /// Its id; absent for owner quota entries and offers, which live in their pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its revision; update and delete calls carry it as `ifRevision`.
    pub revision: u64,
    /// Another tenant's object that uses this one (a sandbox template on a pool offered to
    /// it, with one of its flavors): deleting or archiving this one is refused while that
    /// stays, and the document cannot say so. The first such user by tenant and name. Boxed:
    /// an export holds thousands of objects, and almost none has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_by: Option<Box<ExternalUser>>,
}

/// An object of another tenant that uses one of the exported tenant's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalUser {
    /// Its tenant.
    pub tenant_id: String,
    /// Its kind (`sandboxTemplate`).
    pub kind: Kind,
    /// Its name in its tenant's fleet.
    pub name: String,
}

impl ExternalUser {
    /// How a note names it: `sandbox template "py" of tenant acme`.
    pub fn describe(&self) -> String {
        format!(
            "{} \"{}\" of tenant {}",
            self.kind.noun(),
            self.name,
            self.tenant_id
        )
    }
}

/// A pool of another tenant offered to this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OfferedPool {
    /// The pool's id.
    pub id: String,
    /// Its flavors.
    #[serde(default)]
    pub flavors: Vec<OfferedFlavor>,
}

/// A flavor of an offered pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OfferedFlavor {
    /// Its name within the pool.
    pub name: String,
    /// Its id.
    pub id: String,
}
