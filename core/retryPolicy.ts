import { checkRange } from './configError';

/**
 * "When a Run Fails: Start ... Again", shared by the Poll Trigger (an item, core/poll/retries.ts)
 * and the Durable Schedule Trigger (a window, core/schedule/engine.ts): how many runs in all, and
 * the backoff between them. What counts as failed is n8n's own status of the run (FAILED_RUN_STATUSES).
 */

/** n8n's statuses of a run that failed (a run that waits, or was cancelled, did not). */
export const FAILED_RUN_STATUSES: ReadonlySet<string> = new Set(['error', 'crashed']);

/** How n8n ended a run: its status, and the message of the error that ended it. */
export interface RunResult {
	status?: string;
	errorMessage?: string;
}

/** Why the run failed, if n8n's status says it did; undefined: it did not (or it is unknown). */
export function failureOf(result: RunResult | undefined): string | undefined {
	if (result?.status === undefined || !FAILED_RUN_STATUSES.has(result.status)) return undefined;
	return result.errorMessage ?? `the run ended with status ${result.status}`;
}

export interface RetryPolicy {
	/** Runs in all (of an item, or of a window), the first included. */
	maxAttempts: number;
	/** The wait after the first failed run. */
	firstDelayMs: number;
	/** Each next wait is this many times the one before… */
	factor: number;
	/** …up to this. */
	maxDelayMs: number;
}

export const MAX_ATTEMPTS_MAX = 20;
export const RETRY_DELAY_MIN_MS = 1_000;
export const RETRY_DELAY_MAX_MS = 7 * 86_400_000;
export const RETRY_FACTOR_MAX = 10;

/** Checks each setting of the policy, naming the field; the cap must be at least the first delay. */
export function checkedRetryPolicy(policy: RetryPolicy): RetryPolicy {
	const maxAttempts = checkRange('maxAttempts', policy.maxAttempts, {
		min: 1,
		max: MAX_ATTEMPTS_MAX,
		whole: true,
	});
	const delay = { max: RETRY_DELAY_MAX_MS, whole: true };
	const seconds = { duration: 'seconds' } as const;
	const firstDelayMs = checkRange(
		'retryDelaySec',
		policy.firstDelayMs,
		{ min: RETRY_DELAY_MIN_MS, ...delay },
		seconds,
	);
	const factor = checkRange('retryFactor', policy.factor, {
		min: 1,
		max: RETRY_FACTOR_MAX,
	});
	const maxDelayMs = checkRange(
		'retryDelayCapSec',
		policy.maxDelayMs,
		{ min: firstDelayMs, minIs: 'retryDelaySec', ...delay },
		seconds,
	);
	return { maxAttempts, firstDelayMs, factor, maxDelayMs };
}

/** The wait after the `failed`-th failed run (1: the first run failed). */
export function retryDelay(policy: RetryPolicy, failed: number): number {
	return Math.min(policy.maxDelayMs, policy.firstDelayMs * policy.factor ** (failed - 1));
}
