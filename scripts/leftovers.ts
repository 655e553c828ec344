import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Finding what an earlier `npm start` left running, by the ports a start needs: which processes listen
 * on a port (Linux /proc), and whether one belongs to a given demo folder. Only processes that name the
 * folder are ever stopped; anything else on a needed port is reported, never killed.
 */

/** The environment variable every process `npm start` starts inherits: its demo folder. */
export const DEMO_FOLDER_ENV = 'DURABLE_TRIGGERS_DEMO_FOLDER';

/** Pids of the processes listening on TCP `port` (any address, IPv4 or IPv6). */
export function listeningPids(port: number): number[] {
	const inodes = new Set<string>();
	for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
		let text: string;
		try {
			text = readFileSync(table, 'utf8');
		} catch {
			continue;
		}
		for (const line of text.split('\n').slice(1)) {
			const fields = line.trim().split(/\s+/);
			if (fields.length < 10) continue;
			const [, local, , state] = fields;
			// 0A: LISTEN.
			if (state === '0A' && parseInt(local.split(':').pop() ?? '', 16) === port)
				inodes.add(fields[9]);
		}
	}
	if (!inodes.size) return [];
	const pids: number[] = [];
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue;
		let fds: string[];
		try {
			fds = readdirSync(`/proc/${entry}/fd`);
		} catch {
			continue;
		}
		for (const fd of fds) {
			let target: string;
			try {
				target = readlinkSync(`/proc/${entry}/fd/${fd}`);
			} catch {
				continue;
			}
			const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
			if (inode && inodes.has(inode)) {
				pids.push(Number(entry));
				break;
			}
		}
	}
	return pids;
}

/**
 * Whether a process belongs to the demo in `folder`: its command line, its environment (the n8n
 * processes' N8N_USER_FOLDER, the marker every process npm start starts inherits) or its working
 * directory (Redis and Postgres run in their data folders) names the folder or a path inside it.
 */
export function belongsToFolder(pid: number, folder: string): boolean {
	const names = (text: string) => {
		for (let at = text.indexOf(folder); at !== -1; at = text.indexOf(folder, at + 1)) {
			const next = text[at + folder.length];
			if (next === undefined || next === '/' || next === '\0' || next === ' ') return true;
		}
		return false;
	};
	for (const file of ['cmdline', 'environ']) {
		try {
			if (names(readFileSync(`/proc/${pid}/${file}`, 'utf8'))) return true;
		} catch {
			// gone, or not ours to read
		}
	}
	try {
		return names(readlinkSync(`/proc/${pid}/cwd`));
	} catch {
		return false;
	}
}

/** A process's command line ("pid 123: node …"), for messages. */
export function describeProcess(pid: number): string {
	try {
		const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
		return `pid ${pid} (${command.length > 120 ? `${command.slice(0, 117)}…` : command})`;
	} catch {
		return `pid ${pid}`;
	}
}

/** The process group a process is in, or undefined when it is gone. */
export function processGroup(pid: number): number | undefined {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
	} catch {
		return undefined;
	}
}

/**
 * Whether the process still holds open files (its sockets among them). A process on its way out has
 * lost its command line, and its main thread may already show as a zombie, while its other threads
 * still hold its files for a moment.
 */
export function holdsFiles(pid: number): boolean {
	try {
		return readdirSync(`/proc/${pid}/fd`).length > 0;
	} catch {
		return false;
	}
}

/** Whether the process runs: a zombie (ended, not yet reaped by its parent) does not. */
export function isAlive(pid: number): boolean {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
	} catch {
		return false;
	}
}
