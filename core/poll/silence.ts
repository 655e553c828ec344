import { checkRange, showDuration } from '../configError';

/**
 * "Alert When Nothing New For": a source that stops producing (the export job upstream died) is
 * reported, once, by a failed execution, and once more when it produces again. The time of the last
 * new item and whether the silence was reported live in the trigger's state, so a restart neither
 * resets the silence nor reports it twice. Checked after every poll, so it is as precise as the
 * interval (as the backoff while polls fail: two intervals by default, runner.ts).
 */

export const SILENCE_MIN_MS = 60_000;
export const SILENCE_MAX_MS = 366 * 86_400_000;

export function checkedSilenceAfter(ms: number): number {
	return checkRange(
		'silenceAfterMin',
		ms,
		{ min: SILENCE_MIN_MS, max: SILENCE_MAX_MS },
		{ duration: 'minutes' },
	);
}

export interface SavedSilence {
	/** When a poll last started something new, or when the watch began (ms since the epoch). */
	lastNewAt: number;
	/** The silence since lastNewAt was reported. */
	reported?: true;
}

/** What a poll changed: the silence began to be reported, or it ended. */
export type SilenceNews = { kind: 'silent'; message: string } | { kind: 'back'; message: string };

export class SilenceWatch {
	private state: SavedSilence;

	constructor(
		private readonly afterMs: number,
		saved: SavedSilence | undefined,
		now: number,
	) {
		this.state = typeof saved?.lastNewAt === 'number' ? saved : { lastNewAt: now };
	}

	/** After a poll (failed ones too: a source that cannot be read lists nothing new either). */
	polled(startedNew: boolean, now: number): SilenceNews | undefined {
		const silentFor = showDuration(Math.max(0, now - this.state.lastNewAt));
		const since = new Date(this.state.lastNewAt).toISOString();
		if (startedNew) {
			const wasReported = this.state.reported === true;
			this.state = { lastNewAt: now };
			return wasReported
				? {
						kind: 'back',
						message: `The source lists new items again, after ${silentFor} without any (since ${since})`,
					}
				: undefined;
		}
		if (this.state.reported || now - this.state.lastNewAt < this.afterMs) return undefined;
		this.state = { ...this.state, reported: true };
		return {
			kind: 'silent',
			message: `Nothing new from the source for ${silentFor} (since ${since}); Alert When Nothing New For is ${showDuration(this.afterMs)}`,
		};
	}

	saved(): SavedSilence {
		return this.state;
	}
}
