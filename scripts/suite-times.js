// The table at the end of `npm test` (scripts/test-all.sh): each e2e suite's time beside its budget
// (test/harness/sequencer.js), longest first, and the suites over their budget named in one line.
// Usage: node scripts/suite-times.js <lane>:<kind>:<jest output file> ...   (kind: 2.41, queue, 1.123)
// Reads jest's "PASS e2e test/e2e/<suite> (<seconds> s)" lines; jest prints no time for a suite under
// 5 s. With jest's --verbose (npm test's e2e phases) it also lists the slowest cases, from lines such as
// "    ✓ a burst of 300 starts each once (41234 ms)", each under its suite's PASS/FAIL line. Always exits 0: a suite over its budget is news for the plan, not a failed run.
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const { BUDGET_SECONDS } = require(join(__dirname, '..', 'test', 'harness', 'sequencer.js'));

/** One row per suite a jest output reports: its status, file and seconds (under 5 s when jest gives none). */
function suitesIn(text) {
	const rows = [];
	for (const match of text.matchAll(/^(PASS|FAIL) e2e test\/e2e\/(\S+)(?: \(([\d.]+) s\))?/gm))
		rows.push({ status: match[1], suite: match[2], seconds: Number(match[3] ?? 0) });
	return rows;
}

/** One row per case jest's --verbose output timed: its suite, name and seconds. */
function casesIn(text) {
	const rows = [];
	let suite = '';
	for (const line of text.split('\n')) {
		const suiteLine = /^(?:PASS|FAIL) e2e test\/e2e\/(\S+)/.exec(line);
		if (suiteLine) suite = suiteLine[1];
		const caseLine = /^\s+[✓✕] (.+) \((\d+) ms\)$/.exec(line);
		if (caseLine && suite)
			rows.push({ suite, name: caseLine[1], seconds: Number(caseLine[2]) / 1000 });
	}
	return rows;
}

const SLOWEST_CASES = 25;

function report(specs) {
	const rows = [];
	const cases = [];
	for (const spec of specs) {
		const [lane, kind, ...path] = spec.split(':');
		let text = '';
		try {
			text = readFileSync(path.join(':'), 'utf8');
		} catch {
			continue; // a phase that did not run
		}
		for (const row of suitesIn(text))
			rows.push({ ...row, lane, kind, budget: BUDGET_SECONDS[kind]?.[row.suite] });
		for (const row of casesIn(text)) cases.push({ ...row, kind });
	}
	rows.sort((a, b) => b.seconds - a.seconds);
	const lines = ['e2e suites, longest first (time, budget):'];
	for (const row of rows) {
		const budget = row.budget === undefined ? '   none' : `${String(row.budget).padStart(5)} s`;
		const over = row.budget !== undefined && row.seconds > row.budget ? '  OVER BUDGET' : '';
		const time = row.seconds === 0 ? '   <5' : row.seconds.toFixed(0).padStart(5);
		lines.push(
			`  ${time} s  ${budget}  ${row.status}  ${row.lane.padEnd(5)} ${row.kind.padEnd(5)} ${row.suite}${over}`,
		);
	}
	cases.sort((a, b) => b.seconds - a.seconds);
	if (cases.length > 0)
		lines.push(`the ${SLOWEST_CASES} slowest e2e cases (time, kind, suite, case):`);
	for (const row of cases.slice(0, SLOWEST_CASES))
		lines.push(
			`  ${row.seconds.toFixed(0).padStart(5)} s  ${row.kind.padEnd(5)} ${row.suite}  ${row.name}`,
		);
	const over = rows.filter((row) => row.budget !== undefined && row.seconds > row.budget);
	lines.push(
		over.length === 0
			? 'suites over their budget: none'
			: `suites over their budget: ${over.map((row) => `${row.suite} (${row.kind}, ${row.seconds.toFixed(0)} s > ${row.budget} s)`).join(', ')}`,
	);
	return lines;
}

if (require.main === module) {
	for (const line of report(process.argv.slice(2))) console.log(line);
}

module.exports = { casesIn, report, suitesIn };
