import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
	accessSync,
	chmodSync,
	chownSync,
	constants,
	mkdirSync,
	mkdtempSync,
	writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';

import { ImapFlow } from 'imapflow';

import type { ImapConnection } from '../../core/connectors/types';
import { freePort } from './net';
import { ServerProcess } from './serverProcess';

/**
 * A real Dovecot IMAP server for tests, with its own config, users, mail and sockets in a temp dir
 * (never /etc/dovecot). Plain IMAP on loopback only, so tests connect with `secure: false`.
 *
 * Running as root, Dovecot refuses root for its login processes ("must not be run as root") and for
 * mail access ("Mail access not allowed for root"), so it uses the Debian package's own unprivileged
 * users (dovenull for logins, dovecot for everything else) and the mail dir belongs to dovecot. As any
 * other user it runs everything as that user; chroot is off for the services that default to one,
 * since only root may chroot.
 */
export class Dovecot extends ServerProcess {
	readonly host = '127.0.0.1';

	/** The user the server was started with. */
	readonly account: MailAccount;

	private constructor(
		process: ChildProcess,
		dir: string,
		readonly port: number,
		user: string,
		password: string,
	) {
		super(process, dir, 'dovecot.log');
		this.account = this.addUser(user, password);
	}

	/**
	 * Starts a server on `port` (default: a free one) with one user. `ownProcessGroup`: in a process
	 * group of its own, so a Ctrl-C in the terminal reaches only its owner, which stops it.
	 */
	static async start({
		user = 'tester',
		password = 'test-password',
		port,
		ownProcessGroup = false,
	}: {
		user?: string;
		password?: string;
		port?: number;
		ownProcessGroup?: boolean;
	} = {}): Promise<Dovecot> {
		const binary = dovecotBinary();
		if (!binary)
			throw new Error(
				"No Dovecot server binary was found: install it with `apt-get install dovecot-imapd` (CI's .ci/run does).",
			);
		port ??= await freePort();
		const dir = mkdtempSync(join(tmpdir(), 'dovecot-test-'));
		// Dovecot's unprivileged processes (when started as root) must reach the users file and mail dir.
		chmodSync(dir, 0o755);
		const accounts = runAccounts();
		const mailDir = join(dir, 'mail');
		mkdirSync(mailDir);
		if (accounts.mailOwner) chownSync(mailDir, accounts.mailOwner.uid, accounts.mailOwner.gid);
		mkdirSync(join(dir, 'users'), { mode: 0o755 });
		const configPath = join(dir, 'dovecot.conf');
		writeFileSync(configPath, dovecotConfig(dir, port, accounts));

		const child = spawn(binary, ['-F', '-c', configPath], {
			stdio: ['ignore', 'pipe', 'pipe'],
			detached: ownProcessGroup,
		});
		const dovecot = new Dovecot(child, dir, port, user, password);
		await dovecot.ready(
			`Dovecot's IMAP greeting on port ${port}`,
			() => imapGreeting(port),
			() => `\n${dovecot.log()}`,
		);
		return dovecot;
	}

	/**
	 * Adds a user with an empty mailbox. One passwd-file per user: Dovecot checks a passwd-file for
	 * changes at most once a second, so a user appended to a shared file could not log in right away.
	 */
	addUser(user: string, password: string): MailAccount {
		writeFileSync(join(this.dir, 'users', user), `${user}:{PLAIN}${password}::::::\n`, {
			mode: 0o644,
		});
		return new MailAccount({ host: this.host, port: this.port, secure: false, user, password });
	}

	/** How many times `user` has logged in so far: each connector op call (a poll, a markSeen) is one login. */
	logins(user: string): number {
		return this.log()
			.split('\n')
			.filter((line) => line.includes(`imap-login: Info: Login: user=<${user}>,`)).length;
	}
}

/** One user's mail on the test server, put there and read back over IMAP. */
export class MailAccount {
	constructor(
		/** Settings for the connector ops and the credential. */
		readonly connection: ImapConnection,
	) {}

	/** Appends a raw RFC 822 message (unread unless `flags` says otherwise) and returns its UID. */
	async append(
		message: string,
		{ mailbox = 'INBOX', flags = [] as string[] }: { mailbox?: string; flags?: string[] } = {},
	): Promise<number> {
		return await this.withClient(async (client) => {
			const result = await client.append(mailbox, message, flags);
			if (!result || result.uid === undefined)
				throw new Error(`Dovecot did not report a UID for the message appended to ${mailbox}`);
			return result.uid;
		});
	}

	/** The flags of one message, e.g. ['\\Seen'], or undefined when the mailbox has no such UID. */
	async flags(uid: number, mailbox = 'INBOX'): Promise<string[] | undefined> {
		return await this.inMailbox(mailbox, async (client) => {
			const message = await client.fetchOne(String(uid), { uid: true, flags: true }, { uid: true });
			return message ? [...(message.flags ?? [])].sort() : undefined;
		});
	}

	/** Every UID in a mailbox, ascending. */
	async uids(mailbox = 'INBOX'): Promise<number[]> {
		return await this.inMailbox(mailbox, async (client) =>
			((await client.search({ all: true }, { uid: true })) || []).sort((a, b) => a - b),
		);
	}

	private async inMailbox<T>(mailbox: string, work: (client: ImapFlow) => Promise<T>): Promise<T> {
		return await this.withClient(async (client) => {
			const lock = await client.getMailboxLock(mailbox, { readOnly: true });
			try {
				return await work(client);
			} finally {
				lock.release();
			}
		});
	}

	private async withClient<T>(work: (client: ImapFlow) => Promise<T>): Promise<T> {
		const { host, port, secure, user, password } = this.connection;
		const client = new ImapFlow({
			host,
			port,
			secure,
			auth: { user, pass: password },
			logger: false,
			disableAutoIdle: true,
		});
		await client.connect();
		try {
			return await work(client);
		} finally {
			await client.logout();
		}
	}
}

interface RunAccounts {
	internalUser: string;
	internalGroup: string;
	loginUser: string;
	/** Set when running as root: mail files belong to this unprivileged user. */
	mailOwner?: { name: string; group: string; uid: number; gid: number };
}

function runAccounts(): RunAccounts {
	if (process.getuid?.() === 0) {
		const id = (flag: string, name: string) =>
			Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
		const mailOwner = {
			name: 'dovecot',
			group: 'dovecot',
			uid: id('-u', 'dovecot'),
			gid: id('-g', 'dovecot'),
		};
		return { internalUser: 'dovecot', internalGroup: 'dovecot', loginUser: 'dovenull', mailOwner };
	}
	const me = userInfo().username;
	const group = execFileSync('id', ['-gn'], { encoding: 'utf8' }).trim();
	return { internalUser: me, internalGroup: group, loginUser: me };
}

function dovecotConfig(dir: string, port: number, accounts: RunAccounts): string {
	const mailOwner = accounts.mailOwner
		? `mail_uid = ${accounts.mailOwner.name}\nmail_gid = ${accounts.mailOwner.group}\n`
		: '';
	return `# Written by test/harness/dovecot.ts for one test run.
instance_name = durable-triggers-test-${port}
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
info_log_path = ${dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
# Wrong-password tests should not wait for the brute-force delay (the per-IP penalty is off below).
auth_failure_delay = 0
default_internal_user = ${accounts.internalUser}
default_internal_group = ${accounts.internalGroup}
default_login_user = ${accounts.loginUser}
${mailOwner}first_valid_uid = 1
first_valid_gid = 1
mail_location = maildir:${dir}/mail/%u
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/users/%u
}
userdb {
  driver = passwd-file
  args = username_format=%u ${dir}/users/%u
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
  # No socket, no per-IP login penalty: failed logins in one test would slow every later login.
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
`;
}

/** The Dovecot server binary, or undefined when it is not installed. It lives in /usr/sbin, which a non-root user's PATH often lacks. */
export function dovecotBinary(): string | undefined {
	const directories = [
		...(process.env.PATH ?? '').split(delimiter),
		'/usr/sbin',
		'/usr/local/sbin',
	];
	for (const directory of directories) {
		const candidate = join(directory, 'dovecot');
		try {
			accessSync(candidate, constants.X_OK);
			return candidate;
		} catch {
			// not here; try the next directory
		}
	}
	return undefined;
}

/** Resolves once the port sends an IMAP "* OK" greeting; undefined (not yet) otherwise. */
async function imapGreeting(port: number): Promise<true | undefined> {
	return await new Promise((resolve) => {
		const socket = connect(port, '127.0.0.1');
		const done = (value: true | undefined) => {
			socket.destroy();
			resolve(value);
		};
		socket.setTimeout(2_000, () => done(undefined));
		socket.once('error', () => done(undefined));
		socket.once('data', (chunk: Buffer) =>
			done(chunk.toString().startsWith('* OK') ? true : undefined),
		);
	});
}

export interface TestMessage {
	from: string;
	to: string;
	subject: string;
	text: string;
	html?: string;
	attachment?: { filename: string; contentType: string; content: Buffer };
	messageId: string;
	date?: Date;
}

/**
 * Builds a raw RFC 822 message: multipart/mixed of (multipart/alternative of text and HTML) and an
 * attachment, or plain text alone; enough structure to exercise the parser's bodies and attachments.
 */
export function buildMessage(message: TestMessage): string {
	const headers = [
		`From: ${message.from}`,
		`To: ${message.to}`,
		`Subject: ${message.subject}`,
		`Message-ID: ${message.messageId}`,
		`Date: ${(message.date ?? new Date()).toUTCString()}`,
		'MIME-Version: 1.0',
	];
	const textPart = [
		'Content-Type: text/plain; charset=utf-8',
		'Content-Transfer-Encoding: 8bit',
		'',
		message.text,
	];
	let body: string[] = textPart;
	if (message.html !== undefined) {
		body = multipart('alternative', 'alt-boundary', [
			textPart,
			[
				'Content-Type: text/html; charset=utf-8',
				'Content-Transfer-Encoding: 8bit',
				'',
				message.html,
			],
		]);
	}
	if (message.attachment) {
		const { filename, contentType, content } = message.attachment;
		const attachmentPart = [
			`Content-Type: ${contentType}; name="${filename}"`,
			'Content-Transfer-Encoding: base64',
			`Content-Disposition: attachment; filename="${filename}"`,
			'',
			...(content.toString('base64').match(/.{1,76}/g) ?? []),
		];
		body = multipart('mixed', 'mixed-boundary', [body, attachmentPart]);
	}
	return [...headers, ...body].join('\r\n') + '\r\n';
}

/** Headers (Content-Type) plus body of a multipart entity whose parts are header+body line lists. */
function multipart(subtype: string, boundary: string, parts: string[][]): string[] {
	return [
		`Content-Type: multipart/${subtype}; boundary="${boundary}"`,
		'',
		...parts.flatMap((part) => [`--${boundary}`, ...part]),
		`--${boundary}--`,
	];
}
