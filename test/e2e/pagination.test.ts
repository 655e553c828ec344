import { FakeSystem, type RecordedRequest } from '../harness/fakeSystem';
import { type Execution, isFinal, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { PagedTickets } from '../harness/pagedSource';
import { isN8n1 } from '../harness/paths';
import { marker, node, type NodeJson, PACKAGE, workflow } from './workflowBuilder';

/** Pages of 10: a burst of 25 is 2.5 pages. */
const PAGE = 10;

function pagedWorkflow(
	name: string,
	parameters: Record<string, unknown>,
	extra: Partial<NodeJson> = {},
) {
	return workflow(
		name,
		[
			node(
				'Poll',
				`${PACKAGE}.pollTrigger`,
				{
					op: 'http.request',
					interval: 5,
					intervalUnit: 'seconds',
					items: 'tickets',
					id: 'id',
					dedupe: 'unique',
					options: { firstPoll: 'none' },
					...parameters,
				},
				extra,
			),
			marker('Handled'),
		],
		[['Poll', 'Handled']],
	);
}

/** The ticket ids the workflow's runs started, sorted. */
function startedIds(executions: Execution[]): number[] {
	return executions
		.filter((execution) => execution.status !== 'error' || nodeOutput(execution, 'Poll').length > 0)
		.flatMap((execution) => nodeOutput(execution, 'Poll').map((item) => Number(item.id)))
		.sort((a, b) => a - b);
}

const range = (from: number, to: number) =>
	Array.from({ length: to - from + 1 }, (_, i) => from + i);

const STYLES: Array<[string, Record<string, unknown>]> = [
	[
		'next URL in the body',
		{ paginationMode: 'responseContainsNextURL', nextURL: 'response.body.next' },
	],
	['Link header', { paginationMode: 'linkHeader' }],
	[
		'page number',
		{
			paginationMode: 'updateAParameterInEachRequest',
			parameters: { parameters: [{ type: 'qs', name: 'page', value: 'pageCount + 1' }] },
		},
	],
	[
		'cursor token',
		{
			paginationMode: 'updateAParameterInEachRequest',
			parameters: {
				parameters: [{ type: 'qs', name: 'cursor', value: 'response.body.next_cursor' }],
			},
			paginationCompleteWhen: 'other',
			completeExpression: 'response.body.next_cursor = null',
		},
	],
];

describe('Poll Trigger pagination in a real n8n', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;

	beforeAll(async () => {
		source = await FakeSystem.start();
		n8n = await N8nInstance.launch('pagination');
	});

	afterAll(async () => {
		await n8n?.stop();
		await source?.close();
	});

	/** Every ended run of the workflow once `ids` have all started (and no more than that many runs). */
	async function runsOf(workflowId: string, count: number): Promise<Execution[]> {
		return (await n8n.waitForFinishedExecutions(workflowId, count)).filter(isFinal);
	}

	/**
	 * Resolves once the first poll of `path` has been remembered: publishing returns before n8n
	 * activates, and a burst listed by the first poll would be its baseline (First Poll Starts nothing).
	 * The second poll asking for page 1 means the first has ended.
	 */
	async function baselineTaken(path: string): Promise<void> {
		let firstPages = 0;
		await source.nextRequest(
			(r) =>
				r.path === path &&
				r.query.page === undefined &&
				r.query.cursor === undefined &&
				++firstPages >= 2,
			120_000,
		);
	}

	/** Whether a request of `path` is a poll's first (no page, no cursor): a poll begins with it. */
	const firstPageOf = (path: string) => (r: RecordedRequest) =>
		r.path === path && r.query.page === undefined && r.query.cursor === undefined;

	/** The requests of the next whole poll of `path`: from one poll's first page to the next one's. */
	async function nextPoll(path: string): Promise<RecordedRequest[]> {
		const from = source.requests(path).length;
		const firstPage = firstPageOf(path);
		let seen = 0;
		let starts = 0;
		await source.nextRequest(
			(r) => r.path === path && ++seen > from && firstPage(r) && ++starts >= 2,
			120_000,
		);
		const after = source.requests(path).slice(from);
		const begin = after.findIndex(firstPage);
		return after.slice(
			begin,
			after.findIndex((r, i) => i > begin && firstPage(r)),
		);
	}

	/** Resolves once `path` has answered `count` more requests than it had when called. */
	async function requests(path: string, count: number): Promise<void> {
		await source.requestCount(path, source.requests(path).length + count);
	}

	test('each style, newest first: a burst of 2.5 pages starts every item once, and paging stops at known ground', async () => {
		const sources = STYLES.map(
			([,], i) => new PagedTickets(source, `/style-${i}`, { pageSize: PAGE, order: 'newest' }),
		);
		const ids: string[] = [];
		for (const [i, [name, pagination]] of STYLES.entries()) {
			sources[i].add(5);
			const id = await n8n.importWorkflow(
				pagedWorkflow(`paged ${name}`, {
					with: JSON.stringify({ url: source.url(`/style-${i}`) }),
					dedupe: i % 2 === 0 ? 'unique' : 'greatest',
					pagination: { pagination },
				}),
			);
			await n8n.publish(id);
			ids.push(id);
		}
		for (const s of sources) await baselineTaken(s.path);
		for (const s of sources) s.add(25);
		for (const [i, id] of ids.entries()) {
			const executions = await runsOf(id, 25);
			expect({ style: STYLES[i][0], ids: startedIds(executions) }).toEqual({
				style: STYLES[i][0],
				ids: range(6, 30),
			});
		}
		// A poll with nothing new reads one page: it reaches known ground at once.
		const polls = await Promise.all(sources.map(async (s) => await nextPoll(s.path)));
		for (const [i, polled] of polls.entries()) {
			expect({ style: STYLES[i][0], pages: polled.length }).toEqual({
				style: STYLES[i][0],
				pages: 1,
			});
			expect((await n8n.executions(ids[i])).length).toBe(25);
		}
		for (const id of ids) await n8n.unpublish(id);
	});

	test('oldest first with since={{ $cursor }} (Dedupe Greatest): bursts start once; Max Pages only defers to the next poll', async () => {
		const tickets = new PagedTickets(source, '/oldest', { pageSize: PAGE, order: 'oldest' });
		tickets.add(5);
		const id = await n8n.importWorkflow(
			pagedWorkflow('paged oldest first', {
				with: JSON.stringify({ url: source.url('/oldest'), query: { since: '{{ $cursor }}' } }),
				dedupe: 'greatest',
				pagination: {
					pagination: { paginationMode: 'linkHeader', listOrder: 'oldestFirst', maxRequests: 2 },
				},
			}),
		);
		await n8n.publish(id);
		await baselineTaken('/oldest');
		tickets.add(25);
		const executions = await runsOf(id, 25);
		expect(startedIds(executions)).toEqual(range(6, 30));
		expect(executions.filter((execution) => execution.status === 'error')).toEqual([]);
		expect(source.requests('/oldest').some((r) => r.query.since === '25')).toBe(true);
		await n8n.unpublish(id);
	});

	test('Max Pages reached before known ground with a Link header: the next poll goes on from the page after, every item starts once, nothing fails', async () => {
		const tickets = new PagedTickets(source, '/limit', { pageSize: PAGE, order: 'newest' });
		tickets.add(5);
		const id = await n8n.importWorkflow(
			pagedWorkflow('paged limit', {
				with: JSON.stringify({ url: source.url('/limit') }),
				pagination: { pagination: { paginationMode: 'linkHeader', maxRequests: 2 } },
			}),
		);
		await n8n.publish(id);
		await baselineTaken('/limit');
		tickets.add(35);
		const executions = await runsOf(id, 35);
		expect(startedIds(executions)).toEqual(range(6, 40));
		expect(executions.filter((e) => e.status === 'error')).toEqual([]);
		// The poll after the cut asked for page 3, the next for page 1 again.
		expect(source.requests('/limit').some((r) => r.query.page === '3')).toBe(true);
		expect(await nextPoll('/limit')).toHaveLength(1);
		await n8n.unpublish(id);
	});

	test('Max Pages reached before known ground with page numbers: ONE failed execution says items may not have started, and the next poll still goes on from the page after', async () => {
		const tickets = new PagedTickets(source, '/limit-pages', { pageSize: PAGE, order: 'newest' });
		tickets.add(5);
		const id = await n8n.importWorkflow(
			pagedWorkflow('paged limit numbered', {
				with: JSON.stringify({ url: source.url('/limit-pages') }),
				pagination: {
					pagination: {
						paginationMode: 'updateAParameterInEachRequest',
						parameters: { parameters: [{ type: 'qs', name: 'page', value: 'pageCount + 1' }] },
						maxRequests: 2,
					},
				},
			}),
		);
		await n8n.publish(id);
		await baselineTaken('/limit-pages');
		tickets.add(35);
		const message =
			'all 2 pages were new; items beyond page 2 may not have been started: raise Max Pages or poll more often';
		/** n8n 1.x triggers cannot save a failed execution: the failure is an error in n8n's log. */
		const loggedFailures = () =>
			n8n
				.log()
				.split('\n')
				.filter((line) => line.includes(message) && line.includes(`"workflowId":"${id}"`));
		if (isN8n1) {
			await waitFor("the failure in n8n's log", async () =>
				loggedFailures().length > 0 ? true : undefined,
			);
			// n8n 1.x starts a burst's runs one at a time (docs/n8n-1.123.md): they end after the log.
			await runsOf(id, 35);
		} else {
			const executions = await n8n.waitForExecutions(
				id,
				(all) => all.filter(isFinal).length >= 36,
				'35 runs and the failure',
			);
			const failures = executions.filter(
				(e) => e.status === 'error' && nodeOutput(e, 'Poll').length === 0,
			);
			expect(failures).toHaveLength(1);
			const failed = await n8n.execution(failures[0].id);
			expect(failed.data?.resultData.error?.message).toContain(message);
		}
		// Further polls reach known ground (page 1 is all started): nothing more starts, no second failure.
		expect(await nextPoll('/limit-pages')).toHaveLength(1);
		const all = (await n8n.executions(id)).filter(isFinal);
		expect(startedIds(all)).toEqual(range(6, 40));
		if (isN8n1) expect(loggedFailures()).toHaveLength(1);
		else expect(all.filter((e) => nodeOutput(e, 'Poll').length === 0)).toHaveLength(1);
		await n8n.unpublish(id);
	});

	test("a next link to another origin gets neither the credential nor With's headers; a host Send Credentials to Hosts names gets both", async () => {
		// The API on one port, a second system on another: two origins on loopback (the second's
		// host, 127.0.0.1, is the one the second workflow names).
		const elsewhere = await FakeSystem.start();
		try {
			const key = {
				id: await n8n.createCredential('Paged API key', 'httpHeaderAuth', {
					name: 'X-API-Key',
					value: 'paged-key-123',
				}),
				name: 'Paged API key',
			};
			for (const path of ['/keyed-a', '/keyed-b'])
				source.on('GET', path, (r) => ({
					body: {
						tickets: [{ id: 1 }],
						next: path === '/keyed-a' ? elsewhere.url('/page-2') : elsewhere.url('/page-2-named'),
					},
				}));
			for (const path of ['/page-2', '/page-2-named'])
				elsewhere.on('GET', path, { body: { tickets: [{ id: 2 }], next: null } });
			const ids: string[] = [];
			for (const [path, hosts] of [
				['/keyed-a', ''],
				['/keyed-b', '127.0.0.1'],
			]) {
				const paged = pagedWorkflow(
					`paged across origins ${path}`,
					{
						authentication: 'httpHeaderAuth',
						with: JSON.stringify({ url: source.url(path), headers: { 'x-tenant': 'acme' } }),
						pagination: {
							pagination: {
								paginationMode: 'responseContainsNextURL',
								nextURL: 'response.body.next',
								// Every page at every poll, the baseline's included.
								stopAtKnownGround: false,
								sendCredentialsToHosts: hosts,
							},
						},
					},
					{ typeVersion: 1.1, credentials: { httpHeaderAuth: key } },
				);
				ids.push(await n8n.importWorkflow(paged));
				await n8n.publish(ids.at(-1)!);
			}
			const [other, named] = await Promise.all([
				elsewhere.nextRequest((r) => r.path === '/page-2', 120_000),
				elsewhere.nextRequest((r) => r.path === '/page-2-named', 120_000),
			]);
			const sent = (r: RecordedRequest) => [r.headers['x-api-key'], r.headers['x-tenant']];
			expect(source.requests('/keyed-a').map(sent)[0]).toEqual(['paged-key-123', 'acme']);
			expect(sent(other)).toEqual([undefined, undefined]);
			expect(sent(named)).toEqual(['paged-key-123', 'acme']);
			for (const id of ids) await n8n.unpublish(id);
		} finally {
			await elsewhere.close();
		}
	});

	// 600 s: two kills and two n8n starts, and on a busy 2-core machine a start alone takes 1.5 min (a
	// guard against a hang, not a speed check).
	test('kill -9 while paging, and again during the burst: lost 0, repeated 0', async () => {
		// Each page answers after 1.5 s: a kill lands between pages.
		const tickets = new PagedTickets(source, '/kill', {
			pageSize: PAGE,
			order: 'newest',
			delayMs: 1500,
		});
		tickets.add(5);
		const id = await n8n.importWorkflow(
			pagedWorkflow('paged kill', {
				with: JSON.stringify({ url: source.url('/kill') }),
				pagination: { pagination: { paginationMode: 'linkHeader' } },
			}),
		);
		await n8n.publish(id);
		await baselineTaken('/kill');
		tickets.add(25);
		// Page 2 of the burst's poll was asked for: kill while paging.
		await source.nextRequest((r) => r.path === '/kill' && r.query.page === '2');
		await n8n.kill();
		await n8n.start();
		await n8n.login();
		// During the burst: once some runs ended, kill again.
		await n8n.waitForExecutions(id, (all) => all.filter(isFinal).length >= 3, '3 runs');
		await n8n.kill();
		await n8n.start();
		await n8n.login();
		tickets.add(25);
		// 50 tickets, each started once: n8n refuses a re-emitted run by its deduplication key, so a
		// repeat would be a 51st execution. A run that was going when n8n was killed is saved "crashed",
		// possibly without its trigger data: it counts as started, its item unnamed.
		const executions = await waitFor(
			'50 ended runs',
			async () => {
				const ended = (await n8n.executions(id)).filter(isFinal);
				return ended.length >= 50 ? ended : undefined;
			},
			{ timeoutMs: 180_000, intervalMs: 500 },
		);
		await requests('/kill', 2);
		const all = await n8n.executions(id);
		const named = startedIds(all);
		const unnamed = all.filter((e) => nodeOutput(e, 'Poll').length === 0).length;
		const repeated = named.filter((x, i) => named.indexOf(x) !== i);
		const lost = range(6, 55).filter((x) => !named.includes(x));
		expect({ runs: all.length, repeated, unnamedCoverLost: lost.length <= unnamed }).toEqual({
			runs: 50,
			repeated: [],
			unnamedCoverLost: true,
		});
		expect(executions.length).toBe(50);
		await n8n.unpublish(id);
	}, 600_000);
});
