import type { ICredentialDataDecryptedObject } from 'n8n-workflow';

import { credentialAddress } from './credentialAddress';
import type { ImapConnection } from '../../core/connectors/types';

/** This package's own IMAP credential, used by version 1 nodes. */
export const IMAP_CREDENTIAL = 'durableImapApi';

/** n8n's own IMAP credential (the one its Email Trigger uses), used by version 1.1 nodes. */
export const N8N_IMAP_CREDENTIAL = 'imap';

/**
 * The IMAP ops' connection settings from a stored IMAP credential: this package's Durable Triggers
 * IMAP API or n8n's own IMAP. Both have host, port, secure (TLS), user and password; the self-signed
 * switch is `allowSelfSigned` in the one and `allowUnauthorizedCerts` in n8n's.
 */
export function imapConnection(data: ICredentialDataDecryptedObject): ImapConnection {
	// Both credentials label host and port alike; messages name n8n's.
	const { host, port } = credentialAddress(data, N8N_IMAP_CREDENTIAL, 993);
	return {
		host,
		port,
		secure: data.secure !== false,
		user: String(data.user ?? ''),
		password: String(data.password ?? ''),
		allowSelfSigned: data.allowSelfSigned === true || data.allowUnauthorizedCerts === true,
	};
}
