#!/usr/bin/env bash
# Makes the node_modules the SDK tests run their Node scripts with (cli/tests/serve_sdk/node.rs):
# `npm ci` of tests/node/package-lock.json in DIR, only when DIR has no node_modules or was
# made from another package.json or lock (copies of them are kept in DIR/made-from). Fails,
# saying what to install, where the PATH's node is missing or older than the SDKs support.
#
# Usage: tests/node/make-modules.sh [DIR]   (default: target/sdk-node of the workspace)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../target/sdk-node}"
stamp="$dir/made-from"
# The oldest Node.js the pinned SDKs support (their READMEs: Node.js 20 LTS or later).
oldest=20

if ! command -v node >/dev/null 2>&1; then
    echo "node is missing: the SDK tests run the official TypeScript SDKs on Node.js $oldest" \
         "or later, installed with npm (Debian, Ubuntu: apt-get install nodejs npm)" >&2
    exit 1
fi
if ! major="$(node -p 'process.versions.node.split(".")[0]' 2>&1)"; then
    echo "node does not run ($(command -v node)): $major" >&2
    exit 1
fi
if [ "$major" -lt "$oldest" ]; then
    echo "node $(node --version) ($(command -v node)) is too old: the pinned SDKs" \
         "(tests/node/package.json) need Node.js $oldest or later; put a newer node first" \
         "on the PATH" >&2
    exit 1
fi
if [ -d "$dir/node_modules" ] \
    && cmp -s "$here/package.json" "$stamp/package.json" \
    && cmp -s "$here/package-lock.json" "$stamp/package-lock.json"; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is missing beside node $(node --version): install it" \
         "(Debian, Ubuntu: apt-get install npm)" >&2
    exit 1
fi
echo "making $dir (npm ci of $here/package-lock.json)" >&2
rm -rf "$dir"
mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
# Written last: an install that failed half way is made again next time.
mkdir "$stamp"
cp "$here/package.json" "$here/package-lock.json" "$stamp/"
