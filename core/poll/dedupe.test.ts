import { FakeClock } from '../../test/support/fakeClock';
import {
	MAX_DEDUPLICATION_KEY_CHARS,
	type DedupeOptions,
	type DedupeStore,
	itemHash,
	type PlannedRun,
	type PollPlan,
	type SavedDedupeState,
} from './dedupe';
import { PollItemError } from './errors';
import type { ItemKey, KeyedItem } from './expressions';
import { loadDedupeStore as loadWithNotice } from './kinds';

const PREFIX = 'poll:wf:node:';

function loadDedupeStore(options: DedupeOptions, saved?: unknown): DedupeStore {
	return loadWithNotice(options, saved).store;
}

const HOUR = 3_600_000;

function keyed(keys: ItemKey[], versions?: string[]): KeyedItem[] {
	return keys.map((key, index) => ({ item: { id: key }, key, index, version: versions?.[index] }));
}

/** A poll through the protocol (plan, commit); returns its runs. */
function commitPoll(
	store: DedupeStore,
	items: KeyedItem[],
	now: number,
	onePerItem = true,
): PlannedRun[] {
	return store.commit(store.plan(items, now), now, { keyPrefix: PREFIX, onePerItem });
}

/** A poll through the protocol; returns the keys that started. */
async function poll(store: DedupeStore, items: KeyedItem[], now: number): Promise<ItemKey[]> {
	return commitPoll(store, items, now).flatMap((run) => run.candidates.map((c) => c.key));
}

/** The deduplication keys of a poll's runs. */
function runKeys(runs: PlannedRun[]): string[] {
	return runs.map((run) => run.key as string);
}

function verdicts(plan: PollPlan): string[] {
	return plan.candidates.map((c) => `${c.key}:${c.verdict}`);
}

/** The same store after a save and a load, as after a restart. */
function reloaded(store: DedupeStore, options: DedupeOptions): DedupeStore {
	return loadDedupeStore(options, JSON.parse(JSON.stringify(store.serialize())));
}

describe('unique', () => {
	const options: DedupeOptions = { dedupe: { kind: 'unique' } };

	it('starts each key once, forever, and says when it was seen', async () => {
		const clock = new FakeClock();
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed(['a', 'b']), clock.now())).toEqual(['a', 'b']);
		const firstSeen = clock.now();
		await clock.advance(1_000 * HOUR);
		const plan = store.plan(keyed(['b', 'c', 'a']), clock.now());
		expect(verdicts(plan)).toEqual(['b:seen', 'c:new', 'a:seen']);
		expect(plan.candidates[0].seenAt).toBe(firstSeen);
		expect(await poll(store, keyed(['b', 'c', 'a']), clock.now())).toEqual(['c']);
	});

	it('tells 1 from "1"', async () => {
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed([1]), 0)).toEqual([1]);
		expect(await poll(store, keyed(['1', 1]), 0)).toEqual(['1']);
	});

	it('starts a key repeated within one poll once', () => {
		const store = loadDedupeStore(options);
		expect(verdicts(store.plan(keyed(['a', 'a', 'b']), 0))).toEqual([
			'a:new',
			'a:duplicate',
			'b:new',
		]);
	});

	it('plan does not change the store (a dry run)', () => {
		const store = loadDedupeStore(options);
		const before = JSON.stringify(store.serialize());
		store.plan(keyed(['a', 'b']), 0);
		store.plan(keyed(['a', 'b']), 0);
		expect(JSON.stringify(store.serialize())).toBe(before);
		expect(store.isFresh).toBe(true);
	});

	it('a run n8n could not create is rolled back alone: its key comes back, keys of other runs stay remembered', () => {
		const store = loadDedupeStore(options);
		const runs = commitPoll(store, keyed(['a', 'b', 'c']), 0);
		store.rollback(runs[1].undo!, ['b']);
		expect(verdicts(store.plan(keyed(['a', 'b', 'c']), 0))).toEqual(['a:seen', 'b:new', 'c:seen']);
		// n8n may hold a failed execution under the rolled-back key (queue mode, Redis refused the
		// job): the item's next start has another key.
		const again = runKeys(commitPoll(store, keyed(['a', 'b', 'c']), 0));
		expect(again).toHaveLength(1);
		expect(again[0]).not.toBe(runs[1].key);
	});

	it('a poll planned again on the state before it (a crash before the write) gets the same keys', () => {
		const store = loadDedupeStore(options);
		commitPoll(store, keyed(['a']), 0);
		const before = JSON.parse(JSON.stringify(store.serialize()));
		const first = runKeys(commitPoll(store, keyed(['a', 'b', 'c']), 1_000));
		const again = runKeys(
			commitPoll(loadDedupeStore(options, before), keyed(['b', 'x', 'c']), 5_000),
		);
		expect(again).toEqual([first[0], expect.any(String), first[1]]);
		expect(new Set(first.concat(again)).size).toBe(3);
	});

	it('commit refuses a plan made before another commit', () => {
		const store = loadDedupeStore(options);
		const stale = store.plan(keyed(['a']), 0);
		commitPoll(store, keyed(['b']), 0);
		expect(() => store.commit(stale, 0, { keyPrefix: PREFIX })).toThrow('plan again');
	});
});

describe('time_window', () => {
	const options: DedupeOptions = { dedupe: { kind: 'time_window', ttlMs: HOUR } };

	it('starts a key again once its entry is older than the TTL, with verdict expired', async () => {
		const clock = new FakeClock();
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed(['a']), clock.now())).toEqual(['a']);
		await clock.advance(HOUR - 1_000);
		expect(verdicts(store.plan(keyed(['a']), clock.now()))).toEqual(['a:seen']);
		expect(await poll(store, keyed(['a']), clock.now())).toEqual([]);
		await clock.advance(1_000);
		expect(verdicts(store.plan(keyed(['a']), clock.now()))).toEqual(['a:expired']);
		expect(await poll(store, keyed(['a']), clock.now())).toEqual(['a']);
		// Re-seen: the window starts over.
		await clock.advance(HOUR - 1_000);
		expect(await poll(store, keyed(['a']), clock.now())).toEqual([]);
	});

	it('a key that expired, or was forgotten, starts again with a new deduplication key', async () => {
		const clock = new FakeClock();
		const store = loadDedupeStore(options);
		const [first] = commitPoll(store, keyed(['a']), clock.now());
		await clock.advance(2 * HOUR);
		commitPoll(store, [], clock.now()); // the item left the list; its entry is pruned
		expect(store.size).toBe(0);
		const [second] = commitPoll(store, keyed(['a']), clock.now());
		await clock.advance(2 * HOUR);
		const [third] = commitPoll(store, keyed(['a']), clock.now()); // expired while listed
		expect(new Set([first.key, second.key, third.key]).size).toBe(3);
	});

	it('prunes expired entries when a poll commits; a pruned key is simply new', async () => {
		const clock = new FakeClock();
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a', 'b']), clock.now());
		await clock.advance(30 * 60_000);
		await poll(store, keyed(['c']), clock.now());
		await clock.advance(30 * 60_000);
		await poll(store, [], clock.now());
		expect(store.size).toBe(1);
		expect(verdicts(store.plan(keyed(['a', 'c']), clock.now()))).toEqual(['a:new', 'c:seen']);
	});

	it('keeps its window across a save and load', async () => {
		const clock = new FakeClock();
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a']), clock.now());
		await clock.advance(HOUR / 2);
		const restored = reloaded(store, options);
		expect(await poll(restored, keyed(['a']), clock.now())).toEqual([]);
		await clock.advance(HOUR / 2);
		expect(await poll(restored, keyed(['a']), clock.now())).toEqual(['a']);
	});

	it('refuses a TTL below a second', () => {
		expect(() => loadDedupeStore({ dedupe: { kind: 'time_window', ttlMs: 10 } })).toThrow(
			expect.objectContaining({
				name: 'ConfigError',
				field: 'ttl',
				message: 'Invalid value 10ms for "«ttl»": must be from 1s to 3650d',
			}),
		);
	});
});

describe('greatest', () => {
	const options: DedupeOptions = { dedupe: { kind: 'greatest' } };

	it('starts ids above the high-water mark in ascending order', async () => {
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed([3, 1, 2]), 0)).toEqual([1, 2, 3]);
		const plan = store.plan(keyed([5, 3, 4, 2]), 0);
		expect(verdicts(plan)).toEqual([
			'2:at_or_below_watermark',
			'3:at_or_below_watermark',
			'4:new',
			'5:new',
		]);
		expect(plan.candidates.map((c) => c.index)).toEqual([3, 1, 2, 0]);
		expect(await poll(store, keyed([5, 3, 4, 2]), 0)).toEqual([4, 5]);
	});

	it('compares numbers as numbers and strings as strings', async () => {
		const numbers = loadDedupeStore(options);
		expect(await poll(numbers, keyed([10, 9]), 0)).toEqual([9, 10]);
		const strings = loadDedupeStore(options);
		expect(await poll(strings, keyed(['2026-01-02T00:00Z', '2026-01-01T00:00Z']), 0)).toEqual([
			'2026-01-01T00:00Z',
			'2026-01-02T00:00Z',
		]);
		expect(await poll(strings, keyed(['2026-01-01T12:00Z', '2026-01-03T00:00Z']), 0)).toEqual([
			'2026-01-03T00:00Z',
		]);
	});

	it('refuses a poll that mixes numbers and strings', () => {
		const store = loadDedupeStore(options);
		expect(() => store.plan(keyed([1, 2, '3']), 0)).toThrow(PollItemError);
		expect(() => store.plan(keyed([1, 2, '3']), 0)).toThrow(
			/^Item 2: dedupe "greatest" compares ids, but this poll mixes numbers and strings: item 0 has 1, item 2 has "3"/,
		);
	});

	it('refuses ids of another kind than the remembered mark', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed([42]), 0);
		expect(() => store.plan(keyed(['43']), 0)).toThrow(
			/remembers the number 42 as its high-water mark, but this poll's ids are strings \("43"\)/,
		);
	});

	it('rolls the mark back to before a run n8n could not create; later runs, started already, do not start again', () => {
		const store = loadDedupeStore(options);
		commitPoll(store, keyed([1]), 0);
		const runs = commitPoll(store, keyed([2, 3, 4]), 0);
		store.rollback(runs[1].undo!, [3]);
		store.rollback(runs[1].undo!); // settling twice changes nothing more
		const again = commitPoll(store, keyed([2, 3, 4]), 0);
		// 4 is up to the mark the rollback took back (n8n may have pruned its execution).
		expect(again.map((run) => run.candidates[0].key)).toEqual([3]);
		// The rolled-back item has a new key.
		expect(runKeys(again)[0]).not.toBe(runs[1].key);
		// The mark passed where it had been: what comes after starts.
		expect(commitPoll(store, keyed([4, 5]), 0).map((run) => run.candidates[0].key)).toEqual([5]);
	});

	it('the mark taken back moves over the items up to the mark it had as a poll lists them: a source asked from it is not asked for them again', () => {
		const store = loadDedupeStore(options);
		const runs = commitPoll(store, keyed([1, 2, 3, 4, 5]), 0);
		store.rollback(runs[0].undo!, [1]);
		expect(store.cursor).toBeUndefined();
		// A {{ $cursor }} source with Max Pages 1 and pages of 2, asked from the mark: 1 and 2.
		const again = commitPoll(store, keyed([2, 1]), 0);
		expect(again.map((run) => run.candidates[0].key)).toEqual([1]);
		expect(store.cursor).toBe(2);
		// Asked from 2: 3 and 4, started before, start nothing; the mark moves on over them.
		expect(commitPoll(store, keyed([3, 4]), 0)).toEqual([]);
		expect(store.cursor).toBe(4);
		// At the mark it had, no ceiling is left: what comes after starts.
		expect(commitPoll(store, keyed([5, 6]), 0).map((run) => run.candidates[0].key)).toEqual([6]);
		expect(store.serialize().ceiling).toBeUndefined();
		// The rolled-back item's run refused once more takes the mark back again, to before it.
		store.rollback(again[0].undo!, [1]);
		expect(store.cursor).toBeUndefined();
		expect(commitPoll(store, keyed([1, 2]), 0).map((run) => run.candidates[0].key)).toEqual([1]);
	});

	it('while an item is owed, a newest-first poll cut short (the top of the list only) moves the mark over nothing: the owed item below still starts', () => {
		const store = loadDedupeStore(options);
		const runs = commitPoll(store, keyed([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), 0);
		// A crash: n8n may not have created the run of 4.
		store.restage([{ key: runs[3].key!, undo: runs[3].undo, itemKey: 4 }]);
		expect(store.cursor).toBe(3);
		// Max Pages cut the poll after 10 and 9: known, but 4 is owed and was not listed.
		const top = keyed([10, 9]);
		expect(store.commit(store.plan(top, 0), 0, { keyPrefix: PREFIX, topOnly: true })).toEqual([]);
		expect(store.cursor).toBe(3);
		const again = commitPoll(store, keyed([6, 5, 4]), 0);
		expect(again.map((run) => [run.candidates[0].key, run.key])).toEqual([[4, runs[3].key]]);
		// Nothing owed any more: the mark moves over what this poll listed, then the rest.
		expect(store.cursor).toBe(6);
		expect(commitPoll(store, keyed([11, 10, 9]), 0).map((run) => run.candidates[0].key)).toEqual([
			11,
		]);
		expect(store.serialize().ceiling).toBeUndefined();
	});

	it('a rollback of an earlier run moves the mark back past later ones; only the rolled-back items start', () => {
		const store = loadDedupeStore(options);
		const runs = commitPoll(store, keyed([1, 2, 3, 4]), 0);
		store.rollback(runs[2].undo!, [3]);
		store.rollback(runs[0].undo!, [1]);
		store.rollback(runs[1].undo!, [2]);
		expect(store.cursor).toBeUndefined();
		expect(store.plan(keyed([1, 2, 3, 4]), 0).toStart.map((c) => c.key)).toEqual([1, 2, 3]);
		// The mark taken back and the one it had survive a save and load.
		const reloaded = loadDedupeStore(options, JSON.parse(JSON.stringify(store.serialize())));
		expect(reloaded.plan(keyed([1, 2, 3, 4]), 0).toStart.map((c) => c.key)).toEqual([1, 2, 3]);
	});

	it('keeps its mark across a save and load', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['b', 'a']), 0);
		expect(store.serialize()).toEqual({
			v: 1,
			kind: 'greatest',
			id: store.id,
			fresh: false,
			generation: 1,
			watermark: 'b',
		});
		expect(await poll(reloaded(store, options), keyed(['a', 'b', 'c']), 0)).toEqual(['c']);
	});
});

describe('last', () => {
	const options: DedupeOptions = { dedupe: { kind: 'last' } };

	it('starts the items after the previous poll’s last item', async () => {
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed(['a', 'b', 'c']), 0)).toEqual(['a', 'b', 'c']);
		expect(verdicts(store.plan(keyed(['b', 'c', 'd', 'e']), 0))).toEqual([
			'b:seen',
			'c:seen',
			'd:new',
			'e:new',
		]);
		expect(await poll(store, keyed(['b', 'c', 'd', 'e']), 0)).toEqual(['d', 'e']);
		expect(await poll(store, keyed(['d', 'e']), 0)).toEqual([]);
	});

	it('falls back to an older remembered key when the last one is gone', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a', 'b', 'c']), 0);
		// "c" was deleted at the source; "b" is the newest remembered key still listed.
		expect(await poll(store, keyed(['a', 'b', 'x']), 0)).toEqual(['x']);
	});

	it('re-emits everything when no remembered key is listed (a lost anchor)', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a', 'b']), 0);
		expect(verdicts(store.plan(keyed(['x', 'y']), 0))).toEqual(['x:new', 'y:new']);
		expect(await poll(store, keyed(['x', 'y']), 0)).toEqual(['x', 'y']);
	});

	it('remembers up to 32 keys, so an anchor 32 items back is still found', async () => {
		const store = loadDedupeStore(options);
		const first = Array.from({ length: 40 }, (_, i) => `k${i}`);
		await poll(store, keyed(first), 0);
		expect(store.size).toBe(32);
		// The newest 31 were deleted at the source; k8 is the oldest remembered.
		expect(await poll(store, keyed(['k7', 'k8', 'new']), 0)).toEqual(['new']);
		const lost = loadDedupeStore(options);
		await poll(lost, keyed(first), 0);
		expect(await poll(lost, keyed(['k7', 'new']), 0)).toEqual(['k7', 'new']);
	});

	it('keeps its place when a poll returns nothing', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a']), 0);
		await poll(store, [], 0);
		expect(await poll(store, keyed(['a', 'b']), 0)).toEqual(['b']);
	});

	it('rolls the tail back to before a run n8n could not create, across a save and load', () => {
		const store = loadDedupeStore(options);
		commitPoll(store, keyed(['a']), 0);
		const runs = commitPoll(store, keyed(['a', 'b', 'c']), 0);
		store.rollback(runs[1].undo!, ['c']);
		const again = commitPoll(reloaded(store, options), keyed(['a', 'b', 'c']), 0);
		expect(again.map((run) => run.candidates[0].key)).toEqual(['c']);
		expect(runKeys(again)[0]).not.toBe(runs[1].key);
	});
});

describe('changed', () => {
	const options: DedupeOptions = { dedupe: { kind: 'changed' } };

	it('starts a key that is new or whose version differs', async () => {
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed(['a', 'b'], ['1', '1']), 0)).toEqual(['a', 'b']);
		expect(verdicts(store.plan(keyed(['a', 'b', 'c'], ['1', '2', '1']), 0))).toEqual([
			'a:unchanged',
			'b:changed',
			'c:new',
		]);
		expect(await poll(store, keyed(['a', 'b', 'c'], ['1', '2', '1']), 0)).toEqual(['b', 'c']);
	});

	it('keeps keys missing from a poll: an item that comes back unchanged starts nothing', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a', 'b'], ['1', '1']), 0);
		await poll(store, keyed(['b'], ['1']), 0);
		expect(await poll(store, keyed(['a', 'b'], ['1', '1']), 0)).toEqual([]);
		expect(await poll(store, keyed(['a'], ['2']), 0)).toEqual(['a']);
	});

	it('asks for versions', () => {
		const store = loadDedupeStore(options);
		expect(store.needsVersion).toBe(true);
		expect(() => store.plan(keyed(['a']), 0)).toThrow('Item 0 has no version');
	});

	it('keeps versions across a save and load', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a', 'b'], ['1', '1']), 0);
		expect(await poll(reloaded(store, options), keyed(['a', 'b'], ['1', '2']), 0)).toEqual(['b']);
	});

	it('a version whose run n8n could not create comes back', () => {
		const store = loadDedupeStore(options);
		commitPoll(store, keyed(['a'], ['1']), 0);
		const [run] = commitPoll(store, keyed(['a'], ['2']), 0);
		store.rollback(run.undo!);
		expect(verdicts(store.plan(keyed(['a'], ['2']), 0))).toEqual(['a:changed']);
		expect(verdicts(store.plan(keyed(['a'], ['1']), 0))).toEqual(['a:unchanged']);
	});

	it('a rollback reported after the next poll committed a newer version starts nothing twice', () => {
		const store = loadDedupeStore(options);
		commitPoll(store, keyed(['a'], ['1']), 0);
		const [v2] = commitPoll(store, keyed(['a'], ['2']), 0);
		// The next poll sees version 3 and starts it before n8n reports that it could not create v2's run.
		expect(runKeys(commitPoll(store, keyed(['a'], ['3']), 0))).toHaveLength(1);
		store.rollback(v2.undo!, ['a']);
		// Version 3 ran: the late rollback neither restores version 1 nor marks "a" to start again.
		expect(verdicts(store.plan(keyed(['a'], ['3']), 0))).toEqual(['a:unchanged']);
		expect(store.againCount).toBe(0);
		const reloadedStore = reloaded(store, options);
		expect(verdicts(reloadedStore.plan(keyed(['a'], ['3']), 0))).toEqual(['a:unchanged']);
	});

	it('A -> B -> A starts three times, each with its own deduplication key', () => {
		const store = loadDedupeStore(options);
		const keys = [['1'], ['2'], ['1']].flatMap((version) =>
			runKeys(commitPoll(store, keyed(['ticket'], version), 0)),
		);
		expect(keys).toHaveLength(3);
		expect(new Set(keys).size).toBe(3);
	});
});

describe('history budget (maxRemembered)', () => {
	const keyedKinds: DedupeOptions['dedupe'][] = [
		{ kind: 'unique' },
		{ kind: 'time_window', ttlMs: 24 * HOUR },
		{ kind: 'changed' },
	];
	const v1 = (keys: ItemKey[]) =>
		keyed(
			keys,
			keys.map(() => 'v1'),
		);

	it.each(keyedKinds)(
		'$kind: past the cap a poll forgets the oldest keys it did not list, and records how many and when, across a save and load',
		async (dedupe) => {
			const clock = new FakeClock();
			const options: DedupeOptions = { dedupe, maxRemembered: 3 };
			const store = loadDedupeStore(options);
			await poll(store, v1(['a', 'b', 'c']), clock.now());
			expect(store.forgotten).toBeUndefined();
			await clock.advance(HOUR);
			expect(await poll(store, v1(['d', 'e']), clock.now())).toEqual(['d', 'e']);
			expect(store.size).toBe(3);
			expect(store.forgotten).toEqual({ total: 2, last: 2, at: clock.now() });
			const restored = reloaded(store, options);
			expect(restored.forgotten).toEqual({ total: 2, last: 2, at: clock.now() });
			// a and b were forgotten: listed again, they are new; c was kept.
			expect(verdicts(restored.plan(v1(['a', 'c', 'e']), clock.now()))).toEqual([
				'a:new',
				'c:' + (dedupe.kind === 'changed' ? 'unchanged' : 'seen'),
				'e:' + (dedupe.kind === 'changed' ? 'unchanged' : 'seen'),
			]);
			await clock.advance(HOUR);
			await poll(restored, v1(['f']), clock.now());
			expect(restored.forgotten).toEqual({ total: 3, last: 1, at: clock.now() });
		},
	);

	it.each(keyedKinds)(
		'$kind: keys the poll lists are never forgotten, so a cap below what the source lists starts nothing twice',
		async (dedupe) => {
			const store = loadDedupeStore({ dedupe, maxRemembered: 2 });
			const listed = v1(['a', 'b', 'c', 'd']);
			expect(await poll(store, listed, 0)).toEqual(['a', 'b', 'c', 'd']);
			expect(store.size).toBe(4);
			expect(store.forgotten).toBeUndefined();
			expect(await poll(store, listed, 1_000)).toEqual([]);
			// Once a poll no longer lists them, the oldest go down to the cap.
			expect(await poll(store, v1(['e']), 2_000)).toEqual(['e']);
			expect(store.size).toBe(2);
			expect(store.forgotten).toEqual({ total: 3, last: 3, at: 2_000 });
			expect(verdicts(store.plan(v1(['c', 'd']), 2_000))).toEqual([
				'c:new',
				'd:' + (dedupe.kind === 'changed' ? 'unchanged' : 'seen'),
			]);
		},
	);

	it.each(keyedKinds)(
		'$kind: a pass over the source that takes several polls forgets nothing before its end, and its end keeps every key the pass listed (a newest-first list of 10 read 2 a poll, cap 8), across a save and load',
		async (dedupe) => {
			const options: DedupeOptions = { dedupe, maxRemembered: 8 };
			let store = loadDedupeStore(options);
			const pass = (items: KeyedItem[], now: number, endsPass: boolean) =>
				store
					.commit(store.plan(items, now), now, { keyPrefix: PREFIX, endsPass })
					.flatMap((run) => run.candidates.map((c) => c.key));
			// The first pass: c, b, a, the whole list then.
			expect(pass(v1(['c', 'b']), 0, false)).toEqual(['c', 'b']);
			expect(pass(v1(['a']), 1_000, true)).toEqual(['a']);
			// j … d arrive; the next pass reads them two a poll, then reaches c (known ground).
			expect(pass(v1(['j', 'i']), 2_000, false)).toEqual(['j', 'i']);
			store = reloaded(store, options);
			expect(pass(v1(['h', 'g']), 3_000, false)).toEqual(['h', 'g']);
			expect(pass(v1(['f', 'e']), 4_000, false)).toEqual(['f', 'e']);
			// Nine keys, over the cap: none forgotten while the pass goes on, c (still ahead) included.
			expect(store.size).toBe(9);
			expect(store.forgotten).toBeUndefined();
			expect(pass(v1(['d', 'c']), 5_000, true)).toEqual(['d']);
			// Its end forgets the oldest beyond the cap, b and a, never c (listed) nor the head.
			expect(store.size).toBe(8);
			expect(store.forgotten).toEqual({ total: 2, last: 2, at: 5_000 });
			const known = dedupe.kind === 'changed' ? 'unchanged' : 'seen';
			expect(verdicts(store.plan(v1(['j', 'c', 'b']), 6_000))).toEqual([
				`j:${known}`,
				`c:${known}`,
				'b:new',
			]);
		},
	);

	it.each(keyedKinds)(
		'$kind: known keys a pass listed before its end (paging on, a page a poll, for an item owed at the end of the list) are kept: the head stays known ground',
		async (dedupe) => {
			const store = loadDedupeStore({ dedupe, maxRemembered: 2, firstPoll: { mode: 'none' } });
			const commit = (items: KeyedItem[], now: number, endsPass: boolean) =>
				store.commit(store.plan(items, now), now, { keyPrefix: PREFIX, endsPass });
			expect(commit(v1(['c', 'b', 'a']), 0, true)).toEqual([]);
			expect(store.size).toBe(3);
			expect(commit(v1(['c']), 1_000, false)).toEqual([]);
			expect(commit(v1(['b']), 2_000, false)).toEqual([]);
			expect(commit(v1(['a']), 3_000, true)).toEqual([]);
			expect(store.size).toBe(3);
			expect(store.forgotten).toBeUndefined();
		},
	);

	it.each(keyedKinds)(
		"$kind: a newest-first list is remembered from its end, so the cap forgets the source's oldest items first, not those just below known ground",
		async (dedupe) => {
			const store = loadDedupeStore({ dedupe, maxRemembered: 8, firstPoll: { mode: 'none' } });
			const commit = (items: KeyedItem[], now: number) =>
				store
					.commit(store.plan(items, now), now, { keyPrefix: PREFIX, newestFirst: true })
					.map((run) => run.candidates[0].key);
			expect(commit(v1(['f', 'e', 'd', 'c', 'b', 'a']), 0)).toEqual([]);
			// Three new at the head, f known: the pass's end forgets one key, the oldest item, a.
			expect(commit(v1(['i', 'h', 'g', 'f']), 1_000)).toEqual(['i', 'h', 'g']);
			const known = dedupe.kind === 'changed' ? 'unchanged' : 'seen';
			expect(verdicts(store.plan(v1(['e', 'b', 'a']), 2_000))).toEqual([
				`e:${known}`,
				`b:${known}`,
				'a:new',
			]);
		},
	);

	it.each(keyedKinds)(
		"$kind: a pass that listed more keys than the cap keeps them all at its end (a first poll's baseline stays whole); the next pass forgets down to the cap",
		async (dedupe) => {
			const store = loadDedupeStore({ dedupe, maxRemembered: 2, firstPoll: { mode: 'none' } });
			const commit = (items: KeyedItem[], now: number, endsPass: boolean) =>
				store.commit(store.plan(items, now), now, { keyPrefix: PREFIX, endsPass });
			// The baseline, then the rest of the pass, a poll later (Max Pages), with a new item.
			expect(commit(v1(['c', 'b']), 0, false)).toEqual([]);
			expect(commit(v1(['a']), 1_000, true).map((run) => run.candidates[0].key)).toEqual(['a']);
			expect(store.size).toBe(3);
			expect(store.forgotten).toBeUndefined();
			expect(await poll(store, v1(['d']), 2_000)).toEqual(['d']);
			expect(store.size).toBe(2);
		},
	);

	it.each(keyedKinds)(
		'$kind: keys the source listed that the poll does not plan (files still uploading) are kept like those it lists',
		async (dedupe) => {
			const store = loadDedupeStore({ dedupe, maxRemembered: 1 });
			expect(await poll(store, v1(['a', 'b', 'c']), 0)).toEqual(['a', 'b', 'c']);
			const listedToo = ['a', 'b', 'c'].map(itemHash);
			expect(store.commit(store.plan([], 1_000), 1_000, { keyPrefix: PREFIX, listedToo })).toEqual(
				[],
			);
			expect(store.size).toBe(3);
			expect(store.forgotten).toBeUndefined();
		},
	);

	it('unique: a forgotten key that comes back starts under the deduplication key of its first start, which n8n refuses while it keeps that execution', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' }, maxRemembered: 1 });
		const [first] = commitPoll(store, keyed(['a']), 0);
		commitPoll(store, keyed(['b']), 1_000);
		const [again] = commitPoll(store, keyed(['a']), 2_000);
		expect(again.candidates[0].verdict).toBe('new');
		expect(again.key).toBe(first.key);
	});

	it.each([{ kind: 'time_window', ttlMs: 24 * HOUR }, { kind: 'changed' }] as const)(
		'$kind: a forgotten key that comes back starts under a new deduplication key',
		(dedupe) => {
			const store = loadDedupeStore({ dedupe, maxRemembered: 1 });
			const [first] = commitPoll(store, v1(['a']), 0);
			commitPoll(store, v1(['b']), 1_000);
			const [again] = commitPoll(store, v1(['a']), 2_000);
			expect(again.candidates[0].verdict).toBe('new');
			expect(again.key).not.toBe(first.key);
		},
	);

	it('time_window: the cap and the TTL each forget; only the cap counts as forgotten', async () => {
		const clock = new FakeClock();
		const store = loadDedupeStore({
			dedupe: { kind: 'time_window', ttlMs: HOUR },
			maxRemembered: 2,
		});
		await poll(store, keyed(['a']), clock.now());
		await clock.advance(2 * HOUR);
		await poll(store, keyed(['b', 'c']), clock.now());
		expect(store.size).toBe(2);
		expect(store.forgotten).toBeUndefined();
		await poll(store, keyed(['d']), clock.now());
		expect(store.forgotten).toEqual({ total: 1, last: 1, at: clock.now() });
	});

	it('a cap lowered on a large history applies at the next commit, and the saved history shrinks with it', async () => {
		const keys = Array.from({ length: 20_000 }, (_, i) => `k-${i}`);
		const big = loadDedupeStore({ dedupe: { kind: 'unique' } });
		await poll(big, keyed(keys), 0);
		const options: DedupeOptions = { dedupe: { kind: 'unique' }, maxRemembered: 5_000 };
		const store = loadDedupeStore(options, JSON.parse(JSON.stringify(big.serialize())));
		expect(store.size).toBe(20_000);
		await poll(store, keyed(['new']), 1_000);
		expect(store.size).toBe(5_000);
		expect(store.forgotten).toEqual({ total: 15_001, last: 15_001, at: 1_000 });
		expect(verdicts(store.plan(keyed(['k-15001', 'k-15000', 'new']), 1_000))).toEqual([
			'k-15001:seen',
			'k-15000:new',
			'new:seen',
		]);
		const restored = reloaded(store, options);
		expect(restored.size).toBe(5_000);
		// At most 1.5 times the live records (dead ones wait for compaction; docs/poll-trigger.md).
		expect(restored.historyBytes).toBeLessThanOrEqual(1.5 * 5_000 * 16 + 100);
	});

	it('a capped store at steady state keeps its saved history within 1.5 times the cap', async () => {
		const options: DedupeOptions = { dedupe: { kind: 'unique' }, maxRemembered: 10_000 };
		let store = loadDedupeStore(options);
		for (let round = 0; round < 30; round++) {
			await poll(
				store,
				keyed(Array.from({ length: 1_000 }, (_, i) => `r${round}-${i}`)),
				round * 1_000,
			);
			store = reloaded(store, options);
			expect(store.size).toBe(Math.min(10_000, (round + 1) * 1_000));
			expect(store.historyBytes).toBe(JSON.stringify(store.serialize().entries).length);
			expect(store.historyBytes).toBeLessThanOrEqual(1.5 * 10_000 * 16 + 100);
		}
		expect(store.forgotten?.total).toBe(20_000);
	});

	it('greatest and last keep a cursor of constant size: the cap changes nothing', async () => {
		for (const kind of ['greatest', 'last'] as const) {
			const store = loadDedupeStore({ dedupe: { kind }, maxRemembered: 1 });
			expect(await poll(store, keyed([1, 2, 3]), 0)).toEqual([1, 2, 3]);
			expect(await poll(store, keyed([1, 2, 3, 4]), 0)).toEqual([4]);
			expect(store.forgotten).toBeUndefined();
		}
	});

	it.each([-1, 2.5, Number.NaN])('refuses a cap of %p, naming the field and the value', (max) => {
		expect(() => loadDedupeStore({ dedupe: { kind: 'unique' }, maxRemembered: max })).toThrow(
			expect.objectContaining({
				name: 'ConfigError',
				field: 'maxRemembered',
				message: `Invalid value ${String(max)} for "«maxRemembered»": must be a whole number of at least 0`,
			}),
		);
	});

	it('refuses a saved record of forgotten keys it cannot read', () => {
		expect(() =>
			loadDedupeStore(
				{ dedupe: { kind: 'unique' } },
				{ v: 1, kind: 'unique', fresh: false, entries: [], forgotten: { total: -1 } },
			),
		).toThrow(/saved dedupe state \(unique\) cannot be read: forgotten must be/);
	});
});

describe('first activation', () => {
	it('all: starts everything the op returns', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'all' } });
		expect(await poll(store, keyed(['a', 'b']), 0)).toEqual(['a', 'b']);
	});

	it.each(['unique', 'time_window', 'changed', 'greatest', 'last'] as const)(
		'none (%s): remembers what is there, starts nothing, then behaves normally',
		async (kind) => {
			const dedupe = kind === 'time_window' ? { kind, ttlMs: HOUR } : { kind };
			const store = loadDedupeStore({ dedupe, firstPoll: { mode: 'none' } });
			const plan = store.plan(keyed(['a', 'b'], ['1', '1']), 0);
			expect(plan.fresh).toBe(true);
			expect(verdicts(plan)).toEqual(['a:baseline', 'b:baseline']);
			expect(await poll(store, keyed(['a', 'b'], ['1', '1']), 0)).toEqual([]);
			expect(store.isFresh).toBe(false);
			expect(await poll(store, keyed(['a', 'b', 'c'], ['1', '1', '1']), 0)).toEqual(['c']);
		},
	);

	it('none: an empty first poll still ends the first activation', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'none' } });
		await poll(store, [], 0);
		expect(await poll(store, keyed(['a']), 0)).toEqual(['a']);
	});

	it('newest: the last N of the list as returned', async () => {
		const store = loadDedupeStore({
			dedupe: { kind: 'unique' },
			firstPoll: { mode: 'newest', count: 2 },
		});
		expect(await poll(store, keyed(['a', 'b', 'c', 'd']), 0)).toEqual(['c', 'd']);
		expect(await poll(store, keyed(['a', 'b', 'c', 'd', 'e']), 0)).toEqual(['e']);
	});

	it('newest: the N highest ids for greatest', async () => {
		const store = loadDedupeStore({
			dedupe: { kind: 'greatest' },
			firstPoll: { mode: 'newest', count: 2 },
		});
		expect(await poll(store, keyed([5, 1, 4, 2, 3]), 0)).toEqual([4, 5]);
		expect(await poll(store, keyed([5, 6]), 0)).toEqual([6]);
	});

	it('newest: the last N for last, with the anchor before them', async () => {
		const store = loadDedupeStore({
			dedupe: { kind: 'last' },
			firstPoll: { mode: 'newest', count: 1 },
		});
		expect(await poll(store, keyed(['a', 'b', 'c']), 0)).toEqual(['c']);
		expect(await poll(store, keyed(['b', 'c', 'd']), 0)).toEqual(['d']);
	});

	it('freshness survives a save and load until a poll commits', async () => {
		const options: DedupeOptions = { dedupe: { kind: 'unique' }, firstPoll: { mode: 'none' } };
		const store = reloaded(loadDedupeStore(options), options);
		expect(store.isFresh).toBe(true);
		await poll(store, keyed(['a']), 0);
		expect(reloaded(store, options).isFresh).toBe(false);
	});

	it('refuses newest without a positive count', () => {
		expect(() =>
			loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'newest', count: 0 } }),
		).toThrow(
			expect.objectContaining({
				field: 'newestCount',
				message: 'Invalid value 0 for "«newestCount»": must be a whole number of at least 1',
			}),
		);
	});
});

describe('one run over all new items', () => {
	it('starts one run with every new item and remembers them all', () => {
		const store = loadDedupeStore({ dedupe: { kind: 'greatest' } });
		const runs = commitPoll(store, keyed([2, 1]), 0, false);
		expect(runs.map((run) => run.candidates.map((c) => c.key))).toEqual([[1, 2]]);
		expect(store.plan(keyed([1, 2, 3]), 0).toStart.map((c) => c.key)).toEqual([3]);
	});

	it('rolls them all back when n8n could not create the run', () => {
		const store = loadDedupeStore({ dedupe: { kind: 'last' } });
		const [run] = commitPoll(store, keyed(['a', 'b']), 0, false);
		store.rollback(run.undo!);
		expect(store.plan(keyed(['a', 'b']), 0).toStart.map((c) => c.key)).toEqual(['a', 'b']);
	});

	it('keys a batch by the items in it, so a batch planned again with other items is another run', () => {
		const options: DedupeOptions = { dedupe: { kind: 'unique' } };
		const before = loadDedupeStore(options).serialize();
		const [ab] = commitPoll(loadDedupeStore(options, before), keyed(['a', 'b']), 0, false);
		const [abAgain] = commitPoll(loadDedupeStore(options, before), keyed(['b', 'a']), 0, false);
		const [abc] = commitPoll(loadDedupeStore(options, before), keyed(['a', 'b', 'c']), 0, false);
		expect(abAgain.key).not.toBe(ab.key); // start order is part of the batch
		expect(abc.key).not.toBe(ab.key);
		const [abSame] = commitPoll(loadDedupeStore(options, before), keyed(['a', 'b']), 0, false);
		expect(abSame.key).toBe(ab.key);
	});
});

describe('deduplication keys', () => {
	const changed: DedupeOptions = { dedupe: { kind: 'changed' } };
	const versioned = (version: string) => keyed(['x'], [version]);

	it('are never those of another store: switching the kind away and back starts the new version', () => {
		const first = loadDedupeStore(changed);
		const old = [
			...runKeys(commitPoll(first, versioned('1'), 0)),
			...runKeys(commitPoll(first, versioned('2'), 0)),
		];
		// unique and back to changed: a fresh store (its first poll takes x@2 as the baseline here).
		const again = loadDedupeStore(
			{ ...changed, firstPoll: { mode: 'none' } },
			loadDedupeStore({ dedupe: { kind: 'unique' } }).serialize(),
		);
		expect(again.id).not.toBe(first.id);
		commitPoll(again, versioned('2'), 0);
		const x3 = runKeys(commitPoll(again, versioned('3'), 0));
		const x4 = runKeys(commitPoll(again, versioned('4'), 0));
		expect(x3).toHaveLength(1);
		expect(old).not.toContain(x3[0]);
		expect(old).not.toContain(x4[0]);
	});

	it('are the same for the same start planned again after a crash, and differ for a newer version', () => {
		const store = loadDedupeStore(changed);
		commitPoll(store, versioned('1'), 0);
		const saved = JSON.parse(JSON.stringify(store.serialize())) as SavedDedupeState;
		const [created] = runKeys(commitPoll(loadDedupeStore(changed, saved), versioned('2'), 0));
		// The state write was lost: the same poll planned again starts the same thing, or a newer one.
		expect(runKeys(commitPoll(loadDedupeStore(changed, saved), versioned('2'), 0))).toEqual([
			created,
		]);
		expect(runKeys(commitPoll(loadDedupeStore(changed, saved), versioned('3'), 0))).not.toEqual([
			created,
		]);
	});

	it('differ for every start of a key that comes back: A, B, A again', () => {
		const store = loadDedupeStore(changed);
		const keys = ['A', 'B', 'A'].flatMap((version) =>
			runKeys(commitPoll(store, versioned(version), 0)),
		);
		expect(new Set(keys).size).toBe(3);
	});

	it('differ for a time_window key that starts again after it expired, and survive a save and load', () => {
		const options: DedupeOptions = { dedupe: { kind: 'time_window', ttlMs: HOUR } };
		const store = loadDedupeStore(options);
		const first = runKeys(commitPoll(store, keyed(['a']), 0));
		const second = runKeys(commitPoll(reloaded(store, options), keyed(['a']), 2 * HOUR));
		expect(second).toHaveLength(1);
		expect(second).not.toEqual(first);
		const saved = store.serialize();
		expect(runKeys(commitPoll(loadDedupeStore(options, saved), keyed(['a']), 2 * HOUR))).toEqual(
			second,
		);
	});

	it('are drawn for a state saved before stores had ids, then kept', () => {
		const options: DedupeOptions = { dedupe: { kind: 'unique' } };
		const { id, ...withoutId } = loadDedupeStore(options).serialize();
		expect(id).toMatch(/^[0-9a-f]{16}$/);
		const upgraded = loadDedupeStore(options, withoutId);
		expect(upgraded.id).toMatch(/^[0-9a-f]{16}$/);
		expect(reloaded(upgraded, options).id).toBe(upgraded.id);
	});
});

describe('saved state', () => {
	it('state of another kind means nothing to greatest: the next poll is a first poll, and the notice says so', async () => {
		const unique = loadDedupeStore({ dedupe: { kind: 'unique' } });
		await poll(unique, keyed(['a']), 0);
		const { store, notice } = loadWithNotice(
			{ dedupe: { kind: 'greatest' }, firstPoll: { mode: 'none' } },
			unique.serialize(),
		);
		expect(store.isFresh).toBe(true);
		expect(notice).toMatch(/"unique" to "greatest".*first poll/);
		expect(await poll(store, keyed(['a', 'b']), 0)).toEqual([]);
	});

	it("unique and time_window carry each other's records over", async () => {
		const unique = loadDedupeStore({ dedupe: { kind: 'unique' } });
		await poll(unique, keyed(['a']), 0);
		const { store: windowed, notice } = loadWithNotice(
			{ dedupe: { kind: 'time_window', ttlMs: HOUR } },
			unique.serialize(),
		);
		expect(notice).toMatch(/carry over/);
		expect(verdicts(windowed.plan(keyed(['a', 'b']), 1_000))).toEqual(['a:seen', 'b:new']);
		expect(verdicts(windowed.plan(keyed(['a']), 2 * HOUR))).toEqual(['a:expired']);
		await poll(windowed, keyed(['b']), 1_000);
		const back = loadDedupeStore({ dedupe: { kind: 'unique' } }, windowed.serialize());
		expect(verdicts(back.plan(keyed(['a', 'b']), 3 * HOUR))).toEqual(['a:seen', 'b:seen']);
	});

	it('refuses state it cannot read rather than start over', () => {
		expect(() => loadDedupeStore({ dedupe: { kind: 'unique' } }, { v: 2 })).toThrow(
			'unknown format',
		);
		expect(() =>
			loadDedupeStore(
				{ dedupe: { kind: 'unique' } },
				{ v: 1, kind: 'unique', fresh: false, entries: ['AAAA'] },
			),
		).toThrow(/saved dedupe state \(unique\) cannot be read: entries hold 3 bytes/);
	});

	it('re-encodes only the chunks a poll touched', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' } });
		await poll(store, keyed(Array.from({ length: 10_000 }, (_, i) => i)), 0);
		const before = store.serialize().entries as string[];
		await poll(store, keyed([10_000]), 0);
		const after = store.serialize().entries as string[];
		expect(after.slice(0, -1)).toEqual(before.slice(0, -1));
		expect(after[0]).toBe(before[0]); // the same string, not re-encoded
	});

	it('survives deletes and compaction in a long-running time window', async () => {
		const clock = new FakeClock();
		const options: DedupeOptions = { dedupe: { kind: 'time_window', ttlMs: HOUR } };
		let store = loadDedupeStore(options);
		for (let round = 0; round < 6; round++) {
			await poll(
				store,
				keyed(Array.from({ length: 2_000 }, (_, i) => `r${round}-${i}`)),
				clock.now(),
			);
			await clock.advance(HOUR / 2);
			store = reloaded(store, options);
		}
		// Entries an hour old were pruned at the last poll; the last two rounds remain, one now expired.
		expect(store.size).toBe(4_000);
		const saved = store.serialize() as SavedDedupeState;
		expect(JSON.stringify(saved).length / store.size).toBeLessThanOrEqual(32);
		expect(verdicts(store.plan(keyed(['r5-0', 'r4-1', 'r3-2']), clock.now()))).toEqual([
			'r5-0:seen',
			'r4-1:expired',
			'r3-2:new',
		]);
	});

	it.each([
		{ kind: 'unique' } as const,
		{ kind: 'time_window', ttlMs: 24 * HOUR } as const,
		{ kind: 'changed' } as const,
	])('takes at most 32 bytes per remembered key ($kind, 10k keys)', async (dedupe) => {
		const store = loadDedupeStore({ dedupe });
		const keys = Array.from({ length: 10_000 }, (_, i) => `message-${i}@example.com`);
		await poll(
			store,
			keyed(
				keys,
				keys.map((k) => `${k}:v1`),
			),
			0,
		);
		expect(store.size).toBe(10_000);
		const bytesPerKey = JSON.stringify(store.serialize()).length / store.size;
		expect(bytesPerKey).toBeLessThanOrEqual(32);
	});
});

describe('none', () => {
	test('starts every item on every poll and remembers nothing', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'none' } });
		for (let round = 0; round < 2; round++) {
			const runs = commitPoll(store, keyed([1, 2]), 0);
			expect(runs.map((run) => [run.candidates[0].verdict, run.key])).toEqual([
				['new', undefined],
				['new', undefined],
			]);
		}
		expect(
			loadDedupeStore(
				{ dedupe: { kind: 'none' } },
				JSON.parse(JSON.stringify(store.serialize())),
			).plan(keyed([1, 2]), 0).toStart,
		).toHaveLength(2);
	});
});

describe('rolled back and started again: fresh deduplication keys, bounded', () => {
	const kinds: DedupeOptions[] = [
		{ dedupe: { kind: 'unique' } },
		{ dedupe: { kind: 'time_window', ttlMs: HOUR } },
		{ dedupe: { kind: 'changed' } },
		{ dedupe: { kind: 'greatest' } },
		{ dedupe: { kind: 'last' } },
	];
	const items = (ids: number[]) =>
		keyed(
			ids,
			ids.map(() => 'v1'),
		);

	it.each(kinds)(
		'$dedupe.kind: a rolled-back item starts once more, each time under a key none of its starts had; the others keep theirs',
		(options) => {
			let store = loadDedupeStore(options);
			const first = commitPoll(store, items([1, 2, 3]), 0);
			const seen = new Set(runKeys(first));
			let failed = first[1];
			for (let round = 0; round < 3; round++) {
				store.rollback(failed.undo, [2]);
				store = reloaded(store, options);
				const again = commitPoll(store, items([1, 2, 3]), 0);
				// `last` also brings back 3, with the key it had: n8n refuses it. `greatest` knows 3
				// was started (the mark it took back).
				const last = options.dedupe.kind === 'last';
				expect(again.map((run) => run.candidates[0].key)).toEqual(last ? [2, 3] : [2]);
				expect(seen.has(again[0].key as string)).toBe(false);
				if (last) expect(again[1].key).toBe(first[2].key);
				seen.add(again[0].key as string);
				failed = again[0];
			}
			expect(commitPoll(store, items([1, 2, 3]), 0)).toEqual([]);
		},
	);

	it('keys of items never rolled back are the keys they had before attempts existed', () => {
		const options: DedupeOptions = { dedupe: { kind: 'unique' } };
		const saved = JSON.parse(JSON.stringify(loadDedupeStore(options).serialize()));
		const a = runKeys(commitPoll(loadDedupeStore(options, saved), keyed(['x', 'y']), 0));
		const store = loadDedupeStore(options, saved);
		store.startAgain(['zzz']);
		expect(runKeys(commitPoll(store, keyed(['x', 'y']), 0))).toEqual(a);
	});

	it('a poll planned again after a crash (same saved state) gets the same key for the same start again', () => {
		const options: DedupeOptions = { dedupe: { kind: 'greatest' } };
		const store = loadDedupeStore(options);
		const [, run2] = commitPoll(store, keyed([1, 2]), 0);
		store.rollback(run2.undo, [2]);
		const before = JSON.parse(JSON.stringify(store.serialize()));
		const once = runKeys(commitPoll(loadDedupeStore(options, before), keyed([1, 2]), 0));
		const twice = runKeys(commitPoll(loadDedupeStore(options, before), keyed([1, 2]), 0));
		expect(once).toEqual(twice);
		expect(once[0]).not.toBe(run2.key);
	});

	it.each(kinds)(
		'$dedupe.kind: startAgain starts a seen item once more under a fresh key, changes nothing else, and only once',
		(options) => {
			const store = loadDedupeStore(options);
			const first = commitPoll(store, items([1, 2, 3]), 0);
			store.startAgain([2, 99]);
			expect(store.againCount).toBe(2);
			const again = commitPoll(reloaded(store, options), items([1, 2, 3]), 0);
			expect(again.map((run) => [run.candidates[0].key, run.candidates[0].verdict])).toEqual([
				[2, 'again'],
			]);
			expect(runKeys(first)).not.toContain(again[0].key);
			const restored = reloaded(store, options);
			commitPoll(restored, items([1, 2, 3]), 0);
			expect(commitPoll(restored, items([1, 2, 3]), 0)).toEqual([]);
			// 99 was not listed: it stays marked until a poll lists it.
			expect(restored.againCount).toBe(1);
		},
	);

	it('a start again n8n could not create is marked again, under yet another key', () => {
		const options: DedupeOptions = { dedupe: { kind: 'last' } };
		const store = loadDedupeStore(options);
		const first = commitPoll(store, keyed(['a', 'b']), 0);
		store.startAgain(['a']);
		const [again] = commitPoll(store, keyed(['a', 'b']), 0);
		expect(again.undo).toBeUndefined();
		store.rollback(again.undo, ['a']);
		const [third] = commitPoll(store, keyed(['a', 'b']), 0);
		expect(third.candidates[0].key).toBe('a');
		expect(new Set([first[0].key, again.key, third.key]).size).toBe(3);
		expect(commitPoll(store, keyed(['a', 'b', 'c']), 0).map((r) => r.candidates[0].key)).toEqual([
			'c',
		]);
	});

	it('owed items a poll listed (rolled back, restaged) are told from the keys Start Again named, across a reload, until started', () => {
		const options: DedupeOptions = { dedupe: { kind: 'unique' } };
		const store = loadDedupeStore(options);
		commitPoll(store, keyed(['a']), 0);
		const [b, c] = commitPoll(store, keyed(['b', 'c', 'a']), 0);
		store.rollback(b.undo, ['b']);
		store.restage([{ key: c.key!, undo: c.undo, itemKey: 'c' }]);
		store.startAgain(['a', 'zzz']);
		const listed = (from: DedupeStore) => [...from.listedOwedHashes()].sort();
		expect(listed(store)).toEqual([itemHash('b'), itemHash('c')].sort());
		expect(store.owedHashes().size).toBe(4);
		const restored = reloaded(store, options);
		expect(listed(restored)).toEqual(listed(store));
		commitPoll(restored, keyed(['b', 'c', 'a']), 0);
		expect(listed(restored)).toEqual([]);
		expect(restored.serialize().rolledBack).toBeUndefined();
	});

	it('keeps at most MAX_ATTEMPTS_KEPT attempt numbers and MAX_AGAIN_KEPT marks, newest kept', () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' } });
		store.startAgain(Array.from({ length: 1500 }, (_, i) => i));
		const saved = store.serialize();
		expect(saved.attempts).toHaveLength(1000);
		expect(saved.again).toHaveLength(1000);
		expect(store.plan(keyed([0, 499, 500, 1499]), 0).toStart.map((c) => c.key)).toEqual([
			0, 499, 500, 1499,
		]);
		// Started on a fresh store the keys are all new; a seen store shows which are marked.
		commitPoll(store, keyed([0, 499, 500, 1499]), 0);
		expect(store.againCount).toBe(998);
	});
});

describe('deduplication keys name their item', () => {
	const options: DedupeOptions = { dedupe: { kind: 'unique' } };

	it("a one-item run: <prefix><hash>:<item key>, with #<attempt> once the item has one; cut to n8n's 255 characters", () => {
		const store = loadDedupeStore(options);
		const long = 'x'.repeat(400);
		const [a, n, cut] = runKeys(commitPoll(store, keyed(['INC-101', 42, long]), 0));
		expect(a).toMatch(/^poll:wf:node:[0-9a-f]{16}:INC-101$/);
		expect(n).toMatch(/^poll:wf:node:[0-9a-f]{16}:42$/);
		expect(cut).toHaveLength(MAX_DEDUPLICATION_KEY_CHARS);
		expect(cut.endsWith('x…')).toBe(true);
		store.startAgain(['INC-101']);
		const [again] = runKeys(commitPoll(store, keyed(['INC-101']), 0));
		expect(again).toMatch(/^poll:wf:node:[0-9a-f]{16}:INC-101#1$/);
		expect(again).not.toBe(a);
	});
});

describe('restaged runs (one-item runs a crash may have cut short)', () => {
	const restageAll = (store: DedupeStore, runs: PlannedRun[]) =>
		store.restage(
			[...runs]
				.reverse()
				.map(({ key, undo, candidates }) => ({ key: key!, undo, itemKey: candidates[0].key })),
		);

	test("changed: two unsettled runs of one item (v2, then v3): the item at v3 goes out under the v3 run's key", () => {
		const store = loadDedupeStore({ dedupe: { kind: 'changed' } });
		commitPoll(store, keyed(['x'], ['v1']), 0);
		const v2 = commitPoll(store, keyed(['x'], ['v2']), HOUR);
		const v3 = commitPoll(store, keyed(['x'], ['v3']), 2 * HOUR);
		restageAll(store, [...v2, ...v3]);
		const again = commitPoll(store, keyed(['x'], ['v3']), 3 * HOUR);
		expect(again.map(({ key }) => key)).toEqual(v3.map(({ key }) => key));
	});

	test('Start Again of a restaged item: a new key, not the restaged one', () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' } });
		const runs = commitPoll(store, keyed(['a']), 0);
		restageAll(store, runs);
		store.startAgain(['a']);
		const again = commitPoll(store, keyed(['a']), HOUR);
		expect(again).toHaveLength(1);
		expect(again[0].key).not.toBe(runs[0].key);
	});

	test('restaged after its Start Again (its run still going at the publish, cut by a kill before a poll started it again): a new key, not the restaged one', () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' } });
		const runs = commitPoll(store, keyed(['a', 'b']), 0);
		store.startAgain(['a']);
		restageAll(store, runs);
		const again = commitPoll(store, keyed(['a', 'b']), HOUR);
		// a under a new attempt (n8n holds the run it created under the old key); b under its run's key.
		expect(again.map((run) => run.candidates[0].key)).toEqual(['a', 'b']);
		expect(again[0].key).not.toBe(runs[0].key);
		expect(again[1].key).toBe(runs[1].key);
	});

	test('Start Again, then a crash restages the run that went out before it (n8n created it): the item starts under a new attempt, not under the restaged key n8n refuses', () => {
		const options: DedupeOptions = { dedupe: { kind: 'unique' } };
		const store = loadDedupeStore(options);
		const runs = commitPoll(store, keyed(['a', 'b']), 0);
		store.startAgain(['a']);
		const restarted = reloaded(store, options);
		restageAll(restarted, runs);
		const next = commitPoll(restarted, keyed(['a', 'b']), HOUR);
		expect(next.map((run) => run.key)).toEqual([expect.stringMatching(/:a#1$/), runs[1].key]);
	});

	test('a restaged entry that is not an array pair is refused when loaded', () => {
		expect(() =>
			loadDedupeStore({ dedupe: { kind: 'unique' } }, {
				v: 1,
				kind: 'unique',
				fresh: false,
				restaged: [{ key: 'k' }],
			} as unknown as SavedDedupeState),
		).toThrow(/a restaged entry must be \[hash, key\]/);
	});
});
