import type { INodeExecutionData, IRun, ITriggerFunctions } from 'n8n-workflow';

import { triggerContext } from '../../test/nodeContext';
import { PollTrigger } from '../PollTrigger/PollTrigger.node';
import { emitRuns, emitsDeduplicationKeys } from './emitRuns';

/** A deferred promise as n8n-core's `helpers.createDeferredPromise` makes it. */
type Done = {
	promise: Promise<IRun>;
	resolve: (run: IRun) => void;
	reject: (error: Error) => void;
};

const POLL = {
	parameters: { op: 'http.request', with: '{}', interval: 5, intervalUnit: 'seconds' },
};

/**
 * n8n-core's TriggerContext (a real Workflow and its observable static data) with n8n 1.x's trigger
 * emit, as active-workflow-manager.js of n8n 1.123 has it: three parameters; it starts a static-data
 * write (set `__dataChanged` means a write, which clears the flag when done) and creates the run;
 * once the run exists it reads the done-promise's `resolve` and `reject`.
 */
function n8n1Context() {
	const log: string[] = [];
	const dones: Done[] = [];
	let staticData!: { __dataChanged?: boolean };
	const emit = (data: INodeExecutionData[][], _response?: unknown, done?: Done) => {
		const name = String(data[0][0].json.name);
		log.push(`emit ${name}${staticData.__dataChanged ? ' (writes state)' : ''}`);
		if (staticData.__dataChanged) setTimeout(() => (staticData.__dataChanged = false), 5);
		setTimeout(() => {
			log.push(`created ${name}`);
			if (done) {
				dones.push(done);
				void Promise.resolve({} as IRun)
					.then(done.resolve)
					.catch(done.reject);
			}
		}, 2);
	};
	const context = triggerContext(PollTrigger, POLL, emit as unknown as ITriggerFunctions['emit']);
	staticData = context.workflow.staticData as { __dataChanged?: boolean };
	staticData.__dataChanged = false;
	return { context, log, dones, staticData };
}

describe('emitRuns without deduplication keys (n8n 1.x)', () => {
	test('the emit n8n 1.x hands over has no key parameter; 2.x has one', () => {
		expect(emitsDeduplicationKeys(n8n1Context().context)).toBe(false);
		const modern = triggerContext(
			PollTrigger,
			POLL,
			(_d: unknown, _r: unknown, _p: unknown, _k: unknown) => undefined,
		);
		expect(emitsDeduplicationKeys(modern)).toBe(true);
	});

	test('runs go out one at a time; each is settled when n8n creates it, and the next write carries it', async () => {
		const { context, log, staticData } = n8n1Context();
		const settledAt: string[] = [];
		const runs = ['a', 'b', 'c'].map((name) => ({ key: `k-${name}`, run: name }));
		staticData.__dataChanged = true; // the caller wrote the state with all three in its outbox
		await emitRuns(
			context,
			runs,
			(name) => [{ json: { name } }],
			() => undefined,
			{
				created: ({ run }) => settledAt.push(`${run} created`),
				rewrite: () => {
					log.push(`rewrite after ${settledAt.join(', ')}`);
					staticData.__dataChanged = true;
				},
			},
		);
		expect(log).toEqual([
			'emit a (writes state)',
			'created a',
			'rewrite after a created',
			'emit b (writes state)',
			'created b',
			'rewrite after a created, b created',
			'emit c (writes state)',
			'created c',
			// the last settlement, for n8n's next write (the next start, or the next activation)
			'rewrite after a created, b created, c created',
		]);
	});

	test('a run n8n ends later is reported started once; an error after creation is still a run that happened', async () => {
		const { context } = n8n1Context();
		const settlements: string[] = [];
		await emitRuns(
			context,
			[{ key: 'k', run: 'a' }],
			(name) => [{ json: { name } }],
			({ run }, settlement) => settlements.push(`${run} ${settlement}`),
			{ created: () => undefined, rewrite: () => undefined },
		);
		await new Promise((resolve) => setTimeout(resolve, 10));
		expect(settlements).toEqual(['a started']);
	});
});
