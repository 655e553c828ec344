import type { FireRecord, ScheduleState } from '../../../core/schedule/history';
import { at, type Execution, type Observation } from './n8n';

/**
 * The Durable Schedule Trigger's guarantees (docs/durable-schedule-trigger.md#guarantees), as the
 * simulation judges them over one scenario. A report is what the user sees: the fire history as
 * n8n stored it (any stored state: it can be read at any time) and the runs n8n created.
 *
 * 1. **At most once**: no window runs twice (a run of its own, or within a coalesced run), nor
 *    does any retry of it. Declared: a repeat after n8n pruned the earlier run's execution while
 *    the stored outbox still held it (the key lives as long as the execution row).
 * 2. **At least once, or reported**: every window from the first stored state to the quiet end
 *    ran, or the stored history reports it `skipped` or `missed` (coalesce: the stretch its
 *    coalesced run stands for).
 * 3. **Overlap** (checked as runs start, n8n.ts): this activation's runs never exceed the policy's
 *    slots; queued windows start in declared order; a window not run is reported (2).
 * 4. **Retries counted and bounded**: at most Max Attempts runs per window, each run after the
 *    first preceded by a stored `failed` entry for the one before, and a failure the stored
 *    history says runs again does (or is recorded `missed`: n8n could not create it). Declared: a failure n8n reports while the workflow is
 *    unpublished or n8n is down, or just before a kill (before the state recording it is stored),
 *    is not retried: the re-emitted run is refused as existing, and n8n's refusal carries no status.
 * 5. **Nothing written is lost**: every run a stored outbox held (for a window up to the quiet
 *    end) is created, or recorded `missed`.
 * 6. **State bounded** (checked at every store, n8n.ts): history within History Limit, outbox
 *    within the overlap slots, queue within Queue Limit plus a catch-up.
 * 7. **Every tick ends** (n8n.ts): each activation returns, and the engine is idle at the end.
 * 8. No error reaches the engine's onError (n8n.ts).
 *
 * Returns what is violated, each in a sentence naming the windows.
 */
export function violations(observation: Observation): string[] {
	const found = [...observation.violations];
	const history = storedHistory(observation.stored);
	// Cron windows cost time-zone arithmetic: listed once.
	const judged = windows(observation);
	found.push(...atMostOnce(observation, judged), ...accounted(observation, history, judged));
	found.push(...retries(observation, history), ...outboxKept(observation, history));
	return found;
}

/** Every record any stored state held, once each. */
function storedHistory(stored: ScheduleState[]): FireRecord[] {
	// The states share their records (n8n.ts write): one of each.
	const seen = new Set<FireRecord>();
	for (const state of stored) for (const record of state.history) seen.add(record);
	return [...seen];
}

const firstRun = (execution: Execution) => (execution.fire.runAttempt ?? 1) === 1;

/** Whether a run stands for window `window`: its own, or a coalesced one over it. */
function covers(execution: Execution, window: number): boolean {
	const { fire } = execution;
	return fire.coalesced
		? fire.coalesced.firstDeclaredAt <= window && window <= fire.coalesced.lastDeclaredAt
		: fire.declaredAt === window;
}

function windows(observation: Observation): number[] {
	const first = observation.stored.find((state) => state.lastDeclaredFire !== undefined);
	if (first?.lastDeclaredFire === undefined) return [];
	const found: number[] = [];
	for (
		let window = observation.schedule.nextAfter(first.lastDeclaredFire);
		window <= observation.cutoff;
		window = observation.schedule.nextAfter(window)
	)
		found.push(window);
	return found;
}

function atMostOnce(observation: Observation, judged: number[]): string[] {
	const found: string[] = [];
	const repeated = (runs: Execution[], what: string) => {
		for (let i = 1; i < runs.length; i++) {
			const declared = runs.slice(0, i).some((run) => observation.prunedWhileOwed.has(run.n8nKey));
			if (!declared)
				found.push(
					`${what} ran twice: ${runs
						.slice(0, i + 1)
						.map((run) => `${run.n8nKey} at ${at(run.createdAt)}`)
						.join(' and ')}`,
				);
		}
	};
	const byWindow = new Map<number, Execution[]>();
	for (const execution of observation.created.filter(firstRun)) {
		const { fire } = execution;
		const covered = fire.coalesced
			? judged.filter((window) => covers(execution, window))
			: [fire.declaredAt];
		for (const window of covered)
			byWindow.set(window, [...(byWindow.get(window) ?? []), execution]);
	}
	for (const [window, runs] of byWindow) repeated(runs, `window ${at(window)}`);
	const byRetry = new Map<string, Execution[]>();
	for (const execution of observation.created.filter((run) => !firstRun(run))) {
		const key = `${execution.fire.runKey} run ${execution.fire.runAttempt}`;
		byRetry.set(key, [...(byRetry.get(key) ?? []), execution]);
	}
	for (const [key, runs] of byRetry) repeated(runs, key);
	return found;
}

function accounted(observation: Observation, history: FireRecord[], judged: number[]): string[] {
	const coveredBy = (record: FireRecord, window: number) =>
		(record.firstDeclaredAt ?? record.declaredAt) <= window && window <= record.declaredAt;
	const coalescedKeys = new Set(
		observation.created.filter((run) => run.fire.coalesced).map((run) => run.fire.runKey),
	);
	const found: string[] = [];
	const reports = history.filter((record) =>
		['skipped', 'missed', 'coalesced'].includes(record.outcome),
	);
	const ownRuns = new Set(observation.created.map((run) => run.fire.declaredAt));
	const coalescedRuns = observation.created.filter((run) => run.fire.coalesced);
	for (const window of judged) {
		const ran = ownRuns.has(window) || coalescedRuns.some((run) => covers(run, window));
		const reported = reports.some(
			(record) =>
				coveredBy(record, window) &&
				(record.outcome === 'skipped' ||
					record.outcome === 'missed' ||
					// A coalesced attempt n8n refused: the run under its key stands for the stretch.
					(record.outcome === 'coalesced' && coalescedKeys.has(record.runKey))),
		);
		if (!ran && !reported)
			found.push(`window ${at(window)} neither ran nor is reported skipped or missed`);
	}
	return found;
}

function retries(observation: Observation, history: FireRecord[]): string[] {
	const maxAttempts = observation.scenario.retry?.maxAttempts ?? 1;
	const found: string[] = [];
	for (const { fire, n8nKey, status } of observation.created) {
		if (fire.declaredAt > observation.cutoff) continue;
		const runAttempt = fire.runAttempt ?? 1;
		if (runAttempt > maxAttempts) found.push(`${n8nKey} is run ${runAttempt} of ${maxAttempts}`);
		if (
			runAttempt > 1 &&
			!history.some(
				(record) =>
					record.outcome === 'failed' &&
					record.runKey === fire.runKey &&
					(record.runAttempt ?? 1) === runAttempt - 1,
			)
		)
			found.push(`${n8nKey} ran with no stored 'failed' entry for run ${runAttempt - 1}`);
		const failureStored = history.some(
			(record) =>
				record.outcome === 'failed' &&
				record.runKey === fire.runKey &&
				(record.runAttempt ?? 1) === runAttempt,
		);
		if (status === 'error' && runAttempt < maxAttempts && failureStored) {
			const again = observation.created.some(
				(run) => run.fire.runKey === fire.runKey && (run.fire.runAttempt ?? 1) === runAttempt + 1,
			);
			const givenUp = history.some(
				(record) =>
					record.outcome === 'missed' &&
					record.runKey === fire.runKey &&
					record.runAttempt === runAttempt + 1,
			);
			if (!again && !givenUp)
				found.push(`${n8nKey} failed and its window never ran again nor is recorded missed`);
		}
	}
	return found;
}

function outboxKept(observation: Observation, history: FireRecord[]): string[] {
	const found = new Set<string>();
	for (const state of observation.stored)
		for (const { run } of state.outbox) {
			if (run.declaredAt > observation.cutoff) continue;
			const created = observation.created.some(
				(execution) =>
					execution.fire.runKey === run.runKey &&
					(execution.fire.runAttempt ?? 1) === (run.runAttempt ?? 1),
			);
			const givenUp = history.some(
				(record) => record.outcome === 'missed' && record.runKey === run.runKey,
			);
			if (!created && !givenUp)
				found.add(
					`${run.runKey} (run ${run.runAttempt ?? 1}) was in a stored outbox but never ran nor is recorded missed`,
				);
		}
	return [...found];
}
