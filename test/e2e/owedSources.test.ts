import { burstRuns, lostAndRepeated, publishedBurst } from '../harness/burstKill';
import { type ChaosSource, triggerItems } from '../harness/chaos';
import { FakeSystem } from '../harness/fakeSystem';
import { N8nInstance } from '../harness/n8nInstance';
import { isN8n1 } from '../harness/paths';
import { sftpSource, sqlSource } from '../harness/sourceChaos';
import { SqlServers } from '../harness/sqlServers';
import { Sshd } from '../harness/sshd';

/**
 * Issue 36, as test/e2e/owedItems.test.ts for HTTP sources: the same kill through the sources that
 * hold their items themselves: `sql.query` keyset pages of 20 (lag 10 s) over a table of PostgreSQL
 * 15 and of MariaDB, and `sftp.list` over an sshd folder
 * (`unchangedForSec` 5, the interval; half the new files old enough to count as finished at once),
 * built as for the chaos run (test/harness/sourceChaos.ts). Each row or file is named by its item's
 * id, which the trigger's ID reads. After the crash the op's memory (the keyset, the files seen) is
 * forgotten with the restaged runs (core/poll/activation.ts); the rows and files are listed again.
 */
/**
 * Runs that may start again after the kill: none on n8n 2.x (deduplication keys); on n8n 1.x, which
 * has none, the run being emitted and the one before it (nodes/shared/emitRuns.ts, emitOneByOne).
 */
const MAX_REPEATS = isN8n1 ? 2 : 0;

describe('never lose one from sql.query and sftp.list (issue 36), n8n killed mid-burst', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;
	let servers: SqlServers;
	let sshd: Sshd;

	beforeAll(async () => {
		[source, servers, sshd, n8n] = await Promise.all([
			FakeSystem.start(),
			SqlServers.start(),
			Sshd.start(),
			N8nInstance.launch('owed-sources'),
		]);
	}, 300_000);

	afterAll(async () => {
		await n8n?.stop();
		await source?.close();
		await servers?.stop();
		await sshd?.stop();
	});

	const SOURCES: Array<
		[
			string,
			{ make: () => Promise<ChaosSource>; identity?: (item: Record<string, unknown>) => string },
		]
	> = [
		['sql.query on PostgreSQL', { make: () => sqlSource(n8n, servers, 'owed_pg', 'postgres') }],
		['sql.query on MariaDB', { make: () => sqlSource(n8n, servers, 'owed_maria', 'mariadb') }],
		[
			'sftp.list',
			{ make: () => sftpSource(n8n, sshd, 'owed'), identity: (item) => String(item.name) },
		],
	];

	test.each(SOURCES)(
		'%s: 100 remembered, a burst of 300, n8n killed (SIGKILL) once a random number of runs reported, 20 more added while it is down: lost 0, repeated 0 (n8n 1.x: at most 2)',
		async (name, { make, identity }) => {
			const started = Date.now();
			const real = await make();
			const path = `/${name.split(' ').at(-1)!.toLowerCase().replace('.', '')}`;
			const burst = await publishedBurst(n8n, source, {
				path,
				history: 100,
				poll: { parameters: real.parameters, credentials: real.credentials },
				hold: (listed, round) =>
					real.hold(
						listed.map((item) => ({ ...item })),
						round,
					),
			});
			const ids = burst.add(300);
			await burst.held();
			const killAfter = 10 + Math.floor(Math.random() * 240);
			const reported = await burst.kill(killAfter);
			ids.push(...burst.add(20));
			await burst.held();
			await n8n.start();
			await n8n.login();
			const runs = await burstRuns(n8n, burst.workflowId, ids.length, 420_000, identity);
			// A crashed run counts when it names its item (a user finds it and starts it again:
			// burstCrash.test.ts): by its deduplication key, on n8n 1.x (no keys) by its trigger output.
			const named = new Set<string>();
			for (const id of runs.crashed) {
				const execution = await n8n.execution(id);
				const items = isN8n1
					? triggerItems(execution, 'Poll').map(identity ?? ((item) => String(item.id)))
					: [/:([^:#]+)(#\d+)?$/.exec(String(execution.deduplicationKey))?.[1]];
				for (const item of items) if (item !== undefined && ids.includes(item)) named.add(item);
			}
			const { repeated } = lostAndRepeated(ids, runs);
			const lost = ids.filter((id) => !runs.succeeded.has(id) && !named.has(id));
			console.log(
				`${name}: killed after ${reported} reports (aimed at ${killAfter}): ${runs.succeeded.size} items ran, ${runs.crashed.length} runs crashed (${named.size} named by their keys), ${runs.failed.length} failed; lost ${lost.length}, repeated ${repeated} (${Math.round((Date.now() - started) / 1000)} s)`,
			);
			expect(lost).toEqual([]);
			expect(repeated).toBeLessThanOrEqual(MAX_REPEATS);
			await n8n.unpublish(burst.workflowId);
		},
		1_200_000,
	);
});
