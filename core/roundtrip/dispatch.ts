import type { Clock } from '../clock';
import type { HttpRequest, HttpResponse, HttpTransport } from '../connectors/types';
import type { OutboundRequest } from './settings';
import { type CallbackAuth, callbackHeaders } from './signature';
import { NOTICE_HEADER, type WaitRecord, signNotice } from './waitRecord';

/**
 * The outbound request of Send and Wait, and when it goes out.
 *
 * n8n accepts a resume only once the execution is saved as `waiting`; a callback that arrives
 * earlier is answered `409 The execution "<id>" is running already.` by n8n itself, before any node
 * code runs. So the node sends its request only after n8n has saved the wait: a partner that calls
 * back at once then always finds the run waiting. A request that fails at that point cannot fail the
 * node the usual way (the node has returned), so the node tells its own waiting run, through the
 * run's callback URL, with a notice only this wait can sign; the run then fails with the message.
 */

/** Delays between attempts at a retryable answer: 0.5 s, doubling, at most 30 s (the callback contract, docs/round-trip-wait.md). */
export function retryDelayMs(attempt: number): number {
	return Math.min(500 * 2 ** Math.max(0, attempt), 30_000);
}

/** Answers that mean "not now, try again": n8n has not saved the wait yet, or a transient failure. */
export function isRetryableAnswer(status: number, body: string): boolean {
	if (status >= 500 || status === 429) return true;
	return status === 409 && /is running already/.test(body);
}

/** The request as it goes out: the configured body and headers plus the correlation id and the callback URL. */
export function outboundRequest(
	request: OutboundRequest,
	correlationId: string,
	callbackUrl: string,
): HttpRequest {
	const body: Record<string, unknown> = { ...request.body };
	if (request.correlationIdField) body[request.correlationIdField] = correlationId;
	if (request.callbackUrlField) body[request.callbackUrlField] = callbackUrl;
	return {
		method: request.method,
		url: request.url,
		headers: {
			...request.headers,
			'x-correlation-id': correlationId,
			'x-callback-url': callbackUrl,
		},
		body: request.method === 'GET' ? undefined : body,
	};
}

export type SendOutcome =
	| { ok: true; status: number; headers: Record<string, string>; body: unknown }
	| { ok: false; message: string; description?: string };

/** Sends the request once; a non-2xx answer or a transport error is a failure naming the request. */
export async function sendOutbound(
	http: HttpTransport,
	request: HttpRequest,
): Promise<SendOutcome> {
	let response;
	try {
		response = await http(request);
	} catch (error) {
		return {
			ok: false,
			message: `${request.method} ${request.url} failed: ${(error as Error).message}; the request was not accepted, so the run does not wait`,
		};
	}
	if (response.status < 200 || response.status >= 300) {
		return {
			ok: false,
			message: `${request.method} ${request.url} answered HTTP ${response.status}; the request was not accepted, so the run does not wait`,
			description: response.body.slice(0, 500),
		};
	}
	let body: unknown = response.body;
	try {
		body = JSON.parse(response.body);
	} catch {
		// a non-JSON acknowledgement is kept as text
	}
	return { ok: true, status: response.status, headers: response.headers, body };
}

/** How long the node waits for n8n to answer at its own callback URL (answersAt). */
export const SELF_CHECK_TIMEOUT_MS = 10_000;

/**
 * Whether anything answers at the callback URL: any HTTP answer will do (n8n answers 409 "running
 * already" there, the run is not waiting yet). The node tells its waiting run that the request failed
 * through that URL (reportFailure); when n8n cannot reach its own WEBHOOK_URL (a public address that
 * does not loop back), that notice could never arrive, so the request has to go out before the wait.
 */
export async function answersAt(http: HttpTransport, url: string): Promise<boolean> {
	try {
		await http({ method: 'GET', url, headers: {}, timeoutMs: SELF_CHECK_TIMEOUT_MS });
		return true;
	} catch {
		return false;
	}
}

/** The body of the internal notice; the waiting run fails with its message. */
export interface FailureNotice {
	requestFailed: string;
	description?: string;
}

/**
 * Tells the waiting run that its request failed, retrying retryable answers. The notice is signed
 * like a partner's callback, with the callback credential (`auth`), for this wait and at this moment,
 * so it passes the checks every callback must pass, and carries this wait's notice key on top.
 * Resolves with the final status, or undefined when every attempt failed at the transport.
 */
export async function reportFailure(
	http: HttpTransport,
	callbackUrl: string,
	record: WaitRecord,
	failure: FailureNotice,
	auth: CallbackAuth,
	clock: Clock,
	attempts = 6,
): Promise<number | undefined> {
	const body = JSON.stringify(failure);
	const answer = await postWithRetries(
		http,
		(attempt) => ({
			method: 'POST',
			url: callbackUrl,
			headers: {
				'content-type': 'application/json',
				...callbackHeaders(
					auth,
					record.waitId,
					body,
					Math.floor(clock.now() / 1000),
					`notice_${record.waitId}_${attempt}`,
				),
				[NOTICE_HEADER]: signNotice(record, body),
			},
			body,
		}),
		clock,
		attempts,
	);
	return answer?.status;
}

/**
 * Sends a request to n8n's own callback URL until the answer is not retryable (isRetryableAnswer) or
 * `attempts` were made, waiting retryDelayMs between them; `request` builds each attempt (signed at
 * its moment). Resolves with the last answer, or undefined when every attempt failed at the transport.
 */
export async function postWithRetries(
	http: HttpTransport,
	request: (attempt: number) => HttpRequest,
	clock: Clock,
	attempts = 6,
): Promise<HttpResponse | undefined> {
	let answer: HttpResponse | undefined;
	for (let attempt = 0; attempt < attempts; attempt++) {
		if (attempt > 0)
			await new Promise<void>((resolve) => clock.setTimer(resolve, retryDelayMs(attempt - 1)));
		try {
			answer = await http(request(attempt));
			if (!isRetryableAnswer(answer.status, answer.body)) return answer;
		} catch {
			// transport failure: retried
		}
	}
	return answer;
}
