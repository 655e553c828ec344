import type { IDataObject, IExecuteFunctions, IRun, ITriggerFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { signPayload, waitIdOf } from '../../core/roundtrip/signature';
import {
	activateTrigger,
	callWebhook,
	executeNode,
	type NodeSetup,
	triggerContext,
	without,
} from '../../test/nodeContext';
import { DurableScheduleTrigger } from '../DurableScheduleTrigger/DurableScheduleTrigger.node';
import { PollTrigger } from '../PollTrigger/PollTrigger.node';
import { afterWaitIsSaved, executionReplayLogOf } from '../RoundTripWait/roundTripContext';
import { RoundTripWait } from '../RoundTripWait/RoundTripWait.node';
import { RunEmitter } from './emitRuns';
import { saveTriggerFailure } from './errors';
import { writerToLiveCopies } from './liveCopies';
import { type N8nCapabilities, forgetAnnouncements, n8nCapabilities } from './n8nDoor';

/*
 * The door to n8n (n8nDoor.ts), in-process through n8n-core 2.41.1's real contexts (test/nodeContext.ts).
 *
 * The contract: what n8n-core 2.41.1's TriggerContext, ExecuteContext and WebhookContext offer, as
 * the door probes it. Three capabilities are handed to n8n-core by n8n's CLI package, which is not
 * here (the trigger's emit and saveFailedExecution, the run's lifecycle hooks): test/nodeContext.ts
 * hands over what n8n 2.41.1's CLI does, and test/e2e/n8nContract.test.ts pins them in a real n8n
 * (2.41.1 and 1.123.81).
 *
 * The degraded paths: each capability removed (`without`, a proxy over the real context), what the
 * node does instead, and the warning it gives once.
 */

const SECRET = 'door-secret';
let workflows = 0;
const nextWorkflowId = () => `wf-door-${++workflows}`;

beforeEach(() => forgetAnnouncements());

const SCHEDULE = {
	parameters: { scheduleType: 'interval', interval: 10, intervalUnit: 'seconds' },
	name: 'Every 10s',
};
const POLL = {
	parameters: { op: 'http.request', with: '{}', interval: 5, intervalUnit: 'seconds' },
};

function waitOnly(parameters: Record<string, unknown> = {}): NodeSetup {
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

/** n8n 2.41's trigger emit (four parameters), recording what it was handed. */
function modernEmit(calls: unknown[][]): ITriggerFunctions['emit'] {
	return (data, response, done, key) => void calls.push([data, response, done, key]);
}

/** Probes the context a node runs with, as the node sees it. */
function probing(into: { capabilities?: N8nCapabilities }, wrap = without()) {
	return <C extends object>(context: C): C => {
		const seen = wrap(context);
		into.capabilities = n8nCapabilities(seen as unknown as IExecuteFunctions);
		return seen;
	};
}

function callback(run: Awaited<ReturnType<typeof executeNode>>, body: unknown) {
	const { callbackUrl } = run.output[0][0].json as { callbackUrl: string };
	const raw = JSON.stringify(body);
	return {
		headers: {
			'content-type': 'application/json',
			'x-signature': signPayload(SECRET, raw, Math.floor(Date.now() / 1000), waitIdOf(callbackUrl)),
		},
		query: Object.fromEntries(new URL(callbackUrl).searchParams),
		rawBody: raw,
	};
}

describe('the door on n8n-core 2.41.1 (contract)', () => {
	it('a trigger context offers deduplication keys, failed-execution saving, the static-data copy and its write-ended signal', () => {
		const context = triggerContext(PollTrigger, POLL, modernEmit([]));
		expect(n8nCapabilities(context)).toMatchObject({
			deduplicationKeys: true,
			failedExecutionSaving: true,
			staticDataCopy: true,
			writeEndedSignal: true,
		});
	});

	it('an execute context offers custom data, resume control and, with the run hooks n8n hands it, execution hooks', async () => {
		const seen: { capabilities?: N8nCapabilities } = {};
		const run = await executeNode(RoundTripWait, waitOnly(), undefined, {
			hooks: true,
			wrap: probing(seen),
		});
		expect(seen.capabilities).toMatchObject({
			customData: 'context',
			resumeControl: true,
			executionHooks: true,
		});
		expect(run.warnings).toEqual([]);
		expect(run.hints).toEqual([]);
	});

	it("a webhook context offers the waiting node's stack entry and the execution's context data", async () => {
		const run = await executeNode(RoundTripWait, waitOnly());
		const seen: { capabilities?: N8nCapabilities } = {};
		const answer = await callWebhook(
			RoundTripWait,
			waitOnly(),
			callback(run, { correlationId: (run.output[0][0].json as IDataObject).correlationId }),
			run,
			{ wrap: probing(seen) },
		);
		expect(seen.capabilities).toMatchObject({
			customData: 'context',
			executionStack: true,
			executionContextData: true,
		});
		expect(answer.result.workflowData).toBeDefined();
		expect(answer.warnings).toEqual([]);
	});

	it('a trigger activated with every capability says nothing about them', async () => {
		const active = await activateTrigger(DurableScheduleTrigger, {
			...SCHEDULE,
			workflowId: nextWorkflowId(),
		});
		await active.close();
		expect(active.warnings).toEqual([]);
	});
});

describe('each capability removed: the node does what the public API allows, and says so once', () => {
	it('no deduplication keys: runs go out without a key, one at a time, each settled once n8n reads its done-promise (n8n 1.x)', async () => {
		const workflowId = nextWorkflowId();
		for (let activation = 0; activation < 2; activation++) {
			const active = await activateTrigger(
				DurableScheduleTrigger,
				{ ...SCHEDULE, workflowId },
				{ wrap: without('deduplicationKeys') },
			);
			await active.close();
			// Said once per process for this workflow's node, not at every activation.
			expect(active.warnings).toEqual(
				activation === 0
					? [
							expect.stringMatching(
								/^Every 10s: this n8n's trigger emit takes no deduplication key/,
							),
						]
					: [],
			);
		}

		const calls: unknown[][] = [];
		const created: string[] = [];
		const context = without('deduplicationKeys')(
			triggerContext(
				PollTrigger,
				{ ...POLL, workflowId: nextWorkflowId() },
				(...args: unknown[]) => {
					calls.push(args);
					// n8n 1.x, once it created the run, chains the done-promise to the run's end.
					const done = args[2] as { resolve: (run: IRun) => void };
					void done.resolve;
				},
			),
		);
		expect(n8nCapabilities(context).deduplicationKeys).toBe(false);
		await new RunEmitter<string>(context, {
			toItems: (name) => [{ json: { name } }],
			settled: () => undefined,
			created: ({ run }) => created.push(run),
			rewrite: () => undefined,
		}).emit(['a', 'b'].map((name) => ({ key: `k-${name}`, run: name })));
		expect(calls.map((args) => args.length)).toEqual([3, 3]);
		expect(created).toEqual(['a', 'b']);
	});

	it("no failed-execution saving: a trigger's failure goes to n8n's log as an error", () => {
		const context = triggerContext(PollTrigger, POLL, modernEmit([]));
		const saved = jest.spyOn(context, 'saveFailedExecution');
		const logged = jest.spyOn(context.logger, 'error').mockImplementation(() => undefined);
		try {
			const error = new NodeOperationError(context.getNode(), 'the source is down', {
				description: 'Poll failed',
			});
			saveTriggerFailure(context, error);
			expect(saved).toHaveBeenCalledWith(error);
			expect(logged).not.toHaveBeenCalled();

			saveTriggerFailure(without('failedExecutionSaving')(context), error);
			expect(saved).toHaveBeenCalledTimes(1);
			expect(logged).toHaveBeenCalledWith('Poll Trigger: the source is down (Poll failed)', {
				workflowId: context.getWorkflow().id,
			});
		} finally {
			logged.mockRestore();
		}
	});

	it("no static-data copy: a trigger's state goes to its own node's static data only, not into another trigger's copy", () => {
		const workflowId = nextWorkflowId();
		const trigger = (name: string) =>
			triggerContext(PollTrigger, { ...POLL, name, workflowId, staticData: {} }, modernEmit([]));
		// Another trigger of the workflow, re-registered alone on its own copy of the static data.
		const other = trigger('Schedule');
		const otherWriter = writerToLiveCopies(other);

		const full = trigger('Poll');
		writerToLiveCopies(full).write('state', { n: 1 });
		expect(full.getWorkflowStaticData('node').state).toEqual({ n: 1 });
		expect(other.workflow.staticData['node:Poll']).toEqual({ state: { n: 1 } });

		const alone = without('staticDataCopy')(trigger('Poll'));
		expect(n8nCapabilities(alone).staticDataCopy).toBe(false);
		writerToLiveCopies(alone).write('state', { n: 2 });
		expect(alone.getWorkflowStaticData('node').state).toEqual({ n: 2 });
		expect(other.workflow.staticData['node:Poll']).toEqual({ state: { n: 1 } });
		otherWriter.close();
	});

	it("no write-ended signal: runs are emitted without waiting for n8n's write between them", async () => {
		// Keys of their own: a key emitted and not settled is never emitted again in this process.
		const runs = (prefix: string) =>
			['a', 'b', 'c'].map((name) => ({ key: `${prefix}-${name}`, run: name }));
		const emitter = (context: ITriggerFunctions) =>
			new RunEmitter<string>(context, {
				toItems: (name) => [{ json: { name } }],
				settled: () => undefined,
				created: () => undefined,
				rewrite: () => undefined,
			});
		// n8n has not ended its write (the flag stays set): with the signal, the second run waits for it.
		const waitingCalls: unknown[][] = [];
		const waiting = triggerContext(
			PollTrigger,
			{ ...POLL, workflowId: nextWorkflowId() },
			modernEmit(waitingCalls),
		);
		waiting.getWorkflowStaticData('node').state = { outbox: 3 };
		const held = emitter(waiting);
		const emitting = held.emit(runs('held'));
		await new Promise((resolve) => setTimeout(resolve, 50));
		expect(waitingCalls).toHaveLength(1);
		held.stop();
		await emitting;

		const calls: unknown[][] = [];
		const blind = without('writeEndedSignal')(
			triggerContext(PollTrigger, { ...POLL, workflowId: nextWorkflowId() }, modernEmit(calls)),
		);
		expect(n8nCapabilities(blind)).toMatchObject({ staticDataCopy: true, writeEndedSignal: false });
		blind.getWorkflowStaticData('node').state = { outbox: 3 };
		await emitter(blind).emit(runs('blind'));
		expect(calls.map((args) => args[3])).toEqual(['blind-a', 'blind-b', 'blind-c']);
	});

	it('no custom data: the wait begins and resumes; the correlation id is not written for filtering', async () => {
		const run = await executeNode(RoundTripWait, waitOnly(), undefined, {
			wrap: without('customData'),
		});
		const waiting = run.output[0][0].json as { correlationId: string; waiting: boolean };
		expect(waiting.waiting).toBe(true);
		expect(run.customData).toEqual({});
		expect(run.warnings).toEqual([
			expect.stringMatching(/^Round-Trip Wait: this n8n offers no custom data to the node/),
			expect.stringMatching(/^Round-Trip Wait: this n8n's resume does not honour/),
			expect.stringMatching(/^Round-Trip Wait: this n8n offers no execution lifecycle hooks/),
		]);
		const answer = await callWebhook(
			RoundTripWait,
			waitOnly(),
			callback(run, { correlationId: waiting.correlationId }),
			run,
		);
		expect(answer.result.workflowData?.[0]).toEqual([
			expect.objectContaining({
				json: expect.objectContaining({ correlationId: waiting.correlationId }),
			}),
		]);
	});

	it('no resume control (n8n 1.x): the timeout leaves by Callback, Execute step shows why, and the node itself refuses a second callback', async () => {
		const run = await executeNode(RoundTripWait, waitOnly(), undefined, {
			hooks: true,
			wrap: without('resumeControl'),
		});
		const { correlationId } = run.output[0][0].json as { correlationId: string };
		// Custom data through the expressions' $execution, as n8n 1.x has it.
		expect(run.customData.correlationId).toBe(correlationId);
		expect(run.executeData.data.main).toHaveLength(1);
		expect(run.executeData.data.main[0]?.[0].json).toMatchObject({ timedOut: true });
		expect(run.executeData.metadata).not.toHaveProperty('forwardAllOutputs');
		expect(run.warnings).toEqual([
			expect.stringMatching(/^Round-Trip Wait: this n8n's resume does not honour/),
		]);
		expect(run.hints).toEqual([
			expect.objectContaining({ type: 'warning', message: run.warnings[0] }),
		]);

		const first = await callWebhook(
			RoundTripWait,
			waitOnly(),
			callback(run, { correlationId, n: 1 }),
			run,
			{ wrap: without('resumeControl') },
		);
		expect(first.result.workflowData).toBeDefined();
		const second = await callWebhook(
			RoundTripWait,
			waitOnly(),
			callback(run, { correlationId, n: 2 }),
			run,
			{ wrap: without('resumeControl') },
		);
		expect([second.status, second.body]).toEqual([
			409,
			{ error: 'this wait was already resumed by another callback', waiting: false },
		]);
	});

	it('no execution hooks: nothing waits for the save, so the request goes out at once', async () => {
		const send = jest.fn(async () => undefined);
		let hooked: IExecuteFunctions | undefined;
		await executeNode(RoundTripWait, waitOnly(), undefined, {
			hooks: true,
			wrap: (context) => ((hooked = context as unknown as IExecuteFunctions), context),
		});
		expect(afterWaitIsSaved(hooked!, send)).toBe(true);
		const hooks = (hooked as unknown as { additionalData: { hooks: { runHook: Function } } })
			.additionalData.hooks;
		await hooks.runHook('workflowExecuteAfter', [{ status: 'waiting', waitTill: new Date() }]);
		expect(send).toHaveBeenCalledTimes(1);

		const bare = await executeNode(RoundTripWait, waitOnly(), undefined, {
			hooks: true,
			wrap: without('executionHooks'),
		});
		expect(bare.warnings).toEqual([
			expect.stringMatching(/^Round-Trip Wait: this n8n offers no execution lifecycle hooks/),
		]);
		expect(afterWaitIsSaved(without('executionHooks')(hooked!), send)).toBe(false);
	});

	it('no node stack at the resume: a callback cannot find the wait and is refused; the run keeps waiting until its timeout', async () => {
		const run = await executeNode(RoundTripWait, waitOnly());
		const { correlationId } = run.output[0][0].json as { correlationId: string };
		const answer = await callWebhook(
			RoundTripWait,
			waitOnly(),
			callback(run, { correlationId }),
			run,
			{
				wrap: without('executionStack'),
			},
		);
		expect([answer.status, answer.body]).toEqual([
			409,
			{ error: 'this execution is not waiting in a Round-Trip Wait node', waiting: false },
		]);
		expect(answer.warnings).toEqual([
			expect.stringMatching(/^Round-Trip Wait: this n8n hands the resume no node stack/),
		]);
	});

	it('no execution data at the resume (neither stack nor context data): no replay log of the execution, the callback refused, both said', async () => {
		const run = await executeNode(RoundTripWait, waitOnly());
		const { correlationId } = run.output[0][0].json as { correlationId: string };
		let replayLog: unknown = 'not read';
		const answer = await callWebhook(
			RoundTripWait,
			waitOnly(),
			callback(run, { correlationId }),
			run,
			{
				wrap: (context) => {
					const bare = without('executionContextData')(context);
					replayLog = executionReplayLogOf(bare as never);
					return bare;
				},
			},
		);
		expect(replayLog).toBeUndefined();
		expect(answer.status).toBe(409);
		expect(answer.warnings).toEqual([
			expect.stringMatching(/no node stack/),
			expect.stringMatching(/no execution context data/),
		]);
	});
});
