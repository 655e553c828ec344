import { ConfigError } from '../configError';
import { FIELD_LABELS } from './types';

/** The `with` parameter: the op's arguments as a JSON object, given as text or already parsed. */
export function parseWith(value: unknown): Record<string, unknown> {
	if (value === undefined || value === null || value === '') return {};
	let parsed: unknown = value;
	if (typeof value === 'string') {
		try {
			parsed = JSON.parse(value);
		} catch (error) {
			throw new ConfigError(
				'with',
				FIELD_LABELS.with,
				value,
				`not valid JSON: ${(error as Error).message}`,
			);
		}
	}
	if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
		throw new ConfigError(
			'with',
			FIELD_LABELS.with,
			parsed,
			"must be a JSON object of the op's arguments",
		);
	}
	return parsed as Record<string, unknown>;
}

/** A ConfigError for the argument `key` in "With", showing the argument's value. */
export function argumentError(key: string, value: unknown, problem: string): ConfigError {
	return new ConfigError('with', FIELD_LABELS.with, value, problem, { key });
}

/** A true/false argument; "true"/"false" text counts, since n8n expressions often produce strings. */
export function booleanArg(value: unknown, key: string, fallback: boolean): boolean {
	if (value === undefined || value === null || value === '') return fallback;
	if (typeof value === 'boolean') return value;
	if (value === 'true' || value === 'false') return value === 'true';
	throw argumentError(key, value, 'must be true or false');
}
