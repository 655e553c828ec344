/**
 * What a Poll Trigger's remembered history costs where n8n keeps it, the workflow's static data: the
 * figures behind the history budget's warning levels (docs/poll-trigger.md, "History budget").
 *  1. Characters of static data per remembered key, per dedupe kind (the core's own serialize).
 *  2. Per run: n8n 2.41 reads the whole static data from its database twice for every run a trigger
 *     starts (`loadPublishedWorkflowData`, then `prepareNewExecution`) and parses it each time; timed
 *     here as two `SELECT staticData` on a SQLite file (node:sqlite) and two JSON.parse, with the heap
 *     one parsed copy takes (each run in flight holds one).
 *  3. The editor: opening a workflow is `GET /rest/workflows/:id`, which returns the workflow with
 *     its static data; timed in a real n8n (SQLite) with the history in the database, as the
 *     response's size and time (BENCH_HISTORY_N8N=0 skips it; needs `npm run build`).
 *   npx tsx bench/pollHistoryCost.bench.ts    (BENCH_HISTORY_KEYS=0,100000 to shorten)
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { type DedupeConfig, loadDedupeStore } from '../core/poll';
import { marker, workflow } from '../test/e2e/workflowBuilder';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance } from '../test/harness/n8nInstance';
import { DEDUPE_KINDS } from './dedupeKinds';

const KEYS = (process.env.BENCH_HISTORY_KEYS ?? '0,10000,62500,100000,250000,1000000')
	.split(',')
	.map(Number);
const WITH_N8N = process.env.BENCH_HISTORY_N8N !== '0';

/** The node's state remembering `count` keys (a first poll that only remembers), as static data JSON. */
function staticData(count: number, dedupe: DedupeConfig = { kind: 'unique' }): string {
	const { store } = loadDedupeStore({ dedupe, firstPoll: { mode: 'none' } });
	const keyed = Array.from({ length: count }, (_, i) => ({
		item: {},
		key: dedupe.kind === 'greatest' ? i : `ticket-${String(i).padStart(9, '0')}`,
		index: i,
		version: 'v1',
	}));
	store.commit(store.plan(keyed, Date.now()), Date.now(), { keyPrefix: 'poll:bench:' });
	return JSON.stringify({ 'node:Poll': { pollTrigger: { v: 1, dedupe: store.serialize() } } });
}

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)];
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(2);
const keysOf = (n: number) => n.toLocaleString('en-US');

function bytesPerKey(): void {
	const count = 100_000;
	process.stdout.write(`Static data per remembered key (${keysOf(count)} keys):\n`);
	for (const dedupe of DEDUPE_KINDS) {
		const empty = staticData(0, dedupe).length;
		const full = staticData(count, dedupe).length;
		const figure = ['greatest', 'last'].includes(dedupe.kind)
			? `${full} characters in all, whatever the history`
			: `${((full - empty) / count).toFixed(2)} characters a key`;
		process.stdout.write(`  ${dedupe.kind.padEnd(12)} ${figure}\n`);
	}
}

function perRunReads(): void {
	const file = join(tmpdir(), `history-cost-${process.pid}.sqlite`);
	rmSync(file, { force: true });
	const database = new DatabaseSync(file);
	database.exec('CREATE TABLE workflow_entity (id TEXT PRIMARY KEY, staticData TEXT)');
	const select = database.prepare('SELECT staticData FROM workflow_entity WHERE id = ?');
	const read = () => JSON.parse((select.get('wf') as { staticData: string }).staticData) as unknown;
	process.stdout.write(
		'\nPer run: two reads of the static data (SELECT + JSON.parse each), median of 7 rounds\n',
	);
	process.stdout.write(
		`${'keys'.padStart(10)}${'static MB'.padStart(12)}${'ms per run'.padStart(12)}${'heap MB per copy'.padStart(18)}\n`,
	);
	try {
		for (const count of KEYS) {
			const text = staticData(count);
			database.prepare('INSERT OR REPLACE INTO workflow_entity VALUES (?, ?)').run('wf', text);
			const runs = Math.max(3, Math.min(50, Math.round(50_000_000 / Math.max(text.length, 1))));
			read();
			const rounds = Array.from({ length: 7 }, () => {
				const start = performance.now();
				for (let i = 0; i < runs; i++) {
					read();
					read();
				}
				return (performance.now() - start) / runs;
			});
			const heap = heapOfCopies(text);
			process.stdout.write(
				`${keysOf(count).padStart(10)}${mb(text.length).padStart(12)}${median(rounds).toFixed(2).padStart(12)}${mb(heap).padStart(18)}\n`,
			);
		}
	} finally {
		database.close();
		rmSync(file, { force: true });
	}
}

// A collector to call, so that the heap measured holds only what is kept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap one parsed copy takes (ten kept, averaged). */
function heapOfCopies(text: string): number {
	const copies: unknown[] = [];
	gc();
	const before = process.memoryUsage().heapUsed;
	for (let i = 0; i < 10; i++) copies.push(JSON.parse(text));
	gc();
	const after = process.memoryUsage().heapUsed;
	return Math.max(0, after - before) / copies.length;
}

async function editorOpen(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	const n8n = await N8nInstance.launch('bench-history-cost', { N8N_LOG_LEVEL: 'warn' });
	try {
		const ids = new Map<number, string>();
		for (const count of KEYS)
			ids.set(
				count,
				await n8n.importWorkflow(workflow(`history ${count}`, [marker('Handled')], [])),
			);
		// Straight into the database while n8n is stopped, as the end-to-end benchmark does.
		await n8n.stop();
		const database = new DatabaseSync(join(n8n.userFolder, '.n8n', 'database.sqlite'));
		const update = database.prepare('UPDATE workflow_entity SET staticData = ? WHERE id = ?');
		for (const [count, id] of ids) update.run(staticData(count), id);
		database.close();
		await n8n.start();
		await n8n.login();
		process.stdout.write(
			'\nThe editor opening the workflow: GET /rest/workflows/:id, median of 5 (n8n 2.41.1, SQLite)\n',
		);
		process.stdout.write(
			`${'keys'.padStart(10)}${'response MB'.padStart(14)}${'staticData MB'.padStart(16)}${'ms'.padStart(8)}\n`,
		);
		for (const [count, id] of ids) {
			const cookie = await n8n.sessionCookie();
			const times: number[] = [];
			let body = '';
			for (let i = 0; i < 5; i++) {
				const start = performance.now();
				const response = await fetch(`${n8n.baseUrl}/rest/workflows/${id}`, {
					headers: { cookie, 'browser-id': 'bench' },
				});
				body = await response.text();
				times.push(performance.now() - start);
				if (!response.ok) throw new Error(`GET /rest/workflows/${id}: ${response.status}`);
			}
			const { data } = JSON.parse(body) as { data: { staticData?: unknown } };
			process.stdout.write(
				`${keysOf(count).padStart(10)}${mb(body.length).padStart(14)}${mb(JSON.stringify(data.staticData ?? null).length).padStart(16)}${median(times).toFixed(0).padStart(8)}\n`,
			);
		}
	} finally {
		await n8n.stop();
	}
}

async function main(): Promise<void> {
	bytesPerKey();
	perRunReads();
	if (WITH_N8N) await editorOpen();
}

void main();
