//! The document, version 1: the one place that knows its wire shape.
//!
//! These types describe a document that has passed [`crate::validate`]; they serialize to the
//! exact JSON an export writes. Maps are `BTreeMap` so serialization is ordered and stable.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A fleet document: `version: 1` and any of five lists. A list left out (or `null`) leaves
/// that kind alone; an empty one, with prune, deletes all of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Document {
    /// Always 1.
    #[schemars(transform = crate::schema::version_one)]
    pub version: u32,
    /// Sites, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub sites: Option<Vec<Site>>,
    /// Provider accounts, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub provider_accounts: Option<Vec<ProviderAccount>>,
    /// Pools, by name, with their owner quotas and offers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub pools: Option<Vec<Pool>>,
    /// VM flavors, by pool and name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub flavors: Option<Vec<Flavor>>,
    /// Sandbox templates, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub sandbox_templates: Option<Vec<SandboxTemplate>>,
}

/// A site: where pools live. Its kind and region never change, and it is never deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Site {
    /// The name fleet gives it (or its id, when fleet did not create it).
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: String,
    /// `shared` or `dedicated`.
    pub kind: SiteKind,
    /// The region, free text such as `eu-central`.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub region: String,
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
pub struct ProviderAccount {
    /// Its own name.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: String,
    /// The provider, such as `hetzner-cloud`; fixed.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub provider: String,
    /// Provider settings (required, `{}` for none); secret-looking keys hold references.
    #[schemars(transform = crate::schema::secret_references)]
    pub config: BTreeMap<String, String>,
}

/// A pool of capacity at a site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = crate::schema::provider_account_iff_provider)]
pub struct Pool {
    /// The name fleet gives it (or its id).
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: String,
    /// The site's name (or id); fixed.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub site: String,
    /// What the pool hosts; fixed.
    pub class: PoolClass,
    /// The GPU model of its hosts, if any; fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub gpu_model: Option<String>,
    /// The provider account, required iff the class is `provider`; fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub provider_account: Option<String>,
    /// Scheduling policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// How much of each resource the owner keeps; left out (or `null`), the quotas are left
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::resource_keys)]
    pub owner_quota: Option<BTreeMap<String, u64>>,
    /// Offers to tenants; left out (or `null`), the offers are left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub offers: Option<Vec<Offer>>,
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
    pub disruption_budget: f64,
}

/// A pool offered to a tenant, with a quota.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Offer {
    /// The tenant's id; the offer's name within its pool.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant: String,
    /// Maximum per resource.
    #[schemars(transform = crate::schema::resource_keys)]
    pub quota: BTreeMap<String, u64>,
    /// Higher is scheduled first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = crate::validate::MIN_INTEGER, max = crate::validate::MAX_INTEGER))]
    pub priority: Option<i64>,
}

/// A VM size sold on a pool; named `<pool>/<name>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Flavor {
    /// The pool's name (or id); fixed.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub pool: String,
    /// Its name within the pool.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: String,
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
pub struct SandboxTemplate {
    /// Its own name.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: String,
    /// The pool's name, or the id of a pool offered to the tenant; fixed.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub pool: String,
    /// A flavor of that pool, by name.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub flavor: String,
    /// The image it boots.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub image_id: String,
    /// Environment; secret-looking keys hold references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::secret_references)]
    pub env: Option<BTreeMap<String, String>>,
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
