/**
 * README.md and docs/ agree with the package: docs/development.md's table of runtime dependencies names
 * exactly package.json's `dependencies`, and README stays a user's README: at most 350 lines, installing
 * before developing, with the two commands (`npm start`, `npm test`) CI and the project rules rely on.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../harness/paths';

const README_MAX_LINES = 350;
const INSTALL_HEADING = 'Installing in your own n8n';
const DEVELOP_HEADING = 'Developing this package';

const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8');

/** Lines as an editor counts them: a final newline ends the last line, it does not start another. */
function lineCount(text: string): number {
	if (text === '') return 0;
	const lines = text.split('\n');
	return text.endsWith('\n') ? lines.length - 1 : lines.length;
}

/** A page's lines, each with whether it is a heading line outside fenced code blocks. */
function linesWithHeadings(markdown: string): Array<{ text: string; heading?: string }> {
	let fenced = false;
	return markdown.split('\n').map((text) => {
		if (/^\s*(```|~~~)/.test(text)) fenced = !fenced;
		const heading = fenced ? null : /^##\s+(.*?)\s*$/.exec(text);
		return heading ? { text, heading: heading[1] } : { text };
	});
}

/** The titles of a page's `## ` headings, in order (code blocks skipped). */
function sectionTitles(markdown: string): string[] {
	return linesWithHeadings(markdown).flatMap(({ heading }) => (heading ? [heading] : []));
}

/** The lines of a `## <title>` section (code blocks included), up to the next `## ` heading. */
function section(markdown: string, title: string): string[] {
	const lines = linesWithHeadings(markdown);
	const start = lines.findIndex(({ heading }) => heading === title);
	if (start < 0) return [];
	const end = lines.findIndex(({ heading }, index) => index > start && heading !== undefined);
	return lines.slice(start + 1, end < 0 ? undefined : end).map(({ text }) => text);
}

/** The first cell of each body row of the first table in `lines`, its backticks removed. */
function firstColumn(lines: string[]): string[] {
	const rows = lines.filter((line) => line.trim().startsWith('|'));
	return rows
		.slice(2) // the header row and the |---| row
		.map((row) => row.split('|')[1].trim().replace(/`/g, ''));
}

describe('docs agree with the package', () => {
	it("docs/development.md's runtime dependencies are exactly package.json's dependencies", () => {
		const { dependencies } = JSON.parse(read('package.json')) as {
			dependencies: Record<string, string>;
		};
		const listed = firstColumn(section(read('docs/development.md'), 'Runtime dependencies'));
		expect(listed.length).toBeGreaterThan(0);
		expect(new Set(listed).size).toBe(listed.length);
		expect([...listed].sort()).toEqual(Object.keys(dependencies).sort());
	});

	it(`README stays a user's README: at most ${README_MAX_LINES} lines`, () => {
		expect(lineCount(read('README.md'))).toBeLessThanOrEqual(README_MAX_LINES);
	});

	it(`README says how to install ("${INSTALL_HEADING}") before how to develop ("${DEVELOP_HEADING}")`, () => {
		const titles = sectionTitles(read('README.md'));
		expect(titles).toContain(INSTALL_HEADING);
		expect(titles).toContain(DEVELOP_HEADING);
		expect(titles.indexOf(INSTALL_HEADING)).toBeLessThan(titles.indexOf(DEVELOP_HEADING));
		// Installing comes before the nodes: it is the first section.
		expect(titles[0]).toBe(INSTALL_HEADING);
	});

	it('README gives the test command, `npm test`, and `npm start`, in its development section', () => {
		const commands = section(read('README.md'), DEVELOP_HEADING).join('\n');
		expect(commands).toMatch(/^npm start\b/m);
		expect(commands).toMatch(/^npm test\b/m);
	});
});

describe('the helpers', () => {
	it('count lines as an editor does', () => {
		expect(lineCount('a\nb\n')).toBe(2);
		expect(lineCount('a\nb')).toBe(2);
		expect(lineCount('')).toBe(0);
	});

	it('read a section and its table, skipping code blocks', () => {
		const page = [
			'## A',
			'```',
			'## Not a heading',
			'```',
			'| Package | Why |',
			'|---|---|',
			'| `x` | one |',
			'| y | two |',
			'## B',
			'| z | no |',
		].join('\n');
		expect(sectionTitles(page)).toEqual(['A', 'B']);
		expect(firstColumn(section(page, 'A'))).toEqual(['x', 'y']);
	});
});
