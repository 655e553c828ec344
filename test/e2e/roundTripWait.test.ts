import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { percentile } from '../../bench/stats';
import { signPayload, signStandardWebhook, waitIdOf } from '../../core/roundtrip/signature';
import { FakeSystem, type RecordedRequest } from '../harness/fakeSystem';
import { type Execution, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { freePort, waitFor } from '../harness/net';
import { isN8n1 } from '../harness/paths';
import { marker, node, PACKAGE, webhookTrigger, workflow } from './workflowBuilder';

const SECRET = 'round-trip-e2e-secret';
/** A Standard Webhooks secret: whsec_ and the base64 of 32 bytes. */
const SW_SECRET = `whsec_${Buffer.from('round-trip-e2e-standard-webhooks').toString('base64')}`;
/** Round trips in a row whose partner calls back at once: 20 in `npm run test:full`, 5 in CI (issue 46). */
const EARLY_ROUND_TRIPS = process.env.E2E_FULL ? 20 : 5;

type Answer = { status: number; body: string; json?: unknown };

describe('Round-Trip Wait in a real n8n', () => {
	let n8n: N8nInstance;
	let partner: FakeSystem;
	let workflowId: string;
	let timeoutWorkflowId: string;
	let failingTimeoutWorkflowId: string;
	let twoWaitsWorkflowId: string;
	let twoStandardWaitsWorkflowId: string;
	let standardWorkflowId: string;
	let badResponseCodeWorkflowId: string;
	let earlyWorkflowId: string;
	let failingRequestWorkflowId: string;
	/** Wait Only, HMAC, the correlation id located only in a header, in the query: refused before the wait. */
	const unsignedIdWorkflowIds = new Map<'header' | 'query', string>();
	/** Wait Only, HMAC, the correlation id located in a header, else in the body: only the signed body is read. */
	let headerOrBodyWorkflowId: string;
	/** Execution Data node saving this many custom-data keys before the Round-Trip Wait, by key count. */
	const customDataWorkflowIds = new Map<number, string>();
	/** The partner's answers to the callbacks it sent at once, by order number. */
	const earlyAnswers = new Map<
		number,
		Promise<Answer & { attempts: number; requestAt: number; answeredAt: number }>
	>();

	beforeAll(async () => {
		partner = await FakeSystem.start();
		partner.on('POST', '/jobs', { status: 202, body: { accepted: true } });
		partner.on('POST', '/jobs-standard', { status: 202, body: { accepted: true } });
		partner.on('POST', '/jobs-bad-code', { status: 202, body: { accepted: true } });
		partner.on('POST', '/jobs-fail', { status: 500, body: { error: 'partner is down' } });
		// A partner that calls back at once: the signed callback leaves before it even answers the request.
		partner.on('POST', '/jobs-now', (request) => {
			const { correlationId, callbackUrl, order } = request.json as {
				correlationId: string;
				callbackUrl: string;
				order: number;
			};
			const requestAt = request.receivedAt;
			const { headers, body } = signed({ correlationId, status: 'at-once' }, callbackUrl);
			earlyAnswers.set(
				order,
				sendEarly(callbackUrl, { headers, body }).then((answer) => ({
					...answer,
					requestAt,
					answeredAt: Date.now(),
				})),
			);
			return { status: 202, body: { accepted: true } };
		});
		n8n = await N8nInstance.launch('round-trip');
		const callbackCredential = await n8n.createCredential(
			'Partner signature',
			'roundTripCallbackApi',
			{ scheme: 'hmac', secret: SECRET, signatureHeader: 'x-signature', toleranceSec: 300 },
		);
		const credentials = {
			roundTripCallbackApi: { id: callbackCredential, name: 'Partner signature' },
		};
		const standardCredential = await n8n.createCredential(
			'Partner standard webhooks',
			'roundTripCallbackApi',
			{ scheme: 'standardWebhooks', secret: SW_SECRET, toleranceSec: 300 },
		);
		/** Webhook start → Round-Trip Wait → "Accepted" on Callback, "Late" (or the given node) on Timed Out. */
		const roundTripWorkflow = (
			name: string,
			path: string,
			parameters: Record<string, unknown>,
			late = marker('Late'),
			credentialId = callbackCredential,
		) =>
			workflow(
				name,
				[
					webhookTrigger('Start', path),
					node('Round-Trip Wait', `${PACKAGE}.roundTripWait`, parameters, {
						credentials: { roundTripCallbackApi: { id: credentialId, name: 'partner' } },
					}),
					marker('Accepted'),
					{ ...late, name: 'Late' },
				],
				[
					['Start', 'Round-Trip Wait'],
					['Round-Trip Wait', 'Accepted', 0],
					['Round-Trip Wait', 'Late', 1],
				],
			);
		const sendAndWait = (path: string, extra: Record<string, unknown> = {}) => ({
			mode: 'sendAndWait',
			method: 'POST',
			url: partner.url(path),
			body: '={{ JSON.stringify({ order: $json.body.order }) }}',
			timeoutAmount: 1,
			timeoutUnit: 'hours',
			...extra,
		});
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
			roundTripWorkflow('round trip timeout', 'rt-timeout', {
				mode: 'waitOnly',
				correlationId: '={{ $json.body.id }}',
				timeoutAmount: 5,
				timeoutUnit: 'seconds',
			}),
		);
		failingTimeoutWorkflowId = await n8n.importWorkflow(
			roundTripWorkflow(
				'round trip timeout fails the run',
				'rt-timeout-fail',
				{
					mode: 'waitOnly',
					correlationId: '={{ $json.body.id }}',
					timeoutAmount: 5,
					timeoutUnit: 'seconds',
				},
				node('Late', 'n8n-nodes-base.stopAndError', { errorMessage: 'No callback in time' }),
			),
		);
		// Two waits in one run, both for the same correlation id (the order number): the case a replay exploits.
		twoWaitsWorkflowId = await n8n.importWorkflow(
			workflow(
				'round trip, two waits',
				[
					webhookTrigger('Start', 'rt-two-waits'),
					node(
						'First Wait',
						`${PACKAGE}.roundTripWait`,
						sendAndWait('/jobs', {
							correlationId: "={{ $('Start').item.json.body.order }}",
							body: "={{ JSON.stringify({ order: $('Start').item.json.body.order, step: 1 }) }}",
						}),
						{ credentials },
					),
					node(
						'Second Wait',
						`${PACKAGE}.roundTripWait`,
						sendAndWait('/jobs', {
							correlationId: "={{ $('Start').item.json.body.order }}",
							body: "={{ JSON.stringify({ order: $('Start').item.json.body.order, step: 2 }) }}",
						}),
						{ credentials },
					),
					marker('Accepted'),
				],
				[
					['Start', 'First Wait'],
					['First Wait', 'Second Wait', 0],
					['Second Wait', 'Accepted', 0],
				],
			),
		);
		// The same with Standard Webhooks, which signs neither the URL nor its wait id.
		twoStandardWaitsWorkflowId = await n8n.importWorkflow(
			workflow(
				'round trip, two standard webhooks waits',
				[
					webhookTrigger('Start', 'rt-two-standard'),
					...[1, 2].map((step) =>
						node(
							step === 1 ? 'First Wait' : 'Second Wait',
							`${PACKAGE}.roundTripWait`,
							sendAndWait('/jobs-standard', {
								correlationId: "={{ $('Start').item.json.body.order }}",
								body: `={{ JSON.stringify({ order: $('Start').item.json.body.order, step: ${step} }) }}`,
							}),
							{
								credentials: {
									roundTripCallbackApi: {
										id: standardCredential,
										name: 'Partner standard webhooks',
									},
								},
							},
						),
					),
					marker('Accepted'),
				],
				[
					['Start', 'First Wait'],
					['First Wait', 'Second Wait', 0],
					['Second Wait', 'Accepted', 0],
				],
			),
		);
		standardWorkflowId = await n8n.importWorkflow(
			roundTripWorkflow(
				'round trip, standard webhooks',
				'rt-standard',
				sendAndWait('/jobs-standard'),
				marker('Late'),
				standardCredential,
			),
		);
		badResponseCodeWorkflowId = await n8n.importWorkflow(
			roundTripWorkflow(
				'round trip, bad response code',
				'rt-bad-code',
				sendAndWait('/jobs-bad-code', { responseCode: 999 }),
			),
		);
		earlyWorkflowId = await n8n.importWorkflow(
			roundTripWorkflow(
				'round trip, partner calls back at once',
				'rt-now',
				sendAndWait('/jobs-now'),
			),
		);
		failingRequestWorkflowId = await n8n.importWorkflow(
			roundTripWorkflow('round trip, request refused', 'rt-fail', sendAndWait('/jobs-fail')),
		);
		// Wait Only, the correlation id in a header or the query: nothing signed (no wait id, a body
		// without the id) would tell two waits apart, so the node refuses the setting.
		for (const [where, path] of [
			['header', 'headers.`x-order`'],
			['query', 'query.order'],
		] as const)
			unsignedIdWorkflowIds.set(
				where,
				await n8n.importWorkflow(
					roundTripWorkflow(`round trip, wait only, id in the ${where}`, `rt-${where}-id`, {
						mode: 'waitOnly',
						correlationId: '={{ $json.body.id }}',
						correlationIdPath: path,
						timeoutAmount: 1,
						timeoutUnit: 'hours',
					}),
				),
			);
		headerOrBodyWorkflowId = await n8n.importWorkflow(
			roundTripWorkflow('round trip, wait only, id in a header or the body', 'rt-header-or-body', {
				mode: 'waitOnly',
				correlationId: '={{ $json.body.id }}',
				correlationIdPath: 'headers.`x-order` ? headers.`x-order` : body.order',
				timeoutAmount: 1,
				timeoutUnit: 'hours',
			}),
		);
		// A user's own custom data before the wait: n8n keeps at most 10 keys per execution and drops new ones silently.
		for (const keys of [9, 10]) {
			const values = Array.from({ length: keys }, (_, i) => ({ key: `user_${i}`, value: `v${i}` }));
			customDataWorkflowIds.set(
				keys,
				await n8n.importWorkflow(
					workflow(
						`round trip after ${keys} custom-data keys`,
						[
							webhookTrigger('Start', `rt-custom-${keys}`),
							node(
								'Save Highlights',
								'n8n-nodes-base.executionData',
								{ operation: 'save', dataToSave: { values } },
								{ typeVersion: 1.1 },
							),
							node('Round-Trip Wait', `${PACKAGE}.roundTripWait`, sendAndWait('/jobs'), {
								credentials,
							}),
							marker('Accepted'),
						],
						[
							['Start', 'Save Highlights'],
							['Save Highlights', 'Round-Trip Wait'],
							['Round-Trip Wait', 'Accepted', 0],
						],
					),
				),
			);
		}
		for (const id of [
			...customDataWorkflowIds.values(),
			workflowId,
			timeoutWorkflowId,
			failingTimeoutWorkflowId,
			twoWaitsWorkflowId,
			twoStandardWaitsWorkflowId,
			standardWorkflowId,
			badResponseCodeWorkflowId,
			earlyWorkflowId,
			failingRequestWorkflowId,
			...unsignedIdWorkflowIds.values(),
			headerOrBodyWorkflowId,
		]) {
			await n8n.publish(id);
		}
	});

	afterAll(async () => {
		await n8n?.stop();
		await partner?.close();
	});

	/** Starts a run through the Webhook trigger at `path`. */
	async function start(path: string, payload: Record<string, unknown>): Promise<void> {
		await waitFor(`the ${path} start webhook to be registered`, async () => {
			const response = await fetch(`${n8n.webhookBaseUrl}/webhook/${path}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify(payload),
			});
			return response.ok ? true : undefined;
		});
	}

	/** Starts a run and returns the request the node sent to the partner. */
	async function startRoundTrip(
		order: number,
		path = 'rt-start',
		partnerPath = '/jobs',
		step?: number,
	): Promise<{ correlationId: string; callbackUrl: string; request: RecordedRequest }> {
		await start(path, { order });
		return await partnerRequest(partnerPath, order, step);
	}

	/**
	 * The early callback. n8n 2.x: sent once (the request left after n8n saved the wait). n8n 1.x: the
	 * request leaves before the wait is saved, so the partner follows the retry contract (docs/round-trip-wait.md): a 409
	 * or 5xx is retried, after 100 ms doubling up to 1.6 s, at most 12 times. `attempts` counts them.
	 */
	async function sendEarly(
		url: string,
		request: { headers: Record<string, string>; body: string },
	): Promise<Answer & { attempts: number }> {
		let answer = await partner.send(url, request);
		let attempts = 1;
		for (
			let delay = 100;
			isN8n1 && attempts < 12 && (answer.status === 409 || answer.status >= 500);
			delay = Math.min(delay * 2, 1_600)
		) {
			await new Promise((resolve) => setTimeout(resolve, delay)); // the partner's backoff, not a wait for an event
			answer = await partner.send(url, request);
			attempts++;
		}
		return { ...answer, attempts };
	}

	async function partnerRequest(
		partnerPath: string,
		order: number,
		step?: number,
	): Promise<{ correlationId: string; callbackUrl: string; request: RecordedRequest }> {
		const request = await partner.nextRequest((r) => {
			const json = r.json as { order?: number; step?: number } | undefined;
			return r.path === partnerPath && json?.order === order && json?.step === step;
		});
		const body = request.json as { correlationId: string; callbackUrl: string };
		return { correlationId: body.correlationId, callbackUrl: body.callbackUrl, request };
	}

	/** A callback signed for the wait its URL names (HMAC v2 over "<t>.<rtw>.<body>"). */
	function signed(
		body: unknown,
		callbackUrl: string,
		secret = SECRET,
		at = Math.floor(Date.now() / 1000),
	) {
		const raw = JSON.stringify(body);
		return {
			headers: { 'x-signature': signPayload(secret, raw, at, waitIdOf(callbackUrl)) },
			body: raw,
		};
	}

	async function executionWaitingFor(
		correlationId: string,
		workflow = workflowId,
		node = 'Round-Trip Wait',
	): Promise<Execution> {
		return await waitFor(`an execution waiting for ${correlationId} in ${node}`, async () => {
			const executions = await n8n.executions(workflow);
			return executions.find(
				(e) =>
					e.status === 'waiting' &&
					e.data?.resultData.lastNodeExecuted === node &&
					JSON.stringify(e.data ?? {}).includes(correlationId),
			);
		});
	}

	async function finished(id: string, status: Execution['status'] = 'success'): Promise<Execution> {
		return await waitFor(`execution ${id} to end with ${status}`, async () => {
			const execution = await n8n.execution(id);
			return execution.status === status ? execution : undefined;
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
		// n8n 1.x signs no resume URL (its `signature` token came with 2.x): the node's own checks are all there is.
		if (isN8n1) expect(callbackUrl).not.toContain('signature=');
		else expect(callbackUrl).toContain('signature=');
		await executionWaitingFor(correlationId);
	});

	test('forged, stale and mismatched callbacks (and one signed for another wait) are refused and the run keeps waiting; a valid one from a partner 2 s behind resumes it', async () => {
		const { correlationId, callbackUrl } = await startRoundTrip(2);
		const waiting = await executionWaitingFor(correlationId);

		const unauthenticated = await partner.send(callbackUrl, { body: { correlationId } });
		expect(unauthenticated.status).toBe(401);
		const badSignature = await partner.send(
			callbackUrl,
			signed({ correlationId }, callbackUrl, 'not-the-secret'),
		);
		expect(badSignature.status).toBe(403);
		const stale = await partner.send(
			callbackUrl,
			signed({ correlationId }, callbackUrl, SECRET, Math.floor(Date.now() / 1000) - 3600),
		);
		expect(stale.status).toBe(403);
		expect(stale.body).toContain('tolerance');
		// Signed for another wait (its id in the signature), within the tolerance: refused.
		const otherWait = await partner.send(callbackUrl, {
			headers: {
				'x-signature': signPayload(
					SECRET,
					JSON.stringify({ correlationId }),
					Math.floor(Date.now() / 1000),
					'another-wait',
				),
			},
			body: JSON.stringify({ correlationId }),
		});
		expect(otherWait.status).toBe(403);
		const mismatched = await partner.send(
			callbackUrl,
			signed({ correlationId: 'someone-else' }, callbackUrl),
		);
		expect(mismatched.status).toBe(409);
		expect(mismatched.body).not.toContain(correlationId);
		expect(await statusOf(waiting.id)).toBe('waiting');

		// A partner whose clock runs 2 s behind n8n's signs "before" the wait began: within the tolerance, accepted.
		const waitBegan =
			Date.parse(String(nodeOutput(waiting, 'Round-Trip Wait')[0].deadline)) - 3_600_000;
		const accepted = await partner.send(
			callbackUrl,
			signed(
				{ correlationId, status: 'approved' },
				callbackUrl,
				SECRET,
				Math.floor(waitBegan / 1000) - 2,
			),
		);
		expect(accepted.status).toBe(200);
		expect(accepted.json).toEqual({ received: true });
		const done = await finished(waiting.id);
		const [receipt] = nodeOutput(done, 'Accepted');
		expect(receipt).toMatchObject({
			correlationId,
			body: { correlationId, status: 'approved' },
			branch: 'Accepted',
		});
		expect(receipt.headers).not.toHaveProperty('x-signature');
		expect(receipt.query).not.toHaveProperty('signature');
		expect(receipt.query).not.toHaveProperty('rtw');
		expect(nodeOutput(done, 'Late')).toEqual([]);

		const again = await partner.send(
			callbackUrl,
			signed({ correlationId, status: 'approved' }, callbackUrl),
		);
		expect(again.status).toBe(409);
		expect(again.body).toContain('has finished already');
	});

	test('a wait that outlives its timeout leaves through "Timed Out", which a Stop and Error turns into a failed run', async () => {
		const start = async (path: string, id: string) =>
			await waitFor(`the ${path} start webhook`, async () => {
				const response = await fetch(`${n8n.webhookBaseUrl}/webhook/${path}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify({ id }),
				});
				return response.ok ? true : undefined;
			});
		await start('rt-timeout', 'order-timeout-1');
		await start('rt-timeout-fail', 'order-timeout-2');
		const waiting = await executionWaitingFor('order-timeout-1', timeoutWorkflowId);
		const { callbackUrl } = nodeOutput(waiting, 'Round-Trip Wait')[0] as { callbackUrl: string };
		const failingWaiting = await executionWaitingFor('order-timeout-2', failingTimeoutWorkflowId);
		const { callbackUrl: failingCallbackUrl } = nodeOutput(
			failingWaiting,
			'Round-Trip Wait',
		)[0] as { callbackUrl: string };
		// n8n's wait tracker looks for due waits once a minute, so the timeouts land up to a minute late.
		const [timedOut] = await n8n.waitForExecutions(
			timeoutWorkflowId,
			(all) => all.some((e) => e.status === 'success'),
			'the timed-out run',
			150_000,
		);
		const done = await n8n.execution(timedOut.id);
		if (isN8n1) {
			// n8n 1.x resumes a timed-out wait passing only the first output on: the Timed Out item
			// leaves by Callback, marked `timedOut: true` (docs/n8n-1.123.md); nothing reaches Late.
			expect(nodeOutput(done, 'Accepted')).toEqual([
				expect.objectContaining({
					correlationId: 'order-timeout-1',
					timedOut: true,
					waitedMs: 5000,
				}),
			]);
			expect(nodeOutput(done, 'Late')).toEqual([]);
			const [other] = await n8n.waitForExecutions(
				failingTimeoutWorkflowId,
				(all) => all.some((e) => e.status === 'success'),
				'the other timed-out run',
				150_000,
			);
			expect(nodeOutput(await n8n.execution(other.id), 'Accepted')).toEqual([
				expect.objectContaining({ correlationId: 'order-timeout-2', timedOut: true }),
			]);
			return;
		}
		const [late] = nodeOutput(done, 'Late');
		expect(late).toMatchObject({
			correlationId: 'order-timeout-1',
			timedOut: true,
			waitedMs: 5000,
			branch: 'Late',
		});
		expect(nodeOutput(done, 'Accepted')).toEqual([]);
		// A callback after n8n resumed the run through Timed Out reaches no node code: n8n answers it
		// (waiting-webhooks.js), 409, not the node's 410 (docs/round-trip-and-schedule-reliability.md).
		const tooLate = await partner.send(
			callbackUrl,
			signed({ correlationId: 'order-timeout-1', status: 'late' }, callbackUrl),
		);
		expect(tooLate.status).toBe(409);
		expect(tooLate.body).toContain('has finished already');
		// Once the execution is deleted (pruning, a workflow that does not save), n8n answers 404.
		await n8n.api('DELETE', `/executions/${timedOut.id}`);
		const gone = await partner.send(
			callbackUrl,
			signed({ correlationId: 'order-timeout-1', status: 'gone' }, callbackUrl),
		);
		expect(gone.status).toBe(404);
		expect(gone.json).toMatchObject({ message: `The execution "${timedOut.id}" does not exist.` });

		const [failing] = await n8n.waitForExecutions(
			failingTimeoutWorkflowId,
			(all) => all.some((e) => e.status === 'error'),
			'the run failed by its timeout',
			150_000,
		);
		const failed = await n8n.execution(failing.id);
		expect(failed.data?.resultData.error?.message).toBe('No callback in time');
		expect(nodeOutput(failed, 'Round-Trip Wait', 1)).toEqual([
			expect.objectContaining({ correlationId: 'order-timeout-2', timedOut: true }),
		]);
		// A callback to a run that ended with an error: n8n's other 409.
		const afterError = await partner.send(
			failingCallbackUrl,
			signed({ correlationId: 'order-timeout-2', status: 'late' }, failingCallbackUrl),
		);
		expect(afterError.status).toBe(409);
		expect(afterError.json).toMatchObject({
			message: `The execution "${failing.id}" has finished with error.`,
		});
	}, 200_000);

	test.each(['header', 'query'] as const)(
		'Wait Only with HMAC and the correlation id located only in the %s (not signed): the node refuses the setting before the run waits',
		async (where) => {
			const id = unsignedIdWorkflowIds.get(where)!;
			await start(`rt-${where}-id`, { id: `${where}-1` });
			const [failed] = await n8n.waitForExecutions(
				id,
				(all) => all.some((e) => e.status === 'error'),
				'the run refused by its settings',
			);
			const execution = await n8n.execution(failed.id);
			expect(execution.data?.resultData.error?.message).toMatch(
				/for "Correlation ID Location": must read the body in Wait Only mode with an HMAC signature/,
			);
			expect(execution.data?.resultData.lastNodeExecuted).toBe('Round-Trip Wait');
		},
	);

	test("Wait Only with HMAC: run A's signed callback resent to run B with B's id in the unsigned header is refused and B keeps waiting; each genuine callback resumes its own run", async () => {
		const orders = ['order-A', 'order-B'];
		for (const order of orders) await start('rt-header-or-body', { id: order });
		const waits: Execution[] = [];
		for (const order of orders)
			waits.push(await executionWaitingFor(order, headerOrBodyWorkflowId));
		const urls = waits.map(
			(waiting) =>
				(nodeOutput(waiting, 'Round-Trip Wait')[0] as { callbackUrl: string }).callbackUrl,
		);
		const forA = signed({ order: 'order-A', status: 'done-A' }, urls[0]);
		expect(
			(await partner.send(urls[0], { ...forA, headers: { ...forA.headers, 'x-order': 'order-A' } }))
				.status,
		).toBe(200);

		const replayed = await partner.send(urls[1], {
			...forA,
			headers: { ...forA.headers, 'x-order': 'order-B' },
		});
		expect(replayed.status).toBe(409);
		expect(replayed.json).toEqual({
			error: expect.stringContaining('read from the signed body only'),
			waiting: true,
		});
		expect(await statusOf(waits[1].id)).toBe('waiting');

		const forB = signed({ order: 'order-B', status: 'done-B' }, urls[1]);
		expect(
			(await partner.send(urls[1], { ...forB, headers: { ...forB.headers, 'x-order': 'order-B' } }))
				.status,
		).toBe(200);
		for (const [i, waiting] of waits.entries()) {
			const done = await finished(waiting.id);
			expect(nodeOutput(done, 'Accepted')).toEqual([
				expect.objectContaining({
					correlationId: orders[i],
					body: { order: orders[i], status: i === 0 ? 'done-A' : 'done-B' },
				}),
			]);
		}
	});

	test('a run waiting across an n8n restart still resumes on a valid callback', async () => {
		const { correlationId, callbackUrl } = await startRoundTrip(3);
		const waiting = await executionWaitingFor(correlationId);
		await n8n.restart();
		expect(await statusOf(waiting.id)).toBe('waiting');
		const accepted = await partner.send(
			callbackUrl,
			signed({ correlationId, status: 'after-restart' }, callbackUrl),
		);
		expect(accepted.status).toBe(200);
		const done = await finished(waiting.id);
		expect(nodeOutput(done, 'Accepted')[0]).toMatchObject({
			correlationId,
			body: { status: 'after-restart' },
		});
	});

	test('a callback replayed from an earlier wait of the same run is refused, and the run keeps waiting', async () => {
		const order = 41;
		await start('rt-two-waits', { order });
		const first = await partnerRequest('/jobs', order, 1);
		const captured = signed({ correlationId: String(order), status: 'step-1' }, first.callbackUrl);
		// n8n 1.x: the request left before n8n saved the wait (no send-after-save there), so this callback waits for it.
		if (isN8n1) await executionWaitingFor(String(order), twoWaitsWorkflowId, 'First Wait');
		expect((await partner.send(first.callbackUrl, captured)).status).toBe(200);

		// The same run now waits in its second node, for the same correlation id.
		const second = await partnerRequest('/jobs', order, 2);
		const waiting = await executionWaitingFor(String(order), twoWaitsWorkflowId, 'Second Wait');
		expect(second.callbackUrl).not.toBe(first.callbackUrl);
		// Replayed exactly as captured, and replayed to the new wait's URL: both refused.
		const replayed = await partner.send(first.callbackUrl, captured);
		expect(replayed.status).toBe(403);
		expect(replayed.json).toEqual({
			error: expect.stringContaining("does not match the body, timestamp and this wait's id"),
			waiting: true,
		});
		const redirected = await partner.send(second.callbackUrl, captured);
		expect(redirected.status).toBe(403);
		expect(await statusOf(waiting.id)).toBe('waiting');

		const accepted = await partner.send(
			second.callbackUrl,
			signed({ correlationId: String(order), status: 'step-2' }, second.callbackUrl),
		);
		expect(accepted.status).toBe(200);
		const done = await finished(waiting.id);
		expect(nodeOutput(done, 'First Wait')[0]).toMatchObject({ body: { status: 'step-1' } });
		expect(nodeOutput(done, 'Accepted')[0]).toMatchObject({
			correlationId: String(order),
			body: { status: 'step-2' },
		});
	});

	test('a Standard Webhooks signed callback resumes the run; a copy of it is refused', async () => {
		const { correlationId, callbackUrl } = await startRoundTrip(
			51,
			'rt-standard',
			'/jobs-standard',
		);
		const waiting = await executionWaitingFor(correlationId, standardWorkflowId);
		const body = JSON.stringify({ correlationId, status: 'standard' });
		const headers = signStandardWebhook(SW_SECRET, 'msg_2Qz1', Math.floor(Date.now() / 1000), body);
		const forged = await partner.send(callbackUrl, {
			headers: signStandardWebhook(
				`whsec_${Buffer.alloc(32, 1).toString('base64')}`,
				'msg_2Qz1',
				Math.floor(Date.now() / 1000),
				body,
			),
			body,
		});
		expect(forged.status).toBe(403);
		const accepted = await partner.send(callbackUrl, { headers, body });
		expect(accepted.status).toBe(200);
		const done = await finished(waiting.id);
		const [receipt] = nodeOutput(done, 'Accepted');
		expect(receipt).toMatchObject({ correlationId, body: { status: 'standard' } });
		expect(receipt.headers).toHaveProperty('webhook-id', 'msg_2Qz1');
		expect(receipt.headers).not.toHaveProperty('webhook-signature');
		expect((await partner.send(callbackUrl, { headers, body })).status).toBe(409);
	});

	test.each([9, 10])(
		'after the workflow saved %i custom-data keys of its own, the signed callback still resumes the run',
		async (keys) => {
			const order = 100 + keys;
			await start(`rt-custom-${keys}`, { order });
			const { correlationId, callbackUrl } = await partnerRequest('/jobs', order);
			const workflow = customDataWorkflowIds.get(keys)!;
			const waiting = await executionWaitingFor(correlationId, workflow);
			const accepted = await partner.send(
				callbackUrl,
				signed({ correlationId, status: 'custom-data' }, callbackUrl),
			);
			expect({ status: accepted.status, body: accepted.json }).toEqual({
				status: 200,
				body: { received: true },
			});
			const done = await finished(waiting.id);
			expect(nodeOutput(done, 'Accepted')[0]).toMatchObject({
				correlationId,
				body: { status: 'custom-data' },
			});
			// The wait keeps no key of its own; the correlation id takes the tenth key when one is free.
			const customData = done.data?.resultData.metadata ?? {};
			const userKeys = Object.fromEntries(
				Array.from({ length: keys }, (_, i) => [`user_${i}`, `v${i}`]),
			);
			expect(customData).toEqual(keys < 10 ? { ...userKeys, correlationId } : userKeys);
		},
	);

	test("a Standard Webhooks copy accepted by a run's first wait is refused at its second wait by another n8n process (the execution's own log)", async () => {
		const order = 42;
		await start('rt-two-standard', { order });
		const first = await partnerRequest('/jobs-standard', order, 1);
		if (isN8n1) await executionWaitingFor(String(order), twoStandardWaitsWorkflowId, 'First Wait');
		const body = JSON.stringify({ correlationId: String(order), status: 'step-1' });
		const captured = {
			headers: signStandardWebhook(SW_SECRET, 'msg_once', Math.floor(Date.now() / 1000), body),
			body,
		};
		expect((await partner.send(first.callbackUrl, captured)).status).toBe(200);
		const second = await partnerRequest('/jobs-standard', order, 2);
		const waiting = await executionWaitingFor(
			String(order),
			twoStandardWaitsWorkflowId,
			'Second Wait',
		);
		// A new process: the memory of the process that accepted the copy is gone (as on another webhook process).
		await n8n.restart();
		const copy = await partner.send(second.callbackUrl, captured);
		expect({ status: copy.status, body: copy.json }).toEqual({
			status: 403,
			body: {
				error:
					'this signed callback was already accepted by another wait: a copy is not accepted here',
				waiting: true,
			},
		});
		expect(await statusOf(waiting.id)).toBe('waiting');
		const secondBody = JSON.stringify({ correlationId: String(order), status: 'step-2' });
		const accepted = await partner.send(second.callbackUrl, {
			headers: signStandardWebhook(
				SW_SECRET,
				'msg_twice',
				Math.floor(Date.now() / 1000),
				secondBody,
			),
			body: secondBody,
		});
		expect(accepted.status).toBe(200);
		const done = await finished(waiting.id);
		expect(nodeOutput(done, 'Accepted')[0]).toMatchObject({ body: { status: 'step-2' } });
	}, 120_000);

	test('a bad Response Code fails the node with a message naming the field and value, before anything is sent', async () => {
		await start('rt-bad-code', { order: 61 });
		const [failed] = await n8n.waitForExecutions(
			badResponseCodeWorkflowId,
			(all) => all.some((e) => e.status === 'error'),
			'the run refused by its settings',
		);
		const execution = await n8n.execution(failed.id);
		expect(execution.data?.resultData.error?.message).toBe(
			'Invalid value 999 for "Response Code": must be a whole number from 200 to 299: it answers the callback that resumed the run, a success',
		);
		expect(execution.data?.resultData.lastNodeExecuted).toBe('Round-Trip Wait');
		expect(partner.requests('/jobs-bad-code')).toEqual([]);
	});

	test('a request the partner refuses fails the run with the answer, though it is sent after the wait was saved', async () => {
		await start('rt-fail', { order: 71 });
		await partner.nextRequest((r) => r.path === '/jobs-fail');
		const [failed] = await n8n.waitForExecutions(
			failingRequestWorkflowId,
			(all) => all.some((e) => e.status === 'error'),
			'the run failed by its refused request',
		);
		const execution = await n8n.execution(failed.id);
		expect(execution.data?.resultData.error?.message).toBe(
			`POST ${partner.url('/jobs-fail')} answered HTTP 500; the request was not accepted, so the run does not wait`,
		);
		expect(nodeOutput(execution, 'Accepted')).toEqual([]);
		expect(nodeOutput(execution, 'Late')).toEqual([]);
	});

	test('a request the partner refuses fails the run at once when n8n cannot reach its own WEBHOOK_URL', async () => {
		// WEBHOOK_URL names a port nothing listens on: the node's notice of a failed request could never
		// arrive there, so the run would wait for its timeout (an hour). An n8n of its own for this one case.
		const unreachable = await N8nInstance.launch('round-trip-webhook-url-unreachable', {
			WEBHOOK_URL: `http://127.0.0.1:${await freePort()}/`,
		});
		try {
			const credential = await unreachable.createCredential(
				'Partner signature',
				'roundTripCallbackApi',
				{ scheme: 'hmac', secret: SECRET, signatureHeader: 'x-signature', toleranceSec: 300 },
			);
			const id = await unreachable.importWorkflow(
				workflow(
					'round trip, WEBHOOK_URL unreachable',
					[
						webhookTrigger('Start', 'rt-unreachable'),
						node(
							'Round-Trip Wait',
							`${PACKAGE}.roundTripWait`,
							{
								mode: 'sendAndWait',
								method: 'POST',
								url: partner.url('/jobs-fail'),
								body: '={{ JSON.stringify({ order: $json.body.order }) }}',
								timeoutAmount: 1,
								timeoutUnit: 'hours',
							},
							{ credentials: { roundTripCallbackApi: { id: credential, name: 'partner' } } },
						),
						marker('Accepted'),
					],
					[
						['Start', 'Round-Trip Wait'],
						['Round-Trip Wait', 'Accepted', 0],
					],
				),
			);
			await unreachable.publish(id);
			// Started through n8n's own port: the webhook URL it would hand out leads nowhere.
			await waitFor('the rt-unreachable start webhook', async () => {
				const response = await fetch(`${unreachable.baseUrl}/webhook/rt-unreachable`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify({ order: 72 }),
				});
				return response.status !== 404 ? true : undefined;
			});
			const [failed] = await unreachable.waitForExecutions(
				id,
				(all) => all.some((e) => e.status === 'error'),
				'the run failed by its refused request',
			);
			const execution = await unreachable.execution(failed.id);
			expect(execution.data?.resultData.error?.message).toBe(
				`POST ${partner.url('/jobs-fail')} answered HTTP 500; the request was not accepted, so the run does not wait`,
			);
			// n8n 1.x sends the request before the wait in any case (no send-after-save there).
			if (!isN8n1) expect(unreachable.log()).toContain('n8n cannot reach its own callback URL');
		} finally {
			await unreachable.stop();
		}
	}, 240_000);

	test(`a partner that calls back at once (0 ms) resumes the run on Callback, ${EARLY_ROUND_TRIPS} round trips in a row`, async () => {
		const answers: Array<Answer & { attempts: number; requestAt: number; answeredAt: number }> = [];
		for (let order = 1001; order < 1001 + EARLY_ROUND_TRIPS; order++) {
			await start('rt-now', { order });
			await partner.nextRequest(
				(r) => r.path === '/jobs-now' && (r.json as { order?: number })?.order === order,
			);
			const answer = await earlyAnswers.get(order)!;
			answers.push(answer);
			expect({ order, status: answer.status, body: answer.json }).toEqual({
				order,
				status: 200,
				body: { received: true },
			});
		}
		const done = await n8n.waitForExecutions(
			earlyWorkflowId,
			(all) => all.filter((e) => e.status === 'success').length === EARLY_ROUND_TRIPS,
			'every early round trip to finish',
		);
		for (const execution of done) {
			const full = await n8n.execution(execution.id);
			expect(nodeOutput(full, 'Accepted')).toEqual([
				expect.objectContaining({ body: expect.objectContaining({ status: 'at-once' }) }),
			]);
			expect(nodeOutput(full, 'Late')).toEqual([]);
		}
		const latencies = answers.map((a) => a.answeredAt - a.requestAt);
		const figures = {
			n8n: isN8n1 ? '1.x' : '2.x',
			roundTrips: EARLY_ROUND_TRIPS,
			answered200: answers.filter((a) => a.status === 200).length,
			retried: answers.filter((a) => a.attempts > 1).length,
			maxAttempts: Math.max(...answers.map((a) => a.attempts)),
			p50Ms: percentile(latencies, 50),
			maxMs: Math.max(...latencies),
		};
		if (!isN8n1) expect(figures.maxAttempts).toBe(1);
		const artifacts = join(__dirname, '../../test-artifacts');
		mkdirSync(artifacts, { recursive: true });
		writeFileSync(
			join(artifacts, `round-trip-early-callbacks${isN8n1 ? '-n8n1' : ''}.json`),
			`${JSON.stringify(figures, null, 2)}\n`,
		);
		process.stdout.write(`early callbacks: ${JSON.stringify(figures)}\n`);
	}, 240_000);

	test('two valid callbacks arriving together: exactly one gets 200, and it is the one the run resumed with', async () => {
		const { correlationId, callbackUrl } = await startRoundTrip(81);
		const waiting = await executionWaitingFor(correlationId);
		const [a, b] = await Promise.all(
			['first', 'second'].map(async (status) => ({
				status,
				answer: await partner.send(callbackUrl, signed({ correlationId, status }, callbackUrl)),
			})),
		);
		const winners = [a, b].filter((x) => x.answer.status === 200);
		expect(winners).toHaveLength(1);
		const loser = [a, b].find((x) => x.answer.status !== 200)!;
		expect(loser.answer.status).toBeGreaterThanOrEqual(400);
		const done = await finished(waiting.id);
		expect(nodeOutput(done, 'Accepted')).toEqual([
			expect.objectContaining({ body: { correlationId, status: winners[0].status } }),
		]);
	});

	test('an n8n restart between the request and an immediate callback loses nothing', async () => {
		const { correlationId, callbackUrl } = await startRoundTrip(91);
		// n8n 2.x: the request only leaves once n8n has saved the wait, so the run is already durable
		// here. n8n 1.x: it leaves before, so the partner follows the retry contract (a 409 from n8n
		// 1.123 right after this restart, in a local CI run on a busy machine, 2026-12-02).
		await n8n.restart();
		const accepted = await sendEarly(
			callbackUrl,
			signed({ correlationId, status: 'after-restart-at-once' }, callbackUrl),
		);
		expect(accepted.status).toBe(200);
		const resumed = (e: Execution) =>
			e.status === 'success' && JSON.stringify(e.data ?? {}).includes('after-restart-at-once');
		const all = await n8n.waitForExecutions(
			workflowId,
			(executions) => executions.some(resumed),
			'the run resumed after the restart',
		);
		expect(nodeOutput(all.find(resumed)!, 'Accepted')[0]).toMatchObject({
			correlationId,
			body: { status: 'after-restart-at-once' },
		});
	}, 180_000);
});
