#!/usr/bin/env bash
# Stops the cluster tests/postgres/start.sh started in DIR, and removes DIR.
set -uo pipefail
dir=${1:?usage: stop.sh DIR}
as_owner=()
if [ "$(id -u)" -eq 0 ]; then as_owner=(runuser -u postgres --); fi
for candidate in /usr/lib/postgresql/*/bin; do
    if [ -x "$candidate/pg_ctl" ] && [ -d "$dir/data" ]; then
        "${as_owner[@]}" "$candidate/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
        break
    fi
done
rm -rf "$dir"
