import {
	type IDataObject,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type IRun,
	type ITriggerFunctions,
	type ITriggerResponse,
	NodeConnectionTypes,
	NodeOperationError,
} from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import { parseWith } from '../../core/connectors/args';
import { resolveOp } from '../../core/connectors/registry';
import type { OpMemory } from '../../core/connectors/types';
import {
	type Candidate,
	type DedupeConfig,
	type FirstPollPolicy,
	loadDedupeStore,
	type ObservedPollState,
	PollExpressions,
	PollRunner,
	runPollCycle,
	type SavedDedupeState,
} from '../../core/poll';
import { hash64 } from '../../core/poll/hash';
import { type TimeUnit, UNIT_MS } from '../../core/units';
import { toNodeError } from '../shared/errors';
import { HTTP_CREDENTIAL } from '../shared/httpTransport';
import { imapCredentialTest } from '../shared/imapCredentialTest';
import { opContext } from '../shared/opContext';
import { connectorCredentials, connectorProperties, timeUnitOptions } from '../shared/parameters';

/** What the trigger keeps in the workflow's static data (per node), with a format version. */
interface PollTriggerState {
	v: 1;
	dedupe?: SavedDedupeState;
	observed?: ObservedPollState;
	/** The op's memory from the last successful poll (HTTP validators). */
	opMemory?: OpMemory;
	/** The last run emitted, kept until a later emit replaces it (see `emitRun`). */
	pending?: { items: IDataObject[]; dedupeKey: string };
}

const STATE_KEY = 'pollTrigger';

export class PollTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Poll Trigger',
		name: 'pollTrigger',
		icon: { light: 'file:pollTrigger.svg', dark: 'file:pollTrigger.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{$parameter["op"] + " · " + $parameter["dedupe"]}}',
		description: 'Polls a system that cannot push and starts one run per new or changed item, remembering what it started across restarts',
		defaults: { name: 'Poll Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: connectorCredentials,
		properties: [
			...connectorProperties(
				'The op\'s arguments, passed as written. For http.request: method, URL (absolute, or relative to the credential\'s base URL), query, headers, body.',
			),
			{
				displayName: 'Items',
				name: 'items',
				type: 'string',
				default: '',
				placeholder: 'e.g. data.items',
				description: 'JSONata selecting the list in the op\'s result. Leave empty when the result is the list itself.',
			},
			{
				displayName: 'ID',
				name: 'id',
				type: 'string',
				default: 'id',
				required: true,
				placeholder: 'e.g. sku & "-" & warehouse',
				description: 'JSONata giving one item\'s key: a non-empty string or a finite number',
			},
			{
				displayName: 'Dedupe',
				name: 'dedupe',
				type: 'options',
				noDataExpression: true,
				default: 'unique',
				options: [
					{ name: 'Changed', value: 'changed', description: 'Start when a key is new or its version (or content) changed' },
					{ name: 'Greatest', value: 'greatest', description: 'Start keys above the highest one started (numbers, or strings; never mixed)' },
					{ name: 'Last', value: 'last', description: 'Start the items after the last one started, for a list returned oldest first' },
					{ name: 'None', value: 'none', description: 'Start every item on every poll, e.g. unread mail that the workflow marks seen as its last step' },
					{ name: 'Time Window', value: 'time_window', description: 'Start each key once per TTL; older keys are forgotten' },
					{ name: 'Unique', value: 'unique', description: 'Start each key once, ever' },
				],
			},
			{
				displayName: 'TTL',
				name: 'ttl',
				type: 'number',
				default: 24,
				typeOptions: { minValue: 1 },
				displayOptions: { show: { dedupe: ['time_window'] } },
				description: 'How long a started key is remembered',
			},
			{
				displayName: 'TTL Unit',
				name: 'ttlUnit',
				type: 'options',
				default: 'hours',
				displayOptions: { show: { dedupe: ['time_window'] } },
				options: timeUnitOptions('minutes', 'hours', 'days'),
			},
			{
				displayName: 'Version',
				name: 'version',
				type: 'string',
				default: '',
				placeholder: 'e.g. updatedAt',
				displayOptions: { show: { dedupe: ['changed'] } },
				description: 'JSONata giving the item\'s version. Leave empty to compare a hash of the whole item.',
			},
			{
				displayName: 'One Run per Item',
				name: 'oneRunPerItem',
				type: 'boolean',
				default: true,
				description: 'Whether each new item starts its own run with the item as its data; off: one run with all new items',
			},
			{
				displayName: 'Interval',
				name: 'interval',
				type: 'number',
				default: 5,
				typeOptions: { minValue: 1 },
				description: 'Time between polls (at least 5 seconds, at most 7 days)',
			},
			{
				displayName: 'Interval Unit',
				name: 'intervalUnit',
				type: 'options',
				default: 'minutes',
				options: timeUnitOptions('seconds', 'minutes', 'hours'),
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [
					{
						displayName: 'Backoff Cap (Seconds)',
						name: 'backoffMaxSec',
						type: 'number',
						default: 3600,
						description: 'After failures, polls back off exponentially (starting at the interval) up to this',
					},
					{
						displayName: 'Failure Limit',
						name: 'failureLimit',
						type: 'number',
						default: 5,
						description: 'Consecutive failed polls after which a second failed execution is recorded; polling continues at the backoff cap',
					},
					{
						displayName: 'First Poll Starts',
						name: 'firstPoll',
						type: 'options',
						default: 'all',
						options: [
							{ name: 'Everything the Op Returns', value: 'all' },
							{ name: 'Nothing, Just Remember What Is There', value: 'none' },
							{ name: 'Only the Newest N', value: 'newest' },
						],
						description: 'What the first poll after the trigger is first activated starts',
					},
					{
						displayName: 'Jitter (Seconds)',
						name: 'jitterSec',
						type: 'number',
						default: 0,
						description: 'Delays each poll by a fixed, per-trigger offset below this, so triggers started together spread out',
					},
					{
						displayName: 'Newest N',
						name: 'newestCount',
						type: 'number',
						default: 10,
						description: 'With "Only the Newest N": how many',
					},
					{
						displayName: 'Poll Timeout (Seconds)',
						name: 'timeoutSec',
						type: 'number',
						default: 60,
						description: 'A poll that takes longer fails (and backs off)',
					},
				],
			},
		],
	};

	methods = { credentialTest: { imapCredentialTest } };

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const config = readConfig(this);
		const staticData = this.getWorkflowStaticData('node');
		const saved = (staticData[STATE_KEY] ?? { v: 1 }) as PollTriggerState;
		if (saved.v !== 1) throw new NodeOperationError(this.getNode(), `The Poll Trigger's saved state has format version ${String(saved.v)}, which this version of the node cannot read`);
		let state: PollTriggerState = saved;
		const dedupeOptions = { dedupe: config.dedupe, firstPoll: config.firstPoll };
		let store = loadDedupeStore(dedupeOptions, state.dedupe);
		const op = resolveOp(config.op);
		const context = await opContext(this, op, config.useCredential);
		const { id: workflowId } = this.getWorkflow();
		const nodeId = this.getNode().id;

		// n8n saves static data when a trigger emits (and at activation), and only notices a
		// reassigned top-level key: each write replaces the whole state object.
		const writeState = (patch: Partial<PollTriggerState>) => {
			state = { ...state, ...patch };
			staticData[STATE_KEY] = state as unknown as IDataObject;
		};

		if (this.getMode() === 'manual') {
			return {
				manualTriggerFunction: async () => {
					const fetched = await op.run(config.with, { ...context, memory: {}, timeoutMs: config.timeoutMs });
					const result = fetched.kind === 'data' ? fetched.data : undefined;
					const keyed = await config.expressions.keyItems(result ?? [], { withVersion: store.needsVersion });
					const plan = store.plan(keyed, Date.now());
					this.emit([plan.candidates.map((candidate) => ({ json: preview(candidate, fetched.kind === 'not_modified') }))]);
				},
			};
		}

		let pendingMemory: OpMemory | undefined;
		let failedStart: Error | undefined;
		let queuedEmit: (() => void) | undefined;
		const flushEmit = () => {
			const emitNow = queuedEmit;
			queuedEmit = undefined;
			emitNow?.();
		};
		/**
		 * Starts one run. Its emit saves the state with this item remembered and the run itself kept as
		 * `pending`, so a crash between that save and n8n creating the execution re-emits it at the next
		 * activation (n8n refuses the re-emit, by its dedup key, when the run did start). If n8n cannot
		 * create the run, the state goes back to `before` and the item comes back at the next poll.
		 */
		const emitRun = (candidates: ReadonlyArray<Candidate<unknown>>, before: SavedDedupeState) => {
			const items = candidates.map(toRunItem);
			const key = config.dedupe.kind === 'none' ? undefined : dedupeKey(workflowId, nodeId, candidates);
			writeState({ dedupe: store.serialize(), pending: key ? { items: items.map((item) => item.json), dedupeKey: key } : undefined });
			const done = this.helpers.createDeferredPromise<IRun>();
			done.promise.catch((error: Error) => {
				failedStart = new NodeOperationError(this.getNode(), `n8n could not start a run for ${describeKeys(candidates)}: ${error.message}`);
				store = loadDedupeStore(dedupeOptions, before);
				writeState({ dedupe: before, pending: undefined });
			});
			try {
				this.emit([items], undefined, done, key);
			} catch (error) {
				done.reject(error as Error);
			}
		};
		const runner = new PollRunner({
			clock: systemClock,
			intervalMs: config.intervalMs,
			jitterMs: config.jitterMs,
			jitterSeed: `${workflowId}:${nodeId}`,
			timeoutMs: config.timeoutMs,
			backoff: { maxMs: config.backoffMaxMs },
			failureLimit: config.failureLimit,
			restored: state.observed,
			persist: (observed) => writeState({ observed }),
			onFailure: (error, report) =>
				this.saveFailedExecution(
					new NodeOperationError(this.getNode(), error, {
						message: error.message,
						description: `Poll failed (${report.reason === 'first_failure' ? 'first failure after a success' : `${report.consecutiveFailures} failures in a row`}); the trigger keeps polling with backoff.`,
					}),
				),
			poll: async (signal) => {
				if (failedStart) {
					// n8n could not create a run emitted by an earlier poll: that poll's memory was rolled
					// back (see `start`), so its items come back now; this poll counts as failed.
					const error = failedStart;
					failedStart = undefined;
					throw error;
				}
				const outcome = await runPollCycle<unknown>(
					{
						expressions: config.expressions,
						store,
						clock: systemClock,
						onePerItem: config.oneRunPerItem,
						fetch: async (fetchSignal) => {
							const result = await op.run(config.with, { ...context, memory: state.opMemory ?? {}, signal: fetchSignal, timeoutMs: config.timeoutMs });
							if (result.kind === 'not_modified') return { notModified: true };
							pendingMemory = result.memory;
							return { result: result.data };
						},
						// The emit for an item is made once the core has committed it (at the next start, or at
						// save), so the state that emit saves already remembers that item.
						start: (candidates) => {
							flushEmit();
							const before = store.serialize();
							queuedEmit = () => emitRun(candidates, before);
						},
						save: () => {
							flushEmit();
							writeState({ dedupe: store.serialize() });
						},
					},
					signal,
				);
				// Validators are kept only once everything the response listed has started.
				if (pendingMemory) writeState({ opMemory: pendingMemory });
				pendingMemory = undefined;
				return outcome;
			},
		});
		if (state.pending) {
			// The run the last emit before this activation saved; n8n refuses it if it did start.
			this.emit([state.pending.items.map((json) => ({ json }))], undefined, undefined, state.pending.dedupeKey);
		}
		runner.start();
		return { closeFunction: async () => runner.stop() };
	}
}

interface PollConfig {
	op: string;
	with: Record<string, unknown>;
	useCredential: boolean;
	expressions: PollExpressions;
	dedupe: DedupeConfig;
	firstPoll: FirstPollPolicy;
	oneRunPerItem: boolean;
	intervalMs: number;
	jitterMs: number;
	timeoutMs: number;
	backoffMaxMs: number;
	failureLimit: number;
}

/** Reads and checks every parameter up front, so a mistake refuses activation with the field named. */
function readConfig(context: ITriggerFunctions): PollConfig {
	try {
		const options = context.getNodeParameter('options', {}) as IDataObject;
		const dedupeKind = context.getNodeParameter('dedupe') as DedupeConfig['kind'];
		const dedupe: DedupeConfig =
			dedupeKind === 'time_window'
				? { kind: 'time_window', ttlMs: (context.getNodeParameter('ttl') as number) * UNIT_MS[context.getNodeParameter('ttlUnit') as TimeUnit] }
				: { kind: dedupeKind };
		const firstPollMode = (options.firstPoll ?? 'all') as FirstPollPolicy['mode'];
		const credentials = context.getNode().credentials ?? {};
		return {
			op: context.getNodeParameter('op') as string,
			with: parseWith(context.getNodeParameter('with')),
			useCredential: HTTP_CREDENTIAL in credentials,
			expressions: new PollExpressions({
				items: context.getNodeParameter('items', '') as string,
				id: context.getNodeParameter('id') as string,
				version: dedupeKind === 'changed' ? (context.getNodeParameter('version', '') as string) : undefined,
			}),
			dedupe,
			firstPoll: firstPollMode === 'newest' ? { mode: 'newest', count: Number(options.newestCount ?? 10) } : { mode: firstPollMode },
			oneRunPerItem: context.getNodeParameter('oneRunPerItem', true) as boolean,
			intervalMs: (context.getNodeParameter('interval') as number) * UNIT_MS[context.getNodeParameter('intervalUnit') as TimeUnit],
			jitterMs: Number(options.jitterSec ?? 0) * 1000,
			timeoutMs: Number(options.timeoutSec ?? 60) * 1000,
			backoffMaxMs: Number(options.backoffMaxSec ?? 3600) * 1000,
			failureLimit: Number(options.failureLimit ?? 5),
		};
	} catch (error) {
		throw toNodeError(context.getNode(), error);
	}
}

function toRunItem(candidate: Candidate<unknown>): INodeExecutionData {
	const { item } = candidate;
	return { json: typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as IDataObject) : { value: item as IDataObject[keyof IDataObject] } };
}

/** n8n refuses a second execution with the same key (instance-wide), so a crash between a start and remembering it cannot start the item twice. */
function dedupeKey(workflowId: string | undefined, nodeId: string, candidates: ReadonlyArray<Candidate<unknown>>): string {
	const identity = candidates.map((c) => `${c.ticket.hash}${c.ticket.versionHash ?? ''}${c.verdict === 'expired' ? String(c.seenAt) : ''}`).join('|');
	return `poll:${workflowId}:${nodeId}:${Buffer.from(hash64(identity), 'utf16le').toString('hex')}`;
}

function describeKeys(candidates: ReadonlyArray<Candidate<unknown>>): string {
	const keys = candidates.map((c) => JSON.stringify(c.key));
	return keys.length === 1 ? `item ${keys[0]}` : `${keys.length} items (${keys.slice(0, 5).join(', ')}${keys.length > 5 ? ', …' : ''})`;
}

/** One line of the editor's dry run: the item, its key, and what the next poll would do with it. */
function preview(candidate: Candidate<unknown>, notModified: boolean): IDataObject {
	const verdict: IDataObject = { key: candidate.key, verdict: candidate.verdict, wouldStart: ['new', 'expired', 'changed'].includes(candidate.verdict) };
	if (candidate.seenAt !== undefined) verdict.seenAt = new Date(candidate.seenAt).toISOString();
	if (notModified) verdict.notModified = true;
	return { ...verdict, item: candidate.item as IDataObject };
}
