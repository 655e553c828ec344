import type { Clock } from '../clock';
import { type CommitOptions, type DedupeStore, itemHash, type PlannedRun } from './dedupe';
import type { ItemKey, PollExpressions } from './expressions';
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
	): Promise<{ notModified: true } | (Fetched & ({ result: unknown } | { items: unknown[] }))>;
	commit: CommitOptions;
}

/** What a fetch says of its list, beyond the items. */
interface Fetched {
	notModified?: false;
	/** Default true: the poll ends a pass over the source (CommitOptions.endsPass). */
	endsPass?: boolean;
	/** The poll listed the top of a newest-first list only (CommitOptions.topOnly). */
	topOnly?: boolean;
	/**
	 * Set: the fetch read the source only for the items owed (`owed`: their key hashes) at the places
	 * in its list `history` names; of those items the poll plans the owed alone (what else it listed
	 * there is for the polls that read on as usual, or history).
	 */
	only?: { owed: ReadonlySet<string>; history: (at: number) => boolean };
	/** Items the source listed that the poll does not plan yet (files still uploading): the cap keeps their keys. */
	listedToo?: unknown[];
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
	const listed =
		'items' in fetched
			? await cycle.expressions.keyList(fetched.items as T[], options)
			: await cycle.expressions.keyItems<T>(fetched.result, options);
	const { only } = fetched;
	const planned = ({ key }: { key: ItemKey }, at: number) =>
		!only || !only.history(at) || only.owed.has(itemHash(key));
	const keyed = listed.filter(planned);
	signal.throwIfAborted();
	const now = cycle.clock.now();
	// Listed, not planned: the cap keeps their keys all the same.
	const listedToo = [
		...(fetched.listedToo ? await keyHashes(cycle.expressions, fetched.listedToo) : []),
		...listed.filter((keyedItem, at) => !planned(keyedItem, at)).map(({ key }) => itemHash(key)),
	];
	signal.throwIfAborted();
	const runs = store.commit(store.plan(keyed, now), now, {
		...cycle.commit,
		...(fetched.endsPass === false && { endsPass: false }),
		...(fetched.topOnly && { topOnly: true }),
		...(listedToo.length > 0 && { listedToo }),
	});
	const started = runs.reduce((count, run) => count + run.candidates.length, 0);
	return { outcome: started > 0 ? { kind: 'new_items', started } : { kind: 'unchanged' }, runs };
}

/**
 * The key hashes of items the poll does not plan yet; none if one cannot be keyed (the poll that
 * plans it says why).
 */
async function keyHashes(expressions: PollExpressions, items: unknown[]): Promise<string[]> {
	try {
		const keyed = await expressions.keyList(items, { withVersion: false });
		return keyed.map(({ key }) => itemHash(key));
	} catch {
		return [];
	}
}
