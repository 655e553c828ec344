import {
	type Candidate,
	checkedFirstPoll,
	checkedMaxRemembered,
	checkedTtl,
	type DedupeKind,
	type DedupeOptions,
	DedupeStore,
	type FirstPollPolicy,
	type ForgottenKeys,
	type Judgement,
	type SavedDedupeState,
	type Undo,
} from './dedupe';
import { ConfigError, fieldRef, showValue } from '../configError';
import { PollItemError } from './errors';
import { newerOfSaved, type PendingCheckpoint, TableHistory } from './historyStore';
import type { ItemKey, KeyedItem } from './expressions';
import {
	hexToUnits,
	PackedIndex,
	packHashes,
	packSeconds,
	unitsToHex,
	unpackHashes,
	unpackSeconds,
} from './records';

/**
 * Keyed kinds: one packed record per key; undo restores each record's previous value.
 *
 * The history budget: with `maxRemembered` set, a poll that ends a pass over the source (it read as
 * far as the trigger reads: CommitOptions.endsPass) and leaves more keys than that forgets the
 * oldest first (records stay in the order they were first remembered; `unique` and `time_window`
 * move a key that starts again last, `changed` keeps a key where it was first seen), and records how
 * many and when. It never forgets what the source is known to list:
 * - keys the pass listed, however many polls it took (their hashes are kept while a pass spans
 *   polls), files still being written included: each would come back as new at the next pass, start
 *   again, and push out another listed key, every pass. A first poll's baseline stays whole, and a
 *   newest-first list read over several polls (Max Pages) keeps its head, which known ground needs;
 * - anything, in a poll that does not end a pass (Max Pages with the next poll going on, a poll that
 *   read again only for the items owed): what it did not list may still be listed further on.
 * A cap below what the source lists is therefore exceeded by what it lists, and nothing more. A key
 * forgotten once it is no longer listed starts again if the source lists it later: for `unique`
 * under the deduplication key of its first start (n8n refuses it while that execution is kept), for
 * `time_window` and `changed` in a new generation, so under a new key. What the trigger reads again
 * only for items owed lists only those (activation.ts), so a forgotten key does not come back so.
 */
abstract class KeyedStore extends DedupeStore {
	protected readonly remembersOldestFirst = true;
	protected readonly records: PackedIndex;
	private forgottenKeys: ForgottenKeys | undefined;
	/** The key hashes the polls of the pass under way listed before this one (cap set only). */
	private readonly passListed: Set<string>;
	/** Set when a table beside static data holds the records (historyStore.ts). */
	private readonly table: TableHistory | undefined;

	protected constructor(
		firstPoll: FirstPollPolicy,
		/** 0: no cap. */
		private readonly maxRemembered: number,
		/** A record's value, in UTF-16 code units. */
		valueUnits: number,
		saved: SavedDedupeState | undefined,
		historyTable: DedupeOptions['historyTable'],
	) {
		super(firstPoll, saved);
		this.forgottenKeys = forgottenOf(saved?.forgotten);
		this.passListed = new Set(hashesOf(saved?.passListed, 'passListed'));
		if (historyTable) {
			this.table = new TableHistory(valueUnits, saved, historyTable.base);
			this.records = this.table.records;
		} else {
			if (saved?.history !== undefined)
				throw new ConfigError(
					'historyStore',
					'staticData',
					`cannot be Static Data: this trigger's history of dedupe "${saved.kind}" is in a PostgreSQL table. Set it back to PostgreSQL, with the same credential`,
				);
			this.records = new PackedIndex(valueUnits, saved?.entries);
		}
	}

	get size(): number {
		return this.records.size;
	}

	get historyBytes(): number {
		return this.table?.savedJsonLength ?? this.records.savedJsonLength;
	}

	get historyInTable(): boolean {
		return this.table !== undefined;
	}

	historyCheckpoint(): PendingCheckpoint | undefined {
		if (!this.table) return undefined;
		// The records are the checkpoint's chunks; the rest of the state goes with them.
		const state: Partial<SavedDedupeState> = this.serialize();
		delete state.entries;
		delete state.history;
		return this.table.checkpoint(state);
	}

	get forgotten(): ForgottenKeys | undefined {
		return this.forgottenKeys && { ...this.forgottenKeys };
	}

	/**
	 * Drops what no longer counts for the kind (expired keys), then, at a pass's end, what the cap
	 * does not keep: never the keys the poll listed, nor the newest the pass remembered.
	 */
	protected prune(now: number, listed: readonly string[], endsPass: boolean): void {
		this.expire?.(now);
		if (this.maxRemembered === 0) return;
		if (!endsPass) {
			for (const hash of listed) this.passListed.add(hash);
			return;
		}
		const keep = new Set([...this.passListed, ...listed]);
		this.passListed.clear();
		if (this.records.size <= this.maxRemembered) return;
		const forgotten = this.records.deleteOldestBeyond(this.maxRemembered, keep);
		if (forgotten === 0) return;
		this.forgottenKeys = {
			total: (this.forgottenKeys?.total ?? 0) + forgotten,
			last: forgotten,
			at: now,
		};
	}

	/** Drops entries that no longer count, whatever the cap; for kinds whose entries expire. */
	protected expire?(now: number): void;

	protected undo(undo: Undo): ReadonlySet<string> {
		if (!('records' in undo))
			throw new Error(`dedupe "${this.kind}" cannot undo ${showValue(undo)}`);
		const superseded = new Set<string>();
		for (const [hex, previous, written] of undo.records) {
			const hash = hexToUnits(hex);
			// Written again by a later poll (a newer version started, an expired key renewed): that
			// start stands. An undo saved before `written` existed restores as it always did; a record
			// forgotten since (cap, expiry) has nothing to restore, and its item still starts again.
			const current = this.records.get(hash);
			if (written !== undefined && current !== undefined && unitsToHex(current) !== written) {
				superseded.add(hash);
				continue;
			}
			if (previous === null) this.records.delete(hash);
			else this.records.set(hash, hexToUnits(previous));
		}
		return superseded;
	}

	protected savedFields(): Partial<SavedDedupeState> {
		return {
			...(this.table ? this.table.saved() : { entries: this.records.saved() }),
			...(this.forgottenKeys && { forgotten: this.forgottenKeys }),
			...(this.passListed.size > 0 && { passListed: [...this.passListed].map(unitsToHex) }),
		};
	}

	/** Writes `value` for the candidate's key; the undo puts back what was there. */
	protected write(candidate: Candidate, value: string, renew = false): Undo {
		const { hash } = candidate.ticket;
		const previous = this.records.get(hash);
		if (renew) this.records.renew(hash, value);
		else this.records.set(hash, value);
		return {
			records: [
				[unitsToHex(hash), previous === undefined ? null : unitsToHex(previous), unitsToHex(value)],
			],
		};
	}
}

/**
 * `unique`: one entry per key forever (hash + first-seen second, 12 bytes: 16 characters of base64).
 * The second is a third of that, and is kept: Execute step shows it (`seenAt`), and it is what lets
 * `unique` records serve `time_window` after a switch. `time_window`: the same entry with a TTL;
 * entries stay in the order they were seen, so expired ones are dropped from the front in
 * O(expired), and an expired (or forgotten) key starts again, in a new generation.
 */
export class SeenKeysStore extends KeyedStore {
	readonly kind: DedupeKind;
	protected readonly restartsKeys: boolean;

	constructor(
		firstPoll: FirstPollPolicy,
		private readonly ttlMs: number | undefined,
		maxRemembered: number,
		saved: SavedDedupeState | undefined,
		historyTable?: DedupeOptions['historyTable'],
	) {
		super(firstPoll, maxRemembered, 2, saved, historyTable);
		this.kind = ttlMs === undefined ? 'unique' : 'time_window';
		this.restartsKeys = ttlMs !== undefined;
	}

	protected judge(
		ordered: ReadonlyArray<KeyedItem<unknown>>,
		hashes: readonly string[],
		_versions: unknown,
		now: number,
	): Judgement[] {
		return hashes.map((hash) => {
			const seenAt = this.seenAt(hash);
			if (seenAt === undefined) return { verdict: 'new' };
			return { verdict: this.isExpired(seenAt, now) ? 'expired' : 'seen', seenAt };
		});
	}

	protected remember(candidate: Candidate, now: number): Undo {
		// renew, not set: a re-seen expired key moves last, keeping the entries in time order.
		return this.write(candidate, packSeconds(now), true);
	}

	protected expire(now: number): void {
		if (this.ttlMs !== undefined)
			this.records.deleteOldestWhile((value) => this.isExpired(unpackSeconds(value), now));
	}

	private seenAt(hash: string): number | undefined {
		const value = this.records.get(hash);
		return value === undefined ? undefined : unpackSeconds(value);
	}

	/** Second resolution: an entry may expire up to a second early. */
	private isExpired(seenAt: number, now: number): boolean {
		return this.ttlMs !== undefined && now - seenAt >= this.ttlMs;
	}
}

/**
 * `changed`: starts a key that is new or whose version (or content hash) differs; stores key hash +
 * version hash (16 bytes). Keys missing from a poll are kept, so an item that comes back unchanged
 * starts nothing; A → B → A starts three times, each in its own generation.
 */
export class ChangedStore extends KeyedStore {
	readonly kind = 'changed';
	readonly needsVersion = true;
	protected readonly restartsKeys = true;

	constructor(
		firstPoll: FirstPollPolicy,
		maxRemembered: number,
		saved: SavedDedupeState | undefined,
		historyTable?: DedupeOptions['historyTable'],
	) {
		super(firstPoll, maxRemembered, 4, saved, historyTable);
	}

	protected judge(
		_ordered: unknown,
		hashes: readonly string[],
		versionHashes: readonly string[],
	): Judgement[] {
		return hashes.map((hash, i) => {
			const known = this.records.get(hash);
			return {
				verdict: known === undefined ? 'new' : known === versionHashes[i] ? 'unchanged' : 'changed',
			};
		});
	}

	protected remember(candidate: Candidate): Undo {
		return this.write(candidate, candidate.ticket.versionHash as string);
	}
}

/**
 * `greatest`: a high-water mark. Items start in ascending id order and the mark moves to the
 * greatest started. Numbers compare as numbers, strings by UTF-16 code units (ISO timestamps and
 * zero-padded ids sort right; "10" < "9", so numeric strings want `$number(id)`). A number is never
 * compared with a string: a poll mixing them, or whose ids differ in kind from the mark, is refused.
 */
export class GreatestStore extends DedupeStore {
	readonly kind = 'greatest';
	private watermark: ItemKey | undefined;
	/**
	 * The mark before a run n8n did not start took it back: the items up to it were started (or
	 * are owed), so only owed ones start again though the mark is below them. n8n would refuse
	 * the others by their keys, but not once it pruned their executions. The mark moves over those
	 * others as a poll lists them (passKnown), so it reaches the ceiling without a start above it.
	 */
	private ceiling: ItemKey | undefined;

	constructor(firstPoll: FirstPollPolicy, saved: SavedDedupeState | undefined) {
		super(firstPoll, saved);
		this.watermark = markOf(saved?.watermark, 'watermark');
		this.ceiling = markOf(saved?.ceiling, 'ceiling');
	}

	get size(): number {
		return this.watermark === undefined ? 0 : 1;
	}

	get cursor(): ItemKey | undefined {
		return this.watermark;
	}

	protected undo(undo: Undo): void {
		if (!('watermark' in undo)) throw new Error(`dedupe "greatest" cannot undo ${showValue(undo)}`);
		const before = undo.watermark ?? undefined;
		// Only ever back: runs after the failed one come back and are refused by n8n by their keys.
		if (this.watermark === undefined) return;
		if (
			before === undefined ||
			(typeof before === typeof this.watermark && before < this.watermark)
		) {
			if (this.ceiling === undefined || this.watermark > this.ceiling)
				this.ceiling = this.watermark;
			this.watermark = before;
		}
	}

	protected startOrder<T>(items: ReadonlyArray<KeyedItem<T>>): ReadonlyArray<KeyedItem<T>> {
		if (items.length === 0) return items;
		const first = items[0];
		const idKind = typeof first.key;
		const odd = items.find((keyed) => typeof keyed.key !== idKind);
		if (odd) {
			throw new PollItemError(
				odd.index,
				`dedupe "greatest" compares ids, but this poll mixes numbers and strings: item ${first.index} has ${showValue(first.key)}, item ${odd.index} has ${showValue(odd.key)}. Make "${fieldRef('id')}" give one kind (for example $string(id) or $number(id)).`,
			);
		}
		if (this.watermark !== undefined && typeof this.watermark !== idKind) {
			throw new PollItemError(
				first.index,
				`dedupe "greatest" remembers the ${typeof this.watermark} ${showValue(this.watermark)} as its high-water mark, but this poll's ids are ${idKind}s (${showValue(first.key)}). Make "${fieldRef('id')}" give a ${typeof this.watermark} again, or reset the trigger's state.`,
			);
		}
		// Array.prototype.sort is stable, so equal ids keep list order.
		return [...items].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
	}

	protected judge(
		ordered: ReadonlyArray<KeyedItem<unknown>>,
		hashes: readonly string[],
	): Judgement[] {
		return ordered.map((keyed, i) => ({
			verdict:
				this.isAbove(keyed.key) &&
				(this.ceiling === undefined || keyed.key > this.ceiling || this.owes(hashes[i]))
					? 'new'
					: 'at_or_below_watermark',
		}));
	}

	protected remember(candidate: Candidate): Undo {
		const undo: Undo = { watermark: this.watermark ?? null };
		if (this.isAbove(candidate.key)) this.watermark = candidate.key;
		if (this.ceiling !== undefined && this.watermark! >= this.ceiling) this.ceiling = undefined;
		return undo;
	}

	/**
	 * Items up to the ceiling that start nothing were started before: the mark moves over those
	 * listed, as over a start. Else a `{{ $cursor }}` source, asked from the mark, would list them at
	 * every poll, and with more of them than Max Pages reads, never anything after them (nor an owed
	 * item the source no longer lists, which no full pass would then give up). The items between
	 * the mark and them are listed too (started or passed), but when a newest-first poll was cut
	 * short: then the base class calls this only once nothing is owed.
	 */
	protected passKnown(candidates: ReadonlyArray<Candidate>): void {
		const ceiling = this.ceiling;
		if (ceiling === undefined) return;
		for (const { key, verdict } of candidates)
			if (verdict === 'at_or_below_watermark' && this.isAbove(key) && key <= ceiling)
				this.watermark = key;
		if (this.watermark !== undefined && this.watermark >= ceiling) this.ceiling = undefined;
	}

	protected savedFields(): Partial<SavedDedupeState> {
		return {
			...(this.watermark !== undefined && { watermark: this.watermark }),
			...(this.ceiling !== undefined && { ceiling: this.ceiling }),
		};
	}

	private isAbove(key: ItemKey): boolean {
		return this.watermark === undefined || key > this.watermark;
	}
}

/** A saved mark of `greatest`: a string or a number, if any. */
function markOf(mark: unknown, name: string): ItemKey | undefined {
	if (mark !== undefined && mark !== null && typeof mark !== 'string' && typeof mark !== 'number')
		throw new Error(`${name} must be a string or a number, not ${showValue(mark)}`);
	return mark ?? undefined;
}

/** How many of the previous poll's last keys `last` remembers, newest last. */
export const LAST_TAIL_LENGTH = 32;

function isBefore(a: [number, number], b: [number, number]): boolean {
	return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/**
 * `last`: for a list returned oldest first. Remembers the keys of the previous poll's last (up to
 * 32) started or baseline items. The anchor is the newest remembered key still in the list; items
 * after it are new. If none is present (the source dropped them all) every item is new: a lost
 * anchor re-emits rather than silently drops (n8n refuses the items that already ran by their keys).
 */
export class LastStore extends DedupeStore {
	readonly kind = 'last';
	/** Key hashes, oldest first. */
	private tail: string[];
	/** [generation, position] of the start that set the tail. */
	private tailFrom: [number, number];

	constructor(firstPoll: FirstPollPolicy, saved: SavedDedupeState | undefined) {
		super(firstPoll, saved);
		this.tail = saved?.tail === undefined ? [] : unpackHashes(saved.tail);
		this.tailFrom = saved?.tailFrom ?? [0, 0];
	}

	get size(): number {
		return this.tail.length;
	}

	protected undo(undo: Undo): void {
		if (!('tail' in undo)) throw new Error(`dedupe "last" cannot undo ${showValue(undo)}`);
		// Only ever back, as for greatest: the tail is reset if it was set by this start or a later one.
		if (
			isBefore(undo.from, this.tailFrom) ||
			(undo.from[0] === this.tailFrom[0] && undo.from[1] === this.tailFrom[1])
		) {
			this.tail = unpackHashes(undo.tail);
			this.tailFrom = undo.tailFrom;
		}
	}

	protected judge(
		ordered: ReadonlyArray<KeyedItem<unknown>>,
		hashes: readonly string[],
	): Judgement[] {
		const anchor = this.anchorPosition(hashes);
		return hashes.map((_, position) => ({
			verdict: anchor !== undefined && position <= anchor ? 'seen' : 'new',
		}));
	}

	protected remember(candidate: Candidate, _now: number, generation: number): Undo {
		const { pollHashes, position } = candidate.ticket;
		const undo: Undo = {
			tail: packHashes(this.tail),
			tailFrom: this.tailFrom,
			from: [generation, position],
		};
		this.tail = pollHashes.slice(Math.max(0, position + 1 - LAST_TAIL_LENGTH), position + 1);
		this.tailFrom = [generation, position];
		return undo;
	}

	protected savedFields(): Partial<SavedDedupeState> {
		return { tail: packHashes(this.tail), tailFrom: this.tailFrom };
	}

	/** Position of the newest remembered key in this poll (its first occurrence, to re-emit rather than skip), if any. */
	private anchorPosition(hashes: readonly string[]): number | undefined {
		if (this.tail.length === 0) return undefined;
		const firstPosition = new Map<string, number>();
		hashes.forEach((hash, position) => {
			if (!firstPosition.has(hash)) firstPosition.set(hash, position);
		});
		for (let i = this.tail.length - 1; i >= 0; i--) {
			const position = firstPosition.get(this.tail[i]);
			if (position !== undefined) return position;
		}
		return undefined;
	}
}

/**
 * `none`: every item the op returns starts a run on every poll; nothing is remembered. For sources
 * that only list what still needs doing (IMAP's unread mail, a queue): the workflow's last step
 * removes the item from the source (marks the mail seen), and an item whose run failed comes back.
 */
export class NoDedupeStore extends DedupeStore {
	readonly kind = 'none';

	constructor(firstPoll: FirstPollPolicy, saved: SavedDedupeState | undefined) {
		super(firstPoll, saved);
	}

	get size(): number {
		return 0;
	}

	protected undo(): void {}

	protected judge(ordered: ReadonlyArray<KeyedItem<unknown>>): Judgement[] {
		return ordered.map(() => ({ verdict: 'new' }));
	}

	protected remember(): Undo {
		return { records: [] };
	}

	protected savedFields(): Partial<SavedDedupeState> {
		return {};
	}
}

/** Saved key hashes (hex) as the store keeps them; none when unset; throws if they are not. */
function hashesOf(saved: unknown, name: string): string[] {
	if (saved === undefined) return [];
	if (!Array.isArray(saved) || !saved.every((hex) => typeof hex === 'string' && hex.length === 16))
		throw new Error(`${name} must be a list of key hashes, not ${showValue(saved)}`);
	return saved.map(hexToUnits);
}

/** The saved record of what a cap forgot; throws if it is not one. */
function forgottenOf(saved: unknown): ForgottenKeys | undefined {
	if (saved === undefined) return undefined;
	const { total, last, at } = (saved ?? {}) as Partial<ForgottenKeys>;
	if (![total, last, at].every((n) => Number.isInteger(n) && (n as number) >= 0))
		throw new Error(`forgotten must be { total, last, at } counts, not ${showValue(saved)}`);
	return { total: total!, last: last!, at: at! };
}

/** Kinds whose saved records mean the same thing: a key hash and when it was first seen. */
const SAME_RECORDS: ReadonlyArray<ReadonlySet<DedupeKind>> = [
	new Set<DedupeKind>(['unique', 'time_window']),
];

export interface LoadedDedupeStore {
	store: DedupeStore;
	/** Set when the saved state was of another kind: what became of it, for the node's log. */
	notice?: string;
}

/**
 * The store for `options`, restored from `saved` (the output of a previous serialize(), or
 * undefined for none). State saved by another kind carries over where the records agree (`unique`
 * ↔ `time_window`); otherwise it means nothing to this kind, and the store starts fresh: the first
 * poll after the change follows the first-poll policy. Saved state that cannot be read throws
 * rather than silently start over (which would re-start the whole backlog).
 */
export function loadDedupeStore(options: DedupeOptions, saved?: unknown): LoadedDedupeStore {
	const firstPoll = checkedFirstPoll(options.firstPoll ?? { mode: 'all' });
	const maxRemembered = checkedMaxRemembered(options.maxRemembered ?? 0);
	const dedupe = options.dedupe;
	let state: SavedDedupeState | undefined;
	let notice: string | undefined;
	if (saved !== undefined && saved !== null) {
		if (typeof saved !== 'object' || (saved as SavedDedupeState).v !== 1) {
			throw new Error(
				`The trigger's saved dedupe state is in an unknown format: ${showValue(saved)}`,
			);
		}
		state = saved as SavedDedupeState;
		if (options.historyTable) state = newerOfSaved(state, options.historyTable.base);
		if (state.kind !== dedupe.kind) {
			const carried = SAME_RECORDS.some(
				(kinds) => kinds.has(state!.kind) && kinds.has(dedupe.kind),
			);
			notice = carried
				? `Dedupe changed from "${state.kind}" to "${dedupe.kind}": the ${state.kind} records carry over.`
				: `Dedupe changed from "${state.kind}" to "${dedupe.kind}": what "${state.kind}" remembered means nothing to "${dedupe.kind}", so the next poll is a first poll and follows "${fieldRef('firstPoll')}".`;
			state = carried ? { ...state, kind: dedupe.kind } : undefined;
		}
	}
	try {
		return {
			store: createStore(dedupe, firstPoll, maxRemembered, state, options.historyTable),
			notice,
		};
	} catch (error) {
		if (error instanceof ConfigError) throw error;
		throw new Error(
			`The trigger's saved dedupe state (${dedupe.kind}) cannot be read: ${(error as Error).message}`,
		);
	}
}

function createStore(
	dedupe: DedupeOptions['dedupe'],
	firstPoll: FirstPollPolicy,
	maxRemembered: number,
	state: SavedDedupeState | undefined,
	historyTable: DedupeOptions['historyTable'],
): DedupeStore {
	switch (dedupe.kind) {
		case 'none':
			return new NoDedupeStore(firstPoll, state);
		case 'unique':
			return new SeenKeysStore(firstPoll, undefined, maxRemembered, state, historyTable);
		case 'time_window':
			return new SeenKeysStore(
				firstPoll,
				checkedTtl(dedupe.ttlMs),
				maxRemembered,
				state,
				historyTable,
			);
		case 'greatest':
			return new GreatestStore(firstPoll, state);
		case 'last':
			return new LastStore(firstPoll, state);
		case 'changed':
			return new ChangedStore(firstPoll, maxRemembered, state, historyTable);
	}
	throw new ConfigError(
		'dedupe',
		(dedupe as { kind: unknown }).kind,
		'use none, unique, time_window, greatest, last or changed',
	);
}
