import { readdirSync, readFileSync } from 'node:fs';

import { resolveOp } from '../../core/connectors/registry';
import type { RemoteFile } from '../../core/connectors/remoteFiles';
import type { OpMemory, OpResult } from '../../core/connectors/types';
import { N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { waitFor } from '../harness/net';
import { Vsftpd } from '../harness/vsftpd';
import { partnerDropExample, slowUploadStartsOnce } from './partnerDrop';
import { node, PACKAGE, workflow } from './workflowBuilder';

type Credential = { id: string; name: string };

/** Explicit FTPS with vsftpd's self-signed certificate: what every op here is given in With. */
const FTPS = { tls: 'explicit', allowSelfSigned: true };

/**
 * The FTP ops against a real vsftpd (its user chrooted: `/in` is `vsftpd.path('in')`), and in a real
 * n8n: the example (a slow upload), and a burst under a Poll Trigger with download and move.
 */
describe('FTP source', () => {
	let vsftpd: Vsftpd;
	let n8n: N8nInstance;
	let credential: Credential;

	beforeAll(async () => {
		[vsftpd, n8n] = await Promise.all([Vsftpd.start(), sharedN8n('ftp')]);
		const name = 'FTP test server';
		const id = await n8n.createCredential(name, 'ftp', vsftpd.credential());
		credential = { id, name };
	}, 300_000); // the lane's shared n8n may still be starting for another suite (its wait: 5 minutes)

	afterAll(async () => {
		await n8n?.stop();
		await vsftpd?.stop();
	});

	async function call(op: string, args: Record<string, unknown>, memory: OpMemory = {}) {
		const result: OpResult = await resolveOp(op).run(
			{ ...FTPS, ...args },
			{ memory, ftp: vsftpd.connection(), timeoutMs: 10_000 },
		);
		if (result.kind !== 'data') throw new Error(`${op} answered ${result.kind}`);
		return result;
	}

	/** Resolves once the server has sent `count` more folder listings: a poll lists after logging in. */
	async function listingsSent(count: number): Promise<void> {
		const target = vsftpd.listings() + count;
		await waitFor(
			`${count} more FTP listings`,
			async () => (vsftpd.listings() >= target ? true : undefined),
			{ timeoutMs: 60_000, intervalMs: 100 },
		);
	}

	describe('ops against vsftpd over explicit TLS', () => {
		it('list (recursive, by pattern, LIST times), download, move, delete; a missing folder fails naming it', async () => {
			vsftpd.write('ops/a.csv', 'a,b\n');
			vsftpd.write('ops/skip.txt', 'x');
			vsftpd.write('ops/sub/b.csv', 'bb');
			const args = { folder: '/ops', pattern: '*.csv', recursive: true, unchangedForSec: 0 };
			const first = await call('ftp.list', args);
			expect(first.data).toMatchObject({ files: [], timesFrom: 'LIST' });
			vsftpd.write('ops/a.csv', 'a,b\n1,2\n');
			const second = (await call('ftp.list', args, first.memory)).data as {
				files: RemoteFile[];
				uploading: RemoteFile[];
			};
			expect(second.files.map((file) => [file.path, file.size])).toEqual([['/ops/sub/b.csv', 2]]);
			expect(second.uploading.map((file) => file.path)).toEqual(['/ops/a.csv']);
			// vsftpd prints a recent file's time to the minute, in UTC.
			expect(second.files[0].modifiedAt).toMatch(/:00\.000Z$/);
			expect(Math.abs(Date.parse(second.files[0].modifiedAt) - Date.now())).toBeLessThan(120_000);

			const read = await call('ftp.download', { path: '/ops/a.csv' });
			expect(read.file?.data.toString()).toBe('a,b\n1,2\n');
			expect(read.data).toMatchObject({ path: '/ops/a.csv', size: 8 });
			await expect(call('ftp.download', { path: '/ops/a.csv', maxBytes: 4 })).rejects.toThrow(
				`FTP file "/ops/a.csv" at ${vsftpd.host}:${vsftpd.port} is 8 bytes, over the download limit "maxBytes" of 4`,
			);

			expect(
				(
					await call('ftp.move', {
						path: ['/ops/a.csv', '/ops/gone.csv'],
						toFolder: '/ops/processed',
					})
				).data,
			).toEqual({
				toFolder: '/ops/processed',
				moved: [{ from: '/ops/a.csv', to: '/ops/processed/a.csv' }],
				missing: ['/ops/gone.csv'],
			});
			expect(readFileSync(vsftpd.path('ops/processed/a.csv'), 'utf8')).toBe('a,b\n1,2\n');
			expect(
				(await call('ftp.delete', { path: ['/ops/processed/a.csv', '/ops/gone.csv'] })).data,
			).toEqual({
				deleted: ['/ops/processed/a.csv'],
				missing: ['/ops/gone.csv'],
			});
			expect(vsftpd.exists('ops/processed/a.csv')).toBe(false);

			// vsftpd lists a missing folder as empty; the op changes into it first and fails.
			await expect(call('ftp.list', { folder: '/nowhere' })).rejects.toThrow(
				`FTP list of folder "/nowhere" at ${vsftpd.host}:${vsftpd.port} failed: 550 Failed to change directory.`,
			);
			// Without allowSelfSigned the certificate is checked.
			await expect(call('ftp.list', { folder: '/ops', allowSelfSigned: false })).rejects.toThrow(
				'has a certificate that does not verify',
			);
		});
	});

	describe('in a real n8n', () => {
		test('the example: a file written over three polls starts once, after it is complete; downloaded, read and moved to processed/', async () => {
			const example = partnerDropExample('ftp-partner-drop.json', {
				'demo-ftp': credential.id,
				'Demo FTP': credential.name,
			});
			await slowUploadStartsOnce(n8n, example, {
				server: vsftpd,
				folder: '.',
				listedPath: '/inbox/orders.csv',
				polled: listingsSent,
			});
		});

		test('a burst of 300 files: each starts once; each run downloads its file, then moves it to processed/', async () => {
			const count = 300;
			const names = Array.from({ length: count }, (_, i) => `f${String(i).padStart(3, '0')}.csv`);
			vsftpd.mkdir('burst');
			for (const name of names) vsftpd.write(`burst/${name}`, `${name}\n`);
			const credentials = { ftp: credential };
			const id = await n8n.importWorkflow(
				workflow(
					'ftp burst',
					[
						node(
							'Poll',
							`${PACKAGE}.pollTrigger`,
							{
								op: 'ftp.list',
								with: JSON.stringify({ ...FTPS, folder: '/burst', unchangedForSec: 0 }),
								items: 'files',
								id: 'path & "@" & version',
								dedupe: 'unique',
								interval: 5,
								intervalUnit: 'seconds',
							},
							{ typeVersion: 1.1, credentials },
						),
						node(
							'Download',
							`${PACKAGE}.connector`,
							{
								op: 'ftp.download',
								with: "={{ JSON.stringify({ tls: 'explicit', allowSelfSigned: true, path: $json.path }) }}",
							},
							{ typeVersion: 1.1, credentials },
						),
						node(
							'Move',
							`${PACKAGE}.connector`,
							{
								op: 'ftp.move',
								with: "={{ JSON.stringify({ tls: 'explicit', allowSelfSigned: true, path: $('Poll').item.json.path, toFolder: '/burst-processed' }) }}",
							},
							{ typeVersion: 1.1, credentials },
						),
					],
					[
						['Poll', 'Download'],
						['Download', 'Move'],
					],
				),
			);
			await n8n.publish(id);
			const runs = await n8n.waitForFinishedExecutions(id, count, 240_000);
			expect(runs.filter((run) => run.status !== 'success')).toEqual([]);
			const started = runs.map((run) => nodeOutput(run, 'Poll')[0]?.path).sort();
			expect(started).toEqual(names.map((name) => `/burst/${name}`));
			// Each run read its own file, then moved it.
			for (const run of runs) {
				const path = String(nodeOutput(run, 'Poll')[0]?.path);
				const content = `${path.slice('/burst/'.length)}\n`;
				expect(nodeOutput(run, 'Download')[0]).toMatchObject({ path, size: content.length });
				expect(nodeOutput(run, 'Move')[0]).toMatchObject({ moved: [{ from: path }], missing: [] });
			}
			expect(readdirSync(vsftpd.path('burst'))).toEqual([]);
			expect(readdirSync(vsftpd.path('burst-processed')).sort()).toEqual(names);
			// Two more polls: nothing starts again.
			await listingsSent(2);
			expect(await n8n.executions(id)).toHaveLength(count);
			await n8n.unpublish(id);
		});
	});
});
