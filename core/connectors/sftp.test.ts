import SftpClient from 'ssh2-sftp-client';

import { sftpOps } from './sftp';
import type { RemoteFile } from './remoteFiles';
import type { OpMemory } from './types';

/*
 * The SFTP ops over a fake ssh2-sftp-client: a connection opens when `connect` resolves and closes at
 * `end()`, as the library's do (its `end()` before the connection exists closes nothing). The ops
 * against a real sshd: test/e2e/sftpSource.test.ts.
 */
jest.mock('ssh2-sftp-client', () => ({ __esModule: true, default: jest.fn() }));

class FakeServer {
	/** Sessions connected and not ended. */
	open = 0;
	/** Files of the listed folder: name, size, modification time (ms). */
	files: Array<{ name: string; size: number; modifyTime: number }> = [];
	/** Set: each connect waits until releaseConnects(). */
	holdConnects = false;
	private readonly held: Array<() => void> = [];

	client() {
		let connected = false;
		return {
			connect: async () => {
				if (this.holdConnects) await new Promise<void>((resolve) => this.held.push(resolve));
				connected = true;
				this.open++;
			},
			end: async () => {
				if (connected) this.open--;
				connected = false;
				return true;
			},
			list: async () => {
				if (!connected) throw new Error('No SFTP connection available');
				return this.files.map((file) => ({ ...file, type: '-' }));
			},
		};
	}

	releaseConnects() {
		for (const resolve of this.held.splice(0)) resolve();
	}
}

const list = sftpOps.find((op) => op.name === 'sftp.list')!;
const sftp = { host: 'files.test', port: 22, username: 'partner', password: 'pw' };

const flush = () => new Promise((resolve) => setImmediate(resolve));

let server: FakeServer;
beforeEach(() => {
	server = new FakeServer();
	jest.mocked(SftpClient).mockImplementation(() => server.client() as unknown as SftpClient);
});
afterEach(() => jest.restoreAllMocks());

describe('sftp.list: when a file counts as finished', () => {
	const start = Date.UTC(2026, 11, 1, 21, 0, 0);

	async function listAt(at: number, memory: OpMemory, args: Record<string, unknown> = {}) {
		jest.spyOn(Date, 'now').mockReturnValue(at);
		const result = await list.run({ folder: '/in', ...args }, { memory, sftp });
		if (result.kind !== 'data') throw new Error(result.kind);
		const data = result.data as { files: RemoteFile[]; uploading: RemoteFile[] };
		return {
			finished: data.files.map((file) => file.name),
			uploading: data.uploading.map((file) => file.name),
			memory: result.memory ?? {},
		};
	}

	it('only when the listing that first saw it unchanged is old enough: a listing seconds after the last one (a re-publish) does not settle a stalled upload', async () => {
		server.files = [{ name: 'big.csv', size: 4096, modifyTime: start - 1000 }];
		const first = await listAt(start, {});
		expect(first.uploading).toEqual(['big.csv']);
		// Published again 3 s later; the upload has stalled: same size, same time. Not finished yet.
		const soon = await listAt(start + 3000, first.memory);
		expect(soon).toMatchObject({ finished: [], uploading: ['big.csv'] });
		// Still unchanged a minute after it was first seen: finished, and it stays so.
		const later = await listAt(start + 60_000, soon.memory);
		expect(later.finished).toEqual(['big.csv']);
		expect((await listAt(start + 65_000, later.memory)).finished).toEqual(['big.csv']);
	});
});

describe('SFTP sessions close whenever the call is stopped', () => {
	/** Each call's outcome, as soon as it has one. */
	function outcomes(calls: Array<Promise<unknown>>) {
		const settled: string[] = [];
		for (const call of calls)
			call.then(
				() => settled.push('finished'),
				(error: Error) => settled.push(error.message),
			);
		return settled;
	}

	it('a poll stopped 12 times while connecting (unpublish, re-publish) leaves no session open', async () => {
		server.holdConnects = true;
		const settled = outcomes(
			Array.from({ length: 12 }, () => {
				const stop = new AbortController();
				const call = list.run({ folder: '/in' }, { memory: {}, sftp, signal: stop.signal });
				stop.abort();
				return call;
			}),
		);
		await flush();
		// Each call ends at once, not once its connection is up.
		expect(settled).toEqual(Array(12).fill('SFTP call to files.test:22 was aborted'));
		server.releaseConnects();
		await flush();
		expect(server.open).toBe(0);
	});

	it('a poll timed out while connecting leaves no session open', async () => {
		server.holdConnects = true;
		const settled = outcomes([list.run({ folder: '/in' }, { memory: {}, sftp, timeoutMs: 20 })]);
		await new Promise((resolve) => setTimeout(resolve, 50));
		expect(settled).toEqual(['SFTP call to files.test:22 did not finish within 20 ms']);
		server.releaseConnects();
		await flush();
		expect(server.open).toBe(0);
	});

	it('stopped after connecting, or finished, the session is ended', async () => {
		const stop = new AbortController();
		const call = list.run({ folder: '/in' }, { memory: {}, sftp, signal: stop.signal });
		await flush();
		stop.abort();
		await call.catch(() => undefined);
		expect(server.open).toBe(0);
		await list.run({ folder: '/in' }, { memory: {}, sftp });
		expect(server.open).toBe(0);
	});
});
