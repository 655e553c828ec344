import type { ICredentialDataDecryptedObject, IHttpRequestMethods, IHttpRequestOptions, IN8nHttpFullResponse } from 'n8n-workflow';

import type { HttpTransport } from '../../core/connectors/types';

export const HTTP_CREDENTIAL = 'durableHttpApi';

export interface HttpHelpers {
	getCredentials(type: string): Promise<ICredentialDataDecryptedObject>;
	helpers: {
		httpRequest(options: IHttpRequestOptions): Promise<unknown>;
		httpRequestWithAuthentication(this: unknown, credentialsType: string, options: IHttpRequestOptions): Promise<unknown>;
	};
}

/**
 * Performs the connector's HTTP requests with n8n's request helper, so n8n's proxy, TLS and
 * credential handling apply. With a credential, relative URLs resolve against its base URL and its
 * authentication is added; status codes are returned, not thrown, because 304/429/503 mean something.
 */
export function n8nHttpTransport(context: HttpHelpers, useCredential: boolean): HttpTransport {
	return async (request) => {
		const options: IHttpRequestOptions = {
			method: request.method as IHttpRequestMethods,
			url: request.url,
			qs: request.query,
			headers: request.headers,
			body: request.body as IHttpRequestOptions['body'],
			timeout: request.timeoutMs,
			abortSignal: request.signal,
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
			encoding: 'text',
			json: false,
		};
		if (request.body !== undefined && typeof request.body === 'object') {
			options.body = JSON.stringify(request.body);
			options.headers = { 'content-type': 'application/json', ...request.headers };
		}
		let response: IN8nHttpFullResponse;
		if (useCredential) {
			const credentials = await context.getCredentials(HTTP_CREDENTIAL);
			if (!/^https?:\/\//i.test(request.url)) options.baseURL = String(credentials.baseUrl ?? '');
			// n8n's helper reads the node from `this`.
			response = (await context.helpers.httpRequestWithAuthentication.call(context, HTTP_CREDENTIAL, options)) as IN8nHttpFullResponse;
		} else {
			response = (await context.helpers.httpRequest(options)) as IN8nHttpFullResponse;
		}
		const headers: Record<string, string> = {};
		for (const [name, value] of Object.entries(response.headers ?? {})) {
			headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
		}
		return { status: response.statusCode, headers, body: bodyText(response.body) };
	};
}

function bodyText(body: unknown): string {
	if (body === undefined || body === null) return '';
	if (typeof body === 'string') return body;
	if (Buffer.isBuffer(body)) return body.toString('utf8');
	return JSON.stringify(body);
}
