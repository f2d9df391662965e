#!/usr/bin/env bash
# Prints the bin directory of Node line $1 and the directory of its headers (npm_config_nodedir,
# for native addons built for it), space-separated: the registry's `node` package, installed once
# under TMPDIR (its install script fetches the binary for this platform, so the scratch project's
# allowScripts allows it). CI runs the suites on such lines (.ci/run), the benchmark on one
# (scripts/bench/run.sh).
set -euo pipefail
dir="${TMPDIR:-/tmp}/partner-integrations-node$1"
if [ ! -x "$dir/node_modules/.bin/node" ]; then
  mkdir -p "$dir"
  echo '{"private": true, "allowScripts": {"node": true}}' >"$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "node@$1" >&2
fi
headers=$(find "$dir/node_modules" -path '*/include/node/node_version.h' -print -quit)
echo "$dir/node_modules/.bin $(dirname "$(dirname "$(dirname "$headers")")")"
