import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { copyNodesFolderTo } from './install';
import { freePort, waitFor } from './net';
import { instancesDir, isN8n1, n8nBin, n8nNodeBin } from './paths';

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
			runData: Record<string, Array<{ data?: { main: Array<Array<{ json: Record<string, unknown> }> | null> }; error?: unknown }>>;
			error?: { message: string; description?: string };
			lastNodeExecuted?: string;
		};
	};
}

export interface WorkflowJson {
	name: string;
	nodes: unknown[];
	connections: Record<string, unknown>;
	settings?: Record<string, unknown>;
	[key: string]: unknown;
}

const OWNER = { email: 'owner@example.com', password: 'Durable-Triggers-1', firstName: 'Test', lastName: 'Owner' };

/**
 * One real n8n, started from the pinned install with its own user folder, SQLite database and ports,
 * with this package installed where a community-node install lands. It can be stopped gracefully,
 * killed with SIGKILL and started again on the same folder and database.
 */
export class N8nInstance {
	private process?: ChildProcess;
	private exited?: Promise<number | null>;
	private terminating = false;
	private readonly exitListeners: Array<(code: number | null, signal: NodeJS.Signals | null) => void> = [];
	private apiKey?: string;
	private cookie?: string;
	readonly logFile: string;

	private constructor(
		readonly name: string,
		readonly userFolder: string,
		readonly port: number,
		private readonly brokerPort: number,
		private readonly extraEnv: Record<string, string>,
		private readonly ownProcessGroup: boolean,
	) {
		this.logFile = join(userFolder, 'n8n.log');
	}

	/** Creates a fresh instance folder with the packed package installed, and starts n8n on it. */
	static async launch(name: string, env: Record<string, string> = {}): Promise<N8nInstance> {
		const userFolder = join(instancesDir, `${name}-${Date.now()}-${process.pid}`);
		return await N8nInstance.open({ name, userFolder, port: await freePort(), env });
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
		/** Called as soon as the n8n process exists, before it is ready (to record its pid). */
		onStarted?: (pid: number) => void;
	}): Promise<N8nInstance> {
		mkdirSync(userFolder, { recursive: true });
		copyNodesFolderTo(userFolder);
		const instance = new N8nInstance(name, userFolder, port, await freePort(), env, ownProcessGroup);
		if (onStarted) instance.onSpawn = onStarted;
		await instance.start();
		await instance.ensureOwnerAndApiKey();
		return instance;
	}

	get baseUrl(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	async start(): Promise<void> {
		if (this.process) throw new Error(`n8n ${this.name} is already running`);
		const log = createWriteStream(this.logFile, { flags: 'a' });
		const child = spawn(n8nNodeBin, [n8nBin, 'start'], {
			env: {
				...process.env,
				// jest sets NODE_ENV=test, under which n8n does not start as it does for users.
				NODE_ENV: 'production',
				N8N_USER_FOLDER: this.userFolder,
				N8N_PORT: String(this.port),
				N8N_LISTEN_ADDRESS: '127.0.0.1',
				N8N_HOST: '127.0.0.1',
				N8N_PROTOCOL: 'http',
				WEBHOOK_URL: `${this.baseUrl}/`,
				N8N_RUNNERS_BROKER_PORT: String(this.brokerPort),
				DB_TYPE: 'sqlite',
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
				...this.extraEnv,
			},
			stdio: ['ignore', 'pipe', 'pipe'],
			detached: this.ownProcessGroup,
		});
		child.stdout?.pipe(log);
		child.stderr?.pipe(log);
		this.process = child;
		if (child.pid !== undefined) this.onSpawn?.(child.pid);
		this.exited = new Promise((resolve) =>
			child.once('exit', (code, signal) => {
				if (!this.terminating) for (const listener of this.exitListeners) listener(code, signal);
				resolve(code);
			}),
		);
		const startupFailed = this.exited.then((code) => {
			throw new Error(`n8n ${this.name} exited with code ${code} during start; see ${this.logFile}`);
		});
		await Promise.race([
			startupFailed,
			waitFor(
				`n8n ${this.name} to answer /healthz/readiness`,
				async () => ((await fetch(`${this.baseUrl}/healthz/readiness`)).ok ? true : undefined),
				{ timeoutMs: 180_000 },
			),
		]);
		// n8n 1.x answers readiness before its REST API is mounted (a 404 for POST /rest/owner/setup).
		await Promise.race([
			startupFailed,
			waitFor(`n8n ${this.name} to serve its REST API`, async () => ((await fetch(`${this.baseUrl}/rest/settings`)).ok ? true : undefined), {
				timeoutMs: 180_000,
			}),
		]);
		startupFailed.catch(() => undefined);
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

	/** SIGTERM and wait: n8n shuts down gracefully (triggers closed, static data as n8n leaves it). */
	async stop(): Promise<void> {
		await this.terminate('SIGTERM');
	}

	/** SIGKILL: a crash. Nothing n8n would do on shutdown happens. */
	async kill(): Promise<void> {
		await this.terminate('SIGKILL');
	}

	async restart(): Promise<void> {
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

	log(): string {
		return readFileSync(this.logFile, 'utf8');
	}

	// ---- REST (editor session) and public API ----

	private get apiKeyFile(): string {
		return join(this.userFolder, 'e2e-api-key.txt');
	}

	private async ensureOwnerAndApiKey(): Promise<void> {
		if (existsSync(this.apiKeyFile)) {
			this.apiKey = readFileSync(this.apiKeyFile, 'utf8').trim();
			await this.login();
			return;
		}
		const setup = await fetch(`${this.baseUrl}/rest/owner/setup`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify(OWNER),
		});
		if (!setup.ok) throw new Error(`owner setup failed: ${setup.status} ${await setup.text()}`);
		this.cookie = cookieFrom(setup);
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

	async login(): Promise<void> {
		const response = await fetch(`${this.baseUrl}/rest/login`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ emailOrLdapLoginId: OWNER.email, password: OWNER.password }),
		});
		if (!response.ok) throw new Error(`login failed: ${response.status} ${await response.text()}`);
		this.cookie = cookieFrom(response);
	}

	/** The owner's session cookie, for requests a test makes the way a browser would. */
	async sessionCookie(): Promise<string> {
		if (!this.cookie) await this.login();
		return this.cookie ?? '';
	}

	/** A call to the editor's internal REST API with the owner's session. */
	async rest<T>(method: string, path: string, body?: unknown): Promise<T> {
		if (!this.cookie) await this.login();
		const response = await fetch(`${this.baseUrl}${path}`, {
			method,
			headers: { 'content-type': 'application/json', cookie: this.cookie ?? '', 'browser-id': 'e2e' },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await response.text();
		if (!response.ok) throw new ApiError(method, path, response.status, text);
		return (text ? JSON.parse(text) : undefined) as T;
	}

	/** A call to n8n's public API (`/api/v1`) with the owner's API key. */
	async api<T>(method: string, path: string, body?: unknown): Promise<T> {
		const response = await fetch(`${this.baseUrl}/api/v1${path}`, {
			method,
			headers: { 'content-type': 'application/json', 'x-n8n-api-key': this.apiKey ?? '' },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await response.text();
		if (!response.ok) throw new ApiError(method, path, response.status, text);
		return (text ? JSON.parse(text) : undefined) as T;
	}

	async createCredential(name: string, type: string, data: Record<string, unknown>): Promise<string> {
		if (isN8n1) {
			// n8n 1.x's public API requires every field of the type's schema, also those another choice
			// hides (e.g. the token of a signature credential); the editor's API stores what it gets.
			const created = await this.rest<{ data: { id: string } }>('POST', '/rest/credentials', { name, type, data });
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

	/** Publishes the workflow (n8n 2.x); n8n 1.x activates it instead (`/activate`). */
	async publish(workflowId: string): Promise<void> {
		await this.api('POST', `/workflows/${workflowId}/${isN8n1 ? 'activate' : 'publish'}`, isN8n1 ? undefined : {});
	}

	/** Unpublishes (n8n 2.x) or deactivates (n8n 1.x) the workflow. */
	async unpublish(workflowId: string): Promise<void> {
		await this.api('POST', `/workflows/${workflowId}/${isN8n1 ? 'deactivate' : 'unpublish'}`, isN8n1 ? undefined : {});
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
				if (error instanceof ApiError && error.status === 400) return (JSON.parse(error.body) as { message: string }).message;
				throw error;
			}
			throw new Error(`workflow ${workflowId} was activated; its trigger was expected to refuse`);
		}
		await this.publish(workflowId);
		const status = await waitFor(
			`the publication of ${workflowId} to fail`,
			async () => {
				const { data } = await this.rest<{ data: { status: string; triggers: Array<{ status: string; errorMessage?: string }> } }>('GET', `/rest/workflows/${workflowId}/publication-status`);
				return data.status === 'failed' ? data : undefined;
			},
			{ timeoutMs, intervalMs: 1_000 },
		);
		return status.triggers[0].errorMessage ?? '';
	}

	async getWorkflow(workflowId: string): Promise<{ id: string; active: boolean; staticData?: unknown; nodes: unknown[] }> {
		return await this.api('GET', `/workflows/${workflowId}`);
	}

	/** Executions of a workflow with their data, oldest first. */
	async executions(workflowId: string): Promise<Execution[]> {
		const all: Execution[] = [];
		let cursor: string | undefined;
		do {
			const query = new URLSearchParams({ workflowId, includeData: 'true', limit: '250' });
			if (cursor) query.set('cursor', cursor);
			const page = await this.api<{ data: Execution[]; nextCursor?: string | null }>('GET', `/executions?${query}`);
			all.push(...page.data);
			cursor = page.nextCursor ?? undefined;
		} while (cursor);
		if (isN8n1) {
			// n8n 1.x's public list leaves out executions it holds in memory, waiting ones included:
			// the editor's list names them, and the public API returns each by id.
			const listed = new Set(all.map((execution) => execution.id));
			const filter = encodeURIComponent(JSON.stringify({ workflowId }));
			const summary = await this.rest<{ data: { results: Array<{ id: string; status: string }> } }>('GET', `/rest/executions?filter=${filter}&limit=5000`);
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

	async execution(id: string): Promise<Execution> {
		return await this.api('GET', `/executions/${id}?includeData=true`);
	}

	/** Waits until the workflow has executions satisfying `done`, polling n8n's API. */
	async waitForExecutions(
		workflowId: string,
		done: (executions: Execution[]) => boolean,
		description: string,
		timeoutMs = 90_000,
	): Promise<Execution[]> {
		return await waitFor(
			`${description} (workflow ${workflowId})`,
			async () => {
				const executions = await this.executions(workflowId);
				return done(executions) ? executions : undefined;
			},
			{ timeoutMs, intervalMs: 300 },
		);
	}

	/** Waits until `count` executions of the workflow have ended (any final status). */
	async waitForFinishedExecutions(workflowId: string, count: number, timeoutMs?: number): Promise<Execution[]> {
		const executions = await this.waitForExecutions(
			workflowId,
			(all) => all.filter(isFinal).length >= count,
			`${count} finished executions`,
			timeoutMs,
		);
		return executions.filter(isFinal);
	}
}

export function isFinal(execution: Execution): boolean {
	return !['running', 'new', 'waiting'].includes(execution.status);
}

/** The JSON items a node produced on one output in its last run of an execution. */
export function nodeOutput(execution: Execution, nodeName: string, outputIndex = 0): Array<Record<string, unknown>> {
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
