import { type DedupeStore, itemHash } from './dedupe';
import type { ItemKey } from './expressions';
import { hexToUnits, unitsToHex } from './records';

/**
 * Items owed, and when to give them up. An item is owed when the trigger expects the source to list
 * it again: a one-item run restaged after a stop or crash (n8n may not have created it), a run n8n
 * could not create, Start Again (DedupeStore.owedHashes). A poll that lists it starts it; a
 * newest-first source is paged past known ground until it is listed (paging.ts).
 *
 * One rule for every source: an owed item that a full **pass** over the source does not list is
 * given up, and named once in a report. A pass begins at the first poll that reads the source from
 * its head after the last item became owed (items owed later are judged by a later pass: any owe
 * starts the pass again), and ends at the poll that reads to the end of the list (a paged source's
 * last page, or the last of Max Pages with nothing to go on from; an op whose answer is complete:
 * not `truncated`, no file still `uploading`). What the store still owes then of what it owed when
 * the pass began was not listed: the store gives it up (no poll pages on for it; its marks stay, so
 * a later listing still starts it once).
 */

/** What the trigger keeps of the items it owes, in its state beside the store. */
export interface SavedOwed {
	/** The keys of owed items, by key hash (hex), oldest first: to name them when given up. */
	keys?: Array<[string, ItemKey]>;
	/** A pass is under way: the key hashes (hex) owed when it began. */
	pass?: string[];
}

/** How many owed items' keys are kept to name them (as many as the store keeps restaged runs). */
export const MAX_OWED_KEYS_KEPT = 10_000;

/** An owed item given up: its key (or, for state saved before keys were kept, its hash) and run. */
export interface UnlistedItem {
	name: ItemKey;
	/** The deduplication key of its restaged run: n8n may hold that run (it then did start). */
	runKey?: string;
}

export class OwedItems {
	private readonly keys = new Map<string, ItemKey>();
	private pass: Set<string> | undefined;
	/** Counts owe() calls: a pass that began before one is not judged. */
	private owes = 0;

	constructor(saved: SavedOwed | undefined) {
		for (const [hex, key] of saved?.keys ?? []) this.keys.set(hexToUnits(hex), key);
		if (saved?.pass) this.pass = new Set(saved.pass.map(hexToUnits));
	}

	/** These items are owed from now on: the pass under way, if any, starts again. */
	owe(keys: readonly ItemKey[]): void {
		for (const key of keys) {
			const hash = itemHash(key);
			this.keys.delete(hash);
			this.keys.set(hash, key);
		}
		for (const hash of this.keys.keys()) {
			if (this.keys.size <= MAX_OWED_KEYS_KEPT) break;
			this.keys.delete(hash);
		}
		this.pass = undefined;
		this.owes++;
	}

	/**
	 * A poll begins; `fromHead`: it reads the source from the head. Begins a pass if items are owed
	 * and none is under way. Returns what to hand end() when the poll read to the end of the list.
	 */
	begin(store: DedupeStore, fromHead: boolean): number | undefined {
		if (!this.pass && fromHead) {
			const owed = store.owedHashes();
			if (owed.size > 0) this.pass = owed;
		}
		return this.pass ? this.owes : undefined;
	}

	/**
	 * The poll that begin() returned `token` for read to the end of the list: the pass ends, and the
	 * items the store still owes of those it owed when the pass began are given up, returned.
	 */
	end(token: number | undefined, store: DedupeStore): UnlistedItem[] {
		if (token === undefined || token !== this.owes || !this.pass) return [];
		const owed = store.owedHashes();
		const unlisted = [...this.pass].filter((hash) => owed.has(hash));
		this.pass = undefined;
		store.giveUp(unlisted);
		const items = unlisted.map((hash) => {
			const runKey = store.restagedKeyOf(hash);
			return { name: this.keys.get(hash) ?? unitsToHex(hash), ...(runKey && { runKey }) };
		});
		const still = store.owedHashes();
		for (const hash of this.keys.keys()) if (!still.has(hash)) this.keys.delete(hash);
		return items;
	}

	saved(): SavedOwed | undefined {
		if (this.keys.size === 0 && !this.pass) return undefined;
		return {
			...(this.keys.size > 0 && {
				keys: [...this.keys].map(([hash, key]): [string, ItemKey] => [unitsToHex(hash), key]),
			}),
			...(this.pass && { pass: [...this.pass].map(unitsToHex) }),
		};
	}
}

/**
 * Whether an op's answer is its whole list, so that a poll ends a pass: not when it says more
 * remains for the next call (`truncated`: sql.query, s3.list), nor while files wait to be seen
 * finished (`uploading`: sftp.list, ftp.list; an owed file may be one of them).
 */
export function answerIsWholeList(data: unknown): boolean {
	if (typeof data !== 'object' || data === null) return true;
	const { truncated, uploading } = data as { truncated?: unknown; uploading?: unknown };
	return truncated !== true && !(Array.isArray(uploading) && uploading.length > 0);
}

/** The report of items given up, for one failed execution; keys beyond the first 20 are counted. */
export function unlistedMessage(names: readonly ItemKey[]): string {
	const shown = names.slice(0, 20).map(String).join(', ');
	const more = names.length > 20 ? ` and ${names.length - 20} more` : '';
	return `${names.length} item(s) listed once, never started, no longer listed: keys ${shown}${more}. A full pass over the source since a stop, a crash, a run n8n could not create or Start Again did not list them; they start if the source lists them again`;
}
