//! The platform objects' own methods: provider accounts, sites, pools (owner quotas, offers,
//! archive), flavors and sandbox templates.
//!
//! Every write goes through [`execute`], which takes an open transaction: the HTTP API opens
//! one per call, `fleet.apply` one for all its calls. The inputs are the planner's
//! [`planner::calls`] types, so a call made by hand is exactly the call an apply makes.

use super::AppState;
use super::api::Items;
use super::db::{Modules, Rows, SANDBOX_TABLES, Tx, VPS_TABLES, fetch, holds, new_id, now_ms};
use super::error::{ApiError, Code};
use super::iam::{Caller, check_name, commit_audited, parse, parse_value};
use planner::calls::*;
use planner::document::{Network, Policy, PoolClass, SiteKind, Warm};
use planner::export::Kind;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::AnyConnection;
use std::collections::{BTreeMap, HashMap};

/// What a call did: its answer and the id of the object it touched.
pub struct Outcome {
    /// The answer (the object as it is now); `None` in a batch, which answers nothing.
    pub value: Option<Object>,
    /// The object's id, for the audit row.
    pub object_id: Option<String>,
}

/// Parses the input of the call method `method`; `None` when `method` is no call method.
pub fn parse_call(method: &str, input: Value) -> Option<Result<Call, ApiError>> {
    Some(match method {
        "providerAccount.create" => parse_value(input).map(Call::ProviderAccountCreate),
        "providerAccount.update" => parse_value(input).map(Call::ProviderAccountUpdate),
        "providerAccount.delete" => parse_value(input).map(Call::ProviderAccountDelete),
        "site.create" => parse_value(input).map(Call::SiteCreate),
        "pool.create" => parse_value(input).map(Call::PoolCreate),
        "pool.update" => parse_value(input).map(Call::PoolUpdate),
        "pool.setOwnerQuota" => parse_value(input).map(Call::PoolSetOwnerQuota),
        "pool.offer" => parse_value(input).map(Call::PoolOffer),
        "pool.unoffer" => parse_value(input).map(Call::PoolUnoffer),
        "pool.archive" => parse_value(input).map(Call::PoolArchive),
        "flavor.create" => parse_value(input).map(Call::FlavorCreate),
        "flavor.update" => parse_value(input).map(Call::FlavorUpdate),
        "flavor.delete" => parse_value(input).map(Call::FlavorDelete),
        "sandboxTemplate.create" => parse_value(input).map(Call::SandboxTemplateCreate),
        "sandboxTemplate.update" => parse_value(input).map(Call::SandboxTemplateUpdate),
        "sandboxTemplate.delete" => parse_value(input).map(Call::SandboxTemplateDelete),
        _ => return None,
    })
}

/// UNSUPPORTED when the deployment's modules do not serve the method's kind.
pub fn served(method: &str, modules: Modules) -> Result<(), ApiError> {
    let kind = method.split('.').next().unwrap_or("");
    match kind {
        "providerAccount" if !modules.vps => {
            Err(ApiError::unsupported("provider accounts (vps module)"))
        }
        "flavor" if !modules.vps => Err(ApiError::unsupported("flavors (vps module)")),
        "sandboxTemplate" if !(modules.vps && modules.sandboxes) => {
            Err(ApiError::unsupported("sandbox templates (vps v0.5)"))
        }
        _ => Ok(()),
    }
}

/// A call method over HTTP: parse, decide its permission as the caller (no transaction
/// open), then run it in its own transaction with its audit row.
pub async fn call_http(
    state: &AppState,
    caller: &Caller,
    method: &str,
    input: Value,
) -> Result<Object, ApiError> {
    served(method, state.modules)?;
    let call = parse_call(method, input.clone())
        .ok_or_else(|| ApiError::new(Code::NotFound, format!("unknown method {method:?}")))??;
    let tenant = call.tenant_id().to_string();
    caller
        .check_tenant(state, method, &tenant, call.permission())
        .await?;
    let mut tx = state.db.write_tx().await?;
    state.db.lock_tenant(&mut tx, &tenant).await?;
    let outcome = execute(&mut tx, caller, state.modules, &call).await?;
    commit_audited(
        tx,
        caller,
        &tenant,
        method,
        outcome.object_id.as_deref(),
        json!({ "input": input }),
    )
    .await?;
    outcome
        .value
        .ok_or_else(|| ApiError::new(Code::Internal, "a call outside a batch answers"))
}

/// Runs one call inside `tx`, as `caller`, whose permission was decided before. Validates
/// the input, checks `ifRevision`, bumps revisions. The outcome's value is the call's answer.
pub async fn execute(
    tx: &mut Tx,
    caller: &Caller,
    modules: Modules,
    call: &Call,
) -> Result<Outcome, ApiError> {
    run(tx, caller, modules, call, None).await
}

/// Calls run together in one transaction (`fleet.apply`'s): the tenants found so far, since
/// tenants are never deleted and one lookup serves every call; and no answers, since the apply
/// answers with its plan, and reading each object back costs one to three queries a call.
#[derive(Default)]
pub struct Batch {
    tenants: Vec<String>,
}

/// NOT_FOUND unless `tenant` exists; a batch asks the database once per tenant (tenants are
/// never deleted).
async fn require_tenant(
    tx: &mut Tx,
    batch: Option<&mut Batch>,
    tenant: &str,
) -> Result<(), ApiError> {
    if batch
        .as_deref()
        .is_some_and(|b| b.tenants.iter().any(|t| t == tenant))
    {
        return Ok(());
    }
    super::iam::require_tenant(tx, tenant).await?;
    if let Some(batch) = batch {
        batch.tenants.push(tenant.to_owned());
    }
    Ok(())
}

/// [`execute`] as one call of `batch`: the outcome's value is null.
pub async fn execute_in(
    tx: &mut Tx,
    caller: &Caller,
    modules: Modules,
    call: &Call,
    batch: &mut Batch,
) -> Result<Outcome, ApiError> {
    run(tx, caller, modules, call, Some(batch)).await
}

async fn run(
    tx: &mut Tx,
    caller: &Caller,
    modules: Modules,
    call: &Call,
    mut batch: Option<&mut Batch>,
) -> Result<Outcome, ApiError> {
    served(call.method(), modules)?;
    let tenant = call.tenant_id();
    check_name("tenantId", tenant)?;
    require_tenant(tx, batch.as_deref_mut(), tenant).await?;
    let id = match call {
        Call::ProviderAccountCreate(i) => provider_account_create(tx, caller, i).await?,
        Call::ProviderAccountUpdate(i) => {
            check_config("config", &i.config)?;
            let row = account(tx, tenant, &i.id).await?;
            check_revision(
                &format!("providerAccount {}", i.id),
                i.if_revision,
                row.revision,
            )?;
            if row.config != i.config {
                sqlx::query(
                    "UPDATE provider_accounts SET config = $1, revision = revision + 1 WHERE id = $2",
                )
                .bind(serde_json::to_string(&i.config)?)
                .bind(&i.id)
                .execute(&mut **tx)
                .await?;
            }
            i.id.clone()
        }
        Call::ProviderAccountDelete(i) => {
            let row = account(tx, tenant, &i.id).await?;
            check_revision(
                &format!("providerAccount {}", i.id),
                i.if_revision,
                row.revision,
            )?;
            let users = load_pools(
                tx,
                "provider_account_id = $1 AND archived = 0",
                &[&i.id],
                Rows::Ordered,
            )
            .await?;
            if let Some(pool) = users.first() {
                let object = format!("providerAccount {}", i.id);
                let message = format!("provider account {} is used by pool {}", i.id, pool.id);
                return Err(in_use(&object, message, &pool.id));
            }
            return delete_row(tx, "provider_accounts", &i.id).await;
        }
        Call::SiteCreate(i) => {
            let id = site_create(tx, caller, i).await?;
            record_name(tx, tenant, Kind::Site, &id, i.idempotency_key.as_deref()).await?;
            id
        }
        Call::PoolCreate(i) => {
            let id = pool_create(tx, caller, modules, i).await?;
            record_name(tx, tenant, Kind::Pool, &id, i.idempotency_key.as_deref()).await?;
            id
        }
        Call::PoolUpdate(i) => {
            if let Some(policy) = &i.policy {
                check_policy("policy", policy)?;
            }
            let row = pool(tx, tenant, &i.id).await?;
            check_revision(&format!("pool {}", i.id), i.if_revision, row.revision)?;
            if row.policy != i.policy {
                sqlx::query("UPDATE pools SET policy = $1, revision = revision + 1 WHERE id = $2")
                    .bind(i.policy.as_ref().map(serde_json::to_string).transpose()?)
                    .bind(&i.id)
                    .execute(&mut **tx)
                    .await?;
            }
            i.id.clone()
        }
        Call::PoolSetOwnerQuota(i) => {
            check_resource("resource", &i.resource)?;
            let max = i.max.map(|max| to_i64("max", max)).transpose()?;
            let object = format!("ownerQuota {}:{}", i.pool_id, i.resource);
            let current = load_quotas(
                tx,
                OWN_POOL_ENTRY,
                &[&i.pool_id, &i.resource, tenant],
                Rows::Ordered,
            )
            .await?;
            let current = current.first();
            let changes = max != current.map(|q| q.max);
            entry_pool(tx, tenant, &i.pool_id, current.is_some(), changes).await?;
            check_entry_revision(&object, i.if_revision, current.map(|q| q.revision))?;
            if changes {
                let query = match (max, current) {
                    (None, _) => sqlx::query(
                        "DELETE FROM pool_owner_quotas WHERE pool_id = $1 AND resource = $2",
                    ),
                    (Some(max), Some(_)) => sqlx::query("UPDATE pool_owner_quotas SET max_value = $1, revision = revision + 1 WHERE pool_id = $2 AND resource = $3").bind(max),
                    (Some(max), None) => sqlx::query("INSERT INTO pool_owner_quotas (max_value, pool_id, resource, revision) VALUES ($1, $2, $3, 1)").bind(max),
                };
                query
                    .bind(&i.pool_id)
                    .bind(&i.resource)
                    .execute(&mut **tx)
                    .await?;
            }
            i.pool_id.clone()
        }
        Call::PoolOffer(i) => {
            for (k, v) in &i.quota {
                let mut path = "quota".to_owned();
                planner::validate::push_key(&mut path, k);
                check_resource(&path, k)?;
                to_i64(&path, *v)?;
            }
            check_priority(i.priority)?;
            let object = format!("offer {} -> {}", i.pool_id, i.tenant);
            let current = load_offers(
                tx,
                OWN_OFFER,
                &[&i.pool_id, &i.tenant, tenant],
                Rows::Ordered,
            )
            .await?;
            let current = current.first();
            let changes = current.is_none_or(|o| o.quota != i.quota || o.priority != i.priority);
            entry_pool(tx, tenant, &i.pool_id, current.is_some(), changes).await?;
            if i.tenant == tenant {
                return Err(ApiError::invalid(
                    "tenant",
                    "a pool cannot be offered to its own owner",
                ));
            }
            require_tenant(tx, batch.as_deref_mut(), &i.tenant).await?;
            check_entry_revision(&object, i.if_revision, current.map(|o| o.revision))?;
            if changes {
                let quota = serde_json::to_string(&i.quota)?;
                let sql = if current.is_some() {
                    "UPDATE pool_offers SET quota = $1, priority = $2, revision = revision + 1 WHERE pool_id = $3 AND tenant_id = $4"
                } else {
                    "INSERT INTO pool_offers (quota, priority, pool_id, tenant_id, revision) VALUES ($1, $2, $3, $4, 1)"
                };
                sqlx::query(sql)
                    .bind(quota)
                    .bind(i.priority)
                    .bind(&i.pool_id)
                    .bind(&i.tenant)
                    .execute(&mut **tx)
                    .await?;
            }
            i.pool_id.clone()
        }
        Call::PoolUnoffer(i) => {
            bump_pool(tx, tenant, &i.pool_id).await?;
            let object = format!("offer {} -> {}", i.pool_id, i.tenant);
            let current = load_offers(
                tx,
                "pool_id = $1 AND tenant_id = $2",
                &[&i.pool_id, &i.tenant],
                Rows::Ordered,
            )
            .await?;
            let actual = current
                .first()
                .map(|o| o.revision)
                .ok_or_else(|| ApiError::conflict(&object, i.if_revision, None))?;
            check_revision(&object, i.if_revision, actual)?;
            // The tenant's templates on the pool would be left on a pool it may not use.
            if modules.sandboxes || holds(tx, SANDBOX_TABLES).await? {
                let users = load_templates(
                    tx,
                    "pool_id = $1 AND tenant_id = $2",
                    &[&i.pool_id, &i.tenant],
                    Rows::Ordered,
                )
                .await?;
                if let Some(t) = users.first() {
                    let message = format!(
                        "offer {} -> {} is used by sandbox template {} of tenant {}",
                        i.pool_id, i.tenant, t.name, i.tenant
                    );
                    return Err(in_use(&object, message, &t.id));
                }
            }
            sqlx::query("DELETE FROM pool_offers WHERE pool_id = $1 AND tenant_id = $2")
                .bind(&i.pool_id)
                .bind(&i.tenant)
                .execute(&mut **tx)
                .await?;

            i.pool_id.clone()
        }
        Call::PoolArchive(i) => {
            lock_row(tx, "pools", &i.id, "UPDATE").await?;
            let row = pool(tx, tenant, &i.id).await?;
            let object = format!("pool {}", i.id);
            check_revision(&object, i.if_revision, row.revision)?;
            // What uses the pool goes first: a flavor left behind would come back with the
            // pool, unseen; a template (of any tenant) would run on a pool that is gone.
            if modules.vps || holds(tx, VPS_TABLES).await? {
                let flavors = load_flavors(tx, "pool_id = $1", &[&i.id], Rows::Ordered).await?;
                if let Some(f) = flavors.first() {
                    let message = format!("pool {} is used by flavor {}", i.id, f.id);
                    return Err(in_use(&object, message, &f.id));
                }
            }
            if (modules.vps && modules.sandboxes) || holds(tx, SANDBOX_TABLES).await? {
                let templates = load_templates(tx, "pool_id = $1", &[&i.id], Rows::Ordered).await?;
                if let Some(t) = templates.first() {
                    let message = format!(
                        "pool {} is used by sandbox template {} of tenant {}",
                        i.id, t.name, t.tenant_id
                    );
                    return Err(in_use(&object, message, &t.id));
                }
            }
            for sql in [
                "DELETE FROM pool_owner_quotas WHERE pool_id = $1",
                "DELETE FROM pool_offers WHERE pool_id = $1",
                "DELETE FROM fleet_names WHERE kind = 'pool' AND object_id = $1",
                "UPDATE pools SET archived = 1, revision = revision + 1 WHERE id = $1",
            ] {
                sqlx::query(sql).bind(&i.id).execute(&mut **tx).await?;
            }
            i.id.clone()
        }
        Call::FlavorCreate(i) => flavor_create(tx, caller, i).await?,
        Call::FlavorUpdate(i) => {
            check_sizes(i.vcpu, i.memory_gib)?;
            let row = flavor(tx, tenant, &i.id).await?;
            check_revision(&format!("flavor {}", i.id), i.if_revision, row.revision)?;
            if (row.vcpu, row.memory_gib, row.disk_gib, row.gpu)
                != (i.vcpu, i.memory_gib, i.disk_gib, i.gpu)
            {
                sqlx::query("UPDATE flavors SET vcpu = $1, memory_gib = $2, disk_gib = $3, gpu = $4, revision = revision + 1 WHERE id = $5")
                    .bind(i64::from(i.vcpu))
                    .bind(i64::from(i.memory_gib))
                    .bind(i64::from(i.disk_gib))
                    .bind(i.gpu.map(i64::from))
                    .bind(&i.id)
                    .execute(&mut **tx)
                    .await?;
            }
            i.id.clone()
        }
        Call::FlavorDelete(i) => {
            lock_row(tx, "flavors", &i.id, "UPDATE").await?;
            let row = flavor(tx, tenant, &i.id).await?;
            check_revision(&format!("flavor {}", i.id), i.if_revision, row.revision)?;
            if modules.sandboxes || holds(tx, SANDBOX_TABLES).await? {
                let users = load_templates(tx, "flavor_id = $1", &[&i.id], Rows::Ordered).await?;
                if let Some(t) = users.first() {
                    let object = format!("flavor {}", i.id);
                    let message = format!("flavor {} is used by sandbox template {}", i.id, t.name);
                    return Err(in_use(&object, message, &t.id));
                }
            }
            return delete_row(tx, "flavors", &i.id).await;
        }
        Call::SandboxTemplateCreate(i) => template_create(tx, caller, i).await?,
        Call::SandboxTemplateUpdate(i) => {
            non_empty("imageId", &i.image_id)?;
            check_template_fields(i.env.as_ref(), i.warm.as_ref())?;
            let row = template(tx, tenant, &i.id).await?;
            check_revision(
                &format!("sandboxTemplate {}", i.id),
                i.if_revision,
                row.revision,
            )?;
            // The template's pool may be another tenant's: lock the flavor, as a create does.
            template_flavor(tx, &row.pool_id, &i.flavor_id, true).await?;
            let now = (
                &row.flavor_id,
                &row.image_id,
                &row.env,
                row.network,
                row.warm,
            );
            if now != (&i.flavor_id, &i.image_id, &i.env, i.network, i.warm) {
                sqlx::query("UPDATE sandbox_templates SET flavor_id = $1, image_id = $2, env = $3, network = $4, warm = $5, revision = revision + 1 WHERE id = $6")
                    .bind(&i.flavor_id)
                    .bind(&i.image_id)
                    .bind(i.env.as_ref().map(serde_json::to_string).transpose()?)
                    .bind(enum_str(&i.network))
                    .bind(i.warm.as_ref().map(serde_json::to_string).transpose()?)
                    .bind(&i.id)
                    .execute(&mut **tx)
                    .await?;
            }
            i.id.clone()
        }
        Call::SandboxTemplateDelete(i) => {
            let row = template(tx, tenant, &i.id).await?;
            check_revision(
                &format!("sandboxTemplate {}", i.id),
                i.if_revision,
                row.revision,
            )?;
            return delete_row(tx, "sandbox_templates", &i.id).await;
        }
    };
    let value = match batch {
        Some(_) => None,
        None => Some(object_json(tx, call, &id).await?),
    };
    Ok(Outcome {
        value,
        object_id: Some(id),
    })
}

async fn object_json(tx: &mut Tx, call: &Call, id: &str) -> Result<Object, ApiError> {
    Ok(match call {
        Call::ProviderAccountCreate(_) | Call::ProviderAccountUpdate(_) => Object::ProviderAccount(
            account_value(&load_accounts(tx, "id = $1", &[id], Rows::Ordered).await?[0]),
        ),
        Call::SiteCreate(_) => Object::Site(site_value(
            &load_sites(tx, "id = $1", &[id], Rows::Ordered).await?[0],
        )),
        Call::FlavorCreate(_) | Call::FlavorUpdate(_) => Object::Flavor(flavor_value(
            &load_flavors(tx, "id = $1", &[id], Rows::Ordered).await?[0],
        )),
        Call::SandboxTemplateCreate(_) | Call::SandboxTemplateUpdate(_) => Object::SandboxTemplate(
            template_value(&load_templates(tx, "id = $1", &[id], Rows::Ordered).await?[0]),
        ),
        _ => {
            let row = load_pools(tx, "id = $1", &[id], Rows::Ordered)
                .await?
                .remove(0);
            let quotas = load_quotas(tx, "pool_id = $1", &[id], Rows::Ordered).await?;
            let offers = load_offers(tx, "pool_id = $1", &[id], Rows::Ordered).await?;
            Object::Pool(pool_value(
                &row,
                &quotas.iter().collect::<Vec<_>>(),
                &offers.iter().collect::<Vec<_>>(),
            ))
        }
    })
}

/// Records the name fleet gives a site or pool created with an idempotency key of fleet's
/// form (`fleet:<tenant>:<kind>:<name>`), whoever makes the call: a call made by hand does
/// exactly what the apply does. Refuses (CONFLICT) what would let one name or id mean two
/// objects in an export or a document: the name another object of the kind already has, or
/// the id of one (documents name objects by id too), or, for a pool, the id of a pool offered
/// to the tenant (its templates name that pool by it); and a create with another key whose id
/// is already a fleet name (ids derive from keys, so it can be arranged).
async fn record_name(
    tx: &mut Tx,
    tenant: &str,
    kind: Kind,
    id: &str,
    key: Option<&str>,
) -> Result<(), ApiError> {
    let taken_by = |other: String, name: &str| {
        ApiError::with(
            Code::Conflict,
            format!("{kind} name {name:?} is taken by {kind} {other}"),
            json!({ "object": format!("{kind} {name}"), "usedBy": other }),
        )
    };
    let named = "fleet_names WHERE tenant_id = $1 AND kind = $2 AND name = $3 AND object_id <> $4";
    let prefix = format!("fleet:{tenant}:{}:", kind.as_str());
    // Any key: the id it derives must not be another object's fleet name (a create with
    // another key can arrange it, and a pool archived, then named by its old id, then created
    // again under that id does): one reference would mean both.
    if key.is_some() {
        let taken: Vec<(String,)> = fetch(
            tx,
            "object_id",
            named,
            None,
            &[tenant, kind.as_str(), id, id],
        )
        .await?;
        if let Some((other,)) = taken.into_iter().next() {
            return Err(taken_by(other, id));
        }
    }
    let Some(name) = key.and_then(|k| k.strip_prefix(&prefix)) else {
        return Ok(());
    };
    // Another object of the kind with this name (a create with a fleet key by another
    // caller, whose id differs): two sites named `fra` would make an export no document can
    // be. The caller's transaction rolls the create back.
    let taken: Vec<(String,)> = fetch(
        tx,
        "object_id",
        named,
        None,
        &[tenant, kind.as_str(), name, id],
    )
    .await?;
    let mut other = taken.into_iter().next().map(|(other,)| other);
    // A pool id's shape as a new pool's name (the plan blocks it: a pool offered to this
    // tenant later under that id would make the name mean two pools); a replay of the create
    // that recorded it long ago keeps it.
    if kind == Kind::Pool && planner::ids::has_id_shape(Kind::Pool, name) {
        let recorded = super::db::exists(
            tx,
            "SELECT object_id FROM fleet_names WHERE kind = $1 AND object_id = $2 AND name = $3",
            &[kind.as_str(), id, name],
        )
        .await?;
        if !recorded {
            return Err(ApiError::with(
                Code::Conflict,
                format!(
                    "\"{name}\" has the shape of a pool id and names no pool of this tenant: a new \
                     pool cannot take an id as its name"
                ),
                json!({ "object": format!("pool {name}") }),
            ));
        }
    }
    // Or an object of the kind whose id is this name, named by fleet or not (an unnamed one
    // exports under its id; any may be named by its id in a document); or a pool offered to
    // the tenant.
    if other.is_none() {
        // Fleet names only sites and pools (the only callers).
        let by_id = match kind {
            Kind::Site => "SELECT id FROM sites WHERE tenant_id = $1 AND id = $2 AND id <> $3",
            _ => {
                "SELECT id FROM pools WHERE archived = 0 AND tenant_id = $1 AND id = $2 AND id <> $3 \
                 UNION SELECT pool_id FROM pool_offers WHERE tenant_id = $1 AND pool_id = $2"
            }
        };
        if super::db::exists(tx, by_id, &[tenant, name, id]).await? {
            other = Some(name.to_owned());
        }
    }
    if let Some(other) = other {
        return Err(taken_by(other, name));
    }
    sqlx::query(
        "INSERT INTO fleet_names (tenant_id, kind, object_id, name) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (kind, object_id) DO UPDATE SET name = excluded.name, tenant_id = excluded.tenant_id",
    )
    .bind(tenant)
    .bind(kind.as_str())
    .bind(id)
    .bind(name)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn check_revision(object: &str, expected: u64, actual: i64) -> Result<(), ApiError> {
    if i64::try_from(expected).ok() == Some(actual) {
        Ok(())
    } else {
        Err(ApiError::conflict(object, expected, Some(actual)))
    }
}

/// The `ifRevision` of a call on an entry that may not exist (an owner quota entry, an offer):
/// when given, the entry must exist at that revision.
fn check_entry_revision(
    object: &str,
    expected: Option<u64>,
    actual: Option<i64>,
) -> Result<(), ApiError> {
    match (expected, actual) {
        (None, _) => Ok(()),
        (Some(expected), None) => Err(ApiError::conflict(object, expected, None)),
        (Some(expected), Some(actual)) => check_revision(object, expected, actual),
    }
}

/// A quota maximum as stored: at most the document's bound, 2^53 - 1 (past it the planHash
/// could not tell two values apart), which the OpenAPI document states.
fn to_i64(path: &str, v: u64) -> Result<i64, ApiError> {
    use planner::validate::MAX_QUOTA;
    match i64::try_from(v) {
        Ok(max) if v <= MAX_QUOTA => Ok(max),
        // Not the value itself: it may sit under a key that looks secret.
        _ => Err(ApiError::invalid(
            path,
            format!("must be an integer from 0 to {MAX_QUOTA}"),
        )),
    }
}

/// An offer's priority: within the document's bounds, ±(2^53 - 1).
fn check_priority(priority: Option<i64>) -> Result<(), ApiError> {
    use planner::validate::{MAX_INTEGER, MIN_INTEGER};
    match priority {
        Some(p) if p.unsigned_abs() > MAX_INTEGER => Err(ApiError::invalid(
            "priority",
            format!("must be an integer from {MIN_INTEGER} to {MAX_INTEGER}"),
        )),
        _ => Ok(()),
    }
}

/// The id of a create: derived from the caller and the idempotency key, or random.
/// The id of a create: derived from its idempotency key and the caller, else new. A key of
/// fleet's form (`fleet:<tenant>:<kind>:<name>`) must be what fleet would write for this very
/// object ([`check_fleet_key`]).
fn create_id(
    (kind, prefix): (Kind, &str),
    caller: &Caller,
    tenant: &str,
    name: Option<&str>,
    key: Option<&String>,
) -> Result<String, ApiError> {
    match key {
        Some(key) if key.is_empty() || key.chars().count() > 300 => Err(ApiError::invalid(
            "idempotencyKey",
            "an idempotency key has 1 to 300 characters",
        )),
        Some(key) => {
            check_fleet_key(kind, tenant, name, key)?;
            Ok(planner::ids::derive_id(kind, &caller.principal_id, key))
        }
        None => Ok(new_id(prefix)),
    }
}

/// A key of fleet's form names the call's own tenant, this kind, and a plan name: for a site
/// or pool a valid name (fleet records it as the object's name), for a provider account or
/// template its `name`, for a flavor `<pool>/<its name>`. Otherwise the export would hold a name
/// no document can have, another tenant's create could take the id a tenant's own plan derives
/// (ids derive from the caller and the key only), or a document would plan a create whose id is
/// another object's (found by a fuzzing audit: each made a plan that never converges).
fn check_fleet_key(
    kind: Kind,
    tenant: &str,
    name: Option<&str>,
    key: &str,
) -> Result<(), ApiError> {
    let Some(rest) = key.strip_prefix("fleet:") else {
        return Ok(());
    };
    let expected = match name {
        Some(name) if kind == Kind::Flavor => format!("fleet:{tenant}:flavor:<pool>/{name}"),
        Some(name) => format!("fleet:{tenant}:{kind}:{name}"),
        None => format!("fleet:{tenant}:{kind}:<name>"),
    };
    let refuse = || {
        Err(ApiError::invalid(
            "idempotencyKey",
            format!("a key of fleet's form names this object: {expected}"),
        ))
    };
    let Some((key_tenant, rest)) = rest.split_once(':') else {
        return refuse();
    };
    let Some((key_kind, plan_name)) = rest.split_once(':') else {
        return refuse();
    };
    let named = match (kind, name) {
        (Kind::Flavor, Some(name)) => plan_name
            .rsplit_once('/')
            .is_some_and(|(pool, flavor)| flavor == name && planner::validate::is_name(pool)),
        (_, Some(name)) => plan_name == name,
        (_, None) => planner::validate::is_name(plan_name),
    };
    if key_tenant != tenant || key_kind != kind.as_str() || !named {
        return refuse();
    }
    Ok(())
}

fn check_resource(path: &str, r: &str) -> Result<(), ApiError> {
    if planner::validate::is_resource(r) {
        Ok(())
    } else {
        Err(ApiError::invalid(
            path,
            planner::validate::resource_message(r),
        ))
    }
}

/// Secret-looking keys hold references, by the document's rule (the planner's, so that a call
/// made by hand accepts exactly what a document may hold).
fn check_config(path: &str, map: &BTreeMap<String, String>) -> Result<(), ApiError> {
    use planner::validate::{is_secret_reference, looks_secret, push_key, secret_message};
    for (k, v) in map {
        if looks_secret(k) && !is_secret_reference(v) {
            let mut path = path.to_owned();
            push_key(&mut path, k);
            return Err(ApiError::invalid(path, secret_message(k)));
        }
    }
    Ok(())
}

fn check_policy(path: &str, p: &Policy) -> Result<(), ApiError> {
    if (0.0..=1.0).contains(&p.disruption_budget) {
        Ok(())
    } else {
        Err(ApiError::invalid(
            format!("{path}.disruptionBudget"),
            planner::validate::budget_message(p.disruption_budget),
        ))
    }
}

/// `vcpu` and `memoryGiB` are at least 1 (their type holds the top of the document's range).
fn check_sizes(vcpu: u32, memory: u32) -> Result<(), ApiError> {
    for (path, value) in [("vcpu", vcpu), ("memoryGiB", memory)] {
        if value < 1 {
            let range = planner::validate::integer_range(1, u32::MAX.into());
            return Err(ApiError::invalid(path, format!("{range}, not {value}")));
        }
    }
    Ok(())
}

fn check_template_fields(
    env: Option<&BTreeMap<String, String>>,
    warm: Option<&Warm>,
) -> Result<(), ApiError> {
    if let Some(env) = env {
        check_config("env", env)?;
    }
    if let Some(w) = warm
        && w.min > w.max
    {
        return Err(ApiError::invalid(
            "warm",
            planner::validate::warm_message(w.min, w.max),
        ));
    }
    Ok(())
}

/// Free text (`region`, `provider`, `gpuModel`, `imageId`) by the document's rule: 1 to
/// [`planner::validate::MAX_TEXT`] characters, not only whitespace, no NUL.
fn non_empty(path: &str, v: &str) -> Result<(), ApiError> {
    match planner::validate::text_problem(v) {
        Some(problem) => Err(ApiError::invalid(path, format!("{path} {problem}"))),
        None => Ok(()),
    }
}

/// A create inserts its row with `ON CONFLICT DO NOTHING` (no target: its id, or a name the
/// table keeps unique): a new object, the usual case, costs that one statement, and only when
/// nothing was inserted does the create read by id, to tell an idempotent replay (the row is
/// there: the same tenant's answers its id, another tenant's is a CONFLICT) from a name taken
/// by another object. The answers and errors are those of reading by id, then by name, then
/// inserting; on PostgreSQL a unique violation would also abort the apply's transaction.
const NEW_ROW: &str = "ON CONFLICT DO NOTHING";

/// An idempotent create found its object: the same tenant's, or a CONFLICT.
fn same_tenant(kind: &str, id: &str, found: &str, tenant: &str) -> Result<(), ApiError> {
    if found == tenant {
        Ok(())
    } else {
        Err(ApiError::with(
            Code::Conflict,
            format!("{kind} {id} exists in another tenant"),
            json!({ "object": format!("{kind} {id}") }),
        ))
    }
}

/// After a create's insert inserted nothing: a row with `id` in the same tenant is a replay
/// (answered with the id, nothing changed); in another tenant, or no such row (then the
/// unique name was taken: `taken` is its message and object), CONFLICT.
async fn replayed(
    tx: &mut Tx,
    (table, kind): (&str, &str),
    id: &str,
    tenant: &str,
    taken: (String, String),
) -> Result<(), ApiError> {
    let found =
        sqlx::query_scalar::<_, String>(&format!("SELECT tenant_id FROM {table} WHERE id = $1"))
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    match found {
        Some(owner) => same_tenant(kind, id, &owner, tenant),
        None => {
            let (message, object) = taken;
            Err(ApiError::with(
                Code::Conflict,
                message,
                json!({ "object": object }),
            ))
        }
    }
}

async fn provider_account_create(
    tx: &mut Tx,
    caller: &Caller,
    i: &ProviderAccountCreate,
) -> Result<String, ApiError> {
    check_name("name", &i.name)?;
    non_empty("provider", &i.provider)?;
    check_config("config", &i.config)?;
    let id = create_id(
        (Kind::ProviderAccount, "pa"),
        caller,
        &i.tenant_id,
        Some(&i.name),
        i.idempotency_key.as_ref(),
    )?;
    let inserted = sqlx::query(&format!("INSERT INTO provider_accounts (id, tenant_id, name, provider, config, revision, created_at) VALUES ($1, $2, $3, $4, $5, 1, $6) {NEW_ROW}"))
        .bind(&id)
        .bind(&i.tenant_id)
        .bind(&i.name)
        .bind(&i.provider)
        .bind(serde_json::to_string(&i.config)?)
        .bind(now_ms())
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if inserted == 0 {
        let taken = (
            format!("provider account {:?} already exists", i.name),
            format!("providerAccount {}", i.name),
        );
        replayed(
            tx,
            ("provider_accounts", "providerAccount"),
            &id,
            &i.tenant_id,
            taken,
        )
        .await?;
    } else {
        names_are_not_ids(
            tx,
            ("provider_accounts", Kind::ProviderAccount),
            &i.tenant_id,
            &i.name,
            &id,
        )
        .await?;
    }
    Ok(id)
}

async fn site_create(tx: &mut Tx, caller: &Caller, i: &SiteCreate) -> Result<String, ApiError> {
    non_empty("region", &i.region)?;
    let key = i.idempotency_key.as_ref();
    let id = create_id((Kind::Site, "site"), caller, &i.tenant_id, None, key)?;
    let inserted = sqlx::query(&format!("INSERT INTO sites (id, tenant_id, kind, region, revision, created_at) VALUES ($1, $2, $3, $4, 1, $5) {NEW_ROW}"))
        .bind(&id)
        .bind(&i.tenant_id)
        .bind(enum_str(&i.kind))
        .bind(&i.region)
        .bind(now_ms())
        .execute(&mut **tx)
        .await?
        .rows_affected();
    // Sites keep only their id unique: nothing inserted is a replay.
    if inserted == 0
        && let Some(found) = load_sites(tx, "id = $1", &[&id], Rows::Ordered)
            .await?
            .first()
    {
        same_tenant("site", &id, &found.tenant_id, &i.tenant_id)?;
    }
    Ok(id)
}

async fn pool_create(
    tx: &mut Tx,
    caller: &Caller,
    modules: Modules,
    i: &PoolCreate,
) -> Result<String, ApiError> {
    if let Some(p) = &i.policy {
        check_policy("policy", p)?;
    }
    if let Some(g) = &i.gpu_model {
        non_empty("gpuModel", g)?;
    }
    match (i.class, &i.provider_account_id) {
        (PoolClass::Provider, None) => {
            return Err(ApiError::invalid(
                "providerAccountId",
                "a pool of class provider names its provider account",
            ));
        }
        (PoolClass::Provider, Some(_)) if !modules.vps => {
            return Err(ApiError::unsupported("provider accounts (vps module)"));
        }
        (PoolClass::Provider, Some(pa)) => {
            account(tx, &i.tenant_id, pa).await?;
        }
        (_, Some(_)) => {
            return Err(ApiError::invalid(
                "providerAccountId",
                "only a pool of class provider has a provider account",
            ));
        }
        (_, None) => {}
    }
    if load_sites(
        tx,
        "id = $1 AND tenant_id = $2",
        &[&i.site_id, &i.tenant_id],
        Rows::Ordered,
    )
    .await?
    .is_empty()
    {
        return Err(ApiError::not_found("site", &i.site_id));
    }
    let key = i.idempotency_key.as_ref();
    let id = create_id((Kind::Pool, "pool"), caller, &i.tenant_id, None, key)?;
    let policy = i.policy.as_ref().map(serde_json::to_string).transpose()?;
    let inserted = sqlx::query(&format!("INSERT INTO pools (id, tenant_id, site_id, class, gpu_model, provider_account_id, policy, archived, revision, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 0, 1, $8) {NEW_ROW}"))
        .bind(&id)
        .bind(&i.tenant_id)
        .bind(&i.site_id)
        .bind(enum_str(&i.class))
        .bind(&i.gpu_model)
        .bind(&i.provider_account_id)
        .bind(&policy)
        .bind(now_ms())
        .execute(&mut **tx)
        .await?
        .rows_affected();
    // Pools keep only their id unique: nothing inserted is a replay.
    if inserted == 0
        && let Some(found) = load_pools(tx, "id = $1", &[&id], Rows::Ordered)
            .await?
            .first()
    {
        same_tenant("pool", &id, &found.tenant_id, &i.tenant_id)?;
        if found.archived {
            // Re-created after an archive: the deterministic id comes back to life.
            sqlx::query("UPDATE pools SET site_id = $1, class = $2, gpu_model = $3, provider_account_id = $4, policy = $5, archived = 0, revision = revision + 1 WHERE id = $6")
                .bind(&i.site_id)
                .bind(enum_str(&i.class))
                .bind(&i.gpu_model)
                .bind(&i.provider_account_id)
                .bind(policy)
                .bind(&id)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(id)
}

async fn flavor_create(tx: &mut Tx, caller: &Caller, i: &FlavorCreate) -> Result<String, ApiError> {
    check_name("name", &i.name)?;
    check_sizes(i.vcpu, i.memory_gib)?;
    pool(tx, &i.tenant_id, &i.pool_id).await?;
    let key = i.idempotency_key.as_ref();
    let id = create_id(
        (Kind::Flavor, "flv"),
        caller,
        &i.tenant_id,
        Some(&i.name),
        key,
    )?;
    let inserted = sqlx::query(&format!("INSERT INTO flavors (id, tenant_id, pool_id, name, vcpu, memory_gib, disk_gib, gpu, revision, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9) {NEW_ROW}"))
        .bind(&id)
        .bind(&i.tenant_id)
        .bind(&i.pool_id)
        .bind(&i.name)
        .bind(i64::from(i.vcpu))
        .bind(i64::from(i.memory_gib))
        .bind(i64::from(i.disk_gib))
        .bind(i.gpu.map(i64::from))
        .bind(now_ms())
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if inserted == 0 {
        let taken = (
            format!("flavor {}/{} already exists", i.pool_id, i.name),
            format!("flavor {}/{}", i.pool_id, i.name),
        );
        replayed(tx, ("flavors", "flavor"), &id, &i.tenant_id, taken).await?;
    }
    Ok(id)
}

/// On PostgreSQL, locks the row `id` of `table` (a name of ours) for the rest of the
/// transaction, `FOR SHARE` or `FOR UPDATE`; SQLite's one writer needs no row locks.
///
/// The tenant lock orders the writes of one tenant; these order a template (of one tenant)
/// against the owner (another tenant) of the pool or flavor it uses: the template shares the
/// row, the owner's archive, unoffer or flavor delete takes it for update *before* it looks
/// for users, so one waits for the other's commit and then sees it (READ COMMITTED reads each
/// statement afresh). Without them, on PostgreSQL a template could land on a pool being
/// unoffered (both answered 200) or on a flavor being deleted (a foreign-key failure, 500).
async fn lock_row(tx: &mut Tx, table: &str, id: &str, mode: &str) -> Result<(), ApiError> {
    if super::db::Backend::of(tx) != super::db::Backend::Postgres {
        return Ok(());
    }
    sqlx::query(&format!("SELECT id FROM {table} WHERE id = $1 FOR {mode}"))
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The pool a template of `tenant` may use: its own, or one offered to it; answers whether it
/// is another tenant's. Only then are its rows locked ([`lock_row`]): the tenant's own pool and
/// flavors change only under the tenant lock this call holds.
async fn template_pool(tx: &mut Tx, tenant: &str, pool_id: &str) -> Result<bool, ApiError> {
    let own = load_pools(
        tx,
        "id = $1 AND tenant_id = $2 AND archived = 0",
        &[pool_id, tenant],
        Rows::Ordered,
    )
    .await?;
    if !own.is_empty() {
        return Ok(false);
    }
    lock_row(tx, "pools", pool_id, "SHARE").await?;
    if super::db::exists(
        tx,
        "SELECT pool_id FROM pool_offers WHERE pool_id = $1 AND tenant_id = $2",
        &[pool_id, tenant],
    )
    .await?
    {
        return Ok(true);
    }
    Err(ApiError::not_found("pool", pool_id))
}

/// The flavor a template may use: one of its pool's. `shared`: the pool is another tenant's,
/// so the flavor's row is locked against its owner's delete.
async fn template_flavor(
    tx: &mut Tx,
    pool_id: &str,
    flavor_id: &str,
    shared: bool,
) -> Result<(), ApiError> {
    if shared {
        lock_row(tx, "flavors", flavor_id, "SHARE").await?;
    }
    if load_flavors(
        tx,
        "id = $1 AND pool_id = $2",
        &[flavor_id, pool_id],
        Rows::Ordered,
    )
    .await?
    .is_empty()
    {
        return Err(ApiError::not_found("flavor", flavor_id));
    }
    Ok(())
}

async fn template_create(
    tx: &mut Tx,
    caller: &Caller,
    i: &SandboxTemplateCreate,
) -> Result<String, ApiError> {
    check_name("name", &i.name)?;
    non_empty("imageId", &i.image_id)?;
    check_template_fields(i.env.as_ref(), i.warm.as_ref())?;
    let shared = template_pool(tx, &i.tenant_id, &i.pool_id).await?;
    template_flavor(tx, &i.pool_id, &i.flavor_id, shared).await?;
    let id = create_id(
        (Kind::SandboxTemplate, "tpl"),
        caller,
        &i.tenant_id,
        Some(&i.name),
        i.idempotency_key.as_ref(),
    )?;
    let inserted = sqlx::query(&format!("INSERT INTO sandbox_templates (id, tenant_id, name, pool_id, flavor_id, image_id, env, network, warm, revision, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10) {NEW_ROW}"))
        .bind(&id)
        .bind(&i.tenant_id)
        .bind(&i.name)
        .bind(&i.pool_id)
        .bind(&i.flavor_id)
        .bind(&i.image_id)
        .bind(i.env.as_ref().map(serde_json::to_string).transpose()?)
        .bind(enum_str(&i.network))
        .bind(i.warm.as_ref().map(serde_json::to_string).transpose()?)
        .bind(now_ms())
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if inserted == 0 {
        let taken = (
            format!("sandbox template {:?} already exists", i.name),
            format!("sandboxTemplate {}", i.name),
        );
        let table = ("sandbox_templates", "sandboxTemplate");
        replayed(tx, table, &id, &i.tenant_id, taken).await?;
    } else {
        names_are_not_ids(
            tx,
            ("sandbox_templates", Kind::SandboxTemplate),
            &i.tenant_id,
            &i.name,
            &id,
        )
        .await?;
    }
    Ok(id)
}

/// A new object's name must not be the id of another object of its kind in the tenant, nor
/// its id another's name: documents name objects by name or by id, and one reference would
/// then mean two objects (the name wins, and a document's reference by id would move to the
/// newcomer). Fleet's own names of sites and pools are kept by [`record_name`].
async fn names_are_not_ids(
    tx: &mut Tx,
    (table, kind): (&str, Kind),
    tenant: &str,
    name: &str,
    id: &str,
) -> Result<(), ApiError> {
    let clash = format!(
        "SELECT id, name FROM {table} WHERE tenant_id = $1 AND id <> $3 AND (id = $2 OR name = $3)"
    );
    let found: Vec<(String, String)> = sqlx::query_as(&clash)
        .bind(tenant)
        .bind(name)
        .bind(id)
        .fetch_all(&mut **tx)
        .await?;
    let Some((other, other_name)) = found.into_iter().next() else {
        return Ok(());
    };
    let message = if other == name {
        format!("{kind} name {name:?} is the id of {kind} {other}")
    } else {
        format!("{kind} {id} would have the name of {kind} {other} ({other_name:?}) as its id")
    };
    Err(ApiError::with(
        Code::Conflict,
        message,
        json!({ "object": format!("{kind} {name}"), "usedBy": other }),
    ))
}

/// A pool's revision moves with its owner quota entries and offers: archiving it removes
/// them, so an archive planned before one of them changed must not match. Also the check that
/// the pool is the tenant's and live (NOT_FOUND), in the same statement: a call that fails
/// later rolls the move back with its transaction.
async fn bump_pool(tx: &mut Tx, tenant: &str, pool_id: &str) -> Result<(), ApiError> {
    let moved = sqlx::query(
        "UPDATE pools SET revision = revision + 1 WHERE id = $1 AND tenant_id = $2 AND archived = 0",
    )
    .bind(pool_id)
    .bind(tenant)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if moved == 0 {
        return Err(ApiError::not_found("pool", pool_id));
    }
    Ok(())
}

/// An owner quota entry (`$2` its resource) of the pool `$1`, found only when the pool is the
/// tenant `$3`'s and live. The offers' filter is the same, `$2` the tenant offered to.
const OWN_POOL_ENTRY: &str = "pool_id = $1 AND resource = $2 \
    AND pool_id IN (SELECT id FROM pools WHERE tenant_id = $3 AND archived = 0)";
const OWN_OFFER: &str = "pool_id = $1 AND tenant_id = $2 \
    AND pool_id IN (SELECT id FROM pools WHERE tenant_id = $3 AND archived = 0)";

/// Before an owner quota entry or an offer of the pool is set: the pool is the tenant's and
/// live (NOT_FOUND), which an entry `found` by [`OWN_POOL_ENTRY`] proves already; its revision
/// moves only when the entry `changes` (a call that writes what is there moves nothing, so a
/// plan reviewed before it still applies).
async fn entry_pool(
    tx: &mut Tx,
    tenant: &str,
    pool_id: &str,
    found: bool,
    changes: bool,
) -> Result<(), ApiError> {
    if changes {
        bump_pool(tx, tenant, pool_id).await
    } else if found {
        Ok(())
    } else {
        pool(tx, tenant, pool_id).await.map(drop)
    }
}

/// CONFLICT: `object` (`flavor fl_…`) is still used by `user` (an id), as `message` says.
fn in_use(object: &str, message: String, user: &str) -> ApiError {
    ApiError::with(
        Code::Conflict,
        message,
        json!({ "object": object, "usedBy": user }),
    )
}

/// Deletes the row `id` of `table` (a name of ours, never input) and answers the delete.
async fn delete_row(tx: &mut Tx, table: &str, id: &str) -> Result<Outcome, ApiError> {
    sqlx::query(&format!("DELETE FROM {table} WHERE id = $1"))
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(Outcome {
        value: Some(Object::Deleted(Deleted {
            id: id.to_owned(),
            deleted: true,
        })),
        object_id: Some(id.to_owned()),
    })
}

/// The one row a by-id read found, or NOT_FOUND naming `kind` and `id`.
async fn one<T>(
    rows: impl Future<Output = Result<Vec<T>, ApiError>>,
    kind: &str,
    id: &str,
) -> Result<T, ApiError> {
    rows.await?
        .pop()
        .ok_or_else(|| ApiError::not_found(kind, id))
}

const OWN: &str = "id = $1 AND tenant_id = $2";

async fn account(tx: &mut Tx, tenant: &str, id: &str) -> Result<AccountRow, ApiError> {
    let args = [id, tenant];
    one(
        load_accounts(tx, OWN, &args, Rows::Unordered),
        "providerAccount",
        id,
    )
    .await
}

async fn pool(tx: &mut Tx, tenant: &str, id: &str) -> Result<PoolRow, ApiError> {
    let (args, filter) = ([id, tenant], "id = $1 AND tenant_id = $2 AND archived = 0");
    one(load_pools(tx, filter, &args, Rows::Unordered), "pool", id).await
}

async fn flavor(tx: &mut Tx, tenant: &str, id: &str) -> Result<FlavorRow, ApiError> {
    let args = [id, tenant];
    one(load_flavors(tx, OWN, &args, Rows::Unordered), "flavor", id).await
}

async fn template(tx: &mut Tx, tenant: &str, id: &str) -> Result<TemplateRow, ApiError> {
    let args = [id, tenant];
    one(
        load_templates(tx, OWN, &args, Rows::Unordered),
        "sandboxTemplate",
        id,
    )
    .await
}

/// The JSON text of a unit enum (`vps-host`).
pub fn enum_str<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Parses a stored unit enum or JSON column.
pub fn from_text<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, ApiError> {
    serde_json::from_value(Value::String(s.to_string())).map_err(ApiError::from)
}

fn from_json<T: serde::de::DeserializeOwned>(s: Option<String>) -> Result<Option<T>, ApiError> {
    s.map(|s| serde_json::from_str(&s))
        .transpose()
        .map_err(ApiError::from)
}

// Rows, loaded with a WHERE clause over `$N` arguments.

/// A site.
#[derive(Debug, Clone)]
pub struct SiteRow {
    /// Id.
    pub id: String,
    /// Owner.
    pub tenant_id: String,
    /// Kind.
    pub kind: SiteKind,
    /// Region.
    pub region: String,
    /// Revision.
    pub revision: i64,
}

/// A pool.
#[derive(Debug, Clone)]
pub struct PoolRow {
    /// Id.
    pub id: String,
    /// Owner.
    pub tenant_id: String,
    /// Its site.
    pub site_id: String,
    /// Class.
    pub class: PoolClass,
    /// GPU model.
    pub gpu_model: Option<String>,
    /// Provider account.
    pub provider_account_id: Option<String>,
    /// Policy.
    pub policy: Option<Policy>,
    /// Archived (gone from the fleet).
    pub archived: bool,
    /// Revision.
    pub revision: i64,
}

/// An owner quota entry.
#[derive(Debug, Clone)]
pub struct QuotaRow {
    /// Its pool.
    pub pool_id: String,
    /// Resource.
    pub resource: String,
    /// Maximum.
    pub max: i64,
    /// Revision.
    pub revision: i64,
}

/// An offer.
#[derive(Debug, Clone)]
pub struct OfferRow {
    /// Its pool.
    pub pool_id: String,
    /// The tenant offered to.
    pub tenant_id: String,
    /// Quota.
    pub quota: BTreeMap<String, u64>,
    /// Priority.
    pub priority: Option<i64>,
    /// Revision.
    pub revision: i64,
}

/// A provider account.
#[derive(Debug, Clone)]
pub struct AccountRow {
    /// Id.
    pub id: String,
    /// Owner.
    pub tenant_id: String,
    /// Name.
    pub name: String,
    /// Provider.
    pub provider: String,
    /// Config.
    pub config: BTreeMap<String, String>,
    /// Revision.
    pub revision: i64,
}

/// A flavor.
#[derive(Debug, Clone)]
pub struct FlavorRow {
    /// Id.
    pub id: String,
    /// Owner.
    pub tenant_id: String,
    /// Its pool.
    pub pool_id: String,
    /// Name.
    pub name: String,
    /// vCPUs.
    pub vcpu: u32,
    /// Memory GiB.
    pub memory_gib: u32,
    /// Disk GiB.
    pub disk_gib: u32,
    /// GPUs.
    pub gpu: Option<u32>,
    /// Revision.
    pub revision: i64,
}

/// A sandbox template.
#[derive(Debug, Clone)]
pub struct TemplateRow {
    /// Id.
    pub id: String,
    /// Owner.
    pub tenant_id: String,
    /// Name.
    pub name: String,
    /// Its pool.
    pub pool_id: String,
    /// Its flavor.
    pub flavor_id: String,
    /// Image.
    pub image_id: String,
    /// Env.
    pub env: Option<BTreeMap<String, String>>,
    /// Network.
    pub network: Network,
    /// Warm pool.
    pub warm: Option<Warm>,
    /// Revision.
    pub revision: i64,
}

fn u32_of(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Sites matching `filter`, by id.
pub async fn load_sites(
    conn: &mut AnyConnection,
    filter: &str,
    args: &[&str],
    rows: Rows,
) -> Result<Vec<SiteRow>, ApiError> {
    let from = format!("sites WHERE {filter}");
    let rows: Vec<(String, String, SiteKind, String, i64)> = fetch(
        conn,
        "id, tenant_id, kind, region, revision",
        &from,
        rows.by("id"),
        args,
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, tenant_id, kind, region, revision)| SiteRow {
            id,
            tenant_id,
            kind,
            region,
            revision,
        })
        .collect())
}

/// Pools matching `filter`, by id.
pub async fn load_pools(
    conn: &mut AnyConnection,
    filter: &str,
    args: &[&str],
    rows: Rows,
) -> Result<Vec<PoolRow>, ApiError> {
    type Columns = (
        String,
        String,
        String,
        PoolClass,
        Option<String>,
        Option<String>,
        Option<String>,
        i64,
        i64,
    );
    let columns =
        "id, tenant_id, site_id, class, gpu_model, provider_account_id, policy, archived, revision";
    let from = format!("pools WHERE {filter}");
    let rows: Vec<Columns> = fetch(conn, columns, &from, rows.by("id"), args).await?;
    rows.into_iter()
        .map(|r| {
            Ok(PoolRow {
                id: r.0,
                tenant_id: r.1,
                site_id: r.2,
                class: r.3,
                gpu_model: r.4,
                provider_account_id: r.5,
                policy: from_json(r.6)?,
                archived: r.7 != 0,
                revision: r.8,
            })
        })
        .collect()
}

/// Owner quota entries matching `filter`.
pub async fn load_quotas(
    conn: &mut AnyConnection,
    filter: &str,
    args: &[&str],
    rows: Rows,
) -> Result<Vec<QuotaRow>, ApiError> {
    let columns = "pool_id, resource, max_value, revision";
    let from = format!("pool_owner_quotas WHERE {filter}");
    let rows: Vec<(String, String, i64, i64)> =
        fetch(conn, columns, &from, rows.by("pool_id, resource"), args).await?;
    Ok(rows
        .into_iter()
        .map(|(pool_id, resource, max, revision)| QuotaRow {
            pool_id,
            resource,
            max,
            revision,
        })
        .collect())
}

/// Offers matching `filter`.
pub async fn load_offers(
    conn: &mut AnyConnection,
    filter: &str,
    args: &[&str],
    rows: Rows,
) -> Result<Vec<OfferRow>, ApiError> {
    let columns = "pool_id, tenant_id, quota, priority, revision";
    let from = format!("pool_offers WHERE {filter}");
    let rows: Vec<(String, String, String, Option<i64>, i64)> =
        fetch(conn, columns, &from, rows.by("pool_id, tenant_id"), args).await?;
    rows.into_iter()
        .map(|(pool_id, tenant_id, quota, priority, revision)| {
            Ok(OfferRow {
                pool_id,
                tenant_id,
                quota: serde_json::from_str(&quota)?,
                priority,
                revision,
            })
        })
        .collect()
}

/// Provider accounts matching `filter`.
pub async fn load_accounts(
    conn: &mut AnyConnection,
    filter: &str,
    args: &[&str],
    rows: Rows,
) -> Result<Vec<AccountRow>, ApiError> {
    let columns = "id, tenant_id, name, provider, config, revision";
    let from = format!("provider_accounts WHERE {filter}");
    let rows: Vec<(String, String, String, String, String, i64)> =
        fetch(conn, columns, &from, rows.by("name, id"), args).await?;
    rows.into_iter()
        .map(|(id, tenant_id, name, provider, config, revision)| {
            Ok(AccountRow {
                id,
                tenant_id,
                name,
                provider,
                config: serde_json::from_str(&config)?,
                revision,
            })
        })
        .collect()
}

/// Flavors matching `filter`.
pub async fn load_flavors(
    conn: &mut AnyConnection,
    filter: &str,
    args: &[&str],
    rows: Rows,
) -> Result<Vec<FlavorRow>, ApiError> {
    type Columns = (
        String,
        String,
        String,
        String,
        i64,
        i64,
        i64,
        Option<i64>,
        i64,
    );
    let columns = "id, tenant_id, pool_id, name, vcpu, memory_gib, disk_gib, gpu, revision";
    let from = format!("flavors WHERE {filter}");
    let rows: Vec<Columns> = fetch(conn, columns, &from, rows.by("pool_id, name"), args).await?;
    Ok(rows
        .into_iter()
        .map(|r| FlavorRow {
            id: r.0,
            tenant_id: r.1,
            pool_id: r.2,
            name: r.3,
            vcpu: u32_of(r.4),
            memory_gib: u32_of(r.5),
            disk_gib: u32_of(r.6),
            gpu: r.7.map(u32_of),
            revision: r.8,
        })
        .collect())
}

/// Sandbox templates matching `filter`.
pub async fn load_templates(
    conn: &mut AnyConnection,
    filter: &str,
    args: &[&str],
    rows: Rows,
) -> Result<Vec<TemplateRow>, ApiError> {
    type Columns = (
        String,
        String,
        String,
        String,
        String,
        String,
        Option<String>,
        Network,
        Option<String>,
        i64,
    );
    let columns = "id, tenant_id, name, pool_id, flavor_id, image_id, env, network, warm, revision";
    let from = format!("sandbox_templates WHERE {filter}");
    let rows: Vec<Columns> = fetch(conn, columns, &from, rows.by("name, id"), args).await?;
    rows.into_iter()
        .map(|r| {
            Ok(TemplateRow {
                id: r.0,
                tenant_id: r.1,
                name: r.2,
                pool_id: r.3,
                flavor_id: r.4,
                image_id: r.5,
                env: from_json(r.6)?,
                network: r.7,
                warm: from_json(r.8)?,
                revision: r.9,
            })
        })
        .collect()
}

/// A site, as the site methods answer it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Site {
    /// `site_...`.
    pub id: String,
    /// The owner.
    pub tenant_id: String,
    /// The site's kind.
    pub kind: SiteKind,
    /// Where it is.
    pub region: String,
    /// 1 on create, +1 on every change.
    pub revision: i64,
}

/// A pool, as the pool methods answer it: with its owner quota entries and offers.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pool {
    /// `pool_...`.
    pub id: String,
    /// The owner.
    pub tenant_id: String,
    /// Its site.
    pub site_id: String,
    /// The pool's class.
    pub class: PoolClass,
    /// 1 on create, +1 on every change (of its entries and offers too).
    pub revision: i64,
    /// Archived: gone from the fleet (`pool.archive` answers it so).
    pub archived: bool,
    /// Owner quota entries, by resource.
    pub owner_quota: Vec<OwnerQuotaEntry>,
    /// Offers to other tenants, by tenant.
    pub offers: Vec<OfferEntry>,
    /// Its GPU model; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_model: Option<String>,
    /// Its provider account (class `provider`); left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_account_id: Option<String>,
    /// Its scheduling policy; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
}

/// One owner quota entry of a pool.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OwnerQuotaEntry {
    /// The resource.
    pub resource: String,
    /// Its maximum.
    pub max: i64,
    /// The entry's revision.
    pub revision: i64,
}

/// One offer of a pool to another tenant.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OfferEntry {
    /// The tenant offered to.
    pub tenant: String,
    /// Maximum per resource.
    pub quota: BTreeMap<String, u64>,
    /// The offer's revision.
    pub revision: i64,
    /// Higher is scheduled first; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

/// A provider account, as its methods answer it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderAccount {
    /// `pa_...`.
    pub id: String,
    /// The owner.
    pub tenant_id: String,
    /// Its name.
    pub name: String,
    /// The provider.
    pub provider: String,
    /// Its configuration (secret references, never secrets).
    pub config: BTreeMap<String, String>,
    /// 1 on create, +1 on every change.
    pub revision: i64,
}

/// A flavor, as its methods answer it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Flavor {
    /// `flv_...`.
    pub id: String,
    /// The owner.
    pub tenant_id: String,
    /// Its pool.
    pub pool_id: String,
    /// Its name within the pool.
    pub name: String,
    /// Virtual CPUs.
    pub vcpu: u32,
    /// Memory, GiB.
    #[serde(rename = "memoryGiB")]
    pub memory_gib: u32,
    /// Disk, GiB.
    #[serde(rename = "diskGiB")]
    pub disk_gib: u32,
    /// 1 on create, +1 on every change.
    pub revision: i64,
    /// GPUs; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
}

/// A sandbox template, as its methods answer it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxTemplate {
    /// `tpl_...`.
    pub id: String,
    /// The owner.
    pub tenant_id: String,
    /// Its name.
    pub name: String,
    /// Its pool (maybe another tenant's, offered to this one).
    pub pool_id: String,
    /// Its flavor.
    pub flavor_id: String,
    /// The image.
    pub image_id: String,
    /// The sandboxes' network.
    pub network: Network,
    /// 1 on create, +1 on every change.
    pub revision: i64,
    /// Environment variables; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// The warm pool; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warm: Option<Warm>,
}

/// What a delete answers: `{id, deleted: true}`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Deleted {
    /// The deleted object's id.
    pub id: String,
    /// Always `true`.
    #[schemars(extend("const" = true))]
    pub deleted: bool,
}

/// The answer of an object method: the object as it is after the call, or a delete's.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Object {
    /// `site.*`.
    Site(Site),
    /// `pool.*` (but `pool.archive` too).
    Pool(Pool),
    /// `providerAccount.create/update/get`.
    ProviderAccount(ProviderAccount),
    /// `flavor.create/update/get`.
    Flavor(Flavor),
    /// `sandboxTemplate.create/update/get`.
    SandboxTemplate(SandboxTemplate),
    /// The deletes.
    Deleted(Deleted),
}

fn site_value(s: &SiteRow) -> Site {
    Site {
        id: s.id.clone(),
        tenant_id: s.tenant_id.clone(),
        kind: s.kind,
        region: s.region.clone(),
        revision: s.revision,
    }
}

/// A pool as answered, with its owner quota entries and offers.
fn pool_value(p: &PoolRow, quotas: &[&QuotaRow], offers: &[&OfferRow]) -> Pool {
    Pool {
        id: p.id.clone(),
        tenant_id: p.tenant_id.clone(),
        site_id: p.site_id.clone(),
        class: p.class,
        revision: p.revision,
        archived: p.archived,
        owner_quota: quotas
            .iter()
            .map(|q| OwnerQuotaEntry {
                resource: q.resource.clone(),
                max: q.max,
                revision: q.revision,
            })
            .collect(),
        offers: offers
            .iter()
            .map(|o| OfferEntry {
                tenant: o.tenant_id.clone(),
                quota: o.quota.clone(),
                revision: o.revision,
                priority: o.priority,
            })
            .collect(),
        gpu_model: p.gpu_model.clone(),
        provider_account_id: p.provider_account_id.clone(),
        policy: p.policy.clone(),
    }
}

fn account_value(a: &AccountRow) -> ProviderAccount {
    ProviderAccount {
        id: a.id.clone(),
        tenant_id: a.tenant_id.clone(),
        name: a.name.clone(),
        provider: a.provider.clone(),
        config: a.config.clone(),
        revision: a.revision,
    }
}

fn flavor_value(f: &FlavorRow) -> Flavor {
    Flavor {
        id: f.id.clone(),
        tenant_id: f.tenant_id.clone(),
        pool_id: f.pool_id.clone(),
        name: f.name.clone(),
        vcpu: f.vcpu,
        memory_gib: f.memory_gib,
        disk_gib: f.disk_gib,
        revision: f.revision,
        gpu: f.gpu,
    }
}

fn template_value(t: &TemplateRow) -> SandboxTemplate {
    SandboxTemplate {
        id: t.id.clone(),
        tenant_id: t.tenant_id.clone(),
        name: t.name.clone(),
        pool_id: t.pool_id.clone(),
        flavor_id: t.flavor_id.clone(),
        image_id: t.image_id.clone(),
        network: t.network,
        revision: t.revision,
        env: t.env.clone(),
        warm: t.warm,
    }
}

/// Input of the list methods.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListInput {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
}

/// Input of the get methods.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetInput {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The object's id.
    pub id: String,
}

/// The read permission of a kind (`compute:pool:read`).
pub fn read_permission(kind: &str) -> &'static str {
    match kind {
        "site" => "compute:site:read",
        "pool" => "compute:pool:read",
        "providerAccount" => "vps:providerAccount:read",
        "flavor" => "vps:flavor:read",
        _ => "vps:sandboxTemplate:read",
    }
}

/// `<kind>.list` and `<kind>.get`: decide `<module>:<kind>:read` on the tenant's scope.
pub async fn read(
    state: &AppState,
    caller: &Caller,
    method: &str,
    input: &[u8],
) -> Result<Read, ApiError> {
    served(method, state.modules)?;
    let (kind, verb) = method.split_once('.').unwrap_or((method, ""));
    let (tenant, id) = if verb == "get" {
        let i: GetInput = parse(input)?;
        (i.tenant_id, Some(i.id))
    } else {
        let i: ListInput = parse(input)?;
        (i.tenant_id, None)
    };
    caller
        .check_tenant(state, method, &tenant, read_permission(kind))
        .await?;
    let mut conn = state.db.pool.acquire().await?;
    let conn = &mut *conn;
    super::iam::require_tenant(conn, &tenant).await?;
    let (filter, args): (&str, Vec<&str>) = match &id {
        Some(id) => ("tenant_id = $1 AND id = $2", vec![&tenant, id]),
        None => ("tenant_id = $1", vec![&tenant]),
    };
    let items: Vec<Object> = match kind {
        "site" => load_sites(conn, filter, &args, Rows::Ordered)
            .await?
            .iter()
            .map(|s| Object::Site(site_value(s)))
            .collect(),
        "pool" => {
            // Three queries, whatever the number of pools.
            let filter = format!("{filter} AND archived = 0");
            let pools = load_pools(conn, &filter, &args, Rows::Ordered).await?;
            let inner = format!("pool_id IN (SELECT id FROM pools WHERE {filter})");
            let quotas = load_quotas(conn, &inner, &args, Rows::Ordered).await?;
            let offers = load_offers(conn, &inner, &args, Rows::Ordered).await?;
            let mut by_pool: HashMap<&str, (Vec<&QuotaRow>, Vec<&OfferRow>)> = HashMap::new();
            for q in &quotas {
                by_pool.entry(&q.pool_id).or_default().0.push(q);
            }
            for o in &offers {
                by_pool.entry(&o.pool_id).or_default().1.push(o);
            }
            let none = (Vec::new(), Vec::new());
            pools
                .iter()
                .map(|p| {
                    let (q, o) = by_pool.get(p.id.as_str()).unwrap_or(&none);
                    Object::Pool(pool_value(p, q, o))
                })
                .collect()
        }
        "providerAccount" => load_accounts(conn, filter, &args, Rows::Ordered)
            .await?
            .iter()
            .map(|a| Object::ProviderAccount(account_value(a)))
            .collect(),
        "flavor" => load_flavors(conn, filter, &args, Rows::Ordered)
            .await?
            .iter()
            .map(|f| Object::Flavor(flavor_value(f)))
            .collect(),
        _ => load_templates(conn, filter, &args, Rows::Ordered)
            .await?
            .iter()
            .map(|t| Object::SandboxTemplate(template_value(t)))
            .collect(),
    };
    match id {
        Some(id) => items
            .into_iter()
            .next()
            .map(Read::One)
            .ok_or_else(|| ApiError::not_found(kind, &id)),
        None => Ok(Read::List(Items { items })),
    }
}

/// What a read answers: `<kind>.get` the object, `<kind>.list` `{items}`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Read {
    /// `<kind>.get`.
    One(Object),
    /// `<kind>.list`.
    List(Items<Object>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::db::Db;
    use sqlx::{Connection as _, Row as _};

    const MODULES: Modules = Modules {
        vps: true,
        sandboxes: true,
    };

    /// A fresh migrated database with the tenants `t1` and `t2`: SQLite in `dir`, or a new
    /// database on `BETTER_COMPUTE_TEST_POSTGRES`'s server.
    async fn db(dir: &std::path::Path, postgres: bool) -> Db {
        let url = if postgres {
            let base = std::env::var("BETTER_COMPUTE_TEST_POSTGRES").unwrap();
            // Tests run in parallel: a counter keeps two databases of one millisecond apart.
            static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let name = format!("bc_objects_{}_{}_{n}", std::process::id(), now_ms());
            sqlx::any::install_default_drivers();
            let mut conn = AnyConnection::connect(&base).await.unwrap();
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut conn)
                .await
                .unwrap();
            format!("{}/{name}", base.rsplit_once('/').unwrap().0)
        } else {
            format!("sqlite://{}", dir.join("o.db").display())
        };
        let db = Db::open(&url, MODULES).await.unwrap();
        for t in ["t1", "t2"] {
            sqlx::query(
                "INSERT INTO tenants (id, name, revision, created_at) VALUES ($1, $1, 1, 0)",
            )
            .bind(t)
            .execute(&db.pool)
            .await
            .unwrap();
        }
        db
    }

    /// Runs `method` in a transaction of its own, as one principal for both tenants (so one
    /// idempotency key derives one id in either); answers the id or the error.
    async fn call(db: &Db, method: &str, input: Value) -> Result<String, ApiError> {
        let caller = Caller::new("usr_one", "t1", vec![]);
        let call = parse_call(method, input).unwrap()?;
        let mut tx = db.write_tx().await?;
        let outcome = execute(&mut tx, &caller, MODULES, &call).await?;
        // The transaction is still good after the create: it commits.
        tx.commit().await?;
        Ok(outcome.object_id.unwrap())
    }

    async fn count(db: &Db, table: &str) -> i64 {
        sqlx::query(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&db.pool)
            .await
            .unwrap()
            .get(0)
    }

    fn conflict(result: Result<String, ApiError>, message: &str) {
        let err = result.expect_err(message);
        assert_eq!((err.code, err.message.as_str()), (Code::Conflict, message));
    }

    async fn creates_replay_and_conflict_on(postgres: bool) {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path(), postgres).await;
        let site_in = |t: &str, region: &str| json!({ "tenantId": t, "idempotencyKey": "s", "kind": "shared", "region": region });
        let site = call(&db, "site.create", site_in("t1", "eu")).await.unwrap();
        // A replay answers the same id and changes nothing, even with other fields.
        assert_eq!(
            call(&db, "site.create", site_in("t1", "us")).await.unwrap(),
            site
        );
        assert_eq!(count(&db, "sites").await, 1);
        let region: String = sqlx::query("SELECT region FROM sites")
            .fetch_one(&db.pool)
            .await
            .unwrap()
            .get(0);
        assert_eq!(region, "eu");
        // The same id in another tenant: a CONFLICT.
        conflict(
            call(&db, "site.create", site_in("t2", "eu")).await,
            &format!("site {site} exists in another tenant"),
        );

        let pool_in =
            json!({ "tenantId": "t1", "idempotencyKey": "p", "siteId": site, "class": "vps-host" });
        let pool = call(&db, "pool.create", pool_in.clone()).await.unwrap();
        assert_eq!(
            call(&db, "pool.create", pool_in.clone()).await.unwrap(),
            pool
        );
        // Archived, then created again: the same pool, alive again.
        call(
            &db,
            "pool.archive",
            json!({ "tenantId": "t1", "id": pool, "ifRevision": 1 }),
        )
        .await
        .unwrap();
        assert_eq!(call(&db, "pool.create", pool_in).await.unwrap(), pool);
        let (archived, revision): (i64, i64) =
            sqlx::query("SELECT archived, revision FROM pools WHERE id = $1")
                .bind(&pool)
                .fetch_one(&db.pool)
                .await
                .map(|r| (r.get(0), r.get(1)))
                .unwrap();
        assert_eq!((archived, revision), (0, 3));

        let flavor_in = |key: &str, t: &str| json!({ "tenantId": t, "idempotencyKey": key, "poolId": pool, "name": "small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 });
        let flavor = call(&db, "flavor.create", flavor_in("f", "t1"))
            .await
            .unwrap();
        assert_eq!(
            call(&db, "flavor.create", flavor_in("f", "t1"))
                .await
                .unwrap(),
            flavor
        );
        // Another key, the same name: the name is taken.
        conflict(
            call(&db, "flavor.create", flavor_in("g", "t1")).await,
            &format!("flavor {pool}/small already exists"),
        );
        assert_eq!(count(&db, "flavors").await, 1);

        let account_in = |key: &str, t: &str| json!({ "tenantId": t, "idempotencyKey": key, "name": "cloud", "provider": "hetzner-cloud", "config": {} });
        let account = call(&db, "providerAccount.create", account_in("a", "t1"))
            .await
            .unwrap();
        assert_eq!(
            call(&db, "providerAccount.create", account_in("a", "t1"))
                .await
                .unwrap(),
            account
        );
        conflict(
            call(&db, "providerAccount.create", account_in("b", "t1")).await,
            "provider account \"cloud\" already exists",
        );
        conflict(
            call(&db, "providerAccount.create", account_in("a", "t2")).await,
            &format!("providerAccount {account} exists in another tenant"),
        );
        // Without a key: random ids, so only the name can clash.
        let mut keyless = account_in("a", "t2");
        keyless.as_object_mut().unwrap().remove("idempotencyKey");
        call(&db, "providerAccount.create", keyless.clone())
            .await
            .unwrap();
        conflict(
            call(&db, "providerAccount.create", keyless).await,
            "provider account \"cloud\" already exists",
        );
        assert_eq!(count(&db, "provider_accounts").await, 2);

        let template_in = |key: &str| json!({ "tenantId": "t1", "idempotencyKey": key, "name": "web", "poolId": pool, "flavorId": flavor, "imageId": "ubuntu", "network": "private" });
        let template = call(&db, "sandboxTemplate.create", template_in("t"))
            .await
            .unwrap();
        assert_eq!(
            call(&db, "sandboxTemplate.create", template_in("t"))
                .await
                .unwrap(),
            template
        );
        conflict(
            call(&db, "sandboxTemplate.create", template_in("u")).await,
            "sandbox template \"web\" already exists",
        );
        assert_eq!(count(&db, "sandbox_templates").await, 1);
    }

    /// INVALID_INPUT at `path` with `message`.
    #[track_caller]
    fn invalid(result: Result<String, ApiError>, path: &str, message: &str) {
        let err = result.expect_err(message);
        assert_eq!(
            (err.code, err.details["path"].as_str(), err.message.as_str()),
            (Code::InvalidInput, Some(path), message)
        );
    }

    /// The inputs take exactly what a document may hold: free text by the planner's
    /// `text_problem` (1 to 200 characters, not only whitespace, no NUL, which PostgreSQL's
    /// text refuses), and a provider account's config is required.
    async fn inputs_take_what_a_document_holds_on(postgres: bool) {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path(), postgres).await;
        let site_in =
            |region: &str| json!({ "tenantId": "t1", "kind": "shared", "region": region });
        // Characters, not bytes: 200 two-byte letters are stored.
        let site = call(&db, "site.create", site_in(&"é".repeat(200)))
            .await
            .unwrap();
        invalid(
            call(&db, "site.create", site_in(&"r".repeat(201))).await,
            "region",
            "region has 201 characters; a text holds at most 200",
        );
        invalid(
            call(&db, "site.create", site_in(" \t")).await,
            "region",
            "region must not be only whitespace",
        );
        invalid(
            call(&db, "site.create", site_in("eu\u{0}west")).await,
            "region",
            r"region must not contain a NUL character (\u0000)",
        );
        assert_eq!(count(&db, "sites").await, 1);

        let account_in =
            json!({ "tenantId": "t1", "name": "cloud", "provider": "p".repeat(201), "config": {} });
        invalid(
            call(&db, "providerAccount.create", account_in).await,
            "provider",
            "provider has 201 characters; a text holds at most 200",
        );
        let no_config = json!({ "tenantId": "t1", "name": "cloud", "provider": "hetzner-cloud" });
        invalid(
            call(&db, "providerAccount.create", no_config).await,
            "config",
            "missing field `config`",
        );
        assert_eq!(count(&db, "provider_accounts").await, 0);

        let pool_in = |gpu: &str| json!({ "tenantId": "t1", "siteId": site, "class": "vps-host", "gpuModel": gpu });
        invalid(
            call(&db, "pool.create", pool_in("")).await,
            "gpuModel",
            "gpuModel must not be empty",
        );
        let pool = call(&db, "pool.create", pool_in("L40S")).await.unwrap();
        let flavor_in = json!({ "tenantId": "t1", "poolId": pool, "name": "small", "vcpu": 1, "memoryGiB": 1, "diskGiB": 0 });
        let flavor = call(&db, "flavor.create", flavor_in).await.unwrap();
        let template_in = |image: &str| json!({ "tenantId": "t1", "name": "web", "poolId": pool, "flavorId": flavor, "imageId": image, "network": "none" });
        invalid(
            call(&db, "sandboxTemplate.create", template_in(&"i".repeat(201))).await,
            "imageId",
            "imageId has 201 characters; a text holds at most 200",
        );
        let template = call(&db, "sandboxTemplate.create", template_in("ubuntu"))
            .await
            .unwrap();
        // An update sets the image too: the same rule.
        let update_in = |image: &str| json!({ "tenantId": "t1", "id": template, "ifRevision": 1, "flavorId": flavor, "imageId": image, "network": "none" });
        invalid(
            call(&db, "sandboxTemplate.update", update_in(" ")).await,
            "imageId",
            "imageId must not be only whitespace",
        );
        call(&db, "sandboxTemplate.update", update_in(&"i".repeat(200)))
            .await
            .unwrap();
    }

    /// Every revision in the database, by table and key.
    async fn revisions(db: &Db) -> Vec<(String, String, i64)> {
        let mut all = Vec::new();
        for (table, key) in [
            ("sites", "id"),
            ("pools", "id"),
            ("provider_accounts", "id"),
            ("flavors", "id"),
            ("sandbox_templates", "id"),
            ("pool_owner_quotas", "pool_id || ':' || resource"),
            ("pool_offers", "pool_id || ' -> ' || tenant_id"),
        ] {
            let sql = format!("SELECT {key}, revision FROM {table} ORDER BY 1");
            for row in sqlx::query(&sql).fetch_all(&db.pool).await.unwrap() {
                all.push((table.to_owned(), row.get(0), row.get(1)));
            }
        }
        all
    }

    /// A call that writes the values already there changes nothing, revisions included (a plan
    /// reviewed before it still applies); its checks still run: a stale `ifRevision` is
    /// CONFLICT and another tenant's pool NOT_FOUND, as for any call.
    async fn writes_of_what_is_there_move_nothing_on(postgres: bool) {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path(), postgres).await;
        let site = json!({ "tenantId": "t1", "kind": "shared", "region": "eu" });
        let site = call(&db, "site.create", site).await.unwrap();
        let pool = json!({ "tenantId": "t1", "siteId": site, "class": "vps-host", "policy": { "disruptionBudget": 0.25 } });
        let pool = call(&db, "pool.create", pool).await.unwrap();
        let account = json!({ "tenantId": "t1", "name": "cloud", "provider": "hetzner-cloud", "config": { "region": "fsn1" } });
        let account = call(&db, "providerAccount.create", account).await.unwrap();
        let flavor = json!({ "tenantId": "t1", "poolId": pool, "name": "small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 20 });
        let flavor = call(&db, "flavor.create", flavor).await.unwrap();
        let template = |image: &str| json!({ "tenantId": "t1", "id": "", "name": "web", "poolId": pool, "flavorId": flavor, "imageId": image, "network": "private", "env": { "A": "1" }, "ifRevision": 1 });
        let mut create = template("ubuntu");
        create.as_object_mut().unwrap().remove("id");
        create.as_object_mut().unwrap().remove("ifRevision");
        let template_id = call(&db, "sandboxTemplate.create", create).await.unwrap();
        let quota = |resource: &str, max: Value, if_revision: Value| {
            let mut input =
                json!({ "tenantId": "t1", "poolId": pool, "resource": resource, "max": max });
            if !if_revision.is_null() {
                input["ifRevision"] = if_revision;
            }
            input
        };
        let offer = |if_revision: i64| json!({ "tenantId": "t1", "poolId": pool, "tenant": "t2", "quota": { "vcpu": 8 }, "priority": 3, "ifRevision": if_revision });
        call(
            &db,
            "pool.setOwnerQuota",
            quota("gpu", json!(8), Value::Null),
        )
        .await
        .unwrap();
        let mut first = offer(0);
        first.as_object_mut().unwrap().remove("ifRevision");
        call(&db, "pool.offer", first).await.unwrap();
        let before = revisions(&db).await;
        assert!(before.iter().any(|(t, _, r)| t == "pools" && *r == 3));

        let mut update = template("ubuntu");
        update.as_object_mut().unwrap().remove("name");
        update.as_object_mut().unwrap().remove("poolId");
        update["id"] = json!(template_id);
        let same = [
            (
                "pool.update",
                json!({ "tenantId": "t1", "id": pool, "ifRevision": 3, "policy": { "disruptionBudget": 0.25 } }),
            ),
            ("pool.setOwnerQuota", quota("gpu", json!(8), json!(1))),
            (
                "pool.setOwnerQuota",
                quota("absent", Value::Null, Value::Null),
            ),
            ("pool.offer", offer(1)),
            (
                "providerAccount.update",
                json!({ "tenantId": "t1", "id": account, "ifRevision": 1, "config": { "region": "fsn1" } }),
            ),
            (
                "flavor.update",
                json!({ "tenantId": "t1", "id": flavor, "ifRevision": 1, "vcpu": 2, "memoryGiB": 4, "diskGiB": 20 }),
            ),
            ("sandboxTemplate.update", update.clone()),
        ];
        for (method, input) in same {
            call(&db, method, input).await.unwrap();
            assert_eq!(revisions(&db).await, before, "{method} of the same values");
        }
        conflict(
            call(&db, "pool.setOwnerQuota", quota("gpu", json!(8), json!(7))).await,
            &format!("ownerQuota {pool}:gpu has moved: it is at revision 1, the call expected 7"),
        );
        for (tenant, resource, max) in [("t2", "gpu", json!(8)), ("t2", "absent", Value::Null)] {
            let mut input = quota(resource, max, Value::Null);
            input["tenantId"] = json!(tenant);
            let err = call(&db, "pool.setOwnerQuota", input).await.unwrap_err();
            assert_eq!(err.code, Code::NotFound, "t1's pool is not {tenant}'s");
        }
        assert_eq!(revisions(&db).await, before);

        // A change moves the object, and an entry's change its pool too.
        update["imageId"] = json!("debian");
        call(&db, "sandboxTemplate.update", update).await.unwrap();
        call(&db, "pool.setOwnerQuota", quota("gpu", json!(9), json!(1)))
            .await
            .unwrap();
        let after = revisions(&db).await;
        let moved: Vec<_> = before
            .iter()
            .zip(&after)
            .filter(|(b, a)| b != a)
            .map(|(b, a)| (b.0.as_str(), a.2 - b.2))
            .collect();
        assert_eq!(
            moved,
            [
                ("pools", 1),
                ("sandbox_templates", 1),
                ("pool_owner_quotas", 1)
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_of_what_is_there_move_nothing() {
        writes_of_what_is_there_move_nothing_on(false).await;
        if std::env::var("BETTER_COMPUTE_TEST_POSTGRES").is_ok() {
            writes_of_what_is_there_move_nothing_on(true).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn inputs_take_what_a_document_holds() {
        inputs_take_what_a_document_holds_on(false).await;
        if std::env::var("BETTER_COMPUTE_TEST_POSTGRES").is_ok() {
            inputs_take_what_a_document_holds_on(true).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn creates_replay_by_key_and_conflict_by_name_or_tenant() {
        creates_replay_and_conflict_on(false).await;
        if std::env::var("BETTER_COMPUTE_TEST_POSTGRES").is_ok() {
            creates_replay_and_conflict_on(true).await;
        }
    }
}
