import { type OutboxEntry, storedOutboxEntries } from '../outbox';
import type { Undo } from './dedupe';
import type { ItemKey } from './expressions';

/**
 * A poll run as the stored outbox holds it. An armed run carries its items, so that an activation
 * can emit it again; a held run carries only what forgetting its items takes.
 */
export interface StagedRun<I> {
	items?: I[];
	keys: ItemKey[];
	undo?: Undo;
	/** Not emitted yet: its items are in this process's memory only (see RunStage). */
	held?: true;
}

/** Items of armed runs in the stored outbox at once (the first run is armed whatever its size). */
export const ARMED_ITEMS_MAX_BYTES = 1024 * 1024;
/**
 * What the static-data copies of the armed runs may add up to: n8n 2.41 reads the workflow's whole
 * static data from the database twice for every run it creates (trigger-execution-context.factory.js
 * `loadPublishedWorkflowData`, workflow-runner.js `prepareNewExecution`) and each run keeps its copy
 * until it ends.
 */
export const ARMED_COPIES_MAX_BYTES = 512 * 1024 * 1024;

/**
 * Whether one more run, with `itemBytes` of items, may be armed next to `armed`, the state (without
 * the outbox's items) being `stateBytes`. At least one run is always armed, so a burst always moves.
 */
export function mayArm(
	armed: { runs: number; itemBytes: number },
	itemBytes: number,
	stateBytes: number,
): boolean {
	if (armed.runs === 0) return true;
	const items = armed.itemBytes + itemBytes;
	return (
		items <= ARMED_ITEMS_MAX_BYTES &&
		(armed.runs + 1) * 2 * (stateBytes + items) <= ARMED_COPIES_MAX_BYTES
	);
}

interface Staged<I> {
	run: StagedRun<I>;
	/** The items, while the run is held. */
	items?: I[];
	itemBytes: number;
}

/**
 * The Poll Trigger's outbox (core/outbox.ts protocol), in two stages, so that a burst's items are
 * not multiplied by its runs: every run n8n creates loads the whole static data, and an outbox that
 * held the items of all a burst's runs until they ended would make each run load them all (300
 * items of 60 KB: 18 MB per load, 600 loads). So only a window of runs is *armed* (stored with
 * its items and emitted), bounded by mayArm; the rest of the burst is *held*: remembered by the
 * dedupe store in the same write as the armed ones, stored without items, emitted once armed as
 * earlier runs settle.
 *
 * Crash argument. An armed run is stored with its items before it is emitted (its arming is the
 * state the emit makes n8n write), so the next activation emits it again and n8n refuses it if it
 * was created. A held run was never emitted: no execution holds its key. The next activation
 * forgets its items (its undo), so the next poll that lists them plans them again, as new. A held
 * item that the source no longer lists by then is not started: it was listed once and never started.
 */
export class RunStage<I> {
	/** In emit order: armed runs first, then held ones. Keys are unique. */
	private readonly entries = new Map<string, Staged<I>>();
	private armedItemBytes = 0;
	private armedRuns = 0;
	/** Runs armed after the last arming; refill waits until half of them have settled. */
	private highWater = 0;
	/** Held runs found in the stored state: the activation forgets their items (takeStoredHeld). */
	private storedHeld: Array<OutboxEntry<StagedRun<I>>> = [];

	constructor(
		saved: unknown,
		private readonly sizeOf: (items: I[]) => number,
		/** The size of the static data without the outbox's items, as mayArm takes it. */
		private readonly stateBytes: () => number,
	) {
		for (const { key, run } of storedOutboxEntries<StagedRun<I>>(saved)) {
			if (run.held) this.storedHeld.push({ key, run });
			else this.arm(key, run, run.items ?? []);
		}
	}

	get size(): number {
		return this.entries.size;
	}

	/** Runs stored held, not emitted yet. */
	get heldCount(): number {
		return this.entries.size - this.armedRuns;
	}

	has(key: string): boolean {
		return this.entries.has(key);
	}

	/** Held runs of the stored state, oldest first; given once. */
	takeStoredHeld(): Array<OutboxEntry<StagedRun<I>>> {
		const held = this.storedHeld;
		this.storedHeld = [];
		return held;
	}

	/**
	 * A poll's runs, in start order: armed while the window allows, held after the first that does
	 * not fit (runs start in order). Returns the runs armed now, to emit once the state is written.
	 */
	add(runs: ReadonlyArray<{ key: string; items: I[]; keys: ItemKey[]; undo?: Undo }>) {
		for (const { key, items, keys, undo } of runs) {
			if (this.entries.has(key)) continue;
			const run: StagedRun<I> = { keys, ...(undo && { undo }), held: true };
			this.entries.set(key, { run, items, itemBytes: this.sizeOf(items) });
		}
		return this.armNext();
	}

	/** Arms held runs, oldest first, while the window allows; returns them. */
	armNext(): Array<OutboxEntry<StagedRun<I>>> {
		const armed: Array<OutboxEntry<StagedRun<I>>> = [];
		const stateBytes = this.stateBytes();
		for (const [key, staged] of this.entries) {
			if (!staged.run.held) continue;
			const window = { runs: this.armedRuns, itemBytes: this.armedItemBytes };
			if (!mayArm(window, staged.itemBytes, stateBytes)) break;
			const { keys, undo } = staged.run;
			armed.push({ key, run: this.arm(key, { keys, ...(undo && { undo }) }, staged.items ?? []) });
		}
		if (armed.length > 0) this.highWater = this.armedRuns;
		return armed;
	}

	/**
	 * After settlements: arms held runs once at least half of those armed last have settled, so a
	 * burst's state is written once per batch, not once per settled run (each arming is a write).
	 */
	refill(): Array<OutboxEntry<StagedRun<I>>> {
		return this.armedRuns * 2 > this.highWater ? [] : this.armNext();
	}

	/** n8n settled the run (or it is forgotten): it leaves, and frees its room in the window. */
	settle(key: string): StagedRun<I> | undefined {
		const staged = this.entries.get(key);
		if (!staged) return undefined;
		this.entries.delete(key);
		if (!staged.run.held) {
			this.armedRuns--;
			this.armedItemBytes -= staged.itemBytes;
		}
		return staged.run;
	}

	/** Armed runs, oldest first: what an activation emits again. */
	armed(): Array<OutboxEntry<StagedRun<I>>> {
		return [...this.entries]
			.filter(([, staged]) => !staged.run.held)
			.map(([key, { run }]) => ({ key, run }));
	}

	/** JSON-safe form for static data: held runs without their items. */
	saved(): Array<OutboxEntry<StagedRun<I>>> {
		return [...this.entries].map(([key, { run }]) => ({ key, run }));
	}

	/** `run` without items and not held. */
	private arm(key: string, run: StagedRun<I>, items: I[]): StagedRun<I> {
		const itemBytes = this.entries.get(key)?.itemBytes ?? this.sizeOf(items);
		const armed: StagedRun<I> = { ...run, items };
		this.entries.set(key, { run: armed, itemBytes });
		this.armedRuns++;
		this.armedItemBytes += itemBytes;
		return armed;
	}
}
