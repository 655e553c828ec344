import { ConfigError } from '../configError';
import { Pagination, type PaginationSettings, nextLink } from '../connectors/pagination';
import { httpExchange } from '../connectors/http';
import { prepareHttpRequest } from '../connectors/httpAuth';
import type { HttpRequest, HttpResponse } from '../connectors/types';
import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import { PollExpressions } from './expressions';
import { loadDedupeStore } from './kinds';
import { type ListOrder, PagedSource, type SavedPagingState } from './paging';
import { runPollCycle } from './start';

const PAGE = 50;

/**
 * A ticket API: ids 1..count, `order` newest or oldest first, PAGE a page, answering every paging
 * style at once: `page` (1-based), `cursor` (an opaque token), a `next` URL in the body, a Link
 * header, and `since` (ids above it).
 */
class TicketSource {
	count = 0;
	readonly requests: HttpRequest[] = [];
	constructor(readonly order: 'newest' | 'oldest' = 'newest') {}

	readonly http = async (request: HttpRequest): Promise<HttpResponse> => {
		this.requests.push(request);
		const url = new URL(request.url, 'http://source.test');
		const query = { ...Object.fromEntries(url.searchParams), ...request.query };
		const since = Number(query.since ?? 0);
		const ids = Array.from({ length: this.count }, (_, i) => i + 1).filter((id) => id > since);
		if (this.order === 'newest') ids.reverse();
		const page = query.cursor
			? Number(Buffer.from(query.cursor, 'base64').toString())
			: Number(query.page ?? 1);
		const tickets = ids.slice((page - 1) * PAGE, page * PAGE).map((id) => ({ id }));
		const more = page * PAGE < ids.length;
		const next = `http://source.test/tickets?page=${page + 1}${query.since ? `&since=${since}` : ''}`;
		return {
			url: url.href,
			status: 200,
			headers: {
				'content-type': 'application/json',
				...(more && {
					link: `<${next}>; rel="next", <http://source.test/tickets?page=1>; rel="first"`,
				}),
			},
			body: JSON.stringify({
				tickets,
				next: more ? next : null,
				next_cursor: more ? Buffer.from(String(page + 1)).toString('base64') : null,
			}),
		};
	};

	add(n: number) {
		this.count += n;
	}
}

interface Setup {
	pagination: PaginationSettings;
	dedupe?: 'unique' | 'greatest' | 'changed' | 'time_window' | 'last';
	order?: 'newest' | 'oldest';
	listOrder?: ListOrder;
	with?: Record<string, unknown>;
	stopAtKnownGround?: boolean;
	firstPoll?: 'all' | 'none';
}

/** A trigger's poll loop in core: pages, the cycle, the commit, the saved state. */
function trigger(setup: Setup) {
	const clock = new FakeClock();
	const source = new TicketSource(setup.order);
	const kind = setup.dedupe ?? 'unique';
	const store = loadDedupeStore({
		dedupe: kind === 'time_window' ? { kind, ttlMs: 86_400_000 } : { kind },
		firstPoll: { mode: setup.firstPoll ?? 'none' },
	}).store;
	const expressions = new PollExpressions({ items: 'tickets', id: 'id' });
	let saved: SavedPagingState | undefined;
	const paged = new PagedSource(
		{
			pagination: new Pagination(setup.pagination),
			listOrder: setup.listOrder ?? 'newestFirst',
			stopAtKnownGround: setup.stopAtKnownGround ?? true,
			firstCursor: '0',
		},
		setup.with ?? { url: 'http://source.test/tickets' },
		undefined,
		store,
		expressions,
		clock,
		setup.firstPoll === 'all',
	);
	const started: number[] = [];
	const reports: string[] = [];
	return {
		source,
		clock,
		started,
		reports,
		get saved() {
			return saved;
		},
		async poll() {
			const before = source.requests.length;
			const { runs } = await runPollCycle(
				{
					expressions,
					store,
					clock,
					commit: { keyPrefix: 'k:' },
					fetch: async (signal) => {
						const pages = await paged.fetch({ context: { http: source.http }, memory: {}, signal });
						return pages.kind === 'not_modified' ? { notModified: true } : { items: pages.items };
					},
				},
				new AbortController().signal,
			);
			const report = paged.commit(false);
			if (report) reports.push(report);
			saved = paged.saved;
			for (const run of runs)
				for (const c of run.candidates) started.push((c.item as { id: number }).id);
			await clock.advance(10_000);
			return source.requests.length - before;
		},
	};
}

/** Page numbers in the query (a page shifts as items arrive at the head). */
const PAGE_NUMBERS: PaginationSettings = {
	mode: 'parameter',
	parameters: [{ in: 'query', name: 'page', value: 'pageCount + 1' }],
};

const range = (from: number, to: number) =>
	Array.from({ length: to - from + 1 }, (_, i) => from + i);
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

describe('paginated polls (core/poll/paging.ts, core/connectors/pagination.ts)', () => {
	const styles: Array<[string, PaginationSettings]> = [
		['next URL in the body', { mode: 'nextUrl', nextUrl: 'response.body.next' }],
		['Link header', { mode: 'linkHeader' }],
		['page number', PAGE_NUMBERS],
		[
			'cursor token',
			{
				mode: 'parameter',
				parameters: [{ in: 'query', name: 'cursor', value: 'response.body.next_cursor' }],
				endWhen: 'expression',
				endExpression: 'response.body.next_cursor = null',
			},
		],
	];

	it.each(styles)(
		'%s, newest first: a burst of 2.5 pages starts every item once and paging stops at known ground',
		async (_, pagination) => {
			for (const dedupe of ['unique', 'greatest', 'changed', 'time_window'] as const) {
				const t = trigger({ pagination, dedupe });
				t.source.add(30);
				await t.poll(); // the baseline: First Poll Starts nothing
				t.source.add(125);
				const requests = await t.poll();
				expect(sorted(t.started)).toEqual(range(31, 155));
				// Pages 1-3 hold the burst, page 3 reaches ticket 30: known ground.
				expect(requests).toBe(3);
				expect(await t.poll()).toBe(1);
				expect(t.started).toHaveLength(125);
				expect(t.reports).toEqual([]);
			}
		},
	);

	it('oldest first with since={{ $cursor }}: bursts start once, Max Pages only defers to the next poll', async () => {
		const t = trigger({
			pagination: { mode: 'linkHeader', maxPages: 2 },
			dedupe: 'greatest',
			order: 'oldest',
			listOrder: 'oldestFirst',
			firstPoll: 'all',
			with: { url: 'http://source.test/tickets', query: { since: '{{ $cursor }}' } },
		});
		t.source.add(125);
		await t.poll();
		expect(t.started).toEqual(range(1, 100));
		expect(
			t.source.requests.map((r) => r.query?.since ?? new URL(r.url).searchParams.get('since')),
		).toEqual(['0', '0']);
		await t.poll();
		expect(t.started).toEqual(range(1, 125));
		expect(t.source.requests[2].query).toEqual({ since: '100' });
		expect(t.reports).toEqual([]);
	});

	it('newest first with a next link: Max Pages cuts a poll short, the next poll goes on from the page after, the one after from the first page; nothing lost, nothing reported', async () => {
		const t = trigger({ pagination: { mode: 'linkHeader', maxPages: 20 }, dedupe: 'unique' });
		t.source.add(10);
		await t.poll();
		t.source.add(1_500);
		expect(await t.poll()).toBe(20);
		expect(sorted(t.started)).toEqual(range(511, 1_510));
		t.source.add(30); // at the head, while the rest of the burst is still to be read
		expect(await t.poll()).toBe(11); // pages 21 to 31: the rest, then known ground (ticket 10)
		expect(sorted(t.started)).toEqual(range(11, 1_510));
		expect(await t.poll()).toBe(1); // from the first page again: the 30 new ones
		expect(sorted(t.started)).toEqual(range(11, 1_540));
		expect(t.reports).toEqual([]);
		expect(t.saved?.resumeFrom).toBeUndefined();
	});

	it('newest first with page numbers: Max Pages cuts a poll short and reports it once per occurrence (a numbered page shifts as items arrive at the head); the next poll still goes on from the page after', async () => {
		const t = trigger({
			pagination: { ...PAGE_NUMBERS, maxPages: 2 },
			dedupe: 'unique',
		});
		t.source.add(10);
		await t.poll();
		t.source.add(130);
		expect(await t.poll()).toBe(2);
		expect(sorted(t.started)).toEqual(range(41, 140));
		expect(t.reports).toEqual([
			'«pagination.maxPages» reached: all 2 pages were new; items beyond page 2 may not have been started: raise «pagination.maxPages» or poll more often',
		]);
		expect(t.saved?.limitReported).toBe(true);
		t.source.add(20); // page 3 now begins 20 items earlier, with items the poll before started
		expect(await t.poll()).toBe(2);
		expect(sorted(t.started)).toEqual(range(11, 140));
		expect(t.reports).toHaveLength(1);
		await t.poll(); // from the first page again: the 20 that arrived meanwhile
		expect(sorted(t.started)).toEqual(range(11, 160));
		expect(t.saved?.limitReported).toBeUndefined();
		t.source.add(150);
		await t.poll();
		expect(t.reports).toHaveLength(2);
		expect(new Set(t.started).size).toBe(t.started.length);
	});

	it('newest first with page numbers: a continuation over several pages numbers them on from the poll it goes on from', async () => {
		const t = trigger({
			pagination: { ...PAGE_NUMBERS, maxPages: 2 },
			dedupe: 'unique',
		});
		t.source.add(10);
		await t.poll();
		const baseline = t.source.requests.length;
		t.source.add(200);
		await t.poll(); // pages 1 and 2: 210..111
		await t.poll(); // pages 3 and 4: 110..11, cut short again
		await t.poll(); // page 5: known ground
		const pages = t.source.requests.map((request) => Number(request.query?.page ?? 1));
		expect(pages.slice(baseline)).toEqual([1, 2, 3, 4, 5]);
		expect(sorted(t.started)).toEqual(range(11, 210));
		expect(new Set(t.started).size).toBe(t.started.length);
	});

	it('newest first with page numbers: more than a page arriving at the head before the continuation makes it stop at items already started (declared in docs/pagination.md)', async () => {
		const t = trigger({
			pagination: { ...PAGE_NUMBERS, maxPages: 2 },
			dedupe: 'unique',
		});
		t.source.add(10);
		await t.poll();
		t.source.add(130);
		await t.poll();
		t.source.add(120);
		await t.poll(); // page 3 now holds 160..111, all new: known ground at 110..61 on page 4
		await t.poll(); // from the first page: 260..161, cut short again (a new occurrence)
		await t.poll(); // on from there: to known ground
		// 40..11 were beyond Max Pages and the page numbers moved by more than a page: not started,
		// as the first report said they might not be.
		expect(sorted(t.started)).toEqual(range(41, 260));
		expect(t.reports).toHaveLength(2);
	});

	it('without stop at known ground every page is walked', async () => {
		const t = trigger({
			pagination: { mode: 'linkHeader', maxPages: null },
			stopAtKnownGround: false,
		});
		t.source.add(500);
		await t.poll();
		t.source.add(10);
		expect(await t.poll()).toBe(11);
		expect(sorted(t.started)).toEqual(range(501, 510));
	});

	it('{{ $lastPollStartedAt }} is the epoch before the first poll, then when the last successful poll began', async () => {
		const t = trigger({
			pagination: { mode: 'off' },
			with: {
				url: 'http://source.test/tickets',
				query: { updatedSince: '{{ $lastPollStartedAt }}' },
			},
		});
		const first = t.clock.now();
		await t.poll();
		await t.poll();
		expect(t.source.requests.map((r) => r.query?.updatedSince)).toEqual([
			'1970-01-01T00:00:00.000Z',
			new Date(first).toISOString(),
		]);
	});

	it('{{ $cursor }} needs Dedupe Greatest; an unknown placeholder names itself', () => {
		expect(() =>
			trigger({
				pagination: { mode: 'off' },
				with: { url: '/t', query: { since: '{{ $cursor }}' } },
			}),
		).toThrow(
			'$cursor is the high-water mark of Dedupe "greatest"; with Dedupe "unique" ask for what is new with {{ $lastPollStartedAt }}',
		);
		expect(() =>
			trigger({
				pagination: { mode: 'off' },
				with: { url: '/t', query: { since: '{{ $since }}' } },
			}),
		).toThrow(
			'Invalid value "{{ $since }}" for "«with»": "$since" is not a value the trigger has; use {{ $lastPollStartedAt }}',
		);
	});

	it('bad input fails the poll naming the option and the value, and remembers nothing', async () => {
		const cases: Array<[PaginationSettings, string]> = [
			[
				{ mode: 'nextUrl', nextUrl: 'response.body.tickets[0].id' },
				'Invalid value 150 for "«pagination.nextUrl»": the expression response.body.tickets[0].id gave it after page 1',
			],
			[
				{ mode: 'nextUrl', nextUrl: '"http://source.test/tickets?page=1"' },
				'for "«pagination.nextUrl»": page 3 would repeat a request already sent in this poll (a loop)',
			],
			[
				{ mode: 'nextUrl', nextUrl: '$unknownFunction()' },
				'for "«pagination.nextUrl»": failed after page 1',
			],
		];
		for (const [pagination, message] of cases) {
			const t = trigger({ pagination, firstPoll: 'all' });
			t.source.add(150);
			await expect(t.poll()).rejects.toThrow(message);
			expect(t.started).toEqual([]);
			expect(t.saved).toBeUndefined();
		}
	});

	it('a page that is not a list names the page', async () => {
		const pagination = new Pagination({ mode: 'linkHeader' });
		const clock = new FakeClock();
		let page = 0;
		const fetched = pagination.fetch(
			{ url: 'http://source.test/a' },
			{
				request: async (args) => ({
					kind: 'data',
					data: ++page === 1 ? [{ id: 1 }] : { error: 'x' },
					url: String(args.url),
					status: 200,
					headers: (page === 1 ? { link: '<http://source.test/b>; rel="next"' } : {}) as Record<
						string,
						string
					>,
					memory: {},
				}),
				selectItems: (body) => new PollExpressions({ id: 'id' }).selectItems(body),
				clock,
				cursor: undefined,
			},
		);
		await expect(fetched).rejects.toThrow(
			'page 2 (GET http://source.test/b): Invalid value "" for "«items»"',
		);
	});

	it('settings that can never work are refused at activation, naming the option', () => {
		expect(() => new Pagination({ mode: 'nextUrl' })).toThrow(
			'Invalid value "" for "«pagination.nextUrl»": must be set for this pagination mode',
		);
		expect(
			() =>
				new Pagination({
					mode: 'linkHeader',
					endWhen: 'statusCodes',
					endStatuses: 'none',
				}),
		).toThrow('for "«pagination.endStatuses»"');
		expect(() => new Pagination({ mode: 'linkHeader', maxPages: 0 })).toThrow(
			'Invalid value 0 for "«pagination.maxPages»"',
		);
		expect(() => new Pagination({ mode: 'parameter', parameters: [] })).toThrow(
			'for "«pagination.parameters»"',
		);
	});

	it('an end status code completes paging; the interval between requests waits on the clock', async () => {
		const clock = new FakeClock();
		const pagination = new Pagination({
			mode: 'parameter',
			parameters: [{ in: 'query', name: 'page', value: 'pageCount + 1' }],
			endWhen: 'statusCodes',
			endStatuses: '404',
			pauseMs: 1000,
		});
		const at: number[] = [];
		const fetched = pagination.fetch(
			{ url: 'http://source.test/a', query: { page: 1 } },
			{
				request: async (args, _first, endStatuses) => {
					at.push(clock.now());
					const page = Number((args.query as { page: number }).page);
					return page > 2
						? { kind: 'end_status', status: endStatuses[0], headers: {} }
						: {
								kind: 'data',
								data: [{ id: page }],
								url: String(args.url),
								status: 200,
								headers: {},
								memory: {},
							};
				},
				selectItems: async (body) => body as unknown[],
				clock,
				cursor: undefined,
			},
		);
		for (let step = 0; step < 3; step++) {
			await flushPromises();
			await clock.advance(1000);
		}
		const result = await fetched;
		expect(result).toMatchObject({
			kind: 'pages',
			items: [{ id: 1 }, { id: 2 }],
			pages: 2,
			stop: 'complete',
		});
		expect(at.map((t) => t - at[0])).toEqual([0, 1000, 2000]);
	});

	it.each<[string, PaginationSettings]>([
		['next URL in the body', { mode: 'nextUrl', nextUrl: 'response.body.next' }],
		['Link header', { mode: 'linkHeader' }],
	])(
		'%s: a relative next link resolves against the page it came from, not the Base URL (RFC 3986 §5)',
		async (_style, settings) => {
			const base = 'https://api.test/api/v2';
			const sent: string[] = [];
			// As the node's transport: a relative URL in With is joined to the Base URL.
			const http = async (request: HttpRequest) => {
				const { url } = prepareHttpRequest(request, { auth: { kind: 'none' }, baseUrl: base });
				sent.push(url);
				const page = Number(new URL(url).searchParams.get('page') ?? 1);
				const next = ['/api/v2/tickets?page=2', 'tickets?page=3'][page - 1];
				return {
					status: 200,
					url,
					headers: {
						'content-type': 'application/json',
						...(next && { link: `<${next}>; rel="next"` }),
					},
					body: JSON.stringify({ tickets: [{ id: page }], next: next ?? null }),
				};
			};
			const result = await new Pagination(settings).fetch(
				{ url: '/tickets' },
				{
					request: (args, first, endStatuses) =>
						httpExchange(args, { http, memory: {} }, { conditional: first, endStatuses }),
					selectItems: (body) =>
						new PollExpressions({ items: 'tickets', id: 'id' }).selectItems(body),
					clock: new FakeClock(),
					cursor: undefined,
				},
			);
			expect(sent).toEqual([`${base}/tickets`, `${base}/tickets?page=2`, `${base}/tickets?page=3`]);
			expect(result).toMatchObject({ items: [{ id: 1 }, { id: 2 }, { id: 3 }], stop: 'complete' });
		},
	);

	describe("the credential goes only to the first request's origin", () => {
		/**
		 * Two APIs as the node's transport reaches them, with a Bearer credential and a header of
		 * With's: page 1 on https://api.test links to `second` (page 2), which links nowhere.
		 */
		async function pollAcross(second: string, settings: Partial<PaginationSettings> = {}) {
			const seen: Array<{ url: string; authorization?: string; tenant?: string }> = [];
			const http = async (request: HttpRequest): Promise<HttpResponse> => {
				const prepared = prepareHttpRequest(
					request,
					{ auth: { kind: 'generic', type: 'httpBearerAuth' }, baseUrl: 'https://api.test/v1' },
					{ data: { token: 'secret-token' }, name: 'API token' },
				);
				seen.push({
					url: prepared.url,
					authorization: prepared.headers.Authorization,
					tenant: prepared.headers['x-tenant'],
				});
				const first = prepared.url === 'https://api.test/v1/tickets';
				return {
					url: prepared.url,
					status: 200,
					headers: {
						'content-type': 'application/json',
						...(first && { link: `<${second}>; rel="next"` }),
					},
					body: JSON.stringify({ tickets: [{ id: first ? 2 : 1 }] }),
				};
			};
			const store = loadDedupeStore({
				dedupe: { kind: 'unique' },
				firstPoll: { mode: 'all' },
			}).store;
			const paged = new PagedSource(
				{
					pagination: new Pagination({ mode: 'linkHeader', ...settings }),
					listOrder: 'newestFirst',
					stopAtKnownGround: true,
					firstCursor: '',
				},
				{ url: '/tickets', headers: { 'x-tenant': 'acme' } },
				undefined,
				store,
				new PollExpressions({ items: 'tickets', id: 'id' }),
				new FakeClock(),
				true,
			);
			const result = await paged.fetch({ context: { http }, memory: {} });
			return { seen, result };
		}

		const withCredential = { authorization: 'Bearer secret-token', tenant: 'acme' };
		const without = { authorization: undefined, tenant: undefined };

		it.each([
			['another host', 'https://elsewhere.test/tickets?page=2'],
			['another port', 'https://api.test:8443/v1/tickets?page=2'],
			['a subdomain', 'https://eu.api.test/v1/tickets?page=2'],
		])(
			"a next link to %s gets neither the credential nor With's headers",
			async (_what, second) => {
				const { seen } = await pollAcross(second);
				expect(seen).toEqual([
					{ url: 'https://api.test/v1/tickets', ...withCredential },
					{ url: second, ...without },
				]);
			},
		);

		it('a next link on the same origin gets both; so do hosts Send Credentials to Hosts names', async () => {
			const same = await pollAcross('/v1/tickets?page=2');
			expect(same.seen[1]).toEqual({
				url: 'https://api.test/v1/tickets?page=2',
				...withCredential,
			});
			for (const hosts of ['elsewhere.test', 'other.test, *.test'])
				expect(
					(await pollAcross('https://elsewhere.test/t?page=2', { credentialHosts: hosts })).seen[1],
				).toEqual({ url: 'https://elsewhere.test/t?page=2', ...withCredential });
			// `*.api.test` names the subdomains, not api.test's other ports or elsewhere.
			const wildcard = { credentialHosts: '*.api.test' };
			expect((await pollAcross('https://eu.api.test/t', wildcard)).seen[1]).toMatchObject(
				withCredential,
			);
			expect((await pollAcross('https://elsewhere.test/t', wildcard)).seen[1]).toMatchObject(
				without,
			);
		});

		it('an http next link under an https page is refused, naming the option and the URL, and nothing is sent there', async () => {
			for (const second of ['http://api.test/v1/tickets?page=2', 'http://elsewhere.test/t']) {
				const failure = pollAcross(second, { credentialHosts: 'elsewhere.test' });
				await expect(failure).rejects.toThrow(ConfigError);
				await expect(failure).rejects.toThrow(
					`Invalid value "${second}" for "«pagination.mode»": the Link header (rel="next") gave it after page 1 (GET /tickets); a page fetched over https never leads to http`,
				);
			}
		});

		it('a host list that is not one is refused at activation, naming the option', () => {
			expect(
				() => new Pagination({ mode: 'linkHeader', credentialHosts: 'https://x.test/' }),
			).toThrow(
				'Invalid value "https://x.test/" for "«pagination.credentialHosts»": "https://x.test/" is not a host name',
			);
		});
	});

	it('nextLink reads rel="next" among other links', () => {
		expect(nextLink('<https://a/x?page=1>; rel="prev", <https://a/x?page=3>; rel="next"')).toBe(
			'https://a/x?page=3',
		);
		expect(nextLink('<https://a/x?page=3>; rel=next')).toBe('https://a/x?page=3');
		expect(nextLink('<https://a/x?page=1>; rel="first"')).toBeUndefined();
		expect(nextLink(undefined)).toBeUndefined();
	});
});
