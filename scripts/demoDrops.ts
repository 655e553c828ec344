import { existsSync } from 'node:fs';

import { S3rver } from '../test/harness/s3rver';
import { VSFTPD, Vsftpd } from '../test/harness/vsftpd';

/**
 * The S3 and FTP examples' demo servers (the tests' own, test/harness/s3rver.ts and vsftpd.ts): a
 * store with the bucket `drop` and an FTP(S) server with one partner user, each with a first drop (a
 * CSV under the folder the example polls: `in/` in the bucket, `/inbox` on the server) and more as
 * `drop…` is called.
 */

/** The FTP example's partner: a system user of the demo's own (the server logs in real users). */
const FTP_USER = 'durable-demo-ftp';
const FTP_PASSWORD = 'demo-ftp-password';

const ORDERS = ['apples', 'pears', 'plums', 'cherries'];

/** The n-th drop: a file name that sorts by time, and a small order list. */
function drop(n: number): { name: string; csv: string } {
	const stamp = new Date().toISOString().replace(/[:.]/g, '-');
	return {
		name: `orders-${stamp}-${n}.csv`,
		csv: `id,name\n${n * 2 + 1},${ORDERS[n % ORDERS.length]}\n${n * 2 + 2},${ORDERS[(n + 1) % ORDERS.length]}\n`,
	};
}

/** The demo store on `port`, in a process group of its own, with a first object under `in/`. */
export async function startDemoS3(port: number): Promise<S3rver> {
	const store = await S3rver.start({ bucket: 'drop', port, ownProcessGroup: true });
	try {
		await dropS3Object(store, 0);
	} catch (error) {
		await store.stop();
		throw error;
	}
	return store;
}

/** Puts the n-th drop into the bucket under `in/`, as an uploader would (a signed PutObject). */
export async function dropS3Object(store: S3rver, n: number): Promise<void> {
	const { name, csv } = drop(n);
	await store.put(`in/${name}`, csv);
}

/**
 * Why the demo FTP server cannot run here, or undefined when it can: vsftpd (Debian's) must be
 * installed, and the start must run as root (the server logs in a system user it adds).
 */
export function demoFtpUnavailable(): string | undefined {
	if (!existsSync(VSFTPD))
		return 'vsftpd is not installed (apt-get install vsftpd, then npm start again)';
	if (process.getuid?.() !== 0)
		return 'it logs in a system user of its own, which needs npm start to run as root';
	return undefined;
}

/** The demo FTP server on `port`, in a process group of its own, with a first file in `/inbox`. */
export async function startDemoFtp(port: number): Promise<Vsftpd> {
	const server = await Vsftpd.start({
		user: FTP_USER,
		password: FTP_PASSWORD,
		port,
		ownProcessGroup: true,
	});
	dropFtpFile(server, 0);
	return server;
}

/** Writes the n-th drop into `/inbox`, whole at once (a finished file), as the partner's user. */
export function dropFtpFile(server: Vsftpd, n: number): void {
	const { name, csv } = drop(n);
	server.write(`inbox/${name}`, csv);
}
