//! The fleet methods: `fleet.export`, `fleet.plan`, `fleet.apply`, `fleet.status`.
//!
//! Every one decides `compute:fleet:admin` on `compute-fleet/global`. The export is built from
//! the database in one read; the plan is the planner's, against exactly that export, so the
//! browser and the CLI reproduce it offline.

use super::api::Answer;
use super::db::{Rows, fetch, now_ms};
use super::error::{ApiError, Code};
use super::iam::{
    AuditBatch, Caller, FLEET_ADMIN, FLEET_SCOPE, audit, parse, require_tenant, tenant_scope,
};
use super::objects::{
    self, load_accounts, load_flavors, load_offers, load_pools, load_quotas, load_sites,
    load_templates,
};
use super::{AppState, FaultAction};
use planner::document::{self as doc, Document};
use planner::export::{Export, ExternalUser, Kind, ObjectRef, OfferedFlavor, OfferedPool, Section};
use planner::text::{Text, from_string_keys, from_strings};
use planner::{Call, Plan, PlanOptions};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use sqlx::{AnyConnection, Row as _};
use std::collections::{BTreeSet, HashMap};

/// Input of `fleet.export` and `fleet.status`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenantInput {
    /// The tenant whose fleet this is.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
}

/// `config` is a FleetConfig document: the OpenAPI document carries its schema
/// ([`planner::schema::document_schema`]) as this component (see `api::openapi`).
fn document_ref(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "$ref": "#/components/schemas/FleetConfig" })
}

/// Input of `fleet.plan`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanInput {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The document (validated by the planner from its exact bytes).
    #[schemars(schema_with = "document_ref")]
    pub config: Box<RawValue>,
    /// Delete what the listed kinds leave out.
    #[serde(default)]
    pub prune: bool,
}

/// Input of `fleet.apply`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyInput {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The document.
    #[schemars(schema_with = "document_ref")]
    pub config: Box<RawValue>,
    /// Delete what the listed kinds leave out.
    #[serde(default)]
    pub prune: bool,
    /// The reviewed plan's hash; CONFIG_DRIFT when the fleet moved since.
    #[serde(default)]
    #[schemars(pattern(planner::PlanHash::PATTERN))]
    pub plan_hash: Option<String>,
}

async fn check_admin(
    state: &AppState,
    caller: &Caller,
    method: &str,
    tenant: &str,
) -> Result<(), ApiError> {
    caller
        .check(state, method, tenant, FLEET_ADMIN, FLEET_SCOPE)
        .await
}

fn validate(config: &RawValue) -> Result<Document<'_>, ApiError> {
    super::cpu(|| planner::validate(config.get().as_bytes())).map_err(|invalid| {
        let first = invalid.problems.first();
        let message = first.map(|p| p.message.clone()).unwrap_or_else(|| "invalid document".into());
        ApiError::with(
            Code::InvalidInput,
            message,
            json!({ "path": first.map(|p| p.path.as_str()).unwrap_or(""), "problems": invalid.problems }),
        )
    })
}

/// `fleet.export`.
pub async fn export(state: &AppState, caller: &Caller, input: &[u8]) -> Result<Answer, ApiError> {
    let input: TenantInput = parse(input)?;
    check_admin(state, caller, "fleet.export", &input.tenant_id).await?;
    let mut tx = state.db.read_tx().await?;
    require_tenant(&mut tx, &input.tenant_id).await?;
    let export = build_export(
        &mut tx,
        state.modules,
        &input.tenant_id,
        &caller.principal_id,
        TenantScope::All,
    )
    .await?;
    tx.commit().await?;
    super::cpu(|| Answer::json(&export))
}

/// `fleet.plan`: a read; changes nothing.
pub async fn plan(state: &AppState, caller: &Caller, input: &[u8]) -> Result<Answer, ApiError> {
    let input: PlanInput = parse(input)?;
    check_admin(state, caller, "fleet.plan", &input.tenant_id).await?;
    let document = validate(&input.config)?;
    let mut tx = state.db.read_tx().await?;
    require_tenant(&mut tx, &input.tenant_id).await?;
    let export = build_export(
        &mut tx,
        state.modules,
        &input.tenant_id,
        &caller.principal_id,
        TenantScope::NamedBy(&document),
    )
    .await?;
    tx.commit().await?;
    super::cpu(|| {
        Answer::json(&planner::plan(
            &document,
            &export,
            PlanOptions { prune: input.prune },
        ))
    })
}

/// `fleet.apply` over HTTP.
pub async fn apply_http(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Answer, ApiError> {
    let input: ApplyInput = parse(input)?;
    if let Some(hash) = &input.plan_hash
        && !planner::PlanHash::is_well_formed(hash)
    {
        return Err(ApiError::invalid(
            "planHash",
            "a planHash is 64 lowercase hexadecimal digits, as fleet.plan answers it",
        ));
    }
    check_admin(state, caller, "fleet.apply", &input.tenant_id).await?;
    let document = validate(&input.config)?;
    apply(
        state,
        caller,
        &input.tenant_id,
        &document,
        input.prune,
        input.plan_hash.as_deref(),
    )
    .await
}

/// PLAN_BLOCKED: the message names the first blocked change; the details carry the whole plan
/// (changes, summary, planHash), as CONFIG_DRIFT's do, the blocked changes marked `blocked`.
fn blocked(plan: &Plan) -> ApiError {
    let blocked = plan.changes.iter().filter(|c| c.blocked);
    let first = blocked
        .clone()
        .next()
        .map(|c| {
            format!(
                ": {} {}: {}",
                c.kind,
                c.name,
                c.note.as_deref().unwrap_or("blocked")
            )
        })
        .unwrap_or_default();
    ApiError::with(
        Code::PlanBlocked,
        format!("the plan has {} blocked change(s){first}", blocked.count()),
        json!({ "changes": plan.changes, "summary": plan.summary, "planHash": plan.plan_hash }),
    )
}

/// Decides every call's permission as the caller; FORBIDDEN names the first refused call.
fn decide_calls(caller: &Caller, calls: &[Call]) -> Result<(), (usize, &'static str, String)> {
    for (index, call) in calls.iter().enumerate() {
        let scope = tenant_scope(call.tenant_id());
        if !caller.allows(call.permission(), &scope) {
            return Err((index, call.method(), scope));
        }
    }
    Ok(())
}

async fn refuse_call(
    state: &AppState,
    caller: &Caller,
    tenant: &str,
    calls: &[Call],
    refused: (usize, &'static str, String),
) -> ApiError {
    let (index, method, scope) = refused;
    let permission = calls[index].permission();
    let details =
        json!({ "method": method, "permission": permission, "scope": scope, "call": index });
    if let Ok(mut conn) = state.db.pool.acquire().await
        && let Err(err) = audit(
            &mut conn,
            caller,
            tenant,
            "fleet.apply",
            "forbidden",
            None,
            details.clone(),
        )
        .await
    {
        return ApiError::from(err);
    }
    ApiError::with(
        Code::Forbidden,
        format!(
            "fleet.apply would call {method} (call {index}), and {} lacks {permission} on {scope}",
            caller.principal_id
        ),
        details,
    )
}

/// The composite apply: plan and decide every call with no transaction open, then run all
/// calls in one transaction that holds the tenant's fleet lock and re-plans first.
pub async fn apply(
    state: &AppState,
    caller: &Caller,
    tenant: &str,
    document: &Document<'_>,
    prune: bool,
    expected: Option<&str>,
) -> Result<Answer, ApiError> {
    let options = PlanOptions { prune };
    // Before the lock: plan, and decide every call. The export is read in one snapshot: read
    // statement by statement, another apply committing in between would show half its fleet
    // (a template whose pool is not there yet) and block this plan for nothing.
    let mut read = state.db.read_tx().await?;
    require_tenant(&mut read, tenant).await?;
    let export = build_export(
        &mut read,
        state.modules,
        tenant,
        &caller.principal_id,
        TenantScope::NamedBy(document),
    )
    .await?;
    read.commit().await?;
    let first = super::cpu(|| planner::plan(document, &export, options));
    // A reviewed plan that no longer matches is CONFIG_DRIFT, blocked or not (the fleet moved
    // since the review, as the seed says): that is decided, and audited, under the lock.
    let stale = expected.is_some_and(|e| e != first.plan_hash.0);
    if first.is_blocked() && !stale {
        return Err(blocked(&first));
    }
    if let Err(refused) = decide_calls(caller, &first.calls) {
        return Err(refuse_call(state, caller, tenant, &first.calls, refused).await);
    }

    let mut tx = state.db.write_tx().await?;
    state.db.lock_tenant(&mut tx, tenant).await?;
    // Under the lock, the fleet cannot move: plan again against it; this plan is the one run.
    let export = build_export(
        &mut tx,
        state.modules,
        tenant,
        &caller.principal_id,
        TenantScope::NamedBy(document),
    )
    .await?;
    let plan = super::cpu(|| planner::plan(document, &export, options));
    if let Some(expected) = expected
        && expected != plan.plan_hash.0
    {
        // A refused attempt is audited too; the row is all this transaction writes.
        audit(
            &mut tx,
            caller,
            tenant,
            "fleet.apply",
            "config_drift",
            None,
            json!({ "expected": expected, "planHash": plan.plan_hash }),
        )
        .await?;
        tx.commit().await?;
        return Err(ApiError::with(
            Code::ConfigDrift,
            format!(
                "the plan is now {}, not the reviewed {expected}: the fleet moved since the \
                 review, or the document or prune differ",
                plan.plan_hash
            ),
            json!({ "planHash": plan.plan_hash, "expected": expected, "changes": plan.changes, "summary": plan.summary }),
        ));
    }
    if plan.is_blocked() {
        return Err(blocked(&plan));
    }
    if plan.calls != first.calls
        && let Err(refused) = decide_calls(caller, &plan.calls)
    {
        drop(tx);
        return Err(refuse_call(state, caller, tenant, &plan.calls, refused).await);
    }
    let mut batch = objects::Batch::default();
    let mut audits = AuditBatch::new(caller);
    for (index, call) in plan.calls.iter().enumerate() {
        let outcome = match state.fault.before_call(index, call) {
            Some(FaultAction::Replace(call)) => {
                objects::execute_in(&mut tx, caller, state.modules, &call, &mut batch).await
            }
            Some(FaultAction::DbError) => {
                let failed = sqlx::query("SELECT injected_fault FROM no_such_table")
                    .execute(&mut *tx)
                    .await
                    .err();
                Err(failed.map_or_else(|| ApiError::internal(&"injected fault"), ApiError::from))
            }
            None => objects::execute_in(&mut tx, caller, state.modules, call, &mut batch).await,
        };
        let outcome = outcome.map_err(|mut err| {
            if let Value::Object(d) = &mut err.details {
                d.insert(
                    "call".into(),
                    json!({ "index": index, "method": call.method() }),
                );
            }
            err.message = format!("call {index} ({}): {}", call.method(), err.message);
            err
        })?;
        let input = serde_json::to_value(call)?
            .get("input")
            .cloned()
            .unwrap_or(Value::Null);
        audits.push(
            call.tenant_id(),
            call.method(),
            "ok",
            outcome.object_id.as_deref(),
            json!({ "input": input, "via": "fleet.apply" }),
        );
    }
    // In the same transaction: the rows land with the calls or not at all.
    audits.write(&mut tx).await?;
    let document_json = serde_json::to_string(document)?;
    sqlx::query(
        "INSERT INTO fleet_applied (tenant_id, document, prune, plan_hash, applied_by, applied_at, checked_at, drift) \
         VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL) \
         ON CONFLICT (tenant_id) DO UPDATE SET document = excluded.document, prune = excluded.prune, \
         plan_hash = excluded.plan_hash, applied_by = excluded.applied_by, applied_at = excluded.applied_at, \
         checked_at = NULL, drift = NULL, check_error = NULL",
    )
    .bind(tenant)
    .bind(document_json)
    .bind(i64::from(prune))
    .bind(&plan.plan_hash.0)
    .bind(&caller.principal_id)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    let applied = plan.calls.len();
    audit(&mut tx, caller, tenant, "fleet.apply", "ok", None, json!({ "planHash": plan.plan_hash, "applied": applied, "prune": prune, "summary": plan.summary })).await?;
    tx.commit().await?;
    // Written from the plan's types, as fleet.plan's answer: a maximal apply's plan as a
    // `Value` tree was tens of thousands of objects built only to be written out.
    super::cpu(|| {
        Answer::json(&ApplyAnswer {
            plan: &plan,
            applied,
        })
    })
}

/// `fleet.status`: the applied document's record and the drift as of the last check.
pub async fn status(state: &AppState, caller: &Caller, input: &[u8]) -> Result<Value, ApiError> {
    let input: TenantInput = parse(input)?;
    check_admin(state, caller, "fleet.status", &input.tenant_id).await?;
    let mut conn = state.db.pool.acquire().await?;
    require_tenant(&mut conn, &input.tenant_id).await?;
    status_of(&mut conn, &input.tenant_id).await
}

/// What `fleet.status` and `fleet.check` answer: the seed's status shape.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The tenant.
    pub tenant_id: String,
    /// The document applied last; absent for a tenant that never applied one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<AppliedDocument>,
    /// The drift as of the last check; absent when the fleet matched it (or before a check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<super::drift::Drift>,
    /// Why the last drift check failed, until a check succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CheckError>,
}

/// The document applied last, as `fleet.status` shows it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedDocument {
    /// The applied plan's hash.
    pub plan_hash: String,
    /// Who applied it (a principal id).
    pub applied_by: String,
    /// When, in milliseconds since the Unix epoch.
    pub applied_at: i64,
    /// Whether it was applied with prune.
    pub prune: bool,
    /// When the drift was last checked; absent before the first check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<i64>,
}

/// A failed drift check.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckError {
    /// What went wrong.
    pub message: String,
    /// When, in milliseconds since the Unix epoch.
    pub at: i64,
}

/// What `fleet.apply` answers: the plan it ran and how many calls ran.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ApplyAnswer<'p> {
    /// The plan.
    pub plan: &'p Plan,
    /// The number of calls that ran.
    pub applied: usize,
}

/// The status shape of the seed for one tenant: just `{tenantId}` when it never applied.
pub async fn status_of(conn: &mut AnyConnection, tenant: &str) -> Result<Value, ApiError> {
    let row = sqlx::query("SELECT plan_hash, applied_by, applied_at, prune, checked_at, drift, check_error FROM fleet_applied WHERE tenant_id = $1")
        .bind(tenant)
        .fetch_optional(conn)
        .await?;
    let mut status = Status {
        tenant_id: tenant.to_owned(),
        applied: None,
        drift: None,
        error: None,
    };
    if let Some(row) = row {
        status.applied = Some(AppliedDocument {
            plan_hash: row.try_get(0)?,
            applied_by: row.try_get(1)?,
            applied_at: row.try_get(2)?,
            prune: row.try_get::<i64, _>(3)? != 0,
            checked_at: row.try_get(4)?,
        });
        if let Some(drift) = row.try_get::<Option<String>, _>(5)? {
            status.drift = Some(serde_json::from_str(&drift)?);
        }
        if let Some(error) = row.try_get::<Option<String>, _>(6)? {
            status.error = Some(serde_json::from_str(&error)?);
        }
    }
    Ok(serde_json::to_value(status)?)
}

/// Builds the planner's `Export` of a tenant from the database, inside the caller's read
/// (or transaction), so a plan against it sees one consistent fleet.
pub async fn build_export(
    conn: &mut AnyConnection,
    modules: super::db::Modules,
    tenant: &str,
    caller: &str,
    scope: TenantScope<'_>,
) -> Result<Export<'static>, ApiError> {
    // Plan names by kind, then object id.
    let mut names: HashMap<String, HashMap<String, String>> = HashMap::new();
    let rows: Vec<(String, String, String)> = fetch(
        &mut *conn,
        "kind, object_id, name",
        "fleet_names WHERE tenant_id = $1",
        None, // into maps
        &[tenant],
    )
    .await?;
    for (kind, id, name) in rows {
        names.entry(kind).or_default().insert(id, name);
    }
    let name_of = |kind: Kind, id: &str| {
        names
            .get(kind.as_str())
            .and_then(|by_id| by_id.get(id))
            .cloned()
            .unwrap_or_else(|| id.to_string())
    };
    let mut objects = Vec::new();
    // The name is taken, not copied: most are formatted for this (`pool:resource`).
    let mut object = |kind: Kind, name: String, id: Option<&str>, revision: i64| {
        objects.push(ObjectRef {
            kind,
            name: name.into(),
            id: id.map(|id| Text::from(id.to_owned())),
            revision: u64::try_from(revision).unwrap_or(0),
            used_by: None,
        });
    };

    let mut sites = Vec::new();
    let mut site_names = HashMap::new();
    // The tenant's rows come unordered (sorting them in the database was an eighth of a
    // `fleet.plan`); everything below is indexed, or sorted by name at the end.
    // Sites and pools are sorted by id first, so that two with one name (a fleet name that is
    // another's id) keep the order they always had.
    let mut site_rows = load_sites(conn, "tenant_id = $1", &[tenant], Rows::Unordered).await?;
    site_rows.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    for s in site_rows {
        let name = name_of(Kind::Site, &s.id);
        object(Kind::Site, name.clone(), Some(&s.id), s.revision);
        site_names.insert(s.id.clone(), name.clone());
        sites.push(doc::Site {
            name: name.into(),
            kind: s.kind,
            region: s.region.into(),
        });
    }

    let mut account_names = HashMap::new();
    let accounts = if modules.vps {
        let mut out = Vec::new();
        for a in load_accounts(conn, "tenant_id = $1", &[tenant], Rows::Unordered).await? {
            object(
                Kind::ProviderAccount,
                a.name.clone(),
                Some(&a.id),
                a.revision,
            );
            account_names.insert(a.id.clone(), a.name.clone());
            out.push(doc::ProviderAccount {
                name: a.name.into(),
                provider: a.provider.into(),
                config: from_strings(a.config),
            });
        }
        Some(out)
    } else {
        None
    };

    let mut pools = Vec::new();
    let mut pool_names = HashMap::new();
    let mut pool_rows = load_pools(
        conn,
        "tenant_id = $1 AND archived = 0",
        &[tenant],
        Rows::Unordered,
    )
    .await?;
    pool_rows.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    // Grouped by pool id in hash maps: a B-tree compared ids sharing their time prefix (an
    // apply's pools are made in one millisecond) byte by byte, ten times a row.
    let mut quotas: HashMap<String, Vec<_>> = HashMap::new();
    for q in load_quotas(
        conn,
        "pool_id IN (SELECT id FROM pools WHERE tenant_id = $1 AND archived = 0)",
        &[tenant],
        Rows::Unordered, // grouped by pool; a pool's are keyed by resource
    )
    .await?
    {
        group(&mut quotas, q, |q| &q.pool_id);
    }
    let mut offers: HashMap<String, Vec<_>> = HashMap::new();
    for o in load_offers(
        conn,
        "pool_id IN (SELECT id FROM pools WHERE tenant_id = $1 AND archived = 0)",
        &[tenant],
        Rows::Unordered, // grouped by pool; a pool's are sorted by tenant
    )
    .await?
    {
        group(&mut offers, o, |o| &o.pool_id);
    }
    for p in pool_rows {
        let name = name_of(Kind::Pool, &p.id);
        object(Kind::Pool, name.clone(), Some(&p.id), p.revision);
        let mut owner_quota = planner::Map::new();
        for q in quotas.remove(&p.id).unwrap_or_default() {
            object(
                Kind::OwnerQuota,
                format!("{name}:{}", q.resource),
                None,
                q.revision,
            );
            owner_quota.insert(q.resource.into(), u64::try_from(q.max).unwrap_or(0));
        }
        let mut pool_offers = Vec::new();
        for o in offers.remove(&p.id).unwrap_or_default() {
            object(
                Kind::Offer,
                format!("{name} -> {}", o.tenant_id),
                None,
                o.revision,
            );
            pool_offers.push(doc::Offer {
                tenant: o.tenant_id.into(),
                quota: from_string_keys(o.quota),
                priority: o.priority,
            });
        }
        pool_names.insert(p.id.clone(), name.clone());
        pools.push(doc::Pool {
            name: name.into(),
            site: site_names
                .get(&p.site_id)
                .cloned()
                .unwrap_or(p.site_id)
                .into(),
            class: p.class,
            gpu_model: p.gpu_model.map(Text::from),
            provider_account: p
                .provider_account_id
                .map(|id| account_names.get(&id).cloned().unwrap_or(id).into()),
            policy: p.policy,
            owner_quota: Some(owner_quota),
            offers: Some(pool_offers),
        });
    }

    let mut flavor_names = HashMap::new();
    let flavors = if modules.vps {
        let mut out = Vec::new();
        let mut rows = load_flavors(conn, "tenant_id = $1", &[tenant], Rows::Unordered).await?;
        rows.sort_unstable_by(|a, b| (&a.pool_id, &a.name).cmp(&(&b.pool_id, &b.name)));
        for f in rows {
            let Some(pool) = pool_names.get(&f.pool_id).cloned() else {
                continue; // a flavor of an archived pool is not part of the fleet
            };
            object(
                Kind::Flavor,
                format!("{pool}/{}", f.name),
                Some(&f.id),
                f.revision,
            );
            flavor_names.insert(f.id.clone(), f.name.clone());
            out.push(doc::Flavor {
                pool: pool.into(),
                name: f.name.into(),
                vcpu: f.vcpu,
                memory_gib: f.memory_gib,
                disk_gib: f.disk_gib,
                gpu: f.gpu,
            });
        }
        Some(out)
    } else {
        None
    };

    // Pools of other tenants offered to this one, which its templates name by id.
    let mut offered_pools = Vec::new();
    let offered = load_pools(conn, "archived = 0 AND tenant_id <> $1 AND id IN (SELECT pool_id FROM pool_offers WHERE tenant_id = $1)", &[tenant], Rows::Ordered).await?;
    for p in &offered {
        let mut flavors = Vec::new();
        if modules.vps {
            for f in load_flavors(conn, "pool_id = $1", &[&p.id], Rows::Ordered).await? {
                flavor_names.insert(f.id.clone(), f.name.clone());
                flavors.push(OfferedFlavor {
                    name: f.name.into(),
                    id: f.id.into(),
                });
            }
        }
        offered_pools.push(OfferedPool {
            id: p.id.clone().into(),
            flavors,
        });
    }

    let templates = if modules.vps && modules.sandboxes {
        let mut out = Vec::new();
        for t in load_templates(conn, "tenant_id = $1", &[tenant], Rows::Unordered).await? {
            object(
                Kind::SandboxTemplate,
                t.name.clone(),
                Some(&t.id),
                t.revision,
            );
            out.push(doc::SandboxTemplate {
                name: t.name.into(),
                pool: pool_names
                    .get(&t.pool_id)
                    .cloned()
                    .unwrap_or(t.pool_id)
                    .into(),
                flavor: flavor_names
                    .get(&t.flavor_id)
                    .cloned()
                    .unwrap_or(t.flavor_id)
                    .into(),
                image_id: t.image_id.into(),
                env: t.env.map(from_strings),
                network: t.network,
                warm: t.warm,
            });
        }
        Some(out)
    } else {
        None
    };

    let tenants = load_tenants(conn, scope).await?;

    let mut missing = Vec::new();
    if !modules.vps {
        missing.extend([Section::ProviderAccounts, Section::Flavors]);
    }
    if !(modules.vps && modules.sandboxes) {
        missing.push(Section::SandboxTemplates);
    }

    let by_name = |a: &str, b: &str| a.cmp(b);
    sites.sort_by(|a, b| by_name(&a.name, &b.name));
    pools.sort_by(|a, b| by_name(&a.name, &b.name));
    let mut flavors = flavors;
    if let Some(f) = flavors.as_mut() {
        // By plan name (`pool/name`), as the contract says: (pool, name) pairs order
        // differently when one pool's name is a prefix of another's.
        f.sort_by_cached_key(|f| format!("{}/{}", f.pool, f.name));
    }
    let mut accounts = accounts;
    if let Some(a) = accounts.as_mut() {
        a.sort_by(|a, b| by_name(&a.name, &b.name));
    }
    let mut templates = templates;
    if let Some(t) = templates.as_mut() {
        t.sort_by(|a, b| by_name(&a.name, &b.name));
    }
    for p in &mut pools {
        if let Some(o) = p.offers.as_mut() {
            o.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        }
    }
    // Other tenants' templates on this tenant's pools (offered to them) and flavors keep
    // those from going, which no document of this tenant can say: the export does. So do
    // this tenant's own templates and flavors when the deployment no longer serves them (a
    // module switched off keeps its rows): the export leaves them out, yet they stay.
    let templates_shown = modules.vps && modules.sandboxes;
    let templates_held =
        templates_shown || super::db::holds(conn, super::db::SANDBOX_TABLES).await?;
    let hidden_flavors = !modules.vps && super::db::holds(conn, super::db::VPS_TABLES).await?;
    if templates_held || hidden_flavors {
        let mut users: HashMap<String, ExternalUser<'static>> = HashMap::new();
        let mut use_by = |key: String, user: &ExternalUser<'static>| {
            let first = users.entry(key).or_insert_with(|| user.clone());
            if (&user.tenant_id, &user.name) < (&first.tenant_id, &first.name) {
                *first = user.clone();
            }
        };
        let own_pools = "pool_id IN (SELECT id FROM pools WHERE tenant_id = $1 AND archived = 0)";
        if templates_held {
            let filter = if templates_shown {
                format!("tenant_id <> $1 AND {own_pools}")
            } else {
                own_pools.to_owned()
            };
            let rows = load_templates(conn, &filter, &[tenant], Rows::Unordered).await?;
            // By object id (the pool, the flavor), and by plan name for the offer that lets
            // the template's tenant use the pool (`vps-fra -> acme`).
            for t in rows {
                let offer = pool_names
                    .get(&t.pool_id)
                    .filter(|_| t.tenant_id != tenant)
                    .map(|pool| format!("{pool} -> {}", t.tenant_id));
                let user = ExternalUser {
                    tenant_id: t.tenant_id.into(),
                    kind: Kind::SandboxTemplate,
                    name: t.name.into(),
                };
                for key in [Some(t.pool_id), Some(t.flavor_id), offer]
                    .into_iter()
                    .flatten()
                {
                    use_by(key, &user);
                }
            }
        }
        if hidden_flavors {
            for f in load_flavors(conn, own_pools, &[tenant], Rows::Unordered).await? {
                let user = ExternalUser {
                    tenant_id: tenant.to_owned().into(),
                    kind: Kind::Flavor,
                    name: f.name.into(),
                };
                use_by(f.pool_id, &user);
            }
        }
        for o in &mut objects {
            let key = match o.kind {
                Kind::Offer => Some(&o.name),
                _ => o.id.as_ref(),
            };
            if let Some(user) = key.and_then(|key| users.get(key.as_str())) {
                o.used_by = Some(Box::new(user.clone()));
            }
        }
    }
    // By kind and plan name; the rest of the key only orders what no export should hold (two
    // objects with one plan name), so that an unstable sort is deterministic too.
    objects.sort_unstable_by(|a, b| {
        (a.kind, &a.name, &a.id, a.revision).cmp(&(b.kind, &b.name, &b.id, b.revision))
    });

    Ok(Export {
        tenant_id: tenant.to_string().into(),
        caller: caller.to_string().into(),
        config: Document {
            version: 1,
            sites: Some(sites),
            provider_accounts: accounts,
            pools: Some(pools),
            flavors,
            sandbox_templates: templates,
        },
        missing,
        objects,
        tenants: tenants.into_iter().map(Text::from).collect(),
        offered_pools,
    })
}

/// Adds `row` to its group, copying the key only for a group's first row.
fn group<T>(groups: &mut HashMap<String, Vec<T>>, row: T, key: impl Fn(&T) -> &String) {
    match groups.get_mut(key(&row)) {
        Some(rows) => rows.push(row),
        None => {
            let key = key(&row).clone();
            groups.insert(key, vec![row]);
        }
    }
}

/// Which tenant ids an export lists. `fleet.export` lists every tenant (an offline plan may
/// name any); the server's own plans need only the tenants the document's offers name, which
/// keeps a drift pass linear in the number of tenants instead of quadratic.
#[derive(Debug, Clone, Copy)]
pub enum TenantScope<'a> {
    /// Every tenant.
    All,
    /// The tenants named by this document's offers (the planner reads no others).
    NamedBy(&'a Document<'a>),
}

async fn load_tenants(
    conn: &mut AnyConnection,
    scope: TenantScope<'_>,
) -> Result<Vec<String>, ApiError> {
    let named: BTreeSet<&str> = match scope {
        TenantScope::All => {
            let rows: Vec<(String,)> = fetch(&mut *conn, "id", "tenants", Some("id"), &[]).await?;
            return Ok(rows.into_iter().map(|(id,)| id).collect());
        }
        TenantScope::NamedBy(document) => document
            .pools
            .iter()
            .flatten()
            .flat_map(|p| p.offers.iter().flatten())
            .map(|o| o.tenant.as_str())
            .collect(),
    };
    let named: Vec<&str> = named.into_iter().collect();
    let mut tenants = Vec::with_capacity(named.len());
    // Bounded placeholder lists: SQLite and PostgreSQL both cap the parameters of a query.
    for chunk in named.chunks(500) {
        let placeholders: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
        let from = format!("tenants WHERE id IN ({})", placeholders.join(","));
        let rows: Vec<(String,)> = fetch(&mut *conn, "id", &from, Some("id"), chunk).await?;
        tenants.extend(rows.into_iter().map(|(id,)| id));
    }
    Ok(tenants)
}
