import { randomBytes } from 'node:crypto';

import type { ICredentialTestFunctions } from 'n8n-workflow';

import type { HistoryCheckpoint } from '../../core/poll/historyStore';
import {
	HISTORY_TABLE,
	pollHistoryPostgresTest,
	postgresHistoryTable,
} from '../../nodes/shared/historyTable';
import type { N8nInstance } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { type Exec, SqlServers } from '../harness/sqlServers';

/**
 * The Poll Trigger's history table (nodes/shared/historyTable.ts) against a real PostgreSQL 15 from
 * Debian's packages (test/harness/sqlServers.ts), each test in a database of its own; and the Poll
 * History (PostgreSQL) credential type in a real n8n, whose fields come from n8n's own `postgres`.
 */
describe('the Poll Trigger history table in PostgreSQL', () => {
	let servers: SqlServers;
	let databaseCount = 0;

	beforeAll(async () => {
		servers = await SqlServers.start({ mariadb: false });
	});

	afterAll(async () => {
		await servers?.stop();
	});

	/** A database of its own, its credential, and a runner for statements in it. */
	async function freshDatabase() {
		databaseCount += 1;
		const name = `history${databaseCount}`;
		await servers.postgresExec('postgres')(`CREATE DATABASE ${name}`);
		return { credential: servers.postgresCredential(name), exec: servers.postgresExec(name) };
	}

	/** Base64 as records.ts packs it: a full chunk is ~66 KB. */
	function chunk(bytes = 49_000): string {
		return randomBytes(bytes).toString('base64');
	}

	function fullSave(seq: number, generation: number, chunks: string[]): HistoryCheckpoint {
		return {
			seq,
			state: { generation },
			count: chunks.length,
			changed: chunks.map((c, i) => [i, c]),
		};
	}

	async function rowsOf(exec: Exec, store: string) {
		return (
			await exec(`SELECT chunk, length(data) AS length FROM ${HISTORY_TABLE} WHERE store = $1`, [
				store,
			])
		).length;
	}

	test('a store never saved loads as undefined, and the first use creates the table', async () => {
		const { credential, exec } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		await expect(table.load('wf1:node1:s1')).resolves.toBeUndefined();
		const columns = await exec(
			`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`,
			[HISTORY_TABLE],
		);
		expect(columns).toEqual([
			{ column_name: 'store', data_type: 'text' },
			{ column_name: 'chunk', data_type: 'integer' },
			{ column_name: 'data', data_type: 'text' },
		]);
	});

	test('40 full chunks saved load back in order with seq and state (three INSERTs of up to 16)', async () => {
		const { credential, exec } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		const chunks = Array.from({ length: 40 }, () => chunk());
		expect(chunks[0].length).toBeGreaterThan(65_000);
		await table.save('store-a', fullSave(1234, 3, chunks));
		await expect(table.load('store-a')).resolves.toEqual({
			seq: 1234,
			state: { generation: 3 },
			chunks,
		});
		expect(await rowsOf(exec, 'store-a')).toBe(41);
		// Another table object (another activation) reads the same.
		await expect(postgresHistoryTable(credential).load('store-a')).resolves.toEqual({
			seq: 1234,
			state: { generation: 3 },
			chunks,
		});
	});

	test('a save with fewer chunks deletes the trailing ones; chunks not changed keep their data', async () => {
		const { credential, exec } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		const chunks = Array.from({ length: 6 }, () => chunk(3_000));
		await table.save('s', fullSave(10, 0, chunks));
		const changed = chunk(2_000);
		await table.save('s', { seq: 15, state: { generation: 1 }, count: 3, changed: [[1, changed]] });
		await expect(table.load('s')).resolves.toEqual({
			seq: 15,
			state: { generation: 1 },
			chunks: [chunks[0], changed, chunks[2]],
		});
		expect(await rowsOf(exec, 's')).toBe(4);
		// Growing again: only the new chunk is written.
		const added = chunk(1_000);
		await table.save('s', { seq: 16, state: { generation: 1 }, count: 4, changed: [[3, added]] });
		await expect(table.load('s')).resolves.toEqual({
			seq: 16,
			state: { generation: 1 },
			chunks: [chunks[0], changed, chunks[2], added],
		});
		// An empty history: the meta row alone.
		await table.save('s', { seq: 17, state: { generation: 2 }, count: 0, changed: [] });
		await expect(table.load('s')).resolves.toEqual({
			seq: 17,
			state: { generation: 2 },
			chunks: [],
		});
		expect(await rowsOf(exec, 's')).toBe(1);
	});

	test('two stores in one table do not see each other', async () => {
		const { credential } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		const [a, b] = [[chunk(100), chunk(100), chunk(100)], [chunk(200)]];
		await table.save('wf:node:a', fullSave(1, 0, a));
		await table.save('wf:node:b', fullSave(2, 5, b));
		await table.save('wf:node:a', { seq: 3, state: { generation: 0 }, count: 1, changed: [] });
		await expect(table.load('wf:node:a')).resolves.toEqual({
			seq: 3,
			state: { generation: 0 },
			chunks: [a[0]],
		});
		await expect(table.load('wf:node:b')).resolves.toEqual({
			seq: 2,
			state: { generation: 5 },
			chunks: b,
		});
		await expect(table.load('wf:node:c')).resolves.toBeUndefined();
	});

	test('two full saves of one store at once (one listing its chunks backwards), five times: neither fails on the other (no deadlock), and the store holds one of them whole', async () => {
		const { credential } = await freshDatabase();
		const [first, second] = [
			postgresHistoryTable(credential, { timeoutMs: 10_000 }),
			postgresHistoryTable(credential, { timeoutMs: 10_000 }),
		];
		for (let round = 0; round < 5; round++) {
			const a = Array.from({ length: 40 }, () => chunk(2_000));
			const b = Array.from({ length: 40 }, () => chunk(2_000));
			const backwards = fullSave(2 * round + 1, 0, b);
			backwards.changed.reverse();
			await Promise.all([first.save('s', fullSave(2 * round, 0, a)), second.save('s', backwards)]);
			const saved = await first.load('s');
			expect([
				{ seq: 2 * round, state: { generation: 0 }, chunks: a },
				{ seq: 2 * round + 1, state: { generation: 0 }, chunks: b },
			]).toContainEqual(saved);
		}
	});

	test('a save that fails mid-transaction (a NUL in the 19th chunk, after an INSERT of 16) leaves the last checkpoint whole', async () => {
		const { credential, exec } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		const chunks = Array.from({ length: 20 }, () => chunk(500));
		await table.save('s', fullSave(5, 1, chunks));
		const failing: HistoryCheckpoint = {
			seq: 9,
			state: { generation: 2 },
			count: 19,
			changed: Array.from({ length: 19 }, (_, i) => [i, i === 18 ? 'AAAA\u0000' : chunk(400)]),
		};
		await expect(table.save('s', failing)).rejects.toThrow(
			new RegExp(
				`^Could not save the Poll Trigger's history to PostgreSQL table ${HISTORY_TABLE} \\(22021\\): invalid byte sequence for encoding "UTF8": 0x00`,
			),
		);
		await expect(table.load('s')).resolves.toEqual({ seq: 5, state: { generation: 1 }, chunks });
		expect(await rowsOf(exec, 's')).toBe(21);
		// Nothing is left locked or half-open: the next save goes through.
		await table.save('s', { ...failing, changed: [[18, chunk(10)]] });
		expect((await table.load('s'))?.chunks.slice(0, 18)).toEqual(chunks.slice(0, 18));
	});

	test('a changed-only save onto rows deleted outside the trigger is refused before COMMIT, writing nothing', async () => {
		const { credential, exec } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		await table.save('s', fullSave(1, 0, [chunk(10), chunk(10), chunk(10)]));
		await exec(`DELETE FROM ${HISTORY_TABLE} WHERE store = 's'`);
		await expect(
			table.save('s', { seq: 2, state: { generation: 0 }, count: 3, changed: [[2, chunk(10)]] }),
		).rejects.toThrow(
			`Could not save the Poll Trigger's history to PostgreSQL table ${HISTORY_TABLE}: the rows of store "s" were changed outside the Poll Trigger: after this save it would hold 1 of the 3 chunks`,
		);
		await expect(table.load('s')).resolves.toBeUndefined();
	});

	test('a checkpoint naming a chunk at or beyond its count is refused before connecting', async () => {
		const { credential } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		await expect(
			table.save('s', { seq: 1, state: { generation: 0 }, count: 2, changed: [[2, 'AAAA']] }),
		).rejects.toThrow(
			/the checkpoint of store "s" is invalid \(chunk 2 of 2\); nothing was written/,
		);
		await expect(table.load('s')).resolves.toBeUndefined();
	});

	test('rows changed outside the trigger (a gap, no meta row, a bad meta row, a negative chunk) make load fail naming the store and the problem', async () => {
		const { credential, exec } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		const loadFails = async (store: string, problem: string) =>
			await expect(table.load(store)).rejects.toThrow(
				`Could not load the Poll Trigger's history from PostgreSQL table ${HISTORY_TABLE}: the rows of store ${JSON.stringify(store)} were changed outside the Poll Trigger: ${problem}`,
			);
		for (const store of ['gap', 'no-meta', 'bad-meta', 'negative'])
			await table.save(store, fullSave(3, 1, [chunk(10), chunk(10), chunk(10), chunk(10)]));

		await exec(`DELETE FROM ${HISTORY_TABLE} WHERE store = 'gap' AND chunk = 1`);
		await loadFails(
			'gap',
			'chunk 1 is missing (the chunks found are 0, 2-3; they must be 0 to 2 without gaps)',
		);
		await exec(`DELETE FROM ${HISTORY_TABLE} WHERE store = 'no-meta' AND chunk = -1`);
		await loadFails('no-meta', 'its meta row (chunk -1) is missing');
		await exec(
			`UPDATE ${HISTORY_TABLE} SET data = '{"seq":-1}' WHERE store = 'bad-meta' AND chunk = -1`,
		);
		await loadFails(
			'bad-meta',
			'its meta row (chunk -1) holds "{\\"seq\\":-1}", not {"seq":n,"state":{…}} with a whole number n',
		);
		await exec(`INSERT INTO ${HISTORY_TABLE} VALUES ('negative', -2, 'x')`);
		await loadFails('negative', 'its meta row (chunk -1) is missing');
	});

	test('eight activations using a new database at once, four times: the concurrent creates of the table fail none of them', async () => {
		for (let round = 0; round < 4; round++) {
			const { credential } = await freshDatabase();
			const results = await Promise.allSettled(
				Array.from({ length: 8 }, async (_, i) => {
					const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
					await table.save(`s${i}`, fullSave(i, 0, [chunk(10)]));
					return await table.load(`s${i}`);
				}),
			);
			expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
		}
	});

	test("the credential test: OK where the table can be created or is there with SELECT, INSERT, UPDATE, DELETE; the missing privilege or the server's words otherwise", async () => {
		const { credential, exec } = await freshDatabase();
		const test = async (data: Record<string, unknown>) =>
			await pollHistoryPostgresTest.call({} as ICredentialTestFunctions, {
				id: '1',
				name: 'history',
				type: 'pollHistoryPostgres',
				data: data as never,
			});
		await expect(test(credential)).resolves.toEqual({
			status: 'OK',
			message: `Connected; created table ${HISTORY_TABLE}`,
		});
		const ready = {
			status: 'OK',
			message: `Connected; table ${HISTORY_TABLE} is there, with the privileges the Poll Trigger needs`,
		};
		await expect(test(credential)).resolves.toEqual(ready);
		// PostgreSQL 15: only the database owner creates in schema public.
		await exec('CREATE ROLE history_reader LOGIN');
		await exec(`DROP TABLE ${HISTORY_TABLE}`);
		const reader = { ...credential, user: 'history_reader' };
		await expect(test(reader)).resolves.toEqual({
			status: 'Error',
			message: `Connected, but could not create table ${HISTORY_TABLE} (42501): permission denied for schema public`,
		});
		await expect(postgresHistoryTable(reader).load('s')).rejects.toThrow(
			`Could not load the Poll Trigger's history from PostgreSQL table ${HISTORY_TABLE} (42501): permission denied for schema public`,
		);
		// A table the database's owner made: the user needs its four privileges, and CREATE on the
		// schema no more.
		await postgresHistoryTable(credential).load('any');
		await exec(`GRANT SELECT ON ${HISTORY_TABLE} TO history_reader`);
		await expect(test(reader)).resolves.toEqual({
			status: 'Error',
			message: `Connected, but the user may not INSERT, UPDATE, DELETE on table ${HISTORY_TABLE}; the Poll Trigger needs SELECT, INSERT, UPDATE, DELETE`,
		});
		await exec(`GRANT INSERT, UPDATE, DELETE ON ${HISTORY_TABLE} TO history_reader`);
		await expect(test(reader)).resolves.toEqual(ready);
		const table = postgresHistoryTable(reader, { timeoutMs: 10_000 });
		await table.save('s', fullSave(1, 0, [chunk(10)]));
		await expect(table.load('s')).resolves.toMatchObject({ seq: 1 });
		await expect(test({ ...credential, port: 1 })).resolves.toEqual({
			status: 'Error',
			message: expect.stringMatching(
				/^Could not connect to PostgreSQL at 127\.0\.0\.1:1 as "postgres": connection refused/,
			) as string,
		});
		await expect(test({ ...credential, sshTunnel: true })).resolves.toMatchObject({
			status: 'Error',
			message: expect.stringContaining('"SSH Tunnel"') as string,
		});
	});

	test('a stopped server: load and save fail naming the table, the operation and the refused connection; after the restart they work again', async () => {
		const { credential } = await freshDatabase();
		const table = postgresHistoryTable(credential, { timeoutMs: 10_000 });
		const chunks = [chunk(100), chunk(100)];
		await table.save('s', fullSave(1, 0, chunks));
		servers.stopPostgres();
		try {
			const refused = `PostgreSQL at 127.0.0.1:${servers.postgresPort} as "postgres": connection refused (is the server running, and are host and port right?)`;
			await expect(table.load('s')).rejects.toThrow(
				`Could not load the Poll Trigger's history from PostgreSQL table ${HISTORY_TABLE}: Could not connect to ${refused}`,
			);
			await expect(table.save('s', fullSave(2, 0, chunks))).rejects.toThrow(
				`Could not save the Poll Trigger's history to PostgreSQL table ${HISTORY_TABLE}: Could not connect to ${refused}`,
			);
		} finally {
			servers.startPostgres();
		}
		await expect(table.load('s')).resolves.toEqual({ seq: 1, state: { generation: 0 }, chunks });
	});
});

describe('the Poll History (PostgreSQL) credential type in a real n8n', () => {
	let n8n: N8nInstance;

	beforeAll(async () => {
		n8n = await sharedN8n('history-table');
	});

	afterAll(async () => {
		await n8n?.stop();
	});

	test("has n8n's Postgres credential's fields through extends, and is stored with them", async () => {
		const schema = await n8n.api<{ properties: Record<string, unknown> }>(
			'GET',
			'/credentials/schema/pollHistoryPostgres',
		);
		expect(Object.keys(schema.properties)).toEqual(
			expect.arrayContaining(['host', 'database', 'user', 'password', 'ssl', 'port', 'sshTunnel']),
		);
		const id = await n8n.createCredential('history', 'pollHistoryPostgres', {
			host: '127.0.0.1',
			port: 5432,
			database: 'n8n',
			user: 'postgres',
			password: 'secret',
			ssl: 'disable',
			allowUnauthorizedCerts: false,
			maxConnections: 100,
			sshTunnel: false,
		});
		expect(id).toEqual(expect.any(String));
	});
});
