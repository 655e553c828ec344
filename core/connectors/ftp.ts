import type { Writable } from 'node:stream';

import { Client, type FileInfo, FileType } from 'basic-ftp';

import { type Clock, systemClock } from '../clock';
import { type FileSession, fileOps } from './fileOps';
import { type FtpSecurity, type FtpTls, listTime, securityArgs } from './ftpListing';
import { unreachable } from './network';
import { type FolderEntry, joinPath } from './remoteFiles';
import { ConnectorError, type ConnectorOp, type FtpConnection, type OpContext } from './types';

/**
 * The FTP ops: `ftp.list`, `ftp.download`, `ftp.move` and `ftp.delete`, with `sftp.*`'s semantics
 * (fileOps.ts, remoteFiles.ts) over plain FTP or FTPS (`tls` in With). Each call is one short session with
 * basic-ftp, passive mode; a poll holds no connection between polls.
 */

/** Connect and per-call timeout when the caller sets none: a poll must not hang on a silent server. */
const DEFAULT_TIMEOUT_MS = 30_000;

/** The part of basic-ftp's client the ops use. */
export type FtpClient = Pick<
	Client,
	| 'access'
	| 'close'
	| 'features'
	| 'pwd'
	| 'cd'
	| 'list'
	| 'size'
	| 'lastMod'
	| 'downloadTo'
	| 'rename'
	| 'remove'
	| 'ensureDir'
>;

/** The server's reply to a refused command (basic-ftp's FTPError): `code` 530, message "530 Login incorrect.". */
interface FtpReply {
	code?: number | string;
	message?: string;
}

const replyOf = (error: unknown): FtpReply =>
	typeof error === 'object' && error !== null ? (error as FtpReply) : { message: String(error) };

/** The server refused the command for that path (550: no such file or folder, or no permission). */
const refusedPath = (error: unknown) => replyOf(error).code === 550;

/** One logged-in session: paths relative to the login folder, failures naming host:port and the path. */
class FtpSession implements FileSession {
	constructor(
		private readonly client: FtpClient,
		readonly where: string,
		private readonly home: string,
		private readonly now: () => number,
	) {}

	/** The path from the root: the session's working folder moves (CWD), the login folder does not. */
	private absolute(path: string): string {
		return path.startsWith('/') ? path : joinPath(this.home, path);
	}

	/** The server's reply to a command on `path`, as an error naming both. */
	private failure(action: string, path: string) {
		return (error: unknown): never => {
			const { code, message } = replyOf(error);
			const network = unreachable(`FTP ${action} ${JSON.stringify(path)}`, this.where, error);
			if (network) throw network;
			throw new ConnectorError(
				`FTP ${action} ${JSON.stringify(path)} at ${this.where} failed: ${message ?? 'unknown error'}`,
				{ status: typeof code === 'number' ? code : undefined },
			);
		};
	}

	/** CWD first: vsftpd answers LIST of a missing folder with an empty listing, CWD with 550. */
	async list(folder: string): Promise<FolderEntry[]> {
		const entries = await this.client
			.cd(this.absolute(folder))
			.then(() => this.client.list())
			.catch(this.failure('list of folder', folder));
		return entries.map((entry) => this.entry(entry, folder));
	}

	private entry(entry: FileInfo, folder: string): FolderEntry {
		const type =
			entry.type === FileType.File
				? 'file'
				: entry.type === FileType.Directory
					? 'folder'
					: 'other';
		const base = { name: entry.name, type, size: entry.size } as const;
		if (entry.modifiedAt) return { ...base, mtimeMs: entry.modifiedAt.getTime() };
		if (type !== 'file') return { ...base, mtimeMs: 0 };
		const time = listTime(entry.rawModifiedAt, this.now());
		if (!time)
			throw new ConnectorError(
				`FTP listing of ${JSON.stringify(folder)} at ${this.where} gives ${JSON.stringify(entry.name)} a time this package cannot read: ${JSON.stringify(entry.rawModifiedAt)}`,
			);
		return { ...base, ...time };
	}

	async listingFacts() {
		// RFC 3659: MLST announces MLSD, whose times are exact; otherwise they come from LIST.
		return { timesFrom: (await this.client.features()).has('MLST') ? 'MLSD' : 'LIST' };
	}

	/** SIZE (550 for a missing file or a folder), and MDTM, which is optional in FTP (RFC 3659). */
	async stat(path: string) {
		const size = await this.client.size(this.absolute(path)).catch(this.failure('read of', path));
		const mtimeMs = await this.client.lastMod(this.absolute(path)).then(
			(date) => date.getTime(),
			(error: unknown) => {
				if (typeof replyOf(error).code === 'number') return undefined;
				throw error;
			},
		);
		return { size, mtimeMs };
	}

	async read(path: string, sink: Writable) {
		await this.client.downloadTo(sink, this.absolute(path)).catch(this.failure('read of', path));
	}

	/** Whether `path` is a folder (CWD) or a file (SIZE); 550 to both: neither. */
	async exists(path: string): Promise<boolean> {
		for (const probe of [
			() => this.client.size(this.absolute(path)),
			() => this.client.cd(this.absolute(path)),
		]) {
			const found = await probe().then(
				() => true,
				(error: unknown) => {
					if (refusedPath(error)) return false;
					return this.failure('look-up of', path)(error);
				},
			);
			if (found) return true;
		}
		return false;
	}

	async makeFolder(path: string) {
		// MKD of each part; the CWD at its end fails if the folder could not be made.
		await this.client
			.ensureDir(this.absolute(path))
			.catch(this.failure('creation of folder', path));
	}

	async rename(from: string, to: string) {
		await this.client
			.rename(this.absolute(from), this.absolute(to))
			.catch(this.failure('move of', from));
	}

	async delete(path: string) {
		await this.client.remove(this.absolute(path)).catch(this.failure('delete of', path));
	}
}

export const ftpOps: ConnectorOp[] = fileOps({
	transport: 'ftp',
	checkArgs: securityArgs,
	withSession: (args, context, work) => withSession(context, securityArgs(args), work),
});

/**
 * Logs in as the credential says, plain FTP first; when the server refuses a plain login (530/534:
 * it requires TLS) again with explicit TLS, the certificate not checked. Resolves with how it got in.
 */
export async function checkFtpLogin(ftp: FtpConnection, timeoutMs: number): Promise<FtpTls> {
	const context = { memory: {}, ftp, timeoutMs };
	const loggedIn = async () => undefined;
	try {
		await withSession(context, { tls: 'none', allowSelfSigned: false }, loggedIn);
		return 'none';
	} catch (plain) {
		const code = plain instanceof ConnectorError ? plain.details.status : undefined;
		if (code !== 530 && code !== 534) throw plain;
		try {
			await withSession(context, { tls: 'explicit', allowSelfSigned: true }, loggedIn);
			return 'explicit';
		} catch (secured) {
			// A wrong password is best told by the plain attempt, unless that one asked for TLS.
			throw asksForTls(plain) ? secured : plain;
		}
	}
}

const TLS_REQUIRED = /set "tls"/;
const asksForTls = (error: unknown) => error instanceof Error && TLS_REQUIRED.test(error.message);

/**
 * One session: connect, log in, work, and always close, also on error, timeout and abort. basic-ftp
 * has no AbortSignal: `close()` ends its sockets at once and fails the command in flight.
 */
async function withSession<T>(
	context: OpContext,
	security: FtpSecurity,
	work: (session: FtpSession) => Promise<T>,
): Promise<T> {
	const settings = context.ftp;
	if (!settings) throw new Error('The FTP ops need FTP connection settings');
	const where = `${settings.host}:${settings.port}`;
	if (context.signal?.aborted)
		throw new ConnectorError(`FTP call to ${where} was aborted before it started`);
	const clock: Clock = context.clock ?? systemClock;
	const timeoutMs = context.timeoutMs ?? DEFAULT_TIMEOUT_MS;
	const client: FtpClient = new Client(timeoutMs);
	let stopped: string | undefined;
	const stop = (reason: string) => {
		stopped = reason;
		client.close();
	};
	const abort = () => stop('was aborted');
	const timer = clock.setTimer(() => stop(`did not finish within ${timeoutMs} ms`), timeoutMs);
	context.signal?.addEventListener('abort', abort, { once: true });
	try {
		const home = await logIn(client, settings, security, where);
		return await work(new FtpSession(client, where, home, () => clock.now()));
	} catch (error) {
		if (stopped) throw new ConnectorError(`FTP call to ${where} ${stopped}`);
		throw error instanceof ConnectorError
			? error
			: (unreachable('FTP session', where, error) ??
					new ConnectorError(
						`FTP error at ${where}: ${replyOf(error).message ?? 'unknown error'}`,
					));
	} finally {
		timer.cancel();
		context.signal?.removeEventListener('abort', abort);
		client.close();
	}
}

/** Connects and logs in; resolves with the login folder (PWD). */
async function logIn(
	client: FtpClient,
	settings: FtpConnection,
	{ tls, allowSelfSigned }: FtpSecurity,
	where: string,
): Promise<string> {
	try {
		await client.access({
			host: settings.host,
			port: settings.port,
			user: settings.username,
			password: settings.password,
			secure: tls === 'none' ? false : tls === 'explicit' ? true : 'implicit',
			secureOptions: { rejectUnauthorized: !allowSelfSigned },
		});
		return await client.pwd();
	} catch (error) {
		throw describeLoginFailure(error, settings, tls, where);
	}
}

/** Certificate checks that fail for a self-signed or privately issued certificate (Node's TLS codes). */
const UNTRUSTED_CERTIFICATE =
	/^(DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|ERR_TLS_CERT_ALTNAME_INVALID)$/;

/** A failed connect or login, in words that say what to fix. */
function describeLoginFailure(
	error: unknown,
	settings: FtpConnection,
	tls: FtpTls,
	where: string,
): ConnectorError {
	const { code, message = '' } = replyOf(error);
	const status = typeof code === 'number' ? code : undefined;
	// vsftpd: "530 Non-anonymous sessions must use encryption."; others 534 or 530 "... SSL/TLS required".
	if (tls === 'none' && (code === 534 || (code === 530 && /encrypt|TLS|SSL|secur/i.test(message))))
		return new ConnectorError(
			`FTP server at ${where} requires TLS (${message}): set "tls" to "explicit" (or "implicit" for port 990) in With`,
			{ status },
		);
	if (code === 530)
		return new ConnectorError(
			`FTP login failed for user ${JSON.stringify(settings.username)} at ${where}: ${message} (check the username and password)`,
			{ status },
		);
	const network = unreachable('FTP connection', where, error);
	if (network) return network;
	if (typeof code === 'string' && UNTRUSTED_CERTIFICATE.test(code))
		return new ConnectorError(
			`FTP server at ${where} has a certificate that does not verify (${message}): set "allowSelfSigned" to true in With if you trust this server`,
		);
	if (/^Timeout/.test(message))
		return new ConnectorError(`FTP server at ${where} did not answer in time (${message})`);
	return new ConnectorError(`FTP connection to ${where} failed: ${message}`, { status });
}
