import { FakeClock } from '../testing/fakeClock';
import { loadDedupeStore, type SavedDedupeState } from './dedupe';
import { PollExpressions } from './expressions';
import { runPollCycle, type PollCycle } from './start';

function cycle(result: () => unknown, overrides: Partial<PollCycle<{ id: string }>> = {}) {
	const saves: SavedDedupeState[] = [];
	const started: string[][] = [];
	const options: PollCycle<{ id: string }> = {
		expressions: new PollExpressions({ items: 'data', id: 'id' }),
		store: loadDedupeStore({ dedupe: { kind: 'unique' } }),
		clock: new FakeClock(),
		fetch: async () => ({ result: result() }),
		start: (candidates) => void started.push(candidates.map((c) => c.item.id)),
		save: (state) => void saves.push(state),
		...overrides,
	};
	return { options, saves, started };
}

describe('runPollCycle', () => {
	it('starts the new items and saves the state', async () => {
		const { options, saves, started } = cycle(() => ({ data: [{ id: 'a' }, { id: 'b' }] }));
		await expect(runPollCycle(options, new AbortController().signal)).resolves.toEqual({ kind: 'new_items', started: 2 });
		expect(started).toEqual([['a'], ['b']]);
		await expect(runPollCycle(options, new AbortController().signal)).resolves.toEqual({ kind: 'unchanged' });
		expect(saves).toHaveLength(2);
		expect(saves[1].fresh).toBe(false);
	});

	it('one run over all new items', async () => {
		const { options, started } = cycle(() => ({ data: [{ id: 'a' }, { id: 'b' }] }), { onePerItem: false });
		await expect(runPollCycle(options, new AbortController().signal)).resolves.toEqual({ kind: 'new_items', started: 2 });
		expect(started).toEqual([['a', 'b']]);
	});

	it('reports not_modified without looking at anything', async () => {
		const { options, saves } = cycle(() => undefined, { fetch: async () => ({ notModified: true }) });
		await expect(runPollCycle(options, new AbortController().signal)).resolves.toEqual({ kind: 'not_modified' });
		expect(saves).toEqual([]);
	});

	it('saves what started before a failed start, and rethrows', async () => {
		const { options, saves } = cycle(() => ({ data: [{ id: 'a' }, { id: 'b' }] }), {
			start: ([c]) => {
				if (c.item.id === 'b') throw new Error('emit failed');
			},
		});
		await expect(runPollCycle(options, new AbortController().signal)).rejects.toThrow('emit failed');
		const restored = loadDedupeStore({ dedupe: { kind: 'unique' } }, saves[0]);
		expect(restored.plan([{ item: {}, key: 'a', index: 0 }, { item: {}, key: 'b', index: 1 }], 0).toStart.map((c) => c.key)).toEqual(['b']);
	});

	it('an aborted poll starts nothing more', async () => {
		const controller = new AbortController();
		const { options, started } = cycle(() => ({ data: [{ id: 'a' }, { id: 'b' }] }), {
			start: (candidates) => {
				started.push(candidates.map((c) => c.item.id));
				controller.abort(new Error('Poll timed out after 30s'));
			},
		});
		await expect(runPollCycle(options, controller.signal)).rejects.toThrow('Poll timed out after 30s');
		expect(started).toEqual([['a']]);
	});
});
