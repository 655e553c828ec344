import { FakeClock } from '../../test/support/fakeClock';
import { compileCorrelationPath, judgeCallback } from './correlation';
import {
	authenticateAtFixedUrl,
	correlationIdAtFixedUrl,
	EARLY_CALLBACK_RETRY_MS,
	type FoundWait,
	fixedMatchValue,
	forwardHeaders,
	forwardRequest,
	forwardUrl,
	headersToKeep,
	isRetryableAtFixedUrl,
	pickWaitingRun,
	withPartnerQuery,
} from './fixedUrl';
import { ReplayMemory } from './replay';
import { type CallbackAuth, signPayload, signStandardWebhook } from './signature';

const SECRET = 'fixed-url-secret';
const HMAC: CallbackAuth = { scheme: 'hmac', secret: SECRET };
const SW_SECRET = `whsec_${Buffer.from('fixed-url-standard-webhooks-key').toString('base64')}`;
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

/** How the run waiting as wait-41 for order-7 (HMAC) judges a callback with these headers and BODY. */
async function judgedByWait41(clock: FakeClock, headers: Record<string, string>) {
	return await judgeCallback(
		{
			auth: HMAC,
			correlationPath: PATH,
			expectedCorrelationId: 'order-7',
			wait: {
				waitId: 'wait-41',
				startedAtMs: clock.now() - 1_000,
				deadlineMs: clock.now() + 60_000,
			},
			replay: new ReplayMemory(),
		},
		{ headers, rawBody: BODY, body: JSON.parse(BODY), query: { rtw: 'wait-41' } },
		clock.now(),
	);
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

	test("the waiting run's callback URL, with the partner's query (not n8n's signature, not the wait id)", () => {
		const url = new URL(
			forwardUrl(found, FIXED_URL, { order: '7', signature: 'x', rtw: 'other' }) ?? '',
		);
		expect(url.pathname).toBe('/webhook-waiting/41');
		expect(url.searchParams.getAll('signature')).toEqual(['tok']);
		expect(url.searchParams.getAll('rtw')).toEqual(['wait-41']);
		expect(url.searchParams.get('order')).toBe('7');
	});

	test('refuses a URL of another host or another execution: a planted value sends nothing elsewhere', () => {
		const elsewhere = { ...found, callbackUrl: 'http://attacker.example/webhook-waiting/41' };
		expect(forwardUrl(elsewhere, FIXED_URL, {})).toBeUndefined();
		expect(forwardUrl({ ...found, executionId: '42' }, FIXED_URL, {})).toBeUndefined();
		expect(forwardUrl({ ...found, callbackUrl: 'not a url' }, FIXED_URL, {})).toBeUndefined();
	});
});

describe('forwardHeaders', () => {
	test('a forwarded HMAC callback passes the waiting run’s own judgement (signed for its wait id)', async () => {
		const clock = new FakeClock();
		const partner = partnerCallback(clock, BODY, { 'x-partner-event': 'envelope-signed' });
		const headers = forwardHeaders(HMAC, partner.headers, CALLBACK_URL, BODY, clock.now() / 1000);
		expect(headers['x-partner-event']).toBe('envelope-signed');
		const judged = await judgedByWait41(clock, headers);
		expect(judged.ok).toBe(true);
		// The partner's own signature (no wait id) would not: the run's checks are not bypassed.
		expect((await judgedByWait41(clock, partner.headers)).ok).toBe(false);
	});

	test('Standard Webhooks: the partner message id is kept, its signature replaced; hop headers dropped', () => {
		const auth: CallbackAuth = { scheme: 'standardWebhooks', secret: SW_SECRET };
		const partner: Record<string, string> = {
			...signStandardWebhook(SW_SECRET, 'msg_1', 1_700_000_000, BODY),
			host: 'n8n.local',
			'content-length': '44',
		};
		const headers = forwardHeaders(auth, partner, CALLBACK_URL, BODY, 1_700_000_005);
		expect(headers['webhook-id']).toBe('msg_1');
		expect(headers['webhook-timestamp']).toBe('1700000005');
		expect(headers['webhook-signature']).not.toBe(partner['webhook-signature']);
		expect(headers.host).toBeUndefined();
		expect(headers['content-length']).toBeUndefined();
	});
});

describe('headersToKeep and forwardRequest (a kept callback)', () => {
	test('a kept callback holds no credential; forwarded later with its query, it passes the waiting run’s judgement', async () => {
		const clock = new FakeClock();
		const partner = partnerCallback(clock, BODY, {
			'x-partner-event': 'envelope-signed',
			host: 'h',
		});
		const kept = headersToKeep(HMAC, partner.headers);
		expect(kept).toEqual({ 'x-partner-event': 'envelope-signed' });
		const basic: CallbackAuth = { scheme: 'basic', user: 'u', password: 'p' };
		expect(headersToKeep(basic, { authorization: 'Basic dTpw', 'x-a': '1' })).toEqual({
			'x-a': '1',
		});
		const sw: CallbackAuth = { scheme: 'standardWebhooks', secret: SW_SECRET };
		expect(headersToKeep(sw, signStandardWebhook(SW_SECRET, 'msg_1', 1_700_000_000, BODY))).toEqual(
			{
				'webhook-id': 'msg_1',
			},
		);

		await clock.advance(120_000); // claimed two minutes later: signed anew at that moment
		const url = withPartnerQuery(CALLBACK_URL, { account: 'acme', signature: 'x', rtw: 'other' });
		expect(url).toBe(`${CALLBACK_URL}&account=acme`);
		const request = forwardRequest(HMAC, url, { headers: kept, rawBody: BODY }, clock.now() / 1000);
		expect(request).toMatchObject({ method: 'POST', url, body: BODY });
		const judged = await judgedByWait41(clock, request.headers!);
		expect(judged.ok).toBe(true);
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
