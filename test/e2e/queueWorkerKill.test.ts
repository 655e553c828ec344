import { burstCrashStartAgain, lostAndRepeated } from '../harness/burstKill';
import { runWorkerKillChaos, type WorkerKillResult } from '../harness/chaos';
import { FakeSystem } from '../harness/fakeSystem';
import { type Execution, isFinal, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { redisCli, servicesFromEnv, startRedis, stopRedis } from '../harness/queueServices';
import { marker, node, PACKAGE, workflow } from './workflowBuilder';

/**
 * Queue mode only (E2E_TOPOLOGY=queue; the single-process run leaves this file out): a worker killed
 * with SIGKILL while it executes runs. Nothing the triggers started is lost or started again, and the
 * test reports what n8n did with the runs the worker held.
 */
describe('SIGKILL of a queue-mode worker during runs; Redis stopped or refusing during a burst', () => {
	let n8n: N8nInstance;
	const results: WorkerKillResult[] = [];
	let source: FakeSystem;

	beforeAll(async () => {
		// n8n's defaults find a dead worker's job after its 60 s lock and a 30 s stalled-job check
		// (`npm run chaos:queue` measures them); shorter here, so the test fits in CI. The main then
		// re-reads the execution for 30 s (not configurable) before it records the failure.
		n8n = await N8nInstance.launch('worker-kill', {
			N8N_EVENTBUS_RECOVERY_MODE: 'simple',
			QUEUE_WORKER_LOCK_DURATION: '15000',
			QUEUE_WORKER_LOCK_RENEW_TIME: '5000',
			QUEUE_WORKER_STALLED_INTERVAL: '5000',
		});
		expect(n8n.topology).toBe('queue');
		source = await FakeSystem.start();
	});

	afterAll(async () => {
		for (const r of results) {
			console.log(
				`${r.case}: expected ${r.expected}, lost ${r.lost}, repeated ${r.repeated}; the worker held ${r.killedRuns} run(s): ${r.killedRunOutcomes.join(' | ')}; ` +
					`n8n recorded their end ${r.settledAfterSec} s after the kill; ${r.notRerun} of them were not run again`,
			);
		}
		await n8n?.stop();
		await source?.close();
	});

	test.each(['poll', 'schedule'] as const)(
		'%s: lost = 0, repeated = 0; the killed runs end, failed or crashed, and are not run again',
		async (kind) => {
			const result = await runWorkerKillChaos(n8n, kind);
			results.push(result);
			expect(result).toMatchObject({ lost: 0, repeated: 0 });
			expect(result.killedRuns).toBeGreaterThan(0);
			// Each item or window the killed runs carried ran exactly once: n8n does not run them again.
			expect(result.notRerun).toBeGreaterThan(0);
			// n8n ends them either way: failed by Bull's stalled-job check, or recorded crashed by the
			// main when it learns the worker's job is gone first (both seen in CI runs).
			for (const outcome of result.killedRunOutcomes) expect(outcome).toMatch(/^(error|crashed): /);
		},
		600_000,
	);

	/**
	 * 150 runs in `npm test`: three times Recent Starts' 50 and a page, killed after 40 (CI's two cores
	 * run a queue stack beside two other lanes; 500 runs took past 15 minutes there, stop 32).
	 * `npm run test:burst` runs it with 500, killed after 100.
	 */
	// 100 in CI (twice Max Runs in Flight; issue 46: 150 took 287 s of the queue lane on a busy machine).
	const mainKill = process.env.E2E_BURST
		? { burst: 500, killAfter: 100 }
		: { burst: 100, killAfter: 30 };
	test(`the main SIGKILLed mid-burst of ${mainKill.burst} runs and started again: every item runs once (a crashed run started again as a user would), at most a handful of failed executions, at most one report of runs n8n could not start`, async () => {
		// n8n 2.41's race (docs/queue-mode.md): the restarted main's queue recovery can crash a run
		// created but not enqueued before the trigger's activation emits it again, and n8n refuses that
		// re-emit by its key. Such a run is a crashed run like any other: Recent Starts lists its item
		// to start again, and the user does (Start Again; traced by its deduplication key).
		const outcome = await burstCrashStartAgain(n8n, source, {
			path: '/main-kill',
			history: 1_000,
			...mainKill,
			// Each wait below jest's guard, so that a shortfall shows as the items that did not run.
			settleMs: 400_000,
			log: (line) => console.log(line),
		});
		const { before, after, trace } = outcome;
		expect(trace.untraceable).toEqual([]);
		expect(lostAndRepeated(outcome.items, after)).toEqual({ lost: 0, repeated: 0 });
		expect(before.crashed.length + before.failed.length).toBeLessThanOrEqual(5);
		const messages = await Promise.all(
			after.failed.map(async (id) => (await n8n.execution(id)).data?.resultData.error?.message),
		);
		const reports = messages.filter((message) => /could not start/.test(message ?? ''));
		expect(reports.length).toBeLessThanOrEqual(1);
		await n8n.unpublish(outcome.workflowId);
	}, 900_000);

	/**
	 * A Poll Trigger whose source lists nothing until `burst()` lists `count` items, at which poll
	 * `onBurst` runs before the trigger gets the answer (so every enqueue of the burst meets it).
	 * Resolves with the workflow's id and a function that says which items ran, and how often.
	 */
	async function burstWorkflow(path: string, count: number, onBurst: () => void) {
		let listed: Array<{ id: string }> = [];
		let armed = false;
		source.on('GET', path, () => {
			if (armed) {
				armed = false;
				onBurst();
			}
			return { body: listed };
		});
		const id = await n8n.importWorkflow(
			workflow(
				`redis ${path}`,
				[
					node(`Poll`, `${PACKAGE}.pollTrigger`, {
						op: 'http.request',
						with: JSON.stringify({ url: source.url(path) }),
						interval: 5,
						intervalUnit: 'seconds',
						id: 'id',
						dedupe: 'unique',
					}),
					marker('Handled'),
				],
				[['Poll', 'Handled']],
			),
		);
		await n8n.publish(id);
		await source.requestCount(path, source.requests(path).length + 1);
		const items = Array.from({ length: count }, (_, i) => `${path.slice(1)}-${i}`);
		const burst = () => {
			listed = items.map((item) => ({ id: item }));
			armed = true;
		};
		/** Item → how many successful runs handled it. */
		const handled = (executions: Execution[]) => {
			const times = new Map<string, number>();
			for (const execution of executions.filter((e) => e.status === 'success'))
				for (const { id: item } of nodeOutput(execution, 'Handled'))
					times.set(String(item), (times.get(String(item)) ?? 0) + 1);
			return times;
		};
		return { id, items, burst, handled };
	}

	test('Redis stopped during a burst (n8n 2.41: its Redis calls wait; restarted under QUEUE_BULL_REDIS_TIMEOUT_THRESHOLD): every item runs once', async () => {
		const services = servicesFromEnv()!;
		let redisStopped = () => {};
		const stopped = new Promise<void>((resolve) => (redisStopped = resolve));
		const { id, items, burst, handled } = await burstWorkflow('/redis-stop', 10, () => {
			stopRedis(services.dir);
			redisStopped();
		});
		const logBefore = n8n.log().length;
		burst();
		await stopped;
		// The trigger emitted the whole burst while Redis was down (n8n 2.41.1 then creates no
		// execution until Redis is back: "Execution added" is logged after the reconnect). Redis is
		// started again within 6 s, under n8n's 10 s threshold after which it would exit.
		const emits = () =>
			n8n
				.log()
				.slice(logBefore)
				.split('\n')
				.filter((line) => line.includes('Received trigger for workflow "redis /redis-stop"'));
		await waitFor(
			'the burst emitted while Redis is down',
			async () => (emits().length >= 10 ? true : undefined),
			{ timeoutMs: 6_000, intervalMs: 100 },
		).finally(async () => await startRedis(services.dir, services.redisPort));
		const ran = await n8n.waitForExecutions(
			id,
			(all) => handled(all).size === 10 && all.every(isFinal),
			'every item of the burst run',
		);
		await source.requestCount('/redis-stop', source.requests('/redis-stop').length + 2);
		const after = await n8n.executions(id);
		expect(after).toHaveLength(ran.length);
		expect(Object.fromEntries(handled(after))).toEqual(
			Object.fromEntries(items.map((item) => [item, 1])),
		);
		await n8n.unpublish(id);
	});

	test("Redis refusing the burst's jobs (OOM under maxmemory), then accepting again: n8n saves each refused run failed under its key; every item runs once, under a new key", async () => {
		const { redisPort } = servicesFromEnv()!;
		const { id, items, burst, handled } = await burstWorkflow('/redis-refuse', 6, () =>
			redisCli(redisPort, 'CONFIG', 'SET', 'maxmemory', '1'),
		);
		burst();
		// Read by id: that answer has the deduplication key (the trigger's own failure notices,
		// also failed executions, have none).
		const keys = new Map<string, string | null | undefined>();
		const keyOf = async (e: Execution) => {
			if (!keys.has(e.id)) keys.set(e.id, (await n8n.execution(e.id)).deduplicationKey);
			return keys.get(e.id);
		};
		const refusedKeys = new Set<string>();
		try {
			await waitFor(
				'six refused runs saved failed under their keys',
				async () => {
					for (const e of (await n8n.executions(id)).filter((e) => e.status === 'error')) {
						const key = await keyOf(e);
						if (key) refusedKeys.add(key);
					}
					return refusedKeys.size >= 6 ? true : undefined;
				},
				{ timeoutMs: 90_000, intervalMs: 1_000 },
			);
		} finally {
			redisCli(redisPort, 'CONFIG', 'SET', 'maxmemory', '0');
		}
		const ran = await n8n.waitForExecutions(
			id,
			(all) => handled(all).size === 6 && all.every(isFinal),
			'every item run after Redis accepts again',
		);
		await source.requestCount('/redis-refuse', source.requests('/redis-refuse').length + 2);
		const after = await n8n.executions(id);
		expect(after).toHaveLength(ran.length);
		expect(Object.fromEntries(handled(after))).toEqual(
			Object.fromEntries(items.map((item) => [item, 1])),
		);
		for (const execution of after.filter((e) => e.status === 'success'))
			expect(refusedKeys.has(String(await keyOf(execution)))).toBe(false);
		await n8n.unpublish(id);
	});
});
