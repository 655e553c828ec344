import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { isAlive } from './install';
import { N8nInstance, topologyFromEnv } from './n8nInstance';
import { waitFor } from './net';
import { instancesDir } from './paths';

/**
 * One n8n shared by the e2e suites that neither stop, restart nor kill their n8n and need no
 * environment of their own (foundation, credentials, examples, editor, n8nContract, historyTable, and
 * the file, object and SQL sources' suites, opErrors): each of those would otherwise pay an n8n start (30 to 55 s
 * on the 2-core machine when busy). Each suite's handle unpublishes its workflows when it stops. One per e2e run, so one per
 * n8n version and topology. The first suite that asks starts it; the others attach to it; the global
 * teardown stops it. In queue mode every suite launches its own stack, as before.
 *
 * The global setup names the run's folder in SHARED_DIR_ENV (inherited by in-band test files and
 * jest workers alike); `n8n.json` there says where the shared n8n listens, or why it failed to start.
 */
export const SHARED_DIR_ENV = 'DURABLE_TRIGGERS_SHARED_N8N_DIR';

interface SharedRecord {
	pid?: number;
	userFolder?: string;
	port?: number;
	error?: string;
}

/** Kept referenced for the whole run: this object owns the shared n8n's process. */
let launched: N8nInstance | undefined;

export function sharedFolderFor(pid: number): string {
	return join(instancesDir, `shared-${pid}`);
}

/**
 * The run's shared n8n, as a handle whose `stop()` leaves it running (and which refuses `kill()` and
 * `restart()`). Without a shared folder (a script, not the e2e run) or in queue mode: an n8n of the
 * suite's own, as `N8nInstance.launch(suite)`.
 */
export async function sharedN8n(suite: string): Promise<N8nInstance> {
	const dir = process.env[SHARED_DIR_ENV];
	if (!dir || topologyFromEnv() === 'queue') return await N8nInstance.launch(suite);
	mkdirSync(dir, { recursive: true });
	const recordFile = join(dir, 'n8n.json');
	if (!existsSync(recordFile)) {
		let first = false;
		try {
			mkdirSync(join(dir, 'starting')); // atomic: one suite starts it
			first = true;
		} catch {
			first = false;
		}
		if (first) {
			let record: SharedRecord;
			try {
				launched = await N8nInstance.launch('shared');
				record = { pid: launched.pid, userFolder: launched.userFolder, port: launched.port };
			} catch (error) {
				record = { error: (error as Error).message };
			}
			writeFileSync(recordFile, JSON.stringify(record));
		} else {
			await waitFor(
				'the shared n8n to be started by another suite',
				async () => (existsSync(recordFile) ? true : undefined),
				{ timeoutMs: 300_000, intervalMs: 500 },
			);
		}
	}
	const record = JSON.parse(readFileSync(recordFile, 'utf8')) as SharedRecord;
	if (record.error || !record.userFolder || !record.port)
		throw new Error(`the shared n8n did not start: ${record.error ?? 'no address recorded'}`);
	return await N8nInstance.attach(suite, record.userFolder, record.port);
}

/** Stops the run's shared n8n, if a suite started one (global teardown). */
export async function stopSharedN8n(dir: string): Promise<void> {
	const recordFile = join(dir, 'n8n.json');
	if (!existsSync(recordFile)) return;
	const { pid } = JSON.parse(readFileSync(recordFile, 'utf8')) as SharedRecord;
	if (!pid || !isAlive(pid)) return;
	process.kill(pid, 'SIGTERM');
	const ended = await waitFor(
		'the shared n8n to stop',
		async () => (isAlive(pid) ? undefined : true),
		{ timeoutMs: 60_000, intervalMs: 250 },
	).catch(() => false);
	if (!ended && isAlive(pid)) process.kill(pid, 'SIGKILL');
}
