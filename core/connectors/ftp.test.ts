import { Writable } from 'node:stream';

import { Client, FileType } from 'basic-ftp';

import { FakeClock } from '../../test/support/fakeClock';
import { checkFtpLogin, ftpOps } from './ftp';
import type { RemoteFile } from './remoteFiles';
import type { OpContext, OpMemory } from './types';

/*
 * The FTP ops over a fake basic-ftp client that answers as vsftpd does (LIST times to the minute, no
 * MLSD unless told, 550 for a missing path, close() failing the command in flight). The ops against a
 * real vsftpd: test/e2e/ftpSource.test.ts.
 */
jest.mock('basic-ftp', () => ({ ...jest.requireActual('basic-ftp'), Client: jest.fn() }));

const reply = (code: number, message: string) => Object.assign(new Error(message), { code });
const MISSING = () => reply(550, '550 Failed to change directory.');

interface FakeFile {
	size: number;
	/** As vsftpd's LIST prints it. */
	raw: string;
	/** With MLSD: the exact time. */
	exact?: Date;
	content?: string;
}

class FakeServer {
	files = new Map<string, FakeFile>();
	folders = new Set(['/', '/in']);
	mlsd = false;
	/** The reply to a login with these settings, when it is refused. */
	refuseLogin?: (secure: unknown) => Error | undefined;
	holdConnects = false;
	/** Commands in order, e.g. "CWD /in", "LIST". */
	log: string[] = [];
	/** TLS options of each login. */
	logins: Array<{ secure: unknown; rejectUnauthorized: unknown }> = [];
	open = 0;

	client() {
		let cwd = '/';
		let closed = false;
		let failInFlight: ((error: Error) => void) | undefined;
		const server = this;
		const command = async <T>(line: string, answer: () => T | Promise<T>): Promise<T> => {
			if (closed) throw new Error('Client is closed');
			server.log.push(line);
			return await answer();
		};
		const file = (path: string) => {
			const found = server.files.get(path);
			if (!found) throw reply(550, '550 Could not get file size.');
			return found;
		};
		return {
			access: async (options: {
				secure: unknown;
				secureOptions: { rejectUnauthorized: unknown };
			}) => {
				server.open++;
				if (server.holdConnects) await new Promise((_, reject) => (failInFlight = reject));
				server.logins.push({
					secure: options.secure,
					rejectUnauthorized: options.secureOptions.rejectUnauthorized,
				});
				const refused = server.refuseLogin?.(options.secure);
				if (refused) throw refused;
			},
			close: () => {
				if (!closed) server.open--;
				closed = true;
				failInFlight?.(new Error('User closed client during task'));
			},
			features: () =>
				command('FEAT', () => new Map(server.mlsd ? [['MLST', 'type*;size*;modify*;']] : [])),
			pwd: () => command('PWD', () => '/'),
			cd: (path: string) =>
				command(`CWD ${path}`, () => {
					if (!server.folders.has(path)) throw MISSING();
					cwd = path;
				}),
			list: () =>
				command('LIST', () => {
					const inFolder = (path: string) =>
						path.startsWith(`${cwd}/`) && !path.slice(cwd.length + 1).includes('/');
					return [
						...[...server.folders].filter(inFolder).map((path) => ({
							name: path.slice(cwd.length + 1),
							type: FileType.Directory,
							size: 4096,
							rawModifiedAt: 'Dec 01 10:00',
						})),
						...[...server.files]
							.filter(([path]) => inFolder(path))
							.map(([path, found]) => ({
								name: path.slice(cwd.length + 1),
								type: FileType.File,
								size: found.size,
								rawModifiedAt: found.raw,
								modifiedAt: server.mlsd ? found.exact : undefined,
							})),
					];
				}),
			size: (path: string) => command(`SIZE ${path}`, () => file(path).size),
			lastMod: (path: string) => command(`MDTM ${path}`, () => file(path).exact ?? new Date(0)),
			downloadTo: (sink: Writable, path: string) =>
				command(
					`RETR ${path}`,
					() =>
						new Promise<void>((resolve, reject) => {
							sink.on('error', reject);
							sink.end(file(path).content ?? '', resolve);
						}),
				),
			rename: (from: string, to: string) =>
				command(`RNFR ${from} RNTO ${to}`, () => {
					server.files.set(to, file(from));
					server.files.delete(from);
				}),
			remove: (path: string) =>
				command(`DELE ${path}`, () => server.files.delete(file(path) && path)),
			ensureDir: (path: string) =>
				command(`MKD ${path}`, () => {
					server.folders.add(path);
				}),
		};
	}
}

const op = (name: string) => ftpOps.find((candidate) => candidate.name === name)!;
const ftp = { host: 'files.test', port: 21, username: 'partner', password: 'pw' };

let server: FakeServer;
beforeEach(() => {
	server = new FakeServer();
	jest.mocked(Client).mockImplementation(() => server.client() as unknown as Client);
});

/** What an op answered, or the message it failed with. */
async function outcome(
	name: string,
	args: Record<string, unknown>,
	context: Partial<OpContext> = {},
) {
	return await op(name)
		.run(args, { memory: {}, ftp, ...context })
		.then(
			(result) => (result.kind === 'data' ? result : undefined),
			(error: Error) => error.message,
		);
}

describe('ftp.list', () => {
	const clock = new FakeClock(Date.UTC(2026, 11, 3, 11, 21, 30));

	async function listAt(memory: OpMemory, args: Record<string, unknown> = {}) {
		const result = await op('ftp.list').run({ folder: '/in', ...args }, { memory, ftp, clock });
		if (result.kind !== 'data') throw new Error(result.kind);
		const data = result.data as { files: RemoteFile[]; uploading: RemoteFile[]; timesFrom: string };
		return { ...data, memory: result.memory ?? {} };
	}

	it('reads LIST times as UTC minutes, changes into each folder before listing it, and settles as sftp.list does', async () => {
		server.files.set('/in/orders.csv', { size: 2000, raw: 'Dec 03 11:21' });
		server.folders.add('/in/sub');
		server.files.set('/in/sub/deep.csv', { size: 1, raw: 'Mar 01 2026' });
		const first = await listAt({}, { recursive: true });
		expect(first.timesFrom).toBe('LIST');
		expect(first.uploading.map((file) => [file.path, file.modifiedAt])).toEqual([
			['/in/sub/deep.csv', '2026-03-01T00:00:00.000Z'],
			['/in/orders.csv', '2026-12-03T11:21:00.000Z'],
		]);
		expect(server.log.filter((line) => /^(CWD|LIST)/.test(line))).toEqual([
			'CWD /in',
			'LIST',
			'CWD /in/sub',
			'LIST',
		]);
		// Still growing a minute later: waits again; unchanged for another minute: finished.
		server.files.set('/in/orders.csv', { size: 4000, raw: 'Dec 03 11:22' });
		await clock.advance(60_000);
		const second = await listAt(first.memory);
		expect(second.files).toEqual([]);
		await clock.advance(60_000);
		expect((await listAt(second.memory)).files.map((file) => file.name)).toEqual(['orders.csv']);
	});

	it('finishedAfterSec judges a LIST time by the end of its minute: never too early', async () => {
		const at = new FakeClock(Date.UTC(2026, 11, 3, 11, 31, 30));
		server.files.set('/in/a.csv', { size: 10, raw: 'Dec 03 11:21' });
		const run = () =>
			op('ftp.list').run({ folder: '/in', finishedAfterSec: 600 }, { memory: {}, ftp, clock: at });
		// Written at 11:21:00 to 11:21:59; 600 s after its end is 11:31:59.999.
		expect(await run()).toMatchObject({ data: { files: [] } });
		await at.advance(30_000);
		expect(await run()).toMatchObject({ data: { files: [{ path: '/in/a.csv' }] } });
	});

	it('takes exact times from MLSD when the server offers it', async () => {
		server.mlsd = true;
		server.files.set('/in/a.csv', {
			size: 10,
			raw: '',
			exact: new Date('2026-12-03T11:20:07Z'),
		});
		const listed = await listAt({}, { finishedAfterSec: 60 });
		expect(listed.timesFrom).toBe('MLSD');
		expect(listed.files.map((file) => file.modifiedAt)).toEqual(['2026-12-03T11:20:07.000Z']);
	});

	it('a missing folder fails naming it, the server and its reply (vsftpd lists it as empty)', async () => {
		expect(await outcome('ftp.list', { folder: '/nowhere' })).toBe(
			'FTP list of folder "/nowhere" at files.test:21 failed: 550 Failed to change directory.',
		);
		expect(server.log).not.toContain('LIST');
	});

	it('a LIST time it cannot read fails naming the file and the text', async () => {
		server.files.set('/in/a.csv', { size: 1, raw: '12-03-26  11:21AM' });
		expect(await outcome('ftp.list', { folder: '/in' })).toBe(
			'FTP listing of "/in" at files.test:21 gives "a.csv" a time this package cannot read: "12-03-26  11:21AM"',
		);
	});

	it('a relative folder is under the login folder, whatever folder the session is in', async () => {
		server.files.set('/in/a.csv', { size: 1, raw: 'Dec 03 11:21' });
		const listed = await listAt({}, { folder: 'in', finishedAfterSec: 1 });
		expect(listed.files.map((file) => file.path)).toEqual(['in/a.csv']);
		expect(server.log).toContain('CWD /in');
	});
});

describe('ftp.download, ftp.move, ftp.delete', () => {
	beforeEach(() => {
		server.files.set('/in/a.csv', {
			size: 4,
			raw: 'Dec 03 11:21',
			exact: new Date('2026-12-03T11:21:05Z'),
			content: 'a,b\n',
		});
	});

	it('download: the file with its size and MDTM time; over maxBytes fails naming the limit', async () => {
		const result = await outcome('ftp.download', { path: '/in/a.csv' });
		expect(result).toMatchObject({
			data: { path: '/in/a.csv', size: 4, modifiedAt: '2026-12-03T11:21:05.000Z' },
			file: { fileName: 'a.csv' },
		});
		expect(typeof result === 'object' && result.file?.data.toString()).toBe('a,b\n');
		expect(await outcome('ftp.download', { path: '/in/a.csv', maxBytes: 3 })).toBe(
			'FTP file "/in/a.csv" at files.test:21 is 4 bytes, over the download limit "maxBytes" of 3',
		);
		expect(await outcome('ftp.download', { path: '/in/gone.csv' })).toBe(
			'FTP read of "/in/gone.csv" at files.test:21 failed: 550 Could not get file size.',
		);
	});

	it('move: creates the folder, moves, reports a file already gone, never overwrites', async () => {
		expect(
			await outcome('ftp.move', { path: ['/in/a.csv', '/in/gone.csv'], toFolder: '/processed' }),
		).toMatchObject({
			data: {
				toFolder: '/processed',
				moved: [{ from: '/in/a.csv', to: '/processed/a.csv' }],
				missing: ['/in/gone.csv'],
			},
		});
		expect([...server.files.keys()]).toEqual(['/processed/a.csv']);
		server.files.set('/in/a.csv', { size: 1, raw: 'Dec 03 11:22' });
		expect(await outcome('ftp.move', { path: '/in/a.csv', toFolder: '/processed' })).toBe(
			'FTP cannot move "/in/a.csv" at files.test:21: "/processed/a.csv" already exists',
		);
		expect(
			await outcome('ftp.move', { path: '/in/a.csv', toFolder: '/elsewhere', create: false }),
		).toBe(
			'FTP folder "/elsewhere" does not exist at files.test:21; create it, or set "create" to true',
		);
	});

	it('delete: deletes, and reports a file already gone', async () => {
		expect(await outcome('ftp.delete', { path: ['/in/a.csv', '/in/gone.csv'] })).toMatchObject({
			data: { deleted: ['/in/a.csv'], missing: ['/in/gone.csv'] },
		});
		expect(server.files.size).toBe(0);
	});
});

describe('logging in', () => {
	it('tls and allowSelfSigned in With decide the connection', async () => {
		await outcome('ftp.list', { folder: '/in', tls: 'explicit', allowSelfSigned: true });
		await outcome('ftp.list', { folder: '/in', tls: 'implicit' });
		await outcome('ftp.list', { folder: '/in' });
		expect(server.logins).toEqual([
			{ secure: true, rejectUnauthorized: false },
			{ secure: 'implicit', rejectUnauthorized: true },
			{ secure: false, rejectUnauthorized: true },
		]);
	});

	it('530 Login incorrect says to check the username and password', async () => {
		server.refuseLogin = () => reply(530, '530 Login incorrect.');
		expect(await outcome('ftp.list', { folder: '/in' })).toBe(
			'FTP login failed for user "partner" at files.test:21: 530 Login incorrect. (check the username and password)',
		);
	});

	it.each([
		[530, '530 Non-anonymous sessions must use encryption.'],
		[534, '534 Policy requires SSL.'],
	])('%s from a server that requires TLS says to set tls', async (code, message) => {
		server.refuseLogin = (secure) => (secure === false ? reply(code, message) : undefined);
		expect(await outcome('ftp.list', { folder: '/in' })).toBe(
			`FTP server at files.test:21 requires TLS (${message}): set "tls" to "explicit" (or "implicit" for port 990) in With`,
		);
	});

	it('an untrusted certificate says to set allowSelfSigned', async () => {
		server.refuseLogin = () =>
			Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
		expect(await outcome('ftp.list', { folder: '/in', tls: 'explicit' })).toBe(
			'FTP server at files.test:21 has a certificate that does not verify (self-signed certificate): set "allowSelfSigned" to true in With if you trust this server',
		);
	});

	describe('the credential test (checkFtpLogin)', () => {
		it('plain FTP when the server takes it', async () => {
			expect(await checkFtpLogin(ftp, 1000)).toBe('none');
			expect(server.log).toContain('PWD');
		});

		it('a server that requires TLS: again with explicit TLS, the certificate not checked', async () => {
			server.refuseLogin = (secure) =>
				secure === false
					? reply(530, '530 Non-anonymous sessions must use encryption.')
					: undefined;
			expect(await checkFtpLogin(ftp, 1000)).toBe('explicit');
			expect(server.logins.at(-1)).toEqual({ secure: true, rejectUnauthorized: false });
		});

		it('a wrong password is told by the plain attempt', async () => {
			server.refuseLogin = () => reply(530, '530 Login incorrect.');
			await expect(checkFtpLogin(ftp, 1000)).rejects.toThrow('530 Login incorrect.');
			expect(server.logins).toHaveLength(2);
		});
	});
});

describe('FTP sessions close whenever the call is stopped', () => {
	it('aborted while connecting: fails at once and closes the client', async () => {
		server.holdConnects = true;
		const stop = new AbortController();
		const call = outcome('ftp.list', { folder: '/in' }, { signal: stop.signal });
		stop.abort();
		expect(await call).toBe('FTP call to files.test:21 was aborted');
		expect(server.open).toBe(0);
	});

	it('timed out on the clock: fails naming the time and closes the client', async () => {
		server.holdConnects = true;
		const clock = new FakeClock();
		const call = outcome('ftp.list', { folder: '/in' }, { clock, timeoutMs: 5000 });
		await clock.advance(4999);
		expect(server.open).toBe(1);
		await clock.advance(1);
		expect(await call).toBe('FTP call to files.test:21 did not finish within 5000 ms');
		expect(server.open).toBe(0);
	});

	it('finished or failed, the client is closed', async () => {
		await outcome('ftp.list', { folder: '/in' });
		await outcome('ftp.list', { folder: '/nowhere' });
		expect(server.open).toBe(0);
	});
});
