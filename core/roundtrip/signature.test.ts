import { ConfigError } from '../configError';
import { FakeClock } from '../../test/support/fakeClock';
import {
	type CallbackAuth,
	type CallbackHeaders,
	constantTimeEqual,
	credentialHeaderName,
	type WaitBinding,
	STANDARD_WEBHOOK_HEADERS,
	signPayload,
	signStandardWebhook,
	waitIdOf,
	validateCallbackAuth,
	verifyCallback,
} from './signature';

const NOW_MS = Date.UTC(2026, 0, 1, 12, 0, 0);
const NOW_SEC = NOW_MS / 1000;
const SECRET = 'whsec_test_secret';
const BODY = '{"correlationId":"abc-123","status":"done"}';
const HMAC: CallbackAuth = { scheme: 'hmac', secret: SECRET };
const WAIT_ID = 'w4it-1d';
const SW_VECTOR = 'e0GDcQlhheP63C+A8rdjwW6Xe1X9erxqjhT0DKh4Qlc=';
/** The wait began ten minutes before now, so the tolerance checks below are not affected by it. */
const WAIT: WaitBinding = { waitId: WAIT_ID, startedAtMs: NOW_MS - 600_000 };

function hmacRequest(signature: string | string[] | undefined, rawBody: Buffer | string = BODY) {
	return { headers: { 'x-signature': signature }, rawBody };
}

function basicHeader(user: string, password: string): string {
	return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

describe('constantTimeEqual', () => {
	it('is true only for identical inputs, strings or buffers', () => {
		expect(constantTimeEqual('secret', 'secret')).toBe(true);
		expect(constantTimeEqual(Buffer.from('secret'), 'secret')).toBe(true);
		expect(constantTimeEqual('secret', 'secreT')).toBe(false);
	});

	it('handles unequal lengths without throwing', () => {
		expect(constantTimeEqual('short', 'a much longer value')).toBe(false);
		expect(constantTimeEqual('', 'x')).toBe(false);
		expect(constantTimeEqual(Buffer.alloc(0), Buffer.alloc(64))).toBe(false);
	});
});

describe('signPayload', () => {
	it('produces t=<seconds>,v2=<64 hex chars>', () => {
		expect(signPayload(SECRET, BODY, NOW_SEC, WAIT_ID)).toMatch(
			new RegExp(`^t=${NOW_SEC},v2=[0-9a-f]{64}$`),
		);
	});

	it('signs "<t>.<wait id>.<rawBody>" with HMAC-SHA256 (known vector)', () => {
		// Independently computed: printf '1700000000.w4it-1d.hello' | openssl dgst -sha256 -hmac key
		expect(signPayload('key', 'hello', 1_700_000_000, WAIT_ID)).toBe(
			't=1700000000,v2=a8db0f4ef6afcbb16f68f63d935698988e21e48f83273b4fa6d5b24e889d7e72',
		);
	});

	it('gives the same signature for a string body and its UTF-8 bytes', () => {
		const body = '{"name":"Zoë ✓"}';
		expect(signPayload(SECRET, Buffer.from(body, 'utf8'), NOW_SEC, WAIT_ID)).toBe(
			signPayload(SECRET, body, NOW_SEC, WAIT_ID),
		);
	});

	it('rejects a timestamp that is not whole non-negative seconds', () => {
		expect(() => signPayload(SECRET, BODY, NOW_MS / 1000 + 0.5, WAIT_ID)).toThrow(RangeError);
		expect(() => signPayload(SECRET, BODY, -1, WAIT_ID)).toThrow(RangeError);
	});
});

describe('verifyCallback: hmac', () => {
	it('accepts a valid signature', () => {
		expect(
			verifyCallback(HMAC, hmacRequest(signPayload(SECRET, BODY, NOW_SEC, WAIT_ID)), NOW_MS, WAIT),
		).toMatchObject({ ok: true });
	});

	it('accepts a Buffer raw body with non-UTF-8 bytes', () => {
		const raw = Buffer.from([0xff, 0x00, 0xfe, 0x7b]);
		expect(
			verifyCallback(
				HMAC,
				hmacRequest(signPayload(SECRET, raw, NOW_SEC, WAIT_ID), raw),
				NOW_MS,
				WAIT,
			),
		).toMatchObject({ ok: true });
	});

	it('refuses a signature made with another secret (403)', () => {
		const verdict = verifyCallback(
			HMAC,
			hmacRequest(signPayload('wrong-secret', BODY, NOW_SEC, WAIT_ID)),
			NOW_MS,
			WAIT,
		);
		expect(verdict).toEqual({
			ok: false,
			status: 403,
			reason: "x-signature signature does not match the body, timestamp and this wait's id",
		});
	});

	it('refuses a tampered body (403)', () => {
		const signature = signPayload(SECRET, BODY, NOW_SEC, WAIT_ID);
		const tampered = BODY.replace('abc-123', 'abc-124');
		expect(verifyCallback(HMAC, hmacRequest(signature, tampered), NOW_MS, WAIT)).toMatchObject({
			ok: false,
			status: 403,
		});
	});

	it('refuses a signature whose timestamp was swapped (403)', () => {
		const [, digest] = signPayload(SECRET, BODY, NOW_SEC - 10, WAIT_ID).split(',');
		expect(verifyCallback(HMAC, hmacRequest(`t=${NOW_SEC},${digest}`), NOW_MS, WAIT)).toMatchObject(
			{ ok: false, status: 403 },
		);
	});

	it('accepts timestamps at the edge of the tolerance window', () => {
		for (const skew of [-300, 300]) {
			const signature = signPayload(SECRET, BODY, NOW_SEC + skew, WAIT_ID);
			expect(verifyCallback(HMAC, hmacRequest(signature), NOW_MS, WAIT)).toMatchObject({
				ok: true,
			});
		}
	});

	it('refuses a timestamp too far in the past as stale, saying by how much (403)', () => {
		const verdict = verifyCallback(
			HMAC,
			hmacRequest(signPayload(SECRET, BODY, NOW_SEC - 412, WAIT_ID)),
			NOW_MS,
			WAIT,
		);
		expect(verdict).toEqual({
			ok: false,
			status: 403,
			reason:
				'x-signature timestamp is stale: 412 s in the past, 112 s outside the 300 s tolerance',
		});
	});

	it('refuses a timestamp too far in the future (403)', () => {
		const verdict = verifyCallback(
			HMAC,
			hmacRequest(signPayload(SECRET, BODY, NOW_SEC + 301, WAIT_ID)),
			NOW_MS,
			WAIT,
		);
		expect(verdict).toEqual({
			ok: false,
			status: 403,
			reason:
				'x-signature timestamp is stale: 301 s in the future, 1 s outside the 300 s tolerance',
		});
	});

	it('honours a configured tolerance', () => {
		const auth: CallbackAuth = { ...HMAC, toleranceSec: 30 };
		expect(
			verifyCallback(
				auth,
				hmacRequest(signPayload(SECRET, BODY, NOW_SEC - 30, WAIT_ID)),
				NOW_MS,
				WAIT,
			),
		).toMatchObject({ ok: true });
		expect(
			verifyCallback(
				auth,
				hmacRequest(signPayload(SECRET, BODY, NOW_SEC - 31, WAIT_ID)),
				NOW_MS,
				WAIT,
			),
		).toMatchObject({
			status: 403,
			reason: expect.stringContaining('1 s outside the 30 s tolerance'),
		});
	});

	it('accepts rotation: several v2 entries, one made with the current secret', () => {
		const stale = signPayload('previous-secret', BODY, NOW_SEC, WAIT_ID).split(',')[1];
		const current = signPayload(SECRET, BODY, NOW_SEC, WAIT_ID).split(',')[1];
		expect(
			verifyCallback(HMAC, hmacRequest(`t=${NOW_SEC},${stale},${current}`), NOW_MS, WAIT),
		).toMatchObject({ ok: true });
		expect(
			verifyCallback(HMAC, hmacRequest(`t=${NOW_SEC},${current},${stale}`), NOW_MS, WAIT),
		).toMatchObject({ ok: true });
	});

	it('refuses when no v2 entry matches (403)', () => {
		const first = signPayload('old-1', BODY, NOW_SEC, WAIT_ID).split(',')[1];
		const second = signPayload('old-2', BODY, NOW_SEC, WAIT_ID).split(',')[1];
		expect(
			verifyCallback(HMAC, hmacRequest(`t=${NOW_SEC},${first},${second}`), NOW_MS, WAIT),
		).toMatchObject({ status: 403 });
	});

	it('ignores unknown schemes such as v0 and tolerates spaces after commas', () => {
		const digest = signPayload(SECRET, BODY, NOW_SEC, WAIT_ID).split(',')[1];
		expect(
			verifyCallback(HMAC, hmacRequest(`t=${NOW_SEC}, v0=deadbeef, ${digest}`), NOW_MS, WAIT),
		).toMatchObject({ ok: true });
	});

	it('accepts an upper-case hex digest', () => {
		const [t, digest] = signPayload(SECRET, BODY, NOW_SEC, WAIT_ID).split(',');
		expect(
			verifyCallback(
				HMAC,
				hmacRequest(`${t},v2=${digest.slice('v2='.length).toUpperCase()}`),
				NOW_MS,
				WAIT,
			),
		).toMatchObject({ ok: true });
	});

	describe('malformed or missing header → 401 naming the header', () => {
		const digest = signPayload(SECRET, BODY, NOW_SEC, WAIT_ID).split(',')[1];
		const cases: Array<[string, string | string[] | undefined, string]> = [
			['missing header', undefined, 'missing x-signature header'],
			['empty header', '', 'missing x-signature header'],
			['blank header', '   ', 'missing x-signature header'],
			['missing t', digest, 'malformed x-signature header: no t= timestamp'],
			['missing v2', `t=${NOW_SEC}`, 'malformed x-signature header: no v2= signature'],
			[
				'non-numeric t',
				`t=soon,${digest}`,
				'malformed x-signature header: t= must be a Unix time in whole seconds',
			],
			[
				'fractional t',
				`t=${NOW_SEC}.5,${digest}`,
				'malformed x-signature header: t= must be a Unix time in whole seconds',
			],
			[
				'millisecond-scale t',
				`t=${NOW_MS},${digest}`,
				'malformed x-signature header: t= must be a Unix time in whole seconds',
			],
			[
				'duplicate t',
				`t=${NOW_SEC},t=${NOW_SEC},${digest}`,
				'malformed x-signature header: t= appears more than once',
			],
			[
				'v2 not hex',
				`t=${NOW_SEC},v2=not-a-digest`,
				'malformed x-signature header: v2= must be a 64-character hex HMAC-SHA256 digest',
			],
			[
				'v2 truncated',
				`t=${NOW_SEC},${digest.slice(0, -2)}`,
				'malformed x-signature header: v2= must be a 64-character hex HMAC-SHA256 digest',
			],
			[
				'garbage',
				'garbage',
				'malformed x-signature header: expected comma-separated key=value pairs like t=<unix seconds>,v2=<hex>',
			],
			[
				'trailing comma',
				`t=${NOW_SEC},${digest},`,
				'malformed x-signature header: expected comma-separated key=value pairs like t=<unix seconds>,v2=<hex>',
			],
			[
				'bare signature',
				digest.slice(3),
				'malformed x-signature header: expected comma-separated key=value pairs like t=<unix seconds>,v2=<hex>',
			],
			[
				'array of two values',
				[`t=${NOW_SEC},${digest}`, `t=${NOW_SEC},${digest}`],
				'multiple x-signature headers; send exactly one',
			],
			['empty array', [], 'missing x-signature header'],
		];
		it.each(cases)('%s', (_label, header, reason) => {
			expect(verifyCallback(HMAC, hmacRequest(header), NOW_MS, WAIT)).toEqual({
				ok: false,
				status: 401,
				reason,
			});
		});
	});

	it('finds the header whatever the case of its name', () => {
		const signature = signPayload(SECRET, BODY, NOW_SEC, WAIT_ID);
		expect(
			verifyCallback(HMAC, { headers: { 'X-Signature': signature }, rawBody: BODY }, NOW_MS, WAIT),
		).toMatchObject({ ok: true });
		const custom: CallbackAuth = { ...HMAC, signatureHeader: 'X-Acme-Signature' };
		expect(
			verifyCallback(
				custom,
				{ headers: { 'x-acme-signature': signature }, rawBody: BODY },
				NOW_MS,
				WAIT,
			),
		).toMatchObject({ ok: true });
	});

	it('accepts a single-element array header', () => {
		expect(
			verifyCallback(
				HMAC,
				hmacRequest([signPayload(SECRET, BODY, NOW_SEC, WAIT_ID)]),
				NOW_MS,
				WAIT,
			),
		).toMatchObject({ ok: true });
	});

	it('refuses the same header sent twice under different cases (401)', () => {
		const signature = signPayload(SECRET, BODY, NOW_SEC, WAIT_ID);
		const headers: CallbackHeaders = { 'x-signature': signature, 'X-Signature': signature };
		expect(verifyCallback(HMAC, { headers, rawBody: BODY }, NOW_MS, WAIT)).toMatchObject({
			status: 401,
			reason: 'multiple x-signature headers; send exactly one',
		});
	});

	it('names a configured header in its refusals', () => {
		const auth: CallbackAuth = { ...HMAC, signatureHeader: 'X-Acme-Signature' };
		expect(
			verifyCallback(auth, hmacRequest(signPayload(SECRET, BODY, NOW_SEC, WAIT_ID)), NOW_MS, WAIT),
		).toEqual({
			ok: false,
			status: 401,
			reason: 'missing x-acme-signature header',
		});
	});
});

describe('verifyCallback: hmac, bound to its wait', () => {
	it('refuses a signature made for another wait of the same execution (403)', () => {
		const other = signPayload(SECRET, BODY, NOW_SEC, 'an-earlier-wait');
		expect(verifyCallback(HMAC, hmacRequest(other), NOW_MS, WAIT)).toEqual({
			ok: false,
			status: 403,
			reason: "x-signature signature does not match the body, timestamp and this wait's id",
		});
	});

	it('refuses a genuine signature made more than the tolerance before the wait began (403)', () => {
		// n8n's clocks may differ (a queue-mode worker began the wait, a webhook process judges it).
		const wait: WaitBinding = { waitId: WAIT_ID, startedAtMs: NOW_MS + 10_000 };
		expect(
			verifyCallback(
				HMAC,
				hmacRequest(signPayload(SECRET, BODY, NOW_SEC + 10 - 301, WAIT_ID)),
				NOW_MS,
				wait,
			),
		).toEqual({
			ok: false,
			status: 403,
			reason:
				'x-signature timestamp is 301 s before this wait began, more than the 300 s tolerance: the callback was signed for something else',
		});
	});

	it('names what makes the callback unique and until when a copy could pass', () => {
		const verdict = verifyCallback(
			HMAC,
			hmacRequest(signPayload(SECRET, BODY, NOW_SEC - 5, WAIT_ID)),
			NOW_MS,
			WAIT,
		);
		expect(verdict).toEqual({
			ok: true,
			replayKey: expect.stringMatching(/^hmac:\d+:[0-9a-f]{64}$/),
			replayUntilMs: (NOW_SEC - 5 + 301) * 1000,
		});
	});

	it('explains that v1 (unbound) signatures are no longer accepted (401)', () => {
		const v1 = `t=${NOW_SEC},v1=${'a'.repeat(64)}`;
		expect(verifyCallback(HMAC, hmacRequest(v1), NOW_MS, WAIT)).toMatchObject({
			status: 401,
			reason: expect.stringContaining('v1= signatures ("<t>.<body>") are no longer accepted'),
		});
	});

	it('reads the wait id from a callback URL', () => {
		expect(waitIdOf('http://n8n.local/webhook-waiting/12?signature=abc&rtw=w4it-1d')).toBe(
			'w4it-1d',
		);
		expect(waitIdOf('http://n8n.local/webhook-waiting/12?signature=abc')).toBe('');
	});
});

describe("verifyCallback: a partner whose clock is behind n8n's", () => {
	// The wait began 100 ms into a second (n8n's clock); the partner calls back at once, 50 ms later.
	const BEGAN_MS = NOW_MS + 100;
	const wait: WaitBinding = { waitId: WAIT_ID, startedAtMs: BEGAN_MS };
	const clock = new FakeClock(BEGAN_MS + 50);
	/** The second the partner's clock shows when n8n's shows `clock.now()`. */
	const partnerSec = (behindMs: number) => Math.floor((clock.now() - behindMs) / 1000);
	const SW_SECRET = `whsec_${Buffer.from('0123456789abcdefghijklmn').toString('base64')}`;
	const schemes: Array<[string, CallbackAuth, (t: number) => CallbackHeaders]> = [
		['hmac', HMAC, (t) => ({ 'x-signature': signPayload(SECRET, BODY, t, WAIT_ID) })],
		[
			'Standard Webhooks',
			{ scheme: 'standardWebhooks', secret: SW_SECRET },
			(t) => signStandardWebhook(SW_SECRET, 'msg_skew', t, BODY),
		],
	];

	describe.each(schemes)('%s', (_scheme, auth, sign) => {
		it.each([300, 1_500, 299_000])(
			'accepts a callback signed at once by a partner %i ms behind',
			(behindMs) => {
				const t = partnerSec(behindMs);
				expect(t).toBeLessThan(Math.floor(BEGAN_MS / 1000)); // signed "before" the wait began, by n8n's clock
				expect(
					verifyCallback(auth, { headers: sign(t), rawBody: BODY }, clock.now(), wait),
				).toMatchObject({ ok: true });
			},
		);

		it('refuses one from a partner beyond the tolerance behind (403)', () => {
			const t = partnerSec(301_000);
			expect(
				verifyCallback(auth, { headers: sign(t), rawBody: BODY }, clock.now(), wait),
			).toMatchObject({ ok: false, status: 403, reason: expect.stringContaining('stale') });
		});
	});

	it('still refuses an hmac signature made for wait A presented to wait B, within the skew (403)', () => {
		const waitA: WaitBinding = { waitId: 'wait-a', startedAtMs: BEGAN_MS - 1_000 };
		const waitB: WaitBinding = { waitId: 'wait-b', startedAtMs: BEGAN_MS };
		const forA = { 'x-signature': signPayload(SECRET, BODY, partnerSec(300), waitA.waitId) };
		expect(
			verifyCallback(HMAC, { headers: forA, rawBody: BODY }, clock.now(), waitA),
		).toMatchObject({ ok: true });
		expect(verifyCallback(HMAC, { headers: forA, rawBody: BODY }, clock.now(), waitB)).toEqual({
			ok: false,
			status: 403,
			reason: "x-signature signature does not match the body, timestamp and this wait's id",
		});
	});
});

describe('verifyCallback: Standard Webhooks', () => {
	// 24 random bytes, base64: the shape the standard prescribes.
	const SW_SECRET = `whsec_${Buffer.from('0123456789abcdefghijklmn').toString('base64')}`;
	const SW: CallbackAuth = { scheme: 'standardWebhooks', secret: SW_SECRET };
	const request = (headers: CallbackHeaders, rawBody: string = BODY) => ({ headers, rawBody });

	it('signs "<id>.<t>.<body>" with the decoded secret, base64, as v1 (known vector)', () => {
		// Independently computed: printf 'msg_1.1700000000.hello' | openssl dgst -sha256 -mac HMAC -macopt key:0123456789abcdefghijklmn -binary | base64
		expect(signStandardWebhook(SW_SECRET, 'msg_1', 1_700_000_000, 'hello')).toEqual({
			'webhook-id': 'msg_1',
			'webhook-timestamp': '1700000000',
			'webhook-signature': `v1,${SW_VECTOR}`,
		});
	});

	it('accepts a valid callback and remembers it by its webhook-id', () => {
		expect(
			verifyCallback(
				SW,
				request(signStandardWebhook(SW_SECRET, 'msg_1', NOW_SEC, BODY)),
				NOW_MS,
				WAIT,
			),
		).toEqual({
			ok: true,
			replayKey: 'sw:msg_1',
			replayUntilMs: (NOW_SEC + 301) * 1000,
		});
	});

	it('accepts one matching entry among several (rotation) and skips other versions', () => {
		const good = signStandardWebhook(SW_SECRET, 'msg_1', NOW_SEC, BODY);
		const headers = {
			...good,
			'webhook-signature': `v1a,c29tZXRoaW5n v1,${Buffer.alloc(32).toString('base64')} ${good['webhook-signature']}`,
		};
		expect(verifyCallback(SW, request(headers), NOW_MS, WAIT)).toMatchObject({ ok: true });
	});

	it.each<[string, (h: Record<string, string>) => Record<string, string>, string]>([
		['another body', (h) => h, 'body'],
		['another id', (h) => ({ ...h, 'webhook-id': 'msg_2' }), 'id'],
		['another timestamp', (h) => ({ ...h, 'webhook-timestamp': String(NOW_SEC - 1) }), 'timestamp'],
	])('refuses a signature that does not cover %s (403)', (_label, change, what) => {
		const headers = change(signStandardWebhook(SW_SECRET, 'msg_1', NOW_SEC, BODY));
		const body = what === 'body' ? BODY.replace('done', 'undone') : BODY;
		expect(verifyCallback(SW, request(headers, body), NOW_MS, WAIT)).toEqual({
			ok: false,
			status: 403,
			reason: 'webhook-signature does not match the webhook-id, timestamp and body',
		});
	});

	it('refuses stale timestamps (403)', () => {
		expect(
			verifyCallback(
				SW,
				request(signStandardWebhook(SW_SECRET, 'm', NOW_SEC - 400, BODY)),
				NOW_MS,
				WAIT,
			),
		).toMatchObject({
			status: 403,
			reason: expect.stringContaining('webhook-timestamp timestamp is stale'),
		});
	});

	it.each<[string, CallbackHeaders, string]>([
		[
			'no signature',
			{ 'webhook-id': 'm', 'webhook-timestamp': String(NOW_SEC) },
			'missing webhook-signature header',
		],
		[
			'no id',
			{ 'webhook-timestamp': String(NOW_SEC), 'webhook-signature': 'v1,AAAA' },
			'missing webhook-id header',
		],
		[
			'no timestamp',
			{ 'webhook-id': 'm', 'webhook-signature': 'v1,AAAA' },
			'missing webhook-timestamp header',
		],
		[
			'a millisecond timestamp',
			{ 'webhook-id': 'm', 'webhook-timestamp': `${NOW_MS}.5`, 'webhook-signature': 'v1,AAAA' },
			'malformed webhook-timestamp header: must be a Unix time in whole seconds',
		],
		[
			'no v1 entry',
			{ 'webhook-id': 'm', 'webhook-timestamp': String(NOW_SEC), 'webhook-signature': 'v1a,AAAA' },
			'malformed webhook-signature header: no v1,<base64> signature',
		],
		[
			'an entry without a comma',
			{ 'webhook-id': 'm', 'webhook-timestamp': String(NOW_SEC), 'webhook-signature': 'AAAA' },
			'malformed webhook-signature header: expected space-separated entries like v1,<base64>',
		],
	])('refuses %s (401)', (_label, headers, reason) => {
		expect(verifyCallback(SW, request(headers), NOW_MS, WAIT)).toEqual({
			ok: false,
			status: 401,
			reason,
		});
	});

	it.each([
		's3cret',
		'whsec_',
		'whsec_%%%',
		`whsec_${Buffer.alloc(8).toString('base64')}`,
		`whsec_${Buffer.alloc(65).toString('base64')}`,
	])('refuses the secret %p, without showing it', (secret) => {
		expect(() => validateCallbackAuth({ scheme: 'standardWebhooks', secret })).toThrow(
			expect.objectContaining({
				field: 'secret',
				message:
					'Invalid value (hidden) for "«roundTripCallbackApi:secret»" in the «roundTripCallbackApi:» credential: must be a Standard Webhooks secret: "whsec_" followed by the base64 of 24 to 64 random bytes',
			}),
		);
	});

	it('keeps the signature header out of receipts', () => {
		expect(credentialHeaderName(SW)).toBe(STANDARD_WEBHOOK_HEADERS.signature);
	});
});

describe('verifyCallback: header token', () => {
	const TOKEN = 'tok_9f8e7d6c';
	const auth: CallbackAuth = { scheme: 'header', token: TOKEN };

	it('accepts the right token', () => {
		expect(
			verifyCallback(auth, { headers: { 'x-callback-token': TOKEN }, rawBody: '' }, NOW_MS, WAIT),
		).toEqual({ ok: true });
	});

	it('refuses a wrong token (403) without echoing either token', () => {
		const verdict = verifyCallback(
			auth,
			{ headers: { 'x-callback-token': 'tok_guess' }, rawBody: '' },
			NOW_MS,
			WAIT,
		);
		expect(verdict).toEqual({
			ok: false,
			status: 403,
			reason: 'x-callback-token header does not match the configured token',
		});
	});

	it('refuses a prefix or extension of the token (403)', () => {
		for (const presented of [TOKEN.slice(0, -1), `${TOKEN}x`]) {
			expect(
				verifyCallback(
					auth,
					{ headers: { 'x-callback-token': presented }, rawBody: '' },
					NOW_MS,
					WAIT,
				),
			).toMatchObject({ status: 403 });
		}
	});

	it('refuses a missing token (401)', () => {
		expect(verifyCallback(auth, { headers: {}, rawBody: '' }, NOW_MS, WAIT)).toEqual({
			ok: false,
			status: 401,
			reason: 'missing x-callback-token header',
		});
	});

	it('uses a configured header name, case-insensitively', () => {
		const custom: CallbackAuth = { scheme: 'header', token: TOKEN, headerName: 'X-Hook-Key' };
		expect(
			verifyCallback(custom, { headers: { 'X-HOOK-KEY': TOKEN }, rawBody: '' }, NOW_MS, WAIT),
		).toEqual({ ok: true });
		expect(
			verifyCallback(custom, { headers: { 'x-callback-token': TOKEN }, rawBody: '' }, NOW_MS, WAIT),
		).toMatchObject({
			status: 401,
			reason: 'missing x-hook-key header',
		});
	});
});

describe('verifyCallback: basic', () => {
	const auth: CallbackAuth = { scheme: 'basic', user: 'acme', password: 'pa:ss word' };
	const request = (authorization: string | undefined) => ({
		headers: { authorization },
		rawBody: '',
	});

	it('accepts the right user and password (password may contain ":")', () => {
		expect(verifyCallback(auth, request(basicHeader('acme', 'pa:ss word')), NOW_MS, WAIT)).toEqual({
			ok: true,
		});
	});

	it('accepts a lower-case scheme and a capitalised header name', () => {
		const value = basicHeader('acme', 'pa:ss word').replace('Basic', 'basic');
		expect(
			verifyCallback(auth, { headers: { Authorization: value }, rawBody: '' }, NOW_MS, WAIT),
		).toEqual({ ok: true });
	});

	it('refuses a wrong password or user (403)', () => {
		for (const header of [basicHeader('acme', 'guess'), basicHeader('other', 'pa:ss word')]) {
			expect(verifyCallback(auth, request(header), NOW_MS, WAIT)).toEqual({
				ok: false,
				status: 403,
				reason: 'basic credentials do not match',
			});
		}
	});

	it('refuses missing credentials (401)', () => {
		expect(verifyCallback(auth, request(undefined), NOW_MS, WAIT)).toEqual({
			ok: false,
			status: 401,
			reason: 'missing authorization header',
		});
	});

	it.each([
		['another scheme', 'Bearer abc'],
		['no credentials after the scheme', 'Basic'],
		['not base64', 'Basic %%%'],
		['no colon in the credentials', `Basic ${Buffer.from('acme').toString('base64')}`],
	])('refuses malformed credentials: %s (401)', (_label, header) => {
		expect(verifyCallback(auth, request(header), NOW_MS, WAIT)).toMatchObject({
			ok: false,
			status: 401,
			reason: expect.stringMatching(/^malformed authorization header: /),
		});
	});
});

describe('refusal reasons never contain a secret', () => {
	const TOKEN = 'tok_super_secret_value';
	const cases: Array<[string, CallbackAuth, CallbackHeaders, string]> = [
		[
			'hmac',
			{ scheme: 'hmac', secret: SECRET },
			{ 'x-signature': signPayload('x', BODY, NOW_SEC, WAIT_ID) },
			SECRET,
		],
		['header', { scheme: 'header', token: TOKEN }, { 'x-callback-token': 'nope' }, TOKEN],
		[
			'basic',
			{ scheme: 'basic', user: 'u', password: 'hunter2-secret' },
			{ authorization: basicHeader('u', 'no') },
			'hunter2-secret',
		],
	];
	it.each(cases)('%s', (_scheme, auth, headers, secret) => {
		const verdict = verifyCallback(auth, { headers, rawBody: BODY }, NOW_MS, WAIT);
		expect(verdict.ok).toBe(false);
		expect(JSON.stringify(verdict)).not.toContain(secret);
	});
});

describe('validateCallbackAuth', () => {
	it.each<[CallbackAuth, string]>([
		[{ scheme: 'hmac', secret: '' }, 'secret'],
		[{ scheme: 'hmac', secret: 's', toleranceSec: 0 }, 'toleranceSec'],
		[{ scheme: 'hmac', secret: 's', toleranceSec: Number.NaN }, 'toleranceSec'],
		[{ scheme: 'hmac', secret: 's', toleranceSec: 86_401 }, 'toleranceSec'],
		[{ scheme: 'hmac', secret: 's', signatureHeader: 'x signature' }, 'signatureHeader'],
		[{ scheme: 'header', token: '' }, 'token'],
		[{ scheme: 'header', token: 't', headerName: '' }, 'headerName'],
		[{ scheme: 'basic', user: '', password: 'p' }, 'user'],
		[{ scheme: 'basic', user: 'a:b', password: 'p' }, 'user'],
		[{ scheme: 'basic', user: 'u', password: '' }, 'password'],
	])('refuses %o (field %s)', (auth, field) => {
		expect(() => validateCallbackAuth(auth)).toThrow(
			expect.objectContaining({
				name: 'ConfigError',
				field,
				credential: 'roundTripCallbackApi',
			}),
		);
	});

	it('names the field as the credential labels it, and its value unless it is a secret', () => {
		expect(() => validateCallbackAuth({ scheme: 'header', token: '' })).toThrow(
			'Invalid value "" for "«roundTripCallbackApi:token»" in the «roundTripCallbackApi:» credential: must not be empty: an empty token authenticates anyone',
		);
		expect(() => validateCallbackAuth({ scheme: 'basic', user: 'a:b', password: 'p' })).toThrow(
			'Invalid value "a:b" for "«roundTripCallbackApi:user»" in the «roundTripCallbackApi:» credential: must not contain ":" (HTTP Basic cannot carry it)',
		);
		expect(() => validateCallbackAuth({ scheme: 'hmac', secret: 's', toleranceSec: 0 })).toThrow(
			'Invalid value 0 for "«roundTripCallbackApi:toleranceSec»" in the «roundTripCallbackApi:» credential: must be more than 0 and at most 86400 seconds',
		);
	});

	it('makes verifyCallback fail closed rather than accept with an empty credential', () => {
		const auth: CallbackAuth = { scheme: 'header', token: '' };
		expect(() =>
			verifyCallback(auth, { headers: { 'x-callback-token': '' }, rawBody: '' }, NOW_MS, WAIT),
		).toThrow(ConfigError);
	});

	it('accepts sensible settings', () => {
		expect(() =>
			validateCallbackAuth({
				scheme: 'hmac',
				secret: 's',
				signatureHeader: 'X-Sig',
				toleranceSec: 60,
			}),
		).not.toThrow();
		expect(() => validateCallbackAuth({ scheme: 'header', token: 't' })).not.toThrow();
		expect(() => validateCallbackAuth({ scheme: 'basic', user: 'u', password: 'p' })).not.toThrow();
	});
});

describe('credentialHeaderName', () => {
	it('is the lower-cased header each scheme reads', () => {
		expect(credentialHeaderName({ scheme: 'hmac', secret: 's' })).toBe('x-signature');
		expect(credentialHeaderName({ scheme: 'hmac', secret: 's', signatureHeader: 'X-Sig' })).toBe(
			'x-sig',
		);
		expect(credentialHeaderName({ scheme: 'header', token: 't' })).toBe('x-callback-token');
		expect(credentialHeaderName({ scheme: 'basic', user: 'u', password: 'p' })).toBe(
			'authorization',
		);
	});
});
