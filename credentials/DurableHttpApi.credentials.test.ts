import { authenticateHttpRequest, DurableHttpApi } from './DurableHttpApi.credentials';

describe('Durable Triggers HTTP API credential', () => {
	const request = { url: '/items', headers: { accept: 'application/json' }, qs: { page: 1 } };

	test.each([
		[
			'bearer',
			{ token: 't0k' },
			{ headers: { accept: 'application/json', Authorization: 'Bearer t0k' } },
		],
		[
			'header',
			{ headerName: 'X-API-Key', headerToken: 'k3y' },
			{ headers: { accept: 'application/json', 'X-API-Key': 'k3y' } },
		],
		['basic', { user: 'u', password: 'p' }, { auth: { username: 'u', password: 'p' } }],
		['query', { queryName: 'api_key', queryToken: 'q' }, { qs: { page: 1, api_key: 'q' } }],
		['none', {}, { headers: { accept: 'application/json' }, qs: { page: 1 } }],
	])('%s authentication', async (authentication, fields, expected) => {
		await expect(
			authenticateHttpRequest({ authentication, ...fields }, request),
		).resolves.toMatchObject(expected);
	});

	test('the credential test requests the test path under the base URL', () => {
		const credential = new DurableHttpApi();
		expect(credential.test.request).toEqual({
			baseURL: '={{$credentials.baseUrl}}',
			url: '={{$credentials.testPath}}',
		});
		expect(credential.properties.find((p) => p.name === 'testPath')?.default).toBe('/');
	});
});
