import { createHash } from 'node:crypto';

import type { HttpResponse } from '../connectors/types';
import { isRetryableAnswer } from './dispatch';
import type { PartnerRequest } from './fixedUrl';

/**
 * Early callbacks at the fixed URL (docs/round-trip-wait.md, "Early callbacks at the fixed URL"): an
 * authenticated callback for an id no run has ever waited for is kept, in a place every n8n process
 * shares and that survives a restart (n8n's database, n8nDoor.ts `keptCallbackPlace`), for the wait
 * that claims it. Each kept callback is one row, counted against its partner (credential) only, one
 * row per content. A claim is a **lease** (a row of its own, added only if absent, so of concurrent
 * claimers one has it); the callback's row is removed only once it was delivered: a delivery that
 * fails, or a process killed between claim and delivery, leaves it for the next delivery (the lease
 * expires). Both sides write before they read: the Round-Trip Callback keeps, then looks for a waiting
 * run again; the Round-Trip Wait is saved as waiting (with the custom data it is found by), then
 * claims. Whichever comes second sees the other, so a callback and a wait that cross are not both
 * left waiting. A sweep (every minute, by the processes that know the credential) removes what
 * expired, reports each expired callback, and hands due ones on again.
 */

/** How long a callback is kept for the wait that claims it; then it is swept and reported. */
export const KEPT_CALLBACK_MS = 10 * 60_000;
/** By default at most this many callbacks are kept at once per partner (credential). */
export const DEFAULT_KEPT_PER_CREDENTIAL = 1_000;
/** A callback whose body is larger than this is not kept (the row holds it). */
export const MAX_KEPT_BODY_BYTES = 32 * 1024;
/** A claim holds a kept callback this long; past it (the claimer died), the next sweep hands it on. */
export const KEPT_LEASE_MS = 2 * 60_000;
/** After a failed delivery, the callback is handed on again by a sweep this long after. */
export const REDELIVER_AFTER_MS = 60_000;

/** Every kept callback's key: `<prefix><credential hash>.<kept at, ms>.<match hash>.<content hash>`. */
export const KEPT_KEY_PREFIX = 'durableTriggers.keptCallback.';
/** A claim's key: `<prefix>` and the kept callback's key after its prefix; value the lease's end, ms. */
export const LEASE_KEY_PREFIX = 'durableTriggers.keptLease.';

/** Rows by key, shared by every n8n process, surviving restarts. */
export interface KeepingPlace {
	/** The keys that start with `prefix`. */
	keys(prefix: string): Promise<string[]>;
	/** The row's value, if there. */
	read(key: string): Promise<string | undefined>;
	/** Adds a row: false, changing nothing, when a row has the key (of concurrent calls, one adds it). */
	add(key: string, value: string): Promise<boolean>;
	/** Removes the row (only while its value is `value`, if given): whether this call removed it. */
	take(key: string, value?: string): Promise<boolean>;
	/** Removes rows, if there. */
	remove(keys: string[]): Promise<void>;
}

/** The partner (its credential's id) and its id for the request: whose callback it is. */
export interface KeptFor {
	credentialId: string;
	correlationId: string;
}

export type KeepVerdict =
	| { kept: true; key: string; keptUntilMs: number; duplicate: boolean }
	| { kept: false; status: 413 | 503; reason: string; retryAfterSec?: number };

/** A kept callback a wait (or a sweep) claimed: its lease is held, its row still there until settled. */
export interface ClaimedCallback extends KeptFor {
	key: string;
	keptAtMs: number;
	lease: string;
	request: PartnerRequest;
}

function hash(...parts: string[]): string {
	return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

/** The prefix of one partner's kept callbacks (hashed: a key is at most 255 characters). */
function credentialPrefix(credentialId: string): string {
	return `${KEPT_KEY_PREFIX}${hash('credential', credentialId).slice(0, 16)}.`;
}

function matchHash(forWhom: KeptFor): string {
	return hash('match', forWhom.credentialId, forWhom.correlationId);
}

/** The content a duplicate repeats: the match, body, query and message id (not volatile headers nor the signature). */
function contentHash(forWhom: KeptFor, request: PartnerRequest): string {
	return hash(
		'content',
		forWhom.credentialId,
		forWhom.correlationId,
		request.body,
		JSON.stringify(request.query),
		request.headers['webhook-id'] ?? '',
	);
}

const KEY_TAIL = /\.(\d{15})\.([0-9a-f]{32})\.([0-9a-f]{32})$/;

/** When the callback under `key` was kept, its match and content hashes; undefined for a key this module did not write. */
function parseKey(key: string): { keptAtMs: number; match: string; content: string } | undefined {
	const parsed = KEY_TAIL.exec(key);
	return parsed ? { keptAtMs: Number(parsed[1]), match: parsed[2], content: parsed[3] } : undefined;
}

function leaseKeyOf(key: string): string {
	return `${LEASE_KEY_PREFIX}${key.slice(KEPT_KEY_PREFIX.length)}`;
}

function isLive(key: string, nowMs: number): boolean {
	const parsed = parseKey(key);
	return parsed !== undefined && nowMs - parsed.keptAtMs < KEPT_CALLBACK_MS;
}

/** Oldest first (then by key): the order callbacks are claimed in, and the one the bound keeps. */
function byAge(a: string, b: string): number {
	return parseKey(a)!.keptAtMs - parseKey(b)!.keptAtMs || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * Keeps an authenticated callback for the run that will wait for its id. Its row is added first, then
 * the partner's rows are listed once: a copy of a callback kept already (same match and content)
 * keeps nothing and is answered as kept (the oldest row stays, also between concurrent copies); beyond
 * `maxPerCredential` live rows of this partner the newest leave (503, Retry-After: when the oldest
 * expires). Other partners' rows count for nothing here. A body over MAX_KEPT_BODY_BYTES: 413.
 */
export async function keepCallback(
	place: KeepingPlace,
	forWhom: KeptFor,
	request: PartnerRequest,
	nowMs: number,
	maxPerCredential = DEFAULT_KEPT_PER_CREDENTIAL,
): Promise<KeepVerdict> {
	if (Buffer.byteLength(request.body) > MAX_KEPT_BODY_BYTES)
		return { kept: false, status: 413, reason: `its body is over ${MAX_KEPT_BODY_BYTES} bytes` };
	const match = matchHash(forWhom);
	const content = contentHash(forWhom, request);
	const key = `${credentialPrefix(forWhom.credentialId)}${String(nowMs).padStart(15, '0')}.${match}.${content}`;
	const keptUntilMs = nowMs + KEPT_CALLBACK_MS;
	// Not added: the same callback was kept at this very millisecond.
	if (!(await place.add(key, JSON.stringify({ v: 2, ...forWhom, request }))))
		return { kept: true, key, keptUntilMs, duplicate: true };
	const live = (await place.keys(credentialPrefix(forWhom.credentialId)))
		.filter((each) => isLive(each, nowMs))
		.sort(byAge);
	const first = live.find((each) => parseKey(each)!.content === content);
	if (first !== undefined && first !== key) {
		await place.take(key);
		return {
			kept: true,
			key: first,
			keptUntilMs: parseKey(first)!.keptAtMs + KEPT_CALLBACK_MS,
			duplicate: true,
		};
	}
	// Over the bound with the others: taken back (of callbacks kept at once, all may leave; the bound
	// is never exceeded), unless a wait claimed it meanwhile (then it is on its way).
	if (live.length - 1 >= maxPerCredential && (await place.take(key)))
		return {
			kept: false,
			status: 503,
			reason: `${maxPerCredential} callbacks of this partner are kept already`,
			retryAfterSec: Math.max(
				1,
				Math.ceil((parseKey(live[0])!.keptAtMs + KEPT_CALLBACK_MS - nowMs) / 1000),
			),
		};
	return { kept: true, key, keptUntilMs, duplicate: false };
}

/** Takes the lease on `key` until `untilMs`: added if absent, or replacing one that has ended. */
async function takeLease(place: KeepingPlace, key: string, untilMs: number, nowMs: number) {
	const leaseKey = leaseKeyOf(key);
	const lease = String(untilMs);
	if (await place.add(leaseKey, lease)) return lease;
	const held = await place.read(leaseKey);
	if (held !== undefined && Number(held) > nowMs) return undefined;
	if (held !== undefined && !(await place.take(leaseKey, held))) return undefined;
	return (await place.add(leaseKey, lease)) ? lease : undefined;
}

/**
 * Claims the kept callback under `key` for delivery: its lease taken (of concurrent claimers, one),
 * its row left in place until the delivery is settled. Undefined when another holds it, it is gone,
 * or it is not a kept callback (then removed).
 */
export async function claimKeptCallback(
	place: KeepingPlace,
	key: string,
	nowMs: number,
): Promise<ClaimedCallback | undefined> {
	const parsed = parseKey(key);
	if (!parsed) return undefined;
	const lease = await takeLease(place, key, nowMs + KEPT_LEASE_MS, nowMs);
	if (lease === undefined) return undefined;
	const stored = decodeKept(await place.read(key));
	if (!stored) {
		await place.remove([key, leaseKeyOf(key)]);
		return undefined;
	}
	return { ...stored, key, keptAtMs: parsed.keptAtMs, lease };
}

/** Claims every live callback kept for `forWhom`, oldest first (see claimKeptCallback). */
export async function claimKeptCallbacks(
	place: KeepingPlace,
	forWhom: KeptFor,
	nowMs: number,
): Promise<ClaimedCallback[]> {
	const match = matchHash(forWhom);
	const keys = (await place.keys(credentialPrefix(forWhom.credentialId)))
		.filter((key) => isLive(key, nowMs) && parseKey(key)!.match === match)
		.sort(byAge);
	const claimed: ClaimedCallback[] = [];
	for (const key of keys) {
		const one = await claimKeptCallback(place, key, nowMs);
		if (one) claimed.push(one);
	}
	return claimed;
}

/**
 * Settles a claim: `done` (delivered, or refused for good: the row and its lease leave), `again` (not
 * delivered: the row stays, and its lease now ends REDELIVER_AFTER_MS from now, when a sweep hands it
 * on again), or `free` (no run to hand it to: the lease leaves, the next wait for its id claims it).
 * A claimer killed before settling leaves its lease to end by itself (KEPT_LEASE_MS): then `again`.
 */
export async function settleClaim(
	place: KeepingPlace,
	claimed: Pick<ClaimedCallback, 'key' | 'lease'>,
	outcome: 'done' | 'again' | 'free',
	nowMs: number,
): Promise<void> {
	const leaseKey = leaseKeyOf(claimed.key);
	if (outcome === 'done') {
		await place.remove([claimed.key, leaseKey]);
		return;
	}
	if ((await place.take(leaseKey, claimed.lease)) && outcome === 'again')
		await place.add(leaseKey, String(nowMs + REDELIVER_AFTER_MS));
}

/** A kept callback no wait claimed before it expired: reported by the sweep. */
export interface ExpiredCallback extends KeptFor {
	keptAtMs: number;
}

/**
 * One sweep of a partner's kept callbacks: removes each expired one (of concurrent sweeps, one
 * removes it and reports it), its lease with it, and names the live ones whose lease has ended (a
 * failed delivery, or a claimer that died): due to be handed on again (claimKeptCallback).
 */
export async function sweepKept(
	place: KeepingPlace,
	credentialId: string,
	nowMs: number,
): Promise<{ expired: ExpiredCallback[]; due: string[] }> {
	const expired: ExpiredCallback[] = [];
	const live = new Set<string>();
	for (const key of await place.keys(credentialPrefix(credentialId))) {
		if (isLive(key, nowMs)) {
			live.add(key);
			continue;
		}
		const stored = decodeKept(await place.read(key));
		if (!(await place.take(key))) continue;
		await place.remove([leaseKeyOf(key)]);
		if (stored)
			expired.push({
				credentialId: stored.credentialId,
				correlationId: stored.correlationId,
				keptAtMs: parseKey(key)?.keptAtMs ?? 0,
			});
	}
	const due: string[] = [];
	for (const leaseKey of await place.keys(leaseKeyOf(credentialPrefix(credentialId)))) {
		const key = `${KEPT_KEY_PREFIX}${leaseKey.slice(LEASE_KEY_PREFIX.length)}`;
		const lease = await place.read(leaseKey);
		// A lease whose callback is gone: its claimer delivered it and died before removing the lease.
		if (!live.has(key)) await place.take(leaseKey);
		else if (lease !== undefined && Number(lease) <= nowMs) due.push(key);
	}
	return { expired, due: due.sort(byAge) };
}

function decodeKept(
	value: string | undefined,
): (KeptFor & { request: PartnerRequest }) | undefined {
	if (value === undefined) return undefined;
	try {
		const parsed = JSON.parse(value) as Partial<KeptFor & { v: number; request: PartnerRequest }>;
		const request = parsed.request;
		const isRecord = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
		if (
			parsed.v === 2 &&
			typeof parsed.credentialId === 'string' &&
			typeof parsed.correlationId === 'string' &&
			isRecord(request?.headers) &&
			isRecord(request?.query) &&
			typeof request?.body === 'string'
		)
			return {
				credentialId: parsed.credentialId,
				correlationId: parsed.correlationId,
				request: request,
			};
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

/** Whether a delivery is settled for good (`done`), or the callback is to be handed on again (`again`). */
export function deliveryOutcome(delivery: Delivery): 'done' | 'again' {
	if (delivery.dropped) return 'done';
	const { answer } = delivery;
	return answer === undefined || isRetryableAnswer(answer.status, answer.body) ? 'again' : 'done';
}

/**
 * Hands claimed callbacks to their waiting run, oldest first (`send` forwards one to the run's own
 * callback URL; undefined when it could not), and settles each claim (settleClaim). Once one resumed
 * the run, the rest are dropped: a copy after the resume resumes nothing, as a late copy at the fixed
 * URL is answered 410.
 */
export async function deliverClaimed(
	place: KeepingPlace,
	claimed: ClaimedCallback[],
	send: (request: PartnerRequest) => Promise<Pick<HttpResponse, 'status' | 'body'> | undefined>,
	now: () => number,
): Promise<Delivery[]> {
	const deliveries: Delivery[] = [];
	let resumed = false;
	for (const { key, lease, request } of claimed) {
		let delivery: Delivery;
		if (resumed) delivery = { key, dropped: true };
		else {
			const answer = await send(request);
			resumed = answer !== undefined && resumedBy(answer);
			delivery = { key, dropped: false, answer };
		}
		await settleClaim(place, { key, lease }, deliveryOutcome(delivery), now());
		deliveries.push(delivery);
	}
	return deliveries;
}

/** Where the fixed URL's replay memory keeps a partner's signed callbacks: `<prefix><credential hash>.<until, ms>.<replay key hash>`. */
export const SEEN_KEY_PREFIX = 'durableTriggers.fixedUrlSeen.';

function seenPrefix(credentialId: string): string {
	return `${SEEN_KEY_PREFIX}${hash('credential', credentialId).slice(0, 16)}.`;
}

/**
 * The fixed URL's replay memory, in the shared place (so across processes): a signed callback
 * (its replay key: HMAC timestamp and digest, or the Standard Webhooks message id and timestamp)
 * goes to one target until its timestamp could no longer pass (`untilMs`, from the signed timestamp,
 * so a copy has the same). The first to present it binds it to its target (a waiting execution, or
 * "kept"); a copy for the same target passes (a partner retrying after a lost answer; n8n resumes a
 * run once), a copy for another target is refused: false.
 */
export async function claimAtFixedUrl(
	place: KeepingPlace,
	credentialId: string,
	replayKey: string,
	target: string,
	untilMs: number,
): Promise<boolean> {
	const key = `${seenPrefix(credentialId)}${String(untilMs).padStart(15, '0')}.${hash('seen', replayKey)}`;
	if (await place.add(key, target)) return true;
	return (await place.read(key)) === target;
}

/** Removes a partner's replay-memory rows whose timestamp could no longer pass (by their keys alone). */
export async function sweepSeen(
	place: KeepingPlace,
	credentialId: string,
	nowMs: number,
): Promise<void> {
	const prefix = seenPrefix(credentialId);
	const ended = (await place.keys(prefix)).filter(
		(key) => !(Number(key.slice(prefix.length, prefix.length + 15)) > nowMs),
	);
	await place.remove(ended);
}
