// SigV4 for S3 in plain node:crypto: the shape core/connectors/s3Signature.ts would take (issue 40).
// `node sigv4.mjs` checks it against AWS's published S3 examples (AmazonS3/latest/API/sig-v4-header-based-auth.html).
import { createHash, createHmac } from 'node:crypto';

const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const hmac = (key, data) => createHmac('sha256', key).update(data).digest();
export const EMPTY_SHA256 = sha256('');

/** RFC 3986 encoding as SigV4 wants it: unreserved characters kept, '/' kept only in paths. */
export function uriEncode(text, keepSlash) {
	return encodeURIComponent(text)
		.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
		.replace(keepSlash ? /%2F/g : /$^/, '/');
}

/**
 * Headers to send for one S3 request: `authorization`, `x-amz-date`, `x-amz-content-sha256`
 * (+ `x-amz-security-token`). `path` is the decoded path (`/bucket/key` path-style, `/key` virtual-host).
 */
export function signS3({
	method,
	host,
	path,
	query = {},
	headers = {},
	payloadHash = EMPTY_SHA256,
	credentials,
	region,
	now = new Date(),
}) {
	const amzDate = now
		.toISOString()
		.replace(/[-:]/g, '')
		.replace(/\.\d{3}/, '');
	const day = amzDate.slice(0, 8);
	const all = {
		...lower(headers),
		host,
		'x-amz-content-sha256': payloadHash,
		'x-amz-date': amzDate,
	};
	if (credentials.sessionToken) all['x-amz-security-token'] = credentials.sessionToken;
	const names = Object.keys(all).sort();
	const canonicalQuery = Object.entries(query)
		.map(([k, v]) => [uriEncode(k), uriEncode(String(v))])
		.sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
		.map(([k, v]) => `${k}=${v}`)
		.join('&');
	const canonical = [
		method,
		uriEncode(path, true),
		canonicalQuery,
		names.map((n) => `${n}:${String(all[n]).trim().replace(/\s+/g, ' ')}\n`).join(''),
		names.join(';'),
		payloadHash,
	].join('\n');
	const scope = `${day}/${region}/s3/aws4_request`;
	const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
	let key = hmac(`AWS4${credentials.secretAccessKey}`, day);
	for (const part of [region, 's3', 'aws4_request']) key = hmac(key, part);
	const signature = createHmac('sha256', key).update(toSign).digest('hex');
	delete all.host; // the HTTP client sets it
	return {
		...all,
		authorization: `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope},SignedHeaders=${names.join(';')},Signature=${signature}`,
	};
}

const lower = (h) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));

if (import.meta.url === `file://${process.argv[1]}`) {
	const credentials = {
		accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
		secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
	};
	const at = {
		host: 'examplebucket.s3.amazonaws.com',
		credentials,
		region: 'us-east-1',
		now: new Date('2013-05-24T00:00:00Z'),
	};
	const cases = [
		[
			'GET Object',
			signS3({ ...at, method: 'GET', path: '/test.txt', headers: { Range: 'bytes=0-9' } }),
			'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
		],
		[
			'GET Bucket (list)',
			signS3({ ...at, method: 'GET', path: '/', query: { 'max-keys': 2, prefix: 'J' } }),
			'34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7',
		],
	];
	for (const [name, headers, expected] of cases) {
		const ok = headers.authorization.endsWith(`Signature=${expected}`);
		console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}`);
		if (!ok) process.exitCode = 1;
	}
}
