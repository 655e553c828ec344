/**
 * What a schedule is, apart from how one is built (schedule.ts) or computed (cron.ts, interval.ts):
 * a leaf module, so that the schedules and their factory import it and not each other.
 */

/** When a schedule fires: its declared window times. Jitter and lateness are applied by the engine. */
export interface Schedule {
	/**
	 * Canonical text of the definition. Two schedules with equal fingerprints declare the same
	 * windows, so a changed fingerprint tells the engine that stored progress belongs to another
	 * schedule.
	 */
	readonly fingerprint: string;
	/** The first window declared strictly after `afterMs`. */
	nextAfter(afterMs: number): number;
	/** The windows in (fromExclusive, toInclusive]: counted and summarized, the newest `limit` listed. */
	windowsBetween(fromExclusive: number, toInclusive: number, limit: number): WindowSpan;
}

/**
 * A summary of a range of windows that stays small however many windows the range holds (a year
 * of minutely windows is 525,600).
 */
export interface WindowSpan {
	count: number;
	/** Oldest and newest window; undefined when `count` is 0. */
	first?: number;
	last?: number;
	/** The newest `limit` windows, oldest first (the recent end is the part callers act on). */
	newest: number[];
}

export type ScheduleDefinition =
	| { kind: 'cron'; expression: string; timezone: string }
	| { kind: 'interval'; intervalMs: number; anchorMs?: number };
