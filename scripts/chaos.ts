/**
 * `npm run chaos`: the long chaos run. For each dedupe kind, batch mode, and the Durable Schedule
 * Trigger's run-all catch-up and Queue overlap, all at once in one n8n, n8n is killed with SIGKILL at
 * random moments during their bursts (CHAOS_KILLS, default 20), the sources changed while it is down,
 * restarted, and every item or window owed is counted (test/harness/chaos.ts). Prints a table: case, kills, items expected, lost, repeated. Exits 1 if any
 * item was lost or repeated. CHAOS_HISTORY (default 20000) remembered keys under each poll burst;
 * CHAOS_CASES (e.g. "unique,schedule queue overlap") runs only those cases. Each poll case also counts the
 * runs n8n saved `crashed` and fails if one cannot be traced to its items (issue 26: run it with
 * CHAOS_BURST=1000 CHAOS_HISTORY=10000 CHAOS_CASES=unique for a burst larger than every window).
 * The `sql` and `sftp` cases poll real servers the harness starts (PostgreSQL 15, OpenSSH's sshd:
 * root and Debian's packages, test/harness/sourceChaos.ts), over at most 1,000 remembered rows or files.
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
} from '../test/harness/chaos';
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
/** A real table or folder's history: every poll of an SFTP folder lists all of it. */
const SOURCE_HISTORY = Math.min(HISTORY, 1_000);

async function main(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	const queue = topologyFromEnv() === 'queue';
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
	const only = process.env.CHAOS_CASES?.split(',').map((name) => name.trim());
	const wanted = (name: string) => !only || only.includes(name);
	let sources: Awaited<ReturnType<typeof sourceChaosCases>> | undefined;
	try {
		sources = await sourceChaosCases(n8n, { history: SOURCE_HISTORY, burst: BURST, wanted });
		// Every case at once in this n8n: each kill lands during all their bursts.
		results.push(
			...(await runChaos(n8n, {
				polls: [
					...pollChaosCases(HISTORY, BURST).filter((chaos) => wanted(chaos.name)),
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
	const topology = queue
		? 'queue mode: SIGKILL of the main, workers go on; then of a worker'
		: 'single process';
	process.stdout.write(
		`\nChaos on n8n ${n8nVersion} (${topology}): ${KILLS} SIGKILLs per case, poll bursts of ${BURST} new items over ${HISTORY.toLocaleString('en')} remembered keys (sql, sftp: ${SOURCE_HISTORY.toLocaleString('en')})\n${chaosTable(results)}\n`,
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

void main();
