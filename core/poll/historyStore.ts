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
	 * chunks at `count` and beyond are deleted, and `seq` and `generation` are recorded.
	 */
	save(store: string, checkpoint: HistoryCheckpoint): Promise<void>;
}

/** A checkpoint as the table returns it. */
export interface SavedHistory {
	/** Journal entries the chunks include (all of the store's changes before that one). */
	seq: number;
	/** The store's poll generation at the checkpoint (part of deduplication keys, dedupe.ts). */
	generation: number;
	/** The records' chunks, in order: base64 of packed records, as static data's `entries`. */
	chunks: string[];
}

/** What a checkpoint writes: the chunks changed since the last one, by index. */
export interface HistoryCheckpoint {
	seq: number;
	generation: number;
	/** How many chunks the records take now. */
	count: number;
	changed: Array<[index: number, chunk: string]>;
}

/** The table's key of a store: the trigger's workflow and node, and the store's random id. */
export function historyTableKey(keyPrefix: string, storeId: string): string {
	return `${keyPrefix}${storeId}`;
}
