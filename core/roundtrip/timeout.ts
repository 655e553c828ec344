import { type TimeUnit, UNIT_MS } from '../units';
import { RoundTripConfigError } from './errors';

/** How long a run waits for its callback before leaving through the "Timed Out" output. */

export type TimeoutUnit = TimeUnit;

export interface WaitTimeout {
	amount: number;
	unit: TimeoutUnit;
}

/** A year: past that, a waiting run is almost certainly a forgotten one, and Date arithmetic stays far from overflow. */
export const MAX_WAIT_MS = 366 * UNIT_MS.days;

export interface TimedOutItem {
	correlationId: string;
	timedOut: true;
	waitedMs: number;
	waitStartedAt: string;
	deadline: string;
}

/** The moment (epoch ms) a wait started at `waitStartedAtMs` gives up. Throws on a nonsensical or unbounded timeout. */
export function resumeDeadline(waitStartedAtMs: number, timeout: WaitTimeout): number {
	const unitMs = UNIT_MS[timeout.unit];
	if (unitMs === undefined) {
		throw new RoundTripConfigError('timeout', `timeout unit ${JSON.stringify(timeout.unit)} is not one of ${Object.keys(UNIT_MS).join(', ')}`);
	}
	const waitMs = timeout.amount * unitMs;
	if (!Number.isFinite(waitMs) || waitMs < UNIT_MS.seconds || waitMs > MAX_WAIT_MS) {
		throw new RoundTripConfigError(
			'timeout',
			`timeout must be between 1 second and ${MAX_WAIT_MS / UNIT_MS.days} days, got ${timeout.amount} ${timeout.unit}`,
		);
	}
	return waitStartedAtMs + Math.round(waitMs);
}

/** The item emitted on the "Timed Out" output when no accepted callback arrived before the deadline. */
export function timedOutItem(correlationId: string, waitStartedAtMs: number, deadlineMs: number, nowMs: number): TimedOutItem {
	return {
		correlationId,
		timedOut: true,
		waitedMs: Math.max(0, nowMs - waitStartedAtMs),
		waitStartedAt: new Date(waitStartedAtMs).toISOString(),
		deadline: new Date(deadlineMs).toISOString(),
	};
}
