import { FakeSystem } from '../../test/harness/fakeSystem';
import { executeNode } from '../../test/nodeContext';
import { Connector } from './Connector.node';

/*
 * The Connector run in-process through n8n-core's ExecuteContext (test/nodeContext.ts): its
 * parameters read as n8n reads them (expressions resolved against the input item), its HTTP through
 * n8n-core's request helpers to a fake system on loopback.
 */
describe('Connector node (n8n-core ExecuteContext)', () => {
	let source: FakeSystem;

	beforeAll(async () => {
		source = await FakeSystem.start();
	});
	afterAll(async () => await source.close());

	it('a HEAD through the Connector returns the status and the headers', async () => {
		source.on('HEAD', '/inventory', {
			etag: '"inv-7"',
			headers: { 'x-item-count': '42' },
			body: { never: 'sent' },
		});
		const { output } = await executeNode(Connector, {
			parameters: {
				op: 'http.request',
				with: JSON.stringify({ method: 'HEAD', url: source.url('/inventory') }),
			},
		});
		expect(output).toHaveLength(1);
		expect(output[0]).toHaveLength(1);
		expect(output[0][0].json).toMatchObject({
			status: 200,
			headers: { etag: '"inv-7"', 'x-item-count': '42', 'content-type': 'application/json' },
		});
		expect(source.requests('/inventory').map((request) => request.method)).toEqual(['HEAD']);
	});

	it('"With" is an expression read per input item: one call per item, each with its own value', async () => {
		source.on('GET', '/items', (request) => ({ body: { got: request.query.n } }));
		const { output } = await executeNode(
			Connector,
			{
				parameters: {
					op: 'http.request',
					with: `={{ JSON.stringify({ url: "${source.url('/items')}?n=" + $json.n }) }}`,
				},
			},
			[{ json: { n: 1 } }, { json: { n: 2 } }],
		);
		expect(output[0].map((item) => [item.json, item.pairedItem])).toEqual([
			[{ got: '1' }, { item: 0 }],
			[{ got: '2' }, { item: 1 }],
		]);
	});

	it("a host that does not resolve fails the run naming the op, host and port in the package's words, not n8n's stock text (issue 47)", async () => {
		const failure = await executeNode(Connector, {
			parameters: {
				op: 'http.request',
				with: JSON.stringify({ url: 'http://nonexistent.invalid:8080/orders' }),
			},
		}).catch((error: unknown) => error as Error);
		expect((failure as Error).message).toBe(
			'http.request: HTTP GET /orders at nonexistent.invalid:8080 failed: host name does not resolve',
		);
		expect((failure as Error & { description?: string }).description).toContain('ENOTFOUND');
	});
});
