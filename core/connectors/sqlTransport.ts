/**
 * What the SQL ops (core/connectors/sql.ts) need of a database: sessions the node opens with pg or
 * mysql2 (nodes/shared/sqlSession.ts). A leaf module, so that the op interface (types.ts) names the
 * factory without importing the op.
 */

export type SqlDialect = 'postgres' | 'mysql';

/** One database session, as the op uses it; nodes/shared/sqlSession.ts makes it with pg or mysql2. */
export interface SqlSession {
	readonly dialect: SqlDialect;
	now(): Promise<SqlClock>;
	/** Runs one statement with positional bind parameters; rows keep timestamps and big numbers as text. */
	query(sql: string, params: unknown[]): Promise<SqlRows>;
	close(): Promise<void>;
}

/** The database's clock, read once as text. */
export interface SqlClock {
	/** In UTC (the session's time zone): what a cursor with a time zone is compared with. */
	utc: string;
	/**
	 * As a wall clock in the database's own time zone, the one its DEFAULT now(), CURRENT_TIMESTAMP
	 * and NOW() write a column without a time zone in.
	 */
	local: string;
	/** That zone, as the database names it (PostgreSQL's TimeZone; MySQL's time_zone, or the system's). */
	zone: string;
}

/** A statement's rows; `zoneless` names its result columns of a date/time type without a time zone. */
export type SqlRows = Array<Record<string, unknown>> & { zoneless?: readonly string[] };

/** Opens a session whose statements the database cancels after `timeoutMs`. */
export type SqlSessionFactory = (options: {
	timeoutMs: number;
	signal?: AbortSignal;
}) => Promise<SqlSession>;
