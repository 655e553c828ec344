import {
	type INode,
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
	type SourceContext,
} from '../../core/poll';
import { DurableTrigger, type TriggerEngine } from '../shared/durableTrigger';
import { BUSY_WRITE_INTERVAL_MS } from '../shared/emitRuns';
import { inEditorWords } from '../shared/errors';
import { executionStatusByKey } from '../shared/n8nDoor';
import { imapCredentialTest } from '../shared/imapCredentialTest';
import { opContext } from '../shared/opContext';
import { ftpCredentialTest } from '../shared/ftpCredential';
import { sftpCredentialTest } from '../shared/sftpCredential';
import {
	historyStoreCredential,
	KEYED_KINDS,
	pollTriggerCredentials,
	pollTriggerProperties,
} from './PollTriggerDescription';
import { pollHistoryPostgresTest, postgresHistoryTable } from '../shared/historyTable';
import {
	executeStep,
	notRunError,
	type PollConfig,
	readConfig,
	silenceError,
} from './pollParameters';
import { deadLetterError, runEnd, runItems } from './runFailures';

/** The node's key in its static data (`node:<name>`); the value carries its own format version. */
const STATE_KEY = 'pollTrigger';

/**
 * Parameters in (pollParameters.ts), the activation's core out of them (core/poll/activation.ts:
 * dedupe store, outbox, ledger, Start Again, runner), handed to n8n's side, the DurableTrigger
 * (nodes/shared/durableTrigger.ts): the static data the state is written to and the emitter that
 * hands runs to n8n and reports how they settled.
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
		properties: pollTriggerProperties,
	};

	methods = {
		credentialTest: {
			imapCredentialTest,
			sftpCredentialTest,
			ftpCredentialTest,
			pollHistoryPostgresTest,
		},
	};

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const trigger = new DurableTrigger<PollRun>(this, STATE_KEY, 'Poll Trigger');
		// Everything is checked before anything is written, so a refused activation changes nothing:
		// the saved state, the dedupe settings, the runner's settings (live only), the op (one that reads
		// a file is refused), its arguments (passed as written) and an IMAP credential (its host and port).
		return await trigger.activate(async () => {
			const config = readConfig(this);
			const saved = (trigger.saved ?? { v: 1 }) as PollTriggerState;
			const activation = await pollActivation(this, trigger, config, saved);
			const op = resolveOp(config.op);
			checkPollOp(op);
			op.check(config.with);
			if (config.http) checkRequestUrl(config.http, config.with.url);
			const context = await opContext(this, op, () => config.http ?? { auth: { kind: 'none' } });
			return pollEngine(trigger, config, activation, context);
		});
	}
}

/** The activation on the saved state, its settings checked; live, with its runner. Writes nothing. */
async function pollActivation(
	context: ITriggerFunctions,
	{ live, node, workflowId }: DurableTrigger<PollRun>,
	config: PollConfig,
	saved: PollTriggerState,
): Promise<PollActivation> {
	return new PollActivation(
		saved,
		{
			source: {
				op: resolveOp(config.op),
				args: config.with,
				timeoutMs: config.timeoutMs,
				paging: config.paging,
			},
			dedupe: config.dedupe,
			firstPoll: config.firstPoll,
			maxRemembered: config.maxRemembered,
			maxRunsInFlight: config.maxRunsInFlight,
			expressions: config.expressions,
			oneRunPerItem: config.oneRunPerItem,
			keyPrefix: keyPrefix(node, workflowId),
			clock: systemClock,
			retry: config.retry,
			silenceAfterMs: config.silenceAfterMs,
			...(config.historyStore === 'postgres' &&
				KEYED_KINDS.includes(config.dedupe.kind) && {
					history: await loadHistory(
						postgresHistoryTable(await context.getCredentials(historyStoreCredential.name), {
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
					describe: (error) => inEditorWords(error.message, node),
				}
			: undefined,
	);
}

/** Prefixes every deduplication key of the trigger's runs: its workflow and node. */
function keyPrefix(node: INode, workflowId: string | undefined): string {
	return `poll:${workflowId}:${node.id}:`;
}

/**
 * The activation as the DurableTrigger drives it: its runs' items and settlements, Execute step,
 * and, live, its ports (the DurableTrigger as its outlet, the op's transport, failures as failed
 * executions).
 */
function pollEngine(
	trigger: DurableTrigger<PollRun>,
	config: PollConfig,
	activation: PollActivation,
	context: SourceContext,
): TriggerEngine<PollRun> {
	const { node } = trigger;
	return {
		runs: {
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
			writeKey: `${keyPrefix(node, trigger.workflowId)}write`,
			// One failed execution per burst, however many of its runs n8n did not run.
			reportNotRun: (runs) =>
				trigger.fail(
					notRunError(
						node,
						runs.map(({ run, error }) => ({ keys: run.run.keys, error })),
					),
				),
			// So that after a crash the ledger tells the runs that had ended from those cut short.
			busyWriteIntervalMs: BUSY_WRITE_INTERVAL_MS,
			// The outbox bounds the runs in flight (runStage.ts ARMED_RUNS_MAX): no writes between them.
			chunked: false,
		},
		preview: async () => await executeStep(config, activation, context, node),
		start: async () => {
			if (activation.notice) trigger.warn(activation.notice);
			await activation.start(
				{
					outlet: trigger,
					context,
					onPollFailure: (error, report) =>
						trigger.fail(
							new NodeOperationError(node, error, {
								message: error.message,
								description: `Poll failed (${report.reason === 'first_failure' ? 'first failure after a success' : `${report.consecutiveFailures} failures in a row`}); the trigger keeps polling with backoff.`,
							}),
						),
					onDeadLetter: (letter) => trigger.fail(deadLetterError(node, letter)),
					runStatus: executionStatusByKey,
					onSilence: (news) => trigger.fail(silenceError(node, news)),
					onPageLimit: (message) =>
						trigger.fail(
							new NodeOperationError(node, trigger.named(message), {
								description:
									'The items of the pages fetched were started. This is recorded once, until a poll reaches known ground again.',
							}),
						),
					onUnlisted: (message) =>
						trigger.fail(
							new NodeOperationError(node, trigger.named(message), {
								description:
									'The trigger expected the source to list these items again and gave them up. This is recorded once for them.',
							}),
						),
				},
				config.startAgain,
			);
		},
		// A checkpoint being saved ends before the next activation loads the table.
		stop: async () => await activation.stop(),
	};
}

/** The history table, and its checkpoint of the saved store when static data says it holds one. */
async function loadHistory(table: HistoryTable, workflowId: string, saved: PollTriggerState) {
	const store = savedHistoryStore(saved, workflowId);
	return { table, workflowId, base: store === undefined ? undefined : await table.load(store) };
}
