import {
	type IDataObject,
	type INode,
	type INodeExecutionData,
	type ITriggerFunctions,
	type NodeOperationError,
} from 'n8n-workflow';

import { ConfigError } from '../../core/configError';
import { parseWith } from '../../core/connectors/args';
import type { HttpAuthSettings } from '../../core/connectors/httpAuth';
import { resolveOp } from '../../core/connectors/registry';
import {
	ARMED_RUNS_MAX,
	type Candidate,
	type DedupeConfig,
	type FirstPollPolicy,
	type ItemKey,
	type LedgerEntry,
	parseStartAgain,
	type PagingSettings,
	type PollActivation,
	PollExpressions,
	type SilenceNews,
	type SourceContext,
	startsRun,
} from '../../core/poll';
import { type TimeUnit, UNIT_MS } from '../../core/units';
import { inEditorWords, nodeError, toNodeError } from '../shared/errors';
import { readPagingSettings } from '../shared/pagination';
import { connectorHttpAuth } from '../shared/parameters';
import type { RetryPolicy } from '../../core/retryPolicy';
import { readRetryPolicy } from '../shared/whenRunFails';
import { deadLetterRows } from './runFailures';

export interface PollConfig {
	op: string;
	with: Record<string, unknown>;
	/** How the HTTP ops authenticate; unset for other ops. */
	http?: HttpAuthSettings;
	expressions: PollExpressions;
	dedupe: DedupeConfig;
	firstPoll: FirstPollPolicy;
	oneRunPerItem: boolean;
	intervalMs: number;
	jitterMs: number;
	timeoutMs: number;
	/** Unset: two intervals (core/poll/runner.ts DEFAULT_BACKOFF_INTERVALS). */
	backoffMaxMs: number | undefined;
	failureLimit: number;
	executeStepShows: 'nextPoll' | 'recentStarts' | 'deadLetters';
	/** Pagination and the cursor (http.request only). */
	paging: PagingSettings | undefined;
	startAgain: ItemKey[];
	/** The history budget (keyed kinds); 0: no cap. */
	maxRemembered: number;
	maxRunsInFlight: number;
	/** Where the keyed kinds' history is kept (core/poll/historyStore.ts). */
	historyStore: 'staticData' | 'postgres';
	/** When a Run Fails: Start the Item Again's policy; unset: Leave It Failed. */
	retry: RetryPolicy | undefined;
	/** Alert When Nothing New For, ms; unset: off (0 in the editor). */
	silenceAfterMs: number | undefined;
}

/** Reads and checks every parameter up front, so a mistake refuses activation with the field named. */
export function readConfig(context: ITriggerFunctions): PollConfig {
	try {
		const options = context.getNodeParameter('options', {}) as IDataObject;
		const dedupeKind = context.getNodeParameter('dedupe') as DedupeConfig['kind'];
		const dedupe: DedupeConfig =
			dedupeKind === 'time_window'
				? {
						kind: 'time_window',
						ttlMs:
							(context.getNodeParameter('ttl') as number) *
							UNIT_MS[context.getNodeParameter('ttlUnit') as TimeUnit],
					}
				: { kind: dedupeKind };
		const firstPollMode = (options.firstPoll ?? 'all') as FirstPollPolicy['mode'];
		const op = context.getNodeParameter('op') as string;
		return {
			op,
			with: parseWith(context.getNodeParameter('with')),
			http:
				resolveOp(op).transport === 'http'
					? connectorHttpAuth(context.getNode(), (name, fallback) =>
							context.getNodeParameter(name, fallback),
						)
					: undefined,
			expressions: new PollExpressions({
				items: context.getNodeParameter('items', '') as string,
				id: context.getNodeParameter('id') as string,
				version:
					dedupeKind === 'changed'
						? (context.getNodeParameter('version', '') as string)
						: undefined,
			}),
			dedupe,
			firstPoll:
				firstPollMode === 'newest'
					? { mode: 'newest', count: Number(options.newestCount ?? 10) }
					: { mode: firstPollMode },
			oneRunPerItem: context.getNodeParameter('oneRunPerItem', true) as boolean,
			intervalMs:
				(context.getNodeParameter('interval') as number) *
				UNIT_MS[context.getNodeParameter('intervalUnit') as TimeUnit],
			jitterMs: Number(options.jitterSec ?? 0) * 1000,
			timeoutMs: Number(options.timeoutSec ?? 60) * 1000,
			// 0 (the option's default) or unset: the runner's default, two intervals.
			backoffMaxMs:
				options.backoffMaxSec === undefined || Number(options.backoffMaxSec) === 0
					? undefined
					: Number(options.backoffMaxSec) * 1000,
			failureLimit: Number(options.failureLimit ?? 5),
			executeStepShows:
				options.executeStepShows === 'recentStarts' || options.executeStepShows === 'deadLetters'
					? options.executeStepShows
					: 'nextPoll',
			paging:
				op === 'http.request'
					? readPagingSettings((name, fallback) => context.getNodeParameter(name, fallback))
					: undefined,
			startAgain: parseStartAgain(String(options.startAgain ?? '')),
			maxRemembered: Number(options.maxRemembered ?? 0),
			maxRunsInFlight: Number(options.maxRunsInFlight ?? ARMED_RUNS_MAX),
			historyStore: historyStoreOf(context.getNodeParameter('historyStore', 'staticData')),
			retry: readRetryPolicy((name, fallback) => context.getNodeParameter(name, fallback)),
			silenceAfterMs:
				Number(options.silenceAfterMin ?? 0) === 0
					? undefined
					: Number(options.silenceAfterMin) * 60_000,
		};
	} catch (error) {
		throw toNodeError(context.getNode(), error);
	}
}

function historyStoreOf(value: unknown): PollConfig['historyStore'] {
	if (value === 'staticData' || value === 'postgres') return value;
	throw new ConfigError('historyStore', value, 'must be staticData or postgres');
}

/**
 * What "Execute step" outputs: the items the op returns now, each with its key and what the next
 * poll would do with it, or the published trigger's Recent Starts or Dead Letters. It starts and
 * remembers nothing. What the core says (a warning, an error) is said in the editor's words of `node`.
 */
export async function executeStep(
	config: PollConfig,
	activation: PollActivation,
	context: SourceContext,
	node: INode,
): Promise<INodeExecutionData[]> {
	if (config.executeStepShows === 'deadLetters') return deadLetterRows(activation);
	if (config.executeStepShows === 'recentStarts') {
		const entries = activation.recentStarts();
		const unknown = activation.endUnknown();
		return entries.length === 0
			? [{ json: { recentStarts: 0, note: 'No start recorded yet' } }]
			: [
					...(unknown ? [{ json: unknown as IDataObject }] : []),
					...entries.map((entry) => ({ json: showStart(entry) })),
				];
	}
	const { history, requests, candidates, notModified } = await activation
		.preview(context, Date.now())
		.catch((error: unknown) => {
			throw toNodeError(node, error);
		});
	// A history that costs, or keys the cap forgot, are said first, in a row of their own; then the
	// requests a paginated poll would send.
	return [
		...(history
			? [
					{
						json: {
							history: {
								...history,
								...(history.warning && { warning: inEditorWords(history.warning, node) }),
							},
						},
					},
				]
			: []),
		...(requests ? [{ json: requests as unknown as IDataObject }] : []),
		...candidates.map((candidate) => ({ json: preview(candidate, notModified) })),
	];
}

/** One line of the editor's dry run: the item, its key, and what the next poll would do with it. */
function preview(candidate: Candidate<unknown>, notModified: boolean): IDataObject {
	const verdict: IDataObject = {
		key: candidate.key,
		verdict: candidate.verdict,
		wouldStart: startsRun(candidate.verdict),
	};
	if (candidate.seenAt !== undefined) verdict.seenAt = new Date(candidate.seenAt).toISOString();
	if (notModified) verdict.notModified = true;
	return { ...verdict, item: candidate.item as IDataObject };
}

/** One line of Execute step's Recent Starts. */
function showStart(entry: LedgerEntry): IDataObject {
	return {
		deduplicationKey: entry.key,
		itemKeys: entry.items,
		...(entry.itemCount !== undefined && { itemCount: entry.itemCount }),
		startedAt: new Date(entry.at).toISOString(),
		outcome: entry.outcome,
	};
}

/** The one report of a burst's runs that n8n did not run (nodes/shared/emitRuns.ts). */
export function notRunError(
	node: INode,
	runs: Array<{ keys: readonly ItemKey[]; error?: Error }>,
): NodeOperationError {
	const keys = runs.flatMap((run) => run.keys);
	const first = runs[0]?.error?.message ?? 'unknown error';
	const what = runs.length === 1 ? 'a run' : `${runs.length} runs`;
	return nodeError(node, `n8n could not start ${what} for ${describeKeys(keys)}: ${first}`, {
		description:
			'Their items were not remembered: the next poll that still lists them starts them again, each under a new deduplication key.',
	});
}

/** Alert When Nothing New For: the silence, or its end, as one failed execution. */
export function silenceError(node: INode, news: SilenceNews): NodeOperationError {
	return nodeError(node, news.message, {
		description:
			news.kind === 'silent'
				? 'Reported once; the trigger keeps polling, and reports again when the source lists something new.'
				: 'The silence reported earlier is over.',
	});
}

/** The items of a run, as an error message names them. */
function describeKeys(keys: readonly ItemKey[]): string {
	const shown = keys.map((key) => JSON.stringify(key));
	if (shown.length === 0) return 'a run saved by an earlier version';
	return shown.length === 1
		? `item ${shown[0]}`
		: `${shown.length} items (${shown.slice(0, 5).join(', ')}${shown.length > 5 ? ', …' : ''})`;
}
