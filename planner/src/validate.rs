//! Validation: every problem of a document, each with its path, in document order.
//!
//! One pass: the bytes are parsed into a small JSON tree that keeps duplicate object keys
//! (serde_json's own map would silently keep the last), then one walk over that tree checks
//! every rule and moves the values into the typed [`Document`]. serde's derive stops at the
//! first error; this walk collects all of them. Checks are byte loops, never regexes, since
//! validation is on the hot path of every plan.

use crate::document::{
    Document, Flavor, Network, Offer, Policy, Pool, PoolClass, ProviderAccount, SandboxTemplate,
    Site, SiteKind, Warm,
};
use crate::hash::{HashMap, HashSet};
use serde::Serialize;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

/// One problem: where (`pools[0].offers[1].quota.vcpu`) and what, in a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Problem {
    /// Path from the document's root; empty for the root itself.
    pub path: String,
    /// What is wrong, for a person.
    pub message: String,
}

/// A document that does not validate: every problem found, in document order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, serde::Deserialize)]
#[error("{} problem(s), first at {}: {}", problems.len(), first_path(problems), problems.first().map(|p| p.message.as_str()).unwrap_or(""))]
pub struct Invalid {
    /// At least one problem.
    pub problems: Vec<Problem>,
}

fn first_path(problems: &[Problem]) -> &str {
    problems.first().map(|p| p.path.as_str()).unwrap_or("")
}

/// The most items a list may hold (a pool's offers included).
pub const MAX_ITEMS: usize = 1000;

/// Parses and validates a document given as JSON bytes (duplicate keys are problems too).
pub fn validate(bytes: &[u8]) -> Result<Document, Invalid> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let tree = Node::deserialize(&mut de).and_then(|tree| de.end().map(|()| tree));
    let tree = match tree {
        Ok(tree) => tree,
        Err(err) => {
            return Err(Invalid {
                problems: vec![Problem {
                    path: String::new(),
                    message: format!("the document is not valid JSON: {err}"),
                }],
            });
        }
    };
    let mut walker = Walker::default();
    let document = walker.document(tree);
    if walker.problems.is_empty() {
        Ok(document)
    } else {
        Err(Invalid {
            problems: walker.problems,
        })
    }
}

/// True for a name: 1-63 of `a-z 0-9 . _ -`, starting with a letter or digit.
pub fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter().all(|&c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'-')
        })
}

/// True for a resource (quota key): a letter, then up to 63 letters, digits, `.`, `_`, `-`.
pub fn is_resource(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphabetic()
        && b[1..]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// True when a map key looks like it holds a secret (token, password, secret, key,
/// credential; any case), so its value must be a reference.
pub fn looks_secret(key: &str) -> bool {
    const NEEDLES: [&[u8]; 5] = [b"token", b"password", b"secret", b"key", b"credential"];
    let k = key.as_bytes();
    NEEDLES
        .iter()
        .any(|n| k.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n)))
}

/// True for a secret reference: `secret://...`, `vault://...` or `env://NAME` with NAME like
/// `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_secret_reference(value: &str) -> bool {
    if let Some(rest) = value
        .strip_prefix("secret://")
        .or_else(|| value.strip_prefix("vault://"))
    {
        return !rest.is_empty();
    }
    match value.strip_prefix("env://") {
        Some(name) => {
            let b = name.as_bytes();
            !b.is_empty()
                && (b[0].is_ascii_alphabetic() || b[0] == b'_')
                && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
        }
        None => false,
    }
}

const NAME_RULE: &str =
    "use 1 to 63 of a-z, 0-9, '.', '_' or '-', starting with a lowercase letter or digit";
const RESOURCE_RULE: &str = "use a letter, then up to 63 letters, digits, '.', '_' or '-'";

// The JSON tree. Keys borrow from the input when they have no escapes.

enum Node<'de> {
    Null,
    Bool,
    Num(Num),
    Str(String),
    List(Vec<Node<'de>>),
    Object(Vec<Entry<'de>>),
}

struct Entry<'de> {
    key: Cow<'de, str>,
    value: Node<'de>,
    /// The key already appeared earlier in the same object.
    duplicate: bool,
}

#[derive(Clone, Copy)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::U(u) => write!(f, "{u}"),
            Num::I(i) => write!(f, "{i}"),
            Num::F(x) => write!(f, "{x}"),
        }
    }
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::U(u) => u as f64,
            Num::I(i) => i as f64,
            Num::F(x) => x,
        }
    }
}

impl Node<'_> {
    fn describe(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool => "true or false",
            Node::Num(_) => "a number",
            Node::Str(_) => "a string",
            Node::List(_) => "a list",
            Node::Object(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool)
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node<'de>, E> {
        Ok(Node::Num(Num::U(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node<'de>, E> {
        Ok(Node::Num(Num::I(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node<'de>, E> {
        Ok(Node::Num(Num::F(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node<'de>, E> {
        Ok(Node::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Node<'de>, E> {
        Ok(Node::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        // Objects of the document are small: a linear scan finds repeats; big maps (config,
        // env, quotas) switch to a set.
        const SCAN: usize = 16;
        let mut entries: Vec<Entry<'de>> = Vec::new();
        let mut seen: Option<HashSet<Cow<'de, str>>> = None;
        while let Some(Key(key)) = map.next_key()? {
            let value = map.next_value()?;
            let duplicate = match &mut seen {
                Some(set) => !set.insert(key.clone()),
                None => {
                    let duplicate = entries.iter().any(|e| e.key == key);
                    if entries.len() + 1 >= SCAN {
                        let mut set: HashSet<Cow<'de, str>> =
                            entries.iter().map(|e| e.key.clone()).collect();
                        set.insert(key.clone());
                        seen = Some(set);
                    }
                    duplicate
                }
            };
            entries.push(Entry {
                key,
                value,
                duplicate,
            });
        }
        Ok(Node::Object(entries))
    }
}

struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A field of an object being read: not there, there but invalid (already reported), or read.
enum Field<T> {
    Absent,
    Bad,
    Ok(T),
}

impl<T> Field<T> {
    /// An optional field: `Some(None)` when absent, `None` when invalid.
    fn optional(self) -> Option<Option<T>> {
        match self {
            Field::Absent => Some(None),
            Field::Ok(v) => Some(Some(v)),
            Field::Bad => None,
        }
    }
    fn set(&mut self, value: Option<T>) {
        *self = match value {
            Some(v) => Field::Ok(v),
            None => Field::Bad,
        };
    }
    fn ok(self) -> Option<T> {
        match self {
            Field::Ok(v) => Some(v),
            _ => None,
        }
    }
}

#[derive(Default)]
struct Walker {
    path: String,
    problems: Vec<Problem>,
}

impl Walker {
    fn report(&mut self, message: String) {
        self.problems.push(Problem {
            path: self.path.clone(),
            message,
        });
    }

    fn enter_key(&mut self, key: &str) -> usize {
        let mark = self.path.len();
        let plain = !key.is_empty()
            && key
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
        if plain {
            if mark > 0 {
                self.path.push('.');
            }
            self.path.push_str(key);
        } else {
            // Keys with dots or other characters are quoted so the path stays unambiguous.
            self.path.push('[');
            self.path
                .push_str(&serde_json::to_string(key).expect("strings serialize"));
            self.path.push(']');
        }
        mark
    }

    fn enter_index(&mut self, index: usize) -> usize {
        let mark = self.path.len();
        let _ = write!(self.path, "[{index}]");
        mark
    }

    fn leave(&mut self, mark: usize) {
        self.path.truncate(mark);
    }

    /// Reports a missing required field at the object's path.
    fn require<T>(&mut self, field: Field<T>, name: &str) -> Option<T> {
        match field {
            Field::Ok(v) => Some(v),
            Field::Bad => None,
            Field::Absent => {
                self.report(format!("missing required field \"{name}\""));
                None
            }
        }
    }

    /// Walks an object's entries in document order: duplicates and unknown keys are reported,
    /// the others handed to `each`. False (reported) when `node` is not an object.
    fn object<'de>(
        &mut self,
        node: Node<'de>,
        what: &str,
        allowed: &[&str],
        mut each: impl FnMut(&mut Self, &str, Node<'de>),
    ) -> bool {
        let entries = match node {
            Node::Object(entries) => entries,
            other => {
                self.report(format!(
                    "{what} must be an object, not {}",
                    other.describe()
                ));
                return false;
            }
        };
        for entry in entries {
            let mark = self.enter_key(&entry.key);
            if entry.duplicate {
                self.report(format!(
                    "duplicate key \"{}\"; each key may appear once",
                    entry.key
                ));
            } else if allowed.contains(&&*entry.key) {
                each(self, &entry.key, entry.value);
            } else {
                self.report(format!(
                    "unknown field \"{}\"; {what} has {}",
                    shorten(&entry.key),
                    allowed.join(", ")
                ));
            }
            self.leave(mark);
        }
        true
    }

    /// Reads a list, at most [`MAX_ITEMS`] long; invalid items are reported and left out.
    fn list<'de, T>(
        &mut self,
        node: Node<'de>,
        mut item: impl FnMut(&mut Self, usize, Node<'de>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let items = match node {
            Node::List(items) => items,
            other => {
                self.report(format!("must be a list, not {}", other.describe()));
                return None;
            }
        };
        if items.len() > MAX_ITEMS {
            self.report(format!(
                "has {} items; a list holds at most {MAX_ITEMS}",
                items.len()
            ));
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, node) in items.into_iter().enumerate() {
            let mark = self.enter_index(i);
            if let Some(v) = item(self, i, node) {
                out.push(v);
            }
            self.leave(mark);
        }
        Some(out)
    }

    /// Reports a repeated key of a list at the current item: `what` is already taken by
    /// item `first` of the same list.
    fn repeated(&mut self, field: &str, what: String, first: usize) {
        let list = self.path[..self.path.rfind('[').unwrap_or(0)].to_owned();
        let mark = self.enter_key(field);
        self.report(format!(
            "{what} is repeated; {list}[{first}] has it already"
        ));
        self.leave(mark);
    }

    fn string(&mut self, node: Node<'_>) -> Option<String> {
        match node {
            Node::Str(s) => Some(s),
            other => {
                self.report(format!("must be a string, not {}", other.describe()));
                None
            }
        }
    }

    fn text(&mut self, node: Node<'_>) -> Option<String> {
        let s = self.string(node)?;
        if s.is_empty() {
            self.report("must not be empty".to_owned());
            return None;
        }
        Some(s)
    }

    fn name(&mut self, node: Node<'_>) -> Option<String> {
        let s = self.string(node)?;
        if !is_name(&s) {
            self.report(format!(
                "\"{}\" is not a valid name: {NAME_RULE}",
                shorten(&s)
            ));
            return None;
        }
        Some(s)
    }

    fn uint(&mut self, node: Node<'_>, min: u64, max: u64) -> Option<u64> {
        let expect = || {
            if max == u64::MAX {
                format!("must be an integer of {min} or more")
            } else {
                format!("must be an integer from {min} to {max}")
            }
        };
        let n = match node {
            Node::Num(n) => n,
            other => {
                self.report(format!("{}, not {}", expect(), other.describe()));
                return None;
            }
        };
        let value = match n {
            Num::U(u) => Some(u),
            Num::I(_) => None,
            // 2^64 as f64 is the first value out of range; an integral float below it fits.
            Num::F(x) if x.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&x) => {
                Some(x as u64)
            }
            Num::F(_) => None,
        };
        match value {
            Some(v) if (min..=max).contains(&v) => Some(v),
            Some(v) if v > max => {
                self.report(format!("{}; {v} is too large", expect()));
                None
            }
            // Integers past 2^64 arrive as floats; printing them would show rounded digits.
            None if matches!(n, Num::F(x) if x >= 18_446_744_073_709_551_616.0) => {
                self.report(format!("{}; this number is too large", expect()));
                None
            }
            _ => {
                self.report(format!("{}, not {n}", expect()));
                None
            }
        }
    }

    fn u32(&mut self, node: Node<'_>, min: u32) -> Option<u32> {
        self.uint(node, u64::from(min), u64::from(u32::MAX))
            .map(|v| v as u32)
    }

    fn int(&mut self, node: Node<'_>) -> Option<i64> {
        let value = match &node {
            Node::Num(Num::I(i)) => Some(*i),
            Node::Num(Num::U(u)) => i64::try_from(*u).ok(),
            Node::Num(Num::F(x))
                if x.fract() == 0.0
                    && *x >= -9_223_372_036_854_775_808.0
                    && *x < 9_223_372_036_854_775_808.0 =>
            {
                Some(*x as i64)
            }
            _ => None,
        };
        if value.is_none() {
            let got = match node {
                Node::Num(n) => n.to_string(),
                other => other.describe().to_owned(),
            };
            self.report(format!("must be an integer, not {got}"));
        }
        value
    }

    fn choice<T: Copy>(&mut self, node: Node<'_>, options: &[(&str, T)]) -> Option<T> {
        let s = match &node {
            Node::Str(s) => Some(s.as_str()),
            _ => None,
        };
        if let Some(&(_, v)) = options.iter().find(|(name, _)| Some(*name) == s) {
            return Some(v);
        }
        let names: Vec<String> = options.iter().map(|(n, _)| format!("\"{n}\"")).collect();
        let expect = match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        let got = match s {
            Some(s) => format!("\"{}\"", shorten(s)),
            None => node.describe().to_owned(),
        };
        self.report(format!("must be {expect}, not {got}"));
        None
    }

    /// A map of strings; with `secrets`, secret-looking keys must hold references.
    fn string_map(&mut self, node: Node<'_>, secrets: bool) -> Option<BTreeMap<String, String>> {
        let entries = match node {
            Node::Object(entries) => entries,
            other => {
                self.report(format!("must be an object, not {}", other.describe()));
                return None;
            }
        };
        let mut out = BTreeMap::new();
        for entry in entries {
            let mark = self.enter_key(&entry.key);
            if entry.duplicate {
                self.report(format!(
                    "duplicate key \"{}\"; each key may appear once",
                    entry.key
                ));
            } else if let Some(value) = self.string(entry.value) {
                if secrets && looks_secret(&entry.key) && !is_secret_reference(&value) {
                    // Never repeat the value: it may be the secret itself.
                    self.report(format!(
                        "\"{}\" looks like a secret, so its value must be a reference \
                         (secret://..., vault://... or env://NAME), never the secret itself",
                        shorten(&entry.key)
                    ));
                } else {
                    out.insert(entry.key.into_owned(), value);
                }
            }
            self.leave(mark);
        }
        Some(out)
    }

    /// A quota: resource names to integer maxima of 0 or more.
    fn quota(&mut self, node: Node<'_>) -> Option<BTreeMap<String, u64>> {
        let entries = match node {
            Node::Object(entries) => entries,
            other => {
                self.report(format!("must be an object, not {}", other.describe()));
                return None;
            }
        };
        let mut out = BTreeMap::new();
        for entry in entries {
            let mark = self.enter_key(&entry.key);
            if entry.duplicate {
                self.report(format!(
                    "duplicate key \"{}\"; each key may appear once",
                    entry.key
                ));
            } else if !is_resource(&entry.key) {
                self.report(format!(
                    "\"{}\" is not a valid resource name: {RESOURCE_RULE}",
                    shorten(&entry.key)
                ));
            } else if let Some(max) = self.uint(entry.value, 0, u64::MAX) {
                out.insert(entry.key.into_owned(), max);
            }
            self.leave(mark);
        }
        Some(out)
    }

    fn document(&mut self, node: Node<'_>) -> Document {
        let mut version = Field::Absent;
        let mut doc = Document::default();
        let ok = self.object(
            node,
            "a document",
            &[
                "version",
                "sites",
                "providerAccounts",
                "pools",
                "flavors",
                "sandboxTemplates",
            ],
            |w, key, value| {
                if matches!(value, Node::Null) && key != "version" {
                    return;
                }
                match key {
                    "version" => {
                        let one = matches!(value, Node::Num(n) if n.as_f64() == 1.0);
                        if !one {
                            let got = match value {
                                Node::Num(n) => n.to_string(),
                                other => other.describe().to_owned(),
                            };
                            w.report(format!("version must be 1, not {got}"));
                        }
                        version.set(one.then_some(1));
                    }
                    "sites" => doc.sites = w.sites(value),
                    "providerAccounts" => doc.provider_accounts = w.provider_accounts(value),
                    "pools" => doc.pools = w.pools(value),
                    "flavors" => doc.flavors = w.flavors(value),
                    _ => doc.sandbox_templates = w.templates(value),
                }
            },
        );
        if ok {
            doc.version = self.require(version, "version").unwrap_or(1);
        }
        doc
    }

    fn sites(&mut self, node: Node<'_>) -> Option<Vec<Site>> {
        let mut names: HashMap<String, usize> = HashMap::default();
        self.list(node, |w, i, node| {
            let (mut name, mut kind, mut region) = (Field::Absent, Field::Absent, Field::Absent);
            let fields = &["name", "kind", "region"];
            w.object(node, "a site", fields, |w, key, value| match key {
                "name" => name.set(w.name(value)),
                "kind" => kind.set(w.choice(
                    value,
                    &[
                        ("shared", SiteKind::Shared),
                        ("dedicated", SiteKind::Dedicated),
                    ],
                )),
                _ => region.set(w.text(value)),
            })
            .then_some(())?;
            if let Field::Ok(n) = &name {
                unique(w, &mut names, n.clone(), i, "name", || {
                    format!("site \"{n}\"")
                });
            }
            let name = w.require(name, "name");
            let kind = w.require(kind, "kind");
            let region = w.require(region, "region");
            Some(Site {
                name: name?,
                kind: kind?,
                region: region?,
            })
        })
    }

    fn provider_accounts(&mut self, node: Node<'_>) -> Option<Vec<ProviderAccount>> {
        let mut names: HashMap<String, usize> = HashMap::default();
        self.list(node, |w, i, node| {
            let (mut name, mut provider, mut config) =
                (Field::Absent, Field::Absent, Field::Absent);
            let fields = &["name", "provider", "config"];
            w.object(
                node,
                "a provider account",
                fields,
                |w, key, value| match key {
                    "name" => name.set(w.name(value)),
                    "provider" => provider.set(w.text(value)),
                    _ => {
                        if !matches!(value, Node::Null) {
                            config.set(w.string_map(value, true))
                        }
                    }
                },
            )
            .then_some(())?;
            if let Field::Ok(n) = &name {
                unique(w, &mut names, n.clone(), i, "name", || {
                    format!("provider account \"{n}\"")
                });
            }
            let config = match config {
                Field::Absent => BTreeMap::new(),
                other => other.ok()?,
            };
            let name = w.require(name, "name");
            let provider = w.require(provider, "provider");
            Some(ProviderAccount {
                name: name?,
                provider: provider?,
                config,
            })
        })
    }

    fn pools(&mut self, node: Node<'_>) -> Option<Vec<Pool>> {
        let mut names: HashMap<String, usize> = HashMap::default();
        self.list(node, |w, i, node| {
            let mut name = Field::Absent;
            let mut site = Field::Absent;
            let mut class = Field::Absent;
            let mut gpu_model = Field::Absent;
            let mut provider_account = Field::Absent;
            let mut policy = Field::Absent;
            let mut owner_quota = Field::Absent;
            let mut offers = Field::Absent;
            let fields = &[
                "name",
                "site",
                "class",
                "gpuModel",
                "providerAccount",
                "policy",
                "ownerQuota",
                "offers",
            ];
            w.object(node, "a pool", fields, |w, key, value| {
                if matches!(value, Node::Null) && !matches!(key, "name" | "site" | "class") {
                    return;
                }
                match key {
                    "name" => name.set(w.name(value)),
                    "site" => site.set(w.name(value)),
                    "class" => class.set(w.choice(
                        value,
                        &[
                            ("vps-host", PoolClass::VpsHost),
                            ("sandbox-host", PoolClass::SandboxHost),
                            ("provider", PoolClass::Provider),
                        ],
                    )),
                    "gpuModel" => gpu_model.set(w.text(value)),
                    "providerAccount" => provider_account.set(w.name(value)),
                    "policy" => policy.set(w.policy(value)),
                    "ownerQuota" => owner_quota.set(w.quota(value)),
                    _ => offers.set(w.offers(value)),
                }
            })
            .then_some(())?;
            if let Field::Ok(n) = &name {
                unique(w, &mut names, n.clone(), i, "name", || {
                    format!("pool \"{n}\"")
                });
            }
            match (&class, &provider_account) {
                (Field::Ok(PoolClass::Provider), Field::Absent) => w.report(
                    "missing required field \"providerAccount\" (a pool of class \"provider\" \
                     names its provider account)"
                        .to_owned(),
                ),
                (Field::Ok(c), Field::Ok(_)) if *c != PoolClass::Provider => {
                    let mark = w.enter_key("providerAccount");
                    w.report("only a pool of class \"provider\" has a provider account".to_owned());
                    w.leave(mark);
                    return None;
                }
                _ => {}
            }
            let name = w.require(name, "name");
            let site = w.require(site, "site");
            let class = w.require(class, "class");
            Some(Pool {
                name: name?,
                site: site?,
                class: class?,
                gpu_model: gpu_model.optional()?,
                provider_account: provider_account.optional()?,
                policy: policy.optional()?,
                owner_quota: owner_quota.optional()?,
                offers: offers.optional()?,
            })
        })
    }

    fn policy(&mut self, node: Node<'_>) -> Option<Policy> {
        let mut budget = Field::Absent;
        self.object(node, "a policy", &["disruptionBudget"], |w, _, value| {
            budget.set(match value {
                Node::Num(n) if (0.0..=1.0).contains(&n.as_f64()) => Some(n.as_f64()),
                Node::Num(n) => {
                    w.report(format!("must be a number from 0 to 1, not {n}"));
                    None
                }
                other => {
                    w.report(format!(
                        "must be a number from 0 to 1, not {}",
                        other.describe()
                    ));
                    None
                }
            })
        })
        .then_some(())?;
        let budget = self.require(budget, "disruptionBudget");
        Some(Policy {
            disruption_budget: budget?,
        })
    }

    fn offers(&mut self, node: Node<'_>) -> Option<Vec<Offer>> {
        let mut tenants: HashMap<String, usize> = HashMap::default();
        self.list(node, |w, i, node| {
            let (mut tenant, mut quota, mut priority) =
                (Field::Absent, Field::Absent, Field::Absent);
            let fields = &["tenant", "quota", "priority"];
            w.object(node, "an offer", fields, |w, key, value| match key {
                "tenant" => tenant.set(w.name(value)),
                "quota" => quota.set(w.quota(value)),
                _ => {
                    if !matches!(value, Node::Null) {
                        priority.set(w.int(value))
                    }
                }
            })
            .then_some(())?;
            if let Field::Ok(t) = &tenant {
                unique(w, &mut tenants, t.clone(), i, "tenant", || {
                    format!("offer to tenant \"{t}\"")
                });
            }
            let priority = priority.optional()?;
            let tenant = w.require(tenant, "tenant");
            let quota = w.require(quota, "quota");
            Some(Offer {
                tenant: tenant?,
                quota: quota?,
                priority,
            })
        })
    }

    fn flavors(&mut self, node: Node<'_>) -> Option<Vec<Flavor>> {
        let mut keys: HashMap<String, usize> = HashMap::default();
        self.list(node, |w, i, node| {
            let mut pool = Field::Absent;
            let mut name = Field::Absent;
            let mut vcpu = Field::Absent;
            let mut memory = Field::Absent;
            let mut disk = Field::Absent;
            let mut gpu = Field::Absent;
            let fields = &["pool", "name", "vcpu", "memoryGiB", "diskGiB", "gpu"];
            w.object(node, "a flavor", fields, |w, key, value| match key {
                "pool" => pool.set(w.name(value)),
                "name" => name.set(w.name(value)),
                "vcpu" => vcpu.set(w.u32(value, 1)),
                "memoryGiB" => memory.set(w.u32(value, 1)),
                "diskGiB" => disk.set(w.u32(value, 0)),
                _ => {
                    if !matches!(value, Node::Null) {
                        gpu.set(w.u32(value, 0))
                    }
                }
            })
            .then_some(())?;
            if let (Field::Ok(p), Field::Ok(n)) = (&pool, &name) {
                unique(w, &mut keys, format!("{p}/{n}"), i, "name", || {
                    format!("flavor \"{n}\" of pool \"{p}\"")
                });
            }
            let gpu = gpu.optional()?;
            let pool = w.require(pool, "pool");
            let name = w.require(name, "name");
            let vcpu = w.require(vcpu, "vcpu");
            let memory = w.require(memory, "memoryGiB");
            let disk = w.require(disk, "diskGiB");
            Some(Flavor {
                pool: pool?,
                name: name?,
                vcpu: vcpu?,
                memory_gib: memory?,
                disk_gib: disk?,
                gpu,
            })
        })
    }

    fn templates(&mut self, node: Node<'_>) -> Option<Vec<SandboxTemplate>> {
        let mut names: HashMap<String, usize> = HashMap::default();
        self.list(node, |w, i, node| {
            let mut name = Field::Absent;
            let mut pool = Field::Absent;
            let mut flavor = Field::Absent;
            let mut image = Field::Absent;
            let mut env = Field::Absent;
            let mut network = Field::Absent;
            let mut warm = Field::Absent;
            let fields = &[
                "name", "pool", "flavor", "imageId", "env", "network", "warm",
            ];
            w.object(node, "a sandbox template", fields, |w, key, value| {
                if matches!(value, Node::Null) && matches!(key, "env" | "warm") {
                    return;
                }
                match key {
                    "name" => name.set(w.name(value)),
                    "pool" => pool.set(w.name(value)),
                    "flavor" => flavor.set(w.name(value)),
                    "imageId" => image.set(w.text(value)),
                    "env" => env.set(w.string_map(value, true)),
                    "network" => network.set(w.choice(
                        value,
                        &[
                            ("private", Network::Private),
                            ("public", Network::Public),
                            ("none", Network::None),
                        ],
                    )),
                    _ => warm.set(w.warm(value)),
                }
            })
            .then_some(())?;
            if let Field::Ok(n) = &name {
                unique(w, &mut names, n.clone(), i, "name", || {
                    format!("sandbox template \"{n}\"")
                });
            }
            let env = env.optional()?;
            let warm = warm.optional()?;
            let name = w.require(name, "name");
            let pool = w.require(pool, "pool");
            let flavor = w.require(flavor, "flavor");
            let image = w.require(image, "imageId");
            let network = w.require(network, "network");
            Some(SandboxTemplate {
                name: name?,
                pool: pool?,
                flavor: flavor?,
                image_id: image?,
                env,
                network: network?,
                warm,
            })
        })
    }

    fn warm(&mut self, node: Node<'_>) -> Option<Warm> {
        let (mut min, mut max) = (Field::Absent, Field::Absent);
        self.object(node, "warm", &["min", "max"], |w, key, value| {
            if key == "min" {
                min.set(w.u32(value, 0))
            } else {
                max.set(w.u32(value, 0))
            }
        })
        .then_some(())?;
        let (min, max) = (self.require(min, "min"), self.require(max, "max"));
        let (min, max) = (min?, max?);
        if min > max {
            self.report(format!("min ({min}) must not be greater than max ({max})"));
            return None;
        }
        Some(Warm { min, max })
    }
}

/// Records `key` for item `index`, reporting it at `<item>.<field>` when an earlier item has it.
fn unique(
    w: &mut Walker,
    seen: &mut HashMap<String, usize>,
    key: String,
    index: usize,
    field: &str,
    what: impl FnOnce() -> String,
) {
    match seen.entry(key) {
        std::collections::hash_map::Entry::Occupied(first) => {
            let first = *first.get();
            w.repeated(field, what(), first);
        }
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(index);
        }
    }
}

/// Quotes user text in messages without flooding them.
fn shorten(s: &str) -> Cow<'_, str> {
    const MAX: usize = 64;
    if s.len() <= MAX {
        return Cow::Borrowed(s);
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}...", &s[..end]))
}

#[cfg(test)]
mod tests;
