import { type INode, NodeOperationError } from 'n8n-workflow';

import { ConfigError } from '../../core/configError';
import { ConnectorError } from '../../core/connectors/types';
import { toNodeError } from './errors';

const NODE: INode = {
	id: 'node-1',
	name: 'Poll',
	type: 'n8n-nodes-durable-triggers.pollTrigger',
	typeVersion: 1.1,
	position: [0, 0],
	parameters: {},
};

describe('toNodeError', () => {
	it('points a ConfigError at its parameter as the editor labels it', () => {
		const error = toNodeError(
			NODE,
			new ConfigError('interval', 'Interval', 2_000, 'must be from 5s to 7d', { duration: true }),
		);
		expect(error).toBeInstanceOf(NodeOperationError);
		expect(error.message).toBe('Invalid value 2s for "Interval": must be from 5s to 7d');
		expect(error.description).toBe('Check the "Interval" parameter.');
	});

	it('points a ConfigError of a credential at the credential field', () => {
		const error = toNodeError(
			NODE,
			new ConfigError('host', 'Host', '', 'must not be empty', { credential: 'IMAP credential' }),
			2,
		);
		expect(error.message).toBe(
			'Invalid value "" for "Host" in the IMAP credential: must not be empty',
		);
		expect(error.description).toBe('Check the "Host" field of the IMAP credential.');
		expect(error.context.itemIndex).toBe(2);
	});

	it("keeps other errors' messages and the details they carry", () => {
		const error = toNodeError(
			NODE,
			new ConnectorError('GET /x answered HTTP 500', { description: '<html>' }),
		);
		expect(error.message).toBe('GET /x answered HTTP 500');
		expect(error.description).toBe('<html>');
		expect(toNodeError(NODE, 'text').message).toBe('text');
		const nodeError = new NodeOperationError(NODE, 'as is');
		expect(toNodeError(NODE, nodeError)).toBe(nodeError);
	});
});
