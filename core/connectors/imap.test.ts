import { createImapOps, describeFailure, type ImapClient } from './imap';
import { ConfigError } from '../configError';
import { ConnectorError, type ImapConnection } from './types';

const settings: ImapConnection = {
	host: 'imap.example.com',
	port: 993,
	secure: true,
	user: 'support@example.com',
	password: 'secret',
};

/** A client that records the session's life cycle; `failWith` makes the mailbox step throw. */
function fakeClient({ connectError, failWith }: { connectError?: Error; failWith?: Error } = {}) {
	const calls: string[] = [];
	const client = {
		usable: false,
		on: () => client,
		async connect() {
			calls.push('connect');
			if (connectError) throw connectError;
			client.usable = true;
		},
		async getMailboxLock() {
			calls.push('lock');
			if (failWith) throw failWith;
			return { release: () => calls.push('release') };
		},
		mailbox: { uidValidity: 7n },
		async search() {
			return [];
		},
		async logout() {
			calls.push('logout');
			client.usable = false;
		},
		close() {
			calls.push('close');
		},
	};
	return { calls, client: client as unknown as ImapClient };
}

function opsWith(client: ImapClient) {
	const opened: unknown[] = [];
	const ops = new Map(
		createImapOps((options) => (opened.push(options), client)).map((op) => [op.name, op]),
	);
	return { opened, op: (name: string) => ops.get(name)! };
}

describe('IMAP ops without a server', () => {
	it('checks arguments before connecting, naming the field', async () => {
		const { client } = fakeClient();
		const { op, opened } = opsWith(client);

		await expect(
			op('imap.listUnseen').run({ limit: 501 }, { memory: {}, imap: settings }),
		).rejects.toThrow(
			'Invalid value 501 for "«with»": "limit" must be a whole number from 1 to 500',
		);
		await expect(
			op('imap.markSeen').run({ uid: [1, 'x'] }, { memory: {}, imap: settings }),
		).rejects.toThrow(
			'Invalid value [1,"x"] for "«with»": "uid" must be a message UID (a positive whole number) or a list of them',
		);
		await expect(op('imap.move').run({ uid: 1 }, { memory: {}, imap: settings })).rejects.toThrow(
			ConfigError,
		);
		await expect(
			op('imap.move').run(
				{ uid: 1, destination: 'Done', create: 'yes' },
				{ memory: {}, imap: settings },
			),
		).rejects.toThrow('Invalid value "yes" for "«with»": "create" must be true or false');
		// The same checks without running, as the Poll Trigger makes them at activation.
		expect(() => op('imap.listUnseen').check({ mailbox: 42 })).toThrow(
			expect.objectContaining({
				field: 'with',
				message:
					'Invalid value 42 for "«with»": "mailbox" must be a mailbox name such as "INBOX" or "Archive/2024"',
			}),
		);
		expect(() => op('imap.listUnseen').check({ mailbox: 'INBOX', limit: 10 })).not.toThrow();
		expect(() => op('imap.move').check({ uid: 1 })).toThrow(
			'Invalid value (none) for "«with»": "destination" must be a mailbox name',
		);
		expect(opened).toEqual([]);
	});

	it('passes the timeout and TLS settings to the client and logs out after the work', async () => {
		const { client, calls } = fakeClient();
		const { op, opened } = opsWith(client);

		const result = await op('imap.listUnseen').run(
			{},
			{ memory: {}, imap: { ...settings, allowSelfSigned: true }, timeoutMs: 5_000 },
		);

		expect(result).toEqual({
			kind: 'data',
			data: { mailbox: 'INBOX', uidValidity: 7, unseen: 0, messages: [] },
		});
		expect(opened[0]).toMatchObject({
			host: 'imap.example.com',
			port: 993,
			secure: true,
			tls: { rejectUnauthorized: false },
			connectionTimeout: 5_000,
			greetingTimeout: 5_000,
			socketTimeout: 5_000,
		});
		expect(calls).toEqual(['connect', 'lock', 'release', 'logout']);
	});

	it('logs out when the work fails, and only drops the socket when connecting failed', async () => {
		const missing = Object.assign(new Error('Command failed'), { mailboxMissing: true });
		const failing = fakeClient({ failWith: missing });
		await expect(
			opsWith(failing.client)
				.op('imap.listUnseen')
				.run({ mailbox: 'Support' }, { memory: {}, imap: settings }),
		).rejects.toThrow(
			'IMAP mailbox "Support" does not exist for user "support@example.com" at imap.example.com:993',
		);
		expect(failing.calls).toEqual(['connect', 'lock', 'logout']);

		const refused = fakeClient({
			connectError: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
		});
		await expect(
			opsWith(refused.client).op('imap.listUnseen').run({}, { memory: {}, imap: settings }),
		).rejects.toThrow('IMAP connection at imap.example.com:993 failed: connection refused');
		expect(refused.calls).toEqual(['connect', 'close']);
	});

	it('does not connect when already aborted', async () => {
		const { client } = fakeClient();
		const { op, opened } = opsWith(client);

		await expect(
			op('imap.listUnseen').run({}, { memory: {}, imap: settings, signal: AbortSignal.abort() }),
		).rejects.toThrow('was aborted before it started');
		expect(opened).toEqual([]);
	});

	it('explains timeouts and certificate failures with the setting to check', () => {
		const plain = { ...settings, port: 993, secure: false };
		expect(
			describeFailure(
				Object.assign(new Error('timeout'), { code: 'GREETING_TIMEOUT' }),
				plain,
				undefined,
			).message,
		).toBe(
			'IMAP server at imap.example.com:993 did not answer in time (GREETING_TIMEOUT) (a TLS-only port such as 993 needs the TLS setting on)',
		);
		const selfSigned = describeFailure(
			Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }),
			settings,
			undefined,
		);
		expect(selfSigned).toBeInstanceOf(ConnectorError);
		expect(selfSigned.message).toMatch(
			/certificate that does not verify \(DEPTH_ZERO_SELF_SIGNED_CERT\); allow self-signed certificates only if you trust this server/,
		);
		expect(
			describeFailure(
				Object.assign(new Error('Command failed'), {
					authenticationFailed: true,
					response: 'Authentication failed.',
				}),
				settings,
				undefined,
			).message,
		).toBe(
			'IMAP login failed for user "support@example.com" at imap.example.com:993: Authentication failed.',
		);
	});
});
