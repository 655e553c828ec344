import { type INode, type ITriggerFunctions, NodeOperationError } from 'n8n-workflow';

import { ConfigError } from '../../core/configError';
import { n8nCapabilities, saveFailedExecution } from './n8nDoor';

/**
 * Turns an error from the core into the error n8n shows and records, for every node. Core errors
 * already say what went wrong in terms of the user's parameters; a ConfigError (a setting to fix)
 * also points at its parameter (or credential field) as the editor labels it, and other errors
 * carry their details (a response snippet) in the description.
 */
export function toNodeError(node: INode, error: unknown, itemIndex?: number): NodeOperationError {
	if (error instanceof NodeOperationError) return error;
	const cause = error instanceof Error ? error : new Error(String(error));
	const description =
		cause instanceof ConfigError
			? cause.credential
				? `Check the "${cause.label}" field of the ${cause.credential}.`
				: `Check the "${cause.label}" parameter.`
			: (cause as Error & { details?: { description?: string } }).details?.description;
	return new NodeOperationError(node, cause, { message: cause.message, description, itemIndex });
}

/**
 * Records a trigger's failure as a failed execution (which runs the workflow's error workflow) where
 * n8n offers `saveFailedExecution` to triggers (2.x; capability `failedExecutionSaving`, n8nDoor.ts).
 * n8n 1.x has no such function (its `emitError` deactivates the workflow and reactivates it later,
 * which would throw the trigger's backoff away): there the failure goes to n8n's log as an error,
 * and the trigger's observed state keeps it.
 */
export function saveTriggerFailure(context: ITriggerFunctions, error: NodeOperationError): void {
	if (n8nCapabilities(context).failedExecutionSaving) {
		saveFailedExecution(context, error);
		return;
	}
	context.logger.error(
		`${context.getNode().name}: ${error.message}${error.description ? ` (${error.description})` : ''}`,
		{ workflowId: context.getWorkflow().id },
	);
}
