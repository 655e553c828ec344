/**
 * The Poll Trigger where users live: one real n8n (SQLite), a poll whose answer lists 300 new items
 * and 100 remembered ones, over remembered histories of 0, 100,000 and 1,000,000 keys. For each:
 * time from the poll's answer to the last of the 300 runs started, bytes n8n wrote to disk during
 * the poll (/proc/<pid>/io), the node's state size in static data, and n8n's peak memory during the
 * poll (VmHWM, reset before it). History 0 is the baseline the ratios are against.
 * Needs the built package (npm run build); packs it like the e2e tests do.
 *   npx tsx bench/pollEndToEnd.bench.ts        (BENCH_E2E_HISTORIES=0,100000 to shorten)
 */
import { readFileSync, writeFileSync } from 'node:fs';

import { marker, node, PACKAGE, workflow } from '../test/e2e/workflowBuilder';
import { FakeSystem } from '../test/harness/fakeSystem';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance } from '../test/harness/n8nInstance';

const HISTORIES = (process.env.BENCH_E2E_HISTORIES ?? '0,100000,1000000').split(',').map(Number);
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
const fresh = Array.from({ length: NEW_ITEMS }, (_, i) => ({ id: `new-${i}`, subject: `ticket ${i}` }));

async function measure(history: number): Promise<Figures> {
	const source = await FakeSystem.start();
	const n8n = await N8nInstance.launch(`bench-poll-e2e-${history}`, { N8N_LOG_LEVEL: 'warn' });
	try {
		let list: Array<Record<string, unknown>> = seed(history);
		let answeredAt = 0;
		source.on('GET', '/items', () => {
			answeredAt = Date.now();
			return { body: list };
		});
		const trigger = node('Poll', `${PACKAGE}.pollTrigger`, {
			op: 'http.request',
			with: JSON.stringify({ url: source.url('/items') }),
			id: 'id',
			dedupe: 'unique',
			interval: 5,
			intervalUnit: 'seconds',
			options: { firstPoll: 'none', timeoutSec: 600 },
		});
		const id = await n8n.importWorkflow(workflow(`bench poll ${history}`, [trigger, marker('Handled')], [['Poll', 'Handled']]));
		await n8n.publish(id);
		// The first poll remembers the history without starting anything; a one-item burst then writes it.
		await source.requestCount('/items', 2, 600_000);
		list = [...list, { id: 'warm-up' }];
		await n8n.waitForFinishedExecutions(id, 1, 600_000);
		// A fresh process loads the history from the database, as after any restart.
		await n8n.restart();
		await source.requestCount('/items', source.requests('/items').length + 1, 600_000);
		const pid = n8n.pid as number;
		writeFileSync(`/proc/${pid}/clear_refs`, '5');
		const writtenBefore = writeBytes(pid);
		const pollsBefore = source.requests('/items').length;
		list = [...seed(Math.min(history, REMEMBERED_LISTED)), ...fresh];
		await source.requestCount('/items', pollsBefore + 1, 600_000);
		const answered = answeredAt;
		const executions = await n8n.waitForFinishedExecutions(id, 1 + NEW_ITEMS, 600_000);
		const lastStarted = Math.max(...executions.map((execution) => Date.parse(execution.startedAt)));
		const figures: Figures = {
			history,
			ms: lastStarted - answered,
			diskBytes: writeBytes(pid) - writtenBefore,
			stateBytes: JSON.stringify((await n8n.getWorkflow(id)).staticData ?? {}).length,
			peakRssBytes: Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024,
		};
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
	for (const history of HISTORIES) results.push(await measure(history));
	const base = results[0];
	process.stdout.write(`Poll Trigger end to end in n8n (SQLite): ${NEW_ITEMS} new + ${REMEMBERED_LISTED} remembered items per poll, poll answered -> last run started\n`);
	const rows = [['history keys', 'ms', 'x history 0', 'disk MB written', 'state MB', 'state writes*', 'peak RSS MB']];
	for (const r of results) {
		const extraWrites = r.stateBytes > 1e6 ? ((r.diskBytes - base.diskBytes) / r.stateBytes).toFixed(1) : '-';
		rows.push([r.history.toLocaleString('en'), r.ms.toFixed(0), (r.ms / base.ms).toFixed(2), mb(r.diskBytes), mb(r.stateBytes), extraWrites, mb(r.peakRssBytes)]);
	}
	for (const row of rows) process.stdout.write(`${row[0].padEnd(14)}${row.slice(1).map((cell) => cell.padStart(16)).join('')}\n`);
	process.stdout.write('* (disk written - disk written at history 0) / state size: about how many times the state was written during the poll.\n');
}

void main();
