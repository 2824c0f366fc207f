// The generated JSON Schema (documentSchema(), = ../../fleet.schema.json) against the
// validator, by properties (fast-check): documents near valid ones (a valid document with one
// field set to an edge value, written as JSON text so that number spellings such as 1e0 or
// 1.0 and repeated keys reach the validator as written; ajv is given JSON.parse of the same
// text), a few fields at once, and arbitrary JSON.
//
//   1. whatever validate accepts, ajv accepts;
//   2. whatever ajv rejects, validate rejects;
//   3. a single mutation the schema can express (every kind in EXPRESSIBLE below): both agree
//      exactly, unless the document happens to break a rule only the validator knows
//      (VALIDATOR_ONLY below: a repeated JSON key, a repeated name, warm min > max, a string
//      escaping a lone surrogate). Checked on random single mutations (one property per group
//      of kinds, GROUPS), on every edge value in every field of a full document (a table, no
//      randomness), and character by character for names, resource names, free text and
//      config keys;
//   4. a document that breaks a rule only the validator knows is refused by validate.
//
// References between items (a pool's site, a template's flavor, a provider pool's account
// naming an account of the document) are not the validator's either: the plan resolves them,
// so neither side looks at them here.
//
// The run is reproducible: fast-check's seed is fixed (FC_SEED overrides it, FC_RUNS scales
// the number of runs) and printed with the shrunk counterexample when a property fails; each
// failure also prints the document's text, validate's answer and ajv's errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import Ajv from 'ajv';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const planner = require(join(here, '..', 'pkg-node', 'planner.js'));
const check = new Ajv({ allErrors: true, strict: true, strictRequired: false }).compile(
  planner.documentSchema(),
);

const SEED = Number(process.env.FC_SEED ?? 20261201);
const SCALE = Number(process.env.FC_RUNS ?? 1);
const runs = (n) => Math.max(1, Math.round(n * SCALE));

// ---------------------------------------------------------------------------------------------
// JSON text written by hand: numbers as written, keys repeated, strings escaped as chosen.

/** A JSON value written as this very text (a number spelled `1e0`, `-0`, `1e400`). */
class Raw {
  constructor(text) {
    this.text = text;
  }
}
/** An object as its entries in order, a key possibly repeated: `[key, value, keyText?]`,
 * `keyText` the key as written (another spelling of the same key). */
class Entries {
  constructor(list) {
    this.list = list;
  }
}
const raw = (text) => new Raw(text);

const ownEntries = (object) => Object.keys(object).map((key) => [key, object[key]]);
const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw) && !(v instanceof Entries);
/** Sets an own property, even `__proto__`. */
const setOwn = (object, key, value) =>
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });

function clone(value) {
  if (value instanceof Raw) return value;
  if (value instanceof Entries) return new Entries(value.list.map(([k, v, t]) => [k, clone(v), t]));
  if (Array.isArray(value)) return value.map(clone);
  if (isPlainObject(value)) {
    const out = {};
    for (const [k, v] of ownEntries(value)) setOwn(out, k, clone(v));
    return out;
  }
  return value;
}

/** A JSON string: `plain` as JSON.stringify writes it, `upper` with every non-ASCII character
 * (and control, quote, backslash) as \uXXXX, `all` with every character escaped. */
function quote(text, mode) {
  if (mode === 'plain') return JSON.stringify(text);
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0);
    if (mode === 'all' || code < 0x20 || code > 0x7e || ch === '"' || ch === '\\') {
      for (let i = 0; i < ch.length; i++) {
        const hex = ch.charCodeAt(i).toString(16).padStart(4, '0');
        out += '\\u' + (mode === 'upper' ? hex.toUpperCase() : hex);
      }
    } else {
      out += ch;
    }
  }
  return out + '"';
}

/** `value` as JSON text in `style`; `state.repeatedKey` is set when an object repeats a key. */
function write(value, style, state) {
  if (value instanceof Raw) return value.text;
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    assert.ok(Number.isFinite(value), `no JSON for ${value}`);
    return JSON.stringify(value);
  }
  if (typeof value === 'string') return quote(value, style.strings);
  const gap = style.gap;
  if (Array.isArray(value)) {
    return '[' + gap + value.map((v) => write(v, style, state)).join(',' + gap) + gap + ']';
  }
  const list = value instanceof Entries ? value.list : ownEntries(value);
  const seen = new Set();
  for (const [key] of list) {
    if (seen.has(key)) state.repeatedKey = true;
    seen.add(key);
  }
  const body = list.map(([k, v, t]) => (t ?? quote(k, style.keys)) + gap + ':' + gap + write(v, style, state));
  return '{' + gap + body.join(',' + gap) + gap + '}';
}

const styleArb = fc.record({
  strings: fc.constantFrom('plain', 'plain', 'upper', 'all'),
  keys: fc.constantFrom('plain', 'plain', 'plain', 'upper', 'all'),
  gap: fc.constantFrom('', '', ' ', '\n', '\t', '\r\n  '),
});

// ---------------------------------------------------------------------------------------------
// What the schema cannot say: the validator's cross-item rules, judged on the parsed document.

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const isName = (v) => typeof v === 'string' && NAME.test(v);
const U32_MAX = 4294967295;

/** The rules of VALIDATOR_ONLY that `doc` (parsed) breaks. */
function validatorOnlyRules(doc, repeatedKey) {
  const broken = [];
  if (repeatedKey) broken.push('a repeated JSON key');
  const unicode = (v) => {
    if (typeof v === 'string') return v.isWellFormed();
    if (v === null || typeof v !== 'object') return true;
    return Object.keys(v).every((k) => k.isWellFormed() && unicode(v[k]));
  };
  if (!unicode(doc)) broken.push('a string that is no Unicode text (an escaped lone surrogate)');
  if (!isPlainObject(doc)) return broken;
  const items = (list) => (Array.isArray(list) ? list.filter(isPlainObject) : []);
  const repeated = (list, keyOf, what) => {
    const seen = new Set();
    for (const item of list) {
      const key = keyOf(item);
      if (key === undefined) continue;
      if (seen.has(key)) broken.push(`a repeated ${what}: ${key}`);
      seen.add(key);
    }
  };
  const byName = (field) => (item) => (isName(item[field]) ? item[field] : undefined);
  repeated(items(doc.sites), byName('name'), 'site name');
  repeated(items(doc.providerAccounts), byName('name'), 'provider account name');
  repeated(items(doc.pools), byName('name'), 'pool name');
  repeated(items(doc.sandboxTemplates), byName('name'), 'sandbox template name');
  repeated(
    items(doc.flavors),
    (f) => (isName(f.pool) && isName(f.name) ? `${f.pool}/${f.name}` : undefined),
    'flavor name in its pool',
  );
  for (const pool of items(doc.pools)) repeated(items(pool.offers), byName('tenant'), 'offer tenant');
  const u32 = (v) => Number.isInteger(v) && v >= 0 && v <= U32_MAX;
  for (const template of items(doc.sandboxTemplates)) {
    const warm = template.warm;
    if (isPlainObject(warm) && u32(warm.min) && u32(warm.max) && warm.min > warm.max) {
      broken.push('warm min > max');
    }
  }
  return broken;
}

// ---------------------------------------------------------------------------------------------
// Valid documents to start from.

/** A valid document with every optional field; names are unlike the edge values below. */
function fullDocument() {
  return {
    version: 1,
    sites: [
      { name: 'fra', kind: 'shared', region: 'eu-central' },
      { name: 'ams', kind: 'dedicated', region: 'eu-west' },
    ],
    providerAccounts: [
      {
        name: 'cloud',
        provider: 'hetzner-cloud',
        config: { token: 'secret://hetzner', location: 'fsn1', dbPassword: 'env://DB_PW', apiKey: 'vault://kv/x' },
      },
    ],
    pools: [
      {
        name: 'vps-fra',
        site: 'fra',
        class: 'vps-host',
        gpuModel: 'L40S',
        policy: { disruptionBudget: 0.1 },
        ownerQuota: { gpu: 8, vcpu: 128 },
        offers: [
          { tenant: 'acme', quota: { vcpu: 64, gpu: 2 }, priority: 5 },
          { tenant: 'globex', quota: {} },
        ],
      },
      { name: 'burst', site: 'ams', class: 'provider', providerAccount: 'cloud' },
      { name: 'sbx', site: 'fra', class: 'sandbox-host', providerAccount: null },
    ],
    flavors: [
      { pool: 'vps-fra', name: 'g1.small', vcpu: 2, memoryGiB: 4, diskGiB: 40, gpu: 0 },
      { pool: 'sbx', name: 'g1.small', vcpu: 1, memoryGiB: 1, diskGiB: 0 },
    ],
    sandboxTemplates: [
      {
        name: 'py-small',
        pool: 'sbx',
        flavor: 'g1.small',
        imageId: 'ubuntu-24.04',
        env: { PIP_INDEX_URL: 'https://pypi.org/simple', GITHUB_TOKEN: 'env://GH_TOKEN' },
        network: 'private',
        warm: { min: 2, max: 4 },
      },
    ],
  };
}

/** Optional fields a valid document may leave out or set to `null`. */
const OPTIONAL = [
  ['sites'],
  ['providerAccounts'],
  ['pools'],
  ['flavors'],
  ['sandboxTemplates'],
  ['pools', 0, 'gpuModel'],
  ['pools', 0, 'policy'],
  ['pools', 0, 'ownerQuota'],
  ['pools', 0, 'offers'],
  ['pools', 0, 'offers', 0, 'priority'],
  ['pools', 2, 'providerAccount'],
  ['flavors', 0, 'gpu'],
  ['sandboxTemplates', 0, 'env'],
  ['sandboxTemplates', 0, 'warm'],
];

/** Free text both sides accept. */
const VALID_TEXT = [
  'eu-central',
  'x',
  ' x ',
  '\u0085', // NEL: no white space for the schema's \s, nor for the validator
  'a\u00a0b',
  '\u2028x\u2029',
  'x'.repeat(200),
  '\u00e9'.repeat(200),
  '\u{1F600}'.repeat(200),
  'e\u0301'.repeat(100),
];

const baseArb = fc
  .record({
    // Mostly kept, so that most mutations find the field they are about.
    optional: fc.tuple(
      ...OPTIONAL.map(() =>
        fc.oneof({ weight: 6, arbitrary: fc.constant('keep') }, { weight: 1, arbitrary: fc.constantFrom('drop', 'null') }),
      ),
    ),
    emptyLists: fc.oneof(
      { weight: 5, arbitrary: fc.constant([]) },
      { weight: 1, arbitrary: fc.subarray(['sites', 'providerAccounts', 'pools', 'flavors', 'sandboxTemplates', 'offers']) },
    ),
    region: fc.constantFrom(...VALID_TEXT),
    provider: fc.constantFrom(...VALID_TEXT),
    gpuModel: fc.constantFrom(...VALID_TEXT),
    imageId: fc.constantFrom(...VALID_TEXT),
  })
  .map(({ optional, emptyLists, region, provider, gpuModel, imageId }) => {
    const doc = fullDocument();
    doc.sites[1].region = region;
    doc.providerAccounts[0].provider = provider;
    doc.pools[0].gpuModel = gpuModel;
    doc.sandboxTemplates[0].imageId = imageId;
    for (const list of emptyLists) {
      if (list !== 'offers') doc[list] = [];
      else if (doc.pools.length > 0) doc.pools[0].offers = [];
    }
    // Innermost first, so that dropping a list does not hide its fields.
    OPTIONAL.map((path, i) => [path, optional[i]])
      .reverse()
      .forEach(([path, mode]) => {
        const parent = at(doc, path.slice(0, -1));
        const key = path[path.length - 1];
        if (parent === undefined || parent === null || !(key in parent)) return;
        if (mode === 'drop') {
          if (Array.isArray(parent)) return;
          delete parent[key];
        } else if (mode === 'null') {
          parent[key] = null;
        }
      });
    return doc;
  });

function at(value, path) {
  for (const step of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = value instanceof Entries ? value.list.find(([k]) => k === step)?.[1] : value[step];
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// The document's fields, as the model describes them: what kind of value each holds.

const OBJECTS = {
  document: { version: 'version', sites: 'list:site', providerAccounts: 'list:account', pools: 'list:pool', flavors: 'list:flavor', sandboxTemplates: 'list:template' },
  site: { name: 'name', kind: 'siteKind', region: 'text' },
  account: { name: 'name', provider: 'text', config: 'config' },
  pool: { name: 'name', site: 'name', class: 'poolClass', gpuModel: 'text', providerAccount: 'name', policy: 'policy', ownerQuota: 'quota', offers: 'list:offer' },
  offer: { tenant: 'name', quota: 'quota', priority: 'priority' },
  flavor: { pool: 'name', name: 'name', vcpu: 'u32min1', memoryGiB: 'u32min1', diskGiB: 'u32', gpu: 'u32' },
  template: { name: 'name', pool: 'name', flavor: 'name', imageId: 'text', env: 'config', network: 'network', warm: 'warm' },
  policy: { disruptionBudget: 'budget' },
  warm: { min: 'u32', max: 'u32' },
};
const REQUIRED = {
  document: ['version'],
  site: ['name', 'kind', 'region'],
  account: ['name', 'provider', 'config'],
  pool: ['name', 'site', 'class'],
  offer: ['tenant', 'quota'],
  flavor: ['pool', 'name', 'vcpu', 'memoryGiB', 'diskGiB'],
  template: ['name', 'pool', 'flavor', 'imageId', 'network'],
  policy: ['disruptionBudget'],
  warm: ['min', 'max'],
};

/**
 * Every place of `doc` a mutation can reach: `{path, kind, object?, present}`. Kinds are those
 * of OBJECTS, `object:<type>` for an object itself, `item:<type>` for a list item, and
 * `configEntry`/`quotaEntry` for an entry of a map (`configMap`/`quotaMap` for the map).
 */
function places(doc) {
  const out = [];
  const visitObject = (value, type, path) => {
    out.push({ path, kind: `object:${type}`, object: type, present: true });
    for (const [field, kind] of Object.entries(OBJECTS[type])) {
      const present = Object.prototype.hasOwnProperty.call(value, field);
      out.push({ path: [...path, field], kind, object: type, present, field });
      if (present) visitValue(value[field], kind, [...path, field]);
    }
  };
  const visitValue = (value, kind, path) => {
    if (kind.startsWith('list:') && Array.isArray(value)) {
      const type = kind.slice(5);
      value.forEach((item, i) => {
        out.push({ path: [...path, i], kind: `item:${type}`, present: true });
        if (isPlainObject(item)) visitObject(item, type, [...path, i]);
      });
    } else if ((kind === 'policy' || kind === 'warm') && isPlainObject(value)) {
      visitObject(value, kind, path);
    } else if ((kind === 'config' || kind === 'quota') && isPlainObject(value)) {
      out.push({ path, kind: `${kind}Map`, present: true });
      for (const key of Object.keys(value)) out.push({ path: [...path, key], kind: `${kind}Entry`, present: true });
    }
  };
  visitObject(doc, 'document', []);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Edge values, by the kind of field they go into.

const n = (...texts) => texts.map(raw);

const NAME_EDGES = [
  '', 'a', '0', '9', 'a'.repeat(63), 'a'.repeat(64), '0'.repeat(63), 'z'.repeat(62) + '-', 'a'.repeat(200),
  'A', 'Fra', 'fRA', 'FRA', '-a', '.a', '_a', 'a-', 'a.', 'a_', 'a_b.c-d', 'a..b', 'a b', ' a', 'a ', 'a\n',
  '\na', 'a\t', 'a\u0000', '\u0000', '\u0000a', 'a/b', 'a:b', 'a@b', 'a+b', '\u00e9', 'a\u00e9', 'a\u{1F600}',
  '\uff41', '\u212a', '\u0131', 'a\u0085', 'a\u00a0', 'a\ufeff', '\ufeffa', 'a\u2028', 'a'.repeat(62) + '\u{1F600}',
];
const TEXT_EDGES = [
  '', ' ', '   ', '\t', '\n', '\r\n', '\u000b', '\u000c', '\u001c', '\u001f', '\u0085', '\u00a0', '\u1680',
  '\u180e', '\u2000', '\u200a', '\u200b', '\u200c', '\u200d', '\u2028', '\u2029', '\u202f', '\u205f',
  '\u2060', '\u3000', '\ufeff', '\ufffe', '\uffff', '\ufeff ', ' \u0085 ', '\u0085\u0085', '\u00a0\u3000',
  '\u0000', 'a\u0000', '\u0000a', ' \u0000', '\u0000 ', 'a\u0000b',
  'x'.repeat(199), 'x'.repeat(200), 'x'.repeat(201), 'x'.repeat(1000),
  '\u00e9'.repeat(200), '\u00e9'.repeat(201), '\u20ac'.repeat(200), '\u20ac'.repeat(201),
  '\u{1F600}'.repeat(100), '\u{1F600}'.repeat(200), '\u{1F600}'.repeat(201), 'x'.repeat(199) + '\u{1F600}',
  'x'.repeat(200) + '\u{1F600}', '\u{10FFFF}'.repeat(200), '\u{10FFFF}'.repeat(201),
  'e\u0301'.repeat(100), 'e\u0301'.repeat(100) + 'e', ' '.repeat(199) + 'a', ' '.repeat(200) + 'a',
  ' '.repeat(200), '\u00a0'.repeat(201), 'x'.repeat(199) + '\u0000', 'x'.repeat(200) + '\u0000',
  'eu-central', 'x',
];
const U32_EDGES = n(
  '0', '-0', '0.0', '-0.0', '0e0', '1', '1.0', '1e0', '1E0', '1E+0', '10e-1', '0.1e1', '2', '-1', '-1.0', '1.5',
  '0.5', '1e-400', '-1e-400', '5e-324', '4294967295', '4294967295.0', '4.294967295e9', '42949672950e-1',
  '4294967295.5', '4294967296', '4294967296.0', '4294967295.00000001', '4294967295.0000001',
  '9007199254740991', '9007199254740992', '18446744073709551615', '18446744073709551616', '1e19', '1e20',
  '1e308', '1e400', '-1e400', '1' + '0'.repeat(400), '0.' + '0'.repeat(400) + '1', '100000000000000000000e-20',
  '1' + '0'.repeat(400) + 'e-400', '4294967295' + '0'.repeat(30) + 'e-30', '4294967296' + '0'.repeat(30) + 'e-30',
  '0e999999999999999999', '1e-999999999999999999', '0.' + '9'.repeat(40), '1.' + '0'.repeat(30) + '1',
);
const QUOTA_EDGES = n(
  '0', '-0', '0.0', '-0.0', '1', '1.0', '1e0', '-1', '1.5', '4294967295', '4294967296', '9007199254740990',
  '9007199254740991', '9007199254740991.0', '9.007199254740991e15', '9007199254740990.5', '9007199254740991.4',
  '9007199254740991.5', '9007199254740992', '9007199254740993', '9223372036854775807', '9223372036854775808',
  '18446744073709551615', '18446744073709551616', '1e16', '1e19', '1e20', '1e308', '1e400', '-1e400', '1e-400',
  '-9007199254740991', '1' + '0'.repeat(400), '9007199254740991' + '0'.repeat(30) + 'e-30',
  '9007199254740991.' + '4'.repeat(40), '9007199254740991.' + '5'.repeat(40), '0e999999999999999999',
);
const PRIORITY_EDGES = n(
  '0', '-0', '0.0', '-0.0', '1', '-1', '1.0', '1e0', '-1e0', '1.5', '-1.5', '4294967296', '9007199254740991',
  '-9007199254740991', '9007199254740991.0', '-9007199254740991.0', '9007199254740992', '-9007199254740992',
  '9007199254740993', '-9007199254740993', '9007199254740990.5', '-9007199254740990.5', '9007199254740991.5',
  '-9007199254740991.5', '9223372036854775807', '9223372036854775808', '-9223372036854775807',
  '-9223372036854775808', '-9223372036854775809', '-9223372036854775810', '18446744073709551615',
  '18446744073709551616', '1e15', '1e16', '-1e16', '1e19', '-1e19', '1e308', '-1e308', '1e400', '-1e400',
  '1e-400', '-1e-400', '-' + '1'.repeat(400), '-9007199254740991.' + '4'.repeat(40), '-9007199254740991.5',
  '-9007199254740991' + '0'.repeat(30) + 'e-30', '-0e999999999999999999',
);
const BUDGET_EDGES = n(
  '0', '-0', '0.0', '-0.0', '0e0', '-0e5', '1', '1.0', '1e0', '1E0', '10e-1', '0.1e1', '0.5', '1.01', '1.001',
  '1.0000000000000002', '1.0000000000000001', '1.00000000000000011102230246251565404236316680908203125',
  '1.00000000000000011102230246251565404236316680908203126', '1.000000000000000111022302462515654',
  '0.9999999999999999', '0.99999999999999999', '0.999999999999999999999999999', '2', '-1', '-0.5',
  '-1e-400', '1e-400', '5e-324', '-5e-324', '2.2250738585072014e-308', '1e-7', '1e-6', '0.000001', '1e400',
  '-1e400', '1e308', '1' + '0'.repeat(400), '0.' + '0'.repeat(400) + '1', '1.' + '0'.repeat(400),
  '1.' + '0'.repeat(400) + '1', '4294967295', '18446744073709551616', '1' + '0'.repeat(400) + 'e-400',
  '1' + '0'.repeat(400) + '1e-401', '0e999999999999999999', '1e-999999999999999999', '-0e999999999999999999',
  '0.' + '9'.repeat(400), '1.7976931348623157e308', '1.7976931348623158e308', '1.7976931348623159e308',
);
const VERSION_EDGES = n(
  '1', '1.0', '1e0', '1E0', '1E+0', '10e-1', '0.1e1', '1.0000000000000001', '1.0000000000000002',
  '0.9999999999999999', '0.99999999999999999', '1.' + '0'.repeat(400), '0', '-0', '2', '-1', '1.5', '4294967297',
  '18446744073709551617', '1e400', '-1e400', '1e-400', '100000000000000000000e-20', '1' + '0'.repeat(400) + 'e-400',
  '0.' + '9'.repeat(400), '1.' + '0'.repeat(400) + '1',
);
const SITE_KINDS = ['shared', 'dedicated', 'Shared', 'SHARED', 'shared ', ' shared', 'dedicate', '', 'vps-host', 'public', 'shared\u0000'];
const POOL_CLASSES = ['vps-host', 'sandbox-host', 'provider', 'vps_host', 'VPS-HOST', 'Provider', 'provider ', 'providers', '', 'shared', 'provider\u0000'];
const NETWORKS = ['private', 'public', 'none', 'None', 'Private', 'null', '', 'private ', 'shared'];
const SECRET_KEYS = [
  'token', 'apiToken', 'TOKEN', 'tOkEn', 'password', 'dbPassword', 'PASSWORD', 'secret', 'clientSecret', 'SECRET',
  'key', 'apiKey', 'KEY', 'monkey', 'keys', 'credential', 'Credentials', 'gcpCREDENTIAL', 'github_token',
  'x-secret-y', 'api\u00e9key',
];
const PLAIN_KEYS = [
  'region', 'location', 'tok', 'passwd', 'pass', 'secrt', 'ke', 'k-e-y', 'tken', 'credentia', '', ' ', 'a b',
  '\u212aey', '\uff4b\uff45\uff59', '\u017fecret', 'to\u0138en', '__proto__', 'constructor', 'toString',
  'hasOwnProperty', '0', '10', 'x'.repeat(300), '\u0000', 'a\u0000b', '\u{1F600}',
];
const SECRET_VALUES = [
  'plain', '', ' ', 'secret://', 'secret://x', 'secret:// ', 'secret://\n', 'secret://\u0000', 'secret://\u{1F600}',
  'secret:///', 'secret:x', 'secret:/x', 'Secret://x', 'SECRET://x', ' secret://x', 'secret://x\n', 'vault://',
  'vault://kv/x', 'vault://\u2028', 'Vault://x', 'env://', 'env://A', 'env://_', 'env://a1_B', 'env://1A',
  'env://A-B', 'env://A\n', 'env://A ', 'env://A b', 'env://\u00c4', 'ENV://A', 'env:/A', 'env://A/B',
  'env://' + 'A'.repeat(500), 'https://example.com',
];
const RESOURCE_EDGES = [
  'a', 'A', 'gpu', 'GPU', 'vcpu', 'a'.repeat(64), 'A' + '9'.repeat(63), 'a'.repeat(65), 'a'.repeat(200), '9gpu',
  '_gpu', '-gpu', '.gpu', 'gpu.x', 'gpu-x_y.Z', 'g p', 'gpu\n', 'gpu\u0000', '', ' ', '\u00e9', 'gpu\u00e9',
  'Gpu\u{1F600}', '\u212a', '__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', '0', '10',
];
const UNKNOWN_KEYS = [
  'x', 'extra', 'Version', 'VERSION', 'Name', 'NAME', 'names', 'site', 'sites ', ' sites', 'disruption_budget',
  'memoryGib', 'memoryGIB', 'provider_account', 'gpumodel', 'GpuModel', 'image_id', '', ' ', '$schema', '$ref',
  '__proto__', 'constructor', 'toString', 'prototype', 'valueOf', '0', '\u0000', '\u{1F600}', 'id', 'kind',
  'tenant', 'quota', 'class', 'env', 'config', 'warm', 'policy', 'offers',
];
// Values of other kinds, for a field of any kind.
const OTHER_VALUES = [
  null, true, false, raw('0'), raw('1'), raw('-1'), raw('1.5'), raw('1e400'), '', 'x', '1', 'null', 'true', [],
  [null], [1], ['x'], {}, { x: 1 }, { name: 'x' }, { '': null },
];

const randomNumberText = fc.oneof(
  fc.integer().map(String),
  fc.integer({ min: -2, max: 4294967298 }).map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.stringify(x)),
  fc.double({ min: -0.5, max: 1.5, noNaN: true }).map((x) => JSON.stringify(x)),
  fc
    .tuple(fc.constantFrom('', '-'), fc.nat(99999), fc.option(fc.nat(99999), { nil: null }), fc.integer({ min: -400, max: 400 }))
    .map(([sign, int, frac, exp]) => `${sign}${int}${frac === null ? '' : '.' + frac}e${exp}`),
  // Long digit strings next to a bound: both must round them to the same double.
  fc
    .tuple(
      fc.constantFrom('0.', '1.', '0.99999999999999', '1.00000000000000', '4294967295.', '4294967294.99999', '9007199254740991.', '9007199254740990.', '-9007199254740991.'),
      fc.stringMatching(/^[0-9]{1,40}$/),
      fc.constantFrom('', 'e0', 'e-0', 'e+0'),
    )
    .map(([head, digits, exp]) => head + digits + exp),
);
const numberArb = (edges) => fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...edges) }, { weight: 1, arbitrary: randomNumberText.map(raw) });
const wellFormed = (s) => s.isWellFormed();
const randomText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.string({ unit: 'binary', minLength: 195, maxLength: 205 }),
  fc.string({ unit: fc.constantFrom(' ', '\t', '\n', '\u0085', '\u00a0', '\u2028', '\u3000', '\ufeff', '\u180e', '\u200b', 'a', '\u0000', '\u{1F600}'), maxLength: 6 }),
  fc.string({ unit: fc.constantFrom('x', '\u{1F600}', '\u00e9'), minLength: 198, maxLength: 202 }),
).filter(wellFormed);
const randomName = fc.oneof(
  fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,62}$/),
  fc.stringMatching(/^[a-zA-Z0-9._\- ]{0,70}$/),
  fc.string({ unit: 'binary', maxLength: 5 }).filter(wellFormed),
);
const randomResource = fc.oneof(
  fc.stringMatching(/^[A-Za-z][A-Za-z0-9._-]{0,63}$/),
  fc.stringMatching(/^[A-Za-z0-9._\-]{0,66}$/),
  fc.string({ unit: 'binary', maxLength: 5 }).filter(wellFormed),
);
const randomKey = fc.string({ unit: 'binary', maxLength: 12 }).filter(wellFormed);
const secretValue = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SECRET_VALUES) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('secret://', 'vault://', 'env://', ''), randomText).map(([a, b]) => a + b) },
);
const configKey = fc.oneof(
  fc.constantFrom(...SECRET_KEYS, ...PLAIN_KEYS),
  fc.tuple(randomKey, fc.constantFrom(...SECRET_KEYS), randomKey).map(([a, b, c]) => a + b + c),
  randomKey,
);

/** Values for a field of `kind` (nearly always of that kind, now and then of another). */
function valuesFor(kind) {
  const own = {
    version: numberArb(VERSION_EDGES),
    name: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...NAME_EDGES) }, { weight: 1, arbitrary: randomName }),
    text: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...TEXT_EDGES) }, { weight: 1, arbitrary: randomText }),
    siteKind: fc.constantFrom(...SITE_KINDS),
    poolClass: fc.constantFrom(...POOL_CLASSES),
    network: fc.constantFrom(...NETWORKS),
    u32: numberArb(U32_EDGES),
    u32min1: numberArb(U32_EDGES),
    priority: numberArb(PRIORITY_EDGES),
    budget: numberArb(BUDGET_EDGES),
    quotaEntry: numberArb(QUOTA_EDGES),
    configEntry: secretValue,
    policy: fc.oneof(
      numberArb(BUDGET_EDGES).map((b) => ({ disruptionBudget: b })),
      fc.constantFrom({}, { disruptionBudget: null }, { disruptionBudget: raw('0.5'), x: 1 }),
    ),
    warm: fc.oneof(
      fc.tuple(numberArb(U32_EDGES), numberArb(U32_EDGES)).map(([min, max]) => ({ min, max })),
      fc.constantFrom({}, { min: 0 }, { max: 0 }, { min: null, max: 1 }, { min: 0, max: 0, x: 0 }),
    ),
    quota: fc.dictionary(fc.oneof(fc.constantFrom(...RESOURCE_EDGES), randomResource), numberArb(QUOTA_EDGES), { maxKeys: 3 }),
    config: fc.dictionary(configKey, fc.oneof(secretValue, fc.constantFrom(...OTHER_VALUES)), { maxKeys: 3 }),
  }[kind];
  const other = fc.constantFrom(...OTHER_VALUES);
  if (own === undefined) return other; // lists, items, objects: values of other kinds only
  return fc.oneof({ weight: 9, arbitrary: own }, { weight: 1, arbitrary: other });
}

// ---------------------------------------------------------------------------------------------
// Mutations. Each has a kind; EXPRESSIBLE lists those the schema can state, so that on them
// the schema and the validator must agree exactly; VALIDATOR_ONLY those it cannot.

const EXPRESSIBLE = {
  'value:version': 'version: an edge number (1.0, 1e0, 0, 2, 1e400, ...) or another type',
  'value:name': 'a name (63/64 characters, uppercase, a leading - . _, NUL, non-ASCII, ...)',
  'value:text': 'free text (whitespace only, U+0000, U+0085, U+FEFF, 200/201 characters, astral, ...)',
  'value:siteKind': 'site kind: near misses of shared/dedicated',
  'value:poolClass': 'pool class, which says whether providerAccount is required or refused',
  'value:network': 'network: near misses of private/public/none',
  'value:u32': 'u32 fields (diskGiB, gpu, warm.min, warm.max): 0, -0, 1.0, 4294967295/6, 1.5, 1e400, ...',
  'value:u32min1': 'u32 fields of 1 or more (vcpu, memoryGiB)',
  'value:priority': 'priority: integers to +-(2^53-1), as 1.0, -0, 2^53, 1e400, ...',
  'value:budget': 'disruptionBudget: 0 to 1 (0, -0, 1.0, 1e0, 1.01, 1.0000000000000002, 1e-400, ...)',
  'value:policy': 'a policy object replaced',
  'value:warm': 'a warm object replaced (min <= max; else VALIDATOR_ONLY)',
  'value:quota': 'a quota replaced by another map',
  'value:config': 'a config or env replaced by another map',
  'value:quotaEntry': 'a quota maximum: 0 to 2^53-1',
  'value:configEntry': 'a config or env value: references (secret://, vault://, env://NAME) vs plain values',
  'value:list': 'a list replaced by a value of another type',
  'value:item': 'a list item replaced by a value of another type',
  'value:object': 'the document replaced by a value of another type',
  'key:quota': 'a quota key renamed (resource names: 64/65 characters, leading digit, ...)',
  'key:config': 'a config or env key renamed (secret-looking keys such as apiToken, password)',
  'add:quota': 'a quota entry added',
  'add:config': 'a config or env entry added (a secret-looking key with a plain value or a reference)',
  'null': 'a field set to null (optional: the field left out; required: refused)',
  'remove': 'a field left out',
  'unknown': 'an unknown field added to an object',
  'length': 'a list of 0, 1, 999, 1000 or 1001 distinct valid items',
  'spelling': 'a number respelled (1 as 1.0, 1e0, 10e-1, ...) or strings and keys escaped',
};
const VALIDATOR_ONLY = {
  'repeated-key': 'an object repeating a key (JSON.parse keeps the last one)',
  'repeated-name': 'an item taking the name of another item of its list',
  'warm-order': 'warm min > max',
  'lone-surrogate': 'a string escaping a lone surrogate (\\ud800): JSON.parse reads it, serde_json refuses it (not Unicode)',
};

/** A valid item of a list, the `i`th of many (distinct names). */
function listItem(type, i, doc) {
  const name = `n${i}`;
  switch (type) {
    case 'site':
      return { name, kind: 'shared', region: 'r' };
    case 'account':
      return { name, provider: 'p', config: {} };
    case 'pool':
      return { name, site: 'fra', class: 'vps-host' };
    case 'offer':
      return { tenant: name, quota: { gpu: 1 } };
    case 'flavor':
      return { pool: 'p', name, vcpu: 1, memoryGiB: 1, diskGiB: 0 };
    case 'template':
      return { name, pool: 'p', flavor: 'f', imageId: 'i', network: 'none' };
    default:
      throw new Error(`no item ${type} in ${doc}`);
  }
}

/** Mutations of `doc` in `groups` (kinds of EXPRESSIBLE and VALIDATOR_ONLY, by prefix). */
function mutationArb(doc, groups) {
  const wanted = (kind) => groups.some((g) => kind === g || kind.startsWith(g + ':'));
  const all = places(doc);
  const options = [];
  const add = (kind, weight, arbitrary) => {
    if (wanted(kind)) options.push({ weight, arbitrary: arbitrary.map((m) => ({ kind, ...m })) });
  };
  const fieldKinds = ['version', 'name', 'text', 'siteKind', 'poolClass', 'network', 'u32', 'u32min1', 'priority', 'budget', 'policy', 'warm', 'quota', 'config'];
  for (const kind of fieldKinds) {
    const fields = all.filter((p) => p.kind === kind);
    if (fields.length === 0) continue;
    add(`value:${kind}`, 6, fc.tuple(fc.constantFrom(...fields), valuesFor(kind)).map(([p, value]) => ({ op: 'set', path: p.path, value })));
  }
  const entries = (kind) => all.filter((p) => p.kind === kind);
  for (const [map, entryKind, keyArb] of [
    ['quota', 'quotaEntry', fc.oneof(fc.constantFrom(...RESOURCE_EDGES), randomResource)],
    ['config', 'configEntry', configKey],
  ]) {
    const present = entries(entryKind);
    const maps = entries(`${map}Map`);
    if (present.length > 0) {
      add(`value:${entryKind}`, 6, fc.tuple(fc.constantFrom(...present), valuesFor(entryKind)).map(([p, value]) => ({ op: 'set', path: p.path, value })));
      add(`key:${map}`, 4, fc.tuple(fc.constantFrom(...present), keyArb).map(([p, key]) => ({ op: 'rename', path: p.path, key })));
    }
    if (maps.length > 0) {
      add(`add:${map}`, 4, fc.tuple(fc.constantFrom(...maps), keyArb, valuesFor(entryKind)).map(([p, key, value]) => ({ op: 'set', path: [...p.path, key], value })));
    }
  }
  const lists = all.filter((p) => p.kind.startsWith('list:') && p.present);
  const items = all.filter((p) => p.kind.startsWith('item:'));
  if (lists.length > 0) {
    add('value:list', 2, fc.tuple(fc.constantFrom(...lists), fc.constantFrom(...OTHER_VALUES)).map(([p, value]) => ({ op: 'set', path: p.path, value })));
    add('length', 2, fc.tuple(fc.constantFrom(...lists), fc.constantFrom(0, 1, 999, 1000, 1001)).map(([p, count]) => ({ op: 'length', path: p.path, type: p.kind.slice(5), count })));
  }
  if (items.length > 0) {
    add('value:item', 2, fc.tuple(fc.constantFrom(...items), fc.constantFrom(...OTHER_VALUES)).map(([p, value]) => ({ op: 'set', path: p.path, value })));
  }
  add('value:object', 1, fc.constantFrom(...OTHER_VALUES).map((value) => ({ op: 'set', path: [], value })));
  const fields = all.filter((p) => p.field !== undefined);
  const presentFields = fields.filter((p) => p.present);
  add('null', 4, fc.constantFrom(...fields).map((p) => ({ op: 'set', path: p.path, value: null })));
  if (presentFields.length > 0) add('remove', 4, fc.constantFrom(...presentFields).map((p) => ({ op: 'remove', path: p.path })));
  const objects = all.filter((p) => p.kind.startsWith('object:'));
  add(
    'unknown',
    3,
    fc.tuple(fc.constantFrom(...objects), fc.oneof(fc.constantFrom(...UNKNOWN_KEYS), randomKey), fc.constantFrom(...OTHER_VALUES, 'x', raw('1'))).map(([p, key, value]) => {
      const known = Object.prototype.hasOwnProperty.call(OBJECTS[p.object], key);
      return { op: 'set', path: [...p.path, known ? key + '_' : key], value };
    }),
  );
  const numbers = all.filter((p) => p.present && typeof at(doc, p.path) === 'number');
  if (numbers.length > 0) {
    add('spelling', 3, fc.tuple(fc.constantFrom(...numbers), fc.nat()).map(([p, pick]) => ({ op: 'respell', path: p.path, pick })));
  }
  // What the schema cannot say.
  const withKeys = [...objects, ...entries('quotaMap'), ...entries('configMap')].filter((p) => {
    const value = at(doc, p.path);
    return isPlainObject(value) && Object.keys(value).length > 0;
  });
  if (withKeys.length > 0) {
    add(
      'repeated-key',
      3,
      fc
        .tuple(fc.constantFrom(...withKeys), fc.nat(), fc.oneof(fc.constant(undefined), fc.constantFrom(...OTHER_VALUES, 'x', raw('1'), raw('1e0'))), fc.boolean(), fc.boolean())
        .map(([p, pick, value, before, respelled]) => ({ op: 'repeat', path: p.path, pick, value, before, respelled })),
    );
  }
  const named = all.filter((p) => p.kind.startsWith('item:') && isPlainObject(at(doc, p.path)));
  const pairs = [];
  for (const a of named) {
    for (const b of named) {
      const sameList = a.path.length === b.path.length && a.path.slice(0, -1).join('/') === b.path.slice(0, -1).join('/');
      if (sameList && a.path.at(-1) < b.path.at(-1)) pairs.push([a, b]);
    }
  }
  if (pairs.length > 0) {
    add('repeated-name', 3, fc.constantFrom(...pairs).map(([a, b]) => ({ op: 'repeatName', path: b.path, from: a.path, type: a.kind.slice(5) })));
  }
  const strings = all.filter((p) => p.present && ['text', 'name', 'configEntry'].includes(p.kind));
  if (strings.length > 0) {
    add(
      'lone-surrogate',
      2,
      fc.tuple(fc.constantFrom(...strings), fc.constantFrom('\\ud800', 'a\\udbff', '\\udc00b', '\\ude00\\ud83d', 'x\\uD83D')).map(([p, text]) => ({ op: 'set', path: p.path, value: raw(`"${text}"`) })),
    );
  }
  const warms = all.filter((p) => p.kind === 'warm' && p.object === 'template');
  if (warms.length > 0) {
    add(
      'warm-order',
      3,
      fc.tuple(fc.constantFrom(...warms), fc.oneof(fc.constantFrom(0, 1, U32_MAX - 1), fc.nat(U32_MAX - 1)), fc.nat(U32_MAX)).map(([p, max, more]) => ({
        op: 'set',
        path: p.path,
        value: { min: max + 1 + (more % 2 === 0 ? 0 : more % (U32_MAX - max)), max },
      })),
    );
  }
  return options.length > 0 ? fc.oneof(...options) : fc.constant({ kind: 'none', op: 'none' });
}

/** Other spellings of a number: the same value to JSON.parse and to serde_json. */
function spellings(x) {
  const out = [`${x}.0`, `${x}e0`, `${x}E+0`, `${x}.000`, `${x}0e-1`, `${x}00E-2`];
  if (Object.is(x, 0)) out.push('-0', '-0.0', '0e5', '0E-5', '0.0e0');
  const json = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
  return out.filter((s) => json.test(s) && JSON.parse(s) === x);
}

/** `doc` with `m` applied (a copy; paths that no longer lead anywhere are left alone). */
function apply(doc, m) {
  // The document is the `root` of a holder, so that a mutation of the document itself has a
  // parent too.
  const holder = { root: clone(doc) };
  if (m.op === 'none') return holder.root;
  const path = ['root', ...m.path];
  const parent = at(holder, path.slice(0, -1));
  const key = path[path.length - 1];
  const out = holder.root;
  if (parent === null || typeof parent !== 'object' || parent instanceof Raw || parent instanceof Entries) return out;
  switch (m.op) {
    case 'set':
      if (Array.isArray(parent) && !(key in parent)) return out;
      setOwn(parent, key, clone(m.value));
      break;
    case 'remove':
      delete parent[key];
      break;
    case 'rename': {
      if (!(key in parent) || Array.isArray(parent)) return out;
      // In place, keeping the order of the other keys; a key it meets is replaced (no repeat).
      const list = ownEntries(parent).filter(([k]) => k !== m.key).map(([k, v]) => (k === key ? [m.key, v] : [k, v]));
      for (const k of Object.keys(parent)) delete parent[k];
      for (const [k, v] of list) setOwn(parent, k, v);
      break;
    }
    case 'length':
      if (!Array.isArray(parent[key])) return out;
      parent[key] = Array.from({ length: m.count }, (_, i) => listItem(m.type, i, doc));
      break;
    case 'respell': {
      const x = parent[key];
      if (typeof x !== 'number') return out;
      const options = spellings(x);
      if (options.length > 0) parent[key] = raw(options[m.pick % options.length]);
      break;
    }
    case 'repeat': {
      const object = parent[key];
      if (!isPlainObject(object)) return out;
      const list = ownEntries(object);
      if (list.length === 0) return out;
      const [k, v] = list[m.pick % list.length];
      // Respelled, the repeat is the same key to JSON.parse and to serde_json (`"n\u0061me"`).
      const extra = [k, m.value === undefined ? v : clone(m.value), m.respelled ? quote(k, 'all') : undefined];
      parent[key] = new Entries(m.before ? [extra, ...list] : [...list, extra]);
      break;
    }
    case 'repeatName': {
      const from = at(holder, ['root', ...m.from]);
      const item = parent[key];
      if (!isPlainObject(from) || !isPlainObject(item)) return out;
      const fieldsOf = { offer: ['tenant'], flavor: ['pool', 'name'] }[m.type] ?? ['name'];
      for (const f of fieldsOf) {
        if (Object.prototype.hasOwnProperty.call(from, f)) setOwn(item, f, clone(from[f]));
        else delete item[f];
      }
      break;
    }
    default:
      throw new Error(`unknown mutation ${m.op}`);
  }
  return holder.root;
}

// ---------------------------------------------------------------------------------------------
// Both sides on one document.

function judge(doc, style) {
  const state = { repeatedKey: false };
  const text = write(doc, style, state);
  const answer = planner.validate(text);
  const parsed = JSON.parse(text);
  const ajvOk = check(parsed);
  return {
    text,
    validatorOk: answer.ok,
    problems: answer.ok ? [] : answer.problems,
    ajvOk,
    ajvErrors: ajvOk ? [] : check.errors.map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`),
    validatorOnly: validatorOnlyRules(parsed, state.repeatedKey),
  };
}

const shown = (text, max = 1500) => (text.length > max ? `${text.slice(0, max)}... (${text.length} characters)` : text);
function describe(j, mutations) {
  return [
    `mutations: ${JSON.stringify(mutations, (k, v) => (v instanceof Raw ? `<raw ${v.text.slice(0, 60)}>` : typeof v === 'string' && v.length > 80 ? `${v.slice(0, 40)}...(${[...v].length} chars)` : v))}`,
    `document: ${shown(j.text)}`,
    `validate: ${j.validatorOk ? 'accepts' : 'rejects: ' + shown(JSON.stringify(j.problems), 800)}`,
    `ajv: ${j.ajvOk ? 'accepts' : 'rejects: ' + shown(JSON.stringify(j.ajvErrors), 800)}`,
    `validator-only rules broken: ${JSON.stringify(j.validatorOnly)}`,
  ].join('\n');
}

const SINGLE_GROUPS_ALL = [...Object.keys(EXPRESSIBLE), ...Object.keys(VALIDATOR_ONLY)];
const single = (groups) =>
  fc.tuple(baseArb, styleArb).chain(([doc, style]) => mutationArb(doc, groups).map((m) => ({ doc, style, mutations: [m] })));
const several = fc
  .tuple(baseArb, styleArb)
  .chain(([doc, style]) => fc.array(mutationArb(doc, SINGLE_GROUPS_ALL), { minLength: 2, maxLength: 4 }).map((mutations) => ({ doc, style, mutations })));
const arbitraryJson = fc.tuple(
  fc.oneof(
    fc.jsonValue({ maxDepth: 4 }),
    fc.dictionary(fc.constantFrom('version', 'sites', 'pools', 'flavors', 'x'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
    fc.record({ version: fc.constantFrom(1, 1.5, 0), pools: fc.array(fc.dictionary(fc.constantFrom(...Object.keys(OBJECTS.pool), 'x'), fc.jsonValue({ maxDepth: 2 })), { maxLength: 2 }) }),
  ),
  styleArb,
).map(([doc, style]) => ({ doc, style, mutations: [] }));
const anyDocument = fc.oneof(
  { weight: 6, arbitrary: single(SINGLE_GROUPS_ALL) },
  { weight: 2, arbitrary: several },
  { weight: 1, arbitrary: arbitraryJson },
);

const mutated = ({ doc, style, mutations }) => judge(mutations.reduce(apply, doc), style);
const params = (numRuns) => ({ seed: SEED, numRuns: runs(numRuns), includeErrorInReport: true });

// ---------------------------------------------------------------------------------------------
// The tests.

test('the documents mutations start from are valid, for the validator and for the schema', () => {
  fc.assert(
    fc.property(baseArb, styleArb, (doc, style) => {
      const j = judge(doc, style);
      assert.ok(j.validatorOk && j.ajvOk, describe(j, []));
    }),
    params(200),
  );
});

test('1. whatever validate accepts, ajv accepts', () => {
  fc.assert(
    fc.property(anyDocument, (c) => {
      const j = mutated(c);
      assert.ok(!j.validatorOk || j.ajvOk, `validate accepts what ajv rejects\n${describe(j, c.mutations)}`);
    }),
    params(1000),
  );
});

test('2. whatever ajv rejects, validate rejects', () => {
  fc.assert(
    fc.property(anyDocument, (c) => {
      const j = mutated(c);
      assert.ok(j.ajvOk || !j.validatorOk, `ajv rejects what validate accepts\n${describe(j, c.mutations)}`);
    }),
    params(1000),
  );
});

test('a document breaking a rule the schema cannot state (VALIDATOR_ONLY) is refused by validate', () => {
  fc.assert(
    fc.property(fc.oneof(single(Object.keys(VALIDATOR_ONLY)), several), (c) => {
      const j = mutated(c);
      if (j.validatorOnly.length > 0) assert.equal(j.validatorOk, false, describe(j, c.mutations));
    }),
    params(300),
  );
});

// 3., one property per group of mutation kinds, so that each disagreement is found on its own.
const GROUPS = {
  version: ['value:version'],
  names: ['value:name'],
  'free text': ['value:text'],
  'enums and providerAccount iff provider': ['value:siteKind', 'value:poolClass', 'value:network'],
  'u32 fields': ['value:u32', 'value:u32min1', 'value:warm'],
  priority: ['value:priority'],
  disruptionBudget: ['value:budget', 'value:policy'],
  quotas: ['value:quota', 'value:quotaEntry', 'key:quota', 'add:quota'],
  'config and env (secret references)': ['value:config', 'value:configEntry', 'key:config', 'add:config'],
  'types, null, left out, unknown fields': ['value:list', 'value:item', 'value:object', 'null', 'remove', 'unknown'],
  'list lengths': ['length'],
  'number spellings and escapes': ['spelling'],
};
assert.deepEqual(new Set(Object.values(GROUPS).flat()), new Set(Object.keys(EXPRESSIBLE)), 'each expressible kind in a group');

for (const [name, kinds] of Object.entries(GROUPS)) {
  test(`3. single mutations the schema can express, ${name}: validate and ajv agree exactly`, () => {
    let [seen, compared] = [0, 0];
    fc.assert(
      fc.property(single(kinds), (c) => {
        seen++;
        const j = mutated(c);
        if (j.validatorOnly.length > 0) return; // a name met another by chance: not this property's
        compared++;
        assert.equal(j.validatorOk, j.ajvOk, `${j.validatorOk ? 'validate' : 'ajv'} accepts what the other rejects\n${describe(j, c.mutations)}`);
      }),
      params(name === 'list lengths' ? 60 : 400),
    );
    assert.ok(compared >= seen * 0.8, `only ${compared} of ${seen} documents compared`);
  });
}

/** Every single mutation of `doc` the edge lists make: each edge value (and each value of
 * another type) in each field of its kind, each field null and left out, each unknown key in
 * each object, each list length in each list, each key in each map, each number respelled. */
function everyMutation(doc) {
  const entry = (key, value) => setOwn({}, key, value);
  const edges = {
    version: VERSION_EDGES,
    name: NAME_EDGES,
    text: TEXT_EDGES,
    siteKind: SITE_KINDS,
    poolClass: POOL_CLASSES,
    network: NETWORKS,
    u32: U32_EDGES,
    u32min1: U32_EDGES,
    priority: PRIORITY_EDGES,
    budget: BUDGET_EDGES,
    quotaEntry: QUOTA_EDGES,
    configEntry: SECRET_VALUES,
    policy: [...BUDGET_EDGES.map((b) => ({ disruptionBudget: b })), {}, { disruptionBudget: null }],
    warm: [...U32_EDGES.map((x) => ({ min: raw('0'), max: x })), ...U32_EDGES.map((x) => ({ min: x, max: raw('4294967295') })), {}, { min: 0 }],
    quota: [...RESOURCE_EDGES.map((k) => entry(k, raw('1'))), ...QUOTA_EDGES.map((x) => entry('gpu', x))],
    config: [...SECRET_KEYS, ...PLAIN_KEYS].flatMap((k) => [entry(k, 'plain'), entry(k, 'secret://x'), entry(k, raw('1'))]),
  };
  const out = [];
  for (const p of places(doc)) {
    for (const value of [...(edges[p.kind] ?? []), ...OTHER_VALUES]) {
      const kind = p.kind.startsWith('object:') ? 'value:object' : p.kind.startsWith('list:') ? 'value:list' : p.kind.startsWith('item:') ? 'value:item' : p.kind.endsWith('Map') ? null : `value:${p.kind}`;
      if (kind === 'value:object' && p.path.length > 0) continue; // an object's value is its field's
      if (kind !== null) out.push({ kind, op: 'set', path: p.path, value });
    }
    if (p.field !== undefined) {
      out.push({ kind: 'null', op: 'set', path: p.path, value: null });
      if (p.present) out.push({ kind: 'remove', op: 'remove', path: p.path });
    }
    if (p.kind.startsWith('object:')) {
      for (const key of UNKNOWN_KEYS) {
        if (!Object.prototype.hasOwnProperty.call(OBJECTS[p.object], key)) out.push({ kind: 'unknown', op: 'set', path: [...p.path, key], value: 1 });
      }
    }
    if (p.kind.startsWith('list:') && p.present && Array.isArray(at(doc, p.path))) {
      for (const count of [0, 1, 999, 1000, 1001]) out.push({ kind: 'length', op: 'length', path: p.path, type: p.kind.slice(5), count });
    }
    const keys = { quotaEntry: RESOURCE_EDGES, configEntry: [...SECRET_KEYS, ...PLAIN_KEYS] }[p.kind];
    for (const key of keys ?? []) out.push({ kind: `key:${p.kind.slice(0, -5)}`, op: 'rename', path: p.path, key });
    if (p.kind === 'quotaMap') {
      for (const key of RESOURCE_EDGES) out.push({ kind: 'add:quota', op: 'set', path: [...p.path, key], value: raw('0') });
    }
    if (p.kind === 'configMap') {
      for (const key of [...SECRET_KEYS, ...PLAIN_KEYS]) {
        for (const value of ['plain', 'secret://x', 'env://A', 'env://1']) out.push({ kind: 'add:config', op: 'set', path: [...p.path, key], value });
      }
    }
    if (p.present && typeof at(doc, p.path) === 'number') {
      spellings(at(doc, p.path)).forEach((_, pick) => out.push({ kind: 'spelling', op: 'respell', path: p.path, pick }));
    }
  }
  return out;
}

test('3. every edge value in every field of a full document: validate and ajv agree exactly', () => {
  const doc = fullDocument();
  const mutations = everyMutation(doc);
  assert.ok(mutations.length > 3000, `${mutations.length} mutations`);
  const kinds = new Set(mutations.map((m) => m.kind));
  assert.deepEqual([...kinds].filter((k) => !(k in EXPRESSIBLE)), []);
  const found = [];
  let compared = 0;
  for (const [i, m] of mutations.entries()) {
    const style = { strings: i % 7 === 0 ? 'all' : 'plain', keys: i % 11 === 0 ? 'upper' : 'plain', gap: '' };
    const j = judge(apply(doc, m), style);
    if (j.validatorOnly.length > 0) continue;
    compared++;
    if (j.validatorOk !== j.ajvOk) found.push(`${j.validatorOk ? 'validate' : 'ajv'} accepts what the other rejects\n${describe(j, [m])}`);
  }
  assert.ok(compared > 3000, `${compared} compared`);
  assert.deepEqual(found.length, 0, `${found.length} disagreements; the first ones:\n\n${found.slice(0, 10).join('\n\n')}`);
});

// Characters at once, one item per character: what a name, a resource name and free text may
// hold, item by item. Every code point below U+3100 (each white space character of Unicode and
// of ECMAScript's \s is there, but U+FEFF), then every 7th up to U+FFFF and every 4097th above,
// with U+FEFF, U+FFFE, U+FFFF and the last ones.
const codePoints = (() => {
  const out = [];
  for (let c = 0; c < 0x3100; c++) out.push(c);
  for (let c = 0x3100; c <= 0xffff; c += 7) if (c < 0xd800 || c > 0xdfff) out.push(c);
  for (let c = 0x10000; c <= 0x10ffff; c += 0x1001) out.push(c);
  out.push(0xfeff, 0xfffe, 0xffff, 0x1f600, 0xe0020, 0x10fffe, 0x10ffff);
  return out;
})();
const indexOf = {
  validator: (problem) => Number(/^\w+\[(\d+)\]/.exec(problem.path)?.[1] ?? -1),
  ajv: (error) => Number(/^\/\w+\/(\d+)/.exec(error.instancePath)?.[1] ?? -1),
};
function sweep(makeItem, list) {
  const disagreements = [];
  for (let start = 0; start < codePoints.length; start += 1000) {
    const chunk = codePoints.slice(start, start + 1000);
    const doc = { version: 1, [list]: chunk.map((c, i) => makeItem(String.fromCodePoint(c), i)) };
    const text = JSON.stringify(doc);
    const answer = planner.validate(text);
    const byValidator = new Set(answer.ok ? [] : answer.problems.map(indexOf.validator));
    const byAjv = new Set(check(JSON.parse(text)) ? [] : check.errors.map(indexOf.ajv));
    chunk.forEach((c, i) => {
      if (byValidator.has(i) !== byAjv.has(i)) {
        disagreements.push(`U+${c.toString(16).toUpperCase().padStart(4, '0')} ${JSON.stringify(doc[list][i])}: validate ${byValidator.has(i) ? 'rejects' : 'accepts'}, ajv ${byAjv.has(i) ? 'rejects' : 'accepts'}`);
      }
    });
  }
  return disagreements;
}

test('characters, in a name, a resource name, free text and config keys: validate and ajv agree item by item', () => {
  const cases = {
    'a name of it': [(ch, i) => ({ name: ch, kind: 'shared', region: `r${i}` }), 'sites'],
    'a name ending with it': [(ch, i) => ({ name: `s${i}${ch}`, kind: 'shared', region: 'r' }), 'sites'],
    'a region of it': [(ch, i) => ({ name: `s${i}`, kind: 'shared', region: ch }), 'sites'],
    'a region of it twice and a space': [(ch, i) => ({ name: `s${i}`, kind: 'shared', region: `${ch} ${ch}` }), 'sites'],
    'a quota key ending with it': [(ch, i) => ({ name: `p${i}`, site: 's', class: 'vps-host', ownerQuota: { [`a${ch}`]: 1 } }), 'pools'],
    'a config key of it, holding a plain value': [(ch, i) => ({ name: `a${i}`, provider: 'p', config: { [`${ch}ey`]: 'plain', [`k${ch}y`]: 'plain' } }), 'providerAccounts'],
    'an env:// reference with it': [(ch, i) => ({ name: `a${i}`, provider: 'p', config: { token: `env://A${ch}` } }), 'providerAccounts'],
  };
  const found = [];
  for (const [what, [makeItem, list]] of Object.entries(cases)) {
    for (const d of sweep(makeItem, list)) found.push(`${what}: ${d}`);
  }
  assert.deepEqual(found, [], `seed-free sweep; disagreements:\n${found.slice(0, 40).join('\n')}`);
});
