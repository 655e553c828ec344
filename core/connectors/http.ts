import { argumentError } from './args';
import {
	ConnectorError,
	type ConnectorOp,
	type CredentialScope,
	type OpContext,
	type OpMemory,
} from './types';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];
/** Conditional requests only make sense for reads. */
const CONDITIONAL_METHODS = ['GET', 'HEAD'];
/** Answers that carry no content whatever the method. */
const BODILESS_STATUSES = [204, 205];

/**
 * `http.request`: one HTTP call whose JSON body is the op's result. Keeps the last ETag and
 * Last-Modified and sends them back, so an unchanged source answers 304 and costs nothing.
 * A response that has no body by definition (to HEAD, RFC 9110 §9.3.2; 204 No Content and 205 Reset
 * Content, §15.3.5-6: a DELETE or a PUT often answers so) results in `{ status, headers }`.
 */
export const httpRequestOp: ConnectorOp = {
	name: 'http.request',
	description: 'An HTTP request; the JSON response body is the result',
	transport: 'http',
	check(args) {
		requestArgs(args);
	},
	async run(args, context) {
		const answer = await httpExchange(args, context, { conditional: true });
		if (answer.kind !== 'data') return { kind: 'not_modified' };
		return { kind: 'data', data: answer.data, memory: answer.memory };
	},
};

/** One answer of `http.request` with what paging reads from it (core/connectors/pagination.ts). */
export type HttpAnswer =
	| { kind: 'not_modified' }
	| {
			kind: 'data';
			data: unknown;
			/** The page's absolute URL, for its relative links. */
			url: string;
			status: number;
			headers: Record<string, string>;
			memory: OpMemory;
	  }
	/** One of `options.endStatuses`: the source says there is nothing more (no body read). */
	| { kind: 'end_status'; status: number; headers: Record<string, string> };

/**
 * The one HTTP exchange of `http.request`. `conditional`: send the remembered validators (only the
 * first page of a paginated poll does). `endStatuses`: statuses that are an answer, not a failure.
 * `credentialScope`: a paginated poll's page (HttpRequest.credentialScope).
 */
export async function httpExchange(
	args: Record<string, unknown>,
	context: OpContext,
	options: {
		conditional: boolean;
		endStatuses?: readonly number[];
		credentialScope?: CredentialScope;
	},
): Promise<HttpAnswer> {
	if (!context.http) throw new Error('http.request needs an HTTP transport');
	const { method, url, query, headers } = requestArgs(args);
	if (options.conditional && CONDITIONAL_METHODS.includes(method)) {
		if (context.memory.etag) headers['if-none-match'] = context.memory.etag;
		if (context.memory.lastModified) headers['if-modified-since'] = context.memory.lastModified;
	}
	const response = await context.http({
		method,
		url,
		query,
		headers,
		body: args.body,
		timeoutMs: context.timeoutMs,
		signal: context.signal,
		...(options.credentialScope && { credentialScope: options.credentialScope }),
	});
	const where = `${method} ${url}`;
	if (response.status === 304 && options.conditional) return { kind: 'not_modified' };
	if (options.endStatuses?.includes(response.status))
		return { kind: 'end_status', status: response.status, headers: response.headers };
	if (response.status === 429 || response.status === 503) {
		throw new ConnectorError(
			`${where} answered ${response.status}${response.status === 429 ? ' Too Many Requests' : ' Service Unavailable'}`,
			{
				status: response.status,
				retryAfterMs: parseRetryAfter(response.headers['retry-after']),
				description: snippet(response.body),
			},
		);
	}
	if (response.status < 200 || response.status >= 300) {
		throw new ConnectorError(`${where} answered HTTP ${response.status}`, {
			status: response.status,
			description: snippet(response.body),
		});
	}
	const data =
		method === 'HEAD' || BODILESS_STATUSES.includes(response.status)
			? { status: response.status, headers: response.headers }
			: parseJsonBody(response.body, response.headers['content-type'], where);
	return {
		kind: 'data',
		data,
		url: response.url,
		status: response.status,
		headers: response.headers,
		memory: validatorsOf(response.headers),
	};
}

/** The request `with` describes, or a ConfigError naming the argument and its value. */
export function requestArgs(args: Record<string, unknown>): {
	method: string;
	url: string;
	query: Record<string, string>;
	headers: Record<string, string>;
} {
	const method = String(args.method ?? 'GET').toUpperCase();
	if (!METHODS.includes(method)) {
		throw argumentError('method', args.method, `must be one of ${METHODS.join(', ')}`);
	}
	const url = args.url;
	if (typeof url !== 'string' || url.trim() === '') {
		throw argumentError(
			'url',
			url,
			"must be a URL or a path relative to the credential's base URL",
		);
	}
	return {
		method,
		url,
		query: stringRecord(args.query, 'query'),
		headers: { ...stringRecord(args.headers, 'headers') },
	};
}

function parseJsonBody(body: string, contentType: string | undefined, where: string): unknown {
	if (body.trim() === '')
		throw new ConnectorError(`${where} answered with an empty body, not JSON`);
	try {
		return JSON.parse(body);
	} catch {
		throw new ConnectorError(
			`${where} answered ${contentType ?? 'without a content type'}, not JSON`,
			{ description: snippet(body) },
		);
	}
}

function validatorsOf(headers: Record<string, string>): OpMemory {
	const memory: OpMemory = {};
	if (headers.etag) memory.etag = headers.etag;
	if (headers['last-modified']) memory.lastModified = headers['last-modified'];
	return memory;
}

/** Retry-After is either delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
	if (!value) return undefined;
	if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
	const date = Date.parse(value);
	return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function stringRecord(value: unknown, key: string): Record<string, string> {
	if (value === undefined || value === null || value === '') return {};
	if (typeof value !== 'object' || Array.isArray(value))
		throw argumentError(key, value, 'must be an object of names to values');
	return Object.fromEntries(
		Object.entries(value).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
	);
}

/** A body shortened for an error's description. */
export function snippet(text: string): string {
	const flat = text.replace(/\s+/g, ' ').trim();
	return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}
