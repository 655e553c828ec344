import type { INodeExecutionData, IRun, ITriggerFunctions } from 'n8n-workflow';

import { endedRun, triggerContext } from '../../test/nodeContext';
import { PollTrigger } from '../PollTrigger/PollTrigger.node';
import { EMIT_CHUNK, RunEmitter, type RunEmitterOptions } from './emitRuns';
import { type LiveCopiesWriter, writerToLiveCopies } from './liveCopies';
import * as door from './n8nDoor';
import { n8nCapabilities } from './n8nDoor';

/** A deferred promise as n8n-core's `helpers.createDeferredPromise` makes it. */
type Done = {
	promise: Promise<IRun>;
	resolve: (run: IRun) => void;
	reject: (error: Error) => void;
};

const POLL = {
	parameters: { op: 'http.request', with: '{}', interval: 5, intervalUnit: 'seconds' },
};

/**
 * n8n-core's TriggerContext (a real Workflow and its observable static data) with n8n 1.x's trigger
 * emit, as active-workflow-manager.js of n8n 1.123 has it: three parameters; it starts a static-data
 * write (set `__dataChanged` means a write, which clears the flag when done) and creates the run;
 * once the run exists it reads the done-promise's `resolve` and `reject`.
 */
function n8n1Context({
	writeMs = 5,
	createMs = 2,
	afterWrite = () => {},
}: { writeMs?: number; createMs?: number; afterWrite?: () => void } = {}) {
	const log: string[] = [];
	const dones: Done[] = [];
	let staticData!: { __dataChanged?: boolean };
	const emit = (data: INodeExecutionData[][], _response?: unknown, done?: Done) => {
		const name = String(data[0][0].json.name);
		log.push(`emit ${name}${staticData.__dataChanged ? ' (writes state)' : ''}`);
		if (staticData.__dataChanged)
			setTimeout(() => {
				staticData.__dataChanged = false;
				afterWrite();
			}, writeMs);
		setTimeout(() => {
			log.push(`created ${name}`);
			if (done) {
				dones.push(done);
				void Promise.resolve(endedRun()).then(done.resolve).catch(done.reject);
			}
		}, createMs);
	};
	const context = triggerContext(PollTrigger, POLL, emit as unknown as ITriggerFunctions['emit']);
	staticData = context.workflow.staticData as { __dataChanged?: boolean };
	staticData.__dataChanged = false;
	return { context, log, dones, staticData };
}

describe('RunEmitter without deduplication keys (n8n 1.x)', () => {
	test('the emit n8n 1.x hands over has no key parameter; 2.x has one', () => {
		expect(n8nCapabilities(n8n1Context().context).deduplicationKeys).toBe(false);
		const modern = triggerContext(
			PollTrigger,
			POLL,
			(_d: unknown, _r: unknown, _p: unknown, _k: unknown) => undefined,
		);
		expect(n8nCapabilities(modern).deduplicationKeys).toBe(true);
	});

	test('runs go out one at a time; each is settled when n8n creates it, and the next write carries it', async () => {
		const { context, log, staticData } = n8n1Context();
		const settledAt: string[] = [];
		const runs = ['a', 'b', 'c'].map((name) => ({ key: `k-${name}`, run: name }));
		staticData.__dataChanged = true; // the caller wrote the state with all three in its outbox
		await new RunEmitter<string>(context, {
			toItems: (name) => [{ json: { name } }],
			settled: () => undefined,
			created: ({ run }) => settledAt.push(`${run} created`),
			rewrite: () => {
				log.push(`rewrite after ${settledAt.join(', ')}`);
				staticData.__dataChanged = true;
			},
		}).emit(runs);
		expect(log).toEqual([
			'emit a (writes state)',
			'created a',
			'rewrite after a created',
			'emit b (writes state)',
			'created b',
			'rewrite after a created, b created',
			'emit c (writes state)',
			'created c',
			// the last settlement, for n8n's next write (the next start, or the next activation)
			'rewrite after a created, b created, c created',
		]);
	});

	test('a state change right after n8n wrote the state, before it confirmed the run (a poll every interval), does not hold the next run back', async () => {
		// n8n 1.123 writes the state while it creates the run; on a busy machine the write can end
		// first, and a poll can change the trigger's state in the same turn of the event loop, before
		// the emitter looks at n8n's changed flag again. That change is written with the next emit.
		jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
		try {
			let writer: LiveCopiesWriter | undefined;
			let polls = 0;
			const { context, log } = n8n1Context({
				writeMs: 1,
				createMs: 20,
				afterWrite: () => {
					if (polls++ > 0) return;
					log.push('poll writes the state');
					writer?.write('state', { polled: true });
				},
			});
			writer = writerToLiveCopies(context);
			writer.write('state', { outbox: 3 });
			const emitting = new RunEmitter<string>(context, {
				toItems: (name) => [{ json: { name } }],
				settled: () => undefined,
				created: () => undefined,
				rewrite: () => writer?.write('state', { outbox: 'settled so far' }),
			}).emit(['a', 'b', 'c'].map((name) => ({ key: `k-${name}`, run: name })));
			await jest.advanceTimersByTimeAsync(200);
			expect(log).toEqual([
				'emit a (writes state)',
				'poll writes the state',
				'created a',
				'emit b (writes state)',
				'created b',
				'emit c (writes state)',
				'created c',
			]);
			await emitting;
			writer.close();
		} finally {
			jest.useRealTimers();
		}
	});

	test("a run n8n has not confirmed 30 s after its emit: the next goes out, and n8n's log says a crash may now repeat more", async () => {
		jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
		try {
			const { context, log } = n8n1Context({ createMs: 45_000 });
			const warn = jest.spyOn(context.logger, 'warn').mockImplementation(() => undefined);
			const emitting = new RunEmitter<string>(context, {
				toItems: (name) => [{ json: { name } }],
				settled: () => undefined,
				created: () => undefined,
				rewrite: () => undefined,
			}).emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
			await jest.advanceTimersByTimeAsync(29_000);
			expect(log).toEqual(['emit a']);
			expect(warn).not.toHaveBeenCalled();
			await jest.advanceTimersByTimeAsync(1_000);
			expect(log).toEqual(['emit a', 'emit b']);
			expect(warn.mock.calls.map(([message]) => message)).toEqual([
				expect.stringMatching(/^Poll Trigger: n8n has not confirmed a run 30 s after its emit/),
			]);
			await jest.advanceTimersByTimeAsync(60_000);
			await emitting;
			expect(warn).toHaveBeenCalledTimes(2);
		} finally {
			jest.useRealTimers();
		}
	});

	test('a run n8n ends later is reported started once; an error after creation is still a run that happened', async () => {
		const { context } = n8n1Context();
		const settlements: string[] = [];
		await new RunEmitter<string>(context, {
			toItems: (name) => [{ json: { name } }],
			settled: ({ run }, settlement) => void settlements.push(`${run} ${settlement}`),
			created: () => undefined,
			rewrite: () => undefined,
		}).emit([{ key: 'k', run: 'a' }]);
		await new Promise((resolve) => setTimeout(resolve, 10));
		expect(settlements).toEqual(['a started']);
	});
});

/** A deferred promise, as n8n-core's `createDeferredPromise` makes it. */
function deferred<T>() {
	const d = {} as {
		promise: Promise<T>;
		resolve: (value: T) => void;
		reject: (error: Error) => void;
	};
	d.promise = new Promise<T>((resolve, reject) => Object.assign(d, { resolve, reject }));
	return d;
}

/**
 * n8n 2.x's trigger emit, as trigger-execution-context.factory.js of n8n 2.41 has it: it starts a
 * static-data write, then creates the run unless its deduplication key exists, in which case the
 * done-promise resolves with undefined; a created run's done-promise resolves when the test ends it.
 */
function n8n2Context({ writesFinish = true } = {}) {
	const staticData: { __dataChanged?: boolean } = { __dataChanged: false };
	const log: string[] = [];
	const existing = new Set<string>();
	const running = new Map<string, Done>();
	const responses = new Map<string, Done>();
	const emit = (data: INodeExecutionData[][], response: Done, done: Done, key: string) => {
		const items = data[0].map((item) => String(item.json.name)).join(',') || 'no items';
		log.push(`emit ${key} (${items})${staticData.__dataChanged ? ' writes state' : ''}`);
		if (writesFinish) staticData.__dataChanged = false;
		if (existing.has(key))
			return void Promise.resolve().then(() => done.resolve(undefined as never));
		existing.add(key);
		running.set(key, done);
		responses.set(key, response);
	};
	const context = {
		emit,
		helpers: { createDeferredPromise: deferred },
		workflow: { staticData },
		running,
	} as unknown as ITriggerFunctions;
	const end = async (key: string, run = endedRun()) => {
		running.get(key)!.resolve(run);
		await new Promise((resolve) => setImmediate(resolve));
	};
	/**
	 * workflow-runner.js `failExecution` (a credential the workflow cannot use): the execution is
	 * saved failed, the response promise rejected, and the done-promise resolves with nothing.
	 */
	const failBeforeRun = async (key: string, error: Error) => {
		responses.get(key)!.reject(error);
		running.get(key)!.resolve(undefined as never);
		await new Promise((resolve) => setImmediate(resolve));
	};
	return { context, log, staticData, existing, end, failBeforeRun };
}

describe('RunEmitter with deduplication keys (n8n 2.x)', () => {
	/**
	 * Every emitter a test made, stopped after it: a write the mock never finishes (writesFinish:
	 * false) would otherwise keep its emitter watching the static data for 60 s after the test
	 * (STATIC_DATA_WRITE_WAIT_MS), and jest would not exit.
	 */
	const made: Array<RunEmitter<string>> = [];
	afterEach(() => made.splice(0).forEach((runs) => runs.stop()));

	function emitter(
		context: ITriggerFunctions,
		log: string[],
		staticData: { __dataChanged?: boolean },
		busyWriteIntervalMs?: number,
		more: Partial<RunEmitterOptions<string>> = {},
	) {
		const outbox = new Set<string>();
		const options: RunEmitterOptions<string> = {
			...more,
			toItems: (name) => [{ json: { name } }],
			settled: async ({ key }, settlement) => {
				await Promise.resolve();
				outbox.delete(key as string);
				log.push(`settled ${key} ${settlement}`);
			},
			created: () => undefined,
			busyWriteIntervalMs,
			rewrite: () => {
				log.push(`rewrite (outbox: ${[...outbox].join(',') || 'empty'})`);
				staticData.__dataChanged = true;
			},
		};
		const runs = new RunEmitter<string>(context, options);
		made.push(runs);
		return { emitter: runs, outbox };
	}

	test('once every run has settled, one empty emit under the last key makes n8n store the settlements', async () => {
		const { context, log, staticData, end, existing } = n8n2Context();
		const { emitter: runs, outbox } = emitter(context, log, staticData);
		['a', 'b'].forEach((name) => outbox.add(`k-${name}`));
		staticData.__dataChanged = true;
		await runs.emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
		await end('k-a');
		expect(log).toEqual(['emit k-a (a) writes state', 'emit k-b (b)', 'settled k-a started']);
		await end('k-b');
		expect(log.slice(3)).toEqual([
			'settled k-b started',
			'rewrite (outbox: empty)',
			// n8n writes the state, then refuses the key: its execution exists.
			'emit k-b (no items) writes state',
		]);
		expect(existing.size).toBe(2);
	});

	test("busyWriteIntervalMs: settlements are also written while runs go on, an interval after the last write of the state (the poll's), by a timer; the last once all settled", async () => {
		jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
		try {
			const { context, log, staticData, end, existing } = n8n2Context();
			const { emitter: runs, outbox } = emitter(context, log, staticData, 10_000);
			['a', 'b', 'c', 'd'].forEach((name) => outbox.add(`k-${name}`));
			staticData.__dataChanged = true;
			await runs.emit(['a', 'b', 'c', 'd'].map((name) => ({ key: `k-${name}`, run: name })));
			await jest.advanceTimersByTimeAsync(1_000);
			await end('k-a');
			// b, c and d still run, 1 s after the poll's write: a's end waits for the interval.
			expect(log).toEqual([
				'emit k-a (a) writes state',
				'emit k-b (b)',
				'emit k-c (c)',
				'emit k-d (d)',
				'settled k-a started',
			]);
			await jest.advanceTimersByTimeAsync(8_999);
			expect(log).toHaveLength(5);
			// 10 s after the poll's write, with no settlement to call it: the timer writes a's end.
			await jest.advanceTimersByTimeAsync(1);
			expect(log.slice(5)).toEqual([
				'rewrite (outbox: k-b,k-c,k-d)',
				'emit k-a (no items) writes state',
			]);
			// Within the interval of that write: not written yet, nor by the timer before it is due.
			await jest.advanceTimersByTimeAsync(4_000);
			await end('k-c');
			await jest.advanceTimersByTimeAsync(5_999);
			expect(log.slice(7)).toEqual(['settled k-c started']);
			await jest.advanceTimersByTimeAsync(1);
			expect(log.slice(8)).toEqual([
				'rewrite (outbox: k-b,k-d)',
				'emit k-c (no items) writes state',
			]);
			// A settlement more than an interval after the last write is written at once.
			await jest.advanceTimersByTimeAsync(12_000);
			await end('k-d');
			expect(log.slice(10)).toEqual([
				'settled k-d started',
				'rewrite (outbox: k-b)',
				'emit k-d (no items) writes state',
			]);
			await jest.advanceTimersByTimeAsync(3_000);
			await end('k-b');
			expect(log.slice(13)).toEqual([
				'settled k-b started',
				'rewrite (outbox: empty)',
				// n8n writes the state, then refuses the key: its execution exists.
				'emit k-b (no items) writes state',
			]);
			expect(existing.size).toBe(4);
			// Nothing is left to write: no timer writes again.
			await jest.advanceTimersByTimeAsync(60_000);
			expect(log).toHaveLength(16);
		} finally {
			jest.useRealTimers();
		}
	});

	test("busyWriteIntervalMs: a burst shorter than the interval has no write but its poll's and its last settlement write; a stop cancels the waiting write", async () => {
		jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
		try {
			const { context, log, staticData, end } = n8n2Context();
			const { emitter: runs, outbox } = emitter(context, log, staticData, 10_000);
			['a', 'b', 'c'].forEach((name) => outbox.add(`k-${name}`));
			staticData.__dataChanged = true;
			await runs.emit(['a', 'b', 'c'].map((name) => ({ key: `k-${name}`, run: name })));
			for (const name of ['a', 'b', 'c']) {
				await jest.advanceTimersByTimeAsync(3_000);
				await end(`k-${name}`);
			}
			await jest.advanceTimersByTimeAsync(60_000);
			expect(log.filter((line) => line.endsWith('writes state'))).toEqual([
				'emit k-a (a) writes state',
				'emit k-c (no items) writes state',
			]);

			const second = n8n2Context();
			const { emitter: stopped, outbox: itsOutbox } = emitter(
				second.context,
				second.log,
				second.staticData,
				10_000,
			);
			['a', 'b'].forEach((name) => itsOutbox.add(`k-${name}`));
			second.staticData.__dataChanged = true;
			await stopped.emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
			await second.end('k-a');
			stopped.stop();
			await jest.advanceTimersByTimeAsync(60_000);
			expect(second.log).toEqual([
				'emit k-a (a) writes state',
				'emit k-b (b)',
				'settled k-a started',
			]);
			// n8n ends b after the stop (its key leaves this process's runs in flight): nothing written.
			await second.end('k-b');
			expect(second.log.slice(3)).toEqual(['settled k-b started']);
		} finally {
			jest.useRealTimers();
		}
	});

	test("a burst's end is one write: a window refilled by the last settlement (nothing left to take) writes nothing while that settlement is being recorded", async () => {
		// As the Poll Trigger's settled: the run leaves the outbox, the window refills (emitTaken),
		// then it waits for the History Store's checkpoint before the state may be written.
		const { context, log, staticData, end } = n8n2Context();
		const outbox = new Set(['k-a', 'k-b']);
		let checkpointed = Promise.resolve();
		const runs: RunEmitter<string> = new RunEmitter<string>(context, {
			toItems: (name) => [{ json: { name } }],
			settled: async ({ key }) => {
				outbox.delete(key as string);
				void runs.emitTaken(() => []);
				checkpointed = new Promise((resolve) => setImmediate(resolve));
				await checkpointed;
				log.push(`settled ${key}`);
			},
			created: () => undefined,
			rewrite: () => {
				log.push(`rewrite (outbox: ${[...outbox].join(',') || 'empty'})`);
				staticData.__dataChanged = true;
			},
		});
		made.push(runs);
		staticData.__dataChanged = true;
		await runs.emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
		await end('k-a');
		await end('k-b');
		await checkpointed;
		await new Promise((resolve) => setImmediate(resolve));
		expect(log).toEqual([
			'emit k-a (a) writes state',
			'emit k-b (b)',
			'settled k-a',
			'settled k-b',
			'rewrite (outbox: empty)',
			'emit k-b (no items) writes state',
		]);
	});

	test('runs refused as duplicates (re-emitted at activation) are settled and written the same way', async () => {
		const { context, log, staticData, existing } = n8n2Context();
		existing.add('k-a');
		const { emitter: runs, outbox } = emitter(context, log, staticData);
		outbox.add('k-a');
		await runs.emit([{ key: 'k-a', run: 'a' }]);
		await new Promise((resolve) => setImmediate(resolve));
		expect(log).toEqual([
			'emit k-a (a)',
			'settled k-a started',
			'rewrite (outbox: empty)',
			'emit k-a (no items) writes state',
		]);
	});

	test('a run an earlier activation in this process emitted and n8n has not settled is not emitted again: it settles with that run', async () => {
		// n8n 2.41 would take the row of a run its concurrency limit still holds back (status "new")
		// for a tombstone: an emit under its key creates a second run, and the queued one runs too.
		const n8n = n8n2Context();
		const before = emitter(n8n.context, n8n.log, n8n.staticData);
		await before.emitter.emit([{ key: 'k-queued', run: 'q' }]);
		before.emitter.stop(); // unpublished while the run waits for a slot
		const after = emitter(n8n.context, n8n.log, n8n.staticData);
		['k-queued', 'k-next'].forEach((key) => after.outbox.add(key));
		await after.emitter.emit([
			{ key: 'k-queued', run: 'q' },
			{ key: 'k-next', run: 'n' },
		]);
		expect(n8n.log).toEqual(['emit k-queued (q)', 'emit k-next (n)']);
		await n8n.end('k-next');
		await n8n.end('k-queued');
		expect(n8n.log.slice(2)).toEqual([
			'settled k-next started',
			'settled k-queued started',
			'settled k-queued started',
			'rewrite (outbox: empty)',
			'emit k-queued (no items) writes state',
		]);
	});

	test('after stop() nothing is emitted: neither the rest of a burst nor the write of its settlements', async () => {
		// n8n's write of the state is still going on when the trigger is closed.
		const { context, log, staticData, end } = n8n2Context({ writesFinish: false });
		const { emitter: runs } = emitter(context, log, staticData);
		staticData.__dataChanged = true;
		const emitting = runs.emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
		await new Promise((resolve) => setImmediate(resolve));
		expect(log).toEqual(['emit k-a (a) writes state']); // b waits for the write
		runs.stop();
		await emitting;
		await end('k-a');
		expect(log).toEqual(['emit k-a (a) writes state', 'settled k-a started']);
	});

	test('the write never goes under the key of a run n8n failed without executing it: its execution may still read "new"', async () => {
		// Queue mode: the worker died after taking b's job and before marking it running. n8n settles
		// the done-promise with a failed run in which no node ran, then writes the failure; until then
		// n8n 2.41 takes b's row for a tombstone, and an emit under its key would delete it.
		const { context, log, staticData, end } = n8n2Context();
		const { emitter: runs } = emitter(context, log, staticData);
		await runs.emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
		await end('k-a');
		await end('k-b', { status: 'error', data: { resultData: { runData: {} } } } as IRun);
		expect(log.slice(-3)).toEqual([
			'settled k-b started', // its item is not run again
			'rewrite (outbox: empty)',
			'emit k-a (no items) writes state',
		]);
	});

	test('the write never goes under the key of a run n8n could not create: that item comes back under it', async () => {
		const { context, log, staticData, end } = n8n2Context();
		const { emitter: runs } = emitter(context, log, staticData);
		await runs.emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
		await end('k-a');
		// n8n could not create b: its done-promise rejects before any execution existed.
		await rejectRun('k-b');
		expect(log.slice(-2)).toEqual(['rewrite (outbox: empty)', 'emit k-a (no items) writes state']);

		async function rejectRun(key: string) {
			const pending = (runs as unknown as { unsettled: Set<string> }).unsettled;
			expect(pending.has(key)).toBe(true);
			await runningDone(key).reject(new Error('refused by a hook'));
			await new Promise((resolve) => setImmediate(resolve));
		}
		function runningDone(key: string) {
			return (context as unknown as { running: Map<string, Done> }).running.get(key)!;
		}
	});

	test('a run n8n failed before executing it (failExecution: its done-promise resolves with nothing) is not run, not a duplicate; a burst reports once', async () => {
		const { context, log, staticData, failBeforeRun } = n8n2Context();
		const reports: string[] = [];
		const { emitter: runs } = emitter(context, log, staticData, undefined, {
			writeKey: 'k-write',
			reportNotRun: (failed) =>
				reports.push(
					`${failed.length}: ${failed.map(({ run }) => run.run).join(',')} (${failed[0].error?.message})`,
				),
		});
		await runs.emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
		const inaccessible = new Error('Node has no access to credential');
		await failBeforeRun('k-a', inaccessible);
		await failBeforeRun('k-b', inaccessible);
		expect(log.slice(2)).toEqual([
			'settled k-a not_created',
			'settled k-b not_created',
			'rewrite (outbox: empty)',
			// No run executed: the settlements go under the trigger's fixed write key.
			'emit k-write (no items) writes state',
		]);
		expect(reports).toEqual(['2: a,b (Node has no access to credential)']);
	});

	test('a run n8n said it could not start but holds running under its key (queue mode: enqueued, then its hooks failed) is settled started; one n8n holds as new, or none, not run', async () => {
		const { context, log, staticData, failBeforeRun } = n8n2Context();
		const statuses: Record<string, string> = { 'k-a': 'running', 'k-b': 'new' };
		const asked = jest
			.spyOn(door, 'executionStatusByKey')
			.mockImplementation(async (key) => (key in statuses ? { status: statuses[key] } : undefined));
		try {
			const { emitter: runs } = emitter(context, log, staticData);
			await runs.emit(['a', 'b', 'c'].map((name) => ({ key: `k-${name}`, run: name })));
			const poolFailed = new Error('timeout exceeded when trying to connect');
			for (const key of ['k-a', 'k-b', 'k-c']) await failBeforeRun(key, poolFailed);
			await new Promise((resolve) => setImmediate(resolve));
			expect(log.filter((line) => line.startsWith('settled'))).toEqual([
				'settled k-a started',
				'settled k-b not_created',
				'settled k-c not_created',
			]);
			expect(asked.mock.calls.map(([key]) => key)).toEqual(['k-a', 'k-b', 'k-c']);
		} finally {
			asked.mockRestore();
		}
	});

	test(`a long outbox goes out in chunks of ${EMIT_CHUNK}: before each, n8n writes the state and the emitter waits for that write`, async () => {
		const { context, log, staticData } = n8n2Context({ writesFinish: false });
		const { emitter: runs } = emitter(context, log, staticData);
		staticData.__dataChanged = true;
		const names = Array.from({ length: 2 * EMIT_CHUNK + 1 }, (_, i) => `r${i}`);
		const emitting = runs.emit(names.map((name) => ({ key: `k-${name}`, run: name })));
		const written = async () => {
			await new Promise((resolve) => setTimeout(resolve, 20));
			staticData.__dataChanged = false;
		};
		await new Promise((resolve) => setImmediate(resolve));
		expect(log).toEqual(['emit k-r0 (r0) writes state']);
		await written();
		await new Promise((resolve) => setTimeout(resolve, 20));
		const emits = () => log.filter((line) => line.startsWith('emit')).length;
		expect(emits()).toBe(EMIT_CHUNK + 1); // r0..r9, then r10, whose emit writes the state
		expect(log.at(-1)).toBe(`emit k-r${EMIT_CHUNK} (r${EMIT_CHUNK}) writes state`);
		await written();
		await new Promise((resolve) => setTimeout(resolve, 20));
		expect(emits()).toBe(2 * EMIT_CHUNK + 1);
		await emitting;
	});

	test("not chunked (a trigger whose window bounds its runs in flight): after the first emit and n8n's write of the state it carries, the rest go out with no write between them", async () => {
		const { context, log, staticData } = n8n2Context({ writesFinish: false });
		const { emitter: runs } = emitter(context, log, staticData, undefined, {
			chunked: false,
		});
		staticData.__dataChanged = true;
		// Keys of their own: runs of other tests are still in flight in this process (inFlight).
		const names = Array.from({ length: 3 * EMIT_CHUNK }, (_, i) => `u${i}`);
		const emitting = runs.emit(names.map((name) => ({ key: `k-${name}`, run: name })));
		await new Promise((resolve) => setImmediate(resolve));
		expect(log).toEqual(['emit k-u0 (u0) writes state']);
		await new Promise((resolve) => setTimeout(resolve, 20));
		expect(log).toHaveLength(1);
		staticData.__dataChanged = false;
		await emitting;
		expect(log.filter((line) => line.startsWith('emit'))).toHaveLength(names.length);
		expect(log.filter((line) => line.includes('writes state'))).toHaveLength(1);
		expect(log.some((line) => line.startsWith('rewrite'))).toBe(false);
	});

	test('runs taken one call at a time (as a window refills) while n8n writes the state: one write, the next waits for it', async () => {
		const { context, log, staticData } = n8n2Context({ writesFinish: false });
		const { emitter: runs } = emitter(context, log, staticData, undefined, {
			chunked: false,
		});
		staticData.__dataChanged = true;
		const one = async (name: string) =>
			await runs.emitTaken(() => [{ key: `k-${name}`, run: name }]);
		void one('w0');
		const second = one('w1');
		const third = one('w2');
		await new Promise((resolve) => setTimeout(resolve, 20));
		expect(log).toEqual(['emit k-w0 (w0) writes state']);
		staticData.__dataChanged = false;
		await Promise.all([second, third]);
		expect(log).toEqual(['emit k-w0 (w0) writes state', 'emit k-w1 (w1)', 'emit k-w2 (w2)']);
	});
});
