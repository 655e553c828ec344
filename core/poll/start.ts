import type { Clock } from '../clock';
import type { Candidate, DedupeStore, PollPlan, SavedDedupeState } from './dedupe';
import type { PollExpressions } from './expressions';
import type { PollOutcome } from './runner';

export interface StartNewItemsOptions<T> {
	now: number;
	/** Starts one run over `candidates` (one candidate unless `onePerItem` is false); throws if it could not. */
	start(candidates: ReadonlyArray<Candidate<T>>): void | Promise<void>;
	/** Default true: one run per item. False: one run over all the new items. */
	onePerItem?: boolean;
	/** A timed-out or stopped poll starts nothing more. */
	signal?: AbortSignal;
}

/**
 * Starts a plan's new items through the claim/commit protocol (see dedupe.ts) and returns how many
 * items started. Stops at the first failed start and rethrows its error once that item is released,
 * so it comes back next poll; items started before it stay remembered.
 */
export async function startNewItems<T>(store: DedupeStore, plan: PollPlan<T>, options: StartNewItemsOptions<T>): Promise<number> {
	const { now, start, signal } = options;
	store.settle(plan, now);
	if (options.onePerItem === false) {
		const claimed = plan.toStart.filter((candidate) => store.claim(candidate, now));
		if (claimed.length === 0) return 0;
		await startOrRelease(store, claimed, start, signal);
		for (const candidate of claimed) store.commit(candidate, now);
		return claimed.length;
	}
	let started = 0;
	for (const candidate of plan.toStart) {
		if (!store.claim(candidate, now)) continue;
		await startOrRelease(store, [candidate], start, signal);
		store.commit(candidate, now);
		started++;
	}
	return started;
}

async function startOrRelease<T>(
	store: DedupeStore,
	claimed: ReadonlyArray<Candidate<T>>,
	start: StartNewItemsOptions<T>['start'],
	signal: AbortSignal | undefined,
): Promise<void> {
	try {
		signal?.throwIfAborted();
		await start(claimed);
	} catch (error) {
		// Newest first: for cursor kinds releasing one releases the claims chained after it anyway.
		for (const candidate of [...claimed].reverse()) store.release(candidate);
		throw error;
	}
}

/** What the node supplies for one poll. */
export interface PollCycle<T> {
	expressions: PollExpressions;
	store: DedupeStore;
	clock: Clock;
	/** Performs the op; `notModified` for an HTTP 304 or the like (nothing to look at). */
	fetch(signal: AbortSignal): Promise<{ notModified: true } | { notModified?: false; result: unknown }>;
	start: StartNewItemsOptions<T>['start'];
	onePerItem?: boolean;
	/** Persists the dedupe state (n8n: workflow static data). Called even when a start failed, as earlier starts are remembered. */
	save(state: SavedDedupeState): void;
}

/** One poll as the runner's `poll` callback: op, keys, dedupe, starts, save. */
export async function runPollCycle<T>(cycle: PollCycle<T>, signal: AbortSignal): Promise<PollOutcome> {
	const fetched = await cycle.fetch(signal);
	if (fetched.notModified) return { kind: 'not_modified' };
	const { store } = cycle;
	const keyed = await cycle.expressions.keyItems<T>(fetched.result, { withVersion: store.needsVersion });
	signal.throwIfAborted();
	const now = cycle.clock.now();
	const plan = store.plan(keyed, now);
	try {
		const started = await startNewItems(store, plan, { now, start: cycle.start, onePerItem: cycle.onePerItem, signal });
		return started > 0 ? { kind: 'new_items', started } : { kind: 'unchanged' };
	} finally {
		cycle.save(store.serialize());
	}
}
