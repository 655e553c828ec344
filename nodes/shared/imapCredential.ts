import type { ICredentialDataDecryptedObject } from 'n8n-workflow';

import { checkRange, ConfigError } from '../../core/configError';
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
	const credential = 'IMAP credential';
	const host = typeof data.host === 'string' ? data.host.trim() : '';
	if (host === '')
		throw new ConfigError('host', 'Host', data.host, 'must not be empty', { credential });
	// A port stored as text (a credential made through the API) counts as its number.
	const port = checkRange(
		'port',
		'Port',
		typeof data.port === 'string' && /^\d+$/.test(data.port.trim())
			? Number(data.port)
			: (data.port ?? 993),
		{ min: 1, max: 65535, whole: true },
		{ credential },
	);
	return {
		host,
		port,
		secure: data.secure !== false,
		user: String(data.user ?? ''),
		password: String(data.password ?? ''),
		allowSelfSigned: data.allowSelfSigned === true || data.allowUnauthorizedCerts === true,
	};
}
