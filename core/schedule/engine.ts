import type { Clock, TimerHandle } from '../clock';
import type { CatchUpPolicy } from './catchUp';
import { checkCatchUpOptions, DEFAULT_RUN_ALL_LIMIT, planCatchUp } from './catchUp';
import { checkRange, ConfigError, showDuration } from '../configError';
import { Outbox } from '../outbox';
import type { Fire, StartedFire } from './fire';
import { jitterFor, runKey, startFire, unstarted } from './fire';
import type { FireRecord, LoadedState, RollbackRecord, ScheduleState } from './history';
import {
	appendHistory,
	HISTORY_LIMIT,
	loadScheduleState,
	notStartedRecord,
	ROLLBACK_LIMIT,
	recordItem,
	startedRecord,
	summarizeHistory,
} from './history';
import type { OverlapPolicy } from './overlap';
import { checkOverlapPolicy, DEFAULT_OVERLAP_POLICY, OverlapController } from './overlap';
import type { Schedule } from './schedule';
import { DAY_MS, isoTime, MINUTE_MS } from '../units';
import {
	checkedRetryPolicy,
	failureOf,
	type RetryPolicy,
	retryDelay,
	type RunResult,
} from '../retryPolicy';

/** Jitter spreads load within a window; more than a day would blur which day a run is for. */
export const MAX_JITTER_MS = DAY_MS;
/**
 * How late (beyond jitter) a window may still fire as a normal scheduled fire rather than count
 * as missed: absorbs slow timers and quick restarts.
 */
export const DEFAULT_LATE_GRACE_MS = MINUTE_MS;
/**
 * How long a run may hold its overlap slot without n8n reporting its end (a lost report, a run
 * stuck in a worker that died): a day, so a legitimately long run is never overlapped by default.
 */
export const DEFAULT_MAX_RUN_MS = DAY_MS;
export const MAX_MAX_RUN_MS = 30 * DAY_MS;
/**
 * How long an activation that re-emitted outbox runs waits for n8n to settle them before deciding
 * the windows due. n8n refuses a run that exists within milliseconds; a run it creates now holds
 * its slot, and the windows are decided under the overlap policy once this has passed.
 */
export const SETTLE_WAIT_MS = 10_000;
/**
 * Attempts at creating a window's run before the window counts as missed: n8n could not create it
 * (a locked database, Redis unreachable in queue mode) is usually temporary. Each retry goes under
 * a fresh deduplication key (attemptKey) after the delay for its attempt.
 */
export const CREATE_ATTEMPTS = 3;
export const CREATE_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000];

export interface ScheduleEngineOptions {
	clock: Clock;
	/** Stable id of this trigger (e.g. workflow id + node id); prefixes every run key. */
	scheduleId: string;
	schedule: Schedule;
	catchUp?: CatchUpPolicy;
	runAllLimit?: number;
	overlap?: OverlapPolicy;
	/** Each window fires at declared time + jitterFor(runKey, jitterMs). */
	jitterMs?: number;
	lateGraceMs?: number;
	historyLimit?: number;
	/** What `write` last received (undefined the first time); validated on activation. */
	storedState: unknown;
	/**
	 * The state this process last wrote for this schedule (in an earlier activation), if any. When
	 * the stored state is older (a lower write count `seq`), another copy of the static data
	 * overwrote it: the activation continues from this one instead and records the rollback.
	 */
	remembered?: unknown;
	/**
	 * Stores the state (n8n: the node's static data, written by n8n with the next emit). Called once
	 * per batch of starts, before `emit`, with those runs in `state.outbox`; also after changes that
	 * start nothing (skipped windows), which then reach the store with the next write.
	 */
	write(state: ScheduleState): void;
	/**
	 * Emits runs already written to the outbox, in order (see core/outbox.ts); not awaited, and a
	 * failure goes to `onError` (the runs stay in the outbox for the next activation). The node reports each
	 * run's settlement with `fireEnded(runKey)` (ended, or refused by n8n as a duplicate) or
	 * `fireNotCreated(runKey, error)`, never from inside `emit`.
	 */
	emit(fires: StartedFire[]): Promise<void> | void;
	/** How long a run may hold its overlap slot without reporting its end; default DEFAULT_MAX_RUN_MS. */
	maxRunMs?: number;
	/** Errors from timer-driven work (a failing `write` or `emit`), which has no caller to throw to. */
	onError(error: Error): void;
	/**
	 * Set (Report Missed Windows): called once when windows passed without a fire while the trigger
	 * was inactive (n8n down, the workflow unpublished), as catch-up records them; a crash before that
	 * record is stored tells them again at the next activation.
	 */
	onMissed?(missed: MissedWindows): void;
	/**
	 * When a Run Fails: Start the Window Again (core/retryPolicy.ts); unset: Leave It Failed. A
	 * window whose run failed keeps its overlap slot and runs again after the backoff, under the same
	 * run key (n8n's key gets `/attempt<n>`, fire.ts attemptKey), up to Max Attempts runs.
	 */
	retry?: RetryPolicy;
}

/** Windows missed while inactive, and what the catch-up policy did with them. */
export interface MissedWindows {
	count: number;
	first: number;
	last: number;
	catchUp: CatchUpPolicy;
	/**
	 * Runs catch-up starts for them (coalesce: 1; run-all: up to its limit; skip: 0), some perhaps
	 * waiting for a free overlap slot.
	 */
	runsStarted: number;
}

/** How missed windows are told in their failed execution. */
export function missedWindowsMessage(missed: MissedWindows): string {
	const windows =
		missed.count === 1
			? `1 window (${isoTime(missed.first)})`
			: `${missed.count} windows (${isoTime(missed.first)} to ${isoTime(missed.last)})`;
	const done =
		missed.runsStarted === 0
			? 'none of them run (catch-up: skip)'
			: missed.catchUp === 'coalesce'
				? 'one run for all of them (catch-up: coalesce)'
				: missed.runsStarted >= missed.count
					? 'all of them run (catch-up: run-all)'
					: `the newest ${missed.runsStarted} of them run (catch-up: run-all)`;
	return `Missed ${windows} while the trigger was inactive (n8n down or the workflow unpublished): ${done}`;
}

export interface ActivationReport {
	/** Why stored progress was discarded, for the node's log. */
	notice?: string;
	reset?: LoadedState['reset'];
	/**
	 * Outbox runs this activation emitted again. While n8n settles them (at most SETTLE_WAIT_MS) the
	 * windows due are not decided yet, and the counts below are 0.
	 */
	settling: number;
	/** Windows that passed without a fire while inactive. */
	missedCount: number;
	/** Runs started by this activation (catch-up, carried-over queue, late windows). */
	startedCount: number;
	/** When the next window fires (while settling: when the windows due will be decided at the latest). */
	nextFireAt: number;
}

export interface SchedulePreview {
	/** The next windows after now, with their jittered fire times. */
	nextFires: Array<{ runKey: string; declaredAt: number; fireAt: number }>;
	/** Newest last. */
	history: FireRecord[];
	lastDeclaredFire?: number;
	/** What activating now would do about missed windows. */
	catchUp: { missedCount: number; runsToStart: number };
	notice?: string;
}

/** The JSON form of a preview (times as ISO strings), as the node shows it in the editor. */
export function previewItem(preview: SchedulePreview): Record<string, unknown> {
	const { windows, lastStartedAt, maxLatenessMs } = summarizeHistory(preview.history);
	return {
		nextFires: preview.nextFires.map((fire) => ({
			runKey: fire.runKey,
			declaredAt: isoTime(fire.declaredAt),
			fireAt: isoTime(fire.fireAt),
		})),
		lastDeclaredFire:
			preview.lastDeclaredFire === undefined ? null : isoTime(preview.lastDeclaredFire),
		catchUp: preview.catchUp,
		summary: {
			windows,
			lastStartedAt: lastStartedAt === undefined ? null : isoTime(lastStartedAt),
			maxLatenessMs: maxLatenessMs ?? null,
		},
		history: preview.history.map(recordItem),
		...(preview.notice !== undefined && { notice: preview.notice }),
	};
}

/**
 * Runs one durable schedule: arms a timer per window (+ jitter), applies the overlap policy,
 * catches up on activation, records history and persists progress. All logic the node would
 * otherwise hold lives here; the node translates parameters in and fires out.
 *
 * Work is serialized (timers, activation and `fireEnded` never interleave), so state changes are
 * plain and every persisted snapshot is consistent.
 */
export class ScheduleEngine {
	private readonly catchUp: CatchUpPolicy;
	private readonly runAllLimit: number;
	private readonly overlapPolicy: OverlapPolicy;
	private readonly jitterMs: number;
	private readonly lateGraceMs: number;
	private readonly historyLimit: number;
	private readonly maxRunMs: number;
	private readonly retry: RetryPolicy | undefined;
	private state: ScheduleState | undefined;
	private outbox = new Outbox<StartedFire>();
	/** Outbox entries this activation emitted and n8n has not settled yet (the others are emitted). */
	private readonly emitted = new Set<string>();
	/**
	 * Runs n8n created that left the outbox at once (n8n 1.x, `fireCreated`), until n8n reports their
	 * end: what When a Run Fails starts again. In memory: at most a slot's worth of runs.
	 */
	private readonly created = new Map<string, StartedFire>();
	private overlap: OverlapController;
	/**
	 * Set while an activation waits for n8n to settle the outbox runs it re-emitted: the windows
	 * due (and the queue carried over) are decided once none is left, or when `timer` fires.
	 */
	private settling: { keys: Set<string>; reEmitted: Set<string>; backlog: Fire[] } | undefined;
	private timer: TimerHandle | undefined;
	/**
	 * Windows waiting (in the outbox) for their next attempt: their run n8n could not create, or
	 * their run failed (When a Run Fails).
	 */
	private readonly retrying = new Map<string, TimerHandle>();
	private active = false;
	private serial: Promise<unknown> = Promise.resolve();

	/** Validates every option up front, throwing a ConfigError naming the field. */
	constructor(private readonly options: ScheduleEngineOptions) {
		// Not a parameter: the node makes it from the workflow and the node.
		if (typeof options.scheduleId !== 'string' || options.scheduleId === '') {
			throw new ConfigError('scheduleId', options.scheduleId, 'must be a non-empty string');
		}
		this.catchUp = options.catchUp ?? 'skip';
		this.runAllLimit = options.runAllLimit ?? DEFAULT_RUN_ALL_LIMIT;
		checkCatchUpOptions(this.catchUp, this.runAllLimit);
		this.overlapPolicy = options.overlap ?? DEFAULT_OVERLAP_POLICY;
		checkOverlapPolicy(this.overlapPolicy);
		// Durations are milliseconds here, said in the unit the editor shows.
		const seconds = { duration: 'seconds' } as const;
		this.jitterMs = checkRange(
			'jitter',
			options.jitterMs ?? 0,
			{ min: 0, max: MAX_JITTER_MS, whole: true },
			seconds,
		);
		this.lateGraceMs = checkRange(
			'lateGrace',
			options.lateGraceMs ?? DEFAULT_LATE_GRACE_MS,
			{ min: 0, max: DAY_MS, whole: true },
			seconds,
		);
		this.historyLimit = checkRange('historyLimit', options.historyLimit ?? HISTORY_LIMIT, {
			min: 1,
			max: 10 * HISTORY_LIMIT,
			whole: true,
		});
		this.maxRunMs = checkRange(
			'maxRunMinutes',
			options.maxRunMs ?? DEFAULT_MAX_RUN_MS,
			{ min: MINUTE_MS, max: MAX_MAX_RUN_MS },
			{ duration: 'minutes' },
		);
		this.retry = options.retry && checkedRetryPolicy(options.retry);
		this.overlap = new OverlapController(this.overlapPolicy);
	}

	/**
	 * Loads stored state, forgets runs from before (see OverlapController), restarts fires that
	 * were queued, catches up missed windows, and arms the timer for the next window.
	 */
	activate(): Promise<ActivationReport> {
		return this.exclusive(async () => {
			this.timer?.cancel();
			const loaded = this.loadState();
			this.state = loaded.state;
			this.overlap = new OverlapController(this.overlapPolicy);
			this.outbox = new Outbox(this.state.outbox);
			this.emitted.clear();
			this.created.clear();
			this.cancelRetries();
			// Runs written before the stop or crash may still be going (or may never have been
			// created): they hold their slots until n8n settles them. A window waiting out its backoff
			// holds its slot too, and waits for what is left of it.
			const now = this.options.clock.now();
			const written = this.outbox.pending();
			for (const { run } of written) this.overlap.adopt(run.runKey, now);
			for (const { key, run } of written)
				if (run.dueAt !== undefined && run.dueAt > now) this.startWhenDue(key, run.dueAt - now);
			const pending = written.filter(({ key }) => !this.retrying.has(key));
			this.active = true;
			const carriedOver = this.state.queued;
			const report = { notice: loaded.notice, reset: loaded.reset };
			if (pending.length === 0)
				return { ...report, settling: 0, ...(await this.processDue(carriedOver)) };
			// Most of them ended long ago, their end written with no later save (the last run before
			// a stop always is): deciding a window due now while they hold their slots would skip it.
			// So they are emitted again first, and the windows decided once n8n has settled them.
			const keys = pending.map(({ key }) => key);
			this.settling = { keys: new Set(keys), reEmitted: new Set(keys), backlog: carriedOver };
			this.timer = this.options.clock.setTimer(() => {
				this.exclusive(() => this.endSettling()).catch((error: Error) =>
					this.options.onError(error),
				);
			}, SETTLE_WAIT_MS);
			await this.startAll([]);
			return {
				...report,
				settling: pending.length,
				missedCount: 0,
				startedCount: 0,
				nextFireAt: now + SETTLE_WAIT_MS,
			};
		});
	}

	/**
	 * The stored state, unless the state this process last wrote is newer (same schedule, higher
	 * write count): then the store went back (a run saving the static data it loaded at its start,
	 * another trigger's copy, an API call carrying static data) and the remembered state is used.
	 */
	private loadState(): LoadedState {
		const fingerprint = this.options.schedule.fingerprint;
		const loaded = loadScheduleState(this.options.storedState, fingerprint);
		// No stored state at all: removed on purpose (a reset), never a rollback.
		const stored = this.options.storedState;
		if (this.options.remembered === undefined || stored === undefined || stored === null)
			return loaded;
		const memory = loadScheduleState(this.options.remembered, fingerprint);
		const storedSeq = loaded.reset === undefined ? (loaded.state.seq ?? 0) : 0;
		const seq = memory.state.seq ?? 0;
		if (memory.reset !== undefined || seq <= storedSeq) return loaded;
		const record: RollbackRecord = {
			detectedAt: this.options.clock.now(),
			storedSeq,
			seq,
			...(loaded.reset === undefined &&
				loaded.state.lastDeclaredFire !== undefined && {
					storedLastDeclaredFire: loaded.state.lastDeclaredFire,
				}),
		};
		const state = memory.state;
		state.rollbacks = [...(state.rollbacks ?? []), record].slice(-ROLLBACK_LIMIT);
		return {
			state,
			notice: `Stored schedule state went back (write ${storedSeq}, this process last wrote ${seq}): another copy of the workflow's static data overwrote it; continuing from the state this process wrote`,
		};
	}

	/** The activation's re-emitted runs are settled (or the wait is over): decides the windows due. */
	private async endSettling(): Promise<void> {
		const settling = this.settling;
		if (!settling || !this.active) return;
		this.settling = undefined;
		this.timer?.cancel();
		await this.processDue(settling.backlog, settling.reEmitted);
	}

	/** Stops the timer. Runs already started keep running; progress is already persisted. */
	deactivate(): void {
		this.active = false;
		this.settling = undefined;
		this.timer?.cancel();
		this.cancelRetries();
	}

	private cancelRetries(): void {
		for (const timer of this.retrying.values()) timer.cancel();
		this.retrying.clear();
	}

	/**
	 * n8n settled the run with this key: it ended (any way) or was refused as a duplicate of one
	 * that exists. It leaves the outbox and frees its slot; the next queued fire, if any, starts.
	 * Unknown keys are ignored, and so is everything after `deactivate()`: queued fires then wait
	 * in the stored state for the next activation instead of starting on a trigger that was closed.
	 * `result` (unset: refused as a duplicate) says whether the run failed: with When a Run Fails,
	 * the window then keeps its slot and runs again after the backoff (up to Max Attempts runs).
	 */
	fireEnded(key: string, result?: RunResult): Promise<void> {
		return this.exclusive(async () => {
			if (!this.active) return;
			const fire = this.settle(key);
			if (fire && result && this.retry && this.runEndedAfterRetry(fire, result, this.retry)) {
				if (this.settling?.keys.size === 0) await this.endSettling();
				return;
			}
			const next = this.overlap.onRunEnded(key, this.options.clock.now());
			// The schedule's state is small (history is capped), so it is written at once.
			if (next) await this.startAll([next]);
			else this.write();
			if (this.settling?.keys.size === 0) await this.endSettling();
		});
	}

	/**
	 * For an n8n without deduplication keys (1.x), which would start a re-emitted window again: n8n
	 * has created the run with this key, so it leaves the outbox now (it keeps its overlap slot until
	 * `fireEnded`, and its fire is kept in memory till then for When a Run Fails). Synchronous and in
	 * memory only, so it may be called while a start is emitting;
	 * `rewrite()` hands the state to n8n.
	 */
	fireCreated(key: string): void {
		const fire = this.active ? this.outbox.settle(key) : undefined;
		if (fire) this.created.set(key, fire);
	}

	/** Hands the current state to n8n again (see `fireCreated`). */
	rewrite(): void {
		if (this.active && this.state) this.write();
	}

	/**
	 * n8n could not create the run. Before the last attempt the window keeps its slot and its outbox
	 * entry (now its next attempt, written at once, so a restart emits that one) and is emitted again
	 * after the attempt's delay, recorded `retried`; after the last it is recorded missed and its slot
	 * freed.
	 */
	fireNotCreated(key: string, error: Error): Promise<void> {
		return this.exclusive(async () => {
			if (!this.active) return;
			const fire = this.settle(key);
			const attempt = fire?.attempt ?? 1;
			if (fire && attempt < CREATE_ATTEMPTS) {
				this.retryLater(fire, error);
				if (this.settling?.keys.size === 0) await this.endSettling();
				return;
			}
			if (fire)
				this.record([
					notStartedRecord(
						fire,
						'missed',
						`n8n could not create the run (attempt ${attempt} of ${CREATE_ATTEMPTS}, giving up): ${error.message}`,
					),
				]);
			const next = this.overlap.onRunEnded(key, this.options.clock.now());
			if (next) await this.startAll([next]);
			else this.write();
			if (this.settling?.keys.size === 0) await this.endSettling();
		});
	}

	private retryLater(fire: StartedFire, error: Error): void {
		const attempt = fire.attempt ?? 1;
		const delay = CREATE_RETRY_DELAYS_MS[Math.min(attempt, CREATE_RETRY_DELAYS_MS.length) - 1];
		this.startLater(
			{ ...unstarted(fire), attempt: attempt + 1 },
			delay,
			notStartedRecord(
				fire,
				'retried',
				`n8n could not create the run (attempt ${attempt} of ${CREATE_ATTEMPTS}): ${error.message}; attempt ${attempt + 1} in ${delay / 1000} s`,
			),
		);
	}

	/**
	 * With When a Run Fails, a window's run ended as `result` says: a failed run before Max Attempts
	 * starts again after the backoff, keeping the window's slot (true: nothing else to do); the last
	 * failure, and a run after failed ones that did not fail, are recorded (false: the slot is freed
	 * as for any ended run).
	 */
	private runEndedAfterRetry(fire: StartedFire, result: RunResult, policy: RetryPolicy): boolean {
		const failure = failureOf(result);
		const runAttempt = fire.runAttempt ?? 1;
		const of = `run ${runAttempt} of ${policy.maxAttempts}`;
		if (failure === undefined) {
			if (runAttempt > 1) this.record([notStartedRecord(fire, 'recovered', `${of} did not fail`)]);
			return false;
		}
		if (runAttempt >= policy.maxAttempts) {
			this.record([notStartedRecord(fire, 'failed', `${of} failed, the last: ${failure}`)]);
			return false;
		}
		const delay = retryDelay(policy, runAttempt);
		const next: Fire = { ...unstarted(fire), runAttempt: runAttempt + 1 };
		delete next.attempt;
		this.startLater(
			next,
			delay,
			notStartedRecord(
				fire,
				'failed',
				`${of} failed: ${failure}; run ${runAttempt + 1} in ${showDuration(delay)}`,
			),
		);
		return true;
	}

	/**
	 * The window starts again (`next`) after `delay`, keeping its slot: written at once in the
	 * outbox with the time it is due, so that a restart meanwhile waits out the rest of the delay.
	 */
	private startLater(next: Fire, delay: number, record: FireRecord): void {
		const now = this.options.clock.now();
		const key = next.runKey;
		this.outbox.add([{ key, run: startFire({ ...next, dueAt: now + delay }, now) }]);
		this.record([record]);
		this.write();
		this.startWhenDue(key, delay);
	}

	/** The outbox entry under `key` is emitted after `delay`, unless it is settled before. */
	private startWhenDue(key: string, delay: number): void {
		const timer = this.options.clock.setTimer(() => {
			this.exclusive(async () => {
				if (this.retrying.get(key) !== timer) return;
				this.retrying.delete(key);
				const waiting = this.outbox.settle(key);
				if (!this.active || !waiting) return;
				// Its run holds the slot from its start, as for Max Run Duration.
				this.overlap.adopt(key, this.options.clock.now());
				await this.startAll([unstarted(waiting)]);
			}).catch((error: Error) => this.options.onError(error));
		}, delay);
		this.retrying.set(key, timer);
	}

	/** The next `count` windows after `now`, recent history and pending catch-up; changes nothing. */
	preview(now: number, count: number): SchedulePreview {
		const loaded: LoadedState = this.state
			? { state: this.state }
			: loadScheduleState(this.options.storedState, this.options.schedule.fingerprint);
		const { lastDeclaredFire, history } = loaded.state;
		const nextFires: SchedulePreview['nextFires'] = [];
		for (let cursor = Math.max(now, lastDeclaredFire ?? now); nextFires.length < count; ) {
			cursor = this.options.schedule.nextAfter(cursor);
			nextFires.push({
				runKey: runKey(this.options.scheduleId, cursor),
				declaredAt: cursor,
				fireAt: this.fireAt(cursor),
			});
		}
		const plan = this.planCatchUp(lastDeclaredFire, now);
		return {
			nextFires,
			history: [...history],
			lastDeclaredFire,
			catchUp: { missedCount: plan.missedCount, runsToStart: plan.starts.length },
			notice: loaded.notice,
		};
	}

	/**
	 * Handles everything due at `now`: backlog fires, missed windows (catch-up policy), windows
	 * due on time or a little late (overlap policy). Then arms the next timer, starts the runs and
	 * persists.
	 */
	private async processDue(
		backlog: Fire[] = [],
		reEmitted: ReadonlySet<string> = new Set(),
	): Promise<Omit<ActivationReport, 'notice' | 'reset' | 'settling'>> {
		const state = this.requireState();
		// Its run is written and not yet settled (stale state after a crash), or was just re-emitted:
		// that run is this window's.
		const hasRun = (key: string) => this.outbox.has(key) || reEmitted.has(key);
		const now = this.options.clock.now();
		const plan = this.planCatchUp(state.lastDeclaredFire, now);
		const records = [...plan.records];
		const toStart: Fire[] = [];
		// A run whose end n8n never reported frees its slot after the maximum run duration; a window
		// waiting out its backoff has no run.
		const held = this.overlap.heldSince(now - this.maxRunMs);
		for (const key of held.filter((key) => !this.retrying.has(key))) {
			const fire = this.settle(key) ?? { runKey: key, declaredAt: now, kind: 'scheduled' as const };
			records.push(
				notStartedRecord(
					fire,
					'released',
					`the run did not report its end within the maximum run duration (${this.maxRunMs / MINUTE_MS} min); its overlap slot was freed`,
				),
			);
			const next = this.overlap.onRunEnded(key, now);
			if (next) toStart.push(next);
		}
		let cursor = plan.lastDeclaredFire;
		// Windows are handled in declared order, so a window with a large jitter holds back later ones.
		for (
			let window = this.options.schedule.nextAfter(cursor);
			this.fireAt(window) <= now;
			window = this.options.schedule.nextAfter(cursor)
		) {
			cursor = window;
			const fire: Fire = {
				runKey: runKey(this.options.scheduleId, window),
				declaredAt: window,
				kind: 'scheduled',
			};
			if (hasRun(fire.runKey)) continue;
			const decision = this.overlap.onFire(fire, now);
			if (decision === 'start') toStart.push(fire);
			else if (decision === 'queue') records.push(notStartedRecord(fire, 'queued'));
			else records.push(notStartedRecord(fire, 'skipped', this.overlap.skipReason()));
		}
		// Backlog after the windows due now: a window due now (or a little late, just after a restart)
		// is not skipped because of catch-up runs started in the same pass; backlog fires are never
		// skipped, they wait for a free slot.
		for (const fire of [...backlog, ...plan.starts]) {
			if (!hasRun(fire.runKey) && this.overlap.onBacklog(fire, now) === 'start') toStart.push(fire);
		}
		state.lastDeclaredFire = cursor;
		this.record(records);
		if (plan.missedSpan)
			this.options.onMissed?.({
				count: plan.missedCount,
				...plan.missedSpan,
				catchUp: this.catchUp,
				runsStarted: plan.starts.length,
			});
		const nextFireAt = this.arm(cursor, now);
		await this.startAll(toStart);
		return { missedCount: plan.missedCount, startedCount: toStart.length, nextFireAt };
	}

	/** Arms the timer for the first window after `cursor`; returns its fire time. */
	private arm(cursor: number, now: number): number {
		const fireAt = this.fireAt(this.options.schedule.nextAfter(cursor));
		this.timer = this.options.clock.setTimer(() => {
			this.exclusive(async () => {
				if (this.active) await this.processDue();
			}).catch((error: Error) => this.options.onError(error));
		}, fireAt - now);
		return fireAt;
	}

	/**
	 * Starts fires already counted as running: records them, writes the state once with them in
	 * the outbox, then emits them and every outbox entry this activation has not emitted yet.
	 */
	private async startAll(fires: Fire[]): Promise<void> {
		const now = this.options.clock.now();
		const started = fires.map((fire) => startFire(fire, now));
		this.outbox.add(started.map((fire) => ({ key: fire.runKey, run: fire })));
		try {
			this.record(started.map(startedRecord));
			this.write();
		} catch (error) {
			// Not written, so not emitted: the fires give their slots back and count as missed.
			for (const fire of started) {
				this.outbox.settle(fire.runKey);
				this.overlap.onRunEnded(fire.runKey, now);
			}
			this.requireState().history = this.requireState().history.filter(
				(record) =>
					!started.some(
						(fire) => fire.runKey === record.runKey && record.actualAt === fire.actualAt,
					),
			);
			this.record(
				started.map((fire) =>
					notStartedRecord(fire, 'missed', `saving the state failed: ${(error as Error).message}`),
				),
			);
			throw error;
		}
		const toEmit = this.outbox
			.pending()
			.filter(({ key }) => !this.emitted.has(key) && !this.retrying.has(key));
		for (const { key } of toEmit) this.emitted.add(key);
		if (toEmit.length === 0) return;
		// Not awaited: the emitter sends the runs in order, but only as fast as n8n writes the state
		// between them, and an activation waiting for that can outlast n8n 2.41's publication deadline
		// (about 84 s). The runs are in the written outbox, so nothing is lost if an emit fails.
		try {
			void Promise.resolve(this.options.emit(toEmit.map(({ run }) => run))).catch((error: Error) =>
				this.options.onError(error),
			);
		} catch (error) {
			this.options.onError(error as Error);
		}
	}

	private planCatchUp(lastDeclaredFire: number | undefined, now: number) {
		return planCatchUp({
			scheduleId: this.options.scheduleId,
			schedule: this.options.schedule,
			lastDeclaredFire,
			now,
			policy: this.catchUp,
			runAllLimit: this.runAllLimit,
			toleranceMs: this.jitterMs + this.lateGraceMs,
		});
	}

	private fireAt(window: number): number {
		return window + jitterFor(runKey(this.options.scheduleId, window), this.jitterMs);
	}

	private record(records: FireRecord[]): void {
		const state = this.requireState();
		if (records.length > 0)
			state.history = appendHistory(state.history, records, this.historyLimit);
	}

	/** The run left n8n's hands: out of the outbox, and emitted again should the window be started again. */
	private settle(key: string): StartedFire | undefined {
		this.emitted.delete(key);
		this.retrying.get(key)?.cancel();
		this.retrying.delete(key);
		this.settling?.keys.delete(key);
		const created = this.created.get(key);
		this.created.delete(key);
		return this.outbox.settle(key) ?? created;
	}

	private write(): void {
		const state = this.requireState();
		state.seq = (state.seq ?? 0) + 1;
		this.options.write({
			...state,
			// While re-emitted runs settle, the queue carried over waits in `settling`: still owed.
			queued: [...(this.settling?.backlog ?? []), ...this.overlap.queued],
			outbox: this.outbox.saved(),
			history: [...state.history],
		});
	}

	private requireState(): ScheduleState {
		if (!this.state) throw new Error('ScheduleEngine used before activate()');
		return this.state;
	}

	/** Runs `task` after every task queued before it, whether those succeeded or failed. */
	private exclusive<T>(task: () => Promise<T>): Promise<T> {
		const result = this.serial.then(task);
		this.serial = result.catch(() => undefined);
		return result;
	}
}
