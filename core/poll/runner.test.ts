import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import { ConfigError } from '../configError';
import {
	MAX_INTERVAL_MS,
	MAX_RETRY_AFTER_MS,
	MIN_INTERVAL_MS,
	type FailureReport,
	type ObservedPollState,
	type PollOutcome,
	PollRunner,
	type PollRunnerOptions,
} from './runner';

const MINUTE = 60_000;
const INTERVAL = 5 * MINUTE;

/** A runner whose polls are recorded and answered by `answer` (default: unchanged). */
function harness(
	options: Partial<PollRunnerOptions> = {},
	answer: (n: number, signal: AbortSignal) => Promise<PollOutcome> = async () => ({
		kind: 'unchanged',
	}),
) {
	const clock = new FakeClock();
	const pollTimes: number[] = [];
	const persisted: ObservedPollState[] = [];
	const failures: Array<{ message: string } & FailureReport> = [];
	const runner = new PollRunner({
		clock,
		intervalMs: INTERVAL,
		poll: (signal) => {
			pollTimes.push(clock.now() - start);
			return answer(pollTimes.length, signal);
		},
		persist: (observed) => void persisted.push(observed),
		onFailure: (error, report) => void failures.push({ message: error.message, ...report }),
		...options,
	});
	const start = clock.now();
	return { clock, runner, pollTimes, persisted, failures, start };
}

function failWith(error: Error & { retryAfterMs?: number }) {
	return async (): Promise<PollOutcome> => {
		throw error;
	};
}

describe('configuration', () => {
	it('refuses an interval out of range, naming interval and the value', () => {
		const clock = new FakeClock();
		const poll = async (): Promise<PollOutcome> => ({ kind: 'unchanged' });
		expect(() => new PollRunner({ clock, poll, intervalMs: 1_000 })).toThrow(ConfigError);
		expect(() => new PollRunner({ clock, poll, intervalMs: 1_000 })).toThrow(
			'Invalid value 1s for "«interval»": must be from 5s to 7d',
		);
		expect(() => new PollRunner({ clock, poll, intervalMs: MAX_INTERVAL_MS + 1 })).toThrow(
			expect.objectContaining({ field: 'interval' }),
		);
		expect(() => new PollRunner({ clock, poll, intervalMs: Number.NaN })).toThrow(
			'Invalid value NaN for "«interval»": must be from 5s to 7d',
		);
		expect(() => new PollRunner({ clock, poll, intervalMs: MIN_INTERVAL_MS })).not.toThrow();
	});

	it('refuses jitter as long as the interval, and bad backoff or limits', () => {
		const clock = new FakeClock();
		const poll = async (): Promise<PollOutcome> => ({ kind: 'unchanged' });
		expect(() => new PollRunner({ clock, poll, intervalMs: INTERVAL, jitterMs: INTERVAL })).toThrow(
			expect.objectContaining({
				field: 'jitterSec',
				message: 'Invalid value 300 for "«jitterSec»": must be from 0 to 299.999 seconds',
			}),
		);
		expect(
			() => new PollRunner({ clock, poll, intervalMs: INTERVAL, backoff: { factor: 0.5 } }),
		).toThrow('Invalid value 0.5 for "«backoff.factor»": must be from 1 to 10');
		expect(
			() =>
				new PollRunner({
					clock,
					poll,
					intervalMs: INTERVAL,
					backoff: { initialMs: 10 * MINUTE, maxMs: MINUTE },
				}),
		).toThrow(expect.objectContaining({ field: 'backoffMaxSec' }));
		expect(() => new PollRunner({ clock, poll, intervalMs: INTERVAL, failureLimit: 0 })).toThrow(
			expect.objectContaining({ field: 'failureLimit' }),
		);
		expect(() => new PollRunner({ clock, poll, intervalMs: INTERVAL, failureLimit: 2.5 })).toThrow(
			'Invalid value 2.5 for "«failureLimit»": must be a whole number from 1 to 1000000',
		);
	});
});

describe('defaults', () => {
	it.each([5_000, MINUTE, 2 * 60 * MINUTE, 24 * 60 * MINUTE, MAX_INTERVAL_MS])(
		'every interval the node offers starts with default options (%d ms)',
		(intervalMs) => {
			const clock = new FakeClock();
			const poll = async (): Promise<PollOutcome> => ({ kind: 'unchanged' });
			expect(() => new PollRunner({ clock, poll, intervalMs, timeoutMs: 60_000 })).not.toThrow();
		},
	);

	it('a backoff cap set below the interval is refused, naming the option and the value', () => {
		const clock = new FakeClock();
		const poll = async (): Promise<PollOutcome> => ({ kind: 'unchanged' });
		expect(
			() =>
				new PollRunner({
					clock,
					poll,
					intervalMs: 2 * 60 * MINUTE,
					backoff: { maxMs: 60 * MINUTE },
				}),
		).toThrow(
			'Invalid value 3600 for "«backoffMaxSec»": must be at least "«interval»" (7200 seconds) and at most 604800 seconds (7d)',
		);
	});
});

describe('cadence', () => {
	it('start() resolves once the first poll has finished and been recorded, also when it failed', async () => {
		let finish: () => void = () => undefined;
		const { runner, persisted } = harness(
			{},
			() => new Promise((resolve) => (finish = () => resolve({ kind: 'unchanged' }))),
		);
		let done = false;
		const first = runner.start().then(() => (done = true));
		await flushPromises();
		expect(done).toBe(false);
		finish();
		await first;
		expect(persisted).toHaveLength(1);
		const failing = harness({}, failWith(new Error('source down')));
		await expect(failing.runner.start()).resolves.toBeUndefined();
		expect(failing.persisted[0].lastOutcome).toBe('failed');
	});

	it('polls at start, then once per interval', async () => {
		const { clock, runner, pollTimes, persisted } = harness();
		runner.start();
		await flushPromises();
		await clock.advance(3 * INTERVAL);
		expect(pollTimes).toEqual([0, INTERVAL, 2 * INTERVAL, 3 * INTERVAL]);
		expect(persisted).toHaveLength(4);
		expect(persisted[3]).toEqual({
			lastPollAt: clock.now(),
			lastOutcome: 'unchanged',
			lastError: null,
			consecutiveFailures: 0,
			backoffUntil: null,
			skippedTicks: 0,
		});
	});

	it('records each outcome', async () => {
		const outcomes: PollOutcome[] = [{ kind: 'new_items', started: 3 }, { kind: 'not_modified' }];
		const { clock, runner, persisted } = harness({}, async (n) => outcomes[n - 1]);
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(INTERVAL);
		expect(persisted.map((p) => p.lastOutcome)).toEqual(['new_items', 'not_modified']);
	});

	it('a slow poll does not shift the cadence', async () => {
		const { clock, runner, pollTimes } = harness({}, async () => {
			await new Promise<void>((resolve) => clock.setTimer(resolve, MINUTE));
			return { kind: 'unchanged' };
		});
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(2 * INTERVAL + MINUTE);
		expect(pollTimes).toEqual([0, INTERVAL, 2 * INTERVAL]);
	});
});

describe('jitter', () => {
	it('delays each tick by the same offset for the same seed and tick, within [0, jitterMs)', () => {
		const make = (seed: string) => harness({ jitterMs: MINUTE, jitterSeed: seed }).runner;
		const a = make('workflow-1/node-1');
		const again = make('workflow-1/node-1');
		const other = make('workflow-2/node-1');
		const offsets = Array.from({ length: 200 }, (_, tick) => a.jitterOf(tick + 1));
		expect(offsets).toEqual(Array.from({ length: 200 }, (_, tick) => again.jitterOf(tick + 1)));
		expect(offsets).not.toEqual(Array.from({ length: 200 }, (_, tick) => other.jitterOf(tick + 1)));
		for (const offset of offsets) {
			expect(Number.isInteger(offset)).toBe(true);
			expect(offset).toBeGreaterThanOrEqual(0);
			expect(offset).toBeLessThan(MINUTE);
		}
		// Spread over the range, not bunched.
		expect(Math.max(...offsets) - Math.min(...offsets)).toBeGreaterThan(MINUTE / 2);
	});

	it('polls at start + n·interval + jitter(n)', async () => {
		const { clock, runner, pollTimes } = harness({ jitterMs: MINUTE, jitterSeed: 'seed' });
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(3 * INTERVAL + MINUTE);
		expect(pollTimes).toEqual(
			[0, 1, 2, 3].map((n) => (n === 0 ? 0 : n * INTERVAL + runner.jitterOf(n))),
		);
	});
});

describe('overlap', () => {
	it('skips and counts a tick that comes while a poll is still running', async () => {
		let finish: (() => void) | undefined;
		const { clock, runner, pollTimes, persisted } = harness(
			{ timeoutMs: 3 * INTERVAL },
			async (n) => {
				if (n === 1) await new Promise<void>((resolve) => (finish = resolve));
				return { kind: 'unchanged' };
			},
		);
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(2 * INTERVAL);
		expect(runner.polling).toBe(true);
		expect(pollTimes).toEqual([0]);
		expect(runner.observed.skippedTicks).toBe(2);
		finish?.();
		await flushPromises();
		expect(persisted[0].skippedTicks).toBe(2);
		await clock.advance(INTERVAL);
		expect(pollTimes).toEqual([0, 3 * INTERVAL]);
	});
});

describe('timeout', () => {
	it('aborts the poll and counts a failure', async () => {
		let seen: AbortSignal | undefined;
		const { clock, runner, persisted, failures } = harness({ timeoutMs: 30_000 }, (_, signal) => {
			seen = signal;
			return new Promise<PollOutcome>(() => undefined);
		});
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(30_000);
		expect(seen?.aborted).toBe(true);
		expect(seen?.reason.message).toBe('Poll timed out after 30s');
		expect(runner.polling).toBe(false);
		expect(persisted[0]).toMatchObject({
			lastOutcome: 'failed',
			lastError: 'Poll timed out after 30s',
			consecutiveFailures: 1,
		});
		expect(failures).toEqual([
			{ message: 'Poll timed out after 30s', consecutiveFailures: 1, reason: 'first_poll' },
		]);
	});
});

describe('lastError', () => {
	it('keeps the failure as the node says it (the fields it names as the editor labels them)', async () => {
		const { runner, persisted, failures } = harness(
			{ describe: (error) => error.message.replace('«with»', 'With') },
			async () => {
				throw new ConfigError('with', 0, 'must be at least 1', { key: 'limit' });
			},
		);
		runner.start();
		await flushPromises();
		expect(persisted[0].lastError).toBe('Invalid value 0 for "With": "limit" must be at least 1');
		// The node's failure handler gets the error itself.
		expect(failures[0].message).toBe('Invalid value 0 for "«with»": "limit" must be at least 1');
	});
});

describe('backoff', () => {
	it('grows exponentially from the failure and is capped; success resets it', async () => {
		let failing = true;
		const { clock, runner, pollTimes, persisted } = harness(
			{ backoff: { initialMs: INTERVAL, factor: 2, maxMs: 4 * INTERVAL }, failureLimit: 100 },
			async () => {
				if (failing) throw new Error('down');
				return { kind: 'unchanged' };
			},
		);
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(20 * INTERVAL);
		// Gaps: 1, 2, 4, then capped at 4 intervals.
		expect(pollTimes).toEqual([0, 1, 3, 7, 11, 15, 19].map((n) => n * INTERVAL));
		expect(persisted[2].backoffUntil).toBe(clock.now() - 20 * INTERVAL + 7 * INTERVAL);
		failing = false;
		await clock.advance(3 * INTERVAL);
		expect(runner.observed).toMatchObject({
			consecutiveFailures: 0,
			backoffUntil: null,
			lastOutcome: 'unchanged',
		});
		await clock.advance(INTERVAL);
		expect(pollTimes.slice(-2)).toEqual([23, 24].map((n) => n * INTERVAL));
	});

	it('never polls faster than the interval, whatever the backoff', async () => {
		const { clock, runner, pollTimes } = harness(
			{ backoff: { initialMs: 1_000, maxMs: 2_000 } },
			failWith(new Error('down')),
		);
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(3 * INTERVAL);
		expect(pollTimes).toEqual([0, INTERVAL, 2 * INTERVAL, 3 * INTERVAL]);
	});

	it('the failure limit does not jump the backoff to its cap: it keeps growing exponentially', async () => {
		const { clock, runner, pollTimes, failures } = harness(
			{ backoff: { initialMs: INTERVAL, factor: 2, maxMs: 10 * INTERVAL }, failureLimit: 2 },
			failWith(new Error('down')),
		);
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(40 * INTERVAL);
		// Gaps 1, 2, 4, 8 intervals, then the cap (10); the 2nd failure is reported, nothing more.
		expect(pollTimes).toEqual([0, 1, 3, 7, 15, 25, 35].map((n) => n * INTERVAL));
		expect(failures.map((failure) => failure.reason)).toEqual(['first_poll', 'limit_reached']);
	});

	it('by default waits one interval, then two, and never more than two intervals', async () => {
		const { clock, runner, pollTimes } = harness({}, failWith(new Error('down')));
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(20 * INTERVAL);
		expect(pollTimes).toEqual([0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19].map((n) => n * INTERVAL));
	});

	it('by default, a source down 80 s (10 s interval) is polled within two intervals of its return, and its new item starts then', async () => {
		const interval = 10_000;
		const { clock, runner, pollTimes, start } = harness({ intervalMs: interval }, async () => {
			if (clock.now() - start < 80_000) throw new Error('down');
			return { kind: 'new_items', started: 1 };
		});
		runner.start();
		await flushPromises(); // the first poll settles
		await clock.advance(200_000);
		// The failed polls at 0, 10, 30, 50 and 70 s (the 5th reaches the failure limit), then 90 s.
		expect(pollTimes.slice(0, 7)).toEqual([0, 10, 30, 50, 70, 90, 100].map((s) => s * 1_000));
		const back = pollTimes.find((time) => time >= 80_000) as number;
		expect(back - 80_000).toBeLessThanOrEqual(2 * interval);
		expect(runner.observed).toMatchObject({ consecutiveFailures: 0, lastOutcome: 'new_items' });
	});

	it('the default cap is at most the longest interval, so a week-long interval starts', async () => {
		const { clock, runner, pollTimes } = harness(
			{ intervalMs: MAX_INTERVAL_MS, timeoutMs: 60_000 },
			failWith(new Error('down')),
		);
		runner.start();
		await flushPromises();
		await clock.advance(3 * MAX_INTERVAL_MS);
		expect(pollTimes).toEqual([0, MAX_INTERVAL_MS, 2 * MAX_INTERVAL_MS, 3 * MAX_INTERVAL_MS]);
	});
});

describe('Retry-After', () => {
	it('pushes the next poll out to the larger of backoff and Retry-After', async () => {
		const error = Object.assign(new Error('429 Too Many Requests'), { retryAfterMs: 12 * MINUTE });
		const { clock, runner, pollTimes, persisted } = harness({ failureLimit: 100 }, async (n) => {
			if (n === 1) throw error;
			return { kind: 'unchanged' };
		});
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(20 * MINUTE);
		expect(persisted[0].backoffUntil).toBe(12 * MINUTE + (clock.now() - 20 * MINUTE));
		expect(pollTimes).toEqual([0, 12 * MINUTE, 15 * MINUTE, 20 * MINUTE]);
	});

	it('is bounded by MAX_RETRY_AFTER_MS', async () => {
		const error = Object.assign(new Error('503'), { retryAfterMs: 7 * 86_400_000 });
		const { clock, runner, pollTimes } = harness({}, failWith(error));
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(MAX_RETRY_AFTER_MS);
		expect(pollTimes).toEqual([0, MAX_RETRY_AFTER_MS]);
	});
});

describe('failure reporting', () => {
	it('reports the first failure (of the first poll, then after a success) and the failure limit, not every retry', async () => {
		let failing = true;
		const { clock, runner, failures } = harness(
			{ failureLimit: 3, backoff: { initialMs: INTERVAL, factor: 1, maxMs: INTERVAL } },
			async (n) => {
				if (failing) throw new Error(`down ${n}`);
				return { kind: 'unchanged' };
			},
		);
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(5 * INTERVAL);
		expect(failures).toEqual([
			// A brand-new trigger: its first poll failed, no poll had succeeded before it.
			{ message: 'down 1', consecutiveFailures: 1, reason: 'first_poll' },
			{ message: 'down 3', consecutiveFailures: 3, reason: 'limit_reached' },
		]);
		failing = false;
		await clock.advance(INTERVAL);
		failing = true;
		await clock.advance(INTERVAL);
		expect(failures.slice(2)).toEqual([
			{ message: 'down 8', consecutiveFailures: 1, reason: 'first_failure' },
		]);
	});

	it('reports a limit of 1 once, as the limit', async () => {
		const { clock, runner, failures } = harness({ failureLimit: 1 }, failWith(new Error('down')));
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(0);
		expect(failures).toEqual([
			{ message: 'down', consecutiveFailures: 1, reason: 'limit_reached' },
		]);
	});

	it('a throwing persist is reported and does not stop the runner', async () => {
		const { clock, runner, pollTimes, failures } = harness({
			persist: () => {
				throw new Error('disk full');
			},
		});
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(INTERVAL);
		expect(pollTimes).toHaveLength(2);
		expect(failures[0]).toEqual({
			message: 'disk full',
			consecutiveFailures: 0,
			reason: 'persist_failed',
		});
	});
});

describe('restart', () => {
	it('honours a restored backoffUntil: the first poll waits until then', async () => {
		const clock = new FakeClock();
		const restored: ObservedPollState = {
			lastPollAt: clock.now() - MINUTE,
			lastOutcome: 'failed',
			lastError: 'down',
			consecutiveFailures: 2,
			backoffUntil: clock.now() + 7 * MINUTE,
			skippedTicks: 4,
		};
		const pollTimes: number[] = [];
		const failures: FailureReport[] = [];
		const runner = new PollRunner({
			clock,
			intervalMs: INTERVAL,
			failureLimit: 3,
			restored,
			poll: async () => {
				pollTimes.push(clock.now() - restored.lastPollAt! - MINUTE);
				throw new Error('still down');
			},
			onFailure: (_, report) => void failures.push(report),
		});
		runner.start();
		await flushPromises(); // the first poll settles; a real interval is minutes long
		await clock.advance(7 * MINUTE - 1);
		expect(pollTimes).toEqual([]);
		await clock.advance(1);
		expect(pollTimes).toEqual([7 * MINUTE]);
		// The streak continues from the restored count: the third failure is the limit, not a first failure.
		expect(failures).toEqual([{ consecutiveFailures: 3, reason: 'limit_reached' }]);
		expect(runner.observed.skippedTicks).toBe(4);
	});

	it('polls at once when the restored backoff is over', async () => {
		const clock = new FakeClock();
		const polls: number[] = [];
		const runner = new PollRunner({
			clock,
			intervalMs: INTERVAL,
			restored: {
				lastPollAt: 0,
				lastOutcome: 'failed',
				lastError: 'x',
				consecutiveFailures: 1,
				backoffUntil: clock.now() - 1,
				skippedTicks: 0,
			},
			poll: async () => {
				polls.push(clock.now());
				return { kind: 'unchanged' };
			},
		});
		runner.start();
		await flushPromises();
		expect(polls).toEqual([clock.now()]);
	});
});

describe('stop', () => {
	it('cancels the timers, aborts a running poll and records nothing more', async () => {
		let seen: AbortSignal | undefined;
		const { clock, runner, pollTimes, persisted, failures } = harness({}, (_, signal) => {
			seen = signal;
			return new Promise<PollOutcome>((_resolve, reject) =>
				signal.addEventListener('abort', () => reject(signal.reason)),
			);
		});
		runner.start();
		await flushPromises();
		runner.stop();
		await flushPromises();
		expect(seen?.aborted).toBe(true);
		expect(seen?.reason.message).toBe('The poll trigger was stopped');
		expect(clock.pendingTimers()).toBe(0);
		await clock.advance(10 * INTERVAL);
		expect(pollTimes).toEqual([0]);
		expect(persisted).toEqual([]);
		expect(failures).toEqual([]);
	});

	it('starts once', () => {
		const { runner } = harness();
		runner.start();
		expect(() => runner.start()).toThrow('already called');
		runner.stop();
	});
});
