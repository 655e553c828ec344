import type { FakeSystem } from './fakeSystem';

/**
 * A paginated ticket API on a FakeSystem path: ids 1..count, newest or oldest first, `pageSize` a
 * page, answering every paging style at once: `page` (1-based), `cursor` (an opaque token),
 * `next` (URL) and `next_cursor` in the body, a `Link: <…>; rel="next"` header, and `since` (ids above it).
 */
export class PagedTickets {
	count = 0;

	constructor(
		source: FakeSystem,
		readonly path: string,
		readonly options: { pageSize: number; order: 'newest' | 'oldest'; delayMs?: number },
	) {
		source.on('GET', path, (request) => {
			const since = Number(request.query.since ?? 0);
			const ids = Array.from({ length: this.count }, (_, i) => i + 1).filter((id) => id > since);
			if (options.order === 'newest') ids.reverse();
			const page = request.query.cursor
				? Number(Buffer.from(request.query.cursor, 'base64url').toString())
				: Number(request.query.page ?? 1);
			const { pageSize } = options;
			const tickets = ids.slice((page - 1) * pageSize, page * pageSize).map((id) => ({ id }));
			const more = page * pageSize < ids.length;
			const next = `${source.url(path)}?page=${page + 1}${request.query.since ? `&since=${since}` : ''}`;
			return {
				delayMs: options.delayMs,
				headers: (more ? { link: `<${next}>; rel="next"` } : {}) as Record<string, string>,
				body: {
					tickets,
					next: more ? next : null,
					next_cursor: more ? Buffer.from(String(page + 1)).toString('base64url') : null,
				},
			};
		});
	}

	add(n: number): void {
		this.count += n;
	}
}
