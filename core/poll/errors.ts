/**
 * The two ways a poll trigger is wrongly set up, kept apart so the node can say which one it is:
 * a setting that can never work (a ConfigError, core/configError.ts: fix the node's parameters) and
 * an item the op returned that the settings cannot handle (a PollItemError: fix the expression or
 * the source).
 */

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
