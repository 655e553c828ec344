/**
 * Memory of the signed callbacks already accepted, each with the wait that accepted it, so a copy
 * presented to **another** wait is refused while its timestamp would still pass. A copy presented to
 * the same wait is let through: that wait is still waiting (n8n found it so), so the first one did not
 * resume it (a transient failure the partner is retrying), or is resuming it right now, and n8n lets
 * exactly one of them resume the run. Bounded: entries leave when their timestamp could no longer pass
 * anyway, and beyond `maxEntries` the oldest leave first.
 *
 * It lives in one process's memory, and is what refuses a copy presented to a wait of **another
 * execution**. Within one execution, `ExecutionReplayLog` below holds the same claims in the
 * execution's own data, which n8n saves with the resume: every process sees it.
 */

export const DEFAULT_REPLAY_MEMORY_ENTRIES = 10_000;

export class ReplayMemory {
	/** key → the wait that accepted it and until when it is remembered (epoch ms); a Map keeps insertion order, oldest first. */
	private readonly entries = new Map<string, { wait: string; until: number }>();

	constructor(readonly maxEntries = DEFAULT_REPLAY_MEMORY_ENTRIES) {
		if (!Number.isSafeInteger(maxEntries) || maxEntries < 1)
			throw new RangeError(`maxEntries must be a whole number of at least 1, got ${maxEntries}`);
	}

	get size(): number {
		return this.entries.size;
	}

	/** Whether `key` was remembered and has not expired by `nowMs`. */
	has(key: string, nowMs: number): boolean {
		const entry = this.entries.get(key);
		return entry !== undefined && entry.until > nowMs;
	}

	/**
	 * Remembers `key` for `wait` until `untilMs`. Returns false, and changes nothing, when another wait
	 * accepted it: the caller holds a copy of something used elsewhere. Check and insert happen in one
	 * synchronous step.
	 */
	claim(key: string, wait: string, untilMs: number, nowMs: number): boolean {
		this.expire(nowMs);
		const held = this.entries.get(key);
		if (held !== undefined && held.wait !== wait) return false;
		this.entries.delete(key);
		this.entries.set(key, { wait, until: Math.max(untilMs, held?.until ?? 0) });
		while (this.entries.size > this.maxEntries) {
			const oldest = this.entries.keys().next().value as string;
			this.entries.delete(oldest);
		}
		return true;
	}

	private expire(nowMs: number): void {
		for (const [key, entry] of this.entries) {
			if (entry.until <= nowMs) this.entries.delete(key);
		}
	}
}

/**
 * The signed callbacks the waits of **one execution** accepted: key → the wait and until when a copy
 * could pass. A plain object, so it can live in the execution's own data; the node keeps it there
 * and n8n writes it in the same conditional update that moves the run out of "waiting" (only the
 * resume that happened is recorded). A later wait of the same execution, in any process and after
 * any restart, reads it back and refuses a copy accepted by an earlier wait.
 */
export type ExecutionReplayLog = Record<string, { wait: string; until: number }>;

/** Like ReplayMemory.claim, on an execution's log: false when another wait of the execution accepted `key`. */
export function claimInExecution(
	log: ExecutionReplayLog,
	key: string,
	wait: string,
	untilMs: number,
	nowMs: number,
): boolean {
	for (const [held, entry] of Object.entries(log)) {
		if (!(entry?.until > nowMs)) delete log[held];
	}
	const held = log[key];
	if (held !== undefined && held.wait !== wait) return false;
	log[key] = { wait, until: Math.max(untilMs, held?.until ?? 0) };
	return true;
}
