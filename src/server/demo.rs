//! `--demo`: a small fleet and two tenants, part of it created outside FleetConfig, so a
//! newcomer can export, plan, apply and see drift at once. Root applies the seed's example;
//! acme applies a sandbox template on root's pool offered to it; then a site and a pool are
//! made by hand (they export under their ids), offered to globex, and vps-fra's policy is
//! edited by hand (drift).

use super::AppState;
use super::db::{Backend, Modules, Tx, exists, now_ms};
use super::error::ApiError;
use super::iam::{self, Caller, FLEET_ADMIN, FLEET_SCOPE, ROOT, audit, tenant_scope};
use super::{fleet, objects};
use planner::Call;
use planner::calls::{PoolCreate, PoolOffer, PoolUpdate, SiteCreate};
use planner::document::{Policy, PoolClass, SiteKind};
use serde_json::{Value, json};
use sqlx::{Executor as _, Row as _};

/// The PostgreSQL advisory lock the seed holds (the migrations hold 7245092315).
const SEED_LOCK: &str = "7245092316";

/// The seed's example document, with the kinds the deployment does not serve left out.
fn document(state: &AppState) -> Value {
    let mut doc = json!({
        "version": 1,
        "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
        "providerAccounts": [{
            "name": "cloud", "provider": "hetzner-cloud",
            "config": { "token": "secret://hetzner", "location": "fsn1" }
        }],
        "pools": [
            {
                "name": "vps-fra", "site": "fra", "class": "vps-host", "gpuModel": "L40S",
                "policy": { "disruptionBudget": 0.1 },
                "ownerQuota": { "gpu": 8 },
                "offers": [{ "tenant": "acme", "quota": { "vcpu": 64, "gpu": 2 }, "priority": 5 }]
            },
            { "name": "burst", "site": "fra", "class": "provider", "providerAccount": "cloud" }
        ],
        "flavors": [{ "pool": "vps-fra", "name": "g1.small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }],
        "sandboxTemplates": [{
            "name": "py-small", "pool": "vps-fra", "flavor": "g1.small", "imageId": "ubuntu-24.04",
            "env": { "PIP_INDEX_URL": "secret://root/sec_01k…" }, "network": "private",
            "warm": { "min": 2, "max": 4 }
        }]
    });
    if !state.modules.vps {
        let d = doc.as_object_mut().expect("an object");
        d.remove("providerAccounts");
        d.remove("flavors");
        d["pools"].as_array_mut().expect("pools").pop();
    }
    if !state.modules.sandboxes {
        doc.as_object_mut()
            .expect("an object")
            .remove("sandboxTemplates");
    }
    doc
}

/// Makes `call` as a person would by hand (`POST /api/<method>`): the call and its audit row,
/// so the demo's drift has an author in the audit like any hand edit.
async fn by_hand(
    tx: &mut Tx,
    caller: &Caller,
    modules: Modules,
    call: Call,
) -> Result<objects::Outcome, ApiError> {
    let outcome = objects::execute(tx, caller, modules, &call).await?;
    let input = serde_json::to_value(&call)?;
    audit(
        tx,
        caller,
        call.tenant_id(),
        call.method(),
        "ok",
        outcome.object_id.as_deref(),
        json!({ "input": input["input"] }),
    )
    .await?;
    Ok(outcome)
}

/// Whether the demo is seeded: its last step writes the audit row `demo.seed`.
async fn seeded(conn: &mut sqlx::AnyConnection) -> Result<bool, sqlx::Error> {
    let sql = "SELECT id FROM audit WHERE tenant_id = $1 AND method = 'demo.seed'";
    exists(conn, sql, &[ROOT]).await
}

/// Seeds the demo once and whole, however many servers start at once.
///
/// The seed is several transactions (each apply commits its own), so it is made resumable:
/// the tenants are inserted when missing, the applies change nothing once applied, and the
/// hand-made part commits with the marker (`demo.seed`), which is checked in that same
/// transaction. A start that failed or died half way is finished by the next one; a seeded
/// database is left alone. On PostgreSQL an advisory lock also runs concurrent seeds one
/// after the other; on SQLite the last transaction's write lock decides.
pub async fn seed(state: &AppState) -> Result<(), ApiError> {
    let mut lock = state.db.pool.acquire().await?;
    let postgres = state.db.backend == Backend::Postgres;
    if postgres {
        lock.execute(format!("SELECT pg_advisory_lock({SEED_LOCK})").as_str())
            .await?;
    }
    let seeded = seed_once(state).await;
    if postgres {
        // Released before the connection goes back to the pool, also after a failure.
        lock.execute(format!("SELECT pg_advisory_unlock({SEED_LOCK})").as_str())
            .await?;
    }
    seeded
}

async fn seed_once(state: &AppState) -> Result<(), ApiError> {
    let mut conn = state.db.pool.acquire().await?;
    if seeded(&mut conn).await? {
        return Ok(());
    }
    let admin: String = sqlx::query(
        "SELECT id FROM principals WHERE tenant_id = $1 AND kind = 'user' ORDER BY created_at, id LIMIT 1",
    )
    .bind(ROOT)
    .fetch_one(&mut *conn)
    .await?
    .try_get(0)?;
    drop(conn);
    let caller = Caller::new(
        &admin,
        ROOT,
        vec![
            ("*".into(), tenant_scope(ROOT)),
            (FLEET_ADMIN.into(), FLEET_SCOPE.into()),
        ],
    );

    let mut tx = state.db.write_tx().await?;
    for (id, name) in [("acme", "Acme Corp"), ("globex", "Globex")] {
        // Made by an earlier, unfinished seed (or by hand): kept, and not audited again.
        if !iam::insert_tenant(&mut tx, id, name).await? {
            continue;
        }
        audit(
            &mut tx,
            &caller,
            ROOT,
            "tenant.create",
            "ok",
            Some(id),
            json!({ "id": id, "via": "demo" }),
        )
        .await?;
    }
    tx.commit().await?;

    // The part managed by FleetConfig: the seed's example, applied (nothing to do when an
    // unfinished seed applied it).
    let bytes = document(state).to_string();
    let doc = planner::validate(bytes.as_bytes()).map_err(|e| ApiError::internal(&e))?;
    fleet::apply(state, &caller, ROOT, &doc, false, None).await?;

    // acme's own fleet: a sandbox template on root's pool offered to it (named by id).
    if state.modules.sandboxes {
        let mut conn = state.db.pool.acquire().await?;
        let vps_fra: String = sqlx::query(
            "SELECT object_id FROM fleet_names WHERE tenant_id = $1 AND kind = 'pool' AND name = 'vps-fra'",
        )
        .bind(ROOT)
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
        drop(conn);
        let acme = json!({ "version": 1, "sandboxTemplates": [{
            "name": "acme-py", "pool": vps_fra, "flavor": "g1.small", "imageId": "ubuntu-24.04",
            "network": "private", "warm": { "min": 0, "max": 2 }
        }]})
        .to_string();
        let doc = planner::validate(acme.as_bytes()).map_err(|e| ApiError::internal(&e))?;
        fleet::apply(state, &caller, "acme", &doc, false, None).await?;
    }

    // The part made by hand, outside FleetConfig: a site and a pool with no fleet names (they
    // export under their ids), an offer to globex, and an edit of vps-fra's policy (drift);
    // with the marker, in one transaction that first checks the marker (SQLite: under the
    // write lock), so it runs once.
    let mut tx = state.db.write_tx().await?;
    if seeded(&mut tx).await? {
        return Ok(());
    }
    let site = by_hand(
        &mut tx,
        &caller,
        state.modules,
        Call::SiteCreate(SiteCreate {
            tenant_id: ROOT.into(),
            idempotency_key: None,
            kind: SiteKind::Dedicated,
            region: "us-east".into(),
        }),
    )
    .await?;
    let site_id = site.object_id.unwrap_or_default();
    let pool = by_hand(
        &mut tx,
        &caller,
        state.modules,
        Call::PoolCreate(PoolCreate {
            tenant_id: ROOT.into(),
            idempotency_key: None,
            site_id,
            class: PoolClass::SandboxHost,
            gpu_model: None,
            provider_account_id: None,
            policy: Some(Policy {
                disruption_budget: 0.25,
            }),
        }),
    )
    .await?;
    let pool_id = pool.object_id.unwrap_or_default();
    by_hand(
        &mut tx,
        &caller,
        state.modules,
        Call::PoolOffer(PoolOffer {
            tenant_id: ROOT.into(),
            pool_id,
            tenant: "globex".into(),
            quota: [("vcpu".to_string(), 32)].into_iter().collect(),
            priority: None,
            if_revision: None,
        }),
    )
    .await?;
    let names = sqlx::query("SELECT object_id FROM fleet_names WHERE tenant_id = $1 AND kind = 'pool' AND name = 'vps-fra'")
        .bind(ROOT)
        .fetch_one(&mut *tx)
        .await?;
    let vps_fra: String = names.try_get(0)?;
    let revision: i64 = sqlx::query("SELECT revision FROM pools WHERE id = $1")
        .bind(&vps_fra)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
    by_hand(
        &mut tx,
        &caller,
        state.modules,
        Call::PoolUpdate(PoolUpdate {
            tenant_id: ROOT.into(),
            id: vps_fra,
            if_revision: u64::try_from(revision).unwrap_or(0),
            policy: Some(Policy {
                disruption_budget: 0.2,
            }),
        }),
    )
    .await?;
    audit(
        &mut tx,
        &caller,
        ROOT,
        "demo.seed",
        "ok",
        None,
        json!({ "at": now_ms() }),
    )
    .await?;
    tx.commit().await?;
    tracing::info!(
        "demo fleet seeded: tenants acme and globex, root's fleet applied and edited by hand"
    );
    Ok(())
}
