import { hmacSha256, sha256 } from '../roundtrip/signature';

/**
 * AWS Signature Version 4 for S3, header-based (AmazonS3/latest/API/sig-v4-header-based-auth.html),
 * in node:crypto: no AWS package. The caller sends exactly the URL it signed: core/connectors/s3.ts builds it with the
 * path and query percent-encoded as SigV4 canonicalises them, so no HTTP client re-encodes it differently.
 */

/** SHA-256 of an empty payload: what GET, HEAD, DELETE and CopyObject sign as `x-amz-content-sha256`. */
export const EMPTY_PAYLOAD_SHA256 = sha256('').toString('hex');

export interface S3Credentials {
	accessKeyId: string;
	secretAccessKey: string;
	/** Temporary credentials' token, sent (and signed) as `x-amz-security-token`. */
	sessionToken?: string;
}

export interface S3SigningRequest {
	method: string;
	/** The request's host as sent: `bucket.s3.amazonaws.com`, `127.0.0.1:9000` (a non-default port included). */
	host: string;
	/** The decoded path: `/bucket/key` path-style, `/key` virtual-hosted. */
	path: string;
	query?: Record<string, string>;
	/** Headers to sign and send besides the ones added here (e.g. `range`, `x-amz-copy-source`). */
	headers?: Record<string, string>;
	payloadSha256?: string;
	credentials: S3Credentials;
	region: string;
	/** Milliseconds since the epoch: `x-amz-date` and the signing day. */
	now: number;
}

/**
 * RFC 3986 encoding as SigV4 wants it: only `A-Z a-z 0-9 - . _ ~` kept, everything else `%XX` of its
 * UTF-8 bytes (encodeURIComponent leaves `! ' ( ) *` raw: they are encoded too); `/` kept in paths.
 */
export function uriEncode(text: string, keepSlash = false): string {
	const encoded = encodeURIComponent(text).replace(
		/[!'()*]/g,
		(char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
	);
	return keepSlash ? encoded.replace(/%2F/g, '/') : encoded;
}

/** The query string as SigV4 canonicalises it, and as it is sent: encoded names and values, sorted. */
export function canonicalQuery(query: Record<string, string>): string {
	return Object.entries(query)
		.map(([name, value]) => [uriEncode(name), uriEncode(value)])
		.sort(([a, x], [b, y]) => compare(a, b) || compare(x, y))
		.map(([name, value]) => `${name}=${value}`)
		.join('&');
}

/**
 * The headers to send with the request: the caller's, `x-amz-date`, `x-amz-content-sha256`,
 * `x-amz-security-token` when there is a session token, and `authorization`. Every header is signed;
 * `host` is signed but not returned (the HTTP client sets it from the URL).
 */
export function signS3Request(request: S3SigningRequest): Record<string, string> {
	const amzDate = new Date(request.now).toISOString().replace(/[-:]|\.\d{3}/g, '');
	const day = amzDate.slice(0, 8);
	const payloadSha256 = request.payloadSha256 ?? EMPTY_PAYLOAD_SHA256;
	const headers: Record<string, string> = {};
	for (const [name, value] of Object.entries(request.headers ?? {}))
		headers[name.toLowerCase()] = value;
	headers['x-amz-content-sha256'] = payloadSha256;
	headers['x-amz-date'] = amzDate;
	if (request.credentials.sessionToken)
		headers['x-amz-security-token'] = request.credentials.sessionToken;
	const signed: Record<string, string> = { ...headers, host: request.host };
	const names = Object.keys(signed).sort(compare);
	const canonicalRequest = [
		request.method,
		uriEncode(request.path, true),
		canonicalQuery(request.query ?? {}),
		names.map((name) => `${name}:${signed[name].trim().replace(/\s+/g, ' ')}\n`).join(''),
		names.join(';'),
		payloadSha256,
	].join('\n');
	const scope = `${day}/${request.region}/s3/aws4_request`;
	const stringToSign = [
		'AWS4-HMAC-SHA256',
		amzDate,
		scope,
		sha256(canonicalRequest).toString('hex'),
	].join('\n');
	let key = hmacSha256(`AWS4${request.credentials.secretAccessKey}`, day);
	for (const part of [request.region, 's3', 'aws4_request']) key = hmacSha256(key, part);
	const signature = hmacSha256(key, stringToSign).toString('hex');
	headers.authorization = `AWS4-HMAC-SHA256 Credential=${request.credentials.accessKeyId}/${scope},SignedHeaders=${names.join(';')},Signature=${signature}`;
	return headers;
}

/** Code-unit order, as SigV4 sorts (the names and values are ASCII once encoded). */
function compare(a: string, b: string): number {
	return a < b ? -1 : a > b ? 1 : 0;
}
