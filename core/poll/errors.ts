/**
 * The two ways a poll trigger is wrongly set up, kept apart so the node can say which one it is:
 * a setting that can never work (a ConfigError, core/configError.ts: fix the node's parameters) and
 * an item the op returned that the settings cannot handle (a PollItemError: fix the expression or
 * the source).
 */

import { RETRY_FIELD_LABELS } from '../retryPolicy';

/** The Poll Trigger's parameters as its editor labels them, by parameter name: the labels its ConfigErrors carry. */
export const FIELD_LABELS = {
	items: 'Items',
	id: 'ID',
	dedupe: 'Dedupe',
	ttl: 'TTL',
	version: 'Version',
	interval: 'Interval',
	backoffMaxSec: 'Backoff Cap (Seconds)',
	failureLimit: 'Failure Limit',
	jitterSec: 'Jitter (Seconds)',
	newestCount: 'Newest N',
	maxRemembered: 'Remember at Most (Keys)',
	maxRunsInFlight: 'Max Runs in Flight',
	historyStore: 'History Store',
	timeoutSec: 'Poll Timeout (Seconds)',
	startAgain: 'Start Again (Item Keys)',
	...RETRY_FIELD_LABELS,
	silenceAfterMin: 'Alert When Nothing New For (Minutes)',
} as const;

/** One item of the op's result that the settings cannot handle; `index` is its 0-based position. */
export class PollItemError extends Error {
	constructor(
		readonly index: number,
		detail: string,
	) {
		super(`Item ${index}: ${detail}`);
		this.name = 'PollItemError';
	}
}
