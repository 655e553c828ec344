import { readFileSync } from 'node:fs';

/** Nearest-rank percentile. */
export function percentile(values: number[], p: number): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * n8n's VmHWM; undefined once the process has exited (a zombie's status has no memory lines, a
 * reaped process no status).
 */
export function peakRss(pid: number): number | undefined {
	let status: string;
	try {
		status = readFileSync(`/proc/${pid}/status`, 'utf8');
	} catch {
		return undefined;
	}
	const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
	return kb === undefined ? undefined : Number(kb) * 1024;
}
