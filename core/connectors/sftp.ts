import { Writable } from 'node:stream';

import SftpClient from 'ssh2-sftp-client';

import {
	baseName,
	deleteArgs,
	downloadArgs,
	joinPath,
	type ListArgs,
	listArgs,
	type ListedFile,
	moveArgs,
	settle,
	toSftpFile,
} from './sftpFiles';
import { ConnectorError, type ConnectorOp, type OpContext, type SftpConnection } from './types';

/**
 * The SFTP ops: `sftp.list` (finished files of a folder), `sftp.download`, `sftp.move` and
 * `sftp.delete`. Each call is one short SSH session, as the IMAP ops' are: a poll holds no
 * connection between polls. The semantics (pattern, stability check, versions) are in sftpFiles.ts.
 */

/** Connect and per-call timeout when the caller sets none: a poll must not hang on a silent server. */
const DEFAULT_TIMEOUT_MS = 30_000;

/** The part of ssh2-sftp-client the ops use. */
export type SftpSession = Pick<
	SftpClient,
	'connect' | 'end' | 'list' | 'stat' | 'get' | 'rename' | 'delete' | 'mkdir' | 'exists'
>;

function openSession(): SftpSession {
	// The library's default listeners print every connection event to the console.
	const quiet = () => undefined;
	return new SftpClient('durable-triggers', { error: quiet, end: quiet, close: quiet });
}

const list: ConnectorOp = {
	name: 'sftp.list',
	description:
		'Finished files of a folder (optionally recursive, by name pattern), oldest first: a file counts once listings at least "unchangedForSec" (60) apart saw the same size and time',
	transport: 'sftp',
	previewsWithMemory: true,
	check: (args) => listArgs(args),
	async run(args, context) {
		const parsed = listArgs(args);
		const listedAt = Date.now();
		return await withSession(context, async (session, where) => {
			const files = await listFiles(session, parsed, where);
			const { finished, uploading, memory } = settle(files, context.memory, listedAt, parsed);
			return {
				kind: 'data',
				data: {
					folder: parsed.folder,
					files: finished.map(toSftpFile),
					uploading: uploading.map(toSftpFile),
				},
				memory,
			};
		});
	},
};

const download: ConnectorOp = {
	name: 'sftp.download',
	description: 'Reads a file as binary data (at most "maxBytes", 10 MiB unless set)',
	transport: 'sftp',
	givesFile: true,
	check: (args) => downloadArgs(args),
	async run(args, context) {
		const { path, maxBytes } = downloadArgs(args);
		return await withSession(context, async (session, where) => {
			const stats = await session.stat(path).catch((error: unknown) => {
				throw describeFailure(error, where, path);
			});
			if (!stats.isFile)
				throw new ConnectorError(`SFTP path ${JSON.stringify(path)} at ${where} is not a file`);
			const overLimit = (size: number) =>
				new ConnectorError(
					`SFTP file ${JSON.stringify(path)} at ${where} is ${size} bytes, over the download limit "maxBytes" of ${maxBytes}`,
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
			await session.get(path, sink).catch((error: unknown) => {
				throw describeFailure(error, where, path);
			});
			const file = { path, size: read, modifiedAt: new Date(stats.modifyTime).toISOString() };
			return {
				kind: 'data',
				data: file,
				file: { data: Buffer.concat(chunks), fileName: baseName(path) },
			};
		});
	},
};

const move: ConnectorOp = {
	name: 'sftp.move',
	description:
		'Moves files into another folder (e.g. "processed/"), keeping their names; creates the folder unless "create" is false',
	transport: 'sftp',
	check: (args) => moveArgs(args),
	async run(args, context) {
		const { paths, toFolder, create } = moveArgs(args);
		return await withSession(context, async (session, where) => {
			if (!(await session.exists(toFolder))) {
				if (!create)
					throw new ConnectorError(
						`SFTP folder ${JSON.stringify(toFolder)} does not exist at ${where}; create it, or set "create" to true`,
					);
				await session.mkdir(toFolder, true).catch((error: unknown) => {
					throw describeFailure(error, where, toFolder);
				});
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
				// OpenSSH's rename refuses an existing target, so an older file of that name is never overwritten.
				if (await session.exists(to))
					throw new ConnectorError(
						`SFTP cannot move ${JSON.stringify(from)} at ${where}: ${JSON.stringify(to)} already exists`,
					);
				await session.rename(from, to).catch((error: unknown) => {
					throw describeFailure(error, where, from);
				});
				moved.push({ from, to });
			}
			return { kind: 'data', data: { toFolder, moved, missing } };
		});
	},
};

const remove: ConnectorOp = {
	name: 'sftp.delete',
	description: 'Deletes files; files already gone are reported, not an error',
	transport: 'sftp',
	check: (args) => deleteArgs(args),
	async run(args, context) {
		const { paths } = deleteArgs(args);
		return await withSession(context, async (session, where) => {
			const deleted: string[] = [];
			const missing: string[] = [];
			for (const path of paths) {
				if (!(await session.exists(path))) {
					missing.push(path);
					continue;
				}
				await session.delete(path).catch((error: unknown) => {
					throw describeFailure(error, where, path);
				});
				deleted.push(path);
			}
			return { kind: 'data', data: { deleted, missing } };
		});
	},
};

export const sftpOps: ConnectorOp[] = [list, download, move, remove];

/** Regular files under the folder whose names match; symbolic links and special files are skipped. */
async function listFiles(
	session: SftpSession,
	{ folder, recursive, pattern }: ListArgs,
	where: string,
): Promise<ListedFile[]> {
	const files: ListedFile[] = [];
	const folders = [folder];
	for (let current = folders.shift(); current !== undefined; current = folders.shift()) {
		const entries = await session.list(current).catch((error: unknown) => {
			throw describeFailure(error, where, current);
		});
		for (const entry of entries) {
			const path = joinPath(current, entry.name);
			if (entry.type === 'd') {
				if (recursive) folders.push(path);
			} else if (entry.type === '-' && pattern.test(entry.name)) {
				files.push({ path, size: entry.size, mtimeMs: entry.modifyTime });
			}
		}
	}
	return files;
}

/**
 * One session: connect, work, and always end it, also on error, timeout and abort. A call stopped while
 * connecting returns at once; its connection is ended once it is up (the library's `end()` before
 * that closes nothing, and the connection would stay open for good).
 */
async function withSession<T>(
	context: OpContext,
	work: (session: SftpSession, where: string) => Promise<T>,
): Promise<T> {
	const settings = context.sftp;
	if (!settings) throw new Error('The SFTP ops need SFTP connection settings');
	const where = `${settings.host}:${settings.port}`;
	if (context.signal?.aborted)
		throw new ConnectorError(`SFTP call to ${where} was aborted before it started`);
	const timeoutMs = context.timeoutMs ?? DEFAULT_TIMEOUT_MS;
	const session = openSession();
	const connecting = session.connect({
		host: settings.host,
		port: settings.port,
		username: settings.username,
		password: settings.password || undefined,
		privateKey: settings.privateKey || undefined,
		passphrase: settings.passphrase || undefined,
		readyTimeout: timeoutMs,
		// One attempt: the trigger's backoff is the retry.
		retries: 0,
	});
	let ending: Promise<unknown> | undefined;
	const end = () =>
		(ending ??= connecting
			.catch(() => undefined)
			.then(() => session.end())
			.catch(() => undefined));
	let stopped: string | undefined;
	let interrupt!: (error: Error) => void;
	const interrupted = new Promise<never>((_, reject) => (interrupt = reject));
	const stop = (reason: string) => {
		stopped = reason;
		interrupt(new ConnectorError(`SFTP call to ${where} ${reason}`));
		// Once connected, this also fails the call in flight.
		void end();
	};
	const abort = () => stop('was aborted');
	const timer = setTimeout(() => stop(`did not finish within ${timeoutMs} ms`), timeoutMs);
	context.signal?.addEventListener('abort', abort, { once: true });
	try {
		await Promise.race([
			connecting.catch((error: unknown) => {
				throw describeConnectFailure(error, settings, where);
			}),
			interrupted,
		]);
		return await work(session, where);
	} catch (error) {
		if (stopped) throw new ConnectorError(`SFTP call to ${where} ${stopped}`);
		throw error instanceof ConnectorError ? error : describeFailure(error, where, undefined);
	} finally {
		clearTimeout(timer);
		context.signal?.removeEventListener('abort', abort);
		// A stopped call is being ended already (stop), without waiting for a connection still being set up.
		if (!stopped) await end();
	}
}

interface SftpFailure {
	message?: string;
	code?: string | number;
	level?: string;
}

function failureOf(error: unknown): SftpFailure {
	return typeof error === 'object' && error !== null
		? (error as SftpFailure)
		: { message: String(error) };
}

/** A failed connect or login, in words that say what to fix. */
function describeConnectFailure(
	error: unknown,
	settings: SftpConnection,
	where: string,
): ConnectorError {
	const failure = failureOf(error);
	const message = failure.message ?? '';
	if (failure.level === 'client-authentication' || /authentication methods failed/i.test(message))
		return new ConnectorError(
			`SFTP login failed for user ${JSON.stringify(settings.username)} at ${where}: check the password or private key`,
			{ description: message },
		);
	if (failure.code === 'ECONNREFUSED')
		return new ConnectorError(
			`SFTP server at ${where} refused the connection: is the host and port right?`,
		);
	if (failure.code === 'ENOTFOUND' || failure.code === 'EAI_AGAIN')
		return new ConnectorError(`SFTP host ${JSON.stringify(settings.host)} could not be resolved`);
	if (/timed out/i.test(message))
		return new ConnectorError(`SFTP server at ${where} did not answer in time`, {
			description: message,
		});
	if (/privateKey|private key|passphrase/i.test(message))
		return new ConnectorError(
			`SFTP private key for ${where} could not be read: ${message} (an OpenSSH or PEM key, with its passphrase if it has one)`,
		);
	return new ConnectorError(`SFTP connection to ${where} failed: ${message}`);
}

/** A failed SFTP call on a path, with the server's reason. */
function describeFailure(error: unknown, where: string, path: string | undefined): ConnectorError {
	if (error instanceof ConnectorError) return error;
	const failure = failureOf(error);
	const on = path === undefined ? '' : ` on ${JSON.stringify(path)}`;
	if (failure.code === 'ENOENT' || failure.code === 2)
		return new ConnectorError(`SFTP path ${JSON.stringify(path)} does not exist at ${where}`, {
			description: failure.message,
		});
	if (failure.code === 'EACCES' || failure.code === 3)
		return new ConnectorError(`SFTP server at ${where} denied permission${on}`, {
			description: failure.message,
		});
	return new ConnectorError(`SFTP error at ${where}${on}: ${failure.message ?? 'unknown error'}`);
}
