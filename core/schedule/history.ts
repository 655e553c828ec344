import type { OutboxEntry } from '../outbox';
import type { Fire, StartedFire } from './fire';
import { runKey } from './fire';
import { isoTime } from '../units';

/**
 * `released`: the overlap slot of a run that never reported its end was freed (Max Run Duration).
 * `retried`: n8n could not create the run; it is tried again under a fresh key (one entry per failed
 * attempt; the last failed attempt is recorded `missed` instead).
 * `failed`: the window's run failed (When a Run Fails: Start the Window Again): one entry per failed
 * run, saying whether it runs again and when. `recovered`: a run after failed ones did not fail.
 */
export type FireOutcome =
	| 'fired'
	| 'skipped'
	| 'queued'
	| 'missed'
	| 'caught_up'
	| 'coalesced'
	| 'released'
	| 'retried'
	| 'failed'
	| 'recovered';
const OUTCOMES: readonly FireOutcome[] = [
	'fired',
	'skipped',
	'queued',
	'missed',
	'caught_up',
	'coalesced',
	'released',
	'retried',
	'failed',
	'recovered',
];

/**
 * One line of a schedule's fire history: declared vs actual time and what became of the window.
 * An entry may stand for several windows (`count` > 1, oldest `firstDeclaredAt`): a year of
 * minutely missed windows is one entry, not 525,600. `declaredAt` always names the newest window
 * the entry covers; `runKey` too, except for a coalesced run, which is keyed by its first window
 * (coalescedRunKey).
 */
export interface FireRecord {
	runKey: string;
	declaredAt: number;
	actualAt?: number;
	latenessMs?: number;
	outcome: FireOutcome;
	reason?: string;
	count?: number;
	firstDeclaredAt?: number;
	/** A run started at its second or later attempt (see `retried`). */
	attempt?: number;
	/** The window's run after failed ones (`failed`, `recovered`): which run of the window. */
	runAttempt?: number;
}

/** Entries kept per schedule (newest last): enough to answer "did it fire on time lately". */
export const HISTORY_LIMIT = 100;

/** `history` followed by `records`, keeping the newest `limit`. */
export function appendHistory(
	history: readonly FireRecord[],
	records: readonly FireRecord[],
	limit = HISTORY_LIMIT,
): FireRecord[] {
	return [...history, ...records].slice(-limit);
}

const STARTED_OUTCOME: Record<Fire['kind'], FireOutcome> = {
	scheduled: 'fired',
	'catch-up': 'caught_up',
	coalesced: 'coalesced',
};

export function startedRecord(fire: StartedFire): FireRecord {
	return {
		runKey: fire.runKey,
		declaredAt: fire.declaredAt,
		actualAt: fire.actualAt,
		latenessMs: fire.latenessMs,
		outcome: STARTED_OUTCOME[fire.kind],
		...(fire.attempt !== undefined && fire.attempt > 1 && { attempt: fire.attempt }),
		...(fire.runAttempt !== undefined && { runAttempt: fire.runAttempt }),
		...(fire.coalesced && {
			count: fire.coalesced.count,
			firstDeclaredAt: fire.coalesced.firstDeclaredAt,
		}),
	};
}

export function notStartedRecord(
	fire: Fire,
	outcome: 'skipped' | 'queued' | 'missed' | 'released' | 'retried' | 'failed' | 'recovered',
	reason?: string,
): FireRecord {
	return {
		runKey: fire.runKey,
		declaredAt: fire.declaredAt,
		outcome,
		...(reason !== undefined && { reason }),
		...(fire.runAttempt !== undefined && { runAttempt: fire.runAttempt }),
		// A coalesced run stands for its stretch of windows: so does what became of it.
		...(fire.coalesced && {
			count: fire.coalesced.count,
			firstDeclaredAt: fire.coalesced.firstDeclaredAt,
		}),
	};
}

/** One `missed` entry for a run of consecutive windows. */
export function missedRecord(
	scheduleId: string,
	windows: { count: number; first: number; last: number },
	reason: string,
): FireRecord {
	return {
		runKey: runKey(scheduleId, windows.last),
		declaredAt: windows.last,
		outcome: 'missed',
		reason,
		...(windows.count > 1 && { count: windows.count, firstDeclaredAt: windows.first }),
	};
}

/** The JSON form of a history entry (times as ISO strings), as the node shows and emits it. */
export function recordItem(record: FireRecord): Record<string, unknown> {
	const { actualAt, firstDeclaredAt } = record;
	return {
		...record,
		declaredAt: isoTime(record.declaredAt),
		...(actualAt !== undefined && { actualAt: isoTime(actualAt) }),
		...(firstDeclaredAt !== undefined && { firstDeclaredAt: isoTime(firstDeclaredAt) }),
	};
}

export interface HistorySummary {
	/** Windows per outcome (a summary entry counts all its windows). */
	windows: Record<FireOutcome, number>;
	lastStartedAt?: number;
	maxLatenessMs?: number;
}

export function summarizeHistory(history: readonly FireRecord[]): HistorySummary {
	const summary: HistorySummary = {
		windows: {
			fired: 0,
			skipped: 0,
			queued: 0,
			missed: 0,
			caught_up: 0,
			coalesced: 0,
			released: 0,
			retried: 0,
			failed: 0,
			recovered: 0,
		},
	};
	for (const record of history) {
		summary.windows[record.outcome] += record.count ?? 1;
		if (record.actualAt !== undefined)
			summary.lastStartedAt = Math.max(summary.lastStartedAt ?? record.actualAt, record.actualAt);
		if (record.latenessMs !== undefined)
			summary.maxLatenessMs = Math.max(
				summary.maxLatenessMs ?? record.latenessMs,
				record.latenessMs,
			);
	}
	return summary;
}

export const STATE_VERSION = 1;

/** What the node persists (workflow static data) between activations. */
export interface ScheduleState {
	v: typeof STATE_VERSION;
	/** Fingerprint of the schedule that `lastDeclaredFire` and `queued` belong to. */
	scheduleFingerprint: string;
	/**
	 * Every window declared at or before this instant has been handled (started, queued, skipped or
	 * recorded missed). On first activation it is the activation time: nothing before it is missed.
	 * Undefined only before the first activation.
	 */
	lastDeclaredFire?: number;
	/** Fires accepted into the overlap queue but not started yet; started after a restart. */
	queued: Fire[];
	/** Runs written but not yet settled by n8n (core/outbox.ts); emitted again at every activation. */
	outbox: Array<OutboxEntry<StartedFire>>;
	history: FireRecord[];
	/**
	 * How many times this state was written (absent: never counted, as in states written before it
	 * existed). A stored state with a lower count than one the same process wrote before went back:
	 * another copy of the static data overwrote it (see `rollbacks`).
	 */
	seq?: number;
	/** Rollbacks noticed at activation and repaired from the process's memory, newest last (at most 10). */
	rollbacks?: RollbackRecord[];
}

/** A stored state found older than the one this process last wrote, and replaced by that one. */
export interface RollbackRecord {
	detectedAt: number;
	/** The write count of the state found in the store (0: a state without one). */
	storedSeq: number;
	/** The write count of the state restored from memory. */
	seq: number;
	/** The stored state's cursor, which the restored one is ahead of (absent: none). */
	storedLastDeclaredFire?: number;
}

export const ROLLBACK_LIMIT = 10;

export interface LoadedState {
	state: ScheduleState;
	/** Why stored progress was not used as is; `notice` says it in words for the node's log. */
	reset?: 'unknown-version' | 'invalid' | 'schedule-changed';
	notice?: string;
}

export function freshState(fingerprint: string, history: FireRecord[] = []): ScheduleState {
	return { v: STATE_VERSION, scheduleFingerprint: fingerprint, queued: [], outbox: [], history };
}

/**
 * Reads stored state. Anything unreadable starts fresh (nothing is caught up) and says why, so a
 * corrupt or future-version blob can never stop the trigger. A changed schedule keeps its history
 * (it is still true) but drops progress: windows of the old schedule are not caught up, and the
 * new schedule's windows before this activation were never declared by the user.
 */
export function loadScheduleState(raw: unknown, fingerprint: string): LoadedState {
	if (raw === undefined || raw === null) return { state: freshState(fingerprint) };
	const stored = isObject(raw) ? raw : {};
	const version = stored.v;
	if (version !== STATE_VERSION) {
		return {
			state: freshState(fingerprint),
			reset: 'unknown-version',
			notice: `Stored schedule state has unknown version ${JSON.stringify(version)}; starting fresh (no catch-up this time)`,
		};
	}
	if (!isScheduleState(stored)) {
		return {
			state: freshState(fingerprint),
			reset: 'invalid',
			notice: 'Stored schedule state is malformed; starting fresh (no catch-up this time)',
		};
	}
	// Runs already written must be emitted again whatever else changed: n8n may not have created them.
	const outbox = Array.isArray(stored.outbox)
		? (stored.outbox as ScheduleState['outbox']).filter(
				(entry) => typeof entry?.key === 'string' && isFire(entry.run),
			)
		: [];
	if (stored.scheduleFingerprint !== fingerprint) {
		return {
			state: { ...freshState(fingerprint, stored.history), outbox },
			reset: 'schedule-changed',
			notice: `Schedule changed from "${stored.scheduleFingerprint}" to "${fingerprint}"; windows of the previous schedule are not caught up`,
		};
	}
	// A copy of the known fields, so the engine never mutates the node's stored object.
	const { scheduleFingerprint, lastDeclaredFire, queued, history } = stored;
	return {
		state: {
			v: STATE_VERSION,
			scheduleFingerprint,
			lastDeclaredFire,
			queued: [...queued],
			outbox,
			history: [...history],
			...(isTime(stored.seq) && { seq: stored.seq }),
			...(Array.isArray(stored.rollbacks) && {
				rollbacks: (stored.rollbacks as RollbackRecord[]).filter(
					(r) => isObject(r) && isTime(r.detectedAt),
				),
			}),
		},
	};
}

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isTime = (value: unknown): value is number =>
	typeof value === 'number' && Number.isFinite(value);

function isFire(value: unknown): value is Fire {
	return (
		isObject(value) &&
		typeof value.runKey === 'string' &&
		isTime(value.declaredAt) &&
		['scheduled', 'catch-up', 'coalesced'].includes(value.kind as string) &&
		(value.attempt === undefined ||
			(Number.isInteger(value.attempt) && (value.attempt as number) >= 1)) &&
		(value.dueAt === undefined || isTime(value.dueAt)) &&
		(value.coalesced === undefined ||
			(isObject(value.coalesced) &&
				isTime(value.coalesced.count) &&
				isTime(value.coalesced.firstDeclaredAt) &&
				isTime(value.coalesced.lastDeclaredAt) &&
				Array.isArray(value.coalesced.windows) &&
				value.coalesced.windows.every(isTime)))
	);
}

function isFireRecord(value: unknown): value is FireRecord {
	return (
		isObject(value) &&
		typeof value.runKey === 'string' &&
		isTime(value.declaredAt) &&
		OUTCOMES.includes(value.outcome as FireOutcome)
	);
}

function isScheduleState(
	value: Record<string, unknown>,
): value is Record<string, unknown> & ScheduleState {
	return (
		typeof value.scheduleFingerprint === 'string' &&
		(value.lastDeclaredFire === undefined || isTime(value.lastDeclaredFire)) &&
		Array.isArray(value.queued) &&
		value.queued.every(isFire) &&
		Array.isArray(value.history) &&
		value.history.every(isFireRecord)
	);
}
