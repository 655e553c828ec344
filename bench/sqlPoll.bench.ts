/**
 * sql.query on a big table, beside the n8n-only way, in one run: PostgreSQL 15 from Debian's packages
 * (started by the test harness, test/harness/sqlServers.ts), a table `orders` of 1,000,000 rows
 * (BENCH_SQL_ROWS) and then 1,000 new ones.
 *
 * 1. One poll of sql.query, from the position a previous poll left (the last of the old rows),
 *    reading the 1,000 new ones in pages of 500, without and then with an index on (updated_at, id).
 *    For each: the database's time for the poll's statements (planning + execution, as EXPLAIN
 *    ANALYZE reports them on the server), the rows its scans read (returned + removed by filter),
 *    the 8 KB pages it touched, and the poll's time at the client (connect, clock, pages, close;
 *    measured separately, without EXPLAIN). Median of BENCH_SQL_REPEATS (5) polls after one warm-up.
 * 2. The n8n-only way's query, `SELECT * FROM orders` (what Schedule Trigger → Postgres node
 *    "Execute Query" → Remove Duplicates reads every run), measured the same way; its client time
 *    includes fetching every row, as the Postgres node does.
 * 3. With BENCH_SQL_N8N=1, that workflow itself in a real n8n 2.41.1 (SQLite, n8n's default
 *    settings and log level, n8n's own nodes): Remove Duplicates "Remove Items Processed in Previous
 *    Executions" on the id. Its default History Size (10,000) cannot hold the table: the node
 *    refuses a run whose remembered + input items exceed it (RemoveDuplicatesV2.node.js), so the
 *    workflow has one large enough (2,100,000). A first run over the old rows remembers them; after
 *    the 1,000 new rows are added a second run is measured: its duration (startedAt → stoppedAt),
 *    n8n's peak RSS, and what Remove Duplicates kept, read from n8n's own store (processed_data: the
 *    remembered hashes added). Each run is started by the Schedule Trigger (every 10 s) and the
 *    workflow is unpublished as soon as that run exists, so exactly one runs. Off by default: on the
 *    2-core machine the first run had not finished after 27 minutes (docs/sql-source.md).
 *
 * Figures and ratios against the n8n-only way measured in the same run; no thresholds.
 *   npx tsx bench/sqlPoll.bench.ts
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

import { resolveOp } from '../core/connectors/registry';
import type { SqlSessionFactory } from '../core/connectors/sql';
import { sqlSessionFactory } from '../nodes/shared/sqlSession';
import { node, workflow } from '../test/e2e/workflowBuilder';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance } from '../test/harness/n8nInstance';
import { n8nVersion } from '../test/harness/paths';
import { type Exec, SqlServers } from '../test/harness/sqlServers';
import {
	printTable,
	runDurationMs,
	runScheduledOnce,
	scheduleTriggerNode,
	type ScheduledRun,
} from './n8nOnly';
import { percentile } from './stats';

const ROWS = Number(process.env.BENCH_SQL_ROWS ?? 1_000_000);
const NEW_ROWS = 1_000;
const REPEATS = Number(process.env.BENCH_SQL_REPEATS ?? 5);
const WITH_N8N = process.env.BENCH_SQL_N8N === '1';
const DATABASE = 'bench';
/** Enough for the old rows and one more run of all of them (Remove Duplicates checks stored + input). */
const HISTORY_SIZE = 2_100_000;
/** One n8n run over every row: generous on a busy 2-core machine. */
const RUN_TIMEOUT_MS = 30 * 60_000;

const POLL_QUERY =
	'SELECT * FROM orders WHERE (updated_at, id) > ($1, $2) ORDER BY updated_at, id LIMIT $3';
const SELECT_ALL = 'SELECT * FROM orders';

interface DatabaseCost {
	statements: number;
	/** Planning + execution time on the server, summed over the statements. */
	serverMs: number;
	rowsRead: number;
	pages: number;
	rowsReturned: number;
}

interface Measured extends DatabaseCost {
	clientMs: number;
}

type Plan = Record<string, unknown> & { Plans?: Plan[] };

/**
 * Rows the plan's scans read from the table: what each returned plus what its filters removed, over
 * all loops. A bitmap index scan only collects row addresses for the heap scan above it.
 */
function rowsRead(plan: Plan): number {
	const type = String(plan['Node Type']);
	const own =
		/Scan$/.test(type) && type !== 'Bitmap Index Scan'
			? (Number(plan['Actual Rows'] ?? 0) +
					Number(plan['Rows Removed by Filter'] ?? 0) +
					Number(plan['Rows Removed by Index Recheck'] ?? 0)) *
				Number(plan['Actual Loops'] ?? 1)
			: 0;
	return own + (plan.Plans ?? []).reduce((sum, child) => sum + rowsRead(child), 0);
}

/** The database's cost of `sql` with `params`, as EXPLAIN (ANALYZE, BUFFERS) reports it. */
async function explain(
	query: (sql: string, params: unknown[]) => Promise<Array<Record<string, unknown>>>,
	sql: string,
	params: unknown[],
): Promise<DatabaseCost> {
	const [row] = await query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, params);
	const [result] = row['QUERY PLAN'] as Array<Record<string, unknown> & { Plan: Plan }>;
	return {
		statements: 1,
		serverMs: Number(result['Planning Time']) + Number(result['Execution Time']),
		rowsRead: Math.round(rowsRead(result.Plan)),
		pages:
			Number(result.Plan['Shared Hit Blocks'] ?? 0) +
			Number(result.Plan['Shared Read Blocks'] ?? 0),
		rowsReturned: Number(result.Plan['Actual Rows'] ?? 0),
	};
}

const add = (a: DatabaseCost, b: DatabaseCost): DatabaseCost => ({
	statements: a.statements + b.statements,
	serverMs: a.serverMs + b.serverMs,
	rowsRead: a.rowsRead + b.rowsRead,
	pages: a.pages + b.pages,
	rowsReturned: a.rowsReturned + b.rowsReturned,
});
const NONE: DatabaseCost = { statements: 0, serverMs: 0, rowsRead: 0, pages: 0, rowsReturned: 0 };

/** Median of each figure over `repeats` measurements, after one warm-up. */
async function median(repeats: number, measure: () => Promise<Measured>): Promise<Measured> {
	await measure();
	const all: Measured[] = [];
	for (let i = 0; i < repeats; i++) all.push(await measure());
	const mid = (pick: (m: Measured) => number) => percentile(all.map(pick), 50);
	return {
		statements: mid((m) => m.statements),
		serverMs: mid((m) => m.serverMs),
		rowsRead: mid((m) => m.rowsRead),
		pages: mid((m) => m.pages),
		rowsReturned: mid((m) => m.rowsReturned),
		clientMs: mid((m) => m.clientMs),
	};
}

async function main(): Promise<void> {
	const servers = await SqlServers.start({ mariadb: false });
	let n8n: N8nInstance | undefined;
	try {
		await servers.postgresExec('postgres')(`CREATE DATABASE ${DATABASE}`);
		const exec = servers.postgresExec(DATABASE);
		const credential = servers.postgresCredential(DATABASE);
		const started = Date.now();
		await createOrders(exec);
		process.stdout.write(
			`orders: ${ROWS.toLocaleString('en')} rows in ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
		);

		let n8nOnly: Awaited<ReturnType<typeof runN8nOnly>> | undefined;
		if (WITH_N8N) {
			ensureN8nInstalled();
			packAndPrepareNodesFolder();
			// n8n's default log level (the harness logs debug: a line per expression, 1,000,000 a run).
			n8n = await N8nInstance.launch('bench-sql', { N8N_LOG_LEVEL: 'info' });
			n8nOnly = await runN8nOnly(n8n, servers, exec);
		} else await addNewRows(exec);

		// Where the previous poll left off: the last of the old rows (older than any lag).
		const [last] = await exec(
			`SELECT updated_at::text AS cursor, id FROM orders WHERE id <= ${ROWS} ORDER BY updated_at DESC, id DESC LIMIT 1`,
		);
		const memory = { sqlPosition: JSON.stringify([last.cursor, last.id]) };
		const args = {
			query: POLL_QUERY,
			params: ['cursor', 'key', 'limit'],
			cursor: 'updated_at',
			key: 'id',
			from: ['1970-01-01 00:00:00', 0],
			pageSize: 500,
			lagSeconds: 60,
		};
		const sessions = sqlSessionFactory('postgres', credential);
		const poll = async (sql: SqlSessionFactory) => {
			const result = await resolveOp('sql.query').run(args, {
				memory: { ...memory },
				sql,
				timeoutMs: 600_000,
			});
			if (result.kind !== 'data') throw new Error(`sql.query answered ${result.kind}`);
			return (result.data as { rows: unknown[] }).rows.length;
		};
		const measurePoll = async (): Promise<Measured> => {
			// The database's cost: each of the poll's statements explained in its own session.
			let cost = NONE;
			const explaining: SqlSessionFactory = async (options) => {
				const session = await sessions(options);
				return {
					...session,
					async query(sql, params) {
						cost = add(cost, await explain(session.query, sql, params));
						return await session.query(sql, params);
					},
				};
			};
			const read = await poll(explaining);
			if (read !== NEW_ROWS) throw new Error(`the poll read ${read} rows, not ${NEW_ROWS}`);
			const from = performance.now();
			await poll(sessions);
			return { ...cost, clientMs: performance.now() - from };
		};
		const withoutIndex = await median(REPEATS, measurePoll);
		await exec('CREATE INDEX orders_cursor ON orders (updated_at, id)');
		await exec('ANALYZE orders');
		const withIndex = await median(REPEATS, measurePoll);
		const selectAll = await median(Math.min(REPEATS, 3), async () => {
			const cost = await explain(exec, SELECT_ALL, []);
			const from = performance.now();
			const rows = await exec(SELECT_ALL);
			return { ...cost, clientMs: performance.now() - from, rowsReturned: rows.length };
		});

		const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(1)}x` : '-');
		const line = (label: string, m: Measured) => [
			label,
			String(m.statements),
			`${m.serverMs.toFixed(1)} ms`,
			m.rowsRead.toLocaleString('en'),
			m.pages.toLocaleString('en'),
			m.rowsReturned.toLocaleString('en'),
			`${m.clientMs.toFixed(0)} ms`,
			ratio(selectAll.serverMs, m.serverMs),
			ratio(selectAll.rowsRead, m.rowsRead),
		];
		printTable([
			[
				`one poll, ${ROWS.toLocaleString('en')} rows + ${NEW_ROWS.toLocaleString('en')} new`,
				'statements',
				'database time',
				'rows read',
				'pages (8 KB)',
				'rows returned',
				'client time',
				'n8n-only / this (time)',
				'(rows read)',
			],
			line('sql.query, no index on (updated_at, id)', withoutIndex),
			line('sql.query, index on (updated_at, id)', withIndex),
			line('n8n-only: SELECT * FROM orders', selectAll),
		]);
		if (n8nOnly) {
			process.stdout.write(
				`\nThe n8n-only workflow in n8n ${n8nVersion} (Schedule Trigger → Postgres "Execute Query" SELECT * → Remove Duplicates on id):\n` +
					`  History Size ${HISTORY_SIZE.toLocaleString('en')}, first run over the ${ROWS.toLocaleString('en')} old rows: ${n8nOnly.seed}\n` +
					`  then ${NEW_ROWS.toLocaleString('en')} new rows, the measured run: ${n8nOnly.measured}\n` +
					`  its run / one sql.query poll with the index (client time): ${n8nOnly.durationMs ? ratio(n8nOnly.durationMs, withIndex.clientMs) : '-'}\n`,
			);
		}
	} finally {
		await n8n?.stop();
		await servers.stop();
	}
}

/** `orders` with ROWS old rows, one a second up to a day ago, ~100 bytes each. */
async function createOrders(exec: Exec): Promise<void> {
	await exec(
		'CREATE TABLE orders (id bigint PRIMARY KEY, updated_at timestamptz(6) NOT NULL, customer text NOT NULL, amount numeric(10,2) NOT NULL, status text NOT NULL, note text NOT NULL)',
	);
	await exec(
		`INSERT INTO orders
		 SELECT n, now() - interval '1 day' - (${ROWS} - n) * interval '1 second' + (n % 997) * interval '1 microsecond',
		        'customer ' || (n % 5000), (n % 100000) / 100.0, (ARRAY['new','paid','shipped'])[1 + n % 3],
		        'order ' || n || ' ' || md5(n::text)
		 FROM generate_series(1, ${ROWS}) AS n`,
	);
	await exec('VACUUM ANALYZE orders');
}

/** NEW_ROWS rows stamped now, as an application adds them. */
async function addNewRows(exec: Exec): Promise<void> {
	await exec(
		`INSERT INTO orders
		 SELECT n, clock_timestamp(), 'customer ' || (n % 5000), 1.00, 'new', 'order ' || n || ' ' || md5(n::text)
		 FROM generate_series(${ROWS + 1}, ${ROWS + NEW_ROWS}) AS n`,
	);
	await exec('ANALYZE orders');
}

/** The n8n-only workflow in a real n8n: a first run remembering the old rows, then, after the new rows, the measured run. */
async function runN8nOnly(n8n: N8nInstance, servers: SqlServers, exec: Exec) {
	const credentialName = 'bench postgres';
	const credentialId = await n8n.createCredential(
		credentialName,
		'postgres',
		servers.postgresCredential(DATABASE),
	);
	const id = await n8n.importWorkflow(
		workflow(
			'n8n-only',
			[
				scheduleTriggerNode(),
				node(
					'Postgres',
					'n8n-nodes-base.postgres',
					{ operation: 'executeQuery', query: SELECT_ALL, options: {} },
					{
						typeVersion: 2.6,
						credentials: { postgres: { id: credentialId, name: credentialName } },
					},
				),
				node(
					'Remove Duplicates',
					'n8n-nodes-base.removeDuplicates',
					{
						operation: 'removeItemsSeenInPreviousExecutions',
						dedupeValue: '={{ $json.id }}',
						options: { historySize: HISTORY_SIZE },
					},
					{ typeVersion: 2 },
				),
			],
			[
				['Schedule Trigger', 'Postgres'],
				['Postgres', 'Remove Duplicates'],
			],
		),
	);
	const database = join(n8n.userFolder, '.n8n', 'database.sqlite');
	/** Remove Duplicates' remembered hashes for the workflow (n8n's processed_data), and their bytes. */
	const remembered = (workflowId: string) => {
		const db = new DatabaseSync(database, { readOnly: true });
		try {
			const row = db
				.prepare(
					`SELECT json_array_length(value, '$.data') AS entries, length(value) AS bytes FROM processed_data WHERE workflowId = ?`,
				)
				.get(workflowId) as { entries: number; bytes: number } | undefined;
			return row ?? { entries: 0, bytes: 0 };
		} finally {
			db.close();
		}
	};
	const runOnce = (workflowId: string) => runScheduledOnce(n8n, workflowId, RUN_TIMEOUT_MS);
	const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
	const describe = (run: ScheduledRun, extra: string) =>
		`${run.execution.status} in ${(runDurationMs(run.execution) / 1000).toFixed(1)} s, n8n peak RSS ${mb(run.peakRssBytes)}${extra}`;

	const seedRun = await runOnce(id);
	const afterSeed = remembered(id);
	const seed = describe(
		seedRun,
		`, ${afterSeed.entries.toLocaleString('en')} ids remembered (${mb(afterSeed.bytes)} in one processed_data row)`,
	);
	await addNewRows(exec);
	const run = await runOnce(id);
	const afterRun = remembered(id);
	const measured = describe(
		run,
		`, kept ${(afterRun.entries - afterSeed.entries).toLocaleString('en')} (new ids remembered), ${mb(afterRun.bytes)} remembered`,
	);
	return { seed, measured, durationMs: runDurationMs(run.execution) };
}

void main().catch((error: unknown) => {
	process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
	process.exitCode = 1;
});
