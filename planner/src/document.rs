//! The document, version 1: the one place that knows its wire shape.
//!
//! These types describe a document that has passed [`crate::validate()`]; they serialize to the
//! exact JSON an export writes. Maps are [`Map`]s (sorted by key) so serialization is ordered and stable.
//! Their strings are [`Text`]s, borrowed from the JSON a document was read from (the lifetime
//! `'a`); `into_owned` makes a document that outlives its bytes.

use crate::map::Map;
use crate::text::Text;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A fleet document: `version: 1` and any of five lists. A list left out (or `null`) leaves
/// that kind alone; an empty one, with prune, deletes all of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct Document<'a> {
    /// Always 1.
    #[serde(deserialize_with = "version_one")]
    #[schemars(transform = crate::schema::version_one)]
    pub version: u32,
    /// Sites, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub sites: Option<Vec<Site<'a>>>,
    /// Provider accounts, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub provider_accounts: Option<Vec<ProviderAccount<'a>>>,
    /// Pools, by name, with their owner quotas and offers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub pools: Option<Vec<Pool<'a>>>,
    /// VM flavors, by pool and name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub flavors: Option<Vec<Flavor<'a>>>,
    /// Sandbox templates, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub sandbox_templates: Option<Vec<SandboxTemplate<'a>>>,
}

/// `version` as serde's derive reads it (an export's config): 1, however written (`1.0` and
/// `1e0` too, as [`crate::validate()`] takes it); another number is refused in its words.
fn version_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    struct One;
    impl<'de> serde::de::Visitor<'de> for One {
        type Value = u32;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("1")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u32, E> {
            self.visit_f64(v as f64)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u32, E> {
            self.visit_f64(v as f64)
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u32, E> {
            if v == 1.0 {
                Ok(1)
            } else {
                Err(E::custom(format_args!("must be 1, not {v}")))
            }
        }
        // What is no number is named as the validator names it.
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<u32, E> {
            Err(E::custom("must be 1, not a string"))
        }
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<u32, E> {
            Err(E::custom("must be 1, not true or false"))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<u32, E> {
            Err(E::custom("must be 1, not null"))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<u32, A::Error> {
            Err(serde::de::Error::custom("must be 1, not a list"))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<u32, A::Error> {
            Err(serde::de::Error::custom("must be 1, not an object"))
        }
    }
    d.deserialize_any(One)
}

/// A site: where pools live. Its kind and region never change, and it is never deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct Site<'a> {
    /// The name fleet gives it (or its id, when fleet did not create it).
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: Text<'a>,
    /// `shared` or `dedicated`.
    pub kind: SiteKind,
    /// The region, free text such as `eu-central`.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub region: Text<'a>,
}

/// The kind of a site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SiteKind {
    /// Shared by tenants.
    Shared,
    /// Dedicated to one tenant.
    Dedicated,
}

/// An account with an infrastructure provider; its config holds secret references only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct ProviderAccount<'a> {
    /// Its own name.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: Text<'a>,
    /// The provider, such as `hetzner-cloud`; fixed.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub provider: Text<'a>,
    /// Provider settings (required, `{}` for none); secret-looking keys hold references.
    #[schemars(transform = crate::schema::secret_references)]
    pub config: Map<Text<'a>, Text<'a>>,
}

/// A pool of capacity at a site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
#[schemars(transform = crate::schema::provider_account_iff_provider)]
pub struct Pool<'a> {
    /// The name fleet gives it (or its id).
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: Text<'a>,
    /// The site's name (or id); fixed.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub site: Text<'a>,
    /// What the pool hosts; fixed.
    pub class: PoolClass,
    /// The GPU model of its hosts, if any; fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub gpu_model: Option<Text<'a>>,
    /// The provider account, required iff the class is `provider`; fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub provider_account: Option<Text<'a>>,
    /// Scheduling policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// How much of each resource the owner keeps; left out (or `null`), the quotas are left
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::resource_keys)]
    pub owner_quota: Option<Map<Text<'a>, u64>>,
    /// Offers to tenants; left out (or `null`), the offers are left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub offers: Option<Vec<Offer<'a>>>,
}

/// The class of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PoolClass {
    /// Hosts VPS machines.
    VpsHost,
    /// Hosts sandboxes.
    SandboxHost,
    /// Capacity rented from a provider account.
    Provider,
}

/// A pool's scheduling policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// Share of the pool that may be disrupted at once, 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    #[serde(serialize_with = "whole_as_integer")]
    pub disruption_budget: f64,
}

/// Writes a whole budget (0 or 1) as an integer, not serde_json's `1.0`: an export of a
/// document that says `"disruptionBudget": 1` says it the same way, so exporting into the
/// file under review does not churn it. The planHash is canonical, so it is the same either way.
fn whole_as_integer<S: serde::Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    // Only 0 and 1 are whole within the budget's range; -0.0 is 0, as RFC 8785 writes it.
    if *value == 0.0 || *value == 1.0 {
        serializer.serialize_u64(*value as u64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// A pool offered to a tenant, with a quota.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct Offer<'a> {
    /// The tenant's id; the offer's name within its pool.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant: Text<'a>,
    /// Maximum per resource.
    #[schemars(transform = crate::schema::resource_keys)]
    pub quota: Map<Text<'a>, u64>,
    /// Higher is scheduled first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = crate::validate::MIN_INTEGER, max = crate::validate::MAX_INTEGER))]
    pub priority: Option<i64>,
}

/// A VM size sold on a pool; named `<pool>/<name>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct Flavor<'a> {
    /// The pool's name (or id); fixed.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub pool: Text<'a>,
    /// Its name within the pool.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: Text<'a>,
    /// Virtual CPUs, at least 1.
    #[schemars(range(min = 1))]
    pub vcpu: u32,
    /// Memory, at least 1 GiB.
    #[serde(rename = "memoryGiB")]
    #[schemars(range(min = 1))]
    pub memory_gib: u32,
    /// Disk, 0 or more GiB.
    #[serde(rename = "diskGiB")]
    pub disk_gib: u32,
    /// GPUs, 0 or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
}

/// A sandbox template: what a sandbox starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[serde(bound(deserialize = "'de: 'a"))]
pub struct SandboxTemplate<'a> {
    /// Its own name.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: Text<'a>,
    /// The pool's name, or the id of a pool offered to the tenant; fixed.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub pool: Text<'a>,
    /// A flavor of that pool, by name.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub flavor: Text<'a>,
    /// The image it boots.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub image_id: Text<'a>,
    /// Environment; secret-looking keys hold references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::secret_references)]
    pub env: Option<Map<Text<'a>, Text<'a>>>,
    /// Network exposure.
    pub network: Network,
    /// Warm pool size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<Warm>,
}

/// A sandbox's network exposure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Network {
    /// Private network only.
    Private,
    /// Reachable from the internet.
    Public,
    /// No network.
    None,
}

/// How many sandboxes of a template are kept started; `min <= max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Warm {
    /// At least this many.
    pub min: u32,
    /// At most this many.
    pub max: u32,
}

/// A map of texts to texts, owning every string.
fn owned_texts(map: Map<Text<'_>, Text<'_>>) -> Map<Text<'static>, Text<'static>> {
    map.map_entries(|(k, v)| (k.into_owned(), v.into_owned()))
}

/// A quota, owning its keys.
fn owned_quota(map: Map<Text<'_>, u64>) -> Map<Text<'static>, u64> {
    map.map_entries(|(k, v)| (k.into_owned(), v))
}

fn owned_list<T, U>(list: Option<Vec<T>>, f: fn(T) -> U) -> Option<Vec<U>> {
    list.map(|list| list.into_iter().map(f).collect())
}

// `into_owned` destructures each item, so that a new field must be considered there.

impl<'a> Document<'a> {
    /// Reads a document from a JSON value, borrowing its strings from it, without the
    /// validation of [`crate::validate()`] (for documents known to be valid: tests, exports).
    pub fn from_value(value: &'a serde_json::Value) -> Result<Document<'a>, serde_json::Error> {
        Document::deserialize(value)
    }

    /// The same document, owning every string (to keep it past the bytes it was read from).
    pub fn into_owned(self) -> Document<'static> {
        let Document {
            version,
            sites,
            provider_accounts,
            pools,
            flavors,
            sandbox_templates,
        } = self;
        Document {
            version,
            sites: owned_list(sites, Site::into_owned),
            provider_accounts: owned_list(provider_accounts, ProviderAccount::into_owned),
            pools: owned_list(pools, Pool::into_owned),
            flavors: owned_list(flavors, Flavor::into_owned),
            sandbox_templates: owned_list(sandbox_templates, SandboxTemplate::into_owned),
        }
    }
}

impl Site<'_> {
    /// The same site, owning every string.
    pub fn into_owned(self) -> Site<'static> {
        let Site { name, kind, region } = self;
        Site {
            name: name.into_owned(),
            kind,
            region: region.into_owned(),
        }
    }
}

impl ProviderAccount<'_> {
    /// The same account, owning every string.
    pub fn into_owned(self) -> ProviderAccount<'static> {
        let ProviderAccount {
            name,
            provider,
            config,
        } = self;
        ProviderAccount {
            name: name.into_owned(),
            provider: provider.into_owned(),
            config: owned_texts(config),
        }
    }
}

impl Pool<'_> {
    /// The same pool, owning every string.
    pub fn into_owned(self) -> Pool<'static> {
        let Pool {
            name,
            site,
            class,
            gpu_model,
            provider_account,
            policy,
            owner_quota,
            offers,
        } = self;
        Pool {
            name: name.into_owned(),
            site: site.into_owned(),
            class,
            gpu_model: gpu_model.map(Text::into_owned),
            provider_account: provider_account.map(Text::into_owned),
            policy,
            owner_quota: owner_quota.map(owned_quota),
            offers: owned_list(offers, Offer::into_owned),
        }
    }
}

impl Offer<'_> {
    /// The same offer, owning every string.
    pub fn into_owned(self) -> Offer<'static> {
        let Offer {
            tenant,
            quota,
            priority,
        } = self;
        Offer {
            tenant: tenant.into_owned(),
            quota: owned_quota(quota),
            priority,
        }
    }
}

impl Flavor<'_> {
    /// The same flavor, owning every string.
    pub fn into_owned(self) -> Flavor<'static> {
        let Flavor {
            pool,
            name,
            vcpu,
            memory_gib,
            disk_gib,
            gpu,
        } = self;
        Flavor {
            pool: pool.into_owned(),
            name: name.into_owned(),
            vcpu,
            memory_gib,
            disk_gib,
            gpu,
        }
    }
}

impl SandboxTemplate<'_> {
    /// The same template, owning every string.
    pub fn into_owned(self) -> SandboxTemplate<'static> {
        let SandboxTemplate {
            name,
            pool,
            flavor,
            image_id,
            env,
            network,
            warm,
        } = self;
        SandboxTemplate {
            name: name.into_owned(),
            pool: pool.into_owned(),
            flavor: flavor.into_owned(),
            image_id: image_id.into_owned(),
            env: env.map(owned_texts),
            network,
            warm,
        }
    }
}
