import { checkRange } from '../configError';
import { type OutboxEntry, storedOutboxEntries } from '../outbox';
import { mergeUndos, type Undo } from './dedupe';
import type { ItemKey } from './expressions';

/**
 * A poll run as the stored outbox holds it. A one-item run is stored without its items (its emit
 * carries them). A run of several items (One Run per Item off) is stored with them once armed, so
 * that an activation can emit it again; held, it carries only what forgetting its items takes.
 */
export interface StagedRun<I> {
	items?: I[];
	keys: ItemKey[];
	undo?: Undo;
	/** Stored with items once armed, not armed yet: its items are in this process's memory only. */
	held?: true;
	/** A run started again after a failed one (retries.ts): its attempt (2 and up). */
	attempt?: number;
	/**
	 * Where the op read each item (OpResult `positionOf`), for an op with a read position: if n8n
	 * does not start the run, the position goes back to list them again (ConnectorOp.rewind).
	 */
	positions?: string[];
}

/** Items of armed runs stored in the outbox at once (the first run is armed whatever its size). */
export const ARMED_ITEMS_MAX_BYTES = 1024 * 1024;
/**
 * What the static-data copies of the runs in flight may add up to: n8n 2.41 reads the workflow's
 * whole static data from the database twice for every run it creates (trigger-execution-context.
 * factory.js `loadPublishedWorkflowData`, workflow-runner.js `prepareNewExecution`) and each run
 * keeps its copy until it ends.
 */
export const ARMED_COPIES_MAX_BYTES = 512 * 1024 * 1024;
/**
 * Runs in flight at once whatever their size, unless the node's "Max Runs in Flight" says otherwise:
 * n8n's back-pressure. n8n 2.41 creates every run it is handed at once, and 300 runs of 100 B handed
 * over together took n8n's resident memory to 4.1 GB, 1,000 of 20 KB to 12 GB, its default heap
 * limit being 4.2 GiB (bench/pollEndToEnd.bench.ts, the floor trigger's rows); the burst ended no
 * sooner than with 50 at a time.
 */
export const ARMED_RUNS_MAX = 50;

export function checkedMaxRunsInFlight(max: number): number {
	return checkRange('maxRunsInFlight', max, { min: 1, whole: true });
}

/**
 * Whether one more run, storing `itemBytes` of items, may be armed next to `armed`, the state
 * (without the outbox's items) being `stateBytes`, at most `maxRuns` in flight. At least one run is
 * always armed, so a burst always moves.
 */
export function mayArm(
	armed: { runs: number; itemBytes: number },
	itemBytes: number,
	stateBytes: number,
	maxRuns = ARMED_RUNS_MAX,
): boolean {
	if (armed.runs === 0) return true;
	const items = armed.itemBytes + itemBytes;
	return (
		armed.runs < maxRuns &&
		items <= ARMED_ITEMS_MAX_BYTES &&
		(armed.runs + 1) * 2 * (stateBytes + items) <= ARMED_COPIES_MAX_BYTES
	);
}

interface Staged<I> {
	/** As stored. */
	run: StagedRun<I>;
	/** As emitted. */
	items: I[];
	/** Of the items stored with the run once armed (0 for a one-item run). */
	itemBytes: number;
	armed: boolean;
}

/**
 * The Poll Trigger's outbox (core/outbox.ts protocol), so that a burst's items are not multiplied by
 * its runs, nor its state written once per wave: every run n8n creates loads the whole static data,
 * and an outbox that held the items of all a burst's runs until they ended would make each run
 * load them all (300 items of 60 KB: 18 MB per load, 600 loads).
 *
 * A poll's write records every run of its burst, one-item runs without their items. Runs are
 * *armed* (emitted) in order while mayArm allows, the rest as earlier ones settle, with no write of
 * their own: their emit carries their items. (How fast n8n is handed the armed runs is the
 * emitter's: nodes/shared/emitRuns.ts, `chunked`.) A run of several items is stored with its items when
 * it is armed (that arming is a write), and held without them until then.
 *
 * Crash argument. A run stored with its items is emitted again by the next activation, and n8n
 * refuses it if it was created. A held run was never emitted: no execution holds its key; the next
 * activation forgets its items (its undo), so the next poll that lists them plans them again. A
 * one-item run stored without items may or may not have been created: the next activation forgets
 * its item and restages its key (DedupeStore.restage), so the next poll that lists the item emits it
 * under the same key, which n8n refuses if the run was created. What changes with a crash or stop:
 * an item whose run n8n had not created is started only if the source still lists it.
 */
export class RunStage<I> {
	/** In emit order: armed runs first, then the rest. Keys are unique. */
	private readonly entries = new Map<string, Staged<I>>();
	private armedItemBytes = 0;
	private armedRuns = 0;
	/** Runs found in the stored state that cannot be emitted again: held, or stored without items. */
	private storedWithoutItems: Array<OutboxEntry<StagedRun<I>>> = [];

	constructor(
		saved: unknown,
		private readonly sizeOf: (items: I[]) => number,
		/** The size of the static data without the outbox's items, as mayArm takes it. */
		private readonly stateBytes: () => number,
		private readonly maxRuns = ARMED_RUNS_MAX,
	) {
		for (const { key, run } of storedOutboxEntries<StagedRun<I>>(saved)) {
			if (run.held || run.items === undefined) this.storedWithoutItems.push({ key, run });
			else
				this.arm(key, { run, items: run.items, itemBytes: this.sizeOf(run.items), armed: false });
		}
	}

	get size(): number {
		return this.entries.size;
	}

	/** Runs not armed yet. */
	get heldCount(): number {
		return this.entries.size - this.armedRuns;
	}

	has(key: string): boolean {
		return this.entries.has(key);
	}

	/**
	 * Runs of the stored state that cannot be emitted again, oldest first, given once: held ones
	 * (never emitted, to forget) and one-item runs stored without items (to restage), except those
	 * `inFlight` says this process emitted and n8n has not settled yet: those stay, armed, and are
	 * settled with their runs.
	 */
	takeStoredWithoutItems(inFlight: (key: string) => boolean): {
		held: Array<OutboxEntry<StagedRun<I>>>;
		unsure: Array<OutboxEntry<StagedRun<I>>>;
	} {
		const stored = this.storedWithoutItems;
		this.storedWithoutItems = [];
		const held: Array<OutboxEntry<StagedRun<I>>> = [];
		const unsure: Array<OutboxEntry<StagedRun<I>>> = [];
		for (const entry of stored) {
			if (entry.run.held) held.push(entry);
			else if (inFlight(entry.key))
				this.arm(entry.key, { run: entry.run, items: [], itemBytes: 0, armed: false });
			else unsure.push(entry);
		}
		return { held, unsure };
	}

	/**
	 * A poll's runs, in start order, stored with or without their items (`storeItems`): a run armed
	 * later needs no write unless it stores items. Returns the runs armed now, to emit once the state
	 * is written.
	 */
	add(
		runs: ReadonlyArray<{
			key: string;
			items: I[];
			keys: ItemKey[];
			undo?: Undo;
			positions?: string[];
		}>,
		storeItems: boolean,
	) {
		for (const { key, items, keys, undo, positions } of runs) {
			const staged = this.entries.get(key);
			if (staged) {
				// Planned again while staged (the cap forgot its key, the source listed it again): the
				// staged run carries it, and undoes this poll's write too if n8n does not create it.
				if (undo) staged.run = { ...staged.run, undo: mergeUndos([staged.run.undo, undo]) };
				continue;
			}
			this.entries.set(key, {
				run: {
					keys,
					...(undo && { undo }),
					...(positions && { positions }),
					...(storeItems && { held: true as const }),
				},
				items,
				itemBytes: storeItems ? this.sizeOf(items) : 0,
				armed: false,
			});
		}
		return this.armNext();
	}

	/**
	 * Arms runs not armed yet, oldest first, while mayArm allows (after a poll's add, and as runs
	 * settle); returns them as emitted (with their items). Runs added with `storeItems` are stored with them from now on: write the state first.
	 */
	armNext(): Array<OutboxEntry<StagedRun<I>>> {
		const armed: Array<OutboxEntry<StagedRun<I>>> = [];
		const stateBytes = this.stateBytes();
		for (const [key, staged] of this.entries) {
			if (staged.armed) continue;
			const window = { runs: this.armedRuns, itemBytes: this.armedItemBytes };
			if (!mayArm(window, staged.itemBytes, stateBytes, this.maxRuns)) break;
			this.arm(key, staged);
			armed.push({ key, run: { ...staged.run, items: staged.items } });
		}
		return armed;
	}

	/** n8n settled the run (or it is forgotten): it leaves, and frees its room in the window. */
	settle(key: string): StagedRun<I> | undefined {
		const staged = this.entries.get(key);
		if (!staged) return undefined;
		this.entries.delete(key);
		if (staged.armed) {
			this.armedRuns--;
			this.armedItemBytes -= staged.itemBytes;
		}
		return staged.run;
	}

	/** Armed runs, oldest first, as emitted: what an activation emits again. */
	armed(): Array<OutboxEntry<StagedRun<I>>> {
		return [...this.entries]
			.filter(([, staged]) => staged.armed)
			.map(([key, { run, items }]) => ({ key, run: { ...run, items } }));
	}

	/** JSON-safe form for static data: one-item runs and held ones without their items. */
	saved(): Array<OutboxEntry<StagedRun<I>>> {
		return [...this.entries].map(([key, { run }]) => ({ key, run }));
	}

	/** Marks `staged` armed; a run held to store its items now stores them. */
	private arm(key: string, staged: Staged<I>): void {
		if (staged.run.held) {
			const { keys, undo, positions } = staged.run;
			staged.run = {
				items: staged.items,
				keys,
				...(undo && { undo }),
				...(positions && { positions }),
			};
		}
		staged.armed = true;
		this.entries.set(key, staged);
		this.armedRuns++;
		this.armedItemBytes += staged.itemBytes;
	}
}
