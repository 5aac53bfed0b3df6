"""Agents sharing one OpenAI account through the sidecar, as agents call it: a mix of chats
with and without max_tokens, streams that do not ask for usage, embeddings, and POSTs that
generate nothing (file uploads, batches), from several threads at once.

Usage: openai_mixed.py [--agents N] [--seconds S] [--seed K]

Each agent calls until S seconds have passed. Prints the number of calls of each kind and
every status the SDK saw, with the waits the sidecar reported.
"""

import argparse
import random
import threading
import time
import uuid
from collections import Counter

import openai

from sdk_common import report, sidecar

WORDS = "the agent asked for a summary of the quarterly report and its open questions".split()


def prompt(rng):
    """A user message of 100 to 2 000 characters."""
    text = []
    while sum(len(w) + 1 for w in text) < rng.randint(100, 2000):
        text.append(rng.choice(WORDS))
    return " ".join(text)


def chat(client, rng, bounded, stream):
    kwargs = {}
    if bounded:
        kwargs["max_tokens"] = rng.randint(50, 400)
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": prompt(rng)}],
        stream=stream,
        **kwargs,
    )
    parsed = raw.parse()
    if stream:
        for _ in parsed:
            pass
    return raw


def embedding(client, rng):
    return client.embeddings.with_raw_response.create(
        model="text-embedding-3-small", input=prompt(rng)
    )


def upload(client, rng):
    lines = "\n".join('{"custom_id": "%d", "body": {}}' % i for i in range(rng.randint(5, 50)))
    return client.files.with_raw_response.create(
        file=("requests.jsonl", lines.encode()),
        purpose="batch",
        extra_headers={"x-sluice-action": f"upload-{uuid.uuid4()}"},
    )


def batch(client, rng):
    return client.batches.with_raw_response.create(
        completion_window="24h",
        endpoint="/v1/chat/completions",
        input_file_id=f"file-{rng.randint(1, 10**9)}",
        extra_headers={"x-sluice-action": f"batch-{uuid.uuid4()}"},
    )


# The mix: (kind, share, call).
MIX = [
    ("chat", 0.30, lambda c, r: chat(c, r, bounded=True, stream=False)),
    ("chat-unbounded", 0.20, lambda c, r: chat(c, r, bounded=False, stream=False)),
    ("stream", 0.10, lambda c, r: chat(c, r, bounded=True, stream=True)),
    ("stream-unbounded", 0.10, lambda c, r: chat(c, r, bounded=False, stream=True)),
    ("embedding", 0.10, embedding),
    ("upload", 0.10, upload),
    ("batch", 0.10, batch),
]


def agent(url, token, seed, until, seen, lock):
    rng = random.Random(seed)
    client = openai.OpenAI(base_url=f"{url}/openai/v1", api_key=token, max_retries=0, timeout=120)
    while time.monotonic() < until:
        kind, call = rng.choices([(k, f) for k, _, f in MIX], weights=[w for _, w, _ in MIX])[0]
        try:
            raw = call(client, rng)
            status, waited = raw.status_code, int(raw.headers.get("x-sluice-waited-ms", "0"))
        except openai.APIStatusError as e:
            status, waited = e.status_code, 0
        except openai.APIError as e:
            status, waited = type(e).__name__, 0
        with lock:
            seen["calls"][kind] += 1
            seen["statuses"][str(status)] += 1
            seen["waited_ms"] = max(seen["waited_ms"], waited)


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--agents", type=int, default=8)
    args.add_argument("--seconds", type=float, default=30)
    args.add_argument("--seed", type=int, default=1)
    a = args.parse_args()
    url, token = sidecar()
    seen = {"calls": Counter(), "statuses": Counter(), "waited_ms": 0}
    lock = threading.Lock()
    until = time.monotonic() + a.seconds
    threads = [
        threading.Thread(target=agent, args=(url, token, a.seed * 1000 + n, until, seen, lock))
        for n in range(a.agents)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report(seen)


if __name__ == "__main__":
    main()
