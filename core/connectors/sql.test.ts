import {
	createSqlOps,
	cursorUnits,
	describeSqlFailure,
	readPages,
	type SqlSession,
	sqlQueryArgs,
} from './sql';
import { ConnectorError } from './types';

interface FakeRow {
	id: number;
	updated_at: string;
	/** The fake clock's second from which the row is visible (its transaction committed). */
	committedAt: number;
}

/**
 * A table that answers `WHERE (updated_at, id) > ($1, $2) ORDER BY updated_at, id LIMIT $3` as a
 * database would, showing only rows committed by the fake clock's `now`.
 */
function fakeDatabase(rows: FakeRow[]) {
	const state = { now: '2026-12-01 10:00:00', nowSecond: 0, queries: [] as unknown[][] };
	const session: SqlSession = {
		dialect: 'postgres',
		now: async () => ({ utc: `${state.now}+00`, local: state.now, zone: 'UTC' }),
		async query(_sql, params) {
			state.queries.push(params);
			const [cursor, key, limit] = params as [string, number, number];
			const after = cursorUnits(cursor)!;
			const page = rows
				.filter((row) => row.committedAt <= state.nowSecond)
				.filter((row) => {
					const units = cursorUnits(row.updated_at)!;
					return units > after || (units === after && row.id > key);
				})
				.sort(
					(a, b) => Number(cursorUnits(a.updated_at)! - cursorUnits(b.updated_at)!) || a.id - b.id,
				)
				.slice(0, limit)
				.map(({ id, updated_at }) => ({ id, updated_at }));
			// A `timestamp` column (no time zone), as the sessions report it.
			return Object.assign(page, { zoneless: ['updated_at'] });
		},
		close: async () => undefined,
	};
	return { state, session };
}

const args = (extra: Record<string, unknown> = {}) =>
	sqlQueryArgs({
		query:
			'SELECT id, updated_at FROM orders WHERE (updated_at, id) > ($1, $2) ORDER BY updated_at, id LIMIT $3',
		cursor: 'updated_at',
		key: 'id',
		from: ['1970-01-01 00:00:00', 0],
		...extra,
	});

describe('sql.query planning', () => {
	it('reads 1,000 rows sharing one timestamp across pages of 100 once each, by (cursor, key)', async () => {
		const rows = Array.from({ length: 1000 }, (_, i) => ({
			id: i + 1,
			updated_at: '2026-12-01 09:00:00.123456',
			committedAt: 0,
		}));
		const { session, state } = fakeDatabase(rows);

		const read = await readPages(session, args({ pageSize: 100, lagSeconds: 0 }), [
			'1970-01-01 00:00:00',
			0,
		]);

		expect(read.rows.map((row) => row.id)).toEqual(rows.map((row) => row.id));
		// Ten full pages, then the short (empty) one that ends the read.
		expect(read.pages).toBe(11);
		// Each page starts after the previous page's last row, the timestamp bound back as text.
		expect(state.queries[1]).toEqual(['2026-12-01 09:00:00.123456', 100, 100]);
		expect(read.nextAfter).toEqual(['2026-12-01 09:00:00.123456', 1000]);
		expect(read.truncated).toBe(false);
	});

	it('keeps the start before rows younger than the lag, so a row committed late with an older stamp is read', async () => {
		const rows = [
			{ id: 1, updated_at: '2026-12-01 09:59:00', committedAt: 0 },
			// Stamped 10:00:00 by a transaction that commits at second 6, after the first poll.
			{ id: 2, updated_at: '2026-12-01 10:00:00', committedAt: 6 },
			{ id: 3, updated_at: '2026-12-01 10:00:01', committedAt: 0 },
		];
		const { session, state } = fakeDatabase(rows);
		const lagged = args({ lagSeconds: 5 });
		state.now = '2026-12-01 10:00:02';

		const first = await readPages(session, lagged, lagged.from);
		expect(first.rows.map((row) => row.id)).toEqual([1, 3]);
		// Row 3 is younger than the lag: the next poll starts after row 1, not after row 3.
		expect(first.nextAfter).toEqual(['2026-12-01 09:59:00', 1]);

		state.now = '2026-12-01 10:00:07';
		state.nowSecond = 6;
		const second = await readPages(session, lagged, first.nextAfter);
		// Row 3 is read again (the trigger's dedupe starts it once); row 2 is seen.
		expect(second.rows.map((row) => row.id)).toEqual([2, 3]);
		expect(second.nextAfter).toEqual(['2026-12-01 10:00:01', 3]);
	});

	it('stops at maxRows and goes on from the lag boundary', async () => {
		const rows = Array.from({ length: 250 }, (_, i) => ({
			id: i + 1,
			updated_at: `2026-12-01 08:00:${String(i % 60).padStart(2, '0')}`,
			committedAt: 0,
		}));
		const { session } = fakeDatabase(rows);
		const capped = args({ pageSize: 100, maxRows: 100, lagSeconds: 0 });

		const read = await readPages(session, capped, capped.from);

		expect(read.rows).toHaveLength(100);
		expect(read.truncated).toBe(true);
		expect(read.nextAfter).toEqual([read.rows[99].updated_at, read.rows[99].id]);
	});

	it('refuses rows out of cursor order, naming the ORDER BY it needs', async () => {
		const session: SqlSession = {
			dialect: 'mysql',
			now: async () => ({
				utc: '2026-12-01 10:00:00',
				local: '2026-12-01 10:00:00',
				zone: 'UTC',
			}),
			query: async () => [
				{ id: 1, updated_at: '2026-12-01 09:00:01' },
				{ id: 2, updated_at: '2026-12-01 09:00:00' },
			],
			close: async () => undefined,
		};
		await expect(readPages(session, args(), ['1970-01-01 00:00:00', 0])).rejects.toThrow(
			'it must ORDER BY updated_at, id',
		);
	});

	it('refuses "params" without "key": a cursor alone skips or repeats rows sharing a timestamp across a page boundary', () => {
		expect(() => args({ params: ['cursor', 'limit'] })).toThrow(
			'Invalid value ["cursor","limit"] for "«with»": "params" has no "key": a page ending inside a run of rows sharing one cursor value skips the rest of the run ("updated_at > $1") or reads the same page forever ("updated_at >= $1"); compare (cursor, key) with the key as the tie-break, PostgreSQL "(updated_at, id) > ($1, $2)" with ["cursor", "key", "limit"], MySQL/MariaDB "updated_at > ? OR (updated_at = ? AND id > ?)" with ["cursor", "cursor", "key", "limit"]',
		);
	});

	it('refuses a page that does not start after the position it was asked from, naming the query', async () => {
		// "(updated_at, id) >= ($1, $2)": every page starts with the row it was asked to start after.
		const rows = Array.from({ length: 800 }, (_, i) => ({
			id: i + 1,
			updated_at: '2026-12-01 09:00:00',
		}));
		const session: SqlSession = {
			dialect: 'postgres',
			now: async () => ({
				utc: '2026-12-01 10:00:00',
				local: '2026-12-01 10:00:00',
				zone: 'UTC',
			}),
			async query(_sql, params) {
				const [, key, limit] = params as [string, number, number];
				return rows.filter((row) => row.id >= key).slice(0, limit);
			},
			close: async () => undefined,
		};
		const repeating = args({
			query:
				'SELECT id, updated_at FROM orders\nWHERE (updated_at, id) >= ($1, $2) ORDER BY updated_at, id LIMIT $3',
			pageSize: 500,
		});
		await expect(readPages(session, repeating, ['1970-01-01 00:00:00', 0])).rejects.toThrow(
			'sql.query: the query "SELECT id, updated_at FROM orders" returned ["2026-12-01 09:00:00",500] first when asked for the rows after ["2026-12-01 09:00:00",500]',
		);
	});

	describe('a cursor column without a time zone, in a database whose time zone is not UTC', () => {
		/**
		 * A database at 10:00:00 UTC whose time zone is `zone` (its wall clock `local`), with a
		 * `timestamp` column `updated_at` (`zoneless`, or `timestamptz` when not) holding `stamps`.
		 */
		function zonedDatabase(
			zone: string,
			local: string,
			stamps: string[],
			zoneless = true,
		): SqlSession {
			return {
				dialect: 'postgres',
				now: async () => ({ utc: '2026-12-01 10:00:00.000000+00', local, zone }),
				async query(_sql, params) {
					const [cursor, key] = params as [string, number];
					const page = stamps
						.map((updated_at, i) => ({ id: i + 1, updated_at }))
						.filter(
							(row) =>
								cursorUnits(row.updated_at)! > cursorUnits(cursor)! ||
								(row.updated_at === cursor && row.id > key),
						);
					return Object.assign(page, { zoneless: zoneless ? ['updated_at'] : [] });
				},
				close: async () => undefined,
			};
		}
		const start: [string, number] = ['1970-01-01 00:00:00', 0];

		it('with "cursorTimeZone" "database", east of UTC: rows older than the lag on the wall clock are passed (not kept as hours in the future)', async () => {
			// Berlin, 11:00 on its wall clock: a row written 2 minutes ago, one 30 s ago.
			const session = zonedDatabase('Europe/Berlin', '2026-12-01 11:00:00.000000', [
				'2026-12-01 10:58:00',
				'2026-12-01 10:59:30',
			]);
			const read = await readPages(session, args({ cursorTimeZone: 'database' }), start);
			expect(read.nextAfter).toEqual(['2026-12-01 10:58:00', 1]);
		});

		it('with "cursorTimeZone" "database", west of UTC: a row younger than the lag is kept (not passed as hours old)', async () => {
			// New York, 05:00 on its wall clock: a row written 2 minutes ago, one 30 s ago.
			const session = zonedDatabase('America/New_York', '2026-12-01 05:00:00.000000', [
				'2026-12-01 04:58:00',
				'2026-12-01 04:59:30',
			]);
			const read = await readPages(session, args({ cursorTimeZone: 'database' }), start);
			expect(read.nextAfter).toEqual(['2026-12-01 04:58:00', 1]);
		});

		it('with "cursorTimeZone" "UTC" (the application writes UTC), compares with the clock in UTC', async () => {
			const session = zonedDatabase('Europe/Berlin', '2026-12-01 11:00:00.000000', [
				'2026-12-01 09:58:00',
				'2026-12-01 09:59:30',
			]);
			const read = await readPages(session, args({ cursorTimeZone: 'UTC' }), start);
			expect(read.nextAfter).toEqual(['2026-12-01 09:58:00', 1]);
		});

		it('without "cursorTimeZone", refuses to guess, saying what to write', async () => {
			const session = zonedDatabase('Europe/Berlin', '2026-12-01 11:00:00.000000', [
				'2026-12-01 10:58:00',
			]);
			await expect(readPages(session, args(), start)).rejects.toThrow(
				'Invalid value (none) for "«with»": "cursorTimeZone" must say which time zone the cursor column "updated_at" (a date/time type without a time zone) is written in, since the database\'s time zone is "Europe/Berlin", not UTC: "database" when the database writes it (a DEFAULT or NOW() in that zone), "UTC" when the application writes UTC. Or make it a type with a time zone (PostgreSQL timestamptz, MySQL TIMESTAMP)',
			);
		});

		it('a column with a time zone needs no "cursorTimeZone": it is compared in UTC', async () => {
			const session = zonedDatabase(
				'Europe/Berlin',
				'2026-12-01 11:00:00.000000',
				['2026-12-01 09:58:00+00', '2026-12-01 10:59:30+01'],
				false,
			);
			const read = await readPages(session, args(), start);
			expect(read.nextAfter).toEqual(['2026-12-01 09:58:00+00', 1]);
		});

		it('"cursorTimeZone" is "database" or "UTC"', () => {
			expect(() => args({ cursorTimeZone: 'Europe/Berlin' })).toThrow(
				'Invalid value "Europe/Berlin" for "«with»": "cursorTimeZone" must be "database" (the database writes the cursor column, in its own time zone) or "UTC" (the application writes it in UTC)',
			);
		});
	});

	it('compares timestamps at full precision and across time zones', () => {
		expect(
			cursorUnits('2026-12-01 10:00:00.123456')! < cursorUnits('2026-12-01 10:00:00.123457')!,
		).toBe(true);
		expect(cursorUnits('2026-12-01 10:00:00.123456789')).toBe(
			cursorUnits('2026-12-01T10:00:00.123456789Z'),
		);
		expect(cursorUnits('2026-12-01 12:30:00+02:30')).toBe(cursorUnits('2026-12-01 10:00:00'));
		expect(cursorUnits('2026-12-01 05:00:00-05')).toBe(cursorUnits('2026-12-01 10:00:00+00'));
		expect(cursorUnits('2026-12-01')).toBe(cursorUnits('2026-12-01 00:00:00'));
		expect(cursorUnits('12345678901234567890')).toBe(12345678901234567890n);
		expect(cursorUnits('yesterday')).toBeUndefined();
		expect(cursorUnits(1.5)).toBeUndefined();
	});

	it('checks its arguments, naming the one at fault', () => {
		expect(() => args({ query: '' })).toThrow(
			'Invalid value "" for "«with»": "query" must be the SELECT',
		);
		expect(() => args({ params: ['key'] })).toThrow('"params" must list what each bind parameter');
		expect(() => args({ cursor: undefined })).toThrow('"cursor" must name the result column');
		expect(() => args({ from: ['soon', 0] })).toThrow('"from" must be the position');
		expect(() => args({ from: [0, ''] })).toThrow(
			'Invalid value [0,""] for "«with»": "from" has an empty key: the key must be a non-empty text or a number. To start before every row, give a cursor below every row\'s, with any key (e.g. ["1970-01-01 00:00:00", "0"]), or a key that sorts before every key in the table',
		);
		expect(() => args({ pageSize: 0 })).toThrow(
			'"pageSize" must be a whole number from 1 to 10000',
		);
		expect(() => args({ pageSize: 500, maxRows: 100 })).toThrow('"maxRows" must be a whole number');
		expect(args({ params: ['cursor', 'cursor', 'key'] }).params).toEqual([
			'cursor',
			'cursor',
			'key',
		]);
	});

	it("names the database's message and the query's first line when a query fails", () => {
		const error = describeSqlFailure(
			Object.assign(new Error('relation "ordres" does not exist'), { code: '42P01' }),
			'postgres',
			'SELECT * FROM ordres\nWHERE (updated_at, id) > ($1, $2)',
		);
		expect(error).toBeInstanceOf(ConnectorError);
		expect(error.message).toBe(
			'PostgreSQL error (42P01) in query "SELECT * FROM ordres": relation "ordres" does not exist',
		);
		// In words, without the code: n8n replaces a message holding ECONNRESET with a generic one.
		expect(
			describeSqlFailure(
				Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
				'mysql',
				'SELECT 1',
			).message,
		).toBe('MySQL/MariaDB error in query "SELECT 1": connection reset by the server');
	});
});

describe('sql.query reading a zone again (rows whose runs n8n did not start)', () => {
	const t = '2026-12-01 09:00:00';
	/** Text keys under one cursor, ordered as a case-insensitive collation does ("a1" < "B"; JavaScript says "B" < "a1"). */
	function collatedTable(rows: Array<[key: string, updated_at: string]>) {
		const queries: unknown[][] = [];
		const order = (key: string) => key.toLowerCase();
		const session: SqlSession = {
			dialect: 'postgres',
			now: async () => ({
				utc: '2026-12-02 00:00:00+00',
				local: '2026-12-02 00:00:00',
				zone: 'UTC',
			}),
			async query(_sql, params) {
				queries.push(params);
				const [cursor, key, limit] = params as [string, string, number];
				const after = cursorUnits(cursor)!;
				return rows
					.map(([id, updated_at]) => ({ id, updated_at }))
					.filter((row) => {
						const units = cursorUnits(row.updated_at)!;
						return units > after || (units === after && order(row.id) > order(key));
					})
					.sort(
						(a, b) =>
							Number(cursorUnits(a.updated_at)! - cursorUnits(b.updated_at)!) ||
							(order(a.id) < order(b.id) ? -1 : 1),
					)
					.slice(0, limit);
			},
			close: async () => undefined,
		};
		return { session, queries };
	}
	const text = args({ from: ['1970-01-01 00:00:00', '0'], lagSeconds: 0, pageSize: 10 });
	// Read before: a (owed: its run n8n did not start), a1, then B, where the read had stopped.
	const zone = { to: [t, 'B'] as [string, string], owed: [JSON.stringify([t, 'a'])] };

	it('the zone ends at its last row: only the owed row of it is listed, then what comes after', async () => {
		const { session, queries } = collatedTable([
			['a', t],
			['a1', t],
			['B', t],
			['C', t],
		]);
		const read = await readPages(session, text, text.from, zone);
		expect(read.rows.map((row) => row.id)).toEqual(['a', 'C']);
		// a1's order against B is the collation's: one query of one row asks what comes after B.
		expect(queries).toEqual([
			['1970-01-01 00:00:00', '0', 10],
			[t, 'B', 1],
		]);
		expect(read.zone).toBeUndefined();
	});

	it('its last row changed since (or gone): the database says which row comes after it, so a new row under that cursor is listed and a row read before is not', async () => {
		const { session, queries } = collatedTable([
			['a', t],
			['a1', t],
			['C', t],
			['B', '2026-12-01 09:30:00'],
		]);
		const read = await readPages(session, text, text.from, zone);
		// Before, C was taken for a row of the zone read before (its key is not comparable here):
		// never started, never reported.
		expect(read.rows.map((row) => row.id)).toEqual(['a', 'C', 'B']);
		expect(queries).toEqual([
			['1970-01-01 00:00:00', '0', 10],
			[t, 'B', 1],
		]);
		expect(read.zone).toBeUndefined();
	});
});

describe('sql.query as an op', () => {
	const [op] = createSqlOps();

	it('starts from "from", returns the next position as memory, and starts there next time', async () => {
		const rows = [1, 2, 3].map((id) => ({
			id,
			updated_at: `2026-12-01 09:00:0${id}.000001`,
			committedAt: 0,
		}));
		const { session, state } = fakeDatabase(rows);
		let closed = 0;
		const sql = async () => ({ ...session, close: async () => void closed++ });
		const withArgs = {
			query: 'SELECT ...',
			cursor: 'updated_at',
			key: 'id',
			from: ['2026-12-01 09:00:01.000001', 1],
			lagSeconds: 0,
		};

		const first = await op.run(withArgs, { memory: {}, sql });
		expect(first.kind === 'data' && (first.data as { rows: unknown[] }).rows).toHaveLength(2);
		expect(state.queries[0].slice(0, 2)).toEqual(['2026-12-01 09:00:01.000001', 1]);
		const memory = first.kind === 'data' ? first.memory! : {};

		const second = await op.run(withArgs, { memory, sql });
		expect(second.kind === 'data' && (second.data as { rows: unknown[] }).rows).toHaveLength(0);
		expect(state.queries[1].slice(0, 2)).toEqual(['2026-12-01 09:00:03.000001', 3]);
		expect(closed).toBe(2);
	});

	it('closes the session when the query fails, and says which query', async () => {
		let closed = false;
		const sql = async (): Promise<SqlSession> => ({
			dialect: 'mysql',
			now: async () => ({
				utc: '2026-12-01 10:00:00.000000',
				local: '2026-12-01 10:00:00.000000',
				zone: 'UTC',
			}),
			query: async () => {
				throw Object.assign(new Error("Table 'shop.ordres' doesn't exist"), {
					code: 'ER_NO_SUCH_TABLE',
				});
			},
			close: async () => void (closed = true),
		});
		await expect(
			op.run(
				{ query: 'SELECT * FROM ordres', cursor: 'c', key: 'k', from: ['2026-01-01', 0] },
				{ memory: {}, sql },
			),
		).rejects.toThrow(
			`MySQL/MariaDB error (ER_NO_SUCH_TABLE) in query "SELECT * FROM ordres": Table 'shop.ordres' doesn't exist`,
		);
		expect(closed).toBe(true);
	});
});
