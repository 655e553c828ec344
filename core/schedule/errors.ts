/**
 * A schedule setting the user can fix. `field` names the node parameter (`cron`, `timezone`,
 * `interval`, ...) so the node can point at it; the message names the parameter as the editor
 * labels it (FIELD_LABELS), the value and what is wrong with it.
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

/** The Durable Schedule Trigger's parameters as its editor labels them, by parameter name. */
export const FIELD_LABELS: Readonly<Record<string, string>> = {
	interval: 'Interval',
	cron: 'Cron Expression',
	timezone: 'Timezone',
	catchUp: 'Catch-Up',
	runAllLimit: 'Run-All Limit',
	overlap: 'Overlap',
	queueLimit: 'Queue Limit',
	maxParallel: 'Max Parallel Runs',
	jitter: 'Jitter (Seconds)',
	lateGrace: 'Late Grace (Seconds)',
	historyLimit: 'History Limit',
	maxRunDuration: 'Max Run Duration (Minutes)',
};

/** The editor's label for a parameter name (the name itself for settings the editor does not show). */
export function fieldLabel(field: string): string {
	return FIELD_LABELS[field] ?? field;
}

/** Builds the uniform message: `Invalid <what> <value> for "<label>": <problem>`. */
export function configError(
	field: string,
	what: string,
	value: unknown,
	problem: string,
): ScheduleConfigError {
	return new ScheduleConfigError(
		field,
		`Invalid ${what} ${JSON.stringify(value)} for "${fieldLabel(field)}": ${problem}`,
	);
}

/** Returns `value` if it is an integer in [min, max]; otherwise throws naming `field`. */
export function requireIntegerInRange(
	field: string,
	value: unknown,
	min: number,
	max: number,
): number {
	if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
		throw configError(field, 'value', value, `must be a whole number from ${min} to ${max}`);
	}
	return value;
}
