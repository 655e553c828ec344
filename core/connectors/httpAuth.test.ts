import { applyGenericAuth, prepareHttpRequest, resolveHttpAuth, resolveUrl } from './httpAuth';
import { ConfigError } from '../configError';

const EMPTY = { headers: { accept: 'application/json' }, query: { page: '1' }, body: undefined };

describe('resolveHttpAuth', () => {
	it("reads None and each of n8n's generic types; the legacy credential only where allowed", () => {
		expect(resolveHttpAuth('none')).toEqual({ kind: 'none' });
		expect(resolveHttpAuth('oAuth2Api')).toEqual({ kind: 'generic', type: 'oAuth2Api' });
		expect(resolveHttpAuth('httpHeaderAuth')).toEqual({ kind: 'generic', type: 'httpHeaderAuth' });
		expect(resolveHttpAuth('durableHttpApi', { legacy: true })).toEqual({
			kind: 'legacy',
			required: true,
		});
	});

	it('names "Authentication" and the value for a type it does not support', () => {
		expect(() => resolveHttpAuth('httpDigestAuth')).toThrow(
			'Invalid value "httpDigestAuth" for "«authentication»": must be one of None, «httpBasicAuth:», «httpBearerAuth:», «httpCustomAuth:», «httpHeaderAuth:», «httpQueryAuth:», «oAuth2Api:»',
		);
		expect(() => resolveHttpAuth('durableHttpApi')).toThrow('Invalid value "durableHttpApi"');
		expect(() => resolveHttpAuth('oAuth1Api', { legacy: true })).toThrow(
			'Invalid value "oAuth1Api" for "«authentication»": must be one of None, «httpBasicAuth:», «httpBearerAuth:», «httpCustomAuth:», «httpHeaderAuth:», «httpQueryAuth:», «oAuth2Api:», «durableHttpApi:»',
		);
		expect(() => resolveHttpAuth(undefined)).toThrow(
			expect.objectContaining({ field: 'authentication' }),
		);
		expect(() => resolveHttpAuth(undefined)).toThrow(ConfigError);
	});
});

describe('applyGenericAuth', () => {
	it("Basic Auth becomes the request's basic auth", () => {
		expect(
			applyGenericAuth('httpBasicAuth', { user: 'ann', password: 's3cret' }, EMPTY, 'Partner')
				.basicAuth,
		).toEqual({ username: 'ann', password: 's3cret' });
	});

	it('Bearer, Header and Query Auth add one header or query parameter and keep the rest', () => {
		expect(applyGenericAuth('httpBearerAuth', { token: 't0k' }, EMPTY, 'P').headers).toEqual({
			accept: 'application/json',
			Authorization: 'Bearer t0k',
		});
		expect(
			applyGenericAuth('httpHeaderAuth', { name: 'X-API-Key', value: 'k' }, EMPTY, 'P').headers,
		).toEqual({ accept: 'application/json', 'X-API-Key': 'k' });
		expect(
			applyGenericAuth('httpQueryAuth', { name: 'api_key', value: 'k' }, EMPTY, 'P').query,
		).toEqual({ page: '1', api_key: 'k' });
	});

	it('a Header or Query Auth credential without a name is refused naming the credential', () => {
		expect(() =>
			applyGenericAuth('httpHeaderAuth', { name: ' ', value: 'k' }, EMPTY, 'Partner key'),
		).toThrow(
			expect.objectContaining({
				field: 'name',
				credential: 'httpHeaderAuth',
				credentialName: 'Partner key',
				message:
					'Invalid value "" for "«httpHeaderAuth:name»" in the «httpHeaderAuth:» credential "Partner key": must not be empty',
			}),
		);
	});

	it('Custom Auth merges its headers, qs and body', () => {
		const json = JSON.stringify({
			headers: { 'X-Tenant': 'acme' },
			qs: { sig: 'abc' },
			body: { apiKey: 'k' },
		});
		const out = applyGenericAuth('httpCustomAuth', { json }, { ...EMPTY, body: { q: 1 } }, 'P');
		expect(out).toEqual({
			headers: { accept: 'application/json', 'X-Tenant': 'acme' },
			query: { page: '1', sig: 'abc' },
			body: { q: 1, apiKey: 'k' },
		});
	});

	it('Custom Auth with invalid JSON is refused naming the credential, without showing the JSON', () => {
		expect(() =>
			applyGenericAuth('httpCustomAuth', { json: '{headers:' }, EMPTY, 'Broken'),
		).toThrow(
			/^Invalid value \(hidden\) for "«httpCustomAuth:json»" in the «httpCustomAuth:» credential "Broken": not valid JSON: /,
		);
		expect(() => applyGenericAuth('httpCustomAuth', { json: '[]' }, EMPTY, 'Broken')).toThrow(
			'Invalid value (hidden) for "«httpCustomAuth:json»" in the «httpCustomAuth:» credential "Broken": must be a JSON object with "headers", "qs" or "body"',
		);
		expect(() =>
			applyGenericAuth('httpCustomAuth', { json: '{"qs": "sig=1"}' }, EMPTY, 'Broken'),
		).toThrow(
			'for "«httpCustomAuth:json»" in the «httpCustomAuth:» credential "Broken": "qs" must be an object',
		);
		expect(() =>
			applyGenericAuth(
				'httpCustomAuth',
				{ json: '{"body": {"k": 1}}' },
				{ ...EMPTY, body: 'x' },
				'P',
			),
		).toThrow(
			'Invalid value "x" for "«with»": "body" must be an object: the «httpCustomAuth:» credential "P" adds fields to it',
		);
	});
});

describe('resolveUrl', () => {
	it('keeps absolute URLs and joins relative ones to the base URL with one slash', () => {
		expect(resolveUrl('https://a.example/x', undefined)).toBe('https://a.example/x');
		expect(resolveUrl('/tickets', 'http://127.0.0.1:5680/api/')).toBe(
			'http://127.0.0.1:5680/api/tickets',
		);
		expect(resolveUrl('tickets', 'http://127.0.0.1:5680/api')).toBe(
			'http://127.0.0.1:5680/api/tickets',
		);
	});

	it('a relative URL without a Base URL names both fields', () => {
		expect(() => resolveUrl('/tickets', '')).toThrow(
			'Invalid value "/tickets" for "«with»": "url" is relative, so "«baseUrl»" must be set; or give an absolute URL',
		);
		expect(() => resolveUrl('/tickets', 'ftp://x')).toThrow(
			'Invalid value "ftp://x" for "«baseUrl»": must start with http:// or https://',
		);
	});
});

describe('prepareHttpRequest', () => {
	it('adds the credential, resolves the URL against the Base URL (the legacy credential keeps it as written) and sends an object body as JSON unless a content type is set', () => {
		const request = { method: 'POST', url: '/t', query: { a: '1' }, body: { x: 1 } };
		expect(
			prepareHttpRequest(
				request,
				{ auth: { kind: 'generic', type: 'httpBearerAuth' }, baseUrl: 'https://api.example.com/' },
				{ data: { token: 't' }, name: 'Bearer' },
			),
		).toEqual({
			method: 'POST',
			url: 'https://api.example.com/t',
			query: { a: '1' },
			headers: { Authorization: 'Bearer t', 'content-type': 'application/json' },
			body: '{"x":1}',
			credentials: true,
		});
		expect(
			prepareHttpRequest(
				{ ...request, headers: { 'Content-Type': 'application/vnd.api+json' } },
				{ auth: { kind: 'legacy', required: false } },
			),
		).toMatchObject({ url: '/t', headers: { 'Content-Type': 'application/vnd.api+json' } });
		expect(() => prepareHttpRequest(request, { auth: { kind: 'none' } })).toThrow(
			'"«baseUrl»" must be set',
		);
	});

	it("a paginated poll's page on another origin goes without the credential and the request's headers", () => {
		const scope = { home: '/tickets', hosts: ['partner.test'] };
		const page = (url: string) =>
			prepareHttpRequest(
				{ method: 'GET', url, headers: { 'x-tenant': 'acme' }, credentialScope: scope },
				{ auth: { kind: 'generic', type: 'httpHeaderAuth' }, baseUrl: 'https://api.test/v1' },
				{ data: { name: 'x-api-key', value: 'k' }, name: 'Key' },
			);
		expect(page('https://api.test/v1/tickets?page=2')).toMatchObject({
			headers: { 'x-tenant': 'acme', 'x-api-key': 'k' },
			credentials: true,
		});
		expect(page('https://partner.test/t')).toMatchObject({ credentials: true });
		for (const url of ['https://other.test/t', 'http://api.test/v1/t', 'http://partner.test/t'])
			expect([url, page(url)]).toEqual([
				url,
				{ method: 'GET', url, query: {}, headers: {}, credentials: false },
			]);
		// Version 1 nodes: relative URLs resolve against the legacy credential's base URL.
		const legacy = (url: string) =>
			prepareHttpRequest(
				{ method: 'GET', url, credentialScope: { home: 'tickets', hosts: [] } },
				{ auth: { kind: 'legacy', required: true } },
				undefined,
				'https://api.test/v1/',
			).credentials;
		expect([legacy('https://api.test/v1/tickets?page=2'), legacy('https://x.test/t')]).toEqual([
			true,
			false,
		]);
	});
});
