import { signPayload, waitIdOf } from '../../core/roundtrip/signature';
import { callWebhook, executeNode, type NodeSetup } from '../../test/nodeContext';
import { RoundTripWait } from './RoundTripWait.node';

/*
 * The Round-Trip Wait run in-process through n8n-core's ExecuteContext (beginning the wait) and
 * WebhookContext (its resume URL called), test/nodeContext.ts: what the node answers each callback,
 * on the custom data it stored when it began waiting. n8n's part (saving the wait, resuming the run
 * once, the resume URL's token, restarts) is in test/e2e/roundTripWait.test.ts.
 */

const SECRET = 'round-trip-in-process-secret';

function setup(parameters: Record<string, unknown> = {}): NodeSetup {
	return {
		parameters: { mode: 'waitOnly', timeoutAmount: 1, timeoutUnit: 'hours', ...parameters },
		credentials: {
			roundTripCallbackApi: {
				scheme: 'hmac',
				secret: SECRET,
				signatureHeader: 'x-signature',
				toleranceSec: 300,
			},
		},
	};
}

describe('Round-Trip Wait node (n8n-core ExecuteContext and WebhookContext)', () => {
	async function beginWait() {
		const run = await executeNode(RoundTripWait, setup());
		const waiting = run.output[0][0].json as { correlationId: string; callbackUrl: string };
		const url = new URL(waiting.callbackUrl);
		const call = (body: unknown, headers: Record<string, string> = {}) =>
			callWebhook(
				RoundTripWait,
				setup(),
				{
					headers: { 'content-type': 'application/json', ...headers },
					query: Object.fromEntries(url.searchParams),
					rawBody: JSON.stringify(body),
				},
				run,
			);
		const signature = (body: unknown, secret = SECRET, at = Math.floor(Date.now() / 1000)) => ({
			'x-signature': signPayload(secret, JSON.stringify(body), at, waitIdOf(waiting.callbackUrl)),
		});
		return { run, waiting, call, signature };
	}

	it('begins the wait: the run waits until the deadline, its correlation id in custom data, a timeout leaving by Timed Out', async () => {
		const { run, waiting } = await beginWait();
		expect(run.output[0][0].json).toMatchObject({ waiting: true, callbackMethod: 'POST' });
		expect(run.customData.correlationId).toBe(waiting.correlationId);
		expect(run.waitTill?.toISOString()).toBe(run.output[0][0].json.deadline);
		expect(run.executeData.data.main[1]?.[0].json).toMatchObject({
			timedOut: true,
			correlationId: waiting.correlationId,
		});
	});

	it('forged, stale and mismatched callbacks are refused (the run keeps waiting); a valid one resumes it with its receipt', async () => {
		const { waiting, call, signature } = await beginWait();
		const { correlationId } = waiting;

		const unauthenticated = await call({ correlationId });
		expect([unauthenticated.status, unauthenticated.result]).toEqual([
			401,
			{ noWebhookResponse: true },
		]);
		expect(unauthenticated.body).toMatchObject({ waiting: true });

		const badSignature = await call(
			{ correlationId },
			signature({ correlationId }, 'not-the-secret'),
		);
		expect(badSignature.status).toBe(403);

		const stale = await call(
			{ correlationId },
			signature({ correlationId }, SECRET, Math.floor(Date.now() / 1000) - 3600),
		);
		expect(stale.status).toBe(403);
		expect(JSON.stringify(stale.body)).toContain('tolerance');

		const mismatched = await call(
			{ correlationId: 'someone-else' },
			signature({ correlationId: 'someone-else' }),
		);
		expect(mismatched.status).toBe(409);
		expect(JSON.stringify(mismatched.body)).not.toContain(correlationId);

		const body = { correlationId, status: 'approved' };
		const accepted = await call(body, signature(body));
		expect(accepted.status).toBeUndefined(); // n8n answers once the run has resumed
		expect(accepted.result.webhookResponse).toEqual({ received: true });
		const receipt = accepted.result.workflowData?.[0][0].json as Record<string, unknown>;
		expect(receipt).toMatchObject({ correlationId, body });
		expect(receipt.headers).not.toHaveProperty('x-signature');
		expect(receipt.query).not.toHaveProperty('signature');
		expect(accepted.result.workflowData?.[1]).toEqual([]);
	});

	it("Wait Only, the id in an unsigned header: wait A's signed callback resent to wait B with B's id is refused, B keeps waiting; each genuine callback resumes its own wait", async () => {
		// A partner that sends the id in a header and in the body it signs; the location prefers the header.
		const parameters = {
			correlationIdPath: 'headers.`x-order` ? headers.`x-order` : body.order',
		};
		const begin = async (correlationId: string) => {
			const run = await executeNode(RoundTripWait, setup({ ...parameters, correlationId }));
			const { callbackUrl } = run.output[0][0].json as { callbackUrl: string };
			return (order: string, rawBody: string, signature: string) =>
				callWebhook(
					RoundTripWait,
					setup(parameters),
					{
						headers: {
							'content-type': 'application/json',
							'x-order': order,
							'x-signature': signature,
						},
						query: Object.fromEntries(new URL(callbackUrl).searchParams),
						rawBody,
					},
					run,
				);
		};
		const signed = (order: string) => {
			const rawBody = JSON.stringify({ order, status: `done-${order}` });
			return [rawBody, signPayload(SECRET, rawBody, Math.floor(Date.now() / 1000))] as const;
		};
		const a = await begin('order-A');
		const b = await begin('order-B');
		const forA = signed('order-A');

		const accepted = await a('order-A', ...forA);
		expect(accepted.result.workflowData?.[0][0].json).toMatchObject({
			correlationId: 'order-A',
			body: { order: 'order-A' },
		});
		const replayed = await b('order-B', ...forA);
		expect(replayed.result.workflowData).toBeUndefined();
		expect(replayed.body).toMatchObject({ waiting: true });
		const genuine = await b('order-B', ...signed('order-B'));
		expect(genuine.result.workflowData?.[0][0].json).toMatchObject({
			correlationId: 'order-B',
			body: { order: 'order-B' },
		});
	});

	it('a callback its Resume Condition does not match is answered 202 and resumes nothing; a matching one resumes', async () => {
		const parameters = { correlationId: 'env-7', resumeCondition: 'body.status = "signed"' };
		const run = await executeNode(RoundTripWait, setup(parameters));
		const { callbackUrl } = run.output[0][0].json as { callbackUrl: string };
		const send = (status: string) => {
			const rawBody = JSON.stringify({ correlationId: 'env-7', status });
			const at = Math.floor(Date.now() / 1000);
			return callWebhook(
				RoundTripWait,
				setup(parameters),
				{
					headers: { 'x-signature': signPayload(SECRET, rawBody, at, waitIdOf(callbackUrl)) },
					query: Object.fromEntries(new URL(callbackUrl).searchParams),
					rawBody,
				},
				run,
			);
		};
		const viewed = await send('viewed');
		expect([viewed.status, viewed.result.workflowData]).toEqual([202, undefined]);
		expect(viewed.body).toMatchObject({ resumed: false, waiting: true });
		expect(JSON.stringify(viewed.body)).toContain('body.status = \\"signed\\" is false');
		const signed = await send('signed');
		expect(signed.result.workflowData?.[0][0].json).toMatchObject({ body: { status: 'signed' } });
	});

	it('Callback URL "Fixed" keeps the partner (credential) with its id and the callback URL in custom data', async () => {
		const run = await executeNode(
			RoundTripWait,
			setup({ callbackVia: 'fixed', correlationId: 'env-9' }),
		);
		const { callbackUrl } = run.output[0][0].json as { callbackUrl: string };
		expect(run.customData).toMatchObject({
			roundTripMatch: 'cred-roundTripCallbackApi:env-9',
			roundTripCallbackUrl: callbackUrl,
			correlationId: 'env-9',
		});
	});

	it('Wait Only with HMAC and the correlation id located in a header fails the node before the run waits', async () => {
		const error = await executeNode(
			RoundTripWait,
			setup({ correlationIdPath: 'headers.`x-order`' }),
		).catch((e: unknown) => e);
		expect((error as Error).message).toMatch(
			/^Invalid value "headers.`x-order`" for "Correlation ID Location": must read the body in Wait Only mode/,
		);
	});

	it('a bad Response Code fails the node with a message naming the field and value', async () => {
		const error = await executeNode(RoundTripWait, setup({ responseCode: 999 })).catch(
			(e: unknown) => e,
		);
		expect((error as Error).message).toBe(
			'Invalid value 999 for "Response Code": must be a whole number from 200 to 299: it answers the callback that resumed the run, a success',
		);
	});
});
