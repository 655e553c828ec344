import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface RecordedRequest {
	method: string;
	path: string;
	query: Record<string, string>;
	headers: Record<string, string | string[] | undefined>;
	rawBody: string;
	/** The body parsed as JSON, when it is JSON. */
	json?: unknown;
	receivedAt: number;
}

export interface ScriptedResponse {
	status?: number;
	/** Serialized as JSON unless `rawBody` is given. */
	body?: unknown;
	rawBody?: string;
	contentType?: string;
	headers?: Record<string, string>;
	/** Answers after this many milliseconds (latency the test controls). */
	delayMs?: number;
	/** Validators: a request carrying a matching If-None-Match / If-Modified-Since gets a 304. */
	etag?: string;
	lastModified?: Date;
}

export type Responder =
	| ScriptedResponse
	| ((request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>);

/**
 * A scriptable external system on loopback: JSON endpoints whose responses, status codes, validators,
 * latency and failures the test sets, a log of every request it received, and a way to call back.
 */
export class FakeSystem {
	private readonly routes = new Map<string, Responder>();
	private readonly received: RecordedRequest[] = [];
	private readonly waiters: Array<{
		match: (r: RecordedRequest) => boolean;
		resolve: (r: RecordedRequest) => void;
	}> = [];

	private constructor(private readonly server: Server) {}

	static async start(port = 0): Promise<FakeSystem> {
		let system: FakeSystem | undefined;
		const server = createServer((req, res) => void system?.handle(req, res));
		system = new FakeSystem(server);
		server.listen(port, '127.0.0.1');
		await once(server, 'listening');
		return system;
	}

	get port(): number {
		const address = this.server.address();
		if (!address || typeof address === 'string') throw new Error('not listening');
		return address.port;
	}

	get baseUrl(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	url(path: string): string {
		return `${this.baseUrl}${path}`;
	}

	/** Sets how `method path` answers from now on. */
	on(method: string, path: string, responder: Responder): this {
		this.routes.set(`${method.toUpperCase()} ${path}`, responder);
		return this;
	}

	requests(path?: string): RecordedRequest[] {
		return path ? this.received.filter((r) => r.path === path) : [...this.received];
	}

	/** Resolves with the first request (already received or future) that matches. */
	async nextRequest(
		match: (request: RecordedRequest) => boolean,
		timeoutMs = 60_000,
	): Promise<RecordedRequest> {
		const seen = this.received.find(match);
		if (seen) return seen;
		return await new Promise((resolve, reject) => {
			const timer = setTimeout(
				() => reject(new Error(`no matching request within ${timeoutMs} ms`)),
				timeoutMs,
			);
			this.waiters.push({
				match,
				resolve: (request) => {
					clearTimeout(timer);
					resolve(request);
				},
			});
		});
	}

	/** Waits until `path` has received at least `count` requests. */
	async requestCount(path: string, count: number, timeoutMs = 60_000): Promise<RecordedRequest[]> {
		let seen = 0;
		await this.nextRequest((r) => r.path === path && ++seen >= count, timeoutMs).catch((error) => {
			if (this.requests(path).length < count) throw error;
		});
		return this.requests(path);
	}

	/** Calls back: sends a request as the external system would. */
	async send(
		url: string,
		{
			method = 'POST',
			headers = {},
			body,
		}: { method?: string; headers?: Record<string, string>; body?: string | unknown } = {},
	): Promise<{ status: number; body: string; json?: unknown }> {
		const raw = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);
		const response = await fetch(url, {
			method,
			headers: { 'content-type': 'application/json', ...headers },
			body: raw,
		});
		const text = await response.text();
		let json: unknown;
		try {
			json = JSON.parse(text);
		} catch {
			json = undefined;
		}
		return { status: response.status, body: text, json };
	}

	async close(): Promise<void> {
		this.server.closeAllConnections();
		await new Promise((resolve) => this.server.close(resolve));
	}

	private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const chunks: Buffer[] = [];
		for await (const chunk of req) chunks.push(chunk as Buffer);
		const url = new URL(req.url ?? '/', this.baseUrl);
		const rawBody = Buffer.concat(chunks).toString('utf8');
		const request: RecordedRequest = {
			method: req.method ?? 'GET',
			path: url.pathname,
			query: Object.fromEntries(url.searchParams),
			headers: req.headers,
			rawBody,
			json: parseJson(rawBody),
			receivedAt: Date.now(),
		};
		this.received.push(request);
		for (const waiter of [...this.waiters]) {
			if (waiter.match(request)) {
				this.waiters.splice(this.waiters.indexOf(waiter), 1);
				waiter.resolve(request);
			}
		}
		const responder = this.routes.get(`${request.method} ${request.path}`);
		if (!responder) {
			res
				.writeHead(404, { 'content-type': 'application/json' })
				.end(JSON.stringify({ error: `no route ${request.method} ${request.path}` }));
			return;
		}
		const scripted = typeof responder === 'function' ? await responder(request) : responder;
		if (scripted.delayMs) await new Promise((resolve) => setTimeout(resolve, scripted.delayMs));
		const headers: Record<string, string> = { ...scripted.headers };
		if (scripted.etag) headers.etag = scripted.etag;
		if (scripted.lastModified) headers['last-modified'] = scripted.lastModified.toUTCString();
		if (isNotModified(request, scripted)) {
			if (!res.destroyed) res.writeHead(304, headers).end();
			return;
		}
		const body =
			scripted.rawBody ?? (scripted.body === undefined ? '' : JSON.stringify(scripted.body));
		headers['content-type'] = scripted.contentType ?? 'application/json';
		if (!res.destroyed) res.writeHead(scripted.status ?? 200, headers).end(body);
	}
}

function isNotModified(request: RecordedRequest, scripted: ScriptedResponse): boolean {
	const ifNoneMatch = request.headers['if-none-match'];
	if (scripted.etag && typeof ifNoneMatch === 'string') return ifNoneMatch === scripted.etag;
	const ifModifiedSince = request.headers['if-modified-since'];
	if (scripted.lastModified && typeof ifModifiedSince === 'string') {
		return (
			Math.floor(scripted.lastModified.getTime() / 1000) <=
			Math.floor(Date.parse(ifModifiedSince) / 1000)
		);
	}
	return false;
}

function parseJson(text: string): unknown {
	if (!text) return undefined;
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}
