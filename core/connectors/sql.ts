import { checkRange, ConfigError } from '../configError';
import { argumentError } from './args';
import { networkFailure } from './network';
import type { SqlClock, SqlDialect, SqlSession } from './sqlTransport';
import { ConnectorError, type ConnectorOp, type OpContext } from './types';

export type { SqlClock, SqlDialect, SqlRows, SqlSession, SqlSessionFactory } from './sqlTransport';

/**
 * `sql.query`: the user's SELECT, run with the trigger's read position as bind parameters, paged by
 * keyset on (cursor column, key column). docs/sql-source.md says why it is shaped so:
 *
 * - Keyset with a tie-break: each page starts after the last row of the one before, compared as the
 *   pair (cursor, key), so rows sharing one cursor value across a page boundary are neither skipped
 *   nor read twice. The database does the comparing (the user's `WHERE (c, k) > ($1, $2)`).
 * - Safety lag, on the database's clock: a row whose transaction commits late (stamped 10:00:00,
 *   visible at 10:00:05) must still be read by a later poll. So the next poll starts not after the
 *   last row read, but after the last row read whose cursor is at least `lag` older than the
 *   database's clock read before the poll; younger rows are read again by the next poll, and the
 *   trigger's dedupe (`unique` by key, or `changed` by key and version) starts each once.
 * - Full precision: cursor values travel as the database wrote them (the drivers return timestamps
 *   as text), are bound back as text, and are compared here only against the lag boundary, as
 *   nanoseconds (BigInt), never as a JavaScript Date.
 * - Time zones: a cursor with one (timestamptz, MySQL TIMESTAMP) is compared with the clock in UTC;
 *   one without (timestamp, DATETIME) is a wall clock whose zone its text does not say, so in a
 *   database not in UTC the user says who writes it (`cursorTimeZone`, see zonelessClock).
 *
 * What a query cannot see: deleted rows, and states a row held between two polls (A → B → A is
 * one or no start, as the poll seed declares). A row whose cursor column is written by a clock
 * other than the database's, or whose transaction stays open longer than `lag`, can be missed.
 *
 * The op holds no connection between calls: each call opens one session (SqlSessionFactory, built
 * by the node from n8n's `postgres` or `mySql` credential), so a database restarted between polls
 * costs nothing, and one that is down fails that one poll.
 */

/**
 * In which zone a cursor column without a time zone is written: by the database in its own zone,
 * or by the application in UTC. A row's text says neither, so the user says it (see readPages).
 */
export type SqlCursorZone = 'database' | 'UTC';

/** What a bind parameter of the query stands for, in order: `$1`, `$2`, ... or each `?`. */
export type SqlParam = 'cursor' | 'key' | 'limit';

/** A read position: the (cursor, key) pair of a row, as the database returned them. */
export type SqlPosition = [cursor: string | number, key: string | number];

export interface SqlQueryArgs {
	query: string;
	params: SqlParam[];
	/** Result columns holding the cursor and the key. */
	cursor: string;
	key: string;
	/** Rows the query returns at most (its LIMIT): a full page means there may be more. */
	pageSize: number;
	/** Where the first poll starts: after this position. */
	from: SqlPosition;
	lagMs: number;
	/** Rows read at most in one call; the next poll goes on from the lag boundary. */
	maxRows: number;
	cursorTimeZone?: SqlCursorZone;
}

const DEFAULT_PAGE_SIZE = 500;
const MAX_PAGE_SIZE = 10_000;
const DEFAULT_MAX_ROWS = 10_000;
const MAX_ROWS = 100_000;
const DEFAULT_LAG_SECONDS = 60;
const DEFAULT_TIMEOUT_MS = 30_000;
const PARAM_NAMES: readonly SqlParam[] = ['cursor', 'key', 'limit'];
/** The key of the op's memory holding the next start position, as JSON. */
const POSITION_MEMORY = 'sqlPosition';
/** The key of the op's memory holding the zone of rows read before (SqlZone), as JSON. */
const ZONE_MEMORY = 'sqlZone';
/** The key of the op's memory saying which call read the position, and where (SqlItemPosition). */
const READ_MEMORY = 'sqlRead';

/** Parses and checks the op's arguments ("With"), naming the argument at fault. */
export function sqlQueryArgs(args: Record<string, unknown>): SqlQueryArgs {
	const query = typeof args.query === 'string' ? args.query.trim() : '';
	if (query === '')
		throw argumentError(
			'query',
			args.query,
			'must be the SELECT to run, e.g. "SELECT * FROM orders WHERE (updated_at, id) > ($1, $2) ORDER BY updated_at, id LIMIT $3"',
		);
	const params = paramsArg(args.params);
	const pageSize = checkRange(
		'with',
		args.pageSize ?? DEFAULT_PAGE_SIZE,
		{ min: 1, max: MAX_PAGE_SIZE, whole: true },
		{ key: 'pageSize' },
	);
	const lagSeconds = checkRange(
		'with',
		args.lagSeconds ?? DEFAULT_LAG_SECONDS,
		{ min: 0, max: 86_400 },
		{ key: 'lagSeconds' },
	);
	const maxRows = checkRange(
		'with',
		args.maxRows ?? DEFAULT_MAX_ROWS,
		{ min: pageSize, max: MAX_ROWS, whole: true },
		{ key: 'maxRows' },
	);
	return {
		query,
		params,
		cursor: columnArg(args.cursor, 'cursor'),
		key: columnArg(args.key, 'key'),
		pageSize,
		from: positionArg(args.from),
		lagMs: Math.round(lagSeconds * 1000),
		maxRows,
		cursorTimeZone: cursorZoneArg(args.cursorTimeZone),
	};
}

function cursorZoneArg(value: unknown): SqlCursorZone | undefined {
	if (value === undefined || value === null) return undefined;
	if (value === 'database' || value === 'UTC') return value;
	throw argumentError(
		'cursorTimeZone',
		value,
		'must be "database" (the database writes the cursor column, in its own time zone) or "UTC" (the application writes it in UTC)',
	);
}

function paramsArg(value: unknown): SqlParam[] {
	if (value === undefined || value === null) return ['cursor', 'key', 'limit'];
	if (
		!Array.isArray(value) ||
		value.length === 0 ||
		value.some((name) => !PARAM_NAMES.includes(name as SqlParam)) ||
		!value.includes('cursor')
	)
		throw argumentError(
			'params',
			value,
			'must list what each bind parameter of the query stands for, in order, from "cursor", "key" and "limit" (at least "cursor"), e.g. ["cursor", "cursor", "key"] for MySQL\'s "updated_at > ? OR (updated_at = ? AND id > ?)"',
		);
	if (!value.includes('key'))
		throw argumentError(
			'params',
			value,
			'has no "key": a page ending inside a run of rows sharing one cursor value skips the rest of the run ("updated_at > $1") or reads the same page forever ("updated_at >= $1"); compare (cursor, key) with the key as the tie-break, PostgreSQL "(updated_at, id) > ($1, $2)" with ["cursor", "key", "limit"], MySQL/MariaDB "updated_at > ? OR (updated_at = ? AND id > ?)" with ["cursor", "cursor", "key", "limit"]',
		);
	return value as SqlParam[];
}

function columnArg(value: unknown, key: string): string {
	if (typeof value !== 'string' || value.trim() === '')
		throw argumentError(
			key,
			value,
			key === 'cursor'
				? 'must name the result column the query orders by first, e.g. "updated_at"'
				: 'must name the result column that breaks ties of the cursor (a unique key), e.g. "id"',
		);
	return value;
}

function positionArg(value: unknown): SqlPosition {
	if (Array.isArray(value) && value.length === 2 && value[1] === '')
		throw argumentError(
			'from',
			value,
			'has an empty key: the key must be a non-empty text or a number. To start before every row, give a cursor below every row\'s, with any key (e.g. ["1970-01-01 00:00:00", "0"]), or a key that sorts before every key in the table',
		);
	const isValue = (part: unknown) =>
		(typeof part === 'string' && part !== '') ||
		(typeof part === 'number' && Number.isFinite(part));
	if (
		!Array.isArray(value) ||
		value.length !== 2 ||
		!isValue(value[0]) ||
		!isValue(value[1]) ||
		(typeof value[0] === 'string' && cursorUnits(value[0]) === undefined)
	)
		throw argumentError(
			'from',
			value,
			'must be the position the first poll starts after: [cursor, key], e.g. ["2026-01-01 00:00:00", 0]',
		);
	return value as SqlPosition;
}

/**
 * A cursor value as a number that orders like the database orders it: a timestamp as nanoseconds
 * since 1970 in UTC (text with no offset is taken as UTC, the session's zone), a whole number as
 * itself. Undefined for anything else.
 */
export function cursorUnits(value: unknown): bigint | undefined {
	if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : undefined;
	if (typeof value === 'bigint') return value;
	if (typeof value !== 'string') return undefined;
	const text = value.trim();
	if (/^-?\d+$/.test(text)) return BigInt(text);
	const match =
		/^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?$/i.exec(
			text,
		);
	if (!match) return undefined;
	const [, y, mo, d, h = '0', mi = '0', s = '0', fraction = '', zone] = match;
	const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
	if (Number.isNaN(ms)) return undefined;
	let offsetSeconds = 0;
	if (zone && zone.toUpperCase() !== 'Z') {
		const digits = zone.slice(1).replace(/:/g, '');
		offsetSeconds =
			(Number(digits.slice(0, 2)) * 3600 +
				Number(digits.slice(2, 4) || 0) * 60 +
				Number(digits.slice(4, 6) || 0)) *
			(zone.startsWith('-') ? -1 : 1);
	}
	return (
		(BigInt(ms / 1000) - BigInt(offsetSeconds)) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0'))
	);
}

/** What one call read, and where the next starts. */
export interface SqlReadResult {
	rows: Array<Record<string, unknown>>;
	pages: number;
	/** The database's clock before the first page, in UTC. */
	databaseNow: string;
	/** The position this call started after. */
	startedAfter: SqlPosition;
	/** The position the next call starts after: the last row read that is older than the lag. */
	nextAfter: SqlPosition;
	/** Which call read `nextAfter`, and where in its read (SqlItemPosition); unset: `after` itself. */
	nextAfterRead?: [call: string, index: number];
	/** True when `maxRows` stopped the paging before a short page. */
	truncated: boolean;
	/** The last row read (`rows` may leave it out: see `zone`), where a truncated read goes on. */
	lastRead: SqlPosition;
	/** Where the call read `lastRead` (as `nextAfterRead`), when it read a row. */
	lastReadAt?: [call: string, index: number];
	/** For each of `rows`, where it was read (SqlItemPosition as JSON): what `rewindSql` takes. */
	positions: string[];
	/** The zone this call was given and has not read past: kept for the next call. */
	zone?: SqlZone;
}

/**
 * Rows an earlier call had read already, listed again because the position went back for rows
 * whose runs n8n did not start (rewindSql): up to `to`, only the rows at the positions `owed`
 * ([cursor, key] as JSON) are given, so no other row of the range starts again (its key may have
 * been forgotten by Remember at Most since).
 */
export interface SqlZone {
	to: SqlPosition;
	owed: string[];
}

/**
 * Where a row was read: the call (`call`, a random id, and `index`, the place in the call's read of
 * the position read just before it, -1 for where the call started), that position (`from`: a call
 * from there lists the row again), the row's own
 * (`at`), and the last position the call read before `from` whose cursor is lower than `from`'s
 * (`below`): a call from there lists every row sharing `from`'s cursor.
 */
type SqlItemPosition = [
	call: string,
	index: number,
	from: SqlPosition,
	at: SqlPosition,
	below: SqlPosition | null,
];

/**
 * Reads from `after` page by page until a page comes back short or `maxRows` are read, and plans
 * the next start position by the lag. Pure but for the session, so a unit test drives it with a fake.
 */
export async function readPages(
	session: SqlSession,
	args: SqlQueryArgs,
	after: SqlPosition,
	zone?: SqlZone,
): Promise<SqlReadResult> {
	const clock = await session.now();
	const boundaryOf = (now: string) => {
		const units = cursorUnits(now);
		if (units === undefined)
			throw new ConnectorError(
				`The database's clock read as ${JSON.stringify(now)}, which is not a timestamp`,
			);
		return units - BigInt(args.lagMs) * 1_000_000n;
	};
	const databaseNow = clock.utc;
	let boundary = boundaryOf(databaseNow);
	const rows: Array<Record<string, unknown>> = [];
	let nextAfter = after;
	let nextAfterRead: [string, number] | undefined;
	let pageAfter = after;
	let pages = 0;
	let previousUnits: bigint | undefined;
	let lagPassed = false;
	const call = `${databaseNow}|${Math.random().toString(36).slice(2, 10)}`;
	const positions: string[] = [];
	// The position read last, and the last one read before it with a lower cursor (SqlItemPosition).
	let previous = after;
	let belowPrevious: SqlPosition | null = null;
	let read = 0;
	const owed = new Set(zone?.owed);
	let inZone = zone !== undefined;
	// The first row after the zone's end, as the database orders them (null: none), once asked.
	let zoneEnd: SqlPosition | null | undefined;
	let truncated = false;
	for (;;) {
		const limit = Math.min(args.pageSize, args.maxRows - read);
		const page = await session.query(args.query, bindValues(args.params, pageAfter, limit));
		pages++;
		if (page.zoneless?.includes(args.cursor)) boundary = boundaryOf(zonelessClock(clock, args));
		// A query that does not compare (cursor, key) strictly after the bound position would
		// return the same page again and again.
		if (page.length > 0 && !isAfter(rowPosition(page[0], args), pageAfter))
			throw new ConnectorError(
				`sql.query: the query "${firstLine(args.query)}" returned ${JSON.stringify(rowPosition(page[0], args))} first when asked for the rows after ${JSON.stringify(pageAfter)}: it must return only rows whose (cursor, key) is after the bound position, e.g. "${session.dialect === 'postgres' ? `(${args.cursor}, ${args.key}) > ($1, $2)` : `${args.cursor} > ? OR (${args.cursor} = ? AND ${args.key} > ?)`}", not ">="`,
			);
		for (const row of page) {
			const position = rowPosition(row, args);
			const units = cursorUnits(position[0])!;
			if (previousUnits !== undefined && units < previousUnits)
				throw new ConnectorError(
					`sql.query: the query returned cursor ${JSON.stringify(position[0])} after ${JSON.stringify(previous[0])}: it must ORDER BY ${args.cursor}, ${args.key}`,
				);
			previousUnits = units;
			if (units > boundary) lagPassed = true;
			// Rows come in (cursor, key) order, so those older than the lag are a prefix of the read.
			if (!lagPassed) {
				nextAfter = position;
				nextAfterRead = [call, read];
			}
			if (inZone && !withinZone(position, zone!.to)) inZone = false;
			const isOwed = owed.has(JSON.stringify(position));
			// A row sharing the zone end's cursor, with a text key: its order against the end is the
			// database's collation. Meeting the end tells; but should the end's row have changed or
			// gone, only the database can say where the zone ends.
			if (inZone && !isOwed && undecided(position, zone!.to)) {
				zoneEnd ??= await firstRowAfter(session, args, zone!.to);
				if (zoneEnd && samePosition(position, zoneEnd)) inZone = false;
			}
			if (!inZone || isOwed) {
				const at: SqlItemPosition = [call, read - 1, previous, position, belowPrevious];
				rows.push(row);
				positions.push(JSON.stringify(at));
			}
			read++;
			const below: SqlPosition | null =
				cursorUnits(previous[0]) === units ? belowPrevious : previous;
			previous = position;
			belowPrevious = below;
			// The zone's last row itself was read before: what follows it was not.
			if (inZone && samePosition(position, zone!.to)) inZone = false;
		}
		if (page.length > args.pageSize)
			throw new ConnectorError(
				`sql.query: a page returned ${page.length} rows, more than "pageSize" ${args.pageSize}: the query's LIMIT must be the "limit" parameter or at most "pageSize"`,
			);
		if (page.length < limit || page.length === 0) break;
		pageAfter = rowPosition(page[page.length - 1], args);
		if (read >= args.maxRows) {
			truncated = true;
			break;
		}
	}
	return {
		rows,
		pages,
		databaseNow,
		startedAfter: after,
		nextAfter,
		truncated,
		lastRead: previous,
		...(read > 0 && { lastReadAt: [call, read - 1] as [string, number] }),
		...(nextAfterRead && { nextAfterRead }),
		positions,
		...(inZone && { zone: zone! }),
	};
}

/**
 * The position of the first row after `to` in the database's order (the user's query, one row), or
 * null when there is none: where a zone whose end row has changed or gone ends.
 */
async function firstRowAfter(
	session: SqlSession,
	args: SqlQueryArgs,
	to: SqlPosition,
): Promise<SqlPosition | null> {
	const [row] = await session.query(args.query, bindValues(args.params, to, 1));
	return row === undefined ? null : rowPosition(row, args);
}

/** Whether `position` is at or before the zone's end `to` as far as can be told (isAfter). */
function withinZone(position: SqlPosition, to: SqlPosition): boolean {
	return !isAfter(position, to) || undecided(position, to);
}

/** Whether `position` orders against `to` by a text key under one cursor: the database's collation. */
function undecided(position: SqlPosition, to: SqlPosition): boolean {
	return sameCursor(position, to) && !numericKeys(position, to) && !samePosition(position, to);
}

function samePosition(a: SqlPosition, b: SqlPosition): boolean {
	return sameCursor(a, b) && String(a[1]) === String(b[1]);
}

function sameCursor(a: SqlPosition, b: SqlPosition): boolean {
	return cursorUnits(a[0]) === cursorUnits(b[0]);
}

function numericKeys(a: SqlPosition, b: SqlPosition): boolean {
	return typeof a[1] === 'number' && typeof b[1] === 'number';
}

/** Zone names that are UTC all year (PostgreSQL's and MySQL's spellings). */
const UTC_ZONE = /^(?:(?:Etc\/)?(?:UTC|UCT|GMT0?|Universal|Zulu)|Z|[+-]00(?::?00)?)$/i;

/**
 * The clock a cursor without a time zone is compared with for the lag. Its text is a wall clock in
 * some zone, read here as if UTC: right for a database in UTC. In another zone the lag would be off
 * by the zone's offset (west of UTC, rows look hours old and late commits are passed; east, they
 * look in the future and the position stalls), and only the user knows who writes the column: the
 * database in its own zone (compare with its wall clock) or the application in UTC.
 */
function zonelessClock(clock: SqlClock, args: SqlQueryArgs): string {
	const zone = args.cursorTimeZone ?? (UTC_ZONE.test(clock.zone) ? 'UTC' : undefined);
	if (zone === undefined)
		throw argumentError(
			'cursorTimeZone',
			undefined,
			`must say which time zone the cursor column "${args.cursor}" (a date/time type without a time zone) is written in, since the database's time zone is ${JSON.stringify(clock.zone)}, not UTC: "database" when the database writes it (a DEFAULT or NOW() in that zone), "UTC" when the application writes UTC. Or make it a type with a time zone (PostgreSQL timestamptz, MySQL TIMESTAMP)`,
		);
	return zone === 'database' ? clock.local : clock.utc;
}

/**
 * Whether `position` is after `after` in (cursor, key) order. Text keys under one cursor value
 * order by the database's collation, which is not known here: only an equal key is known not to be after.
 */
function isAfter(position: SqlPosition, after: SqlPosition): boolean {
	const units = cursorUnits(position[0])!;
	const afterUnits = cursorUnits(after[0])!;
	if (units !== afterUnits) return units > afterUnits;
	const [key, afterKey] = [position[1], after[1]];
	return typeof key === 'number' && typeof afterKey === 'number'
		? key > afterKey
		: String(key) !== String(afterKey);
}

function bindValues(params: readonly SqlParam[], after: SqlPosition, limit: number): unknown[] {
	return params.map((name) => (name === 'cursor' ? after[0] : name === 'key' ? after[1] : limit));
}

function rowPosition(row: Record<string, unknown>, args: SqlQueryArgs): SqlPosition {
	const cursor = row[args.cursor];
	const key = row[args.key];
	if (!(args.cursor in row) || !(args.key in row))
		throw new ConnectorError(
			`sql.query: the query's rows have no column "${!(args.cursor in row) ? args.cursor : args.key}" (columns: ${Object.keys(row).join(', ')}); "cursor" and "key" in With must name result columns`,
		);
	if (cursorUnits(cursor) === undefined)
		throw new ConnectorError(
			`sql.query: cursor column "${args.cursor}" holds ${JSON.stringify(cursor)}, which is not a timestamp or a whole number`,
		);
	if ((typeof key !== 'string' && typeof key !== 'number') || key === '')
		throw new ConnectorError(
			`sql.query: key column "${args.key}" holds ${JSON.stringify(key)}; it must be a non-empty text or a number (a unique, non-null key)`,
		);
	return [cursor as string | number, key];
}

/** The start position kept in the op's memory, or `from` when there is none (first poll, or rolled back). */
function startPosition(memory: Record<string, string>, args: SqlQueryArgs): SqlPosition {
	return savedPosition(memory) ?? args.from;
}

function savedPosition(memory: Record<string, string>): SqlPosition | undefined {
	const saved = memory[POSITION_MEMORY];
	if (saved === undefined) return undefined;
	const parsed = JSON.parse(saved) as SqlPosition;
	return Array.isArray(parsed) && parsed.length === 2 ? parsed : undefined;
}

function savedZone(memory: Record<string, string>): SqlZone | undefined {
	const saved = memory[ZONE_MEMORY];
	return saved === undefined ? undefined : (JSON.parse(saved) as SqlZone);
}

/** The op's memory: where the next call starts after (none: `from`), and the zone it has not read past. */
function sqlMemory(
	position: SqlPosition | undefined,
	zone: SqlZone | undefined,
	read?: [call: string, index: number],
): Record<string, string> {
	return {
		...(position && { [POSITION_MEMORY]: JSON.stringify(position) }),
		...(read && { [READ_MEMORY]: JSON.stringify(read) }),
		...(zone && { [ZONE_MEMORY]: JSON.stringify(zone) }),
	};
}

/** Owed rows a zone names at most; past it the position goes back to `from` (the dedupe decides). */
export const MAX_OWED_POSITIONS = 1000;

/** A position a call may start after, with what breaks a tie with another (SqlItemPosition). */
interface SqlStart {
	position: SqlPosition;
	call?: string;
	index?: number;
	below?: SqlPosition | null;
}

/**
 * The earlier of two start positions. Rows of one cursor value order by key, which for text keys is
 * the database's collation, not known here: two such positions of one call order by the call's read;
 * otherwise a position with a lower cursor (`below`) is before both; undefined when there is none.
 */
function earlierStart(a: SqlStart, b: SqlStart): SqlStart | undefined {
	const [unitsA, unitsB] = [cursorUnits(a.position[0])!, cursorUnits(b.position[0])!];
	if (unitsA !== unitsB) return unitsA < unitsB ? a : b;
	if (String(a.position[1]) === String(b.position[1])) return a;
	if (numericKeys(a.position, b.position)) return a.position[1] < b.position[1] ? a : b;
	if (a.call !== undefined && a.call === b.call) return a.index! < b.index! ? a : b;
	const below = a.below ?? b.below;
	return below ? { position: below } : undefined;
}

/**
 * ConnectorOp.rewind of sql.query: starts after the earliest `from` of the owed rows (or where
 * `memory` starts, if that is earlier), and lists, up to where `memory` had read, only them. Where
 * no position before them all can be told (text keys under one cursor, read by different calls),
 * it starts from `from` with the same zone: the read goes back further, but still lists only them.
 */
export function rewindSql(
	memory: Record<string, string> | undefined,
	owed: readonly string[],
): Record<string, string> | undefined {
	const current = memory && savedPosition(memory);
	const zone = memory && savedZone(memory);
	// Nothing read since `from`: the next call lists the owed rows anyway.
	if (!current && !zone) return undefined;
	const [readBy, readAt] = memory![READ_MEMORY]
		? (JSON.parse(memory![READ_MEMORY]) as [string, number])
		: [];
	let start: SqlStart | undefined = current && { position: current, call: readBy, index: readAt };
	const rows: string[] = [];
	for (const text of owed) {
		const [call, index, from, at, below] = JSON.parse(text) as SqlItemPosition;
		start = start && earlierStart(start, { position: from, call, index, below });
		rows.push(JSON.stringify(at));
	}
	// The owed rows are after where the next call starts: it lists them anyway.
	if (start?.position === current && !zone) return memory;
	const owedRows = [...new Set([...(zone?.owed ?? []), ...rows])];
	if (owedRows.length > MAX_OWED_POSITIONS) return undefined;
	return sqlMemory(
		start?.position,
		{ to: zone?.to ?? current!, owed: owedRows },
		start?.call === undefined ? undefined : [start.call, start.index!],
	);
}

/** The first line of a query, shortened, to name it in an error. */
export function firstLine(query: string): string {
	const line = query.trim().split('\n')[0].trim();
	return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}

export function createSqlOps(): ConnectorOp[] {
	const query: ConnectorOp = {
		name: 'sql.query',
		description:
			"Rows of a PostgreSQL or MySQL/MariaDB table, read with your SELECT after the last position by (cursor, key), with a safety lag on the database's clock",
		transport: 'sql',
		// Execute step reads from the trigger's saved position: what the next poll would read.
		previewsWithMemory: true,
		check: (args) => sqlQueryArgs(args),
		rewind: rewindSql,
		async run(args, context: OpContext) {
			const parsed = sqlQueryArgs(args);
			if (!context.sql) throw new Error('sql.query needs a SQL connection');
			if (context.signal?.aborted)
				throw new ConnectorError('sql.query was aborted before it started');
			const session = await context.sql({
				timeoutMs: context.timeoutMs ?? DEFAULT_TIMEOUT_MS,
				signal: context.signal,
			});
			try {
				const read = await readPages(
					session,
					parsed,
					startPosition(context.memory, parsed),
					savedZone(context.memory),
				);
				const positions = new Map(read.rows.map((row, i) => [row, read.positions[i]]));
				return {
					kind: 'data',
					data: {
						rows: read.rows,
						pages: read.pages,
						databaseNow: read.databaseNow,
						startedAfter: read.startedAfter,
						nextAfter: read.nextAfter,
						truncated: read.truncated,
					},
					// A position this call did not move keeps what the memory said of it.
					memory: sqlMemory(
						read.nextAfter,
						read.zone,
						read.nextAfterRead ??
							(context.memory[READ_MEMORY] === undefined
								? undefined
								: (JSON.parse(context.memory[READ_MEMORY]) as [string, number])),
					),
					positionOf: (item) => positions.get(item as Record<string, unknown>),
					// Read on from there: the same memory as `memory` when the lag held nothing back.
					...(read.truncated && {
						more: sqlMemory(read.lastRead, read.zone, read.lastReadAt),
					}),
				};
			} catch (error) {
				throw describeSqlFailure(error, session.dialect, parsed.query);
			} finally {
				await session.close();
			}
		},
	};
	return [query];
}

export const sqlOps = createSqlOps();

/** The database's own message (and code), with the query's first line, as one ConnectorError. */
export function describeSqlFailure(
	error: unknown,
	dialect: SqlDialect,
	query: string,
): ConnectorError | ConfigError {
	if (error instanceof ConnectorError || error instanceof ConfigError) return error;
	const database = dialect === 'postgres' ? 'PostgreSQL' : 'MySQL/MariaDB';
	const { code, text } = describeCause(error);
	return new ConnectorError(`${database} error${code} in query "${firstLine(query)}": ${text}`, {
		description: failureMessage(error),
	});
}

function failureMessage(error: unknown): string {
	const failure = (typeof error === 'object' && error !== null ? error : {}) as {
		message?: string;
		sqlMessage?: string;
	};
	return failure.sqlMessage ?? failure.message ?? String(error);
}

/**
 * The database's code (" (42P01)") and message; for a socket failure, no code and its words
 * (network.ts: n8n would replace a message with the code in it).
 */
export function describeCause(error: unknown): { code: string; text: string } {
	const network = networkFailure(error);
	if (network) return { code: '', text: network.words };
	// mysql2 names only MySQL's error numbers; a MariaDB-only one (1969, statement timeout) has its errno.
	const failure = error as { code?: unknown; errno?: unknown } | null;
	const code = failure?.code ?? failure?.errno;
	const shown = typeof code === 'string' || typeof code === 'number' ? ` (${code})` : '';
	return { code: shown, text: failureMessage(error) };
}
