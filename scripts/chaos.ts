/**
 * `npm run chaos`: the long chaos run. For each dedupe kind, batch mode, and the Durable Schedule
 * Trigger's run-all catch-up and Queue overlap, n8n is killed with SIGKILL at random moments during
 * bursts of runs (CHAOS_KILLS per case, default 20), restarted, and every item or window that should
 * have run is counted. Prints a table: case, kills, items expected, lost, repeated. Exits 1 if any
 * item was lost or repeated. CHAOS_HISTORY (default 100000) remembered keys under each poll burst.
 *
 * `npm run chaos:queue` (E2E_TOPOLOGY=queue): the same against a queue-mode stack (Postgres and Redis
 * started here, a main, two workers, a webhook processor), the kills hitting the main while the
 * workers go on; then a worker killed during poll runs and during schedule runs.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';

import { CHAOS_N8N_ENV, chaosTable, type ChaosResult, pollChaosCases, runPollChaos, runScheduleChaos, runWorkerKillChaos, scheduleChaosCases } from '../test/harness/chaos';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { N8nInstance, topologyFromEnv } from '../test/harness/n8nInstance';
import { cacheDir } from '../test/harness/paths';
import { type QueueServices, startQueueServices, stopQueueServices } from '../test/harness/queueServices';

const KILLS = Number(process.env.CHAOS_KILLS ?? 20);
const HISTORY = Number(process.env.CHAOS_HISTORY ?? 100_000);
const BURST = Number(process.env.CHAOS_BURST ?? 50);

async function main(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	const queue = topologyFromEnv() === 'queue';
	const servicesDir = join(cacheDir, `chaos-queue-services-${process.pid}`);
	const services: QueueServices | undefined = queue ? await startQueueServices(servicesDir, { throwaway: true }) : undefined;
	// Info level in queue mode: the harness reads which worker runs what from the workers' logs.
	const n8n = await N8nInstance.launch('chaos-long', { ...CHAOS_N8N_ENV, N8N_LOG_LEVEL: queue ? 'info' : 'warn' }, services ? { services } : {});
	const results: ChaosResult[] = [];
	try {
		for (const chaos of pollChaosCases(HISTORY, BURST)) {
			// Keying a large history takes a while: kills spread over the poll's whole processing.
			results.push(await runPollChaos(n8n, chaos, { kills: KILLS, killWithinMs: HISTORY >= 100_000 ? 2_500 : 800 }));
			process.stdout.write(`${chaosTable(results.slice(-1))}\n`);
		}
		for (const chaos of scheduleChaosCases()) {
			results.push(await runScheduleChaos(n8n, chaos, { kills: KILLS }));
			process.stdout.write(`${chaosTable(results.slice(-1))}\n`);
		}
		if (queue) {
			for (const kind of ['poll', 'schedule'] as const) {
				const result = await runWorkerKillChaos(n8n, kind);
				results.push(result);
				process.stdout.write(`${chaosTable([result])}\n  the worker held ${result.killedRuns} run(s): ${result.killedRunOutcomes.join(' | ')}; n8n recorded their end ${result.settledAfterSec} s after the kill; ${result.notRerun} not run again\n`);
			}
		}
	} finally {
		await n8n.stop();
		if (services) {
			stopQueueServices(servicesDir);
			rmSync(servicesDir, { recursive: true, force: true });
		}
	}
	process.stdout.write(`\nChaos (${queue ? 'queue mode: SIGKILL of the main, workers go on; then of a worker' : 'single process'}): ${KILLS} SIGKILLs per case, poll bursts of ${BURST} new items over ${HISTORY.toLocaleString('en')} remembered keys\n${chaosTable(results)}\n`);
	if (results.some((result) => result.lost > 0 || result.repeated > 0)) process.exitCode = 1;
}

void main();
