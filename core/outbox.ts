/**
 * The durability protocol both triggers share. n8n saves a workflow's static data only when a
 * trigger emits (and at activation), and it creates the run and saves the data concurrently. So a
 * trigger can never write "I started X" strictly after X started. Instead:
 *
 *   1. plan every start of a poll / tick first;
 *   2. write the state once, with each run about to start recorded here (its n8n deduplication
 *      key and what is needed to emit it again);
 *   3. emit the runs;
 *   4. at every activation, emit every entry again: n8n refuses, by deduplication key, the runs
 *      that were created, and creates the rest;
 *   5. an entry leaves once n8n has settled its run (ended, or refused as a duplicate): the
 *      removal rides along with the next write, never a write of its own.
 *
 * A crash anywhere therefore loses nothing (the entry, or the unsaved plan, comes back) and
 * repeats nothing (a run that exists keeps its key). Deduplication keys must be the same for the
 * same logical start, so each trigger derives them from its saved state, never from the clock.
 */

/** One run recorded before it is emitted. `run` is the trigger's own JSON (items, fire). */
export interface OutboxEntry<R> {
	/** n8n's execution deduplication key; the same logical start always has the same one. */
	key: string;
	run: R;
}

/** One run to emit: `key` is its n8n deduplication key (none: nothing to refuse or settle). */
export interface RunToEmit<R> {
	key: string | undefined;
	run: R;
}

/**
 * Where a live trigger's engine sends its state, its runs and its news; on n8n, the node's durable
 * trigger (nodes/shared/durableTrigger.ts): static data, the run emitter (emitRuns.ts), n8n's log.
 */
export interface RunOutlet<S, R> {
	/** Sets the trigger's state; n8n stores it with the next emit or after activation. */
	write(state: S): void;
	/** Emits runs after those of earlier calls. */
	emit(runs: ReadonlyArray<RunToEmit<R>>): Promise<void>;
	/**
	 * After earlier emits, calls `take`, which may change the state (the runs it returns are then in
	 * it), and emits the runs it returns, the first with that state (RunEmitter.emitTaken).
	 */
	emitTaken(take: () => ReadonlyArray<RunToEmit<R>>): Promise<void>;
	/**
	 * Whether a run under this key was emitted in this process and n8n has not settled it yet (an
	 * earlier activation's, before a re-publish): it is settled with that run, never emitted again.
	 */
	inFlight(key: string): boolean;
	/**
	 * Has n8n store the state now, though no run carries it: a first poll after activation that only
	 * took its baseline (n8n saves static data only on emit).
	 */
	writeNow(): void;
	/**
	 * Has n8n store the state now if it can without starting a run (n8n 2.x: the settlement write);
	 * where it cannot (n8n 1.x), nothing: the next emit or activation stores it.
	 */
	storeNow(): void;
	info(message: string): void;
	warn(message: string): void;
}

/** Why n8n did not settle a run as started. */
export type Settlement = 'started' | 'not_created';

/** The entries of an outbox as static data stored it (none when nothing was stored). */
export function storedOutboxEntries<R>(saved: unknown): Array<OutboxEntry<R>> {
	if (saved === undefined || saved === null) return [];
	if (!Array.isArray(saved)) throw new Error(`the outbox must be a list, not ${typeof saved}`);
	return (saved as Array<Partial<OutboxEntry<R>>>).map((entry) => {
		if (typeof entry?.key !== 'string' || entry.key === '')
			throw new Error('an outbox entry has no deduplication key');
		return { key: entry.key, run: entry.run as R };
	});
}

/** The runs written but not yet settled by n8n, in emit order. Keys are unique. */
export class Outbox<R> {
	private readonly entries = new Map<string, R>();

	constructor(saved?: unknown) {
		for (const { key, run } of storedOutboxEntries<R>(saved)) this.entries.set(key, run);
	}

	get size(): number {
		return this.entries.size;
	}

	has(key: string): boolean {
		return this.entries.has(key);
	}

	/** Records runs about to be emitted; a key already waiting keeps its first run. */
	add(entries: ReadonlyArray<OutboxEntry<R>>): void {
		for (const { key, run } of entries) if (!this.entries.has(key)) this.entries.set(key, run);
	}

	/** n8n settled the run (started, refused as a duplicate, or could not create it): it leaves. */
	settle(key: string): R | undefined {
		const run = this.entries.get(key);
		this.entries.delete(key);
		return run;
	}

	/** Everything to emit again at activation, oldest first. */
	pending(): Array<OutboxEntry<R>> {
		return [...this.entries].map(([key, run]) => ({ key, run }));
	}

	/** JSON-safe form for static data. */
	saved(): Array<OutboxEntry<R>> {
		return this.pending();
	}
}
