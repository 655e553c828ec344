import jsonata from 'jsonata';

import type { Clock } from '../clock';
import { ConfigError } from '../configError';
import type { HttpAnswer } from './http';
import type { OpMemory } from './types';

/**
 * Paging for `http.request`: a page parameter updated in each request, a next URL in the response,
 * or a `Link: <…>; rel="next"` header. A poll has no run data, so the expressions are JSONata (as
 * Items and ID are) over `{ response: { body, headers, statusCode }, pageCount, cursor }`: the last
 * page's response, the number of pages received so far, and the trigger's cursor ($cursor in With).
 * The node maps its options (those of n8n's HTTP Request node) to these settings
 * (nodes/shared/pagination.ts).
 */
export type PagingMode =
	/** One request, no paging. */
	| 'off'
	/** Each next request updates parameters (a page number, an offset, a cursor token). */
	| 'parameter'
	/** The response gives the next page's URL. */
	| 'nextUrl'
	/** The response's Link header (rel="next") gives the next page's URL. */
	| 'linkHeader';

/** Besides a missing next page, when paging ends: at an empty page, at given status codes, or when an expression says so. */
export type PagingEnd = 'emptyPage' | 'statusCodes' | 'expression';

/** A request parameter each next request updates. */
export interface PageParameter {
	/** Where the value goes in the request. */
	in: 'query' | 'body' | 'headers';
	name: string;
	/** JSONata giving the value for the next request. */
	value: string;
}

export interface PaginationSettings {
	mode: PagingMode;
	/** JSONata giving the next page's URL (mode `nextUrl`). */
	nextUrl?: string;
	/** Mode `parameter`. */
	parameters?: PageParameter[];
	/** Unset: `emptyPage`. */
	endWhen?: PagingEnd;
	/** The status codes that end paging (`endWhen: 'statusCodes'`), comma-separated. */
	endStatuses?: string;
	/** JSONata, true when the last page was the last (`endWhen: 'expression'`). */
	endExpression?: string;
	/** Pages per poll at most; unset: 20; null: no limit. */
	maxPages?: number | null;
	/** Milliseconds to wait between two requests. */
	pauseMs?: number;
	/**
	 * Hosts besides the first request's origin whose pages get the credential and With's headers,
	 * comma-separated: names, or `*.example.com` for any subdomain. Unset: none.
	 */
	credentialHosts?: string;
	/** The settings as the user gave them, to tell whether they changed; unset: these settings. */
	identity?: string;
}

/**
 * A setting, as ConfigErrors name it: `pagination.` and its name in PaginationSettings (the node
 * says it as the option it reads it from).
 */
type PaginationField = `pagination.${Exclude<keyof PaginationSettings, 'identity'>}`;

function paginationError(field: PaginationField, value: unknown, problem: string): ConfigError {
	return new ConfigError(field, value, problem);
}

/** What an expression sees. */
export interface PageScope {
	response: { body: unknown; headers: Record<string, string>; statusCode: number };
	pageCount: number;
	cursor: unknown;
}

class PageExpression {
	private readonly expression: jsonata.Expression;

	constructor(
		readonly field: PaginationField,
		readonly source: string,
		readonly name?: string,
	) {
		try {
			this.expression = jsonata(source);
		} catch (error) {
			throw paginationError(
				field,
				source,
				`${name ? `"${name}": ` : ''}not valid JSONata: ${(error as Error)?.message ?? error}`,
			);
		}
	}

	async evaluate(scope: PageScope, where: string): Promise<unknown> {
		try {
			return await this.expression.evaluate(scope);
		} catch (error) {
			throw paginationError(
				this.field,
				this.source,
				`${this.name ? `"${this.name}": ` : ''}failed after ${where}: ${(error as Error)?.message ?? error}`,
			);
		}
	}
}

/** Why paging stopped. */
export type PagingStop =
	/** The source said it had no more (no next link, empty page, end status, Complete Expression). */
	| 'complete'
	/** A page reached items already remembered (or at or below the cursor). */
	| 'known_ground'
	/** Max Pages pages were all new and the source had more. */
	| 'page_limit';

/** One request as sent, for Execute step. */
export interface SentRequest {
	method: string;
	url: string;
	query?: unknown;
	headers?: unknown;
	body?: unknown;
}

export type PagedResult =
	| { kind: 'not_modified' }
	| {
			kind: 'pages';
			/** The items of every page, in the source's order. */
			items: unknown[];
			pages: number;
			stop: PagingStop;
			requests: SentRequest[];
			/** The first page's validators (ETag/Last-Modified): conditional requests are for the first page only. */
			memory: OpMemory;
			/** Max Pages: the request for the page after the last one read. */
			next?: Record<string, unknown>;
	  };

export interface PagingHooks {
	/** One exchange; `first` sends the remembered validators. */
	request(
		args: Record<string, unknown>,
		first: boolean,
		endStatuses: readonly number[],
	): Promise<HttpAnswer>;
	/** The list in a page's body (the trigger's Items). */
	selectItems(body: unknown): Promise<unknown[]>;
	/**
	 * Whether a page reaches what the trigger already knows, asked of every page read (the last too:
	 * the trigger learns where known ground is on it); unset: walk every page.
	 */
	knownGround?(items: unknown[]): Promise<boolean>;
	/** Requests the poll sent before this read (a refused continuation): they count against Max Pages. */
	spent?: number;
	/** Max Pages does not cut this read: a first poll taking its baseline reads the whole list. */
	readWhole?: boolean;
	clock: Clock;
	signal?: AbortSignal;
	cursor: unknown;
}

const MAX_PAGES_DEFAULT = 20;

/** Compiled paging settings; checks them once, at activation. */
export class Pagination {
	readonly mode: PagingMode;
	private readonly nextUrl: PageExpression | undefined;
	private readonly parameters: Array<PageParameter & { expression: PageExpression }>;
	private readonly endWhen: PagingEnd;
	private readonly endStatuses: number[];
	private readonly complete: PageExpression | undefined;
	/** Unset: no limit. */
	readonly maxPages: number | undefined;
	private readonly intervalMs: number;
	/** PaginationSettings.credentialHosts, lower-cased. */
	readonly credentialHosts: readonly string[];

	constructor(settings: PaginationSettings) {
		const { identity, ...rest } = settings;
		this.identity = identity ?? JSON.stringify(rest);
		this.mode = settings.mode;
		const modes: PagingMode[] = ['off', 'parameter', 'nextUrl', 'linkHeader'];
		if (!modes.includes(this.mode))
			throw paginationError('pagination.mode', this.mode, `must be one of ${modes.join(', ')}`);
		this.nextUrl =
			this.mode === 'nextUrl'
				? new PageExpression('pagination.nextUrl', required('pagination.nextUrl', settings.nextUrl))
				: undefined;
		this.parameters =
			this.mode === 'parameter'
				? (settings.parameters ?? []).map((parameter) => {
						if (!['query', 'body', 'headers'].includes(parameter.in))
							throw paginationError(
								'pagination.parameters',
								parameter.in,
								'must go in the query, body or headers',
							);
						if (!parameter.name?.trim())
							throw paginationError(
								'pagination.parameters',
								parameter.name,
								'every parameter needs a name',
							);
						return {
							...parameter,
							expression: new PageExpression(
								'pagination.parameters',
								required('pagination.parameters', parameter.value),
								parameter.name,
							),
						};
					})
				: [];
		if (this.mode === 'parameter' && this.parameters.length === 0)
			throw paginationError(
				'pagination.parameters',
				[],
				'add the parameter to update in each request (for example qs "page" with value "pageCount + 1")',
			);
		this.endWhen = settings.endWhen ?? 'emptyPage';
		if (!['emptyPage', 'statusCodes', 'expression'].includes(this.endWhen))
			throw paginationError(
				'pagination.endWhen',
				this.endWhen,
				'must be emptyPage, statusCodes or expression',
			);
		this.endStatuses = this.endWhen === 'statusCodes' ? parseStatuses(settings.endStatuses) : [];
		this.complete =
			this.endWhen === 'expression'
				? new PageExpression(
						'pagination.endExpression',
						required('pagination.endExpression', settings.endExpression),
					)
				: undefined;
		if (settings.maxPages === null) this.maxPages = undefined;
		else {
			const max = settings.maxPages ?? MAX_PAGES_DEFAULT;
			if (!Number.isInteger(max) || max < 1)
				throw paginationError(
					'pagination.maxPages',
					max,
					'must be a whole number of pages, at least 1',
				);
			this.maxPages = max;
		}
		const interval = settings.pauseMs ?? 0;
		if (!Number.isFinite(interval) || interval < 0)
			throw paginationError('pagination.pauseMs', interval, 'must be 0 or more milliseconds');
		this.intervalMs = interval;
		this.credentialHosts = parseHosts(settings.credentialHosts);
	}

	get enabled(): boolean {
		return this.mode !== 'off';
	}

	/** The settings as given, to tell whether they changed (a poll to go on from, core/poll/paging.ts). */
	readonly identity: string;

	/**
	 * Whether the request for a next page stays valid for a later poll: a next URL or cursor token the
	 * source gave names its place in the list, a page number or offset (an expression over
	 * `pageCount`) shifts as new items arrive at the head.
	 */
	get resumable(): boolean {
		return (
			this.mode === 'linkHeader' ||
			this.mode === 'nextUrl' ||
			(this.mode === 'parameter' &&
				this.parameters.every((parameter) => !/\bpageCount\b/.test(parameter.value)))
		);
	}

	/**
	 * Fetches pages from `args` (the op's arguments, placeholders filled) until the source is complete,
	 * a page reaches known ground, or Max Pages (of this call). Throws (nothing returned, so nothing
	 * remembered) on a failing expression, a next URL that is not one, a loop, or a page that is not a
	 * list. `pagesBefore`: `args` is the request for the page after those a poll that Max Pages cut
	 * short read (not the list's first page), and `pageCount` goes on from there.
	 */
	async fetch(
		args: Record<string, unknown>,
		hooks: PagingHooks,
		pagesBefore?: number,
	): Promise<PagedResult> {
		const resumed = pagesBefore !== undefined;
		const before = pagesBefore ?? 0;
		const items: unknown[] = [];
		const requests: SentRequest[] = [];
		const sent = new Set<string>();
		let memory: OpMemory = {};
		let current = args;
		const spent = hooks.spent ?? 0;
		for (let pageCount = 0; ; ) {
			if (this.maxPages !== undefined && spent >= this.maxPages)
				return this.result(items, pageCount, 'page_limit', requests, memory);
			const identity = JSON.stringify([
				current.method,
				current.url,
				current.query,
				current.headers,
				current.body,
			]);
			if (sent.has(identity)) throw this.loopError(current, before + pageCount);
			sent.add(identity);
			requests.push(describe(current));
			const where = `page ${before + pageCount + 1} (${String(current.method ?? 'GET').toUpperCase()} ${String(current.url)})`;
			const answer = await hooks.request(current, pageCount === 0 && !resumed, this.endStatuses);
			if (answer.kind === 'not_modified') return { kind: 'not_modified' };
			if (answer.kind === 'end_status')
				return this.result(items, pageCount, 'complete', requests, memory);
			if (pageCount === 0 && !resumed) memory = answer.memory;
			pageCount++;
			let pageItems: unknown[];
			try {
				pageItems = await hooks.selectItems(answer.data);
			} catch (error) {
				if (this.enabled && error instanceof Error) error.message = `${where}: ${error.message}`;
				throw error;
			}
			items.push(...pageItems);
			if (!this.enabled) return this.result(items, pageCount, 'complete', requests, memory);
			const scope: PageScope = {
				response: { body: answer.data, headers: answer.headers, statusCode: answer.status },
				pageCount: before + pageCount,
				cursor: hooks.cursor,
			};
			const known = hooks.knownGround !== undefined && (await hooks.knownGround(pageItems));
			if (this.endWhen === 'emptyPage' && pageItems.length === 0)
				return this.result(items, pageCount, 'complete', requests, memory);
			if (this.complete && truthy(await this.complete.evaluate(scope, where)))
				return this.result(items, pageCount, 'complete', requests, memory);
			if (known) return this.result(items, pageCount, 'known_ground', requests, memory);
			const next = await this.nextRequest(current, scope, answer.url, where);
			if (!next) return this.result(items, pageCount, 'complete', requests, memory);
			if (this.maxPages !== undefined && spent + pageCount >= this.maxPages && !hooks.readWhole)
				return this.result(items, pageCount, 'page_limit', requests, memory, next);
			if (this.intervalMs > 0) await sleep(hooks.clock, this.intervalMs, hooks.signal);
			hooks.signal?.throwIfAborted();
			current = next;
		}
	}

	private result(
		items: unknown[],
		pages: number,
		stop: PagingStop,
		requests: SentRequest[],
		memory: OpMemory,
		next?: Record<string, unknown>,
	): PagedResult {
		return { kind: 'pages', items, pages, stop, requests, memory, ...(next && { next }) };
	}

	/**
	 * The request for the page after the one in `scope` (fetched from `pageUrl`), or undefined when
	 * the source has no more.
	 */
	private async nextRequest(
		current: Record<string, unknown>,
		scope: PageScope,
		pageUrl: string,
		where: string,
	): Promise<Record<string, unknown> | undefined> {
		switch (this.mode) {
			case 'off':
				return undefined;
			case 'nextUrl': {
				const url = await this.nextUrl!.evaluate(scope, where);
				if (url === undefined || url === null || url === '') return undefined;
				return withUrl(
					current,
					resolvedUrl(
						'pagination.nextUrl',
						url,
						pageUrl,
						`the expression ${this.nextUrl!.source} gave it after ${where}`,
					),
				);
			}
			case 'linkHeader': {
				const url = nextLink(scope.response.headers.link);
				if (url === undefined) return undefined;
				return withUrl(
					current,
					resolvedUrl(
						'pagination.mode',
						url,
						pageUrl,
						`the Link header (rel="next") gave it after ${where}`,
					),
				);
			}
			case 'parameter': {
				const next: Record<string, unknown> = { ...current };
				for (const parameter of this.parameters) {
					const value = await parameter.expression.evaluate(scope, where);
					if (value === undefined)
						throw paginationError(
							'pagination.parameters',
							parameter.value,
							`"${parameter.name}" gave nothing after ${where}`,
						);
					const existing = current[parameter.in];
					next[parameter.in] = {
						...(typeof existing === 'object' && existing !== null ? existing : {}),
						[parameter.name]: value,
					};
				}
				return next;
			}
		}
	}

	private loopError(current: Record<string, unknown>, pageCount: number): ConfigError {
		const field: PaginationField =
			this.mode === 'nextUrl'
				? 'pagination.nextUrl'
				: this.mode === 'parameter'
					? 'pagination.parameters'
					: 'pagination.mode';
		return paginationError(
			field,
			this.mode === 'parameter' ? describe(current) : current.url,
			`page ${pageCount + 1} would repeat a request already sent in this poll (a loop); the source or the expression does not move on`,
		);
	}
}

function required(field: PaginationField, value: string | undefined): string {
	if (!value?.trim())
		throw paginationError(field, value ?? '', 'must be set for this pagination mode');
	return value.trim();
}

function parseStatuses(text: string | undefined): number[] {
	const codes = (text ?? '')
		.split(',')
		.map((part) => part.trim())
		.filter((part) => part !== '');
	const statuses = codes.map(Number);
	if (
		statuses.length === 0 ||
		statuses.some((code) => !Number.isInteger(code) || code < 100 || code > 599)
	)
		throw paginationError(
			'pagination.endStatuses',
			text ?? '',
			'must be HTTP status codes separated by commas, for example "404"',
		);
	return statuses;
}

/** "api.example.com, *.example.com" as host names, lower-cased; anything else is refused. */
function parseHosts(text: string | undefined): string[] {
	const hosts = (text ?? '')
		.split(',')
		.map((part) => part.trim().toLowerCase().replace(/\.$/, ''))
		.filter((part) => part !== '');
	for (const host of hosts)
		if (!/^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(host) && !/^\[[0-9a-f:.]+\]$/.test(host))
			throw paginationError(
				'pagination.credentialHosts',
				text,
				`"${host}" is not a host name: give names separated by commas, for example "api.example.com, *.example.com" (no scheme, port or path)`,
			);
	return hosts;
}

function truthy(value: unknown): boolean {
	return value !== undefined && value !== null && value !== false && value !== '' && value !== 0;
}

/**
 * A next link as an absolute URL. A relative one is relative to the page it came from (RFC 3986 §5,
 * RFC 8288 §3.1), not to the Base URL: `/api/v2/t?page=2` from https://x/api/v2/t is https://x/api/v2/t?page=2.
 * An http link from an https page is refused, as a browser refuses mixed content.
 */
function resolvedUrl(field: PaginationField, value: unknown, pageUrl: string, how: string): string {
	let downgrade: string | undefined;
	if (typeof value === 'string') {
		try {
			const url = new URL(value, pageUrl);
			if (url.protocol === 'https:') return url.href;
			if (url.protocol === 'http:') {
				if (new URL(pageUrl).protocol !== 'https:') return url.href;
				downgrade = url.href;
			}
		} catch {
			// Not a URL: reported below.
		}
	}
	if (downgrade)
		throw new ConfigError(
			field,
			downgrade,
			`${how}; a page fetched over https never leads to http (its answer could be read or changed on the way): paging stopped, nothing was sent there`,
		);
	throw new ConfigError(
		field,
		value,
		`${how}; a next page must be an http(s) URL, absolute or relative to the page's URL`,
	);
}

/** The next request at `url`: the URL carries its own query, so the first request's is dropped. */
function withUrl(current: Record<string, unknown>, url: string): Record<string, unknown> {
	const next: Record<string, unknown> = { ...current, url };
	delete next.query;
	return next;
}

/** The target of `rel="next"` in a Link header (RFC 8288), or undefined. */
export function nextLink(header: string | undefined): string | undefined {
	if (!header) return undefined;
	for (const match of header.matchAll(/<([^>]*)>((?:\s*;\s*[^;,]+)*)/g)) {
		const params = match[2];
		const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(params);
		const values = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
		if (values.includes('next')) return match[1];
	}
	return undefined;
}

function describe(args: Record<string, unknown>): SentRequest {
	const request: SentRequest = {
		method: String(args.method ?? 'GET').toUpperCase(),
		url: String(args.url),
	};
	if (args.query !== undefined) request.query = args.query;
	if (args.headers !== undefined) request.headers = args.headers;
	if (args.body !== undefined) request.body = args.body;
	return request;
}

function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
	return new Promise((resolve, reject) => {
		const timer = clock.setTimer(() => {
			signal?.removeEventListener('abort', onAbort);
			resolve();
		}, ms);
		const onAbort = () => {
			timer.cancel();
			reject(signal!.reason);
		};
		signal?.addEventListener('abort', onAbort, { once: true });
	});
}
