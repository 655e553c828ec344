import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { FakeSystem } from '../harness/fakeSystem';
import { triggerItems } from '../harness/chaos';
import { type Execution, N8nInstance } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { instancesDir } from '../harness/paths';
import { marker, node, PACKAGE, workflow } from './workflowBuilder';

/**
 * How the Poll Trigger settles its runs with n8n (core/outbox.ts): a run that n8n cancelled or timed
 * out after it began is a run that happened (not repeated, no error); only a run n8n could not create
 * is rolled back, alone, and comes back at the next poll.
 */
describe('Poll Trigger run settlement in a real n8n', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;
	/** While this file exists, n8n's workflow.preExecute hook refuses one execution (and removes the file). */
	const refuseFlag = join(instancesDir, `refuse-next-${process.pid}`);

	beforeAll(async () => {
		mkdirSync(instancesDir, { recursive: true });
		const hooks = join(instancesDir, `hooks-${process.pid}.js`);
		writeFileSync(
			hooks,
			`const fs = require('node:fs');
module.exports = { workflow: { preExecute: [async function () {
	try { fs.unlinkSync(${JSON.stringify(refuseFlag)}); } catch { return; }
	throw new Error('refused by the test hook');
}] } };`,
		);
		source = await FakeSystem.start();
		n8n = await N8nInstance.launch('poll-settlement', { EXTERNAL_HOOK_FILES: hooks });
	});

	afterAll(async () => {
		await n8n?.stop();
		await source?.close();
	});

	function pollWorkflow(
		name: string,
		path: string,
		{ slowSeconds, settings }: { slowSeconds?: number; settings?: Record<string, unknown> } = {},
	) {
		const trigger = node('Poll', `${PACKAGE}.pollTrigger`, {
			op: 'http.request',
			with: JSON.stringify({ url: source.url(path) }),
			id: 'id',
			dedupe: 'unique',
			interval: 5,
			intervalUnit: 'seconds',
		});
		const nodes = [trigger, marker('Done')];
		const links: Array<[string, string]> = [['Poll', 'Done']];
		if (slowSeconds) {
			nodes.splice(
				1,
				0,
				node(
					'Slow',
					'n8n-nodes-base.wait',
					{ amount: slowSeconds, unit: 'seconds' },
					{ typeVersion: 1.1, webhookId: randomUUID() },
				),
			);
			links.splice(0, 1, ['Poll', 'Slow'], ['Slow', 'Done']);
		}
		const built = workflow(name, nodes, links);
		return { ...built, settings: { ...built.settings, ...settings } };
	}

	async function polls(path: string, count: number): Promise<void> {
		await source.requestCount(path, source.requests(path).length + count);
	}

	const ids = (executions: Execution[]) =>
		executions
			.flatMap((execution) => triggerItems(execution, 'Poll').map((item) => item.id))
			.sort();
	const couldNotStart = (executions: Execution[]) =>
		executions.filter((execution) =>
			JSON.stringify(execution.data?.resultData.error ?? {}).includes('could not start a run'),
		);

	test('a run stopped by a user ran: it is not started again and no error is recorded', async () => {
		source.on('GET', '/cancel', () => ({ body: [{ id: 'c-1' }] }));
		const id = await n8n.importWorkflow(
			pollWorkflow('poll cancel', '/cancel', { slowSeconds: 30 }),
		);
		await n8n.publish(id);
		// n8n's public API lists running executions only when asked for them.
		const running = await waitFor('the run to be going', async () => {
			const { data } = await n8n.api<{ data: Execution[] }>(
				'GET',
				`/executions?workflowId=${id}&status=running`,
			);
			return data[0];
		});
		await n8n.rest('POST', `/rest/executions/${running.id}/stop`);
		await n8n.waitForExecutions(
			id,
			(all) => all.some((e) => e.status === 'canceled'),
			'the run to be cancelled',
		);
		await polls('/cancel', 2);
		const executions = await n8n.executions(id);
		expect(ids(executions)).toEqual(['c-1']);
		expect(couldNotStart(executions)).toEqual([]);
		await n8n.unpublish(id);
	});

	test('a run that hit the workflow timeout ran: it is not started again and no error is recorded', async () => {
		source.on('GET', '/timeout', () => ({ body: [{ id: 't-1' }] }));
		const id = await n8n.importWorkflow(
			pollWorkflow('poll timeout', '/timeout', {
				slowSeconds: 20,
				settings: { executionTimeout: 2 },
			}),
		);
		await n8n.publish(id);
		const [timedOut] = await n8n.waitForExecutions(
			id,
			(all) => all.some((e) => e.status === 'canceled' || e.status === 'error'),
			'the run to time out',
		);
		expect(JSON.stringify(timedOut.data?.resultData.error ?? {})).toMatch(/timeout|timed out/i);
		await polls('/timeout', 2);
		const executions = await n8n.executions(id);
		expect(ids(executions)).toEqual(['t-1']);
		expect(couldNotStart(executions)).toEqual([]);
		await n8n.unpublish(id);
	});

	test('a run n8n could not create is reported, and only its item comes back at the next poll', async () => {
		source.on('GET', '/refused', () => ({ body: [{ id: 'r-1' }, { id: 'r-2' }, { id: 'r-3' }] }));
		writeFileSync(refuseFlag, '');
		const id = await n8n.importWorkflow(pollWorkflow('poll refused', '/refused'));
		await n8n.publish(id);
		const executions = await n8n.waitForExecutions(
			id,
			(all) =>
				couldNotStart(all).length === 1 && all.filter((e) => e.status === 'success').length === 3,
			'one refused creation, then all three items run',
		);
		expect(existsSync(refuseFlag)).toBe(false);
		const [report] = couldNotStart(executions);
		expect(report.data?.resultData.error?.message).toMatch(
			/^n8n could not start a run for item "r-[123]": refused by the test hook/,
		);
		await polls('/refused', 2);
		expect(ids((await n8n.executions(id)).filter((e) => e.status === 'success'))).toEqual([
			'r-1',
			'r-2',
			'r-3',
		]);
		await n8n.unpublish(id);
	});

	test('after n8n pruned the executions, a re-publish on a quiet source starts nothing again', async () => {
		source.on('GET', '/pruned', () => ({ body: [{ id: 'p-1' }, { id: 'p-2' }, { id: 'p-3' }] }));
		const id = await n8n.importWorkflow(pollWorkflow('poll pruned', '/pruned'));
		await n8n.publish(id);
		const ran = await n8n.waitForExecutions(
			id,
			(all) => all.filter((e) => e.status === 'success').length === 3,
			'the three items to run',
		);
		// The trigger stores its settlements once every run has settled: nothing left to re-emit.
		await waitFor('the stored outbox to be empty', async () => {
			const { staticData } = await n8n.getWorkflow(id);
			const state = (staticData as Record<string, { pollTrigger?: { outbox?: unknown[] } }>)?.[
				'node:Poll'
			]?.pollTrigger;
			return state && (state.outbox ?? []).length === 0 ? true : undefined;
		});
		// What n8n's pruning does (after 14 days, 10,000 executions, or at once for a workflow that
		// does not save successful executions): the rows, and their deduplication keys, are gone.
		for (const execution of ran) await n8n.api('DELETE', `/executions/${execution.id}`);
		await n8n.unpublish(id);
		await n8n.publish(id);
		await polls('/pruned', 2);
		expect(ids(await n8n.executions(id))).toEqual([]);
		await n8n.unpublish(id);
	});
});
