"""Chat completions through the sidecar with the official openai SDK.

Usage: openai_chat.py [--count N] [--threads T] [--stream] [--max-retries R]

Sends N chat completions (T at a time), streamed or not, and prints for each its status,
the sidecar's headers and, for a stream, the chunks received; or the exception the SDK
raised.
"""

import argparse
from concurrent.futures import ThreadPoolExecutor

import openai

from sdk_common import failure, report, sidecar, sluice_headers


def one(client, n, stream):
    try:
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": f"question {n}: how are you today?"}],
            max_tokens=64,
            stream=stream,
        )
        seen = {"status": raw.status_code, "headers": sluice_headers(raw.headers)}
        parsed = raw.parse()
        if stream:
            chunks = [c for c in parsed]
            seen["chunks"] = len(chunks)
            seen["text"] = "".join(
                c.choices[0].delta.content or "" for c in chunks if c.choices
            )
        else:
            seen["id"] = parsed.id
        return seen
    except openai.APIError as e:
        return failure(e)


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--count", type=int, default=1)
    args.add_argument("--threads", type=int, default=1)
    args.add_argument("--stream", action="store_true")
    args.add_argument("--max-retries", type=int, default=0)
    a = args.parse_args()
    url, token = sidecar()
    client = openai.OpenAI(
        base_url=f"{url}/openai/v1", api_key=token, max_retries=a.max_retries, timeout=60
    )
    with ThreadPoolExecutor(max_workers=a.threads) as pool:
        calls = list(pool.map(lambda n: one(client, n, a.stream), range(a.count)))
    report({"calls": calls})


if __name__ == "__main__":
    main()
