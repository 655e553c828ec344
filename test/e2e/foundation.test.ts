import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

import { FakeSystem } from '../harness/fakeSystem';
import { packDir } from '../harness/paths';
import { N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { marker, node, PACKAGE, workflow } from './workflowBuilder';

/** The package as a community install: n8n loads it, lists its types, tests its credentials and runs it. */
describe('the packed package inside a real n8n', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;

	beforeAll(async () => {
		source = await FakeSystem.start();
		source.on('GET', '/health', (request) =>
			request.headers.authorization === 'Bearer right-token'
				? { body: { ok: true } }
				: { status: 401, body: { error: 'bad token' } },
		);
		source.on('GET', '/items', { body: { items: [{ id: 'only-one', title: 'hello' }] } });
		n8n = await sharedN8n('foundation');
	});

	afterAll(async () => {
		await n8n?.stop();
		await source?.close();
	});

	test('the tarball holds only what users need', () => {
		const tarball = readdirSync(packDir()).find((f) => f.endsWith('.tgz'))!;
		const files = execFileSync('tar', ['-tzf', join(packDir(), tarball)], { encoding: 'utf8' })
			.trim()
			.split('\n');
		const outsideDist = files.filter((f) => !f.startsWith('package/dist/'));
		expect(outsideDist.sort()).toEqual([
			'package/LICENSE',
			'package/README.md',
			'package/index.js',
			'package/package.json',
		]);
		expect(
			files.filter((f) => /\.test\.|\/testing\/|\.map$|\.ts$/.test(f) && !f.endsWith('.d.ts')),
		).toEqual([]);
		expect(files).toEqual(
			expect.arrayContaining([
				'package/dist/nodes/PollTrigger/PollTrigger.node.js',
				'package/dist/nodes/PollTrigger/pollTrigger.svg',
				'package/dist/nodes/PollTrigger/PollTrigger.node.json',
			]),
		);
	});

	test('n8n lists every node and credential type of the package', async () => {
		const nodeTypes = await n8n.rest<Array<{ name: string }>>('GET', '/types/nodes.json');
		const names = nodeTypes.map((t) => t.name);
		expect(names).toEqual(
			expect.arrayContaining([
				`${PACKAGE}.pollTrigger`,
				`${PACKAGE}.durableScheduleTrigger`,
				`${PACKAGE}.roundTripWait`,
				`${PACKAGE}.connector`,
			]),
		);
		const credentialTypes = (
			await n8n.rest<Array<{ name: string }>>('GET', '/types/credentials.json')
		).map((t) => t.name);
		expect(credentialTypes).toEqual(
			expect.arrayContaining(['durableHttpApi', 'durableImapApi', 'roundTripCallbackApi']),
		);
		// What n8n logged while it started and loaded the package (the n8n may be shared: later lines
		// belong to other suites' workflows).
		const startup = n8n.log().split('Editor is now accessible')[0];
		expect(startup).toContain('n8n-nodes-durable-triggers');
		expect(startup).not.toMatch(/n8n-nodes-durable-triggers[^\n]*(error|failed)/i);
	});

	test('the HTTP credential test passes with the right token and fails, with the reason, with a wrong one', async () => {
		const testWith = async (token: string) => {
			const data = {
				baseUrl: source.baseUrl,
				authentication: 'bearer',
				token,
				testPath: '/health',
			};
			const id = await n8n.createCredential(`source ${token}`, 'durableHttpApi', data);
			return await n8n.rest<{ data: { status: string; message: string } }>(
				'POST',
				'/rest/credentials/test',
				{ credentials: { id, name: 'source', type: 'durableHttpApi', data } },
			);
		};
		expect((await testWith('right-token')).data.status).toBe('OK');
		const wrong = (await testWith('wrong-token')).data;
		expect(wrong.status).toBe('Error');
		expect(wrong.message).toMatch(/401|authoriz/i);
	});

	test('the callback credential test refuses settings that cannot authenticate a callback', async () => {
		const testWith = async (data: Record<string, unknown>) => {
			const id = await n8n.createCredential('callback', 'roundTripCallbackApi', data);
			return (
				await n8n.rest<{ data: { status: string; message: string } }>(
					'POST',
					'/rest/credentials/test',
					{ credentials: { id, name: 'callback', type: 'roundTripCallbackApi', data } },
				)
			).data;
		};
		expect(
			(
				await testWith({
					scheme: 'hmac',
					secret: 'long-enough-secret',
					signatureHeader: 'x-signature',
					toleranceSec: 300,
				})
			).status,
		).toBe('OK');
		const empty = await testWith({
			scheme: 'hmac',
			secret: '',
			signatureHeader: 'x-signature',
			toleranceSec: 300,
		});
		expect(empty).toMatchObject({ status: 'Error' });
		expect(empty.message).toContain('secret');
	});

	test('a workflow imported through the API runs and its output reads back', async () => {
		const credential = await n8n.createCredential('source', 'durableHttpApi', {
			baseUrl: source.baseUrl,
			authentication: 'none',
			testPath: '/health',
		});
		const id = await n8n.importWorkflow(
			workflow(
				'foundation',
				[
					node(
						'Poll',
						`${PACKAGE}.pollTrigger`,
						{
							op: 'http.request',
							with: '{"url": "/items"}',
							items: 'items',
							id: 'id',
							dedupe: 'unique',
							interval: 1,
							intervalUnit: 'minutes',
						},
						{
							credentials: { durableHttpApi: { id: credential, name: 'source' } },
						},
					),
					marker('Done'),
				],
				[['Poll', 'Done']],
			),
		);
		await n8n.publish(id);
		const [execution] = await n8n.waitForFinishedExecutions(id, 1);
		expect(execution.status).toBe('success');
		expect(nodeOutput(execution, 'Done')).toEqual([
			{ id: 'only-one', title: 'hello', branch: 'Done' },
		]);
		await n8n.unpublish(id); // the n8n is shared: the source it polls closes with this suite
	});
});
