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

/// Canonical JSON (RFC 8785) written by hand, for the planHash a plan computes every time:
/// each input writes its members in JCS order (sorted by hand; camelCase ASCII names sort as
/// bytes), as serde names and skips them, so nothing is reordered. Each destructures its
/// input, so that a new field cannot be left out unnoticed; a test holds every method to the
/// generic writer's bytes.
mod canonical {
    use super::*;
    use crate::canonical::{CanonicalError, Sorted};

    type Written = Result<(), CanonicalError>;

    impl Call {
        /// `{"input":{...},"method":"..."}`'s members.
        pub(crate) fn write_canonical(&self, call: &mut Sorted<'_>) -> Written {
            call.object("input", |input| match self {
                Call::ProviderAccountCreate(i) => i.write(input),
                Call::ProviderAccountUpdate(i) => i.write(input),
                Call::SiteCreate(i) => i.write(input),
                Call::PoolCreate(i) => i.write(input),
                Call::PoolUpdate(i) => i.write(input),
                Call::PoolSetOwnerQuota(i) => i.write(input),
                Call::PoolOffer(i) => i.write(input),
                Call::PoolUnoffer(i) => i.write(input),
                Call::FlavorCreate(i) => i.write(input),
                Call::FlavorUpdate(i) => i.write(input),
                Call::SandboxTemplateCreate(i) => i.write(input),
                Call::SandboxTemplateUpdate(i) => i.write(input),
                Call::ProviderAccountDelete(i)
                | Call::PoolArchive(i)
                | Call::FlavorDelete(i)
                | Call::SandboxTemplateDelete(i) => i.write(input),
            })?
            .member("method", self.method())?;
            Ok(())
        }
    }

    impl Delete {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let Delete {
                tenant_id,
                id,
                if_revision,
            } = self;
            o.member("id", id)?
                .member("ifRevision", if_revision)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl ProviderAccountCreate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let ProviderAccountCreate {
                tenant_id,
                idempotency_key,
                name,
                provider,
                config,
            } = self;
            o.member("config", config)?
                .some("idempotencyKey", idempotency_key)?
                .member("name", name)?
                .member("provider", provider)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl ProviderAccountUpdate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let ProviderAccountUpdate {
                tenant_id,
                id,
                if_revision,
                config,
            } = self;
            o.member("config", config)?
                .member("id", id)?
                .member("ifRevision", if_revision)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl SiteCreate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let SiteCreate {
                tenant_id,
                idempotency_key,
                kind,
                region,
            } = self;
            o.some("idempotencyKey", idempotency_key)?
                .member("kind", kind)?
                .member("region", region)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl PoolCreate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let PoolCreate {
                tenant_id,
                idempotency_key,
                site_id,
                class,
                gpu_model,
                provider_account_id,
                policy,
            } = self;
            o.member("class", class)?
                .some("gpuModel", gpu_model)?
                .some("idempotencyKey", idempotency_key)?
                .some("policy", policy)?
                .some("providerAccountId", provider_account_id)?
                .member("siteId", site_id)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl PoolUpdate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let PoolUpdate {
                tenant_id,
                id,
                if_revision,
                policy,
            } = self;
            // `null` clears the policy: written when none.
            o.member("id", id)?
                .member("ifRevision", if_revision)?
                .member("policy", policy)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl PoolSetOwnerQuota {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let PoolSetOwnerQuota {
                tenant_id,
                pool_id,
                resource,
                max,
                if_revision,
            } = self;
            o.some("ifRevision", if_revision)?
                .member("max", max)?
                .member("poolId", pool_id)?
                .member("resource", resource)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl PoolOffer {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let PoolOffer {
                tenant_id,
                pool_id,
                tenant,
                quota,
                priority,
                if_revision,
            } = self;
            o.some("ifRevision", if_revision)?
                .member("poolId", pool_id)?
                .some("priority", priority)?
                .member("quota", quota)?
                .member("tenant", tenant)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl PoolUnoffer {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let PoolUnoffer {
                tenant_id,
                pool_id,
                tenant,
                if_revision,
            } = self;
            o.member("ifRevision", if_revision)?
                .member("poolId", pool_id)?
                .member("tenant", tenant)?
                .member("tenantId", tenant_id)?;
            Ok(())
        }
    }

    impl FlavorCreate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let FlavorCreate {
                tenant_id,
                idempotency_key,
                pool_id,
                name,
                vcpu,
                memory_gib,
                disk_gib,
                gpu,
            } = self;
            o.member("diskGiB", disk_gib)?
                .some("gpu", gpu)?
                .some("idempotencyKey", idempotency_key)?
                .member("memoryGiB", memory_gib)?
                .member("name", name)?
                .member("poolId", pool_id)?
                .member("tenantId", tenant_id)?
                .member("vcpu", vcpu)?;
            Ok(())
        }
    }

    impl FlavorUpdate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let FlavorUpdate {
                tenant_id,
                id,
                if_revision,
                vcpu,
                memory_gib,
                disk_gib,
                gpu,
            } = self;
            o.member("diskGiB", disk_gib)?
                .some("gpu", gpu)?
                .member("id", id)?
                .member("ifRevision", if_revision)?
                .member("memoryGiB", memory_gib)?
                .member("tenantId", tenant_id)?
                .member("vcpu", vcpu)?;
            Ok(())
        }
    }

    impl SandboxTemplateCreate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let SandboxTemplateCreate {
                tenant_id,
                idempotency_key,
                name,
                pool_id,
                flavor_id,
                image_id,
                env,
                network,
                warm,
            } = self;
            o.some("env", env)?
                .member("flavorId", flavor_id)?
                .some("idempotencyKey", idempotency_key)?
                .member("imageId", image_id)?
                .member("name", name)?
                .member("network", network)?
                .member("poolId", pool_id)?
                .member("tenantId", tenant_id)?
                .some("warm", warm)?;
            Ok(())
        }
    }

    impl SandboxTemplateUpdate {
        fn write(&self, o: &mut Sorted<'_>) -> Written {
            let SandboxTemplateUpdate {
                tenant_id,
                id,
                if_revision,
                flavor_id,
                image_id,
                env,
                network,
                warm,
            } = self;
            o.some("env", env)?
                .member("flavorId", flavor_id)?
                .member("id", id)?
                .member("ifRevision", if_revision)?
                .member("imageId", image_id)?
                .member("network", network)?
                .member("tenantId", tenant_id)?
                .some("warm", warm)?;
            Ok(())
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::canonical::{calls_to_canonical, to_canonical};
        use crate::document::{Policy, Warm};

        /// Every method, with its optional fields set (`full`) or not.
        fn calls(full: bool) -> Vec<Call> {
            let t = || "root".to_owned();
            let some = |s: &str| full.then(|| s.to_owned());
            let map = |pairs: &[(&str, &str)]| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            };
            // Keys whose UTF-16 order differs from their byte order, and escapes.
            let config = map(&[("\u{fb01}", "a\"b"), ("\u{1f600}", "\n"), ("a", "\u{7f}")]);
            let delete = Delete {
                tenant_id: t(),
                id: "x_1".into(),
                if_revision: 3,
            };
            vec![
                Call::ProviderAccountCreate(ProviderAccountCreate {
                    tenant_id: t(),
                    idempotency_key: some("k"),
                    name: "a".into(),
                    provider: "p".into(),
                    config: config.clone(),
                }),
                Call::ProviderAccountUpdate(ProviderAccountUpdate {
                    tenant_id: t(),
                    id: "pa_1".into(),
                    if_revision: u64::MAX,
                    config,
                }),
                Call::ProviderAccountDelete(delete.clone()),
                Call::SiteCreate(SiteCreate {
                    tenant_id: t(),
                    idempotency_key: some("k"),
                    kind: SiteKind::Dedicated,
                    region: "eu".into(),
                }),
                Call::PoolCreate(PoolCreate {
                    tenant_id: t(),
                    idempotency_key: some("k"),
                    site_id: "site_1".into(),
                    class: PoolClass::VpsHost,
                    gpu_model: some("L40S"),
                    provider_account_id: some("pa_1"),
                    policy: full.then_some(Policy {
                        disruption_budget: 0.1,
                    }),
                }),
                Call::PoolUpdate(PoolUpdate {
                    tenant_id: t(),
                    id: "pool_1".into(),
                    if_revision: 1,
                    policy: full.then_some(Policy {
                        disruption_budget: 1e21,
                    }),
                }),
                Call::PoolSetOwnerQuota(PoolSetOwnerQuota {
                    tenant_id: t(),
                    pool_id: "pool_1".into(),
                    resource: "gpu".into(),
                    max: full.then_some(4),
                    if_revision: full.then_some(2),
                }),
                Call::PoolOffer(PoolOffer {
                    tenant_id: t(),
                    pool_id: "pool_1".into(),
                    tenant: "acme".into(),
                    quota: BTreeMap::from([("vcpu".into(), 8), ("gpu".into(), 2)]),
                    priority: full.then_some(-5),
                    if_revision: full.then_some(2),
                }),
                Call::PoolUnoffer(PoolUnoffer {
                    tenant_id: t(),
                    pool_id: "pool_1".into(),
                    tenant: "acme".into(),
                    if_revision: 2,
                }),
                Call::PoolArchive(delete.clone()),
                Call::FlavorCreate(FlavorCreate {
                    tenant_id: t(),
                    idempotency_key: some("k"),
                    pool_id: "pool_1".into(),
                    name: "g1".into(),
                    vcpu: 2,
                    memory_gib: 4,
                    disk_gib: 0,
                    gpu: full.then_some(1),
                }),
                Call::FlavorUpdate(FlavorUpdate {
                    tenant_id: t(),
                    id: "flv_1".into(),
                    if_revision: 1,
                    vcpu: 2,
                    memory_gib: 4,
                    disk_gib: 8,
                    gpu: full.then_some(1),
                }),
                Call::FlavorDelete(delete.clone()),
                Call::SandboxTemplateCreate(SandboxTemplateCreate {
                    tenant_id: t(),
                    idempotency_key: some("k"),
                    name: "py".into(),
                    pool_id: "pool_1".into(),
                    flavor_id: "flv_1".into(),
                    image_id: "img".into(),
                    env: full.then(|| map(&[("B", "1"), ("A", "2")])),
                    network: Network::Public,
                    warm: full.then_some(Warm { min: 1, max: 2 }),
                }),
                Call::SandboxTemplateUpdate(SandboxTemplateUpdate {
                    tenant_id: t(),
                    id: "tpl_1".into(),
                    if_revision: 1,
                    flavor_id: "flv_1".into(),
                    image_id: "img".into(),
                    env: full.then(|| map(&[("B", "1"), ("A", "2")])),
                    network: Network::None,
                    warm: full.then_some(Warm { min: 1, max: 2 }),
                }),
                Call::SandboxTemplateDelete(delete),
            ]
        }

        #[test]
        fn calls_write_the_bytes_the_generic_writer_writes() {
            for full in [true, false] {
                let calls = calls(full);
                for call in &calls {
                    let one = std::slice::from_ref(call);
                    assert_eq!(
                        calls_to_canonical(one).unwrap(),
                        to_canonical(one).unwrap(),
                        "{}",
                        call.method()
                    );
                }
                assert_eq!(
                    calls_to_canonical(&calls).unwrap(),
                    to_canonical(&calls).unwrap()
                );
            }
            assert_eq!(calls_to_canonical(&[]).unwrap(), "[]");
        }
    }
}
