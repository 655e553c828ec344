import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import { credentialAddress } from './credentialAddress';
import { credentialTestFailure } from './editorWords';
import { checkFtpLogin } from '../../core/connectors/ftp';
import type { FtpConnection } from '../../core/connectors/types';

/** n8n's own FTP credential (its FTP node's, plain FTP): host, port, username, password; no TLS field. */
export const N8N_FTP_CREDENTIAL = 'ftp';

/** The FTP ops' connection settings from n8n's FTP credential. */
export function ftpConnection(data: ICredentialDataDecryptedObject): FtpConnection {
	const { host, port } = credentialAddress(data, N8N_FTP_CREDENTIAL, 21);
	return {
		host,
		port,
		username: String(data.username ?? ''),
		password: String(data.password ?? ''),
	};
}

/** Long enough for a slow TLS handshake, short enough that the credential dialog does not seem stuck. */
const TEST_TIMEOUT_MS = 15_000;

/**
 * The FTP credential's test: logs in (plain FTP, and again with explicit TLS when the server requires
 * it) and asks for the login folder, reporting the server's words.
 */
export async function ftpCredentialTest(
	this: ICredentialTestFunctions,
	stored: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	try {
		const tls = await checkFtpLogin(ftpConnection(stored.data ?? {}), TEST_TIMEOUT_MS);
		return {
			status: 'OK',
			message:
				tls === 'none'
					? 'Logged in to the FTP server'
					: 'Logged in to the FTP server with explicit TLS only (its certificate was not checked): set "tls" to "explicit" in the ops\' With, and "allowSelfSigned" to true if its certificate is self-signed',
		};
	} catch (error) {
		return credentialTestFailure(error);
	}
}
