import { type RawSettings, validateSettings } from './settings';

const GOOD: RawSettings = {
	mode: 'sendAndWait',
	correlationId: '',
	authentication: 'none',
	method: 'POST',
	url: 'https://partner.example.com/jobs',
	body: '{ "order": 1 }',
	correlationIdField: 'correlationId',
	callbackUrlField: 'callbackUrl',
	headers: '{ "x-tenant": "acme" }',
	correlationIdPath: 'body.correlationId',
	timeoutAmount: 1,
	timeoutUnit: 'hours',
	responseCode: 200,
	responseBody: '{ "received": true }',
};

function refusal(overrides: RawSettings): { field: string; message: string } {
	try {
		validateSettings({ ...GOOD, ...overrides });
	} catch (error) {
		const { field, message, name } = error as { field: string; message: string; name: string };
		expect(name).toBe('RoundTripConfigError');
		return { field, message };
	}
	throw new Error('expected a refusal');
}

describe('validateSettings', () => {
	it('accepts the defaults and returns what the node needs', () => {
		const settings = validateSettings(GOOD);
		expect(settings).toMatchObject({
			mode: 'sendAndWait',
			correlationId: undefined,
			timeout: { amount: 1, unit: 'hours' },
			responseCode: 200,
			responseBody: { received: true },
			request: {
				method: 'POST',
				url: 'https://partner.example.com/jobs',
				auth: { kind: 'none' as const },
				body: { order: 1 },
				headers: { 'x-tenant': 'acme' },
			},
		});
		expect(settings.correlationPath.expression).toBe('body.correlationId');
	});

	it('accepts objects n8n already parsed, numeric ids and a relative URL with the HTTP credential', () => {
		const settings = validateSettings({
			...GOOD,
			correlationId: 42,
			body: { a: 1 },
			responseBody: [1],
			authentication: 'durableHttpApi',
			url: '/jobs',
			responseCode: '202',
		});
		expect(settings).toMatchObject({
			correlationId: '42',
			responseCode: 202,
			responseBody: [1],
			request: { url: '/jobs', auth: { kind: 'legacy', required: true }, body: { a: 1 } },
		});
	});

	it("takes one of n8n's generic credential types; names Authentication and the value for one it does not support", () => {
		expect(validateSettings({ ...GOOD, authentication: 'oAuth2Api' }).request?.auth).toEqual({
			kind: 'generic',
			type: 'oAuth2Api',
		});
		expect(() => validateSettings({ ...GOOD, authentication: 'httpDigestAuth' })).toThrow(
			'Authentication must be one of None, Basic Auth, Bearer Auth, Custom Auth, Header Auth, Query Auth, OAuth2 API, Durable Triggers HTTP API; got "httpDigestAuth"',
		);
		expect(() =>
			validateSettings({ ...GOOD, authentication: 'httpHeaderAuth', url: '/jobs' }),
		).toThrow('URL must be an absolute http(s) URL');
	});

	it('ignores the request fields in Wait Only mode', () => {
		expect(
			validateSettings({ ...GOOD, mode: 'waitOnly', url: '', body: 'not json' }).request,
		).toBeUndefined();
	});

	// The rows of README's "Bad input" table: the message names the field as the editor labels it, and its value.
	it.each<[string, RawSettings, string, string]>([
		[
			'a Response Code outside 2xx',
			{ responseCode: 999 },
			'responseCode',
			'Response Code must be a whole number from 200 to 299: it answers the callback that resumed the run, a success; got 999',
		],
		[
			'a fractional Response Code',
			{ responseCode: 200.5 },
			'responseCode',
			'Response Code must be a whole number from 200 to 299: it answers the callback that resumed the run, a success; got 200.5',
		],
		[
			'a Response Code as words',
			{ responseCode: 'ok' },
			'responseCode',
			'Response Code must be a whole number from 200 to 299: it answers the callback that resumed the run, a success; got "ok"',
		],
		[
			'a Response Body that is not JSON',
			{ responseBody: '{ received: true }' },
			'responseBody',
			'Response Body is not valid JSON (Expected property name or \'}\' in JSON at position 2 (line 1 column 3)); got "{ received: true }"',
		],
		[
			'a Response Body that is a bare string',
			{ responseBody: '"ok"' },
			'responseBody',
			'Response Body must be a JSON object or array, not a string; got "\\"ok\\""',
		],
		[
			'an empty URL',
			{ url: '' },
			'url',
			'URL must not be empty: it is where the request goes; got ""',
		],
		[
			'a relative URL without the HTTP credential',
			{ url: '/jobs' },
			'url',
			'URL must be an absolute http(s) URL (a relative URL needs Authentication "Durable Triggers HTTP API", whose base URL it extends); got "/jobs"',
		],
		[
			'a URL of another scheme',
			{ url: 'ftp://partner.example.com/jobs' },
			'url',
			'URL must be an http:// or https:// URL; got "ftp://partner.example.com/jobs"',
		],
		[
			'a Body that is a list',
			{ body: '[1, 2]' },
			'body',
			'Body must be a JSON object, not a list; got "[1, 2]"',
		],
		[
			'Headers with a number',
			{ headers: '{ "x-retries": 3 }' },
			'headers',
			'Headers must map each header name to text; "x-retries" is a number; got "{ \\"x-retries\\": 3 }"',
		],
		[
			'Headers with a bad name',
			{ headers: '{ "x tenant": "a" }' },
			'headers',
			'Headers has "x tenant", which is not a valid HTTP header name; got "{ \\"x tenant\\": \\"a\\" }"',
		],
		[
			'the same body field twice',
			{ callbackUrlField: 'correlationId' },
			'callbackUrlField',
			'Callback URL Field must differ from Correlation ID Field: both would write the same body field; got "correlationId"',
		],
		[
			'an unknown Method',
			{ method: 'TRACE' },
			'method',
			'Method must be one of DELETE, GET, PATCH, POST, PUT; got "TRACE"',
		],
		[
			'a bad Correlation ID Location',
			{ correlationIdPath: 'body.(' },
			'correlationIdPath',
			'Correlation ID Location is not a valid JSONata expression',
		],
		[
			'an empty Correlation ID Location',
			{ correlationIdPath: ' ' },
			'correlationIdPath',
			'Correlation ID Location must be a JSONata expression over { body, headers, query }, e.g. body.correlationId; got " "',
		],
		[
			'a Correlation ID over 255 characters',
			{ correlationId: 'x'.repeat(256) },
			'correlationId',
			'Correlation ID is 256 characters long; at most 255 are supported',
		],
		[
			'a Correlation ID that is an object',
			{ correlationId: { id: 1 } },
			'correlationId',
			'Correlation ID must be text or a number (or empty for a fresh random ID); got {"id":1}',
		],
		[
			'a zero Timeout',
			{ timeoutAmount: 0 },
			'timeoutAmount',
			'Timeout must be between 1 second and 366 days; got "0 hours"',
		],
		[
			'a Timeout over a year',
			{ timeoutAmount: 367, timeoutUnit: 'days' },
			'timeoutAmount',
			'Timeout must be between 1 second and 366 days; got "367 days"',
		],
		[
			'an unknown Timeout Unit',
			{ timeoutUnit: 'weeks' },
			'timeoutUnit',
			'Timeout Unit must be one of seconds, minutes, hours, days; got "weeks"',
		],
		[
			'an unknown Mode',
			{ mode: 'fireAndForget' },
			'mode',
			'Mode must be "Send and Wait" or "Wait Only"; got "fireAndForget"',
		],
	])('refuses %s', (_label, overrides, field, message) => {
		const refused = refusal(overrides);
		expect(refused.field).toBe(field);
		expect(refused.message).toContain(message);
	});
});
