import { rmSync } from 'node:fs';

import { ensureN8nInstalled, packAndPrepareNodesFolder } from './install';
import { instancesDir } from './paths';

/**
 * Once per e2e run: the pinned n8n is installed, the freshly built package is packed, and the previous
 * run's instance folders (kept until now for their logs) are removed.
 */
export default async function globalSetup(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	rmSync(instancesDir, { recursive: true, force: true });
}
