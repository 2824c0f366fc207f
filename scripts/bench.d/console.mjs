// The console's time to first render in headless Chromium: the release server serving dist/
// (scripts/console-budget builds it) on loopback, a fresh browser session per load, the
// first contentful paint and the wasm's arrival read from the page's performance entries.
// Prints result rows (JSON lines, section console).
//
//   node console.mjs REPO_ROOT [FIXTURE_DIR] [LOADS]   (the fixture is unused for now)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [root, , loadsArg] = process.argv.slice(2);
const loads = Number(loadsArg ?? 3);
const dist = join(root, 'dist');
if (!readdirSync(dist).some((f) => f.endsWith('.wasm'))) throw new Error('dist/ has no .wasm');
const data = mkdtempSync(join(tmpdir(), 'console-bench-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const server = spawn(join(root, 'target/release/better-compute'), [
  'serve', '--listen', '127.0.0.1:0', '--database', `sqlite://${join(data, 'fleet.db')}`,
  '--console-dir', dist, '--admin-key-file', join(data, 'admin.key'),
], { stdio: ['ignore', 'pipe', 'pipe'] });
let logs = '';
const site = await new Promise((resolve, reject) => {
  const onData = (chunk) => {
    logs += chunk;
    const m = logs.match(/127\.0\.0\.1:(\d+)/);
    if (m && m[1] !== '0') resolve(`http://127.0.0.1:${m[1]}`);
  };
  server.stdout.on('data', onData);
  server.stderr.on('data', onData);
  server.on('exit', () => reject(new Error(`the server exited: ${logs}`)));
  setTimeout(() => reject(new Error(`no address in 60 s: ${logs}`)), 60_000);
});

const driverPort = 12000 + Math.floor(Math.random() * 2000);
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
const options = JSON.parse(readFileSync(join(root, 'planner/webdriver.json'), 'utf8'));
const median = (t) => [...t].sort((a, b) => a - b)[Math.floor(t.length / 2)];
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
  const fcp = [];
  const wasm = [];
  for (let i = 0; i < loads; i++) {
    const session = (await call('POST', '/session', {
      capabilities: { alwaysMatch: { browserName: 'chrome', ...options } },
    })).sessionId;
    try {
      await call('POST', `/session/${session}/url`, { url: site });
      let entry = null;
      for (let t = 0; t < 120 && !entry; t++) {
        entry = await call('POST', `/session/${session}/execute/sync`, {
          script: `const p = performance.getEntriesByName('first-contentful-paint')[0];
            const w = performance.getEntriesByType('resource').find((r) => r.name.endsWith('.wasm'));
            return p && document.body.children.length > 0 ? { fcp: p.startTime, wasm: w ? w.responseEnd : null } : null;`,
          args: [],
        });
        if (!entry) await sleep(250);
      }
      if (!entry) throw new Error('no first contentful paint in 30 s');
      fcp.push(entry.fcp);
      if (entry.wasm != null) wasm.push(entry.wasm);
    } finally {
      await call('DELETE', `/session/${session}`).catch(() => {});
    }
  }
  const out = (row) => console.log(JSON.stringify({ section: 'console', ...row }));
  if (wasm.length) out({ name: `wasm downloaded (from navigation; median of ${loads} fresh sessions)`, ms: median(wasm) });
  out({ name: `time to first render: first contentful paint (median of ${loads} fresh sessions)`, ms: median(fcp) });
} finally {
  driver.kill();
  server.kill();
  rmSync(data, { recursive: true, force: true });
}
