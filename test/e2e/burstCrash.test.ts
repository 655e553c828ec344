import { burstRuns, burstThroughKill, ranOnce } from '../harness/burstKill';
import { FakeSystem } from '../harness/fakeSystem';
import { N8nInstance, nodeOutput } from '../harness/n8nInstance';

/**
 * Issue 26's 1,000-item crash in a real n8n 2.41.1 (one process, SQLite, default crash recovery).
 * Its own suite and n8n, outside the default e2e run (`npm run test:burst`, docs/development.md):
 * 1,000 executions and a restart take minutes on CI's two cores.
 */
describe('a burst of 1,000 through a crash, in a real n8n', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;

	beforeAll(async () => {
		source = await FakeSystem.start();
		n8n = await N8nInstance.launch('burst-crash');
	});

	afterAll(async () => {
		await n8n?.stop();
		await source?.close();
	});

	interface RecentStart {
		deduplicationKey: string;
		itemKeys: string[];
		outcome: string;
	}

	/** Execute step on the Poll node, showing Recent Starts: the summary row (if any) and a row per start. */
	async function recentStarts(id: string): Promise<{ startAgain: string[]; rows: RecentStart[] }> {
		const output = nodeOutput(await n8n.executeStep(id, 'Poll'), 'Poll');
		if (!('endUnknown' in (output[0] ?? {})))
			return { startAgain: [], rows: output as unknown as RecentStart[] };
		const [first, ...rows] = output as Array<{ itemKeys: string }>;
		return {
			startAgain: JSON.parse(first.itemKeys) as string[],
			rows: rows as unknown as RecentStart[],
		};
	}

	test('1,000 new items over 10,000 remembered, n8n killed mid-burst: each crashed run names its item, the Start Again list holds exactly the crashed runs whose item did not run again, Start Again runs each once, nothing is lost or repeated', async () => {
		const started = Date.now();
		const burst = await burstThroughKill(n8n, source, {
			path: '/burst-1k',
			history: 10_000,
			burst: 1_000,
			killAfter: 100,
			// Every fourth run is held going, so the kill crashes it.
			holdEvery: 4,
		});
		const { workflowId: id, items } = burst;
		const before = await burstRuns(n8n, id, items.length);
		console.log(
			`1,000-item burst killed after 100 reports: ${before.crashed.length} runs crashed, ${before.succeeded.size} items ran, ${before.failed.length} failed executions (${Math.round((Date.now() - started) / 1000)} s)`,
		);
		expect(before.crashed.length).toBeGreaterThan(0);

		// As a user finds a crashed run's items: its deduplication key (n8n's API returns it with a
		// single execution) names its item; Recent Starts' Start Again list has it unless the trigger
		// took its item back (n8n reported it could not create the run), and then it ran again.
		await burst.update({ executeStepShows: 'recentStarts' });
		const { startAgain, rows } = await recentStarts(id);
		const toStartAgain: string[] = [];
		const untraceable: string[] = [];
		for (const execution of before.crashed) {
			const key = String((await n8n.execution(execution)).deduplicationKey);
			const item = /:([^:#]+)(#\d+)?$/.exec(key)?.[1];
			const row = rows.find((r) => r.deduplicationKey === key);
			if (item === undefined) untraceable.push(key);
			else if (startAgain.includes(item)) toStartAgain.push(item);
			else if (!before.succeeded.has(item) || (row && row.outcome !== 'not run: rolled back'))
				untraceable.push(`${key} (${row?.outcome ?? 'no row'})`);
		}
		expect(untraceable).toEqual([]);
		// Every other item ran, once.
		expect(ranOnce(before)).toEqual(items.filter((item) => !toStartAgain.includes(item)).sort());

		// Start Again: the crashed runs' items pasted into Options → Start Again (500 at a time).
		for (let i = 0; i < toStartAgain.length; i += 500)
			await burst.update({ startAgain: JSON.stringify(toStartAgain.slice(i, i + 500)) });
		const after = await burstRuns(n8n, id, items.length + before.crashed.length);
		expect(ranOnce(after)).toEqual([...items].sort());
		expect(after.succeeded.size).toBe(items.length);
		// At most one report of runs n8n could not start, for the restart's re-emit.
		expect(after.failed.length).toBeLessThanOrEqual(1);
		for (const execution of after.failed)
			expect((await n8n.execution(execution)).data?.resultData.error?.message).toMatch(
				/could not start/,
			);
		await n8n.unpublish(id);
		console.log(`1,000-item burst case: ${Math.round((Date.now() - started) / 1000)} s`);
	}, 2_400_000);
});
