import { resolveOp } from '../../core/connectors/registry';
import type { S3File } from '../../core/connectors/s3Objects';
import type { OpMemory, S3Connection } from '../../core/connectors/types';
import { fetchTransport } from '../support/fetchTransport';
import { type Execution, isFinal, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { S3rver, type S3rverRequest } from '../harness/s3rver';
import { node, PACKAGE, workflow } from './workflowBuilder';

type Credential = { id: string; name: string };
type Listing = {
	files: S3File[];
	requests: number;
	truncated: boolean;
	nextStartAfter: string | null;
};

/**
 * The S3 ops against a real S3-compatible store that checks SigV4 (@20minutes/s3rver,
 * test/harness/s3rver.ts), and in a real n8n: a burst of 1,000 objects under the Poll Trigger, each
 * moved to processed/ by the Connector; a rewritten object under Changed; a prefix of 100,000 objects
 * polled with afterLastKey, one listing request a poll.
 */
describe('S3 source', () => {
	let store: S3rver;
	let n8n: N8nInstance;
	let credential: Credential;
	/** The keys of a prefix of 100,000 objects, date-prefixed (test/harness/s3rver.ts `fill`). */
	let bigPrefix: string[];

	beforeAll(async () => {
		// The 100,000 objects of the afterLastKey case are written while n8n starts.
		[store, n8n] = await Promise.all([
			S3rver.start().then(async (started) => {
				bigPrefix = await started.fill('big/', 100_000);
				return started;
			}),
			N8nInstance.launch('s3'),
		]);
		const name = 'S3 test store';
		const id = await n8n.createCredential(name, 's3', store.credential());
		credential = { id, name };
	}, 180_000);

	afterAll(async () => {
		await n8n?.stop();
		await store?.stop();
	});

	async function call(
		op: string,
		args: Record<string, unknown>,
		{ memory = {}, s3 = store.connection() }: { memory?: OpMemory; s3?: S3Connection } = {},
	) {
		const result = await resolveOp(op).run(
			{ bucket: store.bucket, ...args },
			{ memory, http: fetchTransport, s3, timeoutMs: 30_000 },
		);
		if (result.kind !== 'data') throw new Error(`${op} answered ${result.kind}`);
		return result;
	}

	const list = async (args: Record<string, unknown>, memory?: OpMemory) =>
		(await call('s3.list', args, { memory })).data as Listing;

	/** The ListObjectsV2 requests under `prefix` received so far. */
	const listingsOf = (prefix: string): S3rverRequest[] =>
		store.listings().filter((request) => request.query.prefix === prefix);

	/** Resolves once the store has received `count` more listings under `prefix`: a poll lists once. */
	async function polls(prefix: string, count: number): Promise<void> {
		const target = listingsOf(prefix).length + count;
		await waitFor(
			`${count} more listings of "${prefix}"`,
			async () => (listingsOf(prefix).length >= target ? true : undefined),
			{ timeoutMs: 60_000, intervalMs: 100 },
		);
	}

	/** A Poll Trigger on s3.list every 5 s, each object by key and ETag, once. */
	function pollNode(with_: Record<string, unknown>, parameters: Record<string, unknown> = {}) {
		return node(
			'Poll',
			`${PACKAGE}.pollTrigger`,
			{
				op: 's3.list',
				with: JSON.stringify({ bucket: store.bucket, ...with_ }),
				items: 'files',
				id: 'path & "@" & version',
				dedupe: 'unique',
				interval: 5,
				intervalUnit: 'seconds',
				...parameters,
			},
			{ typeVersion: 1.1, credentials: { s3: credential } },
		);
	}

	/** Resolves once a poll has listed `big/` after `key`: the trigger's position reached it. */
	async function listedAfter(key: string): Promise<void> {
		await waitFor(
			`a listing of "big/" after ${key}`,
			async () =>
				listingsOf('big/').some((request) => request.query['start-after'] === key)
					? true
					: undefined,
			{ timeoutMs: 60_000, intervalMs: 200 },
		);
	}

	/** The workflow's runs, without their data, once `count` have ended. */
	async function runsEnded(workflowId: string, count: number): Promise<Execution[]> {
		return await waitFor(
			`${count} runs of workflow ${workflowId} to end`,
			async () => {
				const ended = (await n8n.executionSummaries(workflowId)).filter(isFinal);
				return ended.length >= count ? ended : undefined;
			},
			{ timeoutMs: 600_000, intervalMs: 2_000 },
		);
	}

	describe('ops against s3rver', () => {
		it('s3.list: every page in key order, after start-after, by pattern', async () => {
			const keys = await store.fill('pages/', 2_500);
			const all = await list({ prefix: 'pages/' });
			expect(all.requests).toBe(3);
			expect(all.files.map((file) => file.path)).toEqual(keys);
			expect(all.files[0]).toEqual(
				expect.objectContaining({
					path: keys[0],
					name: '000000.csv',
					size: keys[0].length + 1,
					version: expect.stringMatching(/^[0-9a-f]{32}$/),
					storageClass: 'STANDARD',
				}),
			);

			const after = await list({ prefix: 'pages/', startAfter: 'pages/2026-01-02/' });
			expect(after.requests).toBe(2);
			expect(after.files.map((file) => file.path)).toEqual(keys.slice(1_000));

			const fives = await list({ prefix: 'pages/', pattern: '*5.csv' });
			expect(fives.files).toHaveLength(250);
			expect(fives.files.every((file) => file.name.endsWith('5.csv'))).toBe(true);

			await expect(list({ prefix: 'pages/', maxObjects: 2_000 })).rejects.toThrow(
				'has more than "maxObjects" (2000) objects: set "afterLastKey"',
			);
		});

		it('s3.download, s3.move, s3.delete on keys with spaces and brackets; objects already gone are reported', async () => {
			const bytes = Buffer.from([0, 1, 2, 127, 128, 255]);
			await store.put('ops/in/a (1).bin', bytes);
			await store.put('ops/in/b c.csv', 'bb');
			const got = await call('s3.download', { key: 'ops/in/a (1).bin' });
			expect(got.file?.fileName).toBe('a (1).bin');
			expect(got.file?.data.equals(bytes)).toBe(true);
			await expect(call('s3.download', { key: 'ops/in/b c.csv', maxBytes: 1 })).rejects.toThrow(
				`S3 object "ops/in/b c.csv" in bucket "${store.bucket}" is 2 bytes, over the download limit "maxBytes" of 1`,
			);

			const paths = ['ops/in/a (1).bin', 'ops/in/b c.csv'];
			const moved = await call('s3.move', { path: paths, toPrefix: 'ops/processed/' });
			expect(moved.data).toMatchObject({
				moved: [
					{ from: paths[0], to: 'ops/processed/a (1).bin' },
					{ from: paths[1], to: 'ops/processed/b c.csv' },
				],
				missing: [],
			});
			expect(
				(await call('s3.move', { path: paths[0], toPrefix: 'ops/processed/' })).data,
			).toMatchObject({
				moved: [],
				missing: [paths[0]],
			});
			expect((await list({ prefix: 'ops/' })).files.map((file) => file.path)).toEqual([
				'ops/processed/a (1).bin',
				'ops/processed/b c.csv',
			]);
			const deleted = await call('s3.delete', {
				path: ['ops/processed/a (1).bin', 'ops/in/a (1).bin'],
			});
			expect(deleted.data).toMatchObject({
				deleted: ['ops/processed/a (1).bin'],
				missing: ['ops/in/a (1).bin'],
			});
		});

		it("a wrong secret and a missing bucket fail in S3's words, naming the bucket", async () => {
			await expect(
				call('s3.list', {}, { s3: store.connection({ secretAccessKey: 'wrong' }) }),
			).rejects.toThrow(
				`S3 ListObjectsV2 of bucket "${store.bucket}" answered HTTP 403 SignatureDoesNotMatch: The request signature we calculated does not match`,
			);
			await expect(call('s3.list', { bucket: 'nowhere' })).rejects.toThrow(
				'S3 ListObjectsV2 of bucket "nowhere" answered HTTP 404 NoSuchBucket',
			);
		});
	});

	describe('in a real n8n', () => {
		test('a burst of 1,000 objects starts 1,000 runs, each once, each moving its object to processed/; beside it, under Changed, a rewritten object starts again', async () => {
			const burst = n8n.importWorkflow(
				workflow(
					's3 burst',
					[
						pollNode({ prefix: 'burst/' }),
						node(
							'Move',
							`${PACKAGE}.connector`,
							{
								op: 's3.move',
								with: `={{ JSON.stringify({ bucket: "${store.bucket}", path: $json.path, toPrefix: "processed/" }) }}`,
							},
							{ typeVersion: 1.1, credentials: { s3: credential } },
						),
					],
					[['Poll', 'Move']],
				),
			);
			const changed = n8n.importWorkflow(
				workflow(
					's3 changed',
					[pollNode({ prefix: 'changed/' }, { dedupe: 'changed', id: 'path', version: 'version' })],
					[],
				),
			);
			const [burstId, changedId] = [await burst, await changed];
			await store.put('changed/stock.csv', 'v1');
			await Promise.all([n8n.publish(burstId), n8n.publish(changedId)]);
			await polls('burst/', 1);
			const keys = await store.fill('burst/', 1_000, { movable: true });

			await runsEnded(changedId, 1);
			await store.put('changed/stock.csv', 'version 2');
			const changes = await n8n.waitForFinishedExecutions(changedId, 2);
			expect(changes.map((run) => [run.status, nodeOutput(run, 'Poll')[0]?.size])).toEqual([
				['success', 2],
				['success', 9],
			]);

			const runs = await runsEnded(burstId, keys.length);
			expect(runs.filter((run) => run.status !== 'success')).toEqual([]);
			// Each object was copied to processed/ once: no run moved another's, none ran twice.
			const copies = store.requests
				.filter(
					(request) =>
						request.method === 'PUT' && request.path.startsWith(`/${store.bucket}/processed/`),
				)
				.map((request) => request.path);
			expect(copies.sort()).toEqual(
				keys.map((key) => `/${store.bucket}/processed/${key.split('/').at(-1)}`).sort(),
			);
			expect((await list({ prefix: 'burst/' })).files).toEqual([]);
			expect((await list({ prefix: 'processed/' })).files).toHaveLength(keys.length);
			// Two more polls of each: nothing else starts.
			await Promise.all([polls('burst/', 2), polls('changed/', 2)]);
			expect(await n8n.executionSummaries(burstId)).toHaveLength(keys.length);
			expect(await n8n.executionSummaries(changedId)).toHaveLength(2);
			await Promise.all([n8n.unpublish(burstId), n8n.unpublish(changedId)]);
		}, 900_000);

		test('afterLastKey over a prefix of 100,000 objects: 100 new ones start once, each poll one listing request after the last key', async () => {
			const old = bigPrefix;
			const lastDay = old.at(-1)!.replace(/[^/]*$/, '');
			const id = await n8n.importWorkflow(
				workflow(
					's3 after last key',
					[
						pollNode(
							{ prefix: 'big/', afterLastKey: true, startAfter: lastDay, lagSeconds: 2 },
							{ options: { firstPoll: 'none' } },
						),
					],
					[],
				),
			);
			await n8n.publish(id);
			// The first poll remembers the last day's 1,000 objects, starting none; once they are older
			// than the lag, the position is past them.
			await listedAfter(old.at(-1)!);
			const fresh = await store.fill('big/', 100);
			expect(fresh[0] > old.at(-1)!).toBe(true);
			const runs = await runsEnded(id, fresh.length);
			expect(runs.filter((run) => run.status !== 'success')).toEqual([]);
			// The position moves past the new objects once they are older than the lag.
			await listedAfter(fresh.at(-1)!);
			await polls('big/', 1);
			await n8n.unpublish(id);
			const started = (await n8n.executions(id)).map((run) => nodeOutput(run, 'Poll')[0]?.path);
			expect(started.sort()).toEqual(fresh);
			// Every poll listed once, after the floor or the position, which only moved forward.
			const after = listingsOf('big/').map((request) => request.query['start-after']);
			expect(listingsOf('big/').filter((request) => request.query['continuation-token'])).toEqual(
				[],
			);
			expect(after[0]).toBe(lastDay);
			expect(after).toEqual([...after].sort());
			expect(after.at(-1)).toBe(fresh.at(-1));
		}, 600_000);

		// Issue 44, finding 5: before, only the first listing of maxObjects was the baseline, and the
		// second poll started the next 1,000 old objects.
		test('afterLastKey, Start After empty, First Poll Starts nothing, maxObjects 1,000 over 5,000 old objects: nothing old starts, the next new object does', async () => {
			const old = await store.fill('old5k/', 5000);
			const id = await n8n.importWorkflow(
				workflow(
					's3 first poll past maxObjects',
					[
						pollNode(
							{ prefix: 'old5k/', afterLastKey: true, maxObjects: 1000, lagSeconds: 2 },
							{ options: { firstPoll: 'none' } },
						),
					],
					[],
				),
			);
			await n8n.publish(id);
			// Publication ends after the first poll: it listed the 5,000 in five calls.
			expect(listingsOf('old5k/').length).toBeGreaterThanOrEqual(5);
			await polls('old5k/', 3);
			expect(await n8n.executionSummaries(id)).toEqual([]);
			const [fresh] = await store.fill('old5k/', 1);
			expect(fresh > old.at(-1)!).toBe(true);
			await runsEnded(id, 1);
			await polls('old5k/', 2);
			await n8n.unpublish(id);
			const started = (await n8n.executions(id)).map((run) => nodeOutput(run, 'Poll')[0]?.path);
			expect(started).toEqual([fresh]);
		}, 600_000);
	});
});
