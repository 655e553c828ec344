import { ensureN8nInstalled, packAndPrepareNodesFolder } from './install';

/** Once per e2e run: the pinned n8n is installed and the freshly built package is packed. */
export default async function globalSetup(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
}
