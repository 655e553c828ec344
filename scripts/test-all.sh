#!/usr/bin/env bash
# `npm test` (package.json test:all, run through scripts/toolchain.sh): every phase CI runs, each printed
# with its wall time as it ends, and at the end a summary: the phases, then each e2e suite's time beside
# its budget (test/harness/sequencer.js), naming the suites over budget (scripts/suite-times.js).
# With E2E_FULL=1 (`npm run test:full`) the same lanes also run what CI leaves out for its time
# (test/harness/outOfCi.js), and the queue lane every queue-mode suite whole.
#
# The build runs first (a failure stops there). Then four lanes side by side, since most of the e2e
# time is spent waiting (for a poll interval, a schedule window, an n8n start), not computing:
#   lane "checks": typecheck, lint, format and unit, one after the other, niced (beside the e2e lanes
#                 since issue 46: about 4 minutes off CI's path);
#   lane "2.41":  the n8n 2.41 e2e suites on two jest workers, longest first (test/harness/sequencer.js),
#                 but those the other lanes run after their own. Three 2.41 workers (five lanes' worth
#                 of n8n on two cores) made the schedule suite's 10-second windows miss (2026-12-02,
#                 and again 2026-12-05 beside the niced checks: every suite slower, CPU is the limit);
#   lane "queue": the queue-mode subset, then the 2.41 suites named in $after_queue (single-process n8n);
#   lane "1.x":   the 2.41 suites named in $after_n8n1, then the n8n 1.123 subset: CI's n8n 1.123
#                 install ends about 10 to 13 minutes after its start (2.41.1's at about 4 to 6).
# The history of these lanes' times is in docs/development.md, "Test time".
# Each lane's lines are prefixed with its name. A failed phase fails the run; the other lanes still end,
# so their figures are printed too.
set -uo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
total_start=$(date +%s)
current_lane=""

# Runs one phase, prints its time and appends it to the summary; its output also goes to
# $work/phase-<name>.log (the suite table reads jest's lines there); returns the phase's exit status.
phase() {
  local name="$1" command="$2" start status seconds line
  echo "[test] ${name}: ${command}"
  start=$(date +%s)
  bash -c "$command" 2>&1 | tee "$(phase_log "$name")"
  status=${PIPESTATUS[0]}
  seconds=$(($(date +%s) - start))
  line="$(printf '%-7s %-18s %4d min %02d s' "${current_lane:--}" "$name" $((seconds / 60)) $((seconds % 60)))"
  [ "$status" -eq 0 ] || line="$line  FAILED (exit $status)"
  echo "$line" >> "$work/summary"
  echo "[test] ${line}"
  return "$status"
}

phase_log() {
  echo "$work/phase-${1//[^a-zA-Z0-9]/_}.log"
}

# Runs phases one after the other in the background, stopping at the first that fails; its lines are
# prefixed with the lane's name and its status is left in $work/<lane>.status.
lane() {
  local name="$1"
  shift
  (
    current_lane="$name"
    status=0
    for spec in "$@"; do
      phase "${spec%%|*}" "${spec#*|}" || { status=$?; break; }
    done
    echo "$status" > "$work/$name.status"
  ) 2>&1 | tee "$work/$name.log" | sed -u "s/^/[$name] /" &
}

# Jest's report of each failed test (its "● suite › test" block, without console output), so that the
# end of the output, which is what a CI log shows first, names what failed in every lane.
failures() {
  awk '/^(Test Suites|Tests):/ { show = 0 }
       /^  ● / { show = ($0 !~ /^  ● Console$/); lines = 0 }
       show && lines < 25 { print; lines++ }' "$1"
}

status=0
phase "build" "npm run build" || status=$?

if [ "$status" -eq 0 ]; then
  # Single-process 2.41 suites fill the end of the queue lane and the start of the 1.x lane (while CI
  # still installs n8n 1.123). Balanced on the local .ci/run of 2026-12-07 20:55 (lanes of 26, 28 and
  # 26 minutes), after the queue lane lost two suites to test:full.
  after_queue='retryPolicy|roundTripFixedUrl|imapTriage'
  after_n8n1='pollRunSettlement|sqlSource|s3Source|pagination'
  if [ -n "${E2E_FULL:-}" ]; then
    queue_phase="E2E_TOPOLOGY=queue jest --selectProjects e2e --verbose --runInBand test/e2e/pollTrigger.test.ts test/e2e/pollRunSettlement.test.ts test/e2e/durableScheduleTrigger.test.ts test/e2e/roundTripWait.test.ts test/e2e/roundTripFixedUrl.test.ts test/e2e/chaos.test.ts test/e2e/queueWorkerKill.test.ts test/e2e/queueLostRunEnd.test.ts test/e2e/startScriptQueue.test.ts test/e2e/owedItems.test.ts test/e2e/retryPolicy.test.ts"
  else
    queue_phase="npm run test:queue-ci -- --verbose"
  fi
  # The checks lane is CPU work (the model simulations, the cron differential test) beside e2e lanes
  # that mostly wait on n8n's timers: niced, so that it takes the cores n8n leaves idle and never
  # delays an n8n the e2e cases time (a local .ci/run of 2026-12-05 at a load average of 22: a
  # schedule window missed beside the unit project).
  lane "checks" "typecheck|nice -n 10 npm run typecheck" "lint|nice -n 10 npm run lint" \
    "format|nice -n 10 npm run format:check" "unit|nice -n 10 jest --selectProjects unit"
  lane "2.41" "e2e n8n 2.41|E2E_IN_OTHER_LANE='$after_queue|$after_n8n1' jest --selectProjects e2e --verbose --maxWorkers=2"
  lane "queue" "queue mode|$queue_phase" \
    "e2e n8n 2.41 (2)|jest --selectProjects e2e --verbose --runInBand 'test/e2e/($after_queue)\\.test\\.ts'"
  lane "1.x" "e2e n8n 2.41 (3)|jest --selectProjects e2e --verbose --runInBand 'test/e2e/($after_n8n1)\\.test\\.ts'" \
    "n8n 1.123|bash scripts/test-n8n1.sh"
  wait
  for name in "checks" "2.41" "queue" "1.x"; do
    lane_status="$(cat "$work/$name.status" 2>/dev/null || echo 1)"
    [ "$lane_status" -eq 0 ] && continue
    status="$lane_status"
    echo "[test] what failed in lane ${name}:"
    failures "$work/$name.log" | sed "s/^/[test] [$name] /"
  done
fi

seconds=$(($(date +%s) - total_start))
echo "[test] phases (after the build, four lanes side by side; lane, phase, wall time):"
sort -s -k1,1 "$work/summary" | sed 's/^/[test]   /'
node scripts/suite-times.js \
  "2.41:2.41:$(phase_log 'e2e n8n 2.41')" "queue:queue:$(phase_log 'queue mode')" \
  "queue:2.41:$(phase_log 'e2e n8n 2.41 (2)')" "1.x:2.41:$(phase_log 'e2e n8n 2.41 (3)')" \
  "1.x:1.123:$(phase_log 'n8n 1.123')" | sed 's/^/[test] /' || true
echo "[test] total: $((seconds / 60)) min $((seconds % 60)) s"
exit "$status"
