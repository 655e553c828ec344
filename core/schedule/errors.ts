/**
 * A schedule setting the user can fix. `field` names the node parameter (`cron`, `timezone`,
 * `interval`, ...) so the node can point at it; the message names the field, the value and what
 * is wrong with it.
 */
export class ScheduleConfigError extends Error {
	constructor(
		readonly field: string,
		message: string,
	) {
		super(message);
		this.name = 'ScheduleConfigError';
	}
}

/** Builds the uniform message: `Invalid <what> <value> for "<field>": <problem>`. */
export function configError(field: string, what: string, value: unknown, problem: string): ScheduleConfigError {
	return new ScheduleConfigError(field, `Invalid ${what} ${JSON.stringify(value)} for "${field}": ${problem}`);
}

/** Returns `value` if it is an integer in [min, max]; otherwise throws naming `field`. */
export function requireIntegerInRange(field: string, value: unknown, min: number, max: number): number {
	if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
		throw configError(field, 'value', value, `must be a whole number from ${min} to ${max}`);
	}
	return value;
}
