import { Pagination, type PaginationSettings } from '../connectors/pagination';
import type { HttpRequest, HttpResponse } from '../connectors/types';
import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import { quietOutlet, quietPorts } from '../../test/support/pollPorts';
import {
	PollActivation,
	type PollRunToEmit,
	type PollSource,
	type PollTriggerState,
} from './activation';
import type { FirstPollPolicy } from './dedupe';
import { PollExpressions } from './expressions';
import type { ListOrder } from './paging';
import { loadDedupeStore } from './kinds';
import { answerIsWholeList, OwedItems } from './owed';
import { ARMED_RUNS_MAX } from './runStage';

/**
 * Items owed (paging.ts): a one-item run is stored without its item, so after a crash, a re-publish
 * or a run n8n could not create, the item starts only if the source lists it again. These sources
 * answer exactly what they are asked: `updated_after` (one page), and newest-first pages of 50
 * behind a Link header.
 */

const INTERVAL = 5_000;

/** Tickets 1..n, each updated when added; `updated_after` (ISO) filters, pages go newest first. */
class Tickets {
	private readonly updated: number[] = [];
	/** Ids the source no longer lists. */
	private readonly dropped = new Set<number>();
	/** Links name this generation: expire() makes every link given before answer 410. */
	private linkGeneration = 0;
	/** `updated_after` of each poll's first request. */
	readonly asked: string[] = [];
	requests = 0;

	constructor(
		private readonly clock: FakeClock,
		private readonly pageSize: number,
	) {}

	add(n: number): void {
		for (let i = 0; i < n; i++) this.updated.push(this.clock.now());
	}

	drop(ids: readonly number[]): void {
		for (const id of ids) this.dropped.add(id);
	}

	/** The next links the source gave so far expire (a cursor token's lifetime): 410 Gone. */
	expire(): void {
		this.linkGeneration++;
	}

	/** Page numbers of the requests so far. */
	readonly pagesAsked: number[] = [];

	readonly http = async (request: HttpRequest): Promise<HttpResponse> => {
		this.requests++;
		const url = new URL(request.url);
		const query = { ...Object.fromEntries(url.searchParams), ...request.query } as Record<
			string,
			string
		>;
		const page = Number(query.page ?? 1);
		this.pagesAsked.push(page);
		if (query.g !== undefined && Number(query.g) !== this.linkGeneration)
			return { status: 410, url: url.href, headers: {}, body: '' };
		if (page === 1 && query.updated_after !== undefined) this.asked.push(query.updated_after);
		const after = query.updated_after === undefined ? -Infinity : Date.parse(query.updated_after);
		const ids = this.updated
			.map((time, i) => ({ id: i + 1, time }))
			.filter(({ id, time }) => time > after && !this.dropped.has(id))
			.map(({ id }) => id)
			.reverse();
		const more = page * this.pageSize < ids.length;
		const next = new URL(url);
		next.searchParams.set('page', String(page + 1));
		next.searchParams.set('g', String(this.linkGeneration));
		return {
			status: 200,
			url: url.href,
			headers: {
				'content-type': 'application/json',
				...(more && { link: `<${next.href}>; rel="next"` }),
			},
			body: JSON.stringify({
				tickets: ids.slice((page - 1) * this.pageSize, page * this.pageSize).map((id) => ({ id })),
			}),
		};
	};
}

interface SourceSetup {
	pagination: PaginationSettings;
	listOrder: ListOrder;
	query?: Record<string, string>;
	firstPoll?: FirstPollPolicy;
	pageSize: number;
	/** Remember at Most; 0 or unset: no cap. */
	maxRemembered?: number;
}

const SINCE_LAST_POLL: SourceSetup = {
	pagination: { mode: 'off' },
	listOrder: 'newestFirst',
	query: { updated_after: '{{ $lastPollStartedAt }}' },
	firstPoll: { mode: 'all' },
	pageSize: Infinity,
};
const NEWEST_FIRST_PAGES: SourceSetup = {
	pagination: { mode: 'linkHeader', maxPages: null },
	listOrder: 'newestFirst',
	firstPoll: { mode: 'none' },
	pageSize: 50,
};
/** Issue 44's finding 1: Max Pages 2 over pages of 50, so page 4 is deeper than Max Pages + 1. */
const MAX_PAGES_2: SourceSetup = {
	...NEWEST_FIRST_PAGES,
	pagination: { mode: 'linkHeader', maxPages: 2 },
};

/**
 * n8n as the trigger meets it: runs are created (or refused, their key being taken) when the test
 * says; a crash loses what was emitted and not created, and a new activation reads the last write.
 */
class Harness {
	readonly clock = new FakeClock();
	readonly tickets: Tickets;
	/** Deduplication key → the ids of the run n8n created under it. */
	readonly created = new Map<string, number[]>();
	/** The messages of the failed executions that name items given up (onUnlisted), and Max Pages'. */
	readonly unlisted: string[] = [];
	readonly pageLimits: string[] = [];
	readonly warnings: string[] = [];
	private emitted: PollRunToEmit[] = [];
	/** The ids of every run emitted, in order (a run emitted again after a crash too). */
	readonly emittedIds: number[] = [];
	private stored: PollTriggerState = { v: 1 };
	activation!: PollActivation;

	constructor(private readonly setup: SourceSetup) {
		this.tickets = new Tickets(this.clock, setup.pageSize);
	}

	async activate(startAgain: number[] = [], inFlight: ReadonlySet<string> = new Set()) {
		const { setup, clock } = this;
		const source: PollSource = {
			op: {
				name: 'http.request',
				description: 'unused: paged',
				transport: 'http',
				check: () => undefined,
				run: async () => {
					throw new Error('paged sources fetch through PagedSource');
				},
			},
			args: { url: 'http://tickets.test/t', ...(setup.query && { query: setup.query }) },
			timeoutMs: 1_000,
			paging: {
				pagination: new Pagination(setup.pagination),
				listOrder: setup.listOrder,
				stopAtKnownGround: true,
				firstCursor: '0',
			},
		};
		this.activation = new PollActivation(
			this.stored,
			{
				source,
				dedupe: { kind: 'unique' },
				firstPoll: setup.firstPoll ?? { mode: 'all' },
				maxRemembered: setup.maxRemembered ?? 0,
				maxRunsInFlight: ARMED_RUNS_MAX,
				expressions: new PollExpressions({ items: 'tickets', id: 'id' }),
				oneRunPerItem: true,
				keyPrefix: 'poll:wf:node:',
				clock,
			},
			{ intervalMs: INTERVAL },
		);
		await this.activation.start(
			{
				...quietPorts,
				context: { http: this.tickets.http },
				onUnlisted: (message) => void this.unlisted.push(message),
				onPageLimit: (message) => void this.pageLimits.push(message),
				// n8n holds an execution under a key once it created the run.
				runStatus: async (key) => (this.created.has(key) ? { status: 'success' } : undefined),
				// `this.emitted` is replaced at a crash: the emits go to the one current then.
				outlet: {
					...quietOutlet,
					warn: (line) => void this.warnings.push(line),
					inFlight: (key) => inFlight.has(key),
					write: (state) => (this.stored = structuredClone(state)),
					emit: async (runs) => this.emitting(runs),
					emitTaken: async (take) => this.emitting(take()),
				},
			},
			startAgain,
		);
	}

	private emitting(runs: readonly PollRunToEmit[]): void {
		this.emitted.push(...runs);
		for (const { run } of runs) this.emittedIds.push(...run.keys.map(Number));
	}

	/**
	 * n8n creates (or refuses, by key) the first `count` runs emitted, or all, and ends them; then the
	 * settlement write stores the state (nodes/shared/emitRuns.ts).
	 */
	settle(count = Infinity, settlement: 'started' | 'not_created' = 'started'): void {
		for (let n = 0; n < count && this.emitted.length > 0; n++) {
			const { key, run } = this.emitted.shift()!;
			if (settlement === 'started' && !this.created.has(key!))
				this.created.set(
					key!,
					run.items!.map((item) => item.id as number),
				);
			this.activation.settled(key!, run, {
				settlement,
				...(settlement === 'started' && { result: {} }),
			});
		}
		this.activation.write();
	}

	/** Kill -9: n8n created the first `created` runs emitted and nothing else. */
	async crash(created: number): Promise<void> {
		for (const { key, run } of this.emitted.slice(0, created))
			if (!this.created.has(key!))
				this.created.set(
					key!,
					run.items!.map((item) => item.id as number),
				);
		this.emitted = [];
		await this.activation.stop();
		await this.activate();
	}

	/** Unpublished and published again: the runs emitted go on and settle with the new activation. */
	async republish(): Promise<void> {
		await this.activation.stop();
		await this.activate([], new Set(this.emitted.map(({ key }) => key!)));
	}

	/** Polls and settles until nothing more goes out (`polls` polls). */
	async drain(polls = 40): Promise<void> {
		for (let poll = 0; poll < polls; poll++) {
			await this.clock.advance(INTERVAL);
			while (this.emitted.length > 0) {
				this.settle();
				await flushPromises();
			}
		}
	}

	/** How many times each id ran. */
	runsOf(): Map<number, number> {
		const runs = new Map<number, number>();
		for (const ids of this.created.values())
			for (const id of ids) runs.set(id, (runs.get(id) ?? 0) + 1);
		return runs;
	}

	expectEachOnce(from: number, to: number): void {
		const runs = this.runsOf();
		const ids = [...runs.keys()].sort((a, b) => a - b);
		expect(ids).toEqual(Array.from({ length: to - from + 1 }, (_, i) => from + i));
		expect([...runs.values()].every((n) => n === 1)).toBe(true);
	}
}

describe('items owed are listed again: no position the trigger asks from moves past an item before its run exists', () => {
	it("{{ $lastPollStartedAt }}: a crash after 50 of 300 went out asks again from the burst's poll; lost 0, repeated 0", async () => {
		const t = new Harness(SINCE_LAST_POLL);
		t.tickets.add(300);
		await t.clock.advance(1);
		await t.activate();
		t.settle(10);
		await t.crash(30);
		await t.clock.advance(1);
		t.tickets.add(20); // while n8n was down
		await t.clock.advance(1);
		await t.drain();
		expect(t.tickets.asked.slice(0, 2)).toEqual([
			'1970-01-01T00:00:00.000Z',
			'1970-01-01T00:00:00.000Z',
		]);
		t.expectEachOnce(1, 320);
		// Once every run exists, polls ask only for what is new again.
		expect(Date.parse(t.tickets.asked.at(-1)!)).toBeGreaterThanOrEqual(
			t.clock.now() - 2 * INTERVAL,
		);
	});

	it('{{ $lastPollStartedAt }}: unpublished and published again mid-burst; lost 0, repeated 0', async () => {
		const t = new Harness(SINCE_LAST_POLL);
		t.tickets.add(300);
		await t.clock.advance(1);
		await t.activate();
		t.settle(20);
		await t.republish();
		await t.drain();
		t.expectEachOnce(1, 300);
	});

	it('{{ $lastPollStartedAt }}: a run n8n could not create starts at a later poll', async () => {
		const t = new Harness(SINCE_LAST_POLL);
		t.tickets.add(120);
		await t.clock.advance(1);
		await t.activate();
		t.settle(3);
		t.settle(1, 'not_created');
		await t.drain();
		t.expectEachOnce(1, 120);
	});

	it('newest first, Stop at Known Ground: a crash after the newest 5 of 120 settled pages past known ground until every item owed is listed; lost 0, repeated 0', async () => {
		const t = new Harness(NEWEST_FIRST_PAGES);
		t.tickets.add(20);
		await t.activate(); // the baseline
		t.tickets.add(120);
		await t.clock.advance(INTERVAL);
		t.settle(5);
		await t.crash(10);
		t.tickets.add(7);
		await t.drain();
		t.expectEachOnce(21, 147);
		// Paid: a later poll reads page 1 only.
		const before = t.tickets.requests;
		await t.clock.advance(INTERVAL);
		expect(t.tickets.requests - before).toBe(1);
	});

	it('newest first: a run n8n could not create on page 2 starts at the next poll; unpublished and published again mid-burst, nothing is lost', async () => {
		const t = new Harness(NEWEST_FIRST_PAGES);
		t.tickets.add(20);
		await t.activate();
		t.tickets.add(120);
		await t.clock.advance(INTERVAL);
		t.settle(49);
		t.settle(1, 'not_created'); // ticket 91, on page 2 of the next poll's list
		await t.republish();
		await t.drain();
		t.expectEachOnce(21, 140);
	});

	it('newest first: Start Again of an item on page 3 starts it once', async () => {
		const t = new Harness(NEWEST_FIRST_PAGES);
		t.tickets.add(20);
		await t.activate();
		t.tickets.add(150);
		await t.drain();
		t.expectEachOnce(21, 170);
		await t.activation.stop();
		await t.activate([45]); // page 3: tickets 70..21
		await t.drain();
		expect(t.runsOf().get(45)).toBe(2);
		expect([...t.runsOf().values()].filter((n) => n > 1)).toHaveLength(1);
	});

	it('{{ $lastPollStartedAt }}: Start Again asks the source from the start once, starts the item once, then asks for what is new again', async () => {
		const t = new Harness(SINCE_LAST_POLL);
		t.tickets.add(30);
		await t.clock.advance(1);
		await t.activate();
		await t.drain();
		t.expectEachOnce(1, 30);
		await t.activation.stop();
		const asked = t.tickets.asked.length;
		await t.activate([7]);
		await t.drain();
		expect(t.runsOf().get(7)).toBe(2);
		expect([...t.runsOf().values()].filter((n) => n > 1)).toHaveLength(1);
		expect(t.tickets.asked[asked]).toBe('1970-01-01T00:00:00.000Z');
		expect(t.tickets.asked.at(-1)).not.toBe('1970-01-01T00:00:00.000Z');
	});
});

describe('{{ $lastPollStartedAt }} with Remember at Most below what the source lists (issue 44, finding 3 alike)', () => {
	const CAPPED: SourceSetup = { ...SINCE_LAST_POLL, maxRemembered: 10 };

	it("a crash with runs held reads again from the burst's poll and starts only the items owed: the runs n8n created, whose keys the cap forgot, do not start again; a ticket added meanwhile starts at the poll after", async () => {
		const t = new Harness(CAPPED);
		t.tickets.add(60);
		await t.clock.advance(1);
		await t.activate();
		// n8n creates 20 of the burst's 60 (tickets 60..41, newest first), then the next poll lists
		// nothing new: the cap forgets the 50 oldest keys, 60..11 among them.
		t.settle(20);
		await t.clock.advance(INTERVAL);
		expect(t.activation.store.size).toBe(10);
		await t.clock.advance(1);
		t.tickets.add(1); // ticket 61
		const before = t.emittedIds.length;
		await t.crash(0);
		await t.drain();
		// Read again from 1970: only the 40 held (40..1) start; ticket 61, listed then too, starts
		// from the poll after, which asks from where it would have.
		expect(t.emittedIds.slice(before)).toEqual([
			...Array.from({ length: 40 }, (_, i) => 40 - i),
			61,
		]);
		t.expectEachOnce(1, 61);
	});

	it('Start Again reads the source from the start and starts the item named alone, not the keys the cap forgot; then polls ask for what is new again', async () => {
		const t = new Harness(CAPPED);
		t.tickets.add(30);
		await t.clock.advance(1);
		await t.activate();
		await t.drain();
		t.expectEachOnce(1, 30);
		expect(t.activation.store.size).toBe(10);
		await t.activation.stop();
		const before = t.emittedIds.length;
		const asked = t.tickets.asked.length;
		await t.activate([7]);
		await t.clock.advance(1);
		t.tickets.add(1);
		await t.drain();
		expect(t.tickets.asked[asked]).toBe('1970-01-01T00:00:00.000Z');
		expect(t.emittedIds.slice(before)).toEqual([7, 31]);
		expect(t.tickets.asked.at(-1)).not.toBe('1970-01-01T00:00:00.000Z');
	});
});

describe('newest first, First Poll Starts Nothing over a list longer than Max Pages (the model simulation, seeds 7 and 44)', () => {
	it('the first poll reads all 5 pages of 250 tickets for its baseline (Max Pages 2): with the newest 100 dropped, or Start Again of ticket 30 paging past known ground, nothing old starts but ticket 30', async () => {
		const t = new Harness(MAX_PAGES_2);
		t.tickets.add(250);
		await t.activate();
		expect(t.tickets.pagesAsked).toEqual([1, 2, 3, 4, 5]);
		t.tickets.drop(Array.from({ length: 100 }, (_, i) => 151 + i));
		await t.drain(4);
		expect(t.emittedIds).toEqual([]);
		await t.activation.stop();
		await t.activate([30]);
		await t.drain(6);
		expect(t.emittedIds).toEqual([30]);
		expect(t.unlisted).toEqual([]);
	});
});

describe('items owed deeper than Max Pages, or no longer listed (issue 44, findings 1, 2, 4, 6)', () => {
	/** 250 tickets started over pages of 50 with Max Pages 2; polls settled as they go. */
	async function startedTickets(): Promise<Harness> {
		const t = new Harness(MAX_PAGES_2);
		t.tickets.add(10);
		await t.activate(); // the baseline
		t.tickets.add(240);
		await t.drain(6);
		t.expectEachOnce(11, 250);
		return t;
	}

	it('Start Again of ticket 75 on page 4 (Max Pages 2): started once within a few polls, then polls read one page again', async () => {
		const t = await startedTickets();
		await t.activation.stop();
		await t.activate([75]); // pages: 250..201, 200..151, 150..101, 100..51
		await t.drain(4);
		expect(t.runsOf().get(75)).toBe(2);
		expect([...t.runsOf().values()].filter((n) => n > 1)).toHaveLength(1);
		expect(t.unlisted).toEqual([]);
		// Paid: nothing owed keeps paging deep.
		const before = t.tickets.pagesAsked.length;
		await t.drain(3);
		expect(t.tickets.pagesAsked.slice(before)).toEqual([1, 1, 1]);
	});

	it('First Poll Starts Nothing over 250 tickets with Max Pages 2: the baseline reads all 5 pages, so a later search for an owed item on page 5 starts that item alone', async () => {
		const t = new Harness(MAX_PAGES_2);
		t.tickets.add(250);
		await t.activate(); // the baseline
		expect(t.tickets.pagesAsked).toEqual([1, 2, 3, 4, 5]);
		await t.activation.stop();
		// Before, only pages 1 and 2 were the baseline: paging down to ticket 10 started 51..150.
		await t.activate([10]); // pages: 250..201, 200..151, 150..101, 100..51, 50..1
		await t.drain(4);
		expect([...t.runsOf()]).toEqual([[10, 1]]);
	});

	it('Remember at Most 100 below a newest-first list, Max Pages 2: Start Again of ticket 75 pages past known ground to page 6 and starts it alone, not the tickets the cap forgot on the way (the model simulation, seeds 2 and 44)', async () => {
		const t = new Harness({ ...MAX_PAGES_2, maxRemembered: 100 });
		t.tickets.add(250);
		await t.activate(); // the baseline: all 5 pages, kept whole
		t.tickets.add(100);
		await t.drain(3); // pages 1-2 new (351..251 started), page 3 known ground: the cap forgets 200..1
		t.expectEachOnce(251, 350);
		await t.activation.stop();
		await t.activate([75]); // pages: 350..301, 300..251 (known ground), then 250..201, …, 100..51
		await t.drain(4);
		expect([...t.runsOf()].filter(([id]) => id <= 250)).toEqual([[75, 1]]);
		expect(t.unlisted).toEqual([]);
		const before = t.tickets.pagesAsked.length;
		await t.drain(2);
		expect(t.tickets.pagesAsked.slice(before)).toEqual([1, 1]);
	});

	it('Remember at Most 50, Max Pages 3, the link to go on for an owed item expired: the search from the first page for where the cut poll stopped starts the owed ticket alone, not the tickets the cap forgot above or below that place (the model simulation, seed 102)', async () => {
		const t = new Harness({
			...MAX_PAGES_2,
			pagination: { mode: 'linkHeader', maxPages: 3 },
			maxRemembered: 50,
		});
		t.tickets.add(250);
		await t.activate(); // the baseline: all 5 pages, kept whole
		t.tickets.add(50);
		await t.drain(2); // 300..251 started, page 2 known ground: the cap forgets 200..1
		t.expectEachOnce(251, 300);
		await t.activation.stop();
		// Pages 300..251, 250..201 (known ground), 200..151 (past it for ticket 75): Max Pages.
		await t.activate([75]);
		await flushPromises();
		t.tickets.expire();
		// 410, then from the first page: 300..251, 250..201, searching for 151 still.
		await t.clock.advance(INTERVAL);
		t.settle();
		// Goes on searching: 200..151 (the forgotten tickets above 151), then 150..101 below it, which
		// the cut poll had paged to past known ground, for ticket 75 alone.
		await t.drain(4);
		expect([...t.runsOf()].filter(([id]) => id <= 250)).toEqual([[75, 1]]);
	});

	/**
	 * Remember at Most 50 below pages of 50 (Max Pages 3): 100 tickets the baseline, 50 new started,
	 * 50 more new whose runs went out; the cap forgot tickets 1..100 on the way (never what a pass
	 * listed). Then the source drops 101..150, the known ground below the last poll's tickets.
	 */
	async function owingAboveForgotten(): Promise<Harness> {
		const t = new Harness({
			...MAX_PAGES_2,
			pagination: { mode: 'linkHeader', maxPages: 3 },
			maxRemembered: 50,
		});
		t.tickets.add(100);
		await t.activate(); // the baseline
		t.tickets.add(50);
		await t.drain(1); // 150..101 started, 100..51 known ground: the cap forgets 50..1
		t.tickets.add(50);
		await t.clock.advance(INTERVAL); // 200..151 go out, 150..101 known ground: 100..51 forgotten
		t.tickets.drop(Array.from({ length: 50 }, (_, i) => 101 + i));
		return t;
	}

	it("Remember at Most 50, a kill before n8n created the last poll's runs, their known ground dropped: paging on for the 50 owed restarts them alone, not the tickets the cap forgot below them (the model simulation, seeds 44 and 2)", async () => {
		const t = await owingAboveForgotten();
		await t.crash(0);
		await t.drain(3);
		t.expectEachOnce(101, 200);
	});

	it("Remember at Most 50, n8n refusing the last poll's runs, their known ground dropped: the 50 rolled back start again alone, not the tickets the cap forgot below them", async () => {
		const t = await owingAboveForgotten();
		t.settle(Infinity, 'not_created');
		await t.drain(3);
		t.expectEachOnce(101, 200);
	});

	it('Remember at Most 50: Start Again of a ticket no poll listed yet is no ground for history: the new ticket below it starts too', async () => {
		const t = await owingAboveForgotten();
		t.settle();
		t.tickets.add(2);
		await t.activation.stop();
		await t.activate([202]); // 202, 201, then 200..151 known ground
		await t.drain(3);
		t.expectEachOnce(101, 202);
	});

	it('Start Again of a key the source does not list: one report naming it after a full pass, then no more deep paging', async () => {
		const t = await startedTickets();
		await t.activation.stop();
		await t.activate([9999]);
		await t.drain(6);
		expect(t.unlisted).toHaveLength(1);
		expect(t.unlisted[0]).toContain('listed once, never started, no longer listed: keys 9999');
		const before = t.tickets.pagesAsked.length;
		await t.drain(3);
		expect(t.tickets.pagesAsked.slice(before)).toEqual([1, 1, 1]);
		expect(t.unlisted).toHaveLength(1);
		t.expectEachOnce(11, 250);
	});

	it('a kill mid-burst, the source dropping items n8n had not created before the restart: one report naming exactly those; the rest start once', async () => {
		const t = new Harness(SINCE_LAST_POLL);
		t.tickets.add(100);
		await t.clock.advance(1);
		await t.activate();
		t.settle(10);
		// n8n created 20 more before the kill: tickets 100..71 exist (newest first), 70..1 do not.
		t.tickets.drop([75, 72, 60, 59, 58]); // 75 and 72 ran; 60, 59, 58 never did
		await t.crash(20);
		await t.drain(5);
		expect(t.unlisted).toHaveLength(1);
		expect(t.unlisted[0]).toContain('3 item(s) listed once, never started, no longer listed');
		expect(t.unlisted[0]).toMatch(/keys (60|59|58), (60|59|58), (60|59|58)\./);
		const runs = t.runsOf();
		for (const id of [60, 59, 58]) expect(runs.has(id)).toBe(false);
		for (let id = 1; id <= 100; id++)
			if (![60, 59, 58].includes(id)) expect([id, runs.get(id)]).toEqual([id, 1]);
		// Given up once: later polls neither report again nor keep asking from the burst's poll.
		await t.drain(3);
		expect(t.unlisted).toHaveLength(1);
		expect(t.tickets.asked.at(-1)).not.toBe('1970-01-01T00:00:00.000Z');
	});

	it('newest first, Max Pages 2: a kill, the source dropping an item owed on page 4: one report after a full pass, no deep paging after', async () => {
		const t = new Harness(MAX_PAGES_2);
		t.tickets.add(10);
		await t.activate();
		t.tickets.add(240);
		await t.clock.advance(INTERVAL);
		// The poll read pages 1-2 (250..151): those runs went out; n8n created 30 before the kill.
		await t.crash(30);
		t.tickets.drop([160]); // owed: its run was not created
		await t.drain(10);
		expect(t.unlisted).toHaveLength(1);
		expect(t.unlisted[0]).toContain(
			'1 item(s) listed once, never started, no longer listed: keys 160.',
		);
		const runs = t.runsOf();
		for (let id = 11; id <= 250; id++) if (id !== 160) expect([id, runs.get(id)]).toEqual([id, 1]);
		const before = t.tickets.pagesAsked.length;
		await t.drain(3);
		expect(t.tickets.pagesAsked.slice(before)).toEqual([1, 1, 1]);
	});

	it('a saved next-page link the source has since expired (410): the poll reads from the first page, says so once, and loses nothing', async () => {
		const t = new Harness(MAX_PAGES_2);
		t.tickets.add(10);
		await t.activate();
		t.tickets.add(200); // four pages new: the poll reads two and keeps the link to page 3
		await t.clock.advance(INTERVAL);
		t.settle();
		t.tickets.expire();
		t.tickets.add(5);
		await t.drain(6);
		t.expectEachOnce(11, 215);
		expect(t.warnings.filter((line) => line.includes('HTTP 410'))).toHaveLength(1);
		const before = t.tickets.pagesAsked.length;
		await t.drain(2);
		expect(t.tickets.pagesAsked.slice(before)).toEqual([1, 1]);
	});

	it('links that expire before every next poll (Max Pages 2): the search from the first page, refused again, is reported once and given up; polls read one page again, not two for ever (the model simulation, seeds 7 and 44)', async () => {
		const t = new Harness(MAX_PAGES_2);
		t.tickets.add(10);
		await t.activate();
		t.tickets.add(200); // four pages new: the poll reads two and keeps the link to page 3
		await t.clock.advance(INTERVAL);
		t.settle();
		for (let poll = 0; poll < 6; poll++) {
			t.tickets.expire();
			await t.clock.advance(INTERVAL);
			t.settle();
		}
		expect(t.pageLimits.filter((line) => line.includes('HTTP 410 again'))).toHaveLength(1);
		const before = t.tickets.pagesAsked.length;
		t.tickets.expire();
		await t.drain(2);
		expect(t.tickets.pagesAsked.slice(before)).toEqual([1, 1]);
	});

	it('links that expire before every next poll (Max Pages 3), the search finding where the cut poll stopped: the continuation after it, refused too, is reported once and given up', async () => {
		const t = new Harness({ ...MAX_PAGES_2, pagination: { mode: 'linkHeader', maxPages: 3 } });
		t.tickets.add(10);
		await t.activate();
		t.tickets.add(200); // four pages new: the poll reads three (210..61) and keeps the link to page 4
		await t.clock.advance(INTERVAL);
		t.settle();
		// 50 dropped from the middle: from the first page the search finds ticket 61 on page 2.
		t.tickets.drop(Array.from({ length: 50 }, (_, i) => 111 + i));
		for (let poll = 0; poll < 6; poll++) {
			t.tickets.expire();
			await t.clock.advance(INTERVAL);
			t.settle();
		}
		expect(t.pageLimits.filter((line) => line.includes('HTTP 410 again'))).toHaveLength(1);
		const before = t.tickets.pagesAsked.length;
		t.tickets.expire();
		await t.drain(2);
		expect(t.tickets.pagesAsked.slice(before)).toEqual([1, 1]);
	});
});

describe('a pass over the source (owed.ts)', () => {
	const storeOwing = (keys: number[]) => {
		const { store } = loadDedupeStore({ dedupe: { kind: 'unique' } });
		store.startAgain(keys);
		return store;
	};

	it('gives up what a whole pass did not list, once; an item owed during the pass waits for the next pass', () => {
		const store = storeOwing([1, 2]);
		const owed = new OwedItems(undefined);
		owed.owe([1, 2]);
		const first = owed.begin(store, true);
		owed.owe([3]); // owed mid-pass: the pass starts again
		store.startAgain([3]);
		expect(owed.end(first, store)).toEqual([]);
		const second = owed.begin(store, true);
		expect(owed.end(second, store).map(({ name }) => name)).toEqual([1, 2, 3]);
		expect(store.owedHashes().size).toBe(0);
		expect(owed.end(owed.begin(store, true), store)).toEqual([]);
	});

	it('a pass begins only at a poll that reads from the head', () => {
		const store = storeOwing([1]);
		const owed = new OwedItems(undefined);
		owed.owe([1]);
		expect(owed.begin(store, false)).toBeUndefined();
		expect(owed.end(owed.begin(store, true), store).map(({ name }) => name)).toEqual([1]);
	});

	it('an answer that says more remains, or files still uploading, is not a whole list', () => {
		expect(answerIsWholeList({ rows: [], truncated: true })).toBe(false);
		expect(answerIsWholeList({ files: [], uploading: [{ name: 'a' }] })).toBe(false);
		expect(answerIsWholeList({ rows: [], truncated: false })).toBe(true);
		expect(answerIsWholeList([{ id: 1 }])).toBe(true);
	});
});
