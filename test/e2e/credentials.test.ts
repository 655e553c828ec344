import { signPayload, waitIdOf } from '../../core/roundtrip/signature';
import { buildMessage, Dovecot } from '../harness/dovecot';
import { FakeSystem, type RecordedRequest, type ScriptedResponse } from '../harness/fakeSystem';
import { type Execution, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { waitFor } from '../harness/net';
import { OAuth2AuthServer } from '../harness/oauth2';
import { marker, node, PACKAGE, webhookTrigger, workflow } from './workflowBuilder';

/** Version 1.1 of the Poll Trigger and the Connector: n8n's own credential types. */
const V = { typeVersion: 1.1 };
const CALLBACK_SECRET = 'callback-secret-for-credentials-e2e';

type Credential = { id: string; name: string };

/**
 * n8n's credential types in a real n8n 2.41.1: OAuth2 (client credentials) against a real OAuth2
 * authorization server on loopback (oauth2-mock-server) and an API that verifies its tokens, Header and
 * Basic Auth, and n8n's IMAP credential against Dovecot.
 */
describe('n8n credential types in a real n8n', () => {
	let n8n: N8nInstance;
	let auth: OAuth2AuthServer;
	let api: FakeSystem;
	let dovecot: Dovecot;
	/** Tokens the API no longer accepts (as if expired early, or their client was revoked). */
	const rejected = new Set<string>();
	/** What the API answered to each request it refused. */
	const refusals: Array<{ request: RecordedRequest; reason: string; token?: string }> = [];

	beforeAll(async () => {
		[auth, api, dovecot, n8n] = await Promise.all([
			OAuth2AuthServer.start(),
			FakeSystem.start(),
			Dovecot.start(),
			sharedN8n('credentials'),
		]);
	});

	afterAll(async () => {
		await n8n?.stop();
		await Promise.all([auth?.close(), api?.close(), dovecot?.stop()]);
	});

	/** The API's token check: a 401 unless the request carries a valid, unexpired, not rejected token. */
	function guard(request: RecordedRequest): ScriptedResponse | undefined {
		const check = auth.check(request.headers.authorization);
		const token = check.ok ? check.token : bearer(request);
		const reason = !check.ok ? check.reason : rejected.has(check.token) ? 'rejected' : undefined;
		if (!reason) return undefined;
		refusals.push({ request, reason, token });
		return {
			status: 401,
			headers: {
				'www-authenticate': `Bearer error="invalid_token", error_description="${reason}"`,
			},
			body: { error: 'invalid_token', reason },
		};
	}

	/** The API stops accepting every token issued to the client so far. */
	function rejectTokensOf(clientId: string): void {
		for (const event of auth.tokenEvents)
			if (event.clientId === clientId && event.accessToken) rejected.add(event.accessToken);
	}

	async function oauth2Credential(name: string, clientId: string): Promise<Credential> {
		const id = await n8n.createCredential(name, 'oAuth2Api', {
			grantType: 'clientCredentials',
			accessTokenUrl: auth.tokenUrl,
			clientId,
			clientSecret: `${clientId}-secret`,
			scope: 'api',
			authentication: 'header',
		});
		return { id, name };
	}

	const oauth2 = { authentication: 'oAuth2Api' };

	/** Starts a run through a Webhook trigger, once n8n has registered it. */
	async function start(path: string, payload: Record<string, unknown>): Promise<void> {
		await waitFor(`the ${path} webhook to be registered`, async () => {
			const response = await fetch(`${n8n.baseUrl}/webhook/${path}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify(payload),
			});
			return response.ok ? true : undefined;
		});
	}

	const errorOf = (execution: Execution) => execution.data?.resultData.error?.message ?? '';

	test('Poll Trigger with OAuth2: the token expires while the trigger runs, n8n refreshes and saves it, no item is lost or repeated; a revoked client fails the poll naming the credential and polling goes on', async () => {
		await auth.setTokenLifetime(12);
		const credential = await oauth2Credential('Partner OAuth2 (poll)', 'poll-client');
		let tickets = [{ id: 1 }, { id: 2 }];
		let expiredOnce = false;
		api.on('GET', '/oauth/tickets', (request) => {
			const refused = guard(request);
			if (refused && !expiredOnce && refusals.at(-1)?.reason === 'expired') {
				// A ticket arrives while the token is expired: it is listed by the poll that refreshes it.
				expiredOnce = true;
				tickets = [...tickets, { id: 3 }];
			}
			return refused ?? { body: { tickets } };
		});
		const id = await n8n.importWorkflow(
			workflow(
				'poll oauth2',
				[
					node(
						'Poll',
						`${PACKAGE}.pollTrigger`,
						{
							op: 'http.request',
							...oauth2,
							baseUrl: api.url('/oauth'),
							with: JSON.stringify({ method: 'GET', url: '/tickets' }),
							items: 'tickets',
							id: 'id',
							dedupe: 'unique',
							interval: 5,
							intervalUnit: 'seconds',
						},
						{ ...V, credentials: { oAuth2Api: credential } },
					),
					marker('Handled'),
				],
				[['Poll', 'Handled']],
			),
		);
		await n8n.publish(id);
		const ids = (executions: Execution[]) =>
			executions.map((e) => nodeOutput(e, 'Poll')[0]?.id).sort();

		expect(ids(await n8n.waitForFinishedExecutions(id, 2))).toEqual([1, 2]);
		// The token expires 12 s after it was issued; the poll after that is refused, refreshes and lists ticket 3.
		const three = await n8n.waitForFinishedExecutions(id, 3, 60_000);
		expect(ids(three)).toEqual([1, 2, 3]);
		const tokens = await auth.tokenRequests('poll-client', 2);
		expect(tokens.map((t) => [t.grant, t.status])).toEqual([
			['client_credentials', 200],
			['client_credentials', 200],
		]);
		const polls = api.requests('/oauth/tickets');
		const expired = refusals.filter((f) => f.request.path === '/oauth/tickets');
		expect(expired.map((f) => f.reason)).toEqual(['expired']);
		const refusedAt = polls.indexOf(expired[0].request);
		expect(refusedAt).toBeGreaterThan(0);
		expect(bearer(polls[refusedAt])).toBe(tokens[0].accessToken);
		// The same poll sent the request again at once with the new token.
		expect(bearer(polls[refusedAt + 1])).toBe(tokens[1].accessToken);

		// n8n saved the new token: the next polls use it without asking for another.
		await api.requestCount('/oauth/tickets', polls.length + 2);
		expect(auth.tokenEvents.filter((t) => t.clientId === 'poll-client')).toHaveLength(2);
		tickets = [...tickets, { id: 4 }];
		const all = await n8n.waitForFinishedExecutions(id, 4);
		expect(ids(all)).toEqual([1, 2, 3, 4]);
		expect(all.every((e) => e.status === 'success')).toBe(true);

		// The client is revoked: the API refuses its token and the authorization server refuses a new one.
		await auth.revoke('poll-client');
		rejectTokensOf('poll-client');
		const [failure] = (
			await n8n.waitForExecutions(id, (e) => e.some((x) => x.status === 'error'), 'a failed poll')
		).filter((e) => e.status === 'error');
		const failed = await n8n.execution(failure.id);
		expect(errorOf(failed)).toContain('OAuth2 API credential "Partner OAuth2 (poll)"');
		expect(errorOf(failed)).toContain('invalid_client');
		// Not a silent stop: the trigger keeps polling (with backoff), and nothing more started.
		await api.requestCount('/oauth/tickets', api.requests('/oauth/tickets').length + 1, 30_000);
		await n8n.unpublish(id);
		expect((await n8n.executions(id)).filter((e) => e.status === 'success')).toHaveLength(4);
		await auth.setTokenLifetime(3600);
	});

	test('Connector with OAuth2: a refused token is refreshed and the call made once; a revoked client fails the execution naming the credential', async () => {
		const credential = await oauth2Credential('Partner OAuth2 (connector)', 'connector-client');
		api.on(
			'GET',
			'/oauth/orders',
			(request) =>
				guard(request) ?? { body: { order: Number(request.query.order), state: 'shipped' } },
		);
		const id = await n8n.importWorkflow(
			workflow(
				'connector oauth2',
				[
					webhookTrigger('Start', 'connector-oauth2'),
					node(
						'Order',
						`${PACKAGE}.connector`,
						{
							op: 'http.request',
							...oauth2,
							baseUrl: api.url('/oauth'),
							with: '={{ JSON.stringify({ method: "GET", url: "/orders", query: { order: String($json.body.order) } }) }}',
						},
						{ ...V, credentials: { oAuth2Api: credential } },
					),
				],
				[['Start', 'Order']],
			),
		);
		await n8n.publish(id);
		const accepted = (order: number) =>
			api
				.requests('/oauth/orders')
				.filter(
					(r) =>
						r.query.order === String(order) &&
						auth.check(r.headers.authorization).ok &&
						!rejected.has(bearer(r) ?? ''),
				);

		await start('connector-oauth2', { order: 1 });
		const [first] = await n8n.waitForFinishedExecutions(id, 1);
		expect(nodeOutput(await n8n.execution(first.id), 'Order')).toEqual([
			{ order: 1, state: 'shipped' },
		]);

		rejectTokensOf('connector-client');
		await start('connector-oauth2', { order: 2 });
		const two = await n8n.waitForFinishedExecutions(id, 2);
		const second = await n8n.execution(two[1].id);
		expect(second.status).toBe('success');
		expect(nodeOutput(second, 'Order')).toEqual([{ order: 2, state: 'shipped' }]);
		expect(api.requests('/oauth/orders').filter((r) => r.query.order === '2')).toHaveLength(2); // refused, then sent again
		expect(accepted(2)).toHaveLength(1);
		expect((await auth.tokenRequests('connector-client', 2)).map((t) => t.status)).toEqual([
			200, 200,
		]);

		await auth.revoke('connector-client');
		rejectTokensOf('connector-client');
		await start('connector-oauth2', { order: 3 });
		const three = await n8n.waitForFinishedExecutions(id, 3);
		const third = await n8n.execution(three[2].id);
		expect(third.status).toBe('error');
		expect(errorOf(third)).toContain('OAuth2 API credential "Partner OAuth2 (connector)"');
		expect(errorOf(third)).toContain('invalid_client');
		expect(accepted(3)).toHaveLength(0);
		await n8n.unpublish(id);
	});

	test('Round-Trip Wait with OAuth2: the request is sent once after a refresh and the run resumes on its callback; a revoked client fails the run naming the credential', async () => {
		const credential = await oauth2Credential('Partner OAuth2 (round trip)', 'roundtrip-client');
		const callbackId = await n8n.createCredential(
			'Partner callback (credentials e2e)',
			'roundTripCallbackApi',
			{
				scheme: 'hmac',
				secret: CALLBACK_SECRET,
				signatureHeader: 'x-signature',
				toleranceSec: 300,
			},
		);
		api.on(
			'POST',
			'/oauth/jobs',
			(request) => guard(request) ?? { status: 202, body: { accepted: true } },
		);
		const id = await n8n.importWorkflow(
			workflow(
				'round trip oauth2',
				[
					webhookTrigger('Start', 'roundtrip-oauth2'),
					node(
						'Round-Trip Wait',
						`${PACKAGE}.roundTripWait`,
						{
							mode: 'sendAndWait',
							...oauth2,
							method: 'POST',
							url: api.url('/oauth/jobs'),
							body: '={{ JSON.stringify({ order: $json.body.order }) }}',
							timeoutAmount: 1,
							timeoutUnit: 'hours',
						},
						{
							credentials: {
								roundTripCallbackApi: {
									id: callbackId,
									name: 'Partner callback (credentials e2e)',
								},
								oAuth2Api: credential,
							},
						},
					),
					marker('Accepted'),
					marker('Late'),
				],
				[
					['Start', 'Round-Trip Wait'],
					['Round-Trip Wait', 'Accepted', 0],
					['Round-Trip Wait', 'Late', 1],
				],
			),
		);
		await n8n.publish(id);
		const accepted = (order: number) =>
			api
				.requests('/oauth/jobs')
				.filter(
					(r) =>
						(r.json as { order?: number }).order === order &&
						auth.check(r.headers.authorization).ok &&
						!rejected.has(bearer(r) ?? ''),
				);
		const callBack = async (request: RecordedRequest) => {
			const { correlationId, callbackUrl } = request.json as {
				correlationId: string;
				callbackUrl: string;
			};
			const raw = JSON.stringify({ correlationId, status: 'done' });
			const answer = await api.send(callbackUrl, {
				headers: {
					'x-signature': signPayload(
						CALLBACK_SECRET,
						raw,
						Math.floor(Date.now() / 1000),
						waitIdOf(callbackUrl),
					),
				},
				body: raw,
			});
			expect(answer.status).toBe(200);
		};

		await start('roundtrip-oauth2', { order: 1 });
		await callBack(
			await api.nextRequest(
				(r) =>
					r.path === '/oauth/jobs' &&
					(r.json as { order?: number }).order === 1 &&
					!refusals.some((f) => f.request === r),
			),
		);
		expect((await n8n.waitForFinishedExecutions(id, 1))[0].status).toBe('success');

		rejectTokensOf('roundtrip-client');
		await start('roundtrip-oauth2', { order: 2 });
		const sent = await api.nextRequest(
			(r) =>
				r.path === '/oauth/jobs' &&
				(r.json as { order?: number }).order === 2 &&
				accepted(2).includes(r),
		);
		await callBack(sent);
		const two = await n8n.waitForFinishedExecutions(id, 2);
		const second = await n8n.execution(two[1].id);
		expect(second.status).toBe('success');
		expect(nodeOutput(second, 'Accepted')[0]).toMatchObject({
			body: { status: 'done' },
			branch: 'Accepted',
		});
		expect(accepted(2)).toHaveLength(1);
		expect(
			api.requests('/oauth/jobs').filter((r) => (r.json as { order?: number }).order === 2),
		).toHaveLength(2);

		await auth.revoke('roundtrip-client');
		rejectTokensOf('roundtrip-client');
		await start('roundtrip-oauth2', { order: 3 });
		const three = await n8n.waitForFinishedExecutions(id, 3);
		const third = await n8n.execution(three[2].id);
		expect(third.status).toBe('error');
		expect(errorOf(third)).toContain('OAuth2 API credential "Partner OAuth2 (round trip)"');
		expect(accepted(3)).toHaveLength(0);
		await n8n.unpublish(id);
	});

	test("OAuth2 authorization code: connected through n8n's OAuth flow, the Connector refreshes with the refresh token and n8n saves it; a withdrawn grant fails asking to reconnect the credential", async () => {
		const name = 'Partner OAuth2 (authorization code)';
		const credentialId = await n8n.createCredential(name, 'oAuth2Api', {
			grantType: 'authorizationCode',
			authUrl: auth.authorizeUrl,
			accessTokenUrl: auth.tokenUrl,
			clientId: 'code-client',
			clientSecret: 'code-client-secret',
			scope: 'api offline_access',
			authQueryParameters: '',
			authentication: 'header',
		});
		// What the editor's "Connect" button does: n8n's authorization URL, the server's redirect with a code, n8n's callback.
		const session = await n8n.sessionCookie();
		const started = await fetch(`${n8n.baseUrl}/rest/oauth2-credential/auth?id=${credentialId}`, {
			headers: { cookie: session, 'browser-id': 'e2e' },
		});
		expect(started.status).toBe(200);
		const cookies = [session, ...started.headers.getSetCookie().map((c) => c.split(';')[0])].join(
			'; ',
		);
		const authorizeUrl = ((await started.json()) as { data: string }).data;
		expect(authorizeUrl.startsWith(auth.authorizeUrl)).toBe(true);
		const redirect = await fetch(authorizeUrl, { redirect: 'manual' });
		const callback = redirect.headers.get('location') ?? '';
		expect(callback).toContain('/rest/oauth2-credential/callback?code=');
		const connected = await fetch(callback, { headers: { cookie: cookies, 'browser-id': 'e2e' } });
		const page = await connected.text();
		expect(connected.status).toBe(200);
		expect(page).not.toMatch(/error/i);
		expect((await auth.tokenRequests('code-client', 1)).map((t) => t.grant)).toEqual([
			'authorization_code',
		]);

		api.on(
			'GET',
			'/oauth/profile',
			(request) =>
				guard(request) ?? { body: { user: 'johndoe', call: Number(request.query.call) } },
		);
		const id = await n8n.importWorkflow(
			workflow(
				'connector oauth2 authorization code',
				[
					webhookTrigger('Start', 'connector-oauth2-code'),
					node(
						'Profile',
						`${PACKAGE}.connector`,
						{
							op: 'http.request',
							...oauth2,
							baseUrl: api.url('/oauth'),
							with: '={{ JSON.stringify({ method: "GET", url: "/profile", query: { call: String($json.body.call) } }) }}',
						},
						{ ...V, credentials: { oAuth2Api: { id: credentialId, name } } },
					),
				],
				[['Start', 'Profile']],
			),
		);
		await n8n.publish(id);
		await start('connector-oauth2-code', { call: 1 });
		const [first] = await n8n.waitForFinishedExecutions(id, 1);
		expect(nodeOutput(await n8n.execution(first.id), 'Profile')).toEqual([
			{ user: 'johndoe', call: 1 },
		]);

		rejectTokensOf('code-client');
		await start('connector-oauth2-code', { call: 2 });
		const two = await n8n.waitForFinishedExecutions(id, 2);
		expect(nodeOutput(await n8n.execution(two[1].id), 'Profile')).toEqual([
			{ user: 'johndoe', call: 2 },
		]);
		expect((await auth.tokenRequests('code-client', 2)).map((t) => [t.grant, t.status])).toEqual([
			['authorization_code', 200],
			['refresh_token', 200],
		]);
		// Saved: the next call uses the refreshed token without another token request.
		await start('connector-oauth2-code', { call: 3 });
		const three = await n8n.waitForFinishedExecutions(id, 3);
		expect(three.every((e) => e.status === 'success')).toBe(true);
		expect(auth.tokenEvents.filter((t) => t.clientId === 'code-client')).toHaveLength(2);

		await auth.revokeGrant('code-client');
		rejectTokensOf('code-client');
		await start('connector-oauth2-code', { call: 4 });
		const four = await n8n.waitForFinishedExecutions(id, 4);
		const failed = await n8n.execution(four[3].id);
		expect(failed.status).toBe('error');
		expect(errorOf(failed)).toBe(
			`OAuth2 API credential "${name}": The credential "${name}" needs to be reconnected.`,
		);
		await n8n.unpublish(id);
	});

	test("Header Auth on a Poll Trigger and Basic Auth on a Connector: n8n's credentials reach the API", async () => {
		const header = {
			id: await n8n.createCredential('Inventory key', 'httpHeaderAuth', {
				name: 'X-API-Key',
				value: 'key-123',
			}),
			name: 'Inventory key',
		};
		const basic = {
			id: await n8n.createCredential('Partner login', 'httpBasicAuth', {
				user: 'partner',
				password: 'p4ss word',
			}),
			name: 'Partner login',
		};
		api.on('GET', '/keyed/stock', (r) =>
			r.headers['x-api-key'] === 'key-123'
				? { body: [{ sku: 'A-1' }, { sku: 'B-2' }] }
				: { status: 401, body: { error: 'no key' } },
		);
		const expected = `Basic ${Buffer.from('partner:p4ss word').toString('base64')}`;
		api.on('POST', '/basic/notes', (r) =>
			r.headers.authorization === expected
				? { body: { saved: (r.json as { sku: string }).sku } }
				: { status: 401, body: { error: 'no login' } },
		);

		const id = await n8n.importWorkflow(
			workflow(
				'header and basic',
				[
					node(
						'Poll',
						`${PACKAGE}.pollTrigger`,
						{
							op: 'http.request',
							authentication: 'httpHeaderAuth',
							baseUrl: api.url('/keyed'),
							with: JSON.stringify({ method: 'GET', url: 'stock' }),
							id: 'sku',
							dedupe: 'unique',
							interval: 5,
							intervalUnit: 'seconds',
						},
						{ ...V, credentials: { httpHeaderAuth: header } },
					),
					node(
						'Note',
						`${PACKAGE}.connector`,
						{
							op: 'http.request',
							authentication: 'httpBasicAuth',
							with: `={{ JSON.stringify({ method: "POST", url: "${api.url('/basic/notes')}", body: { sku: $json.sku } }) }}`,
						},
						{ ...V, credentials: { httpBasicAuth: basic } },
					),
				],
				[['Poll', 'Note']],
			),
		);
		await n8n.publish(id);
		const runs = await n8n.waitForFinishedExecutions(id, 2);
		await n8n.unpublish(id);
		const notes = await Promise.all(
			runs.map(async (e) => nodeOutput(await n8n.execution(e.id), 'Note')[0]),
		);
		expect(notes.map((n) => n.saved).sort()).toEqual(['A-1', 'B-2']);
		expect(runs.every((e) => e.status === 'success')).toBe(true);
		expect(api.requests('/basic/notes').every((r) => r.headers.authorization === expected)).toBe(
			true,
		);
	});

	test("IMAP ops with n8n's own IMAP credential: the Poll Trigger lists unread mail in Dovecot and the Connector marks it seen", async () => {
		const account = dovecot.addUser('n8n-imap', 'n8n-imap-password');
		const { host, port, secure, user, password } = account.connection;
		const credential = {
			id: await n8n.createCredential('Support mailbox (n8n IMAP)', 'imap', {
				host,
				port,
				secure,
				user,
				password,
				allowUnauthorizedCerts: false,
			}),
			name: 'Support mailbox (n8n IMAP)',
		};
		const uids = [
			await account.append(
				buildMessage({
					from: 'a@example.com',
					to: 'support@example.com',
					subject: 'First',
					text: 'one',
					messageId: '<n8n-imap-1@example.com>',
				}),
			),
			await account.append(
				buildMessage({
					from: 'b@example.com',
					to: 'support@example.com',
					subject: 'Second',
					text: 'two',
					messageId: '<n8n-imap-2@example.com>',
				}),
			),
		];
		const id = await n8n.importWorkflow(
			workflow(
				'imap with n8n credential',
				[
					node(
						'New Mail',
						`${PACKAGE}.pollTrigger`,
						{
							op: 'imap.listUnseen',
							with: JSON.stringify({ mailbox: 'INBOX' }),
							items: 'messages',
							id: 'mailbox & ":" & uidValidity & ":" & uid',
							dedupe: 'unique',
							interval: 5,
							intervalUnit: 'seconds',
						},
						{ ...V, credentials: { imap: credential } },
					),
					node(
						'Mark Seen',
						`${PACKAGE}.connector`,
						{
							op: 'imap.markSeen',
							with: '={{ JSON.stringify({ mailbox: $json.mailbox, uid: $json.uid, uidValidity: $json.uidValidity }) }}',
						},
						{ ...V, credentials: { imap: credential } },
					),
				],
				[['New Mail', 'Mark Seen']],
			),
		);
		await n8n.publish(id);
		const runs = await n8n.waitForFinishedExecutions(id, 2);
		await n8n.unpublish(id);
		expect(runs.every((e) => e.status === 'success')).toBe(true);
		expect(runs.map((e) => nodeOutput(e, 'New Mail')[0]?.subject).sort()).toEqual([
			'First',
			'Second',
		]);
		for (const uid of uids) expect(await account.flags(uid)).toContain('\\Seen');
	});
});

function bearer(request: RecordedRequest | undefined): string | undefined {
	const header = request?.headers.authorization;
	const value = Array.isArray(header) ? header[0] : header;
	return value?.startsWith('Bearer ') ? value.slice(7) : undefined;
}
