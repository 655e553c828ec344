import { CronSchedule } from './cron';
import { IntervalSchedule } from './interval';
import type { Schedule, ScheduleDefinition } from './types';

export type { Schedule, ScheduleDefinition, WindowSpan } from './types';

/** Builds a schedule, throwing a ConfigError for an invalid definition. */
export function createSchedule(definition: ScheduleDefinition): Schedule {
	return definition.kind === 'cron'
		? new CronSchedule(definition.expression, definition.timezone)
		: new IntervalSchedule(definition.intervalMs, definition.anchorMs);
}
