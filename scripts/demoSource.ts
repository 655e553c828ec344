import { createHash, randomBytes } from 'node:crypto';

import { signPayload, waitIdOf } from '../core/roundtrip/signature';
import { FakeSystem } from '../test/harness/fakeSystem';

export const DEMO_CALLBACK_SECRET = 'demo-callback-secret-change-me';

/** The client the demo's OAuth2 token endpoint knows (client credentials grant). */
export const DEMO_OAUTH_CLIENT = {
	clientId: 'demo-client',
	clientSecret: 'demo-client-secret-change-me',
};

/** How long the demo's access tokens live: short, so a running trigger sees n8n refresh one. */
const DEMO_TOKEN_LIFETIME_SEC = 300;

/**
 * A small "push-less" system for the examples: it can only be polled, and it answers asynchronous
 * jobs by calling back later. State is derived from the clock, so every poll sees a consistent world.
 *   GET  /health      the credential test target
 *   GET  /tickets     support tickets, oldest first, a new one every 20 s (last 20 kept)
 *   GET  /tickets/paged  many tickets, newest first, a new one every 5 s, 5 a page (`page`), with
 *                     `Link: </tickets/paged?page=N>; rel="next"`: a poll every 30 s finds more than a page
 *   GET  /inventory   products whose stock changes every 30 s; ETag, so an unchanged list answers 304
 *   POST /jobs        accepts { correlationId, callbackUrl } and calls back 3 s later, HMAC-signed
 *   POST /envelopes   an e-signature service with one registered webhook URL: accepts { correlationId }
 *                     (the envelope id) and sends "viewed" 2 s later, "signed" 4 s later, HMAC-signed
 *                     ("<t>..<body>"), to n8n's /webhook/demo-esign/events (DEMO_FIXED_CALLBACK_PATH)
 *   POST /oauth/token OAuth2 token endpoint, client credentials grant (client id and secret in Basic auth
 *                     or in the form), tokens valid 5 minutes
 *   GET  /secure/tickets  the tickets again, for a valid bearer token only (401 otherwise)
 */
export async function startDemoSource(port: number, startedAt = Date.now()): Promise<FakeSystem> {
	const source = await FakeSystem.start(port);
	source.on('GET', '/health', { body: { ok: true } });
	source.on('GET', '/tickets', () => ({ body: { tickets: ticketsAt(Date.now(), startedAt) } }));
	source.on('GET', '/tickets/paged', (request) => {
		const page = Math.max(1, Number(request.query.page ?? 1));
		const newest = Math.floor((Date.now() - startedAt) / 5_000) + 1;
		const ids = Array.from({ length: Math.min(newest, 200) }, (_, i) => newest - i);
		const tickets = ids.slice((page - 1) * 5, page * 5).map((id) => ({
			id,
			subject: SUBJECTS[id % SUBJECTS.length],
			priority: id % 3 === 0 ? 'high' : 'normal',
		}));
		const more = page * 5 < ids.length;
		return {
			headers: more ? { link: `</tickets/paged?page=${page + 1}>; rel="next"` } : undefined,
			body: { tickets },
		};
	});
	source.on('GET', '/inventory', () => {
		const products = inventoryAt(Date.now());
		return {
			body: { products },
			etag: `"${createHash('sha1').update(JSON.stringify(products)).digest('hex')}"`,
		};
	});
	source.on('POST', '/jobs', (request) => {
		const job = (request.json ?? {}) as { correlationId?: string; callbackUrl?: string };
		if (!job.correlationId || !job.callbackUrl) {
			return { status: 400, body: { error: 'correlationId and callbackUrl are required' } };
		}
		setTimeout(() => void callBack(source, job.callbackUrl!, job.correlationId!), 3_000);
		return { status: 202, body: { accepted: true, correlationId: job.correlationId } };
	});
	source.on('POST', '/envelopes', (request) => {
		const envelope = (request.json ?? {}) as { correlationId?: string; callbackUrl?: string };
		if (!envelope.correlationId || !envelope.callbackUrl)
			return { status: 400, body: { error: 'correlationId and callbackUrl are required' } };
		// The account's one registered URL: on the n8n that asked (its origin), the example's fixed path.
		const fixedUrl = `${new URL(envelope.callbackUrl).origin}/webhook/${DEMO_FIXED_CALLBACK_PATH}`;
		for (const [status, delayMs] of [
			['viewed', 2_000],
			['signed', 4_000],
		] as const)
			setTimeout(() => void sendEvent(source, fixedUrl, envelope.correlationId!, status), delayMs);
		return { status: 202, body: { accepted: true, envelopeId: envelope.correlationId } };
	});
	const tokens = new Map<string, number>();
	source.on('POST', '/oauth/token', (request) => {
		const form = new URLSearchParams(request.rawBody);
		const basic = String(request.headers.authorization ?? '').match(/^Basic (.+)$/);
		const [clientId, clientSecret] = basic
			? Buffer.from(basic[1], 'base64')
					.toString('utf8')
					.split(':')
					.map((part) => decodeURIComponent(part))
			: [form.get('client_id'), form.get('client_secret')];
		if (form.get('grant_type') !== 'client_credentials')
			return { status: 400, body: { error: 'unsupported_grant_type' } };
		if (clientId !== DEMO_OAUTH_CLIENT.clientId || clientSecret !== DEMO_OAUTH_CLIENT.clientSecret)
			return { status: 401, body: { error: 'invalid_client' } };
		const token = randomBytes(24).toString('base64url');
		tokens.set(token, Date.now() + DEMO_TOKEN_LIFETIME_SEC * 1000);
		return {
			body: { access_token: token, token_type: 'Bearer', expires_in: DEMO_TOKEN_LIFETIME_SEC },
		};
	});
	source.on('GET', '/secure/tickets', (request) => {
		const token = String(request.headers.authorization ?? '').replace(/^Bearer /, '');
		const expiresAt = tokens.get(token);
		if (expiresAt === undefined || expiresAt <= Date.now()) {
			return {
				status: 401,
				headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
				body: { error: 'invalid_token' },
			};
		}
		return { body: { tickets: ticketsAt(Date.now(), startedAt) } };
	});
	return source;
}

/** The Round-Trip Callback path of examples/round-trip-fixed-url.json, registered "at the partner". */
export const DEMO_FIXED_CALLBACK_PATH = 'demo-esign/events';

/** An e-signature event to the one registered URL, signed with the account's secret over "<t>..<body>". */
async function sendEvent(
	source: FakeSystem,
	url: string,
	envelopeId: string,
	status: 'viewed' | 'signed',
): Promise<void> {
	const body = JSON.stringify({ correlationId: envelopeId, status, at: new Date().toISOString() });
	const signature = signPayload(DEMO_CALLBACK_SECRET, body, Math.floor(Date.now() / 1000));
	await source.send(url, { headers: { 'x-signature': signature }, body }).catch(() => undefined);
}

async function callBack(source: FakeSystem, url: string, correlationId: string): Promise<void> {
	const body = JSON.stringify({
		correlationId,
		status: 'done',
		result: { approved: true, at: new Date().toISOString() },
	});
	const signature = signPayload(
		DEMO_CALLBACK_SECRET,
		body,
		Math.floor(Date.now() / 1000),
		waitIdOf(url),
	);
	await source.send(url, { headers: { 'x-signature': signature }, body }).catch(() => undefined);
}

const SUBJECTS = [
	'Printer on fire',
	'Cannot log in',
	'Invoice missing',
	'VPN drops every hour',
	'Refund request',
	'Password reset loop',
];

function ticketsAt(now: number, startedAt: number) {
	const newest = 100 + Math.floor((now - startedAt) / 20_000);
	const tickets = [];
	for (let id = Math.max(1, newest - 19); id <= newest; id++) {
		tickets.push({
			id,
			subject: SUBJECTS[id % SUBJECTS.length],
			priority: id % 3 === 0 ? 'high' : 'normal',
			createdAt: new Date(startedAt + (id - 100) * 20_000).toISOString(),
		});
	}
	return tickets;
}

const PRODUCTS = ['router-x1', 'switch-48p', 'sfp-10g', 'patch-cable-2m', 'ups-1500'];

function inventoryAt(now: number) {
	const epoch = Math.floor(now / 30_000);
	return PRODUCTS.map((sku, index) => {
		// One product changes per 30 s window, in turn; the others keep their last value.
		const changes = Math.floor((epoch - index) / PRODUCTS.length);
		return {
			sku,
			quantity: 10 + ((changes * 7 + index * 3) % 40),
			updatedAt: new Date((changes * PRODUCTS.length + index) * 30_000).toISOString(),
		};
	});
}
