// basic-ftp against a loopback FTP server (vsftpd per docs/design/s3-ftp.md), plain and explicit FTPS (issue 40 probe).
// npm install --prefix /tmp/s3probe basic-ftp && NODE_PATH=/tmp/s3probe/node_modules node ftp.mjs [port=2121] [certFile=/tmp/ftpprobe/cert.pem]
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

const { Client } = createRequire(join(process.env.NODE_PATH ?? '.', 'x'))('basic-ftp');
const port = Number(process.argv[2] ?? 2121);
const ca = readFileSync(process.argv[3] ?? '/tmp/ftpprobe/cert.pem');
const login = {
	host: '127.0.0.1',
	port,
	user: process.env.FTP_USER ?? 'ftpdrop',
	password: process.env.FTP_PASSWORD ?? 'drop-password',
};
const check = (name, ok, detail = '') => console.log(`${ok ? 'ok  ' : 'FAIL'} ${name} ${detail}`);
async function connect(secure, secureOptions) {
	const client = new Client(10_000);
	await client.access({ ...login, secure, secureOptions });
	return client;
}
const text = async (client, path) => {
	const chunks = [];
	await client.downloadTo(new Writable({ write: (c, _, done) => (chunks.push(c), done()) }), path);
	return Buffer.concat(chunks).toString();
};

// Plain FTP.
const plain = await connect(false);
const features = await plain.features();
console.log(`FEAT: ${[...features.keys()].join(' ')}`);
check('plain FTP login', true);
plain.close();

// Explicit FTPS: self-signed refused by default, accepted with rejectUnauthorized false or with the CA.
try {
	(await connect(true)).close();
	check('self-signed certificate refused by default', false);
} catch (error) {
	check('self-signed certificate refused by default', true, `${error.code ?? ''} ${error.message}`);
}
(await connect(true, { rejectUnauthorized: false })).close();
check('explicit FTPS, rejectUnauthorized false', true);
const client = await connect(true, { ca });
check(
	'explicit FTPS, ca: the certificate',
	true,
	`TLS data connections with session reuse (vsftpd require_ssl_reuse=YES)`,
);

await client.ensureDir('/inbox/sub'); // creates and changes into it
await client.cd('/');
check(
	'mkdir (ensureDir) /inbox/sub',
	(await client.list('/inbox')).some((f) => f.name === 'sub' && f.isDirectory),
);
await client.uploadFrom(Readable.from(['a,b\n1,2\n']), '/inbox/orders.csv');
await client.uploadFrom(Readable.from(['x\n']), '/inbox/sub/deep.csv');
const listing = await client.list('/inbox');
for (const f of listing)
	console.log(
		`  list: ${f.name} type=${f.type} size=${f.size} rawModifiedAt=${JSON.stringify(f.rawModifiedAt)} modifiedAt=${f.modifiedAt?.toISOString?.()}`,
	);
const orders = listing.find((f) => f.name === 'orders.csv');
check('LIST gives the size', orders?.size === 8);
const mdtm = await client.lastMod('/inbox/orders.csv');
check(
	'MDTM gives whole seconds (UTC)',
	mdtm instanceof Date && mdtm.getUTCMilliseconds() === 0,
	mdtm.toISOString(),
);
check('SIZE', (await client.size('/inbox/orders.csv')) === 8);
check('download', (await text(client, '/inbox/orders.csv')) === 'a,b\n1,2\n');
await client.ensureDir('/processed');
await client.cd('/');
await client.rename('/inbox/orders.csv', '/processed/orders.csv');
check(
	'rename (move) into another folder',
	(await client.list('/processed')).some((f) => f.name === 'orders.csv'),
);
try {
	await client.rename('/inbox/orders.csv', '/processed/again.csv');
	check('rename of a missing file fails', false);
} catch (error) {
	check('rename of a missing file fails', error.code === 550, `${error.code} ${error.message}`);
}
await client.remove('/processed/orders.csv');
check('delete', !(await client.list('/processed')).some((f) => f.name === 'orders.csv'));
// vsftpd answers LIST of a missing folder with an empty listing (226); CWD fails on every server.
console.log(
	`  LIST /nowhere: ${await client.list('/nowhere').then(
		(l) => JSON.stringify(l),
		(e) => `${e.code} ${e.message}`,
	)}`,
);
try {
	await client.cd('/nowhere');
	check('CWD into a missing folder fails', false);
} catch (error) {
	check('CWD into a missing folder fails', error.code === 550, `${error.code} ${error.message}`);
}
await client.cd('/');

// A slow upload on a second connection: the listing sees the size grow.
const writer = await connect(true, { ca });
const slow = writer.uploadFrom(
	Readable.from(
		(async function* () {
			for (let i = 0; i < 4; i++) {
				yield Buffer.alloc(1000, 'x');
				await sleep(1200);
			}
		})(),
	),
	'/inbox/slow.csv',
);
const sizes = [];
for (let i = 0; i < 3; i++) {
	await sleep(1000);
	const file = (await client.list('/inbox')).find((f) => f.name === 'slow.csv');
	sizes.push(`${file?.size}@${file?.rawModifiedAt}`);
}
await slow;
writer.close();
const done = (await client.list('/inbox')).find((f) => f.name === 'slow.csv');
check(
	'slow upload: size grows between listings',
	new Set(sizes.map((s) => s.split('@')[0])).size > 1,
	`${sizes.join(', ')} -> ${done.size}`,
);
client.close();
