import { resolveOp } from '../../core/connectors/registry';
import { type ImapMessage, verifyImapLogin } from '../../core/connectors/imap';
import { ConfigError } from '../../core/configError';
import { ConnectorError, type ImapConnection, type OpResult } from '../../core/connectors/types';
import { buildMessage, Dovecot, type MailAccount, type TestMessage } from '../harness/dovecot';
import { freePort } from '../harness/net';

/** The IMAP connector ops against a real Dovecot (test/harness/dovecot.ts). */
describe('IMAP connector ops against Dovecot', () => {
	let dovecot: Dovecot;

	beforeAll(async () => {
		dovecot = await Dovecot.start();
	});

	afterAll(async () => {
		await dovecot?.stop();
	});

	/** Each test gets its own user, so tests do not see each other's mail. */
	let userCount = 0;
	function freshAccount(): MailAccount {
		userCount += 1;
		return dovecot.addUser(`user${userCount}`, `password-${userCount}`);
	}

	async function call(
		op: string,
		args: Record<string, unknown>,
		imap: ImapConnection,
	): Promise<unknown> {
		const result: OpResult = await resolveOp(op).run(args, { memory: {}, imap, timeoutMs: 10_000 });
		if (result.kind !== 'data') throw new Error(`${op} answered ${result.kind}`);
		return result.data;
	}

	async function listUnseen(imap: ImapConnection, args: Record<string, unknown> = {}) {
		return (await call('imap.listUnseen', args, imap)) as {
			mailbox: string;
			uidValidity: number;
			unseen: number;
			messages: ImapMessage[];
		};
	}

	const mail = (n: number, extra: Partial<TestMessage> = {}): string =>
		buildMessage({
			from: `"Customer ${n}" <customer${n}@example.com>`,
			to: 'Support <support@example.com>',
			subject: `Help request ${n}`,
			text: `Plain body ${n}`,
			messageId: `<request-${n}@example.com>`,
			date: new Date(Date.UTC(2025, 0, n, 9, 30)),
			...extra,
		});

	it('lists unread mail oldest first with headers, bodies and attachment metadata', async () => {
		const account = freshAccount();
		const imap = account.connection;
		const first = await account.append(
			mail(1, {
				html: '<p>HTML body 1</p>',
				attachment: {
					filename: 'invoice.pdf',
					contentType: 'application/pdf',
					content: Buffer.from('%PDF-1.4 fake invoice'),
				},
			}),
		);
		const second = await account.append(mail(2));
		const third = await account.append(mail(3));
		// Already read: not listed.
		await account.append(mail(4), { flags: ['\\Seen'] });

		const result = await listUnseen(imap);

		expect(result.mailbox).toBe('INBOX');
		expect(result.unseen).toBe(3);
		expect(result.messages.map((m) => m.uid)).toEqual([first, second, third]);
		expect(result.messages.map((m) => m.messageId)).toEqual([
			'<request-1@example.com>',
			'<request-2@example.com>',
			'<request-3@example.com>',
		]);
		const [message] = result.messages;
		expect(message).toEqual({
			mailbox: 'INBOX',
			uid: first,
			uidValidity: result.uidValidity,
			messageId: '<request-1@example.com>',
			from: { name: 'Customer 1', address: 'customer1@example.com' },
			to: [{ name: 'Support', address: 'support@example.com' }],
			cc: [],
			replyTo: [],
			subject: 'Help request 1',
			date: '2025-01-01T09:30:00.000Z',
			receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
			inReplyTo: null,
			text: 'Plain body 1',
			html: '<p>HTML body 1</p>',
			attachments: [
				{
					filename: 'invoice.pdf',
					contentType: 'application/pdf',
					size: 21,
					contentId: null,
					disposition: 'attachment',
				},
			],
		});
		expect(result.uidValidity).toBeGreaterThan(0);
		expect(result.messages[1]).toMatchObject({
			html: null,
			attachments: [],
			text: 'Plain body 2\n',
		});
		// Listing peeks: nothing became read.
		expect(await account.flags(first)).not.toContain('\\Seen');
	});

	it('markSeen takes a message out of the unread list; unknown UIDs are reported, not fatal', async () => {
		const account = freshAccount();
		const imap = account.connection;
		const uids = [
			await account.append(mail(1)),
			await account.append(mail(2)),
			await account.append(mail(3)),
		];

		const marked = await call('imap.markSeen', { mailbox: 'INBOX', uid: uids[1] }, imap);

		expect(marked).toMatchObject({ mailbox: 'INBOX', marked: [uids[1]], missing: [] });
		expect(await account.flags(uids[1])).toContain('\\Seen');
		expect((await listUnseen(imap)).messages.map((m) => m.uid)).toEqual([uids[0], uids[2]]);

		// An array (and digit strings, as n8n expressions produce) marks several; a UID that is gone is listed as missing.
		const again = await call('imap.markSeen', { uid: [String(uids[0]), uids[2], 999] }, imap);
		expect(again).toMatchObject({ marked: [uids[0], uids[2]], missing: [999] });
		expect((await listUnseen(imap)).messages).toEqual([]);
	});

	it('move takes a message out of INBOX into a folder it creates', async () => {
		const account = freshAccount();
		const imap = account.connection;
		const keep = await account.append(mail(1));
		const moveMe = await account.append(mail(2));

		const moved = (await call('imap.move', { uid: moveMe, destination: 'Triaged' }, imap)) as {
			created: boolean;
			moved: Array<{ uid: number; destinationUid: number | null }>;
		};

		expect(moved).toMatchObject({
			mailbox: 'INBOX',
			destination: 'Triaged',
			created: true,
			missing: [],
		});
		expect(moved.moved).toEqual([{ uid: moveMe, destinationUid: expect.any(Number) }]);
		expect(await account.uids('INBOX')).toEqual([keep]);
		expect(await account.uids('Triaged')).toEqual([moved.moved[0].destinationUid]);
		expect(
			(await listUnseen(imap, { mailbox: 'Triaged' })).messages.map((m) => m.messageId),
		).toEqual(['<request-2@example.com>']);

		// The folder now exists: a second move reuses it.
		const second = await call('imap.move', { uid: keep, destination: 'Triaged' }, imap);
		expect(second).toMatchObject({ created: false, moved: [{ uid: keep }] });
		expect(await account.uids('INBOX')).toEqual([]);
	});

	it('move with create false fails clearly when the destination does not exist', async () => {
		const account = freshAccount();
		const imap = account.connection;
		const uid = await account.append(mail(1));

		await expect(
			call('imap.move', { uid, destination: 'Nowhere', create: false }, imap),
		).rejects.toThrow(
			'IMAP destination mailbox "Nowhere" does not exist; create it, or set "create" to true',
		);
		expect(await account.uids('INBOX')).toEqual([uid]);
	});

	it('bounds a poll with limit, oldest first, and reports the full unread count', async () => {
		const account = freshAccount();
		const imap = account.connection;
		const uids: number[] = [];
		for (let n = 1; n <= 5; n += 1) uids.push(await account.append(mail(n)));

		const result = await listUnseen(imap, { limit: 2 });

		expect(result.messages.map((m) => m.uid)).toEqual(uids.slice(0, 2));
		expect(result.unseen).toBe(5);
		await expect(listUnseen(imap, { limit: 501 })).rejects.toThrow(ConfigError);
		// The op's own words: the node says «with» as "With" (nodes/shared/editorWords.ts).
		await expect(listUnseen(imap, { limit: 0 })).rejects.toThrow(
			'Invalid value 0 for "«with»": "limit" must be a whole number from 1 to 500',
		);
	});

	it('refuses UIDs from another UIDVALIDITY', async () => {
		const account = freshAccount();
		const imap = account.connection;
		const uid = await account.append(mail(1));
		const { uidValidity } = await listUnseen(imap);

		await expect(
			call('imap.markSeen', { uid, uidValidity: uidValidity + 1 }, imap),
		).rejects.toThrow(/UIDVALIDITY/);
		expect(await call('imap.markSeen', { uid, uidValidity }, imap)).toMatchObject({
			marked: [uid],
		});
	});

	it('a wrong password fails with the user, host and server text', async () => {
		const imap = { ...dovecot.account.connection, password: 'wrong' };

		const error = await listUnseen(imap).catch((e: unknown) => e);

		expect(error).toBeInstanceOf(ConnectorError);
		expect((error as Error).message).toBe(
			`IMAP login failed for user "${imap.user}" at 127.0.0.1:${dovecot.port}: Authentication failed.`,
		);
		await expect(verifyImapLogin(imap, 5_000)).rejects.toThrow(/IMAP login failed/);
		await expect(verifyImapLogin(dovecot.account.connection, 5_000)).resolves.toBeUndefined();
	});

	it('an unknown mailbox fails naming it', async () => {
		const imap = freshAccount().connection;

		await expect(listUnseen(imap, { mailbox: 'Support/Nope' })).rejects.toThrow(
			`IMAP mailbox "Support/Nope" does not exist for user "${imap.user}" at 127.0.0.1:${dovecot.port}`,
		);
	});

	it('a closed port fails as a refused connection', async () => {
		const imap = freshAccount().connection;
		const closed = { ...imap, port: await freePort() };

		await expect(listUnseen(closed)).rejects.toThrow(
			`IMAP connection at 127.0.0.1:${closed.port} failed: connection refused`,
		);
	});

	it('an aborted call stops and reports the abort', async () => {
		const account = freshAccount();
		const imap = account.connection;
		await account.append(mail(1));
		const controller = new AbortController();
		const pending = resolveOp('imap.listUnseen').run(
			{},
			{ memory: {}, imap, signal: controller.signal },
		);
		controller.abort();

		await expect(pending).rejects.toThrow(`IMAP call to 127.0.0.1:${dovecot.port} was aborted`);
	});
});
