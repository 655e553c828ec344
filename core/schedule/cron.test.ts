import { CronSchedule, nextFireAfter, parseCron } from './cron';
import { ConfigError } from '../configError';

const at = (iso: string) => Date.parse(iso);
const iso = (time: number) => new Date(time).toISOString();

/** The next `count` fires after `from`, as ISO strings (UTC). */
function fires(expression: string, timezone: string, from: string, count: number): string[] {
	const schedule = new CronSchedule(expression, timezone);
	const out: string[] = [];
	for (let time = at(from); out.length < count; ) out.push(iso((time = schedule.nextAfter(time))));
	return out;
}

function configErrorOf(fn: () => unknown): ConfigError {
	try {
		fn();
	} catch (error) {
		if (error instanceof ConfigError) return error;
		throw error;
	}
	throw new Error('expected a ConfigError');
}

describe('cron parsing', () => {
	it.each([
		['61 * * * *', 'minute 61 is out of range 0-59'],
		['* 24 * * *', 'hour 24 is out of range 0-23'],
		['* * 0 * *', 'day-of-month 0 is out of range 1-31'],
		['* * * 13 *', 'month 13 is out of range 1-12'],
		['* * * * 8', 'day-of-week 8 is out of range 0-7'],
		['60 * * * * *', 'second 60 is out of range 0-59'],
		['* * * *', 'expected 5 fields'],
		['* * * * * * *', 'got 7'],
		['*/0 * * * *', 'step "0" must be a whole number of at least 1'],
		['10-5 * * * *', 'minute range 10-5 is reversed'],
		['* * * FOO *', 'month "FOO" is not a number or a name (JAN-DEC)'],
		['MON * * * *', 'minute "MON" is not a number'],
		['1,,2 * * * *', 'minute "" is not a number'],
		['@reboot', 'unknown macro'],
		['   ', 'it is empty'],
	])('rejects %j: %s', (expression, problem) => {
		const error = configErrorOf(() => parseCron(expression));
		expect(error).toMatchObject({ field: 'cron' });
		expect(error.message).toContain(`Invalid value ${JSON.stringify(expression)} for "«cron»": `);
		expect(error.message).toContain(problem);
	});

	it('names the whole message for an out-of-range minute', () => {
		expect(() => parseCron('61 * * * *')).toThrow(
			'Invalid value "61 * * * *" for "«cron»": minute 61 is out of range 0-59',
		);
	});

	it('expands lists, ranges and steps', () => {
		const fields = parseCron('0,30 1-10/2 */10 JAN-MAR,dec 5/1');
		const on = (allowed: boolean[]) => allowed.flatMap((yes, value) => (yes ? [value] : []));
		expect(on(fields.minutes)).toEqual([0, 30]);
		expect(on(fields.hours)).toEqual([1, 3, 5, 7, 9]);
		expect(on(fields.daysOfMonth)).toEqual([1, 11, 21, 31]);
		expect(on(fields.months)).toEqual([1, 2, 3, 12]);
		expect(on(fields.daysOfWeek)).toEqual([0, 5, 6]); // 5/1 = 5,6,7 and 7 is Sunday
		expect(on(fields.seconds)).toEqual([0]);
	});

	it('uses the Vixie rule: OR only when both day fields are restricted', () => {
		expect(parseCron('0 0 1 * MON').dayRule).toBe('or');
		expect(parseCron('0 0 * * MON').dayRule).toBe('and');
		expect(parseCron('0 0 1 * *').dayRule).toBe('and');
	});

	it('rejects an expression that never fires', () => {
		for (const expression of ['0 0 30 2 *', '0 0 31 4,6,9,11 *']) {
			const error = configErrorOf(() => new CronSchedule(expression, 'UTC'));
			expect(error.field).toBe('cron');
			expect(error.message).toContain('never fires');
		}
	});

	it('rejects a time zone luxon does not know', () => {
		const error = configErrorOf(() => new CronSchedule('0 * * * *', 'Mars/Olympus_Mons'));
		expect(error.field).toBe('timezone');
		expect(error.message).toBe(
			'Invalid value "Mars/Olympus_Mons" for "«timezone»": not a known IANA time zone (e.g. "Europe/Berlin")',
		);
	});

	it('gives equal fingerprints to expressions that declare the same windows', () => {
		const fingerprint = (expression: string, zone = 'Europe/Berlin') =>
			new CronSchedule(expression, zone).fingerprint;
		expect(fingerprint('0 9 * * MON-FRI')).toBe(fingerprint('0 0 9 * * 1-5'));
		expect(fingerprint('@daily')).toBe(fingerprint('0 0 * * *'));
		expect(fingerprint('0 0 * * 7')).toBe(fingerprint('0 0 * * SUN'));
		expect(fingerprint('0 9 * * 1-5')).not.toBe(fingerprint('0 9 * * 1-5', 'America/New_York'));
		expect(fingerprint('0 0 1-31 * 1')).not.toBe(fingerprint('0 0 * * 1')); // OR vs AND
	});
});

describe('cron planning', () => {
	it('returns the next fire strictly after the given instant', () => {
		expect(iso(nextFireAfter('*/5 * * * *', at('2026-01-01T10:00:00Z'), 'UTC'))).toBe(
			'2026-01-01T10:05:00.000Z',
		);
		expect(iso(nextFireAfter('*/5 * * * *', at('2026-01-01T10:04:59.999Z'), 'UTC'))).toBe(
			'2026-01-01T10:05:00.000Z',
		);
	});

	it('supports seconds, names and 7 = Sunday', () => {
		expect(fires('*/20 * * * * *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual([
			'2026-01-01T00:00:20.000Z',
			'2026-01-01T00:00:40.000Z',
			'2026-01-01T00:01:00.000Z',
		]);
		// 2026-01-01 is a Thursday.
		expect(fires('0 12 * * 7', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual([
			'2026-01-04T12:00:00.000Z',
			'2026-01-11T12:00:00.000Z',
		]);
		expect(fires('0 8 * FEB TUE', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual([
			'2026-02-03T08:00:00.000Z',
		]);
	});

	it('plans in the given zone', () => {
		expect(fires('0 9 * * *', 'Europe/Berlin', '2026-01-01T00:00:00Z', 1)).toEqual([
			'2026-01-01T08:00:00.000Z',
		]);
		expect(fires('0 9 * * *', 'Europe/Berlin', '2026-07-01T00:00:00Z', 1)).toEqual([
			'2026-07-01T07:00:00.000Z',
		]);
		expect(fires('0 9 * * *', 'Asia/Kathmandu', '2026-01-01T00:00:00Z', 1)).toEqual([
			'2026-01-01T03:15:00.000Z',
		]);
	});

	it('ORs day-of-month and day-of-week when both are restricted', () => {
		// The 1st (a Thursday) and every Monday.
		expect(fires('0 0 1 * MON', 'UTC', '2025-12-31T00:00:00Z', 3)).toEqual([
			'2026-01-01T00:00:00.000Z',
			'2026-01-05T00:00:00.000Z',
			'2026-01-12T00:00:00.000Z',
		]);
	});

	it('fires day 31 only in months that have it', () => {
		expect(fires('0 0 31 * *', 'UTC', '2026-01-01T00:00:00Z', 4)).toEqual([
			'2026-01-31T00:00:00.000Z',
			'2026-03-31T00:00:00.000Z',
			'2026-05-31T00:00:00.000Z',
			'2026-07-31T00:00:00.000Z',
		]);
	});

	it('fires February 29 only in leap years, skipping 2100', () => {
		expect(fires('0 0 29 2 *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual([
			'2028-02-29T00:00:00.000Z',
			'2032-02-29T00:00:00.000Z',
		]);
		expect(fires('0 0 29 2 *', 'UTC', '2096-03-01T00:00:00Z', 1)).toEqual([
			'2104-02-29T00:00:00.000Z',
		]);
	});

	it('supports the macros', () => {
		expect(fires('@hourly', 'UTC', '2026-01-01T00:30:00Z', 1)).toEqual([
			'2026-01-01T01:00:00.000Z',
		]);
		expect(fires('@weekly', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual([
			'2026-01-04T00:00:00.000Z',
		]);
		expect(fires('@monthly', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual([
			'2026-02-01T00:00:00.000Z',
		]);
		expect(fires('@YEARLY', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual([
			'2027-01-01T00:00:00.000Z',
		]);
	});
});

describe('cron across daylight-saving changes', () => {
	// Europe/Berlin 2026: 29 March 02:00 CET → 03:00 CEST (01:00Z); 25 October 03:00 CEST → 02:00 CET (01:00Z).
	// America/New_York 2026: 8 March 02:00 EST → 03:00 EDT (07:00Z); 1 November 02:00 EDT → 01:00 EST (06:00Z).

	it('runs a fixed-hour fire in the spring-forward gap once, at the end of the gap', () => {
		expect(fires('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', 2)).toEqual([
			'2026-03-29T01:00:00.000Z', // 03:00 CEST
			'2026-03-30T00:30:00.000Z', // 02:30 CEST
		]);
		expect(fires('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 2)).toEqual([
			'2026-03-08T07:00:00.000Z', // 03:00 EDT
			'2026-03-09T06:30:00.000Z',
		]);
	});

	it('runs several fixed-hour fires in the gap as one, merged with one at the gap end', () => {
		expect(fires('0,30 2,3 * * *', 'Europe/Berlin', '2026-03-29T00:00:00Z', 3)).toEqual([
			'2026-03-29T01:00:00.000Z', // 02:00, 02:30 and 03:00 local → one fire at 03:00
			'2026-03-29T01:30:00.000Z', // 03:30
			'2026-03-30T00:00:00.000Z', // 02:00 next day
		]);
	});

	it('gives every-hour jobs no fires in the missing hour', () => {
		expect(fires('*/15 * * * *', 'Europe/Berlin', '2026-03-29T00:30:00Z', 3)).toEqual([
			'2026-03-29T00:45:00.000Z', // 01:45 CET
			'2026-03-29T01:00:00.000Z', // 03:00 CEST
			'2026-03-29T01:15:00.000Z',
		]);
		expect(fires('30 * * * *', 'America/New_York', '2026-03-08T06:00:00Z', 2)).toEqual([
			'2026-03-08T06:30:00.000Z', // 01:30 EST
			'2026-03-08T07:30:00.000Z', // 03:30 EDT; 02:30 does not exist
		]);
	});

	it('fires a fixed-hour job once in a fall-back repeat, in the first occurrence', () => {
		expect(fires('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2)).toEqual([
			'2026-10-25T00:30:00.000Z', // 02:30 CEST
			'2026-10-26T01:30:00.000Z', // 02:30 CET the next day
		]);
		expect(fires('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual([
			'2026-11-01T05:30:00.000Z', // 01:30 EDT
			'2026-11-02T06:30:00.000Z',
		]);
	});

	it('fires an every-hour job in both occurrences of a fall-back repeat', () => {
		expect(fires('*/30 * * * *', 'Europe/Berlin', '2026-10-25T00:00:00Z', 4)).toEqual([
			'2026-10-25T00:30:00.000Z', // 02:30 CEST
			'2026-10-25T01:00:00.000Z', // 02:00 CET
			'2026-10-25T01:30:00.000Z', // 02:30 CET
			'2026-10-25T02:00:00.000Z', // 03:00 CET
		]);
		expect(fires('15 * * * *', 'America/New_York', '2026-11-01T05:00:00Z', 3)).toEqual([
			'2026-11-01T05:15:00.000Z', // 01:15 EDT
			'2026-11-01T06:15:00.000Z', // 01:15 EST
			'2026-11-01T07:15:00.000Z', // 02:15 EST
		]);
	});

	it('counts the fires of DST days correctly', () => {
		const hourly = new CronSchedule('0 * * * *', 'Europe/Berlin');
		const localDay = (from: string, to: string) =>
			hourly.windowsBetween(at(from) - 1, at(to) - 1, 0).count;
		expect(localDay('2026-03-28T23:00:00Z', '2026-03-29T22:00:00Z')).toBe(23);
		expect(localDay('2026-10-24T22:00:00Z', '2026-10-25T23:00:00Z')).toBe(25);
		const daily = new CronSchedule('30 2 * * *', 'Europe/Berlin');
		expect(
			daily.windowsBetween(at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z'), 0).count,
		).toBe(365);
	});

	it('handles a zone whose transition is at midnight (America/Santiago)', () => {
		// 2026-09-06 00:00 does not exist in Santiago (clocks go 00:00 → 01:00, at 04:00Z).
		expect(fires('0 0 * * *', 'America/Santiago', '2026-09-05T12:00:00Z', 2)).toEqual([
			'2026-09-06T04:00:00.000Z', // 01:00 -03, the end of the gap
			'2026-09-07T03:00:00.000Z',
		]);
	});
});

describe('cron windowsBetween', () => {
	it('counts a year of minutely windows, keeping only the newest listed', () => {
		const schedule = new CronSchedule('* * * * *', 'Europe/Berlin');
		const span = schedule.windowsBetween(at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z'), 3);
		expect(span.count).toBe(525_600);
		expect(iso(span.first!)).toBe('2026-01-01T00:01:00.000Z');
		expect(iso(span.last!)).toBe('2027-01-01T00:00:00.000Z');
		expect(span.newest.map(iso)).toEqual([
			'2026-12-31T23:58:00.000Z',
			'2026-12-31T23:59:00.000Z',
			'2027-01-01T00:00:00.000Z',
		]);
	});

	it('lists every window when fewer than the limit, and none for an empty range', () => {
		const schedule = new CronSchedule('0 */6 * * *', 'UTC');
		const span = schedule.windowsBetween(
			at('2026-01-01T00:00:00Z'),
			at('2026-01-02T00:00:00Z'),
			10,
		);
		expect(span.newest.map(iso)).toEqual([
			'2026-01-01T06:00:00.000Z',
			'2026-01-01T12:00:00.000Z',
			'2026-01-01T18:00:00.000Z',
			'2026-01-02T00:00:00.000Z',
		]);
		expect(
			schedule.windowsBetween(at('2026-01-01T00:00:00Z'), at('2026-01-01T05:00:00Z'), 10),
		).toEqual({ count: 0, newest: [] });
	});
});

describe('cron minimum gap (10 s between two consecutive fires)', () => {
	it.each([
		['* * * * * *', 'it fires 1 second apart (at 00:00:00 and 00:00:01)'],
		['*/5 * * * * *', 'it fires 5 seconds apart (at 00:00:00 and 00:00:05)'],
		['0-30 * * * * *', 'it fires 1 second apart (at 00:00:00 and 00:00:01)'],
		['0,9 * * * * *', 'it fires 9 seconds apart (at 00:00:00 and 00:00:09)'],
		// 50 → the next minute's 0 is 10 s, but 55 → 0 is 5 s.
		['0,55 * * * * *', 'it fires 5 seconds apart (at 00:00:55 and 00:01:00)'],
		// The wrap across an hour and across midnight, when the next minute fires too.
		['0,55 0,59 0,1 * * *', 'it fires 5 seconds apart (at 00:59:55 and 01:00:00)'],
		['0,55 0,59 0,23 * * *', 'it fires 5 seconds apart (at 23:59:55 and 00:00:00 the next day)'],
		[
			'0,55 0,59 0,23 * * MON-TUE',
			'it fires 5 seconds apart (at 23:59:55 and 00:00:00 the next day)',
		],
	])('refuses %j: %s', (expression, problem) => {
		const error = configErrorOf(() => new CronSchedule(expression, 'UTC'));
		expect(error.field).toBe('cron');
		expect(error.message).toBe(
			`Invalid value ${JSON.stringify(expression)} for "«cron»": ${problem}; fires must be at least 10 seconds apart (e.g. "*/10 * * * * *")`,
		);
	});

	it.each([
		'*/10 * * * * *',
		'0,10,20,30,40,50 * * * * *',
		'0,50 * * * * *', // 50 → next minute's 0 is exactly 10 s
		'0,55 0,30 * * * *', // 55 → 0 only across non-consecutive minutes
		'0,55 0,59 0,12 * * *', // 00:59:55 and 01:00:00? hour 1 does not fire
		'0,55 0,59 0,23 1 * *', // 23:59:55 on the 1st, but the 2nd never fires
		'0,55 0,59 0,23 * * MON,WED', // no two consecutive days
		'* * * * *',
		'@hourly',
	])('accepts %j', (expression) => {
		expect(() => new CronSchedule(expression, 'UTC')).not.toThrow();
	});

	it('refuses an expression that only comes too close when the clocks change, in real time', () => {
		// 01:59:55 CET, then 02:59:55 does not exist: it runs at the end of the gap, 03:00:00 CEST, 5 s later.
		expect(() => new CronSchedule('55 59 1,2 * * *', 'UTC')).not.toThrow();
		expect(configErrorOf(() => new CronSchedule('55 59 1,2 * * *', 'Europe/Berlin')).message).toBe(
			'Invalid value "55 59 1,2 * * *" for "«cron»": it fires 5 seconds apart when the clocks change in Europe/Berlin ' +
				'(for example at 2000-03-26T00:59:55.000Z and 2000-03-26T01:00:00.000Z); fires must be at least 10 seconds apart (e.g. "*/10 * * * * *")',
		);
		// Lord Howe falls back half an hour (02:00 → 01:30): 01:59:55 is followed 5 s later by the second 01:30:00.
		expect(() => new CronSchedule('0,55 30,59 * * * *', 'UTC')).not.toThrow();
		expect(
			configErrorOf(() => new CronSchedule('0,55 30,59 * * * *', 'Australia/Lord_Howe')).message,
		).toContain('it fires 5 seconds apart when the clocks change in Australia/Lord_Howe');
	});

	it('an accepted expression never fires twice within 10 s, also across DST changes (seeded random expressions)', () => {
		let seed = 11;
		const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
		const seconds = ['0', '*/10', '*/15', '0,55', '5,50', '0-9', '*/20', '45-59/7', '3,13,33'];
		const minutes = ['*', '0,59', '30,59', '0', '*/30', '29-31'];
		const hours = ['*', '1,2', '2', '0,23', '1-3', '*/2'];
		const zones = [
			'UTC',
			'Europe/Berlin',
			'America/New_York',
			'Australia/Lord_Howe',
			'America/Santiago',
		];
		// Days with DST changes in 2026 (Berlin and New York in March and Oct/Nov, Lord Howe and Santiago in April and Sept).
		const days = [
			'2026-03-08',
			'2026-03-29',
			'2026-04-04',
			'2026-09-05',
			'2026-10-04',
			'2026-10-25',
			'2026-11-01',
		];
		let accepted = 0;
		for (let i = 0; i < 300; i++) {
			const expression = `${seconds[random(seconds.length)]} ${minutes[random(minutes.length)]} ${hours[random(hours.length)]} * * *`;
			const zone = zones[random(zones.length)];
			let schedule: CronSchedule;
			try {
				schedule = new CronSchedule(expression, zone);
			} catch (error) {
				expect((error as Error).message).toContain('fires must be at least 10 seconds apart');
				continue;
			}
			accepted++;
			for (const day of days) {
				const span = schedule.windowsBetween(
					at(`${day}T00:00:00Z`) - 86_400_000,
					at(`${day}T00:00:00Z`) + 86_400_000,
					100_000,
				);
				let shortest = Infinity;
				for (let k = 1; k < span.newest.length; k++)
					shortest = Math.min(shortest, span.newest[k] - span.newest[k - 1]);
				if (shortest < 10_000)
					throw new Error(`${expression} in ${zone} fires ${shortest} ms apart around ${day}`);
			}
		}
		expect(accepted).toBeGreaterThan(50);
	});
});
