import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { N8nInstance } from './n8nInstance';
import { waitFor } from './net';
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
	 * Checks how refusals were reported, given each workflow's name and id: one failed execution
	 * naming n8n's refusal. The trigger reports a run n8n did not create once its emitter is idle, so
	 * after the refused run's item came back and ran: this waits for the reports (a count of the
	 * burst's runs can end before them). The hook refuses a workflow's next execution, and it cannot
	 * tell a run from the trigger's state-write emit (an empty emit under a key n8n then refuses as a
	 * duplicate): n8n 2.41 runs workflow.preExecute before it checks the deduplication key
	 * (workflow-runner.js: prepareNewExecution, then activeExecutions.add). When the refusal falls on
	 * that write, no run was refused and nothing is to report: at most one report per workflow, at
	 * least one in all.
	 */
	expectReported: (n8n: N8nInstance, workflows: Array<[string, string]>) => Promise<void>;
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
		expectReported: async (n8n, workflows) => {
			const failedOf = async (workflowId: string) =>
				(await n8n.executionSummaries(workflowId))
					.filter((e) => e.mode === 'trigger' && e.status === 'error')
					.map((e) => e.id);
			const failed = await waitFor(
				'a failed execution reporting a run n8n refused to create',
				async () => {
					const found: Array<[string, string[]]> = [];
					for (const [name, workflowId] of workflows)
						found.push([name, await failedOf(workflowId)]);
					return found.some(([, ids]) => ids.length > 0) ? found : undefined;
				},
				{ timeoutMs: 300_000, intervalMs: 2_000 },
			);
			expect(failed.map(([name, ids]) => [name, ids.length <= 1])).toEqual(
				failed.map(([name]) => [name, true]),
			);
			for (const [, ids] of failed)
				for (const id of ids)
					expect((await n8n.execution(id)).data?.resultData.error?.message).toContain(message);
		},
	};
}
