// Writes through the sidecar with the official openai SDK's generic client.post: each a
// logical action named by x-sluice-action, journaled by the sidecar and sent with one
// idempotency key.
//
// Usage: writes.mjs --provider P --path /v1/... --tenant TENANT --task TASK [--count N]
//                   [--threads T] [--prefix PREFIX]
//
// Sends N writes (T at a time), actions PREFIX0 .. PREFIX{N-1}, each body carrying the
// action's client reference (what sluice derives from the task and action names; the task
// an agent names is its tenant's, TENANT/TASK), and prints for each its status, the
// sidecar's headers and the provider's id; or the error the SDK threw (a connection refused
// while the sidecar is down is one).

import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';

import { OpenAI, failure, isApiError, pooled, report, sidecar, sluiceHeaders } from './sdk_common.mjs';

/** The client reference sluice derives for an action (sluice::journal::client_reference). */
function reference(task, action) {
  const digest = createHash('sha256').update(`${task}\n${action}`).digest('hex');
  return `sluice-${digest.slice(0, 24)}`;
}

async function one(client, a, action) {
  const seen = { action };
  try {
    const { data, response } = await client
      .post(a.path, {
        body: {
          amount: 100,
          currency: 'eur',
          description: action,
          metadata: { client_reference: reference(`${a.tenant}/${a.task}`, action) },
        },
        headers: { 'x-sluice-task': a.task, 'x-sluice-action': action },
      })
      .withResponse();
    Object.assign(seen, {
      status: response.status,
      headers: sluiceHeaders(response.headers),
      id: data?.id ?? null,
    });
  } catch (e) {
    if (!isApiError(e)) throw e;
    Object.assign(seen, failure(e));
  }
  return seen;
}

const { values: a } = parseArgs({
  options: {
    provider: { type: 'string' },
    path: { type: 'string' },
    tenant: { type: 'string' },
    task: { type: 'string' },
    count: { type: 'string', default: '1' },
    threads: { type: 'string', default: '1' },
    prefix: { type: 'string', default: 'write-' },
  },
});
for (const name of ['provider', 'path', 'tenant', 'task']) {
  if (a[name] === undefined) {
    console.error(`writes.mjs: --${name} is required (see the usage at the top of the script)`);
    process.exit(2);
  }
}
const { url, token } = sidecar();
const client = new OpenAI({
  baseURL: `${url}/${a.provider}`,
  apiKey: token,
  maxRetries: 0,
  timeout: 60_000,
});
const actions = Array.from({ length: Number(a.count) }, (_, n) => `${a.prefix}${n}`);
const writes = await pooled(actions, Number(a.threads), (action) => one(client, a, action));
report({ writes });
