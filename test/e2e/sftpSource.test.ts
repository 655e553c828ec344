import { utimesSync } from 'node:fs';
import { join } from 'node:path';

import { resolveOp } from '../../core/connectors/registry';
import type { RemoteFile } from '../../core/connectors/remoteFiles';
import type { OpMemory, OpResult, SftpConnection } from '../../core/connectors/types';
import { type Execution, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { waitFor } from '../harness/net';
import { Sshd } from '../harness/sshd';
import { partnerDropExample, slowUploadStartsOnce } from './partnerDrop';
import { node, PACKAGE, webhookTrigger, workflow } from './workflowBuilder';

type Credential = { id: string; name: string };

/** The SFTP ops against a real OpenSSH sshd, and in a real n8n: Poll Trigger, Connector, the example. */
describe('SFTP source', () => {
	let sshd: Sshd;
	let n8n: N8nInstance;
	let credential: Credential;

	beforeAll(async () => {
		[sshd, n8n] = await Promise.all([Sshd.start(), sharedN8n('sftp')]);
		const name = 'SFTP test server';
		const id = await n8n.createCredential(name, 'sftp', sshd.credential());
		credential = { id, name };
	}, 300_000); // the lane's shared n8n may still be starting for another suite (its wait: 5 minutes)

	afterAll(async () => {
		await n8n?.stop();
		await sshd?.stop();
	});

	async function call(op: string, args: Record<string, unknown>, memory: OpMemory = {}) {
		const result: OpResult = await resolveOp(op).run(args, {
			memory,
			sftp: sshd.connection(),
			timeoutMs: 10_000,
		});
		if (result.kind !== 'data') throw new Error(`${op} answered ${result.kind}`);
		return result;
	}

	/** A file written `ageSec` seconds ago (its modification time set back). */
	function writeAged(relative: string, content: string, ageSec: number): void {
		sshd.write(relative, content);
		const at = new Date(Date.now() - ageSec * 1000);
		utimesSync(sshd.path(relative), at, at);
	}

	/** Resolves once `count` more SFTP sessions have ended: a poll's ends after its listing. */
	async function sessionsEnd(count: number): Promise<void> {
		const target = sshd.sessionsEnded() + count;
		await waitFor(
			`${count} more SFTP sessions to end`,
			async () => (sshd.sessionsEnded() >= target ? true : undefined),
			{ timeoutMs: 60_000, intervalMs: 100 },
		);
	}

	/** A Poll Trigger listing every 5 s; a file counts as finished once unchanged for as long. */
	function pollNode(with_: Record<string, unknown>, parameters: Record<string, unknown> = {}) {
		return node(
			'Poll',
			`${PACKAGE}.pollTrigger`,
			{
				op: 'sftp.list',
				with: JSON.stringify({ unchangedForSec: 5, ...with_ }),
				items: 'files',
				id: 'path & "@" & version',
				dedupe: 'unique',
				interval: 5,
				intervalUnit: 'seconds',
				...parameters,
			},
			{ typeVersion: 1.1, credentials: { sftp: credential } },
		);
	}

	describe('ops against sshd', () => {
		it('sftp.list: finished files only once a listing saw them unchanged; recursive and by pattern; logs in with a key too', async () => {
			sshd.write('list/a.csv', 'a');
			sshd.write('list/skip.txt', 'x');
			sshd.write('list/sub/b.csv', 'bb');
			const folder = sshd.path('list');

			// unchangedForSec 0: the calls follow each other at once.
			const args = { folder, pattern: '*.csv', recursive: true, unchangedForSec: 0 };
			const first = await call('sftp.list', args);
			const firstData = first.data as { files: RemoteFile[]; uploading: RemoteFile[] };
			expect(firstData.files).toEqual([]);
			expect(firstData.uploading.map((f) => f.path).sort()).toEqual([
				join(folder, 'a.csv'),
				join(folder, 'sub/b.csv'),
			]);

			sshd.write('list/a.csv', 'a, and more');
			const second = await call('sftp.list', args, first.memory);
			const secondData = second.data as { files: RemoteFile[]; uploading: RemoteFile[] };
			expect(secondData.files.map((f) => [f.path, f.size])).toEqual([
				[join(folder, 'sub/b.csv'), 2],
			]);
			expect(secondData.uploading.map((f) => f.path)).toEqual([join(folder, 'a.csv')]);

			// Not recursive: the subfolder is not read. A key login sees the same.
			const flat = await resolveOp('sftp.list').run(
				{ folder, pattern: '*.csv', unchangedForSec: 0 },
				{ memory: second.memory ?? {}, sftp: sshd.connection('key'), timeoutMs: 10_000 },
			);
			expect(flat.kind === 'data' && (flat.data as { files: RemoteFile[] }).files).toEqual([
				expect.objectContaining({ path: join(folder, 'a.csv'), name: 'a.csv', size: 11 }),
			]);
		});

		it('sftp.download: the file as bytes; over "maxBytes" fails naming the file and the limit', async () => {
			sshd.write('dl/small.bin', Buffer.from([0, 1, 2, 3, 255]));
			sshd.write('dl/big.bin', 'x'.repeat(2000));
			const small = await call('sftp.download', { path: sshd.path('dl/small.bin') });
			expect(small.file?.fileName).toBe('small.bin');
			expect([...(small.file?.data ?? [])]).toEqual([0, 1, 2, 3, 255]);
			await expect(
				call('sftp.download', { path: sshd.path('dl/big.bin'), maxBytes: 1000 }),
			).rejects.toThrow(
				`SFTP file "${sshd.path('dl/big.bin')}" at ${sshd.host}:${sshd.port} is 2000 bytes, over the download limit "maxBytes" of 1000`,
			);
			await expect(call('sftp.download', { path: sshd.path('dl/none.bin') })).rejects.toThrow(
				`SFTP path "${sshd.path('dl/none.bin')}" does not exist`,
			);
		});

		it('sftp.move creates the folder and keeps names; sftp.delete; files already gone are reported, not errors', async () => {
			sshd.write('mv/a.csv', 'a');
			sshd.write('mv/b.csv', 'b');
			const [a, b] = [sshd.path('mv/a.csv'), sshd.path('mv/b.csv')];
			const toFolder = sshd.path('mv/processed');
			const moved = await call('sftp.move', { path: a, toFolder });
			expect(moved.data).toEqual({
				toFolder,
				moved: [{ from: a, to: join(toFolder, 'a.csv') }],
				missing: [],
			});
			expect(sshd.exists('mv/processed/a.csv')).toBe(true);
			expect((await call('sftp.move', { path: a, toFolder })).data).toMatchObject({
				moved: [],
				missing: [a],
			});
			// A file of that name already in the folder is never overwritten.
			sshd.write('mv/a.csv', 'a again');
			await expect(call('sftp.move', { path: a, toFolder })).rejects.toThrow('already exists');

			expect((await call('sftp.delete', { path: [b, a] })).data).toEqual({
				deleted: [b, a],
				missing: [],
			});
			expect((await call('sftp.delete', { path: b })).data).toEqual({ deleted: [], missing: [b] });
		});

		it('a wrong password fails naming the user', async () => {
			const wrong: SftpConnection = { ...sshd.connection(), password: 'wrong' };
			await expect(
				resolveOp('sftp.list').run({ folder: '/' }, { memory: {}, sftp: wrong, timeoutMs: 10_000 }),
			).rejects.toThrow(`SFTP login failed for user "${sshd.user}" at ${sshd.host}:${sshd.port}`);
		});

		it('calls aborted while connecting (an unpublish mid-poll) return at once; every session they open ends', async () => {
			sshd.mkdir('aborted');
			const [loginsBefore, endedBefore] = [sshd.logins(), sshd.sessionsEnded()];
			const calls = Array.from({ length: 12 }, () => {
				const stop = new AbortController();
				const call = resolveOp('sftp.list').run(
					{ folder: sshd.path('aborted') },
					{ memory: {}, sftp: sshd.connection(), signal: stop.signal, timeoutMs: 10_000 },
				);
				stop.abort();
				return call;
			});
			for (const call of calls) await expect(call).rejects.toThrow('was aborted');
			// The connections come up after the abort: each logs in, and is ended then.
			await waitFor(
				'the aborted calls to log in and their sessions to end',
				async () =>
					sshd.logins() - loginsBefore === 12 && sshd.sessionsEnded() - endedBefore === 12
						? true
						: undefined,
				{ timeoutMs: 30_000, intervalMs: 100 },
			);
		});
	});

	describe('in a real n8n', () => {
		test('the example: a file written slowly over three polls starts once, after it is complete; downloaded, read and moved to processed/', async () => {
			const example = partnerDropExample('sftp-partner-drop.json', {
				'/upload/': `${sshd.path('upload')}/`,
				'demo-sftp': credential.id,
				'Demo SFTP': credential.name,
			});
			// A poll's session ends after it listed.
			await slowUploadStartsOnce(n8n, example, {
				server: sshd,
				folder: 'upload',
				listedPath: sshd.path('upload/inbox/orders.csv'),
				polled: sessionsEnd,
			});
		});

		test('dedupe changed on the path: a file replaced with new content starts again, an unchanged one does not', async () => {
			sshd.mkdir('changed');
			const id = await n8n.importWorkflow(
				workflow(
					'sftp changed',
					[
						pollNode(
							{ folder: sshd.path('changed') },
							{ dedupe: 'changed', id: 'path', version: 'version' },
						),
					],
					[],
				),
			);
			sshd.write('changed/stock.csv', 'v1');
			await n8n.publish(id);
			await n8n.waitForFinishedExecutions(id, 1);
			sshd.write('changed/stock.csv', 'version 2, longer');
			const runs = await n8n.waitForFinishedExecutions(id, 2);
			expect(runs.map((run) => nodeOutput(run, 'Poll')[0]?.size).sort()).toEqual([17, 2]);
			await sessionsEnd(2);
			expect(await n8n.executions(id)).toHaveLength(2);
			await n8n.unpublish(id);
		});

		test('the Connector: download gives binary data within "maxBytes" and fails over it; delete removes the file', async () => {
			sshd.write('connector/small.txt', 'hello');
			sshd.write('connector/large.txt', 'x'.repeat(5000));
			const id = await n8n.importWorkflow(
				workflow(
					'sftp connector',
					[
						webhookTrigger('Hook', 'sftp-connector'),
						node(
							'Download',
							`${PACKAGE}.connector`,
							{
								op: 'sftp.download',
								with: '={{ JSON.stringify({ path: $json.body.path, maxBytes: 1000 }) }}',
							},
							{ typeVersion: 1.1, credentials: { sftp: credential } },
						),
						node(
							'Delete',
							`${PACKAGE}.connector`,
							{
								op: 'sftp.delete',
								with: "={{ JSON.stringify({ path: $('Hook').item.json.body.path }) }}",
							},
							{ typeVersion: 1.1, credentials: { sftp: credential } },
						),
					],
					[
						['Hook', 'Download'],
						['Download', 'Delete'],
					],
				),
			);
			await n8n.publish(id);
			for (const file of ['small.txt', 'large.txt']) {
				// Once n8n has registered the webhook.
				await waitFor('the sftp-connector webhook to answer', async () => {
					const response = await fetch(`${n8n.webhookBaseUrl}/webhook/sftp-connector`, {
						method: 'POST',
						headers: { 'content-type': 'application/json' },
						body: JSON.stringify({ path: sshd.path(`connector/${file}`) }),
					});
					return response.ok ? true : undefined;
				});
			}
			const runs = await n8n.waitForFinishedExecutions(id, 2);
			const byFile = (name: string) =>
				runs.find((run) =>
					JSON.stringify(run.data?.resultData.runData.Hook).includes(name),
				) as Execution;
			const small = byFile('small.txt');
			expect(small.status).toBe('success');
			const item = small.data?.resultData.runData.Download?.[0]?.data?.main[0]?.[0] as {
				json: Record<string, unknown>;
				binary?: { data?: { fileName?: string; mimeType?: string } };
			};
			expect(item.json).toMatchObject({ path: sshd.path('connector/small.txt'), size: 5 });
			expect(item.binary?.data).toMatchObject({ fileName: 'small.txt', mimeType: 'text/plain' });
			expect(nodeOutput(small, 'Delete')).toEqual([
				{ deleted: [sshd.path('connector/small.txt')], missing: [] },
			]);
			expect(sshd.exists('connector/small.txt')).toBe(false);
			const large = byFile('large.txt');
			expect(large.status).toBe('error');
			expect(large.data?.resultData.error?.message).toContain(
				'is 5000 bytes, over the download limit "maxBytes" of 1000',
			);
			expect(sshd.exists('connector/large.txt')).toBe(true);
			await n8n.unpublish(id);
		});

		test('activation refuses a missing folder naming "folder" in With, and sftp.download as a trigger op naming Op', async () => {
			const noFolder = await n8n.importWorkflow(
				workflow('sftp no folder', [pollNode({ pattern: '*.csv' })], []),
			);
			expect(await n8n.activationError(noFolder)).toContain(
				'Invalid value (none) for "With": "folder" must be a path on the server',
			);
			const download = await n8n.importWorkflow(
				workflow(
					'sftp download trigger',
					[
						{
							...pollNode({ path: '/x' }),
							parameters: { ...pollNode({ path: '/x' }).parameters, op: 'sftp.download' },
						},
					],
					[],
				),
			);
			expect(await n8n.activationError(download)).toContain(
				'Invalid value "sftp.download" for "Op": reads a file',
			);
		});

		test('Execute step shows what the next poll would start: finished files, not those still uploading', async () => {
			writeAged('preview/old.csv', 'old', 600);
			sshd.write('preview/new.csv', 'new');
			const id = await n8n.importWorkflow(
				workflow(
					'sftp preview',
					[pollNode({ folder: sshd.path('preview'), finishedAfterSec: 60 })],
					[],
				),
			);
			const manual = await n8n.executeStep(id, 'Poll');
			expect(nodeOutput(manual, 'Poll')).toEqual([
				expect.objectContaining({
					verdict: 'new',
					wouldStart: true,
					item: expect.objectContaining({ path: sshd.path('preview/old.csv') }),
				}),
			]);
		});
	});
});
