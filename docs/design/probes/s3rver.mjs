// s3rver on loopback, driven by sigv4.mjs over node:http (issue 40 probe). S3RVER picks the package:
//   npm install --prefix /tmp/s3probe s3rver@3.7 @20minutes/s3rver@5.0.0
//   NODE_PATH=/tmp/s3probe/node_modules S3RVER=@20minutes/s3rver node s3rver.mjs [objects=100000]
import { createRequire } from 'node:module';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { signS3 } from './sigv4.mjs';

const S3rver = createRequire(join(process.env.NODE_PATH ?? '.', 'x'))(
	process.env.S3RVER ?? 's3rver',
);
const directory = process.env.S3DIR ?? '/tmp/s3probe/data';
rmSync(directory, { recursive: true, force: true });
const server = new S3rver({
	address: '127.0.0.1',
	port: 0,
	directory,
	silent: true,
	configureBuckets: [{ name: 'drop' }],
});
const { port } = await server.run();
const host = `127.0.0.1:${port}`;
const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
let requests = 0;

/** One path-style request: /bucket/key. */
function s3(method, path, { query = {}, headers = {}, body } = {}) {
	requests++;
	const payloadHash = createHash('sha256')
		.update(body ?? '')
		.digest('hex');
	const signed = signS3({
		method,
		host,
		path,
		query,
		headers,
		payloadHash,
		credentials,
		region: 'us-east-1',
	});
	const qs = new URLSearchParams(query).toString();
	const encodedPath = path.split('/').map(encodeURIComponent).join('/');
	return new Promise((resolve, reject) => {
		const req = request(
			{
				agent: false,
				host: '127.0.0.1',
				port,
				method,
				path: encodedPath + (qs ? `?${qs}` : ''),
				headers: { ...headers, ...signed },
			},
			(res) => {
				const chunks = [];
				res.on('data', (c) => chunks.push(c));
				res.on('end', () =>
					resolve({
						status: res.statusCode,
						headers: res.headers,
						body: Buffer.concat(chunks).toString(),
					}),
				);
			},
		);
		req.on('error', reject);
		req.end(body);
	});
}
const tag = (xml, name) =>
	[...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((m) => m[1]);
async function listAll(prefix, startAfter) {
	const keys = [];
	let token;
	let pages = 0;
	do {
		const query = {
			'list-type': 2,
			prefix,
			...(token
				? { 'continuation-token': token }
				: startAfter
					? { 'start-after': startAfter }
					: {}),
		};
		const { status, body } = await s3('GET', '/drop', { query });
		if (status !== 200) throw new Error(`list ${status}: ${body}`);
		keys.push(...tag(body, 'Key'));
		[token] = tag(body, 'NextContinuationToken');
		pages++;
	} while (token);
	return { keys, pages };
}
const check = (name, ok, detail = '') => console.log(`${ok ? 'ok  ' : 'FAIL'} ${name} ${detail}`);
/** What AWS does and this server does not: reported, not failed. */
const gap = (name, ok, detail = '') => console.log(`${ok ? 'ok  ' : 'gap '} ${name} ${detail}`);
const time = async (name, work) => {
	const t = performance.now();
	const result = await work();
	console.log(`time ${name}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
	return result;
};

// Semantics on a small set.
for (const key of [
	'in/a.csv',
	'in/b.csv',
	'in/c d+(1).csv',
	'in/sub/e.csv',
	'other/x.csv',
	'misc/with space.csv',
])
	check(
		`PUT ${key}`,
		(await s3('PUT', `/drop/${key}`, { body: `content of ${key}` })).status === 200,
	);
const page = await s3('GET', '/drop', { query: { 'list-type': 2, prefix: 'in/', 'max-keys': 2 } });
check(
	'ListObjectsV2 max-keys 2 truncated, sorted',
	tag(page.body, 'IsTruncated')[0] === 'true' &&
		tag(page.body, 'Key').join() === 'in/a.csv,in/b.csv',
	page.body.slice(0, 900),
);
const full = await listAll('in/');
check(
	'continuation tokens: all of in/ once, in order',
	full.keys.join() === 'in/a.csv,in/b.csv,in/c d+(1).csv,in/sub/e.csv',
	full.keys.join(),
);
check(
	'ETag, Size, LastModified, StorageClass in the listing',
	['ETag', 'Size', 'LastModified', 'StorageClass'].every((t) => tag(page.body, t).length === 2),
	page.body.match(/<Contents>.*?<\/Contents>/s)?.[0].replace(/\s+/g, ' '),
);
const after = await listAll('in/', 'in/b.csv');
check('start-after', after.keys.join() === 'in/c d+(1).csv,in/sub/e.csv', after.keys.join());
const got = await s3('GET', '/drop/in/c d+(1).csv');
check(
	'GetObject, key with space + ( )',
	got.body === 'content of in/c d+(1).csv',
	`${got.status} etag ${got.headers.etag}`,
);
const copy = await s3('PUT', '/drop/processed/a.csv', {
	headers: { 'x-amz-copy-source': '/drop/in/a.csv' },
});
check('CopyObject', copy.status === 200, `${copy.status} ${copy.body.slice(0, 300)}`);
const perSegment = (key) => `/drop/${key.split('/').map(encodeURIComponent).join('/')}`;
const copySpaced = await s3('PUT', '/drop/processed/with space.csv', {
	headers: { 'x-amz-copy-source': perSegment('misc/with space.csv') },
});
check(
	'CopyObject, source encoded per segment, a space',
	copySpaced.status === 200,
	`${copySpaced.status}`,
);
const copyPlus = await s3('PUT', '/drop/processed/c.csv', {
	headers: { 'x-amz-copy-source': perSegment('in/c d+(1).csv') },
});
gap(
	'CopyObject, source encoded per segment, a "+" (%2B)',
	copyPlus.status === 200,
	`${copyPlus.status} ${tag(copyPlus.body, 'Code')}`,
);
const copySlash = await s3('PUT', '/drop/processed/a2.csv', {
	headers: { 'x-amz-copy-source': `/drop/${encodeURIComponent('in/a.csv')}` },
});
gap(
	'CopyObject, source with %2F (AWS accepts it)',
	copySlash.status === 200,
	`${copySlash.status} ${tag(copySlash.body, 'Code')}`,
);
check('DeleteObject', (await s3('DELETE', '/drop/in/a.csv')).status === 204);
check(
	'DeleteObject of a missing key: 204 (S3 semantics)',
	(await s3('DELETE', '/drop/in/none.csv')).status === 204,
);
check(
	'GetObject missing: 404 NoSuchKey',
	/NoSuchKey/.test((await s3('GET', '/drop/in/a.csv')).body),
);
const rewritten = await s3('PUT', '/drop/in/b.csv', { body: 'new content' });
const oldEtag = tag(page.body, 'ETag')[1].replaceAll('&quot;', '"');
check(
	'rewrite changes the ETag',
	rewritten.headers.etag !== oldEtag,
	`${oldEtag} -> ${rewritten.headers.etag}`,
);
const bad = await new Promise((resolve) => {
	const req = request(
		{
			agent: false,
			host: '127.0.0.1',
			port,
			path: '/drop?list-type=2',
			headers: {
				...signS3({
					method: 'GET',
					host,
					path: '/drop',
					query: { 'list-type': 2 },
					credentials: { ...credentials, secretAccessKey: 'wrong' },
					region: 'us-east-1',
				}),
			},
		},
		(res) => {
			let b = '';
			res
				.on('data', (c) => (b += c))
				.on('end', () => resolve(`${res.statusCode} ${tag(b, 'Code')}`));
		},
	);
	req.end();
});
check('a wrong secret is refused', /403 SignatureDoesNotMatch/.test(bad), bad);

// Scale: N objects under a date-prefixed layout, via the API (a sample) and on disk (the rest).
const total = Number(process.argv[2] ?? 100000);
const perDay = 1000;
const keyOf = (i) =>
	`big/2026-${String(1 + Math.floor(i / perDay / 28)).padStart(2, '0')}-${String(1 + (Math.floor(i / perDay) % 28)).padStart(2, '0')}/${String(i).padStart(6, '0')}.csv`;
await time('PUT 2,000 objects via the API, 16 at a time', async () => {
	for (let i = 0; i < 2000; i += 16)
		await Promise.all(
			Array.from({ length: 16 }, (_, j) =>
				s3('PUT', `/drop/${keyOf(i + j)}`, { body: `object ${i + j}` }),
			),
		);
});
await time(`write ${total - 2000} objects as s3rver's on-disk layout`, () => {
	for (let i = 2000; i < total; i++) {
		const key = keyOf(i);
		const dir = join(directory, 'drop', key.slice(0, key.lastIndexOf('/')));
		if (i % perDay === 0 || i === 2000) mkdirSync(dir, { recursive: true });
		const body = `object ${i}`;
		const file = join(dir, `${key.slice(key.lastIndexOf('/') + 1)}._S3rver_object`);
		writeFileSync(file, body);
		writeFileSync(`${file}.md5`, createHash('md5').update(body).digest('hex'));
	}
});
let before = requests;
const whole = await time(`list all ${total} (continuation tokens)`, () => listAll('big/'));
check(
	`listed ${total} once each, sorted`,
	whole.keys.length === total && whole.keys.every((k, i) => i === 0 || whole.keys[i - 1] < k),
	`${whole.pages} pages, ${requests - before} requests`,
);
for (let i = total; i < total + 100; i++)
	await s3('PUT', `/drop/${keyOf(i)}`, { body: `new ${i}` });
before = requests;
const fresh = await time('list with start-after the last seen key (100 new)', () =>
	listAll('big/', keyOf(total - 1)),
);
check(
	'start-after lists only the 100 new',
	fresh.keys.length === 100,
	`${fresh.pages} page(s), ${requests - before} request(s)`,
);
await server.close();
