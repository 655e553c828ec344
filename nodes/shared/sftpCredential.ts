import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import { credentialAddress } from './credentialAddress';
import { credentialTestFailure } from './editorWords';
import { resolveOp } from '../../core/connectors/registry';
import type { SftpConnection } from '../../core/connectors/types';

/** n8n's own SFTP credential (the one its FTP node uses for SFTP). */
export const N8N_SFTP_CREDENTIAL = 'sftp';

/**
 * The SFTP ops' connection settings from n8n's SFTP credential: host, port, username, and a password
 * or a private key with its passphrase, as n8n's FTP node reads them (a key is used when one is set).
 */
export function sftpConnection(data: ICredentialDataDecryptedObject): SftpConnection {
	const { host, port } = credentialAddress(data, N8N_SFTP_CREDENTIAL, 22);
	const privateKey = typeof data.privateKey === 'string' ? data.privateKey.trim() : '';
	return {
		host,
		port,
		username: String(data.username ?? ''),
		password: String(data.password ?? ''),
		...(privateKey !== '' && {
			privateKey: formatPrivateKey(privateKey),
			passphrase: String(data.passphrase ?? ''),
		}),
	};
}

/**
 * A key pasted into a one-line field loses its line breaks; ssh2 needs them. Rebuilds the PEM
 * layout (header, body in lines, footer) from whitespace-separated text, as n8n's own nodes do.
 */
export function formatPrivateKey(key: string): string {
	const text = key.replace(/\\n/g, '\n');
	const match = /^(-----BEGIN [A-Z0-9 ]+-----)\s*([\s\S]*?)\s*(-----END [A-Z0-9 ]+-----)$/.exec(
		text,
	);
	if (!match) return text;
	const [, header, body, footer] = match;
	// PEM keys may carry headers ("Proc-Type: ...") before a blank line; leave those as written.
	if (body.includes(':')) return `${text}\n`;
	return `${header}\n${body.split(/\s+/).join('\n')}\n${footer}\n`;
}

/** Long enough for a slow key exchange, short enough that the credential dialog does not seem stuck. */
const TEST_TIMEOUT_MS = 15_000;

/** The SFTP credential's test: logs in and lists the home folder, reporting the server's words. */
export async function sftpCredentialTest(
	this: ICredentialTestFunctions,
	stored: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	try {
		await resolveOp('sftp.list').run(
			{ folder: '.' },
			{ memory: {}, sftp: sftpConnection(stored.data ?? {}), timeoutMs: TEST_TIMEOUT_MS },
		);
		return { status: 'OK', message: 'Logged in to the SFTP server' };
	} catch (error) {
		return credentialTestFailure(error);
	}
}
