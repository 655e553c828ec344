/**
 * Memory of the signed callbacks already accepted, so an exact copy (a replay, or the same message
 * delivered twice at once) is refused while its timestamp would still pass. Bounded: entries leave
 * when their timestamp could no longer pass anyway, and beyond `maxEntries` the oldest leave first.
 *
 * It lives in one process's memory. Across processes and restarts the other checks carry the load:
 * n8n resumes a wait once, and a signature made before a wait began is refused by that wait.
 */

export const DEFAULT_REPLAY_MEMORY_ENTRIES = 10_000;

export class ReplayMemory {
	/** key → until when it is remembered (epoch ms); a Map keeps insertion order, oldest first. */
	private readonly entries = new Map<string, number>();

	constructor(readonly maxEntries = DEFAULT_REPLAY_MEMORY_ENTRIES) {
		if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a whole number of at least 1, got ${maxEntries}`);
	}

	get size(): number {
		return this.entries.size;
	}

	/** Whether `key` was remembered and has not expired by `nowMs`. */
	has(key: string, nowMs: number): boolean {
		const until = this.entries.get(key);
		return until !== undefined && until > nowMs;
	}

	/**
	 * Remembers `key` until `untilMs`. Returns false, and changes nothing, when it is already
	 * remembered: the caller holds a copy of something already used. Check and insert happen in one
	 * synchronous step, so two concurrent callers cannot both get true.
	 */
	claim(key: string, untilMs: number, nowMs: number): boolean {
		this.expire(nowMs);
		if (this.has(key, nowMs)) return false;
		this.entries.delete(key);
		this.entries.set(key, untilMs);
		while (this.entries.size > this.maxEntries) {
			const oldest = this.entries.keys().next().value as string;
			this.entries.delete(oldest);
		}
		return true;
	}

	/** Forgets `key`, e.g. when the callback it belonged to did not resume the run after all. */
	release(key: string): void {
		this.entries.delete(key);
	}

	private expire(nowMs: number): void {
		for (const [key, until] of this.entries) {
			if (until <= nowMs) this.entries.delete(key);
		}
	}
}
