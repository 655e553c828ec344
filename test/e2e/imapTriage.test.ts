import { randomUUID } from 'node:crypto';

import { buildMessage, Dovecot, type MailAccount } from '../harness/dovecot';
import { type Execution, isFinal, N8nInstance, nodeOutput } from '../harness/n8nInstance';
import { waitFor } from '../harness/net';
import { marker, node, PACKAGE, workflow } from './workflowBuilder';

type Dedupe = 'none' | 'unique';
type Credential = { id: string; name: string };

/** A Switch rule (filter v2, as Switch 3.2 stores it): the subject contains `text`, any case. */
function subjectContains(text: string, outputKey: string) {
	return {
		conditions: {
			options: { caseSensitive: false, leftValue: '', typeValidation: 'strict', version: 2 },
			conditions: [
				{
					id: randomUUID(),
					leftValue: '={{ $json.subject }}',
					rightValue: text,
					operator: { type: 'string', operation: 'contains' },
				},
			],
			combinator: 'and',
		},
		renameOutput: true,
		outputKey,
	};
}

/**
 * Support triage: one run per unread mail, routed on its subject ("fail" → a node that throws,
 * "urgent" → Urgent, anything else → Normal), and marked seen by the Connector as the last step.
 */
function triageWorkflow(name: string, credential: Credential, dedupe: Dedupe) {
	const credentials = { durableImapApi: credential };
	return workflow(
		name,
		[
			node(
				'New Mail',
				`${PACKAGE}.pollTrigger`,
				{
					op: 'imap.listUnseen',
					with: JSON.stringify({ mailbox: 'INBOX' }),
					items: 'messages',
					id: 'mailbox & ":" & uidValidity & ":" & uid',
					dedupe,
					interval: 5,
					intervalUnit: 'seconds',
				},
				{ credentials },
			),
			node(
				'Route',
				'n8n-nodes-base.switch',
				{
					rules: { values: [subjectContains('fail', 'fail'), subjectContains('urgent', 'urgent')] },
					options: { fallbackOutput: 'extra' },
				},
				{ typeVersion: 3.2 },
			),
			node('Fail', 'n8n-nodes-base.stopAndError', {
				errorType: 'errorMessage',
				errorMessage: '={{ "Could not triage: " + $json.subject }}',
			}),
			marker('Urgent'),
			marker('Normal'),
			node(
				'Mark Seen',
				`${PACKAGE}.connector`,
				{
					op: 'imap.markSeen',
					with: "={{ JSON.stringify({ mailbox: $('New Mail').item.json.mailbox, uid: $('New Mail').item.json.uid, uidValidity: $('New Mail').item.json.uidValidity }) }}",
				},
				{ credentials },
			),
		],
		[
			['New Mail', 'Route'],
			['Route', 'Fail', 0],
			['Route', 'Urgent', 1],
			['Route', 'Normal', 2],
			['Urgent', 'Mark Seen'],
			['Normal', 'Mark Seen'],
		],
	);
}

/** The mail a run was started for: the Poll Trigger's one output item. */
function mailOf(execution: Execution): Record<string, unknown> {
	const [mail] = nodeOutput(execution, 'New Mail');
	return mail;
}

const uidOf = (execution: Execution) => mailOf(execution).uid as number;

/** Poll Trigger + Switch + Stop and Error / Set + Connector inside a real n8n, against a real Dovecot. */
describe('IMAP support triage in a real n8n', () => {
	let n8n: N8nInstance;
	let dovecot: Dovecot;

	beforeAll(async () => {
		[dovecot, n8n] = await Promise.all([Dovecot.start(), N8nInstance.launch('imap-triage')]);
	});

	afterAll(async () => {
		await n8n?.stop();
		await dovecot?.stop();
	});

	/** A Dovecot user of its own (so scenarios do not see each other's mail) and an n8n credential for it. */
	async function mailbox(
		user: string,
		password = `${user}-password`,
	): Promise<{ account: MailAccount; credential: Credential }> {
		const account = dovecot.addUser(user, password);
		const { host, port, secure } = account.connection;
		const name = `IMAP ${user}`;
		const id = await n8n.createCredential(name, 'durableImapApi', {
			host,
			port,
			secure,
			user,
			password,
			allowSelfSigned: false,
		});
		return { account, credential: { id, name } };
	}

	async function deliver(account: MailAccount, subject: string, n: number): Promise<number> {
		return await account.append(
			buildMessage({
				from: `"Customer ${n}" <customer${n}@example.com>`,
				to: 'support@example.com',
				subject,
				text: `Body of ${subject}`,
				messageId: `<${account.connection.user}-${n}@example.com>`,
			}),
		);
	}

	/**
	 * Resolves once `user` has logged in `count` more times. Called when no run is in flight and the
	 * test itself does not log in meanwhile, every login is a poll; the second one began after the first
	 * had emitted whatever it listed, so a run the first poll started exists by then.
	 */
	async function polls(user: string, count: number): Promise<void> {
		const target = dovecot.logins(user) + count;
		await waitFor(
			`${count} more polls by ${user}`,
			async () => (dovecot.logins(user) >= target ? true : undefined),
			{ timeoutMs: 30_000, intervalMs: 200 },
		);
	}

	test('dedupe none: three new mails each start a run carrying their mail, marked seen as its last step (a poll during a run starts it again); once all are seen, the next polls start nothing', async () => {
		const { account, credential } = await mailbox('triage');
		const uids = [
			await deliver(account, 'Printer on fire', 1),
			await deliver(account, 'URGENT: checkout is down', 2),
			await deliver(account, 'Invoice question', 3),
		];
		const id = await n8n.importWorkflow(triageWorkflow('triage none', credential, 'none'));
		await n8n.publish(id);

		// Dedupe none starts what is listed: a poll that comes while a mail's run has not yet marked it
		// seen starts it again (the trade-off docs/connector-ops.md names). On a busy machine runs can
		// outlast the 5 s interval, so a mail may have more than one run; each ends marked seen, and once
		// all are seen and no run is going, polls start nothing.
		await waitFor(
			'the three mails marked seen',
			async () =>
				(await Promise.all(uids.map((uid) => account.flags(uid)))).every((flags) =>
					flags?.includes('\\Seen'),
				)
					? true
					: undefined,
			{ timeoutMs: 120_000, intervalMs: 500 },
		);
		const all = await waitFor(
			'every run of the mails ended',
			async () => {
				if ((await n8n.executions(id, { status: 'running' })).length) return undefined;
				const listed = await n8n.executions(id);
				return listed.length >= 3 && listed.every(isFinal) ? listed : undefined;
			},
			{ timeoutMs: 120_000, intervalMs: 500 },
		);
		expect(all.map((run) => run.status).filter((status) => status !== 'success')).toEqual([]);
		expect([...new Set(all.map(uidOf))].sort((a, b) => a - b)).toEqual(uids);
		// Each mail's first run.
		const runs = uids.map(
			(uid) =>
				all
					.filter((run) => uidOf(run) === uid)
					.sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt))[0],
		);
		expect(runs.map(mailOf)).toEqual([
			expect.objectContaining({
				uid: uids[0],
				subject: 'Printer on fire',
				from: { name: 'Customer 1', address: 'customer1@example.com' },
				text: 'Body of Printer on fire\n',
			}),
			expect.objectContaining({
				uid: uids[1],
				subject: 'URGENT: checkout is down',
				from: { name: 'Customer 2', address: 'customer2@example.com' },
			}),
			expect.objectContaining({
				uid: uids[2],
				subject: 'Invoice question',
				from: { name: 'Customer 3', address: 'customer3@example.com' },
			}),
		]);
		expect(runs.map((run) => nodeOutput(run, 'Urgent').length > 0)).toEqual([false, true, false]);
		for (const run of all) {
			expect(run.data?.resultData.lastNodeExecuted).toBe('Mark Seen');
			expect(nodeOutput(run, 'Mark Seen')).toEqual([
				expect.objectContaining({ mailbox: 'INBOX', marked: [uidOf(run)], missing: [] }),
			]);
		}

		await polls('triage', 2);
		expect(await n8n.executions(id)).toHaveLength(all.length);
		await n8n.unpublish(id);
	});

	test('dedupe none: a run that fails before marking leaves its mail unread, so the next poll starts it again', async () => {
		const { account, credential } = await mailbox('retry-none');
		const ok = await deliver(account, 'Refund request', 1);
		const failing = await deliver(account, 'Please fail this one', 2);
		const id = await n8n.importWorkflow(triageWorkflow('triage none failing', credential, 'none'));
		await n8n.publish(id);

		await n8n.waitForExecutions(
			id,
			(all) => all.filter((e) => e.status === 'error').length >= 2,
			'the failing mail started twice',
		);
		await n8n.unpublish(id);
		const finished = await n8n.waitForExecutions(
			id,
			(all) => all.every(isFinal),
			'every run to end',
		);
		const [okRuns, failedRuns] = [
			finished.filter((e) => uidOf(e) === ok),
			finished.filter((e) => uidOf(e) === failing),
		];
		expect(okRuns.map((run) => run.status)).toEqual(['success']);
		expect(failedRuns.length).toBeGreaterThanOrEqual(2);
		for (const run of failedRuns) {
			expect(run.status).toBe('error');
			expect(run.data?.resultData.error?.message).toBe('Could not triage: Please fail this one');
			expect(run.data?.resultData.runData['Mark Seen']).toBeUndefined();
		}
		expect(await account.flags(ok)).toContain('\\Seen');
		expect(await account.flags(failing)).not.toContain('\\Seen');
	});

	test('dedupe unique: a run that fails before marking is started once only; its mail stays unread and remembered', async () => {
		const { account, credential } = await mailbox('retry-unique');
		const ok = await deliver(account, 'Refund request', 1);
		const failing = await deliver(account, 'Please fail this one', 2);
		const id = await n8n.importWorkflow(
			triageWorkflow('triage unique failing', credential, 'unique'),
		);
		await n8n.publish(id);

		const runs = await n8n.waitForFinishedExecutions(id, 2);
		expect(runs.filter((e) => e.status === 'error').map(uidOf)).toEqual([failing]);
		expect(runs.filter((e) => e.status === 'success').map(uidOf)).toEqual([ok]);
		expect(await account.flags(failing)).not.toContain('\\Seen');

		await polls('retry-unique', 2);
		expect(await n8n.executions(id)).toHaveLength(2);
		expect(await account.flags(failing)).not.toContain('\\Seen');
		await n8n.unpublish(id);
	});

	test('dedupe unique across a restart: mails already started are not started again (the failed one is still unread); a mail added after the restart is', async () => {
		const { account, credential } = await mailbox('restart');
		const ok = await deliver(account, 'Password reset loop', 1);
		const failing = await deliver(account, 'This will fail', 2);
		const id = await n8n.importWorkflow(triageWorkflow('triage restart', credential, 'unique'));
		await n8n.publish(id);
		expect((await n8n.waitForFinishedExecutions(id, 2)).map(uidOf).sort((a, b) => a - b)).toEqual([
			ok,
			failing,
		]);

		await n8n.restart();
		// The failed mail is still listed as unread on every poll. What keeps it from starting again is the
		// trigger's remembered keys, saved in static data with each emit, and, for a poll's last start (whose key
		// is saved with the next emit), the n8n execution dedup key the trigger passed with it.
		await polls('restart', 2);
		expect(await n8n.executions(id)).toHaveLength(2);
		expect(await account.flags(failing)).not.toContain('\\Seen');

		const later = await deliver(account, 'New after the restart', 3);
		const all = await n8n.waitForFinishedExecutions(id, 3);
		const [latest] = all.filter((e) => uidOf(e) === later);
		expect(latest).toMatchObject({ status: 'success' });
		expect(mailOf(latest)).toMatchObject({ uid: later, subject: 'New after the restart' });
		expect(await account.flags(later)).toContain('\\Seen');
		await n8n.unpublish(id);
	});

	test('a wrong password fails the credential test naming the user, and the poll records a failed execution saying login failed', async () => {
		const { credential } = await mailbox('locked', 'right-password');
		const { host, port } = dovecot.account.connection;
		const data = {
			host,
			port,
			secure: false,
			user: 'locked',
			password: 'wrong-password',
			allowSelfSigned: false,
		};
		const wrongId = await n8n.createCredential(
			'IMAP locked (wrong password)',
			'durableImapApi',
			data,
		);
		const test = async (id: string, name: string, testData: Record<string, unknown>) =>
			(
				await n8n.rest<{ data: { status: string; message: string } }>(
					'POST',
					'/rest/credentials/test',
					{ credentials: { id, name, type: 'durableImapApi', data: testData } },
				)
			).data;

		expect(
			await test(credential.id, credential.name, { ...data, password: 'right-password' }),
		).toEqual({ status: 'OK', message: 'Logged in to the IMAP server' });
		const wrong = await test(wrongId, 'IMAP locked (wrong password)', data);
		expect(wrong.status).toBe('Error');
		expect(wrong.message).toBe(
			`IMAP login failed for user "locked" at ${host}:${port}: Authentication failed.`,
		);

		const id = await n8n.importWorkflow(
			triageWorkflow(
				'triage wrong password',
				{ id: wrongId, name: 'IMAP locked (wrong password)' },
				'unique',
			),
		);
		await n8n.publish(id);
		const [failure] = await n8n.waitForExecutions(
			id,
			(all) => all.some((e) => e.status === 'error'),
			'a failed poll execution',
		);
		await n8n.unpublish(id);
		const failed = await n8n.execution(failure.id);
		expect(failed.status).toBe('error');
		expect(failed.data?.resultData.error?.message).toContain('IMAP login failed for user "locked"');
	});
});
