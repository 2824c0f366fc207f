//! What `fleet.export` answers, and all the planner needs to plan: planning a document against
//! an export in the browser gives exactly the plan the server gives, while the fleet is
//! unchanged.

use crate::document::Document;
use crate::locate::Place;
use crate::text::Text;
use crate::wire::{OUT_OF_RANGE, ObjectsOnly, in_wire_terms, is_out_of_range};
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

    /// Says where `err` happened: the path of the value serde_json was reading at the place it
    /// names (the text is walked up to it, not read again through every type).
    fn explain(text: &str, err: serde_json::Error) -> Self {
        let path = Self::path_at(text, &err);
        let message = if is_out_of_range(&err) {
            OUT_OF_RANGE.to_owned()
        } else {
            in_wire_terms(&crate::validate::json_error(text, &err))
        };
        ExportError { path, message }
    }

    /// The path of what `err` is about, from where serde_json stopped: the value it was
    /// reading, or the object or list that holds it (its holder) when the words say the
    /// holder was at fault. The path serde_path_to_error gives, without a second read (the
    /// tests `paths::*_agree_with_serde_path_to_error` hold the two to each other).
    ///
    /// serde_json stops past a value it read and refused, before a list or an object it
    /// refused at a look at its first byte, past the `{` or `[` (and the spaces after it; past
    /// the `]` or `}` of an empty one) of one a visitor refused, past the end of an object that
    /// lacks a field, past a key it does not know (and the spaces after it), and one byte past
    /// text that is not JSON. One case reads two ways, and is said at the element: a list whose
    /// first element is a list, where a name is due (`"kind": [["site"]]`: serde_path_to_error
    /// says `kind`, this `kind[0]`), since a list refused after its `[` and its element refused
    /// at a look stop at the same byte with the same words.
    fn path_at(text: &str, err: &serde_json::Error) -> String {
        use serde_json::error::Category;
        let Some(line) = crate::locate::line_start(text, err.line()) else {
            return String::new();
        };
        let words = err.to_string();
        let said = |start: &str| words.starts_with(start);
        let mut at = line + err.column();
        if err.classify() == Category::Syntax {
            // Where the text stops being JSON: the byte before the place.
            at = at.saturating_sub(1);
        }
        let (mut path, parent, place) = crate::locate::stop_at(text, at);
        let holder = match err.classify() {
            Category::Data => match place {
                // A list's first element, or the list refused after its `[`: the element when
                // the words name what it is (a list's `[[1]]` reads the same either way).
                Place::Start {
                    first: true,
                    container,
                } => {
                    let kind = match text.as_bytes().get(at) {
                        Some(b'[') => "invalid type: sequence",
                        _ => "invalid type: map",
                    };
                    !(container && said(kind))
                }
                // A key repeated is its object's problem; an unknown one, the key's.
                Place::Key => said("duplicate field"),
                Place::Between { pending, .. } => pending,
                Place::Value | Place::Start { .. } => false,
            },
            Category::Eof => match place {
                Place::Value => {
                    said("EOF while parsing an object") || said("EOF while parsing a list")
                }
                Place::Key => true,
                // A list that ends after a `,` or its `[` (not after an object's `"key":`).
                Place::Between { pending, in_list } => pending && in_list,
                Place::Start { .. } => false,
            },
            Category::Syntax | Category::Io => match place {
                // After a value: what comes next is its holder's to say.
                Place::Value => said("expected `,` or") || said("trailing"),
                Place::Key => true,
                Place::Between { pending, in_list } => pending && in_list && said("trailing comma"),
                Place::Start { .. } => false,
            },
        };
        if holder {
            path.truncate(parent);
        }
        path
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

/// The export reader's paths against serde_path_to_error's, which reads the text again
/// through every type to know where it is (what `ExportError::explain` did before it walked
/// the text to serde_json's place instead): every value of the golden exports replaced by
/// values of every other kind, fields taken away, added and repeated, and the text cut short
/// or broken at many places.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod paths {
    use super::*;
    use serde_json::Value;

    /// What serde_path_to_error says, or `None` when the text reads as an export.
    fn tracked(text: &str) -> Option<String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let read = serde_path_to_error::deserialize::<_, Export>(ObjectsOnly(&mut de));
        match read {
            Err(found) => Some(crate::wire::path_of(found.path())),
            Ok(_) => de.end().err().map(|_| String::new()),
        }
    }

    /// Every path of a value, as the validator writes them, with an object's keys.
    fn paths(value: &Value, path: String, out: &mut Vec<(String, Vec<String>)>) {
        let mut keys = Vec::new();
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let mut p = path.clone();
                    crate::validate::push_key(&mut p, k);
                    paths(v, p, out);
                    keys.push(k.clone());
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    paths(v, format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
        out.push((path, keys));
    }

    /// The golden cases' distinct exports without spaces, the two largest as written
    /// (indented: a stop after spaces), and one of them with CRLF line ends and tabs.
    fn exports() -> Vec<String> {
        let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
        let mut pretty = Vec::new();
        for entry in std::fs::read_dir(golden).expect("reads the golden cases") {
            let file = entry.expect("an entry").path().join("export.json");
            if let Ok(text) = std::fs::read_to_string(file) {
                pretty.push(text);
            }
        }
        pretty.sort_by_key(|t| std::cmp::Reverse(t.len()));
        pretty.dedup();
        let mut texts: Vec<String> = pretty
            .iter()
            .map(|t| {
                let value: Value = serde_json::from_str(t).expect("golden exports are JSON");
                serde_json::to_string(&value).expect("writes")
            })
            .collect();
        assert!(texts.len() >= 8, "the golden cases have exports");
        texts.extend(pretty.into_iter().take(2));
        // Lines that end in CRLF, and tabs for spaces.
        let crlf = texts.last().expect("an export").replace('\n', "\r\n\t");
        texts.push(crlf);
        texts
    }

    fn splice(text: &str, at: std::ops::Range<usize>, with: &str) -> String {
        format!("{}{with}{}", &text[..at.start], &text[at.end..])
    }

    /// Reads every text `edit` makes of each export: where both refuse it, the paths agree.
    fn agree(edit: impl Fn(&str, &mut dyn FnMut(String))) {
        let mut cases = 0;
        let mut differ = Vec::new();
        let mut check = |text: String| {
            let Some(theirs) = tracked(&text) else { return };
            let err = Export::from_json(text.as_bytes()).expect_err("both refuse it");
            let ours = err.path;
            cases += 1;
            // The one place that reads two ways: a list whose first element is a list, where
            // a list's element or a name is due, is refused at that element either way (after
            // the outer `[`, or at a look at the inner one): said at the element.
            let either =
                ours == format!("{theirs}[0]") && err.message.starts_with("invalid type: array");
            if ours != theirs && !either {
                differ.push(format!(
                    "{ours:?} != {theirs:?}: {}, in {text}",
                    err.message
                ));
            }
        };
        for text in exports() {
            edit(&text, &mut check);
        }
        assert!(cases > 5_000, "{cases} cases");
        assert!(
            differ.is_empty(),
            "{} of {cases} differ:\n{}",
            differ.len(),
            differ[..differ.len().min(40)].join("\n")
        );
    }

    #[test]
    fn paths_of_values_and_fields_agree_with_serde_path_to_error() {
        const VALUES: &[&str] = &[
            r#""x""#,
            "-1",
            "1.5",
            "1e999",
            "null",
            "true",
            "[]",
            "[ ]",
            "[1]",
            "[ 1 ]",
            "[[1]]",
            r#"[{"a": 1}]"#,
            r#"["x"]"#,
            "{}",
            r#"{"a": 1}"#,
            r#"{"version": 1}"#,
            r#""\ud800""#,
        ];
        agree(|text, check| {
            let value: Value = serde_json::from_str(text).expect("JSON");
            let mut all = Vec::new();
            paths(&value, String::new(), &mut all);
            for (path, keys) in &all {
                let at = crate::locate::locate(text, path).expect("locates");
                for with in VALUES {
                    check(splice(text, at.start..at.end, with));
                }
                // Objects: a field taken away, one added, one repeated.
                if text.as_bytes()[at.start] == b'{' {
                    let open = at.start + 1;
                    check(splice(text, open..open, r#""zz": 1, "#));
                    for key in keys {
                        let mut p = path.clone();
                        crate::validate::push_key(&mut p, key);
                        let field = crate::locate::locate(text, &p).expect("locates");
                        let key_at = text[..field.start].rfind(&format!("\"{key}\"")).unwrap();
                        let rest = &text[field.end..];
                        let end = field.end + rest.len() - rest.trim_start().len();
                        if text.as_bytes()[end] == b',' {
                            check(splice(text, key_at..end + 1, ""));
                        }
                        let repeat = format!("{}, ", &text[key_at..field.end]);
                        check(splice(text, open..open, &repeat));
                    }
                }
            }
        });
    }

    #[test]
    fn paths_of_text_that_is_not_json_agree_with_serde_path_to_error() {
        agree(|text, check| {
            // Text cut short, a byte taken away, a byte put in: at every third place of a
            // compact text, every 7th of a pretty one.
            let step = if text.contains('\n') { 7 } else { 3 };
            for at in (1..text.len()).filter(|i| i % step == 0 && text.is_char_boundary(*i)) {
                check(text[..at].to_owned());
                if text.is_char_boundary(at + 1) {
                    check(splice(text, at..at + 1, ""));
                    check(splice(text, at..at, "x"));
                    check(splice(text, at..at, "]"));
                    check(splice(text, at..at, ","));
                }
            }
        });
    }
}
