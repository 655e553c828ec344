import type { RetryPolicy } from '../retryPolicy';
import { MAX_DEDUPLICATION_KEY_CHARS } from './dedupe';
import {
	attemptKey,
	DEAD_LETTER_MAX_KEYS,
	DEAD_LETTERS_MAX,
	DEAD_LETTERS_MAX_BYTES,
	deadLetterMessage,
	RETRY_MAX_WAITING,
	RETRY_WAITING_MAX_BYTES,
	RetryBook,
} from './retries';

const policy: RetryPolicy = {
	maxAttempts: 3,
	firstDelayMs: 60_000,
	factor: 2,
	maxDelayMs: 90_000,
};
const T0 = Date.UTC(2026, 0, 1);

function bookOf(p: RetryPolicy | undefined = policy) {
	return new RetryBook<{ id: string }>(undefined, p);
}

describe('attemptKey', () => {
	it("is the first run's key and the attempt, fitting n8n's column", () => {
		expect(attemptKey('poll:w:n:abc:INC-1', 2)).toBe('poll:w:n:abc:INC-1/attempt2');
		expect(attemptKey('poll:w:n:abc:INC-1', 2, 1)).toBe('poll:w:n:abc:INC-1/attempt2.1');
		const long = `poll:w:n:abc:${'x'.repeat(300)}`.slice(0, MAX_DEDUPLICATION_KEY_CHARS);
		const key = attemptKey(long, 3);
		expect(key).toHaveLength(MAX_DEDUPLICATION_KEY_CHARS);
		expect(key.startsWith('poll:w:n:abc:xxx')).toBe(true);
		expect(key.endsWith('/attempt3')).toBe(true);
	});
});

describe('RetryBook', () => {
	it('starts a failed item again after its backoff, under a key per attempt, and dead-letters it at Max Attempts', () => {
		const book = bookOf();
		expect(book.failed('k', { keys: ['A'], items: [{ id: 'A' }] }, 'down', T0)).toEqual({
			kind: 'retry',
			attempt: 2,
			dueAt: T0 + 60_000,
		});
		expect(book.nextDueAt()).toBe(T0 + 60_000);
		expect(book.takeDue(T0 + 59_999, 10)).toEqual([]);
		const [second] = book.takeDue(T0 + 60_000, 10);
		expect(second).toEqual({ key: 'k/attempt2', keys: ['A'], items: [{ id: 'A' }], attempt: 2 });
		expect(book.owns('k/attempt2')).toBe(true);
		// In flight: not due again, not taken twice.
		expect(book.nextDueAt()).toBeUndefined();
		expect(book.takeDue(T0 + 1e9, 10)).toEqual([]);

		expect(
			book.failed('k/attempt2', { keys: ['A'], items: [] }, 'still down', T0 + 61_000),
		).toEqual({ kind: 'retry', attempt: 3, dueAt: T0 + 61_000 + 90_000 });
		const [third] = book.takeDue(T0 + 151_000, 10);
		expect(third.key).toBe('k/attempt3');
		const outcome = book.failed('k/attempt3', { keys: ['A'], items: [] }, 'gone', T0 + 152_000);
		expect(outcome).toEqual({
			kind: 'dead',
			letter: { key: 'k', keys: ['A'], attempts: 3, lastError: 'gone', at: T0 + 152_000 },
		});
		expect(book.owns('k/attempt3')).toBe(false);
		expect(book.waitingItems()).toEqual([]);
		expect(book.deadLetters()).toHaveLength(1);
		expect(deadLetterMessage(book.deadLetters()[0])).toBe(
			'Dead letter: all 3 runs of item "A" failed (key k); last error: gone',
		);
	});

	it('forgets an item whose attempt ended without failing', () => {
		const book = bookOf();
		book.failed('k', { keys: ['A'], items: [{ id: 'A' }] }, 'down', T0);
		book.takeDue(T0 + 60_000, 10);
		book.ended('k/attempt2');
		expect(book.saved()).toBeUndefined();
	});

	it('sends an attempt n8n could not create again after its backoff, under a key of its own, counting no attempt', () => {
		const book = bookOf();
		book.failed('k', { keys: ['A'], items: [{ id: 'A' }] }, 'down', T0);
		book.takeDue(T0 + 60_000, 10);
		book.notCreated('k/attempt2', T0 + 60_500);
		expect(book.owns('k/attempt2')).toBe(false);
		expect(book.nextDueAt()).toBe(T0 + 120_500);
		expect(book.takeDue(T0 + 120_500, 10).map(({ key, attempt }) => [key, attempt])).toEqual([
			['k/attempt2.1', 2],
		]);
	});

	it('takes at most `room` attempts at once, oldest failure first', () => {
		const book = bookOf();
		for (const id of ['A', 'B', 'C']) book.failed(id, { keys: [id], items: [{ id }] }, 'x', T0);
		expect(book.takeDue(T0 + 60_000, 2).map(({ keys }) => keys[0])).toEqual(['A', 'B']);
		expect(book.inFlightCount).toBe(2);
		expect(book.takeDue(T0 + 60_000, 1).map(({ keys }) => keys[0])).toEqual(['C']);
	});

	it('survives its saved form: waiting, in flight and dead', () => {
		const book = bookOf();
		book.failed('a', { keys: ['A'], items: [{ id: 'A' }] }, 'x', T0);
		book.failed('b', { keys: ['B'], items: [{ id: 'B' }] }, 'x', T0 + 1);
		book.takeDue(T0 + 60_000, 1);
		const dead = bookOf({ ...policy, maxAttempts: 1 });
		dead.failed('c', { keys: ['C'], items: [{ id: 'C' }] }, 'x', T0);
		const restored = new RetryBook(
			JSON.parse(JSON.stringify({ ...book.saved(), dead: dead.saved()?.dead })),
			policy,
		);
		expect(restored.owns('a/attempt2')).toBe(true);
		expect(restored.emittedBefore()).toEqual([
			{ key: 'a/attempt2', keys: ['A'], items: [{ id: 'A' }], attempt: 2 },
		]);
		expect(restored.nextDueAt()).toBe(T0 + 60_001);
		expect(restored.deadLetters().map((letter) => letter.keys)).toEqual([['C']]);
	});

	it('with Leave It Failed, a failure of an attempt still waiting is a dead letter', () => {
		const book = bookOf();
		book.failed('k', { keys: ['A'], items: [{ id: 'A' }] }, 'down', T0);
		const left = new RetryBook(book.saved(), undefined);
		left.takeDue(T0 + 60_000, 10);
		expect(left.failed('k/attempt2', { keys: ['A'], items: [] }, 'x', T0).kind).toBe('dead');
	});

	it('lets Start Again take back dead letters and waiting items it names, not attempts in flight', () => {
		const book = bookOf({ ...policy, maxAttempts: 2 });
		book.failed('a', { keys: ['A'], items: [{ id: 'A' }] }, 'x', T0);
		book.failed('b', { keys: ['B'], items: [{ id: 'B' }] }, 'x', T0);
		book.failed('c', { keys: ['C'], items: [{ id: 'C' }] }, 'x', T0);
		book.takeDue(T0 + 60_000, 1); // A in flight
		book.failed('b', { keys: ['B'], items: [] }, 'x', T0); // B dead (2 of 2)
		expect(book.takeBack(['A', 'B', 'C', 'Z'])).toBe(2);
		expect(book.deadLetters()).toEqual([]);
		expect(book.waitingItems().map(({ keys }) => keys)).toEqual([['A']]);
	});

	it(`holds at most ${RETRY_MAX_WAITING} waiting items: the next failure is a dead letter saying why`, () => {
		const book = bookOf();
		for (let i = 0; i < RETRY_MAX_WAITING; i++)
			expect(book.failed(`k${i}`, { keys: [i], items: [{ id: `${i}` }] }, 'x', T0).kind).toBe(
				'retry',
			);
		const outcome = book.failed('over', { keys: ['over'], items: [{ id: 'over' }] }, 'x', T0);
		expect(outcome.kind === 'dead' && outcome.letter.note).toBe(
			`not retried: ${RETRY_MAX_WAITING} items already wait for an attempt`,
		);
	});

	it(`holds at most ${RETRY_WAITING_MAX_BYTES} bytes of waiting entries, their keys and errors counted with their items`, () => {
		const book = bookOf();
		const big = { id: 'x'.repeat(RETRY_WAITING_MAX_BYTES / 2) };
		expect(book.failed('a', { keys: ['A'], items: [big] }, 'x', T0).kind).toBe('retry');
		const outcome = book.failed('b', { keys: ['B'], items: [big] }, 'x', T0);
		expect(outcome.kind === 'dead' && outcome.letter.note).toMatch(/more than 1048576 bytes/);
		// Small items, many keys: a batch run's keys weigh as much as items.
		const keys = Array.from({ length: 50_000 }, (_, i) => `key-${i}`);
		const batch = book.failed('c', { keys, items: [{ id: 'c' }] }, 'x', T0);
		expect(batch.kind === 'dead' && batch.letter.note).toMatch(/more than 1048576 bytes/);
	});

	it('says what it adds to the static data (`bytes`): at least its JSON, within its declared bounds, back to 0 when empty', () => {
		const book = bookOf({ ...policy, maxAttempts: 2 });
		const item = { id: 'y'.repeat(4_000) };
		for (let i = 0; i < RETRY_MAX_WAITING + DEAD_LETTERS_MAX + 50; i++)
			book.failed(`k${i}`, { keys: [`K${i}`], items: [item] }, 'e'.repeat(600), T0);
		const due = book.takeDue(T0 + policy.maxDelayMs, RETRY_MAX_WAITING);
		for (const run of due.slice(0, DEAD_LETTERS_MAX + 50)) book.failed(run.key, run, 'e', T0);
		const json = JSON.stringify(book.saved()).length;
		// Loaded from the state, it counts the same way.
		for (const counted of [book, new RetryBook(book.saved(), policy)]) {
			expect(counted.bytes).toBeGreaterThanOrEqual(json);
			expect(counted.bytes).toBeLessThanOrEqual(RETRY_WAITING_MAX_BYTES + DEAD_LETTERS_MAX_BYTES);
		}
		for (const run of due.slice(DEAD_LETTERS_MAX + 50)) book.ended(run.key);
		book.takeBack(book.deadLetters().flatMap((letter) => letter.keys));
		expect(book.saved()).toBeUndefined();
		expect(book.bytes).toBe(0);
	});

	it(`keeps a dead letter's first ${DEAD_LETTER_MAX_KEYS} item keys and the count, and at most ${DEAD_LETTERS_MAX_BYTES} bytes of dead letters, the oldest dropped`, () => {
		const book = bookOf({ ...policy, maxAttempts: 1 });
		const keys = Array.from({ length: 500 }, (_, i) => `${'k'.repeat(100)}-${i}`);
		for (let i = 0; i < 30; i++) book.failed(`b${i}`, { keys, items: [] }, 'x', T0 + i);
		const letters = book.deadLetters();
		expect(letters[0]).toMatchObject({ key: 'b29', itemCount: 500 });
		expect(letters[0].keys).toEqual(keys.slice(0, DEAD_LETTER_MAX_KEYS));
		expect(JSON.stringify(letters).length).toBeLessThanOrEqual(DEAD_LETTERS_MAX_BYTES);
		expect(letters.length).toBeLessThan(30);
		expect(book.bytes).toBe(JSON.stringify(letters).length - (letters.length - 1) - 2);
		expect(deadLetterMessage(letters[0])).toMatch(/^Dead letter: its run of 500 items \(/);
	});

	it(`lists the newest ${DEAD_LETTERS_MAX} dead letters, and cuts long errors`, () => {
		const book = bookOf({ ...policy, maxAttempts: 1 });
		for (let i = 0; i < DEAD_LETTERS_MAX + 5; i++)
			book.failed(`k${i}`, { keys: [i], items: [] }, 'e'.repeat(2_000), T0 + i);
		const letters = book.deadLetters();
		expect(letters).toHaveLength(DEAD_LETTERS_MAX);
		expect(letters[0].keys).toEqual([DEAD_LETTERS_MAX + 4]);
		expect(letters[0].lastError).toHaveLength(500);
	});

	it('dead-letters a failed run whose items it was not given', () => {
		const outcome = bookOf().failed('k', { keys: ['A'], items: [] }, 'x', T0);
		expect(outcome.kind === 'dead' && outcome.letter.note).toMatch(/items were not at hand/);
	});
});
