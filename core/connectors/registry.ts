import { httpRequestOp } from './http';
import { imapOps } from './imap';
import { sftpOps } from './sftp';
import { ConfigError } from '../configError';
import { type ConnectorOp, FIELD_LABELS } from './types';

/** Every op the Poll Trigger and the Connector node can call. A new op is one entry here. */
const ops = new Map<string, ConnectorOp>([httpRequestOp, ...imapOps, ...sftpOps].map((op) => [op.name, op]));

export function resolveOp(name: string): ConnectorOp {
	const op = ops.get(name);
	if (!op) {
		throw new ConfigError(
			'op',
			FIELD_LABELS.op,
			name,
			`unknown op; known ops are ${[...ops.keys()].join(', ')}`,
		);
	}
	return op;
}

export function allOps(): ConnectorOp[] {
	return [...ops.values()];
}
