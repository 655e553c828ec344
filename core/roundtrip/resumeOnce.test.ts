import { ResumedWaits } from './resumeOnce';

describe('ResumedWaits', () => {
	test('the first callback of a wait claims it; a second one is refused, other waits are not', () => {
		const waits = new ResumedWaits();
		expect(waits.claim('w1', 10_000, 0)).toBe(true);
		expect(waits.claim('w1', 10_000, 5)).toBe(false);
		expect(waits.claim('w2', 10_000, 5)).toBe(true);
	});

	test('a released claim can be taken again', () => {
		const waits = new ResumedWaits();
		expect(waits.claim('w1', 10_000, 0)).toBe(true);
		waits.release('w1');
		expect(waits.claim('w1', 10_000, 1)).toBe(true);
	});

	test("claims are forgotten after the wait's deadline, and the oldest beyond the capacity", () => {
		const waits = new ResumedWaits(2);
		expect(waits.claim('w1', 100, 0)).toBe(true);
		expect(waits.claim('w1', 100, 101)).toBe(true);
		expect(waits.claim('w2', 1_000, 101)).toBe(true);
		expect(waits.claim('w3', 1_000, 101)).toBe(true);
		// capacity 2: w1 (oldest) was dropped to make room for w3
		expect(waits.claim('w1', 1_000, 102)).toBe(true);
		expect(waits.claim('w3', 1_000, 102)).toBe(false);
	});
});
