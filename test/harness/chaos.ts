import { randomUUID } from 'node:crypto';

import { loadDedupeStore } from '../../core/poll';
import { FakeSystem } from './fakeSystem';
import type { Execution, N8nInstance } from './n8nInstance';
import { waitFor } from './net';
import { marker, node, PACKAGE, workflow } from '../e2e/workflowBuilder';

/**
 * Chaos for the Poll Trigger: bursts of new items over a large remembered history, n8n killed with
 * SIGKILL at a random moment while the burst's runs are being created, restarted, and at the end
 * every item counted: how many executions carry it. Shared by the short e2e test (npm test) and
 * `npm run chaos`.
 */

export interface ChaosCase {
	name: string;
	/** Poll Trigger parameters beyond op/with/interval. */
	parameters: Record<string, unknown>;
	/** The source's list after `round` bursts (round 0: the history only). */
	list(round: number): Array<Record<string, unknown>>;
	/** The identities that must each start exactly once: those new in `round` (≥ 1). */
	expected(round: number): string[];
	/** One item's identity as `expected` names it. */
	identity(item: Record<string, unknown>): string;
}

export interface ChaosResult {
	case: string;
	kills: number;
	/** Kills mid-burst: poll, before every run of the burst had started; schedule, while a run was going. */
	earlyKills: number;
	expected: number;
	lost: number;
	repeated: number;
}

const POLL_PATH = '/chaos';

/** The cases the issue names, each with `history` remembered keys and `burst` new items per round. */
export function pollChaosCases(history: number, burst: number): ChaosCase[] {
	const seeds = (prefix: string) =>
		Array.from({ length: history }, (_, i) => ({ id: `${prefix}-h${i}` }));
	const fresh = (prefix: string, round: number) =>
		Array.from({ length: burst }, (_, i) => ({ id: `${prefix}-r${round}-${i}` }));
	const upTo = (prefix: string, round: number) => [
		...seeds(prefix),
		...Array.from({ length: round }, (_, r) => fresh(prefix, r + 1)).flat(),
	];
	const byId = (item: Record<string, unknown>) => String(item.id);
	const keyed = (prefix: string, parameters: Record<string, unknown>): ChaosCase => ({
		name: prefix,
		parameters,
		list: (round) => upTo(prefix, round),
		expected: (round) => fresh(prefix, round).map(byId),
		identity: byId,
	});
	const numbered = (round: number) =>
		Array.from({ length: burst }, (_, i) => history + (round - 1) * burst + i);
	return [
		keyed('unique', { dedupe: 'unique' }),
		keyed('time_window', { dedupe: 'time_window', ttl: 1, ttlUnit: 'hours' }),
		keyed('batch', { dedupe: 'unique', oneRunPerItem: false }),
		keyed('last', { dedupe: 'last' }),
		{
			name: 'greatest',
			parameters: { dedupe: 'greatest' },
			list: (round) => Array.from({ length: history + round * burst }, (_, id) => ({ id })),
			expected: (round) => numbered(round).map(String),
			identity: byId,
		},
		{
			// Each round changes the version of `burst` remembered keys: each (key, version) starts once.
			name: 'changed',
			parameters: { dedupe: 'changed', version: 'v' },
			list: (round) =>
				Array.from({ length: history }, (_, i) => ({
					id: `changed-${i}`,
					v: i < round * burst ? 1 + Math.ceil((i + 1) / burst) : 1,
				})),
			expected: (round) =>
				Array.from({ length: burst }, (_, i) => `changed-${(round - 1) * burst + i}@${round + 1}`),
			identity: (item) => `${String(item.id)}@${String(item.v)}`,
		},
	];
}

/**
 * n8n settings for chaos instances. On restart n8n rebuilds a crashed execution's data from its event
 * log and replaces the trigger's output with placeholder items; the simple recovery mode only marks
 * it crashed and keeps the data it was created with, so the test can see which item it carried. It
 * changes how crashed executions are shown, not what the triggers do.
 */
export const CHAOS_N8N_ENV = { N8N_EVENTBUS_RECOVERY_MODE: 'simple' };

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

/**
 * Runs one case: seeds the history (first poll remembers it without starting anything), then
 * `kills` rounds of a burst followed by a SIGKILL at a random moment within `killWithinMs` of the
 * poll that listed it, and restarts. Then waits for every expected item and counts.
 */
export async function runPollChaos(
	n8n: N8nInstance,
	chaos: ChaosCase,
	{ kills, killWithinMs = 800 }: { kills: number; killWithinMs?: number },
): Promise<ChaosResult> {
	const source = await FakeSystem.start();
	let round = 0;
	source.on('GET', POLL_PATH, () => ({ body: chaos.list(round) }));
	const trigger = node('Poll', `${PACKAGE}.pollTrigger`, {
		op: 'http.request',
		with: JSON.stringify({ url: source.url(POLL_PATH) }),
		id: 'id',
		interval: 5,
		intervalUnit: 'seconds',
		options: { firstPoll: 'none', timeoutSec: 60 },
		...chaos.parameters,
	});
	const id = await n8n.importWorkflow(
		workflow(`chaos ${chaos.name}`, [trigger, marker('Handled')], [['Poll', 'Handled']]),
	);
	try {
		await n8n.publish(id);
		await source.requestCount(POLL_PATH, 1, 300_000);
		const expected: string[] = [];
		const killedAt: number[] = [];
		for (let kill = 1; kill <= kills; kill++) {
			round = kill;
			expected.push(...chaos.expected(round));
			const since = Date.now();
			// Generous: after a restart on a busy machine n8n may take a while to activate and poll.
			const listed = await source.nextRequest(
				(request) => request.path === POLL_PATH && request.receivedAt >= since,
				300_000,
			);
			await new Promise((resolve) =>
				setTimeout(
					resolve,
					Math.max(0, listed.receivedAt + Math.random() * killWithinMs - Date.now()),
				),
			);
			killedAt.push(Date.now());
			await n8n.kill();
			await n8n.start();
			await n8n.login();
		}
		// Every item runs, or nothing more starts over two whole polls (what is missing then is lost).
		let counts = await countStarts(n8n, id, chaos);
		for (const deadline = Date.now() + 600_000; Date.now() < deadline; ) {
			if (expected.every((identity) => (counts.get(identity) ?? 0) > 0)) break;
			const before = [...counts.values()].reduce((sum, count) => sum + count, 0);
			await source.requestCount(POLL_PATH, source.requests(POLL_PATH).length + 2, 120_000);
			counts = await countStarts(n8n, id, chaos);
			if ([...counts.values()].reduce((sum, count) => sum + count, 0) === before) break;
		}
		// Two more polls of the full list: a late repeat would show now.
		await source.requestCount(POLL_PATH, source.requests(POLL_PATH).length + 2, 60_000);
		const final = await countStarts(n8n, id, chaos);
		for (const [identity, count] of counts)
			if ((final.get(identity) ?? 0) < count) final.set(identity, count);
		const startedAt = await firstStarts(n8n, id, chaos);
		const earlyKills = killedAt.filter((at, i) =>
			chaos.expected(i + 1).some((identity) => !((startedAt.get(identity) ?? Infinity) <= at)),
		).length;
		return {
			case: chaos.name,
			kills,
			earlyKills,
			expected: expected.length,
			lost: expected.filter((identity) => !final.has(identity)).length,
			repeated:
				[...final.values()].reduce((sum, count) => sum + Math.max(0, count - 1), 0) +
				[...final.keys()].filter((key) => !expected.includes(key)).length,
		};
	} finally {
		await n8n.unpublish(id).catch(() => undefined);
		await source.close();
	}
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

async function countStarts(
	n8n: N8nInstance,
	workflowId: string,
	chaos: ChaosCase,
): Promise<Map<string, number>> {
	const counts = new Map<string, number>();
	for (const execution of await executionsOf(n8n, workflowId)) {
		for (const item of triggerItems(execution, 'Poll')) {
			const identity = chaos.identity(item);
			counts.set(identity, (counts.get(identity) ?? 0) + 1);
		}
	}
	return counts;
}

/** When each identity's first execution started. */
async function firstStarts(
	n8n: N8nInstance,
	workflowId: string,
	chaos: ChaosCase,
): Promise<Map<string, number>> {
	const starts = new Map<string, number>();
	for (const execution of await executionsOf(n8n, workflowId)) {
		const at = Date.parse(execution.startedAt ?? '') || Infinity;
		for (const item of triggerItems(execution, 'Poll')) {
			const identity = chaos.identity(item);
			starts.set(identity, Math.min(starts.get(identity) ?? Infinity, at));
		}
	}
	return starts;
}

/** The results as a table, as `npm run chaos` prints it. */
export function chaosTable(results: ChaosResult[]): string {
	const rows = [
		['case', 'kills', 'kills mid-burst', 'items expected', 'lost', 'repeated'],
		...results.map((r) =>
			[r.case, r.kills, r.earlyKills, r.expected, r.lost, r.repeated].map(String),
		),
	];
	const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
	return rows
		.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  '))
		.join('\n');
}

/** A Durable Schedule Trigger setup whose every window must run exactly once through kills. */
export interface ScheduleChaosCase {
	name: string;
	parameters: Record<string, unknown>;
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
		},
		{
			name: 'schedule queue overlap',
			parameters: { ...common, overlap: 'queue', queueLimit: 1000 },
		},
	];
}

/**
 * Runs one schedule case: every 10 s window, runs that take 3 s (a Wait node), n8n killed at a random
 * moment (the first time while windows fire normally, then within `killWithinMs` of each restart,
 * while the catch-up of the windows missed during `downtimeMs` is being started), restarted; then
 * every window from the first after publishing to shortly before the end is counted.
 */
export async function runScheduleChaos(
	n8n: N8nInstance,
	chaos: ScheduleChaosCase,
	{
		kills,
		downtimeMs = 30_000,
		killWithinMs = 4_000,
	}: { kills: number; downtimeMs?: number; killWithinMs?: number },
): Promise<ChaosResult> {
	const trigger = node('Schedule', `${PACKAGE}.durableScheduleTrigger`, chaos.parameters);
	const slow = node(
		'Slow',
		'n8n-nodes-base.wait',
		{ amount: 3, unit: 'seconds' },
		{ typeVersion: 1.1, webhookId: randomUUID() },
	);
	const id = await n8n.importWorkflow(
		workflow(
			`chaos ${chaos.name}`,
			[trigger, slow, marker('Done')],
			[
				['Schedule', 'Slow'],
				['Slow', 'Done'],
			],
		),
	);
	const publishedAt = Date.now();
	const from = Math.ceil((publishedAt + 2_000) / WINDOW_MS) * WINDOW_MS;
	try {
		await n8n.publish(id);
		await n8n.waitForExecutions(id, (all) => all.length > 0, 'the first window', 60_000);
		const killedAt: number[] = [];
		for (let kill = 1; kill <= kills; kill++) {
			await new Promise((resolve) =>
				setTimeout(resolve, Math.random() * (kill === 1 ? WINDOW_MS : killWithinMs)),
			);
			killedAt.push(Date.now());
			await n8n.kill();
			await new Promise((resolve) => setTimeout(resolve, downtimeMs));
			await n8n.start();
			await n8n.login();
		}
		const endAt = Math.floor((Date.now() + 15_000) / WINDOW_MS) * WINDOW_MS;
		const expected: string[] = [];
		for (let window = from; window <= endAt; window += WINDOW_MS)
			expected.push(new Date(window).toISOString());
		const counts = await waitFor(
			`every window of ${chaos.name} up to ${new Date(endAt).toISOString()} to run`,
			async () => {
				const counted = await countWindows(n8n, id);
				return expected.every((window) => counted.has(window)) ? counted : undefined;
			},
			{ timeoutMs: 300_000, intervalMs: 1_000 },
		).catch(async () => await countWindows(n8n, id));
		const starts = await countWindows(n8n, id, true);
		// A kill mid-burst: some run had started less than its 3 s before (it was going, or being created).
		const earlyKills = killedAt.filter((at) =>
			[...starts.values()].some((startedAt) => startedAt <= at && startedAt > at - 3_000),
		).length;
		return {
			case: chaos.name,
			kills,
			earlyKills,
			expected: expected.length,
			lost: expected.filter((window) => !counts.has(window)).length,
			repeated: [...counts.values()].reduce((sum, count) => sum + Math.max(0, count - 1), 0),
		};
	} finally {
		await n8n.unpublish(id).catch(() => undefined);
	}
}

/** Executions per declared window (ISO time); with `firstStart`, when each window's first execution started. */
async function countWindows(
	n8n: N8nInstance,
	workflowId: string,
	firstStart = false,
): Promise<Map<string, number>> {
	const counts = new Map<string, number>();
	for (const execution of await executionsOf(n8n, workflowId)) {
		// The window is also in the run's deduplication key (dst:<workflow>:<node>@<window>).
		const items = triggerItems(execution, 'Schedule');
		const windows =
			items.length > 0
				? items.map((item) => String(item.declaredAt))
				: [execution.deduplicationKey?.split('@')[1] ?? 'unknown'];
		for (const window of windows) {
			const startedAt = Date.parse(execution.startedAt ?? '') || Infinity;
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
			const named = source ? itemOfHash.get(key.split(':').at(-1) ?? '') : key.split('@')[1];
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
