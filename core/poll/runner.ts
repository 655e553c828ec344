import type { Clock, TimerHandle } from '../clock';
import { checkRange, showDuration } from '../configError';
import { hash32 } from './hash';

export const MIN_INTERVAL_MS = 5_000;
export const MAX_INTERVAL_MS = 7 * 86_400_000;
/**
 * The longest a server's Retry-After may push the next poll out. A server asking for a week
 * (or a misparsed date) must not silently park an active trigger; an hour is long enough for any
 * honest rate limit, and the next answer can ask again.
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;
export const DEFAULT_FAILURE_LIMIT = 5;
/** Default per-poll timeout when the interval is longer. */
export const DEFAULT_TIMEOUT_MS = 5 * 60_000;
/**
 * Default backoff cap, in intervals: failed polls wait one interval, then two, and stay at two. A
 * source back from an outage is polled within two intervals of its return (its new items start as
 * late as that at most), while a source that stays down is asked half as often. A longer cap (an
 * hour, say) spares a source that is down for long, and costs that long after it is back: the
 * user's choice, by Backoff Cap (docs/poll-trigger.md#when-polls-fail).
 */
export const DEFAULT_BACKOFF_INTERVALS = 2;

export type PollOutcome =
	| { kind: 'new_items'; started: number }
	| { kind: 'unchanged' }
	| { kind: 'not_modified' };

export type PollOutcomeKind = PollOutcome['kind'] | 'failed';

/** What the runner has seen, JSON-safe; persisted after every poll and restored on restart. */
export interface ObservedPollState {
	lastPollAt: number | null;
	lastOutcome: PollOutcomeKind | null;
	lastError: string | null;
	consecutiveFailures: number;
	/** No poll before this time (ms). */
	backoffUntil: number | null;
	/** Ticks that came while a poll was still running, since the state was first created. */
	skippedTicks: number;
}

export interface BackoffOptions {
	initialMs: number;
	maxMs: number;
	factor: number;
}

/**
 * Why a failure is reported: the trigger's very first poll failed (no poll has succeeded yet), the
 * first failure after a success, the failure limit reached, or the state not saved.
 */
export type FailureReason = 'first_poll' | 'first_failure' | 'limit_reached' | 'persist_failed';

export interface FailureReport {
	consecutiveFailures: number;
	reason: FailureReason;
}

export interface PollRunnerOptions {
	clock: Clock;
	/** One poll: performs the op, dedupes, starts runs. A throw is a failure; the error may carry `retryAfterMs`. */
	poll: (signal: AbortSignal) => Promise<PollOutcome>;
	intervalMs: number;
	/** Each tick is delayed by a fixed offset in [0, jitterMs), derived from `jitterSeed` and the tick number. */
	jitterMs?: number;
	/** Say workflow id + node id, so triggers started together spread out, each on a stable cadence. */
	jitterSeed?: string;
	/** Default the interval, at most DEFAULT_TIMEOUT_MS. */
	timeoutMs?: number;
	/** Default initial = interval, factor 2, max = DEFAULT_BACKOFF_INTERVALS intervals (at most MAX_INTERVAL_MS). */
	backoff?: Partial<BackoffOptions>;
	/** Consecutive failures after which the failure is reported again; default DEFAULT_FAILURE_LIMIT. */
	failureLimit?: number;
	/** Observed state from a previous process, so a restart honours its backoff. */
	restored?: ObservedPollState;
	persist?: (observed: ObservedPollState) => void;
	/** Called for the first failure (of the first poll, or after a success) and when the failure limit is reached, not for every retry. */
	onFailure?: (error: Error, report: FailureReport) => void;
	/** The failure as `lastError` keeps it: the node says the fields it names as its editor does; unset: the message. */
	describe?: (error: Error) => string;
}

export class PollTimeoutError extends Error {
	constructor(readonly timeoutMs: number) {
		super(`Poll timed out after ${showDuration(timeoutMs)}`);
		this.name = 'PollTimeoutError';
	}
}

/** The delay an error asks for (`retryAfterMs`, e.g. from HTTP 429/503 Retry-After), if any. */
export function retryAfterOf(error: unknown): number | undefined {
	const retryAfterMs = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
	return typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) && retryAfterMs >= 0
		? retryAfterMs
		: undefined;
}

export function initialObservedState(): ObservedPollState {
	return {
		lastPollAt: null,
		lastOutcome: null,
		lastError: null,
		consecutiveFailures: 0,
		backoffUntil: null,
		skippedTicks: 0,
	};
}

/**
 * Drives polls on a Clock (ADR-0050, ADR-0097): the first poll at start(), then one per tick at
 * start + n·interval + jitter(n). The overlap lock covers the poll only: a tick that comes while a
 * poll runs is skipped and counted. A failure pushes the next poll out by an exponential, capped
 * backoff (by default one interval, then two), or further if the error carries a Retry-After; a
 * poll never runs sooner than its tick.
 */
export class PollRunner {
	private readonly intervalMs: number;
	private readonly jitterMs: number;
	private readonly timeoutMs: number;
	private readonly backoff: BackoffOptions;
	private readonly failureLimit: number;
	private observedState: ObservedPollState;
	private startedAt: number | undefined;
	private stopped = false;
	private nextTimer: TimerHandle | undefined;
	private inFlight: AbortController | undefined;

	constructor(private readonly options: PollRunnerOptions) {
		const { intervalMs } = options;
		// Durations are milliseconds here, said in the unit the editor shows (Interval has its own).
		const duration = { duration: true } as const;
		const seconds = { duration: 'seconds' } as const;
		this.intervalMs = checkRange(
			'interval',
			intervalMs,
			{ min: MIN_INTERVAL_MS, max: MAX_INTERVAL_MS },
			duration,
		);
		this.jitterMs = checkRange(
			'jitterSec',
			options.jitterMs ?? 0,
			{ min: 0, max: intervalMs - 1 },
			seconds,
		);
		this.timeoutMs = checkRange(
			'timeoutSec',
			options.timeoutMs ?? Math.min(intervalMs, DEFAULT_TIMEOUT_MS),
			{ min: 1_000, max: MAX_INTERVAL_MS },
			seconds,
		);
		// The initial backoff and the factor are not parameters: the node leaves them at their defaults.
		const initialMs = checkRange(
			'backoff.initialMs',
			options.backoff?.initialMs ?? intervalMs,
			{ min: 1_000, max: MAX_INTERVAL_MS },
			duration,
		);
		this.backoff = {
			initialMs,
			maxMs: checkRange(
				'backoffMaxSec',
				options.backoff?.maxMs ??
					Math.max(initialMs, Math.min(DEFAULT_BACKOFF_INTERVALS * intervalMs, MAX_INTERVAL_MS)),
				{
					min: initialMs,
					max: MAX_INTERVAL_MS,
					// Backoff starts at the interval (unless a caller sets it): the cap is at least that.
					...(options.backoff?.initialMs === undefined && { minIs: 'interval' }),
				},
				seconds,
			),
			factor: checkRange('backoff.factor', options.backoff?.factor ?? 2, {
				min: 1,
				max: 10,
			}),
		};
		this.failureLimit = checkRange('failureLimit', options.failureLimit ?? DEFAULT_FAILURE_LIMIT, {
			min: 1,
			max: 1_000_000,
			whole: true,
		});
		this.observedState = { ...initialObservedState(), ...options.restored };
	}

	/** A copy of what the runner has seen. */
	get observed(): ObservedPollState {
		return { ...this.observedState };
	}

	/** Whether a poll is running now (the overlap lock). */
	get polling(): boolean {
		return this.inFlight !== undefined;
	}

	/** Polls now, unless a restored backoff is still running; then when it ends. */
	/** Resolves when that first poll has finished (it never rejects: a failure is recorded), or at once when backing off. */
	start(): Promise<void> {
		if (this.startedAt !== undefined)
			throw new Error('PollRunner.start() was already called; a runner runs once');
		const now = this.options.clock.now();
		this.startedAt = now;
		const backoffUntil = this.observedState.backoffUntil;
		if (backoffUntil !== null && backoffUntil > now) {
			this.arm(backoffUntil);
			return Promise.resolve();
		}
		return this.runPoll();
	}

	/** Cancels the timers and aborts a running poll; its outcome is not recorded (shutdown is not a failure). */
	stop(): void {
		this.stopped = true;
		this.nextTimer?.cancel();
		this.inFlight?.abort(new Error('The poll trigger was stopped'));
	}

	/** Time of tick `n` (n ≥ 1): fixed offset from start, so skipped or slow polls never shift the cadence. */
	tickTime(tick: number): number {
		return (this.startedAt ?? 0) + tick * this.intervalMs + this.jitterOf(tick);
	}

	/** The jitter of tick `n`: the same for the same seed and tick, in [0, jitterMs). */
	jitterOf(tick: number): number {
		return this.jitterMs === 0
			? 0
			: hash32(`${this.options.jitterSeed ?? ''}:${tick}`) % this.jitterMs;
	}

	private nextTickAfter(time: number): number {
		let tick = Math.max(1, Math.floor((time - (this.startedAt ?? 0)) / this.intervalMs));
		while (this.tickTime(tick) <= time) tick++;
		return this.tickTime(tick);
	}

	/** Arms the one timer for the next due time: the next tick, or the end of a backoff if later. */
	private armNext(): void {
		const now = this.options.clock.now();
		this.arm(Math.max(this.nextTickAfter(now), this.observedState.backoffUntil ?? 0));
	}

	private arm(dueAt: number): void {
		if (this.stopped) return;
		this.nextTimer?.cancel();
		this.nextTimer = this.options.clock.setTimer(
			() => this.onDue(),
			dueAt - this.options.clock.now(),
		);
	}

	private onDue(): void {
		if (this.inFlight) {
			this.observedState.skippedTicks++;
			this.armNext();
			return;
		}
		void this.runPoll();
	}

	private async runPoll(): Promise<void> {
		const { clock } = this.options;
		const controller = new AbortController();
		this.inFlight = controller;
		// Armed now, not after the poll, so a slow poll does not delay the cadence: its ticks are skipped.
		this.armNext();
		let outcome: PollOutcome | undefined;
		let failure: Error | undefined;
		let timeout: TimerHandle | undefined;
		try {
			// Called synchronously (an async wrapper only turns a synchronous throw into a rejection).
			const polled = (async () => await this.options.poll(controller.signal))();
			// A poll that lost the race to its timeout may still settle; its result is deliberately dropped.
			polled.catch(() => undefined);
			const timedOut = new Promise<never>((_, reject) => {
				timeout = clock.setTimer(() => {
					const error = new PollTimeoutError(this.timeoutMs);
					controller.abort(error);
					reject(error);
				}, this.timeoutMs);
			});
			outcome = await Promise.race([polled, timedOut]);
		} catch (error) {
			failure = error instanceof Error ? error : new Error(String(error));
		} finally {
			timeout?.cancel();
			// Released at the timeout too: a poll that ignores its signal must not hold the trigger forever;
			// dedupe claims keep an overlapping straggler from starting an item twice.
			this.inFlight = undefined;
		}
		if (this.stopped) return;
		this.record(clock.now(), outcome, failure);
	}

	private record(now: number, outcome: PollOutcome | undefined, failure: Error | undefined): void {
		const state = this.observedState;
		state.lastPollAt = now;
		if (!failure && outcome) {
			Object.assign(state, {
				lastOutcome: outcome.kind,
				lastError: null,
				consecutiveFailures: 0,
				backoffUntil: null,
			});
		} else {
			const error = failure ?? new Error('The poll returned no outcome');
			// Failures in a row are counted from the last success, so the first of them follows one, or no poll at all.
			const firstPoll = state.lastOutcome === null;
			state.consecutiveFailures++;
			Object.assign(state, {
				lastOutcome: 'failed',
				lastError: this.options.describe?.(error) ?? error.message,
				backoffUntil: now + this.failureDelay(error),
			});
			this.armNext();
			const reason = this.reportableReason(firstPoll);
			if (reason) this.report(error, reason);
		}
		try {
			this.options.persist?.(this.observed);
		} catch (error) {
			this.report(error instanceof Error ? error : new Error(String(error)), 'persist_failed');
		}
	}

	/**
	 * Exponential from the initial delay, capped; the failure limit changes nothing here (it says
	 * when the failure is reported again). A Retry-After longer than that wins, up to MAX_RETRY_AFTER_MS.
	 */
	private failureDelay(error: Error): number {
		const { initialMs, maxMs, factor } = this.backoff;
		const failures = this.observedState.consecutiveFailures;
		const backoff = Math.min(maxMs, initialMs * factor ** (failures - 1));
		return Math.max(backoff, Math.min(retryAfterOf(error) ?? 0, MAX_RETRY_AFTER_MS));
	}

	/** With a limit of 1 the first failure is also the limit; it is reported once, as the limit. */
	private reportableReason(firstPoll: boolean): FailureReason | undefined {
		const failures = this.observedState.consecutiveFailures;
		if (failures === this.failureLimit) return 'limit_reached';
		if (failures !== 1) return undefined;
		return firstPoll ? 'first_poll' : 'first_failure';
	}

	private report(error: Error, reason: FailureReason): void {
		try {
			this.options.onFailure?.(error, {
				consecutiveFailures: this.observedState.consecutiveFailures,
				reason,
			});
		} catch {
			// A failing failure handler has nowhere left to report to; the runner must keep polling.
		}
	}
}
