import { type INode, NodeOperationError } from 'n8n-workflow';

/**
 * Turns an error from the core into the error n8n shows and records. Core errors already say what
 * went wrong in terms of the user's fields ("Invalid JSONata in \"id\": ..."); the description carries
 * the details a core error attaches (a response snippet, the field name).
 */
export function toNodeError(node: INode, error: unknown, itemIndex?: number): NodeOperationError {
	if (error instanceof NodeOperationError) return error;
	const cause = error instanceof Error ? error : new Error(String(error));
	const details = cause as Error & { field?: string; details?: { description?: string } };
	const description = details.details?.description ?? (details.field ? `Check the "${details.field}" field.` : undefined);
	return new NodeOperationError(node, cause, { message: cause.message, description, itemIndex });
}
