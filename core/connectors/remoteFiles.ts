import { argumentError, booleanArg, numberArg } from './args';
import { type OpMemory } from './types';

/**
 * The protocol-free semantics of the file-server ops (SFTP, FTP): the walk through a folder (over a
 * `FolderReader`), which names it keeps (the pattern), when a file counts as finished uploading (the
 * stability check), and each file's identity (path and version). No I/O here; core/connectors/sftp.ts
 * and ftp.ts do the protocol's calls.
 */

/** One regular file as a listing found it. `mtimeMs` has the server's resolution (SFTP v3: whole seconds). */
export interface ListedFile {
	path: string;
	size: number;
	mtimeMs: number;
	/**
	 * How coarse `mtimeMs` is when the server gave less than seconds (an FTP `LIST`: a minute or a day):
	 * the time lies in [mtimeMs, mtimeMs + mtimeSpanMs), and the age rule judges by its end. Unset: exact.
	 */
	mtimeSpanMs?: number;
}

/** One entry of a folder as a protocol lists it; `name` without the folder. */
export interface FolderEntry {
	name: string;
	type: 'file' | 'folder' | 'other';
	size: number;
	mtimeMs: number;
	mtimeSpanMs?: number;
}

/** A protocol's session as the walk needs it: one folder's entries, failing with the folder named. */
export interface FolderReader {
	list(folder: string): Promise<FolderEntry[]>;
}

/**
 * Regular files under the folder (and its subfolders when recursive) whose names match; symbolic
 * links and special files are skipped.
 */
export async function walkFiles(
	reader: FolderReader,
	{ folder, recursive, pattern }: Pick<ListArgs, 'folder' | 'recursive' | 'pattern'>,
): Promise<ListedFile[]> {
	const files: ListedFile[] = [];
	const folders = [folder];
	for (let current = folders.shift(); current !== undefined; current = folders.shift()) {
		for (const { name, type, size, mtimeMs, mtimeSpanMs } of await reader.list(current)) {
			const path = joinPath(current, name);
			if (type === 'folder') {
				if (recursive) folders.push(path);
			} else if (type === 'file' && pattern.test(name)) {
				files.push({ path, size, mtimeMs, ...(mtimeSpanMs !== undefined && { mtimeSpanMs }) });
			}
		}
	}
	return files;
}

/** A finished file as `sftp.list` and `ftp.list` return it, one item per file. */
export interface RemoteFile {
	/** Absolute (or as the folder was given) path on the server, with `/` separators. */
	path: string;
	name: string;
	size: number;
	/** The modification time (ISO 8601), in the server's resolution. */
	modifiedAt: string;
	/** `size:mtimeMs`: what a replaced file changes; the Version of `changed`, or part of a Unique ID. */
	version: string;
}

/** The version of a file's content as a listing can tell it: size and modification time. */
export function fileVersion(file: Pick<ListedFile, 'size' | 'mtimeMs'>): string {
	return `${file.size}:${file.mtimeMs}`;
}

export function toRemoteFile(file: ListedFile): RemoteFile {
	return {
		path: file.path,
		name: baseName(file.path),
		size: file.size,
		modifiedAt: new Date(file.mtimeMs).toISOString(),
		version: fileVersion(file),
	};
}

export function baseName(path: string): string {
	return path.slice(path.lastIndexOf('/') + 1);
}

/** `folder` + `/` + `name`, without a doubled separator. */
export function joinPath(folder: string, name: string): string {
	return folder.endsWith('/') ? `${folder}${name}` : `${folder}/${name}`;
}

/**
 * A glob on a file name: `*` any run of characters, `?` one character, `[abc]`/`[a-z]`/`[!abc]` a class,
 * `{csv,xml}` alternatives; everything else literal. Matched against the whole name, case-sensitive
 * (as the server's names are). Throws on an unbalanced `[` or `{`.
 */
export function globToRegExp(pattern: string): RegExp {
	let source = '';
	let inBraces = false;
	for (let i = 0; i < pattern.length; i++) {
		const char = pattern[i];
		if (char === '*') source += '[^/]*';
		else if (char === '?') source += '[^/]';
		else if (char === '[') {
			const end = pattern.indexOf(']', i + 2);
			if (end === -1) throw new Error(`"[" at position ${i + 1} has no closing "]"`);
			let body = pattern.slice(i + 1, end);
			if (body.startsWith('!')) body = `^${body.slice(1)}`;
			source += `[${body.replace(/\\/g, '\\\\')}]`;
			i = end;
		} else if (char === '{') {
			if (inBraces) throw new Error(`"{" at position ${i + 1} inside another "{"`);
			inBraces = true;
			source += '(?:';
		} else if (char === '}' && inBraces) {
			inBraces = false;
			source += ')';
		} else if (char === ',' && inBraces) source += '|';
		else source += char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
	}
	if (inBraces) throw new Error('"{" has no closing "}"');
	return new RegExp(`^${source}$`);
}

export interface Settled {
	/** Files unchanged for long enough (or old enough), oldest first. */
	finished: ListedFile[];
	/** Files new or changed too recently: possibly still being written. */
	uploading: ListedFile[];
	/**
	 * What this poll saw, for the next one: path → `version@ms`, the version and when a listing first
	 * saw it, for every file the age rule does not already settle.
	 */
	memory: OpMemory;
}

/**
 * A listing's time is taken when its call begins, so two polls an interval apart may list a little
 * less than an interval apart (connection time, timers): this much is forgiven, so that a poll every
 * `unchangedForSec` seconds does not make each file wait one poll more.
 */
const LISTING_TIME_SLACK_MS = 1000;

/**
 * The stability check. A file counts as finished when an earlier listing (`seen`) saw it with the same
 * size and modification time at least `unchangedForMs` before `now`, and every listing since did too
 * (a change starts the wait again); or, with `finishedAfterMs` > 0, when its modification time is at
 * least that long before `now` (a coarse time: its end). Not merely the previous listing: one seconds before (a re-publish,
 * a restart) would make a stalled upload look finished. The memory holds, for every file younger than
 * the age (all of them when the age is off), its version and when it was first seen so, so an
 * unchanged file stays finished at every later poll and a replaced one waits again.
 */
export function settle(
	files: readonly ListedFile[],
	seen: OpMemory,
	now: number,
	{ finishedAfterMs, unchangedForMs }: Pick<ListArgs, 'finishedAfterMs' | 'unchangedForMs'>,
): Settled {
	const finished: ListedFile[] = [];
	const uploading: ListedFile[] = [];
	const memory: OpMemory = {};
	for (const file of files) {
		const version = fileVersion(file);
		const oldEnough =
			finishedAfterMs > 0 && now - (file.mtimeMs + (file.mtimeSpanMs ?? 0)) >= finishedAfterMs;
		const since = seenSince(seen[file.path], version);
		if (!oldEnough) memory[file.path] = `${version}@${since ?? now}`;
		const unchanged =
			since !== undefined && now - since >= Math.max(0, unchangedForMs - LISTING_TIME_SLACK_MS);
		if (oldEnough || unchanged) finished.push(file);
		else uploading.push(file);
	}
	const byAge = (a: ListedFile, b: ListedFile) =>
		a.mtimeMs - b.mtimeMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
	return { finished: finished.sort(byAge), uploading: uploading.sort(byAge), memory };
}

/**
 * When a listing first saw `version` (ms), from a memory entry; undefined for another version, or an
 * entry without a time (kept before the time was: the file is seen afresh).
 */
function seenSince(entry: string | undefined, version: string): number | undefined {
	const at = entry?.indexOf('@') ?? -1;
	if (at === -1 || entry!.slice(0, at) !== version) return undefined;
	const since = Number(entry!.slice(at + 1));
	return Number.isFinite(since) ? since : undefined;
}

/** The largest file `sftp.download` takes by default, and at most. */
export const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
const LARGEST_MAX_BYTES = 1024 * 1024 * 1024;

export interface ListArgs {
	folder: string;
	recursive: boolean;
	pattern: RegExp;
	finishedAfterMs: number;
	unchangedForMs: number;
}

/** How long a file must keep still, by default, before it counts as finished (`unchangedForSec`). */
const DEFAULT_UNCHANGED_FOR_SEC = 60;

export function listArgs(args: Record<string, unknown>): ListArgs {
	return {
		folder: pathArg(args.folder, 'folder'),
		recursive: booleanArg(args.recursive, 'recursive', false),
		pattern: patternArg(args.pattern),
		finishedAfterMs:
			numberArg(args.finishedAfterSec, 'finishedAfterSec', 0, { min: 0, max: 31_536_000 }) * 1000,
		unchangedForMs:
			numberArg(args.unchangedForSec, 'unchangedForSec', DEFAULT_UNCHANGED_FOR_SEC, {
				min: 0,
				max: 31_536_000,
			}) * 1000,
	};
}

/** The `pattern` argument: a glob on the file name (`*` when unset). */
export function patternArg(value: unknown): RegExp {
	const pattern = value ?? '*';
	if (typeof pattern !== 'string' || pattern === '')
		throw argumentError('pattern', pattern, 'must be a file-name glob such as "*.csv"');
	try {
		return globToRegExp(pattern);
	} catch (error) {
		throw argumentError('pattern', pattern, `is not a valid glob: ${(error as Error).message}`);
	}
}

export function downloadArgs(args: Record<string, unknown>): { path: string; maxBytes: number } {
	return {
		path: pathArg(args.path, 'path'),
		maxBytes: maxBytesArg(args.maxBytes),
	};
}

/** The `maxBytes` argument of the download ops: the largest file read, 10 MiB unless set, at most 1 GiB. */
export function maxBytesArg(value: unknown): number {
	return numberArg(value, 'maxBytes', DEFAULT_MAX_BYTES, {
		min: 1,
		max: LARGEST_MAX_BYTES,
		whole: true,
	});
}

export function moveArgs(args: Record<string, unknown>): {
	paths: string[];
	toFolder: string;
	create: boolean;
} {
	return {
		paths: pathsArg(args.path),
		toFolder: pathArg(args.toFolder, 'toFolder'),
		create: booleanArg(args.create, 'create', true),
	};
}

export function deleteArgs(args: Record<string, unknown>): { paths: string[] } {
	return { paths: pathsArg(args.path) };
}

function pathArg(value: unknown, key: string): string {
	if (typeof value !== 'string' || value.trim() === '')
		throw argumentError(key, value, 'must be a path on the server such as "/inbox"');
	return value.trim();
}

/** One path or a list; n8n runs the Connector once per item, a list serves a batch run. */
function pathsArg(value: unknown): string[] {
	const list = Array.isArray(value) ? value : [value];
	if (list.length === 0 || list.some((path) => typeof path !== 'string' || path.trim() === '')) {
		throw argumentError(
			'path',
			value,
			'must be a file path on the server (e.g. the path sftp.list gave) or a list of them',
		);
	}
	return [...new Set((list as string[]).map((path) => path.trim()))];
}
