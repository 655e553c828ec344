/**
 * How an HTTP op authenticates: the choice a node offers (None or one of n8n's generic credential
 * types, then the credential) and what each non-OAuth type adds to a request. Plain
 * logic: the node reads the parameters and the stored credential and performs the request.
 */
import { ConnectorConfigError } from './types';

/** n8n's generic credential types the HTTP ops accept, with the names n8n's editor shows. */
export const GENERIC_AUTH_TYPES = {
	httpBasicAuth: 'Basic Auth',
	httpBearerAuth: 'Bearer Auth',
	httpCustomAuth: 'Custom Auth',
	httpHeaderAuth: 'Header Auth',
	httpQueryAuth: 'Query Auth',
	oAuth2Api: 'OAuth2 API',
} as const;

export type GenericAuthType = keyof typeof GENERIC_AUTH_TYPES;

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
	if (typeof authentication === 'string' && authentication in GENERIC_AUTH_TYPES)
		return { kind: 'generic', type: authentication as GenericAuthType };
	const choices = [
		'None',
		...Object.values(GENERIC_AUTH_TYPES),
		...(legacy ? ['Durable Triggers HTTP API'] : []),
	];
	throw new ConnectorConfigError(
		'authentication',
		`"Authentication" must be one of ${choices.join(', ')}; got ${JSON.stringify(authentication)}`,
	);
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
	const named = (label: string) => {
		const name = text('name').trim();
		if (name === '')
			throw new ConnectorConfigError(
				'name',
				`The ${label} credential "${credentialName}" has no "Name"`,
			);
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
			headers[named('Header Auth')] = text('value');
			return { ...target, headers, query };
		case 'httpQueryAuth':
			query[named('Query Auth')] = text('value');
			return { ...target, headers, query };
		case 'httpCustomAuth': {
			let custom: unknown;
			try {
				custom = JSON.parse(text('json') || '{}');
			} catch (error) {
				throw new ConnectorConfigError(
					'json',
					`The Custom Auth credential "${credentialName}" has invalid JSON: ${(error as Error).message}`,
				);
			}
			if (typeof custom !== 'object' || custom === null || Array.isArray(custom)) {
				throw new ConnectorConfigError(
					'json',
					`The Custom Auth credential "${credentialName}" must be a JSON object with "headers", "qs" or "body"`,
				);
			}
			const { headers: extraHeaders, qs, body } = custom as Record<string, unknown>;
			Object.assign(headers, stringFields(extraHeaders, 'headers', credentialName));
			Object.assign(query, stringFields(qs, 'qs', credentialName));
			let merged = target.body;
			if (body !== undefined) {
				if (typeof body !== 'object' || body === null || Array.isArray(body)) {
					throw new ConnectorConfigError(
						'json',
						`The Custom Auth credential "${credentialName}": "body" must be an object`,
					);
				}
				if (
					target.body !== undefined &&
					(typeof target.body !== 'object' || target.body === null || Array.isArray(target.body))
				) {
					throw new ConnectorConfigError(
						'with.body',
						`The Custom Auth credential "${credentialName}" adds body fields, so "with.body" must be an object`,
					);
				}
				merged = { ...(target.body as Record<string, unknown> | undefined), ...body };
			}
			return { ...target, headers, query, body: merged };
		}
	}
}

function stringFields(
	value: unknown,
	field: string,
	credentialName: string,
): Record<string, string> {
	if (value === undefined) return {};
	if (typeof value !== 'object' || value === null || Array.isArray(value)) {
		throw new ConnectorConfigError(
			'json',
			`The Custom Auth credential "${credentialName}": "${field}" must be an object`,
		);
	}
	return Object.fromEntries(
		Object.entries(value).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
	);
}

/**
 * A relative URL resolved against a base URL (the node's "Base URL" parameter); an absolute URL is
 * returned as written. A relative URL without a base URL is an error naming both fields.
 */
export function resolveUrl(
	url: string,
	baseUrl: string | undefined,
	baseLabel = 'Base URL',
): string {
	if (/^https?:\/\//i.test(url)) return url;
	const base = (baseUrl ?? '').trim();
	if (base === '') {
		throw new ConnectorConfigError(
			'with.url',
			`"with.url" ${JSON.stringify(url)} is relative, so "${baseLabel}" must be set; or give an absolute URL`,
		);
	}
	if (!/^https?:\/\//i.test(base))
		throw new ConnectorConfigError(
			'baseUrl',
			`"${baseLabel}" must start with http:// or https://; got ${JSON.stringify(base)}`,
		);
	return `${base.replace(/\/+$/, '')}/${url.replace(/^\/+/, '')}`;
}
