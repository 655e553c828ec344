import { COALESCED_LIST_LIMIT, planCatchUp } from './catchUp';
import type { CatchUpInput } from './catchUp';
import { CronSchedule } from './cron';
import { ConfigError } from '../configError';
import { runKey } from './fire';
import { IntervalSchedule } from './interval';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../units';

const at = (iso: string) => Date.parse(iso);
const YEAR_START = at('2026-01-01T00:00:00Z');
const YEAR_END = at('2027-01-01T00:00:00Z');

const daily = new CronSchedule('0 6 * * *', 'Europe/Berlin'); // 05:00Z in winter
const base = {
	scheduleId: 's',
	schedule: daily,
	lastDeclaredFire: at('2026-01-01T05:00:00Z'),
	now: at('2026-01-04T12:00:00Z'),
};

function plan(input: Partial<CatchUpInput> & Pick<CatchUpInput, 'policy'>) {
	return planCatchUp({ ...base, ...input });
}

describe('planCatchUp', () => {
	it('misses nothing on first activation and starts the cursor at now', () => {
		expect(plan({ policy: 'run-all', lastDeclaredFire: undefined })).toEqual({
			starts: [],
			records: [],
			lastDeclaredFire: base.now,
			missedCount: 0,
		});
	});

	it('misses nothing when no window passed', () => {
		expect(plan({ policy: 'run-all', now: at('2026-01-02T04:59:59Z') })).toEqual({
			starts: [],
			records: [],
			lastDeclaredFire: base.lastDeclaredFire,
			missedCount: 0,
		});
	});

	it('skip: starts nothing and records the missed windows as one entry', () => {
		const result = plan({ policy: 'skip' });
		expect(result.starts).toEqual([]);
		expect(result.missedCount).toBe(3);
		expect(result.lastDeclaredFire).toBe(at('2026-01-04T05:00:00Z'));
		expect(result.records).toEqual([
			{
				runKey: runKey('s', at('2026-01-04T05:00:00Z')),
				declaredAt: at('2026-01-04T05:00:00Z'),
				firstDeclaredAt: at('2026-01-02T05:00:00Z'),
				count: 3,
				outcome: 'missed',
				reason: expect.stringContaining('catch-up: skip'),
			},
		]);
	});

	it('coalesce: one reprocessing run for the newest window, keyed by the first, listing all of them', () => {
		const result = plan({ policy: 'coalesce' });
		expect(result.records).toEqual([]);
		expect(result.starts).toEqual([
			{
				runKey: `${runKey('s', at('2026-01-02T05:00:00Z'))}/coalesced`,
				declaredAt: at('2026-01-04T05:00:00Z'),
				kind: 'coalesced',
				coalesced: {
					count: 3,
					firstDeclaredAt: at('2026-01-02T05:00:00Z'),
					lastDeclaredAt: at('2026-01-04T05:00:00Z'),
					windows: [
						at('2026-01-02T05:00:00Z'),
						at('2026-01-03T05:00:00Z'),
						at('2026-01-04T05:00:00Z'),
					],
				},
			},
		]);
	});

	it('run-all: one catch-up run per window, oldest first, within the limit', () => {
		const result = plan({ policy: 'run-all', runAllLimit: 3 });
		expect(result.records).toEqual([]);
		expect(
			result.starts.map((fire) => [fire.kind, new Date(fire.declaredAt).toISOString()]),
		).toEqual([
			['catch-up', '2026-01-02T05:00:00.000Z'],
			['catch-up', '2026-01-03T05:00:00.000Z'],
			['catch-up', '2026-01-04T05:00:00.000Z'],
		]);
	});

	it('run-all over the limit: runs the newest windows and records the older ones as missed', () => {
		const result = plan({ policy: 'run-all', runAllLimit: 2, now: at('2026-01-31T12:00:00Z') });
		expect(result.missedCount).toBe(30);
		expect(result.starts.map((fire) => fire.declaredAt)).toEqual([
			at('2026-01-30T05:00:00Z'),
			at('2026-01-31T05:00:00Z'),
		]);
		expect(result.records).toEqual([
			expect.objectContaining({
				outcome: 'missed',
				count: 28,
				firstDeclaredAt: at('2026-01-02T05:00:00Z'),
				declaredAt: at('2026-01-29T05:00:00Z'),
				reason: expect.stringContaining('run-all limit of 2'),
			}),
		]);
		expect(result.lastDeclaredFire).toBe(at('2026-01-31T05:00:00Z'));
	});

	it('leaves windows within the tolerance to be fired normally', () => {
		const result = plan({
			policy: 'run-all',
			now: at('2026-01-04T05:00:30Z'),
			toleranceMs: MINUTE_MS,
		});
		expect(result.starts.map((fire) => fire.declaredAt)).toEqual([
			at('2026-01-02T05:00:00Z'),
			at('2026-01-03T05:00:00Z'),
		]);
		expect(result.lastDeclaredFire).toBe(at('2026-01-03T05:00:00Z'));
	});

	it('rejects invalid options naming the field', () => {
		expect(() => plan({ policy: 'sometimes' as never })).toThrow(
			'Invalid value "sometimes" for "«catchUp»": use skip, coalesce, run-all',
		);
		expect(() => plan({ policy: 'run-all', runAllLimit: 0 })).toThrow(ConfigError);
		expect(() => plan({ policy: 'run-all', runAllLimit: 0 })).toThrow(
			expect.objectContaining({
				field: 'runAllLimit',
				message: 'Invalid value 0 for "«runAllLimit»": must be a whole number from 1 to 1000',
			}),
		);
	});

	describe('a year of minutely windows', () => {
		const minutely = [
			new CronSchedule('* * * * *', 'America/New_York'),
			new IntervalSchedule(MINUTE_MS),
		];

		it.each(minutely)('stays summarized under skip (%#)', (schedule) => {
			const result = planCatchUp({
				scheduleId: 's',
				schedule,
				lastDeclaredFire: YEAR_START,
				now: YEAR_END + 1,
				policy: 'skip',
			});
			expect(result.missedCount).toBe(525_600);
			expect(result.records).toHaveLength(1);
			expect(result.records[0]).toMatchObject({
				count: 525_600,
				firstDeclaredAt: YEAR_START + MINUTE_MS,
				declaredAt: YEAR_END,
			});
		});

		it.each(minutely)('bounds the coalesced list (%#)', (schedule) => {
			const result = planCatchUp({
				scheduleId: 's',
				schedule,
				lastDeclaredFire: YEAR_START,
				now: YEAR_END + 1,
				policy: 'coalesce',
			});
			expect(result.starts).toHaveLength(1);
			const coalesced = result.starts[0].coalesced!;
			expect(coalesced.count).toBe(525_600);
			expect(coalesced.windows).toHaveLength(COALESCED_LIST_LIMIT);
			expect(coalesced.windows.at(-1)).toBe(YEAR_END);
			expect(coalesced.firstDeclaredAt).toBe(YEAR_START + MINUTE_MS);
		});

		it.each(minutely)('starts only runAllLimit runs under run-all (%#)', (schedule) => {
			const result = planCatchUp({
				scheduleId: 's',
				schedule,
				lastDeclaredFire: YEAR_START,
				now: YEAR_END + 1,
				policy: 'run-all',
				runAllLimit: 10,
			});
			expect(result.starts).toHaveLength(10);
			expect(result.starts[9].declaredAt).toBe(YEAR_END);
			expect(result.records).toEqual([
				expect.objectContaining({
					outcome: 'missed',
					count: 525_590,
					declaredAt: YEAR_END - 10 * MINUTE_MS,
				}),
			]);
		});
	});

	it('counts an hourly schedule by real hours across a DST change', () => {
		const hourly = new CronSchedule('0 * * * *', 'Europe/Berlin');
		const result = planCatchUp({
			scheduleId: 's',
			schedule: hourly,
			lastDeclaredFire: at('2026-03-28T23:00:00Z'),
			now: at('2026-03-29T22:00:00Z') + DAY_MS - HOUR_MS + 1,
			policy: 'skip',
		});
		expect(result.missedCount).toBe(23 + 23);
	});
});
