import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

import { RoundTripConfigError } from './errors';

/**
 * Authentication of the inbound resume callback. Every comparison of a presented credential
 * with the configured one runs in constant time, and no refusal reason ever carries a secret.
 */

export const DEFAULT_SIGNATURE_HEADER = 'x-signature';
export const DEFAULT_TOKEN_HEADER = 'x-callback-token';
export const DEFAULT_TOLERANCE_SEC = 300;
/** A wider window makes a captured callback replayable for longer than any clock skew needs. */
export const MAX_TOLERANCE_SEC = 86_400;

/** Field names match the roundTripCallbackApi credential, so its data maps straight across. */
export type CallbackAuth = HmacAuth | TokenAuth | BasicAuth;
export type HmacAuth = { scheme: 'hmac'; secret: string; signatureHeader?: string; toleranceSec?: number };
export type TokenAuth = { scheme: 'header'; token: string; headerName?: string };
export type BasicAuth = { scheme: 'basic'; user: string; password: string };

/** Node's IncomingHttpHeaders shape: repeated headers may arrive as arrays. */
export type CallbackHeaders = Record<string, string | string[] | undefined>;

export interface SignedRequest {
	headers: CallbackHeaders;
	/** The body exactly as received; HMAC is computed over these bytes, never a re-serialisation. */
	rawBody: Buffer | string;
}

export type Refusal<Status extends number> = { ok: false; status: Status; reason: string };
/** 401: credentials missing or unreadable. 403: credentials present but wrong or stale. */
export type AuthVerdict = { ok: true } | Refusal<401 | 403>;

const ACCEPTED: AuthVerdict = { ok: true };

/** RFC 9110 token characters: anything else could never arrive as a header name. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const UNIX_SECONDS = /^\d{1,12}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/i;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Equality that takes the same time wherever the inputs first differ. Both sides are hashed
 * first, so `timingSafeEqual` always sees two 32-byte buffers and an unequal length cannot
 * leak through an early return.
 */
export function constantTimeEqual(presented: string | Buffer, expected: string | Buffer): boolean {
	return timingSafeEqual(sha256(presented), sha256(expected));
}

/** The `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<rawBody>">` header value for a callback. */
export function signPayload(secret: string, rawBody: Buffer | string, timestampSec: number): string {
	if (!Number.isSafeInteger(timestampSec) || timestampSec < 0) {
		throw new RangeError(`timestampSec must be a non-negative whole number of seconds, got ${timestampSec}`);
	}
	return `t=${timestampSec},v1=${hmacDigest(secret, timestampSec, rawBody).toString('hex')}`;
}

/** Throws `RoundTripConfigError` for settings under which no callback could be authenticated safely. */
export function validateCallbackAuth(auth: CallbackAuth): void {
	switch (auth.scheme) {
		case 'hmac': {
			requireNonEmpty('secret', auth.secret);
			requireHeaderName('signatureHeader', auth.signatureHeader);
			const tolerance = auth.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
			if (!Number.isFinite(tolerance) || tolerance <= 0 || tolerance > MAX_TOLERANCE_SEC) {
				throw new RoundTripConfigError(
					'toleranceSec',
					`toleranceSec must be more than 0 and at most ${MAX_TOLERANCE_SEC} seconds, got ${tolerance}`,
				);
			}
			return;
		}
		case 'header':
			requireNonEmpty('token', auth.token);
			requireHeaderName('headerName', auth.headerName);
			return;
		case 'basic':
			requireNonEmpty('user', auth.user);
			requireNonEmpty('password', auth.password);
			if (auth.user.includes(':')) {
				// RFC 7617: the first colon separates user from password, so a user name cannot hold one.
				throw new RoundTripConfigError('user', 'user must not contain ":" (HTTP Basic cannot carry it)');
			}
			return;
	}
}

/** The lower-cased header that carries the credential, so it can be kept out of stored receipts. */
export function credentialHeaderName(auth: CallbackAuth): string {
	switch (auth.scheme) {
		case 'hmac':
			return (auth.signatureHeader ?? DEFAULT_SIGNATURE_HEADER).toLowerCase();
		case 'header':
			return (auth.headerName ?? DEFAULT_TOKEN_HEADER).toLowerCase();
		case 'basic':
			return 'authorization';
	}
}

/** Decides whether a callback proves knowledge of the configured credential. */
export function verifyCallback(auth: CallbackAuth, request: SignedRequest, nowMs: number): AuthVerdict {
	// Fail closed: a configuration that slipped past setup must not accept anything.
	validateCallbackAuth(auth);
	const header = readSingleHeader(request.headers, credentialHeaderName(auth));
	if (!header.ok) return header;
	switch (auth.scheme) {
		case 'hmac':
			return verifyHmac(auth, header, request.rawBody, nowMs);
		case 'header':
			return constantTimeEqual(header.value, auth.token)
				? ACCEPTED
				: forbidden(`${header.name} header does not match the configured token`);
		case 'basic':
			return verifyBasic(auth, header.value);
	}
}

function verifyHmac(auth: HmacAuth, header: FoundHeader, rawBody: Buffer | string, nowMs: number): AuthVerdict {
	const parsed = parseSignatureHeader(header.value);
	if (typeof parsed === 'string') return unauthorized(`malformed ${header.name} header: ${parsed}`);

	const expected = hmacDigest(auth.secret, parsed.timestampSec, rawBody);
	// Every candidate is compared (no early exit), so timing does not reveal which entry matched.
	let matched = false;
	for (const candidate of parsed.signatures) {
		matched = constantTimeEqual(Buffer.from(candidate, 'hex'), expected) || matched;
	}
	if (!matched) return forbidden(`${header.name} signature does not match the body and timestamp`);

	// Checked after the signature so only a genuine (replayed or delayed) callback learns about the window.
	const toleranceSec = auth.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
	const skewSec = Math.floor(nowMs / 1000) - parsed.timestampSec;
	if (Math.abs(skewSec) > toleranceSec) {
		const direction = skewSec > 0 ? 'in the past' : 'in the future';
		const beyond = Math.abs(skewSec) - toleranceSec;
		return forbidden(
			`${header.name} timestamp is stale: ${Math.abs(skewSec)} s ${direction}, ${beyond} s outside the ${toleranceSec} s tolerance`,
		);
	}
	return ACCEPTED;
}

interface SignatureHeader {
	timestampSec: number;
	signatures: string[];
}

/** Parses `t=..,v1=..[,v1=..]`; returns what is wrong as a string. Unknown keys (e.g. v0) are ignored. */
function parseSignatureHeader(value: string): SignatureHeader | string {
	let timestampSec: number | undefined;
	const signatures: string[] = [];
	for (const element of value.split(',')) {
		const separator = element.indexOf('=');
		if (separator <= 0) return 'expected comma-separated key=value pairs like t=<unix seconds>,v1=<hex>';
		const key = element.slice(0, separator).trim();
		const entry = element.slice(separator + 1).trim();
		if (key === 't') {
			if (timestampSec !== undefined) return 't= appears more than once';
			if (!UNIX_SECONDS.test(entry)) return 't= must be a Unix time in whole seconds';
			timestampSec = Number(entry);
		} else if (key === 'v1') {
			if (!SHA256_HEX.test(entry)) return 'v1= must be a 64-character hex HMAC-SHA256 digest';
			signatures.push(entry);
		}
	}
	if (timestampSec === undefined) return 'no t= timestamp';
	if (signatures.length === 0) return 'no v1= signature';
	return { timestampSec, signatures };
}

function verifyBasic(auth: BasicAuth, authorization: string): AuthVerdict {
	const match = /^basic\s+(\S+)\s*$/i.exec(authorization);
	if (!match || !BASE64.test(match[1])) return unauthorized('malformed authorization header: expected "Basic <base64 user:password>"');
	const decoded = Buffer.from(match[1], 'base64').toString('utf8');
	const separator = decoded.indexOf(':');
	if (separator < 0) return unauthorized('malformed authorization header: credentials have no ":" between user and password');
	// Both halves are always compared so timing does not reveal whether the user name was right.
	const userMatches = constantTimeEqual(decoded.slice(0, separator), auth.user);
	const passwordMatches = constantTimeEqual(decoded.slice(separator + 1), auth.password);
	return userMatches && passwordMatches ? ACCEPTED : forbidden('basic credentials do not match');
}

type FoundHeader = { ok: true; name: string; value: string };

/**
 * Finds one header by case-insensitive name. Several values (an array, or keys differing only in
 * case) are refused: which one was "the" credential would be ambiguous.
 */
function readSingleHeader(headers: CallbackHeaders, name: string): FoundHeader | Refusal<401> {
	const values: string[] = [];
	for (const [key, value] of Object.entries(headers)) {
		if (key.toLowerCase() !== name || value === undefined) continue;
		values.push(...(Array.isArray(value) ? value : [value]));
	}
	if (values.length > 1) return unauthorized(`multiple ${name} headers; send exactly one`);
	const value = values[0]?.trim();
	if (!value) return unauthorized(`missing ${name} header`);
	return { ok: true, name, value };
}

/** HMAC-SHA256 over `<timestamp>.` followed by the raw body bytes (no re-encoding of a Buffer body). */
function hmacDigest(secret: string, timestampSec: number, rawBody: Buffer | string): Buffer {
	return createHmac('sha256', secret).update(`${timestampSec}.`).update(rawBody).digest();
}

function sha256(value: string | Buffer): Buffer {
	return createHash('sha256').update(value).digest();
}

function requireNonEmpty(field: string, value: string): void {
	if (typeof value !== 'string' || value.length === 0) {
		throw new RoundTripConfigError(field, `${field} must not be empty: an empty credential authenticates anyone`);
	}
}

function requireHeaderName(field: string, headerName: string | undefined): void {
	if (headerName !== undefined && !HEADER_NAME.test(headerName)) {
		throw new RoundTripConfigError(field, `${field} ${JSON.stringify(headerName)} is not a valid HTTP header name`);
	}
}

function unauthorized(reason: string): Refusal<401> {
	return { ok: false, status: 401, reason };
}

function forbidden(reason: string): Refusal<403> {
	return { ok: false, status: 403, reason };
}
