/** An execution's custom data, as n8n's `$execution.customData` offers it. */
export interface CustomData {
	set(key: string, value: string): void;
	get(key: string): string | undefined;
}

/**
 * The execution's custom data, found by what this n8n offers rather than by its version:
 * n8n 2.x gives execute and webhook contexts a `customData` object; n8n 1.x has none there (reading it
 * failed with "Cannot read properties of undefined (reading 'set')") but every node context of 1.x
 * carries the same store as the `$execution.customData` of expressions, in its `additionalKeys`
 * (n8n-core 1.x `NodeExecutionContext.additionalKeys`, built on the run's `resultData.metadata`).
 * Returns undefined when neither exists.
 */
export function customDataOf(context: object): CustomData | undefined {
	const direct = (context as { customData?: Partial<CustomData> }).customData;
	if (isCustomData(direct)) return direct;
	const viaExpressions = (
		context as { additionalKeys?: { $execution?: { customData?: Partial<CustomData> } } }
	).additionalKeys?.$execution?.customData;
	if (isCustomData(viaExpressions)) return viaExpressions;
	return undefined;
}

function isCustomData(value: Partial<CustomData> | undefined): value is CustomData {
	return typeof value?.set === 'function' && typeof value.get === 'function';
}
