import { ConfigError } from './configError';
import { checkedRetryPolicy, type RetryPolicy, retryDelay } from './retryPolicy';

const policy: RetryPolicy = {
	maxAttempts: 3,
	firstDelayMs: 60_000,
	factor: 2,
	maxDelayMs: 90_000,
};

describe('the retry policy', () => {
	it('waits the first delay, then factor times longer, up to the cap', () => {
		expect([1, 2, 3, 4].map((failed) => retryDelay(policy, failed))).toEqual([
			60_000, 90_000, 90_000, 90_000,
		]);
		expect(retryDelay({ ...policy, factor: 1.5, maxDelayMs: 1e9 }, 3)).toBe(135_000);
	});

	it.each([
		[
			{ maxAttempts: 0 },
			/^Invalid value 0 for "«maxAttempts»": must be a whole number from 1 to 20$/,
		],
		[{ maxAttempts: 2.5 }, /"«maxAttempts»": must be a whole number from 1 to 20/],
		[
			{ firstDelayMs: 500 },
			/^Invalid value 0.5 for "«retryDelaySec»": must be from 1 to 604800 seconds \(7d\)$/,
		],
		[{ factor: 0.5 }, /^Invalid value 0.5 for "«retryFactor»": must be from 1 to 10$/],
		[
			{ maxDelayMs: 30_000 },
			/^Invalid value 30 for "«retryDelayCapSec»": must be at least "«retryDelaySec»" \(60 seconds\) and at most 604800 seconds \(7d\)$/,
		],
	])('refuses %j with the one ConfigError naming the field', (change, message) => {
		let thrown: unknown;
		try {
			checkedRetryPolicy({ ...policy, ...change });
		} catch (error) {
			thrown = error;
		}
		expect(thrown).toBeInstanceOf(ConfigError);
		expect((thrown as Error).message).toMatch(message);
	});

	it('accepts the policy as given', () => {
		expect(checkedRetryPolicy(policy)).toEqual(policy);
	});
});
