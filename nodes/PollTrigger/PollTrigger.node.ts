import {
	type IDataObject,
	type INode,
	type INodeType,
	type INodeTypeDescription,
	type ITriggerFunctions,
	type ITriggerResponse,
	NodeConnectionTypes,
	NodeOperationError,
} from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import { parseWith } from '../../core/connectors/args';
import { resolveUrl } from '../../core/connectors/httpAuth';
import { checkPollOp, resolveOp } from '../../core/connectors/registry';
import type { OpMemory } from '../../core/connectors/types';
import type { Settlement } from '../../core/outbox';
import {
	type Candidate,
	type DedupeConfig,
	type FirstPollPolicy,
	type ItemKey,
	loadDedupeStore,
	type ObservedPollState,
	PollExpressions,
	PollRunner,
	runPollCycle,
	type LedgerEntry,
	type LedgerOutcome,
	parseStartAgain,
	historySummary,
	HistoryWatch,
	type SavedDedupeState,
	LEDGER_MAX_BYTES,
	StartLedger,
	startAgainId,
	endUnknownSummary,
	startsRun,
	RunStage,
	type StagedRun,
	PagedSource,
	type PagingSettings,
	type SavedPagingState,
} from '../../core/poll';
import { type TimeUnit, UNIT_MS } from '../../core/units';
import { BUSY_WRITE_INTERVAL_MS, RunEmitter, type RunToEmit } from '../shared/emitRuns';
import { saveTriggerFailure, toNodeError } from '../shared/errors';
import type { HttpAuthSettings } from '../shared/httpTransport';
import { imapCredentialTest } from '../shared/imapCredentialTest';
import { writerToLiveCopies } from '../shared/liveCopies';
import { opContext } from '../shared/opContext';
import { paginationProperties, readPagingSettings } from '../shared/pagination';
import { sftpCredentialTest } from '../shared/sftpCredential';
import {
	connectorCredentials,
	connectorHttpAuth,
	connectorProperties,
	timeUnitOptions,
} from '../shared/parameters';

/** One run in the outbox: its items as emitted, and how to forget them if n8n cannot create it. */
type PollRun = StagedRun<IDataObject>;

/** What the trigger keeps in the workflow's static data (per node), with a format version. */
interface PollTriggerState {
	v: 1;
	dedupe?: SavedDedupeState;
	observed?: ObservedPollState;
	/** The op's memory from the last successful poll (HTTP validators). */
	opMemory?: OpMemory;
	/**
	 * Runs written but not yet settled by n8n (core/outbox.ts, in two stages: core/poll/runStage.ts);
	 * armed ones are emitted again at every activation, held ones forgotten.
	 */
	outbox?: Array<{ key: string; run: PollRun }>;
	/** Recent starts: deduplication key → item keys, when, how n8n settled it (core/poll/ledger.ts). */
	ledger?: LedgerEntry[];
	/** The Start Again list last applied (startAgainId), so a list is applied once. */
	startAgainApplied?: string;
	/** Paginated http.request: $lastPollStartedAt, and whether Max Pages was reported (core/poll/paging.ts). */
	paging?: SavedPagingState;
	/** Before the outbox (0.1.x): the last run emitted. Moved into the outbox on load. */
	pending?: { items: IDataObject[]; dedupeKey: string };
}

const STATE_KEY = 'pollTrigger';

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
		credentials: connectorCredentials,
		properties: [
			...connectorProperties(
				'The op\'s arguments, passed as written. For http.request: method, URL (absolute, or relative to the credential\'s base URL), query, headers, body. Ask only for what is new with {{ $cursor }} (Dedupe Greatest\'s high-water mark) or {{ $lastPollStartedAt }} (ISO time), e.g. "query": {"since": "{{ $lastPollStartedAt }}"}; Execute step shows the requests.',
			),
			...paginationProperties,
			{
				displayName: 'Items',
				name: 'items',
				type: 'string',
				default: '',
				placeholder: 'e.g. data.items',
				description:
					"JSONata selecting the list in the op's result. Leave empty when the result is the list itself.",
			},
			{
				displayName: 'ID',
				name: 'id',
				type: 'string',
				default: 'id',
				required: true,
				placeholder: 'e.g. sku & "-" & warehouse',
				description: "JSONata giving one item's key: a non-empty string or a finite number",
			},
			{
				displayName: 'Dedupe',
				name: 'dedupe',
				type: 'options',
				noDataExpression: true,
				default: 'unique',
				description:
					'How the trigger decides an item is new. Changing it later: Unique and Time Window keep what the other remembered; any other change makes the next poll a first poll, which follows First Poll Starts.',
				options: [
					{
						name: 'Changed',
						value: 'changed',
						description: 'Start when a key is new or its version (or content) changed',
					},
					{
						name: 'Greatest',
						value: 'greatest',
						description:
							'Start keys above the highest one started (numbers, or strings; never mixed)',
					},
					{
						name: 'Last',
						value: 'last',
						description:
							'Start the items after the last one started, for a list returned oldest first',
					},
					{
						name: 'None',
						value: 'none',
						description:
							'Start every item on every poll, e.g. unread mail that the workflow marks seen as its last step',
					},
					{
						name: 'Time Window',
						value: 'time_window',
						description: 'Start each key once per TTL; older keys are forgotten',
					},
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
				description:
					"JSONata giving the item's version. Leave empty to compare a hash of the whole item.",
			},
			{
				displayName: 'One Run per Item',
				name: 'oneRunPerItem',
				type: 'boolean',
				default: true,
				description:
					'Whether each new item starts its own run with the item as its data; off: one run with all new items',
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
						description:
							'After failures, polls back off exponentially (starting at the interval) up to this; at least the interval. Default: an hour, or the interval when that is longer.',
					},
					{
						displayName: 'Execute Step Shows',
						name: 'executeStepShows',
						type: 'options',
						default: 'nextPoll',
						options: [
							{
								name: 'What the Next Poll Would Start',
								value: 'nextPoll',
								description: 'Each item the op returns now, with its key and verdict',
							},
							{
								name: 'Recent Starts',
								value: 'recentStarts',
								description:
									"The published trigger's recent runs: deduplication key, item keys, when, and how n8n settled each; for finding a crashed run's items",
							},
						],
						description: 'What "Execute step" outputs; it starts and remembers nothing either way',
					},
					{
						displayName: 'Failure Limit',
						name: 'failureLimit',
						type: 'number',
						default: 5,
						description:
							'Consecutive failed polls after which a second failed execution is recorded; polling continues at the backoff cap',
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
						description:
							'Delays each poll by a fixed, per-trigger offset below this, so triggers started together spread out',
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
					{
						displayName: 'Remember at Most (Keys)',
						name: 'maxRemembered',
						type: 'number',
						default: 0,
						typeOptions: { minValue: 0 },
						displayOptions: { show: { '/dedupe': ['unique', 'time_window', 'changed'] } },
						description:
							"The history budget: past this many remembered keys, each poll forgets the oldest ones it did not list. A forgotten key that the source lists again is new again and starts again (with Unique, once n8n no longer keeps its first run's execution). 0: no cap.",
					},
					{
						displayName: 'Start Again (Item Keys)',
						name: 'startAgain',
						type: 'string',
						default: '',
						placeholder: 'e.g. ["INC-101", 42]',
						description:
							'JSON list of item keys (as Recent Starts shows them) to start once more, e.g. the items of a crashed run: each starts at the next poll that still lists it, under a new deduplication key. A list is applied once, when the workflow is published with it; change the list to apply it again.',
					},
				],
			},
		],
	};

	methods = { credentialTest: { imapCredentialTest, sftpCredentialTest } };

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const config = readConfig(this);
		const node = this.getNode();
		const staticData = this.getWorkflowStaticData('node');
		const saved = (staticData[STATE_KEY] ?? { v: 1 }) as PollTriggerState;
		if (saved.v !== 1)
			throw new NodeOperationError(
				node,
				`The Poll Trigger's saved state has format version ${String(saved.v)}, which this version of the node cannot read`,
			);
		const op = resolveOp(config.op);
		// The arguments are passed as written, so they are checked now, at activation and Execute step,
		// and so are the dedupe settings and an IMAP credential (its host and port).
		let loaded: ReturnType<typeof loadDedupeStore>;
		let context: Awaited<ReturnType<typeof opContext>>;
		let paged: PagedSource | undefined;
		try {
			loaded = loadDedupeStore(
				{
					dedupe: config.dedupe,
					firstPoll: config.firstPoll,
					maxRemembered: config.maxRemembered,
				},
				saved.dedupe,
			);
			checkPollOp(op);
			op.check(config.with);
			// A relative URL needs a Base URL (or, in version 1, this package's credential, which brings its own).
			if (config.http && config.http.auth.kind !== 'legacy' && typeof config.with.url === 'string')
				resolveUrl(config.with.url, config.http.baseUrl);
			context = await opContext(this, op, () => config.http ?? { auth: { kind: 'none' } });
			if (config.paging)
				paged = new PagedSource(
					config.paging,
					config.with,
					saved.paging,
					loaded.store,
					config.expressions,
					systemClock,
					config.firstPoll.mode === 'all',
				);
		} catch (error) {
			throw toNodeError(node, error);
		}
		const { store, notice } = loaded;
		const { id: workflowId } = this.getWorkflow();

		const ledger = new StartLedger(saved.ledger);
		if (this.getMode() === 'manual') {
			return {
				manualTriggerFunction: async () => {
					if (config.executeStepShows === 'recentStarts') {
						const entries = ledger.list();
						const unknown = endUnknownSummary(ledger);
						this.emit([
							entries.length === 0
								? [{ json: { recentStarts: 0, note: 'No start recorded yet' } }]
								: [
										...(unknown ? [{ json: unknown as IDataObject }] : []),
										...entries.map((entry) => ({ json: showStart(entry) })),
									],
						]);
						return;
					}
					const pages = await paged?.fetch({ context, memory: {}, timeoutMs: config.timeoutMs });
					const fetched =
						pages ??
						(await op.run(config.with, {
							...context,
							memory: (op.previewsWithMemory && saved.opMemory) || {},
							timeoutMs: config.timeoutMs,
						}));
					const withVersion = { withVersion: store.needsVersion };
					const keyed =
						pages?.kind === 'pages'
							? await config.expressions.keyList(pages.items, withVersion)
							: await config.expressions.keyItems(
									fetched.kind === 'data' ? fetched.data : [],
									withVersion,
								);
					const plan = store.plan(keyed, Date.now());
					// A history that costs, or keys the cap forgot, are said first, in a row of their own.
					const history = historySummary(store, config.maxRemembered);
					this.emit([
						[
							...(history ? [{ json: { history } }] : []),
							// The requests a poll would send, the cursor filled in (paginated http.request).
							...(pages?.kind === 'pages' && paged?.showsRequests
								? [
										{
											json: {
												requests: pages.requests,
												pages: pages.pages,
												pagingStopped: pages.stop,
											} as IDataObject,
										},
									]
								: []),
							...plan.candidates.map((candidate) => ({
								json: preview(candidate, fetched.kind === 'not_modified'),
							})),
						],
					]);
				},
			};
		}
		if (notice) this.logger.warn(`Poll Trigger "${node.name}": ${notice}`);
		const history = new HistoryWatch(store, config.maxRemembered);
		/** At activation and after every poll: what the history budget did, and what the history costs. */
		const reportHistory = () => {
			const { info, warnings } = history.check();
			if (info) this.logger.info(`Poll Trigger "${node.name}": ${info}`);
			for (const warning of warnings) this.logger.warn(`Poll Trigger "${node.name}": ${warning}`);
		};
		reportHistory();

		// Into every live copy of the node's static data: another trigger of the workflow, re-registered
		// on its own copy, must not store an old state of this one with its emits.
		const liveCopies = writerToLiveCopies(this);
		let { observed, opMemory } = saved;
		const outbox = new RunStage<IDataObject>(
			saved.outbox,
			(items) => JSON.stringify(items).length,
			// The static data without the outbox's items, as every run n8n creates loads it (runStage.ts);
			// the op's memory counts too (sftp.list keeps an entry per file of the folder).
			() => store.historyBytes + LEDGER_MAX_BYTES + JSON.stringify(opMemory ?? {}).length,
		);
		let startAgainApplied = saved.startAgainApplied;
		if (saved.pending)
			outbox.add([{ key: saved.pending.dedupeKey, items: saved.pending.items, keys: [] }]);
		// The trigger's one write: n8n stores it with the next emit (RunEmitter) or after activation.
		// n8n only notices a reassigned top-level key, so the whole state object is replaced.
		const writeState = () => {
			const state: PollTriggerState = {
				v: 1,
				dedupe: store.serialize(),
				observed,
				opMemory,
				outbox: outbox.saved(),
				ledger: ledger.saved(),
				...(paged?.saved && { paging: paged.saved }),
				...(startAgainApplied !== undefined && { startAgainApplied }),
			};
			liveCopies.write(STATE_KEY, state as unknown as IDataObject);
		};
		/** Keys emitted again at this activation: a refusal of one says it existed before. */
		const reEmitted = new Set<string>();
		const settled = (
			{ key, run }: RunToEmit<PollRun>,
			settlement: Settlement,
			error?: Error,
			result?: { status?: string },
		) => {
			outbox.settle(key as string);
			refill();
			ledger.settled(key as string, ledgerOutcome(settlement, result, error, reEmitted.has(key!)));
			if (settlement === 'started') return;
			// This run's items are forgotten, and the validators with them, so they come back at the
			// next poll (a 304 would hide them), under a new deduplication key: n8n may have saved the
			// run's execution, failed, under the old one (queue mode, Redis refused the job). The
			// change is written with the next poll.
			store.rollback(run.undo, run.keys);
			opMemory = undefined;
		};
		const emitter = new RunEmitter<PollRun>(this, {
			toItems: (run) => (run.items ?? []).map((json) => ({ json })),
			settled,
			rewrite: writeState,
			// n8n 1.x has no deduplication keys: each entry leaves the outbox as soon as n8n created its run.
			created: ({ key }) => {
				outbox.settle(key as string);
				refill();
			},
			moreToEmit: () => outbox.heldCount > 0,
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
		});

		/** Runs armed now are recorded as started and written, then emitted (core/poll/runStage.ts). */
		const started = (armed: Array<{ key: string; run: PollRun }>) => {
			const now = systemClock.now();
			for (const { key, run } of armed) ledger.started(key, run.keys, now);
			return armed;
		};
		/** Held runs of a burst go out as earlier ones settle, in batches. */
		function refill() {
			void emitter.emitTaken(() => {
				const armed = started(outbox.refill());
				if (armed.length > 0) writeState();
				return armed;
			});
		}

		let runner: PollRunner;
		/** Activation has ended: n8n saves static data now only on emit. */
		let activated = false;
		try {
			runner = new PollRunner({
				clock: systemClock,
				intervalMs: config.intervalMs,
				jitterMs: config.jitterMs,
				jitterSeed: `${workflowId}:${node.id}`,
				timeoutMs: config.timeoutMs,
				backoff: { maxMs: config.backoffMaxMs },
				failureLimit: config.failureLimit,
				restored: observed,
				persist: (latest) => {
					observed = latest;
					writeState();
					reportHistory();
				},
				onFailure: (error, report) =>
					saveTriggerFailure(
						this,
						new NodeOperationError(node, error, {
							message: error.message,
							description: `Poll failed (${report.reason === 'first_failure' ? 'first failure after a success' : `${report.consecutiveFailures} failures in a row`}); the trigger keeps polling with backoff.`,
						}),
					),
				poll: async (signal) => {
					let memory: OpMemory | undefined;
					const baseline = store.isFresh;
					const { outcome, runs } = await runPollCycle<unknown>(
						{
							expressions: config.expressions,
							store,
							clock: systemClock,
							commit: {
								keyPrefix: `poll:${workflowId}:${node.id}:`,
								onePerItem: config.oneRunPerItem,
							},
							fetch: async (fetchSignal) => {
								if (paged) {
									const pages = await paged.fetch({
										context,
										memory: opMemory ?? {},
										signal: fetchSignal,
										timeoutMs: config.timeoutMs,
									});
									if (pages.kind === 'not_modified') return { notModified: true };
									memory = pages.memory;
									return { items: pages.items };
								}
								const result = await op.run(config.with, {
									...context,
									memory: opMemory ?? {},
									signal: fetchSignal,
									timeoutMs: config.timeoutMs,
								});
								if (result.kind === 'not_modified') return { notModified: true };
								memory = result.memory;
								return { result: result.data };
							},
						},
						signal,
					);
					const pageLimit = paged?.commit();
					if (outcome.kind === 'not_modified') return outcome;
					const planned = runs.map(({ key, candidates, undo }) => ({
						key,
						items: candidates.map(toRunItem),
						keys: candidates.map((c) => c.key),
						...(undo && { undo }),
					}));
					// `none` remembers nothing: its runs have no key, nothing to refuse, no outbox.
					const unkeyed = planned
						.filter(({ key }) => key === undefined)
						.map(({ items, keys }) => ({ key: undefined, run: { items, keys } }));
					const armed = started(
						outbox.add(
							planned.filter((run): run is typeof run & { key: string } => run.key !== undefined),
						),
					);
					// Validators are kept with the runs they listed: both are in this one write.
					opMemory = memory;
					writeState();
					// A first poll after activation (the activation's failed) that starts nothing: n8n saves
					// static data only on emit, so without this a crash would take a new baseline later.
					if (baseline && activated && planned.length === 0) emitter.write();
					// Not awaited: the poll (and its timeout) ends with the op and this write; the emitter
					// sends the runs in order, after any still going out from the poll before.
					void emitter.emit([...unkeyed, ...armed]);
					if (pageLimit)
						saveTriggerFailure(
							this,
							new NodeOperationError(node, `Poll Trigger "${node.name}": ${pageLimit}`, {
								description:
									'The items of the pages fetched were started. This is recorded once, until a poll reaches known ground again.',
							}),
						);
					return outcome;
				},
			});
		} catch (error) {
			throw toNodeError(node, error);
		}
		// Start Again: applied once per list, written with n8n's save at the end of activation (or
		// the re-emission below); a crash before that applies it again, which starts nothing twice
		// (the marks are the same, only the attempt moves on).
		if (config.startAgain.length > 0 && startAgainId(config.startAgain) !== startAgainApplied) {
			store.startAgain(config.startAgain);
			ledger.startedAgain(config.startAgain);
			startAgainApplied = startAgainId(config.startAgain);
			writeState();
			this.logger.info(
				`Poll Trigger "${node.name}": ${config.startAgain.length} item key(s) marked to start again at the next poll that lists them`,
			);
		}
		// Runs held before the last stop or crash were never emitted: their items are forgotten (newest
		// first, as the cursor kinds' undo only goes back), so the next poll that lists them starts them.
		const held = outbox.takeStoredHeld();
		for (const { run } of [...held].reverse()) store.rollback(run.undo);
		if (held.length > 0)
			this.logger.info(
				`Poll Trigger "${node.name}": ${held.length} run(s) of a burst had not been emitted before the last stop; their items start at the next poll that lists them`,
			);
		// Runs armed before the last stop or crash; n8n refuses those it created, by their keys.
		if (saved.pending || held.length > 0) writeState();
		if (outbox.size > 0) {
			for (const { key } of outbox.armed()) reEmitted.add(key);
			await emitter.emit(outbox.armed());
		}
		// The first poll of a fresh store may only remember what is there (First Poll Starts: nothing),
		// which emits no run, and n8n writes static data only on emit and at the end of activation. So
		// that poll runs before activation ends, and n8n's activation save keeps what it remembered; a
		// crash later cannot make a new first poll take items that arrived since as its baseline.
		const firstPoll = runner.start();
		if (store.isFresh) await firstPoll;
		activated = true;
		return {
			closeFunction: async () => {
				liveCopies.close();
				runner.stop();
				emitter.stop();
			},
		};
	}
}

interface PollConfig {
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
	/** Unset: an hour, or the interval when that is longer. */
	backoffMaxMs: number | undefined;
	failureLimit: number;
	executeStepShows: 'nextPoll' | 'recentStarts';
	/** Pagination and the cursor (http.request only). */
	paging: PagingSettings | undefined;
	startAgain: ItemKey[];
	/** The history budget (keyed kinds); 0: no cap. */
	maxRemembered: number;
}

/** Reads and checks every parameter up front, so a mistake refuses activation with the field named. */
function readConfig(context: ITriggerFunctions): PollConfig {
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
			backoffMaxMs:
				options.backoffMaxSec === undefined ? undefined : Number(options.backoffMaxSec) * 1000,
			failureLimit: Number(options.failureLimit ?? 5),
			executeStepShows: options.executeStepShows === 'recentStarts' ? 'recentStarts' : 'nextPoll',
			paging:
				op === 'http.request'
					? readPagingSettings((name, fallback) => context.getNodeParameter(name, fallback))
					: undefined,
			startAgain: parseStartAgain(String(options.startAgain ?? '')),
			maxRemembered: Number(options.maxRemembered ?? 0),
		};
	} catch (error) {
		throw toNodeError(context.getNode(), error);
	}
}

function toRunItem(candidate: Candidate<unknown>): IDataObject {
	const { item } = candidate;
	return typeof item === 'object' && item !== null && !Array.isArray(item)
		? (item as IDataObject)
		: { value: item as IDataObject[keyof IDataObject] };
}

/** The one report of a burst's runs that n8n did not run (nodes/shared/emitRuns.ts). */
function notRunError(
	node: INode,
	runs: Array<{ keys: readonly ItemKey[]; error?: Error }>,
): NodeOperationError {
	const keys = runs.flatMap((run) => run.keys);
	const first = runs[0]?.error?.message ?? 'unknown error';
	const what = runs.length === 1 ? 'a run' : `${runs.length} runs`;
	return new NodeOperationError(
		node,
		`n8n could not start ${what} for ${describeKeys(keys)}: ${first}`,
		{
			description:
				'Their items were not remembered: the next poll that still lists them starts them again, each under a new deduplication key.',
		},
	);
}

function describeKeys(keys: readonly ItemKey[]): string {
	const shown = keys.map((key) => JSON.stringify(key));
	if (shown.length === 0) return 'a run saved by an earlier version';
	return shown.length === 1
		? `item ${shown[0]}`
		: `${shown.length} items (${shown.slice(0, 5).join(', ')}${shown.length > 5 ? ', …' : ''})`;
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

/** How the ledger records a settlement (see LedgerOutcome). */
function ledgerOutcome(
	settlement: Settlement,
	result: { status?: string } | undefined,
	error: Error | undefined,
	reEmitted: boolean,
): LedgerOutcome {
	if (settlement === 'not_created') return 'not run: rolled back';
	if (result) return `ended: ${result.status ?? 'unknown'}`;
	if (error) return `ended: ${error.name}`;
	return reEmitted ? 'existed at activation' : 'existed';
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
