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
import { durableScheduleTriggerProperties } from './DurableScheduleTriggerDescription';
import { knownSchedules } from './knownSchedules';
import { missedWindowsReporter } from './missedWindows';
import { saveTriggerFailure, toNodeError } from '../shared/errors';
import { announceMissing } from '../shared/n8nDoor';
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
				onMissed: missedWindowsReporter(this),
			});
		} catch (error) {
			throw toNodeError(node, error);
		}
		if (live) {
			// What this n8n offers the trigger (n8nDoor.ts); what it lacks is said once, and it does without.
			announceMissing(this, 'trigger');
			liveCopies = writerToLiveCopies(this);
		}
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
