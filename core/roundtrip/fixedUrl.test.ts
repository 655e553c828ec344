import { FakeClock } from '../../test/support/fakeClock';
import { compileCorrelationPath, judgeCallback } from './correlation';
import {
	authenticateAtFixedUrl,
	correlationIdAtFixedUrl,
	EARLY_CALLBACK_RETRY_MS,
	type FoundWait,
	fixedMatchValue,
	forwardRequest,
	forwardUrl,
	isRetryableAtFixedUrl,
	pickWaitingRun,
	provenRuns,
} from './fixedUrl';
import { FORWARD_HEADER, matchProof } from './proof';
import { ReplayMemory } from './replay';
import { type CallbackAuth, signPayload } from './signature';

const SECRET = 'fixed-url-secret';
const HMAC: CallbackAuth = { scheme: 'hmac', secret: SECRET };
const BODY = JSON.stringify({ correlationId: 'order-7', status: 'signed' });
const FIXED_URL = 'http://n8n.local:5678/webhook/round-trip/partner';
const CALLBACK_URL = 'http://n8n.local:5678/webhook-waiting/41?signature=tok&rtw=wait-41';
const PATH = compileCorrelationPath('body.correlationId');

function partnerCallback(clock: FakeClock, body = BODY, headers: Record<string, string> = {}) {
	const t = Math.floor(clock.now() / 1000);
	return {
		headers: { 'x-signature': signPayload(SECRET, body, t), ...headers },
		rawBody: body,
		body: JSON.parse(body) as unknown,
		query: {},
	};
}

describe('fixedMatchValue', () => {
	test('names the partner (its credential) and its id, so two partners with one id never meet', () => {
		expect(fixedMatchValue('cred1', 'order-7')).toBe('cred1:order-7');
		expect(fixedMatchValue('cred2', 'order-7')).not.toBe(fixedMatchValue('cred1', 'order-7'));
	});
});

describe('authenticateAtFixedUrl', () => {
	test('accepts the partner signature over "<t>..<body>" within the tolerance of now', async () => {
		const clock = new FakeClock();
		const callback = partnerCallback(clock);
		expect(authenticateAtFixedUrl(HMAC, callback, clock.now()).ok).toBe(true);
		await clock.advance(299_000);
		expect(authenticateAtFixedUrl(HMAC, callback, clock.now()).ok).toBe(true);
		await clock.advance(2_000);
		expect(authenticateAtFixedUrl(HMAC, callback, clock.now())).toMatchObject({
			ok: false,
			status: 403,
		});
	});

	test('refuses a wrong secret (403) and a missing signature (401) before any id is read', () => {
		const clock = new FakeClock();
		const forged = partnerCallback(clock);
		forged.headers['x-signature'] = signPayload('not-the-secret', BODY, clock.now() / 1000);
		expect(authenticateAtFixedUrl(HMAC, forged, clock.now())).toMatchObject({ status: 403 });
		const unsigned = { ...forged, headers: {} };
		expect(authenticateAtFixedUrl(HMAC, unsigned, clock.now())).toMatchObject({ status: 401 });
	});
});

describe('correlationIdAtFixedUrl', () => {
	test('reads the id at the location; under HMAC from the signed body only', async () => {
		const clock = new FakeClock();
		const callback = partnerCallback(clock, BODY, { 'x-order': 'order-9' });
		await expect(correlationIdAtFixedUrl(HMAC, PATH, callback)).resolves.toEqual({
			ok: true,
			id: 'order-7',
		});
		const header = compileCorrelationPath('headers.`x-order`');
		await expect(correlationIdAtFixedUrl(HMAC, header, callback)).resolves.toEqual({
			ok: false,
			status: 409,
			reason: 'no correlation id at headers.`x-order` (read from the signed body only)',
		});
		const token: CallbackAuth = { scheme: 'header', token: 't' };
		await expect(correlationIdAtFixedUrl(token, header, callback)).resolves.toEqual({
			ok: true,
			id: 'order-9',
		});
	});
});

describe('pickWaitingRun', () => {
	test('the oldest waiting run with a callback URL, by numeric execution id', () => {
		expect(
			pickWaitingRun([
				{ executionId: '100', status: 'waiting', callbackUrl: 'u100' },
				{ executionId: '99', status: 'waiting', callbackUrl: 'u99' },
				{ executionId: '98', status: 'success', callbackUrl: 'u98' },
			]),
		).toEqual({ ok: true, executionId: '99', callbackUrl: 'u99' });
	});

	test('410 when runs for the id exist but none waits (resumed, timed out, ended), 404 when none does', () => {
		expect(pickWaitingRun([{ executionId: '5', status: 'running' }])).toMatchObject({
			ok: false,
			status: 410,
		});
		expect(pickWaitingRun([])).toMatchObject({ ok: false, status: 404 });
	});
});

describe('forwardUrl', () => {
	const found: FoundWait = { ok: true, executionId: '41', callbackUrl: CALLBACK_URL };

	test("the waiting run's callback URL as it wrote it", () => {
		expect(forwardUrl(found, FIXED_URL)).toBe(CALLBACK_URL);
	});

	test('refuses a URL of another host or another execution: a planted value sends nothing elsewhere', () => {
		const elsewhere = { ...found, callbackUrl: 'http://attacker.example/webhook-waiting/41' };
		expect(forwardUrl(elsewhere, FIXED_URL)).toBeUndefined();
		expect(forwardUrl({ ...found, executionId: '42' }, FIXED_URL)).toBeUndefined();
		expect(forwardUrl({ ...found, callbackUrl: 'not a url' }, FIXED_URL)).toBeUndefined();
	});
});

describe('provenRuns (issue 45: custom data any workflow can write is no proof)', () => {
	const fields = {
		credentialId: 'cred1',
		correlationId: 'order-7',
		executionId: '41',
		callbackUrl: CALLBACK_URL,
	};
	const genuine = {
		executionId: '41',
		status: 'waiting',
		callbackUrl: CALLBACK_URL,
		matchProof: matchProof(HMAC, fields),
	};

	test('only a run whose match proof was made with this credential for its own execution and URL is proven', () => {
		const planted = {
			executionId: '40',
			status: 'waiting',
			callbackUrl: 'http://n8n.local:5678/webhook-waiting/40?signature=s',
		};
		const copied = { ...planted, matchProof: genuine.matchProof };
		const otherSecret = {
			...planted,
			matchProof: matchProof(
				{ scheme: 'hmac', secret: 'another secret' },
				{ ...fields, executionId: '40', callbackUrl: planted.callbackUrl },
			),
		};
		const otherUrl = { ...genuine, callbackUrl: `${CALLBACK_URL}&x=1` };
		const { proven, unproven } = provenRuns(HMAC, 'cred1', 'order-7', [
			planted,
			copied,
			otherSecret,
			genuine,
			otherUrl,
		]);
		expect(proven).toEqual([genuine]);
		expect(unproven).toHaveLength(4);
		// A planted older run neither gets the callback nor turns it into a 410.
		expect(pickWaitingRun(proven)).toEqual({
			ok: true,
			executionId: '41',
			callbackUrl: CALLBACK_URL,
		});
		expect(pickWaitingRun(provenRuns(HMAC, 'cred1', 'order-7', [planted]).proven)).toMatchObject({
			status: 404,
		});
		// Under another credential (a copy with the same secret but another id), the proof does not hold.
		expect(provenRuns(HMAC, 'cred2', 'order-7', [genuine]).proven).toEqual([]);
	});
});

describe('forwardRequest (issue 45: a proof for the wait, never the partner secret)', () => {
	const TOKEN: CallbackAuth = {
		scheme: 'header',
		token: 'partner-token-xyz',
		headerName: 'x-partner-token',
	};
	const BASIC: CallbackAuth = {
		scheme: 'basic',
		user: 'partner',
		password: 'partner-password-xyz',
	};
	const partner = {
		headers: {
			'content-type': 'application/json',
			'x-partner-event': 'envelope-signed',
			host: 'n8n.example.com',
		},
		query: { account: 'acme' },
		body: BODY,
		address: '203.0.113.7',
	};
	const target = { executionId: '41', correlationId: 'order-7' };

	async function judgedByWait41(
		auth: CallbackAuth,
		clock: FakeClock,
		request: ReturnType<typeof forwardRequest>,
		executionId = '41',
	) {
		return await judgeCallback(
			{
				auth,
				correlationPath: PATH,
				expectedCorrelationId: 'order-7',
				wait: {
					waitId: 'wait-41',
					startedAtMs: clock.now() - 1_000,
					deadlineMs: clock.now() + 60_000,
				},
				replay: new ReplayMemory(),
				executionId,
			},
			{
				headers: { ...request.headers, host: '127.0.0.1:5678', connection: 'close' },
				rawBody: String(request.body),
				body: JSON.parse(String(request.body)),
				query: Object.fromEntries(new URL(request.url).searchParams),
			},
			clock.now(),
		);
	}

	test.each([
		['header token', TOKEN, 'partner-token-xyz'],
		['basic auth', BASIC, 'partner-password-xyz'],
		['HMAC', HMAC, SECRET],
	])(
		'%s: the forward carries no secret, and the waiting run accepts it with the partner request as received',
		async (_, auth, secret) => {
			const clock = new FakeClock();
			const request = forwardRequest(auth, CALLBACK_URL, partner, target, clock.now() / 1000);
			const sent = JSON.stringify(request);
			expect(sent).not.toContain(secret);
			expect(sent).not.toContain(Buffer.from(`partner:${secret}`).toString('base64'));
			expect(Object.keys(request.headers!).sort()).toEqual(['content-type', FORWARD_HEADER]);
			const judged = await judgedByWait41(auth, clock, request);
			expect(judged).toMatchObject({
				ok: true,
				receipt: {
					correlationId: 'order-7',
					headers: partner.headers,
					query: partner.query,
					address: '203.0.113.7',
				},
			});
		},
	);

	test('refused by another execution, another wait, another id, another credential, when altered or stale', async () => {
		const clock = new FakeClock();
		const request = forwardRequest(TOKEN, CALLBACK_URL, partner, target, clock.now() / 1000);
		expect(await judgedByWait41(TOKEN, clock, request, '42')).toMatchObject({
			ok: false,
			status: 403,
		});
		const otherWait = forwardRequest(
			TOKEN,
			CALLBACK_URL.replace('wait-41', 'wait-9'),
			partner,
			target,
			clock.now() / 1000,
		);
		expect(await judgedByWait41(TOKEN, clock, { ...otherWait, url: CALLBACK_URL })).toMatchObject({
			ok: false,
			status: 403,
		});
		const otherId = forwardRequest(
			TOKEN,
			CALLBACK_URL,
			partner,
			{ ...target, correlationId: 'order-8' },
			clock.now() / 1000,
		);
		expect(await judgedByWait41(TOKEN, clock, otherId)).toMatchObject({ ok: false, status: 403 });
		const otherCredential = forwardRequest(
			{ ...TOKEN, token: 'another' },
			CALLBACK_URL,
			partner,
			target,
			clock.now() / 1000,
		);
		expect(await judgedByWait41(TOKEN, clock, otherCredential)).toMatchObject({
			ok: false,
			status: 403,
		});
		const altered = { ...request, body: BODY.replace('signed', 'declined') };
		expect(await judgedByWait41(TOKEN, clock, altered)).toMatchObject({ ok: false, status: 403 });
		// A workflow that knows the format but not the secret: the partner's token as the forward key is no key.
		await clock.advance(301_000);
		expect(await judgedByWait41(TOKEN, clock, request)).toMatchObject({ ok: false, status: 403 });
	});

	test("the fixed URL's own refusal names what is signed there, not a wait id", () => {
		const clock = new FakeClock();
		const forged = partnerCallback(clock);
		forged.headers['x-signature'] = signPayload('not-the-secret', BODY, clock.now() / 1000);
		const refused = authenticateAtFixedUrl(HMAC, forged, clock.now());
		expect(refused).toMatchObject({ status: 403 });
		expect(!refused.ok && refused.reason).not.toContain("this wait's id");
		expect(!refused.ok && refused.reason).toContain('"<t>..<body>"');
	});
});

describe('isRetryableAtFixedUrl (the early-callback bound)', () => {
	test('a 404 is retried until EARLY_CALLBACK_RETRY_MS after the first attempt, then the partner is done', async () => {
		const clock = new FakeClock();
		const first = clock.now();
		expect(isRetryableAtFixedUrl(404, '', first, clock.now())).toBe(true);
		await clock.advance(EARLY_CALLBACK_RETRY_MS - 1);
		expect(isRetryableAtFixedUrl(404, '', first, clock.now())).toBe(true);
		await clock.advance(1);
		expect(isRetryableAtFixedUrl(404, '', first, clock.now())).toBe(false);
	});

	test('410 and 401/403 never; 5xx, 429 and "running already" as at a per-wait URL', () => {
		const now = Date.UTC(2026, 0, 1);
		for (const status of [410, 401, 403, 200, 202])
			expect(isRetryableAtFixedUrl(status, '', now, now)).toBe(false);
		for (const status of [500, 503, 429])
			expect(isRetryableAtFixedUrl(status, '', now, now)).toBe(true);
		expect(isRetryableAtFixedUrl(409, 'The execution "4" is running already.', now, now)).toBe(
			true,
		);
	});
});
