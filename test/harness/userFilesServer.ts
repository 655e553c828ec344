import { type ChildProcess, execFileSync } from 'node:child_process';
import {
	appendFileSync,
	chmodSync,
	chownSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	rmSync,
	writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { ServerProcess } from './serverProcess';

/**
 * A file server the harness runs for one system user of the tests' own (sshd, vsftpd): the user's
 * home is the temp dir's `files` folder, which the tests fill directly on disk, owned by the user.
 */
export abstract class UserFilesServer extends ServerProcess {
	readonly host = '127.0.0.1';

	protected constructor(
		process: ChildProcess,
		dir: string,
		logName: string,
		readonly port: number,
		readonly user: string,
		readonly password: string,
		private readonly owner: { uid: number; gid: number },
	) {
		super(process, dir, logName);
	}

	/** The user's home on disk; `path('in/a.csv')` is a file's path on disk. */
	path(relative = ''): string {
		return join(this.dir, 'files', relative);
	}

	/** Writes (or appends to) a file as the user would own it, making its folders. */
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

	/** How many lines of the server's log match. */
	protected count(line: RegExp): number {
		return this.log()
			.split('\n')
			.filter((text) => line.test(text)).length;
	}
}

/**
 * A temp dir for a server's config, log and files, once the server is installed (`program`, from
 * Debian's `aptPackage`) and the harness runs as root (it adds a system user for the logins).
 */
export function serverDir(program: string, name: string, aptPackage: string): string {
	if (!existsSync(program))
		throw new Error(
			`No ${name} was found: install it with \`apt-get install ${aptPackage}\` (CI's .ci/run does).`,
		);
	if (process.getuid?.() !== 0)
		throw new Error(`The ${name} harness adds a system user for its logins, which needs root`);
	const dir = mkdtempSync(join(tmpdir(), `${name}-test-`));
	chmodSync(dir, 0o755);
	return dir;
}

/**
 * A system user of the tests' own with `home` (made, and owned by the user) and `password`; made
 * once per machine, moved to the new home on later starts. Resolves with its ids.
 */
export function ensureUser(
	user: string,
	home: string,
	password: string,
	shell: string,
): { uid: number; gid: number } {
	mkdirSync(home);
	try {
		execFileSync('id', ['-u', user], { stdio: 'ignore' });
		execFileSync('usermod', ['-d', home, '-s', shell, user]);
	} catch {
		execFileSync('useradd', ['-M', '-d', home, '-s', shell, user]);
	}
	execFileSync('chpasswd', { input: `${user}:${password}\n` });
	const owner = {
		uid: Number(execFileSync('id', ['-u', user]).toString().trim()),
		gid: Number(execFileSync('id', ['-g', user]).toString().trim()),
	};
	chownSync(home, owner.uid, owner.gid);
	return owner;
}

/** Resolves true once something on `port` greets with a line starting `prefix` (`SSH-`, `220`). */
export async function greets(port: number, prefix: string): Promise<true | undefined> {
	return await new Promise((resolve) => {
		const socket = connect(port, '127.0.0.1');
		socket.setTimeout(1000);
		socket.once('data', (data) => {
			socket.destroy();
			resolve(data.toString().startsWith(prefix) ? true : undefined);
		});
		socket.once('error', () => resolve(undefined));
		socket.once('timeout', () => {
			socket.destroy();
			resolve(undefined);
		});
	});
}
