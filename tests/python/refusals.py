"""What an SDK sees when the sidecar refuses: a token that is no agent's, a provider that is
not configured.

Usage: refusals.py BAD_TOKEN

Prints, for each case, the exception the SDK raised (or the status it got instead).
"""

import sys

import anthropic
import openai

from sdk_common import failure, report, sidecar


def attempt(call, errors):
    try:
        call()
        return {"error": None}
    except errors as e:
        return failure(e)


def main():
    url, token = sidecar()
    bad = sys.argv[1]
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    wrong = openai.OpenAI(base_url=f"{url}/openai/v1", api_key=bad, max_retries=0)
    wrong_anthropic = anthropic.Anthropic(base_url=f"{url}/anthropic", api_key=bad, max_retries=0)
    nowhere = openai.OpenAI(base_url=f"{url}/mistral/v1", api_key=token, max_retries=0)
    report(
        {
            "openai_bad_token": attempt(
                lambda: wrong.chat.completions.create(**chat), openai.APIError
            ),
            "anthropic_bad_token": attempt(
                lambda: wrong_anthropic.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=16,
                    messages=[{"role": "user", "content": "hi"}],
                ),
                anthropic.APIError,
            ),
            "unknown_provider": attempt(
                lambda: nowhere.chat.completions.create(**chat), openai.APIError
            ),
        }
    )


if __name__ == "__main__":
    main()
