import { utimesSync } from 'node:fs';

import { type ChaosCase, unorderedCase } from './chaos';
import type { N8nInstance } from './n8nInstance';
import { SqlServers } from './sqlServers';
import { S3rver } from './s3rver';
import { Sshd } from './sshd';
import type { UserFilesServer } from './userFilesServer';
import { Vsftpd } from './vsftpd';

type Item = Record<string, unknown>;

/** A Poll Trigger on a table: keyset on (updated_at, id), pages of 20, a lag of 10 s (rows read again). */
const SQL_QUERY =
	'SELECT id, updated_at FROM chaos_rows WHERE (updated_at, id) > ($1, $2) ORDER BY updated_at, id LIMIT $3';

/**
 * The chaos cases whose source is a real server (`npm run chaos`, not CI): `sql`, a PostgreSQL 15
 * table polled with sql.query (`sql_history`: the same, its history kept in a table of that
 * PostgreSQL, History Store), `sftp`, an OpenSSH sshd folder polled with sftp.list, `ftp`, a
 * vsftpd folder polled with ftp.list over explicit TLS, and `s3`, a prefix of an s3rver bucket
 * polled with s3.list. Each is an
 * unordered `unique` case (test/harness/chaos.ts): its list is held as rows or files, a burst is
 * inserted or written, and while n8n is down some rows or files are deleted. Each row or file is
 * named by its id, which the trigger's ID reads, so the harness names a crashed run by its key as for
 * the fake source's cases.
 */
export async function sourceChaosCases(
	n8n: N8nInstance,
	{
		history,
		burst,
		wideBurst = burst,
		wanted,
	}: {
		history: number;
		burst: number;
		/** The sql cases' bursts (a keyset the trigger asks from: issue 36). */
		wideBurst?: number;
		wanted: (name: string) => boolean;
	},
): Promise<{ cases: ChaosCase[]; stop: () => Promise<void> }> {
	const cases: ChaosCase[] = [];
	const stops: Array<() => Promise<void>> = [];
	try {
		let servers: SqlServers | undefined;
		const postgres = async () => {
			if (servers) return servers;
			const started = await SqlServers.start({ mariadb: false });
			stops.push(() => started.stop());
			return (servers = started);
		};
		if (wanted('sql')) {
			cases.push({
				...unorderedCase('sql', { dedupe: 'unique' }, history, wideBurst),
				source: await sqlSource(n8n, await postgres(), 'chaos'),
			});
		}
		// The same, the history kept in a table of that PostgreSQL (History Store) beside static data.
		if (wanted('sql_history')) {
			const source = await sqlSource(n8n, await postgres(), 'chaos_history');
			const id = await n8n.createCredential(
				'chaos history',
				'pollHistoryPostgres',
				(await postgres()).postgresCredential('chaos_history'),
			);
			cases.push({
				...unorderedCase('sql_history', { dedupe: 'unique' }, history, wideBurst),
				source: {
					...source,
					parameters: { ...source.parameters, historyStore: 'postgres' },
					credentials: {
						...source.credentials,
						pollHistoryPostgres: { id, name: 'chaos history' },
					},
				},
			});
		}
		if (wanted('sftp')) {
			const sshd = await Sshd.start();
			stops.push(() => sshd.stop());
			cases.push({
				...unorderedCase('sftp', { dedupe: 'unique' }, history, burst),
				// sftp.list's items are files: the file's name is the item's id.
				identity: (item) => String(item.name ?? item.id),
				source: await filesSource(n8n, sshd, 'sftp'),
			});
		}
		if (wanted('ftp')) {
			const vsftpd = await Vsftpd.start();
			stops.push(() => vsftpd.stop());
			cases.push({
				...unorderedCase('ftp', { dedupe: 'unique' }, history, burst),
				identity: (item) => String(item.name ?? item.id),
				source: await filesSource(n8n, vsftpd, 'ftp'),
			});
		}
		if (wanted('s3')) {
			const store = await S3rver.start({ bucket: 'chaos' });
			stops.push(() => store.stop());
			cases.push({
				...unorderedCase('s3', { dedupe: 'unique' }, history, burst),
				identity: (item) => String(item.name ?? item.id),
				source: await objectsSource(n8n, store),
			});
		}
	} catch (error) {
		for (const stop of stops) await stop();
		throw error;
	}
	return {
		cases,
		stop: async () => {
			for (const stop of stops) await stop();
		},
	};
}

/** sql.query's table, query and n8n credential type in each database the harness runs. */
const DIALECTS = {
	postgres: {
		table:
			'CREATE TABLE chaos_rows (id text PRIMARY KEY, updated_at timestamptz(6) NOT NULL DEFAULT clock_timestamp())',
		index: 'CREATE INDEX ON chaos_rows (updated_at, id)',
		query: SQL_QUERY,
		params: ['cursor', 'key', 'limit'],
		insert: 'INSERT INTO chaos_rows (id) SELECT unnest($1::text[])',
		delete: 'DELETE FROM chaos_rows WHERE id = ANY($1)',
		credential: 'postgres',
	},
	// MariaDB has no row values in a keyset and stamps a statement's rows alike (NOW(6)): the key
	// orders them. A DATETIME has no time zone: written by the database (its zone, UTC here).
	mariadb: {
		table:
			'CREATE TABLE chaos_rows (id varchar(64) PRIMARY KEY, updated_at datetime(6) NOT NULL DEFAULT NOW(6), INDEX (updated_at, id))',
		index: undefined,
		query:
			'SELECT id, updated_at FROM chaos_rows WHERE updated_at > ? OR (updated_at = ? AND id > ?) ORDER BY updated_at, id LIMIT ?',
		params: ['cursor', 'cursor', 'key', 'limit'],
		insert: 'INSERT INTO chaos_rows (id) VALUES ?',
		delete: 'DELETE FROM chaos_rows WHERE id IN (?)',
		credential: 'mySql',
	},
} as const;

/**
 * A table of its own `database` (created here) polled with sql.query, on PostgreSQL or MariaDB: what
 * `hold` lists, it holds as rows, named by their id (the trigger's ID), stamped by the database.
 */
export async function sqlSource(
	n8n: N8nInstance,
	servers: SqlServers,
	database: string,
	dialect: keyof typeof DIALECTS = 'postgres',
): Promise<NonNullable<ChaosCase['source']>> {
	const sql = DIALECTS[dialect];
	const postgres = dialect === 'postgres';
	await (postgres ? servers.postgresExec('postgres') : servers.mariadbExec())(
		`CREATE DATABASE ${database}`,
	);
	const exec = postgres ? servers.postgresExec(database) : servers.mariadbExec(database);
	await exec(sql.table);
	if (sql.index) await exec(sql.index);
	const name = `${database} ${dialect}`;
	const id = await n8n.createCredential(
		name,
		sql.credential,
		postgres
			? servers.postgresCredential(database)
			: {
					host: '127.0.0.1',
					port: servers.mariadbPort,
					database,
					user: 'root',
					password: '',
					connectTimeout: 10000,
					ssl: false,
					sshTunnel: false,
				},
	);
	const held = new Set<string>();
	return {
		parameters: {
			op: 'sql.query',
			database: sql.credential,
			with: JSON.stringify({
				query: sql.query,
				params: sql.params,
				cursor: 'updated_at',
				key: 'id',
				from: ['1970-01-01 00:00:00', '0'],
				pageSize: 20,
				lagSeconds: 10,
			}),
			items: 'rows',
		},
		credentials: { [sql.credential]: { id, name } },
		reportId: '$json.id',
		async hold(list) {
			const ids = new Set(list.map((item) => String(item.id)));
			const added = [...ids].filter((rowId) => !held.has(rowId));
			const removed = [...held].filter((rowId) => !ids.has(rowId));
			// One statement each: a burst commits at once, stamped in insertion order.
			if (added.length > 0)
				await exec(sql.insert, [postgres ? added : added.map((rowId) => [rowId])]);
			if (removed.length > 0) await exec(sql.delete, [removed]);
			for (const rowId of added) held.add(rowId);
			for (const rowId of removed) held.delete(rowId);
		},
		// Each poll is one session to the database (the harness's own statements go to it only in hold).
		async polls() {
			if (!postgres)
				throw new Error('MariaDB counts no sessions per database: polls() is PostgreSQL only');
			const [row] = await servers.postgresExec('postgres')(
				'SELECT sessions FROM pg_stat_database WHERE datname = $1',
				[database],
			);
			return Number(row?.sessions ?? 0);
		},
	};
}

/**
 * Each file protocol's op, its credential type and its With: sshd's folders by their path on disk;
 * vsftpd's by their path in the user's home (its root for the session), over explicit TLS.
 */
const FILE_PROTOCOLS = {
	sftp: { folder: (server: UserFilesServer, folder: string) => server.path(folder), with: {} },
	ftp: {
		folder: (_server: UserFilesServer, folder: string) => `/${folder}`,
		with: { tls: 'explicit', allowSelfSigned: true },
	},
};

/**
 * A `folder` of its own of the sshd (sftp.list) or vsftpd (ftp.list): what `hold` lists, it holds as
 * files, named by their id (the trigger's ID reads the name). The history's files (round 0) and every
 * other file of a burst are an hour old; the others new.
 */
export async function filesSource(
	n8n: N8nInstance,
	server: Sshd | Vsftpd,
	protocol: keyof typeof FILE_PROTOCOLS,
	folder = 'chaos',
): Promise<NonNullable<ChaosCase['source']>> {
	server.mkdir(folder);
	const name = `${folder} ${protocol}`;
	const id = await n8n.createCredential(name, protocol, server.credential());
	const held = new Set<string>();
	return {
		parameters: {
			op: `${protocol}.list`,
			// History files are an hour old: finished at once, so the first poll remembers them. Of a
			// burst, every other file is as old (it starts at the first poll that lists it); the others
			// are new: each counts as finished at the poll after the one that first listed it unchanged
			// (unchangedForSec: the 5 s interval; the op's memory, kept through the kills in the
			// trigger's state).
			with: JSON.stringify({
				...FILE_PROTOCOLS[protocol].with,
				folder: FILE_PROTOCOLS[protocol].folder(server, folder),
				finishedAfterSec: 600,
				unchangedForSec: 5,
			}),
			items: 'files',
			id: 'name',
		},
		credentials: { [protocol]: { id, name } },
		reportId: '$json.name',
		async hold(list: Item[], round: number) {
			const names = new Set(list.map((item) => String(item.id)));
			for (const file of names) {
				if (held.has(file)) continue;
				server.write(`${folder}/${file}`, `${file}\n`);
				if (round === 0 || Number(file.split('-').at(-1)) % 2 === 0) {
					const anHourAgo = new Date(Date.now() - 3_600_000);
					utimesSync(server.path(`${folder}/${file}`), anHourAgo, anHourAgo);
				}
				held.add(file);
			}
			for (const file of [...held].filter((file) => !names.has(file))) {
				server.remove(`${folder}/${file}`);
				held.delete(file);
			}
		},
		// Each poll logs in once; nothing else logs in to this server.
		async polls() {
			return server.logins();
		},
	};
}

/**
 * The prefix `chaos/` of an s3rver bucket polled with s3.list (n8n's `s3` credential, path-style):
 * what `hold` lists, it holds as objects put and deleted through the store's API, named by their id
 * (the trigger's ID reads the name). An object is listed once its upload has completed, so there is
 * no finished-upload rule to meet.
 */
export async function objectsSource(
	n8n: N8nInstance,
	store: S3rver,
): Promise<NonNullable<ChaosCase['source']>> {
	const name = `${store.bucket} s3`;
	const id = await n8n.createCredential(name, 's3', store.credential());
	const held = new Set<string>();
	return {
		parameters: {
			op: 's3.list',
			with: JSON.stringify({ bucket: store.bucket, prefix: 'chaos/' }),
			items: 'files',
			id: 'name',
		},
		credentials: { s3: { id, name } },
		reportId: '$json.name',
		async hold(list: Item[]) {
			const names = new Set(list.map((item) => String(item.id)));
			for (const object of names) {
				if (held.has(object)) continue;
				await store.put(`chaos/${object}`, `${object}\n`);
				held.add(object);
			}
			for (const object of [...held].filter((object) => !names.has(object))) {
				await store.delete(`chaos/${object}`);
				held.delete(object);
			}
		},
		// Each poll lists the prefix (one request per 1,000 objects); nothing else lists this bucket.
		async polls() {
			return store.listings().length;
		},
	};
}
