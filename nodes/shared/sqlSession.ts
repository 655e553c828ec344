import * as mysql from 'mysql2/promise';
import type { ICredentialDataDecryptedObject } from 'n8n-workflow';
import { Client as PgClient, types as pgTypes } from 'pg';

import { ConfigError, fieldRef } from '../../core/configError';
import { credentialAddress } from './credentialAddress';
import {
	describeCause,
	type SqlDialect,
	type SqlRows,
	type SqlSession,
	type SqlSessionFactory,
} from '../../core/connectors/sql';
import { ConnectorError } from '../../core/connectors/types';

/**
 * The SQL ops' sessions, made from n8n's own credentials: `postgres` (its Postgres node's) and
 * `mySql` (its MySQL node's, for MySQL and MariaDB). The drivers are the ones under n8n's nodes:
 * pg (under pg-promise, which adds query formatting the op does not use) and mysql2.
 *
 * Every session reads the database in UTC and returns timestamps, dates and big numbers as text,
 * at the database's precision. It first reads the database's own time zone (the one a column
 * without a time zone is written in by DEFAULT now()), for the clock the op compares such a column with. One session per call: nothing is held between polls, so a
 * restarted database is simply connected to again at the next poll.
 */

/** n8n's credential type for each database, which the node declares and reads by name. */
export const SQL_CREDENTIALS: Record<SqlDialect, string> = { postgres: 'postgres', mysql: 'mySql' };

/** The "Database" parameter's value for each dialect (the credential type's name). */
export function dialectOf(database: unknown): SqlDialect {
	if (database === 'postgres') return 'postgres';
	if (database === 'mySql') return 'mysql';
	throw new ConfigError('database', database, 'must be postgres or mySql');
}

/** Postgres types returned as the server's text: date, timestamp, timestamptz, time, timetz. */
const TEXT_TYPES = new Set([1082, 1114, 1184, 1083, 1266]);
/** Date/time types without a time zone: Postgres date and timestamp; MySQL DATE, DATETIME, NEWDATE. */
const PG_ZONELESS = new Set([1082, 1114]);
const MYSQL_ZONELESS = new Set([10, 12, 14]);

export function sqlSessionFactory(
	dialect: SqlDialect,
	credential: ICredentialDataDecryptedObject,
): SqlSessionFactory {
	const type = SQL_CREDENTIALS[dialect];
	if (credential.sshTunnel === true)
		throw new ConfigError(
			'sshTunnel',
			true,
			`is not supported yet (sql.query, History Store); reach the database directly (or through a tunnel you run), and turn ${fieldRef('sshTunnel', type)} off`,
			{ credential: type },
		);
	const { host, port } = credentialAddress(credential, type, dialect === 'postgres' ? 5432 : 3306);
	const common = {
		host,
		port,
		database: String(credential.database ?? ''),
		user: String(credential.user ?? ''),
		password: String(credential.password ?? ''),
	};
	return dialect === 'postgres'
		? (options) => openPostgres(common, credential, options)
		: (options) => openMysql(common, credential, options);
}

interface Where {
	host: string;
	port: number;
	database: string;
	user: string;
	password: string;
}

type SessionOptions = Parameters<SqlSessionFactory>[0];

/** The margin the client waits beyond the server's own timeout, so the server's cancel is what reports. */
const CLIENT_MARGIN_MS = 5_000;

async function openPostgres(
	where: Where,
	credential: ICredentialDataDecryptedObject,
	{ timeoutMs, signal }: SessionOptions,
): Promise<SqlSession> {
	// As n8n's Postgres node reads the credential: SSL unless "disable"; the self-signed switch.
	const ssl =
		credential.allowUnauthorizedCerts === true
			? { rejectUnauthorized: false }
			: !['disable', undefined].includes(credential.ssl as string);
	const client = new PgClient({
		...where,
		ssl,
		connectionTimeoutMillis: timeoutMs,
		// The server cancels a statement running longer; the client gives up a little later.
		statement_timeout: timeoutMs,
		query_timeout: timeoutMs + CLIENT_MARGIN_MS,
		types: {
			getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
				TEXT_TYPES.has(oid)
					? (value: string) => value
					: pgTypes.getTypeParser(oid, format)) as typeof pgTypes.getTypeParser,
		},
	});
	// A server restart drops an idle connection with an 'error' event; unhandled, it would end n8n.
	client.on('error', () => undefined);
	const abort = () => void client.end().catch(() => undefined);
	signal?.addEventListener('abort', abort, { once: true });
	let zone: string;
	try {
		await client.connect();
		// The database's zone (its setting, or the database's or role's), then UTC for the session.
		const [{ rows }] = (await client.query(
			"SELECT current_setting('TimeZone') AS zone; SET TimeZone = 'UTC'",
		)) as unknown as [{ rows: Array<{ zone: string }> }];
		zone = rows[0].zone;
	} catch (error) {
		signal?.removeEventListener('abort', abort);
		await client.end().catch(() => undefined);
		throw connectFailure('PostgreSQL', where, error);
	}
	return {
		dialect: 'postgres',
		async now() {
			const result = await client.query<{ utc: string; local: string }>(
				'SELECT now()::text AS utc, (now() AT TIME ZONE $1)::text AS local',
				[zone],
			);
			return { ...result.rows[0], zone };
		},
		async query(sql, params) {
			const result = await client.query(sql, params);
			const zoneless = result.fields
				.filter((field) => PG_ZONELESS.has(field.dataTypeID))
				.map((field) => field.name);
			return Object.assign(result.rows as SqlRows, { zoneless });
		},
		async close() {
			signal?.removeEventListener('abort', abort);
			await client.end().catch(() => undefined);
		},
	};
}

async function openMysql(
	where: Where,
	credential: ICredentialDataDecryptedObject,
	{ timeoutMs, signal }: SessionOptions,
): Promise<SqlSession> {
	let connection: mysql.Connection;
	try {
		connection = await mysql.createConnection({
			...where,
			connectTimeout: Number(credential.connectTimeout) || timeoutMs,
			...(credential.ssl === true && { ssl: mysqlSsl(credential) }),
			dateStrings: true,
			supportBigNumbers: true,
			bigNumberStrings: true,
			decimalNumbers: false,
		});
	} catch (error) {
		throw connectFailure('MySQL/MariaDB', where, error);
	}
	// A server restart drops the connection with an 'error' event; the pending call reports it.
	connection.on('error', () => undefined);
	const abort = () => connection.destroy();
	signal?.addEventListener('abort', abort, { once: true });
	let zone: string;
	let offsetSeconds: number;
	try {
		// The database's zone and its offset now (the session's default), then UTC for the session.
		const [[info]] = (await connection.query(
			'SELECT VERSION() AS version, @@session.time_zone AS zone, @@system_time_zone AS systemZone, TIME_TO_SEC(TIMEDIFF(NOW(), UTC_TIMESTAMP())) AS offsetSeconds',
		)) as unknown as [
			[{ version: string; zone: string; systemZone: string; offsetSeconds: string }],
		];
		const { version } = info;
		zone = info.zone === 'SYSTEM' ? info.systemZone : info.zone;
		offsetSeconds = Number(info.offsetSeconds);
		await connection.query("SET time_zone = '+00:00'");
		// The server cancels a statement running longer: MariaDB's max_statement_time is seconds,
		// MySQL's max_execution_time milliseconds (SELECTs only, which is what the op runs).
		await connection.query(
			version.includes('MariaDB')
				? `SET SESSION max_statement_time = ${(timeoutMs / 1000).toFixed(3)}`
				: `SET SESSION max_execution_time = ${Math.round(timeoutMs)}`,
		);
	} catch (error) {
		signal?.removeEventListener('abort', abort);
		connection.destroy();
		throw connectFailure('MySQL/MariaDB', where, error);
	}
	return {
		dialect: 'mysql',
		async now() {
			// The wall clock by the offset read at the start: a session lasts one poll.
			const [rows] = await connection.query(
				'SELECT CAST(NOW(6) AS CHAR) AS utc, CAST(NOW(6) + INTERVAL ? SECOND AS CHAR) AS local',
				[offsetSeconds],
			);
			return { ...(rows as Array<{ utc: string; local: string }>)[0], zone };
		},
		async query(sql, params) {
			// Server-side bind parameters (a prepared statement). Sent as text: MySQL refuses a
			// number bound as DOUBLE in LIMIT, and compares text with a column by the column's type.
			const [rows, fields] = await connection.execute({
				sql,
				values: params.map((value) => String(value)),
				timeout: timeoutMs + CLIENT_MARGIN_MS,
			});
			const zoneless = (fields ?? [])
				.filter((field) => MYSQL_ZONELESS.has(field.columnType ?? -1))
				.map((field) => field.name);
			return Object.assign(rows as SqlRows, { zoneless });
		},
		async close() {
			signal?.removeEventListener('abort', abort);
			await connection.end().catch(() => connection.destroy());
		},
	};
}

/** As n8n's MySQL node reads the credential: SSL with the given CA and client certificate. */
function mysqlSsl(credential: ICredentialDataDecryptedObject): mysql.SslOptions {
	return {
		...(credential.caCertificate ? { ca: pem(credential.caCertificate) } : {}),
		...(credential.clientCertificate ? { cert: pem(credential.clientCertificate) } : {}),
		...(credential.clientPrivateKey ? { key: pem(credential.clientPrivateKey) } : {}),
	};
}

/** A PEM block pasted on one line (as n8n's credential field often holds it) gets its line breaks back. */
function pem(value: unknown): string {
	const text = String(value).trim();
	if (text.includes('\n')) return text;
	return text.replace(
		/(-----BEGIN [^-]+-----)\s*(.*?)\s*(-----END [^-]+-----)/,
		(_m, begin, body, end) =>
			[
				begin,
				...(String(body)
					.replace(/\s+/g, '')
					.match(/.{1,64}/g) ?? []),
				end,
			].join('\n'),
	);
}

function connectFailure(database: string, where: Where, error: unknown): ConnectorError {
	const { code, text } = describeCause(error);
	return new ConnectorError(
		`Could not connect to ${database} at ${where.host}:${where.port} as ${JSON.stringify(where.user)}${code}: ${text}`,
	);
}
