//! Validation: every problem of a document, each with its path, in document order.
//!
//! One streaming pass over the bytes: serde_json drives seeds that check every value as it is
//! read (duplicate object keys included, which serde_json's own map would silently drop) and
//! build the typed [`Document`] directly, with no intermediate tree. serde's derive stops at
//! the first error; this pass collects all of them. Checks are byte loops, never regexes,
//! since validation is on the hot path of every plan.

use crate::document::{
    Document, Flavor, Network, Offer, Policy, Pool, PoolClass, ProviderAccount, SandboxTemplate,
    Site, SiteKind, Warm,
};
use crate::hash::{FxHasher, HashIndex, HashSet};
use crate::map::Map;
use crate::text::Text;
use serde::Serialize;
use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::hash::Hasher as _;

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
#[error("{}", summary(problems))]
pub struct Invalid {
    /// At least one problem.
    pub problems: Vec<Problem>,
}

/// `pools[0].name: "Bad!" is not a valid name: ... (and 2 more problems)`: the first problem
/// as the CLI prints one (the document's root has no path), then how many follow.
fn summary(problems: &[Problem]) -> String {
    let Some(first) = problems.first() else {
        return "the document is not valid".to_owned();
    };
    let mut out = if first.path.is_empty() {
        first.message.clone()
    } else {
        format!("{}: {}", first.path, first.message)
    };
    match problems.len() {
        1 => {}
        2 => out.push_str(" (and 1 more problem)"),
        n => out.push_str(&format!(" (and {} more problems)", n - 1)),
    }
    out
}

/// The most items a list may hold (a pool's offers included).
pub const MAX_ITEMS: usize = 1000;

/// The largest integer a document holds, either sign: 2^53 - 1, I-JSON's exact range
/// (RFC 7493). Past it a double cannot tell every integer apart, and the planHash's RFC 8785
/// form, which any JCS implementation must reproduce, writes numbers as doubles: two plans
/// differing only in such a value would have one planHash.
pub const MAX_INTEGER: u64 = (1 << 53) - 1;

/// The largest quota maximum ([`MAX_INTEGER`]).
pub const MAX_QUOTA: u64 = MAX_INTEGER;

/// The smallest integer (a priority) a document holds: `-MAX_INTEGER`.
pub const MIN_INTEGER: i64 = -(MAX_INTEGER as i64);

/// The most characters (Unicode scalar values, as JSON Schema's `maxLength` counts them) a
/// free text holds: a site's `region`, a provider account's `provider`, a pool's `gpuModel`, a
/// template's `imageId`. The object methods refuse longer text by [`text_problem`] too.
pub const MAX_TEXT: usize = 200;

/// What is wrong with a free text (`region`, `provider`, `gpuModel`, `imageId`), if anything,
/// as the end of a sentence about its path: it has 1 to [`MAX_TEXT`] characters, not only
/// whitespace, and no NUL (PostgreSQL's text cannot hold one). The validator and the object
/// methods both ask this, so a call made by hand accepts exactly what a document may hold.
pub fn text_problem(text: &str) -> Option<String> {
    if text.is_empty() {
        return Some("must not be empty".to_owned());
    }
    if text.chars().all(is_space) {
        return Some("must not be only whitespace".to_owned());
    }
    // A character is at least one byte: only a text over MAX_TEXT bytes needs counting.
    if text.len() > MAX_TEXT {
        let count = text.chars().count();
        if count > MAX_TEXT {
            return Some(format!(
                "has {count} characters; a text holds at most {MAX_TEXT}"
            ));
        }
    }
    if text.as_bytes().contains(&0) {
        return Some("must not contain a NUL character (\\u0000)".to_owned());
    }
    None
}

/// White space as the schema's `\s` means it (`schema::NON_BLANK_PATTERN`; JSON Schema's
/// patterns are ECMAScript's): Unicode's White_Space, U+0085 (NEL) excepted, and U+FEFF (the
/// byte order mark as a character). An editor checking with the schema then refuses exactly
/// the texts this does.
fn is_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// What JSON text that starts with a UTF-8 byte order mark is told, placed as serde_json places
/// its errors (the document's problem, a saved export's refusal).
pub const BYTE_ORDER_MARK: &str =
    "starts with a UTF-8 byte order mark; save it without one at line 1 column 1";

/// Parses and validates a document given as JSON bytes (duplicate keys are problems too).
pub fn validate(bytes: &[u8]) -> Result<Document<'_>, Invalid> {
    // serde_json would say "expected value at line 1 column 1", which does not say what is
    // wrong: editors on Windows save such a mark, and JSON may not start with one (RFC 8259,
    // 8.1). The position ends the message, as serde_json's do, so tools locate it.
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(Invalid {
            problems: vec![Problem {
                path: String::new(),
                message: format!("the document {BYTE_ORDER_MARK}"),
            }],
        });
    }
    // One UTF-8 check of the whole text, then serde_json's `&str` reader, which skips the
    // check per string it would otherwise make (a fifth of the parse of a document).
    let not_json = |words: String| Invalid {
        problems: vec![Problem {
            path: String::new(),
            message: format!("the document is not valid JSON: {words}"),
        }],
    };
    let text = json_text(bytes).map_err(not_json)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let mut walker = Walker::default();
    let seed = Seed {
        w: &mut walker,
        kind: K::Document,
    };
    let parsed = seed.deserialize(&mut de).and_then(|p| de.end().map(|()| p));
    let parsed = match parsed {
        Ok(parsed) => parsed,
        // A number past a double's range: reported at its path after the problems before it.
        // serde_json stops there, so nothing after it is read.
        Err(err) if crate::wire::is_out_of_range(&err) => {
            walker.report(crate::wire::OUT_OF_RANGE.to_owned());
            return Err(Invalid {
                problems: walker.problems,
            });
        }
        Err(err) => return Err(not_json(json_error(text, &err))),
    };
    if let Parsed::Null = parsed {
        walker.wrong(K::Document, "null");
    }
    match parsed {
        Parsed::Document(document) if walker.problems.is_empty() => Ok(*document),
        _ => Err(Invalid {
            problems: walker.problems,
        }),
    }
}

/// `bytes` as text; else what serde_json says of text that is not UTF-8, `invalid unicode code
/// point at line L column C`, placed at the first byte that is not UTF-8 and counted as
/// [`json_error`] counts (the column in characters: those before it on its line, plus 1).
pub fn json_text(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|err| {
        let valid = std::str::from_utf8(&bytes[..err.valid_up_to()])
            .expect("the bytes up to valid_up_to are UTF-8");
        let (line, column) = place_at_end(valid);
        format!("invalid unicode code point at line {line} column {column}")
    })
}

/// The line and column (in characters) just past the end of `text`.
fn place_at_end(text: &str) -> (usize, usize) {
    let line_start = text.rfind('\n').map_or(0, |i| i + 1);
    (
        text.bytes().filter(|&b| b == b'\n').count() + 1,
        text[line_start..].chars().count() + 1,
    )
}

/// What serde_json says of `text` that it could not read, its place as this crate counts
/// places (the CLI prints it before the message, the console's editor and every other editor
/// show it): `... at line L column C`, the line from 1 and the column in characters from 1,
/// where serde_json counts bytes (and from 0 at a line's start).
pub fn json_error(text: &str, err: &serde_json::Error) -> String {
    let message = err.to_string();
    if err.line() == 0 {
        return message;
    }
    let theirs = format!(" at line {} column {}", err.line(), err.column());
    let words = message.strip_suffix(&theirs).unwrap_or(&message);
    let words = crate::wire::unpaired_surrogate(words).unwrap_or(words);
    match crate::locate::serde_place(text, err.line(), err.column()) {
        Some(at) => format!("{words} at line {} column {}", at.line, at.column),
        None => format!("{words}{theirs}"),
    }
}

/// A problem about a key itself, which [`crate::locate`] places at the occurrence of the key it
/// is about when its object repeats it: a `duplicate key` at a repeat, an `unknown field` at
/// each occurrence in turn. Told apart by how their messages start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum KeyProblem {
    /// `duplicate key "name"; ...`: a repeat of a key read before.
    Duplicate,
    /// `unknown field "x"; ...`: a key the object does not have.
    Unknown,
}

impl KeyProblem {
    const DUPLICATE: &str = "duplicate key \"";
    const UNKNOWN: &str = "unknown field \"";

    fn duplicate(key: &str) -> String {
        format!(
            "{}{}\"; each key may appear once",
            Self::DUPLICATE,
            shorten(key)
        )
    }

    fn unknown(key: &str, what: &str, names: &[&str]) -> String {
        format!(
            "{}{}\"; {what} has {}",
            Self::UNKNOWN,
            shorten(key),
            names.join(", ")
        )
    }

    /// The key problem `message` tells, if any.
    pub(crate) fn of(message: &str) -> Option<KeyProblem> {
        if message.starts_with(Self::DUPLICATE) {
            Some(KeyProblem::Duplicate)
        } else if message.starts_with(Self::UNKNOWN) {
            Some(KeyProblem::Unknown)
        } else {
            None
        }
    }
}

/// Appends `key` to the path `path` as every path of a problem is written (the server's too):
/// `.key` (or `key` first) for a plain key of letters, digits, `_` and `-`; `["key"]`, quoted as
/// JSON, for any other, so that a key with a dot stays one step of the path.
pub fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&serde_json::to_string(key).expect("strings serialize"));
        path.push(']');
    }
}

/// What is wrong with a name that is not one ([`is_name`]). The object methods say it too: one
/// rule, one sentence, whether a document or a call made by hand breaks it.
pub fn name_message(name: &str) -> String {
    format!("\"{}\" is not a valid name: {NAME_RULE}", shorten(name))
}

/// What is wrong with a map key that is not a resource name ([`is_resource`]).
pub fn resource_message(key: &str) -> String {
    format!(
        "\"{}\" is not a valid resource name: {RESOURCE_RULE}",
        shorten(key)
    )
}

/// What is wrong with the value under a secret-looking key ([`looks_secret`]) that is not a
/// reference. Never the value: it may be the secret itself.
pub fn secret_message(key: &str) -> String {
    format!(
        "\"{}\" looks like a secret, so its value must be a reference (secret://..., \
         vault://... or env://NAME), never the secret itself",
        shorten(key)
    )
}

/// What is wrong with a `disruptionBudget` outside 0..=1 (`got` as the message shows it).
pub fn budget_message(got: impl fmt::Display) -> String {
    format!("must be a number from 0 to 1, not {got}")
}

/// The range an integer field holds, as its messages state it: `must be an integer from 1 to
/// 4294967295` (`max` of `u64::MAX`: `of 1 or more`).
pub fn integer_range(min: u64, max: u64) -> String {
    if max == u64::MAX {
        format!("must be an integer of {min} or more")
    } else {
        format!("must be an integer from {min} to {max}")
    }
}

/// What is wrong with a `warm` whose `min` is greater than its `max`.
pub fn warm_message(min: u32, max: u32) -> String {
    format!("min ({min}) must not be greater than max ({max})")
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
    // One pass over the key: only where a needle's first letter stands is that needle
    // compared (every config and env key of a document passes here).
    let k = key.as_bytes();
    (0..k.len()).any(|i| {
        let needle: &[u8] = match k[i].to_ascii_lowercase() {
            b't' => b"token",
            b'p' => b"password",
            b's' => b"secret",
            b'k' => b"key",
            b'c' => b"credential",
            _ => return false,
        };
        k[i..]
            .get(..needle.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(needle))
    })
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

// One streaming pass: serde_json drives seeds that check each value as it is read and build
// the typed document directly, so no intermediate tree is allocated. A syntax error stops the
// pass (the bytes are not JSON); every other problem is recorded and the pass goes on.

/// What a value is expected to be.
#[derive(Clone, Copy, PartialEq)]
enum K {
    Document,
    Version,
    Name,
    Text,
    Str,
    SiteKind,
    PoolClass,
    Network,
    U32(u32),
    Max,
    Int,
    Budget,
    Quota,
    Config,
    Policy,
    Warm,
    List(Item),
    Item(Item),
}

/// The kinds of list item.
#[derive(Clone, Copy, PartialEq)]
enum Item {
    Site,
    Account,
    Pool,
    Offer,
    Flavor,
    Template,
}

impl Item {
    fn what(self) -> &'static str {
        match self {
            Item::Site => "a site",
            Item::Account => "a provider account",
            Item::Pool => "a pool",
            Item::Offer => "an offer",
            Item::Flavor => "a flavor",
            Item::Template => "a sandbox template",
        }
    }
}

const SITE_KINDS: [(&str, SiteKind); 2] = [
    ("shared", SiteKind::Shared),
    ("dedicated", SiteKind::Dedicated),
];
const POOL_CLASSES: [(&str, PoolClass); 3] = [
    ("vps-host", PoolClass::VpsHost),
    ("sandbox-host", PoolClass::SandboxHost),
    ("provider", PoolClass::Provider),
];
const NETWORKS: [(&str, Network); 3] = [
    ("private", Network::Private),
    ("public", Network::Public),
    ("none", Network::None),
];

/// A field: its key, what its value must be, and whether `null` means absent.
type Spec = (&'static str, K, bool);

const DOCUMENT: &[Spec] = &[
    ("version", K::Version, false),
    ("sites", K::List(Item::Site), true),
    ("providerAccounts", K::List(Item::Account), true),
    ("pools", K::List(Item::Pool), true),
    ("flavors", K::List(Item::Flavor), true),
    ("sandboxTemplates", K::List(Item::Template), true),
];
const SITE: &[Spec] = &[
    ("name", K::Name, false),
    ("kind", K::SiteKind, false),
    ("region", K::Text, false),
];
const ACCOUNT: &[Spec] = &[
    ("name", K::Name, false),
    ("provider", K::Text, false),
    ("config", K::Config, false),
];
const POOL: &[Spec] = &[
    ("name", K::Name, false),
    ("site", K::Name, false),
    ("class", K::PoolClass, false),
    ("gpuModel", K::Text, true),
    ("providerAccount", K::Name, true),
    ("policy", K::Policy, true),
    ("ownerQuota", K::Quota, true),
    ("offers", K::List(Item::Offer), true),
];
const OFFER: &[Spec] = &[
    ("tenant", K::Name, false),
    ("quota", K::Quota, false),
    ("priority", K::Int, true),
];
const FLAVOR: &[Spec] = &[
    ("pool", K::Name, false),
    ("name", K::Name, false),
    ("vcpu", K::U32(1), false),
    ("memoryGiB", K::U32(1), false),
    ("diskGiB", K::U32(0), false),
    ("gpu", K::U32(0), true),
];
const TEMPLATE: &[Spec] = &[
    ("name", K::Name, false),
    ("pool", K::Name, false),
    ("flavor", K::Name, false),
    ("imageId", K::Text, false),
    ("env", K::Config, true),
    ("network", K::Network, false),
    ("warm", K::Warm, true),
];
const POLICY: &[Spec] = &[("disruptionBudget", K::Budget, false)];
const WARM: &[Spec] = &[("min", K::U32(0), false), ("max", K::U32(0), false)];

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

/// A value read: what the seed built, `Null` (the caller decides), or `Bad` (reported).
enum Parsed<'de> {
    Null,
    Bad,
    Str(Text<'de>),
    SiteKind(SiteKind),
    PoolClass(PoolClass),
    Network(Network),
    U(u64),
    I(i64),
    F(f64),
    Quota(Map<Text<'de>, u64>),
    Map(Map<Text<'de>, Text<'de>>),
    Policy(Policy),
    Warm(Warm),
    Document(Box<Document<'de>>),
    Sites(Vec<Site<'de>>),
    Accounts(Vec<ProviderAccount<'de>>),
    Pools(Vec<Pool<'de>>),
    Offers(Vec<Offer<'de>>),
    Flavors(Vec<Flavor<'de>>),
    Templates(Vec<SandboxTemplate<'de>>),
    Site(Site<'de>),
    Account(ProviderAccount<'de>),
    Pool(Box<Pool<'de>>),
    Offer(Offer<'de>),
    Flavor(Flavor<'de>),
    Template(Box<SandboxTemplate<'de>>),
}

/// The fields of one object as read, by their index in its [`Spec`] list; `None` is absent.
type Slots<'de> = [Option<Parsed<'de>>; 8];

/// Takes a field out of `slots`: absent, invalid (already reported) or read.
fn take<'de, T>(
    slots: &mut Slots<'de>,
    i: usize,
    f: impl FnOnce(Parsed<'de>) -> Option<T>,
) -> Field<T> {
    match slots[i].take() {
        None => Field::Absent,
        Some(Parsed::Bad) => Field::Bad,
        Some(p) => f(p).map_or(Field::Bad, Field::Ok),
    }
}

fn string(p: Parsed<'_>) -> Option<Text<'_>> {
    match p {
        Parsed::Str(s) => Some(s),
        _ => None,
    }
}

fn u32_of(p: Parsed<'_>) -> Option<u32> {
    match p {
        Parsed::U(u) => u32::try_from(u).ok(),
        _ => None,
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
}

#[derive(Default)]
struct Walker {
    /// Where the value being read is, as segments; rendered only when a problem is reported
    /// (most documents have none, and every key of every item passes through here).
    path: Vec<Segment>,
    /// The text of the keys in `path`.
    keys: String,
    problems: Vec<Problem>,
    /// For each list being read, outermost first: the keys its items have taken. Entries past
    /// `depth` are kept so their buffers serve the next list at that depth (a pool's offers).
    lists: Vec<Seen>,
    depth: usize,
}

/// One step of a path: a key (a range of `Walker::keys`) or a list index.
#[derive(Clone, Copy)]
enum Segment {
    Key(usize, usize),
    Index(usize),
}

/// The keys taken by the items of one list.
#[derive(Default)]
struct Seen {
    /// The index of the item being read.
    index: usize,
    /// Hash of a key -> (first item with it, its span in `buffer`).
    keys: HashIndex<(usize, usize, usize)>,
    /// Every key, each part followed by a NUL.
    buffer: String,
}

impl Walker {
    fn report(&mut self, message: String) {
        self.problems.push(Problem {
            path: self.render(self.path.len()),
            message,
        });
    }

    /// The first `n` segments of the path as text: `pools[0].offers[1].quota.vcpu`.
    fn render(&self, n: usize) -> String {
        let mut out = String::new();
        for segment in &self.path[..n] {
            match *segment {
                Segment::Index(index) => {
                    let _ = write!(out, "[{index}]");
                }
                Segment::Key(start, end) => push_key(&mut out, &self.keys[start..end]),
            }
        }
        out
    }

    fn enter_key(&mut self, key: &str) -> usize {
        let start = self.keys.len();
        self.keys.push_str(key);
        self.path.push(Segment::Key(start, self.keys.len()));
        self.path.len() - 1
    }

    fn enter_index(&mut self, index: usize) -> usize {
        self.path.push(Segment::Index(index));
        self.path.len() - 1
    }

    fn leave(&mut self, mark: usize) {
        if let Some(start) = self.path[mark..].iter().find_map(|s| match s {
            Segment::Key(start, _) => Some(*start),
            Segment::Index(_) => None,
        }) {
            self.keys.truncate(start);
        }
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

    /// Records the key made of `parts` for the current list item, reporting it at
    /// `<item>.<field>` when an earlier item has it. Keys are copied into one buffer per list,
    /// not allocated one by one.
    fn unique(&mut self, field: &str, parts: &[&str], what: impl FnOnce() -> String) {
        let Some(seen) = self
            .depth
            .checked_sub(1)
            .and_then(|d| self.lists.get_mut(d))
        else {
            return;
        };
        let mut hasher = FxHasher::default();
        for part in parts {
            hasher.write(part.as_bytes());
            hasher.write_u8(0);
        }
        // The key is written into the buffer first; a repeat takes it out again.
        let start = seen.buffer.len();
        for part in parts {
            seen.buffer.push_str(part);
            seen.buffer.push('\0');
        }
        let end = seen.buffer.len();
        let buffer = &seen.buffer;
        let key = &buffer[start..end];
        let Some((first, ..)) =
            seen.keys
                .get_or_insert(hasher.finish(), (seen.index, start, end), |(_, s, e)| {
                    &buffer[s..e] == key
                })
        else {
            return;
        };
        seen.buffer.truncate(start);
        let item = self
            .path
            .iter()
            .rposition(|s| matches!(s, Segment::Index(_)))
            .unwrap_or(0);
        let list = self.render(item);
        let mark = self.enter_key(field);
        self.report(format!(
            "{} is repeated; {list}[{first}] has it already",
            what()
        ));
        self.leave(mark);
    }

    /// Reports that the value is not what `kind` expects; `got` describes what it is.
    fn wrong<'de>(&mut self, kind: K, got: &str) -> Parsed<'de> {
        let message = match kind {
            K::Document => format!("a document must be an object, not {got}"),
            K::Version => format!("version must be 1, not {got}"),
            K::Name | K::Text | K::Str => format!("must be a string, not {got}"),
            K::SiteKind => choices(&SITE_KINDS, got),
            K::PoolClass => choices(&POOL_CLASSES, got),
            K::Network => choices(&NETWORKS, got),
            K::U32(min) => format!("{}, not {got}", integer_range(min.into(), u32::MAX.into())),
            K::Max => format!("{}, not {got}", integer_range(0, MAX_QUOTA)),
            K::Int => format!("must be an integer from {MIN_INTEGER} to {MAX_INTEGER}, not {got}"),
            K::Budget => budget_message(got),
            K::Quota | K::Config => format!("must be an object, not {got}"),
            K::Policy => format!("a policy must be an object, not {got}"),
            K::Warm => format!("warm must be an object, not {got}"),
            K::List(_) => format!("must be a list, not {got}"),
            K::Item(item) => format!("{} must be an object, not {got}", item.what()),
        };
        self.report(message);
        Parsed::Bad
    }

    fn string_value<'de>(&mut self, kind: K, s: Text<'de>) -> Parsed<'de> {
        match kind {
            K::Str => Parsed::Str(s),
            K::Text => match text_problem(&s) {
                Some(problem) => {
                    self.report(problem);
                    Parsed::Bad
                }
                None => Parsed::Str(s),
            },
            K::Name if !is_name(&s) => {
                self.report(name_message(&s));
                Parsed::Bad
            }
            K::Name => Parsed::Str(s),
            K::SiteKind => self.choice(&SITE_KINDS, &s, kind, Parsed::SiteKind),
            K::PoolClass => self.choice(&POOL_CLASSES, &s, kind, Parsed::PoolClass),
            K::Network => self.choice(&NETWORKS, &s, kind, Parsed::Network),
            _ => self.wrong(kind, "a string"),
        }
    }

    fn choice<'de, T: Copy>(
        &mut self,
        options: &[(&str, T)],
        s: &str,
        kind: K,
        wrap: fn(T) -> Parsed<'de>,
    ) -> Parsed<'de> {
        match options.iter().find(|(name, _)| *name == s) {
            Some(&(_, v)) => wrap(v),
            None => self.wrong(kind, &format!("\"{}\"", shorten(s))),
        }
    }

    fn number<'de>(&mut self, kind: K, n: Num) -> Parsed<'de> {
        match kind {
            K::Version if n.as_f64() == 1.0 => Parsed::U(1),
            K::Version => self.wrong(kind, &n.to_string()),
            K::U32(min) => match self.uint(n, u64::from(min), u64::from(u32::MAX)) {
                Some(v) => Parsed::U(v),
                None => Parsed::Bad,
            },
            K::Max => match self.uint(n, 0, MAX_QUOTA) {
                Some(v) => Parsed::U(v),
                None => Parsed::Bad,
            },
            K::Int => {
                // An integer literal of the i64 range arrives as one; a float at or past its
                // bounds is refused, -2^63 too: it may be a literal below i64::MIN rounded up
                // (`-9223372036854775810`), and never the exact `-9223372036854775808`.
                let value = match n {
                    Num::I(i) => Some(i),
                    Num::U(u) => i64::try_from(u).ok(),
                    Num::F(x)
                        if x.fract() == 0.0
                            && x > -9_223_372_036_854_775_808.0
                            && x < 9_223_372_036_854_775_808.0 =>
                    {
                        Some(x as i64)
                    }
                    Num::F(_) => None,
                };
                let integral = match n {
                    Num::F(x) => x.fract() == 0.0,
                    Num::I(_) | Num::U(_) => true,
                };
                match value {
                    Some(i) if i.unsigned_abs() <= MAX_INTEGER => Parsed::I(i),
                    // Its digits may be rounded: say what is wrong without printing them.
                    _ if integral => {
                        self.report(format!(
                            "must be an integer from {MIN_INTEGER} to {MAX_INTEGER}; this number is out of range"
                        ));
                        Parsed::Bad
                    }
                    _ => self.wrong(kind, &n.to_string()),
                }
            }
            K::Budget if (0.0..=1.0).contains(&n.as_f64()) => Parsed::F(n.as_f64()),
            K::Budget => self.wrong(kind, &n.to_string()),
            _ => self.wrong(kind, "a number"),
        }
    }

    fn uint(&mut self, n: Num, min: u64, max: u64) -> Option<u64> {
        let expect = || integer_range(min, max);
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
            Some(v) if v > max && matches!(n, Num::U(_)) => {
                self.report(format!("{}; {v} is too large", expect()));
                None
            }
            // A float past the range is what its text rounded to (`9007199254740991.5` reads
            // as 2^53; integers past 2^64 arrive as floats too): printing it would show digits
            // that were not written.
            Some(v) if v > max => {
                self.report(format!("{}; this number is too large", expect()));
                None
            }
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

    /// Reads the fields of an object per `spec` in document order: repeated and unknown keys
    /// are reported, `null` is absent where `spec` allows it.
    fn fields<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
        what: &str,
        spec: &[Spec],
        slots: &mut Slots<'de>,
    ) -> Result<(), A::Error> {
        let mut seen = 0u32;
        while let Some(Key(key)) = map.next_key()? {
            let mark = self.enter_key(&key);
            match spec.iter().position(|(name, _, _)| *name == key) {
                Some(i) if seen & (1 << i) != 0 => {
                    self.report(KeyProblem::duplicate(&key));
                    map.next_value::<IgnoredAny>()?;
                }
                Some(i) => {
                    seen |= 1 << i;
                    let (_, kind, nullable) = spec[i];
                    let value = map.next_value_seed(Seed { w: self, kind })?;
                    slots[i] = match value {
                        Parsed::Null if nullable => None,
                        Parsed::Null => Some(self.wrong(kind, "null")),
                        value => Some(value),
                    };
                }
                None => {
                    let names: Vec<&str> = spec.iter().map(|(name, _, _)| *name).collect();
                    self.report(KeyProblem::unknown(&key, what, &names));
                    map.next_value::<IgnoredAny>()?;
                }
            }
            self.leave(mark);
        }
        Ok(())
    }

    /// A quota (resource names to integer maxima) or a string map (`K::Config`, whose
    /// secret-looking keys must hold references).
    fn map<'de, A: MapAccess<'de>>(
        &mut self,
        mut map: A,
        kind: K,
    ) -> Result<Parsed<'de>, A::Error> {
        let mut quota = Vec::new();
        let mut strings = Vec::new();
        // Keys whose value was invalid, so a repeat of them is still found.
        let mut bad: Vec<Text<'de>> = Vec::new();
        let mut repeats = Repeats::default();
        while let Some(Key(key)) = map.next_key()? {
            let key = Text::from(key);
            let mark = self.enter_key(&key);
            if kind == K::Quota {
                let repeated = repeats.check(&key, || keys(&quota, &bad));
                self.entry(
                    &mut map,
                    key,
                    repeated,
                    (&mut quota, &mut bad),
                    |w, map, key| {
                        // A bad name does not hide a bad maximum: both are reported, key first.
                        let named = is_resource(key);
                        if !named {
                            w.report(resource_message(key));
                        }
                        Ok(match w.value(map, K::Max)? {
                            Parsed::U(max) if named => Some(max),
                            _ => None,
                        })
                    },
                )?;
            } else {
                let repeated = repeats.check(&key, || keys(&strings, &bad));
                self.entry(
                    &mut map,
                    key,
                    repeated,
                    (&mut strings, &mut bad),
                    |w, map, key| {
                        let Parsed::Str(value) = w.value(map, K::Str)? else {
                            return Ok(None);
                        };
                        if looks_secret(key) && !is_secret_reference(&value) {
                            // Never repeat the value: it may be the secret itself.
                            w.report(secret_message(key));
                            return Ok(None);
                        }
                        Ok(Some(value))
                    },
                )?;
            }
            self.leave(mark);
        }
        // Each key once (repeats were skipped): `from_entries` only sorts, when it must.
        Ok(match kind {
            K::Quota => Parsed::Quota(Map::from_entries(quota)),
            _ => Parsed::Map(Map::from_entries(strings)),
        })
    }

    /// One entry of a quota or string map: a repeat (of a key held, or of one whose value was
    /// invalid) is reported and skipped; otherwise `read` reads the value and answers it, or
    /// `None` when it reported it invalid.
    fn entry<'de, A: MapAccess<'de>, V>(
        &mut self,
        map: &mut A,
        key: Text<'de>,
        repeated: bool,
        (held, bad): (&mut Vec<(Text<'de>, V)>, &mut Vec<Text<'de>>),
        read: impl FnOnce(&mut Self, &mut A, &str) -> Result<Option<V>, A::Error>,
    ) -> Result<(), A::Error> {
        if repeated {
            self.report(KeyProblem::duplicate(&key));
            map.next_value::<IgnoredAny>()?;
            return Ok(());
        }
        match read(self, map, &key)? {
            Some(value) => held.push((key, value)),
            None => bad.push(key),
        }
        Ok(())
    }

    /// A map's value of `kind`; `null` is reported as wrong there (a map has no optional values).
    fn value<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
        kind: K,
    ) -> Result<Parsed<'de>, A::Error> {
        let value = map.next_value_seed(Seed { w: self, kind })?;
        if let Parsed::Null = value {
            self.wrong(kind, "null");
        }
        Ok(value)
    }

    /// A list of at most [`MAX_ITEMS`]; invalid items are reported and left out, `take`
    /// unwraps the valid ones.
    fn list<'de, A: SeqAccess<'de>, T>(
        &mut self,
        mut seq: A,
        item: Item,
        take: fn(Parsed<'de>) -> Option<T>,
    ) -> Result<Vec<T>, A::Error> {
        // The length problem belongs before the items' problems, but the length is known last.
        let start = self.problems.len();
        let mut items = Vec::new();
        if self.lists.len() <= self.depth {
            self.lists.push(Seen::default());
        }
        let seen = &mut self.lists[self.depth];
        seen.keys.clear();
        seen.buffer.clear();
        self.depth += 1;
        let mut count = 0;
        loop {
            let mark = self.enter_index(count);
            self.lists[self.depth - 1].index = count;
            let Some(value) = seq.next_element_seed(Seed {
                w: self,
                kind: K::Item(item),
            })?
            else {
                self.leave(mark);
                break;
            };
            let value = match value {
                Parsed::Null => self.wrong(K::Item(item), "null"),
                value => value,
            };
            if let Some(value) = take(value) {
                items.push(value);
            }
            self.leave(mark);
            count += 1;
        }
        self.depth -= 1;
        if count > MAX_ITEMS {
            self.problems.insert(
                start,
                Problem {
                    path: self.render(self.path.len()),
                    message: format!("has {count} items; a list holds at most {MAX_ITEMS}"),
                },
            );
        }
        Ok(items)
    }

    /// Reads an object of `kind` and builds it.
    fn object<'de, A: MapAccess<'de>>(
        &mut self,
        mut map: A,
        kind: K,
    ) -> Result<Parsed<'de>, A::Error> {
        let (what, spec) = match kind {
            K::Document => ("a document", DOCUMENT),
            K::Policy => ("a policy", POLICY),
            K::Warm => ("warm", WARM),
            K::Item(Item::Site) => ("a site", SITE),
            K::Item(Item::Account) => ("a provider account", ACCOUNT),
            K::Item(Item::Pool) => ("a pool", POOL),
            K::Item(Item::Offer) => ("an offer", OFFER),
            K::Item(Item::Flavor) => ("a flavor", FLAVOR),
            K::Item(Item::Template) => ("a sandbox template", TEMPLATE),
            K::Quota | K::Config => return self.map(map, kind),
            _ => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                return Ok(self.wrong(kind, "an object"));
            }
        };
        // Filled in place: the slots are a few hundred bytes, and a returned array is copied.
        let mut slots: Slots<'de> = Default::default();
        self.fields(&mut map, what, spec, &mut slots)?;
        let built = match kind {
            K::Document => self.build_document(&mut slots),
            K::Policy => self.build_policy(&mut slots),
            K::Warm => self.build_warm(&mut slots),
            K::Item(Item::Site) => self.build_site(&mut slots),
            K::Item(Item::Account) => self.build_account(&mut slots),
            K::Item(Item::Pool) => self.build_pool(&mut slots),
            K::Item(Item::Offer) => self.build_offer(&mut slots),
            K::Item(Item::Flavor) => self.build_flavor(&mut slots),
            _ => self.build_template(&mut slots),
        };
        Ok(built.unwrap_or(Parsed::Bad))
    }

    fn build_document<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let version = take(slots, 0, |_| Some(1));
        let list = |slots: &mut Slots<'de>, i| take(slots, i, Some).optional().flatten();
        let document = Document {
            version: self.require(version, "version").unwrap_or(1),
            sites: list(slots, 1).and_then(|p| match p {
                Parsed::Sites(v) => Some(v),
                _ => None,
            }),
            provider_accounts: list(slots, 2).and_then(|p| match p {
                Parsed::Accounts(v) => Some(v),
                _ => None,
            }),
            pools: list(slots, 3).and_then(|p| match p {
                Parsed::Pools(v) => Some(v),
                _ => None,
            }),
            flavors: list(slots, 4).and_then(|p| match p {
                Parsed::Flavors(v) => Some(v),
                _ => None,
            }),
            sandbox_templates: list(slots, 5).and_then(|p| match p {
                Parsed::Templates(v) => Some(v),
                _ => None,
            }),
        };
        Some(Parsed::Document(Box::new(document)))
    }

    fn build_policy<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let budget = take(slots, 0, |p| match p {
            Parsed::F(x) => Some(x),
            _ => None,
        });
        let disruption_budget = self.require(budget, "disruptionBudget")?;
        Some(Parsed::Policy(Policy { disruption_budget }))
    }

    fn build_warm<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let min = take(slots, 0, u32_of);
        let max = take(slots, 1, u32_of);
        let (min, max) = (self.require(min, "min"), self.require(max, "max"));
        let (min, max) = (min?, max?);
        if min > max {
            self.report(warm_message(min, max));
            return None;
        }
        Some(Parsed::Warm(Warm { min, max }))
    }

    fn build_site<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let name = take(slots, 0, string);
        let kind = take(slots, 1, |p| match p {
            Parsed::SiteKind(k) => Some(k),
            _ => None,
        });
        let region = take(slots, 2, string);
        if let Field::Ok(n) = &name {
            self.unique("name", &[n], || format!("site \"{n}\""));
        }
        let name = self.require(name, "name");
        let kind = self.require(kind, "kind");
        let region = self.require(region, "region");
        Some(Parsed::Site(Site {
            name: name?,
            kind: kind?,
            region: region?,
        }))
    }

    fn build_account<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let name = take(slots, 0, string);
        let provider = take(slots, 1, string);
        let config = take(slots, 2, |p| match p {
            Parsed::Map(m) => Some(m),
            _ => None,
        });
        if let Field::Ok(n) = &name {
            self.unique("name", &[n], || format!("provider account \"{n}\""));
        }
        let name = self.require(name, "name");
        let provider = self.require(provider, "provider");
        let config = self.require(config, "config");
        Some(Parsed::Account(ProviderAccount {
            name: name?,
            provider: provider?,
            config: config?,
        }))
    }

    fn build_pool<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let name = take(slots, 0, string);
        let site = take(slots, 1, string);
        let class = take(slots, 2, |p| match p {
            Parsed::PoolClass(c) => Some(c),
            _ => None,
        });
        let gpu_model = take(slots, 3, string);
        let provider_account = take(slots, 4, string);
        let policy = take(slots, 5, |p| match p {
            Parsed::Policy(p) => Some(p),
            _ => None,
        });
        let owner_quota = take(slots, 6, |p| match p {
            Parsed::Quota(q) => Some(q),
            _ => None,
        });
        let offers = take(slots, 7, |p| match p {
            Parsed::Offers(o) => Some(o),
            _ => None,
        });
        if let Field::Ok(n) = &name {
            self.unique("name", &[n], || format!("pool \"{n}\""));
        }
        let misplaced_account = match (&class, &provider_account) {
            (Field::Ok(PoolClass::Provider), Field::Absent) => {
                self.report(
                    "missing required field \"providerAccount\" (a pool of class \"provider\" \
                     names its provider account)"
                        .to_owned(),
                );
                false
            }
            (Field::Ok(c), Field::Ok(_)) if *c != PoolClass::Provider => {
                let mark = self.enter_key("providerAccount");
                self.report("only a pool of class \"provider\" has a provider account".to_owned());
                self.leave(mark);
                true
            }
            _ => false,
        };
        // Every problem of the pool is reported, a misplaced account's among them.
        let name = self.require(name, "name");
        let site = self.require(site, "site");
        let class = self.require(class, "class");
        if misplaced_account {
            return None;
        }
        Some(Parsed::Pool(Box::new(Pool {
            name: name?,
            site: site?,
            class: class?,
            gpu_model: gpu_model.optional()?,
            provider_account: provider_account.optional()?,
            policy: policy.optional()?,
            owner_quota: owner_quota.optional()?,
            offers: offers.optional()?,
        })))
    }

    fn build_offer<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let tenant = take(slots, 0, string);
        let quota = take(slots, 1, |p| match p {
            Parsed::Quota(q) => Some(q),
            _ => None,
        });
        let priority = take(slots, 2, |p| match p {
            Parsed::I(i) => Some(i),
            _ => None,
        });
        if let Field::Ok(t) = &tenant {
            self.unique("tenant", &[t], || format!("offer to tenant \"{t}\""));
        }
        let tenant = self.require(tenant, "tenant");
        let quota = self.require(quota, "quota");
        Some(Parsed::Offer(Offer {
            tenant: tenant?,
            quota: quota?,
            priority: priority.optional()?,
        }))
    }

    fn build_flavor<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let pool = take(slots, 0, string);
        let name = take(slots, 1, string);
        let vcpu = take(slots, 2, u32_of);
        let memory = take(slots, 3, u32_of);
        let disk = take(slots, 4, u32_of);
        let gpu = take(slots, 5, u32_of);
        if let (Field::Ok(p), Field::Ok(n)) = (&pool, &name) {
            self.unique("name", &[p, n], || {
                format!("flavor \"{n}\" of pool \"{p}\"")
            });
        }
        let pool = self.require(pool, "pool");
        let name = self.require(name, "name");
        let vcpu = self.require(vcpu, "vcpu");
        let memory = self.require(memory, "memoryGiB");
        let disk = self.require(disk, "diskGiB");
        Some(Parsed::Flavor(Flavor {
            pool: pool?,
            name: name?,
            vcpu: vcpu?,
            memory_gib: memory?,
            disk_gib: disk?,
            gpu: gpu.optional()?,
        }))
    }

    fn build_template<'de>(&mut self, slots: &mut Slots<'de>) -> Option<Parsed<'de>> {
        let name = take(slots, 0, string);
        let pool = take(slots, 1, string);
        let flavor = take(slots, 2, string);
        let image = take(slots, 3, string);
        let env = take(slots, 4, |p| match p {
            Parsed::Map(m) => Some(m),
            _ => None,
        });
        let network = take(slots, 5, |p| match p {
            Parsed::Network(n) => Some(n),
            _ => None,
        });
        let warm = take(slots, 6, |p| match p {
            Parsed::Warm(w) => Some(w),
            _ => None,
        });
        if let Field::Ok(n) = &name {
            self.unique("name", &[n], || format!("sandbox template \"{n}\""));
        }
        let name = self.require(name, "name");
        let pool = self.require(pool, "pool");
        let flavor = self.require(flavor, "flavor");
        let image = self.require(image, "imageId");
        let network = self.require(network, "network");
        Some(Parsed::Template(Box::new(SandboxTemplate {
            name: name?,
            pool: pool?,
            flavor: flavor?,
            image_id: image?,
            env: env.optional()?,
            network: network?,
            warm: warm.optional()?,
        })))
    }
}

fn choices<T>(options: &[(&str, T)], got: &str) -> String {
    let names: Vec<String> = options.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    let expect = match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    format!("must be {expect}, not {got}")
}

/// Reads one value as `kind` expects, with the walker.
struct Seed<'w> {
    w: &'w mut Walker,
    kind: K,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Parsed<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Parsed<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Parsed<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Parsed<'de>, E> {
        Ok(Parsed::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Parsed<'de>, E> {
        Ok(self.w.wrong(self.kind, "true or false"))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Parsed<'de>, E> {
        Ok(self.w.number(self.kind, Num::U(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Parsed<'de>, E> {
        Ok(self.w.number(self.kind, Num::I(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Parsed<'de>, E> {
        Ok(self.w.number(self.kind, Num::F(v)))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Parsed<'de>, E> {
        Ok(self.w.string_value(self.kind, Text::borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Parsed<'de>, E> {
        Ok(self.w.string_value(self.kind, Text::from(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Parsed<'de>, E> {
        Ok(self.w.string_value(self.kind, Text::from(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed<'de>, A::Error> {
        match self.kind {
            K::List(item) => Ok(match item {
                Item::Site => Parsed::Sites(self.w.list(seq, item, |p| match p {
                    Parsed::Site(s) => Some(s),
                    _ => None,
                })?),
                Item::Account => Parsed::Accounts(self.w.list(seq, item, |p| match p {
                    Parsed::Account(a) => Some(a),
                    _ => None,
                })?),
                Item::Pool => Parsed::Pools(self.w.list(seq, item, |p| match p {
                    Parsed::Pool(p) => Some(*p),
                    _ => None,
                })?),
                Item::Offer => Parsed::Offers(self.w.list(seq, item, |p| match p {
                    Parsed::Offer(o) => Some(o),
                    _ => None,
                })?),
                Item::Flavor => Parsed::Flavors(self.w.list(seq, item, |p| match p {
                    Parsed::Flavor(f) => Some(f),
                    _ => None,
                })?),
                Item::Template => Parsed::Templates(self.w.list(seq, item, |p| match p {
                    Parsed::Template(t) => Some(*t),
                    _ => None,
                })?),
            }),
            kind => {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(self.w.wrong(kind, "a list"))
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Parsed<'de>, A::Error> {
        self.w.object(map, self.kind)
    }
}

/// An object key, borrowed from the input when it has no escapes.
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

/// Finds the repeated keys of one map. Keys that come in increasing order (an export's, a
/// document written from one) cannot repeat: each costs one compare with the last. Once one
/// comes out of order, every key so far goes into a set, which finds the repeats from then on.
#[derive(Default)]
struct Repeats<'de> {
    last: Option<Text<'de>>,
    set: Option<HashSet<Text<'de>>>,
}

impl<'de> Repeats<'de> {
    /// Whether `key` was read before; `seen` answers every key read so far.
    fn check(&mut self, key: &Text<'de>, seen: impl FnOnce() -> Vec<Text<'de>>) -> bool {
        if self.set.is_none() {
            if self.last.as_ref().is_none_or(|last| last < key) {
                self.last = Some(key.clone());
                return false;
            }
            self.set = Some(seen().into_iter().collect());
        }
        let set = self.set.as_mut().expect("set just above");
        !set.insert(key.clone())
    }
}

/// The keys of a map being read: those held and those whose value was invalid.
fn keys<'de, V>(held: &[(Text<'de>, V)], bad: &[Text<'de>]) -> Vec<Text<'de>> {
    held.iter().map(|(k, _)| k).chain(bad).cloned().collect()
}

#[cfg(test)]
mod tests;
