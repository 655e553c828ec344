import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { FakeClock } from '../../test/support/fakeClock';
import { fetchTransport } from '../../test/support/fetchTransport';
import { allOps, resolveOp } from './registry';
import { requestTarget } from './s3';
import type { S3File } from './s3Objects';
import type { OpContext, OpMemory, S3Connection } from './types';

/*
 * The S3 ops against an in-process fake S3 (path-style, one bucket "drop"): ListObjectsV2 pages,
 * GetObject with Range, HeadObject, CopyObject, DeleteObject, S3's XML errors. The fake does not check
 * signatures (that would recompute them with the signer under test): it records each request, and the
 * tests check its shape; the signatures themselves are pinned by AWS's examples (s3Signature.test.ts).
 */

interface StoredObject {
	body: Buffer;
	lastModifiedMs: number;
}

interface RecordedRequest {
	method: string;
	/** The path as sent, still percent-encoded. */
	rawPath: string;
	query: URLSearchParams;
	headers: IncomingMessage['headers'];
}

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

class FakeS3 {
	readonly objects = new Map<string, StoredObject>();
	readonly requests: RecordedRequest[] = [];
	/** The store's clock, sent as each answer's Date. */
	now = Date.UTC(2026, 11, 3, 12);
	/** At most this many keys a page, whatever max-keys asks. */
	pageLimit = 1000;
	/** CopyObject answers 200 with an <Error> body. */
	copyFailsLate = false;
	private server!: Server;

	async start(): Promise<string> {
		this.server = createServer((req, res) => this.answer(req, res));
		await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
		return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
	}

	async stop(): Promise<void> {
		await new Promise((resolve) => this.server.close(resolve));
	}

	put(key: string, body: string, ageMs = 3_600_000): void {
		this.objects.set(key, { body: Buffer.from(body), lastModifiedMs: this.now - ageMs });
	}

	private answer(req: IncomingMessage, res: ServerResponse): void {
		const [rawPath, rawQuery = ''] = (req.url ?? '').split('?');
		const query = new URLSearchParams(rawQuery);
		this.requests.push({ method: req.method!, rawPath, query, headers: req.headers });
		res.setHeader('date', new Date(this.now).toUTCString());
		const [, bucket, ...rest] = rawPath.split('/');
		const key = decodeURIComponent(rest.join('/'));
		if (bucket !== 'drop')
			return error(res, 404, 'NoSuchBucket', 'The specified bucket does not exist');
		if (req.method === 'GET' && rest.length === 0) return this.list(query, res);
		const object = this.objects.get(key);
		switch (req.method) {
			case 'HEAD':
				res.writeHead(object ? 200 : 404).end();
				return;
			case 'GET': {
				if (!object) return error(res, 404, 'NoSuchKey', 'The specified key does not exist.');
				const range = /^bytes=(\d+)-(\d+)$/.exec(String(req.headers.range));
				if (!range) return void res.writeHead(200, headersOf(object)).end(object.body);
				const size = object.body.length;
				if (Number(range[1]) >= size)
					return void res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
				const last = Math.min(Number(range[2]), size - 1);
				res
					.writeHead(206, {
						...headersOf(object),
						'content-range': `bytes ${range[1]}-${last}/${size}`,
					})
					.end(object.body.subarray(Number(range[1]), last + 1));
				return;
			}
			case 'PUT': {
				const source = decodeURIComponent(String(req.headers['x-amz-copy-source']));
				const copied = this.objects.get(source.replace(/^\/drop\//, ''));
				if (!copied) return error(res, 404, 'NoSuchKey', 'The specified key does not exist.');
				// CopyObject's failure after its 200 went out: S3 then ends the body with an <Error>.
				if (this.copyFailsLate)
					return void res
						.writeHead(200)
						.end(
							'<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>',
						);
				this.objects.set(key, { ...copied, lastModifiedMs: this.now });
				res
					.writeHead(200)
					.end(
						`<?xml version="1.0" encoding="UTF-8"?><CopyObjectResult><ETag>&quot;${md5(copied.body)}&quot;</ETag></CopyObjectResult>`,
					);
				return;
			}
			case 'DELETE':
				this.objects.delete(key);
				res.writeHead(204).end();
				return;
		}
		error(res, 405, 'MethodNotAllowed', 'The specified method is not allowed.');
	}

	private list(query: URLSearchParams, res: ServerResponse): void {
		const prefix = query.get('prefix') ?? '';
		const token = query.get('continuation-token');
		const after = token
			? Buffer.from(token, 'base64').toString()
			: (query.get('start-after') ?? '');
		const keys = [...this.objects.keys()]
			.filter((key) => key.startsWith(prefix) && byBytes(key, after) > 0)
			.sort(byBytes);
		const size = Math.min(Number(query.get('max-keys') ?? 1000), this.pageLimit);
		const page = keys.slice(0, size);
		const truncated = keys.length > size;
		const contents = page.map((key) => {
			const object = this.objects.get(key)!;
			return `<Contents><Key>${escape(key)}</Key><LastModified>${new Date(object.lastModifiedMs).toISOString()}</LastModified><ETag>&quot;${md5(object.body)}&quot;</ETag><Size>${object.body.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
		});
		const next = truncated
			? `<NextContinuationToken>${Buffer.from(page[page.length - 1]).toString('base64')}</NextContinuationToken>`
			: '';
		res
			.writeHead(200, { 'content-type': 'application/xml' })
			.end(
				`<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>drop</Name><Prefix>${escape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${size}</MaxKeys><IsTruncated>${truncated}</IsTruncated>${contents.join('')}${next}</ListBucketResult>`,
			);
	}
}

function error(res: ServerResponse, status: number, code: string, message: string): void {
	res
		.writeHead(status, { 'content-type': 'application/xml' })
		.end(
			`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>`,
		);
}

function headersOf(object: StoredObject): Record<string, string> {
	return {
		etag: `"${md5(object.body)}"`,
		'last-modified': new Date(object.lastModifiedMs).toUTCString(),
	};
}

const md5 = (body: Buffer) => createHash('md5').update(body).digest('hex');
const escape = (text: string) =>
	text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/'/g, '&apos;');
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

let s3: FakeS3;
let clock: FakeClock;
let connection: S3Connection;
beforeEach(async () => {
	s3 = new FakeS3();
	clock = new FakeClock(Date.UTC(2026, 11, 3, 12, 0, 5));
	connection = {
		endpoint: await s3.start(),
		region: 'us-east-1',
		accessKeyId: 'AKIDEXAMPLE',
		secretAccessKey: 'secret',
		pathStyle: true,
	};
});
afterEach(async () => {
	await s3.stop();
});

function context(memory: OpMemory = {}): OpContext {
	return { memory, http: fetchTransport, s3: connection, clock };
}

async function run(op: string, args: Record<string, unknown>, memory: OpMemory = {}) {
	const result = await resolveOp(op).run(args, context(memory));
	if (result.kind !== 'data') throw new Error(`${op} answered ${result.kind}`);
	return result;
}

async function listed(args: Record<string, unknown>, memory: OpMemory = {}) {
	const result = await run('s3.list', { bucket: 'drop', ...args }, memory);
	const data = result.data as { files: S3File[]; requests: number; truncated: boolean };
	return { ...data, keys: data.files.map((file) => file.key), memory: result.memory };
}

const SIGNED =
	/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20261203\/us-east-1\/s3\/aws4_request,SignedHeaders=([a-z0-9;-]+),Signature=[0-9a-f]{64}$/;

describe('every request is signed: the headers SigV4 adds, in their formats', () => {
	it('authorization names the signed headers; x-amz-date is the clock passed in', async () => {
		s3.put('in/a.csv', 'a');
		await listed({});
		await run('s3.download', { bucket: 'drop', key: 'in/a.csv' });
		expect(s3.requests.map((request) => request.method)).toEqual(['GET', 'GET']);
		for (const { headers } of s3.requests) {
			const signedHeaders = SIGNED.exec(String(headers.authorization))?.[1].split(';');
			expect(signedHeaders).toEqual(
				expect.arrayContaining(['host', 'x-amz-content-sha256', 'x-amz-date']),
			);
			expect(headers['x-amz-date']).toBe('20261203T120005Z');
			expect(headers['x-amz-content-sha256']).toBe(EMPTY_SHA256);
			expect(headers).not.toHaveProperty('x-amz-security-token');
		}
		expect(SIGNED.exec(String(s3.requests[1].headers.authorization))?.[1]).toBe(
			'host;range;x-amz-content-sha256;x-amz-date',
		);
	});

	it('a session token is sent as x-amz-security-token and signed', async () => {
		connection.sessionToken = 'session/token+1';
		await listed({});
		const { headers } = s3.requests[0];
		expect(headers['x-amz-security-token']).toBe('session/token+1');
		expect(SIGNED.exec(String(headers.authorization))?.[1]).toBe(
			'host;x-amz-content-sha256;x-amz-date;x-amz-security-token',
		);
	});
});

describe('s3.list', () => {
	it('reads every page through continuation tokens, each object once, in key order', async () => {
		s3.pageLimit = 2;
		for (const name of ['e', 'a', 'c', 'b', 'd']) s3.put(`in/${name}.csv`, name);
		const result = await listed({ prefix: 'in/' });
		expect(result.keys).toEqual(['in/a.csv', 'in/b.csv', 'in/c.csv', 'in/d.csv', 'in/e.csv']);
		expect(result.requests).toBe(3);
		expect(result.truncated).toBe(false);
		const queries = s3.requests.map(({ query }) => Object.fromEntries(query));
		expect(queries[0]).toEqual({ 'list-type': '2', 'max-keys': '1000', prefix: 'in/' });
		expect(queries[1]).toEqual({
			'list-type': '2',
			'max-keys': '1000',
			prefix: 'in/',
			'continuation-token': Buffer.from('in/b.csv').toString('base64'),
		});
		expect(queries[2]['continuation-token']).toBe(Buffer.from('in/d.csv').toString('base64'));
		expect(s3.requests.every(({ rawPath }) => rawPath === '/drop')).toBe(true);
	});

	it("gives sftp.list's item shape plus S3's fields", async () => {
		s3.put('in/2026-12-03/a b&c.csv', 'hello', 60_000);
		const [file] = (await listed({})).files;
		const lastModified = new Date(s3.now - 60_000).toISOString();
		expect(file).toEqual({
			path: 'in/2026-12-03/a b&c.csv',
			name: 'a b&c.csv',
			size: 5,
			modifiedAt: lastModified,
			version: md5(Buffer.from('hello')),
			key: 'in/2026-12-03/a b&c.csv',
			etag: md5(Buffer.from('hello')),
			lastModified,
			storageClass: 'STANDARD',
		});
	});

	it('keeps the objects under the prefix whose names match the pattern, without folder markers', async () => {
		for (const key of ['in/a.csv', 'in/b.xml', 'in/sub/', 'in/sub/c.csv', 'out/d.csv'])
			s3.put(key, 'x');
		const result = await listed({ prefix: 'in/', pattern: '*.csv' });
		expect(result.keys).toEqual(['in/a.csv', 'in/sub/c.csv']);
		expect(s3.requests[0].query.get('prefix')).toBe('in/');
	});

	it('afterLastKey: the next call sends start-after from its memory and lists only newer keys', async () => {
		s3.put('in/2026-12-01/a.csv', 'a');
		s3.put('in/2026-12-02/b.csv', 'b');
		const first = await listed({ prefix: 'in/', afterLastKey: true });
		expect(first.keys).toEqual(['in/2026-12-01/a.csv', 'in/2026-12-02/b.csv']);
		expect(s3.requests[0].query.has('start-after')).toBe(false);

		s3.put('in/2026-12-03/c.csv', 'c');
		const second = await listed({ prefix: 'in/', afterLastKey: true }, first.memory);
		expect(second.keys).toEqual(['in/2026-12-03/c.csv']);
		expect(s3.requests[1].query.get('start-after')).toBe('in/2026-12-02/b.csv');
		expect(s3.requests[1].rawPath).toBe('/drop');
	});

	it('afterLastKey: an object younger than lagSeconds, and every key after it, is listed again', async () => {
		s3.put('in/1.csv', '1', 600_000);
		s3.put('in/2.csv', '2', 10_000);
		s3.put('in/3.csv', '3', 600_000);
		const first = await listed({ afterLastKey: true, lagSeconds: 300 });
		expect(first.keys).toEqual(['in/1.csv', 'in/2.csv', 'in/3.csv']);
		const second = await listed({ afterLastKey: true, lagSeconds: 300 }, first.memory);
		expect(s3.requests[1].query.get('start-after')).toBe('in/1.csv');
		expect(second.keys).toEqual(['in/2.csv', 'in/3.csv']);
	});

	it('startAfter is the floor: a remembered key before it, or of another prefix, is not used', async () => {
		s3.put('in/2026-11-30/old.csv', 'o');
		s3.put('in/2026-12-03/new.csv', 'n');
		const first = await listed({ prefix: 'in/', afterLastKey: true, startAfter: 'in/2026-12-01' });
		expect(first.keys).toEqual(['in/2026-12-03/new.csv']);
		expect(s3.requests[0].query.get('start-after')).toBe('in/2026-12-01');
		await listed({ prefix: 'in/2026', afterLastKey: true }, first.memory);
		expect(s3.requests[1].query.has('start-after')).toBe(false);
	});

	it('maxObjects: with afterLastKey the rest is for the next call; without, more is a failure naming it', async () => {
		for (const name of ['a', 'b', 'c']) s3.put(`in/${name}.csv`, name);
		const first = await listed({ afterLastKey: true, maxObjects: 2 });
		expect(first).toMatchObject({ keys: ['in/a.csv', 'in/b.csv'], truncated: true });
		expect(s3.requests[0].query.get('max-keys')).toBe('2');
		expect((await listed({ afterLastKey: true, maxObjects: 2 }, first.memory)).keys).toEqual([
			'in/c.csv',
		]);
		await expect(listed({ maxObjects: 2 })).rejects.toThrow(
			'S3 ListObjectsV2 of bucket "drop" has more than "maxObjects" (2) objects: set "afterLastKey" to list them over several polls, or narrow "prefix"',
		);
	});

	it("an error answer is named by the bucket and S3's Code and Message", async () => {
		await expect(listed({ bucket: 'gone', prefix: 'in/' })).rejects.toThrow(
			'S3 ListObjectsV2 of bucket "gone" under prefix "in/" answered HTTP 404 NoSuchBucket: The specified bucket does not exist',
		);
	});
});

describe('s3.download', () => {
	it('reads the object as bytes, asking for one byte over the limit', async () => {
		const key = "in/c d+(1)!*'ü&=.csv";
		s3.put(key, 'a,b\n1,2\n');
		const result = await run('s3.download', { bucket: 'drop', key, maxBytes: 100 });
		expect(result.file?.data.toString()).toBe('a,b\n1,2\n');
		expect(result.file?.fileName).toBe("c d+(1)!*'ü&=.csv");
		expect(result.data).toMatchObject({ bucket: 'drop', path: key, size: 8 });
		expect(s3.requests[0].rawPath).toBe('/drop/in/c%20d%2B%281%29%21%2A%27%C3%BC%26%3D.csv');
		expect(s3.requests[0].headers.range).toBe('bytes=0-100');
	});

	it('an object over maxBytes fails, naming it and the limit', async () => {
		s3.put('in/big.bin', 'x'.repeat(11));
		await expect(
			run('s3.download', { bucket: 'drop', path: 'in/big.bin', maxBytes: 10 }),
		).rejects.toThrow(
			'S3 object "in/big.bin" in bucket "drop" is 11 bytes, over the download limit "maxBytes" of 10',
		);
	});

	it('an empty object is an empty file', async () => {
		s3.put('in/empty.csv', '');
		const result = await run('s3.download', { bucket: 'drop', key: 'in/empty.csv' });
		expect(result.file?.data.length).toBe(0);
		expect(result.data).toMatchObject({ size: 0 });
	});

	it("a missing object is named, with S3's Code", async () => {
		await expect(run('s3.download', { bucket: 'drop', key: 'in/none.csv' })).rejects.toThrow(
			'S3 GetObject of "in/none.csv" in bucket "drop" answered HTTP 404 NoSuchKey: The specified key does not exist.',
		);
	});
});

describe('s3.move and s3.delete', () => {
	it('moves by CopyObject from an encoded source, then DeleteObject; a missing object is reported', async () => {
		s3.put('in/a b+.csv', 'a');
		const result = await run('s3.move', {
			bucket: 'drop',
			path: ['in/a b+.csv', 'in/gone.csv'],
			toPrefix: 'processed/',
		});
		expect(result.data).toEqual({
			bucket: 'drop',
			toBucket: 'drop',
			moved: [{ from: 'in/a b+.csv', to: 'processed/a b+.csv' }],
			missing: ['in/gone.csv'],
		});
		expect([...s3.objects.keys()]).toEqual(['processed/a b+.csv']);
		const copy = s3.requests.find((request) => request.method === 'PUT')!;
		expect(copy.rawPath).toBe('/drop/processed/a%20b%2B.csv');
		expect(copy.headers['x-amz-copy-source']).toBe('/drop/in/a%20b%2B.csv');
		expect(SIGNED.exec(String(copy.headers.authorization))?.[1]).toBe(
			'host;x-amz-content-sha256;x-amz-copy-source;x-amz-date',
		);
		expect(s3.requests.map(({ method, rawPath }) => `${method} ${rawPath}`)).toEqual([
			'HEAD /drop/in/a%20b%2B.csv',
			'HEAD /drop/processed/a%20b%2B.csv',
			'PUT /drop/processed/a%20b%2B.csv',
			'DELETE /drop/in/a%20b%2B.csv',
			'HEAD /drop/in/gone.csv',
		]);
	});

	it('an existing target fails the move, and both objects stay', async () => {
		s3.put('in/a.csv', 'new');
		s3.put('processed/a.csv', 'old');
		await expect(
			run('s3.move', { bucket: 'drop', path: 'in/a.csv', toPrefix: 'processed' }),
		).rejects.toThrow(
			'S3 cannot move "in/a.csv" in bucket "drop": "processed/a.csv" in bucket "drop" already exists',
		);
		expect(s3.objects.get('processed/a.csv')?.body.toString()).toBe('old');
		expect(s3.objects.has('in/a.csv')).toBe(true);
	});

	it('a CopyObject whose 200 carries an <Error> fails the move, and the source stays', async () => {
		s3.put('in/a.csv', 'a');
		s3.copyFailsLate = true;
		await expect(
			run('s3.move', { bucket: 'drop', path: 'in/a.csv', toPrefix: 'processed/' }),
		).rejects.toThrow(
			'S3 CopyObject of "in/a.csv" in bucket "drop" to "processed/a.csv" in bucket "drop" answered HTTP 200 InternalError: We encountered an internal error. Please try again.',
		);
		expect(s3.objects.has('in/a.csv')).toBe(true);
		expect(s3.requests.map(({ method }) => method)).not.toContain('DELETE');
	});

	it('deletes objects; objects already gone are reported', async () => {
		s3.put('in/a.csv', 'a');
		const result = await run('s3.delete', { bucket: 'drop', path: ['in/a.csv', 'in/b.csv'] });
		expect(result.data).toEqual({ bucket: 'drop', deleted: ['in/a.csv'], missing: ['in/b.csv'] });
		expect(s3.objects.size).toBe(0);
		expect(s3.requests.map(({ method }) => method)).toEqual(['HEAD', 'DELETE', 'HEAD']);
	});
});

describe('requestTarget: path-style and virtual-hosted URLs', () => {
	const aws: S3Connection = {
		...connectionOf('https://s3.eu-west-1.amazonaws.com'),
		pathStyle: false,
	};

	it('virtual-hosted: the bucket in the host', () => {
		expect(requestTarget(aws, 'drop', 'in/a.csv')).toEqual({
			origin: 'https://drop.s3.eu-west-1.amazonaws.com',
			host: 'drop.s3.eu-west-1.amazonaws.com',
			path: '/in/a.csv',
		});
		expect(requestTarget(aws, 'drop', undefined).path).toBe('/');
	});

	it('path-style: the bucket in the path, the port kept in the host', () => {
		const minio = { ...connectionOf('http://127.0.0.1:9000/'), pathStyle: true };
		expect(requestTarget(minio, 'drop', 'in/a.csv')).toEqual({
			origin: 'http://127.0.0.1:9000',
			host: '127.0.0.1:9000',
			path: '/drop/in/a.csv',
		});
		expect(requestTarget(minio, 'drop', undefined).path).toBe('/drop');
	});

	it('a bucket with a dot goes path-style, where its host would fail the wildcard certificate', () => {
		expect(requestTarget(aws, 'logs.example.com', 'in/a.csv')).toEqual({
			origin: 'https://s3.eu-west-1.amazonaws.com',
			host: 's3.eu-west-1.amazonaws.com',
			path: '/logs.example.com/in/a.csv',
		});
	});

	function connectionOf(endpoint: string) {
		return { endpoint, region: 'eu-west-1', accessKeyId: 'a', secretAccessKey: 's' };
	}
});

describe('arguments: a ConfigError naming the argument and its value', () => {
	it.each([
		[
			's3.list',
			{ prefix: 'in/' },
			'Invalid value (none) for "«with»": "bucket" must be a bucket name',
		],
		[
			's3.list',
			{ bucket: 'a/b' },
			'Invalid value "a/b" for "«with»": "bucket" must be a bucket name',
		],
		['s3.list', { bucket: 'drop', maxObjects: 0 }, 'Invalid value 0 for "«with»": "maxObjects"'],
		[
			's3.list',
			{ bucket: 'drop', pattern: '[a' },
			'Invalid value "[a" for "«with»": "pattern" is not a valid glob',
		],
		[
			's3.list',
			{ bucket: 'drop', afterLastKey: 'yes' },
			'Invalid value "yes" for "«with»": "afterLastKey" must be true or false',
		],
		[
			's3.download',
			{ bucket: 'drop', key: 'in/../secret' },
			'Invalid value "in/../secret" for "«with»": "key" has a "." or ".." segment',
		],
		[
			's3.download',
			{ bucket: 'drop', path: 'a', maxBytes: 2 ** 31 },
			'Invalid value 2147483648 for "«with»": "maxBytes"',
		],
		[
			's3.move',
			{ bucket: 'drop', path: 'a' },
			'Invalid value (none) for "«with»": "toPrefix" must be the key prefix',
		],
		[
			's3.delete',
			{ bucket: 'drop', path: [] },
			'Invalid value [] for "«with»": "path" must be an object key',
		],
	])('%s %j', (op, args, message) => {
		expect(() => resolveOp(op).check(args)).toThrow(message);
	});

	it('the S3 ops are offered with the others, on the s3 transport', () => {
		expect(
			allOps()
				.filter((op) => op.transport === 's3')
				.map((op) => op.name),
		).toEqual(['s3.list', 's3.download', 's3.move', 's3.delete']);
	});
});
