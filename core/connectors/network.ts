import { ConnectorError } from './types';

/**
 * A call that did not reach its system, or lost it on the way, in plain words. The socket's code
 * (ECONNREFUSED, ENOTFOUND, ...) stays out of the message: n8n replaces any message that contains one
 * with stock text naming neither host nor port ("The service refused the connection - perhaps it is
 * offline", n8n-workflow's NodeError), and these words say the same without it. The socket's own
 * message goes to the description.
 */
const NETWORK_FAILURES: Record<string, string> = {
	ECONNREFUSED: 'connection refused (is the server running, and are host and port right?)',
	ENOTFOUND: 'host name does not resolve',
	EAI_AGAIN: 'host name lookup did not answer (DNS unreachable or overloaded)',
	EAI_NONAME: 'host name does not resolve',
	ETIMEDOUT: 'timed out',
	ESOCKETTIMEDOUT: 'timed out',
	ECONNRESET: 'connection reset by the server',
	EPIPE: 'connection closed by the server',
	EHOSTUNREACH: 'host unreachable',
	ENETUNREACH: 'network unreachable',
	EADDRNOTAVAIL: 'address not available',
};

/** Axios's code for its own timeout, and for a request aborted on the way. */
const AXIOS_ABORTED = 'ECONNABORTED';

interface SocketFailure {
	code?: unknown;
	message?: unknown;
	cause?: unknown;
	errors?: unknown;
}

/**
 * The network failure an error is, or wraps (`cause`, or the first of `errors` when a name resolved
 * to several addresses), as words and the socket's own message; undefined for any other failure.
 * Duck-typed: errors come wrapped by n8n's helpers, and socket errors from other realms.
 */
export function networkFailure(error: unknown): { words: string; raw: string } | undefined {
	let current: unknown = error;
	for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
		const failure = current as SocketFailure;
		const raw = typeof failure.message === 'string' ? failure.message : '';
		if (typeof failure.code === 'string') {
			if (failure.code in NETWORK_FAILURES) return { words: NETWORK_FAILURES[failure.code], raw };
			if (failure.code === AXIOS_ABORTED)
				return { words: /timeout/i.test(raw) ? 'timed out' : 'connection aborted', raw };
		}
		current =
			failure.cause ?? (Array.isArray(failure.errors) ? (failure.errors[0] as unknown) : undefined);
	}
	return undefined;
}

/** Where a system is: its host and port. */
export interface Endpoint {
	host: string;
	port: number;
}

/**
 * A network failure of a call (`what`: "IMAP connection", "HTTP GET /tickets") to `at` (host:port)
 * as the one ConnectorError that names host and port and says what failed: `IMAP connection at
 * mail.example.com:993 failed: host name does not resolve`. Undefined for any other failure.
 */
export function unreachable(what: string, at: string, error: unknown): ConnectorError | undefined {
	const failure = networkFailure(error);
	if (!failure) return undefined;
	return new ConnectorError(`${what} at ${at} failed: ${failure.words}`, {
		description: failure.raw || undefined,
		unreachable: { at, words: failure.words },
	});
}

/** The host and port a URL goes to (the scheme's port when the URL names none), and its path. */
export function endpointOf(url: string): (Endpoint & { path: string }) | undefined {
	try {
		const parsed = new URL(url);
		const port = parsed.port
			? Number(parsed.port)
			: parsed.protocol === 'https:'
				? 443
				: parsed.protocol === 'http:'
					? 80
					: NaN;
		// An IPv6 host comes bracketed; the brackets are not the name.
		return { host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port, path: parsed.pathname };
	} catch {
		return undefined;
	}
}

/**
 * The op's name before an error's message, so that every failure of an op says which op failed:
 * `imap.listUnseen: IMAP connection at mail.example.com:993 failed: host name does not resolve`.
 * A ConnectorError only: a ConfigError names its field, and anything else is not the op's to word.
 */
export function inOp(opName: string, error: unknown): unknown {
	if (!(error instanceof ConnectorError) || error.message.startsWith(`${opName}: `)) return error;
	const named = new ConnectorError(`${opName}: ${error.message}`, error.details);
	named.stack = error.stack;
	return named;
}
