import { applyGenericAuth, resolveHttpAuth, resolveUrl } from './httpAuth';
import { ConnectorConfigError } from './types';

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
			'"Authentication" must be one of None, Basic Auth, Bearer Auth, Custom Auth, Header Auth, Query Auth, OAuth2 API; got "httpDigestAuth"',
		);
		expect(() => resolveHttpAuth('durableHttpApi')).toThrow('got "durableHttpApi"');
		expect(() => resolveHttpAuth('oAuth1Api', { legacy: true })).toThrow(
			'OAuth2 API, Durable Triggers HTTP API; got "oAuth1Api"',
		);
		try {
			resolveHttpAuth(undefined);
		} catch (error) {
			expect(error).toBeInstanceOf(ConnectorConfigError);
			expect((error as ConnectorConfigError).field).toBe('authentication');
		}
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
		).toThrow('The Header Auth credential "Partner key" has no "Name"');
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

	it('Custom Auth with invalid JSON is refused naming the credential', () => {
		expect(() =>
			applyGenericAuth('httpCustomAuth', { json: '{headers:' }, EMPTY, 'Broken'),
		).toThrow('The Custom Auth credential "Broken" has invalid JSON');
		expect(() => applyGenericAuth('httpCustomAuth', { json: '[]' }, EMPTY, 'Broken')).toThrow(
			'must be a JSON object',
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
			'"with.url" "/tickets" is relative, so "Base URL" must be set; or give an absolute URL',
		);
		expect(() => resolveUrl('/tickets', 'ftp://x')).toThrow(
			'"Base URL" must start with http:// or https://; got "ftp://x"',
		);
	});
});
