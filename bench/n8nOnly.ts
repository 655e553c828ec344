/** Running an n8n-only workflow (Schedule Trigger first) once in a real n8n, for the benches beside it. */
import { writeFileSync } from 'node:fs';

import { node } from '../test/e2e/workflowBuilder';
import { type Execution, N8nInstance } from '../test/harness/n8nInstance';
import { waitFor } from '../test/harness/net';
import { peakRss } from './stats';

/** The first node of a workflow runScheduledOnce runs: n8n's Schedule Trigger, every 10 s. */
export const scheduleTriggerNode = () =>
	node(
		'Schedule Trigger',
		'n8n-nodes-base.scheduleTrigger',
		{ rule: { interval: [{ field: 'seconds', secondsInterval: 10 }] } },
		{ typeVersion: 1.2 },
	);

export interface ScheduledRun {
	execution: Execution;
	peakRssBytes: number;
}

/**
 * Publishes the workflow, lets its Schedule Trigger start one run, unpublishes it as soon as that run
 * exists (so exactly one runs), and waits up to `timeoutMs` for that run's end; n8n's peak RSS meanwhile.
 */
export async function runScheduledOnce(
	n8n: N8nInstance,
	workflowId: string,
	timeoutMs: number,
): Promise<ScheduledRun> {
	const pid = n8n.pid as number;
	// The peak from here on (VmHWM reset).
	writeFileSync(`/proc/${pid}/clear_refs`, '5');
	// Runs of earlier calls are not this one.
	const earlier = new Set((await n8n.executionSummaries(workflowId)).map((e) => e.id));
	const isNew = (e: Execution | undefined) => (e && !earlier.has(e.id) ? e : undefined);
	await n8n.publish(workflowId);
	// n8n's execution list leaves out running ones unless asked for them.
	const first = await waitFor(
		'the Schedule Trigger to start a run',
		async () =>
			isNew((await n8n.executions(workflowId, { status: 'running' }))[0]) ??
			isNew((await n8n.executions(workflowId, { status: 'new' }))[0]) ??
			(await n8n.executionSummaries(workflowId)).find((e) => !earlier.has(e.id)),
		{ timeoutMs: 120_000, intervalMs: 100 },
	);
	await n8n.unpublish(workflowId);
	let peak = peakRss(pid) ?? 0;
	const ended = await waitFor(
		'the run to end',
		async () => {
			peak = Math.max(peak, peakRss(pid) ?? 0);
			const [execution] = (await n8n.executionSummaries(workflowId)).filter(
				(e) => e.id === first.id,
			);
			return execution && !['running', 'new'].includes(execution.status) ? execution : undefined;
		},
		{ timeoutMs, intervalMs: 1_000 },
	);
	const runs = (await n8n.executionSummaries(workflowId)).filter((e) => !earlier.has(e.id));
	if (runs.length !== 1) throw new Error(`expected one run, found ${runs.length}`);
	return { execution: ended, peakRssBytes: peak };
}

/** A run's duration as n8n records it (startedAt → stoppedAt). */
export const runDurationMs = (execution: Execution): number =>
	Date.parse(execution.stoppedAt ?? '') - Date.parse(execution.startedAt);

/** A table, its first column left-aligned, the others right-aligned. */
export function printTable(rows: string[][]): void {
	const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
	for (const row of rows)
		process.stdout.write(
			`${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ')}\n`,
		);
}
