//! The calls a plan makes: `{"method": "pool.update", "input": {...}}`. Each input type is the
//! one definition of that method's input, shared by `fleet.apply` and by a hand-made
//! `POST /api/<method>`.

use crate::document::{Network, PoolClass, SiteKind, Warm};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One API call, as `{"method", "input"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "method", content = "input")]
pub enum Call {
    /// `providerAccount.create`
    #[serde(rename = "providerAccount.create")]
    ProviderAccountCreate(ProviderAccountCreate),
    /// `providerAccount.update`
    #[serde(rename = "providerAccount.update")]
    ProviderAccountUpdate(ProviderAccountUpdate),
    /// `providerAccount.delete`
    #[serde(rename = "providerAccount.delete")]
    ProviderAccountDelete(Delete),
    /// `site.create`
    #[serde(rename = "site.create")]
    SiteCreate(SiteCreate),
    /// `pool.create`
    #[serde(rename = "pool.create")]
    PoolCreate(PoolCreate),
    /// `pool.update`
    #[serde(rename = "pool.update")]
    PoolUpdate(PoolUpdate),
    /// `pool.setOwnerQuota`
    #[serde(rename = "pool.setOwnerQuota")]
    PoolSetOwnerQuota(PoolSetOwnerQuota),
    /// `pool.offer`
    #[serde(rename = "pool.offer")]
    PoolOffer(PoolOffer),
    /// `pool.unoffer`
    #[serde(rename = "pool.unoffer")]
    PoolUnoffer(PoolUnoffer),
    /// `pool.archive`
    #[serde(rename = "pool.archive")]
    PoolArchive(Delete),
    /// `flavor.create`
    #[serde(rename = "flavor.create")]
    FlavorCreate(FlavorCreate),
    /// `flavor.update`
    #[serde(rename = "flavor.update")]
    FlavorUpdate(FlavorUpdate),
    /// `flavor.delete`
    #[serde(rename = "flavor.delete")]
    FlavorDelete(Delete),
    /// `sandboxTemplate.create`
    #[serde(rename = "sandboxTemplate.create")]
    SandboxTemplateCreate(SandboxTemplateCreate),
    /// `sandboxTemplate.update`
    #[serde(rename = "sandboxTemplate.update")]
    SandboxTemplateUpdate(SandboxTemplateUpdate),
    /// `sandboxTemplate.delete`
    #[serde(rename = "sandboxTemplate.delete")]
    SandboxTemplateDelete(Delete),
}

impl Call {
    /// The method name, such as `pool.update`.
    pub fn method(&self) -> &'static str {
        match self {
            Call::ProviderAccountCreate(_) => "providerAccount.create",
            Call::ProviderAccountUpdate(_) => "providerAccount.update",
            Call::ProviderAccountDelete(_) => "providerAccount.delete",
            Call::SiteCreate(_) => "site.create",
            Call::PoolCreate(_) => "pool.create",
            Call::PoolUpdate(_) => "pool.update",
            Call::PoolSetOwnerQuota(_) => "pool.setOwnerQuota",
            Call::PoolOffer(_) => "pool.offer",
            Call::PoolUnoffer(_) => "pool.unoffer",
            Call::PoolArchive(_) => "pool.archive",
            Call::FlavorCreate(_) => "flavor.create",
            Call::FlavorUpdate(_) => "flavor.update",
            Call::FlavorDelete(_) => "flavor.delete",
            Call::SandboxTemplateCreate(_) => "sandboxTemplate.create",
            Call::SandboxTemplateUpdate(_) => "sandboxTemplate.update",
            Call::SandboxTemplateDelete(_) => "sandboxTemplate.delete",
        }
    }

    /// The permission the caller needs, decided on the tenant's scope (PRODUCT.md section 2).
    pub fn permission(&self) -> &'static str {
        match self {
            Call::ProviderAccountCreate(_) => "vps:providerAccount:create",
            Call::ProviderAccountUpdate(_) => "vps:providerAccount:update",
            Call::ProviderAccountDelete(_) => "vps:providerAccount:delete",
            Call::SiteCreate(_) => "compute:site:create",
            Call::PoolCreate(_) => "compute:pool:create",
            Call::PoolUpdate(_) => "compute:pool:update",
            Call::PoolArchive(_) => "compute:pool:archive",
            Call::PoolSetOwnerQuota(_) => "compute:pool:quota",
            Call::PoolOffer(_) | Call::PoolUnoffer(_) => "compute:pool:offer",
            Call::FlavorCreate(_) => "vps:flavor:create",
            Call::FlavorUpdate(_) => "vps:flavor:update",
            Call::FlavorDelete(_) => "vps:flavor:delete",
            Call::SandboxTemplateCreate(_) => "vps:sandboxTemplate:create",
            Call::SandboxTemplateUpdate(_) => "vps:sandboxTemplate:update",
            Call::SandboxTemplateDelete(_) => "vps:sandboxTemplate:delete",
        }
    }

    /// The tenant the call acts in.
    pub fn tenant_id(&self) -> &str {
        match self {
            Call::ProviderAccountCreate(i) => &i.tenant_id,
            Call::ProviderAccountUpdate(i) => &i.tenant_id,
            Call::SiteCreate(i) => &i.tenant_id,
            Call::PoolCreate(i) => &i.tenant_id,
            Call::PoolUpdate(i) => &i.tenant_id,
            Call::PoolSetOwnerQuota(i) => &i.tenant_id,
            Call::PoolOffer(i) => &i.tenant_id,
            Call::PoolUnoffer(i) => &i.tenant_id,
            Call::FlavorCreate(i) => &i.tenant_id,
            Call::FlavorUpdate(i) => &i.tenant_id,
            Call::SandboxTemplateCreate(i) => &i.tenant_id,
            Call::SandboxTemplateUpdate(i) => &i.tenant_id,
            Call::ProviderAccountDelete(i)
            | Call::PoolArchive(i)
            | Call::FlavorDelete(i)
            | Call::SandboxTemplateDelete(i) => &i.tenant_id,
        }
    }
}

/// Input of every delete-like call: `providerAccount.delete`, `pool.archive`, `flavor.delete`,
/// `sandboxTemplate.delete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delete {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The object's id.
    pub id: String,
    /// The revision it was planned against; CONFLICT when it moved.
    pub if_revision: u64,
}

/// Input of `providerAccount.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderAccountCreate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// `fleet:<tenant>:providerAccount:<name>`; the id derives from it and the caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Its name.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: String,
    /// The provider.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub provider: String,
    /// Settings (secret references only under secret-looking keys).
    #[schemars(transform = crate::schema::secret_references)]
    pub config: BTreeMap<String, String>,
}

/// Input of `providerAccount.update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderAccountUpdate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The account's id.
    pub id: String,
    /// The revision it was planned against.
    pub if_revision: u64,
    /// The whole new config.
    #[schemars(transform = crate::schema::secret_references)]
    pub config: BTreeMap<String, String>,
}

/// Input of `site.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SiteCreate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// `fleet:<tenant>:site:<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// `shared` or `dedicated`.
    pub kind: SiteKind,
    /// The region.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub region: String,
}

/// Input of `pool.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolCreate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// `fleet:<tenant>:pool:<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The site's id.
    pub site_id: String,
    /// The class.
    pub class: PoolClass,
    /// The GPU model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub gpu_model: Option<String>,
    /// The provider account's id (class `provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_account_id: Option<String>,
    /// The policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::document::Policy>,
}

/// Input of `pool.update`: the pool's whole mutable state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolUpdate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The pool's id.
    pub id: String,
    /// The revision it was planned against.
    pub if_revision: u64,
    /// The new policy; `null` clears it.
    pub policy: Option<crate::document::Policy>,
}

/// Input of `pool.setOwnerQuota`: sets (or with `max: null` removes) one quota entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolSetOwnerQuota {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The pool's id.
    pub pool_id: String,
    /// The resource (`gpu`).
    #[schemars(pattern(crate::schema::RESOURCE_PATTERN))]
    pub resource: String,
    /// The new maximum; `null` removes the entry.
    #[schemars(range(max = crate::validate::MAX_QUOTA))]
    pub max: Option<u64>,
    /// The entry's revision when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_revision: Option<u64>,
}

/// Input of `pool.offer`: creates or replaces the offer of a pool to a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolOffer {
    /// The tenant that owns the pool.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The pool's id.
    pub pool_id: String,
    /// The tenant it is offered to.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant: String,
    /// Maximum per resource.
    #[schemars(transform = crate::schema::resource_keys)]
    pub quota: BTreeMap<String, u64>,
    /// Priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = crate::validate::MIN_INTEGER, max = crate::validate::MAX_INTEGER))]
    pub priority: Option<i64>,
    /// The offer's revision when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_revision: Option<u64>,
}

/// Input of `pool.unoffer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolUnoffer {
    /// The tenant that owns the pool.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The pool's id.
    pub pool_id: String,
    /// The tenant it is no longer offered to.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant: String,
    /// The offer's revision.
    pub if_revision: u64,
}

/// Input of `flavor.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlavorCreate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// `fleet:<tenant>:flavor:<pool>/<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The pool's id.
    pub pool_id: String,
    /// Its name within the pool.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: String,
    /// Virtual CPUs.
    #[schemars(range(min = 1))]
    pub vcpu: u32,
    /// Memory in GiB.
    #[serde(rename = "memoryGiB")]
    #[schemars(range(min = 1))]
    pub memory_gib: u32,
    /// Disk in GiB.
    #[serde(rename = "diskGiB")]
    pub disk_gib: u32,
    /// GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
}

/// Input of `flavor.update`: the flavor's whole mutable state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlavorUpdate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The flavor's id.
    pub id: String,
    /// The revision it was planned against.
    pub if_revision: u64,
    /// Virtual CPUs.
    #[schemars(range(min = 1))]
    pub vcpu: u32,
    /// Memory in GiB.
    #[serde(rename = "memoryGiB")]
    #[schemars(range(min = 1))]
    pub memory_gib: u32,
    /// Disk in GiB.
    #[serde(rename = "diskGiB")]
    pub disk_gib: u32,
    /// GPUs; absent clears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
}

/// Input of `sandboxTemplate.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxTemplateCreate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// `fleet:<tenant>:sandboxTemplate:<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Its name.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub name: String,
    /// The pool's id.
    pub pool_id: String,
    /// The flavor's id.
    pub flavor_id: String,
    /// The image.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub image_id: String,
    /// Environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Network exposure.
    pub network: Network,
    /// Warm pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<Warm>,
}

/// Input of `sandboxTemplate.update`: the template's whole mutable state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxTemplateUpdate {
    /// The tenant.
    #[schemars(pattern(crate::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The template's id.
    pub id: String,
    /// The revision it was planned against.
    pub if_revision: u64,
    /// The flavor's id.
    pub flavor_id: String,
    /// The image.
    #[schemars(length(min = 1, max = crate::validate::MAX_TEXT), pattern(crate::schema::NON_BLANK_PATTERN))]
    pub image_id: String,
    /// Environment; absent clears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Network exposure.
    pub network: Network,
    /// Warm pool; absent clears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<Warm>,
}
