import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import { describeCause, type SqlSession } from '../../core/connectors/sql';
import { ConnectorError } from '../../core/connectors/types';
import type { HistoryCheckpoint, HistoryTable, SavedHistory } from '../../core/poll/historyStore';
import { sqlSessionFactory } from './sqlSession';
import { credentialTestFailure } from './editorWords';

/**
 * The Poll Trigger's history table in the user's PostgreSQL (core/poll/historyStore.ts, issue 28),
 * reached through the Poll History (PostgreSQL) credential, whose fields are n8n's own Postgres
 * credential's (credentials/PollHistoryPostgres.credentials.ts), with the SQL ops' sessions
 * (sqlSession.ts: SSL as n8n's Postgres node reads it, statement timeouts, connect errors in words).
 *
 * One table for every store: a row per chunk of packed records (base64, as static data's `entries`),
 * keyed by (store, chunk), and at chunk -1 the store's meta row, JSON `{"seq":n,"state":{…}}` (the
 * store's other saved fields at the checkpoint).
 * A store's rows are always chunks 0..count-1 and the meta row: a save writes them in one
 * transaction and checks that before it commits, and a load refuses anything else, since only a
 * change made outside the trigger can leave it so.
 */

/** The table's fixed name (in the credential's database, on its search path: normally `public`). */
export const HISTORY_TABLE = 'n8n_durable_triggers_history';

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS ${HISTORY_TABLE} (store text NOT NULL, chunk integer NOT NULL, data text NOT NULL, PRIMARY KEY (store, chunk))`;

/** The chunk number of a store's meta row. */
const META_CHUNK = -1;

/** Per statement (the server cancels one running longer) and for connecting. */
const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * Chunks written per INSERT: a chunk is up to ~66 KB of base64 (records.ts), so a statement carries
 * about 1 MB, and a full save of a million keys (~245 chunks) takes about 16 statements.
 */
const CHUNKS_PER_INSERT = 16;

type Operation = 'load' | 'save';

/**
 * The history table of the Postgres `credential`. Nothing is held between calls: each opens one
 * session and closes it. The table is created by the first call that succeeds in doing so (per
 * table object, so per activation). Throws a ConfigError at once for a credential that cannot
 * work (no host, a bad port, SSH tunnel on).
 */
export function postgresHistoryTable(
	credential: ICredentialDataDecryptedObject,
	options: { timeoutMs?: number } = {},
): HistoryTable {
	const open = sqlSessionFactory('postgres', credential);
	const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
	let created = false;

	async function withSession<T>(
		operation: Operation,
		work: (session: SqlSession) => Promise<T>,
	): Promise<T> {
		let session: SqlSession;
		try {
			session = await open({ timeoutMs });
		} catch (error) {
			throw failure(operation, error);
		}
		try {
			if (!created) {
				await createTable(session);
				created = true;
			}
			return await work(session);
		} catch (error) {
			throw failure(operation, error);
		} finally {
			await session.close();
		}
	}

	return {
		async load(store) {
			return await withSession('load', async (session) =>
				readHistory(
					store,
					await session.query(
						`SELECT chunk, data FROM ${HISTORY_TABLE} WHERE store = $1 ORDER BY chunk`,
						[store],
					),
				),
			);
		},

		async save(store, checkpoint) {
			checkCheckpoint(store, checkpoint);
			await withSession('save', async (session) => {
				await session.query('BEGIN', []);
				let committed = false;
				try {
					await writeCheckpoint(session, store, checkpoint);
					await session.query('COMMIT', []);
					committed = true;
				} finally {
					// The connection may be gone (then the server has rolled back already).
					if (!committed) await session.query('ROLLBACK', []).catch(() => undefined);
				}
			});
		},
	};
}

/**
 * Creates the table unless it exists. Looked up first: CREATE TABLE IF NOT EXISTS needs the CREATE
 * privilege on the schema even when the table is there, which a user given only the rights on a
 * table its DBA made does not have. A session creating it at the same time makes ours fail (23505 on
 * pg_type's index, 42P07 or 42710, depending on the moment): no failure if the table is there after.
 */
async function createTable(session: SqlSession): Promise<'exists' | 'created'> {
	const present = async () =>
		(await session.query('SELECT to_regclass($1) IS NOT NULL AS present', [HISTORY_TABLE]))[0]
			.present === true;
	if (await present()) return 'exists';
	const error = await session.query(CREATE_TABLE, []).then(
		() => undefined,
		(failed: unknown) => failed ?? new Error('CREATE TABLE failed'),
	);
	if (error === undefined) return 'created';
	if (await present()) return 'exists';
	throw error;
}

/** What the trigger does with the table's rows. */
const PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];

/** A store's rows, ordered by chunk, as a checkpoint: the meta row and chunks 0..n-1, or a TableChanged. */
function readHistory(
	store: string,
	rows: Array<Record<string, unknown>>,
): SavedHistory | undefined {
	if (rows.length === 0) return undefined;
	const [meta, ...chunkRows] = rows;
	if (Number(meta.chunk) !== META_CHUNK)
		throw new TableChanged(store, `its meta row (chunk ${META_CHUNK}) is missing`);
	const { seq, state } = parseMeta(store, meta.data);
	const chunks: string[] = [];
	for (const [index, row] of chunkRows.entries()) {
		const chunk = Number(row.chunk);
		if (chunk < 0)
			throw new TableChanged(store, `it has a row with chunk ${chunk}; chunks are numbered from 0`);
		if (chunk !== index)
			throw new TableChanged(
				store,
				`chunk ${index} is missing (the chunks found are ${describeNumbers(chunkRows.map((r) => Number(r.chunk)))}; they must be 0 to ${chunkRows.length - 1} without gaps)`,
			);
		chunks.push(String(row.data));
	}
	return { seq, state, chunks };
}

function parseMeta(store: string, data: unknown): { seq: number; state: Record<string, unknown> } {
	let meta: unknown;
	try {
		meta = JSON.parse(String(data));
	} catch {
		meta = undefined;
	}
	const { seq, state } = (typeof meta === 'object' && meta !== null ? meta : {}) as Record<
		string,
		unknown
	>;
	if (!isCount(seq) || !isObject(state))
		throw new TableChanged(
			store,
			`its meta row (chunk ${META_CHUNK}) holds ${JSON.stringify(String(data).slice(0, 100))}, not {"seq":n,"state":{…}} with a whole number n`,
		);
	return { seq, state };
}

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** `0-3, 5, 7-9` */
function describeNumbers(numbers: number[]): string {
	const runs: string[] = [];
	for (let i = 0; i < numbers.length; ) {
		let j = i;
		while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j++;
		runs.push(j === i ? `${numbers[i]}` : `${numbers[i]}-${numbers[j]}`);
		i = j + 1;
	}
	return runs.join(', ');
}

/** The trigger's own mistake, refused before anything is written. */
function checkCheckpoint(store: string, { seq, state, count, changed }: HistoryCheckpoint) {
	const wrong = !isCount(seq)
		? `seq ${seq}`
		: !isObject(state)
			? `state ${JSON.stringify(state)}`
			: !isCount(count)
				? `count ${count}`
				: changed.find(([index]) => !Number.isSafeInteger(index) || index < 0 || index >= count);
	if (wrong !== undefined)
		throw failure(
			'save',
			new Error(
				`the checkpoint of store ${JSON.stringify(store)} is invalid (${
					Array.isArray(wrong) ? `chunk ${wrong[0]} of ${count}` : wrong
				}); nothing was written`,
			),
		);
}

/** The statements of a save, inside its transaction. */
async function writeCheckpoint(
	session: SqlSession,
	store: string,
	{ seq, state, count, changed }: HistoryCheckpoint,
): Promise<void> {
	// Saves of one store take turns (two n8n mains overlapping while the leader changes): without
	// this, two writing the same chunks in different orders deadlock (40P01, seen in the test) and
	// one's count check can miss the other's uncommitted delete. Held until COMMIT or ROLLBACK.
	await session.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [
		HISTORY_TABLE,
		store,
	]);
	for (let start = 0; start < changed.length; start += CHUNKS_PER_INSERT) {
		const batch = changed.slice(start, start + CHUNKS_PER_INSERT);
		await session.query(
			`INSERT INTO ${HISTORY_TABLE} (store, chunk, data) SELECT $1, chunk, data FROM unnest($2::integer[], $3::text[]) AS c (chunk, data) ON CONFLICT (store, chunk) DO UPDATE SET data = EXCLUDED.data`,
			[store, batch.map(([index]) => index), batch.map(([, chunk]) => chunk)],
		);
	}
	await session.query(`DELETE FROM ${HISTORY_TABLE} WHERE store = $1 AND chunk >= $2`, [
		store,
		count,
	]);
	await session.query(
		`INSERT INTO ${HISTORY_TABLE} (store, chunk, data) VALUES ($1, $2, $3) ON CONFLICT (store, chunk) DO UPDATE SET data = EXCLUDED.data`,
		[store, META_CHUNK, JSON.stringify({ seq, state })],
	);
	// The chunks the checkpoint did not write must be there from earlier ones: a table emptied
	// outside the trigger would otherwise get a checkpoint with gaps, which no load would accept.
	const [{ chunks }] = await session.query(
		`SELECT count(*)::integer AS chunks FROM ${HISTORY_TABLE} WHERE store = $1 AND chunk >= 0`,
		[store],
	);
	if (Number(chunks) !== count)
		throw new TableChanged(
			store,
			`after this save it would hold ${Number(chunks)} of the ${count} chunks, as the ones this save did not change are not there`,
		);
}

/** The rows of a store are not what the trigger writes: someone changed the table. */
class TableChanged extends Error {
	constructor(store: string, problem: string) {
		super(
			`the rows of store ${JSON.stringify(store)} were changed outside the Poll Trigger: ${problem}`,
		);
	}
}

/** One message naming the database, the table and the operation, with the database's code and words. */
function failure(operation: Operation, error: unknown): ConnectorError {
	const what =
		operation === 'save'
			? `save the Poll Trigger's history to`
			: `load the Poll Trigger's history from`;
	const { code, text } = describeCause(error);
	return new ConnectorError(`Could not ${what} PostgreSQL table ${HISTORY_TABLE}${code}: ${text}`);
}

/** Long enough for a slow TLS handshake, short enough that the credential dialog does not seem stuck. */
const TEST_TIMEOUT_MS = 15_000;

/**
 * The Poll History (PostgreSQL) credential's test, for a node's `methods.credentialTest` (the
 * credential names it with `testedBy`): connects, runs `SELECT 1`, creates the history table unless
 * it exists, and checks the user may SELECT, INSERT, UPDATE and DELETE its rows, so that a missing
 * privilege shows here rather than at the first checkpoint.
 */
export async function pollHistoryPostgresTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	let session: SqlSession | undefined;
	let step = 'run SELECT 1';
	try {
		session = await sqlSessionFactory(
			'postgres',
			credential.data ?? {},
		)({
			timeoutMs: TEST_TIMEOUT_MS,
		});
		await session.query('SELECT 1', []);
		step = `create table ${HISTORY_TABLE}`;
		const table = await createTable(session);
		step = `check the privileges on table ${HISTORY_TABLE}`;
		// One privilege per call: has_table_privilege is true when any of a list is held.
		const missing: string[] = [];
		for (const privilege of PRIVILEGES) {
			const [{ held }] = await session.query('SELECT has_table_privilege($1, $2) AS held', [
				HISTORY_TABLE,
				privilege,
			]);
			if (held !== true) missing.push(privilege);
		}
		if (missing.length > 0)
			return {
				status: 'Error',
				message: `Connected, but the user may not ${missing.join(', ')} on table ${HISTORY_TABLE}; the Poll Trigger needs ${PRIVILEGES.join(', ')}`,
			};
		return {
			status: 'OK',
			message:
				table === 'created'
					? `Connected; created table ${HISTORY_TABLE}`
					: `Connected; table ${HISTORY_TABLE} is there, with the privileges the Poll Trigger needs`,
		};
	} catch (error) {
		// Not connected: the session's own message (host, port, user and the server's words).
		if (!session) return credentialTestFailure(error);
		const { code, text } = describeCause(error);
		return { status: 'Error', message: `Connected, but could not ${step}${code}: ${text}` };
	} finally {
		await session?.close();
	}
}
