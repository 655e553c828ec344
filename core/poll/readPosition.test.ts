import { s3Ops } from '../connectors/s3';
import { cursorUnits, rewindSql, type SqlSession, sqlOps } from '../connectors/sql';
import type { HttpRequest, HttpResponse, OpContext } from '../connectors/types';
import { FakeClock } from '../../test/support/fakeClock';
import { recordingPorts } from '../../test/support/pollPorts';
import {
	PollActivation,
	type PollActivationSettings,
	type PollRunToEmit,
	type PollTriggerState,
} from './activation';
import type { FirstPollPolicy } from './dedupe';
import { PollExpressions } from './expressions';

/**
 * Issue 44, findings 3 and 5: the ops that read on from a position in their memory (sql.query's
 * keyset, s3.list's afterLastKey), driven through a live activation on a fake clock.
 */

const INTERVAL = 5_000;

/** Row `n`'s cursor: one second apart from 09:00:00. */
const stamp = (n: number) =>
	`2026-12-01 ${String(9 + Math.floor(n / 3600)).padStart(2, '0')}:${String(Math.floor(n / 60) % 60).padStart(2, '0')}:${String(n % 60).padStart(2, '0')}`;

/** A table answering `WHERE (updated_at, id) > ($1, $2) ORDER BY updated_at, id LIMIT $3`; its clock well past every row. */
function table() {
	const rows: Array<{ id: number; updated_at: string }> = [];
	const asked: Array<[string, number]> = [];
	const session: SqlSession = {
		dialect: 'postgres',
		now: async () => ({ utc: '2026-12-02 00:00:00+00', local: '2026-12-02 00:00:00', zone: 'UTC' }),
		async query(_sql, params) {
			const [cursor, key, limit] = params as [string, number, number];
			asked.push([cursor, key]);
			const after = cursorUnits(cursor)!;
			return rows
				.filter((row) => {
					const units = cursorUnits(row.updated_at)!;
					return units > after || (units === after && row.id > key);
				})
				.slice(0, limit)
				.map((row) => ({ ...row }));
		},
		close: async () => undefined,
	};
	const insert = (from: number, to: number) => {
		for (let id = from; id <= to; id++) rows.push({ id, updated_at: stamp(id) });
	};
	return { session, insert, asked };
}

function live(
	settings: Omit<
		PollActivationSettings,
		'clock' | 'expressions' | 'keyPrefix' | 'maxRunsInFlight'
	> & {
		expressions?: PollExpressions;
	},
	context: Omit<OpContext, 'memory'>,
) {
	const clock = new FakeClock();
	const emitted: PollRunToEmit[] = [];
	const activation = new PollActivation(
		{ v: 1 } as PollTriggerState,
		{
			expressions: new PollExpressions({ items: 'rows', id: 'id', version: 'updated_at' }),
			keyPrefix: 'poll:wf:node:',
			maxRunsInFlight: 10_000,
			clock,
			...settings,
		},
		{ intervalMs: INTERVAL },
	);
	const ports = { ...recordingPorts(emitted), context };
	return { activation, ports, clock, emitted };
}

const sqlWith = (extra: Record<string, unknown> = {}) => ({
	query:
		'SELECT id, updated_at FROM orders WHERE (updated_at, id) > ($1, $2) ORDER BY updated_at, id LIMIT $3',
	cursor: 'updated_at',
	key: 'id',
	from: ['1970-01-01 00:00:00', 0],
	lagSeconds: 0,
	pageSize: 100,
	...extra,
});

describe('sql.query with Remember at Most: a run n8n does not start (issue 44, finding 3)', () => {
	it('1,000 rows, Remember at Most 100, Changed: the run refused after the cap forgot the rows read after it reads again from just before its row, and only its row starts again', async () => {
		const { session, insert, asked } = table();
		const { activation, ports, clock, emitted } = live(
			{
				source: { op: sqlOps[0], args: sqlWith(), timeoutMs: 1_000 },
				dedupe: { kind: 'changed' },
				firstPoll: { mode: 'all' },
				maxRemembered: 100,
				oneRunPerItem: true,
			},
			{ sql: async () => session },
		);
		insert(1, 1000);
		await activation.start(ports, []);
		expect(emitted).toHaveLength(1000);
		// Every run started but row 500's, which n8n has not settled yet.
		for (const run of emitted.filter((run) => run.run.keys[0] !== 500))
			activation.settled(run.key!, run.run, { settlement: 'started', result: {} });
		// 100 more rows: the cap keeps the newest 100 keys, and forgets rows 1–1000.
		insert(1001, 1100);
		await clock.advance(INTERVAL);
		expect(emitted.slice(1000).map((run) => run.run.keys[0])).toEqual(
			Array.from({ length: 100 }, (_, i) => 1001 + i),
		);
		expect(activation.store.forgotten?.total).toBe(1000);
		// Now n8n says it could not create row 500's run.
		const refused = emitted.find((run) => run.run.keys[0] === 500)!;
		activation.settled(refused.key!, refused.run, { settlement: 'not_created' });
		const before = emitted.length;
		const firstQuery = asked.length;
		await clock.advance(INTERVAL);
		// The next poll asks from row 499, not from `from`, and starts row 500 alone.
		expect(asked[firstQuery]).toEqual([stamp(499), 499]);
		expect(emitted.slice(before).map((run) => run.run.keys)).toEqual([[500]]);
		// Past the rows read before, it reads on as before: a new row starts, nothing else.
		insert(1101, 1101);
		const again = emitted.length;
		await clock.advance(INTERVAL);
		expect(emitted.slice(again).map((run) => run.run.keys)).toEqual([[1101]]);
		activation.stop();
	});

	it('a crash with runs of a burst held: the restart reads from just before the earliest held row, and starts the held rows alone', async () => {
		const { session, insert, asked } = table();
		const settings = {
			source: { op: sqlOps[0], args: sqlWith(), timeoutMs: 1_000 },
			dedupe: { kind: 'changed' as const },
			firstPoll: { mode: 'all' as const },
			maxRemembered: 100,
			oneRunPerItem: true,
			maxRunsInFlight: 50,
		};
		const clock = new FakeClock();
		const emitted: PollRunToEmit[] = [];
		const writes: PollTriggerState[] = [];
		const first = new PollActivation(
			{ v: 1 },
			{
				...settings,
				expressions: new PollExpressions({ items: 'rows', id: 'id', version: 'updated_at' }),
				keyPrefix: 'poll:wf:node:',
				clock,
			},
			{ intervalMs: INTERVAL },
		);
		insert(1, 300);
		await first.start(
			{
				...recordingPorts(emitted, (state) => writes.push(structuredClone(state))),
				context: { sql: async () => session },
			},
			[],
		);
		// 50 in flight, 250 held; the first 50 start, which lets the next 50 out.
		for (const run of emitted.slice(0, 50))
			first.settled(run.key!, run.run, { settlement: 'started', result: {} });
		first.write();
		expect(emitted).toHaveLength(100);
		first.stop();
		// The kill: runs 51–100 were emitted (n8n may have created them), 101–300 held.
		const emittedBefore = new Set(emitted.map((run) => run.run.keys[0]));
		const after: PollRunToEmit[] = [];
		const second = new PollActivation(
			structuredClone(writes.at(-1)!),
			{
				...settings,
				expressions: new PollExpressions({ items: 'rows', id: 'id', version: 'updated_at' }),
				keyPrefix: 'poll:wf:node:',
				clock,
			},
			{ intervalMs: INTERVAL },
		);
		const firstQuery = asked.length;
		await second.start({ ...recordingPorts(after), context: { sql: async () => session } }, []);
		await clock.advance(INTERVAL);
		// From just before row 51 (the earliest run whose start is not known), not from `from`.
		expect(asked[firstQuery]).toEqual([stamp(50), 50]);
		const keys = after.map((run) => run.run.keys[0] as number);
		// Rows 51–100 go out again under their keys (n8n refuses those it created), 101–300 start.
		expect(keys.filter((id) => emittedBefore.has(id))).toEqual(
			Array.from({ length: 50 }, (_, i) => 51 + i),
		);
		expect(keys.every((id) => id > 50)).toBe(true);
		second.stop();
	});
});

describe('sql.query read positions (rewindSql)', () => {
	const at = (
		call: string,
		index: number,
		from: [string, string],
		row: [string, string],
		below: [string, string] | null,
	) => JSON.stringify([call, index, from, row, below]);
	const memory = (position: unknown) => ({ sqlPosition: JSON.stringify(position) });

	it('rows of one cursor value with text keys: within one call by the order read; across calls from a position with a lower cursor; the zone names only the owed rows', () => {
		const t = '2026-12-01 09:00:00';
		const lower: [string, string] = ['2026-12-01 08:00:00', 'z'];
		const rewound = rewindSql({ ...memory([t, 'k9']), sqlRead: JSON.stringify(['c1', 9]) }, [
			at('c1', 7, [t, 'k6'], [t, 'k7'], lower),
			at('c1', 3, [t, 'k2'], [t, 'k3'], lower),
		]);
		expect(JSON.parse(rewound!.sqlPosition)).toEqual([t, 'k2']);
		expect(JSON.parse(rewound!.sqlZone)).toEqual({
			to: [t, 'k9'],
			owed: [JSON.stringify([t, 'k7']), JSON.stringify([t, 'k3'])],
		});
		const acrossCalls = rewindSql(memory([t, 'k9']), [
			at('c1', 7, [t, 'k6'], [t, 'k7'], lower),
			at('c2', 1, [t, 'B'], [t, 'C'], null),
		]);
		expect(JSON.parse(acrossCalls!.sqlPosition)).toEqual(lower);
		// Nothing with a lower cursor to go back to: read from `from`, still listing only the owed row.
		const fromStart = rewindSql(memory([t, 'k9']), [at('c2', 1, [t, 'B'], [t, 'C'], null)]);
		expect(fromStart!.sqlPosition).toBeUndefined();
		expect(JSON.parse(fromStart!.sqlZone)).toEqual({
			to: [t, 'k9'],
			owed: [JSON.stringify([t, 'C'])],
		});
		// A second rewind keeps that zone and adds to it.
		const again = rewindSql(fromStart, [at('c3', 0, [t, 'k9'], [t, 'k10'], null)]);
		expect(again!.sqlPosition).toBeUndefined();
		expect(JSON.parse(again!.sqlZone).owed).toEqual([
			JSON.stringify([t, 'C']),
			JSON.stringify([t, 'k10']),
		]);
		// Owed rows after where the next call starts: it lists them anyway, the memory is kept.
		const kept = memory(['2026-12-01 07:00:00', 1]);
		expect(rewindSql(kept, [at('c1', 0, [t, 'a'], [t, 'b'], null)])).toBe(kept);
	});
});

/** A bucket answering ListObjectsV2 (start-after, continuation tokens, max-keys) with `keys`, all written a week ago. */
function bucket(keys: string[]) {
	const listed: string[] = [];
	const http = async (request: HttpRequest): Promise<HttpResponse> => {
		const query = Object.fromEntries(new URL(request.url).searchParams);
		const max = Number(query['max-keys'] ?? 1000);
		const from = query['continuation-token'] ?? query['start-after'] ?? '';
		const sorted = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
		const page = sorted.filter((key) => key > from).slice(0, max);
		listed.push(from);
		const more = sorted.filter((key) => key > from).length > max;
		const body = `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>${page
			.map(
				(key) =>
					`<Contents><Key>${key}</Key><LastModified>2026-11-24T00:00:00.000Z</LastModified><ETag>"e"</ETag><Size>1</Size></Contents>`,
			)
			.join(
				'',
			)}<IsTruncated>${more}</IsTruncated>${more ? `<NextContinuationToken>${page.at(-1)}</NextContinuationToken>` : ''}</ListBucketResult>`;
		return {
			url: request.url,
			status: 200,
			headers: { date: 'Tue, 01 Dec 2026 00:00:00 GMT' },
			body,
		};
	};
	return { http, listed };
}

const s3 = {
	endpoint: 'http://127.0.0.1:9000',
	region: 'us-east-1',
	accessKeyId: 'a',
	secretAccessKey: 's',
	pathStyle: true,
};

describe('a first poll over a listing cut at its bound (issue 44, finding 5)', () => {
	const objects = Array.from({ length: 5000 }, (_, i) => `in/${String(i).padStart(5, '0')}.csv`);

	async function firstPollOver(firstPoll: FirstPollPolicy) {
		const keys = [...objects];
		const { http, listed } = bucket(keys);
		const { activation, ports, clock, emitted } = live(
			{
				source: {
					op: s3Ops.find((op) => op.name === 's3.list')!,
					args: { bucket: 'b', prefix: 'in/', afterLastKey: true, maxObjects: 1000 },
					timeoutMs: 1_000,
				},
				dedupe: { kind: 'unique' },
				firstPoll,
				maxRemembered: 0,
				oneRunPerItem: true,
				expressions: new PollExpressions({ items: 'files', id: 'path' }),
			},
			{ http, s3 },
		);
		await activation.start(ports, []);
		return { activation, clock, emitted, listed, keys };
	}

	it('s3.list afterLastKey, 5,000 old objects, maxObjects 1,000, First Poll Starts nothing: nothing old starts at any poll, the next new object does', async () => {
		const { activation, clock, emitted, listed, keys } = await firstPollOver({ mode: 'none' });
		// The first poll listed on to the end: five calls of 1,000.
		expect(listed).toHaveLength(5);
		expect(emitted).toEqual([]);
		await clock.advance(INTERVAL);
		await clock.advance(INTERVAL);
		expect(emitted).toEqual([]);
		keys.push('in/99999.csv');
		await clock.advance(INTERVAL);
		expect(emitted.map((run) => run.run.keys)).toEqual([['in/99999.csv']]);
		activation.stop();
	});

	it('sql.query, 2,500 old rows, maxRows 1,000, First Poll Starts nothing: nothing old starts, the next new row does', async () => {
		const { session, insert } = table();
		const { activation, ports, clock, emitted } = live(
			{
				source: { op: sqlOps[0], args: sqlWith({ maxRows: 1000 }), timeoutMs: 1_000 },
				dedupe: { kind: 'unique' },
				firstPoll: { mode: 'none' },
				maxRemembered: 0,
				oneRunPerItem: true,
			},
			{ sql: async () => session },
		);
		insert(1, 2500);
		await activation.start(ports, []);
		await clock.advance(INTERVAL);
		expect(emitted).toEqual([]);
		insert(2501, 2501);
		await clock.advance(INTERVAL);
		expect(emitted.map((run) => run.run.keys)).toEqual([[2501]]);
		activation.stop();
	});

	it('First Poll Starts the newest 3: the newest 3 of the whole listing start, nothing else', async () => {
		const { activation, clock, emitted } = await firstPollOver({ mode: 'newest', count: 3 });
		await clock.advance(INTERVAL);
		expect(emitted.map((run) => run.run.keys[0])).toEqual(objects.slice(-3));
		activation.stop();
	});
});
