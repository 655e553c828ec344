import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

import { ConfigError } from '../configError';

/**
 * Authentication of the inbound resume callback. Every comparison of a presented credential
 * with the configured one runs in constant time, and no refusal reason ever carries a secret.
 *
 * The HMAC scheme signs this wait's id (the `rtw` query parameter of its callback URL), so a
 * callback captured from another wait, of this execution or another, does not verify on this one.
 * Timestamps have a tolerance (clock skew) around now and around the wait's start, so time alone
 * binds a callback to no wait; see checkTimestamp.
 */

export const DEFAULT_SIGNATURE_HEADER = 'x-signature';
export const DEFAULT_TOKEN_HEADER = 'x-callback-token';
export const DEFAULT_TOLERANCE_SEC = 300;
/** Standard Webhooks (https://www.standardwebhooks.com): fixed header names and a `whsec_` secret. */
export const STANDARD_WEBHOOK_HEADERS = {
	id: 'webhook-id',
	timestamp: 'webhook-timestamp',
	signature: 'webhook-signature',
} as const;
const STANDARD_SECRET_PREFIX = 'whsec_';
const MAX_WEBHOOK_ID_LENGTH = 256;
/** The query parameter of the callback URL that carries the wait id. */
export const WAIT_ID_PARAM = 'rtw';
/** A wider window makes a captured callback replayable for longer than any clock skew needs. */
export const MAX_TOLERANCE_SEC = 86_400;

/** Field names match the roundTripCallbackApi credential, so its data maps straight across. */
export type CallbackAuth = HmacAuth | StandardWebhooksAuth | TokenAuth | BasicAuth;
export type HmacAuth = {
	scheme: 'hmac';
	secret: string;
	signatureHeader?: string;
	toleranceSec?: number;
};
export type StandardWebhooksAuth = {
	scheme: 'standardWebhooks';
	secret: string;
	toleranceSec?: number;
};
export type TokenAuth = { scheme: 'header'; token: string; headerName?: string };
export type BasicAuth = { scheme: 'basic'; user: string; password: string };

/** Node's IncomingHttpHeaders shape: repeated headers may arrive as arrays. */
export type CallbackHeaders = Record<string, string | string[] | undefined>;

export interface SignedRequest {
	headers: CallbackHeaders;
	/** The body exactly as received; HMAC is computed over these bytes, never a re-serialisation. */
	rawBody: Buffer | string;
}

/** What identifies the wait a callback must answer. */
export interface WaitBinding {
	/** The per-wait id carried in the callback URL (`rtw`); empty in Wait Only mode, where n8n's plain resume URL was sent. */
	waitId: string;
	/** When the wait began (epoch ms): a callback signed more than the tolerance before it answers something else. */
	startedAtMs: number;
	/** Set at the Round-Trip Callback's fixed URL, which names no wait: its refusals say what is signed there. */
	fixedUrl?: boolean;
}

export type Refusal<Status extends number> = { ok: false; status: Status; reason: string };
/**
 * 401: credentials missing or unreadable. 403: credentials present but wrong or stale.
 * An accepted signed callback names what makes it unique (`replayKey`) and until when a copy of it
 * could still pass the timestamp checks (`replayUntilMs`), so a replay memory can refuse the copy.
 */
export type AuthVerdict =
	| { ok: true; replayKey?: string; replayUntilMs?: number }
	| Refusal<401 | 403>;

const ACCEPTED: AuthVerdict = { ok: true };

/** RFC 9110 token characters: anything else could never arrive as a header name. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const UNIX_SECONDS = /^\d{1,12}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/i;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Standard Webhooks recommends secrets of 24 to 64 bytes. */
const STANDARD_SECRET_BYTES = { min: 24, max: 64 };

/**
 * Equality that takes the same time wherever the inputs first differ. Both sides are hashed
 * first, so `timingSafeEqual` always sees two 32-byte buffers and an unequal length cannot
 * leak through an early return.
 */
export function constantTimeEqual(presented: string | Buffer, expected: string | Buffer): boolean {
	return timingSafeEqual(sha256(presented), sha256(expected));
}

/**
 * The `t=<unix seconds>,v2=<hex HMAC-SHA256 of "<t>.<waitId>.<rawBody>">` header value for a callback.
 * `waitId` is the `rtw` query parameter of the callback URL (empty when the URL has none).
 */
export function signPayload(
	secret: string,
	rawBody: Buffer | string,
	timestampSec: number,
	waitId = '',
): string {
	requireTimestamp(timestampSec);
	return `t=${timestampSec},v2=${hmacDigest(secret, timestampSec, waitId, rawBody).toString('hex')}`;
}

/** The wait id a callback URL carries (its `rtw` query parameter), or '' when it has none. */
export function waitIdOf(callbackUrl: string): string {
	return new URL(callbackUrl).searchParams.get(WAIT_ID_PARAM) ?? '';
}

/** Standard Webhooks headers for a callback: `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<t>.<body>">`. */
export function signStandardWebhook(
	secret: string,
	messageId: string,
	timestampSec: number,
	rawBody: Buffer | string,
): Record<string, string> {
	requireTimestamp(timestampSec);
	const key = standardSecretKey(secret);
	if (key === undefined) throw new RangeError('secret must be whsec_<base64 of 24 to 64 bytes>');
	const signature = standardDigest(key, messageId, timestampSec, rawBody).toString('base64');
	return {
		[STANDARD_WEBHOOK_HEADERS.id]: messageId,
		[STANDARD_WEBHOOK_HEADERS.timestamp]: String(timestampSec),
		[STANDARD_WEBHOOK_HEADERS.signature]: `v1,${signature}`,
	};
}

/**
 * The headers that authenticate a callback to `waitId` under `auth`, as a partner would send them:
 * the node signs its own failure notice this way, so the notice passes the callback's checks.
 * `messageId` is the Standard Webhooks `webhook-id` (unused by the other schemes).
 */
export function callbackHeaders(
	auth: CallbackAuth,
	waitId: string,
	rawBody: Buffer | string,
	timestampSec: number,
	messageId: string,
): Record<string, string> {
	switch (auth.scheme) {
		case 'hmac':
			return {
				[credentialHeaderName(auth)]: signPayload(auth.secret, rawBody, timestampSec, waitId),
			};
		case 'standardWebhooks':
			return signStandardWebhook(auth.secret, messageId, timestampSec, rawBody);
		case 'header':
			return { [credentialHeaderName(auth)]: auth.token };
		case 'basic':
			return {
				authorization: `Basic ${Buffer.from(`${auth.user}:${auth.password}`).toString('base64')}`,
			};
	}
}

function requireTimestamp(timestampSec: number): void {
	if (!Number.isSafeInteger(timestampSec) || timestampSec < 0) {
		throw new RangeError(
			`timestampSec must be a non-negative whole number of seconds, got ${timestampSec}`,
		);
	}
}

/** Throws a ConfigError naming the credential's field, for settings under which no callback could be authenticated safely. */
export function validateCallbackAuth(auth: CallbackAuth): void {
	switch (auth.scheme) {
		case 'hmac': {
			requireNonEmpty('secret', auth.secret);
			requireHeaderName('signatureHeader', auth.signatureHeader);
			requireTolerance(auth.toleranceSec);
			return;
		}
		case 'standardWebhooks':
			requireNonEmpty('secret', auth.secret);
			if (standardSecretKey(auth.secret) === undefined) {
				throw credentialError(
					'secret',
					auth.secret,
					`must be a Standard Webhooks secret: "${STANDARD_SECRET_PREFIX}" followed by the base64 of ${STANDARD_SECRET_BYTES.min} to ${STANDARD_SECRET_BYTES.max} random bytes`,
					{ secret: true },
				);
			}
			requireTolerance(auth.toleranceSec);
			return;
		case 'header':
			requireNonEmpty('token', auth.token);
			requireHeaderName('headerName', auth.headerName);
			return;
		case 'basic':
			requireNonEmpty('user', auth.user);
			requireNonEmpty('password', auth.password);
			if (auth.user.includes(':')) {
				// RFC 7617: the first colon separates user from password, so a user name cannot hold one.
				throw credentialError(
					'user',
					auth.user,
					'must not contain ":" (HTTP Basic cannot carry it)',
				);
			}
			return;
	}
}

/** The lower-cased header that carries the credential, so it can be kept out of stored receipts. */
export function credentialHeaderName(auth: CallbackAuth): string {
	switch (auth.scheme) {
		case 'hmac':
			return (auth.signatureHeader ?? DEFAULT_SIGNATURE_HEADER).toLowerCase();
		case 'standardWebhooks':
			return STANDARD_WEBHOOK_HEADERS.signature;
		case 'header':
			return (auth.headerName ?? DEFAULT_TOKEN_HEADER).toLowerCase();
		case 'basic':
			return 'authorization';
	}
}

/** Decides whether a callback proves knowledge of the configured credential, for this wait. */
export function verifyCallback(
	auth: CallbackAuth,
	request: SignedRequest,
	nowMs: number,
	wait: WaitBinding,
): AuthVerdict {
	// Fail closed: a configuration that slipped past setup must not accept anything.
	validateCallbackAuth(auth);
	const header = readSingleHeader(request.headers, credentialHeaderName(auth));
	if (!header.ok) return header;
	switch (auth.scheme) {
		case 'hmac':
			return verifyHmac(auth, header, request.rawBody, nowMs, wait);
		case 'standardWebhooks':
			return verifyStandardWebhook(auth, header, request, nowMs, wait);
		case 'header':
			return constantTimeEqual(header.value, auth.token)
				? ACCEPTED
				: forbidden(`${header.name} header does not match the configured token`);
		case 'basic':
			return verifyBasic(auth, header.value);
	}
}

function verifyHmac(
	auth: HmacAuth,
	header: FoundHeader,
	rawBody: Buffer | string,
	nowMs: number,
	wait: WaitBinding,
): AuthVerdict {
	const parsed = parseSignatureHeader(header.value);
	if (typeof parsed === 'string') return unauthorized(`malformed ${header.name} header: ${parsed}`);

	// Signed over this wait's id, whatever the URL says: a signature made for another wait cannot match.
	const expected = hmacDigest(auth.secret, parsed.timestampSec, wait.waitId, rawBody);
	// Every candidate is compared (no early exit), so timing does not reveal which entry matched.
	let matched = false;
	for (const candidate of parsed.signatures) {
		matched = constantTimeEqual(Buffer.from(candidate, 'hex'), expected) || matched;
	}
	if (!matched)
		return forbidden(
			wait.fixedUrl
				? `${header.name} signature does not match the body and timestamp (at the fixed URL it is signed over "<t>..<body>", with no wait id)`
				: `${header.name} signature does not match the body, timestamp and this wait's id`,
		);

	// Checked after the signature so only a genuine (replayed or delayed) callback learns about the window.
	const stale = checkTimestamp(header.name, parsed.timestampSec, auth.toleranceSec, nowMs, wait);
	if (stale) return stale;
	return accepted(
		`hmac:${parsed.timestampSec}:${expected.toString('hex')}`,
		parsed.timestampSec,
		auth.toleranceSec,
	);
}

function verifyStandardWebhook(
	auth: StandardWebhooksAuth,
	signatureHeader: FoundHeader,
	request: SignedRequest,
	nowMs: number,
	wait: WaitBinding,
): AuthVerdict {
	const id = readSingleHeader(request.headers, STANDARD_WEBHOOK_HEADERS.id);
	if (!id.ok) return id;
	if (id.value.length > MAX_WEBHOOK_ID_LENGTH)
		return unauthorized(
			`malformed ${id.name} header: longer than ${MAX_WEBHOOK_ID_LENGTH} characters`,
		);
	const timestamp = readSingleHeader(request.headers, STANDARD_WEBHOOK_HEADERS.timestamp);
	if (!timestamp.ok) return timestamp;
	if (!UNIX_SECONDS.test(timestamp.value))
		return unauthorized(`malformed ${timestamp.name} header: must be a Unix time in whole seconds`);
	const timestampSec = Number(timestamp.value);

	const signatures: Buffer[] = [];
	for (const entry of signatureHeader.value.split(' ')) {
		if (entry === '') continue;
		const comma = entry.indexOf(',');
		if (comma <= 0)
			return unauthorized(
				`malformed ${signatureHeader.name} header: expected space-separated entries like v1,<base64>`,
			);
		// Other versions (v1a: asymmetric) are not ours to check; skipped, as the standard says.
		if (entry.slice(0, comma) !== 'v1') continue;
		const value = entry.slice(comma + 1);
		if (!BASE64.test(value))
			return unauthorized(`malformed ${signatureHeader.name} header: v1 signature is not base64`);
		signatures.push(Buffer.from(value, 'base64'));
	}
	if (signatures.length === 0)
		return unauthorized(`malformed ${signatureHeader.name} header: no v1,<base64> signature`);

	const expected = standardDigest(
		standardSecretKey(auth.secret)!,
		id.value,
		timestampSec,
		request.rawBody,
	);
	let matched = false;
	for (const candidate of signatures) matched = constantTimeEqual(candidate, expected) || matched;
	if (!matched)
		return forbidden(`${signatureHeader.name} does not match the webhook-id, timestamp and body`);

	const stale = checkTimestamp(timestamp.name, timestampSec, auth.toleranceSec, nowMs, wait);
	if (stale) return stale;
	return accepted(`sw:${id.value}`, timestampSec, auth.toleranceSec);
}

/**
 * A genuine signature is still refused when its timestamp is outside the tolerance of now, or more
 * than the tolerance before this wait began. The tolerance is there for clock skew: a partner whose
 * clock runs behind n8n's signs a callback sent at once with a second earlier than the wait's start,
 * so the start gets the same slack as now. (Now is never before the start on one clock, so the second
 * check bites only when the process judging the callback runs behind the one that began the wait.)
 * What binds a callback to its wait is therefore not its time: HMAC v2 signs the wait id (none in Wait
 * Only mode: there the correlation id is read from the signed body only, see judgeCallback); Standard
 * Webhooks signs the body with its correlation id, and the replay memory holds its webhook-id (docs/round-trip-wait.md).
 */
function checkTimestamp(
	headerName: string,
	timestampSec: number,
	toleranceSec = DEFAULT_TOLERANCE_SEC,
	nowMs: number,
	wait: WaitBinding,
): Refusal<403> | undefined {
	const skewSec = Math.floor(nowMs / 1000) - timestampSec;
	if (Math.abs(skewSec) > toleranceSec) {
		const direction = skewSec > 0 ? 'in the past' : 'in the future';
		const beyond = Math.abs(skewSec) - toleranceSec;
		return forbidden(
			`${headerName} timestamp is stale: ${Math.abs(skewSec)} s ${direction}, ${beyond} s outside the ${toleranceSec} s tolerance`,
		);
	}
	const beforeStartSec = Math.floor(wait.startedAtMs / 1000) - timestampSec;
	if (beforeStartSec > toleranceSec) {
		return forbidden(
			`${headerName} timestamp is ${beforeStartSec} s before this wait began, more than the ${toleranceSec} s tolerance: the callback was signed for something else`,
		);
	}
	return undefined;
}

function accepted(
	replayKey: string,
	timestampSec: number,
	toleranceSec = DEFAULT_TOLERANCE_SEC,
): AuthVerdict {
	// A copy stays acceptable by timestamp until t + tolerance (the next second included).
	return { ok: true, replayKey, replayUntilMs: (timestampSec + toleranceSec + 1) * 1000 };
}

interface SignatureHeader {
	timestampSec: number;
	signatures: string[];
}

/** Parses `t=..,v2=..[,v2=..]`; returns what is wrong as a string. Unknown keys (e.g. v0) are ignored. */
function parseSignatureHeader(value: string): SignatureHeader | string {
	let timestampSec: number | undefined;
	const signatures: string[] = [];
	let legacy = false;
	for (const element of value.split(',')) {
		const separator = element.indexOf('=');
		if (separator <= 0)
			return 'expected comma-separated key=value pairs like t=<unix seconds>,v2=<hex>';
		const key = element.slice(0, separator).trim();
		const entry = element.slice(separator + 1).trim();
		if (key === 't') {
			if (timestampSec !== undefined) return 't= appears more than once';
			if (!UNIX_SECONDS.test(entry)) return 't= must be a Unix time in whole seconds';
			timestampSec = Number(entry);
		} else if (key === 'v2') {
			if (!SHA256_HEX.test(entry)) return 'v2= must be a 64-character hex HMAC-SHA256 digest';
			signatures.push(entry);
		} else if (key === 'v1') {
			legacy = true;
		}
	}
	if (timestampSec === undefined) return 'no t= timestamp';
	if (signatures.length === 0) {
		return legacy
			? 'v1= signatures ("<t>.<body>") are no longer accepted because they do not name the wait; send v2= (HMAC-SHA256 of "<t>.<rtw from the callback URL>.<body>")'
			: 'no v2= signature';
	}
	return { timestampSec, signatures };
}

function verifyBasic(auth: BasicAuth, authorization: string): AuthVerdict {
	const match = /^basic\s+(\S+)\s*$/i.exec(authorization);
	if (!match || !BASE64.test(match[1]))
		return unauthorized('malformed authorization header: expected "Basic <base64 user:password>"');
	const decoded = Buffer.from(match[1], 'base64').toString('utf8');
	const separator = decoded.indexOf(':');
	if (separator < 0)
		return unauthorized(
			'malformed authorization header: credentials have no ":" between user and password',
		);
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

/** HMAC-SHA256 over `<timestamp>.<waitId>.` followed by the raw body bytes (no re-encoding of a Buffer body). */
function hmacDigest(
	secret: string,
	timestampSec: number,
	waitId: string,
	rawBody: Buffer | string,
): Buffer {
	return hmacSha256(secret, `${timestampSec}.${waitId}.`, rawBody);
}

/** Standard Webhooks: HMAC-SHA256 over `<id>.<timestamp>.<body>` with the secret's decoded bytes as key. */
function standardDigest(
	key: Buffer,
	messageId: string,
	timestampSec: number,
	rawBody: Buffer | string,
): Buffer {
	return hmacSha256(key, `${messageId}.${timestampSec}.`, rawBody);
}

/** The one keyed hash of this module (and of the Round-Trip core). */
export function hmacSha256(
	key: string | Buffer,
	prefix: string,
	rest: Buffer | string = '',
): Buffer {
	return createHmac('sha256', key).update(prefix).update(rest).digest();
}

/** The key bytes of a `whsec_<base64>` secret, or undefined when it is not one. */
function standardSecretKey(secret: string): Buffer | undefined {
	if (!secret.startsWith(STANDARD_SECRET_PREFIX)) return undefined;
	const encoded = secret.slice(STANDARD_SECRET_PREFIX.length);
	if (!BASE64.test(encoded)) return undefined;
	const key = Buffer.from(encoded, 'base64');
	return key.length >= STANDARD_SECRET_BYTES.min && key.length <= STANDARD_SECRET_BYTES.max
		? key
		: undefined;
}

function requireTolerance(toleranceSec: number | undefined): void {
	const tolerance = toleranceSec ?? DEFAULT_TOLERANCE_SEC;
	if (!Number.isFinite(tolerance) || tolerance <= 0 || tolerance > MAX_TOLERANCE_SEC) {
		throw credentialError(
			'toleranceSec',
			tolerance,
			`must be more than 0 and at most ${MAX_TOLERANCE_SEC} seconds`,
		);
	}
}

/** The one plain hash of this module (and of the S3 signer, core/connectors/s3Signature.ts). */
export function sha256(value: string | Buffer): Buffer {
	return createHash('sha256').update(value).digest();
}

/** The credential type whose fields CallbackAuth's are (credentials/RoundTripCallbackApi.credentials.ts). */
const CALLBACK_CREDENTIAL = 'roundTripCallbackApi';

function credentialError(
	field: string,
	value: unknown,
	problem: string,
	options: { secret?: boolean } = {},
): ConfigError {
	return new ConfigError(field, value, problem, {
		...options,
		credential: CALLBACK_CREDENTIAL,
	});
}

/** A secret, token, user or password; the value is shown only as empty. */
function requireNonEmpty(field: 'secret' | 'token' | 'user' | 'password', value: string): void {
	if (typeof value !== 'string' || value.length === 0) {
		throw credentialError(
			field,
			value,
			`must not be empty: an empty ${field} authenticates anyone`,
			{ secret: true },
		);
	}
}

function requireHeaderName(field: string, headerName: string | undefined): void {
	if (headerName !== undefined && !HEADER_NAME.test(headerName)) {
		throw credentialError(field, headerName, 'not a valid HTTP header name');
	}
}

function unauthorized(reason: string): Refusal<401> {
	return { ok: false, status: 401, reason };
}

function forbidden(reason: string): Refusal<403> {
	return { ok: false, status: 403, reason };
}
