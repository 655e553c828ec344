import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

import { loadDedupeStore, PollExpressions } from '../../core/poll';
import { FakeSystem } from './fakeSystem';
import type { Execution, N8nInstance } from './n8nInstance';
import { waitFor } from './net';
import { marker, node, PACKAGE, workflow } from '../e2e/workflowBuilder';

/**
 * Chaos: n8n killed with SIGKILL at random moments while bursts of runs are being started, the
 * sources changed while it is down, restarted, and at the end every item or window counted: how many
 * executions carry it. Shared by the short e2e test (npm test) and `npm run chaos`.
 *
 * One n8n runs every case at once: each Poll Trigger case is a published workflow with its own path
 * on one fake source, each schedule case a published Durable Schedule Trigger. A round:
 *
 *   1. every poll source gets its burst of new items (for `changed`, new versions of known items);
 *      every run reports each item to the source as it runs (an HTTP Request node; a schedule run,
 *      its start), and the source holds the round's first report of each case unanswered until the
 *      kill: that run is going when n8n dies, whatever the load. The source holds each poll case's
 *      answer until every case has asked and every schedule case has a run held (at most 15 s), so
 *      all bursts are processed at once, beside a schedule run. The kill lands once a random number
 *      of the round's runs (1 to a third of its new items) have reported, or `killWithinMs` after
 *      the answers if none do, and once every case has a run held (waiting at most 2 min more).
 *      After a restart the schedule's catch-up of the windows missed while n8n was down is being
 *      started then too;
 *   2. SIGKILL; n8n stays down `downtimeMs` (schedule windows are missed);
 *   3. while it is down, the harness reads each trigger's stored state (SQLite) and changes every
 *      source: the next burst is added, items are removed (some of the burst just listed, some of
 *      the history), the list is reordered, and for `changed` versions are bumped again;
 *   4. n8n starts on the same database with its default crash recovery (`extensive`): a run killed
 *      mid-way is saved `crashed`, and its trigger output may be replaced by placeholder items
 *      (`isArtificialRecoveredEventItem`). The harness names what a crashed execution carried by its
 *      deduplication key, computed with the package's own core (`loadDedupeStore` → plan → commit)
 *      from the trigger's store id (in the workflow's static data) and each item's identity; n8n
 *      keeps the key on the execution row through recovery (recovery updates status, stoppedAt and
 *      data only) and its public API returns it with a single execution (`GET /executions/{id}`,
 *      not in the list).
 *
 * After the last kill: one restart, then the harness waits until every item owed has run, nothing
 * is running, and every trigger has polled twice more (a late repeat would show), and counts.
 *
 * What counts, for a poll case, when the source changed between kill and restart. An identity is an
 * item's id (for `changed`, id and version: a bumped version is a new start); it is "new" if the source
 * listed it after the first poll remembered the history.
 *   - Owed, must run exactly once: a new identity the source still lists at the end; and any identity
 *     the trigger had stored in its outbox before a kill (read from the database while n8n was down),
 *     even if the source no longer lists it.
 *   - May run once or not at all: a new identity removed (or, for `changed`, bumped again) before any
 *     state of it was stored.
 *   - Must never run: the history (remembered by the first poll) and any identity the harness cannot
 *     name. Any run beyond the first of an identity, or of one that must never run, is "repeated";
 *     an owed identity with no run is "lost".
 * The changes respect each kind's contract: `last` is for lists oldest first, so new items are
 * appended and only history far from the remembered tail is reordered; `greatest` gets ids above any
 * listed before. In queue mode the stored state is not read (Postgres): an identity removed before
 * the restart then counts as "may run once".
 */

type Item = Record<string, unknown>;

export interface ChaosCase {
	name: string;
	/** Poll Trigger parameters beyond op/with/interval. */
	parameters: Record<string, unknown>;
	/** The source's list before any burst: the history the first poll remembers. */
	history(): Item[];
	/** The list with round `round`'s burst (≥ 1) added. */
	grow(list: Item[], round: number): Item[];
	/** The list as the source changes it while n8n is down after kill `round`. */
	change(list: Item[], round: number): Item[];
	/** One item's identity: its id, for `changed` id@version. */
	identity(item: Item): string;
	/** The source answers this many items a page, with `Link: <…?page=N>; rel="next"` (docs/pagination.md). */
	pageSize?: number;
	/** The query in the Poll Trigger's With (its `{{ $cursor }}` or `{{ $lastPollStartedAt }}`). */
	query?: Record<string, string>;
	/** What the source lists for a request's query (default: the whole list): it answers what it is asked. */
	select?(list: Item[], query: Record<string, string>): Item[];
	/** Item ids are numbers (reports and keys carry them as text). */
	numericIds?: boolean;
	/** A real server instead of the fake HTTP source (test/harness/sourceChaos.ts). */
	source?: ChaosSource;
}

/**
 * A real server a case polls (a database table, an SFTP folder) in place of the fake HTTP source: it
 * holds the case's list as rows or files. Its answers cannot be held back, so the bursts of these
 * cases are not gated with the others'; they are in place when the round's gate opens.
 */
export interface ChaosSource {
	/** The Poll Trigger's parameters that read it (op, With, ID, ...) and the node's credentials. */
	parameters: Record<string, unknown>;
	credentials: Record<string, { id: string; name: string }>;
	/** The expression naming a run's item in its report (the identity's item id). */
	reportId: string;
	/** Makes the server hold exactly `list`: adds what it lacks, removes what is not listed. Round 0: the history. */
	hold(list: Item[], round: number): Promise<void>;
	/** Polls that have read it so far (sessions, logins). */
	polls(): Promise<number>;
}

/** What one kill did to one case, as the timeline prints it. */
export interface KillTimeline {
	kill: number;
	/** Runs of the round's new identities that started before the kill / at all. */
	startedBefore: number;
	ranInRound: number;
	/** Executions saved `crashed` that had started before this kill. */
	crashed: number;
	/** Outbox entries stored when n8n died (emitted again at the restart; undefined: not read). */
	reEmitted?: number;
	/** Runs stored without their items (not emitted again; their items planned again by the next poll). */
	held?: number;
	/** Of those, entries whose run existed already (n8n refused them by their key). */
	refused?: number;
	/** Executions started from the restart to the next kill (or the end). */
	startedAfterRestart: number;
	/** Some but not all of the round's runs started before the kill. */
	midBurst: boolean;
}

export interface ChaosResult {
	case: string;
	kills: number;
	/**
	 * Kills mid-burst: poll, some but not all of the round's runs had started, the stored outbox held
	 * runs not yet settled, or a run was going (saved crashed); schedule, a run was going.
	 */
	earlyKills: number;
	/** Identities owed (exactly once) / that may run once. */
	expected: number;
	optional?: number;
	lost: number;
	repeated: number;
	timeline?: KillTimeline[];
	/**
	 * Poll cases: executions n8n saved `crashed`, and of those how many a user cannot trace to their
	 * item: neither their deduplication key names an item nor Recent Starts (the trigger's ledger)
	 * lists the run among those whose end the trigger never learnt or that were started again.
	 */
	crashedRuns?: number;
	untraceable?: number;
	/** Anything the harness wants said about the case (identities it could not name, …). */
	notes?: string[];
}

const POLL_PATH = '/chaos';
const RAN_PATH = '/ran';
const HOLD_MAX_MS = 15_000;
/**
 * How long the kill, once its count of reported runs is reached, waits for every case to have a run
 * held going (see runChaos's `hold`). Past it the kill lands anyway, and the log names the cases
 * without one (their kill then shows whether it met a run).
 */
const AIM_MAX_MS = 120_000;
/**
 * A held report is answered after this at the latest, should the kill not come: below the HTTP
 * Request node's own timeout (300 s in n8n 2.41), so a held run never fails by it.
 */
const HOLD_LIMIT_MS = 240_000;

function shuffle<T>(list: T[]): T[] {
	const copy = [...list];
	for (let i = copy.length - 1; i > 0; i--) {
		const j = Math.floor(Math.random() * (i + 1));
		[copy[i], copy[j]] = [copy[j], copy[i]];
	}
	return copy;
}

/** `count` random positions of `list` between `from` and `to` (exclusive). */
function pick(from: number, to: number, count: number): Set<number> {
	const positions = new Set<number>();
	while (positions.size < Math.min(count, to - from))
		positions.add(from + Math.floor(Math.random() * (to - from)));
	return positions;
}

function insertRandomly(list: Item[], items: Item[]): Item[] {
	const copy = [...list];
	for (const item of items) copy.splice(Math.floor(Math.random() * (copy.length + 1)), 0, item);
	return copy;
}

/** What the burst cases share: `history` remembered items, bursts of `burst` new ones, `removed` of each dropped. */
function burstLists(history: number, burst: number) {
	const removed = Math.max(1, Math.floor(burst / 10));
	const seeds = (prefix: string) =>
		Array.from({ length: history }, (_, i) => ({ id: `${prefix}-h${i}` }));
	const fresh = (prefix: string, round: number) =>
		Array.from({ length: burst }, (_, i) => ({ id: `${prefix}-r${round}-${i}` }));
	/**
	 * Removes `removed` items of the burst just listed (round `round`) and `removed` history items
	 * among the first `historyTo` of the history.
	 */
	const withoutSome = (list: Item[], prefix: string, round: number, historyTo: number) => {
		const positions = (match: (id: string) => boolean) =>
			list.flatMap((item, i) => (match(String(item.id)) ? [i] : []));
		const burstAt = positions((id) => id.startsWith(`${prefix}-r${round}-`));
		const historyAt = positions(
			(id) => id.startsWith(`${prefix}-h`) && Number(id.slice(`${prefix}-h`.length)) < historyTo,
		);
		const drop = new Set([
			...[...pick(0, burstAt.length, removed)].map((i) => burstAt[i]),
			...[...pick(0, historyAt.length, removed)].map((i) => historyAt[i]),
		]);
		return list.filter((_, i) => !drop.has(i));
	};
	return { removed, seeds, fresh, withoutSome };
}

/**
 * A case of an unordered kind (`unique`, `time_window`): new items anywhere, some of the burst and of
 * the history removed while n8n is down, the whole list reordered.
 */
export function unorderedCase(
	name: string,
	parameters: Record<string, unknown>,
	history: number,
	burst: number,
): ChaosCase {
	const { seeds, fresh, withoutSome } = burstLists(history, burst);
	return {
		name,
		parameters,
		history: () => seeds(name),
		grow: (list, round) => insertRandomly(list, fresh(name, round)),
		change: (list, round) => shuffle(withoutSome(list, name, round, history)),
		identity: (item) => String(item.id),
	};
}

/**
 * The cases the issue names, each with `history` remembered keys and `burst` new items per round; the
 * cases of sources that list only what they are asked for (`paged`, `since_last_poll`, `cursor`) burst
 * `wideBurst` new items, which should be several times Max Runs in Flight (issue 36: the runs a kill
 * leaves unsent are the items owed).
 */
export function pollChaosCases(history: number, burst: number, wideBurst = burst): ChaosCase[] {
	const { removed, seeds, fresh, withoutSome } = burstLists(history, burst);
	const wide = burstLists(history, wideBurst);
	const widePage = Math.max(1, Math.floor(wideBurst / 4));
	const byId = (item: Item) => String(item.id);
	const unordered = (prefix: string, parameters: Record<string, unknown>) =>
		unorderedCase(prefix, parameters, history, burst);
	return [
		unordered('unique', { dedupe: 'unique' }),
		unordered('time_window', { dedupe: 'time_window', ttl: 1, ttlUnit: 'hours' }),
		{
			// Items of 100 KB: the stored outbox holds none of them (core/poll/runStage.ts), so a kill
			// finds runs that only the next poll can emit again, under their keys.
			...unordered('big_items', { dedupe: 'unique' }),
			grow: (list, round) =>
				insertRandomly(
					list,
					fresh('big_items', round).map((item) => ({ ...item, body: 'x'.repeat(100_000) })),
				),
		},
		{ ...unordered('batch', { dedupe: 'unique', oneRunPerItem: false }), name: 'batch' },
		{
			// Newest first, in pages of a quarter burst: each burst spans several pages, and paging stops
			// at the first page that reaches remembered items. Items removed, never reordered.
			name: 'paged',
			parameters: {
				dedupe: 'unique',
				pagination: { pagination: { paginationMode: 'linkHeader', maxRequests: 1000 } },
			},
			pageSize: widePage,
			// 20 pages of history, so the first poll (which reads every page) stays short.
			history: () =>
				wide
					.seeds('paged')
					.slice(0, 20 * widePage)
					.reverse(),
			grow: (list, round) => [...wide.fresh('paged', round).reverse(), ...list],
			change: (list, round) => wide.withoutSome(list, 'paged', round, history),
			identity: byId,
		},
		{
			// updated_after={{ $lastPollStartedAt }}: the source lists, newest first in pages, only the
			// items updated (`t`, ms) after what the trigger asks; items removed, never reordered.
			name: 'since_last_poll',
			parameters: {
				dedupe: 'unique',
				pagination: { pagination: { paginationMode: 'linkHeader', maxRequests: 1000 } },
			},
			query: { updated_after: '{{ $lastPollStartedAt }}' },
			select: (list, query) =>
				list.filter((item) => Number(item.t) > Date.parse(query.updated_after ?? '')),
			pageSize: widePage,
			history: () =>
				wide
					.seeds('since_last_poll')
					.slice(0, 20 * widePage)
					.map((item) => ({ ...item, t: 1 }))
					.reverse(),
			grow: (list, round) => [
				...wide
					.fresh('since_last_poll', round)
					.map((item) => ({ ...item, t: Date.now() }))
					.reverse(),
				...list,
			],
			change: (list, round) => wide.withoutSome(list, 'since_last_poll', round, history),
			identity: byId,
		},
		{
			// Oldest first, since={{ $cursor }} (Dedupe Greatest), in pages: the source lists only ids
			// above the cursor; ids above any listed before are appended, removed ones never come back.
			name: 'cursor',
			parameters: {
				dedupe: 'greatest',
				pagination: {
					pagination: { paginationMode: 'linkHeader', listOrder: 'oldestFirst', maxRequests: 1000 },
				},
			},
			query: { since: '{{ $cursor }}' },
			select: (list, query) => list.filter((item) => Number(item.id) > Number(query.since ?? '')),
			numericIds: true,
			pageSize: widePage,
			history: () => Array.from({ length: history }, (_, id) => ({ id: id + 1 })),
			grow: (list, round) => [
				...list,
				...Array.from({ length: wideBurst }, (_, i) => ({
					id: history + (round - 1) * wideBurst + i + 1,
				})),
			],
			change: (list) => {
				const top = Math.max(...list.map((item) => Number(item.id)));
				const newest = list.flatMap((item, i) => (Number(item.id) > top - wideBurst ? [i] : []));
				const drop = new Set([...pick(0, newest.length, wide.removed)].map((i) => newest[i]));
				return list.filter((_, i) => !drop.has(i));
			},
			identity: byId,
		},
		{
			// Oldest first: new items appended; only the older half of the history is reordered (far
			// from the remembered tail of 32 keys, whose order is what `last` reads).
			name: 'last',
			parameters: { dedupe: 'last' },
			history: () => seeds('last'),
			grow: (list, round) => [...list, ...fresh('last', round)],
			change: (list, round) => {
				const kept = withoutSome(list, 'last', round, Math.floor(history / 2));
				const half = Math.floor(kept.length / 4);
				return [...shuffle(kept.slice(0, half)), ...kept.slice(half)];
			},
			identity: byId,
		},
		{
			// Ids above any listed before, anywhere in the list (the kind sorts); removed ones never come back.
			name: 'greatest',
			parameters: { dedupe: 'greatest' },
			numericIds: true,
			history: () => Array.from({ length: history }, (_, id) => ({ id })),
			grow: (list, round) =>
				insertRandomly(
					list,
					Array.from({ length: burst }, (_, i) => ({ id: history + (round - 1) * burst + i })),
				),
			change: (list) => {
				const top = Math.max(...list.map((item) => Number(item.id)));
				const newest = list.flatMap((item, i) => (Number(item.id) > top - burst ? [i] : []));
				const old = list.flatMap((item, i) => (Number(item.id) < history / 2 ? [i] : []));
				const drop = new Set([
					...[...pick(0, newest.length, removed)].map((i) => newest[i]),
					...[...pick(0, old.length, removed)].map((i) => old[i]),
				]);
				return shuffle(list.filter((_, i) => !drop.has(i)));
			},
			identity: byId,
		},
		{
			// Each round bumps the version of `burst` - `removed` known items and adds `removed` new ones;
			// while n8n is down `removed` more are bumped (some of them just bumped: the version in
			// between may never run) and `removed` items removed. Each (id, version) starts once.
			name: 'changed',
			parameters: { dedupe: 'changed', version: 'v' },
			history: () => Array.from({ length: history }, (_, i) => ({ id: `changed-${i}`, v: 1 })),
			grow: (list, round) => {
				const bumped = pick(0, list.length, burst - removed);
				return [
					...list.map((item, i) => (bumped.has(i) ? { ...item, v: Number(item.v) + 1 } : item)),
					...Array.from({ length: removed }, (_, i) => ({ id: `changed-r${round}-${i}`, v: 1 })),
				];
			},
			change: (list) => {
				const bumped = pick(0, list.length, removed);
				const drop = pick(0, list.length, removed);
				return shuffle(
					list
						.map((item, i) => (bumped.has(i) ? { ...item, v: Number(item.v) + 1 } : item))
						.filter((_, i) => !drop.has(i)),
				);
			},
			identity: (item) => `${String(item.id)}@${String(item.v)}`,
		},
	];
}

/**
 * n8n settings for chaos instances: none beyond the harness's defaults. n8n's crash recovery runs in
 * its default mode (`extensive`), as users run it.
 */
export const CHAOS_N8N_ENV: Record<string, string> = {};

/** The items an execution's trigger produced, also for one n8n created but never ran (crashed). */
export function triggerItems(
	execution: Execution,
	triggerName: string,
): Array<Record<string, unknown>> {
	const real = (items: Array<{ json: Record<string, unknown> }> | undefined) =>
		items?.map((item) => item.json).filter((json) => json.isArtificialRecoveredEventItem !== true);
	const ran = real(
		execution.data?.resultData.runData[triggerName]?.at(-1)?.data?.main[0] ?? undefined,
	);
	if (ran?.length) return ran;
	const stack = (
		execution.data as
			| {
					executionData?: {
						nodeExecutionStack?: Array<{
							node?: { name?: string };
							data?: { main?: Array<Array<{ json: Record<string, unknown> }>> };
						}>;
					};
			  }
			| undefined
	)?.executionData?.nodeExecutionStack;
	return real(stack?.find((entry) => entry.node?.name === triggerName)?.data?.main?.[0]) ?? [];
}

/** The trigger's stored state as the node keeps it in the workflow's static data. */
interface StoredPollState {
	dedupe?: { id?: string; generation?: number };
	ledger?: Array<{ key: string; items: unknown[]; outcome: string }>;
	outbox?: Array<{ key: string; run?: { items?: Item[]; held?: true } }>;
}

function pollStateOf(staticData: unknown, triggerName: string): StoredPollState | undefined {
	const data = (typeof staticData === 'string' ? JSON.parse(staticData) : staticData) as
		| Record<string, { pollTrigger?: StoredPollState }>
		| null
		| undefined;
	return data?.[`node:${triggerName}`]?.pollTrigger;
}

/** The static data n8n stored, read from its SQLite database while it is down (undefined in queue mode). */
async function storedStaticData(
	n8n: N8nInstance,
	workflowIds: string[],
): Promise<Map<string, unknown> | undefined> {
	if (n8n.topology !== 'single') return undefined;
	const { DatabaseSync } = await import('node:sqlite');
	const db = new DatabaseSync(join(n8n.userFolder, '.n8n', 'database.sqlite'));
	try {
		const rows = db
			.prepare(
				`SELECT id, staticData FROM workflow_entity WHERE id IN (${workflowIds.map(() => '?').join(',')})`,
			)
			.all(...workflowIds) as Array<{ id: string; staticData: string | null }>;
		return new Map(rows.map((row) => [row.id, row.staticData ? JSON.parse(row.staticData) : null]));
	} finally {
		db.close();
	}
}

/**
 * Deduplication key → identity for every item in `items`, as the trigger's core computes keys: a store
 * with the trigger's id, each generation up to `generations` (time_window and changed keys carry
 * the poll's generation), one run per item; the key without its `poll:<workflow>:<node>:` prefix.
 */
async function keyIndex(
	chaos: ChaosCase,
	storeId: string,
	items: Item[],
	generations: number,
): Promise<Map<string, string>> {
	const kind = String(chaos.parameters.dedupe) as
		| 'unique'
		| 'time_window'
		| 'greatest'
		| 'last'
		| 'changed';
	const dedupe =
		kind === 'time_window' ? { kind, ttlMs: 3_600_000 } : ({ kind } as { kind: typeof kind });
	const expressions = new PollExpressions({
		id: 'id',
		version: kind === 'changed' ? 'v' : undefined,
	});
	const index = new Map<string, string>();
	const restarts = kind === 'time_window' || kind === 'changed';
	for (let generation = 0; generation < (restarts ? generations : 1); generation++) {
		const { store } = loadDedupeStore(
			{ dedupe, firstPoll: { mode: 'all' } },
			{ v: 1, kind, id: storeId, fresh: true, generation },
		);
		const keyed = await expressions.keyItems(items, { withVersion: store.needsVersion });
		const now = Date.now();
		for (const run of store.commit(store.plan(keyed, now), now, {
			keyPrefix: '',
			onePerItem: true,
		}))
			index.set(String(run.key), chaos.identity(run.candidates[0].item as Item));
	}
	return index;
}

/** The batch key of `items` (dedupe unique, one run over all), as the core computes it. */
async function batchKey(storeId: string, items: Item[]): Promise<string | undefined> {
	const { store } = loadDedupeStore(
		{ dedupe: { kind: 'unique' }, firstPoll: { mode: 'all' } },
		{ v: 1, kind: 'unique', id: storeId, fresh: true },
	);
	const keyed = await new PollExpressions({ id: 'id' }).keyItems(items, { withVersion: false });
	const now = Date.now();
	return store.commit(store.plan(keyed, now), now, { keyPrefix: '', onePerItem: false })[0]?.key;
}

/**
 * A Poll Trigger deduplication key without its `poll:<workflow>:<node>:` prefix: the hash, and for a
 * one-item run `:<item key>` (core/poll/dedupe.ts), as the core computes it with an empty prefix.
 */
function unprefixed(key: string): string {
	return key.replace(/^poll:[^:]*:[^:]*:/, '');
}

/** One execution as the harness counts it: when it started, its status, the identities it carried. */
interface Counted {
	id: string;
	startedAt: number;
	status: string;
	identities: string[];
	key?: string;
}

/** A Durable Schedule Trigger setup whose every window must run exactly once through kills. */
export interface ScheduleChaosCase {
	name: string;
	parameters: Record<string, unknown>;
	/** How long each run takes (a Wait node). */
	runSeconds: number;
}

const WINDOW_MS = 10_000;

/**
 * The schedule cases the issue names: run-all catch-up of the windows missed while n8n was down, and
 * the Queue overlap policy (with run-all, so a window queued when n8n died runs after the restart).
 * Late Grace 0: every window missed while down goes through catch-up, none is skipped as late.
 */
export function scheduleChaosCases(): ScheduleChaosCase[] {
	const common = {
		scheduleType: 'interval',
		interval: 10,
		intervalUnit: 'seconds',
		catchUp: 'run-all',
		runAllLimit: 1000,
		options: { lateGrace: 0 },
	};
	return [
		{
			name: 'schedule run-all catch-up',
			parameters: { ...common, overlap: 'allow-parallel', maxParallel: 100 },
			// Runs overlap freely; the kill holds one going (runChaos's `hold`).
			runSeconds: 8,
		},
		{
			name: 'schedule queue overlap',
			parameters: { ...common, overlap: 'queue', queueLimit: 1000 },
			// One at a time: after a restart the queue drains the missed windows back to back. 5 s, so
			// that a run with n8n's own time on a busy machine ends well within its window. (12 s runs in
			// 20 s windows drained the missed windows at a third of the rate at a load average of 10:
			// the settling took 308 s after the last restart, in a local CI run.) The kill does not
			// depend on the run's length: it holds one going (runChaos's `hold`).
			runSeconds: 5,
		},
	];
}

interface PollRunning {
	chaos: ChaosCase;
	path: string;
	workflowId: string;
	list: Item[];
	history: Set<string>;
	/** Every new identity the source listed, and the round that introduced it. */
	introduced: Map<string, number>;
	/** Identities in an outbox stored when n8n died. */
	stored: Set<string>;
	storedKeys: Array<Set<string>>;
	/** Per kill, how many runs the stored outbox held (undefined: not read). */
	storedHeld: Array<number | undefined>;
	/** Per kill, the identities of each run in the stored outbox. */
	storedRuns: string[][][];
	storeId?: string;
}

interface ScheduleRunning {
	chaos: ScheduleChaosCase;
	workflowId: string;
	from: number;
}

/**
 * Runs every case in one n8n with `kills` SIGKILLs (see the file's comment), then counts. Schedule
 * runs wait `runSeconds` (a Wait node) after reporting their start.
 */
export async function runChaos(
	n8n: N8nInstance,
	{
		polls,
		schedules,
		kills,
		killWithinMs = 60_000,
		downtimeMs = 15_000,
		settleTimeoutMs = 300_000,
		log = (line: string) => process.stdout.write(`${line}\n`),
	}: {
		polls: ChaosCase[];
		schedules: ScheduleChaosCase[];
		kills: number;
		killWithinMs?: number;
		downtimeMs?: number;
		settleTimeoutMs?: number;
		log?: (line: string) => void;
	},
): Promise<ChaosResult[]> {
	const source = await FakeSystem.start();
	// The gate: while set, each case's answer waits until every case has asked (or HOLD_MAX_MS). It is
	// the round's until the kill, and holds the runs the kill is aimed at (`hold`).
	let gate:
		| {
				waiting: Set<string>;
				release: () => void;
				released: Promise<void>;
				releasedAt?: number;
				/** Cases (a poll case's name, `schedule-<i>`) with a run held going until the kill, and since when. */
				holding: Map<string, number>;
				/** Called when a case's run is held. */
				onHold?: () => void;
				/** Answers the held reports (after the kill). */
				letGo: () => void;
				lettingGo: Promise<void>;
		  }
		| undefined;
	const openGate = () => {
		let release!: () => void;
		const released = new Promise<void>((resolve) => (release = resolve));
		let letGo!: () => void;
		const lettingGo = new Promise<void>((resolve) => (letGo = resolve));
		const opened = {
			waiting: new Set<string>(),
			release,
			released,
			releasedAt: undefined as number | undefined,
			holding: new Map<string, number>(),
			onHold: undefined as (() => void) | undefined,
			letGo,
			lettingGo,
		};
		void released.then(() => (opened.releasedAt = Date.now()));
		gate = opened;
		return opened;
	};
	/**
	 * Releases the gate once every fake-source case has asked and every schedule case has a run held
	 * going (`hold`), so all bursts go at once beside a run of every schedule case.
	 */
	const releaseIfAll = (held: NonNullable<typeof gate>) => {
		if (
			held.waiting.size === gated.length &&
			schedules.every((_, index) => held.holding.has(`schedule-${index}`))
		)
			held.release();
	};
	/** With n8n up: a gate no fake source will release (none in the run) opens within HOLD_MAX_MS. */
	const gateUp = (opened: NonNullable<typeof gate>) => {
		releaseIfAll(opened);
		if (gated.length === 0) setTimeout(opened.release, HOLD_MAX_MS);
	};
	/**
	 * The kill's aim: a run of every case known to be going when it lands, whatever the load. A run
	 * reports to the source as it runs (an HTTP Request node); while the round's gate is set, the
	 * source holds the first report of each case, of a run of the round's new items for a poll case,
	 * of any run for a schedule case (after a restart, the first of the catch-up), so that run stays
	 * going until the kill. Its answer goes after the kill: to an n8n that is gone, or in queue mode
	 * to the worker running it. The gate waits for the schedules' held runs and the kill for every
	 * case's (runChaos's loop). The count of reported runs alone (the kill's aim until 2026-12-03)
	 * says nothing of one case: on a busy machine a Queue run of 5 s had ended before the count was
	 * reached, and a second `.ci/run` beside n8n and two database servers met no run in 3 kills.
	 */
	const hold = async (name: string) => {
		const current = gate;
		if (!current || current.holding.has(name)) return;
		current.holding.set(name, Date.now());
		if (!current.releasedAt) releaseIfAll(current);
		current.onHold?.();
		let timer: NodeJS.Timeout | undefined;
		await Promise.race([
			current.lettingGo,
			new Promise((resolve) => (timer = setTimeout(resolve, HOLD_LIMIT_MS))),
		]);
		clearTimeout(timer);
	};
	const pollCases: PollRunning[] = polls.map((chaos) => {
		const list = chaos.history();
		return {
			chaos,
			path: `${POLL_PATH}/${chaos.name}`,
			workflowId: '',
			list,
			history: new Set(list.map(chaos.identity)),
			introduced: new Map(),
			stored: new Set(),
			storedKeys: [],
			storedHeld: [],
			storedRuns: [],
		};
	});
	const gated = pollCases.filter((poll) => !poll.chaos.source);
	for (const poll of gated) {
		source.on('GET', poll.path, async (request) => {
			const held = gate;
			const page = Number(request.query.page ?? 1);
			// A paginated case's later pages are part of a poll already let through.
			if (held && !held.releasedAt && page === 1) {
				held.waiting.add(poll.chaos.name);
				releaseIfAll(held);
				if (held.waiting.size === 1) setTimeout(held.release, HOLD_MAX_MS);
				await held.released;
			}
			const size = poll.chaos.pageSize;
			const listed = poll.chaos.select?.(poll.list, request.query) ?? poll.list;
			if (!size) return { body: listed };
			const more = page * size < listed.length;
			// The next link keeps what was asked (the trigger's cursor in the query).
			const next = new URLSearchParams({ ...request.query, page: String(page + 1) });
			return {
				body: listed.slice((page - 1) * size, page * size),
				headers: more ? { link: `<${source.url(poll.path)}?${next}>; rel="next"` } : undefined,
			};
		});
	}
	// Runs of the current round's new identities reported so far; the kill waits for `killAfter` of them.
	let roundRan = new Set<string>();
	let killAfter: { count: number; reached: () => void } | undefined;
	for (const poll of pollCases) {
		source.on('GET', `${RAN_PATH}/${poll.chaos.name}`, async (request) => {
			const item: Item = {
				id: poll.chaos.numericIds ? Number(request.query.id) : request.query.id,
			};
			if (request.query.v) item.v = Number(request.query.v);
			const identity = `${poll.chaos.name}/${poll.chaos.identity(item)}`;
			const ofRound = poll.introduced.get(poll.chaos.identity(item)) === round;
			if (ofRound) roundRan.add(identity);
			if (killAfter && roundRan.size >= killAfter.count) killAfter.reached();
			// The first run of the round's new items reported stays going until the kill.
			if (ofRound) await hold(poll.chaos.name);
			return { body: {} };
		});
	}
	let round = 1;
	const setList = async (poll: PollRunning, list: Item[], round: number) => {
		poll.list = list;
		for (const item of list) {
			const identity = poll.chaos.identity(item);
			if (!poll.history.has(identity) && !poll.introduced.has(identity))
				poll.introduced.set(identity, round);
		}
		await poll.chaos.source?.hold(list, round);
	};
	const schedulesRunning: ScheduleRunning[] = [];
	const killedAt: number[] = [];
	const restartedAt: number[] = [];
	try {
		for (const poll of pollCases) {
			const real = poll.chaos.source;
			await real?.hold(poll.list, 0);
			const trigger = node(
				'Poll',
				`${PACKAGE}.pollTrigger`,
				{
					op: 'http.request',
					with: JSON.stringify({
						url: source.url(poll.path),
						...(poll.chaos.query && { query: poll.chaos.query }),
					}),
					id: 'id',
					interval: 5,
					intervalUnit: 'seconds',
					options: { firstPoll: 'none', timeoutSec: 60 },
					...real?.parameters,
					...poll.chaos.parameters,
				},
				real ? { credentials: real.credentials } : {},
			);
			// Each run reports each item to the source as it runs: the harness kills on these events.
			const report = node(
				'Report',
				'n8n-nodes-base.httpRequest',
				{
					url: `=${source.url(`${RAN_PATH}/${poll.chaos.name}`)}?id={{ ${real?.reportId ?? '$json.id'} }}&v={{ $json.v }}`,
					options: {},
				},
				{ typeVersion: 4.2 },
			);
			poll.workflowId = await n8n.importWorkflow(
				workflow(`chaos ${poll.chaos.name}`, [trigger, report], [['Poll', 'Report']]),
			);
			// n8n 2.x publishes at once and activates soon after; the fresh store's first poll
			// remembers the history during the activation, and n8n saves it after. The store's id is
			// part of every key.
			await n8n.publish(poll.workflowId);
			let seen: unknown;
			poll.storeId = await waitFor(
				`chaos ${poll.chaos.name}: the trigger's store id in static data`,
				async () => {
					seen = (await n8n.getWorkflow(poll.workflowId)).staticData;
					return pollStateOf(seen, 'Poll')?.dedupe?.id;
				},
				{ timeoutMs: 120_000, intervalMs: 500 },
			).catch((error: Error) => {
				throw new Error(`${error.message}; static data: ${JSON.stringify(seen)?.slice(0, 300)}`);
			});
		}
		for (const chaos of schedules) {
			const index = schedulesRunning.length;
			const path = `${RAN_PATH}/schedule-${index}`;
			source.on('GET', path, async () => {
				// The round's first run to start stays going until the kill.
				await hold(`schedule-${index}`);
				return { body: {} };
			});
			const id = await n8n.importWorkflow(scheduleWorkflow(chaos, source.url(path)));
			schedulesRunning.push({
				chaos,
				workflowId: id,
				from: Math.ceil((Date.now() + 2_000) / WINDOW_MS) * WINDOW_MS,
			});
			await n8n.publish(id);
		}
		for (const { workflowId, chaos } of schedulesRunning)
			await n8n.waitForExecutions(
				workflowId,
				(all) => all.length > 0,
				`${chaos.name}: a first window`,
				60_000,
			);

		// Round 1's burst while n8n runs; later ones while it is down (step 3).
		let opened = openGate();
		for (const poll of pollCases) await setList(poll, poll.chaos.grow(poll.list, 1), 1);
		// With n8n up (round 1, or after a restart): a gate with nothing to wait for (only real
		// sources, no schedules) opens now, so the kill's deadline runs from here.
		gateUp(opened);
		for (let kill = 1; kill <= kills; kill++) {
			round = kill;
			// The kill lands once a random number of the round's runs (between 1 and a third of its
			// new items) have reported, so the bursts are being started and run; or, if none report
			// within `killWithinMs` of the sources' answer, then (while the items are keyed, the
			// state written, the runs created). And not before every case has a run held going
			// (`hold`), so each case meets the kill mid-run whatever the load.
			const ofRound = (poll: PollRunning) =>
				[...poll.introduced.values()].filter((r) => r === kill).length;
			const roundSize = pollCases.reduce((sum, poll) => sum + ofRound(poll), 0);
			const aimed = [
				...pollCases.filter((poll) => ofRound(poll) > 0).map((poll) => poll.chaos.name),
				...schedules.map((_, index) => `schedule-${index}`),
			];
			const count = 1 + Math.floor((Math.random() * roundSize) / 3);
			const reached = new Promise<void>((resolve) => {
				killAfter = { count, reached: resolve };
				if (roundRan.size >= count) resolve();
			});
			await opened.released;
			const releasedAt = opened.releasedAt ?? Date.now();
			await Promise.race([
				reached,
				new Promise((resolve) =>
					setTimeout(resolve, Math.max(0, releasedAt + killWithinMs - Date.now())),
				),
			]);
			killAfter = undefined;
			const countedAt = Date.now();
			const unheld = () => aimed.filter((name) => !opened.holding.has(name));
			await new Promise<void>((resolve) => {
				const timer = setTimeout(resolve, AIM_MAX_MS);
				opened.onHold = () => {
					if (unheld().length > 0) return;
					clearTimeout(timer);
					resolve();
				};
				opened.onHold();
			});
			opened.onHold = undefined;
			const missing = unheld();
			const [last, lastAt] = [...opened.holding].reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
			log(
				`chaos: kill ${kill} at ${roundRan.size} reported run(s) of the round (aimed at ${count}), ${((Date.now() - releasedAt) / 1000).toFixed(1)} s after the sources answered; a run held going in ${aimed.length - missing.length} of ${aimed.length} cases${missing.length > 0 ? ` (none in ${missing.join(', ')} after ${AIM_MAX_MS / 1000} s)` : ''}, the last (${last}) ${((lastAt - releasedAt) / 1000).toFixed(1)} s after the answers, the count ${((countedAt - releasedAt) / 1000).toFixed(1)} s`,
			);
			roundRan = new Set();
			round = kill + 1;
			killedAt.push(Date.now());
			await n8n.kill();
			// The held runs died with n8n: their reports are answered to no one.
			opened.letGo();
			gate = undefined;
			const downUntil = Date.now() + downtimeMs;
			const stored = await storedStaticData(
				n8n,
				pollCases.map((poll) => poll.workflowId),
			);
			for (const poll of pollCases) {
				// Runs stored without their items (core/poll/runStage.ts: held, or one-item runs) are not
				// emitted again: the next poll plans their items again, owed only while the source lists them.
				const all = stored ? (pollStateOf(stored.get(poll.workflowId), 'Poll')?.outbox ?? []) : [];
				const outbox = stored
					? all.filter((entry) => !entry.run?.held && entry.run?.items !== undefined)
					: undefined;
				poll.storedHeld.push(stored ? all.length - (outbox?.length ?? 0) : undefined);
				poll.storedKeys.push(new Set(outbox?.map((entry) => unprefixed(entry.key))));
				poll.storedRuns.push(
					(outbox ?? []).map((entry) => (entry.run?.items ?? []).map(poll.chaos.identity)),
				);
				for (const entry of outbox ?? [])
					for (const item of entry.run?.items ?? []) poll.stored.add(poll.chaos.identity(item));
				let list = poll.chaos.change(poll.list, kill);
				if (kill < kills) list = poll.chaos.grow(list, kill + 1);
				await setList(poll, list, kill + 1);
			}
			if (kill < kills) opened = openGate();
			// n8n stays down a while: schedule windows are missed and caught up at the restart.
			await new Promise((resolve) => setTimeout(resolve, Math.max(0, downUntil - Date.now())));
			restartedAt.push(Date.now());
			await n8n.start();
			await n8n.login();
			log(
				`chaos: restart ${kill} took ${((Date.now() - restartedAt[kill - 1]) / 1000).toFixed(1)} s`,
			);
			if (kill < kills) gateUp(opened);
		}

		// Settle: nothing running, every owed identity named by its run's items and every window up
		// to `endAt` run; or, for the polls, nothing more started over two more polls of every source
		// (what is missing then is lost, and counted by key below).
		const owed = (poll: PollRunning) => [
			...new Set([
				...poll.list.map(poll.chaos.identity).filter((identity) => poll.introduced.has(identity)),
				...poll.stored,
			]),
		];
		const endAt = Math.floor((Date.now() + 15_000) / WINDOW_MS) * WINDOW_MS;
		const twoMorePolls = async () => {
			const since = Date.now();
			await Promise.all(
				pollCases.map(async (poll) => {
					const real = poll.chaos.source;
					if (real) {
						const target = (await real.polls()) + 2;
						await waitFor(
							`two more polls of ${poll.chaos.name}`,
							async () => ((await real.polls()) >= target ? true : undefined),
							{ timeoutMs: 120_000, intervalMs: 500 },
						).catch(() => undefined);
						return;
					}
					let seen = 0;
					await source
						.nextRequest(
							(r) => r.path === poll.path && r.receivedAt > since && ++seen >= 2,
							120_000,
						)
						.catch(() => undefined);
				}),
			);
		};
		// Bounded by progress, not by a total (as burstRuns): on a busy machine n8n can take many
		// minutes to run what a kill left, and an item still to run is not a lost one.
		let settleDeadline = Date.now() + settleTimeoutMs;
		let lastMissing = Number.POSITIVE_INFINITY;
		let lastTotal = -1;
		for (;;) {
			let running = false;
			let missing = 0;
			let total = 0;
			for (const poll of pollCases) {
				const all = await executionsOf(n8n, poll.workflowId);
				total += all.length;
				running ||= all.some((e) => e.status === 'running' || e.status === 'new');
				const ran = new Set(
					all.flatMap((execution) => triggerItems(execution, 'Poll').map(poll.chaos.identity)),
				);
				missing += owed(poll).filter((identity) => !ran.has(identity)).length;
			}
			let windowsMissing = 0;
			for (const schedule of schedulesRunning) {
				const windows = await countWindows(n8n, schedule.workflowId);
				for (let window = schedule.from; window <= endAt; window += WINDOW_MS)
					if (!windows.has(new Date(window).toISOString())) windowsMissing++;
			}
			log(
				`chaos: settling, ${((Date.now() - restartedAt.at(-1)!) / 1000).toFixed(0)} s after the last restart: ${running ? 'runs going, ' : ''}${missing} item(s) and ${windowsMissing} window(s) not run yet`,
			);
			if (!running && missing === 0 && windowsMissing === 0) break;
			if (missing + windowsMissing < lastMissing) {
				lastMissing = missing + windowsMissing;
				settleDeadline = Date.now() + settleTimeoutMs;
			}
			if (Date.now() > settleDeadline) {
				log(
					`chaos: still ${missing} item(s), ${windowsMissing} window(s) missing, none run in the last ${settleTimeoutMs} ms; counting`,
				);
				break;
			}
			if (!running && windowsMissing === 0 && total === lastTotal) break;
			lastTotal = running ? -1 : total;
			await twoMorePolls();
		}
		// Two more polls of every source: a late repeat would show now.
		await twoMorePolls();
		log(
			`chaos: settled ${((Date.now() - restartedAt.at(-1)!) / 1000).toFixed(1)} s after the last restart`,
		);

		const results: ChaosResult[] = [];
		for (const poll of pollCases)
			results.push(await countPoll(n8n, poll, killedAt, restartedAt, owed(poll)));
		for (const schedule of schedulesRunning)
			results.push(await countSchedule(n8n, schedule, killedAt, restartedAt, endAt));
		for (const result of results) log(timelineText(result));
		return results;
	} finally {
		for (const poll of pollCases)
			if (poll.workflowId) await n8n.unpublish(poll.workflowId).catch(() => undefined);
		for (const schedule of schedulesRunning)
			await n8n.unpublish(schedule.workflowId).catch(() => undefined);
		await source.close();
	}
}

function scheduleWorkflow(chaos: ScheduleChaosCase, reportUrl: string) {
	const trigger = node('Schedule', `${PACKAGE}.durableScheduleTrigger`, chaos.parameters);
	// Each run reports its start to the source: the harness kills while one is going.
	const report = node(
		'Report',
		'n8n-nodes-base.httpRequest',
		{ url: reportUrl, options: {} },
		{
			typeVersion: 4.2,
		},
	);
	const slow = node(
		'Slow',
		'n8n-nodes-base.wait',
		{ amount: chaos.runSeconds, unit: 'seconds' },
		{ typeVersion: 1.1, webhookId: randomUUID() },
	);
	return workflow(
		`chaos ${chaos.name}`,
		[trigger, report, slow, marker('Done')],
		[
			['Schedule', 'Report'],
			['Report', 'Slow'],
			['Slow', 'Done'],
		],
	);
}

/** Counts one poll case: every execution named by its items or, when it has none (crashed), its key. */
async function countPoll(
	n8n: N8nInstance,
	poll: PollRunning,
	killedAt: number[],
	restartedAt: number[],
	owed: string[],
): Promise<ChaosResult> {
	const { chaos } = poll;
	const notes: string[] = [];
	const state = pollStateOf((await n8n.getWorkflow(poll.workflowId)).staticData, 'Poll');
	const storeId = state?.dedupe?.id ?? poll.storeId ?? '';
	const generations = (state?.dedupe?.generation ?? 0) + 2;
	const batch = chaos.parameters.oneRunPerItem === false;
	const named = [...poll.introduced.keys()];
	// Items to key: one per new identity (for `changed`, the id with that version).
	const items = named.map((identity) => {
		if (chaos.name !== 'changed') {
			const match = /^(\d+)$/.test(identity) && chaos.numericIds ? Number(identity) : identity;
			return { id: match };
		}
		const at = identity.lastIndexOf('@');
		return { id: identity.slice(0, at), v: Number(identity.slice(at + 1)) };
	});
	const index = batch
		? new Map<string, string>()
		: await keyIndex(chaos, storeId, items, generations);
	const counted: Counted[] = [];
	for (const listed of await executionsOf(n8n, poll.workflowId)) {
		let execution = listed;
		// An item without an id is no source item (a chaos run of 2026-12-05 counted 12 such as one
		// item run 12 times, "ran 12×: undefined"): said with what it holds, not counted as a run.
		const triggered = triggerItems(execution, 'Poll');
		const idless = triggered.filter((item) => item.id === undefined);
		if (idless.length > 0)
			notes.push(
				`execution ${execution.id} (${execution.status}): ${idless.length} trigger item(s) without an id, with fields ${[...new Set(idless.flatMap((item) => Object.keys(item)))].join(',') || 'none'}`,
			);
		let identities = triggered.filter((item) => item.id !== undefined).map(chaos.identity);
		// A crashed run is named by its deduplication key (the list leaves it out: read it alone).
		if (execution.status === 'crashed' || identities.length === 0) {
			execution = await n8n.execution(listed.id);
			const key =
				execution.deduplicationKey === undefined || execution.deduplicationKey === null
					? undefined
					: unprefixed(execution.deduplicationKey);
			if (key && !batch) {
				const byKey = index.get(key);
				if (byKey && identities.length > 0 && !(identities.length === 1 && identities[0] === byKey))
					notes.push(
						`execution ${execution.id}: key names ${byKey}, items ${identities.join(',')}`,
					);
				identities = byKey ? [byKey] : identities;
			} else if (key && batch && identities.length > 0) {
				const expectedKey = await batchKey(
					storeId,
					identities.map((id) => ({ id })),
				);
				if (expectedKey !== key)
					notes.push(
						`execution ${execution.id}: batch key ${key} is not that of its ${identities.length} items`,
					);
			}
			if (identities.length === 0) {
				notes.push(
					`execution ${execution.id} (${execution.status}): no item, key ${key ?? 'none'} unknown`,
				);
				identities = [`unknown execution ${execution.id}`];
			}
		}
		counted.push({
			id: execution.id,
			startedAt: Date.parse(execution.startedAt ?? '') || Infinity,
			status: execution.status,
			identities,
			key: execution.deduplicationKey ?? undefined,
		});
	}
	// Crashed runs a user can trace: Recent Starts lists the run (by its key) as one whose end the
	// trigger never learnt, or as started again, and its key names its items.
	const listed = new Set(
		(state?.ledger ?? [])
			.filter((entry) =>
				['emitted', 'existed at activation', 'started again'].includes(entry.outcome),
			)
			.map((entry) => entry.key),
	);
	const crashed = counted.filter((execution) => execution.status === 'crashed');
	const untraceable = crashed.filter(
		(execution) =>
			execution.key === undefined ||
			!listed.has(execution.key) ||
			(!batch && !/^[0-9a-f]{16}:./.test(unprefixed(execution.key))),
	);
	for (const execution of untraceable.slice(0, 5))
		notes.push(`crashed execution ${execution.id} untraceable (key ${execution.key ?? 'none'})`);
	const counts = new Map<string, number>();
	for (const execution of counted)
		for (const identity of execution.identities)
			counts.set(identity, (counts.get(identity) ?? 0) + 1);
	const owedSet = new Set(owed);
	const optional = named.filter((identity) => !owedSet.has(identity));
	const lost = owed.filter((identity) => !counts.has(identity)).length;
	const repeated = [...counts].reduce(
		(sum, [identity, count]) =>
			sum + (poll.introduced.has(identity) ? Math.max(0, count - 1) : count),
		0,
	);
	const timeline = killedAt.map((at, i): KillTimeline => {
		const round = new Set(
			[...poll.introduced].filter(([, r]) => r === i + 1).map(([identity]) => identity),
		);
		const first = new Map<string, number>();
		for (const execution of counted)
			for (const identity of execution.identities)
				if (round.has(identity))
					first.set(identity, Math.min(first.get(identity) ?? Infinity, execution.startedAt));
		const startedBefore = [...first.values()].filter((started) => started <= at).length;
		const previousRestart = i === 0 ? -Infinity : restartedAt[i - 1];
		const nextKill = killedAt[i + 1] ?? Infinity;
		// Identities with an execution that started before the kill.
		const ranBefore = new Set(
			counted.filter((e) => e.startedAt <= at).flatMap((e) => e.identities),
		);
		const storedKeys = poll.storedKeys[i];
		const storedRuns = poll.storedRuns[i] ?? [];
		const crashed = counted.filter(
			(e) => e.status === 'crashed' && e.startedAt <= at && e.startedAt > previousRestart,
		).length;
		return {
			kill: i + 1,
			startedBefore,
			ranInRound: first.size,
			crashed,
			reEmitted: n8n.topology === 'single' ? storedKeys?.size : undefined,
			held: poll.storedHeld[i],
			refused:
				n8n.topology === 'single'
					? storedRuns.filter(
							(identities) =>
								identities.length > 0 && identities.every((identity) => ranBefore.has(identity)),
						).length
					: undefined,
			startedAfterRestart: counted.filter(
				(e) => e.startedAt >= restartedAt[i] && e.startedAt < nextKill,
			).length,
			// Some but not all of the round's runs had started, or the state with its runs was
			// stored and not yet settled (a batch is one run: only the latter can show it).
			// Or the stored outbox held runs not yet settled: runs it re-emits, or more runs stored without
			// their items (one-item runs, held runs: the next poll plans them again) than at the kill before.
			// Or a run was going when n8n died (saved crashed), as a schedule kill counts: every kill is
			// aimed at a run of each case held going (runChaos's `hold`), which the counts above miss
			// once the rest of its burst has settled and the outbox holds no more runs than before.
			midBurst:
				(startedBefore > 0 && startedBefore < first.size) ||
				(storedKeys?.size ?? 0) > 0 ||
				(poll.storedHeld[i] ?? 0) > (i === 0 ? 0 : (poll.storedHeld[i - 1] ?? 0)) ||
				crashed > 0,
		};
	});
	return {
		case: chaos.name,
		kills: killedAt.length,
		earlyKills: timeline.filter((entry) => entry.midBurst).length,
		expected: owed.length,
		optional: optional.length,
		lost,
		repeated,
		timeline,
		crashedRuns: crashed.length,
		untraceable: untraceable.length,
		notes: [
			...notes,
			...owed
				.filter((identity) => !counts.has(identity))
				.slice(0, 5)
				.map((identity) => `lost: ${identity}`),
			...[...counts]
				.filter(([identity, count]) => count > 1 || !poll.introduced.has(identity))
				.slice(0, 5)
				.map(([identity, count]) => `ran ${count}×: ${identity}`),
		],
	};
}

async function countSchedule(
	n8n: N8nInstance,
	schedule: ScheduleRunning,
	killedAt: number[],
	restartedAt: number[],
	endAt: number,
): Promise<ChaosResult> {
	const expected: string[] = [];
	for (let window = schedule.from; window <= endAt; window += WINDOW_MS)
		expected.push(new Date(window).toISOString());
	const counts = await countWindows(n8n, schedule.workflowId);
	const starts = await countWindows(n8n, schedule.workflowId, true);
	const crashedStarts = await crashedStartTimes(n8n, schedule.workflowId);
	// A kill mid-burst: a run was going (n8n saved it crashed).
	const timeline = killedAt.map((at, i): KillTimeline => {
		const previousRestart = i === 0 ? -Infinity : restartedAt[i - 1];
		const before = [...starts.values()].filter(
			(startedAt) => startedAt <= at && startedAt > previousRestart,
		);
		const after = [...starts.values()].filter(
			(startedAt) => startedAt > at && startedAt < (killedAt[i + 1] ?? Infinity),
		);
		const crashed = crashedStarts.filter(
			(startedAt) => startedAt <= at && startedAt > previousRestart,
		).length;
		return {
			kill: i + 1,
			startedBefore: before.length,
			ranInRound: before.length + after.length,
			crashed,
			startedAfterRestart: after.length,
			midBurst: crashed > 0,
		};
	});
	return {
		case: schedule.chaos.name,
		kills: killedAt.length,
		earlyKills: timeline.filter((entry) => entry.midBurst).length,
		expected: expected.length,
		lost: expected.filter((window) => !counts.has(window)).length,
		repeated: [...counts.values()].reduce((sum, count) => sum + Math.max(0, count - 1), 0),
		timeline,
		notes: [...counts]
			.filter(([, count]) => count > 1)
			.slice(0, 5)
			.map(([window, count]) => `ran ${count}×: ${window}`),
	};
}

/** When each crashed execution of the workflow started. */
async function crashedStartTimes(n8n: N8nInstance, workflowId: string): Promise<number[]> {
	return (await executionsOf(n8n, workflowId))
		.filter((execution) => execution.status === 'crashed')
		.map((execution) => Date.parse(execution.startedAt ?? '') || Infinity);
}

/** The per-kill timeline of one case, and its final counts. */
export function timelineText(result: ChaosResult): string {
	const lines = [
		`${result.case}: expected ${result.expected}${result.optional ? ` (+${result.optional} may run once)` : ''}, lost ${result.lost}, repeated ${result.repeated}, kills mid-burst ${result.earlyKills}/${result.kills}` +
			(result.crashedRuns === undefined
				? ''
				: `, crashed runs ${result.crashedRuns} (untraceable ${result.untraceable})`),
		...(result.timeline ?? []).map(
			(t) =>
				`  kill ${t.kill}: ${t.startedBefore}/${t.ranInRound} of the round's runs started before it${t.midBurst ? ' (mid-burst)' : ''}; crashed ${t.crashed}` +
				(t.reEmitted === undefined
					? ''
					: `; stored outbox ${t.reEmitted} re-emitted, ${t.refused} of them refused (run existed)`) +
				(t.held ? `, ${t.held} stored without items (planned again)` : '') +
				`; started after the restart ${t.startedAfterRestart}`,
		),
		...(result.notes ?? []).map((note) => `  ${note}`),
	];
	return lines.join('\n');
}

/** The workflow's executions; n8n answers 503 while its database is busy (a large burst), so ask again. */
async function executionsOf(n8n: N8nInstance, workflowId: string): Promise<Execution[]> {
	// Running and just-created ones too: a burst over a large history can take minutes to run.
	const list = async () => {
		const byId = new Map<string, Execution>();
		for (const status of [undefined, 'running', 'new'] as const) {
			for (const execution of await n8n.executions(workflowId, { status }))
				byId.set(execution.id, execution);
		}
		return [...byId.values()];
	};
	return await waitFor(`the executions of workflow ${workflowId}`, list, {
		timeoutMs: 300_000,
		intervalMs: 2_000,
	});
}

/** The results as a table, as `npm run chaos` prints it. */
export function chaosTable(results: ChaosResult[]): string {
	const rows = [
		['case', 'kills', 'kills mid-burst', 'items expected', 'lost', 'repeated'],
		...results.map((r) =>
			[
				r.case,
				r.kills,
				r.earlyKills,
				`${r.expected}${r.optional ? ` (+${r.optional})` : ''}`,
				r.lost,
				r.repeated,
			].map(String),
		),
	];
	const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
	return rows
		.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  '))
		.join('\n');
}

/** Executions per declared window (ISO time); with `firstStart`, when each window's first execution started. */
async function countWindows(
	n8n: N8nInstance,
	workflowId: string,
	firstStart = false,
): Promise<Map<string, number>> {
	const counts = new Map<string, number>();
	for (const listed of await executionsOf(n8n, workflowId)) {
		// The window is also in the run's deduplication key (dst:<workflow>:<node>@<window>); a
		// crashed run's trigger items may be recovery placeholders: read its key.
		let items = triggerItems(listed, 'Schedule');
		let key: string | undefined | null;
		if (items.length === 0) {
			key = (await n8n.execution(listed.id)).deduplicationKey;
			items = [];
		}
		const windows =
			items.length > 0
				? items.map((item) => String(item.declaredAt))
				: [key?.split('@')[1] ?? `unknown execution ${listed.id}`];
		for (const window of windows) {
			const startedAt = Date.parse(listed.startedAt ?? '') || Infinity;
			counts.set(
				window,
				firstStart
					? Math.min(counts.get(window) ?? Infinity, startedAt)
					: (counts.get(window) ?? 0) + 1,
			);
		}
	}
	return counts;
}

/** What a SIGKILL of a worker in the middle of runs did, as the worker-kill chaos cases measure it. */
export interface WorkerKillResult extends ChaosResult {
	/** Runs the killed worker had started and not finished when it died. */
	killedRuns: number;
	/** Their final status in n8n, and the message n8n recorded (one line each, deduplicated). */
	killedRunOutcomes: string[];
	/** From the kill until n8n had recorded an end for every killed run, in seconds. */
	settledAfterSec: number;
	/** Runs of items or windows that only ever ran on the killed worker (n8n does not run them again). */
	notRerun: number;
}

/** Executions a worker started and had not finished, from its log. */
function runningOn(log: string): string[] {
	const finished = new Set([...log.matchAll(/Worker finished execution (\d+)/g)].map((m) => m[1]));
	return [...log.matchAll(/Worker started execution (\d+)/g)]
		.map((m) => m[1])
		.filter((id) => !finished.has(id));
}

/**
 * Queue mode: kills a worker with SIGKILL while it executes runs (each waits `runSeconds`), starts it
 * again, and counts. Poll: a burst of `items` new items, one run each. Schedule: every 10 s window,
 * allow-parallel, so every window must run once. n8n does not run a killed run again: its job stalls,
 * Bull fails it (n8n sets maxStalledCount 0) and the main records the execution as failed and settles
 * the trigger's done-promise. So "lost" counts items or windows with no execution at all, and the
 * killed runs are reported separately (they happened, and ended in error).
 */
export async function runWorkerKillChaos(
	n8n: N8nInstance,
	kind: 'poll' | 'schedule',
	{ items = 20, runSeconds = 4 } = {},
): Promise<WorkerKillResult> {
	if (n8n.workers.length === 0) throw new Error('worker-kill chaos needs a queue-mode stack');
	const slow = node(
		'Slow',
		'n8n-nodes-base.wait',
		{ amount: runSeconds, unit: 'seconds' },
		{ typeVersion: 1.1, webhookId: randomUUID() },
	);
	const source = kind === 'poll' ? await FakeSystem.start() : undefined;
	let listed = false;
	const ids = Array.from({ length: items }, (_, i) => `wk-${i}`);
	source?.on('GET', POLL_PATH, () => ({ body: listed ? ids.map((id) => ({ id })) : [] }));
	const trigger =
		kind === 'poll'
			? node('Poll', `${PACKAGE}.pollTrigger`, {
					op: 'http.request',
					with: JSON.stringify({ url: source!.url(POLL_PATH) }),
					id: 'id',
					dedupe: 'unique',
					interval: 5,
					intervalUnit: 'seconds',
					options: { timeoutSec: 60 },
				})
			: node('Schedule', `${PACKAGE}.durableScheduleTrigger`, {
					scheduleType: 'interval',
					interval: 10,
					intervalUnit: 'seconds',
					overlap: 'allow-parallel',
					maxParallel: 100,
				});
	const triggerName = kind === 'poll' ? 'Poll' : 'Schedule';
	const id = await n8n.importWorkflow(
		workflow(
			`worker kill ${kind}`,
			[trigger, slow, marker('Done')],
			[
				[triggerName, 'Slow'],
				['Slow', 'Done'],
			],
		),
	);
	const publishedAt = Date.now();
	try {
		await n8n.publish(id);
		if (source) {
			await source.requestCount(POLL_PATH, 1, 120_000);
			listed = true;
		}
		const logsBefore = n8n.workers.map((w) => w.log().length);
		// The first worker seen executing a run of this workflow is the one killed.
		const { worker, logBefore, victims } = await waitFor(
			'a worker to be executing a run',
			async () => {
				for (const [i, w] of n8n.workers.entries()) {
					const running = runningOn(w.log().slice(logsBefore[i]));
					if (running.length > 0) return { worker: w, logBefore: logsBefore[i], victims: running };
				}
				return undefined;
			},
			{ timeoutMs: 120_000, intervalMs: 50 },
		);
		const killedAt = Date.now();
		await worker.kill();
		// Everything it had started and not finished when it died (more may have started since the check).
		victims.splice(0, victims.length, ...runningOn(worker.log().slice(logBefore)));
		// What each execution carries, read now: when n8n fails a killed run it replaces the execution's
		// data with the error (no trigger output left), so its item is known from this snapshot.
		// Failing that, by the deduplication key: a window's is `dst:…@<window>`; a poll item's
		// (dedupe unique) `poll:<workflow>:<node>:<hash of the store's id and the item's key>`, computed as
		// the core does with the trigger's own store id.
		const itemOfHash = new Map<string, string>();
		const { staticData } = await n8n.getWorkflow(id);
		const storeId = (
			staticData as Record<string, { pollTrigger?: { dedupe?: { id?: string } } }> | undefined
		)?.[`node:${triggerName}`]?.pollTrigger?.dedupe?.id;
		const { store } = loadDedupeStore(
			{ dedupe: { kind: 'unique' }, firstPoll: { mode: 'all' } },
			storeId ? { v: 1, kind: 'unique', id: storeId, fresh: true } : undefined,
		);
		const planned = store.plan(
			ids.map((itemId, index) => ({ item: { id: itemId }, key: itemId, index })),
			Date.now(),
		);
		for (const run of store.commit(planned, Date.now(), { keyPrefix: '', onePerItem: true })) {
			itemOfHash.set(String(run.key), String(run.candidates[0].key));
		}
		const keysOf = (execution: Execution): string[] => {
			const found = triggerItems(execution, triggerName);
			if (found.length > 0) return found.map((item) => String(source ? item.id : item.declaredAt));
			const key = execution.deduplicationKey ?? '';
			const named = source ? itemOfHash.get(unprefixed(key)) : key.split('@')[1];
			return named ? [named] : [];
		};
		// The list leaves out running executions: the killed ones are read one by one.
		const snapshot = new Map(
			await Promise.all(
				victims.map(async (victim) => [victim, keysOf(await n8n.execution(victim))] as const),
			),
		);
		for (const execution of await n8n.executions(id))
			if (!snapshot.has(execution.id)) snapshot.set(execution.id, keysOf(execution));
		await worker.start();
		// Every killed run ended in n8n's database (no longer running).
		const ended = await waitFor(
			'n8n to record an end for the runs the killed worker held',
			async () => {
				const all = await Promise.all(victims.map(async (victim) => await n8n.execution(victim)));
				return all.every(
					(execution) => execution.status !== 'running' && execution.status !== 'new',
				)
					? all
					: undefined;
			},
			{ timeoutMs: 300_000, intervalMs: 1_000 },
		);
		const settledAfterSec = Math.round(
			(Math.max(...ended.map((e) => Date.parse(e.stoppedAt ?? '') || Date.now())) - killedAt) /
				1000,
		);
		const killedKeys = new Set(victims.flatMap((victim) => snapshot.get(victim) ?? []));
		if (killedKeys.size === 0)
			throw new Error(`the killed runs ${victims.join(', ')} carried no item the test could name`);
		const expected = source
			? ids
			: windowsBetween(
					Math.ceil((publishedAt + 2_000) / WINDOW_MS) * WINDOW_MS,
					Date.now() - 5_000,
				);
		const count = async (): Promise<Map<string, number>> => {
			const counts = new Map<string, number>();
			for (const execution of await n8n.executions(id)) {
				// n8n's execution list leaves out the deduplication key: read a run without items alone.
				let found = keysOf(execution);
				if (found.length === 0) found = keysOf(await n8n.execution(execution.id));
				if (found.length === 0) found = snapshot.get(execution.id) ?? [];
				const keys = found.length > 0 ? found : [`unknown execution ${execution.id}`];
				for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
			}
			return counts;
		};
		const counts = await waitFor(
			`every ${kind} item to have run`,
			async () => {
				const counted = await count();
				return expected.every((key) => counted.has(key)) ? counted : undefined;
			},
			{ timeoutMs: 300_000, intervalMs: 1_000 },
		).catch(count);
		// Two more polls (or windows): a late repeat would show now.
		if (source) await source.requestCount(POLL_PATH, source.requests(POLL_PATH).length + 2, 60_000);
		else
			await n8n.waitForExecutions(
				id,
				(all) => all.length >= counts.size + 2,
				'two more windows',
				60_000,
			);
		const final = await count();
		return {
			case: `${kind}: SIGKILL of ${worker.name.replace(/^.* (worker \d+)$/, '$1')} during runs`,
			kills: 1,
			earlyKills: 1,
			expected: expected.length,
			lost: expected.filter((key) => !final.has(key)).length,
			// Executions the test could not name count as repeats; windows after the counted range do not.
			repeated: [...final].reduce(
				(sum, [key, count]) =>
					sum + (key.startsWith('unknown execution') ? count : Math.max(0, count - 1)),
				0,
			),
			killedRuns: victims.length,
			killedRunOutcomes: [
				...new Set(
					ended.map((e) =>
						`${e.status}: ${e.data?.resultData.error?.message ?? '(no error)'}`.slice(0, 160),
					),
				),
			],
			settledAfterSec,
			notRerun: [...killedKeys].filter((key) => (final.get(key) ?? 0) === 1).length,
		};
	} finally {
		await n8n.unpublish(id).catch(() => undefined);
		await source?.close();
	}
}

function windowsBetween(from: number, to: number): string[] {
	const windows: string[] = [];
	for (let window = from; window <= to; window += WINDOW_MS)
		windows.push(new Date(window).toISOString());
	return windows;
}
