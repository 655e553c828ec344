import type {
	IExecuteResponsePromiseData,
	INodeExecutionData,
	IRun,
	ITriggerFunctions,
} from 'n8n-workflow';

import { systemClock, type TimerHandle } from '../../core/clock';
import type { RunToEmit, Settlement } from '../../core/outbox';
import { onWriteEnded } from './liveCopies';
import {
	executionStatusByKey,
	n8nCapabilities,
	onRunCreated,
	ranAnyway,
	staticDataWriteState,
	workflowStaticData,
} from './n8nDoor';

/**
 * Runs emitted between two waits for n8n's write of the static data (RunEmitterOptions.chunked).
 * Each emit makes n8n read the workflow and create an execution through its database pool; a whole
 * stored outbox emitted at once (500 runs) waited past the pool's timeout. A write n8n starts after
 * a chunk's emits queues behind their reads in the pool, so waiting for it keeps about two chunks
 * being created at once.
 */
export const EMIT_CHUNK = 10;
/** The longest the emitter waits for n8n to write the static data before emitting the rest anyway. */
const STATIC_DATA_WRITE_WAIT_MS = 60_000;
const STATIC_DATA_CHECK_MS = 5;
/** The Poll Trigger's busyWriteIntervalMs (see RunEmitterOptions). */
export const BUSY_WRITE_INTERVAL_MS = 10_000;

/** What a trigger gives its emitter. */
export interface RunEmitterOptions<R> {
	toItems: (run: R) => INodeExecutionData[];
	/**
	 * Called once per keyed run: `started` when n8n ended it or refused it as a duplicate of one that
	 * exists, also when it was cancelled or timed out after it began; `not_created` only when n8n
	 * could not create it. The emitter waits for a returned promise before it writes the state.
	 */
	settled: (
		run: RunToEmit<R>,
		settlement: Settlement,
		error?: Error,
		/** The ended run n8n resolved the done-promise with; undefined when it refused a duplicate. */
		result?: IRun,
	) => void | Promise<void>;
	/** Reassigns the trigger's state, so that n8n's next write carries the settlements so far. */
	rewrite: () => void;
	/** n8n 1.x (no deduplication keys) only: n8n created the run (see emitOneByOne). */
	created: (run: RunToEmit<R>) => void;
	/**
	 * Whether the trigger has runs to emit next (the Poll Trigger's held runs): their emit writes the
	 * state, so until then settlements are written as while runs are unsettled.
	 */
	moreToEmit?: () => boolean;
	/**
	 * The key of the settlement write when no run of this emitter has a key n8n must refuse (none
	 * executed yet, or all were not run): one fixed key per trigger. The first such write creates one
	 * run with no items (it executes no node after the trigger); n8n refuses the key after that, for
	 * as long as it keeps that execution.
	 */
	writeKey?: string;
	/**
	 * Set: the runs n8n did not run (settled `not_created`) are reported here, together, once the
	 * emitter is idle (every run settled, nothing more to emit) or stopped: one report per burst.
	 */
	reportNotRun?: (runs: Array<{ run: RunToEmit<R>; error?: Error }>) => void;
	/**
	 * Set: while runs of a burst are still unsettled, their settlements so far are written too, this
	 * many ms after the last write n8n made of the state (the poll's, or the last such write), by a
	 * timer: a settlement is in the database at most this long after n8n reported it, and a burst
	 * shorter than this has no write but its poll's and its last settlement write. A crash mid-burst
	 * then leaves the runs that had ended before its last interval recorded as ended, so the Poll
	 * Trigger's ledger of recent starts can tell them from the runs the crash cut short. Only the
	 * ledger's word waits: nothing a crash must not lose does (see busyWriteDue). 0: at every
	 * settlement. Unset: written only once every run has settled.
	 */
	busyWriteIntervalMs?: number;
	/**
	 * Whether runs go out EMIT_CHUNK at a time, n8n writing the state (the settlements so far)
	 * between chunks. A trigger that bounds its runs in flight itself says false: waiting for a
	 * write of the whole static data between chunks only slows it. Unset: true.
	 */
	chunked?: boolean;
}

/** How n8n settled a run's done-promise. */
interface Outcome {
	settlement: Settlement;
	error?: Error;
	/** The ended run, when n8n resolved with one (undefined: refused as a duplicate). */
	result?: IRun;
}

/** n8n's statuses of an execution that is running or has run (not `new`: it may never run). */
const RAN_STATUSES: ReadonlySet<string> = new Set(['running', 'success', 'waiting']);

/**
 * A run n8n said it could not start, asked for by its key before its items go back: in queue mode
 * n8n's main enqueues the job before it runs its hooks, and when they fail (its database pool, under
 * load) it rejects the emit while a worker runs the job all the same (docs/queue-mode.md). An
 * execution under the key that is running or has run counts as started; anything else (none, `new`,
 * failed) as n8n said, so that no item is lost on a guess.
 */
async function ranAfterAll(key: string, said: Outcome): Promise<Outcome> {
	if (said.settlement !== 'not_created') return said;
	try {
		const execution = await executionStatusByKey(key);
		if (execution && RAN_STATUSES.has(execution.status))
			return { settlement: 'started', error: said.error };
	} catch {
		// n8n could not be asked: as it said.
	}
	return said;
}

/**
 * Keyed runs emitted in this n8n process whose done-promise n8n has not settled yet, by deduplication
 * key (keys name the workflow and node), across activations of their trigger. An activation's outbox
 * holds the runs of the activation before it that had not settled (an unpublish and publish, a saved
 * change, keeps the process); those are not emitted again but settled with their runs. Emitting
 * them again is not safe while n8n's production concurrency limit holds a run back: n8n 2.41 keeps
 * the queued run's row with status `new` and takes such a row for a tombstone of a run that never
 * started, so an emit under its key deletes the row and creates another run, while the queued run
 * still executes when its turn comes (execution-persistence.js `reclaimTombstone`,
 * active-executions.js `add`): the item would run twice. After a restart nothing is held here; a
 * `new` row left by the previous process is then n8n's to resume or replace, once.
 */
const inFlight = new Map<string, Promise<Outcome>>();

/** Whether a run under `key` was emitted in this process and n8n has not settled it yet. */
export function emittedInFlight(key: string): boolean {
	return inFlight.has(key);
}

/**
 * Emits a trigger's runs, whose state (with each run in its outbox) was just written to the node's
 * static data, and makes n8n store each settlement while the settled run's execution still exists.
 *
 * What n8n 2.41 does on a trigger's `emit` (trigger-execution-context.factory.js): it calls
 * `saveStaticData(workflow)` without awaiting it, which writes the whole static data whenever
 * `workflow.staticData.__dataChanged` is set (clearing the flag once written), then creates the run
 * unless an execution with the same deduplication key exists; a refused run's done-promise resolves
 * with `undefined`, an ended one's with the run. Emits made while a write is in flight each write
 * everything again, so the first run is emitted alone and the rest once the flag is clear.
 *
 * Why settlements must be written: an outbox entry n8n stored is emitted again at every activation,
 * and n8n refuses it only while the execution with its key exists. Executions are pruned (by default
 * after 14 days or 10,000 executions; a workflow that does not save successful executions has its
 * ended run's row deleted by the next 15-minute hard-delete pass, at once with pruning off). n8n
 * writes static data only on emit and after activation, so a quiet trigger would keep its last
 * burst in the stored outbox for good. So once every run this emitter sent has settled, it writes
 * the state with an empty emit under the key of the run that settled last as existing (never that
 * of a run n8n could not create: its item comes back under that key), which n8n refuses (the
 * execution exists: it just ended, or was just refused as a duplicate) after saving the state. In the
 * rare case that execution was already deleted, n8n creates a run with no items, which executes no
 * node after the trigger: never a repeat of an item. n8n logs each refusal as a warning ("Scheduled
 * execution skipped: duplicate deduplication key"): one per burst.
 *
 * After `stop()` nothing more is emitted: a run the trigger had not emitted yet stays in the stored
 * outbox for the next activation.
 */
export class RunEmitter<R> {
	/** Keys emitted by this emitter whose runs n8n has not settled yet. */
	private readonly unsettled = new Set<string>();
	/** Settlements n8n has not written yet. */
	private unwritten = false;
	/**
	 * The key of the run n8n last ended after executing it, or refused as a duplicate: the write's
	 * empty emit goes under it, and n8n must refuse that emit. Never the key of a run n8n could not
	 * create (its item comes back under that key), nor of one n8n failed or cancelled without
	 * executing it: n8n settles such a run before it writes its end, and a queue-mode worker killed
	 * between picking the job and marking it running leaves its row `new` until then. n8n 2.41 takes
	 * a `new` row for a tombstone (execution-persistence.js `reclaimTombstone`): an emit under its
	 * key deletes the failed run's execution and creates an empty one.
	 */
	private existingKey: string | undefined;
	private emitting: Promise<void> = Promise.resolve();
	private stopped = false;
	/** When an emit of this emitter last had n8n write the state (its static data marked changed). */
	private lastStateWrite = -Infinity;
	/** The busy write waiting for its interval (busyWriteIntervalMs). */
	private busyWriteTimer: TimerHandle | undefined;
	/**
	 * Settlements whose `settled` callback has not returned yet. No settlement write goes out
	 * meanwhile: the state is not whole yet (a History Store's checkpoint being saved), and each
	 * such settlement calls writeSettlementsIfIdle once it is done. Without this, the burst's window
	 * refilled by the last settlement (emitTaken, nothing left to take) found every run settled and
	 * wrote the state, and the last settlement wrote it again: two writes at every burst's end.
	 */
	private settling = 0;
	/** Runs n8n did not run, not reported yet (RunEmitterOptions.reportNotRun). */
	private notRun: Array<{ run: RunToEmit<R>; error?: Error }> = [];
	/**
	 * n8n's write started by this emitter's last emit (made with the static data marked changed),
	 * watched from that emit on (see staticDataWritten); undefined when that emit started none.
	 */
	private pendingWrite: Promise<void> | undefined;

	constructor(
		private readonly context: ITriggerFunctions,
		private readonly options: RunEmitterOptions<R>,
	) {}

	/** Emits the runs after those of earlier calls; resolves once they are all emitted. */
	emit(runs: ReadonlyArray<RunToEmit<R>>): Promise<void> {
		return this.enqueue(async () => await this.emitInOrder(runs));
	}

	/**
	 * After the runs of earlier calls: calls `take`, which may change the trigger's state (the runs it
	 * returns are then in it), and emits what it returned, the first in the same task, so that its
	 * emit has n8n write that state (a write made meanwhile could clear n8n's changed flag first).
	 */
	emitTaken(take: () => ReadonlyArray<RunToEmit<R>>): Promise<void> {
		return this.enqueue(async () => {
			// `take` has changed nothing yet: a write still going needs no second one after it.
			await this.pendingWrite;
			if (!this.stopped) await this.emitInOrder(take());
		});
	}

	private enqueue(task: () => Promise<void>): Promise<void> {
		const done = this.emitting.then(task);
		this.emitting = done.catch(() => undefined);
		return done;
	}

	/** Nothing is emitted after this, not even the write of the last settlements. */
	stop(): void {
		this.stopped = true;
		this.busyWriteTimer?.cancel();
		this.busyWriteTimer = undefined;
		this.reportNotRun();
	}

	private async emitInOrder(runs: ReadonlyArray<RunToEmit<R>>): Promise<void> {
		if (!n8nCapabilities(this.context).deduplicationKeys)
			return await emitOneByOne(this.context, runs, this.options, () => this.stopped);
		let emitted = 0;
		for (let i = 0; i < runs.length && !this.stopped; i++) {
			const entry = runs[i];
			const earlier = entry.key === undefined ? undefined : inFlight.get(entry.key);
			if (earlier) {
				// Emitted by an earlier activation in this process and not settled by n8n yet: it exists
				// (or is being created). Not emitted again: settled when that run is.
				this.unsettled.add(entry.key as string);
				void earlier.then(
					async ({ settlement, error, result }) =>
						await this.onSettled(entry, settlement, error, result),
				);
				continue;
			}
			// Chunked: every EMIT_CHUNK, n8n writes the state (the settlements so far), and the next
			// chunk goes out once that write is done.
			if (emitted > 0 && emitted % EMIT_CHUNK === 0 && (this.options.chunked ?? true))
				this.options.rewrite();
			await this.writeDone(emitted === 0);
			if (this.stopped) return;
			emitted++;
			if (entry.key === undefined) {
				this.noteStateWrite();
				this.context.emit([this.options.toItems(entry.run)]);
				this.pendingWrite = this.writeStartedByEmit();
				continue;
			}
			const key = entry.key;
			this.unsettled.add(key);
			const done = this.context.helpers.createDeferredPromise<IRun>();
			// n8n 2.41 rejects the response promise, and only it, when it fails a run before executing
			// it (workflow-runner.js `failExecution`: a credential the workflow cannot use, a context it
			// cannot establish); the done-promise then resolves with nothing, as for a duplicate.
			const response = this.context.helpers.createDeferredPromise<IExecuteResponsePromiseData>();
			let failedBeforeRun: Error | undefined;
			response.promise.catch((error: Error) => {
				if (!ranAnyway(error)) failedBeforeRun = error;
			});
			const outcome = done.promise
				.then(
					(result): Outcome =>
						failedBeforeRun && !(result && executed(result))
							? { settlement: 'not_created', error: failedBeforeRun }
							: { settlement: 'started', result },
					(error: Error): Outcome => ({
						settlement: ranAnyway(error) && !failedBeforeRun ? 'started' : 'not_created',
						error: failedBeforeRun ?? error,
					}),
				)
				.then(async (said) => await ranAfterAll(key, said));
			inFlight.set(key, outcome);
			void outcome.then(async ({ settlement, error, result }) => {
				if (inFlight.get(key) === outcome) inFlight.delete(key);
				await this.onSettled(entry, settlement, error, result);
			});
			this.noteStateWrite();
			try {
				this.context.emit([this.options.toItems(entry.run)], response, done, key);
			} catch (error) {
				done.reject(error as Error);
			}
			this.pendingWrite = this.writeStartedByEmit();
		}
		this.writeSettlementsIfIdle();
	}

	/**
	 * Before an emit: n8n writes the whole static data on every emit made while it is marked changed,
	 * and clears the mark only once that write is done. So the emit that starts a write goes out,
	 * and the next waits until the write is done. The first emit of a call goes out at once: the
	 * caller has just changed the state for it to carry, and a write still going may not hold that.
	 */
	private async writeDone(first: boolean): Promise<void> {
		if (!first) await this.pendingWrite;
	}

	/** Called right before an emit: if the static data is marked changed, that emit has n8n write it. */
	private noteStateWrite(): void {
		const copy = workflowStaticData(this.context);
		if (copy && staticDataWriteState(copy) === 'changed') this.lastStateWrite = systemClock.now();
	}

	/**
	 * Called right after an emit: the write it started, if the static data is still marked changed
	 * (n8n's write is going), watched from now on.
	 */
	private writeStartedByEmit(): Promise<void> | undefined {
		const copy = workflowStaticData(this.context);
		return copy && staticDataWriteState(copy) === 'changed'
			? staticDataWritten(this.context, () => this.stopped)
			: undefined;
	}

	private async onSettled(
		entry: RunToEmit<R>,
		settlement: Settlement,
		error?: Error,
		result?: IRun,
	) {
		this.unsettled.delete(entry.key as string);
		this.settling++;
		try {
			await this.options.settled(entry, settlement, error, result);
		} finally {
			this.settling--;
		}
		if (settlement === 'not_created') this.notRun.push({ run: entry, error });
		this.unwritten = true;
		if (settlement === 'started' && (result === undefined ? error === undefined : executed(result)))
			this.existingKey = entry.key;
		this.writeSettlementsIfIdle();
	}

	/**
	 * Has n8n write the trigger's state now (as a settlement write), for a change no run carries: a
	 * poll that only remembered what is there.
	 */
	write(): void {
		this.unwritten = true;
		void this.enqueue(async () => this.writeSettlementsIfIdle());
	}

	/**
	 * Once every run has settled, one empty emit that n8n refuses makes it write the state; while
	 * runs are still unsettled, one when busyWriteDue says (a timer waits for it).
	 */
	private writeSettlementsIfIdle(): void {
		if (this.settling > 0) return;
		if (this.unsettled.size === 0 && !this.options.moreToEmit?.()) this.reportNotRun();
		const key = this.existingKey ?? this.options.writeKey;
		if (this.stopped || !this.unwritten || key === undefined) return;
		if ((this.unsettled.size > 0 || this.options.moreToEmit?.()) && !this.busyWriteDue()) return;
		this.busyWriteTimer?.cancel();
		this.busyWriteTimer = undefined;
		this.unwritten = false;
		this.options.rewrite();
		const done = this.context.helpers.createDeferredPromise<IRun>();
		done.promise.catch(() => undefined);
		this.lastStateWrite = systemClock.now();
		try {
			this.context.emit([[]], undefined, done, key);
			this.pendingWrite = this.writeStartedByEmit();
		} catch {
			// Not written now: the next emit or activation writes it.
		}
	}

	/**
	 * Whether the settlements so far are to be written now, runs still unsettled: once
	 * busyWriteIntervalMs has passed since n8n's last write of the state; before that, a timer
	 * calls writeSettlementsIfIdle then. Every such write is a whole static-data write, and n8n
	 * holds the burst's next runs until it is done (emitTaken), so a burst shorter than the interval
	 * has none: its writes are its poll's and its last settlement write, as a burst's must be.
	 *
	 * Why waiting is safe: a settlement not written yet leaves the run in the stored outbox, and the
	 * crash argument is the outbox's (core/outbox.ts, runStage.ts): the next activation emits or
	 * restages the run under its key, and n8n refuses it because the run's execution exists (it was
	 * created before it could settle). The key was remembered in the poll's write, before the run
	 * was emitted: a settlement never remembers a key. What a crash before the busy write costs is
	 * the ledger's word: such a run shows `existed at activation` (its end unknown) instead of
	 * `ended: …`, as a run that ended in the last interval before a crash always did.
	 */
	private busyWriteDue(): boolean {
		const interval = this.options.busyWriteIntervalMs;
		if (interval === undefined) return false;
		const wait = this.lastStateWrite + interval - systemClock.now();
		if (wait <= 0) return true;
		this.busyWriteTimer ??= systemClock.setTimer(() => {
			this.busyWriteTimer = undefined;
			this.writeSettlementsIfIdle();
		}, wait);
		return false;
	}

	private reportNotRun(): void {
		if (this.notRun.length === 0 || !this.options.reportNotRun) return;
		const runs = this.notRun;
		this.notRun = [];
		this.options.reportNotRun(runs);
	}
}

/**
 * Whether n8n executed the run it settled: a node ran (regular mode hands over the run data; queue
 * mode the worker's `lastNodeExecuted`). A run n8n fails without executing it, as when its worker
 * died (workflow-runner.js `processError`), carries no node.
 */
function executed(result: IRun): boolean {
	return result.data?.resultData?.lastNodeExecuted !== undefined;
}

/**
 * Resolves once n8n has written the workflow's static data changes (see emitRuns), or after
 * STATIC_DATA_WRITE_WAIT_MS, which is logged: on n8n 1.x a crash after that can start more than
 * the two runs again that docs/n8n-1.123.md declares.
 */
async function staticDataWritten(
	context: ITriggerFunctions,
	stopped: () => boolean = () => false,
): Promise<void> {
	const root = workflowStaticData(context);
	// No write-ended signal (capability writeEndedSignal): nothing to wait for.
	if (!root || staticDataWriteState(root) === 'unknown') return;
	const started = systemClock.now();
	const deadline = started + STATIC_DATA_WRITE_WAIT_MS;
	let ended = false;
	const cancel = onWriteEnded(root, () => (ended = true));
	while (
		!ended &&
		staticDataWriteState(root) === 'changed' &&
		systemClock.now() < deadline &&
		!stopped()
	) {
		await new Promise<void>((resolve) => systemClock.setTimer(resolve, STATIC_DATA_CHECK_MS));
	}
	cancel();
	if (!ended && !stopped() && staticDataWriteState(root) === 'changed') {
		context.logger.warn(
			`${context.getNode().name}: n8n has not written the trigger's state ${Math.round((systemClock.now() - started) / 1000)} s after the emit; runs go on without waiting for it`,
		);
	}
}

/** How long the emitter waits for n8n 1.x to confirm one run was created before emitting the next. */
const CREATION_WAIT_MS = 30_000;

/**
 * For an n8n without deduplication keys (1.x), which would start a re-emitted run again: an entry
 * must leave the outbox, in the database, as soon as possible after n8n created its run. n8n 1.x
 * says when a run exists only through the done-promise (read through n8nDoor.ts `onRunCreated`).
 * Runs are emitted one at a time: emit, wait
 * for that confirmation and for n8n's write of the state, mark the run settled, reassign the state,
 * emit the next (whose write carries the settlement). A crash can therefore leave at most the run
 * being emitted, and the one before it, recorded as unsettled while they exist: those two are what
 * the next activation can repeat. The last run's settlement rides with the next write n8n makes.
 * Costs one state write per run instead of one per poll.
 */
async function emitOneByOne<R>(
	context: ITriggerFunctions,
	runs: ReadonlyArray<RunToEmit<R>>,
	{ toItems, settled, created, rewrite }: RunEmitterOptions<R>,
	stopped: () => boolean,
): Promise<void> {
	for (let i = 0; i < runs.length && !stopped(); i++) {
		const entry = runs[i];
		if (i > 0) rewrite();
		if (entry.key === undefined) {
			context.emit([toItems(entry.run)]);
			await staticDataWritten(context, stopped);
			continue;
		}
		const done = context.helpers.createDeferredPromise<IRun>();
		let exists = false;
		let confirm = () => {};
		const confirmed = new Promise<void>((resolve) => (confirm = resolve));
		onRunCreated(done, () => {
			exists = true;
			created(entry);
			confirm();
		});
		done.promise.then(
			async (result) => await settled(entry, 'started', undefined, result),
			// Once the run exists, any end is a run that happened.
			async (error: Error) =>
				await settled(entry, exists || ranAnyway(error) ? 'started' : 'not_created', error),
		);
		try {
			context.emit([toItems(entry.run)], undefined, done);
		} catch (error) {
			done.reject(error as Error);
			continue;
		}
		// Watched from the emit on: n8n's write can end before it confirms the run, and a change the
		// trigger makes after that (a poll's write) waits for the next emit, not this one's write.
		const written = staticDataWritten(context, stopped);
		let timer: ReturnType<typeof systemClock.setTimer> | undefined;
		let ended = false;
		await Promise.race([
			confirmed,
			// Refused before it existed (settled not_created): nothing to wait for.
			done.promise.then(
				() => (ended = true),
				() => (ended = true),
			),
			new Promise<void>((resolve) => (timer = systemClock.setTimer(resolve, CREATION_WAIT_MS))),
		]);
		timer?.cancel();
		if (!exists && !ended && !stopped()) {
			// A crash from here on can start this run again: more than the two docs/n8n-1.123.md declares.
			context.logger.warn(
				`${context.getNode().name}: n8n has not confirmed a run ${CREATION_WAIT_MS / 1000} s after its emit; the next run goes out without that confirmation`,
			);
		}
		await written;
	}
	// The last settlement: written with the next write n8n makes (the next emit, or activation).
	if (runs.length > 0) rewrite();
}
