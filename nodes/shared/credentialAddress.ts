import type { ICredentialDataDecryptedObject } from 'n8n-workflow';

import { checkRange, ConfigError } from '../../core/configError';

/**
 * A stored credential's host and port (IMAP, SFTP, Postgres, MySQL), checked with the field and the
 * credential (its type: `imap`) named. A port stored as text (a credential made through the API) counts as its number.
 */
export function credentialAddress(
	data: ICredentialDataDecryptedObject,
	credential: string,
	defaultPort: number,
): { host: string; port: number } {
	const host = typeof data.host === 'string' ? data.host.trim() : '';
	if (host === '') throw new ConfigError('host', data.host, 'must not be empty', { credential });
	const port = checkRange(
		'port',
		typeof data.port === 'string' && /^\d+$/.test(data.port.trim())
			? Number(data.port)
			: (data.port ?? defaultPort),
		{ min: 1, max: 65535, whole: true },
		{ credential },
	);
	return { host, port };
}
