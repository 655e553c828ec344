import type {
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import { verifyImapLogin } from '../../core/connectors/imap';
import { imapConnection } from './imapCredential';
import { credentialTestFailure } from './editorWords';

/** Long enough for a slow TLS handshake, short enough that the credential dialog does not seem stuck. */
const TEST_TIMEOUT_MS = 15_000;

/**
 * The IMAP credentials' test (this package's Durable Triggers IMAP API and n8n's own IMAP), for a node's `methods.credentialTest` (the
 * credential names it with `testedBy`): connects, logs in and logs out, and reports the server's words.
 */
export async function imapCredentialTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	try {
		await verifyImapLogin(imapConnection(credential.data ?? {}), TEST_TIMEOUT_MS);
		return { status: 'OK', message: 'Logged in to the IMAP server' };
	} catch (error) {
		return credentialTestFailure(error);
	}
}
