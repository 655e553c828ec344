import { ConfigError } from '../configError';
import {
	downloadArgs,
	fileVersion,
	globToRegExp,
	listArgs,
	type ListedFile,
	moveArgs,
	settle,
	toSftpFile,
} from './sftpFiles';

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

	it('a file counts as finished only when the previous poll saw the same size and time', () => {
		// Poll 1: first seen, still uploading.
		const first = settle([file('/in/a.csv', 10, now - 1000)], {}, now, 0);
		expect(first.finished).toEqual([]);
		expect(first.uploading.map((f) => f.path)).toEqual(['/in/a.csv']);
		// Poll 2: it grew, still uploading.
		const second = settle([file('/in/a.csv', 20, now)], first.memory, now + 5000, 0);
		expect(second.finished).toEqual([]);
		// Poll 3: unchanged since poll 2: finished.
		const third = settle([file('/in/a.csv', 20, now)], second.memory, now + 10_000, 0);
		expect(third.finished.map((f) => f.path)).toEqual(['/in/a.csv']);
		// Poll 4: still unchanged: still finished (the memory keeps it).
		const fourth = settle([file('/in/a.csv', 20, now)], third.memory, now + 15_000, 0);
		expect(fourth.finished.map((f) => f.path)).toEqual(['/in/a.csv']);
	});

	it('a time change alone (same size, rewritten) makes a file wait again', () => {
		const seen = { '/in/a.csv': fileVersion({ size: 20, mtimeMs: now }) };
		const replaced = settle([file('/in/a.csv', 20, now + 1000)], seen, now + 5000, 0);
		expect(replaced.finished).toEqual([]);
		expect(replaced.memory).toEqual({ '/in/a.csv': `20:${now + 1000}` });
	});

	it('with an age, a file older than it is finished at once and not remembered', () => {
		const settled = settle(
			[file('/in/old.csv', 5, now - 120_000), file('/in/new.csv', 5, now - 1000)],
			{},
			now,
			60_000,
		);
		expect(settled.finished.map((f) => f.path)).toEqual(['/in/old.csv']);
		expect(settled.uploading.map((f) => f.path)).toEqual(['/in/new.csv']);
		expect(settled.memory).toEqual({ '/in/new.csv': `5:${now - 1000}` });
	});

	it('a file gone since the previous poll is forgotten; finished files come oldest first', () => {
		const seen = {
			'/in/gone.csv': '1:1',
			'/in/b.csv': `1:${now - 10}`,
			'/in/a.csv': `1:${now - 10}`,
			'/in/c.csv': `1:${now - 20}`,
		};
		const settled = settle(
			[
				file('/in/b.csv', 1, now - 10),
				file('/in/a.csv', 1, now - 10),
				file('/in/c.csv', 1, now - 20),
			],
			seen,
			now,
			0,
		);
		expect(settled.finished.map((f) => f.path)).toEqual(['/in/c.csv', '/in/a.csv', '/in/b.csv']);
		expect(Object.keys(settled.memory).sort()).toEqual(['/in/a.csv', '/in/b.csv', '/in/c.csv']);
	});
});

describe('file identity', () => {
	it('an item has path, name, size, time and a version of size and time', () => {
		expect(toSftpFile(file('/in/sub/a.csv', 42, Date.UTC(2026, 0, 2, 3, 4, 5)))).toEqual({
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
		expect(parsed).toMatchObject({ folder: '/in', recursive: false, finishedAfterMs: 0 });
		expect(parsed.pattern.test('anything')).toBe(true);
		expect(listArgs({ folder: '/in', finishedAfterSec: '90' }).finishedAfterMs).toBe(90_000);
	});

	it.each([
		[{}, 'Invalid value (none) for "With": "folder" must be a path on the server'],
		[{ folder: '/in', pattern: '*.{csv' }, '"pattern" is not a valid glob: "{" has no closing "}"'],
		[
			{ folder: '/in', recursive: 'yes' },
			'Invalid value "yes" for "With": "recursive" must be true or false',
		],
		[
			{ folder: '/in', finishedAfterSec: -1 },
			'Invalid value -1 for "With": "finishedAfterSec" must be',
		],
		[
			{ folder: '/in', finishedAfterSec: 'soon' },
			'Invalid value "soon" for "With": "finishedAfterSec"',
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
			'Invalid value 0 for "With": "maxBytes" must be a whole number from 1 to 1073741824',
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
