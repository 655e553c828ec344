import { signPayload, waitIdOf } from '../../core/roundtrip/signature';
import { type Execution, type N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { isN8n1 } from '../harness/paths';
import { sharedN8n } from '../harness/shared';
import { marker, node, PACKAGE, webhookTrigger, workflow } from './workflowBuilder';

/*
 * The contract between this package and the n8n it is pinned to: every capability the door
 * (nodes/shared/n8nDoor.ts) probes, as a real n8n offers it to a trigger at activation, to the
 * Round-Trip Wait's execution and to its resume. The door logs what it found once per process and
 * kind of context, at debug level (the e2e n8n logs at debug); this reads those lines. The day an
 * n8n moves one of them, this fails here instead of the package degrading in the field.
 *
 * n8n 2.41.1 offers every capability. n8n 1.123.81 (scripts/test-n8n1.sh, docs/n8n-1.123.md) has no
 * deduplication keys, no saveFailedExecution for triggers, custom data only through the expressions'
 * `$execution`, and none of the resume control that came with the contexts' custom data in 2.x.
 * Its execution hooks are n8n-core's ExecutionLifecycleHooks, as in 2.x.
 */

const SECRET = 'contract-secret';

const EXPECTED = isN8n1
	? {
			trigger: {
				deduplicationKeys: false,
				failedExecutionSaving: false,
				staticDataCopy: true,
				writeEndedSignal: true,
			},
			execute: { customData: 'expressions', resumeControl: false, executionHooks: true },
			webhook: { executionStack: true, executionContextData: true },
		}
	: {
			trigger: {
				deduplicationKeys: true,
				failedExecutionSaving: true,
				staticDataCopy: true,
				writeEndedSignal: true,
			},
			execute: { customData: 'context', resumeControl: true, executionHooks: true },
			webhook: { executionStack: true, executionContextData: true },
		};

describe("the door's capabilities in a real n8n", () => {
	let n8n: N8nInstance;

	beforeAll(async () => {
		n8n = await sharedN8n('n8n-contract');
	});

	afterAll(async () => {
		await n8n?.stop();
	});

	/** What the door logged for a kind of context (the first line: one per process and kind). */
	async function offered(kind: 'trigger' | 'execute' | 'webhook'): Promise<unknown> {
		const pattern = new RegExp(`this n8n offers \\(${kind}\\) (\\{[^\\n]*?\\})`);
		return await waitFor(`the door's ${kind} capabilities in n8n's log`, async () => {
			const match = pattern.exec(n8n.log());
			return match ? (JSON.parse(match[1]) as unknown) : undefined;
		});
	}

	test('a trigger at activation, the Round-Trip Wait executing and its resume each find what this n8n is pinned to offer', async () => {
		const schedule = await n8n.importWorkflow(
			workflow(
				'contract: schedule',
				[
					node('Hourly', `${PACKAGE}.durableScheduleTrigger`, {
						scheduleType: 'interval',
						interval: 1,
						intervalUnit: 'hours',
						catchUp: 'skip',
						overlap: 'skip-if-running',
					}),
					marker('Ran'),
				],
				[['Hourly', 'Ran']],
			),
		);
		await n8n.publish(schedule);
		expect(await offered('trigger')).toEqual(EXPECTED.trigger);

		const credential = await n8n.createCredential('Contract signature', 'roundTripCallbackApi', {
			scheme: 'hmac',
			secret: SECRET,
			signatureHeader: 'x-signature',
			toleranceSec: 300,
		});
		const roundTrip = await n8n.importWorkflow(
			workflow(
				'contract: round trip',
				[
					webhookTrigger('Start', 'contract-start'),
					node(
						'Round-Trip Wait',
						`${PACKAGE}.roundTripWait`,
						{
							mode: 'waitOnly',
							correlationId: '={{ $json.body.id }}',
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
		await n8n.publish(roundTrip);
		await waitFor('the contract-start webhook', async () => {
			const response = await fetch(`${n8n.webhookBaseUrl}/webhook/contract-start`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ id: 'contract-1' }),
			});
			return response.ok ? true : undefined;
		});
		const waiting = await waitFor('the run waiting for contract-1', async () =>
			(await n8n.executions(roundTrip)).find(
				(e: Execution) =>
					e.status === 'waiting' && e.data?.resultData.lastNodeExecuted === 'Round-Trip Wait',
			),
		);
		expect(await offered('execute')).toEqual(EXPECTED.execute);

		const { callbackUrl } = nodeOutput(waiting, 'Round-Trip Wait')[0] as { callbackUrl: string };
		const body = JSON.stringify({ correlationId: 'contract-1' });
		const answer = await fetch(callbackUrl, {
			method: 'POST',
			headers: {
				'content-type': 'application/json',
				'x-signature': signPayload(
					SECRET,
					body,
					Math.floor(Date.now() / 1000),
					waitIdOf(callbackUrl),
				),
			},
			body,
		});
		expect(answer.status).toBe(200);
		expect(await offered('webhook')).toEqual(EXPECTED.webhook);
		await waitFor('the resumed run to end', async () =>
			(await n8n.execution(waiting.id)).status === 'success' ? true : undefined,
		);

		// On 2.41.1 the door finds nothing missing, so the nodes say nothing about it.
		if (!isN8n1)
			expect(n8n.log()).not.toMatch(
				/: this n8n (offers no|does not show|shows no|hands the resume no|gives triggers no|'s trigger emit takes no|'s resume does not)/,
			);
	}, 240_000);
});
