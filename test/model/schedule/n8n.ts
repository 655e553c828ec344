import { FakeClock, flushPromises } from '../../support/fakeClock';
import { ScheduleEngine } from '../../../core/schedule/engine';
import { attemptKey, type StartedFire } from '../../../core/schedule/fire';
import type { FireRecord, ScheduleState } from '../../../core/schedule/history';
import { createSchedule } from '../../../core/schedule/schedule';
import type { Schedule } from '../../../core/schedule/types';
import { type Scenario, type Segment, retryPolicyOf, unitsMs } from './scenario';

/**
 * A model n8n 2.41 for the Durable Schedule Trigger: just what the engine meets of it, as
 * nodes/DurableScheduleTrigger, nodes/shared/durableTrigger.ts and emitRuns.ts translate it.
 *
 * - Static data: the engine's `write` changes the copy in memory; n8n stores it only on an emit
 *   (before it creates the run: ../shared/ENVIRONMENT.md), once after activation, and with the
 *   emitter's settlement write (an emit n8n refuses, after each settled run).
 * - Runs: created under their deduplication key `dst:<attemptKey>` unless a row with that key
 *   exists (refused: settled as ended, without a result) or the scenario says n8n cannot create
 *   it (settled `not_created`). A created run lasts and fails as the scenario says; its end is
 *   reported to the activation that emitted it (or re-attached it, emitRuns.ts `inFlight`).
 * - A kill, just before any of n8n's steps: the process and its memory are gone, running runs
 *   are `crashed` (n8n's recovery), nothing is reported. An unpublish keeps the process: runs go on,
 *   the next activation re-attaches those still running, and `remembered` (knownSchedules) holds
 *   the state this process last wrote.
 * - Pruning deletes the rows of ended runs; a later run under a pruned key is created again.
 *
 * It records what the properties (properties.ts) judge: every run created, every state stored,
 * what broke while it happened, and the story.
 */

export interface Execution {
	n8nKey: string;
	fire: StartedFire;
	status: 'running' | 'success' | 'error' | 'crashed';
	createdAt: number;
	/** The activation that emitted it, and the one its end is reported to. */
	activation: number;
	reportTo: number;
	process: number;
}

export interface Observation {
	scenario: Scenario;
	schedule: Schedule;
	/** Every run n8n created, in order (kept after its row is pruned). */
	created: Execution[];
	/** Every state n8n stored, in order. */
	stored: ScheduleState[];
	/** Keys n8n pruned while the stored outbox still held them: a later run under one is declared. */
	prunedWhileOwed: Set<string>;
	/** Windows up to here must be accounted for (the quiet end began). */
	cutoff: number;
	/** What went wrong while it ran (overlap, queue order, bounds, errors, a tick that never ended). */
	violations: string[];
	story: string[];
}

const SCHEDULE_ID = 'wf:node';

/** Runs `scenario` on a fake clock against the model n8n and reports what happened. */
export async function simulate(scenario: Scenario, telling = false): Promise<Observation> {
	const world = new ModelN8n(scenario, telling);
	await world.run();
	return world.observation;
}

class ModelN8n {
	private readonly clock: FakeClock;
	private readonly schedule: Schedule;
	readonly observation: Observation;
	/** The executions table: rows by deduplication key, until pruned. */
	private readonly rows = new Map<string, Execution>();
	/** Static data in the database, and the process's copy. */
	private stored: ScheduleState | undefined;
	private memory: ScheduleState | undefined;
	private changed = false;
	/** The state this process last wrote (knownSchedules). */
	private remembered: ScheduleState | undefined;
	private process = 1;
	private alive = true;
	/** The live activation (its emitter not stopped), and the latest one. */
	private live: number | undefined;
	private activation = 0;
	private engine: ScheduleEngine | undefined;
	/** emitRuns.ts existingKey: a settlement write happens only once a run settled as existing. */
	private existingKey: string | undefined;
	private steps = 0;
	private killAt: number | undefined;
	private runs = 0;
	private creations = 0;
	/** Run keys whose slot the live activation released (Max Run Duration): they no longer count. */
	private released = new Set<string>();
	private newestRecord: FireRecord | undefined;
	/** The declared time of the last first-attempt scheduled window this activation started. */
	private lastScheduled = -Infinity;
	private activationStartedAt = 0;
	/** Windows the stored queue carried into this activation (a backlog it starts as slots free). */
	private carriedOver = new Set<string>();

	constructor(
		private readonly scenario: Scenario,
		private readonly telling: boolean,
	) {
		// Everything here waits only on promises and this clock: one turn after each timer settles it.
		this.clock = new FakeClock(scenario.startAt, 1);
		this.schedule = createSchedule(scenario.schedule.definition);
		this.observation = {
			scenario,
			schedule: this.schedule,
			created: [],
			stored: [],
			prunedWhileOwed: new Set(),
			cutoff: scenario.startAt,
			violations: [],
			story: [],
		};
	}

	async run(): Promise<void> {
		await this.publish();
		for (const segment of this.scenario.segments) await this.segment(segment);
		// The quiet end: n8n up, no kill, long enough for every window up to the cutoff to be
		// started, retried, or given up.
		this.steps = 0;
		this.killAt = undefined;
		this.observation.cutoff = this.clock.now();
		this.tell(() => 'from here on n8n stays up');
		await this.clock.advance(this.quietEndMs());
		await this.checkIdle();
		// What the trigger wrote since n8n last stored it (a change that started no run: a window given
		// up after n8n could not create its run) is stored with n8n's next emit: with no kill to come,
		// it is what the user reads then.
		if (this.alive && this.changed && this.memory) this.observation.stored.push(this.memory);
	}

	private async segment(segment: Segment): Promise<void> {
		this.steps = 0;
		this.killAt = segment.killAtStep;
		await this.clock.advance(unitsMs(this.scenario, segment.live));
		this.killAt = undefined;
		const downMs = unitsMs(this.scenario, segment.down);
		if (this.alive && segment.end === 'kill') this.kill('at the end of the segment');
		else if (this.alive) this.unpublish();
		this.tell(() => `down ${showMs(downMs)}`);
		await this.clock.advance(downMs);
		if (segment.prune) this.prune();
		if (!this.alive) {
			this.alive = true;
			this.process++;
			this.tell(() => 'n8n starts again');
		}
		await this.publish();
	}

	/**
	 * Long enough for every window up to now to start, be retried, or be given up: the windows that
	 * may wait for one slot (the queue, a carried backlog, a run-all catch-up, the outbox) each
	 * holding it for every run and backoff.
	 */
	private quietEndMs(): number {
		const s = this.scenario;
		const longest = unitsMs(s, Math.max(...s.durations));
		const attempts = s.retry?.maxAttempts ?? 1;
		const backoff = s.retry ? Math.max(unitsMs(s, s.retry.firstDelay), s.schedule.unitMs) : 0;
		const state = this.memory;
		const waiting =
			1 +
			(state?.queued.length ?? 0) +
			(state?.outbox.length ?? 0) +
			(s.overlap.kind === 'queue' ? s.overlap.queueLimit : 0) +
			(s.catchUp === 'run-all' ? s.runAllLimit : 0);
		// 40 s: the attempts at creating a run n8n refused (5 s, then 30 s).
		const perWindow = attempts * (longest + backoff + 40_000);
		return waiting * perWindow + unitsMs(s, s.jitter) + 2 * s.schedule.unitMs;
	}

	// ---- n8n's side of an activation (DurableTrigger.activate, the node's scheduleEngine) ----

	private async publish(): Promise<void> {
		const activation = ++this.activation;
		this.live = activation;
		this.existingKey = undefined;
		this.released = new Set();
		this.lastScheduled = -Infinity;
		this.activationStartedAt = this.clock.now();
		this.memory = this.stored;
		this.changed = false;
		// The stored queue, or the one this process remembers (the engine takes the newer).
		const carried = [this.stored, this.remembered];
		this.carriedOver = new Set(
			carried.flatMap((state) => state?.queued ?? []).map((fire) => fire.runKey),
		);
		const s = this.scenario;
		const engine = new ScheduleEngine({
			clock: this.clock,
			scheduleId: SCHEDULE_ID,
			schedule: this.schedule,
			catchUp: s.catchUp,
			runAllLimit: s.runAllLimit,
			overlap: s.overlap,
			jitterMs: s.jitter === 0 ? 0 : unitsMs(s, s.jitter),
			lateGraceMs:
				s.lateGrace === undefined ? undefined : s.lateGrace === 0 ? 0 : unitsMs(s, s.lateGrace),
			historyLimit: s.historyLimit,
			retry: retryPolicyOf(s),
			// What n8n loads is JSON.
			storedState: this.stored === undefined ? undefined : JSON.parse(JSON.stringify(this.stored)),
			remembered: this.remembered,
			write: (state) => this.write(activation, state),
			emit: (fires) => this.emit(activation, fires),
			onError: (error) => this.violation(`the engine reported an error: ${error.message}`),
			onMissed: (missed) =>
				this.tell(
					() =>
						`the activation reports ${missed.count} missed window(s) ${at(missed.first)}–${at(missed.last)} (${missed.runsStarted} run(s) for them)`,
				),
		});
		this.engine = engine;
		this.tell(() => `the workflow is published (activation ${activation})`);
		let activated = false;
		void engine.activate().then(() => (activated = true));
		await flushPromises(1);
		if (!activated) this.violation(`activation ${activation} did not end`);
		if (this.alive && this.live === activation && this.step('saves static data after activation'))
			this.save();
	}

	private unpublish(): void {
		this.tell(() => 'the workflow is unpublished (n8n keeps running)');
		this.live = undefined;
		this.engine?.deactivate();
	}

	private kill(where: string): void {
		this.tell(() => `n8n is killed ${where}`);
		this.alive = false;
		this.live = undefined;
		this.engine?.deactivate();
		this.memory = undefined;
		this.changed = false;
		this.remembered = undefined;
		for (const row of this.rows.values())
			if (row.status === 'running') {
				row.status = 'crashed';
				this.tell(() => `  run ${row.n8nKey} crashed`);
			}
	}

	private prune(): void {
		const owed = new Set((this.stored?.outbox ?? []).map(({ run }) => `dst:${attemptKey(run)}`));
		const pruned: string[] = [];
		for (const [key, row] of this.rows)
			if (row.status !== 'running') {
				this.rows.delete(key);
				pruned.push(key);
				if (owed.has(key)) this.observation.prunedWhileOwed.add(key);
			}
		if (pruned.length > 0) this.tell(() => `n8n prunes the executions ${pruned.join(', ')}`);
	}

	/**
	 * Counts one of n8n's steps; false when n8n is killed just before it (the caller stops). Only
	 * while the trigger is live: kills land in what the trigger does.
	 */
	private step(what: string): boolean {
		if (!this.alive) return false;
		if (this.live === undefined) return true;
		this.steps++;
		if (this.killAt !== undefined && this.steps >= this.killAt) {
			this.killAt = undefined;
			this.kill(`before it ${what}`);
			return false;
		}
		return true;
	}

	// ---- static data ----

	/**
	 * The engine hands a fresh state object to every write and never changes one it handed over
	 * (its records and fires are not mutated either), so memory and store hold it as is: copying it
	 * as JSON, as n8n does, would cost more than the rest of the simulation.
	 */
	private write(activation: number, state: ScheduleState): void {
		if (!this.alive || this.activation !== activation) return;
		this.memory = state;
		this.changed = true;
		this.remembered = state;
		// The records this write added (the ones after the newest of the write before).
		const { history } = state;
		for (let i = history.length - 1; i >= 0 && history[i] !== this.newestRecord; i--)
			if (history[i].outcome === 'released') this.released.add(history[i].runKey);
		this.newestRecord = history.at(-1);
	}

	private save(): void {
		if (!this.changed || this.memory === undefined) return;
		this.stored = this.memory;
		this.changed = false;
		this.observation.stored.push(this.stored);
		this.checkBounds(this.stored);
	}

	// ---- runs ----

	private emit(activation: number, fires: StartedFire[]): void {
		for (const fire of fires) {
			if (!this.alive || this.live !== activation) return;
			const n8nKey = `dst:${attemptKey(fire)}`;
			const row = this.rows.get(n8nKey);
			if (row && row.status === 'running' && row.process === this.process) {
				// Emitted by an earlier activation of this process, not settled: settled with that run.
				row.reportTo = activation;
				this.tell(() => `  ${n8nKey} is still running: the activation waits for its end`);
				continue;
			}
			if (!this.step(`saves static data for ${n8nKey}`)) return;
			this.save();
			if (!this.step(`creates the run ${n8nKey}`)) return;
			if (row) {
				this.tell(() => `  n8n refuses ${n8nKey}: a run with that key exists`);
				void Promise.resolve().then(() => this.settled(activation, n8nKey, fire, undefined));
				continue;
			}
			if (this.scenario.refusals[this.creations++ % this.scenario.refusals.length]) {
				this.tell(() => `  n8n cannot create ${n8nKey}`);
				void Promise.resolve().then(() => this.notCreated(activation, fire));
				continue;
			}
			this.create(activation, n8nKey, fire);
		}
	}

	private create(activation: number, n8nKey: string, fire: StartedFire): void {
		const s = this.scenario;
		const index = this.runs++;
		const duration = unitsMs(s, s.durations[index % s.durations.length]);
		const fails = s.failures[index % s.failures.length];
		const execution: Execution = {
			n8nKey,
			fire,
			status: 'running',
			createdAt: this.clock.now(),
			activation,
			reportTo: activation,
			process: this.process,
		};
		this.rows.set(n8nKey, execution);
		this.observation.created.push(execution);
		this.tell(
			() =>
				`  run ${n8nKey} starts (${fire.kind}, ${showMs(duration)}${fails ? ', will fail' : ''})`,
		);
		this.checkOverlap(activation, fire);
		this.clock.setTimer(() => void this.end(execution, fails), duration);
	}

	private async end(execution: Execution, fails: boolean): Promise<void> {
		if (execution.status !== 'running' || execution.process !== this.process) return;
		if (!this.step(`ends the run ${execution.n8nKey}`)) return;
		execution.status = fails ? 'error' : 'success';
		this.tell(() => `  run ${execution.n8nKey} ends: ${execution.status}`);
		await this.settled(execution.reportTo, execution.n8nKey, execution.fire, {
			status: execution.status,
			...(fails && { errorMessage: 'the workflow failed' }),
		});
	}

	/** emitRuns.ts onSettled: the engine is told, then the settlement write (an emit n8n refuses). */
	private async settled(
		activation: number,
		n8nKey: string,
		fire: StartedFire,
		result: { status: string; errorMessage?: string } | undefined,
	): Promise<void> {
		if (!this.alive || this.live !== activation || !this.engine) return;
		await this.engine.fireEnded(fire.runKey, result);
		this.existingKey = n8nKey;
		this.settlementWrite(activation);
	}

	private async notCreated(activation: number, fire: StartedFire): Promise<void> {
		if (!this.alive || this.live !== activation || !this.engine) return;
		await this.engine.fireNotCreated(fire.runKey, new Error('the database is locked'));
		this.settlementWrite(activation);
	}

	private settlementWrite(activation: number): void {
		if (!this.alive || this.live !== activation || this.existingKey === undefined) return;
		this.engine?.rewrite();
		if (this.step('saves static data with a settlement write')) this.save();
	}

	// ---- what is checked as it happens ----

	private violation(message: string): void {
		this.observation.violations.push(`${at(this.clock.now())}: ${message}`);
		this.tell(() => `VIOLATED: ${message}`);
	}

	/**
	 * Overlap: the runs this activation created and whose slot it did not release never exceed the
	 * policy's capacity; windows start in declared order (under Queue too), but for a queue carried
	 * over a restart.
	 */
	private checkOverlap(activation: number, fire: StartedFire): void {
		const policy = this.scenario.overlap;
		const capacity = policy.kind === 'allow-parallel' ? policy.maxParallel : 1;
		const running = [...this.rows.values()].filter(
			(row) =>
				row.status === 'running' &&
				row.activation === activation &&
				!this.released.has(row.fire.runKey),
		);
		if (running.length > capacity)
			this.violation(
				`${running.length} runs at once (${running.map((row) => row.n8nKey).join(', ')}), over the overlap policy's ${capacity}`,
			);
		const first = (fire.attempt ?? 1) === 1 && (fire.runAttempt ?? 1) === 1;
		// A queue carried over a restart is a backlog: it waits behind the windows due at activation.
		const queuedHere = !this.carriedOver.has(fire.runKey);
		if (
			fire.kind === 'scheduled' &&
			first &&
			queuedHere &&
			fire.actualAt >= this.activationStartedAt
		) {
			if (fire.declaredAt <= this.lastScheduled)
				this.violation(
					`window ${at(fire.declaredAt)} started after window ${at(this.lastScheduled)}`,
				);
			this.lastScheduled = fire.declaredAt;
		}
	}

	/**
	 * State bounds: history within its limit, the outbox within the overlap slots, and the queue
	 * grown by at most Queue Limit plus one catch-up over what the activation carried over (a
	 * backlog not started before the next kill is carried again, with that outage's catch-up).
	 */
	private checkBounds(state: ScheduleState): void {
		const s = this.scenario;
		const capacity = s.overlap.kind === 'allow-parallel' ? s.overlap.maxParallel : 1;
		const queueLimit = s.overlap.kind === 'queue' ? s.overlap.queueLimit : 0;
		if (state.history.length > s.historyLimit)
			this.violation(
				`the stored history holds ${state.history.length} entries, over ${s.historyLimit}`,
			);
		if (state.outbox.length > capacity)
			this.violation(
				`the stored outbox holds ${state.outbox.length} runs, over the ${capacity} slots`,
			);
		const queueBound = this.carriedOver.size + queueLimit + s.runAllLimit;
		if (state.queued.length > queueBound)
			this.violation(`the stored queue holds ${state.queued.length} windows, over ${queueBound}`);
		const queuedKeys = new Set(state.queued.map((fire) => fire.runKey));
		if (queuedKeys.size < state.queued.length)
			this.violation('the stored queue holds a window twice');
	}

	/** Every tick ends: a task queued behind the engine's work runs once promises settle. */
	private async checkIdle(): Promise<void> {
		if (!this.engine || !this.alive) return;
		let idle = false;
		void this.engine.fireEnded('probe: no such run').then(() => (idle = true));
		await flushPromises(1);
		if (!idle) this.violation('the engine is still busy with a tick after the quiet end');
	}

	/** Adds a line to the story, when one is told (a replay): building them costs more than the rest. */
	private tell(line: () => string): void {
		if (this.telling) this.observation.story.push(`${at(this.clock.now())} ${line()}`);
	}
}

/** A time in the story: UTC, to the second. */
export function at(time: number): string {
	return new Date(time).toISOString().slice(5, 19).replace('T', ' ') + 'Z';
}

function showMs(ms: number): string {
	if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
	if (ms % 60_000 === 0) return `${ms / 60_000} min`;
	return `${Math.round(ms / 1000)} s`;
}
