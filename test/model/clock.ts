import type { Clock, TimerHandle } from '../../core/clock';

interface PendingTimer {
	at: number;
	seq: number;
	fn: () => void;
	cancelled: boolean;
}

/**
 * The simulation's clock: moves only when the schedule says, timers in time order (ties in creation
 * order), as test/support/fakeClock.ts; but it lets promise callbacks settle with one macrotask
 * turn (the model's transports answer in promises alone, so one turn drains them all), which makes
 * tens of thousands of schedules affordable.
 */
export class ModelClock implements Clock {
	private timers: PendingTimer[] = [];
	private seq = 0;
	private current = Date.UTC(2026, 0, 1);

	now(): number {
		return this.current;
	}

	setTimer(fn: () => void, delayMs: number): TimerHandle {
		const timer = {
			at: this.current + Math.max(0, delayMs),
			seq: this.seq++,
			fn,
			cancelled: false,
		};
		this.timers.push(timer);
		return { cancel: () => (timer.cancelled = true) };
	}

	/** Moves time forward by `ms`, firing every timer due on the way, settling promises after each. */
	async advance(ms: number): Promise<void> {
		const target = this.current + ms;
		for (;;) {
			this.timers = this.timers.filter((timer) => !timer.cancelled);
			let next: PendingTimer | undefined;
			for (const timer of this.timers)
				if (!next || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq))
					next = timer;
			if (!next || next.at > target) break;
			this.current = next.at;
			next.cancelled = true;
			next.fn();
			await settle();
		}
		this.current = target;
		await settle();
	}
}

/** Lets queued promise callbacks run: every microtask runs before the next macrotask turn. */
export async function settle(): Promise<void> {
	await new Promise<void>((resolve) => setImmediate(resolve));
}
