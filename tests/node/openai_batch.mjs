// A batch created through the sidecar with the official openai SDK: a write, journaled,
// named by x-sluice-action.
//
// Usage: openai_batch.mjs ACTION
//
// Prints the status and the sidecar's headers, or the error the SDK threw.

import { OpenAI, failure, isApiError, report, sidecar, sluiceHeaders } from './sdk_common.mjs';

const action = process.argv[2];
if (!action) {
  console.error('usage: openai_batch.mjs ACTION (the x-sluice-action of the batch)');
  process.exit(2);
}
const { url, token } = sidecar();
const client = new OpenAI({ baseURL: `${url}/openai/v1`, apiKey: token, maxRetries: 0 });
try {
  const { response } = await client.batches
    .create(
      {
        completion_window: '24h',
        endpoint: '/v1/chat/completions',
        input_file_id: 'file-abc123',
      },
      { headers: { 'x-sluice-action': action } },
    )
    .withResponse();
  report({ status: response.status, headers: sluiceHeaders(response.headers) });
} catch (e) {
  if (!isApiError(e)) throw e;
  report(failure(e));
}
