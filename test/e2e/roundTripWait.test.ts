import { signPayload } from '../../core/roundtrip/signature';
import { FakeSystem, type RecordedRequest } from '../harness/fakeSystem';
import { type Execution, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { marker, node, PACKAGE, webhookTrigger, workflow } from './workflowBuilder';

const SECRET = 'round-trip-e2e-secret';

describe('Round-Trip Wait in a real n8n', () => {
	let n8n: N8nInstance;
	let partner: FakeSystem;
	let workflowId: string;
	let timeoutWorkflowId: string;
	let failingTimeoutWorkflowId: string;

	beforeAll(async () => {
		partner = await FakeSystem.start();
		partner.on('POST', '/jobs', { status: 202, body: { accepted: true } });
		n8n = await N8nInstance.launch('round-trip');
		const callbackCredential = await n8n.createCredential('Partner signature', 'roundTripCallbackApi', { scheme: 'hmac', secret: SECRET, signatureHeader: 'x-signature', toleranceSec: 300 });
		const credentials = { roundTripCallbackApi: { id: callbackCredential, name: 'Partner signature' } };
		/** Webhook start → Round-Trip Wait → "Accepted" on Callback, "Late" (or the given node) on Timed Out. */
		const roundTripWorkflow = (name: string, path: string, parameters: Record<string, unknown>, late = marker('Late')) =>
			workflow(
				name,
				[webhookTrigger('Start', path), node('Round-Trip Wait', `${PACKAGE}.roundTripWait`, parameters, { credentials }), marker('Accepted'), { ...late, name: 'Late' }],
				[
					['Start', 'Round-Trip Wait'],
					['Round-Trip Wait', 'Accepted', 0],
					['Round-Trip Wait', 'Late', 1],
				],
			);
		workflowId = await n8n.importWorkflow(
			roundTripWorkflow('round trip', 'rt-start', {
				mode: 'sendAndWait',
				method: 'POST',
				url: partner.url('/jobs'),
				body: '={{ JSON.stringify({ order: $json.body.order }) }}',
				timeoutAmount: 1,
				timeoutUnit: 'hours',
			}),
		);
		timeoutWorkflowId = await n8n.importWorkflow(
			roundTripWorkflow('round trip timeout', 'rt-timeout', { mode: 'waitOnly', correlationId: '={{ $json.body.id }}', timeoutAmount: 5, timeoutUnit: 'seconds' }),
		);
		failingTimeoutWorkflowId = await n8n.importWorkflow(
			roundTripWorkflow(
				'round trip timeout fails the run',
				'rt-timeout-fail',
				{ mode: 'waitOnly', correlationId: '={{ $json.body.id }}', timeoutAmount: 5, timeoutUnit: 'seconds' },
				node('Late', 'n8n-nodes-base.stopAndError', { errorMessage: 'No callback in time' }),
			),
		);
		await n8n.publish(workflowId);
		await n8n.publish(timeoutWorkflowId);
		await n8n.publish(failingTimeoutWorkflowId);
	});

	afterAll(async () => {
		await n8n?.stop();
		await partner?.close();
	});

	/** Starts a run through the Webhook trigger and returns the request the node sent to the partner. */
	async function startRoundTrip(order: number): Promise<{ correlationId: string; callbackUrl: string; request: RecordedRequest }> {
		await waitFor('the start webhook to be registered', async () => {
			const response = await fetch(`${n8n.baseUrl}/webhook/rt-start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order }) });
			return response.ok ? true : undefined;
		});
		const request = await partner.nextRequest((r) => r.path === '/jobs' && (r.json as { order?: number })?.order === order);
		const body = request.json as { correlationId: string; callbackUrl: string };
		return { correlationId: body.correlationId, callbackUrl: body.callbackUrl, request };
	}

	function signed(body: unknown, secret = SECRET, at = Math.floor(Date.now() / 1000)) {
		const raw = JSON.stringify(body);
		return { headers: { 'x-signature': signPayload(secret, raw, at) }, body: raw };
	}

	async function executionWaitingFor(correlationId: string): Promise<Execution> {
		return await waitFor(`an execution waiting for ${correlationId}`, async () => {
			const executions = await n8n.executions(workflowId);
			return executions.find((e) => e.status === 'waiting' && JSON.stringify(e.data ?? {}).includes(correlationId));
		});
	}

	async function statusOf(id: string): Promise<Execution['status']> {
		return (await n8n.execution(id)).status;
	}

	test('the outbound request carries the correlation id and the signed resume URL', async () => {
		const { correlationId, callbackUrl, request } = await startRoundTrip(1);
		expect(correlationId).toMatch(/^[0-9a-f-]{36}$/);
		expect(request.headers['x-correlation-id']).toBe(correlationId);
		expect(callbackUrl).toContain('/webhook-waiting/');
		expect(callbackUrl).toContain('signature=');
		await executionWaitingFor(correlationId);
	});

	test('forged, stale and mismatched callbacks are refused and the run keeps waiting; a valid one resumes it', async () => {
		const { correlationId, callbackUrl } = await startRoundTrip(2);
		const waiting = await executionWaitingFor(correlationId);

		const unauthenticated = await partner.send(callbackUrl, { body: { correlationId } });
		expect(unauthenticated.status).toBe(401);
		const badSignature = await partner.send(callbackUrl, signed({ correlationId }, 'not-the-secret'));
		expect(badSignature.status).toBe(403);
		const stale = await partner.send(callbackUrl, signed({ correlationId }, SECRET, Math.floor(Date.now() / 1000) - 3600));
		expect(stale.status).toBe(403);
		expect(stale.body).toContain('tolerance');
		const mismatched = await partner.send(callbackUrl, signed({ correlationId: 'someone-else' }));
		expect(mismatched.status).toBe(409);
		expect(mismatched.body).not.toContain(correlationId);
		expect(await statusOf(waiting.id)).toBe('waiting');

		const accepted = await partner.send(callbackUrl, signed({ correlationId, status: 'approved' }));
		expect(accepted.status).toBe(200);
		expect(accepted.json).toEqual({ received: true });
		const done = await waitFor('the run to finish', async () => {
			const execution = await n8n.execution(waiting.id);
			return execution.status === 'success' ? execution : undefined;
		});
		const [receipt] = nodeOutput(done, 'Accepted');
		expect(receipt).toMatchObject({ correlationId, body: { correlationId, status: 'approved' }, branch: 'Accepted' });
		expect(receipt.headers).not.toHaveProperty('x-signature');
		expect(receipt.query).not.toHaveProperty('signature');
		expect(nodeOutput(done, 'Late')).toEqual([]);

		const again = await partner.send(callbackUrl, signed({ correlationId, status: 'approved' }));
		expect(again.status).toBe(409);
		expect(again.body).toContain('has finished already');
	});

	test('a wait that outlives its timeout leaves through "Timed Out", which a Stop and Error turns into a failed run', async () => {
		const start = async (path: string, id: string) =>
			await waitFor(`the ${path} start webhook`, async () => {
				const response = await fetch(`${n8n.baseUrl}/webhook/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id }) });
				return response.ok ? true : undefined;
			});
		await start('rt-timeout', 'order-timeout-1');
		await start('rt-timeout-fail', 'order-timeout-2');
		// n8n's wait tracker looks for due waits once a minute, so the timeouts land up to a minute late.
		const [timedOut] = await n8n.waitForExecutions(timeoutWorkflowId, (all) => all.some((e) => e.status === 'success'), 'the timed-out run', 150_000);
		const done = await n8n.execution(timedOut.id);
		const [late] = nodeOutput(done, 'Late');
		expect(late).toMatchObject({ correlationId: 'order-timeout-1', timedOut: true, waitedMs: 5000, branch: 'Late' });
		expect(nodeOutput(done, 'Accepted')).toEqual([]);

		const [failing] = await n8n.waitForExecutions(failingTimeoutWorkflowId, (all) => all.some((e) => e.status === 'error'), 'the run failed by its timeout', 150_000);
		const failed = await n8n.execution(failing.id);
		expect(failed.data?.resultData.error?.message).toBe('No callback in time');
		expect(nodeOutput(failed, 'Round-Trip Wait', 1)).toEqual([expect.objectContaining({ correlationId: 'order-timeout-2', timedOut: true })]);
	}, 200_000);

	test('a run waiting across an n8n restart still resumes on a valid callback', async () => {
		const { correlationId, callbackUrl } = await startRoundTrip(3);
		const waiting = await executionWaitingFor(correlationId);
		await n8n.restart();
		expect(await statusOf(waiting.id)).toBe('waiting');
		const accepted = await partner.send(callbackUrl, signed({ correlationId, status: 'after-restart' }));
		expect(accepted.status).toBe(200);
		const done = await waitFor('the resumed run to finish', async () => {
			const execution = await n8n.execution(waiting.id);
			return execution.status === 'success' ? execution : undefined;
		});
		expect(nodeOutput(done, 'Accepted')[0]).toMatchObject({ correlationId, body: { status: 'after-restart' } });
	});
});
