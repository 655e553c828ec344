import type { ConnectorOp, OpContext } from '../../core/connectors/types';
import { type HttpHelpers, n8nHttpTransport } from './httpTransport';
import { IMAP_CREDENTIAL, imapConnection } from './imapCredential';

/** The transports an op needs, made from n8n's helpers and the node's stored credentials. */
export async function opContext(context: HttpHelpers, op: ConnectorOp, useCredential: boolean): Promise<Omit<OpContext, 'memory'>> {
	switch (op.transport) {
		case 'http':
			return { http: n8nHttpTransport(context, useCredential) };
		case 'imap':
			return { imap: imapConnection(await context.getCredentials(IMAP_CREDENTIAL)) };
	}
}
