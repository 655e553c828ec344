import { Writable } from 'node:stream';

import { systemClock } from '../clock';
import {
	baseName,
	deleteArgs,
	downloadArgs,
	type FolderReader,
	joinPath,
	listArgs,
	moveArgs,
	settle,
	toRemoteFile,
	walkFiles,
} from './remoteFiles';
import { ConnectorError, type ConnectorOp, type OpContext } from './types';

/**
 * The four file-server ops (`<protocol>.list`, `.download`, `.move`, `.delete`) once, over any
 * protocol's session: SFTP (sftp.ts) and FTP (ftp.ts) give the same items and the same results.
 */

/** A logged-in session as the ops use it; each call fails with the server, the path and its reason. */
export interface FileSession extends FolderReader {
	/** `host:port`, for messages. */
	where: string;
	/** A file's size and modification time (undefined if the server cannot tell); fails if it is no file. */
	stat(path: string): Promise<{ size: number; mtimeMs?: number }>;
	read(path: string, sink: Writable): Promise<void>;
	exists(path: string): Promise<boolean>;
	/** Makes the folder and any missing parents. */
	makeFolder(path: string): Promise<void>;
	rename(from: string, to: string): Promise<void>;
	delete(path: string): Promise<void>;
	/** What the protocol adds to a listing's result (FTP: where its times came from). */
	listingFacts?(): Promise<Record<string, unknown>>;
}

export interface FileProtocol {
	/** `sftp`: the ops' names and transport. */
	transport: 'sftp' | 'ftp';
	/** Checks the protocol's own arguments in With (FTP: `tls`), throwing a ConfigError naming one. */
	checkArgs?(args: Record<string, unknown>): void;
	/** One session: connect, work, and always end it, also on error, timeout and abort. */
	withSession<T>(
		args: Record<string, unknown>,
		context: OpContext,
		work: (session: FileSession) => Promise<T>,
	): Promise<T>;
}

export function fileOps({ transport, checkArgs, withSession }: FileProtocol): ConnectorOp[] {
	/** How messages name the protocol: `SFTP`. */
	const label = transport.toUpperCase();
	const checked =
		(opArgs: (args: Record<string, unknown>) => unknown) => (args: Record<string, unknown>) => {
			opArgs(args);
			checkArgs?.(args);
		};

	const list: ConnectorOp = {
		name: `${transport}.list`,
		description:
			'Finished files of a folder (optionally recursive, by name pattern), oldest first: a file counts once listings at least "unchangedForSec" (60) apart saw the same size and time',
		transport,
		previewsWithMemory: true,
		check: checked(listArgs),
		async run(args, context) {
			const parsed = listArgs(args);
			const listedAt = (context.clock ?? systemClock).now();
			return await withSession(args, context, async (session) => {
				const files = await walkFiles(session, parsed);
				const settled = settle(files, context.memory, listedAt, parsed);
				const { finished, uploading, memory } = context.baseline
					? { ...settled, finished: files, uploading: [] }
					: settled;
				return {
					kind: 'data',
					data: {
						folder: parsed.folder,
						files: finished.map(toRemoteFile),
						uploading: uploading.map(toRemoteFile),
						...(await session.listingFacts?.()),
					},
					memory,
				};
			});
		},
	};

	const download: ConnectorOp = {
		name: `${transport}.download`,
		description: 'Reads a file as binary data (at most "maxBytes", 10 MiB unless set)',
		transport,
		givesFile: true,
		check: checked(downloadArgs),
		async run(args, context) {
			const { path, maxBytes } = downloadArgs(args);
			return await withSession(args, context, async (session) => {
				const stats = await session.stat(path);
				const overLimit = (size: number) =>
					new ConnectorError(
						`${label} file ${JSON.stringify(path)} at ${session.where} is ${size} bytes, over the download limit "maxBytes" of ${maxBytes}`,
					);
				if (stats.size > maxBytes) throw overLimit(stats.size);
				// Counted while reading as well: the file may have grown since the stat.
				const chunks: Buffer[] = [];
				let read = 0;
				const sink = new Writable({
					write(chunk: Buffer, _encoding, done) {
						read += chunk.length;
						if (read > maxBytes) return done(overLimit(read));
						chunks.push(chunk);
						done();
					},
				});
				await session.read(path, sink);
				const modifiedAt =
					stats.mtimeMs === undefined ? null : new Date(stats.mtimeMs).toISOString();
				return {
					kind: 'data',
					data: { path, size: read, modifiedAt },
					file: { data: Buffer.concat(chunks), fileName: baseName(path) },
				};
			});
		},
	};

	const move: ConnectorOp = {
		name: `${transport}.move`,
		description:
			'Moves files into another folder (e.g. "processed/"), keeping their names; creates the folder unless "create" is false',
		transport,
		check: checked(moveArgs),
		async run(args, context) {
			const { paths, toFolder, create } = moveArgs(args);
			return await withSession(args, context, async (session) => {
				if (!(await session.exists(toFolder))) {
					if (!create)
						throw new ConnectorError(
							`${label} folder ${JSON.stringify(toFolder)} does not exist at ${session.where}; create it, or set "create" to true`,
						);
					await session.makeFolder(toFolder);
				}
				const moved: Array<{ from: string; to: string }> = [];
				const missing: string[] = [];
				for (const from of paths) {
					const to = joinPath(toFolder, baseName(from));
					// A file already moved (a retried step) is reported, not an error.
					if (!(await session.exists(from))) {
						missing.push(from);
						continue;
					}
					// Checked first, as some servers' rename replaces an existing target: an older file of that name is never overwritten.
					if (await session.exists(to))
						throw new ConnectorError(
							`${label} cannot move ${JSON.stringify(from)} at ${session.where}: ${JSON.stringify(to)} already exists`,
						);
					await session.rename(from, to);
					moved.push({ from, to });
				}
				return { kind: 'data', data: { toFolder, moved, missing } };
			});
		},
	};

	const remove: ConnectorOp = {
		name: `${transport}.delete`,
		description: 'Deletes files; files already gone are reported, not an error',
		transport,
		check: checked(deleteArgs),
		async run(args, context) {
			const { paths } = deleteArgs(args);
			return await withSession(args, context, async (session) => {
				const deleted: string[] = [];
				const missing: string[] = [];
				for (const path of paths) {
					if (!(await session.exists(path))) {
						missing.push(path);
						continue;
					}
					await session.delete(path);
					deleted.push(path);
				}
				return { kind: 'data', data: { deleted, missing } };
			});
		},
	};

	return [list, download, move, remove];
}
