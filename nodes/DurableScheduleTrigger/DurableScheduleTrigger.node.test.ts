import type {
	IDataObject,
	INodeExecutionData,
	ITriggerFunctions,
	ITriggerResponse,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { flushPromises } from '../../core/testing/fakeClock';
import { type ScheduleState, STATE_VERSION } from '../../core/schedule';
import { DurableScheduleTrigger } from './DurableScheduleTrigger.node';

const NODE = {
	id: 'node-1',
	name: 'Every 10s',
	type: 'n8n-nodes-durable-triggers.durableScheduleTrigger',
	typeVersion: 1,
	position: [0, 0] as [number, number],
	parameters: {},
};
const DEFAULTS: IDataObject = {
	scheduleType: 'interval',
	interval: 10,
	intervalUnit: 'seconds',
	cron: '0 * * * *',
	timezone: '',
	catchUp: 'skip',
	runAllLimit: 10,
	overlap: 'skip-if-running',
	queueLimit: 10,
	maxParallel: 2,
	options: {},
};

function deferred<T>() {
	let resolve!: (value: T) => void;
	let reject!: (error: Error) => void;
	const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
	return { promise, resolve, reject };
}

/** The parts of n8n's trigger context the node uses, recording what it emits. */
function context(
	parameters: IDataObject,
	{ mode = 'trigger', staticData = {} as IDataObject } = {},
) {
	const emitted: Array<{
		items: INodeExecutionData[][];
		done?: ReturnType<typeof deferred>;
		key?: string;
		stateAtEmit: unknown;
	}> = [];
	const failures: Error[] = [];
	const params = { ...DEFAULTS, ...parameters };
	const ctx = {
		getNode: () => NODE,
		getWorkflow: () => ({ id: 'wf-1', name: 'wf', active: true }),
		getWorkflowStaticData: () => staticData,
		getNodeParameter: (name: string, fallback?: unknown) => params[name] ?? fallback,
		getTimezone: () => 'Europe/Berlin',
		getMode: () => mode,
		helpers: { createDeferredPromise: deferred },
		emit: (
			items: INodeExecutionData[][],
			_response?: unknown,
			done?: ReturnType<typeof deferred>,
			key?: string,
		) => emitted.push({ items, done, key, stateAtEmit: structuredClone(staticData.schedule) }),
		saveFailedExecution: (error: Error) => failures.push(error),
		logger: { warn: jest.fn(), debug: jest.fn() },
	};
	return { ctx: ctx as unknown as ITriggerFunctions, emitted, failures, staticData };
}

async function run(ctx: ITriggerFunctions): Promise<ITriggerResponse> {
	return await new DurableScheduleTrigger().trigger.call(ctx);
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
	afterEach(() => jest.useRealTimers());

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
			const { ctx, emitted } = context(parameters);
			const error = await run(ctx).catch((e: unknown) => e);
			expect(error).toBeInstanceOf(NodeOperationError);
			expect((error as NodeOperationError).message).toContain(`for "${label}"`);
			expect((error as NodeOperationError).description).toBe(`Check the "${label}" parameter.`);
			expect(emitted).toEqual([]);
		},
	);

	it('previews next fires and history in manual mode without storing or starting anything', async () => {
		const stored = storedBehind(3);
		stored.history = [
			{
				runKey: 'wf-1:node-1@x',
				declaredAt: stored.lastDeclaredFire ?? 0,
				actualAt: stored.lastDeclaredFire,
				latenessMs: 0,
				outcome: 'fired',
			},
		];
		const { ctx, emitted, staticData } = context(
			{ ...GRACE, catchUp: 'run-all', runAllLimit: 2 },
			{ mode: 'manual', staticData: { schedule: stored } },
		);
		const response = await run(ctx);
		expect(emitted).toEqual([]);
		await response.manualTriggerFunction?.();
		expect(emitted).toHaveLength(1);
		const preview = emitted[0].items[0][0].json;
		expect(preview).toMatchObject({
			preview: true,
			scheduleId: 'wf-1:node-1',
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
		expect(staticData.schedule).toBe(stored);
		await response.closeFunction?.();
	});

	it('emits each catch-up run with its entry, a namespaced deduplication key and the state saved with it', async () => {
		const { ctx, emitted, staticData, failures } = context(
			{ ...GRACE, catchUp: 'run-all', runAllLimit: 3, overlap: 'allow-parallel', maxParallel: 2 },
			{ staticData: { schedule: storedBehind(3) } },
		);
		const response = await run(ctx);
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
		expect(first.runKey).toBe(`wf-1:node-1@${String(first.declaredAt)}`);
		expect(emitted[0].key).toBe(`dst:${String(first.runKey)}`);
		// What n8n saves on the first emit already records both runs, in the history and the outbox.
		const written = emitted[0].stateAtEmit as ScheduleState;
		expect(written.history.slice(-2)).toMatchObject([
			{ runKey: first.runKey, outcome: 'caught_up' },
			{ runKey: second.runKey, outcome: 'caught_up' },
		]);
		expect(written.outbox.map((entry) => entry.key)).toEqual([first.runKey, second.runKey]);

		emitted[0].done?.resolve(undefined); // the run ended (or n8n had already run this window)
		await flushPromises();
		expect(emitted).toHaveLength(3);
		expect(emitted[2].items[0][0].json.declaredAt).toBe('2026-01-01T00:00:00.000Z');
		emitted[1].done?.reject(new ExecutionCancelledError()); // a cancelled run ran: it frees its slot, and is no miss
		await flushPromises();
		expect((staticData.schedule as ScheduleState).queued).toEqual([]);
		expect((staticData.schedule as ScheduleState).history.map((r) => r.outcome)).toEqual([
			'caught_up',
			'caught_up',
			'caught_up',
		]);
		expect(failures).toEqual([]);
		await response.closeFunction?.();
	});
});
