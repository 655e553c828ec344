import { randomUUID } from 'node:crypto';

import type { HttpRequest } from '../connectors/types';
import {
	type CallbackParts,
	type CorrelationPath,
	type InboundCallback,
	normalizeCorrelationId,
} from './correlation';
import { isRetryableAnswer } from './dispatch';
import {
	type AuthVerdict,
	type CallbackAuth,
	type CallbackHeaders,
	type Refusal,
	STANDARD_WEBHOOK_HEADERS,
	WAIT_ID_PARAM,
	callbackHeaders,
	credentialHeaderName,
	verifyCallback,
	waitIdOf,
} from './signature';

/**
 * One fixed callback URL for a partner (docs/round-trip-wait.md, "One fixed URL per partner"): the
 * Round-Trip Callback node receives every callback of a partner at one path, authenticates it with
 * the partner's credential, reads the partner's id, finds the run waiting for that id through the
 * execution custom data the waiting run wrote, and forwards the callback to that run's own callback
 * URL, signed for that wait. The waiting Round-Trip Wait then judges it exactly as a callback sent
 * there directly (one path for the run's own checks, its Resume Condition and n8n's resume-once).
 */

/** Custom-data key the waiting run is found by: `<credential id>:<correlation id>` (fixedMatchValue). */
export const FIXED_MATCH_KEY = 'roundTripMatch';
/** Custom-data key holding the waiting run's own callback URL (its resume token and wait id). */
export const FIXED_CALLBACK_KEY = 'roundTripCallbackUrl';

/**
 * A 404 at the fixed URL means "no run waits for this id now, and the callback could not be kept for
 * one" (earlyCallbacks.ts: the keeping place full, the body too large, or none in this n8n). The
 * partner retries a 404 per the retry rule for this long after it sent its first attempt; then it is done.
 */
export const EARLY_CALLBACK_RETRY_MS = 10 * 60_000;

/** The value of FIXED_MATCH_KEY: the partner (its credential) and its id for the request. */
export function fixedMatchValue(credentialId: string, correlationId: string): string {
	return `${credentialId}:${correlationId}`;
}

/** An execution the custom-data lookup found for a match value. */
export interface FoundExecution {
	executionId: string;
	/** n8n's execution status: `waiting`, `running`, `success`, `error`, … */
	status: string;
	/** The value of FIXED_CALLBACK_KEY, if the execution has one. */
	callbackUrl?: string;
}

/** The 410 at the fixed URL: runs for the id existed, none waits (a retry cannot help). */
export const NO_RUN_WAITS_ANY_MORE =
	'no run waits for this id any more: it was resumed, timed out or ended';

export type FoundWait = { ok: true; executionId: string; callbackUrl: string };
export type LookupVerdict = FoundWait | Refusal<404 | 410>;

/**
 * The run a callback for this id resumes: the oldest waiting one (ids should be unique per partner;
 * if two runs wait for one id, each callback resumes the oldest still waiting). No waiting run: 410
 * when runs for this id existed (they were resumed, timed out or ended: a retry cannot help), else 404
 * (nobody waits for it now; a run may not be waiting yet: the callback is kept, earlyCallbacks.ts).
 */
export function pickWaitingRun(found: FoundExecution[]): LookupVerdict {
	const waiting = found
		.filter((run) => run.status === 'waiting' && run.callbackUrl !== undefined)
		.sort((a, b) => compareIds(a.executionId, b.executionId));
	const first = waiting[0];
	if (first) return { ok: true, executionId: first.executionId, callbackUrl: first.callbackUrl! };
	if (found.length > 0)
		return {
			ok: false,
			status: 410,
			reason: NO_RUN_WAITS_ANY_MORE,
		};
	return { ok: false, status: 404, reason: 'no run is waiting for this id' };
}

/** n8n's execution ids are decimal numbers (sequence order): compared as such, else as text. */
function compareIds(a: string, b: string): number {
	return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * The partner's credential at the fixed URL: as at a per-wait URL, with no wait to bind to (HMAC v2
 * is signed with an empty wait id, `"<t>..<body>"`, as in Wait Only mode) and the timestamp within
 * the tolerance of now.
 */
export function authenticateAtFixedUrl(
	auth: CallbackAuth,
	callback: InboundCallback,
	nowMs: number,
): AuthVerdict {
	return verifyCallback(auth, callback, nowMs, { waitId: '', startedAtMs: nowMs });
}

/**
 * The partner's id in an authenticated callback, at the Correlation ID Location. Under HMAC only the
 * signed body is read (as in Wait Only mode): the signature names no wait, so an id in an unsigned
 * header could be changed to send a captured callback to another run.
 */
export async function correlationIdAtFixedUrl(
	auth: CallbackAuth,
	path: CorrelationPath,
	parts: CallbackParts,
): Promise<{ ok: true; id: string } | Refusal<409>> {
	const bodyOnly = auth.scheme === 'hmac';
	const where = `${path.expression}${bodyOnly ? ' (read from the signed body only)' : ''}`;
	let located: unknown;
	try {
		located = await path.evaluate(bodyOnly ? { body: parts.body, headers: {}, query: {} } : parts);
	} catch (error) {
		return conflict(`no correlation id at ${where}: evaluating it failed (${error.message})`);
	}
	const id = normalizeCorrelationId(located);
	return id === undefined ? conflict(`no correlation id at ${where}`) : { ok: true, id };
}

function conflict(reason: string): Refusal<409> {
	return { ok: false, status: 409, reason };
}

/**
 * Where the callback is forwarded: the waiting run's own callback URL, which must be this n8n's
 * resume URL of the execution the lookup found (same origin as the fixed URL, path ending in the
 * execution id), so a value planted in custom data cannot send a signed callback elsewhere. The
 * partner's query parameters go along (withPartnerQuery). Undefined when the URL is not such a
 * resume URL.
 */
export function forwardUrl(
	found: FoundWait,
	fixedUrl: string,
	partnerQuery: Record<string, unknown>,
): string | undefined {
	let target: URL;
	try {
		target = new URL(found.callbackUrl);
	} catch {
		return undefined;
	}
	if (target.origin !== new URL(fixedUrl).origin) return undefined;
	if (!target.pathname.endsWith(`/${found.executionId}`)) return undefined;
	return withPartnerQuery(target.toString(), partnerQuery);
}

/**
 * A run's callback URL with the partner's query parameters (a Correlation ID Location may read them),
 * n8n's `signature` and the wait id excepted.
 */
export function withPartnerQuery(
	callbackUrl: string,
	partnerQuery: Record<string, unknown>,
): string {
	const target = new URL(callbackUrl);
	for (const [name, value] of Object.entries(partnerQuery)) {
		if (name === 'signature' || name === WAIT_ID_PARAM || typeof value !== 'string') continue;
		target.searchParams.append(name, value);
	}
	return target.toString();
}

/** Headers that describe one hop or the partner's credential: not forwarded (the credential is signed anew). */
const NOT_FORWARDED = new Set([
	'host',
	'connection',
	'content-length',
	'transfer-encoding',
	'expect',
	'keep-alive',
	'upgrade',
	'authorization',
	...Object.values(STANDARD_WEBHOOK_HEADERS),
]);

/** The partner's headers without those of one hop and without its credential's. */
function partnerOwnHeaders(
	auth: CallbackAuth,
	partnerHeaders: CallbackHeaders,
): Record<string, string> {
	const dropped = credentialHeaderName(auth);
	const headers: Record<string, string> = {};
	for (const [key, value] of Object.entries(partnerHeaders)) {
		const name = key.toLowerCase();
		if (value === undefined || name === dropped || NOT_FORWARDED.has(name)) continue;
		headers[name] = Array.isArray(value) ? value.join(', ') : value;
	}
	return headers;
}

/**
 * The headers a kept callback is stored with (earlyCallbacks.ts): the partner's own, no credential
 * (it is signed anew when forwarded), and a Standard Webhooks message id, which forwarding keeps.
 */
export function headersToKeep(
	auth: CallbackAuth,
	partnerHeaders: CallbackHeaders,
): Record<string, string> {
	const messageId = partnerHeaders[STANDARD_WEBHOOK_HEADERS.id];
	return {
		...partnerOwnHeaders(auth, partnerHeaders),
		...(typeof messageId === 'string' ? { [STANDARD_WEBHOOK_HEADERS.id]: messageId } : {}),
	};
}

/**
 * The forwarded callback's headers: the partner's own (the waiting run's receipt shows them), without
 * its credential, plus the credential's headers signed for the waiting run's wait at `nowSec`.
 * Standard Webhooks keeps the partner's message id.
 */
export function forwardHeaders(
	auth: CallbackAuth,
	partnerHeaders: CallbackHeaders,
	callbackUrl: string,
	rawBody: Buffer | string,
	nowSec: number,
): Record<string, string> {
	const messageId = partnerHeaders[STANDARD_WEBHOOK_HEADERS.id];
	return {
		...partnerOwnHeaders(auth, partnerHeaders),
		...callbackHeaders(
			auth,
			waitIdOf(callbackUrl),
			rawBody,
			nowSec,
			typeof messageId === 'string' ? messageId : `msg_${randomUUID()}`,
		),
	};
}

/** How long forwarding one callback to its waiting run may take (the run's own checks and n8n's resume). */
export const FORWARD_TIMEOUT_MS = 60_000;

/** The partner's callback as forwarded to a waiting run's own callback URL `url`, signed for its wait at `nowSec`. */
export function forwardRequest(
	auth: CallbackAuth,
	url: string,
	callback: { headers: CallbackHeaders; rawBody: Buffer | string },
	nowSec: number,
): HttpRequest {
	return {
		method: 'POST',
		url,
		headers: forwardHeaders(auth, callback.headers, url, callback.rawBody, nowSec),
		body: callback.rawBody.toString(),
		timeoutMs: FORWARD_TIMEOUT_MS,
	};
}

/**
 * Whether a partner should send a callback to the fixed URL again (the contract's retry rule): what is
 * retryable at a per-wait URL, and a 404 until EARLY_CALLBACK_RETRY_MS after its first attempt.
 */
export function isRetryableAtFixedUrl(
	status: number,
	body: string,
	firstAttemptAtMs: number,
	nowMs: number,
): boolean {
	if (status === 404) return nowMs - firstAttemptAtMs < EARLY_CALLBACK_RETRY_MS;
	return isRetryableAnswer(status, body);
}
