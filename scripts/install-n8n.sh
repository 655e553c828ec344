#!/usr/bin/env bash
# Installs the pinned n8n once into .cache/n8n-<version>/ (git-ignored) and reuses it afterwards.
# Expects Node 24 on PATH (run through scripts/toolchain.sh). Prints the install folder.
# n8n's own install scripts are skipped: @confluentinc/kafka-javascript downloads sources while building,
# which this kind of machine cannot do. Only the native module n8n needs here (sqlite3) is rebuilt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${N8N_VERSION:-2.41.1}"
dir="$root/.cache/n8n-$version"
if [ -f "$dir/.ready" ]; then echo "$dir"; exit 0; fi
echo "[n8n] installing n8n@$version into $dir (one time, ~5 minutes)" >&2
mkdir -p "$dir"
cd "$dir"
echo '{"name":"n8n-test-install","private":true}' > package.json
npm install --ignore-scripts --no-save --no-package-lock --loglevel=error "n8n@$version" >&2
echo "[n8n] building sqlite3 for Node $(node -v)" >&2
npm rebuild sqlite3 --loglevel=error >&2
node -e "require('$dir/node_modules/sqlite3')" >&2
touch .ready
echo "$dir"
