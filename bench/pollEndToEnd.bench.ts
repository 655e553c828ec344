/**
 * The Poll Trigger where users live: one real n8n (SQLite), a poll whose answer lists 300 new items
 * and 100 remembered ones, over remembered histories of 0, 100,000 and 1,000,000 keys. For each:
 * time from the poll's answer to the last of the 300 runs started, bytes n8n wrote to disk during
 * the poll (/proc/<pid>/io), the node's state size in static data, and n8n's peak memory from
 * activation to the last run (VmHWM, reset before it). History 0 is the baseline the ratios are
 * against. The history is put in the workflow's static data when it is created (built by the core,
 * as a first poll would leave it), so activation loads it from the database as after a restart.
 * Needs the built package (npm run build); packs it like the e2e tests do.
 *   npx tsx bench/pollEndToEnd.bench.ts        (BENCH_E2E_HISTORIES=0,100000 to shorten;
 *                                              BENCH_N8N_HEAP_MB: n8n's heap, default 16384)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

import { loadDedupeStore } from '../core/poll';
import { marker, node, PACKAGE, workflow } from '../test/e2e/workflowBuilder';
import { FakeSystem } from '../test/harness/fakeSystem';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance } from '../test/harness/n8nInstance';

const HISTORIES = (process.env.BENCH_E2E_HISTORIES ?? '0,100000,1000000').split(',').map(Number);
/** n8n's default heap (about 4 GB here) runs out of memory at a million keys; see README. */
const HEAP_MB = Number(process.env.BENCH_N8N_HEAP_MB ?? 16_384);
const NEW_ITEMS = 300;
const REMEMBERED_LISTED = 100;

interface Figures {
	history: number;
	ms: number;
	diskBytes: number;
	stateBytes: number;
	peakRssBytes: number;
}

const seed = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `seed-${i}` }));
const fresh = Array.from({ length: NEW_ITEMS }, (_, i) => ({
	id: `new-${i}`,
	subject: `ticket ${i}`,
}));

/**
 * The trigger's saved state remembering `history` keys, built by the core exactly as a poll would
 * (a first poll that only remembers what is there), as it stands in the workflow's static data.
 */
function staticDataRemembering(history: number): Record<string, unknown> {
	const { store } = loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'none' } });
	const keyed = seed(history).map((item, index) => ({ item, key: item.id, index }));
	store.commit(store.plan(keyed, Date.now()), Date.now(), { keyPrefix: 'poll:seed:' });
	return { 'node:Poll': { pollTrigger: { v: 1, dedupe: store.serialize() } } };
}

async function measure(history: number): Promise<Figures> {
	const source = await FakeSystem.start();
	const n8n = await N8nInstance.launch(`bench-poll-e2e-${history}`, {
		N8N_LOG_LEVEL: 'warn',
		NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`,
	});
	try {
		let answeredAt = 0;
		source.on('GET', '/items', () => {
			answeredAt = Date.now();
			return { body: [...seed(Math.min(history, REMEMBERED_LISTED)), ...fresh] };
		});
		const trigger = node('Poll', `${PACKAGE}.pollTrigger`, {
			op: 'http.request',
			with: JSON.stringify({ url: source.url('/items') }),
			id: 'id',
			dedupe: 'unique',
			interval: 1,
			intervalUnit: 'hours',
			options: { timeoutSec: 600 },
		});
		const id = await n8n.importWorkflow(
			workflow(`bench poll ${history}`, [trigger, marker('Handled')], [['Poll', 'Handled']]),
		);
		// The history goes straight into n8n's database while it is stopped (n8n's API would carry it,
		// but n8n 2.41 runs out of memory creating a workflow with 16 MB of static data).
		await n8n.stop();
		const database = new DatabaseSync(join(n8n.userFolder, '.n8n', 'database.sqlite'));
		database
			.prepare('UPDATE workflow_entity SET staticData = ? WHERE id = ?')
			.run(JSON.stringify(staticDataRemembering(history)), id);
		database.close();
		await n8n.start();
		await n8n.login();
		const pid = n8n.pid as number;
		writeFileSync(`/proc/${pid}/clear_refs`, '5');
		const writtenBefore = writeBytes(pid);
		// Activation loads the remembered history from the database, as after any restart; the first
		// poll comes at once.
		await n8n.publish(id);
		await source.requestCount('/items', 1, 600_000);
		const answered = answeredAt;
		const executions = await n8n.waitForFinishedExecutions(id, NEW_ITEMS, 600_000);
		const lastStarted = Math.max(...executions.map((execution) => Date.parse(execution.startedAt)));
		const figures: Figures = {
			history,
			ms: lastStarted - answered,
			diskBytes: writeBytes(pid) - writtenBefore,
			stateBytes: JSON.stringify((await n8n.getWorkflow(id)).staticData ?? {}).length,
			peakRssBytes:
				Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) *
				1024,
		};
		if (executions.length !== NEW_ITEMS)
			throw new Error(`expected ${NEW_ITEMS} runs, got ${executions.length}`);
		await n8n.unpublish(id);
		return figures;
	} finally {
		await n8n.stop();
		await source.close();
	}
}

function writeBytes(pid: number): number {
	return Number(/write_bytes: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);

async function main(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	const results: Figures[] = [];
	for (const history of HISTORIES) {
		try {
			results.push(await measure(history));
		} catch (error) {
			process.stdout.write(
				`history ${history.toLocaleString('en')}: no figures: ${(error as Error).message.split('\n')[0]}\n`,
			);
		}
	}
	const base = results[0];
	process.stdout.write(
		`Poll Trigger end to end in n8n (SQLite, heap ${HEAP_MB} MB): ${NEW_ITEMS} new + ${REMEMBERED_LISTED} remembered items per poll, poll answered -> last run started\n`,
	);
	const rows = [
		[
			'history keys',
			'ms',
			'x history 0',
			'disk MB written',
			'state MB',
			'state writes*',
			'peak RSS MB',
		],
	];
	for (const r of results) {
		const extraWrites =
			r.stateBytes > 1e6 ? ((r.diskBytes - base.diskBytes) / r.stateBytes).toFixed(1) : '-';
		rows.push([
			r.history.toLocaleString('en'),
			r.ms.toFixed(0),
			(r.ms / base.ms).toFixed(2),
			mb(r.diskBytes),
			mb(r.stateBytes),
			extraWrites,
			mb(r.peakRssBytes),
		]);
	}
	for (const row of rows)
		process.stdout.write(
			`${row[0].padEnd(14)}${row
				.slice(1)
				.map((cell) => cell.padStart(16))
				.join('')}\n`,
		);
	process.stdout.write(
		'* (disk written - disk written at history 0) / state size: about how many times the state was written during the poll.\n',
	);
}

void main();
