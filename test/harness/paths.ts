import { join, resolve } from 'node:path';

export const repoRoot = resolve(__dirname, '..', '..');
export const cacheDir = join(repoRoot, '.cache');
/** The pinned n8n the package is tested in (see scripts/install-n8n.sh). */
export const n8nVersion = process.env.N8N_VERSION ?? '2.41.1';
export const n8nInstallDir = join(cacheDir, `n8n-${n8nVersion}`);
export const n8nBin = join(n8nInstallDir, 'node_modules', 'n8n', 'bin', 'n8n');
/** `npm pack` output and the community-nodes folder built from it, shared by every instance of a run. */
export const packDir = join(cacheDir, 'pack');
export const nodesTemplateDir = join(packDir, 'nodes');
/** Each e2e instance gets its own user folder (and so its own SQLite database) under here. */
export const instancesDir = join(cacheDir, 'e2e-instances');
/** Screenshots, logs and other files tests leave for people to look at. */
export const artifactsDir = join(repoRoot, 'test-artifacts');
export const packageName = 'n8n-nodes-durable-triggers';
