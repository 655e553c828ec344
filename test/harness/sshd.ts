import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
	appendFileSync,
	chmodSync,
	chownSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readFileSync,
	rmSync,
	writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import type { SftpConnection } from '../../core/connectors/types';
import { freePort } from './net';
import { ServerProcess } from './serverProcess';

const SSHD = '/usr/sbin/sshd';

/**
 * A real OpenSSH sshd with its SFTP subsystem for tests: its own config, host key, log and a user of
 * its own, in a temp dir (never /etc/ssh), on a loopback port. The user (made with useradd, so the
 * harness must run as root, as CI does) logs in with a password or with a key in the dir's
 * authorized_keys; its home is the `files` folder, which the tests fill directly on disk.
 */
export class Sshd extends ServerProcess {
	readonly host = '127.0.0.1';

	private constructor(
		process: ChildProcess,
		dir: string,
		readonly port: number,
		readonly user: string,
		readonly password: string,
		/** The user's private key (OpenSSH ed25519, no passphrase). */
		readonly privateKey: string,
		private readonly owner: { uid: number; gid: number },
	) {
		super(process, dir, 'sshd.log');
	}

	static async start({ user = 'sftptest' }: { user?: string } = {}): Promise<Sshd> {
		if (!existsSync(SSHD))
			throw new Error(
				"No OpenSSH server was found: install it with `apt-get install openssh-server` (CI's .ci/run does).",
			);
		if (process.getuid?.() !== 0)
			throw new Error('The sshd harness adds a system user for its logins, which needs root');
		const port = await freePort();
		const dir = mkdtempSync(join(tmpdir(), 'sshd-test-'));
		chmodSync(dir, 0o755);
		// One user for every server the tests start, so one password.
		const password = 'sftp-test-password';
		const files = join(dir, 'files');
		mkdirSync(files);
		ensureUser(user, files, password);
		const owner = {
			uid: Number(execFileSync('id', ['-u', user]).toString().trim()),
			gid: Number(execFileSync('id', ['-g', user]).toString().trim()),
		};
		chownSync(files, owner.uid, owner.gid);
		execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_key')]);
		execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'user_key')]);
		writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'user_key.pub')));
		chmodSync(join(dir, 'authorized_keys'), 0o644);
		// sshd's privilege separation needs this directory to exist.
		mkdirSync('/run/sshd', { recursive: true });
		const config = join(dir, 'sshd_config');
		writeFileSync(
			config,
			[
				`Port ${port}`,
				'ListenAddress 127.0.0.1',
				`HostKey ${join(dir, 'host_key')}`,
				`PidFile ${join(dir, 'sshd.pid')}`,
				`AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
				'PasswordAuthentication yes',
				'KbdInteractiveAuthentication no',
				'PubkeyAuthentication yes',
				'UsePAM no',
				'StrictModes no',
				'LogLevel INFO',
				// Many short sessions in a burst: no limit on unauthenticated connections for the tests.
				'MaxStartups 100',
				`AllowUsers ${user}`,
				'Subsystem sftp internal-sftp',
				'ForceCommand internal-sftp',
				'',
			].join('\n'),
		);
		// -D: in the foreground, so the harness owns the process; -E: the log the tests count logins in.
		const child = spawn(SSHD, ['-D', '-f', config, '-E', join(dir, 'sshd.log')], {
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		const sshd = new Sshd(
			child,
			dir,
			port,
			user,
			password,
			readFileSync(join(dir, 'user_key'), 'utf8'),
			owner,
		);
		await sshd.ready(`sshd's banner on port ${port}`, () => banner(port));
		return sshd;
	}

	/** The folder the user's logins see as their home; `path('in/a.csv')` is a file's path on disk. */
	path(relative = ''): string {
		return join(this.dir, 'files', relative);
	}

	/** Writes (or appends to) a file as the SFTP user would own it, making its folders. */
	write(relative: string, content: string | Buffer, { append = false } = {}): void {
		const path = this.path(relative);
		this.mkdir(dirname(relative));
		if (append) appendFileSync(path, content);
		else writeFileSync(path, content);
		chownSync(path, this.owner.uid, this.owner.gid);
	}

	mkdir(relative: string): void {
		let current = this.path();
		for (const part of relative.split('/').filter((p) => p && p !== '.')) {
			current = join(current, part);
			if (!existsSync(current)) {
				mkdirSync(current);
				chownSync(current, this.owner.uid, this.owner.gid);
			}
		}
	}

	remove(relative: string): void {
		rmSync(this.path(relative), { force: true });
	}

	exists(relative: string): boolean {
		return existsSync(this.path(relative));
	}

	connection(auth: 'password' | 'key' = 'password'): SftpConnection {
		const base = { host: this.host, port: this.port, username: this.user };
		return auth === 'password'
			? { ...base, password: this.password }
			: { ...base, privateKey: this.privateKey };
	}

	/** The fields of an n8n `sftp` credential that logs in with the user's password. */
	credential(): Record<string, unknown> {
		return { ...this.connection(), privateKey: '', passphrase: '' };
	}

	/** How many times the user has logged in: each SFTP op call (a poll, a move) is one login. */
	logins(): number {
		return this.count(/^Accepted (password|publickey) for /);
	}

	/** How many of the user's sessions have ended: a poll's session ends after its listing. */
	sessionsEnded(): number {
		return this.count(/Disconnected from user /);
	}

	private count(line: RegExp): number {
		return this.log()
			.split('\n')
			.filter((text) => line.test(text)).length;
	}
}

/** A system user of the tests' own (no shell), with `home` and `password`; made once per machine. */
function ensureUser(user: string, home: string, password: string): void {
	try {
		execFileSync('id', ['-u', user], { stdio: 'ignore' });
		execFileSync('usermod', ['-d', home, user]);
	} catch {
		execFileSync('useradd', ['-M', '-d', home, '-s', '/usr/sbin/nologin', user]);
	}
	execFileSync('chpasswd', { input: `${user}:${password}\n` });
}

/** Resolves true once something on `port` sends an SSH banner. */
async function banner(port: number): Promise<true | undefined> {
	return await new Promise((resolve) => {
		const socket = connect(port, '127.0.0.1');
		socket.setTimeout(1000);
		socket.once('data', (data) => {
			socket.destroy();
			resolve(data.toString().startsWith('SSH-') ? true : undefined);
		});
		socket.once('error', () => resolve(undefined));
		socket.once('timeout', () => {
			socket.destroy();
			resolve(undefined);
		});
	});
}
