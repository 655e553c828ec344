import type { ScheduleState } from '../../core/schedule';
import { FakeSystem } from '../harness/fakeSystem';
import { N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { redisCli, servicesFromEnv } from '../harness/queueServices';
import { node, PACKAGE, workflow } from './workflowBuilder';

/*
 * Queue mode only (E2E_TOPOLOGY=queue): a run whose end n8n's main never hears of. n8n 2.41's main
 * settles a queue run (and the trigger's done-promise with it) when Bull's `job.finished()`
 * resolves (workflow-runner.js `enqueueExecution`). With n8n's default queue retention
 * (N8N_EXECUTIONS_QUEUE_KEEP_LAST_COMPLETED=0) Bull removes the job as it completes, so
 * `finished()` can learn of it only from the `completed` pub/sub event; Bull's 5 s watchdog looks for
 * the job in the completed set, where it no longer is. Here the workflow's last node drops every
 * Redis pub/sub connection just before the worker completes the job: n8n's clients reconnect after
 * 1 s, and the event published meanwhile is lost. docs/queue-mode.md.
 */

const TRIGGER = 'Schedule';
const INTERVAL_MS = 10_000;

describe('queue mode: a run whose end the main never hears of', () => {
	let source: FakeSystem;
	/** The stack of the test running now (onStack). */
	let n8n: N8nInstance | undefined;

	beforeAll(async () => {
		source = await FakeSystem.start();
	});

	afterAll(async () => {
		await source?.close();
	});

	/**
	 * Publishes a Skip if Running schedule (10 s, Max Run Duration 1 minute) whose runs call the
	 * source; the second run's call drops Redis's pub/sub connections. Resolves with that run's key and
	 * window, and readers of the workflow's runs (their trigger items) and stored state.
	 */
	async function scheduleLosingOneRunEnd(path: string) {
		const { redisPort } = servicesFromEnv()!;
		let calls = 0;
		let lost: { runKey: string; declaredAt: number } | undefined;
		source.on('GET', path, ({ query }) => {
			if (++calls === 2) {
				redisCli(redisPort, 'CLIENT', 'KILL', 'TYPE', 'pubsub');
				lost = { runKey: query.runKey, declaredAt: Date.parse(query.declaredAt) };
			}
			return { body: { calls } };
		});
		const id = await n8n!.importWorkflow(
			workflow(
				`lost run end ${path}`,
				[
					node(TRIGGER, `${PACKAGE}.durableScheduleTrigger`, {
						scheduleType: 'interval',
						interval: 10,
						intervalUnit: 'seconds',
						overlap: 'skip-if-running',
						options: { maxRunMinutes: 1 },
					}),
					node(
						'Call',
						'n8n-nodes-base.httpRequest',
						{
							url: `={{ "${source.url(path)}?runKey=" + encodeURIComponent($json.runKey) + "&declaredAt=" + encodeURIComponent($json.declaredAt) }}`,
							options: {},
						},
						{ typeVersion: 4.2 },
					),
				],
				[[TRIGGER, 'Call']],
			),
		);
		await n8n!.publish(id);
		const runs = async () =>
			(await n8n!.executions(id))
				.filter((execution) => execution.status === 'success')
				.map((execution) => nodeOutput(execution, TRIGGER)[0] as { declaredAt: string });
		const lostRun = await waitFor('the run that drops the pub/sub connections', async () => lost);
		const state = async () => {
			const { staticData } = await n8n!.getWorkflow(id);
			return (staticData as Record<string, { schedule: ScheduleState }>)[`node:${TRIGGER}`]
				.schedule;
		};
		return { id, lost: lostRun, runs, state };
	}

	const startedAfter = (all: Array<{ declaredAt: string }>, time: number) =>
		all.filter((run) => Date.parse(run.declaredAt) > time);

	/** Launches a queue-mode stack for `body` and stops it after, whatever happened. */
	async function onStack(name: string, env: Record<string, string>, body: () => Promise<void>) {
		n8n = await N8nInstance.launch(name, env);
		try {
			expect(n8n.topology).toBe('queue');
			await body();
		} finally {
			await n8n.stop();
			n8n = undefined;
		}
	}

	test("n8n's default queue retention: the lost end holds the overlap slot until Max Run Duration frees it, recorded as released", async () => {
		await onStack('lost-run-end', {}, async () => {
			const { id, lost, runs, state } = await scheduleLosingOneRunEnd('/lost-default');

			// The next run starts only once Max Run Duration (1 minute) has freed the slot.
			const [next] = await waitFor(
				'a run after the lost one',
				async () => {
					const after = startedAfter(await runs(), lost.declaredAt);
					return after.length > 0 ? after : undefined;
				},
				{ timeoutMs: 150_000, intervalMs: 1_000 },
			);
			const { history } = await state();
			const releasedAt = history.findIndex(
				(r) => r.runKey === lost.runKey && r.outcome === 'released',
			);
			expect(releasedAt).toBeGreaterThan(-1);
			const skipped = history
				.slice(0, releasedAt)
				.filter((r) => r.outcome === 'skipped' && r.declaredAt > lost.declaredAt);
			// The windows of that minute were skipped: "a previous run is still active".
			expect(skipped.length).toBeGreaterThanOrEqual(60_000 / INTERVAL_MS - 2);
			for (const r of skipped) expect(r.reason).toContain('skip-if-running');
			expect(Date.parse(next.declaredAt) - lost.declaredAt).toBeGreaterThanOrEqual(60_000);
			const running = await n8n!.executions(id, { status: 'running' });
			console.log(
				`lost run end: ${skipped.length} windows skipped, then released; executions n8n lists as running: ${running.length}`,
			);
		});
	}, 400_000);

	test('N8N_EXECUTIONS_QUEUE_KEEP_LAST_COMPLETED=1000: Bull finds the ended job within 5 s, and the schedule goes on', async () => {
		const kept = {
			N8N_EXECUTIONS_QUEUE_KEEP_LAST_COMPLETED: '1000',
			N8N_EXECUTIONS_QUEUE_KEEP_LAST_FAILED: '1000',
		};
		await onStack('lost-run-end-kept', kept, async () => {
			const { lost, runs, state } = await scheduleLosingOneRunEnd('/lost-kept');
			const [next] = await waitFor('a run after the lost one', async () => {
				const after = startedAfter(await runs(), lost.declaredAt);
				return after.length > 0 ? after : undefined;
			});
			// At most the window due while Bull's watchdog looked (every 5 s) was skipped.
			expect(Date.parse(next.declaredAt) - lost.declaredAt).toBeLessThanOrEqual(2 * INTERVAL_MS);
			const { history } = await state();
			expect(history.filter((r) => r.outcome === 'released')).toEqual([]);
		});
	}, 400_000);
});
