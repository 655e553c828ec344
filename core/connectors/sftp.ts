import SftpClient from 'ssh2-sftp-client';

import { type FileSession, fileOps } from './fileOps';
import { unreachable } from './network';
import { ConnectorError, type ConnectorOp, type OpContext, type SftpConnection } from './types';

/**
 * The SFTP ops: `sftp.list` (finished files of a folder), `sftp.download`, `sftp.move` and
 * `sftp.delete`. Each call is one short SSH session, as the IMAP ops' are: a poll holds no
 * connection between polls. The ops are fileOps.ts's; the semantics (pattern, stability check,
 * versions) are in remoteFiles.ts.
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

export const sftpOps: ConnectorOp[] = fileOps({
	transport: 'sftp',
	withSession: (_args, context, work) =>
		withSession(context, (session, where) => work(fileSession(session, where))),
});

/** The SFTP session as the file ops use it, each failure naming the server and the path. */
function fileSession(session: SftpSession, where: string): FileSession {
	const fail = (path: string) => (error: unknown) => {
		throw describeFailure(error, where, path);
	};
	return {
		where,
		list: async (folder) =>
			(await session.list(folder).catch(fail(folder))).map((entry) => ({
				name: entry.name,
				type: entry.type === 'd' ? 'folder' : entry.type === '-' ? 'file' : 'other',
				size: entry.size,
				mtimeMs: entry.modifyTime,
			})),
		async stat(path) {
			const stats = await session.stat(path).catch(fail(path));
			if (!stats.isFile)
				throw new ConnectorError(`SFTP path ${JSON.stringify(path)} at ${where} is not a file`);
			return { size: stats.size, mtimeMs: stats.modifyTime };
		},
		read: async (path, sink) => {
			await session.get(path, sink).catch(fail(path));
		},
		exists: async (path) => Boolean(await session.exists(path)),
		makeFolder: async (path) => {
			await session.mkdir(path, true).catch(fail(path));
		},
		rename: async (from, to) => {
			await session.rename(from, to).catch(fail(from));
		},
		delete: async (path) => {
			await session.delete(path).catch(fail(path));
		},
	};
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
	const network = unreachable('SFTP connection', where, error);
	if (network) return network;
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
	const network = unreachable(`SFTP session${on}`, where, error);
	if (network) return network;
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
