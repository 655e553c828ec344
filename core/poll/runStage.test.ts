import { loadDedupeStore } from './kinds';
import {
	ARMED_COPIES_MAX_BYTES,
	ARMED_ITEMS_MAX_BYTES,
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

	test('bounds the armed items in bytes', () => {
		expect(mayArm({ runs: 3, itemBytes: ARMED_ITEMS_MAX_BYTES - 100 }, 100, 0)).toBe(true);
		expect(mayArm({ runs: 3, itemBytes: ARMED_ITEMS_MAX_BYTES - 100 }, 101, 0)).toBe(false);
	});

	test("bounds the armed runs' static-data copies (two loads each) by the state's size", () => {
		// A 16 MiB state (about a million remembered keys): 16 runs' copies fill the budget.
		const state = 16 * MB;
		expect(mayArm({ runs: 15, itemBytes: 0 }, 0, state)).toBe(true);
		expect(mayArm({ runs: 16, itemBytes: 0 }, 0, state)).toBe(false);
	});
});

describe('RunStage', () => {
	test('a burst of small items is armed whole: one write, as without stages', () => {
		const runs = stage();
		const armed = runs.add(runsOf(Array.from({ length: 300 }, (_, i) => item(`${i}`, 100))));
		expect(armed).toHaveLength(300);
		expect(runs.saved().every(({ run }) => run.items !== undefined && !run.held)).toBe(true);
	});

	test('big items: a window of runs is armed, the rest held without items, in order', () => {
		const runs = stage();
		const burst = Array.from({ length: 40 }, (_, i) => item(`${i}`, 60 * KB));
		const armed = runs.add(runsOf(burst));
		const perRun = sizeOf([burst[0]]);
		const window = Math.floor(ARMED_ITEMS_MAX_BYTES / perRun);
		expect(ids(armed)).toEqual(ids(runsOf(burst.slice(0, window))));
		expect(runs.heldCount).toBe(burst.length - window);
		const saved = runs.saved();
		expect(ids(saved)).toEqual(ids(runsOf(burst)));
		const stored = saved.map(({ run }) => run);
		expect(stored.slice(window).every((run) => run.held && run.items === undefined)).toBe(true);
		expect(JSON.stringify(saved).length).toBeLessThan(ARMED_ITEMS_MAX_BYTES + 64 * KB);
	});

	test('held runs are armed once half of the last armed batch has settled, oldest first', () => {
		const runs = stage();
		const burst = Array.from({ length: 40 }, (_, i) => item(`${i}`, 60 * KB));
		const armed = runs.add(runsOf(burst));
		const window = armed.length;
		const settleUntilRefill = () => {
			for (let settled = 0; ; settled++) {
				const refilled = runs.refill();
				if (refilled.length > 0) return { settled, refilled };
				const next = runs.armed()[0];
				runs.settle(next.key);
			}
		};
		const first = settleUntilRefill();
		expect(first.settled).toBe(Math.ceil(window / 2));
		expect(ids(first.refilled)).toEqual(
			ids(runsOf(burst.slice(window, window + first.refilled.length))),
		);
		// Settling everything arms everything, each run once.
		const emitted = [...ids(armed), ...ids(first.refilled)];
		while (runs.size > 0) {
			for (const { key } of runs.armed()) runs.settle(key);
			emitted.push(...ids(runs.refill()));
		}
		expect(emitted).toEqual(ids(runsOf(burst)));
	});

	test("a big state arms fewer runs at once: their copies' bytes stay within the budget", () => {
		const burst = Array.from({ length: 300 }, (_, i) => item(`${i}`, 100));
		const perRun = sizeOf([burst[0]]);
		const copies = (runs: number, state: number) => runs * 2 * (state + runs * perRun);
		for (const [state, about] of [
			[16 * MB, 16],
			[1.6 * MB, 160],
		]) {
			const armed = stage(state).add(runsOf(burst)).length;
			expect(copies(armed, state)).toBeLessThanOrEqual(ARMED_COPIES_MAX_BYTES);
			expect(copies(armed + 1, state)).toBeGreaterThan(ARMED_COPIES_MAX_BYTES);
			expect(Math.abs(armed - about)).toBeLessThanOrEqual(about / 10);
		}
	});

	test('loaded from static data: armed runs are emitted again, held ones are given once, to forget', () => {
		const runs = stage();
		const burst = Array.from({ length: 30 }, (_, i) => item(`${i}`, 60 * KB));
		const window = runs.add(runsOf(burst)).length;
		const saved = JSON.parse(JSON.stringify(runs.saved())) as unknown;
		const loaded = stage(0, saved);
		expect(ids(loaded.armed())).toEqual(ids(runsOf(burst.slice(0, window))));
		expect(loaded.armed().map(({ run }) => run.items)).toEqual(
			burst.slice(0, window).map((it) => [it]),
		);
		const held = loaded.takeStoredHeld();
		expect(ids(held)).toEqual(ids(runsOf(burst.slice(window))));
		expect(loaded.takeStoredHeld()).toEqual([]);
		expect(loaded.size).toBe(window);
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
		).length;
		// What n8n stored with the first emit, read back by the next activation.
		const stored = JSON.parse(
			JSON.stringify({ dedupe: store.serialize(), outbox: runs.saved() }),
		) as { dedupe: unknown; outbox: unknown };
		const after = loadDedupeStore({ dedupe: { kind: 'unique' } }, stored.dedupe).store;
		const loaded = stage(0, stored.outbox);
		for (const { run } of [...loaded.takeStoredHeld()].reverse())
			after.rollback((run as StagedRun<Item>).undo);
		const replanned = after.plan(keyed, 1);
		expect(replanned.toStart.map((c) => c.key)).toEqual(burst.slice(window).map((it) => it.id));
		// Planned again under the keys they had: none was emitted, so n8n holds none of them.
		const again = after.commit(replanned, 1, { keyPrefix: 'p:' });
		expect(again.map(({ key }) => key)).toEqual(planned.slice(window).map(({ key }) => key));
	});
});
