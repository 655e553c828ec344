import { argumentError, booleanArg, numberArg } from './args';
import { baseName, type RemoteFile, maxBytesArg, patternArg } from './remoteFiles';
import { type OpMemory } from './types';

/**
 * The pure part of the S3 ops: their arguments, the reading of S3's XML answers, and which objects a
 * listing gives and where the next one starts (`afterLastKey`). No I/O here; core/connectors/s3.ts
 * sends the requests.
 */

/** One object as ListObjectsV2 gave it. */
export interface ListedObject {
	key: string;
	size: number;
	/** S3's `LastModified`, as it gave it. */
	lastModified: string;
	lastModifiedMs: number;
	/** Without S3's quotes; a multipart upload's is `<md5 of md5s>-<parts>`. */
	etag: string;
	storageClass: string;
}

/**
 * An object as `s3.list` returns it, one item per object: `sftp.list`'s item shape (`path` is the key,
 * `version` the ETag), so a workflow can switch source, plus S3's own fields.
 */
export interface S3File extends RemoteFile {
	key: string;
	etag: string;
	lastModified: string;
	storageClass: string;
}

export function toS3File(object: ListedObject): S3File {
	return {
		path: object.key,
		name: baseName(object.key),
		size: object.size,
		modifiedAt: new Date(object.lastModifiedMs).toISOString(),
		version: object.etag,
		key: object.key,
		etag: object.etag,
		lastModified: object.lastModified,
		storageClass: object.storageClass,
	};
}

// --- S3's XML ---------------------------------------------------------------------------------------

/*
 * A small, strict reader of the few elements the ops need from S3's answers (ListBucketResult,
 * CopyObjectResult, Error): the text of named elements, XML's five entities and character references
 * decoded. It does not handle CDATA sections, comments, DTDs, namespace prefixes, or an element nested
 * in one of the same name; S3 sends none of these. Keys with characters XML 1.0 cannot carry (most
 * control characters) would need `encoding-type=url`, which some S3-compatible servers ignore: not used.
 */

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Element text with its entities decoded; an unknown entity or a stray `<` is an error. */
export function xmlText(raw: string): string {
	if (raw.includes('<'))
		throw new Error(`unexpected markup in element text ${JSON.stringify(raw)}`);
	return raw.replace(/&([^;&\s]*);?/g, (whole, name: string) => {
		if (!whole.endsWith(';')) throw new Error(`unterminated entity ${JSON.stringify(whole)}`);
		if (name.startsWith('#x')) return String.fromCodePoint(parseInt(name.slice(2), 16));
		if (name.startsWith('#')) return String.fromCodePoint(parseInt(name.slice(1), 10));
		const decoded = ENTITIES[name];
		if (decoded === undefined) throw new Error(`unknown entity "&${name};"`);
		return decoded;
	});
}

/** The raw contents of every `<name>…</name>` (and `<name/>`, as ""), in document order. */
export function xmlElements(xml: string, name: string): string[] {
	const found: string[] = [];
	const open = new RegExp(`<${name}(?:\\s[^>]*?)?(/?)>`, 'g');
	for (let match = open.exec(xml); match; match = open.exec(xml)) {
		if (match[1] === '/') {
			found.push('');
			continue;
		}
		const close = xml.indexOf(`</${name}>`, open.lastIndex);
		if (close === -1) throw new Error(`<${name}> has no closing tag`);
		found.push(xml.slice(open.lastIndex, close));
		open.lastIndex = close + name.length + 3;
	}
	return found;
}

/** The decoded text of the one `<name>` in `xml`, or undefined when there is none. */
export function xmlChild(xml: string, name: string): string | undefined {
	const [first, second] = xmlElements(xml, name);
	if (second !== undefined) throw new Error(`more than one <${name}>`);
	return first === undefined ? undefined : xmlText(first);
}

/** One page of ListObjectsV2 (ListBucketResult). */
export interface ListPage {
	objects: ListedObject[];
	nextContinuationToken: string | undefined;
}

export function parseListPage(xml: string): ListPage {
	const [result, extra] = xmlElements(xml, 'ListBucketResult');
	if (result === undefined || extra !== undefined)
		throw new Error('the answer is not one ListBucketResult');
	// Only top-level elements are read outside <Contents>: cut the objects out first.
	const contents = xmlElements(result, 'Contents');
	const outside = result.replace(/<Contents>[\s\S]*?<\/Contents>/g, '');
	const truncated = xmlChild(outside, 'IsTruncated');
	const token = xmlChild(outside, 'NextContinuationToken');
	if (truncated === 'true' && !token)
		throw new Error('IsTruncated is true without a NextContinuationToken');
	return {
		objects: contents.map(parseObject),
		nextContinuationToken: truncated === 'true' ? token : undefined,
	};
}

function parseObject(xml: string): ListedObject {
	const required = (name: string) => {
		const value = xmlChild(xml, name);
		if (value === undefined) throw new Error(`an object has no <${name}>`);
		return value;
	};
	const key = required('Key');
	const lastModified = required('LastModified');
	const lastModifiedMs = Date.parse(lastModified);
	const size = Number(required('Size'));
	if (Number.isNaN(lastModifiedMs))
		throw new Error(
			`object ${JSON.stringify(key)} has LastModified ${JSON.stringify(lastModified)}`,
		);
	if (!Number.isSafeInteger(size) || size < 0)
		throw new Error(`object ${JSON.stringify(key)} has Size ${JSON.stringify(required('Size'))}`);
	return {
		key,
		size,
		lastModified,
		lastModifiedMs,
		etag: unquote(required('ETag')),
		// Some S3-compatible stores leave it out; AWS always sends it.
		storageClass: xmlChild(xml, 'StorageClass') ?? 'STANDARD',
	};
}

/** S3's ETags are quoted (`"…"`): the quotes are not part of the value. */
export function unquote(etag: string): string {
	return etag.replace(/^"(.*)"$/, '$1');
}

/** The `<Code>` and `<Message>` of an S3 `<Error>` answer, when the body is one. */
export function parseError(xml: string): { code: string; message: string } | undefined {
	try {
		const [error] = xmlElements(xml, 'Error');
		if (error === undefined) return undefined;
		return { code: xmlChild(error, 'Code') ?? '', message: xmlChild(error, 'Message') ?? '' };
	} catch {
		return undefined;
	}
}

// --- Which objects a listing gives ------------------------------------------------------------------

/** S3 lists keys in the order of their UTF-8 bytes, which is not JavaScript's (UTF-16) string order. */
export function compareKeys(a: string, b: string): number {
	return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The key of the op's memory holding where `afterLastKey` lists from next: `{ bucket, prefix, after }` as JSON. */
export const POSITION_MEMORY = 'position';

/**
 * Where this call lists from: after the remembered key (the same bucket and prefix only: a changed
 * one starts afresh) or after `startAfter`, whichever is later.
 */
export function listStart(args: ListArgs, memory: OpMemory): string {
	const remembered = args.afterLastKey ? rememberedKey(memory[POSITION_MEMORY], args) : undefined;
	return remembered !== undefined && compareKeys(remembered, args.startAfter) > 0
		? remembered
		: args.startAfter;
}

function rememberedKey(saved: string | undefined, args: ListArgs): string | undefined {
	return rememberedPosition(saved, args)?.after;
}

/**
 * Objects a call listed before, listed again because the position went back for objects whose runs
 * n8n did not start (rewindListing): up to the key `to`, only the objects `owed` are given, so no
 * other object between starts again (its key may have been forgotten by Remember at Most since).
 */
export interface ListingZone {
	to: string;
	owed: string[];
}

interface RememberedPosition {
	bucket: string;
	prefix: string;
	after: string;
	zone?: ListingZone;
}

function rememberedPosition(
	saved: string | undefined,
	args?: Pick<ListArgs, 'bucket' | 'prefix'>,
): RememberedPosition | undefined {
	if (saved === undefined) return undefined;
	try {
		const position = JSON.parse(saved) as RememberedPosition;
		return (!args || (position.bucket === args.bucket && position.prefix === args.prefix)) &&
			typeof position.after === 'string'
			? position
			: undefined;
	} catch {
		return undefined;
	}
}

/** The zone of an `afterLastKey` listing's memory, if it has one (same bucket and prefix only). */
export function rememberedZone(args: ListArgs, memory: OpMemory): ListingZone | undefined {
	return args.afterLastKey ? rememberedPosition(memory[POSITION_MEMORY], args)?.zone : undefined;
}

export function positionMemory(
	args: Pick<ListArgs, 'bucket' | 'prefix'>,
	after: string,
	zone?: ListingZone,
): OpMemory {
	return {
		[POSITION_MEMORY]: JSON.stringify({
			bucket: args.bucket,
			prefix: args.prefix,
			after,
			...(zone && { zone }),
		}),
	};
}

/** Owed objects a zone names at most; past it the listing starts afresh (the dedupe decides). */
export const MAX_OWED_KEYS = 1000;

/**
 * ConnectorOp.rewind of s3.list with `afterLastKey`: lists from just before the earliest owed object
 * (each position is `[from, key]`: the key listed before it, and its own), or from where `memory`
 * lists if that is earlier, and, up to where `memory` had listed, gives only the owed objects.
 */
export function rewindListing(
	memory: OpMemory | undefined,
	owed: readonly string[],
): OpMemory | undefined {
	const position = rememberedPosition(memory?.[POSITION_MEMORY]);
	if (!position) return undefined;
	let start = position.after;
	const keys: string[] = [];
	for (const text of owed) {
		const [from, key] = JSON.parse(text) as [string, string];
		if (compareKeys(from, start) < 0) start = from;
		keys.push(key);
	}
	// The owed objects are after where the next call lists from: it lists them anyway.
	if (start === position.after && !position.zone) return memory;
	const owedKeys = [...new Set([...(position.zone?.owed ?? []), ...keys])];
	if (owedKeys.length > MAX_OWED_KEYS) return undefined;
	return positionMemory(position, start, {
		to: position.zone?.to ?? position.after,
		owed: owedKeys,
	});
}

/**
 * The objects of a listing that start items, each with where it was listed (`[from, key]` as JSON:
 * rewindListing): those matching the pattern, without the zone's objects other than the owed ones.
 */
export function listedItems(
	objects: readonly ListedObject[],
	startedAfter: string,
	pattern: RegExp,
	zone: ListingZone | undefined,
): Array<{ object: ListedObject; position: string }> {
	const owed = new Set(zone?.owed);
	const wanted = new Set(matching(objects, pattern));
	const items: Array<{ object: ListedObject; position: string }> = [];
	let from = startedAfter;
	for (const object of objects) {
		const before = from;
		from = object.key;
		if (!wanted.has(object)) continue;
		if (zone && compareKeys(object.key, zone.to) <= 0 && !owed.has(object.key)) continue;
		items.push({ object, position: JSON.stringify([before, object.key]) });
	}
	return items;
}

/**
 * Where the next `afterLastKey` call lists from: the last key of the leading run, in key order, of
 * objects modified at least `lagMs` before `storeNow` (the store's clock). A younger object, and
 * everything after it, is listed again until it is old enough: an object still being uploaded (whose
 * `LastModified` is the upload's start) may appear later with a smaller key than one already listed.
 */
export function nextStart(
	objects: readonly ListedObject[],
	from: string,
	storeNow: number,
	lagMs: number,
): string {
	let next = from;
	for (const object of objects) {
		if (storeNow - object.lastModifiedMs < lagMs) break;
		next = object.key;
	}
	return next;
}

/** Objects an item is made for: those whose name matches, without "folder" markers (keys ending in `/`). */
export function matching(objects: readonly ListedObject[], pattern: RegExp): ListedObject[] {
	return objects.filter(
		(object) => !object.key.endsWith('/') && pattern.test(baseName(object.key)),
	);
}

// --- Arguments --------------------------------------------------------------------------------------

export interface ListArgs {
	bucket: string;
	prefix: string;
	pattern: RegExp;
	afterLastKey: boolean;
	startAfter: string;
	lagMs: number;
	maxObjects: number;
}

const DEFAULT_LAG_SECONDS = 300;
const DEFAULT_MAX_OBJECTS = 10_000;

export function listArgs(args: Record<string, unknown>): ListArgs {
	return {
		bucket: bucketArg(args.bucket, 'bucket'),
		prefix: textArg(args.prefix, 'prefix', 'a key prefix such as "in/"'),
		pattern: patternArg(args.pattern),
		afterLastKey: booleanArg(args.afterLastKey, 'afterLastKey', false),
		startAfter: textArg(args.startAfter, 'startAfter', 'a key such as "in/2026-12-01/"'),
		lagMs:
			numberArg(args.lagSeconds, 'lagSeconds', DEFAULT_LAG_SECONDS, { min: 0, max: 86_400 }) * 1000,
		maxObjects: numberArg(args.maxObjects, 'maxObjects', DEFAULT_MAX_OBJECTS, {
			min: 1,
			max: 100_000,
			whole: true,
		}),
	};
}

export function downloadArgs(args: Record<string, unknown>): {
	bucket: string;
	key: string;
	maxBytes: number;
} {
	const keyName = args.key === undefined ? 'path' : 'key';
	return {
		bucket: bucketArg(args.bucket, 'bucket'),
		key: keyArg(args[keyName], keyName),
		maxBytes: maxBytesArg(args.maxBytes),
	};
}

export function moveArgs(args: Record<string, unknown>): {
	bucket: string;
	keys: string[];
	toPrefix: string;
	toBucket: string;
} {
	const bucket = bucketArg(args.bucket, 'bucket');
	const toPrefix = args.toPrefix;
	if (typeof toPrefix !== 'string' || toPrefix === '')
		throw argumentError(
			'toPrefix',
			toPrefix,
			'must be the key prefix to move to, such as "processed/"',
		);
	return {
		bucket,
		keys: keysArg(args.path),
		toPrefix,
		toBucket:
			args.toBucket === undefined || args.toBucket === ''
				? bucket
				: bucketArg(args.toBucket, 'toBucket'),
	};
}

export function deleteArgs(args: Record<string, unknown>): { bucket: string; keys: string[] } {
	return { bucket: bucketArg(args.bucket, 'bucket'), keys: keysArg(args.path) };
}

function bucketArg(value: unknown, key: string): string {
	if (typeof value !== 'string' || !/^[^\s/]+$/.test(value))
		throw argumentError(
			key,
			value,
			'must be a bucket name such as "incoming", without "/" or spaces',
		);
	return value;
}

/** Optional text taken as it is: S3 keys are exact, spaces included. */
function textArg(value: unknown, key: string, what: string): string {
	if (value === undefined || value === null) return '';
	if (typeof value !== 'string') throw argumentError(key, value, `must be ${what}`);
	return value;
}

/**
 * An object key. A key with a `.` or `..` path segment is refused: URLs resolve such segments (also
 * encoded as `%2E`), so the request would reach another object.
 */
function keyArg(value: unknown, key: string): string {
	if (typeof value !== 'string' || value === '')
		throw argumentError(
			key,
			value,
			'must be an object key such as "in/a.csv" (the path s3.list gave)',
		);
	if (value.split('/').some((segment) => segment === '.' || segment === '..'))
		throw argumentError(
			key,
			value,
			'has a "." or ".." segment, which a URL cannot carry: rename the object with another tool',
		);
	return value;
}

/** One key or a list; n8n runs the Connector once per item, a list serves a batch run. */
function keysArg(value: unknown): string[] {
	const list = Array.isArray(value) ? value : [value];
	if (list.length === 0)
		throw argumentError(
			'path',
			value,
			'must be an object key (the path s3.list gave) or a list of them',
		);
	return [...new Set(list.map((key) => keyArg(key, 'path')))];
}
