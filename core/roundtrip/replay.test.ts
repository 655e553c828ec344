import { FakeClock } from '../../test/support/fakeClock';
import { ReplayMemory } from './replay';

describe('ReplayMemory', () => {
	let clock: FakeClock;
	beforeEach(() => {
		clock = new FakeClock(Date.UTC(2026, 0, 1, 12));
	});

	it('refuses a key to another wait while it is remembered', () => {
		const memory = new ReplayMemory(10);
		expect(memory.claim('sig-a', 'wait-1', clock.now() + 300_000, clock.now())).toBe(true);
		expect(memory.claim('sig-a', 'wait-2', clock.now() + 300_000, clock.now())).toBe(false);
		expect(memory.claim('sig-b', 'wait-2', clock.now() + 300_000, clock.now())).toBe(true);
		expect(memory.size).toBe(2);
	});

	it('lets the same wait claim a key again: a retry after a resume that did not happen', () => {
		const memory = new ReplayMemory(10);
		expect(memory.claim('sig-a', 'wait-1', clock.now() + 300_000, clock.now())).toBe(true);
		expect(memory.claim('sig-a', 'wait-1', clock.now() + 300_000, clock.now())).toBe(true);
		expect(memory.size).toBe(1);
	});

	it('forgets a key once a copy could no longer pass the timestamp check anyway', async () => {
		const memory = new ReplayMemory(10);
		memory.claim('sig-a', 'w', clock.now() + 300_000, clock.now());
		await clock.advance(299_999);
		expect(memory.has('sig-a', clock.now())).toBe(true);
		await clock.advance(1);
		expect(memory.has('sig-a', clock.now())).toBe(false);
		expect(memory.claim('sig-b', 'w', clock.now() + 1, clock.now())).toBe(true);
		expect(memory.size).toBe(1);
	});

	it('stays within its bound, dropping the oldest first', () => {
		const memory = new ReplayMemory(3);
		for (const key of ['a', 'b', 'c', 'd'])
			memory.claim(key, 'w', clock.now() + 60_000, clock.now());
		expect(memory.size).toBe(3);
		expect(memory.has('a', clock.now())).toBe(false);
		expect(memory.has('d', clock.now())).toBe(true);
	});

	it('refuses a nonsensical bound', () => {
		expect(() => new ReplayMemory(0)).toThrow(RangeError);
	});
});
