import { ftpOps } from './ftp';
import { httpRequestOp } from './http';
import { imapOps } from './imap';
import { s3Ops } from './s3';
import { sftpOps } from './sftp';
import { sqlOps } from './sql';
import { ConfigError } from '../configError';
import { type ConnectorOp } from './types';

/** Every op the Poll Trigger and the Connector node can call. A new op is one entry here. */
const ops = new Map<string, ConnectorOp>(
	[httpRequestOp, ...imapOps, ...sftpOps, ...ftpOps, ...sqlOps, ...s3Ops].map((op) => [
		op.name,
		op,
	]),
);

export function resolveOp(name: string): ConnectorOp {
	const op = ops.get(name);
	if (!op) {
		throw new ConfigError('op', name, `unknown op; known ops are ${[...ops.keys()].join(', ')}`);
	}
	return op;
}

export function allOps(): ConnectorOp[] {
	return [...ops.values()];
}

/**
 * Refuses, naming Op, an op the Poll Trigger cannot run: one that reads a file (the trigger keeps
 * its runs' items in static data until n8n has them, no place for file contents).
 */
export function checkPollOp(op: ConnectorOp): void {
	if (op.givesFile)
		throw new ConfigError(
			'op',
			op.name,
			"reads a file, which a Poll Trigger's runs cannot carry: list with the trigger and read each file with a Connector node in the workflow",
		);
}
