import { checkRange, ConfigError } from '../configError';
import type { Schedule, WindowSpan } from './types';
import { DAY_MS, SECOND_MS } from '../units';

/** Shorter intervals would make every trigger a busy loop of executions. */
export const MIN_INTERVAL_MS = 10 * SECOND_MS;
/** Longer ones are better said with cron, and 366 days still covers "yearly" in a leap year. */
export const MAX_INTERVAL_MS = 366 * DAY_MS;

/**
 * Windows at `anchorMs + k * intervalMs`. The anchor (default: the Unix epoch) is fixed, not the
 * activation time, so window times are the same whenever n8n was started or restarted, and a
 * restart can tell exactly which windows it missed.
 */
export class IntervalSchedule implements Schedule {
	readonly fingerprint: string;

	constructor(
		readonly intervalMs: number,
		readonly anchorMs = 0,
	) {
		checkRange(
			'interval',
			intervalMs,
			{ min: MIN_INTERVAL_MS, max: MAX_INTERVAL_MS, whole: true },
			{ duration: true },
		);
		// Not a parameter: the node leaves it at the epoch.
		if (!Number.isInteger(anchorMs))
			throw new ConfigError(
				'anchor',
				anchorMs,
				'must be a whole number of milliseconds since the epoch',
			);
		this.fingerprint = `interval ${intervalMs} anchor ${anchorMs}`;
	}

	nextAfter(afterMs: number): number {
		return (
			this.anchorMs +
			(Math.floor((afterMs - this.anchorMs) / this.intervalMs) + 1) * this.intervalMs
		);
	}

	windowsBetween(fromExclusive: number, toInclusive: number, limit: number): WindowSpan {
		const first = this.nextAfter(fromExclusive);
		if (first > toInclusive) return { count: 0, newest: [] };
		const last =
			this.anchorMs + Math.floor((toInclusive - this.anchorMs) / this.intervalMs) * this.intervalMs;
		const count = (last - first) / this.intervalMs + 1;
		const listed = Math.min(count, limit);
		const newest = Array.from(
			{ length: listed },
			(_, i) => last - (listed - 1 - i) * this.intervalMs,
		);
		return { count, first, last, newest };
	}
}
