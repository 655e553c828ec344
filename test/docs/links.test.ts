/**
 * README.md and docs/*.md stay navigable: every relative link reaches a file, and every `#anchor` a heading
 * of its page by GitHub's slug rules; every examples/*.json README names exists; the nodes' and the
 * credentials' Docs links (on the repository's GitHub URL) open a page and heading that exist here.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { repoRoot } from '../harness/paths';

/** The id GitHub gives a heading (github-slugger): lower case, only letters, marks, digits, `_`, `-` and spaces, spaces as `-`. */
function githubSlug(heading: string): string {
	const text = heading
		.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
		.replace(/<[^>]+>/g, '')
		.replace(/[`*]/g, '');
	return text
		.trim()
		.toLowerCase()
		.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
		.replace(/ /g, '-');
}

/** Markdown lines outside fenced code blocks, with their line numbers. */
function proseLines(markdown: string): Array<{ line: number; text: string }> {
	const lines: Array<{ line: number; text: string }> = [];
	let fenced = false;
	markdown.split('\n').forEach((text, index) => {
		if (/^\s*(```|~~~)/.test(text)) fenced = !fenced;
		else if (!fenced) lines.push({ line: index + 1, text });
	});
	return lines;
}

/** The anchors of a markdown file's headings, repeated ones numbered as GitHub numbers them (`-1`, `-2`). */
function headingAnchors(markdown: string): Set<string> {
	const anchors = new Set<string>();
	const seen = new Map<string, number>();
	for (const { text } of proseLines(markdown)) {
		const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
		if (!heading) continue;
		const slug = githubSlug(heading[1]);
		const count = seen.get(slug) ?? 0;
		seen.set(slug, count + 1);
		anchors.add(count === 0 ? slug : `${slug}-${count}`);
	}
	return anchors;
}

/** Link and image targets outside code, with their line numbers. */
function linkTargets(markdown: string): Array<{ line: number; target: string }> {
	const targets: Array<{ line: number; target: string }> = [];
	for (const { line, text } of proseLines(markdown)) {
		const prose = text.replace(/`[^`]*`/g, '``');
		for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
			targets.push({ line, target: match[1] });
		}
	}
	return targets;
}

/** What is wrong with `file`'s heading `anchor` (or with `file` alone), or undefined when it exists. */
function missing(file: string, anchor: string | undefined): string | undefined {
	if (!existsSync(file)) return `no file ${relative(repoRoot, file)}`;
	if (anchor === undefined) return undefined;
	if (statSync(file).isDirectory() || !file.endsWith('.md')) {
		return `an anchor (#${anchor}) into ${relative(repoRoot, file)}, which is not a markdown page`;
	}
	const anchors = headingAnchors(readFileSync(file, 'utf8'));
	return anchors.has(anchor) ? undefined : `no heading #${anchor} in ${relative(repoRoot, file)}`;
}

/** `path#anchor` split and decoded; an empty path is the page itself. */
function splitTarget(target: string): { path: string; anchor: string | undefined } {
	const hashAt = target.indexOf('#');
	return {
		path: decodeURIComponent(hashAt < 0 ? target : target.slice(0, hashAt)),
		anchor: hashAt < 0 ? undefined : decodeURIComponent(target.slice(hashAt + 1)),
	};
}

/** What is wrong with a link from `fromFile` to `target`; links with a scheme (https:, mailto:) are not followed. */
function brokenLink(fromFile: string, target: string): string | undefined {
	if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
	const { path, anchor } = splitTarget(target);
	return missing(path === '' ? fromFile : resolve(dirname(fromFile), path), anchor);
}

function brokenLinksIn(files: string[]): string[] {
	return files.flatMap((file) =>
		linkTargets(readFileSync(file, 'utf8')).flatMap(({ line, target }) => {
			const problem = brokenLink(file, target);
			return problem ? [`${relative(repoRoot, file)}:${line}: (${target}): ${problem}`] : [];
		}),
	);
}

const readme = join(repoRoot, 'README.md');
const docsDir = join(repoRoot, 'docs');
const docPages = readdirSync(docsDir)
	.filter((name) => name.endsWith('.md'))
	.map((name) => join(docsDir, name));

/** The repository's GitHub URL, from package.json (`git+https://github.com/owner/name.git`). */
const githubUrl = (
	JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
		repository: { url: string };
	}
).repository.url
	.replace(/^git\+/, '')
	.replace(/\.git$/, '');

/** A Docs URL on the repository's GitHub (`<githubUrl>/blob/main/<path>#anchor`), checked as a local link. */
function brokenDocsUrl(url: string): string | undefined {
	const prefix = `${githubUrl}/blob/main/`;
	if (!url.startsWith(prefix)) return `not a page of ${prefix}`;
	const { path, anchor } = splitTarget(url.slice(prefix.length));
	return missing(join(repoRoot, path), anchor);
}

describe('documentation links', () => {
	it('every relative link in README.md and docs/*.md reaches a file, and every #anchor a heading of it', () => {
		expect(docPages.length).toBeGreaterThan(0);
		expect(brokenLinksIn([readme, ...docPages])).toEqual([]);
	});

	it('every examples/*.json README names exists', () => {
		const named = [...readFileSync(readme, 'utf8').matchAll(/examples\/[\w.-]+\.json/g)].map(
			(m) => m[0],
		);
		expect(named.length).toBeGreaterThan(0);
		expect(named.filter((path) => !existsSync(join(repoRoot, path)))).toEqual([]);
	});

	it("each node's and credential's Docs link opens a page (and heading) of docs/ on the repository's GitHub", () => {
		const nodeCodexes = readdirSync(join(repoRoot, 'nodes'), { withFileTypes: true })
			.filter((entry) => entry.isDirectory())
			.flatMap((entry) =>
				readdirSync(join(repoRoot, 'nodes', entry.name))
					.filter((name) => name.endsWith('.node.json'))
					.map((name) => join(repoRoot, 'nodes', entry.name, name)),
			);
		expect(nodeCodexes).toHaveLength(5);
		const urls = nodeCodexes.flatMap((file) => {
			const codex = JSON.parse(readFileSync(file, 'utf8')) as {
				resources: { primaryDocumentation: Array<{ url: string }> };
			};
			return codex.resources.primaryDocumentation.map(({ url }) => ({ from: file, url }));
		});
		const credentialFiles = readdirSync(join(repoRoot, 'credentials')).filter((name) =>
			/\.credentials\.ts$/.test(name),
		);
		for (const name of credentialFiles) {
			// n8n's convention: Foo.credentials.ts exports the credential class Foo.
			const className = name.replace(/\.credentials\.ts$/, '');
			const CredentialType = (
				require(join(repoRoot, 'credentials', name)) as Record<
					string,
					new () => { documentationUrl?: string }
				>
			)[className];
			const { documentationUrl } = new CredentialType();
			if (documentationUrl)
				urls.push({ from: join(repoRoot, 'credentials', name), url: documentationUrl });
		}
		expect(urls.length).toBe(nodeCodexes.length + credentialFiles.length);
		const broken = urls.flatMap(({ from, url }) => {
			const problem = brokenDocsUrl(url);
			return problem ? [`${relative(repoRoot, from)}: ${url}: ${problem}`] : [];
		});
		expect(broken).toEqual([]);
		for (const { url } of urls) expect(url).toMatch(/\/blob\/main\/docs\/[\w.-]+\.md(#[\w-]+)?$/);
	});

	// README's length and order: consistency.test.ts.
	it('each docs page first says what it covers', () => {
		// The first paragraph, after at most a title, is prose (not a table, list, image or code).
		const silent = docPages.filter((file) => {
			const lines = readFileSync(file, 'utf8').split('\n').slice(0, 5);
			const first = lines.find((line) => line.trim() !== '' && !/^# /.test(line));
			return first === undefined || /^\s*(#|\||[-*+] |!\[|```|~~~|<)/.test(first);
		});
		expect(silent.map((file) => relative(repoRoot, file))).toEqual([]);
	});
});

describe('githubSlug', () => {
	it.each([
		['Quick start (this repository)', 'quick-start-this-repository'],
		['`http.request`', 'httprequest'],
		[
			"What the node relies on in n8n (read in n8n 2.41.1's source)",
			'what-the-node-relies-on-in-n8n-read-in-n8n-2411s-source',
		],
		['Cron: minimum gap', 'cron-minimum-gap'],
		['Example: `examples/poll-oauth2-tickets.json`', 'example-examplespoll-oauth2-ticketsjson'],
		['Poll Trigger — guarantees', 'poll-trigger--guarantees'],
	])('%s → %s', (heading, slug) => {
		expect(githubSlug(heading)).toBe(slug);
	});

	it('numbers repeated headings as GitHub does', () => {
		expect([
			...headingAnchors('# A\n## Parameters\n```\n## Not a heading\n```\n## Parameters\n'),
		]).toEqual(['a', 'parameters', 'parameters-1']);
	});
});
