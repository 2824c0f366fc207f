// The console in headless Chromium, served with dist/ (scripts/console-budget builds it) by
// the release server on loopback:
// - time to first render: a fresh browser session per load, the first contentful paint and
//   the wasm's arrival read from the page's performance entries;
// - planning the maximal document in the page: the server holds the maximal pair's fleet
//   (its export's document applied to root, with the tenants its offers name), the page signs
//   in, fetches the export, and the maximal document is pasted as a person's paste arrives
//   (a `paste` event with the text on its clipboard; the page holds a long paste outside its
//   editor, and what the page leaves to the browser is inserted with one input event, as the
//   browser would); the page's own performance measures ("validate", "plan", "plan-view", when the
//   console records them; else its "planned in" line) and the time from the paste until the
//   plan's hash shows.
// Prints result rows (JSON lines, section console).
//
//   node console.mjs REPO_ROOT FIXTURE_DIR [LOADS] [PASTES]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [root, fixture, loadsArg, pastesArg] = process.argv.slice(2);
const loads = Number(loadsArg ?? 3);
const pastes = Number(pastesArg ?? 5);
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

// The server's API as the administrator.
const adminKey = () => readFileSync(join(data, 'admin.key'), 'utf8').trim();
const api = async (method, input) => {
  const res = await fetch(`${site}/api/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminKey()}` },
    body: JSON.stringify(input),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method}: ${JSON.stringify(json.error)}`);
  return json;
};

// Runs `script` in the page until it answers something other than null (every 250 ms).
const until = async (session, script, what, seconds = 120) => {
  for (let t = 0; t < seconds * 4; t++) {
    const v = await call('POST', `/session/${session}/execute/sync`, { script, args: [] });
    if (v != null) return v;
    await sleep(250);
  }
  throw new Error(`${what}: not within ${seconds} s`);
};

// Plans the maximal document in the page, `pastes` times in one session; prints medians.
async function planInPage(out) {
  const text = readFileSync(join(fixture, 'document.json'), 'utf8');
  const state = JSON.parse(readFileSync(join(fixture, 'export.json'), 'utf8'));
  for (const id of state.tenants.filter((t) => t !== 'root')) await api('tenant.create', { id });
  const applying = performance.now();
  const applied = await api('fleet.apply', { tenantId: 'root', config: state.config });
  console.error(`console bench: the maximal fleet applied (${applied.applied} calls) in ${((performance.now() - applying) / 1000).toFixed(1)} s`);
  const session = (await call('POST', '/session', {
    capabilities: { alwaysMatch: { browserName: 'chrome', ...options } },
  })).sessionId;
  try {
    await call('POST', `/session/${session}/url`, { url: site });
    await until(session, "return document.querySelector('#api-key') ? true : null", 'the sign-in form');
    const input = await call('POST', `/session/${session}/element`, { using: 'css selector', value: '#api-key' });
    await call('POST', `/session/${session}/element/${Object.values(input)[0]}/value`, { text: adminKey() });
    await call('POST', `/session/${session}/execute/sync`, { script: "document.querySelector('#sign-in').click();", args: [] });
    await until(session, "const t = document.querySelector('#tab-plan'); if (t) { t.click(); return true; } return null;", 'the Plan tab');
    // The export of the maximal fleet (11,800 objects) is fetched once, on the tab.
    await until(session, "return document.querySelector('#export-info') && document.querySelector('#document') ? true : null", 'the export', 300);
    const rounds = [];
    for (let i = 0; i < pastes; i++) {
      rounds.push(await call('POST', `/session/${session}/execute/async`, {
        script: `const [text, done] = arguments;
          const editor = document.querySelector('#document');
          const input = (value) => { editor.value = value; editor.dispatchEvent(new Event('input', { bubbles: true })); };
          // A paste on the focused element; what the page does not take, the browser inserts.
          const paste = (target, value) => {
            const data = new DataTransfer();
            data.setData('text/plain', value);
            const event = new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true });
            target.dispatchEvent(event);
            if (!event.defaultPrevented) input(value);
          };
          // An empty editor: a held document is replaced by pasting over it ("Edit here").
          const held = document.querySelector('#held');
          if (held && !held.hidden) paste(document.querySelector('#edit-here'), '');
          else input('');
          setTimeout(() => {
            performance.clearMeasures();
            const start = performance.now();
            paste(editor, text);
            const sync = performance.now() - start;
            const poll = () => {
              const hash = document.querySelector('#plan-hash');
              if (!hash || hash.textContent.trim().length !== 64) return setTimeout(poll, 2);
              const shown = performance.now() - start;
              const entry = (name) => { const e = performance.getEntriesByName(name, 'measure'); return e[e.length - 1]; };
              const last = (name) => { const e = entry(name); return e ? e.duration : null; };
              // When the page began validating, and finished showing, from the paste.
              const began = entry('validate') ? entry('validate').startTime - start : null;
              const ended = entry('plan-view') ? entry('plan-view').startTime + entry('plan-view').duration - start : null;
              done({ shown, sync, began, ended, validate: last('validate'), plan: last('plan'), view: last('plan-view'),
                     line: (document.querySelector('#plan-time') || {}).textContent || '' });
            };
            poll();
          }, 50);`,
        args: [text],
      }));
    }
    console.error(`console bench: in-page rounds: ${JSON.stringify(rounds)}`);
    const pick = (k) => rounds.map((r) => r[k]).filter((v) => typeof v === 'number');
    // Without the measures, the page's own line: "Validated in X ms and planned in Y ms".
    const fromLine = (re) => rounds.map((r) => r.line.match(re)).filter(Boolean).map((m) => Number(m[1]));
    const measured = pick('plan').length > 0;
    const validate = measured ? pick('validate') : fromLine(/[Vv]alidated in ([\d.]+) ms/);
    const plan = measured ? pick('plan') : fromLine(/planned in ([\d.]+) ms/);
    const source = measured ? 'performance measure' : "the page's timing line,";
    const of = `median of ${pastes} pastes in one session`;
    if (validate.length) out({ name: `in the page: validate the maximal document (${source} "validate"; ${of})`, ms: median(validate) });
    if (plan.length) out({ name: `in the page: plan it against the ${state.objects.length}-object export (${source} "plan"; ${of})`, ms: median(plan) });
    if (pick('view').length) out({ name: `in the page: show the plan (performance measure "plan-view"; ${of})`, ms: median(pick('view')) });
    out({ name: `in the page: from the paste until the planHash shows (validate, plan, render; ${of})`, ms: median(pick('shown')) });
    // The rest is the browser's: style, layout and paint of the editor's text and the plan.
    if (pick('ended').length) out({ name: `of which the page's code: from the paste to the end of its "plan-view" measure (${of})`, ms: median(pick('ended')) });
  } finally {
    await call('DELETE', `/session/${session}`).catch(() => {});
  }
}
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
  if (fixture) await planInPage(out);
} finally {
  driver.kill();
  server.kill();
  rmSync(data, { recursive: true, force: true });
}
