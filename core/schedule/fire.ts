/** Identity and timing of one schedule fire. */
import { isoTime as iso } from '../units';

/**
 * The run key of a window: stable across restarts and replicas, so a consumer that dedupes on it
 * turns at-least-once delivery into effectively-once.
 */
export function runKey(scheduleId: string, declaredAt: number): string {
	return `${scheduleId}@${new Date(declaredAt).toISOString()}`;
}

/**
 * The run key of a coalesced catch-up run: the FIRST window it covers, which every activation from
 * the same stored state agrees on. The newest window would not do: after a crash before the state
 * write, a longer outage would cover the same windows again under another key (a repeat). A
 * suffix keeps it apart from the key of that window's own run (a run-all catch-up of it).
 */
export function coalescedRunKey(scheduleId: string, firstDeclaredAt: number): string {
	return `${runKey(scheduleId, firstDeclaredAt)}/coalesced`;
}

/**
 * The key n8n gets for one attempt at creating a window's run: the run key, `/attempt<n>` for the
 * window's n-th run after failed ones (When a Run Fails), then `#<attempt>` from the second attempt
 * at creating that run on. A retried window needs a fresh key: n8n refuses a key it has a row for,
 * and in queue mode it saves a failed row under the key before rejecting a run it could not enqueue.
 */
export function attemptKey(fire: Pick<Fire, 'runKey' | 'attempt' | 'runAttempt'>): string {
	const run = (fire.runAttempt ?? 1) > 1 ? `${fire.runKey}/attempt${fire.runAttempt}` : fire.runKey;
	return (fire.attempt ?? 1) > 1 ? `${run}#${fire.attempt}` : run;
}

/**
 * Deterministic jitter in [0, jitterMs) for a run key: spreads many schedules that share a window
 * while every replica and every restart agrees on when a given window fires.
 */
export function jitterFor(key: string, jitterMs: number): number {
	if (jitterMs <= 0) return 0;
	// FNV-1a, 32 bits: cheap, stable and evenly spread enough for timing.
	let hash = 0x811c9dc5;
	for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
	return (hash >>> 0) % jitterMs;
}

/** How a run came about; it decides the history outcome and whether the run is reprocessing. */
export type FireKind = 'scheduled' | 'catch-up' | 'coalesced';

/** The windows one coalesced run stands for. */
export interface CoalescedWindows {
	count: number;
	firstDeclaredAt: number;
	lastDeclaredAt: number;
	/** The newest windows, oldest first, capped (see COALESCED_LIST_LIMIT); `count` says how many there were. */
	windows: number[];
}

/** A run the engine decided on (maybe queued). JSON-safe: queued fires are persisted. */
export interface Fire {
	runKey: string;
	/** The window (validTime). For a coalesced run: the newest window it covers (its key names the first). */
	declaredAt: number;
	kind: FireKind;
	coalesced?: CoalescedWindows;
	/** Which attempt at creating the run (absent: the first); see attemptKey. */
	attempt?: number;
	/** The window's run after this many failed ones, plus one (When a Run Fails; absent: the first). */
	runAttempt?: number;
	/**
	 * When it may start (ms since the epoch): a window waiting out its backoff, stored so that a
	 * restart waits out what is left of it. Absent: at once.
	 */
	dueAt?: number;
}

/** A fire at the moment it is handed to the node to emit. */
export interface StartedFire extends Fire {
	/** When the run was started (systemTime). */
	actualAt: number;
	/** actualAt - declaredAt: measured against the declared window, not the jittered time. */
	latenessMs: number;
	/** True for catch-up and coalesced runs: the window is in the past and being backfilled. */
	reprocessing: boolean;
}

/** The fire as decided, without the fields of one start or its wait (to start it again). */
export function unstarted(fire: StartedFire): Fire {
	const plain: Fire & Partial<StartedFire> = { ...fire };
	delete plain.dueAt;
	delete plain.actualAt;
	delete plain.latenessMs;
	delete plain.reprocessing;
	return plain;
}

export function startFire(fire: Fire, now: number): StartedFire {
	return {
		...fire,
		actualAt: now,
		latenessMs: now - fire.declaredAt,
		reprocessing: fire.kind !== 'scheduled',
	};
}

/** The JSON a node emits for a started fire: times as ISO strings, bitemporal fields named. */
export function fireItem(fire: StartedFire): Record<string, unknown> {
	return {
		runKey: fire.runKey,
		kind: fire.kind,
		declaredAt: iso(fire.declaredAt),
		actualAt: iso(fire.actualAt),
		latenessMs: fire.latenessMs,
		reprocessing: fire.reprocessing,
		...(fire.attempt !== undefined && fire.attempt > 1 && { attempt: fire.attempt }),
		...(fire.runAttempt !== undefined && { runAttempt: fire.runAttempt }),
		// Bitemporal names: the run is about the window (valid time), recorded now (system time).
		validTime: iso(fire.declaredAt),
		systemTime: iso(fire.actualAt),
		...(fire.coalesced && {
			coalesced: {
				count: fire.coalesced.count,
				firstDeclaredAt: iso(fire.coalesced.firstDeclaredAt),
				lastDeclaredAt: iso(fire.coalesced.lastDeclaredAt),
				windows: fire.coalesced.windows.map(iso),
				windowsTruncated: fire.coalesced.windows.length < fire.coalesced.count,
			},
		}),
	};
}
