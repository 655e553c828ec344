import { PollConfigError, PollItemError, showValue } from './errors';
import type { ItemKey, KeyedItem } from './expressions';
import { hash64 } from './hash';
import { PackedIndex, readUnits, writeUnits } from './packedIndex';

/**
 * "What is new?" as a declared enum over compact persisted state (ADR-0050).
 *
 * Keys are remembered as 64-bit hashes of their canonical form (`s:` + string, `n:` + number, so
 * 1 and "1" differ). Two different keys share a hash with probability about n²/2^65 for n remembered
 * keys: 3·10⁻⁸ at a million. A collision makes a new item look seen, once.
 *
 * Protocol (the node, or startNewItems in start.ts, drives it):
 *   const plan = store.plan(keyedItems, now);   // pure: the editor's dry run uses it as is
 *   store.settle(plan, now);                     // remembers first-activation baseline, prunes
 *   for (const c of plan.toStart) {
 *     if (!store.claim(c, now)) continue;        // put-if-absent; false if no longer new
 *     try { start(c) } catch (e) { store.release(c); throw e }  // a failed start comes back
 *     store.commit(c, now);                      // remembered only once its run started
 *   }
 * A crash between a start and its commit repeats that one item; the other order would drop it.
 */

export type DedupeKind = 'none' | 'unique' | 'time_window' | 'greatest' | 'last' | 'changed';

export type DedupeConfig =
	| { kind: 'none' }
	| { kind: 'unique' }
	| { kind: 'time_window'; ttlMs: number }
	| { kind: 'greatest' }
	| { kind: 'last' }
	| { kind: 'changed' };

/** What the first activation starts: everything, nothing (only remember), or the newest `count`. */
export type FirstPollPolicy = { mode: 'all' } | { mode: 'none' } | { mode: 'newest'; count: number };

export interface DedupeOptions {
	dedupe: DedupeConfig;
	/** Default `all`. */
	firstPoll?: FirstPollPolicy;
}

export type Verdict =
	/** Never seen (or, for `last`, after the anchor): starts. */
	| 'new'
	/** Seen longer ago than the time window: starts again. */
	| 'expired'
	/** Known key whose version differs: starts. */
	| 'changed'
	/** Remembered (`unique`, `time_window`), or at or before the anchor (`last`). */
	| 'seen'
	| 'at_or_below_watermark'
	| 'unchanged'
	/** Its key starts earlier in this same poll. */
	| 'duplicate'
	/** First activation: remembered without starting, per the first-poll policy. */
	| 'baseline';

const STARTING_VERDICTS: ReadonlySet<Verdict> = new Set<Verdict>(['new', 'expired', 'changed']);

export function startsRun(verdict: Verdict): boolean {
	return STARTING_VERDICTS.has(verdict);
}

/** Bookkeeping the store needs to claim and commit a candidate; opaque to callers. */
export interface Ticket {
	readonly hash: string;
	/** Hash of the item's version (`changed` only). */
	readonly versionHash: string | undefined;
	/** Position in start order. */
	readonly position: number;
	/** Hashes of the whole poll in start order, shared by all its candidates (`last` rebuilds its tail from it). */
	readonly pollHashes: readonly string[];
	/** Cursor kinds: the cursor this candidate must follow (its predecessor's hash, '' for none). */
	readonly cursorBefore: string;
}

export interface Candidate<T = unknown> {
	readonly item: T;
	readonly key: ItemKey;
	/** Position in the op's list. */
	readonly index: number;
	readonly verdict: Verdict;
	/** When the key was first seen (ms, second resolution); `unique` and `time_window` only. */
	readonly seenAt?: number;
	readonly ticket: Ticket;
}

export interface PollPlan<T = unknown> {
	readonly kind: DedupeKind;
	/** Planned on a store that had never settled a poll, so the first-poll policy applied. */
	readonly fresh: boolean;
	/** Every item, in start order, with its verdict. */
	readonly candidates: ReadonlyArray<Candidate<T>>;
	/** The candidates that start runs, in order. */
	readonly toStart: ReadonlyArray<Candidate<T>>;
}

/** JSON-safe state for n8n's workflow static data. */
export interface SavedDedupeState {
	v: 1;
	kind: DedupeKind;
	/** No poll has settled yet: the first-poll policy still applies. */
	fresh: boolean;
	/** `unique`, `time_window`, `changed`: base64 chunks of packed records. */
	entries?: string[];
	/** `greatest`: the highest id started. */
	watermark?: ItemKey;
	/** `last`: base64 of the remembered keys' hashes, oldest first. */
	tail?: string;
}

interface Judgement {
	verdict: Verdict;
	seenAt?: number;
}

export function canonicalKey(key: ItemKey): string {
	return typeof key === 'number' ? `n:${key}` : `s:${key}`;
}

/** The generic protocol; each subclass below is the one place that defines its kind's semantics. */
export abstract class DedupeStore {
	abstract readonly kind: DedupeKind;
	/** Whether plan() needs each item's `version` (key items with `withVersion`). */
	readonly needsVersion: boolean = false;
	/** Claimed (starting) candidates by key hash, in claim order. */
	private readonly pending = new Map<string, Candidate>();
	/** Cursor kinds: the newest pending claim, where the next claim must chain on (kept, not searched, so claiming a batch is linear). */
	private newestClaim: Candidate | undefined;

	protected constructor(
		private readonly firstPoll: FirstPollPolicy,
		private fresh: boolean,
	) {}

	/** True until a poll settles: the first-poll policy still applies. */
	get isFresh(): boolean {
		return this.fresh;
	}

	/** How many keys the store remembers. */
	abstract get size(): number;

	/** Verdicts for a poll's items, in start order. Does not change the store. */
	plan<T>(items: ReadonlyArray<KeyedItem<T>>, now: number): PollPlan<T> {
		const ordered = this.startOrder(items);
		const pollHashes = ordered.map((keyed) => hash64(canonicalKey(keyed.key)));
		const versionHashes = this.needsVersion ? ordered.map(versionHashOf) : undefined;
		const judgements = this.judge(ordered, pollHashes, versionHashes, now);

		const startingKeys = new Set<string>();
		for (let i = 0; i < ordered.length; i++) {
			if (!startsRun(judgements[i].verdict)) continue;
			if (startingKeys.has(pollHashes[i])) judgements[i] = { verdict: 'duplicate' };
			else startingKeys.add(pollHashes[i]);
		}
		if (this.fresh) this.applyFirstPollPolicy(judgements);

		// Cursor kinds chain each candidate to its predecessor (see followsCursor).
		let cursor = this.cursorToken() ?? '';
		const candidates: Array<Candidate<T>> = ordered.map((keyed, position) => {
			const { verdict, seenAt } = judgements[position];
			const ticket: Ticket = { hash: pollHashes[position], versionHash: versionHashes?.[position], position, pollHashes, cursorBefore: cursor };
			if (verdict === 'baseline' || startsRun(verdict)) cursor = ticket.hash;
			const candidate: Candidate<T> = { item: keyed.item, key: keyed.key, index: keyed.index, verdict, ticket };
			if (seenAt !== undefined) Object.assign(candidate, { seenAt });
			return candidate;
		});
		return { kind: this.kind, fresh: this.fresh, candidates, toStart: candidates.filter((c) => startsRun(c.verdict)) };
	}

	/** Remembers the plan's first-activation baseline and ends freshness; call once per plan, before claims. */
	settle(plan: PollPlan, now: number): void {
		if (this.fresh && plan.fresh) {
			for (const candidate of plan.candidates) if (candidate.verdict === 'baseline') this.remember(candidate, now);
		}
		this.fresh = false;
		this.prune?.(now);
	}

	/** Reserves a starting candidate; false if it is no longer new or is already claimed. */
	claim(candidate: Candidate, now: number): boolean {
		if (this.fresh) throw new Error('settle(plan) must come before claim()');
		const { hash } = candidate.ticket;
		if (!startsRun(candidate.verdict) || this.pending.has(hash) || !this.stillStarts(candidate, now)) return false;
		this.pending.set(hash, candidate);
		this.newestClaim = candidate;
		return true;
	}

	/** Gives a claim back after its start failed, so the item comes back next poll. */
	release(candidate: Candidate): void {
		const { hash } = candidate.ticket;
		if (this.pending.get(hash) !== candidate) return;
		if (this.cursorToken() === undefined) {
			this.pending.delete(hash);
			return;
		}
		// Claims after it were chained to it; they cannot commit without it.
		let after = false;
		this.newestClaim = undefined;
		for (const [pendingHash, pending] of this.pending) {
			if (pending === candidate) after = true;
			if (after) this.pending.delete(pendingHash);
			else this.newestClaim = pending;
		}
	}

	/** Remembers a claimed candidate once its run started (moves the cursor for cursor kinds). */
	commit(candidate: Candidate, now: number): void {
		const { hash } = candidate.ticket;
		if (this.pending.get(hash) !== candidate) throw new Error(`commit() of item ${candidate.index} without a claim`);
		if (this.cursorToken() !== undefined && this.pending.values().next().value !== candidate) {
			throw new Error(`commit() of item ${candidate.index} before the items claimed ahead of it`);
		}
		this.pending.delete(hash);
		// Cursor kinds commit oldest first, so the newest claim is gone only when all are.
		if (this.pending.size === 0) this.newestClaim = undefined;
		this.remember(candidate, now);
	}

	serialize(): SavedDedupeState {
		return { v: 1, kind: this.kind, fresh: this.fresh, ...this.savedFields() };
	}

	/** Items in the order they start; the list order unless a kind says otherwise. */
	protected startOrder<T>(items: ReadonlyArray<KeyedItem<T>>): ReadonlyArray<KeyedItem<T>> {
		return items;
	}

	/** One verdict per item, in start order. */
	protected abstract judge(
		ordered: ReadonlyArray<KeyedItem<unknown>>,
		hashes: readonly string[],
		versionHashes: readonly string[] | undefined,
		now: number,
	): Judgement[];

	/** Whether a planned candidate may still start (another poll may have started it meanwhile). */
	protected abstract stillStarts(candidate: Candidate, now: number): boolean;

	/**
	 * Cursor kinds: whether the cursor, counting claims not yet committed, is where the candidate's
	 * plan left it. This refuses a candidate whose predecessor failed to start (moving past it would
	 * drop it) and a candidate from a plan another poll has overtaken.
	 */
	protected followsCursor(candidate: Candidate): boolean {
		return candidate.ticket.cursorBefore === (this.newestClaim?.ticket.hash ?? this.cursorToken());
	}

	/** Records a started (or baseline) candidate. */
	protected abstract remember(candidate: Candidate, now: number): void;

	/** Cursor kinds: the hash of the cursor's key, '' before any; keyed kinds: undefined. */
	protected cursorToken(): string | undefined {
		return undefined;
	}

	/** Drops what no longer counts; once per poll, for kinds that forget. */
	protected prune?(now: number): void;

	protected abstract savedFields(): Partial<SavedDedupeState>;

	private applyFirstPollPolicy(judgements: Judgement[]): void {
		const starting = judgements.filter((judgement) => startsRun(judgement.verdict));
		const keep = this.firstPoll.mode === 'all' ? starting.length : this.firstPoll.mode === 'none' ? 0 : this.firstPoll.count;
		for (const judgement of starting.slice(0, Math.max(0, starting.length - keep))) judgement.verdict = 'baseline';
	}
}

function versionHashOf(keyed: KeyedItem<unknown>): string {
	if (keyed.version === undefined) throw new Error(`Item ${keyed.index} has no version; key items with withVersion for dedupe "changed"`);
	return hash64(keyed.version);
}

/** Seconds since the epoch as two UTF-16 code units (a uint32 lasts until 2106). */
function packSeconds(ms: number): string {
	const seconds = Math.floor(ms / 1000);
	return String.fromCharCode(seconds >>> 16, seconds & 0xffff);
}

function unpackSeconds(units: string): number {
	return (units.charCodeAt(0) * 0x10000 + units.charCodeAt(1)) * 1000;
}

/**
 * `unique`: one entry per key forever (hash + first-seen second, 12 bytes). `time_window`: the same
 * entry with a TTL; entries stay in the order they were seen, so expired ones are dropped from the
 * front in O(expired), and an expired key starts again.
 */
class SeenKeysStore extends DedupeStore {
	readonly kind: DedupeKind;
	private readonly seen: PackedIndex;

	constructor(
		firstPoll: FirstPollPolicy,
		private readonly ttlMs: number | undefined,
		saved: SavedDedupeState | undefined,
	) {
		super(firstPoll, saved?.fresh ?? true);
		this.kind = ttlMs === undefined ? 'unique' : 'time_window';
		this.seen = new PackedIndex(2, saved?.entries);
	}

	get size(): number {
		return this.seen.size;
	}

	protected judge(ordered: ReadonlyArray<KeyedItem<unknown>>, hashes: readonly string[], _versions: unknown, now: number): Judgement[] {
		return hashes.map((hash) => {
			const seenAt = this.seenAt(hash);
			if (seenAt === undefined) return { verdict: 'new' };
			return { verdict: this.isExpired(seenAt, now) ? 'expired' : 'seen', seenAt };
		});
	}

	protected stillStarts(candidate: Candidate, now: number): boolean {
		const seenAt = this.seenAt(candidate.ticket.hash);
		return seenAt === undefined || this.isExpired(seenAt, now);
	}

	protected remember(candidate: Candidate, now: number): void {
		// renew, not set: a re-seen expired key moves last, keeping the entries in time order.
		this.seen.renew(candidate.ticket.hash, packSeconds(now));
	}

	protected prune(now: number): void {
		if (this.ttlMs !== undefined) this.seen.deleteOldestWhile((value) => this.isExpired(unpackSeconds(value), now));
	}

	protected savedFields(): Partial<SavedDedupeState> {
		return { entries: this.seen.saved() };
	}

	private seenAt(hash: string): number | undefined {
		const value = this.seen.get(hash);
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
 * starts nothing.
 */
class ChangedStore extends DedupeStore {
	readonly kind = 'changed';
	readonly needsVersion = true;
	private readonly versions: PackedIndex;

	constructor(firstPoll: FirstPollPolicy, saved: SavedDedupeState | undefined) {
		super(firstPoll, saved?.fresh ?? true);
		this.versions = new PackedIndex(4, saved?.entries);
	}

	get size(): number {
		return this.versions.size;
	}

	protected judge(_ordered: unknown, hashes: readonly string[], versionHashes: readonly string[]): Judgement[] {
		return hashes.map((hash, i) => {
			const known = this.versions.get(hash);
			return { verdict: known === undefined ? 'new' : known === versionHashes[i] ? 'unchanged' : 'changed' };
		});
	}

	protected stillStarts(candidate: Candidate): boolean {
		return this.versions.get(candidate.ticket.hash) !== candidate.ticket.versionHash;
	}

	protected remember(candidate: Candidate): void {
		this.versions.set(candidate.ticket.hash, candidate.ticket.versionHash as string);
	}

	protected savedFields(): Partial<SavedDedupeState> {
		return { entries: this.versions.saved() };
	}
}

/**
 * `greatest`: a high-water mark. Items start in ascending id order and each start moves the mark.
 * Numbers compare as numbers, strings by UTF-16 code units (ISO timestamps and zero-padded ids
 * sort right; "10" < "9", so numeric strings want `$number(id)`). A number is never compared with a
 * string: a poll mixing them, or whose ids differ in kind from the mark, is refused.
 */
class GreatestStore extends DedupeStore {
	readonly kind = 'greatest';
	private watermark: ItemKey | undefined;

	constructor(firstPoll: FirstPollPolicy, saved: SavedDedupeState | undefined) {
		super(firstPoll, saved?.fresh ?? true);
		const watermark = saved?.watermark;
		if (watermark !== undefined && watermark !== null && typeof watermark !== 'string' && typeof watermark !== 'number') {
			throw new Error(`watermark must be a string or a number, not ${showValue(watermark)}`);
		}
		this.watermark = watermark ?? undefined;
	}

	get size(): number {
		return this.watermark === undefined ? 0 : 1;
	}

	protected startOrder<T>(items: ReadonlyArray<KeyedItem<T>>): ReadonlyArray<KeyedItem<T>> {
		if (items.length === 0) return items;
		const first = items[0];
		const idKind = typeof first.key;
		const odd = items.find((keyed) => typeof keyed.key !== idKind);
		if (odd) {
			throw new PollItemError(
				odd.index,
				`dedupe "greatest" compares ids, but this poll mixes numbers and strings: item ${first.index} has ${showValue(first.key)}, item ${odd.index} has ${showValue(odd.key)}. Make "id" give one kind (for example $string(id) or $number(id)).`,
			);
		}
		if (this.watermark !== undefined && typeof this.watermark !== idKind) {
			throw new PollItemError(
				first.index,
				`dedupe "greatest" remembers the ${typeof this.watermark} ${showValue(this.watermark)} as its high-water mark, but this poll's ids are ${idKind}s (${showValue(first.key)}). Make "id" give a ${typeof this.watermark} again, or reset the trigger's state.`,
			);
		}
		// Array.prototype.sort is stable, so equal ids keep list order.
		return [...items].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
	}

	protected judge(ordered: ReadonlyArray<KeyedItem<unknown>>): Judgement[] {
		return ordered.map((keyed) => ({ verdict: this.isAbove(keyed.key) ? 'new' : 'at_or_below_watermark' }));
	}

	protected stillStarts(candidate: Candidate): boolean {
		return this.followsCursor(candidate);
	}

	protected remember(candidate: Candidate): void {
		if (this.isAbove(candidate.key)) this.watermark = candidate.key;
	}

	protected cursorToken(): string {
		return this.watermark === undefined ? '' : hash64(canonicalKey(this.watermark));
	}

	protected savedFields(): Partial<SavedDedupeState> {
		return this.watermark === undefined ? {} : { watermark: this.watermark };
	}

	private isAbove(key: ItemKey): boolean {
		return this.watermark === undefined || key > this.watermark;
	}
}

/** How many of the previous poll's last keys `last` remembers, newest last. */
export const LAST_TAIL_LENGTH = 32;

/**
 * `last`: for a list returned oldest first. Remembers the keys of the previous poll's last (up to
 * 32) started or baseline items. The anchor is the newest remembered key still in the list; items
 * after it are new. If none is present (the source dropped them all) every item is new: a lost
 * anchor re-emits rather than silently drops, as a duplicated item is cheaper than a missed one.
 */
class LastStore extends DedupeStore {
	readonly kind = 'last';
	/** Key hashes, oldest first. */
	private tail: string[];

	constructor(firstPoll: FirstPollPolicy, saved: SavedDedupeState | undefined) {
		super(firstPoll, saved?.fresh ?? true);
		this.tail = saved?.tail === undefined ? [] : unpackHashes(saved.tail);
	}

	get size(): number {
		return this.tail.length;
	}

	protected judge(ordered: ReadonlyArray<KeyedItem<unknown>>, hashes: readonly string[]): Judgement[] {
		const anchor = this.anchorPosition(hashes);
		return hashes.map((_, position) => ({ verdict: anchor !== undefined && position <= anchor ? 'seen' : 'new' }));
	}

	protected stillStarts(candidate: Candidate): boolean {
		return this.followsCursor(candidate);
	}

	protected remember(candidate: Candidate): void {
		const { pollHashes, position } = candidate.ticket;
		this.tail = pollHashes.slice(Math.max(0, position + 1 - LAST_TAIL_LENGTH), position + 1);
	}

	protected cursorToken(): string {
		return this.tail[this.tail.length - 1] ?? '';
	}

	protected savedFields(): Partial<SavedDedupeState> {
		return { tail: packHashes(this.tail) };
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

function packHashes(hashes: readonly string[]): string {
	const bytes = Buffer.alloc(8 * hashes.length);
	hashes.forEach((hash, i) => writeUnits(bytes, 8 * i, hash));
	return bytes.toString('base64');
}

function unpackHashes(text: unknown): string[] {
	if (typeof text !== 'string') throw new Error('tail must be a base64 string');
	const bytes = Buffer.from(text, 'base64');
	if (bytes.length % 8 !== 0) throw new Error(`tail holds ${bytes.length} bytes, not whole 8-byte hashes`);
	return Array.from({ length: bytes.length / 8 }, (_, i) => readUnits(bytes, 8 * i, 4));
}

const MIN_TTL_MS = 1_000;
/** Ten years: longer is `unique`. */
const MAX_TTL_MS = 10 * 365 * 86_400_000;

/**
 * `none`: every item the op returns starts a run on every poll; nothing is remembered. For sources
 * that only list what still needs doing (IMAP's unread mail, a queue): the workflow's last step
 * removes the item from the source (marks the mail seen), and an item whose run failed comes back.
 */
class NoDedupeStore extends DedupeStore {
	readonly kind = 'none';

	constructor(firstPoll: FirstPollPolicy, saved: SavedDedupeState | undefined) {
		super(firstPoll, saved?.fresh ?? true);
	}

	get size(): number {
		return 0;
	}

	protected judge(ordered: ReadonlyArray<KeyedItem<unknown>>): Judgement[] {
		return ordered.map(() => ({ verdict: 'new' }));
	}

	protected stillStarts(): boolean {
		return true;
	}

	protected remember(): void {}

	protected savedFields(): Partial<SavedDedupeState> {
		return {};
	}
}

/**
 * The store for `options`, restored from `saved` (the output of a previous serialize(), or
 * undefined for none). Saved state of another kind is dropped and the store starts fresh, as a
 * history of one kind means nothing to another; saved state that cannot be read throws rather than
 * silently start over (which would re-start the whole backlog).
 */
export function loadDedupeStore(options: DedupeOptions, saved?: unknown): DedupeStore {
	const firstPoll = checkedFirstPoll(options.firstPoll ?? { mode: 'all' });
	const dedupe = options.dedupe;
	let state: SavedDedupeState | undefined;
	if (saved !== undefined && saved !== null) {
		if (typeof saved !== 'object' || (saved as SavedDedupeState).v !== 1) {
			throw new Error(`The trigger's saved dedupe state is in an unknown format: ${showValue(saved)}`);
		}
		state = (saved as SavedDedupeState).kind === dedupe.kind ? (saved as SavedDedupeState) : undefined;
	}
	try {
		switch (dedupe.kind) {
			case 'none':
				return new NoDedupeStore(firstPoll, state);
			case 'unique':
				return new SeenKeysStore(firstPoll, undefined, state);
			case 'time_window':
				return new SeenKeysStore(firstPoll, checkedTtl(dedupe.ttlMs), state);
			case 'greatest':
				return new GreatestStore(firstPoll, state);
			case 'last':
				return new LastStore(firstPoll, state);
			case 'changed':
				return new ChangedStore(firstPoll, state);
		}
	} catch (error) {
		if (error instanceof PollConfigError) throw error;
		throw new Error(`The trigger's saved dedupe state (${dedupe.kind}) cannot be read: ${error.message}`);
	}
	throw new PollConfigError('dedupe', `Unknown dedupe ${showValue((dedupe as { kind: unknown }).kind)}; use none, unique, time_window, greatest, last or changed.`);
}

function checkedTtl(ttlMs: number): number {
	if (Number.isFinite(ttlMs) && ttlMs >= MIN_TTL_MS && ttlMs <= MAX_TTL_MS) return ttlMs;
	throw new PollConfigError('ttl', `"ttl" must be between 1 second and 10 years; got ${showValue(ttlMs)} ms.`);
}

function checkedFirstPoll(policy: FirstPollPolicy): FirstPollPolicy {
	if (policy.mode !== 'newest' || (Number.isInteger(policy.count) && policy.count >= 1)) return policy;
	throw new PollConfigError('newest', `"newest" must be a whole number of items, at least 1; got ${showValue(policy.count)}.`);
}
