/**
 * How an HTTP op authenticates: the choice a node offers (None or one of n8n's generic credential
 * types, then the credential) and what each non-OAuth type adds to a request. Plain
 * logic: the node reads the parameters and the stored credential and performs the request.
 */
import { ConfigError, credentialRef, fieldRef } from '../configError';
import { argumentError } from './args';
import { type CredentialScope, type HttpRequest } from './types';

/** n8n's generic credential types the HTTP ops accept (their names in the editor: nodes/shared/parameters.ts). */
export const GENERIC_AUTH_TYPES = [
	'httpBasicAuth',
	'httpBearerAuth',
	'httpCustomAuth',
	'httpHeaderAuth',
	'httpQueryAuth',
	'oAuth2Api',
] as const;

export type GenericAuthType = (typeof GENERIC_AUTH_TYPES)[number];

export function isGenericAuthType(value: unknown): value is GenericAuthType {
	return (GENERIC_AUTH_TYPES as readonly unknown[]).includes(value);
}

/** This package's own credential, kept so nodes saved with it (version 1) keep working. */
export const LEGACY_HTTP_CREDENTIAL = 'durableHttpApi';

export type HttpAuthChoice =
	| { kind: 'none' }
	/** The Durable Triggers HTTP API credential when one is set (version 1 nodes, the Round-Trip Wait). */
	| { kind: 'legacy'; required: boolean }
	| { kind: 'generic'; type: GenericAuthType };

/**
 * The authentication a node's "Authentication" parameter asks for: None, one of n8n's generic credential
 * types by its type name, or (where `legacy` is allowed: the Round-Trip Wait) this package's own credential.
 */
export function resolveHttpAuth(
	authentication: unknown,
	{ legacy = false }: { legacy?: boolean } = {},
): HttpAuthChoice {
	if (authentication === 'none') return { kind: 'none' };
	if (legacy && authentication === LEGACY_HTTP_CREDENTIAL)
		return { kind: 'legacy', required: true };
	if (isGenericAuthType(authentication)) return { kind: 'generic', type: authentication };
	const choices = [
		'None',
		...GENERIC_AUTH_TYPES.map(credentialRef),
		...(legacy ? [credentialRef(LEGACY_HTTP_CREDENTIAL)] : []),
	];
	throw new ConfigError('authentication', authentication, `must be one of ${choices.join(', ')}`);
}

/** The parts of a request a credential may add to. */
export interface AuthTarget {
	headers: Record<string, string>;
	query: Record<string, string>;
	/** An object body (JSON), or undefined; Custom Auth may add fields to it. */
	body: unknown;
	basicAuth?: { username: string; password: string };
}

/**
 * Adds a non-OAuth generic credential to a request, as n8n's HTTP Request node does: Basic Auth as
 * the request's basic auth, Bearer as `Authorization: Bearer`, Header and Query Auth as one named
 * header or query parameter, Custom Auth's JSON `headers`, `qs` and `body` merged in.
 * `credentialName` is the stored credential's name, for messages.
 */
export function applyGenericAuth(
	type: Exclude<GenericAuthType, 'oAuth2Api'>,
	data: Record<string, unknown>,
	target: AuthTarget,
	credentialName: string,
): AuthTarget {
	const headers = { ...target.headers };
	const query = { ...target.query };
	const text = (field: string) =>
		data[field] === undefined || data[field] === null ? '' : String(data[field]);
	const credential = { credential: type, credentialName };
	// Custom Auth's JSON may hold secrets: its value is not shown.
	const customAuthError = (problem: string) =>
		new ConfigError('json', text('json'), problem, { ...credential, secret: true });
	const named = () => {
		const name = text('name').trim();
		if (name === '') throw new ConfigError('name', name, 'must not be empty', credential);
		return name;
	};
	switch (type) {
		case 'httpBasicAuth':
			return {
				...target,
				headers,
				query,
				basicAuth: { username: text('user'), password: text('password') },
			};
		case 'httpBearerAuth':
			headers.Authorization = `Bearer ${text('token')}`;
			return { ...target, headers, query };
		case 'httpHeaderAuth':
			headers[named()] = text('value');
			return { ...target, headers, query };
		case 'httpQueryAuth':
			query[named()] = text('value');
			return { ...target, headers, query };
		case 'httpCustomAuth': {
			let custom: unknown;
			try {
				custom = JSON.parse(text('json') || '{}');
			} catch (error) {
				throw customAuthError(`not valid JSON: ${(error as Error).message}`);
			}
			if (typeof custom !== 'object' || custom === null || Array.isArray(custom))
				throw customAuthError('must be a JSON object with "headers", "qs" or "body"');
			const part = (key: 'headers' | 'qs' | 'body') => {
				const value = (custom as Record<string, unknown>)[key];
				if (
					value !== undefined &&
					(typeof value !== 'object' || value === null || Array.isArray(value))
				)
					throw customAuthError(`"${key}" must be an object`);
				return value as Record<string, unknown> | undefined;
			};
			Object.assign(headers, stringFields(part('headers')));
			Object.assign(query, stringFields(part('qs')));
			const body = part('body');
			let merged = target.body;
			if (body !== undefined) {
				if (
					target.body !== undefined &&
					(typeof target.body !== 'object' || target.body === null || Array.isArray(target.body))
				) {
					throw argumentError(
						'body',
						target.body,
						`must be an object: the ${credentialRef(type)} credential "${credentialName}" adds fields to it`,
					);
				}
				merged = { ...(target.body as Record<string, unknown> | undefined), ...body };
			}
			return { ...target, headers, query, body: merged };
		}
	}
}

/** Custom Auth's `headers` or `qs`, with text values. */
function stringFields(value: Record<string, unknown> = {}): Record<string, string> {
	return Object.fromEntries(
		Object.entries(value).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
	);
}

/**
 * A relative URL resolved against a base URL (the node's "Base URL" parameter); an absolute URL is
 * returned as written. A relative URL without a base URL is an error naming both fields.
 */
export function resolveUrl(url: string, baseUrl: string | undefined): string {
	if (/^https?:\/\//i.test(url)) return url;
	const base = (baseUrl ?? '').trim();
	if (base === '') {
		throw argumentError(
			'url',
			url,
			`is relative, so "${fieldRef('baseUrl')}" must be set; or give an absolute URL`,
		);
	}
	if (!/^https?:\/\//i.test(base))
		throw new ConfigError('baseUrl', base, 'must start with http:// or https://');
	return `${base.replace(/\/+$/, '')}/${url.replace(/^\/+/, '')}`;
}

/** How a node's HTTP requests authenticate, and the base URL relative URLs resolve against. */
export interface HttpAuthSettings {
	auth: HttpAuthChoice;
	/** The node's "Base URL" parameter (the legacy credential brings its own). */
	baseUrl?: string;
}

/**
 * The check at activation: a relative URL in the op's arguments needs a Base URL (the legacy
 * credential, version 1, brings its own).
 */
export function checkRequestUrl(settings: HttpAuthSettings, url: unknown): void {
	if (settings.auth.kind !== 'legacy' && typeof url === 'string') resolveUrl(url, settings.baseUrl);
}

/** A stored generic credential (not OAuth2: n8n signs those itself): its fields and its name. */
export interface StoredCredential {
	data: Record<string, unknown>;
	name: string;
}

/**
 * Whether a request gets the credential and With's headers. A paginated poll's pages (`scope` set)
 * get them only at the origin of the list's first request (scheme, host and port, as browsers and
 * curl keep credentials to the origin they were given for) and at the hosts `scope` names, never over
 * http when the first request was https. `baseUrl` resolves relative URLs (the Base URL, or for
 * version 1 nodes the Durable Triggers HTTP API credential's).
 */
export function sendsCredentials(
	url: string,
	scope: CredentialScope | undefined,
	baseUrl: string | undefined,
): boolean {
	if (!scope) return true;
	const target = new URL(resolveUrl(url, baseUrl));
	const home = new URL(resolveUrl(scope.home, baseUrl));
	if (target.origin === home.origin) return true;
	if (target.protocol === 'http:' && home.protocol === 'https:') return false;
	return hostListed(target.hostname, scope.hosts);
}

/** Whether `hostname` is one of `hosts`: a name, or `*.example.com` for its subdomains (not itself). */
export function hostListed(hostname: string, hosts: readonly string[]): boolean {
	const name = hostname.toLowerCase().replace(/\.$/, '');
	return hosts.some((host) =>
		host.startsWith('*.') ? name.endsWith(host.slice(1)) : name === host,
	);
}

/** A request ready for n8n's helpers: authenticated where this package adds the credential. */
export interface PreparedHttpRequest {
	method: string;
	/** Resolved against the Base URL; as written for the legacy credential (n8n adds its base URL). */
	url: string;
	query: Record<string, string>;
	headers: Record<string, string>;
	/** Text; an object body as JSON, with a content type unless one is set. */
	body?: string;
	basicAuth?: { username: string; password: string };
	/**
	 * Whether the credential goes with it (sendsCredentials): false for a page on another origin, which
	 * the transport sends without the credential (nor n8n's OAuth2 or the legacy credential's helper).
	 */
	credentials: boolean;
}

/**
 * The one way an HTTP op's request is made ready to send: the generic credential (not OAuth2) added
 * (applyGenericAuth), the URL resolved against the Base URL, the body as text; a page on another
 * origin (sendsCredentials) without the credential and With's headers. The node's transport
 * (nodes/shared/httpTransport.ts) reads the credential before and sends the result after.
 * `legacyBaseUrl`: the Durable Triggers HTTP API credential's base URL (version 1 nodes).
 */
export function prepareHttpRequest(
	request: HttpRequest,
	settings: HttpAuthSettings,
	credential?: StoredCredential,
	legacyBaseUrl?: string,
): PreparedHttpRequest {
	const { auth } = settings;
	const credentials = sendsCredentials(
		request.url,
		request.credentialScope,
		auth.kind === 'legacy' ? legacyBaseUrl : settings.baseUrl,
	);
	let target: AuthTarget = {
		headers: credentials ? { ...(request.headers ?? {}) } : {},
		query: { ...(request.query ?? {}) },
		body: request.body,
	};
	if (credentials && auth.kind === 'generic' && auth.type !== 'oAuth2Api') {
		if (!credential) throw new Error(`The ${credentialRef(auth.type)} credential is missing`);
		target = applyGenericAuth(auth.type, credential.data, target, credential.name);
	}
	const headers = target.headers;
	let body: string | undefined;
	if (target.body !== undefined) {
		body = typeof target.body === 'string' ? target.body : JSON.stringify(target.body);
		if (
			typeof target.body !== 'string' &&
			!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
		)
			headers['content-type'] = 'application/json';
	}
	return {
		method: request.method,
		url: auth.kind === 'legacy' ? request.url : resolveUrl(request.url, settings.baseUrl),
		query: target.query,
		headers,
		body,
		...(target.basicAuth && { basicAuth: target.basicAuth }),
		credentials,
	};
}
