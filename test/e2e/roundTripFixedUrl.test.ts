import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { retryDelayMs } from '../../core/roundtrip/dispatch';
import { isRetryableAtFixedUrl } from '../../core/roundtrip/fixedUrl';
import { FORWARD_HEADER } from '../../core/roundtrip/proof';
import { signPayload } from '../../core/roundtrip/signature';
import { FakeSystem } from '../harness/fakeSystem';
import { N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { marker, node, PACKAGE, workflow, webhookTrigger } from './workflowBuilder';

/**
 * A partner with one fixed webhook URL and one secret (an e-signature service, say): every event it
 * sends for any request goes to the Round-Trip Callback node's URL, signed with the account's secret
 * (HMAC over "<t>..<body>"), carrying the partner's own id. Each run waits in a Round-Trip Wait for
 * its own id, resumed only by a "signed" or "declined" event (its Resume Condition).
 */
const SECRET = 'fixed-url-partner-secret';
const FIXED_PATH = 'round-trip/esign';
/** Runs waiting at once through the fixed URL: 50 more in `npm run test:full` (issue 46: CI's time, 123 s under load). */
const WAITING_AT_ONCE = process.env.E2E_FULL ? [10, 50] : [10];
const CONDITION = 'body.status in ["signed", "declined"]';

type Answer = { status: number; body: string; json?: unknown };
/** A callback sent and its answer. */
type Sent = Answer & { sent: { correlationId: string; status: string; at: number } };
type Callback = { kind: 'viewed' | 'signed' | 'duplicate' | 'forged' | 'unknown'; id: string };

/** A deterministic shuffle (mulberry32), so a failing order can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
	const copy = [...items];
	let state = seed;
	const random = () => {
		state = (state + 0x6d2b79f5) | 0;
		let t = Math.imul(state ^ (state >>> 15), 1 | state);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
	};
	for (let i = copy.length - 1; i > 0; i--) {
		const j = Math.floor(random() * (i + 1));
		[copy[i], copy[j]] = [copy[j], copy[i]];
	}
	return copy;
}

describe('Round-Trip Wait through one fixed callback URL in a real n8n', () => {
	let n8n: N8nInstance;
	let partner: FakeSystem;
	let fixedUrl: string;
	let sendWorkflowId: string;
	let waitOnlyWorkflowId: string;
	let answerWorkflowId: string;

	beforeAll(async () => {
		partner = await FakeSystem.start();
		partner.on('POST', '/envelopes', { status: 202, body: { accepted: true } });
		n8n = await N8nInstance.launch('round-trip-fixed-url');
		const credentialId = await n8n.createCredential('E-sign account', 'roundTripCallbackApi', {
			scheme: 'hmac',
			secret: SECRET,
			signatureHeader: 'x-signature',
			toleranceSec: 300,
		});
		const credentials = { roundTripCallbackApi: { id: credentialId, name: 'E-sign account' } };
		const receiverId = await n8n.importWorkflow(
			workflow(
				'e-sign callbacks',
				[
					node(
						'Round-Trip Callback',
						`${PACKAGE}.roundTripCallback`,
						{ path: FIXED_PATH },
						{ credentials, webhookId: 'e-sign-callbacks' },
					),
				],
				[],
			),
		);
		/** Webhook start → Round-Trip Wait (fixed URL) → "Accepted" on Callback, "Late" on Timed Out. */
		const waiting = (name: string, path: string, parameters: Record<string, unknown>) =>
			workflow(
				name,
				[
					webhookTrigger('Start', path),
					node(
						'Round-Trip Wait',
						`${PACKAGE}.roundTripWait`,
						{
							callbackVia: 'fixed',
							resumeCondition: CONDITION,
							timeoutAmount: 1,
							timeoutUnit: 'hours',
							...parameters,
						},
						{ credentials },
					),
					marker('Accepted'),
					marker('Late'),
				],
				[
					['Start', 'Round-Trip Wait'],
					['Round-Trip Wait', 'Accepted', 0],
					['Round-Trip Wait', 'Late', 1],
				],
			);
		sendWorkflowId = await n8n.importWorkflow(
			waiting('e-sign request', 'fx-start', {
				mode: 'sendAndWait',
				method: 'POST',
				url: partner.url('/envelopes'),
				// The partner's own id for the request: the envelope id the workflow gives it.
				correlationId: '={{ "env-" + $json.body.order }}',
				body: '={{ JSON.stringify({ order: $json.body.order }) }}',
			}),
		);
		waitOnlyWorkflowId = await n8n.importWorkflow(
			waiting('e-sign wait only', 'fx-wait-only', {
				mode: 'waitOnly',
				correlationId: '={{ $json.body.id }}',
			}),
		);
		answerWorkflowId = await n8n.importWorkflow(
			waiting('e-sign request, id from the answer', 'fx-answer', {
				mode: 'sendAndWait',
				method: 'POST',
				url: partner.url('/envelopes/assigned'),
				// The partner assigns the envelope id only in its answer to the request.
				correlationIdFrom: 'answer',
				correlationIdInAnswer: 'body.envelopeId',
				body: '={{ JSON.stringify({ order: $json.body.order }) }}',
			}),
		);
		for (const id of [receiverId, sendWorkflowId, waitOnlyWorkflowId, answerWorkflowId])
			await n8n.publish(id);
		fixedUrl = `${n8n.webhookBaseUrl}/webhook/${FIXED_PATH}`;
	});

	afterAll(async () => {
		await n8n?.stop();
		await partner?.close();
	});

	async function start(path: string, payload: Record<string, unknown>): Promise<void> {
		await waitFor(`the ${path} start webhook to be registered`, async () => {
			const response = await fetch(`${n8n.webhookBaseUrl}/webhook/${path}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify(payload),
			});
			return response.ok ? true : undefined;
		});
	}

	/** The partner's event for `id`, signed with the account's secret (or another, for a forgery). */
	async function send(id: string, status: string, secret = SECRET): Promise<Sent> {
		const sent = { correlationId: id, status, at: Date.now() };
		const body = JSON.stringify(sent);
		const signature = signPayload(secret, body, Math.floor(Date.now() / 1000));
		return {
			...(await partner.send(fixedUrl, { headers: { 'x-signature': signature }, body })),
			sent,
		};
	}

	/** Sends as a partner following the contract: retryable answers again, after 0.5 s doubling. */
	async function sendWithRetries(id: string, status: string): Promise<Answer[]> {
		const firstAt = Date.now();
		// No answer at all (n8n restarting) is status 0: retried, as the contract says.
		const sendOnce = async () =>
			await send(id, status).catch((error: Error) => ({ status: 0, body: error.message }));
		const answers: Answer[] = [await sendOnce()];
		// The contract retries until the run's deadline; the test gives up after 20 attempts.
		for (let attempt = 0; attempt < 20; attempt++) {
			const last = answers[answers.length - 1];
			const retryable =
				last.status === 0 || isRetryableAtFixedUrl(last.status, last.body, firstAt, Date.now());
			if (!retryable) return answers;
			await new Promise((resolve) => setTimeout(resolve, retryDelayMs(attempt))); // the partner's backoff
			answers.push(await sendOnce());
		}
		return answers;
	}

	/** Runs `work` over `items`, `width` at a time. */
	async function inParallel<T, R>(items: T[], width: number, work: (item: T) => Promise<R>) {
		const results: R[] = new Array(items.length);
		let next = 0;
		await Promise.all(
			Array.from({ length: width }, async () => {
				while (next < items.length) {
					const index = next++;
					results[index] = await work(items[index]);
				}
			}),
		);
		return results;
	}

	test.each(WAITING_AT_ONCE)(
		'%i runs waiting at once: each resumes once, with its own signed event, whatever else arrives',
		async (runs) => {
			const base = runs * 1_000;
			const ids = Array.from({ length: runs }, (_, i) => `env-${base + i}`);
			const orders = ids.map((_, i) => base + i);
			await inParallel(orders, 5, async (order) => await start('fx-start', { order }));
			// The request leaves once n8n has saved the wait (and the custom data it is found by).
			await waitFor(
				`${runs} requests at the partner`,
				async () =>
					partner
						.requests('/envelopes')
						.filter((r) => ids.includes(`env-${(r.json as { order: number }).order}`)).length ===
					runs
						? true
						: undefined,
				{ timeoutMs: 180_000 },
			);

			// First the noise, in random order: status events the runs do not wait for, forgeries, unknown ids.
			const noise: Callback[] = shuffled(
				[
					...ids.map((id): Callback => ({ kind: 'viewed', id })),
					...ids.filter((_, i) => i % 4 === 0).map((id): Callback => ({ kind: 'forged', id })),
					...ids
						.filter((_, i) => i % 5 === 0)
						.map((_, i): Callback => ({ kind: 'unknown', id: `env-nobody-${base + i}` })),
				],
				runs,
			);
			const noiseAnswers = await inParallel(noise, 6, async (c) =>
				c.kind === 'forged'
					? await send(c.id, 'signed', 'not-the-secret')
					: await send(c.id, 'viewed'),
			);
			const statusesOf = (kind: Callback['kind'], list: Callback[], answers: Answer[]) =>
				answers.filter((_, i) => list[i].kind === kind).map((a) => a.status);
			expect(new Set(statusesOf('viewed', noise, noiseAnswers))).toEqual(new Set([202]));
			expect(new Set(statusesOf('forged', noise, noiseAnswers))).toEqual(new Set([403]));
			// Ids nobody waits for (yet): kept for the run that will wait for them (none will; they expire).
			expect(new Set(statusesOf('unknown', noise, noiseAnswers))).toEqual(new Set([202]));
			for (const [i, answer] of noiseAnswers.entries())
				if (noise[i].kind === 'unknown') expect(answer.json).toMatchObject({ kept: true });
			// A forged callback's answer says nothing of whether its id is waiting.
			const forgedBodies = noiseAnswers
				.filter((_, i) => noise[i].kind === 'forged')
				.map((a) => a.json);
			expect(new Set(forgedBodies.map((b) => JSON.stringify(b))).size).toBe(1);
			const stillWaiting = (await n8n.executions(sendWorkflowId)).filter(
				(e) =>
					ids.includes(String(e.data?.resultData.metadata?.correlationId)) &&
					e.status === 'waiting',
			);
			expect(stillWaiting).toHaveLength(runs);

			// Then the events they wait for, in random order, some twice, with more forgeries among them.
			const events: Callback[] = shuffled(
				[
					...ids.map((id): Callback => ({ kind: 'signed', id })),
					...ids.filter((_, i) => i % 3 === 0).map((id): Callback => ({ kind: 'duplicate', id })),
					...ids.filter((_, i) => i % 4 === 1).map((id): Callback => ({ kind: 'forged', id })),
				],
				runs + 1,
			);
			const eventAnswers = await inParallel(events, 6, async (c) =>
				c.kind === 'forged'
					? await send(c.id, 'signed', 'not-the-secret')
					: await send(c.id, 'signed'),
			);
			expect(new Set(statusesOf('forged', events, eventAnswers))).toEqual(new Set([403]));
			// Per id, exactly one 200; a copy gets 410 once the run has resumed, or (racing the resume) n8n's 409 / 500.
			for (const id of ids) {
				const copies = eventAnswers.filter(
					(_, i) => events[i].id === id && events[i].kind !== 'forged',
				);
				expect(copies.filter((a) => a.status === 200)).toHaveLength(1);
				for (const copy of copies.filter((a) => a.status !== 200))
					expect([409, 410, 500]).toContain(copy.status);
			}
			// A later copy resumes nothing: 410.
			await expect(send(ids[0], 'signed')).resolves.toMatchObject({ status: 410 });

			const ended = await waitFor(
				`${runs} runs to end`,
				async () => {
					const all = (await n8n.executions(sendWorkflowId)).filter((e) =>
						ids.includes(String(e.data?.resultData.metadata?.correlationId)),
					);
					return all.length === runs && all.every((e) => e.status === 'success') ? all : undefined;
				},
				{ timeoutMs: 180_000 },
			);
			// The answers counted by kind and status, for the report (test-artifacts/).
			const tally: Record<string, Record<number, number>> = {};
			const count = (list: Callback[], answers: Answer[]) =>
				answers.forEach((answer, i) => {
					const byStatus = (tally[list[i].kind] ??= {});
					byStatus[answer.status] = (byStatus[answer.status] ?? 0) + 1;
				});
			count(noise, noiseAnswers);
			count(events, eventAnswers);
			const artifacts = join(__dirname, '../../test-artifacts');
			mkdirSync(artifacts, { recursive: true });
			writeFileSync(
				join(artifacts, `round-trip-fixed-url-${runs}.json`),
				`${JSON.stringify({ runs, answers: tally }, null, 2)}\n`,
			);
			process.stdout.write(`fixed URL, ${runs} runs: ${JSON.stringify(tally)}\n`);
			for (const execution of ended) {
				const id = execution.data?.resultData.metadata?.correlationId;
				const [accepted] = nodeOutput(execution, 'Accepted');
				expect(accepted).toMatchObject({
					correlationId: id,
					body: { correlationId: id, status: 'signed' },
				});
				expect(nodeOutput(execution, 'Late')).toEqual([]);
			}
		},
		600_000,
	);

	test('a callback sent before the run waits is kept (202), sent once with no retry, and resumes the run once; a forged one keeps nothing', async () => {
		const id = `early-${Date.now()}`;
		// Before the run exists, in this order: a forgery (were it kept, it would be handed on first and
		// resume the run with its body), a status event the run does not wait for, the event it waits for.
		const forged = await send(id, 'signed', 'not-the-secret');
		expect(forged.status).toBe(403);
		const viewed = await send(id, 'viewed');
		const signed = await send(id, 'signed');
		for (const early of [viewed, signed]) {
			expect(early.status).toBe(202);
			expect(early.json).toMatchObject({ kept: true, resumed: false });
		}
		await start('fx-wait-only', { id });
		const execution = await waitFor('the early run to end', async () => {
			const found = (await n8n.executions(waitOnlyWorkflowId)).find(
				(e) => e.data?.resultData.metadata?.correlationId === id,
			);
			return found?.status === 'success' ? found : undefined;
		});
		const accepted = nodeOutput(execution, 'Accepted');
		expect(accepted).toHaveLength(1);
		expect(accepted[0]).toMatchObject({
			correlationId: id,
			body: signed.sent,
		});
		// A copy after the resume resumes nothing, as at any time: 410.
		await expect(send(id, 'signed')).resolves.toMatchObject({ status: 410 });
	});

	test("the id from the partner's answer: a partner that calls back the moment it answers resumes each run once (a callback before the wait is saved is kept for it); an answer without an id fails the run before it waits", async () => {
		const orders = Array.from({ length: 8 }, (_, i) => 700_000 + i);
		const envelopeOf = new Map<number, string>();
		const callbacks: Array<Promise<Answer[]>> = [];
		// A 0 ms partner: it assigns the envelope id, answers with it, and sends "signed" to the fixed URL at once.
		partner.on('POST', '/envelopes/assigned', (request) => {
			const { order } = request.json as { order: number | string };
			if (order === 'no-id') return { status: 202, body: { accepted: true } };
			const envelopeId = `psn-${order}-${Math.random().toString(36).slice(2, 10)}`;
			envelopeOf.set(Number(order), envelopeId);
			setImmediate(() => callbacks.push(sendWithRetries(envelopeId, 'signed')));
			return { status: 201, body: { envelopeId } };
		});
		await inParallel(orders, 8, async (order) => await start('fx-answer', { order }));
		await start('fx-answer', { order: 'no-id' });
		await waitFor('the partner to have answered every request', async () =>
			envelopeOf.size === orders.length && callbacks.length === orders.length ? true : undefined,
		);
		const answers = await Promise.all(callbacks);
		// Each callback ends on the 200 of its run's resume, or on 202 kept when it came before the wait
		// was saved (the answer was still being processed): then the run claims it. Before, at most n8n's
		// retryable "running already".
		for (const sent of answers) {
			const last = sent[sent.length - 1];
			expect([200, 202]).toContain(last.status);
			if (last.status === 202) expect(last.json).toMatchObject({ kept: true });
			for (const early of sent.slice(0, -1)) expect(early.status).toBe(409);
		}
		process.stdout.write(
			`id from the answer, first attempts: ${JSON.stringify(answers.map((sent) => sent[0].status))}\n`,
		);
		const executions = await waitFor('9 runs of the answer workflow to end', async () => {
			const all = await n8n.executions(answerWorkflowId);
			// Ended: in queue mode a resumed run is listed (new, running) before a worker has ended it.
			return all.length === orders.length + 1 &&
				all.every((e) => e.status === 'success' || e.status === 'error')
				? all
				: undefined;
		});
		const failed = executions.filter((e) => e.status === 'error');
		expect(failed).toHaveLength(1);
		expect(failed[0].data?.resultData.error?.message).toBe(
			'Invalid value "body.envelopeId" for "Correlation ID in Answer": gave nothing in the partner\'s answer (HTTP 202, body {"accepted":true}); it must give the partner\'s id for the request, text or a number',
		);
		const resumed = executions.filter((e) => e.status === 'success');
		expect(resumed.map((e) => e.data?.resultData.metadata?.correlationId).sort()).toEqual(
			[...envelopeOf.values()].sort(),
		);
		for (const execution of resumed) {
			const id = execution.data?.resultData.metadata?.correlationId;
			expect(nodeOutput(execution, 'Accepted')).toEqual([
				expect.objectContaining({
					correlationId: id,
					body: expect.objectContaining({ correlationId: id, status: 'signed' }),
				}),
			]);
			expect(nodeOutput(execution, 'Late')).toEqual([]);
		}
	}, 300_000);

	test('callbacks sent while n8n restarts resume each run once the fixed URL answers again, and one kept before the restart resumes the run that waits after it: nothing lived in its memory', async () => {
		// Kept before the restart, for a run that starts only after it.
		const keptId = `kept-across-restart-${Date.now()}`;
		const kept = await send(keptId, 'signed');
		expect([kept.status, kept.json]).toEqual([202, expect.objectContaining({ kept: true })]);
		const ids = Array.from({ length: 5 }, (_, i) => `env-${900_000 + i}`);
		for (const [i] of ids.entries()) await start('fx-start', { order: 900_000 + i });
		await waitFor('5 requests at the partner', async () =>
			partner
				.requests('/envelopes')
				.filter((r) => ids.includes(`env-${(r.json as { order: number }).order}`)).length === 5
				? true
				: undefined,
		);
		const crashedBefore = (await n8n.executions(sendWorkflowId)).filter(
			(e) => e.status === 'crashed',
		).length;
		const restarting = n8n.restart();
		// The callbacks leave once n8n no longer answers: each first attempt meets the restart.
		await waitFor(
			'n8n to be down',
			async () =>
				await fetch(fixedUrl, { method: 'POST' }).then(
					() => undefined,
					() => true,
				),
		);
		const answers = await Promise.all(ids.map((id) => sendWithRetries(id, 'signed')));
		await restarting;
		for (const sent of answers) expect(sent[0].status).toBe(0);
		// n8n's startup recovery can end a run it had saved waiting just before the restart `crashed`:
		// seen once on a busy machine (a .ci/run of 2026-12-07), n8n 2.41 amended from its event log
		// a run whose wait it had saved 0.35 s before the SIGTERM. Its callback is answered 410 (no run
		// waits any more), and the crashed execution says what happened; every other run resumes.
		const finals = answers.map((sent) => sent[sent.length - 1].status);
		for (const status of finals) expect([200, 410]).toContain(status);
		const gone = finals.filter((status) => status === 410).length;
		const crashed = (await n8n.executions(sendWorkflowId)).filter(
			(e) => e.status === 'crashed',
		).length;
		expect(crashed - crashedBefore).toBe(gone);
		await waitFor(`the ${5 - gone} runs not crashed to end on Callback`, async () => {
			const ended = (await n8n.executions(sendWorkflowId)).filter(
				(e) =>
					ids.includes(String(e.data?.resultData.metadata?.correlationId)) &&
					e.status === 'success' &&
					nodeOutput(e, 'Accepted').length === 1,
			);
			return ended.length === 5 - gone ? true : undefined;
		});
		await start('fx-wait-only', { id: keptId });
		const resumed = await waitFor('the run for the kept callback to end', async () => {
			const found = (await n8n.executions(waitOnlyWorkflowId)).find(
				(e) => e.data?.resultData.metadata?.correlationId === keptId,
			);
			return found?.status === 'success' ? found : undefined;
		});
		expect(nodeOutput(resumed, 'Accepted')).toEqual([
			expect.objectContaining({ correlationId: keptId, body: kept.sent }),
		]);
	}, 300_000);
});

/**
 * Issue 45: what reaches a run through the fixed URL, and what a partner's 202 "kept" is worth. n8n's
 * WEBHOOK_URL is a small proxy in front of it (as a reverse proxy would be), which the test can make
 * answer 503 to the fixed URL's forwards (n8n's webhook path restarting).
 */
describe('Round-Trip fixed URL: only its own wait, never a secret, never lost (issue 45)', () => {
	const TOKEN = 'partner-a-header-token-45';
	const SECRET_H = 'partner-h-secret-45';
	const SECRET_B = 'partner-b-secret-45';
	const FLOOD_BOUND = 20;
	let n8n: N8nInstance;
	let proxy: Server;
	let proxyUrl = '';
	let failForwards = false;
	let failedForwards = 0;
	const url = (path: string) => `${proxyUrl}/webhook/p45/${path}`;
	const ids: Record<string, string> = {};
	const credentialIds: Record<string, string> = {};

	/** Forwards everything to n8n; while failForwards, answers the fixed URL's forwards 503. */
	async function startProxy(target: () => string): Promise<void> {
		proxy = createServer((req, res) => {
			void (async () => {
				const chunks: Buffer[] = [];
				for await (const chunk of req) chunks.push(chunk as Buffer);
				if (failForwards && req.headers[FORWARD_HEADER] !== undefined) {
					failedForwards++;
					res.writeHead(503).end('restarting');
					return;
				}
				const headers: Record<string, string> = {};
				for (const [name, value] of Object.entries(req.headers))
					if (typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name))
						headers[name] = value;
				const answer = await fetch(`${target()}${req.url}`, {
					method: req.method,
					headers,
					body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
				});
				const passed: Record<string, string> = {};
				for (const name of ['content-type', 'retry-after'])
					if (answer.headers.get(name)) passed[name] = answer.headers.get(name)!;
				res.writeHead(answer.status, passed).end(Buffer.from(await answer.arrayBuffer()));
			})().catch(() => res.writeHead(502).end());
		});
		await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
		proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
	}

	beforeAll(async () => {
		let n8nUrl = '';
		await startProxy(() => n8nUrl);
		n8n = await N8nInstance.launch('round-trip-fixed-url-45', { WEBHOOK_URL: `${proxyUrl}/` });
		n8nUrl = n8n.webhookBaseUrl;
		const token = { scheme: 'header', token: TOKEN, headerName: 'x-partner-token' };
		const hmac = (secret: string) => ({ scheme: 'hmac', secret, toleranceSec: 300 });
		for (const [name, data] of Object.entries({
			A: token,
			'A copy': token,
			H: hmac(SECRET_H),
			F: hmac(SECRET_H),
			B: hmac(SECRET_B),
		}))
			credentialIds[name] = await n8n.createCredential(
				`Partner ${name}`,
				'roundTripCallbackApi',
				data,
			);
		const credential = (name: string) => ({
			roundTripCallbackApi: { id: credentialIds[name], name: `Partner ${name}` },
		});
		const receiver = (name: string, keptAtMost?: number) =>
			workflow(
				`p45 receiver ${name}`,
				[
					node(
						'Round-Trip Callback',
						`${PACKAGE}.roundTripCallback`,
						{ path: `p45/${name}`, ...(keptAtMost ? { keptAtMost } : {}) },
						{ credentials: credential(name), webhookId: `p45-${name}` },
					),
				],
				[],
			);
		const waiting = (name: string) =>
			workflow(
				`p45 wait ${name}`,
				[
					webhookTrigger('Start', `p45-wait-${name.replace(' ', '-')}`),
					node(
						'Round-Trip Wait',
						`${PACKAGE}.roundTripWait`,
						{
							mode: 'waitOnly',
							callbackVia: 'fixed',
							correlationId: '={{ $json.body.id }}',
							timeoutAmount: 1,
							timeoutUnit: 'hours',
						},
						{ credentials: credential(name) },
					),
					marker('Accepted'),
					marker('Late'),
				],
				[
					['Start', 'Round-Trip Wait'],
					['Round-Trip Wait', 'Accepted', 0],
					['Round-Trip Wait', 'Late', 1],
				],
			);
		// A workflow that plants the custom data a fixed-URL wait writes, then waits in n8n's own Wait node.
		const planted = workflow(
			'p45 planted',
			[
				webhookTrigger('Start', 'p45-planted'),
				node(
					'Plant',
					'n8n-nodes-base.code',
					{
						jsCode: `$execution.customData.set('roundTripMatch', '${credentialIds.A}:' + $json.body.id);\n$execution.customData.set('roundTripCallbackUrl', $execution.resumeUrl);\nreturn $input.all();`,
					},
					{ typeVersion: 2 },
				),
				node(
					'Wait',
					'n8n-nodes-base.wait',
					{ resume: 'webhook', httpMethod: 'POST', options: {} },
					{ typeVersion: 1.1, webhookId: randomUUID() },
				),
				marker('Got it'),
			],
			[
				['Start', 'Plant'],
				['Plant', 'Wait'],
				['Wait', 'Got it'],
			],
		);
		const all = [
			receiver('A'),
			receiver('H'),
			receiver('F', FLOOD_BOUND),
			receiver('B'),
			waiting('A'),
			waiting('A copy'),
			waiting('H'),
			waiting('B'),
			planted,
		];
		for (const json of all) {
			ids[json.name] = await n8n.importWorkflow(json);
			await n8n.publish(ids[json.name]);
		}
	}, 300_000);

	afterAll(async () => {
		await n8n?.stop();
		proxy?.closeAllConnections();
		await new Promise((resolve) => proxy?.close(resolve));
	});

	/** n8n's log, of every process (in queue mode the Round-Trip Callback runs in the webhook process). */
	const logs = () => [n8n.log(), ...n8n.helpers.map((helper) => helper.log())].join('\n');

	async function start(path: string, id: string): Promise<void> {
		await waitFor(`the ${path} start webhook`, async () => {
			const response = await fetch(`${n8n.webhookBaseUrl}/webhook/${path}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ id }),
			});
			return response.ok ? true : undefined;
		});
	}

	/** The execution of workflow `name` whose custom data holds `id`, once it has `status`. */
	async function executionOf(name: string, id: string, status: string) {
		return await waitFor(
			`the ${name} run for ${id} to be ${status}`,
			async () => {
				const found = (await n8n.executions(ids[name])).find((e) =>
					[e.data?.resultData.metadata?.correlationId, e.data?.resultData.metadata?.roundTripMatch]
						.map(String)
						.some((value) => value === id || value.endsWith(`:${id}`)),
				);
				return found?.status === status ? found : undefined;
			},
			{ timeoutMs: 240_000 },
		);
	}

	function signed(secret: string, id: string, status = 'signed') {
		const body = JSON.stringify({ correlationId: id, status, at: Date.now() });
		const signature = signPayload(secret, body, Math.floor(Date.now() / 1000));
		return { headers: { 'x-signature': signature, 'x-partner-event': 'envelope' }, body };
	}

	async function post(target: string, request: { headers: Record<string, string>; body: string }) {
		const response = await fetch(target, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...request.headers },
			body: request.body,
		});
		const body = await response.text();
		return { status: response.status, body, retryAfter: response.headers.get('retry-after') };
	}

	test('a workflow that plants roundTripMatch and waits in a Wait node gets neither the callback nor the token; the real run resumes, with the partner request as received', async () => {
		const id = `A-${Date.now()}`;
		await start('p45-planted', id);
		await executionOf('p45 planted', id, 'waiting');
		await start('p45-wait-A', id);
		await executionOf('p45 wait A', id, 'waiting');
		const answer = await post(url('A'), {
			headers: { 'x-partner-token': TOKEN, 'x-partner-event': 'envelope-signed' },
			body: JSON.stringify({ correlationId: id, status: 'signed' }),
		});
		expect(answer.status).toBe(200);
		const real = await executionOf('p45 wait A', id, 'success');
		const [accepted] = nodeOutput(real, 'Accepted') as Array<{ headers: Record<string, string> }>;
		expect(accepted).toMatchObject({ correlationId: id, body: { status: 'signed' } });
		expect(accepted.headers['x-partner-event']).toBe('envelope-signed');
		expect(accepted.headers['x-partner-token']).toBeUndefined();
		expect(accepted.headers[FORWARD_HEADER]).toBeUndefined();
		const planted = await executionOf('p45 planted', id, 'waiting');
		expect(JSON.stringify(planted)).not.toContain(TOKEN);
		expect(logs()).toContain('without a valid proof from a Round-Trip Wait');
	}, 300_000);

	test('a captured callback resent at the fixed URL while a second wait for the same id exists is refused', async () => {
		const id = `R-${Date.now()}`;
		await start('p45-wait-H', id);
		await executionOf('p45 wait H', id, 'waiting');
		const captured = signed(SECRET_H, id);
		expect((await post(url('H'), captured)).status).toBe(200);
		await executionOf('p45 wait H', id, 'success');
		await start('p45-wait-H', id);
		const second = await waitFor('the second run for the id to wait', async () => {
			const runs = (await n8n.executions(ids['p45 wait H'])).filter(
				(e) => e.data?.resultData.metadata?.correlationId === id,
			);
			return runs.length === 2 && runs.some((e) => e.status === 'waiting') ? runs : undefined;
		});
		const copy = await post(url('H'), captured);
		expect(copy.status).toBe(403);
		expect(copy.body).toContain('a copy is not accepted');
		const stillWaiting = (await n8n.executions(ids['p45 wait H'])).filter(
			(e) => e.data?.resultData.metadata?.correlationId === id && e.status === 'waiting',
		);
		expect(stillWaiting).toHaveLength(1);
		expect(second).toHaveLength(2);
		// The partner's own next callback for it does resume it.
		expect((await post(url('H'), signed(SECRET_H, id))).status).toBe(200);
	}, 300_000);

	test(`unknown ids from one partner fill only its own bound (${FLOOD_BOUND}), answered 503 with Retry-After; another partner's early callback is kept and delivered`, async () => {
		const flood = Array.from({ length: 400 }, (_, i) => `F-${Date.now()}-${i}`);
		const startedAt = Date.now();
		const answers: Array<Awaited<ReturnType<typeof post>>> = [];
		for (let i = 0; i < flood.length; i += 8)
			answers.push(
				...(await Promise.all(
					flood.slice(i, i + 8).map(async (id) => await post(url('F'), signed(SECRET_H, id))),
				)),
			);
		const byStatus: Record<number, number> = {};
		for (const answer of answers) byStatus[answer.status] = (byStatus[answer.status] ?? 0) + 1;
		process.stdout.write(
			`p45 flood of ${flood.length} in ${Date.now() - startedAt} ms: ${JSON.stringify(byStatus)}\n`,
		);
		expect(byStatus).toEqual({ 202: FLOOD_BOUND, 503: flood.length - FLOOD_BOUND });
		const full = answers.find((answer) => answer.status === 503)!;
		expect(Number(full.retryAfter)).toBeGreaterThan(0);
		expect(Number(full.retryAfter)).toBeLessThanOrEqual(600);
		// Partner B: its early callback is kept, and reaches its run.
		const id = `B-${Date.now()}`;
		const early = await post(url('B'), signed(SECRET_B, id));
		expect([early.status, JSON.parse(early.body)]).toEqual([
			202,
			expect.objectContaining({ kept: true }),
		]);
		await start('p45-wait-B', id);
		const run = await executionOf('p45 wait B', id, 'success');
		expect(nodeOutput(run, 'Accepted')).toEqual([expect.objectContaining({ correlationId: id })]);
	}, 300_000);

	test('a kept callback whose delivery fails (n8n answering 503) stays kept and reaches its run', async () => {
		const id = `K-${Date.now()}`;
		const early = await post(url('H'), signed(SECRET_H, id));
		expect(early.status).toBe(202);
		failForwards = true;
		failedForwards = 0;
		await start('p45-wait-H', id);
		await waitFor('six failed forwards', async () => (failedForwards >= 6 ? true : undefined), {
			timeoutMs: 120_000,
		});
		failForwards = false;
		const run = await executionOf('p45 wait H', id, 'success');
		expect(nodeOutput(run, 'Accepted')).toEqual([
			expect.objectContaining({
				correlationId: id,
				body: expect.objectContaining({ status: 'signed' }),
			}),
		]);
		expect(logs()).toContain('it stays kept and is handed on again');
	}, 400_000);

	test("a wait given a copy of the partner's credential: the kept callback leaves a warning naming both credentials", async () => {
		const id = `M-${Date.now()}`;
		await start('p45-wait-A-copy', id);
		await executionOf('p45 wait A copy', id, 'waiting');
		const answer = await post(url('A'), {
			headers: { 'x-partner-token': TOKEN },
			body: JSON.stringify({ correlationId: id, status: 'signed' }),
		});
		expect(answer.status).toBe(202);
		await waitFor('the warning in n8n log', async () =>
			n8n
				.log()
				.includes(`waits for this id with another credential (id ${credentialIds['A copy']})`)
				? true
				: undefined,
		);
		expect(logs()).toContain(`came with credential "Partner A" (id ${credentialIds.A})`);
	}, 120_000);
});
