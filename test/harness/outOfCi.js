// What `npm test` (CI) leaves out of the e2e suites, for CI's time (issue 46), and why. Everything else
// runs in CI, including every case added later: this list names what is out, never what is in.
// `npm run test:full` (E2E_FULL=1) runs these too. jest.config.js applies it: a whole suite (`file`
// alone) through testPathIgnorePatterns, a case (`file` and `test`, a literal part of the case's name
// as its file writes it) through testNamePattern; `n8n1: true` only on n8n 1.x.
// test/docs/outOfCi.test.ts checks that each case is found in its file and in no other test file.
// In CI each guarantee row keeps one e2e guard (docs/development.md, "What guards each guarantee").

/** @type {Array<{ file: string, test?: string, n8n1?: boolean, why: string }>} */
const OUT_OF_CI = [
	{
		file: 'chaos.test.ts',
		why: 'the short chaos run (856 s in the 15:57 CI): every poll and schedule case through 3 kills; in CI the kill rows are guarded by pollTrigger, owedItems, historyStore and queueWorkerKill, their interleavings by the model simulation',
	},
	{
		file: 'burstCrash.test.ts',
		why: "1,000 items through a crash (288 to 457 s); the crashed-run row is guarded by pollTrigger's crash mid-run",
	},
	{
		file: 'startScriptQueue.test.ts',
		why: "`npm start -- --queue` after a crash (670 s in stop 31's CI)",
	},
	{
		file: 'owedSources.test.ts',
		why: "the owed-items rows with sql.query and sftp.list (a kill, a re-publish, a refused run) and sql.query's read position after a refused run under Remember at Most (1,000 rows, 249 to 384 s, the longest case of CI in 2026-12-05's runs): in CI owedItems' kill and refused-run cases guard the rows (the HTTP styles), and the model simulation (test/model/, npm test) walks sql.query's keyset and s3/sftp's afterLastKey through refusals, crashes and the cap",
	},
	{
		file: 'owedItems.test.ts',
		test: 'the workflows unpublished and published again after the first runs, 20 more listed meanwhile',
		why: "a re-publish mid-burst: the owed-items row is guarded in CI by this file's kill case",
	},
	{
		file: 'historyStore.test.ts',
		test: 'new items (Max Runs in Flight 50): each runs once; the table holds the history',
		why: "a burst of 1,000 (bench-like); the History Store row is guarded in CI by this file's SIGKILL case",
	},
	{
		file: 'historyStore.test.ts',
		test: 'switched to PostgreSQL repeats nothing and moves the history to the table',
		why: 'bursts of 300 around a switch of store; the History Store row is guarded by the SIGKILL case',
	},
	{
		file: 's3Source.test.ts',
		test: 'a burst of 1,000 objects starts 1,000 runs',
		why: 'a burst of 1,000 (bench-like; bench/s3Poll.bench.ts measures the source)',
	},
	{
		file: 'ftpSource.test.ts',
		test: 'a burst of 300 files: each starts once',
		why: "a burst of 300 (the file source's burst is sftp's and s3's too); the example case stays",
	},
	{
		file: 'pagination.test.ts',
		test: 'kill -9 while paging, and again during the burst',
		why: "duplicate coverage: owedItems' kill case kills newest-first Link pages mid-burst",
	},
	{
		file: 'pollRunSettlement.test.ts',
		test: 'a run n8n could not create is reported, and only its item comes back at the next poll',
		why: "duplicate coverage: the row is guarded by PollTrigger.node.test.ts and queueWorkerKill's Redis refusal",
	},
	{
		file: 'startScript.test.ts',
		test: 'a second start after a code change loads the new code',
		why: "npm start's second start and n8n's SIGKILL under it (68 to 85 s); no guarantee row, and the first start's case keeps npm start in CI",
	},
	{
		file: 'startScript.test.ts',
		test: 'after n8n was SIGKILLed, and after npm start itself was SIGKILLed',
		why: "npm start's leftovers after kills (the longest of its three cases); no guarantee row",
	},
	{
		file: 'owedItems.test.ts',
		test: 'newest first, Link header pages: Start Again of an item on page 3 starts it once',
		why: "Start Again on a later page: the Max Pages 2 case (page 4, deeper than Max Pages + 1) guards the row in CI and covers page 3's path",
	},
	{
		file: 'owedItems.test.ts',
		test: 'the source dropping 20 items n8n had not started before the restart',
		why: 'a declared row (killed before some runs were created, the source dropping them): its report is shown by owed.test.ts and the model simulation (test/model/, npm test); a burst of ${BURST} through a kill',
	},
	{
		file: 'pollTrigger.test.ts',
		test: 'a crash (SIGKILL) right after runs started repeats none of them',
		why: "the kill row is guarded in CI by owedItems' kill case (three sources, a random moment of the burst) and this file's restart and crash mid-run cases",
	},
	{
		file: 'pollRunSettlement.test.ts',
		test: 'a workflow that saves no successful executions: after n8n hard-deleted their rows',
		why: 'the pruned-executions row is guarded in CI by "after n8n pruned the executions" (185 s under load for n8n\'s hard-delete pass; the same settlement write guards both)',
	},
	{
		file: 'examples.test.ts',
		test: 'runs against the demo source',
		n8n1: true,
		why: 'every example running from the demo sources is guarded on n8n 2.41; on 1.123 CI imports each (the round-trip case), for time (about 300 s)',
	},
	{
		file: 'roundTripWait.test.ts',
		test: 'a run waiting across an n8n restart still resumes on a valid callback',
		n8n1: true,
		why: "restarts on n8n 1.123 (each about a minute on CI's busy machine): the 2.41 run guards the rows, 1.123 keeps the callback checks",
	},
	{
		file: 'roundTripWait.test.ts',
		test: 'an n8n restart between the request and an immediate callback loses nothing',
		n8n1: true,
		why: 'restarts on n8n 1.123: the 2.41 run guards the row, 1.123 keeps the callback checks',
	},
	{
		file: 'roundTripWait.test.ts',
		test: 'a partner that calls back at once (0 ms) resumes the run on Callback',
		n8n1: true,
		why: 'twenty round trips in a row on n8n 1.123: the 2.41 run guards the row; 1.123 keeps the callback checks',
	},
	{
		file: 'roundTripWait.test.ts',
		test: 'is refused at its second wait by another n8n process',
		n8n1: true,
		why: 'a second n8n process on n8n 1.123 (103 s under load): the 2.41 run guards the row, 1.123 keeps the callback checks',
	},
	{
		file: 'roundTripWait.test.ts',
		test: 'fails the run at once when n8n cannot reach its own WEBHOOK_URL',
		n8n1: true,
		why: 'a second n8n on n8n 1.123 (75 s under load): the 2.41 run guards the row, 1.123 keeps the callback checks',
	},
	{
		file: 'roundTripWait.test.ts',
		test: 'a wait that outlives its timeout leaves through "Timed Out"',
		n8n1: true,
		why: "n8n's wait timer on n8n 1.123 (49 s under load): the 2.41 run guards the row, 1.123 keeps the callback checks",
	},
	{
		file: 'pollTrigger.test.ts',
		test: 'a source down 80 s with default options',
		n8n1: true,
		why: "the backoff's timing is the core's (retries.test.ts, fake clock); its e2e guard runs on 2.41",
	},
	{
		file: 'durableScheduleTrigger.test.ts',
		n8n1: true,
		why: 'the schedule suite on n8n 1.123 (its 2.41 run guards the rows; docs/n8n-1.123.md)',
	},
];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The jest options that leave these out, for `full` (E2E_FULL set) and n8n 1.x or not; `leftOut`: a
 * regex of more case names to leave out (test-n8n1.sh's cases that do not hold on n8n 1.x).
 */
function selection({ full, n8n1, leftOut }) {
	const applies = (entry) => !full && (!entry.n8n1 || n8n1);
	const files = OUT_OF_CI.filter((entry) => applies(entry) && !entry.test).map(
		(entry) => `/test/e2e/${escape(entry.file)}$`,
	);
	const cases = OUT_OF_CI.filter((entry) => applies(entry) && entry.test).map((entry) =>
		escape(entry.test).replace(/\\\$\\\{[^}]*\\\}/g, '.*'),
	);
	if (leftOut) cases.push(leftOut);
	return {
		testPathIgnorePatterns: files,
		testNamePattern: cases.length > 0 ? `^(?!.*(${cases.join('|')}))` : undefined,
	};
}

module.exports = { OUT_OF_CI, selection };
