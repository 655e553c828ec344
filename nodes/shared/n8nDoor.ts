import { createRequire } from 'node:module';

import type {
	IDataObject,
	IExecuteFunctions,
	ITriggerFunctions,
	IWebhookFunctions,
	NodeExecutionHint,
	NodeOperationError,
} from 'n8n-workflow';

import type { KeepingPlace } from '../../core/roundtrip/earlyCallbacks';

/**
 * The one door to n8n: the only code of this package that reads anything of n8n beyond
 * `n8n-workflow`'s public interfaces (eslint.config.mjs forbids it everywhere else in `nodes/`;
 * docs/architecture.md). Each read is a small typed function here, with the reason it is safe,
 * checked against n8n 2.41.1 and 1.123. What a context offers is probed into one `N8nCapabilities`
 * object; node code branches on its fields, never on n8n's version, and where one is missing
 * it does what the public API allows instead and says so once (`announceMissing`).
 *
 * The capabilities are pinned on the n8n versions this package is tested with: in-process through
 * n8n-core 2.41.1 (n8nDoor.test.ts) and in a real n8n, 2.41.1 and 1.123.81 (test/e2e/n8nContract.test.ts,
 * which reads the object the door logs at debug level).
 */
export interface N8nCapabilities {
	/**
	 * Trigger: the `emit` n8n hands over takes a deduplication key (its fourth parameter, n8n 2.x).
	 * Without (n8n 1.x): runs are started one at a time, each leaving the outbox once n8n confirms it
	 * created it (emitRuns.ts `emitOneByOne`); a crash can start up to two runs again.
	 */
	deduplicationKeys: boolean;
	/**
	 * Trigger: `saveFailedExecution` (n8n 2.x), which records a failed poll or tick as a failed
	 * execution and runs the error workflow. Without (n8n 1.x): the failure goes to n8n's log as an
	 * error, and the trigger's observed state keeps it (errors.ts `saveTriggerFailure`).
	 */
	failedExecutionSaving: boolean;
	/**
	 * Trigger: the workflow's whole static data, the copy n8n saves (`workflow.staticData` of the
	 * trigger context). Without: a trigger writes its own node's static data only (liveCopies.ts), and
	 * another trigger of the workflow, re-registered alone, may store an older state of this one.
	 */
	staticDataCopy: boolean;
	/**
	 * Trigger: the copy's change flag (`__dataChanged`), which n8n clears when its write of the static
	 * data ends: the write-ended signal. Without: the emitter does not wait for n8n's writes between
	 * runs (emitRuns.ts), and a chunk of emits may queue behind n8n's reads of the workflow.
	 */
	writeEndedSignal: boolean;
	/**
	 * Execute and webhook: the execution's custom data (`$execution.customData`): on the node context
	 * (n8n 2.x), or only through the expressions' `$execution` (n8n 1.x). Without: the Round-Trip Wait
	 * does not write its correlation id there (executions cannot be filtered by it), and a wait saved
	 * by version 1 of its record cannot be read.
	 */
	customData: 'context' | 'expressions' | false;
	/**
	 * Execute and webhook: n8n-core's resume honours a stack entry's `metadata.forwardAllOutputs` and
	 * `metadata.resumeError`, and n8n resumes a waiting execution only once. Not probeable (it is
	 * n8n-core's `WorkflowExecute`): all came with the node contexts' `customData` (n8n 2.x), which is
	 * read as the sign. Without (n8n 1.x): the Round-Trip Wait's timeout leaves by Callback, its
	 * request goes out before the wait is saved, and a second callback is refused by the node itself
	 * (within one process).
	 */
	resumeControl: boolean;
	/**
	 * Execute: the execution's lifecycle hooks (`additionalData.hooks.addHandler`), whose
	 * `workflowExecuteAfter` handlers added while a node runs come after n8n's own, which save the
	 * execution. Without: the Round-Trip Wait sends its request at once, before the wait is saved (a
	 * partner calling back at once gets n8n's 409 and retries).
	 */
	executionHooks: boolean;
	/**
	 * Webhook: the run's node stack (`runExecutionData.executionData.nodeExecutionStack`) with the
	 * waiting node's entry, where the Round-Trip Wait keeps its wait. Without: no wait can be read
	 * from it (a callback is refused, the run waits until its timeout), and the node's own failure
	 * notice cannot fail the run.
	 */
	executionStack: boolean;
	/**
	 * Webhook: the execution's context data (`runExecutionData.executionData.contextData`, saved with
	 * the resume), where the Round-Trip Wait logs the signed callbacks its waits accepted. Without: a
	 * signed callback is remembered by this process only (core/roundtrip/replay.ts).
	 */
	executionContextData: boolean;
	/**
	 * Round-Trip Callback: finding executions by their custom data in n8n's database (n8n's own
	 * `ExecutionMetadataRepository`, see `executionsWithCustomData`). Without: the fixed URL finds no
	 * waiting run and answers every authenticated callback 503; partners must use per-wait URLs.
	 */
	executionLookup: boolean;
	/**
	 * Round-Trip Callback: a place in n8n's database for callbacks that come before their run waits
	 * (n8n's own `settings` table, through its `SettingsRepository`; see `keptCallbackPlace`). Without:
	 * such a callback is not kept and is answered the retryable 404 (the partner's retry finds the run).
	 */
	callbackStore: boolean;
}

export type N8nCapability = keyof N8nCapabilities;

/** What the nodes do where a capability is missing, as they say it (once) in n8n's log. */
const WITHOUT: Record<N8nCapability, string> = {
	deduplicationKeys:
		"this n8n's trigger emit takes no deduplication key (n8n 1.x): runs are started one at a time, and a crash or restart can start up to two runs again (docs/n8n-1.123.md)",
	failedExecutionSaving:
		'this n8n gives triggers no saveFailedExecution (n8n 1.x): a failed poll or tick is logged here as an error instead of recorded as a failed execution, and the error workflow does not run',
	staticDataCopy:
		"this n8n does not show the trigger the workflow's whole static data: the state is written to this node's static data only, and another trigger of the workflow re-registered alone may store an older state of this one (docs/guarantees.md)",
	writeEndedSignal:
		"this n8n shows no end of its static-data writes: runs are emitted without waiting for n8n's write between them",
	customData:
		"this n8n offers no custom data to the node: the correlation id is not written to the execution's custom data (executions cannot be filtered by it)",
	resumeControl:
		"this n8n's resume does not honour the node's forwardAllOutputs and resumeError (n8n 1.x): a timeout leaves by Callback (branch on timedOut), the request goes out before the wait is saved, and a second callback is refused by the node within this process only (docs/n8n-1.123.md)",
	executionHooks:
		"this n8n offers no execution lifecycle hooks: the request goes out before the wait is saved, and a partner calling back at once gets n8n's 409 and must retry",
	executionStack:
		"this n8n hands the resume no node stack: a callback cannot find the node's wait and is refused, and the run waits until its timeout",
	executionContextData:
		'this n8n hands the resume no execution context data: a signed callback accepted by an earlier wait of the run is remembered by this process only',
	executionLookup:
		"this n8n does not let the node find executions by their custom data: the fixed callback URL can resume no run and answers 503; use the Round-Trip Wait's per-wait callback URL (docs/round-trip-wait.md)",
	callbackStore:
		'this n8n offers the node no place in its database to keep a callback that comes before its run waits: such a callback is answered 404 and the partner must retry (docs/round-trip-wait.md)',
};

/** What a context is: the capabilities its node needs are those of its kind. */
export type ContextKind = 'trigger' | 'execute' | 'webhook' | 'callback';

/** The capabilities each kind of node context can offer (the others read false there). */
export const CAPABILITIES_OF: Record<ContextKind, readonly N8nCapability[]> = {
	trigger: ['deduplicationKeys', 'failedExecutionSaving', 'staticDataCopy', 'writeEndedSignal'],
	execute: ['customData', 'resumeControl', 'executionHooks'],
	webhook: ['executionStack', 'executionContextData'],
	callback: ['executionLookup', 'callbackStore'],
};

/** A context of n8n-core as this door reads it: n8n-workflow's interface and what lies behind it. */
type Context = ITriggerFunctions | IExecuteFunctions | IWebhookFunctions;

/** Reads a property of a context that n8n-workflow's interface does not name (or that n8n 1.x lacks). */
function internal<T>(context: object, read: (inside: Record<string, unknown>) => T): T | undefined {
	try {
		return read(context as unknown as Record<string, unknown>);
	} catch {
		// n8n-core's contexts throw for some properties where they have nothing (customData on a trigger).
		return undefined;
	}
}

/**
 * What this n8n offers through `context`, probed now. Cheap (a few property reads): call it at
 * activation, or at the start of an execution or webhook call, and keep the object.
 */
export function n8nCapabilities(context: Context): N8nCapabilities {
	const copy = workflowStaticData(context as ITriggerFunctions);
	const directCustomData = isCustomData(internal(context, (c) => c.customData));
	return {
		deduplicationKeys: emitsDeduplicationKeys(context),
		failedExecutionSaving: typeof internal(context, (c) => c.saveFailedExecution) === 'function',
		staticDataCopy: copy !== undefined,
		writeEndedSignal: typeof copy?.__dataChanged === 'boolean',
		customData: directCustomData ? 'context' : customDataOf(context) ? 'expressions' : false,
		resumeControl: directCustomData,
		executionHooks: executionHooksOf(context) !== undefined,
		executionStack: nodeStackOf(context) !== undefined,
		executionContextData: executionDataOf(context) !== undefined,
		executionLookup: executionMetadataRepository() !== undefined,
		callbackStore: settingsRepository() !== undefined,
	};
}

/** Capabilities logged (debug) so far in this process, by context kind: the contract test reads the line. */
const reported = new Set<ContextKind>();
/** Missing capabilities already announced in this process, by workflow, node and capability. */
const announced = new Set<string>();

/**
 * Says once per process, for this workflow's node, which of the capabilities its kind of context
 * needs this n8n lacks and what the node does instead: a warning in n8n's log, and, on a manual
 * execution (Execute step) of an action node, an execution hint shown with its output. Logs the
 * whole capability object once per process and kind at debug level (the contract test's evidence).
 */
export function announceMissing(
	context: Context,
	kind: ContextKind,
	capabilities: N8nCapabilities = n8nCapabilities(context),
): N8nCapabilities {
	if (!reported.has(kind)) {
		reported.add(kind);
		const offered = Object.fromEntries(
			CAPABILITIES_OF[kind].map((name) => [name, capabilities[name]]),
		);
		context.logger.debug(
			`n8n-nodes-durable-triggers: this n8n offers (${kind}) ${JSON.stringify(offered)}`,
		);
	}
	const node = context.getNode().name;
	const missing = CAPABILITIES_OF[kind].filter((name) => capabilities[name] === false);
	const hints: NodeExecutionHint[] = [];
	for (const name of missing) {
		const message = `${node}: ${WITHOUT[name]}`;
		hints.push({ message, type: 'warning', location: 'outputPane' });
		const key = `${context.getWorkflow().id ?? 'unsaved'}\u0000${node}\u0000${name}`;
		if (announced.has(key)) continue;
		announced.add(key);
		context.logger.warn(message);
	}
	if (hints.length > 0 && kind === 'execute' && context.getMode() === 'manual') {
		const add = (context as IExecuteFunctions).addExecutionHints;
		if (typeof add === 'function') add.call(context, ...hints);
	}
	return capabilities;
}

// ---- Triggers ----

/**
 * Whether this n8n's trigger `emit` takes a deduplication key (its fourth parameter, n8n 2.x).
 * n8n 1.x's `emit(data, responsePromise, donePromise)` has none: re-emitting a run it created
 * would start it again. Read from the function n8n handed over, not from a version string.
 */
function emitsDeduplicationKeys(context: Context): boolean {
	const emit = internal(context, (c) => c.emit);
	return typeof emit === 'function' && emit.length >= 4;
}

/** Records a trigger's failure as a failed execution; only where `failedExecutionSaving`. */
export function saveFailedExecution(context: ITriggerFunctions, error: NodeOperationError): void {
	context.saveFailedExecution(error);
}

/**
 * The workflow's whole static data (the object n8n saves), which the node API does not hand out:
 * n8n-core's trigger context keeps the `Workflow` it runs on, whose `staticData` it is. Undefined if
 * a version keeps it elsewhere (capability `staticDataCopy`).
 *
 * What this relies on, read in n8n 2.41.1 (and 1.123): n8n-core's TriggerContext keeps the `Workflow`
 * it runs on as `workflow` (node-execution-context.js, `getWorkflowStaticData(type)` is
 * `this.workflow.getStaticData(type, this.node)`); n8n-workflow's `Workflow` wraps the static data
 * read from the database in an ObservableObject whose `__dataChanged` any write below it sets
 * (workflow.js, observable-object.js); the publication service makes one `Workflow` per activation
 * call, from the database row (workflow-trigger-activator.js `activateInternal`, `createWorkflow`),
 * and saves its static data after registering the triggers; a trigger's `emit` calls
 * `saveStaticData(workflow)`, which writes the whole `workflow.staticData` when the flag is set and
 * clears it once written (trigger-execution-context.factory.js, workflow-static-data.service.js).
 */
export function workflowStaticData(context: ITriggerFunctions): IDataObject | undefined {
	const root = internal(
		context,
		(c) => (c.workflow as { staticData?: unknown } | undefined)?.staticData,
	);
	return root !== null && typeof root === 'object' ? (root as IDataObject) : undefined;
}

/**
 * n8n's write of a copy of the static data (capability `writeEndedSignal`), by its change flag
 * (see workflowStaticData): `changed` while the copy holds a change n8n has not written yet, or is
 * writing (n8n clears the flag when its write ends); `written` once it has; `unknown` when the copy
 * carries no such flag.
 */
export function staticDataWriteState(copy: IDataObject): 'changed' | 'written' | 'unknown' {
	const flag = copy.__dataChanged;
	return flag === true ? 'changed' : flag === false ? 'written' : 'unknown';
}

/**
 * For an n8n without deduplication keys (1.x): calls `created` when n8n says the run of this emit's
 * done-promise exists. n8n 1.x says so only through the done-promise: once `runWorkflow` has created
 * the execution it reads the promise's `resolve` and `reject` to chain them to the run's end
 * (active-workflow-manager.js, `executePromise.then(executionId => …then(donePromise.resolve)…)`),
 * so reading `resolve` is n8n confirming the creation.
 */
export function onRunCreated<T>(done: { resolve: (value: T) => void }, created: () => void): void {
	const resolveDone = done.resolve;
	let confirmed = false;
	Object.defineProperty(done, 'resolve', {
		configurable: true,
		enumerable: true,
		get() {
			if (!confirmed) {
				confirmed = true;
				created();
			}
			return resolveDone;
		},
	});
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

/** Whether n8n rejected a run's done-promise with `error` after the run existed (see RAN_ANYWAY). */
export function ranAnyway(error: unknown): boolean {
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

// ---- Custom data ----

/** An execution's custom data, as n8n's `$execution.customData` offers it. */
export interface CustomData {
	set(key: string, value: string): void;
	get(key: string): string | undefined;
}

/**
 * The execution's custom data, found by what this n8n offers rather than by its version:
 * n8n 2.x gives execute and webhook contexts a `customData` object; n8n 1.x has none there (reading it
 * failed with "Cannot read properties of undefined (reading 'set')") but every node context of 1.x
 * carries the same store as the `$execution.customData` of expressions, in its `additionalKeys`
 * (n8n-core 1.x `NodeExecutionContext.additionalKeys`, built on the run's `resultData.metadata`).
 * Returns undefined when neither exists (capability `customData`).
 */
export function customDataOf(context: Context): CustomData | undefined {
	const direct = internal(context, (c) => c.customData as Partial<CustomData> | undefined);
	if (isCustomData(direct)) return direct;
	const viaExpressions = internal(
		context,
		(c) =>
			(c.additionalKeys as { $execution?: { customData?: Partial<CustomData> } } | undefined)
				?.$execution?.customData,
	);
	if (isCustomData(viaExpressions)) return viaExpressions;
	return undefined;
}

function isCustomData(value: unknown): value is CustomData {
	const candidate = value as Partial<CustomData> | undefined;
	return typeof candidate?.set === 'function' && typeof candidate.get === 'function';
}

// ---- The Round-Trip Wait's execution ----

type WorkflowExecuteAfter = (run: { status?: string; waitTill?: Date }) => Promise<void>;
type Hooks = { addHandler: (name: 'workflowExecuteAfter', handler: WorkflowExecuteAfter) => void };

function executionHooksOf(context: Context): Hooks | undefined {
	const hooks = internal(
		context,
		(c) => (c.additionalData as { hooks?: Partial<Hooks> } | undefined)?.hooks,
	);
	return typeof hooks?.addHandler === 'function' ? (hooks as Hooks) : undefined;
}

/**
 * Runs `handler` when the execution ends or pauses, after n8n's own handlers (which save the
 * execution: a waiting run is saved as waiting by then). n8n gives nodes no public hook for that
 * moment (`onExecutionFinish` skips waiting runs), so this uses the lifecycle hooks it is built on:
 * handlers added while the node runs come after n8n's own (n8n-core 2.41.1 `ExecutionLifecycleHooks`,
 * `additionalData.hooks`; README, "What the node relies on"). Returns false, adding nothing, where
 * this n8n has no such hooks (capability `executionHooks`).
 */
export function afterExecutionSaved(
	context: IExecuteFunctions,
	handler: WorkflowExecuteAfter,
): boolean {
	const hooks = executionHooksOf(context);
	if (!hooks) return false;
	hooks.addHandler('workflowExecuteAfter', handler);
	return true;
}

/** An entry of the run's node stack, as n8n-core keeps it. */
export type StackEntry = { node?: { name?: string }; metadata?: IDataObject };

type ExecutionData = {
	nodeExecutionStack?: StackEntry[];
	contextData?: Record<string, IDataObject>;
};

function executionDataOf(context: Context): ExecutionData | undefined {
	const data = internal(
		context,
		(c) => (c.runExecutionData as { executionData?: ExecutionData } | undefined)?.executionData,
	);
	return data !== null && typeof data === 'object' ? data : undefined;
}

function nodeStackOf(context: Context): StackEntry[] | undefined {
	const stack = executionDataOf(context)?.nodeExecutionStack;
	return Array.isArray(stack) ? stack : undefined;
}

/**
 * The waiting node's entry of the run's stack, as n8n hands it to the webhook (internal to n8n-core):
 * when the node puts the run to wait, n8n puts that very entry back on the stack and saves it with
 * the waiting execution, and hands it back to the node's webhook (`n8n-core` `WorkflowExecute`,
 * `WebhookContext`; n8n-core 1.123's `WebhookContext` hands it as 2.41's does). Its `metadata` is
 * the node's to keep its wait in, and n8n's resume honours its `resumeError` (set by n8n itself for
 * failed sub-workflows): the resumed node fails with it (capability `resumeControl`).
 */
export function waitingStackEntry(context: IWebhookFunctions): StackEntry | undefined {
	const name = context.getNode().name;
	return nodeStackOf(context)?.find((entry) => entry.node?.name === name);
}

/**
 * The execution's context data (`executionData.contextData`, saved with the execution), created if
 * absent. What a webhook adds to it is written by n8n together with the resume (`ActiveExecutions.add`:
 * the conditional update that moves the run out of "waiting" writes this very data), so only the
 * resume that happened is recorded. Undefined where n8n hands the webhook no execution data.
 */
export function executionContextData(
	context: IWebhookFunctions,
): Record<string, IDataObject> | undefined {
	const executionData = executionDataOf(context);
	if (!executionData) return undefined;
	return (executionData.contextData ??= {});
}

// ---- The Round-Trip Callback's lookup ----

/** A row of n8n's `execution_metadata` table (custom data), with its execution and that one's custom data. */
type MetadataRow = {
	executionId: string | number;
	execution?: { status?: string; metadata?: Array<{ key: string; value: string }> };
};
type MetadataRepository = {
	find(options: object): Promise<MetadataRow[]>;
	upsert(rows: object[], options: object): Promise<unknown>;
};

/**
 * One of n8n's repositories (TypeORM), by its class name in `@n8n/db`. n8n gives nodes no way to
 * reach its database, so this reads n8n's own service container: `@n8n/di` and `@n8n/db` resolved
 * from n8n's own entry point (`require.main`, n8n's `bin/n8n` in mains, webhook processes and workers
 * alike), else through the NODE_PATH n8n sets before it loads community packages
 * (`load-nodes-and-credentials.js` `init`), so they are the very modules n8n runs on and
 * `Container.get` hands out its singleton. Another copy of `@n8n/di` nearer the package (a
 * node_modules above the nodes folder) would be another container: only a repository with the
 * methods `methods` on an initialized DataSource is taken. Undefined where none is found.
 */
function n8nRepository<T>(className: string, methods: readonly string[]): T | undefined {
	const anchors = [require.main?.filename, __filename].filter((file) => file !== undefined);
	for (const anchor of anchors) {
		try {
			const load = createRequire(anchor);
			const { Container } = load('@n8n/di') as { Container: { get(type: unknown): unknown } };
			const type = (load('@n8n/db') as Record<string, unknown>)[className];
			const repository = Container.get(type) as Record<string, unknown> & {
				manager?: { connection?: { isInitialized?: boolean } };
			};
			if (
				methods.every((method) => typeof repository?.[method] === 'function') &&
				repository.manager?.connection?.isInitialized
			)
				return repository as T;
		} catch {
			// not n8n's modules from here: the next anchor
		}
	}
	return undefined;
}

/** n8n's repository of execution custom data, `execution_metadata` (capability `executionLookup`). */
function executionMetadataRepository(): MetadataRepository | undefined {
	return n8nRepository<MetadataRepository>('ExecutionMetadataRepository', ['find', 'upsert']);
}

/** An execution found by its custom data: its id, n8n's status, and its whole custom data. */
export interface ExecutionWithCustomData {
	executionId: string;
	status: string;
	keyValues: Record<string, string>;
}

/**
 * The executions whose custom data has `key` = `value` (exact match), with their status and custom
 * data, read now from n8n's database: custom data is saved by n8n's own end-of-run handler, so a run
 * is found from the moment it is saved as waiting. Undefined where this n8n offers no lookup
 * (capability `executionLookup`).
 */
export async function executionsWithCustomData(
	key: string,
	value: string,
): Promise<ExecutionWithCustomData[] | undefined> {
	const repository = executionMetadataRepository();
	if (!repository) return undefined;
	const rows = await repository.find({
		where: { key, value },
		relations: { execution: { metadata: true } },
	});
	return rows.map((row) => ({
		executionId: String(row.executionId),
		status: String(row.execution?.status ?? 'unknown'),
		keyValues: Object.fromEntries(
			(row.execution?.metadata ?? []).map((entry) => [entry.key, entry.value]),
		),
	}));
}

/**
 * Writes custom data of an execution now, as n8n's own `ExecutionMetadataService.save` does (an
 * upsert on execution id and key). n8n writes a run's custom data with the run, except in queue mode,
 * where the worker saves the waiting execution and the main writes its custom data only once it hears
 * the job ended (`execution-lifecycle-hooks.js`, `hookFunctionsSaveWorker` / `getLifecycleHooksForScalingMain`).
 * False where this n8n offers no lookup (capability `executionLookup`).
 */
export async function saveCustomData(
	executionId: string,
	values: Record<string, string>,
): Promise<boolean> {
	const repository = executionMetadataRepository();
	if (!repository) return false;
	const rows = Object.entries(values).map(([key, value]) => ({ executionId, key, value }));
	await repository.upsert(rows, { conflictPaths: { executionId: true, key: true } });
	return true;
}

// ---- The Round-Trip Callback's kept callbacks ----

type SettingsRepository = {
	createQueryBuilder(alias: string): {
		select(
			selection: string,
			alias: string,
		): {
			where(
				condition: string,
				parameters: object,
			): { getRawMany(): Promise<Array<{ key: string }>> };
		};
	};
	insert(row: object): Promise<unknown>;
	findOneBy(where: object): Promise<{ value: string } | null>;
	delete(criteria: object | string[]): Promise<{ affected?: number | null }>;
};

/** n8n's repository of its `settings` table (key, value, loadOnStartup) (capability `callbackStore`). */
function settingsRepository(): SettingsRepository | undefined {
	return n8nRepository<SettingsRepository>('SettingsRepository', [
		'createQueryBuilder',
		'insert',
		'findOneBy',
		'delete',
	]);
}

/**
 * Where the Round-Trip Callback keeps callbacks that come before their run waits, for the wait that
 * claims them (core/roundtrip/earlyCallbacks.ts): rows of n8n's `settings` table, the key-value table
 * n8n's own modules keep their state in, under keys of their own (`durableTriggers.keptCallback.…`,
 * `loadOnStartup` false). What this relies on, read in n8n 2.41.1 and 1.123.81 (`@n8n/db`): the table
 * exists in every database n8n runs on (migration `CreateUserManagement`: `key` the primary key, at
 * most 255 characters on PostgreSQL and MySQL, `value` TEXT); n8n reads its rows only by its own keys
 * and prefixes (`SettingsRepository.findByKey`, `findByKeyPrefix`; `loadOnStartup` is read nowhere);
 * and a DELETE reports the rows it removed (`affected`, from SQLite's `changes` and PostgreSQL's
 * `rowCount` in `@n8n/typeorm`; n8n 2.41's own `SettingsRepository.claimKey` relies on the same), so
 * of two processes taking one row, one gets it; and `key` is the primary key, so of two processes
 * adding one key, one does (a claim's lease, the fixed URL's replay memory). Shared by every n8n process of the instance and kept
 * across restarts, as the database is. Undefined where this n8n offers no such repository.
 */
export function keptCallbackPlace(): KeepingPlace | undefined {
	const repository = settingsRepository();
	if (!repository) return undefined;
	return {
		async keys(prefix) {
			const rows = await repository
				.createQueryBuilder('setting')
				.select('setting.key', 'key')
				.where('setting.key LIKE :prefix', { prefix: `${prefix}%` })
				.getRawMany();
			return rows.map((row) => row.key);
		},
		async read(key) {
			return (await repository.findOneBy({ key }))?.value;
		},
		async add(key, value) {
			try {
				await repository.insert({ key, value, loadOnStartup: false });
				return true;
			} catch (error) {
				// The primary key: of concurrent inserts of one key, one succeeds.
				if (await repository.findOneBy({ key })) return false;
				// The door names no node: the Round-Trip nodes answer this as a 500 (the partner retries).
				// eslint-disable-next-line @n8n/community-nodes/require-node-api-error
				throw error;
			}
		},
		async take(key, value) {
			const { affected } = await repository.delete(value === undefined ? { key } : { key, value });
			return affected === 1;
		},
		async remove(keys) {
			if (keys.length > 0) await repository.delete(keys);
		},
	};
}

/**
 * n8n's status now of the execution it holds under a trigger's deduplication key (n8n 2.x keeps the
 * key in a unique column of its executions table, `ExecutionEntity.deduplicationKey`), read from
 * n8n's `ExecutionRepository`: for a run n8n refused as a duplicate, whose done-promise says nothing
 * of it (`trigger-execution-context.factory.js`). After a kill -9, n8n's startup recovery has ended
 * the runs the kill cut short (`crashed`, or as its event log says) before it activates the
 * triggers. Undefined: no execution has the key (pruned), or this n8n cannot be asked
 * (capability `executionLookup`).
 */
export async function executionStatusByKey(
	deduplicationKey: string,
): Promise<{ status: string } | undefined> {
	type ExecutionRepository = {
		findOne(options: object): Promise<{ status?: string } | null>;
	};
	const repository = n8nRepository<ExecutionRepository>('ExecutionRepository', ['findOne']);
	if (!repository) return undefined;
	const execution = await repository.findOne({
		where: { deduplicationKey },
		select: { id: true, status: true },
	});
	return execution ? { status: String(execution.status ?? 'unknown') } : undefined;
}

/** For tests: forget what was announced and logged in this process. */
export function forgetAnnouncements(): void {
	reported.clear();
	announced.clear();
}
