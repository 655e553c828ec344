/**
 * One poll of s3.list over a big prefix, beside the n8n-only way, in one run (issue 40): an
 * S3-compatible store (@20minutes/s3rver, started by the test harness, test/harness/s3rver.ts), a
 * prefix `big/` of 100,000 objects in a date-prefixed layout (`big/2026-MM-DD/NNNNNN.csv`, 1,000 a
 * day): 99,900 old ones written straight into the store's layout, then 100 new ones after them. The
 * prefix holds 100,000 so that the op can list it whole: "maxObjects" goes up to 100,000.
 *
 * 1. s3.list with afterLastKey, from the position a previous poll left (the last old key): one
 *    poll reading the 100 new objects with ListObjectsV2's start-after.
 * 2. s3.list without afterLastKey, "maxObjects" 100,000: the whole prefix, every page.
 *    For each: the poll's time, its ListObjectsV2 requests (counted by the store), the objects it
 *    listed. Median of BENCH_S3_REPEATS (3) polls after one warm-up (the warm-up also lets s3rver
 *    write each object's ETag file, which it does at an object's first listing).
 * 3. Unless BENCH_S3_N8N=0, the n8n-only way in a real n8n 2.41.1 (SQLite, n8n's default settings
 *    and log level, n8n's own nodes): Schedule Trigger → S3 node (credential `s3`, path-style)
 *    "Bucket → Search" with Return All and Prefix `big/` → Remove Duplicates "Remove Items Processed in
 *    Previous Executions" on the key. Not "File → Get Many" with Folder Key `big/`: that operation
 *    always sends delimiter "/" (S3.node.js), so it lists the day folders as common prefixes and not one
 *    object under them. Remove Duplicates refuses a run whose remembered + input items exceed its
 *    History Size (default 10,000; RemoveDuplicatesV2.node.js), so the workflow has one large enough
 *    (200,000). A first run over the old objects remembers them; after the 100 new objects a second
 *    run is measured: its duration (startedAt → stoppedAt), its ListObjectsV2 requests, the items the
 *    S3 node gave and those Remove Duplicates kept, n8n's peak RSS.
 *
 * s3rver lists ~3,000 objects/s from tmpfs, walking folders with a stat per entry: its times are not
 * AWS's; the request and object counts are what a poll costs anywhere.
 * Figures and ratios against the n8n-only way measured in the same run; no thresholds.
 *   npm run build && npx tsx bench/s3Poll.bench.ts
 */
import { resolveOp } from '../core/connectors/registry';
import { listArgs, positionMemory } from '../core/connectors/s3Objects';
import { node, workflow } from '../test/e2e/workflowBuilder';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance, nodeOutput } from '../test/harness/n8nInstance';
import { n8nVersion } from '../test/harness/paths';
import { S3rver } from '../test/harness/s3rver';
import { fetchTransport } from '../test/support/fetchTransport';
import {
	printTable,
	runDurationMs,
	runScheduledOnce,
	scheduleTriggerNode,
	type ScheduledRun,
} from './n8nOnly';
import { percentile } from './stats';

const PREFIX = 'big/';
const OBJECTS = 100_000;
const NEW_OBJECTS = 100;
const REPEATS = Number(process.env.BENCH_S3_REPEATS ?? 3);
const WITH_N8N = process.env.BENCH_S3_N8N !== '0';
/** The old objects remembered, plus one more run of every object (Remove Duplicates checks stored + input). */
const HISTORY_SIZE = 200_000;
/** One n8n run over the whole prefix: generous on a busy 2-core machine. */
const RUN_TIMEOUT_MS = 15 * 60_000;

interface Measured {
	ms: number;
	requests: number;
	objects: number;
}

/** Median of each figure over `repeats` measurements, after one warm-up. */
async function median(repeats: number, measure: () => Promise<Measured>): Promise<Measured> {
	await measure();
	const all: Measured[] = [];
	for (let i = 0; i < repeats; i++) all.push(await measure());
	const mid = (pick: (m: Measured) => number) => percentile(all.map(pick), 50);
	return { ms: mid((m) => m.ms), requests: mid((m) => m.requests), objects: mid((m) => m.objects) };
}

interface N8nOnly {
	seed: string;
	run: ScheduledRun;
	requests: number;
	listed: number;
	kept: number;
}

async function main(): Promise<void> {
	ensureN8nInstalled();
	const [store, n8n] = await Promise.all([
		S3rver.start(),
		WITH_N8N
			? Promise.resolve().then(() => {
					packAndPrepareNodesFolder();
					// n8n's default log level (the harness logs debug).
					return N8nInstance.launch('bench-s3', { N8N_LOG_LEVEL: 'info' });
				})
			: undefined,
	]);
	try {
		const started = Date.now();
		const old = await store.fill(PREFIX, OBJECTS - NEW_OBJECTS);
		process.stdout.write(
			`${PREFIX}: ${old.length.toLocaleString('en')} objects written in ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
		);
		const n8nOnly = n8n ? await runN8nOnly(n8n, store) : undefined;
		if (!n8nOnly) await store.fill(PREFIX, NEW_OBJECTS);

		const poll = async (args: Record<string, unknown>, expected: number): Promise<Measured> => {
			const before = store.listings().length;
			const from = performance.now();
			const result = await resolveOp('s3.list').run(
				{ bucket: store.bucket, prefix: PREFIX, ...args },
				{
					memory: positionMemory(
						listArgs({ bucket: store.bucket, prefix: PREFIX }),
						old.at(-1) as string,
					),
					http: fetchTransport,
					s3: store.connection(),
					timeoutMs: 600_000,
				},
			);
			const ms = performance.now() - from;
			if (result.kind !== 'data') throw new Error(`s3.list answered ${result.kind}`);
			const objects = (result.data as { files: unknown[] }).files.length;
			if (objects !== expected) throw new Error(`the poll listed ${objects}, not ${expected}`);
			return { ms, requests: store.listings().length - before, objects };
		};
		const afterLastKey = await median(REPEATS, () => poll({ afterLastKey: true }, NEW_OBJECTS));
		const whole = await median(REPEATS, () => poll({ maxObjects: OBJECTS }, OBJECTS));

		const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(0)}x` : '-');
		const line = (label: string, m: Measured, kept: string) => [
			label,
			`${m.ms.toFixed(m.ms < 100 ? 1 : 0)} ms`,
			String(m.requests),
			m.objects.toLocaleString('en'),
			kept,
			ratio(m.ms, afterLastKey.ms),
			ratio(m.objects, afterLastKey.objects),
		];
		const rows = [
			[
				`one poll, ${PREFIX} of ${OBJECTS.toLocaleString('en')} objects, ${NEW_OBJECTS} new`,
				'time',
				'requests',
				'objects listed',
				'items out',
				'/ row 1 (time)',
				'(objects)',
			],
			line('1. s3.list, afterLastKey (start-after)', afterLastKey, String(NEW_OBJECTS)),
			line('2. s3.list, whole prefix', whole, `${OBJECTS.toLocaleString('en')} to dedupe`),
		];
		if (n8nOnly)
			rows.push(
				line(
					`3. n8n ${n8nVersion}: S3 Search → Remove Duplicates`,
					{
						ms: runDurationMs(n8nOnly.run.execution),
						requests: n8nOnly.requests,
						objects: n8nOnly.listed,
					},
					n8nOnly.kept.toLocaleString('en'),
				),
			);
		process.stdout.write('\n');
		printTable(rows);
		if (n8nOnly)
			process.stdout.write(
				`\nThe n8n-only workflow (History Size ${HISTORY_SIZE.toLocaleString('en')}):\n` +
					`  first run over the ${old.length.toLocaleString('en')} old objects: ${n8nOnly.seed}\n` +
					`  the measured run after ${NEW_OBJECTS} new: ${describe(n8nOnly.run)}\n`,
			);
		else process.stdout.write('\n(row 3, the n8n-only workflow, skipped: BENCH_S3_N8N=0)\n');
	} finally {
		await n8n?.stop();
		await store.stop();
	}
}

const describe = (run: ScheduledRun) =>
	`${run.execution.status} in ${(runDurationMs(run.execution) / 1000).toFixed(1)} s, n8n peak RSS ${(run.peakRssBytes / 1e6).toFixed(0)} MB`;

/** The n8n-only workflow: a first run remembering the old objects, then, after the new ones, the measured run. */
async function runN8nOnly(n8n: N8nInstance, store: S3rver): Promise<N8nOnly> {
	const credentialName = 'bench s3rver';
	const credentialId = await n8n.createCredential(credentialName, 's3', store.credential());
	const id = await n8n.importWorkflow(
		workflow(
			'n8n-only',
			[
				scheduleTriggerNode(),
				node(
					'S3',
					'n8n-nodes-base.s3',
					{
						resource: 'bucket',
						operation: 'search',
						bucketName: store.bucket,
						returnAll: true,
						additionalFields: { prefix: PREFIX },
					},
					{
						typeVersion: 1,
						credentials: { s3: { id: credentialId, name: credentialName } },
					},
				),
				node(
					'Remove Duplicates',
					'n8n-nodes-base.removeDuplicates',
					{
						operation: 'removeItemsSeenInPreviousExecutions',
						dedupeValue: '={{ $json.Key }}',
						options: { historySize: HISTORY_SIZE },
					},
					{ typeVersion: 2 },
				),
			],
			[
				['Schedule Trigger', 'S3'],
				['S3', 'Remove Duplicates'],
			],
		),
	);
	const runOnce = async () => {
		const before = store.listings().length;
		const run = await runScheduledOnce(n8n, id, RUN_TIMEOUT_MS);
		if (run.execution.status !== 'success')
			throw new Error(`the n8n-only run ended ${run.execution.status}: ${describe(run)}`);
		const [execution] = (await n8n.executions(id)).filter((e) => e.id === run.execution.id);
		return {
			run,
			requests: store.listings().length - before,
			listed: nodeOutput(execution, 'S3').length,
			kept: nodeOutput(execution, 'Remove Duplicates').length,
		};
	};
	const seed = await runOnce();
	await store.fill(PREFIX, NEW_OBJECTS);
	const measured = await runOnce();
	return {
		seed: `${describe(seed.run)}, ${seed.requests} requests, ${seed.listed.toLocaleString('en')} listed, ${seed.kept.toLocaleString('en')} kept`,
		...measured,
	};
}

void main().catch((error: unknown) => {
	process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
	process.exitCode = 1;
});
