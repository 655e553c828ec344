import { createHash, randomBytes } from 'node:crypto';

import type { HttpResponse } from '../connectors/types';

/**
 * Early callbacks at the fixed URL (docs/round-trip-wait.md, "Early callbacks at the fixed URL"): an
 * authenticated callback for an id no run has ever waited for is kept, in a place every n8n process
 * shares and that survives a restart (n8n's database, n8nDoor.ts `keptCallbackPlace`), for the wait
 * that claims it. Each kept callback is one row; claiming one removes its row, and of concurrent
 * claimers exactly one removes it, so a kept callback reaches one wait once. Both sides write before
 * they read: the Round-Trip Callback keeps, then looks for a waiting run again; the Round-Trip Wait
 * is saved as waiting (with the custom data it is found by), then claims. Whichever comes second sees
 * the other, so a callback and a wait that cross are not both left waiting.
 */

/** How long a callback is kept for the wait that claims it; then it is dropped unanswered. */
export const KEPT_CALLBACK_MS = 10 * 60_000;
/** At most this many callbacks are kept at once, for all partners of the instance together. */
export const MAX_KEPT_CALLBACKS = 1_000;
/** A callback whose body is larger than this is not kept (the row holds it). */
export const MAX_KEPT_BODY_BYTES = 32 * 1024;

/** Every kept callback's key starts so: `<prefix><match hash>.<kept at, ms>.<nonce>`. */
export const KEPT_KEY_PREFIX = 'durableTriggers.keptCallback.';

/** A kept callback as stored: what the wait needs to judge it (the credential headers removed). */
export interface KeptCallback {
	headers: Record<string, string>;
	body: string;
	query: Record<string, string>;
}

/** Rows by key, shared by every n8n process, surviving restarts. */
export interface KeepingPlace {
	/** The keys that start with `prefix`. */
	keys(prefix: string): Promise<string[]>;
	/** Adds a row under a new key. */
	add(key: string, value: string): Promise<void>;
	/** Removes the row: its value if this call removed it (of concurrent calls, one), else undefined. */
	take(key: string): Promise<string | undefined>;
	/** Removes rows, if there. */
	remove(keys: string[]): Promise<void>;
}

export type KeepVerdict =
	| { kept: true; key: string; keptUntilMs: number }
	| { kept: false; reason: string };

/** A kept callback a wait claimed: no other wait can have it. */
export interface ClaimedCallback {
	key: string;
	keptAtMs: number;
	callback: KeptCallback;
}

function matchPrefix(matchValue: string): string {
	// Hashed: the match holds the partner's id (any text, up to 255 characters), a key at most 255.
	return `${KEPT_KEY_PREFIX}${createHash('sha256').update(matchValue).digest('hex').slice(0, 40)}.`;
}

/** When the callback under `key` was kept; undefined for a key this module did not write. */
function keptAtOf(key: string): number | undefined {
	const match = /\.(\d{15})\.[0-9a-f]+$/.exec(key);
	return match ? Number(match[1]) : undefined;
}

/** Oldest first; a key this module did not write (keptAtOf undefined) counts as expired. */
function liveKeys(keys: string[], nowMs: number): { live: string[]; expired: string[] } {
	const live: string[] = [];
	const expired: string[] = [];
	for (const key of keys) {
		const keptAt = keptAtOf(key);
		if (keptAt !== undefined && nowMs - keptAt < KEPT_CALLBACK_MS) live.push(key);
		else expired.push(key);
	}
	live.sort((a, b) => keptAtOf(a)! - keptAtOf(b)! || (a < b ? -1 : a > b ? 1 : 0));
	return { live, expired };
}

/**
 * Keeps an authenticated callback for the run that will wait for `matchValue` (fixedMatchValue).
 * Drops what has expired on the way. Refused, keeping nothing, when its body is over
 * MAX_KEPT_BODY_BYTES or MAX_KEPT_CALLBACKS are kept already; the count is checked again after
 * adding, so callbacks kept at the same moment in several processes never exceed it either.
 */
export async function keepCallback(
	place: KeepingPlace,
	matchValue: string,
	callback: KeptCallback,
	nowMs: number,
): Promise<KeepVerdict> {
	if (Buffer.byteLength(callback.body) > MAX_KEPT_BODY_BYTES)
		return { kept: false, reason: `its body is over ${MAX_KEPT_BODY_BYTES} bytes` };
	const full = { kept: false, reason: `${MAX_KEPT_CALLBACKS} callbacks are kept already` } as const;
	const { live, expired } = liveKeys(await place.keys(KEPT_KEY_PREFIX), nowMs);
	if (expired.length > 0) await place.remove(expired);
	if (live.length >= MAX_KEPT_CALLBACKS) return full;
	const key = `${matchPrefix(matchValue)}${String(nowMs).padStart(15, '0')}.${randomBytes(8).toString('hex')}`;
	await place.add(key, JSON.stringify(callback));
	const after = liveKeys(await place.keys(KEPT_KEY_PREFIX), nowMs).live;
	// Over the bound: taken back, unless a wait claimed it meanwhile (then it is on its way).
	if (after.length > MAX_KEPT_CALLBACKS && (await place.take(key)) !== undefined) return full;
	return { kept: true, key, keptUntilMs: nowMs + KEPT_CALLBACK_MS };
}

/**
 * Claims every callback kept for `matchValue` and not expired, oldest first: each row is removed
 * as it is claimed, so no other wait (or process) can claim it too. Expired ones are left to the
 * next keepCallback, which drops them.
 */
export async function claimKeptCallbacks(
	place: KeepingPlace,
	matchValue: string,
	nowMs: number,
): Promise<ClaimedCallback[]> {
	const claimed: ClaimedCallback[] = [];
	for (const key of liveKeys(await place.keys(matchPrefix(matchValue)), nowMs).live) {
		const value = await place.take(key);
		const callback = value === undefined ? undefined : decodeKept(value);
		if (callback) claimed.push({ key, keptAtMs: keptAtOf(key)!, callback });
	}
	return claimed;
}

function decodeKept(value: string): KeptCallback | undefined {
	try {
		const parsed = JSON.parse(value) as Partial<KeptCallback>;
		const isRecord = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
		if (isRecord(parsed.headers) && isRecord(parsed.query) && typeof parsed.body === 'string')
			return parsed as KeptCallback;
	} catch {
		// not a kept callback: dropped
	}
	return undefined;
}

/** Whether a waiting run's answer to a callback means it resumed with it (not a 202 `resumed: false`). */
export function resumedBy(answer: Pick<HttpResponse, 'status' | 'body'>): boolean {
	if (answer.status < 200 || answer.status >= 300) return false;
	try {
		return (JSON.parse(answer.body) as { resumed?: unknown } | null)?.resumed !== false;
	} catch {
		return true;
	}
}

/**
 * What became of a claimed callback: dropped (not sent: the run had resumed with an earlier one), or
 * sent, with the waiting run's answer (none when every attempt failed at the transport).
 */
export type Delivery =
	| { key: string; dropped: true }
	| { key: string; dropped: false; answer?: Pick<HttpResponse, 'status' | 'body'> };

/**
 * Hands claimed callbacks to their waiting run, oldest first (`send` forwards one to the run's own
 * callback URL; undefined when it could not). Once one resumed the run, the rest are dropped: a copy
 * after the resume resumes nothing, as a late copy at the fixed URL is answered 410.
 */
export async function deliverClaimed(
	claimed: ClaimedCallback[],
	send: (callback: KeptCallback) => Promise<Pick<HttpResponse, 'status' | 'body'> | undefined>,
): Promise<Delivery[]> {
	const deliveries: Delivery[] = [];
	let resumed = false;
	for (const { key, callback } of claimed) {
		if (resumed) {
			deliveries.push({ key, dropped: true });
			continue;
		}
		const answer = await send(callback);
		resumed = answer !== undefined && resumedBy(answer);
		deliveries.push({ key, dropped: false, answer });
	}
	return deliveries;
}
