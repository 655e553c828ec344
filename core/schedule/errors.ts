/**
 * The Durable Schedule Trigger's parameters as its editor labels them, by parameter name: the
 * labels its ConfigErrors (core/configError.ts) carry.
 */
export const FIELD_LABELS = {
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
	maxRunMinutes: 'Max Run Duration (Minutes)',
} as const;
