import { type TimeUnit, UNIT_MS } from './units';

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
	/**
	 * The value is milliseconds, of a field the user fills in `duration` (`seconds`: "Retry Delay
	 * (Seconds)"): the value and the bounds are said in that unit (`from 1 to 604800 seconds (7d)`).
	 * `true`: a field whose unit the user picks beside it (Interval and its unit), said as a duration
	 * (`5s`, `7d`).
	 */
	duration?: true | TimeUnit;
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

/**
 * The numbers a setting accepts: from `min` to `max` (unset: no upper bound), whole numbers only if
 * `whole` (of a duration: whole milliseconds). `minIs`: the field whose value `min` is (a cap is at
 * least the delay it caps), said as the lower bound.
 */
export interface Range {
	min: number;
	max?: number;
	whole?: boolean;
	minIs?: string;
}

/**
 * The one range check: returns `value` if it is a number in `range`; otherwise throws a ConfigError
 * saying the range, in the field's unit when it is a duration (`options.duration`: the value and
 * the bounds are milliseconds).
 */
export function checkRange(
	field: string,
	value: unknown,
	range: Range,
	options: ConfigErrorOptions = {},
): number {
	const { min, max = Infinity, whole = false, minIs } = range;
	const inRange =
		typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max;
	if (inRange && (!whole || Number.isInteger(value))) return value;
	const { duration } = options;
	const unit = duration === true ? undefined : duration;
	const said = (limit: number) =>
		unit === undefined
			? duration
				? pickedUnit(limit)
				: String(limit)
			: `${inUnit(limit, unit)} ${limit === UNIT_MS[unit] ? unit.slice(0, -1) : unit}`;
	// In the field's unit, a bound of a larger unit also as a duration: 604800 seconds (7d).
	const bound = (limit: number) =>
		unit !== undefined && !showDuration(limit).endsWith(UNIT_SYMBOLS[unit])
			? `${said(limit)} (${showDuration(limit)})`
			: said(limit);
	const lower = minIs === undefined ? bound(min) : `"${fieldRef(minIs)}" (${said(min)})`;
	const bounds =
		max === Infinity
			? `at least ${lower}`
			: minIs === undefined
				? `from ${unit === undefined ? bound(min) : inUnit(min, unit)} to ${bound(max)}`
				: `at least ${lower} and at most ${bound(max)}`;
	const problem = duration
		? `must be ${bounds}${inRange ? ', to the millisecond' : ''}`
		: `must be ${whole ? `a whole number ${max === Infinity ? 'of ' : ''}` : ''}${bounds}`;
	throw new ConfigError(field, value, problem, options);
}

/** What showDuration ends a duration of each unit with. */
const UNIT_SYMBOLS: Record<TimeUnit, string> = {
	seconds: 's',
	minutes: 'min',
	hours: 'h',
	days: 'd',
};

/** A duration of a field whose unit the user picks: 0 in no unit (not "0ms"), else showDuration's. */
function pickedUnit(ms: number): string {
	return ms === 0 ? '0' : showDuration(ms);
}

/** Milliseconds in `unit`, without binary fractions' noise (1000 ms in minutes: 0.0166666666667). */
function inUnit(ms: number, unit: TimeUnit): number {
	return Number((ms / UNIT_MS[unit]).toPrecision(12));
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
	if (duration && typeof value === 'number' && Number.isFinite(value))
		return duration === true ? pickedUnit(value) : String(inUnit(value, duration));
	return showValue(value);
}
