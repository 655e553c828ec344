import type { PollSetup } from './poll/simulation';

/**
 * The Poll Trigger's promises, stated once: what the model simulation (test/model/poll) holds the
 * real core to after every schedule, and what docs/guarantees.md ("The model simulation") lists.
 *
 * 1. Never lost: every item the source listed (or still holds at the end) is started, or named in
 *    a report the user sees (a failed execution naming the runs n8n did not run, a dead letter).
 *    Declared (docs/guarantees.md, "n8n killed … and the source dropping those items"): an item
 *    listed once, never started, that the source no longer holds. Declared (docs/guarantees.md,
 *    "Next-page requests expiring before the next poll"): after a failed execution saying a
 *    refused next-page request left Max Pages too few requests to read from the first page past
 *    where the cut poll stopped (none with Max Pages 1), items not reached.
 * 2. Start Again of an item the source still holds starts it once more.
 * 3. Never repeated, per the kind's meaning (`unique`: a key starts once; `greatest`, $cursor: each
 *    version, which has its own cursor value, starts once): more starts than 1 (0
 *    for what First Poll Starts Nothing found) plus its Start Agains are a failure, except the
 *    declared repeats, each counted: Remember at Most forgot a key the source then listed again on
 *    its own, added back or changed (new again; under `unique` n8n refuses its first run's key while it keeps that execution:
 *    "Remember at Most (Keys) set, and a key it forgot");
 *    a run still going at an unpublish or a kill, started again because n8n pruned its execution
 *    before the next activation's emit of that key ("runs still going at unpublish, then pruned":
 *    n8n refuses a key only while it keeps the execution), under that key or, when n8n could not
 *    create that emit, under the new attempt its rollback gives; queue mode's run n8n
 *    reported not created that a worker ran, one repeat per such run (docs/queue-mode.md: the items
 *    go back under a new key each time n8n says so, and each such run is named in a report).
 * 4. First Poll Starts Nothing: nothing the source held at the first poll starts (but by Start
 *    Again, or a declared repeat).
 * 5. State stays within its bounds (simulation.ts checkBounds: the history cap, the outbox).
 * 6. No poll pages without end: a poll sends at most Max Pages requests (sql.query: its pages, not
 *    the one-row query placing a zone's end, simulation.ts pagesCounted), and once nothing is owed
 *    (the quiet end) a poll reads one page (but a first poll taking only a baseline of a paged
 *    list, which reads it to the end); every poll ends, and the last poll of the quiet end
 *    succeeds (no request fails for ever).
 */

export interface PollTrace {
	setup: PollSetup;
	/** Every item version an answer listed (`id@v`), and the poll that first listed it. */
	listed: Map<string, number>;
	/** Item versions the source held at the first poll under First Poll Starts Nothing. */
	baseline: Set<string>;
	/** Every item n8n started, in order, with its run's key. */
	starts: Array<{ id: string; v: number; key: string; poll: number }>;
	/** Item keys named in a report the user sees. */
	reported: Set<string>;
	/**
	 * A failed execution (Max Pages) said a refused next-page request left no request to read
	 * from the first page: items past the pages read may not have started.
	 */
	expiredUnread: boolean;
	/** Each Start Again: the item, and how many starts there were before it. */
	startAgain: Array<{ id: string; atStart: number }>;
	dropped: Set<string>;
	/** Items the source listed again on its own: added back after a drop, or changed. */
	readded: Set<string>;
	/** Items one of whose runs' executions n8n pruned. */
	prunedAfterStart: Set<string>;
	/** Keys of runs still going at an unpublish or a kill, or whose settlement was not stored then. */
	unpublishedRunning: Set<string>;
	/**
	 * Items of runs n8n reported not created that a worker ran (queue mode), with how many such runs
	 * each had: every one is a declared repeat.
	 */
	rejectedButRan: Map<string, number>;
	/** What the source holds at the end: id → version. */
	final: Map<string, number>;
	/** `baseline`: a first poll taking only a baseline (First Poll Starts Nothing). */
	polls: Array<{ requests: number; failed: boolean; quiet: boolean; baseline: boolean }>;
	boundViolations: string[];
	story: string[];
}

/** What the properties found: the failures, and the declared cases counted. */
export interface Verdict {
	failures: string[];
	declared: Record<string, number>;
}

export function checkPollTrace(trace: PollTrace): Verdict {
	const failures: string[] = [];
	const declared: Record<string, number> = {};
	const count = (name: string) => (declared[name] = (declared[name] ?? 0) + 1);
	const { setup } = trace;
	const idOf = (version: string) => version.slice(0, version.lastIndexOf('@'));
	// What starts once: the key (`unique`), or each version (`greatest`: a version has its own
	// cursor value). `plain` is the item's id, which reports and the schedule's events name.
	const byVersion = setup.style === 'cursorOldestFirst';
	const identity = (id: string, v: number) => (byVersion ? `${id}@${v}` : id);
	const plain = (name: string) => (byVersion ? idOf(name) : name);
	const fromVersion = (version: string) => (byVersion ? version : idOf(version));
	const baselineIds = new Set([...trace.baseline].map(fromVersion));
	const startsOf = new Map<string, number>();
	for (const { id, v } of trace.starts)
		startsOf.set(identity(id, v), (startsOf.get(identity(id, v)) ?? 0) + 1);
	const startAgains = new Map<string, number>();
	for (const { id } of trace.startAgain) startAgains.set(id, (startAgains.get(id) ?? 0) + 1);
	const final = new Set([...trace.final].map(([id, v]) => identity(id, v)));

	// 1. Never lost.
	const ids = new Set([...[...trace.listed.keys()].map(fromVersion), ...final]);
	for (const id of ids) {
		if (baselineIds.has(id) || startsOf.has(id) || trace.reported.has(plain(id))) continue;
		// Declared (docs/guarantees.md, "next-page requests expiring before the next poll"): a
		// continuation refused with too few requests left under Max Pages is reported, not its items.
		if (final.has(id) && trace.expiredUnread)
			count('a next-page request expired, Max Pages left too few pages to read: reported');
		else if (final.has(id))
			failures.push(`${id} was listed and never started, and no report names it`);
		else count('listed once, never started, no longer listed');
	}
	// 2. Start Again.
	for (const { id, atStart } of trace.startAgain) {
		if (!trace.final.has(id) || trace.reported.has(id)) continue;
		if (!trace.starts.slice(atStart).some((start) => start.id === id))
			failures.push(`Start Again of ${id} never started it, and no report names it`);
	}
	// 3 and 4. Never repeated; nothing old starts.
	for (const [id, starts] of startsOf) {
		const allowed = (baselineIds.has(id) ? 0 : 1) + (startAgains.get(id) ?? 0);
		if (starts <= allowed) continue;
		const repeats = starts - allowed;
		const keys = trace.starts
			.filter((start) => identity(start.id, start.v) === id)
			.map(({ key }) => key);
		if (setup.maxRemembered > 0 && trace.readded.has(plain(id)))
			declared['Remember at Most forgot a key the source listed again'] =
				(declared['Remember at Most forgot a key the source listed again'] ?? 0) + repeats;
		else if (
			trace.prunedAfterStart.has(plain(id)) &&
			// Started again after a cut run: under its key, or under a new attempt once n8n could
			// not create the run under it.
			keys.some((key, n) => trace.unpublishedRunning.has(key) && n < keys.length - 1)
		)
			count('cut by a kill or unpublish, pruned before n8n refused its key again');
		else if (repeats <= (trace.rejectedButRan.get(plain(id)) ?? 0))
			declared['queue mode: reported not created, run by a worker'] =
				(declared['queue mode: reported not created, run by a worker'] ?? 0) + repeats;
		else if (baselineIds.has(id))
			failures.push(
				`${id}, in the source before the first poll (First Poll Starts Nothing), started ${starts} time(s)`,
			);
		else
			failures.push(
				`${id} started ${starts} times (allowed ${allowed}${startAgains.has(id) ? ' with its Start Again' : ''})`,
			);
	}
	// 5. Bounds.
	failures.push(...new Set(trace.boundViolations));
	// 6. Polls end.
	const maxRequests = setup.style === 'relist' ? 1 : setup.maxPages;
	// Declared (docs/guarantees.md, "The first poll of a fresh trigger"): a baseline first poll of a
	// paged list reads it to the end, past Max Pages.
	const readsWhole = setup.style === 'cursorOldestFirst' || setup.style === 'newestFirstPages';
	trace.polls.forEach(({ requests, baseline }, n) => {
		if (baseline && readsWhole) return;
		if (requests > maxRequests)
			failures.push(`poll ${n + 1} sent ${requests} requests, over Max Pages ${maxRequests}`);
	});
	const last = trace.polls.at(-1);
	if (last?.failed) failures.push('the last poll of the quiet end failed: polls fail for ever');
	else if (last && last.requests > 1)
		failures.push(
			`the last poll of the quiet end still read ${last.requests} pages: nothing is owed, yet it pages on`,
		);
	return { failures, declared };
}
