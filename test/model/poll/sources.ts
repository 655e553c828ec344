import type { Clock } from '../../../core/clock';
import { type FileSession, fileOps } from '../../../core/connectors/fileOps';
import { Pagination } from '../../../core/connectors/pagination';
import { resolveOp } from '../../../core/connectors/registry';
import type { SqlSession } from '../../../core/connectors/sqlTransport';
import type { HttpRequest, HttpResponse } from '../../../core/connectors/types';
import type { PollSource, SourceContext } from '../../../core/poll/activation';
import type { DedupeConfig } from '../../../core/poll/dedupe';

/**
 * The model sources: one catalogue of items (`id`, version `v`, `t` when last written), told
 * through each style's transport exactly as that style answers what it is asked. Each answer
 * records the item versions it listed (`listed`), which the properties hold the trigger to.
 */

export interface SourceItem {
	id: string;
	v: number;
	/** When the item was last written (ms, the fake clock): the order of the time-ordered styles. */
	t: number;
	/**
	 * When the item was created, or added back before any answer listed it (ms): the order of a
	 * newest-first list. Stop at Known Ground relies on items the trigger has not listed being above
	 * all it has (docs/pagination.md, declared there, not a promise to hold here): so an item added
	 * back that an answer listed comes back in its place (above unlisted items, an item the trigger
	 * knows would hide them), and one no answer listed comes back at the head (in its place, below
	 * known ground, it would never be read).
	 */
	created: number;
	/** Its place in a listing that has no time order (re-lists everything). */
	rank: number;
	/** Bumped at every write, across items: a `$cursor` source's cursor (Dedupe Greatest). */
	seq: number;
}

/** The items, as the schedule changes them. */
export class Catalogue {
	readonly items = new Map<string, SourceItem>();
	/** Every item version any answer listed to the trigger, and at which poll. */
	readonly listed = new Map<string, number>();
	/** Ids ever written, so a new item never reuses one (a dropped item's id can come back by `readd`). */
	private next = 0;
	private rank = 0;
	private seq = 0;
	/** Items dropped, for a later re-add under the same key. */
	readonly dropped: SourceItem[] = [];

	constructor(private readonly clock: Clock) {}

	add(): string {
		const id = idName(this.next++);
		this.items.set(id, {
			id,
			v: 1,
			t: this.clock.now(),
			created: this.clock.now(),
			rank: this.rank++,
			seq: ++this.seq,
		});
		return id;
	}

	change(index: number): string | undefined {
		const item = this.pick(index);
		if (!item) return undefined;
		item.v++;
		item.t = this.clock.now();
		item.seq = ++this.seq;
		return item.id;
	}

	drop(index: number): string | undefined {
		const item = this.pick(index);
		if (!item) return undefined;
		this.items.delete(item.id);
		this.dropped.push(item);
		return item.id;
	}

	/** A dropped item comes back, as a new version written now. */
	readd(index: number): string | undefined {
		if (this.dropped.length === 0) return undefined;
		const [item] = this.dropped.splice(index % this.dropped.length, 1);
		item.v++;
		item.t = this.clock.now();
		// Back in its place once the trigger's saved state holds a poll that listed it; else at the
		// head: below known ground the trigger would never read it (docs/pagination.md, "Declared: an
		// item that appears other than at the head", the listing n8n did not save).
		if (!this.savedListed.has(item.id)) item.created = item.t;
		item.seq = ++this.seq;
		this.items.set(item.id, item);
		return item.id;
	}

	/** Moves an item to the front of the listing order without writing it (re-lists everything). */
	reorder(index: number): string | undefined {
		const item = this.pick(index);
		if (!item) return undefined;
		item.rank = -this.rank++;
		return item.id;
	}

	/** The item at `index` (mod the count), in id order. */
	pick(index: number): SourceItem | undefined {
		const all = [...this.items.values()];
		return all.length === 0 ? undefined : all[index % all.length];
	}

	/** Records what an answer listed. */
	list(items: readonly SourceItem[], poll: number): void {
		if (this.listings.at(-1)?.poll !== poll) this.listings.push({ poll, ids: new Set() });
		const latest = this.listings.at(-1)!;
		for (const { id, v } of items) {
			latest.ids.add(id);
			this.unwrittenListed.add(id);
			if (!this.listed.has(versionKey(id, v))) this.listed.set(versionKey(id, v), poll);
		}
	}

	/** Listed since the trigger last wrote its state; in the state in memory; in the state n8n saved. */
	private readonly unwrittenListed = new Set<string>();
	private liveListed = new Set<string>();
	private savedListed = new Set<string>();

	/** The trigger wrote its state: what the answers listed since is in it. */
	wrote(): void {
		for (const id of this.unwrittenListed) this.liveListed.add(id);
		this.unwrittenListed.clear();
	}

	/** n8n saved the state in memory. */
	saved(): void {
		this.savedListed = new Set(this.liveListed);
	}

	/** The state in memory is gone (a kill, a publish): what it held beyond the saved one too. */
	reverted(): void {
		this.liveListed = new Set(this.savedListed);
		this.unwrittenListed.clear();
	}

	/** The items each poll listed, oldest first (an activation's poll counts with the poll before it). */
	readonly listings: Array<{ poll: number; ids: Set<string> }> = [];

	/** The distinct items the latest `polls` polls listed. */
	listedByLatest(polls: number): Set<string> {
		return new Set(this.listings.slice(-polls).flatMap(({ ids }) => [...ids]));
	}

	/** Items by time written, oldest first (ties by id). */
	byTime(): SourceItem[] {
		return [...this.items.values()].sort((a, b) => a.t - b.t || compareIds(a.id, b.id));
	}

	/** Items newest first by creation (ties by id, descending). */
	newestFirst(): SourceItem[] {
		return [...this.items.values()].sort((a, b) => b.created - a.created || compareIds(b.id, a.id));
	}
}

export function versionKey(id: string, v: number): string {
	return `${id}@${v}`;
}

/** Ids sort as text the way they were made: a, b, …, z, ba, bb, … */
function idName(n: number): string {
	let name = '';
	do {
		name = String.fromCharCode(97 + (n % 26)) + name;
		n = Math.floor(n / 26);
	} while (n > 0);
	return name.length > 1 ? `${'z'.repeat(name.length - 1)}${name}` : name;
}

function compareIds(a: string, b: string): number {
	return a < b ? -1 : a > b ? 1 : 0;
}

/** One style: the trigger's source settings and the transport that answers it. */
export interface ModelSource {
	source: PollSource;
	context: SourceContext;
	/** The item expressions' sources (items path, id, version). */
	expressions: { items?: string; id: string; version?: string };
	/** What this style says for the story, and the dedupe it polls with. */
	dedupe: DedupeConfig;
}

/** The settings a schedule picks for its style. */
export interface StyleSettings {
	pageSize: number;
	maxPages: number;
	/** Next-page requests the source stops accepting after this long (ms); 0: never. */
	tokenTtlMs: number;
	/** How a newest-first source names its next page. */
	nextPage: NextPage;
}

/** A JSON answer. */
function json(url: string, body: unknown, headers: Record<string, string> = {}): HttpResponse {
	return {
		status: 200,
		url,
		headers: { 'content-type': 'application/json', ...headers },
		body: JSON.stringify(body),
	};
}

function asItem({ id, v }: SourceItem) {
	return { id, v };
}

function queryOf(request: HttpRequest): Record<string, string> {
	const url = new URL(request.url);
	return { ...Object.fromEntries(url.searchParams), ...request.query };
}

const httpRequest = resolveOp('http.request');

/** Re-lists everything, in its own order, on every request (one page). */
export function relistSource(catalogue: Catalogue, poll: () => number): ModelSource {
	return {
		source: { op: httpRequest, args: { url: 'http://source.test/items' }, timeoutMs: 1_000 },
		context: {
			http: async (request) => {
				const items = [...catalogue.items.values()].sort((a, b) => a.rank - b.rank);
				catalogue.list(items, poll());
				return json(request.url, { items: items.map(asItem) });
			},
		},
		expressions: { items: 'items', id: 'id' },
		dedupe: { kind: 'unique' },
	};
}

/** How a newest-first source says where its next page is. */
export type NextPage = 'linkHeader' | 'nextUrl' | 'cursorToken';

const NEXT_PAGE_PAGINATION: Record<NextPage, (maxPages: number) => Pagination> = {
	linkHeader: (maxPages) => new Pagination({ mode: 'linkHeader', maxPages }),
	nextUrl: (maxPages) =>
		new Pagination({ mode: 'nextUrl', nextUrl: 'response.body.next', maxPages }),
	cursorToken: (maxPages) =>
		new Pagination({
			mode: 'parameter',
			parameters: [{ in: 'query', name: 'cursor', value: 'response.body.next_cursor' }],
			endWhen: 'expression',
			endExpression: 'response.body.next_cursor = null',
			maxPages,
		}),
};

/**
 * Newest first (by creation), pages of `pageSize`, Stop at Known Ground and Max Pages; the next
 * page named by a Link header, a next URL in the body, or a cursor token, each naming the last item
 * listed (so a page does not shift as items arrive). With `tokenTtlMs`, the source refuses (410) a
 * next-page request older than that: a next-page request that expires.
 */
export function newestFirstSource(
	catalogue: Catalogue,
	poll: () => number,
	clock: Clock,
	settings: StyleSettings,
): ModelSource {
	const base = 'http://source.test/items';
	const { nextPage } = settings;
	return {
		source: {
			op: httpRequest,
			args: { url: base },
			timeoutMs: 1_000,
			paging: {
				pagination: NEXT_PAGE_PAGINATION[nextPage](settings.maxPages),
				listOrder: 'newestFirst',
				stopAtKnownGround: true,
				firstCursor: '0',
			},
		},
		context: {
			http: async (request) => {
				const query = queryOf(request);
				// The place: in the next URL's query, or in the cursor token ("page~created_id~issued").
				const [page = '1', after, issued] =
					query.cursor !== undefined
						? query.cursor.split('~')
						: [query.page, query.after, query.issued];
				if (settings.tokenTtlMs > 0 && issued !== undefined && issued !== '')
					if (clock.now() - Number(issued) > settings.tokenTtlMs)
						return {
							status: 410,
							url: request.url,
							headers: { 'content-type': 'application/json' },
							body: JSON.stringify({ error: 'this page link has expired' }),
						};
				const all = catalogue.newestFirst();
				const place = after?.split('_');
				const from =
					place === undefined
						? 0
						: all.findIndex(
								({ created, id }) =>
									created < Number(place[0]) || (created === Number(place[0]) && id < place[1]),
							);
				const rest = from < 0 ? [] : all.slice(from);
				const items = rest.slice(0, settings.pageSize);
				catalogue.list(items, poll());
				const last = items.at(-1);
				const more = last !== undefined && rest.length > items.length;
				const nextPlace = {
					page: String(Number(page) + 1),
					after: `${last?.created}_${last?.id}`,
					issued: settings.tokenTtlMs > 0 ? String(clock.now()) : '',
				};
				const nextUrl = `${base}?page=${nextPlace.page}&after=${nextPlace.after}${nextPlace.issued ? `&issued=${nextPlace.issued}` : ''}`;
				const body = { items: items.map(asItem) };
				if (nextPage === 'nextUrl')
					return json(request.url, { ...body, next: more ? nextUrl : null });
				if (nextPage === 'cursorToken')
					return json(request.url, {
						...body,
						next_cursor: more ? `${nextPlace.page}~${nextPlace.after}~${nextPlace.issued}` : null,
					});
				return json(request.url, body, more ? { link: `<${nextUrl}>; rel="next"` } : {});
			},
		},
		expressions: { items: 'items', id: 'id' },
		dedupe: { kind: 'unique' },
	};
}

const sqlQuery = resolveOp('sql.query');

/**
 * An SQL table read by keyset (`sql.query`: rows after the read position by (updated, id), a page
 * LIMIT, at most `maxRows` a poll), no lag. The session answers the query as PostgreSQL would.
 */
export function sqlKeysetSource(
	catalogue: Catalogue,
	poll: () => number,
	clock: Clock,
	settings: StyleSettings,
): ModelSource {
	const session: SqlSession = {
		dialect: 'postgres',
		now: async () => {
			const utc = new Date(clock.now()).toISOString();
			return { utc, local: utc, zone: 'UTC' };
		},
		query: async (_sql, [cursor, key, limit]) => {
			const after = Date.parse(String(cursor));
			const rows = catalogue
				.byTime()
				.filter(({ t, id }) => t > after || (t === after && id > String(key)))
				.slice(0, Number(limit));
			catalogue.list(rows, poll());
			return rows.map((row) => ({ ...asItem(row), updated: new Date(row.t).toISOString() }));
		},
		close: async () => undefined,
	};
	return {
		source: {
			op: sqlQuery,
			args: {
				query:
					'SELECT id, v, updated FROM items WHERE (updated, id) > ($1, $2) ORDER BY updated, id LIMIT $3',
				params: ['cursor', 'key', 'limit'],
				cursor: 'updated',
				key: 'id',
				from: ['1970-01-01T00:00:00.000Z', '0'],
				lagSeconds: 0,
				pageSize: settings.pageSize,
				maxRows: settings.pageSize * settings.maxPages,
			},
			timeoutMs: 1_000,
		},
		context: { sql: async () => session },
		expressions: { items: 'rows', id: 'id' },
		dedupe: { kind: 'unique' },
	};
}

const s3List = resolveOp('s3.list');

/**
 * An S3 bucket listed with `s3.list`'s `afterLastKey` (ListObjectsV2 from the last key listed, at
 * most `maxObjects` a poll; no lag). Object keys are the item ids, which sort in the order items
 * are written, as timestamped keys do; an answer holds at most `pageSize` keys. A key the listing
 * has passed is not listed again (afterLastKey's meaning), so the schedule adds nothing back here.
 */
export function s3AfterLastKeySource(
	catalogue: Catalogue,
	poll: () => number,
	clock: Clock,
	settings: StyleSettings,
): ModelSource {
	return {
		source: {
			op: s3List,
			args: {
				bucket: 'drop',
				afterLastKey: true,
				lagSeconds: 0,
				maxObjects: settings.pageSize * settings.maxPages,
			},
			timeoutMs: 1_000,
		},
		context: {
			s3: {
				endpoint: 'http://s3.test',
				region: 'us-east-1',
				accessKeyId: 'model',
				secretAccessKey: 'model',
				pathStyle: true,
			},
			clock,
			http: async (request) => {
				const query = queryOf(request);
				const after = query['continuation-token'] ?? query['start-after'] ?? '';
				const all = [...catalogue.items.values()]
					.filter(({ id }) => id > after)
					.sort((a, b) => compareIds(a.id, b.id));
				const items = all.slice(0, Math.min(Number(query['max-keys']), settings.pageSize));
				catalogue.list(items, poll());
				const truncated = all.length > items.length;
				const contents = items
					.map(
						({ id, v, t }) =>
							`<Contents><Key>${id}</Key><LastModified>${new Date(t).toISOString()}</LastModified><Size>1</Size><ETag>"${v}"</ETag></Contents>`,
					)
					.join('');
				return {
					status: 200,
					url: request.url,
					headers: { 'content-type': 'application/xml', date: new Date(clock.now()).toUTCString() },
					body: `<ListBucketResult><IsTruncated>${truncated}</IsTruncated>${truncated ? `<NextContinuationToken>${items.at(-1)!.id}</NextContinuationToken>` : ''}${contents}</ListBucketResult>`,
				};
			},
		},
		expressions: { items: 'files', id: 'key' },
		dedupe: { kind: 'unique' },
	};
}

/**
 * `updated_after={{ $lastPollStartedAt }}`: one answer of every item written after that time, newest
 * first (no paging), as a source filtering on its update time answers.
 */
export function sinceLastPollSource(catalogue: Catalogue, poll: () => number): ModelSource {
	return {
		source: {
			op: httpRequest,
			args: {
				url: 'http://source.test/items',
				query: { updated_after: '{{ $lastPollStartedAt }}' },
			},
			timeoutMs: 1_000,
			paging: {
				pagination: new Pagination({ mode: 'off' }),
				listOrder: 'newestFirst',
				stopAtKnownGround: true,
				firstCursor: '0',
			},
		},
		context: {
			http: async (request) => {
				const after = Date.parse(queryOf(request).updated_after);
				const items = catalogue
					.byTime()
					.filter(({ t }) => t > after)
					.reverse();
				catalogue.list(items, poll());
				return json(request.url, { items: items.map(asItem) });
			},
		},
		expressions: { items: 'items', id: 'id' },
		dedupe: { kind: 'unique' },
	};
}

/**
 * Oldest first after `{{ $cursor }}` (Dedupe Greatest over `seq`, bumped at every write), pages by
 * number (`page`, pageCount + 1) until an empty page, at most Max Pages a poll.
 */
export function cursorOldestFirstSource(
	catalogue: Catalogue,
	poll: () => number,
	settings: StyleSettings,
): ModelSource {
	return {
		source: {
			op: httpRequest,
			args: { url: 'http://source.test/items', query: { since: '{{ $cursor }}' } },
			timeoutMs: 1_000,
			paging: {
				pagination: new Pagination({
					mode: 'parameter',
					parameters: [{ in: 'query', name: 'page', value: 'pageCount + 1' }],
					maxPages: settings.maxPages,
				}),
				listOrder: 'oldestFirst',
				stopAtKnownGround: true,
				firstCursor: '0',
			},
		},
		context: {
			http: async (request) => {
				const query = queryOf(request);
				const page = Number(query.page ?? 1);
				const all = [...catalogue.items.values()]
					.filter(({ seq }) => seq > Number(query.since))
					.sort((a, b) => a.seq - b.seq);
				const items = all.slice((page - 1) * settings.pageSize, page * settings.pageSize);
				catalogue.list(items, poll());
				return json(request.url, { items: items.map(({ id, v, seq }) => ({ id, v, seq })) });
			},
		},
		expressions: { items: 'items', id: 'seq' },
		dedupe: { kind: 'greatest' },
	};
}

/**
 * A files folder listed with `sftp.list` (fileOps.ts's list op over a model session): a file counts
 * once two listings at least `unchangedForSec` (60) apart saw the same size and time (the
 * finished-upload rule). A new file is being written (size 1, written now); a change rewrites it.
 * Every file the folder holds counts as listed, finished or not: the quiet end finishes them all,
 * and one dropped while still uploading is only counted as "no longer listed".
 */
export function filesFolderSource(
	catalogue: Catalogue,
	poll: () => number,
	clock: Clock,
	listed: (files: string[]) => void,
): ModelSource {
	const session: FileSession = {
		where: 'files.test:22',
		list: async () => {
			const files = [...catalogue.items.values()];
			catalogue.list(files, poll());
			listed(files.map(({ id, v }) => `${id}@${v}`));
			return files.map(({ id, v, t }) => ({
				name: id,
				type: 'file' as const,
				size: v,
				mtimeMs: t,
			}));
		},
		stat: async () => ({ size: 0 }),
		read: async () => undefined,
		exists: async () => false,
		makeFolder: async () => undefined,
		rename: async () => undefined,
		delete: async () => undefined,
	};
	const [list] = fileOps({
		transport: 'sftp',
		withSession: async (_args, _context, work) => await work(session),
	});
	return {
		source: { op: list, args: { folder: '/in' }, timeoutMs: 1_000 },
		context: { clock },
		expressions: { items: 'files', id: 'name' },
		dedupe: { kind: 'unique' },
	};
}
