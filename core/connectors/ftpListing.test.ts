import { ConfigError } from '../configError';
import { listTime, securityArgs } from './ftpListing';

describe('listTime: the times of a LIST (UTC, to the minute or the day)', () => {
	const now = Date.UTC(2026, 11, 3, 11, 30);
	const minute = (iso: string) => ({ mtimeMs: Date.parse(iso), mtimeSpanMs: 60_000 });

	it.each([
		['Dec 03 11:21', '2026-12-03T11:21:00Z'],
		['Dec  3 11:21', '2026-12-03T11:21:00Z'],
		// A server clock up to a day ahead still reads as this year.
		['Dec 04 09:00', '2026-12-04T09:00:00Z'],
		// More than a day ahead: the last year's.
		['Dec 05 09:00', '2025-12-05T09:00:00Z'],
		['Jun 30 23:59', '2026-06-30T23:59:00Z'],
	])('"%s" is the latest such minute not after now + 1 day: %s', (raw, iso) => {
		expect(listTime(raw, now)).toEqual(minute(iso));
	});

	it('at New Year, a file of 31 Dec is last year and one of 1 Jan this year', () => {
		const newYear = Date.UTC(2027, 0, 1, 0, 5);
		expect(listTime('Dec 31 23:58', newYear)).toEqual(minute('2026-12-31T23:58:00Z'));
		expect(listTime('Jan 01 00:04', newYear)).toEqual(minute('2027-01-01T00:04:00Z'));
		// Late on 31 Dec, the server's clock already past midnight: next year's 1 Jan, not last year's.
		expect(listTime('Jan 01 00:01', Date.UTC(2026, 11, 31, 23, 59))).toEqual(
			minute('2027-01-01T00:01:00Z'),
		);
	});

	it('"Feb 29 HH:MM" is the last leap year\'s', () => {
		expect(listTime('Feb 29 10:00', now)).toEqual(minute('2024-02-29T10:00:00Z'));
	});

	it('"Mon DD YYYY" (older than six months) is that day, a day long', () => {
		expect(listTime('Mar 01 2026', now)).toEqual({
			mtimeMs: Date.UTC(2026, 2, 1),
			mtimeSpanMs: 86_400_000,
		});
	});

	it.each(['2026-03-01 10:00', 'Foo 01 10:00', 'Apr 31 2026', 'Mar 01 25:00', ''])(
		'"%s" is not read',
		(raw) => {
			expect(listTime(raw, now)).toBeUndefined();
		},
	);
});

describe('securityArgs', () => {
	it('tls none and the certificate checked unless set', () => {
		expect(securityArgs({})).toEqual({ tls: 'none', allowSelfSigned: false });
		expect(securityArgs({ tls: 'explicit', allowSelfSigned: 'true' })).toEqual({
			tls: 'explicit',
			allowSelfSigned: true,
		});
		expect(securityArgs({ tls: 'implicit' }).tls).toBe('implicit');
	});

	it('refuses another tls, naming the argument and the value', () => {
		const refusal = (() => {
			try {
				securityArgs({ tls: 'ftps' });
			} catch (error) {
				return error;
			}
		})();
		expect(refusal).toBeInstanceOf(ConfigError);
		expect((refusal as Error).message).toContain('"ftps"');
		expect((refusal as Error).message).toContain('tls');
		expect((refusal as Error).message).toContain('"none", "explicit", "implicit"');
		expect(() => securityArgs({ allowSelfSigned: 'yes' })).toThrow('allowSelfSigned');
	});
});
