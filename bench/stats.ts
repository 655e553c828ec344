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

/** The middle value (the mean of the two middle ones for an even count); undefined for none. */
export function median(values: readonly number[]): number | undefined {
	if (values.length === 0) return undefined;
	const sorted = [...values].sort((a, b) => a - b);
	const middle = Math.floor(sorted.length / 2);
	return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The smallest and the largest value; undefined for none. */
export function spread(values: readonly number[]): [number, number] | undefined {
	return values.length === 0 ? undefined : [Math.min(...values), Math.max(...values)];
}
