import { hkdfSync } from 'node:crypto';

import {
	type AuthVerdict,
	type CallbackAuth,
	type CallbackHeaders,
	DEFAULT_TOLERANCE_SEC,
	constantTimeEqual,
	hmacSha256,
} from './signature';

/**
 * Proofs only a holder of the partner's credential can make (docs/round-trip-wait.md, "One fixed URL
 * per partner"), each under its own key derived from the credential's secret (HKDF-SHA256, one label
 * per purpose), so neither is the secret and neither key serves the other purpose:
 *
 * - the **match proof**: a Round-Trip Wait waiting through the fixed URL writes, beside
 *   `roundTripMatch` in its custom data, a MAC over the credential id, the correlation id, the
 *   execution id and its callback URL. Custom data is writable by any workflow
 *   (`$execution.customData.set`); the MAC is not: the Round-Trip Callback forwards only to a run whose
 *   proof verifies, so a workflow that plants `roundTripMatch` and waits in a plain Wait node gets
 *   nothing.
 * - the **forward proof**: the Round-Trip Callback hands a callback to that run with a header signed
 *   for it (its execution, wait id and correlation id, the time, the partner's headers, query and
 *   address, and the body), never with the partner's token, password or signature. The waiting
 *   Round-Trip Wait accepts it in place of the partner's credential (correlation.ts judgeCallback).
 */

/** Custom-data key of the match proof (beside FIXED_MATCH_KEY and FIXED_CALLBACK_KEY). */
export const MATCH_PROOF_KEY = 'roundTripMatchProof';
/** The header a forwarded callback carries instead of the partner's credential. */
export const FORWARD_HEADER = 'x-round-trip-forward';

type Purpose = 'match' | 'forward';

/** The credential's secret material: what a caller must hold to pass it. */
function secretMaterial(auth: CallbackAuth): string {
	switch (auth.scheme) {
		case 'hmac':
		case 'standardWebhooks':
			return `${auth.scheme}\u0000${auth.secret}`;
		case 'header':
			return `header\u0000${auth.token}`;
		case 'basic':
			return `basic\u0000${auth.user}\u0000${auth.password}`;
	}
}

/** A key for one purpose, derived from the credential's secret (HKDF-SHA256 with a purpose label). */
function derivedKey(auth: CallbackAuth, purpose: Purpose): Buffer {
	const info = `n8n-nodes-durable-triggers round-trip ${purpose} v1`;
	return Buffer.from(hkdfSync('sha256', secretMaterial(auth), Buffer.alloc(0), info, 32));
}

/** What a match proof covers: the partner's credential, its id, the waiting execution, its callback URL. */
export interface MatchFields {
	credentialId: string;
	correlationId: string;
	executionId: string;
	callbackUrl: string;
}

/** The match proof a waiting run writes to its custom data (MATCH_PROOF_KEY), hex. */
export function matchProof(auth: CallbackAuth, fields: MatchFields): string {
	const covered = JSON.stringify([
		fields.credentialId,
		fields.correlationId,
		fields.executionId,
		fields.callbackUrl,
	]);
	return hmacSha256(derivedKey(auth, 'match'), covered).toString('hex');
}

/** Whether `presented` is the match proof for these fields (constant time). */
export function provesMatch(
	auth: CallbackAuth,
	fields: MatchFields,
	presented: string | undefined,
): boolean {
	return typeof presented === 'string' && constantTimeEqual(presented, matchProof(auth, fields));
}

/**
 * What a forward tells the waiting run, signed with the forward key: when it was made, the wait it is
 * for, and the partner's request as the Round-Trip Callback received it (its headers without the
 * credential's, its query, its address where n8n has it), with what makes the partner's signed
 * callback unique for the run's replay memories.
 */
export interface ForwardEnvelope {
	/** Unix seconds of the forward. */
	t: number;
	executionId: string;
	waitId: string;
	correlationId: string;
	headers: Record<string, string>;
	query: Record<string, string>;
	address?: string;
	/** The partner's signed callback's replay key and until when a copy of it could pass (signature.ts AuthVerdict). */
	replayKey?: string;
	replayUntilMs?: number;
}

/** The FORWARD_HEADER value: `<base64url of the envelope>.<hex MAC of "<that>." and the raw body>`. */
export function forwardProof(
	auth: CallbackAuth,
	envelope: ForwardEnvelope,
	rawBody: Buffer | string,
): string {
	const encoded = Buffer.from(JSON.stringify(envelope)).toString('base64url');
	return `${encoded}.${hmacSha256(derivedKey(auth, 'forward'), `${encoded}.`, rawBody).toString('hex')}`;
}

/** The wait a forward must be for. */
export interface ForwardTarget {
	executionId: string;
	waitId: string;
	correlationId: string;
}

export type OpenedForward = Extract<AuthVerdict, { ok: true }> & {
	parts: { headers: CallbackHeaders; query: Record<string, string> };
	address?: string;
};

/**
 * Checks a forwarded callback's proof: signed with the forward key of this credential, for this
 * execution, wait and correlation id, made within the tolerance of now (a forward is made the moment
 * it is sent). On success, the partner's headers, query and address, and its replay key.
 */
export function openForward(
	auth: CallbackAuth,
	header: string | string[] | undefined,
	rawBody: Buffer | string,
	target: ForwardTarget,
	nowMs: number,
): OpenedForward | { ok: false; status: 401 | 403; reason: string } {
	const value = Array.isArray(header) ? undefined : header;
	const [encoded, mac, extra] = (value ?? '').split('.');
	if (!encoded || !mac || extra !== undefined)
		return { ok: false, status: 401, reason: `malformed ${FORWARD_HEADER} header` };
	const expected = hmacSha256(derivedKey(auth, 'forward'), `${encoded}.`, rawBody);
	if (!constantTimeEqual(Buffer.from(mac, 'hex'), expected))
		return {
			ok: false,
			status: 403,
			reason: `${FORWARD_HEADER} does not match: not forwarded by a Round-Trip Callback with this credential`,
		};
	const envelope = JSON.parse(
		Buffer.from(encoded, 'base64url').toString('utf8'),
	) as ForwardEnvelope;
	const forThisWait =
		constantTimeEqual(String(envelope.executionId), target.executionId) &&
		constantTimeEqual(String(envelope.waitId), target.waitId) &&
		constantTimeEqual(String(envelope.correlationId), target.correlationId);
	if (!forThisWait)
		return { ok: false, status: 403, reason: `${FORWARD_HEADER} was made for another wait` };
	const toleranceSec =
		(auth.scheme === 'hmac' || auth.scheme === 'standardWebhooks'
			? auth.toleranceSec
			: undefined) ?? DEFAULT_TOLERANCE_SEC;
	if (
		!Number.isSafeInteger(envelope.t) ||
		Math.abs(Math.floor(nowMs / 1000) - envelope.t) > toleranceSec
	)
		return {
			ok: false,
			status: 403,
			reason: `${FORWARD_HEADER} is stale: made outside the ${toleranceSec} s tolerance of now`,
		};
	return {
		ok: true,
		replayKey: envelope.replayKey,
		replayUntilMs: envelope.replayUntilMs,
		parts: { headers: envelope.headers as CallbackHeaders, query: envelope.query },
		address: envelope.address,
	};
}
