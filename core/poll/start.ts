import type { Clock } from '../clock';
import type { CommitOptions, DedupeStore, PlannedRun } from './dedupe';
import type { PollExpressions } from './expressions';
import type { PollOutcome } from './runner';

/** What the node supplies for one poll. */
export interface PollCycle {
	expressions: PollExpressions;
	store: DedupeStore;
	clock: Clock;
	/**
	 * Performs the op; `notModified` for an HTTP 304 or the like (nothing to look at). `result` is the
	 * op's result, whose list Items selects; `items`, the list already selected (the pages of a
	 * paginated poll, core/poll/paging.ts).
	 */
	fetch(
		signal: AbortSignal,
	): Promise<
		| { notModified: true }
		| { notModified?: false; result: unknown }
		| { notModified?: false; items: unknown[] }
	>;
	commit: CommitOptions;
}

export interface PollCycleResult<T> {
	outcome: PollOutcome;
	/** Runs to record in the outbox (one state write) and then emit, in order. */
	runs: Array<PlannedRun<T>>;
}

/**
 * One poll up to the point where n8n takes over: op, keys, dedupe verdicts, and every start
 * remembered at once. Planning and committing happen in one synchronous step, so no other poll
 * can interleave; a poll aborted before that (timeout, stop) changes nothing.
 */
export async function runPollCycle<T>(
	cycle: PollCycle,
	signal: AbortSignal,
): Promise<PollCycleResult<T>> {
	const fetched = await cycle.fetch(signal);
	if (fetched.notModified) return { outcome: { kind: 'not_modified' }, runs: [] };
	const { store } = cycle;
	const options = { withVersion: store.needsVersion };
	const keyed =
		'items' in fetched
			? await cycle.expressions.keyList(fetched.items as T[], options)
			: await cycle.expressions.keyItems<T>(fetched.result, options);
	signal.throwIfAborted();
	const now = cycle.clock.now();
	const runs = store.commit(store.plan(keyed, now), now, cycle.commit);
	const started = runs.reduce((count, run) => count + run.candidates.length, 0);
	return { outcome: started > 0 ? { kind: 'new_items', started } : { kind: 'unchanged' }, runs };
}
