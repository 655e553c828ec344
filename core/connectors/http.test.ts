import { httpRequestOp, parseRetryAfter } from './http';
import type { HttpRequest, HttpResponse } from './types';
import { ConfigError } from '../configError';
import { ConnectorError } from './types';

function transport(response: Partial<HttpResponse>) {
	const requests: HttpRequest[] = [];
	const http = async (request: HttpRequest) => {
		requests.push(request);
		return { url: request.url, status: 200, headers: {}, body: '', ...response };
	};
	return { http, requests };
}

describe('http.request', () => {
	test('check() refuses arguments that cannot work, naming the argument and its value, without a request', () => {
		expect(() => httpRequestOp.check({ url: '' })).toThrow(
			'Invalid value "" for "«with»": "url" must be a URL or a path relative to the credential\'s base URL',
		);
		expect(() => httpRequestOp.check({ method: 'FETCH', url: '/x' })).toThrow(
			expect.objectContaining({ field: 'with' }),
		);
		expect(() => httpRequestOp.check({ url: '/x', headers: 'x-a: 1' })).toThrow(
			'Invalid value "x-a: 1" for "«with»": "headers" must be an object of names to values',
		);
		expect(() => httpRequestOp.check({ url: '/x', query: { page: 1 } })).not.toThrow();
	});

	test('returns the parsed JSON body and the validators to keep', async () => {
		const { http } = transport({
			body: '{"items":[1]}',
			headers: { etag: '"abc"', 'last-modified': 'Wed, 01 Jan 2025 00:00:00 GMT' },
		});
		await expect(httpRequestOp.run({ url: '/items' }, { http, memory: {} })).resolves.toEqual({
			kind: 'data',
			data: { items: [1] },
			memory: { etag: '"abc"', lastModified: 'Wed, 01 Jan 2025 00:00:00 GMT' },
		});
	});

	test('sends the remembered validators, and a 304 is "not modified"', async () => {
		const { http, requests } = transport({ status: 304 });
		const result = await httpRequestOp.run(
			{ url: '/items' },
			{ http, memory: { etag: '"abc"', lastModified: 'Wed, 01 Jan 2025 00:00:00 GMT' } },
		);
		expect(result).toEqual({ kind: 'not_modified' });
		expect(requests[0].headers).toMatchObject({
			'if-none-match': '"abc"',
			'if-modified-since': 'Wed, 01 Jan 2025 00:00:00 GMT',
		});
	});

	test('does not send validators with a POST', async () => {
		const { http, requests } = transport({ body: '[]' });
		await httpRequestOp.run(
			{ method: 'post', url: '/search', body: { q: 1 } },
			{ http, memory: { etag: '"abc"' } },
		);
		expect(requests[0]).toMatchObject({ method: 'POST', body: { q: 1 } });
		expect(requests[0].headers).not.toHaveProperty('if-none-match');
	});

	test.each([
		[429, '7', 7000],
		[503, undefined, undefined],
	])('HTTP %s is a failure carrying Retry-After (%s)', async (status, retryAfter, expected) => {
		const { http } = transport({
			status,
			headers: retryAfter ? { 'retry-after': retryAfter } : {},
			body: 'slow down',
		});
		const failure = await httpRequestOp
			.run({ url: '/items' }, { http, memory: {} })
			.catch((error) => error);
		expect(failure).toBeInstanceOf(ConnectorError);
		expect(failure.retryAfterMs).toBe(expected);
	});

	test('an HTML error page is a clear failure, not data', async () => {
		const { http } = transport({
			status: 200,
			headers: { 'content-type': 'text/html' },
			body: '<html><body>Gateway</body></html>',
		});
		await expect(httpRequestOp.run({ url: '/items' }, { http, memory: {} })).rejects.toThrow(
			'GET /items answered text/html, not JSON',
		);
	});

	test('HEAD has no body: its result is the status and the headers, and it keeps the validators', async () => {
		const headers = { 'content-type': 'application/json', 'content-length': '42', etag: '"v2"' };
		const { http, requests } = transport({ status: 200, headers, body: '' });
		await expect(
			httpRequestOp.run({ method: 'head', url: '/items' }, { http, memory: { etag: '"v1"' } }),
		).resolves.toEqual({
			kind: 'data',
			data: { status: 200, headers },
			memory: { etag: '"v2"' },
		});
		expect(requests[0]).toMatchObject({ method: 'HEAD', headers: { 'if-none-match': '"v1"' } });
	});

	test('HEAD still fails on a non-2xx status, and a 304 is "not modified"', async () => {
		await expect(
			httpRequestOp.run(
				{ method: 'HEAD', url: '/gone' },
				{ http: transport({ status: 404 }).http, memory: {} },
			),
		).rejects.toThrow('HEAD /gone answered HTTP 404');
		await expect(
			httpRequestOp.run(
				{ method: 'HEAD', url: '/items' },
				{ http: transport({ status: 304 }).http, memory: { etag: '"v1"' } },
			),
		).resolves.toEqual({ kind: 'not_modified' });
	});

	test('204 and 205 have no body whatever the method: the result is the status and the headers', async () => {
		for (const [method, status] of [
			['DELETE', 204],
			['GET', 204],
			['PUT', 205],
		] as const) {
			const headers = { date: 'Mon, 30 Nov 2026 12:00:00 GMT' };
			const { http } = transport({ status, headers, body: '' });
			await expect(
				httpRequestOp.run({ method, url: '/items/1' }, { http, memory: {} }),
			).resolves.toEqual({ kind: 'data', data: { status, headers }, memory: {} });
		}
	});

	test('an empty body is still a failure for a GET answered 200', async () => {
		const { http } = transport({ status: 200, body: '' });
		await expect(httpRequestOp.run({ url: '/items' }, { http, memory: {} })).rejects.toThrow(
			'GET /items answered with an empty body, not JSON',
		);
	});

	test('a non-2xx answer names the status', async () => {
		const { http } = transport({ status: 500, body: 'boom' });
		await expect(httpRequestOp.run({ url: '/items' }, { http, memory: {} })).rejects.toThrow(
			'GET /items answered HTTP 500',
		);
	});

	test('bad arguments name the field and the value', async () => {
		const { http } = transport({});
		await expect(httpRequestOp.run({ url: '' }, { http, memory: {} })).rejects.toThrow(ConfigError);
		await expect(
			httpRequestOp.run({ url: '/x', method: 'FETCH' }, { http, memory: {} }),
		).rejects.toThrow(
			'Invalid value "FETCH" for "«with»": "method" must be one of GET, POST, PUT, PATCH, DELETE, HEAD',
		);
		await expect(
			httpRequestOp.run({ url: '/x', headers: 'nope' }, { http, memory: {} }),
		).rejects.toThrow('"headers" must be an object');
	});
});

describe('parseRetryAfter', () => {
	test('reads delay-seconds and HTTP dates', () => {
		expect(parseRetryAfter('120')).toBe(120_000);
		expect(
			parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 1)).toUTCString(), Date.UTC(2030, 0, 1)),
		).toBe(60_000);
		expect(parseRetryAfter('soon')).toBeUndefined();
		expect(parseRetryAfter(undefined)).toBeUndefined();
	});
});
