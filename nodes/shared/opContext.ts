import type { HttpAuthSettings } from '../../core/connectors/httpAuth';
import type { ConnectorOp, OpContext } from '../../core/connectors/types';
import { type HttpHelpers, n8nHttpTransport } from './httpTransport';
import { IMAP_CREDENTIAL, imapConnection, N8N_IMAP_CREDENTIAL } from './imapCredential';
import { ftpConnection, N8N_FTP_CREDENTIAL } from './ftpCredential';
import { CONNECTOR_CREDENTIALS_VERSION } from './parameters';
import { s3Connection, s3CredentialType } from './s3Credential';
import { N8N_SFTP_CREDENTIAL, sftpConnection } from './sftpCredential';
import { dialectOf, SQL_CREDENTIALS, sqlSessionFactory } from './sqlSession';

/**
 * The transports an op needs, made from n8n's helpers and the node's stored credentials. `http` is
 * read only for HTTP ops (its parameters are hidden for the others).
 */
export async function opContext(
	context: HttpHelpers,
	op: ConnectorOp,
	http: () => HttpAuthSettings,
): Promise<Omit<OpContext, 'memory'>> {
	switch (op.transport) {
		case 'http':
			return { http: n8nHttpTransport(context, http()) };
		case 'imap': {
			const type =
				context.getNode().typeVersion >= CONNECTOR_CREDENTIALS_VERSION
					? N8N_IMAP_CREDENTIAL
					: IMAP_CREDENTIAL;
			return { imap: imapConnection(await context.getCredentials(type)) };
		}
		case 'sftp':
			return { sftp: sftpConnection(await context.getCredentials(N8N_SFTP_CREDENTIAL)) };
		case 'ftp':
			return { ftp: ftpConnection(await context.getCredentials(N8N_FTP_CREDENTIAL)) };
		case 'sql': {
			const dialect = dialectOf(context.getNode().parameters.database);
			return {
				sql: sqlSessionFactory(dialect, await context.getCredentials(SQL_CREDENTIALS[dialect])),
			};
		}
		case 's3': {
			// Signed by the op (core/connectors/s3Signature.ts): n8n sends the request as it is.
			const type = s3CredentialType(context.getNode().parameters.service);
			return {
				http: n8nHttpTransport(context, { auth: { kind: 'none' } }),
				s3: s3Connection(type, await context.getCredentials(type)),
			};
		}
	}
}
