import {
	checkRange,
	ConfigError,
	credentialRef,
	fieldRef,
	showDuration,
	showValue,
} from './configError';

describe('ConfigError', () => {
	it('names the label and the value and says what is wrong, carrying the parameter name', () => {
		const error = new ConfigError('queueLimit', 0, 'must be at least 1');
		expect(error).toBeInstanceOf(Error);
		expect(error).toMatchObject({
			name: 'ConfigError',
			field: 'queueLimit',
			credential: undefined,
			message: 'Invalid value 0 for "«queueLimit»": must be at least 1',
		});
	});

	it('names the key inside the parameter and the credential a field belongs to', () => {
		expect(
			new ConfigError('with', 'FETCH', 'must be one of GET, POST', { key: 'method' }).message,
		).toBe('Invalid value "FETCH" for "«with»": "method" must be one of GET, POST');
		const error = new ConfigError('host', '', 'must not be empty', { credential: 'imap' });
		expect(error.message).toBe(
			'Invalid value "" for "«imap:host»" in the «imap:» credential: must not be empty',
		);
		expect(error.credential).toBe('imap');
		const named = new ConfigError('name', '', 'must not be empty', {
			credential: 'httpHeaderAuth',
			credentialName: 'Partner',
		});
		expect(named.message).toBe(
			'Invalid value "" for "«httpHeaderAuth:name»" in the «httpHeaderAuth:» credential "Partner": must not be empty',
		);
		expect(named.credentialName).toBe('Partner');
	});

	it('shows durations as durations, and a secret only when it is empty', () => {
		expect(new ConfigError('f', 90_000, 'p', { duration: true }).message).toBe(
			'Invalid value 90s for "«f»": p',
		);
		expect(new ConfigError('f', 's3cret', 'p', { secret: true }).message).toBe(
			'Invalid value (hidden) for "«f»": p',
		);
		expect(new ConfigError('f', '', 'p', { secret: true }).message).toBe(
			'Invalid value "" for "«f»": p',
		);
	});
});

describe('fieldRef', () => {
	it("names a node's field, a credential's field and a credential type by id, for the node to say", () => {
		expect(fieldRef('queueLimit')).toBe('«queueLimit»');
		expect(fieldRef('pagination.nextUrl')).toBe('«pagination.nextUrl»');
		expect(fieldRef('host', 'imap')).toBe('«imap:host»');
		expect(credentialRef('imap')).toBe('«imap:»');
	});
});

describe('checkRange', () => {
	it('returns a number in range', () => {
		expect(checkRange('f', 5, { min: 1, max: 10 })).toBe(5);
		expect(checkRange('f', 1, { min: 1, max: 10, whole: true })).toBe(1);
		expect(checkRange('f', 1e9, { min: 1 })).toBe(1e9);
	});

	it.each<[unknown, Parameters<typeof checkRange>[2], object, string]>([
		[0, { min: 1, max: 10 }, {}, 'Invalid value 0 for "«f»": must be from 1 to 10'],
		[
			2.5,
			{ min: 1, max: 10, whole: true },
			{},
			'Invalid value 2.5 for "«f»": must be a whole number from 1 to 10',
		],
		[
			0,
			{ min: 1, whole: true },
			{},
			'Invalid value 0 for "«f»": must be a whole number of at least 1',
		],
		['5', { min: 1, max: 10 }, {}, 'Invalid value "5" for "«f»": must be from 1 to 10'],
		[Number.NaN, { min: 1, max: 10 }, {}, 'Invalid value NaN for "«f»": must be from 1 to 10'],
		[undefined, { min: 1, max: 10 }, {}, 'Invalid value (none) for "«f»": must be from 1 to 10'],
		[
			2_000,
			{ min: 5_000, max: 7 * 86_400_000 },
			{ duration: true },
			'Invalid value 2s for "«f»": must be from 5s to 7d',
		],
		[
			15_000.5,
			{ min: 10_000, max: 60_000, whole: true },
			{ duration: true },
			'Invalid value 15.0005s for "«f»": must be from 10s to 1min, to the millisecond',
		],
		// A field in seconds is answered in seconds, its bounds too (issue 47).
		[
			0,
			{ min: 1_000, max: 7 * 86_400_000, whole: true },
			{ duration: 'seconds' },
			'Invalid value 0 for "«f»": must be from 1 to 604800 seconds (7d)',
		],
		[
			1_500.5,
			{ min: 1_000, max: 7 * 86_400_000, whole: true },
			{ duration: 'seconds' },
			'Invalid value 1.5005 for "«f»": must be from 1 to 604800 seconds (7d), to the millisecond',
		],
		[
			300_000,
			{ min: 0, max: 299_999 },
			{ duration: 'seconds' },
			'Invalid value 300 for "«f»": must be from 0 to 299.999 seconds',
		],
		[
			1_000,
			{ min: 60_000, max: 30 * 86_400_000 },
			{ duration: 'minutes' },
			'Invalid value 0.0166666666667 for "«f»": must be from 1 to 43200 minutes (30d)',
		],
		[
			0,
			{ min: 1_000 },
			{ duration: 'seconds' },
			'Invalid value 0 for "«f»": must be at least 1 second',
		],
		// A cap below the delay it caps names that delay as its bound, not a bare duration.
		[
			30_000,
			{ min: 60_000, max: 7 * 86_400_000, minIs: 'delay' },
			{ duration: 'seconds' },
			'Invalid value 30 for "«f»": must be at least "«delay»" (60 seconds) and at most 604800 seconds (7d)',
		],
		[
			0,
			{ min: 1, max: 9 },
			{ key: 'limit' },
			'Invalid value 0 for "«f»": "limit" must be from 1 to 9',
		],
	])('refuses %p in %j', (value, range, options, message) => {
		expect(() => checkRange('f', value, range, options)).toThrow(
			expect.objectContaining({ name: 'ConfigError', field: 'f', message }),
		);
	});
});

describe('showValue', () => {
	it('shows JSON, and what JSON cannot say as JavaScript does', () => {
		expect(showValue('a')).toBe('"a"');
		expect(showValue({ id: 1 })).toBe('{"id":1}');
		expect(showValue(null)).toBe('null');
		expect(showValue(undefined)).toBe('(none)');
		expect(showValue(Number.POSITIVE_INFINITY)).toBe('Infinity');
	});

	it('cuts a long value short', () => {
		const shown = showValue('x'.repeat(500));
		expect(shown).toHaveLength(101);
		expect(shown.endsWith('…')).toBe(true);
	});
});

describe('showDuration', () => {
	it.each([
		[0, '0ms'],
		[500, '500ms'],
		[1_000, '1s'],
		[4_999, '4.999s'],
		[90_000, '90s'],
		[60_000, '1min'],
		[7_200_000, '2h'],
		[7 * 86_400_000, '7d'],
		[-300_000, '-5min'],
	])('%d ms is %s', (ms, shown) => {
		expect(showDuration(ms)).toBe(shown);
	});
});
