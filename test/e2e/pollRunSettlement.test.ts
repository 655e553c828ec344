import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { ScheduleState } from '../../core/schedule';
import { FakeSystem } from '../harness/fakeSystem';
import { triggerItems } from '../harness/chaos';
import { type Execution, N8nInstance, type WorkflowJson } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { instancesDir } from '../harness/paths';
import { marker, node, type NodeJson, PACKAGE, workflow } from './workflowBuilder';

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
		n8n = await N8nInstance.launch(
			'poll-settlement',
			{
				EXTERNAL_HOOK_FILES: hooks,
				// The backlog case: at most 2 production runs at once, the rest queued by n8n (status
				// "new"). A limit users set; the other cases start at most 3 runs at a time, and end them.
				N8N_CONCURRENCY_PRODUCTION_LIMIT: '2',
				// n8n's hard-delete pass (executions-pruning.service.js) runs every 15 minutes by default; here
				// every 6 s, so the case about a workflow that does not save successful executions sees n8n
				// itself delete their rows. Pruning stays on, and with the default it does the same, later.
				EXECUTIONS_DATA_PRUNE_HARD_DELETE_INTERVAL: '0.1',
			},
			// Queue mode (npm run test:queue): the workers' concurrency is the limit, 2 slots in all.
			{ concurrency: 1 },
		);
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
		const nodes = [pollNode('Poll', path), marker('Done')];
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

	/** n8n's public API replaces a workflow's definition (and static data, when given). */
	async function update(
		id: string,
		definition: WorkflowJson,
		staticData?: Record<string, unknown>,
	): Promise<void> {
		const { name, nodes, connections, settings } = definition;
		await n8n.api('PUT', `/workflows/${id}`, {
			name,
			nodes,
			connections,
			settings,
			...(staticData && { staticData }),
		});
	}

	/** The node's stored static data as n8n holds it in its database. */
	async function stored<T>(id: string, key: string): Promise<T | undefined> {
		const { staticData } = await n8n.getWorkflow(id);
		return (staticData as Record<string, T> | undefined)?.[key];
	}

	/** Waits until n8n has stored the Poll Trigger's state with nothing left in its outbox. */
	async function pollOutboxEmptied(id: string, nodeName: string): Promise<void> {
		await waitFor(`the stored outbox of ${nodeName} to be empty`, async () => {
			const state = (await stored<{ pollTrigger?: { outbox?: unknown[] } }>(id, `node:${nodeName}`))
				?.pollTrigger;
			return state && (state.outbox ?? []).length === 0 ? true : undefined;
		});
	}

	/**
	 * Waits until n8n has stored the first poll of the trigger's `kind` store (publishing returns
	 * before n8n activates the trigger; that poll runs during activation, and n8n saves it after) and
	 * returns that store's id.
	 */
	async function firstPollStored(id: string, nodeName: string, kind: string): Promise<string> {
		return await waitFor(`the first ${kind} poll of ${nodeName} to be stored`, async () => {
			const dedupe = (
				await stored<{ pollTrigger?: { dedupe?: { kind: string; fresh: boolean; id: string } } }>(
					id,
					`node:${nodeName}`,
				)
			)?.pollTrigger?.dedupe;
			return dedupe?.kind === kind && !dedupe.fresh ? (dedupe.id ?? '') : undefined;
		});
	}

	/** A Poll Trigger on `path` of the fake source, polling every 5 s. */
	function pollNode(name: string, path: string, parameters: Record<string, unknown> = {}) {
		return node(name, `${PACKAGE}.pollTrigger`, {
			op: 'http.request',
			with: JSON.stringify({ url: source.url(path) }),
			id: 'id',
			dedupe: 'unique',
			interval: 5,
			intervalUnit: 'seconds',
			...parameters,
		});
	}

	/** A Poll Trigger "Poll" (dedupe `changed` on version `v`, First Poll Starts "nothing") → Done. */
	function versionedPollWorkflow(name: string, path: string) {
		return workflow(
			name,
			[
				pollNode('Poll', path, {
					dedupe: 'changed',
					version: 'v',
					options: { firstPoll: 'none' },
				}),
				marker('Done'),
			],
			[['Poll', 'Done']],
		);
	}

	/** "id@v" of every item the trigger `nodeName` started, over all executions, sorted. */
	const versions = (executions: Execution[], nodeName: string) =>
		executions
			.flatMap((execution) => triggerItems(execution, nodeName))
			.map((item) => `${String(item.id)}@${String(item.v)}`)
			.sort();

	/** The workflow's executions once `count` of them have succeeded. */
	const afterSuccesses = async (id: string, count: number) =>
		await n8n.waitForExecutions(
			id,
			(all) => all.filter((e) => e.status === 'success').length >= count,
			`${count} runs`,
		);

	/** n8n's debug lines "<message> {json}" after `from` in its log, with their JSON parsed. */
	function logged(message: string, from: number): Array<Record<string, unknown>> {
		return n8n
			.log()
			.slice(from)
			.split('\n')
			.filter((line) => line.includes(` | ${message} {`))
			.map((line) => JSON.parse(line.slice(line.indexOf(`${message} {`) + message.length + 1)));
	}

	test('a monthly Durable Schedule Trigger whose executions were pruned runs its last window once, through a re-publish and a restart', async () => {
		// Before session 4 (RunEmitter's settlement write), the window's run stayed in the stored
		// outbox: a catch-up is emitted during activation, and n8n saves static data after activation,
		// before the run had ended. With the execution deleted, the next activation re-emitted the
		// window and n8n ran it again (a month's report twice). This case catches that: run on that
		// code (core/ and nodes/ of 6f779e0), it fails waiting for the settled window to be stored.
		const TRIGGER = 'Monthly';
		const definition = workflow(
			'schedule monthly pruned',
			[
				node(TRIGGER, `${PACKAGE}.durableScheduleTrigger`, {
					scheduleType: 'cron',
					cron: '0 0 1 * *',
					timezone: 'UTC',
					catchUp: 'run-all',
				}),
				marker('Done'),
			],
			[[TRIGGER, 'Done']],
		);
		const id = await n8n.importWorkflow(definition);
		const stateOf = async () =>
			(await stored<{ schedule?: ScheduleState }>(id, `node:${TRIGGER}`))?.schedule;
		// A first activation starts the schedule "now" (nothing missed); n8n stores it after activating.
		await n8n.publish(id);
		const first = await waitFor('the first activation to be stored', async () => {
			const state = await stateOf();
			return state?.lastDeclaredFire !== undefined ? state : undefined;
		});
		await n8n.unpublish(id);
		// One fire without waiting a month: the stored state back-dated to the month before, as if n8n
		// had been down since, so this month's window is caught up at the next activation.
		const now = new Date();
		const window = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
		const monthBefore = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
		await update(id, definition, {
			[`node:${TRIGGER}`]: { schedule: { ...first, lastDeclaredFire: monthBefore } },
		});
		await n8n.publish(id);
		const [run] = await n8n.waitForExecutions(
			id,
			(all) => all.length === 1 && all[0].status === 'success',
			'the caught-up window to run',
		);
		expect(triggerItems(run, TRIGGER).map((item) => item.declaredAt)).toEqual([
			new Date(window).toISOString(),
		]);
		await waitFor('the settled window to be stored', async () => {
			const state = await stateOf();
			return state?.outbox.length === 0 &&
				state.history.some((r) => r.declaredAt === window && r.outcome === 'caught_up')
				? true
				: undefined;
		});
		// What n8n's pruning does (after 14 days or 10,000 executions): the row and its key are gone.
		await n8n.api('DELETE', `/executions/${run.id}`);

		// The trigger logs each activation's report (debug); "settling" counts the outbox runs it
		// emitted again, "startedCount" the windows it started.
		const activation = async (from: number) =>
			await waitFor('the trigger to be activated', async () =>
				logged(`Durable Schedule Trigger "${TRIGGER}" activated`, from).at(-1),
			);
		let from = n8n.log().length;
		await n8n.unpublish(id);
		await n8n.publish(id);
		expect(await activation(from)).toMatchObject({ settling: 0, startedCount: 0 });
		expect(await n8n.executions(id)).toEqual([]);

		from = n8n.log().length;
		await n8n.restart();
		expect(await activation(from)).toMatchObject({ settling: 0, startedCount: 0 });
		expect(await n8n.executions(id)).toEqual([]);
		await n8n.unpublish(id);
	});

	test('a workflow that saves no successful executions: after n8n hard-deleted their rows, a re-publish starts nothing again', async () => {
		// Before session 4 (RunEmitter's settlement write), the last burst stayed in the stored outbox
		// of a quiet trigger; once n8n had hard-deleted the rows (and so their deduplication keys), a
		// re-publish re-emitted the items and n8n ran them again. This case catches that: run on that
		// code (core/ and nodes/ of 6f779e0), it fails waiting for the stored outbox to be empty.
		source.on('GET', '/nosave', () => ({ body: [{ id: 'a' }, { id: 'b' }, { id: 'c' }] }));
		// n8n keeps nothing of a successful run here: each run tells the fake source it ran.
		source.on('GET', '/nosave-ran', () => ({ body: { ok: true } }));
		const ran = () => source.requests('/nosave-ran').map((request) => request.query.id);
		const definition = workflow(
			'poll no-save',
			[
				pollNode('Poll', '/nosave'),
				node(
					'Tell',
					'n8n-nodes-base.httpRequest',
					{ url: `=${source.url('/nosave-ran')}?id={{ $json.id }}`, options: {} },
					{ typeVersion: 4.2 },
				),
			],
			[['Poll', 'Tell']],
		);
		const id = await n8n.importWorkflow({
			...definition,
			settings: { ...definition.settings, saveDataSuccessExecution: 'none' },
		});
		const from = n8n.log().length;
		await n8n.publish(id);
		await source.requestCount('/nosave-ran', 3);
		await pollOutboxEmptied(id, 'Poll');
		// n8n marks each ended run's row deleted (execution-persistence.js deleteInFlightExecution, with
		// pruning on) and removes it in its next hard-delete pass: wait for that pass to name all three.
		// The runs' hooks are logged by the process that ran them (in queue mode, a worker).
		const hooks = () =>
			[n8n.logFile, ...n8n.workers.map((worker) => worker.logFile)]
				.flatMap((file) => readFileSync(file, 'utf8').split('\n'))
				.filter((line) => line.includes(' | Executing hook (hookFunctionsSave) {'))
				.map(
					(line) =>
						JSON.parse(line.slice(line.indexOf('{'))) as {
							executionId: string;
							workflowId: string;
						},
				);
		const executionIds = () => [
			...new Set(
				hooks()
					.filter((hook) => hook.workflowId === id)
					.map((hook) => String(hook.executionId)),
			),
		];
		// A hang guard of several passes: on a busy machine a pass can fail on SQLite's lock and is
		// tried again; if it never comes, the error says what n8n had run, deleted and kept.
		const hardDeleted = () =>
			new Set(
				logged('Hard-deleted executions', from).flatMap((pass) =>
					(pass.executionIds as unknown[]).map(String),
				),
			);
		await waitFor(
			'n8n to hard-delete the three runs',
			async () => {
				const runs = executionIds();
				const deleted = hardDeleted();
				return runs.length === 3 && runs.every((run) => deleted.has(run)) ? true : undefined;
			},
			{ timeoutMs: 180_000, intervalMs: 1_000 },
		).catch(async (error: Error) => {
			const kept = (await n8n.executions(id)).map(
				(execution) => `${execution.id} ${execution.status}`,
			);
			throw new Error(
				`${error.message}: runs [${executionIds().join(', ')}], hard-deleted [${[...hardDeleted()].join(', ')}], kept [${kept.join(', ')}], failed passes ${logged('Failed to hard-delete executions', from).length}`,
			);
		});
		expect(await n8n.executions(id)).toEqual([]);

		await n8n.unpublish(id);
		await n8n.publish(id);
		await polls('/nosave', 2);
		expect(ran().sort()).toEqual(['a', 'b', 'c']);
		expect(await n8n.executions(id)).toEqual([]);
		await n8n.unpublish(id);
	});

	test('a Poll Trigger refused at activation beside a Durable Schedule Trigger: once fixed, its items run once, its state stays stored, and a re-publish runs none again', async () => {
		// Before session 11, the refused activation left its copy of static data registered as open
		// for the Poll Trigger (nodes/shared/liveCopies.ts), so the fixed trigger's state never reached
		// the copy the schedule kept: each schedule save stored the Poll Trigger's state as the empty
		// object of the refused activation, and the re-publish ran a, b, c again (issue 26).
		const SCHEDULE = 'Every 10 s';
		source.on('GET', '/refused', () => ({ body: [{ id: 'a' }, { id: 'b' }, { id: 'c' }] }));
		const definition = workflow(
			'poll refused beside a schedule',
			[
				pollNode('Poll', '/refused', { interval: 2 }),
				node(SCHEDULE, `${PACKAGE}.durableScheduleTrigger`, {
					scheduleType: 'interval',
					interval: 10,
					intervalUnit: 'seconds',
				}),
				marker('Done'),
			],
			[
				['Poll', 'Done'],
				[SCHEDULE, 'Done'],
			],
		);
		const id = await n8n.importWorkflow(definition);
		const scheduleRuns = (all: Execution[]) =>
			all.filter((execution) => triggerItems(execution, SCHEDULE).length > 0).length;
		await n8n.publish(id);
		await n8n.waitForExecutions(id, (all) => scheduleRuns(all) >= 1, 'a schedule run');
		expect(ids(await n8n.executions(id))).toEqual([]);

		(definition.nodes[0] as NodeJson).parameters.interval = 5;
		await update(id, definition);
		await n8n.publish(id);
		const ran = await n8n.waitForExecutions(
			id,
			(all) => ids(all.filter((e) => e.status === 'success')).length >= 3,
			'a, b and c to run',
		);
		await pollOutboxEmptied(id, 'Poll');
		// Two schedule runs later, each of whose emits saved the schedule's copy of static data.
		const before = scheduleRuns(ran);
		await n8n.waitForExecutions(id, (all) => scheduleRuns(all) >= before + 2, 'two schedule runs');
		const state = await stored<{ pollTrigger?: { dedupe?: unknown } }>(id, 'node:Poll');
		expect(state?.pollTrigger?.dedupe).toBeDefined();

		await n8n.unpublish(id);
		await n8n.publish(id);
		await polls('/refused', 2);
		expect(ids(await n8n.executions(id))).toEqual(['a', 'b', 'c']);
		await n8n.unpublish(id);
	});

	test('changed: switched to unique and back, the next two versions each run once', async () => {
		// Before session 4 (dedupe keys hash the store's random id and the version), a `changed` key
		// was the item plus the store's generation, which a new store starts again from 0: after the
		// switch back, x@3 got x@1's key and x@4 x@2's, and n8n refused both as duplicates (lost).
		// This case catches that: run on that code (core/ and nodes/ of 6f779e0), x@3 never runs.
		// As docs/guarantees.md advises before a kind change: a new store starts nothing it finds.
		const definition = versionedPollWorkflow('poll kind switch', '/switch');
		let list: Array<{ id: string; v: number }> = [];
		source.on('GET', '/switch', () => ({ body: list }));
		const trigger = definition.nodes[0] as NodeJson;
		const id = await n8n.importWorkflow(definition);
		await n8n.publish(id);
		const stores = [await firstPollStored(id, 'Poll', 'changed')];
		const ranVersions = async (count: number) =>
			versions(
				(await afterSuccesses(id, count)).filter((e) => e.status === 'success'),
				'Poll',
			);
		list = [{ id: 'x', v: 1 }];
		expect(await ranVersions(1)).toEqual(['x@1']);
		list = [{ id: 'x', v: 2 }];
		expect(await ranVersions(2)).toEqual(['x@1', 'x@2']);

		for (const dedupe of ['unique', 'changed']) {
			await n8n.unpublish(id);
			trigger.parameters.dedupe = dedupe;
			await update(id, definition);
			await n8n.publish(id);
			stores.push(await firstPollStored(id, 'Poll', dedupe));
		}
		await polls('/switch', 1);
		expect(versions(await n8n.executions(id), 'Poll')).toEqual(['x@1', 'x@2']);

		list = [{ id: 'x', v: 3 }];
		expect(await ranVersions(3)).toEqual(['x@1', 'x@2', 'x@3']);
		list = [{ id: 'x', v: 4 }];
		expect(await ranVersions(4)).toEqual(['x@1', 'x@2', 'x@3', 'x@4']);
		await polls('/switch', 2);
		expect(versions(await n8n.executions(id), 'Poll')).toEqual(['x@1', 'x@2', 'x@3', 'x@4']);
		// Each kind change started a new store (docs/guarantees.md's "first poll"), which ran nothing it found.
		expect(new Set(stores).size).toBe(3);
		await n8n.unpublish(id);
	});

	test('a renamed Poll Trigger repeats nothing it ran and runs each new item and version once', async () => {
		// Before session 4 (dedupe keys hash the store's random id), the renamed node's new store
		// counted its generations from 0 again: a@2, its first start, got a@1's key and n8n refused it
		// (lost). This case catches that: run on that code (core/ and nodes/ of 6f779e0), a@2 never runs.
		// n8n keys static data by node name: the renamed node starts a new store, which with First
		// Poll Starts "nothing" starts nothing it finds (the default, everything, would start a and b).
		const definition = versionedPollWorkflow('poll rename', '/rename');
		let list: Array<{ id: string; v: number }> = [];
		source.on('GET', '/rename', () => ({ body: list }));
		const id = await n8n.importWorkflow(definition);
		await n8n.publish(id);
		const before = await firstPollStored(id, 'Poll', 'changed');
		const ran = async (count: number) => {
			const executions = await afterSuccesses(id, count);
			return [...versions(executions, 'Poll'), ...versions(executions, 'Poll renamed')].sort();
		};
		list = [{ id: 'a', v: 1 }];
		expect(await ran(1)).toEqual(['a@1']);
		list = [
			{ id: 'a', v: 1 },
			{ id: 'b', v: 1 },
		];
		expect(await ran(2)).toEqual(['a@1', 'b@1']);

		await n8n.unpublish(id);
		const renamed = workflow(
			definition.name,
			[{ ...(definition.nodes[0] as NodeJson), name: 'Poll renamed' }, marker('Done')],
			[['Poll renamed', 'Done']],
		);
		await update(id, renamed);
		await n8n.publish(id);
		const after = await firstPollStored(id, 'Poll renamed', 'changed');
		await polls('/rename', 1);
		expect(await ran(2)).toEqual(['a@1', 'b@1']);

		list = [
			{ id: 'a', v: 2 },
			{ id: 'b', v: 1 },
			{ id: 'c', v: 1 },
		];
		expect(await ran(4)).toEqual(['a@1', 'a@2', 'b@1', 'c@1']);
		await polls('/rename', 2);
		expect(await ran(4)).toEqual(['a@1', 'a@2', 'b@1', 'c@1']);
		expect((await n8n.executions(id)).length).toBe(4);
		// The renamed node's state is a new store: n8n keys static data by node name.
		expect(after).not.toBe(before);
		await n8n.unpublish(id);
	});

	test('under a concurrency limit, a re-publish while runs are queued runs every item exactly once', async () => {
		// n8n 2.41.1 takes an execution still queued by the concurrency limit (status "new") for a
		// tombstone: an emit under its deduplication key deletes that row and creates a new run
		// (execution-persistence.js reclaimTombstone), while the queued run stays in the concurrency
		// queue and executes when released, unsaved. Before the fix, the re-published trigger re-emitted
		// its whole outbox, so every queued item ran twice (seen: ten items, eighteen runs, only ten
		// saved: this case's first run, before nodes/shared/emitRuns.ts kept runs in flight across
		// activations). Each run tells the fake source it ran, so unsaved runs count too.
		const items = Array.from({ length: 10 }, (_, i) => `q-${String(i + 1).padStart(2, '0')}`);
		source.on('GET', '/backlog', () => ({ body: items.map((id) => ({ id })) }));
		source.on('GET', '/backlog-ran', () => ({ body: { ok: true } }));
		const ran = () =>
			source
				.requests('/backlog-ran')
				.map((request) => request.query.id)
				.sort();
		const id = await n8n.importWorkflow(
			workflow(
				'poll backlog',
				[
					pollNode('Poll', '/backlog'),
					node(
						'Slow',
						'n8n-nodes-base.wait',
						{ amount: 6, unit: 'seconds' },
						{ typeVersion: 1.1, webhookId: randomUUID() },
					),
					node(
						'Tell',
						'n8n-nodes-base.httpRequest',
						{ url: `=${source.url('/backlog-ran')}?id={{ $json.id }}`, options: {} },
						{ typeVersion: 4.2 },
					),
				],
				[
					['Poll', 'Slow'],
					['Slow', 'Tell'],
				],
			),
		);
		await n8n.publish(id);
		// N8N_CONCURRENCY_PRODUCTION_LIMIT=2 (this suite's n8n): two runs going, the rest queued.
		const queued = await waitFor('runs queued by n8n', async () => {
			const waiting = await n8n.executions(id, { status: 'new' });
			return waiting.length >= 2 ? waiting : undefined;
		});
		await n8n.unpublish(id);
		await n8n.publish(id);
		const stillQueued = await n8n.executions(id, { status: 'new' });
		await n8n.waitForExecutions(
			id,
			(all) => all.filter((e) => e.status === 'success').length >= items.length,
			'every item to run',
			180_000,
		);
		// Queued runs are released in order: a run queued before the re-publish would have run by now.
		await polls('/backlog', 2);
		expect(ran()).toEqual(items);
		const all = await n8n.executions(id);
		expect(ids(all)).toEqual(items);
		expect(all.every((e) => e.status === 'success')).toBe(true);
		// The re-publish met queued runs: runs were still queued once it was done.
		expect(queued.length).toBeGreaterThanOrEqual(2);
		expect(stillQueued.length).toBeGreaterThan(0);
		await n8n.unpublish(id);
	}, 300_000);
	test('Allow Parallel in a workflow that saves no successful executions: a window that ended while another ran does not run again after a crash', async () => {
		// Windows at :00 and :10 of each minute (10 s apart at least, the node's floor). The :00 window
		// (A) runs 12 s, the :10 one (B) 40 s: A ends while B runs, and no window starts before B has
		// ended. So A's end is stored only if the trigger writes a settlement while a run is in flight.
		// n8n hard-deletes A's row (every 6 s here), then n8n is killed while B runs. Before the fix (ends
		// written only once no run was in flight), the restarted trigger emitted A again and, its
		// deduplication key gone with its row, n8n ran it again.
		const TRIGGER = 'Schedule';
		const tell = (name: string, path: string) =>
			node(
				name,
				'n8n-nodes-base.httpRequest',
				{ url: `=${source.url(path)}?key={{ $('${TRIGGER}').item.json.runKey }}`, options: {} },
				{ typeVersion: 4.2 },
			);
		source.on('GET', '/parallel-start', () => ({ body: { ok: true } }));
		source.on('GET', '/parallel-end', () => ({ body: { ok: true } }));
		const definition = workflow(
			'schedule parallel no-save',
			[
				node(TRIGGER, `${PACKAGE}.durableScheduleTrigger`, {
					scheduleType: 'cron',
					cron: '0,10 * * * * *',
					timezone: 'UTC',
					overlap: 'allow-parallel',
					maxParallel: 2,
				}),
				tell('Started', '/parallel-start'),
				node(
					'Slow',
					'n8n-nodes-base.wait',
					{
						amount: `={{ new Date($('${TRIGGER}').item.json.declaredAt).getUTCSeconds() === 0 ? 12 : 40 }}`,
						unit: 'seconds',
					},
					{ typeVersion: 1.1, webhookId: randomUUID() },
				),
				tell('Ended', '/parallel-end'),
			],
			[
				[TRIGGER, 'Started'],
				['Started', 'Slow'],
				['Slow', 'Ended'],
			],
		);
		const id = await n8n.importWorkflow({
			...definition,
			settings: { ...definition.settings, saveDataSuccessExecution: 'none' },
		});
		const keysAt = (path: string) => source.requests(path).map((r) => String(r.query.key));
		const declaredOf = (key: string) => Date.parse(key.slice(key.lastIndexOf('@') + 1));
		/** The key of the window 10 s after `key`'s. */
		const next = (key: string) =>
			`${key.slice(0, key.lastIndexOf('@'))}@${new Date(declaredOf(key) + 10_000).toISOString()}`;
		await n8n.publish(id);
		const a = await waitFor(
			'a short window to end while the next one runs',
			async () =>
				keysAt('/parallel-end').find(
					(key) =>
						new Date(declaredOf(key)).getUTCSeconds() === 0 &&
						keysAt('/parallel-start').includes(next(key)) &&
						!keysAt('/parallel-end').includes(next(key)),
				),
			{ timeoutMs: 120_000, intervalMs: 100 },
		);
		const b = next(a);
		const from = n8n.log().length;
		await waitFor('n8n to hard-delete the ended run', async () =>
			logged('Hard-deleted executions', from).length > 0 ? true : undefined,
		);
		expect(keysAt('/parallel-end')).not.toContain(b);
		await n8n.kill();
		await n8n.start();
		// Outbox runs are emitted again at activation, before any window is decided: a window started
		// after the restart comes after them.
		await waitFor(
			'a window started after the restart',
			async () =>
				keysAt('/parallel-start').some((key) => declaredOf(key) > declaredOf(b)) ? true : undefined,
			{ timeoutMs: 120_000, intervalMs: 200 },
		);
		await n8n.unpublish(id);
		const starts = keysAt('/parallel-start');
		expect(starts.filter((key) => key === a)).toEqual([a]);
		expect(starts).toEqual([...new Set(starts)]);
	}, 300_000);

	test('a fresh trigger (First Poll Starts: Nothing) whose first poll failed keeps the baseline a later poll took, through a crash', async () => {
		let answer: { status?: number; body: unknown } = { status: 503, body: { error: 'down' } };
		source.on('GET', '/late-baseline', () => answer);
		const id = await n8n.importWorkflow(
			workflow(
				'poll late baseline',
				[
					pollNode('Poll', '/late-baseline', { options: { firstPoll: 'none', backoffMaxSec: 5 } }),
					marker('Done'),
				],
				[['Poll', 'Done']],
			),
		);
		await n8n.publish(id);
		await polls('/late-baseline', 1);
		// The source answers from the next poll on: that poll only remembers what is there.
		answer = { body: [{ id: 'lb-a' }, { id: 'lb-b' }] };
		await waitFor(
			'the baseline to be saved by n8n',
			async () => {
				const state = pollStateOf((await n8n.getWorkflow(id)).staticData);
				return state?.dedupe?.fresh === false ? true : undefined;
			},
			{ timeoutMs: 60_000, intervalMs: 500 },
		);
		await n8n.kill();
		answer = { body: [{ id: 'lb-a' }, { id: 'lb-b' }, { id: 'lb-c' }] };
		await n8n.start();
		await n8n.login();
		await n8n.waitForExecutions(
			id,
			(all) => ids(all).includes('lb-c'),
			'the item that arrived while n8n was down to run',
		);
		await polls('/late-baseline', 2);
		expect(ids(await n8n.executions(id))).toEqual(['lb-c']);
		await n8n.unpublish(id);
	});
});

function pollStateOf(staticData: unknown): { dedupe?: { fresh?: boolean } } | undefined {
	const data = (typeof staticData === 'string' ? JSON.parse(staticData) : staticData) as
		| Record<string, { pollTrigger?: { dedupe?: { fresh?: boolean } } }>
		| null
		| undefined;
	return data?.['node:Poll']?.pollTrigger;
}
