import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import type { HttpRequest, HttpResponse } from '../connectors/types';
import { postWithRetries } from './dispatch';
import {
	claimAtFixedUrl,
	claimKeptCallback,
	claimKeptCallbacks,
	deliverClaimed,
	keepCallback,
	KEPT_CALLBACK_MS,
	KEPT_LEASE_MS,
	type KeepingPlace,
	MAX_KEPT_BODY_BYTES,
	REDELIVER_AFTER_MS,
	resumedBy,
	settleClaim,
	sweepKept,
	sweepSeen,
} from './earlyCallbacks';
import type { PartnerRequest } from './fixedUrl';

/**
 * An in-memory KeepingPlace that, like a database, lets concurrent callers interleave between
 * statements (each one awaits a turn), adds a key for one adder only and removes a row for one taker only.
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
	async read(key: string) {
		await this.turn();
		return this.rows.get(key);
	}
	async add(key: string, value: string) {
		await this.turn();
		if (this.rows.has(key)) return false;
		this.rows.set(key, value);
		return true;
	}
	async take(key: string, value?: string) {
		await this.turn();
		if (!this.rows.has(key) || (value !== undefined && this.rows.get(key) !== value)) return false;
		return this.rows.delete(key);
	}
	async remove(keys: string[]) {
		await this.turn();
		for (const key of keys) this.rows.delete(key);
	}
	/** The kept callbacks (not leases, not the replay memory). */
	kept(): string[] {
		return [...this.rows.keys()].filter((key) => key.startsWith('durableTriggers.keptCallback.'));
	}
}

const request = (status: string, id = 'env-1'): PartnerRequest => ({
	headers: { 'content-type': 'application/json' },
	body: JSON.stringify({ correlationId: id, status }),
	query: {},
});
const A1 = { credentialId: 'credA', correlationId: 'env-1' };
const statusOf = (claimed: { request: PartnerRequest }) =>
	(JSON.parse(claimed.request.body) as { status: string }).status;

describe('keeping early callbacks for the wait that claims them', () => {
	let clock: FakeClock;
	let place: MemoryPlace;

	beforeEach(() => {
		clock = new FakeClock();
		place = new MemoryPlace();
	});

	test('a kept callback is claimed by the wait for its credential and id, with what was kept; its row stays until the delivery is settled', async () => {
		const kept = await keepCallback(place, A1, request('signed'), clock.now());
		expect(kept).toEqual({
			kept: true,
			key: expect.stringMatching(/^durableTriggers\.keptCallback\./),
			keptUntilMs: clock.now() + KEPT_CALLBACK_MS,
			duplicate: false,
		});
		expect(await claimKeptCallbacks(place, { ...A1, correlationId: 'other' }, clock.now())).toEqual(
			[],
		);
		expect(await claimKeptCallbacks(place, { ...A1, credentialId: 'credB' }, clock.now())).toEqual(
			[],
		);
		const claimed = await claimKeptCallbacks(place, A1, clock.now());
		expect(claimed.map((c) => c.request)).toEqual([request('signed')]);
		expect(claimed[0]).toMatchObject(A1);
		// Claimed, not removed: another claimer finds it leased.
		expect(place.kept()).toHaveLength(1);
		expect(await claimKeptCallbacks(place, A1, clock.now())).toEqual([]);
		await settleClaim(place, claimed[0], 'done', clock.now());
		expect(place.rows.size).toBe(0);
	});

	test('several callbacks for one id are claimed oldest first', async () => {
		await keepCallback(place, A1, request('viewed'), clock.now());
		await clock.advance(5);
		await keepCallback(place, A1, request('signed'), clock.now());
		const claimed = await claimKeptCallbacks(place, A1, clock.now());
		expect(claimed.map(statusOf)).toEqual(['viewed', 'signed']);
	});

	test('two waits claiming at once: each kept callback goes to exactly one of them', async () => {
		for (let i = 0; i < 20; i++) {
			await keepCallback(place, A1, request(`s${i}`), clock.now());
			await clock.advance(1);
		}
		const [a, b] = await Promise.all([
			claimKeptCallbacks(place, A1, clock.now()),
			claimKeptCallbacks(place, A1, clock.now()),
		]);
		const keys = [...a, ...b].map((c) => c.key);
		expect(keys).toHaveLength(20);
		expect(new Set(keys).size).toBe(20);
	});

	test('a delivery that fails puts the callback back: a sweep hands it on again after REDELIVER_AFTER_MS', async () => {
		await keepCallback(place, A1, request('signed'), clock.now());
		const claimed = await claimKeptCallbacks(place, A1, clock.now());
		const deliveries = await deliverClaimed(
			place,
			claimed,
			async () => ({ status: 503, body: 'n8n is restarting' }),
			() => clock.now(),
		);
		expect(deliveries).toEqual([
			{ key: claimed[0].key, dropped: false, answer: expect.objectContaining({ status: 503 }) },
		]);
		expect(place.kept()).toEqual([claimed[0].key]);
		expect((await sweepKept(place, 'credA', clock.now())).due).toEqual([]);
		await clock.advance(REDELIVER_AFTER_MS);
		expect((await sweepKept(place, 'credA', clock.now())).due).toEqual([claimed[0].key]);
		const again = await claimKeptCallback(place, claimed[0].key, clock.now());
		expect(again && statusOf(again)).toBe('signed');
		await deliverClaimed(
			place,
			[again!],
			async () => ({ status: 200, body: '{}' }),
			() => clock.now(),
		);
		expect(place.rows.size).toBe(0);
	});

	test('a claimer killed between claim and delivery loses nothing: once its lease ends the callback is due and claimable', async () => {
		await keepCallback(place, A1, request('signed'), clock.now());
		const [claimed] = await claimKeptCallbacks(place, A1, clock.now());
		// ... the process dies here: nothing settles the claim.
		await clock.advance(KEPT_LEASE_MS - 1);
		expect(await claimKeptCallbacks(place, A1, clock.now())).toEqual([]);
		expect((await sweepKept(place, 'credA', clock.now())).due).toEqual([]);
		await clock.advance(1);
		expect((await sweepKept(place, 'credA', clock.now())).due).toEqual([claimed.key]);
		expect((await claimKeptCallbacks(place, A1, clock.now())).map(statusOf)).toEqual(['signed']);
	});

	test('expired callbacks are swept without waiting for the next keep, and each is reported once with its credential and id', async () => {
		await keepCallback(place, A1, request('signed'), clock.now());
		await keepCallback(
			place,
			{ ...A1, correlationId: 'env-2' },
			request('signed', 'env-2'),
			clock.now(),
		);
		await clock.advance(KEPT_CALLBACK_MS - 1);
		expect((await sweepKept(place, 'credA', clock.now())).expired).toEqual([]);
		await clock.advance(1);
		expect(await claimKeptCallbacks(place, A1, clock.now())).toEqual([]);
		const [one, two] = await Promise.all([
			sweepKept(place, 'credA', clock.now()),
			sweepKept(place, 'credA', clock.now()),
		]);
		const reported = [...one.expired, ...two.expired].map((e) => e.correlationId).sort();
		expect(reported).toEqual(['env-1', 'env-2']);
		expect(one.expired[0] ?? two.expired[0]).toMatchObject({ credentialId: 'credA' });
		expect(place.rows.size).toBe(0);
	});

	test('the bound is per credential: a partner at its bound gets 503 with Retry-After; another partner is still kept', async () => {
		for (let i = 0; i < 5; i++) {
			const verdict = await keepCallback(
				place,
				{ ...A1, correlationId: `a-${i}` },
				request('x', `a-${i}`),
				clock.now(),
				5,
			);
			expect(verdict).toMatchObject({ kept: true });
			await clock.advance(1_000);
		}
		expect(
			await keepCallback(
				place,
				{ ...A1, correlationId: 'a-5' },
				request('x', 'a-5'),
				clock.now(),
				5,
			),
		).toEqual({
			kept: false,
			status: 503,
			reason: '5 callbacks of this partner are kept already',
			// The oldest (kept 5 s ago) expires in 595 s.
			retryAfterSec: KEPT_CALLBACK_MS / 1000 - 5,
		});
		const b = { credentialId: 'credB', correlationId: 'b-1' };
		expect(await keepCallback(place, b, request('signed', 'b-1'), clock.now(), 5)).toMatchObject({
			kept: true,
		});
		expect((await claimKeptCallbacks(place, b, clock.now())).map(statusOf)).toEqual(['signed']);
	});

	test('callbacks kept at the same moment never exceed the bound', async () => {
		for (let i = 0; i < 4; i++)
			await keepCallback(
				place,
				{ ...A1, correlationId: `a-${i}` },
				request('x', `a-${i}`),
				clock.now(),
				5,
			);
		const verdicts = await Promise.all(
			[5, 6, 7].map((i) =>
				keepCallback(
					place,
					{ ...A1, correlationId: `a-${i}` },
					request('x', `a-${i}`),
					clock.now(),
					5,
				),
			),
		);
		expect(place.kept().length).toBeLessThanOrEqual(5);
		expect(verdicts.filter((v) => v.kept)).toHaveLength(place.kept().length - 4);
	});

	test('copies of one callback keep one row (also sent at once), answered as kept with the same time', async () => {
		const first = await keepCallback(place, A1, request('signed'), clock.now());
		for (let i = 0; i < 19; i++) {
			await clock.advance(1_000);
			expect(await keepCallback(place, A1, request('signed'), clock.now())).toEqual({
				...first,
				duplicate: true,
			});
		}
		const concurrent = await Promise.all(
			[1, 2, 3].map(() => keepCallback(place, A1, request('declined'), clock.now())),
		);
		expect(concurrent.filter((v) => v.kept && !v.duplicate)).toHaveLength(1);
		expect(place.kept()).toHaveLength(2);
	});

	test(`a body over ${MAX_KEPT_BODY_BYTES} bytes is not kept (413)`, async () => {
		const big = { ...request('signed'), body: 'x'.repeat(MAX_KEPT_BODY_BYTES + 1) };
		expect(await keepCallback(place, A1, big, clock.now())).toEqual({
			kept: false,
			status: 413,
			reason: `its body is over ${MAX_KEPT_BODY_BYTES} bytes`,
		});
		expect(place.rows.size).toBe(0);
	});

	test("keys fit n8n's 255 characters and do not show the partner's id", async () => {
		const forWhom = { credentialId: 'c'.repeat(36), correlationId: 'é'.repeat(255) };
		const kept = await keepCallback(place, forWhom, request('signed'), clock.now());
		const key = kept.kept ? kept.key : '';
		expect(key.length).toBeLessThanOrEqual(200);
		expect(key).not.toContain('é');
		expect(await claimKeptCallbacks(place, forWhom, clock.now())).toHaveLength(1);
		expect([...place.rows.keys()].every((each) => each.length <= 255)).toBe(true);
	});

	test('a row that is not a kept callback is claimed and dropped', async () => {
		const kept = await keepCallback(place, A1, request('signed'), clock.now());
		place.rows.set(kept.kept ? kept.key : '', '{"not":"a callback"}');
		expect(await claimKeptCallbacks(place, A1, clock.now())).toEqual([]);
		expect(place.rows.size).toBe(0);
	});
});

describe('handing claimed callbacks to their waiting run', () => {
	let place: MemoryPlace;
	let claimed: Awaited<ReturnType<typeof claimKeptCallbacks>>;
	beforeEach(async () => {
		place = new MemoryPlace();
		for (const [i, status] of ['viewed', 'signed', 'declined'].entries())
			await keepCallback(place, A1, request(status), Date.UTC(2026, 0, 1) + i);
		claimed = await claimKeptCallbacks(place, A1, Date.UTC(2026, 0, 1) + 10);
	});

	test('in order, until one resumes the run; the rest are dropped; every claim settled', async () => {
		const sent: string[] = [];
		const deliveries = await deliverClaimed(
			place,
			claimed,
			async (kept) => {
				const { status } = JSON.parse(kept.body) as { status: string };
				sent.push(status);
				return status === 'viewed'
					? { status: 202, body: '{"resumed":false,"waiting":true,"reason":"…"}' }
					: { status: 200, body: '{"received":true}' };
			},
			() => Date.UTC(2026, 0, 1) + 20,
		);
		expect(sent).toEqual(['viewed', 'signed']);
		expect(deliveries).toEqual([
			{ key: claimed[0].key, dropped: false, answer: expect.objectContaining({ status: 202 }) },
			{ key: claimed[1].key, dropped: false, answer: expect.objectContaining({ status: 200 }) },
			{ key: claimed[2].key, dropped: true },
		]);
		expect(place.rows.size).toBe(0);
	});

	test('one that could not be sent stays kept; one refused for good is removed; neither stops the next', async () => {
		const answers = [undefined, { status: 403, body: '{}' }, { status: 200, body: '' }];
		const deliveries = await deliverClaimed(
			place,
			claimed,
			async () => answers.shift(),
			() => Date.UTC(2026, 0, 1) + 20,
		);
		expect(deliveries.map((d) => d.dropped)).toEqual([false, false, false]);
		expect(place.kept()).toEqual([claimed[0].key]);
	});

	test("resumedBy: a 2xx other than the Resume Condition's `resumed: false`", () => {
		expect(resumedBy({ status: 200, body: '{"received":true}' })).toBe(true);
		expect(resumedBy({ status: 201, body: 'ok' })).toBe(true);
		expect(resumedBy({ status: 202, body: '{"resumed":false,"waiting":true}' })).toBe(false);
		expect(resumedBy({ status: 409, body: 'The execution "7" is running already.' })).toBe(false);
	});
});

describe("the fixed URL's replay memory (claimAtFixedUrl)", () => {
	test('a signed callback goes to one target: a copy for the same passes, a copy for another wait is refused, in any process', async () => {
		const place = new MemoryPlace();
		const until = Date.UTC(2026, 0, 1) + 300_000;
		expect(await claimAtFixedUrl(place, 'credA', 'hmac:1:ab', 'execution 7', until)).toBe(true);
		expect(await claimAtFixedUrl(place, 'credA', 'hmac:1:ab', 'execution 7', until)).toBe(true);
		expect(await claimAtFixedUrl(place, 'credA', 'hmac:1:ab', 'execution 8', until)).toBe(false);
		expect(await claimAtFixedUrl(place, 'credA', 'hmac:1:ab', 'kept', until)).toBe(false);
		// Another partner's callback with the same signature text is another callback.
		expect(await claimAtFixedUrl(place, 'credB', 'hmac:1:ab', 'execution 8', until)).toBe(true);
		// Two presented at once to two waits: one goes.
		const raced = await Promise.all([
			claimAtFixedUrl(place, 'credA', 'sw:msg_1', 'execution 8', until),
			claimAtFixedUrl(place, 'credA', 'sw:msg_1', 'execution 9', until),
		]);
		expect(raced.filter(Boolean)).toHaveLength(1);
		await sweepSeen(place, 'credA', until - 1);
		expect(place.rows.size).toBe(3);
		await sweepSeen(place, 'credA', until);
		expect(place.rows.size).toBe(1);
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
