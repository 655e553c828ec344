export const SECOND_MS = 1_000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** The duration units the nodes offer; a day is 24 h of elapsed time, even across a DST change. */
export type TimeUnit = 'seconds' | 'minutes' | 'hours' | 'days';
export const UNIT_MS: Record<TimeUnit, number> = {
	seconds: SECOND_MS,
	minutes: MINUTE_MS,
	hours: HOUR_MS,
	days: DAY_MS,
};

/** Times in items and messages: ISO 8601 in UTC. */
export const isoTime = (time: number): string => new Date(time).toISOString();
