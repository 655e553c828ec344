import type { INodeProperties } from 'n8n-workflow';

import { timeUnitOptions } from '../shared/parameters';
import { whenRunFailsProperties } from '../shared/whenRunFails';

/** The Durable Schedule Trigger's parameters and options, as the editor shows them. */
export const durableScheduleTriggerProperties: INodeProperties[] = [
	{
		displayName: 'Schedule',
		name: 'scheduleType',
		type: 'options',
		noDataExpression: true,
		default: 'interval',
		options: [
			{
				name: 'Interval',
				value: 'interval',
				description: 'Every N seconds, minutes, hours or days, on fixed boundaries',
			},
			{
				name: 'Cron Expression',
				value: 'cron',
				description: 'Wall-clock times in a time zone, e.g. weekdays at 09:30',
			},
		],
	},
	{
		displayName: 'Interval',
		name: 'interval',
		type: 'number',
		default: 1,
		typeOptions: { minValue: 1 },
		displayOptions: { show: { scheduleType: ['interval'] } },
		description:
			'How often to run: at least 10 seconds, at most 366 days. Windows sit on fixed boundaries counted from 1970-01-01T00:00Z (every 15 minutes = :00, :15, :30, :45 UTC), not from when the workflow was published.',
	},
	{
		displayName: 'Interval Unit',
		name: 'intervalUnit',
		type: 'options',
		default: 'hours',
		displayOptions: { show: { scheduleType: ['interval'] } },
		options: timeUnitOptions('seconds', 'minutes', 'hours', 'days'),
	},
	{
		displayName: 'Cron Expression',
		name: 'cron',
		type: 'string',
		default: '0 * * * *',
		placeholder: 'e.g. 30 9 * * MON-FRI',
		displayOptions: { show: { scheduleType: ['cron'] } },
		description:
			'Five fields (minute hour day-of-month month day-of-week) or six with leading seconds, e.g. "30 9 * * MON-FRI" (weekdays 09:30), "0 0 1 * *" (monthly), "*/10 * * * * *" (every 10 seconds), or @hourly / @daily / @weekly / @monthly / @yearly. Two fires must be at least 10 seconds apart.',
	},
	{
		displayName: 'Timezone',
		name: 'timezone',
		type: 'string',
		default: '',
		placeholder: 'e.g. Europe/Berlin',
		displayOptions: { show: { scheduleType: ['cron'] } },
		description:
			"IANA time zone the cron expression is read in. Empty: the workflow's time zone (workflow settings, else the instance's).",
	},
	{
		displayName: 'Catch-Up',
		name: 'catchUp',
		type: 'options',
		default: 'skip',
		description:
			'What to do, on activation, about windows that passed while the workflow was inactive or n8n was down',
		options: [
			{
				name: 'Skip',
				value: 'skip',
				description:
					'Record them as missed and wait for the next window (good for state-sync jobs)',
			},
			{
				name: 'Coalesce',
				value: 'coalesce',
				description: 'Run once for all of them; the run lists the windows it stands for',
			},
			{
				name: 'Run All',
				value: 'run-all',
				description:
					'Run once per missed window, oldest first, up to the Run-All Limit (for windows that each mean something, like a daily report)',
			},
		],
	},
	{
		displayName: 'Run-All Limit',
		name: 'runAllLimit',
		type: 'number',
		default: 10,
		typeOptions: { minValue: 1, maxValue: 1000 },
		displayOptions: { show: { catchUp: ['run-all'] } },
		description:
			'At most this many missed windows are run (the newest ones); older ones are recorded as missed. 1 to 1000.',
	},
	{
		displayName: 'Overlap',
		name: 'overlap',
		type: 'options',
		default: 'skip-if-running',
		description:
			'What a window does while runs this trigger started are still going. A run paused in a Wait node counts as ended.',
		options: [
			{
				name: 'Skip if Running',
				value: 'skip-if-running',
				description: 'Skip the window (recorded as skipped)',
			},
			{
				name: 'Queue',
				value: 'queue',
				description: 'Run it once the running run ends, up to the Queue Limit',
			},
			{
				name: 'Allow Parallel',
				value: 'allow-parallel',
				description: 'Run it alongside, up to Max Parallel Runs',
			},
		],
	},
	{
		displayName: 'Queue Limit',
		name: 'queueLimit',
		type: 'number',
		default: 10,
		typeOptions: { minValue: 1, maxValue: 1000 },
		displayOptions: { show: { overlap: ['queue'] } },
		description:
			'Windows that may wait at once; a window arriving at a full queue is skipped. 1 to 1000.',
	},
	{
		displayName: 'Max Parallel Runs',
		name: 'maxParallel',
		type: 'number',
		default: 2,
		typeOptions: { minValue: 1, maxValue: 100 },
		displayOptions: { show: { overlap: ['allow-parallel'] } },
		description:
			'Runs of this trigger that may be active at once; a window beyond that is skipped. 1 to 100.',
	},
	...whenRunFailsProperties(
		'Window',
		"The window's run starts again after a backoff (same run key; its item's runAttempt says which run), holding its overlap slot, up to Max Attempts runs; the fire history records each",
	),
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'History Limit',
				name: 'historyLimit',
				type: 'number',
				default: 100,
				typeOptions: { minValue: 1, maxValue: 1000 },
				description: 'Fire history entries kept in the workflow (newest kept)',
			},
			{
				displayName: 'Jitter (Seconds)',
				name: 'jitter',
				type: 'number',
				default: 0,
				typeOptions: { minValue: 0, maxValue: 86400 },
				description:
					'Delays each window by a fixed pseudo-random amount below this (derived from the window, so every restart agrees), to spread load. The run still belongs to its declared window.',
			},
			{
				displayName: 'Late Grace (Seconds)',
				name: 'lateGrace',
				type: 'number',
				default: 60,
				typeOptions: { minValue: 0, maxValue: 86400 },
				description:
					'A window found up to this late (slow timer, quick restart) still runs as a normal fire; later ones count as missed and get the catch-up policy',
			},
			{
				displayName: 'Max Run Duration (Minutes)',
				name: 'maxRunMinutes',
				type: 'number',
				default: 1440,
				typeOptions: { minValue: 1, maxValue: 43200 },
				description:
					'A run that has not reported its end after this long stops holding its overlap slot (recorded in the history as "released"), so a lost end report cannot block the schedule. 1 minute to 30 days.',
			},
			{
				displayName: 'Report Missed Windows',
				name: 'reportMissed',
				type: 'boolean',
				default: false,
				description:
					'Whether windows missed while n8n was down or the workflow unpublished are reported by one failed execution when the trigger is activated again (whatever Catch-Up does with them), so the error workflow runs',
			},
		],
	},
];
