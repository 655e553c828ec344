import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { processGroup } from '../../scripts/leftovers';
import { waitFor } from './net';
import { recordProcess } from './startedServers';

/**
 * A real server the harness runs in the foreground from a temp dir of its own (Dovecot, sshd): its
 * start that fails with the server's own words, its log, and a stop that leaves nothing behind.
 */
export abstract class ServerProcess {
	protected constructor(
		protected readonly process: ChildProcess,
		protected readonly dir: string,
		private readonly logName: string,
	) {
		// Stopped by the e2e global teardown if the suite does not stop it (test/harness/startedServers.ts).
		const forget = recordProcess(logName.replace(/\.log$/, ''), process.pid);
		process.once('exit', forget);
	}

	/**
	 * Resolves once `probe` answers; if the server exits first, or does not answer in 30 s, stops it
	 * and rejects with what it printed (and `extra()`: its log, where it writes one).
	 */
	protected async ready(
		description: string,
		probe: () => Promise<true | undefined>,
		extra: () => string = () => '',
	): Promise<void> {
		let output = '';
		this.process.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
		this.process.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
		const name = this.logName.replace(/\.log$/, '');
		const exited = new Promise<never>((_, reject) =>
			this.process.once('exit', (code, signal) =>
				reject(
					new Error(`${name} exited (${signal ?? code}) before it was ready:\n${output}${extra()}`),
				),
			),
		);
		try {
			await Promise.race([
				waitFor(description, probe, { timeoutMs: 30_000, intervalMs: 100 }),
				exited,
			]);
		} catch (error) {
			await this.stop();
			throw error;
		}
		exited.catch(() => undefined);
	}

	/** The server's process id. */
	get pid(): number | undefined {
		return this.process.pid;
	}

	/** The temp dir with its config, data and log (removed by stop()). */
	get directory(): string {
		return this.dir;
	}

	/** The server's log in its temp dir (empty before it writes one). */
	log(): string {
		const path = join(this.dir, this.logName);
		return existsSync(path) ? readFileSync(path, 'utf8') : '';
	}

	/**
	 * SIGTERM (each server stops its own children on it; one started in a process group of its own
	 * gets it as a group, so none of its session processes outlives it), wait for the exit, remove
	 * the temp dir.
	 */
	async stop(): Promise<void> {
		if (this.process.exitCode === null && this.process.signalCode === null) {
			const exit = new Promise((resolve) => this.process.once('exit', resolve));
			const pid = this.process.pid;
			if (pid !== undefined && processGroup(pid) === pid) process.kill(-pid, 'SIGTERM');
			else this.process.kill('SIGTERM');
			await exit;
		}
		rmSync(this.dir, { recursive: true, force: true });
	}
}
