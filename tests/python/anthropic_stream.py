"""A streamed message through the sidecar with the official anthropic SDK.

Usage: anthropic_stream.py

Prints the status, the sidecar's headers, the events received and the text they carried;
or the exception the SDK raised.
"""

import anthropic

from sdk_common import failure, report, sidecar, sluice_headers


def main():
    url, token = sidecar()
    client = anthropic.Anthropic(
        base_url=f"{url}/anthropic", api_key=token, max_retries=0, timeout=60
    )
    try:
        raw = client.messages.with_raw_response.create(
            model="claude-sonnet-4-5",
            max_tokens=64,
            messages=[{"role": "user", "content": "write a short poem about rivers"}],
            stream=True,
        )
        events = list(raw.parse())
        deltas = [e for e in events if e.type == "content_block_delta"]
        report(
            {
                "status": raw.status_code,
                "headers": sluice_headers(raw.headers),
                "events": len(events),
                "deltas": len(deltas),
                "text": "".join(d.delta.text for d in deltas),
                "last": events[-1].type if events else None,
            }
        )
    except anthropic.APIError as e:
        report(failure(e))


if __name__ == "__main__":
    main()
