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
import { DurableTrigger, type TriggerEngine } from '../shared/durableTrigger';
import { durableScheduleTriggerProperties } from './DurableScheduleTriggerDescription';
import { knownSchedules } from './knownSchedules';
import { missedWindowsReporter } from './missedWindows';
import { readRetryPolicy, runResult } from '../shared/whenRunFails';

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
	| 'retry'
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
		retry: readRetryPolicy(parameter),
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
		properties: durableScheduleTriggerProperties,
	};

	/**
	 * Activation: validates the parameters (a throw fails the activation, naming the parameter), then
	 * catches up, then arms the timer. "Execute step" (manual mode) only previews: it starts, stores
	 * and arms nothing.
	 */
	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const trigger = new DurableTrigger<StartedFire>(this, STATE_KEY, 'Durable Schedule Trigger');
		return await trigger.activate(async () => scheduleEngine(this, trigger));
	}
}

/** The schedule's engine on the saved state, its settings checked, as the DurableTrigger drives it. */
function scheduleEngine(
	context: ITriggerFunctions,
	trigger: DurableTrigger<StartedFire>,
): TriggerEngine<StartedFire> {
	const { live } = trigger;
	const scheduleId = `${trigger.workflowId ?? 'unsaved'}:${trigger.node.id}`;
	const onError = (error: unknown) => trigger.fail(error);
	const settings = settingsFrom(context);
	const engine = new ScheduleEngine({
		clock: systemClock,
		scheduleId,
		...settings,
		storedState: trigger.saved,
		remembered: live ? knownSchedules.get(scheduleId) : undefined,
		// n8n writes static data to its database only when a trigger emits (and once after
		// activation), and only notices reassigned top-level keys: each write replaces the state.
		write: (state) => {
			trigger.write(state);
			if (live) knownSchedules.set(scheduleId, state);
		},
		emit: async (fires) =>
			await trigger.emit(
				// A retried window goes under a fresh key (attemptKey): n8n refuses one it has a row for.
				fires.map((fire) => ({ key: `dst:${attemptKey(fire)}`, run: fire })),
			),
		maxRunMs: settings.maxRunMs,
		onError,
		onMissed: missedWindowsReporter(context, trigger),
	});
	return {
		// n8n settles `done` when the run ends (success, error, cancelled, or paused in a Wait node)
		// and at once for a window it already ran (same deduplication key).
		runs: {
			toItems: (fire) => [{ json: { ...fireItem(fire), outcome: startedRecord(fire).outcome } }],
			settled: async ({ run }, settlement, error, result) =>
				await (
					settlement === 'started'
						? engine.fireEnded(run.runKey, runResult(result))
						: engine.fireNotCreated(run.runKey, error ?? new Error('unknown error'))
				).catch(onError),
			rewrite: () => engine.rewrite(),
			// Each settlement is written at once (one per window, so few): with Allow Parallel a run may
			// always be in flight, and a settlement held until none is would be lost by a crash.
			busyWriteIntervalMs: 0,
			// n8n 1.x has no deduplication keys: a window leaves the outbox as soon as n8n created its run.
			created: ({ run }) => engine.fireCreated(run.runKey),
		},
		preview: async () => [
			{
				json: {
					preview: true,
					scheduleId,
					schedule: settings.schedule.fingerprint,
					...previewItem(engine.preview(Date.now(), PREVIEW_FIRES)),
				},
			},
		],
		// Catch-up runs are emitted here, before trigger() returns: in trigger mode emit is live, and
		// n8n saves static data once more after activation, which stores a catch-up that emitted nothing.
		start: async () => {
			const report = await engine.activate();
			if (report.notice) trigger.warn(report.notice);
			context.logger.debug(`Durable Schedule Trigger "${trigger.node.name}" activated`, {
				...report,
				nextFireAt: new Date(report.nextFireAt).toISOString(),
			});
		},
		stop: () => engine.deactivate(),
	};
}
