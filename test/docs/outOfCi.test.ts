/**
 * test/harness/outOfCi.js, the list of what `npm test` (CI) leaves out, stays honest: each suite it names
 * exists, and each case it names is found in its file and in no other test file. jest.config.js turns
 * the cases into one testNamePattern for both projects, so a name that also matched another case would
 * take that case out of CI unnoticed, and a renamed case would quietly come back.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { repoRoot } from '../harness/paths';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { OUT_OF_CI, selection } = require('../harness/outOfCi') as {
	OUT_OF_CI: Array<{ file: string; test?: string; n8n1?: boolean; why: string }>;
	selection: (options: { full: boolean; n8n1: boolean; leftOut?: string }) => {
		testPathIgnorePatterns: string[];
		testNamePattern?: string;
	};
};

function testFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name);
		if (entry.isDirectory()) return testFiles(path);
		return entry.name.endsWith('.test.ts') ? [path] : [];
	});
}

/** Every test file but this one (which quotes two of the cases to check the pattern). */
const everyTestFile = ['core', 'nodes', 'credentials', 'test']
	.flatMap((dir) => testFiles(join(repoRoot, dir)))
	.filter((path) => path !== __filename);

describe('what CI leaves out (test/harness/outOfCi.js)', () => {
	// Named by file and place in the list: a case's own words in a name here would match the pattern.
	test.each(OUT_OF_CI.map((entry, index) => [entry.file, index, entry] as const))(
		'%s (entry %i): there, with a reason',
		(_file, _index, entry) => {
			const path = join(repoRoot, 'test', 'e2e', entry.file);
			expect(existsSync(path)).toBe(true);
			expect(entry.why.length).toBeGreaterThan(20);
			if (!entry.test) return;
			expect(readFileSync(path, 'utf8')).toContain(entry.test);
			const elsewhere = everyTestFile
				.filter((other) => other !== path && readFileSync(other, 'utf8').includes(entry.test!))
				.map((other) => relative(repoRoot, other));
			expect(elsewhere).toEqual([]);
		},
	);

	test("jest's pattern leaves out the named cases and keeps the others; E2E_FULL keeps everything", () => {
		const { testNamePattern } = selection({ full: false, n8n1: false });
		const pattern = new RegExp(testNamePattern!, 'i');
		expect(
			pattern.test(
				'S3 source in a real n8n a burst of 1,000 objects starts 1,000 runs, each once, each moving its object to processed/',
			),
		).toBe(false);
		expect(
			pattern.test(
				'never lose one from sources that list only what they are asked for (issue 36), in a real n8n each source: a burst of 300, the workflows unpublished and published again after the first runs, 20 more listed meanwhile: lost 0, repeated 0',
			),
		).toBe(false);
		expect(
			pattern.test('Poll Trigger in a real n8n a crash (SIGKILL) right after runs started'),
		).toBe(true);
		expect(selection({ full: true, n8n1: true })).toEqual({
			testPathIgnorePatterns: [],
			testNamePattern: undefined,
		});
	});
});
