// The planner as WebAssembly in Node (pkg-node, made by ../build.sh): the golden cases of
// ../tests/golden give the very plans and planHashes the native planner gives, whatever the
// input form; the canonical JSON agrees with an independent RFC 8785 implementation; the
// generated JSON Schema accepts the documents the validator accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { runInNewContext } from 'node:vm';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import canonicalize from 'canonicalize';
import Ajv from 'ajv';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const planner = require(join(here, '..', 'pkg-node', 'planner.js'));
const goldenDir = join(here, '..', '..', 'tests', 'golden');

const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');
const read = (dir, file) => readFileSync(join(dir, file));
const cases = readdirSync(goldenDir)
  .filter((name) => existsSync(join(goldenDir, name, 'document.json')))
  .sort();
const planCases = cases.filter((name) => existsSync(join(goldenDir, name, 'export.json')));
const validationCases = cases.filter((name) => !planCases.includes(name));

test('there are golden cases of both sorts', () => {
  assert.ok(planCases.length >= 5, `plan cases: ${planCases}`);
  assert.ok(validationCases.length >= 1, `validation cases: ${validationCases}`);
});

for (const name of planCases) {
  test(`golden plan ${name}: wasm plans exactly what the native planner planned`, () => {
    const dir = join(goldenDir, name);
    const documentBytes = read(dir, 'document.json');
    const exportBytes = read(dir, 'export.json');
    const options = existsSync(join(dir, 'options.json'))
      ? JSON.parse(read(dir, 'options.json'))
      : undefined;
    const expected = JSON.parse(read(dir, 'plan.json'));

    const fromText = planner.plan(documentBytes.toString('utf8'), exportBytes.toString('utf8'), options);
    assert.deepStrictEqual(fromText, expected);

    // The same plan from bytes and from plain objects.
    const fromBytes = planner.plan(new Uint8Array(documentBytes), new Uint8Array(exportBytes), options);
    assert.deepStrictEqual(fromBytes, expected);
    const fromObjects = planner.plan(JSON.parse(documentBytes), JSON.parse(exportBytes), options);
    assert.equal(fromObjects.planHash, expected.planHash);
    assert.deepStrictEqual(fromObjects.calls, expected.calls);
    // And as JSON text, the same plan.
    const asText = planner.planJson(new Uint8Array(documentBytes), new Uint8Array(exportBytes), options);
    assert.equal(typeof asText, 'string');
    assert.deepStrictEqual(JSON.parse(asText), expected);
    // plan's objects (built from parts) have planJson's keys in planJson's order.
    assert.equal(JSON.stringify(fromBytes), asText);

    // planHash is the SHA-256 of the calls as an independent JCS implementation writes them.
    assert.equal(sha256(canonicalize(fromText.calls)), expected.planHash);
    assert.equal(planner.canonicalJson(JSON.stringify(fromText.calls)), canonicalize(fromText.calls));
    assert.equal(planner.canonicalHash(JSON.stringify(fromText.calls)), expected.planHash);
  });
}

for (const name of validationCases) {
  test(`golden validation ${name}: wasm finds the same problems`, () => {
    const dir = join(goldenDir, name);
    const expected = JSON.parse(read(dir, 'problems.json'));
    const result = planner.validate(new Uint8Array(read(dir, 'document.json')));
    if (expected.length === 0) {
      assert.equal(result.ok, true);
    } else {
      assert.deepStrictEqual(result, { ok: false, problems: expected });
    }
    assert.deepStrictEqual(planner.validate(read(dir, 'document.json').toString('utf8')), result);
  });
}

test('validate answers the document as read, as a plain data property of a fresh object', () => {
  for (const name of planCases) {
    const text = read(join(goldenDir, name), 'document.json').toString('utf8');
    const result = planner.validate(new Uint8Array(Buffer.from(text)));
    assert.equal(result.ok, true, name);
    assert.deepStrictEqual(Object.keys(result), ['ok', 'document']);
    // A data property, as console.log, Object.freeze and descriptor copies expect.
    assert.equal(Object.getOwnPropertyDescriptor(result, 'document').get, undefined);
    // The golden documents hold no nulls: the document as the planner reads it is the input.
    assert.deepStrictEqual(result.document, JSON.parse(text), name);
    // Each call answers objects of its own.
    assert.notEqual(planner.validate(text).document, result.document);
  }
  // A field the planner leaves out when null is left out of the document.
  const nulls = planner.validate('{"version": 1, "sites": null, "flavors": [{"pool": "p", "name": "f", "vcpu": 1, "memoryGiB": 2, "diskGiB": 3, "gpu": null}]}');
  assert.deepStrictEqual(nulls.document, { version: 1, flavors: [{ pool: 'p', name: 'f', vcpu: 1, memoryGiB: 2, diskGiB: 3 }] });
});

test('values made in another realm (a vm context, an iframe) are read as this realm reads its own', () => {
  const dir = join(goldenDir, planCases[0]);
  const text = read(dir, 'document.json').toString('utf8');
  const exportText = read(dir, 'export.json').toString('utf8');
  const expected = planner.plan(text, exportText, { prune: true });
  const other = runInNewContext(`({
    bytes: (list) => Uint8Array.from(list),
    buffer: (list) => Uint8Array.from(list).buffer,
    options: () => ({ prune: true }),
    map: () => new Map([['gpu', 8]]),
    nan: () => new Number(NaN),
  })`);
  const list = (text) => [...Buffer.from(text)];
  const [bytes, exportBytes] = [other.bytes(list(text)), other.bytes(list(exportText))];
  assert.ok(!(bytes instanceof Uint8Array), 'made in the other realm');
  assert.equal(planner.plan(bytes, exportBytes, other.options()).planHash, expected.planHash);
  assert.equal(planner.plan(other.buffer(list(text)), other.buffer(list(exportText)), other.options()).planHash, expected.planHash);
  assert.equal(planner.validate(bytes).ok, true);
  const holding = (value) => ({ version: 1, pools: [{ name: 'p', site: 's', class: 'vps-host', ownerQuota: value }] });
  assert.throws(() => planner.validate(holding(other.map())), /holds a Map at key "ownerQuota"/);
  assert.throws(() => planner.canonicalJson([other.nan()]), /holds NaN at key "0"/);
  assert.throws(() => planner.plan(text, exportText, other.map()), /options: a Map or Set/);
});

test('plan throws INVALID_INPUT with every problem for a document that does not validate', () => {
  const exported = { tenantId: 'root', caller: 'usr_ops', config: { version: 1 } };
  assert.throws(
    () => planner.plan({ version: 2, sites: [{ name: 'Fra' }] }, exported, { prune: true }),
    (error) => {
      assert.equal(error.code, 'INVALID_INPUT');
      assert.deepStrictEqual(
        error.problems.map((p) => p.path),
        ['version', 'sites[0].name', 'sites[0]', 'sites[0]'],
      );
      return true;
    },
  );
  assert.throws(() => planner.validate(42), /must be JSON text, UTF-8 bytes \(a Uint8Array\) or an object/);
});

test('canonical JSON agrees with the canonicalize package on hard values', () => {
  const values = [
    [1e21, 1e-7, 0.000001, -0, 333333333.33333329, 1e30, 4.5, 0.002, 100, -1.5, 2 ** 53, 5e-324],
    { '\u20ac': 1, '\r': 2, '\ufb33': 3, 1: 4, '\ud83d\ude00': 5, '\u0080': 6, '\u00f6': 7 },
    { b: [true, false, null], a: { z: '', y: '\u000f\n"\\/' }, 'é': 'snow\u2603man' },
    { numbers: [0.1, 0.2, 0.30000000000000004, 123456789012345680000, 1.7976931348623157e308] },
    // Halfway between two shortest forms: ECMAScript takes the even one.
    [0.75772857666015625, 1125899906842624.25, 0.5000076293945312, 2 ** -17 * 99311],
    [],
    {},
  ];
  for (const value of values) {
    const text = JSON.stringify(value);
    assert.equal(planner.canonicalJson(text), canonicalize(value), text);
    assert.equal(planner.canonicalHash(text), sha256(canonicalize(value)), text);
  }
});

test('arguments that are no JSON of the right shape are refused with a message, never a trap', () => {
  const dir = join(goldenDir, planCases[0]);
  const doc = JSON.parse(read(dir, 'document.json'));
  const exported = JSON.parse(read(dir, 'export.json'));
  const refused = (run, pattern) => {
    let thrown;
    try {
      run();
    } catch (err) {
      thrown = err;
    }
    assert.ok(thrown instanceof Error, `expected an Error, got ${thrown}`);
    assert.doesNotMatch(String(thrown), /RuntimeError|unreachable|unwrap|memory access/);
    assert.match(thrown.message, pattern);
  };
  refused(() => planner.validate({ toJSON: () => undefined }), /the document cannot be written as JSON/);
  refused(() => planner.validate(42), /must be JSON text, UTF-8 bytes/);
  refused(() => planner.validate(new Int8Array(2)), /must be JSON text, UTF-8 bytes/);
  refused(() => planner.plan(doc, ['root', 'usr_ops', { version: 1 }]), /the export: must be a JSON object \(what fleet.export answers\)/);
  refused(() => planner.plan(doc, exported, { Prune: true }), /options: unknown field `Prune`/);
  // What is wrong inside an export is said at its path, in JSON's words, not Rust's.
  refused(
    () => planner.plan(doc, { ...exported, objects: [{ kind: 'site', name: 'a', revision: -1 }] }),
    /^the export: objects\[0\]\.revision: invalid value: integer `-1`, expected a non-negative integer at line 1 column \d+$/,
  );
  // ...and names the path, for tools that point at the value.
  assert.throws(
    () => planner.plan(doc, { ...exported, objects: [{ kind: 'site', name: 'a', revision: -1 }] }),
    (error) => error.path === 'objects[0].revision',
  );
  assert.throws(() => planner.plan(doc, '[]'), (error) => error.path === '');
  refused(() => planner.plan(doc, { ...exported, config: { version: 2 } }), /^the export: config\.version: must be 1, not 2 at line 1 column \d+$/);
  refused(() => planner.plan(doc, { ...exported, missing: [{ sites: null }] }), /^the export: missing\[0\]: invalid type: object, expected a string at line 1 column \d+$/);
  refused(() => planner.plan(doc, { ...exported, config: [1] }), /^the export: config: invalid type: array, expected a JSON object at line 1 column \d+$/);
  refused(() => planner.plan(doc, exported, [true]), /options: not an object/);
  // JSON.stringify writes a Map as {}: its prune would be dropped unseen.
  refused(() => planner.plan(doc, exported, new Map([['prune', true]])), /options: a Map or Set/);
  refused(() => planner.plan(doc, exported, () => 1), /options/);
  for (const bad of [undefined, Symbol('x'), () => 1, new Int8Array(1)]) {
    refused(() => planner.canonicalJson(bad), /the JSON/);
  }
  refused(() => planner.canonicalJson('{'), /EOF/);
  // JSON deeper than the reader goes is said as such, not as invalid.
  const deep = (n) => '['.repeat(n) + ']'.repeat(n);
  assert.equal(planner.canonicalJson(deep(127)), deep(127));
  refused(
    () => planner.canonicalJson(deep(128)),
    /^the JSON nests lists and objects deeper than the 127 levels the planner reads: recursion limit exceeded at line 1 column 128$/,
  );
  // Placed as validate places it: the column in characters, from 1.
  refused(() => planner.canonicalJson(''), /^the JSON is not valid JSON: EOF while parsing a value at line 1 column 1$/);
  refused(() => planner.canonicalJson('"é€😀" x'), /trailing characters at line 1 column 7$/);
  // An unpaired surrogate is no Unicode: refused as text, and as an object (whose JSON would
  // escape it for the reader to refuse at a column of text nobody wrote), never replaced.
  refused(() => planner.validate('{"version": 1, "sites": [{"name": "x", "region": "eu\ud800"}]}'), /unpaired UTF-16 surrogate/);
  refused(
    () => planner.validate({ version: 1, sites: [{ name: 'x', kind: 'shared', region: 'eu\ud800' }] }),
    /^the document holds a string with an unpaired UTF-16 surrogate at key "region", which is not Unicode text$/,
  );
  refused(() => planner.validate({ version: 1, ['k\udc00']: 1 }), /a key with an unpaired UTF-16 surrogate/);
  // What JSON.stringify would change unseen is refused: a Map or a Set (written as {}), a
  // number that is not finite (null), a function, a symbol, undefined in a list (left out).
  const pool = (extra) => ({ version: 1, pools: [{ name: 'p', site: 's', class: 'vps-host', ...extra }] });
  refused(() => planner.plan(pool({ ownerQuota: new Map([['gpu', 8]]) }), exported), /^the document holds a Map at key "ownerQuota", which JSON.stringify writes as \{\}: give a plain object$/);
  refused(() => planner.validate(pool({ offers: new Set() })), /holds a Set at key "offers"/);
  refused(() => planner.validate(pool({ policy: { disruptionBudget: NaN } })), /^the document holds NaN at key "disruptionBudget", which is no JSON number$/);
  refused(() => planner.validate(pool({ ownerQuota: { gpu: Infinity } })), /holds Infinity at key "gpu"/);
  refused(() => planner.validate(pool({ gpuModel: () => 'L40S' })), /holds a function at key "gpuModel"/);
  refused(() => planner.validate({ version: 1, sites: [undefined] }), /holds undefined at key "0"/);
  refused(() => planner.canonicalJson({ a: Symbol('s') }), /^the JSON holds a symbol at key "a"/);
  refused(() => planner.canonicalJson(NaN), /^the JSON holds NaN, which is no JSON number$/);
  // What is checked is what JSON.stringify writes: a toJSON's answer anywhere (called with its
  // key, as JSON.stringify calls it), a boxed primitive's value.
  refused(
    () => planner.plan(pool({ ownerQuota: { toJSON: () => new Map([['gpu', 8]]) } }), exported),
    /^the document holds a Map at key "ownerQuota", which JSON.stringify writes as \{\}/,
  );
  // A toJSON that answers nothing for a field is that field left undefined: left out.
  assert.deepStrictEqual(planner.validate({ version: 1, sites: { toJSON() {} } }), { ok: true, document: { version: 1 } });
  refused(() => planner.canonicalHash([new Number(NaN)]), /^the JSON holds NaN at key "0", which is no JSON number$/);
  refused(() => planner.canonicalJson({ a: new Number(Infinity) }), /holds Infinity at key "a"/);
  refused(() => planner.plan(doc, exported, { prune: true, toJSON: () => new Map() }), /options/);
  const keys = [];
  planner.canonicalJson({ a: [{ toJSON: (key) => keys.push(key) }] });
  assert.deepStrictEqual(keys, ['0', '0'], 'toJSON gets its key, from the check and from JSON.stringify');
  assert.equal(planner.canonicalJson([new String('s'), new Boolean(false), new Date(0)]), '["s",false,"1970-01-01T00:00:00.000Z"]');
  // An optional field left undefined is a field left out, as in TypeScript.
  assert.equal(planner.validate(pool({ gpuModel: undefined, site: 's' })).ok, true);
  // Options are a plain object: a prune of a prototype or a class getter would be left out.
  refused(() => planner.plan(doc, exported, Object.create({ prune: true })), /^options: not a plain object/);
  refused(() => planner.plan(doc, exported, new (class { get prune() { return true; } })()), /^options: not a plain object/);
  assert.equal(planner.plan(doc, exported, Object.assign(Object.create(null), { prune: false })).planHash, planner.plan(doc, exported).planHash);
  // A Proxy of a buffer is no buffer (read as one, it was empty bytes).
  refused(() => planner.validate(new Proxy(new ArrayBuffer(8), {})), /^the document is an ArrayBuffer that cannot be read/);
  refused(() => planner.validate(Object.create(ArrayBuffer.prototype)), /^the document is an ArrayBuffer that cannot be read/);
  // Bytes as an ArrayBuffer are bytes; values JSON.stringify writes are JSON.
  const bytes = new TextEncoder().encode(JSON.stringify(doc));
  assert.deepEqual(planner.validate(bytes.buffer), planner.validate(bytes));
  // A SharedArrayBuffer too (JSON.stringify would write it as {}).
  const shared = new SharedArrayBuffer(bytes.length);
  new Uint8Array(shared).set(bytes);
  assert.deepEqual(planner.validate(shared), planner.validate(bytes));
  assert.equal(planner.validate(shared).ok, true);
  assert.equal(planner.canonicalJson({ b: 1, a: [2, null] }), '{"a":[2,null],"b":1}');
  assert.equal(planner.canonicalJson(0.75772857666015625), '0.7577285766601562');
  assert.equal(planner.canonicalHash(exported.config), planner.canonicalHash(JSON.stringify(exported.config)));
});

test('the generated JSON Schema is the committed one, and agrees with the validator', () => {
  const schema = planner.documentSchema();
  const committed = JSON.parse(readFileSync(join(here, '..', '..', 'fleet.schema.json'), 'utf8'));
  assert.deepStrictEqual(schema, committed);

  const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
  const check = ajv.compile(schema);
  for (const name of cases) {
    const bytes = read(join(goldenDir, name), 'document.json');
    let parsed;
    try {
      parsed = JSON.parse(bytes);
    } catch {
      continue; // not JSON at all: nothing for a schema to say
    }
    if (planner.validate(new Uint8Array(bytes)).ok) {
      assert.ok(check(parsed), `${name}: ${JSON.stringify(check.errors)}`);
    }
  }
  const sites = [{ name: 'fra', kind: 'shared', region: 'eu' }];
  // `null` for an optional field is the field left out, for the schema as for the validator.
  const accepted = [
    { version: 1, sites, pools: [{ name: 'p', site: 'fra', class: 'vps-host', providerAccount: null }] },
    { version: 1, sites, pools: [{ name: 'p', site: 'fra', class: 'vps-host', gpuModel: null, policy: null }] },
    // White space is the schema's `\s`: U+0085 (NEL) is none.
    { version: 1, sites: [{ name: 'fra', kind: 'shared', region: '\u0085' }] },
  ];
  for (const document of accepted) {
    assert.equal(planner.validate(document).ok, true, JSON.stringify(planner.validate(document)));
    assert.ok(check(document), `${JSON.stringify(document)}: ${JSON.stringify(check.errors)}`);
  }
  const rejected = [
    { version: 2 },
    { version: 1, extra: true },
    { version: 1, sites: [{ name: 'Fra', kind: 'shared', region: 'x' }] },
    { version: 1, pools: [{ name: 'p', site: 'fra', class: 'provider' }] },
    // `null` is the field left out: no account, which a provider pool must name.
    { version: 1, sites, pools: [{ name: 'p', site: 'fra', class: 'provider', providerAccount: null }] },
    { version: 1, pools: [{ name: 'p', site: 'fra', class: 'vps-host', ownerQuota: { '9gpu': 1 } }] },
    { version: 1, flavors: [{ pool: 'p', name: 'f', vcpu: 0, memoryGiB: 1, diskGiB: 0 }] },
    { version: 1, providerAccounts: [{ name: 'c', provider: 'x', config: { apiToken: 'plain' } }] },
    { version: 1, sites: Array.from({ length: 1001 }, (_, i) => ({ name: `s${i}`, kind: 'shared', region: 'r' })) },
    // ...and U+FEFF is.
    { version: 1, sites: [{ name: 'fra', kind: 'shared', region: '\ufeff ' }] },
  ];
  for (const document of rejected) {
    assert.equal(planner.validate(document).ok, false, JSON.stringify(document).slice(0, 80));
    assert.equal(check(document), false, JSON.stringify(document).slice(0, 80));
  }
});

test('the bundler package is an ES module that plans the same', () => {
  // Bundlers import the .wasm as an ES module; Node does too behind a flag.
  const dir = join(goldenDir, planCases[0]);
  const script = `
    const planner = await import(${JSON.stringify(join(here, '..', 'pkg-bundler', 'planner.js'))});
    const { readFileSync, existsSync } = await import('node:fs');
    const dir = ${JSON.stringify(dir)};
    const options = existsSync(dir + '/options.json') ? JSON.parse(readFileSync(dir + '/options.json')) : undefined;
    const planned = planner.plan(readFileSync(dir + '/document.json', 'utf8'), readFileSync(dir + '/export.json', 'utf8'), options);
    process.stdout.write(planned.planHash);
  `;
  const out = execFileSync(
    process.execPath,
    ['--experimental-wasm-modules', '--no-warnings', '--input-type=module', '-e', script],
    { encoding: 'utf8' },
  );
  assert.equal(out, JSON.parse(read(dir, 'plan.json')).planHash);
});

test('each package lists exactly the files it has', () => {
  for (const pkg of ['pkg-node', 'pkg-bundler']) {
    const dir = join(here, '..', pkg);
    const { files } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    for (const file of files) {
      assert.ok(existsSync(join(dir, file)), `${pkg}/package.json lists ${file}, which is not there`);
    }
    const made = readdirSync(dir).filter((f) => f !== 'package.json' && !f.startsWith('.'));
    for (const file of made) {
      const listed = files.includes(file) || files.includes(`${file}/`);
      assert.ok(listed, `${pkg}/${file} is not in its package.json's files`);
    }
  }
});

test('plan takes its options as optional', () => {
  const dir = join(goldenDir, planCases[0]);
  const doc = read(dir, 'document.json').toString('utf8');
  const exported = read(dir, 'export.json').toString('utf8');
  const withoutPrune = planner.plan(doc, exported);
  assert.deepStrictEqual(planner.plan(doc, exported, {}), withoutPrune);
  assert.deepStrictEqual(planner.plan(doc, exported, null), withoutPrune);
  assert.deepStrictEqual(planner.plan(doc, exported, { prune: false }), withoutPrune);
});

test('plan refuses options that are not {prune?: boolean}', () => {
  const dir = join(goldenDir, planCases[0]);
  const doc = read(dir, 'document.json').toString('utf8');
  const exported = read(dir, 'export.json').toString('utf8');
  assert.throws(
    () => planner.plan(doc, exported, { prune: 'yes' }),
    /options: invalid type: string "yes", expected a boolean.*; expected \{prune\?: boolean\}/,
  );
});

test('a Uint8Array that says another length is read as the bytes it holds', () => {
  // The glue makes room for `length` bytes in wasm memory and copies the bytes the array
  // really holds: a subclass or an own property saying less wrote past the room (a trap, and
  // every later call trapped too), one saying more read what an earlier call left there. In
  // a child process: were it to corrupt the module, the other tests would not go on with it.
  const script = `
    const planner = require(${JSON.stringify(join(here, '..', 'pkg-node', 'planner.js'))});
    const bytes = (text) => new TextEncoder().encode(text);
    class Short extends Uint8Array { get length() { return 1; } }
    class Long extends Uint8Array { get length() { return 77; } }
    const own = bytes('{"version":1,"sites":[]}');
    Object.defineProperty(own, 'length', { value: 2 });
    const answers = [];
    const answer = (run) => { try { answers.push(run()); } catch (error) { answers.push(String(error)); } };
    answer(() => planner.validate(new Short(bytes('{"version":1,"sites":[]}'))).ok);
    answer(() => planner.validate(own).ok);
    answer(() => planner.canonicalJson('[' + ' '.repeat(63) + '"TOP-SECRET"]'));
    answer(() => planner.canonicalJson(new Long(bytes('[' + ' '.repeat(63)))));
    answer(() => planner.canonicalJson(new Long(bytes('[1, 2]'))));
    answer(() => planner.validate('{"version":1}').ok);
    process.stdout.write(JSON.stringify(answers));
  `;
  const answers = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
  assert.deepStrictEqual(answers, [
    true,
    true,
    '["TOP-SECRET"]',
    'Error: the JSON is not valid JSON: EOF while parsing a list at line 1 column 64',
    '[1,2]',
    true,
  ]);
});

test('a JS exception while reading an argument is a plain Error naming it, and leaks no wasm memory', () => {
  // Such an exception thrown through the planner's Rust frames would skip their destructors:
  // the document read before it (3.7 MB a call on the maximal document) stayed allocated
  // for good, and about 1,100 calls left no room to plan at all. Run in a fresh Node whose
  // instance's memory the script can see.
  // A large document (1000 sites and 1000 pools, about 130 KB) planned against an empty fleet.
  const script = `
    const Instance = WebAssembly.Instance;
    let memory;
    WebAssembly.Instance = function (module, imports) {
      const instance = new Instance(module, imports);
      memory = instance.exports.memory;
      return instance;
    };
    const planner = require(${JSON.stringify(join(here, '..', 'pkg-node', 'planner.js'))});
    const names = Array.from({ length: 1000 }, (_, i) => 'n' + i);
    const doc = new TextEncoder().encode(JSON.stringify({
      version: 1,
      sites: names.map((name) => ({ name, kind: 'shared', region: 'eu-central' })),
      pools: names.map((name) => ({ name, site: name, class: 'vps-host', ownerQuota: { gpu: 8 } })),
    }));
    const exported = { tenantId: 'root', caller: 'usr_ops', config: { version: 1 } };
    const detached = new ArrayBuffer(8);
    structuredClone(detached, { transfer: [detached] });
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    // A Uint8Array in appearance whose copy into wasm memory would throw after the glue
    // allocated there (1 MiB a call).
    const trapped = new Proxy(new Uint8Array(1 << 20), {
      get: (target, key) => {
        if (key === '0') throw new Error('trap');
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const transferred = new Uint8Array(8);
    structuredClone(transferred.buffer, { transfer: [transferred.buffer] });
    const thrown = new Set();
    const attempt = (run) => {
      try { run(); } catch (error) {
        thrown.add(error.constructor.name + ': ' + error.message);
        return;
      }
      thrown.add('nothing thrown');
    };
    planner.plan(doc, exported);
    const before = memory.buffer.byteLength;
    for (let i = 0; i < 300; i++) {
      attempt(() => planner.plan(doc, detached));
      attempt(() => planner.plan(doc, exported, revoked));
      attempt(() => planner.plan(detached, exported));
      attempt(() => planner.validate(revoked));
      attempt(() => planner.canonicalJson(detached));
      attempt(() => planner.validate(trapped));
      attempt(() => planner.plan(doc, transferred));
    }
    const after = memory.buffer.byteLength;
    const planHash = planner.plan(doc, exported).planHash;
    process.stdout.write(JSON.stringify({ before, after, planHash, thrown: [...thrown] }));
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
  assert.deepStrictEqual(out.thrown, [
    'Error: the export is an ArrayBuffer that cannot be read (a proxy of one, or its bytes were transferred)',
    'Error: options: cannot be written as JSON; expected {prune?: boolean}',
    'Error: the document is an ArrayBuffer that cannot be read (a proxy of one, or its bytes were transferred)',
    'Error: the document cannot be written as JSON',
    'Error: the JSON is an ArrayBuffer that cannot be read (a proxy of one, or its bytes were transferred)',
    'Error: the document is a Uint8Array that cannot be read (a proxy of one, or its buffer was transferred)',
    'Error: the export is a Uint8Array that cannot be read (a proxy of one, or its buffer was transferred)',
  ]);
  // 1,500 leaked documents and their validated forms would be hundreds of MB.
  assert.ok(out.after - out.before <= 8 << 20, `wasm memory grew from ${out.before} to ${out.after} bytes`);
  assert.match(out.planHash, /^[0-9a-f]{64}$/);
});

test('a string argument is checked and encoded by native calls, not one JS call per UTF-16 unit', () => {
  // Checked from wasm, the maximal document as a string took 31 ms to validate against 12 ms
  // as bytes: a charCodeAt call per unit. The count is what is pinned (times vary), and the
  // check without String.prototype.isWellFormed (older engines) finds the same surrogates.
  const script = (withoutIsWellFormed) => `
    if (${withoutIsWellFormed}) delete String.prototype.isWellFormed;
    const planner = require(${JSON.stringify(join(here, '..', 'pkg-node', 'planner.js'))});
    const charCodeAt = String.prototype.charCodeAt;
    let calls = 0;
    String.prototype.charCodeAt = function (index) { calls++; return charCodeAt.call(this, index); };
    const sites = Array.from({ length: 1000 }, (_, i) => ({ name: 's' + i, kind: 'shared', region: 'eu-\\u00e9\\ud83d\\ude00' }));
    const text = JSON.stringify({ version: 1, sites });
    const ok = planner.validate(text).ok;
    const refused = (text) => { try { planner.validate(text); return 'accepted'; } catch (error) { return error.message; } };
    process.stdout.write(JSON.stringify({
      units: text.length, calls, ok,
      lone: [refused('{"version": 1, "x": "\\ud800"}'), refused('{"version": 1, "x": "a\\udc00b"}')],
    }));
  `;
  for (const without of [false, true]) {
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script(without)], { encoding: 'utf8' }));
    assert.ok(out.units > 40000, `${out.units} UTF-16 units`);
    assert.ok(out.calls < 100, `${out.calls} charCodeAt calls for ${out.units} UTF-16 units`);
    assert.equal(out.ok, true);
    const message = 'the document holds an unpaired UTF-16 surrogate, which is not Unicode text';
    assert.deepStrictEqual(out.lone, [message, message]);
  }
});

test('JSON over 1 GiB is refused with a message before it is copied into wasm', () => {
  // wasm32 cannot allocate 2 GiB at once: such bytes trapped (RuntimeError: unreachable).
  // Zero-filled arrays: their pages are never touched, so the test costs no memory.
  const refused = (run) => {
    try {
      run();
    } catch (error) {
      return `${error.constructor.name}: ${error.message}`;
    }
    return 'nothing thrown';
  };
  assert.equal(
    refused(() => planner.validate(new Uint8Array(2 ** 31))),
    'Error: the document is 2147483648 bytes; the planner reads JSON of up to 1 GiB (1073741824 bytes)',
  );
  assert.equal(
    refused(() => planner.plan('{"version": 1}', new ArrayBuffer(2 ** 30 + 1))),
    'Error: the export is 1073741825 bytes; the planner reads JSON of up to 1 GiB (1073741824 bytes)',
  );
  assert.equal(planner.validate('{"version": 1}').ok, true);
});

test('a 1 GiB document plans against a 1 GiB export, every string escaped (so copied)', () => {
  // The README's promise at the size limit. The document's strings are borrowed from its bytes
  // unless escaped; with both inputs escaped, holding the document's bytes while the export is
  // read needed more than wasm32's 4 GiB (RuntimeError: unreachable). About 10 s and 6 GB.
  const entries = 1000;
  const build = (prefix, suffix) => {
    const keys = Array.from({ length: entries }, (_, i) => `"k${String(i).padStart(4, '0')}":"`);
    const fixed =
      Buffer.byteLength(prefix) + Buffer.byteLength(suffix) +
      keys.reduce((sum, key) => sum + key.length + 2, 0) - 1;
    const value = Math.floor((2 ** 30 - fixed) / entries);
    const bytes = Buffer.alloc(fixed + value * entries, 'a');
    let at = bytes.write(prefix, 0);
    for (let i = 0; i < entries; i++) {
      at += bytes.write(keys[i], at) + value;
      bytes.write('\\n', at - 2); // each value ends with an escape
      at += bytes.write(i + 1 < entries ? '",' : '"', at);
    }
    bytes.write(suffix, at);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  };
  const account = '{"version":1,"providerAccounts":[{"name":"c","provider":"x","config":{';
  const doc = build(account, '}}]}');
  const exported = build(
    `{"tenantId":"root","caller":"usr_ops","config":${account}`,
    '}}]},"objects":[{"kind":"providerAccount","name":"c","id":"pa_1","revision":1}],"tenants":["root"]}',
  );
  assert.ok(doc.length <= 2 ** 30 && doc.length > 2 ** 30 - 1000, `${doc.length} bytes`);
  assert.ok(exported.length <= 2 ** 30 && exported.length > 2 ** 30 - 1000);
  const plan = JSON.parse(planner.planJson(doc, exported));
  assert.deepEqual(plan.changes, [{ kind: 'providerAccount', name: 'c', action: 'unchanged' }]);
  assert.deepEqual(plan.calls, []);
});

test('JSON.stringify(plan(...)) differs from planJson(...) only where the README says', () => {
  // A float written in exponent form, and keys that are array indices (a JS object cannot
  // keep the planner's order of them). The values and the planHash are the same.
  const exported = { tenantId: 'root', caller: 'usr_ops', config: { version: 1 } };
  const budget = (text) =>
    `{"version":1,"sites":[{"name":"fra","kind":"shared","region":"eu"}],` +
    `"pools":[{"name":"p","site":"fra","class":"vps-host","policy":{"disruptionBudget":${text}}}]}`;
  const cases = [
    [budget('0.000001'), '"disruptionBudget":1e-6', '"disruptionBudget":0.000001'],
    [
      '{"version":1,"providerAccounts":[{"name":"c","provider":"x","config":{"2":"b","10":"a"}}]}',
      '"config":{"10":"a","2":"b"}',
      '"config":{"2":"b","10":"a"}',
    ],
  ];
  for (const [doc, inPlanJson, inStringified] of cases) {
    const text = planner.planJson(doc, exported);
    const planned = planner.plan(doc, exported);
    const stringified = JSON.stringify(planned);
    assert.ok(text.includes(inPlanJson), text);
    assert.ok(stringified.includes(inStringified), stringified);
    assert.notEqual(stringified, text);
    assert.deepStrictEqual(JSON.parse(text), planned);
    assert.equal(JSON.parse(text).planHash, planned.planHash);
  }
  // A whole budget is an integer in both (serde_json alone writes `1.0`), as in an export.
  for (const [written, expected] of [['0.25', '0.25'], ['1', '1'], ['1.0', '1'], ['0', '0'], ['-0.0', '0']]) {
    const plain = budget(written);
    const text = planner.planJson(plain, exported);
    assert.ok(text.includes(`"disruptionBudget":${expected}}`), text);
    assert.equal(JSON.stringify(planner.plan(plain, exported)), text);
  }
});

test('a document that starts with a UTF-8 byte order mark is told so, as the CLI tells it', () => {
  // Read from a file saved with one, as bytes or as text (readFileSync keeps the mark).
  const expected = {
    ok: false,
    problems: [
      {
        path: '',
        message: 'the document starts with a UTF-8 byte order mark; save it without one at line 1 column 1',
      },
    ],
  };
  const text = '\ufeff{"version": 1}\n';
  assert.deepStrictEqual(planner.validate(new TextEncoder().encode(text)), expected);
  assert.deepStrictEqual(planner.validate(text), expected);
  assert.throws(
    () => planner.plan(text, { tenantId: 'root', caller: 'usr_ops', config: { version: 1 } }),
    (error) => error.code === 'INVALID_INPUT' && error.problems[0].message === expected.problems[0].message,
  );
});
