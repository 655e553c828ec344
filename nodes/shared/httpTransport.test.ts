import type { IHttpRequestOptions } from 'n8n-workflow';

import { FakeSystem } from '../../test/harness/fakeSystem';
import { freePort } from '../../test/harness/net';
import { type NodeSetup, triggerContext } from '../../test/nodeContext';
import { PollTrigger } from '../PollTrigger/PollTrigger.node';
import { n8nHttpTransport } from './httpTransport';

/*
 * The HTTP transport on n8n-core's TriggerContext (test/nodeContext.ts): its own request helpers
 * (`httpRequest`, `httpRequestWithAuthentication`) make real requests to a fake system on loopback.
 * n8n's OAuth2 flow (`requestOAuth2`: tokens, refresh, saving them) needs n8n's credentials service,
 * so there the test records what the transport asks of it; the flow itself is tested end to end in
 * test/e2e/credentials.test.ts.
 */

const ignoreEmits = () => undefined;

/**
 * A Poll Trigger set up as the editor would for the credential: n8n-core hands a node only the
 * credentials its description shows for its parameters (version 1: this package's own credential;
 * 1.1: "Authentication" names one of n8n's generic types).
 */
function context(setup: Omit<NodeSetup, 'parameters'>) {
	const [type] = Object.keys(setup.credentials ?? {});
	const legacy = type === 'durableHttpApi';
	return triggerContext(
		PollTrigger,
		{
			parameters: {
				op: 'http.request',
				with: '{}',
				...(legacy ? {} : { authentication: type ?? 'none' }),
			},
			typeVersion: legacy ? 1 : 1.1,
			...setup,
		},
		ignoreEmits,
	);
}

describe('n8nHttpTransport (n8n-core TriggerContext)', () => {
	let api: FakeSystem;

	beforeAll(async () => {
		api = await FakeSystem.start();
	});
	afterAll(async () => await api.close());

	it("OAuth2 goes through n8n's requestOAuth2 with every status answered (so a 401 still makes n8n refresh), the URL joined to the Base URL", async () => {
		const ctx = context({ credentials: { oAuth2Api: {} } });
		const requestOAuth2 = jest
			.spyOn(ctx.helpers, 'requestOAuth2')
			.mockResolvedValue({ statusCode: 304, headers: { ETag: '"v1"' }, body: undefined });
		const http = n8nHttpTransport(ctx, {
			auth: { kind: 'generic', type: 'oAuth2Api' },
			baseUrl: 'https://api.example.com/v2/',
		});
		const response = await http({
			method: 'POST',
			url: '/tickets',
			query: { page: '2' },
			body: { a: 1 },
			timeoutMs: 5000,
		});
		expect(response).toEqual({
			url: 'https://api.example.com/v2/tickets',
			status: 304,
			headers: { etag: '"v1"' },
			body: '',
		});
		expect(requestOAuth2.mock.calls).toEqual([
			[
				'oAuth2Api',
				{
					method: 'POST',
					url: 'https://api.example.com/v2/tickets',
					qs: { page: '2' },
					headers: { 'content-type': 'application/json' },
					body: '{"a":1}',
					timeout: 5000,
					json: false,
					simple: false,
					resolveWithFullResponse: true,
				},
				{ tokenType: 'Bearer' },
			],
		]);
	});

	it('a failed OAuth2 request names the credential and what the authorization server answered', async () => {
		const ctx = context({
			credentials: { oAuth2Api: {} },
			credentialNames: { oAuth2Api: 'Partner OAuth2' },
		});
		const refused = Object.assign(new Error('Client authentication failed'), {
			body: { error: 'invalid_client' },
		});
		jest.spyOn(ctx.helpers, 'requestOAuth2').mockRejectedValue(refused);
		const http = n8nHttpTransport(ctx, { auth: { kind: 'generic', type: 'oAuth2Api' } });
		await expect(http({ method: 'GET', url: 'https://api.example.com/x' })).rejects.toThrow(
			'OAuth2 API credential "Partner OAuth2": Client authentication failed (the authorization server answered "invalid_client")',
		);
	});

	it("Basic Auth reaches the API through n8n's httpRequest; None sends nothing extra", async () => {
		api.on('GET', '/x', { body: { ok: true } }).on('GET', '/y', { body: { ok: true } });
		const ctx = context({ credentials: { httpBasicAuth: { user: 'ann', password: 'pw' } } });
		const httpRequest = jest.spyOn(ctx.helpers, 'httpRequest');
		await n8nHttpTransport(ctx, { auth: { kind: 'generic', type: 'httpBasicAuth' } })({
			method: 'GET',
			url: api.url('/x'),
		});
		await n8nHttpTransport(ctx, { auth: { kind: 'none' } })({ method: 'GET', url: api.url('/y') });
		expect(httpRequest).toHaveBeenCalledTimes(2);
		expect(api.requests('/x').map((request) => request.headers.authorization)).toEqual([
			`Basic ${Buffer.from('ann:pw').toString('base64')}`,
		]);
		expect(api.requests('/y').map((request) => request.headers.authorization)).toEqual([undefined]);
		expect((httpRequest.mock.calls[1][0] as IHttpRequestOptions).auth).toBeUndefined();
	});

	it("this package's own credential still goes through httpRequestWithAuthentication, the URL joined to its base URL", async () => {
		api.on('GET', '/api/items', { body: [] });
		const ctx = context({ credentials: { durableHttpApi: { baseUrl: api.url('/api/') } } });
		const withAuthentication = jest.spyOn(ctx.helpers, 'httpRequestWithAuthentication');
		const response = await n8nHttpTransport(ctx, { auth: { kind: 'legacy', required: false } })({
			method: 'GET',
			url: '/items',
		});
		expect(withAuthentication.mock.calls).toMatchObject([
			['durableHttpApi', { url: api.url('/api/items') }],
		]);
		expect(withAuthentication.mock.calls[0][1]).not.toHaveProperty('baseURL');
		// The answer says where it came from: its relative links resolve against that.
		expect(response).toMatchObject({ url: api.url('/api/items'), status: 200, body: '[]' });
		expect(api.requests('/api/items')).toHaveLength(1);
	});

	// Issue 47: n8n's helpers fail with the socket's code (its NodeApiError's message is n8n's stock
	// text, naming no host); the transport says host, port and what failed in words n8n keeps.
	it.each([
		['none', 'no credential (httpRequest)'],
		['durableHttpApi', "the package's credential (httpRequestWithAuthentication)"],
	])(
		'a port with no listener and a host that does not resolve name host and port, with %s',
		async (type) => {
			const ctx = context(
				type === 'none' ? {} : { credentials: { durableHttpApi: { baseUrl: '' } } },
			);
			const http = n8nHttpTransport(
				ctx,
				type === 'none'
					? { auth: { kind: 'none' } }
					: { auth: { kind: 'legacy', required: false } },
			);
			const closed = await freePort();
			await expect(
				http({ method: 'GET', url: `http://127.0.0.1:${closed}/tickets?since=1` }),
			).rejects.toThrow(
				`HTTP GET /tickets at 127.0.0.1:${closed} failed: connection refused (is the server running, and are host and port right?)`,
			);
			await expect(
				http({ method: 'GET', url: 'https://nonexistent.invalid/tickets' }),
			).rejects.toThrow(
				'HTTP GET /tickets at nonexistent.invalid:443 failed: host name does not resolve',
			);
		},
	);

	it("a paginated poll's page on another origin goes through n8n's plain httpRequest: neither the legacy credential nor OAuth2 signs it", async () => {
		api.on('GET', '/elsewhere', { body: [] });
		const scope = { home: 'https://api.example.com/tickets', hosts: [] };
		const legacy = context({
			credentials: { durableHttpApi: { baseUrl: 'https://api.example.com' } },
		});
		const withAuthentication = jest.spyOn(legacy.helpers, 'httpRequestWithAuthentication');
		await n8nHttpTransport(legacy, { auth: { kind: 'legacy', required: false } })({
			method: 'GET',
			url: api.url('/elsewhere'),
			headers: { 'x-tenant': 'acme' },
			credentialScope: scope,
		});
		expect(withAuthentication).not.toHaveBeenCalled();
		const oauth = context({ credentials: { oAuth2Api: {} } });
		const requestOAuth2 = jest.spyOn(oauth.helpers, 'requestOAuth2');
		await n8nHttpTransport(oauth, { auth: { kind: 'generic', type: 'oAuth2Api' } })({
			method: 'GET',
			url: api.url('/elsewhere'),
			credentialScope: scope,
		});
		expect(requestOAuth2).not.toHaveBeenCalled();
		expect(api.requests('/elsewhere').map((request) => request.headers['x-tenant'])).toEqual([
			undefined,
			undefined,
		]);
	});
});
