import { triggerItems } from './chaos';
import type { FakeSystem } from './fakeSystem';
import { ApiError, type Execution, isFinal, type N8nInstance } from './n8nInstance';
import { waitFor } from './net';
import { node, PACKAGE, workflow } from '../e2e/workflowBuilder';

/**
 * Issue 26's burst through a crash: a Poll Trigger (dedupe unique, First Poll Starts: Nothing)
 * remembers `history` items; the source then lists `burst` new ones, each run reports its item to
 * the source (an HTTP Request node), and n8n's main is SIGKILLed once `killAfter` runs have
 * reported, then started again (default crash recovery unless the instance says otherwise). With
 * `holdEvery`, the source holds the report of every `holdEvery`-th item until n8n is dead, so those
 * runs are going when it dies: in one process, n8n saves them `crashed`.
 */
export async function burstThroughKill(
	n8n: N8nInstance,
	source: FakeSystem,
	{
		path,
		history,
		burst,
		killAfter,
		holdEvery = 0,
	}: { path: string; history: number; burst: number; killAfter: number; holdEvery?: number },
): Promise<BurstThroughKill> {
	const name = path.slice(1);
	let listed: Array<{ id: string; n?: number }> = Array.from({ length: history }, (_, i) => ({
		id: `${name}-h${i}`,
	}));
	source.on('GET', path, () => ({ body: listed }));
	let release!: () => void;
	const dead = new Promise<void>((resolve) => (release = resolve));
	let killed = false;
	source.on('GET', `${path}/ran`, async (request) => {
		if (holdEvery && !killed && Number(request.query.n) % holdEvery === 0) await dead;
		return { body: {} };
	});
	const build = (options: Record<string, unknown>) =>
		workflow(
			`burst ${name}`,
			[
				node('Poll', `${PACKAGE}.pollTrigger`, {
					op: 'http.request',
					with: JSON.stringify({ url: source.url(path) }),
					interval: 5,
					intervalUnit: 'seconds',
					id: 'id',
					dedupe: 'unique',
					options: { firstPoll: 'none', ...options },
				}),
				node(
					'Report',
					'n8n-nodes-base.httpRequest',
					{ url: `=${source.url(`${path}/ran`)}?n={{ $json.n }}`, options: {} },
					{ typeVersion: 4.2 },
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
	const items = Array.from({ length: burst }, (_, n) => ({ id: `${name}-${n}`, n }));
	listed = [...listed, ...items];
	await source.requestCount(`${path}/ran`, killAfter, 300_000);
	await n8n.kill();
	killed = true;
	release();
	await n8n.start();
	await n8n.login();
	return {
		workflowId,
		items: items.map((item) => item.id),
		update: async (options) => {
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

export interface BurstThroughKill {
	workflowId: string;
	/** The burst's item keys (the items' ids). */
	items: string[];
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
 * Waits until every trigger run of the workflow has ended and they account for `runs` items (each
 * successful item, and each crashed run), at most `timeoutMs`, then counts them. It does not fail
 * when that count is not reached: a lost item shows in the counts.
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
	timeoutMs = 900_000,
): Promise<BurstRuns> {
	/** Executions read by id that will not change: ended ones, and other workflows' (null). */
	const known = new Map<number, Execution | null>();
	const statuses = async () => {
		const listed = await n8n.executionSummaries(workflowId);
		const ids = new Set(listed.map((e) => Number(e.id)));
		const last = Math.max(0, ...ids);
		for (let id = 1; id < last; id++) {
			if (ids.has(id)) continue;
			let execution = known.get(id);
			if (execution === undefined) {
				const read = await n8n.execution(String(id)).catch((error: unknown) => {
					// Deleted (or never created), or just created: read again later.
					if (error instanceof ApiError && error.status === 404) return null;
					if (error instanceof ApiError && error.status === 400) return undefined;
					throw error;
				});
				execution = read && (read.workflowId === workflowId ? read : null);
				if (execution === null || (execution && isFinal(execution))) known.set(id, execution);
			}
			if (execution) listed.push(execution);
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
			for (const item of triggerItems(execution, 'Poll'))
				succeeded.set(String(item.id), (succeeded.get(String(item.id)) ?? 0) + 1);
		return {
			succeeded,
			crashed: listed.filter((e) => e.status === 'crashed').map((e) => e.id),
			failed: listed.filter((e) => e.status === 'error').map((e) => e.id),
		};
	};
	const settled = await waitFor(
		`runs of ${runs} items ended`,
		async () => {
			const listed = await statuses();
			if (listed.length < runs || !listed.every(isFinal)) return undefined;
			const counted = await count();
			return counted.succeeded.size + counted.crashed.length >= runs ? counted : undefined;
		},
		{ timeoutMs, intervalMs: 2_000 },
	).catch(() => undefined);
	return settled ?? (await count());
}

/** The items that ran exactly once (successfully), sorted. */
export function ranOnce({ succeeded }: BurstRuns): string[] {
	return [...succeeded]
		.filter(([, times]) => times === 1)
		.map(([item]) => item)
		.sort();
}
