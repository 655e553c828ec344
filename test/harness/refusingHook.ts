import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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
	};
}
