import type { Clock } from '../clock';
import { ConfigError, fieldRef } from '../configError';
import { fillPlaceholders, placeholdersIn } from '../connectors/args';
import { httpExchange } from '../connectors/http';
import type { PagedResult, Pagination } from '../connectors/pagination';
import { ConnectorError, type OpContext, type OpMemory } from '../connectors/types';
import { type DedupeStore, itemHash, type Verdict } from './dedupe';
import { hash64 } from './hash';
import { unitsToHex } from './records';
import type { PollExpressions } from './expressions';

/**
 * A paginated `http.request` poll: the trigger's cursor in the request, the pages up to known ground,
 * and when Max Pages cut a poll short. Pages are one poll: their items are planned and committed
 * together (runPollCycle), so a kill while paging remembers nothing and the cursor moves with the runs.
 *
 * Items owed. A one-item run is stored without its item (runStage.ts): after a crash, a stop, or a
 * run n8n could not create, its item starts only if the source lists it again. So no position this
 * trigger asks from moves past such an item for good: while items are owed, $lastPollStartedAt is
 * when the earliest poll whose runs n8n may not have created began asking (`askFrom`), and a
 * newest-first source is paged past known ground until every owed item was listed (or the list
 * ended). The `greatest` mark ($cursor) goes back with the runs' undo (dedupe.ts), and an op's own
 * read position is forgotten with them (activation.ts).
 */

/** How the source orders its list. */
export type ListOrder = 'newestFirst' | 'oldestFirst';

export interface PagingSettings {
	pagination: Pagination;
	listOrder: ListOrder;
	/** Newest first: stop at the first page that reaches remembered items (on by default). */
	stopAtKnownGround: boolean;
	/** $cursor before the trigger has a high-water mark. */
	firstCursor: string;
}

/** What the trigger keeps for paging between polls. */
export interface SavedPagingState {
	/** When the last successful poll began (ms): $lastPollStartedAt. */
	lastPollStartedAt?: number;
	/** Max Pages cut the last poll short and that was reported: reported once per occurrence. */
	limitReported?: boolean;
	/**
	 * $lastPollStartedAt as asked by the earliest poll whose runs n8n may not have created yet (ms;
	 * 0 before any poll): where a poll asks from while items are owed.
	 */
	askFrom?: number;
	/** Items are expected back from the source (owe()), until a poll lists them or its list ends. */
	owed?: true;
	/**
	 * Newest first, Max Pages cut the last poll short: the request for the page after, and the hash
	 * (hex) of the last item it listed. The next poll goes on from there to known ground (resumedPage
	 * says where that page starts), and the one after starts from the list's first page again.
	 */
	resumeFrom?: {
		request: Record<string, unknown>;
		after: string;
		of: string;
		pages: number;
		/** The poll fell back from a refused continuation and has not yet listed `after`. */
		searching?: true;
		/** The poll read from the first page after a refused continuation (and listed `after`). */
		fellBack?: true;
		/**
		 * The polls before went on for items owed below an item listed before (pastGround): every
		 * page from here is history, but for those.
		 */
		pastGround?: true;
		/**
		 * Searching still (`searching`), the poll had listed an item listed before: what the next reads
		 * before `after` is history, but for the items owed.
		 */
		searchPastGround?: true;
	};
}

/**
 * A search from the first page for the item (hash, hex) a refused continuation stopped after;
 * `pastGround`: the poll cut there had paged past known ground for items owed.
 */
interface Search {
	searchFor: string;
	found: boolean;
	pastGround?: true;
}

/** A search for where the poll `resumeFrom` goes on from stopped, not found yet. */
function searchAfter(resumeFrom: NonNullable<SavedPagingState['resumeFrom']>): Search {
	return {
		searchFor: resumeFrom.after,
		found: false,
		...(resumeFrom.pastGround && { pastGround: true }),
	};
}

/** $lastPollStartedAt before the first successful poll: everything. */
export const NO_POLL_YET = '1970-01-01T00:00:00.000Z';

/** Where a poll asks from ($lastPollStartedAt, ms): earlier while items are owed; 0 before any poll. */
export function askedSince(saved: SavedPagingState | undefined): number {
	if (saved?.owed && saved.askFrom !== undefined) return saved.askFrom;
	return saved?.lastPollStartedAt ?? 0;
}

/** The values `{{ $name }}` in With may use. $cursor only with Dedupe Greatest, which has one. */
export function cursorValues(
	store: DedupeStore,
	saved: SavedPagingState | undefined,
	firstCursor: string,
): Record<string, unknown> {
	const lastPollStartedAt = new Date(askedSince(saved)).toISOString();
	return store.kind === 'greatest'
		? { cursor: store.cursor ?? firstCursor, lastPollStartedAt }
		: { lastPollStartedAt };
}

/** Checks With's placeholders at activation, so a wrong name refuses activation with the field named. */
export function checkPlaceholders(args: Record<string, unknown>, store: DedupeStore): void {
	if (store.kind !== 'greatest' && placeholdersIn(args).has('cursor'))
		throw new ConfigError(
			'with',
			'{{ $cursor }}',
			`$cursor is the high-water mark of Dedupe "greatest"; with Dedupe "${store.kind}" ask for what is new with {{ $lastPollStartedAt }}`,
		);
	fillPlaceholders(args, cursorValues(store, undefined, ''));
}

/** Verdicts of an item the trigger already knows: a newest-first list is known from there on. */
const KNOWN: ReadonlySet<Verdict> = new Set<Verdict>([
	'seen',
	'at_or_below_watermark',
	'unchanged',
	'again',
]);

/** Where on a page (an index; -1: not there) known ground is, and the history below it begins. */
export interface Ground {
	/** The first item the trigger knows: the page reaches known ground. */
	known: number;
	/**
	 * The first item a poll listed before, known or owed (a restaged or rolled-back run's item,
	 * whose record the undo took back): on a newest-first list, what lies below it was listed then.
	 */
	listedBefore: number;
}

const NO_GROUND: Ground = { known: -1, listedBefore: -1 };

/**
 * Where a page reaches known ground: its first item that is remembered (Unique, Time Window), at or
 * below the high-water mark (Greatest), unchanged (Changed), or at or before the anchor (Last); and
 * its first item listed before (that, or an owed item in `listedOwed`). Owed items listed on the
 * page are taken out of `owed` (their key hashes). A fresh store knows nothing; None remembers
 * nothing, so every page is new.
 */
export async function knownGroundAt(
	store: DedupeStore,
	expressions: PollExpressions,
	items: readonly unknown[],
	now: number,
	owed?: Set<string>,
	listedOwed?: ReadonlySet<string>,
): Promise<Ground> {
	if (store.isFresh || store.kind === 'none' || items.length === 0) return NO_GROUND;
	const keyed = await expressions.keyList(items, { withVersion: store.needsVersion });
	if (owed) for (const { key } of keyed) owed.delete(itemHash(key));
	const known = store
		.plan(keyed, now)
		.candidates.filter(({ verdict }) => KNOWN.has(verdict))
		.map(({ index }) => index);
	const listedBefore = [
		...known,
		...keyed.filter(({ key }) => listedOwed?.has(itemHash(key))).map(({ index }) => index),
	];
	const first = (at: number[]) => (at.length === 0 ? -1 : Math.min(...at));
	return { known: first(known), listedBefore: first(listedBefore) };
}

export interface PageRequestContext {
	context: Omit<OpContext, 'memory'>;
	/** The validators of the last successful poll: sent with the first page only. */
	memory: OpMemory;
	signal?: AbortSignal;
	timeoutMs?: number;
}

/**
 * A Poll Trigger's paginated source: fetches a poll's pages, and after the poll's one state write
 * says (once per occurrence) when Max Pages cut it short.
 */
export class PagedSource {
	private state: SavedPagingState | undefined;
	/** The poll in flight: when it began, what it asked from and fetched, until commit(). */
	private pending:
		| {
				startedAt: number;
				fresh: boolean;
				result: PagedResult;
				askedSince: number;
				/** owe() calls before the fetch: a poll that lists what was owed then pays it. */
				owedCalls: number;
				/** It went on from where the poll before stopped (resumeFrom), not from the first page. */
				resumed: boolean;
				/** It paged past known ground for the items owed (owedHashes) until each was listed. */
				pagedForOwed: boolean;
				/** Max Pages cut it short: the hash (hex) of the last item listed. */
				lastItem?: string;
				/** A refused continuation left Max Pages no request for the first page: the report. */
				noRoom?: string;
				/** It did not list the item a refused continuation stopped at (`lastItem`). */
				searching?: boolean;
				/** It read from the first page, the request to go on from having been refused. */
				fellBack?: boolean;
				/** It asked from before the last poll began ($lastPollStartedAt), for the items owed. */
				reread: boolean;
				/** It listed an item listed before: how many items it listed up to there (pastGround). */
				pastGround?: number;
				/** Its items from `from` to before `to` lie below an item listed before (searchHistory). */
				searchHistory?: { from: number; to: number };
		  }
		| undefined;
	/** Counts owe() calls: one during a poll is not paid by that poll. */
	private owedCalls = 0;
	/**
	 * The poll being fetched listed an item listed before (newest first; Ground.listedBefore): how
	 * many items it listed up to the first, which the items after it lie below.
	 */
	private pastGround: number | undefined;
	/**
	 * The poll being fetched searched from the first page for where a refused continuation stopped
	 * and listed an item listed before above it: its items from `from` to before `to` (that item's
	 * place; Infinity until listed) were listed by the polls before, the pages the search reads again.
	 */
	private searchHistory: { from: number; to: number } | undefined;
	/** The poll being fetched read from the first page, its request to go on from having expired. */
	private fellBack: string | undefined;
	/**
	 * The last poll committed read to the end of the list (or of what a poll reads: Max Pages with
	 * nothing to go on from), so that it ends a pass over the source (owed.ts).
	 */
	private endedList = false;

	constructor(
		private readonly settings: PagingSettings,
		private readonly args: Record<string, unknown>,
		saved: SavedPagingState | undefined,
		private readonly store: DedupeStore,
		private readonly expressions: PollExpressions,
		private readonly clock: Clock,
		private readonly firstPollStartsAll: boolean,
	) {
		// A poll to go on from was asked with other With or pagination settings: start afresh.
		this.state =
			saved?.resumeFrom && saved.resumeFrom.of !== this.settingsHash
				? { ...saved, resumeFrom: undefined }
				: saved;
		checkPlaceholders(args, store);
	}

	/** Names the request settings a poll to go on from (resumeFrom) was asked with. */
	private get settingsHash(): string {
		return unitsToHex(hash64(JSON.stringify([this.args, this.settings.pagination.identity])));
	}

	/** Whether Execute step shows the requests: they differ from With as written. */
	get showsRequests(): boolean {
		return this.settings.pagination.enabled || placeholdersIn(this.args).size > 0;
	}

	/** What to keep in static data, in the same write as the poll's runs. */
	get saved(): SavedPagingState | undefined {
		return this.state;
	}

	/**
	 * Items are expected back from the source (runs restaged or forgotten at activation, a run n8n
	 * could not create, Start Again): polls ask from `askFrom` (or `from`, if earlier: Start Again
	 * asks from the start, 0, as no poll knows when its items were listed) and page past known ground
	 * until a poll lists them or its list ends.
	 */
	owe(from?: number): void {
		this.owedCalls++;
		const askFrom = Math.min(this.state?.askFrom ?? Infinity, from ?? Infinity);
		this.state = { ...this.state, owed: true, ...(askFrom !== Infinity && { askFrom }) };
	}

	/** Every run in the outbox is settled: unless items are owed, no earlier position is needed. */
	runsSettled(): void {
		if (this.state?.owed || this.state?.askFrom === undefined) return;
		this.state = { ...this.state };
		delete this.state.askFrom;
	}

	/** Whether the next poll reads the list from its first page (not going on from a poll Max Pages cut short). */
	get readsFromHead(): boolean {
		return this.state?.resumeFrom === undefined;
	}

	/**
	 * The pages of one poll, with the cursor filled into With. Changes nothing until commit(). A
	 * request to go on from that the source no longer answers (a 4xx other than 429: an expired
	 * link or token) is dropped: the poll reads from the first page instead, past known ground until
	 * it lists the last item the cut poll listed, and `fellBack` says so (once: commit drops it).
	 */
	async fetch(request: PageRequestContext): Promise<PagedResult> {
		const startedAt = this.clock.now();
		const fresh = this.store.isFresh;
		const { store, expressions } = this;
		const owed = this.state?.owed ? store.owedHashes() : undefined;
		const owedCalls = this.owedCalls;
		const resumeFrom = this.state?.resumeFrom;
		const reread = askedSince(this.state) < (this.state?.lastPollStartedAt ?? 0);
		this.fellBack = undefined;
		let result: PagedResult;
		let resumed = resumeFrom !== undefined;
		// Still searching for where a refused continuation stopped: this poll goes on searching.
		let search = resumeFrom?.searching ? searchAfter(resumeFrom) : undefined;
		let noRoom: string | undefined;
		try {
			result = await this.pages(request, startedAt, owed, resumeFrom && { resumeFrom }, search);
		} catch (error) {
			const status = error instanceof ConnectorError ? error.details.status : undefined;
			if (!resumeFrom || status === undefined || status < 400 || status >= 500 || status === 429)
				throw error;
			resumed = false;
			// Refused again after a poll that fell back (searching still, or having found where the cut
			// poll stopped): the source's links expire before the next poll, and Max Pages leaves too
			// few requests to read from the first page past the pages read, so every poll would fall
			// back for ever. Reported, as Max Pages is; this poll reads from the head as usual, and the
			// next one from the head again.
			const searchedBefore = resumeFrom.searching === true || resumeFrom.fellBack === true;
			search = searchedBefore ? undefined : searchAfter(resumeFrom);
			// No validators: a 304 would end the poll without the pages below the cut.
			// The refused request counts against Max Pages: a poll sends at most that many.
			result = await this.pages({ ...request, memory: {} }, startedAt, owed, undefined, search, 1);
			if (searchedBefore)
				noRoom = `${fieldRef('pagination.maxPages')} reached: the request for the page after the last poll's (${String(resumeFrom.request.url)}) was answered HTTP ${status} again while the trigger searched from the first page for where an earlier poll stopped: the source no longer knows it (its links expire before the next poll), and ${fieldRef('pagination.maxPages')} leaves too few requests to read that far from the first page: items past the pages those polls read may not have been started. Raise ${fieldRef('pagination.maxPages')} or poll more often than the source's links expire`;
			else if (result.kind === 'pages' && result.pages === 0) {
				// No page read: a limit, reported as Max Pages is; the next poll reads from the head.
				noRoom = `${fieldRef('pagination.maxPages')} reached: the request for the page after the last poll's (${String(resumeFrom.request.url)}) was answered HTTP ${status}, the source no longer knows it (an expired link or token), and no request was left to read from the first page: items past the pages the last poll read may not have been started. Raise ${fieldRef('pagination.maxPages')} or poll more often than the source's links expire`;
				search = undefined;
			} else
				this.fellBack = `The request for the page after the last poll's (${String(resumeFrom.request.url)}) was answered HTTP ${status}: the source no longer knows it (an expired link or token). This poll read from the first page instead, past known ground until it listed the last item that poll had listed`;
		}
		const last = result.kind === 'pages' && result.stop === 'page_limit' && result.items.at(-1);
		// Cut short before it found where the expired continuation stopped: the next poll goes on
		// searching for that item, so that what lies after it is not taken for history.
		const lastItem =
			search && !search.found
				? search.searchFor
				: last !== undefined && last !== false
					? unitsToHex(
							itemHash(
								(await expressions.keyList([last], { withVersion: store.needsVersion }))[0].key,
							),
						)
					: undefined;
		this.pending = {
			startedAt,
			fresh,
			result,
			askedSince: askedSince(this.state),
			owedCalls,
			resumed,
			pagedForOwed: owed !== undefined,
			reread: reread && placeholdersIn(this.args).has('lastPollStartedAt'),
			...(this.pastGround !== undefined && { pastGround: this.pastGround }),
			// Searching still for where a poll past ground stopped: below that place the next poll's
			// pages are past ground too (none of this poll's items lies there).
			...(this.pastGround === undefined &&
				search?.pastGround &&
				!search.found && { pastGround: Infinity }),
			...(this.searchHistory && { searchHistory: this.searchHistory }),
			...(lastItem !== undefined && { lastItem }),
			...(noRoom !== undefined && { noRoom }),
			...(search && !search.found && { searching: true }),
			...(search && { fellBack: true }),
		};
		return result;
	}

	/**
	 * One poll's pages: from the first page, or going on from `resumeFrom`, or from the first page
	 * past known ground until a page lists the item `searchFor` (hash, hex), judging what follows it.
	 * While items are owed, no page is known ground before every owed item was listed (`owed`).
	 */
	private async pages(
		request: PageRequestContext,
		startedAt: number,
		owed: Set<string> | undefined,
		from?: { resumeFrom: NonNullable<SavedPagingState['resumeFrom']> },
		search?: Search,
		spent = 0,
	): Promise<PagedResult> {
		const { settings, store, expressions, clock } = this;
		const values = cursorValues(store, this.state, settings.firstCursor);
		const resumeFrom = from?.resumeFrom;
		const listStart = fillPlaceholders(this.args, values);
		const first = resumeFrom?.request ?? listStart;
		// The credential goes only where the list's first request, as configured, goes (not where a
		// saved next request points): a next link to another origin gets neither it nor With's headers.
		const credentialScope = {
			home: String(listStart.url),
			hosts: settings.pagination.credentialHosts,
		};
		const listedOwed = store.listedOwedHashes();
		const knownGround = async (items: unknown[]) =>
			await knownGroundAt(store, expressions, items, startedAt, owed, listedOwed);
		// Listed on the page: owed items are taken out, whichever of its items are judged (the last
		// `judgedItems.length` of the page).
		const judged = async (page: unknown[], judgedItems: unknown[]): Promise<Ground> => {
			if (owed && judgedItems !== page)
				await knownGroundAt(store, expressions, page, startedAt, owed);
			const ground = await knownGround(judgedItems);
			const onPage = (at: number) => (at < 0 ? at : at + page.length - judgedItems.length);
			return { known: onPage(ground.known), listedBefore: onPage(ground.listedBefore) };
		};
		// Where on a page known ground is, owed items aside (they are taken out as listed). Searching
		// for where an expired continuation stopped: known ground only after its last item.
		let firstPage = true;
		const judge = async (items: unknown[]): Promise<Ground> => {
			if (resumeFrom && firstPage && !search) {
				firstPage = false;
				const page = await resumedPage(store, expressions, items, resumeFrom.after, startedAt);
				if (page !== 'known') return await judged(items, page);
				// Its first item is known: the rest of the list is history.
				if (owed) await knownGround(items);
				return { known: 0, listedBefore: 0 };
			}
			if (!search || search.found) return await knownGround(items);
			const at = await indexOfItem(store, expressions, items, search.searchFor);
			search.found = at >= 0;
			// Above that item, what lies below an item listed before was listed by the polls before
			// (the pages read again): history but for the items owed, as on any newest-first list,
			// though the search reads on past it.
			const above = at >= 0 ? items.slice(0, at + 1) : items;
			const ground = await knownGroundAt(
				store,
				expressions,
				above,
				startedAt,
				undefined,
				listedOwed,
			);
			if (ground.listedBefore >= 0)
				this.searchHistory ??= { from: listed + ground.listedBefore + 1, to: Infinity };
			if (at >= 0) {
				if (this.searchHistory) this.searchHistory.to = listed + at + 1;
				// Below it the cut poll's list goes on: past ground if that poll was.
				if (search.pastGround) this.pastGround ??= listed + at + 1;
			}
			return await judged(items, at >= 0 ? items.slice(at + 1) : []);
		};
		// Known ground stops the poll once no owed item is still to be listed. What lies below the
		// first item listed before (known, or owed from a poll) is history, but for the items owed
		// (`pastGround`).
		this.pastGround = resumeFrom?.pastGround ? 0 : undefined;
		this.searchHistory =
			search && resumeFrom?.searchPastGround ? { from: 0, to: Infinity } : undefined;
		let listed = 0;
		const stopsAt = async (items: unknown[]) => {
			const ground = await judge(items);
			if (ground.listedBefore >= 0) this.pastGround ??= listed + ground.listedBefore + 1;
			listed += items.length;
			return ground.known >= 0 && (owed === undefined || owed.size === 0);
		};
		return await settings.pagination.fetch(
			first,
			{
				request: (args, first, endStatuses) =>
					httpExchange(
						args,
						{
							...request.context,
							memory: request.memory,
							signal: request.signal,
							timeoutMs: request.timeoutMs,
						},
						{ conditional: first, endStatuses, credentialScope },
					),
				selectItems: (body) => expressions.selectItems(body),
				knownGround:
					settings.listOrder === 'newestFirst' && settings.stopAtKnownGround ? stopsAt : undefined,
				// A first poll taking only a baseline reads to the end: oldest first, the next poll goes
				// on from where it stopped and would start the rest of the old list; newest first, an old
				// item below the pages read would start once the items above it are dropped, or once a
				// poll pages past known ground for an item owed.
				readWhole: store.isFresh && !this.firstPollStartsAll,
				clock,
				signal: request.signal,
				cursor: values.cursor,
				spent,
			},
			resumeFrom?.pages,
		);
	}

	/** After commit(): whether that poll read to the end of the list (see `endedList`). */
	get endedListing(): boolean {
		return this.endedList;
	}

	/**
	 * After fetch(): which of its items (by place in the list) that poll listed as history, where
	 * only the items owed start (a key Remember at Most forgot would start again); undefined: none.
	 * All of them when it asked from before the last poll began ($lastPollStartedAt) only because
	 * items are owed (the next poll asks from where it would have, for what is new). On a
	 * newest-first list, once the cap has forgotten keys, those below its first item listed before
	 * (known ground, or an item owed from a poll: Ground), on its page and on the pages read past it
	 * for items owed; and in a search for where a refused continuation stopped, those between an item
	 * listed before and that place (searchHistory). Before the cap forgot anything, a key there the
	 * store does not know was never started (one a numbered page's shift made the polls before skip,
	 * docs/pagination.md), and starts.
	 */
	get history(): ((at: number) => boolean) | undefined {
		if (this.pending?.reread) return () => true;
		if (!this.store.forgotten) return undefined;
		const { pastGround, searchHistory } = this.pending ?? {};
		if (pastGround === undefined && searchHistory === undefined) return undefined;
		return (at) =>
			(pastGround !== undefined && at >= pastGround) ||
			(searchHistory !== undefined && at >= searchHistory.from && at < searchHistory.to);
	}

	/**
	 * After fetch(): whether that poll ends a pass over the source (CommitOptions.endsPass): it does
	 * unless the next poll goes on from where it stopped, or it only read again for the items owed.
	 */
	get endsPass(): boolean {
		return this.pending !== undefined && !this.pending.reread && !this.goesOn(this.pending);
	}

	/**
	 * Whether the next poll goes on from the page after this one's last: newest first, Max Pages cut
	 * it short, and a next page is named (not when a first poll only took its baseline, nor after a
	 * refused continuation left too few requests: noRoom).
	 */
	private goesOn({
		result,
		lastItem,
		fresh,
		noRoom,
	}: NonNullable<PagedSource['pending']>): boolean {
		return (
			result.kind === 'pages' &&
			result.stop === 'page_limit' &&
			result.next !== undefined &&
			lastItem !== undefined &&
			noRoom === undefined &&
			this.settings.listOrder === 'newestFirst' &&
			!(fresh && !this.firstPollStartsAll)
		);
	}

	/** After fetch(): why that poll read from the first page though it was to go on (said once), if so. */
	takeFallBack(): string | undefined {
		const said = this.fellBack;
		this.fellBack = undefined;
		return said;
	}

	/**
	 * The poll's runs are remembered: $lastPollStartedAt moves to when it began, `askFrom` stays at
	 * or before what this poll asked from while runs are in the outbox (`runsUnsettled`), the items
	 * owed are paid unless Max Pages cut the poll short, and a poll that Max Pages cut short gives the
	 * message of its one failed execution (none while that goes on). Call before the write that keeps
	 * the runs.
	 */
	commit(runsUnsettled: boolean): string | undefined {
		if (!this.pending) return undefined;
		const goesOn = this.goesOn(this.pending);
		const {
			reread,
			startedAt,
			fresh,
			result,
			askedSince: asked,
			owedCalls,
			resumed,
			pagedForOwed,
			lastItem,
			noRoom,
			searching,
			fellBack,
			pastGround,
			searchHistory,
		} = this.pending;
		this.pending = undefined;
		const cutShort = result.kind === 'pages' && result.stop === 'page_limit';
		// Newest first, the next poll goes on from the page after (not when a first poll only took its
		// baseline). Nothing to report when the source names its next page by a link or token; page
		// numbers shift as items arrive at the head, so that failure is still said (resumedPage).
		const resumeFrom =
			goesOn && result.kind === 'pages' && result.next && lastItem !== undefined
				? {
						request: result.next,
						after: lastItem,
						of: this.settingsHash,
						// pageCount in the next page's expressions goes on from here (page numbers).
						pages: (resumed ? (this.state?.resumeFrom?.pages ?? 0) : 0) + result.pages,
						...(searching && { searching: true as const }),
						...(fellBack && { fellBack: true as const }),
						...(pastGround !== undefined && { pastGround: true as const }),
						...(searching && searchHistory && { searchPastGround: true as const }),
					}
				: undefined;
		const problem =
			noRoom ??
			(resumeFrom && this.settings.pagination.resumable
				? undefined
				: pageLimitProblem(result, {
						settings: this.settings,
						args: this.args,
						fresh,
						kind: this.store.kind,
						firstPollStartsAll: this.firstPollStartsAll,
						owed: this.state?.owed === true,
					}));
		// A resumed poll read older pages only: items listed at the head since the poll it goes on
		// from are asked for by the next poll, from that poll's start; so are those new since a poll
		// that read again only for the items owed (rereads).
		const next = nextPagingState(
			this.state,
			result,
			problem,
			resumed || reread ? (this.state?.lastPollStartedAt ?? startedAt) : startedAt,
		);
		const stillOwed = this.state?.owed && (cutShort || resumed || owedCalls !== this.owedCalls);
		// Nothing to go on from: an oldest-first poll with $cursor goes on from the cursor. Known
		// ground ends the list only for a poll that paged on for the items owed.
		this.endedList = cutShort
			? resumeFrom === undefined &&
				!(
					this.settings.listOrder === 'oldestFirst' &&
					this.store.kind === 'greatest' &&
					placeholdersIn(this.args).has('cursor')
				)
			: result.kind !== 'pages' || result.stop !== 'known_ground' || pagedForOwed;
		const askFrom =
			runsUnsettled || stillOwed ? Math.min(this.state?.askFrom ?? asked, asked) : undefined;
		this.state = {
			...next.state,
			...(askFrom !== undefined && { askFrom }),
			...(stillOwed && { owed: true as const }),
			...(resumeFrom && { resumeFrom }),
		};
		return next.report;
	}
}

/**
 * The first page of a poll that goes on from where Max Pages stopped the one before (`after`: the
 * hash, hex, of the last item that poll listed), as known ground should judge it. Items that arrived
 * at the head since shift a numbered page back, so it may begin with items that poll listed: only
 * those after `after` count. A page without `after` whose first item is new begins after it (a link
 * or token); one whose first item is known is taken as known ground ('known'): either the rest of the
 * list was history, or more than a page arrived at the head of a numbered list (docs/pagination.md).
 */
export async function resumedPage(
	store: DedupeStore,
	expressions: PollExpressions,
	items: unknown[],
	after: string,
	now: number,
): Promise<unknown[] | 'known'> {
	const keyed = await expressions.keyList(items, { withVersion: store.needsVersion });
	const at = keyed.findIndex(({ key }) => unitsToHex(itemHash(key)) === after);
	if (at >= 0) return items.slice(at + 1);
	if (
		items.length === 0 ||
		store.plan(keyed.slice(0, 1), now).candidates.every(({ verdict }) => KNOWN.has(verdict))
	)
		return 'known';
	return items;
}

/** Where on a page the item whose key hash (hex) is `hash` is; -1: not there. */
async function indexOfItem(
	store: DedupeStore,
	expressions: PollExpressions,
	items: unknown[],
	hash: string,
): Promise<number> {
	const keyed = await expressions.keyList(items, { withVersion: store.needsVersion });
	return keyed.findIndex(({ key }) => unitsToHex(itemHash(key)) === hash);
}

/**
 * Whether Max Pages may have left new items unstarted, as a message for one failed execution. Not
 * when the first poll only takes a baseline, nor for an oldest-first source that asks from $cursor
 * (the next poll goes on from the last item started).
 */
export function pageLimitProblem(
	result: PagedResult,
	poll: {
		settings: PagingSettings;
		args: Record<string, unknown>;
		fresh: boolean;
		kind: DedupeStore['kind'];
		firstPollStartsAll: boolean;
		/** Items were owed: paging went past known ground to find them. */
		owed?: boolean;
	},
): string | undefined {
	if (result.kind !== 'pages' || result.stop !== 'page_limit') return undefined;
	const { settings } = poll;
	if (poll.fresh && !poll.firstPollStartsAll) return undefined;
	if (
		settings.listOrder === 'oldestFirst' &&
		poll.kind === 'greatest' &&
		placeholdersIn(poll.args).has('cursor')
	)
		return undefined;
	const { pages } = result;
	const maxPages = fieldRef('pagination.maxPages');
	if (poll.owed && settings.listOrder === 'newestFirst')
		return `${maxPages} reached: items expected back after a stop, a crash or a run n8n could not create were not all listed in ${pages} pages; polls page on to find them and start them once listed: raise ${maxPages}`;
	return settings.listOrder === 'newestFirst'
		? `${maxPages} reached: all ${pages} pages were new; items beyond page ${pages} may not have been started: raise ${maxPages} or poll more often`
		: `${maxPages} reached: the source had more than ${pages} pages; items beyond page ${pages} may not have been started: put {{ $cursor }} (Dedupe Greatest) in the request, raise ${maxPages} or poll more often`;
}

/** Reports Max Pages once per occurrence: again only after a poll that was not cut short. */
export function nextPagingState(
	saved: SavedPagingState | undefined,
	result: PagedResult,
	problem: string | undefined,
	pollStartedAt: number,
): { state: SavedPagingState; report: string | undefined } {
	const report = problem && !saved?.limitReported ? problem : undefined;
	const cutShort = result.kind === 'pages' && result.stop === 'page_limit';
	return {
		state: {
			lastPollStartedAt: pollStartedAt,
			...(cutShort && (saved?.limitReported || report) ? { limitReported: true } : {}),
		},
		report,
	};
}
