import { rmSync } from 'node:fs';

import { servicesFromEnv, stopQueueServices } from './queueServices';

/** Stops the Postgres and Redis a queue-mode run started, and removes their data. */
export default async function globalTeardown(): Promise<void> {
	const services = servicesFromEnv();
	if (!services) return;
	stopQueueServices(services.dir);
	rmSync(services.dir, { recursive: true, force: true });
}
