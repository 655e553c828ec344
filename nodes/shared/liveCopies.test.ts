import type { IDataObject } from 'n8n-workflow';

import { triggerContext } from '../../test/nodeContext';
import { PollTrigger } from '../PollTrigger/PollTrigger.node';
import { workflowStaticData } from './n8nDoor';

/*
 * liveCopies.ts (and emitRuns.ts, which waits on n8n's change flag) read the one thing the node API
 * does not hand out: the whole static data n8n saves, through n8n-core's trigger context. This pins
 * what they rely on in the n8n-core this package is tested with; the day n8n moves it, this fails.
 */
describe('the whole static data a trigger context runs on (liveCopies.ts)', () => {
	it("n8n-core's TriggerContext keeps the workflow whose static data n8n saves: its node:<name> is the node's static data, and a write to that sets the flag n8n saves on", () => {
		const staticData: IDataObject = { 'node:Other': { kept: true } };
		const context = triggerContext(
			PollTrigger,
			{ parameters: { op: 'http.request', with: '{}', id: 'id' }, staticData, name: 'Poll' },
			() => undefined,
		);
		const root = workflowStaticData(context);
		expect(root).toBe(context.workflow.staticData);
		const nodeData = context.getWorkflowStaticData('node');
		expect(root?.['node:Poll']).toBe(nodeData);
		expect(root?.['node:Other']).toEqual({ kept: true });
		expect(root?.__dataChanged).toBe(false);
		nodeData.pollTrigger = { v: 1 };
		expect(root?.__dataChanged).toBe(true);
	});
});
