/**
 * Runs this package's node files in-process through n8n-core's real execution contexts
 * (`TriggerContext`, `ExecuteContext`, `WebhookContext`) on a real n8n-workflow `Workflow`: parameters
 * are read as n8n reads them (defaults filled in by `Workflow`, expressions resolved, values checked
 * against the node's description), static data is the workflow's observable static data, HTTP goes
 * through n8n-core's request helpers, custom data through its execution custom data.
 *
 * What stands in for the rest of n8n is small and named here: the trigger's `emit` and
 * `saveFailedExecution` (n8n's are in its CLI package, not in n8n-core) are recorded; on emit the
 * static data n8n would save is snapshotted and its change flag cleared, as n8n 2.41's emit does
 * (docs/guarantees.md, "What the triggers rely on in n8n"); credentials come from a map. Nothing here creates
 * executions, applies deduplication keys, saves to a database or resumes runs: those are n8n's, and
 * are tested end to end in `test/e2e/`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
	type ICredentialDataDecryptedObject,
	type IDataObject,
	type IExecuteData,
	type INode,
	type INodeExecutionData,
	type INodeType,
	type INodeTypes,
	type IRun,
	type IRunExecutionData,
	type ITriggerFunctions,
	type ITriggerResponse,
	type IWebhookFunctions,
	type IWebhookResponseData,
	type IWorkflowExecuteAdditionalData,
	type NodeExecutionHint,
	type WorkflowExecuteMode,
	Workflow,
} from 'n8n-workflow';

/** n8n's deferred promise, as `helpers.createDeferredPromise` makes it. */
type IDeferredPromise<T> = ReturnType<ITriggerFunctions['helpers']['createDeferredPromise']> & {
	promise: Promise<T>;
};
type Request = ReturnType<IWebhookFunctions['getRequestObject']>;
type Response = ReturnType<IWebhookFunctions['getResponseObject']>;

// n8n-core's InstanceSettings reads (and creates) `<N8N_USER_FOLDER>/.n8n/config` on first use:
// a folder of this test process's own, never the user's home. Quiet logs unless asked for.
if (process.env.N8N_USER_FOLDER === undefined) {
	const folder = mkdtempSync(join(tmpdir(), 'durable-triggers-n8n-core-'));
	process.env.N8N_USER_FOLDER = folder;
	// Loaded from a test file: removed when that file's tests have run.
	afterAll(() => rmSync(folder, { recursive: true, force: true }));
}
process.env.N8N_LOG_LEVEL ??= 'silent';
process.env.N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS ??= 'false';

// Loaded after the environment above is set (n8n-core reads it when its services are first created).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const core = require('n8n-core') as typeof import('n8n-core');

export const PACKAGE = 'n8n-nodes-durable-triggers';
export const WORKFLOW_ID = 'wf-1';
const NODE_ID = 'node-1';

type NodeClass = new () => INodeType;

/** Changes the context a node is run with (see `without`); the identity by default. */
type Wrap = <C extends object>(context: C) => C;

/** n8n's capabilities as the door (nodes/shared/n8nDoor.ts) probes them. */
export type Capability =
	| 'deduplicationKeys'
	| 'failedExecutionSaving'
	| 'staticDataCopy'
	| 'writeEndedSignal'
	| 'customData'
	| 'resumeControl'
	| 'executionHooks'
	| 'executionStack'
	| 'executionContextData';

/**
 * A context as an n8n without `removed` would hand it over: the real n8n-core context behind a proxy
 * that hides (or, for the emit, narrows) what the door probes. The context's own methods still run
 * on the real context.
 */
export function without(...removed: Capability[]): Wrap {
	return <C extends object>(real: C): C => {
		const target = real as Record<string | symbol, unknown>;
		const hidden = new Set<string | symbol>();
		const replaced = new Map<string | symbol, unknown>();
		if (removed.includes('deduplicationKeys')) {
			const emit = target.emit as (...args: unknown[]) => void;
			// n8n 1.x's emit(data, responsePromise, donePromise): three parameters.
			replaced.set('emit', (data: unknown, response: unknown, done: unknown) =>
				emit.call(real, data, response, done),
			);
		}
		if (removed.includes('failedExecutionSaving')) hidden.add('saveFailedExecution');
		if (removed.includes('staticDataCopy')) hidden.add('workflow');
		else if (removed.includes('writeEndedSignal')) {
			const workflow = target.workflow as { staticData: IDataObject };
			const staticData = hide(workflow.staticData, ['__dataChanged']);
			replaced.set(
				'workflow',
				new Proxy(workflow, {
					get: (inner, property) =>
						property === 'staticData' ? staticData : Reflect.get(inner, property),
				}),
			);
		}
		if (removed.includes('customData')) hidden.add('customData').add('additionalKeys');
		if (removed.includes('resumeControl')) hidden.add('customData');
		if (removed.includes('executionHooks')) hidden.add('additionalData');
		if (removed.includes('executionContextData')) hidden.add('runExecutionData');
		else if (removed.includes('executionStack')) {
			const run = target.runExecutionData as { executionData: object };
			replaced.set('runExecutionData', {
				...run,
				executionData: hide(run.executionData, ['nodeExecutionStack']),
			});
		}
		return new Proxy(real, {
			get(inner, property) {
				if (hidden.has(property)) return undefined;
				if (replaced.has(property)) return replaced.get(property);
				const value = Reflect.get(inner, property, inner);
				return typeof value === 'function' ? (value as Function).bind(inner) : value;
			},
			has: (inner, property) => !hidden.has(property) && Reflect.has(inner, property),
		});
	};
}

/** `object` with `keys` hidden; everything else read and written through to it. */
function hide<T extends object>(object: T, keys: string[]): T {
	return new Proxy(object, {
		get: (inner, property) =>
			keys.includes(String(property)) ? undefined : Reflect.get(inner, property),
		set: (inner, property, value) => Reflect.set(inner, property, value),
		has: (inner, property) => !keys.includes(String(property)) && Reflect.has(inner, property),
	});
}

/** The node types n8n would load from this package (and nothing else). */
function nodeTypesOf(...classes: NodeClass[]): INodeTypes {
	const byName = new Map<string, INodeType>();
	for (const Class of classes) {
		const instance = new Class();
		byName.set(`${PACKAGE}.${instance.description.name}`, instance);
	}
	const get = (name: string) => {
		const type = byName.get(name);
		if (!type) throw new Error(`unknown node type ${name}`);
		return type;
	};
	return {
		getByName: get,
		getByNameAndVersion: get,
		getKnownTypes: () => ({}),
	};
}

export interface NodeSetup {
	/** The node's parameters as the editor stores them; `Workflow` fills in the defaults. */
	parameters: IDataObject;
	name?: string;
	typeVersion?: number;
	/** Credentials by type: the node gets a reference to each, `getCredentials` returns the data. */
	credentials?: Record<string, ICredentialDataDecryptedObject>;
	/** The names the node's credential references carry (by type); default `My <type>`. */
	credentialNames?: Record<string, string>;
	/** The workflow's static data as n8n loaded it (kept by reference: the test can read it after). */
	staticData?: IDataObject;
	timezone?: string;
	/**
	 * Default WORKFLOW_ID. The nodes keep some things per workflow and node across activations in
	 * the process (runs n8n has not settled, the last state written): tests that must not meet
	 * another test's give each their own id.
	 */
	workflowId?: string;
	/**
	 * Where the trigger's failures (failed executions, `emitError`) are recorded; default a new list,
	 * the returned TriggerRun's. Given, it also holds those of an activation that was refused.
	 */
	failures?: Error[];
}

function makeWorkflow(Class: NodeClass, setup: NodeSetup): { workflow: Workflow; node: INode } {
	const type = new Class().description;
	const versions = Array.isArray(type.version) ? type.version : [type.version];
	const node: INode = {
		id: NODE_ID,
		name: setup.name ?? type.defaults.name ?? type.displayName,
		type: `${PACKAGE}.${type.name}`,
		typeVersion: setup.typeVersion ?? type.defaultVersion ?? versions[versions.length - 1],
		position: [0, 0],
		parameters: structuredClone(setup.parameters) as INode['parameters'],
		credentials: Object.fromEntries(
			Object.keys(setup.credentials ?? {}).map((credentialType) => [
				credentialType,
				{
					id: `cred-${credentialType}`,
					name: setup.credentialNames?.[credentialType] ?? `My ${credentialType}`,
				},
			]),
		),
	};
	const workflow = new Workflow({
		id: setup.workflowId ?? WORKFLOW_ID,
		name: 'in-process',
		nodes: [node],
		connections: {},
		active: true,
		nodeTypes: nodeTypesOf(Class),
		staticData: setup.staticData,
		settings: { executionOrder: 'v1', ...(setup.timezone && { timezone: setup.timezone }) },
	});
	return { workflow, node: workflow.getNode(node.name)! };
}

/** The parts of n8n's per-run data the contexts read; credentials come from the setup's map. */
function additionalData(
	setup: NodeSetup,
	extra: Partial<IWorkflowExecuteAdditionalData> = {},
): IWorkflowExecuteAdditionalData {
	const credentialsHelper = {
		getDecrypted: async (_data: unknown, _node: unknown, type: string) => {
			const found = setup.credentials?.[type];
			if (!found) throw new Error(`no credential of type ${type} in the test`);
			return structuredClone(found);
		},
		getParentTypes: () => [],
		isCredentialUsableByNode: () => true,
		authenticate: async (_credentials: unknown, _type: string, options: unknown) => options,
		preAuthentication: async () => undefined,
		getCredentialsProperties: () => [],
		updateCredentials: async () => undefined,
		updateCredentialsOauthTokenData: async () => undefined,
	};
	return {
		executionId: 'exec-1',
		credentialsHelper,
		restApiUrl: 'http://127.0.0.1:5678/rest',
		instanceBaseUrl: 'http://127.0.0.1:5678/',
		formWaitingBaseUrl: 'http://127.0.0.1:5678/form-waiting',
		webhookBaseUrl: 'http://127.0.0.1:5678/webhook',
		webhookWaitingBaseUrl: 'http://127.0.0.1:5678/webhook-waiting',
		webhookTestBaseUrl: 'http://127.0.0.1:5678/webhook-test',
		variables: {},
		...extra,
	} as unknown as IWorkflowExecuteAdditionalData;
}

// ---- Triggers ----

/** One `emit` as n8n received it, with the static data its save would have written. */
export interface Emitted {
	items: INodeExecutionData[][];
	done?: IDeferredPromise<IRun>;
	deduplicationKey?: string;
	/** A copy of the workflow's static data when n8n would have saved it for this emit; undefined: no change to save. */
	saved?: IDataObject;
}

/**
 * A run as n8n settles an emit's done-promise when the run has ended: it executed the trigger node
 * (regular mode hands over the run data, queue mode the worker's `lastNodeExecuted`).
 */
export function endedRun(): IRun {
	return {
		status: 'success',
		mode: 'trigger',
		startedAt: new Date(),
		data: { resultData: { runData: {}, lastNodeExecuted: 'Trigger' } },
	} as IRun;
}

export interface TriggerRun {
	response: ITriggerResponse;
	emitted: Emitted[];
	failures: Error[];
	staticData: IDataObject;
	workflow: Workflow;
	/** What the node logged as warnings. */
	warnings: string[];
	/** What the node logged at level info. */
	infos: string[];
	close(): Promise<void>;
}

/**
 * Activates a trigger node (`mode` trigger, or manual for "Execute step") through n8n-core's
 * `TriggerContext` and resolves with what it returned; its emits keep being recorded until closed.
 * Rejects with the node's activation error.
 */
export async function activateTrigger(
	Class: NodeClass,
	setup: NodeSetup,
	{
		mode = 'trigger',
		wrap = (context) => context,
	}: { mode?: WorkflowExecuteMode; wrap?: Wrap } = {},
): Promise<TriggerRun> {
	const { workflow, node } = makeWorkflow(Class, setup);
	const emitted: Emitted[] = [];
	const failures: Error[] = setup.failures ?? [];
	const warnings: string[] = [];
	const infos: string[] = [];
	const root = workflow.staticData as IDataObject & { __dataChanged?: boolean };
	// n8n 2.41's emit takes four parameters (the fourth, the deduplication key); the node reads that arity.
	const emit = (
		items: INodeExecutionData[][],
		_responsePromise?: unknown,
		done?: IDeferredPromise<IRun>,
		deduplicationKey?: string,
	) => {
		let saved: IDataObject | undefined;
		if (root.__dataChanged === true) {
			saved = snapshot(root);
			root.__dataChanged = false;
		}
		emitted.push({ items, done, deduplicationKey, saved });
	};
	const context = new core.TriggerContext(
		workflow,
		node,
		additionalData(setup),
		mode,
		mode === 'manual' ? 'manual' : 'activate',
		emit,
		(error: Error) => failures.push(error),
		(error: Error) => failures.push(error),
	);
	const warn = jest.spyOn(context.logger, 'warn').mockImplementation((message: string) => {
		warnings.push(message);
	});
	const info = jest.spyOn(context.logger, 'info').mockImplementation((message: string) => {
		infos.push(message);
	});
	let response: ITriggerResponse;
	try {
		response = (await Class.prototype.trigger!.call(wrap(context))) ?? {};
	} catch (error) {
		warn.mockRestore();
		info.mockRestore();
		throw error;
	}
	return {
		response,
		emitted,
		failures,
		staticData: workflow.staticData,
		workflow,
		warnings,
		infos,
		async close() {
			await response.closeFunction?.();
			warn.mockRestore();
			info.mockRestore();
		},
	};
}

/**
 * A bare `TriggerContext` for the node, with the given `emit` (e.g. n8n 1.x's three-parameter one)
 * and failures dropped: for tests of helpers the node files share (nodes/shared/emitRuns.ts).
 */
export function triggerContext(
	Class: NodeClass,
	setup: NodeSetup,
	emit: ITriggerFunctions['emit'],
): ITriggerFunctions & { workflow: Workflow } {
	const { workflow, node } = makeWorkflow(Class, setup);
	const ignore = () => undefined;
	return new core.TriggerContext(
		workflow,
		node,
		additionalData(setup),
		'trigger',
		'activate',
		emit,
		ignore,
		ignore,
	);
}

/** The static data without n8n's change flag, as plain JSON (what n8n writes). */
function snapshot(data: IDataObject): IDataObject {
	return JSON.parse(JSON.stringify(data)) as IDataObject;
}

// ---- Actions ----

export interface ExecuteRun {
	output: INodeExecutionData[][];
	/** The run's custom data after the node ran (`$execution.customData`). */
	customData: Record<string, string>;
	/** The node's own `executeData`, as n8n would keep it for a waiting node. */
	executeData: IExecuteData;
	/** When the node put the run to wait: until when. */
	waitTill?: Date;
	/** What the node logged as warnings. */
	warnings: string[];
	/** The execution hints the node added (shown with its output on Execute step). */
	hints: NodeExecutionHint[];
}

/** Runs a node's `execute` through n8n-core's `ExecuteContext` on `input`. Rejects with the node's error. */
export async function executeNode(
	Class: NodeClass,
	setup: NodeSetup,
	input: INodeExecutionData[] = [{ json: {} }],
	{ wrap = (context) => context, hooks = false }: { wrap?: Wrap; hooks?: boolean } = {},
): Promise<ExecuteRun> {
	const { workflow, node } = makeWorkflow(Class, setup);
	const runExecutionData = newRunExecutionData();
	const executeData: IExecuteData = { node, data: { main: [input] }, source: null };
	let waitTill: Date | undefined;
	const context = new core.ExecuteContext(
		workflow,
		node,
		additionalData(setup, {
			setExecutionStatus: () => undefined,
			sendDataToUI: () => undefined,
			// n8n-core's own lifecycle hooks, as n8n's workflow runner hands them to a run; nobody runs them here.
			...(hooks && {
				hooks: new core.ExecutionLifecycleHooks('manual', 'exec-1', {
					id: workflow.id,
					name: workflow.name,
					nodes: [node],
					connections: {},
					active: true,
					activeVersionId: null,
					isArchived: false,
					createdAt: new Date(),
					updatedAt: new Date(),
				} as never),
			}),
		}),
		'manual',
		runExecutionData,
		0,
		input,
		{ main: [input] },
		executeData,
		[],
	);
	// n8n's WorkflowExecute records this for the run; here it is recorded for the test.
	context.putExecutionToWait = async (until: Date) => {
		waitTill = until;
	};
	const warn = jest.spyOn(context.logger, 'warn').mockImplementation((message: string) => {
		warnings.push(message);
	});
	const warnings: string[] = [];
	let output: INodeExecutionData[][];
	try {
		output = (await Class.prototype.execute!.call(wrap(context))) as INodeExecutionData[][];
	} finally {
		warn.mockRestore();
	}
	return {
		output,
		warnings,
		hints: (context as unknown as { hints: NodeExecutionHint[] }).hints,
		customData: { ...(runExecutionData.resultData.metadata ?? {}) } as Record<string, string>,
		executeData,
		waitTill,
	};
}

function newRunExecutionData(customData: Record<string, string> = {}): IRunExecutionData {
	return {
		version: 1,
		startData: {},
		resultData: { runData: {}, metadata: { ...customData } },
		executionData: {
			contextData: {},
			nodeExecutionStack: [],
			metadata: {},
			waitingExecution: {},
			waitingExecutionSource: {},
		},
	} as unknown as IRunExecutionData;
}

// ---- Webhooks (a waiting node's resume call) ----

export interface WebhookCall {
	method?: string;
	headers?: Record<string, string>;
	query?: Record<string, string>;
	/** The raw body as sent; parsed as JSON for `body` when it is JSON. */
	rawBody?: string;
}

export interface WebhookAnswer {
	/** What the node returned to n8n. */
	result: IWebhookResponseData;
	/** What the node answered itself (status and JSON body), if it did. */
	status?: number;
	body?: unknown;
	/** What the node logged as warnings. */
	warnings: string[];
}

/**
 * Calls a waiting node's `webhook` through n8n-core's `WebhookContext`, as n8n's resume URL does, on
 * the run `waiting` left (its custom data, and the node's own stack entry, which n8n saves with a
 * waiting run and hands to the webhook).
 */
export async function callWebhook(
	Class: NodeClass,
	setup: NodeSetup,
	call: WebhookCall,
	waiting: Pick<ExecuteRun, 'customData' | 'executeData'>,
	{ wrap = (context) => context }: { wrap?: Wrap } = {},
): Promise<WebhookAnswer> {
	const { workflow, node } = makeWorkflow(Class, setup);
	const rawBody = Buffer.from(call.rawBody ?? '');
	let body: unknown = {};
	try {
		body = call.rawBody ? JSON.parse(call.rawBody) : {};
	} catch {
		body = {};
	}
	const request = {
		method: call.method ?? 'POST',
		headers: Object.fromEntries(
			Object.entries(call.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
		),
		query: call.query ?? {},
		params: {},
		body,
		rawBody,
	} as unknown as Request;
	const answer: { status?: number; body?: unknown } = {};
	const response = {
		status(code: number) {
			answer.status = code;
			return this;
		},
		json(value: unknown) {
			answer.body = value;
			return this;
		},
	} as unknown as Response;
	const runExecutionData = newRunExecutionData(waiting.customData);
	runExecutionData.executionData!.nodeExecutionStack.push(waiting.executeData);
	const context = new core.WebhookContext(
		workflow,
		node,
		additionalData(setup, { httpRequest: request, httpResponse: response }),
		'webhook',
		{ httpMethod: 'POST', node: node.name, path: '', webhookDescription: {} } as never,
		[],
		runExecutionData,
	);
	const warnings: string[] = [];
	const warn = jest.spyOn(context.logger, 'warn').mockImplementation((message: string) => {
		warnings.push(message);
	});
	let result: IWebhookResponseData;
	try {
		result = await Class.prototype.webhook!.call(wrap(context));
	} finally {
		warn.mockRestore();
	}
	return { result, warnings, ...answer };
}
