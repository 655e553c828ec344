/**
 * The table at the end of `npm test` (scripts/suite-times.js): each e2e suite's time from jest's output
 * beside its budget (test/harness/sequencer.js), and the suites over budget named in one line.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { casesIn, report, suitesIn } = require('../../scripts/suite-times.js') as {
	casesIn: (text: string) => Array<{ suite: string; name: string; seconds: number }>;
	report: (specs: string[]) => string[];
	suitesIn: (text: string) => Array<{ status: string; suite: string; seconds: number }>;
};

const jestOutput = [
	'PASS e2e test/e2e/pollTrigger.test.ts (612.5 s)',
	'  the Poll Trigger',
	'    ✓ a burst of 300 starts each once (41234 ms)',
	'    ✓ quick (3 ms)',
	'FAIL e2e test/e2e/historyStore.test.ts (100.25 s)',
	'PASS e2e test/e2e/foundation.test.ts',
	'PASS unit core/poll/dedupe.test.ts (7.1 s)',
].join('\n');

describe('the suite table at the end of npm test', () => {
	test("reads jest's e2e lines: status, suite and seconds (none under 5 s), not the unit project's", () => {
		expect(suitesIn(jestOutput)).toEqual([
			{ status: 'PASS', suite: 'pollTrigger.test.ts', seconds: 612.5 },
			{ status: 'FAIL', suite: 'historyStore.test.ts', seconds: 100.25 },
			{ status: 'PASS', suite: 'foundation.test.ts', seconds: 0 },
		]);
	});

	test("reads --verbose's case lines under their suite", () => {
		expect(casesIn(jestOutput)).toEqual([
			{ suite: 'pollTrigger.test.ts', name: 'a burst of 300 starts each once', seconds: 41.234 },
			{ suite: 'pollTrigger.test.ts', name: 'quick', seconds: 0.003 },
		]);
	});

	test('lists suites longest first with their budgets and names those over budget; a phase that did not run is skipped', () => {
		const log = join(mkdtempSync(join(tmpdir(), 'suite-times-')), 'lane.log');
		writeFileSync(log, jestOutput);
		const lines = report([`2.41:2.41:${log}`, `1.x:1.123:${log}-missing`]);
		expect(lines[1]).toMatch(
			/^\s+613 s\s+540 s\s+PASS\s+2\.41\s+2\.41\s+pollTrigger\.test\.ts\s+OVER BUDGET$/,
		);
		expect(lines[2]).toMatch(/^\s+100 s\s+300 s\s+FAIL .*historyStore\.test\.ts$/);
		expect(lines[3]).toMatch(/^\s+<5 s\s+60 s\s+PASS .*foundation\.test\.ts$/);
		expect(lines).toContain('the 25 slowest e2e cases (time, kind, suite, case):');
		expect(lines).toContain(
			'     41 s  2.41  pollTrigger.test.ts  a burst of 300 starts each once',
		);
		expect(lines.at(-1)).toBe(
			'suites over their budget: pollTrigger.test.ts (2.41, 613 s > 540 s)',
		);
	});
});
