/**
 * The one error for a setting the user can fix, thrown by every part of the core (schedule, poll,
 * round trip, connectors) and translated by one function in nodes/shared/errors.ts. It carries the
 * setting's id (`field`: the node parameter or credential field, as named in the node's code), and
 * its message has one form:
 *
 *     Invalid value <value> for "«<field>»": <problem>
 *
 * The core knows no labels: a message names a field by a reference (`fieldRef`), which the node says
 * as its editor labels it (nodes/shared/editorWords.ts): `Invalid value 0 for "Queue Limit": …`.
 */

/**
 * A field named in a message, by id: `«queueLimit»` (a parameter of the node, `«pagination.nextUrl»`
 * inside a collection), `«imap:host»` (a field of a credential type); nodes/shared/editorWords.ts
 * replaces it with the field's label. Guillemets: no syntax a setting is written in (JSON, JSONata, cron, n8n
 * expressions) uses them.
 */
export function fieldRef(field: string, credential?: string): string {
	return credential === undefined ? `«${field}»` : `«${credential}:${field}»`;
}

/** A credential type named in a message (`«imap:»`), which the node says by its name in the editor. */
export function credentialRef(credential: string): string {
	return `«${credential}:»`;
}

/** How the value and its place are shown in the message. */
export interface ConfigErrorOptions {
	/** The value is milliseconds, shown as a duration (`5s`, `7d`). */
	duration?: boolean;
	/** The value is a secret: shown only when it is empty. */
	secret?: boolean;
	/** The key inside the parameter that is wrong (an argument in "With": `url`), named before the problem. */
	key?: string;
	/** The credential type the field belongs to (`imap`), for a field of a credential rather than of the node. */
	credential?: string;
	/** The stored credential's name, where the message names it. */
	credentialName?: string;
}

export class ConfigError extends Error {
	/** Set for a field of a credential: its type (see ConfigErrorOptions). */
	readonly credential: string | undefined;
	/** The stored credential's name, where the message names it. */
	readonly credentialName: string | undefined;

	constructor(
		/** The node parameter (or credential field) at fault, as named in the node's code. */
		readonly field: string,
		value: unknown,
		problem: string,
		options: ConfigErrorOptions = {},
	) {
		const { credential, credentialName, key } = options;
		const where =
			credential === undefined
				? `"${fieldRef(field)}"`
				: `"${fieldRef(field, credential)}" in the ${credentialRef(credential)} credential${
						credentialName === undefined ? '' : ` "${credentialName}"`
					}`;
		const what = key === undefined ? problem : `"${key}" ${problem}`;
		super(`Invalid value ${shown(value, options)} for ${where}: ${what}`);
		this.name = 'ConfigError';
		this.credential = credential;
		this.credentialName = credentialName;
	}
}

/** The numbers a setting accepts: from `min` to `max` (unset: no upper bound), whole numbers only if `whole`. */
export interface Range {
	min: number;
	max?: number;
	whole?: boolean;
}

/**
 * Returns `value` if it is a number in `range`; otherwise throws a ConfigError saying the range
 * (as durations when `options.duration`: the value and the bounds are milliseconds).
 */
export function checkRange(
	field: string,
	value: unknown,
	range: Range,
	options: ConfigErrorOptions = {},
): number {
	const { min, max = Infinity, whole = false } = range;
	if (
		typeof value === 'number' &&
		Number.isFinite(value) &&
		(!whole || Number.isInteger(value)) &&
		value >= min &&
		value <= max
	)
		return value;
	const bound = (limit: number) => (options.duration ? showDuration(limit) : String(limit));
	const bounds =
		max === Infinity ? `at least ${bound(min)}` : `from ${bound(min)} to ${bound(max)}`;
	const kind = options.duration ? 'a whole number of milliseconds' : 'a whole number';
	const wanted = !whole ? bounds : `${kind} ${max === Infinity ? 'of ' : ''}${bounds}`;
	throw new ConfigError(field, value, `must be ${wanted}`, options);
}

const MAX_SHOWN_CHARS = 100;

/** A value as a user would recognise it in a message, cut short so a huge item cannot flood the log. */
export function showValue(value: unknown): string {
	const text =
		value === undefined
			? '(none)'
			: typeof value === 'number' && !Number.isFinite(value)
				? String(value)
				: (JSON.stringify(value) ?? String(value));
	return text.length > MAX_SHOWN_CHARS ? `${text.slice(0, MAX_SHOWN_CHARS)}…` : text;
}

const DURATION_UNITS: Array<[number, string]> = [
	[86_400_000, 'd'],
	[3_600_000, 'h'],
	[60_000, 'min'],
	[1_000, 's'],
];

/** Milliseconds in the largest unit that divides them evenly (`5s`, `7d`), else seconds with decimals. */
export function showDuration(ms: number): string {
	for (const [unitMs, unit] of DURATION_UNITS) {
		if (ms !== 0 && ms % unitMs === 0) return `${ms / unitMs}${unit}`;
	}
	return ms >= 1_000 ? `${ms / 1_000}s` : `${ms}ms`;
}

function shown(value: unknown, { duration, secret }: ConfigErrorOptions): string {
	if (secret && value !== '' && value !== undefined && value !== null) return '(hidden)';
	if (duration && typeof value === 'number' && Number.isFinite(value)) return showDuration(value);
	return showValue(value);
}
