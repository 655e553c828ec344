/**
 * What docs/development.md's layout says of `core/`, checked: it is plain TypeScript that imports
 * nothing from n8n (`n8n-workflow`, `n8n-core`, any `@n8n/` package), nothing from the node side
 * (`nodes/`, `credentials/`) nor test support (`test/`, except from its own tests), and its modules
 * import each other without a circle (type-only imports count: a circle of types is a knot to untie
 * all the same). Imports are read from the source text (`import`/`export … from`, `import()`,
 * `require()`), so the check needs no dependency. Nor does it hold the editor's labels: no label
 * of a node's parameter, a credential's field or a credential type is a string of its code (it
 * names fields by id, core/configError.ts `fieldRef`).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { INodeProperties, INodePropertyCollection } from 'n8n-workflow';

import { CREDENTIALS } from '../../nodes/shared/editorWords';
import { NODE_PROPERTIES } from '../../nodes/shared/errors';
import { repoRoot } from '../harness/paths';

const CORE = join(repoRoot, 'core');

function sourceFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		if (statSync(path).isDirectory()) return sourceFiles(path);
		return name.endsWith('.ts') ? [path] : [];
	});
}

/** The module specifiers a file imports, in the order written. */
export function importsOf(source: string): string[] {
	// Comments may name modules in prose; strings are kept (a specifier is one).
	const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
	const specifiers: string[] = [];
	for (const match of code.matchAll(
		/(?:^|[;\n}])\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|(?:^|[;\n])\s*import\s*['"]([^'"]+)['"]|\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
	))
		specifiers.push(match[1] ?? match[2] ?? match[3]);
	return specifiers;
}

/** The file a relative specifier names (`./x` is `x.ts` or `x/index.ts`), or undefined. */
function resolveRelative(from: string, specifier: string, files: Set<string>): string | undefined {
	const base = resolve(dirname(from), specifier);
	return [`${base}.ts`, join(base, 'index.ts'), base].find((path) => files.has(path));
}

/** The circles of a graph: its strongly connected components of more than one node (or a self-import). */
export function circlesOf(graph: Map<string, string[]>): string[][] {
	const index = new Map<string, number>();
	const low = new Map<string, number>();
	const stack: string[] = [];
	const onStack = new Set<string>();
	const circles: string[][] = [];
	let next = 0;
	const visit = (node: string) => {
		index.set(node, next);
		low.set(node, next++);
		stack.push(node);
		onStack.add(node);
		for (const to of graph.get(node) ?? []) {
			if (!index.has(to)) {
				visit(to);
				low.set(node, Math.min(low.get(node)!, low.get(to)!));
			} else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
		}
		if (low.get(node) === index.get(node)) {
			const component: string[] = [];
			let member: string;
			do {
				member = stack.pop()!;
				onStack.delete(member);
				component.push(member);
			} while (member !== node);
			if (component.length > 1 || (graph.get(node) ?? []).includes(node))
				circles.push(component.sort());
		}
	};
	for (const node of graph.keys()) if (!index.has(node)) visit(node);
	return circles;
}

const files = sourceFiles(CORE);
const fileSet = new Set(files);
const shown = (path: string) => relative(repoRoot, path);

describe('core/ imports', () => {
	it('finds the imports of every form, and a circle in a graph', () => {
		expect(
			importsOf(
				[
					"import { a } from './a';",
					"import type { B } from '../b';",
					"export * from './c';",
					'export type {\n\tD,\n} from "./d";',
					"import './e';",
					"const f = require('./f');",
					"await import('./g');",
					"// import { h } from './h';",
					"/* import { i } from './i'; */",
				].join('\n'),
			),
		).toEqual(['./a', '../b', './c', './d', './e', './f', './g']);
		expect(
			circlesOf(
				new Map([
					['a', ['b']],
					['b', ['c']],
					['c', ['a']],
					['d', ['a']],
				]),
			),
		).toEqual([['a', 'b', 'c']]);
		expect(circlesOf(new Map([['a', ['a']]]))).toEqual([['a']]);
	});

	it('reads core/ (the check is not vacuous)', () => {
		expect(files.length).toBeGreaterThan(20);
		expect(importsOf(readFileSync(join(CORE, 'poll', 'runner.ts'), 'utf8'))).toContain(
			'../configError',
		);
	});

	it('imports nothing from n8n, the node side or test support', () => {
		const forbidden = files.flatMap((file) =>
			importsOf(readFileSync(file, 'utf8'))
				.filter((specifier) => {
					if (/^(n8n-workflow|n8n-core|n8n-nodes-base|n8n)(\/|$)|^@n8n\//.test(specifier))
						return true;
					if (!specifier.startsWith('.')) return false;
					const target = relative(repoRoot, resolve(dirname(file), specifier));
					if (target === 'core' || target.startsWith(`core/`)) return false;
					// A test may use the shared test support; product code nothing outside core/.
					return !(file.endsWith('.test.ts') && target.startsWith('test/support/'));
				})
				.map((specifier) => `${shown(file)} imports ${specifier}`),
		);
		expect(forbidden).toEqual([]);
	});

	it('has no import circle', () => {
		const graph = new Map(
			files.map((file) => [
				file,
				importsOf(readFileSync(file, 'utf8'))
					.filter((specifier) => specifier.startsWith('.'))
					.map((specifier) => resolveRelative(file, specifier, fileSet))
					.filter((target): target is string => target !== undefined),
			]),
		);
		expect(circlesOf(graph).map((circle) => circle.map(shown).join(' → '))).toEqual([]);
	});
});

/** Every label a node's parameters show, in collections too. */
function labelsOf(properties: ReadonlyArray<INodeProperties | INodePropertyCollection>): string[] {
	return properties.flatMap((property) => [
		property.displayName,
		...labelsOf('values' in property ? property.values : []),
		...labelsOf(
			('options' in property ? (property.options ?? []) : []).filter(
				(option): option is INodeProperties | INodePropertyCollection => 'displayName' in option,
			),
		),
	]);
}

/** The code of a file without its comments; a page's section (`docs/x.md: "History Store"`) is a title, not a label. */
function codeOf(file: string): string {
	return readFileSync(file, 'utf8')
		.replace(/\/\*[\s\S]*?\*\//g, '')
		.replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
		.replace(/\.md: "[^"]*"/g, '.md');
}

describe('core/ holds no label of the editor', () => {
	const labels = new Set([
		...Object.values(NODE_PROPERTIES).flatMap(labelsOf),
		...Object.values(CREDENTIALS).flatMap(({ displayName, fields }) => [
			displayName,
			...Object.values(fields),
		]),
	]);
	const quoted = (label: string) => ["'", '"', '`'].map((quote) => `${quote}${label}${quote}`);

	it('knows the labels (the check is not vacuous)', () => {
		for (const label of [
			'Queue Limit',
			'Remember at Most (Keys)',
			'Next URL',
			'Tolerance (Seconds)',
		])
			expect(labels).toContain(label);
	});

	it('has none as a string, nor quoted in a message', () => {
		const held = files
			.filter((file) => !file.endsWith('.test.ts'))
			.flatMap((file) => {
				const code = codeOf(file);
				return [...labels]
					.filter((label) => quoted(label).some((text) => code.includes(text)))
					.map((label) => `${shown(file)}: ${label}`);
			});
		expect(held).toEqual([]);
	});
});
