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

// Every candidate runs once per round, in turn, so that a busy machine slows all of them
// alike and the ratios stay meaningful; each row is the median over the rounds.
const candidates = [];
const candidate = (name, fn, isPeer = false) => candidates.push({ name, fn, isPeer, times: [] });

candidate('peer: JSON.parse + ajv validate (desired document)', () => {
  if (!check(JSON.parse(docText))) throw new Error('invalid');
}, true);
candidate('peer: JSON.parse of the document', () => JSON.parse(docText));
for (const [form, doc] of [['string', docText], ['Uint8Array', docBytes], ['object', docObject]]) {
  candidate(`wasm validate (${form})`, () => {
    if (!planner.validate(doc).ok) throw new Error('invalid');
  });
}
for (const [form, doc, exported] of [
  ['string', docText, exportText],
  ['Uint8Array', docBytes, exportBytes],
  ['object', docObject, exportObject],
]) {
  candidate(`wasm plan: validate + plan + hash (${form})`, () => {
    const planned = planner.plan(doc, exported, options);
    if (planned.planHash !== first.planHash) throw new Error('the plan moved');
  });
}
// The answer's form: plain objects (above) or the plan's JSON text, from bytes.
candidate('wasm planJson: the same, answered as JSON text (Uint8Array)', () => {
  if (planner.planJson(docBytes, exportBytes, options).length === 0) throw new Error('empty');
});

const rounds = Number(process.env.ROUNDS ?? 25);
for (let round = -3; round < rounds; round++) {
  for (const c of candidates) {
    const start = performance.now();
    c.fn();
    if (round >= 0) c.times.push(performance.now() - start);
  }
}
const median = (times) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)];
const peer = median(candidates.find((c) => c.isPeer).times);

console.log(
  `maximal pair: document ${(docBytes.length / 1024).toFixed(0)} KiB, export ` +
    `${(exportBytes.length / 1024).toFixed(0)} KiB; ${first.calls.length} calls; ` +
    `summary ${JSON.stringify(first.summary)}`,
);
console.log(`\nmedians of ${rounds} rounds (node ${process.version}):`);
for (const { name, times, isPeer } of candidates) {
  const ms = median(times);
  const ratio = isPeer ? '' : `  ${(ms / peer).toFixed(2)} x the peer`;
  console.log(`  ${name.padEnd(52)}${ms.toFixed(2).padStart(9)} ms${ratio}`);
}
console.log('  (target: wasm plan from bytes <= 1.5 x the peer; stretch 1.0 x)');
console.log(`\ncold start: instantiate + first plan ${wasmCold.toFixed(1)} ms; ` +
  `ajv load + compile + first validate ${ajvCold.toFixed(1)} ms ` +
  `(${(wasmCold / ajvCold).toFixed(2)} x)`);
