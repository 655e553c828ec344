import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { SftpConnection } from '../../core/connectors/types';
import { freePort } from './net';
import { ensureUser, greets, serverDir, UserFilesServer } from './userFilesServer';

const SSHD = '/usr/sbin/sshd';

/**
 * A real OpenSSH sshd with its SFTP subsystem for tests: its own config, host key, log and a user of
 * its own, in a temp dir (never /etc/ssh), on a loopback port. The user (made with useradd, so the
 * harness must run as root, as CI does) logs in with a password or with a key in the dir's
 * authorized_keys; its home is the `files` folder, which the tests fill directly on disk.
 */
export class Sshd extends UserFilesServer {
	private constructor(
		process: ChildProcess,
		dir: string,
		port: number,
		user: string,
		password: string,
		/** The user's private key (OpenSSH ed25519, no passphrase). */
		readonly privateKey: string,
		owner: { uid: number; gid: number },
	) {
		super(process, dir, 'sshd.log', port, user, password, owner);
	}

	// One system user per test process: lanes side by side must not move each other's home.
	static async start({ user = `sftptest${process.pid}` }: { user?: string } = {}): Promise<Sshd> {
		const dir = serverDir(SSHD, 'sshd', 'openssh-server');
		const port = await freePort();
		// One user for every server the tests start, so one password.
		const password = 'sftp-test-password';
		const owner = ensureUser(user, join(dir, 'files'), password, '/usr/sbin/nologin');
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
		await sshd.ready(`sshd's banner on port ${port}`, () => greets(port, 'SSH-'));
		return sshd;
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
}
