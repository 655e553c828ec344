import type { INodeExecutionData, IRun, ITriggerFunctions } from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import type { Settlement } from '../../core/outbox';

/** One run to emit: `key` is its n8n deduplication key (none: nothing to refuse or settle). */
export interface RunToEmit<R> {
	key: string | undefined;
	run: R;
}

/** The longest the emitter waits for n8n to write the static data before emitting the rest anyway. */
const STATIC_DATA_WRITE_WAIT_MS = 60_000;
const STATIC_DATA_CHECK_MS = 5;

/**
 * Emits runs whose state was just written to the node's static data, so that n8n writes that state
 * once, not once per run.
 *
 * What n8n 2.41 does on a trigger's `emit` (trigger-execution-context.factory.ts): it calls
 * `saveStaticData(workflow)` without awaiting it, and that writes the whole static data whenever
 * `workflow.staticData.__dataChanged` is set, clearing the flag only when the write has finished.
 * Emits made while a write is in flight each write everything again, so N runs emitted at once
 * cost N full writes. The first run is therefore emitted alone, and the rest once the flag is clear
 * (the context's `workflow` is n8n-core's public `NodeExecutionContext.workflow`; without it, the
 * runs are emitted at once and cost more writes, never correctness).
 *
 * `settled` is called once per keyed run: `started` when n8n ended it or refused it as a duplicate
 * of one that exists, also when it was cancelled or timed out after it began; `not_created` only
 * when n8n could not create it.
 */
export async function emitRuns<R>(
	context: ITriggerFunctions,
	runs: ReadonlyArray<RunToEmit<R>>,
	toItems: (run: R) => INodeExecutionData[],
	settled: (run: RunToEmit<R>, settlement: Settlement, error?: Error) => void,
	withoutKeys?: WithoutDeduplicationKeys<R>,
): Promise<void> {
	if (withoutKeys && !emitsDeduplicationKeys(context))
		return await emitOneByOne(context, runs, toItems, settled, withoutKeys);
	for (let i = 0; i < runs.length; i++) {
		if (i === 1) await staticDataWritten(context);
		const entry = runs[i];
		if (entry.key === undefined) {
			context.emit([toItems(entry.run)]);
			continue;
		}
		const done = context.helpers.createDeferredPromise<IRun>();
		done.promise.then(
			() => settled(entry, 'started'),
			(error: Error) => settled(entry, ranAnyway(error) ? 'started' : 'not_created', error),
		);
		try {
			context.emit([toItems(entry.run)], undefined, done, entry.key);
		} catch (error) {
			done.reject(error as Error);
		}
	}
}

/**
 * Errors n8n rejects a run's done-promise with after the run existed: it was cancelled (by a user,
 * its timeout, or shutdown), or it had already ended and left the active executions when n8n looked
 * it up, or (queue mode) its job stalled because the worker running it died. Anything else happened
 * before n8n created the run. Matched by class name, as the classes this package would import are
 * not the instances n8n loaded.
 *
 * Queue mode, n8n 2.41 (workflow-runner.js `enqueueExecution`, `processError`): the main settles the
 * done-promise when the worker reports the job finished. When a worker dies mid-run, Bull fails the
 * job once its lock expires (n8n sets maxStalledCount 0, so it is never run again); the main records
 * the execution as failed with MaxStalledCountError and resolves the done-promise with that failed
 * run. A rejection with that class is handled the same way should a later n8n pass it on.
 */
const RAN_ANYWAY = new Set([
	'ExecutionCancelledError',
	'ExecutionNotFoundError',
	'MaxStalledCountError',
]);

function ranAnyway(error: unknown): boolean {
	for (
		let proto = Object.getPrototypeOf(error ?? {});
		proto;
		proto = Object.getPrototypeOf(proto)
	) {
		const name = (proto as { constructor?: { name?: string } }).constructor?.name;
		if (name !== undefined && RAN_ANYWAY.has(name)) return true;
	}
	return false;
}

/** Resolves once n8n has written the workflow's static data changes (see emitRuns). */
async function staticDataWritten(context: ITriggerFunctions): Promise<void> {
	const root = (context as unknown as { workflow?: { staticData?: { __dataChanged?: unknown } } })
		.workflow?.staticData;
	if (typeof root?.__dataChanged !== 'boolean') return;
	const deadline = systemClock.now() + STATIC_DATA_WRITE_WAIT_MS;
	while (root.__dataChanged === true && systemClock.now() < deadline) {
		await new Promise<void>((resolve) => systemClock.setTimer(resolve, STATIC_DATA_CHECK_MS));
	}
}

/**
 * Whether this n8n's trigger `emit` takes a deduplication key (its fourth parameter, n8n 2.x).
 * n8n 1.x's `emit(data, responsePromise, donePromise)` has none: re-emitting a run it created
 * would start it again. Read from the function n8n handed over, not from a version string.
 */
export function emitsDeduplicationKeys(context: ITriggerFunctions): boolean {
	return typeof context.emit === 'function' && context.emit.length >= 4;
}

/** What the trigger does for an n8n without deduplication keys (see emitOneByOne). */
export interface WithoutDeduplicationKeys<R> {
	/** n8n created the run: it leaves the outbox now (in memory; `rewrite` makes n8n see it). */
	created: (run: RunToEmit<R>) => void;
	/** Reassigns the trigger's state, so the next write n8n makes carries the settlements so far. */
	rewrite: () => void;
}

/** How long the emitter waits for n8n 1.x to confirm one run was created before emitting the next. */
const CREATION_WAIT_MS = 30_000;

/**
 * For an n8n without deduplication keys (1.x), which would start a re-emitted run again: an entry
 * must leave the outbox, in the database, as soon as possible after n8n created its run. n8n 1.x
 * says when a run exists only through the done-promise: once `runWorkflow` has created the
 * execution it reads the promise's `resolve` and `reject` to chain them to the run's end
 * (active-workflow-manager.js, `executePromise.then(executionId => …then(donePromise.resolve)…)`),
 * so reading `resolve` is n8n confirming the creation. Runs are emitted one at a time: emit, wait
 * for that confirmation and for n8n's write of the state, mark the run settled, reassign the state,
 * emit the next (whose write carries the settlement). A crash can therefore leave at most the run
 * being emitted, and the one before it, recorded as unsettled while they exist: those two are what
 * the next activation can repeat. The last run's settlement rides with the next write n8n makes.
 * Costs one state write per run instead of one per poll.
 */
async function emitOneByOne<R>(
	context: ITriggerFunctions,
	runs: ReadonlyArray<RunToEmit<R>>,
	toItems: (run: R) => INodeExecutionData[],
	settled: (run: RunToEmit<R>, settlement: Settlement, error?: Error) => void,
	{ created, rewrite }: WithoutDeduplicationKeys<R>,
): Promise<void> {
	for (let i = 0; i < runs.length; i++) {
		const entry = runs[i];
		if (i > 0) rewrite();
		if (entry.key === undefined) {
			context.emit([toItems(entry.run)]);
			await staticDataWritten(context);
			continue;
		}
		const done = context.helpers.createDeferredPromise<IRun>();
		let exists = false;
		let confirm = () => {};
		const confirmed = new Promise<void>((resolve) => (confirm = resolve));
		const resolveDone = done.resolve;
		Object.defineProperty(done, 'resolve', {
			configurable: true,
			enumerable: true,
			get() {
				if (!exists) {
					exists = true;
					created(entry);
					confirm();
				}
				return resolveDone;
			},
		});
		done.promise.then(
			() => settled(entry, 'started'),
			// Once the run exists, any end is a run that happened.
			(error: Error) =>
				settled(entry, exists || ranAnyway(error) ? 'started' : 'not_created', error),
		);
		try {
			context.emit([toItems(entry.run)], undefined, done);
		} catch (error) {
			done.reject(error as Error);
			continue;
		}
		let timer: ReturnType<typeof systemClock.setTimer> | undefined;
		await Promise.race([
			confirmed,
			new Promise<void>((resolve) => (timer = systemClock.setTimer(resolve, CREATION_WAIT_MS))),
		]);
		timer?.cancel();
		await staticDataWritten(context);
	}
	// The last settlement: written with the next write n8n makes (the next emit, or activation).
	if (runs.length > 0) rewrite();
}
