"""Writes through the sidecar with the official openai SDK's generic client.post: each a
logical action named by x-sluice-action, journaled by the sidecar and sent with one
idempotency key.

Usage: writes.py --provider P --path /v1/... --tenant TENANT --task TASK [--count N]
                 [--threads T] [--prefix PREFIX]

Sends N writes (T at a time), actions PREFIX0 .. PREFIX{N-1}, each body carrying the
action's client reference (what sluice derives from the task and action names; the task an
agent names is its tenant's, TENANT/TASK), and prints
for each its status, the sidecar's headers and the provider's id; or the exception the SDK
raised (a connection refused while the sidecar is down is one).
"""

import argparse
import hashlib
from concurrent.futures import ThreadPoolExecutor

# The HTTP library the pinned openai SDK is built on: cast_to its Response gives the raw
# answer, headers and all.
import httpx2
import openai

from sdk_common import failure, report, sidecar, sluice_headers


def reference(task, action):
    """The client reference sluice derives for an action (sluice::journal::client_reference)."""
    return "sluice-" + hashlib.sha256(f"{task}\n{action}".encode()).hexdigest()[:24]


def one(client, path, tenant, task, action):
    seen = {"action": action}
    try:
        raw = client.post(
            path,
            cast_to=httpx2.Response,
            body={
                "amount": 100,
                "currency": "eur",
                "description": action,
                "metadata": {"client_reference": reference(f"{tenant}/{task}", action)},
            },
            options={"headers": {"x-sluice-task": task, "x-sluice-action": action}},
        )
        seen.update(
            status=raw.status_code, headers=sluice_headers(raw.headers), id=raw.json().get("id")
        )
    except openai.APIError as e:
        seen.update(failure(e))
    return seen


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--provider", required=True)
    args.add_argument("--path", required=True)
    args.add_argument("--tenant", required=True)
    args.add_argument("--task", required=True)
    args.add_argument("--count", type=int, default=1)
    args.add_argument("--threads", type=int, default=1)
    args.add_argument("--prefix", default="write-")
    a = args.parse_args()
    url, token = sidecar()
    client = openai.OpenAI(
        base_url=f"{url}/{a.provider}", api_key=token, max_retries=0, timeout=60
    )
    actions = [f"{a.prefix}{n}" for n in range(a.count)]
    with ThreadPoolExecutor(max_workers=a.threads) as pool:
        writes = list(pool.map(lambda x: one(client, a.path, a.tenant, a.task, x), actions))
    report({"writes": writes})


if __name__ == "__main__":
    main()
