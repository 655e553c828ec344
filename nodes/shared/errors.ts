import {
	type INode,
	type INodeProperties,
	type ITriggerFunctions,
	NodeOperationError,
} from 'n8n-workflow';

import { ConfigError, credentialRef, fieldRef } from '../../core/configError';
import { connectorNodeProperties } from '../Connector/ConnectorDescription';
import { durableScheduleTriggerProperties } from '../DurableScheduleTrigger/DurableScheduleTriggerDescription';
import { pollTriggerProperties } from '../PollTrigger/PollTriggerDescription';
import { roundTripCallbackProperties } from '../RoundTripCallback/RoundTripCallbackDescription';
import { roundTripWaitProperties } from '../RoundTripWait/RoundTripWaitDescription';
import { sayFields } from './editorWords';
import { n8nCapabilities, saveFailedExecution } from './n8nDoor';

/**
 * Each node's parameters by its type name, the very lists its description shows (the node files
 * cannot be imported here: they import this file): the labels messages say (editorWords.ts).
 */
export const NODE_PROPERTIES: Record<string, INodeProperties[]> = {
	pollTrigger: pollTriggerProperties,
	durableScheduleTrigger: durableScheduleTriggerProperties,
	roundTripWait: roundTripWaitProperties,
	roundTripCallback: roundTripCallbackProperties,
	connector: connectorNodeProperties,
};

/** The node's parameters: its type is `<package>.<name>`, or `<name>Tool` as an AI tool. */
function propertiesOf(node: INode): INodeProperties[] | undefined {
	const name = node.type.slice(node.type.lastIndexOf('.') + 1);
	return NODE_PROPERTIES[name] ?? NODE_PROPERTIES[name.replace(/Tool$/, '')];
}

/**
 * A text of the core (a message, a warning) with the fields it names said as the editor labels
 * them: the node's own fields by its description.
 */
export function inEditorWords(text: string, node: INode): string {
	return sayFields(text, propertiesOf(node));
}

/**
 * Turns an error from the core into the error n8n shows and records, for every node. Core errors
 * say what went wrong in terms of the user's parameters, naming them by id; they are said here as the
 * editor labels them. A ConfigError (a setting to fix) also points at its parameter (or credential
 * field), and other errors carry their details (a response snippet) in the description.
 */
export function toNodeError(node: INode, error: unknown, itemIndex?: number): NodeOperationError {
	if (error instanceof NodeOperationError) return error;
	const cause = error instanceof Error ? error : new Error(String(error));
	const description =
		cause instanceof ConfigError
			? inEditorWords(
					cause.credential === undefined
						? `Check the "${fieldRef(cause.field)}" parameter.`
						: `Check the "${fieldRef(cause.field, cause.credential)}" field of the ${credentialRef(cause.credential)} credential${cause.credentialName === undefined ? '' : ` "${cause.credentialName}"`}.`,
					node,
				)
			: (cause as Error & { details?: { description?: string } }).details?.description;
	return nodeError(node, inEditorWords(cause.message, node), { cause, description, itemIndex });
}

/**
 * The one way the nodes make n8n's error: a NodeOperationError whose message is `message`, word for
 * word. n8n-workflow's NodeError replaces any message that contains a socket code (ECONNREFUSED,
 * ENOTFOUND, ETIMEDOUT, EACCES, ... anywhere, in any case) with stock text naming no host ("The
 * service refused the connection - perhaps it is offline"), even one given as the `message` option;
 * the core's words avoid those codes (core/connectors/network.ts), but a server's or a run's text
 * (a dead letter's last error) may hold one, so the message is set again after the constructor.
 */
export function nodeError(
	node: INode,
	message: string,
	options: { cause?: Error; description?: string; itemIndex?: number } = {},
): NodeOperationError {
	const { cause, description, itemIndex } = options;
	const error = new NodeOperationError(node, cause ?? message, {
		message,
		description,
		itemIndex,
	});
	error.message = message;
	return error;
}

/**
 * Records a trigger's failure as a failed execution (which runs the workflow's error workflow) where
 * n8n offers `saveFailedExecution` to triggers (2.x; capability `failedExecutionSaving`, n8nDoor.ts).
 * n8n 1.x has no such function (its `emitError` deactivates the workflow and reactivates it later,
 * which would throw the trigger's backoff away): there the failure goes to n8n's log as an error,
 * and the trigger's observed state keeps it. The error's message is said in the editor's words first
 * (a failed poll's error comes from the core as it is).
 */
export function saveTriggerFailure(context: ITriggerFunctions, error: NodeOperationError): void {
	const node = context.getNode();
	error.message = inEditorWords(error.message, node);
	if (n8nCapabilities(context).failedExecutionSaving) {
		saveFailedExecution(context, error);
		return;
	}
	context.logger.error(
		`${node.name}: ${error.message}${error.description ? ` (${error.description})` : ''}`,
		{ workflowId: context.getWorkflow().id },
	);
}
