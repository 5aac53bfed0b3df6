// What the SDK scripts share: the pinned SDKs, where the sidecar is, and how a script reports
// what it saw.
//
// Every script reads the sidecar's address from SLUICE_URL (http://127.0.0.1:PORT) and the
// agent's token from SLUICE_TOKEN, uses an official SDK with maxRetries: 0 unless told
// otherwise, and prints one JSON line: the test that ran it asserts on that line and on what
// the provider received. The line has the shape the Python scripts of tests/python print, so
// that one test reads either.

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Where tests/node/make-modules.sh installed package-lock.json: SLUICE_SDK_NODE_DIR, else the
// workspace's target/sdk-node. The SDKs are loaded from its node_modules, as `require` finds
// them there (their CommonJS builds).
const installed =
  process.env.SLUICE_SDK_NODE_DIR ??
  fileURLToPath(new URL('../../target/sdk-node/', import.meta.url));
const require = createRequire(path.join(path.resolve(installed), 'package.json'));

export const { OpenAI } = require('openai');
export const { Anthropic } = require('@anthropic-ai/sdk');

// The answer headers the sidecar adds (serve/src/hints.rs).
const SLUICE_HEADERS = [
  'x-sluice-attempts',
  'x-sluice-waited-ms',
  'x-sluice-reason',
  'x-sluice-next-action',
  'x-sluice-action-state',
  'x-sluice-escalation',
  'x-sluice-sdk-retry',
  'x-sluice-replayed',
];

/** The sidecar's base URL and the agent token, from the environment. */
export function sidecar() {
  for (const name of ['SLUICE_URL', 'SLUICE_TOKEN']) {
    if (!process.env[name]) {
      console.error(
        `set ${name}: the sidecar's URL (http://127.0.0.1:PORT) and the agent token`,
      );
      process.exit(2);
    }
  }
  return { url: process.env.SLUICE_URL.replace(/\/+$/, ''), token: process.env.SLUICE_TOKEN };
}

/** The x-sluice-* headers of an answer (a fetch `Headers`), as an object. */
export function sluiceHeaders(headers) {
  const seen = {};
  for (const h of SLUICE_HEADERS) {
    const value = headers?.get(h);
    if (value !== null && value !== undefined) seen[h] = value;
  }
  return seen;
}

/** What an SDK error says: its class, status code, message and sluice's headers. */
export function failure(e) {
  return {
    error: e.constructor.name,
    status: e.status ?? null,
    message: String(e.message),
    headers: sluiceHeaders(e.headers),
  };
}

/** Whether `e` is an error the SDKs raise for an API call (a status, or no connection). */
export function isApiError(e) {
  return e instanceof OpenAI.APIError || e instanceof Anthropic.APIError;
}

/** Prints the one JSON line the test reads. */
export function report(value) {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** `call` applied to each of `items`, at most `limit` at a time; the results in order. */
export async function pooled(items, limit, call) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await call(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}
