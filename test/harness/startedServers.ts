import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { isAlive } from './install';
import { POSTGRES_BIN } from './queueServices';

/**
 * What an e2e suite starts that would outlive it if the suite did not stop it: servers in the
 * foreground (n8n, Dovecot, sshd, vsftpd, MariaDB) survive the jest worker that spawned them, and
 * PostgreSQL runs as a daemon. A suite whose hook timed out or failed before its `afterAll` could
 * stop them left them running (a red run of 2026-12-04: the SQL suites' PostgreSQL and MariaDB still
 * up 90 minutes later). Each is recorded here, in the run's folder (named by the e2e global setup in
 * STARTED_SERVERS_ENV, inherited by every worker), from its start to its stop; the global teardown
 * stops whatever is still recorded, whatever became of the suite, and the next run's global setup
 * does the same for a run that was killed outright. Outside an e2e run (npm start, chaos, bench)
 * nothing is recorded.
 */
export const STARTED_SERVERS_ENV = 'DURABLE_TRIGGERS_STARTED_SERVERS_DIR';

type Record =
	| { what: string; pid: number; startTime: string }
	| { what: string; postgresData: string };

/** A process's start time in clock ticks since boot (/proc/<pid>/stat, field 22): its identity with its pid. */
function startTimeOf(pid: number): string | undefined {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
	} catch {
		return undefined;
	}
}

let sequence = 0;

function record(entry: Record): () => void {
	const dir = process.env[STARTED_SERVERS_ENV];
	if (!dir) return () => undefined;
	mkdirSync(dir, { recursive: true });
	const file = join(dir, `${process.pid}-${++sequence}.json`);
	writeFileSync(file, JSON.stringify(entry));
	return () => rmSync(file, { force: true });
}

/** Records a process the harness spawned; the function returned forgets it (call it once it has exited). */
export function recordProcess(what: string, pid: number | undefined): () => void {
	const startTime = pid === undefined ? undefined : startTimeOf(pid);
	if (pid === undefined || startTime === undefined) return () => undefined;
	return record({ what, pid, startTime });
}

/** Records a PostgreSQL data folder whose server runs (pg_ctl's daemon); the function returned forgets it. */
export function recordPostgres(what: string, postgresData: string): () => void {
	return record({ what, postgresData });
}

/**
 * Stops whatever the run in `dir` still records, removes the folder and returns what it stopped: each
 * process by SIGTERM, then SIGKILL after 10 s (only if its pid still names the process recorded),
 * each PostgreSQL by `pg_ctl stop -m immediate`.
 */
export async function stopRecorded(dir: string): Promise<string[]> {
	if (!existsSync(dir)) return [];
	const stopped: string[] = [];
	const entries = readdirSync(dir).flatMap((name) => {
		try {
			return [JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record];
		} catch {
			return [];
		}
	});
	const same = (entry: { pid: number; startTime: string }) =>
		isAlive(entry.pid) && startTimeOf(entry.pid) === entry.startTime;
	const processes = entries.filter(
		(entry): entry is Extract<Record, { pid: number }> => 'pid' in entry && same(entry),
	);
	for (const entry of processes) {
		signal(entry.pid, 'SIGTERM');
		stopped.push(`${entry.what} (pid ${entry.pid})`);
	}
	const deadline = Date.now() + 10_000;
	while (processes.some(same) && Date.now() < deadline)
		await new Promise((resolve) => setTimeout(resolve, 200));
	for (const entry of processes.filter(same)) signal(entry.pid, 'SIGKILL');
	for (const entry of entries) {
		if (!('postgresData' in entry) || !existsSync(join(entry.postgresData, 'postmaster.pid')))
			continue;
		try {
			const pg_ctl = join(POSTGRES_BIN, 'pg_ctl');
			const args = ['-D', entry.postgresData, '-m', 'immediate', '-w', 'stop'];
			if (process.getuid?.() === 0)
				execFileSync('runuser', ['-u', 'postgres', '--', pg_ctl, ...args], { stdio: 'ignore' });
			else execFileSync(pg_ctl, args, { stdio: 'ignore' });
			stopped.push(`${entry.what} (${entry.postgresData})`);
		} catch {
			// Not running any more (a stale pid file).
		}
	}
	rmSync(dir, { recursive: true, force: true });
	return stopped;
}

/** Sends a signal to a process that may have exited meanwhile. */
function signal(pid: number, name: NodeJS.Signals): void {
	try {
		process.kill(pid, name);
	} catch {
		// Already gone.
	}
}

/** The folder of the run whose jest process has this pid. */
export function startedServersDirFor(dir: string, pid: number): string {
	return join(dir, `started-servers-${pid}`);
}

/** Stops what runs killed outright left recorded: their jest process is gone (global setup). */
export async function stopLeftoversOfEndedRuns(dir: string): Promise<string[]> {
	if (!existsSync(dir)) return [];
	const stopped: string[] = [];
	for (const entry of readdirSync(dir)) {
		const pid = Number(/^started-servers-(\d+)$/.exec(entry)?.[1]);
		if (pid && pid !== process.pid && !isAlive(pid))
			stopped.push(...(await stopRecorded(join(dir, entry))));
	}
	return stopped;
}
