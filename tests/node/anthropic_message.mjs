// A message through the sidecar with the official Anthropic SDK, streamed or not.
//
// Usage: anthropic_message.mjs [--stream]
//
// Prints the status, the sidecar's headers and, for a stream, the events received and the
// text they carried, else the message's id and text; or the error the SDK threw.

import { parseArgs } from 'node:util';

import { Anthropic, failure, isApiError, report, sidecar, sluiceHeaders } from './sdk_common.mjs';

const { values: a } = parseArgs({ options: { stream: { type: 'boolean', default: false } } });
const { url, token } = sidecar();
const client = new Anthropic({
  baseURL: `${url}/anthropic`,
  apiKey: token,
  maxRetries: 0,
  timeout: 60_000,
});
try {
  const { data, response } = await client.messages
    .create({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'write a short poem about rivers' }],
      stream: a.stream,
    })
    .withResponse();
  const seen = { status: response.status, headers: sluiceHeaders(response.headers) };
  if (a.stream) {
    const events = [];
    for await (const event of data) events.push(event);
    const deltas = events.filter((e) => e.type === 'content_block_delta');
    Object.assign(seen, {
      events: events.length,
      deltas: deltas.length,
      text: deltas.map((d) => d.delta.text).join(''),
      last: events.length > 0 ? events[events.length - 1].type : null,
    });
  } else {
    Object.assign(seen, {
      id: data.id,
      text: data.content.map((block) => block.text ?? '').join(''),
    });
  }
  report(seen);
} catch (e) {
  if (!isApiError(e)) throw e;
  report(failure(e));
}
