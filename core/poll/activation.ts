import type { Clock, TimerHandle } from '../clock';
import type { PagedResult } from '../connectors/pagination';
import { inOp } from '../connectors/network';
import type { ConnectorOp, OpContext, OpMemory, OpResult } from '../connectors/types';
import type { RunOutlet, RunToEmit, Settlement } from '../outbox';
import {
	type Candidate,
	type DedupeConfig,
	type DedupeStore,
	type FirstPollPolicy,
	type SavedDedupeState,
} from './dedupe';
import type { ItemKey, PollExpressions } from './expressions';
import { HistoryWatch, historySummary } from './history';
import { type HistoryTable, historyTableKey, type SavedHistory } from './historyStore';
import { loadDedupeStore } from './kinds';
import {
	endUnknownSummary,
	LEDGER_MAX_BYTES,
	type LedgerEntry,
	type LedgerOutcome,
	StartLedger,
	startAgainId,
} from './ledger';
import {
	answerIsWholeList,
	OwedItems,
	type SavedOwed,
	type UnlistedItem,
	unlistedMessage,
} from './owed';
import { PagedSource, type PagingSettings, type SavedPagingState } from './paging';
import { checkedRetryPolicy, failureOf, type RetryPolicy, type RunResult } from '../retryPolicy';
import { type DeadLetter, RetryBook, type RetryEntry, type SavedRetries } from './retries';
import { checkedSilenceAfter, type SavedSilence, type SilenceNews, SilenceWatch } from './silence';
import {
	type FailureReport,
	type ObservedPollState,
	PollRunner,
	type PollRunnerOptions,
} from './runner';
import { checkedMaxRunsInFlight, RunStage, type StagedRun } from './runStage';
import { runPollCycle } from './start';

/** One item of a run as n8n gets it: an object item as it is, anything else as `{ value }`. */
export type RunItem = Record<string, unknown>;

/** One run in the outbox: its items as emitted, and how to forget them if n8n cannot create it. */
export type PollRun = StagedRun<RunItem>;

/** A run handed to the emitter: `key` is its n8n deduplication key (none: `dedupe: none`). */
export type PollRunToEmit = RunToEmit<PollRun>;

/** What the trigger keeps in the workflow's static data (per node), with a format version. */
export interface PollTriggerState {
	v: 1;
	dedupe?: SavedDedupeState;
	observed?: ObservedPollState;
	/** The op's memory from the last successful poll (HTTP validators). */
	opMemory?: OpMemory;
	/**
	 * Runs written but not yet settled by n8n (core/outbox.ts, as runStage.ts stages them): those
	 * stored with items are emitted again at every activation, the others restaged or forgotten.
	 */
	outbox?: Array<{ key: string; run: PollRun }>;
	/** Recent starts: deduplication key → item keys, when, how n8n settled it (ledger.ts). */
	ledger?: LedgerEntry[];
	/** The Start Again list last applied (startAgainId), so a list is applied once. */
	startAgainApplied?: string;
	/** Paginated http.request: $lastPollStartedAt, and whether Max Pages was reported (paging.ts). */
	paging?: SavedPagingState;
	/** Items whose run failed, waiting for an attempt, and the dead letters (retries.ts). */
	retries?: SavedRetries<RunItem>;
	/** The keys of items owed, and the pass over the source that gives up those it does not list (owed.ts). */
	owed?: SavedOwed;
	/** Alert When Nothing New For: when a poll last started something new (silence.ts). */
	silence?: SavedSilence;
	/** Before the outbox (0.1.x): the last run emitted. Moved into the outbox on load. */
	pending?: { items: RunItem[]; dedupeKey: string };
}

/** What a poll asks: the op, its arguments as written, and (http.request) pagination and the cursor. */
export interface PollSource {
	op: ConnectorOp;
	args: Record<string, unknown>;
	timeoutMs: number;
	paging?: PagingSettings;
}

type PagedPoll = Extract<PagedResult, { kind: 'pages' }>;

/** The op's transports and connections (n8n's credentials, as the node builds them). */
export type SourceContext = Omit<OpContext, 'memory' | 'signal' | 'timeoutMs'>;

/** The Poll Trigger's settings that shape an activation (the node reads and checks them). */
export interface PollActivationSettings {
	source: PollSource;
	dedupe: DedupeConfig;
	firstPoll: FirstPollPolicy;
	/** The history budget (keyed kinds); 0: no cap. */
	maxRemembered: number;
	/** Runs of a burst in flight at once (runStage.ts; the node's default is ARMED_RUNS_MAX). */
	maxRunsInFlight: number;
	expressions: PollExpressions;
	oneRunPerItem: boolean;
	/** Prefixes every deduplication key: the trigger's workflow and node. */
	keyPrefix: string;
	clock: Clock;
	/** When a Run Fails: Start the Item Again (retries.ts); unset: Leave It Failed. */
	retry?: RetryPolicy;
	/** Alert When Nothing New For (silence.ts), ms; unset: off. */
	silenceAfterMs?: number;
	/**
	 * Set: the keyed kinds' history is kept in this table beside static data (historyStore.ts), and
	 * `base` is the table's checkpoint of the saved store (savedHistoryStore() says which to load);
	 * the stores are keyed by `workflowId` (historyTableKey).
	 */
	history?: { table: HistoryTable; base: SavedHistory | undefined; workflowId: string };
}

/** The table key whose checkpoint an activation on this saved state needs, if any (historyStore.ts). */
export function savedHistoryStore(saved: PollTriggerState, workflowId: string): string | undefined {
	const { dedupe } = saved;
	return dedupe?.history !== undefined && typeof dedupe.id === 'string'
		? historyTableKey(workflowId, dedupe.id)
		: undefined;
}

/** How n8n ended a run, as the ledger tells it. */
export interface RunEnd {
	settlement: Settlement;
	error?: Error;
	/**
	 * The ended run's status, and the message of the error that ended it; unset when n8n refused the
	 * run as a duplicate.
	 */
	result?: RunResult;
}

/** Why the run failed, if n8n's status of it says it did (core/retryPolicy.ts). */
function runFailure(end: RunEnd): string | undefined {
	return end.settlement === 'started' ? failureOf(end.result) : undefined;
}

/** What a live activation is given: where its state, its runs and its news go. */
export interface PollActivationPorts {
	/** The state, the runs and the log lines (on n8n, the node's durable trigger). */
	outlet: RunOutlet<PollTriggerState, PollRun>;
	/** What the op needs to reach the source. */
	context: SourceContext;
	onPollFailure(error: Error, report: FailureReport): void;
	/** Max Pages cut a poll short (once per occurrence): the message of its one failed execution. */
	onPageLimit(message: string): void;
	/**
	 * Items owed that a full pass over the source did not list (owed.ts), named once: the message of
	 * its one failed execution.
	 */
	onUnlisted(message: string, keys: readonly ItemKey[]): void;
	/** An item's runs all failed (When a Run Fails): its one failed execution. */
	onDeadLetter(letter: DeadLetter): void;
	/** The source went silent for Alert When Nothing New For, or produces again: one failed execution. */
	onSilence(news: SilenceNews): void;
	/**
	 * How n8n's execution under this deduplication key stands now (its status), read from n8n;
	 * undefined: n8n holds none (pruned), or cannot be asked; a throw: asked again later. Asked for an
	 * attempt n8n refused as a duplicate: the run a kill -9 cut short, which n8n has since ended as it
	 * saw it (crashed). Unset: such an attempt's end stays unknown.
	 */
	runStatus?(key: string): Promise<RunResult | undefined>;
}

/** n8n's statuses of a run that has not ended yet: its end is asked again (ATTEMPT_END_RECHECK_MS). */
const UNENDED_STATUSES: ReadonlySet<string> = new Set(['new', 'running']);
/** How long before n8n is asked again how an attempt it holds unended has ended. */
export const ATTEMPT_END_RECHECK_MS = 60_000;

type RunnerSettings = Omit<
	PollRunnerOptions,
	'clock' | 'poll' | 'restored' | 'persist' | 'onFailure'
>;

/**
 * What one activation of a Poll Trigger owns: the dedupe store, the outbox (runStage.ts), the
 * ledger of recent starts, Start Again, and (when live) the runner. Reading the saved state and the
 * settings checks them and writes nothing, so a refused activation leaves the stored state as it
 * was. A live activation then `start`s: it forgets the runs held before the last stop, restages the
 * one-item runs stored without items (the next poll that lists an item emits it under its run's
 * key), emits those stored with items again (n8n refuses those it created, by key), and polls; each
 * poll is remembered and its runs
 * recorded in one write before they are emitted (core/outbox.ts), and each run n8n settles leaves
 * the outbox, its items rolled back when n8n could not create it.
 */
export class PollActivation {
	readonly store: DedupeStore;
	/** Said once at activation: how the saved history was read (a kind switch). */
	readonly notice: string | undefined;
	private readonly ledger: StartLedger;
	private readonly outbox: RunStage<RunItem>;
	/** Items whose run failed, and the dead letters (retries.ts). */
	private readonly retries: RetryBook<RunItem>;
	/** Set while an attempt is due later (live only). */
	private attemptTimer: TimerHandle | undefined;
	/** Attempts n8n still runs, asked about again later (learnAttemptEnd). */
	private readonly endRechecks = new Set<TimerHandle>();
	private readonly maxRunsInFlight: number;
	/** Alert When Nothing New For, when set. */
	private readonly silence: SilenceWatch | undefined;
	private readonly history: HistoryWatch;
	private readonly runner: PollRunner | undefined;
	/** Paginated http.request: the pages of a poll and the cursor in its request. */
	private readonly paged: PagedSource | undefined;
	/** Items owed: their keys, and the pass that gives up those the source no longer lists. */
	private readonly owed: OwedItems;
	/** Activation has ended: n8n saves static data now only on emit. */
	private activated = false;
	private observed: ObservedPollState | undefined;
	private opMemory: OpMemory | undefined;
	private startAgainApplied: string | undefined;
	/** While a poll reads: runs whose items became owed meanwhile (readAgain). */
	private owedDuringPoll: PollRun[] | undefined;
	/** Keys emitted again at this activation: a refusal of one says it existed before. */
	private readonly reEmitted = new Set<string>();
	private ports: PollActivationPorts | undefined;
	private stopped = false;
	/** The history table's checkpoints, one at a time (historyStore.ts); never rejects. */
	private checkpoints: Promise<void> = Promise.resolve();
	private checkpointing = false;
	/** A checkpoint was asked for while one was being saved. */
	private checkpointAgain = false;
	/** A poll asked for a checkpoint: no settlement write carries the state written after it. */
	private storeAfterCheckpoint = false;
	/** The last checkpoint failed: said once, until one is saved again. */
	private checkpointFailed = false;

	/** `runner`: only for a live activation (Execute step polls once, by hand). */
	constructor(
		private readonly saved: PollTriggerState,
		private readonly settings: PollActivationSettings,
		runner?: RunnerSettings,
	) {
		if (saved.v !== 1)
			throw new Error(
				`The Poll Trigger's saved state has format version ${String(saved.v)}, which this version of the node cannot read`,
			);
		const loaded = loadDedupeStore(
			{
				...settings,
				...(settings.history && { historyTable: { base: settings.history.base } }),
			},
			saved.dedupe,
		);
		this.store = loaded.store;
		this.notice = loaded.notice;
		this.ledger = new StartLedger(saved.ledger);
		this.retries = new RetryBook(
			saved.retries,
			settings.retry && checkedRetryPolicy(settings.retry),
		);
		this.maxRunsInFlight = checkedMaxRunsInFlight(settings.maxRunsInFlight);
		this.silence =
			settings.silenceAfterMs === undefined
				? undefined
				: new SilenceWatch(
						checkedSilenceAfter(settings.silenceAfterMs),
						saved.silence,
						settings.clock.now(),
					);
		this.history = new HistoryWatch(this.store, settings.maxRemembered);
		this.opMemory = saved.opMemory;
		this.outbox = new RunStage<RunItem>(
			saved.outbox,
			(items) => JSON.stringify(items).length,
			// The static data without the outbox's items, as every run n8n creates loads it (runStage.ts);
			// the op's memory counts too (sftp.list keeps an entry per file of the folder), and the retry
			// book (its waiting items and dead letters, bounded: retries.ts).
			() =>
				this.store.historyBytes +
				LEDGER_MAX_BYTES +
				JSON.stringify(this.opMemory ?? {}).length +
				this.retries.bytes,
			this.maxRunsInFlight,
		);
		if (saved.pending)
			this.outbox.add(
				[{ key: saved.pending.dedupeKey, items: saved.pending.items, keys: [] }],
				true,
			);
		this.observed = saved.observed;
		this.owed = new OwedItems(saved.owed);
		this.startAgainApplied = saved.startAgainApplied;
		const { paging, args } = settings.source;
		this.paged =
			paging &&
			new PagedSource(
				paging,
				args,
				saved.paging,
				this.store,
				settings.expressions,
				settings.clock,
				settings.firstPoll.mode === 'all',
			);
		this.runner =
			runner &&
			new PollRunner({
				...runner,
				clock: settings.clock,
				restored: this.observed,
				persist: (latest) => {
					this.observed = latest;
					const news = this.silence?.polled(
						latest.lastOutcome === 'new_items',
						settings.clock.now(),
					);
					this.write();
					this.reportHistory();
					if (news) this.reportSilence(news);
				},
				onFailure: (error, report) => this.live.onPollFailure(error, report),
				poll: async (signal) => await this.poll(signal),
			});
	}

	/** Recent starts, newest last (Execute step's Recent Starts). */
	recentStarts(): LedgerEntry[] {
		return this.ledger.list();
	}

	/** Items whose runs all failed, newest first (Execute step's Dead Letters). */
	deadLetters(): DeadLetter[] {
		return this.retries.deadLetters();
	}

	/** Items whose run failed, waiting for their next attempt or in flight (Execute step). */
	waitingAttempts(): ReadonlyArray<RetryEntry<RunItem>> {
		return this.retries.waitingItems();
	}

	/** Recent Starts' first row when some runs' end is unknown (ledger.ts). */
	endUnknown(): Record<string, unknown> | undefined {
		return endUnknownSummary(this.ledger);
	}

	/**
	 * The op's memory as the last poll left it, for Execute step of an op that previews with it
	 * (previewsWithMemory: sftp.list's files seen, sql.query's position); empty when there is none.
	 */
	get lastOpMemory(): OpMemory {
		return this.opMemory ?? {};
	}

	/**
	 * Execute step: fetches as the next poll would (the validators left out, the op's memory only for
	 * an op that previews with it) and says what that poll would do; starts and remembers nothing.
	 */
	async preview(
		context: SourceContext,
		now: number,
	): Promise<{
		history: ReturnType<typeof historySummary>;
		candidates: ReadonlyArray<Candidate<unknown>>;
		notModified: boolean;
		/** The requests a poll would send, the cursor filled in (paginated http.request). */
		requests?: Pick<PagedPoll, 'requests' | 'pages'> & { pagingStopped: PagedPoll['stop'] };
	}> {
		const memory = this.settings.source.op.previewsWithMemory ? this.lastOpMemory : {};
		const fetched = await this.fetch(context, this.paged ? {} : memory);
		const withVersion = { withVersion: this.store.needsVersion };
		const { expressions } = this.settings;
		const keyed =
			fetched.kind === 'pages'
				? await expressions.keyList(fetched.items, withVersion)
				: await expressions.keyItems(fetched.kind === 'data' ? fetched.data : [], withVersion);
		return {
			history: historySummary(this.store, this.settings.maxRemembered),
			candidates: this.store.plan(keyed, now).candidates,
			notModified: fetched.kind === 'not_modified',
			...(fetched.kind === 'pages' &&
				this.paged?.showsRequests && {
					requests: {
						requests: fetched.requests,
						pages: fetched.pages,
						pagingStopped: fetched.stop,
					},
				}),
		};
	}

	/**
	 * Goes live: applies Start Again (once per list), forgets (held) or restages (one-item runs
	 * stored without items) the runs not known to have started before the last stop or crash, emits
	 * those stored with items again (without waiting for n8n to create them), and starts polling.
	 * Resolves once the first poll of a fresh
	 * store is done: it may only remember what is there (First Poll Starts: nothing), which emits no
	 * run, and n8n writes static data only on emit and at the end of activation, so n8n's activation
	 * save keeps that baseline; a crash later cannot make a new first poll take items that arrived
	 * since as its baseline.
	 */
	async start(ports: PollActivationPorts, startAgain: readonly ItemKey[]): Promise<void> {
		this.ports = ports;
		this.reportHistory();
		// Start Again is written with n8n's save at the end of activation (or the re-emission below);
		// a crash before that applies it again, which starts nothing twice (the marks are the same,
		// only the attempt moves on).
		if (startAgain.length > 0 && startAgainId(startAgain) !== this.startAgainApplied) {
			this.store.startAgain(startAgain);
			this.ledger.startedAgain(startAgain);
			const takenBack = this.retries.takeBack(startAgain);
			if (takenBack > 0)
				ports.outlet.info(
					`${takenBack} dead letter(s) or waiting item(s) taken back by Start Again`,
				);
			this.startAgainApplied = startAgainId(startAgain);
			this.paged?.owe(0);
			this.owed.owe(startAgain);
			this.write();
			ports.outlet.info(
				`${startAgain.length} item key(s) marked to start again at the next poll that lists them`,
			);
		}
		// Runs held before the last stop or crash were never emitted: their items are forgotten (newest
		// first, as the cursor kinds' undo only goes back), so the next poll that lists them starts them.
		// One-item runs stored without items may have been created: restaged, so the next poll that
		// lists an item emits it under its run's key, which n8n refuses if it was created. Those this
		// process emitted and n8n has not settled yet stay, and are settled with their runs.
		const { held, unsure } = this.outbox.takeStoredWithoutItems((key) =>
			ports.outlet.inFlight(key),
		);
		// Marked to start again, so that a newest-first source is paged until they are listed (paging.ts).
		for (const { run } of [...held].reverse()) this.store.rollback(run.undo, run.keys);
		this.store.restage(
			[...unsure].reverse().map(({ key, run }) => ({ key, undo: run.undo, itemKey: run.keys[0] })),
		);
		for (const { key, run } of unsure) {
			// Recent Starts lists it as a run whose end is unknown until its item is listed again.
			if (!this.ledger.has(key)) this.ledger.started(key, run.keys, this.settings.clock.now());
		}
		// A restaged run refused when its item is listed again existed before: its end is unknown
		// (Recent Starts' Start Again list), whichever activation restaged it (a second crash can come
		// before a poll lists the item).
		for (const key of this.store.restagedKeys()) this.reEmitted.add(key);
		const notKnown = held.length + unsure.length;
		// Their items are listed again only if the op reads them again: its read position goes back to
		// just before the earliest of them (sql.query's keyset, s3.list's afterLastKey), or its memory
		// (sftp.list's files, HTTP validators) is forgotten, as for a run n8n could not create
		// (settled), and written below.
		if (notKnown > 0) {
			this.readAgain([...held, ...unsure].map(({ run }) => run));
			this.paged?.owe();
			this.owed.owe([...held, ...unsure].flatMap(({ run }) => run.keys));
			ports.outlet.info(
				`${notKnown} run(s) of a burst were not known to have started before the last stop; their items start at the next poll that lists them (n8n 2.x refuses those it had created, by their keys; n8n 1.x has no keys and may start one or two of them again)`,
			);
		}
		// Runs stored with their items before the last stop or crash; n8n refuses those it created.
		if (this.saved.pending || notKnown > 0) this.write();
		// Not awaited: hundreds of stored runs (a crash mid-burst) take n8n longer to create than it
		// gives a publication (n8n 2.41 abandons it after about 84 s). The emitter sends them in order,
		// before the first poll's runs.
		// Attempts emitted before the last stop: n8n refuses those it created (their end is unknown).
		const attempts = this.retries.emittedBefore().map(attemptToEmit);
		if (this.outbox.size > 0 || attempts.length > 0) {
			const armed = [...this.outbox.armed(), ...attempts];
			for (const { key } of armed) this.reEmitted.add(key);
			void ports.outlet.emit(armed);
		}
		this.scheduleAttempts();
		this.checkpoint();
		const firstPoll = this.runner?.start();
		if (this.store.isFresh) await firstPoll;
		// n8n stores static data after activation: with the state written after the checkpoint (a
		// switch's `entries` dropped, or a first poll's baseline out of the journal: a million keys would
		// be 28 MB of it), which no run may carry for a long while.
		await this.checkpoints;
		this.activated = true;
	}

	/** No more polls or checkpoints; resolves once a checkpoint being saved is done. */
	async stop(): Promise<void> {
		this.stopped = true;
		this.runner?.stop();
		this.attemptTimer?.cancel();
		for (const recheck of this.endRechecks) recheck.cancel();
		await this.checkpoints;
	}

	/** Resolves once the history table holds the checkpoints asked for so far (saved or failed). */
	async historySaved(): Promise<void> {
		await this.checkpoints;
	}

	/**
	 * Saves the history in its table, when one is used, if it changed and nothing can still undo a
	 * start: no run unsettled or held (historyStore.ts, step 2). Then writes the state, which drops
	 * the journal the table now holds.
	 */
	private checkpoint(fromPoll = false): void {
		const history = this.settings.history;
		if (!history || this.stopped || this.outbox.size > 0) return;
		if (fromPoll) this.storeAfterCheckpoint = true;
		if (this.checkpointing) {
			this.checkpointAgain = true;
			return;
		}
		const pending = this.store.historyCheckpoint();
		if (!pending) {
			this.storeAfterCheckpoint = false;
			return;
		}
		this.checkpointing = true;
		const key = historyTableKey(history.workflowId, this.store.id);
		this.checkpoints = (async () => {
			try {
				await history.table.save(key, pending.checkpoint);
				pending.saved();
				if (this.checkpointFailed) this.out.info('The history is saved in its table again');
				this.checkpointFailed = false;
				if (!this.stopped) {
					this.write();
					// A poll's checkpoint: the state written after it drops the journal (or a switch's
					// `entries`), and no run carries it.
					if (this.storeAfterCheckpoint && this.activated) this.out.storeNow();
				}
				this.storeAfterCheckpoint = false;
			} catch (error) {
				if (!this.checkpointFailed)
					this.out.warn(
						`The history could not be saved in its table; its changes stay in static data until it can be: ${(error as Error).message}`,
					);
				this.checkpointFailed = true;
			} finally {
				this.checkpointing = false;
			}
			if (this.checkpointAgain) {
				this.checkpointAgain = false;
				this.checkpoint();
			}
		})();
	}

	/**
	 * n8n settled a keyed run: it leaves the outbox and the ledger says how it ended. When n8n could
	 * not create it, its items are forgotten, the op's read position goes back to just before them
	 * and the validators are forgotten (readAgain), so they come back at the next poll (a 304 would
	 * hide them), under a new deduplication key: n8n may have saved the run's
	 * execution, failed, under the old one (queue mode, Redis refused the job). The change is written
	 * with the next poll. Returns the keys of the items rolled back, if any.
	 */
	settled(key: string, run: PollRun, end: RunEnd): readonly ItemKey[] | undefined {
		if (this.retries.owns(key)) {
			this.attemptSettled(key, run, end);
			return undefined;
		}
		// The staged run's undo: a poll may have planned the run again since it was emitted (RunStage.add).
		const undo = this.outbox.settle(key)?.undo ?? run.undo;
		this.ledger.settled(key, ledgerOutcome(end, this.reEmitted.has(key)));
		const failure = runFailure(end);
		if (this.settings.retry && failure !== undefined) {
			this.runFailed(key, run, failure);
			this.scheduleAttempts();
		}
		const rolledBack = end.settlement !== 'started';
		if (rolledBack) {
			this.store.rollback(undo, run.keys);
			this.readAgain([run]);
			this.paged?.owe();
			this.owed.owe(run.keys);
		}
		this.leftOutbox();
		return rolledBack ? run.keys : undefined;
	}

	/**
	 * A run failed (When a Run Fails: Start the Item Again): its item waits for its next attempt, or
	 * is a dead letter, reported once. Written with the settlement write of the run.
	 */
	private runFailed(key: string, run: PollRun, failure: string): void {
		const outcome = this.retries.failed(
			key,
			{ keys: run.keys, items: run.items ?? [] },
			failure,
			this.settings.clock.now(),
		);
		if (outcome.kind === 'dead') this.live.onDeadLetter(outcome.letter);
	}

	/**
	 * An attempt's run settled: it failed again, ended, or n8n could not create it. Refused as a
	 * duplicate, it exists (emitted again after a kill -9 cut it short): how it ended is n8n's status
	 * of it, asked for (learnAttemptEnd); the item stays in flight in the book until then.
	 */
	private attemptSettled(key: string, run: PollRun, end: RunEnd): void {
		const refused = end.settlement === 'started' && !end.result && !end.error;
		if (refused && this.live.runStatus) {
			this.ledger.settled(key, ledgerOutcome(end, this.reEmitted.has(key)));
			void this.learnAttemptEnd(key, run);
			return;
		}
		this.attemptEnded(key, run, end);
	}

	/**
	 * Asks n8n how the attempt under `key` ended, and settles it so (n8n's status crashed or error:
	 * a failed attempt; none: its end unknown, the item leaves the book), written at once where n8n
	 * can (no run carries it). An attempt n8n still runs, or a question n8n could not answer, is asked
	 * about again later; a stop before
	 * the answer leaves it in flight in the state, emitted and asked about again at the next activation.
	 */
	private async learnAttemptEnd(key: string, run: PollRun): Promise<void> {
		if (this.stopped) return;
		let status: RunResult | undefined;
		let unanswered = false;
		try {
			status = await this.live.runStatus?.(key);
		} catch (error) {
			this.out.warn(
				`n8n could not say how the run ${key} ended (asked again in a minute): ${(error as Error).message}`,
			);
			unanswered = true;
		}
		if (this.stopped) return;
		if (unanswered || (status?.status !== undefined && UNENDED_STATUSES.has(status.status))) {
			const recheck = this.settings.clock.setTimer(() => {
				this.endRechecks.delete(recheck);
				void this.learnAttemptEnd(key, run);
			}, ATTEMPT_END_RECHECK_MS);
			this.endRechecks.add(recheck);
			return;
		}
		this.attemptEnded(key, run, { settlement: 'started', ...(status && { result: status }) });
		this.write();
		this.out.storeNow();
	}

	/** An attempt's run ended as `end` says, or n8n could not create it. */
	private attemptEnded(key: string, run: PollRun, end: RunEnd): void {
		this.ledger.settled(
			key,
			end.settlement === 'not_created'
				? 'not run: attempted again later'
				: ledgerOutcome(end, this.reEmitted.has(key)),
		);
		const failure = runFailure(end);
		if (end.settlement === 'not_created') this.retries.notCreated(key, this.settings.clock.now());
		else if (failure !== undefined) this.runFailed(key, run, failure);
		else this.retries.ended(key);
		this.scheduleAttempts();
	}

	/**
	 * Names, in one report, the items owed that a full pass did not list (owed.ts), but those whose
	 * restaged run n8n holds: that run did start before the stop or crash.
	 */
	private async reportUnlisted(items: readonly UnlistedItem[]): Promise<void> {
		const names: ItemKey[] = [];
		for (const { name, runKey } of items) {
			let held: RunResult | undefined;
			try {
				held = runKey === undefined ? undefined : await this.live.runStatus?.(runKey);
			} catch {
				// n8n could not say: the item is named, as not known to have started.
			}
			if (held === undefined) names.push(name);
		}
		if (names.length > 0 && !this.stopped) this.live.onUnlisted(unlistedMessage(names), names);
	}

	/**
	 * Reports the silence (or its end) once; the state that says so is stored now where n8n can
	 * (n8n 2.x), as a silent source starts no run whose emit would store it.
	 */
	private reportSilence(news: SilenceNews): void {
		this.live.onSilence(news);
		if (news.kind === 'silent') this.out.storeNow();
	}

	/** Arms the timer for the next attempt due, unless as many attempts as allowed are in flight. */
	private scheduleAttempts(): void {
		this.attemptTimer?.cancel();
		this.attemptTimer = undefined;
		const dueAt = this.retries.nextDueAt();
		if (!this.runner || this.stopped || dueAt === undefined) return;
		if (this.retries.inFlightCount >= this.maxRunsInFlight) return;
		const { clock } = this.settings;
		this.attemptTimer = clock.setTimer(() => this.emitDueAttempts(), dueAt - clock.now());
	}

	/** The attempts due now go out: recorded in the state their emit writes. */
	private emitDueAttempts(): void {
		this.attemptTimer = undefined;
		void this.out.emitTaken(() => {
			if (this.stopped) return [];
			const now = this.settings.clock.now();
			const room = this.maxRunsInFlight - this.retries.inFlightCount;
			const due = this.retries.takeDue(now, room).map(attemptToEmit);
			for (const { key, run } of due) this.ledger.started(key, run.keys, now);
			if (due.length > 0) this.write();
			this.scheduleAttempts();
			return due;
		});
	}

	/** n8n 1.x (no deduplication keys): the run exists, so it leaves the outbox at once. */
	created(key: string): void {
		this.outbox.settle(key);
		this.leftOutbox();
	}

	/** A run left the outbox: the rest of the burst goes out, and the history may be checkpointed. */
	private leftOutbox(): void {
		this.refill();
		if (this.outbox.size === 0) this.paged?.runsSettled();
		this.checkpoint();
	}

	/** Whether runs of a burst are still to go out. */
	get moreToEmit(): boolean {
		return this.outbox.heldCount > 0;
	}

	/**
	 * The items of these runs are owed: the op reads them again. An op with a read position goes back
	 * to just before the earliest of them and, up to where it had read, lists only them
	 * (ConnectorOp.rewind), so no item between starts again (Remember at Most may have forgotten its
	 * key); any other op's memory is forgotten (HTTP validators, sftp.list's files), as is a read
	 * position the op cannot place them by (items the Items expression made anew). A poll reading
	 * meanwhile read from before: its memory goes back the same way once it is done.
	 */
	private readAgain(runs: readonly PollRun[]): void {
		this.opMemory = this.rewound(this.opMemory, runs);
		this.owedDuringPoll?.push(...runs);
	}

	private rewound(memory: OpMemory | undefined, runs: readonly PollRun[]): OpMemory | undefined {
		const { op } = this.settings.source;
		const placed = runs.every((run) => run.positions?.length === run.keys.length);
		if (!op.rewind || !placed) return undefined;
		return op.rewind(
			memory,
			runs.flatMap((run) => run.positions ?? []),
		);
	}

	/** The trigger's one write. n8n only notices a reassigned top-level key: the whole state is new. */
	write(): void {
		const retries = this.retries.saved();
		this.out.write({
			v: 1,
			dedupe: this.store.serialize(),
			observed: this.observed,
			opMemory: this.opMemory,
			outbox: this.outbox.saved(),
			ledger: this.ledger.saved(),
			...(this.paged?.saved && { paging: this.paged.saved }),
			...(this.startAgainApplied !== undefined && { startAgainApplied: this.startAgainApplied }),
			...(retries && { retries }),
			...(this.owed.saved() && { owed: this.owed.saved() }),
			...(this.silence && { silence: this.silence.saved() }),
		});
	}

	private get live(): PollActivationPorts {
		if (!this.ports) throw new Error('The Poll Trigger activation has not started');
		return this.ports;
	}

	private get out(): RunOutlet<PollTriggerState, PollRun> {
		return this.live.outlet;
	}

	/** At activation and after every poll: what the history budget did, and what the history costs. */
	private reportHistory(): void {
		const { info, warnings } = this.history.check();
		if (info) this.out.info(info);
		for (const warning of warnings) this.out.warn(warning);
	}

	/** Runs armed now are recorded as started, to be written, then emitted (runStage.ts). */
	private started(armed: Array<{ key: string; run: PollRun }>) {
		const now = this.settings.clock.now();
		for (const { key, run } of armed) this.ledger.started(key, run.keys, now);
		return armed;
	}

	/**
	 * The rest of a burst goes out as earlier runs settle; a run of several items is stored with them
	 * first (a write), a one-item run is already stored (runStage.ts).
	 */
	private refill(): void {
		void this.out.emitTaken(() => {
			const armed = this.started(this.outbox.armNext());
			if (armed.length > 0 && !this.settings.oneRunPerItem) this.write();
			return armed;
		});
	}

	/** One poll's fetch: the pages of a paginated source, or the op's one call. */
	private async fetch(
		context: SourceContext,
		memory: OpMemory,
		signal?: AbortSignal,
	): Promise<OpResult | PagedResult> {
		const { op, args, timeoutMs } = this.settings.source;
		try {
			if (this.paged) return await this.paged.fetch({ context, memory, signal, timeoutMs });
			const baseline = this.store.isFresh && this.settings.firstPoll.mode === 'none';
			return await op.run(args, { ...context, memory, signal, timeoutMs, baseline });
		} catch (error) {
			throw inOp(op.name, error);
		}
	}

	private async poll(signal: AbortSignal) {
		this.owedDuringPoll = [];
		try {
			return await this.pollOnce(signal);
		} finally {
			this.owedDuringPoll = undefined;
		}
	}

	/**
	 * One fetch of a poll. A first poll that only takes a baseline (First Poll Starts nothing or the
	 * newest N) reads on while the op stops at its bound (OpResult `more`: sql.query's maxRows,
	 * s3.list's maxObjects), so that the whole listing is its baseline, not its first part; the
	 * position kept is the first one a call left before the end of what it read (the lag), else the
	 * last call's.
	 */
	private async fetchForPoll(
		signal: AbortSignal,
	): Promise<{ fetched: OpResult | PagedResult; items?: unknown[] }> {
		const fetched = await this.fetch(this.live.context, this.opMemory ?? {}, signal);
		const wholeListing = this.store.isFresh && this.settings.firstPoll.mode !== 'all';
		if (fetched.kind !== 'data' || !fetched.more || !wholeListing) return { fetched };
		const items: unknown[] = [];
		const positionOfs: Array<NonNullable<typeof fetched.positionOf>> = [];
		let kept: OpMemory | undefined;
		let from = this.opMemory ?? {};
		for (let call: OpResult | PagedResult = fetched; ; ) {
			if (call.kind !== 'data') break;
			items.push(...(await this.settings.expressions.selectItems(call.data)));
			if (call.positionOf) positionOfs.push(call.positionOf);
			// An op whose `more` does not move on would read the same part for ever.
			const more = call.more && !sameMemory(from, call.more) ? call.more : undefined;
			if (kept === undefined && (!more || !sameMemory(call.memory, more))) kept = call.memory;
			if (!more) break;
			from = more;
			call = await this.fetch(this.live.context, more, signal);
		}
		return {
			fetched: {
				kind: 'data',
				data: undefined,
				memory: kept,
				positionOf: (item) => positionOfs.map((of) => of(item)).find((at) => at !== undefined),
			},
			items,
		};
	}

	private async pollOnce(signal: AbortSignal) {
		let memory: OpMemory | undefined;
		let wholeList = false;
		let positionOf: ((item: unknown) => string | undefined) | undefined;
		const baseline = this.store.isFresh;
		const forgottenBefore = this.store.forgotten?.total ?? 0;
		const pass = this.owed.begin(this.store, this.paged?.readsFromHead ?? true);
		const { outcome, runs } = await runPollCycle<unknown>(
			{
				expressions: this.settings.expressions,
				store: this.store,
				clock: this.settings.clock,
				commit: {
					keyPrefix: this.settings.keyPrefix,
					onePerItem: this.settings.oneRunPerItem,
					newestFirst: this.settings.source.paging?.listOrder === 'newestFirst',
				},
				fetch: async (fetchSignal) => {
					const { fetched, items } = await this.fetchForPoll(fetchSignal);
					if (fetched.kind === 'not_modified') return { notModified: true };
					// The top of a newest-first list only: Max Pages cut it short (CommitOptions.topOnly).
					const topOnly =
						fetched.kind === 'pages' &&
						fetched.stop === 'page_limit' &&
						this.settings.source.paging?.listOrder === 'newestFirst';
					memory = fetched.memory;
					wholeList = fetched.kind === 'pages' || answerIsWholeList(fetched.data);
					if (fetched.kind === 'data') positionOf = fetched.positionOf;
					if (items) return { items, topOnly };
					if (fetched.kind === 'data')
						return { result: fetched.data, listedToo: notYetItems(fetched.data) };
					// Read only for the items owed there: of those items, the owed alone are planned
					// (paging.ts, history).
					const history = this.paged!.history;
					return {
						items: fetched.items,
						topOnly,
						endsPass: this.paged!.endsPass,
						...(history && { only: { owed: this.store.owedHashes(), history } }),
					};
				},
			},
			signal,
		);
		const pageLimit = this.paged?.commit(
			this.outbox.size > 0 || runs.some(({ key }) => key !== undefined),
		);
		const fellBack = this.paged?.takeFallBack();
		if (fellBack) this.out.warn(fellBack);
		if (outcome.kind === 'not_modified') return outcome;
		const unlisted =
			wholeList && (this.paged?.endedListing ?? true) ? this.owed.end(pass, this.store) : [];
		const planned = runs.map(({ key, candidates, undo }) => {
			const positions = positionOf && candidates.map(({ item }) => positionOf!(item));
			return {
				key,
				items: candidates.map(({ item }) => runItem(item)),
				keys: candidates.map((c) => c.key),
				...(undo && { undo }),
				...(positions?.every((at) => at !== undefined) && { positions: positions as string[] }),
			};
		});
		// `none` remembers nothing: its runs have no key, nothing to refuse, no outbox.
		const unkeyed = planned
			.filter(({ key }) => key === undefined)
			.map(({ items, keys }) => ({ key: undefined, run: { items, keys } }));
		const armed = this.started(
			this.outbox.add(
				planned.filter((run): run is typeof run & { key: string } => run.key !== undefined),
				!this.settings.oneRunPerItem,
			),
		);
		// Validators are kept with the runs they listed: both are in this one write. Runs whose items
		// became owed while the poll read: their items are read again from here (readAgain).
		this.opMemory = memory;
		const owed = this.owedDuringPoll ?? [];
		if (owed.length > 0) this.opMemory = this.rewound(memory, owed);
		this.write();
		// n8n saves static data only on emit. A poll that starts nothing saves here what a restart must
		// not undo: a first poll's baseline after activation (the activation's failed), else a crash
		// would take a new baseline later; keys the cap forgot, else a restart or a publish would find
		// them remembered again, over Remember at Most (the model simulation, seed 44).
		const forgot = (this.store.forgotten?.total ?? 0) > forgottenBefore;
		if (planned.length === 0 && ((baseline && this.activated) || forgot)) this.out.writeNow();
		// Not awaited: the poll (and its timeout) ends with the op and this write; the emitter sends
		// the runs in order, after any still going out from the poll before.
		void this.out.emit([...unkeyed, ...armed]);
		if (pageLimit) this.live.onPageLimit(pageLimit);
		if (unlisted.length > 0) void this.reportUnlisted(unlisted);
		// A poll that started nothing (or only unkeyed runs) leaves nothing to settle: no settlement
		// write stores the state written after its checkpoint.
		this.checkpoint(true);
		return outcome;
	}
}

/** Files an answer lists that are still being written (`uploading`: sftp.list, ftp.list), if any. */
function notYetItems(data: unknown): unknown[] | undefined {
	const uploading = (data as { uploading?: unknown } | null | undefined)?.uploading;
	return Array.isArray(uploading) && uploading.length > 0 ? uploading : undefined;
}

/** Whether two memories of an op hold the same. */
function sameMemory(a: OpMemory | undefined, b: OpMemory): boolean {
	const keys = Object.keys(b);
	return (
		a !== undefined && Object.keys(a).length === keys.length && keys.every((k) => a[k] === b[k])
	);
}

/** An item as a run's item: an object as it is, anything else as `{ value }`. */
export function runItem(item: unknown): RunItem {
	return typeof item === 'object' && item !== null && !Array.isArray(item)
		? (item as RunItem)
		: { value: item };
}

/** An attempt's run as the emitter takes it: the items as they first ran, with the attempt. */
function attemptToEmit(attempt: {
	key: string;
	keys: ItemKey[];
	items: RunItem[];
	attempt: number;
}): PollRunToEmit & { key: string } {
	return {
		key: attempt.key,
		run: { items: attempt.items, keys: attempt.keys, attempt: attempt.attempt },
	};
}

/** How the ledger records a settlement (see LedgerOutcome). */
function ledgerOutcome({ settlement, result, error }: RunEnd, reEmitted: boolean): LedgerOutcome {
	if (settlement === 'not_created') return 'not run: rolled back';
	if (result) return `ended: ${result.status ?? 'unknown'}`;
	if (error) return `ended: ${error.name}`;
	return reEmitted ? 'existed at activation' : 'existed';
}
