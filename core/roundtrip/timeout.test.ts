import { type TimeoutUnit, MAX_WAIT_MS, resumeDeadline, timedOutItem } from './timeout';

const STARTED_MS = Date.UTC(2026, 2, 28, 12, 0, 0);

describe('resumeDeadline', () => {
	it.each<[number, TimeoutUnit, number]>([
		[30, 'seconds', 30_000],
		[15, 'minutes', 900_000],
		[2, 'hours', 7_200_000],
		[1.5, 'hours', 5_400_000],
		[1, 'days', 86_400_000],
	])('%p %s later', (amount, unit, waitMs) => {
		expect(resumeDeadline(STARTED_MS, { amount, unit })).toBe(STARTED_MS + waitMs);
	});

	it('counts days as 24 h of elapsed time even across a DST change', () => {
		// 2026-03-29 is the EU spring-forward day.
		expect(resumeDeadline(STARTED_MS, { amount: 1, unit: 'days' })).toBe(
			Date.UTC(2026, 2, 29, 12, 0, 0),
		);
	});

	it('accepts the bounds', () => {
		expect(resumeDeadline(STARTED_MS, { amount: 1, unit: 'seconds' })).toBe(STARTED_MS + 1_000);
		expect(resumeDeadline(STARTED_MS, { amount: 366, unit: 'days' })).toBe(
			STARTED_MS + MAX_WAIT_MS,
		);
	});
});

describe('timedOutItem', () => {
	it('describes the abandoned wait', () => {
		const deadline = resumeDeadline(STARTED_MS, { amount: 10, unit: 'minutes' });
		expect(timedOutItem('cid-1', STARTED_MS, deadline, deadline + 250)).toEqual({
			correlationId: 'cid-1',
			timedOut: true,
			waitedMs: 600_250,
			waitStartedAt: '2026-03-28T12:00:00.000Z',
			deadline: '2026-03-28T12:10:00.000Z',
		});
	});

	it('never reports a negative wait when clocks disagree', () => {
		expect(timedOutItem('cid-1', STARTED_MS, STARTED_MS + 1_000, STARTED_MS - 5).waitedMs).toBe(0);
	});
});
