import {
	type CallbackParts,
	type InboundCallback,
	type WaitingRun,
	DEFAULT_CORRELATION_PATH,
	compileCorrelationPath,
	judgeCallback,
	judgeNotice,
	matchCorrelation,
	newCorrelationId,
	normalizeCorrelationId,
} from './correlation';
import { type ExecutionReplayLog, ReplayMemory } from './replay';
import { signPayload, signStandardWebhook } from './signature';
import type { WaitState } from './timeout';
import { newWait, signNotice } from './waitRecord';

const NOW_MS = Date.UTC(2026, 0, 1, 12, 0, 0);
const NOW_SEC = NOW_MS / 1000;
const SECRET = 'whsec_test_secret';
const EXPECTED_ID = 'a1b2c3d4-0000-4000-8000-000000000001';

function parts(overrides: Partial<CallbackParts> = {}): CallbackParts {
	return { body: {}, headers: {}, query: {}, ...overrides };
}

describe('newCorrelationId', () => {
	it('returns a fresh UUID each time', () => {
		const first = newCorrelationId();
		expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect(newCorrelationId()).not.toBe(first);
	});
});

describe('normalizeCorrelationId', () => {
	it.each<[unknown, string | undefined]>([
		['abc', 'abc'],
		[42, '42'],
		[0, '0'],
		[4.5, '4.5'],
		['', undefined],
		[Number.NaN, undefined],
		[Number.POSITIVE_INFINITY, undefined],
		[null, undefined],
		[undefined, undefined],
		[true, undefined],
		[['a'], undefined],
		[{ id: 'a' }, undefined],
	])('%p → %p', (value, expected) => {
		expect(normalizeCorrelationId(value)).toBe(expected);
	});
});

describe('compileCorrelationPath', () => {
	it('defaults to body.correlationId', () => {
		expect(compileCorrelationPath().expression).toBe(DEFAULT_CORRELATION_PATH);
		expect(DEFAULT_CORRELATION_PATH).toBe('body.correlationId');
	});

	// validateSettings reports these naming the parameter (settings.test.ts).
	it("throws JSONata's error on a syntax error", () => {
		expect(() => compileCorrelationPath('body.(')).toThrow(/^Expected /);
	});

	it('refuses an empty expression', () => {
		expect(() => compileCorrelationPath('')).toThrow();
	});
});

describe('matchCorrelation', () => {
	const bodyPath = compileCorrelationPath();

	it('finds the id in the body', async () => {
		expect(
			await matchCorrelation(
				EXPECTED_ID,
				parts({ body: { correlationId: EXPECTED_ID } }),
				bodyPath,
			),
		).toEqual({
			ok: true,
			received: EXPECTED_ID,
		});
	});

	it('finds the id in a nested body field', async () => {
		const path = compileCorrelationPath('body.meta.request.id');
		const callback = parts({ body: { meta: { request: { id: EXPECTED_ID } } } });
		expect(await matchCorrelation(EXPECTED_ID, callback, path)).toMatchObject({ ok: true });
	});

	it('finds the id in a header', async () => {
		const path = compileCorrelationPath('headers.`x-correlation-id`');
		const callback = parts({ headers: { 'x-correlation-id': EXPECTED_ID } });
		expect(await matchCorrelation(EXPECTED_ID, callback, path)).toEqual({
			ok: true,
			received: EXPECTED_ID,
		});
	});

	it('finds the id in the query string', async () => {
		const path = compileCorrelationPath('query.cid');
		expect(
			await matchCorrelation(EXPECTED_ID, parts({ query: { cid: EXPECTED_ID } }), path),
		).toEqual({ ok: true, received: EXPECTED_ID });
	});

	it('compares numeric ids as strings, both ways', async () => {
		expect(
			await matchCorrelation('1042', parts({ body: { correlationId: 1042 } }), bodyPath),
		).toEqual({ ok: true, received: '1042' });
		const queryPath = compileCorrelationPath('query.cid');
		expect(
			await matchCorrelation('1042', parts({ query: { cid: '1042' } }), queryPath),
		).toMatchObject({ ok: true });
	});

	it('refuses a callback without an id (409), naming where it looked', async () => {
		expect(
			await matchCorrelation(EXPECTED_ID, parts({ body: { status: 'done' } }), bodyPath),
		).toEqual({
			ok: false,
			status: 409,
			reason: 'no correlation id at body.correlationId',
		});
	});

	it.each<[string, unknown, string]>([
		['an empty string', '', ' (found a string, expected a string or number)'],
		['null', null, ' (found null, expected a string or number)'],
		['an object', { id: EXPECTED_ID }, ' (found an object, expected a string or number)'],
		['several values', [EXPECTED_ID, 'other'], ' (found 2 values, expected a string or number)'],
	])('refuses %s where the id should be (409)', async (_label, correlationId, detail) => {
		expect(
			await matchCorrelation(EXPECTED_ID, parts({ body: { correlationId } }), bodyPath),
		).toEqual({
			ok: false,
			status: 409,
			reason: `no correlation id at body.correlationId${detail}`,
		});
	});

	it('refuses a different id (409), echoing only the received id', async () => {
		const verdict = await matchCorrelation(
			EXPECTED_ID,
			parts({ body: { correlationId: 'someone-else' } }),
			bodyPath,
		);
		expect(verdict).toEqual({
			ok: false,
			status: 409,
			reason: 'correlation id "someone-else" at body.correlationId does not match this waiting run',
		});
		expect(JSON.stringify(verdict)).not.toContain(EXPECTED_ID);
	});

	it('truncates a huge received id in the reason', async () => {
		const verdict = await matchCorrelation(
			EXPECTED_ID,
			parts({ body: { correlationId: 'x'.repeat(10_000) } }),
			bodyPath,
		);
		expect(verdict.ok).toBe(false);
		expect(!verdict.ok && verdict.reason.length).toBeLessThan(250);
	});

	it('treats an expression that fails on this data as no id (409)', async () => {
		const path = compileCorrelationPath('$number(body.correlationId)');
		expect(
			await matchCorrelation(EXPECTED_ID, parts({ body: { correlationId: 'abc' } }), path),
		).toMatchObject({
			ok: false,
			status: 409,
			reason: expect.stringMatching(
				/^no correlation id at \$number\(body\.correlationId\): evaluating it failed/,
			),
		});
	});

	it('throws when the expected id is empty', async () => {
		await expect(
			matchCorrelation('', parts({ body: { correlationId: '' } }), bodyPath),
		).rejects.toThrow('The expected correlation ID is empty');
	});
});

describe('judgeCallback', () => {
	const body = { correlationId: EXPECTED_ID, status: 'done' };
	const rawBody = JSON.stringify(body);
	const WAIT_ID = 'wait-2';
	/** The wait began a minute ago and ends in an hour. */
	const wait: WaitState = {
		waitId: WAIT_ID,
		startedAtMs: NOW_MS - 60_000,
		deadlineMs: NOW_MS + 3_600_000,
	};
	let run: WaitingRun;
	beforeEach(() => {
		run = {
			auth: { scheme: 'hmac', secret: SECRET },
			correlationPath: compileCorrelationPath(),
			expectedCorrelationId: EXPECTED_ID,
			wait,
			replay: new ReplayMemory(100),
		};
	});

	function callback(overrides: Partial<InboundCallback> = {}): InboundCallback {
		return {
			headers: {
				'x-signature': signPayload(SECRET, rawBody, NOW_SEC, WAIT_ID),
				'Content-Type': 'application/json',
			},
			rawBody,
			body,
			query: { source: 'acme', rtw: WAIT_ID },
			...overrides,
		};
	}

	it('accepts an authenticated, correlated callback and returns the receipt', async () => {
		expect(await judgeCallback(run, callback(), NOW_MS)).toEqual({
			ok: true,
			replayKey: expect.stringMatching(/^hmac:/),
			receipt: {
				correlationId: EXPECTED_ID,
				body,
				// Header names lower-cased, credential header dropped; the wait id is not callback data.
				headers: { 'content-type': 'application/json' },
				query: { source: 'acme' },
				receivedAt: '2026-01-01T12:00:00.000Z',
			},
		});
	});

	it('refuses a correctly signed callback for another run (409)', async () => {
		const otherBody = JSON.stringify({ correlationId: 'other-run' });
		const verdict = await judgeCallback(
			run,
			callback({
				rawBody: otherBody,
				body: JSON.parse(otherBody),
				headers: { 'x-signature': signPayload(SECRET, otherBody, NOW_SEC, WAIT_ID) },
			}),
			NOW_MS,
		);
		expect(verdict).toMatchObject({ ok: false, status: 409 });
	});

	it('checks authentication before correlation: missing signature and wrong id → 401, not 409', async () => {
		const verdict = await judgeCallback(
			run,
			callback({ headers: {}, body: { correlationId: 'wrong' } }),
			NOW_MS,
		);
		expect(verdict).toEqual({ ok: false, status: 401, reason: 'missing x-signature header' });
	});

	it('checks authentication before correlation: forged signature and wrong id → 403, not 409', async () => {
		const forged = signPayload('attacker-guess', rawBody, NOW_SEC, WAIT_ID);
		const verdict = await judgeCallback(
			run,
			callback({ headers: { 'x-signature': forged }, body: { correlationId: 'wrong' } }),
			NOW_MS,
		);
		expect(verdict).toMatchObject({ ok: false, status: 403 });
	});

	it('does not evaluate the correlation expression for an unauthenticated callback', async () => {
		const evaluate = jest.fn();
		const spyRun: WaitingRun = {
			...run,
			correlationPath: { expression: 'body.correlationId', evaluate },
		};
		await judgeCallback(spyRun, callback({ headers: {} }), NOW_MS);
		expect(evaluate).not.toHaveBeenCalled();
	});

	it('refuses a replayed callback once its timestamp is stale (403)', async () => {
		const later = NOW_MS + 10 * 60_000;
		expect(await judgeCallback(run, callback(), later)).toMatchObject({
			ok: false,
			status: 403,
			reason: expect.stringContaining('stale'),
		});
	});

	it('lets a copy through to the same wait (n8n resumes a wait once), but refuses it at another wait (403)', async () => {
		// Standard Webhooks signs neither the URL nor the query: two concurrent waits, correlation id in the query.
		const swSecret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
		const headers = signStandardWebhook(swSecret, 'msg_1', NOW_SEC, rawBody);
		const forWait = (id: string): WaitingRun => ({
			...run,
			auth: { scheme: 'standardWebhooks', secret: swSecret },
			correlationPath: compileCorrelationPath('query.cid'),
			expectedCorrelationId: id,
			wait: { ...wait, waitId: `wait-${id}` },
		});
		const a = forWait('A');
		const b = forWait('B');
		expect(
			await judgeCallback(a, callback({ headers, query: { cid: 'A', rtw: 'wait-A' } }), NOW_MS),
		).toMatchObject({ ok: true, replayKey: 'sw:msg_1' });
		// The same wait again: its first delivery did not resume it (or is resuming it now); n8n lets one through.
		expect(
			await judgeCallback(
				a,
				callback({ headers, query: { cid: 'A', rtw: 'wait-A' } }),
				NOW_MS + 1_000,
			),
		).toMatchObject({ ok: true });
		expect(
			await judgeCallback(
				b,
				callback({ headers, query: { cid: 'B', rtw: 'wait-B' } }),
				NOW_MS + 1_000,
			),
		).toEqual({
			ok: false,
			status: 403,
			reason:
				'this signed callback was already accepted by another wait: a copy is not accepted here',
		});
	});

	it("refuses a copy at a later wait of the same execution in another process, by the execution's own log (403)", async () => {
		// Standard Webhooks, both waits of one run expecting the same id in the body: nothing signed tells them apart.
		const swSecret = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;
		const headers = signStandardWebhook(swSecret, 'msg_7', NOW_SEC, rawBody);
		const waitOf = (id: string, log: ExecutionReplayLog): WaitingRun => ({
			...run,
			auth: { scheme: 'standardWebhooks', secret: swSecret },
			wait: { ...wait, waitId: id },
			// Each callback lands on another webhook process: a fresh in-process memory every time.
			replay: new ReplayMemory(100),
			executionReplay: log,
		});
		const log: ExecutionReplayLog = {};
		expect(
			await judgeCallback(
				waitOf('wait-1', log),
				callback({ headers, query: { rtw: 'wait-1' } }),
				NOW_MS,
			),
		).toMatchObject({ ok: true });
		// n8n saves the log with the resume; the next wait reads it back from the execution's data.
		const saved = JSON.parse(JSON.stringify(log)) as ExecutionReplayLog;
		expect(
			await judgeCallback(
				waitOf('wait-2', saved),
				callback({ headers, query: { rtw: 'wait-2' } }),
				NOW_MS + 2_000,
			),
		).toEqual({
			ok: false,
			status: 403,
			reason:
				'this signed callback was already accepted by another wait: a copy is not accepted here',
		});
		// A copy to the wait that accepted it still goes on to n8n (which resumes a wait once).
		expect(
			await judgeCallback(
				waitOf('wait-1', saved),
				callback({ headers, query: { rtw: 'wait-1' } }),
				NOW_MS + 2_000,
			),
		).toMatchObject({ ok: true });
		// Without the log (another execution), only this process's memory could have refused it.
		expect(
			await judgeCallback(
				{ ...waitOf('wait-2', {}), executionReplay: undefined },
				callback({ headers, query: { rtw: 'wait-2' } }),
				NOW_MS + 2_000,
			),
		).toMatchObject({ ok: true });
	});

	it("leaves the execution's log alone for a refused callback, and drops entries that could no longer pass", async () => {
		const log: ExecutionReplayLog = { old: { wait: 'x', until: NOW_MS - 1 } };
		expect(
			await judgeCallback(
				{ ...run, executionReplay: log },
				callback({ body: { correlationId: 'typo' } }),
				NOW_MS,
			),
		).toMatchObject({ status: 409 });
		expect(log).toEqual({ old: { wait: 'x', until: NOW_MS - 1 } });
		expect(await judgeCallback({ ...run, executionReplay: log }, callback(), NOW_MS)).toMatchObject(
			{ ok: true },
		);
		expect(Object.keys(log)).toEqual([expect.stringMatching(/^hmac:/)]);
	});

	it('does not remember a callback it refused, so the partner can fix and resend it', async () => {
		expect(
			await judgeCallback(run, callback({ body: { correlationId: 'typo' } }), NOW_MS),
		).toMatchObject({ status: 409 });
		expect(run.replay.size).toBe(0);
		expect(await judgeCallback(run, callback(), NOW_MS)).toMatchObject({ ok: true });
	});

	it('refuses a callback captured from an earlier wait of the same execution, whatever URL it is sent to (403)', async () => {
		const earlier = signPayload(SECRET, rawBody, NOW_SEC - 120, 'wait-1');
		for (const rtw of ['wait-1', WAIT_ID]) {
			expect(
				await judgeCallback(
					run,
					callback({ headers: { 'x-signature': earlier }, query: { rtw } }),
					NOW_MS,
				),
			).toMatchObject({ ok: false, status: 403 });
		}
	});

	it('refuses a callback whose URL names another wait, even when the scheme cannot sign the URL (403)', async () => {
		const tokenRun: WaitingRun = { ...run, auth: { scheme: 'header', token: 'tok' } };
		const headers = { 'x-callback-token': 'tok' };
		expect(
			await judgeCallback(tokenRun, callback({ headers, query: { rtw: 'wait-1' } }), NOW_MS),
		).toEqual({
			ok: false,
			status: 403,
			reason:
				"the callback URL's rtw does not name this wait: it belongs to another wait of this execution",
		});
		expect(await judgeCallback(tokenRun, callback({ headers, query: {} }), NOW_MS)).toMatchObject({
			status: 403,
		});
		expect(
			await judgeCallback(
				tokenRun,
				callback({ headers, query: { rtw: [WAIT_ID, WAIT_ID] } }),
				NOW_MS,
			),
		).toMatchObject({ status: 403 });
		expect(await judgeCallback(tokenRun, callback({ headers }), NOW_MS)).toMatchObject({
			ok: true,
		});
	});

	it('in Wait Only mode (no wait id) refuses a URL that carries one', async () => {
		const waitOnly: WaitingRun = { ...run, wait: { ...wait, waitId: '' } };
		const headers = { 'x-signature': signPayload(SECRET, rawBody, NOW_SEC) };
		expect(await judgeCallback(waitOnly, callback({ headers, query: {} }), NOW_MS)).toMatchObject({
			ok: true,
		});
		expect(
			await judgeCallback(waitOnly, callback({ headers, query: { rtw: 'x' } }), NOW_MS + 1),
		).toMatchObject({ status: 403 });
	});

	it("in Wait Only mode reads an HMAC callback's correlation id from the signed body only: an id only in a header or the query is refused (409), saying why", async () => {
		// Two genuine callbacks for two waits with one body in one second would be the same signed
		// message: nothing could tell a copy of one, the other's id in a header, from the other.
		const sameBody = JSON.stringify({ status: 'done' });
		const headers = { 'x-signature': signPayload(SECRET, sameBody, NOW_SEC), 'x-order': 'A' };
		for (const path of ['headers.`x-order`', 'query.order']) {
			const waitOnly: WaitingRun = {
				...run,
				correlationPath: compileCorrelationPath(path),
				expectedCorrelationId: 'A',
				wait: { ...wait, waitId: '' },
			};
			const answer = callback({
				headers,
				rawBody: sameBody,
				body: JSON.parse(sameBody),
				query: { order: 'A' },
			});
			expect(await judgeCallback(waitOnly, answer, NOW_MS)).toEqual({
				ok: false,
				status: 409,
				reason: `no correlation id at ${path} (read from the signed body only: in Wait Only mode the HMAC signature names no wait, and headers and the query are not signed)`,
			});
		}
		// A wait id in the signature (Send and Wait) binds the callback: the header may carry the id there.
		const sendAndWait: WaitingRun = {
			...run,
			correlationPath: compileCorrelationPath('headers.`x-order`'),
			expectedCorrelationId: 'A',
		};
		const signed = { 'x-signature': signPayload(SECRET, sameBody, NOW_SEC, WAIT_ID) };
		expect(
			await judgeCallback(
				sendAndWait,
				callback({
					headers: { ...signed, 'x-order': 'A' },
					rawBody: sameBody,
					body: JSON.parse(sameBody),
				}),
				NOW_MS,
			),
		).toMatchObject({ ok: true, receipt: { correlationId: 'A' } });
	});

	it.each([
		['header', 'headers.`x-order` ? headers.`x-order` : body.order'],
		['query', 'query.order ? query.order : body.order'],
	] as const)(
		"in Wait Only mode refuses wait A's signed HMAC callback resent to wait B with B's id in the unsigned %s; each genuine callback resumes its own wait",
		async (where, path) => {
			// One process (one replay memory), two executions (each its own log), one secret.
			const replay = new ReplayMemory(100);
			const waitOnly = (id: string, startedAtMs: number): WaitingRun => ({
				...run,
				correlationPath: compileCorrelationPath(path),
				expectedCorrelationId: id,
				wait: { ...wait, waitId: '', startedAtMs },
				replay,
				executionReplay: {},
			});
			const signedFor = (order: string) => {
				const raw = JSON.stringify({ order, status: `done-${order}` });
				return { raw, signature: signPayload(SECRET, raw, NOW_SEC) };
			};
			/** The signed body and signature of `signed`, the unsigned id `id` in the header or query. */
			const send = (signed: { raw: string; signature: string }, id: string) =>
				callback({
					headers: {
						'x-signature': signed.signature,
						...(where === 'header' ? { 'x-order': id } : {}),
					},
					rawBody: signed.raw,
					body: JSON.parse(signed.raw),
					query: where === 'query' ? { order: id } : {},
				});
			const a = waitOnly('A', NOW_MS - 2_000);
			const b = waitOnly('B', NOW_MS - 1_000);
			const forA = signedFor('A');

			expect(await judgeCallback(a, send(forA, 'A'), NOW_MS)).toMatchObject({
				ok: true,
				receipt: { body: { order: 'A' } },
			});
			// The captured callback for A, within the tolerance, B's id where the signature does not reach.
			expect(await judgeCallback(b, send(forA, 'B'), NOW_MS + 500)).toMatchObject({ ok: false });
			expect(await judgeCallback(b, send(signedFor('B'), 'B'), NOW_MS + 500)).toMatchObject({
				ok: true,
				receipt: { correlationId: 'B', body: { order: 'B' } },
			});
		},
	);

	it('refuses a valid callback that arrives after the deadline as timed out (410), before n8n has acted on it', async () => {
		const late = wait.deadlineMs + 1;
		const headers = {
			'x-signature': signPayload(SECRET, rawBody, Math.floor(late / 1000), WAIT_ID),
		};
		const laterRun: WaitingRun = {
			...run,
			auth: { scheme: 'hmac', secret: SECRET, toleranceSec: 7200 },
		};
		expect(await judgeCallback(laterRun, callback({ headers }), late)).toEqual({
			ok: false,
			status: 410,
			reason: 'the wait timed out at 2026-01-01T13:00:00.000Z; this callback came 1 ms after it',
		});
		expect(await judgeCallback(laterRun, callback({ headers }), wait.deadlineMs)).toMatchObject({
			ok: true,
		});
	});

	it('keeps the credential header from the correlation expression and the receipt (header scheme)', async () => {
		const tokenRun: WaitingRun = {
			...run,
			auth: { scheme: 'header', token: 'tok_secret', headerName: 'X-Hook-Token' },
			correlationPath: compileCorrelationPath('headers.`x-hook-token`'),
			expectedCorrelationId: 'tok_secret',
		};
		const verdict = await judgeCallback(
			tokenRun,
			callback({ headers: { 'X-Hook-Token': 'tok_secret' } }),
			NOW_MS,
		);
		expect(verdict).toEqual({
			ok: false,
			status: 409,
			reason: 'no correlation id at headers.`x-hook-token`',
		});
	});

	it('drops the Authorization header from a basic-auth receipt', async () => {
		const basicRun: WaitingRun = {
			...run,
			auth: { scheme: 'basic', user: 'acme', password: 'pw' },
		};
		const authorization = `Basic ${Buffer.from('acme:pw').toString('base64')}`;
		const verdict = await judgeCallback(
			basicRun,
			callback({ headers: { Authorization: authorization, 'x-request-id': 'r1' } }),
			NOW_MS,
		);
		expect(verdict).toMatchObject({ ok: true, receipt: { headers: { 'x-request-id': 'r1' } } });
		expect(JSON.stringify(verdict)).not.toContain(authorization);
	});

	it('accepts a numeric id from a query-string path', async () => {
		const queryRun: WaitingRun = {
			...run,
			correlationPath: compileCorrelationPath('query.cid'),
			expectedCorrelationId: '77',
		};
		const verdict = await judgeCallback(
			queryRun,
			callback({ query: { cid: '77', rtw: WAIT_ID } }),
			NOW_MS,
		);
		expect(verdict).toMatchObject({
			ok: true,
			receipt: { correlationId: '77', query: { cid: '77' } },
		});
	});
});

describe("judgeNotice: the node's own failure notice passes the callback's checks first", () => {
	const WAIT_ID = 'wait-n';
	const record = {
		...newWait(EXPECTED_ID, NOW_MS - 60_000, NOW_MS + 3_600_000, true),
		waitId: WAIT_ID,
	};
	const auth = { scheme: 'hmac' as const, secret: SECRET };
	const rawBody = JSON.stringify({ requestFailed: 'POST x answered HTTP 500' });
	const notice = signNotice(record, rawBody);
	const signedNow = signPayload(SECRET, rawBody, NOW_SEC, WAIT_ID);
	const request = (headers: Record<string, string>, rtw = WAIT_ID): InboundCallback => ({
		headers,
		rawBody,
		body: JSON.parse(rawBody),
		query: { rtw },
	});

	it('accepts a notice signed with the callback credential for this wait, carrying its notice key', () => {
		expect(
			judgeNotice({ auth, wait: record }, request({ 'x-signature': signedNow }), notice, NOW_MS),
		).toEqual({ ok: true });
	});

	it('refuses the notice key alone, as read from the execution by anyone who can view it (401)', () => {
		expect(judgeNotice({ auth, wait: record }, request({}), notice, NOW_MS)).toEqual({
			ok: false,
			status: 401,
			reason: 'missing x-signature header',
		});
	});

	it('refuses a notice with a forged signature (403)', () => {
		const forged = signPayload('a-guess', rawBody, NOW_SEC, WAIT_ID);
		expect(
			judgeNotice({ auth, wait: record }, request({ 'x-signature': forged }), notice, NOW_MS),
		).toMatchObject({ ok: false, status: 403 });
	});

	it('refuses a notice whose URL names another wait (403), and one after the deadline (410)', () => {
		const tokenAuth = { scheme: 'header' as const, token: 'tok' };
		expect(
			judgeNotice(
				{ auth: tokenAuth, wait: record },
				request({ 'x-callback-token': 'tok' }, 'wait-other'),
				notice,
				NOW_MS,
			),
		).toMatchObject({ ok: false, status: 403, reason: expect.stringContaining('rtw') });
		const late = record.deadlineMs + 1;
		const lateSigned = signPayload(SECRET, rawBody, Math.floor(late / 1000), WAIT_ID);
		expect(
			judgeNotice(
				{ auth: { ...auth, toleranceSec: 7200 }, wait: record },
				request({ 'x-signature': lateSigned }),
				notice,
				late,
			),
		).toMatchObject({ ok: false, status: 410 });
	});

	it('refuses a properly signed callback that carries a wrong notice key (403)', () => {
		expect(
			judgeNotice(
				{ auth, wait: record },
				request({ 'x-signature': signedNow }),
				'f'.repeat(64),
				NOW_MS,
			),
		).toEqual({ ok: false, status: 403, reason: 'x-round-trip-notice does not match this wait' });
	});
});
