import { FakeClock } from '../../test/support/fakeClock';
import { loadDedupeStore } from './kinds';
import { PollExpressions } from './expressions';
import { runPollCycle, type PollCycle } from './start';

function cycle(result: () => unknown, overrides: Partial<PollCycle> = {}): PollCycle {
	return {
		expressions: new PollExpressions({ items: 'data', id: 'id' }),
		store: loadDedupeStore({ dedupe: { kind: 'unique' } }).store,
		clock: new FakeClock(),
		fetch: async () => ({ result: result() }),
		commit: { keyPrefix: 'poll:w:n:' },
		...overrides,
	};
}

const items = (runs: Array<{ candidates: ReadonlyArray<{ item: unknown }> }>) =>
	runs.map((run) => run.candidates.map((c) => (c.item as { id: string }).id));

describe('runPollCycle', () => {
	it('plans and remembers the new items in one step, returning their runs', async () => {
		const options = cycle(() => ({ data: [{ id: 'a' }, { id: 'b' }] }));
		const first = await runPollCycle(options, new AbortController().signal);
		expect(first.outcome).toEqual({ kind: 'new_items', started: 2 });
		expect(items(first.runs)).toEqual([['a'], ['b']]);
		expect(first.runs.every((run) => run.key?.startsWith('poll:w:n:'))).toBe(true);
		const second = await runPollCycle(options, new AbortController().signal);
		expect(second).toEqual({ outcome: { kind: 'unchanged' }, runs: [] });
		expect(options.store.isFresh).toBe(false);
	});

	it('one run over all new items', async () => {
		const options = cycle(() => ({ data: [{ id: 'a' }, { id: 'b' }] }), {
			commit: { keyPrefix: 'p:', onePerItem: false },
		});
		const { outcome, runs } = await runPollCycle(options, new AbortController().signal);
		expect(outcome).toEqual({ kind: 'new_items', started: 2 });
		expect(items(runs)).toEqual([['a', 'b']]);
	});

	it('reports not_modified without looking at anything', async () => {
		const options = cycle(() => undefined, { fetch: async () => ({ notModified: true }) });
		await expect(runPollCycle(options, new AbortController().signal)).resolves.toEqual({
			outcome: { kind: 'not_modified' },
			runs: [],
		});
		expect(options.store.isFresh).toBe(true);
	});

	it('a poll aborted before its commit remembers nothing', async () => {
		const controller = new AbortController();
		const options = cycle(() => ({ data: [{ id: 'a' }] }), {
			fetch: async () => {
				controller.abort(new Error('Poll timed out after 30s'));
				return { result: { data: [{ id: 'a' }] } };
			},
		});
		await expect(runPollCycle(options, controller.signal)).rejects.toThrow('timed out');
		expect(options.store.plan([{ item: {}, key: 'a', index: 0 }], 0).toStart).toHaveLength(1);
	});
});
