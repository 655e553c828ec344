import { fireItem, jitterFor, runKey, startFire } from './fire';

describe('runKey', () => {
	it('is the schedule id and the declared time in ISO form', () => {
		expect(runKey('wf1:node2', Date.UTC(2026, 0, 1, 9))).toBe('wf1:node2@2026-01-01T09:00:00.000Z');
	});
});

describe('jitterFor', () => {
	it('is deterministic and within [0, jitterMs)', () => {
		const keys = Array.from({ length: 1000 }, (_, i) =>
			runKey('s', Date.UTC(2026, 0, 1) + i * 60_000),
		);
		for (const key of keys) {
			const jitter = jitterFor(key, 30_000);
			expect(jitter).toBe(jitterFor(key, 30_000));
			expect(Number.isInteger(jitter)).toBe(true);
			expect(jitter).toBeGreaterThanOrEqual(0);
			expect(jitter).toBeLessThan(30_000);
		}
		// Spread: the thousand keys land in every tenth of the range.
		const tenths = new Set(keys.map((key) => Math.floor(jitterFor(key, 30_000) / 3_000)));
		expect(tenths.size).toBe(10);
	});

	it('is zero without jitter', () => {
		expect(jitterFor('anything', 0)).toBe(0);
	});
});

describe('startFire and fireItem', () => {
	it('measures lateness against the declared window and flags backfills', () => {
		const declaredAt = Date.UTC(2026, 0, 1, 9);
		const scheduled = startFire({ runKey: 'k', declaredAt, kind: 'scheduled' }, declaredAt + 1_500);
		expect(scheduled).toMatchObject({
			actualAt: declaredAt + 1_500,
			latenessMs: 1_500,
			reprocessing: false,
		});
		const coalesced = startFire(
			{
				runKey: 'k',
				declaredAt,
				kind: 'coalesced',
				coalesced: {
					count: 3,
					firstDeclaredAt: declaredAt - 2,
					lastDeclaredAt: declaredAt,
					windows: [declaredAt],
				},
			},
			declaredAt + 10,
		);
		expect(coalesced.reprocessing).toBe(true);
		expect(fireItem(coalesced)).toEqual({
			runKey: 'k',
			kind: 'coalesced',
			declaredAt: '2026-01-01T09:00:00.000Z',
			actualAt: '2026-01-01T09:00:00.010Z',
			latenessMs: 10,
			reprocessing: true,
			validTime: '2026-01-01T09:00:00.000Z',
			systemTime: '2026-01-01T09:00:00.010Z',
			coalesced: {
				count: 3,
				firstDeclaredAt: '2026-01-01T08:59:59.998Z',
				lastDeclaredAt: '2026-01-01T09:00:00.000Z',
				windows: ['2026-01-01T09:00:00.000Z'],
				windowsTruncated: true,
			},
		});
	});
});
