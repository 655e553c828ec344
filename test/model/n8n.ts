import type { PollActivation, PollRun, PollTriggerState } from '../../core/poll/activation';
import type { RunOutlet, RunToEmit } from '../../core/outbox';

/**
 * The model n8n: what the Poll Trigger relies on in n8n 2.41, and nothing more. It is the reference
 * the simulation holds the core to, so it is kept small; each rule names where it comes from
 * (nodes/shared/emitRuns.ts and durableTrigger.ts, ../shared/ENVIRONMENT.md's n8n 2.41.1 notes).
 *
 * - Static data: the trigger's `write` sets the live copy; n8n stores (`persist`) that copy only
 *   when a run is emitted (before it creates the run, so a crash between the two leaves the state
 *   saved and the run not created), at the end of an activation, and at the emitter's settlement
 *   write (an empty emit n8n refuses, after saving). A restart or a publish reads what was stored.
 * - Runs: the trigger hands runs to its emitter (`queue`); n8n takes them in order. Creating one
 *   saves the static data first, then refuses it if an execution holds its deduplication key (the
 *   done-promise resolves with nothing: settled `started`, no result), else creates it: its items
 *   have started. n8n may instead fail to create it (settled `not_created`, and the emitter reports
 *   the runs it could not create once it is idle: a failed execution naming their keys).
 * - A created run ends (success, error) and settles; the emitter then writes the settlements once
 *   every run it sent has settled and the trigger holds no more (`moreToEmit`).
 * - A kill -9 loses the runs not created yet and everything not stored; n8n's crash recovery ends
 *   the runs it had created as `crashed` (their items did start). Then the workflow activates again.
 * - Unpublish and publish: the old emitter stops (runs it had not handed to n8n are not); runs n8n
 *   created stay in flight and settle with the new activation, which does not emit them again
 *   (emitRuns.ts `inFlight`).
 * - Pruning deletes ended executions: their keys are free again.
 * - Queue mode's "rejected but ran": n8n reports a run not created, and a worker runs it anyway.
 */

/** One item of a run as the simulation tracks it: its key and version. */
export interface StartedItem {
	id: string;
	v: number;
}

export type ExecutionStatus = 'running' | 'success' | 'error' | 'crashed';

interface Execution {
	key: string;
	status: ExecutionStatus;
}

/** A run n8n created and has not settled: who hears of its end. */
interface InFlight {
	key: string;
	listeners: Array<{ activation: PollActivation; run: PollRun }>;
}

export interface ModelEvents {
	/** n8n created a run: its items started. */
	started(key: string | undefined, items: StartedItem[]): void;
	/** A report the user sees (failed execution) naming item keys. */
	reported(kind: string, ids: string[]): void;
	/** What n8n did, for the story. */
	said(line: string): void;
	/** The trigger wrote its state (in memory). */
	wrote?(): void;
	/** n8n saved the state in memory. */
	saved?(): void;
	/** The state in memory is gone: a new activation reads the saved one. */
	reverted?(): void;
}

/** The items of a run as the model source gave them: `{ id, v }` (an S3 object: its `key`; a file: its `name`). */
export function itemsOf(run: PollRun): StartedItem[] {
	return (run.items ?? []).map((item) => ({
		id: String(item.id ?? item.key ?? item.name),
		v: typeof item.v === 'number' ? item.v : 0,
	}));
}

export class ModelN8n {
	/** The static data n8n stored: what an activation after a restart or a publish reads. */
	stored: PollTriggerState = { v: 1 };
	/** The static data in memory, as the trigger last wrote it. */
	private live: PollTriggerState = { v: 1 };
	/** Executions n8n keeps, by deduplication key. */
	readonly executions = new Map<string, Execution>();
	/** Runs the current emitter holds, in order, not handed to n8n yet. */
	private queue: Array<RunToEmit<PollRun>> = [];
	/** Runs created, not settled, oldest first. */
	private running: InFlight[] = [];
	/** Runs n8n could not create since the emitter was last idle: reported together. */
	private notRun: string[] = [];
	/** A settlement not stored yet. */
	private unwritten = false;
	activation: PollActivation | undefined;

	constructor(private readonly events: ModelEvents) {}

	/** The outlet the current activation writes and emits through (core/outbox.ts RunOutlet). */
	outlet(): RunOutlet<PollTriggerState, PollRun> {
		return {
			write: (state) => {
				this.live = state;
				this.events.wrote?.();
			},
			emit: async (runs) => this.handOver(runs),
			emitTaken: async (take) => this.handOver(take()),
			inFlight: (key) => this.running.some((run) => run.key === key),
			writeNow: () => this.persist(),
			storeNow: () => this.persist(),
			info: () => undefined,
			warn: () => undefined,
		};
	}

	/**
	 * The emitter takes runs in order; one emitted by an earlier activation in this process that n8n
	 * has not settled is not emitted again but settled with that run (emitRuns.ts `inFlight`).
	 */
	private handOver(runs: ReadonlyArray<RunToEmit<PollRun>>): void {
		for (const entry of runs) {
			const pending = this.running.find((run) => run.key === entry.key);
			if (pending) pending.listeners.push({ activation: this.activation!, run: entry.run });
			else this.queue.push(entry);
		}
	}

	/** n8n saves the static data. */
	persist(): void {
		this.stored = structuredClone(this.live);
		this.events.saved?.();
	}

	/** What n8n holds in memory is gone: the state in memory is the stored one again. */
	private readStored(): void {
		this.live = structuredClone(this.stored);
		this.events.reverted?.();
	}

	/** The trigger's state as stored now and in memory now, for the bounds the properties check. */
	states(): PollTriggerState[] {
		return [this.stored, this.live];
	}

	get queued(): number {
		return this.queue.length;
	}

	/** The keys of the runs created and not settled. */
	runningKeys(): string[] {
		return this.running.map(({ key }) => key);
	}

	/** The next run the emitter hands to n8n: saved static data, then created or refused. */
	create(): boolean {
		const entry = this.queue.shift();
		if (!entry) return false;
		this.persist();
		const items = itemsOf(entry.run);
		const names = items.map(({ id }) => id).join(',') || '(none)';
		if (entry.key === undefined) {
			this.events.said(`n8n creates an unkeyed run of ${names}`);
			this.events.started(undefined, items);
			return true;
		}
		if (this.executions.has(entry.key)) {
			this.events.said(`n8n refuses the run of ${names}: its key exists`);
			this.settle(this.activation!, entry.key, entry.run, { settlement: 'started' });
			return true;
		}
		this.executions.set(entry.key, { key: entry.key, status: 'running' });
		this.events.started(entry.key, items);
		this.events.said(`n8n creates the run of ${names}`);
		this.running.push({
			key: entry.key,
			listeners: [{ activation: this.activation!, run: entry.run }],
		});
		return true;
	}

	/**
	 * n8n saves static data for the next run, then cannot create it. Only a run under a key n8n does
	 * not hold: n8n refuses a duplicate key before anything else can fail (a refusal of the next run
	 * whose key exists is a `create`).
	 */
	refuse(): boolean {
		const next = this.queue[0];
		if (!next || (next.key !== undefined && this.executions.has(next.key))) return this.create();
		const entry = this.queue.shift()!;
		this.persist();
		const names = itemsOf(entry.run)
			.map(({ id }) => id)
			.join(',');
		this.events.said(`n8n cannot create the run of ${names}`);
		if (entry.key === undefined) return true;
		this.notRun.push(...itemsOf(entry.run).map(({ id }) => id));
		this.settle(this.activation!, entry.key, entry.run, { settlement: 'not_created' });
		return true;
	}

	/** Queue mode: n8n reports the next run not created, and a worker runs it anyway. */
	rejectButRun(): string[] | undefined {
		const entry = this.queue[0];
		if (!entry || entry.key === undefined || this.executions.has(entry.key)) return undefined;
		this.queue.shift();
		this.persist();
		const items = itemsOf(entry.run);
		this.executions.set(entry.key, { key: entry.key, status: 'success' });
		this.events.started(entry.key, items);
		this.events.said(
			`n8n reports the run of ${items.map(({ id }) => id).join(',')} not created, and a worker runs it`,
		);
		this.notRun.push(...items.map(({ id }) => id));
		this.settle(this.activation!, entry.key, entry.run, { settlement: 'not_created' });
		return items.map(({ id }) => id);
	}

	/** The oldest run in flight ends with `status`. */
	finish(status: 'success' | 'error'): boolean {
		const run = this.running.shift();
		if (!run) return false;
		const execution = this.executions.get(run.key);
		if (execution) execution.status = status;
		this.events.said(`run ${run.key.slice(-6)} ends: ${status}`);
		for (const { activation, run: entry } of run.listeners)
			this.settle(activation, run.key, entry, { settlement: 'started', result: { status } });
		return true;
	}

	private settle(
		activation: PollActivation,
		key: string,
		run: PollRun,
		end: Parameters<PollActivation['settled']>[2],
	): void {
		activation.settled(key, run, end);
		if (activation !== this.activation) return;
		this.unwritten = true;
		this.writeIfIdle();
	}

	/** The emitter's settlement write: once nothing it sent is unsettled and nothing more is held. */
	writeIfIdle(): void {
		const activation = this.activation;
		if (!activation || this.queue.length > 0 || this.running.length > 0) return;
		if (activation.moreToEmit) return;
		if (this.notRun.length > 0) {
			this.events.reported('not run', this.notRun);
			this.notRun = [];
		}
		if (!this.unwritten) return;
		this.unwritten = false;
		activation.write();
		this.persist();
	}

	/** A settlement write while runs are still unsettled (busyWriteIntervalMs). */
	busyWrite(): boolean {
		if (!this.unwritten || !this.activation) return false;
		this.unwritten = false;
		this.activation.write();
		this.persist();
		return true;
	}

	/** kill -9: the runs not created are lost, the created ones end `crashed`; nothing unstored stays. */
	crash(): void {
		for (const run of this.running) {
			const execution = this.executions.get(run.key);
			if (execution) execution.status = 'crashed';
		}
		this.running = [];
		this.queue = [];
		this.notRun = [];
		this.unwritten = false;
		this.readStored();
		this.activation = undefined;
	}

	/** Unpublish: the emitter stops, what it had not handed over is not; created runs go on. */
	unpublish(): void {
		this.queue = [];
		if (this.notRun.length > 0) this.events.reported('not run', this.notRun);
		this.notRun = [];
		this.unwritten = false;
		this.readStored();
		this.activation = undefined;
	}

	/** A new activation goes live on the stored static data. */
	activated(activation: PollActivation): void {
		this.activation = activation;
		this.readStored();
	}

	/** Deletes every ended execution (pruning). */
	prune(): number {
		let pruned = 0;
		for (const [key, execution] of this.executions)
			if (execution.status !== 'running') {
				this.executions.delete(key);
				pruned++;
			}
		return pruned;
	}

	/** Whether nothing is left to create or settle. */
	get idle(): boolean {
		return this.queue.length === 0 && this.running.length === 0;
	}
}
