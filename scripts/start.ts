/**
 * The main job: builds this package, installs it into a local n8n on http://localhost:5678 (SQLite,
 * user folder .n8n-dev/), starts the demo push-less source the examples poll, a demo S3 store for the
 * S3 example and, when installed, a demo FTP server (vsftpd) for the FTP example and a demo mailbox
 * (Dovecot) for the IMAP example (a new object, file and mail every minute), creates the demo
 * credentials, imports the example workflows and prints the editor URL and login. Ctrl-C stops it all.
 *
 * `npm start -- --queue`: the same in n8n's queue mode, in .n8n-dev-queue/: PostgreSQL and Redis from
 * Debian's packages on loopback, an n8n main (editor, API, triggers), two workers (they execute the
 * runs) and a webhook processor (webhooks and Round-Trip callbacks), each with the package installed.
 *
 * Run as `node --import tsx scripts/start.ts` (package.json), not through the tsx command: that one
 * runs the script in a child process, relays Ctrl-C to it and SIGKILLs it when the child does not
 * acknowledge the signal within 30 ms, which on a busy machine cut this script's stopping short and
 * left the queue-mode stack running.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { type Dovecot, dovecotBinary } from '../test/harness/dovecot';
import type { FakeSystem } from '../test/harness/fakeSystem';
import type { S3rver } from '../test/harness/s3rver';
import type { Vsftpd } from '../test/harness/vsftpd';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance } from '../test/harness/n8nInstance';
import { waitFor } from '../test/harness/net';
import { n8nVersion, repoRoot } from '../test/harness/paths';
import {
	type QueueServices,
	startQueueServices,
	stopQueueServices,
} from '../test/harness/queueServices';
import {
	demoFtpUnavailable,
	dropFtpFile,
	dropS3Object,
	startDemoFtp,
	startDemoS3,
} from './demoDrops';
import { deliverDemoMail, startDemoMailbox } from './demoMailbox';
import { type DemoSetup, installExamples } from './demoSetup';
import { startDemoSource } from './demoSource';
import {
	belongsToFolder,
	DEMO_FOLDER_ENV,
	describeProcess,
	holdsFiles,
	isAlive,
	listeningPids,
	processGroup,
} from './leftovers';

const N8N_PORT = Number(process.env.N8N_PORT ?? 5678);
const DEMO_SOURCE_PORT = Number(process.env.DEMO_SOURCE_PORT ?? 5680);
// Fixed, like the password, so the "Demo IMAP" credential created on the first start stays valid.
const DEMO_IMAP_PORT = Number(process.env.DEMO_IMAP_PORT ?? 5681);
const QUEUE = process.argv.slice(2).includes('--queue');
const WEBHOOK_PORT = Number(process.env.N8N_WEBHOOK_PORT ?? 5679);
const POSTGRES_PORT = Number(process.env.POSTGRES_PORT ?? 5682);
const REDIS_PORT = Number(process.env.REDIS_PORT ?? 5683);
// Fixed, so the "Demo S3" and "Demo FTP" credentials created on the first start stay valid.
const DEMO_S3_PORT = Number(process.env.DEMO_S3_PORT ?? 5684);
const DEMO_FTP_PORT = Number(process.env.DEMO_FTP_PORT ?? 5685);
/** Why there is no demo FTP server (vsftpd missing, not root), or undefined. */
const NO_FTP_BECAUSE = demoFtpUnavailable();
/** The n8n version the demo runs (N8N_VERSION, as for the tests). */
const DEFAULT_N8N_VERSION = '2.41.1';
/**
 * The demo's folder: `.n8n-dev` (`.n8n-dev-queue` in queue mode), with the version appended for any n8n
 * but the default one (a database n8n 2.x migrated cannot be opened by n8n 1.x, nor the other way).
 */
const userFolder = join(
	repoRoot,
	`${QUEUE ? '.n8n-dev-queue' : '.n8n-dev'}${n8nVersion === DEFAULT_N8N_VERSION ? '' : `-${n8nVersion}`}`,
);
const folderName = userFolder.slice(repoRoot.length + 1);
// Every process this start starts inherits it, so a later start can tell them from anything else.
process.env[DEMO_FOLDER_ENV] = userFolder;
let services: QueueServices | undefined;
const setupFile = join(userFolder, 'demo-setup.json');
/**
 * The processes this start runs outside its own (n8n, Dovecot, s3rver, vsftpd, each in a process group of its
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
/** The n8n (in queue mode the whole stack) as soon as it exists, before it has started. */
let n8nStarting: N8nInstance | undefined;
let n8nOpening: Promise<N8nInstance> | undefined;
/** Every n8n process started (the main, workers, webhook processor): their process groups. */
const n8nPids: number[] = [];
let source: FakeSystem | undefined;
let mailbox: Dovecot | undefined;
let mailboxStarting: Promise<Dovecot> | undefined;
let newMail: NodeJS.Timeout | undefined;
let store: S3rver | undefined;
let storeStarting: Promise<S3rver> | undefined;
let ftp: Vsftpd | undefined;
let ftpStarting: Promise<Vsftpd> | undefined;
let newDrops: NodeJS.Timeout | undefined;
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
	await startDropServers();
	if (QUEUE) {
		step(
			`starting PostgreSQL on 127.0.0.1:${POSTGRES_PORT} and Redis on 127.0.0.1:${REDIS_PORT} (data in ${folderName}/services)`,
		);
		services = await startQueueServices(join(userFolder, 'services'), {
			ports: { postgres: POSTGRES_PORT, redis: REDIS_PORT },
		});
		step(
			`starting the n8n ${n8nVersion} main on http://localhost:${N8N_PORT}, two workers and a webhook processor on http://localhost:${WEBHOOK_PORT}`,
		);
	} else {
		step(
			`starting n8n ${n8nVersion} on http://localhost:${N8N_PORT} (installing the package just built into ${folderName}/.n8n/nodes)`,
		);
	}
	n8nOpening = N8nInstance.open({
		name: 'dev',
		userFolder,
		port: N8N_PORT,
		env: {
			N8N_LOG_LEVEL: 'info',
			// Bull keeps the last ended jobs, so the main learns of a run's end even if it missed the job's
			// pub/sub event (docs/queue-mode.md: "A run whose end the main never hears of").
			...(QUEUE && {
				N8N_EXECUTIONS_QUEUE_KEEP_LAST_COMPLETED: '1000',
				N8N_EXECUTIONS_QUEUE_KEEP_LAST_FAILED: '1000',
			}),
		},
		ownProcessGroup: true,
		onCreated: (instance) => (n8nStarting = instance),
		// Each n8n process is recorded the moment it exists, so a start killed while it waits for them
		// leaves nothing the next start does not know of.
		onStarted: (name, pid) => {
			n8nPids.push(pid);
			recordChild(name === 'dev' ? 'n8n' : name, pid);
		},
		...(services && { queue: { services, database: 'n8n', webhookPort: WEBHOOK_PORT } }),
	});
	n8n = await n8nOpening;
	n8n.onUnexpectedExit((code, signal) => {
		void shutdown(
			1,
			`\n[start] n8n exited unexpectedly (${signal ?? `code ${code}`}); its log is ${n8n?.logFile}. Stopping the demo systems; run npm start again.`,
		);
	});

	const previous: DemoSetup | undefined = existsSync(setupFile)
		? JSON.parse(readFileSync(setupFile, 'utf8'))
		: undefined;
	const setup = await installExamples(
		n8n,
		{ source, imap: mailbox?.account.connection, s3: store?.credential(), ftp: ftp?.connection() },
		previous,
	);
	for (const file of Object.keys(setup.workflows))
		console.log(`  examples/${file} is in n8n as workflow ${setup.workflows[file]}`);
	writeFileSync(setupFile, JSON.stringify(setup, null, 2));

	const { email, password } = N8nInstance.owner;
	if (QUEUE) {
		const [first, second] = n8n.workers;
		console.log(`
n8n ${n8nVersion} with n8n-nodes-durable-triggers is running in queue mode.

  Editor (main): http://localhost:${N8N_PORT}   (editor, API, triggers: polls and schedules start runs here)
  Login:         ${email}  /  ${password}
  Workers:       2 (they execute every run), health http://127.0.0.1:${first.port}/healthz and http://127.0.0.1:${second.port}/healthz
  Webhooks:      http://localhost:${WEBHOOK_PORT}/webhook/…  and Round-Trip callbacks on /webhook-waiting/… (webhook processor)
  PostgreSQL:    127.0.0.1:${services?.postgresPort}, database n8n, user postgres  (data: ${folderName}/services/postgres)
  Redis:         127.0.0.1:${services?.redisPort}  (queue prefix bull-n8n)
  Demo source:   ${source.baseUrl}  (GET /tickets, GET /inventory, POST /jobs, POST /envelopes)
  Demo mailbox:  ${mailbox ? `imap://127.0.0.1:${DEMO_IMAP_PORT}, user ${mailbox.account.connection.user} (credential "Demo IMAP"), a new mail every minute` : NO_MAILBOX}
  Demo S3:       ${DEMO_S3}
  Demo FTP:      ${demoFtp()}
  Logs:          ${n8n.logFile}, ${n8n.helpers.map((helper) => helper.logFile.replace(`${userFolder}/`, '')).join(', ')} (in ${folderName})

${GO_LIVE} an example workflow: its runs execute on the workers. Ctrl-C stops everything.
`);
		return;
	}
	console.log(`
n8n ${n8nVersion} with n8n-nodes-durable-triggers is running.

  Editor:       http://localhost:${N8N_PORT}
  Login:        ${email}  /  ${password}
  Demo source:  ${source.baseUrl}  (GET /tickets, GET /inventory, POST /jobs, POST /envelopes)
  Demo mailbox: ${mailbox ? `imap://127.0.0.1:${DEMO_IMAP_PORT}, user ${mailbox.account.connection.user} (credential "Demo IMAP"), a new mail every minute` : NO_MAILBOX}
  Demo S3:      ${DEMO_S3}
  Demo FTP:     ${demoFtp()}
  Logs:         ${n8n.logFile}

Open an example workflow, press "Execute step" on its trigger, or ${GO_LIVE.toLowerCase()} it. Ctrl-C stops everything.
`);
}

/**
 * Stops everything this start has started, in order: n8n (gracefully, so it closes its triggers and
 * database; in queue mode the webhook processor, then the main and the workers, or after a failed start
 * the webhook processor, the workers, then the main), then Redis and Postgres, the demo source, the
 * mailbox, the S3 store and the FTP server; forgets the run and exits. Runs once however often it is asked.
 */
async function shutdown(code: number, message?: string): Promise<void> {
	shuttingDown ??= (async () => {
		if (message) console.log(message);
		clearInterval(newMail);
		clearInterval(newDrops);
		try {
			await stopN8n(code !== 0);
			if (services) {
				step('stopping Redis and PostgreSQL');
				stopQueueServices(services.dir);
			}
			await source?.close();
			const box = mailbox ?? (await mailboxStarting?.catch(() => undefined));
			await box?.stop();
			await (store ?? (await storeStarting?.catch(() => undefined)))?.stop();
			await (ftp ?? (await ftpStarting?.catch(() => undefined)))?.stop();
			if (ownsRunFile) rmSync(runFile, { force: true });
			if (code !== 0) step('everything this start started has stopped.');
		} catch (error) {
			console.error('[start] could not stop everything:', error);
			code ||= 1;
		}
		process.exit(code);
	})();
	await shuttingDown;
}

/**
 * Stops n8n. Ctrl-C (`failed` false), in queue mode: the webhook processor, the main (triggers closed,
 * nothing more enqueued), then the workers, which finish the runs they hold. After a failure (a start
 * that failed, or n8n that died): whatever of it runs, in the reverse order of starting: the webhook
 * processor, the workers, then the main.
 */
async function stopN8n(failed: boolean): Promise<void> {
	const instance = n8n ?? n8nStarting;
	if (instance) {
		if (failed || !n8n) {
			step(
				QUEUE
					? 'stopping what runs of n8n: the webhook processor, the workers, then the main'
					: 'stopping n8n',
			);
			await instance.stopStarted();
			await n8nOpening?.catch(() => undefined);
		} else {
			step(
				QUEUE ? 'stopping the webhook processor, the n8n main, then the workers' : 'stopping n8n',
			);
			await instance.stop();
		}
	}
	// Anything an n8n process started and left behind (its task runner, after a crash) is in its group.
	for (const pid of n8nPids) signal(-pid, 'SIGTERM');
}

/** Recorded processes are stopped in the reverse order a start starts them. */
function stopRank(name: string): number {
	if (name.includes('webhook')) return 0;
	if (name.includes('worker')) return 1;
	if (name === 'n8n') return 2;
	return 3;
}

/**
 * Makes this folder ours: refuses when another `npm start` is running on it, and stops what an earlier
 * start left running (it was killed, its terminal closed, or it failed in a way that left something):
 * first the processes recorded in the run file (webhook processor, workers, main, Dovecot, s3rver,
 * vsftpd), then
 * Postgres and Redis by their pid files, then any process still listening on a port this start needs
 * that belongs to this folder. A port held by anything else is not touched: the start stops, naming it.
 * Then records this start.
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
	const children = [...(earlier?.children ?? [])].sort(
		(a, b) => stopRank(a.name) - stopRank(b.name),
	);
	// One rank at a time (webhook processor, workers, main, then Dovecot, s3rver and vsftpd), the
	// processes of a rank together.
	for (const rank of [...new Set(children.map((child) => stopRank(child.name)))]) {
		await Promise.all(
			children
				.filter((child) => stopRank(child.name) === rank)
				.map(async (child) => {
					if (isRunning(child)) {
						step(`stopping the ${child.name} (pid ${child.pid}) an earlier npm start left running`);
						// Until it has let go of its files: a process on its way out no longer shows its
						// command line but still holds its ports for a moment, which the port check below
						// would take for another program's.
						await stopProcess(child.pid, () => isRunning(child) || holdsFiles(child.pid));
					}
					if (child.dir) rmSync(child.dir, { recursive: true, force: true });
				}),
		);
	}
	// Postgres and Redis an earlier, killed queue-mode start left running (by their pid files).
	if (QUEUE) stopQueueServices(join(userFolder, 'services'));
	const needed: Array<[number, string]> = [
		[N8N_PORT, 'N8N_PORT'],
		[DEMO_SOURCE_PORT, 'DEMO_SOURCE_PORT'],
		...(dovecotBinary() ? [[DEMO_IMAP_PORT, 'DEMO_IMAP_PORT'] as [number, string]] : []),
		[DEMO_S3_PORT, 'DEMO_S3_PORT'],
		...(NO_FTP_BECAUSE ? [] : [[DEMO_FTP_PORT, 'DEMO_FTP_PORT'] as [number, string]]),
		...(QUEUE
			? ([
					[WEBHOOK_PORT, 'N8N_WEBHOOK_PORT'],
					[POSTGRES_PORT, 'POSTGRES_PORT'],
					[REDIS_PORT, 'REDIS_PORT'],
				] as Array<[number, string]>)
			: []),
	];
	const taken: string[] = [];
	for (const [port, variable] of needed) {
		for (const pid of listeningPids(port)) {
			if (pid === process.pid) continue;
			if (!belongsToFolder(pid, userFolder)) {
				taken.push(
					`port ${port} (${variable}) is in use by ${describeProcess(pid)}, which is not this demo's: stop it, or start with another port (${variable}=…)`,
				);
				continue;
			}
			step(
				`stopping ${describeProcess(pid)}, left running by an earlier start of ${folderName} on port ${port}`,
			);
			await stopProcess(pid, async () => isAlive(pid));
		}
	}
	if (taken.length) throw new Error(`npm start cannot start:\n  ${taken.join('\n  ')}`);
	mkdirSync(userFolder, { recursive: true });
	writeRunState({
		start: { name: 'npm start', pid: process.pid, command: commandLine(process.pid) ?? '' },
		children: [],
	});
	ownsRunFile = true;
}

/**
 * SIGTERM to the process (to its whole group when it leads one: n8n's task runner, Dovecot's helpers),
 * then waits up to 30 s for `running` to say it ended; SIGKILL after that, and up to 10 s more.
 */
async function stopProcess(pid: number, running: () => boolean | Promise<boolean>): Promise<void> {
	const target = processGroup(pid) === pid ? -pid : pid;
	const ended = async (timeoutMs: number) =>
		await waitFor(`pid ${pid} to stop`, async () => ((await running()) ? undefined : true), {
			timeoutMs,
			intervalMs: 200,
		});
	signal(target, 'SIGTERM');
	try {
		await ended(30_000);
	} catch {
		signal(target, 'SIGKILL');
		await ended(10_000).catch(() => undefined);
	}
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

/**
 * Starts the S3 example's store and, where it can run, the FTP example's server, before n8n (a
 * published example finds its first drop on its first poll), each in a process group of its own
 * and recorded for the next start; then a new object and file every minute.
 */
async function startDropServers(): Promise<void> {
	step(`starting the demo S3 store on http://127.0.0.1:${DEMO_S3_PORT} (bucket drop)`);
	storeStarting = startDemoS3(DEMO_S3_PORT);
	store = await storeStarting;
	recordChild('s3rver', store.pid, store.directory);
	if (!NO_FTP_BECAUSE) {
		step(`starting the demo FTP server on ftp://127.0.0.1:${DEMO_FTP_PORT}`);
		ftpStarting = startDemoFtp(DEMO_FTP_PORT);
		ftp = await ftpStarting;
		recordChild('vsftpd', ftp.pid, ftp.directory);
	}
	let dropped = 1;
	newDrops = setInterval(() => {
		const n = dropped++;
		try {
			if (ftp) dropFtpFile(ftp, n);
		} catch (error) {
			console.error(`[start] demo FTP file not dropped: ${(error as Error).message}`);
		}
		if (store)
			void dropS3Object(store, n).catch((error: Error) =>
				console.error(`[start] demo S3 object not dropped: ${error.message}`),
			);
	}, 60_000);
}

const DEMO_S3 = `http://127.0.0.1:${DEMO_S3_PORT}, bucket drop (credential "Demo S3"), a new object under in/ every minute`;

function demoFtp(): string {
	return ftp
		? `ftp://127.0.0.1:${DEMO_FTP_PORT} (explicit FTPS), user ${ftp.user} (credential "Demo FTP"), a new file in /inbox every minute`
		: `none: ${NO_FTP_BECAUSE}.`;
}

const GO_LIVE = n8nVersion.startsWith('1.') ? 'Activate' : 'Publish';

const NO_MAILBOX = `none: Dovecot is not installed (apt-get install dovecot-imapd, then npm start again).
                Or run examples/support-triage.json on your own mailbox: create a "Durable Triggers IMAP API"
                credential for it and select it in the workflow's "New Support Mail" and "Mark Seen" nodes.`;

function step(message: string): void {
	console.log(`[start] ${message}`);
}

main().catch((error: unknown) => {
	if (shuttingDown) return;
	void shutdown(
		1,
		`\n[start] npm start failed: ${error instanceof Error ? error.message : String(error)}\n[start] stopping everything it started, then exiting; run npm start again once the cause is fixed.`,
	);
});
