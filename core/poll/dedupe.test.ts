import { FakeClock } from '../testing/fakeClock';
import { type Candidate, type DedupeOptions, type DedupeStore, loadDedupeStore, type PollPlan, type SavedDedupeState } from './dedupe';
import { PollConfigError, PollItemError } from './errors';
import type { ItemKey, KeyedItem } from './expressions';
import { startNewItems } from './start';

const HOUR = 3_600_000;

function keyed(keys: ItemKey[], versions?: string[]): KeyedItem[] {
	return keys.map((key, index) => ({ item: { id: key }, key, index, version: versions?.[index] }));
}

/** A poll through the full protocol; returns the keys that started. */
async function poll(store: DedupeStore, items: KeyedItem[], now: number): Promise<ItemKey[]> {
	const started: ItemKey[] = [];
	await startNewItems(store, store.plan(items, now), { now, start: ([c]) => void started.push(c.key) });
	return started;
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
		expect(verdicts(store.plan(keyed(['a', 'a', 'b']), 0))).toEqual(['a:new', 'a:duplicate', 'b:new']);
	});

	it('plan does not change the store (a dry run)', () => {
		const store = loadDedupeStore(options);
		const before = JSON.stringify(store.serialize());
		store.plan(keyed(['a', 'b']), 0);
		store.plan(keyed(['a', 'b']), 0);
		expect(JSON.stringify(store.serialize())).toBe(before);
		expect(store.isFresh).toBe(true);
	});

	it('claim is put-if-absent: a second claim of the same key, or a claim of a key already started, is refused', async () => {
		const store = loadDedupeStore(options);
		const planA = store.plan(keyed(['a']), 0);
		const planB = store.plan(keyed(['a']), 0);
		store.settle(planA, 0);
		expect(store.claim(planA.toStart[0], 0)).toBe(true);
		expect(store.claim(planB.toStart[0], 0)).toBe(false);
		store.commit(planA.toStart[0], 0);
		expect(store.claim(planB.toStart[0], 0)).toBe(false);
	});

	it('a key whose start failed comes back on the next poll; keys started before it stay remembered', async () => {
		const store = loadDedupeStore(options);
		const started: ItemKey[] = [];
		const failing = startNewItems(store, store.plan(keyed(['a', 'b', 'c']), 0), {
			now: 0,
			start: ([c]) => {
				if (c.key === 'b') throw new Error('emit failed');
				started.push(c.key);
			},
		});
		await expect(failing).rejects.toThrow('emit failed');
		expect(started).toEqual(['a']);
		expect(await poll(store, keyed(['a', 'b', 'c']), 0)).toEqual(['b', 'c']);
	});

	it('commit needs a claim', () => {
		const store = loadDedupeStore(options);
		const plan = store.plan(keyed(['a']), 0);
		store.settle(plan, 0);
		expect(() => store.commit(plan.toStart[0], 0)).toThrow('without a claim');
	});

	it('claim needs a settled store', () => {
		const store = loadDedupeStore(options);
		const plan = store.plan(keyed(['a']), 0);
		expect(() => store.claim(plan.toStart[0], 0)).toThrow('settle(plan) must come before claim()');
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

	it('prunes expired entries when a poll settles; a pruned key is simply new', async () => {
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
		expect(() => loadDedupeStore({ dedupe: { kind: 'time_window', ttlMs: 10 } })).toThrow(PollConfigError);
	});
});

describe('greatest', () => {
	const options: DedupeOptions = { dedupe: { kind: 'greatest' } };

	it('starts ids above the high-water mark in ascending order', async () => {
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed([3, 1, 2]), 0)).toEqual([1, 2, 3]);
		const plan = store.plan(keyed([5, 3, 4, 2]), 0);
		expect(verdicts(plan)).toEqual(['2:at_or_below_watermark', '3:at_or_below_watermark', '4:new', '5:new']);
		expect(plan.candidates.map((c) => c.index)).toEqual([3, 1, 2, 0]);
		expect(await poll(store, keyed([5, 3, 4, 2]), 0)).toEqual([4, 5]);
	});

	it('compares numbers as numbers and strings as strings', async () => {
		const numbers = loadDedupeStore(options);
		expect(await poll(numbers, keyed([10, 9]), 0)).toEqual([9, 10]);
		const strings = loadDedupeStore(options);
		expect(await poll(strings, keyed(['2026-01-02T00:00Z', '2026-01-01T00:00Z']), 0)).toEqual(['2026-01-01T00:00Z', '2026-01-02T00:00Z']);
		expect(await poll(strings, keyed(['2026-01-01T12:00Z', '2026-01-03T00:00Z']), 0)).toEqual(['2026-01-03T00:00Z']);
	});

	it('refuses a poll that mixes numbers and strings', () => {
		const store = loadDedupeStore(options);
		expect(() => store.plan(keyed([1, 2, '3']), 0)).toThrow(PollItemError);
		expect(() => store.plan(keyed([1, 2, '3']), 0)).toThrow(/^Item 2: dedupe "greatest" compares ids, but this poll mixes numbers and strings: item 0 has 1, item 2 has "3"/);
	});

	it('refuses ids of another kind than the remembered mark', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed([42]), 0);
		expect(() => store.plan(keyed(['43']), 0)).toThrow(/remembers the number 42 as its high-water mark, but this poll's ids are strings \("43"\)/);
	});

	it('does not move past an item whose start failed', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed([1]), 0);
		const started: ItemKey[] = [];
		await expect(
			startNewItems(store, store.plan(keyed([2, 3, 4]), 0), {
				now: 0,
				start: ([c]) => {
					if (c.key === 3) throw new Error('emit failed');
					started.push(c.key);
				},
			}),
		).rejects.toThrow('emit failed');
		expect(started).toEqual([2]);
		expect(await poll(store, keyed([2, 3, 4]), 0)).toEqual([3, 4]);
	});

	it('refuses to claim out of order, and a plan another poll has overtaken', () => {
		const store = loadDedupeStore(options);
		const plan = store.plan(keyed([1, 2]), 0);
		const stale = store.plan(keyed([1, 2]), 0);
		store.settle(plan, 0);
		const [first, second] = plan.toStart;
		expect(store.claim(second, 0)).toBe(false);
		expect(store.claim(first, 0)).toBe(true);
		expect(store.claim(second, 0)).toBe(true); // chained to a pending claim
		expect(() => store.commit(second, 0)).toThrow('before the items claimed ahead of it');
		store.commit(first, 0);
		store.commit(second, 0);
		expect(store.claim(stale.toStart[0], 0)).toBe(false);
		expect(store.claim(stale.toStart[1], 0)).toBe(false);
	});

	it('releasing a claim releases the claims chained after it', () => {
		const store = loadDedupeStore(options);
		const plan = store.plan(keyed([1, 2, 3]), 0);
		store.settle(plan, 0);
		const [first, second, third] = plan.toStart;
		expect(store.claim(first, 0) && store.claim(second, 0) && store.claim(third, 0)).toBe(true);
		store.release(second);
		expect(() => store.commit(third, 0)).toThrow('without a claim');
		store.commit(first, 0);
		expect(store.claim(second, 0)).toBe(true);
	});

	it('keeps its mark across a save and load', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['b', 'a']), 0);
		expect(store.serialize()).toEqual({ v: 1, kind: 'greatest', fresh: false, watermark: 'b' });
		expect(await poll(reloaded(store, options), keyed(['a', 'b', 'c']), 0)).toEqual(['c']);
	});
});

describe('last', () => {
	const options: DedupeOptions = { dedupe: { kind: 'last' } };

	it('starts the items after the previous poll’s last item', async () => {
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed(['a', 'b', 'c']), 0)).toEqual(['a', 'b', 'c']);
		expect(verdicts(store.plan(keyed(['b', 'c', 'd', 'e']), 0))).toEqual(['b:seen', 'c:seen', 'd:new', 'e:new']);
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

	it('does not move past an item whose start failed, across a save and load', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a']), 0);
		await expect(
			startNewItems(store, store.plan(keyed(['a', 'b', 'c']), 0), {
				now: 0,
				start: ([c]) => {
					if (c.key === 'c') throw new Error('emit failed');
				},
			}),
		).rejects.toThrow('emit failed');
		expect(await poll(reloaded(store, options), keyed(['a', 'b', 'c']), 0)).toEqual(['c']);
	});
});

describe('changed', () => {
	const options: DedupeOptions = { dedupe: { kind: 'changed' } };

	it('starts a key that is new or whose version differs', async () => {
		const store = loadDedupeStore(options);
		expect(await poll(store, keyed(['a', 'b'], ['1', '1']), 0)).toEqual(['a', 'b']);
		expect(verdicts(store.plan(keyed(['a', 'b', 'c'], ['1', '2', '1']), 0))).toEqual(['a:unchanged', 'b:changed', 'c:new']);
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

	it('a version whose start failed comes back', async () => {
		const store = loadDedupeStore(options);
		await poll(store, keyed(['a'], ['1']), 0);
		const plan = store.plan(keyed(['a'], ['2']), 0);
		store.settle(plan, 0);
		expect(store.claim(plan.toStart[0], 0)).toBe(true);
		store.release(plan.toStart[0]);
		expect(await poll(store, keyed(['a'], ['2']), 0)).toEqual(['a']);
	});
});

describe('first activation', () => {
	it('all: starts everything the op returns', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'all' } });
		expect(await poll(store, keyed(['a', 'b']), 0)).toEqual(['a', 'b']);
	});

	it.each(['unique', 'time_window', 'changed', 'greatest', 'last'] as const)('none (%s): remembers what is there, starts nothing, then behaves normally', async (kind) => {
		const dedupe = kind === 'time_window' ? { kind, ttlMs: HOUR } : { kind };
		const store = loadDedupeStore({ dedupe, firstPoll: { mode: 'none' } });
		const plan = store.plan(keyed(['a', 'b'], ['1', '1']), 0);
		expect(plan.fresh).toBe(true);
		expect(verdicts(plan)).toEqual(['a:baseline', 'b:baseline']);
		expect(await poll(store, keyed(['a', 'b'], ['1', '1']), 0)).toEqual([]);
		expect(store.isFresh).toBe(false);
		expect(await poll(store, keyed(['a', 'b', 'c'], ['1', '1', '1']), 0)).toEqual(['c']);
	});

	it('none: an empty first poll still ends the first activation', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'none' } });
		await poll(store, [], 0);
		expect(await poll(store, keyed(['a']), 0)).toEqual(['a']);
	});

	it('newest: the last N of the list as returned', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'newest', count: 2 } });
		expect(await poll(store, keyed(['a', 'b', 'c', 'd']), 0)).toEqual(['c', 'd']);
		expect(await poll(store, keyed(['a', 'b', 'c', 'd', 'e']), 0)).toEqual(['e']);
	});

	it('newest: the N highest ids for greatest', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'greatest' }, firstPoll: { mode: 'newest', count: 2 } });
		expect(await poll(store, keyed([5, 1, 4, 2, 3]), 0)).toEqual([4, 5]);
		expect(await poll(store, keyed([5, 6]), 0)).toEqual([6]);
	});

	it('newest: the last N for last, with the anchor before them', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'last' }, firstPoll: { mode: 'newest', count: 1 } });
		expect(await poll(store, keyed(['a', 'b', 'c']), 0)).toEqual(['c']);
		expect(await poll(store, keyed(['b', 'c', 'd']), 0)).toEqual(['d']);
	});

	it('freshness survives a save and load until a poll settles', async () => {
		const options: DedupeOptions = { dedupe: { kind: 'unique' }, firstPoll: { mode: 'none' } };
		const store = reloaded(loadDedupeStore(options), options);
		expect(store.isFresh).toBe(true);
		await poll(store, keyed(['a']), 0);
		expect(reloaded(store, options).isFresh).toBe(false);
	});

	it('refuses newest without a positive count', () => {
		expect(() => loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'newest', count: 0 } })).toThrow(
			expect.objectContaining({ field: 'newest' }),
		);
	});
});

describe('one run over all new items', () => {
	it('starts one run with every new item and commits them all', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'greatest' } });
		const runs: ItemKey[][] = [];
		const started = await startNewItems(store, store.plan(keyed([2, 1]), 0), { now: 0, onePerItem: false, start: (cs) => void runs.push(cs.map((c) => c.key)) });
		expect(started).toBe(2);
		expect(runs).toEqual([[1, 2]]);
		expect(store.plan(keyed([1, 2, 3]), 0).toStart.map((c) => c.key)).toEqual([3]);
	});

	it('releases them all when the start fails', async () => {
		const store = loadDedupeStore({ dedupe: { kind: 'last' } });
		await expect(
			startNewItems(store, store.plan(keyed(['a', 'b']), 0), {
				now: 0,
				onePerItem: false,
				start: () => {
					throw new Error('emit failed');
				},
			}),
		).rejects.toThrow('emit failed');
		expect(await poll(store, keyed(['a', 'b']), 0)).toEqual(['a', 'b']);
	});
});

describe('saved state', () => {
	it('drops saved state of another kind and starts fresh', async () => {
		const unique = loadDedupeStore({ dedupe: { kind: 'unique' } });
		await poll(unique, keyed(['a']), 0);
		const greatest = loadDedupeStore({ dedupe: { kind: 'greatest' } }, unique.serialize());
		expect(greatest.isFresh).toBe(true);
	});

	it('refuses state it cannot read rather than start over', () => {
		expect(() => loadDedupeStore({ dedupe: { kind: 'unique' } }, { v: 2 })).toThrow('unknown format');
		expect(() => loadDedupeStore({ dedupe: { kind: 'unique' } }, { v: 1, kind: 'unique', fresh: false, entries: ['AAAA'] })).toThrow(
			/saved dedupe state \(unique\) cannot be read: entries hold 3 bytes/,
		);
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
			await poll(store, keyed(Array.from({ length: 2_000 }, (_, i) => `r${round}-${i}`)), clock.now());
			await clock.advance(HOUR / 2);
			store = reloaded(store, options);
		}
		// Entries an hour old were pruned at the last poll; the last two rounds remain, one now expired.
		expect(store.size).toBe(4_000);
		const saved = store.serialize() as SavedDedupeState;
		expect(JSON.stringify(saved).length / store.size).toBeLessThanOrEqual(32);
		expect(verdicts(store.plan(keyed(['r5-0', 'r4-1', 'r3-2']), clock.now()))).toEqual(['r5-0:seen', 'r4-1:expired', 'r3-2:new']);
	});

	it.each([
		{ kind: 'unique' } as const,
		{ kind: 'time_window', ttlMs: 24 * HOUR } as const,
		{ kind: 'changed' } as const,
	])('takes at most 32 bytes per remembered key ($kind, 10k keys)', async (dedupe) => {
		const store = loadDedupeStore({ dedupe });
		const keys = Array.from({ length: 10_000 }, (_, i) => `message-${i}@example.com`);
		await poll(store, keyed(keys, keys.map((k) => `${k}:v1`)), 0);
		expect(store.size).toBe(10_000);
		const bytesPerKey = JSON.stringify(store.serialize()).length / store.size;
		expect(bytesPerKey).toBeLessThanOrEqual(32);
	});
});

describe('speed', () => {
	/** A unique store remembering `size` keys, built the way a restart would (from saved state). */
	function storeRemembering(size: number): DedupeStore {
		const seeded = loadDedupeStore({ dedupe: { kind: 'unique' } });
		const plan = seeded.plan(keyed(Array.from({ length: size }, (_, i) => `old-${i}`)), 0);
		seeded.settle(plan, 0);
		for (const candidate of plan.toStart as Array<Candidate>) {
			seeded.claim(candidate, 0);
			seeded.commit(candidate, 0);
		}
		return loadDedupeStore({ dedupe: { kind: 'unique' } }, seeded.serialize());
	}

	function timePoll(store: DedupeStore, items: KeyedItem[]): number {
		const startedAt = performance.now();
		const plan = store.plan(items, 0);
		store.settle(plan, 0);
		return performance.now() - startedAt;
	}

	it('plans a 10,000-item poll in time flat in the history size', () => {
		const items = keyed(Array.from({ length: 10_000 }, (_, i) => `new-${i}`));
		const small = storeRemembering(10_000);
		const large = storeRemembering(100_000);
		// Warm up, then take the best of a few runs to keep noise out.
		const best = (store: DedupeStore) => Math.min(...[0, 1, 2, 3, 4].map(() => timePoll(store, items)));
		best(small);
		const smallMs = best(small);
		const largeMs = best(large);
		expect(largeMs).toBeLessThan(Math.max(5 * smallMs, 20));
	});
});

describe('none', () => {
	test('starts every item on every poll and remembers nothing', async () => {
		const { loadDedupeStore: load, PollExpressions: Expressions, startNewItems: startAll } = await import('./index');
		const expressions = new Expressions({ id: 'uid' });
		const store = load({ dedupe: { kind: 'none' } });
		const keyed = await expressions.keyItems([{ uid: 1 }, { uid: 2 }], { withVersion: false });
		for (let poll = 0; poll < 2; poll++) {
			const plan = store.plan(keyed, 0);
			expect(plan.candidates.map((c) => c.verdict)).toEqual(['new', 'new']);
			await expect(startAll(store, plan, { now: 0, start: () => undefined })).resolves.toBe(2);
		}
		expect(load({ dedupe: { kind: 'none' } }, JSON.parse(JSON.stringify(store.serialize()))).plan(keyed, 0).toStart).toHaveLength(2);
	});
});
