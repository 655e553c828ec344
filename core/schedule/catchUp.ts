import { checkRange, ConfigError } from '../configError';
import type { Fire } from './fire';
import { coalescedRunKey, runKey } from './fire';
import type { FireRecord } from './history';
import { missedRecord } from './history';
import type { Schedule } from './schedule';

/**
 * What happens to windows that passed without a fire (n8n down, workflow inactive, process
 * suspended): `skip` records them (state-sync polls: the next run sees current state anyway),
 * `coalesce` runs once for all of them, `run-all` runs each (windows that mean different things,
 * like a daily scorecard).
 */
export type CatchUpPolicy = 'skip' | 'coalesce' | 'run-all';

export const CATCH_UP_POLICIES: readonly CatchUpPolicy[] = ['skip', 'coalesce', 'run-all'];
export const DEFAULT_RUN_ALL_LIMIT = 10;
export const MAX_RUN_ALL_LIMIT = 1000;
/** Windows listed in a coalesced run; the run also carries their count, first and last. */
export const COALESCED_LIST_LIMIT = 100;

/** Throws a ConfigError naming `catchUp` or `runAllLimit`. */
export function checkCatchUpOptions(policy: CatchUpPolicy, runAllLimit: number): void {
	if (!CATCH_UP_POLICIES.includes(policy)) {
		throw new ConfigError('catchUp', policy, `use ${CATCH_UP_POLICIES.join(', ')}`);
	}
	checkRange('runAllLimit', runAllLimit, {
		min: 1,
		max: MAX_RUN_ALL_LIMIT,
		whole: true,
	});
}

export interface CatchUpInput {
	scheduleId: string;
	schedule: Schedule;
	/** The persisted cursor (see ScheduleState); undefined on first activation: nothing is missed. */
	lastDeclaredFire: number | undefined;
	now: number;
	policy: CatchUpPolicy;
	runAllLimit?: number;
	/**
	 * A window declared less than this long before `now` is late, not missed: the engine still
	 * fires it as a normal scheduled fire (its jitter may not have elapsed, or the timer or a
	 * restart was only a little late).
	 */
	toleranceMs?: number;
}

export interface CatchUpPlan {
	/** Runs to start now, oldest first; all reprocessing (validTime = the window). */
	starts: Fire[];
	/** History for the missed windows that get no run (summarized: at most one entry). */
	records: FireRecord[];
	/** The new cursor: every window up to here is now handled. */
	lastDeclaredFire: number;
	/** Windows that passed without a fire, whatever the policy does with them. */
	missedCount: number;
	/** The first and last of them, when there are any. */
	missedSpan?: { first: number; last: number };
}

const MISSED_REASON = 'not fired in time: the trigger was inactive or n8n was down';

/**
 * Plans catch-up. Cost is one pass over the missed windows without keeping them (a year of
 * minutely windows is summarized, not listed), plus O(1) for interval schedules.
 *
 * run-all over its limit starts the NEWEST `runAllLimit` windows (oldest of those first) and
 * records the older ones as one `missed` entry. The newest windows are the ones people are
 * waiting for (after a month down, yesterday's daily scorecard matters more than one from four
 * weeks ago), and the gap left is a single contiguous stretch at the old end that is easy to see
 * in the history and to backfill by hand.
 */
export function planCatchUp(input: CatchUpInput): CatchUpPlan {
	const {
		scheduleId,
		schedule,
		lastDeclaredFire,
		now,
		policy,
		runAllLimit = DEFAULT_RUN_ALL_LIMIT,
		toleranceMs = 0,
	} = input;
	checkCatchUpOptions(policy, runAllLimit);
	if (lastDeclaredFire === undefined)
		return { starts: [], records: [], lastDeclaredFire: now, missedCount: 0 };
	// One more than the limit under run-all: the extra one is the newest window left out.
	const listed =
		policy === 'run-all' ? runAllLimit + 1 : policy === 'coalesce' ? COALESCED_LIST_LIMIT : 0;
	const span = schedule.windowsBetween(lastDeclaredFire, now - toleranceMs - 1, listed);
	if (span.first === undefined || span.last === undefined)
		return { starts: [], records: [], lastDeclaredFire, missedCount: 0 };
	const missed = { count: span.count, first: span.first, last: span.last };
	const plan: CatchUpPlan = {
		starts: [],
		records: [],
		lastDeclaredFire: missed.last,
		missedCount: missed.count,
		missedSpan: { first: missed.first, last: missed.last },
	};
	switch (policy) {
		case 'skip':
			plan.records.push(missedRecord(scheduleId, missed, `${MISSED_REASON} (catch-up: skip)`));
			break;
		case 'coalesce':
			// Keyed by the first window: the same stretch of missed windows is the same start, however
			// long it has grown since (see coalescedRunKey).
			plan.starts.push({
				runKey: coalescedRunKey(scheduleId, missed.first),
				declaredAt: missed.last,
				kind: 'coalesced',
				coalesced: {
					count: missed.count,
					firstDeclaredAt: missed.first,
					lastDeclaredAt: missed.last,
					windows: span.newest,
				},
			});
			break;
		case 'run-all': {
			const run = span.newest.slice(-runAllLimit);
			const left = missed.count - run.length;
			if (left > 0) {
				plan.records.push(
					missedRecord(
						scheduleId,
						{ count: left, first: missed.first, last: span.newest[0] },
						`${MISSED_REASON}; over the run-all limit of ${runAllLimit}, so only the newest ${runAllLimit} windows were run`,
					),
				);
			}
			for (const window of run)
				plan.starts.push({
					runKey: runKey(scheduleId, window),
					declaredAt: window,
					kind: 'catch-up',
				});
			break;
		}
	}
	return plan;
}
