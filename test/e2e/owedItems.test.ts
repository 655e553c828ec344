import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import {
	type BurstItem,
	type BurstOptions,
	burstRuns,
	lostAndRepeated,
	publishedBurst,
} from '../harness/burstKill';
import { triggerItems } from '../harness/chaos';
import { FakeSystem, type RecordedRequest, type ScriptedResponse } from '../harness/fakeSystem';
import { isFinal, N8nInstance } from '../harness/n8nInstance';
import { instancesDir } from '../harness/paths';

/**
 * Issue 36: never lose one from a source that lists only what it is asked for. A one-item run is
 * stored without its item (core/poll/runStage.ts), so after a kill -9, a re-publish or a run n8n
 * refuses to create, the item starts only if the source lists it again; these sources answer exactly
 * what the trigger asks (core/poll/paging.ts, "Items owed"). Each case: 100 items remembered, a burst
 * of 300 (six times Max Runs in Flight, at its default), then the disturbance, in a real n8n 2.41.1
 * at its default settings (crash recovery, pruning, Max Runs in Flight).
 */

const PAGE = 50;

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
	/** While this file exists, n8n's workflow.preExecute hook refuses one execution (and removes the file). */
	const refuseFlag = join(instancesDir, `owed-refuse-next-${process.pid}`);
	let cases = 0;

	beforeAll(async () => {
		mkdirSync(instancesDir, { recursive: true });
		const hooks = join(instancesDir, `owed-hooks-${process.pid}.js`);
		writeFileSync(
			hooks,
			`const fs = require('node:fs');
module.exports = { workflow: { preExecute: [async function () {
	try { fs.unlinkSync(${JSON.stringify(refuseFlag)}); } catch { return; }
	throw new Error('refused by the test hook');
}] } };`,
		);
		source = await FakeSystem.start();
		n8n = await N8nInstance.launch('owed-items', { EXTERNAL_HOOK_FILES: hooks });
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
		return { ...burst, path, items, add };
	}

	/**
	 * Lost: items with no successful run and no crashed run naming them by its deduplication key (a
	 * user finds it and starts it again: burstCrash.test.ts). Repeated: successful runs beyond an
	 * item's first, and runs of the history.
	 */
	async function counted(
		burst: Awaited<ReturnType<typeof published>>,
		style: Style,
		crashedMayName = true,
	) {
		const ids = burst.items.map((item) => item.id);
		const runs = await burstRuns(n8n, burst.workflowId, ids.length);
		const named = new Set<string>();
		for (const execution of runs.crashed) {
			const key = String((await n8n.execution(execution)).deduplicationKey);
			const item = burst.items.find((candidate) => key.endsWith(`:${style.keyOf(candidate)}`));
			if (item) named.add(item.id);
		}
		const { repeated } = lostAndRepeated(ids, runs);
		const lost = ids.filter((id) => !runs.succeeded.has(id) && !(crashedMayName && named.has(id)));
		return { lost, repeated, runs, named };
	}

	test.each(STYLES)(
		'%s: a burst of 300, n8n killed (SIGKILL) at a random moment after the first runs, 20 more listed while it is down: lost 0, repeated 0',
		async (_, style) => {
			const burst = await published(style);
			burst.add(300);
			const killAfter = 10 + Math.floor(Math.random() * 240);
			const reported = await burst.kill(killAfter);
			burst.add(20);
			await n8n.start();
			await n8n.login();
			const { lost, repeated, runs, named } = await counted(burst, style);
			console.log(
				`${burst.path} killed after ${reported} reports: ${runs.succeeded.size} items ran, ${runs.crashed.length} runs crashed (${named.size} named by their keys), ${runs.failed.length} failed`,
			);
			expect(lost).toEqual([]);
			expect(repeated).toBe(0);
			await n8n.unpublish(burst.workflowId);
		},
		1_200_000,
	);

	test.each(STYLES)(
		'%s: a burst of 300, the workflow unpublished and published again after the first runs, 20 more listed meanwhile: lost 0, repeated 0',
		async (_, style) => {
			const burst = await published(style);
			burst.add(300);
			await source.requestCount(`${burst.path}/ran`, 10 + Math.floor(Math.random() * 100), 300_000);
			await n8n.unpublish(burst.workflowId);
			burst.add(20);
			await n8n.publish(burst.workflowId);
			const { lost, repeated, runs } = await counted(burst, style, false);
			expect(runs.crashed).toEqual([]);
			expect(lost).toEqual([]);
			expect(repeated).toBe(0);
			await n8n.unpublish(burst.workflowId);
		},
		1_200_000,
	);

	test.each(STYLES)(
		'%s: a run of a burst of 300 that n8n refuses to create starts once at a later poll',
		async (_, style) => {
			const burst = await published(style);
			burst.add(300);
			await source.requestCount(`${burst.path}/ran`, 60, 300_000);
			writeFileSync(refuseFlag, '');
			const { lost, repeated, runs } = await counted(burst, style, false);
			expect(lost).toEqual([]);
			expect(repeated).toBe(0);
			// The refused run is reported, as a failed execution naming n8n's refusal.
			expect(runs.failed).toHaveLength(1);
			const error = (await n8n.execution(runs.failed[0])).data?.resultData.error?.message;
			expect(error).toMatch(/refused by the test hook/);
			await n8n.unpublish(burst.workflowId);
		},
		1_200_000,
	);

	test('newest first, Link header pages: Start Again of an item on page 3 starts it once, and nothing else again', async () => {
		const style = STYLES[1][1];
		const burst = await published(style);
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
		expect([...ran].filter(([, times]) => times > 1)).toEqual([[again, 2]]);
		expect(ran.size).toBe(ids.length);
		await n8n.unpublish(burst.workflowId);
	}, 1_200_000);
});
