import { ConfigError } from '../configError';
import { IntervalSchedule, MAX_INTERVAL_MS, MIN_INTERVAL_MS } from './interval';
import { createSchedule } from './schedule';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../units';

const at = (iso: string) => Date.parse(iso);

describe('interval schedules', () => {
	it('anchors windows at the epoch, independent of when planning starts', () => {
		const every15Minutes = new IntervalSchedule(15 * MINUTE_MS);
		expect(every15Minutes.nextAfter(at('2026-01-01T10:07:13Z'))).toBe(at('2026-01-01T10:15:00Z'));
		expect(every15Minutes.nextAfter(at('2026-01-01T10:14:59.999Z'))).toBe(
			at('2026-01-01T10:15:00Z'),
		);
		// Strictly after: a window time itself gives the following window.
		expect(every15Minutes.nextAfter(at('2026-01-01T10:15:00Z'))).toBe(at('2026-01-01T10:30:00Z'));
	});

	it('honours an explicit anchor, also before or after the planning time', () => {
		const anchor = at('2026-01-01T00:00:07Z');
		const schedule = new IntervalSchedule(HOUR_MS, anchor);
		expect(schedule.nextAfter(at('2026-03-01T05:30:00Z'))).toBe(at('2026-03-01T06:00:07Z'));
		expect(schedule.nextAfter(at('2025-12-31T22:30:00Z'))).toBe(at('2025-12-31T23:00:07Z'));
	});

	it.each([
		[0, '0'],
		[MIN_INTERVAL_MS - 1, '9.999s'],
		[MAX_INTERVAL_MS + 1, '31622400.001s'],
		[15_000.5, '15.0005s, to the millisecond'],
		[Number.NaN, 'NaN'],
	])('rejects interval %p naming the field and value (%s)', (intervalMs, shown) => {
		const [value, whole] = shown.split(', ');
		expect(() => new IntervalSchedule(intervalMs)).toThrow(ConfigError);
		expect(() => new IntervalSchedule(intervalMs)).toThrow(
			`Invalid value ${value} for "«interval»": must be from 10s to 366d${whole ? `, ${whole}` : ''}`,
		);
	});

	it('accepts the bounds themselves', () => {
		expect(new IntervalSchedule(MIN_INTERVAL_MS).intervalMs).toBe(10_000);
		expect(new IntervalSchedule(MAX_INTERVAL_MS).intervalMs).toBe(366 * DAY_MS);
	});

	it('summarizes a year of minutely windows arithmetically', () => {
		const schedule = new IntervalSchedule(MINUTE_MS);
		const span = schedule.windowsBetween(at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z'), 2);
		expect(span).toEqual({
			count: 525_600,
			first: at('2026-01-01T00:01:00Z'),
			last: at('2027-01-01T00:00:00Z'),
			newest: [at('2026-12-31T23:59:00Z'), at('2027-01-01T00:00:00Z')],
		});
		expect(
			schedule.windowsBetween(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:59Z'), 5),
		).toEqual({ count: 0, newest: [] });
		expect(
			schedule.windowsBetween(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:02:30Z'), 5).newest,
		).toEqual([at('2026-01-01T00:01:00Z'), at('2026-01-01T00:02:00Z')]);
	});

	it('has a fingerprint that changes with interval and anchor', () => {
		const fingerprints = new Set([
			createSchedule({ kind: 'interval', intervalMs: HOUR_MS }).fingerprint,
			createSchedule({ kind: 'interval', intervalMs: HOUR_MS, anchorMs: 0 }).fingerprint,
			createSchedule({ kind: 'interval', intervalMs: HOUR_MS, anchorMs: 1 }).fingerprint,
			createSchedule({ kind: 'interval', intervalMs: 2 * HOUR_MS }).fingerprint,
			createSchedule({ kind: 'cron', expression: '0 * * * *', timezone: 'UTC' }).fingerprint,
		]);
		expect(fingerprints.size).toBe(4);
	});
});
