import { randomUUID } from 'node:crypto';

import type { FireRecord, ScheduleState } from '../../core/schedule';
import { type Execution, N8nInstance, nodeOutput, type WorkflowJson } from '../harness/n8nInstance';
import { FakeSystem } from '../harness/fakeSystem';
import { waitFor } from '../harness/net';
import { isN8n1 } from '../harness/paths';
import { marker, node, type NodeJson, PACKAGE, workflow } from './workflowBuilder';

/*
 * The Durable Schedule Trigger in a real n8n, on 10-second windows (the shortest interval the node
 * allows). One instance serves the whole file; workflows that need time before their test (the
 * catch-up ones need runs before the restart) are published up front, so their waiting overlaps.
 */

const INTERVAL = 10_000;
const TRIGGER = 'Schedule';
/** A run takes 24 s (Wait nodes under 65 s sleep in-process, so the run stays "running"): longer than two windows, shorter than three, and its end never lands near a window boundary. */
const SLOW_SECONDS = 24;

interface FireJson {
	runKey: string;
	kind: 'scheduled' | 'catch-up' | 'coalesced';
	outcome: string;
	declaredAt: string;
	actualAt: string;
	latenessMs: number;
	reprocessing: boolean;
	validTime: string;
	systemTime: string;
	coalesced?: {
		count: number;
		firstDeclaredAt: string;
		lastDeclaredAt: string;
		windows: string[];
		windowsTruncated: boolean;
	};
}
type Fire = FireJson & { execution: Execution; declared: number };

const iso = (time: number) => new Date(time).toISOString();
/** The window boundaries in (from, to), oldest first. */
const windowsBetween = (from: number, to: number) => {
	const windows: number[] = [];
	for (let w = Math.floor(from / INTERVAL) * INTERVAL + INTERVAL; w < to; w += INTERVAL)
		windows.push(w);
	return windows;
};

function scheduleNode(parameters: Record<string, unknown>): NodeJson {
	return node(TRIGGER, `${PACKAGE}.durableScheduleTrigger`, {
		scheduleType: 'interval',
		interval: 10,
		intervalUnit: 'seconds',
		...parameters,
	});
}

/** Trigger → Done, or Trigger → Wait (24 s unless told) → Done. */
function scheduleWorkflow(
	name: string,
	trigger: NodeJson,
	{ slow = false, waitSeconds = SLOW_SECONDS } = {},
): WorkflowJson {
	if (!slow) return workflow(name, [trigger, marker('Done')], [[TRIGGER, 'Done']]);
	const wait = node(
		'Slow',
		'n8n-nodes-base.wait',
		{ amount: waitSeconds, unit: 'seconds' },
		{ typeVersion: 1.1, webhookId: randomUUID() },
	);
	return workflow(
		name,
		[trigger, wait, marker('Done')],
		[
			[TRIGGER, 'Slow'],
			['Slow', 'Done'],
		],
	);
}

describe('Durable Schedule Trigger in a real n8n', () => {
	let n8n: N8nInstance;
	const ids: Record<string, string> = {};
	const definitions: Record<string, WorkflowJson> = {};
	const catchUpNames = ['skip', 'coalesce', 'run-all', 'run-all-limited'];
	const overlapNames = ['skip-if-running', 'queue', 'allow-parallel'];

	beforeAll(async () => {
		n8n = await N8nInstance.launch('durable-schedule');
		// Catch-up: a 2 s late grace, so every window passed during the downtime counts as missed
		// (the default of 60 s would let the newest ones fire as merely late).
		const lateGrace = { options: { lateGrace: 2 } };
		// Skip and coalesce also report the windows they missed (Report Missed Windows).
		const reported = { options: { lateGrace: 2, reportMissed: true } };
		definitions.skip = scheduleWorkflow(
			'catch-up skip',
			scheduleNode({ scheduleType: 'cron', cron: '*/10 * * * * *', catchUp: 'skip', ...reported }),
		);
		definitions.coalesce = scheduleWorkflow(
			'catch-up coalesce',
			scheduleNode({ catchUp: 'coalesce', ...reported }),
		);
		definitions['run-all'] = scheduleWorkflow(
			'catch-up run-all',
			scheduleNode({ catchUp: 'run-all', runAllLimit: 10, ...lateGrace }),
		);
		definitions['run-all-limited'] = scheduleWorkflow(
			'catch-up run-all limit 2',
			scheduleNode({ catchUp: 'run-all', runAllLimit: 2, ...lateGrace }),
		);
		definitions['skip-if-running'] = scheduleWorkflow(
			'overlap skip',
			scheduleNode({ overlap: 'skip-if-running' }),
			{ slow: true },
		);
		definitions.queue = scheduleWorkflow(
			'overlap queue',
			scheduleNode({ overlap: 'queue', queueLimit: 1 }),
			{ slow: true },
		);
		definitions['allow-parallel'] = scheduleWorkflow(
			'overlap parallel',
			scheduleNode({ overlap: 'allow-parallel', maxParallel: 2 }),
			{ slow: true },
		);
		definitions.republish = scheduleWorkflow(
			'republish',
			scheduleNode({ catchUp: 'run-all', ...lateGrace }),
		);
		// Late Grace 120 s: the whole restart (the queue-mode stack too) stays inside it.
		definitions.quickRestart = scheduleWorkflow(
			'quick restart',
			scheduleNode({ overlap: 'skip-if-running', options: { lateGrace: 120 } }),
			{ slow: true, waitSeconds: 8 },
		);
		for (const [name, definition] of Object.entries(definitions))
			ids[name] = await n8n.importWorkflow(definition);
		for (const name of [...catchUpNames, 'republish']) await n8n.publish(ids[name]);
	});

	afterAll(async () => {
		await n8n?.stop();
	});

	/** The fire items of the workflow's finished runs, by declared window. */
	async function firesOf(name: string): Promise<Fire[]> {
		return fires(await n8n.executions(ids[name]));
	}

	function fires(executions: Execution[]): Fire[] {
		return (
			executions
				.filter((execution) => execution.status === 'success')
				// Started by this trigger (a workflow may have a Poll Trigger too).
				.filter((execution) => nodeOutput(execution, TRIGGER).length > 0)
				.map((execution) => {
					const json = nodeOutput(execution, TRIGGER)[0] as unknown as FireJson;
					return { ...json, execution, declared: Date.parse(json.declaredAt) };
				})
				.sort((a, b) => a.declared - b.declared)
		);
	}

	async function stateOf(name: string): Promise<ScheduleState> {
		const { staticData } = await n8n.getWorkflow(ids[name]);
		return (staticData as Record<string, { schedule: ScheduleState }>)[`node:${TRIGGER}`].schedule;
	}

	async function firesWhen(
		name: string,
		done: (fires: Fire[]) => boolean,
		description: string,
		timeoutMs = 120_000,
	): Promise<Fire[]> {
		try {
			return fires(
				await n8n.waitForExecutions(
					ids[name],
					(executions) => done(fires(executions)),
					`${name}: ${description}`,
					timeoutMs,
				),
			);
		} catch (error) {
			// What n8n and the trigger last stored say why no run came.
			throw new Error(`${(error as Error).message}\n${await evidence(name)}`);
		}
	}

	/** What n8n and the trigger's stored state hold for a workflow, for a failing assertion's message. */
	async function evidence(name: string): Promise<string> {
		const executions = (await n8n.executions(ids[name])).map((execution) => {
			const fire = nodeOutput(execution, TRIGGER)[0] as unknown as FireJson | undefined;
			return [execution.id, execution.status, execution.startedAt, fire?.kind, fire?.declaredAt];
		});
		const state = await stateOf(name).catch(() => undefined);
		return `executions: ${JSON.stringify(executions)}\nstored state: ${JSON.stringify(state)}`;
	}

	/** firesWhen for a workflow id made by the test itself. */
	async function firesWhenOf(id: string, done: (fires: Fire[]) => boolean): Promise<Fire[]> {
		return fires(
			await n8n.waitForExecutions(id, (executions) => done(fires(executions)), `workflow ${id}`),
		);
	}
	const observations: Record<string, unknown> = {};

	/** Waiting for wall-clock time to pass a computed instant (a window boundary), not for n8n. */
	async function clockPasses(time: number): Promise<void> {
		await waitFor(
			`the clock to pass ${iso(time)}`,
			async () => (Date.now() >= time ? true : undefined),
			{ timeoutMs: time - Date.now() + 5_000, intervalMs: 100 },
		);
	}

	/**
	 * Waits until none of these workflows has a running execution. Only theirs: a run an earlier test's
	 * SIGKILL cut short before n8n's event log had its start stays `running` in the database for good
	 * (n8n 2.41's startup recovery works from the event log), as a local npm test showed.
	 */
	async function noRunningExecutions(...workflowIds: string[]): Promise<void> {
		await waitFor(
			`running executions of ${workflowIds.join(', ')} to end`,
			async () => {
				const running = await n8n.api<{ data: Array<{ workflowId: string }> }>(
					'GET',
					'/executions?status=running&limit=100',
				);
				return running.data.some((e) => workflowIds.includes(e.workflowId)) ? undefined : true;
			},
			{ timeoutMs: 60_000, intervalMs: 500 },
		);
	}

	/** The history entries recorded for windows from `from` on, as [outcome, declared time]. */
	function historyFrom(state: ScheduleState, from: number): Array<[FireRecord['outcome'], string]> {
		return state.history
			.filter((record) => record.declaredAt >= from)
			.map((record) => [record.outcome, iso(record.declaredAt)]);
	}

	/**
	 * What became of each of `count` windows from `from`, window by window (each window's records in
	 * the order written). Records of different windows decided within moments of each other (a run's
	 * end reported while the next window is decided) may be written in either order on a busy machine.
	 */
	function decisionsByWindow(
		state: ScheduleState,
		from: number,
		count: number,
	): Array<[FireRecord['outcome'], string]> {
		return historyFrom(state, from)
			.filter(([, at]) => Date.parse(at) < from + count * INTERVAL)
			.sort(([, a], [, b]) => Date.parse(a) - Date.parse(b));
	}

	/**
	 * The outcomes recorded for each of `count` windows from `from`, window by window, e.g.
	 * [['fired'], ['skipped'], ['queued', 'fired']].
	 */
	function outcomesByWindow(state: ScheduleState, from: number, count: number): string[][] {
		const windows = Array.from({ length: count }, () => [] as string[]);
		for (const [outcome, at] of decisionsByWindow(state, from, count))
			windows[Math.round((Date.parse(at) - from) / INTERVAL)].push(outcome);
		return windows;
	}

	/** How many windows after `from` the fire `fire` was declared for. */
	const windowsAfter = (fire: Fire, from: number) => Math.round((fire.declared - from) / INTERVAL);

	function expectNoWindowTwice(all: Fire[]) {
		const windows = all.map((fire) => fire.declaredAt);
		expect(windows).toEqual([...new Set(windows)]);
	}

	test('a workflow slower than the interval: skip-if-running skips, queue runs afterwards, allow-parallel keeps to 2', async () => {
		for (const name of overlapNames) await n8n.publish(ids[name]);
		// Each run takes 24 s. Counting from a workflow's first window W0, W1 and W2 come while W0's run
		// is going; W3 (30 s) comes after it ended, or, when n8n reports its end more than 6 s late (a
		// busy machine, queue mode: seen in a local CI run), while it still counts as going. So the
		// window after the skipped ones is W3 or later, and the decisions are:
		// skip-if-running: W0 fires; W1, W2 (and any window before the end was reported) skipped; then
		//   the next window fires.
		// queue (limit 1): W0 fires; W1 queued; W2 skipped (queue full); W1 fires once W0 ended; the
		//   windows while W1 is queued are skipped, the next one is queued and fires after W1 ended.
		// allow-parallel (max 2): W0, W1 fire; W2 skipped (and any window before W0's end was
		//   reported); then the next window fires.
		const [skipFires, queueFires, parallelFires] = await Promise.all([
			firesWhen('skip-if-running', (f) => f.length >= 2, '2 finished runs'),
			firesWhen('queue', (f) => f.length >= 2, '2 finished runs'),
			firesWhen('allow-parallel', (f) => f.length >= 3, '3 finished runs'),
		]);
		for (const name of overlapNames) await n8n.unpublish(ids[name]);

		const w = (fires: Fire[], n: number) => iso(fires[0].declared + n * INTERVAL);
		const skipped = (n: number) => Array.from({ length: n }, () => ['skipped']);
		// skip-if-running
		const skipFrom = skipFires[0].declared;
		const skipNext = windowsAfter(skipFires[1], skipFrom);
		expect(skipNext).toBeGreaterThanOrEqual(3);
		expect(Date.parse(skipFires[1].execution.startedAt)).toBeGreaterThanOrEqual(
			Date.parse(skipFires[0].execution.stoppedAt ?? ''),
		);
		const skipState = await stateOf('skip-if-running');
		expect(outcomesByWindow(skipState, skipFrom, skipNext + 1)).toEqual([
			['fired'],
			...skipped(skipNext - 1),
			['fired'],
		]);
		expect(skipState.history.find((r) => r.outcome === 'skipped')?.reason).toContain(
			'skip-if-running',
		);

		// queue: the queued window runs after the run it waited for, late by the wait, and is not reprocessing.
		expect(queueFires.slice(0, 2).map((f) => [f.declaredAt, f.kind, f.reprocessing])).toEqual([
			[w(queueFires, 0), 'scheduled', false],
			[w(queueFires, 1), 'scheduled', false],
		]);
		expect(Date.parse(queueFires[1].execution.startedAt)).toBeGreaterThanOrEqual(
			Date.parse(queueFires[0].execution.stoppedAt ?? ''),
		);
		expect(queueFires[1].latenessMs).toBeGreaterThan(SLOW_SECONDS * 1000 - INTERVAL);
		// Until a second queued window has fired (W3 or later; at most W7 within the wait).
		const queueFrom = queueFires[0].declared;
		const queueState = await waitFor(
			'the queue workflow to fire a second queued window',
			async () => {
				const state = await stateOf('queue');
				const windows = outcomesByWindow(state, queueFrom, 8);
				return windows.slice(2).some((outcomes) => outcomes.join() === 'queued,fired')
					? state
					: undefined;
			},
		);
		const queueWindows = outcomesByWindow(queueState, queueFrom, 8);
		const queueNext = queueWindows.findIndex((outcomes, n) => n >= 2 && outcomes[0] !== 'skipped');
		expect(queueNext).toBeGreaterThanOrEqual(3);
		expect(queueWindows.slice(0, queueNext + 1)).toEqual([
			['fired'],
			['queued', 'fired'],
			...skipped(queueNext - 2),
			['queued', 'fired'],
		]);

		// allow-parallel: never more than 2 runs at once, and 2 did run at once.
		const parallelFrom = parallelFires[0].declared;
		const parallelNext = windowsAfter(parallelFires[2], parallelFrom);
		expect(parallelFires.slice(0, 2).map((f) => f.declaredAt)).toEqual([
			w(parallelFires, 0),
			w(parallelFires, 1),
		]);
		expect(parallelNext).toBeGreaterThanOrEqual(3);
		expect(
			outcomesByWindow(await stateOf('allow-parallel'), parallelFrom, parallelNext + 1),
		).toEqual([['fired'], ['fired'], ...skipped(parallelNext - 2), ['fired']]);
		const intervals = parallelFires.map((f) => [
			Date.parse(f.execution.startedAt),
			Date.parse(f.execution.stoppedAt ?? ''),
		]);
		const concurrency = intervals.map(
			([start]) => intervals.filter(([s, e]) => s <= start && start < e).length,
		);
		expect(Math.max(...concurrency)).toBe(2);

		if (n8n.topology === 'queue') {
			// The runs executed on the workers, and both workers ran some: the main only started them.
			const ranOn = n8n.workerOfExecutions();
			const overlapRuns = [...skipFires, ...queueFires, ...parallelFires].map(
				(fire) => fire.execution.id,
			);
			expect(overlapRuns.filter((id) => !ranOn.has(id))).toEqual([]);
			expect(new Set(overlapRuns.map((id) => ranOn.get(id))).size).toBe(2);
		}
	}, 480_000);

	test('re-publishing never runs a window twice, even from stale stored state', async () => {
		const name = 'republish';
		await firesWhen(name, (f) => f.length >= 2, '2 runs');

		// 1. A changed trigger node, saved just before a window boundary: n8n closes the trigger and
		//    starts it again from the static data in its database.
		const boundary = Math.ceil(Date.now() / INTERVAL) * INTERVAL + INTERVAL;
		await clockPasses(boundary - 200);
		const changed = structuredClone(definitions[name]);
		(changed.nodes[0] as NodeJson).parameters.options = { lateGrace: 2, historyLimit: 99 };
		await n8n.api('PUT', `/workflows/${ids[name]}`, {
			name: changed.name,
			nodes: changed.nodes,
			connections: changed.connections,
			settings: changed.settings,
		});
		await firesWhen(
			name,
			(f) => f.some((fire) => fire.declared >= boundary + INTERVAL),
			'a run after the re-publish',
		);

		// 2. Unpublish and publish again at once.
		await n8n.unpublish(ids[name]);
		await n8n.publish(ids[name]);
		const republishedAt = Date.now();
		await firesWhen(
			name,
			(f) => f.some((fire) => fire.declared > republishedAt),
			'a run after unpublish + publish',
		);

		// 3. Stored state rolled back three windows, as after a crash between a run and its save, or
		//    a second activation reading old state: run-all plans those windows again, and n8n's
		//    deduplication key refuses them.
		await n8n.unpublish(ids[name]);
		await noRunningExecutions(ids[name]);
		const { staticData } = await n8n.getWorkflow(ids[name]);
		const nodeData = (staticData as Record<string, { schedule: ScheduleState }>)[`node:${TRIGGER}`];
		const rolledBack = windowsBetween(
			nodeData.schedule.lastDeclaredFire! - 3 * INTERVAL,
			nodeData.schedule.lastDeclaredFire! + 1,
		);
		expect(rolledBack).toHaveLength(3);
		const stale = {
			...(staticData as object),
			[`node:${TRIGGER}`]: {
				schedule: {
					...nodeData.schedule,
					lastDeclaredFire: nodeData.schedule.lastDeclaredFire! - 3 * INTERVAL,
					// A write count ahead of this process's: stale state it cannot tell from a newer one (as
					// after a restart), so the deduplication keys are what refuses the windows again.
					seq: (nodeData.schedule.seq ?? 0) + 1_000,
				},
			},
		};
		await n8n.api('PUT', `/workflows/${ids[name]}`, {
			name: changed.name,
			nodes: changed.nodes,
			connections: changed.connections,
			settings: changed.settings,
			staticData: stale,
		});
		const logBefore = n8n.log().length;
		await n8n.publish(ids[name]);
		const reactivatedAt = Date.now();
		const all = await firesWhen(
			name,
			(f) => f.some((fire) => fire.declared > reactivatedAt),
			'a run after the stale activation',
		);
		// Each rolled-back window was started again (as catch-up, or as a normal fire if it was still
		// within the late grace) and refused by n8n as a duplicate; a window whose run the stale state
		// still held in its outbox is not planned again: the outbox emits it again, and n8n refuses it.
		const inStaleOutbox = new Set(
			(nodeData.schedule.outbox ?? []).map((entry) => entry.run.declaredAt),
		);
		await waitFor('the rolled-back windows to be replanned', async () => {
			const state = await stateOf(name);
			const replanned = (window: number) =>
				state.history.some(
					(r) =>
						r.declaredAt === window &&
						['caught_up', 'fired'].includes(r.outcome) &&
						r.actualAt! > reactivatedAt - 1000,
				);
			return rolledBack.filter((window) => !inStaleOutbox.has(window)).every(replanned)
				? true
				: undefined;
		});
		const scheduleId = all[0].runKey.split('@')[0];
		const refusalsOf = (window: number) =>
			n8n
				.log()
				.slice(logBefore)
				.split('\n')
				.filter(
					(line) =>
						line.includes('Scheduled execution skipped: duplicate deduplication key') &&
						line.includes(`"deduplicationKey":"dst:${scheduleId}@${iso(window)}"`),
				);
		// n8n refuses a duplicate after a database read, so a refusal can be logged after later runs
		// were created: wait for each one.
		await waitFor('n8n to refuse every rolled-back window', async () =>
			rolledBack.every((window) => refusalsOf(window).length > 0) ? true : undefined,
		);
		// Once every run has settled, the trigger stores its settlements with an empty emit under the key
		// of the run settled last, which n8n refuses too (nodes/shared/emitRuns.ts): one more refusal.
		for (const window of rolledBack) expect([1, 2]).toContain(refusalsOf(window).length);

		expectNoWindowTwice(all);
		// run-all caught up the windows passed while unpublished: every window from the first run on ran
		// exactly once, but a window Skip if Running skipped, as the history records (on a busy machine a
		// run can outlast the 10 s interval: a CI run of 2026-12-05 beside other work).
		const skipped = new Set(
			(await stateOf(name)).history.filter((r) => r.outcome === 'skipped').map((r) => r.declaredAt),
		);
		const newest = all.at(-1)!.declared;
		expect(all.map((f) => f.declaredAt)).toEqual(
			windowsBetween(all[0].declared - 1, newest + 1)
				.filter((window) => !skipped.has(window))
				.map(iso),
		);
		for (const window of rolledBack)
			expect(all.filter((f) => f.declared === window)).toHaveLength(1);
		await n8n.unpublish(ids[name]);
	}, 480_000);

	test('after n8n is down across three windows, skip, coalesce and run-all each run exactly the expected windows', async () => {
		const before = await Promise.all(
			catchUpNames.map((name) =>
				firesWhen(name, (f) => f.length >= 2, '2 runs before the restart'),
			),
		);
		await noRunningExecutions(...catchUpNames.map((name) => ids[name]));
		// The executions before the stop (a failed execution a trigger saves has no start time).
		const executionsBefore = new Set(
			(
				await Promise.all(catchUpNames.map(async (name) => await n8n.executionSummaries(ids[name])))
			).flatMap((executions) => executions.map((execution) => execution.id)),
		);
		await n8n.stop();
		const stoppedAt = Date.now();
		// Down until three whole windows after the stop have passed, plus the 2 s late grace.
		await clockPasses(Math.ceil(stoppedAt / INTERVAL) * INTERVAL + 2 * INTERVAL + 2_500);
		// Backfills run once n8n is back: after the start began (in queue mode the main fires its
		// catch-up as soon as it is up, while the workers are still starting).
		const restartedAt = Date.now();
		await n8n.start();

		const after = await Promise.all(
			catchUpNames.map(async (name) => {
				const fires = await firesWhen(
					name,
					(f) => f.some((fire) => fire.kind === 'scheduled' && fire.declared > stoppedAt),
					'a scheduled run after the restart',
				);
				// A window within Late Grace when the activation decides is started first, as a scheduled
				// fire, and the catch-up runs wait for its slot (core/schedule/engine.ts processDue): they
				// may still be queued or going when that run has ended. The stored state holds them (queue
				// or outbox) until they have ended (on n8n 1.x until they exist, written with the next
				// emit, which under skip-if-running comes after they ended).
				await waitFor(
					`${name}: the catch-up runs to end (none in the stored queue or outbox)`,
					async () => {
						const { queued, outbox } = await stateOf(name);
						return queued.length === 0 && outbox.every(({ run }) => run.kind === 'scheduled')
							? true
							: undefined;
					},
					{ timeoutMs: 120_000, intervalMs: 500 },
				).catch(async (error: Error) => {
					throw new Error(`${error.message}\n${await evidence(name)}`);
				});
				return fires;
			}),
		);
		const expectCatchUp = async (name: string, i: number) => {
			let all = await firesOf(name);
			if (isN8n1) {
				// n8n 1.x has no deduplication keys: the last window started before the stop was still
				// unsettled in the stored state, so the activation started it once more (docs/n8n-1.123.md).
				const windows = all.map((fire) => fire.declared);
				const repeated = windows.filter((window, index) => windows.indexOf(window) !== index);
				expect(repeated.length).toBeLessThanOrEqual(1);
				for (const window of repeated)
					expect(window).toBe(
						Math.max(
							...all.filter((f) => Date.parse(f.actualAt) < stoppedAt).map((f) => f.declared),
						),
					);
				all = all.filter((fire, index) => windows.indexOf(fire.declared) === index);
			}
			expectNoWindowTwice(all);
			const lastBefore = Math.max(
				...all.filter((f) => Date.parse(f.actualAt) < stoppedAt).map((f) => f.declared),
			);
			expect(lastBefore).toBeGreaterThanOrEqual(before[i].at(-1)!.declared);
			const history = (await stateOf(name)).history;
			// A window that passed within the late grace before the restart finished is a late normal
			// window, not a missed one: it fires, or is skipped while the catch-up runs hold the slot.
			const lateSkipped = history
				.filter((r) => r.outcome === 'skipped' && r.declaredAt > stoppedAt)
				.map((r) => r.declaredAt);
			const firstAfter = Math.min(
				...after[i]
					.filter((f) => f.kind === 'scheduled' && f.declared > stoppedAt)
					.map((f) => f.declared),
				...lateSkipped,
			);
			const missed = windowsBetween(lastBefore, firstAfter);
			expect(missed.length).toBeGreaterThanOrEqual(3);
			// The restart's catch-up runs: before the stop, on a busy machine, a window that fired later
			// than Late Grace is a catch-up run of its own (a CI run of 2026-12-05 beside other work).
			const backfills = all.filter((f) => f.reprocessing && Date.parse(f.systemTime) >= stoppedAt);
			for (const fire of backfills) {
				expect(fire.validTime).toBe(fire.declaredAt);
				expect(Date.parse(fire.systemTime)).toBeGreaterThanOrEqual(restartedAt - 1_000);
				expect(fire.latenessMs).toBe(Date.parse(fire.systemTime) - fire.declared);
			}
			const missedEntry = history.find((r) => r.outcome === 'missed' && r.declaredAt > lastBefore);
			// Report Missed Windows (skip, coalesce): one failed execution since the restart, naming them
			// (n8n 1.x records no failed execution for a trigger: an error in its log instead).
			const reports = (await n8n.executions(ids[name])).filter(
				(e) =>
					e.status === 'error' &&
					!executionsBefore.has(e.id) &&
					(e.data?.resultData.error?.message ?? '').startsWith('Missed '),
			);
			const windows = `Missed ${missed.length} windows (${iso(missed[0])} to ${iso(missed.at(-1)!)}) while the trigger was inactive`;
			if (name === 'skip' || name === 'coalesce')
				expect(reports.map((e) => e.data?.resultData.error?.message)).toEqual(
					isN8n1
						? []
						: [
								`${windows} (n8n down or the workflow unpublished): ${name === 'skip' ? 'none of them run (catch-up: skip)' : 'one run for all of them (catch-up: coalesce)'}`,
							],
				);
			else expect(reports).toEqual([]);
			switch (name) {
				case 'skip':
					expect(backfills).toEqual([]);
					expect(missedEntry).toMatchObject({
						count: missed.length,
						firstDeclaredAt: missed[0],
						declaredAt: missed.at(-1),
					});
					break;
				case 'coalesce':
					expect(backfills.map((f) => [f.kind, f.outcome, f.declaredAt])).toEqual([
						['coalesced', 'coalesced', iso(missed.at(-1)!)],
					]);
					expect(backfills[0].coalesced).toEqual({
						count: missed.length,
						firstDeclaredAt: iso(missed[0]),
						lastDeclaredAt: iso(missed.at(-1)!),
						windows: missed.map(iso),
						windowsTruncated: false,
					});
					expect(missedEntry).toBeUndefined();
					break;
				case 'run-all':
					// Its limit is 10: an n8n restart slower than 10 windows (a busy machine) runs the newest
					// 10 and records the rest as missed, as run-all-limited does with 2.
					expect(backfills.map((f) => [f.kind, f.outcome, f.declaredAt])).toEqual(
						missed.slice(-10).map((w) => ['catch-up', 'caught_up', iso(w)]),
					);
					if (missed.length > 10) expect(missedEntry?.reason).toContain('run-all limit of 10');
					else expect(missedEntry).toBeUndefined();
					break;
				case 'run-all-limited':
					expect(backfills.map((f) => f.declaredAt)).toEqual(missed.slice(-2).map(iso));
					// One entry for the windows beyond the limit; a single window's entry carries no count.
					expect(missedEntry).toEqual(
						expect.objectContaining(
							missed.length - 2 > 1
								? {
										count: missed.length - 2,
										firstDeclaredAt: missed[0],
										declaredAt: missed.at(-3),
									}
								: { declaredAt: missed.at(-3) },
						),
					);
					if (missed.length - 2 === 1) expect(missedEntry).not.toHaveProperty('count');
					expect(missedEntry?.reason).toContain('run-all limit of 2');
					break;
			}
			// Scheduled fires are never reprocessing, and nothing after the restart is missing.
			expect(all.filter((f) => !f.reprocessing).every((f) => f.kind === 'scheduled')).toBe(true);
		};
		for (const [i, name] of catchUpNames.entries()) {
			try {
				await expectCatchUp(name, i);
			} catch (error) {
				throw new Error(`${name}: ${(error as Error).message}\n${await evidence(name)}`);
			}
		}
	}, 600_000);
	test('a quick restart while a run is going: the window passed inside Late Grace fires under skip-if-running once n8n has settled the re-emitted run', async () => {
		const name = 'quickRestart';
		await n8n.publish(ids[name]);
		// A run (window W) is going, and the state n8n stored with its emit holds it in the outbox, with
		// time left before the next window. n8n then dies (a kill: no write of the run's end can follow;
		// a graceful stop keeps the trigger running while n8n waits for the run, and may or may not write
		// it), so the restarted trigger finds W in its outbox and emits it again.
		const running = await waitFor(
			'a run going, stored in the outbox, early in its window',
			async () => {
				const [execution] = await n8n.executions(ids[name], { status: 'running' });
				const outbox = execution ? ((await stateOf(name)).outbox ?? []) : [];
				return outbox.length === 1 && Date.now() < outbox[0].run.declaredAt + INTERVAL - 3_000
					? outbox[0]
					: undefined;
			},
			{ timeoutMs: 60_000, intervalMs: 200 },
		);
		await n8n.kill();
		// The next window passes while n8n is down, well inside the 120 s Late Grace.
		const downWindow = running.run.declaredAt + INTERVAL;
		await clockPasses(downWindow + 1_000);
		const logBefore = n8n.log().length;
		await n8n.start();
		const all = await firesWhen(
			name,
			(f) => f.some((fire) => fire.declared === downWindow),
			'a run for the window passed while n8n was down',
		);
		await n8n.unpublish(ids[name]);

		// The activation emitted W from the outbox again, and n8n refused it (it exists).
		const refusals = n8n
			.log()
			.slice(logBefore)
			.split('\n')
			.filter(
				(line) =>
					line.includes('Scheduled execution skipped: duplicate deduplication key') &&
					line.includes(`"deduplicationKey":"dst:${running.key}"`),
			);
		expect(refusals.length).toBeGreaterThanOrEqual(1);
		// The window passed while n8n was down ran as a normal, late window: not skipped for the slot
		// W's re-emitted run held until n8n refused it, and not a catch-up.
		const fire = all.find((f) => f.declared === downWindow)!;
		expect([fire.kind, fire.outcome, fire.reprocessing]).toEqual(['scheduled', 'fired', false]);
		expect(fire.latenessMs).toBeGreaterThan(1_000);
		const history = (await stateOf(name)).history;
		expect(history.filter((r) => r.declaredAt === downWindow).map((r) => r.outcome)).toEqual([
			'fired',
		]);
		expectNoWindowTwice(all);
	}, 480_000);
	/*
	 * Static data written by others. n8n 2.41 saves the whole static data column each time: a trigger's
	 * emit saves the trigger's in-memory copy (loaded at its activation), and a run that changed static
	 * data saves, at its end, the copy it loaded at its start (execution-lifecycle-hooks.js
	 * `workflowExecuteAfter`, n8n-core workflow-execute.js `newStaticData`). Each workflow below has a
	 * Poll Trigger and a Durable Schedule Trigger.
	 */
	test('static data written by others: a run that saves static data, two triggers re-registered one at a time, an API update carrying old static data', async () => {
		const source = await FakeSystem.start();
		try {
			const items: Record<string, Array<{ id: number }>> = { a: [{ id: 1 }], b: [{ id: 1 }] };
			for (const path of ['a', 'b'])
				source.on('GET', `/${path}`, () => ({ body: { items: items[path] } }));
			const poll = (path: string) =>
				node('Poll', `${PACKAGE}.pollTrigger`, {
					op: 'http.request',
					interval: 5,
					intervalUnit: 'seconds',
					id: 'id',
					dedupe: 'unique',
					items: 'items',
					with: JSON.stringify({ url: source.url(`/${path}`) }),
				});
			const code = node(
				'Count',
				'n8n-nodes-base.code',
				{
					jsCode:
						"const data = $getWorkflowStaticData('global');\ndata.count = (data.count ?? 0) + 1;\nreturn $input.all();",
				},
				{ typeVersion: 2 },
			);
			const staticDataOf = async (id: string) =>
				(await n8n.getWorkflow(id)).staticData as Record<string, Record<string, unknown>>;
			const scheduleIn = (data: Record<string, Record<string, unknown>>) =>
				data[`node:${TRIGGER}`]?.schedule as ScheduleState;
			const pollIn = (data: Record<string, Record<string, unknown>>) =>
				data['node:Poll']?.pollTrigger;
			const scheduleRuns = async (id: string) =>
				fires(await n8n.executions(id)).filter((f) => f.runKey !== undefined);

			// 1. A run that writes static data (a Code node's $getWorkflowStaticData('global')).
			const a = await n8n.importWorkflow(
				workflow(
					'static data: a run writes global',
					[poll('a'), scheduleNode({}), code, marker('Done')],
					[
						['Poll', 'Count'],
						[TRIGGER, 'Count'],
						['Count', 'Done'],
					],
				),
			);
			await n8n.publish(a);
			const aRuns = await n8n.waitForExecutions(
				a,
				(all) => all.filter((e) => e.status === 'success').length >= 4,
				'4 runs that counted',
			);
			await n8n.unpublish(a);
			await noRunningExecutions(a);
			const counted = (await n8n.executions(a)).filter((e) => e.status === 'success').length;
			const aData = await staticDataOf(a);
			// Every run counted, but each started from a copy a trigger's save had just replaced
			// (the triggers' copies were loaded before any count): the counts are lost.
			expect(counted).toBeGreaterThanOrEqual(aRuns.length);
			observations.runSavesStaticData = { runs: counted, count: aData.global?.count ?? null };
			expect((aData.global?.count as number | undefined) ?? 0).toBeLessThan(counted);
			// The triggers' own state is as they last wrote it (their settlement write follows each run's save).
			const aSchedule = scheduleIn(aData);
			const aFired = (await scheduleRuns(a)).map((f) => f.declared);
			expect(aSchedule.lastDeclaredFire).toBeGreaterThanOrEqual(Math.max(...aFired));
			expect(aSchedule.outbox).toEqual([]);
			expect(pollIn(aData)).toMatchObject({ outbox: [] });

			// 2. Two triggers, the schedule re-registered alone (its node changed): it runs on a new copy
			//    of the static data read from the database, while the Poll Trigger keeps its own copy.
			const bDefinition = workflow(
				'static data: two triggers',
				[poll('b'), scheduleNode({}), marker('Done')],
				[
					['Poll', 'Done'],
					[TRIGGER, 'Done'],
				],
			);
			const b = await n8n.importWorkflow(bDefinition);
			await n8n.publish(b);
			await n8n.waitForExecutions(
				b,
				(all) => fires(all).length >= 1 && all.some((e) => nodeOutput(e, 'Poll').length > 0),
				'a schedule run and the poll run of item 1',
			);
			const changed = structuredClone(bDefinition);
			(changed.nodes[1] as NodeJson).parameters.options = { historyLimit: 99 };
			await n8n.api('PUT', `/workflows/${b}`, {
				name: changed.name,
				nodes: changed.nodes,
				connections: changed.connections,
				settings: changed.settings,
			});
			const pollAtReRegistration = pollIn(await staticDataOf(b));
			const reRegisteredAt = Date.now();
			// The re-registered schedule fires twice more: its stored state moves on.
			await firesWhenOf(b, (f) => f.filter((fire) => fire.declared > reRegisteredAt).length >= 2);
			const scheduleBefore = scheduleIn(await staticDataOf(b));
			// Right after a window: a new item, whose run the Poll Trigger emits with its own copy.
			await clockPasses(Math.ceil(Date.now() / INTERVAL) * INTERVAL + 500);
			items.b = [{ id: 1 }, { id: 2 }];
			await n8n.waitForExecutions(
				b,
				(all) => all.some((e) => nodeOutput(e, 'Poll').some((item) => item.id === 2)),
				'the poll run of item 2',
			);
			const afterPollSave = await staticDataOf(b);
			const scheduleAfterPoll = scheduleIn(afterPollSave);
			const pollAfterItem2 = pollIn(afterPollSave);
			// The next window: the schedule saves its copy.
			const nextWindow = Math.ceil(Date.now() / INTERVAL) * INTERVAL;
			await firesWhenOf(b, (f) => f.some((fire) => fire.declared >= nextWindow));
			await n8n.unpublish(b);
			const afterScheduleSave = await staticDataOf(b);
			const pollRolledBackByScheduleSave =
				JSON.stringify(pollIn(afterScheduleSave)) === JSON.stringify(pollAtReRegistration) &&
				JSON.stringify(pollAfterItem2) !== JSON.stringify(pollAtReRegistration);
			observations.twoTriggers = {
				scheduleCursorBeforePollSave: scheduleBefore.lastDeclaredFire,
				scheduleCursorAfterPollSave: scheduleAfterPoll.lastDeclaredFire,
				pollRolledBackByScheduleSave,
			};

			// 3. The public API's PUT carrying static data from before (here: three windows back), with
			//    the schedule's node changed, so n8n re-registers it from that static data.
			const cDefinition = workflow(
				'static data: API update',
				[scheduleNode({ catchUp: 'coalesce', options: { lateGrace: 2 } }), marker('Done')],
				[[TRIGGER, 'Done']],
			);
			const c = await n8n.importWorkflow(cDefinition);
			await n8n.publish(c);
			await firesWhenOf(c, (f) => f.length >= 1);
			const oldData = await staticDataOf(c);
			const oldDeclaredFire = scheduleIn(oldData).lastDeclaredFire ?? 0;
			const cFirst = await firesWhenOf(c, (f) => f.length >= 4);
			const changedC = structuredClone(cDefinition);
			(changedC.nodes[0] as NodeJson).parameters.options = { lateGrace: 2, historyLimit: 99 };
			// At a moment when the old registration has nothing to save before the next window (its
			// outbox settled: the settlement write of a window's run comes after the run ends, late on a
			// busy machine) and that window is at least 5 s away, so that no save of its copy lands
			// between the PUT's and the re-registration (then there would be no rollback to notice).
			await waitFor(
				'a window of "static data: API update" settled, with 5 s before the next',
				async () => {
					const state = scheduleIn(await staticDataOf(c));
					const untilNext = INTERVAL - (Date.now() % INTERVAL);
					return state.outbox.length === 0 &&
						(state.lastDeclaredFire ?? 0) > oldDeclaredFire &&
						untilNext >= 5_000
						? true
						: undefined;
				},
				{ timeoutMs: 120_000, intervalMs: 200 },
			);
			const putAt = Date.now();
			await n8n.api('PUT', `/workflows/${c}`, {
				name: changedC.name,
				nodes: changedC.nodes,
				connections: changedC.connections,
				settings: changedC.settings,
				staticData: oldData,
			});
			const cAll = await firesWhenOf(c, (f) => f.some((fire) => fire.declared > putAt + INTERVAL));
			await n8n.unpublish(c);
			const cState = scheduleIn(await staticDataOf(c));
			observations.apiUpdate = {
				coalescedRuns: cAll.filter((f) => f.kind === 'coalesced').length,
				missedAfterPut: cState.history.filter((r) => r.outcome === 'missed').length,
				rollbacks: cState.rollbacks?.length ?? 0,
			};
			// The Poll Trigger's save no longer stores an old schedule state, nor the schedule's an old
			// Poll Trigger state: each trigger writes its state into the other's copy too
			// (nodes/shared/liveCopies.ts).
			expect(scheduleAfterPoll.lastDeclaredFire).toBeGreaterThanOrEqual(
				scheduleBefore.lastDeclaredFire!,
			);
			expect(pollRolledBackByScheduleSave).toBe(false);
			expect(pollIn(afterScheduleSave)).not.toEqual(pollAtReRegistration);
			// The re-registered schedule noticed that its stored state went back, continued from the
			// state it had written, and ran nothing again: no coalesced run over windows that had run.
			expect(cAll.filter((f) => f.kind === 'coalesced')).toEqual([]);
			expect(cState.rollbacks).toHaveLength(1);
			expect(cState.history.filter((r) => r.outcome === 'missed')).toEqual([]);
			expectNoWindowTwice(cAll);
			expect(cAll.length).toBeGreaterThan(cFirst.length);
		} finally {
			console.log(`static data written by others: ${JSON.stringify(observations)}`);
			await source.close();
		}
	}, 600_000);
});
