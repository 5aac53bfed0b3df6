"""A message through the sidecar with the official anthropic SDK, streamed or not.

Usage: anthropic_message.py [--stream]

Prints the status, the sidecar's headers and, for a stream, the events received and the text
they carried, else the message's id and text; or the exception the SDK raised.
"""

import argparse

import anthropic

from sdk_common import failure, report, sidecar, sluice_headers


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--stream", action="store_true")
    a = args.parse_args()
    url, token = sidecar()
    client = anthropic.Anthropic(
        base_url=f"{url}/anthropic", api_key=token, max_retries=0, timeout=60
    )
    try:
        raw = client.messages.with_raw_response.create(
            model="claude-sonnet-4-5",
            max_tokens=64,
            messages=[{"role": "user", "content": "write a short poem about rivers"}],
            stream=a.stream,
        )
        seen = {"status": raw.status_code, "headers": sluice_headers(raw.headers)}
        if a.stream:
            events = list(raw.parse())
            deltas = [e for e in events if e.type == "content_block_delta"]
            seen.update(
                events=len(events),
                deltas=len(deltas),
                text="".join(d.delta.text for d in deltas),
                last=events[-1].type if events else None,
            )
        else:
            message = raw.parse()
            seen.update(
                id=message.id,
                text="".join(getattr(block, "text", "") for block in message.content),
            )
        report(seen)
    except anthropic.APIError as e:
        report(failure(e))


if __name__ == "__main__":
    main()
