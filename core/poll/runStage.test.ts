import { loadDedupeStore } from './kinds';
import type { DedupeConfig } from './dedupe';
import {
	ARMED_COPIES_MAX_BYTES,
	ARMED_ITEMS_MAX_BYTES,
	ARMED_RUNS_MAX,
	mayArm,
	RunStage,
	type StagedRun,
} from './runStage';

const KB = 1024;
const MB = 1024 * KB;

interface Item {
	id: string;
	body: string;
}

const item = (id: string, bytes: number): Item => ({ id, body: 'x'.repeat(bytes) });
const sizeOf = (items: Item[]) => JSON.stringify(items).length;

function stage(stateBytes = 0, saved?: unknown) {
	return new RunStage<Item>(saved, sizeOf, () => stateBytes);
}

/** One single-item run per item, keyed by the item's id. */
const runsOf = (items: Item[]) =>
	items.map((it) => ({ key: `k-${it.id}`, items: [it], keys: [it.id] }));

const ids = (entries: Array<{ key: string }>) => entries.map(({ key }) => key);

describe('mayArm', () => {
	test('always arms a first run, whatever its size or the state', () => {
		expect(mayArm({ runs: 0, itemBytes: 0 }, 50 * MB, 10 * ARMED_COPIES_MAX_BYTES)).toBe(true);
	});

	test('bounds the stored items in bytes', () => {
		expect(mayArm({ runs: 3, itemBytes: ARMED_ITEMS_MAX_BYTES - 100 }, 100, 0)).toBe(true);
		expect(mayArm({ runs: 3, itemBytes: ARMED_ITEMS_MAX_BYTES - 100 }, 101, 0)).toBe(false);
	});

	test('bounds the runs in flight, however small', () => {
		expect(mayArm({ runs: ARMED_RUNS_MAX - 1, itemBytes: 0 }, 0, 0)).toBe(true);
		expect(mayArm({ runs: ARMED_RUNS_MAX, itemBytes: 0 }, 0, 0)).toBe(false);
	});

	test("bounds the armed runs' static-data copies (two loads each) by the state's size", () => {
		// A 16 MiB state (about a million remembered keys): 16 runs' copies fill the budget.
		const state = 16 * MB;
		expect(mayArm({ runs: 15, itemBytes: 0 }, 0, state)).toBe(true);
		expect(mayArm({ runs: 16, itemBytes: 0 }, 0, state)).toBe(false);
	});
});

describe('RunStage', () => {
	test('one-item runs are stored without their items, whatever their size; a window is armed, with items to emit', () => {
		// A 16 MiB state (about a million remembered keys): 16 runs at once.
		const runs = stage(16 * MB);
		const burst = Array.from({ length: 300 }, (_, i) => item(`${i}`, 60 * KB));
		const armed = runs.add(runsOf(burst), false);
		expect(ids(armed)).toEqual(ids(runsOf(burst.slice(0, 16))));
		expect(armed.map(({ run }) => run.items)).toEqual(burst.slice(0, 16).map((it) => [it]));
		const saved = runs.saved();
		expect(ids(saved)).toEqual(ids(runsOf(burst)));
		expect(saved.every(({ run }) => run.items === undefined && !run.held)).toBe(true);
		// The stored outbox holds keys, not 18 MB of items.
		expect(JSON.stringify(saved).length).toBeLessThan(300 * 64);
	});

	test('the rest of a burst is armed as earlier runs settle, one for one, oldest first, each once', () => {
		const runs = stage(16 * MB);
		const burst = Array.from({ length: 200 }, (_, i) => item(`${i}`, 100));
		const emitted = ids(runs.add(runsOf(burst), false));
		expect(emitted).toHaveLength(16);
		runs.settle(emitted[3]);
		const next = runs.armNext();
		expect(ids(next)).toEqual(['k-16']);
		emitted.push(...ids(next));
		while (runs.size > 0) {
			for (const { key } of runs.armed()) runs.settle(key);
			emitted.push(...ids(runs.armNext()));
		}
		expect(emitted).toEqual(ids(runsOf(burst)));
	});

	test('runs of several items are stored with them once armed, held without them before', () => {
		const runs = stage();
		const batches = Array.from({ length: 40 }, (_, i) => ({
			key: `k-${i}`,
			items: [item(`${i}a`, 30 * KB), item(`${i}b`, 30 * KB)],
			keys: [`${i}a`, `${i}b`],
		}));
		const armed = runs.add(batches, true);
		const perRun = sizeOf(batches[0].items);
		const window = Math.floor(ARMED_ITEMS_MAX_BYTES / perRun);
		expect(armed).toHaveLength(window);
		const saved = runs.saved();
		expect(saved.slice(0, window).every(({ run }) => run.items?.length === 2 && !run.held)).toBe(
			true,
		);
		expect(saved.slice(window).every(({ run }) => run.held && run.items === undefined)).toBe(true);
		runs.settle('k-0');
		const next = runs.armNext();
		expect(ids(next)).toEqual([`k-${window}`]);
		expect(runs.saved().find(({ key }) => key === `k-${window}`)?.run.items).toHaveLength(2);
	});

	test("a big state arms fewer runs at once: their copies' bytes stay within the budget", () => {
		const burst = Array.from({ length: 300 }, (_, i) => item(`${i}`, 100));
		const copies = (runs: number, state: number) => runs * 2 * state;
		for (const [state, about] of [
			[16 * MB, 16],
			[6 * MB, 42],
		]) {
			const armed = stage(state).add(runsOf(burst), false).length;
			expect(copies(armed, state)).toBeLessThanOrEqual(ARMED_COPIES_MAX_BYTES);
			expect(copies(armed + 1, state)).toBeGreaterThan(ARMED_COPIES_MAX_BYTES);
			expect(Math.abs(armed - about)).toBeLessThanOrEqual(about / 10);
		}
	});

	test('loaded from static data: runs stored with items are emitted again; held ones and one-item runs are given once, except those still in flight here', () => {
		const stored = [
			{ key: 'with-items', run: { items: [item('a', 10)], keys: ['a'] } },
			{ key: 'held', run: { keys: ['b', 'c'], held: true } },
			{ key: 'one-item', run: { keys: ['d'] } },
			{ key: 'in-flight', run: { keys: ['e'] } },
		];
		const loaded = stage(0, JSON.parse(JSON.stringify(stored)));
		expect(ids(loaded.armed())).toEqual(['with-items']);
		const { held, unsure } = loaded.takeStoredWithoutItems((key) => key === 'in-flight');
		expect(ids(held)).toEqual(['held']);
		expect(ids(unsure)).toEqual(['one-item']);
		expect(loaded.takeStoredWithoutItems(() => false)).toEqual({ held: [], unsure: [] });
		// The run in flight stays stored, armed (settled with its run), never emitted with no items.
		expect(ids(loaded.saved())).toEqual(['with-items', 'in-flight']);
		expect(ids(loaded.armed())).toEqual(['with-items', 'in-flight']);
	});

	test('a crash with runs held: forgetting them makes the next poll plan exactly those again', () => {
		const { store } = loadDedupeStore({ dedupe: { kind: 'unique' } });
		const burst = Array.from({ length: 30 }, (_, i) => item(`${i}`, 60 * KB));
		const keyed = burst.map((it, index) => ({ item: it, key: it.id, index }));
		const planned = store.commit(store.plan(keyed, 0), 0, { keyPrefix: 'p:' });
		const runs = stage();
		const window = runs.add(
			planned.map(({ key, candidates, undo }) => ({
				key: key!,
				items: candidates.map((c) => c.item),
				keys: candidates.map((c) => c.key),
				...(undo && { undo }),
			})),
			true,
		).length;
		// What n8n stored with the first emit, read back by the next activation.
		const stored = JSON.parse(
			JSON.stringify({ dedupe: store.serialize(), outbox: runs.saved() }),
		) as { dedupe: unknown; outbox: unknown };
		const after = loadDedupeStore({ dedupe: { kind: 'unique' } }, stored.dedupe).store;
		const loaded = stage(0, stored.outbox);
		for (const { run } of [...loaded.takeStoredWithoutItems(() => false).held].reverse())
			after.rollback((run as StagedRun<Item>).undo);
		const replanned = after.plan(keyed, 1);
		expect(replanned.toStart.map((c) => c.key)).toEqual(burst.slice(window).map((it) => it.id));
		// Planned again under the keys they had: none was emitted, so n8n holds none of them.
		const again = after.commit(replanned, 1, { keyPrefix: 'p:' });
		expect(again.map(({ key }) => key)).toEqual(planned.slice(window).map(({ key }) => key));
	});

	test("a run planned again while staged (its key forgotten by the cap, listed again) keeps one run, whose undo takes back both polls' writes", () => {
		const { store } = loadDedupeStore({ dedupe: { kind: 'unique' }, maxRemembered: 1 });
		const toStage = (planned: ReturnType<typeof store.commit>) =>
			planned.map(({ key, candidates, undo }) => ({
				key: key!,
				items: candidates.map((c) => c.item as Item),
				keys: candidates.map((c) => c.key),
				...(undo && { undo }),
			}));
		const a = item('a', 10);
		const b = item('b', 10);
		const runs = stage();
		const keyed = (...items: Item[]) => items.map((it, index) => ({ item: it, key: it.id, index }));
		runs.add(toStage(store.commit(store.plan(keyed(a, b), 0), 0, { keyPrefix: 'p:' })), false);
		// A poll that lists neither: the cap keeps one key, and forgets a's while its run is staged.
		store.commit(store.plan([], 1_000), 1_000, { keyPrefix: 'p:' });
		expect(store.plan(keyed(a), 2_000).toStart).toHaveLength(1);
		const again = store.commit(store.plan(keyed(a), 2_000), 2_000, { keyPrefix: 'p:' });
		const [first] = runs.saved();
		expect(again.map(({ key }) => key)).toEqual([first.key]);
		runs.add(toStage(again), false);
		expect(runs.saved()).toHaveLength(2);
		// n8n did not create a's run: its item is new again, whichever poll remembered it.
		store.rollback(runs.settle(first.key)!.undo, [a.id]);
		expect(store.plan(keyed(a), 3_000).toStart.map((c) => c.key)).toEqual(['a']);
	});

	describe.each<DedupeConfig>([
		{ kind: 'unique' },
		{ kind: 'time_window', ttlMs: 24 * 3_600_000 },
		{ kind: 'changed' },
		{ kind: 'greatest' },
		{ kind: 'last' },
	])('a crash with one-item runs stored without items, dedupe $kind', (dedupe) => {
		const HOUR = 3_600_000;
		const listed = (ids: number[], version = 'v1') =>
			ids.map((id, index) => ({ item: { id }, key: id, index, version }));
		/** A remembered history, then a burst of 10 committed and stored, read back after a crash. */
		function crashMidBurst() {
			const { store } = loadDedupeStore({ dedupe, firstPoll: { mode: 'none' } });
			const history = Array.from({ length: 5 }, (_, i) => i);
			store.commit(store.plan(listed(history), 0), 0, { keyPrefix: 'p:' });
			const burst = Array.from({ length: 10 }, (_, i) => 100 + i);
			const planned = store.commit(store.plan(listed([...history, ...burst]), HOUR), HOUR, {
				keyPrefix: 'p:',
			});
			const runs = new RunStage<{ id: number }>(undefined, sizeOf as never, () => 0);
			runs.add(
				planned.map(({ key, candidates, undo }) => ({
					key: key!,
					items: candidates.map((c) => c.item as { id: number }),
					keys: candidates.map((c) => c.key),
					...(undo && { undo }),
				})),
				false,
			);
			const stored = JSON.parse(
				JSON.stringify({ dedupe: store.serialize(), outbox: runs.saved() }),
			) as { dedupe: unknown; outbox: unknown };
			const after = loadDedupeStore({ dedupe }, stored.dedupe).store;
			const { unsure } = new RunStage(
				stored.outbox,
				sizeOf as never,
				() => 0,
			).takeStoredWithoutItems(() => false);
			after.restage(
				[...unsure].reverse().map(({ key, run }) => ({
					key,
					undo: (run as StagedRun<unknown>).undo,
					itemKey: run.keys[0],
				})),
			);
			// Through the saved state again: the restaged keys are stored with the store.
			const restored = loadDedupeStore(
				{ dedupe },
				JSON.parse(JSON.stringify(after.serialize())),
			).store;
			return { store: restored, history, burst, planned };
		}

		test('the next poll that lists their items plans each again under the key its run had', () => {
			const { store, history, burst, planned } = crashMidBurst();
			// Later, in a later generation: keys that carry it would differ without the restaged ones.
			const again = store.commit(store.plan(listed([...history, ...burst]), 2 * HOUR), 2 * HOUR, {
				keyPrefix: 'p:',
			});
			expect(again.map(({ key }) => key)).toEqual(planned.map(({ key }) => key));
			// Used up: a later start of the same item is another start.
			expect(store.serialize().restaged).toBeUndefined();
		});

		test('an item no longer listed is not started; one listed later still gets its key', () => {
			const { store, history, burst, planned } = crashMidBurst();
			const first = store.commit(
				store.plan(listed([...history, ...burst.slice(0, 5)]), 2 * HOUR),
				2 * HOUR,
				{ keyPrefix: 'p:' },
			);
			expect(first.map(({ key }) => key)).toEqual(planned.slice(0, 5).map(({ key }) => key));
			if (dedupe.kind === 'greatest' || dedupe.kind === 'last') return; // cursors: later items only
			const later = store.commit(store.plan(listed([...history, ...burst]), 3 * HOUR), 3 * HOUR, {
				keyPrefix: 'p:',
			});
			expect(later.map(({ key }) => key)).toEqual(planned.slice(5).map(({ key }) => key));
		});

		if (dedupe.kind === 'changed')
			test('an item at another version by then starts under a new key: that is another start', () => {
				const { store, history, burst, planned } = crashMidBurst();
				const again = store.commit(
					store.plan([...listed(history), ...listed(burst, 'v2')], 2 * HOUR),
					2 * HOUR,
					{ keyPrefix: 'p:' },
				);
				expect(again).toHaveLength(burst.length);
				const before = new Set(planned.map(({ key }) => key));
				expect(again.every(({ key }) => !before.has(key!))).toBe(true);
			});
	});
});
