//! What `fleet.export` answers, and all the planner needs to plan: planning a document against
//! an export in the browser gives exactly the plan the server gives, while the fleet is
//! unchanged.

use crate::document::Document;
use crate::text::Text;
use crate::wire::{OUT_OF_RANGE, ObjectsOnly, in_wire_terms, is_out_of_range, path_of};
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
    /// `serde_json::from_slice`, a fifth faster (the text is checked as UTF-8 once, not string
    /// by string), and stricter: every object is a JSON object (serde reads a struct from a
    /// list of its fields too), and the config is version 1. What it refuses is said as the
    /// server says a method's input is wrong: at its path, in JSON's words.
    pub fn from_json(bytes: &'a [u8]) -> Result<Export<'a>, ExportError> {
        // A byte order mark, then anything but an object (a list, most likely), get sentences
        // of their own: serde_json would say `expected value` of the first and `invalid type`
        // of the second. (Empty text is left to serde_json, which says where it ended.)
        if bytes.starts_with(b"\xEF\xBB\xBF") {
            return Err(ExportError::at_root(crate::validate::BYTE_ORDER_MARK));
        }
        if bytes.trim_ascii_start().first().is_some_and(|&b| b != b'{') {
            return Err(ExportError::at_root(
                "must be a JSON object (what fleet.export answers)",
            ));
        }
        let text = crate::validate::json_text(bytes).map_err(ExportError::at_root)?;
        let mut de = serde_json::Deserializer::from_str(text);
        Export::deserialize(ObjectsOnly(&mut de))
            .and_then(|export| de.end().map(|()| export))
            .map_err(|err| ExportError::explain(text, err))
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

/// Why bytes are not an export: where, and what, as the server words a method input's
/// problem (``objects[3].revision: invalid value: integer `-1`, expected a non-negative
/// integer at line 1 column 104``).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}{}{message}", if path.is_empty() { "" } else { ": " })]
pub struct ExportError {
    /// The value at fault, written as a document's paths are; empty for the whole export (and
    /// an object's, for a field it lacks: the message names the field).
    pub path: String,
    /// What is wrong, in JSON's words, ending with its place in the text when the JSON reader
    /// gives one (`at line L column C`, the column in characters from 1, as editors count).
    pub message: String,
}

impl ExportError {
    fn at_root(message: impl Into<String>) -> Self {
        ExportError {
            path: String::new(),
            message: message.into(),
        }
    }

    /// Reads `text` again, keeping track of where it is, to say where `err` happened: a
    /// second read, paid only by an export that cannot be read.
    fn explain(text: &str, first: serde_json::Error) -> Self {
        let mut de = serde_json::Deserializer::from_str(text);
        let again = serde_path_to_error::deserialize::<_, Export>(ObjectsOnly(&mut de))
            .map(|_| ())
            .map_err(|found| (path_of(found.path()), found.into_inner()));
        let (path, err) = match again.and_then(|()| de.end().map_err(|e| (String::new(), e))) {
            Err(found) => found,
            // Both reads are the same: not reached, and the first error is still the answer.
            Ok(()) => (String::new(), first),
        };
        let message = if is_out_of_range(&err) {
            OUT_OF_RANGE.to_owned()
        } else {
            in_wire_terms(&crate::validate::json_error(text, &err))
        };
        ExportError { path, message }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> (String, String) {
        let err = Export::from_json(text.as_bytes()).unwrap_err();
        (err.path, err.message)
    }

    const HEAD: &str = r#"{"tenantId": "acme", "caller": "usr_x", "#;

    #[test]
    fn an_export_is_read_from_its_json() {
        let text = format!(
            r#"{HEAD}"config": {{"version": 1, "sites": [{{"name": "fra", "kind": "shared", "region": "eu"}}]}},
              "objects": [{{"kind": "site", "name": "fra", "id": "sit_1", "revision": 3}}]}}"#
        );
        let export = Export::from_json(text.as_bytes()).unwrap();
        assert_eq!(export.objects[0].revision, 3);
        assert_eq!(export.config.sites.unwrap()[0].name.as_str(), "fra");
    }

    #[test]
    fn what_is_not_an_export_is_said_at_its_path_in_json_words() {
        let case = |rest: &str| refused(&format!("{HEAD}{rest}"));
        let owned = |path: &str, message: &str| (path.to_owned(), message.to_owned());
        assert_eq!(
            case(r#""config": {"version": 2}}"#),
            owned("config.version", "must be 1, not 2 at line 1 column 63")
        );
        // 1 however written, as a document's: `1.0`, `1e0`.
        for one in ["1.0", "1e0"] {
            let text = format!(r#"{HEAD}"config": {{"version": {one}}}}}"#);
            assert_eq!(
                Export::from_json(text.as_bytes()).unwrap().config.version,
                1
            );
        }
        assert_eq!(
            case(r#""config": {"version": 1.5}}"#),
            owned("config.version", "must be 1, not 1.5 at line 1 column 65")
        );
        for (version, got) in [
            (r#""1""#, "a string"),
            ("null", "null"),
            ("true", "true or false"),
            ("[1]", "a list"),
            (r#"{"v": 1}"#, "an object"),
        ] {
            let (path, message) = case(&format!(r#""config": {{"version": {version}}}}}"#));
            assert_eq!(path, "config.version");
            let said = format!("must be 1, not {got} at line 1 column ");
            assert!(message.starts_with(&said), "{message}");
        }
        // A name is a string: not the map serde_json would read an enum from.
        assert_eq!(
            case(r#""config": {"version": 1}, "missing": [{"sites": null}]}"#),
            owned(
                "missing[0]",
                "invalid type: object, expected a string at line 1 column 79"
            )
        );
        assert_eq!(
            case(
                r#""config": {"version": 1}, "objects": [{"kind": "site", "name": "a", "revision": -1}]}"#
            ),
            owned(
                "objects[0].revision",
                "invalid value: integer `-1`, expected a non-negative integer at line 1 column 122"
            )
        );
        // serde alone would read the config from a list of its fields.
        assert_eq!(
            case(r#""config": [1]}"#),
            owned(
                "config",
                "invalid type: array, expected a JSON object at line 1 column 50"
            )
        );
        assert_eq!(
            case(
                r#""config": {"version": 1, "pools": [{"name": "p", "site": "s", "class": "vps-host", "ownerQuota": {"a.b/c": 1.5}}]}}"#
            ),
            owned(
                r#"config.pools[0].ownerQuota["a.b/c"]"#,
                "invalid type: number `1.5`, expected a non-negative integer at line 1 column 150"
            )
        );
        assert_eq!(
            case(r#""config": {"version": 1e999}}"#),
            owned("config.version", crate::wire::OUT_OF_RANGE)
        );
        assert_eq!(
            case(r#""config": {"version": 1}} x"#),
            owned("", "trailing characters at line 1 column 67")
        );
        // A field it lacks is said at its object, by name.
        assert_eq!(
            refused(r#"{"tenantId": "é", "config": {"version": 1}}"#),
            owned("", "missing field `caller` at line 1 column 43")
        );
        assert_eq!(
            refused(r#"["acme"]"#),
            owned("", "must be a JSON object (what fleet.export answers)")
        );
        assert_eq!(
            refused(&format!("\u{feff}{HEAD}\"config\": {{\"version\": 1}}}}")),
            owned("", crate::validate::BYTE_ORDER_MARK)
        );
        let err = Export::from_json(br#"{"tenantId": 1}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tenantId: invalid type: integer `1`, expected a string at line 1 column 14"
        );
    }
}
