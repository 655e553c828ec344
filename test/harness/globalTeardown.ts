import { rmSync } from 'node:fs';

import { servicesFromEnv, stopQueueServices } from './queueServices';
import { SHARED_DIR_ENV, stopSharedN8n } from './shared';
import { STARTED_SERVERS_ENV, stopRecorded } from './startedServers';

/**
 * Stops the run's shared n8n, whatever a suite started and did not stop (a suite that failed or timed
 * out before its `afterAll` could: test/harness/startedServers.ts), and the Postgres and Redis a
 * queue-mode run started (removing their data).
 */
export default async function globalTeardown(): Promise<void> {
	const shared = process.env[SHARED_DIR_ENV];
	if (shared) await stopSharedN8n(shared);
	const started = process.env[STARTED_SERVERS_ENV];
	const leftovers = started ? await stopRecorded(started) : [];
	if (leftovers.length > 0)
		console.warn(`Stopped what the suites left running: ${leftovers.join(', ')}`);
	const services = servicesFromEnv();
	if (!services) return;
	stopQueueServices(services.dir);
	rmSync(services.dir, { recursive: true, force: true });
}
