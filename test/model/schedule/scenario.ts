import fc from 'fast-check';

import type { CatchUpPolicy } from '../../../core/schedule/catchUp';
import type { OverlapPolicy } from '../../../core/schedule/overlap';
import type { ScheduleDefinition } from '../../../core/schedule/types';
import type { RetryPolicy } from '../../../core/retryPolicy';
import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from '../../../core/units';

/**
 * One random life of a Durable Schedule Trigger: its settings, how n8n treats its runs, and the
 * outages it goes through. Times are in `unit`s (the schedule's usual gap between windows), as
 * hundredths, so that one scenario shape fits a minutely and a daily schedule alike.
 */
export interface Scenario {
	schedule: { name: string; definition: ScheduleDefinition; unitMs: number };
	/** When the trigger is first published. */
	startAt: number;
	catchUp: CatchUpPolicy;
	runAllLimit: number;
	overlap: OverlapPolicy;
	/** Jitter, as hundredths of a unit. */
	jitter: number;
	/** Late Grace: n8n's default (undefined), none (0), or hundredths of a unit. */
	lateGrace: number | undefined;
	historyLimit: number;
	/** When a Run Fails: Start the Window Again (undefined: Leave It Failed); delays in hundredths of a unit. */
	retry: { maxAttempts: number; firstDelay: number } | undefined;
	/** Run durations in hundredths of a unit, used in turn by the runs n8n creates. */
	durations: number[];
	/** Whether each run n8n creates fails (status error), used in turn. */
	failures: boolean[];
	/** Whether n8n refuses to create each run it is asked for (done-promise rejected), used in turn. */
	refusals: boolean[];
	/** The trigger's life: each segment is live for a while, then ends by a kill or an unpublish. */
	segments: Segment[];
}

export interface Segment {
	/** How long the trigger is live, in hundredths of a unit. */
	live: number;
	/**
	 * n8n is killed just before its `killAtStep`-th step of this segment (a save of the static data,
	 * the creation of a run, a run's end, a settlement write), if it gets that far.
	 */
	killAtStep: number | undefined;
	/** How the segment ends if no kill came first: n8n killed, or the workflow unpublished. */
	end: 'kill' | 'unpublish';
	/** How long n8n (or the workflow) stays down, in hundredths of a unit. */
	down: number;
	/** n8n prunes every ended execution just before the trigger comes back. */
	prune: boolean;
}

/** The schedules drawn from: intervals, and crons in zones whose clocks change near the start times. */
const SCHEDULES: Array<Scenario['schedule']> = [
	{
		name: 'every minute',
		definition: { kind: 'interval', intervalMs: MINUTE_MS },
		unitMs: MINUTE_MS,
	},
	{
		name: 'every 10 min',
		definition: { kind: 'interval', intervalMs: 10 * MINUTE_MS },
		unitMs: 10 * MINUTE_MS,
	},
	{ name: 'every day', definition: { kind: 'interval', intervalMs: DAY_MS }, unitMs: DAY_MS },
	{
		name: 'cron 30 2 * * * Europe/Berlin',
		definition: { kind: 'cron', expression: '30 2 * * *', timezone: 'Europe/Berlin' },
		unitMs: DAY_MS,
	},
	{
		name: 'cron 0 * * * * Europe/Berlin',
		definition: { kind: 'cron', expression: '0 * * * *', timezone: 'Europe/Berlin' },
		unitMs: HOUR_MS,
	},
	{
		name: 'cron */15 * * * * America/New_York',
		definition: { kind: 'cron', expression: '*/15 * * * *', timezone: 'America/New_York' },
		unitMs: 15 * MINUTE_MS,
	},
	{
		name: 'cron 0 9 * * 1-5 UTC',
		definition: { kind: 'cron', expression: '0 9 * * 1-5', timezone: 'UTC' },
		unitMs: DAY_MS,
	},
];

/** Start times just before a clock change: Europe spring and autumn, US spring; and a plain day. */
const STARTS = [
	Date.UTC(2026, 2, 28, 22),
	Date.UTC(2026, 9, 24, 22),
	Date.UTC(2026, 2, 8, 5),
	Date.UTC(2026, 0, 1),
];

const overlapArb: fc.Arbitrary<OverlapPolicy> = fc.oneof(
	fc.constant({ kind: 'skip-if-running' as const }),
	fc.integer({ min: 1, max: 3 }).map((queueLimit) => ({ kind: 'queue' as const, queueLimit })),
	fc
		.integer({ min: 1, max: 3 })
		.map((maxParallel) => ({ kind: 'allow-parallel' as const, maxParallel })),
);

const segmentArb: fc.Arbitrary<Segment> = fc.record({
	live: fc.integer({ min: 0, max: 600 }),
	killAtStep: fc.option(fc.integer({ min: 1, max: 25 }), { nil: undefined }),
	end: fc.constantFrom<Segment['end']>('kill', 'unpublish'),
	down: fc.integer({ min: 0, max: 1200 }),
	prune: fc.boolean(),
});

export const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
	schedule: fc.constantFrom(...SCHEDULES),
	startAt: fc
		.tuple(fc.constantFrom(...STARTS), fc.integer({ min: 0, max: 180 }))
		.map(([start, minutes]) => start + minutes * MINUTE_MS + 7 * SECOND_MS),
	catchUp: fc.constantFrom<CatchUpPolicy>('skip', 'coalesce', 'run-all'),
	runAllLimit: fc.integer({ min: 1, max: 4 }),
	overlap: overlapArb,
	jitter: fc.constantFrom(0, 0, 30),
	lateGrace: fc.constantFrom(undefined, 0, 50),
	historyLimit: fc.constantFrom(100, 100, 20),
	retry: fc.option(
		fc.record({
			maxAttempts: fc.integer({ min: 2, max: 3 }),
			firstDelay: fc.integer({ min: 1, max: 80 }),
		}),
		{ nil: undefined },
	),
	durations: fc.array(fc.integer({ min: 1, max: 250 }), { minLength: 1, maxLength: 6 }),
	failures: fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }),
	refusals: fc.array(fc.constantFrom(false, false, false, true), { minLength: 1, maxLength: 6 }),
	segments: fc.array(segmentArb, { maxLength: 4 }),
});

/** Hundredths of a unit in ms, never below a second (the engine's smallest delays). */
export function unitsMs(scenario: Scenario, hundredths: number): number {
	return Math.max(SECOND_MS, Math.round((hundredths * scenario.schedule.unitMs) / 100));
}

/** The retry policy the engine gets: backoff from the scenario, doubling, capped at one unit. */
export function retryPolicyOf(scenario: Scenario): RetryPolicy | undefined {
	if (!scenario.retry) return undefined;
	const firstDelayMs = unitsMs(scenario, scenario.retry.firstDelay);
	return {
		maxAttempts: scenario.retry.maxAttempts,
		firstDelayMs,
		factor: 2,
		maxDelayMs: Math.max(firstDelayMs, scenario.schedule.unitMs),
	};
}

/** The settings in a line, as the story starts. */
export function describeSettings(scenario: Scenario): string {
	const overlap =
		scenario.overlap.kind === 'queue'
			? `queue (limit ${scenario.overlap.queueLimit})`
			: scenario.overlap.kind === 'allow-parallel'
				? `allow-parallel (max ${scenario.overlap.maxParallel})`
				: 'skip-if-running';
	const catchUp =
		scenario.catchUp === 'run-all' ? `run-all (limit ${scenario.runAllLimit})` : scenario.catchUp;
	const retry = scenario.retry
		? `start the window again (max ${scenario.retry.maxAttempts} runs, first delay ${unitsMs(scenario, scenario.retry.firstDelay) / SECOND_MS} s)`
		: 'leave it failed';
	return [
		`schedule ${scenario.schedule.name}`,
		`catch-up ${catchUp}`,
		`overlap ${overlap}`,
		`jitter ${scenario.jitter === 0 ? 'none' : `${unitsMs(scenario, scenario.jitter) / SECOND_MS} s`}`,
		`late grace ${scenario.lateGrace === undefined ? 'default' : `${scenario.lateGrace === 0 ? 0 : unitsMs(scenario, scenario.lateGrace) / SECOND_MS} s`}`,
		`history limit ${scenario.historyLimit}`,
		`when a run fails: ${retry}`,
	].join('; ');
}
