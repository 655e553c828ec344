import type { HttpTransport } from '../../core/connectors/types';

/**
 * The core's HTTP transport over Node's fetch, for ops run without n8n (the S3 ops' tests): the URL
 * sent as given, the body as text, and as bytes when asked.
 */
export const fetchTransport: HttpTransport = async (request) => {
	const response = await fetch(request.url, {
		method: request.method,
		headers: request.headers,
		signal: request.signal,
	});
	const bytes = Buffer.from(await response.arrayBuffer());
	return {
		url: request.url,
		status: response.status,
		headers: Object.fromEntries(response.headers),
		body: bytes.toString('utf8'),
		bytes: request.responseType === 'bytes' ? bytes : undefined,
	};
};
