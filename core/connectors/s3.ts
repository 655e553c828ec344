import { systemClock } from '../clock';
import { parseRetryAfter, snippet } from './http';
import {
	compareKeys,
	deleteArgs,
	downloadArgs,
	type ListArgs,
	listArgs,
	listedItems,
	listStart,
	type ListedObject,
	rememberedZone,
	rewindListing,
	moveArgs,
	nextStart,
	parseError,
	parseListPage,
	positionMemory,
	toS3File,
	unquote,
} from './s3Objects';
import { canonicalQuery, signS3Request, uriEncode } from './s3Signature';
import { baseName, joinPath } from './remoteFiles';
import {
	ConnectorError,
	type ConnectorOp,
	type HttpResponse,
	type OpContext,
	type S3Connection,
} from './types';

/**
 * The S3 ops: `s3.list` (ListObjectsV2, every page), `s3.download`, `s3.move` (copy, then delete) and
 * `s3.delete`, for AWS S3 and S3-compatible stores. Each request goes through the core's HTTP transport
 * (n8n's helpers in the nodes), signed here with SigV4 (s3Signature.ts). The listing's semantics and the
 * XML reading are in s3Objects.ts.
 */

/** ListObjectsV2's largest page. */
const PAGE_SIZE = 1000;

const list: ConnectorOp<'s3'> = {
	name: 's3.list',
	description:
		'Objects of a bucket under a prefix (optionally by name pattern), in key order; with "afterLastKey", only those after the last key listed',
	transport: 's3',
	previewsWithMemory: true,
	check: (args) => listArgs(args),
	rewind: rewindListing,
	async run(args, context) {
		const parsed = listArgs(args);
		const startedAfter = listStart(parsed, context.memory);
		const zone = rememberedZone(parsed, context.memory);
		const listing = await listObjects(context, parsed, startedAfter);
		const nextStartAfter = parsed.afterLastKey
			? nextStart(listing.objects, startedAfter, listing.storeNow, parsed.lagMs)
			: null;
		const listed = listedItems(listing.objects, startedAfter, parsed.pattern, zone);
		const files = listed.map(({ object }) => toS3File(object));
		const positions = new Map<unknown, string>(files.map((file, i) => [file, listed[i].position]));
		// The zone stays until a listing goes past its end.
		const zoneLeft = (after: string) =>
			zone && compareKeys(after, zone.to) < 0 ? zone : undefined;
		const lastKey = listing.objects.at(-1)?.key;
		return {
			kind: 'data',
			data: {
				bucket: parsed.bucket,
				prefix: parsed.prefix,
				files,
				startedAfter,
				nextStartAfter,
				requests: listing.requests,
				truncated: listing.truncated,
			},
			memory:
				nextStartAfter === null
					? undefined
					: positionMemory(parsed, nextStartAfter, zoneLeft(nextStartAfter)),
			...(parsed.afterLastKey && { positionOf: (item: unknown) => positions.get(item) }),
			...(listing.truncated &&
				lastKey !== undefined && {
					more: positionMemory(parsed, lastKey, zoneLeft(lastKey)),
				}),
		};
	},
};

const download: ConnectorOp<'s3'> = {
	name: 's3.download',
	description: 'Reads an object as binary data (at most "maxBytes", 10 MiB unless set)',
	transport: 's3',
	givesFile: true,
	check: (args) => downloadArgs(args),
	async run(args, context) {
		const { bucket, key, maxBytes } = downloadArgs(args);
		const what = `GetObject of ${objectName(bucket, key)}`;
		// Asks for one byte more than the limit, so an object over it is told by its size, not read whole.
		const response = await s3Request(context, {
			method: 'GET',
			bucket,
			key,
			headers: { range: `bytes=0-${maxBytes}` },
			bytes: true,
			what,
		});
		// The first byte of an empty object is out of range.
		const empty = response.status === 416;
		if (!empty) expectStatus(response, [200, 206], what);
		const data = empty ? Buffer.alloc(0) : (response.bytes ?? Buffer.from(response.body));
		const size = totalSize(response.headers['content-range']) ?? data.length;
		if (size > maxBytes)
			throw new ConnectorError(
				`S3 object ${objectName(bucket, key)} is ${size} bytes, over the download limit "maxBytes" of ${maxBytes}`,
			);
		const lastModified = response.headers['last-modified'];
		const etag = unquote(response.headers.etag ?? '');
		return {
			kind: 'data',
			data: {
				bucket,
				path: key,
				key,
				size,
				modifiedAt: lastModified ? new Date(lastModified).toISOString() : null,
				version: etag,
				etag,
			},
			file: { data, fileName: baseName(key) },
		};
	},
};

const move: ConnectorOp<'s3'> = {
	name: 's3.move',
	description:
		'Moves objects under another prefix (e.g. "processed/"), keeping their names: a copy, then a delete',
	transport: 's3',
	check: (args) => moveArgs(args),
	async run(args, context) {
		const { bucket, keys, toPrefix, toBucket } = moveArgs(args);
		const moved: Array<{ from: string; to: string }> = [];
		const missing: string[] = [];
		for (const from of keys) {
			const to = joinPath(toPrefix, baseName(from));
			// An object already moved (a retried step) is reported, not an error.
			if (!(await exists(context, bucket, from))) {
				missing.push(from);
				continue;
			}
			// CopyObject overwrites: an older object of that name is kept instead, and the item fails.
			if (await exists(context, toBucket, to))
				throw new ConnectorError(
					`S3 cannot move ${objectName(bucket, from)}: ${objectName(toBucket, to)} already exists`,
				);
			const what = `CopyObject of ${objectName(bucket, from)} to ${objectName(toBucket, to)}`;
			const copied = await s3Request(context, {
				method: 'PUT',
				bucket: toBucket,
				key: to,
				headers: { 'x-amz-copy-source': `/${bucket}/${uriEncode(from, true)}` },
				what,
			});
			expectStatus(copied, [200], what);
			// CopyObject can fail after answering 200: the error is then in the body.
			const failed = parseError(copied.body);
			if (failed) throw s3Failure(copied, what, failed);
			await deleteObject(context, bucket, from);
			moved.push({ from, to });
		}
		return { kind: 'data', data: { bucket, toBucket, moved, missing } };
	},
};

const remove: ConnectorOp<'s3'> = {
	name: 's3.delete',
	description: 'Deletes objects; objects already gone are reported, not an error',
	transport: 's3',
	check: (args) => deleteArgs(args),
	async run(args, context) {
		const { bucket, keys } = deleteArgs(args);
		const deleted: string[] = [];
		const missing: string[] = [];
		for (const key of keys) {
			// S3 answers 204 to deleting a missing key too: a HEAD first tells them apart.
			if (!(await exists(context, bucket, key))) {
				missing.push(key);
				continue;
			}
			await deleteObject(context, bucket, key);
			deleted.push(key);
		}
		return { kind: 'data', data: { bucket, deleted, missing } };
	},
};

export const s3Ops: Array<ConnectorOp<'s3'>> = [list, download, move, remove];

interface Listing {
	/** Every object listed, matching or not, in key order. */
	objects: ListedObject[];
	requests: number;
	/** `maxObjects` were listed and more remain (afterLastKey: the next call goes on). */
	truncated: boolean;
	/** The store's clock at the last answer (its `Date` header), for the lag. */
	storeNow: number;
}

/**
 * Every page of ListObjectsV2 under the prefix after `startAfter`, up to `maxObjects` objects: with
 * `afterLastKey` the rest is for the next call; without, more is a failure, since every call would
 * list the same first objects.
 */
async function listObjects(
	context: OpContext,
	args: ListArgs,
	startAfter: string,
): Promise<Listing> {
	const objects: ListedObject[] = [];
	const what = `ListObjectsV2 of bucket "${args.bucket}"${args.prefix ? ` under prefix "${args.prefix}"` : ''}`;
	let token: string | undefined;
	let requests = 0;
	let storeNow = (context.clock ?? systemClock).now();
	do {
		const query: Record<string, string> = {
			'list-type': '2',
			'max-keys': String(Math.min(PAGE_SIZE, args.maxObjects - objects.length)),
		};
		if (args.prefix) query.prefix = args.prefix;
		// S3 ignores start-after once a continuation token is sent: the first page only.
		if (token !== undefined) query['continuation-token'] = token;
		else if (startAfter) query['start-after'] = startAfter;
		const response = await s3Request(context, {
			method: 'GET',
			bucket: args.bucket,
			query,
			what,
		});
		requests++;
		expectStatus(response, [200], what);
		const date = Date.parse(response.headers.date ?? '');
		if (!Number.isNaN(date)) storeNow = date;
		let page;
		try {
			page = parseListPage(response.body);
		} catch (error) {
			throw new ConnectorError(
				`S3 ${what} answered what is not a listing: ${(error as Error).message}`,
				{ description: snippet(response.body) },
			);
		}
		objects.push(...page.objects);
		token = page.nextContinuationToken;
	} while (token !== undefined && objects.length < args.maxObjects);
	const truncated = token !== undefined;
	if (truncated && !args.afterLastKey)
		throw new ConnectorError(
			`S3 ${what} has more than "maxObjects" (${args.maxObjects}) objects: set "afterLastKey" to list them over several polls, or narrow "prefix"`,
		);
	return { objects, requests, truncated, storeNow };
}

/** Whether the object exists (HEAD): 200 yes, 404 no, anything else a failure. */
async function exists(context: OpContext, bucket: string, key: string): Promise<boolean> {
	const what = `HeadObject of ${objectName(bucket, key)}`;
	const response = await s3Request(context, { method: 'HEAD', bucket, key, what });
	if (response.status === 404) return false;
	expectStatus(response, [200], what);
	return true;
}

async function deleteObject(context: OpContext, bucket: string, key: string): Promise<void> {
	const what = `DeleteObject of ${objectName(bucket, key)}`;
	expectStatus(await s3Request(context, { method: 'DELETE', bucket, key, what }), [200, 204], what);
}

interface S3Call {
	method: string;
	bucket: string;
	/** Unset: a request on the bucket (ListObjectsV2). */
	key?: string;
	query?: Record<string, string>;
	headers?: Record<string, string>;
	/** The body is wanted as bytes (GetObject). */
	bytes?: boolean;
	/** The request in words, for errors: `GetObject of "in/a.csv" in bucket "drop"`. */
	what: string;
}

/**
 * One signed request. The URL is sent as signed: path and query percent-encoded here, as SigV4
 * canonicalises them, and none left for the transport to encode.
 */
async function s3Request(context: OpContext, call: S3Call): Promise<HttpResponse> {
	const connection = context.s3;
	if (!connection || !context.http)
		throw new Error('The S3 ops need an S3 connection and an HTTP transport');
	const { origin, host, path } = requestTarget(connection, call.bucket, call.key);
	const query = canonicalQuery(call.query ?? {});
	const headers = signS3Request({
		method: call.method,
		host,
		path,
		query: call.query,
		headers: call.headers,
		credentials: connection,
		region: connection.region,
		now: (context.clock ?? systemClock).now(),
	});
	try {
		return await context.http({
			method: call.method,
			url: `${origin}${uriEncode(path, true)}${query ? `?${query}` : ''}`,
			headers,
			timeoutMs: context.timeoutMs,
			signal: context.signal,
			skipTlsVerify: connection.skipTlsVerify,
			responseType: call.bytes ? 'bytes' : 'text',
		});
	} catch (error) {
		throw new ConnectorError(`S3 ${call.what} at ${host} failed: ${(error as Error).message}`);
	}
}

/**
 * Where a request goes: path-style `endpoint/bucket/key`, or virtual-hosted `bucket.endpoint/key`.
 * A bucket with a dot goes path-style: as a host (`a.b.s3.….com`) it fails the store's wildcard
 * certificate (`*.s3.….com`), which covers one label. `path` is decoded (the signer and the URL
 * encode it alike).
 */
export function requestTarget(
	connection: S3Connection,
	bucket: string,
	key: string | undefined,
): { origin: string; host: string; path: string } {
	let endpoint: URL;
	try {
		endpoint = new URL(connection.endpoint);
	} catch {
		throw new ConnectorError(
			`S3 endpoint ${JSON.stringify(connection.endpoint)} is not a URL such as "https://s3.eu-west-1.amazonaws.com"`,
		);
	}
	const base = decodeURIComponent(endpoint.pathname).replace(/\/+$/, '');
	const objectPath = key === undefined ? '' : key;
	const pathStyle = connection.pathStyle || bucket.includes('.');
	const host = pathStyle ? endpoint.host : `${bucket}.${endpoint.host}`;
	const path = pathStyle ? `${base}/${bucket}/${objectPath}` : `${base}/${objectPath}`;
	return {
		origin: `${endpoint.protocol}//${host}`,
		host,
		// Path-style ListObjectsV2 goes to `/bucket`, as n8n's S3 node and the SDKs send it.
		path: pathStyle && key === undefined ? path.slice(0, -1) : path,
	};
}

function expectStatus(response: HttpResponse, statuses: number[], what: string): void {
	if (!statuses.includes(response.status))
		throw s3Failure(response, what, parseError(response.body));
}

/** A failed request, in S3's words when it gave them (`<Code>`, `<Message>`). */
function s3Failure(
	response: HttpResponse,
	what: string,
	error: { code: string; message: string } | undefined,
): ConnectorError {
	const said = error ? ` ${error.code}${error.message ? `: ${error.message}` : ''}` : '';
	return new ConnectorError(`S3 ${what} answered HTTP ${response.status}${said}`, {
		status: response.status,
		// S3 asks to slow down with 503 SlowDown (and some stores with 429).
		retryAfterMs:
			response.status === 429 || response.status === 503
				? parseRetryAfter(response.headers['retry-after'])
				: undefined,
		description: error ? undefined : snippet(response.body),
	});
}

/** The object's size from a ranged answer's `Content-Range` (`bytes 0-9/1234`). */
function totalSize(contentRange: string | undefined): number | undefined {
	const match = /\/(\d+)\s*$/.exec(contentRange ?? '');
	return match ? Number(match[1]) : undefined;
}

function objectName(bucket: string, key: string): string {
	return `${JSON.stringify(key)} in bucket "${bucket}"`;
}
