import {
	type IDataObject,
	type INodeType,
	type INodeTypeDescription,
	type ITriggerFunctions,
	NodeConnectionTypes,
	NodeOperationError,
} from 'n8n-workflow';

import type { Settlement } from '../../core/outbox';
import { flushPromises } from '../../test/support/fakeClock';
import { activateTrigger, endedRun, type TriggerRun, without } from '../../test/nodeContext';
import { DurableTrigger, type TriggerEngine } from './durableTrigger';

/*
 * The DurableTrigger on its own, run through n8n-core's real TriggerContext (test/nodeContext.ts) by a
 * node whose engine is a recording stand-in: what it writes, emits, reports and closes. The two
 * triggers' node tests run it with their real engines.
 */

/** What the stand-in engine was told, and what it does when started. */
interface Recorded {
	settled: Array<[string | undefined, Settlement]>;
	started: number;
	stopped: number;
}

let engineFor: (
	trigger: DurableTrigger<string>,
	recorded: Recorded,
) => Promise<TriggerEngine<string>>;
let recorded: Recorded;
let activated: DurableTrigger<string>;

class Probe implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Probe',
		name: 'probe',
		group: ['trigger'],
		version: 1,
		description: 'A trigger whose engine the test supplies',
		defaults: { name: 'Probe' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async trigger(this: ITriggerFunctions) {
		activated = new DurableTrigger<string>(this, 'probe', 'Probe Trigger');
		return await activated.activate(async () => await engineFor(activated, recorded));
	}
}

/** A stand-in engine: each run is one item `{ run }`; `start` runs `onStart`. */
function engine(
	trigger: DurableTrigger<string>,
	onStart: () => Promise<void> = async () => undefined,
): TriggerEngine<string> {
	return {
		runs: {
			toItems: (run) => [{ json: { run } }],
			settled: ({ key }, settlement) => void recorded.settled.push([key, settlement]),
			rewrite: () => trigger.write({ rewritten: true }),
			created: () => undefined,
			writeKey: 'probe:write',
		},
		preview: async () => [{ json: { preview: true } }],
		start: async () => {
			recorded.started++;
			await onStart();
		},
		stop: () => void recorded.stopped++,
	};
}

let workflows = 0;
async function activate(
	options: Parameters<typeof activateTrigger>[2] = {},
	staticData: IDataObject = {},
): Promise<TriggerRun> {
	return await activateTrigger(
		Probe,
		{ parameters: {}, staticData, workflowId: `wf-durable-${++workflows}` },
		options,
	);
}

beforeEach(() => {
	recorded = { settled: [], started: 0, stopped: 0 };
});

describe('DurableTrigger', () => {
	it("live: the engine's state reaches the static data n8n saves with its run's emit; the settled run is reported to the engine and written under its key; the close stops the engine", async () => {
		engineFor = async (trigger) =>
			engine(trigger, async () => {
				trigger.write({ outbox: ['k1'] });
				await trigger.emit([{ key: 'k1', run: 'a' }]);
			});
		const run = await activate();
		expect(recorded.started).toBe(1);
		expect(run.emitted).toHaveLength(1);
		const [first] = run.emitted;
		expect(first.items).toEqual([[{ json: { run: 'a' } }]]);
		expect(first.deduplicationKey).toBe('k1');
		expect(first.saved?.['node:Probe']).toEqual({ probe: { outbox: ['k1'] } });

		first.done!.resolve(endedRun());
		await flushPromises();
		expect(recorded.settled).toEqual([['k1', 'started']]);
		// The settlement write: an empty emit under the settled run's key, with the rewritten state.
		expect(run.emitted[1]).toMatchObject({ items: [[]], deduplicationKey: 'k1' });
		expect(run.emitted[1].saved?.['node:Probe']).toEqual({ probe: { rewritten: true } });

		await run.close();
		expect(recorded.stopped).toBe(1);
	});

	it('a build that throws refuses the activation with n8n’s error, before anything is written or started', async () => {
		engineFor = async () => {
			throw new Error('"Interval" must be at least 1');
		};
		const staticData = { 'node:Probe': { probe: { kept: true } } };
		const refused = activate({}, staticData);
		await expect(refused).rejects.toThrow(NodeOperationError);
		await expect(refused).rejects.toThrow('"Interval" must be at least 1');
		expect(staticData).toEqual({ 'node:Probe': { probe: { kept: true } } });
		expect(recorded.started).toBe(0);
	});

	it('a refused activation is reported by one failed execution naming the field, not again at n8n’s retries with the same message, and again once an activation succeeded; Execute step reports none', async () => {
		const failures: Error[] = [];
		const setup = { parameters: {}, staticData: {}, workflowId: 'wf-refused', failures };
		let refusal = '"Interval" must be at least 1';
		engineFor = async (trigger) => {
			if (refusal !== '') throw new Error(refusal);
			return engine(trigger);
		};
		const attempt = async () => await activateTrigger(Probe, setup).catch((e: unknown) => e);
		for (let retry = 0; retry < 5; retry++)
			expect(await attempt()).toBeInstanceOf(NodeOperationError);
		expect(failures.map((error) => error.message)).toEqual([
			'Not activated: "Interval" must be at least 1',
		]);
		refusal = 'the history table cannot be read';
		await attempt();
		expect(failures).toHaveLength(2);
		refusal = '';
		await ((await attempt()) as TriggerRun).close();
		refusal = 'the history table cannot be read';
		await attempt();
		expect(failures).toHaveLength(3);
		await activateTrigger(Probe, setup, { mode: 'manual' }).catch(() => undefined);
		expect(failures).toHaveLength(3);
	});

	it('a start that throws closes the activation again (the engine is stopped) and refuses it with n8n’s error', async () => {
		engineFor = async (trigger) =>
			engine(trigger, async () => {
				throw new Error('the history table cannot be read');
			});
		await expect(activate()).rejects.toThrow(NodeOperationError);
		expect(recorded).toMatchObject({ started: 1, stopped: 1 });
	});

	it('Execute step emits the preview and starts nothing', async () => {
		engineFor = async (trigger) => engine(trigger);
		const run = await activate({ mode: 'manual' });
		await run.response.manualTriggerFunction!();
		expect(run.emitted.map(({ items }) => items)).toEqual([[[{ json: { preview: true } }]]]);
		expect(recorded.started).toBe(0);
		await run.close();
	});

	it('storeNow has n8n store the state under the write key where n8n refuses a key it has (2.x), and does nothing without deduplication keys (1.x)', async () => {
		engineFor = async (trigger) => engine(trigger, async () => trigger.write({ polled: 1 }));
		const modern = await activate();
		activated.storeNow();
		await flushPromises();
		expect(modern.emitted).toMatchObject([{ items: [[]], deduplicationKey: 'probe:write' }]);
		await modern.close();

		const n8n1 = await activate({ wrap: without('deduplicationKeys') });
		activated.storeNow();
		await flushPromises();
		expect(n8n1.emitted).toEqual([]);
		await n8n1.close();
	});

	it('names the node in its log lines and records a failure no caller can be told of as a failed execution', async () => {
		engineFor = async (trigger) => engine(trigger);
		const run = await activate();
		activated.warn('the history is large');
		activated.fail(new Error('the source answered 500'));
		expect(run.warnings).toContain('Probe Trigger "Probe": the history is large');
		expect(run.failures.map((error) => [error.constructor.name, error.message])).toEqual([
			['NodeOperationError', 'the source answered 500'],
		]);
		await run.close();
	});
});
