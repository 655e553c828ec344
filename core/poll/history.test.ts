import { FakeClock } from '../../test/support/fakeClock';
import type { ForgottenKeys } from './dedupe';
import {
	HISTORY_WARNING_BYTES,
	historyLevel,
	historySummary,
	HistoryWatch,
	type WatchedStore,
} from './history';
import { loadDedupeStore } from './kinds';

/** A store as the watch sees it, its size set by the test (16 characters a key, as `unique`). */
function fakeStore(keys: number, forgotten?: ForgottenKeys): WatchedStore & { keys: number } {
	return {
		keys,
		get size() {
			return this.keys;
		},
		get historyBytes() {
			return this.keys * 16;
		},
		forgotten,
	};
}

describe('historyLevel', () => {
	it('counts the warning levels a history has passed', () => {
		expect(HISTORY_WARNING_BYTES).toEqual([1_000_000, 4_000_000, 16_000_000]);
		expect([0, 999_999, 1_000_000, 4_000_000, 20_000_000].map(historyLevel)).toEqual([
			0, 0, 1, 2, 3,
		]);
	});
});

describe('HistoryWatch', () => {
	it('warns at activation when the history is past a level, then only when it passes a higher one, never once per poll', () => {
		const store = fakeStore(70_000);
		const watch = new HistoryWatch(store, 0);
		const [atActivation] = watch.check().warnings;
		expect(atActivation).toMatch(
			/^remembers 70,000 keys: 1\.1 MB of the workflow's static data, which n8n reads from its database twice for every run it starts .*Cap it with the option "«maxRemembered»"/,
		);
		store.keys = 100_000;
		expect(watch.check()).toEqual({ warnings: [] });
		store.keys = 260_000;
		expect(watch.check().warnings).toEqual([
			expect.stringMatching(/^remembers 260,000 keys: 4\.2 MB/),
		]);
		// Down (a cap, a TTL) and up again within the same level: nothing more.
		store.keys = 200_000;
		expect(watch.check().warnings).toEqual([]);
		store.keys = 300_000;
		expect(watch.check().warnings).toEqual([]);
		// A new activation says it once again.
		expect(new HistoryWatch(store, 0).check().warnings).toHaveLength(1);
	});

	it('says nothing for a small history', () => {
		expect(new HistoryWatch(fakeStore(10_000), 0).check()).toEqual({ warnings: [] });
	});

	it('with the history in a PostgreSQL table, warns about the journal waiting in static data, not about the keys', () => {
		const store = {
			size: 2_000_000,
			historyBytes: 1_000_000,
			forgotten: undefined,
			historyInTable: true,
		};
		const [warning] = new HistoryWatch(store, 0).check().warnings;
		expect(warning).toMatch(
			/^keeps 1\.0 MB of changes to its history of 2,000,000 keys in the workflow's static data, .*only once no run of the trigger is in flight/,
		);
		expect(new HistoryWatch({ ...store, historyBytes: 900 }, 0).check().warnings).toEqual([]);
	});

	it('with a cap set, tells the user to lower it', () => {
		const [warning] = new HistoryWatch(fakeStore(100_000), 500_000).check().warnings;
		expect(warning).toContain('Lower "«maxRemembered»" (now 500,000)');
	});

	it('says how many keys the cap forgot, each time it forgets, and not what it forgot before the activation', async () => {
		const clock = new FakeClock();
		const options = { dedupe: { kind: 'unique' } as const, maxRemembered: 2 };
		const { store } = loadDedupeStore(options);
		const commit = (keys: string[]) => {
			const items = keys.map((key, index) => ({ item: {}, key, index }));
			store.commit(store.plan(items, clock.now()), clock.now(), { keyPrefix: 'p:' });
		};
		commit(['a', 'b', 'c']);
		commit(['d']);
		const watch = new HistoryWatch(store, 2);
		expect(watch.check()).toEqual({ warnings: [] });
		await clock.advance(60_000);
		commit(['e', 'f', 'g']);
		expect(watch.check()).toEqual({
			info: 'forgot 2 remembered key(s), the oldest the poll did not list, to keep at most 2 ("«maxRemembered»"); 4 forgotten in all. A forgotten key the source lists again is new again.',
			// e, f and g are listed: kept over the cap.
			warnings: [
				'remembers 3 keys, more than "«maxRemembered»" (2): the last poll listed them, and a key the source still lists is never forgotten (it would start again at the next poll). Set the cap above the number of items the source lists.',
			],
		});
		commit([]);
		// One forgotten, and the over-cap warning is not repeated in this activation.
		expect(watch.check()).toEqual({
			info: expect.stringMatching(/^forgot 1 remembered/),
			warnings: [],
		});
		expect(watch.check()).toEqual({ warnings: [] });
	});
});

describe('historySummary (Execute step)', () => {
	it('is there only when the history costs or the cap forgot keys', () => {
		expect(historySummary(fakeStore(1_000), 0)).toBeUndefined();
		expect(historySummary(fakeStore(70_000), 0)).toEqual({
			rememberedKeys: 70_000,
			historyBytes: 1_120_000,
			warning: expect.stringMatching(/^remembers 70,000 keys: 1\.1 MB/),
		});
		const at = Date.UTC(2026, 0, 1, 12);
		expect(historySummary(fakeStore(1_000, { total: 50, last: 5, at }), 1_000)).toEqual({
			rememberedKeys: 1_000,
			historyBytes: 16_000,
			maxRemembered: 1_000,
			forgottenKeys: 50,
			lastForgotten: { keys: 5, at: '2026-01-01T12:00:00.000Z' },
		});
	});
});
