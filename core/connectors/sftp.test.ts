import SftpClient from 'ssh2-sftp-client';

import { sftpOps } from './sftp';
import type { SftpFile } from './sftpFiles';
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

	client() {
		let connected = false;
		return {
			connect: async () => {
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
}

const list = sftpOps.find((op) => op.name === 'sftp.list')!;
const sftp = { host: 'files.test', port: 22, username: 'partner', password: 'pw' };

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
		const data = result.data as { files: SftpFile[]; uploading: SftpFile[] };
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
