#!/usr/bin/env bash
# Installs the pinned n8n once into .cache/n8n-<version>/ (git-ignored) and reuses it afterwards.
# N8N_VERSION picks the version (default 2.41.1; the 1.x line is tested at 1.123.81).
# Expects Node 24 on PATH (run through scripts/toolchain.sh). Prints the install folder.
# n8n's own install scripts are skipped: @confluentinc/kafka-javascript downloads sources while building,
# which this kind of machine cannot do. The one native module n8n needs here, sqlite3, is built once per
# sqlite3 version into .cache/sqlite3-<version>/ and copied into each n8n install: its N-API binary loads
# on Node 22 and 24 alike, and n8n 2.41.1 and 1.123.81 both pin sqlite3 5.1.7. `install-n8n.sh sqlite3`
# builds it alone, for the n8n version N8N_VERSION names (CI runs it beside the n8n installs, which leave
# the CPU mostly idle: about 85 s of compiling taken off each install's path).
# n8n 1.x: runs on Node 22 (its isolated-vm@6.2.0 ships prebuilds for Node 22 and 24; n8n 1.123 supports
# Node 20-22), so Node 22 from the npm registry is installed beside it, and sqlite3 is checked to load on
# it; its `xlsx` dependency is a tarball URL outside the registries, pinned to the registry's 0.18.5.
# The pinned versions install with `npm ci` from scripts/n8n-locks/<version>/ (a lockfile made with
# `npm install --package-lock-only --ignore-scripts --omit-lockfile-registry-resolved=false` from the
# package.json beside it): npm then skips resolving n8n's ~2,400 packages one packument at a time
# (2026-12-08, cold cache: 239 s against 358 s). Another N8N_VERSION resolves as before.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${N8N_VERSION:-2.41.1}"
major="${version%%.*}"
dir="$root/.cache/n8n-$version"

# Builds sqlite3 at the given version into .cache/sqlite3-<version>/, once (under a lock of its own).
build_sqlite3() {
  local out="$root/.cache/sqlite3-$1"
  mkdir -p "$root/.cache"
  (
    flock 8
    [ -f "$out/.ready" ] && exit 0
    echo "[n8n] building sqlite3 $1 for Node $(node -v) (N-API)" >&2
    rm -rf "$out" && mkdir -p "$out" && cd "$out"
    echo '{"name":"sqlite3-build","private":true}' > package.json
    npm install --ignore-scripts --no-save --no-package-lock --loglevel=error "sqlite3@$1" >&2
    npm rebuild sqlite3 --loglevel=error >&2
    node -e "require('$out/node_modules/sqlite3')" >&2
    touch .ready
  ) 8> "$root/.cache/sqlite3.lock"
  echo "$out/node_modules/sqlite3/build/Release/node_sqlite3.node"
}

if [ "${1:-}" = sqlite3 ]; then
  build_sqlite3 "$(npm view "n8n@$version" dependencies.sqlite3)" > /dev/null
  exit 0
fi
if [ -f "$dir/.ready" ]; then echo "$dir"; exit 0; fi
# One install at a time, whatever the version: CI starts them in the background, 2.41.1 first, while
# the e2e setup of a run that needs one waits here, then finds it ready. Two at once share the machine
# and both end later (a local CI run, 2026-12-02: the 1.123 lane started its install beside 2.41.1's).
# A wait for the lock ends as soon as this version is ready: CI's loop may take the lock for the next
# version the moment it is free, and a lane waiting for this one must not wait for that install too.
mkdir -p "$root/.cache"
exec 9> "$root/.cache/n8n-install.lock"
until flock -n 9; do
  if [ -f "$dir/.ready" ]; then echo "$dir"; exit 0; fi
  sleep 2
done
if [ -f "$dir/.ready" ]; then echo "$dir"; exit 0; fi
echo "[n8n] installing n8n@$version into $dir (one time, ~5 minutes)" >&2
mkdir -p "$dir"
cd "$dir"
lock="$root/scripts/n8n-locks/$version"
if [ -f "$lock/package-lock.json" ]; then
  cp "$lock/package.json" "$lock/package-lock.json" .
  npm ci --ignore-scripts --loglevel=error >&2
  if [ "$major" -lt 2 ]; then npm rebuild node --loglevel=error >&2; fi
elif [ "$major" -lt 2 ]; then
  echo '{"name":"n8n-test-install","private":true,"overrides":{"xlsx":"0.18.5"}}' > package.json
  npm install --ignore-scripts --no-save --no-package-lock --loglevel=error "n8n@$version" node@22 >&2
  npm rebuild node --loglevel=error >&2
else
  echo '{"name":"n8n-test-install","private":true}' > package.json
  npm install --ignore-scripts --no-save --no-package-lock --loglevel=error "n8n@$version" >&2
fi
binary="$(build_sqlite3 "$(node -p "require('$dir/node_modules/sqlite3/package.json').version")")"
mkdir -p node_modules/sqlite3/build/Release
cp "$binary" node_modules/sqlite3/build/Release/
# Loaded by the Node n8n runs on (n8n 1.x: Node 22).
if [ "$major" -lt 2 ]; then export PATH="$dir/node_modules/node/bin:$PATH"; fi
node -e "require('$dir/node_modules/sqlite3')" >&2
touch .ready
echo "$dir"
