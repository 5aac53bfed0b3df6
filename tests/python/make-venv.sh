#!/usr/bin/env bash
# Makes the virtual environment the SDK tests run their Python in (cli/tests/serve_sdk.rs):
# `python3 -m venv VENV` and `pip install -r tests/python/requirements.txt`, only when VENV
# is missing or was made from other requirements (a copy of them is kept in VENV).
#
# Usage: tests/python/make-venv.sh [VENV]   (default: target/sdk-venv of the workspace)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
requirements="$here/requirements.txt"
venv="${1:-$here/../../target/sdk-venv}"
stamp="$venv/requirements.txt"

if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; then
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 is missing: the SDK tests run the official Python SDKs; install Python 3.9 or" \
         "later with its venv module (Debian, Ubuntu: apt-get install python3 python3-venv)" >&2
    exit 1
fi
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    echo "python3 has no venv module (or no ensurepip): install it" \
         "(Debian, Ubuntu: apt-get install python3-venv)" >&2
    exit 1
fi
echo "making $venv (python3 -m venv; pip install -r $requirements)" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
# Written last: a venv whose install failed half way is made again next time.
cp "$requirements" "$stamp"
