import type { Clock, TimerHandle } from '../../core/clock';

interface PendingTimer {
	at: number;
	seq: number;
	fn: () => void;
	cancelled: boolean;
}

/** A clock that only moves when a test says so. Timers fire in time order, ties in creation order. */
export class FakeClock implements Clock {
	private timers: PendingTimer[] = [];
	private seq = 0;

	/**
	 * `turns`: how many macrotask turns `advance` lets pass after each timer. Code that waits only on
	 * promises and this clock needs one (the microtask queue drains before the next turn); the
	 * default leaves room for a test's own setImmediate hops.
	 */
	constructor(
		private current: number = Date.UTC(2026, 0, 1),
		private readonly turns = 10,
	) {}

	now(): number {
		return this.current;
	}

	setTimer(fn: () => void, delayMs: number): TimerHandle {
		const timer: PendingTimer = {
			at: this.current + Math.max(0, delayMs),
			seq: this.seq++,
			fn,
			cancelled: false,
		};
		this.timers.push(timer);
		return { cancel: () => (timer.cancelled = true) };
	}

	/** Number of timers still waiting to fire. */
	pendingTimers(): number {
		return this.timers.filter((t) => !t.cancelled).length;
	}

	/**
	 * Moves time forward by `ms`, firing every timer that falls due on the way (including timers
	 * armed by those timers), and lets promise callbacks settle after each one.
	 */
	async advance(ms: number): Promise<void> {
		const target = this.current + ms;
		for (;;) {
			const next = this.sortedPending()[0];
			if (!next || next.at > target) break;
			this.current = next.at;
			next.cancelled = true;
			next.fn();
			await flushPromises(this.turns);
		}
		this.current = target;
		await flushPromises(this.turns);
	}

	/** Sets the time without firing timers (a process that was down). */
	jumpTo(time: number): void {
		this.current = time;
	}

	private sortedPending(): PendingTimer[] {
		this.timers = this.timers.filter((t) => !t.cancelled);
		return [...this.timers].sort((a, b) => a.at - b.at || a.seq - b.seq);
	}
}

/** Lets queued promise callbacks run (several microtask and macrotask turns). */
export async function flushPromises(turns = 10): Promise<void> {
	for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
