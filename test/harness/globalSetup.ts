import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import {
	ensureN8nInstalled,
	packAndPrepareNodesFolder,
	removeFoldersOfEndedProcesses,
} from './install';
import { isAlive } from './install';
import { topologyFromEnv } from './n8nInstance';
import { cacheDir, instancesDir } from './paths';
import { SERVICES_ENV, startQueueServices, stopQueueServices } from './queueServices';
import { SHARED_DIR_ENV, sharedFolderFor } from './shared';
import {
	STARTED_SERVERS_ENV,
	startedServersDirFor,
	stopLeftoversOfEndedRuns,
} from './startedServers';

/**
 * Once per e2e run: the pinned n8n is installed, the freshly built package is packed, and instance
 * folders of earlier runs (kept until now for their logs) are removed. With E2E_TOPOLOGY=queue,
 * Postgres and Redis are started for the run (each test's stack gets its own database and Redis
 * prefix); the global teardown stops them. The folder where suites find the run's shared n8n is
 * named (test/harness/shared.ts), and the folder where each server a suite starts is recorded until it
 * is stopped (test/harness/startedServers.ts); what runs killed outright left running is stopped.
 */
export default async function globalSetup(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	removeFoldersOfEndedProcesses(instancesDir, /-(\d+)$/);
	const leftovers = await stopLeftoversOfEndedRuns(cacheDir);
	if (leftovers.length > 0)
		console.warn(`Stopped what earlier e2e runs left running: ${leftovers.join(', ')}`);
	process.env[STARTED_SERVERS_ENV] = startedServersDirFor(cacheDir, process.pid);
	// Where the suites that share one n8n find it (test/harness/shared.ts); started by the first that asks.
	process.env[SHARED_DIR_ENV] = sharedFolderFor(process.pid);
	if (topologyFromEnv() !== 'queue') return;
	// Services a killed run left behind.
	for (const entry of existsSync(cacheDir) ? readdirSync(cacheDir) : []) {
		const pid = Number(/^queue-services-(\d+)$/.exec(entry)?.[1]);
		if (pid && pid !== process.pid && !isAlive(pid)) {
			stopQueueServices(join(cacheDir, entry));
			rmSync(join(cacheDir, entry), { recursive: true, force: true });
		}
	}
	const services = await startQueueServices(join(cacheDir, `queue-services-${process.pid}`), {
		throwaway: true,
	});
	process.env[SERVICES_ENV.dir] = services.dir;
	process.env[SERVICES_ENV.postgres] = String(services.postgresPort);
	process.env[SERVICES_ENV.redis] = String(services.redisPort);
}
