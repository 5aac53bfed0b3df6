"""What the SDK scripts share: where the sidecar is, and how a script reports what it saw.

Every script reads the sidecar's address from SLUICE_URL (http://127.0.0.1:PORT) and the
agent's token from SLUICE_TOKEN, uses an official SDK with max_retries=0 unless told
otherwise, and prints one JSON line: the test that ran it asserts on that line and on what
the provider received.
"""

import json
import os
import sys

# The answer headers the sidecar adds (serve/src/hints.rs).
SLUICE_HEADERS = (
    "x-sluice-attempts",
    "x-sluice-waited-ms",
    "x-sluice-reason",
    "x-sluice-next-action",
    "x-sluice-action-state",
    "x-sluice-escalation",
    "x-sluice-sdk-retry",
    "x-sluice-replayed",
)


def sidecar():
    """The sidecar's base URL and the agent token, from the environment."""
    try:
        return os.environ["SLUICE_URL"].rstrip("/"), os.environ["SLUICE_TOKEN"]
    except KeyError as e:
        sys.exit(f"set {e.args[0]}: the sidecar's URL (http://127.0.0.1:PORT) and the agent token")


def sluice_headers(headers):
    """The x-sluice-* headers of an answer, as a dict."""
    return {h: headers[h] for h in SLUICE_HEADERS if h in headers}


def failure(e):
    """What an SDK exception says: its class, status code, message and sluice's headers."""
    response = getattr(e, "response", None)
    return {
        "error": type(e).__name__,
        "status": getattr(e, "status_code", None),
        "message": str(getattr(e, "message", e)),
        "headers": sluice_headers(response.headers) if response is not None else {},
    }


def report(value):
    """Prints the one JSON line the test reads."""
    print(json.dumps(value, sort_keys=True), flush=True)
