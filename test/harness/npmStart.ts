import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
	existsSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	readlinkSync,
	realpathSync,
	symlinkSync,
	utimesSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { isAlive } from '../../scripts/leftovers';
import { waitFor } from './net';
import { n8nInstallDir, repoRoot } from './paths';

/*
 * `npm start` run as a user runs it, for the start script's suites (test/e2e/startScript*.test.ts), on a
 * fresh clone of this repository that reuses this checkout's pinned n8n install (.cache/n8n-<version>),
 * Node 24 toolchain (.toolchain) and node_modules through symlinks, so the tests do not spend minutes
 * and gigabytes installing them again; everything else (build, pack, install into n8n, the n8n data) is
 * the clone's. A clone holds the committed HEAD: uncommitted changes to the start script are not tested.
 */

export interface Run {
	child: ChildProcess;
	output: () => string;
	exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface RunState {
	start: { pid: number };
	children: Array<{ name: string; pid: number; dir?: string }>;
}

export interface StartRun extends Run {
	/** Resolves once npm start prints the editor URL; rejects if it exits first. */
	ready: Promise<void>;
}

/** `npm start <args>` in its own process group, as a terminal runs it. */
export function spawnStart(clone: string, env: NodeJS.ProcessEnv, args: string[]): StartRun {
	const child = spawn('npm', ['start', ...args], {
		cwd: clone,
		env,
		detached: true,
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let output = '';
	const exited = once(child, 'exit').then(([code, signal]) => ({
		code: code as number | null,
		signal: signal as NodeJS.Signals | null,
	}));
	const ready = new Promise<void>((resolve, reject) => {
		const onData = (chunk: Buffer) => {
			output += chunk.toString();
			if (/Editor(?: \(main\))?:\s+http:\/\/localhost:\d+/.test(output)) resolve();
		};
		child.stdout?.on('data', onData);
		child.stderr?.on('data', onData);
		void exited.then(({ code, signal }) =>
			reject(new Error(`npm start exited (${signal ?? code}) before it was ready:\n${output}`)),
		);
	});
	ready.catch(() => undefined);
	return { child, output: () => output, exited, ready };
}

export function readRunState(folder: string): RunState | undefined {
	const file = join(folder, 'npm-start.json');
	return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as RunState) : undefined;
}

/**
 * A request to n8n, asked again while n8n answers 503 "Database is not ready!" (for at most 2
 * minutes): n8n answers so while a ping of its database fails, which on a busy machine can happen
 * after it was ready; a user would try again.
 */
export async function untilDatabaseReady(url: string, init: RequestInit = {}): Promise<Response> {
	return await waitFor(
		`${url} to be answered with the database ready`,
		async () => {
			const response = await fetch(url, init);
			if (response.status !== 503) return response;
			const text = await response.text();
			if (!text.includes('Database is not ready'))
				return new Response(text, { status: response.status, headers: response.headers });
			return undefined;
		},
		{ timeoutMs: 120_000, intervalMs: 1_000 },
	);
}

/** Logs the owner in (the login npm start prints) and returns the session cookie. */
export async function loginCookie(base: string): Promise<string> {
	const response = await untilDatabaseReady(`${base}/rest/login`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({
			emailOrLdapLoginId: 'owner@example.com',
			password: 'Durable-Triggers-1',
		}),
	});
	expect(response.status).toBe(200);
	return response.headers
		.getSetCookie()
		.map((cookie) => cookie.split(';')[0])
		.join('; ');
}

/**
 * Live processes that name `dir` in their command line, environment or working directory: everything
 * npm start runs in a clone (npm and tsx run in it, n8n's user folders and Postgres' and Redis' data
 * folders are in it), and what those start (task runners inherit the environment). Not this test.
 */
export function processesOf(dir: string): number[] {
	const found: number[] = [];
	const names = (text: string) =>
		text.includes(`${dir}/`) || text.includes(`${dir}\0`) || text.endsWith(dir);
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry) || Number(entry) === process.pid || !isAlive(Number(entry))) continue;
		const read = (file: string) => {
			try {
				return readFileSync(`/proc/${entry}/${file}`, 'utf8');
			} catch {
				return '';
			}
		};
		let cwd = '';
		try {
			cwd = readlinkSync(`/proc/${entry}/cwd`);
		} catch {
			// gone, or not readable
		}
		if (names(read('cmdline')) || names(read('environ')) || names(cwd)) found.push(Number(entry));
	}
	return found;
}

export function describeProcess(pid: number): string {
	try {
		return `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')}`;
	} catch {
		return `${pid}: (gone)`;
	}
}

/**
 * A fresh clone of this repository's HEAD that reuses this checkout's pinned n8n install, Node 24
 * toolchain and node_modules through symlinks (see the comment at the top).
 */
export function makeClone(): string {
	const clone = mkdtempSync(join(tmpdir(), 'durable-triggers-clone-'));
	execFileSync('git', ['clone', '--quiet', repoRoot, clone], {
		stdio: ['ignore', 'ignore', 'inherit'],
	});
	execFileSync('mkdir', ['-p', join(clone, '.cache')]);
	symlinkSync(realpathSync(n8nInstallDir), join(clone, '.cache', n8nInstallDir.split('/').pop()!));
	symlinkSync(realpathSync(join(repoRoot, 'node_modules')), join(clone, 'node_modules'));
	if (existsSync(join(repoRoot, '.toolchain')))
		symlinkSync(realpathSync(join(repoRoot, '.toolchain')), join(clone, '.toolchain'));
	// The shared node_modules is installed for this lockfile; a clone's fresh timestamps would make
	// scripts/toolchain.sh reinstall it.
	const past = new Date('2000-01-01T00:00:00Z');
	for (const file of ['package.json', 'package-lock.json'])
		utimesSync(join(clone, file), past, past);
	return clone;
}

export function signalGroup(pid: number, signal: NodeJS.Signals): void {
	try {
		process.kill(-pid, signal);
	} catch {
		// the group is gone already
	}
}

/** Live processes whose process group is one of `groups`. */
export function processesInGroups(groups: number[]): string[] {
	const found: string[] = [];
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
			const [state, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
			if (state !== 'Z' && groups.includes(Number(group)))
				found.push(
					`${entry}: ${readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ')}`,
				);
		} catch {
			// ended while we looked
		}
	}
	return found;
}

export async function portIsFree(port: number): Promise<boolean> {
	const server = createServer();
	try {
		await new Promise<void>((resolve, reject) => {
			server.once('error', reject);
			server.listen(port, '127.0.0.1', resolve);
		});
		return true;
	} catch {
		return false;
	} finally {
		server.close();
	}
}
