import type { IExecuteData } from 'n8n-workflow';

import { signPayload } from '../../core/roundtrip/signature';
import { callWebhook, type NodeSetup } from '../../test/nodeContext';
import { forgetAnnouncements } from '../shared/n8nDoor';
import { RoundTripCallback } from './RoundTripCallback.node';

/*
 * The Round-Trip Callback run in-process through n8n-core's WebhookContext (test/nodeContext.ts), where
 * n8n's database is not there: what the fixed URL answers before it looks anything up, and its answer
 * when this n8n offers no lookup (door capabilities executionLookup, callbackStore). Finding and resuming the waiting
 * run is in test/e2e/roundTripFixedUrl.test.ts, in a real n8n.
 */

const SECRET = 'fixed-url-in-process-secret';
const SETUP: NodeSetup = {
	parameters: { path: 'round-trip/partner', correlationIdPath: 'body.correlationId' },
	credentials: { roundTripCallbackApi: { scheme: 'hmac', secret: SECRET, toleranceSec: 300 } },
};
/** The fixed URL starts no run and no waiting execution of its own is handed to it: an empty stack entry. */
const NO_WAIT = {
	customData: {},
	executeData: { data: { main: [[]] }, source: null } as unknown as IExecuteData,
};

async function call(body: unknown, secret?: string) {
	const rawBody = JSON.stringify(body);
	const headers: Record<string, string> = { 'content-type': 'application/json' };
	if (secret) headers['x-signature'] = signPayload(secret, rawBody, Math.floor(Date.now() / 1000));
	return await callWebhook(RoundTripCallback, SETUP, { headers, rawBody }, NO_WAIT);
}

describe('Round-Trip Callback node (n8n-core WebhookContext)', () => {
	beforeEach(() => forgetAnnouncements());

	it('refuses an unsigned or forged callback before anything is looked up, the same for any id', async () => {
		const unsigned = await call({ correlationId: 'order-1' });
		expect([unsigned.status, unsigned.result]).toEqual([401, { noWebhookResponse: true }]);
		const forgedA = await call({ correlationId: 'order-1' }, 'not-the-secret');
		const forgedB = await call({ correlationId: 'order-2' }, 'not-the-secret');
		expect([forgedA.status, forgedB.status]).toEqual([403, 403]);
		expect(forgedA.body).toEqual(forgedB.body);
	});

	it('an authenticated callback without an id at the location is answered 409', async () => {
		const answer = await call({ orderNumber: 7 }, SECRET);
		expect(answer.status).toBe(409);
		expect(answer.body).toMatchObject({
			error: 'no correlation id at body.correlationId (read from the signed body only)',
		});
	});

	it('without a lookup in this n8n, an authenticated callback is answered 503 and the node says why once', async () => {
		const answer = await call({ correlationId: 'order-1' }, SECRET);
		expect(answer.status).toBe(503);
		expect(answer.body).toMatchObject({ waiting: true });
		expect(answer.warnings.join('\n')).toContain('does not let the node find executions');
		// Nor a place to keep a callback that comes before its run waits (door capability callbackStore).
		expect(answer.warnings.join('\n')).toContain('no place in its database to keep a callback');
	});
});
