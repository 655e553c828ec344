import type { ICredentialDataDecryptedObject, IHttpRequestOptions, INode } from 'n8n-workflow';

import { type HttpHelpers, n8nHttpTransport, type OAuth2RequestOptions } from './httpTransport';

/** n8n's helpers as the transport sees them, recording what it asked for. */
function fakeContext(
	credentials: Record<string, ICredentialDataDecryptedObject>,
	answers: { oauth2?: () => Promise<unknown> } = {},
) {
	const calls: Array<{ helper: string; type?: string; options: unknown; oAuth2Options?: unknown }> =
		[];
	const node = {
		name: 'Poll',
		credentials: {
			oAuth2Api: { id: '1', name: 'Partner OAuth2' },
			httpBasicAuth: { id: '2', name: 'Partner login' },
		},
	} as unknown as INode;
	const context: HttpHelpers = {
		getNode: () => node,
		getCredentials: async (type) => credentials[type] ?? {},
		helpers: {
			httpRequest: async (options: IHttpRequestOptions) => {
				calls.push({ helper: 'httpRequest', options });
				return {
					statusCode: 200,
					headers: { 'Content-Type': 'application/json' },
					body: '{"ok":true}',
				};
			},
			httpRequestWithAuthentication: async (type: string, options: IHttpRequestOptions) => {
				calls.push({ helper: 'httpRequestWithAuthentication', type, options });
				return { statusCode: 200, headers: {}, body: '[]' };
			},
			requestOAuth2: async (
				type: string,
				options: OAuth2RequestOptions,
				oAuth2Options?: unknown,
			) => {
				calls.push({ helper: 'requestOAuth2', type, options, oAuth2Options });
				return answers.oauth2
					? await answers.oauth2()
					: { statusCode: 304, headers: { ETag: '"v1"' }, body: undefined };
			},
		},
	};
	return { context, calls };
}

describe('n8nHttpTransport', () => {
	it("OAuth2 goes through n8n's requestOAuth2 with every status answered (so a 401 still makes n8n refresh), the URL joined to the Base URL", async () => {
		const { context, calls } = fakeContext({});
		const http = n8nHttpTransport(context, {
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
		expect(response).toEqual({ status: 304, headers: { etag: '"v1"' }, body: '' });
		expect(calls).toEqual([
			{
				helper: 'requestOAuth2',
				type: 'oAuth2Api',
				options: {
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
				oAuth2Options: { tokenType: 'Bearer' },
			},
		]);
	});

	it('a failed OAuth2 request names the credential and what the authorization server answered', async () => {
		const refused = Object.assign(new Error('Client authentication failed'), {
			body: { error: 'invalid_client' },
		});
		const { context } = fakeContext({}, { oauth2: async () => await Promise.reject(refused) });
		const http = n8nHttpTransport(context, { auth: { kind: 'generic', type: 'oAuth2Api' } });
		await expect(http({ method: 'GET', url: 'https://api.example.com/x' })).rejects.toThrow(
			'OAuth2 API credential "Partner OAuth2": Client authentication failed (the authorization server answered "invalid_client")',
		);
	});

	it("Basic Auth becomes the request's auth for n8n's httpRequest; None sends nothing extra", async () => {
		const { context, calls } = fakeContext({ httpBasicAuth: { user: 'ann', password: 'pw' } });
		await n8nHttpTransport(context, { auth: { kind: 'generic', type: 'httpBasicAuth' } })({
			method: 'GET',
			url: 'https://api.example.com/x',
		});
		await n8nHttpTransport(context, { auth: { kind: 'none' } })({
			method: 'GET',
			url: 'https://api.example.com/y',
		});
		expect(
			calls.map((c) => [
				c.helper,
				(c.options as IHttpRequestOptions).url,
				(c.options as IHttpRequestOptions).auth,
			]),
		).toEqual([
			['httpRequest', 'https://api.example.com/x', { username: 'ann', password: 'pw' }],
			['httpRequest', 'https://api.example.com/y', undefined],
		]);
	});

	it("this package's own credential still goes through httpRequestWithAuthentication with its base URL", async () => {
		const { context, calls } = fakeContext({
			durableHttpApi: { baseUrl: 'https://legacy.example.com' },
		});
		await n8nHttpTransport(context, { auth: { kind: 'legacy', required: false } })({
			method: 'GET',
			url: '/items',
		});
		expect(calls).toMatchObject([
			{
				helper: 'httpRequestWithAuthentication',
				type: 'durableHttpApi',
				options: { url: '/items', baseURL: 'https://legacy.example.com' },
			},
		]);
	});
});
