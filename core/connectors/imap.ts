import { ImapFlow, type FetchMessageObject, type ImapFlowOptions } from 'imapflow';
import { type AddressObject, simpleParser } from 'mailparser';

import { checkRange } from '../configError';
import { argumentError, booleanArg } from './args';
import { unreachable } from './network';
import { ConnectorError, type ConnectorOp, type ImapConnection, type OpContext } from './types';

/**
 * The IMAP ops: `imap.listUnseen`, `imap.markSeen` and `imap.move`. Each call is one short session
 * (connect, log in, lock the mailbox, work, log out), so a poll holds no connection between polls
 * and a dropped connection costs one failed call, not a stuck listener.
 */

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;
/** Connection, greeting and socket-inactivity timeout when the caller sets none: a poll must not hang on a silent server. */
const DEFAULT_TIMEOUT_MS = 30_000;

/** The part of ImapFlow the ops use; a unit test hands in a fake through createImapOps. */
export type ImapClient = Pick<
	ImapFlow,
	| 'connect'
	| 'logout'
	| 'close'
	| 'usable'
	| 'on'
	| 'getMailboxLock'
	| 'search'
	| 'fetch'
	| 'messageFlagsAdd'
	| 'messageMove'
	| 'mailboxCreate'
	| 'status'
	| 'mailbox'
>;

export type ImapClientFactory = (options: ImapFlowOptions) => ImapClient;

export interface ImapAddress {
	name: string;
	address: string;
}

export interface ImapAttachment {
	filename: string | null;
	contentType: string;
	size: number;
	contentId: string | null;
	/** `attachment` or `inline`. */
	disposition: string | null;
}

/** One unread message as `imap.listUnseen` returns it. */
export interface ImapMessage {
	mailbox: string;
	/** Unique within the mailbox while its `uidValidity` stays the same. */
	uid: number;
	uidValidity: number;
	/** The Message-ID header, angle brackets included; null when the message has none. */
	messageId: string | null;
	from: ImapAddress | null;
	to: ImapAddress[];
	cc: ImapAddress[];
	replyTo: ImapAddress[];
	subject: string;
	/** The Date header (ISO 8601), as the sender's client set it; null when missing or unreadable. */
	date: string | null;
	/** When the server received the message (IMAP INTERNALDATE, ISO 8601). */
	receivedAt: string | null;
	inReplyTo: string | null;
	/** The plain-text body; derived from the HTML when the message has no text part. */
	text: string | null;
	html: string | null;
	attachments: ImapAttachment[];
}

function listUnseenArgs(args: Record<string, unknown>) {
	return { mailbox: mailboxArg(args.mailbox, 'mailbox'), limit: limitArg(args.limit) };
}

function markSeenArgs(args: Record<string, unknown>) {
	return {
		mailbox: mailboxArg(args.mailbox, 'mailbox'),
		uids: uidsArg(args.uid),
		expectedValidity: uidValidityArg(args.uidValidity),
	};
}

function moveArgs(args: Record<string, unknown>) {
	return {
		...markSeenArgs(args),
		destination: mailboxArg(args.destination, 'destination', false),
		create: booleanArg(args.create, 'create', true),
	};
}

export function createImapOps(openClient: ImapClientFactory): ConnectorOp[] {
	const listUnseen: ConnectorOp = {
		name: 'imap.listUnseen',
		description:
			'Unread messages of a mailbox, oldest first (at most "limit"), with bodies and attachment metadata',
		transport: 'imap',
		check: (args) => listUnseenArgs(args),
		async run(args, context) {
			const { mailbox, limit } = listUnseenArgs(args);
			return await withMailbox(openClient, context, mailbox, true, async (client, uidValidity) => {
				const unseen = (await client.search({ seen: false }, { uid: true })) || [];
				// UIDs grow with arrival, so the lowest are the oldest; a backlog drains oldest first.
				const uids = [...unseen].sort((a, b) => a - b).slice(0, limit);
				const messages: ImapMessage[] = [];
				if (uids.length > 0) {
					// EXAMINE (read-only) plus BODY.PEEK: listing never marks a message seen.
					for await (const fetched of client.fetch(
						uids.join(','),
						{ uid: true, source: true, internalDate: true },
						{ uid: true },
					)) {
						messages.push(await toMessage(fetched, mailbox, uidValidity));
					}
				}
				messages.sort((a, b) => a.uid - b.uid);
				return { kind: 'data', data: { mailbox, uidValidity, unseen: unseen.length, messages } };
			});
		},
	};

	const markSeen: ConnectorOp = {
		name: 'imap.markSeen',
		description: 'Marks messages of a mailbox as read, by UID',
		transport: 'imap',
		check: (args) => markSeenArgs(args),
		async run(args, context) {
			const { mailbox, uids, expectedValidity } = markSeenArgs(args);
			return await withMailbox(openClient, context, mailbox, false, async (client, uidValidity) => {
				checkUidValidity(expectedValidity, uidValidity, mailbox);
				const present = await presentUids(client, uids);
				// imapflow reports a refused STORE as false rather than throwing.
				if (
					present.length > 0 &&
					!(await client.messageFlagsAdd(present.join(','), ['\\Seen'], { uid: true }))
				) {
					throw new ConnectorError(
						`IMAP server refused to mark messages ${present.join(', ')} of "${mailbox}" as seen`,
					);
				}
				return {
					kind: 'data',
					data: { mailbox, uidValidity, marked: present, missing: missingUids(uids, present) },
				};
			});
		},
	};

	const move: ConnectorOp = {
		name: 'imap.move',
		description:
			'Moves messages of a mailbox to another mailbox, by UID; creates the destination unless "create" is false',
		transport: 'imap',
		check: (args) => moveArgs(args),
		async run(args, context) {
			const { mailbox, destination, uids, expectedValidity, create } = moveArgs(args);
			return await withMailbox(openClient, context, mailbox, false, async (client, uidValidity) => {
				checkUidValidity(expectedValidity, uidValidity, mailbox);
				const present = await presentUids(client, uids);
				let created = false;
				const moved: Array<{ uid: number; destinationUid: number | null }> = [];
				if (present.length > 0) {
					if (create) created = (await client.mailboxCreate(destination)).created;
					else await requireMailbox(client, destination);
					// imapflow reports a refused MOVE as false rather than throwing, without the server's text.
					const result = await client.messageMove(present.join(','), destination, { uid: true });
					if (!result)
						throw new ConnectorError(
							`IMAP server refused to move messages ${present.join(', ')} from "${mailbox}" to "${destination}"`,
						);
					// Without UIDPLUS the server does not say where the messages landed.
					for (const uid of present)
						moved.push({ uid, destinationUid: result.uidMap?.get(uid) ?? null });
				}
				return {
					kind: 'data',
					data: {
						mailbox,
						destination,
						uidValidity,
						created,
						moved,
						missing: missingUids(uids, present),
					},
				};
			});
		},
	};

	return [listUnseen, markSeen, move];
}

const openImapFlow: ImapClientFactory = (options) => new ImapFlow(options);

export const imapOps = createImapOps(openImapFlow);

/** Connects and logs in, then logs out: what a credential test needs. Throws the ops' ConnectorErrors. */
export async function verifyImapLogin(settings: ImapConnection, timeoutMs: number): Promise<void> {
	await withSession(
		openImapFlow,
		{ memory: {}, imap: settings, timeoutMs },
		undefined,
		async () => undefined,
	);
}

type Work<T> = (client: ImapClient, uidValidity: number) => Promise<T>;

async function withMailbox<T>(
	openClient: ImapClientFactory,
	context: OpContext,
	mailbox: string,
	readOnly: boolean,
	work: Work<T>,
): Promise<T> {
	return await withSession(openClient, context, mailbox, async (client) => {
		const lock = await client.getMailboxLock(mailbox, { readOnly });
		try {
			const opened = client.mailbox;
			// A UIDVALIDITY is a 32-bit number; imapflow hands it over as a bigint, which JSON cannot carry.
			return await work(client, opened ? Number(opened.uidValidity) : 0);
		} finally {
			lock.release();
		}
	});
}

/** One session: connect, work, and always log out (or drop the socket), also on error and abort. */
async function withSession<T>(
	openClient: ImapClientFactory,
	context: OpContext,
	mailbox: string | undefined,
	work: (client: ImapClient) => Promise<T>,
): Promise<T> {
	const settings = context.imap;
	if (!settings) throw new Error('The IMAP ops need IMAP connection settings');
	const where = `${settings.host}:${settings.port}`;
	if (context.signal?.aborted)
		throw new ConnectorError(`IMAP call to ${where} was aborted before it started`);
	const timeoutMs = context.timeoutMs ?? DEFAULT_TIMEOUT_MS;
	const client = openClient({
		host: settings.host,
		port: settings.port,
		secure: settings.secure,
		auth: { user: settings.user, pass: settings.password },
		tls: { rejectUnauthorized: !settings.allowSelfSigned },
		connectionTimeout: timeoutMs,
		greetingTimeout: timeoutMs,
		socketTimeout: timeoutMs,
		disableAutoIdle: true,
		logger: false,
	});
	// A connection error after connect() is emitted as an event; unhandled, it would crash n8n. The
	// pending command rejects with it as well, so the error is reported there.
	client.on('error', () => undefined);
	const abort = () => client.close();
	context.signal?.addEventListener('abort', abort, { once: true });
	try {
		await client.connect();
		return await work(client);
	} catch (error) {
		if (context.signal?.aborted) throw new ConnectorError(`IMAP call to ${where} was aborted`);
		throw describeFailure(error, settings, mailbox);
	} finally {
		context.signal?.removeEventListener('abort', abort);
		await closeSession(client);
	}
}

async function closeSession(client: ImapClient): Promise<void> {
	if (client.usable) {
		try {
			await client.logout();
			return;
		} catch {
			// The server went away mid-logout; dropping the socket below is all that is left to do.
		}
	}
	client.close();
}

interface ImapFailure {
	message: string;
	code?: string;
	authenticationFailed?: boolean;
	mailboxMissing?: boolean;
	tlsFailed?: boolean;
	responseText?: string;
	response?: unknown;
}

const TIMEOUT_CODES = new Set([
	'CONNECT_TIMEOUT',
	'GREETING_TIMEOUT',
	'UPGRADE_TIMEOUT',
	'ETIMEOUT',
]);
const CERTIFICATE_CODES = new Set([
	'DEPTH_ZERO_SELF_SIGNED_CERT',
	'SELF_SIGNED_CERT_IN_CHAIN',
	'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
	'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
	'CERT_HAS_EXPIRED',
	'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Turns an imapflow or socket error into a ConnectorError that says what to fix. */
export function describeFailure(
	error: unknown,
	settings: ImapConnection,
	mailbox: string | undefined,
): ConnectorError {
	if (error instanceof ConnectorError) return error;
	// Duck-typed, not `instanceof Error`: socket errors can come from another realm (a test VM, a sandbox).
	const failure = (
		typeof error === 'object' && error !== null ? error : { message: String(error) }
	) as ImapFailure;
	const where = `${settings.host}:${settings.port}`;
	const serverText = serverTextOf(failure);
	const description = serverText || undefined;
	const code = failure.code ?? '';
	if (failure.authenticationFailed) {
		return new ConnectorError(
			`IMAP login failed for user ${JSON.stringify(settings.user)} at ${where}: ${serverText}`,
			{ description },
		);
	}
	if (failure.mailboxMissing) {
		return new ConnectorError(
			`IMAP mailbox ${JSON.stringify(mailbox)} does not exist for user ${JSON.stringify(settings.user)} at ${where}`,
			{ description },
		);
	}
	const network = unreachable('IMAP connection', where, error);
	if (network) return network;
	if (TIMEOUT_CODES.has(code)) {
		const hint =
			code === 'GREETING_TIMEOUT' && !settings.secure
				? ' (a TLS-only port such as 993 needs the TLS setting on)'
				: '';
		return new ConnectorError(`IMAP server at ${where} did not answer in time (${code})${hint}`);
	}
	if (CERTIFICATE_CODES.has(code)) {
		return new ConnectorError(
			`IMAP server at ${where} presented a certificate that does not verify (${code}); allow self-signed certificates only if you trust this server`,
			{ description: failure.message },
		);
	}
	if (failure.tlsFailed || code === 'EPROTO' || code.startsWith('ERR_SSL')) {
		return new ConnectorError(
			`TLS with IMAP server at ${where} failed: ${failure.message} (a plain port such as 143 needs the TLS setting off)`,
		);
	}
	return new ConnectorError(`IMAP error at ${where}: ${serverText}`, { description });
}

/** The server's own words (the tagged NO/BAD text), which say more than imapflow's "Command failed". */
function serverTextOf(failure: ImapFailure): string {
	if (failure.responseText) return failure.responseText;
	if (typeof failure.response === 'string' && failure.response) return failure.response;
	return failure.message;
}

async function toMessage(
	fetched: FetchMessageObject,
	mailbox: string,
	uidValidity: number,
): Promise<ImapMessage> {
	const parsed = await simpleParser(fetched.source ?? Buffer.alloc(0), {
		skipImageLinks: true,
		skipTextToHtml: true,
		skipTextLinks: true,
	});
	const internalDate = fetched.internalDate ? new Date(fetched.internalDate) : undefined;
	return {
		mailbox,
		uid: fetched.uid,
		uidValidity,
		messageId: parsed.messageId ?? null,
		from: addresses(parsed.from)[0] ?? null,
		to: addresses(parsed.to),
		cc: addresses(parsed.cc),
		replyTo: addresses(parsed.replyTo),
		subject: parsed.subject ?? '',
		date: isoDate(parsed.date),
		receivedAt: isoDate(internalDate),
		inReplyTo: parsed.inReplyTo ?? null,
		text: parsed.text ?? null,
		html: parsed.html || null,
		attachments: parsed.attachments.map((attachment) => ({
			filename: attachment.filename ?? null,
			contentType: attachment.contentType,
			size: attachment.size,
			contentId: attachment.contentId ?? null,
			disposition: attachment.contentDisposition ?? null,
		})),
	};
}

function addresses(field: AddressObject | AddressObject[] | undefined): ImapAddress[] {
	const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
	// Group syntax ("team: a@x, b@x;") nests its members; flatten them into the list.
	return objects
		.flatMap((object) => object.value)
		.flatMap((entry) => entry.group ?? [entry])
		.map((entry) => ({ name: entry.name, address: entry.address ?? '' }));
}

function isoDate(date: Date | undefined): string | null {
	return date && !Number.isNaN(date.getTime()) ? date.toISOString() : null;
}

/** A missing destination would only make MOVE fail without a reason; STATUS says so by name. */
async function requireMailbox(client: ImapClient, path: string): Promise<void> {
	const exists = await client.status(path, { messages: true }).then(
		(status) => status !== false,
		() => false,
	);
	if (!exists)
		throw new ConnectorError(
			`IMAP destination mailbox ${JSON.stringify(path)} does not exist; create it, or set "create" to true`,
		);
}

async function presentUids(client: ImapClient, uids: number[]): Promise<number[]> {
	const found = (await client.search({ uid: uids.join(',') }, { uid: true })) || [];
	return [...found].sort((a, b) => a - b);
}

/** UIDs asked for that the mailbox does not hold (already moved or deleted): reported, not an error, so a retried step succeeds. */
function missingUids(asked: number[], present: number[]): number[] {
	const found = new Set(present);
	return asked.filter((uid) => !found.has(uid));
}

function checkUidValidity(expected: number | undefined, actual: number, mailbox: string): void {
	if (expected !== undefined && expected !== actual) {
		throw new ConnectorError(
			`IMAP mailbox "${mailbox}" has UIDVALIDITY ${actual}, not ${expected}: its UIDs were reassigned since the message was listed, so the UIDs may name other messages`,
		);
	}
}

function mailboxArg(value: unknown, key: string, defaultInbox = true): string {
	if ((value === undefined || value === null || value === '') && defaultInbox) return 'INBOX';
	if (typeof value !== 'string' || value.trim() === '')
		throw argumentError(key, value, 'must be a mailbox name such as "INBOX" or "Archive/2024"');
	return value;
}

function limitArg(value: unknown): number {
	if (value === undefined || value === null || value === '') return DEFAULT_LIMIT;
	return checkRange(
		'with',
		positiveInteger(value) ?? value,
		{ min: 1, max: MAX_LIMIT, whole: true },
		{ key: 'limit' },
	);
}

/** One UID or a list; digit strings are accepted because n8n expressions often produce strings. */
function uidsArg(value: unknown): number[] {
	const list = Array.isArray(value) ? value : [value];
	const uids = list.map(positiveInteger);
	if (list.length === 0 || uids.some((uid) => uid === undefined)) {
		throw argumentError(
			'uid',
			value,
			'must be a message UID (a positive whole number) or a list of them',
		);
	}
	return [...new Set(uids as number[])];
}

function uidValidityArg(value: unknown): number | undefined {
	if (value === undefined || value === null || value === '') return undefined;
	const validity = positiveInteger(value);
	if (validity === undefined) {
		throw argumentError(
			'uidValidity',
			value,
			"must be the mailbox's UIDVALIDITY from imap.listUnseen (a positive whole number)",
		);
	}
	return validity;
}

function positiveInteger(value: unknown): number | undefined {
	const number = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
	return typeof number === 'number' && Number.isSafeInteger(number) && number > 0
		? number
		: undefined;
}
