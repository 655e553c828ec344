import type { ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * An IMAP mailbox login for the `imap.*` connector ops. IMAP has no HTTP endpoint to test against,
 * so the nodes test it with `imapCredentialTest` (nodes/shared/imapCredentialTest.ts): connect, log in, log out.
 * The lint rule looks for `testedBy` in the node files themselves; the nodes declare it through the shared
 * `connectorCredentials` (nodes/shared/parameters.ts), which it does not follow.
 */
// eslint-disable-next-line @n8n/community-nodes/credential-test-required
export class DurableImapApi implements ICredentialType {
	name = 'durableImapApi';

	displayName = 'Durable Triggers IMAP API';

	icon = { light: 'file:durableImapApi.svg', dark: 'file:durableImapApi.dark.svg' } as const;

	documentationUrl =
		'https://github.com/n8n-nodes-durable-triggers/n8n-nodes-durable-triggers/blob/main/docs/connector-ops.md#imap';

	properties: INodeProperties[] = [
		{
			displayName: 'Host',
			name: 'host',
			type: 'string',
			default: '',
			placeholder: 'imap.example.com',
			required: true,
		},
		{
			displayName: 'Port',
			name: 'port',
			type: 'number',
			default: 993,
			description:
				'993 for IMAP over TLS, 143 for plain IMAP (upgraded with STARTTLS when the server offers it)',
		},
		{
			displayName: 'TLS',
			name: 'secure',
			type: 'boolean',
			default: true,
			description: 'Whether to connect with TLS from the start (port 993). Turn off for port 143.',
		},
		{
			displayName: 'User',
			name: 'user',
			type: 'string',
			default: '',
			placeholder: 'support@example.com',
			required: true,
		},
		{
			displayName: 'Password',
			name: 'password',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: 'The account password, or an app password where the provider requires one',
			required: true,
		},
		{
			displayName: 'Allow Self-Signed Certificates',
			name: 'allowSelfSigned',
			type: 'boolean',
			default: false,
			description:
				'Whether to accept a server certificate that does not verify (self-signed or from a private CA). Only for servers you trust.',
		},
	];
}
