import type { HttpRequest, HttpResponse } from '../connectors/types';
import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import {
	answersAt,
	isRetryableAnswer,
	outboundRequest,
	reportFailure,
	retryDelayMs,
	sendOutbound,
} from './dispatch';
import { judgeNotice } from './correlation';
import type { CallbackAuth } from './signature';
import { NOTICE_HEADER, newWait } from './waitRecord';

const REQUEST = {
	method: 'POST' as const,
	url: 'https://partner.example.com/jobs',
	auth: { kind: 'none' as const },
	body: { order: 7 },
	headers: { 'x-tenant': 'acme' },
	correlationIdField: 'correlationId',
	callbackUrlField: 'callbackUrl',
};
const CALLBACK_URL = 'http://n8n.local/webhook-waiting/9?signature=t&rtw=w';

function transport(answers: Array<Omit<HttpResponse, 'url'> | Error>) {
	const calls: HttpRequest[] = [];
	const http = async (request: HttpRequest): Promise<HttpResponse> => {
		calls.push(request);
		const answer = answers.shift() ?? { status: 200, headers: {}, body: '' };
		if (answer instanceof Error) throw answer;
		return { url: request.url, ...answer };
	};
	return { http, calls };
}

describe('outboundRequest', () => {
	it('adds the correlation id and callback URL to the body and as headers', () => {
		expect(outboundRequest(REQUEST, 'c-1', CALLBACK_URL)).toEqual({
			method: 'POST',
			url: REQUEST.url,
			headers: { 'x-tenant': 'acme', 'x-correlation-id': 'c-1', 'x-callback-url': CALLBACK_URL },
			body: { order: 7, correlationId: 'c-1', callbackUrl: CALLBACK_URL },
		});
	});

	it('leaves the body as written when the field names are empty, and sends no body with GET', () => {
		expect(
			outboundRequest(
				{ ...REQUEST, correlationIdField: '', callbackUrlField: '' },
				'c',
				CALLBACK_URL,
			).body,
		).toEqual({ order: 7 });
		expect(outboundRequest({ ...REQUEST, method: 'GET' }, 'c', CALLBACK_URL).body).toBeUndefined();
	});
});

describe('sendOutbound', () => {
	it('returns the acknowledgement with its headers, parsed when it is JSON', async () => {
		const { http } = transport([
			{ status: 202, headers: { 'x-envelope-id': 'env-1' }, body: '{"job":1}' },
		]);
		expect(await sendOutbound(http, outboundRequest(REQUEST, 'c', CALLBACK_URL))).toEqual({
			ok: true,
			status: 202,
			headers: { 'x-envelope-id': 'env-1' },
			body: { job: 1 },
		});
	});

	it('makes a non-2xx answer or a transport error a failure naming the request', async () => {
		const { http } = transport([
			{ status: 500, headers: {}, body: 'boom' },
			new Error('ECONNREFUSED'),
		]);
		expect(await sendOutbound(http, outboundRequest(REQUEST, 'c', CALLBACK_URL))).toEqual({
			ok: false,
			message:
				'POST https://partner.example.com/jobs answered HTTP 500; the request was not accepted, so the run does not wait',
			description: 'boom',
		});
		expect(await sendOutbound(http, outboundRequest(REQUEST, 'c', CALLBACK_URL))).toMatchObject({
			ok: false,
			message: expect.stringContaining('failed: ECONNREFUSED'),
		});
	});
});

describe('retry contract', () => {
	it('backs off from 0.5 s, doubling, to at most 30 s', () => {
		expect([0, 1, 2, 3, 4, 5, 6, 7].map(retryDelayMs)).toEqual([
			500, 1000, 2000, 4000, 8000, 16000, 30000, 30000,
		]);
	});

	it.each<[number, string, boolean]>([
		[409, '{"code":409,"message":"The execution \\"12\\" is running already."}', true],
		[409, '{"code":409,"message":"The execution \\"12 has finished already."}', false],
		[409, '{"error":"correlation id ... does not match this waiting run","waiting":true}', false],
		[500, '', true],
		[503, '', true],
		[429, '', true],
		[403, '', false],
		[410, '', false],
		[200, '', false],
	])('%i %s → retry %p', (status, body, retry) => {
		expect(isRetryableAnswer(status, body)).toBe(retry);
	});
});

describe('reportFailure', () => {
	const record = newWait('c-1', Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 2), true);
	const AUTH: CallbackAuth = { scheme: 'hmac', secret: 's3cret' };
	const callbackUrl = `http://n8n.local/webhook-waiting/9?signature=t&rtw=${record.waitId}`;

	it.each<CallbackAuth>([
		AUTH,
		{ scheme: 'standardWebhooks', secret: `whsec_${Buffer.alloc(32, 5).toString('base64')}` },
		{ scheme: 'header', token: 'tok' },
		{ scheme: 'basic', user: 'u', password: 'p' },
	])('posts a notice that passes the callback checks of its wait ($scheme)', async (auth) => {
		const clock = new FakeClock(Date.UTC(2026, 0, 1, 6));
		const { http, calls } = transport([{ status: 200, headers: {}, body: '{}' }]);
		expect(
			await reportFailure(
				http,
				callbackUrl,
				record,
				{ requestFailed: 'POST x answered HTTP 500' },
				auth,
				clock,
			),
		).toBe(200);
		expect(calls).toHaveLength(1);
		const [call] = calls;
		expect(call.url).toBe(callbackUrl);
		const headers = call.headers!;
		const inbound = {
			headers,
			rawBody: String(call.body),
			body: JSON.parse(String(call.body)),
			query: { rtw: record.waitId },
		};
		expect(
			judgeNotice({ auth, wait: record }, inbound, headers[NOTICE_HEADER], clock.now()),
		).toEqual({
			ok: true,
		});
		// Without the credential's headers, the same notice fails no run.
		const bare = { ...inbound, headers: { [NOTICE_HEADER]: headers[NOTICE_HEADER] } };
		expect(
			judgeNotice({ auth, wait: record }, bare, headers[NOTICE_HEADER], clock.now()),
		).toMatchObject({ ok: false, status: 401 });
	});

	it('retries while n8n is still saving the wait, with the contract backoff', async () => {
		const clock = new FakeClock();
		const running = { status: 409, headers: {}, body: 'The execution "9" is running already.' };
		const { http, calls } = transport([
			running,
			new Error('socket hang up'),
			{ status: 200, headers: {}, body: '' },
		]);
		let result: number | undefined | 'pending' = 'pending';
		void reportFailure(http, CALLBACK_URL, record, { requestFailed: 'x' }, AUTH, clock).then(
			(status) => (result = status),
		);
		await flushPromises();
		expect(calls).toHaveLength(1);
		await clock.advance(499);
		expect(calls).toHaveLength(1);
		await clock.advance(1);
		expect(calls).toHaveLength(2);
		await clock.advance(1000);
		expect(calls).toHaveLength(3);
		expect(result).toBe(200);
	});

	it('gives up after its attempts', async () => {
		const clock = new FakeClock();
		const { http, calls } = transport(
			Array.from({ length: 10 }, () => ({ status: 503, headers: {}, body: '' })),
		);
		let result: number | undefined | 'pending' = 'pending';
		void reportFailure(http, CALLBACK_URL, record, { requestFailed: 'x' }, AUTH, clock, 3).then(
			(status) => (result = status),
		);
		await flushPromises();
		await clock.advance(10_000);
		expect(calls).toHaveLength(3);
		expect(result).toBe(503);
	});
});

describe('answersAt: whether the node can reach its own callback URL', () => {
	it("takes any HTTP answer for yes (n8n's 409 for a run not waiting yet), a transport failure for no", async () => {
		const answered = transport([{ status: 409, headers: {}, body: 'is running already' }]);
		expect(await answersAt(answered.http, CALLBACK_URL)).toBe(true);
		expect(answered.calls).toEqual([
			expect.objectContaining({ method: 'GET', url: CALLBACK_URL, timeoutMs: 10_000 }),
		]);
		const refused = transport([new Error('connect ECONNREFUSED 127.0.0.1:1')]);
		expect(await answersAt(refused.http, CALLBACK_URL)).toBe(false);
	});
});
