import { PackedIndex } from './records';

/**
 * The history store beside static data (issue 28): a keyed store's records (`unique`,
 * `time_window`, `changed`) kept in a table of the user's PostgreSQL instead of n8n's workflow
 * static data, which n8n reads twice for every run it creates and the editor downloads with the
 * workflow. The records are the same packed chunks static data holds (records.ts); the node reaches
 * the table through the user's credential (nodes/shared/historyTable.ts).
 *
 * Crash argument. The whole history stays in memory while the trigger is active, as with static
 * data; what changes is where it is saved:
 * 1. Every change of the records (a start remembered, an undo, a key forgotten or expired) is also
 *    appended to a journal, which is part of the state the trigger writes to static data: n8n stores
 *    the journal in the same write as the outbox of runs it belongs to.
 * 2. A checkpoint writes the records to the table, in one transaction with the number of journal
 *    entries they include (`seq`), only while no run of the trigger is unsettled or held. Every
 *    record it writes is then a start n8n created (or refused as one it had), a first poll's
 *    baseline, or undone: never a start n8n may not have, so nothing the table holds can keep an item
 *    from starting. Between bursts the whole journal goes; while runs are in flight it waits.
 * 3. The state written after a checkpoint drops the journal entries the table holds.
 * 4. An activation loads the table's records and replays the journal entries after its `seq`. The
 *    journal is the stored static data's, so the result is the history as n8n stored it with the
 *    outbox, whichever of the two writes a crash came between.
 */

/** A table that holds keyed stores' records beside static data, one store per key. */
export interface HistoryTable {
	/** The store's last checkpoint, or undefined if none was ever saved. */
	load(store: string): Promise<SavedHistory | undefined>;
	/**
	 * Replaces the store's checkpoint in one transaction: the chunks listed in `changed` are written,
	 * chunks at `count` and beyond are deleted, and `seq` and `state` are recorded.
	 */
	save(store: string, checkpoint: HistoryCheckpoint): Promise<void>;
}

/** A checkpoint as the table returns it. */
export interface SavedHistory {
	/** Journal entries the chunks include (all of the store's changes before that one). */
	seq: number;
	/**
	 * The rest of the store's saved state at the checkpoint (generation, attempts, marks: small), for
	 * an activation whose static data is older than the checkpoint (see TableHistory).
	 */
	state: Record<string, unknown>;
	/** The records' chunks, in order: base64 of packed records, as static data's `entries`. */
	chunks: string[];
}

/** What a checkpoint writes: the chunks changed since the last one, by index. */
export interface HistoryCheckpoint {
	seq: number;
	state: Record<string, unknown>;
	/** How many chunks the records take now. */
	count: number;
	changed: Array<[index: number, chunk: string]>;
}

/**
 * The table's key of a store: the trigger's workflow and the store's random id (drawn when the store
 * was created). Not the node's id: n8n keeps a node's static data by its name, so a node deleted and
 * added again under the same name has the old store, and must find its rows.
 */
export function historyTableKey(workflowId: string, storeId: string): string {
	return `poll:${workflowId}:${storeId}`;
}

/** Static data's record of a table's history (SavedDedupeState.history). */
export interface SavedJournal {
	from: number;
	journal: string[];
}

/**
 * A keyed store's records (a PackedIndex) and their journal, when a table holds them (see above).
 * Loads from the table's checkpoint and static data's journal, and takes checkpoints.
 */
export class TableHistory {
	readonly records: PackedIndex;
	/** The journal's first entry's number: the table's checkpoint holds every change before it. */
	private from: number;
	private journal: string[];
	/** The chunks as the table holds them; undefined until it holds this store (then all are saved). */
	private tableChunks: readonly string[] | undefined;

	/**
	 * `saved`: static data's state of the store. Without `history` the table holds nothing of it yet
	 * (a store new to the table: a switch from static data, or a first activation): its records are
	 * static data's `entries`, and the first checkpoint saves them all. With `history`, `base` must be
	 * the table's checkpoint, at or after the journal's start.
	 */
	constructor(
		valueUnits: number,
		saved: { entries?: unknown; history?: unknown } | undefined,
		base: SavedHistory | undefined,
	) {
		if (saved?.history === undefined) {
			this.records = new PackedIndex(valueUnits, saved?.entries);
			this.from = 0;
			this.journal = [];
		} else {
			const { from, journal } = savedJournalOf(saved.history);
			if (base === undefined)
				throw new Error(
					'static data says the history table holds its records, but the table has no checkpoint of this store',
				);
			if (base.seq < from || base.seq > from + journal.length)
				throw new Error(
					`the history table's checkpoint holds ${base.seq} changes, but static data's journal holds changes ${from} to ${from + journal.length}: the table was changed outside this trigger`,
				);
			this.records = new PackedIndex(valueUnits, base.chunks);
			this.journal = journal.slice(base.seq - from);
			this.records.replay(this.journal);
			this.from = base.seq;
			this.tableChunks = base.chunks;
		}
		this.records.onChange = (entry) => this.journal.push(entry);
	}

	/** What static data holds of the records: the journal once the table holds them, else the records. */
	saved(): { history: SavedJournal } | { entries: string[] } {
		return this.tableChunks === undefined
			? { entries: this.records.saved() }
			: { history: { from: this.from, journal: this.journal } };
	}

	/** The length of saved()'s JSON (what n8n reads with every run), without encoding the records. */
	get savedJsonLength(): number {
		return this.tableChunks === undefined
			? this.records.savedJsonLength
			: JSON.stringify(this.saved()).length;
	}

	/**
	 * A checkpoint of the records now, with the store's other `state`, if the table does not hold
	 * them yet; `saved()` once it does (later changes stay in the journal).
	 */
	checkpoint(state: Record<string, unknown>): PendingCheckpoint | undefined {
		if (this.journal.length === 0 && (this.tableChunks !== undefined || this.records.size === 0))
			return undefined;
		const chunks = this.records.saved();
		const held = this.tableChunks;
		const changed: Array<[number, string]> = [];
		// Unchanged chunks are the very strings the table was given (records.ts caches them).
		chunks.forEach((chunk, i) => {
			if (held?.[i] !== chunk) changed.push([i, chunk]);
		});
		const seq = this.from + this.journal.length;
		return {
			checkpoint: { seq, state, count: chunks.length, changed },
			saved: () => {
				// Taken in order: a later checkpoint saved first already dropped these entries.
				if (seq <= this.from && this.tableChunks !== undefined) return;
				this.journal = this.journal.slice(seq - this.from);
				this.from = seq;
				this.tableChunks = chunks;
			},
		};
	}
}

/** A checkpoint of the history table, taken now; `saved()` once the table holds it. */
export interface PendingCheckpoint {
	checkpoint: HistoryCheckpoint;
	saved(): void;
}

/**
 * Static data's state of a store, given the table's checkpoint of it: when the checkpoint is newer
 * than the journal (n8n had not stored the state written after it when the process ended), the
 * checkpoint's state is the newer one, with no journal left to replay.
 */
export function newerOfSaved<S extends { history?: unknown }>(
	saved: S,
	base: SavedHistory | undefined,
): S {
	if (saved.history === undefined || base === undefined) return saved;
	const { from, journal } = savedJournalOf(saved.history);
	if (base.seq <= from + journal.length) return saved;
	return { ...(base.state as S), history: { from: base.seq, journal: [] } };
}

function savedJournalOf(saved: unknown): SavedJournal {
	const { from, journal } = (saved ?? {}) as Partial<SavedJournal>;
	if (
		!Number.isInteger(from) ||
		(from as number) < 0 ||
		!Array.isArray(journal) ||
		!journal.every((entry) => typeof entry === 'string')
	)
		throw new Error(`history must be { from, journal }, not ${JSON.stringify(saved)}`);
	return { from: from as number, journal: journal as string[] };
}
