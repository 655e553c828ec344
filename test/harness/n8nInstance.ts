import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
	closeSync,
	createWriteStream,
	existsSync,
	mkdirSync,
	openSync,
	readFileSync,
	readSync,
	statSync,
	writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

import { copyNodesFolderTo } from './install';
import { freePort, waitFor } from './net';
import { instancesDir, isN8n1, n8nBin, n8nNodeBin } from './paths';
import { createDatabase, type QueueServices, servicesFromEnv } from './queueServices';
import { recordProcess } from './startedServers';

/**
 * `single`: one n8n process with SQLite (the default). `queue`: n8n's queue mode, a main (triggers,
 * API, editor), workers that execute the runs and a webhook processor that answers webhooks, sharing
 * PostgreSQL and Redis. The e2e tests pick it with `E2E_TOPOLOGY=queue`.
 */
export type Topology = 'single' | 'queue';
export const TOPOLOGY_ENV = 'E2E_TOPOLOGY';
export function topologyFromEnv(): Topology {
	const value = process.env[TOPOLOGY_ENV] ?? 'single';
	if (value !== 'single' && value !== 'queue')
		throw new Error(`${TOPOLOGY_ENV} must be "single" or "queue", not "${value}"`);
	return value;
}

/** How a queue-mode stack is made: the shared services, its own database and Redis prefix, its processes. */
export interface QueueStackOptions {
	services: QueueServices;
	/** Postgres database of this stack (created if missing). Also its Redis key prefix. */
	database: string;
	workers?: number;
	/** Runs at once per worker (`n8n worker --concurrency`). */
	concurrency?: number;
	/** The webhook processor's port (a free one if not given). */
	webhookPort?: number;
}

/** Environment common to every n8n process, whatever it runs. */
const QUIET_ENV = {
	// jest sets NODE_ENV=test, under which n8n does not start as it does for users.
	NODE_ENV: 'production',
	N8N_LISTEN_ADDRESS: '127.0.0.1',
	N8N_HOST: '127.0.0.1',
	N8N_PROTOCOL: 'http',
	N8N_DIAGNOSTICS_ENABLED: 'false',
	N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
	N8N_TEMPLATES_ENABLED: 'false',
	N8N_PERSONALIZATION_ENABLED: 'false',
	N8N_SECURE_COOKIE: 'false',
	N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
	N8N_GRACEFUL_SHUTDOWN_TIMEOUT: '20',
	N8N_LOG_LEVEL: 'debug',
	N8N_LOG_OUTPUT: 'console',
	GENERIC_TIMEZONE: 'UTC',
};

/**
 * One n8n process of a queue-mode stack other than the main: a worker (`n8n worker`) or the webhook
 * processor (`n8n webhook`), with its own user folder (the package installed in it) and broker port.
 */
export class N8nHelperProcess {
	private process?: ChildProcess;
	private exited?: Promise<number | null>;
	readonly logFile: string;

	constructor(
		readonly role: 'worker' | 'webhook',
		readonly name: string,
		readonly userFolder: string,
		/** Health/readiness port: the worker's health server, or the webhook processor's HTTP port. */
		readonly port: number,
		private readonly brokerPort: number,
		private readonly args: string[],
		private readonly env: () => Record<string, string>,
		private readonly ownProcessGroup: boolean,
		/** Called as soon as the process exists, before it is ready (npm start records its pid). */
		private readonly onSpawn?: (name: string, pid: number) => void,
	) {
		this.logFile = join(userFolder, 'n8n.log');
	}

	get pid(): number | undefined {
		return this.process?.pid;
	}

	get running(): boolean {
		return this.process !== undefined;
	}

	get baseUrl(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	async start(): Promise<void> {
		if (this.process) return;
		mkdirSync(this.userFolder, { recursive: true });
		copyNodesFolderTo(this.userFolder);
		const log = createWriteStream(this.logFile, { flags: 'a' });
		const roleEnv: Record<string, string> =
			this.role === 'worker'
				? {
						QUEUE_HEALTH_CHECK_ACTIVE: 'true',
						QUEUE_HEALTH_CHECK_PORT: String(this.port),
						N8N_WORKER_SERVER_ADDRESS: '127.0.0.1',
					}
				: { N8N_PORT: String(this.port) };
		// The Node.js this n8n version runs on (n8n 1.x: Node 22), as for the main.
		const child = spawn(n8nNodeBin, [n8nBin, this.role, ...this.args], {
			env: {
				...process.env,
				...this.env(),
				...roleEnv,
				N8N_USER_FOLDER: this.userFolder,
				N8N_RUNNERS_BROKER_PORT: String(this.brokerPort),
			},
			stdio: ['ignore', 'pipe', 'pipe'],
			detached: this.ownProcessGroup,
		});
		child.stdout?.pipe(log);
		child.stderr?.pipe(log);
		this.process = child;
		// Stopped by the e2e global teardown if its suite does not stop it (test/harness/startedServers.ts).
		child.once('exit', recordProcess(`n8n ${this.name}`, child.pid));
		if (child.pid !== undefined) this.onSpawn?.(this.name, child.pid);
		this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
		const startupFailed = failureOnExit(
			this.name,
			this.exited as Promise<number | null>,
			this.logFile,
		);
		await Promise.race([startupFailed, readiness(this.name, this.baseUrl)]);
		startupFailed.catch(() => undefined);
	}

	async stop(): Promise<void> {
		await this.terminate('SIGTERM');
	}

	/** SIGKILL: the process dies with whatever it was running. */
	async kill(): Promise<void> {
		await this.terminate('SIGKILL');
	}

	private async terminate(signal: NodeJS.Signals): Promise<void> {
		if (!this.process) return;
		this.process.kill(signal);
		await this.exited;
		this.process = undefined;
	}

	log(): string {
		return existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
	}

	/** Executions this worker started (its log's "Worker started execution <id>"). */
	executionsStarted(): string[] {
		return [...this.log().matchAll(/Worker started execution (\d+)/g)].map((match) => match[1]);
	}
}

/** Rejects when an n8n process exits while it is being started. */
function failureOnExit(
	name: string,
	exited: Promise<number | null>,
	logFile: string,
): Promise<never> {
	return exited.then((code) => {
		throw new Error(`n8n ${name} exited with code ${code} during start; see ${logFile}`);
	});
}

/**
 * How long a request answered "Database is not ready!" is repeated. n8n (2.x: every 2 s, 5 s timeout)
 * pings its database while it runs and, while a ping fails, answers every request but /healthz with that
 * 503: on a busy machine (a burst re-emitted after a crash, on 2 cores) a ping can time out after n8n
 * was ready, and the next one succeeds.
 */
const DATABASE_NOT_READY_WAIT_MS = 120_000;
/** How long a login waits out n8n's login limit (five a minute per user) before it fails. */
const LOGIN_LIMIT_WAIT_MS = 120_000;

/**
 * A request to n8n, repeated while n8n answers 503 "Database is not ready!" (for a bounded time), and
 * a read (GET) repeated while it answers 500: in queue mode under load n8n's PostgreSQL pool can time
 * out ("timeout exceeded when trying to connect", its pool of a few connections shared with the runs),
 * and the public API then answers a read of an execution 500 (owedItems' queue kill case, a local
 * npm test of 2026-12-03).
 */
export async function whenDatabaseReady(
	url: string,
	init: RequestInit,
): Promise<{ response: Response; text: string }> {
	const deadline = Date.now() + DATABASE_NOT_READY_WAIT_MS;
	for (;;) {
		const response = await fetchOnFreshSocket(url, init);
		const text = await response.text();
		const notReady = response.status === 503 && text.includes('Database is not ready');
		const readFailed = response.status === 500 && (init.method ?? 'GET') === 'GET';
		if (!notReady && !readFailed) return { response, text };
		if (Date.now() > deadline)
			// Which wait ran out, and how long it was, rather than the last answer alone.
			throw new Error(
				`n8n answered ${response.status} to ${init.method ?? 'GET'} ${new URL(url).pathname} for ${DATABASE_NOT_READY_WAIT_MS / 1000} s: the harness's wait for n8n's database (DATABASE_NOT_READY_WAIT_MS) ran out; its last answer: ${text.slice(0, 300)}`,
			);
		// The monitor pings every 2 s: ask again at that cadence, not at once.
		await new Promise((resolve) => setTimeout(resolve, 1_000));
	}
}

/**
 * fetch, asked once more when the socket it reused was closed under it ("other side closed",
 * UND_ERR_SOCKET): n8n closes an idle keep-alive connection after its timeout, and on a busy machine
 * the close can cross the next request on it (startScript on a lane's second worker, a local .ci/run
 * of 2026-12-05), before n8n read that request.
 */
async function fetchOnFreshSocket(url: string, init: RequestInit): Promise<Response> {
	try {
		return await fetch(url, init);
	} catch (error) {
		const code = ((error as Error).cause as { code?: string } | undefined)?.code;
		if (code !== 'UND_ERR_SOCKET') throw error;
		return await fetch(url, init);
	}
}

/**
 * Resolves once an n8n process answers /healthz/readiness: its database connected and migrated (and on
 * n8n 2.x its server fully started). `/healthz` alone answers as soon as the HTTP server listens, before
 * the database is. At most 10 minutes: after a SIGKILL n8n first amends every run its event log shows
 * going (execution-recovery.service.js, one database write each), and the chaos run kills it with up to
 * 50 runs in flight for each of its ten poll cases. On a busy machine (a local npm test beside three
 * other e2e runs, 2026-12-03) 194 such runs took n8n more than 3 minutes, each write a second or more.
 */
async function readiness(name: string, baseUrl: string): Promise<void> {
	await waitFor(
		`n8n ${name} to answer /healthz/readiness`,
		async () => ((await fetch(`${baseUrl}/healthz/readiness`)).ok ? true : undefined),
		{ timeoutMs: 600_000 },
	);
}

export interface Execution {
	id: string;
	workflowId: string;
	status: 'success' | 'error' | 'waiting' | 'running' | 'new' | 'canceled' | 'crashed' | 'unknown';
	mode: string;
	finished: boolean;
	startedAt: string;
	stoppedAt: string | null;
	waitTill: string | null;
	deduplicationKey?: string | null;
	data?: {
		resultData: {
			runData: Record<
				string,
				Array<{
					data?: { main: Array<Array<{ json: Record<string, unknown> }> | null> };
					error?: unknown;
				}>
			>;
			error?: { message: string; description?: string };
			lastNodeExecuted?: string;
			/** The execution's custom data (`$execution.customData`). */
			metadata?: Record<string, string>;
		};
		/** What is left to run: empty once a run has ended, the waiting node once it waits. */
		executionData?: { nodeExecutionStack: unknown[] };
	};
}

export interface WorkflowJson {
	name: string;
	nodes: unknown[];
	connections: Record<string, unknown>;
	settings?: Record<string, unknown>;
	[key: string]: unknown;
}

const OWNER = {
	email: 'owner@example.com',
	password: 'Durable-Triggers-1',
	firstName: 'Test',
	lastName: 'Owner',
};

/**
 * One real n8n, started from the pinned install with its own user folder, SQLite database and ports,
 * with this package installed where a community-node install lands. It can be stopped gracefully,
 * killed with SIGKILL and started again on the same folder and database.
 */
export class N8nInstance {
	private process?: ChildProcess;
	private exited?: Promise<number | null>;
	private terminating = false;
	private readonly exitListeners: Array<
		(code: number | null, signal: NodeJS.Signals | null) => void
	> = [];
	private apiKey?: string;
	private cookie?: string;
	readonly logFile: string;

	/** Queue mode: the workers, then the webhook processor (empty in single-process mode). */
	readonly workers: N8nHelperProcess[] = [];
	webhookProcessor?: N8nHelperProcess;

	private constructor(
		readonly name: string,
		readonly userFolder: string,
		readonly port: number,
		private readonly brokerPort: number,
		private readonly extraEnv: Record<string, string>,
		private readonly ownProcessGroup: boolean,
		readonly queue?: Required<QueueStackOptions>,
	) {
		this.logFile = join(userFolder, 'n8n.log');
	}

	get topology(): Topology {
		return this.queue ? 'queue' : 'single';
	}

	/**
	 * Creates a fresh instance folder with the packed package installed, and starts n8n on it: one
	 * process, or in queue mode (E2E_TOPOLOGY=queue) a main, two workers and a webhook processor on
	 * the Postgres and Redis the e2e global setup started, with a database of its own. Given `services`,
	 * a queue-mode stack on them whatever the environment says (benchmarks).
	 */
	static async launch(
		name: string,
		env: Record<string, string> = {},
		queueOptions: Partial<QueueStackOptions> = {},
	): Promise<N8nInstance> {
		const stamp = `${Date.now()}-${process.pid}`;
		const userFolder = join(instancesDir, `${name}-${stamp}`);
		let queue: QueueStackOptions | undefined;
		if (queueOptions.services || topologyFromEnv() === 'queue') {
			const services = queueOptions.services ?? servicesFromEnv();
			if (!services)
				throw new Error(
					`${TOPOLOGY_ENV}=queue, but no Postgres and Redis were started (the e2e global setup starts them)`,
				);
			queue = {
				...queueOptions,
				services,
				database:
					`n8n_${name.replace(/[^a-z0-9]/gi, '_')}_${stamp.replace('-', '_')}`.toLowerCase(),
			};
		}
		return await N8nInstance.open({ name, userFolder, port: await freePort(), env, queue });
	}

	/**
	 * A handle on an n8n another object started (the run's shared instance, test/harness/shared.ts):
	 * the same API, but it owns no process, so `stop()` leaves that n8n running and `kill()`,
	 * `start()` and `restart()` are refused.
	 */
	static async attach(name: string, userFolder: string, port: number): Promise<N8nInstance> {
		const instance = new N8nInstance(name, userFolder, port, 0, {}, false);
		instance.attached = true;
		await instance.ensureOwnerAndApiKey();
		return instance;
	}

	/** Set on a handle made by `attach`: the process belongs to someone else. */
	private attached = false;

	/**
	 * When this object last spawned the main (ms since the epoch); unset on a handle made by `attach`.
	 * Single-process mode: the main that runs now has saved nothing of an execution that ended before.
	 */
	private mainSpawnedAt: number | undefined;

	private refuseIfAttached(what: string): void {
		if (this.attached)
			throw new Error(
				`${what} on the shared n8n is refused: a test that stops or kills n8n launches its own (N8nInstance.launch)`,
			);
	}

	/**
	 * Starts n8n on `userFolder` with the packed package (re)installed into it. A folder that already has
	 * an owner is logged into; a new one gets the owner and an API key.
	 */
	static async open({
		name,
		userFolder,
		port,
		env = {},
		ownProcessGroup = false,
		onStarted,
		onCreated,
		queue,
	}: {
		name: string;
		userFolder: string;
		port: number;
		env?: Record<string, string>;
		/**
		 * Starts n8n in a process group of its own, so a Ctrl-C in the terminal reaches only the
		 * process that owns it (npm start), which then stops n8n once, gracefully.
		 */
		ownProcessGroup?: boolean;
		/**
		 * Called as soon as each n8n process exists, before it is ready (to record its pid): the main
		 * (`name`), then in queue mode each worker and the webhook processor (their names).
		 */
		onStarted?: (name: string, pid: number) => void;
		/** Called with the instance before anything is started, so a caller can stop it mid-start. */
		onCreated?: (instance: N8nInstance) => void;
		/** Queue mode: the stack to start around the main. */
		queue?: QueueStackOptions;
	}): Promise<N8nInstance> {
		mkdirSync(userFolder, { recursive: true });
		copyNodesFolderTo(userFolder);
		let stack: Required<QueueStackOptions> | undefined;
		if (queue) {
			createDatabase(queue.services, queue.database);
			stack = {
				workers: 2,
				concurrency: 10,
				...queue,
				webhookPort: queue.webhookPort ?? (await freePort()),
			};
		}
		const instance = new N8nInstance(
			name,
			userFolder,
			port,
			await freePort(),
			env,
			ownProcessGroup,
			stack,
		);
		if (stack) {
			for (let i = 1; i <= stack.workers; i++) {
				instance.workers.push(
					new N8nHelperProcess(
						'worker',
						`${name} worker ${i}`,
						join(userFolder, `worker-${i}`),
						await freePort(),
						await freePort(),
						[`--concurrency=${stack.concurrency}`],
						() => instance.environment(),
						ownProcessGroup,
						onStarted,
					),
				);
			}
			instance.webhookProcessor = new N8nHelperProcess(
				'webhook',
				`${name} webhook processor`,
				join(userFolder, 'webhook'),
				stack.webhookPort,
				await freePort(),
				[],
				() => instance.environment(),
				ownProcessGroup,
				onStarted,
			);
		}
		if (onStarted) instance.onSpawn = (pid) => onStarted(name, pid);
		onCreated?.(instance);
		try {
			await instance.start();
			await instance.ensureOwnerAndApiKey();
		} catch (error) {
			// A failed start leaves nothing running: whatever of the stack did start is stopped.
			await instance.stopStarted();
			throw error;
		}
		return instance;
	}

	get baseUrl(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	/** Where production webhooks and resume URLs are served: the main, or in queue mode the webhook processor. */
	get webhookBaseUrl(): string {
		return this.webhookProcessor?.baseUrl ?? this.baseUrl;
	}

	/** The n8n processes besides the main (queue mode). */
	get helpers(): N8nHelperProcess[] {
		return [...this.workers, ...(this.webhookProcessor ? [this.webhookProcessor] : [])];
	}

	/** What every process of this instance shares: database, queue, encryption key, webhook URL. */
	environment(): Record<string, string> {
		const common = { ...QUIET_ENV, WEBHOOK_URL: `${this.webhookBaseUrl}/` };
		if (!this.queue) return { ...common, DB_TYPE: 'sqlite', ...this.extraEnv };
		return {
			...common,
			EXECUTIONS_MODE: 'queue',
			DB_TYPE: 'postgresdb',
			DB_POSTGRESDB_HOST: '127.0.0.1',
			DB_POSTGRESDB_PORT: String(this.queue.services.postgresPort),
			DB_POSTGRESDB_DATABASE: this.queue.database,
			DB_POSTGRESDB_USER: 'postgres',
			DB_POSTGRESDB_PASSWORD: '',
			QUEUE_BULL_REDIS_HOST: '127.0.0.1',
			QUEUE_BULL_REDIS_PORT: String(this.queue.services.redisPort),
			// Stacks sharing one Redis keep to their own queue and pub/sub channels.
			QUEUE_BULL_PREFIX: `bull-${this.queue.database}`,
			N8N_REDIS_KEY_PREFIX: `n8n-${this.queue.database}`,
			N8N_ENCRYPTION_KEY: this.encryptionKey(),
			// Production webhooks go to the webhook processor only, as in a scaled deployment.
			N8N_DISABLE_PRODUCTION_MAIN_PROCESS: 'true',
			...this.extraEnv,
		};
	}

	/** One key for every process of the stack, kept in the main's folder so restarts keep it. */
	private encryptionKey(): string {
		const file = join(this.userFolder, 'e2e-encryption-key.txt');
		if (!existsSync(file)) writeFileSync(file, randomBytes(24).toString('hex'));
		return readFileSync(file, 'utf8').trim();
	}

	/**
	 * Starts what is not running: the main (it migrates the database first), then in queue mode the
	 * workers and the webhook processor.
	 */
	async start(): Promise<void> {
		this.refuseIfAttached('start()');
		if (this.abandoned) throw new Error(`n8n ${this.name} is being stopped`);
		if (!this.process) await this.startMain();
		if (this.abandoned) throw new Error(`n8n ${this.name} is being stopped`);
		// Every helper has started or failed before this returns, so a failure leaves none half-started.
		const started = await Promise.allSettled(
			this.helpers.map(async (helper) => await helper.start()),
		);
		const failed = started.find((result) => result.status === 'rejected');
		if (failed) throw failed.reason;
	}

	/** Set by stopStarted(): nothing more is started. */
	private abandoned = false;

	/**
	 * Stops whatever of this instance runs, in the reverse order of starting: the webhook processor,
	 * the workers, then the main. For a start that failed, or was interrupted, midway (a main that is
	 * still starting is stopped too); nothing is started after it. Waits for each to exit.
	 */
	async stopStarted(): Promise<void> {
		this.abandoned = true;
		await this.webhookProcessor?.stop();
		await Promise.all(this.workers.map(async (worker) => await worker.stop()));
		await this.terminate('SIGTERM');
	}

	private async startMain(): Promise<void> {
		const logOffset = existsSync(this.logFile) ? statSync(this.logFile).size : 0;
		const log = createWriteStream(this.logFile, { flags: 'a' });
		this.mainSpawnedAt = Date.now();
		const child = spawn(n8nNodeBin, [n8nBin, 'start'], {
			env: {
				...process.env,
				...this.environment(),
				N8N_USER_FOLDER: this.userFolder,
				N8N_PORT: String(this.port),
				N8N_RUNNERS_BROKER_PORT: String(this.brokerPort),
			},
			stdio: ['ignore', 'pipe', 'pipe'],
			detached: this.ownProcessGroup,
		});
		child.stdout?.pipe(log);
		child.stderr?.pipe(log);
		this.process = child;
		// Stopped by the e2e global teardown if its suite does not stop it (test/harness/startedServers.ts).
		child.once('exit', recordProcess(`n8n ${this.name}`, child.pid));
		if (child.pid !== undefined) this.onSpawn?.(child.pid);
		this.exited = new Promise((resolve) =>
			child.once('exit', (code, signal) => {
				if (!this.terminating) for (const listener of this.exitListeners) listener(code, signal);
				resolve(code);
			}),
		);
		const startupFailed = failureOnExit(
			this.name,
			this.exited as Promise<number | null>,
			this.logFile,
		);
		await Promise.race([startupFailed, readiness(this.name, this.baseUrl)]);
		// n8n 1.x answers readiness before its REST API is mounted (a 404 for POST /rest/owner/setup).
		await Promise.race([
			startupFailed,
			waitFor(
				`n8n ${this.name} to serve its REST API`,
				async () => ((await fetch(`${this.baseUrl}/rest/settings`)).ok ? true : undefined),
				{
					timeoutMs: 180_000,
				},
			),
		]);
		// n8n 1.123 answers both before its startup recovery pass (MessageEventBus.initialize) ends. That
		// pass amends every execution its event log holds unfinished, a waiting one included (a waiting run
		// logs no end): marked `crashed`, then saved `waiting` again by the hooks it reruns for it
		// (execution-recovery.service.js recoverFromLogs). A read in between sees `crashed` (a CI run, issue 26).
		// The pass ends with this debug line, on 2.41.1 too (a script that logs less does not wait for it).
		if (this.environment().N8N_LOG_LEVEL === 'debug')
			await Promise.race([
				startupFailed,
				waitFor(
					`n8n ${this.name} to end its startup recovery pass`,
					async () =>
						this.logSince(logOffset).includes('MessageEventBus initialized') ? true : undefined,
					{ timeoutMs: 180_000 },
				),
			]);
		startupFailed.catch(() => undefined);
	}

	/** The main's log from a byte offset on (the whole log can be large after many restarts). */
	private logSince(offset: number): string {
		const size = statSync(this.logFile).size;
		if (size <= offset) return '';
		const buffer = Buffer.alloc(size - offset);
		const fd = openSync(this.logFile, 'r');
		try {
			readSync(fd, buffer, 0, buffer.length, offset);
		} finally {
			closeSync(fd);
		}
		return buffer.toString('utf8');
	}

	/** The n8n process's id while it runs. */
	get pid(): number | undefined {
		return this.process?.pid;
	}

	/** Calls `listener` when n8n exits without being stopped or killed through this object (a crash). */
	onUnexpectedExit(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void {
		this.exitListeners.push(listener);
	}

	private onSpawn?: (pid: number) => void;

	/**
	 * SIGTERM and wait: n8n shuts down gracefully (triggers closed, static data as n8n leaves it). In
	 * queue mode the whole stack stops: the webhook processor and the main, then the workers (which
	 * finish the runs they hold). On a handle made by `attach` (the shared n8n), which owns no process:
	 * unpublishes the workflows this handle published, so the suites after it share an n8n that no
	 * longer polls or fires for a suite that has ended (its sources stopped).
	 */
	async stop(): Promise<void> {
		if (this.attached) {
			for (const id of this.published) await this.unpublish(id).catch(() => undefined);
			return;
		}
		await this.webhookProcessor?.stop();
		await this.terminate('SIGTERM');
		await Promise.all(this.workers.map(async (worker) => await worker.stop()));
	}

	/**
	 * SIGKILL of the main: a crash. Nothing n8n would do on shutdown happens. In queue mode the workers
	 * and the webhook processor go on (`start()` brings the main back).
	 */
	async kill(): Promise<void> {
		this.refuseIfAttached('kill()');
		await this.terminate('SIGKILL');
	}

	async restart(): Promise<void> {
		this.refuseIfAttached('restart()');
		await this.stop();
		await this.start();
		await this.login();
	}

	private async terminate(signal: NodeJS.Signals): Promise<void> {
		if (!this.process) return;
		this.terminating = true;
		this.process.kill(signal);
		await this.exited;
		this.terminating = false;
		this.process = undefined;
		this.cookie = undefined;
	}

	/** The main's log (triggers, activation, deduplication refusals). */
	log(): string {
		return readFileSync(this.logFile, 'utf8');
	}

	/** Queue mode: which worker (1-based) started each execution, from the workers' logs. */
	workerOfExecutions(): Map<string, number> {
		const ran = new Map<string, number>();
		this.workers.forEach((worker, i) => {
			for (const id of worker.executionsStarted()) ran.set(id, i + 1);
		});
		return ran;
	}

	// ---- REST (editor session) and public API ----

	private get apiKeyFile(): string {
		return join(this.userFolder, 'e2e-api-key.txt');
	}

	private async ensureOwnerAndApiKey(): Promise<void> {
		if (existsSync(this.apiKeyFile)) {
			this.apiKey = readFileSync(this.apiKeyFile, 'utf8').trim();
			// The session of the handle that logged in last: suites sharing an n8n would each log in,
			// over n8n's five logins a minute per user.
			if (existsSync(this.sessionFile)) this.cookie = readFileSync(this.sessionFile, 'utf8');
			else await this.login();
			return;
		}
		const { response: setup, text } = await whenDatabaseReady(`${this.baseUrl}/rest/owner/setup`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify(OWNER),
		});
		if (!setup.ok) throw new Error(`owner setup failed: ${setup.status} ${text}`);
		this.keepSession(cookieFrom(setup));
		const scopes = (await this.rest<{ data: string[] }>('GET', '/rest/api-keys/scopes')).data;
		const created = await this.rest<{ data: { rawApiKey: string } }>('POST', '/rest/api-keys', {
			label: 'durable-triggers harness',
			scopes,
			expiresAt: null,
		});
		this.apiKey = created.data.rawApiKey;
		writeFileSync(this.apiKeyFile, this.apiKey);
	}

	static get owner() {
		return OWNER;
	}

	private get sessionFile(): string {
		return join(this.userFolder, 'e2e-session-cookie.txt');
	}

	/**
	 * Logs the owner in. n8n 2.41 allows five logins a minute per user (auth.controller.js `/login`,
	 * keyedRateLimit, in production mode): past them it answers 429, a wait here, not a failure.
	 */
	async login(): Promise<void> {
		const deadline = Date.now() + LOGIN_LIMIT_WAIT_MS;
		for (;;) {
			const { response, text } = await whenDatabaseReady(`${this.baseUrl}/rest/login`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ emailOrLdapLoginId: OWNER.email, password: OWNER.password }),
			});
			if (response.status === 429 && Date.now() < deadline) {
				await new Promise((resolve) => setTimeout(resolve, 5_000));
				continue;
			}
			if (!response.ok) throw new Error(`login failed: ${response.status} ${text}`);
			this.keepSession(cookieFrom(response));
			return;
		}
	}

	/** The session for this handle's calls, and for the next handle on this n8n (ensureOwnerAndApiKey). */
	private keepSession(cookie: string): void {
		this.cookie = cookie;
		writeFileSync(this.sessionFile, cookie);
	}

	/** The owner's session cookie, for requests a test makes the way a browser would. */
	async sessionCookie(): Promise<string> {
		if (!this.cookie) await this.login();
		return this.cookie ?? '';
	}

	/** A call to the editor's internal REST API with the owner's session. */
	async rest<T>(method: string, path: string, body?: unknown): Promise<T> {
		if (!this.cookie) await this.login();
		const { response, text } = await whenDatabaseReady(`${this.baseUrl}${path}`, {
			method,
			headers: {
				'content-type': 'application/json',
				cookie: this.cookie ?? '',
				'browser-id': 'e2e',
			},
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		if (!response.ok) throw new ApiError(method, path, response.status, text);
		return (text ? JSON.parse(text) : undefined) as T;
	}

	/** A call to n8n's public API (`/api/v1`) with the owner's API key. */
	async api<T>(method: string, path: string, body?: unknown): Promise<T> {
		const { response, text } = await whenDatabaseReady(`${this.baseUrl}/api/v1${path}`, {
			method,
			headers: { 'content-type': 'application/json', 'x-n8n-api-key': this.apiKey ?? '' },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		if (!response.ok) throw new ApiError(method, path, response.status, text);
		return (text ? JSON.parse(text) : undefined) as T;
	}

	async createCredential(
		name: string,
		type: string,
		data: Record<string, unknown>,
	): Promise<string> {
		if (isN8n1) {
			// n8n 1.x's public API requires every field of the type's schema, also those another choice
			// hides (e.g. the token of a signature credential); the editor's API stores what it gets.
			const created = await this.rest<{ data: { id: string } }>('POST', '/rest/credentials', {
				name,
				type,
				data,
			});
			return created.data.id;
		}
		const created = await this.api<{ id: string }>('POST', '/credentials', { name, type, data });
		return created.id;
	}

	/** Imports a workflow (as exported JSON) and returns its id. */
	async importWorkflow(workflow: WorkflowJson): Promise<string> {
		const { name, nodes, connections, settings } = workflow;
		const created = await this.api<{ id: string }>('POST', '/workflows', {
			name,
			nodes,
			connections,
			settings: settings ?? { executionOrder: 'v1' },
		});
		return created.id;
	}

	/** The workflows published through this handle and not unpublished since. */
	private readonly published = new Set<string>();

	/** Publishes the workflow (n8n 2.x); n8n 1.x activates it instead (`/activate`). */
	async publish(workflowId: string): Promise<void> {
		this.published.add(workflowId);
		await this.api(
			'POST',
			`/workflows/${workflowId}/${isN8n1 ? 'activate' : 'publish'}`,
			isN8n1 ? undefined : {},
		);
	}

	/** Unpublishes (n8n 2.x) or deactivates (n8n 1.x) the workflow. */
	async unpublish(workflowId: string): Promise<void> {
		await this.api(
			'POST',
			`/workflows/${workflowId}/${isN8n1 ? 'deactivate' : 'unpublish'}`,
			isN8n1 ? undefined : {},
		);
		this.published.delete(workflowId);
	}

	/**
	 * Publishes (2.x) or activates (1.x) a workflow whose trigger is expected to refuse, and returns the
	 * message n8n shows for it. n8n 2.x publishes at once and reports the trigger's refusal on the
	 * workflow's publication status; n8n 1.x refuses the activation itself (400 with the message).
	 */
	async activationError(workflowId: string, timeoutMs = 90_000): Promise<string> {
		if (isN8n1) {
			try {
				await this.publish(workflowId);
			} catch (error) {
				if (error instanceof ApiError && error.status === 400)
					return (JSON.parse(error.body) as { message: string }).message;
				throw error;
			}
			throw new Error(`workflow ${workflowId} was activated; its trigger was expected to refuse`);
		}
		await this.publish(workflowId);
		const status = await waitFor(
			`the publication of ${workflowId} to fail`,
			async () => {
				const { data } = await this.rest<{
					data: { status: string; triggers: Array<{ status: string; errorMessage?: string }> };
				}>('GET', `/rest/workflows/${workflowId}/publication-status`);
				return data.status === 'failed' ? data : undefined;
			},
			{ timeoutMs, intervalMs: 1_000 },
		);
		return status.triggers[0].errorMessage ?? '';
	}

	async getWorkflow(
		workflowId: string,
	): Promise<{ id: string; active: boolean; staticData?: unknown; nodes: unknown[] }> {
		return await this.api('GET', `/workflows/${workflowId}`);
	}

	/** Executions of a workflow with their data, oldest first. */
	async executions(
		workflowId: string,
		{ status }: { status?: 'running' | 'new' } = {},
	): Promise<Execution[]> {
		// Without a status, n8n's public API lists every execution but running ones.
		const all = status
			? (await this.executionPages({ workflowId, includeData: 'true', status })).map((execution) =>
					asSaved(execution, this.mainSpawnedAt),
				)
			: await this.executionsReadOnce(workflowId);
		if (isN8n1 && !status) {
			// n8n 1.x's public list leaves out executions it holds in memory, waiting ones included:
			// the editor's list names them, and the public API returns each by id.
			const listed = new Set(all.map((execution) => execution.id));
			const filter = encodeURIComponent(JSON.stringify({ workflowId }));
			const summary = await this.rest<{ data: { results: Array<{ id: string; status: string }> } }>(
				'GET',
				`/rest/executions?filter=${filter}&limit=5000`,
			);
			for (const { id } of summary.data.results) {
				if (listed.has(id)) continue;
				const execution = await this.execution(id).catch((error: unknown) => {
					// Running or just created: the public API refuses it until it has settled (400).
					if (error instanceof ApiError && error.status === 400) return undefined;
					throw error;
				});
				if (execution) all.push(execution);
			}
		}
		return all.sort((a, b) => Number(a.id) - Number(b.id));
	}

	/** Ended executions read with their data, by id: what n8n saved of them does not change. */
	private readonly endedExecutions = new Map<string, Execution>();

	/**
	 * The workflow's executions but running ones, with their data, each ended one read with its data
	 * once: the list without data (cheap for n8n) names them, and only those not read ended before are
	 * read with it, newest first (n8n lists by id, descending) down to the oldest of them. A read of a
	 * burst's thousand executions with their data has n8n load and serialize every one, and the tests
	 * count bursts again and again while they wait, side by side on CI's two cores.
	 */
	private async executionsReadOnce(workflowId: string): Promise<Execution[]> {
		const listed = await this.executionSummaries(workflowId);
		const unread = listed.filter((e) => !this.endedExecutions.has(e.id)).map((e) => Number(e.id));
		const read =
			unread.length === 0
				? []
				: (await this.executionPages({ workflowId, includeData: 'true' }, Math.min(...unread))).map(
						(execution) => asSaved(execution, this.mainSpawnedAt),
					);
		for (const execution of read)
			if (isFinal(execution)) this.endedExecutions.set(execution.id, execution);
		const byId = new Map<string, Execution>();
		for (const { id } of listed) {
			const ended = this.endedExecutions.get(id);
			if (ended) byId.set(id, ended);
		}
		for (const execution of read) byId.set(execution.id, execution);
		return [...byId.values()];
	}

	/**
	 * The workflow's executions without their data, each once: cheap enough to count a burst with
	 * while it is being measured (benchmarks). Pages are read while runs are being saved, so an
	 * execution can show on two.
	 */
	async executionSummaries(workflowId: string): Promise<Execution[]> {
		const all = await this.executionPages({ workflowId });
		return [...new Map(all.map((execution) => [execution.id, execution])).values()];
	}

	/**
	 * Every page of the public API's execution list for these query parameters (newest first), or
	 * those down to the page that reaches execution `downTo`.
	 */
	private async executionPages(
		parameters: Record<string, string>,
		downTo = 0,
	): Promise<Execution[]> {
		const all: Execution[] = [];
		let cursor: string | undefined;
		do {
			const query = new URLSearchParams({ ...parameters, limit: '250' });
			if (cursor) query.set('cursor', cursor);
			const page = await this.api<{ data: Execution[]; nextCursor?: string | null }>(
				'GET',
				`/executions?${query}`,
			);
			all.push(...page.data);
			const oldest = page.data.at(-1);
			cursor = oldest && Number(oldest.id) <= downTo ? undefined : (page.nextCursor ?? undefined);
		} while (cursor);
		return all;
	}

	async execution(id: string): Promise<Execution> {
		return asSaved(
			await this.api<Execution>('GET', `/executions/${id}?includeData=true`),
			this.mainSpawnedAt,
		);
	}

	/** "Execute step" on a trigger node as the editor runs it: the manual execution, once it has ended. */
	async executeStep(workflowId: string, nodeName: string): Promise<Execution> {
		const { data: run } = await this.rest<{ data: { executionId: string } }>(
			'POST',
			`/rest/workflows/${workflowId}/run`,
			{
				triggerToStartFrom: { name: nodeName },
				destinationNode: { nodeName, mode: 'inclusive' },
			},
		);
		return await waitFor(`the Execute step run of ${nodeName}`, async () => {
			const execution = await this.execution(run.executionId);
			return isFinal(execution) ? execution : undefined;
		});
	}

	/**
	 * Waits until the workflow has executions satisfying `done`, polling n8n's API. The default bound
	 * is n8n's, not the run's: after a SIGKILL a busy n8n (CI's 2 cores, three lanes) took 2 minutes
	 * to re-activate a workflow and poll (stop 44's local .ci/run: pollTrigger's "First Poll Starts
	 * nothing" run came 1 s after a 90 s wait gave up).
	 */
	async waitForExecutions(
		workflowId: string,
		done: (executions: Execution[]) => boolean,
		description: string,
		timeoutMs = 300_000,
	): Promise<Execution[]> {
		// The executions with their data are read again only when the list without data (cheap for n8n)
		// differs from what that read showed, and at most every 2 s: a read with data has n8n load and
		// serialize every execution's data (300 of them every 300 ms during a retried burst), and tests
		// wait side by side on CI's two cores (issue 29's CI time; stop 42's CI at 47 minutes).
		let last: Execution[] | undefined;
		let readAt = 0;
		return await waitFor(
			`${description} (workflow ${workflowId})`,
			async () => {
				const listed = statusesOf(await this.executionSummaries(workflowId));
				if (!last || (statusesOf(last) !== listed && Date.now() - readAt >= 2_000)) {
					readAt = Date.now();
					last = await this.executions(workflowId);
				}
				return done(last) ? last : undefined;
			},
			{ timeoutMs, intervalMs: 300 },
		);
	}

	/** Waits until `count` executions of the workflow have ended (any final status). */
	async waitForFinishedExecutions(
		workflowId: string,
		count: number,
		timeoutMs?: number,
	): Promise<Execution[]> {
		const executions = await this.waitForExecutions(
			workflowId,
			(all) => all.filter(isFinal).length >= count,
			`${count} finished executions`,
			timeoutMs,
		);
		return executions.filter(isFinal);
	}
}

/** Each execution's id and status, sorted: what a list without data says of a workflow's runs. */
function statusesOf(executions: Execution[]): string {
	return executions
		.map((execution) => `${execution.id}:${execution.status}`)
		.sort()
		.join(',');
}

export function isFinal(execution: Execution): boolean {
	return !['running', 'new', 'waiting'].includes(execution.status);
}

/**
 * An execution as n8n will have saved it. n8n 1.x on SQLite (its default, pool size 0) saves an
 * ended execution's status and its data in two updates with no transaction (1.123's
 * `ExecutionRepository.updateExistingExecution`): between them a read finds it ended with the data
 * it was saved with before. Seen on a busy machine: a batch run read back `success` with no trigger
 * output, a resumed Round-Trip Wait run `success` with no output after the wait. Such data still
 * lists a node to run (the trigger of a new run, the waiting node of a resumed one) or no node's run
 * data, or, for a failed run, no error (n8n 1.123's `determineFinalExecutionStatus` names a run
 * failed by its error). Such a read is shown as still running, unless the execution ended before
 * the running main was spawned (`mainSpawnedAt`): the main that saved its status was stopped or
 * killed between the two updates (on SQLite it is the one process that writes executions), and n8n
 * keeps it so for good. Seen once in issue 36's owedSources kill case: a run whose item had reported,
 * saved `success` with the data it was created with (its trigger's items in the node execution
 * stack, which triggerItems reads), n8n's event log holding its `n8n.workflow.success`. Such a read
 * is shown as saved.
 */
function asSaved(execution: Execution, mainSpawnedAt: number | undefined): Execution {
	// n8n 2.x writes both in one transaction; an empty run data there is an execution too large to
	// display (`dataTooLargeToDisplay`), which has ended.
	if (!isN8n1 || !execution.data) return execution;
	const { resultData, executionData } = execution.data;
	const halfSaved =
		execution.status === 'success'
			? Object.keys(resultData.runData).length === 0 ||
				(executionData?.nodeExecutionStack.length ?? 0) > 0
			: execution.status === 'error' && !resultData.error;
	const savedForGood =
		mainSpawnedAt !== undefined &&
		execution.stoppedAt !== null &&
		Date.parse(execution.stoppedAt) < mainSpawnedAt;
	return halfSaved && !savedForGood ? { ...execution, status: 'running' } : execution;
}

/** The JSON items a node produced on one output in its last run of an execution. */
export function nodeOutput(
	execution: Execution,
	nodeName: string,
	outputIndex = 0,
): Array<Record<string, unknown>> {
	const runs = execution.data?.resultData.runData[nodeName];
	if (!runs?.length) return [];
	const output = runs[runs.length - 1].data?.main[outputIndex] ?? [];
	return output.map((item) => item.json);
}

export class ApiError extends Error {
	constructor(
		readonly method: string,
		readonly path: string,
		readonly status: number,
		readonly body: string,
	) {
		super(`${method} ${path} answered ${status}: ${body.slice(0, 500)}`);
	}
}

function cookieFrom(response: Response): string {
	const cookies = response.headers.getSetCookie().map((c) => c.split(';')[0]);
	if (!cookies.length) throw new Error('n8n set no session cookie');
	return cookies.join('; ');
}
