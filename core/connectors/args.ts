import { checkRange, ConfigError } from '../configError';

/** The `with` parameter: the op's arguments as a JSON object, given as text or already parsed. */
export function parseWith(value: unknown): Record<string, unknown> {
	if (value === undefined || value === null || value === '') return {};
	let parsed: unknown = value;
	if (typeof value === 'string') {
		try {
			parsed = JSON.parse(value);
		} catch (error) {
			throw new ConfigError('with', value, `not valid JSON: ${(error as Error).message}`);
		}
	}
	if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
		throw new ConfigError('with', parsed, "must be a JSON object of the op's arguments");
	}
	return parsed as Record<string, unknown>;
}

/** A ConfigError for the argument `key` in "With", showing the argument's value. */
export function argumentError(key: string, value: unknown, problem: string): ConfigError {
	return new ConfigError('with', value, problem, { key });
}

/** A true/false argument; "true"/"false" text counts, since n8n expressions often produce strings. */
export function booleanArg(value: unknown, key: string, fallback: boolean): boolean {
	if (value === undefined || value === null || value === '') return fallback;
	if (typeof value === 'boolean') return value;
	if (value === 'true' || value === 'false') return value === 'true';
	throw argumentError(key, value, 'must be true or false');
}

/** A number argument in `range`; numeric text counts (n8n expressions often produce strings). */
export function numberArg(
	value: unknown,
	key: string,
	fallback: number,
	range: { min: number; max: number; whole?: boolean },
): number {
	if (value === undefined || value === null || value === '') return fallback;
	const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	return checkRange('with', Number.isNaN(number) ? value : number, range, {
		key,
	});
}

const PLACEHOLDER = /\{\{\s*\$([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** The names of the `{{ $name }}` placeholders in `with`. */
export function placeholdersIn(args: unknown): Set<string> {
	const names = new Set<string>();
	const walk = (value: unknown) => {
		if (typeof value === 'string')
			for (const match of value.matchAll(PLACEHOLDER)) names.add(match[1]);
		else if (Array.isArray(value)) value.forEach(walk);
		else if (typeof value === 'object' && value !== null) Object.values(value).forEach(walk);
	};
	walk(args);
	return names;
}

/**
 * `with` with its `{{ $name }}` placeholders replaced by `values` (values the trigger owns, such as
 * its cursor: a poll has no run data for n8n expressions). A string that is only a placeholder takes
 * the value as it is (a number stays a number in a JSON body); inside text it is written as text.
 * An unknown name is a ConfigError naming it.
 */
export function fillPlaceholders(
	args: Record<string, unknown>,
	values: Record<string, unknown>,
): Record<string, unknown> {
	const fill = (value: unknown): unknown => {
		if (typeof value === 'string') {
			const whole = /^\{\{\s*\$([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/.exec(value);
			if (whole) return valueOf(whole[1], value);
			return value.replace(PLACEHOLDER, (_, name: string) => String(valueOf(name, value)));
		}
		if (Array.isArray(value)) return value.map(fill);
		if (typeof value === 'object' && value !== null)
			return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
		return value;
	};
	const valueOf = (name: string, text: string) => {
		if (!Object.prototype.hasOwnProperty.call(values, name))
			throw new ConfigError(
				'with',
				text,
				`"$${name}" is not a value the trigger has; use ${Object.keys(values)
					.map((known) => `{{ $${known} }}`)
					.join(' or ')}`,
			);
		return values[name];
	};
	return fill(args) as Record<string, unknown>;
}
