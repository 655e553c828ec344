import { ConfigError } from '../configError';
import { canonicalKey } from './dedupe';
import type { ItemKey } from './expressions';
import { hash64 } from './hash';
import { unitsToHex } from './records';

/**
 * A bounded record of a trigger's recent starts: which items each run carried, under which n8n
 * deduplication key, when, and how n8n settled it. It is what a user reads when a run crashed: n8n's
 * crash recovery may replace a crashed run's trigger items with placeholders
 * (`isArtificialRecoveredEventItem`), so the execution no longer shows them.
 *
 * The runs whose end the trigger has not learnt (`emitted`, `existed at activation`: a crash's runs
 * are among them, whatever the burst's size) are kept until their end is learnt or a Start Again
 * names their items, up to LEDGER_MAX_END_UNKNOWN (oldest dropped first): they are what a user looks
 * for after a crash. The other entries are bounded in entries and in bytes (the JSON kept in the
 * workflow's static data), newest kept, so the ledger never grows with history. A batch run keeps
 * its first MAX_KEYS_PER_ENTRY item keys and the count; a key longer than MAX_KEY_CHARS is cut and
 * marked, and such a key cannot be started again by name.
 */

export const LEDGER_MAX_ENTRIES = 50;
/**
 * Runs with an unknown end kept at most: every run of the stored outbox when n8n stopped (a burst;
 * core/poll/runStage.ts), over a few crashes.
 */
export const LEDGER_MAX_END_UNKNOWN = 2_000;
export const LEDGER_MAX_BYTES = 8_192;
export const MAX_KEYS_PER_ENTRY = 10;
export const MAX_KEY_CHARS = 200;

/** How n8n settled a run, as far as the trigger learnt. */
export type LedgerOutcome =
	/** Emitted; n8n has not reported on it to this trigger yet (a crash leaves it so). */
	| 'emitted'
	/** n8n reported the run's end with this status (success, error, canceled, crashed, ...). */
	| `ended: ${string}`
	/**
	 * Emitted again at an activation (after a restart or re-publish), or restaged at one and emitted
	 * when a poll listed its item again (core/poll/dedupe.ts `restage`), and refused by n8n because an
	 * execution with its key exists: it was created before, and its end was never reported here.
	 * A run killed with its n8n ends like this; its execution says whether it crashed.
	 */
	| 'existed at activation'
	/** Refused by n8n as a duplicate while this trigger was running. */
	| 'existed'
	/** Its end was unknown, and a Start Again list named its items. */
	| 'started again'
	/** n8n did not run it; its items come back at the next poll under another key. */
	| 'not run: rolled back'
	/** An attempt after a failed run (retries.ts) n8n did not run: it goes out again after its backoff. */
	| 'not run: attempted again later';

export interface LedgerEntry {
	/** n8n's execution deduplication key. */
	key: string;
	/** The run's item keys (the first MAX_KEYS_PER_ENTRY). */
	items: ItemKey[];
	/** How many items the run carried, when more than `items` shows. */
	itemCount?: number;
	/** When the trigger emitted it (ms since the epoch). */
	at: number;
	outcome: LedgerOutcome;
}

export class StartLedger {
	/** Oldest first. */
	private entries: LedgerEntry[] = [];

	constructor(
		saved?: unknown,
		private readonly limits = { entries: LEDGER_MAX_ENTRIES, bytes: LEDGER_MAX_BYTES },
	) {
		if (!Array.isArray(saved)) return;
		for (const entry of saved as Array<Partial<LedgerEntry>>) {
			if (typeof entry?.key !== 'string' || !Array.isArray(entry.items)) continue;
			this.entries.push(entry as LedgerEntry);
		}
		this.bound();
	}

	/** Records a run about to be emitted. */
	started(key: string, itemKeys: readonly ItemKey[], at: number): void {
		this.entries = this.entries.filter((entry) => entry.key !== key);
		const entry: LedgerEntry = {
			key,
			items: itemKeys.slice(0, MAX_KEYS_PER_ENTRY).map(shortKey),
			at,
			outcome: 'emitted',
		};
		if (itemKeys.length > MAX_KEYS_PER_ENTRY) entry.itemCount = itemKeys.length;
		this.entries.push(entry);
		this.bound();
	}

	/** Whether the run is recorded. */
	has(key: string): boolean {
		return this.entries.some((entry) => entry.key === key);
	}

	/** Records how n8n settled a run; a run no longer recorded is ignored. */
	settled(key: string, outcome: LedgerOutcome): void {
		const entry = this.entries.find((e) => e.key === key);
		if (!entry) return;
		entry.outcome = outcome;
		this.bound();
	}

	/** Newest first. */
	list(): LedgerEntry[] {
		return [...this.entries].reverse();
	}

	/** The runs whose end the trigger has not learnt, newest first (see endUnknown). */
	endUnknown(): LedgerEntry[] {
		return this.list().filter(endUnknown);
	}

	/** A Start Again list was applied: runs with an unknown end, all of whose items it names, are settled. */
	startedAgain(itemKeys: readonly ItemKey[]): void {
		const named = new Set(itemKeys.map(canonicalKey));
		for (const entry of this.entries)
			if (
				endUnknown(entry) &&
				entry.itemCount === undefined &&
				entry.items.every((key) => named.has(canonicalKey(key)))
			)
				entry.outcome = 'started again';
		this.bound();
	}

	/** JSON-safe, oldest first. */
	saved(): LedgerEntry[] {
		return this.entries;
	}

	private bound(): void {
		const unknown = this.entries.filter(endUnknown);
		let known = this.entries.filter((entry) => !endUnknown(entry));
		if (known.length > this.limits.entries) known = known.slice(known.length - this.limits.entries);
		// The newest entry is always kept: its size is bounded by its keys.
		while (known.length > 1 && JSON.stringify(known).length > this.limits.bytes) known.shift();
		const keep = new Set([...known, ...unknown.slice(-LEDGER_MAX_END_UNKNOWN)]);
		this.entries = this.entries.filter((entry) => keep.has(entry));
	}
}

/**
 * Whether the trigger never learnt how the run ended: emitted and not settled since, or found to
 * exist when emitted again at an activation (it ran, or n8n stopped while it ran: then its execution
 * says `crashed`).
 */
function endUnknown(entry: LedgerEntry): boolean {
	return entry.outcome === 'emitted' || entry.outcome === 'existed at activation';
}

/**
 * Recent Starts' first row when some runs' end is unknown: how many, and their item keys as a
 * Start Again list to paste (those whose execution n8n shows as crashed are the ones to start again).
 * A run n8n reported it could not create is not among them though n8n may show its execution as
 * crashed (n8n 2.41 created the row, then failed to mark it running: SQLite's write lock under
 * load): its items were rolled back and start again under the next attempt.
 */
export function endUnknownSummary(ledger: StartLedger): Record<string, unknown> | undefined {
	const entries = ledger.endUnknown();
	if (entries.length === 0) return undefined;
	const keys = [...new Set(entries.flatMap((entry) => entry.items))];
	return {
		endUnknown: entries.length,
		note: `Runs whose end this trigger never learnt: n8n stopped (or the workflow was unpublished) while they ran. Those of them whose execution n8n shows as crashed did not finish: click Retry on each in n8n's Executions list (n8n kept their items), or, for many at once, put their item keys (each execution's deduplication key ends with its item key) in Start Again and publish${entries.length > MAX_START_AGAIN ? `; this list holds the newest ${MAX_START_AGAIN}, Execute step lists the rest once those are started again` : ''}. A crashed execution not listed here is a run n8n told this trigger it could not start: its items were taken back and start again by themselves at the next poll that lists them (under the same item key with #<attempt>); do not start or retry them again.`,
		itemKeys: JSON.stringify(keys.slice(0, MAX_START_AGAIN)),
	};
}

function shortKey(key: ItemKey): ItemKey {
	return typeof key === 'string' && key.length > MAX_KEY_CHARS
		? `${key.slice(0, MAX_KEY_CHARS)}…(cut)`
		: key;
}

/**
 * Reads the "Start Again" option: a JSON array of item keys (strings or numbers) as the ledger shows
 * them. Empty text is no list.
 */
export function parseStartAgain(text: string): ItemKey[] {
	const trimmed = text.trim();
	if (trimmed === '') return [];
	let parsed: unknown;
	try {
		parsed = JSON.parse(trimmed);
	} catch {
		throw startAgainError(trimmed, 'give a JSON list of item keys, like ["INC-101", 42]');
	}
	const list = Array.isArray(parsed) ? parsed : [parsed];
	for (const key of list) {
		if (!(typeof key === 'string' && key !== '') && !(typeof key === 'number' && isFinite(key)))
			throw startAgainError(
				trimmed,
				`it lists ${JSON.stringify(key)}, but an item key is a non-empty string or a finite number`,
			);
	}
	if (list.length > MAX_START_AGAIN)
		throw startAgainError(
			trimmed,
			`it lists ${list.length} keys; at most ${MAX_START_AGAIN} at a time`,
		);
	return list as ItemKey[];
}

export const MAX_START_AGAIN = 500;

function startAgainError(value: string, problem: string): ConfigError {
	return new ConfigError('startAgain', value.slice(0, 80), problem);
}

/**
 * Names one Start Again list (the keys in their order), so the node applies a list once: a list
 * already applied is not applied again at the next activation.
 */
export function startAgainId(keys: readonly ItemKey[]): string {
	return unitsToHex(hash64(keys.map(canonicalKey).join('\u0001')));
}
