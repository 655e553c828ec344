import type { IDataObject, IRun } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { flushPromises } from '../../test/support/fakeClock';
import { CREATE_RETRY_DELAYS_MS, type ScheduleState, STATE_VERSION } from '../../core/schedule';
import { activateTrigger, endedRun, type TriggerRun } from '../../test/nodeContext';
import { DurableScheduleTrigger } from './DurableScheduleTrigger.node';
import { knownSchedules } from './knownSchedules';

/*
 * The Durable Schedule Trigger run in-process through n8n-core's TriggerContext (test/nodeContext.ts):
 * a real n8n-workflow Workflow (parameter defaults, static data), emits recorded with the static data
 * n8n would save for each. What needs n8n itself (runs ending, overlap with real runs, restarts,
 * deduplication keys refused) is in test/e2e/durableScheduleTrigger.test.ts.
 */

const NODE_NAME = 'Every 10s';

/** Each test's own workflow id: runs one test left unsettled must not hold back another's (RunEmitter). */
let workflowId = '';
let testsStarted = 0;
beforeEach(() => {
	workflowId = `wf-${++testsStarted}`;
});

async function activate(
	parameters: IDataObject,
	{ mode = 'trigger', staticData }: { mode?: 'trigger' | 'manual'; staticData?: IDataObject } = {},
): Promise<TriggerRun> {
	return await activateTrigger(
		DurableScheduleTrigger,
		{
			name: NODE_NAME,
			parameters: {
				scheduleType: 'interval',
				interval: 10,
				intervalUnit: 'seconds',
				...parameters,
			},
			timezone: 'Europe/Berlin',
			staticData,
			workflowId,
		},
		{ mode },
	);
}

/** The node's own state in the workflow's static data (`node:<name>`). */
function stateIn(staticData: IDataObject | undefined): ScheduleState {
	return (staticData?.[`node:${NODE_NAME}`] as { schedule: ScheduleState }).schedule;
}

const NOW = Date.UTC(2026, 0, 1, 0, 0, 5);
/** With 1 s of late grace, every window up to NOW - 1 s counts as missed. */
const GRACE = { options: { lateGrace: 1 } };

/** Stored state whose cursor lies `windows` ten-second windows before NOW's window. */
function storedBehind(windows: number): ScheduleState {
	return {
		v: STATE_VERSION,
		scheduleFingerprint: 'interval 10000 anchor 0',
		lastDeclaredFire: NOW - 5_000 - windows * 10_000,
		queued: [],
		outbox: [],
		history: [],
	};
}

/** Named like n8n-workflow's class, which the node recognises by name. */
class ExecutionCancelledError extends Error {}

describe('Durable Schedule Trigger node', () => {
	// The node runs on the system clock; fake timers pin it (promise turns stay real).
	beforeEach(() =>
		jest.useFakeTimers({ now: NOW, doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }),
	);
	afterEach(() => {
		jest.useRealTimers();
		knownSchedules.clear(); // each test is its own process
	});

	it.each([
		[{ scheduleType: 'cron', cron: '61 * * * *' }, 'Cron Expression'],
		[{ scheduleType: 'cron', cron: '*/5 * * * * *' }, 'Cron Expression'],
		[{ scheduleType: 'cron', timezone: 'Mars/Olympus' }, 'Timezone'],
		[{ interval: 5 }, 'Interval'],
		[{ catchUp: 'run-all', runAllLimit: 0 }, 'Run-All Limit'],
		[{ overlap: 'allow-parallel', maxParallel: 500 }, 'Max Parallel Runs'],
		[{ options: { jitter: -1 } }, 'Jitter (Seconds)'],
		[{ options: { maxRunMinutes: 0 } }, 'Max Run Duration (Minutes)'],
	])(
		'refuses %j at activation, naming the parameter as the editor labels it',
		async (parameters, label) => {
			const error = await activate(parameters).catch((e: unknown) => e);
			expect(error).toBeInstanceOf(NodeOperationError);
			expect((error as NodeOperationError).message).toContain(`for "${label}"`);
			expect((error as NodeOperationError).description).toBe(`Check the "${label}" parameter.`);
		},
	);

	it('an invalid cron expression is refused at activation, naming the parameter', async () => {
		const error = await activate({ scheduleType: 'cron', cron: '61 * * * *' }).catch(
			(e: unknown) => e,
		);
		expect((error as Error).message).toBe(
			'Invalid value "61 * * * *" for "Cron Expression": minute 61 is out of range 0-59',
		);
	});

	it.each([
		['*/5 * * * * *', '', 'it fires 5 seconds apart (at 00:00:00 and 00:00:05)'],
		['0-30 * * * * *', '', 'it fires 1 second apart (at 00:00:00 and 00:00:01)'],
		[
			'55 59 1,2 * * *',
			'Europe/Berlin',
			'it fires 5 seconds apart when the clocks change in Europe/Berlin (for example at 2000-03-26T00:59:55.000Z and 2000-03-26T01:00:00.000Z)',
		],
	])(
		'a cron that fires more often than every 10 s (%s, time zone "%s") is refused, naming "Cron Expression" and the value',
		async (cron, timezone, problem) => {
			const error = await activate({ scheduleType: 'cron', cron, timezone }).catch(
				(e: unknown) => e,
			);
			expect((error as Error).message).toBe(
				`Invalid value "${cron}" for "Cron Expression": ${problem}; fires must be at least 10 seconds apart (e.g. "*/10 * * * * *")`,
			);
		},
	);

	it('previews next fires and history in manual mode without storing or starting anything', async () => {
		const stored = storedBehind(3);
		stored.history = [
			{
				runKey: `${workflowId}:node-1@x`,
				declaredAt: stored.lastDeclaredFire ?? 0,
				actualAt: stored.lastDeclaredFire,
				latenessMs: 0,
				outcome: 'fired',
			},
		];
		const run = await activate(
			{ ...GRACE, catchUp: 'run-all', runAllLimit: 2 },
			{ mode: 'manual', staticData: { [`node:${NODE_NAME}`]: { schedule: stored } } },
		);
		const { emitted, response } = run;
		expect(emitted).toEqual([]);
		await response.manualTriggerFunction?.();
		expect(emitted).toHaveLength(1);
		const preview = emitted[0].items[0][0].json;
		expect(preview).toMatchObject({
			preview: true,
			scheduleId: `${workflowId}:node-1`,
			schedule: 'interval 10000 anchor 0',
			catchUp: { missedCount: 3, runsToStart: 2 },
		});
		expect((preview.nextFires as IDataObject[])[0]).toMatchObject({
			declaredAt: '2026-01-01T00:00:10.000Z',
			fireAt: '2026-01-01T00:00:10.000Z',
		});
		expect(preview.nextFires).toHaveLength(5);
		expect(preview.history).toEqual([
			expect.objectContaining({
				outcome: 'fired',
				declaredAt: new Date(stored.lastDeclaredFire ?? 0).toISOString(),
			}),
		]);
		// Nothing for n8n to save: the stored state is as it was.
		expect(emitted[0].saved).toBeUndefined();
		expect(stateIn(run.staticData)).toEqual(stored);
		await run.close();
	});

	it('emits each catch-up run with its entry, a namespaced deduplication key and the state saved with it', async () => {
		const run = await activate(
			{ ...GRACE, catchUp: 'run-all', runAllLimit: 3, overlap: 'allow-parallel', maxParallel: 2 },
			{ staticData: { [`node:${NODE_NAME}`]: { schedule: storedBehind(3) } } },
		);
		const { emitted, failures } = run;
		expect(emitted).toHaveLength(2); // two slots; the third catch-up window waits for one
		const [first, second] = emitted.map((e) => e.items[0][0].json);
		expect([first.declaredAt, second.declaredAt]).toEqual([
			'2025-12-31T23:59:40.000Z',
			'2025-12-31T23:59:50.000Z',
		]);
		expect(first).toMatchObject({
			kind: 'catch-up',
			outcome: 'caught_up',
			reprocessing: true,
			validTime: first.declaredAt,
			systemTime: first.actualAt,
		});
		expect(first.runKey).toBe(`${workflowId}:node-1@${String(first.declaredAt)}`);
		expect(emitted[0].deduplicationKey).toBe(`dst:${String(first.runKey)}`);
		// What n8n saves on the first emit already records both runs, in the history and the outbox.
		const written = stateIn(emitted[0].saved);
		expect(written.history.slice(-2)).toMatchObject([
			{ runKey: first.runKey, outcome: 'caught_up' },
			{ runKey: second.runKey, outcome: 'caught_up' },
		]);
		expect(written.outbox.map((entry) => entry.key)).toEqual([first.runKey, second.runKey]);

		emitted[0].done?.resolve(undefined); // the run ended (or n8n had already run this window)
		await flushPromises();
		expect(emitted).toHaveLength(4);
		expect(emitted[2].items[0][0].json.declaredAt).toBe('2026-01-01T00:00:00.000Z');
		// The end is written at once, though two runs are in flight: an empty emit under the ended run's
		// key (n8n refuses it) carries a state whose outbox no longer holds it.
		expect(emitted[3]).toMatchObject({
			items: [[]],
			deduplicationKey: emitted[0].deduplicationKey,
		});
		expect(stateIn(emitted[3].saved).outbox.map((entry) => entry.key)).toEqual([
			second.runKey,
			emitted[2].items[0][0].json.runKey,
		]);
		emitted[1].done?.reject(new ExecutionCancelledError()); // a cancelled run ran: it frees its slot, and is no miss
		await flushPromises();
		expect(stateIn(run.staticData).queued).toEqual([]);
		expect(stateIn(run.staticData).history.map((r) => r.outcome)).toEqual([
			'caught_up',
			'caught_up',
			'caught_up',
		]);
		expect(failures).toEqual([]);
		await run.close();
	});
	it('Report Missed Windows: the windows missed while inactive are reported by one failed execution at activation, not again at the next one', async () => {
		const staticData = { [`node:${NODE_NAME}`]: { schedule: storedBehind(3) } };
		const parameters = { options: { lateGrace: 1, reportMissed: true }, catchUp: 'skip' };
		const run = await activate(parameters, { staticData });
		expect(run.emitted).toEqual([]);
		expect(run.failures.map((failure) => failure.message)).toEqual([
			'Missed 3 windows (2025-12-31T23:59:40.000Z to 2026-01-01T00:00:00.000Z) while the trigger was inactive (n8n down or the workflow unpublished): none of them run (catch-up: skip)',
		]);
		await run.close();
		const again = await activate(parameters, { staticData: run.staticData });
		expect(again.failures).toEqual([]);
		await again.close();
	});

	it('When a Run Fails, Start the Window Again: a window whose run n8n ended failed runs again after the backoff, its runAttempt on the item, under n8n key dst:<runKey>/attempt2', async () => {
		const run = await activate(
			{
				...GRACE,
				catchUp: 'run-all',
				runAllLimit: 1,
				whenRunFails: 'startAgain',
				retryDelaySec: 5,
			},
			{ staticData: { [`node:${NODE_NAME}`]: { schedule: storedBehind(1) } } },
		);
		const { emitted } = run;
		const key = String(emitted[0].items[0][0].json.runKey);
		emitted[0].done?.resolve({
			...endedRun(),
			status: 'error',
			data: { resultData: { runData: {}, lastNodeExecuted: 'X', error: { message: 'down' } } },
		} as IRun);
		await flushPromises();
		expect(stateIn(run.staticData).history.at(-1)).toMatchObject({
			runKey: key,
			outcome: 'failed',
			reason: 'run 1 of 3 failed: down; run 2 in 5s',
		});
		await jest.advanceTimersByTimeAsync(5_000);
		const again = emitted.filter((emit) => emit.items[0].length > 0)[1];
		expect(again.deduplicationKey).toBe(`dst:${key}/attempt2`);
		expect(again.items[0][0].json).toMatchObject({ runKey: key, runAttempt: 2 });
		await run.close();
	});

	it('a catch-up run n8n could not create is emitted again after the retry delay under a fresh deduplication key', async () => {
		const run = await activate(
			{ ...GRACE, catchUp: 'run-all', runAllLimit: 1 },
			{ staticData: { [`node:${NODE_NAME}`]: { schedule: storedBehind(1) } } },
		);
		const { emitted } = run;
		expect(emitted).toHaveLength(1);
		const key = String(emitted[0].items[0][0].json.runKey);
		expect(emitted[0].deduplicationKey).toBe(`dst:${key}`);
		emitted[0].done?.reject(new Error('Redis connection lost')); // n8n could not create the run
		await flushPromises();
		expect(stateIn(run.staticData).history.at(-1)).toMatchObject({
			runKey: key,
			outcome: 'retried',
		});
		await jest.advanceTimersByTimeAsync(CREATE_RETRY_DELAYS_MS[0]);
		expect(emitted).toHaveLength(2);
		expect(emitted[1].deduplicationKey).toBe(`dst:${key}#2`);
		expect(emitted[1].items[0][0].json).toMatchObject({
			runKey: key,
			kind: 'catch-up',
			outcome: 'caught_up',
			attempt: 2,
		});
		expect(stateIn(emitted[1].saved).outbox.map((entry) => entry.run.attempt)).toEqual([2]);
		await run.close();
	});
	it('a re-registration on a fresh copy of older static data continues from the state this process wrote; an old activation still open keeps its copy', async () => {
		const stale = { [`node:${NODE_NAME}`]: { schedule: storedBehind(1) } };
		const settings = { ...GRACE, catchUp: 'run-all' };
		// First activation (copy A): catches up one window; n8n ends its run.
		const first = await activate(settings, { staticData: structuredClone(stale) });
		expect(first.emitted).toHaveLength(1);
		first.emitted[0].done?.resolve(undefined);
		await flushPromises();
		const written = stateIn(first.staticData);
		expect(written.outbox).toEqual([]);
		// n8n re-registers this trigger alone (its node changed) on a new copy read from a database
		// that another copy's save rolled back (copy B); here the old activation is still open.
		const second = await activate(settings, { staticData: structuredClone(stale) });
		expect(second.emitted).toHaveLength(0); // the caught-up window is not planned again
		const repaired = stateIn(second.staticData);
		expect(repaired.lastDeclaredFire).toBe(written.lastDeclaredFire);
		expect(repaired.rollbacks).toMatchObject([{ storedSeq: 0, seq: written.seq }]);
		// Copy A, where the old activation of this node is still open, keeps that activation's state:
		// a copy is written by the workflow's other triggers only (nodes/shared/liveCopies.ts).
		expect(stateIn(first.staticData)).toEqual(written);
		await first.close();
		await second.close();
	});
});
