// The planner as WebAssembly in Node against its JS peers, on the pair of `fleet-bench
// fixture`. Prints result rows (JSON lines, section planner-node) for `fleet-bench report`.
//
//   node node.mjs FIXTURE_DIR PKG_NODE_DIR SCHEMA [ROUNDS]
//
// Peers, measured in the same rounds, interleaved:
// - JSON.parse + ajv validate of the desired document alone (the generated schema);
// - a plain JS implementation of the same plan: parse both, ajv validate, keyed diff against
//   the export's items and ids, calls as objects, canonical JSON (RFC 8785 for the integers
//   and strings of these documents), SHA-256 with node:crypto;
// - microdiff of the desired document against the export's config (parsed inside the round).
// Cold start runs in fresh processes: instantiate + first plan, ajv load + compile + first
// validate.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Ajv from 'ajv';
import diff from 'microdiff';

const [fixtureDir, builtPkg, schemaPath, roundsArg] = process.argv.slice(2);
// A private copy: planner/js/build.sh, run by someone else meanwhile, replaces pkg-node/.
const pkgDir = mkdtempSync(join(tmpdir(), 'planner-pkg-'));
cpSync(builtPkg, pkgDir, { recursive: true });
process.on('exit', () => rmSync(pkgDir, { recursive: true, force: true }));
const rounds = Number(roundsArg ?? 25);
const require = createRequire(import.meta.url);
const planner = require(join(pkgDir, 'planner.js'));
const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));

const docBytes = new Uint8Array(readFileSync(join(fixtureDir, 'document.json')));
const exportBytes = new Uint8Array(readFileSync(join(fixtureDir, 'export.json')));
const decoder = new TextDecoder();
const options = { prune: true };

const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
const check = ajv.compile(schema);

// --- The plain JS pipeline -------------------------------------------------------------

/** RFC 8785 for what these documents hold (integers, plain floats, strings, no -0). */
function canonical(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
}

const lists = [
  ['sites', 'site', (s) => s.name],
  ['providerAccounts', 'providerAccount', (a) => a.name],
  ['pools', 'pool', (p) => p.name],
  ['flavors', 'flavor', (f) => `${f.pool}/${f.name}`],
  ['sandboxTemplates', 'sandboxTemplate', (t) => t.name],
];

function jsPlan(docIn, exportIn, opts) {
  const doc = JSON.parse(decoder.decode(docIn));
  if (!check(doc)) throw new Error('invalid');
  const exported = JSON.parse(decoder.decode(exportIn));
  const tenantId = exported.tenantId;
  const refs = new Map();
  for (const o of exported.objects) refs.set(`${o.kind}:${o.name}`, o);
  const idOf = (kind, name) => refs.get(`${kind}:${name}`)?.id ?? `new:${kind}:${name}`;
  const changes = [];
  const calls = [];
  const create = (kind, name, fields) => {
    changes.push({ kind, name, action: 'create' });
    calls.push({
      method: `${kind}.create`,
      input: { tenantId, idempotencyKey: `fleet:${tenantId}:${kind}:${name}`, ...fields },
    });
  };
  const update = (kind, name, fields) => {
    const ref = refs.get(`${kind}:${name}`);
    changes.push({ kind, name, action: 'update' });
    calls.push({ method: `${kind}.update`, input: { tenantId, id: ref.id, ifRevision: ref.revision, ...fields } });
  };
  for (const [list, kind, keyOf] of lists) {
    const current = new Map();
    for (const item of exported.config[list] ?? []) current.set(keyOf(item), item);
    const wanted = doc[list];
    if (!wanted) continue;
    const seen = new Set();
    for (const item of wanted) {
      const name = keyOf(item);
      seen.add(name);
      const have = current.get(name);
      const { ownerQuota, offers, ...own } = item;
      const fields = { ...own };
      if (kind === 'pool') {
        fields.siteId = idOf('site', item.site);
        delete fields.site;
        if (item.providerAccount) fields.providerAccountId = idOf('providerAccount', item.providerAccount);
      }
      if (kind === 'flavor' || kind === 'sandboxTemplate') fields.poolId = idOf('pool', item.pool);
      if (kind === 'sandboxTemplate') fields.flavorId = idOf('flavor', `${item.pool}/${item.flavor}`);
      if (!have) {
        create(kind, name, fields);
      } else {
        const { ownerQuota: _q, offers: _o, ...haveOwn } = have;
        if (canonical(own) === canonical(haveOwn)) changes.push({ kind, name, action: 'unchanged' });
        else update(kind, name, fields);
      }
      if (kind === 'pool') {
        const poolId = idOf('pool', name);
        for (const [resource, max] of Object.entries(ownerQuota ?? {})) {
          const ref = refs.get(`ownerQuota:${name}:${resource}`);
          if (have?.ownerQuota?.[resource] === max) {
            changes.push({ kind: 'ownerQuota', name: `${name}:${resource}`, action: 'unchanged' });
          } else {
            changes.push({ kind: 'ownerQuota', name: `${name}:${resource}`, action: ref ? 'update' : 'create' });
            calls.push({ method: 'pool.setOwnerQuota', input: { tenantId, poolId, resource, max, ifRevision: ref?.revision } });
          }
        }
        const haveOffers = new Map((have?.offers ?? []).map((o) => [o.tenant, o]));
        for (const offer of offers ?? []) {
          const offerName = `${name} -> ${offer.tenant}`;
          const old = haveOffers.get(offer.tenant);
          haveOffers.delete(offer.tenant);
          if (old && canonical(old) === canonical(offer)) {
            changes.push({ kind: 'offer', name: offerName, action: 'unchanged' });
          } else {
            const ref = refs.get(`offer:${offerName}`);
            changes.push({ kind: 'offer', name: offerName, action: old ? 'update' : 'create' });
            calls.push({ method: 'pool.offer', input: { tenantId, poolId, ...offer, ifRevision: ref?.revision } });
          }
        }
        for (const tenant of haveOffers.keys()) {
          changes.push({ kind: 'offer', name: `${name} -> ${tenant}`, action: 'delete' });
          calls.push({ method: 'pool.unoffer', input: { tenantId, poolId, tenant } });
        }
      }
    }
    if (opts.prune) {
      for (const name of current.keys()) {
        if (seen.has(name)) continue;
        const ref = refs.get(`${kind}:${name}`);
        changes.push({ kind, name, action: 'delete' });
        calls.push({ method: `${kind}.delete`, input: { tenantId, id: ref.id, ifRevision: ref.revision } });
      }
    }
  }
  const planHash = createHash('sha256').update(canonical(calls)).digest('hex');
  return { changes, calls, planHash };
}

// --- Rounds ------------------------------------------------------------------------------

const first = planner.plan(docBytes, exportBytes, options);
if (first.summary.blocked) throw new Error('the benchmark plan is blocked');
const jsFirst = jsPlan(docBytes, exportBytes, options);

const candidates = [];
const candidate = (name, fn) => {
  const c = { name, fn, times: [] };
  candidates.push(c);
  return c;
};
const ajvPeer = candidate('JSON.parse + ajv validate (desired document alone)', () => {
  if (!check(JSON.parse(decoder.decode(docBytes)))) throw new Error('invalid');
});
const parseOnly = candidate('JSON.parse of the document', () => JSON.parse(decoder.decode(docBytes)));
const jsPeer = candidate('plain JS pipeline (parse, validate, keyed diff, canonical JSON, SHA-256)', () =>
  jsPlan(docBytes, exportBytes, options),
);
const microPeer = candidate('microdiff of the two documents (with both parses)', () =>
  diff(JSON.parse(decoder.decode(docBytes)), JSON.parse(decoder.decode(exportBytes)).config),
);
const wasmValidate = candidate('wasm validate (bytes)', () => {
  if (!planner.validate(docBytes).ok) throw new Error('invalid');
});
const wasmPlan = candidate('wasm validate + plan + hash (bytes in)', () => {
  const planned = planner.plan(docBytes, exportBytes, options);
  if (planned.planHash !== first.planHash) throw new Error('the plan moved');
});
// The plan as JSON text (no JS objects built): for tools that write it out or send it on.
const wasmPlanJson =
  typeof planner.planJson === 'function'
    ? candidate('wasm validate + plan + hash, the plan as JSON text (planJson)', () => {
        if (planner.planJson(docBytes, exportBytes, options).length === 0) throw new Error('no plan');
      })
    : null;

for (let round = -3; round < rounds; round++) {
  for (const c of candidates) {
    const start = performance.now();
    c.fn();
    if (round >= 0) c.times.push(performance.now() - start);
  }
}
const median = (times) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)];
for (const c of candidates) c.ms = median(c.times);

const out = (row) => console.log(JSON.stringify({ section: 'planner-node', ...row }));
out({ name: ajvPeer.name, ms: ajvPeer.ms });
out({ name: parseOnly.name, ms: parseOnly.ms });
out({ name: `${jsPeer.name}: ${jsFirst.calls.length} calls`, ms: jsPeer.ms });
out({ name: microPeer.name, ms: microPeer.ms });
out({ name: wasmValidate.name, ms: wasmValidate.ms, ratio: wasmValidate.ms / ajvPeer.ms, peer: 'ajv' });
out({ name: `${wasmPlan.name}: ${first.calls.length} calls`, ms: wasmPlan.ms, ratio: wasmPlan.ms / ajvPeer.ms, peer: 'ajv', goal: '<= 1.0 x' });
out({ name: wasmPlan.name, ms: wasmPlan.ms, ratio: wasmPlan.ms / jsPeer.ms, peer: 'plain JS', goal: '< 0.25 x' });
out({ name: wasmPlan.name, ms: wasmPlan.ms, ratio: wasmPlan.ms / microPeer.ms, peer: 'microdiff' });
if (wasmPlanJson) out({ name: wasmPlanJson.name, ms: wasmPlanJson.ms, ratio: wasmPlanJson.ms / ajvPeer.ms, peer: 'ajv' });

// --- Cold start, in fresh processes --------------------------------------------------------

const coldWasm = `
const t0 = performance.now();
const p = require(${JSON.stringify(join(pkgDir, 'planner.js'))});
const fs = require('node:fs');
const d = new Uint8Array(fs.readFileSync(${JSON.stringify(join(fixtureDir, 'document.json'))}));
const e = new Uint8Array(fs.readFileSync(${JSON.stringify(join(fixtureDir, 'export.json'))}));
p.plan(d, e, { prune: true });
console.log(performance.now() - t0);`;
const coldAjv = `
const t0 = performance.now();
const Ajv = require('ajv');
const fs = require('node:fs');
const schema = JSON.parse(fs.readFileSync(${JSON.stringify(schemaPath)}, 'utf8'));
const text = fs.readFileSync(${JSON.stringify(join(fixtureDir, 'document.json'))}, 'utf8');
const check = new Ajv({ allErrors: true, strict: true, strictRequired: false }).compile(schema);
if (!check(JSON.parse(text))) throw new Error('invalid');
console.log(performance.now() - t0);`;
const cold = (script) => {
  const times = [];
  // Nine: a first plan takes 85 to 190 ms as V8's background recompiles race it
  // (planner/js/README.md, "Cold start"); the median of five swung by 40 ms between runs.
  for (let i = 0; i < 9; i++) {
    const text = execFileSync(process.execPath, ['-e', script], {
      cwd: join(import.meta.dirname),
      encoding: 'utf8',
    });
    times.push(Number(text.trim()));
  }
  return median(times);
};
const wasmCold = cold(coldWasm);
const ajvCold = cold(coldAjv);
out({ name: 'cold: ajv load + compile + first validate (fresh process)', ms: ajvCold });
out({
  name: 'cold: wasm instantiate + first plan (fresh process)',
  ms: wasmCold,
  ratio: wasmCold / ajvCold,
  peer: 'ajv',
  goal: '<= 1.0 x',
});
out({ text: `node ${process.version}, ${rounds} rounds; wasm ${readFileSync(join(pkgDir, 'planner_bg.wasm')).length} bytes` });
