import { ConfigError } from '../configError';
import {
	downloadArgs,
	fileVersion,
	globToRegExp,
	listArgs,
	type ListedFile,
	moveArgs,
	settle,
	toRemoteFile,
} from './remoteFiles';

const file = (path: string, size: number, mtimeMs: number): ListedFile => ({ path, size, mtimeMs });

describe('globToRegExp', () => {
	it.each([
		['*', 'orders.csv', true],
		['*.csv', 'orders.csv', true],
		['*.csv', 'orders.csv.part', false],
		['order-??.csv', 'order-01.csv', true],
		['order-??.csv', 'order-1.csv', false],
		['*.{csv,xml}', 'a.xml', true],
		['*.{csv,xml}', 'a.json', false],
		['[!.]*', '.hidden', false],
		['[!.]*', 'shown', true],
		['data[0-9].txt', 'data7.txt', true],
		['a+b(1).txt', 'a+b(1).txt', true],
		['*.CSV', 'a.csv', false],
	])('%s on %s: %s', (pattern, name, matches) => {
		expect(globToRegExp(pattern).test(name)).toBe(matches);
	});

	it('refuses unbalanced brackets and braces', () => {
		expect(() => globToRegExp('[abc')).toThrow('has no closing "]"');
		expect(() => globToRegExp('*.{csv')).toThrow('has no closing "}"');
	});
});

describe('settle: the stability check', () => {
	const now = 1_700_000_000_000;
	const rule = { finishedAfterMs: 0, unchangedForMs: 10_000 };

	it('a file counts as finished once listings at least "unchangedForSec" apart saw the same size and time', () => {
		// Poll 1: first seen, still uploading.
		const first = settle([file('/in/a.csv', 10, now - 1000)], {}, now, rule);
		expect(first.finished).toEqual([]);
		expect(first.uploading.map((f) => f.path)).toEqual(['/in/a.csv']);
		expect(first.memory).toEqual({ '/in/a.csv': `10:${now - 1000}@${now}` });
		// Poll 2: it grew, still uploading; the wait starts again.
		const second = settle([file('/in/a.csv', 20, now)], first.memory, now + 10_000, rule);
		expect(second.finished).toEqual([]);
		// Poll 3, 5 s later: unchanged, but not for 10 s yet.
		const third = settle([file('/in/a.csv', 20, now)], second.memory, now + 15_000, rule);
		expect(third.finished).toEqual([]);
		expect(third.memory).toEqual(second.memory);
		// Poll 4: unchanged since poll 2, 10 s ago: finished.
		const fourth = settle([file('/in/a.csv', 20, now)], third.memory, now + 20_000, rule);
		expect(fourth.finished.map((f) => f.path)).toEqual(['/in/a.csv']);
		// Poll 5: still unchanged: still finished (the memory keeps it).
		const fifth = settle([file('/in/a.csv', 20, now)], fourth.memory, now + 25_000, rule);
		expect(fifth.finished.map((f) => f.path)).toEqual(['/in/a.csv']);
	});

	it('polls "unchangedForSec" apart whose listings come a little less apart still settle at the next poll', () => {
		const first = settle([file('/in/a.csv', 10, now - 1000)], {}, now, rule);
		expect(
			settle([file('/in/a.csv', 10, now - 1000)], first.memory, now + 9_950, rule).finished,
		).toHaveLength(1);
		expect(
			settle([file('/in/a.csv', 10, now - 1000)], first.memory, now + 8_000, rule).finished,
		).toEqual([]);
	});

	it('unchangedForSec 0: any earlier listing that saw the same version will do', () => {
		const zero = { finishedAfterMs: 0, unchangedForMs: 0 };
		const first = settle([file('/in/a.csv', 10, now)], {}, now, zero);
		expect(first.finished).toEqual([]);
		expect(settle([file('/in/a.csv', 10, now)], first.memory, now, zero).finished).toHaveLength(1);
	});

	it('a time change alone (same size, rewritten) makes a file wait again', () => {
		const seen = { '/in/a.csv': `${fileVersion({ size: 20, mtimeMs: now })}@${now - 60_000}` };
		const replaced = settle([file('/in/a.csv', 20, now + 1000)], seen, now + 5000, rule);
		expect(replaced.finished).toEqual([]);
		expect(replaced.memory).toEqual({ '/in/a.csv': `20:${now + 1000}@${now + 5000}` });
	});

	it('an entry kept without a time (an older version of this package) is seen afresh', () => {
		const settled = settle([file('/in/a.csv', 20, now)], { '/in/a.csv': `20:${now}` }, now, rule);
		expect(settled.finished).toEqual([]);
		expect(settled.memory).toEqual({ '/in/a.csv': `20:${now}@${now}` });
	});

	it('with an age, a file older than it is finished at once and not remembered', () => {
		const settled = settle(
			[file('/in/old.csv', 5, now - 120_000), file('/in/new.csv', 5, now - 1000)],
			{},
			now,
			{ finishedAfterMs: 60_000, unchangedForMs: 10_000 },
		);
		expect(settled.finished.map((f) => f.path)).toEqual(['/in/old.csv']);
		expect(settled.uploading.map((f) => f.path)).toEqual(['/in/new.csv']);
		expect(settled.memory).toEqual({ '/in/new.csv': `5:${now - 1000}@${now}` });
	});

	it('a file gone since the previous poll is forgotten; finished files come oldest first', () => {
		const before = now - 60_000;
		const seen = {
			'/in/gone.csv': `1:1@${before}`,
			'/in/b.csv': `1:${now - 10}@${before}`,
			'/in/a.csv': `1:${now - 10}@${before}`,
			'/in/c.csv': `1:${now - 20}@${before}`,
		};
		const settled = settle(
			[
				file('/in/b.csv', 1, now - 10),
				file('/in/a.csv', 1, now - 10),
				file('/in/c.csv', 1, now - 20),
			],
			seen,
			now,
			rule,
		);
		expect(settled.finished.map((f) => f.path)).toEqual(['/in/c.csv', '/in/a.csv', '/in/b.csv']);
		expect(Object.keys(settled.memory).sort()).toEqual(['/in/a.csv', '/in/b.csv', '/in/c.csv']);
	});
});

describe('file identity', () => {
	it('an item has path, name, size, time and a version of size and time', () => {
		expect(toRemoteFile(file('/in/sub/a.csv', 42, Date.UTC(2026, 0, 2, 3, 4, 5)))).toEqual({
			path: '/in/sub/a.csv',
			name: 'a.csv',
			size: 42,
			modifiedAt: '2026-01-02T03:04:05.000Z',
			version: `42:${Date.UTC(2026, 0, 2, 3, 4, 5)}`,
		});
	});
});

describe('arguments', () => {
	it('list: folder required; recursive, pattern, age default to off, any name, none', () => {
		const parsed = listArgs({ folder: '/in' });
		expect(parsed).toMatchObject({
			folder: '/in',
			recursive: false,
			finishedAfterMs: 0,
			unchangedForMs: 60_000,
		});
		expect(parsed.pattern.test('anything')).toBe(true);
		expect(listArgs({ folder: '/in', finishedAfterSec: '90' }).finishedAfterMs).toBe(90_000);
		expect(listArgs({ folder: '/in', unchangedForSec: 0 }).unchangedForMs).toBe(0);
	});

	it.each([
		[{}, 'Invalid value (none) for "«with»": "folder" must be a path on the server'],
		[{ folder: '/in', pattern: '*.{csv' }, '"pattern" is not a valid glob: "{" has no closing "}"'],
		[
			{ folder: '/in', recursive: 'yes' },
			'Invalid value "yes" for "«with»": "recursive" must be true or false',
		],
		[
			{ folder: '/in', finishedAfterSec: -1 },
			'Invalid value -1 for "«with»": "finishedAfterSec" must be',
		],
		[
			{ folder: '/in', unchangedForSec: -5 },
			'Invalid value -5 for "«with»": "unchangedForSec" must be',
		],
		[
			{ folder: '/in', finishedAfterSec: 'soon' },
			'Invalid value "soon" for "«with»": "finishedAfterSec"',
		],
	])('list refuses %j, naming the argument', (args, message) => {
		expect(() => listArgs(args)).toThrow(ConfigError);
		expect(() => listArgs(args)).toThrow(message);
	});

	it('download: a path and a size limit of 10 MiB unless set, at most 1 GiB', () => {
		expect(downloadArgs({ path: '/in/a.csv' })).toEqual({
			path: '/in/a.csv',
			maxBytes: 10_485_760,
		});
		expect(() => downloadArgs({ path: '/in/a.csv', maxBytes: 0 })).toThrow(
			'Invalid value 0 for "«with»": "maxBytes" must be a whole number from 1 to 1073741824',
		);
	});

	it('move: one path or a list, a folder, create on by default', () => {
		expect(moveArgs({ path: ['/in/a', '/in/b', '/in/a'], toFolder: '/in/processed' })).toEqual({
			paths: ['/in/a', '/in/b'],
			toFolder: '/in/processed',
			create: true,
		});
		expect(() => moveArgs({ path: '/in/a' })).toThrow('"toFolder" must be a path on the server');
		expect(() => moveArgs({ path: [], toFolder: '/p' })).toThrow('"path" must be a file path');
	});
});
