import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

import { demoFtpUnavailable } from '../../scripts/demoDrops';
import { isAlive } from '../../scripts/leftovers';
import { dovecotBinary } from '../harness/dovecot';
import { freePort, waitFor } from '../harness/net';
import { whenDatabaseReady } from '../harness/n8nInstance';
import {
	loginCookie,
	makeClone,
	portIsFree,
	processesInGroups,
	processesOf,
	describeProcess,
	type Run,
	type RunState,
	signalGroup,
	spawnStart,
} from '../harness/npmStart';
import { PACK_DIR_ENV } from '../harness/paths';

/*
 * `npm start` as a user runs it, on a fresh clone of this repository (test/harness/npmStart.ts): started,
 * stopped with Ctrl-C (SIGINT to its whole process group, as a terminal sends it), started again after a
 * code change, after n8n was killed with SIGKILL, and after `npm start` itself was killed with SIGKILL.
 * Each start must come up with the same n8n data (same workflow ids, the same login), load the package as
 * built by that start, and each stop must leave no process and no port behind. `npm start -- --queue`
 * after a crash: startScriptQueue.test.ts.
 */

const CONNECTOR_DESCRIPTION =
	'Runs a connector op (HTTP, IMAP, SQL, SFTP, S3) of the Durable Triggers package as an action';
const CHANGED_DESCRIPTION = 'Runs a connector op, as changed by the npm start test';

describe('npm start on a fresh clone', () => {
	let clone: string;
	const ports = { n8n: 0, source: 0, imap: 0, s3: 0, ftp: 0 };
	let run: Run | undefined;
	let firstWorkflowIds: string[] = [];
	const withMailbox = dovecotBinary() !== undefined;
	const withFtp = demoFtpUnavailable() === undefined;

	beforeAll(async () => {
		clone = makeClone();
		for (const name of Object.keys(ports) as Array<keyof typeof ports>)
			ports[name] = await freePort();
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
			DEMO_S3_PORT: String(ports.s3),
			DEMO_FTP_PORT: String(ports.ftp),
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
		const { response, text } = await whenDatabaseReady(`http://127.0.0.1:${ports.n8n}${path}`, {
			headers: { cookie, 'browser-id': 'start-test' },
		});
		expect(response.status).toBe(200);
		return JSON.parse(text) as T;
	}

	async function workflowIds(cookie: string): Promise<string[]> {
		const { data } = await rest<{ data: Array<{ id: string }> }>(cookie, '/rest/workflows');
		return data.map((workflow) => workflow.id).sort();
	}

	/** Publishes a workflow as the editor does (its current version). */
	async function publish(cookie: string, id: string): Promise<void> {
		const { data } = await rest<{ data: { versionId: string } }>(cookie, `/rest/workflows/${id}`);
		const { response } = await whenDatabaseReady(
			`http://127.0.0.1:${ports.n8n}/rest/workflows/${id}/activate`,
			{
				method: 'POST',
				headers: { cookie, 'browser-id': 'start-test', 'content-type': 'application/json' },
				body: JSON.stringify({ versionId: data.versionId }),
			},
		);
		expect([id, response.status]).toEqual([id, 200]);
	}

	/** Resolves with the workflow's first successful run (the list the editor shows). */
	async function firstSuccess(cookie: string, workflowId: string): Promise<string> {
		const filter = encodeURIComponent(JSON.stringify({ workflowId }));
		return await waitFor(
			`a successful run of workflow ${workflowId}`,
			async () => {
				const { data } = await rest<{ data: { results: Array<{ id: string; status: string }> } }>(
					cookie,
					`/rest/executions?filter=${filter}`,
				);
				return data.results.find((execution) => execution.status === 'success')?.id;
			},
			{ timeoutMs: 180_000, intervalMs: 1_000 },
		);
	}

	async function connectorDescription(cookie: string): Promise<string | undefined> {
		const types = await rest<Array<{ name: string; description: string }>>(
			cookie,
			'/types/nodes.json',
		);
		return types.find((type) => type.name === 'n8n-nodes-durable-triggers.connector')?.description;
	}

	/**
	 * Every port npm start used is free again, and none of its processes runs: neither npm start, n8n,
	 * Dovecot, s3rver and vsftpd, nor anything they started (n8n's task runner, Dovecot's login and auth
	 * processes, vsftpd's sessions), which are in the process groups they lead.
	 */
	async function expectEverythingStopped(pids: number[]): Promise<void> {
		for (const port of [
			ports.n8n,
			ports.source,
			ports.s3,
			...(withMailbox ? [ports.imap] : []),
			...(withFtp ? [ports.ftp] : []),
		])
			expect([port, await portIsFree(port)]).toEqual([port, true]);
		expect(pids.filter(isAlive)).toEqual([]);
		expect(processesInGroups([...pids, run!.child.pid!])).toEqual([]);
		expect(runState()).toBeUndefined();
	}

	/** The processes of the running start: npm start itself, n8n, Dovecot, s3rver and vsftpd. */
	function runningPids(): number[] {
		const state = runState();
		expect(state?.children.map((child) => child.name).sort()).toEqual([
			...(withMailbox ? ['dovecot'] : []),
			'n8n',
			's3rver',
			...(withFtp ? ['vsftpd'] : []),
		]);
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
		expect(output()).toContain(`Demo S3:      http://127.0.0.1:${ports.s3}, bucket drop`);
		if (withFtp) expect(output()).toContain(`Demo FTP:     ftp://127.0.0.1:${ports.ftp}`);

		// The S3 and FTP examples, published, each start a run from the demo servers' first drops:
		// listed, downloaded, read as CSV and moved to processed/.
		const dropExamples = ['s3-bucket-drop.json', ...(withFtp ? ['ftp-partner-drop.json'] : [])];
		for (const file of dropExamples) await publish(cookie, setup.workflows[file]);
		for (const file of dropExamples) await firstSuccess(cookie, setup.workflows[file]);

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
