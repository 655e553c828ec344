import type { DedupeConfig } from '../core/poll';

/** Every dedupe kind, as the benchmarks configure it (time_window: a 30-day window). */
export const DEDUPE_KINDS: DedupeConfig[] = [
	{ kind: 'unique' },
	{ kind: 'time_window', ttlMs: 30 * 86_400_000 },
	{ kind: 'changed' },
	{ kind: 'greatest' },
	{ kind: 'last' },
];
