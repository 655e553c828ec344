import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type BrowserContext, chromium, type Locator, type Page, selectors } from 'playwright-core';

import { signPayload, waitIdOf } from '../../core/roundtrip/signature';
import { FakeSystem } from '../harness/fakeSystem';
import { type Execution, isFinal, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { sharedN8n } from '../harness/shared';
import { waitFor } from '../harness/net';
import { artifactsDir, isN8n1, repoRoot } from '../harness/paths';
import { marker, node, PACKAGE, workflow } from './workflowBuilder';

/*
 * The editor experience in a real n8n, driven through Debian's Chromium with playwright-core: the
 * nodes in the node panel (name, icon, description), the Poll Trigger filled in through its
 * parameter inputs, and what "Execute step" shows for each node. The screenshots it saves to
 * test-artifacts/screenshots are the docs' (copied to docs/screenshots).
 *
 * Selectors are the editor's own data-test-id attributes. Every wait is Playwright auto-waiting on a
 * locator or the harness's API polling; nothing sleeps.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SECRET = 'editor-e2e-secret';
const screenshotsDir = join(artifactsDir, 'screenshots');
const docsScreenshotsDir = join(repoRoot, 'docs', 'screenshots');
/** A screenshot without toasts and hover tooltips, which only cover what it is meant to show. */
const SCREENSHOT_STYLE =
	'.el-notification, [role="tooltip"], [data-test-id="tooltip-content"] { display: none !important; }';

type Row = Record<string, string>;

const started = Date.now();
/** EDITOR_E2E_TRACE=1 prints where the time goes (the run is meant to stay under four minutes). */
function trace(step: string): void {
	if (process.env.EDITOR_E2E_TRACE)
		process.stderr.write(`[editor e2e +${((Date.now() - started) / 1000).toFixed(1)}s] ${step}\n`);
}

type Description = { displayName: string; description: string };

/** The node descriptions as the packed build n8n loads them. */
function description(path: string, className: string): Description {
	const module = require(join(repoRoot, 'dist', 'nodes', path)) as Record<
		string,
		new () => { description: Description }
	>;
	return new module[className]().description;
}

describe('the nodes in the n8n editor (Chromium)', () => {
	let n8n: N8nInstance;
	let source: FakeSystem;
	let context: BrowserContext;
	let page: Page;
	let userDataDir: string;
	let callbackCredential: { id: string; name: string };
	let scheduleWorkflowId: string;
	const published: string[] = [];

	let tickets = [
		{ number: 'INC-101', subject: 'Printer on fire' },
		{ number: 'INC-102', subject: 'VPN drops every hour' },
		{ number: 'INC-103', subject: 'Refund for order 4711' },
	];

	beforeAll(async () => {
		mkdirSync(screenshotsDir, { recursive: true });
		source = await FakeSystem.start();
		source.on('GET', '/tickets', () => ({ body: { data: { tickets } } }));
		source.on('POST', '/jobs', { status: 202, body: { accepted: true, jobId: 'job-42' } });
		n8n = await sharedN8n('editor');
		trace('n8n started');
		callbackCredential = {
			id: await n8n.createCredential('Partner signature', 'roundTripCallbackApi', {
				scheme: 'hmac',
				secret: SECRET,
				signatureHeader: 'x-signature',
				toleranceSec: 300,
			}),
			name: 'Partner signature',
		};

		// Published up front, so its windows fire (and leave history) while the Poll Trigger test runs.
		scheduleWorkflowId = await n8n.importWorkflow(
			workflow(
				'Every 10 seconds',
				[
					node('Durable Schedule Trigger', `${PACKAGE}.durableScheduleTrigger`, {
						scheduleType: 'interval',
						interval: 10,
						intervalUnit: 'seconds',
						catchUp: 'coalesce',
						overlap: 'skip-if-running',
					}),
					marker('Report'),
				],
				[['Durable Schedule Trigger', 'Report']],
			),
		);
		await n8n.publish(scheduleWorkflowId);
		published.push(scheduleWorkflowId);

		selectors.setTestIdAttribute('data-test-id');
		userDataDir = mkdtempSync(join(tmpdir(), 'durable-triggers-chromium-'));
		context = await chromium.launchPersistentContext(userDataDir, {
			executablePath: CHROMIUM,
			headless: true,
			viewport: { width: 1280, height: 800 },
			args: [
				'--headless',
				'--no-sandbox',
				'--disable-gpu',
				'--disable-quic',
				'--no-first-run',
				'--disable-background-networking',
				'--disable-component-update',
				'--disable-sync',
			],
		});
		context.setDefaultTimeout(30_000);
		page = context.pages()[0] ?? (await context.newPage());
		// "Leave without saving?" and similar browser dialogs: accept, so navigation goes on.
		page.on('dialog', (dialog) => void dialog.accept());
		// Modals n8n may show on a first visit: closed whenever one is in the way of an action.
		await page.addLocatorHandler(
			page
				.locator('.el-overlay .el-dialog')
				.filter({ hasText: /personali[sz]|what's new|customi[sz]e n8n|welcome/i }),
			async (dialog) => {
				await dialog.locator('.el-dialog__headerbtn').click();
			},
		);
		await signIn();
		trace('signed in');
	});

	afterAll(async () => {
		for (const id of published) await n8n?.unpublish(id).catch(() => undefined);
		await context?.close();
		if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
		await n8n?.stop();
		await source?.close();
	});

	// ---- helpers ----

	async function signIn(): Promise<void> {
		await page.goto(`${n8n.baseUrl}/signin`);
		await page.locator('input[name="emailOrLdapLoginId"]').fill(N8nInstance.owner.email);
		await page.locator('input[type="password"]').fill(N8nInstance.owner.password);
		await page.getByTestId('form-submit-button').click();
		await page.waitForURL((url) => !url.pathname.startsWith('/signin'));
	}

	/** Runs a test body; on failure leaves a screenshot of the page next to the others. */
	async function withFailureShot(name: string, body: () => Promise<void>): Promise<void> {
		try {
			await body();
		} catch (error) {
			await page
				.screenshot({ path: join(screenshotsDir, `FAILED-${name}.png`) })
				.catch(() => undefined);
			throw error;
		}
	}

	/**
	 * Saves a screenshot to test-artifacts/screenshots and, with UPDATE_README_SCREENSHOTS=1, as a docs
	 * image to docs/screenshots (so an ordinary test run leaves the working tree as it was).
	 */
	async function shot(name: string, target: Page | Locator = page): Promise<void> {
		await page.mouse.move(2, 790); // away from anything with a hover tooltip
		const path = join(screenshotsDir, `${name}.png`);
		await target.screenshot({ path, animations: 'disabled', style: SCREENSHOT_STYLE });
		trace(`screenshot ${name}`);
		if (process.env.UPDATE_README_SCREENSHOTS !== '1') return;
		mkdirSync(docsScreenshotsDir, { recursive: true });
		copyFileSync(path, join(docsScreenshotsDir, `${name}.png`));
	}

	async function openWorkflow(id: string): Promise<void> {
		await page.goto(`${n8n.baseUrl}/workflow/${id}`);
		if (new URL(page.url()).pathname.startsWith('/signin')) {
			await signIn();
			await page.goto(`${n8n.baseUrl}/workflow/${id}`);
		}
		await page.getByTestId('canvas-node').first().waitFor();
		trace(`opened workflow ${id}`);
	}

	function canvasNode(name: string): Locator {
		return page.locator(`[data-test-id="canvas-node"][data-node-name="${name}"]`);
	}

	async function openNode(name: string): Promise<void> {
		await canvasNode(name).dblclick();
		await page.getByTestId('ndv').waitFor();
	}

	async function closeNode(): Promise<void> {
		// n8n 2.x: a close button; n8n 1.x: "Back to canvas".
		await page
			.getByTestId('ndv-close-button')
			.or(page.getByTestId('back-to-canvas'))
			.first()
			.click();
		await page.getByTestId('ndv').waitFor({ state: 'hidden' });
	}

	/** An item of the node panel's search results, by its exact display name. */
	function creatorItem(displayName: string): Locator {
		return page.getByTestId('node-creator-node-item').filter({
			has: page.getByTestId('node-creator-item-name').getByText(displayName, { exact: true }),
		});
	}

	/** Checks a search result shows the node's name, description and its own icon, loaded. */
	async function expectInNodePanel(
		displayName: string,
		iconFile: string,
		expectedDescription: string,
	): Promise<Locator> {
		const item = creatorItem(displayName);
		await item.waitFor();
		expect(await item.getByTestId('node-creator-item-description').innerText()).toBe(
			expectedDescription,
		);
		const icon = item.locator('img').first();
		expect(await icon.getAttribute('src')).toContain(`/icons/${PACKAGE}/dist/nodes/${iconFile}`);
		const width = await icon.evaluate(async (img) => {
			const image = img as unknown as {
				complete: boolean;
				naturalWidth: number;
				addEventListener(
					type: string,
					listener: (value: unknown) => void,
					options: { once: boolean },
				): void;
			};
			if (!image.complete)
				await new Promise((resolve) => image.addEventListener('load', resolve, { once: true }));
			return image.naturalWidth;
		});
		expect(width).toBeGreaterThan(0);
		return item;
	}

	/** Picks an option of an options parameter through its dropdown. */
	async function selectOption(parameter: string, option: string | RegExp): Promise<void> {
		await page.getByTestId(`parameter-input-${parameter}`).click();
		await page
			.getByTestId('parameter-input-item')
			.filter({ hasText: option, visible: true })
			.click();
	}

	/** The output panel's table: one record per row, keyed by column header. */
	async function outputRows(count: number): Promise<Row[]> {
		const output = page.getByTestId('output-panel');
		await output.getByTestId('radio-button-table').click(); // the editor remembers the last display mode
		const table = output.getByTestId('ndv-data-container').locator('table');
		await table
			.locator('tbody tr')
			.nth(count - 1)
			.waitFor();
		const headers = await table.locator('thead th').allInnerTexts();
		const rows = await table
			.locator('tbody tr')
			.evaluateAll((trs) =>
				trs.map((tr) =>
					[...tr.querySelectorAll(':scope > td')].map((td) =>
						(td as unknown as { innerText: string }).innerText.trim(),
					),
				),
			);
		expect(rows).toHaveLength(count);
		return rows.map((cells) =>
			Object.fromEntries(
				headers.map((h, i) => [h.trim(), cells[i] ?? ''] as const).filter(([h]) => h !== ''),
			),
		);
	}

	async function executeStep(): Promise<void> {
		trace('execute step');
		await page.getByTestId('node-execute-button').click();
	}

	// ---- tests ----

	test('Poll Trigger: found in the node panel, filled in through the editor, "Execute step" lists each item with its key and verdict', async () => {
		await withFailureShot('poll-trigger', async () => {
			const poll = description('PollTrigger/PollTrigger.node.js', 'PollTrigger');
			const schedule = description(
				'DurableScheduleTrigger/DurableScheduleTrigger.node.js',
				'DurableScheduleTrigger',
			);
			await page.goto(`${n8n.baseUrl}/workflow/new`);
			await page.getByTestId('canvas-add-button').click();
			const search = page.getByTestId('node-creator-search-bar');

			await search.fill('Durable Schedule Trigger');
			await expectInNodePanel(
				schedule.displayName,
				'DurableScheduleTrigger/durableScheduleTrigger.svg',
				schedule.description,
			);

			await search.fill('Poll Trigger');
			const item = await expectInNodePanel(
				poll.displayName,
				'PollTrigger/pollTrigger.svg',
				poll.description,
			);
			await shot('node-panel-poll-trigger');

			// A community node opens its details first; "Add to workflow" puts it on the canvas and opens it.
			await item.click();
			await page.getByRole('button', { name: 'Add to workflow' }).click();
			await page.getByTestId('ndv').waitFor();
			expect(await page.getByTestId('node-title-container').innerText()).toContain('Poll Trigger');

			await selectOption('op', 'http.request');
			const withEditor = page.getByTestId('parameter-input-with').locator('.cm-content');
			await withEditor.click();
			await page.keyboard.press('ControlOrMeta+a');
			await page.keyboard.press('Delete');
			// insertText, not typing: the JSON editor would auto-close every bracket and quote typed.
			await page.keyboard.insertText(
				JSON.stringify({ method: 'GET', url: source.url('/tickets') }, null, 2),
			);
			await page.getByTestId('parameter-input-items').locator('input').fill('data.tickets');
			await page.getByTestId('parameter-input-id').locator('input').fill('number');
			await selectOption('dedupe', /^Unique/);
			await page.getByTestId('parameter-input-interval').locator('input').fill('5');
			await selectOption('intervalUnit', /^Seconds$/);

			expect(JSON.parse(await withEditor.innerText())).toEqual({
				method: 'GET',
				url: source.url('/tickets'),
			});
			expect(await page.getByTestId('parameter-input-op').locator('input').inputValue()).toBe(
				'http.request',
			);
			expect(await page.getByTestId('parameter-input-dedupe').locator('input').inputValue()).toBe(
				'Unique',
			);
			await shot('poll-trigger-parameters');

			const polls = source.requests('/tickets').length;
			await executeStep();
			const rows = await outputRows(3);
			expect(source.requests('/tickets').length).toBe(polls + 1);
			expect(Object.keys(rows[0])).toEqual(['key', 'verdict', 'wouldStart', 'item']);
			expect(rows.map(({ key, verdict, wouldStart }) => ({ key, verdict, wouldStart }))).toEqual(
				tickets.map((t) => ({ key: t.number, verdict: 'new', wouldStart: 'true' })),
			);
			expect(rows[0].item).toContain('Printer on fire');
			await shot('poll-trigger-output');
			await closeNode();
		});
	});

	test('Poll Trigger: after it has run, "Execute step" shows which items it has seen, and when', async () => {
		await withFailureShot('poll-trigger-seen', async () => {
			const workflowId = new URL(page.url()).pathname.split('/')[2];
			// The editor saves on its own; publishing needs the parameters filled in above stored.
			await waitFor('the editor to save the Poll Trigger', async () => {
				const stored = (await n8n.getWorkflow(workflowId)).nodes as Array<{
					type: string;
					parameters: Record<string, unknown>;
				}>;
				const trigger = stored.find((n) => n.type === `${PACKAGE}.pollTrigger`);
				return trigger?.parameters.id === 'number' && trigger.parameters.intervalUnit === 'seconds'
					? true
					: undefined;
			});
			await n8n.publish(workflowId);
			published.push(workflowId);
			// Runs the published trigger started (the editor's "Execute step" runs are executions too).
			const triggerRuns = async (count: number) =>
				(
					await n8n.waitForExecutions(
						workflowId,
						(all) => all.filter((e) => e.mode === 'trigger' && isFinal(e)).length >= count,
						`${count} trigger runs`,
					)
				).filter((e) => e.mode === 'trigger');
			const firstRuns = await triggerRuns(3);
			expect(firstRuns.map((run) => nodeOutput(run, 'Poll Trigger')[0]?.number).sort()).toEqual([
				'INC-101',
				'INC-102',
				'INC-103',
			]);
			await n8n.unpublish(workflowId);

			tickets = [...tickets, { number: 'INC-104', subject: 'New laptop for Dana' }];
			await openWorkflow(workflowId);
			await openNode('Poll Trigger');
			await executeStep();
			const rows = await outputRows(4);
			if (isN8n1) {
				// n8n 1.123's editor runs "Execute step" without the workflow's saved static data, so the
				// node sees no history: every item reads as new (docs/n8n-1.123.md).
				expect(Object.keys(rows[0])).toEqual(['key', 'verdict', 'wouldStart', 'item']);
				expect(rows.map(({ key, verdict }) => [key, verdict])).toEqual(
					['INC-101', 'INC-102', 'INC-103', 'INC-104'].map((key) => [key, 'new']),
				);
				await closeNode();
				return;
			}
			expect(Object.keys(rows[0])).toEqual(['key', 'verdict', 'wouldStart', 'seenAt', 'item']);
			expect(rows.map(({ key, verdict, wouldStart }) => ({ key, verdict, wouldStart }))).toEqual([
				{ key: 'INC-101', verdict: 'seen', wouldStart: 'false' },
				{ key: 'INC-102', verdict: 'seen', wouldStart: 'false' },
				{ key: 'INC-103', verdict: 'seen', wouldStart: 'false' },
				{ key: 'INC-104', verdict: 'new', wouldStart: 'true' },
			]);
			const startedAt = new Map(
				firstRuns.map((run) => [
					nodeOutput(run, 'Poll Trigger')[0]?.number,
					Date.parse(run.startedAt),
				]),
			);
			for (const row of rows.slice(0, 3)) {
				// seenAt: when the trigger started the item's run (just before n8n recorded the run's start).
				expect(Math.abs(Date.parse(row.seenAt) - startedAt.get(row.key)!)).toBeLessThan(5_000);
			}
			expect(rows[3].seenAt ?? '').not.toMatch(/\d{4}-/);
			await shot('poll-trigger-output-seen');
			await closeNode();
		});
	});

	test('Durable Schedule Trigger: "Execute step" shows the next fire times and the recent history', async () => {
		await withFailureShot('schedule', async () => {
			const fired = await n8n.waitForFinishedExecutions(scheduleWorkflowId, 2);
			await openWorkflow(scheduleWorkflowId);
			await openNode('Durable Schedule Trigger');
			expect(await page.getByTestId('node-title-container').innerText()).toContain(
				'Durable Schedule Trigger',
			);
			const before = Date.now();
			await executeStep();
			const output = page.getByTestId('output-panel');
			await output.getByTestId('radio-button-schema').click();
			const data = output.getByTestId('ndv-data-container');
			const value = (path: string) =>
				data
					.getByTestId('run-data-schema-item')
					.filter({ has: page.locator(`[data-path="${path}"]`) })
					.getByTestId('run-data-schema-item-value')
					.innerText();
			await data.locator('[data-path=".nextFires[4].fireAt"]').waitFor();
			const fireTimes: number[] = [];
			for (let i = 0; i < 5; i++)
				fireTimes.push(Date.parse(await value(`.nextFires[${i}].fireAt`)));
			fireTimes.forEach((time, i) => {
				expect(time % 10_000).toBe(0); // on the 10-second boundaries
				if (i > 0) expect(time - fireTimes[i - 1]).toBe(10_000);
			});
			expect(fireTimes[0]).toBeGreaterThan(before - 10_000);
			await shot('schedule-next-fires');

			// Collapsing the upcoming fires brings the summary and the history into view.
			await data
				.getByTestId('run-data-schema-item')
				.filter({ has: page.locator('[data-path=".nextFires"]') })
				.locator('.toggle')
				.click();
			await data
				.locator('[data-path=".summary"]')
				.evaluate((pill) => pill.scrollIntoView({ block: 'start' }));
			if (isN8n1) {
				// n8n 1.123's editor runs "Execute step" without the saved static data: next fires, no history.
				expect(await value('.summary.windows.fired')).toBe('0');
				const manual = await waitFor('the manual execution', async () =>
					(await n8n.executions(scheduleWorkflowId)).find(
						(e) => e.mode === 'manual' && e.status === 'success',
					),
				);
				const [preview] = nodeOutput(manual, 'Durable Schedule Trigger') as Array<{
					nextFires: Array<{ fireAt: string }>;
					history: unknown[];
				}>;
				expect(preview.nextFires.map((f) => Date.parse(f.fireAt))).toEqual(fireTimes);
				expect(preview.history).toEqual([]);
				await closeNode();
				return;
			}
			await data.locator('[data-path=".history[0].outcome"]').waitFor();
			expect(Number(await value('.summary.windows.fired'))).toBeGreaterThanOrEqual(fired.length);
			expect(await value('.history[0].outcome')).toBe('fired');
			expect(Date.parse(await value('.history[0].declaredAt')) % 10_000).toBe(0);
			expect(Number(await value('.history[0].latenessMs'))).toBeGreaterThanOrEqual(0);
			await shot('schedule-history');

			// The same preview, as data: what the editor rendered is what the node produced.
			const manual = await waitFor('the manual execution', async () =>
				(await n8n.executions(scheduleWorkflowId)).find(
					(e) => e.mode === 'manual' && e.status === 'success',
				),
			);
			const [preview] = nodeOutput(manual, 'Durable Schedule Trigger') as Array<{
				preview: boolean;
				nextFires: Array<{ fireAt: string }>;
				history: Array<{ outcome: string }>;
			}>;
			expect(preview.preview).toBe(true);
			expect(preview.nextFires.map((f) => Date.parse(f.fireAt))).toEqual(fireTimes);
			expect(preview.history.length).toBeGreaterThanOrEqual(fired.length);
			await closeNode();
		});
	});

	test('Round-Trip Wait: "Execute step" waits for the callback; a correctly signed callback resumes it and the editor shows what arrived', async () => {
		await withFailureShot('round-trip', async () => {
			const rtw = description('RoundTripWait/RoundTripWait.node.js', 'RoundTripWait');
			const credentials = { roundTripCallbackApi: callbackCredential };
			const workflowId = await n8n.importWorkflow(
				workflow(
					'Round trip',
					[
						node('Start', 'n8n-nodes-base.manualTrigger', {}),
						node(
							'Round-Trip Wait',
							`${PACKAGE}.roundTripWait`,
							{
								mode: 'sendAndWait',
								method: 'POST',
								url: source.url('/jobs'),
								body: '{ "order": 4711 }',
								timeoutAmount: 1,
								timeoutUnit: 'hours',
							},
							{ credentials },
						),
						marker('Approved'),
						marker('Late'),
					],
					[
						['Start', 'Round-Trip Wait'],
						['Round-Trip Wait', 'Approved', 0],
						['Round-Trip Wait', 'Late', 1],
					],
				),
			);
			await openWorkflow(workflowId);

			await page.getByTestId('node-creator-plus-button').click();
			await page.getByTestId('node-creator-search-bar').fill('Round-Trip Wait');
			await expectInNodePanel(rtw.displayName, 'RoundTripWait/roundTripWait.svg', rtw.description);
			await page.keyboard.press('Escape');
			await page.getByTestId('node-creator-search-bar').waitFor({ state: 'hidden' });

			await openNode('Round-Trip Wait');
			await executeStep();
			const request = await source.nextRequest((r) => r.path === '/jobs');
			const { correlationId, callbackUrl } = request.json as {
				correlationId: string;
				callbackUrl: string;
			};
			const output = page.getByTestId('output-panel');
			// n8n's editor shows a waiting node's output as "Waiting for input" (not the item it produced).
			await output.getByText('Waiting for input').waitFor();
			await output.getByText('Callback Branch (1 item)').waitFor();
			await shot('round-trip-waiting');

			// The waiting item, as stored with the execution: the contract the partner gets.
			const waiting = await waitFor('the waiting manual execution', async () =>
				(await n8n.executions(workflowId)).find((e: Execution) => e.status === 'waiting'),
			);
			const [contract] = nodeOutput(waiting, 'Round-Trip Wait');
			expect(contract).toMatchObject({
				waiting: true,
				correlationId,
				callbackUrl,
				callbackMethod: 'POST',
				correlationIdLocation: 'body.correlationId',
			});
			expect(Date.parse(String(contract.deadline)) - Date.now()).toBeGreaterThan(55 * 60_000);

			const raw = (body: unknown) => JSON.stringify(body);
			const now = () => Math.floor(Date.now() / 1000);
			const forged = await source.send(callbackUrl, {
				headers: {
					'x-signature': signPayload(
						'not-the-secret',
						raw({ correlationId }),
						now(),
						waitIdOf(callbackUrl),
					),
				},
				body: raw({ correlationId }),
			});
			expect(forged.status).toBe(403);
			expect(await output.getByText('Waiting for input').isVisible()).toBe(true);

			const body = raw({ correlationId, status: 'approved' });
			const accepted = await source.send(callbackUrl, {
				headers: { 'x-signature': signPayload(SECRET, body, now(), waitIdOf(callbackUrl)) },
				body,
			});
			expect(accepted.status).toBe(200);
			expect(accepted.json).toEqual({ received: true });
			const [receipt] = await outputRows(1);
			expect(receipt.correlationId).toBe(correlationId);
			expect(receipt.body).toContain('approved');
			// The schema view fits the whole receipt (body, headers, query) into the screenshot.
			await output.getByTestId('radio-button-schema').click();
			await output.locator('[data-path=".body.status"]').waitFor();
			await shot('round-trip-callback');
			await closeNode();
		});
	});

	test("Connector: Authentication offers n8n's generic credential types, a chosen type brings n8n's credential picker once, the Op field stays", async () => {
		await withFailureShot('connector-authentication', async () => {
			const workflowId = await n8n.importWorkflow(
				workflow(
					'Connector authentication',
					[
						node('Start', 'n8n-nodes-base.manualTrigger', {}),
						node('Call API', `${PACKAGE}.connector`, { op: 'http.request' }, { typeVersion: 1.1 }),
					],
					[['Start', 'Call API']],
				),
			);
			await openWorkflow(workflowId);
			await openNode('Call API');
			expect(await page.getByTestId('parameter-input-op').locator('input').inputValue()).toBe(
				'http.request',
			);
			await page.getByTestId('parameter-input-baseUrl').waitFor();

			await page.getByTestId('parameter-input-authentication').click();
			// The dropdown opens asynchronously: read its options once the last one is shown.
			const options = page.getByTestId('parameter-input-item').filter({ visible: true });
			await options.filter({ hasText: 'OAuth2 API' }).waitFor();
			const offered = await options.allInnerTexts();
			expect(offered.map((text) => text.split('\n')[0].trim())).toEqual([
				'None',
				'Basic Auth',
				'Bearer Auth',
				'Custom Auth',
				'Header Auth',
				'Query Auth',
				'OAuth2 API',
			]);
			await page
				.getByTestId('parameter-input-item')
				.filter({ hasText: 'OAuth2 API', visible: true })
				.click();
			// n8n's own picker for an OAuth2 API credential, once.
			const ndv = page.getByTestId('ndv');
			await ndv.getByText('Credential for OAuth2 API', { exact: true }).waitFor();
			expect(await ndv.getByText(/^Credential for /).count()).toBe(1);
			expect(await page.getByTestId('parameter-input-op').isVisible()).toBe(true);
			await shot('connector-authentication-oauth2');

			// IMAP ops take n8n's IMAP credential: the HTTP fields go away, the IMAP picker comes.
			await selectOption('op', 'imap.listUnseen');
			await page.getByTestId('parameter-input-authentication').waitFor({ state: 'hidden' });
			expect(await page.getByTestId('parameter-input-baseUrl').isVisible()).toBe(false);
			await ndv.getByText('Credential for IMAP', { exact: true }).waitFor();
			await closeNode();
		});
	});

	test('the canvas shows the three nodes with their icons, names and subtitles', async () => {
		await withFailureShot('canvas', async () => {
			const credentials = { roundTripCallbackApi: callbackCredential };
			const id = await n8n.importWorkflow({
				...workflow(
					'Durable triggers',
					[
						node('New tickets', `${PACKAGE}.pollTrigger`, {
							op: 'http.request',
							with: JSON.stringify({ method: 'GET', url: source.url('/tickets') }),
							items: 'data.tickets',
							id: 'number',
							dedupe: 'unique',
						}),
						node('Weekday mornings', `${PACKAGE}.durableScheduleTrigger`, {
							scheduleType: 'cron',
							cron: '30 9 * * MON-FRI',
							timezone: 'Europe/Berlin',
							catchUp: 'run-all',
							overlap: 'queue',
						}),
						node(
							'Ask partner',
							`${PACKAGE}.roundTripWait`,
							{ mode: 'sendAndWait', method: 'POST', url: source.url('/jobs') },
							{ credentials },
						),
						marker('Approved'),
						marker('Late'),
					],
					[
						['New tickets', 'Ask partner'],
						['Weekday mornings', 'Ask partner'],
						['Ask partner', 'Approved', 0],
						['Ask partner', 'Late', 1],
					],
				),
			});
			// Laid out by hand: the builder's zig-zag puts both triggers on one line.
			const stored = await n8n.getWorkflow(id);
			const positions: Record<string, [number, number]> = {
				'New tickets': [0, 0],
				'Weekday mornings': [0, 220],
				'Ask partner': [320, 110],
				Approved: [640, 0],
				Late: [640, 220],
			};
			await n8n.api('PUT', `/workflows/${id}`, {
				name: 'Durable triggers',
				nodes: (stored.nodes as Array<{ name: string }>).map((n) => ({
					...n,
					position: positions[n.name],
				})),
				connections: (stored as unknown as { connections: unknown }).connections,
				settings: { executionOrder: 'v1' },
			});
			await openWorkflow(id);
			for (const [name, type] of [
				['New tickets', 'pollTrigger'],
				['Weekday mornings', 'durableScheduleTrigger'],
				['Ask partner', 'roundTripWait'],
			]) {
				const canvas = canvasNode(name);
				await canvas.waitFor();
				expect(await canvas.getAttribute('data-node-type')).toBe(`${PACKAGE}.${type}`);
				expect(await canvas.locator('img').first().getAttribute('src')).toContain(`${type}.svg`);
			}
			expect(await canvasNode('New tickets').innerText()).toContain('http.request · unique');
			expect(await canvasNode('Weekday mornings').innerText()).toContain('30 9 * * MON-FRI');
			expect(await canvasNode('Ask partner').innerText()).toContain('Send, then wait for callback');
			expect(await canvasNode('Ask partner').innerText()).toMatch(/Callback[\s\S]*Timed Out/);
			await page.getByTestId('zoom-to-fit').click();
			await shot('canvas');
		});
	});
});
