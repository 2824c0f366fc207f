//! The diff behind [`super::plan`]: index the export once, resolve references to ids, then one
//! pass per kind producing changes and calls.
//!
//! References resolve, in this order, to an item of the document, an item of the export (by
//! plan name), or an exported object by its id. An item the document creates is named in later
//! calls by its deterministic id, so the calls of one plan chain without a round trip.

use super::{Action, Change, Plan, PlanOptions, Summary, plan_hash};
use crate::calls::{
    Call, Delete, FlavorCreate, FlavorUpdate, PoolCreate, PoolOffer, PoolSetOwnerQuota,
    PoolUnoffer, PoolUpdate, ProviderAccountCreate, ProviderAccountUpdate, SandboxTemplateCreate,
    SandboxTemplateUpdate, SiteCreate,
};
use crate::document::{Document, Flavor, Offer, Pool, ProviderAccount, SandboxTemplate, Site};
use crate::export::{Export, Kind, ObjectRef, Section};
use crate::hash::{HashIndex, HashMap, HashSet};
use crate::ids;
use crate::map::Map as Entries;
use crate::text::{Text, to_string_keys, to_strings};
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::hash_map;

/// An id: borrowed from the export, or derived for an object this plan creates.
type Id<'a> = Cow<'a, str>;

/// The reason every prune delete carries.
pub const PRUNE_REASON: &str = "not in the document (prune)";

/// Steps of the call order (docs/contracts.md, "Order").
mod step {
    pub const PROVIDER_ACCOUNT_WRITE: u8 = 1;
    pub const SITE_CREATE: u8 = 2;
    pub const POOL_CREATE: u8 = 3;
    pub const POOL_UPDATE_QUOTA: u8 = 4;
    pub const OFFER: u8 = 5;
    pub const FLAVOR_WRITE: u8 = 6;
    pub const TEMPLATE_WRITE: u8 = 7;
    pub const TEMPLATE_DELETE: u8 = 8;
    pub const FLAVOR_DELETE: u8 = 9;
    pub const UNOFFER: u8 = 10;
    pub const POOL_ARCHIVE: u8 = 11;
    pub const PROVIDER_ACCOUNT_DELETE: u8 = 12;
}

pub(super) fn plan(document: &Document<'_>, export: &Export<'_>, options: PlanOptions) -> Plan {
    let mut planner = Planner::new(document, export, options);
    planner.sites();
    planner.provider_accounts();
    planner.pools();
    planner.flavors();
    planner.templates();
    // Prune deletes last, users before what they use: a blocked change or delete keeps its
    // current item, and what that item uses stays in use, so its delete is blocked in the same
    // plan rather than after the first block is fixed.
    planner.prune_flavors();
    planner.prune_pools();
    planner.prune_accounts();
    planner.finish()
}

/// The note of a document item naming an object an earlier item already names (one by its
/// name, the other by its id): applying both would change it twice.
fn twice(kind: Kind, earlier: &str) -> String {
    format!(
        "the same {} as \"{earlier}\" (named twice, by name and by id)",
        kind.noun()
    )
}

/// The id fleet gives the item `name` of `kind` that `caller` creates in `tenant`.
fn derived_id(tenant: &str, caller: &str, kind: Kind, name: &str) -> String {
    ids::derive_id(kind, caller, &ids::idempotency_key(tenant, kind, name))
}

/// `a` + `sep` + `b`, the shape of every composite plan name, without the formatting machinery
/// (it runs once per owner quota, offer and flavor).
fn join(a: &str, sep: &str, b: &str) -> String {
    let mut out = String::with_capacity(a.len() + sep.len() + b.len());
    out.push_str(a);
    out.push_str(sep);
    out.push_str(b);
    out
}

fn capacity<K, V>(n: usize) -> HashMap<K, V> {
    HashMap::with_capacity_and_hasher(n, Default::default())
}

fn slice<T>(list: &Option<Vec<T>>) -> &[T] {
    list.as_deref().unwrap_or(&[])
}

/// The items of a kind that remain after a plan: the document's list when it has one (prune
/// makes it the whole truth), else the current ones, which an absent key leaves alone.
fn remaining<'s, T>(listed: &'s Option<Vec<T>>, current: &'s Option<Vec<T>>) -> &'s [T] {
    listed.as_deref().unwrap_or_else(|| slice(current))
}

/// For each key, the smallest of its users, so a blocked delete names one user
/// deterministically.
fn first_users<K: std::hash::Hash + Eq, U: Ord>(
    uses: impl IntoIterator<Item = (K, U)>,
) -> HashMap<K, U> {
    let mut users: HashMap<K, U> = HashMap::default();
    for (key, user) in uses {
        match users.get_mut(&key) {
            Some(first) if user < *first => *first = user,
            Some(_) => {}
            None => {
                users.insert(key, user);
            }
        }
    }
    users
}

/// What keeps a pool from being archived. Ordered as the note's words would sort (`flavor
/// "pool/name"` before `sandbox template "name"`), so the note names the same user as
/// before, without formatting a note for every item that stays.
#[derive(PartialEq, Eq)]
enum PoolUser<'a> {
    /// A flavor: its pool reference and name.
    Flavor(&'a str, &'a str),
    Template(&'a str),
}

impl PoolUser<'_> {
    fn note(&self) -> String {
        match self {
            PoolUser::Flavor(pool, name) => format!("pool is used by flavor \"{pool}/{name}\""),
            PoolUser::Template(name) => format!("pool is used by sandbox template \"{name}\""),
        }
    }
}

impl<'a> Ord for PoolUser<'a> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (PoolUser::Flavor(a, x), PoolUser::Flavor(b, y)) => {
                // `pool/name` as one string: '/' sorts after '-' and '.', which names use.
                let joined =
                    |pool: &'a str, name: &'a str| pool.bytes().chain(*b"/").chain(name.bytes());
                joined(a, x).cmp(joined(b, y))
            }
            (PoolUser::Flavor(..), PoolUser::Template(_)) => std::cmp::Ordering::Less,
            (PoolUser::Template(_), PoolUser::Flavor(..)) => std::cmp::Ordering::Greater,
            (PoolUser::Template(a), PoolUser::Template(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for PoolUser<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The differing fields of an update, with their values as JSON. Empty for most items, so it
/// allocates nothing until a field differs (a `Map` would seed a hasher even when empty).
#[derive(Default)]
struct Diff {
    /// Each differing field with its current value and the document's.
    fields: Vec<(&'static str, Value, Value)>,
    /// Differing fields that cannot change.
    fixed: Vec<&'static str>,
}

impl Diff {
    fn field<T: Serialize + PartialEq + ?Sized>(
        &mut self,
        name: &'static str,
        before: &T,
        after: &T,
    ) {
        if before != after {
            self.differs(name, before, after);
        }
    }

    fn differs<T: Serialize + ?Sized>(&mut self, name: &'static str, before: &T, after: &T) {
        let json = |v: &T| serde_json::to_value(v).expect("document values serialize");
        self.fields.push((name, json(before), json(after)));
    }

    /// A field that cannot change: a difference blocks the update.
    fn fixed<T: Serialize + PartialEq + ?Sized>(
        &mut self,
        name: &'static str,
        before: &T,
        after: &T,
    ) {
        if before != after {
            self.fixed_differs(name, before, after);
        }
    }

    fn fixed_differs<T: Serialize + ?Sized>(&mut self, name: &'static str, before: &T, after: &T) {
        self.differs(name, before, after);
        self.fixed.push(name);
    }

    fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// A plan name of a kind with a config list: its current item, its exported object, and the
/// id this plan gives it when no object does (see [`Planner::index_ids`]). One entry answers
/// [`Planner::existing`], [`Planner::resolve`] and [`Planner::object`] with one lookup.
#[derive(Default)]
struct Named<'a> {
    /// Its index among the current items, when one has this name.
    item: Option<usize>,
    object: Option<&'a ObjectRef<'a>>,
    /// Set only for a name no object's id answers: the two never disagree.
    made: Option<Id<'a>>,
}

/// The current items of one kind (the export's config) by plan name, and which of them a
/// document item matched: those are not pruned.
struct Current<'a, T> {
    items: &'a [T],
    /// The names of the items and of the kind's exported objects.
    by_name: HashMap<Key<'a>, Named<'a>>,
    /// For each item, the document name that matched it.
    matched: Vec<Option<&'a str>>,
    /// Each item's exported object, when item i pairs with object i and no name repeats
    /// (else empty).
    paired: Vec<&'a ObjectRef<'a>>,
}

impl<'a, T> Current<'a, T> {
    /// `objects`: the kind's exported objects, in export order.
    fn new(items: &'a Option<Vec<T>>, objects: &[&'a ObjectRef<'a>], name: fn(&T) -> &str) -> Self {
        let items = slice(items);
        let mut by_name: HashMap<Key, Named> = capacity(items.len().max(objects.len()));
        // An export lists one object per item, both in name order: item i pairs with object
        // i, and each name is hashed once. (A repeated name keeps its last item and its last
        // object either way, as the map below would.)
        let paired = items.len() == objects.len()
            && items
                .iter()
                .zip(objects)
                .all(|(item, o)| name(item) == o.name.as_str());
        let mut distinct = true;
        for (i, item) in items.iter().enumerate() {
            let object = paired.then(|| objects[i]);
            let named = Named {
                item: Some(i),
                object,
                made: None,
            };
            distinct &= by_name.insert(Key::new(name(item)), named).is_none();
        }
        if !paired {
            for &o in objects {
                by_name.entry(Key::new(&o.name)).or_default().object = Some(o);
            }
        }
        Current {
            items,
            by_name,
            matched: vec![None; items.len()],
            paired: match paired && distinct {
                true => objects.to_vec(),
                false => Vec::new(),
            },
        }
    }

    /// Whether item `i`'s name resolves to its object's id, known with no lookup (see
    /// [`Self::paired`]).
    fn has_id(&self, i: usize) -> bool {
        self.paired.get(i).is_some_and(|o| o.id.is_some())
    }

    /// The current item `i` (from [`Planner::existing`]), marked as matched by the document
    /// item `name`; and the name of an earlier document item that matched it too (the same
    /// object named twice, by its name and by its id), if any.
    fn matching(&mut self, i: usize, name: &'a str) -> (&'a T, Option<&'a str>) {
        let earlier = *self.matched[i].get_or_insert(name);
        // The same item again is the same text: a pointer compare, not a string compare.
        (
            &self.items[i],
            (!std::ptr::eq(earlier, name)).then_some(earlier),
        )
    }

    /// The items no document item matched (asked once, after every match).
    fn unmatched(&mut self) -> impl Iterator<Item = &'a T> + use<'a, T> {
        let matched = std::mem::take(&mut self.matched);
        self.items
            .iter()
            .zip(matched)
            .filter_map(|(item, matched)| matched.is_none().then_some(item))
    }
}

struct Planner<'a> {
    doc: &'a Document<'a>,
    ex: &'a Export<'a>,
    prune: bool,
    tenant: &'a str,
    /// Owner quota entries and offers (most of an export, and looked up only to update or
    /// delete one), sorted by kind and plan name: no hashing of thousands of names.
    entries: Vec<Entry<'a>>,
    /// Exported objects of the kinds with ids by id, built on the first reference that is no
    /// name: most documents name everything by name.
    by_id: OnceCell<HashMap<&'a str, &'a ObjectRef<'a>>>,
    /// Bit `n` set when some object's id is `n` bytes long (bit 63: longer): a reference of
    /// another length is no id, with no need for `by_id`.
    id_lengths: u64,
    tenants: HashSet<&'a str>,
    /// Ids of other tenants' pools offered to this one: templates may use them, nothing else.
    offered: HashSet<&'a str>,
    cur_sites: Current<'a, Site<'a>>,
    cur_accounts: Current<'a, ProviderAccount<'a>>,
    cur_pools: Current<'a, Pool<'a>>,
    cur_templates: Current<'a, SandboxTemplate<'a>>,
    /// The exported object of each existing flavor (the config's order).
    flavor_objects: Vec<Option<&'a ObjectRef<'a>>>,
    /// No two existing flavors have the same pool and name.
    flavors_distinct: bool,
    /// Flavors by (pool id, flavor name): the document's, the export's, offered pools'.
    flavor_ids: HashMap<(Id<'a>, &'a str), FlavorId<'a>>,
    /// The changes, made kind after kind (`Kind` order), each kind's in the order they were
    /// made: mostly sorted already, so the final order costs a check per kind instead of a
    /// sort, and no change is moved again.
    changes: Vec<Change>,
    summary: Summary,
    calls: Vec<(u8, String, Call)>,
    /// Ids of pools, and (pool id, name) of flavors, whose create is blocked: what would go
    /// on them is blocked too (its call would name an object that will not exist). Empty in
    /// plans that can apply.
    blocked_pools: HashSet<String>,
    blocked_flavors: HashSet<(String, String)>,
    /// Current items the plan leaves as they are although the document changes or prunes
    /// them (the change is blocked): what they use stays in use.
    kept_pools: Vec<&'a Pool<'a>>,
    kept_flavors: Vec<&'a Flavor<'a>>,
    kept_templates: Vec<&'a SandboxTemplate<'a>>,
    /// Which current flavors a document flavor matched (by [`Self::flavors`], for the prune).
    flavors_matched: Vec<bool>,
}

/// The exported object of each existing flavor (`pool/name`), and whether no two flavors
/// have the same pool and name. An export lists one object per flavor, both in name order:
/// flavor i pairs with object i, with no name joined or hashed.
fn pair_flavors<'a>(
    flavors: &'a [Flavor<'a>],
    objects: &[&'a ObjectRef<'a>],
) -> (Vec<Option<&'a ObjectRef<'a>>>, bool) {
    let is = |f: &Flavor, name: &str| {
        name.strip_prefix(f.pool.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(f.name.as_str())
    };
    // Strictly increasing names: each names one object, as the map below would find it.
    let paired = flavors.len() == objects.len()
        && objects.is_sorted_by(|a, b| a.name < b.name)
        && flavors.iter().zip(objects).all(|(f, o)| is(f, &o.name));
    if paired {
        return (objects.iter().copied().map(Some).collect(), true);
    }
    let by_name: HashMap<&str, &ObjectRef> =
        objects.iter().map(|o| (o.name.as_str(), *o)).collect();
    let found = flavors
        .iter()
        .map(|f| by_name.get(join(&f.pool, "/", &f.name).as_str()).copied())
        .collect();
    // Rare (an export built by hand): whether pairs repeat is left to the prune to check.
    (found, false)
}

/// Byte order of two names, their first 8 bytes compared as numbers, where names mostly
/// differ: sorting a plan's changes made tens of thousands of `memcmp` calls.
fn cmp_names(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x.cmp(&y);
        }
    }
    a.cmp(b)
}

/// The first 16 bytes of `text` as a number, padded with zeros: they order as the texts do,
/// and with the length tell most names apart, without reading them again.
fn head(text: &str) -> u128 {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let word = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    // No copy of a variable length into a padded buffer: that is a `memcpy` call, and this
    // runs for every lookup.
    match n {
        16.. => u128::from_be_bytes(*bytes.first_chunk().expect("16 bytes")),
        8..16 => {
            // The last 8 bytes, shifted so that byte 8 leads (they overlap the first 8).
            let low = word(n - 8).checked_shl(8 * (16 - n) as u32).unwrap_or(0);
            (u128::from(word(0)) << 64) | u128::from(low)
        }
        _ => {
            let high = bytes
                .iter()
                .enumerate()
                .fold(0u64, |high, (i, &b)| high | u64::from(b) << (56 - 8 * i));
            u128::from(high) << 64
        }
    }
}

/// A plan name as a map key. A lookup compares its first 16 bytes and length, held in the
/// key, and reads the name itself (far away in the export's text: a cache miss, and a
/// `memcmp` call) only past them. Names are mostly shorter.
#[derive(Clone, Copy)]
struct Key<'a> {
    head: u128,
    text: &'a str,
}

impl<'a> Key<'a> {
    fn new(text: &'a str) -> Self {
        Key {
            head: head(text),
            text,
        }
    }

    fn tail(&self) -> &'a [u8] {
        self.text.as_bytes().get(16..).unwrap_or_default()
    }
}

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        // Zero padding: a length tells "a" from "a\0".
        self.head == other.head
            && self.text.len() == other.text.len()
            && (self.text.len() <= 16 || self.tail() == other.tail())
    }
}

impl Eq for Key<'_> {}

impl std::hash::Hash for Key<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(self.head);
        state.write_usize(self.text.len());
        state.write(self.tail());
    }
}

/// An owner quota entry or offer of the export, for a binary search by kind and name. The
/// names lie all over memory: their first 16 bytes, as a number, decide most comparisons
/// without reading them (a search read a dozen of them, a cache miss each).
struct Entry<'a> {
    kind: Kind,
    prefix: u128,
    name: &'a str,
    /// `None` only in the key searched for.
    object: Option<&'a ObjectRef<'a>>,
}

impl<'a> Entry<'a> {
    fn new(kind: Kind, name: &'a str, object: Option<&'a ObjectRef<'a>>) -> Self {
        Entry {
            kind,
            prefix: head(name),
            name,
            object,
        }
    }

    /// The order of (kind, name).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.kind, self.prefix)
            .cmp(&(other.kind, other.prefix))
            .then_with(|| self.name.cmp(other.name))
    }
}

/// A flavor's id, and its index among the existing flavors when it exists.
struct FlavorId<'a> {
    id: Id<'a>,
    current: Option<usize>,
}

/// The bit of [`Planner::id_lengths`] for a text of `len` bytes.
fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

impl<'a> Planner<'a> {
    fn new(doc: &'a Document<'a>, ex: &'a Export<'a>, options: PlanOptions) -> Self {
        let config = &ex.config;
        // The objects of each kind, in export order, with room for one per config item (an
        // export's count): growing them cost a plan 1 % of its instructions.
        let mut of_kind: [Vec<&ObjectRef>; Kind::ALL.len()] = Default::default();
        of_kind[Kind::Site as usize].reserve(slice(&config.sites).len());
        of_kind[Kind::ProviderAccount as usize].reserve(slice(&config.provider_accounts).len());
        of_kind[Kind::Pool as usize].reserve(slice(&config.pools).len());
        of_kind[Kind::Flavor as usize].reserve(slice(&config.flavors).len());
        of_kind[Kind::SandboxTemplate as usize].reserve(slice(&config.sandbox_templates).len());
        let entry_count = slice(&config.pools)
            .iter()
            .map(|p| p.owner_quota.as_ref().map_or(0, Entries::len) + slice(&p.offers).len())
            .sum();
        let mut entries: Vec<Entry> = Vec::with_capacity(entry_count);
        let mut id_lengths = 0;
        // Room for every change of a kind: the export's items plus the document's.
        let mut per_kind = [0usize; Kind::ALL.len()];
        let pools = slice(&doc.pools);
        per_kind[Kind::Site as usize] = slice(&doc.sites).len();
        per_kind[Kind::ProviderAccount as usize] = slice(&doc.provider_accounts).len();
        per_kind[Kind::Pool as usize] = pools.len();
        per_kind[Kind::OwnerQuota as usize] = pools
            .iter()
            .map(|p| p.owner_quota.as_ref().map_or(0, Entries::len))
            .sum();
        per_kind[Kind::Offer as usize] = pools.iter().map(|p| slice(&p.offers).len()).sum();
        per_kind[Kind::Flavor as usize] = slice(&doc.flavors).len();
        per_kind[Kind::SandboxTemplate as usize] = slice(&doc.sandbox_templates).len();
        for object in &ex.objects {
            per_kind[object.kind as usize] += 1;
            if matches!(object.kind, Kind::OwnerQuota | Kind::Offer) {
                entries.push(Entry::new(object.kind, &object.name, Some(object)));
                continue;
            }
            of_kind[object.kind as usize].push(object);
            if let Some(id) = &object.id {
                id_lengths |= length_bit(id.len());
            }
        }
        // Exports list objects in this order already: then this is one pass. (The stable
        // sort keeps export order among equal names, as when grouped by kind first.)
        if !entries.is_sorted_by(|a, b| a.cmp(b).is_le()) {
            entries.sort_by(Entry::cmp);
        }
        let flavors = slice(&config.flavors);
        let (flavor_objects, flavors_distinct) =
            pair_flavors(flavors, &of_kind[Kind::Flavor as usize]);
        let mut planner = Planner {
            doc,
            ex,
            prune: options.prune,
            tenant: &ex.tenant_id,
            entries,
            by_id: OnceCell::new(),
            id_lengths,
            tenants: ex.tenants.iter().map(Text::as_str).collect(),
            offered: ex.offered_pools.iter().map(|p| p.id.as_str()).collect(),
            cur_sites: Current::new(&config.sites, &of_kind[Kind::Site as usize], |s| &s.name),
            cur_accounts: Current::new(
                &config.provider_accounts,
                &of_kind[Kind::ProviderAccount as usize],
                |a| &a.name,
            ),
            cur_pools: Current::new(&config.pools, &of_kind[Kind::Pool as usize], |p| &p.name),
            cur_templates: Current::new(
                &config.sandbox_templates,
                &of_kind[Kind::SandboxTemplate as usize],
                |t| &t.name,
            ),
            flavor_objects,
            flavors_distinct,
            flavor_ids: capacity(flavors.len() + slice(&doc.flavors).len()),
            changes: Vec::with_capacity(per_kind.iter().sum()),
            summary: Summary::default(),
            calls: Vec::new(),
            blocked_pools: HashSet::default(),
            blocked_flavors: HashSet::default(),
            kept_pools: Vec::new(),
            kept_flavors: Vec::new(),
            kept_templates: Vec::new(),
            flavors_matched: Vec::new(),
        };
        planner.index_ids();
        planner
    }

    /// The names of a kind with one entry per name: sites, provider accounts, pools and
    /// sandbox templates (quotas, offers and flavors are keyed by more than a name).
    fn by_name(&self, kind: Kind) -> Option<&HashMap<Key<'a>, Named<'a>>> {
        match kind {
            Kind::Site => Some(&self.cur_sites.by_name),
            Kind::ProviderAccount => Some(&self.cur_accounts.by_name),
            Kind::Pool => Some(&self.cur_pools.by_name),
            Kind::SandboxTemplate => Some(&self.cur_templates.by_name),
            Kind::OwnerQuota | Kind::Offer | Kind::Flavor => None,
        }
    }

    /// The names of a kind that references name: sites, provider accounts, pools.
    fn names(&self, kind: Kind) -> &HashMap<Key<'a>, Named<'a>> {
        match kind {
            Kind::Site | Kind::ProviderAccount | Kind::Pool => self.by_name(kind),
            _ => None,
        }
        .expect("only sites, provider accounts and pools are referenced by name")
    }

    /// Gives the name `name` of `kind` (referenced by name) the id `id` (see
    /// [`Self::index_ids`]).
    fn make(&mut self, kind: Kind, name: &'a str, id: Id<'a>) {
        let names = match kind {
            Kind::Site => &mut self.cur_sites.by_name,
            Kind::ProviderAccount => &mut self.cur_accounts.by_name,
            Kind::Pool => &mut self.cur_pools.by_name,
            _ => unreachable!("only sites, provider accounts and pools are referenced by name"),
        };
        names.entry(Key::new(name)).or_default().made = Some(id);
    }

    /// The exported object of `kind` (one with an id) whose id is `id`.
    fn by_id(&self, kind: Kind, id: &str) -> Option<&'a ObjectRef<'a>> {
        if self.id_lengths & length_bit(id.len()) == 0 {
            return None;
        }
        let by_id = self.by_id.get_or_init(|| {
            let mut by_id = HashMap::default();
            for object in &self.ex.objects {
                if let (false, Some(id)) = (
                    matches!(object.kind, Kind::OwnerQuota | Kind::Offer),
                    &object.id,
                ) {
                    by_id.insert(id.as_str(), object);
                }
            }
            by_id
        });
        by_id.get(id).copied().filter(|o| o.kind == kind)
    }

    /// Fills the reference maps with what the export's objects do not answer: config names
    /// without an object, offered pools, then the document's new names. A name the export
    /// already resolves keeps that id (the document item is the same object).
    fn index_ids(&mut self) {
        let (doc, ex) = (self.doc, self.ex);
        // A config item paired with its object resolves to its id: no lookup.
        for (i, s) in slice(&ex.config.sites).iter().enumerate() {
            if !self.cur_sites.has_id(i) && self.resolve(Kind::Site, &s.name).is_none() {
                let id = self.existing_id(Kind::Site, &s.name);
                self.make(Kind::Site, &s.name, id);
            }
        }
        for (i, a) in slice(&ex.config.provider_accounts).iter().enumerate() {
            if !self.cur_accounts.has_id(i)
                && self.resolve(Kind::ProviderAccount, &a.name).is_none()
            {
                let id = self.existing_id(Kind::ProviderAccount, &a.name);
                self.make(Kind::ProviderAccount, &a.name, id);
            }
        }
        for (i, p) in slice(&ex.config.pools).iter().enumerate() {
            if !self.cur_pools.has_id(i) && self.resolve(Kind::Pool, &p.name).is_none() {
                let id = self.existing_id(Kind::Pool, &p.name);
                self.make(Kind::Pool, &p.name, id);
            }
        }
        for s in slice(&doc.sites) {
            if self.resolve(Kind::Site, &s.name).is_none() {
                let id = self.id_of(Kind::Site, &s.name);
                self.make(Kind::Site, &s.name, id);
            }
        }
        // Items of a kind the deployment does not serve will not exist: references to them
        // stay unknown.
        if !self.missing(Section::ProviderAccounts) {
            for a in slice(&doc.provider_accounts) {
                if self.resolve(Kind::ProviderAccount, &a.name).is_none() {
                    let id = self.id_of(Kind::ProviderAccount, &a.name);
                    self.make(Kind::ProviderAccount, &a.name, id);
                }
            }
        }
        for p in slice(&doc.pools) {
            if self.resolve(Kind::Pool, &p.name).is_none() {
                let id = self.id_of(Kind::Pool, &p.name);
                self.make(Kind::Pool, &p.name, id);
            }
        }
        // After the document's pools: a pool the document names like an offered pool's id is
        // its own pool, and its calls name its own id (the one its create makes, or, once it
        // exists, the export's), not the offered one.
        for offered in &ex.offered_pools {
            if self.resolve(Kind::Pool, &offered.id).is_none() {
                self.make(Kind::Pool, &offered.id, Cow::Borrowed(offered.id.as_str()));
            }
            for f in &offered.flavors {
                let id = FlavorId {
                    id: Cow::Borrowed(f.id.as_str()),
                    current: None,
                };
                let key = (Cow::Borrowed(offered.id.as_str()), f.name.as_str());
                self.flavor_ids.insert(key, id);
            }
        }
        for (i, f) in slice(&ex.config.flavors).iter().enumerate() {
            let pool = self.resolve(Kind::Pool, &f.pool);
            let pool = pool.unwrap_or(Cow::Borrowed(&f.pool));
            let id = FlavorId {
                id: self.flavor_id(i),
                current: Some(i),
            };
            self.flavor_ids.insert((pool, &f.name), id);
        }
        let doc_flavors = match self.missing(Section::Flavors) {
            true => &[][..],
            false => slice(&doc.flavors),
        };
        for f in doc_flavors {
            let Some(pool) = self.resolve(Kind::Pool, &f.pool) else {
                continue;
            };
            // An existing flavor's id is in already, under this very key (the loop above).
            // (The id is derived by a free function: the entry below holds `self` borrowed.)
            let (tenant, caller) = (self.tenant, &self.ex.caller);
            let id = || {
                let name = join(&f.pool, "/", &f.name);
                Cow::Owned(derived_id(tenant, caller, Kind::Flavor, &name))
            };
            match self.flavor_ids.entry((pool, &f.name)) {
                hash_map::Entry::Occupied(known) if known.get().current.is_some() => {}
                entry => {
                    entry.insert_entry(FlavorId {
                        id: id(),
                        current: None,
                    });
                }
            }
        }
    }

    /// The existing item a document name matches (the same plan name, or the id of an
    /// exported object of that kind): its index among the current items of its kind, and its
    /// export name. Found once, so the caller neither looks it up again nor by name.
    fn existing(&self, kind: Kind, name: &'a str) -> Option<(usize, &'a str)> {
        let by_name = self.by_name(kind)?;
        if let Some(i) = by_name.get(&Key::new(name)).and_then(|n| n.item) {
            return Some((i, name));
        }
        let name = self.by_id(kind, name)?.name.as_str();
        by_name
            .get(&Key::new(name))
            .and_then(|n| n.item)
            .map(|i| (i, name))
    }

    /// The note of a create whose derived `id` is already the name of another item of `kind`
    /// (one that exists, or one this plan creates under another id): one reference would mean
    /// both, and the server refuses the create (docs/contracts.md), so the plan says so first.
    fn id_taken_as_name(&self, kind: Kind, id: &Id<'a>) -> Option<String> {
        let Cow::Owned(id) = id else { return None };
        let named = self.by_name(kind)?.get(&Key::new(id))?;
        let taken = named.item.is_some() || named.made.as_ref().is_some_and(|other| other != id);
        taken.then(|| {
            format!(
                "its create would give it the id {id}, which {} \"{id}\" has as its name",
                kind.noun()
            )
        })
    }

    /// The exported object of `kind` named `export_name` (a flavor's is found by its config
    /// item: [`Self::flavor_objects`]).
    fn object(&self, kind: Kind, export_name: &str) -> Option<&'a ObjectRef<'a>> {
        match kind {
            Kind::OwnerQuota | Kind::Offer => {
                let wanted = Entry::new(kind, export_name, None);
                self.entries
                    .binary_search_by(|e| e.cmp(&wanted))
                    .ok()
                    .and_then(|i| self.entries[i].object)
            }
            Kind::Flavor => unreachable!("a flavor's object is found by its config item"),
            _ => self
                .by_name(kind)?
                .get(&Key::new(export_name))
                .and_then(|n| n.object),
        }
    }

    /// The id of an existing item by its export name.
    fn existing_id(&self, kind: Kind, export_name: &str) -> Id<'a> {
        self.id_or_derived(kind, self.object(kind, export_name), export_name)
    }

    /// The id of `object`, the existing item named `export_name`.
    fn id_or_derived(
        &self,
        kind: Kind,
        object: Option<&'a ObjectRef<'a>>,
        export_name: &str,
    ) -> Id<'a> {
        match object.and_then(|o| o.id.as_deref()) {
            Some(id) => Cow::Borrowed(id),
            // An export without the object's id: the id it would have if fleet created it.
            None => Cow::Owned(self.derived_id(kind, export_name)),
        }
    }

    /// The id of the existing flavor `i` (the config's order).
    fn flavor_id(&self, i: usize) -> Id<'a> {
        match self.flavor_objects[i].and_then(|o| o.id.as_deref()) {
            Some(id) => Cow::Borrowed(id),
            None => {
                let f = &slice(&self.ex.config.flavors)[i];
                Cow::Owned(self.derived_id(Kind::Flavor, &join(&f.pool, "/", &f.name)))
            }
        }
    }

    /// The id of a document item: the existing object's, or the one its create call makes.
    fn id_of(&self, kind: Kind, name: &'a str) -> Id<'a> {
        match self.existing(kind, name) {
            Some((_, existing)) => self.existing_id(kind, existing),
            None => Cow::Owned(self.derived_id(kind, name)),
        }
    }

    fn key(&self, kind: Kind, name: &str) -> String {
        ids::idempotency_key(self.tenant, kind, name)
    }

    fn derived_id(&self, kind: Kind, name: &str) -> String {
        derived_id(self.tenant, &self.ex.caller, kind, name)
    }

    fn revision(&self, kind: Kind, export_name: &str) -> Option<u64> {
        self.object(kind, export_name).map(|o| o.revision)
    }

    /// The note of an exported object another tenant's object uses (see
    /// [`crate::export::ObjectRef::used_by`]): it cannot go while that stays.
    fn used_elsewhere(&self, kind: Kind, object: Option<&'a ObjectRef<'a>>) -> Option<String> {
        let user = object?.used_by.as_ref()?;
        Some(format!("{} is used by {}", kind.noun(), user.describe()))
    }

    fn missing(&self, section: Section) -> bool {
        self.ex.missing.contains(&section)
    }

    /// The id a reference (a plan name or an id) of `kind` names: one the reference maps hold,
    /// else an exported object's, by its plan name or by its id.
    fn resolve(&self, kind: Kind, reference: &str) -> Option<Id<'a>> {
        if let Some(named) = self.names(kind).get(&Key::new(reference)) {
            let id = named.object.and_then(|o| o.id.as_deref());
            if let Some(id) = id.map(Cow::Borrowed).or_else(|| named.made.clone()) {
                return Some(id);
            }
        }
        let id = self.by_id(kind, reference)?.id.as_deref()?;
        Some(Cow::Borrowed(id))
    }

    /// Whether the change just recorded is a blocked create.
    fn last_create_blocked(&self) -> bool {
        self.changes
            .last()
            .is_some_and(|c| c.blocked && c.action == Action::Create)
    }

    /// The note of an item going on pool `pool_id` (named `name` in the document) whose
    /// create is blocked. Added only to an item nothing else blocks: the first reason is the
    /// one to fix.
    fn on_blocked_pool(&self, pool_id: &str, name: &str) -> Option<String> {
        (!self.blocked_pools.is_empty() && self.blocked_pools.contains(pool_id))
            .then(|| format!("pool \"{name}\" is blocked"))
    }

    /// True when two references name the same object (`fra` and `site_01…` may).
    fn same(&self, kind: Kind, a: &str, b: &str) -> bool {
        a == b
            || matches!(
                (self.resolve(kind, a), self.resolve(kind, b)),
                (Some(x), Some(y)) if x == y
            )
    }

    /// Records a change; its call is kept only when nothing blocks it. Answers whether it is
    /// blocked.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        kind: Kind,
        name: String,
        action: Action,
        diff: Option<Diff>,
        mut notes: Vec<String>,
        reason: Option<&str>,
        call: Option<(u8, Call)>,
    ) -> bool {
        let mut change = Change {
            kind,
            name,
            action,
            fields: Vec::new(),
            before: None,
            after: None,
            blocked: false,
            note: None,
            reason: reason.map(str::to_owned),
        };
        if let Some(diff) = diff {
            if !diff.fixed.is_empty() {
                notes.insert(
                    0,
                    format!(
                        "{} cannot change; create a new {} instead",
                        diff.fixed.join(", "),
                        kind.noun()
                    ),
                );
            }
            // Sized once: growing each map and list cost more than filling them.
            let n = diff.fields.len();
            let (mut before, mut after) = (Map::with_capacity(n), Map::with_capacity(n));
            change.fields.reserve_exact(n);
            for (name, was, now) in diff.fields {
                change.fields.push(name.to_owned());
                before.insert(name.to_owned(), was);
                after.insert(name.to_owned(), now);
            }
            change.before = Some(Box::new(before));
            change.after = Some(Box::new(after));
        }
        if notes.is_empty() {
            if let Some((step, call)) = call {
                self.calls.push((step, change.name.to_string(), call));
            }
        } else {
            change.blocked = true;
            change.note = Some(notes.join("; "));
        }
        // Counted here, not in a pass over the plan's changes (megabytes of them) at the end.
        let summary = &mut self.summary;
        match change.action {
            Action::Create => summary.create += 1,
            Action::Update => summary.update += 1,
            Action::Delete => summary.delete += 1,
            Action::Unchanged => summary.unchanged += 1,
        }
        summary.blocked |= change.blocked;
        let blocked = change.blocked;
        self.changes.push(change);
        blocked
    }

    fn sites(&mut self) {
        let Some(sites) = &self.doc.sites else { return };
        for s in sites {
            match self.existing(Kind::Site, &s.name) {
                None => {
                    let call = Call::SiteCreate(SiteCreate {
                        tenant_id: self.tenant.to_owned(),
                        idempotency_key: Some(self.key(Kind::Site, &s.name)),
                        kind: s.kind,
                        region: s.region.as_str().to_owned(),
                    });
                    let id = self.id_of(Kind::Site, &s.name);
                    let notes = self.id_taken_as_name(Kind::Site, &id).into_iter().collect();
                    let name = s.name.as_str().to_owned();
                    self.record(
                        Kind::Site,
                        name,
                        Action::Create,
                        None,
                        notes,
                        None,
                        Some((step::SITE_CREATE, call)),
                    );
                }
                Some((i, _)) => {
                    let (cur, earlier) = self.cur_sites.matching(i, &s.name);
                    let notes = earlier.map(|e| twice(Kind::Site, e)).into_iter().collect();
                    let mut diff = Diff::default();
                    diff.fixed("kind", &cur.kind, &s.kind);
                    diff.fixed("region", &cur.region, &s.region);
                    self.update_or_unchanged(
                        Kind::Site,
                        s.name.as_str().to_owned(),
                        diff,
                        notes,
                        None,
                    );
                }
            }
        }
        if self.prune {
            for cur in self.cur_sites.unmatched() {
                let note = "sites are never deleted".to_owned();
                self.record(
                    Kind::Site,
                    cur.name.as_str().to_owned(),
                    Action::Delete,
                    None,
                    vec![note],
                    Some(PRUNE_REASON),
                    None,
                );
            }
        }
    }

    /// Deletes an exported item the document leaves out (prune), blocked by `note` when
    /// something that stays uses it; `call` makes the delete call of its kind.
    fn prune_delete(
        &mut self,
        kind: Kind,
        (export_name, object): (String, Option<&'a ObjectRef<'a>>),
        note: Option<String>,
        (step, call): (u8, fn(Delete) -> Call),
    ) -> bool {
        let delete = Delete {
            tenant_id: self.tenant.to_owned(),
            id: self.id_or_derived(kind, object, &export_name).into_owned(),
            if_revision: object.map_or(0, |o| o.revision),
        };
        let notes = note.into_iter().collect();
        let call = Some((step, call(delete)));
        let reason = Some(PRUNE_REASON);
        self.record(kind, export_name, Action::Delete, None, notes, reason, call)
    }

    /// An existing item: `unchanged` when nothing differs, else `update` with `call`. Answers
    /// whether it is blocked.
    fn update_or_unchanged(
        &mut self,
        kind: Kind,
        name: String,
        diff: Diff,
        notes: Vec<String>,
        call: Option<(u8, Call)>,
    ) -> bool {
        if diff.is_empty() {
            self.record(kind, name, Action::Unchanged, None, notes, None, None)
        } else {
            self.record(kind, name, Action::Update, Some(diff), notes, None, call)
        }
    }

    fn provider_accounts(&mut self) {
        let missing = self.missing(Section::ProviderAccounts);
        if let Some(accounts) = &self.doc.provider_accounts {
            for a in accounts {
                let mut notes = Vec::new();
                if missing {
                    notes.push(
                        "this deployment does not serve provider accounts (vps module)".to_owned(),
                    );
                }
                match self.existing(Kind::ProviderAccount, &a.name) {
                    None => {
                        let call = Call::ProviderAccountCreate(ProviderAccountCreate {
                            tenant_id: self.tenant.to_owned(),
                            idempotency_key: Some(self.key(Kind::ProviderAccount, &a.name)),
                            name: a.name.as_str().to_owned(),
                            provider: a.provider.as_str().to_owned(),
                            config: to_strings(&a.config),
                        });
                        let id = self.id_of(Kind::ProviderAccount, &a.name);
                        notes.extend(self.id_taken_as_name(Kind::ProviderAccount, &id));
                        let step = step::PROVIDER_ACCOUNT_WRITE;
                        self.record(
                            Kind::ProviderAccount,
                            a.name.as_str().to_owned(),
                            Action::Create,
                            None,
                            notes,
                            None,
                            Some((step, call)),
                        );
                    }
                    Some((i, existing)) => {
                        let (cur, earlier) = self.cur_accounts.matching(i, &a.name);
                        notes.extend(earlier.map(|e| twice(Kind::ProviderAccount, e)));
                        let mut diff = Diff::default();
                        diff.fixed("provider", &cur.provider, &a.provider);
                        diff.field("config", &cur.config, &a.config);
                        // Unchanged items need no call: build it only when something differs.
                        let call = (!diff.is_empty()).then(|| {
                            Call::ProviderAccountUpdate(ProviderAccountUpdate {
                                tenant_id: self.tenant.to_owned(),
                                id: self
                                    .existing_id(Kind::ProviderAccount, existing)
                                    .into_owned(),
                                if_revision: self
                                    .revision(Kind::ProviderAccount, existing)
                                    .unwrap_or(0),
                                config: to_strings(&a.config),
                            })
                        });
                        let call = call.map(|call| (step::PROVIDER_ACCOUNT_WRITE, call));
                        self.update_or_unchanged(
                            Kind::ProviderAccount,
                            a.name.as_str().to_owned(),
                            diff,
                            notes,
                            call,
                        );
                    }
                }
            }
        }
    }

    /// Prune's provider account deletes: after the pools', so a pool whose archive or change is
    /// blocked keeps its account in use.
    fn prune_accounts(&mut self) {
        if !(self.prune && self.doc.provider_accounts.is_some()) {
            return;
        }
        // The pools that stay after this plan, by the provider account they use: found on the
        // first delete (most plans delete none).
        let pools = remaining(&self.doc.pools, &self.ex.config.pools);
        let mut users = None;
        for cur in self.cur_accounts.unmatched() {
            let users = users.get_or_insert_with(|| {
                first_users(
                    pools
                        .iter()
                        .chain(self.kept_pools.iter().copied())
                        .filter_map(|p| {
                            let account = p.provider_account.as_deref()?;
                            Some((
                                self.resolve(Kind::ProviderAccount, account)?,
                                p.name.as_str(),
                            ))
                        }),
                )
            });
            let object = self.object(Kind::ProviderAccount, &cur.name);
            let id = self.id_or_derived(Kind::ProviderAccount, object, &cur.name);
            let note = users
                .get(&*id)
                .map(|pool| format!("provider account is used by pool \"{pool}\""));
            self.prune_delete(
                Kind::ProviderAccount,
                (cur.name.as_str().to_owned(), object),
                note,
                (step::PROVIDER_ACCOUNT_DELETE, Call::ProviderAccountDelete),
            );
        }
    }

    /// Pools, then their owner quota entries, then their offers: changes are made kind after
    /// kind.
    fn pools(&mut self) {
        let doc = self.doc;
        let pools = slice(&doc.pools);
        let planned: Vec<_> = pools
            .iter()
            .map(|p| {
                let planned = self.pool(p);
                if planned.1.is_none() && self.last_create_blocked() {
                    self.blocked_pools.insert(planned.0.to_string());
                }
                planned
            })
            .collect();
        for (p, (pool_id, cur)) in pools.iter().zip(&planned) {
            if let Some(quota) = &p.owner_quota {
                self.owner_quota(p, quota, pool_id, *cur);
            }
        }
        for (p, (pool_id, cur)) in pools.iter().zip(&planned) {
            if let Some(offers) = &p.offers {
                self.offers(p, offers, pool_id, *cur);
            }
        }
    }

    fn prune_pools(&mut self) {
        if !(self.prune && self.doc.pools.is_some()) {
            return;
        }
        // What stays after this plan, by the pool it uses: found on the first archive (most
        // plans archive none).
        let flavors = remaining(&self.doc.flavors, &self.ex.config.flavors);
        let templates = remaining(
            &self.doc.sandbox_templates,
            &self.ex.config.sandbox_templates,
        );
        let mut users = None;
        for cur in self.cur_pools.unmatched() {
            let (users, kept) = users.get_or_insert_with(|| {
                let flavor_use = |f: &'a Flavor<'a>| {
                    let id = self.resolve(Kind::Pool, &f.pool)?;
                    Some((id, PoolUser::Flavor(&f.pool, &f.name)))
                };
                let template_uses = templates
                    .iter()
                    .chain(self.kept_templates.iter().copied())
                    .filter_map(|t| {
                        let id = self.resolve(Kind::Pool, &t.pool)?;
                        Some((id, PoolUser::Template(&t.name)))
                    });
                let users = first_users(flavors.iter().filter_map(flavor_use).chain(template_uses));
                let kept = first_users(self.kept_flavors.iter().copied().filter_map(flavor_use));
                (users, kept)
            });
            let object = self.object(Kind::Pool, &cur.name);
            let id = self.id_or_derived(Kind::Pool, object, &cur.name);
            // A flavor kept only because its own delete is blocked is named last: the note
            // names what keeps the pool in the first place when something does.
            let note = users
                .get(&*id)
                .map(PoolUser::note)
                .or_else(|| self.used_elsewhere(Kind::Pool, object))
                .or_else(|| kept.get(&*id).map(PoolUser::note));
            if self.prune_delete(
                Kind::Pool,
                (cur.name.as_str().to_owned(), object),
                note,
                (step::POOL_ARCHIVE, Call::PoolArchive),
            ) {
                self.kept_pools.push(cur);
            }
        }
    }

    /// A pool's change; answers its id and, when it exists, its export name and current
    /// value, for its owner quota and offers.
    fn pool(&mut self, p: &'a Pool<'a>) -> (Id<'a>, Option<(&'a str, &'a Pool<'a>)>) {
        let mut notes = Vec::new();
        // Its templates name an offered pool by its id: a pool of the tenant's own named like
        // that id makes such a reference, and the export that writes it, mean two pools (a
        // fuzzing audit found plans that never converged, and a template update that named
        // the wrong pool's flavor).
        if !self.offered.is_empty() && self.offered.contains(p.name.as_str()) {
            notes.push(format!(
                "\"{}\" is the id of another tenant's pool offered to this one: a pool of this \
                 tenant cannot have it as its name",
                p.name
            ));
        }
        let existing = self.existing(Kind::Pool, &p.name);
        // A reference an update leaves exactly as it is cannot block it: an export names the
        // provider account of a pool by id when the deployment stopped serving accounts, and
        // planning that export back must change nothing.
        let current = existing.map(|(i, _)| &self.cur_pools.items[i]);
        let kept = |reference: for<'p> fn(&'p Pool<'a>) -> Option<&'p str>| {
            current.is_some_and(|cur| reference(cur).is_some() && reference(cur) == reference(p))
        };
        let site_id = self.resolve(Kind::Site, &p.site);
        if site_id.is_none() && !kept(|pool| Some(&pool.site)) {
            notes.push(format!("unknown site \"{}\"", p.site));
        }
        let account_id = p.provider_account.as_ref().map(|a| {
            let id = self.resolve(Kind::ProviderAccount, a);
            if id.is_none() && !kept(|pool| pool.provider_account.as_deref()) {
                notes.push(format!("unknown provider account \"{a}\""));
            }
            id.unwrap_or(Cow::Borrowed(a))
        });
        let pool_id = match self.resolve(Kind::Pool, &p.name) {
            Some(id) => id,
            None => self.id_of(Kind::Pool, &p.name),
        };
        let cur = match existing {
            None => {
                // A name shaped like a pool id that names no pool (one gone since, another
                // tenant's): as a new pool's name it would read as that id, and a pool offered
                // to this tenant later under it would make it mean two pools.
                if ids::has_id_shape(Kind::Pool, &p.name) && !self.offered.contains(p.name.as_str())
                {
                    notes.push(format!(
                        "\"{}\" has the shape of a pool id and names no pool of this tenant: a \
                         new pool cannot take an id as its name",
                        p.name
                    ));
                }
                // Its create gives it the id it derives (bringing back the archived pool of
                // the same name, if any): a pool that has that id as its name (allowed while
                // the archived one was gone) would make one reference mean both.
                notes.extend(self.id_taken_as_name(Kind::Pool, &pool_id));
                let call = Call::PoolCreate(PoolCreate {
                    tenant_id: self.tenant.to_owned(),
                    idempotency_key: Some(self.key(Kind::Pool, &p.name)),
                    site_id: site_id.map_or_else(|| p.site.as_str().to_owned(), Cow::into_owned),
                    class: p.class,
                    gpu_model: p.gpu_model.as_deref().map(str::to_owned),
                    provider_account_id: account_id.map(Cow::into_owned),
                    policy: p.policy.clone(),
                });
                self.record(
                    Kind::Pool,
                    p.name.as_str().to_owned(),
                    Action::Create,
                    None,
                    notes,
                    None,
                    Some((step::POOL_CREATE, call)),
                );
                None
            }
            Some((i, existing)) => {
                let (cur, earlier) = self.cur_pools.matching(i, &p.name);
                notes.extend(earlier.map(|e| twice(Kind::Pool, e)));
                let mut diff = Diff::default();
                // A reference the plan cannot resolve is blocked as unknown (above). Where the
                // export lists every object of its kind, it names another object than now: a
                // differing field (a pool moved to a site that does not exist read "unchanged").
                // Where the export leaves the kind out, whether it does cannot be told, so it is
                // none (a provider account named by name on a deployment that stopped serving
                // them read "providerAccount cannot change" as if it had been changed).
                let untold = |kind: Kind, section: Section, reference: &str| {
                    self.missing(section) && self.resolve(kind, reference).is_none()
                };
                if !self.same(Kind::Site, &cur.site, &p.site)
                    && !untold(Kind::Site, Section::Sites, &p.site)
                {
                    diff.fixed_differs("site", &cur.site, &p.site);
                }
                diff.fixed("class", &cur.class, &p.class);
                diff.fixed("gpuModel", &cur.gpu_model, &p.gpu_model);
                let same_account = match (&cur.provider_account, &p.provider_account) {
                    (Some(a), Some(b)) => {
                        self.same(Kind::ProviderAccount, a, b)
                            || untold(Kind::ProviderAccount, Section::ProviderAccounts, b)
                    }
                    (a, b) => a == b,
                };
                if !same_account {
                    diff.fixed_differs(
                        "providerAccount",
                        &cur.provider_account,
                        &p.provider_account,
                    );
                }
                diff.field("policy", &cur.policy, &p.policy);
                // Unchanged items need no call: build it only when something differs.
                let call = (!diff.is_empty()).then(|| {
                    Call::PoolUpdate(PoolUpdate {
                        tenant_id: self.tenant.to_owned(),
                        id: pool_id.to_string(),
                        if_revision: self.revision(Kind::Pool, existing).unwrap_or(0),
                        policy: p.policy.clone(),
                    })
                });
                let call = call.map(|call| (step::POOL_UPDATE_QUOTA, call));
                if self.update_or_unchanged(
                    Kind::Pool,
                    p.name.as_str().to_owned(),
                    diff,
                    notes,
                    call,
                ) {
                    self.kept_pools.push(cur);
                }
                Some((existing, cur))
            }
        };
        (pool_id, cur)
    }

    fn owner_quota(
        &mut self,
        p: &Pool<'a>,
        quota: &Entries<Text<'a>, u64>,
        pool_id: &str,
        cur: Option<(&str, &Pool<'a>)>,
    ) {
        let empty = Entries::new();
        let (cur_name, cur_quota) = match cur {
            Some((name, pool)) => (name, pool.owner_quota.as_ref().unwrap_or(&empty)),
            None => (p.name.as_str(), &empty),
        };
        // `exists`: the entry is in the current quota.
        let set = |planner: &Self, resource: &str, max: Option<u64>, exists: bool| {
            let existing = join(cur_name, ":", resource);
            Call::PoolSetOwnerQuota(PoolSetOwnerQuota {
                tenant_id: planner.tenant.to_owned(),
                pool_id: pool_id.to_owned(),
                resource: resource.to_owned(),
                max,
                if_revision: exists
                    .then(|| planner.revision(Kind::OwnerQuota, &existing))
                    .flatten(),
            })
        };
        let step = step::POOL_UPDATE_QUOTA;
        // Both quotas iterate in key order: one walk pairs each entry with the current one,
        // with no search per entry.
        let mut current = cur_quota.iter().peekable();
        for (resource, max) in quota {
            let name = join(&p.name, ":", resource);
            while current
                .next_if(|(r, _)| r.as_str() < resource.as_str())
                .is_some()
            {}
            match current.next_if(|(r, _)| r.as_str() == resource.as_str()) {
                None => {
                    let call = Some((step, set(self, resource, Some(*max), false)));
                    let notes = self.on_blocked_pool(pool_id, &p.name).into_iter().collect();
                    self.record(
                        Kind::OwnerQuota,
                        name,
                        Action::Create,
                        None,
                        notes,
                        None,
                        call,
                    );
                }
                Some((_, before)) => {
                    let mut diff = Diff::default();
                    diff.field("max", before, max);
                    let call =
                        (!diff.is_empty()).then(|| (step, set(self, resource, Some(*max), true)));
                    self.update_or_unchanged(Kind::OwnerQuota, name, diff, vec![], call);
                }
            }
        }
        if self.prune {
            let mut wanted = quota.keys().peekable();
            for resource in cur_quota.keys() {
                while wanted.next_if(|r| r.as_str() < resource.as_str()).is_some() {}
                if wanted
                    .peek()
                    .is_some_and(|r| r.as_str() == resource.as_str())
                {
                    continue;
                }
                let name = join(&p.name, ":", resource);
                let call = Some((step, set(self, resource, None, true)));
                self.record(
                    Kind::OwnerQuota,
                    name,
                    Action::Delete,
                    None,
                    vec![],
                    Some(PRUNE_REASON),
                    call,
                );
            }
        }
    }

    fn offers(
        &mut self,
        p: &Pool<'a>,
        offers: &[Offer<'a>],
        pool_id: &str,
        cur: Option<(&str, &Pool<'a>)>,
    ) {
        let (cur_name, cur_offers) = match cur {
            Some((name, pool)) => (name, slice(&pool.offers)),
            None => (p.name.as_str(), &[][..]),
        };
        // A pool has few offers: a scan beats hashing, and long lists get a map.
        const SCAN: usize = 16;
        let by_tenant: Option<HashMap<&str, &Offer<'a>>> = (cur_offers.len() > SCAN)
            .then(|| cur_offers.iter().map(|o| (o.tenant.as_str(), o)).collect());
        let current = |tenant: &str| match &by_tenant {
            Some(map) => map.get(tenant).copied(),
            None => cur_offers.iter().find(|o| o.tenant == tenant),
        };
        for o in offers {
            let name = join(&p.name, " -> ", &o.tenant);
            let mut notes = Vec::new();
            if o.tenant == self.tenant {
                notes.push("a pool cannot be offered to its own owner".to_owned());
            } else if !self.tenants.contains(o.tenant.as_str()) {
                notes.push(format!("unknown tenant \"{}\"", o.tenant));
            }
            if notes.is_empty() {
                notes.extend(self.on_blocked_pool(pool_id, &p.name));
            }
            let existing = current(&o.tenant);
            let call = |planner: &Self| {
                let revision = existing.and_then(|_| {
                    planner.revision(Kind::Offer, &join(cur_name, " -> ", &o.tenant))
                });
                let call = Call::PoolOffer(PoolOffer {
                    tenant_id: planner.tenant.to_owned(),
                    pool_id: pool_id.to_owned(),
                    tenant: o.tenant.as_str().to_owned(),
                    quota: to_string_keys(&o.quota),
                    priority: o.priority,
                    if_revision: revision,
                });
                (step::OFFER, call)
            };
            match existing {
                None => {
                    let call = Some(call(self));
                    self.record(Kind::Offer, name, Action::Create, None, notes, None, call);
                }
                Some(before) => {
                    let mut diff = Diff::default();
                    diff.field("quota", &before.quota, &o.quota);
                    diff.field("priority", &before.priority, &o.priority);
                    let call = (!diff.is_empty()).then(|| call(self));
                    self.update_or_unchanged(Kind::Offer, name, diff, notes, call);
                }
            }
        }
        if self.prune {
            let wanted: Option<HashSet<&str>> =
                (offers.len() > SCAN).then(|| offers.iter().map(|o| o.tenant.as_str()).collect());
            let is_wanted = |tenant: &str| match &wanted {
                Some(set) => set.contains(tenant),
                None => offers.iter().any(|o| o.tenant == tenant),
            };
            for o in cur_offers.iter().filter(|o| !is_wanted(&o.tenant)) {
                let name = join(&p.name, " -> ", &o.tenant);
                let export_name = join(cur_name, " -> ", &o.tenant);
                let revision = self.revision(Kind::Offer, &export_name);
                // The tenant's templates on the pool would lose it.
                let notes: Vec<String> = self
                    .used_elsewhere(Kind::Offer, self.object(Kind::Offer, &export_name))
                    .into_iter()
                    .collect();
                let call = Call::PoolUnoffer(PoolUnoffer {
                    tenant_id: self.tenant.to_owned(),
                    pool_id: pool_id.to_owned(),
                    tenant: o.tenant.as_str().to_owned(),
                    if_revision: revision.unwrap_or(0),
                });
                let call = Some((step::UNOFFER, call));
                self.record(
                    Kind::Offer,
                    name,
                    Action::Delete,
                    None,
                    notes,
                    Some(PRUNE_REASON),
                    call,
                );
            }
        }
    }

    fn flavors(&mut self) {
        let missing = self.missing(Section::Flavors);
        // Which existing flavors a document flavor matched, by config index.
        let mut matched = vec![false; self.flavor_objects.len()];
        // Each (pool id, flavor name) the document lists, by a hash of the pair, with the index
        // of the flavor that listed it first: a pool named by name and by id would otherwise get
        // the flavor twice. (A hash, not the pair: a derived pool id is owned, and cloning it per
        // flavor cost a plan 3 % of its instructions; a hit is checked for real.)
        let mut listed: HashIndex<usize> = HashIndex::default();
        let pair = |pool_id: &str, name: &str| {
            use std::hash::{Hash, Hasher};
            let mut hasher = crate::hash::FxHasher::default();
            (pool_id, name).hash(&mut hasher);
            hasher.finish()
        };
        let doc = self.doc;
        let flavors = slice(&doc.flavors);
        for (index, f) in flavors.iter().enumerate() {
            let name = join(&f.pool, "/", &f.name);
            let pool_id = self.resolve(Kind::Pool, &f.pool);
            let mut notes = Vec::new();
            if missing {
                notes.push("this deployment does not serve flavors (vps module)".to_owned());
            } else if pool_id.is_none() {
                notes.push(format!("unknown pool \"{}\"", f.pool));
            } else if !self.offered.is_empty()
                && pool_id
                    .as_ref()
                    .is_some_and(|id| self.offered.contains(&**id))
            {
                notes.push(format!(
                    "pool \"{}\" is another tenant's, offered to this one: only its owner adds \
                     flavors to it",
                    f.pool
                ));
            }
            if let Some(id) = &pool_id {
                if notes.is_empty() {
                    notes.extend(self.on_blocked_pool(id, &f.pool));
                }
                let earlier = listed.get_or_insert(pair(id, &f.name), index, |i| {
                    let earlier = &flavors[i];
                    earlier.name == f.name
                        && self.resolve(Kind::Pool, &earlier.pool).as_ref() == Some(id)
                });
                if let Some(earlier) = earlier.map(|i| &flavors[i]) {
                    notes.push(twice(
                        Kind::Flavor,
                        &join(&earlier.pool, "/", &earlier.name),
                    ));
                }
            }
            let existing = pool_id.as_ref().and_then(|id| {
                let key = (id.clone(), f.name.as_str());
                self.flavor_ids.get(&key).and_then(|flavor| flavor.current)
            });
            match existing {
                None => {
                    let call = Call::FlavorCreate(FlavorCreate {
                        tenant_id: self.tenant.to_owned(),
                        idempotency_key: Some(self.key(Kind::Flavor, &name)),
                        pool_id: pool_id
                            .map_or_else(|| f.pool.as_str().to_owned(), Cow::into_owned),
                        name: f.name.as_str().to_owned(),
                        vcpu: f.vcpu,
                        memory_gib: f.memory_gib,
                        disk_gib: f.disk_gib,
                        gpu: f.gpu,
                    });
                    let call = Some((step::FLAVOR_WRITE, call));
                    self.record(Kind::Flavor, name, Action::Create, None, notes, None, call);
                    if self.last_create_blocked()
                        && let Some(pool) = self.resolve(Kind::Pool, &f.pool)
                    {
                        self.blocked_flavors
                            .insert((pool.into_owned(), f.name.as_str().to_owned()));
                    }
                }
                Some(i) => {
                    let cur = &slice(&self.ex.config.flavors)[i];
                    matched[i] = true;
                    let mut diff = Diff::default();
                    diff.field("vcpu", &cur.vcpu, &f.vcpu);
                    diff.field("memoryGiB", &cur.memory_gib, &f.memory_gib);
                    diff.field("diskGiB", &cur.disk_gib, &f.disk_gib);
                    diff.field("gpu", &cur.gpu, &f.gpu);
                    // Unchanged items need no call: build it only when something differs.
                    let call = (!diff.is_empty()).then(|| {
                        Call::FlavorUpdate(FlavorUpdate {
                            tenant_id: self.tenant.to_owned(),
                            id: self.flavor_id(i).into_owned(),
                            if_revision: self.flavor_objects[i].map_or(0, |o| o.revision),
                            vcpu: f.vcpu,
                            memory_gib: f.memory_gib,
                            disk_gib: f.disk_gib,
                            gpu: f.gpu,
                        })
                    });
                    let call = call.map(|call| (step::FLAVOR_WRITE, call));
                    if self.update_or_unchanged(Kind::Flavor, name, diff, notes, call) {
                        self.kept_flavors.push(cur);
                    }
                }
            }
        }
        self.flavors_matched = matched;
    }

    /// Prune's flavor deletes: after the templates', so a template whose change is blocked
    /// keeps its flavor in use.
    fn prune_flavors(&mut self) {
        if self.prune && self.doc.flavors.is_some() {
            let mut matched = std::mem::take(&mut self.flavors_matched);
            // The templates that stay after this plan, by the flavor they use: deleting that
            // flavor would leave them dangling. Found on the first delete (most plans delete
            // none).
            let templates = remaining(
                &self.doc.sandbox_templates,
                &self.ex.config.sandbox_templates,
            );
            let mut users = None;
            let current = slice(&self.ex.config.flavors);
            if !self.flavors_distinct {
                // Items of the same pool and name match together.
                let pair = |f: &'a Flavor<'a>| (f.pool.as_str(), f.name.as_str());
                let pairs: HashSet<_> = current
                    .iter()
                    .zip(&matched)
                    .filter(|&(_, &m)| m)
                    .map(|(f, _)| pair(f))
                    .collect();
                for (f, m) in current.iter().zip(&mut matched) {
                    *m = pairs.contains(&pair(f));
                }
            }
            for (i, cur) in current.iter().enumerate() {
                if matched[i] {
                    continue;
                }
                let users = users.get_or_insert_with(|| {
                    first_users(
                        templates
                            .iter()
                            .chain(self.kept_templates.iter().copied())
                            .filter_map(|t| {
                                let pool = self.resolve(Kind::Pool, &t.pool)?;
                                Some(((pool, t.flavor.as_str()), t.name.as_str()))
                            }),
                    )
                });
                let name = join(&cur.pool, "/", &cur.name);
                let object = self.flavor_objects[i];
                let note = self
                    .resolve(Kind::Pool, &cur.pool)
                    .and_then(|pool| users.get(&(pool, cur.name.as_str())))
                    .map(|user| format!("flavor is used by sandbox template \"{user}\""))
                    .or_else(|| self.used_elsewhere(Kind::Flavor, object));
                if self.prune_delete(
                    Kind::Flavor,
                    (name, object),
                    note,
                    (step::FLAVOR_DELETE, Call::FlavorDelete),
                ) {
                    self.kept_flavors.push(cur);
                }
            }
        }
    }

    fn templates(&mut self) {
        let missing = self.missing(Section::SandboxTemplates);
        for t in slice(&self.doc.sandbox_templates) {
            let mut notes = Vec::new();
            let pool_id = self.resolve(Kind::Pool, &t.pool);
            let flavor_id = pool_id.as_ref().and_then(|p| {
                let key = (p.clone(), t.flavor.as_str());
                self.flavor_ids.get(&key).map(|flavor| flavor.id.clone())
            });
            if missing {
                notes.push("this deployment does not run sandboxes (vps v0.5)".to_owned());
            } else if pool_id.is_none() {
                notes.push(format!("unknown pool \"{}\"", t.pool));
            } else if flavor_id.is_none() {
                notes.push(format!("unknown flavor \"{}/{}\"", t.pool, t.flavor));
            }
            if let Some(pool) = pool_id.as_ref().filter(|_| notes.is_empty()) {
                let on_blocked = self.on_blocked_pool(pool, &t.pool);
                let pool_blocked = on_blocked.is_some();
                notes.extend(on_blocked);
                if !pool_blocked
                    && !self.blocked_flavors.is_empty()
                    && self
                        .blocked_flavors
                        .contains(&(pool.to_string(), t.flavor.as_str().to_owned()))
                {
                    notes.push(format!("flavor \"{}/{}\" is blocked", t.pool, t.flavor));
                }
            }
            // Owned only by a call: most templates are unchanged.
            let flavor_id = flavor_id.unwrap_or(Cow::Borrowed(&t.flavor));
            match self.existing(Kind::SandboxTemplate, &t.name) {
                None => {
                    let call = Call::SandboxTemplateCreate(SandboxTemplateCreate {
                        tenant_id: self.tenant.to_owned(),
                        idempotency_key: Some(self.key(Kind::SandboxTemplate, &t.name)),
                        name: t.name.as_str().to_owned(),
                        pool_id: pool_id
                            .map_or_else(|| t.pool.as_str().to_owned(), Cow::into_owned),
                        flavor_id: flavor_id.into_owned(),
                        image_id: t.image_id.as_str().to_owned(),
                        env: t.env.as_ref().map(to_strings),
                        network: t.network,
                        warm: t.warm,
                    });
                    let call = Some((step::TEMPLATE_WRITE, call));
                    let id = self.id_of(Kind::SandboxTemplate, &t.name);
                    notes.extend(self.id_taken_as_name(Kind::SandboxTemplate, &id));
                    self.record(
                        Kind::SandboxTemplate,
                        t.name.as_str().to_owned(),
                        Action::Create,
                        None,
                        notes,
                        None,
                        call,
                    );
                }
                Some((i, existing)) => {
                    let (cur, earlier) = self.cur_templates.matching(i, &t.name);
                    notes.extend(earlier.map(|e| twice(Kind::SandboxTemplate, e)));
                    let mut diff = Diff::default();
                    if !self.same(Kind::Pool, &cur.pool, &t.pool) {
                        diff.fixed_differs("pool", &cur.pool, &t.pool);
                    }
                    let same_flavor = cur.flavor == t.flavor
                        || {
                            let flavor = |pool: &str, name: &'a str| {
                                let pool = self.resolve(Kind::Pool, pool)?;
                                self.flavor_ids.get(&(pool, name)).map(|flavor| &flavor.id)
                            };
                            matches!((flavor(&cur.pool, &cur.flavor), flavor(&t.pool, &t.flavor)), (Some(a), Some(b)) if a == b)
                        };
                    if !same_flavor {
                        diff.differs("flavor", &cur.flavor, &t.flavor);
                    }
                    diff.field("imageId", &cur.image_id, &t.image_id);
                    let empty = Entries::new();
                    let (cur_env, env) = (
                        cur.env.as_ref().unwrap_or(&empty),
                        t.env.as_ref().unwrap_or(&empty),
                    );
                    if cur_env != env {
                        diff.differs("env", &cur.env, &t.env);
                    }
                    diff.field("network", &cur.network, &t.network);
                    diff.field("warm", &cur.warm, &t.warm);
                    // Unchanged items need no call: build it only when something differs.
                    let call = (!diff.is_empty()).then(|| {
                        Call::SandboxTemplateUpdate(SandboxTemplateUpdate {
                            tenant_id: self.tenant.to_owned(),
                            id: self
                                .existing_id(Kind::SandboxTemplate, existing)
                                .into_owned(),
                            if_revision: self
                                .revision(Kind::SandboxTemplate, existing)
                                .unwrap_or(0),
                            flavor_id: flavor_id.into_owned(),
                            image_id: t.image_id.as_str().to_owned(),
                            env: t.env.as_ref().map(to_strings),
                            network: t.network,
                            warm: t.warm,
                        })
                    });
                    let call = call.map(|call| (step::TEMPLATE_WRITE, call));
                    if self.update_or_unchanged(
                        Kind::SandboxTemplate,
                        t.name.as_str().to_owned(),
                        diff,
                        notes,
                        call,
                    ) {
                        self.kept_templates.push(cur);
                    }
                }
            }
        }
        if self.prune && self.doc.sandbox_templates.is_some() {
            for cur in self.cur_templates.unmatched() {
                let object = self.object(Kind::SandboxTemplate, &cur.name);
                if self.prune_delete(
                    Kind::SandboxTemplate,
                    (cur.name.as_str().to_owned(), object),
                    None,
                    (step::TEMPLATE_DELETE, Call::SandboxTemplateDelete),
                ) {
                    self.kept_templates.push(cur);
                }
            }
        }
    }

    fn finish(self) -> Plan {
        let mut changes = self.changes;
        // Grouped by kind: the prune deletes of flavors, pools and provider accounts come last
        // (see `plan`). A stable sort keeps each kind's own order.
        if !changes.is_sorted_by_key(|c| c.kind) {
            changes.sort_by_key(|c| c.kind);
        }
        let mut start = 0;
        while start < changes.len() {
            let kind = changes[start].kind;
            let len = changes[start..].partition_point(|c| c.kind == kind);
            let list = &mut changes[start..start + len];
            // Document<'a> items, then prune deletes: a few sorted runs (names in the order a
            // person numbers them, `site-9` then `site-10`), which the stable sort merges.
            if !list.is_sorted_by(|a, b| cmp_names(&a.name, &b.name).is_le()) {
                list.sort_by(|a, b| cmp_names(&a.name, &b.name));
            }
            start += len;
        }
        let mut calls = self.calls;
        calls.sort_by(|a, b| (a.0, &a.1, a.2.method()).cmp(&(b.0, &b.1, b.2.method())));
        let calls: Vec<Call> = calls.into_iter().map(|(_, _, call)| call).collect();
        Plan {
            plan_hash: plan_hash(&calls),
            changes,
            calls,
            summary: self.summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Key, PoolUser};

    #[test]
    fn heads_are_the_first_16_bytes_padded_with_zeros() {
        let text = "0123456789abcdefghij";
        for n in 0..=text.len() {
            let mut padded = [0u8; 16];
            let len = n.min(16);
            padded[..len].copy_from_slice(&text.as_bytes()[..len]);
            assert_eq!(super::head(&text[..n]), u128::from_be_bytes(padded), "{n}");
        }
    }

    #[test]
    fn keys_are_equal_exactly_when_their_names_are() {
        let names = [
            "",
            "a",
            "a\0",
            "a\0\0",
            "ab",
            "pool-1",
            "pool-10",
            "pool-123",
            "pool-123\0",
            "pool-123:",
            "pool-124:",
            "pool-123:disk",
            "pool-123:gpu",
            "0123456789abcde",
            "0123456789abcdf",
            "0123456789abcdef",
            "0123456789abcdeg",
            "0123456789abcdef0",
            "0123456789abcdef1",
            "0123456789abcdef\0",
        ];
        let hash = |key: &Key| {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<crate::hash::FxHasher>::default().hash_one(key)
        };
        for a in names {
            for b in names {
                let (x, y) = (Key::new(a), Key::new(b));
                assert_eq!(x == y, a == b, "{a:?} vs {b:?}");
                if a == b {
                    assert_eq!(hash(&x), hash(&y));
                }
                assert_eq!(
                    x.head.cmp(&y.head).then(a.cmp(b)),
                    a.cmp(b),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn pool_users_sort_as_their_notes_do() {
        let names = ["a", "a-b", "a.b", "a0", "ab", "b", "a-b-c", "a.b.c", "z"];
        let mut users = Vec::new();
        for pool in names {
            for name in names {
                users.push(PoolUser::Flavor(pool, name));
            }
            users.push(PoolUser::Template(pool));
        }
        for a in &users {
            for b in &users {
                assert_eq!(
                    a.cmp(b),
                    a.note().cmp(&b.note()),
                    "{} vs {}",
                    a.note(),
                    b.note()
                );
            }
        }
    }
}
