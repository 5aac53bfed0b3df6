#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster on a loopback port, for the tests that share a
# journal between hosts (SLUICE_TEST_POSTGRES_URL). Usage:
#
#     eval "$(tests/postgres/start.sh DIR [--ssl CERT KEY])"
#
# With --ssl, the server speaks TLS with the certificate CERT and its key KEY (PEM files,
# copied into the cluster) and refuses every connection that is not encrypted (`ssl = on`,
# `hostssl` only), as a managed database that forces TLS does.
# DIR (made if missing; `tests/postgres/stop.sh DIR` stops the cluster and removes it) holds
# the cluster. It prints `export SLUICE_TEST_POSTGRES_URL=...`, `export SLUICE_TEST_POSTGRES_DIR=...` and
# `export SLUICE_TEST_POSTGRES_BIN=...` (the server's programs).
# PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` user the
# Debian package makes. Debian's `postgresql` package is installed when no server is found.
set -euo pipefail
dir=${1:?usage: start.sh DIR [--ssl CERT KEY]}
ssl_cert="" ssl_key=""
if [ "${2:-}" = "--ssl" ]; then
    ssl_cert=${3:?usage: start.sh DIR --ssl CERT KEY}
    ssl_key=${4:?usage: start.sh DIR --ssl CERT KEY}
fi

bindir=""
for candidate in /usr/lib/postgresql/*/bin; do
    if [ -x "$candidate/initdb" ]; then bindir=$candidate; fi
done
if [ -z "$bindir" ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update >&2
    $sudo apt-get install -y --no-install-recommends postgresql >&2
    for candidate in /usr/lib/postgresql/*/bin; do
        if [ -x "$candidate/initdb" ]; then bindir=$candidate; fi
    done
fi
if [ -z "$bindir" ]; then
    echo "no PostgreSQL server found under /usr/lib/postgresql" >&2
    exit 1
fi

as_owner=()
if [ "$(id -u)" -eq 0 ]; then as_owner=(runuser -u postgres --); fi

mkdir -p "$dir"
if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_owner[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --no-instructions \
    >"$dir/initdb.log" 2>&1
# In the cluster's own configuration, so that `pg_ctl -D DIR/data start` brings it back on
# the same port after a stop.
cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
CONF
if [ -n "$ssl_cert" ]; then
    # The server reads its key only when its owner alone may (0600).
    install -m 0644 "$ssl_cert" "$dir/data/server.crt"
    install -m 0600 "$ssl_key" "$dir/data/server.key"
    if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir/data/server.crt" "$dir/data/server.key"; fi
    echo "ssl = on" >>"$dir/data/postgresql.conf"
    cat >"$dir/data/pg_hba.conf" <<HBA
local     all all              trust
hostssl   all all 127.0.0.1/32 trust
hostnossl all all 127.0.0.1/32 reject
HBA
fi
"${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >&2
"${as_owner[@]}" "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres sluice
echo "export SLUICE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$port/sluice"
echo "export SLUICE_TEST_POSTGRES_DIR=$dir"
echo "export SLUICE_TEST_POSTGRES_BIN=$bindir"
