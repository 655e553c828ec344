import {
	type BurstItem,
	type BurstOptions,
	burstRuns,
	crashedRunNames,
	lostAndRepeated,
	publishedBurst,
	reportsInAll,
} from '../harness/burstKill';
import { triggerItems } from '../harness/chaos';
import { FakeSystem, type RecordedRequest, type ScriptedResponse } from '../harness/fakeSystem';
import { type Execution, isFinal, N8nInstance, TOPOLOGY_ENV } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { isN8n1 } from '../harness/paths';
import { refusingHook } from '../harness/refusingHook';

/**
 * Issue 36: never lose one from a source that lists only what it is asked for. A one-item run is
 * stored without its item (core/poll/runStage.ts), so after a kill -9, a re-publish or a run n8n
 * refuses to create, the item starts only if the source lists it again; these sources answer exactly
 * what the trigger asks (core/poll/paging.ts, "Items owed"). Each case: 100 items remembered, a burst
 * of BURST (six times Max Runs in Flight, at its default), then the disturbance, in a real n8n 2.41.1
 * at its default settings (crash recovery, pruning, Max Runs in Flight).
 */

const PAGE = 50;
/**
 * Runs that may start again per style and disturbance: none on n8n 2.x (deduplication keys); on n8n
 * 1.x, which has none, the run being emitted and the one before it (nodes/shared/emitRuns.ts).
 */
const MAX_REPEATS = isN8n1 ? 2 : 0;
/**
 * Past Max Runs in Flight's default (50) several times: a disturbance leaves runs unsent (issue 36).
 * Six times in `npm run test:full` (E2E_FULL), twice in CI, for its time (issue 46: three bursts of 300
 * per case were the suite's 737 s; the kill case's three bursts of 150 took 444 s at a load of 15). On n8n 1.x, where the trigger hands n8n one run at a time
 * (emitRuns.ts, emitOneByOne), 100: three bursts of 300 took longer there than the wait for the
 * kill's moment on a busy machine (npm test, 2026-12-03).
 */
const BURST = isN8n1 || !process.env.E2E_FULL ? 100 : 300;
/**
 * Queue mode: a run n8n reports it could not start may run all the same. n8n 2.41's main adds the
 * job to Redis and then runs its `workflowExecuteBefore` hooks; when its database pool fails there
 * (seen under load: "timeout exceeded when trying to connect"), it rejects the emit, and a worker
 * runs the queued job anyway (workflow-runner.js `enqueueExecution`, docs/queue-mode.md). The
 * trigger, told the run was not started, starts the item again: a repeat, never a loss. So in queue
 * mode the repeats a style may show are at most the runs its reports say n8n could not start.
 */
const REPORTED_MAY_REPEAT = process.env[TOPOLOGY_ENV] === 'queue';

/** A Link header to the next page of `list` (page `page`, 1-based), keeping the request's query. */
function pageOf(list: BurstItem[], request: RecordedRequest, url: string): ScriptedResponse {
	const page = Number(request.query.page ?? 1);
	const more = page * PAGE < list.length;
	const next = new URL(url);
	for (const [name, value] of Object.entries(request.query)) next.searchParams.set(name, value);
	next.searchParams.set('page', String(page + 1));
	return {
		body: list.slice((page - 1) * PAGE, page * PAGE),
		headers: more ? { link: `<${next.href}>; rel="next"` } : undefined,
	};
}

interface Style {
	/** The Poll Trigger's parameters beyond the harness's (op, interval, dedupe unique, ID id). */
	parameters: (url: string) => Record<string, unknown>;
	serve: (url: string) => BurstOptions['serve'];
	/** The item key a crashed run's deduplication key ends with, for an item. */
	keyOf: (item: BurstItem) => string;
}

const STYLES: Array<[string, Style]> = [
	[
		'updated_after={{ $lastPollStartedAt }}',
		{
			parameters: (url) => ({
				with: JSON.stringify({ url, query: { updated_after: '{{ $lastPollStartedAt }}' } }),
			}),
			serve: () => (listed, request) => {
				const after = Date.parse(request.query.updated_after ?? '');
				return { body: listed.filter((item) => item.updatedAt > after).reverse() };
			},
			keyOf: (item) => item.id,
		},
	],
	[
		'newest first, Link header pages, Stop at Known Ground',
		{
			parameters: () => ({ pagination: { pagination: { paginationMode: 'linkHeader' } } }),
			serve: (url) => (listed, request) => pageOf([...listed].reverse(), request, url),
			keyOf: (item) => item.id,
		},
	],
	[
		'oldest first, since={{ $cursor }} (Dedupe Greatest)',
		{
			parameters: (url) => ({
				with: JSON.stringify({ url, query: { since: '{{ $cursor }}' } }),
				dedupe: 'greatest',
				id: 'seq',
				pagination: { pagination: { paginationMode: 'linkHeader', listOrder: 'oldestFirst' } },
			}),
			serve: (url) => (listed, request) =>
				pageOf(
					listed.filter((item) => item.seq > Number(request.query.since ?? 0)),
					request,
					url,
				),
			keyOf: (item) => String(item.seq),
		},
	],
];

describe('never lose one from sources that list only what they are asked for (issue 36), in a real n8n', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;
	const hook = refusingHook('owed');
	let cases = 0;

	beforeAll(async () => {
		source = await FakeSystem.start();
		n8n = await N8nInstance.launch('owed-items', hook.env);
	});

	afterAll(async () => {
		await n8n?.stop();
		await source?.close();
	});

	/** A burst's workflow published over 100 remembered items, on its own path. */
	async function published(style: Style) {
		const path = `/owed${++cases}`;
		const url = source.url(path);
		const burst = await publishedBurst(n8n, source, {
			path,
			history: 100,
			poll: { parameters: style.parameters(url) },
			serve: style.serve(url),
		});
		const items: BurstItem[] = [];
		const add = (count: number) => {
			for (const id of burst.add(count)) {
				const n = Number(id.slice(id.lastIndexOf('-') + 1));
				items.push({ id, n, seq: 100 + n + 1, updatedAt: 0 });
			}
		};
		return { ...burst, path, style, items, add };
	}

	/**
	 * Every style's workflow, published one after the other (n8n 1.123 on SQLite can answer concurrent
	 * imports with "cannot start a transaction within a transaction"): their bursts then share n8n and
	 * each disturbance.
	 */
	async function publishedAll() {
		const all = [];
		for (const [name, style] of STYLES) all.push({ name, ...(await published(style)) });
		return all;
	}

	/**
	 * Lost: items with no successful run and no crashed run naming them by its deduplication key (a
	 * user finds it and starts it again: burstCrash.test.ts). Repeated: successful runs beyond an
	 * item's first, and runs of the history. Counted for each style, named in the result.
	 */
	async function counted(
		burst: Awaited<ReturnType<typeof publishedAll>>[number],
		crashedMayName = true,
	) {
		const ids = burst.items.map((item) => item.id);
		const runs = await burstRuns(n8n, burst.workflowId, ids.length);
		const named = new Set<string>();
		// On n8n 2.x a crashed run's key is the style's key of its item; on 1.x its output, the item.
		const byName = new Map(
			burst.items.map((item) => [isN8n1 ? item.id : burst.style.keyOf(item), item.id]),
		);
		for (const id of runs.crashed)
			for (const name of await crashedRunNames(n8n, id)) {
				const item = byName.get(name);
				if (item) named.add(item);
			}
		const { repeated } = lostAndRepeated(ids, runs);
		const lost = ids.filter((id) => !runs.succeeded.has(id) && !(crashedMayName && named.has(id)));
		const notStarted = REPORTED_MAY_REPEAT
			? reportedNotStarted(await n8n.executions(burst.workflowId))
			: 0;
		return { style: burst.name, lost, repeated, runs, named, notStarted };
	}

	/** The runs the trigger's reports say n8n could not start ("n8n could not start 12 runs for …"). */
	function reportedNotStarted(executions: Execution[]): number {
		return executions
			.map((e) =>
				/^n8n could not start (?:a run|(\d+) runs) for /.exec(
					e.data?.resultData.error?.message ?? '',
				),
			)
			.reduce((sum, match) => sum + (match ? Number(match[1] ?? 1) : 0), 0);
	}

	/**
	 * What every style must show, as [style, lost, runs repeated beyond MAX_REPEATS]: nothing lost,
	 * nothing repeated (on n8n 2.x, nothing repeated at all).
	 */
	const nothingLostOrRepeated = STYLES.map(([name]) => [name, [], 0]);
	const verdicts = (
		results: Array<{ style: string; lost: string[]; repeated: number; notStarted: number }>,
	) => results.map((r) => [r.style, r.lost, Math.max(0, r.repeated - MAX_REPEATS - r.notStarted)]);

	test(`each source (updated_after={{ $lastPollStartedAt }}, newest-first Link pages stopping at known ground, oldest first since={{ $cursor }}): a burst of ${BURST}, n8n killed (SIGKILL) at a random moment after the first runs, 20 more listed while it is down: lost 0, repeated 0`, async () => {
		const bursts = await publishedAll();
		for (const burst of bursts) burst.add(BURST);
		// Somewhere in the first 80 % of the three bursts' runs.
		const killAfter = 30 + Math.floor(Math.random() * (STYLES.length * BURST * 0.8 - 30));
		await reportsInAll(
			source,
			bursts.map(({ path }) => path),
			killAfter,
		);
		await n8n.kill();
		for (const burst of bursts) burst.add(20);
		await n8n.start();
		await n8n.login();
		const results = [];
		for (const burst of bursts) results.push(await counted(burst));
		for (const { style, runs, named, repeated, notStarted } of results)
			console.log(
				`${style}: killed after ${killAfter}+ reports in all: ${runs.succeeded.size} items ran, ${runs.crashed.length} runs crashed (${named.size} named by their keys), ${runs.failed.length} failed, ${repeated} repeated${REPORTED_MAY_REPEAT ? `, ${notStarted} reported not started` : ''}`,
			);
		expect(verdicts(results)).toEqual(nothingLostOrRepeated);
		for (const { workflowId } of bursts) await n8n.unpublish(workflowId);
	}, 1_200_000);

	test(`each source: a burst of ${BURST}, the workflows unpublished and published again after the first runs, 20 more listed meanwhile: lost 0, repeated 0`, async () => {
		const bursts = await publishedAll();
		for (const burst of bursts) burst.add(BURST);
		await reportsInAll(
			source,
			bursts.map(({ path }) => path),
			30 + Math.floor(Math.random() * BURST),
		);
		for (const { workflowId } of bursts) await n8n.unpublish(workflowId);
		for (const burst of bursts) burst.add(20);
		for (const { workflowId } of bursts) await n8n.publish(workflowId);
		const results = [];
		for (const burst of bursts) results.push(await counted(burst, false));
		expect(results.map((r) => [r.style, r.runs.crashed])).toEqual(
			STYLES.map(([name]) => [name, []]),
		);
		expect(verdicts(results)).toEqual(nothingLostOrRepeated);
		for (const { workflowId } of bursts) await n8n.unpublish(workflowId);
	}, 1_200_000);

	// n8n 1.x runs workflow.preExecute inside the execution it has created (its workflowExecuteBefore
	// hook): the refused run exists and fails, a run that happened, so there is nothing owed to test.
	const refusedRunTest = isN8n1 ? undefined : test;
	refusedRunTest?.(
		`each source: a run of a burst of ${BURST} that n8n refuses to create starts once at a later poll`,
		async () => {
			const bursts = await publishedAll();
			for (const burst of bursts) burst.add(BURST);
			await reportsInAll(
				source,
				bursts.map(({ path }) => path),
				BURST / 2,
			);
			for (const { workflowId } of bursts) hook.refuseNext(workflowId);
			const results = [];
			for (const burst of bursts) results.push(await counted(burst, false));
			expect(verdicts(results)).toEqual(nothingLostOrRepeated);
			await hook.expectReported(
				n8n,
				bursts.map((burst) => [burst.name, burst.workflowId]),
			);
			for (const { workflowId } of bursts) await n8n.unpublish(workflowId);
		},
		1_200_000,
	);

	test('newest first, Link header pages: Start Again of an item on page 3 starts it once, and nothing else again', async () => {
		const burst = await published(STYLES[1][1]);
		burst.add(150); // pages of 50, newest first: the first 50 added are on page 3
		const ids = burst.items.map((item) => item.id);
		const before = await burstRuns(n8n, burst.workflowId, ids.length);
		expect(lostAndRepeated(ids, before)).toEqual({ lost: 0, repeated: 0 });
		const again = burst.items[20].id;
		await burst.update({ startAgain: JSON.stringify([again]) });
		const runs = await n8n.waitForExecutions(
			burst.workflowId,
			(all) => all.filter(isFinal).length >= ids.length + 1,
			'the item started again',
			300_000,
		);
		// Polls after it: nothing more starts.
		await source.requestCount(burst.path, source.requests(burst.path).length + 2, 60_000);
		const ran = new Map<string, number>();
		for (const execution of (await n8n.executions(burst.workflowId)).filter(isFinal))
			for (const item of triggerItems(execution, 'Poll'))
				ran.set(String(item.id), (ran.get(String(item.id)) ?? 0) + 1);
		expect(runs.filter((e) => e.status !== 'success')).toEqual([]);
		const repeated = [...ran].filter(([, times]) => times > 1);
		expect(repeated).toContainEqual([again, 2]);
		// n8n 1.x: the saving of the workflow that carries Start Again stops the trigger, and the
		// burst's last run, whose settlement rides with the next write, may start again (emitRuns.ts).
		expect(repeated.length - 1).toBeLessThanOrEqual(MAX_REPEATS);
		expect(ran.size).toBe(ids.length);
		await n8n.unpublish(burst.workflowId);
	}, 1_200_000);

	test('newest first, Link header pages, Max Pages 2: Start Again of an item on page 4 starts it once, and nothing else again (issue 44)', async () => {
		const style: Style = {
			...STYLES[1][1],
			parameters: () => ({
				pagination: { pagination: { paginationMode: 'linkHeader', maxRequests: 2 } },
			}),
		};
		const burst = await published(style);
		burst.add(200); // pages of 50, newest first: the first 50 added are on page 4
		const ids = burst.items.map((item) => item.id);
		const before = await burstRuns(n8n, burst.workflowId, ids.length);
		expect(lostAndRepeated(ids, before)).toEqual({ lost: 0, repeated: 0 });
		const again = burst.items[20].id;
		const asked = source.requests(burst.path).length;
		await burst.update({ startAgain: JSON.stringify([again]) });
		const runs = await n8n.waitForExecutions(
			burst.workflowId,
			(all) => all.filter(isFinal).length >= ids.length + 1,
			'the item started again',
			300_000,
		);
		// Polls after it read page 1 only: nothing owed keeps them paging deep.
		await source.requestCount(burst.path, source.requests(burst.path).length + 3, 60_000);
		const pages = source.requests(burst.path).map((r) => r.query.page ?? '1');
		console.log(`pages asked since Start Again: ${pages.slice(asked).join(', ')}`);
		expect(pages.slice(-2)).toEqual(['1', '1']);
		const ran = new Map<string, number>();
		for (const execution of (await n8n.executions(burst.workflowId)).filter(isFinal))
			for (const item of triggerItems(execution, 'Poll'))
				ran.set(String(item.id), (ran.get(String(item.id)) ?? 0) + 1);
		expect(runs.filter((e) => e.status !== 'success')).toEqual([]);
		const repeated = [...ran].filter(([, times]) => times > 1);
		expect(repeated).toContainEqual([again, 2]);
		expect(repeated.length - 1).toBeLessThanOrEqual(MAX_REPEATS);
		expect(ran.size).toBe(ids.length);
		await n8n.unpublish(burst.workflowId);
	}, 1_200_000);

	test(`updated_after={{ $lastPollStartedAt }}: a burst of ${BURST}, n8n killed (SIGKILL) after the first runs, the source dropping 20 items n8n had not started before the restart: ONE failed execution names them, every other item ran once (issue 44)`, async () => {
		const dropped = new Set<string>();
		const base = STYLES[0][1];
		const style: Style = {
			...base,
			serve: (url) => {
				const serve = base.serve(url)!;
				return (listed, request) =>
					serve(
						listed.filter((item) => !dropped.has(item.id)),
						request,
					);
			},
		};
		const burst = await published(style);
		burst.add(BURST);
		await reportsInAll(source, [burst.path], 30);
		await n8n.kill();
		// The list is newest first, and so are the runs: the oldest 20 are the last handed to n8n, 50 at
		// most in flight, so no run of theirs existed at the kill.
		const gone = burst.items.slice(0, 20).map((item) => item.id);
		for (const id of gone) dropped.add(id);
		await n8n.start();
		await n8n.login();
		const rest = { name: 'updated_after', ...burst, items: burst.items.slice(20) };
		const result = await counted(rest);
		expect([result.lost, Math.max(0, result.repeated - MAX_REPEATS)]).toEqual([[], 0]);
		const message = 'listed once, never started, no longer listed: keys ';
		const reports = await waitFor(
			'the report of the items no longer listed',
			async () => {
				const found = (await n8n.executions(burst.workflowId))
					.map((e) => e.data?.resultData.error?.message ?? '')
					.filter((text) => text.includes(message));
				return found.length > 0 ? found : undefined;
			},
			{ timeoutMs: 120_000, intervalMs: 1_000 },
		);
		// Polls after it: no second report.
		await source.requestCount(burst.path, source.requests(burst.path).length + 2, 60_000);
		const all = (await n8n.executions(burst.workflowId))
			.map((e) => e.data?.resultData.error?.message ?? '')
			.filter((text) => text.includes(message));
		console.log(
			`killed after 30+ reports: ${result.runs.succeeded.size} items ran, ${result.runs.crashed.length} runs crashed; report: ${all[0]}`,
		);
		expect(all).toHaveLength(1);
		const named = /keys (.*?)\. A full pass/.exec(reports[0])?.[1].split(', ');
		expect(named?.sort()).toEqual([...gone].sort());
		await n8n.unpublish(burst.workflowId);
	}, 1_200_000);
});
