import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as mysql from 'mysql2/promise';
import { Client as PgClient } from 'pg';

import { freePort, waitFor } from './net';
import { startPostgres, stopPostgres } from './queueServices';
import { recordPostgres, recordProcess } from './startedServers';

/**
 * The databases sql.query is tested against, from Debian's packages, on free loopback ports:
 * PostgreSQL 15 (started as for queue mode, test/harness/queueServices.ts) and MariaDB. Each can be
 * restarted on the same port with its data, as a database restarted between two polls is.
 */
export const MARIADBD = process.env.MARIADBD ?? '/usr/sbin/mariadbd';
const isRoot = process.getuid?.() === 0;

/** One statement against a test database, for tests to set up tables and insert rows. */
export type Exec = (sql: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

export class SqlServers {
	private mariadb: ChildProcess | undefined;
	/** Forgets the running PostgreSQL in the run's record of started servers (test/harness/startedServers.ts). */
	private forgetPostgres = (): void => undefined;

	private constructor(
		readonly dir: string,
		readonly postgresPort: number,
		readonly mariadbPort: number,
	) {}

	/** Starts both servers, or with `mariadb: false` PostgreSQL alone. */
	static async start({ mariadb = true } = {}): Promise<SqlServers> {
		const dir = mkdtempSync(join(tmpdir(), 'dt-sql-'));
		chmodSync(dir, 0o755);
		const servers = new SqlServers(dir, await freePort(), await freePort());
		servers.startPostgres();
		if (mariadb) await servers.startMariadb();
		return servers;
	}

	startPostgres(): void {
		this.forgetPostgres();
		this.forgetPostgres = recordPostgres('PostgreSQL', join(this.dir, 'postgres', 'data'));
		startPostgres(this.dir, this.postgresPort, true);
	}

	stopPostgres(): void {
		stopPostgres(this.dir);
		this.forgetPostgres();
	}

	/**
	 * Turns TLS on in PostgreSQL with a self-signed certificate (made here with openssl, one day valid);
	 * plain connections are still accepted. Kept across restarts (postgresql.auto.conf).
	 */
	async enablePostgresSsl(): Promise<void> {
		const data = join(this.dir, 'postgres', 'data');
		const [key, certificate] = [join(data, 'server.key'), join(data, 'server.crt')];
		execFileSync(
			'openssl',
			[
				'req',
				'-x509',
				'-newkey',
				'ec',
				'-pkeyopt',
				'ec_paramgen_curve:prime256v1',
				'-nodes',
			].concat(['-days', '1', '-subj', '/CN=localhost', '-keyout', key, '-out', certificate]),
			{ stdio: 'ignore' },
		);
		chmodSync(key, 0o600);
		if (isRoot) execFileSync('chown', ['postgres', key, certificate]);
		const exec = this.postgresExec('postgres');
		await exec('ALTER SYSTEM SET ssl = on');
		await exec('SELECT pg_reload_conf()');
		await waitFor(
			'PostgreSQL to accept TLS connections',
			async () => {
				const client = new PgClient({
					host: '127.0.0.1',
					port: this.postgresPort,
					user: 'postgres',
					database: 'postgres',
					ssl: { rejectUnauthorized: false },
				});
				client.on('error', () => undefined);
				const connected = await client.connect().then(
					() => true,
					() => undefined,
				);
				await client.end().catch(() => undefined);
				return connected;
			},
			{ timeoutMs: 30_000, intervalMs: 200 },
		);
	}

	async startMariadb(): Promise<void> {
		const base = join(this.dir, 'mariadb');
		const data = join(base, 'data');
		if (!existsSync(data)) {
			mkdirSync(base, { recursive: true });
			if (isRoot) execFileSync('chown', ['-R', 'mysql', base]);
			execFileSync(
				'mariadb-install-db',
				[
					`--datadir=${data}`,
					...(isRoot ? ['--user=mysql'] : []),
					'--auth-root-authentication-method=normal',
					'--skip-test-db',
				],
				{ stdio: 'ignore' },
			);
		}
		this.mariadb = spawn(
			MARIADBD,
			[
				'--no-defaults',
				`--datadir=${data}`,
				...(isRoot ? ['--user=mysql'] : []),
				`--port=${this.mariadbPort}`,
				'--bind-address=127.0.0.1',
				`--socket=${join(base, 'sock')}`,
				`--pid-file=${join(base, 'pid')}`,
				'--skip-name-resolve',
				'--innodb-flush-log-at-trx-commit=0',
			],
			{ stdio: 'ignore' },
		);
		this.mariadb.once('exit', recordProcess('MariaDB', this.mariadb.pid));
		await waitFor(
			'MariaDB to accept connections',
			async () => {
				const connection = await this.mariadbConnection().catch(() => undefined);
				await connection?.end();
				return connection ? true : undefined;
			},
			{ timeoutMs: 60_000, intervalMs: 200 },
		);
	}

	/** Stops MariaDB (SIGTERM: a clean shutdown) and waits until it has exited. */
	async stopMariadb(): Promise<void> {
		const server = this.mariadb;
		this.mariadb = undefined;
		if (!server || server.exitCode !== null) return;
		const exited = new Promise((resolve) => server.once('exit', resolve));
		server.kill('SIGTERM');
		await exited;
	}

	async stop(): Promise<void> {
		await this.stopMariadb();
		this.stopPostgres();
		rmSync(this.dir, { recursive: true, force: true });
	}

	private async mariadbConnection(database?: string): Promise<mysql.Connection> {
		return await mysql.createConnection({
			host: '127.0.0.1',
			port: this.mariadbPort,
			user: 'root',
			database,
			dateStrings: true,
		});
	}

	/** Creates database `name` in both servers (each test its own) and returns a runner for each. */
	async createDatabase(name: string): Promise<{ postgres: Exec; mariadb: Exec }> {
		await this.postgresExec('postgres')(`CREATE DATABASE ${name}`);
		await this.mariadbExec()(`CREATE DATABASE ${name}`);
		return { postgres: this.postgresExec(name), mariadb: this.mariadbExec(name) };
	}

	/** The fields of an n8n `postgres` credential for `database` on this server, as its dialog sets them. */
	postgresCredential(database: string, { ssl = 'disable', allowUnauthorizedCerts = false } = {}) {
		return {
			host: '127.0.0.1',
			port: this.postgresPort,
			database,
			user: 'postgres',
			password: '',
			ssl,
			allowUnauthorizedCerts,
			maxConnections: 100,
			sshTunnel: false,
		};
	}

	/** One connection per statement, so a restarted server needs nothing from the test. */
	postgresExec(database: string): Exec {
		return async (sql, params = []) => {
			const client = new PgClient({
				host: '127.0.0.1',
				port: this.postgresPort,
				user: 'postgres',
				database,
			});
			await client.connect();
			try {
				return (await client.query(sql, params)).rows as Array<Record<string, unknown>>;
			} finally {
				await client.end();
			}
		};
	}

	mariadbExec(database?: string): Exec {
		return async (sql, params = []) => {
			const connection = await this.mariadbConnection(database);
			try {
				const [rows] = await connection.query(sql, params);
				return Array.isArray(rows) ? (rows as Array<Record<string, unknown>>) : [];
			} finally {
				await connection.end();
			}
		};
	}

	/** A session held open, for a transaction that commits later (Postgres). */
	async postgresSession(database: string): Promise<PgClient> {
		const client = new PgClient({
			host: '127.0.0.1',
			port: this.postgresPort,
			user: 'postgres',
			database,
		});
		await client.connect();
		return client;
	}

	/** A session held open, for a transaction that commits later (MariaDB). */
	async mariadbSession(database: string): Promise<mysql.Connection> {
		return await this.mariadbConnection(database);
	}
}
