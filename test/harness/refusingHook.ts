import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { N8nInstance } from './n8nInstance';
import { instancesDir } from './paths';

/**
 * An n8n external hook file (EXTERNAL_HOOK_FILES) whose workflow.preExecute refuses one execution of
 * a workflow while a file named by its id is in a folder of this process (and removes the file).
 * n8n 2.x runs that hook before it creates the execution: a run n8n refuses to create. n8n 1.x runs
 * it inside the execution it has created (its workflowExecuteBefore hook): the run exists and fails.
 */
export function refusingHook(name: string): {
	/** The environment that loads the hook, for N8nInstance.launch. */
	env: Record<string, string>;
	/** Makes the hook refuse the workflow's next execution. */
	refuseNext: (workflowId: string) => void;
	/** The message of the error the hook throws. */
	message: string;
	/**
	 * Checks how refusals were reported, given each workflow's name and failed executions: one failed
	 * execution naming n8n's refusal. The hook refuses a workflow's next execution, and it cannot tell
	 * a run from the trigger's state-write emit (an empty emit under a key n8n then refuses as a
	 * duplicate): n8n 2.41 runs workflow.preExecute before it checks the deduplication key
	 * (workflow-runner.js: prepareNewExecution, then activeExecutions.add). When the refusal falls on
	 * that write, no run was refused and nothing is to report: at most one report per workflow, at
	 * least one in all.
	 */
	expectReported: (n8n: N8nInstance, failed: Array<[string, string[]]>) => Promise<void>;
} {
	const refuseDir = join(instancesDir, `${name}-refuse-${process.pid}`);
	mkdirSync(refuseDir, { recursive: true });
	const hooks = join(instancesDir, `${name}-hooks-${process.pid}.js`);
	const message = 'refused by the test hook';
	writeFileSync(
		hooks,
		`const fs = require('node:fs');
const path = require('node:path');
module.exports = { workflow: { preExecute: [async function (workflow) {
	try { fs.unlinkSync(path.join(${JSON.stringify(refuseDir)}, String(workflow && workflow.id))); } catch { return; }
	throw new Error(${JSON.stringify(message)});
}] } };`,
	);
	return {
		env: { EXTERNAL_HOOK_FILES: hooks },
		refuseNext: (workflowId) => writeFileSync(join(refuseDir, workflowId), ''),
		message,
		expectReported: async (n8n, failed) => {
			expect(failed.flatMap(([, ids]) => ids).length).toBeGreaterThanOrEqual(1);
			expect(failed.map(([name, ids]) => [name, ids.length <= 1])).toEqual(
				failed.map(([name]) => [name, true]),
			);
			for (const [, ids] of failed)
				for (const id of ids)
					expect((await n8n.execution(id)).data?.resultData.error?.message).toContain(message);
		},
	};
}
