import type { IDataObject, ITriggerFunctions } from 'n8n-workflow';

import { staticDataWriteState, workflowStaticData } from './n8nDoor';

/**
 * Every copy of a workflow's static data that this process activated one of its triggers on, by
 * workflow id. n8n 2.x's publication service re-registers only the triggers whose node changed, each
 * on a new copy of the static data read from the database, while the workflow's other triggers keep
 * theirs; every trigger's emit saves its whole copy, the other triggers' node data included. Writing
 * a trigger's state into every copy still alive keeps another trigger's save from storing an old
 * state of this one, whichever of them was re-registered. Copies are held weakly: a deactivated
 * workflow's copy goes with it.
 *
 * Why this reads past n8n's public node API (through n8nDoor.ts, with emitRuns.ts's wait on the
 * change flag; pinned by liveCopies.test.ts and n8nDoor.test.ts). The node API hands a trigger its own node's static data
 * (`getWorkflowStaticData('node')`, `node:<name>` of its copy) and the workflow's `global` entry,
 * never the copy itself nor another node's entry in it. A design on that API alone (one process-wide
 * latest state per trigger, laid into every node-data object an activation of it was handed, and
 * over the handed one at activation) reaches the copies this trigger was activated on, but not the
 * copy of a trigger re-registered alone: the schedule re-registered on a new copy saves, with each
 * emit, the Poll Trigger's state as the database held it at the re-registration, and no activation
 * of the Poll Trigger was ever handed that copy's `node:Poll` (test/e2e/durableScheduleTrigger.test.ts,
 * "static data written by others", case 2, fails so). Laying the latest over at activation does not
 * repair it either: after a restart, or a leader change in multi-main, the database's state is all
 * there is, and a process's memory of an earlier leadership would be older than it.
 *
 * What this relies on in n8n (the workflow's whole static data, and the change flag n8n clears when
 * its write ends) is read through the door, n8nDoor.ts (`workflowStaticData`, `staticDataWriteState`),
 * with the reasons it holds in n8n 2.41.1 and 1.123; where this n8n shows no such copy (capability
 * `staticDataCopy`), a trigger writes its own node's static data only.
 */
const copiesByWorkflow = new Map<
	string,
	Array<{ copy: WeakRef<IDataObject>; openTriggers: Map<string, number> }>
>();

/**
 * Who waits for n8n to have written a copy of a workflow's static data (emitRuns.ts), by that copy.
 * n8n clears the copy's `__dataChanged` when a write ends, and a trigger's next change sets it again:
 * a waiter that looks at the flag now and then can miss the moment between on a busy event loop
 * (n8n 1.123, 2026-12-02: a poll's write landing there held a burst's next run back for the waiter's
 * full minute). So every change looks first: a clear flag then means n8n's writes have all ended.
 */
const writeWaiters = new WeakMap<IDataObject, Set<() => void>>();

/** Calls `ended` when a trigger's change of this copy finds n8n's writes of it ended; returns the cancel. */
export function onWriteEnded(copy: IDataObject, ended: () => void): () => void {
	const waiters = writeWaiters.get(copy) ?? new Set<() => void>();
	writeWaiters.set(copy, waiters);
	waiters.add(ended);
	return () => void waiters.delete(ended);
}

function beforeChange(copy: IDataObject): void {
	const waiters = writeWaiters.get(copy);
	if (staticDataWriteState(copy) !== 'written' || !waiters) return;
	writeWaiters.delete(copy);
	for (const ended of waiters) ended();
}

/** A trigger activation's way to set its node's static data, in every live copy of the workflow's. */
export interface LiveCopiesWriter {
	/** Sets `key` in the node's static data (`node:<name>`) of this copy and every other live copy. */
	write(key: string, value: IDataObject): void;
	/**
	 * The trigger was closed: its copy is no longer written by others, and its own later writes (a
	 * run n8n settles after the close) reach only its own copy, never the next activation's.
	 */
	close(): void;
}

/**
 * Registers this activation's copy of the workflow's static data and returns the trigger's one way
 * to set its node's state. Without the whole copy (capability `staticDataCopy`, n8nDoor.ts) it
 * writes its own node's static data only. Call it once the activation can no longer be refused: a copy
 * registered by an activation that then fails stays open for this node and is never written by its
 * next activation, so the other triggers' saves store this node's state as it was (issue 26).
 */
export function writerToLiveCopies(context: ITriggerFunctions): LiveCopiesWriter {
	const nodeData = context.getWorkflowStaticData('node');
	const workflowData = workflowStaticData(context);
	if (workflowData === undefined)
		return { write: (key, value) => void (nodeData[key] = value), close: () => {} };
	const workflowId = context.getWorkflow().id ?? 'unsaved';
	const nodeName = context.getNode().name;
	const copies = copiesByWorkflow.get(workflowId) ?? [];
	copiesByWorkflow.set(workflowId, copies);
	// A copy stays registered while any trigger active on it is open (its saves store all nodes' data).
	let own = copies.find((entry) => entry.copy.deref() === workflowData);
	if (!own) copies.push((own = { copy: new WeakRef(workflowData), openTriggers: new Map() }));
	own.openTriggers.set(nodeName, (own.openTriggers.get(nodeName) ?? 0) + 1);
	const nodeKey = `node:${nodeName}`;
	let closed = false;
	return {
		write(key, value) {
			beforeChange(workflowData);
			nodeData[key] = value;
			if (closed) return;
			for (const { copy, openTriggers } of copies) {
				const root = copy.deref();
				// A copy this node is open on belongs to that activation of it: an older one is never
				// pushed a newer one's state, nor the other way round, while both are open.
				if (root === undefined || root === workflowData || openTriggers.has(nodeName)) continue;
				beforeChange(root);
				root[nodeKey] ??= {};
				(root[nodeKey] as IDataObject)[key] = value;
			}
		},
		close() {
			if (closed) return;
			closed = true;
			const left = (own.openTriggers.get(nodeName) ?? 1) - 1;
			if (left > 0) own.openTriggers.set(nodeName, left);
			else own.openTriggers.delete(nodeName);
			if (own.openTriggers.size === 0) copies.splice(copies.indexOf(own), 1);
		},
	};
}
