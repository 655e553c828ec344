import type { Clock, TimerHandle } from '../clock';
import type { CatchUpPolicy } from './catchUp';
import { checkCatchUpOptions, DEFAULT_RUN_ALL_LIMIT, planCatchUp } from './catchUp';
import { requireIntegerInRange, ScheduleConfigError } from './errors';
import type { Fire, StartedFire } from './fire';
import { jitterFor, runKey, startFire } from './fire';
import type { FireRecord, LoadedState, ScheduleState } from './history';
import { appendHistory, HISTORY_LIMIT, loadScheduleState, notStartedRecord, recordItem, startedRecord, summarizeHistory } from './history';
import type { OverlapPolicy } from './overlap';
import { checkOverlapPolicy, DEFAULT_OVERLAP_POLICY, OverlapController } from './overlap';
import type { Schedule } from './schedule';
import { DAY_MS, isoTime, MINUTE_MS } from '../units';

/** Jitter spreads load within a window; more than a day would blur which day a run is for. */
export const MAX_JITTER_MS = DAY_MS;
/**
 * How late (beyond jitter) a window may still fire as a normal scheduled fire rather than count
 * as missed: absorbs slow timers and quick restarts.
 */
export const DEFAULT_LATE_GRACE_MS = MINUTE_MS;

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
	/** What `persist` last received (undefined the first time); validated on activation. */
	storedState: unknown;
	/**
	 * Emits the run. Resolves once emitted, not when the run ends: the node reports the end with
	 * `fireEnded(runKey)`, which it must not await from inside `start`. A rejection records the
	 * window as missed and frees its overlap slot.
	 *
	 * `state` is the state as it is once this run has started (cursor, queue, history with this
	 * run's entry). A store that is only written together with a run (n8n saves static data when a
	 * trigger emits) takes it here, so what reaches the store is never a run behind.
	 */
	start(fire: StartedFire, state: ScheduleState): Promise<void> | void;
	/** Stores the state; called after runs were started (at-least-once: a crash in between repeats them). */
	persist(state: ScheduleState): Promise<void> | void;
	/** Errors from timer-driven work (a failing `persist`), which has no caller to throw to. */
	onError(error: Error): void;
}

export interface ActivationReport {
	/** Why stored progress was discarded, for the node's log. */
	notice?: string;
	reset?: LoadedState['reset'];
	/** Windows that passed without a fire while inactive. */
	missedCount: number;
	/** Runs started by this activation (catch-up, carried-over queue, late windows). */
	startedCount: number;
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
		nextFires: preview.nextFires.map((fire) => ({ runKey: fire.runKey, declaredAt: isoTime(fire.declaredAt), fireAt: isoTime(fire.fireAt) })),
		lastDeclaredFire: preview.lastDeclaredFire === undefined ? null : isoTime(preview.lastDeclaredFire),
		catchUp: preview.catchUp,
		summary: { windows, lastStartedAt: lastStartedAt === undefined ? null : isoTime(lastStartedAt), maxLatenessMs: maxLatenessMs ?? null },
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
	private state: ScheduleState | undefined;
	private overlap: OverlapController;
	private timer: TimerHandle | undefined;
	private active = false;
	private serial: Promise<unknown> = Promise.resolve();

	/** Validates every option up front, throwing ScheduleConfigError naming the field. */
	constructor(private readonly options: ScheduleEngineOptions) {
		if (typeof options.scheduleId !== 'string' || options.scheduleId === '') {
			throw new ScheduleConfigError('scheduleId', 'Invalid schedule id for "scheduleId": must be a non-empty string');
		}
		this.catchUp = options.catchUp ?? 'skip';
		this.runAllLimit = options.runAllLimit ?? DEFAULT_RUN_ALL_LIMIT;
		checkCatchUpOptions(this.catchUp, this.runAllLimit);
		this.overlapPolicy = options.overlap ?? DEFAULT_OVERLAP_POLICY;
		checkOverlapPolicy(this.overlapPolicy);
		this.jitterMs = requireIntegerInRange('jitter', options.jitterMs ?? 0, 0, MAX_JITTER_MS);
		this.lateGraceMs = requireIntegerInRange('lateGrace', options.lateGraceMs ?? DEFAULT_LATE_GRACE_MS, 0, DAY_MS);
		this.historyLimit = requireIntegerInRange('historyLimit', options.historyLimit ?? HISTORY_LIMIT, 1, 10 * HISTORY_LIMIT);
		this.overlap = new OverlapController(this.overlapPolicy);
	}

	/**
	 * Loads stored state, forgets runs from before (see OverlapController), restarts fires that
	 * were queued, catches up missed windows, and arms the timer for the next window.
	 */
	activate(): Promise<ActivationReport> {
		return this.exclusive(async () => {
			this.timer?.cancel();
			const loaded = loadScheduleState(this.options.storedState, this.options.schedule.fingerprint);
			this.state = loaded.state;
			this.overlap = new OverlapController(this.overlapPolicy);
			this.active = true;
			const carriedOver = this.state.queued;
			const { missedCount, startedCount, nextFireAt } = await this.processDue(carriedOver);
			return { notice: loaded.notice, reset: loaded.reset, missedCount, startedCount, nextFireAt };
		});
	}

	/** Stops the timer. Runs already started keep running; progress is already persisted. */
	deactivate(): void {
		this.active = false;
		this.timer?.cancel();
	}

	/**
	 * The run with this key ended (any way); starts the next queued fire, if any. Unknown keys are
	 * ignored, and so is everything after `deactivate()`: queued fires then wait in the stored state
	 * for the next activation instead of starting on a trigger that was closed.
	 */
	fireEnded(key: string): Promise<void> {
		return this.exclusive(async () => {
			if (!this.active) return;
			const next = this.overlap.onRunEnded(key);
			if (!next) return;
			await this.launch(next);
			await this.save();
		});
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
			nextFires.push({ runKey: runKey(this.options.scheduleId, cursor), declaredAt: cursor, fireAt: this.fireAt(cursor) });
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
	private async processDue(backlog: Fire[] = []): Promise<Omit<ActivationReport, 'notice' | 'reset'>> {
		const state = this.requireState();
		const now = this.options.clock.now();
		const plan = this.planCatchUp(state.lastDeclaredFire, now);
		const records = [...plan.records];
		const toStart: Fire[] = [];
		let cursor = plan.lastDeclaredFire;
		// Windows are handled in declared order, so a window with a large jitter holds back later ones.
		for (let window = this.options.schedule.nextAfter(cursor); this.fireAt(window) <= now; window = this.options.schedule.nextAfter(cursor)) {
			cursor = window;
			const fire: Fire = { runKey: runKey(this.options.scheduleId, window), declaredAt: window, kind: 'scheduled' };
			const decision = this.overlap.onFire(fire);
			if (decision === 'start') toStart.push(fire);
			else if (decision === 'queue') records.push(notStartedRecord(fire, 'queued'));
			else records.push(notStartedRecord(fire, 'skipped', this.overlap.skipReason()));
		}
		// Backlog after the windows due now: a window due now (or a little late, just after a restart)
		// is not skipped because of catch-up runs started in the same pass; backlog fires are never
		// skipped, they wait for a free slot.
		for (const fire of [...backlog, ...plan.starts]) if (this.overlap.onBacklog(fire) === 'start') toStart.push(fire);
		state.lastDeclaredFire = cursor;
		this.record(records);
		const nextFireAt = this.arm(cursor, now);
		for (const fire of toStart) await this.launch(fire);
		await this.save();
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

	/** Hands a fire (already counted as running) to the node; on failure frees its slot and moves on. */
	private async launch(fire: Fire): Promise<void> {
		const started = startFire(fire, this.options.clock.now());
		const record = startedRecord(started);
		try {
			await this.options.start(started, this.snapshot([record]));
			this.record([record]);
		} catch (error) {
			this.record([notStartedRecord(fire, 'missed', `starting the run failed: ${(error as Error)?.message ?? String(error)}`)]);
			const next = this.overlap.onRunEnded(fire.runKey);
			if (next) await this.launch(next);
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
		if (records.length > 0) state.history = appendHistory(state.history, records, this.historyLimit);
	}

	private async save(): Promise<void> {
		this.requireState().queued = this.overlap.queued;
		await this.options.persist(this.snapshot());
	}

	/** A copy of the state with `records` appended, so what the node stores is never changed behind its back. */
	private snapshot(records: FireRecord[] = []): ScheduleState {
		const state = this.requireState();
		return { ...state, queued: this.overlap.queued, history: appendHistory(state.history, records, this.historyLimit) };
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
