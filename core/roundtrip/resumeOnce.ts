/**
 * For an n8n that may resume one waiting execution twice: n8n 1.x's waiting-webhook path has no
 * "only where still waiting" guard (2.x updates the execution only while its status is `waiting`),
 * so two valid callbacks arriving together can both resume the run. This memory lets the first
 * callback of a wait through and answers the others "already resumed". It lives in the memory of
 * the process that received the callbacks, like the replay memory: across a restart, or between
 * several webhook processes in queue mode, it cannot see the other callbacks.
 */
export class ResumedWaits {
	private readonly until = new Map<string, number>();

	constructor(private readonly capacity = 10_000) {}

	/**
	 * Claims the wait (any id unique to it) for one resume; false if it was claimed already.
	 * Entries are kept until the wait's deadline (a later callback is refused by its timeout anyway).
	 */
	claim(waitKey: string, deadlineMs: number, nowMs: number): boolean {
		for (const [key, until] of this.until) if (until < nowMs) this.until.delete(key);
		if (this.until.has(waitKey)) return false;
		while (this.until.size >= this.capacity)
			this.until.delete(this.until.keys().next().value as string);
		this.until.set(waitKey, deadlineMs);
		return true;
	}

	/** Gives the claim back (n8n did not take the resume). */
	release(waitKey: string): void {
		this.until.delete(waitKey);
	}
}
