/**
 * The main job: builds this package, installs it into a local n8n on http://localhost:5678 (SQLite,
 * user folder .n8n-dev/), starts the demo push-less source the examples poll and, when Dovecot is
 * installed, a demo mailbox for the IMAP example (a new mail every minute), creates the demo
 * credentials, imports the example workflows and prints the editor URL and login. Ctrl-C stops it all.
 *
 * `npm start -- --queue`: the same in n8n's queue mode, in .n8n-dev-queue/: PostgreSQL and Redis from
 * Debian's packages on loopback, an n8n main (editor, API, triggers), two workers (they execute the
 * runs) and a webhook processor (webhooks and Round-Trip callbacks), each with the package installed.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { type Dovecot, dovecotBinary } from '../test/harness/dovecot';
import type { FakeSystem } from '../test/harness/fakeSystem';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance } from '../test/harness/n8nInstance';
import { waitFor } from '../test/harness/net';
import { repoRoot } from '../test/harness/paths';
import {
	type QueueServices,
	startQueueServices,
	stopQueueServices,
} from '../test/harness/queueServices';
import { deliverDemoMail, startDemoMailbox } from './demoMailbox';
import { type DemoSetup, installExamples } from './demoSetup';
import { startDemoSource } from './demoSource';

const N8N_PORT = Number(process.env.N8N_PORT ?? 5678);
const DEMO_SOURCE_PORT = Number(process.env.DEMO_SOURCE_PORT ?? 5680);
// Fixed, like the password, so the "Demo IMAP" credential created on the first start stays valid.
const DEMO_IMAP_PORT = Number(process.env.DEMO_IMAP_PORT ?? 5681);
const QUEUE = process.argv.slice(2).includes('--queue');
const WEBHOOK_PORT = Number(process.env.N8N_WEBHOOK_PORT ?? 5679);
const POSTGRES_PORT = Number(process.env.POSTGRES_PORT ?? 5682);
const REDIS_PORT = Number(process.env.REDIS_PORT ?? 5683);
const userFolder = join(repoRoot, QUEUE ? '.n8n-dev-queue' : '.n8n-dev');
let services: QueueServices | undefined;
const setupFile = join(userFolder, 'demo-setup.json');
/**
 * The processes this start runs outside its own (n8n and Dovecot, each in a process group of its
 * own), so the next start can stop what a killed start left behind, and refuse to run twice.
 */
const runFile = join(userFolder, 'npm-start.json');

interface ProcessRecord {
	name: string;
	pid: number;
	/** Its command line when it was recorded: a pid reused by another program does not match. */
	command: string;
	/** A temp dir of its own, removed once it has stopped. */
	dir?: string;
}
interface RunState {
	start: ProcessRecord;
	children: ProcessRecord[];
}

let n8n: N8nInstance | undefined;
let n8nOpening: Promise<N8nInstance> | undefined;
let n8nPid: number | undefined;
let source: FakeSystem | undefined;
let mailbox: Dovecot | undefined;
let mailboxStarting: Promise<Dovecot> | undefined;
let newMail: NodeJS.Timeout | undefined;
let shuttingDown: Promise<void> | undefined;
/** Set once this start has recorded itself in the run file (a refused second start must leave it alone). */
let ownsRunFile = false;

async function main(): Promise<void> {
	// From the first moment, Ctrl-C (or a terminal closing) stops whatever has been started so far.
	for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
		process.on(signal, () => void shutdown(0, '\nstopping n8n and the demo systems…'));
	await takeOverFolder();

	step('building the package');
	execFileSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' });
	step('installing the pinned n8n (first time only) and packing the package');
	ensureN8nInstalled();
	packAndPrepareNodesFolder();

	step(`starting the demo source on http://127.0.0.1:${DEMO_SOURCE_PORT}`);
	source = await startDemoSource(DEMO_SOURCE_PORT);
	// Before n8n, so a published IMAP example finds its mailbox on its first poll.
	if (dovecotBinary()) {
		step(`starting the demo mailbox on imap://127.0.0.1:${DEMO_IMAP_PORT}`);
		mailboxStarting = startDemoMailbox(DEMO_IMAP_PORT, { ownProcessGroup: true });
		mailbox = await mailboxStarting;
		recordChild('dovecot', mailbox.pid, mailbox.directory);
		const { account } = mailbox;
		let delivered = 2;
		newMail = setInterval(
			() =>
				void deliverDemoMail(account, delivered++).catch((error: Error) =>
					console.error(`[start] demo mail not delivered: ${error.message}`),
				),
			60_000,
		);
	}
	if (QUEUE) {
		step(
			`starting PostgreSQL on 127.0.0.1:${POSTGRES_PORT} and Redis on 127.0.0.1:${REDIS_PORT} (data in .n8n-dev-queue/services)`,
		);
		services = await startQueueServices(join(userFolder, 'services'), {
			ports: { postgres: POSTGRES_PORT, redis: REDIS_PORT },
		});
		step(
			`starting the n8n main on http://localhost:${N8N_PORT}, two workers and a webhook processor on http://localhost:${WEBHOOK_PORT}`,
		);
	} else {
		step(
			`starting n8n on http://localhost:${N8N_PORT} (installing the package just built into .n8n-dev/.n8n/nodes)`,
		);
	}
	n8nOpening = N8nInstance.open({
		name: 'dev',
		userFolder,
		port: N8N_PORT,
		env: { N8N_LOG_LEVEL: 'info' },
		ownProcessGroup: true,
		onStarted: (pid) => recordChild('n8n', (n8nPid = pid)),
		...(services && { queue: { services, database: 'n8n', webhookPort: WEBHOOK_PORT } }),
	});
	n8n = await n8nOpening;
	for (const helper of n8n.helpers) recordChild(helper.name, helper.pid);
	n8n.onUnexpectedExit((code, signal) => {
		void shutdown(
			1,
			`\n[start] n8n exited unexpectedly (${signal ?? `code ${code}`}); its log is ${n8n?.logFile}. Stopping the demo systems; run npm start again.`,
		);
	});

	const previous: DemoSetup | undefined = existsSync(setupFile)
		? JSON.parse(readFileSync(setupFile, 'utf8'))
		: undefined;
	const setup = await installExamples(n8n, { source, imap: mailbox?.account.connection }, previous);
	for (const file of Object.keys(setup.workflows))
		console.log(`  examples/${file} is in n8n as workflow ${setup.workflows[file]}`);
	writeFileSync(setupFile, JSON.stringify(setup, null, 2));

	const { email, password } = N8nInstance.owner;
	if (QUEUE) {
		const [first, second] = n8n.workers;
		console.log(`
n8n with n8n-nodes-durable-triggers is running in queue mode.

  Editor (main): http://localhost:${N8N_PORT}   (editor, API, triggers: polls and schedules start runs here)
  Login:         ${email}  /  ${password}
  Workers:       2 (they execute every run), health http://127.0.0.1:${first.port}/healthz and http://127.0.0.1:${second.port}/healthz
  Webhooks:      http://localhost:${WEBHOOK_PORT}/webhook/…  and Round-Trip callbacks on /webhook-waiting/… (webhook processor)
  PostgreSQL:    127.0.0.1:${services?.postgresPort}, database n8n, user postgres  (data: .n8n-dev-queue/services/postgres)
  Redis:         127.0.0.1:${services?.redisPort}  (queue prefix bull-n8n)
  Demo source:   ${source.baseUrl}  (GET /tickets, GET /inventory, POST /jobs)
  Demo mailbox:  ${mailbox ? `imap://127.0.0.1:${DEMO_IMAP_PORT}, user ${mailbox.account.connection.user} (credential "Demo IMAP"), a new mail every minute` : NO_MAILBOX}
  Logs:          ${n8n.logFile}, ${n8n.helpers.map((helper) => helper.logFile.replace(`${userFolder}/`, '')).join(', ')} (in .n8n-dev-queue)

Publish an example workflow: its runs execute on the workers. Ctrl-C stops everything.
`);
		return;
	}
	console.log(`
n8n with n8n-nodes-durable-triggers is running.

  Editor:       http://localhost:${N8N_PORT}
  Login:        ${email}  /  ${password}
  Demo source:  ${source.baseUrl}  (GET /tickets, GET /inventory, POST /jobs)
  Demo mailbox: ${mailbox ? `imap://127.0.0.1:${DEMO_IMAP_PORT}, user ${mailbox.account.connection.user} (credential "Demo IMAP"), a new mail every minute` : NO_MAILBOX}
  Logs:         ${n8n.logFile}

Open an example workflow, press "Execute step" on its trigger, or publish it. Ctrl-C stops everything.
`);
}

/**
 * Stops everything this start has started, in order (n8n first, gracefully, so it closes its triggers
 * and database), forgets the run and exits. Runs once however often it is asked.
 */
async function shutdown(code: number, message?: string): Promise<void> {
	shuttingDown ??= (async () => {
		if (message) console.log(message);
		clearInterval(newMail);
		try {
			await stopN8n();
			if (services) stopQueueServices(services.dir);
			await source?.close();
			const box = mailbox ?? (await mailboxStarting?.catch(() => undefined));
			await box?.stop();
			if (ownsRunFile) rmSync(runFile, { force: true });
		} catch (error) {
			console.error('[start] could not stop everything:', error);
			code ||= 1;
		}
		process.exit(code);
	})();
	await shuttingDown;
}

async function stopN8n(): Promise<void> {
	if (n8n) {
		await n8n.stop();
	} else if (n8nPid !== undefined) {
		// Still starting: stop it now rather than wait for it to be ready.
		signal(n8nPid, 'SIGTERM');
		const opened = await n8nOpening?.catch(() => undefined);
		await opened?.stop();
	}
	// Anything n8n started and left behind (its task runner, after a crash) is in its process group.
	if (n8nPid !== undefined) signal(-n8nPid, 'SIGTERM');
}

/**
 * Makes this folder ours: refuses when another `npm start` is running on it, and stops the n8n and
 * Dovecot an earlier start left running (it was killed, or its terminal closed), whose ports this
 * start needs. Then records this start.
 */
async function takeOverFolder(): Promise<void> {
	const earlier: RunState | undefined = existsSync(runFile)
		? JSON.parse(readFileSync(runFile, 'utf8'))
		: undefined;
	if (earlier && earlier.start.pid !== process.pid && isRunning(earlier.start)) {
		throw new Error(
			`npm start is already running on ${userFolder} (pid ${earlier.start.pid}). Stop it first (Ctrl-C in its terminal, or kill ${earlier.start.pid}).`,
		);
	}
	for (const child of earlier?.children ?? []) {
		if (isRunning(child)) {
			step(`stopping the ${child.name} (pid ${child.pid}) an earlier npm start left running`);
			signal(-child.pid, 'SIGTERM');
			try {
				await waitFor(
					`${child.name} (pid ${child.pid}) to stop`,
					async () => (isRunning(child) ? undefined : true),
					{ timeoutMs: 30_000, intervalMs: 200 },
				);
			} catch {
				signal(-child.pid, 'SIGKILL');
			}
		}
		if (child.dir) rmSync(child.dir, { recursive: true, force: true });
	}
	// Postgres and Redis an earlier, killed queue-mode start left running (by their pid files).
	if (QUEUE) stopQueueServices(join(userFolder, 'services'));
	mkdirSync(userFolder, { recursive: true });
	writeRunState({
		start: { name: 'npm start', pid: process.pid, command: commandLine(process.pid) ?? '' },
		children: [],
	});
	ownsRunFile = true;
}

function recordChild(name: string, pid: number | undefined, dir?: string): void {
	if (pid === undefined) return;
	const state: RunState = JSON.parse(readFileSync(runFile, 'utf8'));
	state.children = [
		...state.children.filter((child) => child.name !== name),
		{ name, pid, command: commandLine(pid) ?? '', ...(dir && { dir }) },
	];
	writeRunState(state);
}

function writeRunState(state: RunState): void {
	writeFileSync(runFile, JSON.stringify(state, null, 2));
}

function isRunning(record: ProcessRecord): boolean {
	return commandLine(record.pid) === record.command;
}

/** A process's command line, or undefined when there is no such process. */
function commandLine(pid: number): string | undefined {
	try {
		return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
	} catch {
		try {
			return (
				execFileSync('ps', ['-o', 'command=', '-p', String(pid)], {
					encoding: 'utf8',
					stdio: ['ignore', 'pipe', 'ignore'],
				}).trim() || undefined
			);
		} catch {
			return undefined;
		}
	}
}

/** Sends a signal to a process (or, with a negative pid, a process group) that may be gone already. */
function signal(pid: number, name: NodeJS.Signals): void {
	try {
		process.kill(pid, name);
	} catch {
		// already gone
	}
}

const NO_MAILBOX = `none: Dovecot is not installed (apt-get install dovecot-imapd, then npm start again).
                Or run examples/support-triage.json on your own mailbox: create a "Durable Triggers IMAP API"
                credential for it and select it in the workflow's "New Support Mail" and "Mark Seen" nodes.`;

function step(message: string): void {
	console.log(`[start] ${message}`);
}

main().catch((error: unknown) => {
	if (shuttingDown) return;
	console.error(error);
	void shutdown(1);
});
