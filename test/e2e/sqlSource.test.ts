import { resolveOp } from '../../core/connectors/registry';
import { sqlSessionFactory } from '../../nodes/shared/sqlSession';
import { type Execution, isFinal, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { type Exec, SqlServers } from '../harness/sqlServers';
import { node, PACKAGE, workflow } from './workflowBuilder';

/**
 * sql.query in a real n8n 2.41.1 against PostgreSQL 15 and MariaDB from Debian's packages
 * (test/harness/sqlServers.ts), with n8n's own `postgres` and `mySql` credentials. One n8n and both
 * databases for the suite; each test its own database.
 */
type Dialect = 'postgres' | 'mariadb';

const LAG_SECONDS = 30;

/** The table each test polls: `updated_at` at microsecond precision, set by the database's clock. */
const TABLE: Record<Dialect, string> = {
	postgres:
		'CREATE TABLE orders (id serial PRIMARY KEY, updated_at timestamptz(6) NOT NULL DEFAULT clock_timestamp(), note text)',
	mariadb:
		'CREATE TABLE orders (id int AUTO_INCREMENT PRIMARY KEY, updated_at datetime(6) NOT NULL DEFAULT NOW(6), note text, INDEX (updated_at, id))',
};

/** The user's query, with the trigger's position and the page size as bind parameters. */
const QUERY: Record<Dialect, { query: string; params: string[] }> = {
	postgres: {
		query:
			'SELECT id, updated_at, note FROM orders\nWHERE (updated_at, id) > ($1, $2)\nORDER BY updated_at, id LIMIT $3',
		params: ['cursor', 'key', 'limit'],
	},
	mariadb: {
		query:
			'SELECT id, updated_at, note FROM orders\nWHERE updated_at > ? OR (updated_at = ? AND id > ?)\nORDER BY updated_at, id LIMIT ?',
		params: ['cursor', 'cursor', 'key', 'limit'],
	},
};

describe('sql.query in a real n8n', () => {
	let n8n: N8nInstance;
	let servers: SqlServers;
	let databaseCount = 0;

	beforeAll(async () => {
		[servers, n8n] = await Promise.all([SqlServers.start(), sharedN8n('sql-source')]);
	});

	afterAll(async () => {
		await n8n?.stop();
		await servers?.stop();
	});

	/** An n8n `postgres` credential for database `name`, with the SSL fields as its dialog sets them. */
	async function postgresCredential(
		name: string,
		{ ssl = 'disable', allowUnauthorizedCerts = false } = {},
	): Promise<{ name: string; credentialId: string }> {
		const label = `pg ${name} ssl ${ssl}${allowUnauthorizedCerts ? ' ignoring issues' : ''}`;
		const credentialId = await n8n.createCredential(
			label,
			'postgres',
			servers.postgresCredential(name, { ssl, allowUnauthorizedCerts }),
		);
		return { name: label, credentialId };
	}

	/** A database of its own, its `orders` table, and an n8n credential for it. */
	async function freshDatabase(dialect: Dialect) {
		databaseCount += 1;
		const name = `shop${databaseCount}`;
		const exec = (await servers.createDatabase(name))[dialect];
		await exec(TABLE[dialect]);
		const credentialId =
			dialect === 'postgres'
				? (await postgresCredential(name)).credentialId
				: await n8n.createCredential(`mariadb ${name}`, 'mySql', {
						host: '127.0.0.1',
						port: servers.mariadbPort,
						database: name,
						user: 'root',
						password: '',
						connectTimeout: 10000,
						ssl: false,
						sshTunnel: false,
					});
		return { name, exec, credentialId };
	}

	function sqlWorkflow(
		dialect: Dialect,
		database: { name: string; credentialId: string },
		withArgs: Record<string, unknown> = {},
	) {
		const type = dialect === 'postgres' ? 'postgres' : 'mySql';
		return workflow(
			`sql ${dialect} ${database.name}`,
			[
				node(
					'Poll',
					`${PACKAGE}.pollTrigger`,
					{
						op: 'sql.query',
						database: type,
						with: JSON.stringify({
							...QUERY[dialect],
							cursor: 'updated_at',
							key: 'id',
							from: ['1970-01-01 00:00:00', 0],
							pageSize: 100,
							lagSeconds: LAG_SECONDS,
							...withArgs,
						}),
						items: 'rows',
						id: 'id',
						dedupe: 'unique',
						// One run per poll's new rows: a 1,000-row burst is a few runs, not 1,000.
						oneRunPerItem: false,
						interval: 5,
						intervalUnit: 'seconds',
					},
					{ credentials: { [type]: { id: database.credentialId, name: database.name } } },
				),
			],
			[],
		);
	}

	/** Every row id the workflow's successful runs started, in start order, repeats included. */
	function startedIds(executions: Execution[]): number[] {
		return executions
			.filter((execution) => execution.status === 'success')
			.flatMap((execution) => nodeOutput(execution, 'Poll').map((row) => Number(row.id)));
	}

	async function waitForIds(workflowId: string, ids: number[], description: string) {
		const wanted = new Set(ids);
		return await n8n.waitForExecutions(
			workflowId,
			(all) => {
				const started = new Set(startedIds(all.filter(isFinal)));
				return [...wanted].every((id) => started.has(id));
			},
			description,
			180_000,
		);
	}

	async function insert(exec: Exec, dialect: Dialect, notes: string[], at?: string) {
		const ids: number[] = [];
		for (const note of notes) {
			const rows =
				dialect === 'postgres'
					? await exec(
							at
								? 'INSERT INTO orders (note, updated_at) VALUES ($1, $2) RETURNING id'
								: 'INSERT INTO orders (note) VALUES ($1) RETURNING id',
							at ? [note, at] : [note],
						)
					: await exec(
							at
								? 'INSERT INTO orders (note, updated_at) VALUES (?, ?) RETURNING id'
								: 'INSERT INTO orders (note) VALUES (?) RETURNING id',
							at ? [note, at] : [note],
						);
			ids.push(Number(rows[0].id));
		}
		return ids;
	}

	describe.each<Dialect>(['postgres', 'mariadb'])('%s', (dialect) => {
		test('1,000 rows with one timestamp across pages of 100, rows inserted during polls, a late commit of an older timestamp, and a restart between polls: every row starts once', async () => {
			const database = await freshDatabase(dialect);
			const { exec } = database;
			// 1,000 rows sharing one microsecond, in one statement.
			const sameStamp = '2026-11-30 12:00:00.123456';
			await exec(
				dialect === 'postgres'
					? `INSERT INTO orders (note, updated_at) SELECT 'burst ' || n, '${sameStamp}' FROM generate_series(1, 1000) AS n`
					: `INSERT INTO orders (note, updated_at) SELECT CONCAT('burst ', seq), '${sameStamp}' FROM seq_1_to_1000`,
			);
			const burst = (await exec('SELECT id FROM orders ORDER BY id')).map((row) => Number(row.id));
			expect(burst).toHaveLength(1000);

			const workflowId = await n8n.importWorkflow(sqlWorkflow(dialect, database));
			await n8n.publish(workflowId);
			const afterBurst = await waitForIds(workflowId, burst, 'the 1,000-row burst');
			// The timestamp came back at full precision.
			const someRun = afterBurst.find((execution) => nodeOutput(execution, 'Poll').length > 0)!;
			expect(String(nodeOutput(someRun, 'Poll')[0].updated_at)).toContain('12:00:00.123456');

			// Rows inserted one by one while the trigger polls.
			const during: number[] = [];
			for (let i = 0; i < 3; i++) {
				during.push(...(await insert(exec, dialect, [`during ${i}`])));
				await waitForIds(workflowId, during, `row ${during.at(-1)} inserted during polling`);
			}

			// A long transaction stamps its row first, a newer row commits and is started, then the
			// long one commits its older stamp: the lag keeps it in reach of the next polls.
			const late =
				dialect === 'postgres'
					? await servers.postgresSession(database.name)
					: await servers.mariadbSession(database.name);
			let lateId: number;
			if (dialect === 'postgres') {
				const pg = late as Awaited<ReturnType<SqlServers['postgresSession']>>;
				await pg.query('BEGIN');
				// now() is the transaction's start: the row is stamped before the newer one below.
				const { rows } = await pg.query(
					"INSERT INTO orders (note, updated_at) VALUES ('late', now()) RETURNING id",
				);
				lateId = Number(rows[0].id);
			} else {
				const maria = late as Awaited<ReturnType<SqlServers['mariadbSession']>>;
				await maria.query('BEGIN');
				const [rows] = await maria.query(
					"INSERT INTO orders (note, updated_at) VALUES ('late', NOW(6)) RETURNING id",
				);
				lateId = Number((rows as Array<{ id: number }>)[0].id);
			}
			const newer = await insert(exec, dialect, ['newer']);
			await waitForIds(workflowId, newer, 'the newer row, committed first');
			if (dialect === 'postgres')
				await (late as Awaited<ReturnType<SqlServers['postgresSession']>>).query('COMMIT');
			else await (late as Awaited<ReturnType<SqlServers['mariadbSession']>>).query('COMMIT');
			await late.end();
			await waitForIds(workflowId, [lateId], 'the row of the late commit, stamped older');

			// The database restarts between polls: a poll fails while it is down, the next ones go on.
			const failedBefore = (await n8n.executions(workflowId)).filter(
				(execution) => execution.status === 'error',
			).length;
			if (dialect === 'postgres') servers.stopPostgres();
			else await servers.stopMariadb();
			await n8n.waitForExecutions(
				workflowId,
				(all) => all.filter((execution) => execution.status === 'error').length > failedBefore,
				'a poll failing while the database is down',
			);
			if (dialect === 'postgres') servers.startPostgres();
			else await servers.startMariadb();
			const afterRestart = await insert(exec, dialect, ['after restart 1', 'after restart 2']);
			const all = await waitForIds(workflowId, afterRestart, 'the rows inserted after the restart');
			const failure = all.find((execution) => execution.status === 'error')!;
			expect(failure.data?.resultData.error?.message).toMatch(
				/^sql\.query: (Could not connect to (PostgreSQL|MySQL\/MariaDB) at 127\.0\.0\.1:\d+ as "(postgres|root)"|(PostgreSQL|MySQL\/MariaDB) error)/,
			);

			// Every row of the table started exactly once.
			const everyRow = (await exec('SELECT id FROM orders')).map((row) => Number(row.id));
			const started = startedIds(all);
			expect(started.length).toBe(new Set(started).size);
			expect([...started].sort((a, b) => a - b)).toEqual(everyRow.sort((a, b) => a - b));
			await n8n.unpublish(workflowId);
		});
	});

	test('a query that fails names the database message and the query line; bad arguments refuse activation naming the field', async () => {
		const database = await freshDatabase('postgres');
		const broken = await n8n.importWorkflow(
			sqlWorkflow('postgres', database, {
				query: 'SELECT id, updated_at FROM ordres\nWHERE (updated_at, id) > ($1, $2) LIMIT $3',
			}),
		);
		await n8n.publish(broken);
		const [failed] = await n8n.waitForExecutions(
			broken,
			(all) => all.some((execution) => execution.status === 'error'),
			'the failing poll',
		);
		expect(failed.data?.resultData.error?.message).toBe(
			'sql.query: PostgreSQL error (42P01) in query "SELECT id, updated_at FROM ordres": relation "ordres" does not exist',
		);
		await n8n.unpublish(broken);

		const refused = await n8n.importWorkflow(sqlWorkflow('postgres', database, { cursor: '' }));
		await n8n.publish(refused).catch(() => undefined);
		expect(await n8n.activationError(refused)).toContain(
			'Invalid value "" for "With": "cursor" must name the result column the query orders by first',
		);
	});

	test.each<[Dialect, string, RegExp]>([
		[
			'postgres',
			'SELECT now() AS c, 1 AS k FROM pg_sleep(30) WHERE $1::text IS NOT NULL AND $2::text IS NOT NULL',
			/^PostgreSQL error \(57014\) in query "SELECT now\(\) AS c.*": canceling statement due to statement timeout$/,
		],
		[
			'mariadb',
			'SELECT NOW(6) AS c, COUNT(*) AS k FROM seq_1_to_100000 a, seq_1_to_100000 b WHERE ? IS NOT NULL AND ? IS NOT NULL',
			/^MySQL\/MariaDB error \(1969\) in query "SELECT NOW\(6\) AS c.*": Query execution was interrupted \(max_statement_time exceeded\)$/,
		],
	])(
		'%s cancels a query running past the timeout, on the server',
		async (dialect, query, error) => {
			const credential =
				dialect === 'postgres'
					? {
							host: '127.0.0.1',
							port: servers.postgresPort,
							database: 'postgres',
							user: 'postgres',
							ssl: 'disable',
						}
					: {
							host: '127.0.0.1',
							port: servers.mariadbPort,
							database: 'mysql',
							user: 'root',
							ssl: false,
						};
			const sql = sqlSessionFactory(dialect === 'postgres' ? 'postgres' : 'mysql', credential);
			await expect(
				resolveOp('sql.query').run(
					{ query, params: ['cursor', 'key'], cursor: 'c', key: 'k', from: ['1970-01-01', 0] },
					{ memory: {}, sql, timeoutMs: 1_000 },
				),
			).rejects.toThrow(error);
		},
	);

	test.each<Dialect>(['postgres', 'mariadb'])(
		'%s: a cursor column without a time zone in a database west of UTC is refused without "cursorTimeZone"; with "database" the lag is on the database\'s wall clock',
		async (dialect) => {
			databaseCount += 1;
			const name = `zoned${databaseCount}`;
			const exec = (await servers.createDatabase(name))[dialect];
			const zone = dialect === 'postgres' ? 'America/New_York' : '-05:00';
			// Rows the database wrote in its own zone: 2 minutes and 5 seconds before its clock.
			if (dialect === 'postgres') {
				await exec(`ALTER DATABASE ${name} SET timezone = '${zone}'`);
				await exec(
					'CREATE TABLE orders (id serial PRIMARY KEY, updated_at timestamp(6) NOT NULL, note text)',
				);
				await exec(
					`INSERT INTO orders (updated_at) VALUES (now() AT TIME ZONE '${zone}' - interval '2 minutes'), (now() AT TIME ZONE '${zone}' - interval '5 seconds')`,
				);
			} else {
				await exec(`SET GLOBAL time_zone = '${zone}'`);
				await exec(TABLE.mariadb);
				await exec(
					`INSERT INTO orders (updated_at) VALUES (CONVERT_TZ(UTC_TIMESTAMP(6), '+00:00', '${zone}') - INTERVAL 2 MINUTE), (CONVERT_TZ(UTC_TIMESTAMP(6), '+00:00', '${zone}') - INTERVAL 5 SECOND)`,
				);
			}
			const sql = sqlSessionFactory(
				dialect === 'postgres' ? 'postgres' : 'mysql',
				dialect === 'postgres'
					? {
							host: '127.0.0.1',
							port: servers.postgresPort,
							database: name,
							user: 'postgres',
							ssl: 'disable',
						}
					: {
							host: '127.0.0.1',
							port: servers.mariadbPort,
							database: name,
							user: 'root',
							ssl: false,
						},
			);
			const poll = (extra: Record<string, unknown>) =>
				resolveOp('sql.query').run(
					{
						...QUERY[dialect],
						cursor: 'updated_at',
						key: 'id',
						from: ['1970-01-01 00:00:00', 0],
						lagSeconds: 60,
						...extra,
					},
					{ memory: {}, sql },
				);
			try {
				await expect(poll({})).rejects.toThrow(
					`"cursorTimeZone" must say which time zone the cursor column "updated_at" (a date/time type without a time zone) is written in, since the database's time zone is "${zone}", not UTC`,
				);
				const read = await poll({ cursorTimeZone: 'database' });
				// Read as UTC, both rows would look 5 hours old and the position would pass row 2.
				expect(read.kind === 'data' && (read.data as { nextAfter: unknown[] }).nextAfter[1]).toBe(
					1,
				);
			} finally {
				if (dialect === 'mariadb') await exec("SET GLOBAL time_zone = 'SYSTEM'");
			}
		},
	);

	test('PostgreSQL over TLS with a self-signed certificate: "Ignore SSL Issues" polls through TLS; SSL "require" alone refuses the certificate, naming it', async () => {
		await servers.enablePostgresSsl();
		const { name, exec } = await freshDatabase('postgres');
		const [rowId] = await insert(exec, 'postgres', ['over tls']);
		// The session reports whether it runs over TLS, as a column of each row.
		const withTls = {
			query:
				'SELECT id, updated_at, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS tls FROM orders\nWHERE (updated_at, id) > ($1, $2)\nORDER BY updated_at, id LIMIT $3',
		};
		const ignoring = await n8n.importWorkflow(
			sqlWorkflow(
				'postgres',
				await postgresCredential(name, { ssl: 'require', allowUnauthorizedCerts: true }),
				withTls,
			),
		);
		const verifying = await n8n.importWorkflow(
			sqlWorkflow('postgres', await postgresCredential(name, { ssl: 'require' }), withTls),
		);
		await Promise.all([n8n.publish(ignoring), n8n.publish(verifying)]);
		const [started, [refused]] = await Promise.all([
			waitForIds(ignoring, [rowId], 'the row read over TLS'),
			n8n.waitForExecutions(
				verifying,
				(all) => all.some((execution) => execution.status === 'error'),
				'the poll refusing the self-signed certificate',
			),
		]);
		await Promise.all([n8n.unpublish(ignoring), n8n.unpublish(verifying)]);
		const rows = started.flatMap((execution) => nodeOutput(execution, 'Poll'));
		expect(rows).toEqual([expect.objectContaining({ id: rowId, tls: true })]);
		expect(refused.data?.resultData.error?.message).toMatch(
			/^sql\.query: Could not connect to PostgreSQL at 127\.0\.0\.1:\d+ as "postgres".*self-signed certificate/,
		);
	});
});
