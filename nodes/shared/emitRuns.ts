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
): Promise<void> {
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
const RAN_ANYWAY = new Set(['ExecutionCancelledError', 'ExecutionNotFoundError', 'MaxStalledCountError']);

function ranAnyway(error: unknown): boolean {
	for (let proto = Object.getPrototypeOf(error ?? {}); proto; proto = Object.getPrototypeOf(proto)) {
		const name = (proto as { constructor?: { name?: string } }).constructor?.name;
		if (name !== undefined && RAN_ANYWAY.has(name)) return true;
	}
	return false;
}

/** Resolves once n8n has written the workflow's static data changes (see emitRuns). */
async function staticDataWritten(context: ITriggerFunctions): Promise<void> {
	const root = (context as unknown as { workflow?: { staticData?: { __dataChanged?: unknown } } }).workflow?.staticData;
	if (typeof root?.__dataChanged !== 'boolean') return;
	const deadline = systemClock.now() + STATIC_DATA_WRITE_WAIT_MS;
	while (root.__dataChanged === true && systemClock.now() < deadline) {
		await new Promise<void>((resolve) => systemClock.setTimer(resolve, STATIC_DATA_CHECK_MS));
	}
}
