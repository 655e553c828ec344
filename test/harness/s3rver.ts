import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { setImmediate } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

import { canonicalQuery, signS3Request, uriEncode } from '../../core/connectors/s3Signature';
import type { S3Connection } from '../../core/connectors/types';
import { freePort } from './net';
import { ServerProcess } from './serverProcess';

/** The metadata s3rver keeps beside each object it stores. */
const METADATA = JSON.stringify({ 'content-type': 'text/csv' });

/** One request as the store received it. */
export interface S3rverRequest {
	method: string;
	/** The path, decoded: `/drop/in/a.csv`. */
	path: string;
	query: Record<string, string>;
}

/**
 * An S3-compatible store for tests: @20minutes/s3rver 5.0.0 (it checks SigV4 signatures) in a child
 * node under --openssl-legacy-provider (test/harness/s3rverMain.mjs), path-style on a loopback port,
 * one bucket, its data on tmpfs (/dev/shm; the temp dir where there is none). Every request it
 * receives is recorded in `requests`, so tests count a poll's requests. `fill` writes objects straight
 * into its on-disk layout, for listings far larger than its API could be fed in a test's time.
 */
export class S3rver extends ServerProcess {
	readonly requests: S3rverRequest[] = [];
	/** s3rver's one accepted key pair. */
	readonly accessKeyId = 'S3RVER';
	readonly secretAccessKey = 'S3RVER';
	readonly region = 'us-east-1';
	/** Objects written aside so far, each under its own name. */
	private staged = 0;
	/** How many objects `fill` wrote under each prefix. */
	private readonly filledUnder = new Map<string, number>();

	private constructor(
		process: ChildProcess,
		dir: string,
		readonly port: number,
		readonly bucket: string,
	) {
		super(process, dir, 's3rver.log');
	}

	/**
	 * Starts a store on `port` (default: a free one). `ownProcessGroup`: for `npm start`'s demo store,
	 * in a process group of its own, that outlives its starter (stopped by the next start) and records
	 * no requests; else it ends when the test process does, however that ends.
	 */
	static async start({
		bucket = 'drop',
		port,
		ownProcessGroup = false,
	}: { bucket?: string; port?: number; ownProcessGroup?: boolean } = {}): Promise<S3rver> {
		port ??= await freePort();
		const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 's3rver-test-'));
		mkdirSync(join(dir, 'data'));
		const child = spawn(
			process.execPath,
			[
				'--openssl-legacy-provider',
				join(__dirname, 's3rverMain.mjs'),
				join(dir, 'data'),
				String(port),
				bucket,
				...(ownProcessGroup ? ['standalone'] : []),
			],
			// stdin: the child ends when the test process does, however it ends.
			{ stdio: [ownProcessGroup ? 'ignore' : 'pipe', 'pipe', 'pipe'], detached: ownProcessGroup },
		);
		const store = new S3rver(child, dir, port, bucket);
		let ready = false;
		createInterface({ input: child.stdout! }).on('line', (line) => {
			if (line === 'ready') ready = true;
			else if (line.startsWith('{'))
				store.record(JSON.parse(line) as { method: string; url: string });
		});
		await store.ready(`s3rver on port ${port}`, async () => (ready ? true : undefined));
		return store;
	}

	get endpoint(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	/** The S3 ops' connection to this store (path-style, its keys). */
	connection(overrides: Partial<S3Connection> = {}): S3Connection {
		return {
			endpoint: this.endpoint,
			region: this.region,
			accessKeyId: this.accessKeyId,
			secretAccessKey: this.secretAccessKey,
			pathStyle: true,
			...overrides,
		};
	}

	/** n8n's `s3` credential for this store, as the e2e tests create it. */
	credential(): Record<string, unknown> {
		return {
			endpoint: this.endpoint,
			region: this.region,
			accessKeyId: this.accessKeyId,
			secretAccessKey: this.secretAccessKey,
			forcePathStyle: true,
			ignoreSSLIssues: false,
		};
	}

	/** The ListObjectsV2 requests received so far. */
	listings(): S3rverRequest[] {
		return this.requests.filter(
			(request) => request.method === 'GET' && request.query['list-type'] === '2',
		);
	}

	/** PutObject through the store's API (signed), as an uploader would: a new object or a rewrite. */
	async put(key: string, body: string | Buffer): Promise<void> {
		await this.objectRequest('PUT', key, 200, body);
	}

	/** DeleteObject through the store's API (signed), as a partner taking a file back would. */
	async delete(key: string): Promise<void> {
		await this.objectRequest('DELETE', key, 204);
	}

	private async objectRequest(
		method: 'PUT' | 'DELETE',
		key: string,
		expected: number,
		body: string | Buffer = '',
	): Promise<void> {
		const path = `/${this.bucket}/${key}`;
		const headers = signS3Request({
			method,
			host: `127.0.0.1:${this.port}`,
			path,
			payloadSha256: createHash('sha256').update(body).digest('hex'),
			credentials: this,
			region: this.region,
			now: Date.now(),
		});
		const response = await fetch(`${this.endpoint}${uriEncode(path, true)}`, {
			method,
			headers,
			...(method === 'PUT' && { body }),
		});
		if (response.status !== expected)
			throw new Error(`s3rver ${method} ${key}: HTTP ${response.status} ${await response.text()}`);
	}

	/** A signed GET of the bucket's listing, as a plain client would send it. */
	async list(query: Record<string, string>): Promise<string> {
		const path = `/${this.bucket}`;
		const headers = signS3Request({
			method: 'GET',
			host: `127.0.0.1:${this.port}`,
			path,
			query,
			credentials: this,
			region: this.region,
			now: Date.now(),
		});
		const response = await fetch(`${this.endpoint}${path}?${canonicalQuery(query)}`, { headers });
		return await response.text();
	}

	/**
	 * Writes `count` objects under `prefix` straight into s3rver's layout (`<bucket>/<key's folders>/
	 * <name>._S3rver_object`; s3rver computes each ETag at its first listing), date-prefixed as
	 * `<prefix>2026-MM-DD/NNNNNN.csv`, 1,000 a day from 2026-01-01 on: s3rver skips whole day folders
	 * before a listing's start-after, as a flat folder it could not. Each is written aside and renamed
	 * into place, so a listing meanwhile never sees half an object. `movable`: also the side files
	 * s3rver's CopyObject copies (`….md5`, `._S3rver_metadata.json`), without which it answers 500 (tmpfs
	 * gives each file a page: three times the memory). A later call under the same prefix goes on after
	 * the last key (new objects of a date-prefixed layout). Returns the keys, in key order.
	 */
	async fill(prefix: string, count: number, { movable = false } = {}): Promise<string[]> {
		const staging = join(this.dir, 'staging');
		mkdirSync(staging, { recursive: true });
		const first = this.filledUnder.get(prefix) ?? 0;
		this.filledUnder.set(prefix, first + count);
		const keys = Array.from({ length: count }, (_, i) => {
			const n = first + i;
			const day = new Date(Date.UTC(2026, 0, 1) + Math.floor(n / 1000) * 86_400_000);
			return `${prefix}${day.toISOString().slice(0, 10)}/${String(n).padStart(6, '0')}.csv`;
		});
		// Synchronous writes (the thread pool's are three times slower on a busy machine), a day's
		// folder at a time, the event loop let through between them: the test's idle connections to
		// n8n must see n8n closing them.
		for (let start = 0; start < count; start += 1000) {
			const day = keys.slice(start, start + 1000);
			mkdirSync(dirname(this.objectPath(day[0])), { recursive: true });
			for (const key of day) this.writeObject(key, staging, movable);
			await setImmediate();
		}
		return keys;
	}

	private objectPath(key: string): string {
		return join(this.dir, 'data', this.bucket, `${key}._S3rver_object`);
	}

	/** One object (and its side files), the object written aside and renamed into place last. */
	private writeObject(key: string, staging: string, movable: boolean): void {
		const target = this.objectPath(key);
		const content = `${key}\n`;
		if (movable) {
			writeFileSync(`${target}.md5`, createHash('md5').update(content).digest('hex'));
			writeFileSync(target.replace(/object$/, 'metadata.json'), METADATA);
		}
		const aside = join(staging, String(this.staged++));
		writeFileSync(aside, content);
		renameSync(aside, target);
	}

	private record({ method, url }: { method: string; url: string }): void {
		const parsed = new URL(url, this.endpoint);
		this.requests.push({
			method,
			path: decodeURIComponent(parsed.pathname),
			query: Object.fromEntries(parsed.searchParams),
		});
	}
}
