/**
 * Resume latency of the Round-Trip Wait (callback sent → the next node starts), through its per-wait
 * URL and through one fixed URL (a Round-Trip Callback node, which finds the waiting run by its
 * correlation id in n8n's database and forwards the callback to it), side by side with n8n's built-in
 * Wait node resuming on a webhook, on one real n8n in the same run, round trips interleaved.
 * Ours also authenticates (HMAC) and correlates the callback; the built-in accepts any POST to the URL.
 * BENCH_WAITING=1000 first puts that many other runs to wait on the fixed URL (the lookup's table grows).
 * Needs the built package (npm run build); packs it like the e2e tests do.
 *   npx tsx bench/roundTripResume.bench.ts        (BENCH_ROUND_TRIPS=50 for more; default 15)
 */
import { randomUUID } from 'node:crypto';

import { signPayload } from '../core/roundtrip/signature';
import { marker, node, PACKAGE, webhookTrigger, workflow } from '../test/e2e/workflowBuilder';
import { ensureN8nInstalled, packAndPrepareNodesFolder } from '../test/harness/install';
import { type Execution, N8nInstance, nodeOutput } from '../test/harness/n8nInstance';
import { waitFor } from '../test/harness/net';
import { percentile } from './stats';

const ROUND_TRIPS = Number(process.env.BENCH_ROUND_TRIPS ?? 15);
const SECRET = 'bench-secret';
const WAITING = Number(process.env.BENCH_WAITING ?? 0);

interface Contender {
	label: string;
	path: string;
	workflowId: string;
	/** The callback URL and request a waiting execution expects. */
	callback(
		waiting: Execution,
		id: string,
	): { url: string; headers: Record<string, string>; body: string };
	latencies: number[];
}

async function main(): Promise<void> {
	ensureN8nInstalled();
	packAndPrepareNodesFolder();
	const n8n = await N8nInstance.launch('bench-round-trip', { N8N_LOG_LEVEL: 'warn' });
	try {
		const credential = await n8n.createCredential('bench', 'roundTripCallbackApi', {
			scheme: 'hmac',
			secret: SECRET,
			signatureHeader: 'x-signature',
			toleranceSec: 300,
		});
		const ours = await n8n.importWorkflow(
			workflow(
				'resume: Round-Trip Wait',
				[
					webhookTrigger('Start', 'bench-ours'),
					node(
						'Wait',
						`${PACKAGE}.roundTripWait`,
						{
							mode: 'waitOnly',
							correlationId: '={{ $json.body.id }}',
							timeoutAmount: 1,
							timeoutUnit: 'hours',
						},
						{ credentials: { roundTripCallbackApi: { id: credential, name: 'bench' } } },
					),
					marker('After'),
				],
				[
					['Start', 'Wait'],
					['Wait', 'After', 0],
				],
			),
		);
		const builtIn = await n8n.importWorkflow(
			workflow(
				'resume: built-in Wait',
				[
					webhookTrigger('Start', 'bench-builtin'),
					node(
						'Resume URL',
						'n8n-nodes-base.set',
						{
							mode: 'manual',
							assignments: {
								assignments: [
									{
										id: randomUUID(),
										name: 'resumeUrl',
										value: '={{ $execution.resumeUrl }}',
										type: 'string',
									},
								],
							},
						},
						{ typeVersion: 3.4 },
					),
					node(
						'Wait',
						'n8n-nodes-base.wait',
						{ resume: 'webhook', httpMethod: 'POST', options: {} },
						{ typeVersion: 1.1, webhookId: randomUUID() },
					),
					marker('After'),
				],
				[
					['Start', 'Resume URL'],
					['Resume URL', 'Wait'],
					['Wait', 'After'],
				],
			),
		);
		const credentials = { roundTripCallbackApi: { id: credential, name: 'bench' } };
		/** Start → Round-Trip Wait through the fixed URL → After; with the Round-Trip Callback node if `callbacks`. */
		const fixedUrlWorkflow = (name: string, path: string, callbacks: boolean) =>
			workflow(
				name,
				[
					...(callbacks
						? [
								node(
									'Callbacks',
									`${PACKAGE}.roundTripCallback`,
									{ path: 'bench-fixed-url' },
									{ credentials, webhookId: randomUUID() },
								),
							]
						: []),
					webhookTrigger('Start', path),
					node(
						'Wait',
						`${PACKAGE}.roundTripWait`,
						{
							mode: 'waitOnly',
							callbackVia: 'fixed',
							correlationId: '={{ $json.body.id }}',
							timeoutAmount: 1,
							timeoutUnit: 'hours',
						},
						{ credentials },
					),
					marker('After'),
				],
				[
					['Start', 'Wait'],
					['Wait', 'After', 0],
				],
			);
		const fixed = await n8n.importWorkflow(
			fixedUrlWorkflow('resume: Round-Trip Wait through a fixed URL', 'bench-fixed', true),
		);
		// Other runs waiting on the same partner (credential), in a workflow of their own.
		const others = await n8n.importWorkflow(
			fixedUrlWorkflow('waiting: other runs on the fixed URL', 'bench-others', false),
		);
		await n8n.publish(ours);
		await n8n.publish(builtIn);
		await n8n.publish(fixed);
		await n8n.publish(others);
		await othersWaiting(n8n, others);
		const contenders: Contender[] = [
			{
				label: 'Round-Trip Wait',
				path: 'bench-ours',
				workflowId: ours,
				latencies: [],
				callback: (waiting, id) => {
					const body = JSON.stringify({ correlationId: id });
					const url = String(nodeOutput(waiting, 'Wait')[0].callbackUrl);
					return {
						url,
						body,
						headers: { 'x-signature': signPayload(SECRET, body, Math.floor(Date.now() / 1000)) },
					};
				},
			},
			{
				label: 'Round-Trip Wait, fixed URL',
				path: 'bench-fixed',
				workflowId: fixed,
				latencies: [],
				callback: (_waiting, id) => {
					const body = JSON.stringify({ correlationId: id });
					return {
						url: `${n8n.webhookBaseUrl}/webhook/bench-fixed-url`,
						body,
						headers: { 'x-signature': signPayload(SECRET, body, Math.floor(Date.now() / 1000)) },
					};
				},
			},
			{
				label: 'n8n Wait (webhook)',
				path: 'bench-builtin',
				workflowId: builtIn,
				latencies: [],
				callback: (waiting) => ({
					url: String(nodeOutput(waiting, 'Resume URL')[0].resumeUrl),
					body: '{}',
					headers: {},
				}),
			},
		];
		for (let i = 0; i < ROUND_TRIPS; i++)
			for (const contender of contenders) contender.latencies.push(await roundTrip(n8n, contender));

		const rows = [['', 'p50 ms', 'p99 ms', 'mean ms']];
		for (const c of contenders)
			rows.push([
				c.label,
				...[
					percentile(c.latencies, 50),
					percentile(c.latencies, 99),
					c.latencies.reduce((a, b) => a + b, 0) / c.latencies.length,
				].map((v) => v.toFixed(0)),
			]);
		const [perWait, fixedUrl, builtInWait] = contenders;
		for (const [label, a] of [
			['ratio (per-wait / built-in)', perWait],
			['ratio (fixed URL / built-in)', fixedUrl],
		] as const)
			rows.push([
				label,
				...[50, 99].map((p) =>
					(percentile(a.latencies, p) / percentile(builtInWait.latencies, p)).toFixed(2),
				),
				'',
			]);
		process.stdout.write(
			`Resume latency over ${ROUND_TRIPS} round trips each (callback sent → next node starts), ${WAITING} other runs waiting on the fixed URL\n`,
		);
		for (const row of rows)
			process.stdout.write(
				`${row[0].padEnd(30)}${row
					.slice(1)
					.map((cell) => cell.padStart(9))
					.join('')}\n`,
			);
	} finally {
		await n8n.stop();
	}
}

/** Puts BENCH_WAITING runs to wait on the fixed URL (ids nobody calls back), 10 at a time. */
async function othersWaiting(n8n: N8nInstance, workflowId: string): Promise<void> {
	if (WAITING === 0) return;
	for (let i = 0; i < WAITING; i += 10)
		await Promise.all(
			Array.from({ length: Math.min(10, WAITING - i) }, async (_, j) => {
				await waitFor('the fixed-URL start webhook', async () => {
					const started = await fetch(`${n8n.baseUrl}/webhook/bench-others`, {
						method: 'POST',
						headers: { 'content-type': 'application/json' },
						body: JSON.stringify({ id: `other-${i + j}` }),
					});
					return started.ok ? true : undefined;
				});
			}),
		);
	await waitFor(
		`${WAITING} runs waiting`,
		async () => {
			const all = await n8n.executionSummaries(workflowId);
			return all.filter((e) => e.status === 'waiting').length >= WAITING ? true : undefined;
		},
		{ timeoutMs: 1_800_000, intervalMs: 2_000 },
	);
}

/** Starts a run, waits until it is waiting, calls back, and returns callback-sent → "After" started. */
async function roundTrip(n8n: N8nInstance, contender: Contender): Promise<number> {
	const id = randomUUID();
	// Publishing is asynchronous in n8n 2.x: the start webhook answers 404 until it is registered.
	await waitFor(`${contender.label}'s start webhook`, async () => {
		const started = await fetch(`${n8n.baseUrl}/webhook/${contender.path}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ id }),
		});
		if (started.status === 404) return undefined;
		if (!started.ok) throw new Error(`starting ${contender.label} answered ${started.status}`);
		return true;
	});
	const waiting = await waitFor(
		`${contender.label} to wait`,
		async () => {
			const executions = await n8n.executions(contender.workflowId);
			return executions.find(
				(e) =>
					e.status === 'waiting' &&
					JSON.stringify(e.data ?? {}).includes(
						contender.label.startsWith('Round-Trip Wait') ? id : 'resumeUrl',
					),
			);
		},
		{ intervalMs: 50 },
	);
	const { url, headers, body } = contender.callback(waiting, id);
	const sentAt = Date.now();
	const answer = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...headers },
		body,
	});
	if (!answer.ok)
		throw new Error(
			`${contender.label} refused the callback: ${answer.status} ${await answer.text()}`,
		);
	const done = await waitFor(
		`${contender.label} to finish`,
		async () => {
			const execution = await n8n.execution(waiting.id);
			return execution.status === 'success' ? execution : undefined;
		},
		{ intervalMs: 50 },
	);
	const after = done.data?.resultData.runData.After?.[0] as { startTime?: number } | undefined;
	if (!after?.startTime)
		throw new Error(`${contender.label}: no start time for the node after the wait`);
	return after.startTime - sentAt;
}

void main();
