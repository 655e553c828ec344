import {
	type IDataObject,
	type INodeType,
	type INodeTypeDescription,
	type ITriggerFunctions,
	type ITriggerResponse,
	NodeConnectionTypes,
	NodeOperationError,
} from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import { checkRequestUrl } from '../../core/connectors/httpAuth';
import { checkPollOp, resolveOp } from '../../core/connectors/registry';
import {
	type HistoryTable,
	PollActivation,
	type PollRun,
	type PollTriggerState,
	savedHistoryStore,
} from '../../core/poll';
import { BUSY_WRITE_INTERVAL_MS, emittedInFlight, RunEmitter } from '../shared/emitRuns';
import { saveTriggerFailure, toNodeError } from '../shared/errors';
import { imapCredentialTest } from '../shared/imapCredentialTest';
import { writerToLiveCopies } from '../shared/liveCopies';
import { announceMissing } from '../shared/n8nDoor';
import { opContext } from '../shared/opContext';
import { paginationProperties } from '../shared/pagination';
import { sftpCredentialTest } from '../shared/sftpCredential';
import { connectorProperties } from '../shared/parameters';
import {
	historyStoreCredential,
	KEYED_KINDS,
	pollTriggerCredentials,
	pollTriggerProperties,
} from './PollTriggerDescription';
import { pollHistoryPostgresTest, postgresHistoryTable } from '../shared/historyTable';
import { executeStep, notRunError, readConfig, silenceError } from './pollParameters';
import { deadLetterError, runEnd, runItems } from './runFailures';

/** The node's key in its static data (`node:<name>`); the value carries its own format version. */
const STATE_KEY = 'pollTrigger';

/**
 * Parameters in (pollParameters.ts), the activation's core out of them (core/poll/activation.ts:
 * dedupe store, outbox, ledger, Start Again, runner), and n8n's side: the static data the state is
 * written to (liveCopies.ts) and the emitter that hands runs to n8n and reports how they settled.
 */
export class PollTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Poll Trigger',
		name: 'pollTrigger',
		icon: { light: 'file:pollTrigger.svg', dark: 'file:pollTrigger.dark.svg' },
		group: ['trigger'],
		version: [1, 1.1],
		defaultVersion: 1.1,
		subtitle: '={{$parameter["op"] + " · " + $parameter["dedupe"]}}',
		description:
			'Polls a system that cannot push and starts one run per new or changed item, remembering what it started across restarts',
		defaults: { name: 'Poll Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: pollTriggerCredentials,
		properties: [
			...connectorProperties(
				'The op\'s arguments, passed as written. For http.request: method, URL (absolute, or relative to the credential\'s base URL), query, headers, body. Ask only for what is new with {{ $cursor }} (Dedupe Greatest\'s high-water mark) or {{ $lastPollStartedAt }} (ISO time), e.g. "query": {"since": "{{ $lastPollStartedAt }}"}; Execute step shows the requests.',
			),
			...paginationProperties,
			...pollTriggerProperties,
		],
	};

	methods = { credentialTest: { imapCredentialTest, sftpCredentialTest, pollHistoryPostgresTest } };

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const config = readConfig(this);
		const node = this.getNode();
		const live = this.getMode() !== 'manual';
		const op = resolveOp(config.op);
		const { id: workflowId } = this.getWorkflow();
		// Everything is checked before anything is written, so a refused activation changes nothing:
		// the saved state, the dedupe settings, the runner's settings (live only), the op (one that reads
		// a file is refused), its arguments (passed as written) and an IMAP credential (its host and port).
		let activation: PollActivation;
		let context: Awaited<ReturnType<typeof opContext>>;
		try {
			const saved = (this.getWorkflowStaticData('node')[STATE_KEY] ?? { v: 1 }) as PollTriggerState;
			const keyPrefix = `poll:${workflowId}:${node.id}:`;
			activation = new PollActivation(
				saved,
				{
					source: { op, args: config.with, timeoutMs: config.timeoutMs, paging: config.paging },
					dedupe: config.dedupe,
					firstPoll: config.firstPoll,
					maxRemembered: config.maxRemembered,
					maxRunsInFlight: config.maxRunsInFlight,
					expressions: config.expressions,
					oneRunPerItem: config.oneRunPerItem,
					keyPrefix,
					clock: systemClock,
					retry: config.retry,
					silenceAfterMs: config.silenceAfterMs,
					...(config.historyStore === 'postgres' &&
						KEYED_KINDS.includes(config.dedupe.kind) && {
							history: await loadHistory(
								postgresHistoryTable(await this.getCredentials(historyStoreCredential.name), {
									timeoutMs: config.timeoutMs,
								}),
								workflowId ?? 'unsaved',
								saved,
							),
						}),
				},
				live
					? {
							intervalMs: config.intervalMs,
							jitterMs: config.jitterMs,
							jitterSeed: `${workflowId}:${node.id}`,
							timeoutMs: config.timeoutMs,
							backoff: { maxMs: config.backoffMaxMs },
							failureLimit: config.failureLimit,
						}
					: undefined,
			);
			checkPollOp(op);
			op.check(config.with);
			if (config.http) checkRequestUrl(config.http, config.with.url);
			context = await opContext(this, op, () => config.http ?? { auth: { kind: 'none' } });
		} catch (error) {
			throw toNodeError(node, error);
		}
		if (!live)
			return {
				manualTriggerFunction: async () =>
					this.emit([await executeStep(config, activation, context)]),
			};

		const named = (message: string) => `Poll Trigger "${node.name}": ${message}`;
		if (activation.notice) this.logger.warn(named(activation.notice));
		// What this n8n offers the trigger (n8nDoor.ts); what it lacks is said once, and it does without.
		const n8n = announceMissing(this, 'trigger');
		// Into every live copy of the node's static data: another trigger of the workflow, re-registered
		// on its own copy, must not store an old state of this one with its emits.
		const liveCopies = writerToLiveCopies(this);
		const emitter = new RunEmitter<PollRun>(this, {
			toItems: (run) => runItems(run, config.retry),
			// The settlement write waits for a checkpoint it allowed, so that it drops the journal.
			settled: async ({ key, run }, settlement, error, result) => {
				activation.settled(key as string, run, runEnd(settlement, error, result));
				await activation.historySaved();
			},
			rewrite: () => activation.write(),
			// n8n 1.x has no deduplication keys: each entry leaves the outbox as soon as n8n created its run.
			created: ({ key }) => activation.created(key as string),
			moreToEmit: () => activation.moreToEmit,
			writeKey: `poll:${workflowId}:${node.id}:write`,
			// One failed execution per burst, however many of its runs n8n did not run.
			reportNotRun: (runs) =>
				saveTriggerFailure(
					this,
					notRunError(
						node,
						runs.map(({ run, error }) => ({ keys: run.run.keys, error })),
					),
				),
			// So that after a crash the ledger tells the runs that had ended from those cut short.
			busyWriteIntervalMs: BUSY_WRITE_INTERVAL_MS,
			// The outbox bounds the runs in flight (runStage.ts ARMED_RUNS_MAX): no writes between them.
			chunked: false,
		});
		const close = async () => {
			liveCopies.close();
			emitter.stop();
			// A checkpoint being saved ends before the next activation loads the table.
			await activation.stop();
		};
		try {
			await activation.start(
				{
					// n8n stores it with the next emit (RunEmitter) or after activation.
					write: (state) => liveCopies.write(STATE_KEY, state as unknown as IDataObject),
					emit: async (runs) => await emitter.emit(runs),
					inFlight: emittedInFlight,
					emitTaken: async (take) => await emitter.emitTaken(take),
					writeNow: () => emitter.write(),
					...(n8n.deduplicationKeys && { storeNow: () => emitter.write() }),
					context,
					onPollFailure: (error, report) =>
						saveTriggerFailure(
							this,
							new NodeOperationError(node, error, {
								message: error.message,
								description: `Poll failed (${report.reason === 'first_failure' ? 'first failure after a success' : `${report.consecutiveFailures} failures in a row`}); the trigger keeps polling with backoff.`,
							}),
						),
					onPageLimit: (message) =>
						saveTriggerFailure(
							this,
							new NodeOperationError(node, named(message), {
								description:
									'The items of the pages fetched were started. This is recorded once, until a poll reaches known ground again.',
							}),
						),
					onDeadLetter: (letter) => saveTriggerFailure(this, deadLetterError(node, letter)),
					onSilence: (news) => saveTriggerFailure(this, silenceError(node, news)),
					info: (message) => this.logger.info(named(message)),
					warn: (message) => this.logger.warn(named(message)),
				},
				config.startAgain,
			);
		} catch (error) {
			await close();
			throw toNodeError(node, error);
		}
		return { closeFunction: close };
	}
}

/** The history table, and its checkpoint of the saved store when static data says it holds one. */
async function loadHistory(table: HistoryTable, workflowId: string, saved: PollTriggerState) {
	const store = savedHistoryStore(saved, workflowId);
	return { table, workflowId, base: store === undefined ? undefined : await table.load(store) };
}
