//! The HTTP API: one dispatch table (method name -> handler, permission), which also
//! generates the OpenAPI 3.1 document; `POST /api/<method>` (reads also `GET`).

use super::AppState;
use super::error::{ApiError, Code};
use super::iam::{self, Caller};
use super::{drift, events, fleet, numbers, objects, reconciler, webhooks};
use axum::Json;
use axum::body::{Body, HttpBody};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method as HttpMethod, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use planner::calls;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// What a method answers: a JSON value, or JSON already written.
pub enum Answer {
    /// A value, written when the response goes out.
    Value(Value),
    /// JSON text, for large answers (an export, a plan): written straight from their types,
    /// without a `Value` tree of tens of thousands of objects in between.
    Json(Vec<u8>),
}

impl From<Value> for Answer {
    fn from(value: Value) -> Answer {
        Answer::Value(value)
    }
}

impl Answer {
    /// `value` written as JSON.
    pub fn json<T: serde::Serialize>(value: &T) -> Result<Answer, ApiError> {
        Ok(Answer::Json(serde_json::to_vec(value)?))
    }
}

/// A list method's answer, `{items}` (named `<T>List` in the OpenAPI document).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "{T}List")]
pub struct Items<T> {
    /// The items, in the method's order.
    pub items: Vec<T>,
}

/// The future a method returns.
pub type BoxFut<'a> = Pin<Box<dyn Future<Output = Result<Answer, ApiError>> + Send + 'a>>;
/// A method's handler: state, caller, method name, input JSON bytes.
pub type Handler = for<'a> fn(&'a AppState, &'a Caller, &'a str, &'a [u8]) -> BoxFut<'a>;
/// The schema of a method's answer: a reference into the generator every answer shares,
/// whose definitions become the document's components.
pub type AnswerSchema = fn(&mut SchemaGenerator) -> schemars::Schema;

/// A method's handler and the type of its answer, made together from one function
/// (`typed!`), so the document states what the handler answers.
pub struct Run {
    /// The handler.
    pub handler: Handler,
    /// The answer's schema; `None` for the fleet methods, whose answers [`output`] states.
    pub answer: Option<AnswerSchema>,
}

/// One API method.
pub struct Method {
    /// `pool.update`.
    pub name: &'static str,
    /// The permission it decides, and where (documentation; the handler decides it).
    pub permission: &'static str,
    /// `tenant` (the input's tenant scope), `root` or `compute-fleet/global`.
    pub scope: &'static str,
    /// A read: also served on GET, never writes.
    pub read: bool,
    /// One line for people.
    pub summary: &'static str,
    /// The JSON Schema of the input.
    pub input: fn() -> Value,
    /// The handler, with its answer's type.
    pub run: Run,
}

fn schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    // `uint64` means nothing to clients: state the range, as the document's schema does.
    numbers::state_integer_ranges(&mut schema);
    planner::schema::integer_formats_to_ranges(&mut schema);
    // The server derives a created object's id from it (`objects::create_id`).
    if let Some(key) = schema.pointer_mut("/properties/idempotencyKey") {
        key["minLength"] = json!(1);
        key["maxLength"] = json!(300);
    }
    schema
}

/// `pool.create`: a pool of class `provider` names its provider account, and only such a pool
/// does (a missing or `null` field is no account).
fn pool_create_input() -> Value {
    let mut schema = schema::<calls::PoolCreate>();
    schema["if"] =
        json!({ "properties": { "class": { "const": "provider" } }, "required": ["class"] });
    schema["then"] = json!({
        "required": ["providerAccountId"],
        "properties": { "providerAccountId": { "type": "string" } },
    });
    schema["else"] = json!({ "properties": { "providerAccountId": { "type": "null" } } });
    schema
}

fn run_call<'a>(s: &'a AppState, c: &'a Caller, m: &'a str, b: &'a [u8]) -> BoxFut<'a> {
    Box::pin(async move {
        let Unique(mut input) = iam::parse(b)?;
        // A call's integers may come as integral floats (`961.0`), as JSON Schema allows.
        numbers::integral_floats_to_integers(&mut input);
        Answer::json(&objects::call_http(s, c, m, input).await?)
    })
}

/// A JSON value whose objects repeat no key. A call's input is read as a [`Value`] first (its
/// type depends on the method), and a `Value` keeps the last of two equal keys silently;
/// typed inputs refuse them (`duplicate field`), and so must a call.
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate field `{key}`"
                )));
            }
            let Unique(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

fn run_read<'a>(s: &'a AppState, c: &'a Caller, m: &'a str, b: &'a [u8]) -> BoxFut<'a> {
    Box::pin(async move { Answer::json(&objects::read(s, c, m, b).await?) })
}

/// The schema of `T` as an answer, in the shared generator.
fn answer<T: schemars::JsonSchema>(generator: &mut SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<T>()
}

/// The schema of what `handler` answers, from its type.
fn answer_of<F, T>(_handler: F) -> AnswerSchema
where
    F: AsyncFn(&AppState, &Caller, &[u8]) -> Result<T, ApiError>,
    T: schemars::JsonSchema,
{
    answer::<T>
}

/// A handler whose answer the document states otherwise (the fleet methods': see [`output`]).
macro_rules! handler {
    ($f:path) => {{
        fn h<'a>(s: &'a AppState, c: &'a Caller, _m: &'a str, b: &'a [u8]) -> BoxFut<'a> {
            Box::pin(async move { $f(s, c, b).await.map(Into::<Answer>::into) })
        }
        Run {
            handler: h,
            answer: None,
        }
    }};
}

/// A handler answering a typed value, written as JSON; the document states that type.
macro_rules! typed {
    ($f:path) => {{
        fn h<'a>(s: &'a AppState, c: &'a Caller, _m: &'a str, b: &'a [u8]) -> BoxFut<'a> {
            Box::pin(async move { Answer::json(&$f(s, c, b).await?) })
        }
        Run {
            handler: h,
            answer: Some(answer_of($f)),
        }
    }};
}

macro_rules! call {
    // An input schema of its own: `fn <schema function>`. `$answer`: what the call answers
    // (an `objects::Object` of that variant; a test checks real answers against it).
    ($name:literal, fn $input:expr, $answer:ty, $perm:literal, $summary:literal) => {
        Method {
            name: $name,
            permission: $perm,
            scope: "tenant",
            read: false,
            summary: $summary,
            input: $input,
            run: Run {
                handler: run_call,
                answer: Some(answer::<$answer>),
            },
        }
    };
    ($name:literal, $input:ty, $answer:ty, $perm:literal, $summary:literal) => {
        call!($name, fn schema::<$input>, $answer, $perm, $summary)
    };
}

macro_rules! reads {
    ($kind:literal, $object:ty, $perm:literal) => {
        [
            Method {
                name: concat!($kind, ".list"),
                permission: $perm,
                scope: "tenant",
                read: true,
                summary: concat!("Lists the tenant's ", $kind, " objects."),
                input: schema::<objects::ListInput>,
                run: Run {
                    handler: run_read,
                    answer: Some(answer::<Items<$object>>),
                },
            },
            Method {
                name: concat!($kind, ".get"),
                permission: $perm,
                scope: "tenant",
                read: true,
                summary: concat!("Reads one ", $kind, "."),
                input: schema::<objects::GetInput>,
                run: Run {
                    handler: run_read,
                    answer: Some(answer::<$object>),
                },
            },
        ]
    };
}

/// Every method of the API.
pub fn methods() -> Vec<Method> {
    let mut all = vec![
        Method {
            name: "fleet.export",
            permission: iam::FLEET_ADMIN,
            scope: iam::FLEET_SCOPE,
            read: true,
            summary: "The tenant's fleet as a document, with what planning needs.",
            input: schema::<fleet::TenantInput>,
            run: handler!(fleet::export),
        },
        Method {
            name: "fleet.plan",
            permission: iam::FLEET_ADMIN,
            scope: iam::FLEET_SCOPE,
            // The seed calls it a read: it changes nothing, so GET serves it too.
            read: true,
            summary: "Diffs a document against the fleet; changes nothing.",
            input: schema::<fleet::PlanInput>,
            run: handler!(fleet::plan),
        },
        Method {
            name: "fleet.apply",
            permission: iam::FLEET_ADMIN,
            scope: iam::FLEET_SCOPE,
            read: false,
            summary: "Applies a document's plan in one transaction (and decides every call).",
            input: schema::<fleet::ApplyInput>,
            run: handler!(fleet::apply_http),
        },
        Method {
            name: "fleet.status",
            permission: iam::FLEET_ADMIN,
            scope: iam::FLEET_SCOPE,
            read: true,
            summary: "The applied document and the drift as of the last check.",
            input: schema::<fleet::TenantInput>,
            run: handler!(fleet::status),
        },
        Method {
            name: "fleet.check",
            permission: iam::FLEET_ADMIN,
            scope: iam::FLEET_SCOPE,
            read: false,
            summary: "Runs the tenant's drift check now and answers the new status.",
            input: schema::<fleet::TenantInput>,
            run: handler!(drift::check_http),
        },
        Method {
            name: "reconciler.status",
            permission: iam::FLEET_ADMIN,
            scope: iam::FLEET_SCOPE,
            read: true,
            summary: "The reconcilers' queue (keys, due times, errors, holders) and this process's runs.",
            input: schema::<reconciler::StatusInput>,
            run: typed!(reconciler::status),
        },
        Method {
            name: "event.list",
            permission: events::READ,
            scope: "tenant",
            read: true,
            summary: "The tenant's events (fleet.drifted, fleet.converged), newest first.",
            input: schema::<events::EventList>,
            run: typed!(events::list),
        },
        Method {
            name: "webhook.create",
            permission: webhooks::CREATE,
            scope: "tenant",
            read: false,
            summary: "Registers a webhook endpoint; answers its signing secret once.",
            input: schema::<webhooks::WebhookCreate>,
            run: typed!(webhooks::create),
        },
        Method {
            name: "webhook.list",
            permission: webhooks::READ,
            scope: "tenant",
            read: true,
            summary: "Lists the tenant's webhook endpoints (without secrets).",
            input: schema::<webhooks::WebhookList>,
            run: typed!(webhooks::list),
        },
        Method {
            name: "webhook.delete",
            permission: webhooks::DELETE,
            scope: "tenant",
            read: false,
            summary: "Deletes a webhook endpoint and its delivery log.",
            input: schema::<webhooks::WebhookRef>,
            run: typed!(webhooks::delete),
        },
        Method {
            name: "webhook.deliveries",
            permission: webhooks::READ,
            scope: "tenant",
            read: true,
            summary: "An endpoint's deliveries, newest first, each with every attempt.",
            input: schema::<webhooks::DeliveryList>,
            run: typed!(webhooks::deliveries),
        },
        Method {
            name: "webhook.redeliver",
            permission: webhooks::REDELIVER,
            scope: "tenant",
            read: false,
            summary: "Delivers one event to an endpoint again (same webhook-id).",
            input: schema::<webhooks::Redeliver>,
            run: typed!(webhooks::redeliver),
        },
        Method {
            name: "webhook.rotateSecret",
            permission: webhooks::UPDATE,
            scope: "tenant",
            read: false,
            summary: "Replaces an endpoint's secret; the old one also signs for 24 hours.",
            input: schema::<webhooks::WebhookRef>,
            run: typed!(webhooks::rotate_secret),
        },
        Method {
            name: "tenant.create",
            permission: "iam:tenant:create",
            scope: "root",
            read: false,
            summary: "Creates a tenant.",
            input: schema::<iam::TenantCreate>,
            run: typed!(iam::tenant_create),
        },
        Method {
            name: "tenant.list",
            permission: "iam:tenant:read",
            scope: "root",
            read: true,
            summary: "Lists tenants.",
            input: schema::<iam::Empty>,
            run: typed!(iam::tenant_list),
        },
        Method {
            name: "serviceAccount.create",
            permission: "iam:serviceAccount:create",
            scope: "tenant",
            read: false,
            summary: "Creates a service account.",
            input: schema::<iam::ServiceAccountCreate>,
            run: typed!(iam::service_account_create),
        },
        Method {
            name: "apiKey.create",
            permission: "iam:apiKey:create",
            scope: "tenant",
            read: false,
            summary: "Creates an API key for a principal; the key is answered once.",
            input: schema::<iam::ApiKeyCreate>,
            run: typed!(iam::api_key_create),
        },
        Method {
            name: "apiKey.revoke",
            permission: "iam:apiKey:revoke",
            scope: "tenant",
            read: false,
            summary: "Revokes an API key.",
            input: schema::<iam::TenantObject>,
            run: typed!(iam::api_key_revoke),
        },
        Method {
            name: "grant.create",
            permission: "iam:grant:create",
            scope: "tenant",
            read: false,
            summary: "Grants a permission on a scope to a principal.",
            input: schema::<iam::GrantCreate>,
            run: typed!(iam::grant_create),
        },
        Method {
            name: "grant.delete",
            permission: "iam:grant:delete",
            scope: "tenant",
            read: false,
            summary: "Deletes a grant.",
            input: schema::<iam::TenantObject>,
            run: typed!(iam::grant_delete),
        },
        Method {
            name: "principal.list",
            permission: "iam:principal:read",
            scope: "tenant",
            read: true,
            summary: "Lists the tenant's principals (users and service accounts).",
            input: schema::<iam::IamList>,
            run: typed!(iam::principal_list),
        },
        Method {
            name: "grant.list",
            permission: "iam:grant:read",
            scope: "tenant",
            read: true,
            summary: "Lists the grants of the tenant's principals (of one, with principalId).",
            input: schema::<iam::IamList>,
            run: typed!(iam::grant_list),
        },
        Method {
            name: "apiKey.list",
            permission: "iam:apiKey:read",
            scope: "tenant",
            read: true,
            summary: "Lists API keys (ids, names, dates; never a key).",
            input: schema::<iam::IamList>,
            run: typed!(iam::api_key_list),
        },
        Method {
            name: "audit.list",
            permission: "iam:audit:read",
            scope: "tenant",
            read: true,
            summary: "The tenant's audit rows, newest first.",
            input: schema::<iam::AuditList>,
            run: typed!(iam::audit_list),
        },
        call!(
            "providerAccount.create",
            calls::ProviderAccountCreate,
            objects::ProviderAccount,
            "vps:providerAccount:create",
            "Creates a provider account."
        ),
        call!(
            "providerAccount.update",
            calls::ProviderAccountUpdate,
            objects::ProviderAccount,
            "vps:providerAccount:update",
            "Replaces a provider account's config."
        ),
        call!(
            "providerAccount.delete",
            calls::Delete,
            objects::Deleted,
            "vps:providerAccount:delete",
            "Deletes a provider account."
        ),
        call!(
            "site.create",
            calls::SiteCreate,
            objects::Site,
            "compute:site:create",
            "Creates a site."
        ),
        call!(
            "pool.create",
            fn pool_create_input,
            objects::Pool,
            "compute:pool:create",
            "Creates a pool."
        ),
        call!(
            "pool.update",
            calls::PoolUpdate,
            objects::Pool,
            "compute:pool:update",
            "Sets a pool's policy."
        ),
        call!(
            "pool.setOwnerQuota",
            calls::PoolSetOwnerQuota,
            objects::Pool,
            "compute:pool:quota",
            "Sets or removes one owner quota entry."
        ),
        call!(
            "pool.offer",
            calls::PoolOffer,
            objects::Pool,
            "compute:pool:offer",
            "Offers a pool to a tenant with a quota."
        ),
        call!(
            "pool.unoffer",
            calls::PoolUnoffer,
            objects::Pool,
            "compute:pool:offer",
            "Withdraws an offer."
        ),
        call!(
            "pool.archive",
            calls::Delete,
            objects::Pool,
            "compute:pool:archive",
            "Archives a pool with its quotas and offers."
        ),
        call!(
            "flavor.create",
            calls::FlavorCreate,
            objects::Flavor,
            "vps:flavor:create",
            "Creates a flavor."
        ),
        call!(
            "flavor.update",
            calls::FlavorUpdate,
            objects::Flavor,
            "vps:flavor:update",
            "Replaces a flavor's sizes."
        ),
        call!(
            "flavor.delete",
            calls::Delete,
            objects::Deleted,
            "vps:flavor:delete",
            "Deletes a flavor."
        ),
        call!(
            "sandboxTemplate.create",
            calls::SandboxTemplateCreate,
            objects::SandboxTemplate,
            "vps:sandboxTemplate:create",
            "Creates a sandbox template."
        ),
        call!(
            "sandboxTemplate.update",
            calls::SandboxTemplateUpdate,
            objects::SandboxTemplate,
            "vps:sandboxTemplate:update",
            "Replaces a sandbox template's mutable state."
        ),
        call!(
            "sandboxTemplate.delete",
            calls::Delete,
            objects::Deleted,
            "vps:sandboxTemplate:delete",
            "Deletes a sandbox template."
        ),
    ];
    for pair in [
        reads!("site", objects::Site, "compute:site:read"),
        reads!("pool", objects::Pool, "compute:pool:read"),
        reads!(
            "providerAccount",
            objects::ProviderAccount,
            "vps:providerAccount:read"
        ),
        reads!("flavor", objects::Flavor, "vps:flavor:read"),
        reads!(
            "sandboxTemplate",
            objects::SandboxTemplate,
            "vps:sandboxTemplate:read"
        ),
    ] {
        all.extend(pair);
    }
    all
}

/// Points every `$ref` starting with `from` at `to` instead.
fn rewrite_refs(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(name) = r.strip_prefix(from)
            {
                *r = format!("{to}{name}");
            }
            map.values_mut().for_each(|v| rewrite_refs(v, from, to));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, from, to)),
        _ => {}
    }
}

/// Moves a schema's definitions (under `defs`, referenced as `#/<defs>/<name>`) into the
/// document's components as `<prefix><name>`, pointing its references there, so each input
/// schema resolves inside the OpenAPI document.
fn hoist(
    mut schema: Value,
    defs: &str,
    prefix: &str,
    components: &mut Map<String, Value>,
) -> Value {
    let from = format!("#/{defs}/");
    let to = format!("#/components/schemas/{prefix}");
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        if let Some(Value::Object(found)) = map.remove(defs) {
            for (name, mut def) in found {
                rewrite_refs(&mut def, &from, &to);
                add_component(components, format!("{prefix}{name}"), def);
            }
        }
    }
    rewrite_refs(&mut schema, &from, &to);
    schema
}

/// How a query parameter of `schema` is read: `string`, `boolean` or `integer` (`null` aside:
/// an absent optional field), or `json` for a field that takes an object or a list (a
/// document, say), given as JSON text.
fn query_type(schema: &Value) -> Option<&'static str> {
    if schema.get("$ref").is_some() {
        return Some("json");
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(types) => types.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"object") || types.contains(&"array") {
        return Some("json");
    }
    ["string", "boolean", "integer"]
        .into_iter()
        .find(|t| types.contains(t))
}

/// A GET's query parameters: the input's fields, as [`query_input`] reads them; an object or
/// list field is JSON text (`content`, not `schema`, in OpenAPI's terms).
fn query_parameters(input: &Value) -> Vec<Value> {
    let required: Vec<&str> = input["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = input["properties"].as_object() else {
        return Vec::new();
    };
    let mut parameters = Vec::new();
    for (name, schema) in properties {
        let Some(kind) = query_type(schema) else {
            continue;
        };
        let mut schema = schema.clone();
        if kind != "json" {
            schema["type"] = json!(kind);
        }
        if let Some(map) = schema.as_object_mut()
            && map.get("default") == Some(&Value::Null)
        {
            // Absent is the default; `null` is no value of the narrowed type.
            map.remove("default");
        }
        let mut parameter = json!({
            "name": name,
            "in": "query",
            "required": required.contains(&name.as_str()),
        });
        if kind == "json" {
            parameter["content"] = json!({ "application/json": { "schema": schema } });
        } else {
            parameter["schema"] = schema.clone();
        }
        if let Some(description) = schema.get("description") {
            parameter["description"] = description.clone();
        }
        parameters.push(parameter);
    }
    parameters
}

/// The fleet methods' answers (their handlers answer JSON already written, not a type the
/// table can read), with the prefix their definitions take among the components. Every other
/// method's answer comes from its handler's type ([`Run::answer`]).
fn output(method: &str) -> Option<(&'static str, Value)> {
    match method {
        "fleet.plan" => Some(("Plan.", schema::<planner::Plan>())),
        "fleet.export" => Some(("Export.", schema::<planner::Export>())),
        "fleet.apply" => Some(("Apply.", schema::<fleet::ApplyAnswer>())),
        "fleet.status" | "fleet.check" => Some(("Status.", schema::<fleet::Status>())),
        _ => None,
    }
}

/// The generator every typed answer's schema comes from: the serialized shape (an optional
/// field left out when absent is not required; one always written is, `null` or not).
fn answer_generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
}

/// An answer's definitions as components: integer ranges stated as the inputs' are, and a
/// field the answer leaves out when absent (not required) never `null`, as it is never
/// written so (serde's `skip_serializing_if`).
fn answer_components(definitions: Map<String, Value>, components: &mut Map<String, Value>) {
    for (name, mut def) in definitions {
        numbers::state_integer_ranges(&mut def);
        planner::schema::integer_formats_to_ranges(&mut def);
        absent_not_null(&mut def);
        rewrite_refs(&mut def, "#/$defs/", "#/components/schemas/");
        add_component(components, name, def);
    }
}

/// Drops `null` from the fields of `schema`'s objects that are not required.
fn absent_not_null(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let required: Vec<String> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, field) in properties.iter_mut() {
                    if !required.contains(name) {
                        not_null(field);
                    }
                }
            }
            map.values_mut().for_each(absent_not_null);
        }
        Value::Array(items) => items.iter_mut().for_each(absent_not_null),
        _ => {}
    }
}

/// `schema` without its `null`: `"type": ["string", "null"]` is `"string"`, and an `anyOf`
/// of a schema and `{"type": "null"}` is that schema.
fn not_null(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        let kept: Vec<Value> = branches
            .iter()
            .filter(|b| **b != json!({ "type": "null" }))
            .cloned()
            .collect();
        map.remove("anyOf");
        match <[Value; 1]>::try_from(kept) {
            Ok([Value::Object(only)]) => map.extend(only),
            Ok([only]) => {
                map.insert("anyOf".into(), json!([only]));
            }
            Err(kept) => {
                map.insert("anyOf".into(), Value::Array(kept));
            }
        }
    }
}

/// Adds a component; two different schemas under one name would be a bug of ours (one
/// would silently replace the other), which debug builds, and so the tests, refuse.
fn add_component(components: &mut Map<String, Value>, name: String, schema: Value) {
    if let Some(before) = components.get(&name) {
        debug_assert_eq!(before, &schema, "two components named {name}");
    }
    components.insert(name, schema);
}

/// `GET /api/openapi.json`: generated from [`methods`].
pub fn openapi(methods: &[Method]) -> Value {
    let mut paths = Map::new();
    let mut components = Map::new();
    let mut answers = answer_generator();
    for m in methods {
        let scope = match m.scope {
            "tenant" => "the input tenant's scope (tenants/<tenantId>)".to_string(),
            "root" => "tenants/root".to_string(),
            s => s.to_string(),
        };
        let input = hoist((m.input)(), "$defs", "", &mut components);
        let answer = match (output(m.name), m.run.answer) {
            (Some((prefix, schema)), _) => hoist(schema, "$defs", prefix, &mut components),
            (None, Some(answer)) => {
                let mut schema = answer(&mut answers).to_value();
                rewrite_refs(&mut schema, "#/$defs/", "#/components/schemas/");
                schema
            }
            (None, None) => json!({ "type": "object" }),
        };
        let op = |verb: &str| {
            let mut op = json!({
                "operationId": if verb == "get" { format!("{}.get", m.name) } else { m.name.to_string() },
                "summary": m.summary,
                "description": format!("Decides {} on {scope}.", m.permission),
                "x-permission": m.permission,
                "security": [{ "bearer": [] }],
                "responses": {
                    "200": { "description": "The method's output.", "content": { "application/json": { "schema": answer } } },
                    "default": { "description": "An error.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
                },
            });
            if verb == "post" {
                // An empty body is `{}`: the body is required only when the input has a required field.
                let required = input["required"].as_array().is_some_and(|r| !r.is_empty());
                op["requestBody"] = json!({ "required": required, "content": { "application/json": { "schema": input } } });
            } else {
                op["description"] = json!(format!(
                    "Decides {} on {scope}. The input's fields as query parameters.",
                    m.permission
                ));
                op["parameters"] = Value::Array(query_parameters(&input));
            }
            op
        };
        let mut item = Map::new();
        item.insert("post".into(), op("post"));
        if m.read {
            item.insert("get".into(), op("get"));
        }
        paths.insert(format!("/api/{}", m.name), Value::Object(item));
    }
    answer_components(answers.take_definitions(true), &mut components);
    // `fleet.plan` and `fleet.apply` take a document: its schema, definitions prefixed.
    let mut document = planner::schema::document_schema();
    numbers::state_integer_ranges(&mut document);
    let document = hoist(document, "definitions", "FleetConfig.", &mut components);
    components.insert("FleetConfig".into(), document);
    paths.insert("/api/health".into(), json!({ "get": { "operationId": "health", "summary": "Liveness and the build's version; no key needed.", "security": [], "responses": { "200": { "description": "`{\"status\":\"ok\",\"version\":\"0.1.0 (6c193b6a0b1c)\"}`", "content": { "application/json": { "schema": { "type": "object", "required": ["status", "version"], "properties": { "status": { "const": "ok" }, "version": { "type": "string", "description": "The package version, and the commit when the build was told it (`better-compute --version`)." } } } } } } } } }));
    paths.insert("/api/openapi.json".into(), json!({ "get": { "operationId": "openapi", "summary": "This document (OpenAPI 3.1); no key needed.", "security": [], "responses": { "200": { "description": "The OpenAPI document of the API.", "content": { "application/json": { "schema": { "type": "object" } } } } } } }));
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": { "title": "better-compute", "version": env!("CARGO_PKG_VERSION"), "description": "A small compute-platform server with FleetConfig. Every method is POST /api/<method> with its input as the JSON body." },
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer", "description": "An API key, bc_..." } },
            "schemas": components,
        },
    });
    doc["components"]["schemas"]["Error"] = json!({
                "type": "object", "required": ["error"],
                "properties": { "error": { "type": "object", "required": ["code", "message", "details"], "properties": {
                    "code": { "enum": ["INVALID_INPUT", "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "CONFIG_DRIFT", "PLAN_BLOCKED", "CONFLICT", "PAYLOAD_TOO_LARGE", "RATE_LIMITED", "UNSUPPORTED", "INTERNAL"] },
                    "message": { "type": "string" },
                    "details": { "type": "object" },
                } } },
    });
    doc
}

/// Query parameters become the input object, typed by the input's schema: a boolean field
/// is `true` or `false` (anything else is INVALID_INPUT at that field), an integer field a
/// JSON number when it reads as one (else it stays text, which the input then refuses with
/// its path), an object or list field JSON text (kept byte for byte: a document's duplicate
/// keys are the planner's to find), everything else text.
fn query_input(pairs: Vec<(String, String)>, input: &Value) -> Result<Vec<u8>, ApiError> {
    let mut map: BTreeMap<String, Box<RawValue>> = BTreeMap::new();
    for (k, v) in pairs {
        // A repeated parameter is refused, as a body's repeated key is: taking one of the two
        // would run the call on a value its author may not have meant.
        if map.contains_key(&k) {
            let mut path = String::new();
            planner::validate::push_key(&mut path, &k);
            return Err(ApiError::invalid(path, format!("duplicate field `{k}`")));
        }
        let value = match query_type(&input["properties"][&k]) {
            Some("boolean") => match v.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    return Err(ApiError::invalid(
                        k,
                        format!("must be true or false, not {v:?}"),
                    ));
                }
            },
            Some("integer") => match serde_json::from_str::<serde_json::Number>(&v) {
                Ok(n) => Value::Number(n),
                Err(_) => Value::String(v),
            },
            Some("json") => {
                let raw = RawValue::from_string(v)
                    .map_err(|err| ApiError::invalid(&k, format!("must be JSON text: {err}")))?;
                map.insert(k, raw);
                continue;
            }
            _ => Value::String(v),
        };
        let raw = serde_json::value::to_raw_value(&value).expect("a JSON value serializes");
        map.insert(k, raw);
    }
    Ok(serde_json::to_vec(&map).expect("JSON text serializes"))
}

/// Any other HTTP method on `/api/<method>` (PUT, DELETE, OPTIONS, ...): 405 with `Allow`
/// (the method's own verbs: POST, and GET for reads) and the INVALID_INPUT envelope, not a
/// bare 405 with no body. A name that is no method's is NOT_FOUND whatever the verb.
pub async fn wrong_verb(
    State(state): State<AppState>,
    name: Result<Path<String>, PathRejection>,
    uri: Uri,
    verb: HttpMethod,
) -> Response {
    wrong_verb_of(&state, &method_name(name, &uri), &verb)
}

fn wrong_verb_of(state: &AppState, name: &str, verb: &HttpMethod) -> Response {
    let Some(method) = state.methods.iter().find(|m| m.name == name) else {
        return unknown_method(name).into_response();
    };
    let (allow, verbs) = if method.read {
        ("GET, POST", json!(["GET", "POST"]))
    } else {
        ("POST", json!(["POST"]))
    };
    let mut response = ApiError::with(
        Code::InvalidInput,
        format!(
            "{verb} is not a verb of the API: use {}",
            allow.replace(", ", " or ")
        ),
        json!({ "path": "", "allow": verbs }),
    )
    .into_response();
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response.headers_mut().insert(
        axum::http::header::ALLOW,
        axum::http::HeaderValue::from_static(allow),
    );
    response
}

/// The method named by `/api/<method>`: decoded, or as written when its decoding is no UTF-8
/// (`/api/%FF`), which then names no method.
fn method_name(name: Result<Path<String>, PathRejection>, uri: &Uri) -> String {
    match name {
        Ok(Path(name)) => name,
        Err(_) => uri
            .path()
            .strip_prefix("/api/")
            .unwrap_or(uri.path())
            .to_string(),
    }
}

/// NOT_FOUND for a name that is no method's.
fn unknown_method(name: &str) -> ApiError {
    ApiError::with(
        Code::NotFound,
        format!("unknown method {name:?}"),
        json!({ "method": name }),
    )
}

/// The request header by which a browser client asks for API errors with status 200
/// (`X-Better-Compute-Errors: in-body`); the real status travels in [`ERROR_STATUS`].
pub const ERRORS_IN_BODY: &str = "x-better-compute-errors";

/// The response header holding the real status of an error answered with 200.
pub const ERROR_STATUS: &str = "x-better-compute-status";

/// What every answer under `/api/` goes through on its way out:
///
/// - An error axum answers by itself (a route's 405 with an empty body, a rejection in
///   plain text) is put in the API's envelope, its status and headers (`Allow`) kept: a
///   client reads every error of the API the same way.
/// - A 401 says how to authenticate: `WWW-Authenticate: Bearer` (RFC 9110, section 15.5.2).
/// - Browsers log every answer of status 400 and up as an error in their developer console,
///   whatever the page makes of it (a refused sign-in, a CONFIG_DRIFT the page explains). A
///   client that reads the envelope anyway may ask for errors with status 200
///   (`X-Better-Compute-Errors: in-body`): the envelope is unchanged, and [`ERROR_STATUS`]
///   carries the status. Such an answer is no 401, so it carries no `WWW-Authenticate` (the
///   envelope's UNAUTHENTICATED says it). Every other client gets the statuses of PRODUCT.md.
pub async fn errors_in_body(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let wanted = request
        .headers()
        .get(ERRORS_IN_BODY)
        .is_some_and(|v| v.as_bytes() == b"in-body");
    let verb = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    if !is_json(&response) {
        response = in_envelope(response, &verb, &path).await;
    }
    if wanted {
        response
            .headers_mut()
            .insert(ERROR_STATUS, axum::http::HeaderValue::from(status.as_u16()));
        *response.status_mut() = StatusCode::OK;
    } else if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
    }
    response
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/json"))
}

/// An error answered outside the envelope (by axum, not by a handler), in the envelope: the
/// same status and headers, its text (if any) as the message.
async fn in_envelope(response: Response, verb: &HttpMethod, path: &str) -> Response {
    let (parts, body) = response.into_parts();
    let status = parts.status;
    // Such a body is a short sentence, or nothing; more is not read.
    let text = axum::body::to_bytes(body, 1024)
        .await
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let error = match status {
        StatusCode::METHOD_NOT_ALLOWED => {
            // axum writes `Allow` after the layers (this one too). The routes whose 405 is
            // axum's own are the GET documents (health, openapi.json): their verb is GET.
            let allow: Vec<&str> = parts
                .headers
                .get(axum::http::header::ALLOW)
                .and_then(|a| a.to_str().ok())
                .map(|a| {
                    a.split(',')
                        .map(str::trim)
                        .filter(|v| !v.is_empty())
                        .collect()
                })
                .filter(|verbs: &Vec<&str>| !verbs.is_empty())
                .unwrap_or_else(|| vec!["GET"]);
            ApiError::with(
                Code::InvalidInput,
                format!("{verb} is not a verb of {path}: use {}", allow.join(" or ")),
                json!({ "path": "", "allow": allow }),
            )
        }
        StatusCode::NOT_FOUND => ApiError::with(
            Code::NotFound,
            format!("{path} is not an API path: methods are POST /api/<method>"),
            json!({ "route": path }),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(Code::PayloadTooLarge, text),
        s if s.is_server_error() => ApiError::new(Code::Internal, "internal error"),
        _ if text.is_empty() => ApiError::invalid("", status.canonical_reason().unwrap_or("")),
        _ => ApiError::invalid("", text),
    };
    let mut response = error.into_response();
    *response.status_mut() = status;
    for (name, value) in &parts.headers {
        if name != axum::http::header::CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            response.headers_mut().insert(name.clone(), value.clone());
        }
    }
    response
}

/// Any verb on a path under `/api/` that is no method's: NOT_FOUND in the API's envelope.
pub async fn unknown_path(uri: axum::http::Uri) -> Response {
    let path = uri.path();
    ApiError::with(
        Code::NotFound,
        format!("{path} is not an API path: methods are POST /api/<method>"),
        json!({ "route": path }),
    )
    .into_response()
}

/// `POST|GET /api/<method>`.
pub async fn handle(
    State(state): State<AppState>,
    name: Result<Path<String>, PathRejection>,
    uri: Uri,
    verb: HttpMethod,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    body: Body,
) -> Response {
    let name = method_name(name, &uri);
    // GET or HEAD of a write is a verb the method lacks, like PUT: 405 (HEAD never runs one).
    if (verb == HttpMethod::GET || verb == HttpMethod::HEAD)
        && state.methods.iter().any(|m| m.name == name && !m.read)
    {
        return wrong_verb_of(&state, &name, &verb);
    }
    let started = Instant::now();
    let result = match query {
        Ok(Query(query)) => dispatch(&state, &name, &verb, &headers, query, body).await,
        Err(rejection) => Err(ApiError::invalid("", rejection.body_text())),
    };
    let status = match &result {
        Ok(_) => StatusCode::OK,
        Err(e) => e.code.status(),
    };
    tracing::info!(method = %name, http = %verb, status = status.as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "api call");
    match result {
        Ok(Answer::Value(value)) => Json(value).into_response(),
        Ok(Answer::Json(bytes)) => (
            [(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response(),
        Err(err) => {
            let too_large = err.code == Code::PayloadTooLarge;
            let mut response = err.into_response();
            if too_large {
                // What is left of the body is not read: the connection ends after the answer.
                response.headers_mut().insert(
                    axum::http::header::CONNECTION,
                    axum::http::HeaderValue::from_static("close"),
                );
            }
            response
        }
    }
}

/// How much of an oversized body is read and dropped, past [`super::BODY_LIMIT`], before the
/// 413 goes out, and for how long at most.
const DRAIN_LIMIT: usize = 4 * super::BODY_LIMIT;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads a request body of at most [`super::BODY_LIMIT`] bytes; a larger one is
/// PAYLOAD_TOO_LARGE.
///
/// The rest of an oversized body is read and dropped (up to [`DRAIN_LIMIT`] bytes and
/// [`DRAIN_TIME`]) before the answer: a server that closes a connection with unread bytes
/// makes the kernel reset it, and the client, still writing, then loses the 413 it was sent.
/// Past those bounds the connection is closed anyway; the client was sending far too much.
async fn read_body(headers: &HeaderMap, mut body: Body) -> Result<Vec<u8>, ApiError> {
    let limit = super::BODY_LIMIT;
    let too_large = || {
        ApiError::new(
            Code::PayloadTooLarge,
            format!("the request body is over {limit} bytes"),
        )
    };
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(length) = declared
        && length > limit as u64
    {
        if length <= (limit + DRAIN_LIMIT) as u64 {
            drain(&mut body, length as usize).await;
        }
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    while let Some(data) = next_data(&mut body).await {
        let data = data.map_err(|e| ApiError::invalid("", format!("reading the body: {e}")))?;
        if let Some(data) = data {
            if bytes.len() + data.len() > limit {
                drain(&mut body, DRAIN_LIMIT).await;
                return Err(too_large());
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes)
}

/// The next frame's data (`Some(None)` for trailers), or `None` at the end.
async fn next_data(body: &mut Body) -> Option<Result<Option<axum::body::Bytes>, axum::Error>> {
    let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx)).await;
    frame.map(|f| f.map(|f| f.into_data().ok()))
}

/// Reads and drops up to `budget` bytes of `body`, for at most [`DRAIN_TIME`].
async fn drain(body: &mut Body, mut budget: usize) {
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        while budget > 0
            && let Some(Ok(data)) = next_data(body).await
        {
            budget = budget.saturating_sub(data.map_or(0, |d| d.len()));
        }
    })
    .await;
}

async fn dispatch(
    state: &AppState,
    name: &str,
    verb: &HttpMethod,
    headers: &HeaderMap,
    query: Vec<(String, String)>,
    body: Body,
) -> Result<Answer, ApiError> {
    let method = state
        .methods
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| unknown_method(name))?;
    let input = if verb == HttpMethod::GET || verb == HttpMethod::HEAD {
        if !method.read {
            return Err(ApiError::invalid(
                "",
                format!("{name} changes state: use POST"),
            ));
        }
        query_input(query, &(method.input)())?
    } else {
        let body = read_body(headers, body).await?;
        if body.iter().all(u8::is_ascii_whitespace) {
            b"{}".to_vec()
        } else {
            body
        }
    };
    let auth = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok());
    let caller = iam::authenticate(state, auth).await?;
    (method.run.handler)(state, &caller, method.name, &input).await
}
