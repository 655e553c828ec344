import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import {
	createServer as createHttpServer,
	type IncomingMessage,
	type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { executeNode } from '../../test/nodeContext';
import { Connector } from './Connector.node';

/*
 * The S3 ops run by the Connector through n8n-core's ExecuteContext (test/nodeContext.ts): the
 * Service's credential read as n8n hands it, the signed request sent by n8n-core's own `httpRequest`
 * to a small store on loopback that records each request as it arrived (raw path, headers). The
 * signatures themselves are pinned by AWS's examples (core/connectors/s3Signature.test.ts) and
 * checked by a real store end to end (test/e2e/s3Source.test.ts).
 */

interface Arrived {
	method: string;
	/** The request target as it arrived, still percent-encoded. */
	url: string;
	headers: IncomingMessage['headers'];
}

/** Every byte value, twice: text decoding would change most of them. */
const BINARY = Buffer.from([...Array(512).keys()].map((n) => n % 256));
const LISTING =
	'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>drop</Name><KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>' +
	'<Contents><Key>in/a.csv</Key><LastModified>2026-12-01T10:00:00.000Z</LastModified><ETag>&quot;e1&quot;</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>';

function answer(arrived: Arrived[]) {
	return (req: IncomingMessage, res: ServerResponse) => {
		arrived.push({ method: req.method!, url: req.url!, headers: req.headers });
		if (req.method === 'GET' && req.url!.includes('list-type=2'))
			return void res.writeHead(200, { 'content-type': 'application/xml' }).end(LISTING);
		res
			.writeHead(206, {
				'content-type': 'application/octet-stream',
				'content-range': `bytes 0-${BINARY.length - 1}/${BINARY.length}`,
				etag: '"b1"',
			})
			.end(BINARY);
	};
}

async function listen(server: Server): Promise<number> {
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return (server.address() as AddressInfo).port;
}

describe('Connector: S3 ops through n8n-core ExecuteContext', () => {
	const arrived: Arrived[] = [];
	const plain = createHttpServer(answer(arrived));
	let endpoint: string;

	beforeAll(async () => {
		endpoint = `http://127.0.0.1:${await listen(plain)}`;
	});
	afterAll(async () => await new Promise((resolve) => plain.close(resolve)));
	beforeEach(() => {
		arrived.length = 0;
	});

	const s3Credential = (extra: Record<string, unknown> = {}) => ({
		endpoint,
		region: 'us-east-1',
		accessKeyId: 'AKID',
		secretAccessKey: 'secret',
		forcePathStyle: true,
		...extra,
	});

	it("S3-compatible: s3.download with n8n's S3 credential; the path arrives as signed, the object's bytes intact", async () => {
		const key = "in/c d+(1)!'*.bin";
		const { output } = await executeNode(Connector, {
			parameters: { op: 's3.download', with: JSON.stringify({ bucket: 'drop', key }) },
			credentials: { s3: s3Credential() },
		});
		expect(arrived.map(({ method, url }) => [method, url])).toEqual([
			['GET', '/drop/in/c%20d%2B%281%29%21%27%2A.bin'],
		]);
		expect(arrived[0].headers.authorization).toMatch(
			/^AWS4-HMAC-SHA256 Credential=AKID\/\d{8}\/us-east-1\/s3\/aws4_request,/,
		);
		const [item] = output[0];
		expect(item.json).toMatchObject({ path: key, size: BINARY.length, version: 'b1' });
		expect(item.binary?.data.fileName).toBe("c d+(1)!'*.bin");
		expect(Buffer.from(item.binary!.data.data, 'base64').equals(BINARY)).toBe(true);
	});

	it("AWS: n8n's AWS credential; its S3 endpoint addressed path-style, signed for its region, with the session token", async () => {
		const { output } = await executeNode(Connector, {
			parameters: {
				op: 's3.list',
				service: 'aws',
				with: JSON.stringify({ bucket: 'drop', prefix: 'in/' }),
			},
			credentials: {
				aws: {
					region: 'eu-west-1',
					accessKeyId: 'AKID',
					secretAccessKey: 'secret',
					temporaryCredentials: true,
					sessionToken: 'token-1',
					customEndpoints: true,
					s3Endpoint: endpoint,
				},
			},
		});
		expect(arrived.map(({ method, url }) => [method, url])).toEqual([
			['GET', '/drop?list-type=2&max-keys=1000&prefix=in%2F'],
		]);
		expect(arrived[0].headers['x-amz-security-token']).toBe('token-1');
		expect(arrived[0].headers.authorization).toMatch(/\/eu-west-1\/s3\/aws4_request,/);
		expect(output[0][0].json.files).toEqual([
			expect.objectContaining({ path: 'in/a.csv', version: 'e1', storageClass: 'STANDARD' }),
		]);
	});

	it('a wrong S3 Endpoint is refused naming the field, its value and the credential', async () => {
		await expect(
			executeNode(Connector, {
				parameters: { op: 's3.delete', with: JSON.stringify({ bucket: 'drop', path: 'a' }) },
				credentials: { s3: s3Credential({ endpoint: 'minio:9000' }) },
			}),
		).rejects.toThrow(
			'Invalid value "minio:9000" for "S3 Endpoint" in the S3 credential: must be the store\'s URL, starting with http:// or https://',
		);
		expect(arrived).toEqual([]);
	});

	describe('a store with a self-signed certificate', () => {
		const folder = mkdtempSync(join(tmpdir(), 'connector-s3-tls-'));
		let tlsEndpoint: string;
		let secure: Server;

		beforeAll(async () => {
			execFileSync(
				'openssl',
				[
					...[
						'req',
						'-x509',
						'-newkey',
						'rsa:2048',
						'-nodes',
						'-days',
						'1',
						'-subj',
						'/CN=127.0.0.1',
					],
					...['-keyout', join(folder, 'key.pem'), '-out', join(folder, 'cert.pem')],
				],
				{ stdio: 'ignore' },
			);
			secure = createHttpsServer(
				{
					key: readFileSync(join(folder, 'key.pem')),
					cert: readFileSync(join(folder, 'cert.pem')),
				},
				answer(arrived),
			);
			tlsEndpoint = `https://127.0.0.1:${await listen(secure)}`;
		});
		afterAll(async () => {
			await new Promise((resolve) => secure.close(resolve));
			rmSync(folder, { recursive: true, force: true });
		});

		const list = (ignoreSSLIssues: boolean) =>
			executeNode(Connector, {
				parameters: { op: 's3.list', with: JSON.stringify({ bucket: 'drop' }) },
				credentials: { s3: s3Credential({ endpoint: tlsEndpoint, ignoreSSLIssues }) },
			});

		it('is refused by default, naming the request; reached with Ignore SSL Issues', async () => {
			await expect(list(false)).rejects.toThrow(
				/S3 ListObjectsV2 of bucket "drop" at 127\.0\.0\.1:\d+ failed: .*self-signed certificate/,
			);
			expect(arrived).toEqual([]);
			const { output } = await list(true);
			expect(output[0][0].json.files).toHaveLength(1);
			expect(arrived).toHaveLength(1);
		});
	});
});
