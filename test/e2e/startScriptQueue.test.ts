import { chmodSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';

import { demoFtpUnavailable } from '../../scripts/demoDrops';
import { isAlive } from '../../scripts/leftovers';
import { dovecotBinary } from '../harness/dovecot';
import { FakeSystem } from '../harness/fakeSystem';
import { freePort, waitFor } from '../harness/net';
import {
	describeProcess,
	loginCookie,
	makeClone,
	portIsFree,
	processesInGroups,
	processesOf,
	readRunState,
	signalGroup,
	spawnStart,
	type StartRun,
	untilDatabaseReady,
} from '../harness/npmStart';
import { isN8n1, PACK_DIR_ENV } from '../harness/paths';
import { queueServicesInstalled, stopQueueServices } from '../harness/queueServices';
import { marker, node, PACKAGE, workflow } from './workflowBuilder';

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
	const ports = { n8n: 0, webhook: 0, postgres: 0, redis: 0, source: 0, imap: 0, s3: 0, ftp: 0 };
	const runs: StartRun[] = [];
	let source: FakeSystem | undefined;
	let squatter: Server | undefined;
	const withMailbox = dovecotBinary() !== undefined;
	const withFtp = demoFtpUnavailable() === undefined;

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
			DEMO_S3_PORT: String(ports.s3),
			DEMO_FTP_PORT: String(ports.ftp),
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
			if ((name === 'imap' && !withMailbox) || (name === 'ftp' && !withFtp)) continue;
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
		// killed outright (its terminal closed): its n8n processes, Postgres, Redis, Dovecot and the
		// demo S3 and FTP servers run on.
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
				's3rver',
				...(withFtp ? ['vsftpd'] : []),
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
