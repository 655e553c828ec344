import { randomBytes } from 'node:crypto';

import { checkRange } from '../configError';
import type { ItemKey, KeyedItem } from './expressions';
import { hash64 } from './hash';
import type { PendingCheckpoint, SavedHistory } from './historyStore';
import { hexToUnits, unitsToHex } from './records';

/**
 * "What is new?" as a declared enum over compact persisted state (ADR-0050), and the protocol that
 * turns a poll into runs (see core/outbox.ts for why it has this shape):
 *
 *   const plan = store.plan(keyedItems, now);           // pure: the editor's dry run uses it as is
 *   const runs = store.commit(plan, now, { keyPrefix }); // remembers every start, once per poll
 *   // write the state (store + outbox with `runs`) once, then emit each run with its key
 *   store.rollback(run.undo);                            // only if n8n could not create that run
 *
 * "A key is remembered only once its run has started" becomes: a key is remembered in the same
 * write that records its run in the outbox, which emits the run until n8n has it.
 *
 * Keys are remembered as 64-bit hashes of their canonical form (`s:` + string, `n:` + number, so
 * 1 and "1" differ). A poll of m new items over n remembered keys takes one of them for a remembered
 * key with probability about m·n/2⁶⁴: 1.6·10⁻¹¹ for 300 over a million, 8.6·10⁻⁶ over a year of such
 * polls a minute; that item is not started. 48 bits would save a sixth of a `unique` record and make
 * it 0.56 items a year (docs/poll-trigger.md, "History budget").
 *
 * Each run's n8n deduplication key names one logical start and is never reused for another. It is
 * a hash of the store's id (random, drawn when the store is created: a new store after a kind
 * switch, a node rename or a reset never meets the keys of an old one, whose executions n8n may
 * still hold) and of what the run starts: the item's key hash; for `changed` also its version
 * hash; for `time_window` and `changed`, which may start a key again, also the store's poll
 * generation (bumped by every poll that starts something, saved with the store). A batch run hashes
 * its items' identities in start order. A poll planned again after a crash therefore gets the key
 * it had only if it starts the same thing: the same item at the same version (refused by n8n if it
 * was created); a newer version, or another set of batch items, is another start with another key.
 *
 * An item whose run was rolled back (n8n did not run it, but may hold a failed execution under its
 * key: queue mode, Redis refused the job) or that the user asked to start again gets an attempt
 * number, saved with the store, which its keys carry from then on; items without one keep the keys
 * above. It is marked `again`: the next poll that lists it starts it whatever its verdict.
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
export type FirstPollPolicy =
	| { mode: 'all' }
	| { mode: 'none' }
	| { mode: 'newest'; count: number };

export interface DedupeOptions {
	dedupe: DedupeConfig;
	/** Default `all`. */
	firstPoll?: FirstPollPolicy;
	/**
	 * The history budget: at most this many remembered keys, for the kinds that keep one record per
	 * key (`unique`, `time_window`, `changed`; see KeyedStore in kinds.ts). `greatest` and `last`
	 * keep a cursor of constant size and have nothing to cap. 0 or unset: no cap.
	 */
	maxRemembered?: number;
	/**
	 * Set: the keyed kinds' records are saved in a table beside static data (historyStore.ts), and
	 * `base` is the table's last checkpoint of this store, when the saved state says it holds one.
	 */
	historyTable?: { base: SavedHistory | undefined };
}

/** What a store's cap has forgotten: keys in all, at the last poll that forgot any, and when (ms). */
export interface ForgottenKeys {
	total: number;
	last: number;
	at: number;
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
	| 'baseline'
	/**
	 * Would not start, but was marked to start again (a rolled-back run's item, or one the user
	 * asked to start again): starts, under a fresh deduplication key, without changing what is
	 * remembered.
	 */
	| 'again';

const STARTING_VERDICTS: ReadonlySet<Verdict> = new Set<Verdict>([
	'new',
	'expired',
	'changed',
	'again',
]);

/**
 * How many items' attempt numbers a store keeps (newest kept). An item gets one when a run of it is
 * rolled back or the user asks to start it again; its deduplication keys then carry it, so the next
 * start is not refused as the earlier one's duplicate. Past this bound the oldest is forgotten: an
 * item whose number was forgotten would be started again under a key n8n may still hold.
 */
export const MAX_ATTEMPTS_KEPT = 1000;
/** How many items a store keeps marked to start again (oldest dropped first). */
export const MAX_AGAIN_KEPT = 1000;
/**
 * How many restaged runs' deduplication keys a store keeps until their item is listed again (oldest
 * dropped first): bursts of thousands of runs cut short by one crash. Past this bound an item whose
 * run n8n created before the crash, listed again only later, may start again (`time_window` and
 * `changed`: their keys carry the poll's generation).
 */
export const MAX_RESTAGED_KEPT = 10_000;

export function startsRun(verdict: Verdict): boolean {
	return STARTING_VERDICTS.has(verdict);
}

/** Bookkeeping the store needs to remember a candidate; opaque to callers. */
export interface Ticket {
	readonly hash: string;
	/** Hash of the item's version (`changed` only). */
	readonly versionHash: string | undefined;
	/** Position in start order. */
	readonly position: number;
	/** Hashes of the whole poll in start order, shared by all its candidates (`last` rebuilds its tail from it). */
	readonly pollHashes: readonly string[];
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

/**
 * What undoing one run's remembering takes, should n8n not create it. JSON-safe, as it is saved in
 * the outbox with its run. Keyed kinds restore each record (hex hash → hex previous value, null for
 * none); cursor kinds move the cursor back to before the run (runs after it come back and are
 * refused by n8n by their keys, as they did start). A keyed record is restored only while it still
 * holds what the run wrote (`written`): a later poll may have started a newer version of the key.
 */
export type Undo =
	| { records: Array<[hash: string, previous: string | null, written?: string]> }
	| { watermark: ItemKey | null }
	| {
			tail: string;
			tailFrom: [generation: number, position: number];
			from: [generation: number, position: number];
	  };

/** One run a poll starts. */
export interface PlannedRun<T = unknown> {
	/** n8n's execution deduplication key; undefined for `none` (nothing is remembered, nothing to refuse). */
	readonly key: string | undefined;
	readonly candidates: ReadonlyArray<Candidate<T>>;
	readonly undo: Undo | undefined;
}

export interface CommitOptions {
	/** Say `poll:<workflow>:<node>:`; n8n's deduplication keys are instance-wide. */
	keyPrefix: string;
	/** Default true: one run per item. False: one run over all the poll's new items. */
	onePerItem?: boolean;
	/**
	 * False when the poll listed the top of a newest-first list only (Max Pages cut it short): items
	 * between the store's mark and what it listed may be missing from it. Default true: a whole
	 * list, or one from its head or from the mark, oldest first.
	 */
	topOnly?: boolean;
	/**
	 * Default true: this poll ends a pass, reading as far as the trigger reads the source (its whole
	 * answer, a newest-first list to known ground or its end). False: the next poll reads on (Max
	 * Pages cut it short), or it read again only for the items owed: the cap forgets nothing yet.
	 */
	endsPass?: boolean;
	/** Key hashes the source listed that the poll does not plan (files still uploading): kept by the cap. */
	listedToo?: readonly string[];
	/**
	 * The list is newest first: a keyed kind remembers its items from the last listed (the oldest)
	 * on, so that the cap, which forgets the first remembered first, forgets the source's oldest items
	 * first, not the newest, just below new items, which known ground needs.
	 */
	newestFirst?: boolean;
}

/** JSON-safe state for n8n's workflow static data. */
export interface SavedDedupeState {
	v: 1;
	kind: DedupeKind;
	/** The store's id, drawn when it was created; part of every deduplication key. */
	id?: string;
	/** No poll has settled yet: the first-poll policy still applies. */
	fresh: boolean;
	/** Polls that started something; part of `time_window` and `changed` deduplication keys. */
	generation?: number;
	/** `unique`, `time_window`, `changed`: base64 chunks of packed records. */
	entries?: string[];
	/**
	 * Instead of `entries`, once a table beside static data holds the records (historyStore.ts): the
	 * changes since its checkpoint may not include, journal entry `from` onwards (records.ts).
	 */
	history?: { from: number; journal: string[] };
	/** `greatest`: the highest id started. */
	watermark?: ItemKey;
	/**
	 * `greatest`: the highest id started, while a run n8n did not start took the mark back below
	 * it; up to it only the items owed start.
	 */
	ceiling?: ItemKey;
	/** `last`: base64 of the remembered keys' hashes, oldest first. */
	tail?: string;
	/** `last`: [generation, position] of the start that set the tail. */
	tailFrom?: [number, number];
	/** Items rolled back or started again: [key hash (hex), attempt ≥ 1], oldest first. */
	attempts?: Array<[string, number]>;
	/** Key hashes (hex) to start at the next poll that lists them, whatever their verdict. */
	again?: string[];
	/** Of `again`, the items of runs taken back (rollback), which a poll listed: not Start Again's. */
	rolledBack?: string[];
	/** Keyed kinds under a cap: what the cap has forgotten so far. */
	forgotten?: ForgottenKeys;
	/**
	 * Keyed kinds under a cap, while a pass over the source spans polls: the key hashes (hex) its
	 * polls planned so far, which the pass's end keeps (kinds.ts).
	 */
	passListed?: string[];
	/**
	 * One-item runs a stop or crash may have cut short, planned again (restage): [key hash (hex),
	 * the run's deduplication key, for `changed` the version hash (hex) it started], oldest first.
	 */
	restaged?: Array<[string, string] | [string, string, string]>;
	/**
	 * Key hashes (hex) of items owed (restaged or marked to start again) that a full pass over the
	 * source did not list (owed.ts): given up, no longer paged for; their marks stay.
	 */
	unlisted?: string[];
}

export interface Judgement {
	verdict: Verdict;
	seenAt?: number;
}

export function canonicalKey(key: ItemKey): string {
	return typeof key === 'number' ? `n:${key}` : `s:${key}`;
}

/** An item key's hash, as the store keys its records (owedHashes). */
export function itemHash(key: ItemKey): string {
	return hash64(canonicalKey(key));
}

/** The generic protocol; each subclass in kinds.ts is the one place that defines its kind's semantics. */
export abstract class DedupeStore {
	abstract readonly kind: DedupeKind;
	/** Whether plan() needs each item's `version` (key items with `withVersion`). */
	readonly needsVersion: boolean = false;
	/** Whether a key can start again, so its runs' deduplication keys carry the generation. */
	protected readonly restartsKeys: boolean = false;
	/**
	 * Whether the order keys are remembered in means their age (the keyed kinds' cap forgets the
	 * first remembered first): a newest-first list is then remembered from its end (CommitOptions).
	 */
	protected readonly remembersOldestFirst: boolean = false;
	protected generation: number;
	private fresh: boolean;
	/** Drawn when the store is created (also for a saved state from before ids existed). */
	readonly id: string;
	/** Key hash → attempt (≥ 1), oldest first; part of that item's deduplication keys. */
	private readonly attempts = new Map<string, number>();
	/** Key hashes to start at the next poll that lists them. */
	private readonly again = new Set<string>();
	/** Of `again`, those a poll listed (their run rolled back), as opposed to keys the user named. */
	private readonly rolledBack = new Set<string>();
	/** Key hash → the deduplication key (and `changed`: version hash, hex) of its restaged run. */
	private readonly restaged = new Map<string, { key: string; version?: string }>();
	/** Owed items given up (giveUp): still marked, no longer owed. */
	private readonly unlisted = new Set<string>();

	protected constructor(
		private readonly firstPoll: FirstPollPolicy,
		saved: SavedDedupeState | undefined,
	) {
		this.fresh = saved?.fresh ?? true;
		this.generation = saved?.generation ?? 0;
		this.id = typeof saved?.id === 'string' && saved.id !== '' ? saved.id : newStoreId();
		for (const entry of saved?.attempts ?? []) {
			if (!Array.isArray(entry) || typeof entry[0] !== 'string' || !Number.isInteger(entry[1]))
				throw new Error(`an attempt entry must be [hash, number], not ${JSON.stringify(entry)}`);
			this.attempts.set(hexToUnits(entry[0]), entry[1]);
		}
		for (const hex of saved?.again ?? []) this.again.add(hexToUnits(hex));
		for (const hex of saved?.rolledBack ?? [])
			if (this.again.has(hexToUnits(hex))) this.rolledBack.add(hexToUnits(hex));
		for (const entry of saved?.restaged ?? []) {
			if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'string')
				throw new Error(`a restaged entry must be [hash, key], not ${JSON.stringify(entry)}`);
			this.restaged.set(hexToUnits(entry[0]), {
				key: entry[1],
				...(typeof entry[2] === 'string' && { version: entry[2] }),
			});
		}
		for (const hex of saved?.unlisted ?? []) this.unlisted.add(hexToUnits(hex));
	}

	/** True until a poll commits: the first-poll policy still applies. */
	get isFresh(): boolean {
		return this.fresh;
	}

	/** How many keys the store remembers. */
	abstract get size(): number;

	/**
	 * How many characters of JSON the remembered history takes in the saved state: what n8n reads
	 * from its database with the workflow's static data, twice for every run it creates.
	 */
	get historyBytes(): number {
		return JSON.stringify(this.savedFields()).length;
	}

	/**
	 * The records to save in the history table, when it is used and they changed since its last
	 * checkpoint: call `saved()` once the table holds them. Only while no run is unsettled or held
	 * (historyStore.ts, step 2).
	 */
	historyCheckpoint(): PendingCheckpoint | undefined {
		return undefined;
	}

	/** Whether the records are kept in a history table (historyStore.ts), not in static data. */
	get historyInTable(): boolean {
		return false;
	}

	/** The high-water mark ($cursor in With): set only for `greatest`, once it started or saw an item. */
	get cursor(): ItemKey | undefined {
		return undefined;
	}

	/** What the history budget (DedupeOptions.maxRemembered) has forgotten; cursor kinds have none. */
	get forgotten(): ForgottenKeys | undefined {
		return undefined;
	}

	/** Verdicts for a poll's items, in start order. Does not change the store. */
	plan<T>(items: ReadonlyArray<KeyedItem<T>>, now: number): PollPlan<T> {
		const ordered = this.startOrder(items);
		const pollHashes = ordered.map((keyed) => itemHash(keyed.key));
		const versionHashes = this.needsVersion ? ordered.map(versionHashOf) : undefined;
		const judgements = this.judge(ordered, pollHashes, versionHashes, now);

		const startingKeys = new Set<string>();
		for (let i = 0; i < ordered.length; i++) {
			if (!startsRun(judgements[i].verdict)) continue;
			if (startingKeys.has(pollHashes[i])) judgements[i] = { verdict: 'duplicate' };
			else startingKeys.add(pollHashes[i]);
		}
		if (this.fresh) this.applyFirstPollPolicy(judgements);
		// Marked to start again: the first occurrence of such a key that would not start does.
		for (let i = 0; i < ordered.length && this.again.size > 0; i++) {
			const { verdict } = judgements[i];
			if (
				this.again.has(pollHashes[i]) &&
				!startingKeys.has(pollHashes[i]) &&
				verdict !== 'baseline' &&
				verdict !== 'duplicate'
			) {
				judgements[i] = { ...judgements[i], verdict: 'again' };
				startingKeys.add(pollHashes[i]);
			}
		}

		const candidates: Array<Candidate<T>> = ordered.map((keyed, position) => {
			const { verdict, seenAt } = judgements[position];
			const ticket: Ticket = {
				hash: pollHashes[position],
				versionHash: versionHashes?.[position],
				position,
				pollHashes,
			};
			const candidate: Candidate<T> = {
				item: keyed.item,
				key: keyed.key,
				index: keyed.index,
				verdict,
				ticket,
			};
			if (seenAt !== undefined) Object.assign(candidate, { seenAt });
			return candidate;
		});
		return {
			kind: this.kind,
			fresh: this.fresh,
			candidates,
			toStart: candidates.filter((c) => startsRun(c.verdict)),
		};
	}

	/**
	 * Remembers every start (and, on the first poll, the baseline) of a plan made on this store's
	 * current state, and returns the runs to write to the outbox and emit, in order.
	 */
	commit<T>(plan: PollPlan<T>, now: number, options: CommitOptions): Array<PlannedRun<T>> {
		if (plan.fresh !== this.fresh)
			throw new Error('commit() of a plan made before another commit; plan again');
		const generation = this.generation + 1;
		const reversed = options.newestFirst === true && this.remembersOldestFirst;
		const inOrder = <X>(list: readonly X[]): readonly X[] =>
			reversed ? [...list].reverse() : list;
		// The baseline first: it precedes the starts in start order (`last` keeps the newest).
		if (this.fresh) {
			for (const candidate of inOrder(plan.candidates))
				if (candidate.verdict === 'baseline') this.remember(candidate, now, generation);
		}
		// A start again changes nothing remembered (the item already counts as started), so its
		// rollback has nothing to undo.
		const undos: Array<Undo | undefined> = new Array(plan.toStart.length);
		for (const i of inOrder(plan.toStart.map((_, at) => at))) {
			const candidate = plan.toStart[i];
			undos[i] =
				candidate.verdict === 'again' ? undefined : this.remember(candidate, now, generation);
		}
		for (const candidate of plan.toStart) {
			this.again.delete(candidate.ticket.hash);
			this.rolledBack.delete(candidate.ticket.hash);
			this.unlisted.delete(candidate.ticket.hash);
		}
		if (!this.fresh && this.passKnown) {
			// Owed items this poll does not start (restaged runs' items start under their key below).
			const starting = new Set(plan.toStart.map(({ ticket }) => ticket.hash));
			const owing = [...this.again, ...this.restaged.keys()].some((hash) => !starting.has(hash));
			if (!owing || !options.topOnly) this.passKnown(plan.candidates);
		}
		this.fresh = false;
		const listed = plan.candidates[0]?.ticket.pollHashes ?? [];
		this.prune?.(now, [...listed, ...(options.listedToo ?? [])], options.endsPass ?? true);
		if (plan.toStart.length === 0) return [];
		this.generation = generation;
		if (this.kind === 'none')
			return plan.toStart.map((candidate) => ({
				key: undefined,
				candidates: [candidate],
				undo: undefined,
			}));
		// The attempt is part of the identity only once an item has one, so other keys are unchanged.
		const identity = ({ ticket }: Candidate) => {
			const parts = [
				ticket.hash,
				ticket.versionHash ?? '',
				this.restartsKeys ? String(generation) : '',
			];
			const attempt = this.attempts.get(ticket.hash);
			if (attempt !== undefined) parts.push(`a${attempt}`);
			return parts.join('\u0001');
		};
		const keyOf = (identities: string) =>
			`${options.keyPrefix}${unitsToHex(hash64(`${this.id}\u0002${identities}`))}`;
		if (options.onePerItem === false) {
			const key = keyOf(plan.toStart.map(identity).join('|'));
			return [{ key, candidates: plan.toStart, undo: mergeUndos(undos) }];
		}
		return plan.toStart.map((candidate, i) => ({
			key:
				this.takeRestaged(candidate.ticket) ??
				readableKey(
					keyOf(identity(candidate)),
					candidate.key,
					this.attempts.get(candidate.ticket.hash),
				),
			candidates: [candidate],
			undo: undos[i],
		}));
	}

	/**
	 * One-item runs whose end a stop or crash left unknown, stored without their items (runStage.ts),
	 * newest first: n8n may or may not have created each. What their commits remembered is undone,
	 * so the next poll that lists an item plans it again, and its run goes out under the key it had
	 * (for `changed`, while the item is at the version that run started): n8n refuses it if the run
	 * was created, and creates it if not. An item the source no longer lists is not started.
	 */
	restage(runs: ReadonlyArray<{ key: string; undo?: Undo; itemKey: ItemKey }>): void {
		const newest = new Set<string>();
		for (const { key, undo, itemKey } of runs) {
			const hash = itemHash(itemKey);
			const superseded = undo ? this.undo(undo) : undefined;
			// A later poll started the item again (a newer version): that run carries it. Marked to
			// start again (Start Again, or a run rolled back since): it starts under a new attempt,
			// which n8n does not refuse as this run's duplicate, whether or not it created this run.
			if (superseded?.has(hash) || newest.has(hash)) continue;
			if (this.again.has(hash)) {
				// Its record is taken back, but a poll listed it: what lies below it is history all the
				// same (listedOwedHashes), as below a rolled-back run's item (model simulation, seed 301).
				this.rolledBack.add(hash);
				continue;
			}
			newest.add(hash);
			const written =
				undo && 'records' in undo
					? undo.records.find(([hex]) => hex === unitsToHex(hash))?.[2]
					: undefined;
			this.restaged.delete(hash);
			this.unlisted.delete(hash);
			this.restaged.set(hash, {
				key,
				...(this.needsVersion && written !== undefined && { version: written }),
			});
		}
		dropOldest(this.restaged, MAX_RESTAGED_KEPT);
	}

	/**
	 * The deduplication keys of restaged runs whose item no poll has listed since (restaged at this
	 * activation or an earlier one: a crash can come before the item is listed again).
	 */
	restagedKeys(): string[] {
		return [...this.restaged.values()].map(({ key }) => key);
	}

	/** The key of the item's restaged run, if this start is that run again; the entry is used up. */
	private takeRestaged({ hash, versionHash }: Ticket): string | undefined {
		const restaged = this.restaged.get(hash);
		if (!restaged) return undefined;
		this.restaged.delete(hash);
		const sameStart =
			restaged.version === undefined ||
			(versionHash !== undefined && unitsToHex(versionHash) === restaged.version);
		return sameStart ? restaged.key : undefined;
	}

	/**
	 * n8n did not run the run: forget what its commit remembered, and mark its items (`keys`) to
	 * start at the next poll that lists them, under a new attempt. n8n may have saved the run's
	 * execution, failed, under its deduplication key before it gave up (queue mode, when Redis
	 * refuses the job): the item's next start must not carry that key.
	 */
	rollback(undo: Undo | undefined, keys: readonly ItemKey[] = []): void {
		const superseded = undo ? this.undo(undo) : undefined;
		// A key that a later poll started again (a newer version) has run since: nothing to start.
		const taken = superseded ? keys.filter((key) => !superseded.has(itemHash(key))) : keys;
		this.startAgain(taken);
		for (const key of taken) this.rolledBack.add(itemHash(key));
	}

	/**
	 * The items with these keys start at the next poll that lists them, whatever their verdict, each
	 * under a deduplication key none of its earlier starts had. Nothing else changes.
	 */
	startAgain(keys: readonly ItemKey[]): void {
		for (const key of keys) {
			const hash = itemHash(key);
			// Still owed from a poll that listed it (a restaged run's item): it stays one.
			if (this.restaged.has(hash)) this.rolledBack.add(hash);
			const attempt = (this.attempts.get(hash) ?? 0) + 1;
			this.attempts.delete(hash);
			this.attempts.set(hash, attempt);
			this.again.delete(hash);
			this.again.add(hash);
			// Started again under a new attempt: not under a restaged run's key.
			this.restaged.delete(hash);
			this.unlisted.delete(hash);
		}
		dropOldest(this.attempts, MAX_ATTEMPTS_KEPT);
		dropOldest(this.again, MAX_AGAIN_KEPT);
		for (const hash of this.rolledBack) if (!this.again.has(hash)) this.rolledBack.delete(hash);
	}

	/** How many items are marked to start again. */
	get againCount(): number {
		return this.again.size;
	}

	/**
	 * The key hashes of items the trigger expects the source to list again: restaged runs' items and
	 * items marked to start again (a run rolled back, Start Again). A newest-first source is paged
	 * past known ground until each is listed (paging.ts).
	 */
	owedHashes(): Set<string> {
		const owed = new Set([...this.restaged.keys(), ...this.again]);
		for (const hash of this.unlisted) owed.delete(hash);
		return owed;
	}

	/**
	 * The key hashes of the items owed that a poll listed: restaged runs' items and rolled-back runs'
	 * items, not the keys Start Again named (which the trigger may never have listed). On a
	 * newest-first list, what lay below such an item was listed with it (paging.ts, pastGround).
	 */
	listedOwedHashes(): Set<string> {
		return new Set([...this.restaged.keys(), ...this.rolledBack]);
	}

	/**
	 * Owed items a full pass over the source did not list (owed.ts): no longer owed, so no poll pages
	 * on for them. Their marks stay: listed again, an item starts as it would have (a restaged run's
	 * under its key, which n8n refuses if it created that run).
	 */
	giveUp(hashes: Iterable<string>): void {
		for (const hash of hashes)
			if (this.restaged.has(hash) || this.again.has(hash)) this.unlisted.add(hash);
	}

	/** The deduplication key of the restaged run of the item with this key hash, if any. */
	restagedKeyOf(hash: string): string | undefined {
		return this.restaged.get(hash)?.key;
	}

	serialize(): SavedDedupeState {
		return {
			v: 1,
			kind: this.kind,
			id: this.id,
			fresh: this.fresh,
			generation: this.generation,
			...this.savedFields(),
			...(this.attempts.size > 0 && {
				attempts: [...this.attempts].map(([hash, n]): [string, number] => [unitsToHex(hash), n]),
			}),
			...(this.again.size > 0 && { again: [...this.again].map(unitsToHex) }),
			...(this.rolledBack.size > 0 && { rolledBack: [...this.rolledBack].map(unitsToHex) }),
			...this.savedUnlisted(),
			...(this.restaged.size > 0 && {
				restaged: [...this.restaged].map(
					([hash, { key, version }]): [string, string] | [string, string, string] =>
						version === undefined ? [unitsToHex(hash), key] : [unitsToHex(hash), key, version],
				),
			}),
		};
	}

	/** The items given up that are still marked (the marks are bounded: older ones were dropped). */
	private savedUnlisted(): Pick<SavedDedupeState, 'unlisted'> {
		const marked = [...this.unlisted].filter((h) => this.restaged.has(h) || this.again.has(h));
		return marked.length > 0 ? { unlisted: marked.map(unitsToHex) } : {};
	}

	/**
	 * Puts back what a commit remembered for one run; returns the key hashes it left alone because a
	 * later commit wrote them again.
	 */
	protected abstract undo(undo: Undo): ReadonlySet<string> | void;

	/** Items in the order they start; the list order unless a kind says otherwise. */
	protected startOrder<T>(items: ReadonlyArray<KeyedItem<T>>): ReadonlyArray<KeyedItem<T>> {
		return items;
	}

	/** One verdict per item, in start order. */
	/** Whether the item (key hash) is owed: marked to start again, or of a restaged run. */
	protected owes(hash: string): boolean {
		return this.again.has(hash) || this.restaged.has(hash);
	}

	protected abstract judge(
		ordered: ReadonlyArray<KeyedItem<unknown>>,
		hashes: readonly string[],
		versionHashes: readonly string[] | undefined,
		now: number,
	): Judgement[];

	/** Records a started (or baseline) candidate; returns how to undo that. */
	protected abstract remember(candidate: Candidate, now: number, generation: number): Undo;

	/**
	 * After a poll's starts are remembered: the items it listed that start nothing, known to have
	 * started, which a kind keeping a mark may move it over (`greatest` under its ceiling). Not while
	 * an item is owed (marked to start again, or a restaged run's, given up or not, but those this
	 * poll starts) and the poll listed the top of a newest-first list only (`topOnly`): the mark
	 * would pass the owed item unlisted below them, and it would never start.
	 */
	protected passKnown?(candidates: ReadonlyArray<Candidate>): void;

	/**
	 * Drops what no longer counts; once per poll, for kinds that forget. `listed`: the poll's key
	 * hashes; `endsPass`: the poll ends a pass over the source (CommitOptions).
	 */
	protected prune?(now: number, listed: readonly string[], endsPass: boolean): void;

	protected abstract savedFields(): Partial<SavedDedupeState>;

	private applyFirstPollPolicy(judgements: Judgement[]): void {
		const starting = judgements.filter((judgement) => startsRun(judgement.verdict));
		const keep =
			this.firstPoll.mode === 'all'
				? starting.length
				: this.firstPoll.mode === 'none'
					? 0
					: this.firstPoll.count;
		for (const judgement of starting.slice(0, Math.max(0, starting.length - keep)))
			judgement.verdict = 'baseline';
	}
}

/** n8n 2.41 keeps an execution's deduplication key in a column of 255 characters. */
export const MAX_DEDUPLICATION_KEY_CHARS = 255;

/**
 * A one-item run's deduplication key names its item: `<prefix><hash>:<item key>`, `#<attempt>` once
 * the item has one (Start Again, a rolled-back run), so that an execution n8n's crash recovery left
 * with placeholder items still says, by its key, which item it carried. The hash alone keeps keys
 * unique (it covers the item, version, generation and attempt); the readable part is cut to fit
 * n8n's column.
 */
function readableKey(hashed: string, key: ItemKey, attempt: number | undefined): string {
	const readable = `:${String(key)}${attempt === undefined ? '' : `#${attempt}`}`;
	if (hashed.length + readable.length <= MAX_DEDUPLICATION_KEY_CHARS) return hashed + readable;
	return `${hashed}${readable.slice(0, Math.max(0, MAX_DEDUPLICATION_KEY_CHARS - hashed.length - 1))}…`;
}

function dropOldest(collection: Map<string, unknown> | Set<string>, max: number): void {
	for (const key of collection.keys()) {
		if (collection.size <= max) return;
		collection.delete(key);
	}
}

/**
 * One undo for several writes, in the order they were made (a batch run's items, or a run planned
 * again while staged): per key, what was there before the first and what the last wrote, so that
 * undoing it puts back what was there before them all (two records of one key would have the first
 * undo see the second's write as a later start); a cursor kind's: the cursor before the first.
 */
export function mergeUndos(all: ReadonlyArray<Undo | undefined>): Undo | undefined {
	const undos = all.filter((undo): undo is Undo => undo !== undefined);
	if (undos.length === 0) return undefined;
	if (!('records' in undos[0])) return undos[0];
	const byHash = new Map<string, [hash: string, previous: string | null, written?: string]>();
	for (const undo of undos)
		for (const [hash, previous, written] of 'records' in undo ? undo.records : []) {
			const first = byHash.get(hash);
			byHash.set(hash, [hash, first ? first[1] : previous, written]);
		}
	return { records: [...byHash.values()] };
}

/** 64 random bits, hex: two stores never share an id in practice (2⁻⁶⁴ per pair). */
function newStoreId(): string {
	return randomBytes(8).toString('hex');
}

function versionHashOf(keyed: KeyedItem<unknown>): string {
	if (keyed.version === undefined)
		throw new Error(
			`Item ${keyed.index} has no version; key items with withVersion for dedupe "changed"`,
		);
	return hash64(keyed.version);
}

export const MIN_TTL_MS = 1_000;
/** Ten years: longer is `unique`. */
export const MAX_TTL_MS = 10 * 365 * 86_400_000;

export function checkedTtl(ttlMs: number): number {
	return checkRange('ttl', ttlMs, { min: MIN_TTL_MS, max: MAX_TTL_MS }, { duration: true });
}

export function checkedMaxRemembered(max: number): number {
	return checkRange('maxRemembered', max, { min: 0, whole: true });
}

export function checkedFirstPoll(policy: FirstPollPolicy): FirstPollPolicy {
	if (policy.mode === 'newest') checkRange('newestCount', policy.count, { min: 1, whole: true });
	return policy;
}
