import { type RetryPolicy, retryDelay } from '../retryPolicy';
import { canonicalKey, MAX_DEDUPLICATION_KEY_CHARS } from './dedupe';
import type { ItemKey } from './expressions';

/**
 * "When a Run Fails: Start the Item Again" (core/retryPolicy.ts): the book of a Poll Trigger's
 * items whose run failed (waiting for their next attempt, or in flight) and of its dead letters
 * (items whose runs failed Max Attempts times). The book lives in the trigger's state and is
 * written with the writes the trigger already makes: a failure with the settlement write of its
 * run, an attempt with the emit of its run. It holds the items of a waiting run, since the source
 * may not list them again; it is bounded (RETRY_MAX_WAITING, RETRY_WAITING_MAX_BYTES for the waiting
 * items; DEAD_LETTERS_MAX, DEAD_LETTERS_MAX_BYTES, DEAD_LETTER_MAX_KEYS for the dead letters), and an
 * item that does not fit is dead-lettered at once, saying why. Its size (`bytes`) counts in the
 * static data every run n8n creates loads (runStage.ts ARMED_COPIES_MAX_BYTES).
 */

/** Items waiting for an attempt or in flight, at most (the oldest failure is dead-lettered first). */
export const RETRY_MAX_WAITING = 1_000;
/** What the waiting entries (their items, keys and last errors) may add up to in static data (JSON). */
export const RETRY_WAITING_MAX_BYTES = 1024 * 1024;
/** Dead letters listed at most (newest kept); each was reported by a failed execution of its own. */
export const DEAD_LETTERS_MAX = 100;
/** What the dead letters may add up to in static data (JSON): the oldest go first, the newest stays. */
export const DEAD_LETTERS_MAX_BYTES = 256 * 1024;
/** Item keys a dead letter keeps (a batch run's first ones; `itemCount` says how many it had). */
export const DEAD_LETTER_MAX_KEYS = 100;
/**
 * What a waiting entry may grow by after it is measured: the key of its attempt in flight
 * (`emitted`) and the count of attempts n8n could not create.
 */
const ENTRY_GROWTH_BYTES = MAX_DEDUPLICATION_KEY_CHARS + 40;
/** An error message is kept this long at most. */
export const ERROR_MAX_CHARS = 500;

/** An item (or a batch run's items) whose run failed, waiting for its next attempt. */
export interface RetryEntry<I> {
	/** The deduplication key of the first run: names the item's attempts (attemptKey). */
	key: string;
	keys: ItemKey[];
	items: I[];
	/** Runs that failed so far. */
	failed: number;
	/** When the next attempt may start (ms since the epoch). */
	dueAt: number;
	lastError: string;
	/** The deduplication key the next attempt was emitted under; unset: waiting. */
	emitted?: string;
	/** Emits of attempts n8n could not create (each needs a key of its own). */
	notCreated?: number;
}

/** An item whose runs all failed: reported once, listed until Start Again takes it back. */
export interface DeadLetter {
	key: string;
	/** The item keys (the first DEAD_LETTER_MAX_KEYS). */
	keys: ItemKey[];
	/** How many items the run carried, when more than `keys` shows. */
	itemCount?: number;
	/** Runs made (each failed). */
	attempts: number;
	lastError: string;
	at: number;
	/** Why it was not retried up to Max Attempts (the book was full), if so. */
	note?: string;
}

export interface SavedRetries<I> {
	waiting?: Array<RetryEntry<I>>;
	dead?: DeadLetter[];
}

/** A run of an attempt, to emit under `key`: the item as it first ran, and the attempt's number. */
export interface AttemptRun<I> {
	key: string;
	keys: ItemKey[];
	items: I[];
	attempt: number;
}

/** What the book did with a failed run. */
export type FailureOutcome =
	| { kind: 'retry'; attempt: number; dueAt: number }
	| { kind: 'dead'; letter: DeadLetter };

/**
 * The deduplication key of an item's `attempt`-th run (2 and up); `notCreated` counts emits of it
 * n8n could not create, each under a key of its own. The first run's key, its readable end cut if
 * need be, so that the key fits n8n's column (its hash, at the start, keeps it unique).
 */
export function attemptKey(firstKey: string, attempt: number, notCreated = 0): string {
	const suffix = `/attempt${attempt}${notCreated > 0 ? `.${notCreated}` : ''}`;
	return firstKey.slice(0, MAX_DEDUPLICATION_KEY_CHARS - suffix.length) + suffix;
}

export class RetryBook<I> {
	/** By first key, oldest failure first. */
	private readonly waiting = new Map<string, RetryEntry<I>>();
	/** Attempt key → first key, for the attempts in flight. */
	private readonly inFlight = new Map<string, string>();
	private dead: DeadLetter[] = [];
	private readonly policy: RetryPolicy;
	/** The JSON size of each waiting entry, by first key, as counted in `waitingBytes`. */
	private readonly entryBytes = new Map<string, number>();
	/** The JSON size of the waiting entries, at most (RETRY_WAITING_MAX_BYTES). */
	private waitingBytes = 0;
	/** The JSON size of the dead letters (DEAD_LETTERS_MAX_BYTES). */
	private deadBytes = 0;

	/**
	 * `policy` unset (Leave It Failed): attempts still waiting (the policy was changed) go out when
	 * due, and a failure of one is a dead letter.
	 */
	constructor(
		saved: SavedRetries<I> | undefined,
		policy: RetryPolicy | undefined,
		private readonly sizeOf: (items: I[]) => number = (items) => JSON.stringify(items).length,
	) {
		for (const entry of saved?.waiting ?? []) {
			if (typeof entry?.key !== 'string' || !Array.isArray(entry.items))
				throw new Error(`a retry entry must have a key and items, not ${JSON.stringify(entry)}`);
			this.wait(entry);
			if (entry.emitted !== undefined) this.inFlight.set(entry.emitted, entry.key);
		}
		this.dead = Array.isArray(saved?.dead) ? saved.dead : [];
		this.deadBytes = this.dead.reduce((sum, letter) => sum + JSON.stringify(letter).length, 0);
		this.policy = policy ?? NO_RETRIES;
	}

	/** What the book adds to the trigger's static data (JSON), at most: the waiting entries and the dead letters. */
	get bytes(): number {
		return this.waitingBytes + this.deadBytes;
	}

	/** Whether `key` is an attempt's run this book emitted (its settlement is the book's). */
	owns(key: string): boolean {
		return this.inFlight.has(key);
	}

	/** The first key of the item an attempt's run is of. */
	firstKeyOf(key: string): string | undefined {
		return this.inFlight.get(key);
	}

	/**
	 * A run of these items failed (a first run under `key`, or an attempt's run this book emitted):
	 * its next attempt waits out its backoff, or, past Max Attempts, it is a dead letter.
	 */
	failed(
		key: string,
		run: { keys: readonly ItemKey[]; items: I[] },
		error: string,
		now: number,
	): FailureOutcome {
		const firstKey = this.inFlight.get(key) ?? key;
		const earlier = this.waiting.get(firstKey);
		this.forget(firstKey);
		const failed = (earlier?.failed ?? 0) + 1;
		const lastError = error.slice(0, ERROR_MAX_CHARS);
		const items = earlier?.items ?? run.items;
		const keys = earlier?.keys ?? [...run.keys];
		if (failed >= this.policy.maxAttempts)
			return { kind: 'dead', letter: this.deadLetter(firstKey, keys, failed, lastError, now) };
		if (items.length === 0)
			return {
				kind: 'dead',
				letter: this.deadLetter(firstKey, keys, failed, lastError, now, NO_ITEMS),
			};
		const dueAt = now + retryDelay(this.policy, failed);
		const entry: RetryEntry<I> = { key: firstKey, keys, items, failed, dueAt, lastError };
		const full = this.fullFor(entry);
		if (full)
			return {
				kind: 'dead',
				letter: this.deadLetter(firstKey, keys, failed, lastError, now, full),
			};
		this.wait(entry);
		return { kind: 'retry', attempt: failed + 1, dueAt };
	}

	/** An attempt's run ended without failing (or its end is unknown): the item leaves the book. */
	ended(key: string): void {
		const firstKey = this.inFlight.get(key);
		if (firstKey !== undefined) this.forget(firstKey);
	}

	/** n8n could not create an attempt's run: the same attempt goes out again after its backoff. */
	notCreated(key: string, now: number): void {
		const firstKey = this.inFlight.get(key);
		const entry = firstKey === undefined ? undefined : this.waiting.get(firstKey);
		this.inFlight.delete(key);
		if (!entry) return;
		delete entry.emitted;
		entry.notCreated = (entry.notCreated ?? 0) + 1;
		entry.dueAt = now + retryDelay(this.policy, entry.failed);
	}

	/** When the next waiting attempt is due; undefined: none waits. */
	nextDueAt(): number | undefined {
		let next: number | undefined;
		for (const entry of this.waiting.values())
			if (entry.emitted === undefined && (next === undefined || entry.dueAt < next))
				next = entry.dueAt;
		return next;
	}

	/**
	 * The attempts due at `now`, oldest failure first, at most `room` of them (the runs in flight
	 * the trigger allows), marked in flight: write the state, then emit them.
	 */
	takeDue(now: number, room: number): Array<AttemptRun<I>> {
		const runs: Array<AttemptRun<I>> = [];
		for (const entry of this.waiting.values()) {
			if (runs.length >= room) break;
			if (entry.emitted !== undefined || entry.dueAt > now) continue;
			const attempt = entry.failed + 1;
			entry.emitted = attemptKey(entry.key, attempt, entry.notCreated);
			this.inFlight.set(entry.emitted, entry.key);
			runs.push({ key: entry.emitted, keys: entry.keys, items: entry.items, attempt });
		}
		return runs;
	}

	/** Attempts emitted before the last stop and not settled: emitted again (n8n refuses those it created). */
	emittedBefore(): Array<AttemptRun<I>> {
		return [...this.waiting.values()]
			.filter((entry) => entry.emitted !== undefined)
			.map((entry) => ({
				key: entry.emitted as string,
				keys: entry.keys,
				items: entry.items,
				attempt: entry.failed + 1,
			}));
	}

	/** Attempts in flight now. */
	get inFlightCount(): number {
		return this.inFlight.size;
	}

	/**
	 * Start Again named these item keys: the dead letters and waiting items all of whose keys it
	 * names leave the book (the next poll that lists them starts them, with Max Attempts afresh).
	 * An attempt in flight stays. Returns how many left.
	 */
	takeBack(itemKeys: readonly ItemKey[]): number {
		const named = new Set(itemKeys.map(canonicalKey));
		const all = (keys: readonly ItemKey[]) =>
			keys.length > 0 && keys.every((key) => named.has(canonicalKey(key)));
		const before = this.dead.length + this.waiting.size;
		for (const letter of this.dead.filter((letter) => all(letter.keys)))
			this.deadBytes -= JSON.stringify(letter).length;
		this.dead = this.dead.filter((letter) => !all(letter.keys));
		for (const entry of [...this.waiting.values()])
			if (entry.emitted === undefined && all(entry.keys)) this.forget(entry.key);
		return before - this.dead.length - this.waiting.size;
	}

	/** The dead letters, newest first. */
	deadLetters(): DeadLetter[] {
		return [...this.dead].reverse();
	}

	/** Items waiting for an attempt or in flight, oldest failure first. */
	waitingItems(): ReadonlyArray<RetryEntry<I>> {
		return [...this.waiting.values()];
	}

	/** JSON-safe, for the trigger's state; undefined when the book is empty. */
	saved(): SavedRetries<I> | undefined {
		if (this.waiting.size === 0 && this.dead.length === 0) return undefined;
		return {
			...(this.waiting.size > 0 && { waiting: [...this.waiting.values()] }),
			...(this.dead.length > 0 && { dead: this.dead }),
		};
	}

	private forget(firstKey: string): void {
		const entry = this.waiting.get(firstKey);
		if (!entry) return;
		if (entry.emitted !== undefined) this.inFlight.delete(entry.emitted);
		this.waiting.delete(firstKey);
		this.waitingBytes -= this.entryBytes.get(firstKey) ?? 0;
		this.entryBytes.delete(firstKey);
	}

	private wait(entry: RetryEntry<I>): void {
		const bytes = this.sizeOfEntry(entry);
		this.waiting.set(entry.key, entry);
		this.entryBytes.set(entry.key, bytes);
		this.waitingBytes += bytes;
	}

	/** An entry's JSON size with what it may still grow by (ENTRY_GROWTH_BYTES). */
	private sizeOfEntry(entry: RetryEntry<I>): number {
		const { items, ...rest } = entry;
		return this.sizeOf(items) + JSON.stringify(rest).length + ENTRY_GROWTH_BYTES;
	}

	/** Why this entry does not fit the book (RETRY_MAX_WAITING, RETRY_WAITING_MAX_BYTES), if so. */
	private fullFor(entry: RetryEntry<I>): string | undefined {
		if (this.waiting.size >= RETRY_MAX_WAITING)
			return `not retried: ${RETRY_MAX_WAITING} items already wait for an attempt`;
		if (this.waitingBytes + this.sizeOfEntry(entry) > RETRY_WAITING_MAX_BYTES)
			return `not retried: the items waiting for an attempt would take more than ${RETRY_WAITING_MAX_BYTES} bytes of static data`;
		return undefined;
	}

	private deadLetter(
		key: string,
		keys: ItemKey[],
		attempts: number,
		lastError: string,
		at: number,
		note?: string,
	): DeadLetter {
		const letter: DeadLetter = {
			key,
			keys: keys.slice(0, DEAD_LETTER_MAX_KEYS),
			...(keys.length > DEAD_LETTER_MAX_KEYS && { itemCount: keys.length }),
			attempts,
			lastError,
			at,
			...(note && { note }),
		};
		this.dead.push(letter);
		this.deadBytes += JSON.stringify(letter).length;
		while (
			this.dead.length > 1 &&
			(this.dead.length > DEAD_LETTERS_MAX || this.deadBytes > DEAD_LETTERS_MAX_BYTES)
		)
			this.deadBytes -= JSON.stringify(this.dead.shift()).length;
		return letter;
	}
}

const NO_RETRIES: RetryPolicy = {
	maxAttempts: 1,
	firstDelayMs: 60_000,
	factor: 1,
	maxDelayMs: 60_000,
};

const NO_ITEMS =
	'not retried: its items were not at hand (its run was emitted by an earlier activation in this process)';

/**
 * How every dead letter's failed execution begins, and nothing else the package reports: an error
 * workflow tells a dead letter by it (docs/poll-trigger.md#paging-only-on-dead-letters). Stable.
 */
export const DEAD_LETTER_PREFIX = 'Dead letter: ';

/** How a dead letter is told in its failed execution. */
export function deadLetterMessage(letter: DeadLetter): string {
	const count = letter.itemCount ?? letter.keys.length;
	const items =
		count === 1
			? `item ${JSON.stringify(letter.keys[0])}`
			: `${count} items (${letter.keys
					.slice(0, 5)
					.map((key) => JSON.stringify(key))
					.join(', ')}${count > 5 ? ', …' : ''})`;
	const runs = letter.attempts === 1 ? 'its run' : `all ${letter.attempts} runs`;
	return `${DEAD_LETTER_PREFIX}${runs} of ${items} failed (key ${letter.key}); last error: ${letter.lastError}`;
}
