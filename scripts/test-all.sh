#!/usr/bin/env bash
# `npm test` (package.json test:all, run through scripts/toolchain.sh): every phase CI runs, in order,
# each printed with its wall time as it ends, and a summary at the end. Stops at the first phase that
# fails (the summary says which).
set -uo pipefail
cd "$(dirname "$0")/.."

phases=(
  "build|npm run build"
  "lint|npm run lint"
  "format|npm run format:check"
  "unit|jest --selectProjects unit"
  "e2e n8n 2.41|jest --selectProjects e2e --runInBand"
  "queue mode|npm run test:queue-ci"
  "n8n 1.123|bash scripts/test-n8n1.sh"
)

summary=()
total_start=$(date +%s)
status=0
for phase in "${phases[@]}"; do
  name="${phase%%|*}"
  command="${phase#*|}"
  echo "[test] ${name}: ${command}"
  start=$(date +%s)
  bash -c "$command"
  status=$?
  seconds=$(($(date +%s) - start))
  line="$(printf '%-14s %4d min %02d s' "$name" $((seconds / 60)) $((seconds % 60)))"
  if [ "$status" -ne 0 ]; then
    line="$line  FAILED (exit $status)"
  fi
  summary+=("$line")
  echo "[test] ${line}"
  [ "$status" -eq 0 ] || break
done

seconds=$(($(date +%s) - total_start))
echo "[test] phases:"
printf '[test]   %s\n' "${summary[@]}"
echo "[test] total: $((seconds / 60)) min $((seconds % 60)) s"
exit "$status"
