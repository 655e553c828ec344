import {
	type PartnerAnswer,
	type RawSettings,
	checkCallbackBinding,
	correlationIdFromAnswer,
	validateSettings,
} from './settings';

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
		expect(name).toBe('ConfigError');
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
			'Invalid value "httpDigestAuth" for "«authentication»": must be one of None, «httpBasicAuth:», «httpBearerAuth:», «httpCustomAuth:», «httpHeaderAuth:», «httpQueryAuth:», «oAuth2Api:», «durableHttpApi:»',
		);
		expect(() =>
			validateSettings({ ...GOOD, authentication: 'httpHeaderAuth', url: '/jobs' }),
		).toThrow('for "«url»": must be an absolute http(s) URL');
	});

	it('ignores the request fields in Wait Only mode', () => {
		expect(
			validateSettings({ ...GOOD, mode: 'waitOnly', url: '', body: 'not json' }).request,
		).toBeUndefined();
	});

	// The rows of docs/bad-input.md's table: the message names the field as the editor labels it, and its value.
	it.each<[string, RawSettings, string, string]>([
		[
			'a Response Code outside 2xx',
			{ responseCode: 999 },
			'responseCode',
			'Invalid value 999 for "«responseCode»": must be a whole number from 200 to 299: it answers the callback that resumed the run, a success',
		],
		[
			'a fractional Response Code',
			{ responseCode: 200.5 },
			'responseCode',
			'Invalid value 200.5 for "«responseCode»": must be a whole number from 200 to 299: it answers the callback that resumed the run, a success',
		],
		[
			'a Response Code as words',
			{ responseCode: 'ok' },
			'responseCode',
			'Invalid value "ok" for "«responseCode»": must be a whole number from 200 to 299: it answers the callback that resumed the run, a success',
		],
		[
			'a Response Body that is not JSON',
			{ responseBody: '{ received: true }' },
			'responseBody',
			'Invalid value "{ received: true }" for "«responseBody»": not valid JSON (Expected property name or \'}\' in JSON at position 2 (line 1 column 3))',
		],
		[
			'a Response Body that is a bare string',
			{ responseBody: '"ok"' },
			'responseBody',
			'Invalid value "\\"ok\\"" for "«responseBody»": must be a JSON object or array, not a string',
		],
		[
			'an empty URL',
			{ url: '' },
			'url',
			'Invalid value "" for "«url»": must not be empty: it is where the request goes',
		],
		[
			'a relative URL without the HTTP credential',
			{ url: '/jobs' },
			'url',
			'Invalid value "/jobs" for "«url»": must be an absolute http(s) URL (a relative URL needs «authentication» "«durableHttpApi:»", whose base URL it extends)',
		],
		[
			'a URL of another scheme',
			{ url: 'ftp://partner.example.com/jobs' },
			'url',
			'Invalid value "ftp://partner.example.com/jobs" for "«url»": must be an http:// or https:// URL',
		],
		[
			'a Body that is a list',
			{ body: '[1, 2]' },
			'body',
			'Invalid value "[1, 2]" for "«body»": must be a JSON object, not a list',
		],
		[
			'Headers with a number',
			{ headers: '{ "x-retries": 3 }' },
			'headers',
			'Invalid value "{ \\"x-retries\\": 3 }" for "«headers»": must map each header name to text; "x-retries" is a number',
		],
		[
			'Headers with a bad name',
			{ headers: '{ "x tenant": "a" }' },
			'headers',
			'Invalid value "{ \\"x tenant\\": \\"a\\" }" for "«headers»": "x tenant" is not a valid HTTP header name',
		],
		[
			'the same body field twice',
			{ callbackUrlField: 'correlationId' },
			'callbackUrlField',
			'Invalid value "correlationId" for "«callbackUrlField»": must differ from «correlationIdField»: both would write the same body field',
		],
		[
			'an unknown Method',
			{ method: 'TRACE' },
			'method',
			'Invalid value "TRACE" for "«method»": must be one of DELETE, GET, PATCH, POST, PUT',
		],
		[
			'a bad Correlation ID Location',
			{ correlationIdPath: 'body.(' },
			'correlationIdPath',
			'Invalid value "body.(" for "«correlationIdPath»": not a valid JSONata expression (',
		],
		[
			'an empty Correlation ID Location',
			{ correlationIdPath: ' ' },
			'correlationIdPath',
			'Invalid value " " for "«correlationIdPath»": must be a JSONata expression over { body, headers, query }, e.g. body.correlationId',
		],
		[
			'a Correlation ID over 255 characters',
			{ correlationId: 'x'.repeat(256) },
			'correlationId',
			'for "«correlationId»": 256 characters long; at most 255 are supported',
		],
		[
			'a Correlation ID that is an object',
			{ correlationId: { id: 1 } },
			'correlationId',
			'Invalid value {"id":1} for "«correlationId»": must be text or a number (or empty for a fresh random ID)',
		],
		[
			'a zero Timeout',
			{ timeoutAmount: 0 },
			'timeoutAmount',
			'Invalid value 0 for "«timeoutAmount»": must be from 1s to 366d',
		],
		[
			'a negative Timeout',
			{ timeoutAmount: -5, timeoutUnit: 'minutes' },
			'timeoutAmount',
			'Invalid value -5min for "«timeoutAmount»": must be from 1s to 366d',
		],
		[
			'a Timeout under a second',
			{ timeoutAmount: 0.5, timeoutUnit: 'seconds' },
			'timeoutAmount',
			'Invalid value 500ms for "«timeoutAmount»": must be from 1s to 366d',
		],
		[
			'a Timeout over a year',
			{ timeoutAmount: 367, timeoutUnit: 'days' },
			'timeoutAmount',
			'Invalid value 367d for "«timeoutAmount»": must be from 1s to 366d',
		],
		[
			'a Timeout that is not a number',
			{ timeoutAmount: Number.NaN },
			'timeoutAmount',
			'Invalid value NaN for "«timeoutAmount»": must be a number',
		],
		[
			'an unknown Timeout Unit',
			{ timeoutUnit: 'weeks' },
			'timeoutUnit',
			'Invalid value "weeks" for "«timeoutUnit»": must be one of seconds, minutes, hours, days',
		],
		[
			'an unknown Mode',
			{ mode: 'fireAndForget' },
			'mode',
			'Invalid value "fireAndForget" for "«mode»": must be "Send and Wait" or "Wait Only"',
		],
	])('refuses %s', (_label, overrides, field, message) => {
		const refused = refusal(overrides);
		expect(refused.field).toBe(field);
		expect(refused.message).toContain(message);
	});
});

describe('validateSettings: Callback URL and Resume Condition', () => {
	it('defaults to the per-wait URL and no condition; compiles a condition', async () => {
		expect(validateSettings(GOOD)).toMatchObject({
			callbackVia: 'perWait',
			resumeCondition: undefined,
		});
		const fixed = validateSettings({
			...GOOD,
			callbackVia: 'fixed',
			resumeCondition: 'body.status = "signed"',
		});
		expect(fixed.callbackVia).toBe('fixed');
		await expect(
			fixed.resumeCondition?.matches({ body: { status: 'signed' }, headers: {}, query: {} }),
		).resolves.toEqual({ matched: true });
	});

	it('refuses an unknown Callback URL and a condition that is not JSONata, naming the field and value', () => {
		expect(refusal({ callbackVia: 'sometimes' })).toEqual({
			field: 'callbackVia',
			message: expect.stringContaining('"«callbackVia»"'),
		});
		const bad = refusal({ resumeCondition: 'body.status in [' });
		expect(bad.field).toBe('resumeCondition');
		expect(bad.message).toContain('Invalid value "body.status in [" for "«resumeCondition»"');
	});

	it('refuses a fixed URL in Wait Only mode without an id the partner knows (an expression that gave nothing)', () => {
		const bad = refusal({ mode: 'waitOnly', callbackVia: 'fixed', correlationId: '' });
		expect(bad.field).toBe('correlationId');
		expect(bad.message).toContain('"«correlationId»"');
		expect(validateSettings({ ...GOOD, callbackVia: 'fixed', correlationId: '' }).callbackVia).toBe(
			'fixed',
		);
	});
});

describe("Correlation ID From the partner's answer", () => {
	const FROM_ANSWER: RawSettings = {
		...GOOD,
		callbackVia: 'fixed',
		correlationIdFrom: 'answer',
		correlationIdInAnswer: 'body.envelopeId',
	};
	const answer = (body: unknown, headers: Record<string, string> = {}): PartnerAnswer => ({
		status: 201,
		headers,
		body,
	});
	async function answerRefusal(expression: string, partnerAnswer: PartnerAnswer) {
		const { answerIdPath } = validateSettings({
			...FROM_ANSWER,
			correlationIdInAnswer: expression,
		});
		const error = await correlationIdFromAnswer(answerIdPath!, partnerAnswer).catch(
			(e: unknown) => e as { name: string; field: string; message: string },
		);
		expect(error).toMatchObject({ name: 'ConfigError', field: 'correlationIdInAnswer' });
		return (error as Error).message;
	}

	it("defaults to this node's value; reads the id from the answer's body, headers or status, text or a number", async () => {
		expect(validateSettings({ ...GOOD, callbackVia: 'fixed' }).answerIdPath).toBeUndefined();
		const { answerIdPath } = validateSettings(FROM_ANSWER);
		expect(answerIdPath?.expression).toBe('body.envelopeId');
		await expect(
			correlationIdFromAnswer(answerIdPath!, answer({ envelopeId: 'env-42' })),
		).resolves.toBe('env-42');
		await expect(correlationIdFromAnswer(answerIdPath!, answer({ envelopeId: 42 }))).resolves.toBe(
			'42',
		);
		const fromHeader = validateSettings({
			...FROM_ANSWER,
			correlationIdInAnswer: 'status = 201 ? headers.`x-envelope-id`',
		}).answerIdPath!;
		await expect(
			correlationIdFromAnswer(fromHeader, answer('accepted', { 'x-envelope-id': 'env-7' })),
		).resolves.toBe('env-7');
	});

	it('refuses an answer that gives no id, naming the field, the expression, what it gave and the answer', async () => {
		await expect(answerRefusal('body.envelopeId', answer({ accepted: true }))).resolves.toBe(
			'Invalid value "body.envelopeId" for "«correlationIdInAnswer»": gave nothing in the partner\'s answer (HTTP 201, body {"accepted":true}); it must give the partner\'s id for the request, text or a number',
		);
		await expect(
			answerRefusal('body.envelope', answer({ envelope: { id: 'env-1' } })),
		).resolves.toContain('gave {"id":"env-1"} in the partner\'s answer');
		await expect(answerRefusal('body.envelopeId', answer({ envelopeId: '' }))).resolves.toContain(
			'gave "" in',
		);
		await expect(answerRefusal('body.ids', answer({ ids: ['a', 'b'] }))).resolves.toContain(
			'gave ["a","b"] in',
		);
		await expect(answerRefusal('body.id', answer({ id: 'x'.repeat(256) }))).resolves.toContain(
			'gave an id 256 characters long',
		);
		await expect(answerRefusal('$number(body.id)', answer({ id: 'abc' }))).resolves.toMatch(
			/^Invalid value "\$number\(body.id\)" for "«correlationIdInAnswer»": failed in the partner's answer/,
		);
	});

	it('refuses the setting where no answer could find the run, and an expression that is no JSONata, before anything is sent', () => {
		for (const where of [{ callbackVia: 'perWait' }, { mode: 'waitOnly', correlationId: 'x' }])
			expect(refusal({ ...FROM_ANSWER, ...where })).toEqual({
				field: 'correlationIdFrom',
				message: expect.stringMatching(
					/^Invalid value "answer" for "«correlationIdFrom»": can be "The Partner's Answer" only in Send and Wait mode with Callback URL "Fixed"/,
				),
			});
		expect(refusal({ ...FROM_ANSWER, correlationIdFrom: 'guess' }).field).toBe('correlationIdFrom');
		expect(refusal({ ...FROM_ANSWER, correlationIdInAnswer: '' })).toEqual({
			field: 'correlationIdInAnswer',
			message: expect.stringContaining('Invalid value "" for "«correlationIdInAnswer»"'),
		});
		expect(refusal({ ...FROM_ANSWER, correlationIdInAnswer: 'body.[' })).toEqual({
			field: 'correlationIdInAnswer',
			message: expect.stringContaining('not a valid JSONata expression'),
		});
	});
});

describe('checkCallbackBinding', () => {
	const hmac = { scheme: 'hmac', secret: 's' } as const;
	const waitOnly = (correlationIdPath: string) =>
		validateSettings({ ...GOOD, mode: 'waitOnly', correlationIdPath });

	it.each(['headers.`x-order`', 'query.order', '$.headers.id', '$$.query.id'])(
		'refuses %s in Wait Only mode with HMAC: the signature names no wait and covers no header or query',
		(path) => {
			expect(() => checkCallbackBinding(waitOnly(path), hmac)).toThrow(
				expect.objectContaining({
					name: 'ConfigError',
					field: 'correlationIdPath',
					message: expect.stringContaining('must read the body in Wait Only mode'),
				}),
			);
		},
	);

	it('accepts a location that may read the body, another scheme, or Send and Wait (the wait id is signed)', () => {
		for (const path of ['body.correlationId', 'headers.`x-order` ? headers.`x-order` : body.order'])
			expect(() => checkCallbackBinding(waitOnly(path), hmac)).not.toThrow();
		const headerPath = waitOnly('headers.`x-order`');
		expect(() => checkCallbackBinding(headerPath, { scheme: 'header', token: 't' })).not.toThrow();
		expect(() =>
			checkCallbackBinding(
				validateSettings({ ...GOOD, correlationIdPath: 'headers.`x-order`' }),
				hmac,
			),
		).not.toThrow();
	});
});
