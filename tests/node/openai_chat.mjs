// Chat completions through the sidecar with the official openai SDK.
//
// Usage: openai_chat.mjs [--count N] [--threads T] [--stream] [--max-retries R]
//
// Sends N chat completions (T at a time), streamed or not, and prints for each its status,
// the sidecar's headers and, for a stream, the chunks received; or the error the SDK threw.

import { parseArgs } from 'node:util';

import { OpenAI, failure, isApiError, pooled, report, sidecar, sluiceHeaders } from './sdk_common.mjs';

async function one(client, n, stream) {
  try {
    const { data, response } = await client.chat.completions
      .create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `question ${n}: how are you today?` }],
        max_tokens: 64,
        stream,
      })
      .withResponse();
    const seen = { status: response.status, headers: sluiceHeaders(response.headers) };
    if (stream) {
      const chunks = [];
      for await (const chunk of data) chunks.push(chunk);
      seen.chunks = chunks.length;
      seen.text = chunks
        .filter((c) => c.choices.length > 0)
        .map((c) => c.choices[0].delta.content ?? '')
        .join('');
    } else {
      seen.id = data.id;
    }
    return seen;
  } catch (e) {
    if (isApiError(e)) return failure(e);
    throw e;
  }
}

const { values: a } = parseArgs({
  options: {
    count: { type: 'string', default: '1' },
    threads: { type: 'string', default: '1' },
    stream: { type: 'boolean', default: false },
    'max-retries': { type: 'string', default: '0' },
  },
});
const { url, token } = sidecar();
const client = new OpenAI({
  baseURL: `${url}/openai/v1`,
  apiKey: token,
  maxRetries: Number(a['max-retries']),
  timeout: 60_000,
});
const numbers = Array.from({ length: Number(a.count) }, (_, n) => n);
const calls = await pooled(numbers, Number(a.threads), (n) => one(client, n, a.stream));
report({ calls });
