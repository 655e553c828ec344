import { fieldRef } from '../configError';
import type { DedupeStore } from './dedupe';

/**
 * What a trigger's remembered history costs, and when to say so. The history lives in the
 * workflow's static data, the one store n8n persists for a trigger, and n8n 2.41 reads the whole
 * static data from its database twice for every run a trigger starts (the published workflow's
 * data, then `prepareNewExecution`) and keeps a parsed copy with each run in flight; the editor
 * downloads it with the workflow. So past some size every run pays for the history, in time and in
 * memory. Sizes are characters of JSON (bytes: the packed history is ASCII).
 *
 * The warning levels, from measurements (docs/poll-trigger.md, "History budget"; bench/pollHistoryCost.bench.ts):
 * a run's two reads cost about 3 ms per MB of history on a 2-core machine, against about 6 ms
 * that n8n spends on a run with no history; each run in flight holds one copy, and the trigger arms
 * no more runs at once than keep their copies within 512 MiB, and at most Max Runs in Flight
 * (runStage.ts). At 1 MB (62,500 `unique` keys) the reads add a third of n8n's own cost to every
 * run; at 4 MB twice n8n's own cost; at 16 MB (a million `unique` keys) eight times, with 16 runs
 * at once (before that window, a burst of 300 runs ran n8n out of memory there).
 */
export const HISTORY_WARNING_BYTES: readonly number[] = [1_000_000, 4_000_000, 16_000_000];

/** What the watch reads of a store. */
export type WatchedStore = Pick<DedupeStore, 'size' | 'historyBytes' | 'forgotten'> &
	Partial<Pick<DedupeStore, 'historyInTable'>>;

/** How many warning levels `bytes` of history has passed (0: none). */
export function historyLevel(bytes: number): number {
	return HISTORY_WARNING_BYTES.filter((threshold) => bytes >= threshold).length;
}

/** The store's history as Execute step shows it, when there is something to say (a type, so JSON-like). */
export type HistorySummary = {
	rememberedKeys: number;
	historyBytes: number;
	maxRemembered?: number;
	/** Keys the cap has forgotten in all. */
	forgottenKeys?: number;
	/** At the last poll that forgot any: how many, and when (ISO). */
	lastForgotten?: { keys: number; at: string };
	warning?: string;
};

/** What to log: an info line when the cap forgot keys, warnings when the history costs. */
export interface HistoryLines {
	info?: string;
	warnings: string[];
}

/**
 * Watches one activation's store: warns when the history passes a warning level (at activation if
 * it is past one already, then only when it passes a higher one, never once per poll) and, once,
 * when the cap cannot hold because the source lists more keys than it; says each time the cap
 * forgot keys.
 */
export class HistoryWatch {
	private warnedLevel = 0;
	private warnedOverCap = false;
	private reportedForgotten: number;

	constructor(
		private readonly store: WatchedStore,
		/** 0: no cap. */
		private readonly maxRemembered: number,
	) {
		this.reportedForgotten = store.forgotten?.total ?? 0;
	}

	/** Call at activation and after every poll. */
	check(): HistoryLines {
		const lines: HistoryLines = { warnings: [] };
		const forgotten = this.store.forgotten;
		if (forgotten && forgotten.total > this.reportedForgotten) {
			const now = forgotten.total - this.reportedForgotten;
			this.reportedForgotten = forgotten.total;
			lines.info = `forgot ${count(now)} remembered key(s), the oldest the poll did not list, to keep at most ${count(this.maxRemembered)} ("${fieldRef('maxRemembered')}"); ${count(forgotten.total)} forgotten in all. A forgotten key the source lists again is new again.`;
		}
		if (!this.warnedOverCap && overCap(this.store, this.maxRemembered)) {
			this.warnedOverCap = true;
			lines.warnings.push(overCapWarning(this.store, this.maxRemembered));
		}
		const level = historyLevel(this.store.historyBytes);
		if (level > this.warnedLevel) {
			this.warnedLevel = level;
			lines.warnings.push(sizeWarning(this.store, this.maxRemembered));
		}
		return lines;
	}
}

/** The summary Execute step shows before the items, or undefined when the history is small and nothing was forgotten. */
export function historySummary(
	store: WatchedStore,
	maxRemembered: number,
): HistorySummary | undefined {
	const bytes = store.historyBytes;
	const forgotten = store.forgotten;
	const level = historyLevel(bytes);
	const over = overCap(store, maxRemembered);
	if (level === 0 && forgotten === undefined && !over) return undefined;
	const warnings = [
		...(over ? [overCapWarning(store, maxRemembered)] : []),
		...(level > 0 ? [sizeWarning(store, maxRemembered)] : []),
	];
	return {
		rememberedKeys: store.size,
		historyBytes: bytes,
		...(maxRemembered > 0 && { maxRemembered }),
		...(forgotten && {
			forgottenKeys: forgotten.total,
			lastForgotten: { keys: forgotten.last, at: new Date(forgotten.at).toISOString() },
		}),
		...(warnings.length > 0 && { warning: warnings.join(' ') }),
	};
}

/** Only keys the last poll listed are left over the cap (the cap keeps every listed key). */
function overCap(store: WatchedStore, maxRemembered: number): boolean {
	return maxRemembered > 0 && store.size > maxRemembered;
}

function overCapWarning(store: WatchedStore, maxRemembered: number): string {
	return `remembers ${count(store.size)} keys, more than "${fieldRef('maxRemembered')}" (${count(maxRemembered)}): the last poll listed them, and a key the source still lists is never forgotten (it would start again at the next poll). Set the cap above the number of items the source lists.`;
}

function sizeWarning(store: WatchedStore, maxRemembered: number): string {
	if (store.historyInTable)
		return `keeps ${megabytes(store.historyBytes)} of changes to its history of ${count(store.size)} keys in the workflow's static data, which n8n reads twice for every run it starts: they are saved in the PostgreSQL table ("${fieldRef('historyStore')}") only once no run of the trigger is in flight, or once the table can be reached again. See the package docs, docs/poll-trigger.md: "History Store".`;
	const remedy =
		maxRemembered > 0
			? `Lower "${fieldRef('maxRemembered')}" (now ${count(maxRemembered)})`
			: `Cap it with the option "${fieldRef('maxRemembered')}" (the oldest keys are forgotten first)`;
	return `remembers ${count(store.size)} keys: ${megabytes(store.historyBytes)} of the workflow's static data, which n8n reads from its database twice for every run it starts (and keeps a copy of with each run in flight), and which the editor downloads whenever the workflow is opened. ${remedy}, keep the history in PostgreSQL ("${fieldRef('historyStore')}"), use Dedupe "Time Window", or start one run per poll (${fieldRef('oneRunPerItem')} off). See the package docs, docs/poll-trigger.md: "History budget".`;
}

function count(n: number): string {
	return n.toLocaleString('en-US');
}

function megabytes(bytes: number): string {
	return `${(bytes / 1_000_000).toFixed(1)} MB`;
}
