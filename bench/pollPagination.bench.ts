/**
 * A paginated poll (newest first, 100 items a page, over HTTP on loopback) with 10,000 items
 * remembered and a burst of 3 pages: requests per poll and time per poll with "Stop at Known Ground"
 * (the default), beside the same poll without it (every page walked), in one run.
 *   npx tsx bench/pollPagination.bench.ts
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';

import { systemClock } from '../core/clock';
import { Pagination } from '../core/connectors/pagination';
import type { HttpTransport } from '../core/connectors/types';
import { loadDedupeStore, PagedSource, PollExpressions, runPollCycle } from '../core/poll';
import { percentile } from './stats';

const PAGE = 100;
const REMEMBERED = 10_000;
const BURST = 3 * PAGE;
const REPEATS = 5;

let count = 0;
let requests = 0;
const server = createServer((req, res) => {
	requests++;
	const url = new URL(req.url ?? '/', 'http://x');
	const page = Number(url.searchParams.get('page') ?? 1);
	const ids = [];
	for (let id = count - (page - 1) * PAGE; id > Math.max(0, count - page * PAGE); id--)
		ids.push(id);
	const more = page * PAGE < count;
	res.writeHead(200, {
		'content-type': 'application/json',
		...(more && { link: `</tickets?page=${page + 1}>; rel="next"` }),
	});
	res.end(JSON.stringify({ tickets: ids.map((id) => ({ id, subject: `ticket ${id}` })) }));
});

async function main() {
	server.listen(0, '127.0.0.1');
	await once(server, 'listening');
	const { port } = server.address() as { port: number };
	const http: HttpTransport = async (request) => {
		const url = new URL(request.url, `http://127.0.0.1:${port}`);
		const response = await fetch(url);
		return {
			url: url.href,
			status: response.status,
			headers: Object.fromEntries(response.headers),
			body: await response.text(),
		};
	};
	const rows: Array<{ mode: string; requests: number; ms: number; started: number }> = [];
	for (const stopAtKnownGround of [true, false]) {
		const times: number[] = [];
		let perPoll = 0;
		let started = 0;
		for (let repeat = 0; repeat < REPEATS; repeat++) {
			count = REMEMBERED;
			const store = loadDedupeStore({
				dedupe: { kind: 'unique' },
				firstPoll: { mode: 'none' },
			}).store;
			const expressions = new PollExpressions({ items: 'tickets', id: 'id' });
			const paged = new PagedSource(
				{
					pagination: new Pagination({ mode: 'linkHeader', maxPages: null }),
					listOrder: 'newestFirst',
					stopAtKnownGround,
					firstCursor: '',
				},
				{ url: '/tickets' },
				undefined,
				store,
				expressions,
				systemClock,
				false,
			);
			const poll = () =>
				runPollCycle(
					{
						expressions,
						store,
						clock: systemClock,
						commit: { keyPrefix: 'bench:' },
						fetch: async () => {
							const pages = await paged.fetch({ context: { http }, memory: {} });
							return pages.kind === 'pages' ? { items: pages.items } : { notModified: true };
						},
					},
					new AbortController().signal,
				);
			await poll(); // remembers the 10,000
			count += BURST;
			requests = 0;
			const start = performance.now();
			const { runs } = await poll();
			times.push(performance.now() - start);
			perPoll = requests;
			started = runs.length;
		}
		rows.push({
			mode: stopAtKnownGround ? 'stop at known ground' : 'all pages walked',
			requests: perPoll,
			ms: percentile(times, 50),
			started,
		});
	}
	console.log(
		`paginated poll, newest first, ${PAGE} a page, ${REMEMBERED} remembered, a burst of ${BURST} (3 pages); median of ${REPEATS}`,
	);
	for (const row of rows)
		console.log(
			`  ${row.mode.padEnd(22)} requests/poll ${String(row.requests).padStart(4)}   time/poll ${row.ms.toFixed(1).padStart(7)} ms   started ${row.started}`,
		);
	console.log(
		`  ratio: ${(rows[1].requests / rows[0].requests).toFixed(1)}x the requests, ${(rows[1].ms / rows[0].ms).toFixed(1)}x the time without stopping at known ground`,
	);
	server.close();
}

void main();
