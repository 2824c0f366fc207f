//! An in-memory model of one tenant's fleet that executes [`Call`]s with the semantics the
//! server's methods have (docs/contracts.md, "Calls"), and exports itself as the server does.
//!
//! Tests use it as the world a plan acts on: apply a plan's calls, export, re-plan, and expect
//! nothing left to do. It is pure like the rest of the planner: ids of objects created without
//! an idempotency key come from a counter, not from randomness.
//!
//! Semantics, the server's (`src/server/objects.rs`), in one place to compare against:
//! - Every object and every owner quota entry and offer has a revision: 1 on create, +1 on every
//!   call that changes it. A call that writes the values already there changes nothing, its
//!   revision included, so a plan reviewed before it still applies. Entries have their own
//!   revisions, and changing one moves its pool's too: archiving a pool removes its entries,
//!   so a plan that archives it must not match a pool whose entries moved since.
//! - `ifRevision` that does not match is [`FleetError::Conflict`], naming the object as the
//!   server's `details.object` does (`pool pool_…`). On `setOwnerQuota`, `offer` and `unoffer`,
//!   an `ifRevision` for an entry that does not exist is a conflict too; without one,
//!   `setOwnerQuota` and `offer` set the entry whatever its revision.
//! - A create with an idempotency key gets `derive_id(kind, caller, key)`; when that object
//!   exists the call answers it and changes nothing (an archived pool comes back to life with
//!   the new fields, revision +1). Sites and pools created with a key record the name fleet
//!   gave them, the key's last segment, like `fleet_names`; a name another object of the kind
//!   has is [`FleetError::AlreadyExists`].
//! - `pool.archive` removes the pool's owner quotas, offers and name; the pool leaves the
//!   export. Archiving a pool a flavor or a template uses, deleting a provider account a pool
//!   uses, or a flavor a template uses, is [`FleetError::InUse`].
//! - `setOwnerQuota` with `max: null` removes the entry (nothing when there is none).

use crate::calls::{
    Call, Delete, FlavorCreate, FlavorUpdate, PoolCreate, PoolOffer, PoolSetOwnerQuota,
    PoolUnoffer, PoolUpdate, ProviderAccountCreate, ProviderAccountUpdate, SandboxTemplateCreate,
    SandboxTemplateUpdate, SiteCreate,
};
use crate::document::{self, Document, Network, Policy, PoolClass, SiteKind, Warm};
use crate::export::{Export, Kind, ObjectRef, OfferedPool, Section};
use crate::ids;
use crate::text::{Text, from_string_keys, from_strings, to_string_keys, to_strings};
use sha2::Digest as _;
use std::collections::{BTreeMap, BTreeSet};

/// Why a call failed; the fleet is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetError {
    /// The call names a tenant other than the fleet's.
    #[error("the call is for tenant \"{call}\", this fleet is tenant \"{fleet}\"")]
    WrongTenant {
        /// The fleet's tenant.
        fleet: String,
        /// The call's tenant.
        call: String,
    },
    /// An id (or, for tenants, a tenant id) that does not exist.
    #[error("{kind} \"{id}\" not found")]
    NotFound {
        /// What was looked for: `site`, `pool`, `flavor`, `tenant`, ...
        kind: &'static str,
        /// The id looked for.
        id: String,
    },
    /// `ifRevision` no longer matches: someone changed the object since the plan.
    #[error("{object} is at revision {}, not {expected}", actual.map_or("none (it does not exist)".to_string(), |r| r.to_string()))]
    Conflict {
        /// The object, as the server's `details.object` names it: `pool pool_…`,
        /// `ownerQuota pool_…:gpu`, `offer pool_… -> acme`.
        object: String,
        /// The revision the call expected.
        expected: u64,
        /// The object's revision, `None` when the entry does not exist.
        actual: Option<u64>,
    },
    /// The object is still used by another.
    #[error("{object} is used by {user}")]
    InUse {
        /// The object, such as `providerAccount pa_…`.
        object: String,
        /// Who uses it, such as `pool pool_…`.
        user: String,
    },
    /// Another object already has this name.
    #[error("{kind} \"{name}\" already exists")]
    AlreadyExists {
        /// The kind.
        kind: Kind,
        /// The name taken.
        name: String,
    },
    /// The input breaks a rule of the method.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The deployment does not serve the method (module switched off).
    #[error("this deployment does not serve {method}")]
    Unsupported {
        /// The method.
        method: &'static str,
    },
}

/// Which modules the deployment runs; what it leaves out an export lists in `missing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modules {
    /// The vps module: provider accounts, flavors, sandbox templates.
    pub vps: bool,
    /// The vps module's v0.5 migrations: sandbox templates.
    pub sandboxes: bool,
}

impl Default for Modules {
    fn default() -> Self {
        Modules {
            vps: true,
            sandboxes: true,
        }
    }
}

impl Modules {
    /// The sections an export of this deployment leaves out.
    pub fn missing(self) -> Vec<Section> {
        let mut out = Vec::new();
        if !self.vps {
            out.push(Section::ProviderAccounts);
            out.push(Section::Flavors);
        }
        if !self.vps || !self.sandboxes {
            out.push(Section::SandboxTemplates);
        }
        out.sort();
        out
    }

    fn serves(self, section: Section) -> bool {
        !self.missing().contains(&section)
    }
}

#[derive(Debug, Clone, PartialEq)]
struct SiteObj {
    kind: SiteKind,
    region: String,
    revision: u64,
}

#[derive(Debug, Clone, PartialEq)]
struct AccountObj {
    name: String,
    provider: String,
    config: BTreeMap<String, String>,
    revision: u64,
}

#[derive(Debug, Clone, PartialEq)]
struct Entry<T> {
    value: T,
    revision: u64,
}

#[derive(Debug, Clone, PartialEq)]
struct OfferState {
    quota: BTreeMap<String, u64>,
    priority: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
struct PoolObj {
    site_id: String,
    class: PoolClass,
    gpu_model: Option<String>,
    provider_account_id: Option<String>,
    policy: Option<Policy>,
    owner_quota: BTreeMap<String, Entry<u64>>,
    offers: BTreeMap<String, Entry<OfferState>>,
    /// Archived pools keep their id (a create with the same key revives them) but leave
    /// the fleet.
    archived: bool,
    revision: u64,
}

#[derive(Debug, Clone, PartialEq)]
struct FlavorObj {
    pool_id: String,
    name: String,
    vcpu: u32,
    memory_gib: u32,
    disk_gib: u32,
    gpu: Option<u32>,
    revision: u64,
}

#[derive(Debug, Clone, PartialEq)]
struct TemplateObj {
    name: String,
    pool_id: String,
    flavor_id: String,
    image_id: String,
    env: Option<BTreeMap<String, String>>,
    network: Network,
    warm: Option<Warm>,
    revision: u64,
}

/// One tenant's fleet: its objects by id, the names fleet gave, and what an export needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    tenant_id: String,
    caller: String,
    modules: Modules,
    tenants: BTreeSet<String>,
    offered_pools: Vec<OfferedPool<'static>>,
    sites: BTreeMap<String, SiteObj>,
    accounts: BTreeMap<String, AccountObj>,
    pools: BTreeMap<String, PoolObj>,
    flavors: BTreeMap<String, FlavorObj>,
    templates: BTreeMap<String, TemplateObj>,
    /// `fleet_names`: site and pool ids to the name fleet gave them.
    names: BTreeMap<String, String>,
    /// Source of ids for creates without an idempotency key.
    next_id: u64,
}

impl Fleet {
    /// An empty fleet of `tenant_id`, acted on by `caller`, on a deployment with `modules`.
    /// `tenants` are the tenant ids offers may name (the fleet's own is added).
    pub fn new(
        tenant_id: impl Into<String>,
        caller: impl Into<String>,
        modules: Modules,
        tenants: impl IntoIterator<Item = String>,
    ) -> Self {
        let tenant_id = tenant_id.into();
        let mut tenants: BTreeSet<String> = tenants.into_iter().collect();
        tenants.insert(tenant_id.clone());
        Fleet {
            tenant_id,
            caller: caller.into(),
            modules,
            tenants,
            offered_pools: Vec::new(),
            sites: BTreeMap::new(),
            accounts: BTreeMap::new(),
            pools: BTreeMap::new(),
            flavors: BTreeMap::new(),
            templates: BTreeMap::new(),
            names: BTreeMap::new(),
            next_id: 0,
        }
    }

    /// Adds pools of other tenants offered to this one (templates may use them by id).
    pub fn with_offered_pools(mut self, pools: Vec<OfferedPool<'static>>) -> Self {
        self.offered_pools = pools;
        self
    }

    /// The tenant.
    pub fn tenant_id(&self) -> &str {
        &self.tenant_id
    }

    /// The principal whose calls these are; created ids derive from it.
    pub fn caller(&self) -> &str {
        &self.caller
    }

    /// Acts as another principal from now on (ids of later creates derive from it).
    pub fn set_caller(&mut self, caller: impl Into<String>) {
        self.caller = caller.into();
    }

    /// The deployment's modules.
    pub fn modules(&self) -> Modules {
        self.modules
    }

    /// Builds the fleet a document describes, as fleet would create it (deterministic ids,
    /// recorded names), resolving references by name within the document or by id. Owner
    /// quotas and offers absent from the document are simply not created.
    pub fn from_document(
        tenant_id: &str,
        caller: &str,
        modules: Modules,
        tenants: impl IntoIterator<Item = String>,
        document: &Document,
    ) -> Result<Self, FleetError> {
        let mut fleet = Fleet::new(tenant_id, caller, modules, tenants);
        let tenant = tenant_id.to_string();
        let key = |kind: Kind, name: &str| Some(ids::idempotency_key(tenant_id, kind, name));
        for account in document.provider_accounts.iter().flatten() {
            fleet.apply(&Call::ProviderAccountCreate(ProviderAccountCreate {
                tenant_id: tenant.clone(),
                idempotency_key: key(Kind::ProviderAccount, &account.name),
                name: account.name.to_string(),
                provider: account.provider.to_string(),
                config: to_strings(&account.config),
            }))?;
        }
        for site in document.sites.iter().flatten() {
            fleet.apply(&Call::SiteCreate(SiteCreate {
                tenant_id: tenant.clone(),
                idempotency_key: key(Kind::Site, &site.name),
                kind: site.kind,
                region: site.region.to_string(),
            }))?;
        }
        for pool in document.pools.iter().flatten() {
            let site_id = fleet.resolve(Kind::Site, &pool.site)?;
            let provider_account_id = match &pool.provider_account {
                Some(name) => Some(fleet.resolve(Kind::ProviderAccount, name)?),
                None => None,
            };
            let id = fleet
                .apply(&Call::PoolCreate(PoolCreate {
                    tenant_id: tenant.clone(),
                    idempotency_key: key(Kind::Pool, &pool.name),
                    site_id,
                    class: pool.class,
                    gpu_model: pool.gpu_model.as_deref().map(str::to_owned),
                    provider_account_id,
                    policy: pool.policy.clone(),
                }))?
                .expect("a create answers its id");
            for (resource, max) in pool.owner_quota.iter().flatten() {
                fleet.apply(&Call::PoolSetOwnerQuota(PoolSetOwnerQuota {
                    tenant_id: tenant.clone(),
                    pool_id: id.clone(),
                    resource: resource.to_string(),
                    max: Some(*max),
                    if_revision: None,
                }))?;
            }
            for offer in pool.offers.iter().flatten() {
                fleet.apply(&Call::PoolOffer(PoolOffer {
                    tenant_id: tenant.clone(),
                    pool_id: id.clone(),
                    tenant: offer.tenant.to_string(),
                    quota: to_string_keys(&offer.quota),
                    priority: offer.priority,
                    if_revision: None,
                }))?;
            }
        }
        for flavor in document.flavors.iter().flatten() {
            let pool_id = fleet.resolve(Kind::Pool, &flavor.pool)?;
            fleet.apply(&Call::FlavorCreate(FlavorCreate {
                tenant_id: tenant.clone(),
                idempotency_key: key(Kind::Flavor, &format!("{}/{}", flavor.pool, flavor.name)),
                pool_id,
                name: flavor.name.to_string(),
                vcpu: flavor.vcpu,
                memory_gib: flavor.memory_gib,
                disk_gib: flavor.disk_gib,
                gpu: flavor.gpu,
            }))?;
        }
        for template in document.sandbox_templates.iter().flatten() {
            let pool_id = fleet.resolve(Kind::Pool, &template.pool)?;
            let flavor_id = fleet.flavor_of(&pool_id, &template.flavor)?;
            fleet.apply(&Call::SandboxTemplateCreate(SandboxTemplateCreate {
                tenant_id: tenant.clone(),
                idempotency_key: key(Kind::SandboxTemplate, &template.name),
                name: template.name.to_string(),
                pool_id,
                flavor_id,
                image_id: template.image_id.to_string(),
                env: template.env.as_ref().map(to_strings),
                network: template.network,
                warm: template.warm,
            }))?;
        }
        Ok(fleet)
    }

    /// The id of the object of `kind` whose plan name (or id) is `name`. Pools offered to the
    /// tenant resolve by id too.
    pub fn resolve(&self, kind: Kind, name: &str) -> Result<String, FleetError> {
        let found = match kind {
            Kind::Site => self.named_id(self.sites.keys(), name),
            Kind::Pool => self
                .named_id(self.live_pools().map(|(id, _)| id), name)
                .or_else(|| {
                    self.offered_pools
                        .iter()
                        .find(|p| p.id == name)
                        .map(|p| p.id.to_string())
                }),
            Kind::ProviderAccount => self
                .accounts
                .iter()
                .find(|(id, a)| a.name == name || *id == name)
                .map(|(id, _)| id.clone()),
            Kind::SandboxTemplate => self
                .templates
                .iter()
                .find(|(id, t)| t.name == name || *id == name)
                .map(|(id, _)| id.clone()),
            Kind::Flavor => self
                .flavors
                .iter()
                .filter(|(_, f)| self.is_live(&f.pool_id))
                .find(|(id, f)| *id == name || self.flavor_plan_name(f) == name)
                .map(|(id, _)| id.clone()),
            Kind::OwnerQuota | Kind::Offer => None,
        };
        found.ok_or_else(|| FleetError::NotFound {
            kind: kind.as_str(),
            id: name.to_string(),
        })
    }

    /// The revision of the item an export lists as `kind` `name`, if it exists.
    pub fn revision(&self, kind: Kind, name: &str) -> Option<u64> {
        self.objects()
            .into_iter()
            .find(|o| o.kind == kind && o.name == name)
            .map(|o| o.revision)
    }

    fn named_id<'a>(
        &self,
        mut ids: impl Iterator<Item = &'a String>,
        name: &str,
    ) -> Option<String> {
        ids.find(|id| self.plan_name_of(id) == name).cloned()
    }

    /// The plan name of a site or pool: the name fleet gave it, or its id.
    fn plan_name_of<'a>(&'a self, id: &'a str) -> &'a str {
        self.names.get(id).map_or(id, String::as_str)
    }

    fn flavor_plan_name(&self, flavor: &FlavorObj) -> String {
        format!("{}/{}", self.plan_name_of(&flavor.pool_id), flavor.name)
    }

    fn flavor_of(&self, pool_id: &str, name: &str) -> Result<String, FleetError> {
        let own = self
            .flavors
            .iter()
            .find(|(_, f)| f.pool_id == pool_id && f.name == name)
            .map(|(id, _)| id.clone());
        let offered = || {
            self.offered_pools
                .iter()
                .filter(|p| p.id == pool_id)
                .flat_map(|p| &p.flavors)
                .find(|f| f.name == name)
                .map(|f| f.id.to_string())
        };
        own.or_else(offered).ok_or_else(|| FleetError::NotFound {
            kind: "flavor",
            id: format!("{}/{name}", self.plan_name_of(pool_id)),
        })
    }

    /// Runs all `calls` in order, as one transaction: on the first error the fleet is left as
    /// it was and the error says which call (by index) failed.
    pub fn apply_all(&mut self, calls: &[Call]) -> Result<(), (usize, FleetError)> {
        let mut next = self.clone();
        for (i, call) in calls.iter().enumerate() {
            next.apply(call).map_err(|e| (i, e))?;
        }
        *self = next;
        Ok(())
    }

    /// Runs one call. Creates answer the object's id; other calls `None`. On error nothing
    /// changed.
    pub fn apply(&mut self, call: &Call) -> Result<Option<String>, FleetError> {
        if call.tenant_id() != self.tenant_id {
            return Err(FleetError::WrongTenant {
                fleet: self.tenant_id.clone(),
                call: call.tenant_id().to_string(),
            });
        }
        let section = match call {
            Call::ProviderAccountCreate(_)
            | Call::ProviderAccountUpdate(_)
            | Call::ProviderAccountDelete(_) => Some(Section::ProviderAccounts),
            Call::FlavorCreate(_) | Call::FlavorUpdate(_) | Call::FlavorDelete(_) => {
                Some(Section::Flavors)
            }
            Call::SandboxTemplateCreate(_)
            | Call::SandboxTemplateUpdate(_)
            | Call::SandboxTemplateDelete(_) => Some(Section::SandboxTemplates),
            _ => None,
        };
        if section.is_some_and(|s| !self.modules.serves(s)) {
            return Err(FleetError::Unsupported {
                method: call.method(),
            });
        }
        match call {
            Call::ProviderAccountCreate(i) => self.account_create(i).map(Some),
            Call::ProviderAccountUpdate(i) => self.account_update(i).map(|_| None),
            Call::ProviderAccountDelete(i) => self.account_delete(i).map(|_| None),
            Call::SiteCreate(i) => self.site_create(i).map(Some),
            Call::PoolCreate(i) => self.pool_create(i).map(Some),
            Call::PoolUpdate(i) => self.pool_update(i).map(|_| None),
            Call::PoolSetOwnerQuota(i) => self.pool_set_owner_quota(i).map(|_| None),
            Call::PoolOffer(i) => self.pool_offer(i).map(|_| None),
            Call::PoolUnoffer(i) => self.pool_unoffer(i).map(|_| None),
            Call::PoolArchive(i) => self.pool_archive(i).map(|_| None),
            Call::FlavorCreate(i) => self.flavor_create(i).map(Some),
            Call::FlavorUpdate(i) => self.flavor_update(i).map(|_| None),
            Call::FlavorDelete(i) => self.flavor_delete(i).map(|_| None),
            Call::SandboxTemplateCreate(i) => self.template_create(i).map(Some),
            Call::SandboxTemplateUpdate(i) => self.template_update(i).map(|_| None),
            Call::SandboxTemplateDelete(i) => self.template_delete(i).map(|_| None),
        }
    }

    /// The id a create gets: derived from the idempotency key, else the next model id.
    fn new_id(&mut self, kind: Kind, idempotency_key: Option<&str>) -> String {
        match idempotency_key {
            Some(key) => ids::derive_id(kind, &self.caller, key),
            None => {
                self.next_id += 1;
                let prefix = ids::prefix(kind).expect("creates are of kinds with ids");
                let digest = sha2::Sha256::digest(format!("model:{}", self.next_id).as_bytes());
                format!("{prefix}{}", ids::base32_26(&digest))
            }
        }
    }

    fn account_create(&mut self, i: &ProviderAccountCreate) -> Result<String, FleetError> {
        let id = self.new_id(Kind::ProviderAccount, i.idempotency_key.as_deref());
        if self.accounts.contains_key(&id) {
            return Ok(id);
        }
        if self.accounts.values().any(|a| a.name == i.name) {
            return Err(FleetError::AlreadyExists {
                kind: Kind::ProviderAccount,
                name: i.name.clone(),
            });
        }
        self.accounts.insert(
            id.clone(),
            AccountObj {
                name: i.name.clone(),
                provider: i.provider.clone(),
                config: i.config.clone(),
                revision: 1,
            },
        );
        Ok(id)
    }

    fn account_update(&mut self, i: &ProviderAccountUpdate) -> Result<(), FleetError> {
        let account = self
            .accounts
            .get_mut(&i.id)
            .ok_or_else(|| not_found("providerAccount", &i.id))?;
        check(
            format!("providerAccount {}", i.id),
            i.if_revision,
            account.revision,
        )?;
        if account.config != i.config {
            account.config = i.config.clone();
            account.revision += 1;
        }
        Ok(())
    }

    fn account_delete(&mut self, i: &Delete) -> Result<(), FleetError> {
        let account = self
            .accounts
            .get(&i.id)
            .ok_or_else(|| not_found("providerAccount", &i.id))?;
        let object = format!("providerAccount {}", i.id);
        check(object.clone(), i.if_revision, account.revision)?;
        if let Some((pool_id, _)) = self
            .live_pools()
            .find(|(_, p)| p.provider_account_id.as_deref() == Some(&i.id))
        {
            return Err(FleetError::InUse {
                object,
                user: format!("pool {pool_id}"),
            });
        }
        self.accounts.remove(&i.id);
        Ok(())
    }

    /// Records the name fleet gives a created site or pool, the key's last segment, as
    /// `fleet.apply` does for every create it runs.
    /// The name a key gives an object (its last segment), refused when another object of the
    /// kind has it: two sites named `fra` would make an export no document can be.
    fn name_for(
        &self,
        kind: Kind,
        id: &str,
        key: Option<&str>,
    ) -> Result<Option<String>, FleetError> {
        let Some(name) = key.and_then(|k| k.splitn(4, ':').nth(3)) else {
            return Ok(None);
        };
        let prefix = ids::prefix(kind).unwrap_or_default();
        let taken = self
            .names
            .iter()
            .any(|(other, n)| n == name && other != id && other.starts_with(prefix));
        if taken {
            return Err(FleetError::AlreadyExists {
                kind,
                name: name.to_string(),
            });
        }
        Ok(Some(name.to_string()))
    }

    fn site_create(&mut self, i: &SiteCreate) -> Result<String, FleetError> {
        let id = self.new_id(Kind::Site, i.idempotency_key.as_deref());
        if let Some(name) = self.name_for(Kind::Site, &id, i.idempotency_key.as_deref())? {
            self.names.insert(id.clone(), name);
        }
        self.sites.entry(id.clone()).or_insert_with(|| SiteObj {
            kind: i.kind,
            region: i.region.clone(),
            revision: 1,
        });
        Ok(id)
    }

    fn pool_create(&mut self, i: &PoolCreate) -> Result<String, FleetError> {
        match (&i.provider_account_id, i.class) {
            (Some(account), PoolClass::Provider) => {
                if !self.modules.vps {
                    return Err(FleetError::Unsupported {
                        method: "pool.create with a provider account",
                    });
                }
                if !self.accounts.contains_key(account) {
                    return Err(not_found("providerAccount", account));
                }
            }
            (None, PoolClass::Provider) => {
                return Err(FleetError::Invalid(
                    "a pool of class provider names its provider account".into(),
                ));
            }
            (Some(_), _) => {
                return Err(FleetError::Invalid(
                    "only a pool of class provider has a provider account".into(),
                ));
            }
            (None, _) => {}
        }
        if !self.sites.contains_key(&i.site_id) {
            return Err(not_found("site", &i.site_id));
        }
        let id = self.new_id(Kind::Pool, i.idempotency_key.as_deref());
        let name = self.name_for(Kind::Pool, &id, i.idempotency_key.as_deref())?;
        let pool = PoolObj {
            site_id: i.site_id.clone(),
            class: i.class,
            gpu_model: i.gpu_model.clone(),
            provider_account_id: i.provider_account_id.clone(),
            policy: i.policy.clone(),
            owner_quota: BTreeMap::new(),
            offers: BTreeMap::new(),
            archived: false,
            revision: 1,
        };
        match self.pools.get_mut(&id) {
            // Re-created after an archive: the deterministic id comes back to life.
            Some(found) if found.archived => {
                *found = PoolObj {
                    revision: found.revision + 1,
                    ..pool
                };
            }
            Some(_) => {}
            None => {
                self.pools.insert(id.clone(), pool);
            }
        }
        if let Some(name) = name {
            self.names.insert(id.clone(), name);
        }
        Ok(id)
    }

    /// True for a pool of the fleet that is not archived.
    fn is_live(&self, pool_id: &str) -> bool {
        self.pools.get(pool_id).is_some_and(|p| !p.archived)
    }

    /// The pools that are not archived.
    fn live_pools(&self) -> impl Iterator<Item = (&String, &PoolObj)> {
        self.pools.iter().filter(|(_, p)| !p.archived)
    }

    fn pool_mut(&mut self, id: &str) -> Result<&mut PoolObj, FleetError> {
        self.pools
            .get_mut(id)
            .filter(|p| !p.archived)
            .ok_or_else(|| not_found("pool", id))
    }

    fn pool_update(&mut self, i: &PoolUpdate) -> Result<(), FleetError> {
        let pool = self.pool_mut(&i.id)?;
        check(format!("pool {}", i.id), i.if_revision, pool.revision)?;
        if pool.policy != i.policy {
            pool.policy = i.policy.clone();
            pool.revision += 1;
        }
        Ok(())
    }

    fn pool_set_owner_quota(&mut self, i: &PoolSetOwnerQuota) -> Result<(), FleetError> {
        let pool = self.pool_mut(&i.pool_id)?;
        let object = format!("ownerQuota {}:{}", i.pool_id, i.resource);
        let current = pool.owner_quota.get(&i.resource).map(|e| e.revision);
        check_entry(object, i.if_revision, current)?;
        if i.max == pool.owner_quota.get(&i.resource).map(|e| e.value) {
            return Ok(());
        }
        match (i.max, pool.owner_quota.get_mut(&i.resource)) {
            (None, _) => {
                pool.owner_quota.remove(&i.resource);
            }
            (Some(max), Some(entry)) => {
                entry.value = max;
                entry.revision += 1;
            }
            (Some(max), None) => {
                let entry = Entry {
                    value: max,
                    revision: 1,
                };
                pool.owner_quota.insert(i.resource.clone(), entry);
            }
        }
        pool.revision += 1;
        Ok(())
    }

    fn pool_offer(&mut self, i: &PoolOffer) -> Result<(), FleetError> {
        let own_tenant = self.tenant_id.clone();
        let known = self.tenants.contains(&i.tenant);
        let pool = self.pool_mut(&i.pool_id)?;
        if i.tenant == own_tenant {
            return Err(FleetError::Invalid(
                "a pool cannot be offered to its own owner".into(),
            ));
        }
        if !known {
            return Err(not_found("tenant", &i.tenant));
        }
        let object = format!("offer {} -> {}", i.pool_id, i.tenant);
        let current = pool.offers.get(&i.tenant).map(|e| e.revision);
        check_entry(object, i.if_revision, current)?;
        let value = OfferState {
            quota: i.quota.clone(),
            priority: i.priority,
        };
        match pool.offers.get_mut(&i.tenant) {
            Some(entry) if entry.value == value => return Ok(()),
            Some(entry) => {
                entry.value = value;
                entry.revision += 1;
            }
            None => {
                pool.offers
                    .insert(i.tenant.clone(), Entry { value, revision: 1 });
            }
        }
        pool.revision += 1;
        Ok(())
    }

    fn pool_unoffer(&mut self, i: &PoolUnoffer) -> Result<(), FleetError> {
        let pool = self.pool_mut(&i.pool_id)?;
        let object = format!("offer {} -> {}", i.pool_id, i.tenant);
        let current = pool.offers.get(&i.tenant).map(|e| e.revision);
        check_entry(object, Some(i.if_revision), current)?;
        pool.offers.remove(&i.tenant);
        pool.revision += 1;
        Ok(())
    }

    fn pool_archive(&mut self, i: &Delete) -> Result<(), FleetError> {
        let object = format!("pool {}", i.id);
        let revision = self.pool_mut(&i.id)?.revision;
        check(object.clone(), i.if_revision, revision)?;
        // What uses the pool goes first (the plan deletes it in earlier steps).
        let flavor = self.flavors.iter().find(|(_, f)| f.pool_id == i.id);
        let template = self.templates.values().find(|t| t.pool_id == i.id);
        let user = match (flavor, template) {
            (Some((id, _)), _) => Some(format!("flavor {id}")),
            (None, Some(t)) => Some(format!("sandboxTemplate {}", t.name)),
            (None, None) => None,
        };
        if let Some(user) = user {
            return Err(FleetError::InUse { object, user });
        }
        let pool = self.pool_mut(&i.id)?;
        // The pool's owner quotas, offers and fleet name go with it.
        pool.owner_quota.clear();
        pool.offers.clear();
        pool.archived = true;
        pool.revision += 1;
        self.names.remove(&i.id);
        Ok(())
    }

    fn flavor_create(&mut self, i: &FlavorCreate) -> Result<String, FleetError> {
        self.pool_mut(&i.pool_id)?;
        let id = self.new_id(Kind::Flavor, i.idempotency_key.as_deref());
        if self.flavors.contains_key(&id) {
            return Ok(id);
        }
        if self
            .flavors
            .values()
            .any(|f| f.pool_id == i.pool_id && f.name == i.name)
        {
            return Err(FleetError::AlreadyExists {
                kind: Kind::Flavor,
                name: format!("{}/{}", i.pool_id, i.name),
            });
        }
        self.flavors.insert(
            id.clone(),
            FlavorObj {
                pool_id: i.pool_id.clone(),
                name: i.name.clone(),
                vcpu: i.vcpu,
                memory_gib: i.memory_gib,
                disk_gib: i.disk_gib,
                gpu: i.gpu,
                revision: 1,
            },
        );
        Ok(id)
    }

    fn flavor_update(&mut self, i: &FlavorUpdate) -> Result<(), FleetError> {
        let flavor = self
            .flavors
            .get_mut(&i.id)
            .ok_or_else(|| not_found("flavor", &i.id))?;
        check(format!("flavor {}", i.id), i.if_revision, flavor.revision)?;
        let sizes = (i.vcpu, i.memory_gib, i.disk_gib, i.gpu);
        if (flavor.vcpu, flavor.memory_gib, flavor.disk_gib, flavor.gpu) != sizes {
            (flavor.vcpu, flavor.memory_gib, flavor.disk_gib, flavor.gpu) = sizes;
            flavor.revision += 1;
        }
        Ok(())
    }

    fn flavor_delete(&mut self, i: &Delete) -> Result<(), FleetError> {
        let flavor = self
            .flavors
            .get(&i.id)
            .ok_or_else(|| not_found("flavor", &i.id))?;
        let object = format!("flavor {}", i.id);
        check(object.clone(), i.if_revision, flavor.revision)?;
        if let Some(t) = self.templates.values().find(|t| t.flavor_id == i.id) {
            return Err(FleetError::InUse {
                object,
                user: format!("sandboxTemplate {}", t.name),
            });
        }
        self.flavors.remove(&i.id);
        Ok(())
    }

    /// Checks that `flavor_id` is a flavor of `pool_id`, an own pool or one offered.
    fn check_template_refs(&self, pool_id: &str, flavor_id: &str) -> Result<(), FleetError> {
        let offered = self.offered_pools.iter().find(|p| p.id == pool_id);
        let own = self.pools.get(pool_id).is_some_and(|p| !p.archived);
        if !own && offered.is_none() {
            return Err(not_found("pool", pool_id));
        }
        let of_pool = self
            .flavors
            .get(flavor_id)
            .is_some_and(|f| f.pool_id == pool_id)
            || offered.is_some_and(|p| p.flavors.iter().any(|f| f.id == flavor_id));
        if !of_pool {
            return Err(not_found("flavor", flavor_id));
        }
        Ok(())
    }

    fn template_create(&mut self, i: &SandboxTemplateCreate) -> Result<String, FleetError> {
        check_warm(i.warm)?;
        self.check_template_refs(&i.pool_id, &i.flavor_id)?;
        let id = self.new_id(Kind::SandboxTemplate, i.idempotency_key.as_deref());
        if self.templates.contains_key(&id) {
            return Ok(id);
        }
        if self.templates.values().any(|t| t.name == i.name) {
            return Err(FleetError::AlreadyExists {
                kind: Kind::SandboxTemplate,
                name: i.name.clone(),
            });
        }
        self.templates.insert(
            id.clone(),
            TemplateObj {
                name: i.name.clone(),
                pool_id: i.pool_id.clone(),
                flavor_id: i.flavor_id.clone(),
                image_id: i.image_id.clone(),
                env: i.env.clone(),
                network: i.network,
                warm: i.warm,
                revision: 1,
            },
        );
        Ok(id)
    }

    fn template_update(&mut self, i: &SandboxTemplateUpdate) -> Result<(), FleetError> {
        check_warm(i.warm)?;
        let template = self
            .templates
            .get(&i.id)
            .ok_or_else(|| not_found("sandboxTemplate", &i.id))?;
        check(
            format!("sandboxTemplate {}", i.id),
            i.if_revision,
            template.revision,
        )?;
        self.check_template_refs(&template.pool_id, &i.flavor_id)?;
        let template = self.templates.get_mut(&i.id).expect("looked up above");
        let now = (&template.flavor_id, &template.image_id, &template.env);
        if now == (&i.flavor_id, &i.image_id, &i.env)
            && (template.network, template.warm) == (i.network, i.warm)
        {
            return Ok(());
        }
        template.flavor_id = i.flavor_id.clone();
        template.image_id = i.image_id.clone();
        template.env = i.env.clone();
        template.network = i.network;
        template.warm = i.warm;
        template.revision += 1;
        Ok(())
    }

    fn template_delete(&mut self, i: &Delete) -> Result<(), FleetError> {
        let template = self
            .templates
            .get(&i.id)
            .ok_or_else(|| not_found("sandboxTemplate", &i.id))?;
        check(
            format!("sandboxTemplate {}", i.id),
            i.if_revision,
            template.revision,
        )?;
        self.templates.remove(&i.id);
        Ok(())
    }

    /// What `fleet.export` answers for this fleet: every served key written, lists sorted by
    /// plan name, objects named by fleet's names or else by their ids.
    pub fn export(&self) -> Export<'static> {
        let mut sites: Vec<document::Site<'static>> = self
            .sites
            .iter()
            .map(|(id, s)| document::Site {
                name: self.plan_name_of(id).to_string().into(),
                kind: s.kind,
                region: s.region.clone().into(),
            })
            .collect();
        sites.sort_by(|a, b| a.name.cmp(&b.name));

        let mut accounts: Vec<document::ProviderAccount<'static>> = self
            .accounts
            .values()
            .map(|a| document::ProviderAccount {
                name: a.name.clone().into(),
                provider: a.provider.clone().into(),
                config: from_strings(a.config.clone()),
            })
            .collect();
        accounts.sort_by(|a, b| a.name.cmp(&b.name));

        let mut pools: Vec<document::Pool<'static>> = self
            .live_pools()
            .map(|(id, p)| document::Pool {
                name: self.plan_name_of(id).to_string().into(),
                site: self.plan_name_of(&p.site_id).to_string().into(),
                class: p.class,
                gpu_model: p.gpu_model.clone().map(Text::from),
                provider_account: p.provider_account_id.as_ref().map(|a| {
                    self.accounts
                        .get(a)
                        .map_or_else(|| a.clone(), |a| a.name.clone())
                        .into()
                }),
                policy: p.policy.clone(),
                owner_quota: Some(
                    p.owner_quota
                        .iter()
                        .map(|(r, e)| (Text::from(r.clone()), e.value))
                        .collect(),
                ),
                offers: Some(
                    p.offers
                        .iter()
                        .map(|(tenant, e)| document::Offer {
                            tenant: tenant.clone().into(),
                            quota: from_string_keys(e.value.quota.clone()),
                            priority: e.value.priority,
                        })
                        .collect(),
                ),
            })
            .collect();
        pools.sort_by(|a, b| a.name.cmp(&b.name));

        let mut flavors: Vec<document::Flavor<'static>> = self
            .flavors
            .values()
            // A flavor of an archived pool is not part of the fleet.
            .filter(|f| self.is_live(&f.pool_id))
            .map(|f| document::Flavor {
                pool: self.plan_name_of(&f.pool_id).to_string().into(),
                name: f.name.clone().into(),
                vcpu: f.vcpu,
                memory_gib: f.memory_gib,
                disk_gib: f.disk_gib,
                gpu: f.gpu,
            })
            .collect();
        // By plan name `<pool>/<name>`, which is not (pool, name) order when one pool's
        // name is a prefix of another's.
        flavors.sort_by_cached_key(|f| format!("{}/{}", f.pool, f.name));

        let mut templates: Vec<document::SandboxTemplate<'static>> = self
            .templates
            .values()
            .map(|t| document::SandboxTemplate {
                name: t.name.clone().into(),
                pool: self.plan_name_of(&t.pool_id).to_string().into(),
                flavor: self.flavor_name(&t.flavor_id).into(),
                image_id: t.image_id.clone().into(),
                env: t.env.clone().map(from_strings),
                network: t.network,
                warm: t.warm,
            })
            .collect();
        templates.sort_by(|a, b| a.name.cmp(&b.name));

        let serves = |s| self.modules.serves(s);
        Export {
            tenant_id: self.tenant_id.clone().into(),
            caller: self.caller.clone().into(),
            config: Document {
                version: 1,
                sites: Some(sites),
                provider_accounts: serves(Section::ProviderAccounts).then_some(accounts),
                pools: Some(pools),
                flavors: serves(Section::Flavors).then_some(flavors),
                sandbox_templates: serves(Section::SandboxTemplates).then_some(templates),
            },
            missing: self.modules.missing(),
            objects: self.objects(),
            tenants: self.tenants.iter().cloned().map(Text::from).collect(),
            offered_pools: self.offered_pools.clone(),
        }
    }

    fn flavor_name(&self, flavor_id: &str) -> String {
        self.flavors
            .get(flavor_id)
            .map(|f| f.name.clone())
            .or_else(|| {
                self.offered_pools
                    .iter()
                    .flat_map(|p| &p.flavors)
                    .find(|f| f.id == flavor_id)
                    .map(|f| f.name.to_string())
            })
            .unwrap_or_else(|| flavor_id.to_string())
    }

    /// One entry per exported item, ordered by kind, then plan name.
    fn objects(&self) -> Vec<ObjectRef<'static>> {
        let object = |kind, name: String, id: Option<&String>, revision| ObjectRef {
            kind,
            name: name.into(),
            id: id.cloned().map(Text::from),
            revision,
            // One tenant's model: no other tenant uses its objects.
            used_by: None,
        };
        let mut out = Vec::new();
        for (id, s) in &self.sites {
            out.push(object(
                Kind::Site,
                self.plan_name_of(id).to_string(),
                Some(id),
                s.revision,
            ));
        }
        if self.modules.serves(Section::ProviderAccounts) {
            for (id, a) in &self.accounts {
                out.push(object(
                    Kind::ProviderAccount,
                    a.name.clone(),
                    Some(id),
                    a.revision,
                ));
            }
        }
        for (id, p) in self.live_pools() {
            let name = self.plan_name_of(id);
            out.push(object(Kind::Pool, name.to_string(), Some(id), p.revision));
            for (resource, e) in &p.owner_quota {
                out.push(object(
                    Kind::OwnerQuota,
                    format!("{name}:{resource}"),
                    None,
                    e.revision,
                ));
            }
            for (tenant, e) in &p.offers {
                out.push(object(
                    Kind::Offer,
                    format!("{name} -> {tenant}"),
                    None,
                    e.revision,
                ));
            }
        }
        if self.modules.serves(Section::Flavors) {
            for (id, f) in self
                .flavors
                .iter()
                .filter(|(_, f)| self.is_live(&f.pool_id))
            {
                out.push(object(
                    Kind::Flavor,
                    self.flavor_plan_name(f),
                    Some(id),
                    f.revision,
                ));
            }
        }
        if self.modules.serves(Section::SandboxTemplates) {
            for (id, t) in &self.templates {
                out.push(object(
                    Kind::SandboxTemplate,
                    t.name.clone(),
                    Some(id),
                    t.revision,
                ));
            }
        }
        out.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        out
    }
}

fn not_found(kind: &'static str, id: &str) -> FleetError {
    FleetError::NotFound {
        kind,
        id: id.to_string(),
    }
}

fn check(object: String, expected: u64, actual: u64) -> Result<(), FleetError> {
    check_entry(object, Some(expected), Some(actual))
}

/// An entry's `ifRevision`: absent means "whatever it is"; present must match an existing one.
fn check_entry(
    object: String,
    expected: Option<u64>,
    actual: Option<u64>,
) -> Result<(), FleetError> {
    match expected {
        Some(expected) if actual != Some(expected) => Err(FleetError::Conflict {
            object,
            expected,
            actual,
        }),
        _ => Ok(()),
    }
}

fn check_warm(warm: Option<Warm>) -> Result<(), FleetError> {
    match warm {
        Some(w) if w.min > w.max => Err(FleetError::Invalid(format!(
            "warm.min ({}) is greater than warm.max ({})",
            w.min, w.max
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::*;
    use crate::document::{Offer, Site};

    const T: &str = "root";

    fn fleet() -> Fleet {
        Fleet::new(T, "usr_ops", Modules::default(), ["acme".to_string()])
    }

    fn site(fleet: &mut Fleet, name: &str) -> String {
        let call = Call::SiteCreate(SiteCreate {
            tenant_id: T.into(),
            idempotency_key: Some(ids::idempotency_key(T, Kind::Site, name)),
            kind: SiteKind::Shared,
            region: "eu-central".into(),
        });
        fleet.apply(&call).unwrap().unwrap()
    }

    fn pool(fleet: &mut Fleet, name: &str, site_id: &str) -> String {
        let call = Call::PoolCreate(PoolCreate {
            tenant_id: T.into(),
            idempotency_key: Some(ids::idempotency_key(T, Kind::Pool, name)),
            site_id: site_id.into(),
            class: PoolClass::VpsHost,
            gpu_model: None,
            provider_account_id: None,
            policy: None,
        });
        fleet.apply(&call).unwrap().unwrap()
    }

    fn quota(pool_id: &str, resource: &str, max: Option<u64>, if_revision: Option<u64>) -> Call {
        Call::PoolSetOwnerQuota(PoolSetOwnerQuota {
            tenant_id: T.into(),
            pool_id: pool_id.into(),
            resource: resource.into(),
            max,
            if_revision,
        })
    }

    fn offer(pool_id: &str, tenant: &str, vcpu: u64, if_revision: Option<u64>) -> Call {
        Call::PoolOffer(PoolOffer {
            tenant_id: T.into(),
            pool_id: pool_id.into(),
            tenant: tenant.into(),
            quota: BTreeMap::from([("vcpu".to_string(), vcpu)]),
            priority: None,
            if_revision,
        })
    }

    #[test]
    fn creates_derive_ids_from_the_key_and_are_idempotent() {
        let mut fleet = fleet();
        let id = site(&mut fleet, "fra");
        let key = ids::idempotency_key(T, Kind::Site, "fra");
        assert_eq!(id, ids::derive_id(Kind::Site, "usr_ops", &key));
        let before = fleet.clone();
        assert_eq!(
            site(&mut fleet, "fra"),
            id,
            "the same key names the same site"
        );
        assert_eq!(fleet, before, "a repeated create changes nothing");
        assert_eq!(fleet.revision(Kind::Site, "fra"), Some(1));
    }

    #[test]
    fn revisions_move_by_one_per_call_and_if_revision_guards_them() {
        let mut fleet = fleet();
        let s = site(&mut fleet, "fra");
        let p = pool(&mut fleet, "vps-fra", &s);
        let update = |rev, budget| {
            Call::PoolUpdate(PoolUpdate {
                tenant_id: T.into(),
                id: p.clone(),
                if_revision: rev,
                policy: Some(Policy {
                    disruption_budget: budget,
                }),
            })
        };
        fleet.apply(&update(1, 0.1)).unwrap();
        assert_eq!(fleet.revision(Kind::Pool, "vps-fra"), Some(2));
        fleet.apply(&update(2, 0.2)).unwrap();
        assert_eq!(fleet.revision(Kind::Pool, "vps-fra"), Some(3));
        let err = fleet.apply(&update(1, 0.3)).unwrap_err();
        assert_eq!(
            err,
            FleetError::Conflict {
                object: format!("pool {p}"),
                expected: 1,
                actual: Some(3)
            }
        );
        assert_eq!(err.to_string(), format!("pool {p} is at revision 3, not 1"));
    }

    #[test]
    fn a_call_that_writes_what_is_there_moves_no_revision() {
        let mut fleet = fleet();
        let s = site(&mut fleet, "fra");
        let p = pool(&mut fleet, "vps-fra", &s);
        fleet.apply(&quota(&p, "gpu", Some(8), None)).unwrap();
        fleet.apply(&offer(&p, "acme", 4, None)).unwrap();
        let account = fleet
            .apply(&Call::ProviderAccountCreate(ProviderAccountCreate {
                tenant_id: T.into(),
                idempotency_key: None,
                name: "aws".into(),
                provider: "aws".into(),
                config: BTreeMap::from([("region".into(), "eu-central-1".into())]),
            }))
            .unwrap()
            .unwrap();
        let flavor = fleet
            .apply(&Call::FlavorCreate(FlavorCreate {
                tenant_id: T.into(),
                idempotency_key: None,
                pool_id: p.clone(),
                name: "small".into(),
                vcpu: 2,
                memory_gib: 4,
                disk_gib: 20,
                gpu: None,
            }))
            .unwrap()
            .unwrap();
        let template = fleet
            .apply(&Call::SandboxTemplateCreate(SandboxTemplateCreate {
                tenant_id: T.into(),
                idempotency_key: None,
                name: "py".into(),
                pool_id: p.clone(),
                flavor_id: flavor.clone(),
                image_id: "python:3.12".into(),
                env: None,
                network: Network::Private,
                warm: None,
            }))
            .unwrap()
            .unwrap();
        let before = fleet.clone();
        let same = [
            Call::PoolUpdate(PoolUpdate {
                tenant_id: T.into(),
                id: p.clone(),
                if_revision: 3,
                policy: None,
            }),
            quota(&p, "gpu", Some(8), Some(1)),
            quota(&p, "absent", None, None),
            offer(&p, "acme", 4, Some(1)),
            Call::ProviderAccountUpdate(ProviderAccountUpdate {
                tenant_id: T.into(),
                id: account,
                if_revision: 1,
                config: BTreeMap::from([("region".into(), "eu-central-1".into())]),
            }),
            Call::FlavorUpdate(FlavorUpdate {
                tenant_id: T.into(),
                id: flavor.clone(),
                if_revision: 1,
                vcpu: 2,
                memory_gib: 4,
                disk_gib: 20,
                gpu: None,
            }),
            Call::SandboxTemplateUpdate(SandboxTemplateUpdate {
                tenant_id: T.into(),
                id: template,
                if_revision: 1,
                flavor_id: flavor,
                image_id: "python:3.12".into(),
                env: None,
                network: Network::Private,
                warm: None,
            }),
        ];
        for call in &same {
            fleet.apply(call).unwrap();
            assert_eq!(fleet, before, "{} of the same values", call.method());
        }
        // The guard still holds on a call that would change nothing.
        let stale = quota(&p, "gpu", Some(8), Some(7));
        assert!(matches!(
            fleet.apply(&stale),
            Err(FleetError::Conflict { .. })
        ));
    }

    #[test]
    fn owner_quota_entries_have_revisions_and_null_removes_them() {
        let mut fleet = fleet();
        let s = site(&mut fleet, "fra");
        let p = pool(&mut fleet, "vps-fra", &s);
        fleet.apply(&quota(&p, "gpu", Some(8), None)).unwrap();
        assert_eq!(fleet.revision(Kind::OwnerQuota, "vps-fra:gpu"), Some(1));
        fleet.apply(&quota(&p, "gpu", Some(4), Some(1))).unwrap();
        assert_eq!(fleet.revision(Kind::OwnerQuota, "vps-fra:gpu"), Some(2));
        assert_eq!(
            fleet.revision(Kind::Pool, "vps-fra"),
            Some(3),
            "the pool moves with its entries (archiving it removes them)"
        );
        assert!(matches!(
            fleet.apply(&quota(&p, "gpu", None, Some(1))),
            Err(FleetError::Conflict { .. })
        ));
        assert!(matches!(
            fleet.apply(&quota(&p, "vcpu", Some(1), Some(1))),
            Err(FleetError::Conflict { actual: None, .. })
        ));
        fleet.apply(&quota(&p, "gpu", None, Some(2))).unwrap();
        assert_eq!(fleet.revision(Kind::OwnerQuota, "vps-fra:gpu"), None);
        let exported = fleet.export().config.pools.unwrap();
        assert_eq!(exported[0].owner_quota, Some(crate::Map::new()));
    }

    #[test]
    fn offers_name_known_tenants_other_than_the_owner() {
        let mut fleet = fleet();
        let s = site(&mut fleet, "fra");
        let p = pool(&mut fleet, "vps-fra", &s);
        assert!(matches!(
            fleet.apply(&offer(&p, T, 1, None)),
            Err(FleetError::Invalid(_))
        ));
        assert!(matches!(
            fleet.apply(&offer(&p, "globex", 1, None)),
            Err(FleetError::NotFound { kind: "tenant", .. })
        ));
        fleet.apply(&offer(&p, "acme", 64, None)).unwrap();
        fleet.apply(&offer(&p, "acme", 32, Some(1))).unwrap();
        assert_eq!(fleet.revision(Kind::Offer, "vps-fra -> acme"), Some(2));
        let unoffer = |rev| {
            Call::PoolUnoffer(PoolUnoffer {
                tenant_id: T.into(),
                pool_id: p.clone(),
                tenant: "acme".into(),
                if_revision: rev,
            })
        };
        assert!(matches!(
            fleet.apply(&unoffer(1)),
            Err(FleetError::Conflict { .. })
        ));
        fleet.apply(&unoffer(2)).unwrap();
        assert!(matches!(
            fleet.apply(&unoffer(2)),
            Err(FleetError::Conflict { actual: None, .. })
        ));
    }

    #[test]
    fn archive_removes_the_pool_with_its_quotas_and_offers() {
        let mut fleet = fleet();
        let s = site(&mut fleet, "fra");
        let p = pool(&mut fleet, "vps-fra", &s);
        fleet.apply(&quota(&p, "gpu", Some(8), None)).unwrap();
        let archive = |if_revision| {
            Call::PoolArchive(Delete {
                tenant_id: T.into(),
                id: p.clone(),
                if_revision,
            })
        };
        // An archive planned before an offer was added would remove that offer unseen.
        let planned = archive(2);
        fleet.apply(&offer(&p, "acme", 64, None)).unwrap();
        assert_eq!(
            fleet.apply(&planned),
            Err(FleetError::Conflict {
                object: format!("pool {p}"),
                expected: 2,
                actual: Some(3)
            })
        );
        let archive = archive(3);
        fleet.apply(&archive).unwrap();
        let export = fleet.export();
        assert_eq!(export.config.pools, Some(vec![]));
        assert!(
            export.objects.iter().all(|o| o.kind == Kind::Site),
            "{:?}",
            export.objects
        );
        assert_eq!(
            fleet.apply(&archive),
            Err(FleetError::NotFound {
                kind: "pool",
                id: p
            })
        );
    }

    #[test]
    fn archived_pools_leave_the_fleet_and_come_back_when_created_again() {
        let mut fleet = fleet();
        let s = site(&mut fleet, "fra");
        let p = pool(&mut fleet, "vps-fra", &s);
        let flavor = fleet
            .apply(&Call::FlavorCreate(FlavorCreate {
                tenant_id: T.into(),
                idempotency_key: None,
                pool_id: p.clone(),
                name: "g1.small".into(),
                vcpu: 2,
                memory_gib: 4,
                disk_gib: 40,
                gpu: None,
            }))
            .unwrap()
            .unwrap();
        assert!(flavor.starts_with("flv_") && flavor.len() == 30, "{flavor}");
        let archive = Call::PoolArchive(Delete {
            tenant_id: T.into(),
            id: p.clone(),
            if_revision: 1,
        });
        // Not while a flavor uses it: the flavor would come back with the pool, unseen.
        assert_eq!(
            fleet.apply(&archive),
            Err(FleetError::InUse {
                object: format!("pool {p}"),
                user: format!("flavor {flavor}")
            })
        );
        fleet
            .apply(&Call::FlavorDelete(Delete {
                tenant_id: T.into(),
                id: flavor.clone(),
                if_revision: 1,
            }))
            .unwrap();
        fleet.apply(&archive).unwrap();
        assert_eq!(pool(&mut fleet, "vps-fra", &s), p);
        assert_eq!(fleet.revision(Kind::Pool, "vps-fra"), Some(3));
        assert_eq!(fleet.export().config.flavors, Some(vec![]));
    }

    #[test]
    fn a_name_fleet_gave_is_not_given_twice() {
        let mut fleet = fleet();
        site(&mut fleet, "fra");
        // Another caller's create with the same key derives another id: the name is taken.
        let mut other = Fleet::new(T, "sa_ci", Modules::default(), Vec::<String>::new());
        std::mem::swap(&mut other.sites, &mut fleet.sites);
        std::mem::swap(&mut other.names, &mut fleet.names);
        let again = other.apply(&Call::SiteCreate(SiteCreate {
            tenant_id: T.into(),
            idempotency_key: Some(ids::idempotency_key(T, Kind::Site, "fra")),
            kind: SiteKind::Dedicated,
            region: "elsewhere".into(),
        }));
        assert_eq!(
            again,
            Err(FleetError::AlreadyExists {
                kind: Kind::Site,
                name: "fra".into()
            })
        );
        assert_eq!(other.export().config.sites.map(|s| s.len()), Some(1));
    }

    #[test]
    fn deletes_refuse_objects_still_in_use() {
        let mut fleet = fleet();
        let s = site(&mut fleet, "fra");
        let account = fleet
            .apply(&Call::ProviderAccountCreate(ProviderAccountCreate {
                tenant_id: T.into(),
                idempotency_key: None,
                name: "cloud".into(),
                provider: "hetzner-cloud".into(),
                config: BTreeMap::new(),
            }))
            .unwrap()
            .unwrap();
        let p = fleet
            .apply(&Call::PoolCreate(PoolCreate {
                tenant_id: T.into(),
                idempotency_key: None,
                site_id: s,
                class: PoolClass::Provider,
                gpu_model: None,
                provider_account_id: Some(account.clone()),
                policy: None,
            }))
            .unwrap()
            .unwrap();
        let delete = Call::ProviderAccountDelete(Delete {
            tenant_id: T.into(),
            id: account.clone(),
            if_revision: 1,
        });
        let err = fleet.apply(&delete).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("providerAccount {account} is used by pool {p}")
        );
        let archive = Call::PoolArchive(Delete {
            tenant_id: T.into(),
            id: p,
            if_revision: 1,
        });
        fleet.apply_all(&[archive, delete]).unwrap();
        assert_eq!(fleet.export().config.provider_accounts, Some(vec![]));
    }

    #[test]
    fn errors_leave_the_fleet_unchanged_and_unknown_ids_are_not_found() {
        let mut fleet = fleet();
        let s = site(&mut fleet, "fra");
        let before = fleet.clone();
        let calls = [
            Call::PoolCreate(PoolCreate {
                tenant_id: T.into(),
                idempotency_key: Some(ids::idempotency_key(T, Kind::Pool, "a")),
                site_id: s,
                class: PoolClass::VpsHost,
                gpu_model: None,
                provider_account_id: None,
                policy: None,
            }),
            quota("pool_nope", "gpu", Some(1), None),
        ];
        assert_eq!(
            fleet.apply_all(&calls),
            Err((
                1,
                FleetError::NotFound {
                    kind: "pool",
                    id: "pool_nope".into()
                }
            ))
        );
        assert_eq!(fleet, before, "a failed apply is rolled back whole");
        let other = Call::SiteCreate(SiteCreate {
            tenant_id: "acme".into(),
            idempotency_key: None,
            kind: SiteKind::Shared,
            region: "x".into(),
        });
        assert!(matches!(
            fleet.apply(&other),
            Err(FleetError::WrongTenant { .. })
        ));
    }

    #[test]
    fn export_names_by_fleet_names_or_ids_sorted_with_every_served_key() {
        let mut fleet = Fleet::new(
            T,
            "usr_ops",
            Modules {
                vps: true,
                sandboxes: false,
            },
            ["acme".to_string()],
        );
        let by_hand = fleet
            .apply(&Call::SiteCreate(SiteCreate {
                tenant_id: T.into(),
                idempotency_key: None,
                kind: SiteKind::Dedicated,
                region: "us-east".into(),
            }))
            .unwrap()
            .unwrap();
        let fra = site(&mut fleet, "fra");
        let p = pool(&mut fleet, "zeta", &fra);
        pool(&mut fleet, "alpha", &by_hand);
        fleet.apply(&offer(&p, "acme", 8, None)).unwrap();
        let export = fleet.export();
        assert_eq!(export.missing, vec![Section::SandboxTemplates]);
        assert_eq!(export.tenants, vec!["acme".to_string(), "root".to_string()]);
        let config = &export.config;
        assert!(config.sandbox_templates.is_none());
        assert_eq!(config.flavors, Some(vec![]));
        assert_eq!(config.provider_accounts, Some(vec![]));
        let mut sites = vec![
            Site {
                name: "fra".into(),
                kind: SiteKind::Shared,
                region: "eu-central".into(),
            },
            Site {
                name: by_hand.clone().into(),
                kind: SiteKind::Dedicated,
                region: "us-east".into(),
            },
        ];
        sites.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(config.sites.as_ref().unwrap(), &sites);
        let pools = config.pools.as_ref().unwrap();
        assert_eq!(
            pools
                .iter()
                .map(|p| (&*p.name, &*p.site))
                .collect::<Vec<_>>(),
            [("alpha", by_hand.as_str()), ("zeta", "fra")]
        );
        assert_eq!(
            pools[1].offers,
            Some(vec![Offer {
                tenant: "acme".into(),
                quota: crate::Map::from([("vcpu".into(), 8)]),
                priority: None
            }])
        );
        let names: Vec<_> = export
            .objects
            .iter()
            .map(|o| (o.kind, o.name.as_str()))
            .collect();
        assert!(names.contains(&(Kind::Offer, "zeta -> acme")), "{names:?}");
        assert!(names.contains(&(Kind::Site, by_hand.as_str())));
        let template = Call::SandboxTemplateDelete(Delete {
            tenant_id: T.into(),
            id: "tpl_x".into(),
            if_revision: 1,
        });
        assert_eq!(
            fleet.apply(&template),
            Err(FleetError::Unsupported {
                method: "sandboxTemplate.delete"
            })
        );
    }

    #[test]
    fn from_document_then_export_gives_the_document_back() {
        let doc: Document = serde_json::from_str(SEED_EXAMPLE).unwrap();
        let fleet =
            Fleet::from_document(T, "usr_ops", Modules::default(), ["acme".into()], &doc).unwrap();
        let mut expected = doc.clone();
        for pool in expected.pools.iter_mut().flatten() {
            pool.owner_quota.get_or_insert_default();
            pool.offers.get_or_insert_default();
        }
        expected
            .pools
            .as_mut()
            .unwrap()
            .sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(fleet.export().config, expected);
        assert_eq!(fleet.export().objects.len(), 8);
    }

    /// The seed's example document.
    const SEED_EXAMPLE: &str = r#"{
      "version": 1,
      "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
      "providerAccounts": [
        { "name": "cloud", "provider": "hetzner-cloud",
          "config": { "token": "secret://hetzner", "location": "fsn1" } }
      ],
      "pools": [
        { "name": "vps-fra", "site": "fra", "class": "vps-host", "gpuModel": "L40S",
          "policy": { "disruptionBudget": 0.1 }, "ownerQuota": { "gpu": 8 },
          "offers": [{ "tenant": "acme", "quota": { "vcpu": 64, "gpu": 2 }, "priority": 5 }] },
        { "name": "burst", "site": "fra", "class": "provider", "providerAccount": "cloud" }
      ],
      "flavors": [{ "pool": "vps-fra", "name": "g1.small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }],
      "sandboxTemplates": [
        { "name": "py-small", "pool": "vps-fra", "flavor": "g1.small", "imageId": "ubuntu-24.04",
          "env": { "PIP_INDEX_URL": "secret://root/sec_01k" }, "network": "private",
          "warm": { "min": 2, "max": 4 } }
      ]
    }"#;
}
