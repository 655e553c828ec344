import type {
	ICredentialDataDecryptedObject,
	IHttpRequestMethods,
	IHttpRequestOptions,
	IN8nHttpFullResponse,
	INode,
	IOAuth2Options,
} from 'n8n-workflow';

import {
	type GenericAuthType,
	type HttpAuthSettings,
	LEGACY_HTTP_CREDENTIAL,
	type PreparedHttpRequest,
	prepareHttpRequest,
	resolveUrl,
} from '../../core/connectors/httpAuth';
import { endpointOf, unreachable } from '../../core/connectors/network';
import type { HttpRequest, HttpTransport } from '../../core/connectors/types';
import { GENERIC_AUTH_NAMES } from './parameters';

export const HTTP_CREDENTIAL = LEGACY_HTTP_CREDENTIAL;

export interface HttpHelpers {
	getNode(): INode;
	getCredentials(type: string): Promise<ICredentialDataDecryptedObject>;
	helpers: {
		httpRequest(options: IHttpRequestOptions): Promise<unknown>;
		httpRequestWithAuthentication(
			this: unknown,
			credentialsType: string,
			options: IHttpRequestOptions,
		): Promise<unknown>;
		requestOAuth2(
			this: unknown,
			credentialsType: string,
			options: OAuth2RequestOptions,
			oAuth2Options?: IOAuth2Options,
		): Promise<unknown>;
	};
}

/** The options n8n's `requestOAuth2` helper takes (its legacy request format), as far as used here. */
export interface OAuth2RequestOptions {
	method: IHttpRequestMethods;
	url: string;
	qs?: Record<string, string>;
	headers: Record<string, string>;
	body?: string;
	timeout?: number;
	json: false;
	/** Every status is answered, not thrown. */
	simple: false;
	resolveWithFullResponse: true;
}

/**
 * Performs the connector's HTTP requests with n8n's request helpers, so n8n's proxy, TLS and
 * credential handling apply. Status codes are returned, not thrown, because 304/429/503 mean something.
 *
 * - No credential: `helpers.httpRequest`.
 * - n8n's OAuth2 API credential: `helpers.requestOAuth2` with `simple: false`, the path n8n's HTTP
 *   Request node takes. n8n signs the request with the stored token; when the API answers 401 it
 *   refreshes the token (refresh_token grant, or a new client-credentials token), saves it in the
 *   credential and sends the request once more. (`httpRequestWithAuthentication` would not: in
 *   n8n 2.41 it treats only types that extend oAuth2Api as OAuth2, not oAuth2Api itself.)
 * - n8n's other generic types: the credential is added here (core/connectors/httpAuth.ts), as the HTTP
 *   Request node adds it (Basic Auth has no `authenticate` of its own for n8n's helper to apply).
 * - This package's own credential: `helpers.httpRequestWithAuthentication`, as before.
 * - A paginated poll's page on another origin than the list's first request (sendsCredentials):
 *   `helpers.httpRequest`, without the credential and With's headers.
 */
export function n8nHttpTransport(context: HttpHelpers, settings: HttpAuthSettings): HttpTransport {
	const { auth } = settings;
	return async (request) => {
		const credential =
			auth.kind === 'generic' && auth.type !== 'oAuth2Api'
				? {
						data: await context.getCredentials(auth.type),
						name: credentialName(context.getNode(), auth.type),
					}
				: undefined;
		// Relative URLs of version 1 nodes resolve against their credential's base URL, here rather
		// than by n8n's baseURL, so the answer can say where it came from.
		const legacyBaseUrl =
			auth.kind === 'legacy'
				? String((await context.getCredentials(HTTP_CREDENTIAL)).baseUrl ?? '')
				: undefined;
		const prepared = prepareHttpRequest(request, settings, credential, legacyBaseUrl);
		if (auth.kind === 'generic' && auth.type === 'oAuth2Api' && prepared.credentials)
			return await oauth2Request(context, prepared, request);
		const options: IHttpRequestOptions = {
			method: prepared.method as IHttpRequestMethods,
			url: legacyBaseUrl === undefined ? prepared.url : resolveUrl(prepared.url, legacyBaseUrl),
			qs: prepared.query,
			headers: prepared.headers,
			body: prepared.body,
			timeout: request.timeoutMs,
			abortSignal: request.signal,
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
			// Bytes as they came: read as text, a binary object (s3.download) would be corrupted.
			encoding: request.responseType === 'bytes' ? 'arraybuffer' : 'text',
			json: false,
		};
		if (request.skipTlsVerify) options.skipSslCertificateValidation = true;
		if (prepared.basicAuth) options.auth = prepared.basicAuth;
		// n8n's helper reads the node from `this`.
		const response = (await reached(
			options,
			auth.kind === 'legacy' && prepared.credentials
				? context.helpers.httpRequestWithAuthentication.call(context, HTTP_CREDENTIAL, options)
				: context.helpers.httpRequest(options),
		)) as IN8nHttpFullResponse;
		const headers = lowerCased(response.headers);
		if (request.responseType !== 'bytes')
			return {
				url: options.url,
				status: response.statusCode,
				headers,
				body: bodyText(response.body),
			};
		const bytes = asBuffer(response.body);
		return {
			url: options.url,
			status: response.statusCode,
			headers,
			// A success's bytes are its body (up to a GiB, beyond a string's length); an error's text says why.
			body: response.statusCode < 300 ? '' : bytes.toString('utf8'),
			bytes,
		};
	};
}

interface LegacyFullResponse {
	statusCode: number;
	headers?: Record<string, unknown>;
	body?: unknown;
}

async function oauth2Request(
	context: HttpHelpers,
	prepared: PreparedHttpRequest,
	{ timeoutMs, signal }: HttpRequest,
) {
	const options: OAuth2RequestOptions = {
		method: prepared.method as IHttpRequestMethods,
		url: prepared.url,
		qs: prepared.query,
		headers: prepared.headers,
		body: prepared.body,
		timeout: timeoutMs,
		json: false,
		// Answers of every status come back as responses; a 401 still makes n8n refresh the token first.
		simple: false,
		resolveWithFullResponse: true,
	};
	// n8n's legacy request helper takes no abort signal: the poll's signal ends the wait here.
	const sent = context.helpers.requestOAuth2.call(context, 'oAuth2Api', options, {
		tokenType: 'Bearer',
	}) as Promise<LegacyFullResponse>;
	let response: LegacyFullResponse;
	try {
		response = await abortable(sent, signal);
	} catch (error) {
		throw signal?.aborted
			? new Error(`${options.method} ${options.url} was aborted`)
			: (unreachableAt(options, error) ??
					oauth2Failure(error, credentialName(context.getNode(), 'oAuth2Api')));
	}
	return {
		url: options.url,
		status: response.statusCode,
		headers: lowerCased(response.headers),
		body: bodyText(response.body),
	};
}

/**
 * The request's answer; a request that did not reach the server (or lost it) fails naming the host
 * and port and what failed, in words n8n keeps (core/connectors/network.ts): n8n's helpers throw
 * the socket's error, or their NodeApiError around it with n8n's stock text naming no host.
 */
async function reached<T>(request: { method?: string; url: string }, answer: Promise<T>) {
	try {
		return await answer;
	} catch (error) {
		throw unreachableAt(request, error) ?? error;
	}
}

/** A network failure of this request, as network.ts words it; undefined for any other failure. */
function unreachableAt(request: { method?: string; url: string }, error: unknown) {
	const endpoint = endpointOf(request.url);
	if (!endpoint) return undefined;
	return unreachable(
		`HTTP ${request.method ?? 'GET'} ${endpoint.path}`,
		`${endpoint.host}:${endpoint.port}`,
		error,
	);
}

/**
 * What a failed OAuth2 request says: the credential by name and, when the authorization server
 * refused to issue or refresh a token, its error code.
 */
function oauth2Failure(error: unknown, name: string): Error {
	const cause = error as Error & { body?: { error?: unknown }; code?: unknown };
	const message = cause instanceof Error ? cause.message : String(error);
	const refused =
		typeof cause?.body?.error === 'string'
			? ` (the authorization server answered "${cause.body.error}")`
			: '';
	const failure = new Error(`OAuth2 API credential "${name}": ${message}${refused}`);
	Object.assign(failure, {
		details: {
			description: refused
				? "n8n could not get or refresh the access token. Check the credential's client ID and secret, or reconnect it."
				: undefined,
		},
	});
	return failure;
}

async function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
	if (!signal) return await promise;
	if (signal.aborted) throw signal.reason ?? new Error('aborted');
	return await new Promise<T>((resolve, reject) => {
		const onAbort = () => reject(signal.reason ?? new Error('aborted'));
		signal.addEventListener('abort', onAbort, { once: true });
		promise.then(
			(value) => {
				signal.removeEventListener('abort', onAbort);
				resolve(value);
			},
			(error) => {
				signal.removeEventListener('abort', onAbort);
				reject(error);
			},
		);
	});
}

/** A credential's name for messages: as stored on the node, else the type's name in the editor. */
function credentialName(node: INode, type: GenericAuthType): string {
	return node.credentials?.[type]?.name ?? GENERIC_AUTH_NAMES[type];
}

function lowerCased(raw: Record<string, unknown> | undefined): Record<string, string> {
	const headers: Record<string, string> = {};
	for (const [name, value] of Object.entries(raw ?? {})) {
		headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
	}
	return headers;
}

function asBuffer(body: unknown): Buffer {
	if (Buffer.isBuffer(body)) return body;
	if (body instanceof ArrayBuffer) return Buffer.from(body);
	return Buffer.from(bodyText(body));
}

function bodyText(body: unknown): string {
	if (body === undefined || body === null) return '';
	if (typeof body === 'string') return body;
	if (Buffer.isBuffer(body)) return body.toString('utf8');
	return JSON.stringify(body);
}
