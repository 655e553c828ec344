/**
 * The Poll Trigger where users live, beside n8n's own floor: one real n8n (SQLite, started by the
 * test harness) per measurement, at n8n's default heap unless BENCH_N8N_HEAP_MB sets one. Each row
 * is measured BENCH_E2E_REPEATS times (default 3) with the Poll Trigger and as often with its
 * floor, interleaved: T F, then F T, then T F, … (a machine getting slower or faster over a row
 * weighs on both alike). Every figure shown is the median over the measurements of the row that
 * ended ok, and "min–max" its spread; "x floor" and "end x floor" are ratios of medians.
 *
 * 1. Remembered history: 0, 100,000 and 1,000,000 keys; the poll lists 300 new items of 100 B and
 *    100 remembered ones. Time from the poll's answer to the last of the 300 runs started, its ratio
 *    to history 0 (of the same History Store), and bytes per remembered key (the stored history
 *    divided by the keys). Each history with each History Store: Static Data (the history in the
 *    workflow's static data) and PostgreSQL (in table n8n_durable_triggers_history of a PostgreSQL
 *    15 started for the run from Debian's packages, test/harness/sqlServers.ts, a database per
 *    measurement, through a Poll History (PostgreSQL) credential; static data keeps only the journal
 *    of changes not yet saved there). PostgreSQL rows also show their time over the Static Data
 *    row's. The server runs with fsync off (its data dies with the run), and its memory is not in
 *    n8n's RSS.
 * 1b. A big burst over a big history (BENCH_E2E_BURSTS, default 10,000 new items over 1,000,000
 *    keys, with each History Store): the same as a history row, with more new items.
 * 2. Item size, no history: 300 items of 100 B, 20 KB and 60 KB each, and 1,000 of 20 KB (KB: 1,000
 *    bytes of JSON per item). Time per run (the same time divided by the runs), its ratio to 100 B.
 *
 * Every row also shows the time to the last run's end (stoppedAt: when the burst was handled; the
 * floor hands n8n every run at once, the Poll Trigger at most ARMED_RUNS_MAX, so the time to the
 * last start flatters the floor), what the editor downloads opening the workflow (history rows),
 * n8n's peak RSS (VmHWM, reset before publishing and read every 250 ms, so
 * for an n8n that died it is the last value read: "≥"), the largest write of
 * the workflow's static data (the state as its runs are created: history, outbox, ledger), how many
 * times the static data was written from publishing until the trigger's settlements were written
 * (the state writes per burst), and how n8n came through: "ok" (every run succeeded and each item
 * was started exactly once), "OOM" (its log says the JavaScript heap ran out), "n8n exited (…)",
 * "<n>/<runs> ok" (no execution ended for 3 minutes with runs missing or failed), "not each started
 * once (…)" or "timed out" (20 minutes, or 200 ms per run for a bigger burst); a row whose
 * measurements ended differently says "2/3 ok; OOM". A measurement that fails is recorded as such
 * and the next one runs. History rows also show the activation: from the publish request to the
 * trigger's first call (n8n loads the workflow with its static data; with PostgreSQL the Poll
 * Trigger loads the table too), outside the time above. After each measurement a line gives its
 * figures and when each state write was logged (seconds after the start); after each Poll Trigger
 * measurement the lines of n8n's log naming the Poll Trigger are printed.
 *
 * Each item started exactly once: once a measurement's runs have all succeeded, the data n8n stored
 * for each of the workflow's executions (its database's execution_data) must name exactly one item
 * of the burst, and each item must be named by exactly one execution. Executions are counted in
 * n8n's database while it runs (not through its API: 10,000 executions would be 40 requests a
 * second), and their times read once through its API.
 *
 * Static-data writes are counted in SQLite itself: before n8n starts on its database, an SQLite
 * trigger on workflow_entity's staticData column logs the size and time of every write n8n makes
 * into a table of its own. So "state writes" are writes, not disk bytes divided by a state size.
 *
 * n8n's floor: the same workload in the same way with the Floor Trigger of bench/floor-node, which
 * does nothing else. Its static data is sized after the row's first Poll Trigger measurement:
 * stored before publishing as large as the stored history (n8n loads it at activation and holds it
 * while the workflow is active), and written once on activation as large as the Poll Trigger's
 * largest write; it emits the same number of runs of one item of the same size. "x floor" is the
 * Poll Trigger's time over the floor's. The two times start alike: the Poll Trigger's when this
 * script answers its poll, the floor's when this script answers the call it makes on activation;
 * both come after n8n has loaded the workflow with its stored static data and activated the
 * trigger, and both end at the last run's startedAt (ms) or stoppedAt (ms to end). The floor's call
 * also reports n8n's V8 heap limit.
 *
 * The history goes into the workflow's static data while n8n is stopped (built by the core, as a
 * first poll would leave it), so activation loads it from the database as after a restart. With
 * History Store PostgreSQL the core builds it as a store kept in the table would be, saves its
 * first checkpoint in the table under the key the trigger will use (its workflow's and node's ids),
 * and static data gets what the store writes then: its journal (empty), no records.
 * Needs the built package (npm run build); packs it like the e2e tests do.
 *   npx tsx bench/pollEndToEnd.bench.ts
 *     BENCH_E2E_QUICK=1                    histories 0,100000 and sizes 300x100,300x20000 only, no burst row
 *     BENCH_E2E_HISTORIES=0,100000         remembered histories (default 0,100000,1000000)
 *     BENCH_E2E_STORES=staticData,postgres History Stores of the history and burst rows (default both)
 *     BENCH_E2E_BURSTS=10000x1000000       new items x remembered keys (default 10000x1000000; empty: none)
 *     BENCH_E2E_SIZES=300x100,1000x20000   runs x item bytes (default 300x100,300x20000,300x60000,1000x20000)
 *     BENCH_E2E_REPEATS=3                  measurements per row and trigger (default 3)
 *     BENCH_N8N_HEAP_MB=16384              n8n's --max-old-space-size (default: none, n8n's default)
 *     BENCH_MAX_RUNS_IN_FLIGHT=100         the Poll Trigger's Max Runs in Flight (default: the node's, 50)
 * A run of every row at n8n's default heap (none of the BENCH_ variables above set, even empty)
 * also writes its figures to bench/results/pollEndToEnd.json:
 *   { n8n, measuredAt, history: [Row], burst: [Row], itemSize: [Row] }, each Row's figures medians
 *   over its measurements that ended ok (null when none did), `floor…` the floor's:
 *   history and burst rows: keys, store, runs (burst rows only), ms, floorMs (to the last start),
 *     activationMs, floorActivationMs, editorDownloadBytes, and the figures below;
 *   itemSize rows: runs, bytes, msPerRun, floorMsPerRun, and the figures below;
 *   figures: repeats; endMs, floorEndMs (to the last end); endMsRange, floorEndMsRange ([min, max]);
 *     endMsEach, floorEndMsEach (each measurement in the order measured, null: not ok); endRatio
 *     (endMs / floorEndMs); peakRssMb, floorPeakRssMb (for a trigger none of whose measurements
 *     ended ok: the highest read before n8n died), peakRssMbRange, floorPeakRssMbRange; stateWrites,
 *     floorStateWrites (per burst), stateWritesRange; outcome, floorOutcome (only when not "ok").
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
import { median, peakRss, spread } from './stats';

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
/** A burst of many runs over a big history: `runs x keys`, with each History Store of STORES. */
const BURSTS = (process.env.BENCH_E2E_BURSTS ?? (QUICK ? '' : '10000x1000000'))
	.split(',')
	.filter((burst) => burst !== '')
	.map((burst) => {
		const [runs, history] = burst.split('x').map(Number);
		if (!(runs > 0 && history >= 0))
			throw new Error(`BENCH_E2E_BURSTS: "${burst}" is not <runs>x<remembered keys>`);
		return { runs, history };
	});
/** Measurements of each row per trigger, the Poll Trigger's and its floor's interleaved. */
const REPEATS = Number(process.env.BENCH_E2E_REPEATS ?? 3);
if (!Number.isInteger(REPEATS) || REPEATS < 1)
	throw new Error(
		`BENCH_E2E_REPEATS: "${process.env.BENCH_E2E_REPEATS}" is not a whole number ≥ 1`,
	);
const HEAP_MB = process.env.BENCH_N8N_HEAP_MB;
/** The Poll Trigger's Max Runs in Flight (unset: the node's default). */
const MAX_RUNS_IN_FLIGHT = Number(process.env.BENCH_MAX_RUNS_IN_FLIGHT ?? 0) || undefined;
const HISTORY_NEW_ITEMS = 300;
const HISTORY_ITEM_BYTES = 100;
const REMEMBERED_LISTED = 100;
/**
 * Long enough for a row n8n survives on this 2-core machine (20 min, or 200 ms per run for a bigger
 * burst); a slower row is recorded as timed out.
 */
const rowTimeoutMs = ({ runs }: Workload) => Math.max(20 * 60_000, runs * 200);
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
	/** When each static-data write was logged, in ms after the start (before it: negative). */
	writeTimesMs?: number[];
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
	const built = rememberingCache.get(history);
	if (built) return built;
	const seeded = buildStaticDataRemembering(history);
	rememberingCache.set(history, seeded);
	return seeded;
}

/** Built once per history: a million keys take the core seconds, and each repeat stores the same. */
const rememberingCache = new Map<number, Seeded>();

function buildStaticDataRemembering(history: number): Seeded {
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
	/** When the measured time started (the trigger's first call answered), epoch ms. */
	let startedAt: number | undefined;
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
		const wait = {
			deadline: Date.now() + rowTimeoutMs(workload),
			exited: () => ended.exit !== undefined,
		};
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
		startedAt = start.receivedAt;
		// Counted in n8n's database once a second (SQLite in WAL mode: this reader holds up no write),
		// not through n8n's API: the counting must cost the n8n under test little, also with 10,000
		// executions. Done when every run has succeeded, or when no execution has ended for STALL_MS
		// (n8n lost or failed some); then the runs' times are read once through n8n's API.
		let lastChange = { finished: -1, at: Date.now() };
		await until(
			`${workload.runs} successful runs`,
			async () => {
				const { finished, succeeded } = executionCounts(databaseFile, id);
				if (finished !== lastChange.finished) lastChange = { finished, at: Date.now() };
				const stalled = Date.now() - lastChange.at > STALL_MS;
				return succeeded >= workload.runs || stalled ? true : undefined;
			},
			{ ...wait, intervalMs: 1_000 },
		);
		const executions = (await n8n.executionSummaries(id)).filter(isFinal);
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
		const notOnce = startedOnce(databaseFile, id, trigger === 'floor' ? 'floor' : 'new', workload);
		if (notOnce) throw new Error(notOnce);
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
	const logged = Number.isFinite(publishedAt)
		? staticDataWrites(databaseFile, publishedAt, settledAt)
		: [];
	const writes = logged.map(({ bytes }) => bytes);
	measured.largestWriteBytes = writes.length > 0 ? Math.max(...writes) : undefined;
	if (startedAt !== undefined)
		measured.writeTimesMs = logged.map(({ atMs }) => Math.round(atMs - (startedAt as number)));
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

/** The static-data writes logged between `from` and `to` (epoch ms): their sizes and times. */
function staticDataWrites(
	file: string,
	from: number,
	to: number,
): Array<{ bytes: number; atMs: number }> {
	const database = new DatabaseSync(file);
	try {
		return database
			.prepare(
				'SELECT bytes, atMs FROM bench_static_data_write WHERE atMs >= ? AND atMs <= ? ORDER BY atMs',
			)
			.all(from, Number.isFinite(to) ? to : Number.MAX_VALUE)
			.map((row) => ({ bytes: Number(row.bytes), atMs: Number(row.atMs) }));
	} finally {
		database.close();
	}
}

/** The workflow's executions n8n has ended (any status but new, running, waiting), and its successes. */
function executionCounts(
	file: string,
	workflowId: string,
): { finished: number; succeeded: number } {
	const database = new DatabaseSync(file);
	try {
		const row = database
			.prepare(
				`SELECT count(*) AS finished, coalesce(sum(status = 'success'), 0) AS succeeded
				FROM execution_entity
				WHERE workflowId = ? AND deletedAt IS NULL AND status NOT IN ('new', 'running', 'waiting')`,
			)
			.get(workflowId);
		return { finished: Number(row?.finished ?? 0), succeeded: Number(row?.succeeded ?? 0) };
	} finally {
		database.close();
	}
}

/**
 * Whether each item of the burst was started exactly once: each execution's stored data (n8n's
 * execution_data, in its database) names one item, `<prefix>-<i>` (the Poll Trigger's new items,
 * the floor's items), and each of the burst's items is named by one execution. Undefined when so,
 * else what was wrong (the row's outcome).
 */
function startedOnce(
	file: string,
	workflowId: string,
	prefix: 'new' | 'floor',
	{ runs }: Workload,
): string | undefined {
	const database = new DatabaseSync(file);
	const starts = new Array<number>(runs).fill(0);
	let unnamed = 0;
	let others = 0;
	try {
		const rows = database
			.prepare(
				`SELECT d.data AS data FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id
				WHERE e.workflowId = ? AND e.deletedAt IS NULL`,
			)
			.all(workflowId);
		const named = new RegExp(`"${prefix}-(\\d+)"`, 'g');
		for (const { data } of rows) {
			const items = new Set(
				[...String(data ?? '').matchAll(named)].map((match) => Number(match[1])),
			);
			if (items.size !== 1) unnamed++;
			for (const item of items) {
				if (item < runs) starts[item]++;
				else others++;
			}
		}
	} finally {
		database.close();
	}
	const twice = starts.filter((count) => count > 1).length;
	const never = starts.filter((count) => count === 0).length;
	if (twice + never + unnamed + others === 0) return undefined;
	return `not each started once: ${twice} started more than once, ${never} never, ${unnamed} executions naming no one item, ${others} items not of the burst`;
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
const ms = (value: number | undefined) =>
	value === undefined ? '-' : Math.round(value).toLocaleString('en');
const mb = (bytes: number) => Math.round(bytes / 1e6);
/** `min–max` of a spread, or "-". */
const range = (values: [number, number] | undefined, format: (value: number) => string) =>
	values === undefined ? '-' : `${format(values[0])}–${format(values[1])}`;

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

/** n8n's V8 heap limit, as the first floor trigger that ran reported it from inside n8n. */
let heapLimit: number | undefined;

/** One row: its workload, measured REPEATS times with each trigger (in the order measured). */
interface Row {
	workload: Workload;
	poll: Measured[];
	floor: Measured[];
}

/** One trigger's measurements of a row: medians and spreads over the measurements that ended ok. */
interface Summary {
	/** "ok" when every measurement was; else each outcome, as "2/3 ok; OOM". */
	outcome: string;
	ok: number;
	ms?: number;
	endMs?: number;
	endSpread?: [number, number];
	activationMs?: number;
	peakRssBytes?: number;
	peakRssSpread?: [number, number];
	/** No measurement ended ok: the peak is the highest of those read before n8n died, at least. */
	peakRssAtLeast: boolean;
	writes?: number;
	writesSpread?: [number, number];
	largestWriteBytes?: number;
	editorBytes?: number;
	historyBytes: number;
	/** Each measurement's time to the end (null: it did not end ok), in the order measured. */
	endEach: Array<number | null>;
}

function summarize(measured: Measured[]): Summary {
	const ok = measured.filter((m) => m.outcome === 'ok');
	const figures = (pick: (m: Measured) => number | undefined) =>
		ok.map(pick).filter((value): value is number => value !== undefined);
	const outcomes = [...new Set(measured.map((m) => m.outcome))];
	const failed = outcomes.filter((outcome) => outcome !== 'ok');
	const dead = measured.filter((m) => m.peakRssBytes !== undefined);
	return {
		outcome:
			outcomes.length === 1
				? outcomes[0]
				: `${ok.length}/${measured.length} ok; ${failed.join('; ')}`,
		ok: ok.length,
		ms: median(figures((m) => m.ms)),
		endMs: median(figures((m) => m.endMs)),
		endSpread: spread(figures((m) => m.endMs)),
		activationMs: median(
			measured.map((m) => m.activationMs).filter((value): value is number => value !== undefined),
		),
		...(ok.length > 0
			? {
					peakRssBytes: median(figures((m) => m.peakRssBytes)),
					peakRssSpread: spread(figures((m) => m.peakRssBytes)),
					peakRssAtLeast: false,
				}
			: {
					peakRssBytes:
						dead.length > 0 ? Math.max(...dead.map((m) => m.peakRssBytes as number)) : undefined,
					peakRssAtLeast: dead.some((m) => m.peakRssAtLeast),
				}),
		writes: median(figures((m) => m.writes)),
		writesSpread: spread(figures((m) => m.writes)),
		largestWriteBytes: median(
			measured
				.map((m) => m.largestWriteBytes)
				.filter((value): value is number => value !== undefined),
		),
		editorBytes: median(figures((m) => m.editorBytes)),
		historyBytes: measured[0].historyBytes,
		endEach: measured.map((m) => (m.outcome === 'ok' && m.endMs !== undefined ? m.endMs : null)),
	};
}

const peak = (s: Summary) =>
	s.peakRssBytes === undefined
		? '-'
		: `${s.peakRssAtLeast ? '≥' : ''}${mb(s.peakRssBytes).toLocaleString('en')}`;
const writesOf = (s: Summary) =>
	s.writes === undefined
		? '-'
		: s.writesSpread && s.writesSpread[0] !== s.writesSpread[1]
			? `${s.writes} (${range(s.writesSpread, String)})`
			: String(s.writes);

/**
 * Measures each workload REPEATS times with the Poll Trigger and with its floor, interleaved as
 * T F, F T, T F, … (each pair in the other order than the one before, so that a machine getting
 * slower or faster over a row weighs on both alike). The floor's static data is sized after the
 * row's first Poll Trigger measurement.
 */
async function measureRows(workloads: Workload[], label: (workload: Workload) => string) {
	const rows: Row[] = [];
	for (const workload of workloads) {
		const row: Row = { workload, poll: [], floor: [] };
		let floorState: FloorState | undefined;
		const measureFloor = async () => {
			const sizedAfter = row.poll[0];
			// Should the Poll Trigger's n8n have died before its poll's write, the floor writes what that
			// write must at least hold: the history and every item of the burst.
			floorState ??= {
				storedBytes: sizedAfter.loadedStateBytes,
				writtenBytes:
					sizedAfter.largestWriteBytes ??
					sizedAfter.loadedStateBytes + workload.runs * workload.itemBytes,
			};
			const floor = await measureRow('floor', workload, floorState);
			row.floor.push(floor);
			heapLimit ??= floor.heapLimitBytes;
			return floor;
		};
		const measurePoll = async () => {
			row.poll.push(await measureRow('Poll Trigger', workload));
			const poll = row.poll.at(-1) as Measured;
			for (const line of poll.triggerLog.slice(0, 5))
				process.stdout.write(`    n8n's log: ${line}\n`);
			if (poll.triggerLog.length > 5)
				process.stdout.write(`    n8n's log: … ${poll.triggerLog.length - 5} more\n`);
			return poll;
		};
		for (let repeat = 0; repeat < REPEATS; repeat++) {
			const order = repeat % 2 === 0 ? [measurePoll, measureFloor] : [measureFloor, measurePoll];
			for (const measureOne of order) {
				const m = await measureOne();
				process.stdout.write(
					`  ${label(workload)} #${repeat + 1}: ${m.trigger} ${m.outcome}${m.ms === undefined ? '' : `, ${ms(m.ms)} ms, to end ${ms(m.endMs)} ms`}${m.activationMs === undefined ? '' : `, activation ${ms(m.activationMs)} ms`}${m.peakRssBytes === undefined ? '' : `, peak RSS ${m.peakRssAtLeast ? '≥' : ''}${mb(m.peakRssBytes).toLocaleString('en')} MB`}${m.writeTimesMs ? `, ${m.writeTimesMs.length} state writes at ${m.writeTimesMs.map((at) => `${(at / 1000).toFixed(1)} s`).join(', ')}` : ''}${m.logFile ? ` (log: ${m.logFile})` : ''}\n`,
				);
			}
		}
		rows.push(row);
	}
	return rows;
}

interface Summarized {
	workload: Workload;
	poll: Summary;
	floor: Summary;
}

const summarizeRows = (rows: Row[]): Summarized[] =>
	rows.map(({ workload, poll, floor }) => ({
		workload,
		poll: summarize(poll),
		floor: summarize(floor),
	}));

function printHistories(title: string, rows: Summarized[]): void {
	process.stdout.write(`\n${title}\n`);
	// Each store's first row (its smallest history, as listed) is its base.
	const baseOf = (store: HistoryStore) =>
		rows.find((row) => row.workload.store === store) ?? rows[0];
	const staticDataRow = (history: number, runs: number) =>
		rows.find(
			(row) =>
				row.workload.store === 'staticData' &&
				row.workload.history === history &&
				row.workload.runs === runs,
		);
	const table = [
		[
			'history',
			'store',
			'runs',
			'trigger',
			'n8n',
			'ms',
			`x history ${rows[0].workload.history.toLocaleString('en')}`,
			'x static data',
			'x floor',
			'ms to end',
			'end min–max',
			'end x floor',
			'activation ms',
			'peak RSS MB',
			'RSS min–max',
			'state',
			'editor',
			'B/key',
			'state writes',
		],
	];
	for (const row of rows) {
		const { history, store, runs } = row.workload;
		const base = baseOf(store);
		for (const s of [row.poll, row.floor]) {
			const isPoll = s === row.poll;
			table.push([
				isPoll ? history.toLocaleString('en') : '',
				isPoll ? STORE_NAMES[store] : '',
				isPoll ? runs.toLocaleString('en') : '',
				isPoll ? 'Poll Trigger' : 'floor',
				s.outcome,
				ms(s.ms),
				ratio(s.ms, (isPoll ? base.poll : base.floor).ms),
				isPoll && store !== 'staticData' ? ratio(s.ms, staticDataRow(history, runs)?.poll.ms) : '',
				isPoll ? ratio(s.ms, row.floor.ms) : '',
				ms(s.endMs),
				range(s.endSpread, ms),
				isPoll ? ratio(s.endMs, row.floor.endMs) : '',
				ms(s.activationMs),
				peak(s),
				range(s.peakRssSpread, (bytes) => mb(bytes).toLocaleString('en')),
				sizeOf(s.largestWriteBytes),
				sizeOf(s.editorBytes),
				isPoll && history > 0 ? (s.historyBytes / history).toFixed(1) : '',
				writesOf(s),
			]);
		}
	}
	printTable(5, table);
}

function printSizes(rows: Summarized[]): void {
	process.stdout.write(`\n2. Item size, no history: one run per item\n`);
	const [base] = rows;
	const perRun = (s: Summary, runs: number) => (s.ms === undefined ? undefined : s.ms / runs);
	const table = [
		[
			'runs x item',
			'trigger',
			'n8n',
			'ms',
			'ms/run',
			`x ${itemSize(base.workload.itemBytes)}`,
			'x floor',
			'ms to end',
			'end min–max',
			'end x floor',
			'peak RSS MB',
			'RSS min–max',
			'state',
			'state writes',
		],
	];
	for (const row of rows) {
		const { runs, itemBytes } = row.workload;
		for (const s of [row.poll, row.floor]) {
			const isPoll = s === row.poll;
			const each = perRun(s, runs);
			table.push([
				isPoll ? `${runs.toLocaleString('en')} x ${itemSize(itemBytes)}` : '',
				isPoll ? 'Poll Trigger' : 'floor',
				s.outcome,
				ms(s.ms),
				each === undefined ? '-' : each.toFixed(1),
				ratio(each, perRun(isPoll ? base.poll : base.floor, base.workload.runs)),
				isPoll ? ratio(s.ms, row.floor.ms) : '',
				ms(s.endMs),
				range(s.endSpread, ms),
				isPoll ? ratio(s.endMs, row.floor.endMs) : '',
				peak(s),
				range(s.peakRssSpread, (bytes) => mb(bytes).toLocaleString('en')),
				sizeOf(s.largestWriteBytes),
				writesOf(s),
			]);
		}
	}
	printTable(3, table);
}

/**
 * The run's figures, for bench/results/pollEndToEnd.json (committed with docs/benchmarks.md's
 * table). Every figure is the median over the row's measurements that ended ok (null if none
 * did); `…Range` is [min, max] over them; a field starting `floor` is the floor's; see the doc
 * comment at the top for each field. A row any of whose measurements did not end ok says how they
 * ended (`outcome`, `floorOutcome`).
 */
function writeResults(histories: Summarized[], bursts: Summarized[], sizes: Summarized[]): void {
	const round = (value: number | undefined) => (value === undefined ? null : Math.round(value));
	const rangeOf = (values: [number, number] | undefined, unit = 1) =>
		values === undefined ? null : values.map((value) => Math.round(value / unit));
	const figures = ({ poll, floor }: Summarized) => ({
		repeats: REPEATS,
		endMs: round(poll.endMs),
		floorEndMs: round(floor.endMs),
		endMsRange: rangeOf(poll.endSpread),
		floorEndMsRange: rangeOf(floor.endSpread),
		endMsEach: poll.endEach.map((value) => round(value ?? undefined)),
		floorEndMsEach: floor.endEach.map((value) => round(value ?? undefined)),
		endRatio:
			poll.endMs === undefined || floor.endMs === undefined
				? null
				: Math.round((poll.endMs / floor.endMs) * 100) / 100,
		peakRssMb: poll.peakRssBytes === undefined ? null : mb(poll.peakRssBytes),
		floorPeakRssMb: floor.peakRssBytes === undefined ? null : mb(floor.peakRssBytes),
		peakRssMbRange: rangeOf(poll.peakRssSpread, 1e6),
		floorPeakRssMbRange: rangeOf(floor.peakRssSpread, 1e6),
		stateWrites: poll.writes ?? null,
		floorStateWrites: floor.writes ?? null,
		stateWritesRange: poll.writesSpread ?? null,
		...(poll.outcome !== 'ok' && { outcome: poll.outcome }),
		...(floor.outcome !== 'ok' && { floorOutcome: floor.outcome }),
	});
	const historyRow = (row: Summarized) => ({
		keys: row.workload.history,
		store: row.workload.store,
		...(row.workload.runs !== HISTORY_NEW_ITEMS && { runs: row.workload.runs }),
		ms: round(row.poll.ms),
		floorMs: round(row.floor.ms),
		activationMs: round(row.poll.activationMs),
		floorActivationMs: round(row.floor.activationMs),
		editorDownloadBytes: row.poll.editorBytes ?? null,
		...figures(row),
	});
	const perRun = (s: Summary, runs: number) =>
		s.ms === undefined ? null : Math.round((s.ms / runs) * 10) / 10;
	const results = {
		n8n: n8nVersion,
		measuredAt: new Date().toISOString(),
		history: histories.map(historyRow),
		burst: bursts.map(historyRow),
		itemSize: sizes.map((row) => ({
			runs: row.workload.runs,
			bytes: row.workload.itemBytes,
			msPerRun: perRun(row.poll, row.workload.runs),
			floorMsPerRun: perRun(row.floor, row.workload.runs),
			...figures(row),
		})),
	};
	const folder = join(__dirname, 'results');
	mkdirSync(folder, { recursive: true });
	writeFileSync(join(folder, 'pollEndToEnd.json'), `${JSON.stringify(results, null, '\t')}\n`);
	process.stdout.write(`Figures written to ${join(folder, 'pollEndToEnd.json')}\n`);
}

/** Each history (and each big burst) with each History Store, as they are listed. */
const historyWorkloads = (bursts: Array<{ runs: number; history: number }>): Workload[] =>
	STORES.flatMap((store) =>
		bursts.map(({ runs, history }) => ({
			runs,
			itemBytes: HISTORY_ITEM_BYTES,
			history,
			store,
		})),
	);

const historyLabel = ({ history, store, runs }: Workload) =>
	`${runs.toLocaleString('en')} new over history ${history.toLocaleString('en')} (${STORE_NAMES[store]})`;

async function main(): Promise<void> {
	const began = Date.now();
	ensureN8nInstalled();
	packAndPrepareNodesFolder({ alongside: [join(__dirname, 'floor-node')] });
	if (STORES.includes('postgres') && HISTORIES.length + BURSTS.length > 0)
		postgres = { servers: await SqlServers.start({ mariadb: false }), databases: 0 };
	let histories: Summarized[];
	let bursts: Summarized[];
	try {
		histories = summarizeRows(
			await measureRows(
				historyWorkloads(HISTORIES.map((history) => ({ runs: HISTORY_NEW_ITEMS, history }))),
				historyLabel,
			),
		);
		bursts = summarizeRows(await measureRows(historyWorkloads(BURSTS), historyLabel));
	} finally {
		await postgres?.servers.stop();
		postgres = undefined;
	}
	const sizes = summarizeRows(
		await measureRows(
			SIZES,
			({ runs, itemBytes }) => `${runs.toLocaleString('en')} x ${itemSize(itemBytes)}, no history`,
		),
	);
	process.stdout.write(
		`\nPoll Trigger end to end in n8n ${n8nVersion} (SQLite), one n8n per measurement, each row measured ${REPEATS} time(s) per trigger, interleaved (T F, F T, …); n8n's heap limit ${
			heapLimit === undefined ? 'not reported' : `${Math.round(heapLimit / 2 ** 20)} MiB`
		} (${HEAP_MB ? `BENCH_N8N_HEAP_MB=${HEAP_MB}` : "n8n's default"}; V8's heap_size_limit, reported from inside n8n by the floor trigger)\n`,
	);
	process.stdout.write(
		"Time: from the Poll Trigger's poll answered, or the floor trigger's activation call answered (both once n8n has loaded the stored state and activated the trigger), to the last run's startedAt; ms to end: to the last run's stoppedAt (every run handled). Figures are medians over the measurements that ended ok; min–max their spread.\n",
	);
	if (histories.length > 0)
		printHistories(
			`1. Remembered history: ${HISTORY_NEW_ITEMS} new items of ${itemSize(HISTORY_ITEM_BYTES)} (+${REMEMBERED_LISTED} remembered ones listed) per poll`,
			histories,
		);
	if (bursts.length > 0)
		printHistories(
			`1b. A big burst over a big history: new items of ${itemSize(HISTORY_ITEM_BYTES)} (+${REMEMBERED_LISTED} remembered ones listed), each checked started exactly once`,
			bursts,
		);
	if (sizes.length > 0) printSizes(sizes);
	// Only a run of every row at n8n's default heap stands for the committed figures.
	// Set, even empty (BENCH_E2E_SIZES= measures no item sizes): rows were picked.
	const picked = [
		'BENCH_E2E_QUICK',
		'BENCH_E2E_HISTORIES',
		'BENCH_E2E_STORES',
		'BENCH_E2E_SIZES',
		'BENCH_E2E_BURSTS',
		'BENCH_E2E_REPEATS',
		'BENCH_N8N_HEAP_MB',
		'BENCH_MAX_RUNS_IN_FLIGHT',
	].filter((name) => process.env[name] !== undefined);
	if (picked.length > 0)
		process.stdout.write(
			`Rows, repeats, heap or Max Runs in Flight picked (${picked.join(', ')}): bench/results/pollEndToEnd.json left as it is.\n`,
		);
	else writeResults(histories, bursts, sizes);
	process.stdout.write(
		[
			'',
			"floor: bench/floor-node's trigger: static data stored as large as the Poll Trigger's history before publishing, written as large as its largest write once on activation, the same runs (one item each, same size), nothing else.",
			'x floor: Poll Trigger time / floor time (medians); end x floor: the same for ms to end. n8n: ok (every run succeeded, each item started once), OOM (heap out of memory), n8n exited (…), n/runs ok (the other runs lost or failed), not each started once (…) or timed out; "2/3 ok; …" when the measurements of a row ended differently.',
			"activation ms: from the publish request to the trigger's first call (n8n loads the workflow with its static data and activates the trigger; with PostgreSQL the Poll Trigger loads the table's checkpoint).",
			'peak RSS: n8n\'s VmHWM from publishing until the settlements were written ("≥": no measurement ended ok, the highest value read before n8n died).',
			"state: the largest static-data write (for the Poll Trigger: history, outbox with the burst's items, ledger). editor: what the editor downloads opening the workflow (GET /rest/workflows/<id>, static data included). B/key: the stored history (in static data, or the table's chunks) / its keys.",
			"store: the Poll Trigger's History Store; with PostgreSQL the history is in table n8n_durable_triggers_history (PostgreSQL 15, fsync off, its memory not in n8n's RSS), static data holds the changes not yet saved there. x history: over the same store's first history row; x static data: over the Static Data row of the same history.",
			"state writes: static-data writes from publishing until the Poll Trigger's settlements were written (or the row gave up on missing runs), counted by an SQLite trigger on the column; median (min–max when they differ).",
			`Whole run: ${((Date.now() - began) / 60_000).toFixed(1)} min.`,
			'',
		].join('\n'),
	);
}

void main();
