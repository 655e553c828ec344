import { ensureN8nInstalled, packAndPrepareNodesFolder, removeFoldersOfEndedProcesses } from './install';
import { instancesDir } from './paths';

/**
 * Once per e2e run: the pinned n8n is installed, the freshly built package is packed, and instance
 * folders of earlier runs (kept until now for their logs) are removed.
 */
export default async function globalSetup(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	removeFoldersOfEndedProcesses(instancesDir, /-(\d+)$/);
}
