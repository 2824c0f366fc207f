// Compiled by `tsc -p test/types` (part of `npm test`), never run: the package's TypeScript
// types must accept what the README shows and refuse what the API refuses.
import * as planner from '../../pkg-node/planner.js';
import type { Change, Document, Export, ExportError, Plan, Problem, ValidateResult } from '../../pkg-node/planner.js';

declare const bytes: Uint8Array;
declare const exported: Export;

const doc: Document = {
  version: 1,
  sites: [{ name: 'fra', kind: 'shared', region: 'eu-central' }],
  pools: [{ name: 'vps-fra', site: 'fra', class: 'vps-host', ownerQuota: { gpu: 8 },
            offers: [{ tenant: 'acme', quota: { vcpu: 64 } }] }],
};

// validate: a discriminated union.
const checked: ValidateResult = planner.validate(bytes);
if (checked.ok) {
  const version: 1 = checked.document.version;
  void version;
} else {
  const first: Problem = checked.problems[0];
  const where: string = first.path;
  void where;
}
// @ts-expect-error: `document` exists only when `ok` is true
void planner.validate(doc).document;

// plan: text, bytes or objects in; a plan out.
const plan: Plan = planner.plan(doc, exported, { prune: true });
// An optional field left undefined is left out at run time, so the types take it, even
// under exactOptionalPropertyTypes (this config's).
void planner.plan({ version: 1, pools: [{ name: 'p', site: 's', class: 'provider', gpuModel: undefined }] }, exported, { prune: undefined });
const text: string = planner.planJson(bytes, bytes);
// An ArrayBuffer of UTF-8 is bytes too (what fetch's arrayBuffer() answers).
void planner.plan(bytes.buffer as ArrayBuffer, exported);
void planner.canonicalHash(new ArrayBuffer(2));
const hash: string = plan.planHash;
const change: Change = plan.changes[0];
const blocked: true | undefined = change.blocked;
const tenant: string = plan.calls[0].input.tenantId;
void [text, hash, blocked, tenant];
// @ts-expect-error: an action is one of four words
const wrong: Change['action'] = 'replace';
// @ts-expect-error: options are {prune?: boolean}
planner.plan(doc, exported, { prune: 'yes' });
// @ts-expect-error: a document is text, bytes or a Document
planner.validate(42);
// @ts-expect-error: a site's kind is shared or dedicated
const site: Document = { version: 1, sites: [{ name: 'x', kind: 'cloud', region: 'r' }] };
void [wrong, site];

// An export that cannot be read: the path of its problem.
try {
  planner.plan(doc, '{}');
} catch (error) {
  const at: string = (error as ExportError).path;
  void at;
}

// The helpers.
const canonical: string = planner.canonicalJson('{"b":1,"a":2}');
const schema: Record<string, unknown> = planner.documentSchema();
void [canonical, schema, planner.canonicalHash('[]')];
void planner.canonicalHash(exported.config);
// @ts-expect-error: undefined is no JSON
void planner.canonicalHash(undefined);

// `null` for an optional field is the field left out, as the API reads it; null options are
// no options.
const withNulls: Document = {
  version: 1,
  sites: null,
  pools: [{ name: 'p', site: 'fra', class: 'vps-host', gpuModel: null, policy: null, offers: null }],
};
void planner.plan(withNulls, exported, null);
