import type { HttpRequest } from '../connectors/types';
import {
	type CallbackParts,
	type CorrelationPath,
	type InboundCallback,
	normalizeCorrelationId,
} from './correlation';
import { isRetryableAnswer } from './dispatch';
import { FORWARD_HEADER, type ForwardEnvelope, forwardProof, provesMatch } from './proof';
import {
	type AuthVerdict,
	type CallbackAuth,
	type CallbackHeaders,
	type Refusal,
	STANDARD_WEBHOOK_HEADERS,
	credentialHeaderName,
	verifyCallback,
	waitIdOf,
} from './signature';

/**
 * One fixed callback URL for a partner (docs/round-trip-wait.md, "One fixed URL per partner"): the
 * Round-Trip Callback node receives every callback of a partner at one path, authenticates it with
 * the partner's credential, reads the partner's id, finds the run waiting for that id through the
 * execution custom data the waiting run wrote and its match proof (proof.ts), and forwards the callback
 * to that run's own callback URL with a forward proof for that wait, never the partner's credential.
 * The waiting Round-Trip Wait then judges it as a callback sent there directly (one path for the run's
 * own checks, its Resume Condition and n8n's resume-once).
 */

/** Custom-data key the waiting run is found by: `<credential id>:<correlation id>` (fixedMatchValue). */
export const FIXED_MATCH_KEY = 'roundTripMatch';
/** Custom-data key holding the waiting run's own callback URL (its resume token and wait id). */
export const FIXED_CALLBACK_KEY = 'roundTripCallbackUrl';

/**
 * A 404 at the fixed URL of an earlier version meant "no run waits for this id now, and the callback
 * could not be kept for one" (now a 503 with Retry-After, earlyCallbacks.ts). A partner written for
 * it retries a 404 per the retry rule for this long after its first attempt; then it is done.
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
	/** The value of MATCH_PROOF_KEY, if the execution has one (proof.ts). */
	matchProof?: string;
}

/**
 * The runs found for a match that a Round-Trip Wait with this credential wrote (their match proof
 * verifies, proof.ts), and the others: custom data any workflow can plant, which is never forwarded
 * to and never decides an answer (a planted run neither gets a callback nor turns a "kept" into a 410).
 */
export function provenRuns(
	auth: CallbackAuth,
	credentialId: string,
	correlationId: string,
	found: FoundExecution[],
): { proven: FoundExecution[]; unproven: FoundExecution[] } {
	const proven: FoundExecution[] = [];
	const unproven: FoundExecution[] = [];
	for (const run of found) {
		const fields = {
			credentialId,
			correlationId,
			executionId: run.executionId,
			callbackUrl: run.callbackUrl ?? '',
		};
		(provesMatch(auth, fields, run.matchProof) ? proven : unproven).push(run);
	}
	return { proven, unproven };
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
	return verifyCallback(auth, callback, nowMs, { waitId: '', startedAtMs: nowMs, fixedUrl: true });
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
 * execution id). Undefined when it is not such a resume URL.
 */
export function forwardUrl(found: FoundWait, fixedUrl: string): string | undefined {
	let target: URL;
	try {
		target = new URL(found.callbackUrl);
	} catch {
		return undefined;
	}
	if (target.origin !== new URL(fixedUrl).origin) return undefined;
	if (!target.pathname.endsWith(`/${found.executionId}`)) return undefined;
	return target.toString();
}

/**
 * The partner's request as a waiting run receives it through the fixed URL (kept, or forwarded at
 * once): its headers without the credential's, its query, its raw body, its address where n8n has it,
 * and what makes a signed callback unique (its replay key and until when a copy could pass).
 */
export interface PartnerRequest {
	headers: Record<string, string>;
	query: Record<string, string>;
	body: string;
	address?: string;
	replayKey?: string;
	replayUntilMs?: number;
}

/** The partner's headers without its credential's (the signature, the token, the password). */
export function partnerHeaders(
	auth: CallbackAuth,
	headers: CallbackHeaders,
): Record<string, string> {
	const dropped = new Set([credentialHeaderName(auth), STANDARD_WEBHOOK_HEADERS.signature]);
	const kept: Record<string, string> = {};
	for (const [key, value] of Object.entries(headers)) {
		const name = key.toLowerCase();
		if (value === undefined || dropped.has(name)) continue;
		kept[name] = Array.isArray(value) ? value.join(', ') : value;
	}
	return kept;
}

/** The partner's query parameters that are text. */
export function partnerQuery(query: Record<string, unknown>): Record<string, string> {
	const kept: Record<string, string> = {};
	for (const [name, value] of Object.entries(query))
		if (typeof value === 'string') kept[name] = value;
	return kept;
}

/** How long forwarding one callback to its waiting run may take (the run's own checks and n8n's resume). */
export const FORWARD_TIMEOUT_MS = 60_000;

/**
 * The partner's callback as forwarded to the waiting run at `url` (execution `target.executionId`,
 * its wait id in the URL), at `nowSec`: its body and content type, and a forward proof for that wait
 * (proof.ts) in place of the partner's credential, which never leaves the Round-Trip Callback.
 */
export function forwardRequest(
	auth: CallbackAuth,
	url: string,
	partner: PartnerRequest,
	target: { executionId: string; correlationId: string },
	nowSec: number,
): HttpRequest {
	const envelope: ForwardEnvelope = {
		t: nowSec,
		executionId: target.executionId,
		waitId: waitIdOf(url),
		correlationId: target.correlationId,
		headers: partner.headers,
		query: partner.query,
		...(partner.address === undefined ? {} : { address: partner.address }),
		...(partner.replayKey === undefined
			? {}
			: { replayKey: partner.replayKey, replayUntilMs: partner.replayUntilMs }),
	};
	const contentType = partner.headers['content-type'];
	return {
		method: 'POST',
		url,
		headers: {
			...(contentType === undefined ? {} : { 'content-type': contentType }),
			[FORWARD_HEADER]: forwardProof(auth, envelope, partner.body),
		},
		body: partner.body,
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
