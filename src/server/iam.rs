//! Identity and access: tenants, principals, API keys, grants, the permission decision, and
//! the audit log.
//!
//! Scopes: every tenant has `tenants/<id>`; the root tenant's scope contains every tenant's.
//! `compute-fleet/global` exists only in the root tenant: a principal of any other tenant
//! never passes a decision there, whatever grants it holds.

use super::AppState;
use super::api::Items;
use super::db::{Tx, new_id, now_ms, random_token};
use super::error::{ApiError, Code};
use super::objects::Deleted;
use planner::wire::{ObjectsOnly, in_wire_terms, path_of, split_place};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sqlx::{AnyConnection, Row as _};
use subtle::ConstantTimeEq as _;

/// The root tenant's id.
pub const ROOT: &str = "root";
/// The scope of the fleet methods, which exists only in the root tenant.
pub const FLEET_SCOPE: &str = "compute-fleet/global";
/// The permission every fleet method decides on [`FLEET_SCOPE`].
pub const FLEET_ADMIN: &str = "compute:fleet:admin";

/// The scope of a tenant.
pub fn tenant_scope(tenant_id: &str) -> String {
    format!("tenants/{tenant_id}")
}

/// The authenticated principal of a request, with its grants loaded once.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Its principal id (`usr_...`, `sa_...`); created ids derive from it.
    pub principal_id: String,
    /// Its tenant.
    pub tenant_id: String,
    grants: Vec<(String, String)>,
}

impl Caller {
    /// A caller the server itself acts as (the demo seed), with the given grants.
    pub fn new(principal_id: &str, tenant_id: &str, grants: Vec<(String, String)>) -> Self {
        Caller {
            principal_id: principal_id.to_string(),
            tenant_id: tenant_id.to_string(),
            grants,
        }
    }

    /// Whether the caller holds `permission` on `scope`.
    pub fn allows(&self, permission: &str, scope: &str) -> bool {
        if self.tenant_id != ROOT
            && (scope == FLEET_SCOPE || scope != tenant_scope(&self.tenant_id))
        {
            return false;
        }
        self.grants.iter().any(|(p, s)| {
            let perm_ok = p == "*"
                || p == permission
                || p.strip_suffix('*')
                    .is_some_and(|prefix| prefix.ends_with(':') && permission.starts_with(prefix));
            let scope_ok = s == scope
                || (s == &tenant_scope(ROOT)
                    && self.tenant_id == ROOT
                    && scope.starts_with("tenants/"));
            perm_ok && scope_ok
        })
    }

    /// Decides `permission` on `scope`; a refusal is audited (outside any transaction) and
    /// answered FORBIDDEN.
    pub async fn check(
        &self,
        state: &AppState,
        method: &str,
        tenant_id: &str,
        permission: &str,
        scope: &str,
    ) -> Result<(), ApiError> {
        // A malformed tenant id is the input's mistake whoever calls, so it is said before the
        // decision (a caller holding `*` would otherwise be told the object is not found).
        // A refusal is audited under the tenant it names, so the name must be one (else any
        // caller could store rows of any size), and the tenant must exist (else nobody could
        // read the row): a refusal naming an unknown tenant goes to the caller's own log.
        check_name("tenantId", tenant_id)?;
        if self.allows(permission, scope) {
            return Ok(());
        }
        let details = json!({ "method": method, "permission": permission, "scope": scope });
        let mut conn = state.db.pool.acquire().await?;
        let (logged_in, logged) = match tenant_exists(&mut conn, tenant_id).await? {
            true => (tenant_id, details.clone()),
            false => {
                let mut asked = details.clone();
                asked["tenantId"] = json!(tenant_id);
                (self.tenant_id.as_str(), asked)
            }
        };
        audit(
            &mut conn,
            self,
            logged_in,
            method,
            "forbidden",
            None,
            logged,
        )
        .await?;
        Err(ApiError::with(
            Code::Forbidden,
            format!(
                "{} may not call {method}: it lacks {permission} on {scope}",
                self.principal_id
            ),
            details,
        ))
    }

    /// Decides that the caller holds `permission` on `scope` itself, before it hands that
    /// power to someone else (a grant, a key acting as another principal): no caller gives
    /// more than it has. FORBIDDEN says so; the refusal is audited as [`Self::check`]'s.
    pub async fn check_holds(
        &self,
        state: &AppState,
        method: &str,
        tenant_id: &str,
        permission: &str,
        scope: &str,
        why: &str,
    ) -> Result<(), ApiError> {
        self.check(state, method, tenant_id, permission, scope)
            .await
            .map_err(|mut err| {
                err.message = format!("{}: {why}", err.message);
                err
            })
    }

    /// Decides the permission on the tenant's scope.
    pub async fn check_tenant(
        &self,
        state: &AppState,
        method: &str,
        tenant_id: &str,
        permission: &str,
    ) -> Result<(), ApiError> {
        self.check(
            state,
            method,
            tenant_id,
            permission,
            &tenant_scope(tenant_id),
        )
        .await
    }
}

/// Writes one audit row.
pub async fn audit(
    conn: &mut AnyConnection,
    caller: &Caller,
    tenant_id: &str,
    method: &str,
    outcome: &str,
    object_id: Option<&str>,
    details: Value,
) -> Result<(), sqlx::Error> {
    let mut row = AuditBatch::new(caller);
    row.push(tenant_id, method, outcome, object_id, details);
    row.write(conn).await
}

/// Ends a successful write: its audit row (outcome `ok`), then the commit, so the row lands
/// with the write or not at all.
pub async fn commit_audited(
    mut tx: Tx,
    caller: &Caller,
    tenant_id: &str,
    method: &str,
    object_id: Option<&str>,
    details: Value,
) -> Result<(), sqlx::Error> {
    audit(&mut tx, caller, tenant_id, method, "ok", object_id, details).await?;
    tx.commit().await
}

/// Audit rows of one caller, written together by [`AuditBatch::write`]: one INSERT per
/// [`AuditBatch::ROWS`] rows instead of one per row (an apply of thousands of calls). Ids and
/// times are taken when a row is pushed, so the rows read as if written one by one.
pub struct AuditBatch<'c> {
    caller: &'c Caller,
    rows: Vec<AuditRow>,
}

struct AuditRow {
    id: String,
    tenant_id: String,
    method: String,
    outcome: String,
    object_id: Option<String>,
    details: String,
    at: i64,
}

impl<'c> AuditBatch<'c> {
    /// Rows per INSERT: 8 parameters each, well inside both databases' parameter limits.
    pub const ROWS: usize = 100;

    /// An empty batch of `caller`'s rows.
    pub fn new(caller: &'c Caller) -> Self {
        AuditBatch {
            caller,
            rows: Vec::new(),
        }
    }

    /// Adds a row, as [`audit`] would write it now.
    pub fn push(
        &mut self,
        tenant_id: &str,
        method: &str,
        outcome: &str,
        object_id: Option<&str>,
        details: Value,
    ) {
        self.rows.push(AuditRow {
            id: new_id("aud"),
            tenant_id: tenant_id.to_owned(),
            method: method.to_owned(),
            outcome: outcome.to_owned(),
            object_id: object_id.map(str::to_owned),
            details: details.to_string(),
            at: now_ms(),
        });
    }

    /// Writes every row pushed, in order.
    pub async fn write(self, conn: &mut AnyConnection) -> Result<(), sqlx::Error> {
        for chunk in self.rows.chunks(Self::ROWS) {
            let values: Vec<String> = (0..chunk.len())
                .map(|r| {
                    let row: Vec<String> = (1..=8).map(|c| format!("${}", r * 8 + c)).collect();
                    format!("({})", row.join(", "))
                })
                .collect();
            let sql = format!(
                "INSERT INTO audit (id, tenant_id, principal_id, method, outcome, object_id, details, at) VALUES {}",
                values.join(", ")
            );
            let mut query = sqlx::query(&sql);
            for row in chunk {
                query = query
                    .bind(&row.id)
                    .bind(&row.tenant_id)
                    .bind(&self.caller.principal_id)
                    .bind(&row.method)
                    .bind(&row.outcome)
                    .bind(&row.object_id)
                    .bind(&row.details)
                    .bind(row.at);
            }
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }
}

fn hash_key(key: &str) -> String {
    planner::sha256_hex(key.as_bytes())
}

/// The credentials of an `Authorization: Bearer <key>` value. The scheme is matched without
/// regard to case (RFC 9110, section 11.1): `bearer <key>` is the same key.
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, key) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| key.trim())
        .filter(|key| !key.is_empty())
}

/// Resolves `Authorization: Bearer <key>` to its caller.
pub async fn authenticate(state: &AppState, header: Option<&str>) -> Result<Caller, ApiError> {
    let unauthenticated = |m: &str| ApiError::new(Code::Unauthenticated, m);
    let key = header
        .and_then(bearer)
        .ok_or_else(|| unauthenticated("missing bearer API key (Authorization: Bearer bc_...)"))?;
    let invalid = || unauthenticated("invalid or revoked API key");
    let (id_part, _secret) = key
        .strip_prefix("bc_")
        .and_then(|rest| rest.split_once('_'))
        .ok_or_else(invalid)?;
    let mut conn = state.db.pool.acquire().await?;
    let row = sqlx::query(
        "SELECT k.hash, k.revoked_at, p.id, p.tenant_id FROM api_keys k \
         JOIN principals p ON p.id = k.principal_id WHERE k.id = $1",
    )
    .bind(format!("key_{id_part}"))
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(invalid)?;
    let stored: String = row.try_get(0)?;
    let revoked: Option<i64> = row.try_get(1)?;
    let presented = hash_key(key);
    // Constant time, so the comparison leaks nothing about the stored hash.
    let same: bool = presented.as_bytes().ct_eq(stored.as_bytes()).into();
    if !same || revoked.is_some() {
        return Err(invalid());
    }
    let principal_id: String = row.try_get(2)?;
    let tenant_id: String = row.try_get(3)?;
    let grants = sqlx::query("SELECT permission, scope FROM grants WHERE principal_id = $1")
        .bind(&principal_id)
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<Vec<(String, String)>, sqlx::Error>>()?;
    Ok(Caller {
        principal_id,
        tenant_id,
        grants,
    })
}

/// On an empty database: creates the root tenant and an administrator, and returns the
/// administrator's API key (shown once). `None` when the database already has tenants.
pub async fn bootstrap(db: &super::db::Db) -> Result<Option<String>, sqlx::Error> {
    let mut tx = db.write_tx().await?;
    let created = sqlx::query(
        "INSERT INTO tenants (id, name, revision, created_at) VALUES ($1, $2, 1, $3) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(ROOT)
    .bind("Root")
    .bind(now_ms())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if created == 0 {
        return Ok(None);
    }
    let admin = new_id("usr");
    insert_principal(&mut tx, &admin, ROOT, "user", "admin").await?;
    insert_grant(&mut tx, ROOT, &admin, "*", &tenant_scope(ROOT)).await?;
    insert_grant(&mut tx, ROOT, &admin, FLEET_ADMIN, FLEET_SCOPE).await?;
    let (_, key) = insert_key(&mut tx, ROOT, &admin, "bootstrap").await?;
    tx.commit().await?;
    Ok(Some(key))
}

/// Inserts a tenant.
/// Inserts a tenant; false when one with that id exists (the insert asks, so two creates at
/// once on PostgreSQL get one tenant and one answer that it exists, never a failed statement).
pub async fn insert_tenant(tx: &mut Tx, id: &str, name: &str) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO tenants (id, name, revision, created_at) VALUES ($1, $2, 1, $3) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(id)
    .bind(name)
    .bind(now_ms())
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

/// Inserts a principal.
pub async fn insert_principal(
    tx: &mut Tx,
    id: &str,
    tenant_id: &str,
    kind: &str,
    name: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO principals (id, tenant_id, kind, name, revision, created_at) \
         VALUES ($1, $2, $3, $4, 1, $5)",
    )
    .bind(id)
    .bind(tenant_id)
    .bind(kind)
    .bind(name)
    .bind(now_ms())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Inserts a grant and returns its id; `None` when the principal holds it already. (The
/// insert itself asks, not a read before it: two identical grants made at once on
/// PostgreSQL both passed such a read, and the second insert failed on the unique key.)
pub async fn insert_grant(
    tx: &mut Tx,
    tenant_id: &str,
    principal_id: &str,
    permission: &str,
    scope: &str,
) -> Result<Option<String>, sqlx::Error> {
    let id = new_id("grt");
    let inserted = sqlx::query(
        "INSERT INTO grants (id, tenant_id, principal_id, permission, scope, revision, created_at) \
         VALUES ($1, $2, $3, $4, $5, 1, $6) ON CONFLICT (principal_id, permission, scope) DO NOTHING",
    )
    .bind(&id)
    .bind(tenant_id)
    .bind(principal_id)
    .bind(permission)
    .bind(scope)
    .bind(now_ms())
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok((inserted == 1).then_some(id))
}

/// Creates an API key for a principal; returns its id and the key, which is never stored.
pub async fn insert_key(
    tx: &mut Tx,
    tenant_id: &str,
    principal_id: &str,
    name: &str,
) -> Result<(String, String), sqlx::Error> {
    let id = new_id("key");
    let key = format!("bc_{}_{}", &id[4..], random_token(40));
    sqlx::query(
        "INSERT INTO api_keys (id, principal_id, tenant_id, name, hash, revision, created_at) \
         VALUES ($1, $2, $3, $4, $5, 1, $6)",
    )
    .bind(&id)
    .bind(principal_id)
    .bind(tenant_id)
    .bind(name)
    .bind(hash_key(&key))
    .bind(now_ms())
    .execute(&mut **tx)
    .await?;
    Ok((id, key))
}

/// Parses a method's input from its JSON bytes, answering INVALID_INPUT with the path of
/// the problem.
pub fn parse<T: serde::de::DeserializeOwned>(input: &[u8]) -> Result<T, ApiError> {
    // serde reads a struct from an array too (`[]` is an empty struct): an input is an object.
    if input.trim_ascii_start().starts_with(b"[") {
        return Err(ApiError::invalid(
            "",
            "the input must be a JSON object, not an array",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(input);
    let value = serde_path_to_error::deserialize(ObjectsOnly(&mut de)).map_err(path_error)?;
    de.end().map_err(|e| ApiError::invalid("", e.to_string()))?;
    // A NUL can only come as the escape `\u0000`: most inputs are spared the second read,
    // and the search is memchr's (a megabyte document is on every fleet.plan and apply).
    if memchr::memmem::find(input, b"\\u0000").is_some()
        && let Ok(tree) = serde_json::from_slice::<Value>(input)
    {
        refuse_nul(&tree)?;
    }
    Ok(value)
}

/// Parses a method's input from a JSON value.
pub fn parse_value<T: serde::de::DeserializeOwned>(input: Value) -> Result<T, ApiError> {
    refuse_nul(&input)?;
    serde_path_to_error::deserialize(ObjectsOnly(input)).map_err(path_error)
}

/// INVALID_INPUT at the first text of `input` holding a NUL character: PostgreSQL's text
/// cannot hold one (the statement failed, a 500), and SQLite would store what PostgreSQL
/// refuses. String maps stored as JSON (`config`, `env`; the document's too) are exempt: their
/// NULs are stored escaped, and a document may hold them, so a call made by hand accepts what
/// an apply makes.
fn refuse_nul(input: &Value) -> Result<(), ApiError> {
    fn find(value: &Value, path: &mut String) -> bool {
        match value {
            Value::String(s) => s.contains('\0'),
            Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = find(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            Value::Object(map) => map.iter().any(|(key, item)| {
                let len = path.len();
                planner::validate::push_key(path, key);
                let found = key.contains('\0')
                    || (!matches!(key.as_str(), "config" | "env") && find(item, path));
                if !found {
                    path.truncate(len);
                }
                found
            }),
            _ => false,
        }
    }
    let mut path = String::new();
    if find(input, &mut path) {
        // Worded as the fields' own checks word it (`region must not contain ...`).
        let message = format!("{path} must not contain a NUL character (\\u0000)");
        return Err(ApiError::invalid(path, message));
    }
    Ok(())
}

/// The message of input nested deeper than serde_json reads.
const TOO_DEEP: &str = "nests lists and objects deeper than the 127 levels the server reads";

fn path_error(err: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let mut message = err.inner().to_string();
    let mut path = path_of(err.path());
    if planner::wire::is_out_of_range(err.inner()) {
        return ApiError::invalid(path, planner::wire::OUT_OF_RANGE);
    }
    // Valid JSON nested past serde_json's limit: say what is not read, at its path, rather than
    // blame the text (the planner's JS package words it the same way).
    if message.starts_with("recursion limit exceeded") {
        return ApiError::invalid(path, TOO_DEEP);
    }
    // A value of the wrong kind or an unknown field is placed by its path; serde_json's
    // `at line L column C` would say where in the text it stopped reading, which for a GET is
    // text the client never sent (its parameters, written as JSON). Text that is not JSON
    // keeps its place: there it is the only one.
    if err.inner().classify() == serde_json::error::Category::Data {
        message.truncate(split_place(&message).0.len());
    }
    // serde reports a missing or repeated key at its parent: point at the key itself.
    if let Some(field) = ["missing field `", "duplicate field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next())
    {
        planner::validate::push_key(&mut path, field);
    }
    if under_secret_key(err.path()) {
        message = without_value(&message);
    }
    ApiError::invalid(path, in_wire_terms(&message))
}

/// True when the path ends in, or lies under, a secret-looking key: its message must not
/// repeat the value (contracts.md).
fn under_secret_key(path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    path.iter().any(|segment| match segment {
        Segment::Map { key } | Segment::Enum { variant: key } => {
            planner::validate::looks_secret(key)
        }
        Segment::Seq { .. } | Segment::Unknown => false,
    })
}

/// `message` without the value serde repeats in it: `invalid type: integer `5`, expected a
/// string` becomes `invalid type: integer, expected a string` (likewise `invalid value:` and
/// `unknown variant`). serde's other messages name keys or kinds, never a value.
fn without_value(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some((what, rest)) = message
            .strip_prefix(prefix)
            .and_then(unexpected_without_value)
        {
            return format!("{prefix}{what}{rest}");
        }
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        // The variant may hold backticks, even these texts; what follows it never does.
        if let Some(end) = ["`, expected ", "`, there are no variants"]
            .iter()
            .filter_map(|tail| rest.rfind(tail))
            .max()
        {
            return format!("unknown variant{}", &rest[end + 1..]);
        }
    }
    message.to_owned()
}

/// Splits serde's `Unexpected` text at the start of `text` (`integer `5``, `string "x"`)
/// into its kind and the text after the value; `None` for a kind written with no value.
fn unexpected_without_value(text: &str) -> Option<(&'static str, &str)> {
    for what in ["boolean", "integer", "floating point", "character"] {
        if let Some(value) = text.strip_prefix(what).and_then(|t| t.strip_prefix(" `")) {
            // A character is one (it may be a backtick); a number or boolean holds none.
            let end = if what == "character" {
                value.chars().next()?.len_utf8()
            } else {
                value.find('`')?
            };
            return Some((what, value[end..].strip_prefix('`')?));
        }
    }
    // A string is written as Rust's `Debug` does: a backslash escapes the next character, so
    // the first bare quote closes it.
    let value = text.strip_prefix("string \"")?;
    let mut chars = value.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '"' => return Some(("string", &value[i + 1..])),
            _ => {}
        }
    }
    None
}

/// Checks a name: 1-63 of `a-z 0-9 . _ -`, starting with a letter or digit.
pub fn check_name(path: &str, name: &str) -> Result<(), ApiError> {
    // The document's rule for names, from the planner: one rule for both.
    if planner::validate::is_name(name) {
        Ok(())
    } else {
        Err(ApiError::invalid(
            path,
            planner::validate::name_message(name),
        ))
    }
}

async fn tenant_exists(conn: &mut AnyConnection, id: &str) -> Result<bool, sqlx::Error> {
    super::db::exists(conn, "SELECT id FROM tenants WHERE id = $1", &[id]).await
}

/// INVALID_INPUT for a malformed tenant id, NOT_FOUND for an unknown one: reads and writes
/// alike (a read of a tenant that does not exist is not an empty list).
pub async fn require_tenant(conn: &mut AnyConnection, id: &str) -> Result<(), ApiError> {
    check_name("tenantId", id)?;
    if tenant_exists(conn, id).await? {
        Ok(())
    } else {
        Err(ApiError::not_found("tenant", id))
    }
}

/// NOT_FOUND for the object `id` of `kind` that `tenant` does not have; for the tenant itself
/// when it does not exist, as the list methods say (asked only once the object is not found).
pub async fn not_found_in(
    conn: &mut AnyConnection,
    tenant: &str,
    kind: &str,
    id: &str,
) -> ApiError {
    match tenant_exists(conn, tenant).await {
        Ok(false) => ApiError::not_found("tenant", tenant),
        Ok(true) => ApiError::not_found(kind, id),
        Err(err) => err.into(),
    }
}

/// Input of `tenant.create`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenantCreate {
    /// The new tenant's id (a name).
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub id: String,
    /// A display name; the id when absent. Not blank, no NUL.
    #[serde(default)]
    #[schemars(length(min = 1, max = planner::validate::MAX_TEXT))]
    pub name: Option<String>,
}

/// `tenant.create`: decides `iam:tenant:create` on the root tenant's scope.
pub async fn tenant_create(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Tenant, ApiError> {
    let input: TenantCreate = parse(input)?;
    caller
        .check_tenant(state, "tenant.create", ROOT, "iam:tenant:create")
        .await?;
    check_name("id", &input.id)?;
    if let Some(problem) = input
        .name
        .as_deref()
        .and_then(planner::validate::text_problem)
    {
        return Err(ApiError::invalid("name", format!("name {problem}")));
    }
    let name = input.name.clone().unwrap_or_else(|| input.id.clone());
    let mut tx = state.db.write_tx().await?;
    if !insert_tenant(&mut tx, &input.id, &name).await? {
        return Err(ApiError::with(
            Code::Conflict,
            format!("tenant {:?} already exists", input.id),
            json!({ "object": format!("tenant {}", input.id) }),
        ));
    }
    commit_audited(
        tx,
        caller,
        ROOT,
        "tenant.create",
        Some(&input.id),
        json!({ "id": input.id }),
    )
    .await?;
    Ok(Tenant {
        id: input.id,
        name,
        revision: 1,
    })
}

/// A tenant, as `tenant.create` and `tenant.list` answer it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Tenant {
    /// The tenant's id.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// 1 on create.
    pub revision: i64,
}

/// `tenant.list`'s answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TenantList {
    /// Every tenant, by id.
    pub tenants: Vec<Tenant>,
}

/// Input of `tenant.list`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Empty {}

/// `tenant.list`: decides `iam:tenant:read` on the root tenant's scope.
pub async fn tenant_list(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<TenantList, ApiError> {
    let _: Empty = parse(input)?;
    caller
        .check_tenant(state, "tenant.list", ROOT, "iam:tenant:read")
        .await?;
    let order = super::db::byte_order(state.db.backend, "id");
    let rows = sqlx::query(&format!(
        "SELECT id, name, revision FROM tenants ORDER BY {order}"
    ))
    .fetch_all(&state.db.pool)
    .await?;
    let tenants = rows
        .iter()
        .map(|r| {
            Ok(Tenant {
                id: r.try_get(0)?,
                name: r.try_get(1)?,
                revision: r.try_get(2)?,
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok(TenantList { tenants })
}

/// Input of `serviceAccount.create`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAccountCreate {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// Its name.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub name: String,
}

/// `serviceAccount.create`: decides `iam:serviceAccount:create`.
pub async fn service_account_create(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<ServiceAccount, ApiError> {
    let input: ServiceAccountCreate = parse(input)?;
    let method = "serviceAccount.create";
    caller
        .check_tenant(state, method, &input.tenant_id, "iam:serviceAccount:create")
        .await?;
    check_name("name", &input.name)?;
    let mut tx = state.db.write_tx().await?;
    require_tenant(&mut tx, &input.tenant_id).await?;
    // Names a service account for people and scripts: one per name in a tenant (the tenant's
    // lock orders two creates of one name on PostgreSQL).
    state.db.lock_tenant(&mut tx, &input.tenant_id).await?;
    if super::db::exists(
        &mut tx,
        "SELECT id FROM principals WHERE tenant_id = $1 AND kind = 'serviceAccount' AND name = $2",
        &[&input.tenant_id, &input.name],
    )
    .await?
    {
        return Err(ApiError::with(
            Code::Conflict,
            format!(
                "tenant {} has a service account named {:?} already",
                input.tenant_id, input.name
            ),
            json!({ "object": format!("serviceAccount {}", input.name) }),
        ));
    }
    let id = new_id("sa");
    insert_principal(
        &mut tx,
        &id,
        &input.tenant_id,
        "serviceAccount",
        &input.name,
    )
    .await?;
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&id),
        json!({ "name": input.name }),
    )
    .await?;
    Ok(ServiceAccount {
        id,
        tenant_id: input.tenant_id,
        kind: "serviceAccount",
        name: input.name,
        revision: 1,
    })
}

/// `serviceAccount.create`'s answer: the new principal.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccount {
    /// `sa_...`.
    pub id: String,
    /// Its tenant.
    pub tenant_id: String,
    /// Always `serviceAccount`.
    #[schemars(extend("const" = "serviceAccount"))]
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// 1 on create.
    pub revision: i64,
}

/// Input of `apiKey.create`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiKeyCreate {
    /// The tenant of the principal.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The principal the key acts as.
    pub principal_id: String,
    /// A label.
    #[serde(default)]
    #[schemars(length(max = planner::validate::MAX_TEXT))]
    pub name: Option<String>,
}

async fn require_principal(
    conn: &mut AnyConnection,
    tenant_id: &str,
    id: &str,
) -> Result<(), ApiError> {
    if super::db::exists(
        conn,
        "SELECT id FROM principals WHERE id = $1 AND tenant_id = $2",
        &[id, tenant_id],
    )
    .await?
    {
        Ok(())
    } else {
        Err(ApiError::not_found("principal", id))
    }
}

/// `apiKey.create`: decides `iam:apiKey:create`; answers the key once.
pub async fn api_key_create(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<NewApiKey, ApiError> {
    let input: ApiKeyCreate = parse(input)?;
    let method = "apiKey.create";
    caller
        .check_tenant(state, method, &input.tenant_id, "iam:apiKey:create")
        .await?;
    let name = input.name.unwrap_or_default();
    if name.chars().count() > planner::validate::MAX_TEXT {
        return Err(ApiError::invalid(
            "name",
            format!(
                "a key's name has at most {} characters",
                planner::validate::MAX_TEXT
            ),
        ));
    }
    {
        // The tenant and principal first: a principal of another tenant is unknown here,
        // and its grants are none of this caller's business.
        let mut conn = state.db.pool.acquire().await?;
        require_tenant(&mut conn, &input.tenant_id).await?;
        require_principal(&mut conn, &input.tenant_id, &input.principal_id).await?;
    }
    // A key acts as its principal with all its grants: only a caller holding every one of
    // them may make one (else `iam:apiKey:create` alone would reach any power, the root
    // administrator's included). A principal's later grants reach its keys anyway.
    if input.principal_id != caller.principal_id {
        let grants = sqlx::query(
            "SELECT permission, scope FROM grants WHERE principal_id = $1 ORDER BY permission, scope",
        )
        .bind(&input.principal_id)
        .fetch_all(&state.db.pool)
        .await?;
        for grant in &grants {
            let (permission, scope): (String, String) = (grant.try_get(0)?, grant.try_get(1)?);
            if !caller.allows(&permission, &scope) {
                let why = format!(
                    "a key acts as its principal, and {} holds it; a caller makes keys only \
                     for principals whose every grant it holds itself",
                    input.principal_id
                );
                caller
                    .check_holds(state, method, &input.tenant_id, &permission, &scope, &why)
                    .await?;
            }
        }
    }
    let mut tx = state.db.write_tx().await?;
    let (id, key) = insert_key(&mut tx, &input.tenant_id, &input.principal_id, &name).await?;
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&id),
        json!({ "principalId": input.principal_id }),
    )
    .await?;
    Ok(NewApiKey {
        id,
        principal_id: input.principal_id,
        key,
    })
}

/// `apiKey.create`'s answer: the key, shown this once.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewApiKey {
    /// `key_...`.
    pub id: String,
    /// The principal it acts as.
    pub principal_id: String,
    /// The key, `bc_<id>_...`: only its hash is kept.
    pub key: String,
}

/// Input of `apiKey.revoke` and `grant.delete`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenantObject {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The object's id.
    pub id: String,
}

/// `apiKey.revoke`: decides `iam:apiKey:revoke`; the key stops working at once.
pub async fn api_key_revoke(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Revoked, ApiError> {
    let input: TenantObject = parse(input)?;
    let method = "apiKey.revoke";
    caller
        .check_tenant(state, method, &input.tenant_id, "iam:apiKey:revoke")
        .await?;
    let mut tx = state.db.write_tx().await?;
    let n = sqlx::query(
        "UPDATE api_keys SET revoked_at = $1, revision = revision + 1 \
         WHERE id = $2 AND tenant_id = $3 AND revoked_at IS NULL",
    )
    .bind(now_ms())
    .bind(&input.id)
    .bind(&input.tenant_id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if n == 0 {
        return Err(not_found_in(&mut tx, &input.tenant_id, "apiKey", &input.id).await);
    }
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&input.id),
        json!({}),
    )
    .await?;
    Ok(Revoked {
        id: input.id,
        revoked: true,
    })
}

/// `apiKey.revoke`'s answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Revoked {
    /// The key's id.
    pub id: String,
    /// Always `true`.
    #[schemars(extend("const" = true))]
    pub revoked: bool,
}

/// Input of `grant.create`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = grant_scopes)]
pub struct GrantCreate {
    /// The tenant of the principal.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// Who receives the permission.
    pub principal_id: String,
    /// A permission (`compute:pool:update`), every permission under a prefix
    /// (`compute:*`, `compute:pool:*`), or `*`: the shapes a grant's permission takes.
    #[schemars(length(min = 1, max = MAX_PERMISSION), pattern(PERMISSION_PATTERN))]
    pub permission: String,
    /// Where it applies; the tenant's scope when absent. A root principal may name
    /// `compute-fleet/global` or any `tenants/<id>`; another tenant's principal only its own
    /// `tenants/<tenantId>` (which a schema cannot state: it says absent).
    #[serde(default)]
    pub scope: Option<String>,
}

/// The longest permission a grant holds (the longest real one is under 40).
const MAX_PERMISSION: usize = 200;

/// [`is_permission`] as a JSON Schema pattern.
const PERMISSION_PATTERN: &str = r"^(\*|[A-Za-z0-9._-]+(:[A-Za-z0-9._-]+)*:(\*|[A-Za-z0-9._-]+))$";

/// True for a permission [`Caller::allows`] can match: `*`, or two or more `:`-separated
/// segments of letters, digits, `.`, `_` or `-`, the last of which may be `*`. Anything else
/// (`compute:po*`, a lone `compute`) would be stored and never match.
pub fn is_permission(permission: &str) -> bool {
    let segment = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
    };
    if permission == "*" {
        return true;
    }
    match permission.rsplit_once(':') {
        Some((init, last)) => init.split(':').all(segment) && (last == "*" || segment(last)),
        None => false,
    }
}

/// The scopes `grant.create` accepts, as far as a schema can say (see [`GrantCreate::scope`]).
fn grant_scopes(schema: &mut schemars::Schema) {
    schema.insert(
        "if".into(),
        json!({ "properties": { "tenantId": { "const": ROOT } }, "required": ["tenantId"] }),
    );
    schema.insert(
        "then".into(),
        json!({ "properties": { "scope": { "anyOf": [
            { "type": "null" },
            { "const": FLEET_SCOPE },
            { "type": "string", "pattern": "^tenants/" },
        ] } } }),
    );
    schema.insert(
        "else".into(),
        json!({ "properties": { "scope": { "type": "null" } } }),
    );
}

/// `grant.create`: decides `iam:grant:create`. A grant of a non-root tenant can only name
/// that tenant's scope, so it can never reach `compute-fleet/global`.
pub async fn grant_create(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<NewGrant, ApiError> {
    let input: GrantCreate = parse(input)?;
    let method = "grant.create";
    caller
        .check_tenant(state, method, &input.tenant_id, "iam:grant:create")
        .await?;
    let scope = input
        .scope
        .clone()
        .unwrap_or_else(|| tenant_scope(&input.tenant_id));
    let own = tenant_scope(&input.tenant_id);
    let scope_ok = if input.tenant_id == ROOT {
        scope == FLEET_SCOPE || scope.starts_with("tenants/")
    } else {
        scope == own
    };
    if !scope_ok {
        return Err(ApiError::invalid(
            "scope",
            format!(
                "scope {scope:?} is not available to principals of tenant {:?}",
                input.tenant_id
            ),
        ));
    }
    if input.permission.len() > MAX_PERMISSION {
        return Err(ApiError::invalid(
            "permission",
            format!("a permission has at most {MAX_PERMISSION} characters"),
        ));
    }
    if !is_permission(&input.permission) {
        return Err(ApiError::invalid(
            "permission",
            "a permission such as compute:pool:update, module:*, or *",
        ));
    }
    // A root grant on another tenant's scope names that tenant: a typo must not leave a grant
    // that matches nothing.
    let named = scope.strip_prefix("tenants/").filter(|_| scope != own);
    if let Some(named) = named
        && !planner::validate::is_name(named)
    {
        return Err(ApiError::invalid(
            "scope",
            format!("{scope:?} does not name a tenant: tenants/<tenant id>"),
        ));
    }
    caller
        .check_holds(
            state,
            method,
            &input.tenant_id,
            &input.permission,
            &scope,
            "a caller grants only what it holds itself",
        )
        .await?;
    let mut tx = state.db.write_tx().await?;
    if let Some(named) = named
        && !super::db::exists(&mut tx, "SELECT id FROM tenants WHERE id = $1", &[named]).await?
    {
        return Err(ApiError::not_found("tenant", named));
    }
    require_tenant(&mut tx, &input.tenant_id).await?;
    require_principal(&mut tx, &input.tenant_id, &input.principal_id).await?;
    let Some(id) = insert_grant(
        &mut tx,
        &input.tenant_id,
        &input.principal_id,
        &input.permission,
        &scope,
    )
    .await?
    else {
        return Err(ApiError::with(
            Code::Conflict,
            "the principal already holds this grant",
            json!({ "object": format!("grant {} on {scope}", input.permission) }),
        ));
    };
    let details = json!({ "principalId": input.principal_id, "permission": input.permission, "scope": scope });
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&id),
        details.clone(),
    )
    .await?;
    Ok(NewGrant {
        id,
        principal_id: input.principal_id,
        permission: input.permission,
        scope,
    })
}

/// `grant.create`'s answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewGrant {
    /// `grt_...`.
    pub id: String,
    /// Who holds it.
    pub principal_id: String,
    /// The permission.
    pub permission: String,
    /// Where it applies.
    pub scope: String,
}

/// `grant.delete`: decides `iam:grant:delete`.
pub async fn grant_delete(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Deleted, ApiError> {
    let input: TenantObject = parse(input)?;
    let method = "grant.delete";
    caller
        .check_tenant(state, method, &input.tenant_id, "iam:grant:delete")
        .await?;
    let mut tx = state.db.write_tx().await?;
    let n = sqlx::query("DELETE FROM grants WHERE id = $1 AND tenant_id = $2")
        .bind(&input.id)
        .bind(&input.tenant_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if n == 0 {
        return Err(not_found_in(&mut tx, &input.tenant_id, "grant", &input.id).await);
    }
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&input.id),
        json!({}),
    )
    .await?;
    Ok(Deleted {
        id: input.id,
        deleted: true,
    })
}

/// Input of `principal.list`, `grant.list` and `apiKey.list`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IamList {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// Only this principal's rows (`principal.list`: only this principal).
    #[serde(default)]
    pub principal_id: Option<String>,
}

/// One IAM list, `{items}`: `sql` with `$1` the tenant and `$2` a principal id or '', each
/// row made an item by `item` (given the tenant).
async fn iam_list<T>(
    state: &AppState,
    caller: &Caller,
    (method, permission): (&str, &str),
    input: &[u8],
    sql: &str,
    item: fn(&sqlx::any::AnyRow, &str) -> Result<T, sqlx::Error>,
) -> Result<Items<T>, ApiError> {
    let input: IamList = parse(input)?;
    caller
        .check_tenant(state, method, &input.tenant_id, permission)
        .await?;
    let mut conn = state.db.pool.acquire().await?;
    require_tenant(&mut conn, &input.tenant_id).await?;
    let rows = sqlx::query(sql)
        .bind(&input.tenant_id)
        .bind(input.principal_id.as_deref().unwrap_or(""))
        .fetch_all(&mut *conn)
        .await?;
    let items = rows
        .iter()
        .map(|r| item(r, &input.tenant_id))
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok(Items { items })
}

/// `principal.list`: decides `iam:principal:read`; the tenant's users and service accounts.
pub async fn principal_list(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Items<Principal>, ApiError> {
    let sql = "SELECT id, kind, name, revision, created_at FROM principals \
               WHERE tenant_id = $1 AND ($2 = '' OR id = $2) ORDER BY id";
    iam_list(
        state,
        caller,
        ("principal.list", "iam:principal:read"),
        input,
        sql,
        |r, tenant| {
            Ok(Principal {
                id: r.try_get(0)?,
                tenant_id: tenant.to_owned(),
                kind: r.try_get(1)?,
                name: r.try_get(2)?,
                revision: r.try_get(3)?,
                created_at: r.try_get(4)?,
            })
        },
    )
    .await
}

/// A principal, as `principal.list` answers it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Principal {
    /// `usr_...` or `sa_...`.
    pub id: String,
    /// Its tenant.
    pub tenant_id: String,
    /// `user` or `serviceAccount`.
    #[schemars(extend("enum" = ["user", "serviceAccount"]))]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its revision.
    pub revision: i64,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// `grant.list`: decides `iam:grant:read`; the grants of the tenant's principals, so an
/// operator can see that a CI account holds what it needs "and nothing else".
pub async fn grant_list(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Items<Grant>, ApiError> {
    let sql = format!(
        "SELECT id, principal_id, permission, scope, created_at FROM grants \
         WHERE tenant_id = $1 AND ($2 = '' OR principal_id = $2) ORDER BY {}",
        super::db::byte_order(state.db.backend, "principal_id, permission, scope")
    );
    iam_list(
        state,
        caller,
        ("grant.list", "iam:grant:read"),
        input,
        &sql,
        |r, tenant| {
            Ok(Grant {
                id: r.try_get(0)?,
                tenant_id: tenant.to_owned(),
                principal_id: r.try_get(1)?,
                permission: r.try_get(2)?,
                scope: r.try_get(3)?,
                created_at: r.try_get(4)?,
            })
        },
    )
    .await
}

/// A grant, as `grant.list` answers it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// `grt_...`.
    pub id: String,
    /// The tenant of its principal.
    pub tenant_id: String,
    /// Who holds it.
    pub principal_id: String,
    /// The permission.
    pub permission: String,
    /// Where it applies.
    pub scope: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// `apiKey.list`: decides `iam:apiKey:read`; the keys' ids, names and dates, never a key (only
/// its hash is stored) nor its hash.
pub async fn api_key_list(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Items<ApiKey>, ApiError> {
    let sql = "SELECT id, principal_id, name, created_at, revoked_at FROM api_keys \
               WHERE tenant_id = $1 AND ($2 = '' OR principal_id = $2) ORDER BY id";
    iam_list(
        state,
        caller,
        ("apiKey.list", "iam:apiKey:read"),
        input,
        sql,
        |r, tenant| {
            Ok(ApiKey {
                id: r.try_get(0)?,
                tenant_id: tenant.to_owned(),
                principal_id: r.try_get(1)?,
                name: r.try_get(2)?,
                created_at: r.try_get(3)?,
                revoked_at: r.try_get(4)?,
            })
        },
    )
    .await
}

/// An API key, as `apiKey.list` answers it: never the key nor its hash.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    /// `key_...`.
    pub id: String,
    /// The tenant of its principal.
    pub tenant_id: String,
    /// The principal it acts as.
    pub principal_id: String,
    /// Its label (empty when none).
    pub name: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// When it was revoked (Unix milliseconds); left out while it works.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<i64>,
}

/// Input of `audit.list`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditList {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// Only rows of this method.
    #[serde(default)]
    pub method: Option<String>,
    /// At most this many rows, newest first (default 100, at most 1000).
    #[serde(default, deserialize_with = "super::numbers::optional_u32")]
    #[schemars(with = "Option<u32>")]
    pub limit: Option<u32>,
    /// Only rows older than this one: the last `id` of the page read before (ids sort as
    /// the rows were written).
    #[serde(default)]
    pub before: Option<String>,
}

/// `audit.list`: decides `iam:audit:read`; newest first.
pub async fn audit_list(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Items<AuditEntry>, ApiError> {
    let input: AuditList = parse(input)?;
    caller
        .check_tenant(state, "audit.list", &input.tenant_id, "iam:audit:read")
        .await?;
    require_tenant(&mut *state.db.pool.acquire().await?, &input.tenant_id).await?;
    let limit = i64::from(input.limit.unwrap_or(100).min(1000));
    let method = input.method.unwrap_or_default();
    let before = input.before.unwrap_or_default();
    let rows = sqlx::query(
        "SELECT id, principal_id, method, outcome, object_id, details, at FROM audit \
         WHERE tenant_id = $1 AND ($2 = '' OR method = $2) AND ($4 = '' OR id < $4) \
         ORDER BY id DESC LIMIT $3",
    )
    .bind(&input.tenant_id)
    .bind(&method)
    .bind(limit)
    .bind(&before)
    .fetch_all(&state.db.pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let details: Option<String> = r.try_get(5)?;
        out.push(AuditEntry {
            id: r.try_get(0)?,
            tenant_id: input.tenant_id.clone(),
            principal_id: r.try_get(1)?,
            method: r.try_get(2)?,
            outcome: r.try_get(3)?,
            object_id: r.try_get(4)?,
            details: details
                .and_then(|d| serde_json::from_str::<Value>(&d).ok())
                .unwrap_or(json!({})),
            at: r.try_get(6)?,
        });
    }
    Ok(Items { items: out })
}

/// An audit row, as `audit.list` answers it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// `aud_...`; ids sort as the rows were written.
    pub id: String,
    /// The input's tenant.
    pub tenant_id: String,
    /// Who called (`null` for none).
    pub principal_id: Option<String>,
    /// The method.
    pub method: String,
    /// `ok`, `forbidden` or `config_drift`.
    #[schemars(extend("enum" = ["ok", "forbidden", "config_drift"]))]
    pub outcome: String,
    /// The object the call touched (`null` for none).
    pub object_id: Option<String>,
    /// What the method recorded (its input, the plan hash, ...).
    #[schemars(with = "Map<String, Value>")]
    pub details: Value,
    /// Unix milliseconds.
    pub at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_are_what_allows_can_match() {
        for ok in [
            "*",
            "compute:*",
            "compute:pool:*",
            "compute:pool:update",
            "iam:grant:create",
        ] {
            assert!(is_permission(ok), "{ok}");
        }
        for bad in [
            "",
            "compute",
            "compute:po*",
            "compute::update",
            "*:pool",
            "a:b:",
            ":a",
            "a b:c",
        ] {
            assert!(!is_permission(bad), "{bad}");
        }
        // Each accepted shape grants what it says.
        let caller = Caller::new(
            "p",
            ROOT,
            vec![("compute:pool:*".into(), tenant_scope(ROOT))],
        );
        assert!(caller.allows("compute:pool:update", &tenant_scope(ROOT)));
        assert!(!caller.allows("compute:site:create", &tenant_scope(ROOT)));
    }

    #[test]
    fn secret_values_leave_serde_messages() {
        for (message, redacted) in [
            (
                "invalid type: integer `12345678`, expected a string",
                "invalid type: integer, expected a string",
            ),
            (
                "invalid type: floating point `1.5`, expected a string at line 1 column 9",
                "invalid type: floating point, expected a string at line 1 column 9",
            ),
            (
                "invalid value: boolean `true`, expected x",
                "invalid value: boolean, expected x",
            ),
            (
                "invalid type: character ```, expected a string",
                "invalid type: character, expected a string",
            ),
            (
                r#"invalid type: string "s3\"cr, expected \u{1b}t", expected i64"#,
                "invalid type: string, expected i64",
            ),
            (
                "unknown variant `a`, expected b`, expected one of `x`, `y`",
                "unknown variant, expected one of `x`, `y`",
            ),
            (
                "unknown variant `s`, there are no variants",
                "unknown variant, there are no variants",
            ),
            // Messages with no value stay as they are.
            (
                "invalid type: map, expected a string",
                "invalid type: map, expected a string",
            ),
            ("missing field `token`", "missing field `token`"),
            (
                "EOF while parsing a string at line 1 column 30",
                "EOF while parsing a string at line 1 column 30",
            ),
        ] {
            assert_eq!(without_value(message), redacted, "{message}");
        }
    }

    #[test]
    fn serde_paths_are_written_as_the_documents() {
        let refused = |input: Value| {
            let err = parse_value::<planner::calls::PoolOffer>(input).unwrap_err();
            err.details["path"].as_str().unwrap().to_owned()
        };
        let offer =
            |quota: Value| json!({ "tenantId": "t", "poolId": "p", "tenant": "u", "quota": quota });
        assert_eq!(
            refused(offer(json!({ "nvidia.gpu": -1 }))),
            r#"quota["nvidia.gpu"]"#
        );
        assert_eq!(refused(offer(json!({ "vcpu": "x" }))), "quota.vcpu");
        assert_eq!(refused(offer(json!([1]))), "quota");
        assert_eq!(refused(json!({ "tenantId": "t" })), "poolId");
        // A key serde cannot read (a truncated body) is its object's problem: the root here.
        let err = parse::<TenantObject>(b"{").unwrap_err();
        assert_eq!(err.details["path"], "");
        let err = parse::<planner::calls::PoolOffer>(br#"{"quota":{"#).unwrap_err();
        assert_eq!(err.details["path"], "quota");
    }
}
