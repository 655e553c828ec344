import { rmSync } from 'node:fs';

import { servicesFromEnv, stopQueueServices } from './queueServices';
import { SHARED_DIR_ENV, stopSharedN8n } from './shared';

/** Stops the run's shared n8n, and the Postgres and Redis a queue-mode run started (removing their data). */
export default async function globalTeardown(): Promise<void> {
	const shared = process.env[SHARED_DIR_ENV];
	if (shared) await stopSharedN8n(shared);
	const services = servicesFromEnv();
	if (!services) return;
	stopQueueServices(services.dir);
	rmSync(services.dir, { recursive: true, force: true });
}
