#!/usr/bin/env bash
# `npm run bench`: the benchmark (run.ts, its options passed on) on the Node line new deployments
# run (docs/deploy.md), whatever Node the machine has: the figures are those of the runtime the
# service ships on. Native addons are rebuilt for it, and for the calling Node again at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_NODE_LINE=26
read -r bin nodedir < <(bash scripts/node-line.sh "$BENCH_NODE_LINE")
trap 'npm rebuild --loglevel=error >/dev/null' EXIT
PATH="$bin:$PATH" npm_config_nodedir="$nodedir" npm rebuild --loglevel=error >/dev/null
PATH="$bin:$PATH" npm_config_nodedir="$nodedir" npx tsx scripts/bench/run.ts "$@"
