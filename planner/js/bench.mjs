// The planner as WebAssembly in Node, on the maximal document pair of the criterion benchmark
// (1000 items in every list; the fleet differs in about one item in ten), against the peer
// measured in the same run: JSON.parse + ajv validation of the desired document alone with the
// JSON Schema the planner generates. Prints medians and ratios; asserts nothing.
//
//   ./build.sh && npm ci && node bench.mjs
// The pair comes from `PLANNER_BENCH_FIXTURE=bench-data cargo bench -p planner --bench plan`,
// which this script runs when bench-data/ is missing.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const pkg = join(here, 'pkg-node', 'planner.js');
if (!existsSync(pkg)) {
  console.error('bench.mjs: pkg-node/ is missing: run ./build.sh first');
  process.exit(1);
}
const data = join(here, 'bench-data');
if (!existsSync(join(data, 'export.json'))) {
  console.log('bench.mjs: writing the maximal pair with cargo bench (once)');
  execFileSync('cargo', ['bench', '-p', 'planner', '--bench', 'plan'], {
    cwd: join(here, '..', '..'),
    env: { ...process.env, PLANNER_BENCH_FIXTURE: data },
    stdio: 'inherit',
  });
}

const t0 = performance.now();
const planner = require(pkg);
const instantiated = performance.now() - t0;

const docBytes = new Uint8Array(readFileSync(join(data, 'document.json')));
const exportBytes = new Uint8Array(readFileSync(join(data, 'export.json')));
const docText = new TextDecoder().decode(docBytes);
const exportText = new TextDecoder().decode(exportBytes);
const docObject = JSON.parse(docText);
const exportObject = JSON.parse(exportText);
const options = { prune: true };

const a0 = performance.now();
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
const check = ajv.compile(planner.documentSchema());
const firstOk = check(JSON.parse(docText));
const ajvCold = performance.now() - a0;
if (!firstOk) throw new Error(`ajv rejects the document: ${JSON.stringify(check.errors)}`);

const p0 = performance.now();
const first = planner.plan(docBytes, exportBytes, options);
const wasmCold = instantiated + (performance.now() - p0);
if (first.summary.blocked) throw new Error('the benchmark plan is blocked');

function median(fn, runs = 25) {
  for (let i = 0; i < 3; i++) fn();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)];
}

const rows = [];
const row = (name, ms, peer) => rows.push({ name, ms, peer });

const peer = median(() => {
  if (!check(JSON.parse(docText))) throw new Error('invalid');
});
row('peer: JSON.parse + ajv validate (desired document)', peer);
row('peer: JSON.parse of the document', median(() => JSON.parse(docText)));

for (const [form, doc] of [['string', docText], ['Uint8Array', docBytes], ['object', docObject]]) {
  row(`wasm validate (${form})`, median(() => {
    if (!planner.validate(doc).ok) throw new Error('invalid');
  }), peer);
}
for (const [form, doc, exported] of [
  ['string', docText, exportText],
  ['Uint8Array', docBytes, exportBytes],
  ['object', docObject, exportObject],
]) {
  row(`wasm plan: validate + plan + hash (${form})`, median(() => {
    const planned = planner.plan(doc, exported, options);
    if (planned.planHash !== first.planHash) throw new Error('the plan moved');
  }), peer);
}

console.log(
  `maximal pair: document ${(docBytes.length / 1024).toFixed(0)} KiB, export ` +
    `${(exportBytes.length / 1024).toFixed(0)} KiB; ${first.calls.length} calls; ` +
    `summary ${JSON.stringify(first.summary)}`,
);
console.log(`\nmedians (node ${process.version}):`);
for (const { name, ms, peer: p } of rows) {
  const ratio = p ? `  ${(ms / p).toFixed(2)} x the peer` : '';
  console.log(`  ${name.padEnd(52)}${ms.toFixed(2).padStart(9)} ms${ratio}`);
}
console.log('  (target: wasm plan from bytes <= 1.5 x the peer; stretch 1.0 x)');
console.log(`\ncold start: instantiate + first plan ${wasmCold.toFixed(1)} ms; ` +
  `ajv load + compile + first validate ${ajvCold.toFixed(1)} ms ` +
  `(${(wasmCold / ajvCold).toFixed(2)} x)`);
