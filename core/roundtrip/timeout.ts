import { type TimeUnit, UNIT_MS } from '../units';

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

/** What a waiting run remembers about its wait (kept with the execution, read on every callback). */
export interface WaitState {
	/** Per-wait id carried in the callback URL as `rtw` ('' in Wait Only mode). */
	waitId: string;
	startedAtMs: number;
	deadlineMs: number;
}

/**
 * Why a callback is too late, or undefined when it is in time. n8n checks due waits only about once
 * a minute, so a wait can still be reachable after its deadline; such a callback is refused as timed
 * out rather than accepted, and the run leaves through "Timed Out" when n8n gets to it.
 */
export function pastDeadline(
	wait: Pick<WaitState, 'deadlineMs'>,
	nowMs: number,
): string | undefined {
	if (nowMs <= wait.deadlineMs) return undefined;
	return `the wait timed out at ${new Date(wait.deadlineMs).toISOString()}; this callback came ${nowMs - wait.deadlineMs} ms after it`;
}

/** The timeout in milliseconds; validateSettings bounds it (1 second to MAX_WAIT_MS). */
export function timeoutMs(timeout: WaitTimeout): number {
	return timeout.amount * UNIT_MS[timeout.unit];
}

/** The moment (epoch ms) a wait started at `waitStartedAtMs` gives up, for a timeout validateSettings accepted. */
export function resumeDeadline(waitStartedAtMs: number, timeout: WaitTimeout): number {
	return waitStartedAtMs + Math.round(timeoutMs(timeout));
}

/** The item emitted on the "Timed Out" output when no accepted callback arrived before the deadline. */
export function timedOutItem(
	correlationId: string,
	waitStartedAtMs: number,
	deadlineMs: number,
	nowMs: number,
): TimedOutItem {
	return {
		correlationId,
		timedOut: true,
		waitedMs: Math.max(0, nowMs - waitStartedAtMs),
		waitStartedAt: new Date(waitStartedAtMs).toISOString(),
		deadline: new Date(deadlineMs).toISOString(),
	};
}
