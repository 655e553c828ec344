import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import type { HttpRequest, HttpResponse } from '../connectors/types';
import { postWithRetries } from './dispatch';
import {
	claimKeptCallbacks,
	deliverClaimed,
	keepCallback,
	KEPT_CALLBACK_MS,
	KEPT_KEY_PREFIX,
	type KeepingPlace,
	type KeptCallback,
	MAX_KEPT_BODY_BYTES,
	MAX_KEPT_CALLBACKS,
	resumedBy,
} from './earlyCallbacks';

/**
 * An in-memory KeepingPlace that, like a database, lets concurrent callers interleave between
 * statements (each one awaits a turn), and removes a row for one taker only.
 */
class MemoryPlace implements KeepingPlace {
	readonly rows = new Map<string, string>();
	private async turn() {
		await new Promise<void>((resolve) => setImmediate(resolve));
	}
	async keys(prefix: string) {
		await this.turn();
		return [...this.rows.keys()].filter((key) => key.startsWith(prefix));
	}
	async add(key: string, value: string) {
		await this.turn();
		if (this.rows.has(key)) throw new Error(`duplicate key ${key}`);
		this.rows.set(key, value);
	}
	async take(key: string) {
		const value = this.rows.get(key);
		await this.turn();
		return value !== undefined && this.rows.delete(key) ? value : undefined;
	}
	async remove(keys: string[]) {
		await this.turn();
		for (const key of keys) this.rows.delete(key);
	}
}

const callback = (status: string): KeptCallback => ({
	headers: { 'content-type': 'application/json' },
	body: JSON.stringify({ correlationId: 'env-1', status }),
	query: {},
});

describe('keeping early callbacks for the wait that claims them', () => {
	let clock: FakeClock;
	let place: MemoryPlace;

	beforeEach(() => {
		clock = new FakeClock();
		place = new MemoryPlace();
	});

	test('a kept callback is claimed by the wait for its match, once, with what was kept', async () => {
		const kept = await keepCallback(place, 'cred1:env-1', callback('signed'), clock.now());
		expect(kept).toEqual({
			kept: true,
			key: expect.stringMatching(/^durableTriggers\.keptCallback\./),
			keptUntilMs: clock.now() + KEPT_CALLBACK_MS,
		});
		expect(await claimKeptCallbacks(place, 'cred1:other', clock.now())).toEqual([]);
		expect(await claimKeptCallbacks(place, 'cred2:env-1', clock.now())).toEqual([]);
		const claimed = await claimKeptCallbacks(place, 'cred1:env-1', clock.now());
		expect(claimed.map((c) => c.callback)).toEqual([callback('signed')]);
		expect(await claimKeptCallbacks(place, 'cred1:env-1', clock.now())).toEqual([]);
		expect(place.rows.size).toBe(0);
	});

	test('several callbacks for one id are claimed oldest first', async () => {
		await keepCallback(place, 'cred1:env-1', callback('viewed'), clock.now());
		await clock.advance(5);
		await keepCallback(place, 'cred1:env-1', callback('signed'), clock.now());
		const claimed = await claimKeptCallbacks(place, 'cred1:env-1', clock.now());
		expect(claimed.map((c) => JSON.parse(c.callback.body).status)).toEqual(['viewed', 'signed']);
	});

	test('two waits claiming at once: each kept callback goes to exactly one of them', async () => {
		for (let i = 0; i < 20; i++) {
			await keepCallback(place, 'cred1:env-1', callback(`s${i}`), clock.now());
			await clock.advance(1);
		}
		const [a, b] = await Promise.all([
			claimKeptCallbacks(place, 'cred1:env-1', clock.now()),
			claimKeptCallbacks(place, 'cred1:env-1', clock.now()),
		]);
		const keys = [...a, ...b].map((c) => c.key);
		expect(keys).toHaveLength(20);
		expect(new Set(keys).size).toBe(20);
	});

	test('a kept callback expires after KEPT_CALLBACK_MS: no wait claims it, and the next keep drops it', async () => {
		await keepCallback(place, 'cred1:env-1', callback('signed'), clock.now());
		await clock.advance(KEPT_CALLBACK_MS - 1);
		expect(await claimKeptCallbacks(place, 'cred1:other', clock.now())).toEqual([]);
		await keepCallback(place, 'cred1:env-2', callback('signed'), clock.now());
		await clock.advance(1);
		expect(await claimKeptCallbacks(place, 'cred1:env-1', clock.now())).toEqual([]);
		expect(place.rows.size).toBe(2);
		await keepCallback(place, 'cred1:env-3', callback('signed'), clock.now());
		expect(place.rows.size).toBe(2); // env-1's dropped; env-2's (1 ms younger) and env-3's kept
	});

	test(`at most ${MAX_KEPT_CALLBACKS} are kept: one more is refused until one expires`, async () => {
		for (let i = 0; i < MAX_KEPT_CALLBACKS; i++)
			place.rows.set(
				`${KEPT_KEY_PREFIX}${'a'.repeat(40)}.${String(clock.now()).padStart(15, '0')}.${i.toString(16)}`,
				JSON.stringify(callback('viewed')),
			);
		await clock.advance(1);
		expect(await keepCallback(place, 'cred1:env-1', callback('signed'), clock.now())).toEqual({
			kept: false,
			reason: `${MAX_KEPT_CALLBACKS} callbacks are kept already`,
		});
		await clock.advance(KEPT_CALLBACK_MS - 1);
		expect(await keepCallback(place, 'cred1:env-1', callback('signed'), clock.now())).toMatchObject(
			{ kept: true },
		);
		expect(place.rows.size).toBe(1);
	});

	test('callbacks kept at the same moment never exceed the bound', async () => {
		for (let i = 0; i < MAX_KEPT_CALLBACKS - 1; i++)
			place.rows.set(
				`${KEPT_KEY_PREFIX}${'a'.repeat(40)}.${String(clock.now()).padStart(15, '0')}.${i.toString(16)}`,
				JSON.stringify(callback('viewed')),
			);
		const verdicts = await Promise.all(
			[1, 2, 3].map((i) => keepCallback(place, `cred1:env-${i}`, callback('x'), clock.now())),
		);
		expect(place.rows.size).toBeLessThanOrEqual(MAX_KEPT_CALLBACKS);
		expect(verdicts.filter((v) => v.kept).length).toBe(place.rows.size - (MAX_KEPT_CALLBACKS - 1));
	});

	test(`a body over ${MAX_KEPT_BODY_BYTES} bytes is not kept`, async () => {
		const big = { ...callback('signed'), body: 'x'.repeat(MAX_KEPT_BODY_BYTES + 1) };
		expect(await keepCallback(place, 'cred1:env-1', big, clock.now())).toEqual({
			kept: false,
			reason: `its body is over ${MAX_KEPT_BODY_BYTES} bytes`,
		});
		expect(place.rows.size).toBe(0);
	});

	test("keys fit n8n's 255 characters and do not show the partner's id", async () => {
		const id = 'é'.repeat(255);
		const kept = await keepCallback(place, `cred1:${id}`, callback('signed'), clock.now());
		const key = kept.kept ? kept.key : '';
		expect(key.length).toBeLessThanOrEqual(255);
		expect(key).not.toContain('é');
		expect(await claimKeptCallbacks(place, `cred1:${id}`, clock.now())).toHaveLength(1);
	});

	test('a row that is not a kept callback is claimed and dropped', async () => {
		const kept = await keepCallback(place, 'cred1:env-1', callback('signed'), clock.now());
		place.rows.set(kept.kept ? kept.key : '', '{"not":"a callback"}');
		expect(await claimKeptCallbacks(place, 'cred1:env-1', clock.now())).toEqual([]);
		expect(place.rows.size).toBe(0);
	});
});

describe('handing claimed callbacks to their waiting run', () => {
	const claimed = ['viewed', 'signed', 'signed'].map((status, i) => ({
		key: `k${i}`,
		keptAtMs: i,
		callback: callback(status),
	}));

	test('in order, until one resumes the run; the rest are dropped', async () => {
		const sent: string[] = [];
		const deliveries = await deliverClaimed(claimed, async (kept) => {
			const { status } = JSON.parse(kept.body) as { status: string };
			sent.push(status);
			return status === 'viewed'
				? { status: 202, body: '{"resumed":false,"waiting":true,"reason":"…"}' }
				: { status: 200, body: '{"received":true}' };
		});
		expect(sent).toEqual(['viewed', 'signed']);
		expect(deliveries).toEqual([
			{ key: 'k0', dropped: false, answer: expect.objectContaining({ status: 202 }) },
			{ key: 'k1', dropped: false, answer: expect.objectContaining({ status: 200 }) },
			{ key: 'k2', dropped: true },
		]);
	});

	test('one that could not be sent or was refused does not stop the next', async () => {
		const answers = [undefined, { status: 403, body: '{}' }, { status: 200, body: '' }];
		const deliveries = await deliverClaimed(claimed, async () => answers.shift());
		expect(deliveries.map((d) => d.dropped)).toEqual([false, false, false]);
	});

	test("resumedBy: a 2xx other than the Resume Condition's `resumed: false`", () => {
		expect(resumedBy({ status: 200, body: '{"received":true}' })).toBe(true);
		expect(resumedBy({ status: 201, body: 'ok' })).toBe(true);
		expect(resumedBy({ status: 202, body: '{"resumed":false,"waiting":true}' })).toBe(false);
		expect(resumedBy({ status: 409, body: 'The execution "7" is running already.' })).toBe(false);
	});
});

describe('postWithRetries', () => {
	test("retries n8n's 409 running already and a transport failure, after 0.5 s and 1 s, until an answer that is final", async () => {
		const clock = new FakeClock();
		const attempts: Array<{ at: number; attempt: number }> = [];
		const answers: Array<HttpResponse | Error> = [
			{ url: 'u', status: 409, headers: {}, body: 'The execution "7" is running already.' },
			new Error('ECONNRESET'),
			{ url: 'u', status: 200, headers: {}, body: '{}' },
		];
		const http = async (request: HttpRequest) => {
			attempts.push({ at: clock.now(), attempt: Number(request.headers?.attempt) });
			const next = answers.shift()!;
			if (next instanceof Error) throw next;
			return next;
		};
		const done = postWithRetries(
			http,
			(attempt) => ({ method: 'POST', url: 'u', headers: { attempt: String(attempt) } }),
			clock,
		);
		await flushPromises();
		await clock.advance(1_500);
		await expect(done).resolves.toMatchObject({ status: 200 });
		const start = Date.UTC(2026, 0, 1);
		expect(attempts).toEqual([
			{ at: start, attempt: 0 },
			{ at: start + 500, attempt: 1 },
			{ at: start + 1_500, attempt: 2 },
		]);
	});
});
