// An S3-compatible store on loopback for the tests: @20minutes/s3rver (checks SigV4), in a child
// process of its own because its continuation tokens use DES, which Node 24 offers only under
// --openssl-legacy-provider (test/harness/s3rver.ts starts it so). Arguments: data dir, port, bucket,
// and `standalone` for npm start's demo store. Prints `ready` once listening, then (but standalone)
// one JSON line per request as it arrived: method, raw URL.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const S3rver = createRequire(import.meta.url)('@20minutes/s3rver');
const [directory, port, bucket, mode] = process.argv.slice(2);
const standalone = mode === 'standalone';

const store = new S3rver({ directory, silent: true, configureBuckets: [{ name: bucket }] });
await store.configureBuckets();
const answer = store.callback();
const server = createServer((req, res) => {
	if (!standalone)
		process.stdout.write(`${JSON.stringify({ method: req.method, url: req.url })}\n`);
	answer(req, res);
});
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
const stop = () => {
	server.closeAllConnections();
	server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
// The harness holds this pipe open: a test process that dies takes the store with it. The demo
// store (standalone) outlives a killed npm start, whose next start stops it: its output pipes, closed
// with that start, must not end it when Node writes a warning.
if (!standalone) process.stdin.on('end', stop).resume();
else for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
