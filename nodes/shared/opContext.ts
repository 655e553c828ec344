import { ConnectorConfigError, type ConnectorOp, type OpContext } from '../../core/connectors/types';
import { type HttpHelpers, n8nHttpTransport } from './httpTransport';

/** The transports an op needs, made from n8n's helpers and the node's stored credentials. */
export async function opContext(context: HttpHelpers, op: ConnectorOp, useCredential: boolean): Promise<Omit<OpContext, 'memory'>> {
	switch (op.transport) {
		case 'http':
			return { http: n8nHttpTransport(context, useCredential) };
		default:
			throw new ConnectorConfigError('op', `The op ${JSON.stringify(op.name)} needs a ${op.transport} connection, which this node cannot make`);
	}
}
