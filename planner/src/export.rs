//! What `fleet.export` answers, and all the planner needs to plan: planning a document against
//! an export in the browser gives exactly the plan the server gives, while the fleet is
//! unchanged.

use crate::document::Document;
use crate::text::Text;
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

impl<'a> Export<'a> {
    /// Reads an export from JSON bytes, borrowing its strings from them. The same as
    /// `serde_json::from_slice`, a fifth faster: the text is checked as UTF-8 once, not string
    /// by string.
    pub fn from_json(bytes: &'a [u8]) -> Result<Export<'a>, serde_json::Error> {
        // serde reads a struct from a list too (`["root", "usr_ops", ...]`): an export is an
        // object, in the CLI's `--state` file as in the browser. (Empty text is left to
        // serde_json, which says where it ended.)
        if bytes.trim_ascii_start().first().is_some_and(|&b| b != b'{') {
            return Err(serde::de::Error::custom(
                "must be a JSON object (what fleet.export answers)",
            ));
        }
        serde_json::from_str(utf8(bytes)?)
    }

    /// Reads an export from a JSON value, borrowing its strings from it.
    pub fn from_value(value: &'a serde_json::Value) -> Result<Export<'a>, serde_json::Error> {
        Export::deserialize(value)
    }

    /// The same export, owning every string.
    pub fn into_owned(self) -> Export<'static> {
        let Export {
            tenant_id,
            caller,
            config,
            missing,
            objects,
            tenants,
            offered_pools,
        } = self;
        Export {
            tenant_id: tenant_id.into_owned(),
            caller: caller.into_owned(),
            config: config.into_owned(),
            missing,
            objects: objects.into_iter().map(ObjectRef::into_owned).collect(),
            tenants: tenants.into_iter().map(Text::into_owned).collect(),
            offered_pools: offered_pools
                .into_iter()
                .map(OfferedPool::into_owned)
                .collect(),
        }
    }
}

impl ObjectRef<'_> {
    /// The same object, owning every string.
    pub fn into_owned(self) -> ObjectRef<'static> {
        let ObjectRef {
            kind,
            name,
            id,
            revision,
            used_by,
        } = self;
        ObjectRef {
            kind,
            name: name.into_owned(),
            id: id.map(Text::into_owned),
            revision,
            used_by: used_by.map(|user| {
                let ExternalUser {
                    tenant_id,
                    kind,
                    name,
                } = *user;
                Box::new(ExternalUser {
                    tenant_id: tenant_id.into_owned(),
                    kind,
                    name: name.into_owned(),
                })
            }),
        }
    }
}

impl OfferedPool<'_> {
    /// The same pool, owning every string.
    pub fn into_owned(self) -> OfferedPool<'static> {
        let OfferedPool { id, flavors } = self;
        OfferedPool {
            id: id.into_owned(),
            flavors: flavors
                .into_iter()
                .map(|OfferedFlavor { name, id }| OfferedFlavor {
                    name: name.into_owned(),
                    id: id.into_owned(),
                })
                .collect(),
        }
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
#[serde(bound(deserialize = "'de: 'a"))]
pub struct Export<'a> {
    /// The tenant whose fleet this is.
    pub tenant_id: Text<'a>,
    /// The principal that exported; created ids derive from it.
    pub caller: Text<'a>,
    /// The fleet, every served key written, so export then apply with prune changes nothing.
    pub config: Document<'a>,
    /// Lists this deployment does not serve; a document listing them plans as blocked.
    #[serde(default)]
    pub missing: Vec<Section>,
    /// One entry per item of `config`: its id (not for owner quotas and offers) and revision.
    #[serde(default)]
    pub objects: Vec<ObjectRef<'a>>,
    /// Every tenant id an offer may name.
    #[serde(default)]
    pub tenants: Vec<Text<'a>>,
    /// Pools of other tenants offered to this one; templates name them by id.
    #[serde(default)]
    pub offered_pools: Vec<OfferedPool<'a>>,
}

/// The identity and revision of one exported item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct ObjectRef<'a> {
    /// Its kind.
    pub kind: Kind,
    /// Its plan name (`vps-fra:gpu`).
    pub name: Text<'a>,
    /// Its id; absent for owner quota entries and offers, which live in their pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Text<'a>>,
    /// Its revision; update and delete calls carry it as `ifRevision`.
    pub revision: u64,
    /// Another tenant's object that uses this one (a sandbox template on a pool offered to
    /// it, with one of its flavors): deleting or archiving this one is refused while that
    /// stays, and the document cannot say so. The first such user by tenant and name. Boxed:
    /// an export holds thousands of objects, and almost none has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_by: Option<Box<ExternalUser<'a>>>,
}

/// An object of another tenant that uses one of the exported tenant's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct ExternalUser<'a> {
    /// Its tenant.
    pub tenant_id: Text<'a>,
    /// Its kind (`sandboxTemplate`).
    pub kind: Kind,
    /// Its name in its tenant's fleet.
    pub name: Text<'a>,
}

impl ExternalUser<'_> {
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
#[serde(bound(deserialize = "'de: 'a"))]
pub struct OfferedPool<'a> {
    /// The pool's id.
    pub id: Text<'a>,
    /// Its flavors.
    #[serde(default)]
    pub flavors: Vec<OfferedFlavor<'a>>,
}

/// A flavor of an offered pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct OfferedFlavor<'a> {
    /// Its name within the pool.
    pub name: Text<'a>,
    /// Its id.
    pub id: Text<'a>,
}
