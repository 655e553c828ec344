import { ConnectorConfigError } from './types';

/** The `with` parameter: the op's arguments as a JSON object, given as text or already parsed. */
export function parseWith(value: unknown): Record<string, unknown> {
	if (value === undefined || value === null || value === '') return {};
	let parsed: unknown = value;
	if (typeof value === 'string') {
		try {
			parsed = JSON.parse(value);
		} catch (error) {
			throw new ConnectorConfigError(
				'with',
				`"with" is not valid JSON: ${(error as Error).message}`,
			);
		}
	}
	if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
		throw new ConnectorConfigError(
			'with',
			`"with" must be a JSON object of the op's arguments; got ${JSON.stringify(parsed)}`,
		);
	}
	return parsed as Record<string, unknown>;
}
