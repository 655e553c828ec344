import { join, resolve } from 'node:path';

export const repoRoot = resolve(__dirname, '..', '..');
export const cacheDir = join(repoRoot, '.cache');
/** The pinned n8n the package is tested in (see scripts/install-n8n.sh): N8N_VERSION, default 2.41.1. */
export const n8nVersion = process.env.N8N_VERSION ?? '2.41.1';
/** n8n 1.x: activates workflows (no publishing), has no execution deduplication keys, runs on Node 22. */
export const n8nMajor = Number(n8nVersion.split('.')[0]);
export const isN8n1 = n8nMajor < 2;
export const n8nInstallDir = join(cacheDir, `n8n-${n8nVersion}`);
export const n8nBin = join(n8nInstallDir, 'node_modules', 'n8n', 'bin', 'n8n');
/**
 * The Node.js that runs this n8n: n8n 1.x gets Node 22 installed beside it (its isolated-vm@6.2.0 has
 * prebuilds for Node 22 and 24, and n8n 1.123 supports Node 20 to 22); n8n 2.x runs on the harness's Node 24.
 */
export const n8nNodeBin = isN8n1
	? join(n8nInstallDir, 'node_modules', 'node', 'bin', 'node')
	: process.execPath;
/**
 * `npm pack` output and the community-nodes folder built from it, shared by every instance of a run.
 * One folder per packing process (named in PACK_DIR_ENV, which jest workers and n8n launches inherit),
 * so a test run and `npm start` side by side never install each other's half-written package.
 */
export const PACK_DIR_ENV = 'DURABLE_TRIGGERS_PACK_DIR';
export function packDir(): string {
	return (process.env[PACK_DIR_ENV] ??= join(cacheDir, `pack-${process.pid}`));
}
export function nodesTemplateDir(): string {
	return join(packDir(), 'nodes');
}
/** Each e2e instance gets its own user folder (and so its own SQLite database) under here. */
export const instancesDir = join(cacheDir, 'e2e-instances');
/** Screenshots, logs and other files tests leave for people to look at. */
export const artifactsDir = join(repoRoot, 'test-artifacts');
export const packageName = 'n8n-nodes-durable-triggers';
