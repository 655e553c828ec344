import { buildMessage, Dovecot, type MailAccount } from '../test/harness/dovecot';

const DEMO_MAILS = [
	{
		from: '"Ada Lovelace" <ada@example.com>',
		subject: 'URGENT: checkout is down',
		text: 'Every order fails at the payment step since 9:00.',
	},
	{
		from: '"Grace Hopper" <grace@example.com>',
		subject: 'Question about my invoice',
		text: 'Invoice 2024-117 lists two seats; we have one.',
	},
	{
		from: '"Alan Turing" <alan@example.com>',
		subject: 'Password reset mail never arrives',
		text: 'Tried three times, checked the spam folder.',
	},
	{
		from: '"Katherine Johnson" <katherine@example.com>',
		subject: 'Urgent: data export is empty',
		text: 'The CSV export has headers only.',
	},
];

/**
 * The examples' demo mailbox: a Dovecot on loopback (test/harness/dovecot.ts) with one user, "support",
 * holding two unread demo mails. `port` defaults to a free one.
 */
export async function startDemoMailbox(
	port?: number,
	{ ownProcessGroup = false } = {},
): Promise<Dovecot> {
	const dovecot = await Dovecot.start({
		user: 'support',
		password: 'demo-imap-password',
		port,
		ownProcessGroup,
	});
	await deliverDemoMail(dovecot.account, 0);
	await deliverDemoMail(dovecot.account, 1);
	return dovecot;
}

/** Appends the n-th demo mail (the subjects repeat), unread; returns its UID. */
export async function deliverDemoMail(account: MailAccount, n: number): Promise<number> {
	const mail = DEMO_MAILS[n % DEMO_MAILS.length];
	return await account.append(
		buildMessage({
			...mail,
			to: 'Support <support@example.com>',
			messageId: `<demo-${Date.now()}-${n}@example.com>`,
		}),
	);
}
