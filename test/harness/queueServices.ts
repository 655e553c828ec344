import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { freePort, waitFor } from './net';

/**
 * PostgreSQL and Redis from Debian's packages, on loopback, for n8n's queue mode. No containers and no
 * service manager: `pg_ctl` and `redis-server --daemonize` on a folder of their own. Postgres refuses
 * to run as root, so as root its folder belongs to the `postgres` user and it runs through `runuser`.
 */
export interface QueueServices {
	dir: string;
	postgresPort: number;
	redisPort: number;
}

/** Where `.ci/run` and Debian put them. */
export const POSTGRES_BIN = process.env.POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';
export const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';

/** The environment variables tests read the services from (set by the e2e global setup). */
export const SERVICES_ENV = {
	dir: 'DT_QUEUE_SERVICES_DIR',
	postgres: 'DT_QUEUE_POSTGRES_PORT',
	redis: 'DT_QUEUE_REDIS_PORT',
} as const;

const isRoot = process.getuid?.() === 0;

function asPostgres(
	command: string,
	args: string[],
	options: { stdio?: 'ignore' | 'inherit' } = {},
): string {
	const [file, argv] = isRoot
		? ['runuser', ['-u', 'postgres', '--', command, ...args]]
		: [command, args];
	return execFileSync(file, argv, {
		stdio: options.stdio === 'inherit' ? 'inherit' : ['ignore', 'pipe', 'pipe'],
		encoding: 'utf8',
	});
}

/** Whether this machine has both (CI installs them; see .ci/run). */
export function queueServicesInstalled(): boolean {
	try {
		execFileSync(REDIS_SERVER, ['--version'], { stdio: 'ignore' });
	} catch {
		return false;
	}
	return existsSync(join(POSTGRES_BIN, 'pg_ctl'));
}

/**
 * Starts Postgres and Redis on `dir` (created and initialised on first use; an existing folder is
 * reused with its data). Ports are free ones unless given. `throwaway` (tests): no fsync, as the data
 * dies with the run.
 */
export async function startQueueServices(
	dir: string,
	{
		ports = {},
		throwaway = false,
	}: { ports?: { postgres?: number; redis?: number }; throwaway?: boolean } = {},
): Promise<QueueServices> {
	if (!queueServicesInstalled()) {
		throw new Error(
			`queue mode needs PostgreSQL 15 (${POSTGRES_BIN}) and redis-server: apt-get install postgresql redis-server`,
		);
	}
	const postgresPort = ports.postgres ?? (await freePort());
	const redisPort = ports.redis ?? (await freePort());
	startPostgres(dir, postgresPort, throwaway);
	await startRedis(dir, redisPort);
	return { dir, postgresPort, redisPort };
}

/**
 * Starts Postgres on `dir`/postgres and `port` (initialised on first use; existing data is kept) and
 * waits until it accepts connections. `throwaway`: no fsync, as the data dies with the run.
 */
export function startPostgres(dir: string, port: number, throwaway = false): void {
	const pgDir = join(dir, 'postgres');
	const pgData = join(pgDir, 'data');
	mkdirSync(pgDir, { recursive: true });
	if (isRoot) execFileSync('chown', ['-R', 'postgres', pgDir]);
	// The postgres user must reach its folder through the checkout's folders.
	chmodSync(dir, 0o755);
	if (!existsSync(join(pgData, 'PG_VERSION'))) {
		asPostgres(join(POSTGRES_BIN, 'initdb'), [
			'-D',
			pgData,
			'-U',
			'postgres',
			'--auth=trust',
			'--no-sync',
		]);
	}
	stopPostgresIfRunning(pgDir);
	asPostgres(join(POSTGRES_BIN, 'pg_ctl'), [
		'-D',
		pgData,
		'-o',
		`-p ${port} -k ${pgDir} -c listen_addresses=127.0.0.1 -c max_connections=300${throwaway ? ' -c fsync=off' : ''}`,
		'-l',
		join(pgDir, 'log'),
		'-w',
		'-t',
		'60',
		'start',
	]);
}

/** Stops the Postgres that startPostgres started on `dir` (fast shutdown: open sessions are ended). */
export function stopPostgres(dir: string): void {
	stopPostgresIfRunning(join(dir, 'postgres'));
}

/**
 * (Re)starts the services' Redis on `port`, with its append-only file: what it had accepted before
 * a stop (stopRedis) is there again.
 */
export async function startRedis(dir: string, redisPort: number): Promise<void> {
	const redisDir = join(dir, 'redis');
	mkdirSync(redisDir, { recursive: true });
	stopRedisIfRunning(redisDir);
	execFileSync(REDIS_SERVER, [
		'--port',
		String(redisPort),
		'--bind',
		'127.0.0.1',
		'--dir',
		redisDir,
		'--appendonly',
		'yes',
		'--save',
		'',
		'--daemonize',
		'yes',
		'--pidfile',
		join(redisDir, 'redis.pid'),
		'--logfile',
		join(redisDir, 'log'),
	]);
	await waitFor(
		'redis to answer PING',
		async () => (redisCli(redisPort, 'PING').trim() === 'PONG' ? true : undefined),
		{ timeoutMs: 30_000 },
	);
}

/** Stops the services' Redis (SIGTERM: it writes its append-only file and exits). */
export function stopRedis(dir: string): void {
	stopRedisIfRunning(join(dir, 'redis'));
}

export function stopQueueServices(dir: string): void {
	stopPostgres(dir);
	stopRedisIfRunning(join(dir, 'redis'));
}

function stopPostgresIfRunning(pgDir: string): void {
	if (!existsSync(join(pgDir, 'data', 'postmaster.pid'))) return;
	try {
		asPostgres(join(POSTGRES_BIN, 'pg_ctl'), [
			'-D',
			join(pgDir, 'data'),
			'-m',
			'fast',
			'-w',
			'stop',
		]);
	} catch {
		// Not running (a stale pid file): pg_ctl start copes with it.
	}
}

function stopRedisIfRunning(redisDir: string): void {
	const pidFile = join(redisDir, 'redis.pid');
	if (!existsSync(pidFile)) return;
	const pid = Number(readFileSync(pidFile, 'utf8').trim());
	rmSync(pidFile, { force: true });
	if (!pid) return;
	try {
		process.kill(pid, 'SIGTERM');
	} catch {
		return;
	}
	for (let i = 0; i < 200; i++) {
		try {
			process.kill(pid, 0);
		} catch {
			return;
		}
		execFileSync('sleep', ['0.05']);
	}
}

export function redisCli(port: number, ...args: string[]): string {
	return execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
		encoding: 'utf8',
		stdio: ['ignore', 'pipe', 'ignore'],
	});
}

/** Creates a database for one n8n stack (each e2e stack gets its own, like its own SQLite file). */
export function createDatabase(services: Pick<QueueServices, 'postgresPort'>, name: string): void {
	const exists = asPostgres(join(POSTGRES_BIN, 'psql'), [
		'-h',
		'127.0.0.1',
		'-p',
		String(services.postgresPort),
		'-U',
		'postgres',
		'-tAc',
		`SELECT 1 FROM pg_database WHERE datname = '${name}'`,
	]);
	if (exists.trim() === '1') return;
	asPostgres(join(POSTGRES_BIN, 'createdb'), [
		'-h',
		'127.0.0.1',
		'-p',
		String(services.postgresPort),
		'-U',
		'postgres',
		name,
	]);
}

/** The services the e2e global setup started, if the run is in queue mode. */
export function servicesFromEnv(): QueueServices | undefined {
	const dir = process.env[SERVICES_ENV.dir];
	if (!dir) return undefined;
	return {
		dir,
		postgresPort: Number(process.env[SERVICES_ENV.postgres]),
		redisPort: Number(process.env[SERVICES_ENV.redis]),
	};
}
