/**
 * Single-process mode against queue mode, side by side, one run each: one poll lists 1,000 new items,
 * the Poll Trigger starts one run per item, and each run waits about 200 ms (a Wait node of 0.2 s,
 * which n8n sleeps through in-process). Measured: from the poll's answer until the last run has
 * finished (the latest `stoppedAt`), and runs per second. Single: one n8n with SQLite, n8n's default
 * (unlimited) production concurrency. Queue: Postgres and Redis from Debian, a main that polls and
 * enqueues, two workers (`--concurrency`, default 10 each) that execute, and a webhook processor.
 *   npx tsx bench/queueScale.bench.ts      (BENCH_QUEUE_RUNS=1000, BENCH_QUEUE_CONCURRENCY=10)
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';

import { marker, node, PACKAGE, workflow } from '../test/e2e/workflowBuilder';
import { FakeSystem } from '../test/harness/fakeSystem';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance } from '../test/harness/n8nInstance';
import { waitFor } from '../test/harness/net';
import { cacheDir } from '../test/harness/paths';
import {
	type QueueServices,
	startQueueServices,
	stopQueueServices,
} from '../test/harness/queueServices';

const RUNS = Number(process.env.BENCH_QUEUE_RUNS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_QUEUE_CONCURRENCY ?? 10);

interface Figures {
	topology: string;
	runs: number;
	ms: number;
	runsPerSecond: number;
	onWorkers?: number[];
}

async function measure(topology: 'single' | 'queue', services?: QueueServices): Promise<Figures> {
	const source = await FakeSystem.start();
	const items = Array.from({ length: RUNS }, (_, i) => ({ id: `item-${i}` }));
	let listed = false;
	let answeredAt = 0;
	source.on('GET', '/items', () => {
		if (listed && !answeredAt) answeredAt = Date.now();
		return { body: listed ? items : [] };
	});
	const n8n = await N8nInstance.launch(
		`bench-scale-${topology}`,
		{ N8N_LOG_LEVEL: 'info' },
		services ? { services, workers: 2, concurrency: CONCURRENCY } : {},
	);
	try {
		const trigger = node('Poll', `${PACKAGE}.pollTrigger`, {
			op: 'http.request',
			with: JSON.stringify({ url: source.url('/items') }),
			id: 'id',
			dedupe: 'unique',
			interval: 5,
			intervalUnit: 'seconds',
			options: { timeoutSec: 600 },
		});
		const wait = node(
			'Wait 200 ms',
			'n8n-nodes-base.wait',
			{ amount: 0.2, unit: 'seconds' },
			{ typeVersion: 1.1, webhookId: crypto.randomUUID() },
		);
		const id = await n8n.importWorkflow(
			workflow(
				`bench scale ${topology}`,
				[trigger, wait, marker('Done')],
				[
					['Poll', 'Wait 200 ms'],
					['Wait 200 ms', 'Done'],
				],
			),
		);
		await n8n.publish(id);
		// The first poll (an empty list) has been answered: the next one lists the burst.
		await source.requestCount('/items', 1, 300_000);
		listed = true;
		// Without run data, once a second: the counting must cost the system under test little.
		const executions = await waitFor(
			`${RUNS} successful runs`,
			async () => {
				const all = await n8n.executionSummaries(id);
				return all.filter((e) => e.status === 'success').length >= RUNS ? all : undefined;
			},
			{ timeoutMs: 1_800_000, intervalMs: 1_000 },
		);
		const lastStopped = Math.max(
			...executions.map((execution) => Date.parse(execution.stoppedAt ?? '')),
		);
		if (executions.length !== RUNS)
			throw new Error(`expected ${RUNS} runs, got ${executions.length}`);
		const ms = lastStopped - answeredAt;
		const byWorker = n8n.workerOfExecutions();
		await n8n.unpublish(id);
		return {
			topology,
			runs: executions.length,
			ms,
			runsPerSecond: (RUNS * 1000) / ms,
			...(topology === 'queue' && {
				onWorkers: [1, 2].map((w) => executions.filter((e) => byWorker.get(e.id) === w).length),
			}),
		};
	} finally {
		await n8n.stop();
		await source.close();
	}
}

async function main(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	delete process.env.E2E_TOPOLOGY;
	const single = await measure('single');
	const dir = join(cacheDir, `bench-queue-services-${process.pid}`);
	const services = await startQueueServices(dir, { throwaway: true });
	let queue: Figures;
	try {
		queue = await measure('queue', services);
	} finally {
		stopQueueServices(dir);
		rmSync(dir, { recursive: true, force: true });
	}
	process.stdout.write(
		`Poll Trigger, ${RUNS} per-item runs from one poll, each waiting 200 ms; poll answered -> last run finished\n`,
	);
	const rows = [['topology', 'runs', 'seconds', 'runs/s', 'runs per worker']];
	for (const r of [single, queue])
		rows.push([
			r.topology === 'single' ? 'single process (SQLite)' : `queue: 2 workers x ${CONCURRENCY}`,
			String(r.runs),
			(r.ms / 1000).toFixed(1),
			r.runsPerSecond.toFixed(1),
			r.onWorkers?.join(' / ') ?? '-',
		]);
	for (const row of rows)
		process.stdout.write(
			`${row[0].padEnd(26)}${row
				.slice(1)
				.map((cell) => cell.padStart(16))
				.join('')}\n`,
		);
	process.stdout.write(
		`throughput ratio queue / single: ${(queue.runsPerSecond / single.runsPerSecond).toFixed(2)}x\n`,
	);
}

void main();
