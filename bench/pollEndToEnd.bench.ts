/**
 * The Poll Trigger where users live, beside n8n's own floor: one real n8n (SQLite, started by the
 * test harness) per row, at n8n's default heap unless BENCH_N8N_HEAP_MB sets one.
 *
 * 1. Remembered history: 0, 100,000 and 1,000,000 keys; the poll lists 300 new items of 100 B and
 *    100 remembered ones. Time from the poll's answer to the last of the 300 runs started, its ratio
 *    to history 0 (of the same History Store), and bytes per remembered key (the stored history
 *    divided by the keys). Each history with each History Store: Static Data (the history in the
 *    workflow's static data) and PostgreSQL (in table n8n_durable_triggers_history of a PostgreSQL
 *    15 started for the run from Debian's packages, test/harness/sqlServers.ts, a database per row,
 *    through a Poll History (PostgreSQL) credential; static data keeps only the journal of changes
 *    not yet saved there). PostgreSQL rows also show their time over the Static Data row's. The
 *    server runs with fsync off (its data dies with the run), and its memory is not in n8n's RSS.
 * 2. Item size, no history: 300 items of 100 B, 20 KB and 60 KB each, and 1,000 of 20 KB (KB: 1,000
 *    bytes of JSON per item). Time per run (the same time divided by the runs), its ratio to 100 B.
 *
 * Every row also shows the time to the last run's end (stoppedAt: when the burst was handled; the
 * floor hands n8n every run at once, the Poll Trigger at most ARMED_RUNS_MAX, so the time to the
 * last start flatters the floor), what the editor downloads opening the workflow (history rows),
 * n8n's peak RSS (VmHWM, reset before publishing and read every 250 ms, so
 * for an n8n that died it is the last value read: "≥"), the largest write of
 * the workflow's static data (the state as its runs are created: history, outbox, ledger), how many
 * times the static data was written from publishing until the trigger's settlements were written,
 * and how n8n came through: "ok" (every run succeeded), "OOM" (its log says the JavaScript heap ran
 * out), "n8n exited (…)", "<n>/<runs> ok" (no execution ended for 3 minutes with runs missing or
 * failed) or "timed out". A row that fails is recorded as such and the next row runs. History rows
 * also show the activation: from the publish request to the trigger's first call (n8n loads the
 * workflow with its static data; with PostgreSQL the Poll Trigger loads the table too), outside
 * the time above; and after each row the lines of n8n's log naming the Poll Trigger are printed.
 *
 * Static-data writes are counted in SQLite itself: before n8n starts on its database, an SQLite
 * trigger on workflow_entity's staticData column logs the size and time of every write n8n makes
 * into a table of its own. So "state writes" are writes, not disk bytes divided by a state size.
 *
 * n8n's floor: after each Poll Trigger row, the same workload in the same way with the Floor Trigger
 * of bench/floor-node, which does nothing else. Its static data is sized after the Poll Trigger's:
 * stored before publishing as large as the stored history (n8n loads it at activation and holds it
 * while the workflow is active), and written once on activation as large as the Poll Trigger's
 * largest write; it emits the same number of runs of one item of the same size. "x floor" is the
 * Poll Trigger's time over the floor's. The two times start alike: the Poll Trigger's when this
 * script answers its poll, the floor's when this script answers the call it makes on activation;
 * both come after n8n has loaded the workflow with its stored static data and activated the
 * trigger, and both end at the last run's startedAt. The floor's call also reports n8n's V8 heap
 * limit.
 *
 * The history goes into the workflow's static data while n8n is stopped (built by the core, as a
 * first poll would leave it), so activation loads it from the database as after a restart. With
 * History Store PostgreSQL the core builds it as a store kept in the table would be, saves its
 * first checkpoint in the table under the key the trigger will use (its workflow's and node's ids),
 * and static data gets what the store writes then: its journal (empty), no records.
 * Needs the built package (npm run build); packs it like the e2e tests do.
 *   npx tsx bench/pollEndToEnd.bench.ts
 *     BENCH_E2E_QUICK=1                    histories 0,100000 and sizes 300x100,300x20000 only
 *     BENCH_E2E_HISTORIES=0,100000         remembered histories (default 0,100000,1000000)
 *     BENCH_E2E_STORES=staticData,postgres History Stores of the history rows (default both)
 *     BENCH_E2E_SIZES=300x100,1000x20000   runs x item bytes (default 300x100,300x20000,300x60000,1000x20000)
 *     BENCH_N8N_HEAP_MB=16384              n8n's --max-old-space-size (default: none, n8n's default)
 *     BENCH_MAX_RUNS_IN_FLIGHT=100         the Poll Trigger's Max Runs in Flight (default: the node's, 50)
 * A run of every row at n8n's default heap (none of the BENCH_ variables above set, even empty)
 * also writes its figures to bench/results/pollEndToEnd.json.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

import type { ICredentialDataDecryptedObject } from 'n8n-workflow';

import { loadDedupeStore } from '../core/poll';
import { historyTableKey } from '../core/poll/historyStore';
import { postgresHistoryTable } from '../nodes/shared/historyTable';
import { marker, node, type NodeJson, PACKAGE, workflow } from '../test/e2e/workflowBuilder';
import { FakeSystem } from '../test/harness/fakeSystem';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { isFinal, N8nInstance } from '../test/harness/n8nInstance';
import { n8nVersion } from '../test/harness/paths';
import { SqlServers } from '../test/harness/sqlServers';
import { peakRss } from './stats';

const QUICK = process.env.BENCH_E2E_QUICK === '1';
/** Where the Poll Trigger keeps its history: its History Store parameter's values. */
type HistoryStore = 'staticData' | 'postgres';
const STORE_NAMES: Record<HistoryStore, string> = {
	staticData: 'Static Data',
	postgres: 'PostgreSQL',
};
const STORES = (process.env.BENCH_E2E_STORES ?? 'staticData,postgres')
	.split(',')
	.filter((store) => store !== '')
	.map((store) => {
		if (store !== 'staticData' && store !== 'postgres')
			throw new Error(`BENCH_E2E_STORES: "${store}" is not staticData or postgres`);
		return store as HistoryStore;
	});
const HISTORIES = (process.env.BENCH_E2E_HISTORIES ?? (QUICK ? '0,100000' : '0,100000,1000000'))
	.split(',')
	.filter((history) => history !== '')
	.map(Number);
const SIZES = (
	process.env.BENCH_E2E_SIZES ??
	(QUICK ? '300x100,300x20000' : '300x100,300x20000,300x60000,1000x20000')
)
	.split(',')
	.filter((size) => size !== '')
	.map((size) => {
		const [runs, itemBytes] = size.split('x').map(Number);
		return { runs, itemBytes, history: 0, store: 'staticData' as HistoryStore };
	});
const HEAP_MB = process.env.BENCH_N8N_HEAP_MB;
/** The Poll Trigger's Max Runs in Flight (unset: the node's default). */
const MAX_RUNS_IN_FLIGHT = Number(process.env.BENCH_MAX_RUNS_IN_FLIGHT ?? 0) || undefined;
const HISTORY_NEW_ITEMS = 300;
const HISTORY_ITEM_BYTES = 100;
const REMEMBERED_LISTED = 100;
/** Long enough for a row n8n survives on this 2-core machine; a slower row is recorded as timed out. */
const ROW_TIMEOUT_MS = 20 * 60_000;
/** No execution ended for this long: n8n will not run the missing ones (it lost or refused them). */
const STALL_MS = 3 * 60_000;
/** n8n's peak RSS is read this often, so an n8n that dies leaves a figure close to its last peak. */
const RSS_SAMPLE_MS = 250;
/** How long a row that failed waits to see whether n8n exited, before it says how the row ended. */
const EXIT_NOTICE_MS = 5_000;
const FLOOR_PACKAGE = 'n8n-nodes-bench-floor';
/** Both triggers' node name, so the Poll Trigger's state is at `node:Trigger` in the static data. */
const TRIGGER_NODE = 'Trigger';

type Trigger = 'Poll Trigger' | 'floor';

/** How n8n's process ended when it was not stopped by this script. */
interface Exit {
	code: number | null;
	signal: NodeJS.Signals | null;
}

interface Workload {
	runs: number;
	itemBytes: number;
	history: number;
	/** The Poll Trigger's History Store (the floor keeps its static data in static data). */
	store: HistoryStore;
}

/** The floor's static data, sized after its Poll Trigger row. */
interface FloorState {
	/** Stored before publishing: the size of the Poll Trigger's stored history. */
	storedBytes: number;
	/** Written once on activation: the size of the Poll Trigger's largest write. */
	writtenBytes: number;
}

interface Measured {
	trigger: Trigger;
	workload: Workload;
	/**
	 * "ok", or how the row ended: OOM, n8n exited (…), timed out, "<n>/<runs> ok" (n8n lost or failed
	 * the other runs), or another error's first line.
	 */
	outcome: string;
	/** Start (poll answered, or floor activated) to the last run's startedAt. */
	ms?: number;
	/** Start to the last run's stoppedAt: when every run of the burst had been handled. */
	endMs?: number;
	/**
	 * The publish request sent to the start: n8n loads the workflow with its static data and activates
	 * the trigger (with History Store PostgreSQL, the Poll Trigger loads the table's checkpoint).
	 */
	activationMs?: number;
	/** The lines of n8n's log that name the Poll Trigger (its warnings, at N8N_LOG_LEVEL warn). */
	triggerLog: string[];
	peakRssBytes?: number;
	/** n8n died: the peak is the last one read before, so at least this. */
	peakRssAtLeast: boolean;
	/** The static data activation loaded (the remembered history, or with PostgreSQL its journal). */
	loadedStateBytes: number;
	/** The stored history: in static data, or the chunks in the PostgreSQL table. */
	historyBytes: number;
	/** The largest static-data write from publishing on. */
	largestWriteBytes?: number;
	/**
	 * Static-data writes from publishing until the trigger's settlements were written (or, when runs
	 * were missing, until the row gave up on them).
	 */
	writes?: number;
	/** What the editor downloads opening the workflow (its JSON, static data included), once settled. */
	editorBytes?: number;
	/** n8n's V8 heap limit, as the floor trigger reported it from inside n8n. */
	heapLimitBytes?: number;
	/** A row that failed keeps its n8n's folder: its log. */
	logFile?: string;
}

/** `{ id, body }` padded so that its JSON is `bytes` long, as the floor trigger builds its items. */
function sizedItem(id: string, bytes: number) {
	const bare = JSON.stringify({ id, body: '' }).length;
	return { id, body: 'x'.repeat(Math.max(0, bytes - bare)) };
}

const seed = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `seed-${i}` }));

/** What a row stores before n8n starts: the workflow's static data, and the history's size. */
interface Seeded {
	staticData: Record<string, unknown>;
	/** The stored history: static data's, or the table's chunks. */
	historyBytes: number;
}

const pollStaticData = (dedupe: unknown) => ({
	[`node:${TRIGGER_NODE}`]: { pollTrigger: { v: 1, dedupe } },
});

/**
 * The trigger's saved state remembering `history` keys, built by the core exactly as a poll would
 * (a first poll that only remembers what is there), as it stands in the workflow's static data.
 */
function staticDataRemembering(history: number): Seeded {
	const { store } = loadDedupeStore({ dedupe: { kind: 'unique' }, firstPoll: { mode: 'none' } });
	const keyed = seed(history).map((item, index) => ({ item, key: item.id, index }));
	store.commit(store.plan(keyed, Date.now()), Date.now(), { keyPrefix: 'poll:seed:' });
	const staticData = pollStaticData(store.serialize());
	return { staticData, historyBytes: JSON.stringify(staticData).length };
}

/**
 * The same history kept by History Store PostgreSQL: the store built as above, but as one its table
 * holds, its first checkpoint saved in the table under the key the trigger of workflow
 * `workflowId` uses (historyTableKey), and static data as the store
 * writes it then: the journal since that checkpoint (empty), no records. With no keys there is no
 * checkpoint to save (as for the trigger): static data holds the store's empty records.
 */
async function tableRemembering(
	history: number,
	credential: ICredentialDataDecryptedObject,
	workflowId: string,
): Promise<Seeded> {
	const { store } = loadDedupeStore({
		dedupe: { kind: 'unique' },
		firstPoll: { mode: 'none' },
		historyTable: { base: undefined },
	});
	const keyed = seed(history).map((item, index) => ({ item, key: item.id, index }));
	store.commit(store.plan(keyed, Date.now()), Date.now(), { keyPrefix: 'poll:seed:' });
	const pending = store.historyCheckpoint();
	let historyBytes = 0;
	if (pending) {
		await postgresHistoryTable(credential).save(
			historyTableKey(workflowId, store.id),
			pending.checkpoint,
		);
		pending.saved();
		historyBytes = pending.checkpoint.changed.reduce((bytes, [, chunk]) => bytes + chunk.length, 0);
	}
	const dedupe = store.serialize();
	if (pending && (dedupe.entries !== undefined || dedupe.history === undefined))
		throw new Error('The seeded store kept its records in static data, not in its table');
	return { staticData: pollStaticData(dedupe), historyBytes };
}

/** History Store PostgreSQL: the server of the run, and how many databases it has been given. */
let postgres: { servers: SqlServers; databases: number } | undefined;

/** A database of its own for a row, and the credential fields that reach it. */
async function historyDatabase(): Promise<ICredentialDataDecryptedObject> {
	if (!postgres) throw new Error('No PostgreSQL was started for the History Store rows');
	postgres.databases += 1;
	const name = `bench_history_${postgres.databases}`;
	await postgres.servers.postgresExec('postgres')(`CREATE DATABASE ${name}`);
	return postgres.servers.postgresCredential(name);
}

/** The trigger under test, and how its measured time starts: the request this script answers. */
function triggerUnderTest(
	trigger: Trigger,
	{ runs, itemBytes, history }: Workload,
	source: FakeSystem,
	floorState: FloorState,
	table?: { credential: ICredentialDataDecryptedObject; credentialId: string },
): {
	node: NodeJson;
	startPath: string;
	/** What to store once n8n has the workflow (its id) and is stopped. */
	seed: (workflowId: string) => Promise<Seeded> | Seeded;
} {
	if (trigger === 'floor') {
		return {
			node: node(TRIGGER_NODE, `${FLOOR_PACKAGE}.floorTrigger`, {
				activatedUrl: source.url('/activated'),
				runs,
				itemBytes,
				stateBytes: floorState.writtenBytes,
			}),
			startPath: '/activated',
			seed: () => ({
				staticData: { [`node:${TRIGGER_NODE}`]: { state: 'x'.repeat(floorState.storedBytes) } },
				historyBytes: floorState.storedBytes,
			}),
		};
	}
	const fresh = Array.from({ length: runs }, (_, i) => sizedItem(`new-${i}`, itemBytes));
	// Serialized once here, so the time from the poll's answer holds none of this script's work.
	source.on('GET', '/items', {
		rawBody: JSON.stringify([...seed(Math.min(history, REMEMBERED_LISTED)), ...fresh]),
	});
	return {
		node: node(
			TRIGGER_NODE,
			`${PACKAGE}.pollTrigger`,
			{
				op: 'http.request',
				with: JSON.stringify({ url: source.url('/items') }),
				id: 'id',
				dedupe: 'unique',
				...(table && { historyStore: 'postgres' }),
				interval: 1,
				intervalUnit: 'hours',
				options: {
					timeoutSec: 600,
					...(MAX_RUNS_IN_FLIGHT && { maxRunsInFlight: MAX_RUNS_IN_FLIGHT }),
				},
			},
			table && {
				credentials: {
					pollHistoryPostgres: { id: table.credentialId, name: 'bench history' },
				},
			},
		),
		startPath: '/items',
		seed: async (workflowId) =>
			table
				? await tableRemembering(history, table.credential, workflowId)
				: staticDataRemembering(history),
	};
}

async function measure(
	trigger: Trigger,
	workload: Workload,
	floorState: FloorState = { storedBytes: 0, writtenBytes: 0 },
): Promise<Measured> {
	const n8n = await N8nInstance.launch(`bench-poll-e2e-${trigger === 'floor' ? 'floor' : 'poll'}`, {
		N8N_LOG_LEVEL: 'warn',
		...(HEAP_MB && { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` }),
	});
	const source = await FakeSystem.start();
	const databaseFile = join(n8n.userFolder, '.n8n', 'database.sqlite');
	const measured: Measured = {
		trigger,
		workload,
		outcome: 'ok',
		peakRssAtLeast: false,
		loadedStateBytes: 0,
		historyBytes: 0,
		triggerLog: [],
	};
	const ended: { exit?: Exit } = {};
	let publishedAt = Infinity;
	let settledAt = Infinity;
	let rssSampler: NodeJS.Timeout | undefined;
	try {
		let table: { credential: ICredentialDataDecryptedObject; credentialId: string } | undefined;
		if (trigger === 'Poll Trigger' && workload.store === 'postgres') {
			const credential = await historyDatabase();
			const credentialId = await n8n.createCredential(
				'bench history',
				'pollHistoryPostgres',
				credential,
			);
			table = { credential, credentialId };
		}
		const {
			node: triggerNode,
			startPath,
			seed: seedRow,
		} = triggerUnderTest(trigger, workload, source, floorState, table);
		if (trigger === 'floor')
			source.on('GET', '/activated', (request) => {
				measured.heapLimitBytes = Number(request.query.heapLimitBytes);
				return { body: {} };
			});
		const id = await n8n.importWorkflow(
			workflow(
				`bench ${trigger} ${workload.runs}x${workload.itemBytes} history ${workload.history}${trigger === 'floor' ? '' : ` (${STORE_NAMES[workload.store]})`}`,
				[triggerNode, marker('Handled')],
				[[TRIGGER_NODE, 'Handled']],
			),
		);
		// The history goes straight into n8n's database while it is stopped (n8n's API would carry it,
		// but n8n 2.41 runs out of memory creating a workflow with 16 MB of static data).
		await n8n.stop();
		const { staticData, historyBytes } = await seedRow(id);
		measured.historyBytes = historyBytes;
		measured.loadedStateBytes = prepareDatabase(databaseFile, id, staticData);
		await n8n.start();
		await n8n.login();
		const pid = n8n.pid as number;
		n8n.onUnexpectedExit((code, signal) => (ended.exit = { code, signal }));
		const wait = { deadline: Date.now() + ROW_TIMEOUT_MS, exited: () => ended.exit !== undefined };
		writeFileSync(`/proc/${pid}/clear_refs`, '5');
		rssSampler = setInterval(() => {
			// Once n8n is gone, the last value read stands.
			measured.peakRssBytes = peakRss(pid) ?? measured.peakRssBytes;
		}, RSS_SAMPLE_MS);
		publishedAt = Date.now();
		await n8n.publish(id);
		// Activation loads the stored state; the Poll Trigger's first poll comes at once.
		const start = await until(
			`the ${trigger}'s first call`,
			async () => source.requests(startPath)[0],
			{ ...wait, intervalMs: 100 },
		);
		measured.activationMs = start.receivedAt - publishedAt;
		// Without run data, once a second: the counting must cost the n8n under test little. Done when
		// every run has succeeded, or when no execution has ended for STALL_MS (n8n lost or failed some).
		let lastChange = { finished: -1, at: Date.now() };
		const executions = await until(
			`${workload.runs} successful runs`,
			async () => {
				const finished = (await n8n.executionSummaries(id)).filter(isFinal);
				if (finished.length !== lastChange.finished)
					lastChange = { finished: finished.length, at: Date.now() };
				const succeeded = finished.filter((execution) => execution.status === 'success');
				const stalled = Date.now() - lastChange.at > STALL_MS;
				return succeeded.length >= workload.runs || stalled ? finished : undefined;
			},
			{ ...wait, intervalMs: 1_000 },
		);
		const succeeded = executions.filter((execution) => execution.status === 'success').length;
		if (succeeded !== workload.runs || executions.length !== workload.runs) {
			const failed = executions.length - succeeded;
			throw new Error(`${succeeded}/${workload.runs} ok${failed > 0 ? `, ${failed} failed` : ''}`);
		}
		measured.ms =
			Math.max(...executions.map((execution) => Date.parse(execution.startedAt))) -
			start.receivedAt;
		measured.endMs =
			Math.max(...executions.map((execution) => Date.parse(execution.stoppedAt ?? ''))) -
			start.receivedAt;
		await until(
			'the trigger to write its settlements',
			async () => (storedOutboxLength(databaseFile, id) === 0 ? true : undefined),
			{ ...wait, intervalMs: 1_000 },
		);
		settledAt = Date.now();
		measured.editorBytes = JSON.stringify(await n8n.rest('GET', `/rest/workflows/${id}`)).length;
		await n8n.unpublish(id);
	} catch (error) {
		// A request to an n8n that is dying fails as its socket closes, a moment before its exit is seen.
		if (!ended.exit) await new Promise((resolve) => setTimeout(resolve, EXIT_NOTICE_MS));
		measured.outcome = howItEnded(error, ended.exit, n8n);
		measured.peakRssAtLeast = ended.exit !== undefined;
	} finally {
		clearInterval(rssSampler);
		if (measured.outcome === 'ok') await n8n.stop();
		else await n8n.kill();
		await source.close();
	}
	const writes = Number.isFinite(publishedAt)
		? staticDataWrites(databaseFile, publishedAt, settledAt)
		: [];
	measured.largestWriteBytes = writes.length > 0 ? Math.max(...writes) : undefined;
	// An n8n that died wrote what it had time to write: no count of a poll's writes.
	if (!ended.exit) measured.writes = writes.length;
	measured.triggerLog = n8n
		.log()
		.split('\n')
		.filter((line) => line.includes(`Poll Trigger "${TRIGGER_NODE}"`));
	if (measured.outcome === 'ok') rmSync(n8n.userFolder, { recursive: true, force: true });
	else measured.logFile = n8n.logFile;
	return measured;
}

/** measure(), with an n8n that could not even be started recorded as the row's outcome too. */
async function measureRow(
	trigger: Trigger,
	workload: Workload,
	floorState?: FloorState,
): Promise<Measured> {
	try {
		return await measure(trigger, workload, floorState);
	} catch (error) {
		return {
			trigger,
			workload,
			outcome: `n8n did not start: ${(error as Error).message.split('\n')[0]}`,
			peakRssAtLeast: false,
			loadedStateBytes: 0,
			historyBytes: 0,
			triggerLog: [],
		};
	}
}

/**
 * Polls `probe` until it gives a value; fails once n8n has exited or the row's deadline has passed.
 * A probe that fails is tried again (a request can fail while n8n is busy or dying).
 */
async function until<T>(
	what: string,
	probe: () => Promise<T | undefined>,
	{ deadline, exited, intervalMs }: { deadline: number; exited: () => boolean; intervalMs: number },
): Promise<T> {
	let lastError: unknown;
	for (;;) {
		if (exited()) throw new Error(`n8n exited while waiting for ${what}`);
		const value = await probe().catch((error: unknown) => void (lastError = error));
		if (value !== undefined) return value;
		if (Date.now() > deadline)
			throw new Error(
				`Timed out waiting for ${what}${lastError instanceof Error ? ` (last error: ${lastError.message})` : ''}`,
			);
		await new Promise((resolve) => setTimeout(resolve, intervalMs));
	}
}

/**
 * Puts the trigger's stored state into n8n's database (n8n stopped), and the log of static-data
 * writes: an SQLite trigger that records the size and time of each write of workflow_entity's
 * staticData (n8n's WorkflowStaticDataService writes the whole column each time). Returns the size
 * of the stored state.
 */
function prepareDatabase(
	file: string,
	workflowId: string,
	staticData: Record<string, unknown>,
): number {
	const database = new DatabaseSync(file);
	try {
		const json = JSON.stringify(staticData);
		database
			.prepare('UPDATE workflow_entity SET staticData = ? WHERE id = ?')
			.run(json, workflowId);
		// Written so that it can never make n8n's write fail: no constraints, a NULL measured as 0.
		database.exec(`
			CREATE TABLE IF NOT EXISTS bench_static_data_write (bytes INTEGER, atMs REAL);
			CREATE TRIGGER IF NOT EXISTS bench_static_data_written
			AFTER UPDATE OF staticData ON workflow_entity
			BEGIN
				INSERT INTO bench_static_data_write
				VALUES (coalesce(length(NEW.staticData), 0), (julianday('now') - 2440587.5) * 86400000.0);
			END;
		`);
		return json.length;
	} finally {
		database.close();
	}
}

/** Sizes of the static-data writes logged between `from` and `to` (epoch ms). */
function staticDataWrites(file: string, from: number, to: number): number[] {
	const database = new DatabaseSync(file);
	try {
		return database
			.prepare('SELECT bytes FROM bench_static_data_write WHERE atMs >= ? AND atMs <= ?')
			.all(from, Number.isFinite(to) ? to : Number.MAX_VALUE)
			.map((row) => Number(row.bytes));
	} finally {
		database.close();
	}
}

/**
 * Runs in the Poll Trigger's stored outbox (none for the floor): 0 once n8n has written the
 * settlements of every run, which is when the poll's writes are over. Read while n8n runs (its
 * SQLite is in WAL mode, so this reader holds up no write).
 */
function storedOutboxLength(file: string, workflowId: string): number {
	const database = new DatabaseSync(file);
	try {
		const row = database
			.prepare(
				`SELECT coalesce(json_array_length(staticData, '$."node:${TRIGGER_NODE}".pollTrigger.outbox'), 0) AS runs
				FROM workflow_entity WHERE id = ?`,
			)
			.get(workflowId);
		return Number(row?.runs ?? 0);
	} finally {
		database.close();
	}
}

function howItEnded(error: unknown, exit: Exit | undefined, n8n: N8nInstance): string {
	if (exit) {
		if (/heap out of memory|Reached heap limit/.test(n8n.log())) return 'OOM';
		return `n8n exited (${exit.signal ?? `code ${exit.code}`})`;
	}
	const message = (error as Error).message.split('\n')[0];
	return message.startsWith('Timed out') ? 'timed out' : message;
}

const kb = (bytes: number) => `${Math.round(bytes / 1000).toLocaleString('en')} KB`;
const sizeOf = (bytes: number | undefined) =>
	bytes === undefined ? '-' : bytes < 1e6 ? kb(bytes) : `${(bytes / 1e6).toFixed(1)} MB`;
const itemSize = (bytes: number) => (bytes < 1000 ? `${bytes} B` : kb(bytes));
const ratio = (a: number | undefined, b: number | undefined) =>
	a === undefined || b === undefined ? '-' : `${(a / b).toFixed(2)}`;
const rss = (m: Measured) =>
	m.peakRssBytes === undefined
		? '-'
		: `${m.peakRssAtLeast ? '≥' : ''}${Math.round(m.peakRssBytes / 1e6).toLocaleString('en')}`;
const ms = (value: number | undefined) =>
	value === undefined ? '-' : Math.round(value).toLocaleString('en');

/** Left-aligned label columns, then right-aligned figures. */
function printTable(labelColumns: number, rows: string[][]): void {
	const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
	for (const row of rows)
		process.stdout.write(
			`${row
				.map((cell, column) =>
					column < labelColumns ? cell.padEnd(widths[column]) : cell.padStart(widths[column]),
				)
				.join('  ')
				.trimEnd()}\n`,
		);
}

/** Measures each workload with the Poll Trigger, then its floor with static data of the same size. */
async function measurePairs(
	workloads: Workload[],
	label: (workload: Workload) => string,
): Promise<Array<[Measured, Measured]>> {
	const pairs: Array<[Measured, Measured]> = [];
	for (const workload of workloads) {
		const poll = await measureRow('Poll Trigger', workload);
		// Should the Poll Trigger's n8n have died before its poll's write, the floor writes what that
		// write must at least hold: the history and every item of the burst.
		const floor = await measureRow('floor', workload, {
			storedBytes: poll.loadedStateBytes,
			writtenBytes:
				poll.largestWriteBytes ?? poll.loadedStateBytes + workload.runs * workload.itemBytes,
		});
		pairs.push([poll, floor]);
		const progress = (m: Measured) =>
			`${m.trigger} ${m.outcome}${m.ms === undefined ? '' : ` (${ms(m.ms)} ms)`}${m.activationMs === undefined ? '' : `, activation ${ms(m.activationMs)} ms`}${m.logFile ? ` (log: ${m.logFile})` : ''}`;
		process.stdout.write(`  ${label(workload)}: ${progress(poll)}; ${progress(floor)}\n`);
		for (const line of poll.triggerLog.slice(0, 5))
			process.stdout.write(`    n8n's log: ${line}\n`);
		if (poll.triggerLog.length > 5)
			process.stdout.write(`    n8n's log: … ${poll.triggerLog.length - 5} more\n`);
	}
	return pairs;
}

function printHistories(pairs: Array<[Measured, Measured]>): void {
	process.stdout.write(
		`\n1. Remembered history: ${HISTORY_NEW_ITEMS} new items of ${itemSize(HISTORY_ITEM_BYTES)} (+${REMEMBERED_LISTED} remembered ones listed) per poll\n`,
	);
	// Each store's first row (its smallest history, as BENCH_E2E_HISTORIES lists them) is its base.
	const baseOf = (store: HistoryStore) =>
		pairs.find(([poll]) => poll.workload.store === store) ?? pairs[0];
	const staticDataRow = (history: number) =>
		pairs.find(
			([poll]) => poll.workload.store === 'staticData' && poll.workload.history === history,
		);
	const rows = [
		[
			'history',
			'store',
			'trigger',
			'n8n',
			'ms',
			`x history ${pairs[0][0].workload.history.toLocaleString('en')}`,
			'x static data',
			'x floor',
			'ms to end',
			'activation ms',
			'peak RSS MB',
			'state',
			'editor',
			'B/key',
			'state writes',
		],
	];
	for (const [poll, floor] of pairs) {
		const { history, store } = poll.workload;
		const [basePoll, baseFloor] = baseOf(store);
		for (const m of [poll, floor])
			rows.push([
				m === poll ? history.toLocaleString('en') : '',
				m === poll ? STORE_NAMES[store] : '',
				m.trigger,
				m.outcome,
				ms(m.ms),
				ratio(m.ms, (m === poll ? basePoll : baseFloor).ms),
				m === poll && store !== 'staticData' ? ratio(poll.ms, staticDataRow(history)?.[0].ms) : '',
				m === poll ? ratio(poll.ms, floor.ms) : '',
				ms(m.endMs),
				ms(m.activationMs),
				rss(m),
				sizeOf(m.largestWriteBytes),
				sizeOf(m.editorBytes),
				m === poll && history > 0 ? (m.historyBytes / history).toFixed(1) : '',
				m.writes === undefined ? '-' : String(m.writes),
			]);
	}
	printTable(4, rows);
}

function printSizes(pairs: Array<[Measured, Measured]>): void {
	process.stdout.write(`\n2. Item size, no history: one run per item\n`);
	const [basePoll, baseFloor] = pairs[0];
	const perRun = (m: Measured) => (m.ms === undefined ? undefined : m.ms / m.workload.runs);
	const rows = [
		[
			'runs x item',
			'trigger',
			'n8n',
			'ms',
			'ms/run',
			`x ${itemSize(basePoll.workload.itemBytes)}`,
			'x floor',
			'ms to end',
			'peak RSS MB',
			'state',
			'state writes',
		],
	];
	for (const [poll, floor] of pairs) {
		const { runs, itemBytes } = poll.workload;
		for (const m of [poll, floor])
			rows.push([
				m === poll ? `${runs.toLocaleString('en')} x ${itemSize(itemBytes)}` : '',
				m.trigger,
				m.outcome,
				ms(m.ms),
				perRun(m) === undefined ? '-' : (perRun(m) as number).toFixed(1),
				ratio(perRun(m), perRun(m === poll ? basePoll : baseFloor)),
				m === poll ? ratio(poll.ms, floor.ms) : '',
				ms(m.endMs),
				rss(m),
				sizeOf(m.largestWriteBytes),
				m.writes === undefined ? '-' : String(m.writes),
			]);
	}
	printTable(3, rows);
}

/**
 * The run's figures, for bench/results/pollEndToEnd.json (committed with docs/benchmarks.md's
 * table): per history the Poll Trigger's time, its floor's, and the Poll Trigger's peak RSS; per
 * item size the Poll Trigger's time per run (and its floor's). A row that did not end ok has null
 * figures and says how it ended.
 */
function writeResults(
	histories: Array<[Measured, Measured]>,
	sizes: Array<[Measured, Measured]>,
): void {
	const outcome = (m: Measured) => (m.outcome === 'ok' ? {} : { outcome: m.outcome });
	const round = (value: number | undefined) => (value === undefined ? null : Math.round(value));
	const perRun = (m: Measured) =>
		m.ms === undefined ? null : Math.round((m.ms / m.workload.runs) * 10) / 10;
	const results = {
		n8n: n8nVersion,
		measuredAt: new Date().toISOString(),
		history: histories.map(([poll, floor]) => ({
			keys: poll.workload.history,
			store: poll.workload.store,
			ms: round(poll.ms),
			floorMs: round(floor.ms),
			endMs: round(poll.endMs),
			floorEndMs: round(floor.endMs),
			activationMs: round(poll.activationMs),
			floorActivationMs: round(floor.activationMs),
			editorDownloadBytes: poll.editorBytes ?? null,
			peakRssMb: poll.peakRssBytes === undefined ? null : Math.round(poll.peakRssBytes / 1e6),
			floorPeakRssMb:
				floor.peakRssBytes === undefined ? null : Math.round(floor.peakRssBytes / 1e6),
			...outcome(poll),
			...(floor.outcome !== 'ok' && { floorOutcome: floor.outcome }),
		})),
		itemSize: sizes.map(([poll, floor]) => ({
			runs: poll.workload.runs,
			bytes: poll.workload.itemBytes,
			msPerRun: perRun(poll),
			floorMsPerRun: perRun(floor),
			endMs: round(poll.endMs),
			floorEndMs: round(floor.endMs),
			...outcome(poll),
			...(floor.outcome !== 'ok' && { floorOutcome: floor.outcome }),
		})),
	};
	const folder = join(__dirname, 'results');
	mkdirSync(folder, { recursive: true });
	writeFileSync(join(folder, 'pollEndToEnd.json'), `${JSON.stringify(results, null, '\t')}\n`);
	process.stdout.write(`Figures written to ${join(folder, 'pollEndToEnd.json')}\n`);
}

async function main(): Promise<void> {
	const began = Date.now();
	ensureN8nInstalled();
	packAndPrepareNodesFolder({ alongside: [join(__dirname, 'floor-node')] });
	if (STORES.includes('postgres') && HISTORIES.length > 0)
		postgres = { servers: await SqlServers.start({ mariadb: false }), databases: 0 };
	let histories: Array<[Measured, Measured]>;
	try {
		histories = await measurePairs(
			STORES.flatMap((store) =>
				HISTORIES.map((history) => ({
					runs: HISTORY_NEW_ITEMS,
					itemBytes: HISTORY_ITEM_BYTES,
					history,
					store,
				})),
			),
			({ history, store }) => `history ${history.toLocaleString('en')} (${STORE_NAMES[store]})`,
		);
	} finally {
		await postgres?.servers.stop();
		postgres = undefined;
	}
	const sizes = await measurePairs(
		SIZES,
		({ runs, itemBytes }) => `${runs.toLocaleString('en')} x ${itemSize(itemBytes)}, no history`,
	);
	const heapLimit = [...histories, ...sizes]
		.map(([, floor]) => floor.heapLimitBytes)
		.find((bytes) => bytes !== undefined);
	process.stdout.write(
		`\nPoll Trigger end to end in n8n ${n8nVersion} (SQLite), one n8n per row; n8n's heap limit ${
			heapLimit === undefined ? 'not reported' : `${Math.round(heapLimit / 2 ** 20)} MiB`
		} (${HEAP_MB ? `BENCH_N8N_HEAP_MB=${HEAP_MB}` : "n8n's default"}; V8's heap_size_limit, reported from inside n8n by the floor trigger)\n`,
	);
	process.stdout.write(
		"Time: from the Poll Trigger's poll answered, or the floor trigger's activation call answered (both once n8n has loaded the stored state and activated the trigger), to the last run's startedAt; ms to end: to the last run's stoppedAt (every run handled).\n",
	);
	if (histories.length > 0) printHistories(histories);
	if (sizes.length > 0) printSizes(sizes);
	// Only a run of every row at n8n's default heap stands for the committed figures.
	// Set, even empty (BENCH_E2E_SIZES= measures no item sizes): rows were picked.
	const picked = [
		'BENCH_E2E_QUICK',
		'BENCH_E2E_HISTORIES',
		'BENCH_E2E_STORES',
		'BENCH_E2E_SIZES',
		'BENCH_N8N_HEAP_MB',
		'BENCH_MAX_RUNS_IN_FLIGHT',
	].filter((name) => process.env[name] !== undefined);
	if (picked.length > 0)
		process.stdout.write(
			`Rows, heap or Max Runs in Flight picked (${picked.join(', ')}): bench/results/pollEndToEnd.json left as it is.\n`,
		);
	else writeResults(histories, sizes);
	process.stdout.write(
		[
			'',
			"floor: bench/floor-node's trigger: static data stored as large as the Poll Trigger's history before publishing, written as large as its largest write once on activation, the same runs (one item each, same size), nothing else.",
			'x floor: Poll Trigger time / floor time. n8n: ok (every run succeeded), OOM (heap out of memory), n8n exited (…), n/runs ok (the other runs lost or failed) or timed out.',
			"activation ms: from the publish request to the trigger's first call (n8n loads the workflow with its static data and activates the trigger; with PostgreSQL the Poll Trigger loads the table's checkpoint).",
			'peak RSS: n8n\'s VmHWM from publishing until the settlements were written ("≥": the last value read before n8n died).',
			"state: the largest static-data write (for the Poll Trigger: history, outbox with the burst's items, ledger). editor: what the editor downloads opening the workflow (GET /rest/workflows/<id>, static data included). B/key: the stored history (in static data, or the table's chunks) / its keys.",
			"store: the Poll Trigger's History Store; with PostgreSQL the history is in table n8n_durable_triggers_history (PostgreSQL 15, fsync off, its memory not in n8n's RSS), static data holds the changes not yet saved there. x history: over the same store's first history row; x static data: over the Static Data row of the same history.",
			"state writes: static-data writes from publishing until the Poll Trigger's settlements were written (or the row gave up on missing runs), counted by an SQLite trigger on the column.",
			`Whole run: ${((Date.now() - began) / 60_000).toFixed(1)} min.`,
			'',
		].join('\n'),
	);
}

void main();
