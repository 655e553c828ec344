import { ConfigError } from '../configError';
import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import { recordingPorts } from '../../test/support/pollPorts';
import {
	PollActivation,
	type PollActivationPorts,
	type PollRunToEmit,
	type PollTriggerState,
	savedHistoryStore,
} from './activation';
import type { FirstPollPolicy, SavedDedupeState } from './dedupe';
import { PollExpressions } from './expressions';
import {
	type HistoryCheckpoint,
	type HistoryTable,
	historyTableKey,
	type SavedHistory,
} from './historyStore';
import { loadDedupeStore } from './kinds';

/** A history table in memory, as nodes/shared/historyTable.ts keeps one in PostgreSQL. */
class MemoryTable implements HistoryTable {
	readonly stores = new Map<string, SavedHistory>();
	saves: HistoryCheckpoint[] = [];
	failing = false;
	/** Set: each save takes this many ms (of real time), as a database's round trips do. */
	slowMs = 0;

	async load(store: string): Promise<SavedHistory | undefined> {
		const saved = this.stores.get(store);
		return saved && structuredClone(saved);
	}

	async save(store: string, checkpoint: HistoryCheckpoint): Promise<void> {
		// A turn of real I/O, as a database's answer takes.
		await new Promise((resolve) => setImmediate(resolve));
		if (this.slowMs > 0) await new Promise((resolve) => setTimeout(resolve, this.slowMs));
		if (this.failing) throw new Error('connection refused');
		const chunks = [...(this.stores.get(store)?.chunks ?? [])];
		for (const [index, chunk] of checkpoint.changed) chunks[index] = chunk;
		chunks.length = checkpoint.count;
		if (chunks.some((chunk) => chunk === undefined)) throw new Error('a gap in the chunks');
		this.stores.set(store, {
			seq: checkpoint.seq,
			state: structuredClone(checkpoint.state),
			chunks,
		});
		this.saves.push(structuredClone(checkpoint));
	}
}

const keyed = (ids: string[]) => ids.map((id, index) => ({ item: { id }, key: id, index }));
const now = Date.UTC(2026, 11, 2);

describe('the history table beside static data (historyStore.ts)', () => {
	it('a store whose records a table holds writes no records to static data, only the changes since its checkpoint; the table and that journal give back the same history', async () => {
		const table = new MemoryTable();
		const { store } = loadDedupeStore({
			dedupe: { kind: 'unique' },
			historyTable: { base: undefined },
		});
		store.commit(store.plan(keyed(['a', 'b']), now), now, { keyPrefix: 'p:' });
		// Not in the table yet: static data holds the records themselves.
		expect(store.serialize().entries).toBeDefined();
		const first = store.historyCheckpoint()!;
		await table.save('s', first.checkpoint);
		first.saved();
		expect(store.serialize()).not.toHaveProperty('entries');
		expect(store.serialize().history).toEqual({ from: 2, journal: [] });
		expect(store.historyCheckpoint()).toBeUndefined();

		store.commit(store.plan(keyed(['a', 'b', 'c']), now), now, { keyPrefix: 'p:' });
		const saved = store.serialize();
		expect(saved.history?.journal).toHaveLength(1);
		expect(JSON.stringify(saved).length).toBeLessThan(300);

		// Reloaded before the next checkpoint: the table's records and the journal's one change.
		const reloaded = loadDedupeStore(
			{ dedupe: { kind: 'unique' }, historyTable: { base: await table.load('s') } },
			structuredClone(saved),
		).store;
		expect(reloaded.size).toBe(3);
		expect(
			reloaded.plan(keyed(['a', 'b', 'c', 'd']), now).candidates.map((c) => c.verdict),
		).toEqual(['seen', 'seen', 'seen', 'new']);
		// Its first checkpoint writes only the chunk that changed.
		const next = reloaded.historyCheckpoint()!;
		expect(next.checkpoint).toMatchObject({ seq: 3, count: 1 });
		expect(next.checkpoint.changed.map(([index]) => index)).toEqual([0]);
	});

	it('a checkpoint newer than the stored static data (n8n had not stored the write after it) is taken with its own state: the generation never goes back', async () => {
		const table = new MemoryTable();
		const { store } = loadDedupeStore({
			dedupe: { kind: 'time_window', ttlMs: 60_000 },
			historyTable: { base: undefined },
		});
		store.commit(store.plan(keyed(['a']), now), now, { keyPrefix: 'p:' });
		const first = store.historyCheckpoint()!;
		await table.save('s', first.checkpoint);
		first.saved();
		const stored = structuredClone(store.serialize());
		// Two more polls and their checkpoint; the static data written after them is lost.
		store.commit(store.plan(keyed(['b']), now), now, { keyPrefix: 'p:' });
		store.commit(store.plan(keyed(['c']), now), now, { keyPrefix: 'p:' });
		const later = store.historyCheckpoint()!;
		await table.save('s', later.checkpoint);
		later.saved();

		const reloaded = loadDedupeStore(
			{
				dedupe: { kind: 'time_window', ttlMs: 60_000 },
				historyTable: { base: await table.load('s') },
			},
			stored,
		).store;
		expect(reloaded.size).toBe(3);
		expect(reloaded.serialize().generation).toBe(3);
		expect(reloaded.serialize().history).toEqual({ from: 3, journal: [] });
	});

	it('a table that lost the changes static data already dropped, or holds no checkpoint at all, refuses to load rather than forget keys', async () => {
		const saved: SavedDedupeState = {
			v: 1,
			kind: 'unique',
			id: 'x',
			fresh: false,
			history: { from: 5, journal: [] },
		};
		expect(() =>
			loadDedupeStore({ dedupe: { kind: 'unique' }, historyTable: { base: undefined } }, saved),
		).toThrow(/the table has no checkpoint of this store/);
		expect(() =>
			loadDedupeStore(
				{
					dedupe: { kind: 'unique' },
					historyTable: { base: { seq: 4, state: {}, chunks: [] } },
				},
				saved,
			),
		).toThrow(/holds 4 changes, but static data's journal holds changes 5 to 5/);
	});

	it('History Store set back to Static Data while the table holds the history refuses activation, naming the field and the value', () => {
		const saved: SavedDedupeState = {
			v: 1,
			kind: 'changed',
			id: 'x',
			fresh: false,
			history: { from: 0, journal: [] },
		};
		let error: unknown;
		try {
			loadDedupeStore({ dedupe: { kind: 'changed' } }, saved);
		} catch (caught) {
			error = caught;
		}
		expect(error).toBeInstanceOf(ConfigError);
		expect((error as Error).message).toMatch(/«historyStore»/);
		expect((error as Error).message).toMatch(/staticData/);
		expect((error as Error).message).toMatch(/PostgreSQL/);
	});

	it('a journal entry that is not one refuses to load', () => {
		const saved: SavedDedupeState = {
			v: 1,
			kind: 'unique',
			id: 'x',
			fresh: false,
			history: { from: 0, journal: ['zzz'] },
		};
		expect(() =>
			loadDedupeStore(
				{ dedupe: { kind: 'unique' }, historyTable: { base: { seq: 0, state: {}, chunks: [] } } },
				saved,
			),
		).toThrow(/is not a journal entry/);
	});
});

/**
 * An activation of a unique-keyed trigger with the table, on a fake n8n: a run is created once per
 * deduplication key (a second emit of a created key is refused, and settles as started); the state
 * n8n has stored is the last write before the last emit, as n8n stores static data on emit.
 */
function harness(
	table: MemoryTable,
	listed: () => string[],
	saved: PollTriggerState,
	firstPoll: FirstPollPolicy = { mode: 'all' },
) {
	const clock = new FakeClock();
	const writes: PollTriggerState[] = [];
	const emitted: PollRunToEmit[] = [];
	/** How often the activation had n8n store the state with no run (storeNow). */
	const storedNow = { count: 0 };
	const harnessed = {
		clock,
		writes,
		emitted,
		storedNow,
		/** How many writes there were when start() resolved. */
		writtenAtStart: 0,
		async activate(maxRunsInFlight = 10, flush = true) {
			const keyPrefix = 'poll:wf:node:';
			const store = savedHistoryStore(saved, 'wf');
			const activation = new PollActivation(
				saved,
				{
					source: {
						op: {
							name: 'test.list',
							description: 'Lists what the test gives',
							transport: 'http',
							check: () => undefined,
							run: async () => ({
								kind: 'data',
								data: listed().map((id) => ({ id })),
								memory: {},
							}),
						},
						args: {},
						timeoutMs: 1_000,
					},
					dedupe: { kind: 'unique' },
					firstPoll,
					maxRemembered: 0,
					maxRunsInFlight,
					expressions: new PollExpressions({ id: 'id' }),
					oneRunPerItem: true,
					keyPrefix,
					clock,
					history: {
						table,
						base: store === undefined ? undefined : await table.load(store),
						workflowId: 'wf',
					},
				},
				{ intervalMs: 5_000 },
			);
			const ports: PollActivationPorts = recordingPorts(
				emitted,
				(state) => writes.push(structuredClone(state)),
				{ storeNow: () => void storedNow.count++ },
			);
			await activation.start(ports, []);
			harnessed.writtenAtStart = writes.length;
			// The first poll of a store that is not fresh is not awaited by start().
			if (flush) await flushPromises();
			return activation;
		},
	};
	return harnessed;
}

describe('PollActivation with a history table', () => {
	it('checkpoints only once no run is unsettled or held: a burst of 25 over a window of 10 saves the table once, after its last run, and the write after it holds no journal', async () => {
		const table = new MemoryTable();
		const ids = Array.from({ length: 25 }, (_, i) => `i${i}`);
		const { emitted, writes, activate, storedNow } = harness(table, () => ids, { v: 1 });
		const activation = await activate();
		expect(emitted).toHaveLength(10);
		for (let n = 0; n < emitted.length; n++) {
			// Nothing saved while any run of the burst is unsettled or held.
			expect(table.saves).toHaveLength(0);
			activation.settled(emitted[n].key!, emitted[n].run, { settlement: 'started', result: {} });
			await activation.historySaved();
			await Promise.resolve();
		}
		expect(emitted).toHaveLength(25);
		expect(table.saves).toHaveLength(1);
		expect(table.saves[0]).toMatchObject({ seq: 25, count: 1 });
		const last = writes.at(-1)!;
		expect(last.dedupe).not.toHaveProperty('entries');
		expect(last.dedupe?.history).toEqual({ from: 25, journal: [] });
		// The settlement write carries that state: no write of its own.
		expect(storedNow.count).toBe(0);
		await activation.stop();
	});

	it('a switch from static data: start() resolves once the table holds the records, so the state n8n stores after activation has no entries', async () => {
		const table = new MemoryTable();
		table.failing = true;
		const first = harness(table, () => ['a', 'b'], { v: 1 });
		const before = await first.activate();
		for (const run of first.emitted)
			before.settled(run.key!, run.run, { settlement: 'started', result: {} });
		await before.historySaved();
		// The settlement write (RunEmitter's rewrite).
		before.write();
		await before.stop();
		const saved = first.writes.at(-1)!;
		expect(saved.outbox ?? []).toEqual([]);
		expect(saved.dedupe?.entries).toBeDefined();
		table.failing = false;
		table.slowMs = 20;
		const second = harness(table, () => ['a', 'b'], saved);
		const activation = await second.activate(10, false);
		expect(table.saves).toHaveLength(1);
		expect(second.writes.at(-1)!.dedupe).not.toHaveProperty('entries');
		expect(second.writes.at(-1)!.dedupe?.history).toEqual({ from: 0, journal: [] });
		// n8n's activation save stores it: no write of its own.
		expect(second.storedNow.count).toBe(0);
		await activation.stop();
	});

	it("a first poll's baseline is in the table before the activation ends, so n8n's activation save stores no journal", async () => {
		const table = new MemoryTable();
		const ids = Array.from({ length: 5_000 }, (_, i) => `k${i}`);
		const harnessed = harness(table, () => ids, { v: 1 }, { mode: 'none' });
		const activation = await harnessed.activate();
		expect(table.saves).toHaveLength(1);
		// What n8n's activation save stores: the state as start() resolved.
		expect(harnessed.writes[harnessed.writtenAtStart - 1].dedupe?.history).toEqual({
			from: 5_000,
			journal: [],
		});
		await activation.stop();
	});

	it('a table that cannot be reached keeps the history in the journal, and the next checkpoint saves it', async () => {
		const table = new MemoryTable();
		table.failing = true;
		const { emitted, writes, activate, clock, storedNow } = harness(table, () => ['a', 'b'], {
			v: 1,
		});
		const activation = await activate();
		for (const run of emitted)
			activation.settled(run.key!, run.run, { settlement: 'started', result: {} });
		await activation.historySaved();
		// Never in the table: the records stay in static data.
		expect(table.saves).toHaveLength(0);
		expect(writes.at(-1)!.dedupe?.entries).toBeDefined();
		table.failing = false;
		await clock.advance(5_000);
		await activation.historySaved();
		expect(table.saves).toHaveLength(1);
		expect(writes.at(-1)!.dedupe?.history).toEqual({ from: 2, journal: [] });
		// A poll's checkpoint: no run carries the state written after it, so n8n is asked to store it.
		expect(storedNow.count).toBe(1);
		await activation.stop();
	});

	it.each([
		['the last write before the crash', 0],
		['a write from before the burst settled (the table ahead of static data)', 1],
	])(
		'crashes at every point of a burst of 30 over a window of 10, n8n having stored %s: every item starts exactly once',
		async (_name, lag) => {
			const ids = Array.from({ length: 30 }, (_, i) => `i${i}`);
			for (let crashAfter = 0; crashAfter <= 30; crashAfter += 3) {
				const table = new MemoryTable();
				const created = new Map<string, string>();
				let saved: PollTriggerState = { v: 1 };
				// Two activations: the first crashes after `crashAfter` settlements, the second runs to the end.
				for (const crash of [true, false]) {
					const { emitted, writes, activate, clock } = harness(table, () => ids, saved);
					const activation = await activate();
					let settledCount = 0;
					for (let n = 0; n < emitted.length; n++) {
						if (crash && settledCount === crashAfter) break;
						const { key, run } = emitted[n];
						// n8n refuses a key it created; either way the run settles as started.
						if (!created.has(key!)) created.set(key!, run.keys[0] as string);
						activation.settled(key!, run, { settlement: 'started', result: {} });
						settledCount++;
						await activation.historySaved();
						await Promise.resolve();
					}
					if (!crash) {
						// Later polls list the items again: nothing more starts.
						await clock.advance(5_000);
						for (const { key, run } of emitted.slice(-10))
							activation.settled(key!, run, { settlement: 'started', result: {} });
						await activation.historySaved();
					}
					await activation.stop();
					saved = writes[Math.max(0, writes.length - 1 - lag)];
				}
				const startsPerItem = new Map<string, number>();
				for (const item of created.values())
					startsPerItem.set(item, (startsPerItem.get(item) ?? 0) + 1);
				expect([...startsPerItem.keys()].sort()).toEqual([...ids].sort());
				expect([...startsPerItem.values()].every((n) => n === 1)).toBe(true);
			}
		},
	);

	it('crashes during a later burst whose poll write n8n never stored: the table saved nothing of the burst, and every item starts exactly once', async () => {
		const ids = Array.from({ length: 30 }, (_, i) => `i${i}`);
		for (let crashAfter = 0; crashAfter <= 30; crashAfter += 5) {
			const table = new MemoryTable();
			const created = new Map<string, string>();
			let listing = ['seed'];
			const first = harness(table, () => listing, { v: 1 });
			const activation = await first.activate();
			const [seed] = first.emitted;
			created.set(seed.key!, 'seed');
			activation.settled(seed.key!, seed.run, { settlement: 'started', result: {} });
			await activation.historySaved();
			// What n8n stored last: the state after the quiet first poll, checkpointed.
			expect(table.saves).toHaveLength(1);
			const stored = first.writes.at(-1)!;
			listing = ['seed', ...ids];
			await first.clock.advance(5_000);
			for (let n = 1; n < first.emitted.length && n <= crashAfter; n++) {
				const { key, run } = first.emitted[n];
				created.set(key!, run.keys[0] as string);
				activation.settled(key!, run, { settlement: 'started', result: {} });
				await activation.historySaved();
				await Promise.resolve();
			}
			await activation.stop();

			const second = harness(table, () => listing, stored);
			const after = await second.activate();
			for (let n = 0; n < second.emitted.length; n++) {
				const { key, run } = second.emitted[n];
				if (!created.has(key!)) created.set(key!, run.keys[0] as string);
				after.settled(key!, run, { settlement: 'started', result: {} });
				await after.historySaved();
				await Promise.resolve();
			}
			await after.stop();
			const items = [...created.values()];
			expect(items.sort()).toEqual(['seed', ...ids].sort());
		}
	});

	it('the table key names the workflow and the store, not the node: a node added again under the same name has the same static data, so the same store', () => {
		expect(historyTableKey('wf', 'abc')).toBe('poll:wf:abc');
	});
});
