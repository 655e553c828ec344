import { FakeSystem } from '../harness/fakeSystem';
import { N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { marker, node, PACKAGE, webhookTrigger, workflow } from './workflowBuilder';

/*
 * Issue #11, "the edges users hit first", in a real n8n: an HTTP HEAD through the Connector node,
 * cron expressions that fire more often than every 10 s refused at activation, a Poll Trigger every
 * 2 hours with default options, "With" checked at publication, and an "Items" typo.
 */
describe('first edges in a real n8n', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;

	beforeAll(async () => {
		[n8n, source] = await Promise.all([N8nInstance.launch('first-edges'), FakeSystem.start()]);
	});

	afterAll(async () => {
		await Promise.all([n8n?.stop(), source?.close()]);
	});

	test('a HEAD through the Connector returns the status and the headers', async () => {
		source.on('HEAD', '/inventory', {
			etag: '"inv-7"',
			headers: { 'x-item-count': '42' },
			body: { never: 'sent' },
		});
		const id = await n8n.importWorkflow(
			workflow(
				'HEAD inventory',
				[
					webhookTrigger('Start', 'head-inventory'),
					node('Check', `${PACKAGE}.connector`, {
						op: 'http.request',
						with: JSON.stringify({ method: 'HEAD', url: source.url('/inventory') }),
					}),
					marker('Done'),
				],
				[
					['Start', 'Check'],
					['Check', 'Done'],
				],
			),
		);
		await n8n.publish(id);
		await waitFor('the start webhook to be registered', async () =>
			(await fetch(`${n8n.webhookBaseUrl}/webhook/head-inventory`, { method: 'POST' })).ok
				? true
				: undefined,
		);
		const [execution] = await n8n.waitForFinishedExecutions(id, 1);
		expect(execution.status).toBe('success');
		const [result] = nodeOutput(execution, 'Check');
		expect(result).toMatchObject({
			status: 200,
			headers: { etag: '"inv-7"', 'x-item-count': '42', 'content-type': 'application/json' },
		});
		expect(source.requests('/inventory').map((request) => request.method)).toEqual(['HEAD']);
	});

	test('publishing a cron that fires more often than every 10 s is refused, naming "Cron Expression" and the value', async () => {
		const cases = [
			{
				cron: '*/5 * * * * *',
				timezone: '',
				problem: 'it fires 5 seconds apart (at 00:00:00 and 00:00:05)',
			},
			{
				cron: '0-30 * * * * *',
				timezone: '',
				problem: 'it fires 1 second apart (at 00:00:00 and 00:00:01)',
			},
			{
				cron: '55 59 1,2 * * *',
				timezone: 'Europe/Berlin',
				problem:
					'it fires 5 seconds apart when the clocks change in Europe/Berlin (for example at 2000-03-26T00:59:55.000Z and 2000-03-26T01:00:00.000Z)',
			},
		];
		const ids = await Promise.all(
			cases.map(({ cron, timezone }) =>
				n8n.importWorkflow(
					workflow(
						`cron ${cron}`,
						[
							node('Schedule', `${PACKAGE}.durableScheduleTrigger`, {
								scheduleType: 'cron',
								cron,
								timezone,
							}),
							marker('Done'),
						],
						[['Schedule', 'Done']],
					),
				),
			),
		);
		for (const id of ids) await n8n.publish(id);
		const statuses = await Promise.all(
			ids.map((id) =>
				waitFor(
					`workflow ${id} to fail activation`,
					async () => {
						const { data } = await n8n.rest<{
							data: { status: string; triggers: Array<{ errorMessage?: string }> };
						}>('GET', `/rest/workflows/${id}/publication-status`);
						return data.status === 'failed' ? data : undefined;
					},
					{ timeoutMs: 120_000, intervalMs: 1_000 },
				),
			),
		);
		expect(statuses.map((status) => status.triggers[0].errorMessage)).toEqual(
			cases.map(
				({ cron, problem }) =>
					`There was a problem activating the workflow: "Invalid value "${cron}" for "Cron Expression": ${problem}; fires must be at least 10 seconds apart (e.g. "*/10 * * * * *")"`,
			),
		);
		for (const id of ids) expect(await n8n.executions(id)).toEqual([]);
	}, 180_000);

	/** The publication status once n8n has settled it (activation errors in n8n 2.x are asynchronous). */
	async function publication(id: string, status: 'failed' | 'published') {
		return await waitFor(
			`workflow ${id} to be ${status}`,
			async () => {
				const { data } = await n8n.rest<{
					data: { status: string; triggers: Array<{ errorMessage?: string }> };
				}>('GET', `/rest/workflows/${id}/publication-status`);
				return data.status === status ? data : undefined;
			},
			{ timeoutMs: 120_000, intervalMs: 1_000 },
		);
	}

	const pollTrigger = (name: string, parameters: Record<string, unknown>) =>
		workflow(
			name,
			[
				node('Poll', `${PACKAGE}.pollTrigger`, {
					op: 'http.request',
					id: 'id',
					dedupe: 'unique',
					interval: 5,
					intervalUnit: 'seconds',
					...parameters,
				}),
				marker('Done'),
			],
			[['Poll', 'Done']],
		);

	test('a Poll Trigger every 2 hours activates with default options and polls', async () => {
		source.on('GET', '/every-two-hours', { body: [{ id: 'e-1' }] });
		const id = await n8n.importWorkflow(
			pollTrigger('poll every 2 h', {
				with: JSON.stringify({ url: source.url('/every-two-hours') }),
				interval: 2,
				intervalUnit: 'hours',
			}),
		);
		await n8n.publish(id);
		const [run] = await n8n.waitForFinishedExecutions(id, 1);
		expect(nodeOutput(run, 'Poll')).toEqual([{ id: 'e-1' }]);
		expect((await publication(id, 'published')).triggers[0].errorMessage ?? null).toBeNull();
		await n8n.unpublish(id);
	});

	test('a Poll Trigger whose "With" arguments cannot work is refused at publication, naming the argument and the value, before any request', async () => {
		const id = await n8n.importWorkflow(
			pollTrigger('poll bad with', {
				with: JSON.stringify({ method: 'FETCH', url: source.url('/never') }),
			}),
		);
		await n8n.publish(id);
		expect((await publication(id, 'failed')).triggers[0].errorMessage).toContain(
			'Invalid value "FETCH" for "With": "method" must be one of GET, POST, PUT, PATCH, DELETE, HEAD',
		);
		expect(source.requests('/never')).toEqual([]);
	});

	test('an "Items" path that does not exist fails the poll naming the path and the fields that are there', async () => {
		source.on('GET', '/typo', { body: { tickets: [{ id: 1 }], total: 1 } });
		const id = await n8n.importWorkflow(
			pollTrigger('poll items typo', {
				with: JSON.stringify({ url: source.url('/typo') }),
				items: 'tikets',
			}),
		);
		await n8n.publish(id);
		const [failure] = await n8n.waitForExecutions(
			id,
			(all) => all.some((e) => e.status === 'error'),
			'the failed poll',
		);
		const failed = await n8n.execution(failure.id);
		expect(failed.data?.resultData.error?.message).toBe(
			`Invalid value "tikets" for "Items": it names the field "tikets", which the op's result does not have; its fields are: tickets, total`,
		);
		await n8n.unpublish(id);
	});
});
