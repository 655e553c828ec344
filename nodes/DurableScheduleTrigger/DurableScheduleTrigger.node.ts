import {
	type IDataObject,
	type INodeType,
	type INodeTypeDescription,
	type ITriggerFunctions,
	type ITriggerResponse,
	NodeConnectionTypes,
} from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import {
	attemptKey,
	type CatchUpPolicy,
	createSchedule,
	fireItem,
	type OverlapPolicy,
	previewItem,
	ScheduleEngine,
	type ScheduleEngineOptions,
	type StartedFire,
	startedRecord,
} from '../../core/schedule';
import { SECOND_MS, type TimeUnit, UNIT_MS } from '../../core/units';
import { RunEmitter } from '../shared/emitRuns';
import { type LiveCopiesWriter, writerToLiveCopies } from '../shared/liveCopies';
import { knownSchedules } from './knownSchedules';
import { saveTriggerFailure, toNodeError } from '../shared/errors';
import { timeUnitOptions } from '../shared/parameters';

/** The node's key in its static data (`node:<name>`); the value carries its own format version. */
const STATE_KEY = 'schedule';
/** How many upcoming fires "Execute step" lists. */
const PREVIEW_FIRES = 5;

type Settings = Pick<
	ScheduleEngineOptions,
	| 'schedule'
	| 'catchUp'
	| 'runAllLimit'
	| 'overlap'
	| 'jitterMs'
	| 'lateGraceMs'
	| 'historyLimit'
	| 'maxRunMs'
>;

/** Reads the parameters into engine options; the core validates them (a ConfigError naming the field). */
function settingsFrom(context: ITriggerFunctions): Settings {
	const parameter = (name: string, fallback?: unknown) => context.getNodeParameter(name, fallback);
	const options = parameter('options', {}) as IDataObject;
	const secondsToMs = (value: unknown) =>
		value === undefined ? undefined : Math.round(Number(value) * SECOND_MS);
	const schedule =
		parameter('scheduleType') === 'cron'
			? createSchedule({
					kind: 'cron',
					expression: parameter('cron') as string,
					timezone: (parameter('timezone', '') as string) || context.getTimezone(),
				})
			: createSchedule({
					kind: 'interval',
					intervalMs:
						(parameter('interval') as number) *
						(UNIT_MS[parameter('intervalUnit') as TimeUnit] ?? NaN),
				});
	const overlapKind = parameter('overlap') as OverlapPolicy['kind'];
	const overlap =
		overlapKind === 'queue'
			? { kind: overlapKind, queueLimit: parameter('queueLimit') as number }
			: overlapKind === 'allow-parallel'
				? { kind: overlapKind, maxParallel: parameter('maxParallel') as number }
				: { kind: overlapKind };
	const catchUp = parameter('catchUp') as CatchUpPolicy;
	return {
		schedule,
		catchUp,
		runAllLimit: catchUp === 'run-all' ? (parameter('runAllLimit') as number) : undefined,
		overlap: overlap as OverlapPolicy,
		jitterMs: secondsToMs(options.jitter),
		lateGraceMs: secondsToMs(options.lateGrace),
		historyLimit: options.historyLimit as number | undefined,
		maxRunMs:
			options.maxRunMinutes === undefined
				? undefined
				: Math.round(Number(options.maxRunMinutes) * 60_000),
	};
}

export class DurableScheduleTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Durable Schedule Trigger',
		name: 'durableScheduleTrigger',
		icon: {
			light: 'file:durableScheduleTrigger.svg',
			dark: 'file:durableScheduleTrigger.dark.svg',
		},
		group: ['trigger', 'schedule'],
		version: 1,
		subtitle:
			'={{($parameter["scheduleType"] === "cron" ? $parameter["cron"] : "Every " + $parameter["interval"] + " " + $parameter["intervalUnit"]) + " · catch-up: " + $parameter["catchUp"] + " · overlap: " + $parameter["overlap"]}}',
		description:
			'Starts the workflow on a schedule that survives restarts: missed windows are caught up by policy, overlapping runs are limited, and no window runs twice',
		eventTriggerDescription: '',
		activationMessage:
			'Runs now start on the schedule; missed windows are caught up by the catch-up policy.',
		defaults: { name: 'Durable Schedule Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		properties: [
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
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [
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
						displayName: 'History Limit',
						name: 'historyLimit',
						type: 'number',
						default: 100,
						typeOptions: { minValue: 1, maxValue: 1000 },
						description: 'Fire history entries kept in the workflow (newest kept)',
					},
				],
			},
		],
	};

	/**
	 * Activation: validates the parameters (a throw fails the activation, naming the parameter), then
	 * catches up, then arms the timer. "Execute step" (manual mode) only previews: it starts, stores
	 * and arms nothing.
	 */
	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const node = this.getNode();
		const staticData = this.getWorkflowStaticData('node');
		const scheduleId = `${this.getWorkflow().id ?? 'unsaved'}:${node.id}`;
		const onError = (error: unknown) => saveTriggerFailure(this, toNodeError(node, error));
		let settings: Settings;
		let engine: ScheduleEngine;
		// n8n settles `done` when the run ends (success, error, cancelled, or paused in a Wait node)
		// and at once for a window it already ran (same deduplication key).
		const emitter = new RunEmitter<StartedFire>(this, {
			toItems: (fire) => [{ json: { ...fireItem(fire), outcome: startedRecord(fire).outcome } }],
			settled: async ({ run }, settlement, error) =>
				await (
					settlement === 'started'
						? engine.fireEnded(run.runKey)
						: engine.fireNotCreated(run.runKey, error ?? new Error('unknown error'))
				).catch(onError),
			rewrite: () => engine.rewrite(),
			// Each settlement is written at once (one per window, so few): with Allow Parallel a run may
			// always be in flight, and a settlement held until none is would be lost by a crash.
			busyWriteIntervalMs: 0,
			// n8n 1.x has no deduplication keys: a window leaves the outbox as soon as n8n created its run.
			created: ({ run }) => engine.fireCreated(run.runKey),
		});
		const live = this.getMode() !== 'manual';
		// Registered once the settings are checked (writerToLiveCopies); the engine writes only later.
		let liveCopies: LiveCopiesWriter | undefined;
		try {
			settings = settingsFrom(this);
			engine = new ScheduleEngine({
				clock: systemClock,
				scheduleId,
				...settings,
				storedState: staticData[STATE_KEY],
				remembered: live ? knownSchedules.get(scheduleId) : undefined,
				// n8n writes static data to its database only when a trigger emits (and once after
				// activation), and only notices reassigned top-level keys: each write replaces the state.
				write: (state) => {
					if (liveCopies) liveCopies.write(STATE_KEY, state as unknown as IDataObject);
					else staticData[STATE_KEY] = state as unknown as IDataObject;
					if (live) knownSchedules.set(scheduleId, state);
				},
				emit: async (fires) =>
					await emitter.emit(
						// A retried window goes under a fresh key (attemptKey): n8n refuses one it has a row for.
						fires.map((fire) => ({ key: `dst:${attemptKey(fire)}`, run: fire })),
					),
				maxRunMs: settings.maxRunMs,
				onError,
			});
		} catch (error) {
			throw toNodeError(node, error);
		}
		if (live) liveCopies = writerToLiveCopies(this);
		const closeFunction = async () => {
			liveCopies?.close();
			emitter.stop();
			engine.deactivate();
		};

		if (this.getMode() === 'manual') {
			const manualTriggerFunction = async () => {
				const preview = engine.preview(Date.now(), PREVIEW_FIRES);
				this.emit([
					[
						{
							json: {
								preview: true,
								scheduleId,
								schedule: settings.schedule.fingerprint,
								...previewItem(preview),
							},
						},
					],
				]);
			};
			return { closeFunction, manualTriggerFunction };
		}

		// Catch-up runs are emitted here, before trigger() returns: in trigger mode emit is live, and
		// n8n saves static data once more after activation, which stores a catch-up that emitted nothing.
		const report = await engine.activate();
		if (report.notice)
			this.logger.warn(`Durable Schedule Trigger "${node.name}": ${report.notice}`);
		this.logger.debug(`Durable Schedule Trigger "${node.name}" activated`, {
			...report,
			nextFireAt: new Date(report.nextFireAt).toISOString(),
		});
		return { closeFunction };
	}
}
