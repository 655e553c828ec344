import type { ICredentialDataDecryptedObject } from 'n8n-workflow';

import { ConnectorConfigError, type ImapConnection } from '../../core/connectors/types';

export const IMAP_CREDENTIAL = 'durableImapApi';

/** The IMAP ops' connection settings from a stored Durable Triggers IMAP API credential. */
export function imapConnection(data: ICredentialDataDecryptedObject): ImapConnection {
	const host = typeof data.host === 'string' ? data.host.trim() : '';
	if (host === '') throw new ConnectorConfigError('host', 'The IMAP credential has no "Host"');
	const port = Number(data.port ?? 993);
	if (!Number.isInteger(port) || port < 1 || port > 65535) {
		throw new ConnectorConfigError('port', `The IMAP credential's "Port" must be a whole number from 1 to 65535; got ${JSON.stringify(data.port)}`);
	}
	return {
		host,
		port,
		secure: data.secure !== false,
		user: String(data.user ?? ''),
		password: String(data.password ?? ''),
		allowSelfSigned: data.allowSelfSigned === true,
	};
}
