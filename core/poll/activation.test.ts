import type { OpMemory } from '../connectors/types';
import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import { quietOutlet, quietPorts, recordingPorts } from '../../test/support/pollPorts';
import {
	ATTEMPT_END_RECHECK_MS,
	PollActivation,
	type PollActivationPorts,
	type PollActivationSettings,
	type PollRunToEmit,
	type PollSource,
	type PollTriggerState,
	type RunEnd,
} from './activation';
import { PollExpressions } from './expressions';
import type { DeadLetter } from './retries';
import type { SilenceNews } from './silence';
import { ARMED_RUNS_MAX } from './runStage';

/** An op that lists what `list` gives, leaving `memory`. */
function listing(list: () => unknown[], memory: OpMemory = {}): PollSource {
	return {
		op: {
			name: 'test.list',
			description: 'Lists what the test gives',
			transport: 'http',
			check: () => undefined,
			run: async () => ({ kind: 'data', data: list(), memory }),
		},
		args: {},
		timeoutMs: 1_000,
	};
}

/** Unique keys by `id`, every item of the first poll started. */
function settings(source: PollSource, clock: FakeClock): PollActivationSettings {
	return {
		source,
		dedupe: { kind: 'unique' },
		firstPoll: { mode: 'all' },
		maxRemembered: 0,
		maxRunsInFlight: ARMED_RUNS_MAX,
		expressions: new PollExpressions({ id: 'id' }),
		oneRunPerItem: true,
		keyPrefix: 'poll:wf:node:',
		clock,
	};
}

/**
 * A live activation on a fake clock whose op lists `listed` (or is `listed`, a source of its own);
 * records writes and emits.
 */
function live(listed: (() => unknown[]) | PollSource, saved: PollTriggerState = { v: 1 }) {
	const clock = new FakeClock();
	const writes: PollTriggerState[] = [];
	const emitted: PollRunToEmit[] = [];
	const source = typeof listed === 'function' ? listing(listed) : listed;
	const activation = new PollActivation(saved, settings(source, clock), {
		intervalMs: 5_000,
	});
	const ports: PollActivationPorts = recordingPorts(emitted, (state) =>
		writes.push(structuredClone(state)),
	);
	return { activation, ports, clock, writes, emitted };
}

/**
 * Settles the runs `harness` emitted, in emit order, with what `end` says (undefined: left going),
 * including those each settlement lets out (the window refills as runs end).
 */
function settleAsEmitted(
	{ activation, emitted }: ReturnType<typeof live>,
	end: (n: number, run: PollRunToEmit) => RunEnd | undefined,
): void {
	for (let n = 0; n < emitted.length; n++) {
		const settlement = end(n, emitted[n]);
		if (settlement) activation.settled(emitted[n].key!, emitted[n].run, settlement);
	}
}

describe('PollActivation', () => {
	it('a poll writes its runs into the outbox before emitting them; a run n8n could not create is rolled back and comes back under a new key at the next poll', async () => {
		const { activation, ports, clock, writes, emitted } = live(() => [{ id: 'a' }, { id: 'b' }]);
		await activation.start(ports, []);
		expect(emitted.map((run) => run.run.keys)).toEqual([['a'], ['b']]);
		const written = writes.at(-1)!;
		expect(written.outbox?.map((entry) => entry.key)).toEqual(emitted.map((run) => run.key));
		expect(written.ledger?.map((entry) => entry.outcome)).toEqual(['emitted', 'emitted']);

		const [a, b] = emitted;
		expect(
			activation.settled(a.key!, a.run, { settlement: 'started', result: {} }),
		).toBeUndefined();
		expect(
			activation.settled(b.key!, b.run, {
				settlement: 'not_created',
				error: new Error('database is locked'),
			}),
		).toEqual(['b']);
		activation.write();
		expect(writes.at(-1)!.outbox).toEqual([]);
		expect(writes.at(-1)!.ledger?.map((entry) => entry.outcome)).toEqual([
			'ended: unknown',
			'not run: rolled back',
		]);

		await clock.advance(5_000);
		const again = emitted.slice(2);
		expect(again.map((run) => run.run.keys)).toEqual([['b']]);
		expect(again[0].key).not.toBe(b.key);
		activation.stop();
	});

	it('Max Runs in Flight: the first poll hands n8n that many runs, the next as each ends; 0 or a fraction refuses activation, naming the option and the value', async () => {
		const clock = new FakeClock();
		const source = listing(() => [1, 2, 3, 4, 5].map((id) => ({ id })));
		const activation = new PollActivation(
			{ v: 1 },
			{ ...settings(source, clock), maxRunsInFlight: 2 },
			{ intervalMs: 5_000 },
		);
		const emitted: PollRunToEmit[] = [];
		await activation.start(recordingPorts(emitted), []);
		expect(emitted.map((run) => run.run.keys)).toEqual([[1], [2]]);
		activation.settled(emitted[0].key!, emitted[0].run, { settlement: 'started', result: {} });
		expect(emitted.map((run) => run.run.keys)).toEqual([[1], [2], [3]]);
		activation.stop();

		for (const value of [0, 2.5])
			expect(
				() => new PollActivation({ v: 1 }, { ...settings(source, clock), maxRunsInFlight: value }),
			).toThrow(`Invalid value ${value} for "«maxRunsInFlight»"`);
	});

	it("counts the op's memory in the static data every created run loads: a big one (sftp.list's files) arms fewer runs of a burst at once; Execute step gets it to preview with", async () => {
		// 100 MiB of memory: two runs' copies (2 loads each) fit in ARMED_COPIES_MAX_BYTES, a third does not.
		const opMemory = { seen: 'x'.repeat(100 * 1024 * 1024) };
		const clock = new FakeClock();
		const activation = new PollActivation(
			{ v: 1, opMemory },
			settings(
				listing(() => [1, 2, 3, 4, 5].map((id) => ({ id })), opMemory),
				clock,
			),
			{ intervalMs: 5_000 },
		);
		expect(activation.lastOpMemory).toBe(opMemory);
		const emitted: PollRunToEmit[] = [];
		let stored: PollTriggerState['outbox'];
		await activation.start(
			recordingPorts(emitted, (state) => {
				stored = state.outbox;
			}),
			[],
		);
		expect(emitted.map((run) => run.run.keys)).toEqual([[1], [2]]);
		// Every run of the burst is stored, none with its items: the other three go out as these settle.
		expect(stored?.map((entry) => entry.run.keys)).toEqual([[1], [2], [3], [4], [5]]);
		expect(stored?.every((entry) => entry.run.items === undefined)).toBe(true);
		activation.stop();
	});

	it("returns once the stored outbox's re-emit and the first poll are under way, without awaiting the re-emit (n8n 2.41 abandons a publication that takes over about 84 s); one-item runs stored without items go out from that poll under their keys, in order, none twice", async () => {
		// Before a crash: a burst of 300 runs, all stored armed, none settled.
		const burst = Array.from({ length: 300 }, (_, n) => ({ id: n }));
		const before = live(() => burst);
		await before.activation.start(before.ports, []);
		before.activation.stop();
		const stored = before.writes.at(-1)!;
		expect(stored.outbox?.filter((entry) => !entry.run.held)).toHaveLength(300);

		// After the restart: n8n is slow to create runs, so the re-emit takes as long as n8n likes.
		const clock = new FakeClock();
		let polls = 0;
		const source = listing(() => {
			polls++;
			return [...burst, { id: 'new' }];
		});
		const activation = new PollActivation(stored, settings(source, clock), { intervalMs: 5_000 });
		const emits: PollRunToEmit[][] = [];
		let release!: () => void;
		const slow = new Promise<void>((resolve) => (release = resolve));
		let returned = false;
		const started = activation
			.start(
				{
					...quietPorts,
					outlet: {
						...quietOutlet,
						write: () => undefined,
						emit: async (runs) => {
							emits.push([...runs]);
							await slow;
						},
						emitTaken: async (take) => void emits.push([...take()]),
					},
				},
				[],
			)
			.then(() => (returned = true));
		await flushPromises();
		expect(returned).toBe(true);
		expect(polls).toBe(1);
		// One-item runs are stored without their items: none is emitted again at activation; the first
		// poll emits them under their stored keys (restaged), in order, then the new item: the first
		// ARMED_RUNS_MAX at once, each of the rest as a run ends.
		const order = [...burst.map(({ id }) => [id]), ['new']];
		expect(emits.map((runs) => runs.map((run) => run.run.keys))).toEqual([
			order.slice(0, ARMED_RUNS_MAX),
		]);
		for (let n = 0; n < emits.flat().length; n++) {
			const { key, run } = emits.flat()[n];
			activation.settled(key!, run, { settlement: 'started', result: {} });
		}
		expect(emits.flat().map((run) => run.run.keys)).toEqual(order);
		expect(
			emits
				.flat()
				.slice(0, 300)
				.map((run) => run.key),
		).toEqual(stored.outbox!.map((entry) => entry.key));
		release();
		await started;
		activation.stop();
	});

	it('a crash mid-burst of 1,000 runs: every run is traceable by its key, and the runs to start again are exactly those in the Start Again list of Recent Starts, not the ones n8n could not create (their items came back by themselves)', async () => {
		const burst = Array.from({ length: 1_000 }, (_, n) => ({ id: `i${n}` }));
		const before = live(() => burst);
		await before.activation.start(before.ports, []);
		expect(before.emitted).toHaveLength(ARMED_RUNS_MAX);
		// Runs 0–599 ended, 600–699 n8n could not create (their execution may still exist: created,
		// then not marked running, so crashed at the restart); each frees room for the next, so
		// 700–749 were going when n8n died and 750–999 not emitted yet.
		settleAsEmitted(before, (n) =>
			n < 600
				? { settlement: 'started', result: {} }
				: n < 700
					? { settlement: 'not_created', error: new Error('SQLITE_BUSY: database is locked') }
					: undefined,
		);
		expect(before.emitted).toHaveLength(700 + ARMED_RUNS_MAX);
		before.activation.write();
		before.activation.stop();

		const after = live(() => burst, before.writes.at(-1)!);
		await after.activation.start(after.ports, []);
		await flushPromises();
		// The first poll plans, in the source's order, the rolled back items under the next attempt,
		// then the runs stored without items under their keys (restaged): n8n refuses those it had
		// (700–749: their executions exist) and creates the others.
		settleAsEmitted(after, (n, { key }) =>
			n >= 100 && n < 100 + ARMED_RUNS_MAX && !key!.includes('#')
				? { settlement: 'started' }
				: { settlement: 'started', result: {} },
		);
		const again = after.emitted.slice(0, 100);
		expect(again.map(({ run }) => run.keys[0])).toEqual(burst.slice(600, 700).map(({ id }) => id));
		for (const { key, run } of again) expect(key).toMatch(new RegExp(`:${run.keys[0]}#1$`));
		const reEmitted = after.emitted.slice(100);
		expect(reEmitted.map(({ run }) => run.keys[0])).toEqual(burst.slice(700).map(({ id }) => id));

		// Each crashed execution's key names its item; the summary lists exactly the runs whose end the
		// trigger never learnt (those going at the crash), none of the rolled back nor of those never
		// emitted before it.
		for (const { key, run } of reEmitted) expect(key).toMatch(new RegExp(`:${run.keys[0]}$`));
		const summary = after.activation.endUnknown()!;
		expect(summary.endUnknown).toBe(ARMED_RUNS_MAX);
		expect((JSON.parse(String(summary.itemKeys)) as string[]).sort()).toEqual(
			burst
				.slice(700, 700 + ARMED_RUNS_MAX)
				.map(({ id }) => id)
				.sort(),
		);
		expect(String(summary.note)).toMatch(/not listed here.*#<attempt>/s);
		after.activation.stop();
	});

	it("a poll is one write that stores every run of its burst without items; after a crash right after it, nothing is emitted at activation and the next poll emits each item still listed under its run's key, and one no longer listed not at all", async () => {
		let listed = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
		const first = live(() => listed);
		await first.activation.start(first.ports, []);
		expect(first.emitted.map((run) => run.run.keys)).toEqual([['a'], ['b'], ['c']]);
		// The write the burst's first emit carries (later ones only note the poll's outcome).
		const [written] = first.writes;
		expect(written.outbox?.map((entry) => entry.key)).toEqual(first.emitted.map((run) => run.key));
		expect(written.outbox?.every((entry) => entry.run.items === undefined)).toBe(true);
		first.activation.stop();

		// The crash: n8n may have created a's and b's runs, or not; the source drops c meanwhile.
		listed = [{ id: 'a' }, { id: 'b' }];
		const infos: string[] = [];
		const after = live(() => listed, structuredClone(written));
		await after.activation.start(
			{ ...after.ports, outlet: { ...after.ports.outlet, info: (message) => infos.push(message) } },
			[],
		);
		expect(infos.join('\n')).toContain(
			'3 run(s) of a burst were not known to have started before the last stop',
		);
		expect(after.emitted).toEqual([]);
		// The next poll: a and b go out under the keys they had (n8n refuses those it created); c, no
		// longer listed, is not started.
		await after.clock.advance(5_000);
		expect(after.emitted.map((run) => [run.key, run.run.keys])).toEqual([
			[first.emitted[0].key, ['a']],
			[first.emitted[1].key, ['b']],
		]);
		// Recent Starts keeps c's run as one whose end is unknown.
		const c = first.emitted[2].key!;
		expect(after.writes.at(-1)!.ledger?.find((entry) => entry.key === c)?.outcome).toBe('emitted');
		for (const run of after.emitted)
			after.activation.settled(run.key!, run.run, { settlement: 'started', result: {} });
		// The keys are used up: a later poll listing c again starts it (never created) under its key,
		// and starts a and b no more.
		listed = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
		await after.clock.advance(5_000);
		expect(after.emitted.slice(2).map((run) => [run.key, run.run.keys])).toEqual([[c, ['c']]]);
		after.activation.stop();
	});

	it("a run restaged at one activation whose item is listed again only after another crash is still refused as 'existed at activation': Recent Starts keeps it in the Start Again list", async () => {
		const first = live(() => [{ id: 'a' }]);
		await first.activation.start(first.ports, []);
		first.activation.stop();
		const [a] = first.emitted;
		// The crash: a's run is restaged at the next activation, and n8n dies again before a poll
		// lists a (the chaos harness holds the sources' answers back after a restart).
		const second = live(() => [], structuredClone(first.writes[0]));
		await second.activation.start(second.ports, []);
		second.activation.stop();
		const third = live(() => [{ id: 'a' }], structuredClone(second.writes.at(-1)!));
		await third.activation.start(third.ports, []);
		await third.clock.advance(5_000);
		expect(third.emitted.map((run) => run.key)).toEqual([a.key]);
		// n8n refuses it: its execution exists (crashed at the first crash, or ended before it).
		third.activation.settled(a.key!, a.run, { settlement: 'started' });
		third.activation.write();
		expect(third.writes.at(-1)!.ledger?.find((entry) => entry.key === a.key)?.outcome).toBe(
			'existed at activation',
		);
		expect(JSON.parse(String(third.activation.endUnknown()!.itemKeys))).toEqual(['a']);
		third.activation.stop();
	});

	it("a run restaged after a crash is read again from a source that keeps a read position in the op's memory (sql.query's keyset, sftp.list, HTTP validators): the position is forgotten with the items", async () => {
		const rows = [{ id: 'a' }, { id: 'b' }];
		const reads: number[] = [];
		// Lists the rows after the position its memory holds, and moves the position past them.
		const keyset: PollSource = {
			op: {
				name: 'test.keyset',
				description: 'Lists the rows after its position',
				transport: 'http',
				check: () => undefined,
				run: async (_args, { memory }) => {
					const after = Number(memory.position ?? 0);
					reads.push(after);
					return {
						kind: 'data',
						data: rows.slice(after),
						memory: { position: String(rows.length) },
					};
				},
			},
			args: {},
			timeoutMs: 1_000,
		};
		const start = async (saved: PollTriggerState) => {
			const started = live(keyset, saved);
			await started.activation.start(started.ports, []);
			return started;
		};
		const first = await start({ v: 1 });
		expect(first.emitted.map((run) => run.run.keys)).toEqual([['a'], ['b']]);
		expect(first.writes[0].opMemory).toEqual({ position: '2' });
		first.activation.stop();
		// The crash right after the poll's write: n8n may not have created either run.
		const after = await start(structuredClone(first.writes[0]));
		await after.clock.advance(5_000);
		expect(reads).toEqual([0, 0]);
		expect(after.emitted.map((run) => run.key)).toEqual(first.emitted.map((run) => run.key));
		after.activation.stop();
	});

	it('a one-item run this process emitted and n8n has not settled (a re-publish) is not restaged: it stays in the outbox, settles with its run, and a poll listing its item again starts nothing', async () => {
		const first = live(() => [{ id: 'a' }]);
		await first.activation.start(first.ports, []);
		first.activation.stop();
		const [a] = first.emitted;
		const after = live(() => [{ id: 'a' }], structuredClone(first.writes[0]));
		await after.activation.start(
			{ ...after.ports, outlet: { ...after.ports.outlet, inFlight: (key) => key === a.key } },
			[],
		);
		// Handed to the emitter under its key, which settles it with the run in flight
		// (nodes/shared/emitRuns.ts): not forgotten, so the next poll does not plan it again.
		expect(after.emitted.map((run) => run.key)).toEqual([a.key]);
		after.activation.settled(a.key!, a.run, { settlement: 'started', result: {} });
		after.activation.write();
		expect(after.writes.at(-1)!.outbox).toEqual([]);
		await after.clock.advance(5_000);
		expect(after.emitted).toHaveLength(1);
		after.activation.stop();
	});

	it('Remember at Most below the folder: files a poll lists as still being written (sftp.list after a re-publish) count as listed, so the cap forgets none of them and none starts again once finished', async () => {
		const clock = new FakeClock();
		const files = [{ name: 'a' }, { name: 'b' }, { name: 'c' }];
		// Finished at the first poll; seen anew, so still uploading, at the second; finished again.
		const answers = [
			{ files, uploading: [] },
			{ files: [], uploading: files },
			{ files, uploading: [] },
		];
		let polls = 0;
		const source: PollSource = {
			op: {
				name: 'test.files',
				description: 'Lists files, finished or still uploading',
				transport: 'sftp',
				check: () => undefined,
				run: async () => ({ kind: 'data', data: answers[Math.min(polls++, 2)], memory: {} }),
			},
			args: {},
			timeoutMs: 1_000,
		};
		const emitted: PollRunToEmit[] = [];
		const activation = new PollActivation(
			{ v: 1 },
			{
				...settings(source, clock),
				maxRemembered: 1,
				expressions: new PollExpressions({ items: 'files', id: 'name' }),
			},
			{ intervalMs: 5_000 },
		);
		await activation.start(recordingPorts(emitted), []);
		expect(emitted.map(({ run }) => run.keys)).toEqual([['a'], ['b'], ['c']]);
		await clock.advance(5_000);
		expect(activation.store.size).toBe(3);
		await clock.advance(5_000);
		expect(polls).toBe(3);
		expect(emitted).toHaveLength(3);
		activation.stop();
	});

	it('refuses a saved state of another format version, naming the version', () => {
		expect(() => live(() => [], { v: 2 } as unknown as PollTriggerState)).toThrow(
			"The Poll Trigger's saved state has format version 2, which this version of the node cannot read",
		);
	});
});

describe('PollActivation, When a Run Fails: Start the Item Again', () => {
	const retry = { maxAttempts: 3, firstDelayMs: 60_000, factor: 2, maxDelayMs: 3_600_000 };
	const failed = (message = 'partner down'): RunEnd => ({
		settlement: 'started',
		result: { status: 'error', errorMessage: message },
	});
	const succeeded: RunEnd = { settlement: 'started', result: { status: 'success' } };

	/** A live activation with the retry policy, on `clock`; records writes, emits and dead letters. */
	function retrying(
		listed: () => unknown[],
		saved: PollTriggerState = { v: 1 },
		clock = new FakeClock(),
		policy: PollActivationSettings['retry'] | 'leave it failed' = retry,
		runStatus?: PollActivationPorts['runStatus'],
	) {
		const writes: PollTriggerState[] = [];
		const emitted: PollRunToEmit[] = [];
		const dead: DeadLetter[] = [];
		const activation = new PollActivation(
			saved,
			{
				...settings(listing(listed), clock),
				...(policy !== 'leave it failed' && { retry: policy }),
			},
			{ intervalMs: 3_600_000 },
		);
		const ports: PollActivationPorts = {
			...recordingPorts(emitted, (state) => writes.push(structuredClone(state))),
			onDeadLetter: (letter) => dead.push(letter),
			...(runStatus && { runStatus }),
		};
		const settle = (run: PollRunToEmit, end: RunEnd) => activation.settled(run.key!, run.run, end);
		return { activation, ports, clock, writes, emitted, dead, settle };
	}

	it("starts a failed run's item again after the backoff, its attempt on the run, until one succeeds; the wait and the attempt are in the state the run's settlement and emit write", async () => {
		const t = retrying(() => [{ id: 'a' }]);
		await t.activation.start(t.ports, []);
		const [first] = t.emitted;
		t.settle(first, failed());
		t.activation.write(); // the emitter's settlement write
		expect(t.writes.at(-1)!.retries?.waiting).toEqual([
			expect.objectContaining({
				key: first.key,
				keys: ['a'],
				failed: 1,
				lastError: 'partner down',
			}),
		]);
		await t.clock.advance(59_999);
		expect(t.emitted).toHaveLength(1);
		const writesBefore = t.writes.length;
		await t.clock.advance(1);
		const [, second] = t.emitted;
		expect(second).toEqual({
			key: `${first.key}/attempt2`,
			run: { items: [{ id: 'a' }], keys: ['a'], attempt: 2 },
		});
		// One write, carried by the attempt's emit, records it in flight.
		expect(t.writes).toHaveLength(writesBefore + 1);
		expect(t.writes.at(-1)!.retries?.waiting?.[0].emitted).toBe(second.key);
		t.settle(second, failed());
		await t.clock.advance(120_000);
		const third = t.emitted[2];
		expect(third.key).toBe(`${first.key}/attempt3`);
		t.settle(third, succeeded);
		t.activation.write();
		expect(t.writes.at(-1)!.retries).toBeUndefined();
		expect(t.activation.recentStarts().map((entry) => entry.outcome)).toEqual([
			'ended: success',
			'ended: error',
			'ended: error',
		]);
		await t.clock.advance(10 * 3_600_000);
		expect(t.emitted).toHaveLength(3);
		expect(t.dead).toEqual([]);
		await t.activation.stop();
	});

	it('after Max Attempts failed runs the item is a dead letter, reported once; Start Again takes it back, and the next poll that lists it starts it', async () => {
		const t = retrying(() => [{ id: 'a' }]);
		await t.activation.start(t.ports, []);
		t.settle(t.emitted[0], failed('1'));
		await t.clock.advance(60_000);
		t.settle(t.emitted[1], failed('2'));
		await t.clock.advance(120_000);
		t.settle(t.emitted[2], failed('3'));
		expect(t.dead).toEqual([
			{ key: t.emitted[0].key, keys: ['a'], attempts: 3, lastError: '3', at: t.clock.now() },
		]);
		expect(t.activation.deadLetters()).toEqual(t.dead);
		t.activation.write();
		await t.activation.stop();

		const after = retrying(() => [{ id: 'a' }], t.writes.at(-1), t.clock);
		await after.activation.start(after.ports, ['a']);
		await after.clock.advance(0);
		expect(after.activation.deadLetters()).toEqual([]);
		expect(after.emitted.map((run) => run.run.keys)).toEqual([['a']]);
		expect(after.emitted[0].key).not.toBe(t.emitted[0].key);
		await after.activation.stop();
	});

	it('a run that succeeds, waits or is cancelled is not failed; a run n8n could not create is rolled back as before', async () => {
		const t = retrying(() => [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
		await t.activation.start(t.ports, []);
		const [a, b, c, d] = t.emitted;
		t.settle(a, succeeded);
		t.settle(b, { settlement: 'started', result: { status: 'waiting' } });
		t.settle(c, { settlement: 'started', result: { status: 'canceled' } });
		t.settle(d, { settlement: 'not_created', error: new Error('locked') });
		t.activation.write();
		expect(t.writes.at(-1)!.retries).toBeUndefined();
		await t.clock.advance(3_600_000);
		// The next poll: only d, rolled back, under a new key.
		expect(t.emitted.slice(4).map((run) => run.run.keys)).toEqual([['d']]);
		await t.activation.stop();
	});

	it('a crashed run is failed too', async () => {
		const t = retrying(() => [{ id: 'a' }]);
		await t.activation.start(t.ports, []);
		t.settle(t.emitted[0], { settlement: 'started', result: { status: 'crashed' } });
		await t.clock.advance(60_000);
		expect(t.emitted[1].run.attempt).toBe(2);
		await t.activation.stop();
	});

	it('Leave It Failed (no policy): a failed run is left as it is', async () => {
		const t = retrying(() => [{ id: 'a' }], { v: 1 }, new FakeClock(), 'leave it failed');
		await t.activation.start(t.ports, []);
		t.settle(t.emitted[0], failed());
		t.activation.write();
		expect(t.writes.at(-1)!.retries).toBeUndefined();
		await t.clock.advance(3_600_000 - 1);
		expect(t.emitted).toHaveLength(1);
		await t.activation.stop();
	});

	it('a stop between attempts (kill -9) loses nothing: the next activation starts the attempt when it is due, and no item goes past Max Attempts', async () => {
		const clock = new FakeClock();
		const t = retrying(() => [{ id: 'a' }, { id: 'b' }], { v: 1 }, clock);
		await t.activation.start(t.ports, []);
		t.settle(t.emitted[0], failed());
		t.settle(t.emitted[1], failed());
		t.activation.write();
		const stored = structuredClone(t.writes.at(-1)!);
		await t.activation.stop();

		clock.jumpTo(clock.now() + 30_000);
		const after = retrying(() => [{ id: 'a' }, { id: 'b' }], stored, clock);
		await after.activation.start(after.ports, []);
		expect(after.emitted).toEqual([]);
		await clock.advance(30_000);
		expect(after.emitted.map((run) => [run.run.keys, run.run.attempt])).toEqual([
			[['a'], 2],
			[['b'], 2],
		]);
		await after.activation.stop();
	});

	/** Two items, each with its second attempt in flight when n8n is killed: the state stored then. */
	async function killedDuringAttempts(clock: FakeClock, maxAttempts = 3) {
		const policy = { ...retry, maxAttempts };
		const t = retrying(() => [{ id: 'a' }, { id: 'b' }], { v: 1 }, clock, policy);
		await t.activation.start(t.ports, []);
		t.settle(t.emitted[0], failed());
		t.settle(t.emitted[1], failed());
		await clock.advance(60_000);
		expect(t.emitted.slice(2).map((run) => run.run.attempt)).toEqual([2, 2]);
		const stored = structuredClone(t.writes.at(-1)!);
		await t.activation.stop();
		return { stored, policy, attempts: t.emitted.slice(2) };
	}

	it('an attempt in flight at a kill -9 is emitted again; n8n refuses it, and its status of that run (crashed) makes it a failed attempt: retried after its backoff, or a dead letter at Max Attempts, never forgotten', async () => {
		const clock = new FakeClock();
		const { stored, policy, attempts } = await killedDuringAttempts(clock);
		const asked: string[] = [];
		const runStatus = async (key: string) => {
			asked.push(key);
			return key === attempts[0].key ? { status: 'crashed' } : { status: 'success' };
		};
		const after = retrying(() => [{ id: 'a' }, { id: 'b' }], stored, clock, policy, runStatus);
		await after.activation.start(after.ports, []);
		expect(after.emitted.map((run) => run.key)).toEqual(attempts.map((run) => run.key));
		// Both refused as duplicates: they existed.
		after.settle(after.emitted[0], { settlement: 'started' });
		after.settle(after.emitted[1], { settlement: 'started' });
		await flushPromises();
		expect(asked).toEqual(attempts.map((run) => run.key));
		expect(after.writes.at(-1)!.retries?.waiting).toEqual([
			expect.objectContaining({
				keys: ['a'],
				failed: 2,
				lastError: 'the run ended with status crashed',
			}),
		]);
		expect(
			after.activation
				.recentStarts()
				.slice(0, 2)
				.map((entry) => entry.outcome),
		).toEqual(['ended: success', 'ended: crashed']);
		await clock.advance(120_000 - 1);
		expect(after.emitted).toHaveLength(2);
		await clock.advance(1);
		expect(after.emitted.slice(2).map((run) => [run.run.keys, run.run.attempt])).toEqual([
			[['a'], 3],
		]);
		await after.activation.stop();

		// Max Attempts 2: the crashed second run was the last, a dead letter.
		const last = await killedDuringAttempts(clock, 2);
		const dead = retrying(
			() => [],
			last.stored,
			clock,
			last.policy,
			async () => ({
				status: 'crashed',
			}),
		);
		await dead.activation.start(dead.ports, []);
		for (const run of dead.emitted) dead.settle(run, { settlement: 'started' });
		await flushPromises();
		expect(dead.dead.map((letter) => [letter.keys, letter.attempts])).toEqual([
			[['a'], 2],
			[['b'], 2],
		]);
		expect(dead.writes.at(-1)!.retries?.waiting).toBeUndefined();
		await dead.activation.stop();
	});

	it('an attempt n8n still runs after the restart (or a question n8n could not answer) is asked about again until it ends; one n8n holds no run of (pruned), or where n8n cannot be asked, ends unknown, the item out of the book', async () => {
		const clock = new FakeClock();
		const { stored, policy, attempts } = await killedDuringAttempts(clock);
		const answers = [{ status: 'running' }, new Error('database is locked'), { status: 'error' }];
		const runStatus = async (key: string) => {
			if (key !== attempts[0].key) return undefined;
			const answer = answers.shift()!;
			if (answer instanceof Error) throw answer;
			return answer;
		};
		const after = retrying(() => [{ id: 'a' }, { id: 'b' }], stored, clock, policy, runStatus);
		await after.activation.start(after.ports, []);
		after.settle(after.emitted[0], { settlement: 'started' });
		after.settle(after.emitted[1], { settlement: 'started' });
		await flushPromises();
		// b: no run under its key; a: still running, in flight in the book.
		expect(after.writes.at(-1)!.retries?.waiting).toEqual([
			expect.objectContaining({ keys: ['a'], failed: 1, emitted: attempts[0].key }),
		]);
		await clock.advance(ATTEMPT_END_RECHECK_MS);
		expect(after.writes.at(-1)!.retries?.waiting?.[0]).toMatchObject({ failed: 1 });
		await clock.advance(ATTEMPT_END_RECHECK_MS);
		expect(after.writes.at(-1)!.retries?.waiting).toEqual([
			expect.objectContaining({ keys: ['a'], failed: 2 }),
		]);
		expect(after.activation.endUnknown()?.endUnknown).toBe(1);
		await after.activation.stop();

		const unasked = retrying(() => [], stored, clock, policy);
		await unasked.activation.start(unasked.ports, []);
		for (const run of unasked.emitted) unasked.settle(run, { settlement: 'started' });
		unasked.activation.write();
		expect(unasked.writes.at(-1)!.retries).toBeUndefined();
		expect(unasked.activation.endUnknown()?.endUnknown).toBe(2);
		await unasked.activation.stop();
	});

	it('an attempt n8n could not create goes out again after its backoff, under a key of its own', async () => {
		const t = retrying(() => [{ id: 'a' }]);
		await t.activation.start(t.ports, []);
		t.settle(t.emitted[0], failed());
		await t.clock.advance(60_000);
		t.settle(t.emitted[1], { settlement: 'not_created', error: new Error('locked') });
		await t.clock.advance(60_000);
		expect(t.emitted[2]).toMatchObject({
			key: `${t.emitted[0].key}/attempt2.1`,
			run: { attempt: 2 },
		});
		await t.activation.stop();
	});

	it('at most Max Runs in Flight attempts go out at once; the rest as attempts settle', async () => {
		const clock = new FakeClock();
		const activation = new PollActivation(
			{ v: 1 },
			{
				...settings(
					listing(() => [1, 2, 3].map((id) => ({ id }))),
					clock,
				),
				retry,
				maxRunsInFlight: 2,
			},
			{ intervalMs: 3_600_000 },
		);
		const emitted: PollRunToEmit[] = [];
		await activation.start(recordingPorts(emitted), []);
		for (let n = 0; n < 3; n++) {
			activation.settled(emitted[n].key!, emitted[n].run, failed());
			await clock.advance(0);
		}
		await clock.advance(60_000);
		const attempts = () => emitted.filter((run) => run.run.attempt !== undefined);
		expect(attempts().map((run) => run.run.keys)).toEqual([[1], [2]]);
		activation.settled(attempts()[0].key!, attempts()[0].run, succeeded);
		await clock.advance(0);
		expect(attempts().map((run) => run.run.keys)).toEqual([[1], [2], [3]]);
		await activation.stop();
	});

	it('refuses a policy out of range, naming the field', () => {
		expect(
			() =>
				new PollActivation(
					{ v: 1 },
					{
						...settings(
							listing(() => []),
							new FakeClock(),
						),
						retry: { ...retry, maxAttempts: 0 },
					},
				),
		).toThrow('Invalid value 0 for "«maxAttempts»"');
	});
});

describe('PollActivation, Alert When Nothing New For', () => {
	it('a source that lists nothing new for that long is reported once, the state stored at once; new items again are reported once', async () => {
		const clock = new FakeClock();
		let listed: unknown[] = [{ id: 'a' }];
		const activation = new PollActivation(
			{ v: 1 },
			{
				...settings(
					listing(() => listed),
					clock,
				),
				silenceAfterMs: 60_000,
			},
			{ intervalMs: 20_000 },
		);
		const news: SilenceNews[] = [];
		const writes: PollTriggerState[] = [];
		let stored = 0;
		await activation.start(
			{
				...recordingPorts([], (state) => writes.push(structuredClone(state)), {
					storeNow: () => stored++,
				}),
				onSilence: (n) => news.push(n),
			},
			[],
		);
		expect(writes.at(-1)!.silence).toEqual({ lastNewAt: clock.now() });
		const start = clock.now();
		await clock.advance(40_000);
		expect(news).toEqual([]);
		await clock.advance(20_000);
		expect(news.map((n) => n.kind)).toEqual(['silent']);
		expect(writes.at(-1)!.silence).toEqual({ lastNewAt: start, reported: true });
		expect(stored).toBe(1);
		await clock.advance(60_000);
		expect(news).toHaveLength(1);
		listed = [{ id: 'a' }, { id: 'b' }];
		await clock.advance(20_000);
		expect(news.map((n) => n.kind)).toEqual(['silent', 'back']);
		expect(writes.at(-1)!.silence).toEqual({ lastNewAt: clock.now() });
		await activation.stop();
	});

	it('off by default: no silence state', async () => {
		const t = live(() => []);
		await t.activation.start(t.ports, []);
		expect(t.writes.at(-1)!.silence).toBeUndefined();
		await t.activation.stop();
	});
});
