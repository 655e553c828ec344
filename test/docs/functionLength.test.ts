/**
 * Issue 39's bound on the node side's functions, checked with the TypeScript compiler's parser: no
 * function, method, accessor, constructor or arrow in `nodes/` (tests aside) is over 80 lines, and a
 * trigger's `trigger()` is at most 50 (it reads its parameters, builds its engine and hands it to
 * nodes/shared/durableTrigger.ts). A function counts from its first line to its last, comments and
 * blank lines within it included; a nested function counts within its parent and on its own.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

import { repoRoot } from '../harness/paths';

const FUNCTION_MAX_LINES = 80;
const TRIGGER_MAX_LINES = 50;

function sourceFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		if (statSync(path).isDirectory()) return sourceFiles(path);
		return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
	});
}

interface FunctionSpan {
	/** `file:line name` */
	where: string;
	name: string;
	lines: number;
}

/** Every function-like node with a body in a source text, and how many lines it spans. */
export function functionSpans(fileName: string, text: string): FunctionSpan[] {
	const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
	const spans: FunctionSpan[] = [];
	const lineOf = (position: number) => file.getLineAndCharacterOfPosition(position).line + 1;
	const visit = (node: ts.Node) => {
		if (ts.isFunctionLike(node) && 'body' in node && node.body) {
			const first = lineOf(node.getStart(file));
			const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
			spans.push({
				where: `${fileName}:${first} ${name}`,
				name,
				lines: lineOf(node.getEnd()) - first + 1,
			});
		}
		ts.forEachChild(node, visit);
	};
	visit(file);
	return spans;
}

const spans = sourceFiles(join(repoRoot, 'nodes')).flatMap((path) =>
	functionSpans(relative(repoRoot, path), readFileSync(path, 'utf8')),
);

describe('the length of the node side’s functions (issue 39)', () => {
	it('counts a function from its first line to its last, nested ones on their own', () => {
		const text = ['function outer() {', '\tconst inner = () => {', '\t\treturn 1;', '\t};', '}'];
		expect(functionSpans('x.ts', text.join('\n')).map(({ name, lines }) => [name, lines])).toEqual([
			['outer', 5],
			['(anonymous)', 3],
		]);
	});

	it(`has no function in nodes/ over ${FUNCTION_MAX_LINES} lines`, () => {
		expect(spans.length).toBeGreaterThan(100);
		const long = spans.filter(({ lines }) => lines > FUNCTION_MAX_LINES);
		expect(long.map(({ where, lines }) => `${where}: ${lines} lines`)).toEqual([]);
	});

	it(`has each trigger() at most ${TRIGGER_MAX_LINES} lines`, () => {
		const triggers = spans.filter(({ name }) => name === 'trigger');
		expect(triggers.map(({ where }) => where.split(':')[0]).sort()).toEqual([
			'nodes/DurableScheduleTrigger/DurableScheduleTrigger.node.ts',
			'nodes/PollTrigger/PollTrigger.node.ts',
		]);
		const long = triggers.filter(({ lines }) => lines > TRIGGER_MAX_LINES);
		expect(long.map(({ where, lines }) => `${where}: ${lines} lines`)).toEqual([]);
	});
});
