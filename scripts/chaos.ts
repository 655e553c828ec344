/**
 * `npm run chaos`: the long chaos run. For each dedupe kind, batch mode, and the Durable Schedule
 * Trigger's run-all catch-up and Queue overlap, all at once in one n8n, n8n is killed with SIGKILL at
 * random moments during their bursts (CHAOS_KILLS, default 20), the sources changed while it is down,
 * restarted, and every item or window owed is counted (test/harness/chaos.ts). Prints a table: case, kills, items expected, lost, repeated. Exits 1 if any
 * item was lost or repeated. CHAOS_HISTORY (default 20000) remembered keys under each poll burst;
 * CHAOS_CASES (e.g. "unique,schedule queue overlap") runs only those cases. Each poll case also counts the
 * runs n8n saved `crashed` and fails if one cannot be traced to its items.
 *
 * Then, in an n8n of its own, the `burst1000` case (issue 26; test/harness/burstKill.ts
 * `burstCrashChaos`, the steps of `npm run test:burst`): 1,000 new items over min(CHAOS_HISTORY,
 * 10,000) remembered keys, one SIGKILL once a random number of runs (1 to 333) have reported, every
 * fourth run held going so the kill meets runs in flight; n8n's default crash recovery; each crashed
 * run traced as a user would (its deduplication key names its item, which is in Recent Starts' Start
 * Again list or ran again by itself), Start Again applied once, then lost and repeated counted. Fails
 * if one crashed run is untraceable. `CHAOS_CASES=burst1000` runs it alone. Not in queue mode
 * (`npm run test:burst` kills a queue-mode main mid-burst) nor on n8n 1.x (no deduplication keys).
 * The `sql`, `sql_history` (History Store PostgreSQL), `sftp`, `ftp` and `s3` cases poll real servers the harness starts
 * (PostgreSQL 15, OpenSSH's sshd, vsftpd over explicit TLS: root and Debian's packages; @20minutes/s3rver from npm;
 * test/harness/sourceChaos.ts), over at most 1,000 remembered rows, files or objects.
 *
 * `npm run chaos:queue` (E2E_TOPOLOGY=queue): the same against a queue-mode stack (Postgres and Redis
 * started here, a main, two workers, a webhook processor), the kills hitting the main while the
 * workers go on; then a worker killed during poll runs and during schedule runs.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';

import {
	CHAOS_N8N_ENV,
	chaosTable,
	type ChaosResult,
	pollChaosCases,
	runChaos,
	runWorkerKillChaos,
	scheduleChaosCases,
	timelineText,
} from '../test/harness/chaos';
import { burstCrashChaos } from '../test/harness/burstKill';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { sourceChaosCases } from '../test/harness/sourceChaos';
import { N8nInstance, topologyFromEnv } from '../test/harness/n8nInstance';
import { cacheDir, isN8n1, n8nVersion } from '../test/harness/paths';
import {
	type QueueServices,
	startQueueServices,
	stopQueueServices,
} from '../test/harness/queueServices';

const KILLS = Number(process.env.CHAOS_KILLS ?? 20);
const HISTORY = Number(process.env.CHAOS_HISTORY ?? 20_000);
const BURST = Number(process.env.CHAOS_BURST ?? 50);
/**
 * The bursts of the cases whose source lists only what it is asked for (paged, since_last_poll,
 * cursor, sql, sql_history): at least four times Max Runs in Flight's default (50), issue 36.
 */
const WIDE_BURST = Math.max(BURST, Number(process.env.CHAOS_WIDE_BURST ?? 200));
/** A real table or folder's history: every poll of an SFTP folder lists all of it. */
const SOURCE_HISTORY = Math.min(HISTORY, 1_000);
const BURST_CASE = 'burst1000';
/** The burst1000 case's history: `npm run test:burst`'s. */
const BURST_CASE_HISTORY = Math.min(HISTORY, 10_000);

async function main(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	const queue = topologyFromEnv() === 'queue';
	const only = process.env.CHAOS_CASES?.split(',').map((name) => name.trim());
	const wanted = (name: string) => !only || only.includes(name);
	const results: ChaosResult[] = [];
	const long = !only || only.some((name) => name !== BURST_CASE);
	const burst = wanted(BURST_CASE) && !queue && !isN8n1;
	if (long) results.push(...(await longChaos(queue, wanted)));
	if (burst) results.push(await burstCase());
	const topology = queue
		? 'queue mode: SIGKILL of the main, workers go on; then of a worker'
		: 'single process';
	const settings = [
		...(long
			? [
					`${KILLS} SIGKILLs per case, poll bursts of ${BURST} new items over ${HISTORY.toLocaleString('en')} remembered keys (sql, sftp, ftp, s3: ${SOURCE_HISTORY.toLocaleString('en')})`,
				]
			: []),
		...(burst
			? [
					`${BURST_CASE}: one SIGKILL during 1,000 new items over ${BURST_CASE_HISTORY.toLocaleString('en')} remembered keys`,
				]
			: []),
	];
	process.stdout.write(
		`\nChaos on n8n ${n8nVersion} (${topology}): ${settings.join('; ')}\n${chaosTable(results)}\n`,
	);
	// n8n 1.x has no deduplication keys: up to 2 repeated runs per kill are the bound (docs/n8n-1.123.md);
	// the table counts items, and a batch run carries the whole burst.
	const maxRepeatsPerKill = isN8n1 ? 2 : 0;
	const itemsPerRun = (result: ChaosResult) => (result.case === 'batch' ? BURST : 1);
	if (
		results.some(
			(result) =>
				result.lost > 0 ||
				result.repeated > maxRepeatsPerKill * result.kills * itemsPerRun(result) ||
				(!isN8n1 && (result.untraceable ?? 0) > 0),
		)
	)
		process.exitCode = 1;
}

/** Every case but burst1000, at once in one n8n (and in queue mode, the worker kills). */
async function longChaos(
	queue: boolean,
	wanted: (name: string) => boolean,
): Promise<ChaosResult[]> {
	const servicesDir = join(cacheDir, `chaos-queue-services-${process.pid}`);
	const services: QueueServices | undefined = queue
		? await startQueueServices(servicesDir, { throwaway: true })
		: undefined;
	// Info level in queue mode: the harness reads which worker runs what from the workers' logs.
	const n8n = await N8nInstance.launch(
		'chaos-long',
		{ ...CHAOS_N8N_ENV, N8N_LOG_LEVEL: queue ? 'info' : 'warn' },
		services ? { services } : {},
	);
	const results: ChaosResult[] = [];
	let sources: Awaited<ReturnType<typeof sourceChaosCases>> | undefined;
	try {
		sources = await sourceChaosCases(n8n, {
			history: SOURCE_HISTORY,
			burst: BURST,
			wideBurst: WIDE_BURST,
			wanted,
		});
		// Every case at once in this n8n: each kill lands during all their bursts.
		results.push(
			...(await runChaos(n8n, {
				polls: [
					...pollChaosCases(HISTORY, BURST, WIDE_BURST).filter((chaos) => wanted(chaos.name)),
					...sources.cases,
				],
				schedules: scheduleChaosCases().filter((chaos) => wanted(chaos.name)),
				kills: KILLS,
				downtimeMs: 15_000,
			})),
		);
		if (queue) {
			for (const kind of ['poll', 'schedule'] as const) {
				const result = await runWorkerKillChaos(n8n, kind);
				results.push(result);
				process.stdout.write(
					`${chaosTable([result])}\n  the worker held ${result.killedRuns} run(s): ${result.killedRunOutcomes.join(' | ')}; n8n recorded their end ${result.settledAfterSec} s after the kill; ${result.notRerun} not run again\n`,
				);
			}
		}
	} finally {
		await n8n.stop();
		await sources?.stop();
		if (services) {
			stopQueueServices(servicesDir);
			rmSync(servicesDir, { recursive: true, force: true });
		}
	}
	return results;
}

/**
 * The burst1000 case in an n8n of its own (one process, default crash recovery, nothing else
 * running in it). An error ends the case, counted as failing, not the run.
 */
async function burstCase(): Promise<ChaosResult> {
	const n8n = await N8nInstance.launch(`chaos-${BURST_CASE}`, CHAOS_N8N_ENV);
	try {
		const result = await burstCrashChaos(n8n, {
			name: BURST_CASE,
			history: BURST_CASE_HISTORY,
			burst: 1_000,
		});
		process.stdout.write(`${timelineText(result)}\n`);
		return result;
	} catch (error) {
		process.stdout.write(`chaos ${BURST_CASE}: ${(error as Error).stack ?? String(error)}\n`);
		return {
			case: `${BURST_CASE} (failed)`,
			kills: 1,
			earlyKills: 0,
			expected: 1_000,
			lost: 1_000,
			repeated: 0,
			notes: [String(error)],
		};
	} finally {
		await n8n.stop();
	}
}

void main();
