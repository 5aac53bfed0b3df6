"""A batch created through the sidecar with the official openai SDK: a write, journaled,
named by x-sluice-action.

Usage: openai_batch.py ACTION

Prints the status and the sidecar's headers, or the exception the SDK raised.
"""

import sys

import openai

from sdk_common import failure, report, sidecar, sluice_headers


def main():
    url, token = sidecar()
    client = openai.OpenAI(base_url=f"{url}/openai/v1", api_key=token, max_retries=0)
    try:
        raw = client.batches.with_raw_response.create(
            completion_window="24h",
            endpoint="/v1/chat/completions",
            input_file_id="file-abc123",
            extra_headers={"x-sluice-action": sys.argv[1]},
        )
        report({"status": raw.status_code, "headers": sluice_headers(raw.headers)})
    except openai.APIError as e:
        report(failure(e))


if __name__ == "__main__":
    main()
