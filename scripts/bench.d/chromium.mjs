// The planner as WebAssembly in headless Chromium (chromedriver, a page on loopback), on the
// pair of `fleet-bench fixture`. Prints result rows (JSON lines, section planner-chromium).
//
//   node chromium.mjs FIXTURE_DIR REPO_ROOT [ROUNDS]
//
// Needs target/wasm32-unknown-unknown/release/planner.wasm (planner/js/build.sh builds it);
// packages it with `wasm-bindgen --target web`. Peers in the page, interleaved in the same
// rounds: JSON.parse of the desired document, and microdiff of the two documents (ajv has no
// browser build without a bundler, so the ajv rows are Node's).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [fixtureDir, root, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 15);
const here = import.meta.dirname;
const wasm = join(root, 'target/wasm32-unknown-unknown/release/planner.wasm');
const web = mkdtempSync(join(tmpdir(), 'planner-web-'));
const tools = join(process.env.HOME, '.cache/better-compute/node_modules/.bin');
const which = (name, fallback) => {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    return existsSync(fallback) ? fallback : null;
  }
};
execFileSync(which('wasm-bindgen', join(process.env.HOME, '.cargo/bin/wasm-bindgen')), [
  '--target', 'web', '--no-typescript', '--out-dir', web, wasm,
]);
const wasmOpt = which('wasm-opt', join(tools, 'wasm-opt'));
if (wasmOpt) {
  const file = join(web, 'planner_bg.wasm');
  execFileSync(wasmOpt, ['-O3', '--enable-bulk-memory', '--enable-nontrapping-float-to-int',
    '--enable-sign-ext', '--enable-mutable-globals', file, '-o', file]);
}

const page = `<!doctype html><meta charset="utf-8"><title>bench</title><script type="module">
import diff from '/microdiff.js';
const [docBytes, exportBytes] = await Promise.all(['/document.json', '/export.json'].map(
  async (u) => new Uint8Array(await (await fetch(u)).arrayBuffer())));
const wasmBytes = await (await fetch('/planner/planner_bg.wasm')).arrayBuffer();
const decoder = new TextDecoder();
const t0 = performance.now();
const planner = await import('/planner/planner.js');
await planner.default({ module_or_path: wasmBytes });
const first = planner.plan(docBytes, exportBytes, { prune: true });
const cold = performance.now() - t0;
const candidates = {
  parse: () => JSON.parse(decoder.decode(docBytes)),
  microdiff: () => diff(JSON.parse(decoder.decode(docBytes)), JSON.parse(decoder.decode(exportBytes)).config),
  validate: () => { if (!planner.validate(docBytes).ok) throw new Error('invalid'); },
  plan: () => { if (planner.plan(docBytes, exportBytes, { prune: true }).planHash !== first.planHash) throw new Error('moved'); },
};
const times = Object.fromEntries(Object.keys(candidates).map((k) => [k, []]));
for (let round = -2; round < ${rounds}; round++) {
  for (const [k, fn] of Object.entries(candidates)) {
    const s = performance.now();
    fn();
    if (round >= 0) times[k].push(performance.now() - s);
  }
  await new Promise((r) => setTimeout(r, 0));
}
const median = (t) => [...t].sort((a, b) => a - b)[Math.floor(t.length / 2)];
window.__bench = { cold, calls: first.calls.length, ua: navigator.userAgent,
  ...Object.fromEntries(Object.entries(times).map(([k, t]) => [k, median(t)])) };
</script>`;

const files = {
  '/': ['text/html', () => page],
  '/document.json': ['application/json', () => readFileSync(join(fixtureDir, 'document.json'))],
  '/export.json': ['application/json', () => readFileSync(join(fixtureDir, 'export.json'))],
  '/microdiff.js': ['text/javascript', () => readFileSync(join(here, 'node_modules/microdiff/dist/index.js'))],
  '/planner/planner_bg.wasm': ['application/wasm', () => readFileSync(join(web, 'planner_bg.wasm'))],
};
const server = createServer((req, res) => {
  // The glue and its snippets (the plan builder), as wasm-bindgen laid them out.
  const script = req.url.startsWith('/planner/') && req.url.endsWith('.js') && !req.url.includes('..');
  const file = script
    ? ['text/javascript', () => readFileSync(join(web, req.url.slice('/planner/'.length)))]
    : files[req.url];
  if (!file) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': file[0] }).end(file[1]());
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const site = `http://127.0.0.1:${server.address().port}`;

const driverPort = 9515 + Math.floor(Math.random() * 2000);
const driver = spawn('chromedriver', [`--port=${driverPort}`], { stdio: 'ignore' });
const wd = `http://127.0.0.1:${driverPort}`;
const call = async (method, path, body) => {
  const res = await fetch(wd + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${JSON.stringify(json.value)}`);
  return json.value;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let session;
try {
  for (let i = 0; ; i++) {
    try {
      await call('GET', '/status');
      break;
    } catch (e) {
      if (i > 50) throw e;
      await sleep(200);
    }
  }
  const options = JSON.parse(readFileSync(join(root, 'planner/webdriver.json'), 'utf8'));
  session = (await call('POST', '/session', {
    capabilities: { alwaysMatch: { browserName: 'chrome', ...options } },
  })).sessionId;
  await call('POST', `/session/${session}/url`, { url: site });
  let result = null;
  const deadline = Date.now() + 480_000;
  while (!result && Date.now() < deadline) {
    await sleep(1000);
    result = await call('POST', `/session/${session}/execute/sync`, {
      script: 'return window.__bench || null',
      args: [],
    });
  }
  if (!result) throw new Error('the page did not finish in 8 minutes');
  const out = (row) => console.log(JSON.stringify({ section: 'planner-chromium', ...row }));
  out({ name: 'JSON.parse of the document', ms: result.parse });
  out({ name: 'microdiff of the two documents (with both parses)', ms: result.microdiff });
  out({ name: 'wasm validate (bytes)', ms: result.validate, ratio: result.validate / result.parse, peer: 'JSON.parse' });
  out({ name: `wasm validate + plan + hash (bytes in): ${result.calls} calls`, ms: result.plan, ratio: result.plan / result.parse, peer: 'JSON.parse' });
  out({ name: 'wasm validate + plan + hash (bytes in)', ms: result.plan, ratio: result.plan / result.microdiff, peer: 'microdiff' });
  out({ name: 'cold: instantiate (compiled from fetched bytes) + first plan', ms: result.cold });
  out({ text: `${result.ua}; ${rounds} rounds` });
} finally {
  if (session) await call('DELETE', `/session/${session}`).catch(() => {});
  driver.kill();
  server.close();
  rmSync(web, { recursive: true, force: true });
}
