import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';

import { type ChaosResult, triggerItems } from './chaos';
import { FakeSystem, type RecordedRequest, type ScriptedResponse } from './fakeSystem';
import { ApiError, isFinal, type N8nInstance, nodeOutput } from './n8nInstance';
import { waitFor } from './net';
import { isN8n1 } from './paths';
import { node, type NodeJson, PACKAGE, workflow } from '../e2e/workflowBuilder';

/**
 * Issue 26's burst, published: a Poll Trigger (dedupe unique, First Poll Starts: Nothing, and any
 * further parameters and credentials in `poll`) has remembered `history` items; each run reports its
 * item to the source (an HTTP Request node). With `holdEvery`, the source holds the report of every
 * `holdEvery`-th item until n8n is first killed, so those runs are going when it dies: in one
 * process, n8n saves them `crashed`. Nothing new is listed yet (`add`).
 *
 * The items are listed by the fake source at `path`, or with `hold` by a real server (rows of a
 * table, files of a folder: test/harness/sourceChaos.ts) that `poll` reads; the reports still go to
 * the fake source.
 */
export async function publishedBurst(
	n8n: N8nInstance,
	source: FakeSystem,
	{
		path,
		history,
		holdEvery = 0,
		poll = {},
		serve,
		hold,
	}: Omit<BurstOptions, 'burst' | 'killAfter'>,
): Promise<PublishedBurst> {
	const name = path.slice(1);
	let listed: BurstItem[] = Array.from({ length: history }, (_, i) => ({
		id: `${name}-h${i}`,
		seq: i + 1,
		updatedAt: 0,
	}));
	source.on('GET', path, (request) => (serve ? serve(listed, request) : { body: listed }));
	// The real server's changes, one after the other, in the order the list changed.
	let round = 0;
	let holding = hold ? hold(listed, round++) : Promise.resolve();
	await holding;
	let release!: () => void;
	const dead = new Promise<void>((resolve) => (release = resolve));
	let killed = false;
	source.on('GET', `${path}/ran`, async (request) => {
		if (holdEvery && !killed && Number(request.query.n) % holdEvery === 0) await dead;
		return { body: {} };
	});
	let pollNow = poll;
	// One id per node, as the editor keeps it across edits: the trigger's deduplication keys and its
	// history table's store are named by it.
	const [pollId, reportId] = [randomUUID(), randomUUID()];
	const build = (options: Record<string, unknown>) =>
		workflow(
			`burst ${name}`,
			[
				node(
					'Poll',
					`${PACKAGE}.pollTrigger`,
					{
						op: 'http.request',
						with: JSON.stringify({ url: source.url(path) }),
						interval: 5,
						intervalUnit: 'seconds',
						id: 'id',
						dedupe: 'unique',
						...pollNow.parameters,
						options: { firstPoll: 'none', ...options },
					},
					{ id: pollId, ...(pollNow.credentials && { credentials: pollNow.credentials }) },
				),
				node(
					'Report',
					'n8n-nodes-base.httpRequest',
					{ url: `=${source.url(`${path}/ran`)}?n={{ $json.n }}`, options: {} },
					{ id: reportId, typeVersion: 4.2 },
				),
			],
			[['Poll', 'Report']],
		);
	const workflowId = await n8n.importWorkflow(build({}));
	await n8n.publish(workflowId);
	await waitFor(
		`the ${history} items of history remembered`,
		async () => {
			const { staticData } = await n8n.getWorkflow(workflowId);
			const data = (typeof staticData === 'string' ? JSON.parse(staticData) : staticData) as
				| Record<string, { pollTrigger?: { dedupe?: { fresh?: boolean } } }>
				| undefined;
			return data?.['node:Poll']?.pollTrigger?.dedupe?.fresh === false ? true : undefined;
		},
		{ timeoutMs: 120_000, intervalMs: 500 },
	);
	let next = 0;
	return {
		workflowId,
		add: (count) => {
			const updatedAt = Date.now();
			const items = Array.from({ length: count }, (_, i) => ({
				id: `${name}-${next + i}`,
				n: next + i,
				seq: history + next + i + 1,
				updatedAt,
			}));
			next += count;
			listed = [...listed, ...items];
			if (hold) {
				const now = listed;
				holding = holding.then(() => hold(now, round++));
			}
			return items.map((item) => item.id);
		},
		held: async () => await holding,
		kill: async (reports) => {
			await source.requestCount(`${path}/ran`, reports, 300_000);
			await n8n.kill();
			killed = true;
			const reportedAtKill = source.requests(`${path}/ran`).length;
			release();
			return reportedAtKill;
		},
		update: async (options, newPoll) => {
			if (newPoll) pollNow = newPoll;
			const { nodes, connections, settings } = build(options);
			await n8n.api('PUT', `/workflows/${workflowId}`, {
				name: `burst ${name}`,
				nodes,
				connections,
				settings,
			});
		},
	};
}

/** Resolves once the sources at `paths` (bursts') have received `count` reports of runs in all; with that number. */
export async function reportsInAll(
	source: FakeSystem,
	paths: string[],
	count: number,
): Promise<number> {
	const reports = () => paths.reduce((sum, path) => sum + source.requests(`${path}/ran`).length, 0);
	await waitFor(`${count} reports in all`, async () => (reports() >= count ? true : undefined), {
		timeoutMs: 600_000,
		intervalMs: 50,
	});
	return reports();
}

/** A burst's workflow, published (publishedBurst). */
export interface PublishedBurst {
	workflowId: string;
	/**
	 * Lists `count` more new items (numbered on from the last) and returns their ids. With `hold`, the
	 * server holds them once `held()` resolves.
	 */
	add(count: number): string[];
	/** Resolves once the server (`hold`) holds every item listed so far (at once without `hold`). */
	held(): Promise<void>;
	/**
	 * SIGKILLs n8n's main once the source has received `reports` reports of runs in all, and lets
	 * the held reports go; resolves with the reports received at the kill. n8n stays down.
	 */
	kill(reports: number): Promise<number>;
	/**
	 * Sets the Poll Trigger's Options (First Poll Starts: Nothing kept) as the editor would, with
	 * `poll`'s parameters and credentials if given (else those it has), and publishes.
	 */
	update(options: Record<string, unknown>, poll?: BurstPoll): Promise<void>;
}

/**
 * Issue 26's burst through a crash: `publishedBurst`, then the source lists `burst` new ones, and
 * n8n's main is SIGKILLed once `killAfter` runs have reported; while it is down the source lists
 * `addWhileDown` more; then it is started again (default crash recovery unless the instance says
 * otherwise).
 */
export async function burstThroughKill(
	n8n: N8nInstance,
	source: FakeSystem,
	options: BurstOptions,
): Promise<BurstThroughKill> {
	const published = await publishedBurst(n8n, source, options);
	const items = published.add(options.burst);
	await published.held();
	const reportedAtKill = await published.kill(options.killAfter);
	items.push(...published.add(options.addWhileDown ?? 0));
	await published.held();
	await n8n.start();
	await n8n.login();
	return {
		workflowId: published.workflowId,
		items,
		reportedAtKill,
		update: async (updated) => await published.update(updated),
	};
}

/** Further parameters of the Poll Trigger (beside op, with, interval, id, dedupe), and its credentials. */
export interface BurstPoll {
	parameters?: Record<string, unknown>;
	credentials?: NodeJson['credentials'];
}

/**
 * An item of a burst's source: its id (the trigger's ID unless `poll` says otherwise), `n` its number
 * in the burst, `seq` its place in the whole list (history first, from 1), `updatedAt` when it was
 * listed (ms; 0 for the history).
 */
export interface BurstItem {
	id: string;
	n?: number;
	seq: number;
	updatedAt: number;
}

export interface BurstOptions {
	/**
	 * How the source answers a request for its list (newest items last in `listed`); default: the
	 * whole list, as it is, whatever was asked.
	 */
	serve?: (listed: BurstItem[], request: RecordedRequest) => ScriptedResponse;
	/**
	 * Instead of the fake source, a real server lists the items (`poll` reads it): makes it hold
	 * exactly `listed` (rows inserted or deleted, files written or removed), round 0 the history, then
	 * one round per `add`. Each item's id must be what the trigger's ID reads (a row's key, a file's
	 * name), so runs and deduplication keys name it.
	 */
	hold?: (listed: BurstItem[], round: number) => Promise<void>;
	/** The source's path (its name, without the slash, prefixes the item ids). */
	path: string;
	/** Items remembered before the burst. */
	history: number;
	/** New items in the burst. */
	burst: number;
	/** n8n is killed once this many runs have reported. */
	killAfter: number;
	/** Every `holdEvery`-th item's report is held until n8n is dead (0: none). */
	holdEvery?: number;
	/** The Poll Trigger's further parameters and credentials (e.g. History Store: PostgreSQL). */
	poll?: BurstPoll;
	/** New items the source lists while n8n is down, before the restart (counted with the burst's). */
	addWhileDown?: number;
}

export interface BurstThroughKill {
	workflowId: string;
	/** The burst's item keys (the items' ids), with those added while n8n was down. */
	items: string[];
	/** Reports of runs the source had received when n8n was killed (held ones included). */
	reportedAtKill: number;
	/** Sets the Poll Trigger's Options (First Poll Starts: Nothing kept) as the editor would, and publishes. */
	update(options: Record<string, unknown>): Promise<void>;
}

/** The trigger's runs of a burst as n8n's executions show them. */
export interface BurstRuns {
	/** Item → runs of it that ended successfully. */
	succeeded: Map<string, number>;
	/** Ids of the executions n8n saved `crashed`. */
	crashed: string[];
	/** Ids of the executions that ended with an error (a report of runs n8n did not run is one). */
	failed: string[];
}

/**
 * What reads by id found that will not change, for each n8n: an execution's workflow, or null when it
 * was deleted. Kept across calls: a suite's later bursts would otherwise read every other workflow's
 * execution again, with its data (thousands of reads per case, which cost CI's two cores more than
 * the runs themselves). An execution of the workflow asked about is read again each time: n8n 2.41
 * deletes one that never started when a run under its deduplication key is created
 * (execution-persistence.js `reclaimTombstone`).
 */
const readOnce = new WeakMap<N8nInstance, Map<number, string | null>>();
const executionWorkflows = (n8n: N8nInstance) => {
	let known = readOnce.get(n8n);
	if (!known) readOnce.set(n8n, (known = new Map()));
	return known;
};

/**
 * Waits until every trigger run of the workflow has ended and they account for `runs` items (each
 * successful item, and each crashed run), then counts them; it stops waiting once no run has ended
 * for `stallMs`. It does not fail when that count is not reached: a lost item shows in the counts.
 * A wait bounded by progress, not by a total: a busy machine (a local npm test beside three other
 * e2e runs, 2026-12-03) ran a 1,000-item burst in 11 minutes, and a fixed 600 s wait counted the 52
 * still to run as lost; a lost item ends nothing, so the wait still ends.
 *
 * Statuses are read from n8n's public API. Its list leaves out the executions n8n's process holds
 * as active and running (n8n 2.41 `execution.service.js` `findManyAndCount`, `excludeRunning`), and
 * an enqueued run its startup recovery failed to start ("Failed to run enqueued execution") is saved
 * `crashed` but stays held so: the ids the list skips are read one by one (once, when ended or
 * another workflow's), with their data, and counted like the listed ones. The editor's list would
 * show them, but takes at most 100 a page. n8n 2.41 in queue mode also holds for good a run whose
 * job a worker ended before the main awaited it (Bull `job.finished()`), though it saved it ended:
 * 2 of 500 in a run on 2026-12-02, counted 498 until jest's guard (likely stop 32's CI red).
 */
export async function burstRuns(
	n8n: N8nInstance,
	workflowId: string,
	runs: number,
	stallMs = 300_000,
	/** An item's id in a run's trigger output (sftp.list's files: their name). */
	identity: (item: Record<string, unknown>) => string = (item) => String(item.id),
): Promise<BurstRuns> {
	const known = executionWorkflows(n8n);
	const statuses = async () => {
		const listed = await n8n.executionSummaries(workflowId);
		const ids = new Set(listed.map((e) => Number(e.id)));
		const last = Math.max(0, ...ids);
		for (let id = 1; id < last; id++) {
			if (ids.has(id)) continue;
			const seen = known.get(id);
			if (seen === null || (seen !== undefined && seen !== workflowId)) continue;
			const execution = await n8n.execution(String(id)).catch((error: unknown) => {
				// Deleted (or never created), or just created: read again later.
				if (error instanceof ApiError && error.status === 404) return null;
				if (error instanceof ApiError && error.status === 400) return undefined;
				throw error;
			});
			if (execution === null) known.set(id, null);
			if (!execution) continue;
			known.set(id, execution.workflowId);
			if (execution.workflowId !== workflowId) continue;
			listed.push(execution);
		}
		return listed.filter((e) => e.mode === 'trigger');
	};
	const count = async (): Promise<BurstRuns> => {
		const listed = await statuses();
		const withData = await n8n.executions(workflowId);
		const inList = new Set(withData.map((e) => e.id));
		const readById = listed.filter((e) => !inList.has(e.id));
		const succeeded = new Map<string, number>();
		for (const execution of [...withData, ...readById].filter(
			(e) => e.mode === 'trigger' && e.status === 'success',
		))
			for (const item of triggerItems(execution, 'Poll').map(identity))
				succeeded.set(item, (succeeded.get(item) ?? 0) + 1);
		return {
			succeeded,
			crashed: listed.filter((e) => e.status === 'crashed').map((e) => e.id),
			failed: listed.filter((e) => e.status === 'error').map((e) => e.id),
		};
	};
	let ended = -1;
	let progressAt = Date.now();
	for (;;) {
		const listed = await statuses();
		const endedNow = listed.filter(isFinal).length;
		if (endedNow > ended) [ended, progressAt] = [endedNow, Date.now()];
		if (listed.length >= runs && listed.every(isFinal)) {
			const counted = await count();
			if (counted.succeeded.size + counted.crashed.length >= runs) return counted;
		}
		if (Date.now() - progressAt > stallMs) return await count();
		await new Promise((resolve) => setTimeout(resolve, 2_000));
	}
}

/**
 * The items a crashed run of a burst names: on n8n 2.x the last part of its deduplication key
 * (`…:<key>`, `…:<key>#<n>`), on n8n 1.x (no keys) its Poll node's output, each item by `identity`;
 * none when n8n saved it without data: n8n 1.123 on SQLite creates a run in two inserts with no
 * transaction (`ExecutionRepository.createNewExecution`), and a kill between them leaves its row
 * `new` with no data, which its startup marks `crashed` (`LegacySqliteExecutionRecoveryService`) and
 * its API answers 400 for. The trigger had no confirmation of such a run (n8n reads the
 * done-promise's `resolve` only once both inserts are done), so its item is still owed: the next
 * activation starts it again (nodes/shared/emitRuns.ts emitOneByOne). None either when n8n has
 * deleted it (404).
 */
export async function crashedRunNames(
	n8n: N8nInstance,
	executionId: string,
	identity: (item: Record<string, unknown>) => string = (item) => String(item.id),
): Promise<string[]> {
	const execution = await n8n.execution(executionId).catch((error: unknown) => {
		// Deleted since it was listed: n8n 2.41 deletes a run that never started when a run under its
		// key is created (execution-persistence.js `reclaimTombstone`), which then names the item.
		if (error instanceof ApiError && error.status === 404) return undefined;
		if (isN8n1 && error instanceof ApiError && error.status === 400) return undefined;
		throw error;
	});
	if (!execution) return [];
	if (isN8n1) return triggerItems(execution, 'Poll').map(identity);
	const key = /:([^:#]+)(#\d+)?$/.exec(String(execution.deduplicationKey))?.[1];
	return key === undefined ? [] : [key];
}

/** The items that ran exactly once (successfully), sorted. */
export function ranOnce({ succeeded }: BurstRuns): string[] {
	return [...succeeded]
		.filter(([, times]) => times === 1)
		.map(([item]) => item)
		.sort();
}

/** A row of Recent Starts (Execute step on the Poll node, Execute Step Shows: Recent Starts). */
export interface RecentStart {
	deduplicationKey: string;
	itemKeys: string[];
	outcome: string;
}

/** Execute step on the Poll node, showing Recent Starts: the summary row's Start Again list (if any) and a row per start. */
export async function recentStarts(
	n8n: N8nInstance,
	workflowId: string,
): Promise<{ startAgain: string[]; rows: RecentStart[] }> {
	const output = nodeOutput(await n8n.executeStep(workflowId, 'Poll'), 'Poll');
	if (!('endUnknown' in (output[0] ?? {})))
		return { startAgain: [], rows: output as unknown as RecentStart[] };
	const [first, ...rows] = output as Array<{ itemKeys: string }>;
	return {
		startAgain: JSON.parse(first.itemKeys) as string[],
		rows: rows as unknown as RecentStart[],
	};
}

/** What a user finds of each crashed run of a burst, as docs/poll-reliability.md tells them to look. */
export interface CrashedRunsTrace {
	/** Items of crashed runs in Recent Starts' Start Again list: the ones the user starts again. */
	toStartAgain: string[];
	/**
	 * Items of crashed runs outside that list that ran again by themselves (the trigger took the item
	 * back: Recent Starts says `not run: rolled back`, or no longer lists the run).
	 */
	ranAgain: string[];
	/** Crashed runs a user cannot trace: their key, and Recent Starts' outcome for it. */
	untraceable: string[];
}

/**
 * Traces each crashed execution of a burst as a user would: its deduplication key (n8n's API returns
 * it with a single execution) must name its item, and that item must be in Recent Starts' Start Again
 * list, or (the trigger took it back because n8n reported it could not create the run) have run again.
 * Switches the Poll Trigger to show Recent Starts (a publish).
 */
export async function traceCrashedRuns(
	n8n: N8nInstance,
	burst: BurstThroughKill,
	runs: BurstRuns,
): Promise<CrashedRunsTrace> {
	await burst.update({ executeStepShows: 'recentStarts' });
	const { startAgain, rows } = await recentStarts(n8n, burst.workflowId);
	const trace: CrashedRunsTrace = { toStartAgain: [], ranAgain: [], untraceable: [] };
	for (const execution of runs.crashed) {
		const key = String((await n8n.execution(execution)).deduplicationKey);
		const item = /:([^:#]+)(#\d+)?$/.exec(key)?.[1];
		const row = rows.find((r) => r.deduplicationKey === key);
		if (item === undefined) trace.untraceable.push(key);
		else if (startAgain.includes(item)) trace.toStartAgain.push(item);
		else if (!runs.succeeded.has(item) || (row && row.outcome !== 'not run: rolled back'))
			trace.untraceable.push(`${key} (${row?.outcome ?? 'no row'})`);
		else trace.ranAgain.push(item);
	}
	return trace;
}

/** Start Again, as a user does it: the items pasted into Options → Start Again (500 at a time), published. */
export async function startAgain(burst: BurstThroughKill, items: string[]): Promise<void> {
	for (let i = 0; i < items.length; i += 500)
		await burst.update({ startAgain: JSON.stringify(items.slice(i, i + 500)) });
}

/** Issue 26's burst through a crash, traced and started again as a user would. */
export interface BurstCrashOutcome extends BurstThroughKill {
	/** The runs once they had ended after the restart, before Start Again. */
	before: BurstRuns;
	trace: CrashedRunsTrace;
	/** The runs once Start Again's had ended. */
	after: BurstRuns;
}

/**
 * The whole case: `burstThroughKill`, the runs counted once they ended, each crashed run traced
 * (`traceCrashedRuns`), Start Again applied once to the Start Again list's crashed items, and the runs
 * counted again. `log` gets a line after the first count. The workflow is left published.
 */
export async function burstCrashStartAgain(
	n8n: N8nInstance,
	source: FakeSystem,
	options: BurstOptions & { log?: (line: string) => void; settleMs?: number },
): Promise<BurstCrashOutcome> {
	const started = Date.now();
	const burst = await burstThroughKill(n8n, source, options);
	const before = await burstRuns(n8n, burst.workflowId, burst.items.length, options.settleMs);
	options.log?.(
		`${burst.items.length}-item burst killed after ${burst.reportedAtKill} reports: ${before.crashed.length} runs crashed, ${before.succeeded.size} items ran, ${before.failed.length} failed executions (${Math.round((Date.now() - started) / 1000)} s)`,
	);
	const trace = await traceCrashedRuns(n8n, burst, before);
	await startAgain(burst, trace.toStartAgain);
	const after = await burstRuns(
		n8n,
		burst.workflowId,
		burst.items.length + before.crashed.length,
		options.settleMs,
	);
	return { ...burst, before, trace, after };
}

/**
 * Lost: burst items with no successful run. Repeated: every successful run of a burst item beyond its
 * first, and every run of an item not in the burst (the history).
 */
export function lostAndRepeated(
	items: string[],
	{ succeeded }: BurstRuns,
): { lost: number; repeated: number } {
	const burst = new Set(items);
	return {
		lost: items.filter((item) => !succeeded.has(item)).length,
		repeated: [...succeeded].reduce(
			(sum, [item, times]) => sum + (burst.has(item) ? times - 1 : times),
			0,
		),
	};
}

/** Runs counted: each successful item run, each crashed and each failed execution. */
function runCount({ succeeded, crashed, failed }: BurstRuns): number {
	return (
		[...succeeded.values()].reduce((sum, times) => sum + times, 0) + crashed.length + failed.length
	);
}

/**
 * The chaos run's `burst1000` case (scripts/chaos.ts): `burstCrashStartAgain` on its own source, n8n
 * (one process, default crash recovery) killed once a random number of runs (1 to a third of the
 * burst) have reported, every fourth run held going so the kill meets runs in flight. Lost, repeated
 * and untraceable counted after Start Again is applied once; the notes give the runs and the time.
 */
export async function burstCrashChaos(
	n8n: N8nInstance,
	{
		name = 'burst1000',
		history,
		burst,
		killAfter = 1 + Math.floor((Math.random() * burst) / 3),
		log = (line: string) => process.stdout.write(`${line}\n`),
	}: {
		name?: string;
		history: number;
		burst: number;
		killAfter?: number;
		log?: (line: string) => void;
	},
): Promise<ChaosResult> {
	const source = await FakeSystem.start();
	const started = Date.now();
	try {
		log(
			`chaos ${name}: ${burst} new items over ${history} remembered keys, kill after ${killAfter} reports`,
		);
		const outcome = await burstCrashStartAgain(n8n, source, {
			path: `/${name}`,
			history,
			burst,
			killAfter,
			holdEvery: 4,
			log: (line) => log(`chaos ${name}: ${line}`),
		});
		await n8n.unpublish(outcome.workflowId).catch(() => undefined);
		const { before, trace, after, items } = outcome;
		const { lost, repeated } = lostAndRepeated(items, after);
		return {
			case: name,
			kills: 1,
			earlyKills: outcome.reportedAtKill < items.length ? 1 : 0,
			expected: items.length,
			lost,
			repeated,
			crashedRuns: before.crashed.length,
			untraceable: trace.untraceable.length,
			notes: [
				`killed after ${outcome.reportedAtKill} of ${items.length} reports; runs before Start Again ${runCount(before)} (${before.succeeded.size} items ran, ${before.crashed.length} crashed, ${before.failed.length} failed); crashed runs traceable ${before.crashed.length - trace.untraceable.length} of ${before.crashed.length} (${trace.toStartAgain.length} in the Start Again list, ${trace.ranAgain.length} ran again by themselves); Start Again applied once to ${trace.toStartAgain.length}; runs after ${runCount(after)} (${after.failed.length} failed)`,
				`${Math.round((Date.now() - started) / 1000)} s, load average ${loadavg()
					.map((load) => load.toFixed(1))
					.join(' ')} at the end`,
				...trace.untraceable.slice(0, 5).map((key) => `untraceable: ${key}`),
			],
		};
	} finally {
		await source.close();
	}
}
