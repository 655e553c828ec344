/**
 * Fire lateness of the Durable Schedule Trigger, side by side with n8n's built-in Schedule Trigger,
 * on one real n8n in the same run: both fire every 10 s (on :00, :10, ...) into the same one-node
 * workflow, and each fire's lateness is measured against its 10-second boundary.
 *   - trigger lateness: when the trigger acted. Ours: the run item's `actualAt - declaredAt`; the
 *     built-in: its output `timestamp` minus the boundary it belongs to.
 *   - run start lateness: the execution's `startedAt` minus the boundary, for both.
 * Needs the built package (npm run build); packs it like the e2e tests do.
 *   npx tsx bench/scheduleLateness.bench.ts        (BENCH_FIRES=20 for more fires; default 6)
 */
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { type Execution, N8nInstance, nodeOutput } from '../test/harness/n8nInstance';
import { marker, node, PACKAGE, workflow } from '../test/e2e/workflowBuilder';
import { percentile } from './stats';

const FIRES = Number(process.env.BENCH_FIRES ?? 6);
const INTERVAL = 10_000;

interface Sample {
	triggerMs: number;
	startMs: number;
}

function durableSample(execution: Execution): Sample {
	const item = nodeOutput(execution, 'Trigger')[0] as { declaredAt: string; latenessMs: number };
	return {
		triggerMs: item.latenessMs,
		startMs: Date.parse(execution.startedAt) - Date.parse(item.declaredAt),
	};
}

function builtInSample(execution: Execution): Sample {
	const fired = Date.parse(
		(nodeOutput(execution, 'Trigger')[0] as { timestamp: string }).timestamp,
	);
	// The boundary a fire belongs to: the timer can only be late, so the one at or before it.
	const boundary = Math.floor(fired / INTERVAL) * INTERVAL;
	return { triggerMs: fired - boundary, startMs: Date.parse(execution.startedAt) - boundary };
}

async function main(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	const n8n = await N8nInstance.launch('bench-schedule', { N8N_LOG_LEVEL: 'warn' });
	try {
		const durable = await n8n.importWorkflow(
			workflow(
				'bench durable',
				[
					node('Trigger', `${PACKAGE}.durableScheduleTrigger`, {
						scheduleType: 'interval',
						interval: 10,
						intervalUnit: 'seconds',
					}),
					marker('Done'),
				],
				[['Trigger', 'Done']],
			),
		);
		const builtIn = await n8n.importWorkflow(
			workflow(
				'bench built-in',
				[
					node(
						'Trigger',
						'n8n-nodes-base.scheduleTrigger',
						{ rule: { interval: [{ field: 'seconds', secondsInterval: 10 }] } },
						{ typeVersion: 1.2 },
					),
					marker('Done'),
				],
				[['Trigger', 'Done']],
			),
		);
		await n8n.publish(durable);
		await n8n.publish(builtIn);
		const done = (all: Execution[]) => all.filter((e) => e.status === 'success').length >= FIRES;
		const timeoutMs = (FIRES + 6) * INTERVAL;
		const [ours, theirs] = await Promise.all([
			n8n.waitForExecutions(durable, done, `${FIRES} durable fires`, timeoutMs),
			n8n.waitForExecutions(builtIn, done, `${FIRES} built-in fires`, timeoutMs),
		]);
		const samples = {
			durable: ours
				.filter((e) => e.status === 'success')
				.slice(0, FIRES)
				.map(durableSample),
			builtIn: theirs
				.filter((e) => e.status === 'success')
				.slice(0, FIRES)
				.map(builtInSample),
		};
		const rows = [['measure', 'trigger', 'fires', 'p50 ms', 'p99 ms']];
		const ratios: string[] = [];
		for (const measure of ['triggerMs', 'startMs'] as const) {
			const label = measure === 'triggerMs' ? 'trigger lateness' : 'run start lateness';
			const figures = Object.entries(samples).map(([name, list]) => {
				const values = list.map((s) => s[measure]);
				return {
					name,
					p50: percentile(values, 50),
					p99: percentile(values, 99),
					count: values.length,
				};
			});
			for (const f of figures)
				rows.push([label, f.name, String(f.count), String(f.p50), String(f.p99)]);
			const [d, b] = figures;
			const ratio = (x: number, y: number) =>
				y === 0 ? 'n/a (baseline 0 ms)' : `${(x / y).toFixed(2)}x`;
			ratios.push(
				`${label}: durable / built-in  p50 ${ratio(d.p50, b.p50)}  p99 ${ratio(d.p99, b.p99)}`,
			);
		}
		const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
		process.stdout.write(`Fire lateness on one n8n, every 10 s, ${FIRES} fires each\n`);
		for (const row of rows)
			process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c])).join('  ')}\n`);
		for (const line of ratios) process.stdout.write(`${line}\n`);
	} finally {
		await n8n.stop();
	}
}

main().catch((error: unknown) => {
	process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
	process.exit(1);
});
