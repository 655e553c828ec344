/**
 * The two ways a poll trigger is wrongly set up, kept apart so the node can say which one it is:
 * a setting that can never work (fix the node's parameters) and an item the op returned that the
 * settings cannot handle (fix the expression or the source).
 */

/** A setting that can never work; `field` names the parameter to fix. */
export class PollConfigError extends Error {
	constructor(
		readonly field: string,
		message: string,
	) {
		super(message);
		this.name = 'PollConfigError';
	}
}

/** One item of the op's result that the settings cannot handle; `index` is its 0-based position. */
export class PollItemError extends Error {
	constructor(
		readonly index: number,
		detail: string,
	) {
		super(`Item ${index}: ${detail}`);
		this.name = 'PollItemError';
	}
}

const MAX_SHOWN_CHARS = 100;

/** A value as a user would recognise it in an error message, cut short so a huge item cannot flood the log. */
export function showValue(value: unknown): string {
	const text =
		value === undefined || (typeof value === 'number' && !Number.isFinite(value))
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
