// What an SDK sees when the sidecar refuses: a token that is no agent's, a provider that is
// not configured.
//
// Usage: refusals.mjs BAD_TOKEN
//
// Prints, for each case, the error the SDK threw (or `error: null` when it threw none).

import { Anthropic, OpenAI, failure, isApiError, report, sidecar } from './sdk_common.mjs';

async function attempt(call) {
  try {
    await call();
    return { error: null };
  } catch (e) {
    if (!isApiError(e)) throw e;
    return failure(e);
  }
}

const bad = process.argv[2];
if (!bad) {
  console.error('usage: refusals.mjs BAD_TOKEN (a token that is no agent token of the sidecar)');
  process.exit(2);
}
const { url, token } = sidecar();
const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const wrong = new OpenAI({ baseURL: `${url}/openai/v1`, apiKey: bad, maxRetries: 0 });
const wrongAnthropic = new Anthropic({ baseURL: `${url}/anthropic`, apiKey: bad, maxRetries: 0 });
const nowhere = new OpenAI({ baseURL: `${url}/mistral/v1`, apiKey: token, maxRetries: 0 });
report({
  openai_bad_token: await attempt(() => wrong.chat.completions.create(chat)),
  anthropic_bad_token: await attempt(() =>
    wrongAnthropic.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  ),
  unknown_provider: await attempt(() => nowhere.chat.completions.create(chat)),
});
