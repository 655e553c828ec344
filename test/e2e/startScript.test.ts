import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
	chmodSync,
	existsSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	readlinkSync,
	realpathSync,
	rmSync,
	symlinkSync,
	utimesSync,
	writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { isAlive } from '../../scripts/leftovers';
import { dovecotBinary } from '../harness/dovecot';
import { FakeSystem } from '../harness/fakeSystem';
import { freePort, waitFor } from '../harness/net';
import { isN8n1, n8nInstallDir, PACK_DIR_ENV, repoRoot } from '../harness/paths';
import { queueServicesInstalled, stopQueueServices } from '../harness/queueServices';
import { marker, node, PACKAGE, workflow } from './workflowBuilder';

/*
 * `npm start` as a user runs it, on a fresh clone of this repository: started, stopped with Ctrl-C
 * (SIGINT to its whole process group, as a terminal sends it), started again after a code change, after
 * n8n was killed with SIGKILL, and after `npm start` itself was killed with SIGKILL. Each start must come
 * up with the same n8n data (same workflow ids, the same login), load the package as built by that start,
 * and each stop must leave no process and no port behind.
 *
 * The clone reuses this checkout's pinned n8n install (.cache/n8n-<version>), Node 24 toolchain
 * (.toolchain) and node_modules through symlinks, so the test does not spend minutes and gigabytes
 * installing them again; everything else (build, pack, install into n8n, the n8n data) is the clone's.
 * A clone holds the committed HEAD: uncommitted changes to the start script are not what this tests.
 */

interface Run {
	child: ChildProcess;
	output: () => string;
	exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface RunState {
	start: { pid: number };
	children: Array<{ name: string; pid: number; dir?: string }>;
}

const CONNECTOR_DESCRIPTION =
	'Runs a connector op (HTTP, IMAP, SQL, SFTP) of the Durable Triggers package as an action';
const CHANGED_DESCRIPTION = 'Runs a connector op, as changed by the npm start test';

describe('npm start on a fresh clone', () => {
	let clone: string;
	const ports = { n8n: 0, source: 0, imap: 0 };
	let run: Run | undefined;
	let firstWorkflowIds: string[] = [];
	const withMailbox = dovecotBinary() !== undefined;

	beforeAll(async () => {
		clone = makeClone();
		[ports.n8n, ports.source, ports.imap] = [await freePort(), await freePort(), await freePort()];
	});

	afterAll(async () => {
		// Whatever a failed test left running, so it does not outlive the test run.
		if (run && run.child.exitCode === null && run.child.signalCode === null)
			signalGroup(run.child.pid!, 'SIGKILL');
		for (const child of runState()?.children ?? []) signalGroup(child.pid, 'SIGKILL');
		if (clone && run) await run.exited.catch(() => undefined);
		if (clone) rmSync(clone, { recursive: true, force: true });
	});

	function runState(): RunState | undefined {
		const file = join(clone, '.n8n-dev', 'npm-start.json');
		return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as RunState) : undefined;
	}

	function startEnv(): NodeJS.ProcessEnv {
		const env: NodeJS.ProcessEnv = {
			...process.env,
			N8N_PORT: String(ports.n8n),
			DEMO_SOURCE_PORT: String(ports.source),
			DEMO_IMAP_PORT: String(ports.imap),
		};
		// Not this test run's: jest's NODE_ENV and the pack folder of this run's package.
		delete env.NODE_ENV;
		delete env[PACK_DIR_ENV];
		return env;
	}

	/** `npm start` in its own process group, as a terminal runs it; resolves once it prints the editor URL. */
	async function start(): Promise<Run> {
		const { ready, ...started } = spawnStart(clone, startEnv(), []);
		run = started;
		await ready;
		expect(run.output()).toContain(`Editor:       http://localhost:${ports.n8n}`);
		return run;
	}

	async function login(): Promise<string> {
		return await loginCookie(`http://127.0.0.1:${ports.n8n}`);
	}

	async function rest<T>(cookie: string, path: string): Promise<T> {
		const response = await fetch(`http://127.0.0.1:${ports.n8n}${path}`, {
			headers: { cookie, 'browser-id': 'start-test' },
		});
		expect(response.status).toBe(200);
		return (await response.json()) as T;
	}

	async function workflowIds(cookie: string): Promise<string[]> {
		const { data } = await rest<{ data: Array<{ id: string }> }>(cookie, '/rest/workflows');
		return data.map((workflow) => workflow.id).sort();
	}

	async function connectorDescription(cookie: string): Promise<string | undefined> {
		const types = await rest<Array<{ name: string; description: string }>>(
			cookie,
			'/types/nodes.json',
		);
		return types.find((type) => type.name === 'n8n-nodes-durable-triggers.connector')?.description;
	}

	/**
	 * Every port npm start used is free again, and none of its processes runs: neither npm start, n8n and
	 * Dovecot, nor anything they started (n8n's task runner, Dovecot's login and auth processes), which
	 * are in the process groups n8n and Dovecot lead.
	 */
	async function expectEverythingStopped(pids: number[]): Promise<void> {
		for (const port of withMailbox
			? [ports.n8n, ports.source, ports.imap]
			: [ports.n8n, ports.source])
			expect([port, await portIsFree(port)]).toEqual([port, true]);
		expect(pids.filter(isAlive)).toEqual([]);
		expect(processesInGroups([...pids, run!.child.pid!])).toEqual([]);
		expect(runState()).toBeUndefined();
	}

	/** The processes of the running start: npm start itself, n8n and Dovecot. */
	function runningPids(): number[] {
		const state = runState();
		expect(state?.children.map((child) => child.name).sort()).toEqual(
			withMailbox ? ['dovecot', 'n8n'] : ['n8n'],
		);
		return [state!.start.pid, ...state!.children.map((child) => child.pid)];
	}

	test('the first start comes up with the examples and the login, refuses a second start beside it, and Ctrl-C stops every process it started', async () => {
		const { exited, output } = await start();
		const cookie = await login();
		firstWorkflowIds = await workflowIds(cookie);
		const setup = JSON.parse(readFileSync(join(clone, '.n8n-dev', 'demo-setup.json'), 'utf8')) as {
			workflows: Record<string, string>;
		};
		expect(firstWorkflowIds).toEqual(Object.values(setup.workflows).sort());
		expect(firstWorkflowIds.length).toBeGreaterThanOrEqual(5);
		expect(await connectorDescription(cookie)).toBe(CONNECTOR_DESCRIPTION);
		const pids = runningPids();

		// A second npm start on the same folder is refused, and leaves the running one alone.
		const second = spawn('npm', ['start'], {
			cwd: clone,
			env: startEnv(),
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		let secondOutput = '';
		second.stdout?.on('data', (chunk: Buffer) => (secondOutput += chunk.toString()));
		second.stderr?.on('data', (chunk: Buffer) => (secondOutput += chunk.toString()));
		const [secondCode] = (await once(second, 'exit')) as [number | null];
		expect(secondCode).not.toBe(0);
		expect(secondOutput).toContain(
			`npm start is already running on ${join(clone, '.n8n-dev')} (pid ${pids[0]})`,
		);
		expect(runningPids()).toEqual(pids);
		expect(await workflowIds(await login())).toEqual(firstWorkflowIds);

		signalGroup(run!.child.pid!, 'SIGINT');
		await exited;
		expect(output()).toContain('stopping n8n and the demo systems');
		await expectEverythingStopped(pids);

		// n8n's port held by a program that is not the demo's: the start names it, leaves it alone,
		// and starts nothing.
		const squatter = createServer((socket) => socket.end());
		await new Promise<void>((resolve) => squatter.listen(ports.n8n, '127.0.0.1', resolve));
		try {
			const refused = spawnStart(clone, startEnv(), []);
			expect((await refused.exited).code).not.toBe(0);
			expect(refused.output()).toContain(
				`port ${ports.n8n} (N8N_PORT) is in use by pid ${process.pid}`,
			);
			expect(squatter.listening).toBe(true);
			expect(processesOf(clone).map(describeProcess)).toEqual([]);
			expect(runState()).toBeUndefined();
		} finally {
			await new Promise((resolve) => squatter.close(resolve));
		}
	}, 600_000);

	test('a second start after a code change loads the new code, with the same data; a SIGKILLed n8n stops npm start and everything with it', async () => {
		const connectorFile = join(clone, 'nodes', 'Connector', 'Connector.node.ts');
		writeFileSync(
			connectorFile,
			readFileSync(connectorFile, 'utf8').replace(
				`'${CONNECTOR_DESCRIPTION}'`,
				`'${CHANGED_DESCRIPTION}'`,
			),
		);
		const { exited, output } = await start();
		const cookie = await login();
		expect(await workflowIds(cookie)).toEqual(firstWorkflowIds);
		expect(await connectorDescription(cookie)).toBe(CHANGED_DESCRIPTION);
		const pids = runningPids();

		const n8nPid = runState()!.children.find((child) => child.name === 'n8n')!.pid;
		process.kill(n8nPid, 'SIGKILL');
		const { code } = await exited;
		expect(code).not.toBe(0);
		expect(output()).toContain('n8n exited unexpectedly (SIGKILL)');
		await expectEverythingStopped(pids);
	}, 600_000);

	test('after n8n was SIGKILLed, and after npm start itself was SIGKILLed, the next start comes up with the same data', async () => {
		const afterCrash = await start();
		expect(await workflowIds(await login())).toEqual(firstWorkflowIds);
		const leftBehind = runState()!.children;

		// A killed terminal: npm start dies at once; n8n and Dovecot, in their own process groups, run on.
		signalGroup(afterCrash.child.pid!, 'SIGKILL');
		await afterCrash.exited;
		expect(leftBehind.map((child) => child.pid).filter(isAlive)).toEqual(
			leftBehind.map((child) => child.pid),
		);

		const { exited, output } = await start();
		for (const child of leftBehind)
			expect(output()).toContain(
				`stopping the ${child.name} (pid ${child.pid}) an earlier npm start left running`,
			);
		expect(leftBehind.map((child) => child.pid).filter(isAlive)).toEqual([]);
		expect(processesInGroups(leftBehind.map((child) => child.pid))).toEqual([]);
		for (const child of leftBehind) if (child.dir) expect(existsSync(child.dir)).toBe(false);
		const cookie = await login();
		expect(await workflowIds(cookie)).toEqual(firstWorkflowIds);
		expect(await connectorDescription(cookie)).toBe(CHANGED_DESCRIPTION);
		const pids = runningPids();

		signalGroup(run!.child.pid!, 'SIGINT');
		await exited;
		await expectEverythingStopped(pids);
	}, 900_000);
});

/*
 * `npm start -- --queue` after a crash, as a user meets it (issue 21): the n8n main SIGKILLed during a
 * burst of Poll Trigger runs; a start that cannot have a port it needs; then `npm start -- --queue` twice
 * in a row, the first one's terminal killed in between. Each start that comes up must come up whole
 * (editor, login, the examples, the same data); one that fails, and one that ends, must leave no process
 * of the demo behind; the next start stops what a killed one left and says so.
 */
(queueServicesInstalled() ? describe : describe.skip)('npm start -- --queue after a crash', () => {
	let clone: string;
	let folder: string;
	const ports = { n8n: 0, webhook: 0, postgres: 0, redis: 0, source: 0, imap: 0 };
	const runs: StartRun[] = [];
	let source: FakeSystem | undefined;
	let squatter: Server | undefined;
	const withMailbox = dovecotBinary() !== undefined;

	beforeAll(async () => {
		clone = makeClone();
		// Postgres runs as the postgres user, which must reach its data folder inside the clone.
		chmodSync(clone, 0o755);
		folder = join(clone, '.n8n-dev-queue');
		for (const key of Object.keys(ports) as Array<keyof typeof ports>)
			ports[key] = await freePort();
	});

	afterAll(async () => {
		// Whatever a failed test left running, so it does not outlive the test run.
		for (const run of runs)
			if (run.child.exitCode === null && run.child.signalCode === null)
				signalGroup(run.child.pid!, 'SIGKILL');
		for (const run of runs) await run.exited.catch(() => undefined);
		for (const child of readRunState(folder)?.children ?? []) signalGroup(child.pid, 'SIGKILL');
		if (clone) {
			stopQueueServices(join(folder, 'services'));
			for (const pid of processesOf(clone)) signalGroup(pid, 'SIGKILL');
			rmSync(clone, { recursive: true, force: true });
		}
		await source?.close();
		if (squatter?.listening) await new Promise((resolve) => squatter!.close(resolve));
	});

	function startEnv(): NodeJS.ProcessEnv {
		const env: NodeJS.ProcessEnv = {
			...process.env,
			N8N_PORT: String(ports.n8n),
			N8N_WEBHOOK_PORT: String(ports.webhook),
			POSTGRES_PORT: String(ports.postgres),
			REDIS_PORT: String(ports.redis),
			DEMO_SOURCE_PORT: String(ports.source),
			DEMO_IMAP_PORT: String(ports.imap),
		};
		delete env.NODE_ENV;
		delete env[PACK_DIR_ENV];
		return env;
	}

	function start(): StartRun {
		const run = spawnStart(clone, startEnv(), ['--', '--queue']);
		runs.push(run);
		return run;
	}

	const base = () => `http://127.0.0.1:${ports.n8n}`;

	/** Comes up whole: the editor answers, the owner logs in, every example is there (the same ids). */
	async function expectUp(run: StartRun): Promise<string[]> {
		await run.ready;
		expect(run.output()).toContain(`Editor (main): http://localhost:${ports.n8n}`);
		expect((await fetch(`${base()}/`)).status).toBe(200);
		const cookie = await loginCookie(base());
		const { data } = (await (
			await untilDatabaseReady(`${base()}/rest/workflows`, {
				headers: { cookie, 'browser-id': 'start-test' },
			})
		).json()) as { data: Array<{ id: string }> };
		const setup = JSON.parse(readFileSync(join(folder, 'demo-setup.json'), 'utf8')) as {
			workflows: Record<string, string>;
		};
		const examples = Object.values(setup.workflows).sort();
		expect(examples.length).toBeGreaterThanOrEqual(5);
		expect(data.map((workflow) => workflow.id)).toEqual(expect.arrayContaining(examples));
		return examples;
	}

	/** No process of the demo runs (none names the clone), and every port it uses is free. */
	async function expectNothingLeft(): Promise<void> {
		expect(processesOf(clone).map(describeProcess)).toEqual([]);
		for (const [name, port] of Object.entries(ports)) {
			if (name === 'imap' && !withMailbox) continue;
			expect([name, await portIsFree(port)]).toEqual([name, true]);
		}
		expect(readRunState(folder)).toBeUndefined();
	}

	async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
		const response = await untilDatabaseReady(`${base()}/api/v1${path}`, {
			method,
			headers: {
				'content-type': 'application/json',
				'x-n8n-api-key': readFileSync(join(folder, 'e2e-api-key.txt'), 'utf8').trim(),
			},
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await response.text();
		if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
		return (text ? JSON.parse(text) : undefined) as T;
	}

	test('the main SIGKILLed mid-burst, a port taken by another program, then two starts in a row: each start comes up whole or stops everything it started, and nothing is left', async () => {
		const began = Date.now();
		const lap = (what: string) =>
			console.log(`[start test] ${what} after ${((Date.now() - began) / 1000).toFixed(0)} s`);

		// 1. Up, with a Poll Trigger published; its burst of runs has begun when the main is SIGKILLed.
		const first = start();
		const examples = await expectUp(first);
		lap('first start up');
		source = await FakeSystem.start();
		let listed: Array<{ id: string }> = [];
		source.on('GET', '/burst', () => ({ body: listed }));
		const workflowId = (
			await api<{ id: string }>(
				'POST',
				'/workflows',
				workflow(
					'burst',
					[
						node('Poll', `${PACKAGE}.pollTrigger`, {
							op: 'http.request',
							with: JSON.stringify({ url: source.url('/burst') }),
							id: 'id',
							dedupe: 'unique',
							interval: 5,
							intervalUnit: 'seconds',
							options: { firstPoll: 'none' },
						}),
						marker('Handled'),
					],
					[['Poll', 'Handled']],
				),
			)
		).id;
		await api(
			'POST',
			`/workflows/${workflowId}/${isN8n1 ? 'activate' : 'publish'}`,
			isN8n1 ? undefined : {},
		);
		// The first poll (during activation) remembers the empty list; the next one lists the burst.
		await source.requestCount('/burst', 1, 120_000);
		listed = Array.from({ length: 60 }, (_, i) => ({ id: `item-${i}` }));
		await waitFor(
			'the burst to begin (a first run created)',
			async () =>
				(await api<{ data: unknown[] }>('GET', `/executions?workflowId=${workflowId}&limit=1`)).data
					.length ||
				(
					await api<{ data: unknown[] }>(
						'GET',
						`/executions?workflowId=${workflowId}&status=running&limit=1`,
					)
				).data.length
					? true
					: undefined,
			{ timeoutMs: 120_000, intervalMs: 100 },
		);
		const main = readRunState(folder)!.children.find((child) => child.name === 'n8n')!;
		process.kill(main.pid, 'SIGKILL');
		const crashed = await first.exited;
		expect(crashed.code).not.toBe(0);
		expect(first.output()).toContain('n8n exited unexpectedly (SIGKILL)');
		await expectNothingLeft();
		lap('after the crash, everything stopped');

		// 2. A port the start needs is held by a program that is not the demo's: the start says which,
		// leaves that program alone, and leaves nothing of its own running.
		squatter = createServer((socket) => socket.end('squatter\n'));
		await new Promise<void>((resolve) => squatter!.listen(ports.webhook, '127.0.0.1', resolve));
		const refused = start();
		const { code: refusedCode } = await refused.exited;
		expect(refusedCode).not.toBe(0);
		expect(refused.output()).toContain(
			`port ${ports.webhook} (N8N_WEBHOOK_PORT) is in use by pid ${process.pid}`,
		);
		expect(squatter.listening).toBe(true);
		await new Promise((resolve) => squatter!.close(resolve));
		await expectNothingLeft();
		lap('the refused start ended');

		// 3. Two starts in a row. The first comes up (its main emits the burst's runs again) and is then
		// killed outright (its terminal closed): its n8n processes, Postgres, Redis and Dovecot run on.
		const second = start();
		expect(await expectUp(second)).toEqual(examples);
		lap('second start up');
		const leftBehind = readRunState(folder)!.children;
		expect(leftBehind.map((child) => child.name).sort()).toEqual(
			[
				'dev webhook processor',
				'dev worker 1',
				'dev worker 2',
				'n8n',
				...(withMailbox ? ['dovecot'] : []),
			].sort(),
		);
		signalGroup(second.child.pid!, 'SIGKILL');
		await second.exited;

		// The next start stops them all, says so, and comes up with the same data.
		const third = start();
		expect(await expectUp(third)).toEqual(examples);
		lap('third start up');
		for (const child of leftBehind) {
			expect(third.output()).toContain(
				`stopping the ${child.name} (pid ${child.pid}) an earlier npm start left running`,
			);
			expect(isAlive(child.pid)).toBe(false);
		}
		expect(processesInGroups(leftBehind.map((child) => child.pid))).toEqual([]);

		signalGroup(third.child.pid!, 'SIGINT');
		await third.exited;
		expect(third.output()).toContain('stopping n8n and the demo systems');
		expect(third.output()).not.toContain('could not stop everything');
		await expectNothingLeft();
		lap('third start stopped with Ctrl-C, nothing left');
	}, 1_500_000);
});

interface StartRun extends Run {
	/** Resolves once npm start prints the editor URL; rejects if it exits first. */
	ready: Promise<void>;
}

/** `npm start <args>` in its own process group, as a terminal runs it. */
function spawnStart(clone: string, env: NodeJS.ProcessEnv, args: string[]): StartRun {
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

function readRunState(folder: string): RunState | undefined {
	const file = join(folder, 'npm-start.json');
	return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as RunState) : undefined;
}

/**
 * A request to n8n, asked again while n8n answers 503 "Database is not ready!" (for at most 2
 * minutes): n8n answers so while a ping of its database fails, which on a busy machine can happen
 * after it was ready; a user would try again.
 */
async function untilDatabaseReady(url: string, init: RequestInit = {}): Promise<Response> {
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
async function loginCookie(base: string): Promise<string> {
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
function processesOf(dir: string): number[] {
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

function describeProcess(pid: number): string {
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
function makeClone(): string {
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

function signalGroup(pid: number, signal: NodeJS.Signals): void {
	try {
		process.kill(-pid, signal);
	} catch {
		// the group is gone already
	}
}

/** Live processes whose process group is one of `groups`. */
function processesInGroups(groups: number[]): string[] {
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

async function portIsFree(port: number): Promise<boolean> {
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
