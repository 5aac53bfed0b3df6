#!/usr/bin/env bash
# Builds the `sluice` binary to ship: the release profile, then optimised a second time with a
# profile of its own work (profile-guided optimisation). Four steps:
#
#   1. an instrumented release build, which counts what it runs and writes the counts as it
#      exits;
#   2. training: `sluice demo` (every bundled provider, reads and writes, retries, the journal
#      and the audit log), then `sluice serve` under the added-latency bench's load (chat
#      completions one at a time, at 500/s and at 2 000/s, on 20 connections), stopped with
#      SIGTERM;
#   3. the counts merged with `llvm-profdata` (rustup's llvm-tools component, added when
#      missing);
#   4. a release build that uses them.
#
# Usage: scripts/build-release.sh [OUT]   (OUT defaults to target/pgo/sluice)
#
# About 25 minutes on two cores with the release build already made
# (docs/benchmarks/added-latency.md), more
# without: three whole-program release builds (the bench, the instrumented binary, the
# optimised one). The work is kept in
# ${SLUICE_PGO_DIR:-target/pgo}, a target directory per build, so a second run rebuilds only
# what changed. What it buys, measured: docs/benchmarks/added-latency.md, "The sidecar built
# with its own profile".
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s (%d s)\n' "$*" "$SECONDS"; }
fail() { printf 'build-release: %s\n' "$*" >&2; exit 1; }

target_dir=${CARGO_TARGET_DIR:-target}
work=${SLUICE_PGO_DIR:-$target_dir/pgo}
mkdir -p "$work"
work=$(cd "$work" && pwd)
out=${1:-$work/sluice}
host=$(rustc -vV | sed -n 's/^host: //p')
[ -n "$host" ] || fail "rustc -vV names no host triple"

step "llvm-profdata (matching rustc's LLVM)"
profdata=${LLVM_PROFDATA:-}
if [ -z "$profdata" ]; then
    command -v rustup >/dev/null ||
        fail "rustup is not installed: set LLVM_PROFDATA to an llvm-profdata of the LLVM \
version \`rustc -vV\` names"
    if ! rustup component list --installed | grep -q '^llvm-tools'; then
        rustup component add llvm-tools-preview
    fi
    profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
fi
[ -x "$profdata" ] || fail "no llvm-profdata at $profdata"
"$profdata" --version | head -2

# With --target, RUSTFLAGS reach the binary's crates only, not build scripts or proc macros;
# the bundled plugins are built for wasm32-wasip2 without them (plugins/builder).
build() {
    local dir=$1 flags=$2
    RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }$flags" CARGO_TARGET_DIR="$dir" \
        cargo build --locked --release -p sluice-cli --bin sluice --target "$host"
}

step "1/4 the instrumented build ($work/instrumented)"
profiles="$work/profiles"
rm -rf "$profiles"
mkdir -p "$profiles"
build "$work/instrumented" "-Cprofile-generate=$profiles"
instrumented="$work/instrumented/$host/release/sluice"

# The instrumented binary adds what it counted to one file per binary in $profiles as it
# exits (default_*.profraw); each training run's file is set aside under its own name, so a
# run that wrote nothing is caught.
shopt -s nullglob
collected() {
    local name=$1 raw i=0
    raw=("$profiles"/default_*.profraw)
    [ "${#raw[@]}" -gt 0 ] || fail "the instrumented binary wrote no counts in $name ($profiles)"
    for f in "${raw[@]}"; do
        mv "$f" "$profiles/$name-$i.profraw"
        i=$((i + 1))
    done
}

step "2/4 training: sluice demo"
demo_dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-pgo-demo.XXXXXX")
trap 'rm -rf "$demo_dir"' EXIT
(cd "$demo_dir" && "$instrumented" demo) > "$demo_dir/demo.log" 2>&1 ||
    { cat "$demo_dir/demo.log"; fail "the instrumented sluice demo failed (above)"; }
tail -3 "$demo_dir/demo.log"
collected demo

step "2/4 training: sluice serve under the added-latency bench"
bench_log="$work/training.log"
ADDED_LATENCY_BASELINE="$instrumented" ADDED_LATENCY_TARGETS=baseline \
    ADDED_LATENCY_SEQUENTIAL=20000 ADDED_LATENCY_RATES=500,2000 ADDED_LATENCY_SECS=20 \
    ADDED_LATENCY_ROUNDS=1 ADDED_LATENCY_WARMUP_SECS=1 ADDED_LATENCY_CPUS=any \
    cargo bench --locked -p sluice-cli --bench added_latency 2>&1 | tee "$bench_log"
# The bench prints "TARGET: N failed; the first: ..." for a target that refused requests.
if grep -q ': baseline: .* failed; the first:' "$bench_log"; then
    fail "the instrumented sluice serve refused requests in training (above): its profile \
would be of the wrong path"
fi
collected serve

step "3/4 merging the counts"
"$profdata" merge -o "$work/sluice.profdata" "$profiles"/*.profraw
"$profdata" show "$work/sluice.profdata" | grep -E 'Total functions|Maximum function count'

step "4/4 the release build with the profile ($work/optimised)"
build "$work/optimised" "-Cprofile-use=$work/sluice.profdata"
mkdir -p "$(dirname "$out")"
cp "$work/optimised/$host/release/sluice" "$out"
"$out" --version
step "done: $out"
