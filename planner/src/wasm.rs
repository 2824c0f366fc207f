//! The JavaScript API (wasm-bindgen), for the console and JS tooling.
//!
//! Documents and exports are accepted as JSON text, as UTF-8 bytes (`Uint8Array`, the
//! cheapest to pass in: no string re-encoding) or as plain objects (written out by the native
//! `JSON.stringify` and read as text: faster than visiting an object field by field across the
//! boundary, and the validator reads text anyway). Results are plain objects with exactly the
//! shape the server answers (one object, not a chain of getters). Most are built by
//! `JSON.parse` of the planner's own serialization; a plan's changes, thousands of
//! `{kind, name, action}`, are built by a few lines of JS from one string of names and a
//! byte per change, five times faster than parsing them. `planJson` answers the plan's JSON
//! text, for tools that write the plan out.

use crate::calls::Call;
use crate::{Change, Export, PlanHash, PlanOptions, Summary};
use js_sys::{JSON, Reflect};
use serde::Serialize;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** A JSON document given as text, as UTF-8 bytes, or as a plain object. */
export type JsonInput<T> = string | Uint8Array | ArrayBuffer | SharedArrayBuffer | T;

export type Name = string;
export interface Site { name: Name; kind: "shared" | "dedicated"; region: string }
export interface ProviderAccount { name: Name; provider: string; config: Record<string, string> }
export interface Policy { disruptionBudget: number }
export interface Offer { tenant: Name; quota: Record<string, number>; priority?: number | null | undefined }
export interface Pool {
  name: Name; site: Name; class: "vps-host" | "sandbox-host" | "provider";
  gpuModel?: string | null | undefined; providerAccount?: Name | null | undefined; policy?: Policy | null | undefined;
  ownerQuota?: Record<string, number> | null | undefined; offers?: Offer[] | null | undefined;
}
export interface Flavor { pool: Name; name: Name; vcpu: number; memoryGiB: number; diskGiB: number; gpu?: number | null | undefined }
export interface Warm { min: number; max: number }
export interface SandboxTemplate {
  name: Name; pool: Name; flavor: Name; imageId: string; env?: Record<string, string> | null | undefined;
  network: "private" | "public" | "none"; warm?: Warm | null | undefined;
}
/** A value `JSON.stringify` writes as JSON: anything but `undefined` (what it cannot write,
 * a function or a symbol, is refused when called). */
export type JsonValue = NonNullable<unknown> | null;
/** A FleetConfig document, version 1 (`null` for an optional field is the field left out). */
export interface Document {
  version: 1; sites?: Site[] | null | undefined; providerAccounts?: ProviderAccount[] | null | undefined; pools?: Pool[] | null | undefined;
  flavors?: Flavor[] | null | undefined; sandboxTemplates?: SandboxTemplate[] | null | undefined;
}
export type Kind = "site" | "providerAccount" | "pool" | "ownerQuota" | "offer" | "flavor" | "sandboxTemplate";
export type Section = "sites" | "providerAccounts" | "pools" | "flavors" | "sandboxTemplates";
export interface ObjectRef { kind: Kind; name: string; id?: string | undefined; revision: number; usedBy?: ExternalUser | undefined }
export interface ExternalUser { tenantId: string; kind: Kind; name: string }
export interface OfferedPool { id: string; flavors?: { name: string; id: string }[] | undefined }
/** What `fleet.export` answers: the state a plan diffs against. */
export interface Export {
  tenantId: string; caller: string; config: Document; missing?: Section[] | undefined;
  objects?: ObjectRef[] | undefined; tenants?: string[] | undefined; offeredPools?: OfferedPool[] | undefined;
}
export interface PlanOptions { prune?: boolean | undefined }
/** One problem of a document: where, and what in a sentence. */
export interface Problem { path: string; message: string }
export type ValidateResult = { ok: true; document: Document } | { ok: false; problems: Problem[] };
export type Action = "create" | "update" | "delete" | "unchanged";
export interface Change {
  kind: Kind; name: string; action: Action; fields?: string[];
  before?: Record<string, unknown>; after?: Record<string, unknown>;
  blocked?: true; note?: string; reason?: string;
}
/** One API call: `POST /api/<method>` with `input` as the body. */
export interface Call { method: string; input: { tenantId: string } & Record<string, unknown> }
export interface Summary { create: number; update: number; delete: number; unchanged: number; blocked?: true }
export interface Plan { changes: Change[]; calls: Call[]; summary: Summary; planHash: string }
/** Thrown by `plan` for a document that does not validate. */
export interface InvalidInputError extends Error { code: "INVALID_INPUT"; problems: Problem[] }
/** Thrown by `plan` for an export it cannot read: where (`objects[0].revision`; empty for the
 * whole export), and in its message what, with its place. */
export interface ExportError extends Error { path: string }
"#;

/// Validates a document. Answers `{ok: true, document}` with the document as the planner
/// reads it, or `{ok: false, problems}` with every problem and its path.
#[wasm_bindgen(unchecked_return_type = "ValidateResult")]
pub fn validate(
    #[wasm_bindgen(unchecked_param_type = "JsonInput<Document>")] doc: JsValue,
) -> Result<JsValue, JsValue> {
    let bytes = json_bytes(&doc, "the document")?;
    let validated = match crate::validate(&bytes) {
        Ok(document) => to_js(&Validated {
            ok: true,
            document: Some(&document),
            problems: None,
        }),
        Err(invalid) => to_js(&Validated {
            ok: false,
            document: None,
            problems: Some(&invalid.problems),
        }),
    };
    Ok(validated?)
}

/// Plans `doc` against `exported` (what `fleet.export` answered) with `options`
/// (`{prune}`). Throws an `InvalidInputError` (`code`, `problems`) when the document does
/// not validate.
#[wasm_bindgen(unchecked_return_type = "Plan")]
pub fn plan(
    #[wasm_bindgen(unchecked_param_type = "JsonInput<Document>")] doc: JsValue,
    #[wasm_bindgen(unchecked_param_type = "JsonInput<Export>")] exported: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "PlanOptions | null")] options: Option<JsValue>,
) -> Result<JsValue, JsValue> {
    let plan = planned(doc, exported, options)?;
    to_js_plan(&plan)
}

/// `plan`, answered as the plan's JSON text: for tools that write the plan out or send it on,
/// it skips building JS objects (and the `JSON.stringify` that would undo them).
#[wasm_bindgen(js_name = planJson)]
pub fn plan_json(
    #[wasm_bindgen(unchecked_param_type = "JsonInput<Document>")] doc: JsValue,
    #[wasm_bindgen(unchecked_param_type = "JsonInput<Export>")] exported: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "PlanOptions | null")] options: Option<JsValue>,
) -> Result<String, JsValue> {
    Ok(serde_json::to_string(&planned(doc, exported, options)?).map_err(JsError::from)?)
}

/// The largest document `plan` keeps as bytes while it plans (see `planned`).
const BORROW_UP_TO: usize = 256 << 20;

fn planned(
    doc: JsValue,
    exported: JsValue,
    options: Option<JsValue>,
) -> Result<crate::Plan, JsValue> {
    // Every argument is read out of JS before the planner allocates anything: JS that throws
    // would unwind through Rust frames without running their destructors (see `json_bytes`).
    let bytes = json_bytes(&doc, "the document")?;
    let export = json_bytes(&exported, "the export")?;
    let options = options_json(options.as_ref().unwrap_or(&JsValue::UNDEFINED))?;
    // A document borrows its strings from its bytes. A big one owns them instead, and its
    // bytes are freed before the export is read: wasm32 has 4 GiB, and a 1 GiB document and a
    // 1 GiB export, every string escaped (so copied out), need more than that at once.
    let kept;
    let document = if bytes.len() > BORROW_UP_TO {
        let document = crate::validate(&bytes).map_err(invalid_input)?.into_owned();
        drop(bytes);
        document
    } else {
        kept = bytes;
        crate::validate(&kept).map_err(invalid_input)?
    };
    let export = read_export(&export)?;
    let options: PlanOptions = match options {
        Some(text) => {
            // PlanOptions refuses unknown fields: `{Prune: true}` must not plan without prune.
            serde_json::from_str(&text)
                .map_err(|e| JsError::new(&format!("options: {e}; expected {{prune?: boolean}}")))?
        }
        None => PlanOptions::default(),
    };
    Ok(crate::plan(&document, &export, options))
}

/// The planHash of a JSON value (text, UTF-8 bytes or a plain value): lowercase hex SHA-256
/// of its RFC 8785 form.
#[wasm_bindgen(js_name = canonicalHash)]
pub fn canonical_hash(
    #[wasm_bindgen(unchecked_param_type = "JsonInput<JsonValue>")] json: JsValue,
) -> Result<String, JsValue> {
    Ok(crate::PlanHash::of(&json_value(json)?).0)
}

/// The RFC 8785 (JCS) canonical form of a JSON value (text, UTF-8 bytes or a plain value).
#[wasm_bindgen(js_name = canonicalJson)]
pub fn canonical_json(
    #[wasm_bindgen(unchecked_param_type = "JsonInput<JsonValue>")] json: JsValue,
) -> Result<String, JsValue> {
    Ok(crate::canonicalize(&json_value(json)?))
}

/// A JSON value given as text or bytes, or a JS value written out by `JSON.stringify`.
fn json_value(json: JsValue) -> Result<serde_json::Value, JsValue> {
    // With `any_value`, a number, a boolean or `null` is JSON too.
    let bytes = js_json_bytes(&json, "the JSON", true)?;
    serde_json::from_slice(&bytes).map_err(|err| {
        // Placed as `validate` places it: the column in characters, from 1.
        let words = match std::str::from_utf8(&bytes) {
            Ok(text) => crate::validate::json_error(text, &err),
            Err(_) => err.to_string(),
        };
        // serde_json reads lists and objects 127 deep (its recursion limit): deeper JSON is
        // valid, so say what the planner does not read rather than blame the text.
        let why = if words.starts_with("recursion limit exceeded") {
            "nests lists and objects deeper than the 127 levels the planner reads"
        } else {
            "is not valid JSON"
        };
        JsError::new(&format!("the JSON {why}: {words}")).into()
    })
}

/// The JSON Schema (draft 7) of a document, for editors and JS validators.
///
/// The committed `planner/fleet.schema.json`, which the test `the_committed_schema_file_is_current`
/// holds equal to [`crate::schema::document_schema`] (the model's schema, generated by
/// schemars): shipping the file, not the generator, keeps schemars out of the `.wasm`.
#[wasm_bindgen(js_name = documentSchema, unchecked_return_type = "Record<string, unknown>")]
pub fn document_schema() -> Result<JsValue, JsError> {
    JSON::parse(include_str!("../fleet.schema.json"))
        .map_err(|_| JsError::new("the committed schema is not JSON"))
}

#[derive(Serialize)]
struct Validated<'a> {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    document: Option<&'a crate::Document<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    problems: Option<&'a [crate::Problem]>,
}

/// A document or export given as text, UTF-8 bytes (a `Uint8Array`, an `ArrayBuffer` or a
/// `SharedArrayBuffer`) or an object, as bytes. Other values (numbers, other typed arrays,
/// `null`) are refused: they are no JSON document, and reading them as objects would only give
/// confusing problems.
///
/// Read by the snippet `jsonBytes`, whose every JS exception (a detached buffer, a revoked
/// proxy, a throwing getter) is caught and answered as an `Err`: an exception thrown through
/// Rust frames would skip their destructors and leak what they hold for good.
///
/// Text is checked for unpaired surrogates by one native call and encoded by `TextEncoder`:
/// a string costs what its bytes cost and the encoding (a check from wasm was one JS call per
/// UTF-16 unit, twice the cost of bytes).
fn json_bytes(value: &JsValue, what: &str) -> Result<Vec<u8>, JsValue> {
    js_json_bytes(value, what, false)
}

/// The export, or an Error naming it with the problem's `path` as a property (an empty one
/// for the whole export), for tools that point at the value.
fn read_export(bytes: &[u8]) -> Result<Export<'_>, JsValue> {
    Export::from_json(bytes).map_err(|e| {
        let error = js_sys::Error::new(&format!("the export: {e}"));
        // Setting a property on a fresh Error object cannot fail.
        let _ = Reflect::set(&error, &"path".into(), &e.path.as_str().into());
        error.into()
    })
}

/// `JSON.parse` of the serialization: one native call instead of one per field.
fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsError> {
    let text = serde_json::to_string(value)?;
    JSON::parse(&text).map_err(|_| JsError::new("the planner produced JSON that JS cannot parse"))
}

// Builds a plan from its parts (see `to_js_plan`). The tables are `Kind` and `Action` in
// declaration order.
#[wasm_bindgen(inline_js = r#"
// The arguments' readers: each answers a plain Error naming the argument for what it refuses,
// and lets no other exception out (see json_bytes).
const isA = (value, type) => { try { return value instanceof type; } catch { return false; } };
// The built-in getters, which read a typed array's or a buffer's own internal slots: a
// subclass or an own property may say another `length` (the glue copies as many bytes as
// the view holds into room for `length`), and a Proxy of a buffer is no buffer. Each throws
// for anything but the real thing.
const getter = (type, name) => Object.getOwnPropertyDescriptor(type.prototype, name).get;
const TypedArray = Object.getPrototypeOf(Uint8Array);
const [viewBuffer, viewOffset, viewLength] =
  ['buffer', 'byteOffset', 'byteLength'].map((name) => getter(TypedArray, name));
const bufferLength = getter(ArrayBuffer, 'byteLength');
const sharedLength = typeof SharedArrayBuffer === 'function' ? getter(SharedArrayBuffer, 'byteLength') : undefined;
// Brand checks read internal slots, so they know a typed array, a buffer, a Map or a boxed
// primitive made in another realm (a `vm` context, an iframe), which `instanceof` does not.
// The tag (`[object Map]`) comes first: a brand check that fails throws, too slow for every
// object of a document.
const typedArrayName = Object.getOwnPropertyDescriptor(TypedArray.prototype, Symbol.toStringTag).get;
const objectTag = (value) => { try { return Object.prototype.toString.call(value); } catch { return ''; } };
const [mapSize, setSize] = [getter(Map, 'size'), getter(Set, 'size')];
const branded = (method, value) => { try { method.call(value); return true; } catch { return false; } };
const isUint8Array = (value) => isA(value, Uint8Array) || typedArrayName.call(value) === 'Uint8Array';
const isBuffer = (value) => isA(value, ArrayBuffer) || branded(bufferLength, value);
const isShared = (value) =>
  sharedLength !== undefined && (isA(value, SharedArrayBuffer) || branded(sharedLength, value));
const collection = (value, tag = objectTag(value)) => {
  if (isA(value, Map) || (tag === '[object Map]' && branded(mapSize, value))) return 'Map';
  if (isA(value, Set) || (tag === '[object Set]' && branded(setSize, value))) return 'Set';
  return undefined;
};
// What JSON.stringify writes for a boxed primitive (an object of tag `tag`): its value.
function unboxed(value, tag) {
  switch (tag) {
    case '[object Number]': return branded(Number.prototype.valueOf, value) ? Number(value) : value;
    case '[object String]': return branded(String.prototype.valueOf, value) ? String(value) : value;
    case '[object Boolean]':
      return branded(Boolean.prototype.valueOf, value) ? Boolean.prototype.valueOf.call(value) : value;
    default: return value;
  }
}
const encoder = new TextEncoder();
// JSON.stringify changes what it cannot write, unseen: a Map or a Set becomes {}, a number
// that is not finite null, and a function, a symbol or undefined in a list is left out (null).
// A document so changed would plan as something its author did not write: refused instead.
class Unwritable extends Error {}
// A walk of its own before JSON.stringify, not a replacer: with a replacer V8 leaves its fast
// path, and an object document took half as long again to validate.
function strictly(value, key, inList) {
  const at = () => (key === undefined ? '' : ` at key ${JSON.stringify(key)}`);
  // What is checked is what JSON.stringify writes: a toJSON's answer anywhere (called once,
  // with the key, as JSON.stringify calls it), a boxed primitive's value (a boxed NaN).
  if (typeof value === 'object' && value !== null && typeof value.toJSON === 'function') {
    value = value.toJSON(key === undefined ? '' : key);
  }
  const tag = typeof value === 'object' && value !== null ? objectTag(value) : '';
  value = unboxed(value, tag);
  switch (typeof value) {
    case 'string':
      // TextEncoder would write an unpaired surrogate as U+FFFD, and JSON.stringify as an
      // escape the reader refuses with a column in text nobody wrote: said here, where it is.
      if (!wellFormed(value)) {
        throw new Unwritable(`holds a string with an unpaired UTF-16 surrogate${at()}, which is not Unicode text`);
      }
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new Unwritable(`holds ${value}${at()}, which is no JSON number`);
      return;
    case 'undefined':
      if (inList) throw new Unwritable(`holds undefined${at()}, which JSON cannot hold`);
      return;
    case 'function':
    case 'symbol':
      throw new Unwritable(`holds a ${typeof value}${at()}, which JSON cannot hold`);
    case 'object':
      if (value === null) return;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) strictly(value[i], String(i), true);
        return;
      }
      const kind = collection(value, tag);
      if (kind !== undefined) {
        throw new Unwritable(`holds a ${kind}${at()}, which JSON.stringify writes as {}: give a plain object`);
      }
      for (const name of Object.keys(value)) {
        if (!wellFormed(name)) {
          throw new Unwritable('holds a key with an unpaired UTF-16 surrogate, which is not Unicode text');
        }
        strictly(value[name], name, false);
      }
      return;
    default:
      return; // a boolean; a BigInt, which JSON.stringify refuses
  }
}
// The JSON text of `value`, or undefined when it has none; a refusal of `strictly` names
// `what`. (A cycle, a BigInt, a throwing getter: no text.)
const written = (value, what) => {
  try {
    strictly(value);
    return JSON.stringify(value);
  } catch (error) {
    if (error instanceof Unwritable) throw new Error(`${what} ${error.message}`);
    return undefined;
  }
};
// One native call (Node 20, current browsers), not one charCodeAt per UTF-16 unit from wasm.
const wellFormed = typeof ''.isWellFormed === 'function'
  ? (text) => text.isWellFormed()
  : (text) => !/\p{Surrogate}/u.test(text);
// wasm32 allocates less than 2 GiB at once (a larger copy into wasm trapped): 1 GiB is read,
// with room for the rest of the planner's work.
const LIMIT = 2 ** 30;
const sized = (bytes, what) => {
  if (bytes.length > LIMIT) {
    throw new Error(`${what} is ${bytes.length} bytes; the planner reads JSON of up to 1 GiB (${LIMIT} bytes)`);
  }
  return bytes;
};
export function jsonBytes(value, what, anyValue) {
  if (typeof value === 'string') {
    // TextEncoder would replace an unpaired surrogate with U+FFFD unseen, and the document
    // would plan as something its author did not write (as an object, it fails to read).
    if (!wellFormed(value)) {
      throw new Error(`${what} holds an unpaired UTF-16 surrogate, which is not Unicode text`);
    }
    return sized(encoder.encode(value), what);
  }
  if (isUint8Array(value)) {
    // The glue allocates in wasm memory, then copies: a copy that throws (a Proxy's trap, a
    // transferred buffer) would leak the allocation, and one of more bytes than it made room
    // for would write past it. What goes on is a plain view of the bytes the array really
    // holds, read by the built-in getters.
    let bytes;
    try {
      bytes = new Uint8Array(viewBuffer.call(value), viewOffset.call(value), viewLength.call(value));
    } catch {
      throw new Error(`${what} is a Uint8Array that cannot be read (a proxy of one, or its buffer was transferred)`);
    }
    return sized(bytes, what);
  }
  const buffer = isBuffer(value);
  if (buffer || isShared(value)) {
    let bytes;
    try {
      const length = buffer ? bufferLength.call(value) : sharedLength.call(value);
      bytes = new Uint8Array(value, 0, length);
    } catch {
      throw new Error(`${what} is an ArrayBuffer that cannot be read (a proxy of one, or its bytes were transferred)`);
    }
    return sized(bytes, what);
  }
  const object = typeof value === 'object' && value !== null;
  let isView = false;
  try { isView = object && ArrayBuffer.isView(value); } catch {}
  if (isView || !(object || anyValue)) {
    throw new Error(`${what} must be JSON text, UTF-8 bytes (a Uint8Array) or an object`);
  }
  // The validator reads bytes (it must see duplicate keys in text); an object has none, and
  // JSON.stringify keeps its key order, so problems come in document order.
  const text = written(value, what);
  if (text === undefined) throw new Error(`${what} cannot be written as JSON`);
  return sized(encoder.encode(text), what);
}
export function optionsJson(options) {
  if (options === undefined || options === null) return undefined;
  const refused = (why) => new Error(`options: ${why}; expected {prune?: boolean}`);
  let array = false;
  try { array = Array.isArray(options); } catch { throw refused('cannot be written as JSON'); }
  if (typeof options !== 'object' || array) throw refused('not an object');
  // JSON.stringify writes a Map as {}, and only own properties: a prune in a Map, a getter
  // of a class or a prototype would be dropped unseen.
  if (collection(options) !== undefined) throw refused('a Map or Set, not a plain object');
  let plain = false;
  try {
    const prototype = Object.getPrototypeOf(options);
    // Object.prototype, this realm's or another's (whose own prototype is null).
    plain = prototype === Object.prototype || prototype === null
      || (Object.getPrototypeOf(prototype) === null
        && Object.prototype.hasOwnProperty.call(prototype, 'isPrototypeOf'));
  } catch {}
  if (!plain) throw refused('not a plain object (its prototype\'s properties would be left out)');
  const text = written(options, 'options:');
  if (text === undefined) throw refused('cannot be written as JSON');
  return text;
}
const KINDS = ['site', 'providerAccount', 'pool', 'ownerQuota', 'offer', 'flavor', 'sandboxTemplate'];
const ACTIONS = ['create', 'update', 'delete', 'unchanged'];
export function planFromParts(names, ends, codes, full, rest) {
  const more = JSON.parse(full);
  const changes = new Array(codes.length);
  for (let i = 0, start = 0, k = 0; i < codes.length; i++) {
    const code = codes[i];
    changes[i] = code & 1
      ? more[k++]
      : { kind: KINDS[code >> 3], name: names.slice(start, ends[i]), action: ACTIONS[(code >> 1) & 3] };
    start = ends[i];
  }
  const { calls, summary, planHash } = JSON.parse(rest);
  return { changes, calls, summary, planHash };
}
"#)]
extern "C" {
    #[wasm_bindgen(catch, js_name = jsonBytes)]
    fn js_json_bytes(value: &JsValue, what: &str, any_value: bool) -> Result<Vec<u8>, JsValue>;
    #[wasm_bindgen(catch, js_name = optionsJson)]
    fn options_json(options: &JsValue) -> Result<Option<String>, JsValue>;
    #[wasm_bindgen(catch, js_name = planFromParts)]
    fn plan_from_parts(
        names: &str,
        ends: &[u32],
        codes: &[u8],
        full: &str,
        rest: &str,
    ) -> Result<JsValue, JsValue>;
}

/// A plan as JS objects. A change with only `kind`, `name` and `action` (nearly all of them)
/// travels as its name in one string, its end there and one byte: kind << 3 | action << 1.
/// The other changes (code | 1) and the rest of the plan go as JSON.
fn to_js_plan(plan: &crate::Plan) -> Result<JsValue, JsValue> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Rest<'a> {
        calls: &'a [Call],
        summary: &'a Summary,
        plan_hash: &'a PlanHash,
    }
    let mut names = String::new();
    let mut ends = Vec::with_capacity(plan.changes.len());
    let mut codes = Vec::with_capacity(plan.changes.len());
    let mut full: Vec<&Change> = Vec::new();
    let mut end = 0u32;
    for change in &plan.changes {
        let action = match change.action {
            crate::Action::Create => 0,
            crate::Action::Update => 1,
            crate::Action::Delete => 2,
            crate::Action::Unchanged => 3,
        };
        let mut code = (change.kind as u8) << 3 | action << 1;
        // A bare change's name is a document's (ASCII) names joined: its bytes are its
        // UTF-16 units. Anything else travels as JSON.
        if change.is_bare() && change.name.is_ascii() {
            names.push_str(&change.name);
            end += change.name.len() as u32;
        } else {
            code |= 1;
            full.push(change);
        }
        ends.push(end);
        codes.push(code);
    }
    let rest = Rest {
        calls: &plan.calls,
        summary: &plan.summary,
        plan_hash: &plan.plan_hash,
    };
    let full = serde_json::to_string(&full).map_err(JsError::from)?;
    let rest = serde_json::to_string(&rest).map_err(JsError::from)?;
    plan_from_parts(&names, &ends, &codes, &full, &rest)
}

/// An `Error` with `code: "INVALID_INPUT"` and `problems`, as the server's error details.
fn invalid_input(invalid: crate::Invalid) -> JsValue {
    let error = js_sys::Error::new(&invalid.to_string());
    let problems = to_js(&invalid.problems).unwrap_or(JsValue::NULL);
    // Setting properties on a fresh Error object cannot fail.
    let _ = Reflect::set(&error, &"code".into(), &"INVALID_INPUT".into());
    let _ = Reflect::set(&error, &"problems".into(), &problems);
    error.into()
}
